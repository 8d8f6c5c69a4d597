//! IP multicast in the network: a router that forwards group traffic to the ports where IGMP
//! found members, and a host that joins and leaves groups and counts what it receives.
//!
//! The model is the one paper 001 (Arora et al., the DirecPC hybrid) describes as work in
//! progress: the satellite is a unidirectional link from the network operations centre to the
//! terminals, and a terminal's IGMP joins return over the terrestrial (dial-up) path. RFC 3077
//! (unidirectional link routing) makes that work by having the feed treat what arrives over the
//! return path as if it had arrived on the unidirectional link; here a router's `reports_via`
//! says it: reports arriving on the return link count for the satellite port. The terminal is
//! an IGMP proxy (RFC 4605): querier toward its hosts, member toward the feed, reporting over
//! its upstream (return) link.
//!
//! Not modelled: querier election among several routers on one link (each router here is the
//! only querier on its downstream ports), IGMPv3 source filtering (version 3 reports are read
//! as any-source joins and leaves), multicast routing protocols (PIM, DVMRP): a router forwards
//! a group to its downstream member ports and never upstream.

use std::collections::{BTreeMap, VecDeque};
use std::net::Ipv4Addr;

use super::igmp::{IgmpTimers, Member, MemberStats, MembershipChange, Querier, QuerierStats};
use crate::node::DropReason;
use crate::rand::Rng;
use crate::wire::igmp::{
    destination, emit_igmp, is_link_local_multicast, parse_igmp, IgmpMessage, IPPROTO_IGMP,
};
use crate::{Instant, Packet, PortId, Transmit};

/// Where a router's multicast happens, in its own port numbers.
#[derive(Clone, Debug, PartialEq)]
pub struct MulticastPorts {
    /// Source address of the router's IGMP messages.
    pub address: Ipv4Addr,
    /// Outgoing ports toward receivers: IGMP querier there, group traffic forwarded there to
    /// ports with members.
    pub downstream: Vec<PortId>,
    /// Outgoing port on which this router reports its own members' groups (an IGMP proxy,
    /// RFC 4605); queries arriving from elsewhere than a downstream neighbour are answered
    /// there.
    pub upstream: Option<PortId>,
    /// Per arrival port: the downstream port that reports and leaves arriving there count for
    /// (the reverse of a downstream link, or an RFC 3077 return path); `None`: not a
    /// downstream neighbour.
    pub report_port: Vec<Option<PortId>>,
    /// Per arrival port: the outgoing port back to the same neighbour, never used for a copy
    /// of what came from it.
    pub back_port: Vec<Option<PortId>>,
    /// The router stands for a broadcast medium (a satellite beam): every multicast packet,
    /// IGMP included, is repeated unchanged (TTL kept) on every downstream port, as every
    /// receiver in the footprint hears the channel; no IGMP of its own.
    pub broadcast: bool,
}

impl MulticastPorts {
    fn report_port(&self, arrival: PortId) -> Option<PortId> {
        self.report_port
            .get(usize::from(arrival.0))
            .copied()
            .flatten()
    }

    fn back_port(&self, arrival: PortId) -> Option<PortId> {
        self.back_port
            .get(usize::from(arrival.0))
            .copied()
            .flatten()
    }
}

/// Counters of a multicast router.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MulticastStats {
    /// Group packets (not IGMP) that arrived.
    pub data_received: u64,
    /// Copies sent to member ports.
    pub copies_sent: u64,
    /// Group packets with no member port to go to (discarded, as RFC 1112 routers do).
    pub no_members: u64,
    /// Group packets whose TTL ran out here.
    pub ttl_expired: u64,
    /// Packets to 224.0.0.0/24 that are not IGMP (never forwarded, RFC 5771 §4).
    pub link_local_dropped: u64,
    /// IGMP messages read.
    pub igmp_received: u64,
    /// IGMP packets that did not parse (bad checksum, truncated…).
    pub igmp_malformed: u64,
    /// IGMP messages that meant nothing here (a report from a neighbour that is not
    /// downstream, a query from a downstream one).
    pub igmp_ignored: u64,
    /// The querier's counters.
    pub querier: QuerierStats,
    /// The upstream member's counters (a proxy).
    pub upstream: MemberStats,
}

