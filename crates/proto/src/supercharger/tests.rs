//! The gateway driven packet by packet: handshake rewriting, the virtual window, holding and
//! releasing data, buffer bounds, and what it must leave alone.

use std::net::Ipv4Addr;

use super::{SuperCharger, SuperChargerConfig};
use crate::node::{Node, Packet, PortId};
use crate::time::{Duration, Instant};
use crate::units::ByteSize;
use crate::wire::{emit_ipv4_tcp, parse_packet, Ipv4Repr, SeqNumber, TcpFlags, TcpRepr};

const SENDER: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);
const RECEIVER: Ipv4Addr = Ipv4Addr::new(10, 0, 2, 1);
const TERRESTRIAL: PortId = PortId(0);
const SATELLITE: PortId = PortId(1);
const ISS: u32 = 1_000;
const IRS: u32 = 50_000;

fn t(ms: u64) -> Instant {
    Instant::ZERO + Duration::from_millis(ms)
}

fn packet(from_sender: bool, tcp: &TcpRepr) -> Packet {
    let (src, dst) = if from_sender {
        (SENDER, RECEIVER)
    } else {
        (RECEIVER, SENDER)
    };
    let ip = Ipv4Repr {
        src,
        dst,
        protocol: 6,
        ttl: 63,
        ident: 0,
        dscp_ecn: 0,
        payload_len: 0,
    };
    Packet::build(tcp.payload_len, |b| emit_ipv4_tcp(&ip, tcp, b))
}

fn from_sender(seq_off: u32, len: u32) -> TcpRepr {
    TcpRepr {
        src_port: 40_000,
        dst_port: 5_000,
        seq: SeqNumber(ISS + seq_off),
        ack: Some(SeqNumber(IRS + 1)),
        window: 1000,
        payload_len: len,
        ..TcpRepr::default()
    }
}

fn ack_from_receiver(ack_off: u32, window: u16) -> TcpRepr {
    TcpRepr {
        src_port: 5_000,
        dst_port: 40_000,
        seq: SeqNumber(IRS + 1),
        ack: Some(SeqNumber(ISS + ack_off)),
        window,
        ..TcpRepr::default()
    }
}

fn drain(g: &mut SuperCharger, now: Instant) -> Vec<Packet> {
    std::iter::from_fn(|| g.poll_transmit(now).map(|tx| tx.pkt)).collect()
}

fn parsed(p: &Packet) -> TcpRepr {
    parse_packet(p).expect("the gateway emits valid packets").1
}

/// SYN (sender, scale `sender_ws`) and SYN-ACK (receiver, scale `receiver_ws`, `window`)
/// through the gateway at t = 0 and t = 600 ms; returns the SYN-ACK as forwarded.
fn handshake(
    g: &mut SuperCharger,
    sender_ws: Option<u8>,
    receiver_ws: Option<u8>,
    window: u16,
) -> TcpRepr {
    let syn = TcpRepr {
        flags: TcpFlags::SYN,
        ack: None,
        seq: SeqNumber(ISS),
        window_scale: sender_ws,
        mss: Some(1460),
        ..from_sender(0, 0)
    };
    g.handle_packet(t(0), TERRESTRIAL, packet(true, &syn));
    assert_eq!(drain(g, t(0)).len(), 1);
    let syn_ack = TcpRepr {
        flags: TcpFlags::SYN,
        seq: SeqNumber(IRS),
        ack: Some(SeqNumber(ISS + 1)),
        window,
        window_scale: receiver_ws,
        mss: Some(1460),
        ..ack_from_receiver(1, window)
    };
    g.handle_packet(t(600), SATELLITE, packet(false, &syn_ack));
    let out = drain(g, t(600));
    assert_eq!(out.len(), 1);
    parsed(&out[0])
}

