//! The packet path with hand-made times: no namespaces, no clock.

use super::*;

/// gw (10.0.0.1) → r (router) → term (10.0.1.1): 8 Mb/s then 80 Mb/s, 100 ms + 5 ms; a
/// direct return link term → gw. `extra` is appended to the first link's table.
fn scenario(extra: &str) -> Scenario {
    let text = format!(
        r#"
        [[node]]
        name = "gw"
        address = "10.0.0.1"
        [[node]]
        name = "r"
        kind = "router"
        address = "10.0.2.1"
        [[node]]
        name = "term"
        address = "10.0.1.1"
        [[link]]
        name = "gw-r"
        from = "gw"
        to = "r"
        rate = "8Mbps"
        delay = "100ms"
        {extra}
        [[link]]
        name = "r-term"
        from = "r"
        to = "term"
        rate = "80Mbps"
        delay = "5ms"
        [[link]]
        name = "term-gw"
        from = "term"
        to = "gw"
        rate = "8Mbps"
        delay = "100ms"
        "#
    );
    satpep_scenario::load_str(&text, "<test>", &[])
        .unwrap()
        .scenario
}

/// A UDP packet 10.0.0.1:1000 → `dst`:2000 of `len` bytes with a valid header checksum and a
/// payload that counts bytes, so corruption shows.
fn udp(dst: [u8; 4], len: usize) -> Vec<u8> {
    let payload: Vec<u8> = (0..len - 28).map(|i| i as u8).collect();
    let b = etherparse_free_udp([10, 0, 0, 1], dst, &payload);
    assert_eq!(b.len(), len);
    b
}

/// IPv4 + UDP by hand (TTL 64, header checksum computed, UDP checksum 0 = none).
fn etherparse_free_udp(src: [u8; 4], dst: [u8; 4], payload: &[u8]) -> Vec<u8> {
    let total = 28 + payload.len();
    let mut h = vec![
        0x45,
        0,
        (total >> 8) as u8,
        total as u8,
        0,
        1,
        0,
        0,
        64,
        17,
        0,
        0,
    ];
    h.extend_from_slice(&src);
    h.extend_from_slice(&dst);
    let sum = checksum(&h);
    h[10..12].copy_from_slice(&sum.to_be_bytes());
    h.extend_from_slice(&1000u16.to_be_bytes());
    h.extend_from_slice(&2000u16.to_be_bytes());
    h.extend_from_slice(&((8 + payload.len()) as u16).to_be_bytes());
    h.extend_from_slice(&[0, 0]);
    h.extend_from_slice(payload);
    h
}

fn checksum(h: &[u8]) -> u16 {
    let mut s: u32 = h
        .chunks(2)
        .map(|c| u32::from(u16::from_be_bytes([c[0], c[1]])))
        .sum();
    while s > 0xffff {
        s = (s & 0xffff) + (s >> 16);
    }
    !(s as u16)
}

fn ms(v: u64) -> Instant {
    Instant(v * 1_000_000)
}

/// Feed `pkt` from node `from` at `at`.
fn inject(e: &mut Engine, from: usize, at: Instant, pkt: &[u8]) {
    let read = e
        .ingress(from, at, |buf| {
            buf[..pkt.len()].copy_from_slice(pkt);
            Ok(Some(pkt.len()))
        })
        .unwrap();
    assert!(read);
}

/// Service at `at`; returns (node, bytes) written to hosts.
fn service(e: &mut Engine, at: Instant) -> Vec<(usize, Vec<u8>)> {
    let mut out = Vec::new();
    e.service(at, |node, parts| {
        assert!(!parts.is_empty() && parts.len() <= MAX_PARTS);
        out.push((node, parts.concat()));
        Ok(true)
    })
    .unwrap();
    out
}

