//! Wire formats: IPv4 and TCP headers as real bytes, with correct checksums.
//!
//! Two levels, as in smoltcp: `Repr` structs that the TCP model reads and writes
//! ([`emit_ipv4_tcp`], [`parse_ipv4_tcp`]), and the in-place [`TcpIpv4View`] for mechanisms that
//! read or rewrite a queued header (ACK filtering, compaction). Parsing uses the `etherparse`
//! crate's zero-copy header slices; what is ours is the [`checksum`] over a payload that exists
//! only as a length (taken as zeros), and the Linux option layout on emit.
//!
//! Every header displays in tcpdump form ([`TcpIpv4Display`], `Display` on the reprs), so traces
//! and test failures read like captures. The parser and the view are fuzzed (`fuzz/`, and a
//! stable smoke test running the same [`fuzzing`] body).

pub mod checksum;
#[cfg(any(test, feature = "fuzzing"))]
pub mod fuzzing;
pub mod igmp;
pub mod ipip;
mod ipv4;
mod seq;
mod tcp;
pub mod udp;
mod view;

use std::fmt;

use etherparse::{err, Ipv4HeaderSlice, TcpHeaderSlice};

pub use ipv4::{Ipv4Repr, IPV4_HEADER_LEN};
pub use seq::SeqNumber;
pub use tcp::{SackBlocks, TcpFlags, TcpRepr, TCP_HEADER_LEN, TCP_MAX_OPTIONS_LEN};
pub use udp::{
    emit_ipv4_udp, ipv4_udp, parse_udp_packet, UdpIpv4Display, UdpRepr, UdpStamp, IPPROTO_UDP,
    MAX_UDP_PAYLOAD, UDP_HEADER_LEN, UDP_STAMP_LEN,
};
pub use view::{add_wscale_option, AddOptionError, TcpIpv4View};

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

/// Longest header [`emit_ipv4_tcp`] writes: 20 bytes of IPv4, 20 of TCP, 40 of options.
pub const MAX_IPV4_TCP_HEADER_LEN: usize = IPV4_HEADER_LEN + TCP_HEADER_LEN + TCP_MAX_OPTIONS_LEN;

/// Write an IPv4 header followed by a TCP header (with options) into `buf`, with the IPv4 total
/// length covering `tcp.payload_len` bytes of (zero) payload and both checksums correct.
/// Returns the number of header bytes written (`20 + tcp.header_len()`).
///
/// The IPv4 header has no options and DF set; `ip.protocol` and `ip.payload_len` are not read
/// (the protocol written is 6 and the length follows from `tcp`). TCP options are laid out as
/// Linux lays them out (see the `tcp` module doc); SACK blocks beyond
/// [`TcpRepr::sack_capacity`] are dropped. Allocates nothing.
///
/// Panics if `buf` is shorter than the header (80 bytes always suffice) or if the datagram would
/// exceed 65 535 bytes: both are bugs in the caller, not network input.
pub fn emit_ipv4_tcp(ip: &Ipv4Repr, tcp: &TcpRepr, buf: &mut [u8]) -> usize {
    let tcp_len = tcp.emit_header(&mut buf[IPV4_HEADER_LEN..]);
    let segment_len = tcp_len as u64 + u64::from(tcp.payload_len);
    let total_len = u16::try_from(IPV4_HEADER_LEN as u64 + segment_len)
        .unwrap_or_else(|_| panic!("IPv4 datagram of {segment_len} TCP bytes exceeds 65535"));
    ip.emit_header(IPPROTO_TCP, total_len, buf);
    // Zero payload bytes add nothing to the sum; they count only in the pseudo-header length.
    let segment = &mut buf[IPV4_HEADER_LEN..IPV4_HEADER_LEN + tcp_len];
    let pseudo = checksum::pseudo_header_ipv4(
        ip.src,
        ip.dst,
        IPPROTO_TCP,
        total_len - IPV4_HEADER_LEN as u16,
    );
    let check = checksum::finish(checksum::sum(pseudo, segment));
    segment[tcp::field::CHECKSUM].copy_from_slice(&check.to_be_bytes());
    IPV4_HEADER_LEN + tcp_len
}

