//! virtio_net_hdr parsing, software segmentation and coalescing, byte by byte. Checksums are
//! checked with [`naive_sum`], written here from RFC 1071 independently of the crate's.

use proptest::prelude::*;

use super::*;

/// RFC 1071 §4.1, sixteen bits at a time, carries folded at the end.
fn naive_sum(parts: &[&[u8]]) -> u16 {
    let bytes: Vec<u8> = parts.concat();
    let mut acc: u32 = 0;
    for pair in bytes.chunks(2) {
        let hi = u32::from(pair[0]) << 8;
        let lo = pair.get(1).map_or(0, |&b| u32::from(b));
        acc += hi | lo;
    }
    while acc > 0xffff {
        acc = (acc & 0xffff) + (acc >> 16);
    }
    acc as u16
}

/// Whether the IPv4 header checksum and the TCP checksum (with the pseudo-header) of `p` are
/// valid.
fn checksums_ok(p: &[u8]) -> (bool, bool) {
    let ihl = usize::from(p[0] & 0xf) * 4;
    let tcp_len = (p.len() - ihl) as u16;
    let pseudo = [&p[12..20], &[0, 6], &tcp_len.to_be_bytes()[..]].concat();
    (
        naive_sum(&[&p[..ihl]]) == 0xffff,
        naive_sum(&[&pseudo, &p[ihl..]]) == 0xffff,
    )
}

/// An IPv4 TCP packet 10.0.0.1:5001 → 10.0.1.1:80 with id 0x1234, seq `seq`, flags `flags`,
/// the timestamp option, and `payload`; checksums left zero.
fn tcp_packet(seq: u32, flags: u8, payload: &[u8]) -> Vec<u8> {
    let total = (20 + 32 + payload.len()) as u16;
    let mut p = vec![
        0x45, 0x00, 0, 0, 0x12, 0x34, 0x40, 0x00, 64, 6, 0, 0, 10, 0, 0, 1, 10, 0, 1, 1,
    ];
    p[2..4].copy_from_slice(&total.to_be_bytes());
    p.extend_from_slice(&[0x13, 0x89, 0x00, 0x50]);
    p.extend_from_slice(&seq.to_be_bytes());
    p.extend_from_slice(&0xabcd_0001u32.to_be_bytes()); // ack
    p.extend_from_slice(&[0x80, flags, 0x01, 0xf5, 0, 0, 0, 0]);
    p.extend_from_slice(&[1, 1, 8, 10, 0, 0, 0, 7, 0, 0, 0, 9]); // NOP NOP TS
    p.extend_from_slice(payload);
    p
}

/// `p` with valid checksums, as on a wire.
fn with_checksums(mut p: Vec<u8>) -> Vec<u8> {
    p[10..12].copy_from_slice(&[0, 0]);
    let ip = !naive_sum(&[&p[..20]]);
    p[10..12].copy_from_slice(&ip.to_be_bytes());
    p[36..38].copy_from_slice(&[0, 0]);
    let tcp_len = (p.len() - 20) as u16;
    let pseudo = [&p[12..20], &[0, 6], &tcp_len.to_be_bytes()[..]].concat();
    let t = !naive_sum(&[&pseudo, &p[20..]]);
    p[36..38].copy_from_slice(&t.to_be_bytes());
    p
}

/// `p` as the kernel hands a CHECKSUM_PARTIAL packet over: the TCP checksum field holds the
/// folded pseudo-header sum.
fn with_partial_checksum(mut p: Vec<u8>) -> Vec<u8> {
    let tcp_len = (p.len() - 20) as u16;
    let pseudo = [&p[12..20], &[0, 6], &tcp_len.to_be_bytes()[..]].concat();
    let partial = naive_sum(&[&pseudo]);
    p[36..38].copy_from_slice(&partial.to_be_bytes());
    p
}

fn tso_hdr(gso_size: u16) -> VirtioNetHdr {
    VirtioNetHdr {
        flags: F_NEEDS_CSUM,
        gso_type: GSO_TCPV4,
        hdr_len: 52,
        gso_size,
        csum_start: 20,
        csum_offset: 16,
    }
}

fn collect(hdr: &VirtioNetHdr, pkt: &mut [u8]) -> Result<Vec<Vec<u8>>, OffloadError> {
    let mut segs = Vec::new();
    let mut out = Vec::new();
    let n = segment(hdr, pkt, &mut out, |h, p| segs.push([h, p].concat()))?;
    assert_eq!(n, segs.len());
    Ok(segs)
}

