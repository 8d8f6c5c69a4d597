use std::collections::BTreeMap;
use std::net::Ipv4Addr;

use etherparse::{Ipv4HeaderSlice, TcpHeaderSlice};
use proptest::prelude::*;

use super::trailer::{self, Trailer};
use super::*;
use crate::link::{QueueDisc, QueuedPacket};
use crate::node::{Node, Packet, PortId, MAX_HEADER};
use crate::time::{Duration, Instant};
use crate::wire::{
    emit_ipv4_tcp, parse_ipv4_tcp, Ipv4Repr, SackBlocks, SeqNumber, TcpFlags, TcpRepr, IPPROTO_TCP,
};

const SRC: Ipv4Addr = Ipv4Addr::new(10, 0, 3, 1);
const TUN_SRC: Ipv4Addr = Ipv4Addr::new(192, 168, 3, 1);
const TUN_DST: Ipv4Addr = Ipv4Addr::new(192, 168, 1, 1);

#[derive(Clone, Copy, Debug)]
enum Kind {
    Pure,
    Data,
    Fin,
    Urg,
    Sack,
}

fn seg(flow: u8, ack: u32, kind: Kind, id: u64) -> Packet {
    let ip = Ipv4Repr {
        src: SRC,
        dst: Ipv4Addr::new(10, 0, 0, 1),
        protocol: IPPROTO_TCP,
        ttl: 64,
        ident: id as u16,
        dscp_ecn: 0,
        payload_len: 0,
    };
    let mut tcp = TcpRepr {
        src_port: 5000 + u16::from(flow),
        dst_port: 40001,
        seq: SeqNumber(1),
        ack: Some(SeqNumber(ack)),
        window: 50000,
        ..TcpRepr::default()
    };
    match kind {
        Kind::Pure => {}
        Kind::Data => tcp.payload_len = 100,
        Kind::Fin => tcp.flags = TcpFlags::FIN,
        Kind::Urg => tcp.flags = TcpFlags::URG,
        Kind::Sack => {
            let mut s = SackBlocks::default();
            s.push(SeqNumber(ack + 1000), SeqNumber(ack + 2000));
            tcp.sack = s;
        }
    }
    let mut p = Packet::build(tcp.payload_len, |b| emit_ipv4_tcp(&ip, &tcp, b));
    p.id = id;
    p.flow = u32::from(flow);
    p
}

fn queue(mode: AckMode, low: u32, high: u32) -> AckQueue {
    let cfg = AckQueueConfig {
        low_water: low,
        high_water: high,
        tunnel_src: Some(TUN_SRC),
        tunnel_dst: Some(TUN_DST),
        ..AckQueueConfig::default()
    };
    AckQueue::new(mode, &cfg, Some(1000), None)
}

fn offer(q: &mut AckQueue, p: Packet) {
    let e = QueuedPacket {
        pkt: p,
        arrival: 0,
        enqueued_at: Instant::ZERO,
    };
    assert!(q.enqueue(Instant::ZERO, e).is_ok());
}

fn ids(q: &AckQueue) -> Vec<u64> {
    q.iter().map(|e| e.pkt.id).collect()
}

#[test]
fn suppression_waits_for_the_low_water_mark_then_leaves_the_newest() {
    let mut q = queue(AckMode::Suppression, 4, 60);
    for k in 1..=10u32 {
        offer(&mut q, seg(0, 1024 * k, Kind::Pure, u64::from(k)));
    }
    // 1 has no known predecessor (never removed); at 5 queued, 2–4 go; at 8 queued again, 5–7.
    assert_eq!(ids(&q), [1, 8, 9, 10]);
    assert_eq!((q.stats().removed, q.removed()), (6, 6));
    assert_eq!(q.len_bytes(), 4 * 40);
}

#[test]
fn suppression_keeps_one_ack_per_high_water_run() {
    let mut q = queue(AckMode::Suppression, 0, 5);
    for k in 1..=10u32 {
        offer(&mut q, seg(0, 1024 * k, Kind::Pure, u64::from(k)));
    }
    // 7 stands for 2..=6 (five, the high water mark): 7 itself stays; 10 stands for 8 and 9.
    assert_eq!(ids(&q), [1, 7, 10]);
    assert_eq!(q.dequeue(Instant::ZERO).map(|e| e.pkt.id), Some(1));
    offer(&mut q, seg(0, 1024 * 11, Kind::Pure, 11));
    assert_eq!(ids(&q), [7, 11], "11 takes over 10's run (3)");
}

#[test]
fn duplicates_and_their_first_ack_stay() {
    let mut q = queue(AckMode::Suppression, 0, 60);
    let acks = [1, 2, 3, 3, 3, 3, 4, 5];
    for (i, &a) in acks.iter().enumerate() {
        offer(&mut q, seg(0, 1024 * a, Kind::Pure, i as u64));
    }
    // 2 goes (3 supersedes it); the first 3 stays (next is no greater) and so do the 3
    // duplicates; 4 goes (5 supersedes it).
    assert_eq!(ids(&q), [0, 2, 3, 4, 5, 7]);
}

fn queue_dups(mode: AckMode, low: u32, high: u32, kept: Option<u32>) -> AckQueue {
    let cfg = AckQueueConfig {
        low_water: low,
        high_water: high,
        unsuppressed_duplicates: kept,
        tunnel_src: Some(TUN_SRC),
        tunnel_dst: Some(TUN_DST),
        ..AckQueueConfig::default()
    };
    AckQueue::new(mode, &cfg, Some(1000), None)
}

/// ACK numbers (in units of 1024) of the stream the sender sees: compacted ACKs expanded.
fn expanded(sent: &[Packet]) -> Vec<u32> {
    let mut acks = Vec::new();
    for p in sent {
        let mut out = Vec::new();
        if AckExpander::expand(p, |a| a == TUN_SRC, ExpansionLimit::NONE, &mut out).is_err() {
            out.push(p.clone());
        }
        for o in out {
            let (_, tcp) = parse_ipv4_tcp(o.header(), 0).expect("valid");
            acks.push(tcp.ack.expect("ack").0 / 1024);
        }
    }
    acks
}

/// The paper's §5 refinement: of six duplicates of 3, the first three stay; the 4th and 5th
/// go, each in favour of the next ACK of the flow, and the 6th goes when 4 arrives.
#[test]
fn suppression_keeps_three_duplicates_with_the_refinement() {
    let acks = [1, 2, 3, 3, 3, 3, 3, 3, 3, 4, 5];
    let run = |kept| {
        let mut q = queue_dups(AckMode::Suppression, 0, 60, kept);
        for (i, &a) in acks.iter().enumerate() {
            offer(&mut q, seg(0, 1024 * a, Kind::Pure, i as u64));
        }
        (ids(&q), q.stats())
    };
    let (kept_all, st) = run(None);
    // Without it every duplicate stays (ids 3–8), as in `duplicates_and_their_first_ack_stay`.
    assert_eq!(kept_all, [0, 2, 3, 4, 5, 6, 7, 8, 10]);
    assert_eq!(
        (st.removed, st.duplicates, st.duplicates_removed),
        (2, 6, 0)
    );
    let (three, st) = run(Some(3));
    // 6 goes when 7 arrives, 7 when 8, 8 when 9 (ack 4), 9 when 10 (ack 5).
    assert_eq!(three, [0, 2, 3, 4, 5, 10]);
    assert_eq!(
        (st.removed, st.duplicates, st.duplicates_removed),
        (5, 6, 3)
    );
    let (none, st) = run(Some(0));
    // 0 kept: every duplicate goes, then the first ack 3 (id 2) in favour of ack 4 (id 9).
    assert_eq!(none, [0, 10]);
    assert_eq!((st.removed, st.duplicates_removed), (9, 6));
}

/// Each acknowledgement number gets its own three; an older number (reordering) neither counts
/// as a duplicate nor restarts the count, and a SACK-bearing duplicate counts but stays.
#[test]
fn duplicate_count_restarts_per_ack_number_and_ignores_older_numbers() {
    let mut q = queue_dups(AckMode::Suppression, 0, 60, Some(3));
    let arrivals = [
        (5, Kind::Pure), // 0: first of the flow
        (5, Kind::Pure), // 1–3: duplicates 1–3, kept
        (5, Kind::Pure),
        (5, Kind::Sack),
        (4, Kind::Pure), // 4: older number, protected, not a duplicate
        (5, Kind::Pure), // 5: duplicate 4: goes when 6 arrives
        (5, Kind::Sack), // 6: duplicate 5 with SACK: never removed
        (6, Kind::Pure), // 7: new number, count restarts
        (6, Kind::Pure), // 8–10: duplicates 1–3 of 6, kept
        (6, Kind::Pure),
        (6, Kind::Pure),
        (6, Kind::Pure), // 11: duplicate 4 of 6: goes when 12 arrives
        (7, Kind::Pure), // 12
    ];
    for (i, &(a, kind)) in arrivals.iter().enumerate() {
        offer(&mut q, seg(0, 1024 * a, kind, i as u64));
    }
    assert_eq!(ids(&q), [0, 1, 2, 3, 4, 6, 7, 8, 9, 10, 12]);
    let st = q.stats();
    assert_eq!(
        (st.duplicates, st.duplicates_removed, st.removed),
        (9, 2, 2)
    );
}

