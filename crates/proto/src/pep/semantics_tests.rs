//! Split-TCP semantics a PEP operator relies on (docs/deploy.md, "Split-TCP semantics"): the
//! handshake, RST, FIN half-close, zero added latency, limits, backpressure and idle reaping,
//! each asserted on a hand-timed opener — relay — listener line with exact instants.

use std::collections::VecDeque;
use std::net::Ipv4Addr;

use super::*;
use crate::flow::testing::{many, segment};
use crate::tcp::{State, TcpEndpoint};
use crate::testnet::{tcp, A, B};
use crate::time::{Duration, Instant};
use crate::units::ByteSize;
use crate::wire::{emit_ipv4_tcp, parse_packet, Ipv4Repr, SeqNumber, TcpFlags, TcpRepr};
use crate::{Node, Packet, PortId, Transmit};

/// A router that forwards every packet at once: "no PEP".
#[derive(Default)]
struct Forward(VecDeque<Packet>);

impl Node for Forward {
    fn handle_packet(&mut self, _now: Instant, _port: PortId, pkt: Packet) {
        self.0.push_back(pkt);
    }
    fn handle_timeout(&mut self, _now: Instant) {}
    fn poll_transmit(&mut self, _now: Instant) -> Option<Transmit> {
        self.0.pop_front().map(|pkt| Transmit {
            port: PortId(0),
            pkt,
        })
    }
    fn poll_timeout(&self) -> Option<Instant> {
        None
    }
}

#[derive(Clone, Copy, Debug, Eq, PartialEq)]
enum To {
    A,
    B,
    M(u16),
}

/// A (opener, 10.0.0.1:40000) — M — B (listener, 10.0.2.1:80), fixed one-way delays, no rate:
/// every instant in a test is a sum of delays.
struct Line<M: Node> {
    a: TcpEndpoint,
    b: TcpEndpoint,
    m: M,
    now: Instant,
    am: Duration,
    mb: Duration,
    /// In flight: (arrival, order, destination, packet).
    q: Vec<(Instant, u64, To, Packet)>,
    order: u64,
    /// What A and B received, and what M sent (to A or B), with instants.
    a_rx: Vec<(Instant, TcpRepr)>,
    b_rx: Vec<(Instant, TcpRepr)>,
    m_tx: Vec<(Instant, To, TcpRepr)>,
    /// When M received a packet.
    m_rx: Vec<Instant>,
    /// B has no listener: it answers a SYN with RST|ACK as a host's stack does.
    b_refuses: bool,
    /// Data segments M sends toward B wait here instead of travelling.
    hold_data_to_b: bool,
    held: Vec<Packet>,
}

impl<M: Node> Line<M> {
    fn new(m: M, am_ms: u64, mb_ms: u64) -> Self {
        let mut b = TcpEndpoint::new(tcp(1000), (B, 80), (A, 40000), 9000);
        b.listen();
        Self {
            a: TcpEndpoint::new(tcp(1000), (A, 40000), (B, 80), 1000),
            b,
            m,
            now: Instant::ZERO,
            am: Duration::from_millis(am_ms),
            mb: Duration::from_millis(mb_ms),
            q: Vec::new(),
            order: 0,
            a_rx: Vec::new(),
            b_rx: Vec::new(),
            m_tx: Vec::new(),
            m_rx: Vec::new(),
            b_refuses: false,
            hold_data_to_b: false,
            held: Vec::new(),
        }
    }

    fn send(&mut self, delay: Duration, to: To, pkt: Packet) {
        self.order += 1;
        self.q.push((self.now + delay, self.order, to, pkt));
    }

    /// Move every output of A, B and M onto the wire.
    fn flush(&mut self) {
        while let Some(seg) = self.a.poll_transmit(self.now) {
            let p = pkt(A, B, &seg);
            self.send(self.am, To::M(0), p);
        }
        while let Some(seg) = self.b.poll_transmit(self.now) {
            let p = pkt(B, A, &seg);
            self.send(self.mb, To::M(1), p);
        }
        while let Some(tx) = self.m.poll_transmit(self.now) {
            let (ip, seg) = parse_packet(&tx.pkt).expect("M sends valid packets");
            let to = if ip.dst == B { To::B } else { To::A };
            self.m_tx.push((self.now, to, seg));
            if to == To::B && self.hold_data_to_b && seg.payload_len > 0 {
                self.held.push(tx.pkt);
                continue;
            }
            let d = if to == To::B { self.mb } else { self.am };
            self.send(d, to, tx.pkt);
        }
    }

    /// Run until `end`; `app` runs after every event (the hosts' applications).
    fn run(&mut self, end: Instant, mut app: impl FnMut(&mut Self)) {
        loop {
            app(self);
            self.flush();
            let next_pkt = self.q.iter().map(|e| (e.0, e.1)).min();
            let timers = [
                self.a.poll_timeout(),
                self.b.poll_timeout(),
                self.m.poll_timeout(),
            ];
            let next_timer = timers.into_iter().flatten().min();
            let next = match (next_pkt, next_timer) {
                (Some((p, _)), Some(t)) => p.min(t),
                (Some((p, _)), None) => p,
                (None, Some(t)) => t,
                (None, None) => return,
            };
            if next > end {
                self.now = end;
                return;
            }
            self.now = next;
            if let Some((t, o)) = next_pkt.filter(|&(t, _)| t == next) {
                let i = self
                    .q
                    .iter()
                    .position(|e| (e.0, e.1) == (t, o))
                    .expect("in q");
                let (_, _, to, p) = self.q.swap_remove(i);
                self.deliver(to, p);
            } else {
                self.a.handle_timeout(self.now);
                self.b.handle_timeout(self.now);
                self.m.handle_timeout(self.now);
            }
        }
    }