#[test]
fn header_parses_little_endian_fields_and_round_trips() {
    let bytes = [1, 0x81, 0x34, 0, 0xa8, 0x05, 20, 0, 16, 0, 0xee];
    let (h, rest) = VirtioNetHdr::parse(&bytes).expect("10 bytes");
    assert_eq!(
        h,
        VirtioNetHdr {
            flags: 1,
            gso_type: 0x81,
            hdr_len: 52,
            gso_size: 1448,
            csum_start: 20,
            csum_offset: 16,
        }
    );
    assert_eq!(rest, &[0xee]);
    assert_eq!(h.to_bytes()[..], bytes[..10]);
    assert_eq!(
        VirtioNetHdr::parse(&bytes[..9]),
        Err(OffloadError::Truncated)
    );
}

#[test]
fn three_segment_tso_packet_becomes_three_wire_packets() {
    let payload: Vec<u8> = (0..1000u32).map(|i| (i * 7 + 3) as u8).collect();
    // PSH|ACK|FIN|CWR on the super-packet: FIN and PSH belong on the last segment, CWR on the
    // first.
    let flags = TCP_ACK | TCP_PSH | TCP_FIN | TCP_CWR;
    let mut pkt = with_partial_checksum(tcp_packet(0xffff_fe00, flags, &payload));
    let mut hdr = tso_hdr(400);
    hdr.gso_type |= GSO_ECN;
    let segs = collect(&hdr, &mut pkt).expect("valid TSO packet");
    assert_eq!(segs.len(), 3);
    let sizes = [400usize, 400, 200];
    let seqs = [0xffff_fe00u32, 0xffff_ff90, 0x0000_0120]; // wraps past 2^32
    let flag_bytes = [TCP_ACK | TCP_CWR, TCP_ACK, TCP_ACK | TCP_PSH | TCP_FIN];
    let mut offset = 0;
    for (i, s) in segs.iter().enumerate() {
        assert_eq!(s.len(), 52 + sizes[i], "segment {i} length");
        assert_eq!(
            u16::from_be_bytes([s[2], s[3]]) as usize,
            s.len(),
            "total length"
        );
        assert_eq!(u16::from_be_bytes([s[4], s[5]]), 0x1234 + i as u16, "IP id");
        assert_eq!(
            u32::from_be_bytes([s[24], s[25], s[26], s[27]]),
            seqs[i],
            "seq"
        );
        assert_eq!(s[33], flag_bytes[i], "flags of segment {i}");
        assert_eq!(checksums_ok(s), (true, true), "checksums of segment {i}");
        // Everything else of the headers is the super-packet's.
        assert_eq!(s[6..10], pkt[6..10]);
        assert_eq!(s[12..24], pkt[12..24]);
        assert_eq!(s[28..33], pkt[28..33]);
        assert_eq!(s[34..36], pkt[34..36]);
        assert_eq!(s[38..52], pkt[38..52]);
        assert_eq!(s[52..], payload[offset..offset + sizes[i]]);
        offset += sizes[i];
    }
    // The first segment's exact bytes (checksums from the independent sum).
    let mut expect = tcp_packet(0xffff_fe00, TCP_ACK | TCP_CWR, &payload[..400]);
    expect = with_checksums(expect);
    assert_eq!(segs[0], expect);
}

#[test]
fn plain_packet_gets_its_partial_checksum_completed() {
    let payload = b"hello, satellite";
    let good = with_checksums(tcp_packet(7, TCP_ACK | TCP_PSH, payload));
    let mut partial = with_partial_checksum(good.clone());
    let hdr = VirtioNetHdr {
        flags: F_NEEDS_CSUM,
        csum_start: 20,
        csum_offset: 16,
        ..VirtioNetHdr::default()
    };
    let segs = collect(&hdr, &mut partial).expect("valid");
    assert_eq!(segs, vec![good.clone()]);
    // Without NEEDS_CSUM the bytes pass untouched.
    let mut same = good.clone();
    let segs = collect(&VirtioNetHdr::default(), &mut same).expect("valid");
    assert_eq!(segs, vec![good]);
}

