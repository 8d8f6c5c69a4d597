//! A router: forwards IPv4 packets by destination address along static routes.

use std::collections::{HashMap, VecDeque};
use std::net::Ipv4Addr;

use crate::middlebox::Middlebox;
use crate::node::{DropLog, DropReason, Dropped};
use crate::wire::checksum;
use crate::{Instant, Node, Packet, PortId, Transmit};

use super::host::FastHash;
use super::multicast::MulticastRouter;
use super::prefix::{Ipv4Prefix, PrefixTable};

/// Counters of packets a router could not forward.
#[derive(Clone, Copy, Debug, Default)]
pub struct RouterStats {
    /// Packets forwarded.
    pub forwarded: u64,
    /// Too short to hold an IPv4 header.
    pub malformed: u64,
    /// No route to the destination.
    pub no_route: u64,
    /// TTL reached zero.
    pub ttl_expired: u64,
}

/// Static-route IPv4 forwarding with TTL decrement (RFC 1812 §5.3.1) and an incrementally
/// updated header checksum (RFC 1624), so captures downstream show what a real router sends.
#[derive(Clone, Debug, Default)]
// The route lookup's fields first, in this order: an end host routes every segment it sends
// through its router (see `Host`'s note on cache lines).
#[repr(C)]
pub struct Router {
    routes: HashMap<Ipv4Addr, PortId, FastHash>,
    /// Routes to prefixes (subnets behind hosts), longest match, consulted after `routes`.
    prefixes: PrefixTable<PortId>,
    /// Where destinations no route names go (none: they are dropped as unroutable).
    default: Option<PortId>,
    out: VecDeque<Transmit>,
    stats: RouterStats,
    middlebox: Option<Middlebox>,
    /// IGMP and group forwarding, when the scenario gives the router `multicast`.
    multicast: Option<Box<MulticastRouter>>,
    drops: DropLog,
}

impl Router {
    /// A router with no routes.
    pub fn new() -> Self {
        Self::default()
    }

    /// A router whose forwarding path goes through `middlebox`.
    pub fn with_middlebox(middlebox: Middlebox) -> Self {
        Self {
            middlebox: Some(middlebox),
            ..Self::default()
        }
    }

    /// Send packets for `dst` out of `port`.
    pub fn add_route(&mut self, dst: Ipv4Addr, port: PortId) {
        self.routes.insert(dst, port);
    }

    /// Send packets for addresses inside `prefix` out of `port`, unless a route names the
    /// address itself or a longer prefix holds it.
    pub fn add_prefix_route(&mut self, prefix: Ipv4Prefix, port: PortId) {
        self.prefixes.insert(prefix, port);
    }

    /// Send packets for destinations no route names out of `port`.
    pub fn set_default_route(&mut self, port: PortId) {
        self.default = Some(port);
    }

    /// The port packets for `dst` leave by: its address's route, else the longest prefix
    /// route holding it, else the default route.
    pub fn route_of(&self, dst: Ipv4Addr) -> Option<PortId> {
        if let Some(&p) = self.routes.get(&dst) {
            return Some(p);
        }
        if self.prefixes.is_empty() {
            return self.default;
        }
        self.prefixes.lookup(dst).or(self.default)
    }

    /// Report `pkt` dropped for want of a route (a host's own subnet in the simulator: nothing
    /// is behind a modelled host). Only the drop log counts it: the router did not route it.
    pub(crate) fn refuse(&mut self, pkt: &Packet) {
        self.drops.push(Dropped::of(pkt, DropReason::NoRoute));
    }

    /// Counters.
    pub fn stats(&self) -> RouterStats {
        self.stats
    }

    /// The middlebox in the forwarding path, if any.
    pub fn middlebox(&self) -> Option<&Middlebox> {
        self.middlebox.as_ref()
    }

    /// Forward multicast with `mc` (without it, packets to a group are dropped as unroutable).
    pub fn set_multicast(&mut self, mc: MulticastRouter) {
        self.multicast = Some(Box::new(mc));
    }

    /// The multicast half, if any.
    pub fn multicast(&self) -> Option<&MulticastRouter> {
        self.multicast.as_deref()
    }

