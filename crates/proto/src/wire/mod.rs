//! Wire formats: IPv4 and TCP headers as real bytes, with correct checksums.
//!
//! Two levels, as in smoltcp: `Repr` structs that the TCP model reads and writes, and in-place
//! helpers for mechanisms that rewrite a header (ACK filtering, compaction). Parsing uses the
//! `etherparse` crate; what is ours is the checksum over a payload that exists only as a length
//! (taken as zeros).

mod ipv4;
mod seq;
mod tcp;

pub use ipv4::Ipv4Repr;
pub use seq::SeqNumber;
pub use tcp::{SackBlocks, TcpFlags, TcpRepr};

/// Why header bytes could not be used. Network input never panics: it becomes one of these,
/// and the mechanism counts it.
#[derive(Clone, Copy, Debug, Eq, PartialEq, thiserror::Error)]
pub enum WireError {
    /// Fewer bytes than the header claims or needs.
    #[error("truncated header")]
    Truncated,
    /// A checksum does not match.
    #[error("bad checksum")]
    BadChecksum,
    /// Not IPv4, or IPv4 options/fragments we do not model.
    #[error("unsupported IP packet: {0}")]
    Unsupported(&'static str),
    /// A TCP option is malformed.
    #[error("bad TCP option: {0}")]
    BadOption(&'static str),
}

/// IP protocol number of TCP.
pub const IPPROTO_TCP: u8 = 6;
/// IP protocol number of IP-in-IP (RFC 2003).
pub const IPPROTO_IPIP: u8 = 4;

/// Write an IPv4 header followed by a TCP header (with options) into `buf`, with the IPv4 total
/// length covering `tcp.payload_len` bytes of (zero) payload and both checksums correct.
/// Returns the number of header bytes written. `buf` must hold at least 80 bytes.
pub fn emit_ipv4_tcp(ip: &Ipv4Repr, tcp: &TcpRepr, buf: &mut [u8]) -> usize {
    let _ = (ip, tcp, buf);
    todo!("wire helper")
}

/// Parse IPv4 + TCP header bytes of a packet whose payload is `payload_len` bytes of zeros
/// (as [`crate::Packet`] carries them). Verifies both checksums.
pub fn parse_ipv4_tcp(header: &[u8], payload_len: u32) -> Result<(Ipv4Repr, TcpRepr), WireError> {
    let _ = (header, payload_len);
    todo!("wire helper")
}
