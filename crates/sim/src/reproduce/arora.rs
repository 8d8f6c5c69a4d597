//! Arora et al. (DirecPC): throughput vs the Internet host's window, without enhancement, with
//! TCP spoofing, with spoofing + selective ACK dropping, for three return-path cases. Writes
//! `arora.csv`, one figure and one table per case.

use std::fmt::Write as _;
use std::path::Path;

use super::figure::Figures;
use super::{par_map, Grid, Res, Table};
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
    Ok(tables)
}

fn label(cfg: Config) -> &'static str {
    match cfg {
        Config::None => "no enhancement",
        Config::Spoofing => "spoofing",
        Config::SpoofingAckDrop => "spoofing + ACK dropping",
    }
}