#[test]
fn packet_crosses_two_links_at_the_modelled_instant_with_ttl_decremented() {
    let mut e = Engine::new(&scenario(""));
    let pkt = udp([10, 0, 1, 1], 1000);
    inject(&mut e, 0, ms(0), &pkt);
    // 1000 B at 8 Mb/s = 1 ms, + 100 ms; then 1000 B at 80 Mb/s = 0.1 ms, + 5 ms.
    let due = Instant(106_100_000);
    let mut t = ms(0);
    while let Some(next) = e.poll_timeout() {
        if next >= due {
            break;
        }
        assert!(
            service(&mut e, next).is_empty(),
            "nothing reaches term before {due}"
        );
        t = next;
    }
    assert!(t < due);
    assert_eq!(e.poll_timeout(), Some(due));
    assert!(service(&mut e, Instant(due.as_nanos() - 1)).is_empty());
    let out = service(&mut e, due);
    assert_eq!(out.len(), 1);
    let (node, got) = &out[0];
    assert_eq!(*node, 2, "delivered to term");
    // Same bytes except the TTL (64 → 63 at the router) and the header checksum, which is
    // still valid.
    assert_eq!(got.len(), pkt.len());
    assert_eq!(got[8], 63);
    assert_eq!(checksum(&got[..20]), 0, "header checksum verifies");
    assert_eq!(got[..8], pkt[..8]);
    assert_eq!(
        got[12..],
        pkt[12..],
        "addresses, UDP header and payload unchanged"
    );
    // Released on time: lateness 0 on both links (the first one's release goes into the
    // router without a queued event: it must be measured all the same).
    assert_eq!(e.lateness(0).len(), 1);
    assert_eq!(e.lateness(0).quantile(1.0), 0);
    assert_eq!(e.lateness(1).len(), 1);
    assert_eq!(e.buffers_in_use(), 0);
    let c = e.counters();
    assert_eq!((c.rx_packets, c.tx_packets, c.tx_bytes), (1, 1, 1000));
}

#[test]
fn late_service_is_measured_as_lateness() {
    let mut e = Engine::new(&scenario(""));
    inject(&mut e, 2, ms(0), &udp([10, 0, 0, 1], 1000));
    // term → gw: due at 101 ms; serviced 250 µs late.
    let out = service(&mut e, Instant(101_250_000));
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].0, 0);
    assert_eq!(e.lateness(2).quantile(0.5), 250_000);
}

#[test]
fn late_release_into_a_router_is_measured_as_lateness() {
    let mut e = Engine::new(&scenario(""));
    inject(&mut e, 0, ms(0), &udp([10, 0, 1, 1], 1000));
    // gw → r: 1 ms + 100 ms, due at 101 ms; serviced 250 µs late. The model keeps its own
    // time: r → term still runs from 101 ms (0.1 ms + 5 ms), due at 106.1 ms.
    assert!(service(&mut e, Instant(101_250_000)).is_empty());
    assert_eq!(e.lateness(0).len(), 1);
    assert_eq!(e.lateness(0).quantile(0.5), 250_000);
    assert_eq!(e.poll_timeout(), Some(Instant(106_100_000)));
    let out = service(&mut e, Instant(106_100_000));
    assert_eq!(out.len(), 1);
    assert_eq!((e.lateness(1).len(), e.lateness(1).quantile(1.0)), (1, 0));
}

#[test]
fn queue_drops_release_their_buffers_and_later_packets_keep_their_bytes() {
    // Queue of 2 packets on gw-r: of 10 back-to-back packets, 1 is serialised, 2 wait, 7 drop.
    let mut e = Engine::new(&scenario("queue = { limit_packets = 2 }"));
    for i in 0..10u8 {
        let mut p = udp([10, 0, 1, 1], 500);
        *p.last_mut().unwrap() = i; // tag the packet
        inject(&mut e, 0, ms(0), &p);
    }
    assert!(service(&mut e, ms(0)).is_empty());
    assert_eq!(e.link_stats(0, ms(0)).0.queue_drops, 7);
    let mut got = Vec::new();
    while let Some(t) = e.poll_timeout() {
        got.extend(service(&mut e, t));
    }
    let tags: Vec<u8> = got.iter().map(|(_, b)| *b.last().unwrap()).collect();
    assert_eq!(tags, [0, 1, 2], "the first three, intact, in order");
    assert_eq!(
        e.buffers_in_use(),
        0,
        "dropped packets' buffers were reclaimed"
    );
}

#[test]
fn unroutable_and_malformed_packets_are_counted_and_dropped() {
    let mut e = Engine::new(&scenario(""));
    inject(&mut e, 0, ms(0), &udp([192, 168, 1, 1], 100)); // no such node
    inject(&mut e, 0, ms(0), &udp([192, 168, 1, 2], 100));
    let mut v6 = vec![0x60u8; 40];
    v6[0] = 0x60;
    inject(&mut e, 0, ms(0), &v6);
    let c = e.counters();
    assert_eq!((c.unroutable, c.malformed, c.rx_packets), (2, 1, 3));
    assert_eq!(e.poll_timeout(), None);
    assert_eq!(e.buffers_in_use(), 0);
}

