//! The simplex point-to-point link: queue → serialiser → error model → propagation delay.
//!
//! Timing, exactly: a packet that finds the serialiser idle and the queue empty starts at its
//! arrival instant; one that waits starts at the very instant the previous packet's last bit
//! left (the scheduled finish, not the instant the driver happened to call us), so back-to-back
//! packets leave exactly `tx_time` apart. A packet is corrupted or not when its serialisation
//! completes, and is delivered `delay` later. All events at one instant are applied
//! "completions first": a packet arriving at the instant the serialiser frees a queue slot
//! finds that slot free, whichever order the driver feeds the two in. With
//! [`SameInstant::ArrivalsFirst`] (ns-2's order) a drop-tail queue instead judges such an
//! arrival as if the head were still waiting, again whichever order the two come in.
//!
//! Serialisation completions are applied lazily by every input (`handle_*`, `poll_transmit`,
//! `set_rate`), so a driver that wakes us late changes nothing but the instant packets come out.
//! Delivered packets wait in one FIFO delay line (the delay is constant, so they leave in
//! order): no timer or allocation per packet.
//!
//! For the same reason [`Node::poll_timeout`] asks only for deliveries: the packet on the
//! serialiser cannot come out before `finish + delay`, and nothing outside sees a completion
//! until then. A driver that reads the queue or the counters between inputs must first bring
//! the link up to that instant with [`Link::settle`] (the simulator does, before sampling).

use std::collections::VecDeque;

use super::config::{frame_len, Compression, LinkConfig, SameInstant};
use super::error_model::ErrorModel;
use super::queue::{AnyQueue, QueueDisc, QueuedPacket};
use super::schedule::Schedules;
use super::stats::LinkStats;
use crate::node::{DropLog, DropReason, Dropped, Node, Packet, PortId, Transmit};
use crate::rand::Rng;
use crate::time::{Bitrate, Duration, Instant};

/// A simplex link with a rate, a propagation delay, a queue discipline and an error model.
///
/// Ports: packets to send enter on any port (port 0 by convention) and leave on port 0 at the
/// far end.
///
/// - Getters: [`stats`](Self::stats), [`stats_at`](Self::stats_at),
///   [`queue_len_packets`](Self::queue_len_packets), [`queue_len_bytes`](Self::queue_len_bytes),
///   [`in_flight`](Self::in_flight), [`is_busy`](Self::is_busy), [`rate`](Self::rate),
///   [`delay`](Self::delay), and the run figures [`utilisation`](Self::utilisation),
///   [`mean_queue_packets`](Self::mean_queue_packets),
///   [`mean_queue_bytes`](Self::mean_queue_bytes).
/// - Inputs: [`Node::handle_packet`], [`Node::handle_timeout`].
/// - Commands: [`set_rate`](Self::set_rate).
/// - Outputs: [`Node::poll_transmit`], [`Node::poll_timeout`].
///
/// Call order (the [`Node`] contract): after any input or command, drain `poll_transmit` until
/// `None`, then read `poll_timeout`, and call `handle_timeout` at (or after) that instant.
#[derive(Clone, Debug)]
// Laid out in declaration order, what every packet reads first: with a host pair per flow a
// link is cold at each packet's arrival, and each of its cache lines touched is a miss of its
// own (the compiler's order spread the per-packet fields over about twice as many lines).
// The optional mechanisms are boxed for the same reason: a plain link only asks whether
// they are there.
#[repr(C)]
pub struct Link {
    serialising: Option<Serialising>,
    rate: Bitrate,
    delay: Duration,
    /// Instant up to which the queue integrals in `stats` are summed.
    queue_since: Instant,
    /// An outage holds the queue until then.
    held_until: Option<Instant>,
    /// Channel release after idle time, when configured (see [`super::channel`]).
    channel: Option<Box<super::channel::Channel>>,
    /// Link-layer retransmission, when configured (see [`super::arq`]).
    arq: Option<Box<Arq>>,
    /// Rate, delay and loss schedules and outages, when configured (see [`super::schedule`]).
    schedules: Option<Box<Schedules>>,
    /// RFC 1144 header compression, when configured (see [`Vj`]).
    vj: Option<Box<Vj>>,
    /// Framing bytes added to every packet on the line (see [`super::frame_len`]).
    encap_overhead: u32,
    delay_line: VecDeque<InFlight>,
    queue: AnyQueue,
    errors: ErrorModel,
    stats: LinkStats,
    /// Drops not yet reported through [`Node::poll_drop`].
    drops: DropLog,
    /// With [`SameInstant::ArrivalsFirst`]: the instant a completion last moved the head of
    /// the queue onto the serialiser, and that packet's length (bytes).
    head_left: Option<(Instant, u64)>,
    arrivals_first: bool,
}

