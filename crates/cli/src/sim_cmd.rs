//! `satpep sim`: load, run (one scenario or a sweep in parallel), write outputs, print tables.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Instant as WallInstant, SystemTime, UNIX_EPOCH};

use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use satpep_output::{render_sweep_table, render_table, write_run_json, SweepRow, SweepWriter};
use satpep_scenario::{Loaded, Scenario};
use satpep_sim::{Outputs, RunResult, Simulation};

/// Arguments of `satpep sim`.
#[derive(Debug, Args)]
pub struct SimArgs {
    /// Scenario file (TOML). Without it, the built-in default: a GEO path with a slow return
    /// link and three bulk flows.
    scenario: Option<PathBuf>,
    /// Override any key, e.g. `--set link.forward.rate=20Mbps` (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,
    /// Random seed (same as `--set seed=N`).
    #[arg(long)]
    seed: Option<u64>,
    /// Output directory. Default: results/<scenario>-<UTC timestamp>/
    #[arg(long)]
    out: Option<PathBuf>,
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

/// Run `satpep sim`. Exit codes: 0 ok, 1 run or I/O failure, 2 bad scenario or arguments.
pub fn run(args: SimArgs) -> ExitCode {
    let loaded = match load(args.scenario.as_deref(), &args.set, args.seed) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| default_out_dir(&loaded.scenario.name));
    let result = if loaded.sweep.is_empty() {
        run_single(&args, &loaded, &out)
    } else {
        run_sweep(&args, &loaded, &out)
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(1)
        }
    }
}

fn run_single(args: &SimArgs, loaded: &Loaded, out: &Path) -> Result<(), String> {
    let sc = &loaded.scenario;
    let wall = WallInstant::now();
    let (result, _) = run_one(sc, &loaded.resolved, out, true)?;
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
    if args.plot || sc.output.plots {
        plot(out)?;
    }
    Ok(())
}

/// One run into `dir`: series, pcap, summary.json, run.json. Shows a progress bar on a TTY
/// once the run has taken more than a second.
fn run_one(
    sc: &Scenario,
    resolved: &impl serde::Serialize,
    dir: &Path,
    progress: bool,
) -> Result<(RunResult, f64), String> {
    let ctx = |e: std::io::Error| format!("{}: {e}", dir.display());
    let mut sim = Simulation::new(sc);
    sim.set_outputs(Outputs::create(dir, sc).map_err(ctx)?);
    let wall = WallInstant::now();
    let total = sc.duration.as_secs_f64();
    let tty = progress && std::io::stderr().is_terminal();
    let mut bar: Option<ProgressBar> = None;
    let result = sim
        .run(|t| {
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
        })
        .map_err(ctx)?;
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    result.summary.write_json(dir).map_err(ctx)?;
    write_run_json(dir, VERSION, sc.seed, resolved).map_err(ctx)?;
    Ok((result, wall.elapsed().as_secs_f64()))
}

fn run_sweep(args: &SimArgs, loaded: &Loaded, out: &Path) -> Result<(), String> {
    std::fs::create_dir_all(out).map_err(|e| format!("{}: {e}", out.display()))?;
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
        let dir = out.join(format!("run-{i:03}"));
        let r = run_one(&p.scenario, &p.scenario.to_table(), &dir, false).map(|(r, _)| r.summary);
        if let Some(b) = &bar {
            b.inc(1);
        }
        r
    });
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    let mut writer =
        SweepWriter::create(out, keys).map_err(|e| format!("{}: {e}", out.display()))?;
    for (i, r) in results.into_iter().enumerate() {
        let summary = r?;
        writer.push(SweepRow::from_summary(i, &points[i].assignments, &summary));
    }
    if !args.quiet {
        print!("{}", render_sweep_table(writer.rows()));
        println!("\n{} runs; results in {}", points.len(), out.display());
    }
    writer
        .finish()
        .map_err(|e| format!("{}: {e}", out.display()))?;
    if args.plot || loaded.scenario.output.plots {
        plot(out)?;
    }
    Ok(())
}

fn plot(dir: &Path) -> Result<(), String> {
    let files = satpep_output::plot_dir(dir).map_err(|e| e.to_string())?;
    println!("plots: {}", files.len());
    Ok(())
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
    PathBuf::from("results").join(format!("{name}-{stamp}"))
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
    fn civil_dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(20_779), (2026, 11, 22));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
    }
}
