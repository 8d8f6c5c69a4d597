//! Roseti & Kristiansen, TCP over DVB-RCS DAMA: Figs 5a, 5b, 5c, 6, 7 and N terminals on one
//! carrier (tables `fig5`, `fig6`, `fig7`, `nst`). Runs `scenarios/roseti/single.toml`
//! (embedded) with `--set`-style overrides (the N-terminal runs generate their scenario text); outputs under `fig5a/`, `fig5b/`, `fig6/`,
//! `fig7/`, `nst/`. Nothing here is tuned: every number comes from the scenario files.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use plotters::prelude::*;
use satpep_output::Summary;

use super::figure::{Figures, Series};
use super::{fixed, load, md_table, par_map, run_scenario, Error, Res, Table};

const SCENARIO: &str = include_str!("../../../../scenarios/roseti/single.toml");
const CARRIER_BPS: f64 = 2_048_000.0;

/// Access schemes of Fig. 6 (and the first ones of Fig. 7), as overrides of single.toml.
fn scheme(name: &str) -> Vec<String> {
    let t = "dama.rcs.terminal.";
    let s = |v: &[(&str, &str)]| v.iter().map(|(k, x)| format!("{t}{k}={x}")).collect();
    match name {
        "CRA" => s(&[("cra_slots", "32"), ("vbdc_max_slots", "0")]),
        "VBDC" => s(&[]),
        "RBDC g=0.1" => s(&[
            ("rbdc_max_slots", "32"),
            ("vbdc_max_slots", "0"),
            ("rbdc_gamma", "0.1"),
        ]),
        "RBDC g=0.5" => s(&[
            ("rbdc_max_slots", "32"),
            ("vbdc_max_slots", "0"),
            ("rbdc_gamma", "0.5"),
        ]),
        "RBDC g=1" => s(&[
            ("rbdc_max_slots", "32"),
            ("vbdc_max_slots", "0"),
            ("rbdc_gamma", "1"),
        ]),
        other => match other.strip_suffix(" CRA") {
            // "n CRA": n CRA slots, the other 32 − n by VBDC (VBDC room is max − CRA).
            Some(n) => s(&[("cra_slots", n)]),
            None => s(&[]),
        },
    }
}

/// The scheme's name as the doc writes it.
fn label(name: &str) -> String {
    match name {
        "RBDC g=0.1" => "RBDC γ = 0.1".into(),
        "RBDC g=0.5" => "RBDC γ = 0.5".into(),
        "RBDC g=1" => "RBDC γ = 1".into(),
        other => match other.strip_suffix(" CRA") {
            Some(n) => match n.parse::<u32>() {
                Ok(k) => format!("{k} CRA + {} VBDC", 32 - k),
                Err(_) => other.into(),
            },
            None => other.into(),
        },
    }
}

/// Run single.toml (or `text`) with `set` into `dir`.
fn sim(text: Option<&str>, set: &[String], dir: &Path) -> Result<Summary, String> {
    let loaded = match text {
        Some(t) => load(t, "<generated>", set),
        None => load(SCENARIO, "single.toml", set),
    }
    .map_err(|e| e.0)?;
    run_scenario(&loaded.scenario, dir)
}

/// Columns `cols` of a CSV file, rows filtered by `keep` on the full row.
fn csv(path: &Path, cols: &[&str], keep: impl Fn(&[&str]) -> bool) -> Res<Vec<Vec<f64>>> {
    let text =
        std::fs::read_to_string(path).map_err(|e| Error(format!("{}: {e}", path.display())))?;
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap_or("").split(',').collect();
    let idx: Vec<usize> = cols
        .iter()
        .map(|c| {
            header
                .iter()
                .position(|h| h == c)
                .ok_or_else(|| Error(format!("{}: no column {c}", path.display())))
        })
        .collect::<Result<_, _>>()?;
    let mut out = Vec::new();
    for l in lines {
        let f: Vec<&str> = l.split(',').collect();
        if keep(&f) {
            out.push(
                idx.iter()
                    .map(|&i| f.get(i).and_then(|v| v.parse().ok()).unwrap_or(f64::NAN))
                    .collect(),
            );
        }
    }
    Ok(out)
}

