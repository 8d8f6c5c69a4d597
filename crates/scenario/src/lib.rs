//! satpep-scenario: the TOML scenario file — schema, loading, validation, defaults, `--set`
//! overrides and `[sweep]`s. The format is documented key by key in `docs/scenario.md`.
//!
//! Loading goes: text (at most [`MAX_SCENARIO_BYTES`]) → parsed once into a document that keeps
//! every span, converted to a `toml::Table` → `--set` overrides applied
//! to the table → `[sweep]` taken out → the table walked and type-checked into a [`Scenario`]
//! (names resolved to indices, defaults filled in, routes computed) → one more [`Scenario`] per
//! sweep combination. Because overrides are applied before any check, an override is validated
//! exactly like the file; every error is a [`ScenarioError`] naming the file (or the `--set`), the
//! line and column, the full key path and what was expected. No input makes this crate panic,
//! and the limits in `docs/scenario.md` ("Limits": file size, element counts, estimated set-up
//! memory, sampling volume, sweep memory, names) bound what a file can make a run cost.
//!
//! What is not modelled here: anything about running — the simulator decides what a node does
//! with the [`Scenario`] it is given.

mod build;
mod error;
mod keys;
mod names;
mod routes;
mod spec;
mod suggest;

use std::path::Path;

use toml::{Table, Value};

pub use error::{Diagnostic, ScenarioError};
pub use spec::{
    AppSpec, DamaSpec, FlowSpec, GroupSpec, LinkSpec, MulticastSpec, NodeKind, NodeSpec,
    OutputSpec, Scenario, SweepPoint,
};

pub use build::{
    FLOW_BYTES, LINK_BYTES, MAX_ELEMENTS, MAX_NODES, MAX_SERIES_ROWS, MAX_SETUP_BYTES,
    MAX_TRACE_BYTES, MEMORY_ENV, NODE_BYTES,
};
use keys::{KeyPath, Seg, Setter, Sources};
pub use names::MAX_NAME_CHARS;
pub use routes::{Routes, MAX_CORE, MAX_DEPTH};

/// Largest scenario text accepted, in bytes (16 MiB). A 100 000-flow scenario is about 8 MB;
/// loading costs about 10× the text in memory (docs/performance.md, "Scenario loading"), so
/// this bounds what a file can make the loader allocate. A larger file is refused before it is
/// read.
pub const MAX_SCENARIO_BYTES: usize = 16 << 20;

/// Largest `run.json` accepted for a replay (512 MiB): it spells out every default, about
/// 1 KB per flow, so a run at the element limits fits.
pub const MAX_RUN_JSON_BYTES: usize = 512 << 20;

/// Most combinations a `[sweep]` may expand to; more is almost certainly a mistake.
pub const MAX_SWEEP_POINTS: usize = 10_000;

/// The outcome of loading a scenario.
#[derive(Clone, Debug)]
pub struct Loaded {
    /// The scenario after overrides, without sweep assignments.
    pub scenario: Scenario,
    /// `scenario` written back in the file format with every default spelled out
    /// ([`Scenario::to_table`]), for `run.json`; loading it again gives `scenario`.
    pub resolved: Table,
    /// One entry per `[sweep]` combination, in order (the first sweep key varies slowest);
    /// empty when there is no `[sweep]`.
    pub sweep: Vec<SweepPoint>,
}

/// Load the scenario file at `path`, apply `overrides` (`KEY=VALUE` strings as given to `--set`)
/// and expand its `[sweep]`. The default scenario name is the file stem.
pub fn load_file(path: &Path, overrides: &[String]) -> Result<Loaded, ScenarioError> {
    let origin = path.display().to_string();
    let text = read_limited(path, &origin, MAX_SCENARIO_BYTES)?;
    let stem = path.file_stem().map_or_else(
        || "scenario".to_owned(),
        |s| s.to_string_lossy().into_owned(),
    );
    load(&text, &origin, &stem, overrides, MAX_SCENARIO_BYTES)
}

