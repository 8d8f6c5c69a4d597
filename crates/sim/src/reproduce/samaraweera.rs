//! Samaraweera 1999, figures 3–12:
//!
//! - `single_<rate>.csv` (t, technique, cwnd, acked, queues; one flow), figures `fig3_cwnd`,
//!   `fig4_seq`, `fig5_bytes_zoom`, `fig6_cwnd_spacing`, `fig7_fwd_queue_spacing` (9.6 kb/s),
//!   `fig8_430k_queue`, `fig8_430k_cwnd`; tables `single`, `single_timeline`, `single_crossings`;
//! - `three_flows.csv`, `fig9_fwd_queue_3flows`, `fig10_seq_staggered`,
//!   `fig12_return_queue_32k`; table `three_flows`;
//! - `fig11.csv`, figures and tables `fig11_throughput` (hub queue 2200, lossless) and
//!   `fig11_throughput_bdp_queue` (600): aggregate goodput of three flows vs return rate;
//! - `fig11_refinement.csv`, table `fig11_refinement`, figure `fig11_refinement_bdp_queue`: the
//!   same with §5's "at most 3 unsuppressed duplicate ACKs"; tables `fig11_reversal_trace`,
//!   `fig11_reversal_timeline` and figure `fig11_reversal_return_queue`: why compaction falls
//!   below suppression with the 600-packet queue;
//! - table `fig10_stagger`, figure `fig10_seq_staggered_10ms`: Fig 10 at the paper's 10 ms;
//! - table `fig9_peaks`: Fig 9's claim that spacing removes compaction's queue peaks.

use std::fmt::Write as _;
use std::path::Path;

use satpep_proto::Duration;

use super::figure::{Figures, Series};
use super::{fixed, md_table, par_map, Grid, Res, Table};
use crate::experiments::samaraweera::{run as run_one, Outcome, Point, Sample, Technique};

const RATES: [(&str, f64); 8] = [
    ("9.6kbps", 9.6),
    ("14.4kbps", 14.4),
    ("19.2kbps", 19.2),
    ("28.8kbps", 28.8),
    ("32kbps", 32.0),
    ("64kbps", 64.0),
    ("128kbps", 128.0),
    ("430kbps", 430.0),
];

/// A hub queue of about one bandwidth-delay product (10 Mb/s × 480 ms ≈ 586 segments): three
/// flows then lose packets there.
const BDP_QUEUE: u32 = 600;

/// The hub queue of the scenario (lossless).
const DEFAULT_QUEUE: u32 = 2200;

/// The client's return queue in the scenario (packets).
const RETURN_QUEUE: usize = 1000;

/// §5's refinement: duplicate ACKs kept per acknowledgement number.
const KEPT_DUPLICATES: u32 = 3;

/// The paper's techniques (filtering is plotted only in fig 11).
const PAPER: [Technique; 4] = [
    Technique::Unmodified,
    Technique::HeaderCompression,
    Technique::Suppression,
    Technique::Compaction,
];

fn label(t: Technique) -> &'static str {
    match t {
        Technique::Unmodified => "unmodified",
        Technique::HeaderCompression => "header compression",
        Technique::Suppression => "suppression",
        Technique::Filtering => "filtering (not in paper)",
        Technique::Compaction => "compaction",
        Technique::CompactionSpacing => "compaction + spacing",
    }
}

fn run_all(points: &[Point], every: Option<Duration>) -> Res<Vec<Outcome>> {
    par_map(points, |p| {
        run_one(p, every).map_err(|e| format!("{p:?}: {e}"))
    })
}

fn series(
    techs: &[Technique],
    outs: &[&Outcome],
    t_max: f64,
    y: impl Fn(&Sample) -> f64,
) -> Series {
    techs
        .iter()
        .zip(outs)
        .map(|(t, o)| {
            let pts = o
                .samples
                .iter()
                .filter(|s| s.t <= t_max)
                .map(|s| (s.t, y(s)))
                .collect();
            (t.name().to_string(), pts)
        })
        .collect()
}

