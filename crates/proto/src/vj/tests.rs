use std::net::Ipv4Addr;

use proptest::prelude::*;

use super::*;
use crate::node::MAX_HEADER;
use crate::wire::{emit_ipv4_tcp, Ipv4Repr, SeqNumber, TcpFlags, TcpRepr, IPPROTO_TCP};

/// A header as the TCP model emits it.
#[derive(Clone, Copy)]
struct Hdr {
    ip: Ipv4Repr,
    tcp: TcpRepr,
}

impl Hdr {
    fn ack(dst_last: u8, ack: u32) -> Self {
        Self {
            ip: Ipv4Repr {
                src: Ipv4Addr::new(10, 0, 3, 1),
                dst: Ipv4Addr::new(10, 0, 0, dst_last),
                protocol: IPPROTO_TCP,
                ttl: 64,
                ident: 100,
                dscp_ecn: 0,
                payload_len: 0,
            },
            tcp: TcpRepr {
                src_port: 5001,
                dst_port: 40001,
                seq: SeqNumber(7000),
                ack: Some(SeqNumber(ack)),
                window: 60000,
                ..TcpRepr::default()
            },
        }
    }

    fn bytes(&self) -> Vec<u8> {
        let mut b = [0u8; MAX_HEADER];
        let n = emit_ipv4_tcp(&self.ip, &self.tcp, &mut b);
        b[..n].to_vec()
    }
}

/// Compress and decompress `seq` (no losses); returns the frame sizes, checking identity.
#[track_caller]
fn round_trip(seq: &[Hdr]) -> Vec<(PacketType, usize)> {
    let mut c = Compressor::new(DEFAULT_SLOTS);
    let mut d = Decompressor::new(DEFAULT_SLOTS);
    seq.iter()
        .enumerate()
        .map(|(i, h)| {
            let orig = h.bytes();
            let mut frame = [0u8; MAX_HEADER];
            let (ty, n) = c.compress(&orig, h.tcp.payload_len, &mut frame);
            let mut out = [0u8; MAX_HEADER];
            let (ty2, m) = d
                .decompress(&frame[..n], h.tcp.payload_len, &mut out)
                .unwrap_or_else(|e| panic!("packet {i}: {e}"));
            assert_eq!(ty, ty2);
            assert_eq!(&out[..m], &orig[..], "packet {i} ({ty:?}) not identical");
            (ty, n)
        })
        .collect()
}

#[test]
fn ack_stream_compresses_to_six_bytes() {
    // An ACK per 1024-byte segment, IP id +1 each: mask, checksum, 3-byte ack delta (1024 ≥ 256).
    let seq: Vec<Hdr> = (0..50)
        .map(|i| {
            let mut h = Hdr::ack(1, 1 + 1024 * i);
            h.ip.ident = 100 + i as u16;
            h
        })
        .collect();
    let sizes = round_trip(&seq);
    assert_eq!(sizes[0], (PacketType::UncompressedTcp, 40));
    assert!(sizes[1..]
        .iter()
        .all(|&s| s == (PacketType::CompressedTcp, 6)));
    // Delayed ACKs every 2 segments are the same size; one per 200 bytes fits in one byte: 4.
    let seq: Vec<Hdr> = (0..5)
        .map(|i| {
            let mut h = Hdr::ack(1, 1 + 200 * i);
            h.ip.ident = 100 + i as u16;
            h
        })
        .collect();
    assert_eq!(round_trip(&seq)[1], (PacketType::CompressedTcp, 4));
}

