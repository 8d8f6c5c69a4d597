//! Lee, Yum & Wan (TCP-SuperCharger): Table 2 and Figs 8–9, a slow receiving application, a
//! sweep of RTT × rate, and Table 1 (the WINDS channel-release anomaly). Each runs the scenarios
//! of `scenarios/lee/` (embedded) with their outputs under `table2/`, `slow_app/`, `sweep/`,
//! `table1/`, and reads every number back from the simulator's own `flows.csv`: goodput over a
//! window is the difference of `delivered_bytes` at its two ends.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use satpep_scenario::Scenario;

use super::figure::Figures;
use super::{fixed, load, md_table, par_map, run_scenario, Error, Res, Table};

const TABLE1: &str = include_str!("../../../../scenarios/lee/table1.toml");
const TABLE2: &str = include_str!("../../../../scenarios/lee/table2.toml");
const SWEEP: &str = include_str!("../../../../scenarios/lee/sweep.toml");
const GATEWAY: &str = "node.gateway.middlebox={ kind = \"supercharger\" }";

/// One row of flows.csv, the columns we use.
#[derive(Clone, Copy, Debug)]
struct Row {
    t: f64,
    srtt_ms: Option<f64>,
    rwnd: f64,
    delivered: f64,
}

pub(super) fn run(dir: &Path, figs: &mut Figures) -> Res<Vec<Table>> {
    // Every simulation first, all on every core; then the tables from their flows.csv.
    let mut jobs: Jobs = Vec::new();
    let t2 = table2_jobs(&dir.join("table2"))?;
    let slow = slow_jobs(&dir.join("slow_app"))?;
    let sweep = sweep_jobs(&dir.join("sweep"))?;
    let t1 = table1_jobs(&dir.join("table1"))?;
    let nows = nows_jobs(&dir.join("no_wscale"))?;
    let f1 = fig1_jobs(&dir.join("fig1"))?;
    let udp = udp_jobs(&dir.join("table1_udp"))?;
    for j in [&t2, &slow, &sweep.0, &t1, &nows, &f1, &udp] {
        jobs.extend(j.iter().cloned());
    }
    let summaries = par_map(&jobs, |(d, sc)| run_scenario(sc, d))?;
    // The sweep's summaries, in the order of its keys.
    let first = t2.len() + slow.len();
    let sweep_summaries = summaries
        .get(first..first + sweep.0.len())
        .ok_or("lee: sweep summaries missing")?;
    let udp_summaries = summaries
        .get(summaries.len() - udp.len()..)
        .ok_or("lee: UDP summaries missing")?;
    Ok(vec![
        table2(&dir.join("table2"), figs)?,
        slow_app(&dir.join("slow_app"), &slow[0].1, figs)?,
        sweep_table(&dir.join("sweep"), &sweep.1, sweep_summaries, figs)?,
        table1(&dir.join("table1"), figs)?,
        no_wscale(&dir.join("no_wscale"))?,
        fig1(&dir.join("fig1"), figs)?,
        fig4(&dir.join("table2"), &dir.join("no_wscale"), figs)?,
        table1_udp(&dir.join("table1_udp"), udp_summaries)?,
        table1_udp_background(&dir.join("table1_udp"))?,
    ])
}

/// Table 2's five cases: (directory, label, gateway, receive buffer, paper's Mb/s).
const TABLE2_CASES: [(&str, &str, bool, &str, f64); 5] = [
    ("gw-64KB", "64 KB", true, "65535", 23.67),
    ("64KB", "64 KB", false, "65535", 0.53),
    ("1MB", "1 MB", false, "1024KiB", 8.69),
    ("2MB", "2 MB", false, "2048KiB", 17.39),
    ("4MB", "4 MB", false, "4096KiB", 23.72),
];

fn table2_jobs(out: &Path) -> Res<Jobs> {
    TABLE2_CASES
        .iter()
        .map(|&(d, _, gw, buf, _)| {
            let mut set = vec![format!("defaults.tcp.recv_buffer={buf}")];
            if gw {
                set.push(GATEWAY.into());
            }
            Ok((out.join(d), load(TABLE2, "table2.toml", &set)?.scenario))
        })
        .collect()
}