fn samples_csv(techs: &[Technique], outs: &[&Outcome]) -> String {
    let mut csv =
        String::from("technique,t,flow,cwnd_bytes,acked_bytes,forward_queue,return_queue\n");
    for (t, o) in techs.iter().zip(outs) {
        for s in &o.samples {
            for f in 0..s.cwnd.len() {
                // NOTE: writing to a String cannot fail.
                let _ = writeln!(
                    csv,
                    "{},{:.3},{},{},{},{},{}",
                    t.name(),
                    s.t,
                    f,
                    s.cwnd[f],
                    s.acked[f],
                    s.forward_queue,
                    s.return_queue
                );
            }
        }
    }
    csv
}

pub(super) fn run(dir: &Path, figs: &mut Figures) -> Res<Vec<Table>> {
    let mut tables = single(dir, figs)?;
    tables.push(three_flows(dir, figs)?);
    tables.extend(fig11(dir, figs)?);
    tables.extend(refinement(dir, figs)?);
    tables.push(fig10_10ms(figs)?);
    tables.push(fig9_peaks()?);
    Ok(tables)
}

/// Figs 3–7: one flow at 9.6 kb/s, every technique; fig 8: 430 kb/s.
fn single(dir: &Path, figs: &mut Figures) -> Res<Vec<Table>> {
    let every = Some(Duration::from_millis(50));
    let points: Vec<Point> = Technique::ALL
        .iter()
        .map(|&t| Point::single(t, "9.6kbps"))
        .chain(
            [Technique::Compaction, Technique::CompactionSpacing]
                .iter()
                .map(|&t| Point::single(t, "430kbps")),
        )
        .collect();
    let outs = run_all(&points, every)?;
    let by = |t: Technique, rate: &str| -> Res<&Outcome> {
        points
            .iter()
            .position(|p| p.technique == t && p.return_rate == rate)
            .map(|i| &outs[i])
            .ok_or_else(|| "samaraweera: point missing".into())
    };
    let pick = |ts: &[Technique], rate: &str| -> Res<Vec<&Outcome>> {
        ts.iter().map(|&t| by(t, rate)).collect()
    };
    let all = Technique::ALL;
    super::write(
        &dir.join("single_9.6kbps.csv"),
        &samples_csv(&all, &pick(&all, "9.6kbps")?),
    )?;
    let paper96 = pick(&PAPER, "9.6kbps")?;
    let kb = |b: u64| b as f64 / 1024.0;
    let t = "time (s)";
    figs.line(
        "fig3_cwnd",
        "Fig 3: cwnd, one flow, 9.6 kb/s return",
        t,
        "cwnd (KB)",
        None,
        false,
        series(&PAPER, &paper96, 60.0, |s| kb(s.cwnd[0])),
    )?;
    figs.line(
        "fig4_seq",
        "Fig 4: bytes acknowledged, one flow, 9.6 kb/s",
        t,
        "MB",
        None,
        false,
        series(&PAPER, &paper96, 60.0, |s| s.acked[0] as f64 / 1e6),
    )?;
    figs.line(
        "fig5_bytes_zoom",
        "Fig 5: first 10 s",
        t,
        "MB",
        None,
        false,
        series(&PAPER, &paper96, 10.0, |s| s.acked[0] as f64 / 1e6),
    )?;
    let sp = [Technique::Compaction, Technique::CompactionSpacing];
    let sp96 = pick(&sp, "9.6kbps")?;
    figs.line(
        "fig6_cwnd_spacing",
        "Fig 6: cwnd, compaction vs + spacing, 9.6 kb/s",
        t,
        "cwnd (KB)",
        None,
        false,
        series(&sp, &sp96, 20.0, |s| kb(s.cwnd[0])),
    )?;
    figs.line(
        "fig7_fwd_queue_spacing",
        "Fig 7: hub satellite queue, 9.6 kb/s",
        t,
        "packets",
        None,
        false,
        series(&sp, &sp96, 20.0, |s| s.forward_queue as f64),
    )?;
    let sp430 = pick(&sp, "430kbps")?;
    super::write(&dir.join("single_430kbps.csv"), &samples_csv(&sp, &sp430))?;
    figs.line(
        "fig8_430k_queue",
        "Fig 8: hub satellite queue, 430 kb/s return",
        t,
        "packets",
        None,
        false,
        series(&sp, &sp430, 20.0, |s| s.forward_queue as f64),
    )?;
    figs.line(
        "fig8_430k_cwnd",
        "Fig 8: cwnd, 430 kb/s return",
        t,
        "cwnd (KB)",
        None,
        false,
        series(&sp, &sp430, 20.0, |s| kb(s.cwnd[0])),
    )?;
    let timeline = timeline(&all, &pick(&all, "9.6kbps")?);
    let rows = points
        .iter()
        .zip(&outs)
        .map(|(p, o)| {
            vec![
                label(p.technique).to_string(),
                p.return_rate.trim_end_matches("kbps").to_string(),
                fixed(o.goodput_bps / 1e6, 2),
                o.rtos.to_string(),
                o.retransmissions.to_string(),
                o.removed.to_string(),
                o.regenerated.to_string(),
                o.max_forward_queue.to_string(),
                fixed(o.mean_return_queue, 1),
            ]
        })
        .collect();
    let single = Table {
        name: "single".into(),
        markdown: md_table(
            &[
                "one flow, 60 s",
                "return (kb/s)",
                "Mb/s",
                "RTOs",
                "retransmissions",
                "ACKs removed",
                "regenerated",
                "max hub queue",
                "mean return queue",
            ],
            rows,
        ),
    };
    Ok(vec![single, timeline.0, timeline.1])
}

