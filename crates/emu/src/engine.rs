//! The packet path: real packets into the scenario's network, out to the destination host —
//! with no clock and no descriptors of its own, so tests drive it with hand-made times exactly as
//! the run loop drives it with CLOCK_MONOTONIC.
//!
//! The network is the simulator's own ([`Simulation::emulated`]): the same builder makes the
//! routers (with their middleboxes), the links and the DAMA return links, with the same port
//! numbering, routes and random streams; each host of the scenario is an
//! [`ExternalHost`](satpep_proto::net::ExternalHost) whose traffic is a TUN device's. Events
//! run at their scheduled instants once the wall clock has passed them, so a mechanism sees the
//! model's time, and how late the loop ran each one is the release lateness.
//!
//! A packet read from a device becomes a [`Packet`] that owns its bytes (header and real
//! payload, in one pooled buffer); whatever a node does with it — queue, drop, re-segment,
//! tunnel, relay on a split connection — the bytes go with it, and a dropped packet's buffer
//! goes back to the pool. Nothing here matches buffers to packets.

use std::io;

use satpep_proto::link::LinkStats;
use satpep_proto::node::MAX_HEADER;
use satpep_proto::{Instant, Packet};
use satpep_scenario::{NodeKind, Scenario};
use satpep_sim::{Outputs, Simulation};
use serde::{Deserialize, Serialize};

use crate::lateness::Histogram;
use crate::vnet::{self, Coalescer, VirtioNetHdr, VNET_HDR_LEN};

/// Largest packet read from a device (an IPv4 datagram's limit; the devices' MTU is far lower).
pub const MAX_PACKET: usize = 65_535;

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
    /// Not IPv4, too short to hold an IPv4 header, or a header too long to model.
    pub malformed: u64,
    /// Sent by a host with no route toward their destination.
    pub unroutable: u64,
    /// Dropped because the destination's TUN device would not take them.
    pub tx_dropped: u64,
    /// Offloading devices ([`crate::vnet`]): super-packets read (each counted above as the
    /// wire segments it was cut into).
    #[serde(default)]
    pub rx_super_packets: u64,
    /// Offloading devices: super-packets written (each counted above as the wire segments it
    /// joined).
    #[serde(default)]
    pub tx_super_packets: u64,
    /// Offloading devices: reads dropped because their `virtio_net_hdr` made no sense for the
    /// packet (also counted in `malformed`).
    #[serde(default)]
    pub vnet_malformed: u64,
}

/// The scenario's network, carrying real packets.
pub struct Engine {
    sim: Simulation,
    /// Scenario node of every host, in node order.
    hosts: Vec<usize>,
    /// Release lateness per scenario link; DAMA return links and other nodes go to `other`.
    lateness: Vec<Histogram>,
    other: Histogram,
    /// Scenario link of each network node (see [`Simulation::link_of_node`]).
    link_of: Vec<Option<usize>>,
    /// The scenario link feeding each (node, arrival port) (see [`Simulation::link_into`]).
    in_link: Vec<Vec<Option<usize>>>,
    counters: PathCounters,
    scratch: Vec<u8>,
    wire: Vec<u8>,
    /// Per scenario node: its device carries a `virtio_net_hdr` ([`crate::vnet`]).
    vnet: Vec<bool>,
    /// Headers of one wire segment cut from a super-packet.
    segment: Vec<u8>,
    /// `virtio_net_hdr` and headers of a packet written alone to an offloading host.
    single: Vec<u8>,
    coalescer: Coalescer,
}

impl Engine {
    /// The network of `scenario`, built by the simulator's builder with outside hosts.
    pub fn new(scenario: &Scenario) -> Self {
        let hosts = scenario
            .nodes
            .iter()
            .enumerate()
            .filter(|(_, n)| n.kind == NodeKind::Host)
            .map(|(i, _)| i)
            .collect();
        let sim = Simulation::emulated(scenario);
        let link_of = (0..sim.node_count()).map(|n| sim.link_of_node(n)).collect();
        let in_link = sim.in_links().to_vec();
        Self {
            sim,
            link_of,
            in_link,
            hosts,
            lateness: vec![Histogram::default(); scenario.links.len()],
            other: Histogram::default(),
            counters: PathCounters::default(),
            scratch: vec![0; MAX_PACKET + VNET_HDR_LEN],
            wire: Vec::with_capacity(MAX_PACKET),
            vnet: vec![false; scenario.nodes.len()],
            segment: Vec::with_capacity(MAX_HEADER),
            single: Vec::with_capacity(MAX_PACKET + VNET_HDR_LEN),
            coalescer: Coalescer::default(),
        }
    }