/// Draw `c` into `figs` as `name`.
fn figure(figs: &mut Figures, name: &str, c: &Chart<'_>) -> Res<()> {
    figs.custom(name, &c.series, |png| {
        plot(png, c).map_err(|e| Error(format!("{}: {e}", png.display())))
    })
}

pub(super) fn run(dir: &Path, figs: &mut Figures) -> Res<Vec<Table>> {
    // The bar charts are drawn here, not by satpep-output: make "sans-serif" its embedded font.
    let _ = plotters::style::register_font(
        "sans-serif",
        plotters::style::FontStyle::Normal,
        dejavu::sans::regular(),
    );
    let mut fig5 = fig5a(dir, figs)?;
    fig5.extend(fig5b(dir, figs)?);
    let fig5 = Table {
        name: "fig5".into(),
        markdown: md_table(&["first 40 s", "measured"], fig5),
    };
    Ok(vec![
        fig5,
        fig6(dir, figs, None)?,
        fig6(dir, figs, Some("64KB"))?,
        fig7(dir, figs)?,
        gamma(dir, figs)?,
        nst(dir, figs)?,
    ])
}

/// The RBDC request trace behind "lower γ is better": for each γ, the 500 KB transfer's
/// superframes until the transfer ends (`dama.csv`), and what the allocation did while data
/// waited. Table and figure `gamma`.
fn gamma(out: &Path, figs: &mut Figures) -> Res<Table> {
    let gammas = ["RBDC g=0.1", "RBDC g=0.5", "RBDC g=1"];
    let dirs: Vec<_> = gammas
        .iter()
        .map(|g| out.join("gamma").join(g.replace([' ', '='], "_")))
        .collect();
    let jobs: Vec<usize> = (0..gammas.len()).collect();
    let sums = par_map(&jobs, |&i| {
        let set = [
            scheme(gammas[i]),
            vec!["flow.ftp.app.bytes=\"500KB\"".to_string()],
        ]
        .concat();
        sim(None, &set, &dirs[i])
    })?;
    let mut rows = Vec::new();
    let mut series = Vec::new();
    for ((g, dir), sum) in gammas.iter().zip(&dirs).zip(&sums) {
        let done = sum
            .flows
            .first()
            .and_then(|f| f.completion_time_s)
            .unwrap_or(f64::NAN);
        let sf = csv(
            &dir.join("dama.csv"),
            &["time_s", "queue_bytes", "rbdc", "req_rbdc"],
            |_| true,
        )?;
        let during: Vec<&Vec<f64>> = sf.iter().filter(|r| r[0] <= done).collect();
        let waiting: Vec<&&Vec<f64>> = during.iter().filter(|r| r[1] > 0.0).collect();
        let starved = waiting.iter().filter(|r| r[2] == 0.0).count();
        let mean_slots = waiting.iter().map(|r| r[2]).sum::<f64>() / waiting.len().max(1) as f64;
        let first_full = during
            .iter()
            .find(|r| r[2] >= 64.0)
            .map_or("never".to_string(), |r| format!("{} s", fixed(r[0], 2)));
        let granted: f64 = during.iter().map(|r| r[2]).sum();
        let requested: f64 = during.iter().map(|r| r[3]).sum();
        rows.push(vec![
            label(g),
            format!("{} s", fixed(done, 2)),
            first_full,
            format!("{} of {}", starved, waiting.len()),
            fixed(mean_slots, 1),
            format!("{} / {}", fixed(requested, 0), fixed(granted, 0)),
        ]);
        series.push((
            g.replace("g=", "gamma "),
            during.iter().map(|r| (r[0], r[2])).collect(),
        ));
    }
    figure(
        figs,
        "gamma_rbdc",
        &Chart {
            title: "RBDC slots per superframe during the 500 KB transfer",
            x: "time (s)",
            y: "RBDC slots",
            series,
            bars: None,
        },
    )?;
    Ok(Table {
        name: "gamma".into(),
        markdown: md_table(
            &[
                "scheme",
                "500 KB transfer",
                "first superframe with ≥ 64 RBDC slots (half the carrier)",
                "superframes with data waiting and no RBDC slot",
                "mean RBDC slots while data waits",
                "slots requested / granted",
            ],
            rows,
        ),
    })
}

