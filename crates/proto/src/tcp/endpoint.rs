//! One TCP endpoint: handshake, sender (congestion control, loss recovery, RTO), receiver
//! (reassembly, advertised window, delayed ACK), close.
//!
//! Internally every sequence number is a 64-bit *offset* from the initial sequence number (the SYN
//! is offset 0, the first data byte offset 1), so transfers longer than 4 GiB and wraparound need
//! no special cases; [`SeqNumber`]s exist only on the wire.
//!
//! Call order: after [`TcpEndpoint::handle_segment`], [`TcpEndpoint::handle_timeout`] or a
//! command (`connect`, `send`, `close`), drain [`TcpEndpoint::poll_transmit`] until `None`, then
//! read [`TcpEndpoint::poll_timeout`].
//!
//! Payload is virtual by default: only lengths move. After [`TcpEndpoint::carry_bytes`] the
//! endpoint also holds the real bytes (for drivers that must forward exactly what they received):
//! write with [`TcpEndpoint::send_bytes`], fetch each sent segment's payload with
//! [`TcpEndpoint::copy_payload`], feed segments with [`TcpEndpoint::handle_segment_with_payload`]
//! and read with [`TcpEndpoint::read_bytes`]. The protocol logic is the same in both modes.
//!
//! What the model leaves out (on purpose, for now): TIME-WAIT lasts zero time (the endpoint stays
//! in `TimeWait` and still answers a retransmitted FIN), PRR (RFC 6937) only in SACK recovery
//! and only with `prr` (otherwise RFC 6675 as written), RACK-TLP (RFC 8985) only with
//! `rack`/`tlp` and SACK, F-RTO (RFC 5682) only with `frto` and without the Eifel/timestamp
//! undo (Linux `tcp_may_undo`), no D-SACK (so RACK's reordering window never grows) or reneging, no ECN, no Nagle (applications write in large
//! blocks), no urgent data, no RST generation for unknown connections (the host counts them).

use std::collections::VecDeque;
use std::net::Ipv4Addr;
use std::sync::Arc;

use super::bytes::ByteStore;
use super::cc::hystart::CSS_GROWTH_DIVISOR;
use super::cc::{AnyCc, BbrAck, CaState, CongestionControl, HystartPlusPlus, Round, Window};
use super::config::{
    FrSsthresh, FullAckCwnd, Hystart, PartialAckTimer, Recovery, RtoRearm, RtoSsthresh,
    SackRecovery, TcpConfig,
};
use super::ranges::RangeSet;
use super::rate::{RateSampler, TxState};
use super::rtt::RttEstimator;
use super::stats::TcpStats;
use crate::time::{Duration, Instant};
use crate::wire::{SeqNumber, TcpFlags, TcpRepr};

/// Connection states of RFC 9293 §3.3.2.
#[derive(Clone, Copy, Debug, Eq, PartialEq)]
pub enum State {
    /// No connection.
    Closed,
    /// Waiting for a SYN.
    Listen,
    /// SYN sent, waiting for SYN-ACK.
    SynSent,
    /// SYN received, SYN-ACK sent.
    SynReceived,
    /// Data flows both ways.
    Established,
    /// Our FIN sent, not yet acknowledged.
    FinWait1,
    /// Our FIN acknowledged, waiting for the peer's.
    FinWait2,
    /// Peer's FIN received; our application may still send.
    CloseWait,
    /// Both FINs sent, ours not yet acknowledged.
    Closing,
    /// Peer closed first; our FIN sent, waiting for its ACK.
    LastAck,
    /// Both directions closed (lasts zero time in this model).
    TimeWait,
}

#[derive(Clone, Copy, Debug, Eq, PartialEq)]
enum Timer {
    Rto = 0,
    DelayedAck = 1,
    Persist = 2,
    AppRead = 3,
    /// RACK reordering timer (RFC 8985 §6.3).
    Reo = 4,
    /// TLP probe timeout (RFC 8985 §7.2).
    Pto = 5,
    /// The next paced segment may leave (BBR); firing only wakes the sender.
    Pace = 6,
}

const TIMERS: [Timer; 7] = [
    Timer::Rto,
    Timer::DelayedAck,
    Timer::Persist,
    Timer::AppRead,
    Timer::Reo,
    Timer::Pto,
    Timer::Pace,
];

/// Segments Linux sends before pacing starts (`tcp_update_skb_after_send`:
/// `data_segs_out >= 10`).
const UNPACED_SEGMENTS: u64 = 10;

/// WCDelAckT, the worst-case delayed-ACK time a probe waits for when one segment is in flight
/// (RFC 8985 §7.2; Linux adds `TCP_RTO_MIN`, also 200 ms).
const TLP_MAX_ACK_DELAY: Duration = Duration(200_000_000);

/// RACK's state (RFC 8985 §6.1).
#[derive(Clone, Copy, Debug, Default)]
struct Rack {
    /// RACK.xmit_ts: latest send time of the most recently sent segment delivered.
    xmit_ts: Option<Instant>,
    /// RACK.end_seq: its end (orders segments sent at the same instant).
    end_seq: u64,
    /// RACK.rtt: RTT of that segment's last transmission.
    rtt: Duration,
    /// RACK.min_RTT: least RTT of segments never retransmitted, over the connection (Linux
    /// keeps a 300 s windowed minimum, `tcp_min_rtt_wlen`).
    min_rtt: Option<Duration>,
    /// RACK.fack: highest end of a delivered segment.
    fack: u64,
    /// RACK.reordering_seen: a never retransmitted segment was delivered below RACK.fack.
    reordering_seen: bool,
    /// Segments marked lost could not start a recovery (a timeout's go-back-N was still
    /// below its recovery point): try again on later ACKs.
    deferred: bool,
}

/// Tail loss probe state (RFC 8985 §7).
#[derive(Clone, Copy, Debug, Default)]
struct Tlp {
    /// TLP.end_seq: SND.NXT when the probe of the current episode was sent.
    end_seq: Option<u64>,
    /// TLP.is_retrans: the probe resent the last segment (no new data could go).
    is_retrans: bool,
    /// The probe timer fired: send the probe on the next poll.
    pending: bool,
    /// The probe repaired a loss and cwnd was reduced: no second reduction for losses found
    /// before this offset is acknowledged (Linux's CWR state until `high_seq`).
    cwr_until: u64,
}

/// F-RTO after a timeout (RFC 5682 §3; Linux `tcp_process_loss` while `tp->frto`).
#[derive(Clone, Copy, Debug)]
struct Frto {
    /// SND.MAX at the timeout (Linux `high_seq`); data sent beyond it is step 2b's new data.
    high: u64,
    /// End of the head retransmission: `rtx_end..high` is never retransmitted while F-RTO
    /// runs, so an ACK or SACK of it means the original transmissions arrived.
    rtx_end: u64,
    /// New bytes step 2b still lets out beyond cwnd (Linux counts the rest as lost, not in
    /// flight, so its cwnd of two segments sends two).
    new_budget: u64,
    /// cwnd, ssthresh and `last_recover` before the timeout, restored on a spurious one.
    prior_cwnd: u64,
    prior_ssthresh: u64,
    prior_recover: u64,
}

/// Loss recovery in progress (fast recovery of RFC 5681/6582 or SACK recovery of RFC 6675).
#[derive(Clone, Copy, Debug)]
struct FastRecovery {
    /// `recover` / RecoveryPoint: snd_max when recovery began.
    recover: u64,
    /// HighRxt: end of the highest retransmitted range (SACK recovery).
    high_rxt: u64,
    /// RescueRxt (RFC 6675 §2), as an end offset like `high_rxt`: the end of the fast
    /// retransmission at entry (§5 step 4.3, no rescue before a cumulative ACK passes it),
    /// then `recover` once NextSeg rule 4 has sent its one rescue.
    rescue_rxt: u64,
    /// When recovery began.
    since: Instant,
    /// NewReno partial ACKs so far (RFC 6582 §4: the Impatient variant restarts the timer at
    /// the first only).
    partial_acks: u32,
    /// PRR (RFC 6937 §3): bytes delivered to the receiver since recovery began.
    prr_delivered: u64,
    /// PRR: bytes sent since recovery began.
    prr_out: u64,
    /// PRR: RecoverFS, the FlightSize when recovery began.
    recover_fs: u64,
    /// `sack_recovery = "ns2"`: ns-2 Sack1's `pipe_`, in packets (may go below zero).
    pipe_pkts: i64,
}

/// A data segment as first sent, for RTT samples from SACKed data (`sack_rtt`).
#[derive(Clone, Copy, Debug)]
struct SentSegment {
    start: u64,
    end: u64,
    sent: Instant,
    /// Sent again since: Karn's rule keeps it from giving an RTT sample.
    retransmitted: bool,
    /// Latest transmission (RACK's Segment.xmit_ts).
    xmit: Instant,
    /// RACK deemed it lost.
    lost: bool,
    /// Retransmitted since it was last deemed lost, or retransmitted not lost (a probe): in
    /// flight once more (Linux `TCPCB_SACKED_RETRANS`).
    rtx_out: bool,
    /// Delivery-rate record of its latest transmission (BBR).
    tx: TxState,
}

/// A TCP endpoint. See the module documentation for the call order.
#[derive(Clone, Debug)]
pub struct TcpEndpoint {
    /// Shared, never changed: connections built from one configuration can point at one copy,
    /// which then stays in cache however many of them there are (with 10 000 flows each its
    /// own copy was a cache miss on most segments).
    config: Arc<TcpConfig>,
    local: (Ipv4Addr, u16),
    remote: (Ipv4Addr, u16),
    state: State,

    // Negotiated on the handshake.
    /// Payload bytes per full segment (peer MSS, minus timestamp option bytes; RFC 6691).
    smss: u64,
    /// Shift applied to windows the peer advertises.
    snd_wscale: u8,
    /// Shift applied to windows we advertise.
    rcv_wscale: u8,
    ws_ok: bool,
    sack_ok: bool,
    ts_ok: bool,

    // Send side (offsets from ISS; SYN = 0, data from 1).
    iss: SeqNumber,
    snd_una: u64,
    snd_nxt: u64,
    snd_max: u64,
    /// Data bytes the application has written in total.
    app_written: u64,
    fin_requested: bool,
    snd_wnd: u64,
    snd_wl1: SeqNumber,
    snd_wl2: u64,
    max_snd_wnd: u64,
    win: Window,
    cc: AnyCc,
    /// HyStart++ (`hystart = "rfc9406"`).
    hystart_pp: Option<HystartPlusPlus>,
    /// Segments sent and not yet cumulatively acknowledged, in offset order (only with
    /// `sack_rtt`, `rack` or `tlp`; Linux keeps the same send times on its retransmit queue).
    sent_log: VecDeque<SentSegment>,
    rack: Rack,
    tlp: Tlp,
    /// F-RTO in progress after a timeout (`frto`).
    frto: Option<Frto>,
    rtt: RttEstimator,
    /// Karn's rule without timestamps: (offset whose ACK ends the sample, send time).
    rtt_timing: Option<(u64, Instant)>,
    syn_sent_at: Option<Instant>,
    syn_retransmitted: bool,
    /// Retransmissions of our SYN or SYN-ACK (`iw1_after_syn_retransmits`).
    syn_retransmits: u32,
    dupacks: u32,
    recovery: Option<FastRecovery>,
    /// `recover` of the last recovery, to avoid false fast retransmits (RFC 6582 §3.2 step 1).
    last_recover: u64,
    /// `last_recover` was set by a timeout (not by the end of a fast recovery).
    recover_by_rto: bool,
    scoreboard: RangeSet,
    /// A segment at this offset must be (re)sent next: fast retransmit or NewReno partial ACK.
    rtx_now: Option<u64>,
    cwnd_limited: bool,
    /// Bytes sent beyond cwnd by limited transmit since the last new ACK: left out of the
    /// FlightSize that sets ssthresh (RFC 5681 §3.2 step 2).
    limited_sent: u64,
    /// A zero-window probe is due (persist timer fired).
    probe_pending: bool,
    /// The byte at snd_una was sent as a window probe.
    probing: bool,

    // Receive side (offsets from IRS; SYN = 0, data from 1).
    irs: SeqNumber,
    rcv_nxt: u64,
    ooo: RangeSet,
    /// Left edges of recently changed out-of-order ranges, most recent first (RFC 2018 §4).
    recent_sack: [u64; 4],
    /// Offset up to which the application has read.
    app_read: u64,
    read_clock: Instant,
    /// Right edge of the window we last advertised.
    rcv_adv: u64,
    peer_fin: Option<u64>,
    ack_now: bool,
    unacked_segments: u32,
    /// Data segments still to be acknowledged at once (Linux's quick-ACK mode at the start).
    quickacks_left: u32,
    ts_recent: u32,
    /// Added to the timestamp clock (RFC 7323 lets each connection pick its own origin): a
    /// split relay's server leg continues its client's clock, so that a server holding the same
    /// ends in TIME-WAIT sees timestamps that only grow (Linux's PAWS check), as without a PEP.
    ts_offset: u32,
    last_ack_sent: u64,

    timers: [Option<Instant>; TIMERS.len()],
    stats: TcpStats,
    established_at: Option<Instant>,
    /// The owner reads received data explicitly with [`TcpEndpoint::read_to`] (relays).
    manual_read: bool,
    /// Real payload bytes (send ring and reassembly buffer); `None` in virtual mode, which then
    /// costs one pointer.
    bytes: Option<Box<ByteStore>>,
    /// Opened by `listen`: a reset in SYN-RECEIVED returns to LISTEN (RFC 9293 §3.10.7.4).
    passive: bool,
    /// Delivery rate samples (BBR).
    rate: RateSampler,
    /// Earliest departure of the next paced data segment (Linux `tcp_wstamp_ns`).
    pace_next: Instant,
    /// Data segments sent (Linux `data_segs_out`): pacing starts at the tenth.
    data_segs_out: u64,
    /// The RTT sample the ACK being processed gave, for BBR's min RTT.
    ack_rtt: Option<Duration>,
    /// Bytes the ACK being processed marked lost (BBR's `rs->losses`).
    ack_losses: u64,
}

impl TcpEndpoint {
    /// Start this connection's timestamp clock at `origin` at `now` (before it sends anything):
    /// its TSvals are then `origin` plus the milliseconds since.
    pub fn set_ts_origin(&mut self, now: Instant, origin: u32) {
        self.ts_offset = origin.wrapping_sub(ts_clock(now));
    }

    /// A closed endpoint between `local` and `remote` whose initial sequence number is `iss`.
    pub fn new(
        config: impl Into<Arc<TcpConfig>>,
        local: (Ipv4Addr, u16),
        remote: (Ipv4Addr, u16),
        iss: u32,
    ) -> Self {
        let config = config.into();
        let mss = u64::from(config.mss.max(1));
        let rtt = RttEstimator::for_config(&config, iss);
        let ssthresh = config
            .initial_ssthresh
            .map_or(u64::MAX, |b| b.bytes().max(2 * mss));
        let rcv_wscale = if config.window_scaling {
            wscale_for(config.recv_buffer.bytes())
        } else {
            0
        };
        Self {
            cc: AnyCc::new(
                config.cc,
                config.ca_byte_counting,
                config.hystart,
                config.cubic_variant,
                u64::from(iss),
            ),
            hystart_pp: (config.hystart == Hystart::Rfc9406).then(HystartPlusPlus::default),
            sent_log: VecDeque::new(),
            rack: Rack::default(),
            tlp: Tlp::default(),
            frto: None,
            win: Window {
                cwnd: mss,
                ssthresh,
                mss,
                abc_limit: mss * u64::from(config.abc_segments.max(1)),
                ss_to_ssthresh: config.slow_start_to_ssthresh,
            },
            rtt,
            local,
            remote,
            state: State::Closed,
            smss: mss,
            snd_wscale: 0,
            rcv_wscale,
            ws_ok: false,
            sack_ok: false,
            ts_ok: false,
            iss: SeqNumber(iss),
            snd_una: 0,
            snd_nxt: 0,
            snd_max: 0,
            app_written: 0,
            fin_requested: false,
            snd_wnd: 0,
            snd_wl1: SeqNumber(0),
            snd_wl2: 0,
            max_snd_wnd: 0,
            rtt_timing: None,
            syn_sent_at: None,
            syn_retransmitted: false,
            syn_retransmits: 0,
            dupacks: 0,
            recovery: None,
            last_recover: 0,
            recover_by_rto: false,
            scoreboard: RangeSet::default(),
            rtx_now: None,
            cwnd_limited: false,
            limited_sent: 0,
            probe_pending: false,
            probing: false,

            irs: SeqNumber(0),
            rcv_nxt: 0,
            ooo: RangeSet::default(),
            recent_sack: [0; 4],
            app_read: 1,
            read_clock: Instant::ZERO,
            rcv_adv: 0,
            peer_fin: None,
            ack_now: false,
            unacked_segments: 0,
            quickacks_left: config.quickacks,
            ts_recent: 0,
            ts_offset: 0,
            last_ack_sent: 0,
            timers: [None; TIMERS.len()],
            stats: TcpStats::default(),
            established_at: None,
            manual_read: false,
            bytes: None,
            passive: false,
            rate: RateSampler::default(),
            pace_next: Instant::ZERO,
            data_segs_out: 0,
            ack_rtt: None,
            ack_losses: 0,
            config,
        }
    }

    /// Let the owner, not `app_read_rate`, decide when received data is read: data stays
    /// unread (and keeps the advertised window closed) until [`TcpEndpoint::read_to`]. A
    /// split-TCP relay reads only what the other half has delivered, so the window it
    /// advertises is what its buffer has left (backpressure).
    pub fn set_manual_read(&mut self) {
        self.manual_read = true;
    }

    /// Manual read mode: mark in-order data up to `total` bytes (counted from the first data
    /// byte) as read, and send a window update if the window opened enough. Never reads past
    /// what has arrived; a smaller `total` than already read does nothing. With real bytes, the
    /// bytes so marked are discarded (use [`TcpEndpoint::read_bytes`] to get them).
    pub fn read_to(&mut self, now: Instant, total: u64) {
        let target = (1 + total).min(self.rcv_data_end());
        self.mark_read(now, target);
    }

    /// Switch this endpoint to real bytes: from now on it stores what the application writes
    /// and the payload of received segments, so a relay can forward exactly what it received.
    /// Call before any data byte is written or received (any state before that, including
    /// after `connect`/`listen`). Returns whether the endpoint now carries bytes: false, with
    /// nothing changed, once data has moved in virtual mode; true again on a repeated call.
    pub fn carry_bytes(&mut self) -> bool {
        let no_data_yet = self.app_written == 0 && self.rcv_data_end() <= 1 && self.ooo.is_empty();
        if self.bytes.is_none() && no_data_yet {
            self.bytes = Some(Box::new(ByteStore::new(self.config.recv_buffer.bytes())));
        }
        self.bytes.is_some()
    }