    /// Let the network write pcap (and series, as `outputs` asks) while it runs.
    pub fn set_outputs(&mut self, outputs: Outputs) {
        self.sim.set_outputs(outputs);
    }

    /// Host `node`'s device carries a `virtio_net_hdr` in front of every packet: read with
    /// [`ingress_vnet`](Self::ingress_vnet), and [`service`](Self::service) hands it packets
    /// with the header, joining segments into super-packets.
    pub fn set_vnet(&mut self, node: usize, on: bool) {
        if let Some(v) = self.vnet.get_mut(node) {
            *v = on;
        }
    }

    /// A packet from host `node` at `now` through an offloading device: as
    /// [`ingress`](Self::ingress), but what `read` returns starts with a `virtio_net_hdr`, and a
    /// super-packet enters the network as the wire segments it stands for ([`vnet::segment`]),
    /// counted one by one. A header that does not fit the packet drops the read (counted in
    /// `malformed` and `vnet_malformed`).
    pub fn ingress_vnet(
        &mut self,
        node: usize,
        now: Instant,
        read: impl FnOnce(&mut [u8]) -> io::Result<Option<usize>>,
    ) -> io::Result<bool> {
        let Some(len) = read(&mut self.scratch)? else {
            return Ok(false);
        };
        let parsed = (self.scratch.get(..len)).map(|b| VirtioNetHdr::parse(b).map(|(h, _)| h));
        let Some(Ok(hdr)) = parsed else {
            self.counters.malformed += 1;
            self.counters.vnet_malformed += 1;
            return Ok(true);
        };
        if now > self.sim.now() {
            self.advance(now);
        }
        let bytes = &mut self.scratch[..len]; // checked above
        let (sim, counters) = (&mut self.sim, &mut self.counters);
        let pkt = &mut bytes[VNET_HDR_LEN..];
        let cut = vnet::segment(&hdr, pkt, &mut self.segment, |head, payload| {
            counters.rx_packets += 1;
            counters.rx_bytes += (head.len() + payload.len()) as u64;
            // A segment comes as its exact IPv4 + TCP headers and its payload, with checksums
            // `segment` just computed over them; a plain packet whole in `head`, with the
            // host's checksums (not ours to vouch for).
            let pkt = if payload.is_empty() {
                header_len(head).and_then(|h| Packet::from_wire(head, h))
            } else {
                Packet::try_with_payload(head, payload).map(|mut p| {
                    p.mark_checksums_valid();
                    p
                })
            };
            match pkt {
                Some(p) => sim.inject(node, p),
                None => counters.malformed += 1,
            }
        });
        match cut {
            Ok(n) if n > 1 => self.counters.rx_super_packets += 1,
            Ok(_) => {}
            Err(_) => {
                self.counters.malformed += 1;
                self.counters.vnet_malformed += 1;
            }
        }
        Ok(true)
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
        let Some(len) = read(&mut self.scratch)? else {
            return Ok(false);
        };
        self.counters.rx_packets += 1;
        self.counters.rx_bytes += len as u64;
        let bytes = &self.scratch[..len];
        let pkt = match header_len(bytes) {
            Some(h) => Packet::from_wire(bytes, h),
            None => None,
        };
        let Some(pkt) = pkt else {
            self.counters.malformed += 1;
            return Ok(true);
        };
        // Everything due before the packet arrived happens first: time never goes backwards.
        // Packets read in one pass share its `now`, so the clock moves once per pass; what
        // they set off runs in `service`.
        if now > self.sim.now() {
            self.advance(now);
        }
        self.sim.inject(node, pkt);
        Ok(true)
    }

    /// Run every event due by `now`, then hand what reached each host to `write(host node,
    /// parts)`: one packet as the slices to write in order with one gathering write (header,
    /// then payload; for an offloading host, see [`set_vnet`](Self::set_vnet), the
    /// `virtio_net_hdr` and headers, then each joined segment's payload: at most
    /// [`MAX_PARTS`]). It returns `Ok(false)` when the host's device cannot take the packet now
    /// (it is dropped and counted).
    pub fn service(
        &mut self,
        now: Instant,
        mut write: impl FnMut(usize, &[&[u8]]) -> io::Result<bool>,
    ) -> io::Result<()> {
        self.advance(now);
        for i in 0..self.hosts.len() {
            let h = self.hosts[i];
            if self.vnet.get(h).copied().unwrap_or(false) {
                self.service_vnet(h, &mut write)?;
                continue;
            }
            while let Some(pkt) = self.sim.poll_received(h) {
                let ok = match pkt.payload() {
                    Some(payload) => write(h, &[pkt.header(), payload])?,
                    None => {
                        // Virtual payload (a mechanism's own packet): its zeros, materialised.
                        self.wire.clear();
                        pkt.write_wire(&mut self.wire);
                        write(h, &[&self.wire])?
                    }
                };
                if ok {
                    self.counters.tx_packets += 1;
                    self.counters.tx_bytes += pkt.wire_len();
                } else {
                    self.counters.tx_dropped += 1;
                }
            }
        }
        Ok(())
    }

