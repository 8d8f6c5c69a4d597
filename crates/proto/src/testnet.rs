//! Test harness: opener `A` — middlebox `M` — listener `B`, two duplex links, every packet
//! through the real wire format and the real [`Link`] model (rate, delay), with the tests' own
//! fault injection (drop the n-th data packet, random loss, a cut) in front of each link. `A` writes `total` bytes and closes; `B` reads at once. Shared
//! by the tests of the middleboxes (split relay, spoofing gateway, Snoop, delayed dupACKs).

use std::net::Ipv4Addr;

use crate::link::{Link, LinkConfig, QueueConfig};

use crate::rand::Rng;
use crate::tcp::{TcpConfig, TcpEndpoint};
use crate::time::{Bitrate, Duration, Instant};
use crate::wire::{emit_ipv4_tcp, parse_packet, Ipv4Repr, TcpRepr};
use crate::{Node, Packet, PortId};

pub(crate) const A: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);
pub(crate) const B: Ipv4Addr = Ipv4Addr::new(10, 0, 2, 1);

/// Where a packet is going.
#[derive(Clone, Copy, Debug, Eq, Ord, PartialEq, PartialOrd)]
pub(crate) enum Dest {
    A,
    B,
    /// The middlebox, arriving on port 0 (from A) or 1 (from B).
    M(u16),
}

/// One direction of a link: the tests' fault injection, then the link model itself.
#[derive(Clone, Debug)]
pub(crate) struct Hop {
    pub delay: Duration,
    /// `None`: no serialisation time (an infinite rate).
    pub rate: Option<Bitrate>,
    /// Built from `delay` and `rate` when the net starts.
    link: Option<Link>,
    /// Drop the n-th data packet (1-based) crossing this hop.
    pub drop_data: Vec<u64>,
    /// Drop every packet (any kind) with this probability.
    pub per: f64,
    /// Drop every packet while this is true (a cut link).
    pub cut: bool,
    pub data_seen: u64,
    pub dropped: u64,
}

impl Hop {
    pub fn new(delay_ms: u64, rate: Option<Bitrate>) -> Self {
        Self {
            delay: Duration::from_millis(delay_ms),
            rate,
            link: None,
            drop_data: Vec::new(),
            per: 0.0,
            cut: false,
            data_seen: 0,
            dropped: 0,
        }
    }
}

/// The four hops: A→M, M→B, B→M, M→A.
pub(crate) struct Net<M: Node> {
    pub a: TcpEndpoint,
    pub b: TcpEndpoint,
    pub m: M,
    pub now: Instant,
    pub hops: [Hop; 4],
    pub total: u64,
    /// Close A once everything is written (default true).
    pub close: bool,
    written: u64,
    closed: bool,
    rng: Rng,
    /// Every segment A received: (time, segment).
    pub a_rx: Vec<(Instant, TcpRepr)>,
    /// Every segment B received.
    pub b_rx: Vec<(Instant, TcpRepr)>,
    /// Every segment M sent toward B (after M).
    pub m_to_b: Vec<(Instant, TcpRepr)>,
    /// Real-bytes mode ([`Net::with_real_bytes`]): the bytes A writes.
    data: Option<Vec<u8>>,
    /// Real-bytes mode: the bytes B's application read, in order.
    pub b_data: Vec<u8>,
    manual_b: bool,
    /// Move this many payload bytes of every real packet from A into its header before the
    /// middlebox sees it (a header split that ends inside the payload).
    pub resplit: usize,
}

/// Where each hop delivers: A→M at M's port 0, M→B at B, B→M at M's port 1, M→A at A.
const HOP_DEST: [Dest; 4] = [Dest::M(0), Dest::B, Dest::M(1), Dest::A];

pub(crate) const AM: usize = 0;
pub(crate) const MB: usize = 1;
pub(crate) const BM: usize = 2;
pub(crate) const MA: usize = 3;

impl<M: Node> Net<M> {
    pub fn new(m: M, ca: TcpConfig, cb: TcpConfig, mut hops: [Hop; 4], total: u64) -> Self {
        for h in &mut hops {
            let config = LinkConfig {
                // No rate: a packet takes no time to send.
                rate: h.rate.unwrap_or(Bitrate::INFINITE),
                delay: h.delay,
                queue: QueueConfig {
                    limit_packets: Some(u32::MAX),
                    ..QueueConfig::default()
                },
                ..LinkConfig::default()
            };
            h.link = Some(Link::new(&config, Rng::new(1, 1)));
        }
        let mut a = TcpEndpoint::new(ca, (A, 40000), (B, 80), 1000);
        let mut b = TcpEndpoint::new(cb, (B, 80), (A, 40000), 9000);
        b.listen();
        a.connect(Instant::ZERO);
        Self {
            a,
            b,
            m,
            now: Instant::ZERO,
            hops,
            total,
            close: true,
            written: 0,
            closed: false,
            rng: Rng::new(7, 7),
            a_rx: Vec::new(),
            b_rx: Vec::new(),
            m_to_b: Vec::new(),
            data: None,
            b_data: Vec::new(),
            manual_b: false,
            resplit: 0,
        }
    }

    /// A and B carry real bytes: A writes `total` pseudo-random bytes (seeded by `seed`), every
    /// packet carries its payload with checksums over it, and B's application reads into
    /// [`Net::b_data`].
    pub fn with_real_bytes(mut self, seed: u64) -> Self {
        let mut rng = Rng::new(seed, 11);
        let data = (0..self.total).map(|_| rng.next_u32() as u8).collect();
        assert!(self.a.carry_bytes() && self.b.carry_bytes());
        self.data = Some(data);
        self.with_manual_reader()
    }