#[test]
fn a_super_packet_that_fits_one_segment_is_one_segment() {
    let payload = [5u8; 300];
    let mut pkt = with_partial_checksum(tcp_packet(1, TCP_ACK | TCP_PSH, &payload));
    let segs = collect(&tso_hdr(300), &mut pkt).expect("valid");
    assert_eq!(segs.len(), 1);
    assert_eq!(segs[0][33], TCP_ACK | TCP_PSH);
    assert_eq!(checksums_ok(&segs[0]), (true, true));
}

#[test]
fn malformed_headers_are_errors() {
    let payload = [1u8; 100];
    let good = tcp_packet(1, TCP_ACK, &payload);
    let run = |hdr: VirtioNetHdr, mut p: Vec<u8>| collect(&hdr, &mut p).map(|s| s.len());
    // csum_start + csum_offset past the end.
    let bad_csum = VirtioNetHdr {
        flags: F_NEEDS_CSUM,
        csum_start: 150,
        csum_offset: 16,
        ..VirtioNetHdr::default()
    };
    assert_eq!(
        run(bad_csum, good.clone()),
        Err(OffloadError::Bad("csum_start/csum_offset"))
    );
    // Exactly at the end: the field's two bytes are the last two.
    let edge = VirtioNetHdr {
        csum_start: (good.len() - 18) as u16,
        ..bad_csum
    };
    assert_eq!(run(edge, good.clone()), Ok(1));
    // One byte further: the field's second byte would be past the end.
    let over = VirtioNetHdr {
        csum_start: (good.len() - 17) as u16,
        ..bad_csum
    };
    assert_eq!(
        run(over, good.clone()),
        Err(OffloadError::Bad("csum_start/csum_offset"))
    );
    assert_eq!(
        run(tso_hdr(0), good.clone()),
        Err(OffloadError::Bad("gso_size"))
    );
    let udp = VirtioNetHdr {
        gso_type: 3,
        ..tso_hdr(50)
    };
    assert_eq!(run(udp, good.clone()), Err(OffloadError::GsoType(3)));
    let v6 = VirtioNetHdr {
        gso_type: 4 | GSO_ECN,
        ..tso_hdr(50)
    };
    assert_eq!(run(v6, good.clone()), Err(OffloadError::GsoType(4)));
    let mut short_total = good.clone();
    short_total[3] -= 1;
    assert_eq!(
        run(tso_hdr(50), short_total),
        Err(OffloadError::Bad("IPv4 total length"))
    );
    let mut udp_proto = good.clone();
    udp_proto[9] = 17;
    assert_eq!(
        run(tso_hdr(50), udp_proto),
        Err(OffloadError::Bad("IPv4 header"))
    );
    let mut v6_version = good.clone();
    v6_version[0] = 0x65;
    assert_eq!(
        run(tso_hdr(50), v6_version),
        Err(OffloadError::Bad("IPv4 header"))
    );
    let mut small_ihl = good.clone();
    small_ihl[0] = 0x44;
    assert_eq!(
        run(tso_hdr(50), small_ihl),
        Err(OffloadError::Bad("IPv4 header"))
    );
    let mut long_doff = good.clone();
    long_doff[32] = 0xf0; // 60-byte TCP header in a 152-byte packet: 72 bytes of payload
    assert_eq!(run(tso_hdr(50), long_doff), Ok(2));
    let mut past_end = tcp_packet(1, TCP_ACK, &[]);
    past_end[32] = 0xf0; // 60 bytes of TCP header, 32 present
    assert_eq!(run(tso_hdr(50), past_end), Err(OffloadError::Truncated));
    let mut tiny_doff = good.clone();
    tiny_doff[32] = 0x40;
    assert_eq!(run(tso_hdr(50), tiny_doff), Err(OffloadError::Truncated));
    let mut fragment = good.clone();
    fragment[6] = 0x20; // MF
    assert_eq!(
        run(tso_hdr(50), fragment),
        Err(OffloadError::Bad("fragment"))
    );
    let mut offset = good.clone();
    offset[7] = 0x01;
    assert_eq!(run(tso_hdr(50), offset), Err(OffloadError::Bad("fragment")));
    assert_eq!(
        run(tso_hdr(50), good[..19].to_vec()),
        Err(OffloadError::Bad("IPv4 header"))
    );
    // A whole IPv4 header and not a byte of TCP.
    let mut ip_only = good[..20].to_vec();
    ip_only[2..4].copy_from_slice(&20u16.to_be_bytes());
    assert_eq!(run(tso_hdr(50), ip_only), Err(OffloadError::Truncated));
    assert_eq!(run(tso_hdr(50), good), Ok(2));
}