impl MulticastStats {
    /// Every counter by name, for summary.json.
    pub fn counters(&self) -> Vec<(&'static str, u64)> {
        let (q, u) = (&self.querier, &self.upstream);
        vec![
            ("data_received", self.data_received),
            ("copies_sent", self.copies_sent),
            ("no_members", self.no_members),
            ("ttl_expired", self.ttl_expired),
            ("link_local_dropped", self.link_local_dropped),
            ("igmp_received", self.igmp_received),
            ("igmp_malformed", self.igmp_malformed),
            ("igmp_ignored", self.igmp_ignored),
            ("general_queries_sent", q.general_queries_sent),
            ("group_queries_sent", q.group_queries_sent),
            ("reports_received", q.reports_received),
            ("leaves_received", q.leaves_received),
            ("memberships_expired", q.memberships_expired),
            ("upstream_reports_sent", u.reports_sent),
            ("upstream_leaves_sent", u.leaves_sent),
            ("upstream_queries_received", u.queries_received),
            ("upstream_reports_suppressed", u.reports_suppressed),
        ]
    }
}

/// A router's multicast half: IGMP querier downstream, optional proxy member upstream, and
/// forwarding of group traffic to member ports.
#[derive(Clone, Debug)]
pub struct MulticastRouter {
    ports: MulticastPorts,
    querier: Querier,
    upstream: Option<Member>,
    out: VecDeque<Transmit>,
    ident: u16,
    stats: MulticastStats,
    changes: Vec<MembershipChange>,
}

impl MulticastRouter {
    /// A multicast router on `ports`, querying from time zero; `rng` draws the proxy's report
    /// delays.
    pub fn new(ports: MulticastPorts, timers: IgmpTimers, rng: Rng) -> Self {
        let querying = if ports.broadcast {
            Vec::new()
        } else {
            ports.downstream.clone()
        };
        let querier = Querier::new(timers, querying, Instant::ZERO);
        let upstream = (ports.upstream)
            .filter(|_| !ports.broadcast)
            .map(|_| Member::new(timers, rng));
        Self {
            ports,
            querier,
            upstream,
            out: VecDeque::new(),
            ident: 0,
            stats: MulticastStats::default(),
            changes: Vec::new(),
        }
    }

    /// A packet to a multicast address arrived on `arrival`. Returns why it was discarded,
    /// if it was (IGMP messages are consumed, never forwarded, and return `None`).
    pub fn handle_packet(
        &mut self,
        now: Instant,
        arrival: PortId,
        mut pkt: Packet,
    ) -> Option<DropReason> {
        if self.ports.broadcast {
            return self.repeat(arrival, pkt);
        }
        let h = pkt.header();
        if h[9] == IPPROTO_IGMP {
            self.handle_igmp(now, arrival, &pkt);
            return None;
        }
        let Some(group) = destination(h) else {
            return Some(DropReason::Malformed);
        };
        if is_link_local_multicast(group) {
            self.stats.link_local_dropped += 1;
            return Some(DropReason::NoRoute);
        }
        self.stats.data_received += 1;
        if !super::router::decrement_ttl(pkt.header_mut()) {
            self.stats.ttl_expired += 1;
            return Some(DropReason::TtlExpired);
        }
        let back = self.ports.back_port(arrival);
        let ports: Vec<PortId> = (self.querier.member_ports(group))
            .filter(|&p| Some(p) != back)
            .collect();
        self.send_copies(&ports, pkt)
    }

    /// A broadcast medium: the packet, as it is, on every downstream port but the way back.
    fn repeat(&mut self, arrival: PortId, pkt: Packet) -> Option<DropReason> {
        if pkt.header()[9] == IPPROTO_IGMP {
            self.stats.igmp_received += 1;
        } else {
            self.stats.data_received += 1;
        }
        let back = self.ports.back_port(arrival);
        let ports: Vec<PortId> = (self.ports.downstream.iter().copied())
            .filter(|&p| Some(p) != back)
            .collect();
        self.send_copies(&ports, pkt)
    }

    fn send_copies(&mut self, ports: &[PortId], pkt: Packet) -> Option<DropReason> {
        let Some((&last, rest)) = ports.split_last() else {
            self.stats.no_members += 1;
            return Some(DropReason::NoRoute);
        };
        for &port in rest {
            self.out.push_back(Transmit {
                port,
                pkt: pkt.clone(),
            });
        }
        self.out.push_back(Transmit { port: last, pkt });
        self.stats.copies_sent += ports.len() as u64;
        None
    }