    /// B's application reads explicitly after every segment ([`TcpEndpoint::read_to`]), as it
    /// must in real-bytes mode: with this, a virtual run makes exactly the reads a real one does.
    pub fn with_manual_reader(mut self) -> Self {
        self.b.set_manual_read();
        self.manual_b = true;
        self
    }

    /// Real-bytes mode: what A wrote.
    pub fn sent_data(&self) -> &[u8] {
        self.data.as_deref().unwrap_or(&[])
    }

    fn put(&mut self, hop: usize, pkt: Packet) {
        let h = &mut self.hops[hop];
        if pkt.payload_len > 0 {
            h.data_seen += 1;
            if h.drop_data.contains(&h.data_seen) {
                h.dropped += 1;
                return;
            }
        }
        if h.cut || (h.per > 0.0 && self.rng.chance(h.per)) {
            h.dropped += 1;
            return;
        }
        if let Some(link) = h.link.as_mut() {
            link.handle_packet(self.now, PortId(0), pkt);
        }
    }

    fn emit(ep: &TcpEndpoint, seg: &TcpRepr) -> Packet {
        let ip = Ipv4Repr::tcp(ep.local().0, ep.remote().0, 0);
        if ep.carries_bytes() {
            return crate::wire::emit_tcp_packet(&ip, seg, |v| {
                assert!(
                    ep.copy_payload(seg, v),
                    "the sender holds its segment's bytes"
                );
            })
            .expect("copy_payload wrote the segment's length");
        }
        Packet::build(seg.payload_len, |buf| emit_ipv4_tcp(&ip, seg, buf))
    }

    fn drain(&mut self) {
        if let Some(data) = self.data.as_deref() {
            let from = self.written as usize;
            self.written += self.a.send_bytes(self.now, &data[from..]) as u64;
        } else if self.written < self.total {
            self.written += self.a.send(self.now, self.total - self.written);
        }
        if self.close && self.written == self.total && !self.closed {
            self.a.close(self.now);
            self.closed = true;
        }
        while let Some(seg) = self.a.poll_transmit(self.now) {
            let mut p = Self::emit(&self.a, &seg);
            if self.resplit > 0 && p.has_real_payload() {
                let mut wire = Vec::new();
                p.write_wire(&mut wire);
                let at = (p.header_len() + self.resplit).min(wire.len());
                if let Some(q) = Packet::from_wire(&wire, at) {
                    p = q;
                }
            }
            self.put(AM, p);
        }
        while let Some(seg) = self.b.poll_transmit(self.now) {
            let p = Self::emit(&self.b, &seg);
            self.put(BM, p);
        }
        while let Some(tx) = self.m.poll_transmit(self.now) {
            let h = tx.pkt.header();
            let dst = Ipv4Addr::new(h[16], h[17], h[18], h[19]);
            if dst == B {
                if let Ok((_, seg)) = parse_packet(&tx.pkt) {
                    self.m_to_b.push((self.now, seg));
                }
                self.put(MB, tx.pkt);
            } else {
                self.put(MA, tx.pkt);
            }
        }
    }

    /// Run until `end` or until nothing is left to do.
    pub fn run_until(&mut self, end: Instant) {
        self.drain();
        loop {
            let next_pkt = self
                .hops
                .iter()
                .filter_map(|h| h.link.as_ref().and_then(Node::poll_timeout))
                .min();
            let next_timer = [
                self.a.poll_timeout(),
                self.b.poll_timeout(),
                self.m.poll_timeout(),
            ]
            .into_iter()
            .flatten()
            .min();
            let Some(next) = [next_pkt, next_timer].into_iter().flatten().min() else {
                return;
            };
            if next > end {
                self.now = end;
                return;
            }
            self.now = self.now.max(next);
            if next_pkt == Some(next) {
                for (hop, dest) in HOP_DEST.into_iter().enumerate() {
                    let Some(link) = self.hops[hop].link.as_mut() else {
                        continue;
                    };
                    if link.poll_timeout().is_none_or(|t| t > self.now) {
                        continue;
                    }
                    link.handle_timeout(self.now);
                    while let Some(tx) = self.hops[hop]
                        .link
                        .as_mut()
                        .and_then(|l| l.poll_transmit(self.now))
                    {
                        self.deliver(dest, tx.pkt);
                        self.drain();
                    }
                }
            } else {
                self.a.handle_timeout(self.now);
                self.b.handle_timeout(self.now);
                self.m.handle_timeout(self.now);
            }
            self.drain();
        }
    }

    fn deliver(&mut self, to: Dest, pkt: Packet) {
        match to {
            Dest::M(port) => self.m.handle_packet(self.now, PortId(port), pkt),
            Dest::A | Dest::B => {
                let (_, seg) = parse_packet(&pkt).expect("every packet in the test net parses");
                if to == Dest::A {
                    self.a_rx.push((self.now, seg));
                    self.a
                        .handle_segment_with_payload(self.now, &seg, pkt.payload());
                } else {
                    self.b_rx.push((self.now, seg));
                    self.b
                        .handle_segment_with_payload(self.now, &seg, pkt.payload());
                    if self.data.is_some() {
                        self.b.read_bytes(self.now, &mut self.b_data, usize::MAX);
                    } else if self.manual_b {
                        self.b.read_to(self.now, self.b.bytes_received());
                    }
                }
            }
        }
    }
}

/// A settings table for tests: Reno/SACK on request, `mss` payload, timestamps off unless asked.
pub(crate) fn tcp(mss: u16) -> TcpConfig {
    TcpConfig {
        mss,
        timestamps: false,
        cc: crate::tcp::CcAlgorithm::Reno,
        ..TcpConfig::default()
    }
}
