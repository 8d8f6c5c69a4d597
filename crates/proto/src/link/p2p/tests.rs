//! Tests of the link's timing, queueing, losses and counters, with numbers worked by hand.
//!
//! Unless a test says otherwise: 1 Mb/s, so a 1000-byte packet takes exactly 8 ms; 250 ms delay.

use proptest::prelude::*;

use super::*;
use crate::link::{ErrorModelConfig, QueueConfig};
use crate::rand::Rng;
use crate::units::ByteSize;

const MS: u64 = 1_000_000;
const MBPS: u64 = 1_000_000;

fn ms(x: u64) -> Instant {
    Instant(x * MS)
}

/// A packet of `wire_len` bytes (40 header + payload), tagged with `id`.
fn pkt(id: u64, wire_len: u32) -> Packet {
    let mut p = Packet::new(&[0x45; 40], wire_len - 40);
    p.id = id;
    p
}

fn config(
    rate_bps: u64,
    delay_ms: u64,
    limit_packets: Option<u32>,
    limit_bytes: Option<u64>,
) -> LinkConfig {
    LinkConfig {
        rate: Bitrate(rate_bps),
        delay: Duration::from_millis(delay_ms),
        queue: QueueConfig {
            limit_packets,
            limit_bytes: limit_bytes.map(ByteSize),
            ..QueueConfig::default()
        },
        error: ErrorModelConfig::None,
        compression: Default::default(),
        ..LinkConfig::default()
    }
}

fn link(config: &LinkConfig) -> Link {
    Link::new(config, Rng::for_component(1, "test-link"))
}

fn with_error(mut c: LinkConfig, error: ErrorModelConfig) -> LinkConfig {
    c.error = error;
    c
}

/// Every packet that entered is somewhere: delivered, dropped, queued, on the serialiser,
/// propagating or awaiting a link-layer retransmission.
fn assert_accounted(l: &Link) {
    let s = l.stats();
    let inside = l.queue_len_packets() as u64
        + u64::from(l.is_busy())
        + l.in_flight() as u64
        + l.arq_pending() as u64;
    assert_eq!(
        s.arrivals,
        s.delivered_packets + s.queue_drops + s.error_drops + inside,
        "{s:?}, inside {inside}"
    );
}

fn drain(l: &mut Link, now: Instant, out: &mut Vec<(Instant, u64)>) {
    while let Some(tx) = l.poll_transmit(now) {
        assert_eq!(tx.port, PortId(0));
        out.push((now, tx.pkt.id));
    }
}

/// Drive `l` as the simulator does: each arrival at its instant, `handle_timeout` at
/// `poll_timeout` plus a lateness taken in turn from `lateness`, `poll_transmit` drained after
/// every input. At equal instants, timeouts go first when `timeouts_first`. Returns
/// (delivery instant, packet id) in output order.
fn drive(
    l: &mut Link,
    arrivals: Vec<(Instant, Packet)>,
    lateness: &[u64],
    timeouts_first: bool,
) -> Vec<(Instant, u64)> {
    let mut out = Vec::new();
    let mut arrivals = arrivals.into_iter().peekable();
    let mut late = lateness.iter().copied().cycle();
    // The wake-up the driver has armed, re-armed only when the node's deadline moves.
    let mut armed: Option<(Instant, Instant)> = None; // (deadline, wake instant)
    loop {
        if let Some(deadline) = l.poll_timeout() {
            if armed.map(|(d, _)| d) != Some(deadline) {
                armed = Some((deadline, deadline + Duration(late.next().unwrap_or(0))));
            }
        } else {
            armed = None;
        }
        let wake = armed.map(|(_, w)| w);
        let next_arrival = arrivals.peek().map(|(t, _)| *t);
        let take_arrival = match (wake, next_arrival) {
            (None, None) => break,
            (None, Some(_)) => true,
            (Some(_), None) => false,
            (Some(w), Some(a)) => a < w || (a == w && !timeouts_first),
        };
        let now = if take_arrival {
            let (now, p) = arrivals.next().expect("peeked");
            l.handle_packet(now, PortId(0), p);
            now
        } else {
            let now = wake.expect("matched Some");
            armed = None;
            l.handle_timeout(now);
            now
        };
        drain(l, now, &mut out);
        assert_accounted(l);
    }
    out
}

fn burst(n: u64, wire_len: u32) -> Vec<(Instant, Packet)> {
    (1..=n).map(|i| (Instant::ZERO, pkt(i, wire_len))).collect()
}

#[test]
fn burst_of_three_leaves_tx_time_apart_after_delay() {
    let mut l = link(&config(MBPS, 250, Some(100), None));
    for (now, p) in burst(3, 1000) {
        l.handle_packet(now, PortId(0), p);
    }
    // The first started at once; two wait; the serialiser frees at 8 ms, but the link asks to
    // be woken only for the first delivery, 8 + 250 ms.
    assert_eq!(
        (l.is_busy(), l.queue_len_packets(), l.queue_len_bytes()),
        (true, 2, 2000)
    );
    assert_eq!(l.poll_timeout(), Some(ms(258)));
    let out = drive(&mut l, Vec::new(), &[0], true);
    assert_eq!(out, [(ms(258), 1), (ms(266), 2), (ms(274), 3)]);
    assert_eq!(l.poll_timeout(), None);
    let s = l.stats();
    assert_eq!(
        (s.delivered_packets, s.delivered_bytes, s.busy_ns),
        (3, 3000, 24 * MS)
    );
}