    /// Real-bytes mode, manual read mode: append up to `max` in-order received bytes to `out`,
    /// mark them read exactly as [`TcpEndpoint::read_to`] does (a window update may follow: drain
    /// `poll_transmit`), and return how many (bytes). Returns 0 and does nothing in virtual mode
    /// or without [`TcpEndpoint::set_manual_read`] (then the configured reader consumes data).
    pub fn read_bytes(&mut self, now: Instant, out: &mut Vec<u8>, max: usize) -> usize {
        let n = self.readable().min(max as u64) as usize;
        let Some(store) = self.bytes.as_deref_mut() else {
            return 0;
        };
        if !self.manual_read {
            return 0;
        }
        let got = store.recv.read(n, out);
        self.mark_read(now, self.app_read + got as u64);
        got
    }

    /// Real bytes, any read mode: append to `out` up to `max` in-order received bytes that start
    /// `from` bytes into the stream, *without* reading them (the window stays as it is); returns
    /// how many. A split-TCP relay copies data on with this and reads it ([`Self::read_to`]) only
    /// once the far end has acknowledged it, exactly as it does with virtual payload.
    pub fn peek_bytes(&self, from: u64, max: usize, out: &mut Vec<u8>) -> usize {
        let Some(store) = self.bytes.as_deref() else {
            return 0;
        };
        let start = from.saturating_add(1);
        let end = self.rcv_data_end();
        if start >= end {
            return 0;
        }
        let n = usize::try_from(end - start).unwrap_or(usize::MAX).min(max);
        store.recv.peek(start, n, out)
    }

    // ---- commands ----

    /// Active open: send a SYN.
    pub fn connect(&mut self, now: Instant) {
        if self.state == State::Closed {
            self.state = State::SynSent;
            self.snd_nxt = 0;
            self.set_timer(Timer::Rto, now + self.rtt.rto());
        }
    }

    /// Passive open: wait for a SYN.
    pub fn listen(&mut self) {
        if self.state == State::Closed {
            self.state = State::Listen;
            self.passive = true;
        }
    }

    /// The application writes `bytes` (virtual payload). Returns how many fit in the send buffer.
    /// Returns 0 in real-bytes mode, where data must come with its bytes ([`Self::send_bytes`]).
    pub fn send(&mut self, _now: Instant, bytes: u64) -> u64 {
        if self.bytes.is_some() {
            return 0;
        }
        self.accept_write(bytes)
    }

    /// Real-bytes mode: the application writes `data`. Returns how many bytes were accepted: at
    /// most [`Self::send_space`], 0 after `close` or before `connect`/`listen`, as
    /// [`Self::send`]. Returns 0 and does nothing in virtual mode (use `send` there).
    pub fn send_bytes(&mut self, _now: Instant, data: &[u8]) -> usize {
        if self.bytes.is_none() {
            return 0;
        }
        let n = self.accept_write(data.len() as u64) as usize;
        if let (Some(store), Some(accepted)) = (self.bytes.as_deref_mut(), data.get(..n)) {
            store.send.push(accepted);
        }
        n
    }

    /// The application will write no more: send FIN after the data.
    pub fn close(&mut self, _now: Instant) {
        self.fin_requested = true;
    }

    /// A segment for this connection arrived (already parsed and checksummed), with virtual
    /// payload. In real-bytes mode a data segment without its bytes is dropped and counted: use
    /// [`Self::handle_segment_with_payload`] there.
    pub fn handle_segment(&mut self, now: Instant, seg: &TcpRepr) {
        self.handle_segment_with_payload(now, seg, None);
    }

    /// A segment arrived with its payload bytes (`None`: virtual payload). Same as
    /// [`Self::handle_segment`], and in real-bytes mode the accepted part of the data (inside
    /// the advertised window, not yet received) is stored for [`Self::read_bytes`].
    ///
    /// Real-bytes mode drops the *whole* segment, counted in `TcpStats::bad_payload`, when its
    /// bytes cannot be trusted: `payload` is `None` on a data segment, or its length differs
    /// from `seg.payload_len`. Acting on the ACK of such a segment while ignoring its data
    /// would make it look like a duplicate ACK; dropped, it is simply retransmitted. Virtual
    /// mode ignores the bytes of a `Some` payload (counted in `TcpStats::payload_ignored`) and
    /// processes the segment by its header, as `handle_segment`.
    pub fn handle_segment_with_payload(
        &mut self,
        now: Instant,
        seg: &TcpRepr,
        payload: Option<&[u8]>,
    ) {
        let payload = match (self.bytes.is_some(), payload) {
            (false, None) => None,
            (false, Some(_)) => {
                self.stats.payload_ignored += 1;
                None
            }
            (true, Some(p)) if p.len() as u64 == u64::from(seg.payload_len) => Some(p),
            (true, None) if seg.payload_len == 0 => None,
            (true, _) => {
                self.stats.bad_payload += 1;
                return;
            }
        };
        self.stats.segments_received += 1;
        self.advance_reader(now);
        if seg.flags.contains(TcpFlags::RST) {
            if self.reset_acceptable(seg) {
                if self.state == State::SynReceived && self.passive {
                    self.back_to_listen();
                } else {
                    self.state = State::Closed;
                    self.timers = [None; TIMERS.len()];
                }
            }
            return;
        }
        match self.state {
            State::Closed => return,
            State::Listen => {
                if seg.flags.contains(TcpFlags::SYN) && seg.ack.is_none() {
                    self.accept_syn(seg);
                    self.state = State::SynReceived;
                    self.snd_nxt = 0;
                    self.set_timer(Timer::Rto, now + self.rtt.rto());
                }
                return;
            }
            State::SynSent => {
                let Some(ack) = seg.ack else {
                    if seg.flags.contains(TcpFlags::SYN) {
                        // Simultaneous open (RFC 9293 §3.10.7.3, Figure 8): answer with a
                        // SYN-ACK of our own sequence number and wait for its ACK.
                        self.accept_syn(seg);
                        self.state = State::SynReceived;
                        self.snd_nxt = 0;
                    }
                    return;
                };
                if !seg.flags.contains(TcpFlags::SYN) || ack != self.iss + 1 {
                    return;
                }
                self.accept_syn(seg);
                self.snd_una = 1;
                self.snd_nxt = self.snd_nxt.max(1);
                if let (Some(t), false) = (self.syn_sent_at, self.syn_retransmitted) {
                    self.rtt.on_sample_in_round(now, now - t, 1, 1);
                }
                self.establish(now, seg);
                self.ack_now = true;
                return;
            }
            State::SynReceived => {
                let Some(ack) = seg.ack else {
                    if seg.flags.contains(TcpFlags::SYN) {
                        // The peer did not get our SYN-ACK: send it again.
                        self.snd_nxt = 0;
                    }
                    return;
                };
                if ack != self.iss + 1 {
                    return;
                }
                self.snd_una = 1;
                self.snd_nxt = self.snd_nxt.max(1);
                if let (Some(t), false) = (self.syn_sent_at, self.syn_retransmitted) {
                    self.rtt.on_sample_in_round(now, now - t, 1, 1);
                }
                self.establish(now, seg);
            }
            _ => {
                if seg.flags.contains(TcpFlags::SYN) {
                    // A retransmitted SYN-ACK: our ACK was lost.
                    self.ack_now = true;
                    return;
                }
            }
        }
        // RFC 9293 §3.10.7.4 "first check sequence number", before anything else of the
        // segment is used: its timestamp (RFC 7323 §5.3 R2 before R3), its ACK and window,
        // its data. A SYN here is the simultaneous open's SYN-ACK, checked above.
        if !seg.flags.contains(TcpFlags::SYN) && !self.is_in_window(seg) {
            // "If an incoming segment is not acceptable, an acknowledgment should be sent in
            // reply ... After sending the acknowledgment, drop the unacceptable segment and
            // return." The ACK is at once: a duplicate ACK (RFC 5681 §4.2).
            self.stats.unacceptable += 1;
            // Beyond the window rather than old (an old one starts below RCV.NXT).
            if seg.payload_len > 0 && self.rcv_offset(seg.seq) > self.rcv_nxt as i64 {
                self.stats.beyond_window += 1;
            }
            self.ack_now = true;
            self.update_timers(now);
            return;
        }
        if self.ts_ok {
            if let Some((tsval, _)) = seg.timestamp {
                // RFC 7323 §4.3: remember TSval of a segment that starts at or before what we
                // last acknowledged.
                // RFC 7323 §4.3 and the PAWS ordering of §5.3: never move TS.Recent back.
                let newer = tsval.wrapping_sub(self.ts_recent) as i32 >= 0;
                if newer && self.rcv_offset(seg.seq) <= self.last_ack_sent as i64 {
                    self.ts_recent = tsval;
                }
            }
        }
        if let Some(ack) = seg.ack {
            if !self.process_ack(now, seg, ack) {
                self.update_timers(now);
                return;
            }
        }
        if seg.payload_len > 0 || seg.flags.contains(TcpFlags::FIN) {
            self.process_data(now, seg, payload);
        }
        self.update_timers(now);
    }

    /// RFC 9293 §3.10.7.4: a reset in SYN-RECEIVED after a passive open forgets the peer's SYN
    /// and listens again (counters kept).
    fn back_to_listen(&mut self) {
        let mut fresh = Self::new(self.config.clone(), self.local, self.remote, self.iss.0);
        fresh.stats = self.stats;
        fresh.manual_read = self.manual_read;
        if self.bytes.is_some() {
            fresh.carry_bytes();
        }
        fresh.listen();
        *self = fresh;
    }

    /// Whether an arriving RST closes the connection (RFC 9293 §3.10.7 with RFC 5961 §3.2): in
    /// SYN-SENT only if it acknowledges our SYN; later only at exactly RCV.NXT. An in-window RST
    /// elsewhere draws a challenge ACK (a blind attacker must then guess the exact number); any
    /// other RST is ignored.
    fn reset_acceptable(&mut self, seg: &TcpRepr) -> bool {
        let ok = match self.state {
            State::Closed | State::Listen => false,
            State::SynSent => seg.ack == Some(self.iss + 1),
            _ => {
                let off = self.rcv_offset(seg.seq);
                let window_end = self.rcv_adv.max(self.rcv_nxt) as i64;
                if off == self.rcv_nxt as i64 {
                    true
                } else {
                    if off > self.rcv_nxt as i64 && off < window_end {
                        self.stats.challenge_acks += 1;
                        self.ack_now = true;
                    }
                    false
                }
            }
        };
        if !ok {
            self.stats.resets_ignored += 1;
        }
        ok
    }

    /// The sequence check of RFC 9293 §3.10.7.4 as Linux's `tcp_sequence` makes it: a segment
    /// is acceptable unless it ends before the RCV.NXT we last acknowledged (Linux's
    /// `rcv_wup`) or starts beyond the right edge of the window we advertised. An
    /// unacceptable segment is answered with an ACK and dropped, its ACK field unused.
    ///
    /// Where this follows Linux rather than the RFC's four-case table:
    /// - a segment that ends at or above the RCV.NXT last acknowledged but below RCV.NXT (a
    ///   retransmission of what we have just acknowledged, or of what our delayed ACK has not
    ///   yet acknowledged; a pure ACK overtaken by data) is acceptable: its ACK and window are
    ///   used and its data, a duplicate, draws an immediate ACK in [`Self::process_data`]. The
    ///   table refuses all of it, dropping a current ACK; BSD goes further and uses the ACK of
    ///   every old segment;
    /// - a segment starting exactly at the right edge is acceptable: a pure ACK from a peer that
    ///   filled our window (BSD takes it too), and with a zero window the probe at RCV.NXT,
    ///   whose ACK the RFC's "special allowance" keeps; their data is trimmed away and ACKed;
    /// - only where a segment starts is held against the right edge, so a FIN just beyond the
    ///   window is kept (the table counts the FIN; Linux's latest `tcp_sequence` also lets it
    ///   through, "Some stacks are known to handle FIN incorrectly"): our own sender sends its
    ///   FIN whatever the peer's window.
    ///
    /// A segment partly inside the window is acceptable and trimmed to it (the RFC; recent
    /// Linux, commit 9ca48d616ed7, drops one that passes the right edge unless its receive
    /// queue is empty).
    /// Not modelled: PAWS (RFC 7323 §5), and Linux's rate limit on ACKs answering
    /// out-of-window segments (`tcp_oow_rate_limited`, 500 ms for pure ACKs).
    fn is_in_window(&self, seg: &TcpRepr) -> bool {
        let start = self.rcv_offset(seg.seq);
        let fin = i64::from(seg.flags.contains(TcpFlags::FIN));
        let end = start + i64::from(seg.payload_len) + fin;
        let right = self.rcv_adv.max(self.rcv_nxt) as i64;
        end >= self.last_ack_sent as i64 && start <= right
    }

    /// Run every expired timer. Early or repeated calls do nothing.
    pub fn handle_timeout(&mut self, now: Instant) {
        self.advance_reader(now);
        for t in TIMERS {
            if self.timers[t as usize].is_some_and(|at| at <= now) {
                self.timers[t as usize] = None;
                match t {
                    Timer::Rto => self.on_rto(now),
                    Timer::DelayedAck => self.ack_now = true,
                    Timer::Persist => self.on_persist(now),
                    Timer::AppRead => self.maybe_window_update(),
                    Timer::Reo => self.on_rack_timer(now),
                    Timer::Pto => self.on_pto(now),
                    Timer::Pace => {}
                }
            }
        }
        self.update_timers(now);
    }

    /// Next segment to send, if any.
    pub fn poll_transmit(&mut self, now: Instant) -> Option<TcpRepr> {
        let seg = match self.state {
            State::Closed | State::Listen => None,
            State::SynSent => self.poll_syn(now, false),
            State::SynReceived => self.poll_syn(now, true),
            _ => self
                .poll_data(now)
                .or_else(|| self.poll_fin(now))
                .or_else(|| self.poll_ack(now)),
        }?;
        self.stats.segments_sent += 1;
        self.update_timers(now);
        Some(seg)
    }

