//! `satpep sim`: load, run (one scenario or a sweep in parallel), write outputs, print tables.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Instant as WallInstant, SystemTime, UNIX_EPOCH};

use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use satpep_output::{
    render_sweep_table, render_table, write_run_json, RunStatus, SweepRow, SweepWriter,
};
use satpep_scenario::{Loaded, Scenario};
use satpep_sim::{Outputs, RunResult, Simulation};

use crate::outdir;

/// Arguments of `satpep sim`.
#[derive(Debug, Args)]
pub struct SimArgs {
    /// Scenario file (TOML). Without it, the built-in default: a GEO path with a slow return
    /// link and three bulk flows.
    #[arg(conflicts_with = "replay")]
    scenario: Option<PathBuf>,
    /// Repeat the run recorded in a `run.json` exactly (byte-identical outputs); takes no
    /// scenario, `--set` or `--seed`.
    #[arg(long, value_name = "RUN_JSON", conflicts_with_all = ["set", "seed"])]
    replay: Option<PathBuf>,
    /// Override any key, e.g. `--set link.forward.rate=20Mbps` (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,
    /// Random seed (same as `--set seed=N`).
    #[arg(long)]
    seed: Option<u64>,
    /// Output directory. Default: results/<scenario>-<UTC timestamp>/. It must be empty or
    /// new, unless `--force`.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Replace the contents of a non-empty `--out` that holds earlier satpep results.
    #[arg(long)]
    force: bool,
    /// Render plots after the run.
    #[arg(long)]
    plot: bool,
    /// Do not print the results table.
    #[arg(long, short)]
    quiet: bool,
    /// Parallel runs for a sweep (default: all cores).
    #[arg(long)]
    jobs: Option<usize>,
}

const VERSION: &str = env!("CARGO_PKG_VERSION");

/// Load the scenario file (or the built-in default) with `--set` overrides and `--seed`;
/// shared by `sim` and `emu`.
pub fn load(
    file: Option<&Path>,
    set: &[String],
    seed: Option<u64>,
) -> Result<Loaded, satpep_scenario::ScenarioError> {
    let mut overrides = set.to_vec();
    if let Some(seed) = seed {
        // `--seed 5 --set seed=3`: which one was meant? Refuse rather than pick one.
        if let Some(other) = set
            .iter()
            .find(|a| a.split_once('=').is_some_and(|(k, _)| k.trim() == "seed"))
        {
            return Err(satpep_scenario::ScenarioError::Invalid(Box::new(
                satpep_scenario::Diagnostic {
                    origin: format!("--seed {seed}"),
                    line: None,
                    column: None,
                    key: Some("seed".into()),
                    message: format!("--set '{other}' sets the seed too; give the seed once"),
                },
            )));
        }
        overrides.push(format!("seed={seed}"));
    }
    match file {
        Some(path) => satpep_scenario::load_file(path, &overrides),
        None => satpep_scenario::load_str(
            satpep_scenario::default_scenario_text(),
            "<built-in>",
            &overrides,
        ),
    }
}

/// Why `satpep sim` stopped without finishing, and its exit code.
enum Failure {
    /// Bad scenario, arguments or output folder (exit 2): nothing was run.
    Usage(String),
    /// The run or writing its outputs failed (exit 1).
    Run(String),
    /// A signal stopped it; outputs are whole and marked interrupted (exit 128 + signal).
    Interrupted(i32),
}