/// Link-layer ARQ state: frames whose NAK is under way, and the frame numbering that keeps
/// in-order delivery.
#[derive(Clone, Debug)]
struct Arq {
    max_retries: u32,
    feedback_delay: Duration,
    in_order: bool,
    /// Corrupted frames, by the instant their retransmission may start (FIFO: the feedback
    /// delay is the same for all).
    pending: VecDeque<Pending>,
    /// Number of the next frame sent for the first time.
    next_frame: u64,
    /// Delay-line entries that hold the place of a frame being retransmitted (in order).
    placeholders: usize,
}

#[derive(Clone, Debug)]
struct Pending {
    ready_at: Instant,
    entry: QueuedPacket,
    frame: u64,
    /// Retransmissions so far, this one included once it starts.
    tries: u32,
}

/// Header compression on the link: the compressor runs when a packet starts serialisation (as a
/// SLIP driver compresses at dequeue), so the serialiser and the error model see the compressed
/// size; the decompressor runs when serialisation completes, in order, and hears of every
/// corrupted packet (RFC 1144 §4: the framing layer reports the error).
#[derive(Clone, Debug)]
struct Vj {
    compressor: crate::vj::Compressor,
    decompressor: crate::vj::Decompressor,
}

/// The packet on the serialiser.
#[derive(Clone, Debug)]
struct Serialising {
    entry: QueuedPacket,
    start: Instant,
    /// When its last bit leaves.
    finish: Instant,
    /// With ARQ: the frame's number and how many times it was sent before.
    frame: u64,
    tries: u32,
}

/// A packet propagating to the far end.
#[derive(Clone, Debug)]
struct InFlight {
    due: Instant,
    pkt: Packet,
    /// Bytes it occupied on the link (the compressed size under header compression).
    wire_len: u64,
    /// With in-order ARQ: the frame's number, and false while this entry only holds the place
    /// of a frame being retransmitted.
    frame: u64,
    ready: bool,
}

impl Link {
    /// A link as `config` describes; its error model draws from `rng` (give each link its own,
    /// e.g. [`Rng::for_component`] with the link's name).
    ///
    /// Check `config` with [`LinkConfig::validate`] first: out-of-range values do not panic
    /// here, but a zero rate never sends and probabilities are clamped to [0, 1].
    pub fn new(config: &LinkConfig, rng: Rng) -> Self {
        let schedules = Schedules::new(config, &rng).map(Box::new);
        Self {
            rate: config.rate,
            delay: config.delay,
            encap_overhead: config.encap_overhead,
            queue: AnyQueue::from_config(&config.queue),
            errors: ErrorModel::new(&config.error, rng),
            schedules,
            held_until: None,
            serialising: None,
            delay_line: VecDeque::new(),
            queue_since: Instant::ZERO,
            stats: LinkStats::default(),
            drops: DropLog::default(),
            head_left: None,
            arrivals_first: config.same_instant == SameInstant::ArrivalsFirst,
            channel: config
                .channel_release
                .map(|c| Box::new(super::channel::Channel::new(c))),
            arq: config.arq.as_ref().map(|a| {
                Box::new(Arq {
                    max_retries: a.max_retries,
                    feedback_delay: a.feedback_delay.unwrap_or(config.delay.saturating_mul(2)),
                    in_order: a.in_order,
                    pending: VecDeque::new(),
                    next_frame: 0,
                    placeholders: 0,
                })
            }),
            vj: match config.compression {
                Compression::None => None,
                Compression::Vj => Some(Box::new(Vj {
                    compressor: crate::vj::Compressor::new(crate::vj::DEFAULT_SLOTS),
                    decompressor: crate::vj::Decompressor::new(crate::vj::DEFAULT_SLOTS),
                })),
            },
        }
    }

    /// Number what a keyed ACK compaction queue authenticates from `epoch · 2³² + 1` (the
    /// daemons pass their start time, so a restarted compactor is not taken for a replay);
    /// other queues are unchanged.
    pub fn with_epoch(mut self, epoch: u32) -> Self {
        self.queue.set_epoch(epoch);
        self
    }

