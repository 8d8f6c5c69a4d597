//! UDP (RFC 768) over IPv4, with the iperf3-style stamp a constant-bit-rate source puts at the
//! start of each datagram's payload.
//!
//! The checksum covers the pseudo-header (RFC 768, the same as TCP's with protocol 17), the UDP
//! header and the payload; as for TCP, a payload that exists only as a length is zeros. A
//! computed checksum of 0 is sent as `0xffff` (RFC 768: 0 means "no checksum").

use std::fmt;
use std::net::Ipv4Addr;

use etherparse::{err, Ipv4HeaderSlice};

use super::{checksum, ipv4, Ipv4Repr, WireError, IPV4_HEADER_LEN};

/// IP protocol number of UDP.
pub const IPPROTO_UDP: u8 = 17;
/// Length of the UDP header.
pub const UDP_HEADER_LEN: usize = 8;
/// Length of the [`UdpStamp`] at the start of a CBR datagram's payload.
pub const UDP_STAMP_LEN: usize = 16;
/// Largest UDP payload in one IPv4 datagram (65 535 − 20 − 8).
pub const MAX_UDP_PAYLOAD: u32 = 65_507;

mod field {
    use std::ops::Range;
    pub const SRC_PORT: Range<usize> = 0..2;
    pub const DST_PORT: Range<usize> = 2..4;
    pub const LENGTH: Range<usize> = 4..6;
    pub const CHECKSUM: Range<usize> = 6..8;
}

/// A UDP header: ports and the payload length (the header's length field is `8 + payload_len`).
#[derive(Clone, Copy, Debug, Default, Eq, PartialEq)]
pub struct UdpRepr {
    /// Source port.
    pub src_port: u16,
    /// Destination port.
    pub dst_port: u16,
    /// Bytes of payload after the 8-byte header.
    pub payload_len: u32,
}

/// What a CBR source writes at the start of every datagram, in iperf3's layout with 64-bit
/// counters (`sec`, `usec`, `pcount`, big-endian), except that the second word holds
/// nanoseconds: the simulator's clock is in nanoseconds, and microseconds would make a
/// constant path show up to 1 µs of jitter.
#[derive(Clone, Copy, Debug, Default, Eq, PartialEq)]
pub struct UdpStamp {
    /// Send time, nanoseconds since the start of the run.
    pub sent_ns: u64,
    /// Sequence number of the datagram in its flow, from 0.
    pub seq: u64,
}

impl UdpStamp {
    /// The 16 stamp bytes: seconds (u32), nanoseconds (u32), sequence number (u64).
    pub fn to_bytes(self) -> [u8; UDP_STAMP_LEN] {
        let mut b = [0u8; UDP_STAMP_LEN];
        let secs = self.sent_ns / 1_000_000_000;
        b[0..4].copy_from_slice(&(secs as u32).to_be_bytes());
        b[4..8].copy_from_slice(&((self.sent_ns % 1_000_000_000) as u32).to_be_bytes());
        b[8..16].copy_from_slice(&self.seq.to_be_bytes());
        b
    }

    /// The stamp at the start of `payload`; `None` when it is shorter than 16 bytes.
    pub fn parse(payload: &[u8]) -> Option<Self> {
        let b = payload.get(..UDP_STAMP_LEN)?;
        let word = |r: std::ops::Range<usize>| {
            let mut w = [0u8; 4];
            w.copy_from_slice(&b[r]);
            u64::from(u32::from_be_bytes(w))
        };
        let mut seq = [0u8; 8];
        seq.copy_from_slice(&b[8..16]);
        Some(Self {
            sent_ns: word(0..4) * 1_000_000_000 + word(4..8),
            seq: u64::from_be_bytes(seq),
        })
    }
}

