//! A host whose packets come from outside the model: in the emulator, a real Linux host in a
//! network namespace behind a TUN device. The topology treats it like any host (it has an
//! address, ports and routes); the driver hands it what the real host sent ([`ExternalHost::send`])
//! and takes what reached it ([`ExternalHost::poll_received`]).

use std::collections::VecDeque;
use std::net::Ipv4Addr;

use super::prefix::{Ipv4Prefix, PrefixTable};
use super::router::Router;
use crate::node::{DropLog, DropReason, Dropped};
use crate::{Instant, Node, Packet, PortId, Transmit};

/// Most packets waiting for the driver to take them; beyond it arrivals are dropped and counted
/// (a driver that drains after every pass never comes near it).
pub const RECEIVED_MAX: usize = 1 << 16;

/// Counters of an external host.
#[derive(Clone, Copy, Debug, Default, Eq, PartialEq)]
pub struct ExternalStats {
    /// Packets the outside host sent into the model.
    pub sent: u64,
    /// Packets that reached the outside host.
    pub received: u64,
    /// Sent packets that were not IPv4 or had no route.
    pub unroutable: u64,
    /// Arrivals dropped because the driver had not taken [`RECEIVED_MAX`] earlier ones.
    pub overflow: u64,
}

/// An outside host attached to the model (see the module doc).
#[derive(Clone, Debug)]
pub struct ExternalHost {
    addr: Ipv4Addr,
    routes: Router,
    /// Networks behind the outside host (`subnets`): delivered to it like its own address.
    subnets: PrefixTable<()>,
    out: VecDeque<Transmit>,
    received: VecDeque<Packet>,
    stats: ExternalStats,
    drops: DropLog,
}

impl ExternalHost {
    /// An outside host at `addr` with no routes yet.
    pub fn new(addr: Ipv4Addr) -> Self {
        Self {
            addr,
            routes: Router::new(),
            subnets: PrefixTable::default(),
            out: VecDeque::new(),
            received: VecDeque::new(),
            stats: ExternalStats::default(),
            drops: DropLog::default(),
        }
    }

    /// Send packets for `dst` out of `port`. A packet for an address no route names is counted
    /// as unroutable: nothing in the scenario could deliver it.
    pub fn add_route(&mut self, dst: Ipv4Addr, port: PortId) {
        self.routes.add_route(dst, port);
    }

    /// Send packets for addresses inside `prefix` out of `port` (a subnet behind another
    /// host), unless an address route or a longer prefix says otherwise.
    pub fn add_prefix_route(&mut self, prefix: Ipv4Prefix, port: PortId) {
        self.routes.add_prefix_route(prefix, port);
    }

    /// Network `prefix` is behind the outside host (a LAN behind a real router): packets for
    /// it are handed to the driver as if addressed to the host, TTL untouched — the real host
    /// forwards them and decrements it.
    pub fn add_subnet(&mut self, prefix: Ipv4Prefix) {
        self.subnets.insert(prefix, ());
    }

    /// The outside host sent `pkt`: it leaves by the port its destination is routed to.
    pub fn send(&mut self, pkt: Packet) {
        let h = pkt.header();
        if h.len() < 20 || h[0] >> 4 != 4 {
            self.stats.unroutable += 1;
            self.drops.push(Dropped::of(&pkt, DropReason::Malformed));
            return;
        }
        let dst = Ipv4Addr::new(h[16], h[17], h[18], h[19]);
        let Some(port) = self.routes.route_of(dst) else {
            self.stats.unroutable += 1;
            self.drops.push(Dropped::of(&pkt, DropReason::NoRoute));
            return;
        };
        self.stats.sent += 1;
        self.out.push_back(Transmit { port, pkt });
    }

    /// Next packet that reached the outside host, for the driver to deliver.
    pub fn poll_received(&mut self) -> Option<Packet> {
        self.received.pop_front()
    }

    /// The host's address.
    pub fn addr(&self) -> Ipv4Addr {
        self.addr
    }

    /// Counters.
    pub fn stats(&self) -> ExternalStats {
        self.stats
    }
}

impl Node for ExternalHost {
    fn handle_packet(&mut self, now: Instant, port: PortId, pkt: Packet) {
        let for_us = pkt.header().get(16..20).is_some_and(|d| {
            d == self.addr.octets()
                || (!self.subnets.is_empty()
                    && (self.subnets)
                        .lookup(Ipv4Addr::new(d[0], d[1], d[2], d[3]))
                        .is_some())
        });
        if !for_us {
            // Not ours: forward as a router would (any node of a scenario may forward).
            self.routes.handle_packet(now, port, pkt);
            return;
        }
        if self.received.len() >= RECEIVED_MAX {
            self.stats.overflow += 1;
            self.drops.push(Dropped::of(&pkt, DropReason::Overflow));
            return;
        }
        self.stats.received += 1;
        self.received.push_back(pkt);
    }

    fn handle_timeout(&mut self, _now: Instant) {}

    fn poll_transmit(&mut self, now: Instant) -> Option<Transmit> {
        self.out
            .pop_front()
            .or_else(|| self.routes.poll_transmit(now))
    }

    fn poll_timeout(&self) -> Option<Instant> {
        None
    }

    fn poll_drop(&mut self) -> Option<Dropped> {
        self.drops.pop().or_else(|| self.routes.poll_drop())
    }

