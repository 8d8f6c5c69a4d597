//! [`DamaLink`]: the MF-TDMA return link shared by many STs, as one [`Node`].
//!
//! Port i is ST i's return interface; everything leaves on port 0 at the gateway side.
//!
//! Timing, exactly (superframe k starts at k·T_sf, with T_sf = n_s × frame):
//!
//! 1. At the start of superframe k the NCC plan for k is computed from the requests sent at the
//!    start of superframe k − L (L = `response_superframes`; earlier: none) and laid out into
//!    slots ([`super::mftdma::layout`]).
//! 2. Then each ST's agent sends its request for k + L from its queue and its grant for k;
//!    a request is lost with probability `request_loss`.
//! 3. A granted slot starting at t carries up to one slot payload of the bytes that were queued
//!    before t (packets are a byte stream cut across slots; each packet costs its wire length
//!    plus `encap_overhead`). A packet whose last byte is in that slot is delivered at
//!    t + slot duration + `delay`.
//!
//! A packet arriving at the very instant a slot starts misses it (the burst is built before
//! the slot). Events are applied lazily by every input, in time order, so a late wake-up only
//! delays output. Per-ST queues are bounded in bytes (`queue_limit`); refused packets are
//! counted as queue drops.

use std::collections::VecDeque;

use super::controller::{
    allocate, Allocation, ControllerConfig, ControllerState, Request, TerminalLimits,
};
use super::mftdma::{layout, FrameConfig};
use super::terminal::TerminalAgent;
use super::DamaConfig;
use crate::link::LinkStats;
use crate::node::{Node, Packet, PortId, Transmit};
use crate::rand::Rng;
use crate::time::{Duration, Instant};

/// DAMA counters of one ST (the queue and delivery counters are in its [`LinkStats`]).
#[derive(Clone, Copy, Debug, Default, Eq, PartialEq)]
pub struct TerminalStats {
    /// Slots granted so far, by category (cumulative).
    pub granted: [u64; 4],
    /// Granted slots that carried at least one byte.
    pub slots_used: u64,
    /// Request messages sent (one per superframe with a non-zero RBDC or VBDC part).
    pub requests_sent: u64,
    /// Of those, lost on the way to the NCC.
    pub requests_lost: u64,
    /// Slots asked for by VBDC requests (cumulative).
    pub vbdc_requested: u64,
}

/// One ST in one superframe: the row of `dama.csv`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SuperframeRecord {
    /// Superframe index k.
    pub superframe: u64,
    /// Its start.
    pub time: Instant,
    /// ST index (input port).
    pub terminal: usize,
    /// Slots granted for this superframe.
    pub granted: Allocation,
    /// Bytes queued at its start.
    pub queue_bytes: u64,
    /// The request sent at its start (for superframe k + L).
    pub request: Request,
    /// Whether that request was lost.
    pub lost: bool,
}

#[derive(Clone, Debug)]
struct Queued {
    pkt: Packet,
    /// Bytes of this packet (with encapsulation) still to send.
    remaining: u64,
}

#[derive(Clone, Debug, Default)]
struct StQueue {
    q: VecDeque<Queued>,
    bytes: u64,
    since: Instant,
}

/// The shared DVB-RCS return link with its NCC (see the module documentation).
#[derive(Clone, Debug)]
pub struct DamaLink {
    frame: FrameConfig,
    payload: u64,
    slot_dur: Duration,
    delay: Duration,
    overhead: u32,
    queue_limit: u64,
    l: usize,
    loss: f64,
    rng: Rng,
    controller: ControllerConfig,
    limits: Vec<TerminalLimits>,
    state: ControllerState,
    agents: Vec<TerminalAgent>,
    queues: Vec<StQueue>,
    link_stats: Vec<LinkStats>,
    dama_stats: Vec<TerminalStats>,
    /// Requests on their way, one vector per superframe, oldest first (at most L).
    in_transit: VecDeque<Vec<Option<Request>>>,
    /// Next superframe whose start is still to be processed.
    next_sf: u64,
    plan: Vec<Allocation>,
    /// This superframe's slots: (start, ST), in time order.
    slots: Vec<(Instant, usize)>,
    cursor: usize,
    delay_line: VecDeque<(Instant, Packet, usize)>,
    record: bool,
    records: Vec<SuperframeRecord>,
}

