//! PNG and SVG plots of a run directory (or a sweep directory), drawn from the CSV files the
//! other modules wrote, so plots can be redrawn at any time without re-running anything.
//!
//! | file | from | what |
//! |---|---|---|
//! | `cwnd.{png,svg}` | `flows.csv` | congestion window vs time, one line per flow |
//! | `seq.{png,svg}` | `flows.csv` | `snd_nxt` (solid) and bytes delivered (dashed) vs time |
//! | `queue.{png,svg}` | `links.csv` | queue length (packets) vs time, one line per link |
//! | `throughput.{png,svg}` | `links.csv` | link output rate vs time |
//! | `sweep_<metric>.{png,svg}` | `sweep.csv` | metric vs the first swept key, one line per combination of the other keys |
//! | `sweep_<metric>.{png,svg}` | `sweep_stats.csv` | when seeds were swept: the mean over the seeds with ±95 % CI bars, vs the first other key |
//!
//! [`plot_dirs`] overlays several run directories: one chart per kind, each line labelled with
//! its directory.
//!
//! The x axis of a sweep is logarithmic when the key is a probability (`per`, `ber`, the
//! Gilbert–Elliott `p_good_bad`, …) whose values are all positive and span more than a decade.
//! Legends sit to the right of the plot area, never over data, and keep every entry: the
//! canvas widens and the legend takes more columns as series are added.
//!
//! Text is drawn with DejaVu Sans embedded in the binary (plotters' `ab_glyph` backend), so
//! plots need no system fonts and look the same on every machine. Long series are thinned to
//! the per-pixel minimum and maximum before drawing (see [`decimate`]), which keeps every peak
//! and trough visible and bounds the SVG size.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use plotters::coord::Shift;
use plotters::element::DashedPathElement;
use plotters::prelude::*;
use plotters::style::{register_font, FontStyle};
use satpep_proto::units::{parse_bitrate, parse_bytes, parse_duration};

use crate::series::{FLOWS_CSV, LINKS_CSV};
use crate::sweep::{SWEEP_CSV, SWEEP_METRICS, UTILISATION_PREFIX};
use crate::sweep_stats::SWEEP_STATS_CSV;

/// Size of every plot (pixels; SVG user units).
const SIZE: (u32, u32) = (1000, 600);
/// A series longer than this many points is thinned by [`decimate`].
const MAX_POINTS: usize = 4_000;
/// Line colours: the Tableau 10 palette, distinguishable on white and by most colour-blind
/// readers (Palette99's third colour, yellow, is hard to see on white).
pub const PALETTE: [RGBColor; 10] = [
    RGBColor(0x1f, 0x77, 0xb4),
    RGBColor(0xff, 0x7f, 0x0e),
    RGBColor(0x2c, 0xa0, 0x2c),
    RGBColor(0xd6, 0x27, 0x28),
    RGBColor(0x94, 0x67, 0xbd),
    RGBColor(0x8c, 0x56, 0x4b),
    RGBColor(0xe3, 0x77, 0xc2),
    RGBColor(0x7f, 0x7f, 0x7f),
    RGBColor(0xbc, 0xbd, 0x22),
    RGBColor(0x17, 0xbe, 0xcf),
];
/// Sampled throughput is averaged down to this many points per link (see [`average`]).
const THROUGHPUT_BINS: usize = 250;
/// A series with more points than this is drawn 1 pixel wide: plotters joins thick lines with
/// mitres, and a dense series that reverses sharply would grow spikes past the plot area.
const THICK_LINE_MAX_POINTS: usize = 600;
/// Legend text size (px).
const LEGEND_FONT: u32 = 15;
/// Height of one legend entry (px).
const LEGEND_ROW: i32 = 21;
/// Width of a legend swatch and the gap to its text (px).
const LEGEND_SWATCH: i32 = 34;
/// Last path elements of the sweep keys that are probabilities (docs/scenario.md: error
/// models and DAMA request loss): their axis may be logarithmic.
const PROBABILITY_KEYS: [&str; 7] = [
    "per",
    "ber",
    "p_good_bad",
    "p_bad_good",
    "per_good",
    "per_bad",
    "request_loss",
];

/// Why plots could not be drawn.
#[derive(Debug, thiserror::Error)]
pub enum PlotError {
    /// A file could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        source: io::Error,
    },
    /// A CSV file is malformed.
    #[error("{path}: {source}")]
    Csv {
        /// The file.
        path: PathBuf,
        /// What went wrong, with its line.
        source: csv::Error,
    },
    /// A CSV file lacks a column a plot needs.
    #[error("{path}: no column `{column}`")]
    MissingColumn {
        /// The file.
        path: PathBuf,
        /// The column.
        column: String,
    },
    /// A cell that should hold a number does not.
    #[error("{path}, line {line}, column `{column}`: `{value}` is not a number")]
    BadNumber {
        /// The file.
        path: PathBuf,
        /// 1-based line number.
        line: u64,
        /// The column.
        column: String,
        /// The cell as found.
        value: String,
    },
    /// A results directory to plot does not exist.
    #[error("{path}: no such directory")]
    NoDirectory {
        /// The path given.
        path: PathBuf,
    },
    /// plotters failed to draw or to write a plot.
    #[error("drawing {path}: {message}")]
    Draw {
        /// The plot file.
        path: PathBuf,
        /// plotters' message.
        message: String,
    },
}

/// Draws every plot the CSV files in `dir` allow, into `dir`, and returns the files written
/// (PNG then SVG for each plot), in a fixed order. Missing CSV files are skipped; plots with no
/// data points are not written, so a directory with nothing to plot gives an empty list. A
/// missing `dir` is an error.
pub fn plot_dir(dir: &Path) -> Result<Vec<PathBuf>, PlotError> {
    plot_dirs(&[dir.to_path_buf()], dir)
}

/// Draws the plots of one or several results directories into `out` (created if needed) and
/// returns the files written.
///
/// One directory: every plot [`plot_dir`] draws. Several: the run plots (`cwnd`, `seq`,
/// `queue`, `throughput`) of all of them overlaid, one chart per kind, each line labelled
/// `<directory>: <flow or link>` (the directory's last path element, or the path as given when
/// two share it); sweep tables are not overlaid. Every directory must exist.
pub fn plot_dirs(dirs: &[PathBuf], out: &Path) -> Result<Vec<PathBuf>, PlotError> {
    register_embedded_font();
    if let Some(missing) = dirs.iter().find(|d| !d.is_dir()) {
        return Err(PlotError::NoDirectory {
            path: missing.clone(),
        });
    }
    let charts = match dirs {
        [dir] => {
            let mut charts = run_charts(dir)?;
            charts.extend(sweep_dir_charts(dir)?);
            charts
        }
        _ => {
            let mut per_dir = Vec::new();
            for (dir, label) in dirs.iter().zip(dir_labels(dirs)) {
                per_dir.push((label, run_charts(dir)?));
            }
            overlay(per_dir)
        }
    };
    let charts: Vec<Chart> = charts
        .into_iter()
        .filter(|c| c.series.iter().any(|s| !s.points.is_empty()))
        .map(Chart::in_units)
        .collect();
    if !charts.is_empty() {
        std::fs::create_dir_all(out).map_err(|source| PlotError::Io {
            path: out.to_path_buf(),
            source,
        })?;
    }
    let mut written = Vec::new();
    for chart in &charts {
        let size = chart.canvas_size();
        let png = out.join(format!("{}.png", chart.file_stem));
        let root = BitMapBackend::new(&png, size).into_drawing_area();
        chart.draw(root).map_err(|e| draw_error(&png, e))?;
        let svg = out.join(format!("{}.svg", chart.file_stem));
        let root = SVGBackend::new(&svg, size).into_drawing_area();
        chart.draw(root).map_err(|e| draw_error(&svg, e))?;
        written.extend([png, svg]);
    }
    Ok(written)
}