#[test]
fn recorded_sequence_round_trips_byte_identical() {
    let mut seq = Vec::new();
    let mut h = Hdr::ack(1, 1);
    h.tcp.flags = TcpFlags::SYN;
    h.tcp.ack = None;
    h.tcp.mss = Some(1024);
    h.tcp.window_scale = Some(7);
    seq.push(h); // SYN: TYPE_IP
    let mut h = Hdr::ack(1, 1);
    h.tcp.flags = TcpFlags::SYN;
    h.tcp.mss = Some(1024);
    seq.push(h); // SYN-ACK: TYPE_IP
    let mut h = Hdr::ack(1, 1);
    for i in 1..=10u32 {
        h.ip.ident += 1;
        h.tcp.ack = Some(SeqNumber(1 + 1024 * i));
        seq.push(h);
    }
    h.ip.ident += 1;
    h.tcp.window = 59000; // window shrinks
    seq.push(h);
    h.ip.ident += 1;
    h.tcp.window = 65535; // and grows past the old value
    h.tcp.ack = Some(SeqNumber(1 + 1024 * 11));
    seq.push(h);
    for _ in 0..3 {
        h.ip.ident += 1;
        seq.push(h); // duplicate ACKs: nothing changed → sent uncompressed
    }
    h.ip.ident += 1;
    h.tcp.payload_len = 300; // a request with data and PSH
    h.tcp.flags = TcpFlags::PSH;
    seq.push(h);
    h.ip.ident += 1;
    h.tcp.seq = h.tcp.seq + 300; // SPECIAL_D: seq advances by the last payload
    seq.push(h);
    h.ip.ident += 1;
    h.tcp.seq = SeqNumber(h.tcp.seq.0 - 300); // retransmission: seq goes back
    seq.push(h);
    h.ip.ident += 7; // IP id jump
    h.tcp.flags = TcpFlags::URG;
    h.tcp.urgent = 3;
    h.tcp.payload_len = 0;
    h.tcp.seq = h.tcp.seq + 600;
    seq.push(h);
    h.ip.ident += 1;
    h.tcp.flags = TcpFlags::ECE; // a flag RFC 1144 does not know: must go uncompressed
    seq.push(h);
    h.ip.ident += 1;
    h.tcp.flags = TcpFlags::FIN;
    seq.push(h);
    let mut other = Hdr::ack(2, 77); // a second connection interleaved
    other.tcp.src_port = 5002;
    seq.push(other);
    other.ip.ident += 1;
    other.tcp.ack = Some(SeqNumber(77 + 70_000)); // ack delta > 0xffff → uncompressed
    seq.push(other);
    other.ip.ident += 1;
    other.ip.ttl = 63; // TTL change → uncompressed
    seq.push(other);
    other.ip.ident += 1;
    other.tcp.ack = Some(SeqNumber(77 + 70_100));
    seq.push(other);
    let types: Vec<PacketType> = round_trip(&seq).into_iter().map(|(t, _)| t).collect();
    use PacketType::*;
    let u = UncompressedTcp;
    let c = CompressedTcp;
    #[rustfmt::skip]
    let expect = [
        Ip, Ip, u, c, c, c, c, c, c, c, c, c, c, c,
        u, u, u, c, c, u, c, u, Ip,
        u, u, u, c,
    ];
    assert_eq!(types, expect);
}

#[test]
fn many_connections_recycle_slots() {
    // 40 connections round-robin over 16 slots: every packet finds its slot recycled.
    let mut seq = Vec::new();
    for round in 0..3u32 {
        for conn in 0..40u16 {
            let mut h = Hdr::ack(1, 1 + round * 1024);
            h.tcp.src_port = 6000 + conn;
            h.ip.ident = round as u16;
            seq.push(h);
        }
    }
    let sizes = round_trip(&seq);
    assert!(sizes.iter().all(|s| s.0 == PacketType::UncompressedTcp));
    // 10 connections round-robin fit: after the first round all are compressed with slot ids.
    let mut seq = Vec::new();
    for round in 0..3u32 {
        for conn in 0..10u16 {
            let mut h = Hdr::ack(1, 1 + round * 1024);
            h.tcp.src_port = 6000 + conn;
            h.ip.ident = round as u16;
            seq.push(h);
        }
    }
    let sizes = round_trip(&seq);
    assert!(sizes[10..]
        .iter()
        .all(|&s| s == (PacketType::CompressedTcp, 7)));
}