impl DamaLink {
    /// A return link for `terminals` STs as `config` says; request losses draw from `rng`.
    /// Check `config` with [`DamaConfig::validate`] first.
    pub fn new(config: &DamaConfig, terminals: usize, rng: Rng) -> Self {
        let frame = config.frame_config();
        let n_s = frame.frames_per_superframe;
        let payload = frame.slot_payload();
        let agent = TerminalAgent::new(&config.terminal, n_s, payload, config.response_superframes);
        Self {
            frame,
            payload: u64::from(payload.max(1)),
            slot_dur: frame.slot_duration(),
            delay: config.delay,
            overhead: config.encap_overhead,
            queue_limit: config.queue_limit.0,
            l: config.response_superframes.max(1) as usize,
            loss: config.request_loss,
            rng,
            controller: config.controller,
            limits: vec![config.terminal.limits(n_s); terminals],
            state: ControllerState::new(terminals),
            agents: vec![agent; terminals],
            queues: vec![StQueue::default(); terminals],
            link_stats: vec![LinkStats::default(); terminals],
            dama_stats: vec![TerminalStats::default(); terminals],
            in_transit: VecDeque::new(),
            next_sf: 0,
            plan: vec![Allocation::default(); terminals],
            slots: Vec::new(),
            cursor: 0,
            delay_line: VecDeque::new(),
            record: config.record,
            records: Vec::new(),
        }
    }

    /// Number of STs (input ports).
    pub fn terminals(&self) -> usize {
        self.queues.len()
    }

    /// The frame structure.
    pub fn frame(&self) -> &FrameConfig {
        &self.frame
    }

    /// Bytes a slot carries.
    pub fn slot_payload(&self) -> u64 {
        self.payload
    }

    /// The plan in force for the current superframe.
    pub fn plan(&self) -> &[Allocation] {
        &self.plan
    }

    /// Bytes waiting at ST `st` (with encapsulation, minus what already left).
    pub fn queue_len_bytes(&self, st: usize) -> u64 {
        self.queues.get(st).map_or(0, |q| q.bytes)
    }

    /// Packets waiting at ST `st` (a packet partly sent counts).
    pub fn queue_len_packets(&self, st: usize) -> usize {
        self.queues.get(st).map_or(0, |q| q.q.len())
    }

    /// ST `st`'s queue and delivery counters, time-weighted ones brought up to `now`; `busy_ns`
    /// is the time of the slots it used.
    pub fn link_stats_at(&self, st: usize, now: Instant) -> LinkStats {
        let (Some(s), Some(q)) = (self.link_stats.get(st), self.queues.get(st)) else {
            return LinkStats::default();
        };
        let mut s = *s;
        let dt = u128::from(now.saturating_since(q.since).as_nanos());
        s.queue_packet_ns += q.q.len() as u128 * dt;
        s.queue_byte_ns += u128::from(q.bytes) * dt;
        s
    }

    /// ST `st`'s DAMA counters.
    pub fn terminal_stats(&self, st: usize) -> TerminalStats {
        self.dama_stats.get(st).copied().unwrap_or_default()
    }

    /// Keep (or stop keeping) one [`SuperframeRecord`] per ST per superframe; a driver that
    /// does not drain them should switch this off.
    pub fn set_recording(&mut self, on: bool) {
        self.record = on;
        if !on {
            self.records = Vec::new();
        }
    }

    /// Take the superframe records kept so far (empty when recording is off).
    pub fn drain_records(&mut self) -> Vec<SuperframeRecord> {
        std::mem::take(&mut self.records)
    }

    /// Bytes delivered by all STs together.
    pub fn delivered_bytes(&self) -> u64 {
        self.link_stats.iter().map(|s| s.delivered_bytes).sum()
    }

    fn account(&mut self, st: usize, t: Instant) {
        let q = &mut self.queues[st];
        let s = &mut self.link_stats[st];
        let dt = u128::from(t.saturating_since(q.since).as_nanos());
        s.queue_packet_ns += q.q.len() as u128 * dt;
        s.queue_byte_ns += u128::from(q.bytes) * dt;
        q.since = q.since.max(t);
    }

    /// Apply every slot and superframe start at or before `now`, in time order.
    fn advance(&mut self, now: Instant) {
        loop {
            let sf_start = self.frame.superframe_start(self.next_sf);
            match self.slots.get(self.cursor) {
                Some(&(t, st)) if t <= now && t < sf_start => {
                    self.cursor += 1;
                    self.serve_slot(t, st);
                }
                _ if sf_start <= now => self.start_superframe(sf_start),
                _ => break,
            }
        }
    }