#[test]
fn error_model_drops_the_listed_packets() {
    let mut e = Engine::new(&scenario("error = { model = \"list\", packets = [2] }"));
    for i in 0..3u8 {
        let mut p = udp([10, 0, 1, 1], 200);
        *p.last_mut().unwrap() = i;
        inject(&mut e, 0, ms(u64::from(i)), &p);
    }
    let mut got = Vec::new();
    while let Some(t) = e.poll_timeout() {
        got.extend(service(&mut e, t));
    }
    let tags: Vec<u8> = got.iter().map(|(_, b)| *b.last().unwrap()).collect();
    assert_eq!(tags, [0, 2]);
    assert_eq!(e.buffers_in_use(), 0);
}

#[test]
fn header_length_covers_ip_and_transport_headers() {
    let u = udp([10, 0, 1, 1], 100);
    assert_eq!(header_len(&u), Some(28));
    // TCP with data offset 8 (32-byte header).
    let mut t = vec![0u8; 100];
    t[0] = 0x45;
    t[3] = 100; // total length
    t[9] = 6;
    t[32] = 8 << 4;
    assert_eq!(header_len(&t), Some(52));
    assert_eq!(header_len(&t[..40]), Some(40), "never past the packet");
    assert_eq!(header_len(&[0x60; 40]), None, "not IPv4");
    // IP-in-IP around that TCP packet: outer 20 + inner 52.
    let mut ipip = vec![0u8; 20];
    ipip[0] = 0x45;
    ipip[9] = 4;
    ipip.extend_from_slice(&t);
    assert_eq!(header_len(&ipip), Some(72));
    // A compacted ACK: IP-in-IP around a pure ACK (40 bytes, no payload) and the 3-byte
    // trailer after it: all 63 bytes are header, so the expander finds the trailer there.
    let mut ack = vec![0u8; 40];
    ack[0] = 0x45;
    ack[3] = 40;
    ack[9] = 6;
    ack[32] = 5 << 4;
    let mut compacted = vec![0u8; 20];
    compacted[0] = 0x45;
    compacted[9] = 4;
    compacted.extend_from_slice(&ack);
    compacted.extend_from_slice(&[3, 0x0b, 0xb8]);
    assert_eq!(header_len(&compacted), Some(63));
    // The same, authenticated: outer IPv4 (protocol 51), a 28-byte AH (next header 4, length
    // field 5), then the compacted ACK's inner datagram and trailer: all 91 bytes.
    let mut ah = compacted.clone();
    ah[9] = 51;
    let mut h = vec![4, 5, 0, 0];
    h.extend_from_slice(&[0; 24]);
    ah.splice(20..20, h);
    assert_eq!(header_len(&ah), Some(91));
    // An authenticated data packet: outer 20 + AH 28 + the inner TCP headers 52.
    let mut data = ipip.clone();
    data[9] = 51;
    let mut h = vec![4, 5, 0, 0];
    h.extend_from_slice(&[0; 24]);
    data.splice(20..20, h);
    assert_eq!(header_len(&data), Some(100));
}

/// A router with a pass-through middlebox carries packets exactly as a plain router: same
/// bytes, same delivery instant (the middlebox sits in the router, outside the links).
#[test]
fn a_pass_through_middlebox_changes_neither_bytes_nor_timing() {
    let text_plain = scenario("");
    let mut with = text_plain.clone();
    with.nodes[1].middlebox = Some(satpep_proto::middlebox::MiddleboxConfig::PassThrough);
    let mut out = Vec::new();
    for sc in [text_plain, with] {
        let mut e = Engine::new(&sc);
        let pkt = udp([10, 0, 1, 1], 1000);
        e.ingress(0, Instant::ZERO, |b| {
            b[..pkt.len()].copy_from_slice(&pkt);
            Ok(Some(pkt.len()))
        })
        .unwrap();
        let mut got: Vec<(Instant, Vec<u8>)> = Vec::new();
        while let Some(now) = e.poll_timeout() {
            e.service(now, |_, parts| {
                got.push((now, parts.concat()));
                Ok(true)
            })
            .unwrap();
        }
        assert_eq!(got.len(), 1);
        assert_eq!(e.buffers_in_use(), 0, "every buffer returned");
        out.push(got.remove(0));
    }
    assert_eq!(out[0], out[1]);
    // The router decremented the TTL (64 → 63) and kept the header checksum valid.
    assert_eq!(out[1].1[8], 63);
}

