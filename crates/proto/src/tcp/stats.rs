//! Per-connection counters.

use serde::Serialize;

/// Counters of one TCP endpoint. Bytes are payload bytes; segments count every TCP segment.
#[derive(Clone, Copy, Debug, Default, Eq, PartialEq, Serialize)]
pub struct TcpStats {
    /// Segments sent (data, control and pure ACKs).
    pub segments_sent: u64,
    /// Payload bytes sent, including retransmissions.
    pub bytes_sent: u64,
    /// Payload bytes cumulatively acknowledged by the peer.
    pub bytes_acked: u64,
    /// Data segments sent again (fast retransmit, SACK recovery, RTO go-back-N).
    pub retransmissions: u64,
    /// Payload bytes sent again.
    pub bytes_retransmitted: u64,
    /// Entries into fast retransmit / fast recovery.
    pub fast_retransmits: u64,
    /// Retransmission timer expirations with data outstanding (and SYN retransmissions).
    pub rto_expirations: u64,
    /// Duplicate ACKs received (RFC 5681 definition).
    pub dup_acks: u64,
    /// Segments received.
    pub segments_received: u64,
    /// Pure ACKs sent.
    pub acks_sent: u64,
    /// Data segments received out of order.
    pub out_of_order: u64,
    /// Data segments that arrived (partly) beyond the advertised window; their excess is dropped.
    pub beyond_window: u64,
    /// Segments dropped whole by the sequence check, each answered with an ACK: wholly below
    /// the window last advertised or starting beyond it (RFC 9293 §3.10.7.4 first check, as
    /// Linux's `tcp_sequence`; Linux counts the second kind in `TcpExtBeyondWindow`). RSTs and
    /// SYNs have their own rules and are not counted here.
    pub unacceptable: u64,
    /// Zero-window probes sent.
    pub window_probes: u64,
    /// Nanoseconds spent in fast recovery / SACK recovery (from the fast retransmit to the ACK
    /// that ends recovery).
    pub recovery_ns: u64,
    /// Real-bytes mode: segments dropped whole because their payload bytes were missing or their
    /// length disagreed with the header (a driver bug; see `handle_segment_with_payload`).
    pub bad_payload: u64,
    /// Virtual mode: segments handed real payload bytes, which were ignored.
    pub payload_ignored: u64,
    /// RSTs that did not close the connection (RFC 5961 §3.2: outside the window, or in it but
    /// not at RCV.NXT; in SYN-SENT, not acknowledging our SYN).
    pub resets_ignored: u64,
    /// Challenge ACKs sent: for an in-window RST not at RCV.NXT (RFC 5961 §3.2), and for a
    /// segment dropped because its ACK lies outside SND.UNA − MAX.SND.WND ..= SND.NXT
    /// (RFC 5961 §5.2).
    pub challenge_acks: u64,
    /// Segments RACK marked lost (RFC 8985 §6.2 step 5; `rack`), counting a segment again each
    /// time a retransmission of it is deemed lost.
    pub rack_marked_lost: u64,
    /// Tail loss probes sent (RFC 8985 §7.3; Linux's `TCPLossProbes`).
    pub tlp_probes: u64,
    /// Losses repaired by a tail loss probe's retransmission, each with one window reduction
    /// (RFC 8985 §7.4; Linux's `TCPLossProbeRecovery`).
    pub tlp_recoveries: u64,
    /// Timeouts F-RTO found spurious and undid (RFC 5682; `frto`; Linux's `TCPSpuriousRTOs`).
    pub spurious_rtos: u64,
}