/// Duplicates wait in the queue until the low water mark is passed, like any ACK, and count
/// towards the high water mark's run (here 3 removed ACKs per survivor).
#[test]
fn excess_duplicates_respect_the_water_marks() {
    let mut q = queue_dups(AckMode::Suppression, 6, 60, Some(1));
    for (i, a) in [1, 2, 2, 2, 2, 2].into_iter().enumerate() {
        offer(&mut q, seg(0, 1024 * a, Kind::Pure, i as u64));
    }
    assert_eq!(
        ids(&q),
        [0, 1, 2, 3, 4, 5],
        "6 queued: not above the low water mark"
    );
    offer(&mut q, seg(0, 1024 * 2, Kind::Pure, 6));
    // 7 queued: duplicates 2–5 of ack 2 (ids 3–6) may go; each goes into the next.
    assert_eq!(ids(&q), [0, 1, 2, 6]);
    let mut q = queue_dups(AckMode::Suppression, 0, 3, Some(1));
    for (i, a) in [1, 2, 2, 2, 2, 2, 2, 2, 2].into_iter().enumerate() {
        offer(&mut q, seg(0, 1024 * a, Kind::Pure, i as u64));
    }
    // Excess duplicates ids 3–8: 6 stands for 3, 4, 5 (three); 8 for 7.
    assert_eq!(ids(&q), [0, 1, 2, 6, 8]);
}

/// With compaction the removed duplicates are not in the trailer: the sender sees ack 3 four
/// times (the new one and three duplicates), then 4 and 5, each once.
#[test]
fn compaction_passes_three_duplicates_and_regenerates_only_new_acks() {
    let acks = [1, 2, 3, 3, 3, 3, 3, 3, 3, 4, 5];
    let mut q = queue_dups(AckMode::Compaction, 0, 60, Some(3));
    for (i, &a) in acks.iter().enumerate() {
        offer(&mut q, seg(0, 1024 * a, Kind::Pure, i as u64));
    }
    let sent: Vec<Packet> = std::iter::from_fn(|| q.dequeue(Instant::ZERO))
        .map(|e| e.pkt)
        .collect();
    let sent_ids: Vec<u64> = sent.iter().map(|p| p.id).collect();
    assert_eq!(sent_ids, [0, 2, 3, 4, 5, 10]);
    // id 2 stands for id 1 (one ACK, 1024 bytes); id 10 for id 9 (ack 4) and, outside the
    // trailer, the duplicates ids 6–8.
    let trailers: Vec<Option<Trailer>> = sent
        .iter()
        .map(|p| trailer::parse(p.header(), 0).ok().and_then(|t| t.trailer))
        .collect();
    let one = Some(Trailer {
        count: 1,
        bytes: 1024,
    });
    assert_eq!(trailers, [None, one, None, None, None, one]);
    assert_eq!(expanded(&sent), [1, 2, 3, 3, 3, 3, 4, 5]);
    let st = q.stats();
    assert_eq!(
        (st.removed, st.duplicates_removed, st.compacted_sent),
        (5, 3, 2)
    );
    // Without the refinement every duplicate reaches the sender.
    let mut q = queue_dups(AckMode::Compaction, 0, 60, None);
    for (i, &a) in acks.iter().enumerate() {
        offer(&mut q, seg(0, 1024 * a, Kind::Pure, i as u64));
    }
    let sent: Vec<Packet> = std::iter::from_fn(|| q.dequeue(Instant::ZERO))
        .map(|e| e.pkt)
        .collect();
    assert_eq!(expanded(&sent), [1, 2, 3, 3, 3, 3, 3, 3, 3, 4, 5]);
}

/// Filtering has its own duplicate rule (`filter_duplicates`); the refinement does not apply.
#[test]
fn filtering_ignores_unsuppressed_duplicates() {
    let mut q = queue_dups(AckMode::Filtering, 0, 60, Some(0));
    for (i, a) in [1, 2, 2, 2, 3].into_iter().enumerate() {
        offer(&mut q, seg(0, 1024 * a, Kind::Pure, i as u64));
    }
    // Nothing goes: 1's successor is a duplicate (acknowledges no more), as without the option.
    assert_eq!(ids(&q), [0, 1, 2, 3, 4]);
    assert_eq!(q.stats().duplicates_removed, 0);
}

#[test]
fn filtering_replace_head_takes_the_removed_place() {
    let cfg = AckQueueConfig {
        replace_head: true,
        ..AckQueueConfig::default()
    };
    let mut q = AckQueue::new(AckMode::Filtering, &cfg, Some(100), None);
    offer(&mut q, seg(0, 1024, Kind::Pure, 0));
    q.dequeue(Instant::ZERO);
    offer(&mut q, seg(0, 2048, Kind::Pure, 1));
    offer(&mut q, seg(1, 1024, Kind::Data, 2));
    offer(&mut q, seg(0, 3072, Kind::Pure, 3));
    // 3 removes 1 and takes its place, ahead of flow 1's data.
    assert_eq!(ids(&q), [3, 2]);
}

#[test]
fn filtering_acks_first_skips_data_of_other_flows_only() {
    let cfg = AckQueueConfig {
        acks_first: true,
        ..AckQueueConfig::default()
    };
    let mut q = AckQueue::new(AckMode::Filtering, &cfg, Some(100), None);
    offer(&mut q, seg(1, 500, Kind::Data, 0));
    offer(&mut q, seg(1, 600, Kind::Pure, 1));
    offer(&mut q, seg(0, 1024, Kind::Pure, 2));
    let order: Vec<u64> = std::iter::from_fn(|| q.dequeue(Instant::ZERO))
        .map(|e| e.pkt.id)
        .collect();
    // Flow 1's ACK may not overtake flow 1's data; flow 0's ACK may.
    assert_eq!(order, [2, 0, 1]);
}

#[test]
fn compaction_then_expansion_restores_the_ack_stream() {
    let mut q = queue(AckMode::Compaction, 4, 60);
    for k in 1..=10u32 {
        offer(&mut q, seg(0, 1024 * k, Kind::Pure, u64::from(k)));
    }
    let sent: Vec<Packet> = std::iter::from_fn(|| q.dequeue(Instant::ZERO))
        .map(|e| e.pkt)
        .collect();
    assert_eq!(sent.len(), 4);
    assert_eq!(q.stats().compacted_sent, 1);
    // The second packet is tunnelled: 20 + 40 + 3 bytes, trailer 6 ACKs / 6144 bytes.
    let t = trailer::parse(sent[1].header(), 0).expect("tunnel");
    assert_eq!(sent[1].header_len(), 63);
    assert_eq!(
        t.trailer,
        Some(Trailer {
            count: 6,
            bytes: 6144
        })
    );
    assert_eq!((t.src, t.dst), (TUN_SRC, TUN_DST));
    let mut acks = Vec::new();
    for p in &sent {
        let mut out = Vec::new();
        match AckExpander::expand(p, |a| a == TUN_SRC, ExpansionLimit::NONE, &mut out) {
            Ok(_) => {}
            Err(_) => out.push(p.clone()), // not tunnelled
        }
        for o in out {
            acks.push(
                parse_ipv4_tcp(o.header(), 0)
                    .expect("valid")
                    .1
                    .ack
                    .expect("ack")
                    .0,
            );
        }
    }
    let expect: Vec<u32> = (1..=10).map(|k| 1024 * k).collect();
    assert_eq!(acks, expect);
}

#[test]
fn compaction_stops_merging_at_the_trailer_limits() {
    // 200 ACKs of 1000 bytes each: the byte total caps a survivor at 65 ACKs (65 000 bytes).
    let mut q = queue(AckMode::Compaction, 0, 1000);
    for k in 1..=200u32 {
        offer(&mut q, seg(0, 1000 * k, Kind::Pure, u64::from(k)));
    }
    let sent: Vec<Packet> = std::iter::from_fn(|| q.dequeue(Instant::ZERO))
        .map(|e| e.pkt)
        .collect();
    for p in &sent {
        if let Ok(t) = trailer::parse(p.header(), 0) {
            let tr = t.trailer.expect("trailer");
            assert!(u32::from(tr.bytes) <= 65_535 && tr.bytes == u16::from(tr.count) * 1000);
        }
    }
    // 200 = 1 (first, no predecessor) + survivors each standing for at most 66 ACKs.
    assert_eq!(sent.len(), 5);
}

/// An independent checksum check (etherparse's own routines, not ours).
fn etherparse_checksums_ok(h: &[u8]) -> bool {
    let (Ok(ip), Ok(tcp)) = (
        Ipv4HeaderSlice::from_slice(h),
        TcpHeaderSlice::from_slice(&h[20..]),
    ) else {
        return false;
    };
    ip.to_header().calc_header_checksum() == ip.header_checksum()
        && tcp.calc_checksum_ipv4(&ip, &[]).ok() == Some(tcp.checksum())
}

fn tunnel(ack: u32, count: u8, bytes: u16, src: Ipv4Addr, kind: Kind) -> Packet {
    let inner = seg(0, ack, kind, 9);
    let mut buf = [0u8; MAX_HEADER];
    let n = trailer::encapsulate(
        inner.header(),
        Trailer { count, bytes },
        src,
        TUN_DST,
        1,
        &mut buf,
    )
    .expect("fits");
    Packet::new(&buf[..n], 0)
}

