//! Arora et al. (DirecPC): throughput vs the Internet host's window, without enhancement, with
//! TCP spoofing, with spoofing + selective ACK dropping, for three return-path cases. Writes
//! `arora.csv`, one figure and one table per case; table `paths`: asymmetric routing through the
//! terminal's IP-in-IP tunnel (`arora_paths.toml`).

use std::fmt::Write as _;
use std::path::Path;

use super::figure::Figures;
use super::{fixed, md_table, par_map, Grid, Res, Table};
use crate::experiments::arora::{run as run_one, Config};

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
    Ok(tables)
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