    /// Change the serialisation rate at `now` (e.g. a new DAMA grant).
    ///
    /// The new rate applies to every packet whose serialisation starts at or after `now`; a
    /// packet already on the serialiser keeps its finish time. A packet that started at exactly
    /// `now` is re-timed, so the outcome does not depend on whether the driver delivers a packet
    /// or this command first. A zero rate pauses the link after the current packet (that packet
    /// keeps its old rate); a later non-zero rate resumes it at that instant. On a link paced by
    /// a `rate_trace` only the pause has an effect: the trace sets the pace.
    pub fn set_rate(&mut self, now: Instant, rate: Bitrate) {
        self.advance(now);
        self.rate = rate;
        let traced = self.schedules.as_ref().is_some_and(|s| s.has_rate_trace());
        match &mut self.serialising {
            Some(s) if s.start == now && rate.bps() > 0 && !traced => {
                let len = frame_len(s.entry.pkt.wire_len(), self.encap_overhead);
                s.finish = match &mut self.schedules {
                    Some(sch) => sch.finish(now, len, rate),
                    None => now + rate.tx_time(len),
                };
            }
            Some(_) => {}
            None => self.start_next(now),
        }
    }

    /// Counters as of the last input (queue integrals summed up to the last queue change, busy
    /// time up to the last completed packet). For figures over a run, use
    /// [`stats_at`](Self::stats_at).
    pub fn stats(&self) -> LinkStats {
        LinkStats {
            removed: self.queue.removed(),
            ..self.stats
        }
    }

    /// Counters with the time-weighted ones (queue integrals, busy time) brought up to `now`.
    ///
    /// Exact when the driver has handled every event before `now` (the [`Node`] contract).
    pub fn stats_at(&self, now: Instant) -> LinkStats {
        let mut s = self.stats();
        let dt = u128::from(now.saturating_since(self.queue_since).as_nanos());
        s.queue_packet_ns += self.queue.len_packets() as u128 * dt;
        s.queue_byte_ns += u128::from(self.queue.len_bytes()) * dt;
        if let Some(ser) = &self.serialising {
            s.busy_ns += now.min(ser.finish).saturating_since(ser.start).as_nanos();
        }
        s
    }

    /// Apply every serialisation completion at or before `now` (no input, no output): the
    /// queue, the serialiser and the counters are then as a link woken at each completion
    /// would have them. Call before reading them between inputs.
    pub fn settle(&mut self, now: Instant) {
        self.advance(now);
    }

    /// Fraction of [0, `now`] the serialiser was busy.
    pub fn utilisation(&self, now: Instant) -> f64 {
        self.stats_at(now).utilisation(now)
    }

    /// Time-average number of packets waiting over [0, `now`] (not counting the one being
    /// serialised).
    pub fn mean_queue_packets(&self, now: Instant) -> f64 {
        self.stats_at(now).mean_queue_packets(now)
    }

    /// Time-average number of bytes waiting over [0, `now`].
    pub fn mean_queue_bytes(&self, now: Instant) -> f64 {
        self.stats_at(now).mean_queue_bytes(now)
    }

    /// Packets waiting in the queue (not the one being serialised).
    pub fn queue_len_packets(&self) -> usize {
        self.queue.len_packets()
    }

    /// Bytes waiting in the queue.
    pub fn queue_len_bytes(&self) -> u64 {
        self.queue.len_bytes()
    }

    /// Packets propagating (serialised, not corrupted, not yet delivered; with in-order ARQ,
    /// frames held behind a missing one included).
    pub fn in_flight(&self) -> usize {
        self.delay_line.len() - self.arq.as_ref().map_or(0, |a| a.placeholders)
    }

    /// Corrupted frames awaiting their link-layer retransmission (0 without ARQ).
    pub fn arq_pending(&self) -> usize {
        self.arq.as_ref().map_or(0, |a| a.pending.len())
    }

    /// When the next link-layer retransmission may start, if one waits.
    fn arq_ready_at(&self) -> Option<Instant> {
        self.arq.as_ref()?.pending.front().map(|p| p.ready_at)
    }

    /// True while a packet is on the serialiser.
    pub fn is_busy(&self) -> bool {
        self.serialising.is_some()
    }