    /// What reached host `h` (an offloading device), each with a `virtio_net_hdr` in front:
    /// runs of segments that continue each other as one super-packet, the rest one by one.
    fn service_vnet(
        &mut self,
        h: usize,
        write: &mut impl FnMut(usize, &[&[u8]]) -> io::Result<bool>,
    ) -> io::Result<()> {
        let mut wire = std::mem::take(&mut self.wire);
        while let Some(pkt) = self.sim.poll_received(h) {
            let Err(pkt) = join(&mut self.coalescer, pkt, &mut wire) else {
                continue;
            };
            flush(&mut self.coalescer, &mut self.counters, h, write)?;
            let Err(pkt) = join(&mut self.coalescer, pkt, &mut wire) else {
                continue;
            };
            // Alone, behind an all-zero header: header (or all of it) after the zeros, so
            // that one gathering write still does.
            let (head, payload): (&[u8], &[u8]) = match pkt.payload() {
                Some(p) => (pkt.header(), p),
                None => {
                    wire.clear();
                    pkt.write_wire(&mut wire);
                    (&wire, &[])
                }
            };
            let single = &mut self.single;
            single.clear();
            single.extend_from_slice(&[0; VNET_HDR_LEN]);
            single.extend_from_slice(head);
            let ok = write(h, &[single, payload])?;
            let len = (head.len() + payload.len()) as u64;
            if ok {
                self.counters.tx_packets += 1;
                self.counters.tx_bytes += len;
            } else {
                self.counters.tx_dropped += 1;
            }
        }
        self.wire = wire;
        flush(&mut self.coalescer, &mut self.counters, h, write)
    }

    fn advance(&mut self, now: Instant) {
        // Release lateness: how long after its due instant a packet that left a link reached
        // the next node (links only ever feed routers and hosts). Per scenario link; a DAMA
        // return link's releases go to `other`.
        let (sim, lateness, other) = (&mut self.sim, &mut self.lateness, &mut self.other);
        let (link_of, in_link) = (&self.link_of, &self.in_link);
        sim.run_until_observed(now, |node, port, at| {
            let Some(port) = port else { return };
            if link_of.get(node).copied().flatten().is_some() {
                return; // a packet entering a link, not leaving one
            }
            let ns = now.saturating_since(at).as_nanos();
            match in_link
                .get(node)
                .and_then(|row| row.get(usize::from(port.0)).copied().flatten())
            {
                Some(l) => lateness[l].record(ns),
                None => other.record(ns),
            }
        });
    }

    /// The earliest instant something in the network is due.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.sim.next_event_at()
    }

    /// Counters and current queue (packets, bytes) of scenario link `i`, brought up to `now`.
    pub fn link_stats(&self, i: usize, now: Instant) -> (LinkStats, u64, u64) {
        self.sim.link_stats(i, now)
    }

    /// Release lateness of link `i`.
    pub fn lateness(&self, i: usize) -> &Histogram {
        &self.lateness[i]
    }

    /// Lateness of every other event (routers, middleboxes, DAMA return links, hosts).
    pub fn other_lateness(&self) -> &Histogram {
        &self.other
    }

    /// Wire packets read from the hosts so far (a super-packet counts its segments).
    pub fn rx_packets(&self) -> u64 {
        self.counters.rx_packets
    }

    /// Counters of the packet path.
    pub fn counters(&self) -> PathCounters {
        let mut c = self.counters;
        c.unroutable = self
            .hosts
            .iter()
            .filter_map(|&h| self.sim.external_stats(h))
            .map(|s| s.unroutable)
            .sum();
        c
    }

    /// Packets alive on this thread (inside the network, or not yet dropped): 0 when the path
    /// has drained and nothing leaked.
    pub fn buffers_in_use(&self) -> usize {
        satpep_proto::node::live_packets()
    }

    /// The network (middlebox and DAMA state, summary).
    pub fn network(&self) -> &Simulation {
        &self.sim
    }

    /// Finish the network's output files.
    pub fn finish(self) -> io::Result<()> {
        self.sim.finish_outputs()
    }
}