/// Write an IPv4 header, a UDP header and `stamp` (the first payload bytes) into `buf`, for a
/// datagram of `udp.payload_len` payload bytes whose rest is zeros, both checksums correct.
/// Returns the header bytes written (44). Panics if `udp.payload_len` is below 16 or above
/// [`MAX_UDP_PAYLOAD`], or `buf` is shorter than 44 bytes: the caller's bugs.
pub fn emit_ipv4_udp(ip: &Ipv4Repr, udp: &UdpRepr, stamp: &UdpStamp, buf: &mut [u8]) -> usize {
    assert!(
        (UDP_STAMP_LEN as u32..=MAX_UDP_PAYLOAD).contains(&udp.payload_len),
        "UDP payload of {} bytes",
        udp.payload_len
    );
    let udp_len = UDP_HEADER_LEN as u32 + udp.payload_len;
    // NOTE(unwrap-free): bounded by MAX_UDP_PAYLOAD above.
    let total_len = (IPV4_HEADER_LEN as u32 + udp_len) as u16;
    ip.emit_header(IPPROTO_UDP, total_len, buf);
    let end = IPV4_HEADER_LEN + UDP_HEADER_LEN + UDP_STAMP_LEN;
    let seg = &mut buf[IPV4_HEADER_LEN..end];
    seg[field::SRC_PORT].copy_from_slice(&udp.src_port.to_be_bytes());
    seg[field::DST_PORT].copy_from_slice(&udp.dst_port.to_be_bytes());
    seg[field::LENGTH].copy_from_slice(&(udp_len as u16).to_be_bytes());
    seg[field::CHECKSUM].fill(0);
    seg[UDP_HEADER_LEN..].copy_from_slice(&stamp.to_bytes());
    let pseudo = checksum::pseudo_header_ipv4(ip.src, ip.dst, IPPROTO_UDP, udp_len as u16);
    let check = match checksum::finish(checksum::sum(pseudo, seg)) {
        0 => 0xffff,
        c => c,
    };
    seg[field::CHECKSUM].copy_from_slice(&check.to_be_bytes());
    end
}

/// Write an IPv4 header and a UDP header for a datagram whose payload is `payload` (real bytes,
/// e.g. a QUIC packet) into `buf`, both checksums correct; returns the header bytes written
/// (28). Panics if `payload` is longer than [`MAX_UDP_PAYLOAD`] or `buf` shorter than 28 bytes:
/// the caller's bugs.
pub fn emit_ipv4_udp_for(
    ip: &Ipv4Repr,
    src_port: u16,
    dst_port: u16,
    payload: &[u8],
    buf: &mut [u8],
) -> usize {
    assert!(
        payload.len() <= MAX_UDP_PAYLOAD as usize,
        "UDP payload of {} bytes",
        payload.len()
    );
    let udp_len = (UDP_HEADER_LEN + payload.len()) as u16;
    ip.emit_header(IPPROTO_UDP, IPV4_HEADER_LEN as u16 + udp_len, buf);
    let end = IPV4_HEADER_LEN + UDP_HEADER_LEN;
    let seg = &mut buf[IPV4_HEADER_LEN..end];
    seg[field::SRC_PORT].copy_from_slice(&src_port.to_be_bytes());
    seg[field::DST_PORT].copy_from_slice(&dst_port.to_be_bytes());
    seg[field::LENGTH].copy_from_slice(&udp_len.to_be_bytes());
    seg[field::CHECKSUM].fill(0);
    let pseudo = checksum::pseudo_header_ipv4(ip.src, ip.dst, IPPROTO_UDP, udp_len);
    let check = match checksum::finish(checksum::sum(checksum::sum(pseudo, seg), payload)) {
        0 => 0xffff,
        c => c,
    };
    seg[field::CHECKSUM].copy_from_slice(&check.to_be_bytes());
    end
}

