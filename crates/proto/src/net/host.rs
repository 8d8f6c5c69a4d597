//! A host: TCP endpoints with their applications, and UDP constant-bit-rate sources and sinks,
//! behind one IP address.

use std::collections::{BTreeSet, HashMap};
use std::hash::{BuildHasherDefault, Hasher};
use std::net::Ipv4Addr;

use crate::tcp::TcpEndpoint;
use crate::timer_heap::TimerHeap;
use crate::wire::{
    emit_ipv4_tcp, emit_ipv4_udp, ipv4_udp, parse_packet, parse_udp_packet, Ipv4Repr, UdpRepr,
    IPPROTO_UDP, UDP_STAMP_LEN,
};
use crate::{Instant, Node, Packet, PortId, Transmit};

use super::apps::App;
use super::multicast::HostGroups;
use super::prefix::{Ipv4Prefix, PrefixTable};
use super::router::Router;
use super::udp::{CbrSource, UdpSink};
use crate::wire::igmp::emit_igmp;

/// Which end of a flow a connection is.
#[derive(Clone, Copy, Debug, Eq, PartialEq)]
pub enum Role {
    /// Opens the connection (bulk sender, request client).
    Opener,
    /// Listens (bulk sink, response server).
    Listener,
}

/// One connection on a host.
#[derive(Clone, Debug)]
pub struct Conn {
    /// Flow index in the scenario.
    pub flow: usize,
    /// Which end.
    pub role: Role,
    /// The TCP model.
    pub ep: TcpEndpoint,
    /// The application on top.
    pub app: App,
    /// When the opener connects.
    pub start: Instant,
    started: bool,
    /// When the application finished its work.
    pub done_at: Option<Instant>,
    deadline: Option<Instant>,
    /// Largest cwnd an opener had at the samples [`Host::fold_max_cwnd`] marks, folded at
    /// the connection's first input after each (its cwnd cannot change without one): the
    /// largest over all samples is `max_cwnd.max(ep.cwnd())`. Kept here, beside the endpoint
    /// it reads, so that folding touches nothing the connection's next segment does not.
    pub max_cwnd: u64,
    /// The host's `fold_epoch` when `max_cwnd` was last brought up to date.
    folded_at: u64,
}

impl Conn {
    /// Before an input changes the cwnd: if a sample was marked since the last input, the
    /// cwnd now is what it saw.
    #[inline]
    fn fold(&mut self, epoch: u64) {
        if self.folded_at != epoch {
            self.folded_at = epoch;
            if self.role == Role::Opener {
                self.max_cwnd = self.max_cwnd.max(self.ep.cwnd());
            }
        }
    }
}

/// Counters of packets a host could not use.
#[derive(Clone, Copy, Debug, Default)]
pub struct HostStats {
    /// Header bytes that did not parse (bad checksum, truncated…).
    pub malformed: u64,
    /// TCP segments for no known connection.
    pub no_connection: u64,
    /// Packets with no route out.
    pub no_route: u64,
    /// Packets to a multicast group the host is not in (or any, without `groups`).
    pub not_member: u64,
    /// UDP datagrams for no sink, or without a [`crate::wire::UdpStamp`].
    pub no_udp_sink: u64,
}

/// A UDP flow's end on a host: a CBR source or the sink that measures it.
#[derive(Clone, Debug)]
pub enum UdpEnd {
    /// Sends to `remote`.
    Source(CbrSource),
    /// Receives from `remote`.
    Sink(UdpSink),
}

/// One UDP flow end on a host.
#[derive(Clone, Debug)]
pub struct UdpConn {
    /// Flow index in the scenario.
    pub flow: usize,
    /// Local port.
    pub local_port: u16,
    /// The other end's address and port.
    pub remote: (Ipv4Addr, u16),
    /// Source or sink.
    pub end: UdpEnd,
}

