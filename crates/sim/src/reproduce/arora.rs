//! Arora et al. (DirecPC): throughput vs the Internet host's window, without enhancement, with
//! TCP spoofing, with spoofing + selective ACK dropping, for three return-path cases. Writes
//! `arora.csv`, one figure and one table per case; table `paths`: asymmetric routing through the
//! terminal's IP-in-IP tunnel (`arora_paths.toml`).

use std::fmt::Write as _;
use std::path::Path;

use super::figure::Figures;
use super::{fixed, md_table, par_map, Grid, Res, Table};
use crate::experiments::arora::{
    run as run_one, run_many, run_multicast, run_tunnelled, Config, Outcome,
};

const WINDOWS_KIB: [u64; 5] = [4, 8, 16, 32, 64];

/// (name, title, extra overrides)
const CASES: [(&str, &str, &[&str]); 3] = [
    (
        "acks2_28k8",
        "client ACKs every 2nd segment, 28.8 kb/s return",
        &[],
    ),
    (
        "acks1_28k8",
        "client ACKs every segment, 28.8 kb/s return",
        &["flow.download.tcp.delack_segments=1"],
    ),
    (
        "acks1_14k4",
        "client ACKs every segment, 14.4 kb/s return",
        &[
            "flow.download.tcp.delack_segments=1",
            "link.dialup.rate=14.4kbps",
        ],
    ),
];

pub(super) fn run(dir: &Path, figs: &mut Figures) -> Res<Vec<Table>> {
    let points: Vec<(usize, Config, u64)> = (0..CASES.len())
        .flat_map(|c| {
            Config::ALL
                .into_iter()
                .flat_map(move |cfg| WINDOWS_KIB.map(|w| (c, cfg, w)))
        })
        .collect();
    let outcomes = par_map(&points, |&(c, cfg, w)| {
        let extra: Vec<String> = CASES[c].2.iter().map(|s| s.to_string()).collect();
        run_one(cfg, w * 1024, &extra)
    })?;
    let mut csv = String::from(
        "case,config,window_bytes,throughput_bps,spoofed_acks,gw_retransmissions,dialup_queue_drops\n",
    );
    let mut tables = Vec::new();
    for (c, (acks, title, _)) in CASES.iter().enumerate() {
        let windows = WINDOWS_KIB.iter().map(u64::to_string);
        let mut grid = Grid::new("window (KiB)", windows, 0);
        for cfg in Config::ALL {
            let mut kbps = Vec::new();
            for w in WINDOWS_KIB {
                let k = points
                    .iter()
                    .position(|p| *p == (c, cfg, w))
                    .ok_or("arora: point missing")?;
                let o = &outcomes[k];
                writeln!(
                    csv,
                    "{acks},{},{},{:.0},{},{},{}",
                    cfg.name(),
                    w * 1024,
                    o.throughput_bps,
                    o.spoofed_acks,
                    o.gw_retransmissions,
                    o.dialup_queue_drops
                )?;
                kbps.push(o.throughput_bps / 1e3);
            }
            grid.row(label(cfg), cfg.name(), &kbps);
        }
        let (table, series) = grid.finish(acks);
        tables.push(table);
        figs.line(
            acks,
            &format!("DirecPC, 2 MB, 1 Mb/s satellite: {title}"),
            "Internet host window (KiB)",
            "throughput (kb/s)",
            Some(WINDOWS_KIB.iter().map(u64::to_string).collect()),
            true,
            series,
        )?;
    }
    super::write(&dir.join("arora.csv"), &csv)?;
    tables.push(paths()?);
    tables.extend(tunnel()?);
    tables.push(many()?);
    tables.push(multicast(figs)?);
    Ok(tables)
}

