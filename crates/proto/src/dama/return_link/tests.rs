use super::*;
use crate::dama::{TerminalConfig, VbdcMode};

const MS: u64 = 1_000_000;
const US: u64 = 1_000;

fn config(terminal: TerminalConfig) -> DamaConfig {
    DamaConfig {
        terminal,
        ..DamaConfig::default()
    }
}

fn cra(slots: u32) -> TerminalConfig {
    TerminalConfig {
        cra_slots: slots,
        vbdc_max_slots: 0,
        ..TerminalConfig::default()
    }
}

fn vbdc() -> TerminalConfig {
    TerminalConfig::default()
}

/// A packet of exactly `bytes` on the wire.
fn pkt(id: u64, bytes: u32) -> Packet {
    let mut p = Packet::new(&[0u8; 40], bytes - 40);
    p.id = id;
    p
}

/// Drive the link like the simulator does until `end`, returning (delivery time, id, ST).
fn run(link: &mut DamaLink, arrivals: &[(u64, usize, Packet)], end: Instant) -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    let mut arrivals: VecDeque<(u64, usize, Packet)> = arrivals.iter().cloned().collect();
    loop {
        let next_arrival = arrivals.front().map(|a| Instant(a.0));
        let wake = link.poll_timeout();
        let now = match (next_arrival, wake) {
            (Some(a), Some(w)) => a.min(w),
            (a, w) => match a.or(w) {
                Some(t) => t,
                None => break,
            },
        };
        if now > end {
            break;
        }
        if next_arrival == Some(now) {
            if let Some((_, st, p)) = arrivals.pop_front() {
                link.handle_packet(now, PortId(st as u16), p);
            }
        } else {
            link.handle_timeout(now);
        }
        while let Some(tx) = link.poll_transmit(now) {
            out.push((now.0, tx.pkt.id));
        }
    }
    out
}

#[test]
fn cra_only_drains_at_the_cra_rate_with_exact_slot_timing() {
    // 1 CRA slot per frame: 192 B every 24 ms, at 12 ms into each frame (position 16 of 32).
    let mut link = DamaLink::new(&config(cra(1)), 1, Rng::new(1, 1));
    let arrivals: Vec<_> = (1..=10).map(|i| (MS, 0, pkt(i, 1000))).collect();
    let got = run(&mut link, &arrivals, Instant(10_000 * MS));
    assert_eq!(got.len(), 10);
    for (j, &(t, id)) in got.iter().enumerate() {
        let j = j as u64 + 1;
        assert_eq!(id, j);
        // Packet j's last byte is byte 1000·j: slot ⌈1000j/192⌉ − 1 (0-based) of this ST.
        let slot = (1000 * j).div_ceil(192) - 1;
        let expect = 12 * MS + slot * 24 * MS + 750 * US + 250 * MS;
        assert_eq!(t, expect, "packet {j}");
    }
    // 10 000 B over 53 slots: 52 full, one with 16 bytes.
    assert_eq!(link.terminal_stats(0).slots_used, 53);
    assert_eq!(link.terminal_stats(0).requests_sent, 0);
}

#[test]
fn vbdc_only_waits_the_system_response_time_exactly() {
    // A 1000-byte packet at 10 ms; the request leaves at the start of superframe 1 (96 ms) for
    // ⌈1000/192⌉ = 6 slots, granted in superframe 1 + 11 = 12 (1152 ms) at positions
    // 10, 32, 53, 74, 96, 117; the last (frame 3, slot 21) starts at 1152 + 72 + 15.75 ms.
    let mut link = DamaLink::new(&config(vbdc()), 1, Rng::new(1, 1));
    let got = run(
        &mut link,
        &[(10 * MS, 0, pkt(7, 1000))],
        Instant(3_000 * MS),
    );
    assert_eq!(
        got,
        vec![(1152 * MS + 72 * MS + 15_750 * US + 750 * US + 250 * MS, 7)]
    );
    let st = link.terminal_stats(0);
    assert_eq!(st.granted, [0, 0, 6, 0]);
    assert_eq!(st.requests_sent, 1);
    assert_eq!(st.vbdc_requested, 6);
    // The first slot used starts at 1152 + 7.5 ms: no earlier than request + L superframes.
    let recs = link.drain_records();
    let granted_at: Vec<u64> = recs
        .iter()
        .filter(|r| r.granted.vbdc > 0)
        .map(|r| r.superframe)
        .collect();
    assert_eq!(granted_at, vec![12]);
    let requested_at: Vec<u64> = recs
        .iter()
        .filter(|r| r.request.vbdc > 0)
        .map(|r| r.superframe)
        .collect();
    assert_eq!(requested_at, vec![1]);
}