    /// Earliest instant a timer needs [`TcpEndpoint::handle_timeout`].
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.timers.iter().flatten().min().copied()
    }

    /// Real-bytes mode: append the payload of `seg`, a segment just returned by
    /// [`Self::poll_transmit`], to `out` (its `payload_len` data bytes from `seg.seq`; a SYN or
    /// FIN occupies no payload). Call before feeding the endpoint more input: an ACK may drop
    /// the bytes. Returns false, appending nothing, in virtual mode or if the bytes are not held
    /// (a caller bug, e.g. a segment from another endpoint or kept too long).
    pub fn copy_payload(&self, seg: &TcpRepr, out: &mut Vec<u8>) -> bool {
        let Some(store) = self.bytes.as_deref() else {
            return false;
        };
        if seg.payload_len == 0 {
            return true; // SYN, FIN or pure ACK: the SYN's offset 0 holds no byte
        }
        let Ok(offset) = u64::try_from(self.snd_offset(seg.seq)) else {
            return false;
        };
        store.send.copy(offset, seg.payload_len as usize, out)
    }

    // ---- getters ----

    /// Connection state.
    pub fn state(&self) -> State {
        self.state
    }
    /// Local address and port.
    pub fn local(&self) -> (Ipv4Addr, u16) {
        self.local
    }
    /// Remote address and port.
    pub fn remote(&self) -> (Ipv4Addr, u16) {
        self.remote
    }
    /// Counters.
    pub fn stats(&self) -> TcpStats {
        self.stats
    }
    /// Congestion window, bytes.
    pub fn cwnd(&self) -> u64 {
        self.win.cwnd
    }
    /// Pacing rate in bytes per second, if the sender paces (BBR).
    pub fn pacing_rate(&self) -> Option<u64> {
        self.cc.bbr().and_then(|b| b.pacing_rate())
    }
    /// BBR's state, if it is the congestion control.
    pub fn bbr(&self) -> Option<&super::cc::Bbr> {
        self.cc.bbr()
    }
    /// Slow-start threshold, bytes (`None` while unbounded).
    pub fn ssthresh(&self) -> Option<u64> {
        (self.win.ssthresh != u64::MAX).then_some(self.win.ssthresh)
    }
    /// Linux HyStart's slow-start exits so far, (ACK train, delay): nstat's
    /// `TCPHystartTrainDetect` and `TCPHystartDelayDetect`; (0, 0) without `hystart = "linux"`.
    pub fn hystart_detections(&self) -> (u32, u32) {
        self.cc.hystart_detections()
    }
    /// RTT estimator (SRTT, RTTVAR, RTO, mean of samples).
    pub fn rtt(&self) -> &RttEstimator {
        &self.rtt
    }
    /// Window the peer advertised, scaled, bytes.
    pub fn snd_wnd(&self) -> u64 {
        self.snd_wnd
    }
    /// Bytes in flight: RFC 6675's `pipe` in SACK recovery, otherwise snd_max − snd_una.
    pub fn bytes_in_flight(&self) -> u64 {
        if self.in_sack_recovery() {
            self.pipe()
        } else {
            self.snd_max.saturating_sub(self.snd_una)
        }
    }
    /// Payload bytes per full segment on this connection.
    pub fn smss(&self) -> u64 {
        self.smss
    }
    /// Data bytes cumulatively acknowledged by the peer.
    pub fn bytes_acked(&self) -> u64 {
        self.snd_una.min(1 + self.app_written).saturating_sub(1)
    }
    /// Data bytes sent for the first time (highest offset sent).
    pub fn bytes_sent_new(&self) -> u64 {
        self.snd_max.min(1 + self.app_written).saturating_sub(1)
    }
    /// Data bytes the application has written.
    pub fn bytes_written(&self) -> u64 {
        self.app_written
    }
    /// Free space in the send buffer (written but unacknowledged data counts against it).
    pub fn send_space(&self) -> u64 {
        let unacked = self.app_written - self.bytes_acked();
        self.config.send_buffer.bytes().saturating_sub(unacked)
    }
    /// In-order data bytes received.
    pub fn bytes_received(&self) -> u64 {
        self.rcv_data_end().saturating_sub(1)
    }
    /// Data bytes the application has read.
    pub fn bytes_delivered(&self) -> u64 {
        self.app_read.saturating_sub(1)
    }
    /// In-order data bytes received and not yet read by the application (what
    /// [`Self::read_bytes`] can return now).
    pub fn readable(&self) -> u64 {
        self.rcv_data_end().saturating_sub(self.app_read)
    }
    /// Whether this endpoint holds real payload bytes ([`Self::carry_bytes`]).
    pub fn carries_bytes(&self) -> bool {
        self.bytes.is_some()
    }
    /// Bytes held in memory: (send ring, receive buffer including gaps). Tests check the bounds.
    #[cfg(test)]
    pub(super) fn bytes_held(&self) -> (usize, usize) {
        self.bytes
            .as_deref()
            .map_or((0, 0), |b| (b.send.len(), b.recv.len()))
    }
    /// Whether the peer's FIN has been received in order.
    pub fn peer_closed(&self) -> bool {
        self.peer_fin.is_some_and(|f| self.rcv_nxt > f)
    }
    /// Whether the handshake is complete (and the connection not reset).
    pub fn is_established(&self) -> bool {
        !matches!(
            self.state,
            State::Closed | State::Listen | State::SynSent | State::SynReceived
        )
    }
    /// When the handshake completed.
    pub fn established_at(&self) -> Option<Instant> {
        self.established_at
    }
    /// Whether all written data and the FIN (if requested) are acknowledged.
    pub fn all_acked(&self) -> bool {
        self.snd_una >= self.snd_end()
    }
    /// Whether both directions are closed.
    pub fn is_finished(&self) -> bool {
        matches!(self.state, State::TimeWait | State::Closed) && self.established_at.is_some()
    }

    // ---- handshake ----

    fn accept_syn(&mut self, seg: &TcpRepr) {
        self.irs = seg.seq;
        self.rcv_nxt = 1;
        self.app_read = 1;
        let peer_mss = u64::from(seg.mss.unwrap_or(536));
        self.ts_ok = self.config.timestamps && seg.timestamp.is_some();
        self.sack_ok = self.config.sack && seg.sack_permitted;
        self.ws_ok = self.config.window_scaling && seg.window_scale.is_some();
        if self.ws_ok {
            self.snd_wscale = seg.window_scale.unwrap_or(0).min(14);
        } else {
            self.snd_wscale = 0;
            self.rcv_wscale = 0;
        }
        // Windows are recomputed from here on, relative to the peer's sequence space.
        self.rcv_adv = 0;
        if let Some((tsval, _)) = seg.timestamp {
            self.ts_recent = tsval;
        }
        // RFC 6691: the MSS option excludes TCP options; leave room for timestamps.
        let opt = if self.ts_ok { 12 } else { 0 };
        self.smss = (peer_mss.min(u64::from(self.config.mss)))
            .saturating_sub(opt)
            .max(1);
        self.win.mss = self.smss;
        self.win.abc_limit = self.smss * u64::from(self.config.abc_segments.max(1));
        // Windows in SYNs are never scaled (RFC 7323 §2.2).
        self.snd_wnd = u64::from(seg.window);
        self.snd_wl1 = seg.seq;
        self.max_snd_wnd = self.snd_wnd;
    }

    fn establish(&mut self, now: Instant, seg: &TcpRepr) {
        self.state = State::Established;
        self.established_at = Some(now);
        // RFC 6928 initial window (RFC 5681 §3.1: one segment if the SYN was retransmitted;
        // Linux `tcp_init_transfer` only after more than one retransmission).
        let iw = if self.syn_retransmits >= self.config.iw1_after_syn_retransmits {
            1
        } else {
            u64::from(self.config.initial_window.clamp(1, 10))
        };
        self.win.cwnd = iw * self.smss;
        if self.syn_retransmitted {
            self.rtt.on_syn_timeout_established();
            if self.config.syn_rto_ssthresh {
                // ns-2's timeout of packet 0: half a one-packet window, floored at 2.
                self.win.ssthresh = 2 * self.smss;
            }
        }
        self.read_clock = now;
        self.clear_timer(Timer::Rto);
        if seg.flags.contains(TcpFlags::SYN) {
            self.snd_wnd = u64::from(seg.window);
        } else {
            self.snd_wnd = u64::from(seg.window) << self.snd_wscale;
        }
        self.snd_wl2 = 1;
        self.max_snd_wnd = self.max_snd_wnd.max(self.snd_wnd);
        let srtt = self.rtt.srtt();
        if let Some(r) = srtt {
            self.rate.on_rtt(r);
        }
        if let Some(b) = self.cc.bbr_mut() {
            b.init(now, &self.win, srtt, srtt);
        }
    }

    fn poll_syn(&mut self, now: Instant, with_ack: bool) -> Option<TcpRepr> {
        if self.snd_nxt > 0 {
            return None;
        }
        self.snd_nxt = 1;
        self.snd_max = 1;
        self.syn_sent_at.get_or_insert(now);
        let mut seg = self.segment(now, 0, 0);
        seg.flags = TcpFlags::SYN;
        // A SYN offers what we enable; a SYN-ACK agrees to what both sides enable.
        let (ws, sack, ts) = if with_ack {
            (self.ws_ok, self.sack_ok, self.ts_ok)
        } else {
            seg.ack = None;
            (
                self.config.window_scaling,
                self.config.sack,
                self.config.timestamps,
            )
        };
        // In a SYN the window is never scaled.
        seg.window = self.rcv_window_now().min(65_535) as u16;
        if with_ack {
            self.rcv_adv = self.rcv_nxt + u64::from(seg.window);
        }
        seg.mss = Some(self.config.mss);
        seg.window_scale = ws.then_some(self.rcv_wscale);
        seg.sack_permitted = sack;
        seg.timestamp = ts.then(|| {
            (
                ts_clock(now).wrapping_add(self.ts_offset),
                if with_ack { self.ts_recent } else { 0 },
            )
        });
        seg.sack = Default::default();
        if self.timers[Timer::Rto as usize].is_none() {
            self.set_timer(Timer::Rto, now + self.rtt.rto());
        }
        Some(seg)
    }

    // ---- sender ----

    /// Offset just past the last thing to send: data end, plus one for a requested FIN.
    fn snd_end(&self) -> u64 {
        1 + self.app_written + u64::from(self.fin_requested)
    }

    fn data_end(&self) -> u64 {
        1 + self.app_written
    }

    /// Take up to `bytes` of application data into the send buffer; returns how many.
    fn accept_write(&mut self, bytes: u64) -> u64 {
        if self.fin_requested || matches!(self.state, State::Closed | State::Listen) {
            return 0;
        }
        let n = bytes.min(self.send_space());
        self.app_written += n;
        n
    }

    /// SACK-based recovery is configured and the peer agreed to SACK.
    fn uses_sack(&self) -> bool {
        self.sack_ok && self.config.recovery == Recovery::Sack
    }

    fn in_sack_recovery(&self) -> bool {
        self.recovery.is_some() && self.uses_sack()
    }

    /// Segments are logged with their send times (`sack_rtt`, RACK, TLP).
    fn keeps_log(&self) -> bool {
        self.config.sack_rtt || self.config.rack || self.config.tlp || self.bbr_on()
    }

    /// BBR sets cwnd and paces: the window rules of RFC 5681/6582/6937 stand aside (Linux calls
    /// `cong_control` instead of `tcp_cong_avoid` and PRR).
    fn bbr_on(&self) -> bool {
        self.cc.bbr().is_some()
    }

    /// RACK loss detection runs (it needs SACK: RFC 8985 §5).
    fn rack_on(&self) -> bool {
        self.config.rack && self.uses_sack()
    }

    /// Tail loss probes run (SACK needed to tell which segment the probe repaired, §7).
    fn tlp_on(&self) -> bool {
        self.config.tlp && self.uses_sack()
    }

    /// The go-back-N after a timeout still runs (Linux's `TCP_CA_Loss`).
    fn in_rto_recovery(&self) -> bool {
        self.recover_by_rto && self.snd_una < self.last_recover
    }

    /// Bytes of `rtx_end..high` the peer has acknowledged or SACKed, plus `rtx_end` (only
    /// its growth matters): the original transmissions F-RTO watches for.
    fn frto_known(&self, f: &Frto) -> u64 {
        let acked_to = self.snd_una.clamp(f.rtx_end, f.high);
        acked_to + self.scoreboard.covered(acked_to, f.high)
    }

    /// F-RTO on an ACK after the timeout, in Linux 6.1 `tcp_process_loss`'s order: (S)ACKed
    /// original data undoes the timeout (step 3b, `FLAG_ORIG_SACK_ACKED`); once new data is
    /// out, a duplicate ACK or new SACK information means the loss was real (step 3a); an ACK
    /// that advances SND.UNA short of `high` sends new data if any may go (step 2b), else
    /// conventional recovery goes on.
    fn frto_on_ack(&mut self, una_before: u64, new_sack: bool, dup: bool, known_before: u64) {
        let Some(mut f) = self.frto else {
            return;
        };
        // Without SACK an ACK that also covers the retransmitted head cannot tell whether the
        // never retransmitted data above it arrived before the timeout or was waiting at the
        // receiver behind the lost head: Linux (`tcp_clean_rtx_queue`, since 4.17 "tcp: prevent
        // bogus FRTO undos with non-SACK flows") drops `FLAG_ORIG_SACK_ACKED` when
        // `FLAG_RETRANS_DATA_ACKED` is set on a non-SACK connection. Undoing there restored a
        // cwnd below what was still outstanding, and the flow waited for the next (backed-off)
        // timeout, again and again (issue 37: 0.112 Mb/s on a 430 kb/s return path).
        let orig_only = self.sack_ok || una_before >= f.rtx_end;
        if orig_only && self.frto_known(&f) > known_before {
            // Spurious (Linux `tcp_try_undo_loss(sk, true)` → `tcp_undo_cwnd_reduction`):
            // cwnd and ssthresh back, no go-back-N. BBR's `undo_cwnd` keeps the window (it
            // restores its own when the Loss state ends).
            if let Some(b) = self.cc.bbr_mut() {
                let stamp = self.rate.delivered_time().unwrap_or(Instant::ZERO);
                b.on_undo(stamp, self.rate.delivered(), self.rate.lost());
            } else {
                self.win.cwnd = self.win.cwnd.max(f.prior_cwnd);
            }
            self.win.ssthresh = self.win.ssthresh.max(f.prior_ssthresh);
            self.last_recover = f.prior_recover;
            self.recover_by_rto = false;
            // `tcp_undo_cwnd_reduction(sk, true)` also forgets which segments were lost.
            for seg in &mut self.sent_log {
                seg.lost = false;
            }
            self.rack.deferred = false;
            self.snd_nxt = self.snd_max;
            self.stats.spurious_rtos += 1;
            self.frto = None;
            return;
        }
        if self.snd_max > f.high {
            if new_sack || dup {
                // Step 3a: the loss was real; the go-back-N resumes.
                self.snd_nxt = self.snd_una;
                self.frto = None;
            }
            return;
        }
        if self.snd_una > una_before && self.snd_una < f.high {
            let can_send_new =
                self.data_end() > self.snd_max && self.snd_una + self.snd_wnd > self.snd_max;
            if can_send_new {
                f.new_budget = 2 * self.smss;
                self.snd_nxt = self.snd_max;
                self.frto = Some(f);
                return;
            }
            self.frto = None;
        }
        if self.snd_una >= f.high {
            self.frto = None;
        }
    }

    /// RFC 8985 §6.2 steps 2–3 for the segments this ACK delivers (cumulatively below
    /// `ack_off` or inside the SACK `blocks`, before they enter the scoreboard): RACK.xmit_ts,
    /// end_seq and rtt from the most recently sent of them, RACK.min_RTT, and reordering.
    fn rack_update(&mut self, now: Instant, ack_off: u64, blocks: &mut [(u64, u64)]) {
        blocks.sort_unstable();
        let mut newest: Option<(SentSegment, Duration)> = None;
        let una = self.snd_una;
        for s in self.sent_log.iter().take_while(|s| s.end <= ack_off) {
            let from = s.start.max(una);
            if self.scoreboard.covered(from, s.end) < s.end - from {
                rack_deliver(&mut self.rack, &mut newest, s, now);
            }
        }
        for &(l, r) in blocks.iter() {
            let first = self.sent_log.partition_point(|s| s.start < l);
            for s in self.sent_log.range(first..) {
                if s.end > r {
                    break;
                }
                if self.scoreboard.covered(s.start, s.end) < s.end - s.start {
                    rack_deliver(&mut self.rack, &mut newest, s, now);
                }
            }
        }
        if let Some((s, rtt)) = newest {
            // In ascending order of xmit_ts the last sample processed sets RACK.rtt.
            self.rack.rtt = rtt;
            let after = self
                .rack
                .xmit_ts
                .is_none_or(|t| sent_after(s.xmit, s.end, t, self.rack.end_seq));
            if after {
                self.rack.xmit_ts = Some(s.xmit);
                self.rack.end_seq = s.end;
            }
        }
    }

    /// RACK.reo_wnd (RFC 8985 §6.2 step 4, with RACK.reo_wnd_mult = 1: no D-SACK here): 0
    /// before any reordering in recovery or once DupThresh segments are SACKed, else
    /// min(min_RTT/4, SRTT).
    fn rack_reo_wnd(&self) -> Duration {
        if !self.rack.reordering_seen
            && (self.recovery.is_some()
                || self.in_rto_recovery()
                || self.sacked_segments() >= u64::from(self.config.dupthresh))
        {
            return Duration::ZERO;
        }
        let quarter = Duration(self.rack.min_rtt.map_or(0, |m| m.as_nanos() / 4));
        self.rtt.srtt().map_or(quarter, |s| quarter.min(s))
    }

    /// Logged segments the scoreboard covers whole (Linux `sacked_out`).
    fn sacked_segments(&self) -> u64 {
        self.scoreboard
            .as_slice()
            .iter()
            .map(|&(l, r)| {
                let a = self.sent_log.partition_point(|s| s.start < l);
                let b = self.sent_log.partition_point(|s| s.end <= r);
                b.saturating_sub(a) as u64
            })
            .sum()
    }

    /// RFC 8985 §6.2 step 5 and §6.3: mark lost every unSACKed segment sent before RACK.xmit_ts
    /// whose RACK.rtt + reo_wnd has passed since its last transmission; arm the reordering
    /// timer for the longest wait left among the others. Returns whether it marked any.
    fn rack_detect_loss_and_arm_timer(&mut self, now: Instant) -> bool {
        let Some(rack_xmit) = self.rack.xmit_ts else {
            return false;
        };
        let reo_wnd = self.rack_reo_wnd();
        let wait = (self.rack.rtt + reo_wnd).as_nanos();
        let mut timeout = 0;
        let mut lost = false;
        let first = self.sent_log.partition_point(|s| s.end <= self.snd_una);
        for i in first..self.sent_log.len() {
            let s = self.sent_log[i];
            if (s.lost && !s.rtx_out) || !sent_after(rack_xmit, self.rack.end_seq, s.xmit, s.end) {
                continue;
            }
            let from = s.start.max(self.snd_una);
            if self.scoreboard.covered(from, s.end) == s.end - from {
                continue;
            }
            let elapsed = now.saturating_since(s.xmit).as_nanos();
            if elapsed >= wait {
                if self.bbr_on() {
                    let bytes = (s.end - from) - self.scoreboard.covered(from, s.end);
                    self.ack_losses += bytes;
                    self.rate.on_lost(bytes);
                }
                let m = &mut self.sent_log[i];
                m.lost = true;
                m.rtx_out = false;
                self.stats.rack_marked_lost += 1;
                lost = true;
            } else {
                timeout = timeout.max(wait - elapsed);
            }
        }
        if timeout > 0 {
            self.set_timer(Timer::Reo, now + Duration(timeout));
        }
        lost
    }

    /// Enter recovery for the segments RACK deemed lost, if any is still to be resent; if the
    /// recovery point holds it back, remember to try again.
    /// `ended`: this ACK just ended a recovery (`lost_out_reentry` then counts resent losses).
    fn rack_start_recovery(&mut self, now: Instant, ended: bool) {
        let lost = self.rack_next_lost().is_some()
            || (ended && self.config.lost_out_reentry && self.rack_lost_outstanding());
        self.rack.deferred = lost && !self.enter_fast_recovery(now);
    }

    /// Whether a segment RACK deemed lost still has unacknowledged, unSACKed bytes, resent or
    /// not (Linux `lost_out > 0`).
    fn rack_lost_outstanding(&self) -> bool {
        let first = self.sent_log.partition_point(|s| s.end <= self.snd_una);
        self.sent_log.range(first..).any(|s| {
            let from = s.start.max(self.snd_una);
            s.lost && self.scoreboard.covered(from, s.end) < s.end - from
        })
    }

    /// The first segment RACK deemed lost and not resent since: (first unSACKed byte, end).
    fn rack_next_lost(&self) -> Option<(u64, u64)> {
        let first = self.sent_log.partition_point(|s| s.end <= self.snd_una);
        for s in self.sent_log.range(first..) {
            if !s.lost || s.rtx_out {
                continue;
            }
            let mut pos = s.start.max(self.snd_una);
            while let Some((_, e)) = self.scoreboard.containing(pos) {
                pos = e;
            }
            if pos < s.end {
                return Some((pos, s.end));
            }
        }
        None
    }

    /// Pipe with RACK's marks (Linux `tcp_packets_in_flight`: sent − SACKed − lost +
    /// retransmitted): an unSACKed byte counts once unless deemed lost, and once more while a
    /// retransmission of it is in flight.
    fn rack_pipe(&self) -> u64 {
        let first = self.sent_log.partition_point(|s| s.end <= self.snd_una);
        self.sent_log
            .range(first..)
            .map(|s| {
                let from = s.start.max(self.snd_una);
                let unsacked = (s.end - from) - self.scoreboard.covered(from, s.end);
                unsacked * (u64::from(!s.lost) + u64::from(s.rtx_out))
            })
            .sum()
    }

    /// The reordering timer fired (RFC 8985 §6.3): detect again, enter recovery on a loss,
    /// and fall back to the retransmission timer if nothing is left to wait for.
    fn on_rack_timer(&mut self, now: Instant) {
        if !self.rack_on() || self.snd_una >= self.snd_max {
            return;
        }
        if self.rack_detect_loss_and_arm_timer(now) && self.recovery.is_none() {
            self.rack_start_recovery(now, false);
        }
        if !self.xmit_timer_armed() {
            self.set_timer(Timer::Rto, now + self.rtt.rto());
        }
    }

    /// RFC 8985 §7.2: arm the probe timer for PTO = 2·SRTT (+ WCDelAckT with one segment in
    /// flight; 1 s before an RTT sample), no later than the retransmission timer would fire,
    /// when data is in flight, nothing is SACKed, no recovery runs and no probe is out.
    fn schedule_pto(&mut self, now: Instant) {
        if !self.tlp_on()
            || self.recovery.is_some()
            || self.in_rto_recovery()
            || self.tlp.end_seq.is_some()
            || !self.scoreboard.is_empty()
            || self.snd_una >= self.snd_max.min(self.data_end())
            || self.timers[Timer::Reo as usize].is_some()
            || self.timers[Timer::Persist as usize].is_some()
        {
            return;
        }
        let pto = match self.rtt.srtt() {
            Some(srtt) if self.snd_max - self.snd_una <= self.smss => {
                srtt.saturating_mul(2) + TLP_MAX_ACK_DELAY
            }
            Some(srtt) => srtt.saturating_mul(2),
            None => Duration::from_secs(1),
        };
        let rto_at = self.timers[Timer::Rto as usize].unwrap_or(now + self.rtt.rto());
        self.set_timer(Timer::Pto, (now + pto).min(rto_at));
    }

    /// The probe timer fired: the probe goes out on the next poll (RFC 8985 §7.3), unless
    /// recovery began meanwhile.
    fn on_pto(&mut self, now: Instant) {
        if self.recovery.is_some() || self.tlp.end_seq.is_some() || self.snd_una >= self.snd_max {
            if self.snd_una < self.snd_max {
                self.set_timer(Timer::Rto, now + self.rtt.rto());
            }
            return;
        }
        self.tlp.pending = true;
    }

    /// RFC 8985 §7.3: one new segment if the receiver's window lets it out (cwnd does not
    /// matter), else the last segment sent again; TLP.end_seq = SND.NXT; then the
    /// retransmission timer, not the probe timer.
    fn send_probe(&mut self, now: Instant) -> Option<TcpRepr> {
        let new_len = self.smss.min(self.data_end().saturating_sub(self.snd_max));
        // Set before sending: a probe does not restart the probe timer.
        self.tlp.end_seq = Some(self.snd_max);
        let seg = if new_len > 0
            && self.snd_nxt == self.snd_max
            && self.snd_max + new_len <= self.snd_una + self.snd_wnd
        {
            self.tlp.is_retrans = false;
            let off = self.snd_max;
            self.send_range(now, off, new_len, false)
        } else if let Some(last) = self
            .sent_log
            .back()
            .copied()
            .filter(|s| s.end > self.snd_una)
        {
            self.tlp.is_retrans = true;
            let off = last.start.max(self.snd_una);
            self.send_range(now, off, last.end - off, true)
        } else {
            self.tlp.end_seq = None;
            self.set_timer(Timer::Rto, now + self.rtt.rto());
            return None;
        };
        self.tlp.end_seq = Some(self.snd_max);
        self.stats.tlp_probes += 1;
        self.set_timer(Timer::Rto, now + self.rtt.rto());
        Some(seg)
    }

    /// RFC 8985 §7.4 (Linux `tcp_process_tlp_ack`): an ACK at or past TLP.end_seq ends the
    /// episode; if the probe was a retransmission and the ACK goes beyond it, the probe
    /// repaired a loss: reduce the window once. A pure duplicate ACK at it means both copies
    /// arrived (no D-SACK here): no loss.
    /// `flight` is FlightSize before this ACK, when the loss was repaired (RFC 5681 eq. 4).
    fn tlp_on_ack(&mut self, now: Instant, ack_off: u64, pure_dup: bool, flight: u64) {
        let Some(end) = self.tlp.end_seq else {
            return;
        };
        if ack_off < end {
            return;
        }
        if !self.tlp.is_retrans {
            self.tlp.end_seq = None;
        } else if ack_off > end {
            self.tlp.end_seq = None;
            self.stats.tlp_recoveries += 1;
            self.cc.on_congestion(now, flight, &mut self.win);
            if let Some(h) = self.hystart_pp.as_mut() {
                h.on_loss();
            }
            self.tlp.cwr_until = self.snd_max;
        } else if pure_dup {
            self.tlp.end_seq = None;
        }
    }

    fn seq_of(&self, off: u64) -> SeqNumber {
        self.iss + off as u32
    }

    fn snd_offset(&self, seq: SeqNumber) -> i64 {
        self.snd_una as i64 + (seq - self.seq_of(self.snd_una))
    }

    fn poll_data(&mut self, now: Instant) -> Option<TcpRepr> {
        if self.bbr_on() && now < self.pace_next {
            // Paced (Linux `tcp_pacing_check`): data waits for its departure time; ACKs and
            // the FIN below do not.
            self.set_timer(Timer::Pace, self.pace_next);
            return None;
        }
        if let Some(off) = self.rtx_now.take() {
            if off < self.snd_max.min(self.data_end()) && off >= self.snd_una {
                return Some(self.send_range(now, off, self.smss, true));
            }
        }
        if std::mem::take(&mut self.probe_pending) && self.snd_una < self.data_end() {
            let off = self.snd_una;
            let seg = self.segment(now, off, 1);
            self.stats.bytes_sent += 1;
            self.snd_nxt = off + 1;
            self.snd_max = self.snd_max.max(off + 1);
            self.probing = true;
            return Some(seg);
        }
        if std::mem::take(&mut self.tlp.pending) {
            if let Some(seg) = self.send_probe(now) {
                return Some(seg);
            }
        }
        if self.in_sack_recovery() {
            return self.poll_sack_recovery(now);
        }
        if let Some(seg) = self.poll_loss_state_rack(now) {
            return Some(seg);
        }
        let data_end = self.data_end();
        if self.snd_nxt >= data_end {
            self.cwnd_limited = false;
            self.check_app_limited();
            return None;
        }
        // Skip what the peer already SACKed when resending after an RTO.
        if self.snd_nxt < self.snd_max {
            if let Some((s, e)) = self.scoreboard.containing(self.snd_nxt) {
                debug_assert!(s <= self.snd_nxt);
                self.snd_nxt = e.min(self.snd_max);
                if self.snd_nxt >= data_end {
                    return None;
                }
            }
        }
        let wnd = (self.win.cwnd + self.limited_transmit_allowance()).min(self.snd_wnd);
        let mut usable = (self.snd_una + wnd).saturating_sub(self.snd_nxt);
        if let Some(f) = self.frto {
            // F-RTO step 2b: up to two new segments whatever is still out.
            let room = (self.snd_una + self.snd_wnd).saturating_sub(self.snd_nxt);
            usable = usable.max(f.new_budget.min(room));
        }
        let want = self.smss.min(data_end - self.snd_nxt);
        // Sender SWS avoidance (RFC 9293 §3.8.6.2.1): a full segment, all remaining data, or half
        // the largest window the peer has offered.
        let len = want.min(usable);
        if len == 0 || (len < want && len < self.max_snd_wnd / 2) {
            if self.snd_wnd < want
                && self.snd_una == self.snd_nxt
                && self.timers[Timer::Persist as usize].is_none()
            {
                self.set_timer(Timer::Persist, now + self.rtt.rto());
            }
            self.cwnd_limited = self.win.cwnd <= self.snd_wnd;
            return None;
        }
        let off = self.snd_nxt;
        let seg = self.send_range(now, off, len, off < self.snd_max);
        let end = off + u64::from(seg.payload_len);
        if let Some(f) = self.frto.as_mut() {
            f.new_budget = f.new_budget.saturating_sub(end - off);
        }
        self.limited_sent += end
            .saturating_sub(self.snd_una + self.win.cwnd)
            .min(end - off);
        Some(seg)
    }

    /// After a timeout, while the go-back-N runs (Linux `TCP_CA_Loss`): a segment the pass has
    /// already resent and RACK marks lost again (its retransmission was lost too) goes out
    /// again when the window has room, as `tcp_xmit_retransmit_queue` resends every lost
    /// segment in that state. Without it the hole waits for the next timeout, since no fast
    /// recovery may start below the timeout's recovery point.
    fn poll_loss_state_rack(&mut self, now: Instant) -> Option<TcpRepr> {
        if !self.rack_on() || !self.in_rto_recovery() {
            return None;
        }
        let (s, e) = self.rack_next_lost()?;
        // In flight as the pass counts it: everything below SND.NXT not SACKed.
        let flight =
            (self.snd_nxt - self.snd_una) - self.scoreboard.covered(self.snd_una, self.snd_nxt);
        if s >= self.snd_nxt || flight + (e - s).min(self.smss) > self.win.cwnd {
            return None;
        }
        Some(self.send_range(now, s, e - s, true))
    }

    /// Limited transmit (RFC 3042 §2): after the first and the second duplicate ACK, one new
    /// segment each beyond cwnd (FlightSize ≤ cwnd + 2·SMSS); an old one only with
    /// `limited_transmit_resends` (ns-2).
    fn limited_transmit_allowance(&self) -> u64 {
        let new_data = self.snd_nxt == self.snd_max || self.config.limited_transmit_resends;
        if self.config.limited_transmit && self.recovery.is_none() && new_data {
            u64::from(self.dupacks.min(2)) * self.smss
        } else {
            0
        }
    }

    /// Send up to `max` bytes (at most one segment) starting at `off`, stopping before SACKed
    /// data. `max` is what the window allows: sender SWS avoidance may let a segment shorter
    /// than SMSS out (half the largest window), and it must then stay inside the window.
    fn send_range(&mut self, now: Instant, off: u64, max: u64, retransmission: bool) -> TcpRepr {
        let mut end = (off + max.min(self.smss)).min(self.data_end());
        if let Some((s, _)) = self.scoreboard.next_from(off) {
            if s > off {
                end = end.min(s);
            }
        }
        let len = end - off;
        let seg = self.segment(now, off, len as u32);
        self.stats.bytes_sent += len;
        if let Some(r) = self.recovery.as_mut() {
            r.prr_out += len;
        }
        let tx = if self.bbr_on() {
            self.on_data_sent(now, len)
        } else {
            TxState::default()
        };
        if self.keeps_log() {
            self.log_sent(now, off, end, tx);
        }
        if retransmission {
            self.stats.retransmissions += 1;
            self.stats.bytes_retransmitted += len;
            // Karn: a retransmitted range never yields an RTT sample.
            if self.rtt_timing.is_some_and(|(o, _)| o > off) {
                self.rtt_timing = None;
            }
            // Linux leaves a pending RACK reordering timer alone here
            // (`tcp_xmit_retransmit_queue`).
            if self.config.rto_rearm == RtoRearm::Head
                && off == self.snd_una
                && self.timers[Timer::Reo as usize].is_none()
            {
                self.set_timer(Timer::Rto, now + self.rtt.rto());
            }
        } else if self.rtt_timing.is_none() && !self.ts_ok {
            self.rtt_timing = Some((end, now));
        }
        if off == self.snd_nxt || end > self.snd_nxt {
            self.snd_nxt = self.snd_nxt.max(end);
        }
        self.snd_max = self.snd_max.max(end);
        if !self.xmit_timer_armed() {
            self.set_timer(Timer::Rto, now + self.rtt.rto());
        }
        if !retransmission {
            // RFC 8985 §7.2: (re)start the probe timer after sending new data.
            self.schedule_pto(now);
        }
        seg
    }

    /// BBR: a data segment of `len` bytes leaves at `now`. Its delivery-rate record, the
    /// restart from idle (`CA_EVENT_TX_START`), and the next departure time: `len` at the
    /// pacing rate after this one, less up to half of it when the sender was behind schedule
    /// (Linux `tcp_update_skb_after_send`); the first ten segments go unpaced.
    fn on_data_sent(&mut self, now: Instant, len: u64) -> TxState {
        let idle = self.snd_una >= self.snd_max;
        if idle && self.rate.is_app_limited() {
            let srtt = self.rtt.srtt();
            if let Some(b) = self.cc.bbr_mut() {
                b.on_tx_start(now, srtt, &mut self.win);
            }
        }
        let tx = self.rate.on_sent(now, idle);
        self.data_segs_out += 1;
        let prior = self.pace_next;
        self.pace_next = prior.max(now);
        let rate = self.cc.bbr().and_then(|b| b.pacing_rate()).unwrap_or(0);
        if self.data_segs_out >= UNPACED_SEGMENTS && rate > 0 {
            let len_ns = (u128::from(len) * 1_000_000_000 / u128::from(rate)) as u64;
            let credit = self.pace_next.saturating_since(prior).as_nanos();
            self.pace_next += Duration(len_ns - credit.min(len_ns / 2));
        }
        tx
    }

    /// Nothing is left to send: if the window has room and no loss waits to be resent, the
    /// delivery rate samples that follow describe the application, not the path
    /// (`tcp_rate_check_app_limited`).
    fn check_app_limited(&mut self) {
        if !self.bbr_on() || self.recovery.is_some() || self.in_rto_recovery() {
            return;
        }
        let in_flight = self.bbr_in_flight();
        if in_flight < self.win.cwnd {
            self.rate.on_app_limited(in_flight);
        }
    }

    /// Bytes in flight as Linux's `tcp_packets_in_flight` counts them: outside any recovery
    /// and with nothing SACKed, everything unacknowledged; else RFC 6675's pipe.
    fn bbr_in_flight(&self) -> u64 {
        if self.scoreboard.is_empty() && self.recovery.is_none() && !self.in_rto_recovery() {
            self.snd_max - self.snd_una
        } else {
            self.pipe()
        }
    }

    /// BBR's turn at the end of an ACK (`tcp_rate_gen` then `bbr_main`).
    fn bbr_on_ack(&mut self, now: Instant, prior_in_flight: u64) {
        let rs = self
            .rate
            .generate(now, self.ack_losses, self.ack_rtt, prior_in_flight);
        let state = if self.recovery.is_some() {
            CaState::Recovery
        } else if self.in_rto_recovery() {
            CaState::Loss
        } else {
            CaState::Open
        };
        let in_flight = self.bbr_in_flight();
        let a = BbrAck {
            rs,
            state,
            in_flight,
            delivered: self.rate.delivered(),
            delivered_time: self.rate.delivered_time().unwrap_or(now),
            lost: self.rate.lost(),
            srtt: self.rtt.srtt(),
            edt: self.pace_next.max(now),
            mss: self.smss,
        };
        if let Some(b) = self.cc.bbr_mut() {
            if b.on_ack(now, &a, &mut self.win) {
                self.rate.on_app_limited(in_flight);
            }
        }
    }

    /// BBR: the segments the SACK `blocks` (now in the scoreboard) cover whole for the first
    /// time are delivered (`tcp_sacktag_one` → `tcp_rate_skb_delivered`).
    fn rate_sacked(&mut self, blocks: &[(u64, u64)]) {
        for &(l, r) in blocks {
            let first = self.sent_log.partition_point(|s| s.end <= l);
            for i in first..self.sent_log.len() {
                let s = self.sent_log[i];
                if s.start >= r {
                    break;
                }
                if s.tx.delivered_time.is_none()
                    || self.scoreboard.covered(s.start, s.end) < s.end - s.start
                {
                    continue;
                }
                let seg = &mut self.sent_log[i];
                self.rate
                    .on_delivered(&mut seg.tx, s.xmit, s.end, s.end - s.start, true);
                if !s.retransmitted {
                    self.rate.on_clean_delivery(s.sent);
                }
            }
        }
    }

    /// `sack_rtt`: remember when `off..end` was first sent, or that it has been sent again;
    /// `tx` is the transmission's delivery-rate record.
    fn log_sent(&mut self, now: Instant, off: u64, end: u64, tx: TxState) {
        let first = self.sent_log.partition_point(|s| s.end <= off);
        for s in self.sent_log.range_mut(first..) {
            if s.start >= end {
                break;
            }
            s.retransmitted = true;
            s.xmit = now;
            s.rtx_out = true;
            s.tx = tx;
        }
        let logged_to = self.sent_log.back().map_or(0, |s| s.end);
        if end > logged_to.max(off) {
            let start = logged_to.max(off);
            self.sent_log.push_back(SentSegment {
                start,
                end,
                sent: now,
                // Part of a segment sent before (go-back-N over a shorter old segment).
                retransmitted: start > off,
                xmit: now,
                lost: false,
                rtx_out: false,
                tx,
            });
        }
    }

    /// Linux `tcp_sacktag_one` (`first_sackt`): the send time of the lowest newly SACKed
    /// segment never retransmitted, among the ACK's blocks `sack` (offsets), before they are
    /// added to the scoreboard.
    fn first_sackt(&self, blocks: &[(u64, u64)]) -> Option<(u64, Instant)> {
        let mut best: Option<(u64, Instant)> = None;
        for &(l, r) in blocks {
            let mut pos = l;
            while pos < r {
                if let Some((_, e)) = self.scoreboard.containing(pos) {
                    pos = e;
                    continue;
                }
                let i = self.sent_log.partition_point(|s| s.end <= pos);
                let Some(s) = self.sent_log.get(i) else {
                    break;
                };
                if s.start >= r {
                    break;
                }
                if s.start > pos {
                    pos = s.start;
                    continue;
                }
                if !s.retransmitted {
                    if best.is_none_or(|(o, _)| pos < o) {
                        best = Some((pos, s.sent));
                    }
                    break;
                }
                pos = s.end;
            }
        }
        best
    }

    /// SACK recovery as ns-2's Sack1 (`sack_recovery = "ns2"`; RACK keeps its own rules).
    fn ns2_sack_recovery(&self) -> bool {
        self.config.sack_recovery == SackRecovery::Ns2 && self.in_sack_recovery() && !self.rack_on()
    }

    /// ns-2 Sack1's `send_much` in fast recovery: while `pipe_ < int(cwnd_)`, the next hole at
    /// or above HighRxt with SACKed data above it (`GetNextRetran`), else new data within the
    /// receiver's window; each packet sent is one more in `pipe_`.
    fn poll_ns2_sack_recovery(&mut self, now: Instant) -> Option<TcpRepr> {
        let mut rec = self.recovery?;
        if rec.pipe_pkts >= (self.win.cwnd / self.smss) as i64 {
            return None;
        }
        let highest_sack = self.scoreboard.as_slice().last().map(|&(s, _)| s);
        let mut s = rec.high_rxt.max(self.snd_una);
        while let Some((_, e)) = self.scoreboard.containing(s) {
            s = e;
        }
        // (SACKed data lies below snd_max, so a hole below it is below snd_max too.)
        let seg = if highest_sack.is_some_and(|h| s < h) {
            let seg = self.send_range(now, s, self.smss, true);
            rec.high_rxt = s + u64::from(seg.payload_len);
            seg
        } else {
            let data_end = self.data_end();
            let len = self.smss.min(data_end.saturating_sub(self.snd_max));
            if len == 0 || self.snd_max + len > self.snd_una + self.snd_wnd {
                return None;
            }
            self.snd_nxt = self.snd_max;
            let off = self.snd_max;
            self.send_range(now, off, self.smss, false)
        };
        rec.pipe_pkts += 1;
        self.recovery = Some(rec);
        Some(seg)
    }

    /// RFC 6675 §5 step (C): transmit while cwnd − pipe ≥ 1 SMSS, choosing with NextSeg().
    fn poll_sack_recovery(&mut self, now: Instant) -> Option<TcpRepr> {
        if self.ns2_sack_recovery() {
            return self.poll_ns2_sack_recovery(now);
        }
        let pipe = self.pipe();
        if self.win.cwnd < pipe + self.smss {
            return None;
        }
        let rec = self.recovery?;
        // NextSeg (1): the first unSACKed byte above HighRxt that IsLost(); with RACK, the
        // first segment RACK deemed lost and not yet resent.
        let boundary = self.loss_boundary();
        let mut s = rec.high_rxt.max(self.snd_una);
        while s < boundary {
            match self.scoreboard.containing(s) {
                Some((_, e)) => s = e,
                None => break,
            }
        }
        if self.rack_on() {
            if let Some((s, e)) = self.rack_next_lost() {
                let seg = self.send_range(now, s, e - s, true);
                if let Some(r) = self.recovery.as_mut() {
                    r.high_rxt = r.high_rxt.max(s + u64::from(seg.payload_len));
                }
                return Some(seg);
            }
        } else if s < boundary && s < self.snd_max {
            let seg = self.send_range(now, s, self.smss, true);
            let end = s + u64::from(seg.payload_len);
            if let Some(r) = self.recovery.as_mut() {
                r.high_rxt = end;
            }
            return Some(seg);
        }
        // NextSeg (2): new data, if the receiver's window allows.
        let data_end = self.data_end();
        if self.snd_max < data_end {
            let len = self.smss.min(data_end - self.snd_max);
            if self.snd_max + len <= self.snd_una + self.snd_wnd {
                self.snd_nxt = self.snd_max;
                let off = self.snd_max;
                return Some(self.send_range(now, off, self.smss, false));
            }
        }
        if self.rack_on() {
            return None;
        }
        // NextSeg (3): the first unSACKed byte above HighRxt below the highest SACKed one,
        // lost or not (1.a and 1.b without 1.c). HighRxt moves (step C.2), so SetPipe counts
        // it twice until it is SACKed.
        let highest_sacked = self.scoreboard.as_slice().last().map(|&(_, e)| e);
        while let Some((_, e)) = self.scoreboard.containing(s) {
            s = e;
        }
        if self.config.nextseg_rule3 && highest_sacked.is_some_and(|h| s < h) {
            let seg = self.send_range(now, s, self.smss, true);
            if let Some(r) = self.recovery.as_mut() {
                r.high_rxt = s + u64::from(seg.payload_len);
            }
            return Some(seg);
        }
        // NextSeg (4): one rescue per recovery once HighACK > RescueRxt, a segment ending at
        // the highest unSACKed byte; RescueRxt = RecoveryPoint, HighRxt untouched (C.2), so
        // pipe does not count it.
        if self.config.nextseg_rescue && self.snd_una > rec.rescue_rxt {
            let (start, end) = self.rescue_range()?;
            let seg = self.send_range(now, start, end - start, true);
            if let Some(r) = self.recovery.as_mut() {
                r.rescue_rxt = r.recover;
            }
            return Some(seg);
        }
        None
    }

    /// RFC 6675 NextSeg rule 4's segment: up to SMSS of unSACKed data ending just past the
    /// highest outstanding unSACKed byte; `None` when every outstanding byte is SACKed.
    fn rescue_range(&self) -> Option<(u64, u64)> {
        let high = self.snd_max.min(self.data_end());
        let blocks = self.scoreboard.as_slice();
        let end = match blocks.last() {
            Some(&(s, e)) if e >= high => s,
            _ => high,
        };
        if end <= self.snd_una {
            return None;
        }
        let mut start = end.saturating_sub(self.smss).max(self.snd_una);
        for &(_, e) in blocks.iter().filter(|&&(s, _)| s < end) {
            start = start.max(e);
        }
        Some((start, end))
    }

    /// Offset below which every unSACKed byte is deemed lost (RFC 6675 IsLost, byte form: more
    /// than (DupThresh − 1)·SMSS bytes SACKed above it).
    fn loss_boundary(&self) -> u64 {
        let threshold = u64::from(self.config.dupthresh.max(1) - 1) * self.smss;
        let mut above = 0;
        for &(s, e) in self.scoreboard.as_slice().iter().rev() {
            above += e - s;
            if above > threshold {
                return s;
            }
        }
        self.snd_una
    }

    /// RFC 6675 SetPipe(), in O(SACK ranges): bytes not SACKed and not deemed lost, plus every
    /// unSACKed byte already retransmitted (counted twice when it is not deemed lost: §4 (a)
    /// and (b)).
    fn pipe(&self) -> u64 {
        if self.rack_on() {
            return self.rack_pipe();
        }
        let b = self.loss_boundary().max(self.snd_una);
        let unsacked = |a: u64, z: u64| {
            if z > a {
                (z - a) - self.scoreboard.covered(a, z)
            } else {
                0
            }
        };
        let high_rxt = self.recovery.map_or(self.snd_una, |r| r.high_rxt);
        unsacked(b, self.snd_max) + unsacked(self.snd_una, high_rxt)
    }

    fn poll_fin(&mut self, now: Instant) -> Option<TcpRepr> {
        let fin_off = self.data_end();
        if !self.fin_requested || self.snd_nxt != fin_off {
            return None;
        }
        let mut seg = self.segment(now, fin_off, 0);
        seg.flags.insert(TcpFlags::FIN);
        self.snd_nxt = fin_off + 1;
        self.snd_max = self.snd_max.max(fin_off + 1);
        self.state = match self.state {
            State::Established => State::FinWait1,
            State::CloseWait => State::LastAck,
            s => s,
        };
        if !self.xmit_timer_armed() {
            self.set_timer(Timer::Rto, now + self.rtt.rto());
        }
        Some(seg)
    }

    fn poll_ack(&mut self, now: Instant) -> Option<TcpRepr> {
        if !self.ack_now {
            return None;
        }
        self.stats.acks_sent += 1;
        // A pure ACK carries the highest sequence number sent, not SND.NXT, which goes back
        // to SND.UNA after a timeout: the peer's acceptability check (RFC 9293 §3.10.7.4)
        // would find the older number below its RCV.NXT, drop the ACK and ignore what it
        // acknowledges. As BSD's tcp_output ("for ACK only packets ... use snd_max") and
        // Linux's `tcp_acceptable_seq` (whose snd_nxt never goes back), capped as Linux caps
        // it at the right edge of the peer's window, which a window probe's byte passes.
        let off = self.snd_max.min(self.snd_una + self.snd_wnd);
        Some(self.segment(now, off, 0))
    }

    /// Build a segment at `off` carrying `len` bytes, with the current ACK, window and options;
    /// sending it acknowledges everything received so far.
    fn segment(&mut self, now: Instant, off: u64, len: u32) -> TcpRepr {
        let window = self.advertise();
        let mut seg = TcpRepr {
            src_port: self.local.1,
            dst_port: self.remote.1,
            seq: self.seq_of(off),
            ack: Some(self.irs + self.rcv_nxt as u32),
            flags: TcpFlags::default(),
            window,
            payload_len: len,
            ..TcpRepr::default()
        };
        if len > 0 {
            seg.flags.insert(TcpFlags::PSH);
        }
        if self.ts_ok {
            seg.timestamp = Some((ts_clock(now).wrapping_add(self.ts_offset), self.ts_recent));
        }
        if self.sack_ok && !self.ooo.is_empty() {
            let max_blocks = if self.ts_ok { 3 } else { 4 };
            for (l, r) in self.sack_blocks(max_blocks) {
                seg.sack.push(self.irs + l as u32, self.irs + r as u32);
            }
        }
        self.last_ack_sent = self.rcv_nxt;
        self.ack_now = false;
        self.unacked_segments = 0;
        self.clear_timer(Timer::DelayedAck);
        seg
    }

    /// Use the ACK field of an acceptable segment. Returns false when the ACK makes the whole
    /// segment unacceptable (it is then dropped, its data unused).
    ///
    /// RFC 5961 §5.2: the ACK is acceptable only if SND.UNA − MAX.SND.WND ≤ SEG.ACK ≤ SND.NXT
    /// (SND.NXT here is `snd_max`: ours goes back in go-back-N); outside that range "all
    /// incoming segments ... MUST be discarded and an ACK sent back", a challenge ACK. As
    /// Linux's `tcp_ack`, MAX.SND.WND is capped by what has been acknowledged so far, so that
    /// nothing below our first data byte is taken ("do not accept ACK for bytes we never
    /// sent"), and both edges draw a challenge ACK (`TCP_TOO_OLD_ACK`, `TCP_ACK_UNSENT_DATA`;
    /// current Linux sends one at both, kernels before a 2026 fix dropped an ACK of unsent
    /// data silently).
    /// Not modelled: Linux's rate limit on challenge ACKs. An ACK below SND.UNA inside the
    /// range is a duplicate that "can be ignored" (RFC 9293): the segment's data still counts.
    fn process_ack(&mut self, now: Instant, seg: &TcpRepr, ack: SeqNumber) -> bool {
        let ack_off = self.snd_offset(ack);
        let oldest = self.snd_una.saturating_sub(self.max_snd_wnd).max(1);
        if ack_off > self.snd_max as i64 || ack_off < oldest as i64 {
            self.stats.challenge_acks += 1;
            self.ack_now = true;
            return false;
        }
        if ack_off < self.snd_una as i64 {
            return true;
        }
        let ack_off = ack_off as u64;
        let bbr = self.bbr_on();
        let prior_in_flight = if bbr { self.bbr_in_flight() } else { 0 };
        self.ack_rtt = None;
        self.ack_losses = 0;
        let una_before = self.snd_una;
        let recovery_before = self.recovery.is_some();
        let sacked_before = self.scoreboard.total();
        let boundary_before = self.loss_boundary();
        let frto_known_before = self.frto.map(|f| self.frto_known(&f));
        let mut new_sack = false;
        let mut dup = false;
        let mut sack_sent = None;
        if self.sack_ok {
            let mut blocks = [(0, 0); 4];
            let mut n = 0;
            for &(l, r) in seg.sack.as_slice() {
                let (l, r) = (self.snd_offset(l), self.snd_offset(r));
                if l < r && l >= ack_off as i64 && r <= self.snd_max as i64 && n < blocks.len() {
                    blocks[n] = (l as u64, r as u64);
                    n += 1;
                }
            }
            if self.config.sack_rtt {
                sack_sent = self.first_sackt(&blocks[..n]).map(|(_, t)| t);
            }
            if self.rack_on() {
                self.rack_update(now, ack_off, &mut blocks[..n]);
            }
            for &(l, r) in &blocks[..n] {
                new_sack |= self.scoreboard.insert(l, r) > 0;
            }
            if bbr {
                self.rate_sacked(&blocks[..n]);
            }
        }
        let old_wnd = self.snd_wnd;
        let wnd = u64::from(seg.window) << self.snd_wscale;
        // Window update rule (RFC 9293 §3.10.7.4): only from newer segments.
        if self.snd_wl1 < seg.seq || (self.snd_wl1 == seg.seq && self.snd_wl2 <= ack_off) {
            self.snd_wnd = wnd;
            self.snd_wl1 = seg.seq;
            self.snd_wl2 = ack_off;
            self.max_snd_wnd = self.max_snd_wnd.max(wnd);
            if wnd > 0 {
                self.clear_timer(Timer::Persist);
                if std::mem::take(&mut self.probing)
                    && ack_off == self.snd_una
                    && self.snd_nxt == self.snd_una + 1
                {
                    // The probe byte was dropped by a closed window: send it again as data.
                    self.snd_nxt = self.snd_una;
                }
            }
        }

        if ack_off > self.snd_una {
            self.on_new_ack(now, seg, ack_off, sack_sent);
        } else {
            // `sack_rtt` (Linux `tcp_ack_update_rtt`: `seq_rtt_us < 0` takes `sack_rtt_us`).
            if let Some(t) = sack_sent {
                let r = now.saturating_since(t);
                self.rtt
                    .on_sample_in_round(now, r, ack_off.max(self.snd_una), self.snd_max);
                self.rtt_sample_hooks(now, r);
            }
            if seg.payload_len == 0
                && !seg.flags.contains(TcpFlags::SYN)
                && !seg.flags.contains(TcpFlags::FIN)
                && self.snd_max > self.snd_una
                && (wnd == old_wnd || new_sack)
            {
                dup = true;
                self.on_dup_ack(now, new_sack);
            }
        }
        if let Some(known_before) = frto_known_before {
            self.frto_on_ack(una_before, new_sack, dup, known_before);
        }
        if self.tlp.end_seq.is_some() {
            // Linux `tcp_process_tlp_ack`'s "pure dupack": no data, no window change, nothing
            // newly acknowledged or SACKed.
            let pure_dup =
                ack_off == una_before && !new_sack && seg.payload_len == 0 && wnd == old_wnd;
            let base = match self.config.fr_ssthresh {
                FrSsthresh::Flight => self.snd_max - una_before,
                FrSsthresh::Window => self.win.cwnd,
            };
            self.tlp_on_ack(now, ack_off, pure_dup, base);
        }
        let mut rack_lost = false;
        if self.rack_on() {
            rack_lost = self.rack_detect_loss_and_arm_timer(now);
            // Segments deemed lost and not resent also start a recovery once the last one
            // ended (Linux `tcp_time_to_recover`: `lost_out`); with `lost_out_reentry`, resent
            // ones too.
            if self.recovery.is_none() && (rack_lost || self.rack.deferred || recovery_before) {
                self.rack_start_recovery(now, recovery_before);
            }
        }
        if self.snd_una > una_before {
            // RFC 8985 §7.2: (re)start the probe timer on an ACK of new data.
            self.schedule_pto(now);
        }
        if bbr && !self.rack_on() && self.uses_sack() {
            // RFC 6675 IsLost: the unSACKed bytes the loss boundary passed.
            let from = boundary_before.max(self.snd_una);
            let to = self.loss_boundary();
            if to > from {
                let lost = (to - from) - self.scoreboard.covered(from, to);
                self.ack_losses += lost;
                self.rate.on_lost(lost);
            }
        }
        if bbr {
            self.bbr_on_ack(now, prior_in_flight);
        } else if self.config.prr && self.in_sack_recovery() {
            // DeliveredData (RFC 6937 §3): the change in SND.UNA plus the change in SACKed bytes.
            let delivered =
                (self.snd_una - una_before + self.scoreboard.total()).saturating_sub(sacked_before);
            let boundary = self.loss_boundary();
            let newly_lost = if self.rack_on() {
                rack_lost
            } else {
                boundary > boundary_before.max(self.snd_una)
                    && self
                        .scoreboard
                        .covered(boundary_before.max(self.snd_una), boundary)
                        < boundary - boundary_before.max(self.snd_una)
            };
            self.prr_on_ack(delivered, self.snd_una > una_before && !newly_lost);
        }
        true
    }

    /// PRR (RFC 6937 §3.1) as Linux 6.1's `tcp_cwnd_reduction`, in whole segments as Linux
    /// counts: while pipe > ssthresh, sndcnt = ⌈prr_delivered·ssthresh/RecoverFS⌉ − prr_out;
    /// then PRR-SSRB, min(ssthresh − pipe, max(prr_delivered − prr_out, DeliveredData) [+ 1
    /// SMSS when the ACK advances SND.UNA and marks nothing newly lost]); at least one segment
    /// before anything is sent (the fast retransmit). cwnd = pipe + sndcnt.
    fn prr_on_ack(&mut self, delivered: u64, safe_ack: bool) {
        let Some(mut rec) = self.recovery else {
            return;
        };
        if delivered == 0 {
            return;
        }
        let mss = self.smss;
        // The fast retransmission not yet sent is not in flight yet (Linux counts
        // `retrans_out` when it goes out); RACK's pipe already leaves lost segments out.
        let pending = if rec.prr_out == 0 && !self.rack_on() {
            (rec.high_rxt - self.snd_una) - self.scoreboard.covered(self.snd_una, rec.high_rxt)
        } else {
            0
        };
        let pipe = self.pipe() - pending;
        let ssthresh = self.win.ssthresh;
        rec.prr_delivered += delivered;
        let mut sndcnt = if pipe > ssthresh {
            let target = (u128::from(rec.prr_delivered) * u128::from(ssthresh))
                .div_ceil(u128::from(rec.recover_fs.max(1)) * u128::from(mss));
            (target as u64 * mss).saturating_sub(rec.prr_out)
        } else {
            let mut limit = rec.prr_delivered.saturating_sub(rec.prr_out).max(delivered);
            if safe_ack {
                limit += mss;
            }
            limit.min(ssthresh - pipe)
        };
        if rec.prr_out == 0 {
            sndcnt = sndcnt.max(mss);
        }
        self.win.cwnd = pipe + sndcnt;
        self.recovery = Some(rec);
    }

    /// An RTT sample `r` was taken: delay-based slow-start exits see it.
    fn rtt_sample_hooks(&mut self, now: Instant, r: Duration) {
        self.ack_rtt = Some(r);
        self.rate.on_rtt(r);
        let round = Round {
            snd_una: self.snd_una,
            snd_nxt: self.snd_max,
            srtt: self.rtt.srtt(),
        };
        self.cc.on_rtt_sample(now, r, round, &mut self.win);
    }

    fn on_new_ack(
        &mut self,
        now: Instant,
        seg: &TcpRepr,
        ack_off: u64,
        sack_sent: Option<Instant>,
    ) {
        let flight_before = self.snd_max - self.snd_una;
        let data_before = self.bytes_acked();
        // RTT: timestamps (RFC 7323 §4) or one timed segment at a time (Karn), else (with
        // `sack_rtt`) the first newly SACKed segment.
        let mut sample = None;
        if self.ts_ok {
            if let Some((_, tsecr)) = seg.timestamp {
                let ms = ts_clock(now)
                    .wrapping_add(self.ts_offset)
                    .wrapping_sub(tsecr);
                if ms < 1 << 30 {
                    sample = Some(Duration::from_millis(u64::from(ms)));
                }
            }
        } else if let Some((end, t)) = self.rtt_timing {
            if ack_off >= end {
                sample = Some(now - t);
                self.rtt_timing = None;
            }
        }
        if sample.is_none() {
            sample = sack_sent.map(|t| now.saturating_since(t));
        }
        if let Some(r) = sample {
            self.rtt
                .on_sample_in_round(now, r, ack_off.max(self.snd_una), self.snd_max);
        }
        self.snd_una = ack_off;
        while let Some(s) = self.sent_log.front_mut() {
            if s.end > ack_off {
                break;
            }
            if s.tx.delivered_time.is_some() {
                // Not SACKed before: delivered now (`tcp_clean_rtx_queue`).
                let (xmit, end, len) = (s.xmit, s.end, s.end - s.start);
                let clean = (!s.retransmitted).then_some(s.sent);
                self.rate.on_delivered(&mut s.tx, xmit, end, len, false);
                if let Some(sent) = clean {
                    self.rate.on_clean_delivery(sent);
                }
            }
            self.sent_log.pop_front();
        }
        if let Some(r) = sample {
            self.rtt_sample_hooks(now, r);
        }
        self.snd_nxt = self.snd_nxt.max(ack_off);
        self.scoreboard.remove_below(ack_off);
        if let Some(store) = self.bytes.as_deref_mut() {
            store.send.ack_to(ack_off);
        }
        let acked = self.bytes_acked() - data_before;
        self.stats.bytes_acked += acked;
        self.dupacks = 0;
        self.limited_sent = 0;

        match self.recovery {
            Some(rec) if ack_off >= rec.recover || self.config.recovery == Recovery::Reno => {
                // Full ACK (or any new ACK for Reno): leave recovery with cwnd = ssthresh
                // (RFC 6582 §3.2 step 3, option 1: min(ssthresh, max(FlightSize, SMSS) + SMSS)).
                let flight = self.snd_max - self.snd_una;
                if !self.bbr_on() {
                    self.win.cwnd = match self.config.recovery {
                        Recovery::NewReno
                            if !self.in_sack_recovery()
                                && self.config.full_ack_cwnd == FullAckCwnd::Flight =>
                        {
                            self.win.ssthresh.min(flight.max(self.smss) + self.smss)
                        }
                        _ => self.win.ssthresh,
                    };
                }
                if self.config.full_ack_cwnd == FullAckCwnd::SsthreshAndGrow
                    && !self.in_sack_recovery()
                {
                    self.cc.on_ack(now, acked, &mut self.win, self.rtt.srtt());
                }
                self.last_recover = rec.recover;
                self.recover_by_rto = false;
                self.stats.recovery_ns += now.saturating_since(rec.since).as_nanos();
                self.recovery = None;
            }
            Some(mut rec) => {
                if !self.in_sack_recovery() {
                    // NewReno partial ACK (RFC 6582 §3.2 step 5): retransmit the next hole,
                    // deflate by the amount acknowledged, add back one SMSS. Which partial
                    // ACKs restart the timer is `partial_ack_timer` (RFC 6582 §4): on a GEO
                    // path the Impatient variant's single restart races the RTO against the
                    // third hole's repair.
                    self.rtx_now = Some(self.snd_una);
                    if !self.bbr_on() {
                        self.win.cwnd = self.win.cwnd.saturating_sub(acked) + self.smss;
                    }
                    rec.partial_acks += 1;
                }
                rec.high_rxt = rec.high_rxt.max(self.snd_una);
                if self.ns2_sack_recovery() {
                    // Sack1 with `partial_ack_` 0: `--pipe_` for the ACK and once more for
                    // the partial ACK.
                    rec.pipe_pkts -= 2;
                }
                self.recovery = Some(rec);
            }
            None if self.bbr_on() => {}
            None => {
                let growing = if self.win.in_slow_start() {
                    flight_before * 2 >= self.win.cwnd
                } else {
                    flight_before + 3 * self.smss >= self.win.cwnd || self.cwnd_limited
                };
                let mut css = false;
                if let Some(h) = self.hystart_pp.as_mut() {
                    h.on_ack(sample, self.snd_una, self.snd_max, &mut self.win);
                    css = h.in_css();
                }
                if growing && acked > 0 {
                    if css && self.win.in_slow_start() {
                        // RFC 9406 §4.2: cwnd += min(N, L·SMSS) / CSS_GROWTH_DIVISOR.
                        let n = acked.min(self.win.abc_limit.max(self.smss));
                        self.win.cwnd += n / CSS_GROWTH_DIVISOR;
                    } else {
                        self.cc.on_ack(now, acked, &mut self.win, self.rtt.srtt());
                    }
                }
            }
        }

        // FIN acknowledged?
        if self.fin_requested && self.snd_una >= self.snd_end() {
            self.state = match self.state {
                State::FinWait1 => State::FinWait2,
                State::Closing => State::TimeWait,
                State::LastAck => State::Closed,
                s => s,
            };
        }
        // RFC 6298 §5.2/5.3 (the Impatient NewReno keeps the timer after its first partial ACK).
        let impatient = self.config.partial_ack_timer == PartialAckTimer::First
            && self.recovery.is_some_and(|r| r.partial_acks > 1);
        if self.snd_una >= self.snd_max {
            self.clear_xmit_timers();
        } else if !impatient {
            self.set_timer(Timer::Rto, now + self.rtt.rto());
        }
    }

    fn on_dup_ack(&mut self, now: Instant, new_sack: bool) {
        self.stats.dup_acks += 1;
        self.dupacks += 1;
        if self.recovery.is_some() {
            if self.ns2_sack_recovery() {
                // Sack1: every ACK in fast recovery is one packet out of the pipe.
                if let Some(rec) = self.recovery.as_mut() {
                    rec.pipe_pkts -= 1;
                }
            } else if !self.in_sack_recovery() && !self.bbr_on() {
                // Fast recovery: each further duplicate means a segment left the network.
                self.win.cwnd += self.smss;
            }
            return;
        }
        if self.rack_on() {
            // RACK replaces the DupThresh rule (RFC 8985 §6; Linux `tcp_time_to_recover`
            // counts duplicates only `!tcp_is_rack`).
            return;
        }
        let sack_says_lost = self.config.sack_loss_entry
            && self.uses_sack()
            && new_sack
            && self.loss_boundary() > self.snd_una;
        if self.dupacks < self.config.dupthresh && !sack_says_lost {
            return;
        }
        self.enter_fast_recovery(now);
    }

    /// What a fast retransmit reduces from (`fr_ssthresh`): FlightSize less what limited
    /// transmit sent (RFC 5681 eq. 4 and §3.2 step 2), or cwnd (Linux `tcp_reno_ssthresh`).
    fn ssthresh_base(&self) -> u64 {
        match self.config.fr_ssthresh {
            FrSsthresh::Flight => (self.snd_max - self.snd_una).saturating_sub(self.limited_sent),
            FrSsthresh::Window => self.win.cwnd,
        }
    }

    /// Fast retransmit and enter fast recovery (RFC 5681 §3.2, RFC 6582, RFC 6675 §5), unless
    /// the losses predate the last recovery.
    fn enter_fast_recovery(&mut self, now: Instant) -> bool {
        // No new recovery for losses from before the last one (RFC 6582 §3.2 step 1), nor after
        // an RTO until the cumulative ACK passes what was outstanding then (RFC 6675 §5.1 sets
        // RecoveryPoint = HighData on a timeout): otherwise the SACKs of the go-back-N round
        // start a fast recovery that halves a one-segment window to 2·SMSS and then holds it
        // there until every old hole is repaired.
        // `last_recover` is one past the last byte then sent, so an ACK of exactly it already
        // "covers more than recover" in RFC 6582's terms.
        // ns-2's Sack1 clears `recover_` when a fast recovery ends, so its inclusive check
        // holds only after a timeout.
        let inclusive = self.config.recover_inclusive && (!self.uses_sack() || self.recover_by_rto);
        let below_recover =
            self.snd_una < self.last_recover || (inclusive && self.snd_una == self.last_recover);
        if (self.config.recovery != Recovery::Reno || self.config.reno_recover_check)
            && below_recover
            && self.last_recover > 0
        {
            return false;
        }
        self.stats.fast_retransmits += 1;
        let flight = self.ssthresh_base();
        // A tail loss probe's repair already reduced the window for losses up to
        // `cwr_until`: once per episode (Linux enters recovery from CWR without a new
        // `tcp_init_cwnd_reduction`).
        if self.snd_una >= self.tlp.cwr_until {
            self.cc.on_congestion(now, flight, &mut self.win);
        }
        self.tlp.end_seq = None;
        if let Some(h) = self.hystart_pp.as_mut() {
            h.on_loss();
        }
        let first_end = (self.snd_una + self.smss).min(self.data_end());
        self.recovery = Some(FastRecovery {
            recover: self.snd_max,
            high_rxt: first_end,
            rescue_rxt: first_end,
            since: now,
            partial_acks: 0,
            prr_delivered: 0,
            prr_out: 0,
            recover_fs: self.snd_max - self.snd_una,
            // Sack1's `dupack_action`: `maxseq_ − highest_ack_ − numdupacks_`.
            pipe_pkts: ((self.snd_max - self.snd_una) / self.smss) as i64
                - i64::from(self.config.dupthresh),
        });
        if self.bbr_on() {
            if !self.uses_sack() {
                // Linux `tcp_mark_head_lost` without SACK: the head segment.
                self.ack_losses += self.smss;
                self.rate.on_lost(self.smss);
            }
        } else if !self.in_sack_recovery() {
            self.win.cwnd = self.win.ssthresh + 3 * self.smss;
        }
        self.rtx_now = Some(self.snd_una);
        if self.rack_on() {
            self.rtx_now = self.rack_next_lost().map(|(s, _)| s);
            if self.timers[Timer::Pto as usize].is_some() {
                // One transmission timer (RFC 8985 §8): no probe in recovery.
                self.set_timer(Timer::Rto, now + self.rtt.rto());
            }
        }
        self.rtt_timing = None;
        if self.config.rto_rearm == RtoRearm::FastRetransmit {
            self.set_timer(Timer::Rto, now + self.rtt.rto());
        }
        true
    }

    fn on_rto(&mut self, now: Instant) {
        match self.state {
            State::SynSent | State::SynReceived => {
                self.stats.rto_expirations += 1;
                self.syn_retransmitted = true;
                self.syn_retransmits = self.syn_retransmits.saturating_add(1);
                self.rtt.on_backoff();
                self.snd_nxt = 0;
                self.stats.retransmissions += 1;
                return;
            }
            State::Closed | State::Listen => return,
            _ => {}
        }
        if self.snd_una >= self.snd_max {
            return;
        }
        self.stats.rto_expirations += 1;
        // F-RTO step 1 (RFC 5682 §3.1): not when a recovery (fast or by timeout) runs.
        self.frto =
            (self.config.frto && self.recovery.is_none() && !self.in_rto_recovery()).then(|| {
                let mut rtx_end = (self.snd_una + self.smss).min(self.snd_max);
                // The head stops before SACKed data (`send_range`); SACK blocks lie above
                // SND.UNA.
                if let Some((s, _)) = self.scoreboard.next_from(self.snd_una) {
                    rtx_end = rtx_end.min(s);
                }
                Frto {
                    high: self.snd_max,
                    rtx_end,
                    new_budget: 0,
                    prior_cwnd: self.win.cwnd,
                    // Linux `tcp_current_ssthresh`: at least ¾ of cwnd.
                    prior_ssthresh: self.win.ssthresh.max(self.win.cwnd / 2 + self.win.cwnd / 4),
                    prior_recover: self.last_recover,
                }
            });
        // The window the controller reduces from (it sees it as both cwnd and FlightSize).
        let uninflated = match self.recovery {
            Some(_) => self.win.cwnd.min(self.win.ssthresh),
            None => self.win.cwnd,
        };
        let base = match self.config.rto_ssthresh {
            RtoSsthresh::Flight => Some(self.snd_max - self.snd_una),
            RtoSsthresh::Window => Some(uninflated.min(self.snd_wnd.max(self.smss))),
            RtoSsthresh::WindowOnce => {
                let same_episode = self.recovery.is_some() || self.snd_una < self.last_recover;
                (!same_episode).then_some(self.win.cwnd)
            }
        };
        if let Some(base) = base {
            if !self.bbr_on() {
                self.win.cwnd = base;
            }
            self.cc.on_rto(now, base, &mut self.win);
        }
        self.cc.on_rto_round(now, self.snd_max);
        if self.bbr_on() {
            // Linux `tcp_enter_loss` marks everything unSACKed lost, then BBR sees the Loss
            // state.
            let unsacked =
                (self.snd_max - self.snd_una) - self.scoreboard.covered(self.snd_una, self.snd_max);
            self.rate.on_lost(unsacked);
            let (stamp, delivered, lost) = (
                self.rate.delivered_time().unwrap_or(now),
                self.rate.delivered(),
                self.rate.lost(),
            );
            if let Some(b) = self.cc.bbr_mut() {
                b.on_loss_state(stamp, delivered, lost);
            }
        }
        if let Some(h) = self.hystart_pp.as_mut() {
            h.on_loss();
        }
        // RFC 5681 §3.1: loss window of one segment.
        self.win.cwnd = self.smss;
        if let Some(rec) = self.recovery.take() {
            self.stats.recovery_ns += now.saturating_since(rec.since).as_nanos();
        }
        self.last_recover = self.snd_max;
        self.recover_by_rto = true;
        self.tlp.end_seq = None;
        self.dupacks = 0;
        self.rtx_now = None;
        self.rtt_timing = None;
        self.rtt.on_backoff();
        // Go back N: resend from the first unacknowledged byte (skipping SACKed ranges). The
        // head goes out whole whatever the window, as Linux's `tcp_retransmit_skb` lets the
        // head through: held back by sender SWS avoidance behind a window smaller than a
        // segment, and with the peer's window update lost, neither end would ever send again.
        self.snd_nxt = self.snd_una;
        self.rtx_now = Some(self.snd_una);
        self.set_timer(Timer::Rto, now + self.rtt.rto());
    }

    fn on_persist(&mut self, now: Instant) {
        // Zero-window probe (RFC 9293 §3.8.6.1): one byte at snd_una while the window is closed
        // and nothing but an earlier probe is in flight.
        if self.snd_wnd >= self.smss
            || self.snd_una >= self.data_end()
            || self.snd_max > self.snd_una + 1
        {
            return;
        }
        self.stats.window_probes += 1;
        self.probe_pending = true;
        self.rtt.on_backoff();
        self.set_timer(Timer::Persist, now + self.rtt.rto());
    }

    // ---- receiver ----

    fn rcv_offset(&self, seq: SeqNumber) -> i64 {
        self.rcv_nxt as i64 + (seq - (self.irs + self.rcv_nxt as u32))
    }

    /// Offset just past in-order data (excluding a received FIN).
    fn rcv_data_end(&self) -> u64 {
        match self.peer_fin {
            Some(f) if self.rcv_nxt > f => f,
            _ => self.rcv_nxt,
        }
    }

    /// Accept the data and FIN of `seg`; `payload` (real-bytes mode) holds its
    /// `seg.payload_len` bytes.
    fn process_data(&mut self, now: Instant, seg: &TcpRepr, payload: Option<&[u8]>) {
        let start = self.rcv_offset(seg.seq);
        let len = u64::from(seg.payload_len);
        let fin = seg.flags.contains(TcpFlags::FIN);
        if seg.flags.contains(TcpFlags::SYN) {
            // A retransmitted SYN-ACK: our ACK was lost.
            self.ack_now = true;
            return;
        }
        if start < 0 {
            self.ack_now = true;
            return;
        }
        let start = start as u64;
        let mut end = start + len;
        // Accept only what fits the window we advertised (never shrunk).
        let mut right = self.rcv_adv.max(self.rcv_nxt);
        if let Some(store) = self.bytes.as_deref() {
            // Never accept what the byte store cannot hold. The advertised edge never exceeds
            // this (it is at most app_read + recv_buffer), so this only guards the invariant.
            right = right.min(store.recv.limit().max(self.rcv_nxt));
        }
        if end > right {
            if len > 0 {
                self.stats.beyond_window += 1;
            }
            end = right.max(start);
            if start >= right {
                // Nothing of it is acceptable (RFC 9293 §3.10.7.4): acknowledge at once.
                self.ack_now = true;
                return;
            }
        }
        if start > self.rcv_nxt {
            // Out of order, a bare FIN included (RFC 5681 §4.2): a duplicate ACK at once.
            self.ack_now = true;
        }
        if fin && end == start + len {
            self.peer_fin = Some(start + len);
        }
        if end <= self.rcv_nxt && !(fin && self.peer_fin == Some(self.rcv_nxt)) {
            // Entirely old (a retransmission): acknowledge at once.
            self.ack_now = true;
            return;
        }
        if let (Some(store), Some(data)) = (self.bytes.as_deref_mut(), payload) {
            // The accepted part [start, end); bytes already read are skipped by the store.
            store.recv.write(
                start,
                data.get(..(end - start) as usize).unwrap_or_default(),
            );
        }
        let had_holes = !self.ooo.is_empty();
        if start <= self.rcv_nxt {
            self.rcv_nxt = self.rcv_nxt.max(end);
            if let Some((s, e)) = self.ooo.next_from(0) {
                if s <= self.rcv_nxt {
                    self.rcv_nxt = self.rcv_nxt.max(e);
                }
            }
            self.ooo.remove_below(self.rcv_nxt);
        } else if end > start {
            self.stats.out_of_order += 1;
            self.ooo.insert(start, end);
            self.recent_sack.rotate_right(1);
            self.recent_sack[0] = start;
            self.ack_now = true;
        }
        if self.peer_fin == Some(self.rcv_nxt) {
            self.rcv_nxt += 1;
            self.ack_now = true;
            self.state = match self.state {
                State::Established => State::CloseWait,
                State::FinWait1 => State::Closing,
                State::FinWait2 => State::TimeWait,
                s => s,
            };
        }
        self.advance_reader(now);
        if had_holes {
            // Filling a hole: ACK immediately (RFC 5681 §4.2).
            self.ack_now = true;
        }
        if !self.ack_now && self.quickacks_left > 0 && end > start {
            self.quickacks_left -= 1;
            self.ack_now = true;
        }
        if !self.ack_now {
            self.unacked_segments += 1;
            if self.unacked_segments >= self.config.delack_segments.max(1) {
                self.ack_now = true;
            } else if self.timers[Timer::DelayedAck as usize].is_none() {
                self.set_timer(Timer::DelayedAck, now + self.config.delack_timeout);
            }
        }
    }

    /// SACK blocks: the most recently changed ranges first, then the highest ones.
    fn sack_blocks(&self, max: usize) -> impl Iterator<Item = (u64, u64)> {
        let mut out: [(u64, u64); 4] = [(0, 0); 4];
        let mut n = 0;
        let candidates = self
            .recent_sack
            .iter()
            .filter_map(|&left| self.ooo.containing(left))
            .chain(self.ooo.as_slice().iter().rev().copied());
        for r in candidates {
            if n == max {
                break;
            }
            if !out[..n].contains(&r) {
                out[n] = r;
                n += 1;
            }
        }
        out.into_iter().take(n)
    }

    /// Mark in-order data below `target` as read: drop its bytes, maybe send a window update.
    fn mark_read(&mut self, now: Instant, target: u64) {
        if target > self.app_read {
            self.app_read = target;
            if let Some(store) = self.bytes.as_deref_mut() {
                store.recv.discard_to(target);
            }
            self.maybe_window_update();
            self.update_timers(now);
        }
    }

    /// Let the application read what its rate allows up to `now` (real bytes so read are
    /// discarded: the endpoint is a sink).
    fn advance_reader(&mut self, now: Instant) {
        if self.manual_read {
            return;
        }
        self.advance_reader_at_rate(now);
        if let Some(store) = self.bytes.as_deref_mut() {
            store.recv.discard_to(self.app_read);
        }
    }

    /// The reader of `app_read_rate` (instant when unset), moving `app_read` only.
    fn advance_reader_at_rate(&mut self, now: Instant) {
        let end = self.rcv_data_end();
        match self.config.app_read_rate {
            None => self.app_read = end.max(self.app_read),
            Some(rate) => {
                let available = end.saturating_sub(self.app_read);
                if available == 0 {
                    self.read_clock = now;
                    return;
                }
                let can = rate.bytes_in(now.saturating_since(self.read_clock));
                if can >= available {
                    self.app_read = end;
                    self.read_clock = now;
                } else {
                    self.app_read += can;
                    // Carry the fraction of a byte forward.
                    self.read_clock += rate.tx_time(can).min(now.saturating_since(self.read_clock));
                }
            }
        }
    }

    /// Receive window available now: buffer minus unread in-order data (RFC 9293 §3.8.6.2.2).
    fn rcv_window_now(&self) -> u64 {
        let unread = self.rcv_data_end().saturating_sub(self.app_read);
        self.config.recv_buffer.bytes().saturating_sub(unread)
    }

    fn max_advertisable(&self) -> u64 {
        65_535u64 << self.rcv_wscale
    }

    /// Decide the window field to send, never moving the right edge left and holding small
    /// increases back (receiver SWS avoidance, RFC 1122 §4.2.3.3).
    fn advertise(&mut self) -> u16 {
        let wnd = self.rcv_window_now().min(self.max_advertisable());
        let candidate = self.rcv_nxt + wnd;
        let threshold = (self.config.recv_buffer.bytes() / 2).min(self.smss).max(1);
        if candidate >= self.rcv_adv + threshold || self.rcv_adv < self.rcv_nxt {
            self.rcv_adv = candidate;
        }
        let adv = self.rcv_adv.saturating_sub(self.rcv_nxt);
        // Rounding down: the peer never sees an edge beyond `rcv_adv`.
        (adv >> self.rcv_wscale).min(65_535) as u16
    }

    /// After the application read: send a window update if the window at least doubled and grew
    /// by a segment (as Linux's `tcp_cleanup_rbuf`).
    fn maybe_window_update(&mut self) {
        if !self.is_established() || self.peer_closed() {
            return;
        }
        let current = self.rcv_adv.saturating_sub(self.rcv_nxt);
        let now_wnd = self.rcv_window_now().min(self.max_advertisable());
        if now_wnd >= 2 * current && now_wnd >= current + self.smss {
            self.ack_now = true;
        }
    }

    // ---- timers ----

    /// The retransmission timer, RACK's reordering timer and the probe timer are one timer
    /// of three kinds (RFC 8985 §8): arming one cancels the others.
    fn set_timer(&mut self, t: Timer, at: Instant) {
        if matches!(t, Timer::Rto | Timer::Reo | Timer::Pto) {
            self.clear_xmit_timers();
        }
        self.timers[t as usize] = Some(at);
    }

    fn clear_xmit_timers(&mut self) {
        for t in [Timer::Rto, Timer::Reo, Timer::Pto] {
            self.clear_timer(t);
        }
    }

    /// One of the retransmission, reordering and probe timers is armed.
    fn xmit_timer_armed(&self) -> bool {
        [Timer::Rto, Timer::Reo, Timer::Pto]
            .iter()
            .any(|&t| self.timers[t as usize].is_some())
    }

    fn clear_timer(&mut self, t: Timer) {
        self.timers[t as usize] = None;
    }

    /// Keep the application-read timer in step with unread data.
    fn update_timers(&mut self, now: Instant) {
        let unread = self.rcv_data_end().saturating_sub(self.app_read);
        match self.config.app_read_rate {
            Some(rate) if unread > 0 && self.is_established() => {
                let step = unread.min(self.smss);
                let at = self.read_clock + rate.tx_time(step);
                self.set_timer(Timer::AppRead, at.max(now));
            }
            _ => self.clear_timer(Timer::AppRead),
        }
    }
}