/// Send `seq` through a compressor; frames whose index is in `lost` are reported as line
/// errors. Returns each frame's fate: `Some(true)` identical, `None` refused.
fn with_losses(seq: &[Hdr], lost: &[usize]) -> Vec<Option<bool>> {
    let mut c = Compressor::new(DEFAULT_SLOTS);
    let mut d = Decompressor::new(DEFAULT_SLOTS);
    seq.iter()
        .enumerate()
        .map(|(i, h)| {
            let orig = h.bytes();
            let mut frame = [0u8; MAX_HEADER];
            let (_, n) = c.compress(&orig, h.tcp.payload_len, &mut frame);
            if lost.contains(&i) {
                d.on_line_error();
                return Some(false);
            }
            let mut out = [0u8; MAX_HEADER];
            match d.decompress(&frame[..n], h.tcp.payload_len, &mut out) {
                Ok((_, m)) => Some(out[..m] == orig[..]),
                Err(_) => None,
            }
        })
        .collect()
}

#[test]
fn lost_compressed_packet_tosses_until_uncompressed() {
    let mut seq: Vec<Hdr> = (0..8)
        .map(|i| {
            let mut h = Hdr::ack(1, 1 + 1024 * i);
            h.ip.ident = i as u16;
            h
        })
        .collect();
    // The sender's timeout retransmits; the receiver repeats its ACK: nothing changed, so the
    // compressor sends it uncompressed and the decompressor resynchronises.
    let mut dup = seq[7];
    dup.ip.ident = 8;
    seq.push(dup);
    let mut next = dup;
    next.ip.ident = 9;
    next.tcp.ack = Some(SeqNumber(1 + 1024 * 8));
    seq.push(next);
    let fate = with_losses(&seq, &[3]);
    let t = Some(true);
    assert_eq!(
        fate,
        [t, t, t, Some(false), None, None, None, None, t, t],
        "packets after the loss are tossed, none is wrong"
    );
}

#[test]
fn a_loss_forgets_every_slot_until_resent_whole() {
    let a = |i: u32| {
        let mut h = Hdr::ack(1, 1 + 1024 * i);
        h.ip.ident = i as u16;
        h
    };
    let b = |i: u32| {
        let mut h = Hdr::ack(2, 1 + 512 * i);
        h.tcp.src_port = 9;
        h.ip.ident = 50 + i as u16;
        h
    };
    // A1 B1 A2(lost, explicit slot) B2(explicit slot) A3(explicit slot, deltas against A2 which
    // the far end never saw) A4 dupA4(uncompressed) A5. RFC 1144 would accept B2 (right) and A3
    // (wrong ack, left to TCP's checksum); here both slots wait for an uncompressed packet.
    let mut dup = a(4);
    dup.ip.ident = 40;
    let mut a5 = a(5);
    a5.ip.ident = 41;
    let seq = [a(1), b(1), a(2), b(2), a(3), a(4), dup, a5];
    let fate = with_losses(&seq, &[2]);
    let t = Some(true);
    assert_eq!(fate, [t, t, Some(false), None, None, None, t, t]);
}

#[test]
fn a_forged_delta_is_caught_by_the_tcp_checksum() {
    let mut c = Compressor::new(DEFAULT_SLOTS);
    let mut d = Decompressor::new(DEFAULT_SLOTS);
    let mut out = [0u8; MAX_HEADER];
    let mut frame = [0u8; MAX_HEADER];
    let h1 = Hdr::ack(1, 1).bytes();
    let (_, n) = c.compress(&h1, 0, &mut frame);
    assert!(d.decompress(&frame[..n], 0, &mut out).is_ok());
    let mut h2 = Hdr::ack(1, 1001);
    h2.ip.ident = 101;
    let (ty, n) = c.compress(&h2.bytes(), 0, &mut frame);
    assert_eq!((ty, n), (PacketType::CompressedTcp, 6));
    frame[5] ^= 0x10; // the ack delta's low byte
    assert_eq!(
        d.decompress(&frame[..n], 0, &mut out),
        Err(VjError::Malformed("TCP checksum wrong after decompression"))
    );
}

