//! IPv4 header (RFC 791), without options.
//!
//! Read before editing: RFC 791 §3.1 (header format), RFC 1071 (header checksum), RFC 6864 (the
//! identification field of atomic datagrams). satpep emits 20-byte headers with DF set and never
//! fragments; options and fragments are rejected on parse (`WireError::Unsupported`).

use std::fmt;
use std::net::Ipv4Addr;

use super::checksum;

/// Byte layout of the IPv4 header (RFC 791 §3.1), as offsets into the header.
pub(super) mod field {
    use std::ops::Range;

    /// Version (upper 4 bits) and IHL in 32-bit words (lower 4 bits).
    pub const VER_IHL: usize = 0;
    pub const DSCP_ECN: usize = 1;
    pub const TOTAL_LEN: Range<usize> = 2..4;
    pub const IDENT: Range<usize> = 4..6;
    /// Flags (reserved, DF, MF) and the fragment offset.
    pub const FLAGS_FRAG: Range<usize> = 6..8;
    pub const TTL: usize = 8;
    pub const PROTOCOL: usize = 9;
    pub const CHECKSUM: Range<usize> = 10..12;
    pub const SRC_ADDR: Range<usize> = 12..16;
    pub const DST_ADDR: Range<usize> = 16..20;
}

/// Length of the IPv4 header satpep writes and accepts (no options).
pub const IPV4_HEADER_LEN: usize = 20;
/// Don't Fragment, in the flags/fragment-offset word.
pub(super) const FLAG_DF: u16 = 0x4000;
/// More Fragments and the 13-bit offset: any of them set means a fragment.
pub(super) const FRAG_MASK: u16 = 0x3fff;

/// The IPv4 header fields satpep models. Options and fragmentation are not modelled.
#[derive(Clone, Copy, Debug, Eq, PartialEq)]
pub struct Ipv4Repr {
    /// Source address.
    pub src: Ipv4Addr,
    /// Destination address.
    pub dst: Ipv4Addr,
    /// Protocol number of what follows (6 = TCP, 4 = IP-in-IP).
    pub protocol: u8,
    /// Time to live.
    pub ttl: u8,
    /// Identification field.
    pub ident: u16,
    /// DSCP (upper 6 bits) and ECN (lower 2 bits).
    pub dscp_ecn: u8,
    /// Bytes after the IPv4 header (transport header + payload).
    pub payload_len: u32,
}

impl Ipv4Repr {
    /// The header of a TCP segment from `src` to `dst` as satpep's own TCP senders build it:
    /// TTL 64, no DSCP/ECN, identification `ident` (the length follows from the segment).
    pub fn tcp(src: Ipv4Addr, dst: Ipv4Addr, ident: u16) -> Self {
        Self {
            src,
            dst,
            protocol: super::IPPROTO_TCP,
            ttl: 64,
            ident,
            dscp_ecn: 0,
            payload_len: 0,
        }
    }

    /// Write the 20-byte header (DF set, checksum filled) with `protocol` and a total length of
    /// `total_len` (which the caller has checked fits in 16 bits).
    pub(super) fn emit_header(&self, protocol: u8, total_len: u16, buf: &mut [u8]) {
        let buf = &mut buf[..IPV4_HEADER_LEN];
        buf[field::VER_IHL] = 0x45;
        buf[field::DSCP_ECN] = self.dscp_ecn;
        buf[field::TOTAL_LEN].copy_from_slice(&total_len.to_be_bytes());
        buf[field::IDENT].copy_from_slice(&self.ident.to_be_bytes());
        buf[field::FLAGS_FRAG].copy_from_slice(&FLAG_DF.to_be_bytes());
        buf[field::TTL] = self.ttl;
        buf[field::PROTOCOL] = protocol;
        buf[field::CHECKSUM].fill(0);
        buf[field::SRC_ADDR].copy_from_slice(&self.src.octets());
        buf[field::DST_ADDR].copy_from_slice(&self.dst.octets());
        let check = checksum::finish(checksum::sum(0, buf));
        buf[field::CHECKSUM].copy_from_slice(&check.to_be_bytes());
    }
}

impl fmt::Display for Ipv4Repr {
    /// tcpdump-like: `IP 10.0.0.1 > 10.0.1.1: tos 0x0, ttl 64, id 0, proto 6, length 40`, where
    /// length is the whole datagram as in the IPv4 total length field.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "IP {} > {}: tos {:#x}, ttl {}, id {}, proto {}, length {}",
            self.src,
            self.dst,
            self.dscp_ecn,
            self.ttl,
            self.ident,
            self.protocol,
            u64::from(self.payload_len) + IPV4_HEADER_LEN as u64,
        )
    }
}