#[test]
fn wakes_only_for_deliveries_and_settle_shows_the_queue_as_of_then() {
    // 5 packets of 1000 B at 1 Mb/s (8 ms each), 250 ms delay: a driver that wakes the link
    // only at `poll_timeout` wakes it 5 times (once per delivery), never for the 5 completions,
    // and every packet still leaves at 258 + 8k ms.
    let mut l = link(&config(MBPS, 250, Some(100), None));
    for (now, p) in burst(5, 1000) {
        l.handle_packet(now, PortId(0), p);
    }
    let mut wakes = Vec::new();
    let mut out = Vec::new();
    while let Some(t) = l.poll_timeout() {
        wakes.push(t);
        l.handle_timeout(t);
        drain(&mut l, t, &mut out);
    }
    let due: Vec<Instant> = (0..5).map(|k| ms(258 + 8 * k)).collect();
    assert_eq!(wakes, due);
    assert_eq!(out.iter().map(|o| o.0).collect::<Vec<_>>(), due);
    // Unsettled, the queue still holds what it held at the last input; settled at 20 ms, #1
    // and #2 have left the serialiser (8, 16 ms) and #3 is on it: 2 wait, as a link woken at
    // every completion would show.
    let mut l = link(&config(MBPS, 250, Some(100), None));
    for (now, p) in burst(5, 1000) {
        l.handle_packet(now, PortId(0), p);
    }
    assert_eq!(l.queue_len_packets(), 4);
    l.settle(ms(20));
    assert_eq!((l.queue_len_packets(), l.in_flight()), (2, 2));
    assert_eq!(l.stats_at(ms(20)).busy_ns, 20 * MS);
}

#[test]
fn late_timeout_keeps_the_scheduled_spacing_and_never_delivers_early() {
    let mut l = link(&config(MBPS, 250, Some(100), None));
    for (now, p) in burst(3, 1000) {
        l.handle_packet(now, PortId(0), p);
    }
    // Woken 12 ms late: packets 1 and 2 finished at 8 and 16 ms, packet 3 started at 16 ms.
    l.handle_timeout(ms(20));
    assert!(l.poll_transmit(ms(20)).is_none());
    assert_eq!((l.in_flight(), l.queue_len_packets()), (2, 0));
    assert_eq!(l.poll_timeout(), Some(ms(258)));
    // At 265 ms only packet 1 (due 258) may leave; packet 2 is due at 266.
    let mut out = Vec::new();
    drain(&mut l, ms(265), &mut out);
    assert_eq!(out, [(ms(265), 1)]);
    assert_eq!(l.poll_timeout(), Some(ms(266)));
    drain(&mut l, Instant(266 * MS - 1), &mut out);
    assert_eq!(out.len(), 1);
    // Packet 3 was never handed a timeout; it still finished at 24 ms, due at 274 ms.
    drain(&mut l, ms(274), &mut out);
    assert_eq!(out, [(ms(265), 1), (ms(274), 2), (ms(274), 3)]);
    assert_eq!(l.stats().busy_ns, 24 * MS);
}

#[test]
fn early_and_repeated_timeouts_change_nothing() {
    let mut l = link(&config(MBPS, 250, Some(100), None));
    for (now, p) in burst(2, 1000) {
        l.handle_packet(now, PortId(0), p);
    }
    l.handle_timeout(Instant(8 * MS - 1));
    assert!(l.poll_transmit(Instant(8 * MS - 1)).is_none());
    assert_eq!(
        (l.queue_len_packets(), l.poll_timeout()),
        (1, Some(ms(258)))
    );
    l.handle_timeout(ms(8));
    l.handle_timeout(ms(8));
    assert_eq!(
        (l.queue_len_packets(), l.in_flight(), l.poll_timeout()),
        (0, 1, Some(ms(258)))
    );
    let out = drive(&mut l, Vec::new(), &[0], true);
    assert_eq!(out, [(ms(258), 1), (ms(266), 2)]);
}

#[test]
fn drop_tail_by_packets() {
    // Limit 2 waiting: of a burst of 5, one serialises, two wait, two are dropped.
    let mut l = link(&config(MBPS, 250, Some(2), None));
    let out = drive(&mut l, burst(5, 1000), &[0], true);
    assert_eq!(out.iter().map(|o| o.1).collect::<Vec<_>>(), [1, 2, 3]);
    let s = l.stats();
    assert_eq!(
        (
            s.arrivals,
            s.queue_drops,
            s.max_queue_packets,
            s.max_queue_bytes
        ),
        (5, 2, 2, 2000)
    );
}

#[test]
fn drop_tail_by_bytes() {
    // Limit 2500 B waiting. #1 serialises; #2, #3 wait (2000 B); #4 would make 3000 B: dropped;
    // #5 (500 B) fills to exactly 2500 B: kept; #6 (600 B) dropped.
    let mut l = link(&config(MBPS, 250, None, Some(2500)));
    let sizes = [1000, 1000, 1000, 1000, 500, 600];
    let arrivals = sizes
        .iter()
        .zip(1..)
        .map(|(&n, id)| (Instant::ZERO, pkt(id, n)))
        .collect();
    let out = drive(&mut l, arrivals, &[0], true);
    // 1000 B = 8 ms, 500 B = 4 ms: finishes at 8, 16, 24, 28 ms.
    assert_eq!(
        out,
        [(ms(258), 1), (ms(266), 2), (ms(274), 3), (ms(278), 5)]
    );
    let s = l.stats();
    assert_eq!(
        (s.queue_drops, s.max_queue_packets, s.max_queue_bytes),
        (2, 3, 2500)
    );
}