/// The moments the prose of Figs 3–8 quotes, from the 50 ms samples of one flow at 9.6 kb/s:
/// per technique the bytes acknowledged at 10 s and 60 s, when cwnd first reaches its largest
/// value, and the hub queue's peak; and when one technique's acknowledged bytes pass another's.
fn timeline(techs: &[Technique], outs: &[&Outcome]) -> (Table, Table) {
    let mb = |o: &Outcome, t: f64| {
        o.samples
            .iter()
            .take_while(|s| s.t <= t + 1e-9)
            .last()
            .map_or(0.0, |s| s.acked[0] as f64 / 1e6)
    };
    let rows = techs
        .iter()
        .zip(outs)
        .map(|(t, o)| {
            let max = o.samples.iter().map(|s| s.cwnd[0]).max().unwrap_or(0);
            let at_max = o.samples.iter().find(|s| s.cwnd[0] == max).map(|s| s.t);
            let peak = o.samples.iter().map(|s| s.forward_queue).max().unwrap_or(0);
            vec![
                label(*t).to_string(),
                fixed(mb(o, 10.0), 2),
                fixed(mb(o, 60.0), 1),
                at_max.map_or("—".into(), |t| fixed(t, 2)),
                peak.to_string(),
            ]
        })
        .collect();
    let by = |t: Technique| techs.iter().position(|x| *x == t).map(|i| outs[i]);
    let mut crossings = Vec::new();
    for (a, b) in [
        (Technique::Suppression, Technique::HeaderCompression),
        (Technique::Compaction, Technique::HeaderCompression),
    ] {
        let (Some(oa), Some(ob)) = (by(a), by(b)) else {
            continue;
        };
        // The first sample after the first second at which `a` has more acknowledged than `b`.
        let pass = oa
            .samples
            .iter()
            .zip(&ob.samples)
            .find(|(sa, sb)| sa.t > 1.0 && sa.acked[0] > sb.acked[0]);
        crossings.push(vec![
            format!("{} passes {}", label(a), label(b)),
            pass.map_or("never".into(), |(s, _)| fixed(s.t, 2)),
            pass.map_or("—".into(), |(s, _)| fixed(s.acked[0] as f64 / 1e6, 2)),
        ]);
    }
    (
        Table {
            name: "single_timeline".into(),
            markdown: md_table(
                &[
                    "one flow, 9.6 kb/s",
                    "MB acked at 10 s",
                    "MB acked at 60 s",
                    "cwnd at its largest from (s)",
                    "hub queue peak (50 ms samples)",
                ],
                rows,
            ),
        },
        Table {
            name: "single_crossings".into(),
            markdown: md_table(&["one flow, 9.6 kb/s", "at (s)", "MB acked"], crossings),
        },
    )
}