/// Segments of one flow as the network hands them back: consecutive, with valid checksums.
fn wire_segments(seq: u32, sizes: &[usize], last_flags: u8) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut s = seq;
    for (i, &n) in sizes.iter().enumerate() {
        let payload: Vec<u8> = (0..n).map(|k| (k as u32 + s) as u8).collect();
        let flags = if i + 1 == sizes.len() {
            last_flags
        } else {
            TCP_ACK
        };
        let mut p = tcp_packet(s, flags, &payload);
        p[4..6].copy_from_slice(&(0x1234 + i as u16).to_be_bytes());
        out.push(with_checksums(p));
        s = s.wrapping_add(n as u32);
    }
    out
}

/// The super-packet a coalescer makes of `segs`, pushed one after another (all must join).
fn coalesce(segs: &[Vec<u8>]) -> (VirtioNetHdr, Vec<u8>, u32, u64) {
    let mut c = Coalescer::default();
    for s in segs {
        assert!(c.push(s, &[], false));
    }
    let b = c.take().expect("segments held");
    let bytes = b.to_vec();
    assert_eq!(bytes.len(), b.len());
    let (h, p) = VirtioNetHdr::parse(&bytes).expect("header");
    let out = (h, p.to_vec(), b.segments, b.wire_bytes);
    drop(b);
    assert!(c.take().is_none());
    out
}

#[test]
fn coalesced_segments_make_a_super_packet_the_kernel_accepts() {
    let segs = wire_segments(100, &[400, 400, 250], TCP_ACK | TCP_PSH);
    let (h, p, n, bytes) = coalesce(&segs);
    assert_eq!((n, bytes), (3, 452 + 452 + 302));
    assert_eq!(h, tso_hdr(400));
    assert_eq!(p.len(), 52 + 1050);
    assert_eq!(u16::from_be_bytes([p[2], p[3]]) as usize, p.len());
    assert_eq!(
        u16::from_be_bytes([p[4], p[5]]),
        0x1234,
        "first segment's id"
    );
    assert_eq!(p[33], TCP_ACK | TCP_PSH);
    assert_eq!(naive_sum(&[&p[..20]]), 0xffff, "IPv4 checksum");
    // CHECKSUM_PARTIAL: the field is the pseudo-header sum, the rest the kernel's to add.
    let tcp_len = (p.len() - 20) as u16;
    let pseudo = [&p[12..20], &[0, 6], &tcp_len.to_be_bytes()[..]].concat();
    assert_eq!(u16::from_be_bytes([p[36], p[37]]), naive_sum(&[&pseudo]));
    // Pushed as headers and payload apart (as the engine does), the same super-packet.
    let mut c = Coalescer::default();
    for seg in &segs {
        assert!(c.push(&seg[..52], &seg[52..], false));
    }
    assert_eq!(
        c.take().map(|b| b.to_vec()[VNET_HDR_LEN..].to_vec()),
        Some(p.clone())
    );
    // Payload on both sides of the split: refused, not mis-joined.
    assert!(!Coalescer::default().push(&segs[0][..60], &segs[0][60..], false));
    // Cut again, it gives back the very segments.
    let mut again = p.clone();
    let back = collect(&h, &mut again).expect("valid");
    assert_eq!(back, segs);
}

#[test]
fn a_fin_segment_joins_as_the_last() {
    // FIN, like PSH, may end a super-packet (the kernel puts it on the last segment only).
    let segs = wire_segments(100, &[400, 400, 250], TCP_ACK | TCP_FIN);
    let (h, p, n, _) = coalesce(&segs);
    assert_eq!((h, n), (tso_hdr(400), 3));
    assert_eq!(p[33], TCP_ACK | TCP_FIN);
    let mut again = p.clone();
    assert_eq!(collect(&h, &mut again).expect("valid"), segs);
}

#[test]
fn one_segment_goes_out_as_it_came() {
    let segs = wire_segments(5, &[100], TCP_ACK);
    let (h, p, n, bytes) = coalesce(&segs);
    assert_eq!(h, VirtioNetHdr::default());
    assert_eq!((p, n, bytes), (segs[0].clone(), 1, 152));
}