#[test]
fn an_idle_link_still_drops_what_its_queue_would_refuse() {
    // The queue admits a packet before the serialiser takes it, idle or not: with a 900-byte
    // limit a 1000-byte packet is dropped at an idle link and a 500-byte one passes; with a
    // packet limit of 0 nothing ever passes.
    let mut l = link(&config(MBPS, 250, None, Some(900)));
    let out = drive(
        &mut l,
        vec![(ms(0), pkt(1, 1000)), (ms(1), pkt(2, 500))],
        &[0],
        true,
    );
    assert_eq!(out, [(ms(255), 2)]);
    let s = l.stats();
    assert_eq!((s.arrivals, s.queue_drops, s.delivered_packets), (2, 1, 1));
    assert_eq!(
        l.poll_drop().map(|d| (d.id, d.reason)),
        Some((1, DropReason::QueueFull))
    );
    let mut l = link(&config(MBPS, 250, Some(0), None));
    let out = drive(&mut l, burst(3, 1000), &[0], true);
    assert!(out.is_empty());
    assert_eq!((l.stats().queue_drops, l.is_busy()), (3, false));
    assert_accounted(&l);
}

#[test]
fn a_packet_reaching_an_idle_paused_link_waits_for_the_grant() {
    // Rate 0 from the start: the serialiser is idle and the queue empty, yet the packet must
    // wait (not go straight onto a serialiser that would never finish it).
    let mut l = link(&config(0, 250, Some(10), None));
    l.handle_packet(ms(1), PortId(0), pkt(1, 1000));
    assert_eq!(
        (l.is_busy(), l.queue_len_packets(), l.poll_timeout()),
        (false, 1, None)
    );
    l.set_rate(ms(100), Bitrate(MBPS));
    let out = drive(&mut l, Vec::new(), &[0], true);
    assert_eq!(out, [(ms(358), 1)]);
}

#[test]
fn packet_arriving_as_the_serialiser_frees_finds_the_slot_free_in_either_order() {
    for timeouts_first in [true, false] {
        // Limit 1 waiting: #1 serialises 0–8 ms, #2 waits; #3 arrives at 8 ms exactly, when #2
        // moves onto the serialiser.
        let mut l = link(&config(MBPS, 250, Some(1), None));
        let mut arrivals = burst(2, 1000);
        arrivals.push((ms(8), pkt(3, 1000)));
        let out = drive(&mut l, arrivals, &[0], timeouts_first);
        assert_eq!(
            out,
            [(ms(258), 1), (ms(266), 2), (ms(274), 3)],
            "{timeouts_first}"
        );
        assert_eq!(l.stats().queue_drops, 0);
    }
}

/// ns-2's order (`same_instant = "arrivals_first"`): the same #3 at 8 ms is offered to the
/// queue while #2 still waits in it, finds it full (limit 1) and is dropped, whether the link
/// had already applied the completion at 8 ms (settled, as after another input at that
/// instant) or not. With room for two, it is kept and leaves as before.
#[test]
fn arrivals_first_drops_a_packet_arriving_as_the_serialiser_frees_a_full_queue() {
    let ns2 = |limit| LinkConfig {
        same_instant: SameInstant::ArrivalsFirst,
        ..config(MBPS, 250, Some(limit), None)
    };
    for settled in [false, true] {
        let mut l = link(&ns2(1));
        for (now, p) in burst(2, 1000) {
            l.handle_packet(now, PortId(0), p);
        }
        if settled {
            l.settle(ms(8));
            assert_eq!((l.is_busy(), l.queue_len_packets()), (true, 0));
        }
        l.handle_packet(ms(8), PortId(0), pkt(3, 1000));
        let out = drive(&mut l, Vec::new(), &[0], true);
        assert_eq!(out, [(ms(258), 1), (ms(266), 2)], "settled {settled}");
        assert_eq!(l.stats().queue_drops, 1, "settled {settled}");
    }
    // One instant later the slot is free in either order.
    let mut l = link(&ns2(1));
    let mut arrivals = burst(2, 1000);
    arrivals.push((Instant(8 * MS + 1), pkt(3, 1000)));
    let out = drive(&mut l, arrivals, &[0], true);
    assert_eq!(out, [(ms(258), 1), (ms(266), 2), (ms(274), 3)]);
    // A byte limit counts the departing head too: 1000 bytes hold #3 only once #2 has left.
    let mut l = link(&LinkConfig {
        same_instant: SameInstant::ArrivalsFirst,
        ..config(MBPS, 250, None, Some(1000))
    });
    let mut arrivals = burst(2, 1000);
    arrivals.push((ms(8), pkt(3, 1000)));
    let out = drive(&mut l, arrivals, &[0], true);
    assert_eq!(out, [(ms(258), 1), (ms(266), 2)]);
    // Room for two: kept, in order.
    let mut l = link(&ns2(2));
    let mut arrivals = burst(2, 1000);
    arrivals.push((ms(8), pkt(3, 1000)));
    let out = drive(&mut l, arrivals, &[0], true);
    assert_eq!(out, [(ms(258), 1), (ms(266), 2), (ms(274), 3)]);
    assert_eq!(l.stats().queue_drops, 0);
}