#[test]
fn expander_steps_acks_up_to_the_received_one_with_valid_checksums() {
    // 333 bytes per deleted ACK: below the default `min_ack_bytes`, so lift it here.
    let cfg = AckExpanderConfig {
        compactors: vec![TUN_SRC],
        min_ack_bytes: 1,
        ..AckExpanderConfig::default()
    };
    let mut x = AckExpander::new(&cfg);
    x.handle_packet(
        Instant::ZERO,
        PortId(1),
        tunnel(100_000, 3, 1000, TUN_SRC, Kind::Pure),
    );
    let out: Vec<Packet> = std::iter::from_fn(|| x.poll_transmit(Instant::ZERO))
        .map(|t| t.pkt)
        .collect();
    let acks: Vec<u32> = out
        .iter()
        .map(|p| {
            assert!(etherparse_checksums_ok(p.header()), "checksum");
            parse_ipv4_tcp(p.header(), 0)
                .expect("valid")
                .1
                .ack
                .expect("ack")
                .0
        })
        .collect();
    // 1000 bytes over 3 ACKs: 100 000 − (1000 − ⌊j·1000/3⌋) for j = 0, 1, 2, then the received 100 000.
    assert_eq!(acks, [99_000, 99_333, 99_666, 100_000]);
    assert_eq!(x.stats().regenerated, 3);
}

#[test]
fn expander_drops_and_counts_forgeries_and_strangers() {
    let cfg = AckExpanderConfig {
        compactors: vec![TUN_SRC],
        ..AckExpanderConfig::default()
    };
    let mut x = AckExpander::new(&cfg);
    let t0 = Instant::ZERO;
    x.handle_packet(
        t0,
        PortId(1),
        tunnel(5000, 3, 3000, Ipv4Addr::new(6, 6, 6, 6), Kind::Pure),
    );
    x.handle_packet(t0, PortId(1), tunnel(5000, 0, 3000, TUN_SRC, Kind::Pure)); // zero count
    x.handle_packet(t0, PortId(1), tunnel(5000, 9, 8, TUN_SRC, Kind::Pure)); // bytes < count
    let mut bad = tunnel(5000, 3, 3000, TUN_SRC, Kind::Pure);
    bad.header_mut()[20 + 28] ^= 1; // inner ack changed: inner TCP checksum wrong
    x.handle_packet(t0, PortId(1), bad);
    let mut short = tunnel(5000, 3, 3000, TUN_SRC, Kind::Pure);
    let h = short.header()[..short.header_len() - 1].to_vec();
    short.set_header(&h); // outer length now disagrees
    x.handle_packet(t0, PortId(1), short);
    assert!(x.poll_transmit(t0).is_none());
    assert_eq!((x.stats().unknown_source, x.stats().malformed), (1, 4));
    // Data packets with a trailer are refused too.
    let mut inner = seg(0, 5000, Kind::Data, 1);
    inner.payload_len = 0; // header claims 100 bytes of data: inner lengths disagree
    x.handle_packet(t0, PortId(1), tunnel(5000, 1, 100, TUN_SRC, Kind::Data));
    assert_eq!(x.stats().malformed, 5);
}

#[test]
fn spacing_releases_n_tokens_per_ack_tov() {
    let cfg = AckExpanderConfig {
        compactors: vec![TUN_SRC],
        spacing: true,
        spacing_tokens: 4,
        ..AckExpanderConfig::default()
    };
    let mut x = AckExpander::new(&cfg);
    let mut log: Vec<(u64, u32)> = Vec::new();
    let ms = |m: u64| Instant::ZERO + Duration::from_millis(m);
    let drain = |x: &mut AckExpander, now: Instant, log: &mut Vec<(u64, u32)>| {
        while let Some(t) = x.poll_transmit(now) {
            let a = parse_ipv4_tcp(t.pkt.header(), 0)
                .expect("ack")
                .1
                .ack
                .expect("a")
                .0;
            log.push((now.as_nanos() / 1_000_000, a));
        }
    };
    let step_to = |x: &mut AckExpander, end: u64, log: &mut Vec<(u64, u32)>| {
        while let Some(t) = x.poll_timeout().filter(|&t| t <= ms(end)) {
            x.handle_timeout(t);
            drain(x, t, log);
        }
    };
    // Normal ACKs every 20 ms: released at once; the mean inter-arrival becomes 20 ms.
    for k in 0..5u64 {
        x.handle_packet(
            ms(20 * k),
            PortId(1),
            seg(0, 1000 * (k as u32 + 1), Kind::Pure, k),
        );
        drain(&mut x, ms(20 * k), &mut log);
    }
    // A compacted ACK standing for 8 at 100 ms: ack_iat = 20 ms (the normal mean).
    x.handle_packet(
        ms(100),
        PortId(1),
        tunnel(13_000, 7, 7000, TUN_SRC, Kind::Pure),
    );
    drain(&mut x, ms(100), &mut log);
    step_to(&mut x, 299, &mut log);
    // The next, standing for 10, 200 ms later: ack_iat = 20 ms again.
    x.handle_packet(
        ms(300),
        PortId(1),
        tunnel(23_000, 9, 9_000, TUN_SRC, Kind::Pure),
    );
    drain(&mut x, ms(300), &mut log);
    step_to(&mut x, 1000, &mut log);
    let times: Vec<u64> = log.iter().map(|&(t, _)| t).collect();
    #[rustfmt::skip]
    assert_eq!(times, [
        0, 20, 40, 60, 80,
        100, 180, 180, 180, 180, 240, 240, 240,
        300, 380, 380, 380, 380, 460, 460, 460, 460, 480,
    ]);
    let acks: Vec<u32> = log.iter().map(|&(_, a)| a).collect();
    assert!(acks.windows(2).all(|w| w[0] < w[1]), "order kept: {acks:?}");
}

#[test]
fn fuzz_body_smoke_deterministic() {
    let mut rng = crate::rand::Rng::new(7, 0);
    for _ in 0..2000 {
        let len = (rng.next_u32() % 130) as usize;
        let data: Vec<u8> = (0..len).map(|_| rng.next_u32() as u8).collect();
        fuzzing::expander_input(&data);
    }
}

/// One step of a random return-link workload.
#[derive(Clone, Debug)]
enum Op {
    /// An ACK-bearing segment of `flow`: `adv` = 0 repeats the flow's last ack (a duplicate).
    Arrive { flow: u8, adv: u16, kind: u8 },
    /// The link takes the head.
    Send,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (0u8..3, prop_oneof![Just(0u16), 1u16..3000], 0u8..10)
            .prop_map(|(flow, adv, kind)| Op::Arrive { flow, adv, kind }),
        1 => Just(Op::Send),
    ]
}

/// Run `ops` through `q`; returns (packets sent in order, the arrival facts by id).
/// Per packet id: (flow, protected, ack number).
type Facts = BTreeMap<u64, (u8, bool, u32)>;

fn run(q: &mut AckQueue, ops: &[Op]) -> (Vec<Packet>, Facts) {
    let mut last = [1000u32; 3];
    let mut facts = BTreeMap::new(); // id → (flow, protected, ack)
    let mut sent = Vec::new();
    let mut next_id = 0;
    for op in ops {
        match *op {
            Op::Arrive { flow, adv, kind } => {
                let kind = match kind {
                    0 => Kind::Data,
                    1 => Kind::Fin,
                    2 => Kind::Urg,
                    3 => Kind::Sack,
                    _ => Kind::Pure,
                };
                let f = usize::from(flow);
                let ack = last[f] + u32::from(adv);
                let dup = adv == 0;
                last[f] = ack;
                let protected = dup || !matches!(kind, Kind::Pure);
                facts.insert(next_id, (flow, protected, ack));
                offer(q, seg(flow, ack, kind, next_id));
                next_id += 1;
            }
            Op::Send => sent.extend(q.dequeue(Instant::ZERO).map(|e| e.pkt)),
        }
    }
    sent.extend(std::iter::from_fn(|| q.dequeue(Instant::ZERO)).map(|e| e.pkt));
    (sent, facts)
}

/// Per packet id of `run(ops)`: for each duplicate ACK (a pure ACK, SACK or URG allowed,
/// repeating its flow's highest number) its place in the run of duplicates of that number
/// (1, 2, …) and whether it is plain (no SACK, no URG).
fn duplicate_indices(ops: &[Op]) -> BTreeMap<u64, (u32, bool)> {
    let (mut seen, mut run) = ([false; 3], [0u32; 3]);
    let mut out = BTreeMap::new();
    let mut id = 0;
    for op in ops {
        let Op::Arrive { flow, adv, kind } = *op else {
            continue;
        };
        let f = usize::from(flow);
        // Kinds as `run` maps them: 0 data, 1 FIN, 2 URG, 3 SACK, else pure.
        let pure = kind >= 2;
        if adv > 0 || !seen[f] {
            run[f] = 0;
        } else if pure {
            run[f] += 1;
            out.insert(id, (run[f], kind >= 4));
        }
        seen[f] = true;
        id += 1;
    }
    out
}

fn check_invariants(q: &AckQueue, sent: &[Packet], facts: &Facts) -> Result<(), TestCaseError> {
    let ids: Vec<u64> = sent.iter().map(|p| p.id).collect();
    prop_assert_eq!(q.len_packets(), 0);
    prop_assert_eq!(q.len_bytes(), 0);
    prop_assert_eq!(ids.len() as u64 + q.stats().removed, facts.len() as u64);
    for (id, &(_, protected, _)) in facts {
        if protected {
            prop_assert!(ids.contains(id), "protected packet {} was removed", id);
        }
    }
    for flow in 0..3u8 {
        let of_flow: Vec<u64> = ids.iter().copied().filter(|i| facts[i].0 == flow).collect();
        prop_assert!(
            of_flow.windows(2).all(|w| w[0] < w[1]),
            "flow {} reordered",
            flow
        );
    }
    Ok(())
}