#[test]
fn coalescer_refuses_what_does_not_continue() {
    let segs = wire_segments(1000, &[100, 100, 100], TCP_ACK);
    let refused = |first: &[u8], next: &[u8]| {
        let mut c = Coalescer::default();
        assert!(c.push(first, &[], false));
        !c.push(next, &[], false)
    };
    assert!(!refused(&segs[0], &segs[1]));
    // A gap in sequence space.
    assert!(refused(&segs[0], &segs[2]));
    // IP ids not incrementing.
    let mut same_id = segs[1].clone();
    same_id[4..6].copy_from_slice(&[0x12, 0x34]);
    assert!(refused(&segs[0], &with_checksums(same_id)));
    // Another ack number, window, port, TTL, TOS: the header differs.
    for at in [1usize, 8, 20, 22, 28, 34, 40] {
        let mut other = segs[1].clone();
        other[at] ^= 0x01;
        assert!(refused(&segs[0], &with_checksums(other)), "byte {at}");
    }
    // A corrupted payload byte: the checksum no longer holds.
    let mut corrupt = segs[1].clone();
    corrupt[60] ^= 0xff;
    assert!(refused(&segs[0], &corrupt));
    let mut bad_ip = segs[1].clone();
    bad_ip[8] ^= 1; // TTL without fixing the IP checksum
    assert!(refused(&segs[0], &bad_ip));
    // Longer than the first segment.
    let longer = wire_segments(1100, &[101], TCP_ACK);
    let mut longer = longer[0].clone();
    longer[4..6].copy_from_slice(&0x1235u16.to_be_bytes());
    assert!(refused(&segs[0], &with_checksums(longer)));
    // After a short, PSH or FIN segment nothing may join.
    let short = wire_segments(1000, &[100, 50, 50], TCP_ACK);
    let mut c = Coalescer::default();
    assert!(c.push(&short[0], &[], false) && c.push(&short[1], &[], false));
    assert!(!c.push(&short[2], &[], false));
    let psh = wire_segments(1000, &[100, 100, 100], TCP_ACK);
    let mut second = psh[1].clone();
    second[33] |= TCP_PSH;
    let mut c = Coalescer::default();
    assert!(c.push(&psh[0], &[], false) && c.push(&with_checksums(second), &[], false));
    assert!(!c.push(&psh[2], &[], false));
    // Not data segments, or flags a super-packet cannot spread.
    let pure_ack = with_checksums(tcp_packet(1, TCP_ACK, &[]));
    assert!(!Coalescer::default().push(&pure_ack, &[], false));
    for f in [
        TCP_SYN | TCP_ACK,
        TCP_RST | TCP_ACK,
        TCP_URG | TCP_ACK,
        TCP_CWR | TCP_ACK,
        0,
    ] {
        let p = with_checksums(tcp_packet(1, f, &[1, 2, 3]));
        assert!(!Coalescer::default().push(&p, &[], false), "flags {f:#x}");
    }
    let mut frag = segs[0].clone();
    frag[6] = 0x20;
    assert!(!Coalescer::default().push(&with_checksums(frag), &[], false));
    assert!(!Coalescer::default().push(&segs[0][..30], &[], false));
}

/// Known checksums spare only the sum: a segment whose sum no longer holds joins when the
/// caller vouches for it (it is the caller's promise), but every header rule still applies.
#[test]
fn known_checksums_skip_the_sum_and_nothing_else() {
    let segs = wire_segments(1000, &[100, 100, 100], TCP_ACK);
    let mut corrupt = segs[1].clone();
    corrupt[60] ^= 0xff;
    let mut c = Coalescer::default();
    assert!(c.push(&segs[0], &[], true));
    assert!(
        !c.push(&corrupt, &[], false),
        "not vouched for: summed, refused"
    );
    assert!(c.push(&corrupt, &[], true), "vouched for: not summed");
    let joined = c.take().expect("two segments");
    assert_eq!(joined.segments, 2);
    // A gap, another flow, a pure ACK: refused whatever the caller knows.
    let mut c = Coalescer::default();
    assert!(c.push(&segs[0], &[], true));
    assert!(!c.push(&segs[2], &[], true), "gap");
    let mut other = segs[1].clone();
    other[20] ^= 1; // source port
    assert!(!c.push(&with_checksums(other), &[], true), "another flow");
    let pure_ack = with_checksums(tcp_packet(1, TCP_ACK, &[]));
    assert!(!Coalescer::default().push(&pure_ack, &[], true));
}