#[test]
fn non_tcp_and_unmanaged_connections_pass_byte_for_byte() {
    let mut g = SuperCharger::new(SuperChargerConfig::default());
    // UDP (protocol 17): not parsed as TCP, passed as is.
    let mut udp = [0u8; 28];
    udp[0] = 0x45;
    udp[9] = 17;
    udp[2..4].copy_from_slice(&28u16.to_be_bytes());
    g.handle_packet(t(0), TERRESTRIAL, Packet::new(&udp, 0));
    // A data segment of a connection whose handshake the gateway never saw.
    let data = packet(true, &from_sender(1, 1448));
    let data_bytes = data.header().to_vec();
    g.handle_packet(t(0), TERRESTRIAL, data);
    let out = drain(&mut g, t(0));
    assert_eq!(out.len(), 2);
    assert_eq!(out[0].header(), &udp[..]);
    assert_eq!(out[1].header(), &data_bytes[..]);
    assert_eq!(g.stats().passed_other, 1);
    assert_eq!(g.stats().flows_managed, 0);
}

#[test]
fn handshake_raises_the_receivers_window_scale_and_acks_carry_the_virtual_window() {
    let mut g = SuperCharger::new(SuperChargerConfig::default());
    let syn_ack = handshake(&mut g, Some(7), Some(0), 65_535);
    assert_eq!(syn_ack.window_scale, Some(8), "virtual_wscale announced");
    assert_eq!(syn_ack.seq, SeqNumber(IRS), "sequence numbers never change");
    assert_eq!(syn_ack.window, 65_535, "SYN windows are never scaled");
    assert_eq!(g.stats().wscale_rewritten, 1);
    // The first ACK: the virtual edge is what was forwarded (offset 1) plus the flow's room
    // (8 MB), so the window field is 8 000 000 >> 8 = 31 250 (the sender reads 8 000 000).
    g.handle_packet(
        t(601),
        SATELLITE,
        packet(false, &ack_from_receiver(1, 65_535)),
    );
    let out = drain(&mut g, t(601));
    let ack = parsed(&out[0]);
    assert_eq!(ack.window, 31_250);
    assert_eq!(ack.ack, Some(SeqNumber(ISS + 1)));
    assert_eq!(g.stats().windows_rewritten, 1);
}

#[test]
fn without_window_scaling_the_virtual_window_stops_at_64k() {
    let mut g = SuperCharger::new(SuperChargerConfig::default());
    let syn_ack = handshake(&mut g, None, None, 17_520);
    assert_eq!(syn_ack.window_scale, None);
    g.handle_packet(
        t(601),
        SATELLITE,
        packet(false, &ack_from_receiver(1, 17_520)),
    );
    assert_eq!(parsed(&drain(&mut g, t(601))[0]).window, 65_535);
}

#[test]
fn data_beyond_the_receivers_window_is_held_until_the_forecast_allows_it() {
    let mut g = SuperCharger::new(SuperChargerConfig::default());
    handshake(&mut g, None, None, 10_000);
    // 12 segments of 1000 bytes: the receiver's window (10 000 from offset 1) takes 10.
    let sent: Vec<Packet> = (0..12)
        .map(|i| packet(true, &from_sender(1 + i * 1000, 1000)))
        .collect();
    for p in &sent {
        g.handle_packet(t(700), TERRESTRIAL, p.clone());
    }
    let out = drain(&mut g, t(700));
    assert_eq!(out.len(), 10);
    for (o, s) in out.iter().zip(&sent) {
        assert_eq!(o.header(), s.header(), "forwarded unchanged");
    }
    assert_eq!(g.held_bytes(), 2000);
    // No rate estimate yet: nothing to wait for but the next ACK.
    assert_eq!(g.poll_timeout(), None);
    // The receiver acknowledges 2 segments with its window full again (a fast reader): its
    // edge moves to 12 001 and both held segments fit.
    g.handle_packet(
        t(1300),
        SATELLITE,
        packet(false, &ack_from_receiver(2001, 10_000)),
    );
    let out = drain(&mut g, t(1300));
    assert_eq!(out.len(), 3, "the ACK and the two held segments");
    assert_eq!(out[1].header(), sent[10].header());
    assert_eq!(out[2].header(), sent[11].header());
    assert_eq!(g.held_bytes(), 0);
    assert_eq!(g.stats().segments_held, 12);
    // The RTT sample: segment 2 left at 700 ms, its ACK came back at 1300 ms.
    let est = g.estimates();
    assert_eq!(est[0].rtt, Some(Duration::from_millis(600)));
    assert_eq!(est[0].receiver_max_window, 10_000);
}

