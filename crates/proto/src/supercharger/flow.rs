//! One managed connection: the FIFO of segments held for the receiver, the estimators, the
//! receiver-buffer forecast B(t) of eq. (4) and the virtual window.

use std::collections::VecDeque;

use super::estimator::{AckObservation, RateEstimator, RttEstimator};
use super::SuperChargerConfig;
use crate::node::Packet;
use crate::time::{Duration, Instant};
use crate::wire::SeqNumber;

/// Most forwarded-but-unacknowledged segments remembered per flow (RTT samples and the forecast).
/// Beyond it the forecast only loses arrivals, which makes it more cautious.
const MAX_IN_FLIGHT_LOG: usize = 1 << 16;

/// A segment held for the receiver.
#[derive(Debug)]
pub(super) struct Held {
    pub pkt: Packet,
    /// Offset just past its payload.
    pub end: u64,
    /// Payload bytes.
    pub len: u32,
}

/// A segment forwarded and not yet acknowledged.
#[derive(Clone, Copy, Debug)]
struct Forwarded {
    end: u64,
    at: Instant,
}

/// The receiver's application as the gateway predicts it: reads `rate` bytes/s while it has
/// data, starting from `read` at receiver time `time`; `arrived` bytes have reached it, the last
/// at `last_arrival`.
///
/// Arrivals are spaced at least `len / rate` apart: a burst released at once is serialised by
/// the bottleneck, which is at least as fast as the receiver was seen to read, so a later
/// arrival (less read by any instant) is the cautious side.
#[derive(Clone, Copy, Debug, Default)]
struct Reader {
    read: f64,
    time: f64,
    arrived: u64,
    last_arrival: f64,
}

impl Reader {
    /// Let the segment ending at `end` (`len` bytes) arrive at receiver time `t` (seconds) or
    /// when the bottleneck has delivered the previous one, reading at `rate` until then.
    /// Nothing beyond `readable` (a hole the receiver reported) can be read.
    fn arrive(&mut self, rate: f64, t: f64, end: u64, len: u64, readable: u64) {
        let spaced = if rate > 0.0 {
            self.last_arrival + len as f64 / rate
        } else {
            t
        };
        let t = t.max(spaced);
        if t > self.time {
            self.read = (self.read + rate * (t - self.time)).min(self.arrived as f64);
            self.time = t;
        }
        self.last_arrival = t;
        self.arrived = self.arrived.max(end.min(readable));
    }
}

/// State of one connection, in the data direction (sender → receiver). Offsets count bytes from
/// the sender's initial sequence number, so they never wrap.
#[derive(Debug)]
pub(super) struct Flow {
    /// Sender's initial sequence number (offset 0).
    isn: SeqNumber,
    /// Highest offset seen, for unwrapping.
    hi: u64,
    /// Shift the receiver applies to the window fields it sends (0 when scaling is off).
    pub rcv_shift: u8,
    /// Shift the sender applies to the window fields it receives (what we told it).
    pub virt_shift: u8,
    /// Whether the sender's handshake offered window scaling.
    pub sender_ws: Option<bool>,
    /// Whether the receiver's handshake offered window scaling (before our rewrite).
    pub receiver_ws: Option<u8>,
    /// Shift of the sender's own window scale option (what it applies to the windows it sends).
    pub sender_shift: u8,
    /// The gateway offered scaling in a receiver's SYN that had none (receiver-opened).
    pub ws_added: bool,
    /// Scaling was negotiated with the sender on the receiver's behalf: the sender scales its
    /// windows by `sender_shift`, the receiver reads them unscaled, so the gateway translates.
    pub on_behalf: bool,
    /// Segments waiting, FIFO.
    pub queue: VecDeque<Held>,
    /// Payload bytes in `queue`.
    pub queued_bytes: u64,
    /// Offset just past the highest byte forwarded.
    pub fwd_nxt: u64,
    /// Offset just past the highest byte received from the sender (forwarded or held).
    pub rcvd_nxt: u64,
    in_flight: VecDeque<Forwarded>,
    /// When the sender's SYN was forwarded (an RTT sample when the SYN-ACK returns).
    pub syn_at: Option<Instant>,
    rtt: RttEstimator,
    rate: RateEstimator,
    last_ack: Option<AckObservation>,
    /// Forecast of the receiver's reading, replayed from the last ACK through `in_flight`.
    reader: Reader,
    /// Right edge of the virtual window last advertised to the sender (never moves left).
    pub virt_edge: u64,
    /// Largest payload seen: the segment size, for the safety margin.
    pub mss: u64,
    /// A FIN seen from the sender.
    pub fin_fwd: bool,
    /// A FIN seen from the receiver.
    pub fin_rev: bool,
    /// When the head of the queue may leave; `None` = at the next ACK.

