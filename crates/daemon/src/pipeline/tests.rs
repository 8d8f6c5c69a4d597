use std::net::Ipv4Addr;
use std::path::Path;

use satpep_proto::time::Duration;
use satpep_proto::wire::{Ipv4Repr, SeqNumber, TcpRepr, IPPROTO_TCP};

use super::*;

/// The wire bytes of a TCP segment `src:sport → 10.0.2.1:80` carrying `payload` (real bytes).
fn segment(sport: u16, seq: u32, ack: u32, payload: &[u8]) -> Vec<u8> {
    let ip = Ipv4Repr {
        src: Ipv4Addr::new(10, 0, 1, 2),
        dst: Ipv4Addr::new(10, 0, 2, 1),
        protocol: IPPROTO_TCP,
        ttl: 63,
        ident: 7,
        dscp_ecn: 0,
        payload_len: 0,
    };
    let tcp = TcpRepr {
        src_port: sport,
        dst_port: 80,
        seq: SeqNumber(seq),
        ack: Some(SeqNumber(ack)),
        window: 20_000,
        payload_len: payload.len() as u32,
        ..TcpRepr::default()
    };
    let pkt = satpep_proto::wire::emit_tcp_packet(&ip, &tcp, |b| b.extend_from_slice(payload))
        .expect("payload length matches");
    let mut wire = Vec::new();
    pkt.write_wire(&mut wire);
    wire
}

fn config(text: &str) -> DaemonConfig {
    DaemonConfig::parse(text, Path::new("t.toml")).unwrap()
}

fn drain(p: &mut Pipeline) -> Vec<Vec<u8>> {
    let mut v = Vec::new();
    while let Some(pkt) = p.poll_output() {
        let mut w = Vec::new();
        pkt.write_wire(&mut w);
        v.push(w);
    }
    v
}

#[test]
fn pass_through_writes_back_the_very_bytes_it_read() {
    let mut p = Pipeline::new(
        &config("interfaces = [\"a\", \"b\"]\nmiddlebox = { kind = \"pass_through\" }\n"),
        0,
    );
    let seg = segment(40_000, 1, 1, b"GET / HTTP/1.0\r\n\r\n");
    p.ingress(Instant(5), 1, &seg);
    assert_eq!(drain(&mut p), vec![seg.clone()]);
    let c = p.counters();
    assert_eq!(
        (c.rx_packets.clone(), c.rx_bytes[1]),
        (vec![0, 1], seg.len() as u64)
    );
    assert_eq!((c.tx_packets, c.tx_bytes), (1, seg.len() as u64));
    assert_eq!(p.poll_timeout(), None);
}

#[test]
fn malformed_input_and_unknown_ports_are_counted_and_dropped() {
    let mut p = Pipeline::new(
        &config("interfaces = [\"a\"]\nmiddlebox = { kind = \"pass_through\" }\n"),
        0,
    );
    p.ingress(Instant(0), 0, &[0x45, 0, 0]); // truncated IPv4
    p.ingress(Instant(0), 0, &[0x60; 40]); // IPv6
    p.ingress(Instant(0), 0, &[]);
    p.ingress(Instant(0), 3, &segment(1, 1, 1, b"x")); // no such port
    assert!(drain(&mut p).is_empty());
    assert_eq!(p.counters().malformed, 4);
    assert_eq!(p.counters().rx_packets, vec![3]);
}

#[test]
fn a_shaper_paces_to_its_rate_and_drops_what_its_queue_cannot_hold() {
    // 1 Mb/s: a 1250-byte packet takes exactly 10 ms to leave; a queue of 3 packets (plus the
    // one being sent) holds 4 of 6 arriving at once.
    let mut p = Pipeline::new(
        &config(
            "interfaces = [\"lan\", \"sat\"]\nmiddlebox = { kind = \"pass_through\" }\n\
         [[shape]]\ninterface = \"lan\"\nrate = \"1Mbps\"\nqueue = { limit_packets = 3 }\n",
        ),
        0,
    );
    let payload = vec![7u8; 1250 - 40];
    for i in 0..6u32 {
        p.ingress(
            Instant::ZERO,
            0,
            &segment(40_000, 1 + 1210 * i, 1, &payload),
        );
    }
    let mut left = Vec::new();
    let mut now = Instant::ZERO;
    while let Some(t) = p.poll_timeout() {
        assert!(t >= now, "time never goes backwards");
        now = t;
        p.handle_timeout(now);
        for w in drain(&mut p) {
            assert_eq!(w.len(), 1250);
            left.push(now);
        }
    }
    let ms = Duration::from_millis(10).as_nanos();
    assert_eq!(
        left.iter().map(|t| t.as_nanos()).collect::<Vec<_>>(),
        vec![ms, 2 * ms, 3 * ms, 4 * ms]
    );
    assert_eq!(p.shaper_drops()[0], 2, "QueueFull");
    assert_eq!(p.shaper(0).map(|s| s.stats().queue_drops), Some(2));
}