#[test]
fn retransmissions_pass_and_duplicates_of_held_data_are_dropped() {
    let mut g = SuperCharger::new(SuperChargerConfig::default());
    handshake(&mut g, None, None, 2_000);
    for i in 0..4 {
        g.handle_packet(
            t(700),
            TERRESTRIAL,
            packet(true, &from_sender(1 + i * 1000, 1000)),
        );
    }
    assert_eq!(drain(&mut g, t(700)).len(), 2);
    // The sender times out and resends the first (forwarded) and the third (still held).
    g.handle_packet(t(900), TERRESTRIAL, packet(true, &from_sender(1, 1000)));
    g.handle_packet(t(900), TERRESTRIAL, packet(true, &from_sender(2001, 1000)));
    assert_eq!(drain(&mut g, t(900)).len(), 1);
    let s = g.stats();
    assert_eq!((s.retransmissions_passed, s.duplicates_dropped), (1, 1));
    assert_eq!(g.held_bytes(), 2000);
}

#[test]
fn a_full_flow_buffer_closes_the_virtual_window_and_drops_excess() {
    let config = SuperChargerConfig {
        flow_buffer: ByteSize(3000),
        total_buffer: ByteSize(3000),
        ..SuperChargerConfig::default()
    };
    let mut g = SuperCharger::new(config);
    handshake(&mut g, None, None, 1_000);
    for i in 0..5 {
        g.handle_packet(
            t(700),
            TERRESTRIAL,
            packet(true, &from_sender(1 + i * 1000, 1000)),
        );
    }
    // One fits the receiver, three are held (3000 bytes), the fifth would exceed the buffer.
    assert_eq!(drain(&mut g, t(700)).len(), 1);
    assert_eq!(g.held_bytes(), 3000);
    assert_eq!(g.stats().buffer_drops, 1);
    assert_eq!(g.stats().max_held_bytes, 3000);
    // An ACK of nothing new (a window update to 0): the virtual edge cannot grow past what was
    // received (4001), so the sender may not send more — backpressure.
    g.handle_packet(
        t(1300),
        SATELLITE,
        packet(false, &ack_from_receiver(1001, 0)),
    );
    let out = drain(&mut g, t(1300));
    assert_eq!(parsed(&out[0]).window, 3000);
}

#[test]
fn rst_forgets_the_connection_and_releases_what_was_held() {
    let mut g = SuperCharger::new(SuperChargerConfig::default());
    handshake(&mut g, None, None, 1_000);
    for i in 0..3 {
        g.handle_packet(
            t(700),
            TERRESTRIAL,
            packet(true, &from_sender(1 + i * 1000, 1000)),
        );
    }
    assert_eq!(drain(&mut g, t(700)).len(), 1);
    let rst = TcpRepr {
        flags: TcpFlags::RST,
        ..from_sender(3001, 0)
    };
    g.handle_packet(t(800), TERRESTRIAL, packet(true, &rst));
    assert_eq!(drain(&mut g, t(800)).len(), 3);
    assert!(g.estimates().is_empty());
    assert_eq!(g.held_bytes(), 0);
}

/// Memory bounded by `max_flows` (refused connections pass unchanged, counted), and an input
/// re-evaluates its own flow only: 100 000 connections.
#[test]
fn flow_table_is_bounded_and_a_packet_visits_only_its_flow() {
    use crate::flow::testing::{drain, many, seen, segment};
    let syn = |n: u32| segment(many(n), 7, None, TcpFlags::SYN, 0);
    let mut g = SuperCharger::new(SuperChargerConfig {
        max_flows: 1000,
        ..SuperChargerConfig::default()
    });
    for n in 0..100_000u32 {
        g.handle_packet(t(0), PortId(0), syn(n));
        assert_eq!(drain(&mut g, t(0)), vec![seen(&syn(n))]);
    }
    assert_eq!(g.flow_count(), 1000);
    assert_eq!(g.stats().flows_refused, 99_000);
    let mut g = SuperCharger::new(SuperChargerConfig {
        max_flows: 100_000,
        ..SuperChargerConfig::default()
    });
    for n in 0..100_000u32 {
        g.handle_packet(t(0), PortId(0), syn(n));
    }
    assert_eq!(g.flow_count(), 100_000);
    // One more packet of one flow: one look at the idle list and one at the deadline index,
    // nothing else visited.
    let before = g.flow_table_stats().visited;
    g.handle_packet(t(1), PortId(0), segment(many(5), 7, None, TcpFlags::SYN, 0));
    assert_eq!(g.flow_table_stats().visited - before, 2);
    assert_eq!(g.poll_timeout(), None);
}