/// Shift needed so that `buffer` fits the 16-bit window field (RFC 7323 §2.3, at most 14).
fn wscale_for(buffer: u64) -> u8 {
    let mut shift = 0;
    while shift < 14 && (buffer >> shift) > 65_535 {
        shift += 1;
    }
    shift
}

/// RFC 8985 §6.2 steps 2–3 for one delivered segment `s`, in ascending end order: RACK.fack,
/// reordering, min_RTT, and `newest`, the most recently sent segment delivered with its RTT.
fn rack_deliver(
    rack: &mut Rack,
    newest: &mut Option<(SentSegment, Duration)>,
    s: &SentSegment,
    now: Instant,
) {
    // Step 3: a segment never resent delivered below RACK.fack was reordered.
    if s.end > rack.fack {
        rack.fack = s.end;
    } else if s.end < rack.fack && !s.retransmitted {
        rack.reordering_seen = true;
    }
    let rtt = now.saturating_since(s.xmit);
    // Step 2: an ACK of a retransmitted segment faster than min_RTT is for the original: no
    // sample (RFC 8985 also checks the TSecr; Linux `tcp_rack_advance` only min_RTT).
    if s.retransmitted && rack.min_rtt.is_some_and(|m| rtt < m) {
        return;
    }
    if !s.retransmitted {
        rack.min_rtt = Some(rack.min_rtt.map_or(rtt, |m| m.min(rtt)));
    }
    if newest.is_none_or(|(n, _)| sent_after(s.xmit, s.end, n.xmit, n.end)) {
        *newest = Some((*s, rtt));
    }
}