#[test]
fn forged_frames_are_refused_not_panicked_on() {
    let mut d = Decompressor::new(DEFAULT_SLOTS);
    let mut out = [0u8; MAX_HEADER];
    // Compressed, implicit slot, nothing received yet.
    assert!(d.decompress(&[0x84, 0, 0, 4], 0, &mut out).is_err());
    // Explicit slot 200 ≥ 16.
    assert!(d.decompress(&[0xc4, 200, 0, 0, 4], 0, &mut out).is_err());
    // Uncompressed with slot out of range.
    let mut h = Hdr::ack(1, 1).bytes();
    h[0] |= 0x70;
    h[9] = 16;
    assert!(d.decompress(&h, 0, &mut out).is_err());
    // Truncated compressed packet on a good slot.
    h[9] = 3;
    assert!(d.decompress(&h, 0, &mut out).is_ok());
    assert_eq!(
        d.decompress(&[0xc4, 3, 0], 0, &mut out),
        Err(VjError::Malformed("compressed packet truncated"))
    );
    assert!(d.is_tossing());
    assert_eq!(d.stats().tossed, 4);
}

#[test]
fn fuzz_body_smoke_deterministic() {
    let mut rng = crate::rand::Rng::new(42, 0);
    for _ in 0..300 {
        let len = (rng.next_u32() % 900) as usize;
        let data: Vec<u8> = (0..len).map(|_| rng.next_u32() as u8).collect();
        fuzzing::vj_decompress(&data);
    }
}

proptest! {
    #[test]
    fn fuzz_body_never_panics(data in proptest::collection::vec(any::<u8>(), 0..1200)) {
        fuzzing::vj_decompress(&data);
    }
}

/// Drive a link with `pkts` at 1 ms intervals until idle; returns what it delivered.
fn through_link(
    config: &crate::link::LinkConfig,
    pkts: Vec<crate::node::Packet>,
) -> (Vec<crate::node::Packet>, crate::link::LinkStats) {
    use crate::node::{Node, PortId};
    use crate::time::{Duration, Instant};
    let mut l = crate::link::Link::new(config, crate::rand::Rng::new(1, 1));
    let mut out = Vec::new();
    let n = pkts.len() as u64;
    for (i, p) in pkts.into_iter().enumerate() {
        let now = Instant::ZERO + Duration::from_millis(i as u64);
        l.handle_timeout(now);
        l.handle_packet(now, PortId(0), p);
        while let Some(t) = l.poll_transmit(now) {
            out.push(t.pkt);
        }
    }
    let mut now = Instant::ZERO + Duration::from_millis(n);
    while let Some(t) = l.poll_timeout() {
        now = now.max(t);
        l.handle_timeout(now);
        while let Some(t) = l.poll_transmit(now) {
            out.push(t.pkt);
        }
    }
    (out, l.stats())
}

#[test]
fn a_vj_link_sends_compressed_sizes_and_delivers_the_original_headers() {
    use crate::link::{Compression, ErrorModelConfig, LinkConfig};
    use crate::time::{Bitrate, Duration};
    let acks: Vec<Hdr> = (0..20u32)
        .map(|i| {
            let mut h = Hdr::ack(1, 1 + 1024 * i);
            h.ip.ident = i as u16;
            h
        })
        .collect();
    let pkts = || {
        acks.iter()
            .map(|h| crate::node::Packet::new(&h.bytes(), 0))
            .collect::<Vec<_>>()
    };
    let mut config = LinkConfig {
        rate: Bitrate(9600),
        delay: Duration::from_millis(200),
        compression: Compression::Vj,
        ..LinkConfig::default()
    };
    let (out, st) = through_link(&config, pkts());
    let got: Vec<Vec<u8>> = out.iter().map(|p| p.header().to_vec()).collect();
    let want: Vec<Vec<u8>> = acks.iter().map(Hdr::bytes).collect();
    assert_eq!(got, want);
    // One 40-byte uncompressed header, then 19 × 6 bytes on the wire.
    assert_eq!(st.delivered_bytes, 40 + 19 * 6);
    // Lose the 5th packet on the line: the 6th..20th are tossed (no uncompressed packet comes).
    config.error = ErrorModelConfig::List { packets: vec![5] };
    let (out, st) = through_link(&config, pkts());
    assert_eq!(out.len(), 4);
    assert!(out.iter().zip(&want).all(|(p, w)| p.header() == &w[..]));
    assert_eq!((st.error_drops, st.compression_drops), (1, 15));
    assert_eq!(
        st.arrivals,
        st.delivered_packets + st.error_drops + st.compression_drops
    );
}