#[test]
fn coalescer_stops_at_the_ipv4_limit_and_the_segment_cap() {
    // 1448-byte segments: 45 fit in 65 535 bytes (52 + 45 × 1448 = 65 212), the 46th not.
    let sizes = vec![1448; 46];
    let segs = wire_segments(0, &sizes, TCP_ACK);
    let mut c = Coalescer::default();
    for s in &segs[..45] {
        assert!(c.push(s, &[], false));
    }
    assert!(!c.push(&segs[45], &[], false));
    assert_eq!(
        c.take().map(|b| (b.segments, b.len())),
        Some((45, 10 + 65_212))
    );
    // 10-byte segments: the cap of 64 comes first.
    let segs = wire_segments(0, &[10; 65], TCP_ACK);
    let mut c = Coalescer::default();
    for s in &segs[..64] {
        assert!(c.push(s, &[], false));
    }
    assert!(!c.push(&segs[64], &[], false));
    let b = c.take().expect("held");
    assert_eq!((b.segments, b.wire_bytes), (64, 64 * 62));
}

#[test]
fn headers_too_short_for_tcp_are_never_the_same() {
    // A whole IPv4 + TCP header (with options) of one segment is the same as itself; 19 bytes
    // of TCP are not a TCP header, however equal.
    let seg = &wire_segments(1, &[10], TCP_ACK)[0];
    assert!(same_headers(&seg[..52], &seg[..52], 20));
    assert!(same_headers(&seg[..40], &seg[..40], 20));
    assert!(!same_headers(&seg[..39], &seg[..39], 20));
}

#[test]
fn coalescer_fills_a_super_packet_to_exactly_the_ipv4_limit() {
    // 52 + 45 × 1448 + 323 = 65 535: the last segment brings the total to the limit and joins;
    // one byte more and it does not.
    for (last, joins) in [(323, true), (324, false)] {
        let mut sizes = vec![1448; 45];
        sizes.push(last);
        let segs = wire_segments(7, &sizes, TCP_ACK);
        let mut c = Coalescer::default();
        for s in &segs[..45] {
            assert!(c.push(s, &[], false));
        }
        assert_eq!(
            c.push(&segs[45], &[], false),
            joins,
            "last segment of {last} bytes"
        );
        let b = c.take().expect("held");
        let want = if joins { (46, 65_535) } else { (45, 65_212) };
        assert_eq!((b.segments, b.len() - VNET_HDR_LEN), want);
    }
}

proptest! {
    /// Cutting any super-packet into segments and joining the payloads gives the original
    /// payload back; every segment carries valid checksums and consecutive sequence numbers;
    /// coalescing the segments gives the super-packet's bytes again.
    #[test]
    fn segment_then_reassemble_is_identity(
        payload in proptest::collection::vec(any::<u8>(), 1..6000),
        mss in 1u16..1500,
        seq in any::<u32>(),
        psh in any::<bool>(),
    ) {
        let flags = if psh { TCP_ACK | TCP_PSH } else { TCP_ACK };
        let original = tcp_packet(seq, flags, &payload);
        let mut pkt = with_partial_checksum(original.clone());
        let segs = collect(&tso_hdr(mss), &mut pkt).expect("valid");
        prop_assert_eq!(segs.len(), payload.len().div_ceil(usize::from(mss)));
        let mut joined = Vec::new();
        let mut next = seq;
        for s in &segs {
            prop_assert_eq!(checksums_ok(s), (true, true));
            prop_assert_eq!(u32::from_be_bytes([s[24], s[25], s[26], s[27]]), next);
            next = next.wrapping_add((s.len() - 52) as u32);
            joined.extend_from_slice(&s[52..]);
        }
        prop_assert_eq!(&joined, &payload);
        if segs.len() <= MAX_COALESCE as usize {
            let (h, p, n, _) = coalesce(&segs);
            prop_assert_eq!(n as usize, segs.len());
            prop_assert_eq!(&p[52..], &payload[..]);
            prop_assert_eq!(p[33], flags);
            if n > 1 {
                prop_assert_eq!(h.gso_size, mss);
            }
        }
    }
}