#[test]
fn a_lone_packet_never_counts_as_queued() {
    let mut l = link(&config(MBPS, 250, Some(1), None));
    let arrivals = (0..4).map(|i| (ms(10 * i), pkt(i + 1, 1000))).collect();
    let out = drive(&mut l, arrivals, &[0], true);
    assert_eq!(
        out,
        [(ms(258), 1), (ms(268), 2), (ms(278), 3), (ms(288), 4)]
    );
    let s = l.stats_at(ms(300));
    assert_eq!((s.max_queue_packets, s.queue_packet_ns), (0, 0));
}

#[test]
fn utilisation_is_one_when_saturated_and_one_half_when_half_loaded() {
    let mut l = link(&config(MBPS, 250, Some(100), None));
    for (now, p) in burst(10, 1000) {
        l.handle_packet(now, PortId(0), p);
    }
    // Mid-packet, the partial serialisation counts.
    assert_eq!(l.utilisation(ms(4)), 1.0);
    l.handle_timeout(ms(80)); // all ten done at exactly 80 ms
    assert_eq!(l.utilisation(ms(80)), 1.0);
    assert_eq!(l.utilisation(ms(160)), 0.5);

    // One 8 ms packet every 16 ms.
    let mut l = link(&config(MBPS, 250, Some(100), None));
    let arrivals = (0..10).map(|i| (ms(16 * i), pkt(i + 1, 1000))).collect();
    drive(&mut l, arrivals, &[0], true);
    assert_eq!(l.utilisation(ms(160)), 0.5);
    assert_eq!(l.stats_at(ms(160)).busy_ns, 80 * MS);
    assert_eq!(l.utilisation(Instant::ZERO), 0.0);
}

#[test]
fn mean_queue_over_a_known_pattern() {
    // Burst of 3 at 0: 2 wait during [0, 8) ms, 1 during [8, 16), none after.
    // ∫ = 2·8 + 1·8 = 24 packet·ms; over [0, 32] ms the mean is 0.75 packets, 750 bytes.
    for lazy in [false, true] {
        let mut l = link(&config(MBPS, 250, Some(100), None));
        for (now, p) in burst(3, 1000) {
            l.handle_packet(now, PortId(0), p);
        }
        if !lazy {
            for t in [8, 16, 24] {
                l.handle_timeout(ms(t));
            }
        } else {
            l.handle_timeout(ms(32)); // one late wake-up: completions still at 8, 16, 24 ms
        }
        let s = l.stats_at(ms(32));
        assert_eq!(
            (s.queue_packet_ns, s.queue_byte_ns),
            (24 * u128::from(MS), 24_000 * u128::from(MS))
        );
        assert_eq!(l.mean_queue_packets(ms(32)), 0.75);
        assert_eq!(l.mean_queue_bytes(ms(32)), 750.0);
        assert_eq!((s.max_queue_packets, s.max_queue_bytes), (2, 2000));
    }
    // While packets still wait, the integral runs up to the instant asked for: 2 waiting for 4 ms.
    let mut l = link(&config(MBPS, 250, Some(100), None));
    for (now, p) in burst(3, 1000) {
        l.handle_packet(now, PortId(0), p);
    }
    assert_eq!(l.mean_queue_packets(ms(4)), 2.0);
}

/// `n` packets of `wire_len` bytes, each arriving as the previous one finishes (no queueing).
fn run_spaced(config: &LinkConfig, rng: Rng, n: u64, wire_len: u32) -> (Link, Vec<u64>) {
    let mut l = Link::new(config, rng);
    let gap = config.rate.tx_time(u64::from(wire_len));
    let arrivals = (0..n)
        .map(|i| (Instant(i * gap.as_nanos()), pkt(i + 1, wire_len)))
        .collect();
    let ids = drive(&mut l, arrivals, &[0], true)
        .into_iter()
        .map(|o| o.1)
        .collect();
    assert_eq!(l.stats().queue_drops, 0);
    (l, ids)
}

#[test]
fn per_losses_are_binomial() {
    let c = with_error(
        config(1_000 * MBPS, 1, Some(100), None),
        ErrorModelConfig::Per { per: 0.01 },
    );
    let n = 100_000;
    let (l, ids) = run_spaced(&c, Rng::for_component(5, "link:per"), n, 1000);
    let s = l.stats();
    // Binomial(100 000, 0.01): mean 1000, sd √(n·p·(1−p)) ≈ 31.5.
    let sd = (n as f64 * 0.01 * 0.99).sqrt();
    assert!(
        (s.error_drops as f64 - 1000.0).abs() < 5.0 * sd,
        "{}",
        s.error_drops
    );
    assert_eq!(s.delivered_packets + s.error_drops, n);
    assert_eq!(ids.len() as u64, s.delivered_packets);
    // Corrupted packets used the link: it was busy the whole time.
    assert_eq!(s.busy_ns, n * 8_000);
}