/// RACK_sent_after (RFC 8985 §6.2): (t1, seq1) was sent after (t2, seq2), the end sequence
/// breaking ties between segments sent at the same instant.
fn sent_after(t1: Instant, seq1: u64, t2: Instant, seq2: u64) -> bool {
    t1 > t2 || (t1 == t2 && seq1 > seq2)
}

/// Timestamp clock: milliseconds since scenario start (RFC 7323 §5.4 allows 1 ms to 1 s ticks).
fn ts_clock(now: Instant) -> u32 {
    (now.as_nanos() / 1_000_000) as u32
}

#[cfg(test)]
mod prr_tests {
    use super::*;
    use crate::tcp::Profile;

    /// In SACK recovery since SND.UNA = 1 (segment 1:1001 lost, SMSS 1000), `snd_max` sent,
    /// `sacked` SACKed, ssthresh and counters as given.
    fn in_recovery(
        snd_max: u64,
        sacked: (u64, u64),
        ssthresh: u64,
        prr: (u64, u64),
    ) -> TcpEndpoint {
        let mut c = TcpConfig::for_profile(Profile::Rfc);
        c.mss = 1000;
        c.prr = true;
        let mut ep = TcpEndpoint::new(c, (Ipv4Addr::LOCALHOST, 1), (Ipv4Addr::LOCALHOST, 2), 0);
        ep.sack_ok = true;
        ep.smss = 1000;
        ep.win.mss = 1000;
        ep.snd_una = 1;
        ep.snd_nxt = snd_max;
        ep.snd_max = snd_max;
        ep.win.ssthresh = ssthresh;
        ep.scoreboard.insert(sacked.0, sacked.1);
        ep.recovery = Some(FastRecovery {
            recover: snd_max,
            high_rxt: 1001,
            rescue_rxt: 1001,
            since: Instant::ZERO,
            partial_acks: 0,
            prr_delivered: prr.0,
            prr_out: prr.1,
            recover_fs: snd_max - 1,
            pipe_pkts: 0,
        });
        ep
    }