    fn drop_counts(&self) -> [u64; DropReason::ALL.len()] {
        let (mut a, b) = (self.drops.counts(), self.routes.drop_counts());
        for (x, y) in a.iter_mut().zip(b) {
            *x += y;
        }
        a
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ipv4_to(dst: [u8; 4], payload: &[u8]) -> Packet {
        let mut h = [0u8; 20];
        h[0] = 0x45;
        h[8] = 64;
        h[16..20].copy_from_slice(&dst);
        Packet::try_with_payload(&h, payload).expect("fits")
    }

    #[test]
    fn sends_by_route_and_hands_over_what_is_addressed_to_it() {
        let mut h = ExternalHost::new(Ipv4Addr::new(10, 0, 0, 1));
        h.add_route(Ipv4Addr::new(10, 0, 1, 1), PortId(0));
        h.add_route(Ipv4Addr::new(10, 0, 2, 1), PortId(1));
        h.send(ipv4_to([10, 0, 2, 1], b"x"));
        h.send(ipv4_to([10, 9, 9, 9], b"y")); // no route: no node of the scenario
        h.send(Packet::new(&[0x60; 40], 0)); // IPv6: not ours to route
        let ports: Vec<u16> = std::iter::from_fn(|| h.poll_transmit(Instant::ZERO))
            .map(|t| t.port.0)
            .collect();
        assert_eq!(ports, vec![1]);
        assert_eq!(h.stats().unroutable, 2);
        let reasons: Vec<DropReason> = std::iter::from_fn(|| h.poll_drop())
            .map(|d| d.reason)
            .collect();
        assert_eq!(reasons, [DropReason::NoRoute, DropReason::Malformed]);

        h.handle_packet(Instant::ZERO, PortId(0), ipv4_to([10, 0, 0, 1], b"hello"));
        let got = h.poll_received().expect("delivered");
        assert_eq!(got.payload(), Some(&b"hello"[..]));
        assert!(h.poll_received().is_none());
        // Transit traffic is forwarded, with the TTL decremented, not handed over.
        h.handle_packet(Instant::ZERO, PortId(0), ipv4_to([10, 0, 2, 1], b"t"));
        assert!(h.poll_received().is_none());
        let fwd = h.poll_transmit(Instant::ZERO).expect("forwarded");
        assert_eq!((fwd.port.0, fwd.pkt.header()[8]), (1, 63));
    }

    /// A subnet behind the outside host is delivered to it untouched; a subnet behind another
    /// host is routed toward that host; anything else stays unroutable.
    #[test]
    fn subnets_behind_it_are_delivered_and_others_routed() {
        let pre = |s: &str| s.parse::<Ipv4Prefix>().expect("valid");
        let mut h = ExternalHost::new(Ipv4Addr::new(10, 77, 0, 1));
        h.add_subnet(pre("10.77.1.0/24"));
        h.add_route(Ipv4Addr::new(10, 77, 0, 2), PortId(0));
        h.add_prefix_route(pre("10.77.2.0/24"), PortId(0));
        h.handle_packet(Instant::ZERO, PortId(0), ipv4_to([10, 77, 1, 2], b"in"));
        let got = h.poll_received().expect("delivered");
        assert_eq!((got.payload(), got.header()[8]), (Some(&b"in"[..]), 64));
        assert!(h.poll_transmit(Instant::ZERO).is_none());
        h.send(ipv4_to([10, 77, 2, 2], b"out"));
        h.send(ipv4_to([10, 77, 3, 2], b"lost"));
        let tx = h.poll_transmit(Instant::ZERO).expect("routed");
        assert_eq!((tx.port, tx.pkt.payload()), (PortId(0), Some(&b"out"[..])));
        assert!(h.poll_transmit(Instant::ZERO).is_none());
        assert_eq!(h.stats().unroutable, 1);
        // Transit for another host's subnet is forwarded, not delivered.
        h.handle_packet(Instant::ZERO, PortId(0), ipv4_to([10, 77, 2, 9], b"t"));
        assert!(h.poll_received().is_none());
        assert_eq!(
            h.poll_transmit(Instant::ZERO).map(|t| t.port),
            Some(PortId(0))
        );
    }
}

#[cfg(test)]
mod bounds {
    use super::*;

    /// A driver that never takes arrivals cannot make the host hold more than `RECEIVED_MAX`:
    /// the rest are dropped, counted and reported.
    #[test]
    fn undelivered_arrivals_are_bounded_and_counted() {
        let mut h = ExternalHost::new(Ipv4Addr::new(10, 0, 0, 1));
        let mut hdr = [0u8; 20];
        hdr[0] = 0x45;
        hdr[16..20].copy_from_slice(&[10, 0, 0, 1]);
        for _ in 0..RECEIVED_MAX + 10 {
            let p = Packet::try_with_payload(&hdr, &[1, 2, 3]).expect("fits");
            h.handle_packet(Instant::ZERO, PortId(0), p);
        }
        assert_eq!(h.stats().received, RECEIVED_MAX as u64);
        assert_eq!(h.stats().overflow, 10);
        assert_eq!(h.drop_counts()[DropReason::Overflow as usize], 10);
        assert_eq!(
            std::iter::from_fn(|| h.poll_received()).count(),
            RECEIVED_MAX
        );
    }
}
