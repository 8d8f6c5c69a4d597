//! IPv4 header (RFC 791), without options.

use std::net::Ipv4Addr;

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