struct Chart<'a> {
    title: &'a str,
    x: &'a str,
    y: &'a str,
    series: Series,
    bars: Option<Vec<String>>,
}

/// The line colours every satpep plot uses.
const COLOURS: [RGBColor; 10] = satpep_output::plot::PALETTE;

fn plot(path: &Path, c: &Chart<'_>) -> Result<(), Box<dyn std::error::Error>> {
    // The legend gets its own strip right of the plot, so it never covers bars or lines.
    let longest_name = c
        .series
        .iter()
        .map(|s| s.0.chars().count())
        .max()
        .unwrap_or(0) as u32;
    let legend_w = 40 + 8 * longest_name;
    let root = BitMapBackend::new(path, (720 + legend_w, 400)).into_drawing_area();
    root.fill(&WHITE)?;
    let (root, legend) = root.split_horizontally(720);
    let pts = || {
        c.series
            .iter()
            .flat_map(|s| s.1.iter())
            .filter(|p| p.1.is_finite())
    };
    let (x0, x1) = match &c.bars {
        Some(cats) => (-0.5, cats.len() as f64 - 0.5),
        None => pts().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), p| {
            (a.min(p.0), b.max(p.0))
        }),
    };
    let head = 1.08;
    let y1 = pts().fold(0.0f64, |a, p| a.max(p.1)) * head + 1e-9;
    let longest = c.bars.iter().flatten().map(String::len).max().unwrap_or(0) as u32;
    let mut ch = ChartBuilder::on(&root)
        .caption(
            c.title,
            (
                "sans-serif",
                satpep_output::plot::caption_size(&root, c.title, 20),
            ),
        )
        .margin(12)
        .x_label_area_size(if c.bars.is_some() { 40 + longest } else { 40 })
        .y_label_area_size(70)
        .build_cartesian_2d(x0..x1.max(x0 + 1e-9), 0.0..y1)?;
    let cats = c.bars.clone();
    let mut mesh = ch.configure_mesh();
    mesh.x_desc(c.x).y_desc(c.y).label_style(("sans-serif", 13));
    let fmt = move |v: &f64| match &cats {
        Some(cs) => {
            let i = v.round();
            if (v - i).abs() < 1e-6 && i >= 0.0 {
                cs.get(i as usize).cloned().unwrap_or_default()
            } else {
                String::new()
            }
        }
        None => format!("{v}"),
    };
    if let Some(cs) = &c.bars {
        mesh.x_labels(cs.len())
            .x_label_formatter(&fmt)
            .x_label_style(("sans-serif", 10));
    }
    mesh.draw()?;
    for (k, (_, s)) in c.series.iter().enumerate() {
        let col = COLOURS[k % COLOURS.len()];
        if c.bars.is_some() {
            let n = c.series.len() as f64;
            let w = 0.8 / n;
            ch.draw_series(s.iter().map(|&(x, y)| {
                let l = x - 0.4 + w * k as f64;
                Rectangle::new([(l, 0.0), (l + w, y)], col.filled())
            }))?;
        } else {
            ch.draw_series(LineSeries::new(
                s.iter().copied().filter(|p| p.1.is_finite()),
                col.stroke_width(2),
            ))?;
        }
    }
    for (k, (name, _)) in c.series.iter().enumerate() {
        let col = COLOURS[k % COLOURS.len()];
        let y = 40 + 22 * k as i32;
        if c.bars.is_some() {
            legend.draw(&Rectangle::new([(8, y - 6), (20, y + 6)], col.filled()))?;
        } else {
            legend.draw(&PathElement::new(
                vec![(4, y), (24, y)],
                col.stroke_width(2),
            ))?;
        }
        legend.draw(&Text::new(name.as_str(), (30, y - 8), ("sans-serif", 13)))?;
    }
    root.present()?;
    Ok(())
}