#[test]
fn ber_losses_follow_packet_length() {
    let c = with_error(
        config(1_000 * MBPS, 1, Some(100), None),
        ErrorModelConfig::Ber { ber: 1e-5 },
    );
    let n = 100_000;
    let (l, _) = run_spaced(&c, Rng::for_component(5, "link:ber"), n, 1000);
    // 1000-byte packets: p = 1 − (1 − 1e-5)^8000 ≈ 0.076 88, mean ≈ 7688, sd ≈ 84.3.
    let p = 1.0 - (1.0f64 - 1e-5).powi(8000);
    let mean = n as f64 * p;
    let sd = (n as f64 * p * (1.0 - p)).sqrt();
    let drops = l.stats().error_drops as f64;
    assert!((drops - mean).abs() < 5.0 * sd, "{drops} vs {mean} ± {sd}");
}

#[test]
fn list_drops_exactly_the_listed_arrivals() {
    let c = with_error(
        config(MBPS, 250, Some(100), None),
        ErrorModelConfig::List {
            packets: vec![2, 5, 6],
        },
    );
    let (l, ids) = run_spaced(&c, Rng::new(0, 0), 8, 1000);
    assert_eq!(ids, [1, 3, 4, 7, 8]);
    assert_eq!(l.stats().error_drops, 3);
}

#[test]
fn list_counts_every_packet_entering_including_those_the_queue_drops() {
    // Limit 1 waiting, burst of 4: #1 serialises, #2 waits, #3 and #4 are queue drops. The list
    // names #2 and #3: #2 is an error drop, #3 stays a queue drop (it never reached the wire).
    let c = with_error(
        config(MBPS, 250, Some(1), None),
        ErrorModelConfig::List {
            packets: vec![2, 3],
        },
    );
    let mut l = link(&c);
    let out = drive(&mut l, burst(4, 1000), &[0], true);
    assert_eq!(out, [(ms(258), 1)]);
    let s = l.stats();
    assert_eq!((s.arrivals, s.queue_drops, s.error_drops), (4, 2, 1));
    // The corrupted #2 still occupied the serialiser for 8 ms.
    assert_eq!(s.busy_ns, 16 * MS);
}

#[test]
fn same_seed_gives_the_same_drops() {
    let c = with_error(
        config(100 * MBPS, 1, Some(100), None),
        ErrorModelConfig::Per { per: 0.1 },
    );
    let run = |seed| run_spaced(&c, Rng::for_component(seed, "gw->sat"), 10_000, 1000).1;
    let a = run(42);
    assert_eq!(a, run(42));
    assert_ne!(a, run(43));
}

#[test]
fn set_rate_applies_from_the_next_packet() {
    // At 4 ms the rate doubles: #1 keeps its 8 ms; #2 and #3 take 4 ms each.
    let mut l = link(&config(MBPS, 250, Some(100), None));
    for (now, p) in burst(3, 1000) {
        l.handle_packet(now, PortId(0), p);
    }
    l.set_rate(ms(4), Bitrate(2 * MBPS));
    assert_eq!(l.poll_timeout(), Some(ms(258)));
    let out = drive(&mut l, Vec::new(), &[0], true);
    assert_eq!(out, [(ms(258), 1), (ms(262), 2), (ms(266), 3)]);
    assert_eq!(l.rate(), Bitrate(2 * MBPS));
}

#[test]
fn set_rate_at_a_start_instant_applies_to_that_packet_in_either_order() {
    // The change lands exactly when #2 starts (8 ms): #2 takes the new rate whether the
    // driver handled the completion first or not.
    for timeout_first in [true, false] {
        let mut l = link(&config(MBPS, 250, Some(100), None));
        for (now, p) in burst(2, 1000) {
            l.handle_packet(now, PortId(0), p);
        }
        if timeout_first {
            l.handle_timeout(ms(8));
        }
        l.set_rate(ms(8), Bitrate(2 * MBPS));
        let out = drive(&mut l, Vec::new(), &[0], true);
        assert_eq!(out, [(ms(258), 1), (ms(262), 2)], "{timeout_first}");
    }
    // Same for a packet arriving at an idle link at the instant of the change.
    for packet_first in [true, false] {
        let mut l = link(&config(MBPS, 250, Some(100), None));
        if packet_first {
            l.handle_packet(ms(10), PortId(0), pkt(1, 1000));
        }
        l.set_rate(ms(10), Bitrate(2 * MBPS));
        if !packet_first {
            l.handle_packet(ms(10), PortId(0), pkt(1, 1000));
        }
        // Finishes at 14 ms (4 ms at the new rate), delivered 250 ms later.
        assert_eq!(l.poll_timeout(), Some(ms(264)), "{packet_first}");
    }
}

#[test]
fn zero_rate_pauses_after_the_current_packet_and_resumes_on_a_grant() {
    let mut l = link(&config(MBPS, 250, Some(100), None));
    for (now, p) in burst(3, 1000) {
        l.handle_packet(now, PortId(0), p);
    }
    l.set_rate(ms(2), Bitrate(0));
    // #1 still finishes at 8 ms; then nothing starts.
    let mut out = drive(&mut l, Vec::new(), &[0], true);
    assert_eq!(out, [(ms(258), 1)]);
    assert_eq!(
        (l.is_busy(), l.queue_len_packets(), l.poll_timeout()),
        (false, 2, None)
    );
    // Grant at 300 ms: #2 starts then, 8 ms each again.
    l.set_rate(ms(300), Bitrate(MBPS));
    out = drive(&mut l, Vec::new(), &[0], true);
    assert_eq!(out, [(ms(558), 2), (ms(566), 3)]);
    assert_eq!(l.utilisation(ms(566)), 24.0 / 566.0);
}

