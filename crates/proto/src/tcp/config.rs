//! Settings of a TCP endpoint, as written in a scenario's `tcp` tables.

use serde::{Deserialize, Serialize};

use crate::time::{Bitrate, Duration};
use crate::units::ByteSize;

/// Window growth algorithm.
#[derive(Clone, Copy, Debug, Default, Deserialize, Eq, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CcAlgorithm {
    /// Slow start and congestion avoidance of RFC 5681.
    Reno,
    /// CUBIC (RFC 9438), as Linux runs by default.
    #[default]
    Cubic,
}

/// Loss recovery algorithm.
#[derive(Clone, Copy, Debug, Default, Deserialize, Eq, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Recovery {
    /// Fast retransmit / fast recovery of RFC 5681: recovery ends at the first new ACK.
    Reno,
    /// NewReno (RFC 6582): partial ACKs retransmit the next hole and stay in recovery.
    #[serde(rename = "newreno", alias = "new_reno")]
    NewReno,
    /// SACK-based loss recovery (RFC 6675); falls back to NewReno when the peer does not
    /// negotiate SACK.
    #[default]
    Sack,
}

/// A TCP endpoint's settings. Defaults follow the RFCs and suit GEO paths; each field says its own.
#[derive(Clone, Debug, Deserialize, PartialEq, Serialize)]
#[serde(deny_unknown_fields, default)]
#[non_exhaustive]
pub struct TcpConfig {
    /// Window growth. Default: `"cubic"`.
    pub cc: CcAlgorithm,
    /// Loss recovery. Default: `"sack"`.
    pub recovery: Recovery,
    /// Maximum segment size offered and used, bytes of payload. Default: 1460.
    pub mss: u16,
    /// Initial window in segments, 1 to 10. Default: 10 (RFC 6928).
    pub initial_window: u32,
    /// Initial slow-start threshold. Default: none (unbounded, RFC 5681).
    pub initial_ssthresh: Option<ByteSize>,
    /// Offer the window scale option (RFC 7323). Default: true.
    pub window_scaling: bool,
    /// Offer SACK-permitted (RFC 2018). Default: true.
    pub sack: bool,
    /// Offer timestamps (RFC 7323). Default: true.
    pub timestamps: bool,
    /// Send buffer: bytes written by the application and not yet acknowledged. Default: `"8MB"`.
    pub send_buffer: ByteSize,
    /// Receive buffer: bounds the advertised window. Default: `"8MB"`; without window scaling
    /// the advertised window is capped at 65 535 bytes whatever the buffer.
    pub recv_buffer: ByteSize,
    /// Rate at which the receiving application drains the receive buffer. Default: none
    /// (instantly).
    pub app_read_rate: Option<Bitrate>,
    /// Acknowledge every N full segments. 1 = every segment. Default: 2 (RFC 5681 §4.2).
    pub delack_segments: u32,
    /// Delayed ACK timeout. Default: `"200ms"`.
    pub delack_timeout: Duration,
    /// Retransmission timeout before the first RTT sample. Default: `"1s"` (RFC 6298 §2.1).
    pub initial_rto: Duration,
    /// Lower bound of the RTO. Default: `"1s"` (RFC 6298 §2.4; Linux uses 200ms).
    pub min_rto: Duration,
    /// Upper bound of the RTO after backoff. Default: `"60s"` (RFC 6298 §2.5).
    pub max_rto: Duration,
    /// Clock granularity G in RTO = SRTT + max(G, 4·RTTVAR). Default: `"1ms"`.
    pub clock_granularity: Duration,
    /// Duplicate ACKs (or SACKed segments) that trigger fast retransmit. Default: 3.
    pub dupthresh: u32,
    /// Slow start counts at most this many segments per ACK (appropriate byte counting, the
    /// limit L of RFC 3465). Default: 1, RFC 5681's `cwnd += min(N, SMSS)`: with delayed ACKs
    /// the window grows 1.5× per RTT. 2 is RFC 3465's limit and behaves like Linux, which grows
    /// by every segment acknowledged (2× per RTT with delayed ACKs); see docs/validation.md.
    pub abc_segments: u32,
}

impl Default for TcpConfig {
    fn default() -> Self {
        Self {
            cc: CcAlgorithm::Cubic,
            recovery: Recovery::Sack,
            mss: 1460,
            initial_window: 10,
            initial_ssthresh: None,
            window_scaling: true,
            sack: true,
            timestamps: true,
            send_buffer: ByteSize(8_000_000),
            recv_buffer: ByteSize(8_000_000),
            app_read_rate: None,
            delack_segments: 2,
            delack_timeout: Duration::from_millis(200),
            initial_rto: Duration::from_secs(1),
            min_rto: Duration::from_secs(1),
            max_rto: Duration::from_secs(60),
            clock_granularity: Duration::from_millis(1),
            dupthresh: 3,
            abc_segments: 1,
        }
    }
}
