//! Endpoint tests: two endpoints joined by a fixed-delay, lossless-unless-told pipe, with every
//! segment going through the real wire format (emit, then parse with checksum checks).

use std::net::Ipv4Addr;

use super::{CcAlgorithm, Recovery, State, TcpConfig, TcpEndpoint};
use crate::time::{Bitrate, Duration, Instant};
use crate::units::ByteSize;
use crate::wire::{emit_ipv4_tcp, parse_ipv4_tcp, Ipv4Repr, TcpFlags, TcpRepr};

const A: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);
const B: Ipv4Addr = Ipv4Addr::new(10, 0, 1, 1);

/// Opener `a` and listener `b`, one-way delay `delay`, optionally a bottleneck rate a → b.
struct Pair {
    a: TcpEndpoint,
    b: TcpEndpoint,
    now: Instant,
    delay: Duration,
    rate: Option<Bitrate>,
    busy_until: Instant,
    /// (arrival, to_b, segment)
    wire: Vec<(Instant, bool, TcpRepr)>,
    /// Every segment as sent: (time, from_a, segment).
    log: Vec<(Instant, bool, TcpRepr)>,
    /// Drop the n-th data segment a sends (1-based, first transmissions and retransmissions).
    drop_a_data: Vec<u64>,
    a_data_sent: u64,
}

impl Pair {
    fn new(ca: TcpConfig, cb: TcpConfig, delay: Duration) -> Self {
        let mut a = TcpEndpoint::new(ca, (A, 40000), (B, 80), 1000);
        let mut b = TcpEndpoint::new(cb, (B, 80), (A, 40000), 9000);
        b.listen();
        a.connect(Instant::ZERO);
        Self {
            a,
            b,
            now: Instant::ZERO,
            delay,
            rate: None,
            busy_until: Instant::ZERO,
            wire: Vec::new(),
            log: Vec::new(),
            drop_a_data: Vec::new(),
            a_data_sent: 0,
        }
    }

    fn through_the_wire(src: Ipv4Addr, dst: Ipv4Addr, seg: &TcpRepr) -> TcpRepr {
        let ip = Ipv4Repr {
            src,
            dst,
            protocol: 6,
            ttl: 64,
            ident: 0,
            dscp_ecn: 0,
            payload_len: 0,
        };
        let mut buf = [0u8; 128];
        let n = emit_ipv4_tcp(&ip, seg, &mut buf);
        let (_, parsed) = parse_ipv4_tcp(&buf[..n], seg.payload_len).expect("our own bytes parse");
        parsed
    }

    fn drain(&mut self) {
        while let Some(seg) = self.a.poll_transmit(self.now) {
            let seg = Self::through_the_wire(A, B, &seg);
            self.log.push((self.now, true, seg));
            if seg.payload_len > 0 {
                self.a_data_sent += 1;
                if self.drop_a_data.contains(&self.a_data_sent) {
                    continue;
                }
            }
            let depart = match self.rate {
                Some(r) => {
                    let start = self.busy_until.max(self.now);
                    self.busy_until = start + r.tx_time(u64::from(seg.payload_len) + 52);
                    self.busy_until
                }
                None => self.now,
            };
            self.wire.push((depart + self.delay, true, seg));
        }
        while let Some(seg) = self.b.poll_transmit(self.now) {
            let seg = Self::through_the_wire(B, A, &seg);
            self.log.push((self.now, false, seg));
            self.wire.push((self.now + self.delay, false, seg));
        }
    }

    /// Advance to `end`, delivering segments and firing timers in time order.
    fn run_until(&mut self, end: Instant) {
        self.drain();
        loop {
            let next_seg = self.wire.iter().map(|w| w.0).min();
            let next_timer = [self.a.poll_timeout(), self.b.poll_timeout()]
                .into_iter()
                .flatten()
                .min();
            let Some(t) = [next_seg, next_timer].into_iter().flatten().min() else {
                break;
            };
            if t > end {
                break;
            }
            self.now = t;
            if next_seg == Some(t) {
                let i = self.wire.iter().position(|w| w.0 == t).unwrap_or(0);
                let (_, to_b, seg) = self.wire.remove(i);
                if to_b {
                    self.b.handle_segment(t, &seg);
                } else {
                    self.a.handle_segment(t, &seg);
                }
            } else {
                self.a.handle_timeout(t);
                self.b.handle_timeout(t);
            }
            self.drain();
        }
        self.now = end;
    }

