//! Karaliopoulos et al., Figs. 2–4, plus the sensitivity to the satellite rate the paper does not
//! give:
//!
//! - `fig2.csv` (one row per run), figure and table `fig2_<size>_<rate>`: goodput vs PER, mean of
//!   3 seeds;
//! - `fig3.csv`, `fig3_split`, `fig3_snoop`: the windows of split Reno–SACK's gateway sender and
//!   of Snoop's (Internet) sender, 4 MB; table `fig3_rtos` (the senders' RTOs and fast
//!   retransmits);
//! - `fig4.csv`, `fig4_window`, `fig4_buffer`: split Reno–DelDupACKs' gateway window and buffer,
//!   4 MB; table `fig4_buffer` (peak buffer, and when the receiver has every byte).

use std::fmt::Write as _;
use std::path::Path;

use satpep_proto::Duration;

use super::figure::Figures;
use super::{fixed, md_table, par_map, Grid, Res, Table};
use crate::experiments::karaliopoulos::{run as run_one, Outcome, Point, Sample, Scheme};

const PERS: [f64; 8] = [0.0, 1e-4, 5e-4, 1e-3, 5e-3, 1e-2, 2e-2, 5e-2];
/// The PERs as the doc writes them.
const PER_LABELS: [&str; 8] = [
    "0",
    "10⁻⁴",
    "5·10⁻⁴",
    "10⁻³",
    "5·10⁻³",
    "10⁻²",
    "2·10⁻²",
    "5·10⁻²",
];
const SEEDS: [u64; 3] = [1, 2, 3];
const DUPACK_DELAY_MS: u64 = 600;
/// (bytes, satellite rate): Fig 2's three sizes, then the rate sensitivity.
const CASES: [(u64, &str); 5] = [
    (4_000_000, "2Mbps"),
    (8_000_000, "2Mbps"),
    (12_000_000, "2Mbps"),
    (4_000_000, "1Mbps"),
    (4_000_000, "10Mbps"),
];
/// PERs of the time-series figures.
const SERIES_PERS: [f64; 3] = [1e-3, 1e-2, 5e-2];

fn point(scheme: Scheme, per: f64, bytes: u64, rate: &str, seed: u64) -> Point {
    Point {
        scheme,
        per,
        bytes,
        rate: rate.into(),
        seed,
        dupack_delay: Duration::from_millis(DUPACK_DELAY_MS),
    }
}

fn label(s: Scheme) -> &'static str {
    match s {
        Scheme::RenoE2e => "Reno e2e",
        Scheme::SackE2e => "SACK e2e",
        Scheme::SplitRenoSack => "split Reno–SACK",
        Scheme::SplitDelDupAcks => "split + DelDupACKs",
        Scheme::Snoop => "Snoop",
        Scheme::SplitDelDupAcksArq => "split + DelDupACKs over link ARQ",
        Scheme::SplitRenoArqInOrder => "split Reno over in-order link ARQ",
    }
}

fn per_label(per: f64) -> &'static str {
    PERS.iter()
        .position(|p| *p == per)
        .map_or("?", |i| PER_LABELS[i])
}

pub(super) fn run(dir: &Path, figs: &mut Figures) -> Res<Vec<Table>> {
    let mut tables = fig2(dir, figs)?;
    tables.extend(fig3_fig4(dir, figs)?);
    tables.push(link_level()?);
    Ok(tables)
}