/// Figs 9, 10, 12: three flows.
fn three_flows(dir: &Path, figs: &mut Figures) -> Res<Table> {
    let three = |t: Technique, rate: &str, stagger_ms: u64, q: Option<u32>| Point {
        technique: t,
        return_rate: rate.into(),
        flows: 3,
        stagger: Duration::from_millis(stagger_ms),
        duration: Duration::from_secs(60),
        forward_queue: q,
        unsuppressed_duplicates: None,
    };
    let (c, cs) = (Technique::Compaction, Technique::CompactionSpacing);
    let points = vec![
        three(c, "9.6kbps", 0, None),
        three(cs, "9.6kbps", 0, None),
        three(c, "9.6kbps", 10_000, Some(BDP_QUEUE)),
        three(cs, "9.6kbps", 10_000, Some(BDP_QUEUE)),
        three(Technique::Unmodified, "32kbps", 0, None),
        three(Technique::HeaderCompression, "32kbps", 0, None),
        three(Technique::Suppression, "32kbps", 0, None),
        three(c, "32kbps", 0, None),
    ];
    let o = run_all(&points, Some(Duration::from_millis(50)))?;
    figs.line(
        "fig9_fwd_queue_3flows",
        "Fig 9: hub satellite queue, three flows, 9.6 kb/s",
        "time (s)",
        "packets",
        None,
        false,
        series(&[c, cs], &[&o[0], &o[1]], 30.0, |s| s.forward_queue as f64),
    )?;
    let mut s10 = Vec::new();
    for (k, name) in [(2, "compaction"), (3, "spacing")] {
        for f in 0..3 {
            let pts = o[k]
                .samples
                .iter()
                .map(|s| (s.t, s.acked[f] as f64 / 1e6))
                .collect();
            s10.push((format!("flow {} ({name})", f + 1), pts));
        }
    }
    figs.line(
        "fig10_seq_staggered",
        "Fig 10: flows 10 s apart, 9.6 kb/s, 600-packet hub queue",
        "time (s)",
        "MB acknowledged",
        None,
        false,
        s10,
    )?;
    figs.line(
        "fig12_return_queue_32k",
        "Fig 12: client return queue, three flows, 32 kb/s",
        "time (s)",
        "packets",
        None,
        false,
        series(&PAPER, &[&o[4], &o[5], &o[6], &o[7]], 60.0, |s| {
            s.return_queue as f64
        }),
    )?;
    let techs: Vec<Technique> = points.iter().map(|p| p.technique).collect();
    let refs: Vec<&Outcome> = o.iter().collect();
    super::write(&dir.join("three_flows.csv"), &samples_csv(&techs, &refs))?;
    let rows = points
        .iter()
        .zip(&o)
        .map(|(p, o)| {
            vec![
                label(p.technique).to_string(),
                p.return_rate.trim_end_matches("kbps").to_string(),
                p.forward_queue.unwrap_or(DEFAULT_QUEUE).to_string(),
                (p.stagger.as_nanos() / 1_000_000_000).to_string(),
                fixed(o.goodput_bps / 1e6, 2),
                o.rtos.to_string(),
                o.retransmissions.to_string(),
                fixed(o.mean_return_queue, 1),
                o.max_forward_queue.to_string(),
            ]
        })
        .collect();
    Ok(Table {
        name: "three_flows".into(),
        markdown: md_table(
            &[
                "three flows, 60 s",
                "return (kb/s)",
                "hub queue",
                "stagger (s)",
                "Mb/s",
                "RTOs",
                "retransmissions",
                "mean return queue",
                "max hub queue",
            ],
            rows,
        ),
    })
}

