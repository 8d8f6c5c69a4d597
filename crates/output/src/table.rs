//! The results table printed on the terminal at the end of a run or a sweep.
//!
//! Hand-formatted columns rather than a table crate: the output must be byte-stable (tests
//! compare it) and must not depend on the terminal's width. Names longer than
//! [`MAX_NAME`] characters are shortened with `~` so that a table fits in 100 columns.

use std::fmt::Write;

use crate::summary::Summary;
use crate::sweep::SweepRow;
use crate::sweep_stats::{group_by_seed, is_seed_sweep, Stat, SweepGroup};

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
        let shown = if s.flows.len() > MAX_ROWS {
            MAX_ROWS / 2
        } else {
            s.flows.len()
        };
        for f in &s.flows[..shown] {
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
        if shown < s.flows.len() {
            let mut goodput: Vec<f64> = s.flows.iter().map(|f| f.goodput_bps).collect();
            goodput.sort_by(f64::total_cmp);
            let _ = writeln!(
                out,
                "… {} more flows (summary.json lists every one); all {}: goodput {} in total, \
                 min {}, median {}, max {}; {} retransmissions, {} RTOs",
                s.flows.len() - shown,
                s.flows.len(),
                format_bitrate(goodput.iter().sum()),
                format_bitrate(goodput[0]),
                format_bitrate(goodput[goodput.len() / 2]),
                format_bitrate(goodput[goodput.len() - 1]),
                s.flows.iter().map(|f| f.retransmissions).sum::<u64>(),
                s.flows.iter().map(|f| f.rto_expirations).sum::<u64>(),
            );
        }
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
        // Many links (a star of a thousand terminals): the busiest, in scenario order.
        let mut shown: Vec<usize> = (0..s.links.len()).collect();
        if shown.len() > MAX_ROWS {
            shown.sort_by(|&a, &b| {
                (s.links[b].utilisation.total_cmp(&s.links[a].utilisation)).then(a.cmp(&b))
            });
            shown.truncate(MAX_ROWS / 2);
            shown.sort_unstable();
        }
        for l in shown.iter().map(|&i| &s.links[i]) {
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
        if shown.len() < s.links.len() {
            let _ = writeln!(
                out,
                "… {} less busy links not shown (summary.json lists every one)",
                s.links.len() - shown.len()
            );
        }
    }
    out
}

/// Most flow or link rows printed; beyond it, the first half (flows) or the busiest half
/// (links) and a summary line, so 100 000 flows print a screenful, not 100 000 lines.
pub const MAX_ROWS: usize = 40;

/// The metric columns of both sweep tables, after the keys.
const SWEEP_METRIC_COLUMNS: [(&str, Align); 6] = [
    ("total goodput", Right),
    ("min goodput", Right),
    ("Jain", Right),
    ("retx", Right),
    ("RTOs", Right),
    ("max done (s)", Right),
];

