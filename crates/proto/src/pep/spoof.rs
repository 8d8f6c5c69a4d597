//! TCP spoofing as in the DirecPC hybrid gateway (Arora, Suphasindhu, Baras, Dillon: "Asymmetric
//! Internet access over satellite–terrestrial networks", AIAA 1996): the gateway acknowledges
//! the Internet host's data on behalf of the hybrid host and takes over its delivery over the
//! satellite, with one connection control block (CCB) per spoofed connection.
//!
//! Unlike the split relay ([`super::SplitRelay`]) there is no second TCP connection: sequence
//! numbers are the end hosts' own, the gateway only queues, forwards, retransmits and answers.
//!
//! Decisions (the paper leaves them open; each is the conservative choice):
//!
//! - **Handshake end to end.** SYN and SYN-ACK pass through; the CCB waits in *Connection-wait*
//!   and becomes *Connected* when the second SYN passes. A host that does not exist is then
//!   reported by the normal means (the opener's SYN times out), never masked.
//! - **Data is spoofed, FIN is not.** The Internet host's in-order data is ACKed at once by the
//!   gateway (window: what is left of `buffer_per_conn`), queued and sent on within the window
//!   the hybrid host advertises, with the gateway's own retransmission timer (RFC 6298 estimate,
//!   doubled on every expiry) and a retry limit. The FIN is queued in order but acknowledged only
//!   by the hybrid host itself (its ACK of the FIN is forwarded, the *FIN-wait* state), so a
//!   sender that sees its FIN acknowledged knows every byte arrived.
//! - **RST.** A RST from either end is passed on; it frees the CCB only at the exact next
//!   sequence number of its sender (RFC 5961 §3.2) or before any data (Connection-wait), so a
//!   blind RST cannot make the gateway discard data it acknowledged in the hybrid host's name.
//!   An Internet host's RST while data is queued is re-sent to the hybrid host at the sequence
//!   number that host expects, and the queued bytes count in `bytes_lost_on_abort`.
//! - **Abort.** When the retry limit is exceeded the gateway sends a RST to both ends and frees
//!   the CCB. The Internet host has then been told (by spoofed ACKs) that the queued bytes were
//!   delivered when they were not: that count is kept in `bytes_lost_on_abort` — the
//!   end-to-end-semantics cost the paper's list of split-TCP problems names.
//! - **Zero window.** When the hybrid host's window is closed and data waits, a persist timer
//!   sends the first queued segment as a window probe (doubling the interval): the Internet host
//!   cannot probe for it, since the window it sees is the gateway's.
//! - **Idle.** A CCB with nothing queued and no segment either way for `idle_timeout` is freed
//!   silently; later segments of that connection pass through unspoofed (end to end).
//! - **Karn.** An ACK that covers a retransmitted segment gives no RTT sample (RFC 6298 §3),
//!   even for the untouched segments it also covers: their wait includes the repair.
//! - **Pacing (an extension).** The paper's gateway sends "as fast as its resources (buffer
//!   space) will allow": with one connection the satellite's own queue absorbs the 64 KB
//!   window, with sixteen it overflows and the one-segment-per-timeout repair collapses
//!   (docs/reproductions/arora.md, table `many`). `satellite_rate` paces every CCB's segments
//!   together at the channel's rate, one segment per CCB in turn; a timeout's retransmission
//!   leaves at once and is charged to the pace. Off by default.
//! - The hybrid host's pure ACKs of spoofed data are consumed; every other segment (its data,
//!   its FIN, RSTs, the Internet host's ACKs) passes through unchanged.

use std::collections::VecDeque;
use std::net::Ipv4Addr;

use serde::{Deserialize, Serialize};

use crate::flow::{FlowId, FlowKey, FlowTable};
use crate::tcp::RttEstimator;
use crate::time::{Bitrate, Duration, Instant};
use crate::units::ByteSize;
use crate::wire::{emit_ipv4_tcp, parse_packet, Ipv4Repr, SeqNumber, TcpFlags, TcpRepr};
use crate::{Node, Packet, PortId, Transmit};

