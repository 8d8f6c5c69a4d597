//! The packet path of a daemon, with no clock and no descriptors: bytes that arrived on port
//! `i` go through that port's shaper (if any) and then the middlebox; what the middlebox sends
//! comes out of [`Pipeline::poll_output`]. The run loop drives it with CLOCK_MONOTONIC; tests
//! drive it with hand-made times, exactly as the emulator's engine is driven.
//!
//! ```text
//!  port i bytes ─▶ parse ─▶ [shaper i: rate + queue (ACK suppression/filtering/compaction)]
//!                              ─▶ middlebox (port i) ─▶ poll_output ─▶ TUN ─▶ kernel routing
//! ```

use std::collections::VecDeque;

use satpep_proto::link::Link;
use satpep_proto::middlebox::Middlebox;
use satpep_proto::node::DropReason;
use satpep_proto::rand::Rng;
use satpep_proto::{Instant, Node, Packet, PortId};

use crate::config::DaemonConfig;
use crate::orphans::{Ends, Orphans};

/// Random stream numbers (the middlebox's, then one per shaper), as a scenario would name them.
const STREAM_MIDDLEBOX: u64 = 1;
const STREAM_SHAPER: u64 = 16;

/// Counters of the packet path (beyond the mechanism's own).
#[derive(Clone, Debug, Default, Eq, PartialEq)]
pub struct PathCounters {
    /// Packets read, per port.
    pub rx_packets: Vec<u64>,
    /// Bytes read, per port.
    pub rx_bytes: Vec<u64>,
    /// Packets handed out to be written.
    pub tx_packets: u64,
    /// Bytes handed out to be written.
    pub tx_bytes: u64,
    /// Read packets that are not IPv4 or too short for their header (dropped).
    pub malformed: u64,
    /// Packets the middlebox sent without a valid IPv4 header (dropped; a bug if not 0).
    pub bad_output: u64,
    /// Largest number of connections the middlebox's table held after any input (a
    /// high-water mark: a scrape's gauge misses a peak between two scrapes).
    pub max_connections: u64,
}

/// Shapers' drops by reason ([`DropReason::ALL`] order), summed over shapers.
pub type DropCounts = [u64; DropReason::ALL.len()];

/// A daemon's mechanisms, wired to its ports.
pub struct Pipeline {
    middlebox: Middlebox,
    /// Per port: the shaper of traffic arriving there.
    shapers: Vec<Option<Link>>,
    out: VecDeque<Packet>,
    counters: PathCounters,
    /// Connections a predecessor held (see [`crate::orphans`]).
    orphans: Orphans,
}

impl Pipeline {
    /// The mechanisms `config` asks for. `epoch` (the daemon's start, in seconds since 1970)
    /// numbers what keyed tunnels and compactors authenticate, so that their peers do not take
    /// a restarted daemon's packets for replays (crate::auth in proto).
    pub fn new(config: &DaemonConfig, epoch: u32) -> Self {
        let ports = config.interfaces.len();
        let mut shapers: Vec<Option<Link>> = (0..ports).map(|_| None).collect();
        for s in &config.shape {
            if let Some(p) = config.port_of(&s.interface) {
                let rng = Rng::new(config.seed, STREAM_SHAPER + p as u64);
                shapers[p] = Some(Link::new(&s.link_config(), rng).with_epoch(epoch));
            }
        }
        let mut middlebox =
            Middlebox::new(config.middlebox(), Rng::new(config.seed, STREAM_MIDDLEBOX))
                .with_epoch(epoch);
        middlebox.record_split_events();
        Self {
            middlebox,
            shapers,
            out: VecDeque::new(),
            orphans: Orphans::default(),
            counters: PathCounters {
                rx_packets: vec![0; ports],
                rx_bytes: vec![0; ports],
                ..PathCounters::default()
            },
        }
    }

    /// `bytes` arrived on `port` at `now`. Malformed input is counted and dropped.
    pub fn ingress(&mut self, now: Instant, port: usize, bytes: &[u8]) {
        let Some(rx) = self.counters.rx_packets.get_mut(port) else {
            self.counters.malformed += 1;
            return;
        };
        *rx += 1;
        self.counters.rx_bytes[port] += bytes.len() as u64;
        let pkt = satpep_emu::engine::header_len(bytes).and_then(|h| Packet::from_wire(bytes, h));
        let Some(pkt) = pkt else {
            self.counters.malformed += 1;
            return;
        };
        let pkt = match self.orphans.intercept(now, pkt) {
            Ok(answers) => {
                for a in answers {
                    self.counters.tx_packets += 1;
                    self.counters.tx_bytes += a.wire_len();
                    self.out.push_back(a);
                }
                return;
            }
            Err(pkt) => pkt,
        };
        match self.shapers[port].as_mut() {
            Some(shaper) => shaper.handle_packet(now, PortId(0), pkt),
            None => self.middlebox.handle_packet(now, PortId(port as u16), pkt),
        }
        self.pump(now);
    }

