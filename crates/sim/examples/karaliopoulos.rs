//! Karaliopoulos et al., Figs. 2–4, plus the sensitivity to the satellite rate the paper does not
//! give. Writes CSV and PNG into the directory given (default `out/karaliopoulos`):
//!
//! ```text
//! cargo run --release -p satpep-sim --example karaliopoulos -- out/karaliopoulos
//! ```
//!
//! - `fig2.csv` (one row per run) and `fig2_<size>_<rate>.png`: goodput vs PER, mean of 3 seeds;
//! - `fig3.csv`, `fig3_split.png`, `fig3_snoop.png`: the windows of split Reno–SACK's gateway
//!   sender and of Snoop's (Internet) sender, 4 MB;
//! - `fig4.csv`, `fig4_window.png`, `fig4_buffer.png`: split Reno–DelDupACKs' gateway window and
//!   buffer, 4 MB.

use std::fmt::Write as _;
use std::path::PathBuf;

use satpep_output::plot::line_chart_png;
use satpep_proto::Duration;
use satpep_sim::experiments::karaliopoulos::{run, Outcome, Point, Scheme};

const PERS: [f64; 8] = [0.0, 1e-4, 5e-4, 1e-3, 5e-3, 1e-2, 2e-2, 5e-2];
const SEEDS: [u64; 3] = [1, 2, 3];
const DUPACK_DELAY_MS: u64 = 600;

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

/// Run every point on all cores; results in input order.
fn run_all(points: &[Point], every: Option<Duration>) -> Vec<Outcome> {
    satpep_sim::parallel::map_in_order(points, 0, |_, p| {
        run(p, every).unwrap_or_else(|e| panic!("{p:?}: {e}"))
    })
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let out = PathBuf::from(
        std::env::args()
            .nth(1)
            .unwrap_or_else(|| "out/karaliopoulos".into()),
    );
    std::fs::create_dir_all(&out)?;
    let cats: Vec<String> = PERS.iter().map(|p| format!("{p:e}")).collect();

    // ---- Fig. 2 and the rate sensitivity ----
    let mut cases: Vec<(u64, &str)> = vec![
        (4_000_000, "2Mbps"),
        (8_000_000, "2Mbps"),
        (12_000_000, "2Mbps"),
    ];
    cases.extend([(4_000_000, "1Mbps"), (4_000_000, "10Mbps")]);
    let mut points = Vec::new();
    for &(bytes, rate) in &cases {
        for scheme in Scheme::ALL {
            for per in PERS {
                for seed in SEEDS {
                    points.push(point(scheme, per, bytes, rate, seed));
                }
            }
        }
    }
    let outcomes = run_all(&points, None);
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
    std::fs::write(out.join("fig2.csv"), &csv)?;
    let mut table = String::new();
    for &(bytes, rate) in &cases {
        let mut series = Vec::new();
        writeln!(
            table,
            "\n{} MB, satellite {rate}: mean goodput (kb/s) over seeds {SEEDS:?}",
            bytes / 1_000_000
        )?;
        writeln!(
            table,
            "{:>18} {}",
            "PER",
            cats.iter().map(|c| format!("{c:>8}")).collect::<String>()
        )?;
        for scheme in Scheme::ALL {
            let mut pts = Vec::new();
            let mut row = format!("{:>18} ", scheme.name());
            for (i, per) in PERS.iter().enumerate() {
                let g: Vec<f64> = points
                    .iter()
                    .zip(&outcomes)
                    .filter(|(p, _)| {
                        p.scheme == scheme && p.per == *per && p.bytes == bytes && p.rate == rate
                    })
                    .map(|(_, o)| o.goodput_bps)
                    .collect();
                let mean = g.iter().sum::<f64>() / g.len().max(1) as f64;
                write!(row, "{:>8.0}", mean / 1e3)?;
                pts.push((i as f64, mean / 1e3));
            }
            writeln!(table, "{row}")?;
            series.push((scheme.name().to_string(), pts));
        }
        line_chart_png(
            &out.join(format!("fig2_{}MB_{rate}.png", bytes / 1_000_000)),
            &format!("Goodput vs PER, {} MB, satellite {rate}", bytes / 1_000_000),
            "packet error rate on the satellite hop",
            "goodput (kb/s)",
            Some(cats.clone()),
            true,
            series,
        )?;
    }
    std::fs::write(out.join("fig2_table.txt"), &table)?;
    print!("{table}");

    // ---- Figs. 3 and 4: time series, 4 MB, seed 1 ----
    let series_pers = [1e-3, 1e-2, 5e-2];
    let ts_points: Vec<Point> = [
        Scheme::SplitRenoSack,
        Scheme::Snoop,
        Scheme::SplitDelDupAcks,
    ]
    .into_iter()
    .flat_map(|s| series_pers.map(|per| point(s, per, 4_000_000, "2Mbps", 1)))
    .collect();
    let ts = run_all(&ts_points, Some(Duration::from_millis(100)));
    let mut f3 =
        String::from("scheme,per,time_s,sender_cwnd_bytes,gw_cwnd_bytes,gw_in_flight_bytes\n");
    let mut f4 = String::from("per,time_s,gw_cwnd_bytes,gw_in_flight_bytes,gw_buffer_bytes\n");
    let (mut s3_split, mut s3_snoop, mut s4_win, mut s4_buf) = (vec![], vec![], vec![], vec![]);
    for (p, o) in ts_points.iter().zip(&ts) {
        let label = format!("PER {:e}", p.per);
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
        let pk = |f: fn(&satpep_sim::experiments::karaliopoulos::Sample) -> u64| {
            o.samples
                .iter()
                .map(|s| (s.t, f(s) as f64 / 1000.0))
                .collect::<Vec<_>>()
        };
        match p.scheme {
            Scheme::SplitRenoSack => s3_split.push((label, pk(|s| s.gw_cwnd))),
            Scheme::Snoop => s3_snoop.push((label, pk(|s| s.sender_cwnd))),
            _ => {
                s4_win.push((label.clone(), pk(|s| s.gw_cwnd)));
                s4_buf.push((label, pk(|s| s.gw_buffer)));
            }
        }
    }
    std::fs::write(out.join("fig3.csv"), f3)?;
    std::fs::write(out.join("fig4.csv"), f4)?;
    line_chart_png(
        &out.join("fig3_split.png"),
        "Split Reno-SACK: gateway sender's cwnd, 4 MB",
        "time (s)",
        "cwnd (packets of 1000 B)",
        None,
        false,
        s3_split,
    )?;
    line_chart_png(
        &out.join("fig3_snoop.png"),
        "Snoop: sender's cwnd, 4 MB",
        "time (s)",
        "cwnd (packets of 1000 B)",
        None,
        false,
        s3_snoop,
    )?;
    line_chart_png(
        &out.join("fig4_window.png"),
        "Split Reno-DelDupACKs: gateway sender's cwnd, 4 MB",
        "time (s)",
        "cwnd (packets of 1000 B)",
        None,
        false,
        s4_win,
    )?;
    line_chart_png(
        &out.join("fig4_buffer.png"),
        "Split Reno-DelDupACKs: gateway buffer, 4 MB",
        "time (s)",
        "buffer (KB)",
        None,
        false,
        s4_buf,
    )?;
    println!("\nwrote {}", out.display());
    Ok(())
}