proptest! {
    #[test]
    fn suppression_never_removes_protected_acks_or_reorders(
        ops in proptest::collection::vec(op(), 1..300), low in 0u32..6, high in 1u32..80
    ) {
        let mut q = queue(AckMode::Suppression, low, high);
        let (sent, facts) = run(&mut q, &ops);
        check_invariants(&q, &sent, &facts)?;
    }

    #[test]
    fn filtering_never_removes_protected_acks_or_reorders(
        ops in proptest::collection::vec(op(), 1..300), replace_head: bool, acks_first: bool
    ) {
        let cfg = AckQueueConfig { replace_head, acks_first, ..AckQueueConfig::default() };
        let mut q = AckQueue::new(AckMode::Filtering, &cfg, Some(1000), None);
        let (sent, facts) = run(&mut q, &ops);
        check_invariants(&q, &sent, &facts)?;
    }

    #[test]
    fn compaction_expands_back_to_every_cumulative_ack(
        ops in proptest::collection::vec(op(), 1..300), low in 0u32..6, high in 1u32..300
    ) {
        let mut q = queue(AckMode::Compaction, low, high);
        let (sent, facts) = run(&mut q, &ops);
        check_invariants(&q, &sent, &facts)?;
        // Expanded, each flow's ACK numbers never go down, every protected and every sent ACK
        // number appears, and the regenerated count equals the removed count.
        let mut regenerated = 0;
        let mut per_flow: BTreeMap<u8, Vec<u32>> = BTreeMap::new();
        for p in &sent {
            let mut out = Vec::new();
            match AckExpander::expand(p, |a| a == TUN_SRC, ExpansionLimit::NONE, &mut out) {
                Ok(x) => {
                    fuzzing::check_output(p, &out);
                    regenerated += x.acks as u64 - 1;
                }
                Err(_) => out.push(p.clone()),
            }
            for o in out {
                let (_, tcp) = parse_ipv4_tcp(o.header(), o.payload_len).expect("valid");
                per_flow.entry(facts[&p.id].0).or_default().push(tcp.ack.expect("ack").0);
            }
        }
        prop_assert_eq!(regenerated, q.stats().removed);
        for acks in per_flow.values() {
            prop_assert!(acks.windows(2).all(|w| w[0] <= w[1]));
        }
    }

    #[test]
    fn the_first_n_duplicates_of_every_ack_number_always_pass(
        ops in proptest::collection::vec(op(), 1..300), low in 0u32..6, high in 1u32..80,
        kept in 0u32..5, compact: bool
    ) {
        let mode = if compact { AckMode::Compaction } else { AckMode::Suppression };
        let mut q = queue_dups(mode, low, high, Some(kept));
        let (sent, facts) = run(&mut q, &ops);
        let dups = duplicate_indices(&ops);
        let ids: Vec<u64> = sent.iter().map(|p| p.id).collect();
        prop_assert_eq!(ids.len() as u64 + q.stats().removed, facts.len() as u64);
        let (mut excess, mut removed_dups) = (0, 0);
        for (id, &(_, protected, _)) in &facts {
            let removed = !ids.contains(id);
            match dups.get(id) {
                // A duplicate: among the first `kept` it passes; past them only plain ones go.
                Some(&(k, plain)) => {
                    excess += u64::from(k > kept);
                    removed_dups += u64::from(removed);
                    prop_assert!(!removed || (k > kept && plain), "duplicate {} of id {} removed", k, id);
                }
                None => prop_assert!(!(removed && protected), "protected packet {} removed", id),
            }
        }
        prop_assert_eq!(q.stats().duplicates, dups.len() as u64);
        prop_assert_eq!(q.stats().duplicates_removed, removed_dups);
        prop_assert!(removed_dups <= excess);
        for flow in 0..3u8 {
            let of_flow: Vec<u64> = ids.iter().copied().filter(|i| facts[i].0 == flow).collect();
            prop_assert!(of_flow.windows(2).all(|w| w[0] < w[1]), "flow {} reordered", flow);
        }
        if compact {
            // Removed duplicates are not regenerated; every other removed ACK is.
            let mut regenerated = 0;
            for p in &sent {
                let mut out = Vec::new();
                if let Ok(x) = AckExpander::expand(p, |a| a == TUN_SRC, ExpansionLimit::NONE, &mut out) {
                    regenerated += x.acks as u64 - 1;
                }
            }
            prop_assert_eq!(regenerated, q.stats().removed - removed_dups);
        }
    }

    #[test]
    fn expander_fuzz_body_never_panics(data in proptest::collection::vec(any::<u8>(), 0..140)) {
        fuzzing::expander_input(&data);
    }
}

#[test]
fn a_compacting_link_accounts_for_every_packet() {
    use crate::link::{Link, LinkConfig, QueueConfig, QueueKind};
    use crate::time::Bitrate;
    let config = LinkConfig {
        rate: Bitrate(9600),
        delay: Duration::from_millis(200),
        queue: QueueConfig {
            kind: QueueKind::AckCompaction,
            ack: AckQueueConfig {
                tunnel_src: Some(TUN_SRC),
                tunnel_dst: Some(TUN_DST),
                ..AckQueueConfig::default()
            },
            ..QueueConfig::default()
        },
        ..LinkConfig::default()
    };
    assert_eq!(config.validate(), Ok(()));
    let mut l = Link::new(&config, crate::rand::Rng::new(1, 1));
    // 100 ACKs 1 ms apart: a 40-byte ACK takes 33 ms at 9.6 kb/s, so the queue builds up.
    let mut out = Vec::new();
    for k in 0..100u32 {
        let now = Instant::ZERO + Duration::from_millis(u64::from(k));
        l.handle_timeout(now);
        l.handle_packet(
            now,
            PortId(0),
            seg(0, 1024 * (k + 1), Kind::Pure, u64::from(k)),
        );
        out.extend(std::iter::from_fn(|| l.poll_transmit(now)).map(|t| t.pkt));
    }
    let mut now = Instant::ZERO + Duration::from_millis(100);
    while let Some(t) = l.poll_timeout() {
        now = now.max(t);
        l.handle_timeout(now);
        out.extend(std::iter::from_fn(|| l.poll_transmit(now)).map(|t| t.pkt));
    }
    let st = l.stats();
    assert_eq!(st.arrivals, 100);
    assert_eq!(
        st.arrivals,
        st.delivered_packets + st.removed + st.queue_drops
    );
    // Expanded at the hub, the 100 ACK numbers come back exactly.
    let mut acks = Vec::new();
    for p in &out {
        let mut x = Vec::new();
        if AckExpander::expand(p, |a| a == TUN_SRC, ExpansionLimit::NONE, &mut x).is_err() {
            x.push(p.clone());
        }
        acks.extend(x.iter().map(|o| {
            parse_ipv4_tcp(o.header(), 0)
                .expect("ok")
                .1
                .ack
                .expect("a")
                .0
        }));
    }
    assert_eq!(acks, (1..=100).map(|k| 1024 * k).collect::<Vec<u32>>());
    assert!(st.delivered_packets < 20, "{st:?}");
}

#[test]
fn per_flow_spacing_does_not_hold_one_flow_behind_another() {
    let out_after = |per_flow: bool| {
        let cfg = AckExpanderConfig {
            compactors: vec![TUN_SRC],
            spacing: true,
            spacing_per_flow: per_flow,
            ..AckExpanderConfig::default()
        };
        let mut x = AckExpander::new(&cfg);
        let ms = |m: u64| Instant::ZERO + Duration::from_millis(m);
        // Flow 0: normal ACKs 20 ms apart, then a compacted ACK for 8 at 100 ms.
        for k in 0..5u64 {
            x.handle_packet(
                ms(20 * k),
                PortId(1),
                seg(0, 1000 * (k as u32 + 1), Kind::Pure, k),
            );
            while x.poll_transmit(ms(20 * k)).is_some() {}
        }
        x.handle_packet(
            ms(100),
            PortId(1),
            tunnel(13_000, 7, 7000, TUN_SRC, Kind::Pure),
        );
        while x.poll_transmit(ms(100)).is_some() {}
        // Flow 1's first ACK at 110 ms, while flow 0's regenerated ACKs wait.
        x.handle_packet(ms(110), PortId(1), seg(1, 500, Kind::Pure, 99));
        let out: Vec<(u16, u32)> = std::iter::from_fn(|| x.poll_transmit(ms(110)))
            .map(|t| {
                let (_, tcp) = parse_ipv4_tcp(t.pkt.header(), 0).expect("ack");
                (tcp.src_port, tcp.ack.expect("a").0)
            })
            .collect();
        (out, x.spacing_queue_len())
    };
    // Shared queue: flow 1's ACK only earns a token, which releases flow 0's next ACK (7 wait,
    // flow 1's among them).
    assert_eq!(out_after(false), (vec![(5000, 7000)], 7));
    // Per flow: flow 1's ACK leaves at once; flow 0's remaining seven stay spaced.
    assert_eq!(out_after(true), (vec![(5001, 500)], 7));
}