    /// RFC 6937 §3.1, pipe > ssthresh: sndcnt = ⌈prr_delivered·ssthresh/RecoverFS⌉ − prr_out in
    /// whole segments (RecoverFS 20 segments, ssthresh 10: one segment per two delivered).
    #[test]
    fn proportional_part_sends_one_segment_per_two_delivered() {
        // The entering ACK: pipe 16 segments without the unsent retransmission; ⌈0.5⌉ = 1.
        let mut ep = in_recovery(20_001, (1001, 4001), 10_000, (0, 0));
        ep.prr_on_ack(1000, false);
        assert_eq!(ep.cwnd(), 17_000);
        // The retransmission went out: ⌈1.0⌉ − 1 = 0, then ⌈1.5⌉ − 1 = 1.
        let mut ep = in_recovery(20_001, (1001, 5001), 10_000, (1000, 1000));
        ep.prr_on_ack(1000, false);
        assert_eq!(ep.cwnd(), 16_000, "pipe 15 + 1 resent, nothing more");
        let mut ep = in_recovery(20_001, (1001, 6001), 10_000, (2000, 1000));
        ep.prr_on_ack(1000, false);
        assert_eq!(ep.cwnd(), 16_000, "pipe 14 + 1 resent + one new");
        assert_eq!(ep.recovery.map(|r| r.prr_delivered), Some(3000));
    }