/// Settings (`middlebox = { kind = "spoof", … }`).
#[derive(Clone, Debug, Deserialize, PartialEq, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct SpoofConfig {
    /// Arrival port of the links from the Internet side: data arriving there is spoofed.
    /// Default 0.
    pub internet_port: u16,
    /// Spoof only connections with either port in this list (port-based selection:
    /// e.g. `[80]`); empty: all.
    pub ports: Vec<u16>,
    /// Gateway buffer per connection; bounds the window advertised to the Internet host.
    /// Default `"64KB"` (the paper's gateway window).
    pub buffer_per_conn: ByteSize,
    /// At most this many CCBs; further connections pass unspoofed. Default 1024.
    pub max_ccbs: u32,
    /// Retransmission timeouts in a row before the connection is aborted. Default 8.
    pub retry_limit: u32,
    /// First retransmission timeout, and floor. Defaults `"1s"`, `"200ms"`.
    pub initial_rto: Duration,
    /// Floor of the retransmission timeout.
    pub min_rto: Duration,
    /// Free a CCB idle this long. Default `"120s"`.
    pub idle_timeout: Duration,
    /// Pace all segments toward the hybrid hosts together at this rate (IP bytes), round robin
    /// over the CCBs with data to send; see the module doc. Default: none (the paper).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub satellite_rate: Option<Bitrate>,
}

impl Default for SpoofConfig {
    fn default() -> Self {
        Self {
            internet_port: 0,
            ports: Vec::new(),
            buffer_per_conn: ByteSize(65_535),
            max_ccbs: 1024,
            retry_limit: 8,
            initial_rto: Duration::from_secs(1),
            min_rto: Duration::from_millis(200),
            idle_timeout: Duration::from_secs(120),
            satellite_rate: None,
        }
    }
}

impl SpoofConfig {
    /// Check values a scenario could get wrong; the message starts with the key.
    pub fn validate(&self) -> Result<(), String> {
        if self.buffer_per_conn.bytes() == 0 {
            return Err("buffer_per_conn: must be at least 1 byte".into());
        }
        if self.idle_timeout == Duration::ZERO || self.initial_rto == Duration::ZERO {
            return Err("idle_timeout / initial_rto: must be > 0".into());
        }
        if self.satellite_rate.is_some_and(|r| r.bps() == 0) {
            return Err("satellite_rate: must be > 0".into());
        }
        Ok(())
    }
}

/// CCB states of the paper.
#[derive(Clone, Copy, Debug, Eq, PartialEq)]
pub enum CcbState {
    /// Connection does not exist (a CCB is never kept in this state; listed for completeness).
    Closed,
    /// SYN seen, end-to-end handshake in progress.
    ConnectionWait,
    /// Data can be transferred.
    Connected,
    /// The Internet host's FIN is queued or in flight.
    FinWait,
}

/// Counters.
#[derive(Clone, Copy, Debug, Default, Eq, PartialEq, Serialize)]
pub struct SpoofStats {
    /// CCBs allocated.
    pub ccbs_allocated: u64,
    /// CCBs freed after both FINs.
    pub ccbs_closed: u64,
    /// CCBs freed by a RST passing through.
    pub ccbs_reset: u64,
    /// RSTs passed on without freeing the CCB: not at the exact next sequence number of their
    /// sender (RFC 5961 §3.2), so possibly blind.
    pub resets_kept: u64,
    /// CCBs freed by the idle timer.
    pub ccbs_idle_freed: u64,
    /// Connections aborted at the retry limit (RST to both ends).
    pub aborts: u64,
    /// Bytes the Internet host had been told were delivered, lost in aborts (the retry limit,
    /// or an end's RST while they were queued).
    pub bytes_lost_on_abort: u64,
    /// Spoofed ACKs sent to Internet hosts.
    pub spoofed_acks: u64,
    /// Hybrid hosts' ACKs consumed.
    pub acks_consumed: u64,
    /// Retransmissions on the gateway's timer.
    pub retransmissions: u64,
    /// Zero-window probes.
    pub window_probes: u64,
    /// Segments sent toward the hybrid hosts from the CCBs' queues (first sends and
    /// retransmissions, not probes).
    pub segments_sent: u64,
    /// Connections not spoofed because `max_ccbs` was reached.
    pub over_limit: u64,
    /// Internet-host segments dropped because the connection's buffer was full.
    pub buffer_full_drops: u64,
}