    /// The current serialisation rate.
    pub fn rate(&self) -> Bitrate {
        self.rate
    }

    /// Channel setups so far (links with `channel_release` only; 0 otherwise).
    pub fn channel_setups(&self) -> u64 {
        self.channel.as_ref().map_or(0, |c| c.setups())
    }

    /// The propagation delay.
    pub fn delay(&self) -> Duration {
        self.delay
    }

    /// The queue discipline (to inspect what waits).
    pub fn queue(&self) -> &AnyQueue {
        &self.queue
    }

    /// Apply every serialisation completion at or before `now`, in order, each at its own
    /// scheduled instant.
    ///
    /// Called on every input and every `poll_transmit` (about three times per packet), and
    /// mostly with nothing to do: that case is decided here, inlined, without the call into
    /// [`Link::advance_slow`] and its register spills.
    #[inline]
    fn advance(&mut self, now: Instant) {
        let plain = self.channel.is_none() && self.held_until.is_none() && self.arq.is_none();
        if plain && self.serialising.as_ref().is_none_or(|s| s.finish > now) {
            return;
        }
        self.advance_slow(now);
    }

    /// [`Link::advance`] when a completion, a channel setup, an outage end or an ARQ
    /// retransmission may be due.
    #[inline(never)]
    fn advance_slow(&mut self, now: Instant) {
        // A channel setup that has completed lets the head of the queue go at that instant.
        if let Some(u) = self.channel.as_ref().and_then(|c| c.ready_at()) {
            if u <= now && self.serialising.is_none() {
                self.start_next(u);
            }
        }
        // So does the end of an outage.
        if let Some(u) = self.held_until.filter(|&u| u <= now) {
            self.held_until = None;
            if self.serialising.is_none() {
                self.start_next(u);
            }
        }
        loop {
            if self.serialising.is_none() {
                // An idle serialiser starts a retransmission the instant its NAK is back.
                if let Some(r) = self.arq_ready_at().filter(|&r| r <= now) {
                    self.start_next(r);
                }
            }
            let Some(done) = self.serialising.take_if(|s| s.finish <= now) else {
                break;
            };
            let t = done.finish;
            self.stats.busy_ns += t.saturating_since(done.start).as_nanos();
            if let Some(c) = &mut self.channel {
                c.on_finish(t);
            }
            let (frame, tries) = (done.frame, done.tries);
            let wire_len = done.entry.pkt.wire_len();
            // A retransmission is not an arrival: the `List` model never names index 0.
            let arrival = if tries > 0 { 0 } else { done.entry.arrival };
            // Framing bits are sent, so a bit error there corrupts the frame as well.
            let on_line = frame_len(wire_len, self.encap_overhead);
            let corrupted = self.errors.is_corrupted(arrival, on_line);
            let lost = corrupted || self.schedules.as_mut().is_some_and(|s| s.is_lost(t));
            let entry = match (&mut self.arq, lost) {
                (Some(arq), true) if tries < arq.max_retries => {
                    if arq.in_order && tries == 0 {
                        self.delay_line.push_back(InFlight {
                            due: t,
                            pkt: done.entry.pkt.clone(),
                            wire_len,
                            frame,
                            ready: false,
                        });
                        arq.placeholders += 1;
                    }
                    arq.pending.push_back(Pending {
                        ready_at: t + arq.feedback_delay,
                        entry: done.entry,
                        frame,
                        tries,
                    });
                    None
                }
                (Some(arq), true) => {
                    self.stats.arq_given_up += u64::from(tries > 0);
                    if arq.in_order && tries > 0 {
                        if let Some(i) = self.delay_line.iter().position(|f| f.frame == frame) {
                            self.delay_line.remove(i);
                            arq.placeholders -= 1;
                        }
                    }
                    Some(done.entry)
                }
                _ => Some(done.entry),
            };
            let Some(QueuedPacket { mut pkt, .. }) = entry else {
                self.start_next_after_completion(t);
                continue;
            };
            if lost {
                self.stats.error_drops += 1;
                self.drops.push(Dropped::of(&pkt, DropReason::LineError));
                if let Some(vj) = &mut self.vj {
                    vj.decompressor.on_line_error();
                }
            } else if self
                .vj
                .as_mut()
                .is_some_and(|vj| vj.decompressor.decompress_packet(&mut pkt).is_err())
            {
                self.stats.compression_drops += 1;
                self.drops
                    .push(Dropped::of(&pkt, DropReason::Decompression));
            } else {
                let due = match &mut self.schedules {
                    Some(s) => s.due(t, self.delay),
                    None => t + self.delay,
                };
                let placeholder = self
                    .arq
                    .as_mut()
                    .filter(|a| a.in_order && tries > 0)
                    .and_then(|a| {
                        // The frame's place, kept since its first transmission.
                        let i = self.delay_line.partition_point(|f| f.frame < frame);
                        let f = self.delay_line.get_mut(i).filter(|f| f.frame == frame)?;
                        a.placeholders -= 1;
                        Some(f)
                    });
                match placeholder {
                    Some(f) => {
                        *f = InFlight {
                            due,
                            pkt,
                            wire_len,
                            frame,
                            ready: true,
                        };
                    }
                    None => self.delay_line.push_back(InFlight {
                        due,
                        pkt,
                        wire_len,
                        frame,
                        ready: true,
                    }),
                }
            }
            self.start_next_after_completion(t);
            if self.serialising.is_none() {
                if let Some(s) = &mut self.schedules {
                    s.on_idle();
                }
            }
        }
    }