    fn send(&mut self, bytes: u64) -> u64 {
        let n = self.a.send(self.now, bytes);
        self.drain();
        n
    }
}

fn at_ms(ms: u64) -> Instant {
    Instant::ZERO + Duration::from_millis(ms)
}

#[test]
fn handshake_negotiates_every_option_both_sides_enable() {
    let mut p = Pair::new(
        TcpConfig::default(),
        TcpConfig::default(),
        Duration::from_millis(250),
    );
    p.run_until(at_ms(400));
    assert_eq!(p.b.state(), State::SynReceived);
    p.run_until(at_ms(600));
    assert_eq!(p.a.state(), State::Established);
    assert_eq!(
        p.b.state(),
        State::SynReceived,
        "the final ACK is still on its way"
    );
    p.run_until(at_ms(800));
    assert_eq!(p.b.state(), State::Established);
    let syn = p.log[0].2;
    assert!(syn.flags.contains(TcpFlags::SYN) && syn.ack.is_none());
    assert_eq!(
        (syn.mss, syn.sack_permitted, syn.window_scale.is_some()),
        (Some(1460), true, true)
    );
    // 8 MB buffer needs a shift of 7 (8e6 >> 7 = 62 500 ≤ 65 535).
    assert_eq!(syn.window_scale, Some(7));
    let synack = p.log[1].2;
    assert!(synack.flags.contains(TcpFlags::SYN) && synack.ack == Some(syn.seq + 1));
    assert!(synack.timestamp.is_some());
    // Timestamps agreed: 1460 − 12 bytes of payload per segment (RFC 6691).
    assert_eq!(p.a.smss(), 1448);
    // The handshake RTT is a sample: 500 ms.
    assert_eq!(p.a.rtt().srtt(), Some(Duration::from_millis(500)));
}

#[test]
fn options_one_side_disables_are_off_for_both() {
    let no_sack_ts = TcpConfig {
        sack: false,
        timestamps: false,
        window_scaling: false,
        ..TcpConfig::default()
    };
    let mut p = Pair::new(TcpConfig::default(), no_sack_ts, Duration::from_millis(10));
    p.run_until(at_ms(50));
    let synack = p.log[1].2;
    assert_eq!(
        (synack.sack_permitted, synack.timestamp, synack.window_scale),
        (false, None, None)
    );
    assert_eq!(p.a.smss(), 1460);
    p.send(200_000);
    p.run_until(at_ms(2000));
    // No window scaling: the listener advertises at most 65 535 bytes, whatever its 8 MB buffer.
    let max_wnd = p
        .log
        .iter()
        .filter(|(_, a, _)| !a)
        .map(|w| w.2.window)
        .max();
    assert_eq!(max_wnd, Some(65_535));
    assert!(p.a.snd_wnd() <= 65_535 && p.a.snd_wnd() > 65_535 - 1460);
    // After the opener's SYN (which offers timestamps), nobody uses them or SACK.
    assert!(p.log[1..]
        .iter()
        .all(|(_, _, s)| s.timestamp.is_none() && s.sack.is_empty()));
    assert_eq!(p.b.bytes_delivered(), 200_000);
}

#[test]
fn initial_window_is_configurable_and_sent_at_once() {
    for iw in [1u32, 4, 10] {
        let cfg = TcpConfig {
            initial_window: iw,
            ..TcpConfig::default()
        };
        let mut p = Pair::new(cfg, TcpConfig::default(), Duration::from_millis(100));
        p.run_until(at_ms(200));
        p.send(1_000_000);
        let burst = p
            .log
            .iter()
            .filter(|(t, from_a, s)| *from_a && *t == at_ms(200) && s.payload_len > 0)
            .count();
        assert_eq!(burst, iw as usize);
    }
}