/// Parse IPv4 + TCP header bytes of a packet whose payload is `payload_len` bytes of zeros
/// (as [`crate::Packet`] carries them). Verifies both checksums.
///
/// The packet is `header` followed by `payload_len` zeros; its length must equal the IPv4 total
/// length (longer IPv4 claim: `Truncated`; shorter: `Unsupported`). Bytes of `header` after the
/// TCP header are taken as the start of the payload and counted in `TcpRepr::payload_len`.
///
/// Checks run in this order, so that a corrupted header byte is reported as `BadChecksum`
/// whenever the checksums can be located: IPv4 version and IHL, IPv4 header checksum,
/// fragment bits, protocol, total length, TCP checksum, TCP data offset, options. Options
/// satpep does not model are skipped; MSS, window scale and SACK-permitted are ignored unless SYN
/// is set. Never panics.
pub fn parse_ipv4_tcp(header: &[u8], payload_len: u32) -> Result<(Ipv4Repr, TcpRepr), WireError> {
    parse_with_payload(header, payload_len, None)
}

/// Parse a packet's IPv4 + TCP header as [`parse_ipv4_tcp`] does, with its real payload bytes
/// (when it has them) in the TCP checksum: what every mechanism calls on a packet it was handed.
pub fn parse_packet(pkt: &crate::Packet) -> Result<(Ipv4Repr, TcpRepr), WireError> {
    parse_with_payload(pkt.header(), pkt.payload_len, pkt.payload())
}

/// The packet for segment `seg` from `ip`, with real payload written by `fill` (it must write
/// exactly `seg.payload_len` bytes, e.g. from a TCP send buffer); both checksums cover the bytes.
/// `None` when `fill` wrote another length (the caller's bug, reported rather than sent).
pub fn emit_tcp_packet(
    ip: &Ipv4Repr,
    seg: &TcpRepr,
    fill: impl FnOnce(&mut Vec<u8>),
) -> Option<crate::Packet> {
    let mut pkt = crate::Packet::build(seg.payload_len, |b| emit_ipv4_tcp(ip, seg, b));
    pkt.fill_payload(fill);
    if pkt.payload_len != seg.payload_len {
        return None;
    }
    add_payload_to_tcp_checksum(&mut pkt);
    Some(pkt)
}

/// Fold a packet's real payload into its TCP checksum, which was computed with the payload taken
/// as zeros (as [`emit_ipv4_tcp`] does). The header must be one IPv4 header and a TCP header;
/// nothing happens to a packet without real payload or too short to hold a TCP checksum.
pub fn add_payload_to_tcp_checksum(pkt: &mut crate::Packet) {
    let h = pkt.header();
    let Some(&ver_ihl) = h.first() else { return };
    let ihl = usize::from(ver_ihl & 0x0f) * 4;
    let at = ihl + 16;
    let (Some(payload), Some(field)) = (pkt.payload(), h.get(at..at + 2)) else {
        return;
    };
    // The payload's words pair up the other way round after a header of odd length.
    let added = if (h.len() - ihl) % 2 == 1 {
        checksum::sum_at_odd(0, payload)
    } else {
        checksum::sum(0, payload)
    };
    let new = checksum::add(u16::from_be_bytes([field[0], field[1]]), added);
    pkt.header_mut()[at..at + 2].copy_from_slice(&new.to_be_bytes());
}

