//! Figures and tables of the TCP-SuperCharger reproduction (Lee, Yum & Wan), drawn from the
//! `flows.csv` files that `satpep sim` wrote. The scripts in `scenarios/lee/` run the
//! simulations and then call this:
//!
//! ```text
//! cargo run --release -p satpep-sim --example lee -- table2 OUT   # OUT/<case>/flows.csv
//! cargo run --release -p satpep-sim --example lee -- slow OUT
//! cargo run --release -p satpep-sim --example lee -- sweep OUT    # OUT/rtt-*/run-*/flows.csv
//! cargo run --release -p satpep-sim --example lee -- table1 OUT   # OUT/run-*/flows.csv
//! ```
//!
//! Every number printed is read from the simulator's own time series: goodput over a window is
//! the difference of `delivered_bytes` at its two ends.

use std::collections::BTreeMap;
use std::error::Error;
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};

use satpep_output::plot::line_chart_png;

type Res<T> = Result<T, Box<dyn Error>>;

/// One row of flows.csv, the columns we use.
#[derive(Clone, Copy, Debug)]
struct Row {
    t: f64,
    srtt_ms: Option<f64>,
    rwnd: f64,
    delivered: f64,
}

/// Rows of flow `flow` in `dir/flows.csv`.
fn read_flow(dir: &Path, flow: &str) -> Res<Vec<Row>> {
    let text = fs::read_to_string(dir.join("flows.csv"))
        .map_err(|e| format!("{}: {e}", dir.join("flows.csv").display()))?;
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().ok_or("empty flows.csv")?.split(',').collect();
    let col = |name: &str| {
        header
            .iter()
            .position(|h| *h == name)
            .ok_or_else(|| format!("flows.csv has no column {name}"))
    };
    let (ct, cf, cs, cr, cd) = (
        col("time_s")?,
        col("flow")?,
        col("srtt_ms")?,
        col("rwnd_bytes")?,
        col("delivered_bytes")?,
    );
    let mut rows = Vec::new();
    for line in lines {
        let f: Vec<&str> = line.split(',').collect();
        if f.get(cf) != Some(&flow) {
            continue;
        }
        let num = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok());
        rows.push(Row {
            t: num(ct).unwrap_or(0.0),
            srtt_ms: num(cs),
            rwnd: num(cr).unwrap_or(0.0),
            delivered: num(cd).unwrap_or(0.0),
        });
    }
    Ok(rows)
}

/// Goodput in b/s between `t0` and `t1` (the samples at or just after each).
fn goodput(rows: &[Row], t0: f64, t1: f64) -> f64 {
    let at = |t: f64| {
        rows.iter()
            .find(|r| r.t >= t - 1e-9)
            .or(rows.last())
            .map_or(0.0, |r| r.delivered)
    };
    (at(t1) - at(t0)) * 8.0 / (t1 - t0)
}

/// Mean smoothed RTT (ms) of the samples in [t0, t1].
fn mean_srtt(rows: &[Row], t0: f64, t1: f64) -> f64 {
    let v: Vec<f64> = rows
        .iter()
        .filter(|r| r.t >= t0 && r.t <= t1)
        .filter_map(|r| r.srtt_ms)
        .collect();
    v.iter().sum::<f64>() / v.len().max(1) as f64
}

/// Goodput per `step` seconds, as (time, Mb/s).
fn throughput_series(rows: &[Row], step: f64) -> Vec<(f64, f64)> {
    let end = rows.last().map_or(0.0, |r| r.t);
    let mut pts = Vec::new();
    let mut t = 0.0;
    while t + step <= end + 1e-9 {
        pts.push((t + step, goodput(rows, t, t + step) / 1e6));
        t += step;
    }
    pts
}

/// Table 2 / Figs 8–9: five cases in OUT/<case>/.
fn table2(out: &Path) -> Res<()> {
    // (directory, label, paper's throughput in Mb/s)
    let cases = [
        ("gw-64KB", "64 KB + gateway", 23.67),
        ("64KB", "64 KB", 0.53),
        ("1MB", "1 MB", 8.69),
        ("2MB", "2 MB", 17.39),
        ("4MB", "4 MB", 23.72),
    ];
    let mut csv = String::from(
        "case,gateway,throughput_25_40_bps,utilisation,paper_throughput_bps,paper_utilisation\n",
    );
    let (mut fig8, mut fig9) = (Vec::new(), Vec::new());
    println!(
        "{:<18} {:>12} {:>8} {:>12} {:>8}",
        "case", "ours Mb/s", "util", "paper Mb/s", "util"
    );
    for (dir, label, paper) in cases {
        let rows = read_flow(&out.join(dir), "bulk")?;
        let tput = goodput(&rows, 25.0, 40.0);
        let util = tput / 24e6;
        println!(
            "{label:<18} {:>12.2} {:>7.1}% {paper:>12.2} {:>7.1}%",
            tput / 1e6,
            util * 100.0,
            paper / 24.0 * 100.0
        );
        writeln!(
            csv,
            "{dir},{},{tput:.0},{util:.4},{:.0},{:.4}",
            dir.starts_with("gw"),
            paper * 1e6,
            paper / 24.0
        )?;
        fig8.push((label.to_string(), throughput_series(&rows, 1.0)));
        fig9.push((
            label.to_string(),
            rows.iter().map(|r| (r.t, r.rwnd / 1024.0)).collect(),
        ));
    }
    fs::write(out.join("table2.csv"), csv)?;
    line_chart_png(
        &out.join("lee_fig8_throughput.png"),
        "Fig 8: CUBIC over 24 Mb/s, RTT 1 s (goodput per second)",
        "time (s)",
        "goodput (Mb/s)",
        None,
        false,
        fig8,
    )?;
    line_chart_png(
        &out.join("lee_fig9_window.png"),
        "Fig 9: window the sender sees (receiver's, or the gateway's virtual window)",
        "time (s)",
        "advertised window (KiB)",
        None,
        false,
        fig9,
    )?;
    Ok(())
}

