//! The body of the `vj_decompress` fuzz target, public so that cargo-fuzz (nightly) and a stable
//! smoke test run the same checks.

use std::net::Ipv4Addr;

use super::{Compressor, Decompressor, DEFAULT_SLOTS};
use crate::node::MAX_HEADER;
use crate::wire::{emit_ipv4_tcp, Ipv4Repr, SeqNumber, TcpFlags, TcpRepr, IPPROTO_TCP};

/// Two checks on arbitrary bytes. Panics only if an invariant is broken.
///
/// 1. Frames: `data` is cut into frames (a length byte, then that many bytes, the first two of
///    them a payload length) and fed to a [`Decompressor`]: it must never panic.
/// 2. Round trip: `data` drives a random header sequence over 20 connections (more than the 16
///    slots): ACK advances, window changes, retransmissions, PSH/URG/ECE/FIN/SYN, IP id jumps,
///    TTL changes, and lost frames. Each header goes through a [`Compressor`]; a lost frame is
///    reported to the [`Decompressor`] with `on_line_error`, every other frame is decompressed.
///    Whatever comes out must be byte-identical to what went in, and before the first loss
///    every frame must come out.
pub fn vj_decompress(data: &[u8]) {
    frames(data);
    round_trip(data);
}

fn frames(data: &[u8]) {
    let mut d = Decompressor::new(DEFAULT_SLOTS);
    let mut rest = data;
    while let [len, tail @ ..] = rest {
        let n = usize::from(*len).min(tail.len());
        let (frame, next) = tail.split_at(n);
        rest = next;
        if n % 7 == 6 {
            d.on_line_error();
        }
        let (payload, frame) = match frame {
            [a, b, f @ ..] => (u32::from(u16::from_be_bytes([*a, *b])), f),
            f => (0, f),
        };
        let mut out = [0u8; MAX_HEADER];
        if let Ok((_, n)) = d.decompress(frame, payload, &mut out) {
            assert!(n <= MAX_HEADER);
        }
    }
}

/// One connection's current header fields.
#[derive(Clone, Copy)]
struct Conn {
    ip: Ipv4Repr,
    tcp: TcpRepr,
}

fn round_trip(data: &[u8]) {
    let mut conns: Vec<Conn> = (0..20u8)
        .map(|i| Conn {
            ip: Ipv4Repr {
                src: Ipv4Addr::new(10, 0, 3, 1),
                dst: Ipv4Addr::new(10, 0, 0, 1 + i % 4),
                protocol: IPPROTO_TCP,
                ttl: 64,
                ident: u16::from(i) * 1000,
                dscp_ecn: 0,
                payload_len: 0,
            },
            tcp: TcpRepr {
                src_port: 5000 + u16::from(i),
                dst_port: 40000,
                seq: SeqNumber(u32::from(i) << 24),
                ack: Some(SeqNumber(0xffff_0000u32.wrapping_add(u32::from(i)))),
                window: 65535,
                ..TcpRepr::default()
            },
        })
        .collect();
    let mut comp = Compressor::new(DEFAULT_SLOTS);
    let mut decomp = Decompressor::new(DEFAULT_SLOTS);
    let mut lost_any = false;
    for ch in data.chunks(3) {
        let [op, a, b] = *ch else { break };
        let c = &mut conns[usize::from(a) % 20];
        let v = u16::from_be_bytes([a, b]);
        c.ip.ident = c.ip.ident.wrapping_add(1);
        c.tcp.flags = TcpFlags(c.tcp.flags.0 & !(TcpFlags::PSH.0 | TcpFlags::URG.0));
        c.tcp.payload_len = 0;
        let ack = c.tcp.ack.unwrap_or(SeqNumber(0));
        match op % 16 {
            0..=4 => c.tcp.ack = Some(ack + u32::from(b) * 8),
            5 => c.tcp.window = v,
            6 => {
                c.tcp.payload_len = u32::from(b) * 4;
                c.tcp.flags.insert(TcpFlags::PSH);
            }
            7 => c.tcp.seq = SeqNumber(c.tcp.seq.0.wrapping_sub(u32::from(v))),
            8 => c.tcp.seq = c.tcp.seq + u32::from(v),
            9 => {
                c.tcp.flags.insert(TcpFlags::URG);
                c.tcp.urgent = v;
            }
            10 => c.tcp.flags = TcpFlags(c.tcp.flags.0 ^ TcpFlags::ECE.0),
            11 => c.tcp.flags = TcpFlags(TcpFlags::FIN.0 * u8::from(b & 1 == 1)),
            12 => c.ip.ident = c.ip.ident.wrapping_add(v),
            13 => c.ip.ttl = b,
            14 => c.tcp.ack = Some(ack + u32::from(v) * 3),
            _ => c.tcp.flags = TcpFlags(TcpFlags::SYN.0 * u8::from(b & 1 == 1)),
        }
        let mut hdr = [0u8; MAX_HEADER];
        let n = emit_ipv4_tcp(&c.ip, &c.tcp, &mut hdr);
        let payload = c.tcp.payload_len;
        let mut frame = [0u8; MAX_HEADER];
        let (_, m) = comp.compress(&hdr[..n], payload, &mut frame);
        assert!(m <= n, "compression grew the header");
        if op >= 0xf0 {
            decomp.on_line_error();
            lost_any = true;
            continue;
        }
        let mut out = [0u8; MAX_HEADER];
        match decomp.decompress(&frame[..m], payload, &mut out) {
            Ok((_, k)) => assert_eq!(&out[..k], &hdr[..n], "decompressed header differs"),
            Err(e) => assert!(lost_any, "frame refused without any loss: {e}"),
        }
    }
}
