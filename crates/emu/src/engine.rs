//! The packet path: real packets into the scenario's links, routed hop by hop, out to the
//! destination host — with no clock and no descriptors of its own, so tests drive it with
//! hand-made times exactly as the run loop drives it with CLOCK_MONOTONIC.
//!
//! A packet read from host `h`'s TUN device goes into a pool slot; a [`Packet`] holding its
//! header bytes and payload length enters link `routes[h][dst]`, built exactly as the simulator
//! builds it. When a link releases the packet (its `poll_transmit`), the packet either reaches
//! its destination host (its header, as the link left it, is copied in front of the payload and
//! the bytes go out) or enters the next link on the route, after a TTL decrement with an
//! RFC 1624 checksum update, like the simulator's routers. The same `Packet` (one allocation)
//! and the same slot follow the packet across all hops.
//!
//! Which slot belongs to a released packet: each link keeps its packets' slots in arrival order.
//! Today's queue disciplines release in arrival order minus drops, so the released packet's
//! entry is found at or near the front, and entries in front of it are packets the link dropped
//! or filtered (checked against what the link still holds before their slots are reused); when
//! a link is empty, whatever it still holds entries for was dropped. A discipline that
//! reorders is handled by a search; only one that both reorders and drops could make an entry
//! look dropped while still queued, and then that packet is lost when it comes out
//! (`lost_buffers`).

use std::collections::VecDeque;
use std::io;

use satpep_output::PcapTrace;
use satpep_proto::link::Link;
use satpep_proto::middlebox::Middlebox;
use satpep_proto::node::MAX_HEADER;
use satpep_proto::rand::Rng;
use satpep_proto::{Instant, Node, Packet, PortId};
use satpep_scenario::{NodeKind, Scenario};
use serde::{Deserialize, Serialize};

use crate::lateness::Histogram;
use crate::pool::{Pool, HEADROOM, MAX_PACKET};

/// Most slots the pool may hold: 2^19 × 2 KiB = 1 GiB, room for 10 Gb/s × 500 ms in flight.
const MAX_SLOTS: u32 = 1 << 19;

/// Counters of the packet path (beyond the per-link ones).
#[derive(Clone, Copy, Debug, Default, Deserialize, Eq, PartialEq, Serialize)]
pub struct PathCounters {
    /// Packets read from the hosts' TUN devices.
    pub rx_packets: u64,
    /// Bytes read from the hosts' TUN devices.
    pub rx_bytes: u64,
    /// Packets written to the hosts' TUN devices.
    pub tx_packets: u64,
    /// Bytes written to the hosts' TUN devices.
    pub tx_bytes: u64,
    /// Not IPv4, or too short to hold an IPv4 header.
    pub malformed: u64,
    /// Destination is no host of the scenario, or no route leads there.
    pub unroutable: u64,
    /// TTL ran out on the way.
    pub ttl_expired: u64,
    /// Dropped on arrival because every packet buffer was in use.
    pub pool_exhausted: u64,
    /// Dropped because the destination's TUN device would not take them.
    pub tx_dropped: u64,
    /// Released by a link without a buffer of bytes to go with them (see the module doc).
    pub lost_buffers: u64,
}

/// One of the scenario's links, with the slots of the packets inside it.
struct EmuLink {
    link: Link,
    /// Node at the far end.
    to: usize,
    held: VecDeque<Held>,
    lateness: Histogram,
    pcap: bool,
}

/// A packet's bytes in the pool.
#[derive(Clone, Copy, Debug)]
struct Held {
    id: u64,
    slot: u32,
    /// Length of the header as it was read (the payload follows it at `HEADROOM + hdr_len`).
    hdr_len: u16,
}

/// The scenario's links and static routes, carrying real packets.
pub struct Engine {
    links: Vec<EmuLink>,
    /// `routes[node][dst]`: the link to take (the scenario's static routes).
    routes: Vec<Vec<Option<usize>>>,
    /// (address, node) of every host, sorted by address.
    hosts: Vec<(u32, usize)>,
    pool: Pool,
    next_id: u64,
    counters: PathCounters,
    /// Links that received a packet during the current pass.
    touched: bool,
    /// The middlebox of each node (routers only), built as the simulator builds it.
    middleboxes: Vec<Option<Middlebox>>,
    /// Buffers of the packets each middlebox holds, by packet id.
    mb_held: Vec<Vec<Held>>,
    /// Arrival port of each link at its far end (incoming links numbered from 0 in file order).
    in_port: Vec<u16>,
}