/// The link-level retransmitter under split Reno: Snoop without duplicate hiding (Fig 2's
/// DelDupACKs scheme) against the satellite link's own selective-repeat ARQ, out of order with
/// the delay element and in order without it; 4 MB at 2 Mb/s, mean of the seeds. Table
/// `link_arq`.
fn link_level() -> Res<Table> {
    let mut points = Vec::new();
    for scheme in Scheme::LINK_LEVEL {
        for per in PERS {
            for seed in SEEDS {
                points.push(point(scheme, per, 4_000_000, "2Mbps", seed));
            }
        }
    }
    let outcomes = par_map(&points, |p| {
        run_one(p, None).map_err(|e| format!("{p:?}: {e}"))
    })?;
    let mean = |scheme: Scheme, per: f64, f: &dyn Fn(&Outcome) -> f64| {
        let v: Vec<f64> = points
            .iter()
            .zip(&outcomes)
            .filter(|(p, _)| p.scheme == scheme && p.per == per)
            .map(|(_, o)| f(o))
            .collect();
        v.iter().sum::<f64>() / v.len().max(1) as f64
    };
    let rows = PERS
        .iter()
        .map(|&per| {
            let mut row = vec![per_label(per).to_string()];
            for scheme in Scheme::LINK_LEVEL {
                row.push(fixed(mean(scheme, per, &|o| o.goodput_bps) / 1e3, 0));
            }
            for scheme in &Scheme::LINK_LEVEL[1..] {
                row.push(format!(
                    "{} / {}",
                    fixed(mean(*scheme, per, &|o| o.link_retransmissions as f64), 0),
                    fixed(mean(*scheme, per, &|o| o.link_given_up as f64), 1)
                ));
            }
            row
        })
        .collect();
    let header: Vec<String> = ["PER".to_string()]
        .into_iter()
        .chain(
            Scheme::LINK_LEVEL
                .iter()
                .map(|s| format!("{} (kb/s)", label(*s))),
        )
        .chain(
            Scheme::LINK_LEVEL[1..]
                .iter()
                .map(|s| format!("{}: link retransmissions / given up", label(*s))),
        )
        .collect();
    let header: Vec<&str> = header.iter().map(String::as_str).collect();
    Ok(Table {
        name: "link_arq".into(),
        markdown: md_table(&header, rows),
    })
}

/// Fig. 2 and the rate sensitivity: one table and one figure per (size, rate).
fn fig2(dir: &Path, figs: &mut Figures) -> Res<Vec<Table>> {
    let mut points = Vec::new();
    for &(bytes, rate) in &CASES {
        for scheme in Scheme::ALL {
            for per in PERS {
                for seed in SEEDS {
                    points.push(point(scheme, per, bytes, rate, seed));
                }
            }
        }
    }
    let outcomes = par_map(&points, |p| {
        run_one(p, None).map_err(|e| format!("{p:?}: {e}"))
    })?;
    let mut csv = String::from(
        "rate,bytes,scheme,per,seed,goodput_bps,completion_s,sender_rtos,sender_fast_retransmits,max_gw_buffer_bytes\n",
    );
    for (p, o) in points.iter().zip(&outcomes) {
        writeln!(
            csv,
            "{},{},{},{},{},{:.0},{},{},{},{}",
            p.rate,
            p.bytes,
            p.scheme.name(),
            p.per,
            p.seed,
            o.goodput_bps,
            o.completion_s.map_or(String::new(), |c| format!("{c:.3}")),
            o.sender_rtos,
            o.sender_fast_retransmits,
            o.max_gw_buffer
        )?;
    }
    super::write(&dir.join("fig2.csv"), &csv)?;
    let cats: Vec<String> = PERS.iter().map(|p| format!("{p:e}")).collect();
    let mut tables = Vec::new();
    for &(bytes, rate) in &CASES {
        let name = format!("fig2_{}MB_{rate}", bytes / 1_000_000);
        let mut grid = Grid::new("PER", PER_LABELS.map(String::from), 0);
        for scheme in Scheme::ALL {
            let kbps: Vec<f64> = PERS
                .iter()
                .map(|per| {
                    let g: Vec<f64> = points
                        .iter()
                        .zip(&outcomes)
                        .filter(|(p, _)| {
                            p.scheme == scheme
                                && p.per == *per
                                && p.bytes == bytes
                                && p.rate == rate
                        })
                        .map(|(_, o)| o.goodput_bps)
                        .collect();
                    g.iter().sum::<f64>() / g.len().max(1) as f64 / 1e3
                })
                .collect();
            grid.row(label(scheme), label(scheme), &kbps);
        }
        let (table, series) = grid.finish(&name);
        tables.push(table);
        figs.line(
            &name,
            &format!("Goodput vs PER, {} MB, satellite {rate}", bytes / 1_000_000),
            "packet error rate on the satellite hop",
            "goodput (kb/s)",
            Some(cats.clone()),
            true,
            series,
        )?;
    }
    Ok(tables)
}