    /// Whether the router only forwards: no middlebox and no multicast, so it keeps no timers
    /// and what it does with a packet cannot depend on anything else due at the same instant.
    pub fn forwards_only(&self) -> bool {
        self.middlebox.is_none() && self.multicast.is_none()
    }

    /// A packet for a multicast group (IGMP included): never routed by destination. It bypasses
    /// the middlebox, whose mechanisms are all per TCP flow.
    fn handle_multicast(&mut self, now: Instant, port: PortId, pkt: Packet) {
        let reason = match self.multicast.as_mut() {
            Some(mc) => {
                let d = Dropped::of(&pkt, DropReason::NoRoute);
                mc.handle_packet(now, port, pkt)
                    .map(|r| Dropped { reason: r, ..d })
            }
            None => {
                self.stats.no_route += 1;
                Some(Dropped::of(&pkt, DropReason::NoRoute))
            }
        };
        if let Some(d) = reason {
            self.drops.push(d);
        }
    }

    fn route(&mut self, pkt: &Packet) -> Option<PortId> {
        let h = pkt.header();
        let dst = Ipv4Addr::new(h[16], h[17], h[18], h[19]);
        let port = self.route_of(dst);
        if port.is_none() {
            self.stats.no_route += 1;
            self.drops.push(Dropped::of(pkt, DropReason::NoRoute));
        }
        port
    }

    /// A packet arrived on `port`: what a router that [`forwards_only`](Self::forwards_only)
    /// sends at once, returned instead of queued for [`Node::poll_transmit`] (a driver that
    /// hands the result straight on saves the queue and the polls). `None` when the packet was
    /// dropped (counted and logged as by `handle_packet`), or went to the middlebox or the
    /// multicast half, whose output `poll_transmit` still yields.
    pub fn forward(&mut self, now: Instant, port: PortId, mut pkt: Packet) -> Option<Transmit> {
        // The TTL decrement below patches the header checksum (RFC 1624); nothing else is
        // written.
        let h = pkt.header_mut_patching_checksums();
        if h.len() < 20 || h[0] >> 4 != 4 {
            self.stats.malformed += 1;
            self.drops.push(Dropped::of(&pkt, DropReason::Malformed));
            return None;
        }
        if h[16] & 0xf0 == 0xe0 {
            self.handle_multicast(now, port, pkt);
            return None;
        }
        if !decrement_ttl(h) {
            self.stats.ttl_expired += 1;
            self.drops.push(Dropped::of(&pkt, DropReason::TtlExpired));
            return None;
        }
        if let Some(mb) = self.middlebox.as_mut() {
            // Everything, including packets for the router itself (tunnel endpoints), goes to
            // the middlebox; what it sends is routed in `poll_transmit`.
            mb.handle_packet(now, port, pkt);
            return None;
        }
        let out = self.route(&pkt)?;
        self.stats.forwarded += 1;
        Some(Transmit { port: out, pkt })
    }
}

/// Decrement the TTL and patch the header checksum incrementally (RFC 1624); the TTL is the
/// high byte of its 16-bit word. False when the TTL is exhausted.
pub(crate) fn decrement_ttl(h: &mut [u8]) -> bool {
    if h[8] <= 1 {
        return false;
    }
    let old = u16::from_be_bytes([h[8], h[9]]);
    h[8] -= 1;
    let new = u16::from_be_bytes([h[8], h[9]]);
    let check = checksum::update_u16(u16::from_be_bytes([h[10], h[11]]), old, new);
    h[10..12].copy_from_slice(&check.to_be_bytes());
    true
}

impl Node for Router {
    fn handle_packet(&mut self, now: Instant, port: PortId, pkt: Packet) {
        if let Some(tx) = self.forward(now, port, pkt) {
            self.out.push_back(tx);
        }
    }

    fn handle_timeout(&mut self, now: Instant) {
        if let Some(mc) = self.multicast.as_mut() {
            if mc.poll_timeout().is_some_and(|t| t <= now) {
                mc.handle_timeout(now);
            }
        }
        if let Some(mb) = self.middlebox.as_mut() {
            mb.handle_timeout(now);
        }
    }