#[derive(Clone, Debug)]
struct Queued {
    seq: SeqNumber,
    /// Sequence space: payload plus one for a FIN.
    len: u32,
    payload: u32,
    pkt: Packet,
    sent: Option<Instant>,
    retransmitted: bool,
}

/// One connection control block.
#[derive(Clone, Debug)]
struct Ccb {
    state: CcbState,
    /// Next in-order byte expected from the Internet host (what spoofed ACKs acknowledge).
    rcv_nxt: SeqNumber,
    /// What the hybrid host has acknowledged.
    host_una: SeqNumber,
    /// Window the hybrid host advertises, bytes.
    host_wnd: u64,
    host_ws: Option<u8>,
    inet_ws: Option<u8>,
    /// Next sequence number of the hybrid host (for spoofed ACKs and RSTs in its name).
    host_seq: SeqNumber,
    queue: VecDeque<Queued>,
    queued_bytes: u64,
    inet_fin: Option<SeqNumber>,
    host_fin: bool,
    rtt: RttEstimator,
    retries: u32,
    rtx_at: Option<Instant>,
    persist_at: Option<Instant>,
    persist_backoff: u32,
    idle_at: Instant,
    /// Right edge of the window last advertised to the Internet host.
    adv_right: SeqNumber,
    /// In the gateway's pacing round robin.
    ready: bool,
}

impl Ccb {
    fn shift(&self) -> u8 {
        match (self.host_ws, self.inet_ws) {
            (Some(h), Some(_)) => h.min(14),
            _ => 0,
        }
    }
}

impl Ccb {
    /// Index of the first queued segment not yet sent, if it fits the hybrid host's window.
    fn sendable(&self) -> Option<usize> {
        let right = self.host_una + self.host_wnd.min(u64::from(u32::MAX / 2)) as u32;
        let i = self.queue.iter().position(|q| q.sent.is_none())?;
        (self.queue[i].seq + self.queue[i].payload <= right).then_some(i)
    }

    /// When `handle_timeout` must next look at this CCB.
    fn next_deadline(&self) -> Option<Instant> {
        [self.rtx_at, self.persist_at, Some(self.idle_at)]
            .into_iter()
            .flatten()
            .min()
    }
}

/// Key, as in the paper: (hybrid host, Internet host), i.e. the hybrid host's direction.
type Key = FlowKey;

/// The spoofing gateway.
#[derive(Clone, Debug)]
pub struct SpoofGateway {
    config: SpoofConfig,
    /// At most `max_ccbs`; the deadline is the earliest of a CCB's timers (retransmission,
    /// persist, idle). The CCB's own idle timer frees it, so the table's idle expiry is off.
    ccbs: FlowTable<Ccb>,
    /// Flows due in the current `handle_timeout` (kept to reuse its allocation).
    due: Vec<FlowId>,
    out: VecDeque<Packet>,
    stats: SpoofStats,
    /// With `satellite_rate`: CCBs with a segment to send, in turn (the key guards against a
    /// slot reused by another connection).
    ready: VecDeque<(FlowId, Key)>,
    /// With `satellite_rate`: when the next paced segment may leave.
    next_send_at: Instant,
}

impl SpoofGateway {
    /// A gateway with no CCBs.
    pub fn new(config: SpoofConfig) -> Self {
        Self {
            ccbs: FlowTable::new(config.max_ccbs as usize, None),
            config,
            due: Vec::new(),
            out: VecDeque::new(),
            stats: SpoofStats::default(),
            ready: VecDeque::new(),
            next_send_at: Instant::ZERO,
        }
    }

    /// Counters.
    pub fn stats(&self) -> SpoofStats {
        self.stats
    }

    /// CCBs allocated now.
    pub fn ccb_count(&self) -> usize {
        self.ccbs.len()
    }

