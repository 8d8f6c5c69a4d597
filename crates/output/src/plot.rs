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
//!
//! Text is drawn with DejaVu Sans embedded in the binary (plotters' `ab_glyph` backend), so
//! plots need no system fonts and look the same on every machine. Long series are thinned to
//! the per-pixel minimum and maximum before drawing (see [`decimate`]), which keeps every peak
//! and trough visible and bounds the SVG size.

use std::collections::BTreeSet;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::{register_font, FontStyle};
use satpep_proto::units::{parse_bitrate, parse_bytes, parse_duration};

use crate::series::{FLOWS_CSV, LINKS_CSV};
use crate::sweep::{SWEEP_CSV, SWEEP_METRICS, UTILISATION_PREFIX};

/// Size of every plot (pixels; SVG user units).
const SIZE: (u32, u32) = (1000, 600);
/// A series longer than this many points is thinned by [`decimate`].
const MAX_POINTS: usize = 4_000;
/// Beyond this many series a legend would hide the plot: it is left out.
const MAX_LEGEND: usize = 12;

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
    /// plotters failed to draw or to write a plot.
    #[error("drawing {path}: {message}")]
    Draw {
        /// The plot file.
        path: PathBuf,
        /// plotters' message.
        message: String,
    },
}

/// Draws every plot the CSV files in `dir` allow and returns the files written (PNG then SVG
/// for each plot), in a fixed order. Missing CSV files are skipped; plots with no data points
/// are not written.
pub fn plot_dir(dir: &Path) -> Result<Vec<PathBuf>, PlotError> {
    register_embedded_font();
    let mut charts = Vec::new();
    let flows = dir.join(FLOWS_CSV);
    if flows.is_file() {
        charts.extend(flow_charts(&Csv::read(&flows)?)?);
    }
    let links = dir.join(LINKS_CSV);
    if links.is_file() {
        charts.extend(link_charts(&Csv::read(&links)?)?);
    }
    let sweep = dir.join(SWEEP_CSV);
    if sweep.is_file() {
        charts.extend(sweep_charts(&Csv::read(&sweep)?)?);
    }
    let mut written = Vec::new();
    for chart in charts.iter().filter(|c| c.series.iter().any(|s| !s.points.is_empty())) {
        let png = dir.join(format!("{}.png", chart.file_stem));
        let root = BitMapBackend::new(&png, SIZE).into_drawing_area();
        chart.draw(root).map_err(|e| draw_error(&png, e))?;
        let svg = dir.join(format!("{}.svg", chart.file_stem));
        let root = SVGBackend::new(&svg, SIZE).into_drawing_area();
        chart.draw(root).map_err(|e| draw_error(&svg, e))?;
        written.extend([png, svg]);
    }
    Ok(written)
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
    PlotError::Draw { path: path.to_path_buf(), message: e.to_string() }
}

// ---------------------------------------------------------------------------------------------
// Charts from the CSV files

fn flow_charts(csv: &Csv) -> Result<Vec<Chart>, PlotError> {
    let (time, flow) = (csv.col("time_s")?, csv.col("flow")?);
    let (cwnd, nxt, delivered) =
        (csv.col("cwnd_bytes")?, csv.col("snd_nxt_bytes")?, csv.col("delivered_bytes")?);
    let names = csv.groups(flow);
    let mut cwnd_series = Vec::new();
    let mut seq_series = Vec::new();
    for (i, name) in names.iter().enumerate() {
        cwnd_series.push(Series::line(name, i, csv.points(flow, name, time, cwnd)?));
        seq_series.push(Series::line(&format!("{name} snd_nxt"), i, csv.points(flow, name, time, nxt)?));
        let mut d = Series::line(&format!("{name} delivered"), i, csv.points(flow, name, time, delivered)?);
        d.dashed = true;
        seq_series.push(d);
    }
    let (cwnd_div, cwnd_unit) = byte_unit(max_y(&cwnd_series));
    let (seq_div, seq_unit) = byte_unit(max_y(&seq_series));
    Ok(vec![
        Chart::new("cwnd", "Congestion window", "time (s)", format!("cwnd ({cwnd_unit})"))
            .with_series(scale_y(cwnd_series, cwnd_div)),
        Chart::new("seq", "Sequence number (bytes sent) and bytes delivered", "time (s)",
            format!("sequence offset ({seq_unit})"))
            .with_series(scale_y(seq_series, seq_div)),
    ])
}