/// Slow receiver application: OUT/gw and OUT/plain.
fn slow(out: &Path) -> Res<()> {
    let mut tput = Vec::new();
    let mut wnd = Vec::new();
    let mut csv = String::from("case,goodput_bps,completion_s\n");
    for (dir, label) in [("gw", "gateway"), ("plain", "no gateway")] {
        let rows = read_flow(&out.join(dir), "bulk")?;
        let done = rows
            .iter()
            .find(|r| r.delivered >= 10_000_000.0)
            .map(|r| r.t);
        let end = done.unwrap_or_else(|| rows.last().map_or(0.0, |r| r.t));
        let g = goodput(&rows, 0.0, end);
        println!(
            "{label:<12} goodput {:.2} Mb/s, 10 MB done at {}",
            g / 1e6,
            done.map_or("-".into(), |d| format!("{d:.1} s"))
        );
        writeln!(
            csv,
            "{dir},{g:.0},{}",
            done.map_or(String::new(), |d| d.to_string())
        )?;
        tput.push((label.to_string(), throughput_series(&rows, 1.0)));
        wnd.push((
            label.to_string(),
            rows.iter().map(|r| (r.t, r.rwnd / 1024.0)).collect(),
        ));
    }
    fs::write(out.join("slow_app.csv"), csv)?;
    line_chart_png(
        &out.join("lee_slow_app_throughput.png"),
        "Receiver application reads 5 Mb/s, 64 KB buffer, 24 Mb/s, RTT 1 s",
        "time (s)",
        "goodput (Mb/s)",
        None,
        false,
        tput,
    )?;
    line_chart_png(
        &out.join("lee_slow_app_window.png"),
        "Receiver application reads 5 Mb/s: window the sender sees",
        "time (s)",
        "advertised window (KiB)",
        None,
        false,
        wnd,
    )?;
    Ok(())
}

/// Parse `"24Mbps"`-style rates from sweep.csv into Mb/s.
fn mbps(s: &str) -> f64 {
    let s = s.trim_matches('"');
    let (num, unit) = s.split_at(s.find(|c: char| c.is_ascii_alphabetic()).unwrap_or(s.len()));
    let v: f64 = num.parse().unwrap_or(0.0);
    match unit.to_ascii_lowercase().as_str() {
        "gbps" => v * 1e3,
        "kbps" => v / 1e3,
        _ => v,
    }
}

