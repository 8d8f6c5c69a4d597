//! IGMP messages (RFC 2236, version 2) as real bytes, for the multicast model.
//!
//! Read before editing: RFC 2236 §2 (the 8-byte message: type, max response time in tenths of
//! a second, checksum over the message, group address), §2.1 (types 0x11, 0x16, 0x17, and 0x12
//! for version 1 reports), §9 (reports and leaves carry TTL 1 and the IP Router Alert option of
//! RFC 2113, so a router looks at them without being their destination); RFC 3376 §4.2 (the
//! version 3 report and its group records, which Linux hosts send by default).
//!
//! Every message satpep sends is a 24-byte IPv4 header (with Router Alert) and the 8-byte
//! message, all in the packet's header bytes. The parser takes any IGMP packet a host might
//! send: an IPv4 header with or without options, the message in the header bytes or (from a
//! real interface) in the payload, version 1, 2 or 3 reports.

use std::net::Ipv4Addr;

use super::checksum;
use super::WireError;
use crate::{Duration, Packet};

/// IP protocol number of IGMP.
pub const IPPROTO_IGMP: u8 = 2;
/// All systems on this subnet: general queries go here.
pub const ALL_SYSTEMS: Ipv4Addr = Ipv4Addr::new(224, 0, 0, 1);
/// All routers on this subnet: leaves go here.
pub const ALL_ROUTERS: Ipv4Addr = Ipv4Addr::new(224, 0, 0, 2);
/// Where version 3 reports go (RFC 3376 §4.2.14).
pub const ALL_IGMPV3_ROUTERS: Ipv4Addr = Ipv4Addr::new(224, 0, 0, 22);

const TYPE_QUERY: u8 = 0x11;
const TYPE_V1_REPORT: u8 = 0x12;
const TYPE_V2_REPORT: u8 = 0x16;
const TYPE_LEAVE: u8 = 0x17;
const TYPE_V3_REPORT: u8 = 0x22;
/// IPv4 option Router Alert (RFC 2113): type 148, length 4, value 0 ("examine packet").
const ROUTER_ALERT: [u8; 4] = [0x94, 0x04, 0x00, 0x00];
/// Bytes of every message satpep sends: IPv4 header with Router Alert, then the message.
pub const IGMP_PACKET_LEN: usize = 24 + 8;

/// What an IGMP message says, as far as any-source multicast needs.
#[derive(Clone, Copy, Debug, Eq, PartialEq)]
pub enum IgmpMessage {
    /// Membership Query: general when `group` is unspecified (0.0.0.0), else group-specific.
    /// Members answer within `max_response`.
    Query {
        /// The group asked about, or 0.0.0.0 for every group.
        group: Ipv4Addr,
        /// Longest delay a member may wait before answering (a tenth of a second resolution).
        max_response: Duration,
    },
    /// Membership Report: a member of `group` is on this link (version 1, 2, or a version 3
    /// record that joins).
    Report {
        /// The group.
        group: Ipv4Addr,
    },
    /// Leave Group (or a version 3 record that leaves): the sender left `group`.
    Leave {
        /// The group.
        group: Ipv4Addr,
    },
}

/// The 8 message bytes of `msg` with their checksum.
pub fn message_bytes(msg: &IgmpMessage) -> [u8; 8] {
    let (kind, code, group) = match *msg {
        IgmpMessage::Query {
            group,
            max_response,
        } => {
            let tenths = (max_response.as_nanos() / 100_000_000).min(255) as u8;
            (TYPE_QUERY, tenths, group)
        }
        IgmpMessage::Report { group } => (TYPE_V2_REPORT, 0, group),
        IgmpMessage::Leave { group } => (TYPE_LEAVE, 0, group),
    };
    let mut m = [0u8; 8];
    m[0] = kind;
    m[1] = code;
    m[4..8].copy_from_slice(&group.octets());
    let check = checksum::finish(checksum::sum(0, &m));
    m[2..4].copy_from_slice(&check.to_be_bytes());
    m
}

/// An IGMP packet from `src` to `dst` (TTL 1, Router Alert, DSCP CS6 as Linux sends them), its
/// 32 bytes all header.
pub fn emit_igmp(src: Ipv4Addr, dst: Ipv4Addr, ident: u16, msg: &IgmpMessage) -> Packet {
    let mut h = [0u8; IGMP_PACKET_LEN];
    h[0] = 0x46; // version 4, IHL 6 (the Router Alert option)
    h[1] = 0xc0;
    h[2..4].copy_from_slice(&(IGMP_PACKET_LEN as u16).to_be_bytes());
    h[4..6].copy_from_slice(&ident.to_be_bytes());
    h[6] = 0x40; // DF
    h[8] = 1;
    h[9] = IPPROTO_IGMP;
    h[12..16].copy_from_slice(&src.octets());
    h[16..20].copy_from_slice(&dst.octets());
    h[20..24].copy_from_slice(&ROUTER_ALERT);
    let check = checksum::finish(checksum::sum(0, &h[..24]));
    h[10..12].copy_from_slice(&check.to_be_bytes());
    h[24..].copy_from_slice(&message_bytes(msg));
    Packet::new(&h, 0)
}