/// Table 2 / Figs 8–9: goodput over 25–40 s.
fn table2(out: &Path, figs: &mut Figures) -> Res<Table> {
    let mut csv = String::from(
        "case,gateway,throughput_25_40_bps,utilisation,paper_throughput_bps,paper_utilisation\n",
    );
    let (mut fig8, mut fig9, mut rows) = (Vec::new(), Vec::new(), Vec::new());
    for (d, label, gw, _, paper) in TABLE2_CASES {
        let flow = read_flow(&out.join(d), "bulk")?;
        let tput = goodput(&flow, 25.0, 40.0);
        let util = tput / 24e6;
        writeln!(
            csv,
            "{d},{gw},{tput:.0},{util:.4},{:.0},{:.4}",
            paper * 1e6,
            paper / 24.0
        )?;
        rows.push(vec![
            label.to_string(),
            if gw { "yes" } else { "no" }.to_string(),
            fixed(tput / 1e6, 2),
            format!("{} %", fixed(util * 100.0, 1)),
            fixed(paper, 2),
            format!("{} %", fixed(paper / 24.0 * 100.0, 1)),
        ]);
        let legend = if gw {
            format!("{label} + gateway")
        } else {
            label.to_string()
        };
        fig8.push((legend.clone(), throughput_series(&flow, 1.0)));
        fig9.push((
            legend,
            flow.iter().map(|r| (r.t, r.rwnd / 1024.0)).collect(),
        ));
    }
    super::write(&out.join("table2.csv"), &csv)?;
    figs.line(
        "fig8_throughput",
        "Fig 8: CUBIC over 24 Mb/s, RTT 1 s (goodput per second)",
        "time (s)",
        "goodput (Mb/s)",
        None,
        false,
        fig8,
    )?;
    figs.line(
        "fig9_window",
        "Fig 9: window the sender sees (receiver's, or the gateway's)",
        "time (s)",
        "advertised window (KiB)",
        None,
        false,
        fig9,
    )?;
    Ok(Table {
        name: "table2".into(),
        markdown: md_table(
            &[
                "receive buffer",
                "gateway",
                "ours (Mb/s)",
                "ours (util.)",
                "paper (Mb/s)",
                "paper (util.)",
            ],
            rows,
        ),
    })
}

/// The receiver offers no window scaling (the paper's Windows XP receiver with 64 KB, and the
/// 17 KB of §1); the sender does.
const NO_WSCALE: &str = "flow.bulk.to_tcp={ window_scaling = false }";

/// How the gateway is set up in a run.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Gw {
    /// No gateway.
    Off,
    /// The gateway, negotiating window scaling on the receiver's behalf.
    On,
    /// The gateway with `add_wscale = false` (the virtual window stops at 64 KB).
    NoNegotiation,
    /// The gateway estimating the receiver's rate over k = 2 ACKs instead of 8.
    TwoAcks,
}

impl Gw {
    fn set(self) -> Option<&'static str> {
        match self {
            Self::Off => None,
            Self::On => Some(GATEWAY),
            Self::NoNegotiation => {
                Some("node.gateway.middlebox={ kind = \"supercharger\", add_wscale = false }")
            }
            Self::TwoAcks => {
                Some("node.gateway.middlebox={ kind = \"supercharger\", rate_window_acks = 2 }")
            }
        }
    }

    fn label(self) -> &'static str {
        match self {
            Self::Off => "no",
            Self::On => "yes",
            Self::NoNegotiation => "yes, without negotiation",
            Self::TwoAcks => "yes, k = 2",
        }
    }
}

/// The reference a run is judged against.
#[derive(Clone, Copy, Debug)]
enum Reference {
    /// A number the paper states (Mb/s), and where.
    Paper(f64, &'static str),
    /// window / RTT (bytes, seconds): what a window-limited flow can do, in whole segments of
    /// 1448 bytes of payload.
    WindowPerRtt(f64, f64),
}

impl Reference {
    fn mbps(self) -> f64 {
        match self {
            Self::Paper(m, _) => m,
            Self::WindowPerRtt(w, rtt) => (w / 1448.0).floor() * 1448.0 * 8.0 / rtt / 1e6,
        }
    }