    fn deliver(&mut self, to: To, p: Packet) {
        let now = self.now;
        match to {
            To::M(port) => {
                self.m_rx.push(now);
                self.m.handle_packet(now, PortId(port), p);
            }
            To::A => {
                let (_, seg) = parse_packet(&p).expect("valid");
                self.a_rx.push((now, seg));
                self.a.handle_segment(now, &seg);
            }
            To::B => {
                let (_, seg) = parse_packet(&p).expect("valid");
                self.b_rx.push((now, seg));
                if self.b_refuses {
                    if seg.flags.contains(TcpFlags::SYN) {
                        let rst = TcpRepr {
                            src_port: 80,
                            dst_port: 40000,
                            seq: SeqNumber(0),
                            ack: Some(seg.seq + seg.segment_len()),
                            flags: TcpFlags::RST,
                            ..TcpRepr::default()
                        };
                        let r = pkt(B, A, &rst);
                        self.send(self.mb, To::M(1), r);
                    }
                    return;
                }
                self.b.handle_segment(now, &seg);
            }
        }
    }

    /// Release the data held toward B.
    fn release(&mut self) {
        self.hold_data_to_b = false;
        for p in std::mem::take(&mut self.held) {
            self.send(self.mb, To::B, p);
        }
    }
}

fn pkt(src: Ipv4Addr, dst: Ipv4Addr, seg: &TcpRepr) -> Packet {
    Packet::build(seg.payload_len, |b| {
        emit_ipv4_tcp(&Ipv4Repr::tcp(src, dst, 0), seg, b)
    })
}

fn ms(n: u64) -> Instant {
    Instant::ZERO + Duration::from_millis(n)
}

fn config(handshake: Handshake) -> SplitConfig {
    SplitConfig {
        tcp_accept: tcp(1000),
        tcp_connect: tcp(1000),
        handshake,
        ..SplitConfig::default()
    }
}

/// A request–response exchange: A connects at 0 and writes 100 bytes once established; B
/// answers with 1 000 bytes once it has read them. Returns the instant A received the first
/// response byte, and the line.
fn first_byte<M: Node>(m: M) -> (Instant, Line<M>) {
    let mut line = Line::new(m, 10, 290); // 600 ms RTT, 20 ms of it terrestrial
    line.a.connect(Instant::ZERO);
    let (mut asked, mut answered) = (false, false);
    line.run(ms(5_000), |l| {
        if !asked && l.a.is_established() {
            asked = l.a.send(l.now, 100) == 100;
        }
        if !answered && l.b.bytes_received() == 100 {
            answered = l.b.send(l.now, 1000) == 1000;
        }
    });
    let at = line
        .a_rx
        .iter()
        .find(|(_, s)| s.payload_len > 0)
        .map(|(t, _)| *t)
        .expect("A got the response");
    assert_eq!(line.a.bytes_received(), 1000);
    (at, line)
}

/// (d) Relay writes are immediate: the 1 KB response leaves toward A in the same
/// `handle_packet` call that brought it from B, so time to first byte is exactly that of no
/// PEP (1.2 s: two 600 ms round trips) with the `after_listener` handshake, and one
/// terrestrial round trip (20 ms) less with the local SYN-ACK (A's request waits at the relay).
#[test]
fn a_1kb_response_reaches_the_opener_with_no_added_delay() {
    let (direct, _) = first_byte(Forward::default());
    assert_eq!(direct, ms(1200));
    for (mode, want) in [(Handshake::AfterListener, 1200), (Handshake::Local, 1180)] {
        let (at, line) = first_byte(SplitRelay::new(config(mode)));
        assert_eq!(at, ms(want), "{mode:?}");
        // The response reached M at `want − 10` ms and left toward A at that same instant.
        let from_b = line
            .b_rx
            .iter()
            .find(|(_, s)| s.payload_len == 100)
            .map(|(t, _)| *t + Duration::from_millis(290))
            .expect("request reached B");
        let to_a: Vec<_> = line
            .m_tx
            .iter()
            .filter(|(_, to, s)| *to == To::A && s.payload_len > 0)
            .collect();
        assert_eq!(to_a.len(), 1, "{mode:?}: one segment, not split or held");
        assert_eq!(
            (to_a[0].0, to_a[0].2.payload_len),
            (from_b, 1000),
            "{mode:?}"
        );
        assert_eq!(from_b, ms(want - 10));
    }
}

