//! The compacted ACK on the wire: IP-in-IP (RFC 2003, protocol 4) from the compactor to the
//! expander, the surviving ACK inside unchanged, and a 3-byte trailer after it.
//!
//! ```text
//! +------------------------------+  outer IPv4, 20 bytes, no options: protocol 4, DF,
//! | outer IPv4 header            |  total length = 20 + inner total length + 3,
//! +------------------------------+  src = compactor, dst = expander, TTL 64, TOS = inner TOS
//! | inner IPv4 + TCP header      |  the newest ACK exactly as the receiver sent it
//! | (inner total length bytes)   |  (pure ACK: no payload)
//! +------------------------------+
//! | count (1 byte)               |  ACKs deleted and compacted into this one, 1–255
//! | bytes (2 bytes, big endian)  |  bytes those ACKs acknowledged, count ≤ bytes ≤ 65 535
//! +------------------------------+
//! ```
//!
//! The expander recognises a trailer by length alone: the outer payload is 3 bytes longer than
//! the inner IPv4 total length. 0 bytes longer is a plain tunnelled packet; anything else is
//! malformed. The compactor never lets a survivor exceed 255 ACKs or 65 535 bytes: the next
//! deletion that would is not made, and that ACK is sent as it is (docs/ack-compaction.md).

use std::net::Ipv4Addr;

use crate::wire::IPPROTO_IPIP;
use crate::wire::{checksum, ipip};

/// Largest count a trailer holds.
pub const MAX_COUNT: u32 = 255;
/// Largest byte total a trailer holds.
pub const MAX_BYTES: u64 = 65_535;
/// Trailer length on the wire.
pub const TRAILER_LEN: usize = 3;
/// Outer header length.
pub const OUTER_LEN: usize = 20;

/// The information a compacted ACK carries about the ACKs deleted before it.
#[derive(Clone, Copy, Debug, Eq, PartialEq)]
pub struct Trailer {
    /// ACKs deleted, 1–255.
    pub count: u8,
    /// Bytes they acknowledged, at least `count`.
    pub bytes: u16,
}

/// What a tunnel packet holds.
#[derive(Clone, Copy, Debug, Eq, PartialEq)]
pub struct Tunnelled<'a> {
    /// Outer source address (the compactor).
    pub src: Ipv4Addr,
    /// Outer destination address.
    pub dst: Ipv4Addr,
    /// The inner datagram's header bytes (its payload follows as zeros).
    pub inner: &'a [u8],
    /// The trailer, if any.
    pub trailer: Option<Trailer>,
}

/// Why a tunnel packet was refused.
#[derive(Clone, Copy, Debug, Eq, PartialEq, thiserror::Error)]
pub enum TunnelError {
    /// Not an IPv4 header with protocol 4.
    #[error("not an IP-in-IP packet")]
    NotTunnel,
    /// Outer header truncated, with options, fragmented, or with a bad checksum or length.
    #[error("bad outer header: {0}")]
    BadOuter(&'static str),
    /// Inner header missing or its length disagrees with the outer one.
    #[error("bad inner datagram: {0}")]
    BadInner(&'static str),
    /// A trailer with a zero count, or fewer bytes than ACKs (cannot be stepped).
    #[error("forged trailer: {0}")]
    BadTrailer(&'static str),
}

/// Write outer header + `inner` + trailer into `out`; `None` if it does not fit in `out`.
pub fn encapsulate(
    inner: &[u8],
    trailer: Trailer,
    src: Ipv4Addr,
    dst: Ipv4Addr,
    ident: u16,
    out: &mut [u8],
) -> Option<usize> {
    let n = OUTER_LEN + inner.len() + TRAILER_LEN;
    if out.len() < n || inner.len() < 20 {
        return None;
    }
    let total = u16::try_from(n).ok()?;
    ipip::write_outer_header(out, total, inner[1], ident, src, dst);
    out[OUTER_LEN..OUTER_LEN + inner.len()].copy_from_slice(inner);
    let t = &mut out[OUTER_LEN + inner.len()..n];
    t[0] = trailer.count;
    t[1..3].copy_from_slice(&trailer.bytes.to_be_bytes());
    Some(n)
}

/// Parse a tunnel packet: `header` bytes followed by `payload_len` zero bytes. Never panics.
pub fn parse(header: &[u8], payload_len: u32) -> Result<Tunnelled<'_>, TunnelError> {
    if header.len() < OUTER_LEN || header[0] >> 4 != 4 || header[9] != IPPROTO_IPIP {
        return Err(TunnelError::NotTunnel);
    }
    if header[0] & 0x0f != 5 {
        return Err(TunnelError::BadOuter("options"));
    }
    if u16::from_be_bytes([header[6], header[7]]) & 0x3fff != 0 {
        return Err(TunnelError::BadOuter("fragment"));
    }
    if !checksum::is_valid(checksum::sum(0, &header[..OUTER_LEN])) {
        return Err(TunnelError::BadOuter("checksum"));
    }
    let outer_total = u64::from(u16::from_be_bytes([header[2], header[3]]));
    if outer_total != header.len() as u64 + u64::from(payload_len) {
        return Err(TunnelError::BadOuter("total length"));
    }
    let rest = &header[OUTER_LEN..];
    if rest.len() < 20 || rest[0] >> 4 != 4 {
        return Err(TunnelError::BadInner("no inner IPv4 header"));
    }
    let inner_total = u64::from(u16::from_be_bytes([rest[2], rest[3]]));
    let src = Ipv4Addr::new(header[12], header[13], header[14], header[15]);
    let dst = Ipv4Addr::new(header[16], header[17], header[18], header[19]);
    match (outer_total - OUTER_LEN as u64).checked_sub(inner_total) {
        Some(0) => Ok(Tunnelled {
            src,
            dst,
            inner: rest,
            trailer: None,
        }),
        Some(3) if payload_len == 0 => {
            let k = rest.len() - TRAILER_LEN;
            let (inner, t) = rest.split_at(k);
            let trailer = Trailer {
                count: t[0],
                bytes: u16::from_be_bytes([t[1], t[2]]),
            };
            if trailer.count == 0 {
                return Err(TunnelError::BadTrailer("zero count"));
            }
            if u32::from(trailer.bytes) < u32::from(trailer.count) {
                return Err(TunnelError::BadTrailer("fewer bytes than ACKs"));
            }
            Ok(Tunnelled {
                src,
                dst,
                inner,
                trailer: Some(trailer),
            })
        }
        _ => Err(TunnelError::BadInner(
            "inner length disagrees with the outer",
        )),
    }
}

/// The acknowledgement numbers the expander regenerates for a survivor acknowledging `ack`:
/// `count` values stepped evenly from `ack − bytes` up to (not including) `ack`, strictly
/// increasing because `bytes ≥ count`. With ACKs that each acknowledged the same amount (one
/// per segment) they are exactly the deleted ones.
pub fn stepped_acks(ack: u32, t: Trailer) -> impl Iterator<Item = u32> {
    let (n, b) = (u64::from(t.count), u64::from(t.bytes));
    (0..n).map(move |j| {
        let off = b - j * b / n; // b, …, > 0, strictly decreasing as b ≥ n
        ack.wrapping_sub(off as u32)
    })
}