/// The time-series charts of a run directory (y values in their raw units).
fn run_charts(dir: &Path) -> Result<Vec<Chart>, PlotError> {
    let mut charts = Vec::new();
    let flows = dir.join(FLOWS_CSV);
    if flows.is_file() {
        charts.extend(flow_charts(&flows)?);
    }
    let links = dir.join(LINKS_CSV);
    if links.is_file() {
        charts.extend(link_charts(&links)?);
    }
    Ok(charts)
}

/// The sweep charts of a sweep directory: from `sweep_stats.csv` (means with error bars) when
/// seeds were swept along with another key, from `sweep.csv` otherwise.
fn sweep_dir_charts(dir: &Path) -> Result<Vec<Chart>, PlotError> {
    let stats = dir.join(SWEEP_STATS_CSV);
    if stats.is_file() {
        let charts = stats_charts(&Csv::read(&stats)?)?;
        if !charts.is_empty() {
            return Ok(charts);
        }
    }
    let sweep = dir.join(SWEEP_CSV);
    if sweep.is_file() {
        return sweep_charts(&Csv::read(&sweep)?);
    }
    Ok(Vec::new())
}

/// Names for the lines of each directory in an overlay: the last path element, or the whole
/// path as given where two directories share their last element.
fn dir_labels(dirs: &[PathBuf]) -> Vec<String> {
    let last = |d: &PathBuf| {
        d.file_name().map_or_else(
            || d.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        )
    };
    let names: Vec<String> = dirs.iter().map(last).collect();
    dirs.iter()
        .zip(&names)
        .map(|(d, n)| {
            if names.iter().filter(|m| *m == n).count() > 1 {
                d.display().to_string()
            } else {
                n.clone()
            }
        })
        .collect()
}

/// Merges the charts of several directories by kind (file stem, in order of first appearance):
/// each series is renamed `<label>: <name>` and each directory's colours follow the previous
/// directory's, so no two directories share a colour (until the palette wraps).
fn overlay(per_dir: Vec<(String, Vec<Chart>)>) -> Vec<Chart> {
    let mut merged: Vec<(Chart, usize)> = Vec::new(); // chart, next free colour
    for (label, charts) in per_dir {
        for mut chart in charts {
            let i = match merged
                .iter()
                .position(|(m, _)| m.file_stem == chart.file_stem)
            {
                Some(i) => i,
                None => {
                    merged.push((chart.clone_empty(), 0));
                    merged.len() - 1
                }
            };
            let (target, next_colour) = &mut merged[i];
            if target.title != chart.title {
                // Throughput averaged over different windows: say so only in general terms.
                target.title = target
                    .title
                    .split(" (")
                    .next()
                    .unwrap_or_default()
                    .to_string();
            }
            let base = *next_colour;
            for s in &mut chart.series {
                s.name = if s.name.is_empty() {
                    label.clone()
                } else {
                    format!("{label}: {}", s.name)
                };
                s.colour += base;
                *next_colour = (*next_colour).max(s.colour + 1);
            }
            target.series.append(&mut chart.series);
        }
    }
    merged.into_iter().map(|(c, _)| c).collect()
}

/// One PNG line chart from series computed elsewhere (experiment scripts: a paper's figure
/// beside ours). `categories`, when given, labels x = 0, 1, 2, … (e.g. packet error rates);
/// `markers` draws a dot at every point.
pub fn line_chart_png(
    png: &Path,
    title: &str,
    x_label: &str,
    y_label: &str,
    categories: Option<Vec<String>>,
    markers: bool,
    series: Vec<(String, Vec<(f64, f64)>)>,
) -> Result<(), PlotError> {
    register_embedded_font();
    let mut chart = Chart::new("", title, x_label, y_label.to_string()).with_series(
        series
            .into_iter()
            .enumerate()
            .map(|(i, (name, points))| Series {
                name,
                colour: i,
                dashed: false,
                points,
                errors: Vec::new(),
            })
            .collect(),
    );
    chart.markers = markers;
    chart.categories = categories;
    let root = BitMapBackend::new(png, chart.canvas_size()).into_drawing_area();
    chart.draw(root).map_err(|e| draw_error(png, e))
}

/// The largest font size up to `max` (at least 12) at which `title` fits the width of `area`
/// with a margin, so that long titles shrink instead of being clipped.
pub fn caption_size<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    title: &str,
    max: u32,
) -> u32 {
    let width = area.dim_in_pixel().0.saturating_sub(32);
    (12..=max)
        .rev()
        .find(|&size| {
            area.estimate_text_size(title, &("sans-serif", size).into_text_style(area))
                .is_ok_and(|(w, _)| w <= width)
        })
        .unwrap_or(12)
}

/// Makes "sans-serif" mean the embedded DejaVu Sans. Registration is process-wide; doing it
/// once is enough, and a font that fails to parse (it cannot: the bytes are fixed) would only
/// make text invisible, so the result is not an error path.
fn register_embedded_font() {
    static DONE: OnceLock<()> = OnceLock::new();
    DONE.get_or_init(|| {
        let _ = register_font("sans-serif", FontStyle::Normal, dejavu::sans::regular());
        let _ = register_font("sans-serif", FontStyle::Bold, dejavu::sans::bold());
    });
}

fn draw_error(path: &Path, e: impl std::fmt::Display) -> PlotError {
    PlotError::Draw {
        path: path.to_path_buf(),
        message: e.to_string(),
    }
}

// ---------------------------------------------------------------------------------------------
// Charts from the CSV files

fn flow_charts(path: &Path) -> Result<Vec<Chart>, PlotError> {
    let ys = ["cwnd_bytes", "snd_nxt_bytes", "delivered_bytes"];
    let groups = read_groups(path, "flow", &ys)?;
    let mut cwnd_series = Vec::new();
    let mut seq_series = Vec::new();
    for (i, g) in groups.into_iter().enumerate() {
        let [cwnd, nxt, delivered]: [Vec<(f64, f64)>; 3] = thin(g.ys);
        cwnd_series.push(Series::line(&g.name, i, cwnd));
        seq_series.push(Series::line(&format!("{} snd_nxt", g.name), i, nxt));
        let mut d = Series::line(&format!("{} delivered", g.name), i, delivered);
        d.dashed = true;
        seq_series.push(d);
    }
    Ok(vec![
        Chart::new("cwnd", "Congestion window", "time (s)", "cwnd".into())
            .with_y_unit(YUnit::Bytes)
            .with_series(cwnd_series),
        Chart::new(
            "seq",
            "Sequence number (bytes sent) and bytes delivered",
            "time (s)",
            "sequence offset".into(),
        )
        .with_y_unit(YUnit::Bytes)
        .with_series(seq_series),
    ])
}

fn link_charts(path: &Path) -> Result<Vec<Chart>, PlotError> {
    let groups = read_groups(path, "link", &["queue_packets", "throughput_bps"])?;
    let mut queue_series = Vec::new();
    let mut rate_series = Vec::new();
    let mut window = 0.0f64;
    for (i, g) in groups.into_iter().enumerate() {
        let [queue, rate]: [Vec<(f64, f64)>; 2] = g.ys.try_into().unwrap_or_default();
        queue_series.push(Series::line(&g.name, i, decimate(&queue, MAX_POINTS / 2)));
        let (pts, w) = average(&rate, THROUGHPUT_BINS);
        window = window.max(w);
        rate_series.push(Series::line(&g.name, i, pts));
    }
    let title = if window > 0.0 {
        format!("Link throughput (mean over {})", format_seconds(window))
    } else {
        "Link throughput".to_string()
    };
    Ok(vec![
        Chart::new(
            "queue",
            "Queue length",
            "time (s)",
            "queue (packets)".into(),
        )
        .with_series(queue_series),
        Chart::new("throughput", &title, "time (s)", "throughput".into())
            .with_y_unit(YUnit::Rate)
            .with_series(rate_series),
    ])
}