/// An IPv4 TCP super-packet term (10.0.1.1:80) → gw (10.0.0.1:5001) as an offloading device
/// hands it over: `virtio_net_hdr` (TCPV4, `gso_size`), headers with the pseudo-header sum in
/// the TCP checksum field, then `payload`.
fn tso_read(payload: &[u8], gso_size: u16) -> Vec<u8> {
    let total = 40 + payload.len();
    let mut ip = vec![
        0x45,
        0,
        (total >> 8) as u8,
        total as u8,
        0x10,
        0x00,
        0x40,
        0,
        64,
        6,
        0,
        0,
    ];
    ip.extend_from_slice(&[10, 0, 1, 1, 10, 0, 0, 1]);
    let sum = checksum(&ip);
    ip[10..12].copy_from_slice(&sum.to_be_bytes());
    let mut tcp = vec![
        0, 80, 0x13, 0x89, 0, 0, 0x10, 0, 0, 0, 0, 1, 0x50, 0x18, 0xff, 0xff, 0, 0, 0, 0,
    ];
    let tcp_len = (20 + payload.len()) as u16;
    let pseudo = [&ip[12..20], &[0, 6], &tcp_len.to_be_bytes()[..]].concat();
    let partial = !checksum(&pseudo);
    tcp[16..18].copy_from_slice(&partial.to_be_bytes());
    let hdr = VirtioNetHdr {
        flags: vnet::F_NEEDS_CSUM,
        gso_type: vnet::GSO_TCPV4,
        hdr_len: 40,
        gso_size,
        csum_start: 20,
        csum_offset: 16,
    };
    [&hdr.to_bytes()[..], &ip, &tcp, payload].concat()
}

fn inject_vnet(e: &mut Engine, from: usize, at: Instant, read: &[u8]) {
    let got = e
        .ingress_vnet(from, at, |buf| {
            buf[..read.len()].copy_from_slice(read);
            Ok(Some(read.len()))
        })
        .unwrap();
    assert!(got);
}

/// A 3-segment super-packet from term enters the term → gw link as three 1 040-byte packets
/// (8 Mb/s: 1.04 ms each, then 100 ms); at gw, an offloading host, what one pass releases is
/// written at once: the first segment alone at its instant, the other two joined.
#[test]
fn super_packet_crosses_as_wire_segments_and_leaves_joined() {
    let mut e = Engine::new(&scenario(""));
    e.set_vnet(0, true);
    let payload: Vec<u8> = (0..3000u32).map(|i| (i % 251) as u8).collect();
    inject_vnet(&mut e, 2, ms(0), &tso_read(&payload, 1000));
    let c = e.counters();
    assert_eq!(
        (c.rx_packets, c.rx_bytes, c.rx_super_packets),
        (3, 3 * 1040, 1)
    );
    let first = Instant(1_040_000 + 100_000_000);
    let mut t = ms(0);
    while let Some(next) = e.poll_timeout() {
        if next >= first {
            break;
        }
        assert!(service(&mut e, next).is_empty());
        t = next;
    }
    assert!(t < first);
    // The first segment, due now, goes alone and untouched behind an all-zero header.
    let out = service(&mut e, first);
    assert_eq!(out.len(), 1);
    let (node, bytes) = &out[0];
    assert_eq!(*node, 0);
    assert_eq!(bytes[..VNET_HDR_LEN], [0; VNET_HDR_LEN]);
    let seg = &bytes[VNET_HDR_LEN..];
    assert_eq!(seg.len(), 1040);
    assert_eq!(
        seg[13 + 20],
        0x10,
        "ACK only: PSH belongs to the last segment"
    );
    assert_eq!(checksum(&seg[..20]), 0, "IPv4 checksum complete");
    assert_eq!(seg[40..], payload[..1000]);
    // The other two, both due by 2.08 ms later, leave in one write as a super-packet.
    let out = service(&mut e, Instant(first.0 + 2_080_000));
    assert_eq!(out.len(), 1);
    let (hdr, pkt) = VirtioNetHdr::parse(&out[0].1).unwrap();
    assert_eq!(
        (hdr.gso_type, hdr.gso_size, hdr.flags),
        (vnet::GSO_TCPV4, 1000, vnet::F_NEEDS_CSUM)
    );
    assert_eq!((hdr.csum_start, hdr.csum_offset, hdr.hdr_len), (20, 16, 40));
    assert_eq!(pkt.len(), 40 + 2000);
    assert_eq!(
        u32::from_be_bytes([pkt[24], pkt[25], pkt[26], pkt[27]]),
        0x1000 + 1000,
        "seq"
    );
    assert_eq!(pkt[33], 0x18, "PSH|ACK of the last segment");
    assert_eq!(
        u16::from_be_bytes([pkt[4], pkt[5]]),
        0x1001,
        "id of the second segment"
    );
    assert_eq!(pkt[40..], payload[1000..]);
    let c = e.counters();
    assert_eq!(
        (c.tx_packets, c.tx_bytes, c.tx_super_packets),
        (3, 3 * 1040, 1)
    );
    let (link, _, _) = e.link_stats(2, Instant(first.0 + 2_080_000));
    assert_eq!(
        (link.delivered_packets, link.delivered_bytes),
        (3, 3 * 1040)
    );
}