    /// Counters of the CCB table, among them the entries timeouts visited.
    pub fn flow_table_stats(&self) -> crate::flow::FlowTableStats {
        self.ccbs.stats()
    }

    /// State of the CCB for (hybrid host, Internet host), if any.
    pub fn ccb_state(
        &self,
        hybrid: (Ipv4Addr, u16),
        internet: (Ipv4Addr, u16),
    ) -> Option<CcbState> {
        let key = FlowKey::new(hybrid.0, hybrid.1, internet.0, internet.1);
        self.ccbs.get(&key).map(|c| c.state)
    }

    /// Window the hybrid host last advertised on this connection, bytes.
    pub fn host_window(&self, hybrid: (Ipv4Addr, u16), internet: (Ipv4Addr, u16)) -> Option<u64> {
        let key = FlowKey::new(hybrid.0, hybrid.1, internet.0, internet.1);
        self.ccbs.get(&key).map(|c| c.host_wnd)
    }

    /// Each CCB's RTT estimator on the satellite leg (the gateway's RFC 6298 estimate toward the
    /// hybrid host): what the spoofer's sender sees, return-path queueing included.
    pub fn rtt_estimators(&self) -> impl Iterator<Item = (FlowKey, &crate::tcp::RttEstimator)> {
        self.ccbs.iter().map(|(k, c)| (k, &c.rtt))
    }

    /// Bytes queued in the gateway, all connections.
    pub fn buffered_bytes(&self) -> u64 {
        self.ccbs.iter().map(|(_, c)| c.queued_bytes).sum()
    }

    fn new_ccb(&self, now: Instant) -> Ccb {
        Ccb {
            state: CcbState::ConnectionWait,
            rcv_nxt: SeqNumber(0),
            host_una: SeqNumber(0),
            host_wnd: 0,
            host_ws: None,
            inet_ws: None,
            host_seq: SeqNumber(0),
            queue: VecDeque::new(),
            queued_bytes: 0,
            inet_fin: None,
            host_fin: false,
            rtt: RttEstimator::new(
                self.config.initial_rto,
                self.config.min_rto,
                Duration::from_secs(60),
                Duration::from_millis(1),
            ),
            retries: 0,
            rtx_at: None,
            persist_at: None,
            persist_backoff: 0,
            adv_right: SeqNumber(0),
            ready: false,
            idle_at: now + self.config.idle_timeout,
        }
    }

    fn segment(key: &Key, from_host: bool, seg: &TcpRepr) -> Packet {
        let key = if from_host { *key } else { key.reversed() };
        let (src, dst) = ((key.src, key.src_port), (key.dst, key.dst_port));
        let ip = Ipv4Repr::tcp(src.0, dst.0, 0);
        let seg = TcpRepr {
            src_port: src.1,
            dst_port: dst.1,
            ..*seg
        };
        Packet::build(seg.payload_len, |b| emit_ipv4_tcp(&ip, &seg, b))
    }

    /// A spoofed ACK to the Internet host, in the hybrid host's name.
    fn spoofed_ack(&mut self, key: &Key) {
        let buffer = self.config.buffer_per_conn.bytes();
        let Some(c) = self.ccbs.get_mut(key) else {
            return;
        };
        let free = buffer.saturating_sub(c.queued_bytes);
        let shift = c.shift();
        let window = (free >> shift).min(65_535) as u16;
        c.adv_right = c.rcv_nxt + (u32::from(window) << shift);
        let seg = TcpRepr {
            seq: c.host_seq,
            ack: Some(c.rcv_nxt),
            window,
            ..TcpRepr::default()
        };
        self.out.push_back(Self::segment(key, true, &seg));
        self.stats.spoofed_acks += 1;
    }