/// (a) `after_listener`: the opener's SYN is answered only when the listener's SYN-ACK has
/// reached the relay (590 ms), and the opener's retransmitted SYN (A's RTO is 1 s) is
/// absorbed; with `local` the SYN-ACK leaves at once (10 ms).
#[test]
fn after_listener_answers_the_syn_only_after_the_listeners_syn_ack() {
    let syn_ack_at = |mode, mb_ms| {
        let mut line = Line::new(SplitRelay::new(config(mode)), 10, mb_ms);
        line.a.connect(Instant::ZERO);
        line.run(ms(5000), |_| {});
        let to_a: Vec<_> = line
            .m_tx
            .iter()
            .filter(|(_, to, _)| *to == To::A)
            .map(|(t, _, s)| (*t, s.flags))
            .collect();
        (to_a, line)
    };
    let (to_a, _) = syn_ack_at(Handshake::Local, 290);
    assert_eq!(to_a[0], (ms(10), TcpFlags::SYN));
    let (to_a, line) = syn_ack_at(Handshake::AfterListener, 290);
    assert_eq!(to_a[0], (ms(590), TcpFlags::SYN));
    assert!(line.a.established_at() == Some(ms(600)));
    // A listener 1.4 s away: A's SYN is retransmitted at 1 s; nothing answers it before the
    // listener's SYN-ACK is in (2.81 s), and then exactly one SYN-ACK goes out.
    let (to_a, line) = syn_ack_at(Handshake::AfterListener, 1400);
    // Toward B: the relay's own SYN and its retransmission on its own 1 s timer (never A's
    // packets), with A's initial sequence number (TIME-WAIT at B treats it as A's own SYN).
    let syns_to_b: Vec<_> = line
        .m_tx
        .iter()
        .filter(|(_, to, s)| *to == To::B && s.flags.contains(TcpFlags::SYN))
        .map(|(t, _, s)| (*t, s.seq))
        .collect();
    let relay_iss = syns_to_b[0].1;
    assert_eq!(relay_iss, SeqNumber(1000));
    assert_eq!(syns_to_b, vec![(ms(10), relay_iss), (ms(1010), relay_iss)]);
    assert_eq!(to_a.first(), Some(&(ms(2810), TcpFlags::SYN)));
    assert_eq!(
        to_a.iter()
            .filter(|(_, f)| f.contains(TcpFlags::SYN))
            .count(),
        1
    );
}

/// A's connection to a B that answers SYNs with RST|ACK, through `m`.
fn refused<M: Node>(m: M) -> Line<M> {
    let mut line = Line::new(m, 10, 290);
    line.b_refuses = true;
    line.a.connect(Instant::ZERO);
    line.run(ms(5000), |_| {});
    assert_eq!(line.a.state(), State::Closed);
    line
}

/// (a) A listener with no such port answers the relay's SYN with RST|ACK: with
/// `after_listener`, the opener gets exactly what it gets without a PEP — a RST|ACK from B's
/// address acknowledging its SYN, at the same instant (600 ms) — and the flow is freed.
#[test]
fn refused_connection_looks_to_the_opener_as_without_a_pep() {
    let direct = refused(Forward::default());
    let split = refused(SplitRelay::new(config(Handshake::AfterListener)));
    type Seen = (Instant, (u16, u16), u32, Option<u32>, TcpFlags);
    let view = |rx: &[(Instant, TcpRepr)]| -> Vec<Seen> {
        rx.iter()
            .map(|(t, s)| {
                (
                    *t,
                    (s.src_port, s.dst_port),
                    s.seq.0,
                    s.ack.map(|a| a.0),
                    s.flags,
                )
            })
            .collect()
    };
    assert_eq!(view(&split.a_rx), view(&direct.a_rx));
    assert_eq!(
        view(&direct.a_rx),
        vec![(ms(600), (80, 40000), 0, Some(1001), TcpFlags::RST)]
    );
    let st = split.m.stats();
    assert_eq!((st.flows_aborted, st.handshakes_failed), (1, 1));
    assert_eq!((split.m.connections(), st.embryonic), (0, 0));
    // Local SYN-ACK: A was told "connected" at 20 ms, then reset at 600 ms (the documented
    // cost of the local handshake).
    let local = refused(SplitRelay::new(config(Handshake::Local)));
    assert!(local.a.established_at() == Some(ms(20)));
    assert_eq!(
        local.a_rx.last().map(|(t, s)| (*t, s.flags)),
        Some((ms(600), TcpFlags::RST))
    );
}

/// (a) A listener that never answers: the opener's SYNs are absorbed until `connect_timeout`
/// (here 10 s after the SYN reached the relay), then it gets a RST|ACK of its SYN and the
/// listener a RST of the relay's SYN; nothing else ever reaches the opener.
#[test]
fn connect_timeout_resets_both_ends_with_after_listener() {
    let mut c = config(Handshake::AfterListener);
    c.connect_timeout = Duration::from_secs(10);
    let mut line = Line::new(SplitRelay::new(c), 10, 290);
    line.b = TcpEndpoint::new(tcp(1000), (B, 80), (A, 40000), 9000); // not listening
    line.a.connect(Instant::ZERO);
    line.run(ms(60_000), |_| {});
    let to_a: Vec<_> = line.m_tx.iter().filter(|(_, to, _)| *to == To::A).collect();
    assert_eq!(to_a.len(), 1);
    assert_eq!(to_a[0].0, ms(10_010));
    assert_eq!(
        (to_a[0].2.flags, to_a[0].2.ack),
        (TcpFlags::RST, Some(SeqNumber(1001)))
    );
    assert_eq!(line.a.state(), State::Closed);
    let last_to_b = line
        .m_tx
        .iter()
        .rfind(|(_, to, _)| *to == To::B)
        .expect("SYNs to B");
    assert_eq!(
        (last_to_b.0, last_to_b.2.flags),
        (ms(10_010), TcpFlags::RST)
    );
    let st = line.m.stats();
    assert_eq!((st.handshakes_failed, line.m.connections()), (1, 0));
    assert_eq!(line.m.poll_timeout(), None);
}