#[test]
fn delayed_ack_every_second_segment_and_after_the_timeout() {
    let cfg = TcpConfig {
        delack_timeout: Duration::from_millis(200),
        ..TcpConfig::default()
    };
    let mut p = Pair::new(cfg.clone(), cfg, Duration::from_millis(10));
    p.run_until(at_ms(30));
    let before = p.log.len();
    // Three full segments: one ACK after the second, the third waits 200 ms.
    p.send(3 * 1448);
    p.run_until(at_ms(100));
    let acks: Vec<_> = p.log[before..]
        .iter()
        .filter(|(_, from_a, _)| !from_a)
        .map(|(t, _, s)| (*t, s.ack))
        .collect();
    assert_eq!(acks.len(), 1, "{acks:?}");
    p.run_until(at_ms(400));
    let acks: Vec<_> = p.log[before..]
        .iter()
        .filter(|(_, from_a, _)| !from_a)
        .map(|(t, _, _)| *t)
        .collect();
    assert_eq!(acks, vec![at_ms(40), at_ms(240)]);
}

#[test]
fn out_of_order_data_is_acked_at_once_with_a_sack_block() {
    let mut p = Pair::new(
        TcpConfig::default(),
        TcpConfig::default(),
        Duration::from_millis(50),
    );
    p.drop_a_data = vec![2];
    p.run_until(at_ms(150));
    p.send(5 * 1448);
    p.run_until(at_ms(210));
    let b_acks: Vec<TcpRepr> = p
        .log
        .iter()
        .filter(|(t, from_a, _)| !from_a && *t >= at_ms(150))
        .map(|w| w.2)
        .collect();
    // Segments 3, 4, 5 arrive out of order: one duplicate ACK each, SACKing the growing block.
    let base = p
        .log
        .iter()
        .find(|(_, from_a, s)| *from_a && s.payload_len > 0)
        .map(|w| w.2.seq)
        .unwrap();
    let dups: Vec<_> = b_acks
        .iter()
        .filter(|s| s.ack == Some(base + 1448))
        .collect();
    assert_eq!(dups.len(), 3, "{b_acks:?}");
    assert_eq!(
        dups[2].sack.as_slice(),
        &[(base + 2 * 1448, base + 5 * 1448)]
    );
}

#[test]
fn slow_reader_closes_the_window_and_is_never_overrun() {
    // Receiver buffer 64 KiB drained at 1 Mb/s; the sender could go much faster.
    let rx = TcpConfig {
        recv_buffer: ByteSize(65_536),
        app_read_rate: Some(Bitrate(1_000_000)),
        ..TcpConfig::default()
    };
    let mut p = Pair::new(TcpConfig::default(), rx, Duration::from_millis(100));
    p.rate = Some(Bitrate(100_000_000));
    p.run_until(at_ms(300));
    let total = 2_000_000;
    let mut written = 0;
    let mut t = 300;
    while p.b.bytes_delivered() < total && t < 60_000 {
        written += p.send(total - written);
        t += 100;
        p.run_until(at_ms(t));
    }
    assert_eq!(p.b.bytes_delivered(), total);
    assert_eq!(
        p.b.stats().beyond_window,
        0,
        "the sender overran the advertised window"
    );
    // 2 MB at 1 Mb/s is 16 s of reading; the window, not the link, sets the pace.
    let secs = (t - 300) as f64 / 1000.0;
    assert!((15.9..17.5).contains(&secs), "took {secs} s");
    // Unread data filled most of the buffer: the advertised window (scaled by 2: 64 KiB needs a
    // shift of 1) settled near rate × RTT = 1 Mb/s × 200 ms = 25 000 bytes.
    let min_wnd = p
        .log
        .iter()
        .filter(|(t, a, _)| !a && *t > at_ms(1000))
        .map(|w| u32::from(w.2.window) << 1)
        .min();
    assert!(
        min_wnd.is_some_and(|w| (20_000..30_000).contains(&w)),
        "window {min_wnd:?}"
    );
}

#[test]
fn zero_window_is_probed_and_the_transfer_resumes() {
    // The reader stalls almost completely (8 kb/s) behind an 8 KiB buffer.
    let rx = TcpConfig {
        recv_buffer: ByteSize(8192),
        app_read_rate: Some(Bitrate(8_000)),
        ..TcpConfig::default()
    };
    let mut p = Pair::new(TcpConfig::default(), rx, Duration::from_millis(100));
    p.run_until(at_ms(300));
    p.send(20_000);
    p.run_until(at_ms(40_000));
    assert_eq!(p.b.bytes_delivered(), 20_000);
    assert!(p.a.stats().window_probes >= 1, "{:?}", p.a.stats());
    assert_eq!(
        p.a.stats().rto_expirations,
        0,
        "a closed window must not look like loss"
    );
}