/// Headers of [`tcp_packet`]: IPv4, TCP with the timestamp option.
const HL: usize = 52;

/// The packet of wire bytes `seg`, owning its payload.
fn owned(seg: &[u8], checksums_known: bool) -> Packet {
    let mut p = Packet::try_with_payload(&seg[..HL], &seg[HL..]).expect("packet");
    if checksums_known {
        p.mark_checksums_valid();
    }
    p
}

/// Packets joined without a copy give the very bytes their copies give, in a header part and
/// one part per payload, and the batch keeps them alive until it is written.
#[test]
fn packets_join_without_a_copy_into_the_same_bytes() {
    let segs = wire_segments(5000, &[1448, 1448, 1448, 600], TCP_ACK | TCP_PSH);
    let want = coalesce(&segs);
    let live = satpep_proto::node::live_packets();
    let mut c = Coalescer::default();
    for s in &segs {
        assert!(c.push_packet(owned(s, false)).is_ok());
    }
    assert_eq!(
        satpep_proto::node::live_packets(),
        live + 4,
        "held, not copied"
    );
    let b = c.take().expect("four segments");
    let parts: Vec<&[u8]> = b.parts().collect();
    assert_eq!(parts.len(), 5);
    assert_eq!(parts[0].len(), VNET_HDR_LEN + HL);
    assert_eq!(
        parts[1..].iter().map(|p| p.len()).collect::<Vec<_>>(),
        [1448, 1448, 1448, 600]
    );
    let bytes = b.to_vec();
    assert_eq!(bytes.len(), b.len());
    let (h, p) = VirtioNetHdr::parse(&bytes).expect("header");
    assert_eq!((h, p.to_vec(), b.segments, b.wire_bytes), want);
    drop(b);
    assert_eq!(
        satpep_proto::node::live_packets(),
        live,
        "released once written"
    );
    assert!(c.take().is_none());
}

/// A refused packet comes back whole, and what was held is unchanged; copied and held payloads
/// mix in one batch; a packet without a payload of its own is refused.
#[test]
fn refused_packets_come_back_and_parts_mix() {
    let segs = wire_segments(1, &[100, 100, 100], TCP_ACK);
    let mut corrupt = segs[1].clone();
    corrupt[60] ^= 0xff;
    let mut c = Coalescer::default();
    assert!(c.push_packet(owned(&segs[0], false)).is_ok());
    let back = c
        .push_packet(owned(&corrupt, false))
        .expect_err("bad checksum, not vouched for");
    assert_eq!(back.payload(), Some(&corrupt[HL..]));
    assert!(c.push_packet(owned(&segs[2], true)).is_err(), "a gap");
    assert!(
        c.push(&segs[1], &[], false),
        "the copy of the right one joins"
    );
    assert!(c.push_packet(owned(&segs[2], true)).is_ok());
    let b = c.take().expect("three segments");
    assert!(!b.is_empty());
    let (h, p, segments, wire_bytes) = coalesce(&segs);
    let mut want = h.to_bytes().to_vec();
    want.extend_from_slice(&p);
    assert_eq!(
        (b.to_vec(), b.segments, b.wire_bytes),
        (want, segments, wire_bytes)
    );
    drop(b);
    let virt = Packet::new(&segs[0][..HL], 100);
    assert!(
        c.push_packet(virt).is_err(),
        "virtual payload: the caller materialises it"
    );
}

/// A segment that follows in IP id but not in sequence (a gap: a lost or reordered segment
/// between them) never joins: its bytes would land at the wrong place in the stream.
#[test]
fn a_sequence_gap_refuses_even_with_consecutive_ids() {
    let segs = wire_segments(100, &[200, 200, 200], TCP_ACK);
    let mut gap = segs[2].clone();
    gap[4..6].copy_from_slice(&0x1235u16.to_be_bytes()); // the id segs[1] would have
    let gap = with_checksums(gap);
    for known in [false, true] {
        let mut c = Coalescer::default();
        assert!(c.push(&segs[0], &[], known));
        assert!(
            !c.push(&gap, &[], known),
            "seq 500 after 300 (checksums known: {known})"
        );
        assert!(c.push_packet(owned(&gap, known)).is_err());
        assert!(c.push(&segs[1], &[], known), "the segment that does follow");
    }
}
