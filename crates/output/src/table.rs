//! The results table printed on the terminal at the end of a run or a sweep.
//!
//! Hand-formatted columns rather than a table crate: the output must be byte-stable (tests
//! compare it) and must not depend on the terminal's width. Names longer than
//! [`MAX_NAME`] characters are shortened with `~` so that a table fits in 100 columns.

use std::fmt::Write;

use crate::summary::Summary;
use crate::sweep::SweepRow;

/// Longest name (flow, link, swept value) shown in full.
pub const MAX_NAME: usize = 16;

/// A bit rate in people units with three significant digits: `950 b/s`, `9.60 kb/s`,
/// `12.5 Mb/s`, `1.20 Gb/s`. Non-finite rates print as `-`.
pub fn format_bitrate(bps: f64) -> String {
    if !bps.is_finite() {
        return "-".into();
    }
    let (v, unit) = if bps.abs() >= 1e9 {
        (bps / 1e9, "Gb/s")
    } else if bps.abs() >= 1e6 {
        (bps / 1e6, "Mb/s")
    } else if bps.abs() >= 1e3 {
        (bps / 1e3, "kb/s")
    } else {
        return format!("{bps:.0} b/s");
    };
    // Pick decimals by magnitude *after* rounding, so 999.96 kb/s does not print as "1000.0".
    let decimals = if v.abs() < 9.995 {
        2
    } else if v.abs() < 99.95 {
        1
    } else {
        0
    };
    format!("{v:.decimals$} {unit}")
}

/// Renders one run's summary: a header line, a flow table and a link table.
///
/// ```text
/// scenario geo   seed 7   time 30.000 s   events 123456
///
/// flow   cc/recovery      goodput  done (s)  retx  RTOs  srtt (ms)
/// bulk0  newreno/sack   4.00 Mb/s     2.500     5     1      561.5
/// ```
pub fn render_table(s: &Summary) -> String {
    let mut out = format!(
        "scenario {}   seed {}   time {:.3} s   events {}\n",
        shorten(&s.scenario, 40),
        s.seed,
        s.sim_time_s,
        s.events
    );
    if !s.flows.is_empty() {
        let mut t = Table::new(&[
            ("flow", Left),
            ("cc/recovery", Left),
            ("goodput", Right),
            ("done (s)", Right),
            ("retx", Right),
            ("RTOs", Right),
            ("srtt (ms)", Right),
        ]);
        for f in &s.flows {
            t.row(vec![
                shorten(&f.name, MAX_NAME),
                shorten(&format!("{}/{}", f.cc, f.recovery), MAX_NAME),
                format_bitrate(f.goodput_bps),
                opt(f.completion_time_s, 3),
                f.retransmissions.to_string(),
                f.rto_expirations.to_string(),
                opt(f.mean_srtt_ms, 1),
            ]);
            // A split flow's relay legs, under it: goodput and completion are the flow's.
            for leg in &f.legs {
                t.row(vec![
                    shorten(&format!(" @{}", leg.at), MAX_NAME),
                    format!("(leg to {})", shorten(&leg.to, MAX_NAME - 8)),
                    String::new(),
                    String::new(),
                    leg.retransmissions.to_string(),
                    leg.rto_expirations.to_string(),
                    opt(leg.mean_srtt_ms, 1),
                ]);
            }
        }
        out.push('\n');
        t.render_into(&mut out);
    }
    if !s.links.is_empty() {
        let mut t = Table::new(&[
            ("link", Left),
            ("rate", Right),
            ("util", Right),
            ("q drops", Right),
            ("err drops", Right),
            ("mean q (pkt)", Right),
            ("max q", Right),
        ]);
        for l in &s.links {
            t.row(vec![
                shorten(&l.name, MAX_NAME),
                format_bitrate(l.rate_bps as f64),
                format!("{:.1}%", l.utilisation * 100.0),
                l.queue_drops.to_string(),
                l.error_drops.to_string(),
                format!("{:.2}", l.mean_queue_packets),
                l.max_queue_packets.to_string(),
            ]);
        }
        out.push('\n');
        t.render_into(&mut out);
    }
    out
}

/// Renders a sweep: one line per run with its swept values and the main metrics. Keys are
/// taken from the first row.
pub fn render_sweep_table(rows: &[SweepRow]) -> String {
    let keys: Vec<&str> = rows
        .first()
        .map(|r| r.assignments.iter().map(|(k, _)| k.as_str()).collect())
        .unwrap_or_default();
    // Key paths say the most at their end (`link.forward.rate`): shorten them from the left.
    let key_headers: Vec<String> = keys.iter().map(|k| shorten_left(k, MAX_NAME)).collect();
    let mut columns: Vec<(&str, Align)> = vec![("run", Right)];
    columns.extend(key_headers.iter().map(|k| (k.as_str(), Left)));
    columns.extend([
        ("total goodput", Right),
        ("min goodput", Right),
        ("Jain", Right),
        ("retx", Right),
        ("RTOs", Right),
        ("max done (s)", Right),
    ]);
    let mut t = Table::new(&columns);
    for r in rows {
        let mut cells = vec![r.run.to_string()];
        for k in &keys {
            let v = r
                .assignments
                .iter()
                .find(|(key, _)| key == k)
                .map_or("", |(_, v)| v.as_str());
            cells.push(shorten(v, MAX_NAME));
        }
        cells.extend([
            format_bitrate(r.total_goodput_bps),
            format_bitrate(r.min_goodput_bps),
            opt(r.jain_fairness, 3),
            r.retransmissions.to_string(),
            r.rto_expirations.to_string(),
            opt(r.max_completion_time_s, 3),
        ]);
        t.row(cells);
    }
    let mut out = String::new();
    t.render_into(&mut out);
    out
}