/// A header that does not fit its packet drops the read, counted twice; nothing enters.
#[test]
fn malformed_virtio_net_hdr_is_counted_and_dropped() {
    let mut e = Engine::new(&scenario(""));
    let mut read = tso_read(&[7; 100], 50);
    read[6] = 200; // csum_start past the end
    read[0] = vnet::F_NEEDS_CSUM;
    read[1] = vnet::GSO_NONE;
    inject_vnet(&mut e, 2, ms(0), &read);
    inject_vnet(&mut e, 2, ms(0), &read[..5]);
    let mut udp_gso = tso_read(&[7; 100], 50);
    udp_gso[1] = 3;
    inject_vnet(&mut e, 2, ms(0), &udp_gso);
    let c = e.counters();
    assert_eq!((c.malformed, c.vnet_malformed, c.rx_packets), (3, 3, 0));
    assert_eq!(e.poll_timeout(), None);
}

/// A host's packet with IHL 0 and protocol 4 (IP-in-IP) made `header_len` take the packet for
/// its own inner datagram and recurse until the stack overflowed (a SIGSEGV of the emulator,
/// found by the `tun_intake` fuzz target); nested IP-in-IP headers recursed once per 20 bytes.
/// Now the IHL counts as at least 20 and the recursion stops past `MAX_HEADER`.
#[test]
fn ipip_with_ihl_0_or_deep_nesting_has_a_bounded_header() {
    let mut p = vec![0u8; 60];
    p[0] = 0x40; // version 4, IHL 0
    p[9] = 4;
    // The zeros after 20 bytes are no IPv4 header: a trailer, all of it header (as for a
    // compacted ACK).
    assert_eq!(header_len(&p), Some(60));
    let mut e = Engine::new(&scenario(""));
    e.ingress(2, ms(0), |buf| {
        buf[..p.len()].copy_from_slice(&p);
        Ok(Some(p.len()))
    })
    .unwrap();
    assert_eq!(e.counters().rx_packets, 1);
    // 3 000 nested IPv4 headers, each saying IP-in-IP follows and no payload of its own.
    let mut deep = Vec::new();
    for _ in 0..3000 {
        deep.extend_from_slice(&[
            0x45, 0, 0, 20, 0, 0, 0, 0, 64, 4, 0, 0, 10, 0, 0, 1, 10, 0, 1, 1,
        ]);
    }
    assert_eq!(header_len(&deep), Some(MAX_HEADER));
}

/// Service `e` once at `at`, handing every write to `accept`; returns the writes' sizes.
fn service_with(e: &mut Engine, at: Instant, accept: bool) -> Vec<usize> {
    let mut sizes = Vec::new();
    e.service(at, |_, parts| {
        sizes.push(parts.iter().map(|p| p.len()).sum::<usize>());
        Ok(accept)
    })
    .unwrap();
    sizes
}

/// Toward an offloading host, a packet that cannot join (UDP, with its own payload) goes alone
/// and counts its own wire bytes; a write the device refuses counts every wire segment it
/// carried as dropped, alone or joined.
#[test]
fn offloaded_writes_count_bytes_and_refusals_per_wire_segment() {
    let udp = etherparse_free_udp([10, 0, 1, 1], [10, 0, 0, 1], &[5; 300]);
    let payload: Vec<u8> = (0..3000u32).map(|i| (i % 251) as u8).collect();
    for accept in [true, false] {
        let mut e = Engine::new(&scenario(""));
        e.set_vnet(0, true);
        inject(&mut e, 2, ms(0), &udp);
        inject_vnet(&mut e, 2, ms(0), &tso_read(&payload, 1000));
        // Everything is due by 300 ms: one pass writes the UDP packet alone, then the three
        // segments joined.
        let written = service_with(&mut e, ms(300), accept);
        assert_eq!(
            written,
            [VNET_HDR_LEN + udp.len(), VNET_HDR_LEN + 40 + 3000]
        );
        assert_eq!(e.poll_timeout(), None);
        let c = e.counters();
        if accept {
            assert_eq!(
                (c.tx_packets, c.tx_bytes),
                (4, (udp.len() + 3 * 1040) as u64)
            );
            assert_eq!((c.tx_super_packets, c.tx_dropped), (1, 0));
        } else {
            assert_eq!((c.tx_packets, c.tx_bytes, c.tx_dropped), (0, 0, 4));
        }
        assert_eq!(e.buffers_in_use(), 0, "every buffer back, written or not");
    }
}
