//! `satpep._native`: the Rust half of the `satpep` Python package (the Python half is
//! `python/satpep/`). It loads scenarios with `satpep-scenario`, runs them with `satpep-sim`
//! and reduces a run to its `sweep.csv` row with `satpep-output`, so a run started from Python
//! is the run `satpep sim` makes: same loader, same checks, same outputs, same bytes.
//!
//! What stays in Python: choosing where a run goes (process pool, Ray), pandas, Parquet. Every
//! function here takes and returns plain values (strings, lists, dicts), so a call can be
//! pickled to a worker process or a Ray task. Runs release the GIL.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use pyo3::create_exception;
use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use satpep_output::{write_run_json, Summary, SweepRow, SweepWriter};
use satpep_scenario::{Loaded, ScenarioError as LoadError};
use satpep_sim::{Outputs, RunResult, Simulation};
use toml::{Table, Value};

create_exception!(
    _native,
    ScenarioError,
    PyValueError,
    "A scenario that cannot be loaded: attributes `file` (file name, `<string>`, `<dict>` or \
     the `--set` assignment), `line` and `column` (1-based, or None), `key` (dotted key path, or \
     None) and `message` (what was expected)."
);

/// The version of satpep this module was built from (the CLI's `satpep --version`).
const VERSION: &str = env!("CARGO_PKG_VERSION");

/// A loader error as a Python `ScenarioError` whose attributes say where.
fn scenario_error(py: Python<'_>, e: &LoadError) -> PyErr {
    let err = ScenarioError::new_err(e.to_string());
    let v = err.value(py);
    let column = match e {
        LoadError::Invalid(d) => d.column,
        _ => None,
    };
    // NOTE: setting attributes on a fresh exception instance cannot fail short of memory
    // exhaustion; ignore the results rather than mask the real error.
    let _ = v.setattr("file", e.origin());
    let _ = v.setattr("line", e.line());
    let _ = v.setattr("column", column);
    let _ = v.setattr("key", e.key());
    let _ = v.setattr("message", e.message());
    err
}

fn load(py: Python<'_>, text: &str, origin: &str, overrides: &[String]) -> PyResult<Loaded> {
    satpep_scenario::load_str(text, origin, overrides).map_err(|e| scenario_error(py, &e))
}

fn io_error(dir: &str) -> impl Fn(std::io::Error) -> PyErr + '_ {
    move |e| PyOSError::new_err(format!("{dir}: {e}"))
}

/// Runs `sim` without the GIL. Once per simulated second it takes the GIL back to let Python
/// handle pending signals: Ctrl-C stops the run as `satpep sim` stops on SIGINT (whole outputs,
/// `"status": "interrupted"`), then raises KeyboardInterrupt.
/// The caller writes the outputs of an interrupted run too, then raises the signal's error.
fn run_sim(py: Python<'_>, sim: Simulation) -> (std::io::Result<RunResult>, Option<PyErr>) {
    let stop = AtomicBool::new(false);
    let mut signal: Option<PyErr> = None;
    let result = py.detach(|| {
        sim.run_stoppable(
            |_| {
                if let Err(e) = Python::attach(|py| py.check_signals()) {
                    signal = Some(e);
                    stop.store(true, Ordering::Relaxed);
                }
            },
            &stop,
        )
    });
    (result, signal)
}

/// A scenario given as a dict (already turned into JSON by the caller) as TOML text, so that
/// it goes through the same loader, checks and messages as a file.
#[pyfunction]
fn toml_from_json(json: &str) -> PyResult<String> {
    let value: serde_json::Value =
        serde_json::from_str(json).map_err(|e| PyValueError::new_err(e.to_string()))?;
    let table = Table::try_from(value)
        .map_err(|e| PyValueError::new_err(format!("not a scenario table: {e}")))?;
    toml::to_string(&table).map_err(|e| PyValueError::new_err(format!("as TOML: {e}")))
}