#[test]
fn lost_vbdc_requests_are_reissued_after_l_superframes_and_avbdc_recovers() {
    let mut c = config(vbdc());
    c.request_loss = 1.0;
    let mut link = DamaLink::new(&c, 1, Rng::new(1, 1));
    assert!(run(&mut link, &[(MS, 0, pkt(1, 1000))], Instant(5_000 * MS)).is_empty());
    let s = link.terminal_stats(0);
    // Eq. 2 counts a request as pending for L − 1 superframes only, so an unanswered request
    // is re-issued every L = 11 superframes: at superframes 1, 12, 23, 34 and 45 (of 52).
    assert_eq!(s.requests_sent, 5);
    assert_eq!(s.requests_lost, 5);

    // AVBDC with half the requests lost: every superframe re-asks for the whole backlog.
    let mut c = config(TerminalConfig {
        vbdc_mode: VbdcMode::Avbdc,
        ..vbdc()
    });
    c.request_loss = 0.5;
    let mut link = DamaLink::new(&c, 1, Rng::new(3, 1));
    let got = run(&mut link, &[(MS, 0, pkt(1, 1000))], Instant(10_000 * MS));
    assert_eq!(got.len(), 1);
    assert!(link.terminal_stats(0).requests_lost > 0);
}

#[test]
fn many_saturated_terminals_share_the_carrier_without_exceeding_it() {
    // 5 STs, VBDC, each with 200 kB queued at t = 1 ms: 10 s of carrier is 2.56 MB.
    let mut link = DamaLink::new(&config(vbdc()), 5, Rng::new(1, 1));
    let mut arrivals = Vec::new();
    let mut id = 0;
    for st in 0..5 {
        for _ in 0..200 {
            id += 1;
            arrivals.push((MS, st, pkt(id, 1000)));
        }
    }
    let end = Instant(10_000 * MS);
    let got = run(&mut link, &arrivals, end);
    assert_eq!(got.len(), 1000);
    // Capacity check per superframe from the records.
    let recs = link.drain_records();
    let mut per_sf = std::collections::BTreeMap::new();
    for r in &recs {
        *per_sf.entry(r.superframe).or_insert(0u32) += r.granted.total();
    }
    assert!(per_sf.values().all(|&s| s <= 128));
    // 1 000 000 B need 5209 slots at most 128 per superframe: ≥ 41 superframes after the first
    // grant at superframe 12 (first requests at superframe 1).
    let last = got.iter().map(|g| g.0).max().unwrap_or(0);
    assert!(last >= (12 + 40) * 96 * MS, "finished at {last}");
    // Proportional shares of equal demands: each ST's last packet within 2 superframes.
    let mut last_per = [0u64; 5];
    for &(t, pid) in &got {
        let st = ((pid - 1) / 200) as usize;
        last_per[st] = last_per[st].max(t);
    }
    let (lo, hi) = (
        last_per.iter().min().copied().unwrap_or(0),
        last_per.iter().max().copied().unwrap_or(0),
    );
    assert!(hi - lo <= 2 * 96 * MS, "{last_per:?}");
    for st in 0..5 {
        let s = link.link_stats_at(st, end);
        assert_eq!(s.arrivals, s.delivered_packets + s.queue_drops);
    }
}

#[test]
fn a_full_queue_drops_and_counts() {
    let mut c = config(cra(1));
    c.queue_limit = crate::units::ByteSize(2500);
    let mut link = DamaLink::new(&c, 1, Rng::new(1, 1));
    for i in 0..4 {
        link.handle_packet(Instant(MS), PortId(0), pkt(i, 1000));
    }
    let s = link.link_stats_at(0, Instant(MS));
    assert_eq!((s.arrivals, s.queue_drops, s.max_queue_bytes), (4, 2, 2000));
}