    /// Send queued segments that fit the hybrid host's window (at once, or in turn when paced);
    /// arm the timers.
    fn try_send(&mut self, now: Instant, key: &Key) {
        let Some(id) = self.ccbs.id(key) else {
            return;
        };
        if self.config.satellite_rate.is_some() {
            let c = &mut self.ccbs[id];
            if !c.ready && c.sendable().is_some() {
                c.ready = true;
                self.ready.push_back((id, *key));
            }
            self.release(now);
        } else {
            while let Some(i) = self.ccbs[id].sendable() {
                self.send_queued(now, id, i);
            }
        }
        let c = &mut self.ccbs[id];
        let in_flight = c.queue.iter().any(|q| q.sent.is_some());
        if !in_flight && c.sendable().is_none() && !c.queue.is_empty() {
            // Data waits and the window is closed: only a probe can learn it reopened.
            c.rtx_at = None;
            if c.persist_at.is_none() {
                c.persist_at = Some(now + c.rtt.rto());
            }
        } else {
            c.persist_at = None;
            c.persist_backoff = 0;
        }
    }

    /// Send queued segment `i` of CCB `id` for the first time.
    fn send_queued(&mut self, now: Instant, id: FlowId, i: usize) {
        let c = &mut self.ccbs[id];
        let q = &mut c.queue[i];
        q.sent = Some(now);
        let pkt = q.pkt.clone();
        if q.retransmitted {
            self.stats.retransmissions += 1;
        }
        self.stats.segments_sent += 1;
        if c.rtx_at.is_none() {
            c.rtx_at = Some(now + c.rtt.rto());
        }
        self.charge_pace(now, &pkt);
        self.out.push_back(pkt);
    }

    /// With `satellite_rate`: the next paced segment waits for `pkt`'s time on the channel.
    fn charge_pace(&mut self, now: Instant, pkt: &Packet) {
        if let Some(rate) = self.config.satellite_rate {
            self.next_send_at = self.next_send_at.max(now) + rate.tx_time(pkt.wire_len());
        }
    }

    /// With `satellite_rate`: send one segment per ready CCB in turn while the pace allows.
    fn release(&mut self, now: Instant) {
        if self.config.satellite_rate.is_none() {
            return;
        }
        while self.next_send_at <= now {
            let Some((id, key)) = self.ready.pop_front() else {
                break;
            };
            if self.ccbs.key(id) != Some(key) {
                continue;
            }
            self.ccbs[id].ready = false;
            let Some(i) = self.ccbs[id].sendable() else {
                continue;
            };
            self.send_queued(now, id, i);
            let c = &mut self.ccbs[id];
            c.persist_at = None;
            c.persist_backoff = 0;
            if c.sendable().is_some() {
                c.ready = true;
                self.ready.push_back((id, key));
            }
            let at = c.next_deadline();
            self.ccbs.set_deadline(id, at);
        }
    }

    fn on_internet_segment(&mut self, now: Instant, key: Key, seg: &TcpRepr, pkt: Packet) {
        let syn = seg.flags.contains(TcpFlags::SYN);
        if self.ccbs.id(&key).is_none() {
            let wanted = self.wanted(&key);
            if !(syn && seg.ack.is_none() && wanted) {
                self.out.push_back(pkt);
                return;
            }
            let c = self.new_ccb(now);
            if self.ccbs.insert(now, key, c).is_err() {
                self.stats.over_limit += 1;
                self.out.push_back(pkt);
                return;
            }
            self.stats.ccbs_allocated += 1;
        }
        let buffer = self.config.buffer_per_conn.bytes();
        let idle = self.config.idle_timeout;
        let Some(c) = self.ccbs.get_mut(&key) else {
            return;
        };
        c.idle_at = now + idle;
        if syn {
            c.rcv_nxt = seg.seq + 1;
            c.inet_ws = seg.window_scale;
            if seg.ack.is_some() {
                // SYN-ACK from the Internet host: the hybrid host opened.
                c.host_una = c.rcv_nxt;
                c.state = CcbState::Connected;
            }
            self.out.push_back(pkt);
            return;
        }
        let fin = seg.flags.contains(TcpFlags::FIN);
        if c.state == CcbState::ConnectionWait || (seg.payload_len == 0 && !fin) {
            // Handshake ACK, or the Internet host's ACK of the hybrid host's data: end to end.
            if c.host_fin && c.inet_fin.is_some_and(|f| c.host_una > f) {
                self.stats.ccbs_closed += 1;
                self.ccbs.remove_key(&key);
            }
            self.out.push_back(pkt);
            return;
        }
        let len = seg.payload_len + u32::from(fin);
        let end = seg.seq + len;
        if end <= c.rcv_nxt && !(fin && c.inet_fin.is_none()) {
            // Already acknowledged by us: the ACK was lost; say it again.
            self.spoofed_ack(&key);
            return;
        }
        if c.queue.iter().any(|q| q.seq == seg.seq) {
            self.spoofed_ack(&key);
            return;
        }
        if fin && c.queue.iter().any(|q| q.len > q.payload) {
            // One FIN per connection: another at a different sequence number is forged or
            // broken and would let the queue grow without counting against the buffer.
            self.stats.buffer_full_drops += 1;
            return;
        }
        if c.queued_bytes + u64::from(seg.payload_len) > buffer {
            self.stats.buffer_full_drops += 1;
            self.spoofed_ack(&key);
            return;
        }
        let at = c.queue.partition_point(|q| q.seq < seg.seq);
        c.queue.insert(
            at,
            Queued {
                seq: seg.seq,
                len,
                payload: seg.payload_len,
                pkt,
                sent: None,
                retransmitted: false,
            },
        );
        c.queued_bytes += u64::from(seg.payload_len);
        // Advance over contiguous data; the FIN is not spoofed (see the module doc).
        for q in &c.queue {
            if q.seq <= c.rcv_nxt && q.seq + q.payload > c.rcv_nxt {
                c.rcv_nxt = q.seq + q.payload;
            }
            if q.len > q.payload && q.seq + q.payload == c.rcv_nxt {
                c.inet_fin = Some(c.rcv_nxt);
                c.state = CcbState::FinWait;
            }
        }
        self.spoofed_ack(&key);
        self.try_send(now, &key);
    }