    fn handle_igmp(&mut self, now: Instant, arrival: PortId, pkt: &Packet) {
        let Ok(igmp) = parse_igmp(pkt) else {
            self.stats.igmp_malformed += 1;
            return;
        };
        let downstream = self.ports.report_port(arrival);
        for msg in igmp.messages {
            self.stats.igmp_received += 1;
            match (msg, downstream, self.upstream.as_mut()) {
                (IgmpMessage::Report { group }, Some(port), _) => {
                    self.querier.on_report(now, port, group)
                }
                (IgmpMessage::Leave { group }, Some(port), _) => {
                    self.querier.on_leave(now, port, group)
                }
                (
                    IgmpMessage::Query {
                        group,
                        max_response,
                    },
                    None,
                    Some(up),
                ) => up.on_query(now, group, max_response),
                (IgmpMessage::Report { group }, None, Some(up)) => up.on_report_heard(group),
                _ => self.stats.igmp_ignored += 1,
            }
        }
        self.after(now);
    }

    /// Run the IGMP timers.
    pub fn handle_timeout(&mut self, now: Instant) {
        self.querier.handle_timeout(now);
        if let Some(up) = self.upstream.as_mut() {
            if up.poll_timeout().is_some_and(|t| t <= now) {
                up.handle_timeout(now);
            }
        }
        self.after(now);
    }

    /// Follow membership changes upstream (a proxy joins a group when its first downstream
    /// port gains members and leaves when the last loses them) and turn messages into packets.
    fn after(&mut self, now: Instant) {
        while let Some(c) = self.querier.poll_change() {
            self.changes.push(c);
            if let Some(up) = self.upstream.as_mut() {
                let any = self.querier.has_members(c.group);
                if c.present && any {
                    up.join(now, c.group);
                } else if !any {
                    up.leave(c.group);
                }
            }
        }
        let src = self.ports.address;
        while let Some((port, dst, msg)) = self.querier.poll_message() {
            let pkt = emit_igmp(src, dst, self.ident, &msg);
            self.ident = self.ident.wrapping_add(1);
            self.out.push_back(Transmit { port, pkt });
        }
        if let (Some(up), Some(port)) = (self.upstream.as_mut(), self.ports.upstream) {
            while let Some((dst, msg)) = up.poll_message() {
                let pkt = emit_igmp(src, dst, self.ident, &msg);
                self.ident = self.ident.wrapping_add(1);
                self.out.push_back(Transmit { port, pkt });
            }
        }
        self.stats.querier = self.querier.stats();
        if let Some(up) = &self.upstream {
            self.stats.upstream = up.stats();
        }
    }

    /// Next packet to send (copies of group traffic, IGMP messages).
    pub fn poll_transmit(&mut self) -> Option<Transmit> {
        self.out.pop_front()
    }

    /// When [`MulticastRouter::handle_timeout`] has something to do.
    pub fn poll_timeout(&self) -> Option<Instant> {
        let up = self.upstream.as_ref().and_then(Member::poll_timeout);
        match (self.querier.poll_timeout(), up) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Counters.
    pub fn stats(&self) -> MulticastStats {
        self.stats
    }

    /// Every change of membership so far (group, port, present), in order.
    pub fn membership_log(&self) -> &[MembershipChange] {
        &self.changes
    }
}

/// One host's time in a group: when it joins and (optionally) leaves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GroupMembership {
    /// The group.
    pub group: Ipv4Addr,
    /// When the host joins.
    pub join: Instant,
    /// When it leaves (never: `None`).
    pub leave: Option<Instant>,
}

/// What a host received of one group.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GroupReceipt {
    /// Packets received while a member.
    pub packets: u64,
    /// Their payload bytes (what follows the transport header).
    pub bytes: u64,
    /// The first one's arrival.
    pub first: Option<Instant>,
    /// The last one's arrival.
    pub last: Option<Instant>,
}

/// A host's multicast half: the IGMP member, its join/leave schedule and what it received.
#[derive(Clone, Debug)]
pub struct HostGroups {
    member: Member,
    /// (instant, group, join?) in time order, then scenario order.
    schedule: Vec<(Instant, Ipv4Addr, bool)>,
    next: usize,
    received: BTreeMap<Ipv4Addr, GroupReceipt>,
    /// Group packets that arrived for a group the host was not in.
    pub not_member: u64,
    /// IGMP packets that did not parse.
    pub igmp_malformed: u64,
}

