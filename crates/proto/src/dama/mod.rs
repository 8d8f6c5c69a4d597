//! DVB-RCS return link with DAMA (EN 301 790; Roseti & Kristiansen, "TCP behavior in a DVB-RCS
//! environment"): an MF-TDMA carrier shared by many satellite terminals (STs), whose slots the
//! NCC hands out every superframe from the STs' capacity requests.
//!
//! ```text
//!  ST 0 ─▶ port 0 ┐                 ┌ requests (every superframe, optional loss) ┐
//!  ST 1 ─▶ port 1 ├▶ per-ST queues ─┤                                            ▼
//!   …             │   (bounded)     │    NCC controller (pure function), plan for SF k+L
//!  ST n ─▶ port n ┘                 └◀─────────── plan (slots per category) ◀──────┘
//!                        │ granted slots (MF-TDMA layout, 24 ms frames)
//!                        ▼
//!                  propagation delay ─▶ port 0 (toward the gateway)
//! ```
//!
//! - [`mftdma`]: frames, superframes, slots, slot payload, where each grant sits in time.
//! - [`terminal`]: the ST agent: CRA, RBDC (eq. 1), VBDC (eq. 2) / AVBDC, FCA eligibility.
//! - [`controller`]: the NCC as a pure function `(requests, capacity, state) → (plan, state)`.
//! - [`return_link`]: [`DamaLink`], the shared return link as one [`crate::Node`].
//! - [`theory`]: eqs. 3–5 (RTT TCP sees, transfer time).
//!
//! The model and every choice the paper leaves open are written down in `docs/dama.md`.

pub mod controller;
pub mod mftdma;
pub mod return_link;
pub mod terminal;
pub mod theory;

use serde::{Deserialize, Serialize};

use crate::time::{Bitrate, Duration};
use crate::units::ByteSize;

pub use controller::{
    allocate, Allocation, ControllerConfig, ControllerState, FcaPolicy, Request, ShareRule,
    TerminalLimits,
};
pub use mftdma::FrameConfig;
pub use return_link::{DamaLink, SuperframeRecord, TerminalStats};
pub use terminal::{TerminalAgent, TerminalConfig, VbdcMode};

/// Everything about one DAMA return link, as written in a scenario's `[[dama]]` table (minus the
/// node names, which the scenario resolves).
#[derive(Clone, Debug, Deserialize, PartialEq, Serialize)]
#[serde(deny_unknown_fields, default)]
#[non_exhaustive]
pub struct DamaConfig {
    /// Carrier capacity (all slots of a frame together). Default: `"2048kbps"`.
    pub carrier: Bitrate,
    /// Frame duration. Default: `"24ms"`.
    pub frame: Duration,
    /// Frames per superframe n_s (the allocation period). Default: 4 (96 ms).
    pub frames_per_superframe: u32,
    /// Slots per frame. Default: 32 (192-byte slots at 2048 kb/s and 24 ms).
    pub slots_per_frame: u32,
    /// One-way propagation delay ST → gateway. Default: `"250ms"`.
    pub delay: Duration,
    /// System response time L in superframes: a request sent at the start of superframe k is
    /// granted in superframe k + L. Default: 11 (1056 ms with 96 ms superframes).
    pub response_superframes: u32,
    /// Probability that a request message is lost on its way to the NCC. Default: 0.
    pub request_loss: f64,
    /// Bytes of encapsulation added to every IP packet before it is cut into slots. Default: 0
    /// (the paper models the layers below IP as delay and bandwidth only).
    pub encap_overhead: u32,
    /// Bytes each ST may hold waiting for slots; a packet that does not fit is dropped.
    /// Default: `"2MB"`.
    pub queue_limit: ByteSize,
    /// Settings of every terminal on this carrier.
    pub terminal: TerminalConfig,
    /// NCC algorithm choices.
    pub controller: ControllerConfig,
    /// Keep one [`SuperframeRecord`] per ST per superframe for `dama.csv`. Default: true.
    pub record: bool,
}

impl Default for DamaConfig {
    fn default() -> Self {
        Self {
            carrier: FrameConfig::default().carrier,
            frame: FrameConfig::default().frame,
            frames_per_superframe: FrameConfig::default().frames_per_superframe,
            slots_per_frame: FrameConfig::default().slots_per_frame,
            delay: Duration::from_millis(250),
            response_superframes: 11,
            request_loss: 0.0,
            encap_overhead: 0,
            queue_limit: ByteSize(2_000_000),
            terminal: TerminalConfig::default(),
            controller: ControllerConfig::default(),
            record: true,
        }
    }
}

impl DamaConfig {
    /// Check values a scenario file could get wrong; the message starts with the key.
    pub fn validate(&self) -> Result<(), String> {
        let frame = self.frame_config();
        frame.validate()?;
        self.terminal.validate(self.slots_per_frame)?;
        if self.response_superframes == 0 {
            return Err("response_superframes: must be at least 1".into());
        }
        // A request crosses the satellite once and its answer (the burst time plan) once more.
        let rt = self.delay.as_nanos().saturating_mul(2);
        let srt = frame
            .superframe()
            .as_nanos()
            .saturating_mul(u64::from(self.response_superframes));
        if srt < rt {
            return Err(format!(
                "response_superframes: {} superframes ({} ms) is shorter than the request/plan \
                 round trip of {} ms (2 × delay)",
                self.response_superframes,
                srt / 1_000_000,
                rt / 1_000_000
            ));
        }
        if !(0.0..=1.0).contains(&self.request_loss) {
            return Err("request_loss: must be a probability in [0, 1]".into());
        }
        if self.queue_limit.0 == 0 {
            return Err("queue_limit: must be above 0".into());
        }
        Ok(())
    }

    /// The MF-TDMA structure these settings describe.
    pub fn frame_config(&self) -> FrameConfig {
        FrameConfig {
            carrier: self.carrier,
            frame: self.frame,
            frames_per_superframe: self.frames_per_superframe,
            slots_per_frame: self.slots_per_frame,
        }
    }
}