/// A host node: demultiplexes segments to its connections and sends what they produce.
#[derive(Clone, Debug)]
// In declaration order, what every segment in or out reads first (see `Link`'s note): with
// a host pair per flow each cache line of a host is a miss of its own.
#[repr(C)]
pub struct Host {
    conns: Vec<Conn>,
    by_tuple: HashMap<(u16, Ipv4Addr, u16), usize, FastHash>,
    /// The first connection's key in `by_tuple`: a host with one connection (a host pair per
    /// flow) finds it by one comparison, without hashing or reading the table's memory.
    first_key: (u16, Ipv4Addr, u16),
    /// Every connection's deadline, indexed: `poll_timeout` is the earliest and
    /// `handle_timeout` visits only the due ones, instead of scanning all connections.
    timers: TimerHeap,
    /// Connections touched since their output was last drained (a stack; duplicates harmless).
    dirty: Vec<usize>,
    /// Sample instants marked by [`Host::fold_max_cwnd`] so far.
    fold_epoch: u64,
    next_packet_id: u64,
    /// Multicast groups the host joins and leaves (`groups`).
    groups: Option<Box<HostGroups>>,
    addr: Ipv4Addr,
    ident: u16,
    /// The router may hold packets to forward: only then is it polled (an end host's every
    /// poll used to read it, a cache miss of its own with a host per flow).
    forwarding: bool,
    /// Forwarding of packets addressed to other nodes, and the routes of what it sends.
    router: Router,
    /// UDP sources and sinks, their lookup by (local port, remote address, remote port), the
    /// sources' next send times, and datagrams built and not yet polled.
    udp_timers: BTreeSet<(Instant, usize)>,
    udp_out: std::collections::VecDeque<Packet>,
    udp: Vec<UdpConn>,
    udp_by_tuple: HashMap<(u16, Ipv4Addr, u16), usize, FastHash>,
    /// Scratch for `handle_timeout` (the due connections, in index order).
    due: Vec<usize>,
    done: usize,
    stats: HostStats,
    /// Networks the scenario places behind this host (`subnets`).
    subnets: PrefixTable<()>,
}

impl Host {
    /// A host at `addr`; `id_base` makes packet ids unique across hosts.
    pub fn new(addr: Ipv4Addr, id_base: u64) -> Self {
        Self {
            addr,
            conns: Vec::new(),
            by_tuple: HashMap::default(),
            first_key: (0, Ipv4Addr::UNSPECIFIED, 0),
            timers: TimerHeap::new(),
            due: Vec::new(),
            dirty: Vec::new(),
            fold_epoch: 0,
            ident: 0,
            next_packet_id: id_base,
            done: 0,
            stats: HostStats::default(),
            router: Router::new(),
            forwarding: false,
            subnets: PrefixTable::default(),
            groups: None,
            udp: Vec::new(),
            udp_by_tuple: HashMap::default(),
            udp_timers: BTreeSet::new(),
            udp_out: std::collections::VecDeque::new(),
        }
    }

    /// Join and leave multicast groups as `groups` schedules.
    pub fn set_groups(&mut self, groups: HostGroups) {
        self.groups = Some(Box::new(groups));
    }

    /// The multicast groups' state, if the host has any.
    pub fn groups(&self) -> Option<&HostGroups> {
        self.groups.as_deref()
    }

    /// A packet to a multicast group: counted if the host is in the group, never forwarded.
    fn handle_multicast(&mut self, now: Instant, pkt: &Packet) {
        match self.groups.as_mut() {
            Some(g) => {
                let before = g.not_member;
                g.handle_packet(now, pkt);
                self.stats.not_member += g.not_member - before;
            }
            None => self.stats.not_member += 1,
        }
    }

    /// Send packets for `dst` out of `port`.
    pub fn add_route(&mut self, dst: Ipv4Addr, port: PortId) {
        self.router.add_route(dst, port);
    }

    /// The scenario places network `prefix` behind this host. A modelled host has nothing
    /// behind it: packets for the prefix are dropped and counted as `no_route` (in the
    /// emulator an [`ExternalHost`](super::ExternalHost) hands them to the real host instead).
    pub fn add_subnet(&mut self, prefix: Ipv4Prefix) {
        self.subnets.insert(prefix, ());
    }

    /// Send packets for addresses inside `prefix` (another host's subnet) out of `port`.
    pub fn add_prefix_route(&mut self, prefix: Ipv4Prefix, port: PortId) {
        self.router.add_prefix_route(prefix, port);
    }

    /// Send packets for destinations no route names out of `port` (what a host that hangs off
    /// one router does).
    pub fn set_default_route(&mut self, port: PortId) {
        self.router.set_default_route(port);
    }