impl HostGroups {
    /// A host that joins and leaves as `memberships` say.
    pub fn new(memberships: &[GroupMembership], timers: IgmpTimers, rng: Rng) -> Self {
        let mut schedule: Vec<(Instant, Ipv4Addr, bool)> = Vec::new();
        for m in memberships {
            schedule.push((m.join, m.group, true));
            if let Some(l) = m.leave {
                schedule.push((l, m.group, false));
            }
        }
        // Stable: at one instant, scenario order.
        schedule.sort_by_key(|&(t, _, _)| t);
        Self {
            member: Member::new(timers, rng),
            schedule,
            next: 0,
            received: memberships
                .iter()
                .map(|m| (m.group, GroupReceipt::default()))
                .collect(),
            not_member: 0,
            igmp_malformed: 0,
        }
    }

    /// A packet to a multicast address arrived.
    pub fn handle_packet(&mut self, now: Instant, pkt: &Packet) {
        let h = pkt.header();
        if h[9] == IPPROTO_IGMP {
            match parse_igmp(pkt) {
                Ok(igmp) => {
                    for msg in igmp.messages {
                        match msg {
                            IgmpMessage::Query {
                                group,
                                max_response,
                            } => self.member.on_query(now, group, max_response),
                            IgmpMessage::Report { group } => self.member.on_report_heard(group),
                            IgmpMessage::Leave { .. } => {}
                        }
                    }
                }
                Err(_) => self.igmp_malformed += 1,
            }
            return;
        }
        let Some(group) = destination(h) else { return };
        if !self.member.is_member(group) {
            self.not_member += 1;
            return;
        }
        let r = self.received.entry(group).or_default();
        r.packets += 1;
        r.bytes += u64::from(pkt.payload_len);
        r.first.get_or_insert(now);
        r.last = Some(now);
    }

    /// Join and leave as scheduled, send the reports that are due.
    pub fn handle_timeout(&mut self, now: Instant) {
        while let Some(&(t, group, join)) = self.schedule.get(self.next) {
            if t > now {
                break;
            }
            self.next += 1;
            if join {
                self.member.join(now, group);
            } else {
                self.member.leave(group);
            }
        }
        if self.member.poll_timeout().is_some_and(|t| t <= now) {
            self.member.handle_timeout(now);
        }
    }