/// Renders a sweep: one line per run with its swept values and the main metrics. Keys are
/// taken from the first row.
///
/// When `seed` is swept, renders [`render_seed_groups`] instead: one line per group of runs.
pub fn render_sweep_table(rows: &[SweepRow]) -> String {
    if is_seed_sweep(rows) {
        return render_seed_groups(&group_by_seed(rows));
    }
    let keys: Vec<&str> = rows
        .first()
        .map(|r| r.assignments.iter().map(|(k, _)| k.as_str()).collect())
        .unwrap_or_default();
    // Key paths say the most at their end (`link.forward.rate`): shorten them from the left.
    let key_headers: Vec<String> = keys.iter().map(|k| shorten_left(k, MAX_NAME)).collect();
    let mut columns: Vec<(&str, Align)> = vec![("run", Right)];
    columns.extend(key_headers.iter().map(|k| (k.as_str(), Left)));
    columns.extend(SWEEP_METRIC_COLUMNS);
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

/// Renders the groups of a seed sweep: the swept values other than the seed, the number of
/// runs, then `mean ± ci95` of the main metrics (the 95 % Student t half-width; the mean alone
/// for a group of one run). A metric that only some runs of a group have (Jain without
/// traffic, completion time of runs where no flow finished) is followed by `(k/n)`, the runs
/// its statistics come from.
///
/// ```text
/// rate    runs     total goodput       min goodput           Jain       retx  …
/// 2Mbps      3  13.0 ± 8.96 Mb/s  6.50 ± 4.48 Mb/s  1.000 ± 0.000  1.0 ± 2.5  …
/// ```
pub fn render_seed_groups(groups: &[SweepGroup]) -> String {
    let keys: Vec<&str> = groups
        .first()
        .map(|g| g.assignments.iter().map(|(k, _)| k.as_str()).collect())
        .unwrap_or_default();
    let key_headers: Vec<String> = keys.iter().map(|k| shorten_left(k, MAX_NAME)).collect();
    let mut columns: Vec<(&str, Align)> = key_headers.iter().map(|k| (k.as_str(), Left)).collect();
    columns.push(("runs", Right));
    columns.extend(SWEEP_METRIC_COLUMNS);
    let mut t = Table::new(&columns);
    for g in groups {
        let mut cells: Vec<String> = g
            .assignments
            .iter()
            .map(|(_, v)| shorten(v, MAX_NAME))
            .collect();
        cells.push(g.runs.len().to_string());
        let stat = |name: &str| g.metrics.iter().find(|(m, _)| m == name).and_then(|m| m.1);
        let counted = |name: &str, text: String| match stat(name) {
            Some(s) if s.n < g.runs.len() => format!("{text} ({}/{})", s.n, g.runs.len()),
            _ => text,
        };
        cells.extend([
            bitrate_pm(stat("total_goodput_bps")),
            bitrate_pm(stat("min_goodput_bps")),
            counted("jain_fairness", pm(stat("jain_fairness"), 3)),
            pm(stat("retransmissions"), 1),
            pm(stat("rto_expirations"), 1),
            counted(
                "max_completion_time_s",
                pm(stat("max_completion_time_s"), 3),
            ),
        ]);
        t.row(cells);
    }
    let mut out = String::new();
    t.render_into(&mut out);
    out
}

/// `mean ± ci95` with fixed decimals; the mean alone without an interval; `-` without values.
fn pm(s: Option<Stat>, decimals: usize) -> String {
    match s {
        None => "-".into(),
        Some(Stat {
            mean,
            ci95: Some(ci),
            ..
        }) => format!("{mean:.decimals$} ± {ci:.decimals$}"),
        Some(s) => format!("{:.decimals$}", s.mean),
    }
}

/// A bit rate `mean ± ci95` in one unit chosen by the mean, as [`format_bitrate`] would:
/// `13.0 ± 8.96 Mb/s`.
fn bitrate_pm(s: Option<Stat>) -> String {
    let Some(s) = s else { return "-".into() };
    let Some(ci) = s.ci95 else {
        return format_bitrate(s.mean);
    };
    let shown = format_bitrate(s.mean);
    let (div, unit) = match shown.rsplit_once(' ').map(|(_, u)| u) {
        Some("Gb/s") => (1e9, "Gb/s"),
        Some("Mb/s") => (1e6, "Mb/s"),
        Some("kb/s") => (1e3, "kb/s"),
        _ => (1.0, "b/s"),
    };
    let number = shown.rsplit_once(' ').map_or(shown.as_str(), |(n, _)| n);
    let ci = ci / div;
    let ci_text = if ci >= 100.0 {
        format!("{ci:.0}")
    } else {
        // Three significant digits, as the mean.
        let decimals = 2 - ci.abs().max(1e-9).log10().floor().clamp(-6.0, 2.0) as i32;
        format!("{ci:.prec$}", prec = decimals.max(0) as usize)
    };
    format!("{number} ± {ci_text} {unit}")
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
    fn thousands_of_flows_and_links_print_a_screenful() {
        let mut s = example();
        let (flow, link) = (s.flows[0].clone(), s.links[0].clone());
        s.flows = (0..1000)
            .map(|i| {
                let mut f = flow.clone();
                f.name = format!("f{i}");
                f.goodput_bps = f64::from(i) * 1000.0;
                f
            })
            .collect();
        s.links = (0..1000)
            .map(|i| {
                let mut l = link.clone();
                l.name = format!("l{i}");
                // Links 100, 200, … 900 are the busiest.
                l.utilisation = if i % 100 == 0 && i > 0 { 0.9 } else { 0.01 };
                l
            })
            .collect();
        let text = render_table(&s);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 1 + 1 + 2 + 20 + 1 + 1 + 2 + 20 + 1, "{text}");
        assert!(lines[4].starts_with("f0 "), "{text}");
        assert!(lines[23].starts_with("f19 "), "{text}");
        assert_eq!(
            lines[24],
            "… 980 more flows (summary.json lists every one); all 1000: goodput 500 Mb/s in \
             total, min 0 b/s, median 500 kb/s, max 999 kb/s; 5000 retransmissions, 1000 RTOs"
        );
        // The nine busiest (l100 … l900) and, among equals, the lowest indices (l0 … l10), in
        // scenario order.
        let names: Vec<&str> = lines[28..48]
            .iter()
            .map(|l| l.split_whitespace().next().unwrap_or(""))
            .collect();
        assert_eq!(&names[..3], ["l0", "l1", "l2"]);
        assert!(
            names.contains(&"l900") && names.contains(&"l100"),
            "{names:?}"
        );
        assert_eq!(
            lines[48],
            "… 980 less busy links not shown (summary.json lists every one)"
        );
        // At the bound, everything is printed.
        s.flows.truncate(MAX_ROWS);
        s.links.truncate(MAX_ROWS);
        assert_eq!(
            render_table(&s).lines().count(),
            1 + 1 + 2 + 40 + 1 + 2 + 40
        );
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

    #[test]
    fn seed_sweep_table_shows_mean_and_ci_per_group() {
        let row = |run: usize, rate: &str, seed: &str, goodput: f64, done: Option<f64>| {
            let mut s = example();
            s.flows[0].goodput_bps = goodput;
            s.flows[1].goodput_bps = goodput;
            s.flows[0].retransmissions = run as u64;
            s.flows[1].retransmissions = 0;
            s.flows[0].completion_time_s = done;
            let assign = [
                ("rate".to_string(), rate.to_string()),
                ("seed".to_string(), seed.to_string()),
            ];
            SweepRow::from_summary(run, &assign, &s)
        };
        let rows = vec![
            row(0, "2Mbps", "1", 5e6, Some(2.0)),
            row(1, "2Mbps", "2", 6e6, None),
            row(2, "2Mbps", "3", 8.5e6, Some(4.0)),
            row(3, "10Mbps", "1", 20e6, Some(1.0)),
        ];
        let text = render_sweep_table(&rows);
        // 2Mbps: totals 10, 12, 17 Mb/s → 13.0 ± 8.96; retx 0, 1, 2 → 1.0 ± 2.5;
        // completion from 2 of 3 runs: 3.000 ± 12.706. 10Mbps: one run, means alone.
        let expected = "\
rate    runs     total goodput       min goodput           Jain       retx       RTOs          max done (s)
------  ----  ----------------  ----------------  -------------  ---------  ---------  --------------------
2Mbps      3  13.0 ± 8.96 Mb/s  6.50 ± 4.48 Mb/s  1.000 ± 0.000  1.0 ± 2.5  2.0 ± 0.0  3.000 ± 12.706 (2/3)
10Mbps     1         40.0 Mb/s         20.0 Mb/s          1.000        3.0        2.0                 1.000
";
        assert_eq!(text, expected);
    }
}
