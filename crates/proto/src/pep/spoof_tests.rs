//! Spoofing gateway: the CCB lifecycle over the test net (A = Internet host, B = hybrid host).

use super::spoof::{CcbState, SpoofConfig, SpoofGateway};
use crate::testnet::{tcp, Hop, Net, A, B, BM, MB};
use crate::time::{Bitrate, Duration, Instant};
use crate::units::ByteSize;
use crate::wire::TcpFlags;

const HYBRID: (std::net::Ipv4Addr, u16) = (B, 80);
const INET: (std::net::Ipv4Addr, u16) = (A, 40000);

fn hops() -> [Hop; 4] {
    let r = |bps| Some(Bitrate::from_bps(bps));
    [
        Hop::new(10, r(10_000_000)),
        Hop::new(250, r(1_000_000)),
        Hop::new(250, r(28_800)),
        Hop::new(10, r(10_000_000)),
    ]
}

fn gw(c: SpoofConfig) -> SpoofGateway {
    SpoofGateway::new(c)
}

fn at(s: f64) -> Instant {
    Instant::ZERO + Duration::from_secs_f64(s)
}

#[test]
fn spoofed_transfer_is_acked_at_terrestrial_rtt_and_ccb_closes_after_both_fins() {
    let total = 300_000;
    let mut net = Net::new(
        gw(SpoofConfig::default()),
        tcp(1000),
        tcp(1000),
        hops(),
        total,
    );
    net.run_until(at(0.6));
    assert_eq!(net.m.ccb_state(HYBRID, INET), Some(CcbState::Connected));
    net.run_until(at(60.0));
    assert_eq!(net.b.bytes_delivered(), total);
    // A's RTT is the terrestrial one (plus serialisation), not the satellite's 520 ms; only
    // the handshake crossed the satellite.
    let srtt = net.a.rtt().srtt().expect("sampled").as_secs_f64();
    assert!(srtt < 0.06, "A's SRTT {srtt}");
    // A's FIN is acknowledged by B itself (not spoofed): FIN-wait until then, and the CCB
    // stays while B has not closed.
    assert!(net.a.all_acked());
    assert_eq!(net.m.ccb_state(HYBRID, INET), Some(CcbState::FinWait));
    // The gateway's own estimate is the satellite round trip: 500 ms of propagation, a 1000-byte
    // segment's 8 ms at 1 Mb/s and an ACK's 11 ms at 28.8 kb/s, plus B's delayed ACKs.
    let rtts: Vec<f64> = net
        .m
        .rtt_estimators()
        .map(|(_, r)| r.mean().expect("sampled").as_secs_f64())
        .collect();
    assert_eq!(rtts.len(), 1);
    assert!((0.519..0.75).contains(&rtts[0]), "{rtts:?}");
    net.b.close(net.now);
    net.run_until(at(120.0));
    assert!(net.a.is_finished() && net.b.is_finished());
    let st = net.m.stats();
    assert_eq!(
        (st.ccbs_allocated, st.ccbs_closed, net.m.ccb_count()),
        (1, 1, 0)
    );
    assert!(st.spoofed_acks >= total / 1000, "{st:?}");
}

#[test]
fn idle_ccb_is_freed_silently_after_the_idle_time() {
    let c = SpoofConfig {
        idle_timeout: Duration::from_secs(30),
        ..SpoofConfig::default()
    };
    let mut net = Net::new(gw(c), tcp(1000), tcp(1000), hops(), 20_000);
    net.close = false;
    net.run_until(at(10.0));
    assert_eq!(net.b.bytes_delivered(), 20_000);
    let last = net
        .b_rx
        .iter()
        .chain(net.a_rx.iter())
        .map(|(t, _)| *t)
        .max()
        .expect("traffic");
    let sent_before = (net.a_rx.len(), net.m_to_b.len());
    // Last segment through the gateway: B's last ACK, 250 ms before it reached... the gateway
    // saw it at most 260 ms before `last`. Still allocated just before idle_timeout after that.
    net.run_until(last + Duration::from_secs(29));
    assert_eq!(net.m.ccb_count(), 1);
    net.run_until(last + Duration::from_secs(31));
    assert_eq!(net.m.ccb_count(), 0);
    assert_eq!(net.m.stats().ccbs_idle_freed, 1);
    // Silently: nothing was sent to either host.
    assert_eq!((net.a_rx.len(), net.m_to_b.len()), sent_before);
}

