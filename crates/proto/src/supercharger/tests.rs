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
    // One more packet of one flow: one look at the deadline index, nothing else visited.
    let before = g.flow_table_stats().visited;
    g.handle_packet(t(1), PortId(0), segment(many(5), 7, None, TcpFlags::SYN, 0));
    assert_eq!(g.flow_table_stats().visited - before, 1);
    assert_eq!(g.poll_timeout(), None);
}