impl Engine {
    /// The links of `scenario`, each built exactly as the simulator builds it
    /// (`Link::new(&config, Rng::for_component(seed, "link:<name>"))`).
    pub fn new(scenario: &Scenario) -> Self {
        let links = scenario
            .links
            .iter()
            .enumerate()
            .map(|(i, spec)| EmuLink {
                link: Link::new(
                    &spec.config,
                    Rng::for_component(scenario.seed, &format!("link:{}", spec.name)),
                ),
                to: spec.to,
                held: VecDeque::new(),
                lateness: Histogram::default(),
                pcap: scenario.output.pcap_links.contains(&i),
            })
            .collect();
        let mut hosts: Vec<(u32, usize)> = scenario
            .nodes
            .iter()
            .enumerate()
            .filter(|(_, n)| n.kind == NodeKind::Host)
            .map(|(i, n)| (u32::from(n.address), i))
            .collect();
        hosts.sort_unstable();
        let middleboxes = scenario
            .nodes
            .iter()
            .map(|n| {
                n.middlebox.as_ref().map(|mb| {
                    Middlebox::new(
                        mb,
                        Rng::for_component(scenario.seed, &format!("middlebox:{}", n.name)),
                    )
                })
            })
            .collect();
        let mut incoming = vec![0u16; scenario.nodes.len()];
        let in_port = scenario
            .links
            .iter()
            .map(|l| {
                incoming[l.to] += 1;
                incoming[l.to] - 1
            })
            .collect();
        Self {
            middleboxes,
            mb_held: vec![Vec::new(); scenario.nodes.len()],
            in_port,
            links,
            routes: scenario.routes.clone(),
            hosts,
            pool: Pool::new(1024, MAX_SLOTS),
            next_id: 0,
            counters: PathCounters::default(),
            touched: false,
        }
    }

    /// A packet from host `node` at `now`: `read` fills the buffer it is given and returns the
    /// packet's length (`Ok(None)`: nothing to read). Returns whether a packet was read.
    #[inline]
    pub fn ingress(
        &mut self,
        node: usize,
        now: Instant,
        read: impl FnOnce(&mut [u8]) -> io::Result<Option<usize>>,
    ) -> io::Result<bool> {
        let Some(slot) = self.pool.alloc() else {
            // Read and drop it, or the device would stay readable forever.
            let mut scratch = [0u8; MAX_PACKET];
            let got = read(&mut scratch)?.is_some();
            self.counters.pool_exhausted += u64::from(got);
            return Ok(got);
        };
        let buf = &mut self.pool.slot_mut(slot)[HEADROOM..];
        let Some(len) = read(buf)? else {
            self.pool.release(slot);
            return Ok(false);
        };
        self.counters.rx_packets += 1;
        self.counters.rx_bytes += len as u64;
        let dst = ipv4_dst(&buf[..len]);
        let route = match dst {
            None => {
                self.counters.malformed += 1;
                None
            }
            Some(dst) => self.route(node, dst),
        };
        let Some(link) = route else {
            self.pool.release(slot);
            return Ok(true);
        };
        let bytes = &self.pool.slot(slot)[HEADROOM..HEADROOM + len];
        let hdr_len = header_len(bytes);
        let pkt = Packet::new(&bytes[..hdr_len], (len - hdr_len) as u32);
        self.enter(link, now, pkt, slot, hdr_len as u16);
        Ok(true)
    }

    /// Let every link release what is due at `now`: packets for the next hop go on, packets
    /// for a host go to `write(host node, bytes)`, which returns `Ok(false)` when the host's
    /// device cannot take the packet now (it is dropped). Records release lateness, and writes
    /// released packets of the scenario's pcap links to `pcap`.
    pub fn service(
        &mut self,
        now: Instant,
        pcap: &mut Option<PcapTrace>,
        mut write: impl FnMut(usize, &[u8]) -> io::Result<bool>,
    ) -> io::Result<()> {
        // A packet handed to a link of lower index during a pass could only come out of it in
        // the same pass with zero delay and an infinite rate; loop until quiet anyway.
        for node in 0..self.middleboxes.len() {
            let due = self.middleboxes[node].as_ref().and_then(Node::poll_timeout);
            if due.is_some_and(|t| t <= now) {
                if let Some(mb) = self.middleboxes[node].as_mut() {
                    mb.handle_timeout(now);
                }
                self.drain_middlebox(node, now);
            }
        }
        for _ in 0..16 {
            self.touched = false;
            for l in 0..self.links.len() {
                self.release_due(l, now, pcap, &mut write)?;
            }
            if !self.touched {
                break;
            }
        }
        Ok(())
    }

    /// The earliest instant some link or middlebox must be serviced.
    pub fn poll_timeout(&self) -> Option<Instant> {
        let links = self.links.iter().filter_map(|l| l.link.poll_timeout());
        let mbs = self
            .middleboxes
            .iter()
            .flatten()
            .filter_map(Node::poll_timeout);
        links.chain(mbs).min()
    }