    /// Run whatever is due by `now` (early calls do nothing).
    pub fn handle_timeout(&mut self, now: Instant) {
        self.orphans.expire(now);
        for p in self.orphans.handle_timeout(now) {
            self.counters.tx_packets += 1;
            self.counters.tx_bytes += p.wire_len();
            self.out.push_back(p);
        }
        for s in self.shapers.iter_mut().flatten() {
            if s.poll_timeout().is_some_and(|t| t <= now) {
                s.handle_timeout(now);
            }
        }
        if self.middlebox.poll_timeout().is_some_and(|t| t <= now) {
            self.middlebox.handle_timeout(now);
        }
        self.pump(now);
    }

    /// Move packets along: out of the shapers into the middlebox, out of the middlebox into
    /// the output queue.
    fn pump(&mut self, now: Instant) {
        for (port, s) in self.shapers.iter_mut().enumerate() {
            let Some(s) = s else { continue };
            while let Some(tx) = s.poll_transmit(now) {
                self.middlebox
                    .handle_packet(now, PortId(port as u16), tx.pkt);
            }
        }
        while let Some(tx) = self.middlebox.poll_transmit(now) {
            let h = tx.pkt.header();
            if h.len() < 20 || h[0] >> 4 != 4 {
                self.counters.bad_output += 1;
                continue;
            }
            self.counters.tx_packets += 1;
            self.counters.tx_bytes += tx.pkt.wire_len();
            self.out.push_back(tx.pkt);
        }
        if let Some(n) = self.middlebox.open_connections() {
            self.counters.max_connections = self.counters.max_connections.max(n);
        }
    }

    /// Reset the connections a predecessor held (its journal) at their next segment.
    pub fn set_orphans(&mut self, flows: &[Ends], now: Instant) {
        self.orphans = Orphans::new(flows, now);
    }

    /// The orphaned connections still waited for.
    pub fn orphans(&self) -> &Orphans {
        &self.orphans
    }

    /// The connections this daemon's split relays hold now, for the journal.
    pub fn split_connections(&self) -> Vec<Ends> {
        self.middlebox
            .split_relays()
            .iter()
            .flat_map(|r| r.flows())
            .map(|f| crate::orphans::ends(f.opener, f.listener))
            .collect()
    }

    /// A value that changes whenever a split connection opens or closes (cheap to read on
    /// every pass, unlike the connections themselves).
    pub fn split_signature(&self) -> (u64, u64) {
        let split = self
            .middlebox
            .split_relays()
            .iter()
            .map(|r| r.stats().flows_split)
            .sum();
        (split, self.middlebox.open_connections().unwrap_or(0))
    }

    /// The next split connection opened or ended (for the log).
    pub fn poll_event(&mut self) -> Option<satpep_proto::pep::SplitEvent> {
        self.middlebox.poll_split_event()
    }

    /// The next packet to write (to be routed by the kernel).
    pub fn poll_output(&mut self) -> Option<Packet> {
        self.out.pop_front()
    }

    /// The earliest instant something is due.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.shapers
            .iter()
            .flatten()
            .filter_map(Node::poll_timeout)
            .chain(self.middlebox.poll_timeout())
            .chain(self.orphans.poll_timeout())
            .min()
    }

    /// The mechanism.
    pub fn middlebox(&self) -> &Middlebox {
        &self.middlebox
    }

    /// The shaper of traffic arriving on `port`, if any.
    pub fn shaper(&self, port: usize) -> Option<&Link> {
        self.shapers.get(port).and_then(Option::as_ref)
    }

    /// Counters of the path.
    pub fn counters(&self) -> &PathCounters {
        &self.counters
    }

    /// The shapers' drops by reason.
    pub fn shaper_drops(&self) -> DropCounts {
        let mut d = [0; DropReason::ALL.len()];
        for s in self.shapers.iter().flatten() {
            for (a, b) in d.iter_mut().zip(s.drop_counts()) {
                *a += b;
            }
        }
        d
    }
}

#[cfg(test)]
mod tests;