#[test]
fn zero_delay_delivers_at_the_end_of_serialisation() {
    let mut l = link(&config(MBPS, 0, Some(100), None));
    let out = drive(&mut l, burst(2, 1000), &[0], true);
    assert_eq!(out, [(ms(8), 1), (ms(16), 2)]);
}

#[test]
fn thousands_in_flight() {
    // 100 Mb/s × 250 ms with 1500-byte packets (120 µs each): 2083 packets propagate at once.
    let mut l = link(&config(100 * MBPS, 250, Some(100), None));
    let gap = Bitrate(100 * MBPS).tx_time(1500).as_nanos();
    assert_eq!(gap, 120_000);
    for i in 0..2084 {
        let now = Instant(i * gap);
        l.handle_packet(now, PortId(0), pkt(i + 1, 1500));
        l.handle_timeout(now);
        assert!(l.poll_transmit(now).is_none());
    }
    // At 249.96 ms the first 2083 have finished and none is due yet (the first at 250.12 ms,
    // the deadline: the 2084th's completion at 250.08 ms is not woken for).
    assert_eq!((l.in_flight(), l.is_busy()), (2083, true));
    assert_eq!(l.poll_timeout(), Some(Instant(gap + 250 * MS)));
    l.handle_timeout(Instant(2084 * gap));
    assert!(l.poll_transmit(Instant(2084 * gap)).is_none());
    assert_eq!(
        (l.in_flight(), l.poll_timeout()),
        (2084, Some(Instant(gap + 250 * MS)))
    );
}

/// Expected deliveries of a FIFO drop-tail link without random losses, worked directly from the
/// definitions: a packet waits if it starts after another's arrival instant; it starts at
/// max(arrival, previous finish).
fn oracle(
    arrivals: &[(u64, u32)],
    rate: Bitrate,
    delay: Duration,
    limit_packets: Option<u32>,
    limit_bytes: Option<u64>,
    list: &[u64],
) -> (Vec<(Instant, u64)>, u64) {
    let mut accepted: Vec<(Instant, u64)> = Vec::new(); // (start, bytes)
    let mut out = Vec::new();
    let mut drops = 0;
    let mut prev_finish = Instant::ZERO;
    for (i, &(at, len)) in arrivals.iter().enumerate() {
        let at = Instant(at);
        let waiting = accepted.iter().filter(|(start, _)| *start > at);
        let (count, bytes) = waiting.fold((0u64, 0u64), |(c, b), (_, n)| (c + 1, b + n));
        if limit_packets.is_some_and(|lim| count + 1 > u64::from(lim))
            || limit_bytes.is_some_and(|lim| bytes + u64::from(len) > lim)
        {
            drops += 1;
            continue;
        }
        let start = at.max(prev_finish);
        prev_finish = start + rate.tx_time(u64::from(len));
        accepted.push((start, u64::from(len)));
        let id = i as u64 + 1;
        if !list.contains(&id) {
            out.push((prev_finish + delay, id));
        }
    }
    (out, drops)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// Against the oracle: exact delivery instants when woken on time (whatever the order of
    /// same-instant inputs); when woken late, the same packets in the same order, none before
    /// its due instant and none later than the lateness; and every arrival accounted for at
    /// every step (checked inside `drive`).
    #[test]
    fn never_reorders_and_accounts_for_every_arrival(
        steps in prop::collection::vec(
            (prop_oneof![Just(0u64), Just(4 * MS), Just(8 * MS), 1u64..20 * MS],
             prop_oneof![Just(1000u32), Just(40u32), 40u32..1540]),
            1..120),
        fast in any::<bool>(),
        delay_ms in prop_oneof![Just(0u64), 1u64..300],
        limit_packets in prop::option::of(1u32..8),
        limit_bytes in prop::option::of(1000u64..8000),
        list in prop::collection::vec(1u64..130, 0..8),
        lateness in prop::collection::vec(0u64..5 * MS, 1..4),
        timeouts_first in any::<bool>(),
    ) {
        let rate_bps = if fast { 2 * MBPS } else { MBPS };
        let c = with_error(
            config(rate_bps, delay_ms, limit_packets, limit_bytes),
            ErrorModelConfig::List { packets: list.clone() },
        );
        let mut t = 0;
        let timed: Vec<(u64, u32)> = steps.iter().map(|&(gap, len)| { t += gap; (t, len) }).collect();
        let arrivals = || timed.iter().zip(1..).map(|(&(at, len), id)| (Instant(at), pkt(id, len))).collect();
        let (want, want_drops) =
            oracle(&timed, c.rate, c.delay, limit_packets, limit_bytes, &list);

        let mut l = link(&c);
        let got = drive(&mut l, arrivals(), &[0], timeouts_first);
        prop_assert_eq!(&got, &want);
        prop_assert_eq!(l.stats().queue_drops, want_drops);

        let mut l = link(&c);
        let late = drive(&mut l, arrivals(), &lateness, timeouts_first);
        let max_late = Duration(*lateness.iter().max().unwrap_or(&0));
        prop_assert_eq!(late.len(), want.len());
        for (&(at, id), &(due, want_id)) in late.iter().zip(&want) {
            prop_assert_eq!(id, want_id);
            prop_assert!(due <= at && at <= due + max_late, "{} due {:?} at {:?}", id, due, at);
        }
        let s = l.stats();
        prop_assert_eq!(s.arrivals, timed.len() as u64);
        prop_assert_eq!(s.delivered_packets + s.queue_drops + s.error_drops, s.arrivals);
        prop_assert_eq!((l.queue_len_packets(), l.in_flight(), l.is_busy()), (0, 0, false));
    }
}