/// ns-2's `filterAcks`: the arriving pure ACK removes every queued pure ACK of its flow with a
/// lower number, duplicates and SACK-bearing ones included; equal numbers and other flows stay.
/// RFC 3449-style filtering (the default) keeps the duplicates and the ACK they repeat.
#[test]
fn ns2_filtering_purges_older_duplicates_too() {
    let ns2 = AckQueueConfig {
        filter_duplicates: true,
        ..AckQueueConfig::default()
    };
    let run = |cfg: &AckQueueConfig| {
        let mut q = AckQueue::new(AckMode::Filtering, cfg, Some(100), None);
        offer(&mut q, seg(0, 1024, Kind::Pure, 0));
        q.dequeue(Instant::ZERO);
        offer(&mut q, seg(0, 2048, Kind::Pure, 1));
        offer(&mut q, seg(0, 2048, Kind::Pure, 2));
        offer(&mut q, seg(0, 2048, Kind::Sack, 3));
        offer(&mut q, seg(1, 512, Kind::Pure, 4));
        offer(&mut q, seg(0, 2048, Kind::Pure, 5));
        let before = ids(&q);
        offer(&mut q, seg(0, 3072, Kind::Data, 6));
        let after_data = ids(&q);
        offer(&mut q, seg(0, 3072, Kind::Pure, 7));
        (before, after_data, ids(&q))
    };
    let (before, after_data, after) = run(&ns2);
    assert_eq!(
        before,
        [1, 2, 3, 4, 5],
        "equal numbers never remove each other"
    );
    assert_eq!(
        after_data,
        [1, 2, 3, 4, 5, 6],
        "a data segment filters nothing"
    );
    assert_eq!(after, [4, 6, 7], "every lower pure ACK of flow 0 goes");
    let (_, _, rfc) = run(&AckQueueConfig::default());
    assert_eq!(
        rfc,
        [1, 2, 3, 4, 5, 6, 7],
        "duplicates and the ACK they repeat stay"
    );
}

// --- Hardening (issue 15): forged compacted ACKs, bounded expansion, bounded spacer state. ---

/// A pure ACK of flow `port` (its TCP source port), acknowledging `ack`.
fn ack_of(port: u16, ack: u32) -> Packet {
    let ip = Ipv4Repr::tcp(SRC, Ipv4Addr::new(10, 0, 0, 1), 1);
    let tcp = TcpRepr {
        src_port: port,
        dst_port: 40001,
        seq: SeqNumber(1),
        ack: Some(SeqNumber(ack)),
        window: 50000,
        ..TcpRepr::default()
    };
    Packet::build(0, |b| emit_ipv4_tcp(&ip, &tcp, b))
}

/// [`ack_of`] compacted: the trailer says `count` ACKs covering `bytes` were deleted.
fn compacted_of(port: u16, ack: u32, count: u8, bytes: u16, src: Ipv4Addr) -> Packet {
    let inner = ack_of(port, ack);
    let mut buf = [0u8; MAX_HEADER];
    let tr = Trailer { count, bytes };
    let n = trailer::encapsulate(inner.header(), tr, src, TUN_DST, 1, &mut buf).expect("fits");
    Packet::new(&buf[..n], 0)
}

fn drain_expander(x: &mut AckExpander, now: Instant) -> Vec<Packet> {
    std::iter::from_fn(|| x.poll_transmit(now).map(|t| t.pkt)).collect()
}

/// Issue 15's reproducer: a 63-byte compacted ACK claiming 255 deleted ACKs (256 ACKs,
/// 10 240 bytes, once expanded). From an address that is not a compactor: nothing comes out.
#[test]
fn forged_compacted_ack_from_a_non_peer_yields_no_ack() {
    let mut x = AckExpander::new(&AckExpanderConfig {
        compactors: vec![TUN_SRC],
        ..AckExpanderConfig::default()
    });
    let forged = compacted_of(80, 1_000_000, 255, 65_535, Ipv4Addr::new(203, 0, 113, 9));
    assert_eq!(forged.wire_len(), 63);
    for _ in 0..10 {
        x.handle_packet(Instant::ZERO, PortId(1), forged.clone());
    }
    assert!(drain_expander(&mut x, Instant::ZERO).is_empty());
    assert_eq!(x.stats().unknown_source, 10);
    assert_eq!(x.stats().regenerated + x.stats().decapsulated, 0);
}

/// The same packet with the compactor's source address (spoofed, or a compactor gone wrong):
/// at most `max_regenerated` + 1 ACKs, the rest counted as clipped; the ACKs still step evenly
/// over the claimed range up to the received one.
#[test]
fn forged_compacted_ack_from_the_peer_yields_at_most_the_bound() {
    let cfg = AckExpanderConfig {
        compactors: vec![TUN_SRC],
        ..AckExpanderConfig::default()
    };
    let mut x = AckExpander::new(&cfg);
    x.handle_packet(
        Instant::ZERO,
        PortId(1),
        compacted_of(80, 1_000_000, 255, 65_535, TUN_SRC),
    );
    let out = drain_expander(&mut x, Instant::ZERO);
    assert_eq!(out.len(), 65, "64 regenerated + the received one");
    assert_eq!(out.iter().map(Packet::wire_len).sum::<u64>(), 2_600);
    let s = x.stats();
    assert_eq!((s.regenerated, s.clipped, s.compacted), (64, 191, 1));
    let acks: Vec<u32> = out
        .iter()
        .map(|p| {
            parse_ipv4_tcp(p.header(), 0)
                .expect("valid")
                .1
                .ack
                .expect("a")
                .0
        })
        .collect();
    assert_eq!(acks[0], 1_000_000 - 65_535);
    assert_eq!(acks[64], 1_000_000);
    assert!(acks.windows(2).all(|w| w[0] < w[1]));

    // 10 240 bytes claimed by 255 ACKs (40 bytes each, less than any segment): the byte rule
    // gives ⌈10 240 / 536⌉ = 20.
    x.handle_packet(
        Instant::ZERO,
        PortId(1),
        compacted_of(80, 2_000_000, 255, 10_240, TUN_SRC),
    );
    assert_eq!(drain_expander(&mut x, Instant::ZERO).len(), 21);
    assert_eq!(x.stats().clipped, 191 + 235);
}

/// The bound: min(count, ⌈bytes / min_ack_bytes⌉, max_regenerated).
#[test]
fn expansion_limit_follows_count_bytes_and_cap() {
    let d = AckExpanderConfig::default().limit();
    let t = |count, bytes| Trailer { count, bytes };
    assert_eq!(d.regenerated(t(60, 61_440)), 60); // the paper's 1 024-byte ACKs: untouched
    assert_eq!(d.regenerated(t(64, 65_535)), 64);
    assert_eq!(d.regenerated(t(65, 65_535)), 64); // the cap
    assert_eq!(d.regenerated(t(3, 1000)), 2); // ⌈1000 / 536⌉
    assert_eq!(d.regenerated(t(1, 1)), 1);
    assert_eq!(d.regenerated(t(2, 536)), 1);
    assert_eq!(d.regenerated(t(2, 537)), 2);
    assert_eq!(ExpansionLimit::NONE.regenerated(t(255, 255)), 255);
    let capped = ExpansionLimit {
        max_regenerated: 0,
        min_ack_bytes: 1,
    };
    assert_eq!(capped.regenerated(t(9, 9000)), 0);
    let bad = |c: AckExpanderConfig| c.validate().unwrap_err();
    let ok = AckExpanderConfig {
        compactors: vec![TUN_SRC],
        ..AckExpanderConfig::default()
    };
    assert_eq!(ok.validate(), Ok(()));
    assert!(bad(AckExpanderConfig {
        min_ack_bytes: 0,
        ..ok.clone()
    })
    .starts_with("min_ack_bytes:"));
    assert!(bad(AckExpanderConfig {
        spacing_queue_limit: 0,
        ..ok.clone()
    })
    .starts_with("spacing_queue_limit:"));
    assert!(bad(AckExpanderConfig::default()).starts_with("compactors:"));
}

/// 4 096 flows each with an ACK waiting: a 4 097th flow gets no spacer (its ACKs go on
/// unspaced, counted) instead of growing the table; once one spacer is idle, it is forgotten
/// and the new flow is spaced.
#[test]
fn per_flow_spacer_cap_holds_when_every_spacer_holds_acks() {
    let mut x = AckExpander::new(&AckExpanderConfig {
        compactors: vec![TUN_SRC],
        spacing: true,
        spacing_per_flow: true,
        ..AckExpanderConfig::default()
    });
    let t0 = Instant::ZERO;
    // Two ACKs per flow, nothing polled: each spacer holds two.
    for port in 0..4096u16 {
        x.handle_packet(t0, PortId(1), ack_of(port, 1000));
        x.handle_packet(t0, PortId(1), ack_of(port, 2000));
    }
    assert_eq!((x.spacers(), x.spacing_queue_len()), (4096, 8192));
    for port in 4096..4196u16 {
        x.handle_packet(t0, PortId(1), ack_of(port, 1000));
    }
    x.handle_packet(t0, PortId(1), compacted_of(5000, 9000, 4, 4096, TUN_SRC));
    assert_eq!(x.spacers(), 4096);
    assert_eq!(x.stats().spacing_flows_refused, 100 + 5);
    assert_eq!(x.stats().spaced_normal, 8192);
    // The refused ACKs are out at once, ahead of the spaced ones.
    let first: Vec<u16> = std::iter::from_fn(|| x.poll_transmit(t0))
        .take(105)
        .map(|t| parse_ipv4_tcp(t.pkt.header(), 0).expect("ack").1.src_port)
        .collect();
    assert_eq!(first[..100], (4096..4196).collect::<Vec<u16>>()[..]);
    assert!(first[100..].iter().all(|&p| p == 5000));
}

