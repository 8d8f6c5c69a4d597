//! Return-link ACK mechanisms for asymmetric paths (Samaraweera, "Return link optimization for
//! Internet service provision using DVB-S networks", ACM CCR 29(3), 1999; RFC 3449 §5).
//!
//! - [`AckQueue`]: a queue discipline for the terminal's return link that removes ACKs made
//!   redundant by newer cumulative ones, in three modes: ACK *suppression* (paper §5: low and high
//!   water marks, a duplicate-ACK guard), ACK *filtering* as ns-2's semantic queue and RFC 3449
//!   §5.2.1 (a newer ACK removes the queued older ones; options `replace_head`, `acks_first`),
//!   and ACK *compaction* (paper §6: as suppression, but the surviving ACK carries the count and
//!   the bytes of the ACKs it replaced, through an IP-in-IP tunnel).
//! - [`trailer`]: the compacted ACK's wire format (see docs/ack-compaction.md).
//! - [`AckExpander`]: the stateless expander at the hub that regenerates the deleted ACKs, with
//!   optional ACK spacing (paper §7, [`spacing`]).
//!
//! What every mode guarantees (property-tested in `tests.rs`): only pure ACKs (no data, no SYN,
//! FIN, RST or URG, no SACK blocks, no ECE) are ever removed; never a duplicate ACK (one whose
//! acknowledgement number does not exceed the flow's previous one), and never an ACK unless the
//! next queued ACK of its flow acknowledges strictly more (so the first ACK of a run of duplicates,
//! which the sender needs to count them, stays); one flow's packets leave in arrival order.

mod expander;
#[cfg(any(test, feature = "fuzzing"))]
pub mod fuzzing;
mod queue;
pub mod spacing;
pub mod trailer;

pub use expander::{
    AckExpander, AckExpanderConfig, ExpandError, ExpanderStats, Expansion, ExpansionLimit,
};
pub use queue::{AckMode, AckQueue, AckQueueConfig, AckQueueStats};

#[cfg(test)]
mod tests;