/// Offer `pkt` to `coalescer`: a packet with a payload of its own joins without a copy, one with
/// a virtual payload (a mechanism's own) as its bytes materialised in `wire`. A refused packet
/// comes back.
fn join(coalescer: &mut Coalescer, pkt: Packet, wire: &mut Vec<u8>) -> Result<(), Packet> {
    match pkt.payload() {
        Some(_) => coalescer.push_packet(pkt), // refuses headers alone
        None => {
            wire.clear();
            pkt.write_wire(wire);
            if coalescer.push(wire, &[], pkt.checksums_known_valid()) {
                Ok(())
            } else {
                Err(pkt)
            }
        }
    }
}

/// Most slices [`Engine::service`] hands to one write: headers and one payload per segment.
pub const MAX_PARTS: usize = vnet::MAX_COALESCE as usize + 1;

/// Write what `coalescer` joined to host `h` (one gathering write), counting its wire segments.
fn flush(
    coalescer: &mut Coalescer,
    counters: &mut PathCounters,
    h: usize,
    write: &mut impl FnMut(usize, &[&[u8]]) -> io::Result<bool>,
) -> io::Result<()> {
    let Some(batch) = coalescer.take() else {
        return Ok(());
    };
    let mut parts: [&[u8]; MAX_PARTS] = [&[]; MAX_PARTS];
    let mut n = 0;
    for (slot, part) in parts.iter_mut().zip(batch.parts()) {
        *slot = part;
        n += 1;
    }
    if write(h, &parts[..n])? {
        counters.tx_packets += u64::from(batch.segments);
        counters.tx_bytes += batch.wire_bytes;
        counters.tx_super_packets += u64::from(batch.segments > 1);
    } else {
        counters.tx_dropped += u64::from(batch.segments);
    }
    Ok(())
}

/// Bytes of IPv4 header plus transport header (TCP with options, UDP, ICMP; for IP-in-IP, the
/// outer header plus the inner datagram's headers), at most [`MAX_HEADER`] and at most the
/// packet: what the link model and the mechanisms see as the header. `None` when the bytes are
/// not an IPv4 header.
pub fn header_len(b: &[u8]) -> Option<usize> {
    header_len_nested(b, 0)
}

/// [`header_len`] of a datagram nested `depth` IP-in-IP levels deep.
fn header_len_nested(b: &[u8], depth: usize) -> Option<usize> {
    if b.len() < 20 || b[0] >> 4 != 4 {
        return None;
    }
    // At least 20 even when the IHL field says less: with IHL 0 and protocol 4 the "inner"
    // datagram was the packet itself, and the recursion never ended (a stack overflow found
    // by the `tun_intake` fuzz target).
    let ihl = (usize::from(b[0] & 0x0f) * 4).max(20);
    let transport = match b.get(9) {
        Some(6) => b.get(ihl + 12).map_or(0, |&d| usize::from(d >> 4) * 4),
        Some(17 | 1) => 8,
        // IP-in-IP (tunnels, compacted ACKs): the inner headers belong to the header too, and
        // when the inner datagram carries no payload, so does whatever follows it (a compacted
        // ACK's trailer, ack::trailer), which a mechanism reads as header bytes.
        Some(4) => b.get(ihl..).map_or(0, |i| ipip_header_len(i, depth + 1)),
        // An authenticated tunnel packet (RFC 4302 AH around IP-in-IP, crate::auth): the AH
        // header, then the inner datagram's headers as above.
        Some(51) => b.get(ihl..).map_or(0, |ah| {
            let ah_len = ah.get(1).map_or(0, |&l| (usize::from(l) + 2) * 4);
            match ah.first() {
                Some(4) => {
                    ah_len + ipip_header_len(ah.get(ah_len..).unwrap_or_default(), depth + 1)
                }
                _ => ah_len,
            }
        }),
        _ => 0,
    };
    Some((ihl + transport).min(MAX_HEADER).min(b.len()))
}

/// Header bytes of an IP-in-IP payload `inner`: the inner datagram's headers, or all of it
/// when the inner datagram carries no payload (a compacted ACK's trailer follows it).
/// `depth` levels deep, the inner headers start at least 20 × `depth` bytes into the packet:
/// past [`MAX_HEADER`], where the result is cut anyway, so the recursion stops there (a packet of
/// nested IP-in-IP headers would otherwise recurse once per 20 bytes).
fn ipip_header_len(inner: &[u8], depth: usize) -> usize {
    if depth * 20 >= MAX_HEADER {
        return inner.len();
    }
    let inner_header = header_len_nested(inner, depth).unwrap_or(0);
    let inner_total = inner
        .get(2..4)
        .map_or(0, |t| usize::from(u16::from_be_bytes([t[0], t[1]])));
    if inner_total <= inner_header {
        inner.len()
    } else {
        inner_header
    }
}

#[cfg(test)]
mod tests;