/// Fig 11: aggregate goodput of three flows vs return rate, two hub queues.
fn fig11(dir: &Path, figs: &mut Figures) -> Res<Vec<Table>> {
    let mut csv = String::from(
        "forward_queue,technique,return_kbps,goodput_bps,rtos,retransmissions,removed,\
         return_drops,regenerated,mean_return_queue\n",
    );
    let mut tables = Vec::new();
    for (q, name) in [
        (None, "fig11_throughput"),
        (Some(BDP_QUEUE), "fig11_throughput_bdp_queue"),
    ] {
        let points: Vec<Point> = Technique::ALL
            .iter()
            .flat_map(|&t| RATES.iter().map(move |&(rate, _)| (t, rate)))
            .map(|(t, rate)| Point {
                technique: t,
                return_rate: rate.into(),
                flows: 3,
                stagger: Duration::ZERO,
                duration: Duration::from_secs(60),
                forward_queue: q,
                unsuppressed_duplicates: None,
            })
            .collect();
        let outs = run_all(&points, None)?;
        let qn = q.unwrap_or(DEFAULT_QUEUE);
        let mut columns: Vec<String> = RATES.iter().map(|r| r.1.to_string()).collect();
        if let Some(last) = columns.last_mut() {
            last.push_str(" kb/s");
        }
        let mut grid = Grid::new(&format!("Mb/s, hub queue {qn}"), columns, 2);
        for t in Technique::ALL {
            let mut mbps = Vec::new();
            for &(rate, kbps) in &RATES {
                let j = points
                    .iter()
                    .position(|p| p.technique == t && p.return_rate == rate)
                    .ok_or("samaraweera: point missing")?;
                let o = &outs[j];
                writeln!(
                    csv,
                    "{qn},{},{kbps},{:.0},{},{},{},{},{},{:.1}",
                    t.name(),
                    o.goodput_bps,
                    o.rtos,
                    o.retransmissions,
                    o.removed,
                    o.return_drops,
                    o.regenerated,
                    o.mean_return_queue
                )?;
                mbps.push(o.goodput_bps / 1e6);
            }
            grid.row(label(t), t.name(), &mbps);
        }
        let (table, s11) = grid.finish(name);
        tables.push(table);
        figs.line(
            name,
            &format!("Fig 11: aggregate goodput, three flows, hub queue {qn}"),
            "return link (kb/s)",
            "Mb/s",
            Some(RATES.iter().map(|r| r.1.to_string()).collect()),
            true,
            s11,
        )?;
    }
    super::write(&dir.join("fig11.csv"), &csv)?;
    Ok(tables)
}

/// A three-flow point with the hub queue `q` and, if `kept`, §5's duplicate refinement.
fn three_q(t: Technique, rate: &str, stagger: Duration, q: u32, kept: Option<u32>) -> Point {
    Point {
        forward_queue: Some(q),
        unsuppressed_duplicates: kept,
        ..Point::three(t, rate, stagger)
    }
}

fn refined_label(t: Technique, kept: Option<u32>) -> String {
    match kept {
        Some(n) => format!("{} + ≤ {n} duplicates", label(t)),
        None => label(t).to_string(),
    }
}

/// The first sample time at which `pred` holds.
fn first_at(o: &Outcome, pred: impl Fn(&Sample) -> bool) -> String {
    o.samples
        .iter()
        .find(|s| pred(s))
        .map_or("never".into(), |s| fixed(s.t, 2))
}