#[test]
fn retry_limit_aborts_with_rst_toward_both_ends_after_doubling_timeouts() {
    let c = SpoofConfig {
        retry_limit: 4,
        ..SpoofConfig::default()
    };
    let mut net = Net::new(gw(c), tcp(1000), tcp(1000), hops(), 1_000_000);
    net.run_until(at(3.0));
    assert!(net.b.bytes_received() > 0);
    // The satellite hop dies.
    net.hops[MB].cut = true;
    let cut_from = net.m_to_b.len();
    net.run_until(at(300.0));
    let st = net.m.stats();
    assert_eq!(st.aborts, 1, "{st:?}");
    // RST toward A (received) and toward B (sent into the dead hop).
    let rst_a = net
        .a_rx
        .iter()
        .filter(|(_, s)| s.flags.contains(TcpFlags::RST))
        .count();
    assert_eq!(rst_a, 1);
    assert_eq!(net.a.state(), crate::tcp::State::Closed);
    let after: Vec<_> = net.m_to_b[cut_from..].to_vec();
    assert!(after
        .last()
        .is_some_and(|(_, s)| s.flags.contains(TcpFlags::RST)));
    // The gateway's retransmissions of the first unacknowledged segment back off by doubling.
    let first = after
        .iter()
        .find(|(_, s)| s.payload_len > 0)
        .map(|(_, s)| s.seq);
    let times: Vec<f64> = after
        .iter()
        .filter(|(_, s)| Some(s.seq) == first && s.payload_len > 0)
        .map(|(t, _)| t.as_secs_f64())
        .collect();
    let gaps: Vec<f64> = times.windows(2).map(|w| w[1] - w[0]).collect();
    assert!(gaps.len() >= 3, "{times:?}");
    // Each of the 4 timeouts goes back N: every segment sent so far and not acknowledged is
    // sent again at that instant (between timeouts, the Internet host's new data that fits the
    // window goes out once, and is in the next burst).
    let burst = |t: f64| {
        after
            .iter()
            .filter(|(at, s)| at.as_secs_f64() == t && s.payload_len > 0)
            .count() as u64
    };
    let bursts: Vec<u64> = times[times.len() - 4..].iter().map(|&t| burst(t)).collect();
    assert!(bursts[0] > 1, "{bursts:?}");
    assert!(bursts.windows(2).all(|w| w[0] <= w[1]), "{bursts:?}");
    assert_eq!(st.retransmissions, bursts.iter().sum::<u64>(), "{bursts:?}");
    // (The first gap runs from the original transmission, whose timer started at an ACK.)
    for w in gaps[1..].windows(2) {
        assert!((w[1] / w[0] - 2.0).abs() < 0.01, "gaps {gaps:?}");
    }
    // What A was told versus what B got: the bytes lost in the abort.
    assert_eq!(
        st.bytes_lost_on_abort,
        net.a.bytes_acked() - net.b.bytes_received()
    );
    assert!(st.bytes_lost_on_abort > 0);
    assert_eq!(net.m.ccb_count(), 0);
}