    /// Add a connection. Listeners listen at once; openers connect at `start`.
    pub fn add_conn(
        &mut self,
        flow: usize,
        role: Role,
        mut ep: TcpEndpoint,
        app: App,
        start: Instant,
    ) -> usize {
        let (_, lport) = ep.local();
        let (raddr, rport) = ep.remote();
        if role == Role::Listener {
            ep.listen();
        }
        let i = self.conns.len();
        self.by_tuple.insert((lport, raddr, rport), i);
        if i == 0 {
            self.first_key = (lport, raddr, rport);
        }
        self.conns.push(Conn {
            flow,
            role,
            ep,
            app,
            start,
            started: role == Role::Listener,
            done_at: None,
            deadline: None,
            max_cwnd: 0,
            folded_at: self.fold_epoch,
        });
        self.refresh_deadline(i);
        i
    }

    /// Add a UDP source or sink for flow `flow` at `local_port`, talking to `remote`.
    pub fn add_udp(
        &mut self,
        flow: usize,
        local_port: u16,
        remote: (Ipv4Addr, u16),
        end: UdpEnd,
    ) -> usize {
        let i = self.udp.len();
        self.udp_by_tuple
            .insert((local_port, remote.0, remote.1), i);
        if let UdpEnd::Source(s) = &end {
            if let Some(t) = s.poll_timeout() {
                self.udp_timers.insert((t, i));
            }
        }
        self.udp.push(UdpConn {
            flow,
            local_port,
            remote,
            end,
        });
        i
    }

    /// The UDP sources and sinks.
    pub fn udp(&self) -> &[UdpConn] {
        &self.udp
    }

    /// Send every datagram due at `now` from the sources whose timers expired.
    fn send_udp(&mut self, now: Instant) {
        while let Some(&(t, i)) = self.udp_timers.first() {
            if t > now {
                break;
            }
            self.udp_timers.pop_first();
            let c = &mut self.udp[i];
            let UdpEnd::Source(src) = &mut c.end else {
                continue;
            };
            while let Some(stamp) = src.poll_datagram(now) {
                let ip = ipv4_udp(self.addr, c.remote.0, self.ident);
                self.ident = self.ident.wrapping_add(1);
                let udp = UdpRepr {
                    src_port: c.local_port,
                    dst_port: c.remote.1,
                    payload_len: src.packet_size(),
                };
                let mut pkt = Packet::build(src.packet_size() - UDP_STAMP_LEN as u32, |b| {
                    emit_ipv4_udp(&ip, &udp, &stamp, b)
                });
                pkt.id = self.next_packet_id;
                pkt.flow = c.flow as u32;
                self.next_packet_id += 1;
                self.udp_out.push_back(pkt);
            }
            if let Some(t) = src.poll_timeout() {
                self.udp_timers.insert((t, i));
            }
        }
    }

    fn handle_udp(&mut self, now: Instant, pkt: &Packet) {
        let Ok((ip, udp, stamp)) = parse_udp_packet(pkt) else {
            self.stats.malformed += 1;
            return;
        };
        let conn = self
            .udp_by_tuple
            .get(&(udp.dst_port, ip.src, udp.src_port))
            .map(|&i| &mut self.udp[i].end);
        match (conn, stamp) {
            (Some(UdpEnd::Sink(k)), Some(stamp)) => k.handle_datagram(now, stamp, udp.payload_len),
            _ => self.stats.no_udp_sink += 1,
        }
    }

    /// A sample instant: every opener's cwnd now counts toward its [`Conn::max_cwnd`]. Each
    /// connection folds it at its own next input, so a sample costs the same with one
    /// connection or 100 000 (a walk over all of them was a cache miss per connection).
    pub fn fold_max_cwnd(&mut self) {
        self.fold_epoch += 1;
    }

    /// The connections.
    pub fn conns(&self) -> &[Conn] {
        &self.conns
    }

    /// Connections whose application has finished.
    pub fn done_count(&self) -> usize {
        self.done
    }

    /// Counters.
    pub fn stats(&self) -> HostStats {
        self.stats
    }

    fn refresh_deadline(&mut self, i: usize) {
        let c = &mut self.conns[i];
        let start = (!c.started).then_some(c.start);
        let old = c.deadline;
        c_deadline(c, start);
        let new = c.deadline;
        if old != new {
            self.timers.set(i, new);
        }
    }

    fn after_input(&mut self, now: Instant, i: usize) {
        let c = &mut self.conns[i];
        c.app.update(now, &mut c.ep);
        if c.done_at.is_none() && c.started && c.app.is_done(&c.ep) && c.role == Role::Opener {
            c.done_at = Some(now);
            self.done += 1;
        }
        self.dirty.push(i);
    }
}