/// Fig 11 with §5's "at most 3 unsuppressed duplicate ACKs" (tables `fig11_refinement`,
/// `fig11_reversal_trace`, `fig11_reversal_timeline`; figures `fig11_refinement_bdp_queue`,
/// `fig11_reversal_return_queue`): what the refinement changes at both hub queues, and the
/// chain of events behind compaction's reversal at 9.6 kb/s with the 600-packet queue.
fn refinement(dir: &Path, figs: &mut Figures) -> Res<Vec<Table>> {
    let (su, co, cs) = (
        Technique::Suppression,
        Technique::Compaction,
        Technique::CompactionSpacing,
    );
    let k = Some(KEPT_DUPLICATES);
    let rows: [(Technique, u32, Option<u32>); 8] = [
        (su, BDP_QUEUE, None),
        (su, BDP_QUEUE, k),
        (co, BDP_QUEUE, None),
        (co, BDP_QUEUE, k),
        (cs, BDP_QUEUE, k),
        (su, DEFAULT_QUEUE, k),
        (co, DEFAULT_QUEUE, k),
        (cs, DEFAULT_QUEUE, k),
    ];
    let points: Vec<Point> = rows
        .iter()
        .flat_map(|&(t, q, kept)| {
            RATES
                .iter()
                .map(move |&(rate, _)| three_q(t, rate, Duration::ZERO, q, kept))
        })
        .collect();
    let outs = run_all(&points, None)?;
    let mut columns: Vec<String> = RATES.iter().map(|r| r.1.to_string()).collect();
    if let Some(last) = columns.last_mut() {
        last.push_str(" kb/s");
    }
    let mut grid = Grid::new("Mb/s, three flows", columns, 2);
    let mut csv = String::from("forward_queue,technique,unsuppressed_duplicates,return_kbps,goodput_bps,rtos,retransmissions,removed,return_drops\n");
    let mut fig = Vec::new();
    for (r, &(t, q, kept)) in rows.iter().enumerate() {
        let outs_r = &outs[r * RATES.len()..(r + 1) * RATES.len()];
        let mbps: Vec<f64> = outs_r.iter().map(|o| o.goodput_bps / 1e6).collect();
        for (o, &(_, kbps)) in outs_r.iter().zip(&RATES) {
            writeln!(
                csv,
                "{q},{},{},{kbps},{:.0},{},{},{},{}",
                t.name(),
                kept.map_or("all".into(), |n| n.to_string()),
                o.goodput_bps,
                o.rtos,
                o.retransmissions,
                o.removed,
                o.return_drops
            )?;
        }
        let legend = match kept {
            Some(n) => format!("{}_dup{n}", t.name()),
            None => t.name().to_string(),
        };
        grid.row(
            &format!("{}, hub queue {q}", refined_label(t, kept)),
            &legend,
            &mbps,
        );
        if q == BDP_QUEUE {
            fig.push((
                legend,
                mbps.iter()
                    .enumerate()
                    .map(|(i, v)| (i as f64, *v))
                    .collect(),
            ));
        }
    }
    super::write(&dir.join("fig11_refinement.csv"), &csv)?;
    let (table, _) = grid.finish("fig11_refinement");
    figs.line(
        "fig11_refinement_bdp_queue",
        "Fig 11, hub queue 600: every duplicate ACK kept vs at most 3",
        "return link (kb/s)",
        "Mb/s",
        Some(RATES.iter().map(|r| r.1.to_string()).collect()),
        true,
        fig,
    )?;
    let mut tables = vec![table];
    tables.extend(reversal(figs)?);
    Ok(tables)
}