    /// Fraction of the backlogged rate estimate the forecast uses.
    headroom: f64,
    /// The window of a receiver's SYN, until the sender answers it.
    pub pending_window: u64,
    /// `fwd_nxt` before the last forward.
    fwd_nxt_before: u64,
    /// The receiver reported data out of order (SACK): nothing past its ack can be read.
    hole: Option<u64>,
    /// Earliest instant the next segment beyond the advertised window may leave: releases are
    /// paced at the forecast rate, so they reach the receiver as the forecast assumes.
    pace_next: Instant,
}

impl Flow {
    pub fn new(config: &SuperChargerConfig, isn: SeqNumber) -> Self {
        Self {
            isn,
            hi: 0,
            rcv_shift: 0,
            virt_shift: 0,
            sender_ws: None,
            receiver_ws: None,
            sender_shift: 0,
            ws_added: false,
            on_behalf: false,
            queue: VecDeque::new(),
            queued_bytes: 0,
            fwd_nxt: 1,
            rcvd_nxt: 1,
            in_flight: VecDeque::new(),
            syn_at: None,
            rtt: RttEstimator::new(config.alpha),
            rate: RateEstimator::new(config.rate_window_acks as usize, config.alpha),
            last_ack: None,
            reader: Reader::default(),
            virt_edge: 0,
            mss: 536,
            fin_fwd: false,
            fin_rev: false,
            headroom: config.rate_headroom.clamp(0.0, 1.0),
            pending_window: 0,
            fwd_nxt_before: 1,
            hole: None,
            pace_next: Instant::ZERO,
        }
    }

    /// The sender's initial sequence number, once its SYN-ACK is seen (receiver-opened).
    pub fn set_isn(&mut self, isn: SeqNumber) {
        self.isn = isn;
        self.hi = 0;
    }

    /// Offset of a sequence number of the data direction (unwrapped near the highest seen).
    pub fn offset(&mut self, seq: SeqNumber) -> u64 {
        let base = self.isn + self.hi as u32;
        let off = (self.hi as i64 + (seq - base)).max(0) as u64;
        self.hi = self.hi.max(off);
        off
    }

    /// The gateway–receiver RTT estimator.
    pub fn rtt(&self) -> &RttEstimator {
        &self.rtt
    }

    /// The receiver-rate estimator.
    pub fn rate(&self) -> &RateEstimator {
        &self.rate
    }

    /// The receiver's window as announced in its SYN-ACK (or SYN): a first observation.
    pub fn on_receiver_handshake(&mut self, now: Instant, window: u64) {
        if let Some(syn) = self.syn_at.take() {
            self.rtt.on_sample(syn, now);
        }
        let obs = AckObservation {
            at: now,
            ack: 1,
            window,
        };
        self.rate.on_ack(obs);
        self.last_ack = Some(obs);
        self.replay();
    }

    /// An ACK from the receiver: RTT sample (eq. 1), rate sample (eq. 3), new forecast.
    pub fn on_ack(&mut self, now: Instant, ack: u64, window: u64, sack: bool) {
        self.hole = sack.then_some(ack);
        let mut newest = None;
        while let Some(f) = self.in_flight.front() {
            if f.end > ack {
                break;
            }
            newest = Some(f.at);
            self.in_flight.pop_front();
        }
        // The newest segment an ACK covers is the one that made the receiver send it (delayed
        // ACKs are sent on the second segment), so its forwarding time gives eq. (1).
        if let Some(f) = newest {
            self.rtt.on_sample(f, now);
        }
        let obs = AckObservation {
            at: now,
            ack,
            window,
        };
        self.rate.set_slack(2 * self.mss);
        if self.last_ack.is_none_or(|l| ack >= l.ack) {
            self.rate.on_ack(obs);
            self.last_ack = Some(obs);
            self.replay();
        }
    }

    /// A retransmission passed through: samples in flight are ambiguous (Karn).
    pub fn forget_samples(&mut self) {
        for f in &mut self.in_flight {
            f.at = Instant::FAR_FUTURE;
        }
    }

