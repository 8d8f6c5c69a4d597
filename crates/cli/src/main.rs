//! `satpep`: the command-line entry point. Thin: parses arguments and calls the layers below.

mod bench;
mod daemon_cmd;
mod emu_cmd;
mod model_cmd;
mod outdir;
mod reproduce_cmd;
mod shell_cmd;
mod sim_cmd;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Make TCP fast over satellite paths, and measure how fast.
#[derive(Debug, Parser)]
#[command(name = "satpep", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Simulate a scenario (the built-in GEO default when no file is given).
    Sim(sim_cmd::SimArgs),
    /// Render PNG and SVG plots of results directories (several: overlaid)
    ///
    /// Plots are drawn from flows.csv, links.csv, sweep.csv and sweep_stats.csv.
    /// One directory: every plot its files allow, written into it (or into --out).
    /// Several: their cwnd, seq, queue and throughput plots overlaid, one chart per kind,
    /// each line labelled `<directory>: <flow or link>`, written into --out (required
    /// then; sweep tables are not overlaid), e.g.
    ///     satpep plot results/cubic results/reno --out results/cubic-vs-reno
    /// Exit codes: 0 plots written; 1 a file could not be read or drawn; 2 a missing
    /// directory, several directories without --out, or nothing to plot.
    #[command(verbatim_doc_comment)]
    Plot {
        /// Results directories written by `satpep sim`.
        #[arg(required = true, value_name = "DIR")]
        dirs: Vec<PathBuf>,
        /// Write the plots here (created if needed). Default with one directory: that
        /// directory; required with several.
        #[arg(long, value_name = "DIR")]
        out: Option<PathBuf>,
    },
    /// Emulate a scenario in real time: real programs in network namespaces, joined through
    /// TUN devices by the scenario's links (needs root).
    Emu(emu_cmd::EmuArgs),
    /// Run a shell (or `-- CMD…`) behind a scenario's path, Mahimahi style (needs root)
    ///
    /// The command runs in the client host's network namespace; this machine (the namespace
    /// satpep shell was started in) is the server host, reached across the emulated path at
    /// $SATPEP_SHELL_HOST (the command's own address is $SATPEP_SHELL_CLIENT). Shells nest:
    /// each adds its path. stdin, stdout, stderr and the terminal are the command's, and its
    /// exit status is satpep's. E.g.
    ///     satpep shell default -- sh -c 'curl -o /dev/null http://$SATPEP_SHELL_HOST:8000/f'
    /// (in single quotes, so that the variable is read inside the shell).
    #[command(verbatim_doc_comment)]
    Shell(shell_cmd::ShellArgs),
    /// Run the hub-side daemon: satpep's mechanisms on live traffic in this router's
    /// forwarding path (split TCP, spoofing, Snoop, TCP-SuperCharger, the ACK expander; needs
    /// root). See docs/deploy.md.
    Gateway(daemon_cmd::DaemonArgs),
    /// Run the remote-side daemon: return-link shaping with ACK suppression, filtering or
    /// compaction, the IP-in-IP return tunnel (needs root). See docs/deploy.md.
    Terminal(daemon_cmd::DaemonArgs),
    /// Analytic models (no simulation), e.g. `satpep model dama` for DVB-RCS DAMA (eqs. 3–5).
    Model(model_cmd::ModelArgs),
    /// Regenerate the tables and figures of docs/reproductions (`satpep reproduce all`), or
    /// check the docs against them (`--check docs/reproductions`).
    Reproduce(reproduce_cmd::ReproduceArgs),
    /// Measure simulator speed: events/s and simulated seconds per wall second.
    Bench(bench::BenchArgs),
    /// Run packetdrill-style TCP scripts against satpep's endpoint (syntax: docs/tcp-scripts.md);
    /// prints one line per script and exits 1 if any fails.
    TcpScript {
        /// Script files (`.pkt`).
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
    /// Make a certificate and key for one end of the accelerated PEP (`[split.accel]`):
    /// writes DIR/NAME.crt and DIR/NAME.key (mode 0600; never overwrites) and prints the
    /// certificate's `sha256:` fingerprint, which the other end lists in its `peers`.
    Keygen {
        /// The end's name (e.g. `gateway`, `terminal-17`).
        name: String,
        /// Where to write the files.
        #[arg(long, default_value = ".")]
        out: PathBuf,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let filter = !matches!(
        cli.command,
        Command::Emu(_) | Command::Shell(_) | Command::Gateway(_) | Command::Terminal(_)
    );
    if filter {
        satpep_emu::sys::default_sigpipe();
    }
    match cli.command {
        Command::Sim(args) => sim_cmd::run(args),
        Command::Plot { dirs, out } => plot(&dirs, out),
        Command::Bench(args) => bench::run(args),
        Command::Emu(args) => emu_cmd::run(args),
        Command::Shell(args) => shell_cmd::run(args),
        Command::Gateway(args) => daemon_cmd::run(satpep_daemon::Role::Gateway, args),
        Command::Terminal(args) => daemon_cmd::run(satpep_daemon::Role::Terminal, args),
        Command::Model(args) => model_cmd::run(args),
        Command::Reproduce(args) => reproduce_cmd::run(args),
        Command::TcpScript { files } => tcp_script(&files),
        Command::Keygen { name, out } => keygen(&name, &out),
    }
}

/// `satpep keygen NAME [--out DIR]`.
fn keygen(name: &str, out: &std::path::Path) -> ExitCode {
    use std::io::Write as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    if name.is_empty()
        || !name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.')
        || name.starts_with('.')
    {
        eprintln!(
            "error: `{}`: a name of letters, digits, `-`, `_` or `.`",
            name.escape_debug()
        );
        return ExitCode::from(2);
    }
    let (cert, key, fp) = match satpep_daemon::accel::tls::generate(name) {
        Ok(v) => v,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(1);
        }
    };
    for (ext, text, mode) in [("crt", &cert, 0o644), ("key", &key, 0o600)] {
        let path = out.join(format!("{name}.{ext}"));
        let written = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .open(&path)
            .and_then(|mut f| f.write_all(text.as_bytes()));
        if let Err(e) = written {
            eprintln!("error: {}: {e}", path.display());
            return ExitCode::from(if e.kind() == std::io::ErrorKind::AlreadyExists {
                2
            } else {
                1
            });
        }
    }
    println!("{fp}");
    ExitCode::SUCCESS
}

