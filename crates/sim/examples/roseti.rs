//! The Roseti–Kristiansen DVB-RCS experiments (docs/reproductions/roseti.md), one command each:
//!
//! ```text
//! cargo run --release -p satpep-sim --example roseti -- <fig5a|fig5b|fig6|fig7|nst|all> [OUT]
//! ```
//!
//! Each writes CSV files and PNGs under OUT (default `results/roseti`), running
//! `scenarios/roseti/single.toml` with `--set`-style overrides (the N-terminal runs generate
//! their scenario text). Nothing here is tuned: every number comes from the scenario files.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};

use plotters::prelude::*;
use plotters::style::{register_font, FontStyle};
use satpep_output::Summary;
use satpep_sim::{Outputs, Simulation};

type Res<T> = Result<T, Box<dyn std::error::Error>>;

const SCENARIO: &str = "scenarios/roseti/single.toml";
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

fn run(text: Option<&str>, set: &[String], dir: &Path) -> Res<Summary> {
    let loaded = match text {
        Some(t) => satpep_scenario::load_str(t, "<generated>", set)?,
        None => satpep_scenario::load_file(Path::new(SCENARIO), set)?,
    };
    fs::create_dir_all(dir)?;
    let mut sim = Simulation::new(&loaded.scenario);
    sim.set_outputs(Outputs::create(dir, &loaded.scenario)?);
    Ok(sim.run(|_| {})?.summary)
}

/// Columns `cols` of a CSV file, rows filtered by `keep` on the full row.
fn csv(path: &Path, cols: &[&str], keep: impl Fn(&[&str]) -> bool) -> Res<Vec<Vec<f64>>> {
    let text = fs::read_to_string(path)?;
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap_or("").split(',').collect();
    let idx: Vec<usize> = cols
        .iter()
        .map(|c| {
            header
                .iter()
                .position(|h| h == c)
                .ok_or(format!("no column {c}"))
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

struct Chart<'a> {
    title: &'a str,
    x: &'a str,
    y: &'a str,
    series: Vec<(String, Vec<(f64, f64)>)>,
    bars: Option<Vec<String>>,
}

/// The line colours every satpep plot uses.
const COLOURS: [RGBColor; 10] = satpep_output::plot::PALETTE;

fn plot(path: &Path, c: &Chart<'_>) -> Res<()> {
    let root = BitMapBackend::new(path, (720, 400)).into_drawing_area();
    root.fill(&WHITE)?;
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
    // Bar charts get head room for the legend above the bars.
    let head = if c.bars.is_some() { 1.45 } else { 1.08 };
    let y1 = pts().fold(0.0f64, |a, p| a.max(p.1)) * head + 1e-9;
    let longest = c.bars.iter().flatten().map(String::len).max().unwrap_or(0) as u32;
    let mut ch = ChartBuilder::on(&root)
        .caption(c.title, ("sans-serif", 20))
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
    for (k, (name, s)) in c.series.iter().enumerate() {
        let col = COLOURS[k % COLOURS.len()];
        if c.bars.is_some() {
            let n = c.series.len() as f64;
            let w = 0.8 / n;
            ch.draw_series(s.iter().map(|&(x, y)| {
                let l = x - 0.4 + w * k as f64;
                Rectangle::new([(l, 0.0), (l + w, y)], col.filled())
            }))?
            .label(name.as_str())
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 10, y + 5)], col.filled()));
        } else {
            ch.draw_series(LineSeries::new(
                s.iter().copied().filter(|p| p.1.is_finite()),
                col.stroke_width(2),
            ))?
            .label(name.as_str())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], col.stroke_width(2)));
        }
    }
    ch.configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .label_font(("sans-serif", 13))
        .draw()?;
    root.present()?;
    Ok(())
}

fn write(path: &Path, text: &str) -> Res<()> {
    fs::write(path, text)?;
    println!("{}", path.display());
    Ok(())
}