/// Whether `addr` is an IPv4 multicast (class D) address, 224.0.0.0/4.
pub fn is_multicast(addr: Ipv4Addr) -> bool {
    addr.octets()[0] & 0xf0 == 0xe0
}

/// Whether `addr` is in 224.0.0.0/24, the local network control block, which routers never
/// forward (RFC 5771 §4).
pub fn is_link_local_multicast(addr: Ipv4Addr) -> bool {
    let o = addr.octets();
    o[0] == 224 && o[1] == 0 && o[2] == 0
}

/// A parsed IGMP packet: its IPv4 source and destination and what it says. A version 3 report
/// may carry several records; the parser returns them in order (at most [`MAX_RECORDS`]).
#[derive(Clone, Debug, Eq, PartialEq)]
pub struct IgmpPacket {
    /// IPv4 source.
    pub src: Ipv4Addr,
    /// IPv4 destination.
    pub dst: Ipv4Addr,
    /// The messages (one, except for version 3 reports).
    pub messages: Vec<IgmpMessage>,
}

/// Most group records of one version 3 report that are read (the rest are ignored).
pub const MAX_RECORDS: usize = 64;

/// The IPv4 destination of a packet whose header holds at least 20 bytes.
pub fn destination(header: &[u8]) -> Option<Ipv4Addr> {
    let d = header.get(16..20)?;
    Some(Ipv4Addr::new(d[0], d[1], d[2], d[3]))
}

/// Parse an IGMP packet: IPv4 header (options allowed, checksum checked, no fragments), then the
/// IGMP message, from the header bytes and then the payload. Network input: every failure is
/// an error, never a panic.
pub fn parse_igmp(pkt: &Packet) -> Result<IgmpPacket, WireError> {
    let h = pkt.header();
    if h.len() < 20 {
        return Err(WireError::Truncated);
    }
    if h[0] >> 4 != 4 {
        return Err(WireError::Unsupported("not IPv4"));
    }
    let ihl = usize::from(h[0] & 0x0f) * 4;
    if ihl < 20 || h.len() < ihl {
        return Err(WireError::Truncated);
    }
    if !checksum::is_valid(checksum::sum(0, &h[..ihl])) {
        return Err(WireError::BadChecksum);
    }
    if h[9] != IPPROTO_IGMP {
        return Err(WireError::Unsupported("not IGMP"));
    }
    if u16::from_be_bytes([h[6], h[7]]) & 0x3fff != 0 {
        return Err(WireError::Unsupported("fragment"));
    }
    let total = usize::from(u16::from_be_bytes([h[2], h[3]]));
    // The message: header bytes after the IP header, then the real payload if any.
    let mut msg: Vec<u8> = h[ihl..].to_vec();
    msg.extend_from_slice(pkt.payload().unwrap_or_default());
    let len = total
        .checked_sub(ihl)
        .filter(|&n| n >= 8 && n <= msg.len())
        .ok_or(WireError::Truncated)?;
    let msg = &msg[..len];
    if !checksum::is_valid(checksum::sum(0, msg)) {
        return Err(WireError::BadChecksum);
    }
    let group = Ipv4Addr::new(msg[4], msg[5], msg[6], msg[7]);
    let messages = match msg[0] {
        TYPE_QUERY => {
            // A version 3 query (longer than 8 bytes) codes its max response time in a
            // floating-point form above 128 (RFC 3376 §4.1.1); below that both read the same.
            let code = msg[1];
            let tenths = if len > 8 && code >= 128 {
                let mant = u64::from(code & 0x0f);
                let exp = u32::from((code >> 4) & 0x07);
                (mant | 0x10) << (exp + 3)
            } else {
                u64::from(code)
            };
            vec![IgmpMessage::Query {
                group,
                max_response: Duration::from_millis(tenths * 100),
            }]
        }
        TYPE_V1_REPORT | TYPE_V2_REPORT => vec![IgmpMessage::Report { group }],
        TYPE_LEAVE => vec![IgmpMessage::Leave { group }],
        TYPE_V3_REPORT => parse_v3_records(msg)?,
        _ => return Err(WireError::Unsupported("IGMP type")),
    };
    Ok(IgmpPacket {
        src: Ipv4Addr::new(h[12], h[13], h[14], h[15]),
        dst: Ipv4Addr::new(h[16], h[17], h[18], h[19]),
        messages,
    })
}