fn c_deadline(c: &mut Conn, start: Option<Instant>) {
    let mut d = c.ep.poll_timeout();
    for t in [start, c.app.wake_at()].into_iter().flatten() {
        d = Some(d.map_or(t, |d| d.min(t)));
    }
    c.deadline = d;
}

impl Node for Host {
    fn handle_packet(&mut self, now: Instant, port: PortId, pkt: Packet) {
        if pkt.header().get(16).is_some_and(|d| d & 0xf0 == 0xe0) {
            self.handle_multicast(now, &pkt);
            return;
        }
        if let Some(d) = pkt
            .header()
            .get(16..20)
            .filter(|d| *d != self.addr.octets())
        {
            if !self.subnets.is_empty() && self.subnets.lookup(ipv4(d)).is_some() {
                // For the network behind us, where nothing is modelled.
                self.router.refuse(&pkt);
                return;
            }
            // Not ours: forward like a router (the scenario lets any node forward).
            self.router.handle_packet(now, port, pkt);
            self.forwarding = true;
            return;
        }
        if pkt.header().get(9) == Some(&IPPROTO_UDP) {
            self.handle_udp(now, &pkt);
            return;
        }
        let (ip, seg) = match parse_packet(&pkt) {
            Ok(x) => x,
            Err(_) => {
                self.stats.malformed += 1;
                return;
            }
        };
        let key = (seg.dst_port, ip.src, seg.src_port);
        // With one connection the table holds exactly `first_key` → 0.
        let found = match self.conns.len() {
            1 => (key == self.first_key).then_some(0),
            _ => self.by_tuple.get(&key).copied(),
        };
        let Some(i) = found else {
            self.stats.no_connection += 1;
            return;
        };
        let c = &mut self.conns[i];
        c.fold(self.fold_epoch);
        c.ep.handle_segment(now, &seg);
        self.after_input(now, i);
    }

    fn handle_timeout(&mut self, now: Instant) {
        if let Some(g) = self.groups.as_mut() {
            if g.poll_timeout().is_some_and(|t| t <= now) {
                g.handle_timeout(now);
            }
        }
        // Deadlines change only when output is drained, so the due set is fixed for this call;
        // visit it in connection order, as a scan of all connections would.
        let mut due = std::mem::take(&mut self.due);
        due.clear();
        self.timers.due(now, &mut due);
        due.sort_unstable();
        for &i in &due {
            let c = &mut self.conns[i];
            c.fold(self.fold_epoch);
            if !c.started && now >= c.start {
                c.started = true;
                c.ep.connect(now);
            }
            c.ep.handle_timeout(now);
            self.after_input(now, i);
        }
        self.due = due;
        if !self.udp_timers.is_empty() {
            self.send_udp(now);
        }
    }

    fn poll_transmit(&mut self, now: Instant) -> Option<Transmit> {
        if self.forwarding {
            if let Some(tx) = self.router.poll_transmit(now) {
                return Some(tx);
            }
            self.forwarding = false;
        }
        while let Some((dst, msg)) = self.groups.as_mut().and_then(|g| g.poll_message()) {
            let Some(port) = self.router.route_of(dst) else {
                self.stats.no_route += 1;
                continue;
            };
            let mut pkt = emit_igmp(self.addr, dst, self.ident, &msg);
            self.ident = self.ident.wrapping_add(1);
            pkt.id = self.next_packet_id;
            self.next_packet_id += 1;
            return Some(Transmit { port, pkt });
        }
        while let Some(&i) = self.dirty.last() {
            let c = &mut self.conns[i];
            if let Some(seg) = c.ep.poll_transmit(now) {
                // Sending may free buffer space or complete a request: let the app react.
                c.app.update(now, &mut c.ep);
                let flow = c.flow as u32;
                let (raddr, _) = c.ep.remote();
                let Some(port) = self.router.route_of(raddr) else {
                    self.stats.no_route += 1;
                    continue;
                };
                let ip = Ipv4Repr::tcp(self.addr, raddr, self.ident);
                self.ident = self.ident.wrapping_add(1);
                let mut pkt = Packet::build(seg.payload_len, |buf| emit_ipv4_tcp(&ip, &seg, buf));
                pkt.id = self.next_packet_id;
                pkt.flow = flow;
                self.next_packet_id += 1;
                return Some(Transmit { port, pkt });
            }
            self.dirty.pop();
            self.refresh_deadline(i);
        }
        while let Some(pkt) = self.udp_out.pop_front() {
            let Some(port) = self.router.route_of(ipv4(&pkt.header()[16..20])) else {
                self.stats.no_route += 1;
                continue;
            };
            return Some(Transmit { port, pkt });
        }
        None
    }