/// Work, not time (issue 13): with 4 096 per-flow spacers all holding ACKs, the first spacer
/// timeout visits only what is due (plus a look at the next deadline), and 1 000 new flows
/// arriving while every spacer is busy are refused without a scan. Once all have drained, the
/// next new flow pays one scan of the table (4 096 entries) that forgets every idle spacer at
/// once, and the flow after it none.
#[test]
fn per_flow_spacers_cost_work_in_what_is_due_not_in_how_many_exist() {
    let mut x = AckExpander::new(&AckExpanderConfig {
        compactors: vec![TUN_SRC],
        spacing: true,
        spacing_per_flow: true,
        spacing_tokens: 1,
        ..AckExpanderConfig::default()
    });
    let visited = |x: &AckExpander| x.spacing_table_stats().expect("per flow").visited;
    let at =
        |ms: u64, port: u16| Instant::ZERO + Duration::from_micros(ms * 1000 + u64::from(port));
    // Two normal ACKs 10 ms apart (each leaves on its own token), then a compacted ACK standing
    // for 4 more: one token, so 4 wait and the spacer's timer runs at 1 × 10 ms.
    for (ms, ack) in [(0, 1000), (10, 2000)] {
        for port in 0..4096u16 {
            x.handle_packet(at(ms, port), PortId(1), ack_of(port, ack));
            assert_eq!(drain_expander(&mut x, at(ms, port)).len(), 1);
        }
    }
    for port in 0..4096u16 {
        x.handle_packet(
            at(20, port),
            PortId(1),
            compacted_of(port, 9000, 4, 4096, TUN_SRC),
        );
        assert_eq!(drain_expander(&mut x, at(20, port)).len(), 1);
    }
    assert_eq!((x.spacers(), x.spacing_queue_len()), (4096, 4 * 4096));
    assert_eq!(visited(&x), 0, "arrivals visit nothing");
    let first = x.poll_timeout().expect("a spacer is due");
    assert_eq!(first, at(30, 0));
    x.handle_timeout(first);
    assert_eq!(drain_expander(&mut x, first).len(), 1, "one spacer due");
    let due_work = visited(&x);
    assert!(
        due_work <= 3,
        "{due_work} entries visited for one due spacer"
    );

    for port in 10_000..11_000u16 {
        x.handle_packet(first, PortId(1), ack_of(port, 1000));
    }
    assert_eq!(x.stats().spacing_flows_refused, 1000);
    assert_eq!(
        visited(&x),
        due_work,
        "refused without a scan: every spacer is busy"
    );
    assert_eq!(
        drain_expander(&mut x, first).len(),
        1000,
        "refused: forwarded unspaced"
    );

    let mut now = first;
    let mut out = 0;
    while let Some(t) = x.poll_timeout() {
        now = t;
        x.handle_timeout(now);
        out += drain_expander(&mut x, now).len();
    }
    assert_eq!(
        (out, x.spacing_queue_len(), x.spacers()),
        (4 * 4096 - 1, 0, 4096)
    );
    let drained = visited(&x);
    x.handle_packet(now, PortId(1), ack_of(20_000, 1000));
    assert_eq!(
        visited(&x) - drained,
        4096,
        "one scan forgot every idle spacer"
    );
    assert_eq!(x.spacers(), 1);
    x.handle_packet(now, PortId(1), ack_of(20_001, 1000));
    assert_eq!(visited(&x) - drained, 4096);
    assert_eq!(x.stats().spacing_flows_refused, 1000);
}

/// One flow floods: its spacing queue never holds more than `spacing_queue_limit`; the oldest
/// ACKs are the ones pushed out, so the newest cumulative ACK still leaves.
#[test]
fn spacing_queue_limit_drops_the_oldest_and_counts() {
    for per_flow in [false, true] {
        let mut x = AckExpander::new(&AckExpanderConfig {
            compactors: vec![TUN_SRC],
            spacing: true,
            spacing_per_flow: per_flow,
            spacing_queue_limit: 10,
            ..AckExpanderConfig::default()
        });
        let t0 = Instant::ZERO;
        for k in 1..=25u32 {
            x.handle_packet(t0, PortId(1), ack_of(80, 1000 * k));
        }
        x.handle_packet(t0, PortId(1), compacted_of(80, 40_000, 8, 8000, TUN_SRC));
        assert_eq!(x.spacing_queue_len(), 10);
        assert_eq!(x.stats().spacing_queue_drops, 25 + 9 - 10);
        let mut out = Vec::new();
        let mut now = t0;
        for _ in 0..1000 {
            out.extend(drain_expander(&mut x, now));
            match x.poll_timeout() {
                Some(t) => {
                    now = t;
                    x.handle_timeout(now);
                }
                None => break,
            }
        }
        let acks: Vec<u32> = out
            .iter()
            .map(|p| {
                parse_ipv4_tcp(p.header(), 0)
                    .expect("ack")
                    .1
                    .ack
                    .expect("a")
                    .0
            })
            .collect();
        assert_eq!(acks.len(), 10);
        assert_eq!(acks.last(), Some(&40_000));
    }
}

#[derive(Clone, Debug)]
enum FloodOp {
    Plain { port: u16, ack: u32 },
    Compacted { port: u16, count: u8, bytes: u16 },
    Forged { count: u8 },
    Garbage(Vec<u8>),
    Wait(u64),
}

fn flood_op() -> impl Strategy<Value = FloodOp> {
    prop_oneof![
        6 => (0u16..6000, any::<u32>()).prop_map(|(port, ack)| FloodOp::Plain { port, ack }),
        2 => (0u16..6000, 1u8..=255, any::<u16>()).prop_map(|(port, count, bytes)| {
            FloodOp::Compacted { port, count, bytes: bytes.max(u16::from(count)) }
        }),
        1 => any::<u8>().prop_map(|count| FloodOp::Forged { count: count.max(1) }),
        1 => proptest::collection::vec(any::<u8>(), 0..80).prop_map(FloodOp::Garbage),
        1 => (0u64..50_000_000).prop_map(FloodOp::Wait),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// A random flood (many flows, compacted ACKs from the compactor claiming anything, forged
    /// ones from a stranger, garbage, time passing): no panic; spacers ≤ 4 096, each queue ≤
    /// its limit; every ACK in is out, waiting or counted as a queue drop; regenerated ACKs ≤
    /// `max_regenerated` per compacted ACK; nothing forged comes out.
    #[test]
    fn spacer_state_and_output_stay_bounded_under_a_flood(
        ops in proptest::collection::vec(flood_op(), 1..1500),
        per_flow in any::<bool>(),
        limit in 1usize..20,
        cap in 0u32..80,
    ) {
        let mut x = AckExpander::new(&AckExpanderConfig {
            compactors: vec![TUN_SRC],
            address: Some(TUN_DST),
            spacing: true,
            spacing_per_flow: per_flow,
            spacing_queue_limit: limit,
            max_regenerated: cap,
            ..AckExpanderConfig::default()
        });
        let mut now = Instant::ZERO;
        let (mut plain_in, mut garbage_in, mut out) = (0u64, 0u64, 0u64);
        for op in &ops {
            let before = out;
            match op {
                FloodOp::Plain { port, ack } => {
                    plain_in += 1;
                    x.handle_packet(now, PortId(1), ack_of(*port, *ack));
                }
                FloodOp::Compacted { port, count, bytes } => {
                    x.handle_packet(now, PortId(1), compacted_of(*port, 1 << 20, *count, *bytes, TUN_SRC));
                }
                FloodOp::Forged { count } => {
                    let p = compacted_of(7, 1 << 20, *count, 65_535, Ipv4Addr::new(6, 6, 6, 6));
                    x.handle_packet(now, PortId(1), p);
                }
                FloodOp::Garbage(bytes) => {
                    garbage_in += 1;
                    x.handle_packet(now, PortId(1), Packet::new(&bytes[..bytes.len().min(MAX_HEADER)], 0));
                }
                FloodOp::Wait(ns) => {
                    now += Duration::from_nanos(*ns);
                    if x.poll_timeout().is_some_and(|t| t <= now) {
                        x.handle_timeout(now);
                    }
                }
            }
            out += std::iter::from_fn(|| x.poll_transmit(now)).count() as u64;
            // One input never releases more than one whole expansion plus what waited.
            prop_assert!(out - before <= u64::from(cap) + 1 + (4096 * limit) as u64);
            prop_assert!(x.spacers() <= 4096);
            prop_assert!(x.spacing_queue_len() <= x.spacers() * limit);
        }
        let s = x.stats();
        prop_assert!(s.regenerated <= s.compacted * u64::from(cap));
        prop_assert_eq!(s.unknown_source, ops.iter().filter(|o| matches!(o, FloodOp::Forged { .. })).count() as u64);
        // Conservation: ACKs in (plain, regenerated, received compacted) = out + waiting +
        // dropped; garbage that is not for the expander passes as it came.
        prop_assert_eq!(
            plain_in + garbage_in - s.malformed + s.regenerated + s.compacted,
            out + x.spacing_queue_len() as u64 + s.spacing_queue_drops
        );
    }
}

/// `max_regenerated = 0`: a compacted ACK still counts as one, and only the received ACK
/// leaves.
#[test]
fn compacted_ack_with_nothing_regenerated_is_still_counted_as_compacted() {
    let mut x = AckExpander::new(&AckExpanderConfig {
        compactors: vec![TUN_SRC],
        max_regenerated: 0,
        ..AckExpanderConfig::default()
    });
    x.handle_packet(
        Instant::ZERO,
        PortId(1),
        compacted_of(80, 9000, 4, 4096, TUN_SRC),
    );
    assert_eq!(drain_expander(&mut x, Instant::ZERO).len(), 1);
    let s = x.stats();
    assert_eq!((s.compacted, s.regenerated, s.clipped), (1, 0, 4));
}

/// A plain tunnelled ACK (no trailer) is decapsulated and not counted as compacted, with
/// spacing or without.
#[test]
fn plain_tunnelled_ack_is_not_counted_as_compacted() {
    for spacing in [false, true] {
        let mut x = AckExpander::new(&AckExpanderConfig {
            compactors: vec![TUN_SRC],
            spacing,
            ..AckExpanderConfig::default()
        });
        let inner = ack_of(80, 5000);
        let mut h = vec![0u8; 20];
        crate::wire::ipip::write_outer_header(&mut h, 60, 0, 1, TUN_SRC, TUN_DST);
        h.extend_from_slice(inner.header());
        x.handle_packet(Instant::ZERO, PortId(1), Packet::new(&h, 0));
        let out = drain_expander(&mut x, Instant::ZERO);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].header(), inner.header());
        let s = x.stats();
        assert_eq!(
            (s.decapsulated, s.compacted, s.regenerated, s.clipped),
            (1, 0, 0, 0)
        );
    }
}