#[test]
fn an_ack_filtering_shaper_sends_the_newest_ack_for_the_ones_it_removed() {
    // Five cumulative ACKs of one flow wait behind a data packet on a 100 kb/s return link.
    // Filtering keeps the first (it has no known predecessor, so it may be a duplicate ACK:
    // proto's ack::queue doc) and the newest, which stands for the three between.
    let mut p = Pipeline::new(&config(
        "interfaces = [\"lan\", \"sat\"]\nmiddlebox = { kind = \"pass_through\" }\n\
         [[shape]]\ninterface = \"lan\"\nrate = \"100kbps\"\nqueue = { kind = \"ack_filtering\" }\n",
    ), 0);
    p.ingress(Instant::ZERO, 0, &segment(41_000, 1, 1, &[1u8; 1000]));
    for k in 1..=5u32 {
        p.ingress(
            Instant(u64::from(k)),
            0,
            &segment(40_000, 1, 1 + 1000 * k, &[]),
        );
    }
    let mut out = Vec::new();
    while let Some(t) = p.poll_timeout() {
        p.handle_timeout(t);
        out.extend(drain(&mut p));
    }
    let acks: Vec<u32> = out
        .iter()
        .map(|w| u32::from_be_bytes([w[28], w[29], w[30], w[31]]))
        .collect();
    assert_eq!(acks, [1, 1001, 5001]);
    assert_eq!(out.iter().map(Vec::len).collect::<Vec<_>>(), [1040, 40, 40]);
    assert_eq!(p.shaper(0).map(|s| s.stats().removed), Some(3));
    assert_eq!(p.counters().rx_packets, vec![6, 0]);
}

fn counter(p: &Pipeline, name: &str) -> u64 {
    p.middlebox()
        .counters()
        .into_iter()
        .find(|(k, _)| k == name)
        .map_or_else(|| panic!("no counter {name}"), |(_, v)| v)
}

/// Run a pipeline until nothing is due; everything it wrote.
fn settle(p: &mut Pipeline) -> Vec<Vec<u8>> {
    let mut out = drain(p);
    while let Some(t) = p.poll_timeout() {
        p.handle_timeout(t);
        out.extend(drain(p));
    }
    out
}

const KEY: &str = "hex:000102030405060708090a0b0c0d0e0f";