    fn poll_timeout(&self) -> Option<Instant> {
        let tcp = self.timers.first();
        let udp = self.udp_timers.first().map(|&(u, _)| u);
        let groups = self.groups.as_ref().and_then(|g| g.poll_timeout());
        // Pairwise: `[..].into_iter().flatten().min()` did not fold away, and this runs after
        // every event at the host.
        let earliest = |a: Option<Instant>, b: Option<Instant>| match (a, b) {
            (Some(x), Some(y)) => Some(x.min(y)),
            (x, y) => x.or(y),
        };
        earliest(earliest(tcp, udp), groups)
    }

    fn poll_drop(&mut self) -> Option<crate::Dropped> {
        self.router.poll_drop()
    }

    fn drop_counts(&self) -> [u64; crate::DropReason::ALL.len()] {
        self.router.drop_counts()
    }
}

/// The address in four header bytes.
fn ipv4(b: &[u8]) -> Ipv4Addr {
    Ipv4Addr::new(b[0], b[1], b[2], b[3])
}

/// A multiply-fold hash over the key's integers: the lookup keys are a few bytes of addresses
/// and ports, for which SipHash was a visible share of a run. No map here is ever iterated, so
/// the hasher cannot affect output.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct FastHasher(u64);

impl FastHasher {
    #[inline]
    fn fold(&mut self, x: u64) {
        // FxHash's step: rotate, mix in the word, multiply by an odd constant.
        self.0 = (self.0.rotate_left(5) ^ x).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
}

impl Hasher for FastHasher {
    #[inline]
    fn finish(&self) -> u64 {
        // The multiply leaves the low bits weak; bring the high ones down (hashbrown indexes
        // buckets with the low bits).
        self.0 ^ (self.0 >> 32)
    }

    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let mut w = [0u8; 8];
            w.copy_from_slice(c);
            self.fold(u64::from_le_bytes(w));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut w = [0u8; 8];
            w[..rest.len()].copy_from_slice(rest);
            self.fold(u64::from_le_bytes(w));
        }
    }

    #[inline]
    fn write_u8(&mut self, i: u8) {
        self.fold(u64::from(i));
    }

    #[inline]
    fn write_u16(&mut self, i: u16) {
        self.fold(u64::from(i));
    }

    #[inline]
    fn write_u32(&mut self, i: u32) {
        self.fold(u64::from(i));
    }

    #[inline]
    fn write_u64(&mut self, i: u64) {
        self.fold(i);
    }

    #[inline]
    fn write_usize(&mut self, i: usize) {
        self.fold(i as u64);
    }
}

