//! Settings of a link, as written in a scenario's `[[link]]` table.

use serde::{Deserialize, Serialize};

use crate::time::{Bitrate, Duration};
use crate::units::ByteSize;

/// A simplex link. Defaults suit a GEO hop: 10 Mb/s, 250 ms, 100-packet drop-tail queue, no
/// errors.
#[derive(Clone, Debug, Deserialize, PartialEq, Serialize)]
#[serde(deny_unknown_fields, default)]
#[non_exhaustive]
pub struct LinkConfig {
    /// Serialisation rate. Default: `"10Mbps"`.
    pub rate: Bitrate,
    /// One-way propagation delay. Default: `"250ms"` (one GEO hop, ground–satellite–ground).
    pub delay: Duration,
    /// Queue in front of the serialiser. Default: drop-tail, 100 packets.
    pub queue: QueueConfig,
    /// Error model applied to each packet after serialisation. Default: none.
    pub error: ErrorModelConfig,
}

impl Default for LinkConfig {
    fn default() -> Self {
        Self {
            rate: Bitrate(10_000_000),
            delay: Duration::from_millis(250),
            queue: QueueConfig::default(),
            error: ErrorModelConfig::None,
        }
    }
}

/// Which queue discipline. Later mechanisms (ACK filtering, suppression, compaction) add kinds.
#[derive(Clone, Copy, Debug, Default, Deserialize, Eq, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum QueueKind {
    /// First in, first out; arrivals beyond the limit are dropped.
    #[default]
    DropTail,
}

/// Queue settings. When both limits are given, a packet is dropped when either would be exceeded.
#[derive(Clone, Debug, Deserialize, PartialEq, Serialize)]
#[serde(deny_unknown_fields, default)]
#[non_exhaustive]
pub struct QueueConfig {
    /// Discipline. Default: `"drop_tail"`.
    pub kind: QueueKind,
    /// Maximum packets waiting (not counting the one being serialised). Default: 100.
    pub limit_packets: Option<u32>,
    /// Maximum bytes waiting. Default: no byte limit.
    pub limit_bytes: Option<ByteSize>,
}

impl Default for QueueConfig {
    fn default() -> Self {
        Self { kind: QueueKind::DropTail, limit_packets: Some(100), limit_bytes: None }
    }
}

/// How packets are corrupted (and then dropped) on a link.
#[derive(Clone, Debug, Default, Deserialize, PartialEq, Serialize)]
#[serde(tag = "model", rename_all = "snake_case", deny_unknown_fields)]
#[non_exhaustive]
pub enum ErrorModelConfig {
    /// No errors.
    #[default]
    None,
    /// Each packet is lost with probability `per`, independently.
    Per {
        /// Packet error rate in [0, 1].
        per: f64,
    },
    /// Each bit is in error with probability `ber`, independently; a packet of n bytes is lost
    /// with probability 1 − (1 − ber)^(8n).
    Ber {
        /// Bit error rate in [0, 1].
        ber: f64,
    },
    /// Two-state Gilbert–Elliott channel, stepped once per packet.
    GilbertElliott {
        /// Probability of moving Good → Bad at each packet.
        p_good_bad: f64,
        /// Probability of moving Bad → Good at each packet.
        p_bad_good: f64,
        /// Packet error rate in the Good state. Default 0.
        #[serde(default)]
        per_good: f64,
        /// Packet error rate in the Bad state. Default 1.
        #[serde(default = "one")]
        per_bad: f64,
    },
    /// Drop exactly the listed packets, counted from 1 in order of arrival at the link (as
    /// ns-3's `ListErrorModel`); for tests and teaching.
    List {
        /// 1-based arrival indices of the packets to drop.
        packets: Vec<u64>,
    },
}

fn one() -> f64 {
    1.0
}