    fn on_host_segment(&mut self, now: Instant, key: Key, seg: &TcpRepr, pkt: Packet) {
        let idle = self.config.idle_timeout;
        let Some(c) = self.ccbs.get_mut(&key) else {
            self.out.push_back(pkt);
            return;
        };
        c.idle_at = now + idle;
        let edge = seg.seq + seg.segment_len();
        if c.host_seq == SeqNumber(0) || edge > c.host_seq {
            c.host_seq = edge;
        }
        if seg.flags.contains(TcpFlags::SYN) {
            c.host_ws = seg.window_scale;
            c.host_wnd = u64::from(seg.window);
            if let Some(a) = seg.ack {
                c.host_una = a;
                c.state = CcbState::Connected;
            }
            self.out.push_back(pkt);
            return;
        }
        let mut forward = seg.payload_len > 0 || seg.flags.contains(TcpFlags::FIN);
        if seg.flags.contains(TcpFlags::FIN) {
            c.host_fin = true;
        }
        if let Some(a) = seg.ack {
            c.host_wnd = u64::from(seg.window) << c.shift();
            if a > c.host_una {
                c.host_una = a;
                c.retries = 0;
                let mut sample = None;
                let mut covers_retransmission = false;
                while let Some(q) = c.queue.front() {
                    if q.seq + q.len > a {
                        break;
                    }
                    if q.retransmitted {
                        covers_retransmission = true;
                    } else {
                        sample = q.sent;
                    }
                    c.queued_bytes -= u64::from(q.payload);
                    c.queue.pop_front();
                }
                if let Some(t) = sample.filter(|_| !covers_retransmission) {
                    c.rtt.on_sample(now, now - t);
                }
                c.rtx_at = c
                    .queue
                    .iter()
                    .any(|q| q.sent.is_some())
                    .then(|| now + c.rtt.rto());
            }
            if c.host_wnd == 0 {
                // The window closed with data outstanding: what was beyond it was dropped.
                // Stop the retransmission timer (a closed window is not a dead host, and must
                // not count toward the retry limit) and let the persist timer probe
                // (as BSD does: snd_nxt back to snd_una).
                for q in c.queue.iter_mut() {
                    q.sent = None;
                }
                c.rtx_at = None;
                c.retries = 0;
            }
            // The hybrid host acknowledged the Internet host's FIN: that ACK is the truth the
            // Internet host must see.
            if c.inet_fin.is_some_and(|f| a > f) {
                forward = true;
            }
        }
        let done = c.host_fin && c.inet_fin.is_some_and(|f| c.host_una > f) && c.queue.is_empty();
        if forward {
            self.out.push_back(pkt);
        } else {
            self.stats.acks_consumed += 1;
        }
        if done {
            // Both FINs seen, ours acknowledged: the Internet host's last ACK passes unspoofed.
            self.stats.ccbs_closed += 1;
            self.ccbs.remove_key(&key);
            return;
        }
        self.try_send(now, &key);
        // Room freed in the buffer: tell the Internet host once the window's right edge can
        // move by a full segment or half the buffer, whichever is less (receiver SWS
        // avoidance, RFC 1122 §4.2.3.3).
        if seg.ack.is_some() {
            let buffer = self.config.buffer_per_conn.bytes();
            if let Some(c) = self.ccbs.get(&key) {
                let free = buffer
                    .saturating_sub(c.queued_bytes)
                    .min(65_535 << c.shift());
                let right = c.rcv_nxt + free as u32;
                let step = (buffer / 2).clamp(1, 1460) as i64;
                if right - c.adv_right >= step {
                    self.spoofed_ack(&key);
                }
            }
        }
    }