/// A plain tunnel packet around the pure ACK `ack_of(port, ack)`.
fn plain_tunnelled(port: u16, ack: u32) -> Packet {
    let inner = ack_of(port, ack);
    let mut h = vec![0u8; 20];
    crate::wire::ipip::write_outer_header(&mut h, 60, 0, 1, TUN_SRC, TUN_DST);
    h.extend_from_slice(inner.header());
    Packet::new(&h, 0)
}

fn ack_numbers(out: &[Packet]) -> Vec<u32> {
    out.iter()
        .map(|p| {
            parse_ipv4_tcp(p.header(), 0)
                .expect("ack")
                .1
                .ack
                .expect("a")
                .0
        })
        .collect()
}

/// With spacing and `return_port = 1`: a tunnelled normal ACK from port 1 queues behind the
/// regenerated ones (its token releases the next waiting ACK); from port 0 it leaves at once.
/// A data segment is never spaced.
#[test]
fn tunnelled_normal_acks_are_spaced_only_from_the_return_port() {
    let t0 = Instant::ZERO;
    for port in [0u16, 1] {
        let mut x = AckExpander::new(&AckExpanderConfig {
            compactors: vec![TUN_SRC],
            spacing: true,
            return_port: Some(1),
            ..AckExpanderConfig::default()
        });
        x.handle_packet(t0, PortId(1), compacted_of(80, 10_000, 4, 4096, TUN_SRC));
        assert_eq!(ack_numbers(&drain_expander(&mut x, t0)), [5904]);
        x.handle_packet(t0, PortId(port), plain_tunnelled(80, 11_000));
        let out = ack_numbers(&drain_expander(&mut x, t0));
        match port {
            1 => assert_eq!(out, [6928], "spaced: the next regenerated ACK leaves"),
            _ => assert_eq!(out, [11_000], "not from the return port: at once"),
        }
        // A data segment arriving on the return port passes at once, unspaced.
        let data = seg(0, 12_000, Kind::Data, 7);
        x.handle_packet(t0, PortId(1), data.clone());
        let out = drain_expander(&mut x, t0);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].header(), data.header());
        assert_eq!(x.stats().spaced_normal, 0);
    }
}

/// Tunnelled normal ACKs feed the spacer's estimate of the normal inter-arrival time, which
/// the first compacted ACK after them uses as its spacing (Samaraweera §7).
#[test]
fn tunnelled_normal_acks_set_the_spacing_of_the_next_compacted_ack() {
    let mut x = AckExpander::new(&AckExpanderConfig {
        compactors: vec![TUN_SRC],
        spacing: true,
        ..AckExpanderConfig::default()
    });
    let ms = |m: u64| Instant::ZERO + Duration::from_millis(m);
    for k in 0..3u32 {
        let at = ms(10 * u64::from(k));
        x.handle_packet(at, PortId(1), plain_tunnelled(80, 1000 * (k + 1)));
        drain_expander(&mut x, at);
    }
    x.handle_packet(ms(30), PortId(1), compacted_of(80, 9000, 4, 4096, TUN_SRC));
    assert_eq!(
        x.spacer().map(spacing::Spacer::ack_iat),
        Some(Duration::from_millis(10))
    );
}

fn test_key(b: u8) -> crate::auth::TunnelKey {
    crate::auth::TunnelKey::from_bytes(&[b; 32]).expect("32 bytes")
}

/// A keyed compactor (key byte `k`, tunnel source `src`) after ten ACKs of one flow: what it
/// sends, head first.
fn keyed_compactor_output(k: u8, src: Ipv4Addr, epoch: u32) -> (Vec<Packet>, AckQueueStats) {
    let cfg = AckQueueConfig {
        tunnel_src: Some(src),
        tunnel_dst: Some(TUN_DST),
        key: Some(test_key(k)),
        ..AckQueueConfig::default()
    };
    let mut q = AckQueue::new(AckMode::Compaction, &cfg, Some(1000), None).with_epoch(epoch);
    for k in 1..=10u32 {
        offer(&mut q, seg(0, 1024 * k, Kind::Pure, u64::from(k)));
    }
    let sent = std::iter::from_fn(|| q.dequeue(Instant::ZERO))
        .map(|e| e.pkt)
        .collect();
    (sent, q.stats())
}

fn keyed_expander(k: u8) -> AckExpander {
    AckExpander::new(&AckExpanderConfig {
        compactors: vec![TUN_SRC],
        key: Some(test_key(k)),
        ..AckExpanderConfig::default()
    })
}

fn acks_out(x: &mut AckExpander) -> Vec<u32> {
    std::iter::from_fn(|| x.poll_transmit(Instant::ZERO))
        .map(|t| {
            parse_ipv4_tcp(t.pkt.header(), 0)
                .expect("valid")
                .1
                .ack
                .expect("ack")
                .0
        })
        .collect()
}

/// With a key on both ends, the compacted ACK crosses as AH (protocol 51, 28 bytes more) and
/// expands to the same ACK stream as without one.
#[test]
fn keyed_compaction_then_expansion_restores_the_ack_stream() {
    let (sent, stats) = keyed_compactor_output(1, TUN_SRC, 1_700_000_000);
    assert_eq!(sent.len(), 4);
    assert_eq!(
        (stats.compacted_sent, stats.sealed, stats.seal_failed),
        (1, 1, 0)
    );
    assert_eq!(sent[1].header_len(), 63 + 28);
    assert_eq!(sent[1].header()[9], crate::auth::IPPROTO_AH);
    assert_eq!(&sent[1].header()[24..28], &1_700_000_000u32.to_be_bytes());
    let mut x = keyed_expander(1);
    for p in &sent {
        x.handle_packet(Instant::ZERO, PortId(1), p.clone());
    }
    let expect: Vec<u32> = (1..=10).map(|k| 1024 * k).collect();
    assert_eq!(acks_out(&mut x), expect);
    assert_eq!((x.stats().compacted, x.stats().regenerated), (1, 6));
    assert_eq!(x.auth_stats().map(|a| a.verified), Some(1));
}

/// The attack of issues 14 and 15 against a keyed expander: a replayed compacted ACK, one
/// sealed with the wrong key, one with the right key from a source that is not a compactor,
/// and unauthenticated ones (the unkeyed compactor's, and a forged 63-byte packet asking for
/// 255 ACKs): zero ACKs, each counted once under its reason.
#[test]
fn forged_replayed_and_unknown_compacted_acks_produce_no_ack() {
    let (sent, _) = keyed_compactor_output(1, TUN_SRC, 300);
    let mut x = keyed_expander(1);
    x.handle_packet(Instant::ZERO, PortId(1), sent[1].clone());
    assert_eq!(acks_out(&mut x).len(), 7);
    let before = x.stats();
    x.handle_packet(Instant::ZERO, PortId(1), sent[1].clone());
    let (wrong_key, _) = keyed_compactor_output(2, TUN_SRC, 301);
    x.handle_packet(Instant::ZERO, PortId(1), wrong_key[1].clone());
    let (stranger, _) = keyed_compactor_output(1, Ipv4Addr::new(6, 6, 6, 6), 302);
    x.handle_packet(Instant::ZERO, PortId(1), stranger[1].clone());
    let mut plain = queue(AckMode::Compaction, 4, 60);
    for k in 1..=10u32 {
        offer(&mut plain, seg(0, 1024 * k, Kind::Pure, u64::from(k)));
    }
    let unkeyed: Vec<Packet> = std::iter::from_fn(|| plain.dequeue(Instant::ZERO))
        .map(|e| e.pkt)
        .collect();
    x.handle_packet(Instant::ZERO, PortId(1), unkeyed[1].clone());
    x.handle_packet(
        Instant::ZERO,
        PortId(1),
        tunnel(5000, 255, 65_535, TUN_SRC, Kind::Pure),
    );
    assert!(acks_out(&mut x).is_empty());
    let a = x.auth_stats().expect("keyed");
    assert_eq!(
        (
            a.verified,
            a.replayed,
            a.bad_mac,
            a.unauthenticated,
            a.too_old
        ),
        (1, 1, 1, 2, 0)
    );
    let s = x.stats();
    assert_eq!(s.unknown_source - before.unknown_source, 1);
    assert_eq!((s.decapsulated, s.regenerated, s.malformed), (1, 6, 0));
    // A corrupted AH framing is malformed; a restarted compactor (new epoch) gets in at once.
    let mut bad = sent[1].clone();
    bad.header_mut()[20] = 6;
    let h = bad.header_mut();
    h[10..12].fill(0);
    let c = crate::wire::checksum::finish(crate::wire::checksum::sum(0, &h[..20]));
    h[10..12].copy_from_slice(&c.to_be_bytes());
    x.handle_packet(Instant::ZERO, PortId(1), bad);
    assert_eq!(x.stats().malformed, 1);
    let (restarted, _) = keyed_compactor_output(1, TUN_SRC, 301);
    x.handle_packet(Instant::ZERO, PortId(1), restarted[1].clone());
    assert_eq!(acks_out(&mut x).len(), 7);
    // A floor restored after an expander restart refuses the old packet.
    let mut y = keyed_expander(1);
    y.opener_mut()
        .expect("keyed")
        .set_floor(TUN_SRC, 301 << 32 | 1);
    y.handle_packet(Instant::ZERO, PortId(1), sent[1].clone());
    assert!(acks_out(&mut y).is_empty());
    assert_eq!(y.auth_stats().map(|a| a.too_old), Some(1));
    // Without a key, the expander does not treat AH as its own: the packet passes unopened.
    let mut open = AckExpander::new(&AckExpanderConfig {
        compactors: vec![TUN_SRC],
        ..AckExpanderConfig::default()
    });
    open.handle_packet(Instant::ZERO, PortId(1), sent[1].clone());
    let passed: Vec<Packet> = std::iter::from_fn(|| open.poll_transmit(Instant::ZERO))
        .map(|t| t.pkt)
        .collect();
    assert_eq!(passed.len(), 1);
    assert_eq!(passed[0].header(), sent[1].header());
    assert_eq!(open.auth_stats(), None);
}