/// Fig 5a, and the rows of table `fig5` it measures.
fn fig5a(out: &Path, figs: &mut Figures) -> Res<Vec<Vec<String>>> {
    let dir = out.join("fig5a");
    let set = [scheme("1 CRA"), vec!["flow.ftp.app.bytes=\"10MB\"".into()]].concat();
    sim(None, &set, &dir)?;
    let rows = csv(&dir.join("dama.csv"), &["time_s", "cra", "vbdc"], |_| true)?;
    let early = || rows.iter().filter(|r| r[0] <= 40.0);
    let pick = |i: usize| early().map(|r| (r[0], r[i])).collect::<Vec<_>>();
    let total = early().map(|r| (r[0], r[1] + r[2])).collect();
    let cra: Vec<f64> = early().map(|r| r[1]).collect();
    let (lo, hi) = cra
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
            (a.min(*v), b.max(*v))
        });
    let vbdc_max = early().map(|r| r[2]).fold(0.0, f64::max);
    let vbdc_full = early().find(|r| r[2] >= vbdc_max).map(|r| r[0]);
    let table = vec![
        vec![
            "1 CRA + 31 VBDC: CRA slots per superframe (least–most)".to_string(),
            format!("{lo}–{hi}"),
        ],
        vec![
            "1 CRA + 31 VBDC: most VBDC slots in a superframe".to_string(),
            vbdc_max.to_string(),
        ],
        vec![
            "1 CRA + 31 VBDC: VBDC first at that many (s)".to_string(),
            vbdc_full.map_or("—".into(), |t| fixed(t, 2)),
        ],
    ];
    figure(
        figs,
        "fig5a_slots",
        &Chart {
            title: "Fig 5a: slots per superframe, 1 CRA + 31 VBDC",
            x: "time (s)",
            y: "slots per superframe",
            series: vec![
                ("CRA".into(), pick(1)),
                ("VBDC".into(), pick(2)),
                ("total".into(), total),
            ],
            bars: None,
        },
    )?;
    Ok(table)
}

/// Fig 5b, and the rows of table `fig5` it measures.
fn fig5b(out: &Path, figs: &mut Figures) -> Res<Vec<Vec<String>>> {
    let dir = out.join("fig5b");
    sim(None, &scheme("RBDC g=0.1"), &dir)?;
    let rows = csv(
        &dir.join("dama.csv"),
        &["time_s", "queue_bytes", "rbdc"],
        |_| true,
    )?;
    let early = || rows.iter().filter(|r| r[0] <= 40.0);
    let q = early().map(|r| (r[0], r[1] / 1e3)).collect();
    let a = early().map(|r| (r[0], r[2] * 192.0 / 1e3)).collect();
    let queue_max = early().map(|r| r[1]).fold(0.0, f64::max);
    let rbdc_max = early().map(|r| r[2]).fold(0.0, f64::max);
    let table = vec![
        vec![
            "RBDC γ = 0.1: largest ST queue (kB)".to_string(),
            fixed(queue_max / 1e3, 0),
        ],
        vec![
            "RBDC γ = 0.1: most RBDC slots in a superframe".to_string(),
            rbdc_max.to_string(),
        ],
    ];
    figure(
        figs,
        "fig5b_rbdc",
        &Chart {
            title: "Fig 5b: ST queue and RBDC capacity (gamma = 0.1)",
            x: "time (s)",
            y: "kB (queue) / kB per superframe (allocated)",
            series: vec![("queue".into(), q), ("allocated".into(), a)],
            bars: None,
        },
    )?;
    Ok(table)
}