/// Run `satpep sim`. Exit codes: 0 ok, 1 run or I/O failure, 2 bad scenario, arguments or
/// output folder, 130/143 stopped by SIGINT/SIGTERM (outputs written, marked interrupted).
pub fn run(args: SimArgs) -> ExitCode {
    let loaded = match &args.replay {
        Some(run_json) => satpep_scenario::load_run_json(run_json),
        None => load(args.scenario.as_deref(), &args.set, args.seed),
    };
    let loaded = match loaded {
        Ok(l) => l,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let result = Interrupt::install().map_err(Failure::Run).and_then(|stop| {
        let out = match &args.out {
            Some(dir) => dir.clone(),
            None => free_default_out_dir(&loaded.scenario.name),
        };
        outdir::prepare(&out, args.force).map_err(Failure::Usage)?;
        if loaded.sweep.is_empty() {
            run_single(&args, &loaded, &out, &stop)
        } else {
            run_sweep(&args, &loaded, &out, &stop)
        }
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::Usage(e)) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
        Err(Failure::Run(e)) => {
            eprintln!("error: {e}");
            ExitCode::from(1)
        }
        Err(Failure::Interrupted(sig)) => ExitCode::from(128 + sig as u8),
    }
}

/// SIGINT/SIGTERM handling for a run: the first signal asks the run to stop at the next
/// 100 ms of virtual time and write whole outputs; a second one exits at once (the CSVs
/// still end on a whole row, see `satpep_output::series`).
struct Interrupt {
    stop: Arc<AtomicBool>,
    signal: Arc<AtomicUsize>,
}

impl Interrupt {
    fn install() -> Result<Self, String> {
        use signal_hook::consts::{SIGINT, SIGTERM};
        let stop = Arc::new(AtomicBool::new(false));
        let signal = Arc::new(AtomicUsize::new(0));
        for sig in [SIGINT, SIGTERM] {
            let install = || -> std::io::Result<()> {
                // Registered first, so it runs before the flag below is set: exits only on
                // the second signal.
                signal_hook::flag::register_conditional_shutdown(sig, 128 + sig, stop.clone())?;
                signal_hook::flag::register_usize(sig, signal.clone(), sig as usize)?;
                signal_hook::flag::register(sig, stop.clone())?;
                Ok(())
            };
            install().map_err(|e| format!("cannot install signal handlers: {e}"))?;
        }
        Ok(Self { stop, signal })
    }

    /// The signal that stopped the run, if one did.
    fn received(&self) -> Option<i32> {
        self.stop
            .load(Ordering::Relaxed)
            .then(|| self.signal.load(Ordering::Relaxed) as i32)
    }
}

fn run_single(
    args: &SimArgs,
    loaded: &Loaded,
    out: &Path,
    stop: &Interrupt,
) -> Result<(), Failure> {
    let sc = &loaded.scenario;
    let wall = WallInstant::now();
    let result = run_one(sc, &loaded.resolved, out, true, &stop.stop).map_err(Failure::Run)?;
    if !args.quiet {
        print!("{}", render_table(&result.summary));
        let secs = wall.elapsed().as_secs_f64();
        println!(
            "\n{} events in {:.2} s wall ({:.1} M events/s, {:.0}× real time); results in {}",
            result.events,
            secs,
            result.events as f64 / secs / 1e6,
            result.sim_time.as_secs_f64() / secs,
            out.display()
        );
    }
    if let Some(sig) = stop.received() {
        eprintln!(
            "interrupted at {:.3} s of {:.3} s simulated: outputs in {} are whole and \
             summary.json says \"status\": \"interrupted\"",
            result.sim_time.as_secs_f64(),
            sc.duration.as_secs_f64(),
            out.display()
        );
        return Err(Failure::Interrupted(sig));
    }
    if args.plot || sc.output.plots {
        plot(out).map_err(Failure::Run)?;
    }
    Ok(())
}

/// One run into `dir`: series, pcap, summary.json, run.json. Shows a progress bar on a TTY
/// once the run has taken more than a second. Ends early, with whole outputs, once `stop`
/// is set.
fn run_one(
    sc: &Scenario,
    resolved: &impl serde::Serialize,
    dir: &Path,
    progress: bool,
    stop: &AtomicBool,
) -> Result<RunResult, String> {
    let ctx = |e: std::io::Error| format!("{}: {e}", dir.display());
    std::fs::create_dir_all(dir).map_err(ctx)?;
    let mut sim = Simulation::new(sc);
    sim.set_outputs(Outputs::create(dir, sc).map_err(ctx)?);
    let wall = WallInstant::now();
    let total = sc.duration.as_secs_f64();
    let tty = progress && std::io::stderr().is_terminal();
    let mut bar: Option<ProgressBar> = None;
    let result = sim
        .run_stoppable(
            |t| {
                if !tty {
                    return;
                }
                if bar.is_none() && wall.elapsed().as_secs_f64() > 1.0 {
                    let b = ProgressBar::new((total * 1000.0) as u64);
                    b.set_style(
                        ProgressStyle::with_template(
                            "{spinner} simulated {msg} [{bar:40}] {percent}% eta {eta}",
                        )
                        .unwrap_or_else(|_| ProgressStyle::default_bar()),
                    );
                    bar = Some(b);
                }
                if let Some(b) = &bar {
                    b.set_position((t.as_secs_f64() * 1000.0) as u64);
                    b.set_message(format!("{:.1} s", t.as_secs_f64()));
                }
            },
            stop,
        )
        .map_err(ctx)?;
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    result.summary.write_json(dir).map_err(ctx)?;
    write_run_json(dir, VERSION, sc.seed, resolved).map_err(ctx)?;
    Ok(result)
}

fn run_sweep(args: &SimArgs, loaded: &Loaded, out: &Path, stop: &Interrupt) -> Result<(), Failure> {
    let points = &loaded.sweep;
    let keys: Vec<String> = points[0]
        .assignments
        .iter()
        .map(|(k, _)| k.clone())
        .collect();
    let bar = std::io::stderr()
        .is_terminal()
        .then(|| ProgressBar::new(points.len() as u64));
    let results = satpep_sim::parallel::map_in_order(points, args.jobs.unwrap_or(0), |i, p| {
        if stop.stop.load(Ordering::Relaxed) {
            return Ok(None); // not started: a signal came first
        }
        let dir = out.join(format!("run-{i:03}"));
        let r = run_one(&p.scenario, &p.scenario.to_table(), &dir, false, &stop.stop);
        if let Some(b) = &bar {
            b.inc(1);
        }
        r.map(|r| Some(r.summary))
    });
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    let mut writer = SweepWriter::create(out, keys)
        .map_err(|e| Failure::Run(format!("{}: {e}", out.display())))?;
    let mut cut = 0;
    for (i, r) in results.into_iter().enumerate() {
        match r.map_err(Failure::Run)? {
            Some(summary) if summary.status == RunStatus::Complete => {
                writer.push(SweepRow::from_summary(i, &points[i].assignments, &summary));
            }
            _ => cut += 1,
        }
    }
    if !args.quiet {
        print!("{}", render_sweep_table(writer.rows()));
        println!(
            "\n{} runs; results in {}",
            points.len() - cut,
            out.display()
        );
    }
    writer
        .finish()
        .map_err(|e| Failure::Run(format!("{}: {e}", out.display())))?;
    if let Some(sig) = stop.received() {
        eprintln!(
            "interrupted: sweep.csv holds the {} of {} runs that completed; the others were \
             cut short (summary.json \"status\": \"interrupted\") or not started",
            points.len() - cut,
            points.len()
        );
        return Err(Failure::Interrupted(sig));
    }
    if args.plot || loaded.scenario.output.plots {
        plot(out).map_err(Failure::Run)?;
    }
    Ok(())
}

fn plot(dir: &Path) -> Result<(), String> {
    let files = satpep_output::plot_dir(dir).map_err(|e| e.to_string())?;
    println!("plots: {}", files.len());
    Ok(())
}

/// [`default_out_dir`], with `-2`, `-3`… appended when two runs start in the same second.
fn free_default_out_dir(name: &str) -> PathBuf {
    let base = default_out_dir(name);
    let mut dir = base.clone();
    let mut n = 1;
    while dir.exists() {
        n += 1;
        dir = PathBuf::from(format!("{}-{n}", base.display()));
    }
    dir
}

/// `results/<name>-<UTC YYYYMMDD-HHMMSS>`.
fn default_out_dir(name: &str) -> PathBuf {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = civil_from_days(days as i64);
    let stamp = format!(
        "{y:04}{m:02}{d:02}-{:02}{:02}{:02}",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    );
    PathBuf::from("results").join(format!("{}-{stamp}", path_safe(name)))
}

/// `name` as one path component: characters other than letters, digits, `-`, `_` and `.`
/// become `_`, and leading dots go, so that `name = "../../x"` cannot write outside `results/`.
pub fn path_safe(name: &str) -> String {
    let s: String = name
        .chars()
        .map(|c| {
            if c.is_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect();
    let s = s.trim_start_matches('.');
    if s.is_empty() {
        "scenario".into()
    } else {
        s.into()
    }
}

/// Days since 1970-01-01 to (year, month, day), H. Hinnant's algorithm.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scenario_names_cannot_leave_the_results_folder() {
        assert_eq!(path_safe("../../escape"), "_.._escape");
        assert_eq!(path_safe("/etc/x"), "_etc_x");
        assert_eq!(path_safe(".."), "scenario");
        assert_eq!(path_safe("geo-1.5_ms"), "geo-1.5_ms");
        let dir = default_out_dir("../../escape");
        assert_eq!(dir.parent(), Some(Path::new("results")));
    }

    #[test]
    fn civil_dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(20_779), (2026, 11, 22));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
    }
}