/// Establish a split flow with `after_listener`, A having written `n` bytes; returns the line
/// at 2 s (everything acknowledged).
fn established(n: u64, c: SplitConfig) -> Line<SplitRelay> {
    let mut line = Line::new(SplitRelay::new(c), 10, 290);
    line.a.connect(Instant::ZERO);
    let mut written = 0;
    line.run(ms(2000), |l| {
        if l.a.is_established() && written < n {
            written += l.a.send(l.now, n - written);
        }
    });
    assert_eq!(line.b.bytes_received(), n);
    line
}

/// (b) A RST from the opener at its exact next sequence number aborts both legs at once: the
/// listener gets a RST it accepts (it closes), and the flow is freed. A blind RST one byte off
/// draws only a challenge ACK (RFC 5961 §3.2) and the connection carries on.
#[test]
fn rst_from_the_opener_aborts_both_legs_and_a_blind_rst_is_ignored() {
    let mut line = established(5000, config(Handshake::AfterListener));
    let rst = |seq: u32| TcpRepr {
        src_port: 40000,
        dst_port: 80,
        seq: SeqNumber(seq),
        flags: TcpFlags::RST,
        ..TcpRepr::default()
    };
    // A's next sequence number: ISS 1000 + SYN + 5000 bytes.
    let blind = pkt(A, B, &rst(1000 + 1 + 5000 + 7));
    line.m.handle_packet(line.now, PortId(0), blind);
    let now = line.now;
    let out: Vec<_> = std::iter::from_fn(|| line.m.poll_transmit(now))
        .map(|t| parse_packet(&t.pkt).expect("valid").1)
        .collect();
    assert_eq!(out.len(), 1, "{out:?}");
    assert_eq!(
        (out[0].flags, out[0].ack),
        (TcpFlags::default(), Some(SeqNumber(6001)))
    );
    assert_eq!(
        (line.m.stats().resets_ignored, line.m.connections()),
        (1, 1)
    );

    let t = line.now;
    line.send(Duration::ZERO, To::M(0), pkt(A, B, &rst(6001)));
    line.run(t + Duration::from_secs(5), |_| {});
    let to_b: Vec<_> = line
        .m_tx
        .iter()
        .filter(|(at, to, _)| *at >= t && *to == To::B)
        .collect();
    assert_eq!(to_b.len(), 1);
    assert_eq!((to_b[0].0, to_b[0].2.flags), (t, TcpFlags::RST));
    assert_eq!(line.b.state(), State::Closed, "B accepted the relay's RST");
    let st = line.m.stats();
    assert_eq!(
        (st.flows_aborted, st.handshakes_failed, line.m.connections()),
        (1, 0, 0)
    );
}

/// (b) A RST from the listener mid-transfer: the opener gets one RST it accepts, at the
/// instant the listener's reached the relay.
#[test]
fn rst_from_the_listener_mid_transfer_resets_the_opener_at_once() {
    let mut line = established(5000, config(Handshake::Local));
    let t = line.now;
    let rst = TcpRepr {
        src_port: 80,
        dst_port: 40000,
        seq: SeqNumber(9001),
        flags: TcpFlags::RST,
        ..TcpRepr::default()
    };
    line.send(Duration::ZERO, To::M(1), pkt(B, A, &rst));
    line.run(t + Duration::from_secs(5), |_| {});
    let to_a: Vec<_> = line
        .m_tx
        .iter()
        .filter(|(at, to, _)| *at >= t && *to == To::A)
        .collect();
    assert_eq!(to_a.len(), 1);
    assert_eq!((to_a[0].0, to_a[0].2.flags), (t, TcpFlags::RST));
    assert_eq!(line.a.state(), State::Closed, "A accepted the relay's RST");
    let st = line.m.stats();
    assert_eq!(
        (line.m.connections(), st.flows_aborted, st.handshakes_failed),
        (0, 1, 0)
    );
}

/// (c) Half-close both ways: A writes a 100-byte request and shuts down writing at once; its
/// FIN reaches B right behind the request (the relay passes a FIN on as soon as every byte
/// before it is in the other half's send buffer). B, having read the FIN, sends a 200 000-byte
/// response and closes: A, half-closed, receives all of it, then B's FIN; the flow is freed.
#[test]
fn half_close_passes_the_fin_behind_the_data_and_the_other_way_stays_open() {
    for mode in [Handshake::Local, Handshake::AfterListener] {
        let mut line = Line::new(SplitRelay::new(config(mode)), 10, 290);
        line.a.connect(Instant::ZERO);
        let (mut asked, mut answered) = (false, 0u64);
        line.run(ms(60_000), |l| {
            if !asked && l.a.is_established() {
                assert_eq!(l.a.send(l.now, 100), 100);
                l.a.close(l.now);
                asked = true;
            }
            if l.b.peer_closed() && answered < 200_000 {
                answered += l.b.send(l.now, 200_000 - answered);
                if answered == 200_000 {
                    l.b.close(l.now);
                }
            }
        });
        let to_b: Vec<_> = line
            .m_tx
            .iter()
            .filter(|(_, to, s)| {
                *to == To::B && (s.payload_len > 0 || s.flags.contains(TcpFlags::FIN))
            })
            .collect();
        let (data, fin) = (to_b[0], to_b[1]);
        assert_eq!(data.2.payload_len, 100, "{mode:?}");
        assert!(fin.2.flags.contains(TcpFlags::FIN));
        assert_eq!(
            fin.2.seq,
            data.2.seq + 100,
            "{mode:?}: the FIN follows the last byte"
        );
        assert_eq!(fin.0, data.0, "{mode:?}: in the same instant");
        assert_eq!(line.a.bytes_received(), 200_000, "{mode:?}");
        assert!(line.a.peer_closed() && line.a.is_finished() && line.b.is_finished());
        assert_eq!(line.m.connections(), 0, "{mode:?}");
        assert_eq!(line.m.stats().flows_aborted, 0);
    }
}

