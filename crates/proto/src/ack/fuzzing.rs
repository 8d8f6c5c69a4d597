//! The body of the `ack_expander` fuzz target, public so that cargo-fuzz (nightly) and a stable
//! smoke test run the same checks, without a key and with one.

use std::net::Ipv4Addr;

use super::trailer::{self, Trailer};
use super::{AckExpander, AckExpanderConfig, Expansion, ExpansionLimit};
use crate::auth::{Sealer, TunnelKey};
use crate::node::{Node, Packet, PortId, MAX_HEADER};
use crate::time::Instant;
use crate::wire::{
    emit_ipv4_tcp, parse_ipv4_tcp, parse_packet, Ipv4Repr, SeqNumber, TcpRepr, IPPROTO_TCP,
};

/// The key of [`keyed_expander`]: 32 bytes of 0x5a.
pub const KEY: [u8; 32] = [0x5a; 32];

/// A keyed expander (default limits) accepting the compactors 192.168.3.1 (the structured
/// packets' source) and 10.0.2.1 (the corpus').
pub fn keyed_expander() -> AckExpander {
    AckExpander::new(&AckExpanderConfig {
        compactors: vec![Ipv4Addr::new(192, 168, 3, 1), Ipv4Addr::new(10, 0, 2, 1)],
        key: TunnelKey::from_bytes(&KEY).ok(),
        ..AckExpanderConfig::default()
    })
}

/// Feed `pkt` to `x`: how many packets it sent, and whether it verified one. Checked: never
/// more than the limit allows (one packet in, at most `max_regenerated + 1` out); a tunnel
/// packet (protocol 4 or 51) yields output only after a verified ICV; anything else passes
/// alone and unchanged.
fn keyed_feed(x: &mut AckExpander, pkt: Packet) -> (usize, bool) {
    let before = x.auth_stats().unwrap_or_default();
    x.handle_packet(Instant::ZERO, PortId(0), pkt.clone());
    let out: Vec<Packet> = std::iter::from_fn(|| x.poll_transmit(Instant::ZERO))
        .map(|t| t.pkt)
        .collect();
    let verified = x.auth_stats().unwrap_or_default().verified - before.verified;
    assert!(verified <= 1);
    let limit = AckExpanderConfig::default().limit();
    let n = out.len();
    assert!(
        n as u64 <= u64::from(limit.max_regenerated) + 1,
        "{n} ACKs from one packet"
    );
    let h = pkt.header();
    let tunnel = h.len() >= 20 && matches!(h[9], 4 | 51);
    if tunnel {
        assert!(n == 0 || verified == 1, "output without a verified ICV");
    } else {
        assert_eq!(n, 1);
        assert_eq!(out[0].header(), h, "a packet not for the expander changed");
    }
    (n, verified == 1)
}

/// Checks on arbitrary bytes, without a key and with one; panics only if an invariant is
/// broken.
///
/// 1. Raw: `data` (2 bytes of payload length, then header bytes) is a tunnel packet; whatever
///    the expander makes of it must satisfy [`check_output`].
/// 2. Structured: `data` picks an ACK, a trailer and a byte to corrupt in the encapsulated
///    packet; an uncorrupted packet must expand to exactly `count + 1` ACKs, a corrupted one must
///    be refused or satisfy [`check_output`].
/// 3. Keyed: the raw packet to [`keyed_expander`] (bounded output, only after a verified ICV);
///    the structured packet sealed with [`KEY`] (or, when `flip_at` is odd, another key), then
///    corrupted as in 2: uncorrupted with the right key it expands to
///    `limit.regenerated(trailer) + 1` ACKs once and to none when replayed; corrupted or with
///    the wrong key it produces none.
pub fn expander_input(data: &[u8]) {
    if let [hi, lo, header @ ..] = data {
        let header = &header[..header.len().min(MAX_HEADER)];
        let pkt = Packet::new(header, u32::from(u16::from_be_bytes([*hi, *lo])));
        keyed_feed(&mut keyed_expander(), pkt.clone());
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

    let right = flip_at % 2 == 0;
    let key = if right { KEY } else { [0xa5; 32] };
    let Ok(k) = TunnelKey::from_bytes(&key) else {
        return;
    };
    let Ok(mut sealed) = Sealer::new(&k, u32::from(count)).seal(Packet::new(&buf[..m], 0)) else {
        panic!("a compacted 40-byte ACK has room for the AH");
    };
    let mut x = keyed_expander();
    if flip != 0 {
        let at = usize::from(flip_at) % sealed.header_len();
        sealed.header_mut()[at] ^= flip;
    }
    let (first, opened) = keyed_feed(&mut x, sealed.clone());
    let (again, reopened) = keyed_feed(&mut x, sealed);
    assert!(!reopened, "a replay was verified");
    if flip == 0 && right {
        let limit = AckExpanderConfig::default().limit();
        assert_eq!(first, usize::from(limit.regenerated(tr)) + 1);
        assert_eq!(again, 0, "a replay expanded");
        assert_eq!(x.auth_stats().map(|a| a.replayed), Some(1));
    } else {
        // (A corrupted protocol byte makes it no tunnel packet: it passes, unexpanded.)
        assert!(!opened, "a forged or corrupted packet was verified");
        assert!(first <= 1 && again <= 1);
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