// --- Link-layer ARQ (Karaliopoulos et al. §2). ---

fn with_arq(mut c: LinkConfig, max_retries: u32, in_order: bool) -> LinkConfig {
    c.arq = Some(crate::link::ArqConfig {
        max_retries,
        feedback_delay: None,
        in_order,
    });
    c
}

/// Five 1000-byte frames back to back (8 ms each), #2 corrupted once. Its NAK is back 500 ms
/// (twice the delay) after its last bit left at 16 ms; the retransmission goes first at
/// 516 ms (the serialiser is idle since 40 ms), leaves at 524 ms, arrives at 774 ms. In order,
/// #3–#5 wait for it; out of order they arrive at their own times.
#[test]
fn arq_retransmits_a_corrupted_frame_after_the_nak_and_keeps_the_order() {
    let list = ErrorModelConfig::List { packets: vec![2] };
    let base = with_error(config(MBPS, 250, Some(100), None), list);
    for lateness in [&[0][..], &[0, 3 * MS, 0, 7 * MS]] {
        let mut l = link(&with_arq(base.clone(), 3, true));
        let out = drive(&mut l, burst(5, 1000), lateness, true);
        let ids: Vec<u64> = out.iter().map(|(_, id)| *id).collect();
        assert_eq!(ids, [1, 2, 3, 4, 5], "lateness {lateness:?}");
        if lateness == [0] {
            assert_eq!(out[0].0, ms(258));
            assert!(out[1..].iter().all(|(t, _)| *t == ms(774)), "{out:?}");
        }
        let s = l.stats();
        assert_eq!(
            (s.arq_retransmissions, s.arq_given_up, s.error_drops),
            (1, 0, 0)
        );
        assert_eq!(s.delivered_packets, 5);
        assert_eq!(s.busy_ns, 6 * 8 * MS, "six frames on the wire");
    }
    let mut l = link(&with_arq(base, 3, false));
    let out = drive(&mut l, burst(5, 1000), &[0], true);
    assert_eq!(
        out,
        [
            (ms(258), 1),
            (ms(274), 3),
            (ms(282), 4),
            (ms(290), 5),
            (ms(774), 2)
        ]
    );
}

/// Every frame corrupted, at most 2 retransmissions: each of 3 frames goes on the wire three
/// times, is then given up (an error drop), and nothing is delivered; the retransmissions of
/// frames behind keep selective-repeat order (NAKs return in the order frames left).
#[test]
fn arq_gives_up_after_max_retries() {
    let all = ErrorModelConfig::Per { per: 1.0 };
    let c = with_arq(
        with_error(config(MBPS, 10, Some(100), None), all.clone()),
        2,
        true,
    );
    let mut l = link(&c);
    let out = drive(&mut l, burst(3, 1000), &[0], true);
    assert!(out.is_empty(), "{out:?}");
    let s = l.stats();
    assert_eq!(
        (s.arq_retransmissions, s.arq_given_up, s.error_drops),
        (6, 3, 3)
    );
    assert_eq!(s.busy_ns, 9 * 8 * MS);
    assert_eq!((l.arq_pending(), l.in_flight()), (0, 0));
    // Without ARQ, the same link loses each frame once.
    let mut plain = link(&with_error(config(MBPS, 10, Some(100), None), all));
    drive(&mut plain, burst(3, 1000), &[0], true);
    assert_eq!(
        (plain.stats().error_drops, plain.stats().busy_ns),
        (3, 24 * MS)
    );
}

proptest! {
    /// Whatever the loss rate, retries and arrival pattern: in order, frames come out in the
    /// order they entered, each at most once, never before `delay` after they entered; every
    /// frame is accounted for at every step (in `drive`); a frame is lost only after
    /// `max_retries` retransmissions.
    #[test]
    fn arq_in_order_never_reorders_or_duplicates(
        per in 0.0f64..0.9,
        retries in 0u32..4,
        gaps in proptest::collection::vec(0u64..20, 1..60),
        seed in any::<u64>(),
        in_order in any::<bool>(),
    ) {
        let c = with_arq(
            with_error(config(MBPS, 30, Some(1000), None), ErrorModelConfig::Per { per }),
            retries,
            in_order,
        );
        let mut l = Link::new(&c, Rng::new(seed, 1));
        let mut t = 0;
        let arrivals: Vec<(Instant, Packet)> = gaps
            .iter()
            .enumerate()
            .map(|(i, g)| {
                t += g;
                (ms(t), pkt(i as u64 + 1, 1000))
            })
            .collect();
        let entered: Vec<Instant> = arrivals.iter().map(|(at, _)| *at).collect();
        let out = drive(&mut l, arrivals, &[0], true);
        let ids: Vec<u64> = out.iter().map(|(_, id)| *id).collect();
        let mut sorted = ids.clone();
        sorted.sort_unstable();
        sorted.dedup();
        prop_assert_eq!(sorted.len(), ids.len(), "duplicates in {:?}", ids);
        if in_order {
            prop_assert!(ids.windows(2).all(|w| w[0] < w[1]), "{:?}", ids);
        }
        for (at, id) in &out {
            prop_assert!(*at >= entered[*id as usize - 1] + Duration::from_millis(38));
        }
        let s = l.stats();
        prop_assert_eq!(s.delivered_packets + s.error_drops, gaps.len() as u64);
        prop_assert_eq!(s.arq_given_up, if retries > 0 { s.error_drops } else { 0 });
        prop_assert!(s.arq_retransmissions <= u64::from(retries) * gaps.len() as u64);
        prop_assert_eq!((l.arq_pending(), l.in_flight()), (0, 0));
    }
}