/// The sender's SYN (scale 7) and the receiver's SYN-ACK (scale 0) at `at`; the SYN-ACK's
/// window scale as forwarded (`Some(8)` when the gateway manages the connection).
fn syn_ack_scale_at(g: &mut SuperCharger, at: Instant) -> Option<u8> {
    let syn = TcpRepr {
        flags: TcpFlags::SYN,
        ack: None,
        seq: SeqNumber(ISS),
        window_scale: Some(7),
        ..from_sender(0, 0)
    };
    g.handle_packet(at, TERRESTRIAL, packet(true, &syn));
    drain(g, at);
    let syn_ack = TcpRepr {
        flags: TcpFlags::SYN,
        seq: SeqNumber(IRS),
        ack: Some(SeqNumber(ISS + 1)),
        window_scale: Some(0),
        ..ack_from_receiver(1, 65_535)
    };
    g.handle_packet(at, SATELLITE, packet(false, &syn_ack));
    let out = drain(g, at);
    assert_eq!(out.len(), 1);
    parsed(&out[0]).window_scale
}

/// 4 096 connections that end without FIN or RST (receivers gone, a NAT timed out) fill the
/// table; a new connection is refused while they are fresh, and accelerated once they have
/// been idle for `idle_timeout`, which forgot all of them and counted it.
#[test]
fn flows_ending_without_fin_or_rst_expire_and_a_later_flow_is_accelerated() {
    use crate::flow::testing::{many, segment};
    let mut g = SuperCharger::new(SuperChargerConfig::default());
    for n in 0..4096u32 {
        g.handle_packet(
            t(0),
            TERRESTRIAL,
            segment(many(n), 7, None, TcpFlags::SYN, 0),
        );
    }
    drain(&mut g, t(0));
    assert_eq!((g.flow_count(), g.stats().flows_managed), (4096, 4096));
    assert_eq!(
        syn_ack_scale_at(&mut g, t(1_000)),
        Some(0),
        "refused: untouched"
    );
    assert_eq!(g.stats().flows_refused, 1);
    // One of the old flows still talks just before the timeout: it stays.
    g.handle_packet(
        t(119_000),
        TERRESTRIAL,
        segment(many(9), 8, Some(1), TcpFlags::default(), 0),
    );
    drain(&mut g, t(119_000));
    let late = t(120_000);
    assert_eq!(
        syn_ack_scale_at(&mut g, late),
        Some(8),
        "managed: scale raised"
    );
    assert_eq!(g.stats().flows_idle_expired, 4095);
    assert_eq!(g.stats().flows_managed, 4097);
    assert_eq!(g.flow_count(), 2);
    // Where summary.json and the daemon's metrics read it.
    let counters = crate::middlebox::Middlebox::Supercharger(Box::new(g)).counters();
    assert!(counters.contains(&("flows_idle_expired".to_owned(), 4095)));
}

