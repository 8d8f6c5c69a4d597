//! Links: a simplex point-to-point link with a serialiser (rate), a propagation delay, a
//! pluggable queue discipline and an error model — itself a [`crate::Node`], so the simulator and
//! the emulator run the same link code.
//!
//! Port 0 is both the input (packets to send) and the output (packets delivered at the far end).
//!
//! ```text
//! handle_packet ─▶ queue (QueueDisc) ─▶ serialiser (rate) ─▶ error model ─▶ delay line ─▶ poll_transmit
//!                   │ refused: queue_drops                    │ corrupted: error_drops
//! ```
//!
//! What the model leaves out: no per-bit timing inside a packet; link-layer framing is a
//! constant number of bytes per packet (`encap_overhead`, see [`frame_len`]), FEC is not
//! modelled (put its overhead in the rate); retransmission at the link layer is optional ([`arq`]). The rate, delay and
//! loss may follow schedules read from files, and outages may stop the link ([`schedule`]); a
//! delay that falls never lets a packet overtake the one ahead (the delay line stays FIFO, as
//! Mahimahi's `mm-delay` is), and there is no jitter beyond what a delay schedule gives.

pub mod arq;
mod channel;
mod config;
mod drop_tail;
mod error_model;
mod p2p;
mod queue;
pub mod schedule;
mod stats;

pub use arq::ArqConfig;
pub use channel::ChannelReleaseConfig;
pub use config::{
    frame_len, Compression, ErrorModelConfig, LinkConfig, QueueConfig, QueueKind, SameInstant,
    MAX_ENCAP_OVERHEAD,
};
pub use drop_tail::DropTail;
pub use error_model::{ber_loss_probability, ErrorModel};
pub use p2p::Link;
pub use queue::{AnyQueue, Fifo, QueueDisc, QueuedPacket};
pub use schedule::{DeliveryTrace, Outage, StepKind, StepTrace, TraceError, TraceFile};
pub use stats::LinkStats;