/// The paper's multicast extension (`scenarios/arora/multicast.toml`): two terminals' clients
/// join and leave a 500 kb/s group; joins travel over the dial-ups. Table and figure
/// `multicast`.
fn multicast(figs: &mut Figures) -> Res<Table> {
    let runs = par_map(&[false, true], |&nobody| {
        let extra: Vec<String> = if nobody {
            vec!["node.c1.groups=[]".into(), "node.c2.groups=[]".into()]
        } else {
            Vec::new()
        };
        run_multicast(&extra)
    })?;
    let (o, none) = (&runs[0], &runs[1]);
    let counter = |o: &crate::experiments::arora::MulticastOutcome, node: &str, k: &str| {
        (o.summary.multicast_routers.iter())
            .find(|r| r.node == node)
            .and_then(|r| r.counters.get(k).copied())
            .unwrap_or(0)
    };
    let group = |node: &str| o.summary.groups.iter().find(|g| g.node == node);
    let mut rows = Vec::new();
    for (node, term, join, leave) in [("c1", "t1", 10.0, 60.0), ("c2", "t2", 30.0, 80.0)] {
        let g = group(node).ok_or("multicast: a receiver is missing")?;
        let (first, last) = (g.first_s.unwrap_or(f64::NAN), g.last_s.unwrap_or(f64::NAN));
        let after_leave = counter(o, term, "copies_sent").saturating_sub(g.packets);
        // One datagram per 16 ms: every one from the first to the last, or how many are not.
        let expected = ((last - first) / 0.016).round() as u64 + 1;
        let lost = match expected.saturating_sub(g.packets) {
            0 => "none lost".to_string(),
            n => format!("{n} lost"),
        };
        rows.push(vec![
            format!("{node} behind {term}: joins at {join:.0} s, leaves at {leave:.0} s"),
            format!(
                "first datagram {} s ({:.0} ms after the join), last {} s; {} datagrams, {lost}; \
                 {} more reached the LAN in the {} s after the leave",
                fixed(first, 3),
                (first - join) * 1e3,
                fixed(last, 3),
                g.packets,
                after_leave,
                fixed(after_leave as f64 * 0.016, 1),
            ),
        ]);
    }
    let (a, b) = o.satellite_stream.unwrap_or((f64::NAN, f64::NAN));
    rows.push(vec![
        "the stream on the satellite channel".into(),
        format!(
            "{}–{} s: {} of the {} datagrams sent, one copy for both terminals",
            fixed(a - 0.1, 1),
            fixed(b, 1),
            counter(o, "gw", "copies_sent"),
            o.sent
        ),
    ]);
    rows.push(vec![
        "IGMP over the two 28.8 kb/s dial-ups".into(),
        format!(
            "{} messages, {} bytes in 100 s ({} reports and {} leaves received at the \
             gateway, {} group-specific queries sent by it)",
            o.dialup_igmp.0,
            o.dialup_igmp.1,
            counter(o, "gw", "reports_received"),
            counter(o, "gw", "leaves_received"),
            counter(o, "gw", "group_queries_sent"),
        ),
    ]);
    rows.push(vec![
        "nobody joins".into(),
        format!(
            "{} datagrams on the satellite: the gateway discards every one that reaches it \
             ({} of {}, no member); no IGMP crosses the dial-ups ({} messages)",
            counter(none, "gw", "copies_sent"),
            counter(none, "gw", "no_members"),
            counter(none, "gw", "data_received"),
            none.dialup_igmp.0,
        ),
    ]);
    let names = ["satellite channel", "c1's LAN (t1-c1)", "c2's LAN (t2-c2)"];
    // Per second (ten 100 ms samples): a 100 ms bin holds 6 or 7 datagrams of the 16 ms stream.
    let series = (0..3)
        .map(|k| {
            let per_s = (o.series.chunks_exact(10))
                .map(|c| (c[9].0, c.iter().map(|&(_, v)| v[k]).sum::<f64>() / 10.0))
                .collect();
            (names[k].to_string(), per_s)
        })
        .collect();
    figs.line(
        "multicast",
        "IP multicast over DirecPC: 500 kb/s group, c1 in 10–60 s, c2 in 30–80 s",
        "time (s)",
        "kb/s on the link (per second)",
        None,
        false,
        series,
    )?;
    Ok(Table {
        name: "multicast".into(),
        markdown: md_table(&["", "satpep"], rows),
    })
}