/// (f) Backpressure, no drops: B's leg stalls (the relay's data toward B is held), A keeps
/// writing. The window the relay advertises to A falls by what it holds and reaches 0 when
/// `buffer_per_conn` (8 000 bytes) is full; once B's leg drains, the window reopens to the
/// whole buffer, and every byte arrives.
#[test]
fn a_full_buffer_closes_the_openers_window_and_draining_reopens_it() {
    let mut c = config(Handshake::AfterListener);
    c.buffer_per_conn = ByteSize(8000);
    let mut line = Line::new(SplitRelay::new(c), 10, 290);
    line.a.connect(Instant::ZERO);
    let total = 30_000;
    let mut written = 0;
    let mut app = move |l: &mut Line<SplitRelay>| {
        if l.a.is_established() && written < total {
            written += l.a.send(l.now, total - written);
        }
    };
    line.hold_data_to_b = true;
    line.run(ms(3000), &mut app);
    let acks_to_a: Vec<(u32, u16)> = line
        .m_tx
        .iter()
        .filter(|(_, to, s)| *to == To::A && !s.flags.contains(TcpFlags::SYN))
        .map(|(_, _, s)| (s.ack.map_or(0, |a| a.0 - 1001), s.window))
        .collect();
    // Every ACK's window is what is left of the 8 000 bytes; the last closes it.
    for &(acked, wnd) in &acks_to_a {
        assert_eq!(u64::from(wnd), 8000 - u64::from(acked), "{acks_to_a:?}");
    }
    assert_eq!(acks_to_a.last(), Some(&(8000, 0)));
    assert_eq!(line.a.snd_wnd(), 0);
    let st = line.m.stats();
    assert_eq!((st.buffer_bytes, st.max_flow_buffer_bytes), (8000, 8000));
    // B's leg drains: B's first ACK (of two segments) frees 2 000 bytes, and a window update
    // reopens A's window by as much at that instant; when all is through, the whole buffer.
    let t = line.now;
    line.release();
    line.run(ms(60_000), &mut app);
    let first_b_ack = line.m_rx.iter().find(|&&at| at > t).copied();
    let reopened = line
        .m_tx
        .iter()
        .find(|(at, to, s)| *at > t && *to == To::A && s.window > 0)
        .map(|(at, _, s)| (Some(*at), s.ack.map_or(0, |a| a.0 - 1001), s.window));
    assert_eq!(reopened, Some((first_b_ack, 8000, 2000)));
    // The right edge offered to A never moves back (no shrinking window, RFC 9293 §3.8.6),
    // and the relay ends holding nothing.
    let edges: Vec<u64> = line
        .m_tx
        .iter()
        .filter(|(_, to, s)| *to == To::A && !s.flags.contains(TcpFlags::SYN))
        .map(|(_, _, s)| u64::from(s.ack.map_or(0, |a| a.0 - 1001)) + u64::from(s.window))
        .collect();
    assert!(edges.windows(2).all(|w| w[0] <= w[1]), "{edges:?}");
    assert_eq!(edges.last(), Some(&(total + 5000)));
    assert_eq!(line.m.stats().buffer_bytes, 0);
    assert_eq!(line.b.bytes_received(), total);
    assert_eq!(
        line.m.stats().max_flow_buffer_bytes,
        8000,
        "never above the bound"
    );
    // Nothing dropped: A's only extra segments were zero-window probes (no timeout, no fast
    // retransmit).
    let a = line.a.stats();
    assert_eq!((a.rto_expirations, a.fast_retransmits), (0, 0), "{a:?}");
    assert!(a.window_probes > 0, "{a:?}");
    assert_eq!(line.m.flows().count(), 1);
}

/// (g) Idle reaping: no packet from either end for `idle_timeout` (30 s) resets both ends
/// with RSTs each accepts (exact sequence numbers), counts the flow in `flows_reaped` and frees
/// it; a flow with traffic is not reaped.
#[test]
fn an_idle_flow_is_reset_both_ways_and_freed_after_idle_timeout() {
    let mut c = config(Handshake::AfterListener);
    c.idle_timeout = Some(Duration::from_secs(30));
    let mut line = established(5000, c);
    // The last packet through the relay: B's delayed ACK of the last of the 5 segments, at the
    // relay at 1.39 s (data at B at 0.9 s, its delayed ACK 200 ms later, 290 ms back).
    let last = ms(1390);
    assert_eq!(line.m_rx.last(), Some(&last));
    line.run(last + Duration::from_nanos(29_999_999_999), |_| {});
    assert_eq!(line.m.connections(), 1);
    line.run(last + Duration::from_secs(60), |_| {});
    let rsts: Vec<_> = line
        .m_tx
        .iter()
        .filter(|(_, _, s)| s.flags.contains(TcpFlags::RST))
        .map(|(t, to, _)| (*t, *to))
        .collect();
    let at = last + Duration::from_secs(30);
    assert_eq!(rsts, vec![(at, To::A), (at, To::B)]);
    assert_eq!(
        (line.a.state(), line.b.state()),
        (State::Closed, State::Closed)
    );
    let st = line.m.stats();
    assert_eq!(
        (st.flows_reaped, st.flows_aborted, line.m.connections()),
        (1, 0, 0)
    );
}