    /// Whether the connection `key` is one to spoof (port-based selection).
    fn wanted(&self, key: &Key) -> bool {
        let ports = &self.config.ports;
        ports.is_empty() || ports.contains(&key.src_port) || ports.contains(&key.dst_port)
    }

    /// One parsed segment of connection `key` (hybrid host first), from either side.
    fn on_segment(&mut self, now: Instant, key: Key, from_inet: bool, seg: &TcpRepr, pkt: Packet) {
        if seg.flags.contains(TcpFlags::RST) {
            self.on_reset(key, from_inet, seg, pkt);
            return;
        }
        if from_inet {
            self.on_internet_segment(now, key, seg, pkt);
        } else if seg.flags.contains(TcpFlags::SYN)
            && seg.ack.is_none()
            && self.ccbs.id(&key).is_none()
        {
            // The hybrid host opens: allocate like for the other direction.
            let wanted = self.wanted(&key);
            let c = self.new_ccb(now);
            if wanted && self.ccbs.insert(now, key, c).is_ok() {
                self.stats.ccbs_allocated += 1;
                self.on_host_segment(now, key, seg, pkt);
            } else {
                self.stats.over_limit += u64::from(wanted);
                self.out.push_back(pkt);
            }
        } else {
            self.on_host_segment(now, key, seg, pkt);
        }
    }

    /// A RST from either end. It frees the CCB only when it is at the exact next sequence
    /// number of its sender as the gateway knows it (RFC 5961 §3.2), or in Connection-wait
    /// (nothing is queued yet): a blind RST must not discard data the gateway has acknowledged
    /// in the hybrid host's name. It is passed on either way (the end host judges it too). An
    /// Internet host's RST while data is queued reaches the hybrid host at the sequence number
    /// that host expects (its last ACK), so that it closes too. Either way the queued bytes
    /// are lost (counted in `bytes_lost_on_abort`).
    fn on_reset(&mut self, key: Key, from_inet: bool, seg: &TcpRepr, pkt: Packet) {
        let Some(c) = self.ccbs.get(&key) else {
            self.out.push_back(pkt);
            return;
        };
        let exact = if from_inet {
            seg.seq == c.rcv_nxt
        } else {
            seg.seq == c.host_seq
        };
        if !(exact || c.state == CcbState::ConnectionWait) {
            self.stats.resets_kept += 1;
            self.out.push_back(pkt);
            return;
        }
        let (queued, host_una) = (c.queued_bytes, c.host_una);
        self.ccbs.remove_key(&key);
        self.stats.ccbs_reset += 1;
        // Either end's RST loses what is queued: the Internet host was told it arrived.
        self.stats.bytes_lost_on_abort += queued;
        if from_inet && queued > 0 {
            let to_host = TcpRepr {
                seq: host_una,
                ack: seg.ack,
                flags: TcpFlags::RST,
                ..TcpRepr::default()
            };
            self.out.push_back(Self::segment(&key, false, &to_host));
            return;
        }
        self.out.push_back(pkt);
    }