/// Many downloads sharing one spoofing gateway (500 kB each, starting together), with the
/// paper's unpaced gateway and with `satellite_rate` pacing. Table `many`.
fn many() -> Res<Table> {
    const CASES: [(usize, u32, bool); 7] = [
        (1, 1024, false),
        (4, 1024, false),
        (16, 1024, false),
        (64, 1024, false),
        (16, 1024, true),
        (64, 1024, true),
        (16, 8, true),
    ];
    let outcomes = par_map(&CASES, |&(n, limit, paced)| {
        run_many(n, 500_000, limit, paced)
    })?;
    let rows = CASES
        .iter()
        .zip(&outcomes)
        .map(|(&(n, limit, paced), o)| {
            let kbps: Vec<f64> = o.per_flow_bps.iter().map(|b| b / 1e3).collect();
            let mean = kbps.iter().sum::<f64>() / kbps.len() as f64;
            let (min, max) = kbps
                .iter()
                .fold((f64::MAX, 0.0f64), |(lo, hi), &k| (lo.min(k), hi.max(k)));
            // Jain's fairness index: (Σx)² / (n Σx²), 1 when all are equal.
            let jain = kbps.iter().sum::<f64>().powi(2)
                / (kbps.len() as f64 * kbps.iter().map(|k| k * k).sum::<f64>());
            vec![
                n.to_string(),
                limit.to_string(),
                if paced { "1 Mb/s" } else { "no" }.to_string(),
                format!("{} / {}", o.ccbs_allocated, o.over_limit),
                fixed(o.aggregate_bps / 1e3, 0),
                format!("{} ({}–{})", fixed(mean, 0), fixed(min, 0), fixed(max, 0)),
                fixed(jain, 3),
                o.gw_retransmissions.to_string(),
                format!("{} / {}", o.satellite_queue_drops, o.dialup_queue_drops),
                fixed(o.peak_buffered as f64 / 1024.0, 0),
            ]
        })
        .collect();
    Ok(Table {
        name: "many".into(),
        markdown: md_table(
            &[
                "downloads",
                "max_ccbs",
                "satellite_rate",
                "spoofed / not",
                "aggregate kb/s",
                "per download kb/s: mean (min–max)",
                "Jain index",
                "gateway retransmissions",
                "drops: satellite / dial-up",
                "gateway buffer peak (KiB)",
            ],
            rows,
        ),
    })
}

/// One run of [`tunnel`]: host window (KiB), ACK every `delack` segments, tunnelled or not,
/// and further overrides.
#[derive(Clone)]
struct TunnelPoint {
    window_kib: u64,
    delack: u32,
    config: Config,
    tunnel: bool,
    extra: &'static [&'static str],
}