/// Builds [`FastHasher`]s.
pub(crate) type FastHash = BuildHasherDefault<FastHasher>;

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::BuildHasher;

    /// A modelled host drops what is for its subnet (nothing is behind it) as `no_route`,
    /// instead of bouncing it back along its default route until the TTL runs out; other
    /// transit is forwarded.
    #[test]
    fn packets_for_its_subnet_are_dropped_as_no_route() {
        let mut h = Host::new(Ipv4Addr::new(10, 0, 0, 1), 0);
        h.set_default_route(PortId(0));
        h.add_subnet("10.9.1.0/24".parse().expect("valid"));
        let to = |d: [u8; 4]| {
            let mut hdr = [0u8; 20];
            hdr[0] = 0x45;
            hdr[8] = 64;
            hdr[16..20].copy_from_slice(&d);
            let mut p = Packet::new(&hdr, 0);
            p.id = u64::from(d[2]);
            p
        };
        h.handle_packet(Instant::ZERO, PortId(0), to([10, 9, 1, 200]));
        assert!(h.poll_transmit(Instant::ZERO).is_none());
        let d = h.poll_drop().expect("reported");
        assert_eq!((d.reason, d.id), (crate::DropReason::NoRoute, 1));
        assert_eq!(h.drop_counts()[crate::DropReason::NoRoute as usize], 1);
        h.handle_packet(Instant::ZERO, PortId(0), to([10, 9, 2, 200]));
        let fwd = h.poll_transmit(Instant::ZERO).expect("forwarded");
        assert_eq!((fwd.port, fwd.pkt.id), (PortId(0), 2));
        // Another host's subnet, by its prefix route rather than the default.
        h.add_prefix_route("10.9.3.0/24".parse().expect("valid"), PortId(1));
        h.handle_packet(Instant::ZERO, PortId(0), to([10, 9, 3, 200]));
        let fwd = h.poll_transmit(Instant::ZERO).expect("forwarded");
        assert_eq!((fwd.port, fwd.pkt.id), (PortId(1), 3));
        assert!(h.poll_drop().is_none());
    }

    /// Two hosts joined by a wire with the same delay both ways, driven one step at a time.
    struct Pair {
        a: Host,
        b: Host,
        /// (arrival, to_b, packet), in arrival order.
        wire: std::collections::VecDeque<(Instant, bool, Packet)>,
        now: Instant,
        delay: crate::Duration,
    }

    impl Pair {
        fn new(a: Host, b: Host, delay: crate::Duration) -> Self {
            let (wire, now) = (Default::default(), Instant::ZERO);
            Self {
                a,
                b,
                wire,
                now,
                delay,
            }
        }

        /// Go to the earliest instant anything is due, if before `until`: deliver what
        /// arrives, run due timers, and put every packet sent on the wire if `keep(to_b,
        /// packet)` says so. The instant, or `None` when nothing is due before `until`.
        fn step(
            &mut self,
            until: Instant,
            mut keep: impl FnMut(bool, &Packet) -> bool,
        ) -> Option<Instant> {
            let due = [self.a.poll_timeout(), self.b.poll_timeout()];
            let t = due
                .into_iter()
                .chain([self.wire.front().map(|w| w.0)])
                .flatten()
                .min()
                .filter(|&t| t < until)?;
            let now = self.now.max(t);
            self.now = now;
            while let Some((_, to_b, pkt)) = self.wire.pop_front_if(|w| w.0 <= now) {
                let h = if to_b { &mut self.b } else { &mut self.a };
                h.handle_packet(now, PortId(0), pkt);
            }
            for (h, to_b) in [(&mut self.a, true), (&mut self.b, false)] {
                if h.poll_timeout().is_some_and(|d| d <= now) {
                    h.handle_timeout(now);
                }
                while let Some(tx) = h.poll_transmit(now) {
                    if keep(to_b, &tx.pkt) {
                        self.wire.push_back((now + self.delay, to_b, tx.pkt));
                    }
                }
            }
            Some(now)
        }
    }

    /// Two hosts, a bulk transfer between them over a 10 ms path: after every step each
    /// host's `poll_timeout` is exactly its connection's own deadline (the opener's start
    /// until it starts, then the endpoint's timers), so the indexed heap follows every move.
    #[test]
    fn poll_timeout_follows_the_connection_deadline() {
        let (a_addr, b_addr) = (Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 2));
        let start = Instant(5_000_000);
        let mut a = Host::new(a_addr, 0);
        let mut b = Host::new(b_addr, 1 << 40);
        a.set_default_route(PortId(0));
        b.set_default_route(PortId(0));
        let cfg = crate::testnet::tcp(1000);
        let bulk = App::BulkSender {
            bytes: Some(200_000),
            until: None,
            written: 0,
            closed: false,
        };
        a.add_conn(
            0,
            Role::Opener,
            TcpEndpoint::new(cfg.clone(), (a_addr, 40_000), (b_addr, 80), 1),
            bulk,
            start,
        );
        b.add_conn(
            0,
            Role::Listener,
            TcpEndpoint::new(cfg, (b_addr, 80), (a_addr, 40_000), 7),
            App::Sink,
            Instant::ZERO,
        );
        assert_eq!(a.poll_timeout(), Some(start));
        let mut net = Pair::new(a, b, crate::Duration::from_millis(10));
        let mut steps = 0;
        let mut ids = Vec::new();
        let mut seen_cwnd = 0;
        while let Some(now) = net.step(Instant(3_000_000_000), |_, pkt| {
            ids.push(pkt.id);
            true
        }) {
            let (a, b) = (&mut net.a, &mut net.b);
            // A sample at every step (as a driver marks its sample instants): the opener's
            // largest cwnd seen, folded at its next input, never runs ahead of the samples;
            // the listener's is never folded.
            a.fold_max_cwnd();
            b.fold_max_cwnd();
            seen_cwnd = seen_cwnd.max(a.conns()[0].ep.cwnd());
            assert!(a.conns()[0].max_cwnd <= seen_cwnd);
            for h in [&*a, &*b] {
                let c = &h.conns()[0];
                let own = if c.started {
                    c.ep.poll_timeout()
                } else {
                    Some(c.start)
                };
                let own = [own, c.app.wake_at()].into_iter().flatten().min();
                assert_eq!(h.poll_timeout(), own, "at {now:?}");
            }
            steps += 1;
        }
        assert!(steps > 20, "{steps} steps");
        let (a, b) = (&net.a, &net.b);
        // Each host numbers its packets from its base, one by one.
        let (from_a, from_b): (Vec<u64>, Vec<u64>) = ids.iter().partition(|&&i| i < 1 << 40);
        assert!(from_a.iter().copied().eq(0..from_a.len() as u64));
        assert!(from_b
            .iter()
            .copied()
            .eq((1 << 40)..(1 << 40) + from_b.len() as u64));
        assert_eq!(b.conns()[0].ep.bytes_delivered(), 200_000);
        assert!(seen_cwnd > 10_000, "cwnd grew: {seen_cwnd}");
        let opener = &a.conns()[0];
        assert_eq!(opener.max_cwnd.max(opener.ep.cwnd()), seen_cwnd);
        assert_eq!(b.conns()[0].max_cwnd, 0);
    }

    /// A host with three openers, samples marked at some steps of a transfer: each opener's
    /// `max_cwnd` is folded only at its own inputs, never exceeds the largest cwnd it had at a
    /// marked sample, and with its cwnd now gives exactly that largest; marking a sample
    /// visits no connection (an opener with no input since keeps its `max_cwnd` as it was).
    #[test]
    fn samples_fold_into_each_opener_at_its_own_next_input() {
        let (a_addr, b_addr) = (Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 2));
        let mut a = Host::new(a_addr, 0);
        let mut b = Host::new(b_addr, 1 << 40);
        a.set_default_route(PortId(0));
        b.set_default_route(PortId(0));
        let cfg = crate::testnet::tcp(1000);
        // Different sizes and starts, so the openers' cwnds differ and change at different
        // steps.
        for (i, (bytes, start_ms)) in [(300_000, 0), (60_000, 7), (150_000, 40)]
            .into_iter()
            .enumerate()
        {
            let port = 40_000 + i as u16;
            a.add_conn(
                i,
                Role::Opener,
                TcpEndpoint::new(cfg.clone(), (a_addr, port), (b_addr, 80), 1),
                App::BulkSender {
                    bytes: Some(bytes),
                    until: None,
                    written: 0,
                    closed: false,
                },
                Instant(start_ms * 1_000_000),
            );
            b.add_conn(
                i,
                Role::Listener,
                TcpEndpoint::new(cfg.clone(), (b_addr, 80), (a_addr, port), 7),
                App::Sink,
                Instant::ZERO,
            );
        }
        let mut net = Pair::new(a, b, crate::Duration::from_millis(10));
        let mut seen = [0u64; 3];
        let mut step = 0u64;
        // Every 40th packet from a is lost, so cwnds also fall: the largest is then not the
        // last, and only a fold at the right input keeps it.
        let mut sent = 0u64;
        while net
            .step(Instant(5_000_000_000), |to_b, _| {
                sent += u64::from(to_b);
                !(to_b && sent.is_multiple_of(40))
            })
            .is_some()
        {
            let a = &mut net.a;
            step += 1;
            if step.is_multiple_of(2) {
                let before: Vec<u64> = a.conns().iter().map(|c| c.max_cwnd).collect();
                a.fold_max_cwnd();
                let after: Vec<u64> = a.conns().iter().map(|c| c.max_cwnd).collect();
                assert_eq!(before, after, "a sample folded eagerly");
                for (s, c) in seen.iter_mut().zip(a.conns()) {
                    *s = (*s).max(c.ep.cwnd());
                }
            }
            for (s, c) in seen.iter().zip(a.conns()) {
                assert!(c.max_cwnd <= *s, "{} > {s} at step {step}", c.max_cwnd);
            }
        }
        assert!(step > 40, "{step} steps");
        let mut fell = 0;
        for (i, (s, c)) in seen.iter().zip(net.a.conns()).enumerate() {
            assert!(c.ep.stats().retransmissions > 0, "opener {i} lost nothing");
            assert_eq!(c.max_cwnd.max(c.ep.cwnd()), *s, "opener {i}");
            if c.ep.cwnd() < *s {
                // Its largest was sampled and then changed by an input: folded there.
                assert_eq!(c.max_cwnd, *s, "opener {i}");
                fell += 1;
            }
        }
        assert!(fell >= 2, "{fell} openers ended below their largest cwnd");
        assert!(net.b.conns().iter().all(|c| c.max_cwnd == 0));
    }

    /// A connection to an address no route names: its SYN is counted as `no_route` (once per
    /// attempt) and nothing leaves.
    #[test]
    fn a_segment_without_a_route_is_counted_and_not_sent() {
        let (a_addr, far) = (Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 9, 9, 9));
        let mut a = Host::new(a_addr, 0);
        a.add_route(Ipv4Addr::new(10, 0, 0, 2), PortId(0));
        let ep = TcpEndpoint::new(crate::testnet::tcp(1000), (a_addr, 40_000), (far, 80), 1);
        a.add_conn(0, Role::Opener, ep, App::Sink, Instant::ZERO);
        a.handle_timeout(Instant::ZERO);
        assert!(a.poll_transmit(Instant::ZERO).is_none());
        assert_eq!(a.stats().no_route, 1);
    }

    /// SYNs from four ports of one peer to a listening host: each reaches the connection
    /// whose (local port, remote address, remote port) it names, and is answered; one that
    /// names none is counted as `no_connection` and answered by nothing. With one connection
    /// (found by one comparison) and with three (found through the table).
    #[test]
    fn segments_reach_their_own_connection_or_are_counted() {
        let (a_addr, b_addr) = (Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 2));
        let cfg = crate::testnet::tcp(1000);
        let mut b = Host::new(b_addr, 1 << 40);
        b.set_default_route(PortId(0));
        for (i, port) in [40_000u16, 40_001, 40_002, 40_003].into_iter().enumerate() {
            let ep = TcpEndpoint::new(cfg.clone(), (b_addr, port), (a_addr, 80), 1);
            b.add_conn(i, Role::Opener, ep, App::Sink, Instant::ZERO);
        }
        b.handle_timeout(Instant::ZERO);
        let syns: Vec<Packet> = std::iter::from_fn(|| b.poll_transmit(Instant::ZERO))
            .map(|tx| tx.pkt)
            .collect();
        assert_eq!(syns.len(), 4);
        for listeners in [vec![40_001u16], vec![40_000, 40_002, 40_003]] {
            let mut a = Host::new(a_addr, 0);
            a.set_default_route(PortId(0));
            for (i, &port) in listeners.iter().enumerate() {
                let ep = TcpEndpoint::new(cfg.clone(), (a_addr, 80), (b_addr, port), 7);
                a.add_conn(i, Role::Listener, ep, App::Sink, Instant::ZERO);
            }
            for syn in &syns {
                a.handle_packet(Instant::ZERO, PortId(0), syn.clone());
            }
            let answered: Vec<u16> = std::iter::from_fn(|| a.poll_transmit(Instant::ZERO))
                .map(|tx| {
                    let (_, seg) = parse_packet(&tx.pkt).expect("a TCP segment");
                    assert!(seg.flags.contains(crate::wire::TcpFlags::SYN));
                    seg.dst_port
                })
                .collect();
            let mut answered = answered;
            answered.sort_unstable();
            assert_eq!(answered, listeners, "answered");
            assert_eq!(a.stats().no_connection, 4 - listeners.len() as u64);
            for c in a.conns() {
                assert_eq!(c.ep.state(), crate::tcp::State::SynReceived);
            }
        }
    }

    #[test]
    fn fast_hash_separates_addresses_that_differ_in_one_octet() {
        // Both the high and the low bits must vary, or hashbrown would pile these in one group.
        let h = FastHash::default();
        let hashes: Vec<u64> = (0..=255u8)
            .map(|i| h.hash_one(Ipv4Addr::new(10, 0, 0, i)))
            .collect();
        let low: std::collections::HashSet<u64> = hashes.iter().map(|x| x & 0xff).collect();
        let high: std::collections::HashSet<u64> = hashes.iter().map(|x| x >> 57).collect();
        assert!(low.len() > 128, "low bits: {} distinct of 256", low.len());
        assert!(
            high.len() > 64,
            "top 7 bits: {} distinct of 256",
            high.len()
        );
    }
}