    /// Send on what a middlebox emits: a packet it passes keeps its buffer (matched by id); a
    /// packet it creates gets one when it has no payload (the expander's ACKs); a created
    /// packet with payload has no bytes to carry and is counted in `lost_buffers`.
    fn drain_middlebox(&mut self, node: usize, now: Instant) {
        let Some(mut mb) = self.middleboxes[node].take() else {
            return;
        };
        while let Some(tx) = mb.poll_transmit(now) {
            let pkt = tx.pkt;
            let held = match self.mb_held[node].iter().position(|h| h.id == pkt.id) {
                Some(i) => self.mb_held[node].swap_remove(i),
                None if pkt.payload_len == 0 => {
                    let Some(slot) = self.pool.alloc() else {
                        self.counters.pool_exhausted += 1;
                        continue;
                    };
                    Held {
                        id: pkt.id,
                        slot,
                        hdr_len: pkt.header_len() as u16,
                    }
                }
                None => {
                    self.counters.lost_buffers += 1;
                    continue;
                }
            };
            let next = ipv4_dst(pkt.header()).and_then(|dst| self.route(node, dst));
            match next {
                Some(next) => self.enter(next, now, pkt, held.slot, held.hdr_len),
                None => self.pool.release(held.slot),
            }
        }
        self.middleboxes[node] = Some(mb);
    }

    /// Link `i`'s model (for statistics).
    pub fn link(&self, i: usize) -> &Link {
        &self.links[i].link
    }

    /// Number of links.
    pub fn link_count(&self) -> usize {
        self.links.len()
    }

    /// Release lateness of link `i`.
    pub fn lateness(&self, i: usize) -> &Histogram {
        &self.links[i].lateness
    }

    /// Counters of the packet path.
    pub fn counters(&self) -> PathCounters {
        self.counters
    }

    /// Packet buffers in use (packets inside the emulated path).
    pub fn buffers_in_use(&self) -> usize {
        self.pool.in_use()
    }

    fn release_due(
        &mut self,
        l: usize,
        now: Instant,
        pcap: &mut Option<PcapTrace>,
        write: &mut impl FnMut(usize, &[u8]) -> io::Result<bool>,
    ) -> io::Result<()> {
        // Apply completions first, so that `poll_timeout` is the due time of the next packet.
        self.links[l].link.handle_timeout(now);
        loop {
            let el = &mut self.links[l];
            let due = el.link.poll_timeout();
            let Some(tx) = el.link.poll_transmit(now) else {
                // An empty link holds nothing: entries left are packets it dropped after the
                // last one it released.
                let l = &el.link;
                if l.queue_len_packets() == 0 && !l.is_busy() && l.in_flight() == 0 {
                    for h in el.held.drain(..) {
                        self.pool.release(h.slot);
                    }
                }
                return Ok(());
            };
            el.lateness
                .record(now.saturating_since(due.unwrap_or(now)).as_nanos());
            let mut pkt = tx.pkt;
            let held = take_held(el, &mut self.pool, pkt.id);
            let to = el.to;
            if el.pcap {
                if let Some(trace) = pcap.as_mut() {
                    trace.write(now, &pkt)?;
                }
            }
            let Some(held) = held else {
                self.counters.lost_buffers += 1;
                continue;
            };
            let Some(dst) = ipv4_dst(pkt.header()) else {
                self.counters.malformed += 1;
                self.pool.release(held.slot);
                continue;
            };
            if self.host_at(dst) == Some(to) {
                self.deliver(to, &pkt, held, write)?;
                continue;
            }
            if self.middleboxes[to].is_some() {
                // As the simulator's router: TTL first, then the middlebox, whose output is
                // routed by destination. The buffer waits beside it, found again by packet id.
                if !decrement_ttl(pkt.header_mut()) {
                    self.counters.ttl_expired += 1;
                    self.pool.release(held.slot);
                    continue;
                }
                self.mb_held[to].push(Held { id: pkt.id, ..held });
                let port = PortId(self.in_port[l]);
                if let Some(mb) = self.middleboxes[to].as_mut() {
                    mb.handle_packet(now, port, pkt);
                }
                self.drain_middlebox(to, now);
                continue;
            }
            // Forward at node `to`, as a router would.
            let Some(next) = self.route(to, dst) else {
                self.pool.release(held.slot);
                continue;
            };
            if !decrement_ttl(pkt.header_mut()) {
                self.counters.ttl_expired += 1;
                self.pool.release(held.slot);
                continue;
            }
            self.enter(next, now, pkt, held.slot, held.hdr_len);
        }
    }