#[derive(Clone, Copy)]
enum Align {
    Left,
    Right,
}
use Align::{Left, Right};

/// Columns sized to their widest cell, two spaces apart, a dashed rule under the header.
struct Table {
    headers: Vec<(String, Align)>,
    rows: Vec<Vec<String>>,
}

impl Table {
    fn new(headers: &[(&str, Align)]) -> Self {
        Self {
            headers: headers.iter().map(|&(h, a)| (h.to_string(), a)).collect(),
            rows: vec![],
        }
    }

    fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    fn render_into(&self, out: &mut String) {
        let widths: Vec<usize> = (0..self.headers.len())
            .map(|i| {
                let cells = self.rows.iter().filter_map(|r| r.get(i)).map(|c| width(c));
                cells.chain([width(&self.headers[i].0)]).max().unwrap_or(0)
            })
            .collect();
        let headers: Vec<String> = self.headers.iter().map(|(h, _)| h.clone()).collect();
        let rule: Vec<String> = widths.iter().map(|&w| "-".repeat(w)).collect();
        for cells in [&headers, &rule].into_iter().chain(&self.rows) {
            let mut line = String::new();
            for (i, ((_, align), w)) in self.headers.iter().zip(&widths).enumerate() {
                let cell = cells.get(i).map_or("", String::as_str);
                let pad = w.saturating_sub(width(cell));
                if i > 0 {
                    line.push_str("  ");
                }
                match align {
                    Left => {
                        line.push_str(cell);
                        line.extend(std::iter::repeat_n(' ', pad));
                    }
                    Right => {
                        line.extend(std::iter::repeat_n(' ', pad));
                        line.push_str(cell);
                    }
                }
            }
            // NOTE(unwrap-free): writing to a String cannot fail.
            let _ = writeln!(out, "{}", line.trim_end());
        }
    }
}

fn width(s: &str) -> usize {
    s.chars().count()
}

/// `s`, or its first `max - 1` characters followed by `~`.
fn shorten(s: &str, max: usize) -> String {
    if width(s) <= max {
        return s.to_string();
    }
    let mut short: String = s.chars().take(max.saturating_sub(1)).collect();
    short.push('~');
    short
}

/// `s`, or `~` followed by its last `max - 1` characters.
fn shorten_left(s: &str, max: usize) -> String {
    let n = width(s);
    if n <= max {
        return s.to_string();
    }
    let tail: String = s.chars().skip(n + 1 - max).collect();
    format!("~{tail}")
}

fn opt(v: Option<f64>, decimals: usize) -> String {
    match v {
        Some(v) if v.is_finite() => format!("{v:.decimals$}"),
        _ => "-".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::summary::tests::example;

    #[test]
    fn bitrates_use_people_units_with_three_digits() {
        assert_eq!(format_bitrate(0.0), "0 b/s");
        assert_eq!(format_bitrate(950.0), "950 b/s");
        assert_eq!(format_bitrate(9_600.0), "9.60 kb/s");
        assert_eq!(format_bitrate(12_480_000.0), "12.5 Mb/s");
        assert_eq!(format_bitrate(999_960.0), "1000 kb/s");
        assert_eq!(format_bitrate(155_520_000.0), "156 Mb/s");
        assert_eq!(format_bitrate(1.2e9), "1.20 Gb/s");
        assert_eq!(format_bitrate(f64::NAN), "-");
    }

    #[test]
    fn run_table_is_exact_and_narrow() {
        let mut s = example();
        s.flows[1].name = "a-very-long-flow-name-indeed".into();
        s.flows[1].mean_srtt_ms = None;
        let text = render_table(&s);
        let expected = "\
scenario geo   seed 7   time 30.000 s   events 123456

flow              cc/recovery     goodput  done (s)  retx  RTOs  srtt (ms)
----------------  ------------  ---------  --------  ----  ----  ---------
bulk0             newreno/sack  4.00 Mb/s     2.500     5     1      561.5
a-very-long-flo~  newreno/sack  2.00 Mb/s         -     5     1          -

link          rate   util  q drops  err drops  mean q (pkt)  max q
-------  ---------  -----  -------  ---------  ------------  -----
sat_fwd  10.0 Mb/s  60.0%        3          4         12.25    100
";
        assert_eq!(text, expected);
        assert!(text.lines().all(|l| l.chars().count() < 100));
    }

    #[test]
    fn sweep_table_lists_keys_then_metrics() {
        let assign = |rate: &str| vec![("link.forward.rate".to_string(), rate.to_string())];
        let rows = vec![
            SweepRow::from_summary(0, &assign("2Mbps"), &example()),
            SweepRow::from_summary(1, &assign("10Mbps"), &example()),
        ];
        let text = render_sweep_table(&rows);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "run  ~nk.forward.rate  total goodput  min goodput   Jain  retx  RTOs  max done (s)"
        );
        assert_eq!(
            lines[3],
            "  1  10Mbps                6.00 Mb/s    2.00 Mb/s  0.900    10     2         2.500"
        );
    }
}