/// Throughput of the return interface over 0.96 s windows (10 superframes) from links.csv.
fn throughput(dir: &Path) -> Res<Vec<(f64, f64)>> {
    let rows = csv(&dir.join("links.csv"), &["time_s", "throughput_bps"], |f| {
        f.get(1) == Some(&"rcs.st")
    })?;
    Ok(rows
        .chunks(96)
        .map(|w| {
            let t = w.last().map_or(0.0, |r| r[0]);
            let mean = w.iter().map(|r| r[1]).sum::<f64>() / w.len() as f64;
            (t, mean / 1e3)
        })
        .collect())
}

/// Figs 6a/6b/5c with the scenario's 1 MB receive window, or with `window` (e.g. `"64KB"`:
/// table `fig6_64KB`, figures suffixed likewise).
fn fig6(out: &Path, figs: &mut Figures, window: Option<&str>) -> Res<Table> {
    let schemes = ["CRA", "VBDC", "RBDC g=0.1", "5 CRA"];
    let tag = window.map_or(String::new(), |w| format!("_{w}"));
    let dirs: Vec<_> = schemes
        .iter()
        .map(|s| {
            out.join(format!("fig6{tag}"))
                .join(s.replace([' ', '='], "_"))
        })
        .collect();
    let jobs: Vec<usize> = (0..schemes.len()).collect();
    let sums = par_map(&jobs, |&i| {
        let mut set = scheme(schemes[i]);
        if let Some(w) = window {
            set.push(format!("defaults.tcp.recv_buffer=\"{w}\""));
        }
        sim(None, &set, &dirs[i])
    })?;
    let (mut rtt, mut tput, mut pdf, mut rows) = (vec![], vec![], vec![], vec![]);
    let mut table = String::from(
        "scheme,mean_rtt_ms,median_rtt_ms,first_rtt_ms,saturation_time_s,completion_s\n",
    );
    for ((s, dir), sum) in schemes.iter().zip(&dirs).zip(&sums) {
        let r = csv(&dir.join("rtt.csv"), &["time_s", "rtt_ms"], |_| true)?;
        let pts: Vec<(f64, f64)> = r.iter().map(|v| (v[0], v[1])).collect();
        let mut sorted: Vec<f64> = pts.iter().map(|p| p.1).collect();
        sorted.sort_by(f64::total_cmp);
        let mean = sorted.iter().sum::<f64>() / sorted.len().max(1) as f64;
        let median = sorted.get(sorted.len() / 2).copied().unwrap_or(f64::NAN);
        let th = throughput(dir)?;
        let sat = th
            .iter()
            .find(|p| p.1 * 1e3 >= 0.95 * CARRIER_BPS)
            .map_or(f64::NAN, |p| p.0);
        let first = pts.first().map_or(f64::NAN, |p| p.1);
        let done = sum
            .flows
            .first()
            .and_then(|f| f.completion_time_s)
            .unwrap_or(f64::NAN);
        writeln!(
            table,
            "{s},{mean:.1},{median:.1},{first:.1},{sat:.2},{done:.2}"
        )?;
        let secs = |v: f64, never: &str| {
            if v.is_nan() {
                never.to_string()
            } else {
                format!("{} s", fixed(v, 2))
            }
        };
        rows.push(vec![
            label(s),
            format!("{} ms", fixed(first, 1)),
            format!("{} ms", fixed(mean, 0)),
            secs(sat, "never"),
            secs(done, "not within the 120 s run"),
        ]);
        // PDF: 100 ms bins.
        let mut bins: BTreeMap<i64, usize> = BTreeMap::new();
        for v in &sorted {
            *bins.entry((v / 100.0).floor() as i64).or_default() += 1;
        }
        let n = sorted.len().max(1) as f64;
        pdf.push((
            s.to_string(),
            bins.iter()
                .map(|(&b, &c)| (b as f64 * 0.1 + 0.05, c as f64 / n))
                .collect(),
        ));
        rtt.push((
            s.to_string(),
            pts.into_iter().filter(|p| p.0 <= 40.0).collect(),
        ));
        tput.push((
            s.to_string(),
            th.into_iter().filter(|p| p.0 <= 40.0).collect(),
        ));
    }
    super::write(&out.join(format!("fig6{tag}.csv")), &table)?;
    figure(
        figs,
        &format!("fig6a_rtt{tag}"),
        &Chart {
            title: "Fig 6a: RTT seen by TCP",
            x: "time (s)",
            y: "RTT (ms)",
            series: rtt,
            bars: None,
        },
    )?;
    figure(
        figs,
        &format!("fig6b_throughput{tag}"),
        &Chart {
            title: "Fig 6b: return-link throughput (0.96 s windows)",
            x: "time (s)",
            y: "kb/s",
            series: tput,
            bars: None,
        },
    )?;
    figure(
        figs,
        &format!("fig5c_rtt_pdf{tag}"),
        &Chart {
            title: "RTT PDF (100 ms bins)",
            x: "RTT (s)",
            y: "fraction of samples",
            series: pdf,
            bars: None,
        },
    )?;
    Ok(Table {
        name: format!("fig6{tag}"),
        markdown: md_table(
            &[
                "scheme",
                "first RTT sample",
                "mean RTT sample",
                "saturation time (≥ 95 % of 2048 kb/s over 0.96 s)",
                "10 MB transfer",
            ],
            rows,
        ),
    })
}