    /// The packet's bytes — its header as the links left it, then the payload as read — to
    /// host `to`; frees its slot.
    fn deliver(
        &mut self,
        to: usize,
        pkt: &Packet,
        held: Held,
        write: &mut impl FnMut(usize, &[u8]) -> io::Result<bool>,
    ) -> io::Result<()> {
        let hdr = pkt.header();
        let payload_at = HEADROOM + usize::from(held.hdr_len);
        let start = payload_at - hdr.len(); // hdr.len() ≤ MAX_HEADER = HEADROOM
        let end = (payload_at + pkt.payload_len as usize).min(HEADROOM + MAX_PACKET);
        let buf = self.pool.slot_mut(held.slot);
        buf[start..payload_at].copy_from_slice(hdr);
        let ok = write(to, &buf[start..end])?;
        if ok {
            self.counters.tx_packets += 1;
            self.counters.tx_bytes += (end - start) as u64;
        } else {
            self.counters.tx_dropped += 1;
        }
        self.pool.release(held.slot);
        Ok(())
    }

    fn enter(&mut self, l: usize, now: Instant, mut pkt: Packet, slot: u32, hdr_len: u16) {
        self.next_id += 1;
        pkt.id = self.next_id;
        let el = &mut self.links[l];
        el.held.push_back(Held {
            id: pkt.id,
            slot,
            hdr_len,
        });
        el.link.handle_packet(now, PortId(0), pkt);
        self.touched = true;
    }

    fn host_at(&self, addr: u32) -> Option<usize> {
        self.hosts
            .binary_search_by_key(&addr, |&(a, _)| a)
            .ok()
            .map(|i| self.hosts[i].1)
    }

    /// The link out of `node` toward address `dst`, counting unroutable packets.
    #[inline]
    fn route(&mut self, node: usize, dst: u32) -> Option<usize> {
        let r = self
            .host_at(dst)
            .and_then(|d| self.routes.get(node)?.get(d).copied().flatten());
        if r.is_none() {
            self.counters.unroutable += 1;
        }
        r
    }
}

/// Find (and remove) the entry of packet `id` (just released by the link); entries in front
/// of it that cannot be inside the link any more go back to `pool`.
///
/// How many entries are dead (dropped by the queue or the error model, or removed by a
/// filtering discipline) is exact whatever the link counts as a drop: everything held minus
/// the released packet minus what the link still holds (queued, serialising, propagating).
/// When entries in front of the released one are no more than that, they are all dead, which
/// is always the case for a discipline that keeps arrival order.
fn take_held(el: &mut EmuLink, pool: &mut Pool, id: u64) -> Option<Held> {
    if el.held.front().is_some_and(|h| h.id == id) {
        return el.held.pop_front();
    }
    let pos = el.held.iter().position(|h| h.id == id)?;
    let l = &el.link;
    let inside = l.queue_len_packets() + usize::from(l.is_busy()) + l.in_flight();
    let dead = el.held.len().saturating_sub(1 + inside);
    if pos <= dead {
        for h in el.held.drain(..pos) {
            pool.release(h.slot);
        }
        return el.held.pop_front();
    }
    el.held.remove(pos)
}

/// IPv4 destination address, or `None` when `b` is not an IPv4 header.
#[inline]
fn ipv4_dst(b: &[u8]) -> Option<u32> {
    if b.len() < 20 || b[0] >> 4 != 4 {
        return None;
    }
    Some(u32::from_be_bytes([b[16], b[17], b[18], b[19]]))
}

/// Bytes of IPv4 header plus transport header (TCP with options, UDP, ICMP), at most
/// [`MAX_HEADER`] and at most the packet: what the link model sees as the header.
fn header_len(b: &[u8]) -> usize {
    let ihl = usize::from(b[0] & 0x0f) * 4;
    let transport = match b.get(9) {
        Some(6) => b.get(ihl + 12).map_or(0, |&d| usize::from(d >> 4) * 4),
        Some(17 | 1) => 8,
        _ => 0,
    };
    (ihl.max(20) + transport).min(MAX_HEADER).min(b.len())
}

/// Decrement the IPv4 TTL with an RFC 1624 incremental checksum update; false when it
/// reaches zero (the packet must be dropped).
fn decrement_ttl(h: &mut [u8]) -> bool {
    if h.len() < 20 || h[8] <= 1 {
        return false;
    }
    let old = u16::from_be_bytes([h[8], h[9]]);
    h[8] -= 1;
    let new = u16::from_be_bytes([h[8], h[9]]);
    // RFC 1624 eqn. 3: HC' = ~(~HC + ~m + m')
    let hc = u16::from_be_bytes([h[10], h[11]]);
    let mut sum = u32::from(!hc) + u32::from(!old) + u32::from(new);
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    h[10..12].copy_from_slice(&(!(sum as u16)).to_be_bytes());
    true
}

#[cfg(test)]
mod tests;