/// `satpep plot DIR… [--out DIR]`.
fn plot(dirs: &[PathBuf], out: Option<PathBuf>) -> ExitCode {
    use satpep_output::PlotError;
    use std::io::Write;
    let out = match (out, dirs) {
        (Some(out), _) => out,
        (None, [dir]) => dir.clone(),
        (None, _) => {
            eprintln!(
                "error: {} directories are overlaid into one set of plots: say where with --out DIR",
                dirs.len()
            );
            return ExitCode::from(2);
        }
    };
    match satpep_output::plot_dirs(dirs, &out) {
        Ok(files) if files.is_empty() => {
            let names: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
            let what = if dirs.len() > 1 {
                "flows.csv or links.csv (only these are overlaid)"
            } else {
                "flows.csv, links.csv or sweep.csv"
            };
            eprintln!(
                "error: nothing to plot in {}: no {what} with data",
                names.join(", ")
            );
            ExitCode::from(2)
        }
        Ok(files) => {
            let mut stdout = std::io::stdout().lock();
            for f in files {
                // A closed pipe (`| head`) is not an error of ours.
                if writeln!(stdout, "{}", f.display()).is_err() {
                    break;
                }
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            let code = if matches!(e, PlotError::NoDirectory { .. }) {
                2
            } else {
                1
            };
            ExitCode::from(code)
        }
    }
}

fn tcp_script(files: &[PathBuf]) -> ExitCode {
    use satpep_proto::tcp::script::Script;
    let missing: Vec<_> = files.iter().filter(|f| !f.is_file()).collect();
    if !missing.is_empty() {
        for f in missing {
            eprintln!("error: {}: no such script file", f.display());
        }
        return ExitCode::from(2);
    }
    let mut failed = 0;
    for f in files {
        let outcome = std::fs::read_to_string(f)
            .map_err(|e| e.to_string())
            .and_then(|text| {
                Script::parse(&text)
                    .and_then(|s| s.run())
                    .map_err(|e| e.to_string())
            });
        match outcome {
            Ok(()) => println!("ok   {}", f.display()),
            Err(e) => {
                failed += 1;
                println!("FAIL {}: {e}", f.display());
            }
        }
    }
    if failed > 0 {
        eprintln!("{failed} of {} scripts failed", files.len());
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}