/// Load a scenario from `text`; `origin` names it in error messages (a file name, or
/// `<built-in>`). The default scenario name is the stem of `origin`, or `default` when `origin` is
/// in angle brackets.
pub fn load_str(text: &str, origin: &str, overrides: &[String]) -> Result<Loaded, ScenarioError> {
    let stem = if origin.starts_with('<') {
        "default".to_owned()
    } else {
        Path::new(origin).file_stem().map_or_else(
            || "scenario".to_owned(),
            |s| s.to_string_lossy().into_owned(),
        )
    };
    load(text, origin, &stem, overrides, MAX_SCENARIO_BYTES)
}

/// Load the scenario recorded in a `run.json` (its `"scenario"` object: every key resolved),
/// to repeat that run exactly. No overrides: a replay is the recorded run, nothing else.
pub fn load_run_json(path: &Path) -> Result<Loaded, ScenarioError> {
    let origin = path.display().to_string();
    let bad = |message: String| ScenarioError::RunJson {
        path: origin.clone(),
        message,
    };
    let text = read_limited(path, &origin, MAX_RUN_JSON_BYTES)?;
    let run: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| bad(format!("not JSON: {e}")))?;
    let scenario = run
        .get("scenario")
        .ok_or_else(|| bad("no \"scenario\" object (is this a run.json?)".into()))?;
    let table = Table::try_from(scenario).map_err(|e| bad(format!("\"scenario\": {e}")))?;
    let toml_text =
        toml::to_string(&table).map_err(|e| bad(format!("\"scenario\" as TOML: {e}")))?;
    // Every default is spelled out there (about 700 bytes per flow), so the text may exceed
    // MAX_SCENARIO_BYTES for a scenario that was within it; the element limits still hold.
    load(
        &toml_text,
        &format!("{origin} (scenario)"),
        "scenario",
        &[],
        usize::MAX,
    )
}

/// The built-in scenario (`scenarios/default.toml`): a GEO path with a slow return link and
/// three bulk flows. Load it with `load_str(default_scenario_text(), "<built-in>", &[])`.
pub fn default_scenario_text() -> &'static str {
    include_str!("../../../scenarios/default.toml")
}

