//! Samaraweera 1999, figures 3–12. Writes CSV and PNG into the directory given (default
//! `out/samaraweera`):
//!
//! ```text
//! cargo run --release -p satpep-sim --example samaraweera -- out/samaraweera
//! ```
//!
//! - `single_<rate>.csv` (t, technique, cwnd, acked, queues; one flow) and from it
//!   `fig3_cwnd.png`, `fig4_seq.png`, `fig5_bytes_zoom.png`, `fig6_cwnd_spacing.png`,
//!   `fig7_fwd_queue_spacing.png` (9.6 kb/s), `fig8_430k_queue.png`, `fig8_430k_cwnd.png`;
//! - `three_flows.csv`, `fig9_fwd_queue_3flows.png`, `fig10_seq_staggered.png`;
//! - `fig11.csv`, `fig11_throughput.png` (hub queue 2200, lossless) and
//!   `fig11_throughput_bdp_queue.png` (600): aggregate goodput of three flows vs return rate;
//! - `fig12_return_queue_32k.png`: return-interface queue at 32 kb/s, three flows.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use satpep_output::plot::line_chart_png;
use satpep_proto::Duration;
use satpep_sim::experiments::samaraweera::{run, Outcome, Point, Technique};

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

/// The paper's techniques (filtering is plotted only in fig 11).
const PAPER: [Technique; 4] = [
    Technique::Unmodified,
    Technique::HeaderCompression,
    Technique::Suppression,
    Technique::Compaction,
];

/// Run every point on all cores; results in input order.
fn run_all(points: &[Point], every: Option<Duration>) -> Vec<Outcome> {
    satpep_sim::parallel::map_in_order(points, 0, |_, p| {
        run(p, every).unwrap_or_else(|e| panic!("{p:?}: {e}"))
    })
}

type Series = Vec<(String, Vec<(f64, f64)>)>;