/// Figs. 3 and 4: time series, 4 MB, 2 Mb/s, seed 1.
fn fig3_fig4(dir: &Path, figs: &mut Figures) -> Res<Vec<Table>> {
    let ts_points: Vec<Point> = [
        Scheme::SplitRenoSack,
        Scheme::Snoop,
        Scheme::SplitDelDupAcks,
    ]
    .into_iter()
    .flat_map(|s| SERIES_PERS.map(|per| point(s, per, 4_000_000, "2Mbps", 1)))
    .collect();
    let ts = par_map(&ts_points, |p| {
        run_one(p, Some(Duration::from_millis(100))).map_err(|e| format!("{p:?}: {e}"))
    })?;
    let mut f3 =
        String::from("scheme,per,time_s,sender_cwnd_bytes,gw_cwnd_bytes,gw_in_flight_bytes\n");
    let mut f4 = String::from("per,time_s,gw_cwnd_bytes,gw_in_flight_bytes,gw_buffer_bytes\n");
    let (mut s3_split, mut s3_snoop, mut s4_win, mut s4_buf) = (vec![], vec![], vec![], vec![]);
    let mut rto_rows = Vec::new();
    let mut buf_rows = Vec::new();
    for (p, o) in ts_points.iter().zip(&ts) {
        let legend = format!("PER {:e}", p.per);
        for s in &o.samples {
            match p.scheme {
                Scheme::SplitDelDupAcks => writeln!(
                    f4,
                    "{},{:.2},{},{},{}",
                    p.per, s.t, s.gw_cwnd, s.gw_in_flight, s.gw_buffer
                )?,
                _ => writeln!(
                    f3,
                    "{},{},{:.2},{},{},{}",
                    p.scheme.name(),
                    p.per,
                    s.t,
                    s.sender_cwnd,
                    s.gw_cwnd,
                    s.gw_in_flight
                )?,
            }
        }
        // cwnd in packets of 1000 B (the paper's unit); the buffer in KB.
        let pk = |f: fn(&Sample) -> u64| -> Vec<(f64, f64)> {
            o.samples
                .iter()
                .map(|s| (s.t, f(s) as f64 / 1000.0))
                .collect()
        };
        match p.scheme {
            Scheme::SplitRenoSack => s3_split.push((legend, pk(|s| s.gw_cwnd))),
            Scheme::Snoop => {
                rto_rows.push(vec![
                    per_label(p.per).to_string(),
                    o.sender_rtos.to_string(),
                    o.sender_fast_retransmits.to_string(),
                    fixed(o.goodput_bps / 1e3, 0),
                ]);
                s3_snoop.push((legend, pk(|s| s.sender_cwnd)));
            }
            _ => {
                buf_rows.push(buffer_row(p.per, o));
                s4_win.push((legend.clone(), pk(|s| s.gw_cwnd)));
                s4_buf.push((legend, pk(|s| s.gw_buffer)));
            }
        }
    }
    super::write(&dir.join("fig3.csv"), &f3)?;
    super::write(&dir.join("fig4.csv"), &f4)?;
    let cwnd = "cwnd (packets of 1000 B)";
    figs.line(
        "fig3_split",
        "Split Reno-SACK: gateway sender's cwnd, 4 MB",
        "time (s)",
        cwnd,
        None,
        false,
        s3_split,
    )?;
    figs.line(
        "fig3_snoop",
        "Snoop: sender's cwnd, 4 MB",
        "time (s)",
        cwnd,
        None,
        false,
        s3_snoop,
    )?;
    figs.line(
        "fig4_window",
        "Split Reno-DelDupACKs: gateway sender's cwnd, 4 MB",
        "time (s)",
        cwnd,
        None,
        false,
        s4_win,
    )?;
    figs.line(
        "fig4_buffer",
        "Split Reno-DelDupACKs: gateway buffer, 4 MB",
        "time (s)",
        "buffer (KB)",
        None,
        false,
        s4_buf,
    )?;
    Ok(vec![
        Table {
            name: "fig3_snoop".into(),
            markdown: md_table(
                &["PER", "RTOs", "fast retransmits", "goodput (kb/s)"],
                rto_rows,
            ),
        },
        Table {
            name: "fig4_buffer".into(),
            markdown: md_table(
                &["PER", "peak buffer (MB)", "at (s)", "receiver done at (s)"],
                buf_rows,
            ),
        },
    ])
}

/// Peak gateway buffer, when, and when the receiver had every byte (the buffer has drained).
fn buffer_row(per: f64, o: &Outcome) -> Vec<String> {
    let peak = o
        .samples
        .iter()
        .max_by_key(|s| s.gw_buffer)
        .map_or((0, 0.0), |s| (s.gw_buffer, s.t));
    vec![
        per_label(per).to_string(),
        fixed(peak.0 as f64 / 1e6, 2),
        fixed(peak.1, 1),
        o.completion_s.map_or("not done".into(), |c| fixed(c, 1)),
    ]
}
