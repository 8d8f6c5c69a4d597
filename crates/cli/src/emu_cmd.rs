//! `satpep emu`: run a scenario in real time, with real programs in network namespaces.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use std::io::IsTerminal;

use satpep_emu::{EmuOptions, StatusMode, LATENESS_WARN_US};
use satpep_output::{render_table, write_run_json};
use satpep_proto::Duration;

/// Arguments of `satpep emu`.
#[derive(Debug, Args)]
pub struct EmuArgs {
    /// Scenario file (TOML); every `kind = "host"` node becomes a network namespace.
    scenario: Option<PathBuf>,
    /// Shell command run in the server host, e.g. 'iperf3 -s': the first flow's data sender
    /// (bulk) or listener (request/response), in the built-in scenario "server".
    /// `{server}` and `{client}` are replaced by the server and client hosts' addresses.
    #[arg(long, value_name = "CMD")]
    server: Option<String>,
    /// Shell command run in the client host (the first flow's other end, in the built-in
    /// scenario "client"), e.g. 'iperf3 -c {server} -R -C cubic -t 30' for a download; it
    /// reads satpep's stdin, its output is shown as it comes, and the run ends when it exits.
    #[arg(long, value_name = "CMD")]
    client: Option<String>,
    /// Run --server in this host (node name) instead.
    #[arg(long, value_name = "NODE")]
    server_on: Option<String>,
    /// Run --client in this host (node name) instead.
    #[arg(long, value_name = "NODE")]
    client_on: Option<String>,
    /// Also run CMD in host NODE, from the start to the end of the run (repeatable; several
    /// may name one host); its output goes to on-NODE-N.log. E.g.
    /// --on server 'iperf3 -s -p 5202'.
    #[arg(long, num_args = 2, value_names = ["NODE", "CMD"], action = clap::ArgAction::Append)]
    on: Vec<String>,
    /// Show the status line (a line a second on stderr) even when stderr is not a terminal.
    #[arg(long, conflicts_with = "no_status")]
    status: bool,
    /// Never show the status line (by default it is redrawn in place on a terminal).
    #[arg(long)]
    no_status: bool,
    /// Render plots (PNG and SVG) of the run's series afterwards (also `output.plots = true`).
    #[arg(long)]
    plot: bool,
    /// Stop after this long (e.g. 40s) even if the client still runs; without a client, run
    /// until Ctrl-C or this limit.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    duration: Option<Duration>,
    /// Delay between starting the server and the client.
    #[arg(long, value_name = "DURATION", default_value = "500ms", value_parser = parse_duration)]
    client_delay: Duration,
    /// Override any key, e.g. `--set link.forward.rate=20Mbps` (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,
    /// Random seed (same as `--set seed=N`).
    #[arg(long)]
    seed: Option<u64>,
    /// Output directory. Default: results/<scenario>-emu-<pid>/. It must be empty or new,
    /// unless `--force`.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Replace the contents of a non-empty `--out` that holds earlier satpep results.
    #[arg(long)]
    force: bool,
    /// Run the loop under the normal scheduler instead of SCHED_FIFO.
    #[arg(long, conflicts_with = "rt_priority")]
    no_realtime: bool,
    /// SCHED_FIFO priority of the loop (1-99; default 10, best effort); when given, the run
    /// fails if the kernel refuses it. Above the hosts' programs, it can take a core from them.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u8).range(1..=99))]
    rt_priority: Option<u8>,
    /// Wake this long before a packet is due and poll until it is (e.g. 20us): the wake-up
    /// delay is taken before the due instant, at up to this much CPU per wake-up.
    #[arg(long, value_name = "DURATION", default_value = "0s", value_parser = parse_spin,
          conflicts_with = "coalesce")]
    spin: Duration,
    /// Plain TUN devices, one packet per system call, instead of devices with offloads
    /// (IFF_VNET_HDR: the hosts' 64 KB TCP super-packets are read in one call and cut into
    /// wire segments for the model; delivered segments are written back joined).
    #[arg(long)]
    no_offload: bool,
    /// Sleep at least this long between wake-ups when packets are due later (e.g. 50us):
    /// fewer wake-ups at high packet rates, up to this much added lateness.
    #[arg(long, value_name = "DURATION", default_value = "0s", value_parser = parse_coalesce)]
    coalesce: Duration,
    /// Do not print the client's output and the results table.
    #[arg(long, short)]
    quiet: bool,
}

/// Longest `--coalesce`: beyond it the added lateness is of the order of the delays modelled.
const MAX_COALESCE: Duration = Duration::from_millis(10);

