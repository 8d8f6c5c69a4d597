//! satpep-emu: the real-time emulator. Real programs (iperf3, curl, a browser) in network
//! namespaces send real packets; the scenario's network — the very routers, middleboxes, links
//! and DAMA return links the simulator runs, built by the simulator's own builder
//! ([`satpep_sim::Simulation::emulated`]) — carries them with the scenario's rate, delay, queue,
//! errors and mechanisms, its events run when CLOCK_MONOTONIC reaches them.
//!
//! ```text
//!  netns satpep-<pid>-<run>-gw           satpep (this crate)              netns …-term
//!  ┌──────────────┐  TUN   ┌────────────────────────────────────────┐ TUN ┌──────────────┐
//!  │ iperf3 -c …  │ ─────▶ │ Packet ──▶ Link "fwd" ─▶ (router) ──▶ │ ──▶ │ iperf3 -s    │
//!  │ 10.0.0.1/32  │ ◀───── │ … Link "ret" ◀──────────────────────── │ ◀── │ 10.0.1.1/32  │
//!  └──────────────┘        └────────────────────────────────────────┘     └──────────────┘
//! ```
//!
//! - [`netns`]: one namespace per `kind = "host"` node, TUN device, addresses, sysctls,
//!   removal (also of a crashed run's left-overs).
//! - [`engine`]: the packet path (clock-free, unit-tested with hand-made times).
//! - [`run()`]: the single-threaded epoll/timerfd loop, the commands, the outputs.
//! - [`lateness`]: how late the loop ran the model's events (packets leaving links) compared
//!   with their due times.
//!
//! What is not emulated: the hosts' own stacks are Linux's (that is the point), so the
//! scenario's `[[flow]]` TCP settings do not apply — choose them per program (`iperf3 -C
//! cubic`). The first flow only says which hosts `--server`/`--client` run in by default
//! ([`placement`]: the server where the data comes from). Routers do not answer ICMP (no
//! TTL-exceeded messages). See `docs/emulator.md`.
//!
//! - [`shell`]: `satpep shell`, the client host's namespace behind the path with the server
//!   host in the caller's own namespace; address blocks for nested shells.
//! - [`status`]: the live status line.
//! - [`vnet`]: TUN offloads: the `virtio_net_hdr`, software segmentation of the hosts' TCP
//!   super-packets into wire segments, coalescing of delivered segments into super-packets.

#![warn(missing_docs)]

pub mod engine;
#[cfg(any(test, feature = "fuzzing"))]
pub mod fuzzing;
pub mod lateness;
pub mod netns;
mod report;
mod run;
pub mod shell;
pub mod status;
#[allow(unsafe_code)]
pub mod sys;
pub mod vnet;

pub use report::{EmuSummary, LinkLateness, LATENESS_WARN_US};
pub use run::{placement, run, EmuOptions, EmuOutcome, StatusMode, READ_BATCH};

/// Why an emulation could not run.
#[derive(Debug, thiserror::Error)]
pub enum EmuError {
    /// Not root, no namespace support, no `ip`, no /dev/net/tun: the message says what is
    /// needed.
    #[error("{0}")]
    Privileges(String),
    /// The scenario cannot be emulated as given.
    #[error("scenario: {0}")]
    Scenario(String),
    /// Setting up a namespace failed.
    #[error("setup: {0}")]
    Setup(String),
    /// An I/O error during the run.
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

impl EmuError {
    /// The process exit code for this error: 2 for what the user must change (privileges,
    /// scenario), 1 for failures during the run.
    pub fn exit_code(&self) -> u8 {
        match self {
            Self::Privileges(_) | Self::Scenario(_) => 2,
            Self::Setup(_) | Self::Io(_) => 1,
        }
    }
}