fn parse_with_payload(
    header: &[u8],
    payload_len: u32,
    payload: Option<&[u8]>,
) -> Result<(Ipv4Repr, TcpRepr), WireError> {
    let ip = Ipv4HeaderSlice::from_slice(header).map_err(|e| match e {
        err::ipv4::HeaderSliceError::Len(_) => WireError::Truncated,
        err::ipv4::HeaderSliceError::Content(err::ipv4::HeaderError::UnexpectedVersion {
            ..
        }) => WireError::Unsupported("not IPv4"),
        err::ipv4::HeaderSliceError::Content(
            err::ipv4::HeaderError::HeaderLengthSmallerThanHeader { .. },
        ) => WireError::Unsupported("IPv4 IHL below 5"),
    })?;
    if ip.slice().len() != IPV4_HEADER_LEN {
        return Err(WireError::Unsupported("IPv4 options"));
    }
    if !checksum::is_valid(checksum::sum(0, ip.slice())) {
        return Err(WireError::BadChecksum);
    }
    if ip.more_fragments() || ip.fragments_offset().value() != 0 {
        return Err(WireError::Unsupported("IPv4 fragment"));
    }
    if ip.protocol().0 != IPPROTO_TCP {
        return Err(WireError::Unsupported("not TCP"));
    }
    let total_len = u64::from(ip.total_len());
    let packet_len = header.len() as u64 + u64::from(payload_len);
    if total_len > packet_len {
        return Err(WireError::Truncated);
    }
    if total_len < packet_len {
        return Err(WireError::Unsupported(
            "IPv4 total length shorter than the packet",
        ));
    }
    // total_len ≥ header.len() ≥ 20 here, so these cannot underflow.
    let segment = &header[IPV4_HEADER_LEN..];
    let segment_len = ip.total_len() - IPV4_HEADER_LEN as u16;
    let (src, dst) = (ip.source_addr(), ip.destination_addr());
    let pseudo = checksum::pseudo_header_ipv4(src, dst, IPPROTO_TCP, segment_len);
    let mut acc = checksum::sum(pseudo, segment);
    if let Some(p) = payload {
        acc = if segment.len() % 2 == 1 {
            checksum::sum_at_odd(acc, p)
        } else {
            checksum::sum(acc, p)
        };
    }
    if !checksum::is_valid(acc) {
        return Err(WireError::BadChecksum);
    }
    let th = TcpHeaderSlice::from_slice(segment).map_err(|e| match e {
        err::tcp::HeaderSliceError::Len(_) => WireError::Truncated,
        err::tcp::HeaderSliceError::Content(err::tcp::HeaderError::DataOffsetTooSmall {
            ..
        }) => WireError::Unsupported("TCP data offset below 5"),
    })?;
    let mut flags = TcpFlags::default();
    for (set, flag) in [
        (th.fin(), TcpFlags::FIN),
        (th.syn(), TcpFlags::SYN),
        (th.rst(), TcpFlags::RST),
        (th.psh(), TcpFlags::PSH),
        (th.urg(), TcpFlags::URG),
        (th.ece(), TcpFlags::ECE),
        (th.cwr(), TcpFlags::CWR),
    ] {
        if set {
            flags.insert(flag);
        }
    }
    let mut tcp = TcpRepr {
        src_port: th.source_port(),
        dst_port: th.destination_port(),
        seq: SeqNumber(th.sequence_number()),
        ack: th.ack().then(|| SeqNumber(th.acknowledgment_number())),
        flags,
        window: th.window_size(),
        urgent: th.urgent_pointer(),
        payload_len: u32::from(segment_len) - th.slice().len() as u32,
        ..TcpRepr::default()
    };
    tcp.parse_options(th.options())?;
    let ip = Ipv4Repr {
        src,
        dst,
        protocol: IPPROTO_TCP,
        ttl: ip.ttl(),
        ident: ip.identification(),
        dscp_ecn: header[ipv4::field::DSCP_ECN],
        payload_len: u32::from(segment_len),
    };
    Ok((ip, tcp))
}

/// An IPv4 + TCP header pair that displays as one tcpdump line:
/// `10.0.0.1.5001 > 10.0.1.1.80: Flags [S.], seq 1000, ack 2000, win 65535, options [...], length 0`.
#[derive(Clone, Copy, Debug)]
pub struct TcpIpv4Display<'a>(pub &'a Ipv4Repr, pub &'a TcpRepr);

impl fmt::Display for TcpIpv4Display<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (ip, tcp) = (self.0, self.1);
        write!(
            f,
            "{}.{} > {}.{}: ",
            ip.src, tcp.src_port, ip.dst, tcp.dst_port
        )?;
        tcp.fmt_after_ports(f)
    }
}

#[cfg(test)]
mod tests;