/// The paper's own return path (IP-in-IP over the dial-up, ACK dropping looking inside the
/// tunnel) and the two questions the first tables leave: does return-path queueing make the
/// round trip of ≈ 1.3 s that 400 kb/s through a 64 KB window needs, and can a 4 KB window give
/// the paper's 120 kb/s before the enhancements? Tables `tunnel` and `bounds`.
fn tunnel() -> Res<Vec<Table>> {
    const ASYNC: &[&str] = &["link.dialup.rate=23.04kbps"];
    // Spoofing with the paper's default 4 KB host window over terrestrial legs of 10–80 ms one
    // way: the Internet host's own window over its own round trip.
    const TERRESTRIAL: [(u32, &[&str]); 4] = [
        (
            10,
            &["link.server-gw.delay=10ms", "link.gw-server.delay=10ms"],
        ),
        (20, &[]),
        (
            40,
            &["link.server-gw.delay=40ms", "link.gw-server.delay=40ms"],
        ),
        (
            80,
            &["link.server-gw.delay=80ms", "link.gw-server.delay=80ms"],
        ),
    ];
    const SHORT: &[&str] = &[
        "link.dialup.delay=10ms",
        "link.server-gw.delay=1ms",
        "link.gw-server.delay=1ms",
    ];
    let mut points = Vec::new();
    for window_kib in [4, 64] {
        for delack in [2, 1] {
            for config in Config::ALL {
                points.push(TunnelPoint {
                    window_kib,
                    delack,
                    config,
                    tunnel: true,
                    extra: &[],
                });
            }
        }
    }
    let bounds = [
        // Spoofing, ACK per segment, no dropping: the dial-up at 28.8 kbaud of asynchronous
        // serial (10 bits a byte) carries 23.04 kb/s of bytes.
        TunnelPoint {
            window_kib: 64,
            delack: 1,
            config: Config::Spoofing,
            tunnel: true,
            extra: ASYNC,
        },
        // Before the enhancements, the shortest return and terrestrial legs: the most a 4 KB
        // window gets over the 250 ms satellite hop.
        TunnelPoint {
            window_kib: 4,
            delack: 2,
            config: Config::None,
            tunnel: false,
            extra: SHORT,
        },
    ];
    let n = points.len();
    points.extend(bounds.iter().cloned());
    points.extend(TERRESTRIAL.iter().map(|&(_, extra)| TunnelPoint {
        window_kib: 4,
        delack: 2,
        config: Config::SpoofingAckDrop,
        tunnel: true,
        extra,
    }));
    let outcomes: Vec<Outcome> = par_map(&points, |p| {
        let mut extra = vec![format!("flow.download.tcp.delack_segments={}", p.delack)];
        extra.extend(p.extra.iter().map(|s| s.to_string()));
        if p.tunnel {
            run_tunnelled(p.config, p.window_kib * 1024, &extra)
        } else {
            run_one(p.config, p.window_kib * 1024, &extra)
        }
    })?;
    let rtt = |o: &Outcome| o.gw_rtt_s.map_or("—".into(), |r| fixed(r, 2));
    let rows = points[..n]
        .iter()
        .zip(&outcomes)
        .map(|(p, o)| {
            vec![
                p.window_kib.to_string(),
                if p.delack == 1 {
                    "every segment"
                } else {
                    "every 2nd"
                }
                .to_string(),
                label(p.config).to_string(),
                fixed(o.throughput_bps / 1e3, 0),
                rtt(o),
                fixed(o.dialup_mean_queue, 1),
                o.tunnelled_acks_seen.to_string(),
            ]
        })
        .collect();
    let tunnel = Table {
        name: "tunnel".into(),
        markdown: md_table(
            &[
                "host window (KiB)",
                "client ACKs",
                "configuration",
                "kb/s",
                "gateway RTT (s)",
                "dial-up queue (mean packets)",
                "ACKs the filter saw inside the tunnel",
            ],
            rows,
        ),
    };
    let (async_run, short_run) = (&outcomes[n], &outcomes[n + 1]);
    let needed_rtt = 65_535.0 * 8.0 / 400e3;
    let bounds_table = Table {
        name: "bounds".into(),
        markdown: md_table(
            &["question", "paper", "satpep run", "kb/s", "gateway RTT (s)"],
            vec![
                vec![
                    "round trip behind 400 kb/s with a 64 KB window".into(),
                    format!("{} s (64 KB / 400 kb/s)", fixed(needed_rtt, 2)),
                    "spoofing, tunnel, ACK per segment, no dropping, async serial dial-up \
                     (23.04 kb/s of bytes)"
                        .into(),
                    fixed(async_run.throughput_bps / 1e3, 0),
                    rtt(async_run),
                ],
                vec![
                    "before the enhancements, 4 KB window".into(),
                    "about 120 kb/s".into(),
                    "no enhancement, 4 KiB, dial-up 10 ms and terrestrial 1 ms one way".into(),
                    fixed(short_run.throughput_bps / 1e3, 0),
                    "—".into(),
                ],
            ],
        ),
    };
    let terrestrial = Table {
        name: "terrestrial".into(),
        markdown: md_table(
            &[
                "server–gateway delay, one way (ms)",
                "kb/s",
                "4 KiB / terrestrial RTT (kb/s)",
            ],
            TERRESTRIAL
                .iter()
                .zip(&outcomes[n + 2..])
                .map(|(&(ms, _), o)| {
                    // The terrestrial round trip: twice the delay plus a 1500-byte segment's
                    // serialisation at 10 Mb/s (1.2 ms).
                    let rtt = 2.0 * f64::from(ms) / 1e3 + 1.2e-3;
                    vec![
                        ms.to_string(),
                        fixed(o.throughput_bps / 1e3, 0),
                        fixed(4096.0 * 8.0 / rtt / 1e3, 0),
                    ]
                })
                .collect(),
        ),
    };
    Ok(vec![tunnel, bounds_table, terrestrial])
}