#[test]
fn zero_window_probe_resumes_the_transfer_after_a_lost_window_update() {
    // B's application reads slowly (8 kb/s); its 20 KB window closes. Every window update B
    // sends while the return hop is down (25 s: until its buffer is empty, after which B has
    // nothing more to say) is lost: only the gateway's persist timer can restart the transfer.
    let total = 60_000;
    let mut cb = tcp(1000);
    cb.recv_buffer = ByteSize(20_000);
    cb.app_read_rate = Some(Bitrate::from_bps(8_000));
    let mut net = Net::new(gw(SpoofConfig::default()), tcp(1000), cb, hops(), total);
    let mut t = Instant::ZERO;
    while !(net.b.bytes_received() > 0 && net.m.host_window(HYBRID, INET) == Some(0)) {
        t += Duration::from_millis(1);
        assert!(t < at(30.0), "B's window never closed");
        net.run_until(t);
    }
    net.hops[BM].cut = true;
    let lost_from = net.hops[BM].dropped;
    net.run_until(t + Duration::from_secs(25));
    net.hops[BM].cut = false;
    assert!(
        net.hops[BM].dropped > lost_from,
        "no window update was lost"
    );
    let (probes_before, delivered_before) = (net.m.stats().window_probes, net.b.bytes_received());
    net.run_until(at(400.0));
    assert_eq!(net.b.bytes_delivered(), total);
    assert!(net.b.bytes_received() > delivered_before);
    let st = net.m.stats();
    assert!(st.window_probes > probes_before, "{st:?}");
    // Resumed by probes, not by retransmissions toward a closed window.
    assert_eq!((st.aborts, st.retransmissions), (0, 0), "{st:?}");
    eprintln!(
        "zero window: {st:?}, B done at {:.2} s",
        net.b_rx.last().map_or(0.0, |(t, _)| t.as_secs_f64())
    );
}

/// Memory bounded by `max_ccbs`, and timeouts that visit only due CCBs: 100 000 connections
/// opened from the Internet side.
#[test]
fn ccb_table_is_bounded_and_its_timeouts_visit_only_due_ccbs() {
    use crate::flow::testing::{drain, many, seen, segment};
    use crate::{Node, PortId};
    let syn = |n: u32| segment(many(n), 7, None, TcpFlags::SYN, 0);
    // Internet hosts many(n).src open connections to one hybrid host; 1 000 CCBs at most.
    let mut g = gw(SpoofConfig {
        max_ccbs: 1000,
        ..SpoofConfig::default()
    });
    for n in 0..100_000u32 {
        g.handle_packet(at(0.0), PortId(0), syn(n));
        assert_eq!(drain(&mut g, at(0.0)), vec![seen(&syn(n))]);
    }
    assert_eq!(g.ccb_count(), 1000);
    assert_eq!(g.stats().over_limit, 99_000);
    // 100 000 CCBs, opened 1 µs apart: the first idle timer visits one CCB.
    let mut g = gw(SpoofConfig {
        max_ccbs: 100_000,
        ..SpoofConfig::default()
    });
    for n in 0..100_000u32 {
        g.handle_packet(at(f64::from(n) * 1e-6), PortId(0), syn(n));
    }
    drain(&mut g, at(1.0));
    let first = at(120.0);
    assert_eq!(g.poll_timeout(), Some(first));
    let before = g.flow_table_stats().visited;
    g.handle_timeout(first);
    assert_eq!(g.flow_table_stats().visited - before, 2);
    assert_eq!((g.ccb_count(), g.stats().ccbs_idle_freed), (99_999, 1));
    assert_eq!(g.poll_timeout(), Some(at(120.000_001)));
}