    fn describe(self) -> String {
        match self {
            Self::Paper(m, at) => format!("paper: {} ({at})", fixed(m, 3)),
            Self::WindowPerRtt(w, rtt) => format!(
                "{:.0} × 1448 B / {} s = {}",
                (w / 1448.0).floor(),
                fixed(rtt, 3),
                fixed(self.mbps(), 3)
            ),
        }
    }
}

/// Verdict of `ours` against a reference: within 5 % agrees (our goodput is the 96.5 % payload
/// share of the link where the paper's is 98.6 %: 2 % of the 5 %).
fn verdict(ours: f64, reference: f64) -> String {
    let d = (ours / reference - 1.0) * 100.0;
    let word = if d.abs() <= 5.0 { "agrees" } else { "differs" };
    format!("{word} ({d:+.1} %)")
}

/// Receivers without window scaling: (directory, label, receive buffer, gateway, reference).
const NOWS_CASES: [(&str, &str, &str, Gw, Reference); 6] = [
    (
        "gw-64KB",
        "64 KB",
        "65535",
        Gw::On,
        Reference::Paper(23.67, "Table 2"),
    ),
    (
        "gw-plain-64KB",
        "64 KB",
        "65535",
        Gw::NoNegotiation,
        Reference::WindowPerRtt(65_535.0, 1.004),
    ),
    (
        "64KB",
        "64 KB",
        "65535",
        Gw::Off,
        Reference::Paper(0.53, "Table 2"),
    ),
    (
        "gw-17KB",
        "17 KB",
        "17520",
        Gw::On,
        Reference::Paper(23.67, "as 64 KB: §1, §4 (b)"),
    ),
    (
        "gw-k2-17KB",
        "17 KB",
        "17520",
        Gw::TwoAcks,
        Reference::Paper(23.67, "as 64 KB: §1, §4 (b)"),
    ),
    (
        "17KB",
        "17 KB",
        "17520",
        Gw::Off,
        Reference::WindowPerRtt(17_520.0, 1.004),
    ),
];

fn nows_jobs(out: &Path) -> Res<Jobs> {
    NOWS_CASES
        .iter()
        .map(|&(d, _, buf, gw, _)| {
            let mut set = vec![format!("defaults.tcp.recv_buffer={buf}"), NO_WSCALE.into()];
            set.extend(gw.set().map(String::from));
            Ok((out.join(d), load(TABLE2, "table2.toml", &set)?.scenario))
        })
        .collect()
}

/// Table 2's path with a receiver that offers no window scaling: goodput over 25–40 s.
fn no_wscale(out: &Path) -> Res<Table> {
    let mut csv = String::from("case,gateway,throughput_25_40_bps,reference_bps\n");
    let mut rows = Vec::new();
    for (d, label, _, gw, reference) in NOWS_CASES {
        let flow = read_flow(&out.join(d), "bulk")?;
        let tput = goodput(&flow, 25.0, 40.0);
        writeln!(
            csv,
            "{d},{},{tput:.0},{:.0}",
            gw.label(),
            reference.mbps() * 1e6
        )?;
        rows.push(vec![
            label.to_string(),
            gw.label().to_string(),
            reference.describe(),
            fixed(tput / 1e6, 3),
            format!("{} %", fixed(tput / 24e6 * 100.0, 1)),
            verdict(tput / 1e6, reference.mbps()),
        ]);
    }
    super::write(&out.join("no_wscale.csv"), &csv)?;
    Ok(Table {
        name: "no_wscale".into(),
        markdown: md_table(
            &[
                "receive buffer (no scaling)",
                "gateway",
                "paper or analytic (Mb/s)",
                "ours (Mb/s)",
                "ours (util.)",
                "verdict",
            ],
            rows,
        ),
    })
}

/// Fig 1's path: 100 Mb/s, 275 ms each way (RTT 0.554 s with the access link: the paper gives
/// no RTT, 17 520 B per 256 kb/s is 0.55 s), a 17 KB receiver without window scaling.
const FIG1_SET: [&str; 5] = [
    "link.forward.rate=100Mbps",
    "link.return.rate=100Mbps",
    "link.forward.delay=275ms",
    "link.return.delay=275ms",
    "defaults.tcp.recv_buffer=17520",
];

fn fig1_jobs(out: &Path) -> Res<Jobs> {
    [("plain", Gw::Off), ("gw", Gw::On), ("gw-k2", Gw::TwoAcks)]
        .iter()
        .map(|&(d, gw)| {
            let mut set: Vec<String> = FIG1_SET.iter().map(|s| s.to_string()).collect();
            set.push(NO_WSCALE.into());
            set.extend(gw.set().map(String::from));
            Ok((out.join(d), load(TABLE2, "table2.toml", &set)?.scenario))
        })
        .collect()
}

/// Fig 1: goodput and the window the sender sees (25–40 s), without and with the gateway.
fn fig1(out: &Path, figs: &mut Figures) -> Res<Table> {
    let (mut rows, mut series) = (Vec::new(), Vec::new());
    let mut csv = String::from("case,throughput_25_40_bps,rwnd_min,rwnd_max\n");
    for (d, gw, reference) in [
        ("plain", Gw::Off, Reference::Paper(0.256, "§1")),
        (
            "gw",
            Gw::On,
            Reference::Paper(100.0 * 0.986, "98.6 % of the link, as Table 2"),
        ),
        (
            "gw-k2",
            Gw::TwoAcks,
            Reference::Paper(100.0 * 0.986, "98.6 % of the link, as Table 2"),
        ),
    ] {
        let flow = read_flow(&out.join(d), "bulk")?;
        let tput = goodput(&flow, 25.0, 40.0);
        let window = flow.iter().filter(|r| r.t >= 25.0 && r.t <= 40.0);
        let (lo, hi) = window.fold((f64::MAX, 0.0f64), |(lo, hi), r| {
            (lo.min(r.rwnd), hi.max(r.rwnd))
        });
        writeln!(csv, "{d},{tput:.0},{lo:.0},{hi:.0}")?;
        rows.push(vec![
            gw.label().to_string(),
            reference.describe(),
            fixed(tput / 1e6, 3),
            format!("{lo:.0}–{hi:.0} B"),
            verdict(tput / 1e6, reference.mbps()),
        ]);
        if gw == Gw::Off {
            series.push((
                "17 KB receiver, no gateway".to_string(),
                flow.iter().map(|r| (r.t, r.rwnd / 1024.0)).collect(),
            ));
        }
    }
    super::write(&out.join("fig1.csv"), &csv)?;
    figs.line(
        "fig1_window",
        "Fig 1: a 17 KB receiver's advertised window (100 Mb/s, RTT 0.554 s)",
        "time (s)",
        "advertised window (KiB)",
        None,
        false,
        series,
    )?;
    Ok(Table {
        name: "fig1".into(),
        markdown: md_table(
            &[
                "gateway",
                "paper (Mb/s)",
                "ours (Mb/s)",
                "window the sender sees, 25–40 s",
                "verdict",
            ],
            rows,
        ),
    })
}

/// Fig 4: stop-and-go. Per 100 ms of 25–40 s, the bytes delivered: a 64 KB window per 1 s
/// round trip arrives in bursts at link rate, then nothing; the gateway keeps the link busy.
fn fig4(table2: &Path, nows: &Path, figs: &mut Figures) -> Res<Table> {
    let (mut rows, mut series) = (Vec::new(), Vec::new());
    for (dir, label) in [
        (table2.join("64KB"), "64 KB, no gateway"),
        (nows.join("gw-64KB"), "64 KB without scaling, gateway"),
    ] {
        let flow = read_flow(&dir, "bulk")?;
        let bins: Vec<(f64, f64)> = flow
            .windows(2)
            .filter(|w| w[1].t > 25.0 + 1e-9 && w[1].t <= 40.0 + 1e-9)
            .map(|w| (w[1].t, w[1].delivered - w[0].delivered))
            .collect();
        let busy = bins.iter().filter(|b| b.1 > 0.0).count();
        // A full 100 ms at 24 Mb/s carries 300 000 bytes on the wire.
        let peak = bins.iter().map(|b| b.1).fold(0.0, f64::max);
        rows.push(vec![
            label.to_string(),
            format!("{busy} of {}", bins.len()),
            format!("{peak:.0} B"),
        ]);
        series.push((
            label.to_string(),
            bins.iter()
                .filter(|b| b.0 <= 30.0 + 1e-9)
                .map(|&(t, b)| (t, b * 8.0 / 0.1 / 1e6))
                .collect(),
        ));
    }
    figs.line(
        "fig4_stop_and_go",
        "Fig 4: goodput per 100 ms, 24 Mb/s, RTT 1 s (25–30 s)",
        "time (s)",
        "goodput (Mb/s)",
        None,
        false,
        series,
    )?;
    Ok(Table {
        name: "fig4".into(),
        markdown: md_table(
            &[
                "",
                "100 ms intervals with data, 25–40 s",
                "most bytes in one interval",
            ],
            rows,
        ),
    })
}

fn slow_jobs(out: &Path) -> Res<Jobs> {
    let common = [
        "defaults.tcp.app_read_rate=5Mbps",
        "flow.bulk.app={ kind = \"bulk\", bytes = \"10MB\" }",
        "duration=\"200s\"",
        "stop_when_done=true",
    ];
    let mut with: Vec<String> = common.iter().map(|s| s.to_string()).collect();
    with.push(GATEWAY.into());
    let without: Vec<String> = common.iter().map(|s| s.to_string()).collect();
    Ok(vec![
        (out.join("gw"), load(TABLE2, "table2.toml", &with)?.scenario),
        (
            out.join("plain"),
            load(TABLE2, "table2.toml", &without)?.scenario,
        ),
    ])
}

/// Slow receiver application (reads 5 Mb/s, 10 MB): with and without the gateway.
fn slow_app(out: &Path, with_gateway: &Scenario, figs: &mut Figures) -> Res<Table> {
    let estimate = rate_estimate(with_gateway)?;
    let (mut tput, mut wnd, mut rows) = (Vec::new(), Vec::new(), Vec::new());
    let mut csv = String::from("case,goodput_bps,completion_s\n");
    for (d, label) in [("gw", "gateway"), ("plain", "no gateway")] {
        let flow = read_flow(&out.join(d), "bulk")?;
        let done = flow
            .iter()
            .find(|r| r.delivered >= 10_000_000.0)
            .map(|r| r.t);
        let end = done.unwrap_or_else(|| flow.last().map_or(0.0, |r| r.t));
        let g = goodput(&flow, 0.0, end);
        writeln!(
            csv,
            "{d},{g:.0},{}",
            done.map_or(String::new(), |d| d.to_string())
        )?;
        rows.push(vec![
            label.to_string(),
            format!("{} Mb/s", fixed(g / 1e6, 2)),
            format!("{} Mb/s", fixed(goodput(&flow, 20.0, 25.0) / 1e6, 2)),
            done.map_or("not done".into(), |d| format!("{} s", fixed(d, 1))),
            match (d, estimate) {
                ("gw", Some(e)) => format!("{e:.0} B/s"),
                _ => "—".into(),
            },
        ]);
        tput.push((label.to_string(), throughput_series(&flow, 1.0)));
        wnd.push((
            label.to_string(),
            flow.iter().map(|r| (r.t, r.rwnd / 1024.0)).collect(),
        ));
    }
    super::write(&out.join("slow_app.csv"), &csv)?;
    figs.line(
        "slow_app_throughput",
        "Receiver application reads 5 Mb/s (64 KB, 24 Mb/s, RTT 1 s)",
        "time (s)",
        "goodput (Mb/s)",
        None,
        false,
        tput,
    )?;
    figs.line(
        "slow_app_window",
        "Receiver application reads 5 Mb/s: window the sender sees",
        "time (s)",
        "advertised window (KiB)",
        None,
        false,
        wnd,
    )?;
    Ok(Table {
        name: "slow_app".into(),
        markdown: md_table(
            &[
                "",
                "goodput (whole transfer)",
                "goodput 20–25 s",
                "10 MB done at",
                "gateway's rate estimate then",
            ],
            rows,
        ),
    })
}

/// The gateway's estimate of the receiving application's rate (eq. 3, bytes/s) when the
/// receiver has the 10 MB of the slow-application run (checked every 100 ms). A run of its own,
/// without outputs: the one that writes flows.csv is not stopped to be looked at.
fn rate_estimate(sc: &Scenario) -> Res<Option<f64>> {
    use satpep_proto::middlebox::Middlebox;
    use satpep_proto::{Duration, Instant};

    let gw = super::node(sc, "gateway", "table2.toml")?;
    let mut sim = crate::Simulation::new(sc);
    let end = Instant::ZERO + sc.duration;
    let mut t = Instant::ZERO;
    while t < end && sim.listener(0).bytes_delivered() < 10_000_000 {
        t = (t + Duration::from_millis(100)).min(end);
        sim.run_until(t);
    }
    Ok(match sim.middlebox(gw) {
        Some(Middlebox::Supercharger(s)) => s.estimates().first().and_then(|e| e.rate),
        _ => None,
    })
}

const SWEEP_RTTS_MS: [u64; 5] = [100, 250, 500, 1000, 2000];

/// One sweep run: RTT, link rate (Mb/s), gateway.
type SweepKey = (u64, f64, bool);

/// Simulations to run: output directory and scenario.
type Jobs = Vec<(PathBuf, Scenario)>;

fn sweep_jobs(out: &Path) -> Res<(Jobs, Vec<SweepKey>)> {
    let (mut jobs, mut keys) = (Vec::new(), Vec::new());
    for rtt in SWEEP_RTTS_MS {
        let half = rtt / 2;
        let set = vec![
            format!("link.forward.delay={half}ms"),
            format!("link.return.delay={half}ms"),
        ];
        let loaded = load(SWEEP, "sweep.toml", &set)?;
        for (i, p) in loaded.sweep.into_iter().enumerate() {
            let rate = p
                .assignments
                .iter()
                .find(|(k, _)| k == "link.forward.rate")
                .map(|(_, v)| mbps(v))
                .ok_or("sweep.toml: no link.forward.rate in the sweep")?;
            let gw = p
                .assignments
                .iter()
                .any(|(_, v)| v.contains("supercharger"));
            jobs.push((
                out.join(format!("rtt-{rtt:04}"))
                    .join(format!("run-{i:03}")),
                p.scenario,
            ));
            keys.push((rtt, rate, gw));
        }
    }
    Ok((jobs, keys))
}

/// Utilisation over the last 15 s of 80, without and with the gateway.
fn sweep_table(
    out: &Path,
    keys: &[SweepKey],
    summaries: &[satpep_output::Summary],
    figs: &mut Figures,
) -> Res<Table> {
    // Retransmissions of the gateway's runs, per RTT (least, most).
    let mut retx: BTreeMap<u64, (u64, u64)> = BTreeMap::new();
    for (&(rtt, _, gw), s) in keys.iter().zip(summaries) {
        let r: u64 = s.flows.iter().map(|f| f.retransmissions).sum();
        if gw {
            let e = retx.entry(rtt).or_insert((r, r));
            *e = (e.0.min(r), e.1.max(r));
        }
    }
    let mut csv = String::from("rtt_ms,rate_mbps,gateway,goodput_bps,utilisation\n");
    let mut util: BTreeMap<(bool, u64, u64), f64> = BTreeMap::new(); // (gw, rate kb/s, rtt)
    let mut counts: BTreeMap<u64, usize> = BTreeMap::new();
    for &(rtt, rate, gw) in keys {
        let i = counts.entry(rtt).or_default();
        let flow = read_flow(
            &out.join(format!("rtt-{rtt:04}"))
                .join(format!("run-{i:03}")),
            "bulk",
        )?;
        *i += 1;
        let end = flow.last().map_or(0.0, |r| r.t);
        let g = goodput(&flow, end - 15.0, end);
        let u = g / (rate * 1e6);
        writeln!(csv, "{rtt},{rate},{gw},{g:.0},{u:.4}")?;
        util.insert((gw, (rate * 1e3).round() as u64, rtt), u * 100.0);
    }
    super::write(&out.join("sweep.csv"), &csv)?;
    let rates: Vec<u64> = {
        let mut r: Vec<u64> = util.keys().map(|k| k.1).collect();
        r.dedup();
        r.sort_unstable();
        r.dedup();
        r
    };
    let cell = |gw: bool, rtt: u64| -> String {
        rates
            .iter()
            .map(|&r| util.get(&(gw, r, rtt)).map_or("—".into(), |u| fixed(*u, 1)))
            .collect::<Vec<_>>()
            .join(" / ")
    };
    let rows = SWEEP_RTTS_MS
        .iter()
        .map(|&rtt| {
            let name = if rtt >= 1000 {
                format!("{} s", rtt / 1000)
            } else {
                format!("{rtt} ms")
            };
            let r = retx.get(&rtt).map_or("—".into(), |&(lo, hi)| {
                if lo == hi {
                    lo.to_string()
                } else {
                    format!("{lo}–{hi}")
                }
            });
            vec![
                name,
                format!("{} %", cell(false, rtt)),
                format!("{} %", cell(true, rtt)),
                r,
            ]
        })
        .collect();
    let rate_names = rates
        .iter()
        .map(|r| (*r as f64 / 1e3).to_string())
        .collect::<Vec<_>>()
        .join(" / ");
    let without = format!("without: {rate_names} Mb/s");
    let with = format!("with the gateway: {rate_names} Mb/s");
    // Series with identical points (the gateway's, typically) are drawn once, named by the
    // range of rates they cover.
    // (gateway, rates in kb/s, points)
    type Merged = (bool, Vec<u64>, Vec<(f64, f64)>);
    let mut merged: Vec<Merged> = Vec::new();
    for gw in [false, true] {
        for &r in &rates {
            let pts: Vec<(f64, f64)> = SWEEP_RTTS_MS
                .iter()
                .filter_map(|&rtt| {
                    util.get(&(gw, r, rtt))
                        .map(|u| (rtt as f64, (u * 10.0).round() / 10.0))
                })
                .collect();
            match merged.iter_mut().find(|m| m.0 == gw && m.2 == pts) {
                Some(m) => m.1.push(r),
                None => merged.push((gw, vec![r], pts)),
            }
        }
    }
    let series = merged
        .into_iter()
        .map(|(gw, rs, pts)| {
            let who = if gw { "gateway" } else { "64 KB" };
            let mb = |r: &u64| (*r as f64 / 1e3).to_string();
            let r = match (rs.first(), rs.last()) {
                (Some(a), Some(b)) if a != b => format!("{}–{}", mb(a), mb(b)),
                (Some(a), _) => mb(a),
                _ => String::new(),
            };
            (format!("{who}, {r} Mb/s"), pts)
        })
        .collect();
    figs.line(
        "sweep_utilisation",
        "Utilisation, last 15 s of 80, 64 KB receiver window",
        "RTT (ms)",
        "goodput / link rate (%)",
        None,
        true,
        series,
    )?;
    Ok(Table {
        name: "sweep".into(),
        markdown: md_table(
            &["RTT", &without, &with, "retransmissions with the gateway"],
            rows,
        ),
    })
}

fn table1_jobs(out: &Path) -> Res<Jobs> {
    let loaded = load(TABLE1, "table1.toml", &[])?;
    Ok(loaded
        .sweep
        .into_iter()
        .enumerate()
        .map(|(i, p)| (out.join(format!("run-{i:03}")), p.scenario))
        .collect())
}

/// Table 1: table1.toml's sweep (background on × 3 buffers, then off); RTT and goodput over
/// 240–360 s.
fn table1(out: &Path, figs: &mut Figures) -> Res<Table> {
    let labels = [
        (true, 64),
        (true, 512),
        (true, 1024),
        (false, 64),
        (false, 512),
        (false, 1024),
    ];
    // Paper's Table 1 rows (background, buffer KB) -> (RTT s, Mb/s).
    let paper = |bg: bool, buf: u32| match (bg, buf) {
        (false, 64) => Some((5.78, 0.12)),
        (false, 512) => Some((5.78, 0.8)),
        (false, 1024) => Some((5.78, 4.0)),
        (true, 64) => Some((1.03, 0.5)),
        _ => None,
    };
    let mut csv = String::from(
        "background,buffer_kb,rtt_s,throughput_bps,paper_rtt_s,paper_throughput_bps\n",
    );
    let (mut pts, mut rows) = (Vec::new(), Vec::new());
    for (i, &(bg, buf)) in labels.iter().enumerate() {
        let flow = read_flow(&out.join(format!("run-{i:03}")), "tcp")?;
        let g = goodput(&flow, 240.0, 360.0);
        let rtt = mean_srtt(&flow, 240.0, 360.0) / 1e3;
        let p = paper(bg, buf);
        writeln!(
            csv,
            "{},{buf},{rtt:.3},{g:.0},{},{}",
            if bg { "Y" } else { "N" },
            p.map_or(String::new(), |p| p.0.to_string()),
            p.map_or(String::new(), |p| (p.1 * 1e6).to_string()),
        )?;
        rows.push(vec![
            if bg { "yes" } else { "no" }.to_string(),
            format!("{buf} KB"),
            format!("{} s", fixed(rtt, 3)),
            fixed(g / 1e6, 3),
            p.map_or("—".into(), |p| format!("{} s", p.0)),
            p.map_or("—".into(), |p| p.1.to_string()),
        ]);
        if buf == 64 {
            let who = if bg { "with" } else { "without" };
            pts.push((
                format!("64 KB flow, {who} background"),
                throughput_series(&flow, 5.0)
                    .into_iter()
                    .filter(|p| p.0 > 120.0)
                    .map(|(t, v)| (t, v * 1e3))
                    .collect(),
            ));
        }
    }
    super::write(&out.join("table1.csv"), &csv)?;
    figs.line(
        "table1_winds",
        "WINDS channel release (idle 500 ms, setup 2.375 s): 64 KB flow",
        "time (s)",
        "goodput per 5 s (kb/s)",
        None,
        false,
        pts,
    )?;
    Ok(Table {
        name: "table1".into(),
        markdown: md_table(
            &[
                "background",
                "buffer",
                "ours RTT",
                "ours Mb/s",
                "paper RTT",
                "paper Mb/s",
            ],
            rows,
        ),
    })
}

/// The background off (one byte), as table1.toml's sweep does.
const NO_BACKGROUND: &str = "flow.background.app={ kind = \"bulk\", bytes = \"1B\" }";

/// The paper's own background: 400 kb/s of UDP from NECTEC's LAN to CUHK (its access link
/// raised to 100 Mb/s, so that the CBR, not the link, sets the pace).
const UDP_BACKGROUND: [&str; 2] = [
    "flow.background.app={ kind = \"udp\", rate = \"400kbps\" }",
    "link.bg-access.rate=100Mbps",
];

/// The channel released only toward CUHK (the direction the paper's background kept busy),
/// with S = 4.75 s so that one round trip through one set-up is the measured
/// 1.03 + 4.75 = 5.78 s; the other direction is never released.
const RELEASE_TOWARD_CUHK: [&str; 2] = [
    "link.cuhk-nectec.channel_release={ idle = \"100000s\", setup = \"0s\" }",
    "link.nectec-cuhk.channel_release={ idle = \"500ms\", setup = \"4750ms\" }",
];

/// Table 1's UDP row: (directory, label, payload rate) of a CBR from CUHK to NECTEC on the
/// released channel without background, 1472-byte payloads for 70 s (the run lasts 72 s).
const UDP_CASES: [(&str, &str, &str); 2] = [
    ("udp-40M", "40 Mb/s of payload (iperf3 `-b 40M`)", "40Mbps"),
    (
        "udp-wire-40M",
        "39.253 Mb/s of payload: 40 Mb/s on the wire",
        "39253333bps",
    ),
];

/// Table 1 with a UDP background: (directory, background, release, paper RTT and Mb/s).
const UDP_BG_CASES: [(&str, &str, &str, f64, f64); 3] = [
    (
        "tcp-udpbg",
        "UDP 400 kb/s NECTEC → CUHK",
        "both directions, S = 2.375 s (as above)",
        1.03,
        0.5,
    ),
    (
        "tcp-udpbg-towardcuhk",
        "UDP 400 kb/s NECTEC → CUHK",
        "toward CUHK only, S = 4.75 s",
        1.03,
        0.5,
    ),
    (
        "tcp-nobg-towardcuhk",
        "none",
        "toward CUHK only, S = 4.75 s",
        5.78,
        0.12,
    ),
];

fn udp_jobs(out: &Path) -> Res<Jobs> {
    let mut jobs = Vec::new();
    for (d, _, rate) in UDP_CASES {
        let set = vec![
            NO_BACKGROUND.to_string(),
            // 70 s of sending, then 2 s for the last datagrams to arrive (a 515 ms hop and
            // up to 1000 queued packets): goodput is what arrived over the 70 s.
            format!("flow.tcp.app={{ kind = \"udp\", rate = \"{rate}\", duration = \"70s\" }}"),
            "flow.tcp.start=0s".into(),
            "duration=72s".into(),
        ];
        jobs.push((out.join(d), load(TABLE1, "table1.toml", &set)?.scenario));
    }
    for (d, bg, release, _, _) in UDP_BG_CASES {
        let mut set: Vec<String> = Vec::new();
        if bg == "none" {
            set.push(NO_BACKGROUND.into());
        } else {
            set.extend(UDP_BACKGROUND.iter().map(|s| s.to_string()));
        }
        if release.starts_with("toward") {
            set.extend(RELEASE_TOWARD_CUHK.iter().map(|s| s.to_string()));
        }
        jobs.push((out.join(d), load(TABLE1, "table1.toml", &set)?.scenario));
    }
    Ok(jobs)
}

/// Table 1's UDP row: goodput over the 70 s of sending, loss and jitter from the sink
/// (summary.json's `udp` block).
fn table1_udp(out: &Path, summaries: &[satpep_output::Summary]) -> Res<Table> {
    let mut csv = String::from("case,goodput_bps,packets_sent,lost_packets,jitter_ms\n");
    let mut rows = Vec::new();
    for ((d, label, _), s) in UDP_CASES.iter().zip(summaries) {
        let f = s.flows.first().ok_or("lee: UDP run without flows")?;
        let u = f.udp.as_ref().ok_or("lee: UDP run without a udp block")?;
        let loss = u.lost_packets as f64 / u.packets_sent.max(1) as f64 * 100.0;
        writeln!(
            csv,
            "{d},{:.0},{},{},{:.6}",
            f.goodput_bps, u.packets_sent, u.lost_packets, u.jitter_ms
        )?;
        rows.push(vec![
            label.to_string(),
            fixed(f.goodput_bps / 1e6, 3),
            format!(
                "{} of {} ({} %)",
                u.lost_packets,
                u.packets_sent,
                fixed(loss, 2)
            ),
            format!("{} ms", fixed(u.jitter_ms, 3)),
            "40, negligible loss".into(),
            verdict(f.goodput_bps / 1e6, 40.0),
        ]);
    }
    super::write(&out.join("table1_udp.csv"), &csv)?;
    Ok(Table {
        name: "table1_udp".into(),
        markdown: md_table(
            &[
                "UDP source, CUHK → NECTEC, no background",
                "ours (Mb/s)",
                "ours lost",
                "ours jitter",
                "paper (Mb/s)",
                "verdict",
            ],
            rows,
        ),
    })
}

/// Table 1's TCP rows with the paper's UDP background, under the two release models; the
/// 64 KB TCP flow's RTT and goodput over 240–360 s as in [`table1`].
fn table1_udp_background(out: &Path) -> Res<Table> {
    let mut csv = String::from("case,rtt_s,throughput_bps,paper_rtt_s,paper_throughput_bps\n");
    let mut rows = Vec::new();
    for (d, bg, release, p_rtt, p_mbps) in UDP_BG_CASES {
        let flow = read_flow(&out.join(d), "tcp")?;
        let g = goodput(&flow, 240.0, 360.0);
        let rtt = mean_srtt(&flow, 240.0, 360.0) / 1e3;
        writeln!(csv, "{d},{rtt:.3},{g:.0},{p_rtt},{}", p_mbps * 1e6)?;
        rows.push(vec![
            bg.to_string(),
            release.to_string(),
            format!("{} s", fixed(rtt, 3)),
            fixed(g / 1e6, 3),
            format!("{p_rtt} s"),
            p_mbps.to_string(),
        ]);
    }
    super::write(&out.join("table1_udp_background.csv"), &csv)?;
    Ok(Table {
        name: "table1_udp_background".into(),
        markdown: md_table(
            &[
                "background",
                "channel release",
                "ours RTT",
                "ours Mb/s (64 KB)",
                "paper RTT",
                "paper Mb/s",
            ],
            rows,
        ),
    })
}

/// Rows of flow `flow` in `dir/flows.csv`.
fn read_flow(dir: &Path, flow: &str) -> Res<Vec<Row>> {
    let path = dir.join("flows.csv");
    let text =
        std::fs::read_to_string(&path).map_err(|e| Error(format!("{}: {e}", path.display())))?;
    let mut lines = text.lines();
    let header: Vec<&str> = lines
        .next()
        .ok_or_else(|| Error(format!("{}: empty", path.display())))?
        .split(',')
        .collect();
    let col = |name: &str| {
        header
            .iter()
            .position(|h| *h == name)
            .ok_or_else(|| Error(format!("{}: no column {name}", path.display())))
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

/// `"24Mbps"`-style rates (as the sweep writes them) in Mb/s.
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

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(v: &[(f64, f64)]) -> Vec<Row> {
        v.iter()
            .map(|&(t, d)| Row {
                t,
                srtt_ms: Some(1000.0),
                rwnd: 65535.0,
                delivered: d,
            })
            .collect()
    }

    #[test]
    fn goodput_is_the_difference_of_delivered_bytes_over_the_window() {
        // 3 MB between 25 s and 40 s: 1.6 Mb/s.
        let r = rows(&[(20.0, 0.0), (25.0, 1e6), (40.0, 4e6)]);
        assert!((goodput(&r, 25.0, 40.0) - 1.6e6).abs() < 1e-6);
        // Per 20 s: nothing by 20 s, then 4 MB in the next 20 s.
        assert_eq!(throughput_series(&r, 20.0), vec![(20.0, 0.0), (40.0, 1.6)]);
    }

    #[test]
    fn sweep_rates_parse_in_mbps() {
        assert_eq!(mbps("\"24Mbps\""), 24.0);
        assert_eq!(mbps("1Gbps"), 1000.0);
        assert_eq!(mbps("512kbps"), 0.512);
    }
}
