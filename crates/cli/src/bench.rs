//! `satpep bench`: simulator speed on fixed scenarios (no outputs written), as JSON lines and a
//! table. Timings belong in docs/performance.md, never in tests.

use std::process::ExitCode;
use std::time::Instant as WallInstant;

use clap::Args;
use satpep_sim::Simulation;

/// Arguments of `satpep bench`.
#[derive(Debug, Args)]
pub struct BenchArgs {
    /// Simulated seconds per dumbbell run (the reference figure uses 60).
    #[arg(long, default_value_t = 60)]
    seconds: u64,
    /// Flow counts for the dumbbell runs: `--flows 1 10 100` or `--flows 1,10,100`.
    #[arg(long, num_args = 1.., value_delimiter = ',', default_values_t = [1usize, 10, 100])]
    flows: Vec<usize>,
    /// Print one JSON object per run instead of a table.
    #[arg(long)]
    json: bool,
}

/// The benchmark dumbbell: N bulk CUBIC flows, 100 Mb/s 250 ms bottleneck, 10 Mb/s 250 ms return,
/// 1000-packet queue, MSS 1448 payload bytes (1460 minus timestamps), 8 MB windows.
pub fn dumbbell(flows: usize, seconds: u64) -> String {
    let mut s = format!(
        r#"name = "dumbbell-{flows}"
duration = "{seconds}s"
stop_when_done = false
[output]
series = false
interval = "1s"
[defaults.tcp]
cc = "cubic"
mss = 1460
send_buffer = "8MB"
recv_buffer = "8MB"
"#
    );
    for (name, kind) in [
        ("src", "host"),
        ("r1", "router"),
        ("r2", "router"),
        ("dst", "host"),
    ] {
        s.push_str(&format!("[[node]]\nname = \"{name}\"\nkind = \"{kind}\"\n"));
    }
    let links = [
        ("src-r1", "src", "r1", "1Gbps", "10us", 10_000),
        ("bottleneck", "r1", "r2", "100Mbps", "250ms", 1000),
        ("r2-dst", "r2", "dst", "1Gbps", "10us", 10_000),
        ("dst-r2", "dst", "r2", "1Gbps", "10us", 10_000),
        ("return", "r2", "r1", "10Mbps", "250ms", 1000),
        ("r1-src", "r1", "src", "1Gbps", "10us", 10_000),
    ];
    for (name, from, to, rate, delay, limit) in links {
        s.push_str(&format!(
            "[[link]]\nname = \"{name}\"\nfrom = \"{from}\"\nto = \"{to}\"\nrate = \"{rate}\"\n\
             delay = \"{delay}\"\nqueue = {{ limit_packets = {limit} }}\n"
        ));
    }
    for i in 0..flows {
        s.push_str(&format!(
            "[[flow]]\nname = \"f{i}\"\nfrom = \"src\"\nto = \"dst\"\nstart = \"{}ms\"\napp = {{ kind = \"bulk\" }}\n",
            i * 10
        ));
    }
    s
}

/// Run the benchmarks.
pub fn run(args: BenchArgs) -> ExitCode {
    let mut cases: Vec<(String, String)> = args
        .flows
        .iter()
        .map(|&n| (format!("dumbbell-{n}"), dumbbell(n, args.seconds)))
        .collect();
    cases.push((
        "default".into(),
        satpep_scenario::default_scenario_text().to_string(),
    ));
    if !args.json {
        println!(
            "{:<14} {:>10} {:>9} {:>12} {:>12} {:>12} {:>10}",
            "scenario", "events", "wall s", "Mevents/s", "sim s/wall s", "data pkts", "us/pkt"
        );
    }
    for (name, text) in cases {
        let loaded = match satpep_scenario::load_str(&text, &name, &[]) {
            Ok(l) => l,
            Err(e) => {
                eprintln!("error: {e}");
                return ExitCode::from(2);
            }
        };
        let wall = WallInstant::now();
        let result = match Simulation::new(&loaded.scenario).run(|_| {}) {
            Ok(r) => r,
            Err(e) => {
                eprintln!("error: {e}");
                return ExitCode::from(1);
            }
        };
        let secs = wall.elapsed().as_secs_f64();
        let sim = result.sim_time.as_secs_f64();
        let us_per_pkt = secs * 1e6 / result.data_packets.max(1) as f64;
        if args.json {
            println!(
                "{}",
                serde_json::json!({
                    "scenario": name, "events": result.events, "wall_s": secs,
                    "events_per_s": result.events as f64 / secs, "sim_s_per_wall_s": sim / secs,
                    "data_packets": result.data_packets, "us_per_data_packet": us_per_pkt,
                })
            );
        } else {
            println!(
                "{:<14} {:>10} {:>9.3} {:>12.2} {:>12.1} {:>12} {:>10.3}",
                name,
                result.events,
                secs,
                result.events as f64 / secs / 1e6,
                sim / secs,
                result.data_packets,
                us_per_pkt
            );
        }
    }
    ExitCode::SUCCESS
}