/// A RST frees a CCB only at its sender's exact next sequence number (RFC 5961 §3.2): a blind
/// RST from the Internet side is passed on and the CCB, with the data it acknowledged in the
/// hybrid host's name, is kept; the Internet host's real RST frees it, counts the queued bytes
/// as lost, and reaches the hybrid host at the sequence number it expects, so that it closes.
#[test]
fn only_an_exact_rst_frees_a_ccb_and_the_hybrid_host_accepts_it() {
    use crate::wire::{emit_ipv4_tcp, parse_packet, Ipv4Repr, SeqNumber, TcpRepr};
    use crate::{Node, Packet, PortId};
    let mut net = Net::new(
        gw(SpoofConfig::default()),
        tcp(1000),
        tcp(1000),
        hops(),
        1_000_000,
    );
    net.run_until(at(3.0));
    net.hops[MB].cut = true; // the satellite hop dies: the gateway's queue fills
    net.run_until(at(6.0));
    let queued = net.m.buffered_bytes();
    assert!(queued > 10_000, "{queued}");
    // The gateway's last spoofed ACK: the Internet host's next sequence number.
    let rcv_nxt = net
        .a_rx
        .last()
        .and_then(|(_, s)| s.ack)
        .expect("spoofed ACKs");
    let rst = |seq: SeqNumber| {
        let seg = TcpRepr {
            src_port: 40000,
            dst_port: 80,
            seq,
            ack: Some(SeqNumber(9001)),
            flags: TcpFlags::RST,
            window: 1234,
            ..TcpRepr::default()
        };
        Packet::build(0, |b| emit_ipv4_tcp(&Ipv4Repr::tcp(A, B, 0), &seg, b))
    };
    let now = net.now;
    let send = |net: &mut Net<SpoofGateway>, p: Packet| {
        net.m.handle_packet(now, PortId(0), p);
        std::iter::from_fn(|| net.m.poll_transmit(now))
            .map(|t| parse_packet(&t.pkt).expect("valid").1)
            .collect::<Vec<_>>()
    };
    let out = send(&mut net, rst(rcv_nxt + 1000));
    assert_eq!(out.len(), 1);
    assert_eq!(
        (out[0].seq, out[0].flags),
        (rcv_nxt + 1000, TcpFlags::RST),
        "passed on"
    );
    let st = net.m.stats();
    assert_eq!(
        (net.m.ccb_count(), st.resets_kept, st.ccbs_reset),
        (1, 1, 0)
    );
    assert_eq!(net.m.buffered_bytes(), queued, "nothing discarded");

    let out = send(&mut net, rst(rcv_nxt));
    assert_eq!(out.len(), 1);
    // B's next expected byte: its ISS 9000's peer A started at 1000; B got `bytes_received`.
    let b_next = SeqNumber(1001) + net.b.bytes_received() as u32;
    assert_eq!(
        (out[0].seq, out[0].ack, out[0].flags),
        (b_next, Some(SeqNumber(9001)), TcpFlags::RST)
    );
    let st = net.m.stats();
    assert_eq!((net.m.ccb_count(), st.ccbs_reset), (0, 1));
    assert_eq!(st.bytes_lost_on_abort, queued);
    net.b.handle_segment(now, &out[0]);
    assert_eq!(net.b.state(), crate::tcp::State::Closed, "B accepted it");
}

/// The hybrid host's RST at its next sequence number frees the CCB and passes unchanged.
#[test]
fn the_hybrid_hosts_exact_rst_frees_the_ccb() {
    use crate::wire::{emit_ipv4_tcp, parse_packet, Ipv4Repr, SeqNumber, TcpRepr};
    use crate::{Node, Packet, PortId};
    let mut net = Net::new(
        gw(SpoofConfig::default()),
        tcp(1000),
        tcp(1000),
        hops(),
        50_000,
    );
    net.close = false;
    net.run_until(at(5.0));
    assert_eq!(net.b.bytes_received(), 50_000);
    let rst = |seq: u32| {
        let seg = TcpRepr {
            src_port: 80,
            dst_port: 40000,
            seq: SeqNumber(seq),
            flags: TcpFlags::RST,
            ..TcpRepr::default()
        };
        Packet::build(0, |b| emit_ipv4_tcp(&Ipv4Repr::tcp(B, A, 0), &seg, b))
    };
    let now = net.now;
    // B sent only its SYN-ACK: its next sequence number is 9001; 9002 is blind.
    for (seq, ccbs, kept) in [(9002, 1, 1), (9001, 0, 1)] {
        net.m.handle_packet(now, PortId(1), rst(seq));
        let out: Vec<_> = std::iter::from_fn(|| net.m.poll_transmit(now))
            .map(|t| parse_packet(&t.pkt).expect("valid").1)
            .collect();
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].seq, SeqNumber(seq), "passed on unchanged");
        assert_eq!((net.m.ccb_count(), net.m.stats().resets_kept), (ccbs, kept));
    }
    assert_eq!(net.m.stats().ccbs_reset, 1);
}

