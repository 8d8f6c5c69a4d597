//! satpep-output: the one recorder every satpep driver (simulator, emulator, gateway) writes
//! through, so that a run's results look the same whichever way it was produced.
//!
//! What a run directory holds, and which module writes it (docs/outputs.md has every column):
//!
//! | file | module | what |
//! |---|---|---|
//! | `*.pcapng` | [`pcap`] | packet headers as on the wire, one interface per capture point, ns timestamps, true lengths |
//! | `flows.csv`, `links.csv` | [`series`] | per-flow TCP state and per-link queue/throughput over time |
//! | `summary.json` | [`summary`] | per-flow and per-link totals of one run |
//! | `run.json` | [`summary`] | tool version, seed and the fully resolved scenario |
//! | `sweep.csv` | [`sweep`] | one row of metrics per run of a parameter sweep |
//! | `sweep_stats.csv` | [`sweep_stats`] | mean, sd and 95 % CI per metric over the seeds of each group |
//! | `*.png`, `*.svg` | [`plot`] | cwnd, sequence, queue and throughput plots; sweep plots |
//!
//! [`table`] renders a summary for the terminal.
//!
//! Determinism: nothing here reads a clock or iterates a hash map, and numbers are formatted
//! with fixed rules, so the same inputs give byte-identical files (tests compare bytes).

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod csv_fmt;
pub mod pcap;
pub mod plot;
pub mod series;
pub mod summary;
pub mod sweep;
pub mod sweep_stats;
pub mod table;

pub use pcap::{CaptureInterface, PcapTrace};
pub use plot::{plot_dir, plot_dirs, PlotError};
pub use series::{FlowSample, LinkSample, SeriesWriter, UdpSample, UdpSeriesWriter};
pub use summary::{
    goodput_bps, write_run_json, FlowSummary, GroupSummary, LegSummary, LinkSummary,
    MiddleboxSummary, MulticastRouterSummary, RunStatus, Summary, UdpSummary,
};
pub use sweep::{SweepRow, SweepWriter};
pub use sweep_stats::{group_by_seed, Stat, SweepGroup};
pub use table::{format_bitrate, render_sweep_table, render_table};