    /// Receiver processing rate used by the forecast, bytes/s: the estimate, less the configured
    /// headroom while the receiver is backlogged (there it is the whole constraint, so
    /// measurement noise must not overrun it).
    fn forecast_rate(&self) -> f64 {
        let Some(r) = self.rate.rate() else {
            return 0.0;
        };
        let backlogged = self
            .last_ack
            .is_some_and(|a| self.rate.is_backlogged(a.window));
        if backlogged {
            r * self.headroom
        } else {
            r
        }
    }

    /// Half the gateway–receiver RTT (symmetric paths, assumption (c) of §4), seconds.
    fn half_rtt(&self) -> f64 {
        self.rtt.srtt().map_or(0.0, |d| d.as_secs_f64() / 2.0)
    }

    /// Rebuild the reader forecast from the last ACK: at receiver time `t_i − D/2` the
    /// application had read up to `edge − W` (W = the receiver's buffer, its largest window)
    /// and everything acknowledged had arrived; then every forwarded segment arrives `D/2` after
    /// it left.
    fn replay(&mut self) {
        let Some(last) = self.last_ack else { return };
        let w = self.rate.max_window();
        let half = self.half_rtt();
        let rate = self.forecast_rate();
        let s_i = last.at.as_secs_f64() - half;
        let readable = self.hole.unwrap_or(u64::MAX);
        self.reader = Reader {
            read: last.edge().saturating_sub(w) as f64,
            time: s_i,
            arrived: last.ack,
            last_arrival: s_i,
        };
        let mut prev = last.ack;
        for f in &self.in_flight {
            let t = if f.at == Instant::FAR_FUTURE {
                s_i
            } else {
                f.at.as_secs_f64() + half
            };
            let len = f.end.saturating_sub(prev);
            prev = f.end;
            self.reader.arrive(rate, t.max(s_i), f.end, len, readable);
        }
    }

    /// Record a forwarded segment ending at `end`.
    pub fn on_forwarded(&mut self, now: Instant, end: u64, len: u32) {
        let beyond = self.last_ack.is_none_or(|a| end > a.edge());
        let rate = self.forecast_rate();
        if beyond && rate > 0.0 {
            let gap = Duration::from_secs_f64(f64::from(len) / rate);
            self.pace_next = self.pace_next.max(now) + gap;
        }
        if end > self.fwd_nxt {
            self.fwd_nxt_before = self.fwd_nxt;
            self.fwd_nxt = end;
            if self.in_flight.len() < MAX_IN_FLIGHT_LOG {
                self.in_flight.push_back(Forwarded { end, at: now });
                let rate = self.forecast_rate();
                let t = now.as_secs_f64() + self.half_rtt();
                let len = end - self.fwd_nxt_before;
                let readable = self.hole.unwrap_or(u64::MAX);
                self.reader.arrive(rate, t, end, len, readable);
            }
        }
    }

    /// Eq. (4) turned round: the earliest instant at or after `now` at which a segment ending at
    /// `end` may leave so that it reaches the receiver inside its buffer, keeping `margin` bytes
    /// spare. `None`: not before the next ACK.
    ///
    /// B(t) ≥ 0 is checked against the forecast reader: the receiver accepts `end` at arrival
    /// time τ if `end + margin ≤ read(τ) + W`, where read(τ) grows at the estimated rate R but
    /// never past the bytes that have arrived (a starved application cannot read ahead).
    pub fn release_time(&self, now: Instant, end: u64, margin: u64) -> Option<Instant> {
        let last = self.last_ack?;
        // Inside the window the receiver has actually advertised: always safe.
        if end <= last.edge() {
            return Some(now);
        }
        let w = self.rate.max_window();
        let rate = self.forecast_rate();
        let need = (end + margin).saturating_sub(w);
        if need as f64 <= self.reader.read {
            return Some(now.max(self.pace_next));
        }
        // The reader can at most catch up with what has been sent before this segment.
        if need > self.reader.arrived || rate <= 0.0 {
            return None;
        }
        let tau = self.reader.time + (need as f64 - self.reader.read) / rate;
        let f = tau - self.half_rtt();
        let at = Instant::ZERO + Duration::from_secs_f64(f.max(0.0));
        // Round up by a nanosecond so the check at `at` passes.
        Some(now.max(at + Duration::from_nanos(1)).max(self.pace_next))
    }
}
