//! `satpep`: the command-line entry point. Thin: parses arguments and calls the layers below.

mod bench;
mod emu_cmd;
mod model_cmd;
mod reproduce_cmd;
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
    /// Render PNG and SVG plots from a results directory (flows.csv, links.csv, sweep.csv).
    Plot {
        /// Results directory written by `satpep sim`.
        dir: PathBuf,
    },
    /// Emulate a scenario in real time: real programs in network namespaces, joined through
    /// TUN devices by the scenario's links (needs root).
    Emu(emu_cmd::EmuArgs),
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
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Sim(args) => sim_cmd::run(args),
        Command::Plot { dir } => match satpep_output::plot_dir(&dir) {
            Ok(files) => {
                for f in files {
                    println!("{}", f.display());
                }
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("error: {e}");
                ExitCode::from(1)
            }
        },
        Command::Bench(args) => bench::run(args),
        Command::Emu(args) => emu_cmd::run(args),
        Command::Model(args) => model_cmd::run(args),
        Command::Reproduce(args) => reproduce_cmd::run(args),
        Command::TcpScript { files } => tcp_script(&files),
    }
}

fn tcp_script(files: &[PathBuf]) -> ExitCode {
    use satpep_proto::tcp::script::Script;
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