/// Parse a packet's IPv4 + UDP header and the stamp in its first 16 payload bytes (in the
/// header bytes after the UDP header, or in the real payload). Verifies both checksums (a UDP
/// checksum of 0 means none was sent and is accepted). `Unsupported("not UDP")` for other
/// protocols. Never panics.
pub fn parse_udp_packet(
    pkt: &crate::Packet,
) -> Result<(Ipv4Repr, UdpRepr, Option<UdpStamp>), WireError> {
    let header = pkt.header();
    let ip = Ipv4HeaderSlice::from_slice(header).map_err(|e| match e {
        err::ipv4::HeaderSliceError::Len(_) => WireError::Truncated,
        err::ipv4::HeaderSliceError::Content(_) => WireError::Unsupported("bad IPv4 header"),
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
    if ip.protocol().0 != IPPROTO_UDP {
        return Err(WireError::Unsupported("not UDP"));
    }
    let packet_len = header.len() as u64 + u64::from(pkt.payload_len);
    let total_len = u64::from(ip.total_len());
    if total_len > packet_len {
        return Err(WireError::Truncated);
    }
    if total_len < packet_len {
        return Err(WireError::Unsupported(
            "IPv4 total length shorter than the packet",
        ));
    }
    let seg = &header[IPV4_HEADER_LEN..];
    if seg.len() < UDP_HEADER_LEN && total_len >= (IPV4_HEADER_LEN + UDP_HEADER_LEN) as u64 {
        return Err(WireError::Unsupported(
            "UDP header split from the IPv4 header",
        ));
    }
    let seg_len = total_len - IPV4_HEADER_LEN as u64;
    if seg.len() < UDP_HEADER_LEN {
        return Err(WireError::Truncated);
    }
    let be16 = |r: std::ops::Range<usize>| u16::from_be_bytes([seg[r.start], seg[r.start + 1]]);
    if u64::from(be16(field::LENGTH)) != seg_len {
        return Err(WireError::Unsupported(
            "UDP length differs from the IPv4 length",
        ));
    }
    let (src, dst) = (ip.source_addr(), ip.destination_addr());
    if be16(field::CHECKSUM) != 0 {
        let pseudo = checksum::pseudo_header_ipv4(src, dst, IPPROTO_UDP, seg_len as u16);
        let mut acc = checksum::sum(pseudo, seg);
        if let Some(p) = pkt.payload() {
            acc = if seg.len() % 2 == 1 {
                checksum::sum_at_odd(acc, p)
            } else {
                checksum::sum(acc, p)
            };
        }
        if !checksum::is_valid(acc) {
            return Err(WireError::BadChecksum);
        }
    }
    let udp = UdpRepr {
        src_port: be16(field::SRC_PORT),
        dst_port: be16(field::DST_PORT),
        payload_len: (seg_len - UDP_HEADER_LEN as u64) as u32,
    };
    // The stamp: payload bytes in the header, then in the real payload.
    let in_header = &seg[UDP_HEADER_LEN..];
    let stamp = if in_header.len() >= UDP_STAMP_LEN {
        UdpStamp::parse(in_header)
    } else {
        let mut b = [0u8; UDP_STAMP_LEN];
        b[..in_header.len()].copy_from_slice(in_header);
        let rest = pkt.payload().unwrap_or(&[]);
        let need = UDP_STAMP_LEN - in_header.len();
        rest.get(..need).and_then(|r| {
            b[in_header.len()..].copy_from_slice(r);
            UdpStamp::parse(&b)
        })
    };
    let ip = Ipv4Repr {
        src,
        dst,
        protocol: IPPROTO_UDP,
        ttl: ip.ttl(),
        ident: ip.identification(),
        dscp_ecn: header[ipv4::field::DSCP_ECN],
        payload_len: seg_len as u32,
    };
    Ok((ip, udp, stamp))
}

/// An IPv4 + UDP header pair as one tcpdump line: `10.0.0.1.40001 > 10.0.1.1.5001: UDP, length 1470`.
#[derive(Clone, Copy, Debug)]
pub struct UdpIpv4Display<'a>(pub &'a Ipv4Repr, pub &'a UdpRepr);

impl fmt::Display for UdpIpv4Display<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (ip, udp) = (self.0, self.1);
        write!(
            f,
            "{}.{} > {}.{}: UDP, length {}",
            ip.src, udp.src_port, ip.dst, udp.dst_port, udp.payload_len
        )
    }
}