/// (e)(h) A SYN flood: 100 000 SYNs from distinct sources, 1 µs apart, at a relay with
/// `max_connections` = 1 000 and `max_embryonic` = 600. The table never holds more than 600
/// (all half-open); every other SYN passes through unsplit, unchanged and counted, so a
/// legitimate connection during the flood is served end to end. After `connect_timeout` (5 s)
/// the half-open flows are reset and freed, and the next connection is split again.
#[test]
fn syn_flood_keeps_the_table_bounded_and_legitimate_connections_are_served() {
    use crate::flow::testing::{drain, seen};
    let mut c = config(Handshake::AfterListener);
    c.max_connections = Some(1000);
    c.max_embryonic = Some(600);
    c.buffer_per_conn = ByteSize(64_000); // `buffer_total` (64 MB) covers 500 flows of 2 × 64 KB
    c.buffer_total = ByteSize(128_000_000); // … and 1 000 of these
    c.connect_timeout = Duration::from_secs(5);
    let mut r = SplitRelay::new(c);
    let syn = |n: u32| segment(many(n), 7, None, TcpFlags::SYN, 0);
    let t = |n: u32| Instant::ZERO + Duration::from_micros(n.into());
    let mut max_len = 0;
    for n in 0..100_000u32 {
        r.handle_packet(t(n), PortId(0), syn(n));
        let out = drain(&mut r, t(n));
        max_len = max_len.max(r.connections());
        if n < 600 {
            // Split: only the relay's own SYN toward the listener (the opener waits).
            assert_eq!(out.len(), 1);
            assert_ne!(out, vec![seen(&syn(n))]);
        } else {
            assert_eq!(out, vec![seen(&syn(n))], "refused SYN {n} passes unchanged");
        }
    }
    assert_eq!(max_len, 600);
    let st = r.stats();
    assert_eq!(
        (
            st.flows_split,
            st.unsplit_embryonic,
            st.unsplit_over_limit,
            st.embryonic
        ),
        (600, 99_400, 0, 600)
    );
    assert_eq!(st.buffer_bytes, 0, "half-open flows hold no data");
    // Retransmissions of the relay's SYNs go to the listeners only; at 5 s all 600 are reset
    // (RST to each listener, RST|ACK to each opener) and freed.
    let mut now = t(100_000);
    let mut rst = 0;
    while let Some(at) = r.poll_timeout() {
        now = at;
        r.handle_timeout(now);
        for tx in std::iter::from_fn(|| r.poll_transmit(now)) {
            let (_, s) = parse_packet(&tx.pkt).expect("valid");
            rst += usize::from(s.flags.contains(TcpFlags::RST));
        }
    }
    assert_eq!(
        now,
        t(599) + Duration::from_secs(5),
        "the last half-open flow's deadline"
    );
    assert_eq!(rst, 2 * 600);
    let st = r.stats();
    assert_eq!(
        (st.handshakes_failed, st.embryonic, r.connections()),
        (600, 0, 0)
    );
    // A legitimate connection now is split and served.
    let mut line = Line::new(r, 10, 290);
    line.now = now;
    line.a.connect(now);
    let mut written = 0;
    line.run(now + Duration::from_secs(10), |l| {
        if l.a.is_established() && written < 20_000 {
            written += l.a.send(l.now, 20_000 - written);
        }
    });
    assert_eq!(line.b.bytes_received(), 20_000);
    assert_eq!(line.m.stats().flows_split, 601);
}

/// (e) Without `max_embryonic`, `max_connections` bounds the table the same way (counted in
/// `unsplit_over_limit`), and `buffer_total` still caps it below `max_connections`.
#[test]
fn max_connections_and_buffer_total_bound_the_table() {
    let run = |max: Option<u32>, total: u64| {
        let mut c = config(Handshake::Local);
        c.max_connections = max;
        c.buffer_per_conn = ByteSize(10_000);
        c.buffer_total = ByteSize(total);
        let mut r = SplitRelay::new(c);
        for n in 0..1000 {
            r.handle_packet(
                Instant::ZERO,
                PortId(0),
                segment(many(n), 7, None, TcpFlags::SYN, 0),
            );
            while r.poll_transmit(Instant::ZERO).is_some() {}
        }
        let st = r.stats();
        (r.connections(), st.flows_split, st.unsplit_over_limit)
    };
    assert_eq!(run(Some(100), 10_000_000), (100, 100, 900));
    assert_eq!(run(Some(100), 1_000_000), (50, 50, 950));
    assert_eq!(run(None, 1_000_000), (50, 50, 950));
}