    /// [`Link::start_next`] at the completion instant `t`; with arrivals first, remember a
    /// head that left the queue then, for an arrival at the same instant.
    #[inline]
    fn start_next_after_completion(&mut self, t: Instant) {
        if !self.arrivals_first {
            return self.start_next(t);
        }
        let (packets, bytes) = (self.queue.len_packets(), self.queue.len_bytes());
        self.start_next(t);
        if self.queue.len_packets() < packets {
            self.head_left = Some((t, bytes - self.queue.len_bytes()));
        }
    }

    /// Put the head of the queue on the idle serialiser at `t`, unless paused by a zero rate.
    #[inline]
    fn start_next(&mut self, t: Instant) {
        if self.rate.bps() == 0 {
            return;
        }
        if self.queue.len_packets() > 0 && self.channel.as_mut().is_some_and(|c| c.holds(t)) {
            return;
        }
        if let Some(s) = &mut self.schedules {
            if self.queue.len_packets() > 0 && !s.has_rate_trace() {
                if let Some(end) = s.outage_end(t) {
                    self.held_until = Some(end);
                    return;
                }
            }
        }
        if let Some(arq) = self.arq.as_mut() {
            if arq.pending.front().is_some_and(|p| p.ready_at <= t) {
                if let Some(p) = arq.pending.pop_front() {
                    self.stats.arq_retransmissions += 1;
                    let len = frame_len(p.entry.pkt.wire_len(), self.encap_overhead);
                    let finish = match &mut self.schedules {
                        Some(s) => s.finish(t, len, self.rate),
                        None => t + self.rate.tx_time(len),
                    };
                    self.serialising = Some(Serialising {
                        entry: p.entry,
                        start: t,
                        finish,
                        frame: p.frame,
                        tries: p.tries + 1,
                    });
                    return;
                }
            }
        }
        self.account_queue(t);
        if let Some(entry) = self.queue.dequeue(t) {
            self.serialise(t, entry);
        }
    }

    /// Put `entry`, just taken from the queue, on the idle serialiser at `t`.
    #[inline]
    fn serialise(&mut self, t: Instant, mut entry: QueuedPacket) {
        if let Some(vj) = &mut self.vj {
            vj.compressor.compress_packet(&mut entry.pkt);
        }
        let len = frame_len(entry.pkt.wire_len(), self.encap_overhead);
        let finish = match &mut self.schedules {
            Some(s) => s.finish(t, len, self.rate),
            None => t + self.rate.tx_time(len),
        };
        let frame = self.arq.as_mut().map_or(0, |a| {
            a.next_frame += 1;
            a.next_frame
        });
        self.serialising = Some(Serialising {
            entry,
            start: t,
            finish,
            frame,
            tries: 0,
        });
    }

    /// Sum the queue integrals up to `t`; call before every change of the queue.
    #[inline]
    fn account_queue(&mut self, t: Instant) {
        let dt = u128::from(t.saturating_since(self.queue_since).as_nanos());
        self.stats.queue_packet_ns += self.queue.len_packets() as u128 * dt;
        self.stats.queue_byte_ns += u128::from(self.queue.len_bytes()) * dt;
        self.queue_since = self.queue_since.max(t);
    }
}