const PATHS: &str = include_str!("../../../../scenarios/arora/arora_paths.toml");

/// Asymmetric routing and port-based path selection (`scenarios/arora/arora_paths.toml`): one
/// telnet session alone for 30 s, then a 1 MB HTTP download; what crossed which link.
fn paths() -> Res<Table> {
    use satpep_proto::middlebox::Middlebox;
    use satpep_proto::{Duration, Instant};

    let loaded = super::load(PATHS, "arora_paths.toml", &[])?;
    let sc = &loaded.scenario;
    let link = |name: &str| {
        sc.links
            .iter()
            .position(|l| l.name == name)
            .ok_or_else(|| format!("arora_paths.toml: no link `{name}`"))
    };
    let (sat, down, up, lan) = (
        link("satellite")?,
        link("dialdown")?,
        link("dialup")?,
        link("client-term")?,
    );
    let gw = super::node(sc, "gw", "arora_paths.toml")?;
    let mut sim = crate::Simulation::new(sc);
    // Telnet alone until the HTTP download starts at 30 s.
    sim.run_until(Instant::ZERO + Duration::from_secs(29));
    let sat_early = sim.link(sat).stats().delivered_packets;
    let down_early = sim.link(down).stats().delivered_packets;
    let end = Instant::ZERO + sc.duration;
    let mut t = Instant::ZERO + Duration::from_secs(29);
    let mut done = None;
    while t < end {
        t = (t + Duration::from_millis(10)).min(end);
        sim.run_until(t);
        if done.is_none() && sim.listener(1).bytes_delivered() >= 1_000_000 {
            done = Some(t.as_secs_f64() - 30.0);
        }
    }
    let (u, l) = (sim.link(up).stats(), sim.link(lan).stats());
    let ccbs = match sim.middlebox(gw) {
        Some(Middlebox::Chain(c)) => c.elements().iter().find_map(|e| match e {
            Middlebox::Spoof(s) => Some(s.stats().ccbs_allocated),
            _ => None,
        }),
        _ => None,
    };
    let rows = [
        (
            "satellite packets before HTTP starts (29 s)",
            sat_early.to_string(),
        ),
        (
            "dial-down packets before HTTP starts (telnet)",
            down_early.to_string(),
        ),
        (
            "packets from the client: on its LAN / over the dial-up",
            format!("{} / {}", l.delivered_packets, u.delivered_packets),
        ),
        (
            "their bytes: on its LAN / over the dial-up",
            format!("{} / {}", l.delivered_bytes, u.delivered_bytes),
        ),
        (
            "connections the gateway spoofed (CCBs)",
            ccbs.map_or("—".into(), |c| c.to_string()),
        ),
        (
            "HTTP: 1 MB delivered after (s)",
            done.map_or("not done".into(), |d| fixed(d, 1)),
        ),
        (
            "HTTP goodput (kb/s)",
            done.map_or("—".into(), |d| fixed(8e6 / d / 1e3, 0)),
        ),
    ];
    Ok(Table {
        name: "paths".into(),
        markdown: md_table(
            &["arora_paths.toml", "measured"],
            rows.into_iter()
                .map(|(a, b)| vec![a.to_string(), b])
                .collect(),
        ),
    })
}

fn label(cfg: Config) -> &'static str {
    match cfg {
        Config::None => "no enhancement",
        Config::Spoofing => "spoofing",
        Config::SpoofingAckDrop => "spoofing + ACK dropping",
    }
}