    /// When [`HostGroups::handle_timeout`] has something to do.
    pub fn poll_timeout(&self) -> Option<Instant> {
        let sched = self.schedule.get(self.next).map(|&(t, _, _)| t);
        match (sched, self.member.poll_timeout()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Next IGMP message to send: (IPv4 destination, message).
    pub fn poll_message(&mut self) -> Option<(Ipv4Addr, IgmpMessage)> {
        self.member.poll_message()
    }

    /// What was received, per group (every scheduled group listed).
    pub fn received(&self) -> &BTreeMap<Ipv4Addr, GroupReceipt> {
        &self.received
    }

    /// The IGMP member's counters.
    pub fn member_stats(&self) -> MemberStats {
        self.member.stats()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::igmp::{ALL_ROUTERS, ALL_SYSTEMS};
    use crate::Duration;

    const G: Ipv4Addr = Ipv4Addr::new(239, 1, 1, 1);
    const SRC: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);
    const ME: Ipv4Addr = Ipv4Addr::new(10, 0, 1, 1);

    fn at(ms: u64) -> Instant {
        Instant::ZERO + Duration::from_millis(ms)
    }

    /// A UDP datagram of 1000 payload bytes to `dst`, TTL `ttl` (header bytes only: the
    /// router looks at nothing else).
    fn data(dst: Ipv4Addr, ttl: u8) -> Packet {
        let mut h = [0u8; 28];
        h[0] = 0x45;
        h[2..4].copy_from_slice(&1028u16.to_be_bytes());
        h[8] = ttl;
        h[9] = 17;
        h[12..16].copy_from_slice(&SRC.octets());
        h[16..20].copy_from_slice(&dst.octets());
        let c = crate::wire::checksum::finish(crate::wire::checksum::sum(0, &h[..20]));
        h[10..12].copy_from_slice(&c.to_be_bytes());
        Packet::new(&h, 1000)
    }

    fn report(from: Ipv4Addr, group: Ipv4Addr) -> Packet {
        emit_igmp(from, group, 1, &IgmpMessage::Report { group })
    }

    /// Ports of a router with downstream ports 1 and 2 (their reverse links arrive on 1 and 2)
    /// and its upstream on port 0 (arrivals on 0 come from upstream).
    fn ports(upstream: bool) -> MulticastPorts {
        MulticastPorts {
            address: ME,
            downstream: vec![PortId(1), PortId(2)],
            upstream: upstream.then_some(PortId(0)),
            report_port: vec![None, Some(PortId(1)), Some(PortId(2))],
            back_port: vec![Some(PortId(0)), Some(PortId(1)), Some(PortId(2))],
            broadcast: false,
        }
    }

    fn router(upstream: bool) -> MulticastRouter {
        MulticastRouter::new(ports(upstream), IgmpTimers::default(), Rng::new(1, 1))
    }

    fn sent(r: &mut MulticastRouter) -> Vec<Transmit> {
        std::iter::from_fn(|| r.poll_transmit()).collect()
    }

    #[test]
    fn group_traffic_goes_to_member_ports_only_with_its_ttl_decremented() {
        let mut r = router(false);
        assert_eq!(
            r.handle_packet(at(0), PortId(0), data(G, 64)),
            Some(DropReason::NoRoute)
        );
        assert_eq!(r.stats().no_members, 1);
        assert!(r
            .handle_packet(at(1), PortId(2), report(Ipv4Addr::new(10, 9, 9, 9), G))
            .is_none());
        assert!(r
            .handle_packet(at(2), PortId(1), report(Ipv4Addr::new(10, 9, 9, 8), G))
            .is_none());
        assert!(
            sent(&mut r).is_empty(),
            "reports are consumed; no query due yet (t=0 not run)"
        );
        assert!(r.handle_packet(at(3), PortId(0), data(G, 64)).is_none());
        let out = sent(&mut r);
        assert_eq!(
            out.iter().map(|t| t.port).collect::<Vec<_>>(),
            vec![PortId(1), PortId(2)]
        );
        for t in &out {
            let h = t.pkt.header();
            assert_eq!(h[8], 63);
            assert!(crate::wire::checksum::is_valid(crate::wire::checksum::sum(
                0,
                &h[..20]
            )));
            assert_eq!(t.pkt.payload_len, 1000);
        }
        // From a member port: not sent back there.
        assert!(r.handle_packet(at(4), PortId(1), data(G, 64)).is_none());
        assert_eq!(
            sent(&mut r).iter().map(|t| t.port).collect::<Vec<_>>(),
            vec![PortId(2)]
        );
        // TTL 1 dies here; 224.0.0.x is never forwarded; another group has no members.
        assert_eq!(
            r.handle_packet(at(5), PortId(0), data(G, 1)),
            Some(DropReason::TtlExpired)
        );
        assert_eq!(
            r.handle_packet(at(5), PortId(0), data(Ipv4Addr::new(224, 0, 0, 9), 64)),
            Some(DropReason::NoRoute)
        );
        assert_eq!(
            r.handle_packet(at(5), PortId(0), data(Ipv4Addr::new(239, 7, 7, 7), 64)),
            Some(DropReason::NoRoute)
        );
        let s = r.stats();
        assert_eq!(
            (
                s.data_received,
                s.copies_sent,
                s.no_members,
                s.ttl_expired,
                s.link_local_dropped
            ),
            (5, 3, 2, 1, 1)
        );
        assert_eq!(s.querier.reports_received, 2);
    }

    /// A beam repeats every multicast packet, queries and data alike, unchanged on every
    /// downstream port, members or not, and never queries itself.
    #[test]
    fn a_broadcast_medium_repeats_everything_unchanged() {
        let mut r = MulticastRouter::new(
            MulticastPorts {
                broadcast: true,
                upstream: None,
                ..ports(false)
            },
            IgmpTimers::default(),
            Rng::new(1, 1),
        );
        assert_eq!(r.poll_timeout(), None, "no querier");
        let query = emit_igmp(
            SRC,
            ALL_SYSTEMS,
            9,
            &IgmpMessage::Query {
                group: Ipv4Addr::UNSPECIFIED,
                max_response: Duration::from_secs(10),
            },
        );
        let want = query.header().to_vec();
        assert!(r.handle_packet(at(0), PortId(0), query).is_none());
        assert!(r.handle_packet(at(0), PortId(0), data(G, 64)).is_none());
        let out = sent(&mut r);
        let ports: Vec<u16> = out.iter().map(|t| t.port.0).collect();
        assert_eq!(ports, vec![1, 2, 1, 2]);
        assert_eq!(
            out[0].pkt.header(),
            &want[..],
            "TTL 1 kept, bytes unchanged"
        );
        assert_eq!(out[2].pkt.header()[8], 64);
        // From a receiver's side: not back to it.
        r.handle_packet(at(1), PortId(2), data(G, 64));
        assert_eq!(
            sent(&mut r).iter().map(|t| t.port.0).collect::<Vec<_>>(),
            vec![1]
        );
        let s = r.stats();
        assert_eq!((s.igmp_received, s.data_received, s.copies_sent), (1, 2, 5));
    }

    #[test]
    fn reports_from_a_port_that_is_not_downstream_are_ignored() {
        let mut r = router(false);
        r.handle_packet(at(0), PortId(0), report(Ipv4Addr::new(10, 9, 9, 9), G));
        assert_eq!(r.stats().igmp_ignored, 1);
        r.handle_packet(at(1), PortId(0), data(G, 64));
        assert!(sent(&mut r).is_empty());
        let mut bad = report(ME, G).header().to_vec();
        bad[30] ^= 1;
        r.handle_packet(at(2), PortId(1), Packet::new(&bad, 0));
        assert_eq!(r.stats().igmp_malformed, 1);
    }

    /// The proxy (RFC 4605): the first downstream member makes it report upstream, the last
    /// one's departure makes it leave; it answers upstream queries on its upstream port.
    #[test]
    fn a_proxy_follows_its_downstream_members_upstream() {
        let mut r = router(true);
        r.handle_timeout(at(0));
        let q = sent(&mut r);
        assert_eq!(q.len(), 2, "general queries on both downstream ports");
        assert!(q
            .iter()
            .all(|t| destination(t.pkt.header()) == Some(ALL_SYSTEMS)));
        r.handle_packet(at(100), PortId(1), report(Ipv4Addr::new(10, 9, 9, 9), G));
        let up = sent(&mut r);
        assert_eq!(up.len(), 1);
        assert_eq!(up[0].port, PortId(0));
        let got = parse_igmp(&up[0].pkt).expect("parses");
        assert_eq!((got.src, got.dst), (ME, G));
        assert_eq!(got.messages, vec![IgmpMessage::Report { group: G }]);
        // A second downstream member: nothing new upstream.
        r.handle_packet(at(200), PortId(2), report(Ipv4Addr::new(10, 9, 9, 8), G));
        assert!(sent(&mut r).is_empty());
        // The join's repeated report (within 10 s) goes upstream too.
        while let Some(t) = r.poll_timeout().filter(|&t| t < at(20_000)) {
            r.handle_timeout(t);
            assert!(sent(&mut r).iter().all(|tx| tx.port == PortId(0)));
        }
        assert_eq!(r.stats().upstream.reports_sent, 2);
        // An upstream general query is answered upstream within 10 s.
        let query = emit_igmp(
            Ipv4Addr::new(10, 0, 9, 1),
            ALL_SYSTEMS,
            5,
            &IgmpMessage::Query {
                group: Ipv4Addr::UNSPECIFIED,
                max_response: Duration::from_secs(10),
            },
        );
        r.handle_packet(at(20_000), PortId(0), query);
        let mut answered = false;
        while let Some(t) = r.poll_timeout().filter(|&t| t <= at(30_000)) {
            r.handle_timeout(t);
            for tx in sent(&mut r) {
                if tx.port == PortId(0) {
                    answered = true;
                    assert!(t >= at(20_000));
                }
            }
        }
        assert!(answered, "the proxy answered the upstream query");
        // Both downstream members leave; after the last member queries the proxy leaves.
        let leave = |from| emit_igmp(from, ALL_ROUTERS, 2, &IgmpMessage::Leave { group: G });
        r.handle_packet(at(40_000), PortId(1), leave(Ipv4Addr::new(10, 9, 9, 9)));
        r.handle_packet(at(40_000), PortId(2), leave(Ipv4Addr::new(10, 9, 9, 8)));
        let mut left_at = None;
        while let Some(t) = r.poll_timeout().filter(|&t| t <= at(50_000)) {
            r.handle_timeout(t);
            for tx in sent(&mut r) {
                if tx.port == PortId(0) {
                    let m = parse_igmp(&tx.pkt).expect("parses").messages;
                    assert_eq!(m, vec![IgmpMessage::Leave { group: G }]);
                    left_at = Some(t);
                }
            }
        }
        assert_eq!(
            left_at,
            Some(at(42_000)),
            "2 × the last member query interval"
        );
        assert_eq!(r.stats().upstream.leaves_sent, 1);
        let log: Vec<(u64, u16, bool)> = (r.membership_log().iter())
            .map(|c| (c.at.as_nanos() / 1_000_000, c.port.0, c.present))
            .collect();
        assert_eq!(
            log,
            vec![
                (100, 1, true),
                (200, 2, true),
                (42_000, 1, false),
                (42_000, 2, false)
            ]
        );
    }

    /// Another proxy's report heard from upstream answers the query for this one (RFC 2236 §3
    /// suppression on the upstream link); IGMP messages are counted as read.
    #[test]
    fn a_proxy_keeps_quiet_when_another_reports_upstream_first() {
        let mut r = router(true);
        r.handle_packet(at(0), PortId(1), report(Ipv4Addr::new(10, 9, 9, 9), G));
        let query = emit_igmp(
            Ipv4Addr::new(10, 0, 9, 1),
            ALL_SYSTEMS,
            5,
            &IgmpMessage::Query {
                group: Ipv4Addr::UNSPECIFIED,
                max_response: Duration::from_secs(10),
            },
        );
        while let Some(t) = r.poll_timeout().filter(|&t| t < at(20_000)) {
            r.handle_timeout(t);
        }
        sent(&mut r);
        r.handle_packet(at(20_000), PortId(0), query);
        r.handle_packet(at(20_000), PortId(0), report(Ipv4Addr::new(10, 0, 7, 1), G));
        while let Some(t) = r.poll_timeout().filter(|&t| t <= at(31_000)) {
            r.handle_timeout(t);
            assert!(
                sent(&mut r).iter().all(|tx| tx.port != PortId(0)),
                "suppressed"
            );
        }
        let s = r.stats();
        assert_eq!(s.upstream.reports_suppressed, 1);
        assert_eq!(s.igmp_received, 3);
        assert_eq!(s.igmp_ignored, 0);
    }

    #[test]
    fn a_host_counts_only_what_arrives_while_it_is_a_member() {
        let m = [GroupMembership {
            group: G,
            join: at(1_000),
            leave: Some(at(5_000)),
        }];
        let mut h = HostGroups::new(&m, IgmpTimers::default(), Rng::new(3, 3));
        assert_eq!(h.poll_timeout(), Some(at(1_000)));
        h.handle_packet(at(500), &data(G, 60));
        assert_eq!(h.not_member, 1);
        h.handle_timeout(at(1_000));
        assert_eq!(
            h.poll_message(),
            Some((G, IgmpMessage::Report { group: G })),
            "joins with a report"
        );
        h.handle_packet(at(2_000), &data(G, 60));
        h.handle_packet(at(3_000), &data(G, 60));
        h.handle_packet(at(3_000), &data(Ipv4Addr::new(239, 5, 5, 5), 60));
        while let Some(t) = h.poll_timeout().filter(|&t| t <= at(5_000)) {
            h.handle_timeout(t);
        }
        let msgs: Vec<_> = std::iter::from_fn(|| h.poll_message()).collect();
        assert_eq!(
            msgs.last(),
            Some(&(ALL_ROUTERS, IgmpMessage::Leave { group: G }))
        );
        h.handle_packet(at(6_000), &data(G, 60));
        assert_eq!(
            h.received()[&G],
            GroupReceipt {
                packets: 2,
                bytes: 2000,
                first: Some(at(2_000)),
                last: Some(at(3_000))
            }
        );
        assert_eq!(h.not_member, 3);
        assert_eq!(h.poll_timeout(), None);
        let mut bad = report(ME, G).header().to_vec();
        bad[27] ^= 0x40;
        h.handle_packet(at(7_000), &Packet::new(&bad, 0));
        assert_eq!(h.igmp_malformed, 1);
        let st = h.member_stats();
        assert_eq!((st.leaves_sent, st.queries_received), (1, 0));
        assert!(st.reports_sent >= 1);
    }
}