impl Node for Link {
    /// A packet to send entered the link. It is counted as arrival number
    /// `stats().arrivals` (the index the `List` error model uses), offered to the queue
    /// discipline, and put straight on the serialiser if that is idle.
    #[inline]
    fn handle_packet(&mut self, now: Instant, _port: PortId, pkt: Packet) {
        self.advance(now);
        self.stats.arrivals += 1;
        let entry = QueuedPacket {
            pkt,
            arrival: self.stats.arrivals,
            enqueued_at: now,
        };
        self.account_queue(now);
        // ns-2's order: judged against the queue as it was before a head left at this instant.
        if let Some((_, bytes)) = self.head_left.filter(|&(t, _)| t == now) {
            if self.queue.admits_before_departure(&entry, bytes) == Some(false) {
                self.stats.queue_drops += 1;
                self.drops
                    .push(Dropped::of(&entry.pkt, DropReason::QueueFull));
                return;
            }
        }
        // An idle, plain link with an empty drop-tail queue: the packet would go in and come
        // straight out (what `start_next` does, without the queue's push and pop). Most
        // arrivals on a link that is not the bottleneck are of this kind.
        let idle = self.serialising.is_none()
            && self.rate.bps() > 0
            && self.channel.is_none()
            && self.schedules.is_none()
            && self.held_until.is_none()
            && self.arq.is_none();
        if idle {
            match self.queue.admits_straight_through(&entry) {
                Some(true) => return self.serialise(now, entry),
                Some(false) => {
                    self.stats.queue_drops += 1;
                    self.drops
                        .push(Dropped::of(&entry.pkt, DropReason::QueueFull));
                    return;
                }
                None => {}
            }
        }
        if let Err(refused) = self.queue.enqueue(now, entry) {
            self.stats.queue_drops += 1;
            self.drops
                .push(Dropped::of(&refused.pkt, DropReason::QueueFull));
        }
        if self.serialising.is_none() {
            self.start_next(now);
        }
        // After the possible immediate start: a packet that never waited does not count.
        let s = &mut self.stats;
        s.max_queue_packets = s.max_queue_packets.max(self.queue.len_packets() as u64);
        s.max_queue_bytes = s.max_queue_bytes.max(self.queue.len_bytes());
    }

    #[inline]
    fn handle_timeout(&mut self, now: Instant) {
        self.advance(now);
    }

    #[inline]
    fn poll_transmit(&mut self, now: Instant) -> Option<Transmit> {
        self.advance(now);
        let front = self.delay_line.front()?;
        if !front.ready || front.due > now {
            return None;
        }
        let InFlight { pkt, wire_len, .. } = self.delay_line.pop_front()?;
        self.stats.delivered_packets += 1;
        self.stats.delivered_bytes += wire_len;
        Some(Transmit {
            port: PortId(0),
            pkt,
        })
    }

    #[inline]
    fn poll_timeout(&self) -> Option<Instant> {
        // The packet on the serialiser comes out `delay` after its last bit; its completion
        // is applied then (or by an earlier input), not woken for. Under a delay schedule
        // the delay is only known at the completion (it may have dropped): wake for it then.
        let finish = self.serialising.as_ref().map(|ser| match &self.schedules {
            Some(_) => ser.finish,
            None => ser.finish + self.delay,
        });
        let due = self.delay_line.front().filter(|f| f.ready).map(|f| f.due);
        let setup = self.channel.as_ref().and_then(|c| c.ready_at());
        let retransmission = self.arq_ready_at().filter(|_| self.serialising.is_none());
        // Pairwise rather than `[..].into_iter().flatten().min()`: this runs after every
        // event at the link, and the iterator did not fold away.
        earliest(
            earliest(earliest(finish, due), earliest(setup, self.held_until)),
            retransmission,
        )
    }

    #[inline]
    fn poll_drop(&mut self) -> Option<Dropped> {
        self.drops.pop()
    }

    fn drop_counts(&self) -> [u64; crate::DropReason::ALL.len()] {
        self.drops.counts()
    }
}

/// The earlier of two optional instants (`None` is "never").
#[inline]
fn earliest(a: Option<Instant>, b: Option<Instant>) -> Option<Instant> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.min(y)),
        (x, y) => x.or(y),
    }
}

#[cfg(test)]
mod tests;