/// Read at most `limit` bytes of the file (plus one byte to tell that it is longer).
fn read_limited(path: &Path, origin: &str, limit: usize) -> Result<String, ScenarioError> {
    use std::io::Read as _;
    let read_error = |source| ScenarioError::Read {
        path: origin.to_owned(),
        source,
    };
    let file = std::fs::File::open(path).map_err(read_error)?;
    let mut bytes = Vec::new();
    file.take(limit as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(read_error)?;
    if bytes.len() > limit {
        let size = std::fs::metadata(path).map_or(bytes.len() as u64, |m| m.len());
        return Err(too_big(origin, size, limit));
    }
    String::from_utf8(bytes).map_err(|e| {
        let offset = e.utf8_error().valid_up_to();
        let text = String::from_utf8_lossy(&e.into_bytes()[..offset]).into_owned();
        let (line, column) = error::line_col(&text, offset);
        keys::invalid(
            origin,
            Some(line),
            Some(column),
            None,
            "the file is not UTF-8 text (TOML files are UTF-8)".into(),
        )
    })
}

fn too_big(origin: &str, size: u64, limit: usize) -> ScenarioError {
    keys::invalid(
        origin,
        None,
        None,
        None,
        format!(
            "the file is {size} bytes; at most {limit} bytes ({} MiB) are accepted (see \
             docs/scenario.md, \"Limits\")",
            limit >> 20
        ),
    )
}

fn load(
    text: &str,
    origin: &str,
    default_name: &str,
    overrides: &[String],
    max_bytes: usize,
) -> Result<Loaded, ScenarioError> {
    if text.len() > max_bytes {
        return Err(too_big(origin, text.len() as u64, max_bytes));
    }
    let (mut src, mut table) = Sources::parse(origin, text)?;

    for assignment in overrides {
        let Some((key, value)) = assignment.split_once('=') else {
            return Err(src.cli_error(
                assignment,
                None,
                "expected KEY=VALUE, e.g. --set link.forward.rate=2Mbps",
            ));
        };
        if let Some(msg) = renames_an_element(key) {
            return Err(src.cli_error(assignment, Some(key.trim().to_owned()), msg));
        }
        let value = keys::parse_value(value)
            .map_err(|msg| src.cli_error(assignment, Some(key.trim().to_owned()), msg))?;
        let path = keys::set_path(&mut table, key, value)
            .map_err(|msg| src.cli_error(assignment, Some(key.trim().to_owned()), msg))?;
        if let Some(earlier) = src.cli_setter_of(&path) {
            return Err(src.cli_error(
                assignment,
                Some(key.trim().to_owned()),
                format!("the same key is set by --set '{earlier}' too; give each key once"),
            ));
        }
        src.record(path, Setter::Cli(assignment.clone()));
    }

    let sweep = match table.remove("sweep") {
        Some(v) => sweep_keys(&src, &table, v)?,
        None => Vec::new(),
    };
    let scenario = build::build(&src, &table, default_name)?;
    check_sweep_memory(&src, &table, &scenario, &sweep)?;
    let points = sweep_points(&mut src, &table, default_name, &sweep)?;
    Ok(Loaded {
        resolved: scenario.to_table(),
        scenario,
        sweep: points,
    })
}

/// One `[sweep]` entry: the key as written, its path in the file (for the line), its values.
struct SweepKey {
    key: String,
    at: KeyPath,
    values: Vec<Value>,
}

/// Flatten `[sweep]`: quoted dotted keys (`"link.forward.rate" = [...]`) and bare dotted keys
/// (`link.forward.rate = [...]`, which TOML nests) both name a key path; each must hold a
/// non-empty array.
fn sweep_keys(
    src: &Sources<'_>,
    root: &Table,
    sweep: Value,
) -> Result<Vec<SweepKey>, ScenarioError> {
    let at: KeyPath = vec![Seg::Key("sweep".into())];
    let Value::Table(sweep) = sweep else {
        return Err(src.error(root, &at, "expected a table `[sweep]` of key = [values]"));
    };
    let mut out = Vec::new();
    let mut stack: Vec<(Vec<String>, KeyPath, Table)> = vec![(Vec::new(), at, sweep)];
    while let Some((prefix, path, table)) = stack.pop() {
        for (k, v) in table {
            let mut name = prefix.clone();
            name.push(k.clone());
            let mut p = path.clone();
            p.push(Seg::Key(k));
            // `"sweep.x" = […]` is one quoted key that names `sweep.x` too.
            if name
                .first()
                .and_then(|k| k.split('.').next())
                .map(str::trim)
                == Some("sweep")
            {
                return Err(src.error(root, &p, "a sweep cannot vary the `[sweep]` table itself"));
            }
            if let Some(msg) = renames_an_element(&name.join(".")) {
                return Err(src.error(root, &p, msg));
            }
            match v {
                Value::Table(t) => stack.push((name, p, t)),
                Value::Array(values) if !values.is_empty() => out.push(SweepKey { key: name.join("."), at: p, values }),
                _ => {
                    return Err(src.error(
                        root,
                        &p,
                        format!("sweep `{}` needs a non-empty array of values, e.g. [\"1Mbps\", \"10Mbps\"]", name.join(".")),
                    ))
                }
            }
        }
    }
    // The stack visits nested tables after their siblings; put keys back in file order.
    out.sort_by_key(|k| src.position(&k.at));
    Ok(out)
}

/// Why a `--set` or `[sweep]` key must not change a value, when it names the `name` of a node,
/// link or DAMA link: other keys refer to those by name, so renaming one breaks them all (and
/// the error would blame the file's references).
fn renames_an_element(key: &str) -> Option<String> {
    let parts: Vec<&str> = key.split('.').map(str::trim).collect();
    match parts.as_slice() {
        [array @ ("node" | "link" | "dama"), element, "name"] => Some(format!(
            "`{array}.{element}.name` renames a {array} that other keys refer to by name; \
             rename it in the file (names cannot be overridden or swept)"
        )),
        _ => None,
    }
}

/// Most memory the scenarios of a `[sweep]` may take together (1 GiB), estimated from the base
/// scenario: every point is built and checked at load, and each holds its own nodes, links,
/// flows and routing table (nodes² entries).
pub const MAX_SWEEP_BYTES: u64 = 1 << 30;

fn check_sweep_memory(
    src: &Sources<'_>,
    root: &Table,
    base: &Scenario,
    sweep: &[SweepKey],
) -> Result<(), ScenarioError> {
    use std::mem::size_of;
    if sweep.is_empty() {
        return Ok(());
    }
    let points = sweep
        .iter()
        .fold(1u64, |acc, k| acc.saturating_mul(k.values.len() as u64));
    let n = base.nodes.len() as u64;
    let per_point = n * size_of::<NodeSpec>() as u64
        + base.routes.heap_bytes() as u64
        + base.links.len() as u64 * size_of::<LinkSpec>() as u64
        + base.flows.len() as u64 * size_of::<FlowSpec>() as u64;
    let total = points.saturating_mul(per_point);
    if total <= MAX_SWEEP_BYTES {
        return Ok(());
    }
    Err(src.error(
        root,
        &[Seg::Key("sweep".into())],
        format!(
            "the sweep builds {points} scenarios of about {} MiB each ({} MiB in all); at most \
             {} MiB are accepted: sweep fewer values or use a smaller scenario",
            per_point >> 20,
            total >> 20,
            MAX_SWEEP_BYTES >> 20
        ),
    ))
}

/// Every combination of the sweep values, validated; the first key varies slowest.
fn sweep_points(
    src: &mut Sources<'_>,
    base: &Table,
    default_name: &str,
    sweep: &[SweepKey],
) -> Result<Vec<SweepPoint>, ScenarioError> {
    if sweep.is_empty() {
        return Ok(Vec::new());
    }
    let total = sweep.iter().try_fold(1usize, |acc, k| {
        acc.checked_mul(k.values.len())
            .filter(|&n| n <= MAX_SWEEP_POINTS)
    });
    let Some(total) = total else {
        return Err(src.error(
            base,
            &[Seg::Key("sweep".into())],
            format!("the sweep has more than {MAX_SWEEP_POINTS} combinations"),
        ));
    };
    let keep = src.setter_count();
    let mut points = Vec::with_capacity(total);
    for n in 0..total {
        // Mixed-radix digits of n, last key fastest.
        let mut rest = n;
        let mut choice = vec![0; sweep.len()];
        for (i, k) in sweep.iter().enumerate().rev() {
            choice[i] = rest % k.values.len();
            rest /= k.values.len();
        }
        let assignments: Vec<(String, String)> = sweep
            .iter()
            .zip(&choice)
            .map(|(k, &c)| (k.key.clone(), keys::value_as_written(&k.values[c])))
            .collect();
        let point = assignments
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(", ");
        let mut table = base.clone();
        for (k, &c) in sweep.iter().zip(&choice) {
            let path = keys::set_path(&mut table, &k.key, k.values[c].clone()).map_err(|msg| {
                src.error(
                    base,
                    &k.at,
                    format!("sweep key `{}` not found: {msg}", k.key),
                )
            })?;
            src.record(
                path,
                Setter::Sweep {
                    at: k.at.clone(),
                    point: point.clone(),
                },
            );
        }
        let scenario = build::build(src, &table, default_name);
        src.truncate_setters(keep);
        points.push(SweepPoint {
            assignments,
            scenario: scenario?,
        });
    }
    Ok(points)
}