    /// PRR-SSRB (pipe ≤ ssthresh): min(ssthresh − pipe, max(prr_delivered − prr_out,
    /// DeliveredData) + 1 SMSS on an ACK that advances SND.UNA and marks nothing newly lost).
    #[test]
    fn slow_start_reduction_bound_adds_a_segment_only_on_a_safe_ack() {
        // pipe = 2 unSACKed + 1 resent = 3 segments, ssthresh 5: room for 2; delivered 1 and
        // prr_delivered − prr_out = 0 after it.
        for (safe, cwnd) in [(false, 4000), (true, 5000)] {
            let mut ep = in_recovery(10_001, (1001, 8001), 5000, (2000, 3000));
            ep.prr_on_ack(1000, safe);
            assert_eq!(ep.cwnd(), cwnd, "safe {safe}");
        }
        // prr_delivered − prr_out larger than the room: the room bounds it.
        let mut ep = in_recovery(10_001, (1001, 8001), 5000, (9000, 3000));
        ep.prr_on_ack(1000, true);
        assert_eq!(ep.cwnd(), 5000);
    }

    /// Nothing delivered: cwnd untouched. Nothing sent yet: at least one segment (Linux's
    /// "Force a fast retransmit upon entering fast recovery").
    #[test]
    fn no_delivery_changes_nothing_and_the_first_ack_allows_the_retransmission() {
        let mut ep = in_recovery(10_001, (1001, 4001), 5000, (0, 0));
        ep.win.cwnd = 1234;
        ep.prr_on_ack(0, true);
        assert_eq!(ep.cwnd(), 1234);
        // pipe (without the unsent retransmission) = 6 segments > ssthresh 5: ⌈1·5/10⌉ = 1.
        ep.prr_on_ack(1000, false);
        assert_eq!(ep.cwnd(), 7000);
        // pipe = ssthresh: PRR-SSRB gives 0, raised to one segment.
        let mut ep = in_recovery(10_001, (1001, 5001), 5000, (0, 0));
        ep.prr_on_ack(1000, false);
        assert_eq!(ep.cwnd(), 6000);
    }
}

#[cfg(test)]
mod nextseg_tests {
    use super::*;
    use crate::tcp::Profile;

    /// A sender with SMSS 1000, SND.UNA `una`, `snd_max` sent of 20 000 written and `sacked`
    /// on the scoreboard.
    fn sender(una: u64, snd_max: u64, sacked: &[(u64, u64)]) -> TcpEndpoint {
        let mut c = TcpConfig::for_profile(Profile::Rfc);
        c.mss = 1000;
        let mut ep = TcpEndpoint::new(c, (Ipv4Addr::LOCALHOST, 1), (Ipv4Addr::LOCALHOST, 2), 0);
        ep.sack_ok = true;
        ep.smss = 1000;
        ep.app_written = 20_000;
        ep.snd_una = una;
        ep.snd_nxt = snd_max;
        ep.snd_max = snd_max;
        for &(s, e) in sacked {
            ep.scoreboard.insert(s, e);
        }
        ep
    }

    #[test]
    fn rescue_ends_at_the_highest_unsacked_byte() {
        // The tail above the highest SACK is unSACKed: its last SMSS.
        assert_eq!(
            sender(1, 8001, &[(1001, 5001)]).rescue_range(),
            Some((7001, 8001))
        );
        // A short last segment: still SMSS bytes ending at SND.MAX.
        assert_eq!(
            sender(1, 7501, &[(1001, 5001)]).rescue_range(),
            Some((6501, 7501))
        );
        // The tail is SACKed: the hole just below the highest block, never reaching below
        // the block beneath it.
        assert_eq!(
            sender(1, 8001, &[(1001, 5001), (6001, 8001)]).rescue_range(),
            Some((5001, 6001))
        );
        assert_eq!(
            sender(1, 8001, &[(1001, 5501), (6001, 8001)]).rescue_range(),
            Some((5501, 6001))
        );
        // Nor below SND.UNA.
        assert_eq!(
            sender(5501, 8001, &[(6001, 8001)]).rescue_range(),
            Some((5501, 6001))
        );
    }

    #[test]
    fn rescue_stops_at_the_data_and_needs_something_outstanding() {
        // A FIN sent after the last byte (offset 20 001) is not data to resend.
        assert_eq!(
            sender(1, 20_002, &[(1001, 5001)]).rescue_range(),
            Some((19_001, 20_001))
        );
        assert_eq!(sender(8001, 8001, &[]).rescue_range(), None);
    }

    #[test]
    fn rescue_sends_its_short_range_only_once_and_not_past_snd_max() {
        // The receiver's window ends at SND.MAX (no new data), HighRxt is past the highest
        // SACK (no rule 3): the rescue is the 500 bytes between that SACK and SND.MAX.
        let mut ep = sender(5001, 8001, &[(5501, 7501)]);
        ep.snd_wnd = 3000;
        ep.win.cwnd = 10_000;
        ep.recovery = Some(FastRecovery {
            recover: 8001,
            high_rxt: 7501,
            rescue_rxt: 1001,
            since: Instant::ZERO,
            partial_acks: 0,
            prr_delivered: 0,
            prr_out: 0,
            recover_fs: 7000,
            pipe_pkts: 0,
        });
        let seg = ep.poll_sack_recovery(Instant::ZERO).expect("the rescue");
        assert_eq!((seg.seq, seg.payload_len), (ep.seq_of(7501), 500));
        assert_eq!(ep.snd_max, 8001);
        let rec = ep.recovery.expect("still in recovery");
        assert_eq!((rec.rescue_rxt, rec.high_rxt), (8001, 7501));
        assert!(ep.poll_sack_recovery(Instant::ZERO).is_none());
    }
}

#[cfg(test)]
mod rack_tests {
    use super::*;
    use crate::tcp::Profile;
    use proptest::prelude::*;

    const MS: u64 = 1_000_000;

    /// An established SACK sender (SMSS 1000, `rack` and `tlp` on) with `n` segments of 1000
    /// bytes sent at `sent_ms[i]` ms (offsets 1..), SRTT 100 ms.
    fn sender(sent_ms: &[u64]) -> TcpEndpoint {
        let mut c = TcpConfig::for_profile(Profile::Rfc);
        c.mss = 1000;
        c.rack = true;
        c.tlp = true;
        let mut ep = TcpEndpoint::new(c, (Ipv4Addr::LOCALHOST, 1), (Ipv4Addr::LOCALHOST, 2), 0);
        ep.state = State::Established;
        ep.sack_ok = true;
        ep.smss = 1000;
        ep.win.mss = 1000;
        ep.snd_una = 1;
        ep.snd_wnd = 1 << 20;
        ep.rtt.on_sample(Instant::ZERO, Duration(100 * MS));
        for (i, &t) in sent_ms.iter().enumerate() {
            let start = 1 + 1000 * i as u64;
            ep.sent_log.push_back(SentSegment {
                start,
                end: start + 1000,
                sent: Instant(t * MS),
                retransmitted: false,
                xmit: Instant(t * MS),
                lost: false,
                rtx_out: false,
                tx: TxState::default(),
            });
        }
        ep.snd_nxt = 1 + 1000 * sent_ms.len() as u64;
        ep.snd_max = ep.snd_nxt;
        ep.app_written = ep.snd_max - 1;
        ep
    }

    /// RFC 8985 §6.2 step 4: reo_wnd is 0 in recovery or with DupThresh segments SACKed until
    /// reordering is seen; then min(min_RTT/4, SRTT).
    #[test]
    fn reo_wnd_zero_until_reordering_then_a_quarter_of_min_rtt() {
        let mut ep = sender(&[0, 0, 0, 0, 0]);
        ep.rack.min_rtt = Some(Duration(80 * MS));
        assert_eq!(ep.rack_reo_wnd(), Duration(20 * MS));
        ep.scoreboard.insert(1001, 3001);
        assert_eq!(ep.sacked_segments(), 2);
        assert_eq!(ep.rack_reo_wnd(), Duration(20 * MS), "2 SACKed < DupThresh");
        ep.scoreboard.insert(3001, 4001);
        assert_eq!(ep.sacked_segments(), 3);
        assert_eq!(ep.rack_reo_wnd(), Duration::ZERO);
        ep.rack.reordering_seen = true;
        assert_eq!(ep.rack_reo_wnd(), Duration(20 * MS));
        // min_RTT/4 above SRTT (100 ms): SRTT bounds it.
        ep.rack.min_rtt = Some(Duration(600 * MS));
        assert_eq!(ep.rack_reo_wnd(), Duration(100 * MS));
        let mut ep = sender(&[0, 0]);
        ep.rack.min_rtt = Some(Duration(80 * MS));
        ep.recover_by_rto = true;
        ep.last_recover = ep.snd_max;
        assert_eq!(ep.rack_reo_wnd(), Duration::ZERO, "RTO recovery");
    }

    /// Step 2: the newest delivered segment sets RACK.xmit_ts/end_seq/rtt; a retransmitted one
    /// delivered faster than min_RTT is skipped; step 3: one never resent below RACK.fack is
    /// reordering.
    #[test]
    fn update_takes_the_most_recently_sent_and_flags_reordering() {
        let mut ep = sender(&[0, 10, 20, 30]);
        ep.rack_update(Instant(150 * MS), 1, &mut [(2001, 3001), (1001, 2001)]);
        assert_eq!(ep.rack.xmit_ts, Some(Instant(20 * MS)));
        assert_eq!(ep.rack.end_seq, 3001);
        assert_eq!(ep.rack.rtt, Duration(130 * MS));
        assert_eq!(ep.rack.min_rtt, Some(Duration(130 * MS)));
        assert_eq!(ep.rack.fack, 3001);
        assert!(!ep.rack.reordering_seen);
        ep.scoreboard.insert(1001, 3001);
        // The head arrives late: cumulatively acknowledged below fack, never resent.
        ep.rack_update(Instant(160 * MS), 3001, &mut []);
        assert!(ep.rack.reordering_seen);
        assert_eq!(
            ep.rack.xmit_ts,
            Some(Instant(20 * MS)),
            "older than RACK.xmit_ts"
        );
        assert_eq!(ep.rack.rtt, Duration(160 * MS));
        assert_eq!(ep.rack.min_rtt, Some(Duration(130 * MS)));
        // A retransmission of 3001:4001 at 100 ms SACKed 20 ms later (< min_RTT): ambiguous.
        ep.sent_log[3].retransmitted = true;
        ep.sent_log[3].xmit = Instant(100 * MS);
        ep.rack_update(Instant(120 * MS), 3001, &mut [(3001, 4001)]);
        assert_eq!(ep.rack.xmit_ts, Some(Instant(20 * MS)));
        ep.rack_update(Instant(240 * MS), 3001, &mut [(3001, 4001)]);
        assert_eq!(ep.rack.xmit_ts, Some(Instant(100 * MS)));
        assert_eq!(ep.rack.rtt, Duration(140 * MS));
    }