fn link_charts(csv: &Csv) -> Result<Vec<Chart>, PlotError> {
    let (time, link) = (csv.col("time_s")?, csv.col("link")?);
    let (queue, rate) = (csv.col("queue_packets")?, csv.col("throughput_bps")?);
    let names = csv.groups(link);
    let mut queue_series = Vec::new();
    let mut rate_series = Vec::new();
    for (i, name) in names.iter().enumerate() {
        queue_series.push(Series::line(name, i, csv.points(link, name, time, queue)?));
        rate_series.push(Series::line(name, i, csv.points(link, name, time, rate)?));
    }
    let (div, unit) = rate_unit(max_y(&rate_series));
    Ok(vec![
        Chart::new("queue", "Queue length", "time (s)", "queue (packets)".into())
            .with_series(queue_series),
        Chart::new("throughput", "Link throughput", "time (s)", format!("throughput ({unit})"))
            .with_series(scale_y(rate_series, div)),
    ])
}

fn sweep_charts(csv: &Csv) -> Result<Vec<Chart>, PlotError> {
    // Layout written by `SweepWriter`: run, keys…, metrics…, utilisation_<link>….
    let first_metric = csv.col(SWEEP_METRICS[0])?;
    if first_metric < 2 || csv.rows.is_empty() {
        return Ok(Vec::new()); // no swept key: nothing to plot against
    }
    let keys = 1..first_metric;
    let x_key = keys.start;
    let x_values: Vec<&str> = csv.rows.iter().map(|(_, r)| r.get(x_key).unwrap_or("")).collect();
    let axis = Axis::infer(&csv.headers[x_key], &x_values);
    // One line per combination of the other keys, in order of first appearance.
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
    for metric in first_metric..csv.headers.len() {
        let column = &csv.headers[metric];
        let (label, div) = metric_label(column, csv, metric)?;
        let mut series: Vec<Series> =
            combos.iter().enumerate().map(|(i, c)| Series::line(c, i, Vec::new())).collect();
        for (row, (line, r)) in csv.rows.iter().enumerate() {
            let Some(y) = csv.number(*line, r, metric)? else { continue };
            let Some(i) = combos.iter().position(|c| *c == combo(r)) else { continue };
            series[i].points.push((axis.values[row], y / div));
        }
        for s in &mut series {
            s.points.sort_by(|a, b| a.0.total_cmp(&b.0));
        }
        let mut chart = Chart::new(
            &format!("sweep_{}", file_safe(column)),
            &format!("{label} vs {}", csv.headers[x_key]),
            &axis.label,
            label,
        )
        .with_series(series);
        chart.markers = true;
        chart.categories = axis.categories.clone();
        charts.push(chart);
    }
    Ok(charts)
}

/// Axis label of a sweep metric and the divisor that brings it to the label's unit.
fn metric_label(column: &str, csv: &Csv, index: usize) -> Result<(String, f64), PlotError> {
    if let Some(link) = column.strip_prefix(UTILISATION_PREFIX) {
        return Ok((format!("utilisation of {link} (%)"), 0.01));
    }
    if let Some(what) = column.strip_suffix("_goodput_bps") {
        let mut max = 0.0f64;
        for (line, r) in &csv.rows {
            max = max.max(csv.number(*line, r, index)?.unwrap_or(0.0));
        }
        let (div, unit) = rate_unit(max);
        return Ok((format!("{what} goodput ({unit})"), div));
    }
    let label = match column {
        "jain_fairness" => "Jain fairness index",
        "retransmissions" => "retransmissions (segments)",
        "rto_expirations" => "RTO expirations",
        "max_completion_time_s" => "max completion time (s)",
        "flows_completed" => "flows completed",
        other => other,
    };
    Ok((label.to_string(), 1.0))
}

/// The x axis of a sweep plot: numbers where the swept values are numbers (with units where
/// satpep's unit parsers accept them), positions 0, 1, 2… labelled with the values otherwise.
#[derive(Debug, PartialEq)]
struct Axis {
    label: String,
    values: Vec<f64>,
    categories: Option<Vec<String>>,
}