/// New keys: parsed from a scenario table, and `validate` names the key first.
#[test]
fn new_keys_parse_and_validate_with_the_key_first() {
    let c: SplitConfig = toml::from_str(
        "handshake = \"after_listener\"\nmax_connections = 10000\nmax_embryonic = 2000\n\
         idle_timeout = \"1h\"\nconnect_timeout = \"10s\"",
    )
    .expect("parses");
    assert_eq!(c.handshake, Handshake::AfterListener);
    assert_eq!(
        (c.max_connections, c.max_embryonic),
        (Some(10_000), Some(2000))
    );
    assert_eq!(c.idle_timeout, Some(Duration::from_secs(3600)));
    assert_eq!(c.validate(), Ok(()));
    assert!(toml::from_str::<SplitConfig>("handshake = \"later\"").is_err());
    let bad = |f: fn(&mut SplitConfig)| {
        let mut c = SplitConfig::default();
        f(&mut c);
        c.validate().expect_err("invalid")
    };
    assert!(bad(|c| c.max_connections = Some(0)).starts_with("max_connections:"));
    assert!(bad(|c| c.max_embryonic = Some(0)).starts_with("max_embryonic:"));
    assert!(bad(|c| c.idle_timeout = Some(Duration::ZERO)).starts_with("idle_timeout:"));
    assert!(bad(|c| c.connect_timeout = Duration::ZERO).starts_with("connect_timeout:"));
    // Defaults serialise as before (no new keys in a resolved scenario).
    let s = toml::to_string(&SplitConfig::default()).expect("serialises");
    for key in [
        "handshake",
        "max_connections",
        "max_embryonic",
        "idle_timeout",
    ] {
        assert!(!s.contains(key), "{key} in {s}");
    }
    // … and set ones round-trip.
    let s = toml::to_string(&c).expect("serialises");
    assert!(s.contains("handshake = \"after_listener\""), "{s}");
    assert_eq!(toml::from_str::<SplitConfig>(&s).expect("parses"), c);
}

/// 10 000 concurrent idle split connections: held (none refused, none half-open), no timer
/// while they are idle (the relay asks for no wake-up at all), and with `idle_timeout` the
/// first wake-up is the first connection's idle deadline, which visits and reaps that one
/// connection only (a RST each way).
#[test]
fn ten_thousand_idle_connections_cost_no_wakeups_and_are_reaped_one_by_one() {
    let open_all = |idle: Option<Duration>| {
        let mut c = config(Handshake::Local);
        c.buffer_per_conn = ByteSize(64_000);
        c.buffer_total = ByteSize(2 * 64_000 * 10_000);
        c.max_connections = Some(10_000);
        c.idle_timeout = idle;
        let mut r = SplitRelay::new(c);
        for n in 0..10_000u32 {
            let now = Instant::ZERO + Duration::from_micros(n.into());
            let key = many(n);
            r.handle_packet(now, PortId(0), segment(key, 7, None, TcpFlags::SYN, 0));
            let (mut to_opener, mut to_listener) = (None, None);
            for tx in std::iter::from_fn(|| r.poll_transmit(now)) {
                let (ip, s) = parse_packet(&tx.pkt).expect("valid");
                if ip.dst == key.src {
                    to_opener = Some(s.seq.0);
                } else {
                    to_listener = Some(s.seq.0);
                }
            }
            let (s1, s2) = (to_opener.expect("SYN-ACK"), to_listener.expect("SYN"));
            let syn_ack = segment(key.reversed(), 100, Some(s2 + 1), TcpFlags::SYN, 0);
            r.handle_packet(now, PortId(1), syn_ack);
            r.handle_packet(
                now,
                PortId(0),
                segment(key, 8, Some(s1 + 1), TcpFlags::default(), 0),
            );
            while r.poll_transmit(now).is_some() {}
        }
        r
    };
    let r = open_all(None);
    let st = r.stats();
    assert_eq!(
        (r.connections(), st.flows_split, st.embryonic),
        (10_000, 10_000, 0)
    );
    assert_eq!((st.unsplit_over_limit, st.buffer_bytes), (0, 0));
    assert_eq!(r.poll_timeout(), None, "idle connections need no timer");

    let mut r = open_all(Some(Duration::from_secs(600)));
    let first = Instant::ZERO + Duration::from_secs(600);
    assert_eq!(r.poll_timeout(), Some(first));
    let before = r.flow_table_stats().visited;
    r.handle_timeout(first);
    assert_eq!(
        r.flow_table_stats().visited - before,
        2,
        "one due flow, one look past it"
    );
    let rsts = std::iter::from_fn(|| r.poll_transmit(first))
        .filter(|t| parse_packet(&t.pkt).is_ok_and(|(_, s)| s.flags.contains(TcpFlags::RST)))
        .count();
    assert_eq!(
        (rsts, r.connections(), r.stats().flows_reaped),
        (2, 9_999, 1)
    );
    assert_eq!(r.poll_timeout(), Some(first + Duration::from_micros(1)));
}