/// The IPv4 header of a UDP datagram as satpep's own sources build it (TTL 64, DF set).
pub fn ipv4_udp(src: Ipv4Addr, dst: Ipv4Addr, ident: u16) -> Ipv4Repr {
    Ipv4Repr {
        protocol: IPPROTO_UDP,
        ..Ipv4Repr::tcp(src, dst, ident)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Packet;
    use proptest::prelude::*;

    #[test]
    fn a_real_payload_datagram_parses_with_both_checksums() {
        let ip = ipv4_udp(Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 1, 1), 9);
        for len in [0usize, 1, 2, 17, 1452] {
            let payload: Vec<u8> = (0..len).map(|i| (i * 7 + 3) as u8).collect();
            let mut h = [0u8; 28];
            assert_eq!(emit_ipv4_udp_for(&ip, 4433, 50_000, &payload, &mut h), 28);
            let pkt = Packet::try_with_payload(&h, &payload).unwrap();
            let (_, udp, _) = parse_udp_packet(&pkt).unwrap();
            assert_eq!((udp.src_port, udp.dst_port), (4433, 50_000));
            assert_eq!(udp.payload_len as usize, len);
            if len > 0 {
                let mut bad = payload.clone();
                bad[len / 2] ^= 0x40;
                let pkt = Packet::try_with_payload(&h, &bad).unwrap();
                assert_eq!(parse_udp_packet(&pkt).err(), Some(WireError::BadChecksum));
            }
        }
    }

    fn datagram(payload_len: u32, stamp: UdpStamp) -> Packet {
        let ip = ipv4_udp(Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 1, 1), 7);
        let udp = UdpRepr {
            src_port: 40001,
            dst_port: 5001,
            payload_len,
        };
        Packet::build(payload_len - UDP_STAMP_LEN as u32, |b| {
            emit_ipv4_udp(&ip, &udp, &stamp, b)
        })
    }

    /// The whole header, byte for byte; both checksums computed independently (RFC 1071 over
    /// the bytes, with Python's `struct`): IPv4 0x25b9, UDP with its pseudo-header 0xb7f8.
    #[test]
    fn emits_header_and_stamp_byte_exact() {
        let p = datagram(
            16,
            UdpStamp {
                sent_ns: 2_500_000_000,
                seq: 42,
            },
        );
        let want: [u8; 44] = [
            0x45, 0, 0, 0x2c, 0, 7, 0x40, 0, 64, 17, 0x25, 0xb9, 10, 0, 0, 1, 10, 0, 1, 1, //
            0x9c, 0x41, 0x13, 0x89, 0, 24, 0xb7, 0xf8, //
            0, 0, 0, 2, 0x1d, 0xcd, 0x65, 0, 0, 0, 0, 0, 0, 0, 0, 42,
        ];
        assert_eq!(p.header(), &want[..]);
        let (ip, udp, stamp) = parse_udp_packet(&p).expect("valid");
        assert_eq!((ip.protocol, ip.payload_len), (IPPROTO_UDP, 24));
        assert_eq!(
            (udp.src_port, udp.dst_port, udp.payload_len),
            (40001, 5001, 16)
        );
        assert_eq!(stamp.map(|s| (s.sent_ns, s.seq)), Some((2_500_000_000, 42)));
        assert_eq!(
            UdpIpv4Display(&ip, &udp).to_string(),
            "10.0.0.1.40001 > 10.0.1.1.5001: UDP, length 16"
        );
    }

    #[test]
    fn refuses_tcp_truncation_and_corruption() {
        let p = datagram(1470, UdpStamp::default());
        assert!(parse_udp_packet(&p).is_ok());
        // A flipped payload-length word breaks the IPv4 checksum first.
        let mut bad = p.clone();
        bad.header_mut()[3] ^= 1;
        assert_eq!(parse_udp_packet(&bad), Err(WireError::BadChecksum));
        // A flipped stamp byte breaks the UDP checksum.
        let mut bad = p.clone();
        bad.header_mut()[40] ^= 0x80;
        assert_eq!(parse_udp_packet(&bad), Err(WireError::BadChecksum));
        // A shorter packet than the IPv4 length says.
        let mut short = p.clone();
        short.payload_len -= 1;
        assert_eq!(parse_udp_packet(&short), Err(WireError::Truncated));
        let mut tcp = [0u8; 40];
        let n = super::super::emit_ipv4_tcp(
            &Ipv4Repr::tcp(Ipv4Addr::LOCALHOST, Ipv4Addr::LOCALHOST, 0),
            &super::super::TcpRepr::default(),
            &mut tcp,
        );
        let tcp = Packet::new(&tcp[..n], 0);
        assert_eq!(
            parse_udp_packet(&tcp),
            Err(WireError::Unsupported("not UDP"))
        );
        // And the TCP parser refuses UDP.
        assert_eq!(
            super::super::parse_packet(&p).map(|_| ()),
            Err(WireError::Unsupported("not TCP"))
        );
    }

    /// Real payload bytes count in the checksum: the same datagram with its zeros made real
    /// still parses, and a non-zero real byte without a checksum update does not.
    #[test]
    fn real_payload_enters_the_checksum() {
        let p = datagram(100, UdpStamp { sent_ns: 1, seq: 1 });
        let mut real = p.clone();
        real.set_payload(&[0u8; 84]);
        assert!(parse_udp_packet(&real).is_ok());
        let mut data = [0u8; 84];
        data[5] = 1;
        real.set_payload(&data);
        assert_eq!(parse_udp_packet(&real), Err(WireError::BadChecksum));
    }

    proptest! {
        /// Any stamp and size round-trips, and the bytes on the wire sum to a valid checksum
        /// over the pseudo-header, checked independently of the parser.
        #[test]
        fn round_trip(sent_ns in 0u64..4_000_000_000_000_000_000, seq: u64,
                      len in 16u32..=MAX_UDP_PAYLOAD) {
            let stamp = UdpStamp { sent_ns, seq };
            let p = datagram(len, stamp);
            let (_, udp, got) = parse_udp_packet(&p).expect("valid");
            prop_assert_eq!(udp.payload_len, len);
            prop_assert_eq!(got, Some(stamp));
            let mut wire = Vec::new();
            p.write_wire(&mut wire);
            prop_assert_eq!(wire.len(), 28 + len as usize);
            let pseudo = checksum::pseudo_header_ipv4(
                Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 1, 1), 17, (len + 8) as u16);
            prop_assert!(checksum::is_valid(checksum::sum(pseudo, &wire[20..])));
        }
    }
}