    /// Retry limit exceeded: RST to both ends, free the CCB.
    fn abort(&mut self, key: &Key) {
        let Some(c) = self.ccbs.remove_key(key) else {
            return;
        };
        self.stats.aborts += 1;
        self.stats.bytes_lost_on_abort += c.queued_bytes;
        let to_inet = TcpRepr {
            seq: c.host_seq,
            ack: Some(c.rcv_nxt),
            flags: TcpFlags::RST,
            ..TcpRepr::default()
        };
        self.out.push_back(Self::segment(key, true, &to_inet));
        let to_host = TcpRepr {
            seq: c.host_una,
            flags: TcpFlags::RST,
            ..TcpRepr::default()
        };
        self.out.push_back(Self::segment(key, false, &to_host));
    }
}

impl Node for SpoofGateway {
    fn handle_packet(&mut self, now: Instant, port: PortId, pkt: Packet) {
        let Ok((ip, seg)) = parse_packet(&pkt) else {
            self.out.push_back(pkt);
            return;
        };
        let from_inet = port.0 == self.config.internet_port;
        let key = FlowKey::of(&ip, &seg);
        let key = if from_inet { key.reversed() } else { key };
        self.on_segment(now, key, from_inet, &seg, pkt);
        // A segment changes at most its own CCB: only that one's deadline can have moved.
        if let Some(id) = self.ccbs.id(&key) {
            let at = self.ccbs[id].next_deadline();
            self.ccbs.set_deadline(id, at);
        }
    }

    fn handle_timeout(&mut self, now: Instant) {
        let mut due = std::mem::take(&mut self.due);
        self.ccbs.take_due(now, &mut due);
        for &id in &due {
            let Some(key) = self.ccbs.key(id) else {
                continue;
            };
            let c = &mut self.ccbs[id];
            if c.idle_at <= now && c.queue.is_empty() {
                self.ccbs.remove(id);
                self.stats.ccbs_idle_freed += 1;
                continue;
            }
            if c.idle_at <= now {
                c.idle_at = now + self.config.idle_timeout;
            }
            if c.rtx_at.is_some_and(|t| t <= now) {
                c.retries += 1;
                if c.retries > self.config.retry_limit {
                    self.abort(&key);
                    continue;
                }
                c.rtt.on_backoff();
                // Go back N (BSD: snd_nxt back to snd_una): everything in flight is sent again
                // as the window (and the pace) allows, so one timeout repairs every hole of a
                // burst loss instead of one segment per backed-off timeout.
                c.rtx_at = None;
                for q in c.queue.iter_mut().filter(|q| q.sent.is_some()) {
                    q.sent = None;
                    q.retransmitted = true;
                }
                self.try_send(now, &key);
            }
            let c = &mut self.ccbs[id];
            if c.persist_at.is_some_and(|t| t <= now) {
                // The probe is the first queued segment; the host trims it to its window (zero)
                // and answers with an ACK carrying the window. It does not count as sent: the
                // retransmission timer (and its retry limit) is for a host that is gone, not
                // for one whose window is closed.
                if let Some(q) = c.queue.front() {
                    self.out.push_back(q.pkt.clone());
                    self.stats.window_probes += 1;
                }
                c.persist_backoff += 1;
                let wait = c.rtt.rto().saturating_mul(1 << c.persist_backoff.min(6));
                c.persist_at = Some(now + wait.min(Duration::from_secs(60)));
            }
            let at = c.next_deadline();
            self.ccbs.set_deadline(id, at);
        }
        due.clear();
        self.due = due;
        self.release(now);
    }

    fn poll_transmit(&mut self, _now: Instant) -> Option<Transmit> {
        self.out.pop_front().map(|pkt| Transmit {
            port: PortId(0),
            pkt,
        })
    }

    fn poll_timeout(&self) -> Option<Instant> {
        let pace = (!self.ready.is_empty()).then_some(self.next_send_at);
        [self.ccbs.poll_timeout(), pace].into_iter().flatten().min()
    }
}
