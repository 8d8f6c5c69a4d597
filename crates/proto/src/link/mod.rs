//! Links: a simplex point-to-point link with a serialiser (rate), a propagation delay, a
//! pluggable queue discipline and an error model — itself a [`crate::Node`], so the simulator and
//! the emulator run the same link code.
//!
//! Port 0 is both the input (packets to send) and the output (packets delivered at the far end).

mod config;

pub use config::{ErrorModelConfig, LinkConfig, QueueConfig, QueueKind};