/// Version 3 group records (RFC 3376 §4.2.4) read as any-source joins and leaves: a record
/// whose filter excludes nothing joins (MODE_IS_EXCLUDE, CHANGE_TO_EXCLUDE_MODE with no
/// sources); one that includes nothing leaves (CHANGE_TO_INCLUDE_MODE with no sources).
/// Source-specific records are not modelled and are skipped.
fn parse_v3_records(msg: &[u8]) -> Result<Vec<IgmpMessage>, WireError> {
    let count = usize::from(u16::from_be_bytes([msg[6], msg[7]]));
    let mut out = Vec::new();
    let mut at = 8;
    for _ in 0..count.min(MAX_RECORDS) {
        let rec = msg.get(at..at + 8).ok_or(WireError::Truncated)?;
        let (kind, aux_words) = (rec[0], usize::from(rec[1]));
        let sources = usize::from(u16::from_be_bytes([rec[2], rec[3]]));
        let group = Ipv4Addr::new(rec[4], rec[5], rec[6], rec[7]);
        let next = at + 8 + sources * 4 + aux_words * 4;
        if next > msg.len() {
            return Err(WireError::Truncated);
        }
        match (kind, sources) {
            (2 | 4, 0) => out.push(IgmpMessage::Report { group }),
            (1 | 3, 0) => out.push(IgmpMessage::Leave { group }),
            _ => {}
        }
        at = next;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const HOST: Ipv4Addr = Ipv4Addr::new(10, 0, 3, 1);
    const GROUP: Ipv4Addr = Ipv4Addr::new(239, 1, 2, 3);

    /// A version 2 report, byte for byte as Linux sends one (`igmp_send_report`: TOS 0xc0, DF,
    /// TTL 1, Router Alert); both checksums worked out by hand from RFC 1071.
    #[test]
    fn report_bytes_are_exact() {
        let p = emit_igmp(HOST, GROUP, 7, &IgmpMessage::Report { group: GROUP });
        // IP words: 46c0 0020 0007 4000 0102 .... 0a00 0301 ef01 0203 9404 0000 sum to 0x219f2,
        // folded 0x19f4, complemented 0xe60b. Message: 1600 .... ef01 0203 → 0x0705 → 0xf8fa.
        #[rustfmt::skip]
        let want = [
            0x46, 0xc0, 0x00, 0x20, 0x00, 0x07, 0x40, 0x00, 0x01, 0x02, 0xe6, 0x0b,
            10, 0, 3, 1, 239, 1, 2, 3, 0x94, 0x04, 0x00, 0x00,
            0x16, 0x00, 0xf8, 0xfa, 239, 1, 2, 3,
        ];
        assert_eq!(p.header(), &want[..]);
        assert_eq!(p.payload_len, 0);
    }

    /// A report without Router Alert (RFC 2236 §2 lets routers accept it), read off a wire
    /// with the bare 20-byte IP header as the header and the message as real payload.
    #[test]
    fn a_bare_twenty_byte_header_with_the_message_as_payload_parses() {
        let mut ip = [0u8; 20];
        ip[0] = 0x45;
        ip[2..4].copy_from_slice(&28u16.to_be_bytes());
        ip[8] = 1;
        ip[9] = IPPROTO_IGMP;
        ip[12..16].copy_from_slice(&HOST.octets());
        ip[16..20].copy_from_slice(&GROUP.octets());
        let check = checksum::finish(checksum::sum(0, &ip));
        ip[10..12].copy_from_slice(&check.to_be_bytes());
        let msg = IgmpMessage::Report { group: GROUP };
        let wire = [&ip[..], &message_bytes(&msg)[..]].concat();
        let p = Packet::from_wire(&wire, 20).expect("fits");
        assert_eq!(p.header().len(), 20);
        assert_eq!(parse_igmp(&p).expect("parses").messages, vec![msg]);
        let short = Packet::from_wire(&wire[..19], 19).expect("fits");
        assert_eq!(parse_igmp(&short), Err(WireError::Truncated));
    }

    #[test]
    fn every_message_round_trips() {
        for msg in [
            IgmpMessage::Report { group: GROUP },
            IgmpMessage::Leave { group: GROUP },
            IgmpMessage::Query {
                group: Ipv4Addr::UNSPECIFIED,
                max_response: Duration::from_secs(10),
            },
            IgmpMessage::Query {
                group: GROUP,
                max_response: Duration::from_millis(1000),
            },
        ] {
            let p = emit_igmp(HOST, ALL_ROUTERS, 1, &msg);
            let got = parse_igmp(&p).expect("parses");
            assert_eq!((got.src, got.dst), (HOST, ALL_ROUTERS));
            assert_eq!(got.messages, vec![msg]);
        }
    }

    #[test]
    fn max_response_codes_in_tenths_and_saturates() {
        let q = |d| {
            message_bytes(&IgmpMessage::Query {
                group: GROUP,
                max_response: d,
            })[1]
        };
        assert_eq!(q(Duration::from_secs(10)), 100);
        assert_eq!(q(Duration::from_millis(1050)), 10);
        assert_eq!(q(Duration::from_secs(60)), 255);
    }

    /// An IGMP message `m` (checksum filled in here) behind a 24-byte IP header to `dst`.
    fn wrapped(mut m: Vec<u8>, dst: Ipv4Addr) -> Packet {
        let check = checksum::finish(checksum::sum(0, &m));
        m[2..4].copy_from_slice(&check.to_be_bytes());
        let mut h = vec![0x46, 0xc0, 0, 0, 0, 1, 0x40, 0, 1, 2, 0, 0];
        h.extend_from_slice(&HOST.octets());
        h.extend_from_slice(&dst.octets());
        h.extend_from_slice(&ROUTER_ALERT);
        let total = (h.len() + m.len()) as u16;
        h[2..4].copy_from_slice(&total.to_be_bytes());
        let c = checksum::finish(checksum::sum(0, &h));
        h[10..12].copy_from_slice(&c.to_be_bytes());
        Packet::try_with_payload(&h, &m).expect("fits")
    }

    /// RFC 3376 §4.1.1: a version 3 query's Max Resp Code of 128 and above is floating point,
    /// (mant | 0x10) << (exp + 3) tenths; below 128, and in any 8-byte (version 2) query, it
    /// is tenths as is.
    #[test]
    fn v3_query_max_response_codes_are_floating_point_above_128() {
        let mrt = |code: u8, v3: bool| {
            let mut m = vec![0x11, code, 0, 0, 0, 0, 0, 0];
            if v3 {
                m.extend_from_slice(&[0, 125, 0, 0]);
            }
            match parse_igmp(&wrapped(m, ALL_SYSTEMS))
                .expect("parses")
                .messages[..]
            {
                [IgmpMessage::Query { max_response, .. }] => max_response,
                ref other => panic!("{other:?}"),
            }
        };
        // 0x80: mant 0, exp 0: 16 << 3 = 128 tenths.
        assert_eq!(mrt(0x80, true), Duration::from_millis(12_800));
        // 0x9a: mant 10, exp 1: 26 << 4 = 416 tenths.
        assert_eq!(mrt(0x9a, true), Duration::from_millis(41_600));
        // 0xff: mant 15, exp 7: 31 << 10 = 31 744 tenths.
        assert_eq!(mrt(0xff, true), Duration::from_millis(3_174_400));
        assert_eq!(mrt(0x7f, true), Duration::from_millis(12_700));
        assert_eq!(mrt(200, false), Duration::from_millis(20_000));
    }

    /// A record's length counts its sources and its auxiliary words (RFC 3376 §4.2.4): the
    /// join after a source-specific record with two sources and one auxiliary word is read at
    /// the right place, and a count that runs past the end is refused.
    #[test]
    fn v3_records_skip_sources_and_auxiliary_data() {
        let mut m = vec![0x22, 0, 0, 0, 0, 0, 0, 2];
        m.extend_from_slice(&[1, 1, 0, 2, 239, 7, 7, 7]);
        m.extend_from_slice(&[10, 0, 0, 1, 10, 0, 0, 2, 0xaa, 0xbb, 0xcc, 0xdd]);
        m.extend_from_slice(&[4, 0, 0, 0, 239, 1, 2, 3]);
        let got = parse_igmp(&wrapped(m.clone(), ALL_IGMPV3_ROUTERS)).expect("parses");
        assert_eq!(got.messages, vec![IgmpMessage::Report { group: GROUP }]);
        m[9] = 2; // two auxiliary words: the second record is now short
        assert_eq!(
            parse_igmp(&wrapped(m, ALL_IGMPV3_ROUTERS)),
            Err(WireError::Truncated)
        );
    }

    /// A version 3 report as Linux sends on join and leave (RFC 3376 §4.2): records of type 4
    /// (CHANGE_TO_EXCLUDE, no sources) join, type 3 (CHANGE_TO_INCLUDE, no sources) leave; a
    /// source-specific record is skipped.
    #[test]
    fn v3_records_read_as_joins_and_leaves() {
        let mut m = vec![0x22, 0, 0, 0, 0, 0, 0, 3];
        m.extend_from_slice(&[4, 0, 0, 0, 239, 1, 2, 3]);
        m.extend_from_slice(&[3, 0, 0, 0, 239, 9, 9, 9]);
        m.extend_from_slice(&[1, 0, 0, 1, 239, 7, 7, 7, 10, 0, 0, 1]);
        let check = checksum::finish(checksum::sum(0, &m));
        m[2..4].copy_from_slice(&check.to_be_bytes());
        let mut h = vec![0x46, 0xc0, 0, 0, 0, 1, 0x40, 0, 1, 2, 0, 0];
        h.extend_from_slice(&HOST.octets());
        h.extend_from_slice(&ALL_IGMPV3_ROUTERS.octets());
        h.extend_from_slice(&ROUTER_ALERT);
        let total = (h.len() + m.len()) as u16;
        h[2..4].copy_from_slice(&total.to_be_bytes());
        let c = checksum::finish(checksum::sum(0, &h));
        h[10..12].copy_from_slice(&c.to_be_bytes());
        // From a real interface the message is payload.
        let p = Packet::try_with_payload(&h, &m).expect("fits");
        let got = parse_igmp(&p).expect("parses");
        assert_eq!(
            got.messages,
            vec![
                IgmpMessage::Report { group: GROUP },
                IgmpMessage::Leave {
                    group: Ipv4Addr::new(239, 9, 9, 9)
                }
            ]
        );
        // One record claims a source that is not there.
        let mut short = m.clone();
        short[7] = 4;
        assert_eq!(
            parse_igmp(&Packet::try_with_payload(&h, &short).expect("fits")),
            Err(WireError::BadChecksum)
        );
    }

    #[test]
    fn broken_packets_are_refused() {
        let good = emit_igmp(HOST, GROUP, 1, &IgmpMessage::Report { group: GROUP });
        let with = |i: usize, v: u8| {
            let mut h = good.header().to_vec();
            h[i] = v;
            Packet::new(&h, 0)
        };
        assert_eq!(parse_igmp(&with(25, 9)), Err(WireError::BadChecksum));
        assert_eq!(parse_igmp(&with(15, 9)), Err(WireError::BadChecksum));
        assert_eq!(
            parse_igmp(&Packet::new(&good.header()[..30], 0)),
            Err(WireError::Truncated)
        );
        assert_eq!(
            parse_igmp(&Packet::new(&good.header()[..12], 0)),
            Err(WireError::Truncated)
        );
    }

    #[test]
    fn multicast_ranges() {
        assert!(is_multicast(GROUP) && is_multicast(ALL_SYSTEMS));
        assert!(!is_multicast(Ipv4Addr::new(240, 0, 0, 1)));
        assert!(!is_multicast(Ipv4Addr::new(223, 255, 255, 255)));
        assert!(is_link_local_multicast(ALL_ROUTERS));
        assert!(!is_link_local_multicast(Ipv4Addr::new(224, 0, 1, 1)));
    }

    proptest! {
        /// Arbitrary header and payload bytes never panic the parser, and whatever parses has
        /// a valid IPv4 header checksum and at most `MAX_RECORDS` messages.
        #[test]
        fn arbitrary_bytes_never_panic(
            header in proptest::collection::vec(any::<u8>(), 0..60),
            payload in proptest::collection::vec(any::<u8>(), 0..600),
        ) {
            if let Some(p) = Packet::try_with_payload(&header, &payload) {
                if let Ok(got) = parse_igmp(&p) {
                    let ihl = usize::from(header[0] & 0x0f) * 4;
                    prop_assert!(checksum::is_valid(checksum::sum(0, &header[..ihl])));
                    prop_assert!(got.messages.len() <= MAX_RECORDS);
                }
            }
        }

        /// Any single bit flipped in an emitted message is caught by a checksum (or makes the
        /// packet something else), never read as the same message about another group.
        #[test]
        fn one_flipped_bit_is_never_a_different_group(bit in 0usize..256) {
            let good = emit_igmp(HOST, GROUP, 3, &IgmpMessage::Report { group: GROUP });
            let mut h = good.header().to_vec();
            h[bit / 8] ^= 1 << (bit % 8);
            if let Ok(got) = parse_igmp(&Packet::new(&h, 0)) {
                for m in got.messages {
                    let other = matches!(m, IgmpMessage::Report { group } if group != GROUP);
                    prop_assert!(!other, "read as {:?}", m);
                }
            }
        }
    }
}
