//! Counters of one link, and the figures people report from them (utilisation, mean queue).

use serde::Serialize;

use crate::time::Instant;

/// What happened on a link since the start of the run. Plain counters, `Copy`, so a driver can
/// snapshot them at any time; time-weighted figures need the instant they are read at (use
/// [`Link::stats_at`](super::Link::stats_at)).
///
/// Every packet that entered is accounted for: `arrivals = delivered_packets + queue_drops +
/// removed + error_drops + compression_drops +` (queued + being serialised + in flight +
/// awaiting a link-layer retransmission).
#[derive(Clone, Copy, Debug, Default, Eq, PartialEq, Serialize)]
#[non_exhaustive]
pub struct LinkStats {
    /// Packets that entered the link (every `handle_packet`), in packets.
    pub arrivals: u64,
    /// Packets the queue discipline refused, in packets.
    pub queue_drops: u64,
    /// Packets corrupted by the error model (they used the serialiser, then were dropped).
    pub error_drops: u64,
    /// Packets the queue discipline took out after accepting them (ACK suppression, filtering,
    /// compaction: their information lives on in a later ACK), in packets.
    pub removed: u64,
    /// Packets the header decompressor refused after they crossed the link (RFC 1144 tossing
    /// after a lost packet), in packets.
    pub compression_drops: u64,
    /// Packets handed out at the far end, in packets.
    pub delivered_packets: u64,
    /// Wire bytes handed out at the far end (headers + payload), in bytes.
    pub delivered_bytes: u64,
    /// Time the serialiser was busy, in ns (corrupted packets included: they used the link).
    pub busy_ns: u64,
    /// ∫ queue length dt, in packet·ns (waiting packets only, not the one being serialised).
    pub queue_packet_ns: u128,
    /// ∫ queue bytes dt, in byte·ns.
    pub queue_byte_ns: u128,
    /// Largest number of packets waiting at once, in packets.
    pub max_queue_packets: u64,
    /// Largest number of bytes waiting at once, in bytes.
    pub max_queue_bytes: u64,
    /// Link-layer retransmissions started ([`super::arq`]), in frames.
    pub arq_retransmissions: u64,
    /// Frames the link-layer ARQ gave up after its last retransmission was corrupted too
    /// (also counted in `error_drops`), in frames.
    pub arq_given_up: u64,
}

impl LinkStats {
    /// Time-average number of waiting packets over [0, `now`]; 0 at time zero.
    pub fn mean_queue_packets(&self, now: Instant) -> f64 {
        ratio(self.queue_packet_ns as f64, now)
    }

    /// Time-average number of waiting bytes over [0, `now`]; 0 at time zero.
    pub fn mean_queue_bytes(&self, now: Instant) -> f64 {
        ratio(self.queue_byte_ns as f64, now)
    }

    /// Fraction of [0, `now`] the serialiser was busy, in [0, 1]; 0 at time zero.
    pub fn utilisation(&self, now: Instant) -> f64 {
        ratio(self.busy_ns as f64, now)
    }
}

fn ratio(integral: f64, now: Instant) -> f64 {
    match now.as_nanos() {
        0 => 0.0,
        ns => integral / ns as f64,
    }
}