/// Loads and checks a scenario (all of its sweep points too) and returns `(name, text, points)`:
/// the scenario's name; its text without the `[sweep]` table, which each run then loads with
/// its point's assignments as overrides (loading a 1 000-point sweep once per run would cost
/// 1 000²); and one list per sweep point of `(key, value as written, value as TOML)`, first
/// key slowest as `satpep sim` runs them (empty without a `[sweep]`).
#[pyfunction]
#[allow(clippy::type_complexity)]
fn prepare(
    py: Python<'_>,
    text: &str,
    origin: &str,
    overrides: Vec<String>,
) -> PyResult<(String, String, Vec<Vec<(String, String, String)>>)> {
    let loaded = load(py, text, origin, &overrides)?;
    let name = loaded.scenario.name.clone();
    if loaded.sweep.is_empty() {
        return Ok((name, text.to_owned(), Vec::new()));
    }
    let mut table: Table = text
        .parse()
        .map_err(|e| PyValueError::new_err(format!("{origin}: {e}")))?;
    let sweep = match table.remove("sweep") {
        Some(Value::Table(t)) => t,
        _ => return Err(PyValueError::new_err(format!("{origin}: no [sweep] table"))),
    };
    let mut keys = Vec::new();
    flatten_sweep(&sweep, "", &mut keys);
    let mut points = Vec::with_capacity(loaded.sweep.len());
    for (n, point) in loaded.sweep.iter().enumerate() {
        // Mixed-radix digits of n, last key fastest (as the loader expands it).
        let mut rest = n;
        let mut choice = vec![0; keys.len()];
        for (i, (_, values)) in keys.iter().enumerate().rev() {
            choice[i] = rest % values.len();
            rest /= values.len();
        }
        let row: Vec<(String, String, String)> = keys
            .iter()
            .zip(&choice)
            .map(|((k, values), &c)| {
                let v = &values[c];
                let written = match v {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                (k.clone(), written, v.to_string())
            })
            .collect();
        let same = row.len() == point.assignments.len()
            && row
                .iter()
                .zip(&point.assignments)
                .all(|((k, w, _), (lk, lw))| k == lk && w == lw);
        if !same {
            return Err(PyValueError::new_err(format!(
                "{origin}: sweep point {n} is {:?} for the loader but {row:?} here",
                point.assignments
            )));
        }
        points.push(row);
    }
    let text = toml::to_string(&table)
        .map_err(|e| PyValueError::new_err(format!("{origin}: as TOML: {e}")))?;
    Ok((name, text, points))
}

/// Splits a scenario's `[sweep]` off: `(text without it, [(key, values as a TOML array)])`,
/// keys in order. Without a `[sweep]` the text comes back unchanged (so error lines still
/// point into the file).
#[pyfunction]
fn take_sweep(text: &str, origin: &str) -> PyResult<(String, Vec<(String, String)>)> {
    let mut table: Table = text
        .parse()
        .map_err(|e| PyValueError::new_err(format!("{origin}: {e}")))?;
    let Some(sweep) = table.remove("sweep") else {
        return Ok((text.to_owned(), Vec::new()));
    };
    let Value::Table(sweep) = sweep else {
        return Err(PyValueError::new_err(format!(
            "{origin}: `sweep` must be a table"
        )));
    };
    let mut keys = Vec::new();
    flatten_sweep(&sweep, "", &mut keys);
    let text = toml::to_string(&table)
        .map_err(|e| PyValueError::new_err(format!("{origin}: as TOML: {e}")))?;
    let keys = keys
        .into_iter()
        .map(|(k, values)| (k, Value::Array(values).to_string()))
        .collect();
    Ok((text, keys))
}

/// The `[sweep]` keys in order, unquoted dotted keys (`[sweep] link.forward.rate = […]`)
/// joined back into one path.
fn flatten_sweep(t: &Table, prefix: &str, out: &mut Vec<(String, Vec<Value>)>) {
    for (k, v) in t {
        let key = if prefix.is_empty() {
            k.clone()
        } else {
            format!("{prefix}.{k}")
        };
        match v {
            Value::Table(inner) => flatten_sweep(inner, &key, out),
            Value::Array(values) => out.push((key, values.clone())),
            other => out.push((key, vec![other.clone()])),
        }
    }
}

/// Runs one scenario (no `[sweep]`) into `out` as `satpep sim --out` does: `summary.json`,
/// `run.json`, the series CSVs and the pcap the scenario asks for. Returns `summary.json`'s
/// text and the run's `sweep.csv` row (as [`run_row`] does).
#[pyfunction]
fn run<'py>(
    py: Python<'py>,
    text: &str,
    origin: &str,
    overrides: Vec<String>,
    out: String,
) -> PyResult<(String, Bound<'py, PyDict>)> {
    let loaded = load(py, text, origin, &overrides)?;
    if !loaded.sweep.is_empty() {
        return Err(PyValueError::new_err(format!(
            "{origin} has a [sweep] of {} runs: use satpep.sweep()",
            loaded.sweep.len()
        )));
    }
    let dir = Path::new(&out);
    let sc = &loaded.scenario;
    let mut sim = Simulation::new(sc);
    let outputs = std::fs::create_dir_all(dir).and_then(|()| Outputs::create(dir, sc));
    sim.set_outputs(outputs.map_err(io_error(&out))?);
    let (result, signal) = run_sim(py, sim);
    let summary = result.and_then(|result| {
        result.summary.write_json(dir)?;
        write_run_json(dir, VERSION, sc.seed, &loaded.resolved)?;
        Ok(result.summary)
    });
    if let Some(e) = signal {
        return Err(e);
    }
    let summary = summary.map_err(io_error(&out))?;
    let json = serde_json::to_string(&summary).map_err(|e| PyValueError::new_err(e.to_string()))?;
    Ok((
        json,
        row_dict(py, &SweepRow::from_summary(0, &[], &summary))?,
    ))
}