/// Compaction vs suppression at 9.6 kb/s, three flows, 600-packet hub queue, with and without
/// the refinement: the events behind the reversal, from 50 ms samples.
fn reversal(figs: &mut Figures) -> Res<Vec<Table>> {
    let (su, co) = (Technique::Suppression, Technique::Compaction);
    let k = Some(KEPT_DUPLICATES);
    let runs = [(su, None), (co, None), (su, k), (co, k)];
    let points: Vec<Point> = runs
        .iter()
        .map(|&(t, kept)| three_q(t, "9.6kbps", Duration::ZERO, BDP_QUEUE, kept))
        .collect();
    let outs = run_all(&points, Some(Duration::from_millis(50)))?;
    let rows = runs
        .iter()
        .zip(&outs)
        .map(|(&(t, kept), o)| {
            let last = o.samples.last();
            let get = |f: fn(&Sample) -> u64| last.map_or(0, f);
            vec![
                refined_label(t, kept),
                fixed(o.goodput_bps / 1e6, 2),
                first_at(o, |s| s.forward_drops > 0),
                o.samples
                    .iter()
                    .take_while(|s| s.t <= 10.0 + 1e-9)
                    .last()
                    .map_or(0, |s| s.forward_drops)
                    .to_string(),
                o.forward_drops.to_string(),
                get(|s| s.return_duplicates).to_string(),
                get(|s| s.return_duplicates_removed).to_string(),
                first_at(o, |s| s.return_queue >= RETURN_QUEUE),
                o.return_drops.to_string(),
                get(|s| s.fast_retransmits).to_string(),
                o.rtos.to_string(),
                first_at(o, |s| s.rtos > 0),
                o.retransmissions.to_string(),
            ]
        })
        .collect();
    let trace = Table {
        name: "fig11_reversal_trace".into(),
        markdown: md_table(
            &[
                "9.6 kb/s, hub queue 600, three flows",
                "Mb/s",
                "first hub drop (s)",
                "hub drops by 10 s",
                "hub drops",
                "duplicate ACKs into the return queue",
                "of them removed",
                "return queue full (1000) from (s)",
                "ACKs dropped there",
                "fast retransmits",
                "RTOs",
                "first RTO (s)",
                "retransmissions",
            ],
            rows,
        ),
    };
    // Compaction without and with the refinement, second by second over the first 16 s.
    let (plain, refined) = (&outs[1], &outs[3]);
    let at = |o: &Outcome, t: f64| -> Option<Sample> {
        o.samples
            .iter()
            .take_while(|s| s.t <= t + 1e-9)
            .last()
            .cloned()
    };
    let mut steps = Vec::new();
    for sec in 5..=16u32 {
        let t = f64::from(sec);
        let (Some(a), Some(b)) = (at(plain, t), at(refined, t)) else {
            continue;
        };
        let cell = |s: &Sample| {
            [
                s.forward_drops.to_string(),
                s.return_duplicates.to_string(),
                s.return_queue.to_string(),
                s.return_drops.to_string(),
                s.rtos.to_string(),
            ]
        };
        let mut row = vec![sec.to_string()];
        row.extend(cell(&a));
        row.extend(cell(&b));
        steps.push(row);
    }
    let timeline = Table {
        name: "fig11_reversal_timeline".into(),
        markdown: md_table(
            &[
                "t (s)",
                "hub drops",
                "dup ACKs in",
                "return queue",
                "ACKs dropped",
                "RTOs",
                "≤ 3 dups: hub drops",
                "dup ACKs in",
                "return queue",
                "ACKs dropped",
                "RTOs",
            ],
            steps,
        ),
    };
    let series = runs
        .iter()
        .zip(&outs)
        .map(|(&(t, kept), o)| {
            let name = match kept {
                Some(n) => format!("{}_dup{n}", t.name()),
                None => t.name().to_string(),
            };
            let pts = o
                .samples
                .iter()
                .filter(|s| s.t <= 30.0)
                .map(|s| (s.t, s.return_queue as f64))
                .collect();
            (name, pts)
        })
        .collect();
    figs.line(
        "fig11_reversal_return_queue",
        "Client return queue, three flows, 9.6 kb/s, hub queue 600",
        "time (s)",
        "packets",
        None,
        false,
        series,
    )?;
    Ok(vec![trace, timeline])
}

/// Fig 10 at the paper's spacing: flows 10 ms apart (and 10 s, as before), hub queue 600 (and
/// one lossless run).
fn fig10_10ms(figs: &mut Figures) -> Res<Table> {
    let (co, cs) = (Technique::Compaction, Technique::CompactionSpacing);
    let ms = Duration::from_millis;
    let k = Some(KEPT_DUPLICATES);
    let runs = [
        (co, ms(10), None, BDP_QUEUE),
        (cs, ms(10), None, BDP_QUEUE),
        (cs, ms(10), k, BDP_QUEUE),
        (cs, ms(10), None, DEFAULT_QUEUE),
        (co, ms(10_000), None, BDP_QUEUE),
        (cs, ms(10_000), None, BDP_QUEUE),
    ];
    let points: Vec<Point> = runs
        .iter()
        .map(|&(t, stagger, kept, q)| three_q(t, "9.6kbps", stagger, q, kept))
        .collect();
    let outs = run_all(&points, Some(Duration::from_millis(50)))?;
    let per_flow = |o: &Outcome, f: fn(&crate::experiments::samaraweera::FlowOutcome) -> String| {
        o.flows.iter().map(f).collect::<Vec<_>>().join(" / ")
    };
    let rows = runs
        .iter()
        .zip(&outs)
        .map(|(&(t, stagger, kept, q), o)| {
            let stagger_s = stagger.as_nanos() as f64 / 1e9;
            vec![
                refined_label(t, kept),
                q.to_string(),
                fixed(stagger_s, 2),
                fixed(o.goodput_bps / 1e6, 2),
                per_flow(o, |f| fixed(f.delivered as f64 / 1e6, 1)),
                first_at(o, |s| s.forward_drops > 0),
                o.forward_drops.to_string(),
                per_flow(o, |f| f.rtos.to_string()),
                per_flow(o, |f| f.retransmissions.to_string()),
            ]
        })
        .collect();
    let mut s10 = Vec::new();
    for (k, name) in [(0, "compaction"), (1, "spacing")] {
        for f in 0..3 {
            let pts = outs[k]
                .samples
                .iter()
                .map(|s| (s.t, s.acked[f] as f64 / 1e6))
                .collect();
            s10.push((format!("flow {} ({name})", f + 1), pts));
        }
    }
    figs.line(
        "fig10_seq_staggered_10ms",
        "Fig 10: flows 10 ms apart, 9.6 kb/s, 600-packet hub queue",
        "time (s)",
        "MB acknowledged",
        None,
        false,
        s10,
    )?;
    Ok(Table {
        name: "fig10_stagger".into(),
        markdown: md_table(
            &[
                "three flows, 9.6 kb/s, 60 s",
                "hub queue",
                "stagger (s)",
                "Mb/s",
                "MB delivered, flows 1 / 2 / 3",
                "first hub drop (s)",
                "hub drops",
                "RTOs per flow",
                "retransmissions per flow",
            ],
            rows,
        ),
    })
}