impl Axis {
    fn infer(key: &str, raw: &[&str]) -> Self {
        let numeric = |f: &dyn Fn(&str) -> Option<f64>| -> Option<Vec<f64>> {
            raw.iter().map(|s| f(s.trim())).collect()
        };
        let max = |v: &[f64]| v.iter().copied().fold(0.0f64, f64::max);
        let make = |values: Vec<f64>, unit: &str, div: f64| Self {
            label: if unit.is_empty() { key.to_string() } else { format!("{key} ({unit})") },
            values: values.iter().map(|v| v / div).collect(),
            categories: None,
        };
        if let Some(v) = numeric(&|s| s.parse::<f64>().ok().filter(|v| v.is_finite())) {
            return make(v, "", 1.0);
        }
        if let Some(v) = numeric(&|s| parse_bitrate(s).ok().map(|r| r.bps() as f64)) {
            let (div, unit) = rate_unit(max(&v));
            return make(v, unit, div);
        }
        if let Some(v) = numeric(&|s| parse_duration(s).ok().map(|d| d.as_nanos() as f64)) {
            let (div, unit) = if max(&v) >= 10e9 { (1e9, "s") } else { (1e6, "ms") };
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
        Self { label: key.to_string(), values, categories: Some(categories) }
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

fn max_y(series: &[Series]) -> f64 {
    series.iter().flat_map(|s| &s.points).map(|p| p.1).fold(0.0, f64::max)
}

fn scale_y(mut series: Vec<Series>, div: f64) -> Vec<Series> {
    for p in series.iter_mut().flat_map(|s| &mut s.points) {
        p.1 /= div;
    }
    series
}

/// A metric name made safe as part of a file name.
fn file_safe(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.') { c } else { '_' })
        .collect()
}

/// Thins a time-ordered series to at most `2 × buckets + 1` points: the x range is cut into
/// `buckets` equal slices and each slice keeps its lowest and highest point, in their original
/// order, plus the last point overall. A line drawn through what is kept covers the same pixels
/// as one through every point when a slice is at most a pixel wide.
pub fn decimate(points: &[(f64, f64)], buckets: usize) -> Vec<(f64, f64)> {
    let (Some(first), Some(last)) = (points.first(), points.last()) else { return Vec::new() };
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
        let csv_err = |source| PlotError::Csv { path: path.to_path_buf(), source };
        let mut reader = csv::Reader::from_path(path).map_err(|e| match e.into_kind() {
            csv::ErrorKind::Io(source) => PlotError::Io { path: path.to_path_buf(), source },
            other => draw_error(path, format!("{other:?}")),
        })?;
        let headers = reader.headers().map_err(csv_err)?.iter().map(String::from).collect();
        let mut rows = Vec::new();
        for record in reader.records() {
            let record = record.map_err(csv_err)?;
            let line = record.position().map_or(0, |p| p.line());
            rows.push((line, record));
        }
        Ok(Self { path: path.to_path_buf(), headers, rows })
    }

    fn col(&self, name: &str) -> Result<usize, PlotError> {
        self.headers.iter().position(|h| h == name).ok_or_else(|| PlotError::MissingColumn {
            path: self.path.clone(),
            column: name.to_string(),
        })
    }

    /// Distinct values of column `c`, in order of first appearance.
    fn groups(&self, c: usize) -> Vec<String> {
        let mut seen = BTreeSet::new();
        let mut names = Vec::new();
        for (_, r) in &self.rows {
            let v = r.get(c).unwrap_or("");
            if seen.insert(v) {
                names.push(v.to_string());
            }
        }
        names
    }

    /// `(x, y)` of the rows whose `key` column equals `name`, empty cells skipped, thinned.
    fn points(&self, key: usize, name: &str, x: usize, y: usize) -> Result<Vec<(f64, f64)>, PlotError> {
        let mut pts = Vec::new();
        for (line, r) in self.rows.iter().filter(|(_, r)| r.get(key) == Some(name)) {
            if let (Some(x), Some(y)) = (self.number(*line, r, x)?, self.number(*line, r, y)?) {
                pts.push((x, y));
            }
        }
        Ok(decimate(&pts, MAX_POINTS / 2))
    }

    /// Cell `c` as a number; `None` when empty; an error when it is something else.
    fn number(&self, line: u64, r: &csv::StringRecord, c: usize) -> Result<Option<f64>, PlotError> {
        let cell = r.get(c).unwrap_or("").trim();
        if cell.is_empty() {
            return Ok(None);
        }
        match cell.parse::<f64>() {
            Ok(v) if v.is_finite() => Ok(Some(v)),
            _ => Err(PlotError::BadNumber {
                path: self.path.clone(),
                line,
                column: self.headers[c].clone(),
                value: cell.to_string(),
            }),
        }
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
}

impl Series {
    fn line(name: &str, colour: usize, points: Vec<(f64, f64)>) -> Self {
        Self { name: name.to_string(), colour, dashed: false, points }
    }
}

/// A line chart, drawn the same way to PNG and SVG.
struct Chart {
    file_stem: String,
    title: String,
    x_label: String,
    y_label: String,
    series: Vec<Series>,
    /// Draw a dot at each point (sweeps: few points, each a run).
    markers: bool,
    /// Categorical x axis: `categories[i]` is drawn at x = i.
    categories: Option<Vec<String>>,
}

impl Chart {
    fn new(file_stem: &str, title: &str, x_label: &str, y_label: String) -> Self {
        Self {
            file_stem: file_stem.to_string(),
            title: title.to_string(),
            x_label: x_label.to_string(),
            y_label,
            series: Vec::new(),
            markers: false,
            categories: None,
        }
    }

    fn with_series(mut self, series: Vec<Series>) -> Self {
        self.series = series;
        self
    }

    fn draw<DB: DrawingBackend>(
        &self,
        root: DrawingArea<DB, Shift>,
    ) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
        let pts = || self.series.iter().flat_map(|s| &s.points);
        let (mut x0, mut x1) = pts().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), p| (a.min(p.0), b.max(p.0)));
        let (mut y0, mut y1) = pts().fold((0.0f64, 0.0f64), |(a, b), p| (a.min(p.1), b.max(p.1)));
        if let Some(c) = &self.categories {
            (x0, x1) = (-0.5, c.len() as f64 - 0.5);
        } else if self.markers {
            let pad = ((x1 - x0) * 0.04).max(x1.abs() * 0.02).max(1e-9);
            (x0, x1) = (x0 - pad, x1 + pad);
        }
        if !(x1 > x0) {
            (x0, x1) = (x0 - 0.5, x0 + 0.5);
        }
        y1 += (y1 - y0) * 0.05;
        if !(y1 > y0) {
            (y0, y1) = (y0 - 0.5, y0 + 0.5);
        }

        root.fill(&WHITE)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(&self.title, ("sans-serif", 26))
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
        if let Some(c) = &self.categories {
            mesh.x_labels(c.len()).x_label_formatter(&category_label);
        }
        mesh.draw()?;

        let legend = self.series.len() <= MAX_LEGEND && self.series.iter().any(|s| !s.name.is_empty());
        for s in self.series.iter().filter(|s| !s.points.is_empty()) {
            let colour = Palette99::pick(s.colour).to_rgba();
            let style = ShapeStyle { color: colour, filled: false, stroke_width: 2 };
            let drawn = if s.dashed {
                chart.draw_series(DashedLineSeries::new(s.points.iter().copied(), 8, 5, style))?
            } else {
                chart.draw_series(LineSeries::new(s.points.iter().copied(), style))?
            };
            if legend && !s.name.is_empty() {
                let dashed = s.dashed;
                drawn.label(s.name.as_str()).legend(move |(x, y)| {
                    let end = if dashed { x + 10 } else { x + 24 };
                    PathElement::new(vec![(x, y), (end, y)], style)
                });
            }
            if self.markers {
                chart.draw_series(s.points.iter().map(|&p| Circle::new(p, 4, colour.filled())))?;
            }
        }
        if legend {
            chart
                .configure_series_labels()
                .position(SeriesLabelPosition::UpperLeft)
                .label_font(("sans-serif", 15))
                .background_style(WHITE.mix(0.85))
                .border_style(RGBColor(160, 160, 160))
                .draw()?;
        }
        root.present()
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
        let mut w = SeriesWriter::create(dir, vec!["bulk0".into(), "bulk1".into()], vec!["sat_fwd".into()])
            .unwrap();
        for step in 0..200u64 {
            let t = Instant(step * 50_000_000);
            for flow in 0..2usize {
                let cwnd = if step < 40 { 1460 << (step / 8) } else { 46_720 + 1460 * (step % 60) };
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
        assert!(bytes.len() > 5_000, "{} is only {} bytes", path.display(), bytes.len());
        assert_eq!(bytes[..8], *b"\x89PNG\r\n\x1a\n", "{} is not a PNG", path.display());
    }

    fn assert_svg(path: &Path, must_contain: &str) {
        let text = std::fs::read_to_string(path).unwrap();
        assert!(text.starts_with("<svg"), "{} is not an SVG", path.display());
        assert!(text.contains(must_contain), "{} lacks `{must_contain}`", path.display());
    }

    #[test]
    fn run_dir_gives_four_plots_in_both_formats() {
        let dir = tempfile::tempdir().unwrap();
        write_run(dir.path());
        let files = plot_dir(dir.path()).unwrap();
        let names: Vec<String> =
            files.iter().map(|p| p.file_name().unwrap().to_string_lossy().into_owned()).collect();
        assert_eq!(
            names,
            ["cwnd.png", "cwnd.svg", "seq.png", "seq.svg", "queue.png", "queue.svg", "throughput.png", "throughput.svg"]
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
                let assign = [("rate".to_string(), rate.to_string()), ("cc".to_string(), cc.to_string())];
                w.push(SweepRow::from_summary(run, &assign, &s));
                run += 1;
            }
        }
        w.finish().unwrap();
        let files = plot_dir(dir.path()).unwrap();
        // 8 metrics + 1 link utilisation, PNG and SVG each.
        assert_eq!(files.len(), 18);
        assert_png(&dir.path().join("sweep_total_goodput_bps.png"));
        assert_svg(&dir.path().join("sweep_total_goodput_bps.svg"), "rate (Mb/s)");
        assert_svg(&dir.path().join("sweep_total_goodput_bps.svg"), "cc=cubic");
        assert_svg(&dir.path().join("sweep_utilisation_sat_fwd.svg"), "utilisation of sat_fwd (%)");
    }

    #[test]
    fn empty_or_missing_csvs_give_no_plots() {
        let dir = tempfile::tempdir().unwrap();
        assert!(plot_dir(dir.path()).unwrap().is_empty());
        SeriesWriter::create(dir.path(), vec![], vec![]).unwrap().finish().unwrap();
        assert!(plot_dir(dir.path()).unwrap().is_empty());
    }

    #[test]
    fn bad_cell_is_reported_with_file_line_and_column() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(LINKS_CSV), "time_s,link,queue_packets,throughput_bps\n0.1,l,3,5\n0.2,l,x,5\n")
            .unwrap();
        let err = plot_dir(dir.path()).unwrap_err().to_string();
        assert!(err.ends_with("links.csv, line 3, column `queue_packets`: `x` is not a number"), "{err}");
        std::fs::write(dir.path().join(LINKS_CSV), "time_s,link\n0.1,l\n").unwrap();
        let err = plot_dir(dir.path()).unwrap_err().to_string();
        assert!(err.ends_with("links.csv: no column `queue_packets`"), "{err}");
    }

    #[test]
    fn axis_parses_units_or_falls_back_to_categories() {
        let a = Axis::infer("rate", &["512kbps", "2Mbps", "10Mbps"]);
        assert_eq!((a.label.as_str(), a.values, a.categories), ("rate (Mb/s)", vec![0.512, 2.0, 10.0], None));
        let a = Axis::infer("delay", &["125ms", "250ms", "0.3s"]);
        assert_eq!((a.label.as_str(), a.values), ("delay (ms)", vec![125.0, 250.0, 300.0]));
        let a = Axis::infer("per", &["0", "1e-3", "0.01"]);
        assert_eq!((a.label.as_str(), a.values), ("per", vec![0.0, 0.001, 0.01]));
        let a = Axis::infer("buffer", &["64KB", "1MB"]);
        assert_eq!((a.label.as_str(), a.values), ("buffer (MB)", vec![0.064, 1.0]));
        let a = Axis::infer("cc", &["reno", "cubic", "reno"]);
        assert_eq!(a.values, vec![0.0, 1.0, 0.0]);
        assert_eq!(a.categories, Some(vec!["reno".to_string(), "cubic".to_string()]));
    }

    #[test]
    fn decimate_keeps_extremes_order_and_ends() {
        // A sawtooth of 100 000 points with one spike.
        let mut pts: Vec<(f64, f64)> = (0..100_000).map(|i| (i as f64 * 1e-3, (i % 997) as f64)).collect();
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