    fn poll_transmit(&mut self, now: Instant) -> Option<Transmit> {
        if let Some(tx) = self.out.pop_front() {
            return Some(tx);
        }
        if let Some(tx) = self.multicast.as_mut().and_then(|mc| mc.poll_transmit()) {
            self.stats.forwarded += 1;
            return Some(tx);
        }
        loop {
            let tx = self.middlebox.as_mut()?.poll_transmit(now)?;
            if tx.pkt.header().len() < 20 {
                self.stats.malformed += 1;
                self.drops.push(Dropped::of(&tx.pkt, DropReason::Malformed));
                continue;
            }
            if let Some(port) = self.route(&tx.pkt) {
                self.stats.forwarded += 1;
                return Some(Transmit { port, pkt: tx.pkt });
            }
        }
    }

    fn poll_timeout(&self) -> Option<Instant> {
        let mb = self.middlebox.as_ref().and_then(Node::poll_timeout);
        match (mb, self.multicast.as_ref().and_then(|mc| mc.poll_timeout())) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn poll_drop(&mut self) -> Option<Dropped> {
        self.drops.pop()
    }

    fn drop_counts(&self) -> [u64; crate::DropReason::ALL.len()] {
        self.drops.counts()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::{emit_ipv4_tcp, parse_ipv4_tcp, Ipv4Repr, TcpRepr, IPPROTO_TCP};

    #[test]
    fn decrements_ttl_and_keeps_checksum_valid() {
        let ip = Ipv4Repr {
            src: Ipv4Addr::new(10, 0, 0, 1),
            dst: Ipv4Addr::new(10, 0, 3, 1),
            protocol: IPPROTO_TCP,
            ttl: 64,
            ident: 7,
            dscp_ecn: 0,
            payload_len: 0,
        };
        let tcp = TcpRepr {
            src_port: 1,
            dst_port: 2,
            payload_len: 100,
            ..TcpRepr::default()
        };
        let pkt = Packet::build(100, |b| emit_ipv4_tcp(&ip, &tcp, b));
        let mut r = Router::new();
        r.add_route(ip.dst, PortId(3));
        r.handle_packet(Instant::ZERO, PortId(0), pkt);
        let out = r.poll_transmit(Instant::ZERO).expect("forwarded");
        assert_eq!(out.port, PortId(3));
        let (ip2, tcp2) =
            parse_ipv4_tcp(out.pkt.header(), out.pkt.payload_len).expect("valid after rewrite");
        assert_eq!(ip2.ttl, 63);
        assert_eq!(tcp2, tcp);
        r.handle_packet(Instant::ZERO, PortId(0), Packet::new(&[0x45; 10], 0));
        assert_eq!(r.stats().malformed, 1);
        let d = r.poll_drop().expect("reported");
        assert_eq!((d.reason, d.wire_len), (DropReason::Malformed, 10));
        let mut lost = Packet::build(0, |b| {
            emit_ipv4_tcp(
                &Ipv4Repr {
                    dst: Ipv4Addr::new(9, 9, 9, 9),
                    ..ip
                },
                &tcp,
                b,
            )
        });
        lost.id = 77;
        r.handle_packet(Instant::ZERO, PortId(0), lost);
        assert!(r.poll_transmit(Instant::ZERO).is_none());
        let d = r.poll_drop().expect("reported");
        assert_eq!((d.reason, d.id), (DropReason::NoRoute, 77));
        assert!(r.poll_drop().is_none());
    }

    /// `forward` hands back exactly what `handle_packet` would queue (TTL 64 → 63, checksum
    /// patched, counted as forwarded) and queues nothing itself; a dropped packet is counted
    /// and logged the same way, and yields `None`.
    #[test]
    fn forward_returns_what_handle_packet_queues() {
        let ip = Ipv4Repr {
            src: Ipv4Addr::new(10, 0, 0, 1),
            dst: Ipv4Addr::new(10, 0, 3, 1),
            protocol: IPPROTO_TCP,
            ttl: 64,
            ident: 9,
            dscp_ecn: 0,
            payload_len: 0,
        };
        let tcp = TcpRepr {
            src_port: 5,
            dst_port: 6,
            payload_len: 1448,
            ..TcpRepr::default()
        };
        let build =
            |ttl: u8| Packet::build(1448, |b| emit_ipv4_tcp(&Ipv4Repr { ttl, ..ip }, &tcp, b));
        let (mut a, mut b) = (Router::new(), Router::new());
        for r in [&mut a, &mut b] {
            r.add_route(ip.dst, PortId(2));
        }
        a.handle_packet(Instant::ZERO, PortId(0), build(64));
        let queued = a.poll_transmit(Instant::ZERO).expect("queued");
        let direct = b
            .forward(Instant::ZERO, PortId(0), build(64))
            .expect("forwarded");
        assert_eq!(direct.port, PortId(2));
        assert_eq!(direct.pkt.header(), queued.pkt.header());
        assert_eq!(direct.pkt.header()[8], 63);
        assert!(b.poll_transmit(Instant::ZERO).is_none());
        assert_eq!((b.stats().forwarded, a.stats().forwarded), (1, 1));
        assert!(b.forward(Instant::ZERO, PortId(0), build(1)).is_none());
        assert_eq!((b.stats().ttl_expired, b.stats().forwarded), (1, 1));
        assert_eq!(
            b.poll_drop().map(|d| d.reason),
            Some(DropReason::TtlExpired)
        );
    }

    /// A multicast packet the multicast half refuses is reported with that half's reason, not
    /// the router's default "no route" (cargo-mutants: the reason field was untested).
    #[test]
    fn multicast_drops_keep_the_multicast_reason() {
        use super::super::igmp::IgmpTimers;
        use super::super::multicast::MulticastPorts;
        let mut r = Router::new();
        r.set_multicast(MulticastRouter::new(
            MulticastPorts {
                address: Ipv4Addr::new(10, 0, 0, 254),
                downstream: vec![PortId(1)],
                upstream: None,
                report_port: vec![None, Some(PortId(1))],
                back_port: vec![Some(PortId(0)), Some(PortId(1))],
                broadcast: false,
            },
            IgmpTimers::default(),
            crate::rand::Rng::new(1, 1),
        ));
        let to_group = |ttl: u8| {
            let ip = Ipv4Repr {
                src: Ipv4Addr::new(10, 0, 0, 1),
                dst: Ipv4Addr::new(239, 1, 1, 1),
                protocol: IPPROTO_TCP,
                ttl,
                ident: 1,
                dscp_ecn: 0,
                payload_len: 0,
            };
            Packet::build(0, |b| emit_ipv4_tcp(&ip, &TcpRepr::default(), b))
        };
        r.handle_packet(Instant::ZERO, PortId(0), to_group(1));
        let d = r.poll_drop().expect("reported");
        assert_eq!(d.reason, DropReason::TtlExpired);
        r.handle_packet(Instant::ZERO, PortId(0), to_group(64));
        let d = r.poll_drop().expect("reported");
        assert_eq!(d.reason, DropReason::NoRoute, "no member of the group");
        assert_eq!(r.stats().no_route, 0, "counted by the multicast half");
        // A router without the multicast half has no route for any group.
        let mut plain = Router::new();
        plain.set_default_route(PortId(1));
        plain.handle_packet(Instant::ZERO, PortId(0), to_group(64));
        plain.handle_packet(Instant::ZERO, PortId(0), to_group(64));
        assert!(plain.poll_transmit(Instant::ZERO).is_none());
        assert_eq!(plain.stats().no_route, 2);
        let d = plain.poll_drop().expect("reported");
        assert_eq!(d.reason, DropReason::NoRoute);
    }

    #[test]
    fn exact_route_then_longest_prefix_then_default() {
        let mut r = Router::new();
        let a = |x: u8, y: u8| Ipv4Addr::new(10, 9, x, y);
        let pre = |s: &str| s.parse::<Ipv4Prefix>().expect("valid");
        r.add_prefix_route(pre("10.9.0.0/16"), PortId(1));
        r.add_prefix_route(pre("10.9.1.0/24"), PortId(2));
        r.add_route(a(1, 7), PortId(3));
        assert_eq!(r.route_of(a(1, 7)), Some(PortId(3)));
        assert_eq!(r.route_of(a(1, 8)), Some(PortId(2)));
        assert_eq!(r.route_of(a(2, 8)), Some(PortId(1)));
        assert_eq!(r.route_of(Ipv4Addr::new(10, 8, 0, 1)), None);
        r.set_default_route(PortId(0));
        assert_eq!(r.route_of(Ipv4Addr::new(10, 8, 0, 1)), Some(PortId(0)));
        assert_eq!(r.route_of(a(1, 8)), Some(PortId(2)));
    }
}