/// Fig 9's claim (spacing suppresses compaction's sharp queue peaks), measured from 1 ms
/// samples of the hub queue: three flows at 9.6 kb/s, hub queue 2200 (Fig 9), and one flow
/// (Fig 7) for comparison.
fn fig9_peaks() -> Res<Table> {
    let (co, cs) = (Technique::Compaction, Technique::CompactionSpacing);
    let points = [
        Point::three(co, "9.6kbps", Duration::ZERO),
        Point::three(cs, "9.6kbps", Duration::ZERO),
        Point::single(co, "9.6kbps"),
        Point::single(cs, "9.6kbps"),
    ];
    let outs = run_all(&points, Some(Duration::from_millis(1)))?;
    let rows = points
        .iter()
        .zip(&outs)
        .map(|(p, o)| {
            let q: Vec<usize> = o.samples.iter().map(|s| s.forward_queue).collect();
            let arr: Vec<u64> = o.samples.iter().map(|s| s.forward_arrivals).collect();
            // Largest rise of the queue within 50 ms, and packets arriving within 10 ms.
            let rise = (0..q.len())
                .map(|i| {
                    q[i].saturating_sub(
                        q[i.saturating_sub(50)..=i]
                            .iter()
                            .copied()
                            .min()
                            .unwrap_or(0),
                    )
                })
                .max()
                .unwrap_or(0);
            let burst = (10..arr.len())
                .map(|i| arr[i] - arr[i - 10])
                .max()
                .unwrap_or(0);
            let steady: Vec<usize> = o
                .samples
                .iter()
                .filter(|s| s.t > 20.0)
                .map(|s| s.forward_queue)
                .collect();
            let rises = (0..q.len())
                .filter(|&i| i >= 50 && i % 50 == 0)
                .filter(|&i| q[i].saturating_sub(q[i - 50]) >= 20)
                .count();
            vec![
                format!(
                    "{}, {} flow{}",
                    label(p.technique),
                    p.flows,
                    if p.flows > 1 { "s" } else { "" }
                ),
                fixed(o.goodput_bps / 1e6, 2),
                o.max_forward_queue.to_string(),
                steady.iter().copied().max().unwrap_or(0).to_string(),
                rise.to_string(),
                rises.to_string(),
                burst.to_string(),
            ]
        })
        .collect();
    Ok(Table {
        name: "fig9_peaks".into(),
        markdown: md_table(
            &[
                "9.6 kb/s, hub queue 2200, 60 s",
                "Mb/s",
                "hub queue peak",
                "peak after 20 s",
                "largest rise in 50 ms",
                "50 ms steps rising ≥ 20",
                "most packets into the hub queue in 10 ms",
            ],
            rows,
        ),
    })
}