    /// RFC 8985 §6.2 step 3: only a segment never resent, delivered strictly below RACK.fack,
    /// shows reordering; a repaired loss below fack, or the segment at fack itself, does not.
    #[test]
    fn reordering_is_a_never_resent_segment_below_fack() {
        let seg = |end: u64, retransmitted: bool| SentSegment {
            start: end - 1000,
            end,
            sent: Instant(0),
            retransmitted,
            xmit: Instant(10 * MS),
            lost: false,
            rtx_out: false,
            tx: TxState::default(),
        };
        let mut rack = Rack {
            fack: 5001,
            ..Rack::default()
        };
        let mut newest = None;
        rack_deliver(&mut rack, &mut newest, &seg(2001, true), Instant(200 * MS));
        assert!(
            !rack.reordering_seen,
            "a retransmission repairs, it does not reorder"
        );
        rack_deliver(&mut rack, &mut newest, &seg(5001, false), Instant(200 * MS));
        assert!(!rack.reordering_seen, "the segment at fack is in order");
        assert_eq!(rack.fack, 5001);
        rack_deliver(&mut rack, &mut newest, &seg(3001, false), Instant(200 * MS));
        assert!(rack.reordering_seen);
    }

    /// RACK_sent_after: the later send time wins; at the same instant the higher end sequence.
    #[test]
    fn sent_after_breaks_ties_by_end_sequence() {
        let (t, later) = (Instant(10 * MS), Instant(11 * MS));
        assert!(sent_after(later, 1001, t, 2001));
        assert!(!sent_after(t, 2001, later, 1001));
        assert!(sent_after(t, 2001, t, 1001));
        assert!(!sent_after(t, 1001, t, 2001));
        assert!(!sent_after(t, 1001, t, 1001));
    }

    /// Step 5: segments sent before RACK.xmit_ts are lost after RACK.rtt + reo_wnd; the timer
    /// is armed for the longest wait left (RFC 8985 takes the maximum).
    #[test]
    fn detect_loss_marks_by_time_and_arms_the_timer_for_the_longest_wait() {
        let mut ep = sender(&[0, 30, 60, 90]);
        ep.rack.min_rtt = Some(Duration(100 * MS));
        ep.rack.xmit_ts = Some(Instant(90 * MS));
        ep.rack.end_seq = 4001;
        ep.rack.rtt = Duration(100 * MS);
        ep.scoreboard.insert(3001, 4001);
        // wait = 100 + 25 ms: at 140 ms, 0:1000 (sent at 0) has waited 140 ≥ 125: lost;
        // 1001 (30 ms) waits 15 ms more, 2001 (60 ms) 45 ms more.
        assert!(ep.rack_detect_loss_and_arm_timer(Instant(140 * MS)));
        assert!(ep.sent_log[0].lost && !ep.sent_log[1].lost && !ep.sent_log[2].lost);
        assert_eq!(ep.timers[Timer::Reo as usize], Some(Instant(185 * MS)));
        assert_eq!(ep.timers[Timer::Rto as usize], None, "one timer");
        assert_eq!(ep.stats.rack_marked_lost, 1);
        assert_eq!(ep.rack_next_lost(), Some((1, 1001)));
        // Marked lost, not yet resent: skipped, not counted again.
        assert!(ep.rack_detect_loss_and_arm_timer(Instant(185 * MS)));
        assert_eq!(ep.stats.rack_marked_lost, 3);
        assert_eq!(ep.timers[Timer::Reo as usize], Some(Instant(185 * MS)));
    }

    /// RFC 8985 §7.2: PTO = 2·SRTT, + WCDelAckT with one segment in flight, at most the RTO.
    #[test]
    fn pto_is_two_srtt_plus_ack_delay_for_one_segment_and_never_after_the_rto() {
        let now = Instant(1000 * MS);
        let mut ep = sender(&[0, 0]);
        ep.schedule_pto(now);
        assert_eq!(ep.timers[Timer::Pto as usize], Some(Instant(1200 * MS)));
        let mut ep = sender(&[0]);
        ep.schedule_pto(now);
        assert_eq!(ep.timers[Timer::Pto as usize], Some(Instant(1400 * MS)));
        let mut ep = sender(&[0, 0]);
        ep.set_timer(Timer::Rto, Instant(1150 * MS));
        ep.schedule_pto(now);
        assert_eq!(ep.timers[Timer::Pto as usize], Some(Instant(1150 * MS)));
        assert_eq!(ep.timers[Timer::Rto as usize], None);
        // Nothing SACKed, no recovery, no probe out: otherwise no probe timer.
        for f in [
            |e: &mut TcpEndpoint| {
                e.scoreboard.insert(1001, 2001);
            },
            |e: &mut TcpEndpoint| e.tlp.end_seq = Some(5),
            |e: &mut TcpEndpoint| e.snd_una = e.snd_max,
            // In recovery after the SACKed data was cumulatively acknowledged.
            |e: &mut TcpEndpoint| {
                e.sent_log[0].lost = true;
                e.enter_fast_recovery(Instant::ZERO);
            },
            |e: &mut TcpEndpoint| {
                e.recover_by_rto = true;
                e.last_recover = e.snd_max;
            },
            |e: &mut TcpEndpoint| e.timers[Timer::Reo as usize] = Some(Instant(MS)),
            |e: &mut TcpEndpoint| e.timers[Timer::Persist as usize] = Some(Instant(MS)),
        ] {
            let mut ep = sender(&[0, 0]);
            f(&mut ep);
            ep.schedule_pto(now);
            assert_eq!(ep.timers[Timer::Pto as usize], None);
        }
        // No SRTT yet: 1 s.
        let mut ep = sender(&[0, 0]);
        ep.rtt = RttEstimator::new(
            Duration::from_secs(3),
            Duration::from_secs(1),
            Duration::from_secs(60),
            Duration(MS),
        );
        ep.schedule_pto(now);
        assert_eq!(ep.timers[Timer::Pto as usize], Some(Instant(2000 * MS)));
    }

    /// Segments deemed lost during a timeout's go-back-N wait for the recovery point, then
    /// start a recovery that resends the first of them (not SND.UNA's segment).
    #[test]
    fn lost_marks_below_the_recovery_point_start_recovery_later() {
        let mut ep = sender(&[0, 0, 0, 0]);
        ep.recover_by_rto = true;
        ep.last_recover = 2001;
        ep.sent_log[2].lost = true;
        ep.rack_start_recovery(Instant(MS), false);
        assert!(ep.recovery.is_none() && ep.rack.deferred);
        ep.snd_una = 2001;
        ep.sent_log.pop_front();
        ep.sent_log.pop_front();
        ep.rack_start_recovery(Instant(MS), false);
        assert!(!ep.rack.deferred);
        assert_eq!(ep.recovery.map(|r| r.recover), Some(4001));
        assert_eq!(ep.rtx_now, Some(2001));
        assert_eq!(ep.stats.fast_retransmits, 1);
        // A segment deemed lost whose original was SACKed after all is not resent.
        let mut ep = sender(&[0, 0, 0]);
        ep.sent_log[0].lost = true;
        ep.sent_log[1].lost = true;
        ep.scoreboard.insert(1, 1001);
        assert_eq!(ep.rack_next_lost(), Some((1001, 2001)));
        ep.sent_log[1].rtx_out = true;
        assert_eq!(ep.rack_next_lost(), None);
        // Nothing left to resend: no recovery, nothing deferred.
        let mut ep = sender(&[0, 0]);
        ep.rack_start_recovery(Instant(MS), false);
        assert!(ep.recovery.is_none() && !ep.rack.deferred);
    }

    /// `lost_out_reentry` (Linux `tcp_time_to_recover` on `lost_out`): a lost segment already
    /// resent when an ACK ends the recovery starts another at once, which reduces ssthresh
    /// again and resends nothing; off, or not at the end of a recovery, or once that segment is
    /// SACKed, nothing starts.
    #[test]
    fn a_resent_loss_left_when_recovery_ends_starts_another_with_lost_out_reentry() {
        let resent_loss = |reentry: bool| {
            let mut ep = sender(&[0, 0, 0, 0]);
            Arc::make_mut(&mut ep.config).lost_out_reentry = reentry;
            ep.win.cwnd = 8000;
            ep.win.ssthresh = 8000;
            ep.sent_log[2].lost = true;
            ep.sent_log[2].rtx_out = true;
            ep
        };
        let mut ep = resent_loss(true);
        assert_eq!(ep.rack_next_lost(), None, "nothing left to resend");
        ep.rack_start_recovery(Instant(MS), true);
        assert_eq!(ep.recovery.map(|r| r.recover), Some(4001));
        assert_eq!(ep.stats.fast_retransmits, 1);
        assert_eq!(ep.rtx_now, None, "the loss is already resent");
        assert!(ep.win.ssthresh < 8000, "ssthresh {}", ep.win.ssthresh);
        assert!(!ep.rack.deferred);
        let mut off = resent_loss(false);
        off.rack_start_recovery(Instant(MS), true);
        assert!(off.recovery.is_none() && !off.rack.deferred);
        assert_eq!((off.stats.fast_retransmits, off.win.ssthresh), (0, 8000));
        let mut mid = resent_loss(true);
        mid.rack_start_recovery(Instant(MS), false);
        assert!(mid.recovery.is_none(), "only the ACK that ends a recovery");
        let mut sacked = resent_loss(true);
        sacked.scoreboard.insert(2001, 3001);
        sacked.rack_start_recovery(Instant(MS), true);
        assert!(sacked.recovery.is_none(), "its bytes arrived after all");
        let mut part = resent_loss(true);
        part.scoreboard.insert(2001, 2501);
        part.rack_start_recovery(Instant(MS), true);
        assert!(part.recovery.is_some(), "half of it is still missing");
        let mut acked = resent_loss(true);
        acked.snd_una = 3001;
        acked.rack_start_recovery(Instant(MS), true);
        assert!(acked.recovery.is_none(), "cumulatively acknowledged");
    }

    /// A recovery held back after a timeout (losses marked below the recovery point) starts on
    /// the first ACK that passes that point, even when the ACK marks nothing new and ends no
    /// recovery: the deferral alone is enough (`process_ack`).
    #[test]
    fn a_deferred_recovery_starts_on_the_ack_that_passes_the_recovery_point() {
        let mut ep = sender(&[0, 0, 0, 0]);
        ep.recover_by_rto = true;
        ep.last_recover = 2001;
        ep.sent_log[2].lost = true;
        ep.rack_start_recovery(Instant(MS), false);
        assert!(ep.recovery.is_none() && ep.rack.deferred);
        let ack = ep.seq_of(2001);
        let seg = TcpRepr {
            ack: Some(ack),
            window: u16::MAX,
            ..TcpRepr::default()
        };
        ep.process_ack(Instant(2 * MS), &seg, ack);
        assert_eq!(ep.snd_una, 2001);
        assert_eq!(ep.recovery.map(|r| r.recover), Some(4001));
        assert_eq!((ep.rtx_now, ep.rack.deferred), (Some(2001), false));
    }

    /// The reordering timer in recovery (reo_wnd 0): it marks the segment that was still
    /// inside RACK.rtt, starts no second recovery, and hands over to the retransmission timer.
    #[test]
    fn rack_timer_in_recovery_marks_without_a_second_recovery() {
        let mut ep = sender(&[0, 50, 100, 150]);
        ep.rack.xmit_ts = Some(Instant(150 * MS));
        ep.rack.end_seq = 4001;
        ep.rack.rtt = Duration(100 * MS);
        ep.rack.min_rtt = Some(Duration(100 * MS));
        ep.scoreboard.insert(3001, 4001);
        ep.sent_log[0].lost = true;
        assert!(ep.enter_fast_recovery(Instant(180 * MS)));
        // 1001 (sent at 50 ms) has waited 130 ≥ 100 ms; 2001 (100 ms) has 20 ms to go.
        assert!(ep.rack_detect_loss_and_arm_timer(Instant(180 * MS)));
        assert_eq!(ep.timers[Timer::Reo as usize], Some(Instant(200 * MS)));
        ep.timers[Timer::Reo as usize] = None; // as handle_timeout takes it
        ep.on_rack_timer(Instant(200 * MS));
        assert!(ep.sent_log[2].lost);
        assert_eq!(ep.stats.fast_retransmits, 1);
        assert_eq!(
            ep.timers[Timer::Rto as usize],
            Some(Instant(200 * MS) + ep.rtt.rto())
        );
    }

    /// After a timeout the go-back-N has passed 2001 (resent at 300 ms); RACK marks that
    /// retransmission lost again: it goes out once more before the pass goes on (Linux
    /// resends every lost segment in the Loss state), and only while pipe leaves room.
    #[test]
    fn a_resent_segment_lost_again_during_the_go_back_n_goes_out_again() {
        let mut ep = sender(&[0, 50, 100, 150]);
        ep.recover_by_rto = true;
        ep.last_recover = ep.snd_max;
        ep.snd_nxt = 3001;
        ep.win.cwnd = 3000;
        for s in ep.sent_log.range_mut(..2) {
            s.retransmitted = true;
            s.rtx_out = true;
            s.xmit = Instant(300 * MS);
        }
        ep.sent_log[1].lost = true;
        ep.sent_log[1].rtx_out = false;
        // In flight below the pass (1..3001, nothing SACKed) = 3000: no room.
        assert_eq!(ep.poll_loss_state_rack(Instant(500 * MS)), None);
        ep.win.cwnd = 4000;
        let seg = ep.poll_loss_state_rack(Instant(500 * MS)).expect("resent");
        assert_eq!((ep.snd_offset(seg.seq), seg.payload_len), (1001, 1000));
        assert!(ep.sent_log[1].rtx_out);
        assert_eq!(ep.snd_nxt, 3001, "the pass goes on where it was");
        // Not lost again: nothing more to resend out of order.
        assert_eq!(ep.poll_loss_state_rack(Instant(500 * MS)), None);
        // Outside the Loss state the go-back-N rule is not this one's business.
        ep.sent_log[1].rtx_out = false;
        ep.recover_by_rto = false;
        assert_eq!(ep.poll_loss_state_rack(Instant(500 * MS)), None);
    }

    proptest! {
        /// RACK's pipe equals a byte-by-byte count: an unSACKed byte counts once unless lost,
        /// once more while retransmitted and in flight.
        #[test]
        fn rack_pipe_counts_each_byte(
            marks in proptest::collection::vec((any::<bool>(), any::<bool>()), 1..20),
            sacks in proptest::collection::vec((0u64..20_000, 1u64..3000), 0..4),
            una in 1u64..5000,
        ) {
            let mut ep = sender(&vec![0; marks.len()]);
            for (s, &(lost, rtx)) in ep.sent_log.iter_mut().zip(&marks) {
                s.lost = lost;
                s.rtx_out = rtx;
            }
            let una = una.min(ep.snd_max);
            ep.snd_una = una;
            for &(l, len) in &sacks {
                let l = l.max(una).min(ep.snd_max);
                let r = (l + len).min(ep.snd_max);
                if l < r {
                    ep.scoreboard.insert(l, r);
                }
            }
            let mut want = 0;
            for b in una..ep.snd_max {
                if ep.scoreboard.containing(b).is_some() {
                    continue;
                }
                let (lost, rtx) = marks[((b - 1) / 1000) as usize];
                want += u64::from(!lost) + u64::from(rtx);
            }
            prop_assert_eq!(ep.rack_pipe(), want);
        }
    }
}

#[cfg(test)]
mod linux_reno_tests {
    use super::*;
    use crate::tcp::{CcAlgorithm, Profile};

    const MS: u64 = 1_000_000;

    /// A NewReno sender without SACK (SMSS 1000) in the state a NewReno recovery without SACK
    /// leaves behind: cwnd = ssthresh = 10 000 but 40 000 bytes outstanding (the inflated window
    /// sent new data on every duplicate ACK, and the full ACK set cwnd to ssthresh).
    fn after_recovery(p: Profile) -> TcpEndpoint {
        let mut c = TcpConfig::for_profile(p);
        c.mss = 1000;
        c.cc = CcAlgorithm::Reno;
        c.recovery = Recovery::NewReno;
        c.sack = false;
        let mut ep = TcpEndpoint::new(c, (Ipv4Addr::LOCALHOST, 1), (Ipv4Addr::LOCALHOST, 2), 0);
        ep.state = State::Established;
        ep.smss = 1000;
        ep.win.mss = 1000;
        ep.win.abc_limit = 1000 * u64::from(ep.config.abc_segments);
        ep.app_written = 60_000;
        ep.snd_una = 1;
        ep.snd_nxt = 40_001;
        ep.snd_max = 40_001;
        ep.win.cwnd = 10_000;
        ep.win.ssthresh = 10_000;
        ep
    }

    /// `fr_ssthresh`: Linux's `tcp_reno_ssthresh` halves cwnd (5000), RFC 5681 eq. 4 halves
    /// FlightSize (20 000). With FlightSize, `linux` set ssthresh and cwnd to half of what the
    /// inflated recovery had sent and the next round burst it out: 5863 drops on a 100-packet
    /// queue where `rfc` had 177 (scenarios/linux_profile/geo_4flows_small_queue.toml).
    #[test]
    fn a_fast_retransmit_halves_cwnd_in_linux_and_flightsize_in_rfc() {
        let mut linux = after_recovery(Profile::Linux);
        assert!(linux.enter_fast_recovery(Instant(MS)));
        assert_eq!(linux.win.ssthresh, 5000);
        let mut rfc = after_recovery(Profile::Rfc);
        assert!(rfc.enter_fast_recovery(Instant(MS)));
        assert_eq!(rfc.win.ssthresh, 20_000);
    }

    /// `slow_start_to_ssthresh`: after a timeout (cwnd 1000, ssthresh 5000) one ACK covers
    /// 30 000 bytes that had arrived behind the lost head. Linux's `tcp_slow_start` stops at
    /// ssthresh and passes the other 26 000 bytes to `tcp_cong_avoid_ai`, SMSS per cwnd of
    /// them: 26 000 · 1000 / 5000 = 5200 more, 10 200 (Linux counts whole segments: 10). The
    /// unlimited ABC alone made it 31 000, a burst of 30 segments. `rfc` (L = 1): 2000.
    #[test]
    fn slow_start_stops_at_ssthresh_in_linux() {
        for (p, cwnd) in [(Profile::Linux, 10_200), (Profile::Rfc, 2000)] {
            let mut ep = after_recovery(p);
            ep.win.cwnd = 1000;
            ep.win.ssthresh = 5000;
            ep.snd_nxt = 1001;
            ep.cwnd_limited = true;
            let ack = TcpRepr {
                src_port: 2,
                dst_port: 1,
                seq: SeqNumber(1),
                ack: Some(ep.iss + 30_001),
                window: 65_535,
                ..TcpRepr::default()
            };
            ep.on_new_ack(Instant(MS), &ack, 30_001, None);
            assert_eq!(ep.win.cwnd, cwnd, "{p:?}");
        }
    }
}