    fn serve_slot(&mut self, t: Instant, st: usize) {
        if self.queues[st].q.is_empty() {
            return;
        }
        self.account(st, t);
        let due = t + self.slot_dur + self.delay;
        let mut room = self.payload;
        let q = &mut self.queues[st];
        while room > 0 {
            let Some(head) = q.q.front_mut() else { break };
            let take = room.min(head.remaining);
            head.remaining -= take;
            room -= take;
            q.bytes -= take;
            if head.remaining == 0 {
                if let Some(done) = q.q.pop_front() {
                    self.delay_line.push_back((due, done.pkt, st));
                }
            }
        }
        self.dama_stats[st].slots_used += 1;
        self.link_stats[st].busy_ns += self.slot_dur.as_nanos();
    }

    fn start_superframe(&mut self, t: Instant) {
        let k = self.next_sf;
        self.next_sf += 1;
        let n = self.queues.len();
        let reqs = if self.in_transit.len() >= self.l {
            self.in_transit.pop_front().unwrap_or_else(|| vec![None; n])
        } else {
            vec![None; n]
        };
        let (plan, state) = allocate(
            &self.controller,
            &self.limits,
            &reqs,
            self.frame.slots_per_superframe(),
            &self.state,
        );
        self.state = state;
        let totals: Vec<u32> = plan.iter().map(Allocation::total).collect();
        self.slots.clear();
        self.slots.extend(
            layout(&totals, self.frame.slots_per_superframe())
                .into_iter()
                .map(|(pos, st)| (self.frame.slot_start(t, pos), st)),
        );
        self.cursor = 0;
        let mut sent = Vec::with_capacity(n);
        for (i, a) in plan.iter().enumerate() {
            let d = &mut self.dama_stats[i];
            for (c, g) in [a.cra, a.rbdc, a.vbdc, a.fca].into_iter().enumerate() {
                d.granted[c] += u64::from(g);
            }
            let queued = self.queues[i].bytes;
            let r = self.agents[i].request(queued, a);
            let mut lost = false;
            if r.rbdc > 0 || r.vbdc > 0 || r.absolute {
                d.requests_sent += 1;
                d.vbdc_requested += u64::from(r.vbdc);
                if self.loss > 0.0 && self.rng.chance(self.loss) {
                    lost = true;
                    d.requests_lost += 1;
                }
            }
            if self.record {
                self.records.push(SuperframeRecord {
                    superframe: k,
                    time: t,
                    terminal: i,
                    granted: *a,
                    queue_bytes: queued,
                    request: r,
                    lost,
                });
            }
            sent.push(if lost { None } else { Some(r) });
        }
        self.in_transit.push_back(sent);
        self.plan = plan;
    }
}

impl Node for DamaLink {
    /// A packet from ST `port` (a port with no ST is ignored: the simulator never uses one).
    fn handle_packet(&mut self, now: Instant, port: PortId, pkt: Packet) {
        self.advance(now);
        let st = usize::from(port.0);
        if st >= self.queues.len() {
            return;
        }
        self.link_stats[st].arrivals += 1;
        let size = crate::link::frame_len(pkt.wire_len(), self.overhead);
        if self.queues[st].bytes + size > self.queue_limit {
            self.link_stats[st].queue_drops += 1;
            return;
        }
        self.account(st, now);
        let q = &mut self.queues[st];
        q.q.push_back(Queued {
            pkt,
            remaining: size,
        });
        q.bytes += size;
        let s = &mut self.link_stats[st];
        s.max_queue_packets = s.max_queue_packets.max(q.q.len() as u64);
        s.max_queue_bytes = s.max_queue_bytes.max(q.bytes);
    }

    fn handle_timeout(&mut self, now: Instant) {
        self.advance(now);
    }

    fn poll_transmit(&mut self, now: Instant) -> Option<Transmit> {
        self.advance(now);
        if self.delay_line.front()?.0 > now {
            return None;
        }
        let (_, pkt, st) = self.delay_line.pop_front()?;
        let s = &mut self.link_stats[st];
        s.delivered_packets += 1;
        s.delivered_bytes += pkt.wire_len();
        Some(Transmit {
            port: PortId(0),
            pkt,
        })
    }

    fn drop_counts(&self) -> [u64; crate::DropReason::ALL.len()] {
        let mut c = [0; crate::DropReason::ALL.len()];
        c[crate::DropReason::QueueFull as usize] =
            self.link_stats.iter().map(|s| s.queue_drops).sum();
        c
    }

    fn poll_timeout(&self) -> Option<Instant> {
        let sf = self.frame.superframe_start(self.next_sf);
        let slot = self.slots[self.cursor.min(self.slots.len())..]
            .iter()
            .find(|(_, st)| !self.queues[*st].q.is_empty())
            .map(|&(t, _)| t);
        let due = self.delay_line.front().map(|d| d.0);
        [Some(sf), slot, due].into_iter().flatten().min()
    }
}

#[cfg(test)]
mod tests;