/// Sweep of RTT × rate, with and without: OUT/rtt-<ms>/sweep.csv + run-*/flows.csv.
fn sweep(out: &Path) -> Res<()> {
    let mut csv = String::from("rtt_ms,rate_mbps,gateway,goodput_bps,utilisation\n");
    // (gateway, rate) -> points (rtt, utilisation)
    let mut series: BTreeMap<(bool, u64), Vec<(f64, f64)>> = BTreeMap::new();
    let mut dirs: Vec<PathBuf> = fs::read_dir(out)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join("sweep.csv").is_file())
        .collect();
    dirs.sort();
    for dir in dirs {
        let name = dir.file_name().and_then(|n| n.to_str()).unwrap_or("");
        let rtt_ms: f64 = name.trim_start_matches("rtt-").parse().unwrap_or(0.0);
        let text = fs::read_to_string(dir.join("sweep.csv"))?;
        let mut lines = text.lines();
        let header: Vec<String> = lines
            .next()
            .ok_or("empty sweep.csv")?
            .split(',')
            .map(str::to_owned)
            .collect();
        let rate_col = header
            .iter()
            .position(|h| h == "link.forward.rate")
            .ok_or("sweep.csv: no link.forward.rate")?;
        for line in lines {
            let run: usize = line.split(',').next().unwrap_or("0").parse()?;
            let gateway = line.contains("supercharger");
            let rate = mbps(line.split(',').nth(rate_col).unwrap_or("0"));
            let rows = read_flow(&dir.join(format!("run-{run:03}")), "bulk")?;
            let end = rows.last().map_or(0.0, |r| r.t);
            let g = goodput(&rows, end - 15.0, end);
            let util = g / (rate * 1e6);
            writeln!(csv, "{rtt_ms},{rate},{gateway},{g:.0},{util:.4}")?;
            series
                .entry((gateway, rate as u64))
                .or_default()
                .push((rtt_ms, util * 100.0));
        }
    }
    fs::write(out.join("sweep.csv"), &csv)?;
    print!("{csv}");
    // Series with identical points (the gateway's, typically) are drawn once, named by the
    // range of rates they cover.
    let mut merged: Vec<(String, Vec<(f64, f64)>)> = Vec::new();
    let mut rates_of: Vec<(bool, Vec<u64>)> = Vec::new();
    for ((gw, rate), mut pts) in series {
        pts.sort_by(|a, b| a.0.total_cmp(&b.0));
        // Equal to 0.1 % is equal on the chart.
        for p in &mut pts {
            p.1 = (p.1 * 10.0).round() / 10.0;
        }
        match merged.iter().position(|(_, p)| *p == pts) {
            Some(i) if rates_of[i].0 == gw => rates_of[i].1.push(rate),
            _ => {
                merged.push((String::new(), pts));
                rates_of.push((gw, vec![rate]));
            }
        }
    }
    let series = merged
        .into_iter()
        .zip(rates_of)
        .map(|((_, pts), (gw, rates))| {
            let who = if gw { "gateway" } else { "64 KB" };
            let r = match (rates.first(), rates.last()) {
                (Some(a), Some(b)) if a != b => format!("{a}–{b}"),
                (Some(a), _) => a.to_string(),
                _ => String::new(),
            };
            (format!("{who}, {r} Mb/s"), pts)
        })
        .collect();
    line_chart_png(
        &out.join("lee_sweep_utilisation.png"),
        "Utilisation over the last 15 s of 80, 64 KB receiver window, with and without the gateway",
        "RTT (ms)",
        "goodput / link rate (%)",
        None,
        true,
        series,
    )?;
    Ok(())
}

/// Table 1: OUT/run-00{0..5}/ from table1.toml's sweep (background on × 3 buffers, then off).
fn table1(out: &Path) -> Res<()> {
    let labels = [
        ("Y", "64"),
        ("Y", "512"),
        ("Y", "1024"),
        ("N", "64"),
        ("N", "512"),
        ("N", "1024"),
    ];
    // Paper's Table 1 rows (background, buffer) -> (RTT s, Mb/s).
    let paper: BTreeMap<(&str, &str), (f64, f64)> = [
        (("N", "64"), (5.78, 0.12)),
        (("N", "512"), (5.78, 0.8)),
        (("N", "1024"), (5.78, 4.0)),
        (("Y", "64"), (1.03, 0.5)),
    ]
    .into_iter()
    .collect();
    let mut csv = String::from(
        "background,buffer_kb,rtt_s,throughput_bps,paper_rtt_s,paper_throughput_bps\n",
    );
    let mut pts = Vec::new();
    println!(
        "{:>10} {:>10} {:>8} {:>10} {:>10} {:>10}",
        "background", "buffer KB", "RTT s", "Mb/s", "paper RTT", "paper Mb/s"
    );
    for (i, &(bg, buf)) in labels.iter().enumerate() {
        let rows = read_flow(&out.join(format!("run-{i:03}")), "tcp")?;
        let g = goodput(&rows, 240.0, 360.0);
        let rtt = mean_srtt(&rows, 240.0, 360.0) / 1e3;
        let (prtt, pt) = paper
            .get(&(bg, buf))
            .copied()
            .unwrap_or((f64::NAN, f64::NAN));
        println!(
            "{bg:>10} {buf:>10} {rtt:>8.2} {:>10.3} {prtt:>10.2} {pt:>10.2}",
            g / 1e6
        );
        writeln!(csv, "{bg},{buf},{rtt:.3},{g:.0},{prtt},{}", pt * 1e6)?;
        if buf == "64" {
            let who = if bg == "Y" { "with" } else { "without" };
            pts.push((
                format!("64 KB flow, {who} background"),
                throughput_series(&rows, 5.0)
                    .into_iter()
                    .filter(|p| p.0 > 120.0)
                    .map(|(t, v)| (t, v * 1e3))
                    .collect(),
            ));
        }
    }
    fs::write(out.join("table1.csv"), csv)?;
    line_chart_png(
        &out.join("lee_table1_winds.png"),
        "WINDS channel release (idle 500 ms, setup 2.375 s): 64 KB TCP flow",
        "time (s)",
        "goodput per 5 s (kb/s)",
        None,
        false,
        pts,
    )?;
    Ok(())
}

fn main() -> Res<()> {
    let mut args = std::env::args().skip(1);
    let what = args.next().unwrap_or_default();
    let out = PathBuf::from(args.next().unwrap_or_else(|| "out/lee".into()));
    match what.as_str() {
        "table2" => table2(&out),
        "slow" => slow(&out),
        "sweep" => sweep(&out),
        "table1" => table1(&out),
        _ => Err("usage: lee {table2|slow|sweep|table1} OUT".into()),
    }
}