/// [`decimate`]s each series and returns them as an array (empty ones if the count differs).
fn thin<const N: usize>(ys: Vec<Vec<(f64, f64)>>) -> [Vec<(f64, f64)>; N] {
    let thinned: Vec<_> = ys.iter().map(|pts| decimate(pts, MAX_POINTS / 2)).collect();
    thinned
        .try_into()
        .unwrap_or_else(|_| std::array::from_fn(|_| Vec::new()))
}

fn sweep_charts(csv: &Csv) -> Result<Vec<Chart>, PlotError> {
    // Layout written by `SweepWriter`: run, keys…, metrics…, utilisation_<link>….
    let first_metric = csv.col(SWEEP_METRICS[0])?;
    let metrics = (first_metric..csv.headers.len())
        .map(|c| SweepMetric {
            name: csv.headers[c].clone(),
            y: c,
            ci: None,
        })
        .collect();
    per_key_charts(csv, 1..first_metric, metrics, "")
}

/// Charts of `sweep_stats.csv`: each metric's mean, with its 95 % confidence interval as
/// error bars, against the first key that is not the seed.
fn stats_charts(csv: &Csv) -> Result<Vec<Chart>, PlotError> {
    // Layout written by `write_sweep_stats`: keys…, runs, then per metric [n,] mean, sd, ci95.
    let runs = csv.col("runs")?;
    let metrics = csv
        .headers
        .iter()
        .enumerate()
        .skip(runs + 1)
        .filter_map(|(c, h)| {
            let name = h.strip_suffix("_mean")?;
            let ci = csv.col(&format!("{name}_ci95")).ok();
            Some(SweepMetric {
                name: name.to_string(),
                y: c,
                ci,
            })
        })
        .collect();
    per_key_charts(csv, 0..runs, metrics, ": mean ± 95 % CI over seeds")
}

/// A metric column of a sweep table and, for statistics, its confidence-interval column.
struct SweepMetric {
    name: String,
    y: usize,
    ci: Option<usize>,
}