/// (b) `after_listener`, before the listener has answered: the opener's retransmitted SYN is
/// absorbed, a RST one off its next sequence number is ignored, and one at it aborts the
/// relay's own attempt (a RST to the listener at the relay's next sequence number) and frees
/// the flow; the opener is sent nothing throughout.
#[test]
fn the_openers_rst_while_its_syn_is_held_aborts_the_connect_half() {
    let mut r = SplitRelay::new(config(Handshake::AfterListener));
    let key = many(1);
    let out = |r: &mut SplitRelay, p| {
        r.handle_packet(Instant::ZERO, PortId(0), p);
        std::iter::from_fn(|| r.poll_transmit(Instant::ZERO))
            .map(|t| parse_packet(&t.pkt).expect("valid"))
            .collect::<Vec<_>>()
    };
    let first = out(&mut r, segment(key, 7, None, TcpFlags::SYN, 0));
    assert_eq!(first.len(), 1);
    assert_eq!((first[0].0.dst, first[0].1.flags), (key.dst, TcpFlags::SYN));
    let relay_iss = first[0].1.seq;
    assert!(out(&mut r, segment(key, 7, None, TcpFlags::SYN, 0)).is_empty());
    assert!(out(&mut r, segment(key, 9, None, TcpFlags::RST, 0)).is_empty());
    assert_eq!(r.connections(), 1);
    let rst = out(&mut r, segment(key, 8, None, TcpFlags::RST, 0));
    assert_eq!(rst.len(), 1);
    assert_eq!(
        (rst[0].0.dst, rst[0].1.flags, rst[0].1.seq),
        (key.dst, TcpFlags::RST, relay_iss + 1)
    );
    let st = r.stats();
    assert_eq!(
        (
            r.connections(),
            st.flows_aborted,
            st.handshakes_failed,
            st.embryonic
        ),
        (0, 1, 0, 0)
    );
}

/// (a)(h) `local` handshake, an opener that never acknowledges the relay's SYN-ACK (a spoofed
/// SYN) while the listener accepts: the flow stays half-open (counted in `embryonic`, so
/// `max_embryonic` bounds such flows) and at `connect_timeout` both ends are reset and the flow
/// is freed as a failed handshake.
#[test]
fn local_handshake_half_open_on_the_openers_side_is_reset_at_connect_timeout() {
    let mut c = config(Handshake::Local);
    c.connect_timeout = Duration::from_secs(20);
    let mut r = SplitRelay::new(c);
    let key = many(3);
    let now = Instant::ZERO;
    r.handle_packet(now, PortId(0), segment(key, 7, None, TcpFlags::SYN, 0));
    let to_listener = std::iter::from_fn(|| r.poll_transmit(now))
        .map(|t| parse_packet(&t.pkt).expect("valid"))
        .find(|(ip, _)| ip.dst == key.dst)
        .map(|(_, s)| s.seq)
        .expect("SYN to the listener");
    let syn_ack = segment(
        key.reversed(),
        100,
        Some(to_listener.0 + 1),
        TcpFlags::SYN,
        0,
    );
    r.handle_packet(now, PortId(1), syn_ack);
    while r.poll_transmit(now).is_some() {}
    assert_eq!(
        r.stats().embryonic,
        1,
        "the opener's half is not established"
    );
    let mut rsts = Vec::new();
    while let Some(at) = r.poll_timeout() {
        r.handle_timeout(at);
        for t in std::iter::from_fn(|| r.poll_transmit(at)) {
            let (ip, s) = parse_packet(&t.pkt).expect("valid");
            if s.flags.contains(TcpFlags::RST) {
                rsts.push((at, ip.dst));
            }
        }
    }
    let deadline = now + Duration::from_secs(20);
    assert_eq!(rsts, vec![(deadline, key.src), (deadline, key.dst)]);
    let st = r.stats();
    assert_eq!(
        (st.handshakes_failed, st.embryonic, r.connections()),
        (1, 0, 0)
    );
}

/// With `after_listener`, the relay's SYN toward the listener carries the opener's own initial
/// sequence number and continues its timestamp clock: a listener that still holds the same
/// ends in TIME-WAIT (an earlier connection, split or passed through) judges the new SYN as it
/// would the opener's own (Linux accepts it only above the old sequence numbers and with a
/// newer timestamp, PAWS). With `local`, the relay's own numbers, as before.
#[test]
fn after_listener_opens_the_listener_leg_with_the_openers_isn_and_timestamp_clock() {
    for (handshake, mirrored) in [(Handshake::AfterListener, true), (Handshake::Local, false)] {
        // Default TCP settings: timestamps offered.
        let mut relay = SplitRelay::new(SplitConfig {
            handshake,
            ..SplitConfig::default()
        });
        let syn = TcpRepr {
            src_port: 40_000,
            dst_port: 80,
            seq: SeqNumber(123_456_789),
            flags: TcpFlags::SYN,
            window: 65_535,
            mss: Some(1460),
            timestamp: Some((987_654, 0)),
            ..TcpRepr::default()
        };
        let now = ms(7);
        relay.handle_packet(now, PortId(0), pkt(A, B, &syn));
        let mut to_b = None;
        while let Some(tx) = relay.poll_transmit(now) {
            let (ip, seg) = parse_packet(&tx.pkt).expect("valid");
            if ip.dst == B && seg.flags.contains(TcpFlags::SYN) {
                to_b = Some(seg);
            }
        }
        let seg = to_b.expect("a SYN toward the listener");
        assert_eq!(seg.seq == SeqNumber(123_456_789), mirrored, "{handshake:?}");
        let tsval = seg.timestamp.expect("timestamps offered").0;
        assert_eq!(tsval == 987_654, mirrored, "{handshake:?}: {tsval}");
        if !mirrored {
            assert_eq!(tsval, 7, "the relay's own clock: ms since the start");
        }
    }
}