/// A connection idle with data held (the receiver vanished): expiry releases what it held, in
/// order, and the shared buffer accounting returns to zero.
#[test]
fn an_idle_flow_releases_what_it_held_when_it_expires() {
    let mut g = SuperCharger::new(SuperChargerConfig::default());
    handshake(&mut g, None, None, 1_000);
    let sent: Vec<Packet> = (0..3)
        .map(|i| packet(true, &from_sender(1 + i * 1000, 1000)))
        .collect();
    let expect: Vec<Vec<u8>> = sent.iter().map(|p| p.header().to_vec()).collect();
    for p in sent {
        g.handle_packet(t(700), TERRESTRIAL, p);
    }
    assert_eq!(drain(&mut g, t(700)).len(), 1);
    assert_eq!(g.held_bytes(), 2000);
    g.handle_timeout(t(120_699));
    assert_eq!(
        g.stats().flows_idle_expired,
        0,
        "not idle for the whole timeout yet"
    );
    g.handle_timeout(t(120_700));
    let out: Vec<Vec<u8>> = drain(&mut g, t(120_700))
        .iter()
        .map(|p| p.header().to_vec())
        .collect();
    assert_eq!(out, expect[1..]);
    assert_eq!((g.held_bytes(), g.flow_count()), (0, 0));
    assert_eq!(g.stats().flows_idle_expired, 1);
}

#[test]
fn config_refuses_a_zero_idle_timeout() {
    let c = SuperChargerConfig {
        idle_timeout: Duration::ZERO,
        ..SuperChargerConfig::default()
    };
    assert!(c.validate().is_err_and(|m| m.starts_with("idle_timeout")));
}

/// The SYN-ACK a receiver without window scaling sends (MSS, SACK-permitted, timestamps).
fn plain_syn_ack(window: u16) -> TcpRepr {
    TcpRepr {
        flags: TcpFlags::SYN,
        seq: SeqNumber(IRS),
        ack: Some(SeqNumber(ISS + 1)),
        mss: Some(1460),
        sack_permitted: true,
        timestamp: Some((7, 9)),
        ..ack_from_receiver(1, window)
    }
}

/// Sender's SYN with scale `shift`, then `syn_ack` from the receiver; the SYN-ACK as forwarded.
fn open_with(g: &mut SuperCharger, shift: Option<u8>, syn_ack: Packet) -> Packet {
    let syn = TcpRepr {
        flags: TcpFlags::SYN,
        ack: None,
        seq: SeqNumber(ISS),
        window_scale: shift,
        mss: Some(1460),
        ..from_sender(0, 0)
    };
    g.handle_packet(t(0), TERRESTRIAL, packet(true, &syn));
    drain(g, t(0));
    g.handle_packet(t(600), SATELLITE, syn_ack);
    let mut out = drain(g, t(600));
    assert_eq!(out.len(), 1);
    out.remove(0)
}

/// The header of `pkt` after `f` rewrote it (for expected bytes).
fn with(tcp: TcpRepr, from_sender: bool) -> Vec<u8> {
    packet(from_sender, &tcp).header().to_vec()
}

#[test]
fn a_receiver_without_scaling_gets_one_negotiated_on_its_behalf() {
    let mut g = SuperCharger::new(SuperChargerConfig::default());
    let syn_ack = open_with(&mut g, Some(7), packet(false, &plain_syn_ack(65_535)));
    // On the wire: the SYN-ACK the receiver would have sent had it announced shift 8 — the
    // option after the timestamps (NOP, 3, 3, 8), lengths and both checksums adjusted.
    let expected = with(
        TcpRepr {
            window_scale: Some(8),
            ..plain_syn_ack(65_535)
        },
        false,
    );
    assert_eq!(syn_ack.header(), &expected[..]);
    assert_eq!(&syn_ack.header()[56..60], &[1, 3, 3, 8]);
    assert_eq!(g.stats().wscale_added, 1);
    // The receiver's first ACK (unscaled 65 535): the virtual window of 1 + 8 000 000 − 1 bytes
    // goes out scaled by 8, rounded down: 31 250 (the sender reads 8 000 000).
    g.handle_packet(
        t(601),
        SATELLITE,
        packet(false, &ack_from_receiver(1, 65_535)),
    );
    let out = drain(&mut g, t(601));
    assert_eq!(
        out[0].header(),
        &with(ack_from_receiver(1, 31_250), false)[..]
    );
    // The sender's windows are scaled by its 7; the receiver reads them unscaled: 100 → 12 800,
    // 1000 → 128 000, capped at 65 535.
    for (sent, seen) in [(100, 12_800), (1000, 65_535)] {
        let data = TcpRepr {
            window: sent,
            ..from_sender(1, 1000)
        };
        g.handle_packet(t(700), TERRESTRIAL, packet(true, &data));
        let out = drain(&mut g, t(700));
        let fwd = TcpRepr {
            window: seen,
            ..data
        };
        assert_eq!(out[0].header(), &with(fwd, true)[..]);
    }
    assert_eq!(g.stats().sender_windows_rewritten, 2);
}