/// With nothing queued, the Internet host's exact RST passes byte for byte; the hybrid host's
/// exact RST while data is queued passes unchanged too, and the queued bytes count as lost.
#[test]
fn exact_rsts_pass_unchanged_and_queued_bytes_count_as_lost() {
    use crate::flow::testing::{drain, seen};
    use crate::wire::{emit_ipv4_tcp, Ipv4Repr, SeqNumber, TcpRepr};
    use crate::{Node, Packet, PortId};
    let rst = |from_a: bool, seq: SeqNumber| {
        let (src, dst, sp, dp) = if from_a {
            (A, B, 40000, 80)
        } else {
            (B, A, 80, 40000)
        };
        let seg = TcpRepr {
            src_port: sp,
            dst_port: dp,
            seq,
            ack: Some(SeqNumber(77)),
            flags: TcpFlags::RST,
            window: 1234,
            ..TcpRepr::default()
        };
        Packet::build(0, |b| emit_ipv4_tcp(&Ipv4Repr::tcp(src, dst, 9), &seg, b))
    };
    // Transfer done, nothing queued: A's RST at its next sequence number.
    let mut net = Net::new(
        gw(SpoofConfig::default()),
        tcp(1000),
        tcp(1000),
        hops(),
        20_000,
    );
    net.close = false;
    net.run_until(at(5.0));
    assert_eq!(net.m.buffered_bytes(), 0);
    let a_next = SeqNumber(1001) + 20_000;
    let p = rst(true, a_next);
    let want = seen(&p);
    net.m.handle_packet(net.now, PortId(0), p);
    assert_eq!(drain(&mut net.m, net.now), vec![want]);
    assert_eq!(
        (net.m.ccb_count(), net.m.stats().bytes_lost_on_abort),
        (0, 0)
    );

    // The satellite hop dies with data queued; B (which sent only its SYN-ACK) resets.
    let mut net = Net::new(
        gw(SpoofConfig::default()),
        tcp(1000),
        tcp(1000),
        hops(),
        1_000_000,
    );
    net.run_until(at(3.0));
    net.hops[MB].cut = true;
    net.run_until(at(6.0));
    let queued = net.m.buffered_bytes();
    assert!(queued > 0);
    let p = rst(false, SeqNumber(9001));
    let want = seen(&p);
    net.m.handle_packet(net.now, PortId(1), p);
    assert_eq!(drain(&mut net.m, net.now), vec![want]);
    let st = net.m.stats();
    assert_eq!(
        (net.m.ccb_count(), st.ccbs_reset, st.bytes_lost_on_abort),
        (0, 1, queued)
    );
}

/// Drive `g` through its own timers until `until`, collecting (time, header, payload) of every
/// packet it transmits.
fn run_timers(g: &mut SpoofGateway, until: Instant) -> Vec<(Instant, Vec<u8>, u32)> {
    use crate::Node;
    let mut out = Vec::new();
    while let Some(t) = g.poll_timeout().filter(|&t| t <= until) {
        g.handle_timeout(t);
        out.extend(
            crate::flow::testing::drain(g, t)
                .into_iter()
                .map(|(h, p)| (t, h, p)),
        );
    }
    out
}

/// Open `n` spoofed connections (Internet hosts `many(i)` to one hybrid host, window 64 KiB)
/// and have each Internet host send `segments` full segments at `t0`; returns what the gateway
/// sent toward the hybrid host at `t0` (data only), as (connection, payload) in order.
fn open_and_send(g: &mut SpoofGateway, n: u32, segments: u32, t0: Instant) -> Vec<(u32, u32)> {
    use crate::flow::testing::{drain, many, segment};
    use crate::{Node, PortId};
    for i in 0..n {
        let k = many(i);
        g.handle_packet(t0, PortId(0), segment(k, 100, None, TcpFlags::SYN, 0));
        let syn_ack = segment(k.reversed(), 500, Some(101), TcpFlags::SYN, 0);
        g.handle_packet(t0, PortId(1), syn_ack);
    }
    drain(g, t0);
    let mut sent = Vec::new();
    // Connection by connection: a connection already waiting for its turn must not get a
    // second place in the round robin.
    for i in 0..n {
        for s in 0..segments {
            let data = segment(
                many(i),
                101 + s * 1460,
                Some(501),
                TcpFlags::default(),
                1460,
            );
            g.handle_packet(t0, PortId(0), data);
            for (h, p) in drain(g, t0) {
                // Data toward the hybrid host (192.168.0.1) vs spoofed ACKs toward 10.x.
                if p > 0 && h[16..20] == [192, 168, 0, 1] {
                    sent.push((u32::from(h[15]), p));
                }
            }
        }
    }
    sent
}

