//! The body of the `ack_expander` fuzz target, public so that cargo-fuzz (nightly) and a stable
//! smoke test run the same checks.

use std::net::Ipv4Addr;

use super::trailer::{self, Trailer};
use super::{AckExpander, AckExpanderConfig, Expansion, ExpansionLimit};
use crate::node::{Packet, MAX_HEADER};
use crate::wire::{
    emit_ipv4_tcp, parse_ipv4_tcp, parse_packet, Ipv4Repr, SeqNumber, TcpRepr, IPPROTO_TCP,
};

/// Two checks on arbitrary bytes; panics only if an invariant is broken.
///
/// 1. Raw: `data` (2 bytes of payload length, then header bytes) is a tunnel packet; whatever
///    the expander makes of it must satisfy [`check_output`].
/// 2. Structured: `data` picks an ACK, a trailer and a byte to corrupt in the encapsulated
///    packet; an uncorrupted packet must expand to exactly `count + 1` ACKs, a corrupted one must
///    be refused or satisfy [`check_output`].
pub fn expander_input(data: &[u8]) {
    if let [hi, lo, header @ ..] = data {
        let header = &header[..header.len().min(MAX_HEADER)];
        let pkt = Packet::new(header, u32::from(u16::from_be_bytes([*hi, *lo])));
        let mut out = Vec::new();
        if let Ok(x) = AckExpander::expand(&pkt, |_| true, ExpansionLimit::NONE, &mut out) {
            assert_eq!(x.acks, out.len());
            check_output(&pkt, &out);
        }
        let mut out = Vec::new();
        let limit = AckExpanderConfig::default().limit();
        if let Ok(x) = AckExpander::expand(&pkt, |_| true, limit, &mut out) {
            assert_eq!(x.acks, out.len());
            check_output_limited(&pkt, &out, limit);
        }
    }
    let [a0, a1, a2, a3, count, b0, b1, w0, w1, flip_at, flip, ..] = *data else {
        return;
    };
    let ack = u32::from_be_bytes([a0, a1, a2, a3]);
    let tr = Trailer {
        count: count.max(1),
        bytes: u16::from_be_bytes([b0, b1]).max(u16::from(count.max(1))),
    };
    let ip = Ipv4Repr {
        src: Ipv4Addr::new(10, 0, 3, 1),
        dst: Ipv4Addr::new(10, 0, 0, 1),
        protocol: IPPROTO_TCP,
        ttl: 64,
        ident: u16::from_be_bytes([w1, w0]),
        dscp_ecn: 0,
        payload_len: 0,
    };
    let tcp = TcpRepr {
        src_port: 5001,
        dst_port: 40001,
        seq: SeqNumber(1),
        ack: Some(SeqNumber(ack)),
        window: u16::from_be_bytes([w0, w1]),
        ..TcpRepr::default()
    };
    let mut inner = [0u8; 80];
    let n = emit_ipv4_tcp(&ip, &tcp, &mut inner);
    let mut buf = [0u8; MAX_HEADER];
    let src = Ipv4Addr::new(192, 168, 3, 1);
    let dst = Ipv4Addr::new(192, 168, 1, 1);
    let Some(m) = trailer::encapsulate(&inner[..n], tr, src, dst, 7, &mut buf) else {
        panic!("a 40-byte ACK fits");
    };
    let pkt = Packet::new(&buf[..m], 0);
    let mut out = Vec::new();
    let got = AckExpander::expand(&pkt, |a| a == src, ExpansionLimit::NONE, &mut out);
    assert_eq!(
        got,
        Ok(Expansion {
            acks: usize::from(tr.count) + 1,
            clipped: 0
        })
    );
    check_output(&pkt, &out);
    let last = out.last().map(|p| p.header().to_vec());
    assert_eq!(
        last.as_deref(),
        Some(&inner[..n]),
        "the received ACK is sent last, unchanged"
    );

    let mut forged = buf;
    forged[usize::from(flip_at) % m] ^= flip.max(1);
    let pkt = Packet::new(&forged[..m], 0);
    let mut out = Vec::new();
    if AckExpander::expand(&pkt, |a| a == src, ExpansionLimit::NONE, &mut out).is_ok() {
        check_output(&pkt, &out);
    }
}

/// Every output packet is a valid IPv4/TCP header (both checksums); for a compacted input the
/// ACK numbers are strictly increasing and end at the received one.
pub fn check_output(input: &Packet, out: &[Packet]) {
    check_output_limited(input, out, ExpansionLimit::NONE);
}

/// [`check_output`] for an expansion under `limit`: exactly `limit.regenerated(trailer)`
/// regenerated ACKs, still covering the trailer's whole byte range.
pub fn check_output_limited(input: &Packet, out: &[Packet], limit: ExpansionLimit) {
    let Ok(t) = trailer::parse(input.header(), input.payload_len) else {
        panic!("expand accepted what the tunnel parser refuses");
    };
    let Some(tr) = t.trailer else {
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].header(), t.inner);
        return;
    };
    assert_eq!(out.len(), usize::from(limit.regenerated(tr)) + 1);
    assert!(out.len() <= usize::from(tr.count) + 1);
    assert!(out.len() as u64 <= u64::from(limit.max_regenerated) + 1);
    let acks: Vec<SeqNumber> = out
        .iter()
        .map(|p| {
            let (_, tcp) =
                parse_packet(p).unwrap_or_else(|e| panic!("regenerated ACK invalid: {e}"));
            assert_eq!(tcp.payload_len, 0);
            tcp.ack
                .unwrap_or_else(|| panic!("regenerated packet without ACK"))
        })
        .collect();
    assert!(
        acks.windows(2).all(|w| w[0] < w[1]),
        "not increasing: {acks:?}"
    );
    let (_, received) = parse_ipv4_tcp(t.inner, 0).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(acks.last().copied(), received.ack);
    // The span covered is exactly the trailer's byte count.
    assert_eq!(received.ack.map(|a| a - acks[0]), Some(i64::from(tr.bytes)));
}
