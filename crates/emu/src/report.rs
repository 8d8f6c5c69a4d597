//! What an emulation run reports: `summary.json` (the simulator's [`Summary`] plus release
//! lateness and packet-path counters) and the lines printed after the table.

use std::fmt::Write;
use std::path::{Path, PathBuf};

use satpep_output::summary::SUMMARY_JSON;
use satpep_output::Summary;
use serde::{Deserialize, Serialize};

use crate::engine::PathCounters;
use crate::lateness::LatenessStats;

/// p99 release lateness above which the run is flagged as not keeping up (µs).
pub const LATENESS_WARN_US: f64 = 1000.0;

/// `summary.json` of an emulation run. The simulator's fields come first, unchanged (so
/// [`Summary::read_json`] reads this file too); `flows` is empty, because the emulator does
/// not see inside the hosts' TCP (their programs report that, e.g. iperf3's own output).
#[derive(Clone, Debug, Deserialize, PartialEq, Serialize)]
pub struct EmuSummary {
    /// Scenario, per-link totals (`sim_time_s` is emulated wall time; `events` counts packets
    /// read plus loop wake-ups).
    #[serde(flatten)]
    pub base: Summary,
    /// Release lateness over every packet that left any link.
    pub lateness: LatenessStats,
    /// Release lateness per link, in scenario order.
    pub link_lateness: Vec<LinkLateness>,
    /// Counters of the packet path between the TUN devices and the links.
    pub path: PathCounters,
    /// Why the run ended: `client exited`, `duration reached`, `signal`.
    pub stop_reason: String,
    /// Exit code of the client command (`None`: none given, or killed by a signal).
    pub client_exit: Option<i32>,
    /// Signal that ended the client command (`satpep shell` exits with 128 + it).
    #[serde(default)]
    pub client_signal: Option<i32>,
    /// Exit code of the server command (`None`: none given, still running at the end and
    /// stopped, or killed by a signal).
    pub server_exit: Option<i32>,
    /// The server command ended on its own before the run stopped (a server that cannot start,
    /// e.g. a missing program, shows here with `server_exit` 127).
    #[serde(default)]
    pub server_exited_early: bool,
    /// Namespaces of crashed earlier runs removed at start.
    pub stale_removed: Vec<String>,
    /// Whether the loop ran under SCHED_FIFO.
    pub realtime: bool,
    /// Its SCHED_FIFO priority (`None`: the normal scheduler).
    #[serde(default)]
    pub rt_priority: Option<u8>,
    /// Where lateness comes from, part 1: how much later than asked the loop woke from each
    /// timed wait that no packet or signal cut short (timer and scheduler delay), over wake-ups.
    #[serde(default)]
    pub wake_lateness: LatenessStats,
    /// Part 2: the loop's work per pass, from its clock reading to the end of its releases
    /// (reads, the model, writes into the hosts' stacks), over passes; anything due during a
    /// pass is released at the next one.
    #[serde(default)]
    pub pass_time: LatenessStats,
    /// Part 3: of each pass, the time this thread did not run (wall time minus its CPU time:
    /// preempted, or its vCPU stolen by the hypervisor), over passes.
    #[serde(default)]
    pub pass_lost: LatenessStats,
    /// CPU time the loop's thread used from the start of the commands to the stop (s): what
    /// it took from the hosts' programs, with `sim_time_s` its share of a core.
    #[serde(default)]
    pub loop_cpu_s: f64,
    /// TUN devices that carried offloads (`IFF_VNET_HDR`, see `crate::vnet`); 0 with
    /// `--no-offload` or when the kernel refused them.
    #[serde(default)]
    pub offload_devices: usize,
    /// Connections left in the middleboxes' tables when the run stopped (split relays,
    /// spoofing CCBs); `None` without such a middlebox.
    pub open_connections: Option<u64>,
    /// Packets still inside the emulated network when the run stopped (queued, in flight, held
    /// by a middlebox). On a path left idle, anything here was leaked.
    pub live_packets: u64,
    /// Packets the network's links, routers, hosts and DAMA return links dropped, per reason
    /// (`queue_full`, `line_error`, `no_route`, …; reasons never seen left out).
    pub drops: std::collections::BTreeMap<String, u64>,
}

/// Release lateness of one link.
#[derive(Clone, Debug, Deserialize, PartialEq, Serialize)]
pub struct LinkLateness {
    /// Link name.
    pub name: String,
    /// p50 / p99 / max.
    #[serde(flatten)]
    pub stats: LatenessStats,
}

impl EmuSummary {
    /// Writes `dir/summary.json` (pretty, newline-terminated) and returns its path.
    pub fn write_json(&self, dir: &Path) -> std::io::Result<PathBuf> {
        let path = dir.join(SUMMARY_JSON);
        let mut text = serde_json::to_string_pretty(self)?;
        text.push('\n');
        std::fs::write(&path, text)?;
        Ok(path)
    }

    /// True when p99 release lateness exceeds [`LATENESS_WARN_US`].
    pub fn fell_behind(&self) -> bool {
        self.lateness.p99_us > LATENESS_WARN_US
    }

    /// The lines printed after the results table: lateness overall and per link, path
    /// counters that are not zero, and a warning when the emulation fell behind.
    pub fn render_lateness(&self) -> String {
        let mut out = String::new();
        let l = &self.lateness;
        let _ = writeln!(
            out,
            "release lateness: p50 {:.1} µs   p99 {:.1} µs   max {:.1} µs   ({} packets)",
            l.p50_us, l.p99_us, l.max_us, l.packets
        );
        for ll in &self.link_lateness {
            let s = &ll.stats;
            let _ = writeln!(
                out,
                "  {:<16} p50 {:.1} µs   p99 {:.1} µs   max {:.1} µs",
                ll.name, s.p50_us, s.p99_us, s.max_us
            );
        }
        let p = &self.path;
        let _ = writeln!(
            out,
            "path: {} packets in, {} out; malformed {}, unroutable {}, tun full {}",
            p.rx_packets, p.tx_packets, p.malformed, p.unroutable, p.tx_dropped
        );
        if self.fell_behind() {
            let _ = writeln!(
                out,
                "warning: p99 release lateness {:.0} µs exceeds 1 ms: the emulator did not keep \
                 up, so delays were longer than the scenario's (see docs/emulator.md)",
                l.p99_us
            );
        }
        out
    }
}