/// Paced at `satellite_rate`, the gateway sends one 1500-byte segment per 12 ms at 1 Mb/s —
/// never two closer — and takes the connections in turn; unpaced, every segment that fits the
/// hybrid host's window leaves at once (the paper's gateway).
#[test]
fn pacing_spaces_segments_at_the_satellite_rate_in_round_robin() {
    let paced = SpoofConfig {
        satellite_rate: Some(Bitrate::from_bps(1_000_000)),
        ..SpoofConfig::default()
    };
    let mut g = gw(paced);
    let at_once = open_and_send(&mut g, 4, 5, at(1.0));
    assert_eq!(at_once.len(), 1, "one segment at t0, the rest paced");
    // Until just before the first retransmission timeout (1 s after the first segment).
    let later = run_timers(&mut g, at(1.9));
    let data: Vec<&(Instant, Vec<u8>, u32)> = later.iter().filter(|(_, _, p)| *p > 0).collect();
    let dbg: Vec<(f64, u8, u32)> = data
        .iter()
        .map(|(t, h, _)| {
            (
                t.as_secs_f64(),
                h[15],
                u32::from_be_bytes([h[24], h[25], h[26], h[27]]),
            )
        })
        .collect();
    assert_eq!(data.len(), 19, "4 × 5 segments in all {dbg:?}");
    let tx = Bitrate::from_bps(1_000_000).tx_time(1500);
    assert_eq!(tx, Duration::from_millis(12));
    assert_eq!(data[0].0, at(1.0) + tx);
    for w in data.windows(2) {
        assert_eq!(w[1].0 - w[0].0, tx, "back to back at the rate");
    }
    // Round robin: the source address's last byte is the connection (10.0.0.i); the first
    // segment went to connection 0 at t0, which then waits its turn behind nobody.
    let order: Vec<u8> = data.iter().map(|(_, h, _)| h[15]).collect();
    // Connection 0's five segments are out after four rounds; 1–3 then send their fifth.
    let expected: Vec<u8> = (0..16).map(|k| (k % 4) as u8).chain([1, 2, 3]).collect();
    assert_eq!(order, expected);
    assert_eq!(g.stats().segments_sent, 20);
    // Unpaced: all 20 at t0.
    let mut g = gw(SpoofConfig::default());
    assert_eq!(open_and_send(&mut g, 4, 5, at(1.0)).len(), 20);
}

#[test]
fn validate_names_the_key_of_a_bad_value() {
    let ok = SpoofConfig {
        satellite_rate: Some(Bitrate::from_bps(1_000_000)),
        ..SpoofConfig::default()
    };
    assert_eq!(ok.validate(), Ok(()));
    assert_eq!(SpoofConfig::default().validate(), Ok(()));
    let zero_rate = SpoofConfig {
        satellite_rate: Some(Bitrate::from_bps(0)),
        ..SpoofConfig::default()
    };
    assert_eq!(
        zero_rate.validate(),
        Err("satellite_rate: must be > 0".into())
    );
    let no_buffer = SpoofConfig {
        buffer_per_conn: ByteSize(0),
        ..SpoofConfig::default()
    };
    assert!(no_buffer
        .validate()
        .is_err_and(|e| e.starts_with("buffer_per_conn")));
    let no_idle = SpoofConfig {
        idle_timeout: Duration::ZERO,
        ..SpoofConfig::default()
    };
    assert!(no_idle
        .validate()
        .is_err_and(|e| e.starts_with("idle_timeout")));
}