#[test]
fn the_scaled_window_rounds_down_to_what_the_gateway_backs() {
    // A 1000-byte gateway buffer: the virtual edge is the receiver's own (1 + 17 520), and
    // 17 520 >> 8 = 68 gives the sender 17 408 bytes, never more than the receiver offers.
    let mut g = SuperCharger::new(SuperChargerConfig {
        flow_buffer: ByteSize(1000),
        total_buffer: ByteSize(1000),
        ..SuperChargerConfig::default()
    });
    open_with(&mut g, Some(2), packet(false, &plain_syn_ack(17_520)));
    g.handle_packet(
        t(601),
        SATELLITE,
        packet(false, &ack_from_receiver(1, 17_520)),
    );
    assert_eq!(parsed(&drain(&mut g, t(601))[0]).window, 68);
}

#[test]
fn no_option_is_added_when_the_sender_offers_no_scaling_or_it_is_switched_off() {
    for (shift, add) in [(None, true), (Some(7), false)] {
        let mut g = SuperCharger::new(SuperChargerConfig {
            add_wscale: add,
            ..SuperChargerConfig::default()
        });
        let sent = packet(false, &plain_syn_ack(17_520));
        let bytes = sent.header().to_vec();
        assert_eq!(open_with(&mut g, shift, sent).header(), &bytes[..]);
        g.handle_packet(
            t(601),
            SATELLITE,
            packet(false, &ack_from_receiver(1, 17_520)),
        );
        // Unscaled: the virtual window stops at 64 KB.
        assert_eq!(parsed(&drain(&mut g, t(601))[0]).window, 65_535);
        let data = packet(true, &from_sender(1, 1000));
        let bytes = data.header().to_vec();
        g.handle_packet(t(700), TERRESTRIAL, data);
        assert_eq!(drain(&mut g, t(700))[0].header(), &bytes[..]);
        assert_eq!(g.stats().wscale_added, 0);
    }
}

#[test]
fn a_syn_ack_with_full_options_passes_unscaled_and_is_counted() {
    let mut g = SuperCharger::new(SuperChargerConfig::default());
    // The plain SYN-ACK with its options replaced by MSS and 36 NOPs (40 bytes).
    let base = TcpRepr {
        mss: None,
        sack_permitted: false,
        timestamp: None,
        ..plain_syn_ack(17_520)
    };
    let mut h = packet(false, &base).header().to_vec();
    h.extend_from_slice(&[2, 4, 5, 180]);
    h.extend_from_slice(&[1; 36]);
    h[2..4].copy_from_slice(&80u16.to_be_bytes());
    h[32] = 15 << 4;
    let mut v = crate::wire::TcpIpv4View::new_checked(&mut h[..]).expect("valid");
    v.fill_checksums();
    let out = open_with(&mut g, Some(7), Packet::new(&h, 0));
    assert_eq!(out.header(), &h[..]);
    assert_eq!((g.stats().wscale_added, g.stats().wscale_no_room), (0, 1));
    g.handle_packet(
        t(601),
        SATELLITE,
        packet(false, &ack_from_receiver(1, 17_520)),
    );
    assert_eq!(parsed(&drain(&mut g, t(601))[0]).window, 65_535);
}