/// One chart per metric: the metric against the first of the `keys` columns, one line per
/// combination of the other keys (in order of first appearance). No key, no charts.
fn per_key_charts(
    csv: &Csv,
    keys: std::ops::Range<usize>,
    metrics: Vec<SweepMetric>,
    title_suffix: &str,
) -> Result<Vec<Chart>, PlotError> {
    if keys.is_empty() || csv.rows.is_empty() {
        return Ok(Vec::new()); // no swept key: nothing to plot against
    }
    let x_key = keys.start;
    let x_values: Vec<&str> = csv
        .rows
        .iter()
        .map(|(_, r)| r.get(x_key).unwrap_or(""))
        .collect();
    let axis = Axis::infer(&csv.headers[x_key], &x_values);
    let combo = |r: &csv::StringRecord| -> String {
        keys.clone()
            .skip(1)
            .map(|k| format!("{}={}", csv.headers[k], r.get(k).unwrap_or("")))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut combos: Vec<String> = Vec::new();
    for (_, r) in &csv.rows {
        let c = combo(r);
        if !combos.contains(&c) {
            combos.push(c);
        }
    }
    let mut charts = Vec::new();
    for metric in metrics {
        let mut series: Vec<Series> = combos
            .iter()
            .enumerate()
            .map(|(i, c)| Series::line(c, i, Vec::new()))
            .collect();
        let mut max = 0.0f64;
        for (row, (line, r)) in csv.rows.iter().enumerate() {
            let Some(y) = csv.number(*line, r, metric.y)? else {
                continue;
            };
            let ci = match metric.ci {
                Some(c) => csv.number(*line, r, c)?.unwrap_or(0.0),
                None => 0.0,
            };
            let Some(i) = combos.iter().position(|c| *c == combo(r)) else {
                continue;
            };
            max = max.max(y + ci);
            series[i].points.push((axis.values[row], y));
            series[i].errors.push(ci);
        }
        for s in &mut series {
            let mut pairs: Vec<((f64, f64), f64)> =
                s.points.drain(..).zip(s.errors.drain(..)).collect();
            pairs.sort_by(|a, b| a.0 .0.total_cmp(&b.0 .0));
            (s.points, s.errors) = pairs.into_iter().unzip();
            if metric.ci.is_none() {
                s.errors.clear();
            }
        }
        let (label, div) = metric_label(&metric.name, max);
        let mut chart = Chart::new(
            &format!("sweep_{}", file_safe(&metric.name)),
            &format!("{label} vs {}{title_suffix}", csv.headers[x_key]),
            &axis.label,
            label,
        )
        .with_series(series);
        chart.scale_y(div);
        chart.markers = true;
        chart.categories = axis.categories.clone();
        chart.x_log = axis.log10;
        charts.push(chart);
    }
    Ok(charts)
}

/// Axis label of a sweep metric whose values reach `max`, and the divisor that brings it to the
/// label's unit.
fn metric_label(column: &str, max: f64) -> (String, f64) {
    if let Some(link) = column.strip_prefix(UTILISATION_PREFIX) {
        return (format!("utilisation of {link} (%)"), 0.01);
    }
    if let Some(what) = column.strip_suffix("_goodput_bps") {
        let (div, unit) = rate_unit(max);
        return (format!("{what} goodput ({unit})"), div);
    }
    let label = match column {
        "jain_fairness" => "Jain fairness index",
        "retransmissions" => "retransmissions (segments)",
        "rto_expirations" => "RTO expirations",
        "max_completion_time_s" => "max completion time (s)",
        "flows_completed" => "flows completed",
        other => other,
    };
    (label.to_string(), 1.0)
}

/// The x axis of a sweep plot: numbers where the swept values are numbers (with units where
/// satpep's unit parsers accept them), positions 0, 1, 2… labelled with the values otherwise.
/// A probability key whose values are all positive and span more than a decade gets a
/// logarithmic axis: `values` are then log10 of the values.
#[derive(Debug, PartialEq)]
struct Axis {
    label: String,
    values: Vec<f64>,
    categories: Option<Vec<String>>,
    log10: bool,
}

impl Axis {
    fn infer(key: &str, raw: &[&str]) -> Self {
        let numeric = |f: &dyn Fn(&str) -> Option<f64>| -> Option<Vec<f64>> {
            raw.iter().map(|s| f(s.trim())).collect()
        };
        let max = |v: &[f64]| v.iter().copied().fold(0.0f64, f64::max);
        let make = |values: Vec<f64>, unit: &str, div: f64| Self {
            label: if unit.is_empty() {
                key.to_string()
            } else {
                format!("{key} ({unit})")
            },
            values: values.iter().map(|v| v / div).collect(),
            categories: None,
            log10: false,
        };
        if let Some(v) = numeric(&|s| s.parse::<f64>().ok().filter(|v| v.is_finite())) {
            let last = key.rsplit('.').next().unwrap_or(key);
            let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
            if PROBABILITY_KEYS.contains(&last) && lo > 0.0 && max(&v) > 10.0 * lo {
                return Self {
                    log10: true,
                    ..make(v.iter().map(|x| x.log10()).collect(), "", 1.0)
                };
            }
            return make(v, "", 1.0);
        }
        if let Some(v) = numeric(&|s| parse_bitrate(s).ok().map(|r| r.bps() as f64)) {
            let (div, unit) = rate_unit(max(&v));
            return make(v, unit, div);
        }
        if let Some(v) = numeric(&|s| parse_duration(s).ok().map(|d| d.as_nanos() as f64)) {
            let (div, unit) = if max(&v) >= 10e9 {
                (1e9, "s")
            } else {
                (1e6, "ms")
            };
            return make(v, unit, div);
        }
        if let Some(v) = numeric(&|s| parse_bytes(s).ok().map(|b| b.bytes() as f64)) {
            let (div, unit) = byte_unit(max(&v));
            return make(v, unit, div);
        }
        let mut categories: Vec<String> = Vec::new();
        let values = raw
            .iter()
            .map(|s| match categories.iter().position(|c| c == s) {
                Some(i) => i as f64,
                None => {
                    categories.push(s.to_string());
                    (categories.len() - 1) as f64
                }
            })
            .collect();
        Self {
            label: key.to_string(),
            values,
            categories: Some(categories),
            log10: false,
        }
    }
}

/// `bytes`, `kB`, `MB` or `GB` (decimal, as in the scenario units) for values up to `max`.
fn byte_unit(max: f64) -> (f64, &'static str) {
    match max {
        m if m >= 1e9 => (1e9, "GB"),
        m if m >= 1e6 => (1e6, "MB"),
        m if m >= 1e4 => (1e3, "kB"),
        _ => (1.0, "bytes"),
    }
}

/// `b/s`, `kb/s`, `Mb/s` or `Gb/s` for values up to `max`.
fn rate_unit(max: f64) -> (f64, &'static str) {
    match max {
        m if m >= 1e9 => (1e9, "Gb/s"),
        m if m >= 1e6 => (1e6, "Mb/s"),
        m if m >= 1e3 => (1e3, "kb/s"),
        _ => (1.0, "b/s"),
    }
}

/// A tick of a log10 axis at `v` = log10(x): `1e-3`, `0.01`, `0.1`, `1`, `10`; nothing between
/// powers of ten.
fn log_tick(v: &f64) -> String {
    let k = v.round();
    if (v - k).abs() > 1e-6 {
        return String::new();
    }
    match k as i32 {
        k @ -2..=3 => tick(&10f64.powi(k)),
        k => format!("1e{k}"),
    }
}

/// An axis tick: at most 4 decimals, trailing zeros dropped (`5`, `2.5`, `0.001`).
fn tick(v: &f64) -> String {
    let s = format!("{v:.4}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" {
        "0".into()
    } else {
        s.into()
    }
}

/// A metric name made safe as part of a file name.
fn file_safe(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Averages runs of `k` consecutive samples so that at most `bins` points remain, and returns
/// them with the time they span (0 when nothing was averaged).
///
/// Rates sampled every few milliseconds swing between zero and line rate as whole packets
/// fall in or out of each interval, which no eye can read; the mean of `k` rates over equal
/// consecutive intervals is exactly the rate over their union, so averaging loses nothing but
/// resolution. Each mean is placed at the end of its window, like the samples themselves.
fn average(points: &[(f64, f64)], bins: usize) -> (Vec<(f64, f64)>, f64) {
    if points.len() <= bins.max(1) {
        return (points.to_vec(), 0.0);
    }
    let k = points.len().div_ceil(bins);
    let span = points[points.len() - 1].0 - points[0].0;
    let window = span / (points.len() - 1) as f64 * k as f64;
    let means = points
        .chunks(k)
        .map(|c| {
            let y = c.iter().map(|p| p.1).sum::<f64>() / c.len() as f64;
            (c[c.len() - 1].0, y)
        })
        .collect();
    (means, window)
}

/// A window length for a title, to 3 significant digits: `0.1499876` → `"150 ms"`,
/// `2.5` → `"2.5 s"`.
fn format_seconds(s: f64) -> String {
    let (v, unit) = if s < 1.0 { (s * 1e3, "ms") } else { (s, "s") };
    let digits = 2 - v.abs().max(1e-9).log10().floor() as i32;
    let scale = 10f64.powi(digits);
    format!("{} {unit}", tick(&((v * scale).round() / scale)))
}

/// Thins a time-ordered series to at most `2 × buckets + 1` points: the x range is cut into
/// `buckets` equal slices and each slice keeps its lowest and highest point, in their original
/// order, plus the last point overall. A line drawn through what is kept covers the same pixels
/// as one through every point when a slice is at most a pixel wide.
pub fn decimate(points: &[(f64, f64)], buckets: usize) -> Vec<(f64, f64)> {
    let (Some(first), Some(last)) = (points.first(), points.last()) else {
        return Vec::new();
    };
    if points.len() <= 2 * buckets + 1 || buckets == 0 {
        return points.to_vec();
    }
    let span = last.0 - first.0;
    let bucket_of = |x: f64| -> usize {
        if span > 0.0 {
            (((x - first.0) / span * buckets as f64) as usize).min(buckets - 1)
        } else {
            0
        }
    };
    let mut out = Vec::with_capacity(2 * buckets + 1);
    let mut current = bucket_of(first.0);
    let (mut lo, mut hi) = (0usize, 0usize);
    let flush = |out: &mut Vec<(f64, f64)>, lo: usize, hi: usize| {
        let (a, b) = if lo <= hi { (lo, hi) } else { (hi, lo) };
        out.push(points[a]);
        if b != a {
            out.push(points[b]);
        }
    };
    for (i, p) in points.iter().enumerate().skip(1) {
        let b = bucket_of(p.0);
        if b != current {
            flush(&mut out, lo, hi);
            (current, lo, hi) = (b, i, i);
        } else if p.1 < points[lo].1 {
            lo = i;
        } else if p.1 > points[hi].1 {
            hi = i;
        }
    }
    flush(&mut out, lo, hi);
    if out.last() != Some(last) {
        out.push(*last);
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Reading CSV

/// A whole CSV file: header row and records with their line numbers.
struct Csv {
    path: PathBuf,
    headers: Vec<String>,
    rows: Vec<(u64, csv::StringRecord)>,
}

impl Csv {
    fn read(path: &Path) -> Result<Self, PlotError> {
        let csv_err = |source| PlotError::Csv {
            path: path.to_path_buf(),
            source,
        };
        let file = std::fs::File::open(path).map_err(|source| PlotError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        let mut reader = csv::Reader::from_reader(io::BufReader::new(file));
        let headers = reader
            .headers()
            .map_err(csv_err)?
            .iter()
            .map(String::from)
            .collect();
        let mut rows = Vec::new();
        for record in reader.records() {
            let record = record.map_err(csv_err)?;
            let line = record.position().map_or(0, |p| p.line());
            rows.push((line, record));
        }
        Ok(Self {
            path: path.to_path_buf(),
            headers,
            rows,
        })
    }

    fn col(&self, name: &str) -> Result<usize, PlotError> {
        self.headers
            .iter()
            .position(|h| h == name)
            .ok_or_else(|| PlotError::MissingColumn {
                path: self.path.clone(),
                column: name.to_string(),
            })
    }

    /// Cell `c` as a number; `None` when empty; an error when it is something else.
    fn number(&self, line: u64, r: &csv::StringRecord, c: usize) -> Result<Option<f64>, PlotError> {
        number(&self.path, &self.headers[c], line, r.get(c).unwrap_or(""))
    }
}

/// The rows of one flow or link: `ys[i]` holds `(time_s, column i)`.
struct Group {
    name: String,
    ys: Vec<Vec<(f64, f64)>>,
}

/// Reads a time-series file in one streaming pass (it may be large: one row per sample per
/// flow), splitting it by the `key` column into groups in order of first appearance and
/// keeping only `(time_s, y)` of the wanted columns. Empty cells are skipped.
fn read_groups(path: &Path, key: &str, ys: &[&str]) -> Result<Vec<Group>, PlotError> {
    let file = std::fs::File::open(path).map_err(|source| PlotError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let csv_err = |source| PlotError::Csv {
        path: path.to_path_buf(),
        source,
    };
    let mut reader = csv::Reader::from_reader(io::BufReader::new(file));
    let headers = reader.headers().map_err(csv_err)?.clone();
    let col = |name: &str| {
        headers
            .iter()
            .position(|h| h == name)
            .ok_or_else(|| PlotError::MissingColumn {
                path: path.to_path_buf(),
                column: name.to_string(),
            })
    };
    let (key_col, time_col) = (col(key)?, col("time_s")?);
    let y_cols = ys.iter().map(|y| col(y)).collect::<Result<Vec<_>, _>>()?;
    let mut index: BTreeMap<String, usize> = BTreeMap::new();
    let mut groups: Vec<Group> = Vec::new();
    let mut record = csv::StringRecord::new();
    while reader.read_record(&mut record).map_err(csv_err)? {
        let line = record.position().map_or(0, |p| p.line());
        let cell = |c: usize| number(path, &headers[c], line, record.get(c).unwrap_or(""));
        let Some(t) = cell(time_col)? else { continue };
        let name = record.get(key_col).unwrap_or("");
        let g = match index.get(name) {
            Some(&g) => g,
            None => {
                index.insert(name.to_string(), groups.len());
                groups.push(Group {
                    name: name.to_string(),
                    ys: vec![Vec::new(); ys.len()],
                });
                groups.len() - 1
            }
        };
        for (i, &c) in y_cols.iter().enumerate() {
            if let Some(y) = cell(c)? {
                groups[g].ys[i].push((t, y));
            }
        }
    }
    Ok(groups)
}

/// A cell as a number; `None` when empty; an error naming file, line and column otherwise.
fn number(path: &Path, column: &str, line: u64, cell: &str) -> Result<Option<f64>, PlotError> {
    let cell = cell.trim();
    if cell.is_empty() {
        return Ok(None);
    }
    match cell.parse::<f64>() {
        Ok(v) if v.is_finite() => Ok(Some(v)),
        _ => Err(PlotError::BadNumber {
            path: path.to_path_buf(),
            line,
            column: column.to_string(),
            value: cell.to_string(),
        }),
    }
}

// ---------------------------------------------------------------------------------------------
// Drawing

/// One line of a chart.
struct Series {
    name: String,
    colour: usize,
    dashed: bool,
    points: Vec<(f64, f64)>,
    /// Half-widths of error bars, one per point (95 % CIs of means); empty for none.
    errors: Vec<f64>,
}

impl Series {
    fn line(name: &str, colour: usize, points: Vec<(f64, f64)>) -> Self {
        Self {
            name: name.to_string(),
            colour,
            dashed: false,
            points,
            errors: Vec::new(),
        }
    }

    /// Dash and gap lengths (px) of the line; `None` for a solid line. The palette's first
    /// round draws solid and dashed lines as asked; past ten colours solid lines are dotted
    /// and dashed ones long-dashed, past twenty short-dashed and sparsely dashed, so that
    /// series sharing a colour still differ, in the plot and in the legend.
    fn dash_pattern(&self) -> Option<(u32, u32)> {
        match (self.colour / PALETTE.len() % 3, self.dashed) {
            (0, false) => None,
            (0, true) => Some((8, 5)),
            (1, false) => Some((2, 3)),
            (1, true) => Some((16, 5)),
            (_, false) => Some((5, 2)),
            (_, true) => Some((3, 8)),
        }
    }

    /// Lowest and highest y drawn, error bars included.
    fn y_extent(&self) -> impl Iterator<Item = f64> + '_ {
        self.points.iter().enumerate().flat_map(|(i, p)| {
            let e = self.errors.get(i).copied().unwrap_or(0.0);
            [p.1 - e, p.1 + e]
        })
    }
}

/// How a chart's y values are brought to a readable unit when it is drawn.
#[derive(Clone, Copy, Debug, PartialEq)]
enum YUnit {
    /// Already in the unit of the label.
    AsIs,
    /// Bytes: shown in bytes, kB, MB or GB by the largest value.
    Bytes,
    /// Bits per second: shown in b/s, kb/s, Mb/s or Gb/s.
    Rate,
}

/// A line chart, drawn the same way to PNG and SVG.
struct Chart {
    file_stem: String,
    title: String,
    x_label: String,
    /// The y axis label; for a `y_unit` other than `AsIs`, without its unit.
    y_label: String,
    y_unit: YUnit,
    series: Vec<Series>,
    /// Draw a dot at each point (sweeps: few points, each a run).
    markers: bool,
    /// Categorical x axis: `categories[i]` is drawn at x = i.
    categories: Option<Vec<String>>,
    /// The x values are log10 of the quantity: ticks are labelled with powers of ten.
    x_log: bool,
}

/// Where legend entries go: `columns` columns of `rows` entries, each column `column_width` px.
struct LegendLayout {
    rows: usize,
    columns: usize,
    column_width: i32,
}

impl Chart {
    fn new(file_stem: &str, title: &str, x_label: &str, y_label: String) -> Self {
        Self {
            file_stem: file_stem.to_string(),
            title: title.to_string(),
            x_label: x_label.to_string(),
            y_label,
            y_unit: YUnit::AsIs,
            series: Vec::new(),
            markers: false,
            categories: None,
            x_log: false,
        }
    }

    fn with_series(mut self, series: Vec<Series>) -> Self {
        self.series = series;
        self
    }

    fn with_y_unit(mut self, unit: YUnit) -> Self {
        self.y_unit = unit;
        self
    }

    /// The same chart without its series (the start of an overlay).
    fn clone_empty(&self) -> Self {
        Self {
            file_stem: self.file_stem.clone(),
            title: self.title.clone(),
            x_label: self.x_label.clone(),
            y_label: self.y_label.clone(),
            y_unit: self.y_unit,
            series: Vec::new(),
            markers: self.markers,
            categories: self.categories.clone(),
            x_log: self.x_log,
        }
    }

    /// Divides every y value and error bar by `div`.
    fn scale_y(&mut self, div: f64) {
        for s in &mut self.series {
            s.points.iter_mut().for_each(|p| p.1 /= div);
            s.errors.iter_mut().for_each(|e| *e /= div);
        }
    }

    /// Brings the y values to the unit their largest value calls for and names it in the label.
    fn in_units(mut self) -> Self {
        let max = self
            .series
            .iter()
            .flat_map(|s| &s.points)
            .map(|p| p.1)
            .fold(0.0, f64::max);
        let (div, unit) = match self.y_unit {
            YUnit::AsIs => return self,
            YUnit::Bytes => byte_unit(max),
            YUnit::Rate => rate_unit(max),
        };
        self.scale_y(div);
        self.y_label = format!("{} ({unit})", self.y_label);
        self.y_unit = YUnit::AsIs;
        self
    }

    /// The series that get a legend entry.
    fn legend_entries(&self) -> impl Iterator<Item = &Series> {
        self.series
            .iter()
            .filter(|s| !s.name.is_empty() && !s.points.is_empty())
    }

    /// The legend's columns: as many entries per column as fit the plot's height, and as many
    /// columns as the entries need; `None` without named series.
    fn legend_layout(&self) -> Option<LegendLayout> {
        let names: Vec<&str> = self.legend_entries().map(|s| s.name.as_str()).collect();
        if names.is_empty() {
            return None;
        }
        let font = ("sans-serif", LEGEND_FONT).into_font();
        let text_width = names
            .iter()
            .map(|n| {
                // The embedded font always measures; the estimate is for a font that would not.
                font.box_size(n)
                    .map_or(n.chars().count() as i32 * 9, |(w, _)| w as i32)
            })
            .max()
            .unwrap_or(0);
        let fit = ((SIZE.1 as i32 - 2 * LEGEND_ROW) / LEGEND_ROW).max(1) as usize;
        let columns = names.len().div_ceil(fit);
        Some(LegendLayout {
            rows: names.len().div_ceil(columns),
            columns,
            column_width: LEGEND_SWATCH + text_width + 18,
        })
    }

    /// Canvas size: the plot's, widened by the legend to its right.
    fn canvas_size(&self) -> (u32, u32) {
        let legend = self
            .legend_layout()
            .map_or(0, |l| l.columns as i32 * l.column_width + 16);
        (SIZE.0 + legend as u32, SIZE.1)
    }

    fn draw<DB: DrawingBackend>(
        &self,
        root: DrawingArea<DB, Shift>,
    ) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
        let pts = || self.series.iter().flat_map(|s| &s.points);
        let (mut x0, mut x1) = pts().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), p| {
            (a.min(p.0), b.max(p.0))
        });
        let (mut y0, mut y1) = self
            .series
            .iter()
            .flat_map(Series::y_extent)
            .fold((0.0f64, 0.0f64), |(a, b), y| (a.min(y), b.max(y)));
        if let Some(c) = &self.categories {
            (x0, x1) = (-0.5, c.len() as f64 - 0.5);
        } else if self.markers {
            let pad = ((x1 - x0) * 0.04).max(x1.abs() * 0.02).max(1e-9);
            (x0, x1) = (x0 - pad, x1 + pad);
        }
        // Points are finite (`Csv::number` rejects the rest) and a drawn chart has one at least.
        if x1 <= x0 {
            (x0, x1) = (x0 - 0.5, x0 + 0.5);
        }
        y1 += (y1 - y0) * 0.05;
        if y1 <= y0 {
            (y0, y1) = (y0 - 0.5, y0 + 0.5);
        }

        root.fill(&WHITE)?;
        let layout = self.legend_layout();
        let (plot_area, legend_area) = root.split_horizontally(SIZE.0);
        let caption = caption_size(&plot_area, &self.title, 26);
        let mut chart = ChartBuilder::on(&plot_area)
            .caption(&self.title, ("sans-serif", caption))
            .margin(16)
            .x_label_area_size(56)
            .y_label_area_size(84)
            .build_cartesian_2d(x0..x1, y0..y1)?;
        let categories = self.categories.clone().unwrap_or_default();
        let category_label = move |x: &f64| -> String {
            let i = x.round();
            if (x - i).abs() < 1e-6 && i >= 0.0 {
                categories.get(i as usize).cloned().unwrap_or_default()
            } else {
                String::new()
            }
        };
        let mut mesh = chart.configure_mesh();
        mesh.x_desc(self.x_label.as_str())
            .y_desc(self.y_label.as_str())
            .label_style(("sans-serif", 16))
            .axis_desc_style(("sans-serif", 18))
            .light_line_style(RGBColor(235, 235, 235));
        mesh.y_label_formatter(&tick);
        if let Some(c) = &self.categories {
            mesh.x_labels(c.len()).x_label_formatter(&category_label);
        } else if self.x_log {
            mesh.x_label_formatter(&log_tick);
        } else {
            mesh.x_label_formatter(&tick);
        }
        mesh.draw()?;

        let drawn: Vec<&Series> = self
            .series
            .iter()
            .filter(|s| !s.points.is_empty())
            .collect();
        for (k, s) in drawn.iter().enumerate() {
            let colour = PALETTE[s.colour % PALETTE.len()].to_rgba();
            // Earlier series are drawn wider, so a later one on the same points (two schemes
            // that behave alike) leaves the earlier one visible as a rim instead of hiding it.
            let rim = if drawn.len() <= 6 {
                (drawn.len() - 1 - k).min(3) as u32
            } else {
                0
            };
            let mut style = self.line_style(s);
            style.stroke_width += rim;
            if let Some((dash, gap)) = s.dash_pattern() {
                chart.draw_series(DashedLineSeries::new(
                    s.points.iter().copied(),
                    dash,
                    gap,
                    style,
                ))?;
            } else {
                chart.draw_series(LineSeries::new(s.points.iter().copied(), style))?;
            }
            if self.markers {
                let r = 4 + rim as i32;
                chart.draw_series(s.points.iter().map(|&p| Circle::new(p, r, colour.filled())))?;
            }
            let bars = s.points.iter().zip(&s.errors).filter(|(_, e)| **e > 0.0);
            chart.draw_series(bars.map(|(&(x, y), &e)| {
                ErrorBar::new_vertical(x, y - e, y, y + e, colour.stroke_width(2), 12)
            }))?;
        }
        if let Some(layout) = layout {
            self.draw_legend(&legend_area, &layout)?;
        }
        root.present()
    }

    fn line_style(&self, s: &Series) -> ShapeStyle {
        ShapeStyle {
            color: PALETTE[s.colour % PALETTE.len()].to_rgba(),
            filled: false,
            stroke_width: if s.points.len() > THICK_LINE_MAX_POINTS {
                1
            } else {
                2
            },
        }
    }

    /// Draws every legend entry in `area`, to the right of the plot: column by column, each
    /// entry a swatch of its line (and marker) then its name.
    fn draw_legend<DB: DrawingBackend>(
        &self,
        area: &DrawingArea<DB, Shift>,
        layout: &LegendLayout,
    ) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
        let font = ("sans-serif", LEGEND_FONT).into_font();
        let top = 2 * LEGEND_ROW;
        for (i, s) in self.legend_entries().enumerate() {
            let (column, row) = (i / layout.rows, i % layout.rows);
            let x = 4 + column as i32 * layout.column_width;
            let y = top + row as i32 * LEGEND_ROW;
            // Legend swatches are always thick: a 1-pixel sample is hard to match to a line.
            let swatch = ShapeStyle {
                stroke_width: 3,
                ..self.line_style(s)
            };
            let line = vec![(x, y), (x + 24, y)];
            if let Some((dash, gap)) = s.dash_pattern() {
                area.draw(&DashedPathElement::new(line, dash, gap, swatch))?;
            } else {
                area.draw(&PathElement::new(line, swatch))?;
            }
            if self.markers {
                area.draw(&Circle::new((x + 12, y), 4, swatch.color.filled()))?;
            }
            let text_pos = (x + LEGEND_SWATCH, y - LEGEND_FONT as i32 / 2 - 1);
            area.draw(&Text::new(s.name.as_str(), text_pos, font.clone()))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::series::{FlowSample, LinkSample, SeriesWriter};
    use crate::summary::tests::example;
    use crate::sweep::{SweepRow, SweepWriter};
    use satpep_proto::{Duration, Instant};

    /// Two flows in slow start then congestion avoidance, one link with a filling queue.
    fn write_run(dir: &Path) {
        let mut w = SeriesWriter::create(
            dir,
            vec!["bulk0".into(), "bulk1".into()],
            vec!["sat_fwd".into()],
        )
        .unwrap();
        for step in 0..200u64 {
            let t = Instant(step * 50_000_000);
            for flow in 0..2usize {
                let cwnd = if step < 40 {
                    1460 << (step / 8)
                } else {
                    46_720 + 1460 * (step % 60)
                };
                let nxt = step * step * 1_000 * (flow as u64 + 1);
                w.write_flow(&FlowSample {
                    time: t,
                    flow,
                    cwnd: cwnd / (flow as u64 + 1),
                    ssthresh: None,
                    srtt: Some(Duration::from_millis(560)),
                    rto: Duration::from_secs(1),
                    rwnd: 1 << 20,
                    bytes_in_flight: cwnd,
                    snd_una: nxt.saturating_sub(cwnd),
                    snd_nxt: nxt,
                    delivered: nxt.saturating_sub(2 * cwnd),
                    retransmissions: 0,
                    pacing_rate: None,
                })
                .unwrap();
            }
            w.write_link(&LinkSample {
                time: t,
                link: 0,
                queue_packets: step % 50,
                queue_bytes: (step % 50) * 1500,
                throughput_bps: (step as f64 * 1e5).min(1e7),
                queue_drops: 0,
                error_drops: 0,
            })
            .unwrap();
        }
        w.finish().unwrap();
    }

    fn assert_png(path: &Path) {
        let bytes = std::fs::read(path).unwrap();
        assert!(
            bytes.len() > 5_000,
            "{} is only {} bytes",
            path.display(),
            bytes.len()
        );
        assert_eq!(
            bytes[..8],
            *b"\x89PNG\r\n\x1a\n",
            "{} is not a PNG",
            path.display()
        );
    }

    fn assert_svg(path: &Path, must_contain: &str) {
        let text = std::fs::read_to_string(path).unwrap();
        assert!(text.starts_with("<svg"), "{} is not an SVG", path.display());
        assert!(
            text.contains(must_contain),
            "{} lacks `{must_contain}`",
            path.display()
        );
    }

    #[test]
    fn run_dir_gives_four_plots_in_both_formats() {
        let dir = tempfile::tempdir().unwrap();
        write_run(dir.path());
        let files = plot_dir(dir.path()).unwrap();
        let names: Vec<String> = files
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            names,
            [
                "cwnd.png",
                "cwnd.svg",
                "seq.png",
                "seq.svg",
                "queue.png",
                "queue.svg",
                "throughput.png",
                "throughput.svg"
            ]
        );
        for f in files.iter().filter(|f| f.extension().unwrap() == "png") {
            assert_png(f);
        }
        assert_svg(&dir.path().join("cwnd.svg"), "cwnd (kB)");
        assert_svg(&dir.path().join("seq.svg"), "bulk1 delivered");
        assert_svg(&dir.path().join("queue.svg"), "queue (packets)");
        assert_svg(&dir.path().join("throughput.svg"), "throughput (Mb/s)");
        // Redrawing gives the same bytes.
        let before = std::fs::read(dir.path().join("cwnd.png")).unwrap();
        plot_dir(dir.path()).unwrap();
        assert_eq!(std::fs::read(dir.path().join("cwnd.png")).unwrap(), before);
    }

    #[test]
    fn sweep_dir_plots_each_metric_against_first_key() {
        let dir = tempfile::tempdir().unwrap();
        let keys = vec!["rate".to_string(), "cc".to_string()];
        let mut w = SweepWriter::create(dir.path(), keys).unwrap();
        let mut run = 0;
        for cc in ["reno", "cubic"] {
            for rate in ["512kbps", "2Mbps", "10Mbps"] {
                let mut s = example();
                let bps = parse_bitrate(rate).unwrap().bps() as f64;
                s.flows[0].goodput_bps = bps * if cc == "reno" { 0.4 } else { 0.45 };
                s.flows[1].goodput_bps = bps * 0.3;
                let assign = [
                    ("rate".to_string(), rate.to_string()),
                    ("cc".to_string(), cc.to_string()),
                ];
                w.push(SweepRow::from_summary(run, &assign, &s));
                run += 1;
            }
        }
        w.finish().unwrap();
        let files = plot_dir(dir.path()).unwrap();
        // 8 metrics + 1 link utilisation, PNG and SVG each.
        assert_eq!(files.len(), 18);
        assert_png(&dir.path().join("sweep_total_goodput_bps.png"));
        assert_svg(
            &dir.path().join("sweep_total_goodput_bps.svg"),
            "rate (Mb/s)",
        );
        assert_svg(&dir.path().join("sweep_total_goodput_bps.svg"), "cc=cubic");
        assert_svg(
            &dir.path().join("sweep_utilisation_sat_fwd.svg"),
            "utilisation of sat_fwd (%)",
        );
    }

    #[test]
    fn seed_sweep_plots_means_with_ci_bars_against_the_first_other_key() {
        let dir = tempfile::tempdir().unwrap();
        // seed first, so that the first key of sweep.csv is not the x axis.
        let keys = vec!["seed".to_string(), "link.forward.error.per".to_string()];
        let mut w = SweepWriter::create(dir.path(), keys).unwrap();
        // Goodput by seed, for per = 1e-4 and per = 0.01.
        let goodputs = [[10e6, 8e6], [12e6, 9e6], [17e6, 10e6]];
        let mut run = 0;
        for (seed, by_per) in goodputs.iter().enumerate() {
            for (per, goodput) in ["1e-4", "0.01"].iter().zip(by_per) {
                let mut s = example();
                s.flows[0].goodput_bps = *goodput;
                s.flows[1].goodput_bps = 0.0;
                let assign = [
                    ("seed".to_string(), (seed + 1).to_string()),
                    ("link.forward.error.per".to_string(), per.to_string()),
                ];
                w.push(SweepRow::from_summary(run, &assign, &s));
                run += 1;
            }
        }
        w.finish().unwrap();
        let charts = sweep_dir_charts(dir.path()).unwrap();
        let total = &charts[0];
        assert_eq!(total.file_stem, "sweep_total_goodput_bps");
        assert_eq!(
            total.title,
            "total goodput (Mb/s) vs link.forward.error.per: mean ± 95 % CI over seeds"
        );
        assert!(total.x_log, "1e-4 to 0.01 spans two decades");
        assert_eq!(total.series.len(), 1);
        let s = &total.series[0];
        // 10, 12, 17 Mb/s: 13 ± 8.956686; 8, 9, 10: 9 ± 4.302653 · 1 / √3 = 2.484138.
        assert_eq!(s.points, [(-4.0, 13.0), (-2.0, 9.0)]);
        assert!((s.errors[0] - 8.956686).abs() < 1e-6, "{:?}", s.errors);
        assert!((s.errors[1] - 2.484138).abs() < 1e-6, "{:?}", s.errors);
        let files = plot_dir(dir.path()).unwrap();
        assert!(files.iter().any(|f| f.ends_with("sweep_jain_fairness.svg")));
        assert_svg(&dir.path().join("sweep_total_goodput_bps.svg"), "1e-4");
    }

    #[test]
    fn probability_axes_are_logarithmic_only_over_a_decade_of_positive_values() {
        let a = Axis::infer("link.sat.error.per", &["1e-4", "1e-3", "0.01"]);
        assert!(a.log10);
        assert_eq!(a.values, [-4.0, -3.0, -2.0]);
        let a = Axis::infer("link.sat.error.p_good_bad", &["0.001", "0.1"]);
        assert!(a.log10);
        // A zero has no logarithm; a span of less than a decade reads better linear.
        assert!(!Axis::infer("link.sat.error.per", &["0", "1e-3", "0.01"]).log10);
        assert!(!Axis::infer("link.sat.error.ber", &["2e-6", "1e-5"]).log10);
        // Not a probability: linear whatever the span.
        assert!(!Axis::infer("flow.bulk1.size", &["1", "1000"]).log10);
        let t: Vec<String> = [-6.0, -3.0, -2.0, -1.5, 0.0, 1.0, 4.0]
            .iter()
            .map(log_tick)
            .collect();
        assert_eq!(t, ["1e-6", "1e-3", "0.01", "", "1", "10", "1e4"]);
    }

    #[test]
    fn twenty_series_keep_all_twenty_legend_entries_beside_the_plot() {
        let dir = tempfile::tempdir().unwrap();
        let series = (0..20)
            .map(|i| {
                let pts = (0..50).map(|t| (t as f64, (t * (i + 1)) as f64)).collect();
                (format!("series number {i:02}"), pts)
            })
            .collect();
        let chart = Chart::new("many", "Twenty lines", "t", "y".into()).with_series(
            (0..20)
                .zip::<Vec<(String, Vec<(f64, f64)>)>>(series)
                .map(|(i, (name, points))| Series::line(&name, i, points))
                .collect(),
        );
        let layout = chart.legend_layout().unwrap();
        assert_eq!((layout.columns, layout.rows), (1, 20));
        let size = chart.canvas_size();
        assert!(
            size.0 > SIZE.0,
            "the canvas widens for the legend: {size:?}"
        );
        let svg = dir.path().join("many.svg");
        chart
            .draw(SVGBackend::new(&svg, size).into_drawing_area())
            .unwrap();
        let text = std::fs::read_to_string(&svg).unwrap();
        for i in 0..20 {
            let label = format!("\nseries number {i:02}\n</text>");
            assert_eq!(text.matches(&label).count(), 1, "{label} missing");
        }
        // Series that share a colour (the palette has ten) differ in their dashes.
        let patterns: Vec<_> = chart.series.iter().map(Series::dash_pattern).collect();
        assert_eq!(patterns[2], None);
        assert_eq!(patterns[12], Some((2, 3)));
        assert_ne!(patterns[12], patterns[2]);
        // Sixty entries do not fit one column: three columns, every entry kept.
        let mut chart = chart;
        chart.series = (0..60)
            .map(|i| Series::line(&format!("s{i}"), i, vec![(0.0, i as f64)]))
            .collect();
        let layout = chart.legend_layout().unwrap();
        assert!(layout.columns * layout.rows >= 60);
        assert!(layout.columns >= 3, "{} columns", layout.columns);
        let svg = dir.path().join("sixty.svg");
        chart
            .draw(SVGBackend::new(&svg, chart.canvas_size()).into_drawing_area())
            .unwrap();
        let text = std::fs::read_to_string(&svg).unwrap();
        assert!((0..60).all(|i| text.contains(&format!("\ns{i}\n</text>"))));
    }

    #[test]
    fn several_dirs_overlay_in_one_chart_per_kind() {
        let root = tempfile::tempdir().unwrap();
        let (a, b, out) = (
            root.path().join("cubic"),
            root.path().join("reno"),
            root.path().join("both"),
        );
        for d in [&a, &b] {
            std::fs::create_dir(d).unwrap();
            write_run(d);
        }
        let files = plot_dirs(&[a.clone(), b.clone()], &out).unwrap();
        assert_eq!(files.len(), 8);
        assert!(files.iter().all(|f| f.starts_with(&out)));
        assert_svg(&out.join("cwnd.svg"), "\ncubic: bulk0\n");
        assert_svg(&out.join("cwnd.svg"), "\nreno: bulk1\n");
        assert_svg(&out.join("throughput.svg"), "\nreno: sat_fwd\n");
        // The run directories themselves are left alone.
        assert!(!a.join("cwnd.png").exists());
        // Same last element: the paths as given tell them apart.
        let labels = dir_labels(&[PathBuf::from("x/run-000"), PathBuf::from("y/run-000")]);
        assert_eq!(labels, ["x/run-000", "y/run-000"]);
        // A missing directory is an error naming it, before anything is drawn.
        let missing = root.path().join("nope");
        let err = plot_dirs(&[a, missing.clone()], &out).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!("{}: no such directory", missing.display())
        );
    }

    #[test]
    fn empty_or_missing_csvs_give_no_plots() {
        let dir = tempfile::tempdir().unwrap();
        assert!(plot_dir(dir.path()).unwrap().is_empty());
        SeriesWriter::create(dir.path(), vec![], vec![])
            .unwrap()
            .finish()
            .unwrap();
        assert!(plot_dir(dir.path()).unwrap().is_empty());
    }

    #[test]
    fn bad_cell_is_reported_with_file_line_and_column() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join(LINKS_CSV),
            "time_s,link,queue_packets,throughput_bps\n0.1,l,3,5\n0.2,l,x,5\n",
        )
        .unwrap();
        let err = plot_dir(dir.path()).unwrap_err().to_string();
        assert!(
            err.ends_with("links.csv, line 3, column `queue_packets`: `x` is not a number"),
            "{err}"
        );
        std::fs::write(dir.path().join(LINKS_CSV), "time_s,link\n0.1,l\n").unwrap();
        let err = plot_dir(dir.path()).unwrap_err().to_string();
        assert!(
            err.ends_with("links.csv: no column `queue_packets`"),
            "{err}"
        );
    }

    #[test]
    fn axis_parses_units_or_falls_back_to_categories() {
        let a = Axis::infer("rate", &["512kbps", "2Mbps", "10Mbps"]);
        assert_eq!(
            (a.label.as_str(), a.values, a.categories),
            ("rate (Mb/s)", vec![0.512, 2.0, 10.0], None)
        );
        let a = Axis::infer("delay", &["125ms", "250ms", "0.3s"]);
        assert_eq!(
            (a.label.as_str(), a.values),
            ("delay (ms)", vec![125.0, 250.0, 300.0])
        );
        let a = Axis::infer("per", &["0", "1e-3", "0.01"]);
        assert_eq!(
            (a.label.as_str(), a.values),
            ("per", vec![0.0, 0.001, 0.01])
        );
        let a = Axis::infer("buffer", &["64KB", "1MB"]);
        assert_eq!(
            (a.label.as_str(), a.values),
            ("buffer (MB)", vec![0.064, 1.0])
        );
        let a = Axis::infer("cc", &["reno", "cubic", "reno"]);
        assert_eq!(a.values, vec![0.0, 1.0, 0.0]);
        assert_eq!(
            a.categories,
            Some(vec!["reno".to_string(), "cubic".to_string()])
        );
    }

    #[test]
    fn average_gives_rate_over_union_of_windows() {
        // 10 ms samples alternating 0 and 10 Mb/s: every pair averages to 5 Mb/s over 20 ms.
        let pts: Vec<(f64, f64)> = (1..=1000)
            .map(|i| (i as f64 * 0.01, if i % 2 == 0 { 1e7 } else { 0.0 }))
            .collect();
        let (avg, window) = average(&pts, 500);
        assert_eq!(avg.len(), 500);
        assert!(avg.iter().all(|p| p.1 == 5e6));
        assert_eq!(avg[0].0, 0.02);
        assert!((window - 0.02).abs() < 1e-12);
        assert_eq!(format_seconds(window), "20 ms");
        assert_eq!(format_seconds(0.1499876), "150 ms");
        assert_eq!(format_seconds(0.0012345), "1.23 ms");
        assert_eq!(format_seconds(2.5), "2.5 s");
        // Few points: untouched.
        assert_eq!(average(&pts[..3], 500), (pts[..3].to_vec(), 0.0));
    }

    #[test]
    fn ticks_drop_trailing_zeros() {
        let t: Vec<String> = [0.0, 5.0, 2.5, 0.001, -0.00001, 1e6]
            .iter()
            .map(tick)
            .collect();
        assert_eq!(t, ["0", "5", "2.5", "0.001", "0", "1000000"]);
    }

    #[test]
    fn decimate_keeps_extremes_order_and_ends() {
        // A sawtooth of 100 000 points with one spike.
        let mut pts: Vec<(f64, f64)> = (0..100_000)
            .map(|i| (i as f64 * 1e-3, (i % 997) as f64))
            .collect();
        pts[54_321].1 = 5_000.0;
        let out = decimate(&pts, 500);
        assert!(out.len() <= 1_001, "{} points", out.len());
        assert_eq!(out.first(), pts.first());
        assert_eq!(out.last(), pts.last());
        assert!(out.contains(&pts[54_321]));
        assert!(out.windows(2).all(|w| w[0].0 < w[1].0), "order lost");
        // Every tooth's top (996) and bottom (0) lies in some slice, so both extremes survive.
        assert!(out.iter().any(|p| p.1 == 0.0) && out.iter().any(|p| p.1 == 996.0));
        // 2 points per slice at most, plus the last point.
        assert!(out.len() >= 500);
        // Short series pass through untouched.
        assert_eq!(decimate(&pts[..10], 500), pts[..10].to_vec());
    }
}