fn parse_coalesce(s: &str) -> Result<Duration, String> {
    let d = parse_duration(s)?;
    if d > MAX_COALESCE {
        return Err(format!(
            "{s} is longer than the {MAX_COALESCE} limit (it delays packets by up to that much)"
        ));
    }
    Ok(d)
}

/// Longest `--spin`: wake-up delays are tens of µs; spinning longer only burns a core.
const MAX_SPIN: Duration = Duration::from_millis(1);

fn parse_spin(s: &str) -> Result<Duration, String> {
    let d = parse_duration(s)?;
    if d > MAX_SPIN {
        return Err(format!(
            "{s} is longer than the {MAX_SPIN} limit (it burns up to that much CPU per wake-up)"
        ));
    }
    Ok(d)
}

pub(crate) fn parse_duration(s: &str) -> Result<Duration, String> {
    satpep_proto::units::parse_duration(s).map_err(|e| e.to_string())
}

const VERSION: &str = env!("CARGO_PKG_VERSION");

/// Run `satpep emu`. Exit codes: 0 ok, 1 run failure or failing client command, 2 bad
/// scenario or arguments, or missing privileges (root, network namespaces, /dev/net/tun).
pub fn run(args: EmuArgs) -> ExitCode {
    use crate::sim_cmd::load;
    let loaded = match load(args.scenario.as_deref(), &args.set, args.seed) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    if !loaded.sweep.is_empty() {
        eprintln!("error: `satpep emu` runs one scenario; remove the [sweep] table");
        return ExitCode::from(2);
    }
    let sc = &loaded.scenario;
    let out = args.out.clone().unwrap_or_else(|| {
        PathBuf::from("results").join(format!(
            "{}-emu-{}",
            crate::sim_cmd::path_safe(&sc.name),
            std::process::id()
        ))
    });
    if let Err(e) = crate::outdir::prepare(&out, args.force) {
        eprintln!("error: {e}");
        return ExitCode::from(2);
    }
    let status = if args.no_status || (args.quiet && !args.status) {
        StatusMode::Off
    } else if std::io::stderr().is_terminal() {
        StatusMode::Redraw
    } else if args.status {
        StatusMode::Lines
    } else {
        StatusMode::Off
    };
    let mut opts = EmuOptions::new(out.clone());
    opts.server = args.server.clone();
    opts.client = args.client.clone();
    opts.server_on = args.server_on.clone();
    opts.client_on = args.client_on.clone();
    opts.on = args
        .on
        .chunks(2)
        .map(|p| (p[0].clone(), p.get(1).cloned().unwrap_or_default()))
        .collect();
    opts.duration = args.duration;
    opts.client_delay = args.client_delay;
    opts.realtime = !args.no_realtime;
    opts.rt_priority = args.rt_priority;
    opts.spin = args.spin;
    opts.coalesce = args.coalesce;
    opts.offload = !args.no_offload;
    opts.stdin = true;
    opts.echo = !args.quiet;
    opts.status = status;
    // run.json first: it records what was asked, and must be there however the run ends.
    if let Err(e) = write_run_json(&out, VERSION, sc.seed, &loaded.resolved) {
        eprintln!("error: {}: {e}", out.display());
        return ExitCode::from(1);
    }
    let outcome = match satpep_emu::run(sc, &opts) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(e.exit_code());
        }
    };
    let s = &outcome.summary;
    if !args.quiet {
        print!("{}", render_table(&s.base));
        print!("{}", s.render_lateness());
        println!("stopped: {}; results in {}", s.stop_reason, out.display());
    } else if s.lateness.p99_us > LATENESS_WARN_US {
        eprint!("{}", s.render_lateness());
    }
    if args.plot || sc.output.plots {
        match satpep_output::plot_dir(&out) {
            Ok(files) => println!("plots: {}", files.len()),
            Err(e) => {
                eprintln!("error: plots: {e}");
                return ExitCode::from(1);
            }
        }
    }
    if s.server_exited_early {
        match s.server_exit {
            Some(0) => eprintln!(
                "warning: the server command exited (status 0) before the run ended (see {})",
                outcome.server_log.display()
            ),
            code => {
                let why = code.map_or("was killed by a signal".to_owned(), |c| {
                    format!(
                        "exited with status {c}{}",
                        if c == 127 {
                            " (command not found?)"
                        } else {
                            ""
                        }
                    )
                });
                eprintln!(
                    "error: the server command {why} before the run ended (see {})",
                    outcome.server_log.display()
                );
                return ExitCode::from(1);
            }
        }
    }
    match s.client_exit {
        Some(code) if code != 0 => {
            eprintln!(
                "error: the client command exited with status {code} (see {})",
                outcome.client_log.display()
            );
            ExitCode::from(1)
        }
        _ => ExitCode::SUCCESS,
    }
}