/// Rows of Fig 7's table in the doc (all 36 schemes are in fig7.csv).
const FIG7_ROWS: [&str; 9] = [
    "CRA",
    "VBDC",
    "RBDC g=0.1",
    "RBDC g=0.5",
    "RBDC g=1",
    "1 CRA",
    "5 CRA",
    "16 CRA",
    "31 CRA",
];

fn fig7(out: &Path, figs: &mut Figures) -> Res<Table> {
    let mut names: Vec<String> = ["CRA", "VBDC", "RBDC g=0.1", "RBDC g=0.5", "RBDC g=1"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    names.extend((1..32).map(|n| format!("{n} CRA")));
    let sizes = ["500KB", "10MB"];
    let jobs: Vec<(String, &str)> = names
        .iter()
        .flat_map(|n| sizes.iter().map(move |s| (n.clone(), *s)))
        .collect();
    let times = par_map(&jobs, |(n, size)| {
        let set = [scheme(n), vec![format!("flow.ftp.app.bytes=\"{size}\"")]].concat();
        let dir = out
            .join("fig7")
            .join(format!("{}-{size}", n.replace([' ', '='], "_")));
        Ok(sim(None, &set, &dir)?
            .flows
            .first()
            .and_then(|f| f.completion_time_s)
            .unwrap_or(f64::NAN))
    })?;
    let r: BTreeMap<(String, &str), f64> = jobs.iter().cloned().zip(times).collect();
    let get = |n: &str, s: &str| r.get(&(n.to_string(), s)).copied().unwrap_or(f64::NAN);
    let mut table = String::from("scheme,t_500KB_s,t_10MB_s,norm_500KB,norm_10MB\n");
    let mut series = vec![
        ("500 KB".to_string(), Vec::new()),
        ("10 MB".to_string(), Vec::new()),
    ];
    let mut rows = Vec::new();
    for (i, n) in names.iter().enumerate() {
        let (a, b) = (get(n, "500KB"), get(n, "10MB"));
        let (na, nb) = (a / get("CRA", "500KB"), b / get("CRA", "10MB"));
        writeln!(table, "{n},{a:.3},{b:.3},{na:.3},{nb:.3}")?;
        series[0].1.push((i as f64, na));
        series[1].1.push((i as f64, nb));
        if FIG7_ROWS.contains(&n.as_str()) {
            rows.push(vec![
                label(n),
                fixed(a, 2),
                fixed(b, 2),
                fixed(na, 2),
                fixed(nb, 2),
            ]);
        }
    }
    super::write(&out.join("fig7.csv"), &table)?;
    // Short axis labels: C = CRA, V = VBDC, R.1/R.5/R1 = RBDC γ, n = n CRA + (32 − n) VBDC.
    let short = names
        .iter()
        .map(|n| match n.as_str() {
            "CRA" => "C".to_string(),
            "VBDC" => "V".to_string(),
            "RBDC g=0.1" => "R.1".to_string(),
            "RBDC g=0.5" => "R.5".to_string(),
            "RBDC g=1" => "R1".to_string(),
            other => other.trim_end_matches(" CRA").to_string(),
        })
        .collect();
    figure(
        figs,
        "fig7_normalised",
        &Chart {
            title: "Fig 7: transfer time normalised to CRA",
            x: "C = CRA, V = VBDC, R.1/R.5/R1 = RBDC gamma, n = n CRA + (32 - n) VBDC",
            y: "T / T_CRA",
            series,
            bars: Some(short),
        },
    )?;
    Ok(Table {
        name: "fig7".into(),
        markdown: md_table(
            &[
                "scheme",
                "500 KB (s)",
                "10 MB (s)",
                "500 KB / CRA",
                "10 MB / CRA",
            ],
            rows,
        ),
    })
}

/// N terminals (VBDC) toward one gateway; `web`: request/response instead of bulk.
fn nst_text(n: usize, web: bool) -> String {
    let mut t = String::from(
        "seed = 1\nduration = \"60s\"\nstop_when_done = false\n[defaults.tcp]\ncc = \"reno\"\nrecovery = \"newreno\"\nsack = false\ninitial_window = 1\nrecv_buffer = \"1MB\"\n[[node]]\nname = \"gw\"\n",
    );
    // NOTE: writing to a String cannot fail.
    for i in 0..n {
        let _ = write!(t, "[[node]]\nname = \"st{i}\"\n[[link]]\nname = \"fwd{i}\"\nfrom = \"gw\"\nto = \"st{i}\"\nrate = \"8Mbps\"\ndelay = \"250ms\"\nqueue = {{ limit_packets = 1000 }}\n");
    }
    let terms: Vec<String> = (0..n).map(|i| format!("\"st{i}\"")).collect();
    let _ = write!(
        t,
        "[[dama]]\nname = \"rcs\"\ngateway = \"gw\"\nterminals = [{}]\n",
        terms.join(",")
    );
    for i in 0..n {
        let start = (i as f64 * 1.0 / n as f64 * 1000.0).round() as u64; // spread over 1 s
        if web {
            // Web-like: the ST posts 5 kB (a form, an e-mail, an upload chunk), gets 1 kB back,
            // thinks 5 s, again. Offered return load ≈ N × 5 kB / (5 s + exchange time).
            let _ = write!(t, "[[flow]]\nname = \"f{i}\"\nfrom = \"st{i}\"\nto = \"gw\"\nstart = \"{start}ms\"\napp = {{ kind = \"request_response\", request = \"5KB\", response = \"1KB\", count = 1000, think = \"5s\" }}\n");
        } else {
            let _ = write!(
                t,
                "[[flow]]\nname = \"f{i}\"\nfrom = \"st{i}\"\nto = \"gw\"\nstart = \"{start}ms\"\n"
            );
        }
    }
    t.push_str("[output]\ninterval = \"100ms\"\nseries = true\n");
    t
}

/// Jain's fairness index of `x`.
fn jain(x: &[f64]) -> f64 {
    let s: f64 = x.iter().sum();
    let s2: f64 = x.iter().map(|v| v * v).sum();
    if s2 == 0.0 {
        return f64::NAN;
    }
    s * s / (x.len() as f64 * s2)
}

fn nst(out: &Path, figs: &mut Figures) -> Res<Table> {
    let mut jobs = Vec::new();
    for web in [false, true] {
        for n in [10usize, 100, 1000] {
            for share in ["proportional", "max_min"] {
                jobs.push((web, n, share));
            }
        }
    }
    let runs = par_map(&jobs, |&(web, n, share)| {
        let set = vec![format!("dama.rcs.controller.vbdc_share=\"{share}\"")];
        let kind = if web { "web" } else { "bulk" };
        let dir = out.join("nst").join(format!("{kind}-{n}-{share}"));
        let wall = std::time::Instant::now();
        let s = sim(Some(&nst_text(n, web)), &set, &dir)?;
        Ok((s, wall.elapsed().as_secs_f64()))
    })?;
    let mut table = String::from("traffic,terminals,sharing,jain_goodput,carrier_utilisation,mean_goodput_bps,wall_s,events\n");
    let (mut pts, mut rows) = (Vec::new(), Vec::new());
    for (&(web, n, share), (s, wall)) in jobs.iter().zip(&runs) {
        let g: Vec<f64> = s
            .flows
            .iter()
            .map(|f| f.bytes_delivered as f64 * 8.0 / s.sim_time_s)
            .collect();
        let carried: u64 = s
            .links
            .iter()
            .filter(|l| l.name.starts_with("rcs."))
            .map(|l| l.delivered_bytes)
            .sum();
        let util = carried as f64 * 8.0 / (CARRIER_BPS * s.sim_time_s);
        let mean = g.iter().sum::<f64>() / g.len().max(1) as f64;
        let kind = if web { "web" } else { "bulk" };
        writeln!(
            table,
            "{kind},{n},{share},{:.4},{util:.4},{mean:.0},{wall:.2},{}",
            jain(&g),
            s.events
        )?;
        let per_st = if mean >= 10e3 {
            format!(
                "{} kb/s",
                fixed(mean / 1e3, if mean >= 100e3 { 0 } else { 1 })
            )
        } else {
            format!("{} kb/s", fixed(mean / 1e3, 2))
        };
        rows.push(vec![
            kind.to_string(),
            n.to_string(),
            share.replace('_', "-"),
            fixed(jain(&g), 4),
            fixed(util, 3),
            per_st,
        ]);
        pts.push((kind, n, share, jain(&g), util));
    }
    super::write(&out.join("nst.csv"), &table)?;
    let mut series = Vec::new();
    for kind in ["bulk", "web"] {
        for share in ["proportional", "max_min"] {
            let p = pts
                .iter()
                .filter(|r| r.0 == kind && r.2 == share)
                .enumerate()
                .map(|(i, r)| (i as f64, r.3))
                .collect();
            series.push((format!("Jain, {kind}, {share}"), p));
        }
        let p = pts
            .iter()
            .filter(|r| r.0 == kind && r.2 == "proportional")
            .enumerate()
            .map(|(i, r)| (i as f64, r.4))
            .collect();
        series.push((format!("utilisation, {kind}"), p));
    }
    figure(
        figs,
        "nst",
        &Chart {
            title: "N terminals on one 2048 kb/s carrier (VBDC)",
            x: "terminals",
            y: "Jain index / carrier utilisation",
            series,
            bars: Some(vec!["10".into(), "100".into(), "1000".into()]),
        },
    )?;
    Ok(Table {
        name: "nst".into(),
        markdown: md_table(
            &[
                "traffic",
                "STs",
                "NCC sharing",
                "Jain",
                "carrier utilisation",
                "mean goodput per ST",
            ],
            rows,
        ),
    })
}