fn fig5a(out: &Path) -> Res<()> {
    let dir = out.join("fig5a");
    run(
        None,
        &[scheme("1 CRA"), vec!["flow.ftp.app.bytes=\"10MB\"".into()]].concat(),
        &dir,
    )?;
    let rows = csv(&dir.join("dama.csv"), &["time_s", "cra", "vbdc"], |_| true)?;
    let pick = |i: usize| {
        rows.iter()
            .filter(|r| r[0] <= 40.0)
            .map(|r| (r[0], r[i]))
            .collect::<Vec<_>>()
    };
    let total = rows
        .iter()
        .filter(|r| r[0] <= 40.0)
        .map(|r| (r[0], r[1] + r[2]))
        .collect();
    plot(
        &out.join("fig5a_slots.png"),
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
    println!("{}", out.join("fig5a_slots.png").display());
    Ok(())
}

fn fig5b(out: &Path) -> Res<()> {
    let dir = out.join("fig5b");
    run(None, &scheme("RBDC g=0.1"), &dir)?;
    let rows = csv(
        &dir.join("dama.csv"),
        &["time_s", "queue_bytes", "rbdc"],
        |_| true,
    )?;
    let q = rows
        .iter()
        .filter(|r| r[0] <= 40.0)
        .map(|r| (r[0], r[1] / 1e3))
        .collect();
    let a = rows
        .iter()
        .filter(|r| r[0] <= 40.0)
        .map(|r| (r[0], r[2] * 192.0 / 1e3))
        .collect();
    plot(
        &out.join("fig5b_rbdc.png"),
        &Chart {
            title: "Fig 5b: ST queue and RBDC capacity (gamma = 0.1)",
            x: "time (s)",
            y: "kB (queue) / kB per superframe (allocated)",
            series: vec![("queue".into(), q), ("allocated".into(), a)],
            bars: None,
        },
    )?;
    println!("{}", out.join("fig5b_rbdc.png").display());
    Ok(())
}

/// Throughput of the return interface over 0.96 s windows (10 superframes) from links.csv.
fn throughput(dir: &Path) -> Res<Vec<(f64, f64)>> {
    let rows = csv(&dir.join("links.csv"), &["time_s", "throughput_bps"], |f| {
        f.get(1) == Some(&"rcs.st")
    })?;
    let mut out = Vec::new();
    for w in rows.chunks(96) {
        let t = w.last().map_or(0.0, |r| r[0]);
        let mean = w.iter().map(|r| r[1]).sum::<f64>() / w.len() as f64;
        out.push((t, mean / 1e3));
    }
    Ok(out)
}

fn fig6(out: &Path) -> Res<()> {
    let schemes = ["CRA", "VBDC", "RBDC g=0.1", "5 CRA"];
    let mut rtt = Vec::new();
    let mut tput = Vec::new();
    let mut pdf = Vec::new();
    let mut table = String::from(
        "scheme,mean_rtt_ms,median_rtt_ms,first_rtt_ms,saturation_time_s,completion_s\n",
    );
    for s in schemes {
        let dir = out.join("fig6").join(s.replace([' ', '='], "_"));
        let sum = run(None, &scheme(s), &dir)?;
        let r = csv(&dir.join("rtt.csv"), &["time_s", "rtt_ms"], |_| true)?;
        let pts: Vec<(f64, f64)> = r.iter().map(|v| (v[0], v[1])).collect();
        let mut sorted: Vec<f64> = pts.iter().map(|p| p.1).collect();
        sorted.sort_by(f64::total_cmp);
        let mean = sorted.iter().sum::<f64>() / sorted.len().max(1) as f64;
        let median = sorted.get(sorted.len() / 2).copied().unwrap_or(f64::NAN);
        let th = throughput(&dir)?;
        let sat = th
            .iter()
            .find(|p| p.1 * 1e3 >= 0.95 * CARRIER_BPS)
            .map_or(f64::NAN, |p| p.0);
        let _ = writeln!(
            table,
            "{s},{mean:.1},{median:.1},{:.1},{sat:.2},{:.2}",
            pts.first().map_or(f64::NAN, |p| p.1),
            sum.flows[0].completion_time_s.unwrap_or(f64::NAN)
        );
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
            pts.into_iter()
                .filter(|p| p.0 <= 40.0)
                .map(|p| (p.0, p.1))
                .collect(),
        ));
        tput.push((
            s.to_string(),
            th.into_iter().filter(|p| p.0 <= 40.0).collect(),
        ));
    }
    write(&out.join("fig6.csv"), &table)?;
    print!("{table}");
    plot(
        &out.join("fig6a_rtt.png"),
        &Chart {
            title: "Fig 6a: RTT seen by TCP",
            x: "time (s)",
            y: "RTT (ms)",
            series: rtt,
            bars: None,
        },
    )?;
    plot(
        &out.join("fig6b_throughput.png"),
        &Chart {
            title: "Fig 6b: return-link throughput (0.96 s windows)",
            x: "time (s)",
            y: "kb/s",
            series: tput,
            bars: None,
        },
    )?;
    plot(
        &out.join("fig5c_rtt_pdf.png"),
        &Chart {
            title: "RTT PDF (100 ms bins)",
            x: "RTT (s)",
            y: "fraction of samples",
            series: pdf,
            bars: None,
        },
    )?;
    Ok(())
}

