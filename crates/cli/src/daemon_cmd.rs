//! `satpep gateway` and `satpep terminal`: the daemons (crates/daemon; docs/deploy.md).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use satpep_daemon::{DaemonConfig, LogFormat, Role, RunOptions};

/// Arguments shared by both daemons.
#[derive(clap::Args, Debug)]
pub struct DaemonArgs {
    /// The configuration file (docs/deploy.md; examples in deploy/).
    #[arg(long, short, value_name = "FILE")]
    config: PathBuf,
    /// Check the configuration, print what would be installed, and exit (0: usable).
    #[arg(long, conflicts_with = "cleanup")]
    check: bool,
    /// Remove what a previous run of this instance left (rules, tables, sysctls) and exit;
    /// refused while that instance runs.
    #[arg(long)]
    cleanup: bool,
    /// Log format on stderr.
    #[arg(long, value_enum, default_value = "text")]
    log_format: LogFormatArg,
    /// Debug-level log lines.
    #[arg(long, short)]
    verbose: bool,
    /// Directory of the state file that lets the next start undo a crashed run's changes.
    #[arg(long, value_name = "DIR", default_value = satpep_daemon::state::STATE_DIR)]
    state_dir: PathBuf,
    /// Directory of the keyed tunnels' replay-epoch file, which must survive reboots (default
    /// /var/lib/satpep; with --state-dir and without this, the --state-dir).
    #[arg(long, value_name = "DIR")]
    epoch_dir: Option<PathBuf>,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug)]
enum LogFormatArg {
    Text,
    Json,
}

/// Run one daemon until SIGINT/SIGTERM.
pub fn run(role: Role, args: DaemonArgs) -> ExitCode {
    satpep_daemon::init_logging(
        match args.log_format {
            LogFormatArg::Text => LogFormat::Text,
            LogFormatArg::Json => LogFormat::Json,
        },
        args.verbose,
    );
    let config = match DaemonConfig::load(&args.config) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    if args.check {
        print!("{}", satpep_daemon::describe(&config, role));
        let problems = satpep_daemon::role_problems(&config, role);
        for (key, why) in &problems {
            eprintln!("error: {}: {key}: {why}", args.config.display());
        }
        return if problems.is_empty() {
            ExitCode::SUCCESS
        } else {
            ExitCode::from(2)
        };
    }
    // A relocated --state-dir (tests, a second setup) takes the epoch file with it.
    let epoch_dir = args.epoch_dir.unwrap_or_else(|| {
        if args.state_dir == Path::new(satpep_daemon::state::STATE_DIR) {
            satpep_daemon::epoch::EPOCH_DIR.into()
        } else {
            args.state_dir.clone()
        }
    });
    let opts = RunOptions {
        state_dir: args.state_dir,
        epoch_dir,
    };
    let result = if args.cleanup {
        satpep_daemon::cleanup(&config, role, &opts).map(|done| {
            for d in &done {
                println!("{d}");
            }
            if done.is_empty() {
                println!("nothing to clean up");
            }
        })
    } else {
        satpep_daemon::run(&config, role, &opts, |status| {
            if let Some(a) = status.metrics {
                tracing::info!("metrics at http://{a}/metrics");
            }
        })
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!("{e}");
            eprintln!("error: {e}");
            ExitCode::from(e.exit_code())
        }
    }
}