fn with_framing(mut c: LinkConfig, encap_overhead: u32) -> LinkConfig {
    c.encap_overhead = encap_overhead;
    c
}

/// Ethernet framing (38 bytes) on 1000-byte packets at 1 Mb/s: each frame takes
/// 1038 × 8 / 10⁶ = 8.304 ms, so a burst of three arrives 8.304 ms apart; the busy time counts
/// the framing, the delivered bytes do not.
#[test]
fn framing_bytes_add_to_the_serialisation_time() {
    let mut l = link(&with_framing(config(MBPS, 250, Some(100), None), 38));
    let out = drive(&mut l, burst(3, 1000), &[0], true);
    let us = |x: u64| Instant(x * 1_000);
    assert_eq!(out, [(us(258_304), 1), (us(266_608), 2), (us(274_912), 3)]);
    let s = l.stats();
    assert_eq!((s.delivered_bytes, s.busy_ns), (3000, 3 * 8_304 * 1_000));
}

/// A packet re-timed by `set_rate` at its start instant, and a link-layer retransmission,
/// also carry the framing: 1038 bytes at 2 Mb/s is 4.152 ms.
#[test]
fn framing_bytes_apply_after_set_rate_and_to_arq_retransmissions() {
    let mut l = link(&with_framing(config(MBPS, 250, Some(100), None), 38));
    l.handle_packet(ms(10), PortId(0), pkt(1, 1000));
    l.set_rate(ms(10), Bitrate(2 * MBPS));
    assert_eq!(l.poll_timeout(), Some(Instant(264_152_000)));

    let list = ErrorModelConfig::List { packets: vec![1] };
    let c = with_arq(
        with_framing(with_error(config(MBPS, 250, Some(100), None), list), 38),
        3,
        true,
    );
    let mut l = link(&c);
    let out = drive(&mut l, burst(1, 1000), &[0], true);
    // Sent 0–8.304 ms, NAK back 500 ms later, resent 508.304–516.608 ms, delivered at 766.608.
    assert_eq!(out, [(Instant(766_608_000), 1)]);
    assert_eq!(l.stats().busy_ns, 2 * 8_304_000);
}

/// Bit errors hit the framing too: 100-byte packets with 900 bytes of framing are lost as
/// 1000-byte frames, p = 1 − (1 − 10⁻⁵)^8000 ≈ 0.0769 (not 0.0080 for 100 bytes).
#[test]
fn ber_losses_count_the_framing_bits() {
    let c = with_framing(
        with_error(
            config(1_000 * MBPS, 1, Some(100), None),
            ErrorModelConfig::Ber { ber: 1e-5 },
        ),
        900,
    );
    let n = 100_000;
    let (l, _) = run_spaced(
        &with_framing(c.clone(), 0),
        Rng::for_component(5, "link:ber"),
        n,
        100,
    );
    let unframed = l.stats().error_drops as f64;
    let mut l = Link::new(&c, Rng::for_component(5, "link:ber"));
    let gap = c.rate.tx_time(1000).as_nanos();
    let arrivals = (0..n)
        .map(|i| (Instant(i * gap), pkt(i + 1, 100)))
        .collect();
    drive(&mut l, arrivals, &[0], true);
    let framed = l.stats().error_drops as f64;
    let p = 1.0 - (1.0f64 - 1e-5).powi(8000);
    let (mean, sd) = (n as f64 * p, (n as f64 * p * (1.0 - p)).sqrt());
    assert!(
        (framed - mean).abs() < 5.0 * sd,
        "{framed} vs {mean} ± {sd}"
    );
    let p = 1.0 - (1.0f64 - 1e-5).powi(800);
    let (mean, sd) = (n as f64 * p, (n as f64 * p * (1.0 - p)).sqrt());
    assert!(
        (unframed - mean).abs() < 5.0 * sd,
        "{unframed} vs {mean} ± {sd}"
    );
}

#[test]
fn encap_overhead_is_bounded_and_named_in_errors() {
    let c = with_framing(LinkConfig::default(), crate::link::MAX_ENCAP_OVERHEAD);
    assert_eq!(c.validate(), Ok(()));
    let c = with_framing(c, crate::link::MAX_ENCAP_OVERHEAD + 1);
    assert!(c.validate().unwrap_err().starts_with("encap_overhead:"));
}
