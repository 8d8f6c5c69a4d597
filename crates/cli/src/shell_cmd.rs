//! `satpep shell`: a shell (or a command) behind the scenario's path, Mahimahi style.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use satpep_emu::{EmuOptions, StatusMode};
use satpep_output::write_run_json;

/// Arguments of `satpep shell`.
#[derive(Debug, Args)]
pub struct ShellArgs {
    /// Scenario file (TOML), or `default` for the built-in one. The server host (the first
    /// flow's data sender) is this machine — where the shell was started — and the command
    /// runs in the client host.
    scenario: Option<String>,
    /// Override any key, e.g. `--set link.forward.rate=20Mbps` (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,
    /// Random seed (same as `--set seed=N`).
    #[arg(long)]
    seed: Option<u64>,
    /// Write the run's outputs (series, pcap, summary.json, run.json) here; none without it.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Replace the contents of a non-empty `--out` that holds earlier satpep results.
    #[arg(long)]
    force: bool,
    /// Run the loop under the normal scheduler instead of SCHED_FIFO.
    #[arg(long)]
    no_realtime: bool,
    /// The command and its arguments (default: $SHELL, or /bin/sh).
    #[arg(last = true, value_name = "CMD")]
    command: Vec<String>,
}

const VERSION: &str = env!("CARGO_PKG_VERSION");

/// Run `satpep shell`: exits with the command's status (128 + N when signal N ended it), or
/// 2 for a bad scenario or missing privileges, 1 for a failure of the emulator itself.
pub fn run(args: ShellArgs) -> ExitCode {
    use crate::sim_cmd::load;
    let file = args
        .scenario
        .as_deref()
        // `default` names the built-in scenario unless a file of that name is here.
        .filter(|s| *s != "default" || std::path::Path::new(s).exists())
        .map(PathBuf::from);
    let loaded = match load(file.as_deref(), &args.set, args.seed) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("satpep shell: error: {e}");
            return ExitCode::from(2);
        }
    };
    if !loaded.sweep.is_empty() {
        eprintln!("satpep shell: error: a shell runs one scenario; remove the [sweep] table");
        return ExitCode::from(2);
    }
    let sc = &loaded.scenario;
    let command = if args.command.is_empty() {
        vec![std::env::var("SHELL").unwrap_or_else(|_| "/bin/sh".into())]
    } else {
        args.command.clone()
    };
    let mut opts = EmuOptions::new(args.out.clone().unwrap_or_default());
    opts.outputs = args.out.is_some();
    opts.realtime = !args.no_realtime;
    opts.status = StatusMode::Off;
    opts.shell = Some(command);
    if let Some(out) = &args.out {
        if let Err(e) = crate::outdir::prepare(out, args.force) {
            eprintln!("satpep shell: error: {e}");
            return ExitCode::from(2);
        }
        if let Err(e) = write_run_json(out, VERSION, sc.seed, &loaded.resolved) {
            eprintln!("satpep shell: error: {}: {e}", out.display());
            return ExitCode::from(1);
        }
    }
    let outcome = match satpep_emu::run(sc, &opts) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("satpep shell: error: {e}");
            return ExitCode::from(e.exit_code());
        }
    };
    let s = &outcome.summary;
    if s.fell_behind() {
        eprint!("{}", s.render_lateness());
    }
    match (s.client_exit, s.client_signal) {
        (Some(code), _) => ExitCode::from(code.clamp(0, 255) as u8),
        (None, Some(sig)) => ExitCode::from((128 + sig).clamp(0, 255) as u8),
        // Stopped by a signal to satpep before it could tell: as a shell reports SIGTERM.
        (None, None) => ExitCode::from(128 + 15),
    }
}
