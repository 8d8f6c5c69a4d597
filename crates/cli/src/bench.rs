//! `satpep bench`: simulator speed on fixed scenarios (no outputs written), as JSON lines and a
//! table. Timings belong in docs/performance.md, never in tests.

use std::process::ExitCode;
use std::time::Instant as WallInstant;

use clap::Args;
use satpep_sim::{QueueKind, Simulation};

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
    /// Run the dumbbell paired with a peer simulator's script instead: `ns2` is
    /// bench/peers/ns2/dumbbell_newreno.tcl (one sender and one receiver host per flow, NewReno
    /// with `tcp.profile = "ns2"`, flow i starting at i ms). The default scenario is not run.
    #[arg(long, value_parser = ["ns2"])]
    peer: Option<String>,
    /// The event queue's structure for future events: `heap` (4-ary heap, the default) or
    /// `wheel` (timing wheel); results are identical, only the speed differs.
    #[arg(long, default_value = "heap", value_parser = ["heap", "wheel"])]
    queue: String,
    /// Print the first benchmark scenario as TOML (for `satpep sim`) instead of running.
    #[arg(long)]
    print: bool,
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

/// The dumbbell of bench/peers/ns2/dumbbell_newreno.tcl: N sender hosts `s{i}` behind router
/// `r0`, N receivers `d{i}` behind `r1`; access links 1 Gb/s, 0 s; r0→r1 100 Mb/s 250 ms,
/// r1→r0 10 Mb/s 250 ms; every queue 1000 packets; NewReno with ns-2's defaults
/// (`profile = "ns2"`: initial window 2, no timestamps, ACK every packet), 1448-byte segments,
/// 8 MiB windows (ns-2: 5793 packets); flow i starts at i ms. 2N + 2 nodes. Samples every 100 ms
/// (the loader refuses 10 ms for 1 000 flows × 60 s by its row limit even without series;
/// without series a sample costs one event, nothing per flow).
pub fn ns2_dumbbell(flows: usize, seconds: u64) -> String {
    let mut s = format!(
        r#"name = "ns2-dumbbell-{flows}"
duration = "{seconds}s"
stop_when_done = false
[output]
series = false
interval = "100ms"
[defaults.tcp]
profile = "ns2"
cc = "reno"
recovery = "newreno"
mss = 1448
send_buffer = "8MiB"
recv_buffer = "8MiB"
[[node]]
name = "r0"
kind = "router"
[[node]]
name = "r1"
kind = "router"
"#
    );
    let link = |s: &mut String, name: &str, from: &str, to: &str, rate: &str, delay: &str| {
        s.push_str(&format!(
            "[[link]]\nname = \"{name}\"\nfrom = \"{from}\"\nto = \"{to}\"\nrate = \"{rate}\"\n\
             delay = \"{delay}\"\nqueue = {{ limit_packets = 1000 }}\n"
        ));
    };
    link(&mut s, "bottleneck", "r0", "r1", "100Mbps", "250ms");
    link(&mut s, "return", "r1", "r0", "10Mbps", "250ms");
    for i in 0..flows {
        s.push_str(&format!(
            "[[node]]\nname = \"s{i}\"\nkind = \"host\"\n[[node]]\nname = \"d{i}\"\nkind = \"host\"\n"
        ));
        let (si, di) = (format!("s{i}"), format!("d{i}"));
        link(&mut s, &format!("s{i}-r0"), &si, "r0", "1Gbps", "0s");
        link(&mut s, &format!("r0-s{i}"), "r0", &si, "1Gbps", "0s");
        link(&mut s, &format!("r1-d{i}"), "r1", &di, "1Gbps", "0s");
        link(&mut s, &format!("d{i}-r1"), &di, "r1", "1Gbps", "0s");
    }
    for i in 0..flows {
        s.push_str(&format!(
            "[[flow]]\nname = \"f{i}\"\nfrom = \"s{i}\"\nto = \"d{i}\"\nstart = \"{i}ms\"\napp = {{ kind = \"bulk\" }}\n"
        ));
    }
    s
}

/// CPU seconds (user + system) this process has used, from /proc/self/stat (Linux; clock
/// ticks of 10 ms, USER_HZ = 100); `None` elsewhere. CPU, not wall time, is the figure that
/// holds on a shared machine.
fn process_cpu_s() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the command name (which may hold spaces): state is field 3, utime 14, stime 15.
    let rest = stat.get(stat.rfind(')')? + 1..)?;
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?;
    Some(ticks as f64 / 100.0)
}

/// Run the benchmarks.
pub fn run(args: BenchArgs) -> ExitCode {
    let ns2 = args.peer.is_some();
    let mut cases: Vec<(String, String)> = args
        .flows
        .iter()
        .map(|&n| match ns2 {
            true => (format!("ns2-dumbbell-{n}"), ns2_dumbbell(n, args.seconds)),
            false => (format!("dumbbell-{n}"), dumbbell(n, args.seconds)),
        })
        .collect();
    if args.print {
        if let Some((_, text)) = cases.first() {
            print!("{text}");
        }
        return ExitCode::SUCCESS;
    }
    if !ns2 {
        cases.push((
            "default".into(),
            satpep_scenario::default_scenario_text().to_string(),
        ));
    }
    if !args.json {
        println!(
            "{:<14} {:>10} {:>9} {:>12} {:>12} {:>12} {:>10}",
            "scenario", "events", "wall s", "Mevents/s", "sim s/wall s", "data pkts", "us/pkt"
        );
    }
    for (name, text) in cases {
        let setup = WallInstant::now();
        let cpu0 = process_cpu_s();
        let loaded = match satpep_scenario::load_str(&text, &name, &[]) {
            Ok(l) => l,
            Err(e) => {
                eprintln!("error: {e}");
                return ExitCode::from(2);
            }
        };
        let mut sim = Simulation::new(&loaded.scenario);
        if args.queue == "wheel" {
            sim.set_queue_kind(QueueKind::Wheel);
        }
        let setup_s = setup.elapsed().as_secs_f64();
        let cpu1 = process_cpu_s();
        let wall = WallInstant::now();
        let result = match sim.run(|_| {}) {
            Ok(r) => r,
            Err(e) => {
                eprintln!("error: {e}");
                return ExitCode::from(1);
            }
        };
        let secs = wall.elapsed().as_secs_f64();
        let cpu2 = process_cpu_s();
        let setup_cpu_s = cpu0.zip(cpu1).map(|(a, b)| b - a);
        let run_cpu_s = cpu1.zip(cpu2).map(|(a, b)| b - a);
        let sim = result.sim_time.as_secs_f64();
        let us_per_pkt = secs * 1e6 / result.data_packets.max(1) as f64;
        // As ns-2's TCPSink counts: in-order data at the receivers, in segments of 1448 bytes
        // (the payload of both dumbbells).
        let in_order: u64 = result
            .summary
            .flows
            .iter()
            .map(|f| f.bytes_delivered / 1448)
            .sum();
        if args.json {
            println!(
                "{}",
                serde_json::json!({
                    "scenario": name, "events": result.events, "wall_s": secs,
                    "events_per_s": result.events as f64 / secs, "sim_s_per_wall_s": sim / secs,
                    "data_packets": result.data_packets, "us_per_data_packet": us_per_pkt,
                    "in_order_packets": in_order, "setup_s": setup_s,
                    "setup_cpu_s": setup_cpu_s, "run_cpu_s": run_cpu_s,
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