#[test]
fn fin_closes_both_directions() {
    let mut p = Pair::new(
        TcpConfig::default(),
        TcpConfig::default(),
        Duration::from_millis(20),
    );
    p.run_until(at_ms(60));
    p.send(10_000);
    p.a.close(p.now);
    p.run_until(at_ms(200));
    assert_eq!(p.b.state(), State::CloseWait);
    assert!(p.b.peer_closed());
    assert_eq!(p.a.state(), State::FinWait2);
    p.b.close(p.now);
    p.run_until(at_ms(400));
    assert_eq!(p.a.state(), State::TimeWait);
    assert_eq!(p.b.state(), State::Closed);
    assert!(p.a.all_acked());
}

#[test]
fn lost_syn_is_retransmitted_after_the_initial_rto_and_iw_drops_to_one() {
    let cfg = TcpConfig {
        initial_rto: Duration::from_secs(1),
        ..TcpConfig::default()
    };
    let mut p = Pair::new(cfg, TcpConfig::default(), Duration::from_millis(50));
    p.drain();
    p.wire.clear(); // the first SYN is lost
    p.run_until(at_ms(1200));
    assert_eq!(p.a.state(), State::Established);
    let syns: Vec<Instant> = p
        .log
        .iter()
        .filter(|(_, a, s)| *a && s.flags.contains(TcpFlags::SYN))
        .map(|w| w.0)
        .collect();
    assert_eq!(syns, vec![at_ms(0), at_ms(1000)]);
    assert_eq!(p.a.cwnd(), p.a.smss());
    // Karn: no RTT sample from the retransmitted SYN.
    assert_eq!(p.a.rtt().srtt(), None);
}

#[test]
fn rto_backs_off_exponentially_while_the_path_is_dead() {
    let cfg = TcpConfig {
        min_rto: Duration::from_millis(200),
        ..TcpConfig::default()
    };
    let mut p = Pair::new(cfg, TcpConfig::default(), Duration::from_millis(50));
    p.run_until(at_ms(150));
    p.drop_a_data = (1..=100).collect();
    p.send(1448);
    p.run_until(at_ms(20_000));
    let sends: Vec<u64> = p
        .log
        .iter()
        .filter(|(_, a, s)| *a && s.payload_len > 0)
        .map(|w| w.0.as_nanos() / 1_000_000)
        .collect();
    // SRTT 100 ms, RTTVAR 50 ms: RTO = 300 ms, then 600, 1200, 2400, 4800, 9600…
    let gaps: Vec<u64> = sends.windows(2).map(|w| w[1] - w[0]).collect();
    assert_eq!(&gaps[..5], &[300, 600, 1200, 2400, 4800], "{sends:?}");
    assert_eq!(p.a.stats().rto_expirations as usize, gaps.len());
}

#[test]
fn reno_cubic_and_recoveries_all_deliver_every_byte_under_loss() {
    for cc in [CcAlgorithm::Reno, CcAlgorithm::Cubic] {
        for rec in [Recovery::Reno, Recovery::NewReno, Recovery::Sack] {
            let cfg = TcpConfig {
                cc,
                recovery: rec,
                ..TcpConfig::default()
            };
            let mut p = Pair::new(cfg.clone(), cfg, Duration::from_millis(30));
            p.rate = Some(Bitrate(20_000_000));
            p.drop_a_data = vec![15, 17, 40, 41, 42, 43, 90, 200, 201, 350];
            p.run_until(at_ms(100));
            let total = 1_000_000;
            let mut written = 0;
            let mut t = 100;
            while p.b.bytes_delivered() < total && t < 120_000 {
                written += p.send(total - written);
                t += 50;
                p.run_until(at_ms(t));
            }
            assert_eq!(
                p.b.bytes_delivered(),
                total,
                "{cc:?}/{rec:?}: {:?}",
                p.a.stats()
            );
            p.run_until(at_ms(t + 1000));
            assert_eq!(p.a.bytes_acked(), total);
            assert!(p.a.stats().retransmissions >= 10, "{cc:?}/{rec:?}");
        }
    }
}