fn series(
    techs: &[Technique],
    outs: &[&Outcome],
    t_max: f64,
    y: impl Fn(&satpep_sim::experiments::samaraweera::Sample) -> f64,
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

fn chart(dir: &Path, file: &str, title: &str, x: &str, y: &str, s: Series) -> Result<(), String> {
    line_chart_png(&dir.join(file), title, x, y, None, false, s).map_err(|e| e.to_string())
}

fn samples_csv(techs: &[Technique], outs: &[&Outcome]) -> String {
    let mut csv =
        String::from("technique,t,flow,cwnd_bytes,acked_bytes,forward_queue,return_queue\n");
    for (t, o) in techs.iter().zip(outs) {
        for s in &o.samples {
            for f in 0..s.cwnd.len() {
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

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let out = PathBuf::from(
        std::env::args()
            .nth(1)
            .unwrap_or_else(|| "out/samaraweera".into()),
    );
    std::fs::create_dir_all(&out)?;
    let every = Some(Duration::from_millis(50));

    // ---- Figs 3–7: one flow at 9.6 kb/s, every technique; fig 8: 430 kb/s ----
    let single: Vec<Point> = Technique::ALL
        .iter()
        .map(|&t| Point::single(t, "9.6kbps"))
        .chain(
            [Technique::Compaction, Technique::CompactionSpacing]
                .iter()
                .map(|&t| Point::single(t, "430kbps")),
        )
        .collect();
    let outs = run_all(&single, every);
    let by = |t: Technique, rate: &str| -> &Outcome {
        let i = single
            .iter()
            .position(|p| p.technique == t && p.return_rate == rate)
            .expect("point present");
        &outs[i]
    };
    let all: Vec<Technique> = Technique::ALL.to_vec();
    let at96: Vec<&Outcome> = all.iter().map(|&t| by(t, "9.6kbps")).collect();
    std::fs::write(out.join("single_9.6kbps.csv"), samples_csv(&all, &at96))?;
    let paper96: Vec<&Outcome> = PAPER.iter().map(|&t| by(t, "9.6kbps")).collect();
    let kb = |b: u64| b as f64 / 1024.0;
    chart(
        &out,
        "fig3_cwnd.png",
        "Fig 3: cwnd, one flow, 9.6 kb/s return",
        "time (s)",
        "cwnd (KB)",
        series(&PAPER, &paper96, 60.0, |s| kb(s.cwnd[0])),
    )?;
    chart(
        &out,
        "fig4_seq.png",
        "Fig 4: bytes acknowledged, one flow, 9.6 kb/s",
        "time (s)",
        "MB",
        series(&PAPER, &paper96, 60.0, |s| s.acked[0] as f64 / 1e6),
    )?;
    chart(
        &out,
        "fig5_bytes_zoom.png",
        "Fig 5: first 10 s",
        "time (s)",
        "MB",
        series(&PAPER, &paper96, 10.0, |s| s.acked[0] as f64 / 1e6),
    )?;
    let sp = [Technique::Compaction, Technique::CompactionSpacing];
    let sp96: Vec<&Outcome> = sp.iter().map(|&t| by(t, "9.6kbps")).collect();
    chart(
        &out,
        "fig6_cwnd_spacing.png",
        "Fig 6: cwnd, compaction vs + spacing, 9.6 kb/s",
        "time (s)",
        "cwnd (KB)",
        series(&sp, &sp96, 20.0, |s| kb(s.cwnd[0])),
    )?;
    chart(
        &out,
        "fig7_fwd_queue_spacing.png",
        "Fig 7: hub satellite queue, 9.6 kb/s",
        "time (s)",
        "packets",
        series(&sp, &sp96, 20.0, |s| s.forward_queue as f64),
    )?;
    let sp430: Vec<&Outcome> = sp.iter().map(|&t| by(t, "430kbps")).collect();
    std::fs::write(out.join("single_430kbps.csv"), samples_csv(&sp, &sp430))?;
    chart(
        &out,
        "fig8_430k_queue.png",
        "Fig 8: hub satellite queue, 430 kb/s return",
        "time (s)",
        "packets",
        series(&sp, &sp430, 20.0, |s| s.forward_queue as f64),
    )?;
    chart(
        &out,
        "fig8_430k_cwnd.png",
        "Fig 8: cwnd, 430 kb/s return",
        "time (s)",
        "cwnd (KB)",
        series(&sp, &sp430, 20.0, |s| kb(s.cwnd[0])),
    )?;
    let mut table = String::from("one flow, 60 s: technique, return rate, goodput (Mb/s), RTOs, retx, removed, regenerated, max fwd q, mean ret q\n");
    for (p, o) in single.iter().zip(&outs) {
        writeln!(
            table,
            "{:>20} {:>8} {:>6.2} {:>4} {:>6} {:>7} {:>7} {:>4} {:>6.1}",
            p.technique.name(),
            p.return_rate,
            o.goodput_bps / 1e6,
            o.rtos,
            o.retransmissions,
            o.removed,
            o.regenerated,
            o.max_forward_queue,
            o.mean_return_queue
        )?;
    }

    // ---- Figs 9, 10, 12: three flows ----
    let three_q = |t: Technique, rate: &str, stagger_ms: u64, q: Option<u32>| Point {
        technique: t,
        return_rate: rate.into(),
        flows: 3,
        stagger: Duration::from_millis(stagger_ms),
        duration: Duration::from_secs(60),
        forward_queue: q,
    };
    let three = |t: Technique, rate: &str, stagger_ms: u64| three_q(t, rate, stagger_ms, None);
    let pts3 = vec![
        three(Technique::Compaction, "9.6kbps", 0),
        three(Technique::CompactionSpacing, "9.6kbps", 0),
        three_q(Technique::Compaction, "9.6kbps", 10_000, Some(BDP_QUEUE)),
        three_q(
            Technique::CompactionSpacing,
            "9.6kbps",
            10_000,
            Some(BDP_QUEUE),
        ),
        three(Technique::Unmodified, "32kbps", 0),
        three(Technique::HeaderCompression, "32kbps", 0),
        three(Technique::Suppression, "32kbps", 0),
        three(Technique::Compaction, "32kbps", 0),
    ];
    let o3 = run_all(&pts3, every);
    chart(
        &out,
        "fig9_fwd_queue_3flows.png",
        "Fig 9: hub satellite queue, three flows, 9.6 kb/s",
        "time (s)",
        "packets",
        series(&sp, &[&o3[0], &o3[1]], 30.0, |s| s.forward_queue as f64),
    )?;
    let mut s10 = Vec::new();
    for (k, label) in [(2, "compaction"), (3, "spacing")] {
        for f in 0..3 {
            let pts = o3[k]
                .samples
                .iter()
                .map(|s| (s.t, s.acked[f] as f64 / 1e6))
                .collect();
            s10.push((format!("flow {} ({label})", f + 1), pts));
        }
    }
    line_chart_png(
        &out.join("fig10_seq_staggered.png"),
        "Fig 10: flows 10 s apart, 9.6 kb/s return, 600-packet hub queue",
        "time (s)",
        "MB acknowledged",
        None,
        false,
        s10,
    )
    .map_err(|e| e.to_string())?;
    chart(
        &out,
        "fig12_return_queue_32k.png",
        "Fig 12: client return queue, three flows, 32 kb/s",
        "time (s)",
        "packets",
        series(&PAPER, &[&o3[4], &o3[5], &o3[6], &o3[7]], 60.0, |s| {
            s.return_queue as f64
        }),
    )?;
    let techs3: Vec<Technique> = pts3.iter().map(|p| p.technique).collect();
    let refs3: Vec<&Outcome> = o3.iter().collect();
    std::fs::write(out.join("three_flows.csv"), samples_csv(&techs3, &refs3))?;
    writeln!(table, "\nthree flows, 60 s:")?;
    for (p, o) in pts3.iter().zip(&o3) {
        writeln!(
            table,
            "{:>20} {:>8} fwd q {:>4} stagger {:>5} ms {:>6.2} Mb/s  RTOs {:>3} retx {:>5} \
             mean ret q {:>6.1} max fwd q {}",
            p.technique.name(),
            p.return_rate,
            p.forward_queue.unwrap_or(2200),
            p.stagger.as_nanos() / 1_000_000,
            o.goodput_bps / 1e6,
            o.rtos,
            o.retransmissions,
            o.mean_return_queue,
            o.max_forward_queue
        )?;
    }

    // ---- Fig 11: aggregate goodput of three flows vs return rate, two hub queues ----
    let mut csv = String::from(
        "forward_queue,technique,return_kbps,goodput_bps,rtos,retransmissions,removed,\
         return_drops,regenerated,mean_return_queue\n",
    );
    for (q, file) in [
        (None, "fig11_throughput.png"),
        (Some(BDP_QUEUE), "fig11_throughput_bdp_queue.png"),
    ] {
        let pts11: Vec<Point> = Technique::ALL
            .iter()
            .flat_map(|&t| RATES.iter().map(move |&(rate, _)| (t, rate)))
            .map(|(t, rate)| three_q(t, rate, 0, q))
            .collect();
        let o11 = run_all(&pts11, None);
        let qn = q.unwrap_or(2200);
        writeln!(
            table,
            "\nFig 11, aggregate goodput of three flows (Mb/s), hub queue {qn} packets:"
        )?;
        writeln!(
            table,
            "{:>20} {}",
            "return kb/s",
            RATES
                .iter()
                .map(|r| format!("{:>7}", r.1))
                .collect::<String>()
        )?;
        let mut s11 = Vec::new();
        for &t in &Technique::ALL {
            let mut pts = Vec::new();
            let mut row = format!("{:>20} ", t.name());
            for (i, &(rate, kbps)) in RATES.iter().enumerate() {
                let j = pts11
                    .iter()
                    .position(|p| p.technique == t && p.return_rate == rate)
                    .expect("point");
                let o = &o11[j];
                writeln!(
                    csv,
                    "{},{},{},{:.0},{},{},{},{},{},{:.1}",
                    qn,
                    t.name(),
                    kbps,
                    o.goodput_bps,
                    o.rtos,
                    o.retransmissions,
                    o.removed,
                    o.return_drops,
                    o.regenerated,
                    o.mean_return_queue
                )?;
                write!(row, "{:>7.2}", o.goodput_bps / 1e6)?;
                pts.push((i as f64, o.goodput_bps / 1e6));
            }
            writeln!(table, "{row}")?;
            s11.push((t.name().to_string(), pts));
        }
        line_chart_png(
            &out.join(file),
            &format!("Fig 11: aggregate goodput, three flows, 60 s, hub queue {qn}"),
            "return link (kb/s)",
            "Mb/s",
            Some(RATES.iter().map(|r| format!("{}", r.1)).collect()),
            true,
            s11,
        )
        .map_err(|e| e.to_string())?;
    }
    std::fs::write(out.join("fig11.csv"), csv)?;
    std::fs::write(out.join("summary.txt"), &table)?;
    print!("{table}");
    Ok(())
}