#[test]
fn a_keyed_terminal_and_gateway_carry_compacted_acks_and_refuse_forgeries_and_replays() {
    // Terminal: ACKs from the LAN (port 0) wait on a 100 kb/s return behind a data packet and
    // are compacted into authenticated IP-in-IP to the gateway's expander at 10.0.9.1.
    let mut term = Pipeline::new(
        &config(&format!(
            "interfaces = [\"lan\", \"sat\"]\nmiddlebox = {{ kind = \"pass_through\" }}\n\
             [[shape]]\ninterface = \"lan\"\nrate = \"100kbps\"\n\
             queue = {{ kind = \"ack_compaction\", ack = {{ tunnel_src = \"10.0.1.250\", \
             tunnel_dst = \"10.0.9.1\", key = \"{KEY}\" }} }}\n"
        )),
        1_800_000_000,
    );
    let mut gw = Pipeline::new(
        &config(&format!(
            "interfaces = [\"sat\", \"wan\"]\n[middlebox]\nkind = \"ack_expander\"\n\
             address = \"10.0.9.1\"\ncompactors = [\"10.0.1.250\"]\nkey = \"{KEY}\"\n"
        )),
        1_800_000_000,
    );
    term.ingress(Instant::ZERO, 0, &segment(41_000, 1, 1, &[1u8; 1000]));
    for k in 1..=10u32 {
        term.ingress(
            Instant(u64::from(k)),
            0,
            &segment(40_000, 1, 1 + 1000 * k, &[]),
        );
    }
    let sent = settle(&mut term);
    // The data, the first ACK (kept: no known predecessor), compacted ACKs once the low water
    // mark (4) is passed, and the newest ACKs as they are: fewer packets than arrived.
    let sealed: Vec<&Vec<u8>> = sent.iter().filter(|w| w[9] == 51).collect();
    assert!(
        !sealed.is_empty() && sent.len() < 11,
        "{} sent, {} sealed",
        sent.len(),
        sealed.len()
    );
    assert!(
        sent.iter().all(|w| w[9] == 51 || w[9] == 6),
        "nothing unauthenticated in IP-in-IP"
    );
    let compacted = sealed[0].clone();

    for w in &sent {
        gw.ingress(Instant(1_000_000_000), 0, w);
    }
    let acks: Vec<u32> = settle(&mut gw)
        .iter()
        .filter(|w| w.len() == 40)
        .map(|w| u32::from_be_bytes([w[28], w[29], w[30], w[31]]))
        .collect();
    // 1001 passed as it was; the compacted one stands for 2001 … 10001: all ten come out, in
    // order.
    assert_eq!(acks, (1..=10).map(|k| 1 + 1000 * k).collect::<Vec<u32>>());
    assert_eq!(counter(&gw, "verified"), sealed.len() as u64);
    let regenerated = counter(&gw, "regenerated");

    // The same packet again: a replay, no ACK.
    gw.ingress(Instant(2_000_000_000), 0, &compacted);
    assert!(settle(&mut gw).is_empty());
    assert_eq!(counter(&gw, "replayed"), 1);
    // A forgery: one bit of the ICV changed (the sequence number is new): no ACK.
    let mut forged = compacted.clone();
    // AH at 20: next header, length, reserved (2), SPI = epoch (4), sequence number (4) at 28,
    // ICV (16) at 32.
    forged[30] ^= 0x40; // a sequence number never used…
    forged[40] ^= 0x80; // …and an ICV that no longer matches
    gw.ingress(Instant(3_000_000_000), 0, &forged);
    assert!(settle(&mut gw).is_empty());
    assert_eq!(counter(&gw, "bad_mac"), 1);
    assert_eq!(counter(&gw, "regenerated"), regenerated, "not one ACK more");
}

/// The bytes of a SYN `10.0.1.2:sport → 10.0.2.1:80`.
fn syn(sport: u16) -> Vec<u8> {
    let ip = Ipv4Repr {
        src: Ipv4Addr::new(10, 0, 1, 2),
        dst: Ipv4Addr::new(10, 0, 2, 1),
        protocol: IPPROTO_TCP,
        ttl: 63,
        ident: 7,
        dscp_ecn: 0,
        payload_len: 0,
    };
    let tcp = TcpRepr {
        src_port: sport,
        dst_port: 80,
        seq: SeqNumber(1000),
        flags: satpep_proto::wire::TcpFlags::SYN,
        window: 20_000,
        mss: Some(1460),
        ..TcpRepr::default()
    };
    let pkt = satpep_proto::wire::emit_tcp_packet(&ip, &tcp, |_| ()).expect("no payload");
    let mut wire = Vec::new();
    pkt.write_wire(&mut wire);
    wire
}

#[test]
fn the_connection_high_water_mark_keeps_the_peak_after_the_table_empties() {
    let mut p = Pipeline::new(
        &config(
            "interfaces = [\"a\", \"b\"]\n\
             middlebox = { kind = \"split_tcp\", max_embryonic = 3, connect_timeout = \"1s\" }\n",
        ),
        0,
    );
    for port in 1..=5 {
        p.ingress(Instant(port), 0, &syn(port as u16));
    }
    drain(&mut p);
    // Three half-open flows held, two SYNs passed through unsplit.
    assert_eq!(p.middlebox().open_connections(), Some(3));
    assert_eq!(p.counters().max_connections, 3);
    // Nobody answers: the handshake deadline frees them all; the peak stays.
    p.handle_timeout(Instant(Duration::from_secs(2).as_nanos()));
    drain(&mut p);
    assert_eq!(p.middlebox().open_connections(), Some(0));
    assert_eq!(p.counters().max_connections, 3);
}