/// Runs one point of a sweep and returns its `sweep.csv` row as a dict (the keys of
/// [`SweepRow`]; `assignments` and `link_utilisation` as lists of pairs). With `out`, the
/// run's files go there as in a `satpep sim` sweep's `run-NNN/`; without, nothing is written.
#[pyfunction]
#[pyo3(signature = (text, origin, overrides, run, assignments, out=None))]
fn run_row<'py>(
    py: Python<'py>,
    text: &str,
    origin: &str,
    overrides: Vec<String>,
    run: usize,
    assignments: Vec<(String, String)>,
    out: Option<String>,
) -> PyResult<Bound<'py, PyDict>> {
    let loaded = load(py, text, origin, &overrides)?;
    let sc = &loaded.scenario;
    let mut sim = Simulation::new(sc);
    let where_ = out.as_deref().unwrap_or("run");
    if let Some(dir) = &out {
        sim.set_outputs(Outputs::create(Path::new(dir), sc).map_err(io_error(where_))?);
    }
    let (result, signal) = run_sim(py, sim);
    let summary = result.and_then(|result| -> std::io::Result<Summary> {
        if let Some(dir) = &out {
            result.summary.write_json(dir)?;
            write_run_json(dir, VERSION, sc.seed, &sc.to_table())?;
        }
        Ok(result.summary)
    });
    if let Some(e) = signal {
        return Err(e);
    }
    let summary = summary.map_err(io_error(where_))?;
    row_dict(py, &SweepRow::from_summary(run, &assignments, &summary))
}

/// A sweep row as the dict [`write_sweep`] reads back.
fn row_dict<'py>(py: Python<'py>, r: &SweepRow) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("run", r.run)?;
    d.set_item("assignments", r.assignments.clone())?;
    d.set_item("total_goodput_bps", r.total_goodput_bps)?;
    d.set_item("mean_goodput_bps", r.mean_goodput_bps)?;
    d.set_item("min_goodput_bps", r.min_goodput_bps)?;
    d.set_item("jain_fairness", r.jain_fairness)?;
    d.set_item("retransmissions", r.retransmissions)?;
    d.set_item("rto_expirations", r.rto_expirations)?;
    d.set_item("max_completion_time_s", r.max_completion_time_s)?;
    d.set_item("flows_completed", r.flows_completed)?;
    d.set_item("link_utilisation", r.link_utilisation.clone())?;
    Ok(d)
}

/// Writes `dir/sweep.csv` (and `sweep_stats.csv` when `seed` is swept) from rows that
/// [`run_row`] returned, with the CLI's own writer: the same rows give the same bytes whichever
/// machine or engine ran them. Returns the path of `sweep.csv`.
#[pyfunction]
fn write_sweep(dir: String, keys: Vec<String>, rows: &Bound<'_, PyList>) -> PyResult<String> {
    let mut w = SweepWriter::create(&dir, keys).map_err(io_error(&dir))?;
    for row in rows.iter() {
        let get = |k: &str| -> PyResult<Bound<'_, PyAny>> {
            row.get_item(k)
                .map_err(|_| PyValueError::new_err(format!("sweep row without `{k}`")))
        };
        w.push(SweepRow {
            run: get("run")?.extract()?,
            assignments: get("assignments")?.extract()?,
            total_goodput_bps: get("total_goodput_bps")?.extract()?,
            mean_goodput_bps: get("mean_goodput_bps")?.extract()?,
            min_goodput_bps: get("min_goodput_bps")?.extract()?,
            jain_fairness: get("jain_fairness")?.extract()?,
            retransmissions: get("retransmissions")?.extract()?,
            rto_expirations: get("rto_expirations")?.extract()?,
            max_completion_time_s: get("max_completion_time_s")?.extract()?,
            flows_completed: get("flows_completed")?.extract()?,
            link_utilisation: get("link_utilisation")?.extract()?,
        });
    }
    let path = w.finish().map_err(io_error(&dir))?;
    Ok(path.display().to_string())
}

/// Renders the plots of a run or sweep folder (PNG and SVG), as `satpep plot DIR` does, and
/// returns their paths.
#[pyfunction]
fn plot(py: Python<'_>, dir: String) -> PyResult<Vec<String>> {
    let files = py
        .detach(|| satpep_output::plot_dir(Path::new(&dir)))
        .map_err(|e| PyOSError::new_err(format!("{dir}: {e}")))?;
    Ok(files.iter().map(|p| p.display().to_string()).collect())
}

/// The extension module.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", VERSION)?;
    m.add("ScenarioError", m.py().get_type::<ScenarioError>())?;
    m.add_function(wrap_pyfunction!(toml_from_json, m)?)?;
    m.add_function(wrap_pyfunction!(prepare, m)?)?;
    m.add_function(wrap_pyfunction!(take_sweep, m)?)?;
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(run_row, m)?)?;
    m.add_function(wrap_pyfunction!(write_sweep, m)?)?;
    m.add_function(wrap_pyfunction!(plot, m)?)?;
    Ok(())
}