/// A survivor whose inner header leaves no room for the AH (> 77 bytes) goes as a plain ACK,
/// counted; with no key the same ACK is tunnelled.
#[test]
fn keyed_compactor_sends_a_survivor_without_room_as_a_plain_ack() {
    let long = |flow: u8, ack: u32, id: u64| {
        let mut p = seg(flow, ack, Kind::Pure, id);
        // 40 bytes of NOP options (a plain ACK: no SACK), checksums refilled.
        let mut h = p.header().to_vec();
        h.extend_from_slice(&[1u8; 40]);
        h[2..4].copy_from_slice(&80u16.to_be_bytes());
        h[32] = 0xf0 | (h[32] & 0x0f);
        p.set_header(&h);
        crate::wire::TcpIpv4View::new_unchecked(p.header_mut()).fill_checksums();
        p
    };
    for (key, sealed, failed, tunnelled) in [(Some(test_key(1)), 0, 1, false), (None, 0, 0, true)] {
        let cfg = AckQueueConfig {
            tunnel_src: Some(TUN_SRC),
            tunnel_dst: Some(TUN_DST),
            key,
            ..AckQueueConfig::default()
        };
        let mut q = AckQueue::new(AckMode::Compaction, &cfg, Some(1000), None);
        for k in 1..=10u32 {
            offer(&mut q, long(0, 1024 * k, u64::from(k)));
        }
        let sent: Vec<Packet> = std::iter::from_fn(|| q.dequeue(Instant::ZERO))
            .map(|e| e.pkt)
            .collect();
        assert_eq!(sent.len(), 4);
        assert_eq!((q.stats().sealed, q.stats().seal_failed), (sealed, failed));
        assert_eq!(q.stats().compacted_sent, u64::from(tunnelled));
        assert_eq!(sent[1].header_len(), if tunnelled { 103 } else { 80 });
    }
}

#[test]
fn a_key_only_goes_with_ack_compaction() {
    let q = |kind: &str| {
        let toml = format!(
            "kind = \"{kind}\"\nlimit_packets = 10\n[ack]\ntunnel_src = \"1.1.1.1\"\n\
             tunnel_dst = \"2.2.2.2\"\nkey = \"hex:00112233445566778899aabbccddeeff\""
        );
        toml::from_str::<crate::link::QueueConfig>(&toml)
            .expect("parses")
            .validate()
    };
    assert_eq!(q("ack_compaction"), Ok(()));
    assert!(q("ack_filtering").unwrap_err().starts_with("ack.key:"));
    assert!(q("drop_tail").unwrap_err().starts_with("ack.key:"));
}

/// The corpus' keyed seed, sealed by Python's `hmac` (fuzz/corpus/ack_expander), expands in
/// the keyed fuzz expander: 4 ACKs over 4 000 bytes below 100 000, then the received one. The
/// fuzz body's genuine keyed case, uncorrupted and with the right key, runs too.
#[test]
fn python_sealed_compacted_seed_expands() {
    let seed = include_bytes!("../../../../fuzz/corpus/ack_expander/seed_keyed_compacted");
    let mut x = fuzzing::keyed_expander();
    x.handle_packet(Instant::ZERO, PortId(0), Packet::new(&seed[2..], 0));
    assert_eq!(acks_out(&mut x), [96_000, 97_000, 98_000, 99_000, 100_000]);
    x.handle_packet(Instant::ZERO, PortId(0), Packet::new(&seed[2..], 0));
    assert!(acks_out(&mut x).is_empty());
    assert_eq!(
        x.auth_stats().map(|a| (a.verified, a.replayed)),
        Some((1, 1))
    );
    fuzzing::expander_input(seed);
    fuzzing::expander_input(&[0, 1, 0x86, 0xa0, 4, 0x0f, 0xa0, 0xc3, 0x50, 0, 0]);
}

// --- Arora et al.'s selective ACK dropping inside the terminal's IP-in-IP tunnel. ---

/// `p` inside a plain IP-in-IP header from the terminal to the gateway; `fix` may alter the
/// outer header (options, fragment bits, protocol) before the packet is built.
fn tunnelled(p: &Packet, fix: impl Fn(&mut [u8])) -> Packet {
    let inner = p.header();
    let mut buf = vec![0u8; crate::wire::ipip::OUTER_LEN + inner.len()];
    let total = (buf.len() as u64 + u64::from(p.payload_len)) as u16;
    crate::wire::ipip::write_outer_header(&mut buf, total, 0, 9, TUN_SRC, TUN_DST);
    buf[crate::wire::ipip::OUTER_LEN..].copy_from_slice(inner);
    fix(&mut buf);
    let mut t = Packet::new(&buf, p.payload_len);
    t.id = p.id;
    t
}

/// Filtering and suppression judge a tunnelled ACK by its inner headers, exactly as they judge
/// the bare ACK: the same packets survive, and only the outer bytes are added.
#[test]
fn filtering_and_suppression_see_acks_inside_ip_in_ip() {
    let stream = [
        seg(0, 1024, Kind::Pure, 0),
        seg(0, 2048, Kind::Pure, 1),
        seg(1, 700, Kind::Data, 2),
        seg(0, 3072, Kind::Pure, 3),
        seg(0, 4096, Kind::Pure, 4),
        seg(0, 4096, Kind::Pure, 5),
        seg(0, 5120, Kind::Pure, 6),
    ];
    for (mode, survivors) in [
        (AckMode::Filtering, vec![0, 2, 4, 5, 6]),
        (AckMode::Suppression, vec![0, 2, 4, 5, 6]),
    ] {
        let run = |wrap: bool| {
            let mut q = queue(mode, 1, 60);
            for p in &stream {
                offer(
                    &mut q,
                    if wrap {
                        tunnelled(p, |_| {})
                    } else {
                        p.clone()
                    },
                );
            }
            (ids(&q), q.stats(), q.len_bytes())
        };
        let (bare, bare_stats, bare_bytes) = run(false);
        let (inside, stats, bytes) = run(true);
        assert_eq!(bare, survivors, "{mode:?}");
        assert_eq!(inside, survivors, "{mode:?}: tunnelled");
        assert_eq!(stats.removed, bare_stats.removed);
        assert_eq!((bare_stats.tunnelled_acks, stats.tunnelled_acks), (0, 7));
        assert_eq!(stats.not_acks, 0);
        assert_eq!(bytes, bare_bytes + 20 * survivors.len() as u64);
    }
}

/// Only a plain outer header is looked through: with IPv4 options, as a fragment (offset or
/// more-fragments bit), with another protocol (e.g. AH), or in compaction, a tunnel packet is
/// not an ACK and nothing is removed.
#[test]
fn only_plain_ip_in_ip_is_looked_through() {
    type Fix = fn(&mut [u8]);
    let opaque: [(&str, Fix); 4] = [
        ("options", |b| b[0] = 0x46),
        ("fragment offset", |b| b[7] = 1),
        ("more fragments", |b| b[6] |= 0x20),
        ("authentication header", |b| b[9] = 51),
    ];
    for (what, fix) in opaque {
        let mut q = queue(AckMode::Filtering, 0, 60);
        for k in 1..=4u32 {
            offer(
                &mut q,
                tunnelled(&seg(0, 1024 * k, Kind::Pure, u64::from(k)), fix),
            );
        }
        assert_eq!(ids(&q), [1, 2, 3, 4], "{what}");
        assert_eq!(
            (q.stats().not_acks, q.stats().tunnelled_acks),
            (4, 0),
            "{what}"
        );
    }
    // Don't-fragment alone (what write_outer_header sets) is still plain.
    let mut q = queue(AckMode::Filtering, 0, 60);
    for k in 1..=4u32 {
        let p = tunnelled(&seg(0, 1024 * k, Kind::Pure, u64::from(k)), |b| b[6] = 0x40);
        offer(&mut q, p);
    }
    assert_eq!(ids(&q), [1, 4]);
    let mut q = queue(AckMode::Compaction, 0, 60);
    for k in 1..=6u32 {
        offer(
            &mut q,
            tunnelled(&seg(0, 1024 * k, Kind::Pure, u64::from(k)), |_| {}),
        );
    }
    assert_eq!(ids(&q), [1, 2, 3, 4, 5, 6], "compaction");
    assert_eq!(q.stats().tunnelled_acks, 0);
}