#[test]
fn a_receiver_opening_without_scaling_has_it_offered_and_never_sees_the_answer() {
    let mut g = SuperCharger::new(SuperChargerConfig::default());
    // The receiver opens (the paper's download): SYN without window scaling.
    let syn = TcpRepr {
        flags: TcpFlags::SYN,
        ack: None,
        seq: SeqNumber(IRS),
        mss: Some(1460),
        sack_permitted: true,
        timestamp: Some((7, 0)),
        ..ack_from_receiver(0, 17_520)
    };
    g.handle_packet(t(0), SATELLITE, packet(false, &syn));
    let out = drain(&mut g, t(0));
    let offered = TcpRepr {
        window_scale: Some(8),
        ..syn
    };
    assert_eq!(out[0].header(), &with(offered, false)[..]);
    // The sender agrees with shift 7; the receiver gets three NOPs where the option was.
    let syn_ack = TcpRepr {
        flags: TcpFlags::SYN,
        seq: SeqNumber(ISS),
        ack: Some(SeqNumber(IRS + 1)),
        window_scale: Some(7),
        mss: Some(1460),
        sack_permitted: true,
        timestamp: Some((3, 7)),
        ..from_sender(0, 0)
    };
    g.handle_packet(t(600), TERRESTRIAL, packet(true, &syn_ack));
    let out = drain(&mut g, t(600));
    let mut expected = with(syn_ack, true);
    assert_eq!(&expected[56..60], &[1, 3, 3, 7]);
    let mut v = crate::wire::TcpIpv4View::new_checked(&mut expected[..]).expect("valid");
    v.buffer_mut()[57..60].fill(1);
    v.fill_checksums();
    assert_eq!(out[0].header(), &expected[..]);
    assert_eq!(parsed(&out[0]).window_scale, None);
    // The receiver's ACK is scaled by 8 toward the sender, the sender's windows by 7 back.
    g.handle_packet(
        t(601),
        SATELLITE,
        packet(false, &ack_from_receiver(1, 17_520)),
    );
    assert_eq!(parsed(&drain(&mut g, t(601))[0]).window, 31_250);
    let data = TcpRepr {
        window: 10,
        ..from_sender(1, 1000)
    };
    g.handle_packet(t(700), TERRESTRIAL, packet(true, &data));
    assert_eq!(parsed(&drain(&mut g, t(700))[0]).window, 1280);
}

proptest::proptest! {
    /// Any sequence of receiver ACKs (unscaled windows) and sender data through a gateway that
    /// negotiated scaling for the receiver: every forwarded ACK has a valid checksum and gives
    /// the sender no more than the highest edge the gateway could back — the receiver's own
    /// edge or what it received plus the room left in its buffer — and less than one scale
    /// unit below it (rounding down), unless capped at 65 535.
    #[test]
    fn scaled_windows_stay_backed_and_checksummed(
        steps in proptest::collection::vec((proptest::bool::ANY, 0u32..3000, 0u16..=65_535), 1..60),
        buffer in 1000u64..200_000,
    ) {
        let mut g = SuperCharger::new(SuperChargerConfig {
            flow_buffer: ByteSize(buffer),
            total_buffer: ByteSize(buffer),
            ..SuperChargerConfig::default()
        });
        open_with(&mut g, Some(7), packet(false, &plain_syn_ack(65_535)));
        let (mut rcvd, mut ack, mut edge) = (1u64, 1u64, 0u64);
        for (i, &(is_ack, n, window)) in steps.iter().enumerate() {
            let now = t(601 + i as u64);
            if is_ack {
                ack = (ack + u64::from(n)).min(rcvd);
                let room = buffer.saturating_sub(g.held_bytes());
                edge = edge.max((ack + u64::from(window)).max(rcvd + room));
                let sent = ack_from_receiver(ack as u32, window);
                g.handle_packet(now, SATELLITE, packet(false, &sent));
                let out = drain(&mut g, now);
                let fwd = out.iter().find(|p| parsed(p).src_port == 5_000).expect("forwarded");
                let view = crate::wire::TcpIpv4View::new_checked(fwd.header()).expect("valid");
                proptest::prop_assert!(view.verify_checksums());
                let credit = u64::from(view.window()) << 8;
                proptest::prop_assert!(ack + credit <= edge, "{} > {}", ack + credit, edge);
                proptest::prop_assert!(view.window() == 65_535 || ack + credit + 256 > edge);
            } else if g.held_bytes() + u64::from(n) <= buffer && n > 0 {
                g.handle_packet(now, TERRESTRIAL, packet(true, &from_sender(rcvd as u32, n)));
                rcvd += u64::from(n);
                drain(&mut g, now);
            }
        }
    }
}