fn fig7(out: &Path) -> Res<()> {
    let mut names: Vec<String> = ["CRA", "VBDC", "RBDC g=0.1", "RBDC g=0.5", "RBDC g=1"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    names.extend((1..32).map(|n| format!("{n} CRA")));
    let sizes = [("500KB", "500KB"), ("10MB", "10MB")];
    let jobs: Vec<(String, &str)> = names
        .iter()
        .flat_map(|n| sizes.iter().map(move |s| (n.clone(), s.0)))
        .collect();
    let times = satpep_sim::parallel::map_in_order(&jobs, 0, |_, (n, size)| {
        let set = [scheme(n), vec![format!("flow.ftp.app.bytes=\"{size}\"")]].concat();
        let dir = out
            .join("fig7")
            .join(format!("{}-{size}", n.replace([' ', '='], "_")));
        run(None, &set, &dir)
            .ok()
            .and_then(|s| s.flows[0].completion_time_s)
            .unwrap_or(f64::NAN)
    });
    let r: BTreeMap<(String, String), f64> = jobs
        .iter()
        .zip(times)
        .map(|((n, size), t)| ((n.clone(), size.to_string()), t))
        .collect();
    let get = |n: &str, s: &str| {
        r.get(&(n.to_string(), s.to_string()))
            .copied()
            .unwrap_or(f64::NAN)
    };
    let mut table = String::from("scheme,t_500KB_s,t_10MB_s,norm_500KB,norm_10MB\n");
    let mut series = vec![
        ("500 KB".to_string(), Vec::new()),
        ("10 MB".to_string(), Vec::new()),
    ];
    for (i, n) in names.iter().enumerate() {
        let (a, b) = (get(n, "500KB"), get(n, "10MB"));
        let (na, nb) = (a / get("CRA", "500KB"), b / get("CRA", "10MB"));
        let _ = writeln!(table, "{n},{a:.3},{b:.3},{na:.3},{nb:.3}");
        series[0].1.push((i as f64, na));
        series[1].1.push((i as f64, nb));
    }
    write(&out.join("fig7.csv"), &table)?;
    print!("{table}");
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
    plot(
        &out.join("fig7_normalised.png"),
        &Chart {
            title: "Fig 7: transfer time normalised to CRA",
            x: "C = CRA, V = VBDC, R.1/R.5/R1 = RBDC gamma, n = n CRA + (32 - n) VBDC",
            y: "T / T_CRA",
            series,
            bars: Some(short),
        },
    )?;
    Ok(())
}

/// N terminals (VBDC) toward one gateway; `web`: request/response instead of bulk.
fn nst_text(n: usize, web: bool) -> String {
    let mut t = String::from(
        "seed = 1\nduration = \"60s\"\nstop_when_done = false\n[defaults.tcp]\ncc = \"reno\"\nrecovery = \"newreno\"\nsack = false\ninitial_window = 1\nrecv_buffer = \"1MB\"\n[[node]]\nname = \"gw\"\n",
    );
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

fn jain(x: &[f64]) -> f64 {
    let s: f64 = x.iter().sum();
    let s2: f64 = x.iter().map(|v| v * v).sum();
    if s2 == 0.0 {
        return f64::NAN;
    }
    s * s / (x.len() as f64 * s2)
}

fn nst(out: &Path) -> Res<()> {
    let mut table = String::from("traffic,terminals,sharing,jain_goodput,carrier_utilisation,mean_goodput_bps,wall_s,events\n");
    let mut rows = Vec::new();
    for web in [false, true] {
        for n in [10usize, 100, 1000] {
            for share in ["proportional", "max_min"] {
                let text = nst_text(n, web);
                let set = vec![format!("dama.rcs.controller.vbdc_share=\"{share}\"")];
                let dir = out
                    .join("nst")
                    .join(format!("{}-{n}-{share}", if web { "web" } else { "bulk" }));
                let wall = std::time::Instant::now();
                let s = run(Some(&text), &set, &dir)?;
                let wall = wall.elapsed().as_secs_f64();
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
                let mean = g.iter().sum::<f64>() / g.len() as f64;
                let kind = if web { "web" } else { "bulk" };
                let _ = writeln!(
                    table,
                    "{kind},{n},{share},{:.4},{util:.4},{mean:.0},{wall:.2},{}",
                    jain(&g),
                    s.events
                );
                rows.push((kind, n, share, jain(&g), util));
            }
        }
    }
    write(&out.join("nst.csv"), &table)?;
    print!("{table}");
    let mut series = Vec::new();
    for kind in ["bulk", "web"] {
        for share in ["proportional", "max_min"] {
            let pts = rows
                .iter()
                .filter(|r| r.0 == kind && r.2 == share)
                .enumerate()
                .map(|(i, r)| (i as f64, r.3))
                .collect();
            series.push((format!("Jain, {kind}, {share}"), pts));
        }
        let pts = rows
            .iter()
            .filter(|r| r.0 == kind && r.2 == "proportional")
            .enumerate()
            .map(|(i, r)| (i as f64, r.4))
            .collect();
        series.push((format!("utilisation, {kind}"), pts));
    }
    plot(
        &out.join("nst.png"),
        &Chart {
            title: "N terminals on one 2048 kb/s carrier (VBDC)",
            x: "",
            y: "Jain index / carrier utilisation",
            series,
            bars: Some(vec!["10".into(), "100".into(), "1000".into()]),
        },
    )?;
    Ok(())
}

fn main() -> Res<()> {
    let _ = register_font("sans-serif", FontStyle::Normal, dejavu::sans::regular());
    let args: Vec<String> = std::env::args().collect();
    let which = args.get(1).map_or("all", String::as_str);
    let out = PathBuf::from(args.get(2).map_or("results/roseti", String::as_str));
    fs::create_dir_all(&out)?;
    match which {
        "fig5a" => fig5a(&out),
        "fig5b" => fig5b(&out),
        "fig6" => fig6(&out),
        "fig7" => fig7(&out),
        "nst" => nst(&out),
        "all" => {
            fig5a(&out)?;
            fig5b(&out)?;
            fig6(&out)?;
            fig7(&out)?;
            nst(&out)
        }
        other => Err(
            format!("unknown experiment `{other}`: fig5a, fig5b, fig6, fig7, nst or all").into(),
        ),
    }
}
