//! Tests of the schedules: parsing (named lines, properties over random input) and a link
//! following each schedule, with the numbers worked by hand.

use proptest::prelude::{prop, prop_assert, prop_assert_eq, prop_assume, proptest};

use super::*;
use crate::link::{Link, LinkConfig, QueueConfig};
use crate::node::{Node, Packet, PortId};
use crate::rand::Rng;

const MS: u64 = 1_000_000;

fn ms(x: u64) -> Instant {
    Instant(x * MS)
}

fn us(x: u64) -> Instant {
    Instant(x * 1_000)
}

/// A packet of `wire_len` bytes (an IPv4 header, then payload), tagged with `id`.
fn pkt(id: u64, wire_len: u32) -> Packet {
    let mut p = Packet::new(&[0x45; 20], wire_len - 20);
    p.id = id;
    p
}

/// 1 Mb/s (a 1000-byte packet takes 8 ms), no delay, a queue of `limit` packets.
fn base(limit: u32) -> LinkConfig {
    LinkConfig {
        rate: Bitrate(1_000_000),
        delay: Duration::ZERO,
        queue: QueueConfig {
            limit_packets: Some(limit),
            ..QueueConfig::default()
        },
        ..LinkConfig::default()
    }
}

fn with_trace(mut c: LinkConfig, trace: &str) -> LinkConfig {
    let t = DeliveryTrace::parse_mahimahi(trace).expect("a valid trace");
    c.rate_trace = Some(TraceFile::new("test.mahi", t));
    c
}

fn new_link(c: &LinkConfig) -> Link {
    c.validate().expect("valid config");
    Link::new(c, Rng::for_component(1, "link:test"))
}

/// Feed (instant, id, bytes) arrivals in order, waking the link at each `poll_timeout`;
/// returns (delivery instant, id) and the ids dropped.
fn run(l: &mut Link, arrivals: &[(Instant, u64, u32)]) -> (Vec<(Instant, u64)>, Vec<u64>) {
    let mut out = Vec::new();
    let mut dropped = Vec::new();
    let mut i = 0;
    loop {
        let next_arrival = arrivals.get(i).map(|a| a.0);
        let now = match (next_arrival, l.poll_timeout()) {
            (None, None) => break,
            (Some(a), Some(w)) if w < a => {
                l.handle_timeout(w);
                w
            }
            (None, Some(w)) => {
                l.handle_timeout(w);
                w
            }
            (Some(a), _) => {
                let (t, id, len) = arrivals[i];
                i += 1;
                l.handle_packet(t, PortId(0), pkt(id, len));
                a
            }
        };
        while let Some(tx) = l.poll_transmit(now) {
            out.push((now, tx.pkt.id));
        }
        while let Some(d) = l.poll_drop() {
            dropped.push(d.id);
        }
    }
    (out, dropped)
}

fn burst(n: u64, len: u32) -> Vec<(Instant, u64, u32)> {
    (1..=n).map(|i| (Instant::ZERO, i, len)).collect()
}

fn times_ms(out: &[(Instant, u64)]) -> Vec<f64> {
    out.iter().map(|(t, _)| t.0 as f64 / MS as f64).collect()
}

// --- Mahimahi trace parsing -------------------------------------------------------------

#[test]
fn one_line_trace_is_one_opportunity_per_ms_12_mbps() {
    let t = DeliveryTrace::parse_mahimahi("1\n").unwrap();
    assert_eq!(t.opportunities(), 1);
    assert_eq!(t.period(), Duration::from_millis(1));
    assert_eq!(t.mean_rate(), Bitrate(12_000_000));
    // The opening lines of Mahimahi's traces/Verizon-LTE-short.down, as a whole trace: 20
    // opportunities in 10 ms = 24 Mb/s.
    let v = "0\n0\n1\n1\n2\n2\n3\n3\n3\n3\n5\n5\n6\n6\n6\n7\n8\n9\n9\n10\n";
    let t = DeliveryTrace::parse_mahimahi(v).unwrap();
    assert_eq!(
        (t.opportunities(), t.period()),
        (20, Duration::from_millis(10))
    );
    assert_eq!(t.mean_rate(), Bitrate(24_000_000));
    // CRLF line ends and surrounding blanks are accepted; no final newline is needed.
    assert_eq!(
        DeliveryTrace::parse_mahimahi(" 3\r\n5")
            .unwrap()
            .opportunities(),
        2
    );
}

#[test]
fn mahimahi_parse_errors_name_the_line() {
    let cases = [
        ("1\n2\n\n3\n", 3, "empty line"),
        ("1\n2\n1\n", 3, "must not decrease: 1 ms after 2 ms"),
        ("1\n2.5\n", 2, "whole milliseconds"),
        ("-1\n", 1, "whole milliseconds"),
        ("1\n99999999999\n", 2, "whole milliseconds"),
        ("0\n0\n", 2, "above 0 ms"),
        ("", 1, "no timestamps"),
        (
            "1\n\u{1b}[2J\n",
            2,
            "a field of 4 characters that is not a number (not quoted)",
        ),
        ("1\n2.5\n", 2, "got `2.5`"),
    ];
    for (text, line, words) in cases {
        let e = DeliveryTrace::parse_mahimahi(text).unwrap_err();
        assert_eq!(e.line, line, "{text:?}: {e}");
        assert!(e.message.contains(words), "{text:?}: {e}");
        assert!(!e.message.contains('\u{1b}'), "{e}");
    }
}

/// Issue 36 (8): a trace path may name any file; an error quotes nothing of a line that is
/// not a trace's (here the first entry of a shadow file), only its number and shape.
#[test]
fn errors_quote_no_line_that_is_not_a_trace() {
    let secret = "root:$6$Xq9Zl0Ab$Kq0CNsecretHASHvalue0123456789abcdef:19700:0:99999:7:::";
    let text = format!("{secret}\nbin:*:19700:0:99999:7:::\n");
    let e = DeliveryTrace::parse_mahimahi(&text).unwrap_err();
    assert_eq!(e.line, 1);
    let step = StepTrace::parse(&text, StepKind::DelayMs).unwrap_err();
    for msg in [e.to_string(), step.to_string()] {
        assert!(
            !msg.contains("root") && !msg.contains("Xq9") && !msg.contains("secret"),
            "{msg}"
        );
    }
    let two = StepTrace::parse("0 10\nuser:pass\n", StepKind::DelayMs).unwrap_err();
    assert!(!two.to_string().contains("pass"), "{two}");
    let three = StepTrace::parse("0 10\nuser pass word\n", StepKind::DelayMs).unwrap_err();
    assert!(
        three.to_string().contains("got 3 fields") && !three.to_string().contains("pass"),
        "{three}"
    );
}

#[test]
fn opportunity_index_arithmetic_across_periods() {
    // Opportunities at 0, 0, 10 ms, repeating every 10 ms: 0,0,10 | 10,10,20 | 20,20,30 …
    let t = DeliveryTrace::parse_mahimahi("0\n0\n10\n").unwrap();
    let at: Vec<u64> = (0..7).map(|j| t.at(j).0 / MS).collect();
    assert_eq!(at, [0, 0, 10, 10, 10, 20, 20]);
    assert_eq!(t.first_after(ms(0), false), 2);
    assert_eq!(t.first_after(ms(5), false), 2);
    assert_eq!(t.first_after(ms(10), false), 5);
    assert_eq!(t.first_after(ms(10), true), 2);
    assert_eq!(t.first_after(ms(0), true), 0);
    assert_eq!(t.first_after(Instant(10 * MS - 1), true), 2);
}

// --- a link paced by a trace ---------------------------------------------------------------

#[test]
fn saturated_link_follows_the_trace_exactly() {
    // 12 opportunities every millisecond: 12 × 1500 B per ms = 144 Mb/s. 1200 packets of
    // 1500 B queued at 0 leave 12 at each of 1, 2, …, 100 ms.
    let c = with_trace(base(2000), &"1\n".repeat(12));
    let mut l = new_link(&c);
    let (out, dropped) = run(&mut l, &burst(1200, 1500));
    assert!(dropped.is_empty());
    assert_eq!(out.len(), 1200);
    for (i, (t, id)) in out.iter().enumerate() {
        assert_eq!(*id, i as u64 + 1);
        assert_eq!(*t, ms(i as u64 / 12 + 1), "packet {}", i + 1);
    }
    let s = l.stats();
    // 1 200 × 1 500 B × 8 over 100 ms = 144 Mb/s.
    assert_eq!(s.delivered_bytes * 8 * 10, 144_000_000);
}

#[test]
fn small_packets_share_opportunities_byte_by_byte() {
    // 52-byte ACKs cost 56 B each (Mahimahi counts the 4-byte tun_pi): packet i leaves at the
    // opportunity carrying its last byte, ⌈56 i / 1504⌉ ms with one opportunity per ms.
    let mut l = new_link(&with_trace(base(1000), "1"));
    let (out, _) = run(&mut l, &burst(100, 52));
    let want: Vec<Instant> = (1..=100u64).map(|i| ms((56 * i).div_ceil(1504))).collect();
    assert_eq!(out.iter().map(|o| o.0).collect::<Vec<_>>(), want);
    // 26 whole ACKs fit the first opportunity (1 456 B), the 27th ends in the second.
    assert_eq!(want[25], ms(1));
    assert_eq!(want[26], ms(2));
}

#[test]
fn an_opportunity_at_the_arrival_instant_is_already_spent() {
    // One opportunity per ms. A packet arriving at 5 ms exactly misses the 5 ms one
    // (Mahimahi's rationalize-before-enqueue); one arriving at 4.5 ms takes it.
    let mut l = new_link(&with_trace(base(10), "1"));
    let (out, _) = run(&mut l, &[(us(4_500), 1, 1500), (ms(5), 2, 1500)]);
    assert_eq!(out, vec![(ms(5), 1), (ms(6), 2)]);
    // Leftover bytes of an opportunity are wasted once the queue is empty: a 100-byte packet
    // leaves at 5 ms with 1 300 B to spare, the next arrives at 5 ms and waits for 6 ms.
    let mut l = new_link(&with_trace(base(10), "1"));
    let (out, _) = run(&mut l, &[(us(4_500), 1, 100), (ms(5), 2, 100)]);
    assert_eq!(out, vec![(ms(5), 1), (ms(6), 2)]);
}

#[test]
fn the_trace_loops_with_its_last_timestamp_as_period() {
    // "0 0 10": opportunities at 0, 0, then three at every multiple of 10 ms (one ending a
    // period, two starting the next). The burst arrives at 0, when the two at 0 are already
    // spent: 3 packets leave at 10, 20, …, 100 ms (30 in all), the last two at 110 ms.
    let mut l = new_link(&with_trace(base(100), "0\n0\n10\n"));
    let (out, _) = run(&mut l, &burst(32, 1500));
    let want: Vec<f64> = (0..32).map(|k| 10.0 * (k / 3 + 1) as f64).collect();
    assert_eq!(times_ms(&out), want);
    assert_eq!(out.iter().filter(|o| o.0 <= ms(100)).count(), 30);
}

#[test]
fn a_packet_larger_than_an_opportunity_spans_several() {
    // 4 000 B + 4 = 4 004 B: 1 504 + 1 504 + 996 → leaves at the third opportunity (3 ms); the
    // next 1500-byte packet has 508 B of that one and leaves at 4 ms.
    let mut l = new_link(&with_trace(base(10), "1"));
    let (out, _) = run(
        &mut l,
        &[(Instant::ZERO, 1, 4000), (Instant::ZERO, 2, 1500)],
    );
    assert_eq!(out, vec![(ms(3), 1), (ms(4), 2)]);
}

#[test]
fn unread_trace_never_sends_and_is_refused_by_validate() {
    let mut c = base(10);
    c.rate_trace = Some(TraceFile {
        path: "x.mahi".into(),
        data: None,
    });
    assert!(c.validate().unwrap_err().starts_with("rate_trace:"));
    let mut l = Link::new(&c, Rng::new(1, 1));
    l.handle_packet(Instant::ZERO, PortId(0), pkt(1, 100));
    assert_eq!(l.poll_transmit(ms(1_000_000)).map(|t| t.pkt.id), None);
}

// --- outages ---------------------------------------------------------------------------------

fn outage(start_ms: u64, len_ms: u64) -> Outage {
    Outage {
        start: Duration::from_millis(start_ms),
        duration: Duration::from_millis(len_ms),
    }
}

#[test]
fn outage_stops_the_serialiser_and_the_queue_waits() {
    // 1000 B = 8 ms. Finishes 8, 16; the third (16–24) is cut by the outage 20–120 and ends
    // 100 ms late, at 124; then 132, 140.
    let mut c = base(100);
    c.outages = vec![outage(20, 100)];
    let mut l = new_link(&c);
    let (out, _) = run(&mut l, &burst(5, 1000));
    assert_eq!(times_ms(&out), [8.0, 16.0, 124.0, 132.0, 140.0]);
    // Idle at the outage: a packet arriving inside it waits until its end, then 8 ms.
    let mut l = new_link(&c);
    let (out, _) = run(&mut l, &[(ms(50), 1, 1000), (ms(60), 2, 1000)]);
    assert_eq!(times_ms(&out), [128.0, 136.0]);
}

#[test]
fn outage_drops_exactly_what_overflows_the_queue() {
    // 1 Mb/s, queue 10. Packets of 1000 B every 8 ms (exactly the link rate) from 0 to 992 ms:
    // 125 packets. An outage 200–600 ms: packet 25 (192–200) has just left; the 50 arrivals
    // of the outage find the serialiser stopped: 10 wait, 40 are dropped.
    let mut c = base(10);
    c.outages = vec![outage(200, 400)];
    let arrivals: Vec<_> = (0..125u64).map(|i| (ms(8 * i), i + 1, 1000)).collect();
    let mut l = new_link(&c);
    let (out, dropped) = run(&mut l, &arrivals);
    // Arrivals at 200, 208, …, 592 (50 of them): the first 10 fill the queue, 40 dropped:
    // ids 36..=75 (arrival 8·(id−1) ms from 280 to 592).
    assert_eq!(dropped, (36..=75).collect::<Vec<u64>>());
    assert_eq!(out.len() + dropped.len(), 125);
    // Packet 25 leaves at 200 ms; 26, which arrived at 200, starts when the outage ends.
    let at = |out: &[(Instant, u64)], id| out.iter().find(|o| o.1 == id).map(|o| o.0);
    assert_eq!(at(&out, 25), Some(ms(200)));
    assert_eq!(at(&out, 26), Some(ms(608)));
    assert_eq!(at(&out, 35), Some(ms(680)));
    // Without the outage nothing is dropped and 26 leaves at 208.
    let mut l = new_link(&base(10));
    let (out, dropped) = run(&mut l, &arrivals);
    assert!(dropped.is_empty());
    assert_eq!(at(&out, 26), Some(ms(208)));
}

#[test]
fn outage_wastes_trace_opportunities() {
    // One opportunity per ms; an outage 3–7 ms: packets leave at 1, 2, then 7, 8 (the one at 7
    // ms is after the outage, which ends at 7).
    let mut c = with_trace(base(10), "1");
    c.outages = vec![outage(3, 4)];
    let mut l = new_link(&c);
    let (out, _) = run(&mut l, &burst(4, 1500));
    assert_eq!(times_ms(&out), [1.0, 2.0, 7.0, 8.0]);
    // A packet arriving inside the outage takes the opportunity at its end (7 ms), too.
    let mut l = new_link(&c);
    let (out, _) = run(&mut l, &[(ms(4), 1, 1500), (us(6_500), 2, 1500)]);
    assert_eq!(times_ms(&out), [7.0, 8.0]);
}

#[test]
fn outages_must_be_ordered_and_positive() {
    assert_eq!(validate_outages(&[outage(0, 5), outage(5, 5)]), Ok(()));
    let e = validate_outages(&[outage(0, 5), outage(4, 5)]).unwrap_err();
    assert!(e.starts_with("outages.1.start:"), "{e}");
    let e = validate_outages(&[outage(1, 0)]).unwrap_err();
    assert!(e.starts_with("outages.0.duration:"), "{e}");
}

// --- delay and loss schedules ------------------------------------------------------------------

#[test]
fn delay_step_changes_the_delay_from_its_time_and_never_reorders() {
    // 1000 B = 8 ms, 250 ms delay until a step to 50 ms at 20 ms and back to 300 ms at 40 ms.
    let mut c = base(100);
    c.delay = Duration::from_millis(250);
    let steps = StepTrace::parse("20 50\n40, 300\n", StepKind::DelayMs).unwrap();
    c.delay_trace = Some(TraceFile::new("d.txt", steps));
    let mut l = new_link(&c);
    let (out, _) = run(&mut l, &burst(6, 1000));
    // Completions 8, 16 (250 ms) → 258, 266; 24, 32 (50 ms) → 74, 82 would overtake, so they
    // wait behind 266 (FIFO); 40, 48 (300 ms) → 340, 348.
    assert_eq!(times_ms(&out), [258.0, 266.0, 266.0, 266.0, 340.0, 348.0]);
    // Sent later, after the queue ahead has gone, the 50 ms applies as is.
    let mut l = new_link(&c);
    let (out, _) = run(&mut l, &[(ms(25), 1, 1000)]);
    assert_eq!(times_ms(&out), [83.0]);
}

#[test]
fn loss_steps_drop_exactly_inside_their_window() {
    // Probability 1 from 100 ms to 200 ms, then 0: of packets finishing every 8 ms, exactly
    // those finishing in [100, 200) are lost: 104, 112, …, 200? (200 is after the window.)
    let mut c = base(1000);
    let steps = StepTrace::parse("100 1\n200 0\n", StepKind::Probability).unwrap();
    c.loss_trace = Some(TraceFile::new("l.txt", steps));
    let mut l = new_link(&c);
    let (out, dropped) = run(&mut l, &burst(50, 1000));
    // Packet i finishes at 8i ms: i = 13 (104 ms) to 24 (192 ms) are lost, 12 of them.
    assert_eq!(dropped, (13..=24).collect::<Vec<u64>>());
    assert_eq!(out.len(), 38);
    assert_eq!(l.stats().error_drops, 12);
}

#[test]
fn loss_probability_half_loses_about_half_and_leaves_the_error_model_draws_alone() {
    let mut c = base(5000);
    c.error = crate::link::ErrorModelConfig::Per { per: 0.1 };
    let plain = {
        let mut l = new_link(&c);
        run(&mut l, &burst(4000, 100)).1
    };
    let steps = StepTrace::parse("0 0.5\n", StepKind::Probability).unwrap();
    c.loss_trace = Some(TraceFile::new("l.txt", steps));
    let mut l = new_link(&c);
    let (_, dropped) = run(&mut l, &burst(4000, 100));
    // Every packet the error model drops alone is still dropped.
    assert!(plain.iter().all(|id| dropped.contains(id)));
    // 1 − 0.9 × 0.5 = 0.55 of 4 000 = 2 200, σ ≈ 31.
    assert!(
        (2_050..=2_350).contains(&dropped.len()),
        "{}",
        dropped.len()
    );
}

#[test]
fn step_parse_errors_name_the_line() {
    let cases = [
        ("0 10\n5\n", StepKind::DelayMs, 2, "two numbers"),
        ("0 10\n5 1 2\n", StepKind::DelayMs, 2, "two numbers"),
        ("# c\n0 10\n0 20\n", StepKind::DelayMs, 3, "must increase"),
        ("0 -1\n", StepKind::DelayMs, 1, "one-way delay"),
        ("0 1.5\n", StepKind::Probability, 1, "[0, 1]"),
        ("x 1\n", StepKind::Probability, 1, "time in milliseconds"),
        ("0 nan\n", StepKind::Probability, 1, "[0, 1], got `nan`"),
        ("\n# only comments\n", StepKind::Probability, 1, "no steps"),
        ("0 10\n5\n", StepKind::DelayMs, 2, "got 1 field"),
    ];
    for (text, kind, line, words) in cases {
        let e = StepTrace::parse(text, kind).unwrap_err();
        assert_eq!(e.line, line, "{text:?}: {e}");
        assert!(e.message.contains(words), "{text:?}: {e}");
    }
    let t = StepTrace::parse("0 250 # GEO\n1500.5,270.25\n", StepKind::DelayMs).unwrap();
    let mut cur = 0;
    assert_eq!(t.value_at(Instant(1_500_499_999), &mut cur), Some(250.0));
    assert_eq!(t.value_at(Instant(1_500_500_000), &mut cur), Some(270.25));
    // A caller that goes back in time is answered right.
    assert_eq!(t.value_at(ms(1), &mut cur), Some(250.0));
}

proptest! {
    /// Any non-decreasing list of timestamps with a last one above 0 parses back to itself,
    /// and the opportunities it yields are non-decreasing and repeat with the period.
    #[test]
    fn mahimahi_traces_round_trip(mut v in prop::collection::vec(0u32..5_000, 1..200)) {
        v.sort_unstable();
        prop_assume!(*v.last().unwrap() > 0);
        let text: String = v.iter().map(|m| format!("{m}\n")).collect();
        let t = DeliveryTrace::parse_mahimahi(&text).unwrap();
        prop_assert_eq!(&t.ms, &v);
        let n = v.len() as u64;
        let p = u64::from(*v.last().unwrap()) * MS;
        for j in 0..3 * n {
            prop_assert!(t.at(j) <= t.at(j + 1));
            prop_assert_eq!(t.at(j + n).0, t.at(j).0 + p);
            // first_after(at(j)) is the first index beyond every opportunity at that instant.
            let k = t.first_after(t.at(j), false);
            prop_assert!(k > j && t.at(k) > t.at(j) && t.at(k - 1) <= t.at(j));
        }
    }

    /// Arbitrary text never panics; an error names a line that exists (or 1 for empty text).
    #[test]
    fn arbitrary_text_never_panics(text in "[0-9 ,.#\\-\\r\\n a-z]{0,300}") {
        let lines = text.split('\n').count().max(1);
        if let Err(e) = DeliveryTrace::parse_mahimahi(&text) {
            prop_assert!((1..=lines).contains(&e.line), "{} of {}", e.line, lines);
        }
        for kind in [StepKind::DelayMs, StepKind::Probability] {
            if let Err(e) = StepTrace::parse(&text, kind) {
                prop_assert!((1..=lines).contains(&e.line));
            }
        }
    }

    /// A saturated link on a trace delivers exactly one 1500-byte packet per opportunity.
    #[test]
    fn saturated_link_uses_every_opportunity(mut v in prop::collection::vec(0u32..50, 1..20)) {
        v.sort_unstable();
        prop_assume!(*v.last().unwrap() > 0);
        let text: String = v.iter().map(|m| format!("{m}\n")).collect();
        let trace = DeliveryTrace::parse_mahimahi(&text).unwrap();
        let n = 3 * v.len() as u64;
        let mut l = new_link(&with_trace(base(10_000), &text));
        let (out, _) = run(&mut l, &burst(n, 1500));
        // Opportunities strictly after 0 (the arrival instant), in order.
        let first = trace.first_after(Instant::ZERO, false);
        let want: Vec<Instant> = (first..first + n).map(|j| trace.at(j)).collect();
        prop_assert_eq!(out.iter().map(|o| o.0).collect::<Vec<_>>(), want);
    }
}

proptest! {
    /// The `link_trace` fuzz target's body over random inputs (the corpus runs in
    /// `fuzzing::tests::every_corpus_runs_clean`).
    #[test]
    fn fuzz_body_on_random_traces(mode in 0u8..3, v in prop::collection::vec(0u32..200, 0..60), junk in "[0-9 .\n#]{0,40}") {
        let mut text: String = v.iter().map(|m| format!("{m} {}\n", m % 2)).collect();
        if mode == 0 {
            let mut w = v.clone();
            w.sort_unstable();
            text = w.iter().map(|m| format!("{m}\n")).collect();
        }
        text.push_str(&junk);
        let mut data = vec![mode];
        data.extend_from_slice(text.as_bytes());
        fuzzing::trace_input(&data);
    }
}

#[test]
fn set_rate_never_retimes_a_traced_packet_nor_one_already_under_way() {
    // Traced: a packet starting at 4.5 ms leaves at the 5 ms opportunity whatever the rate.
    let mut l = new_link(&with_trace(base(10), "1"));
    l.handle_packet(us(4_500), PortId(0), pkt(1, 1500));
    l.set_rate(us(4_500), Bitrate(1_000));
    assert_eq!(l.poll_timeout(), Some(ms(5)));
    // Constant rate: 1000 B at 1 Mb/s from 0 ends at 8 ms; a new rate at 4 ms applies to the
    // next packet only.
    let mut l = new_link(&base(10));
    l.handle_packet(Instant::ZERO, PortId(0), pkt(1, 1000));
    l.set_rate(ms(4), Bitrate(2_000_000));
    assert_eq!(l.poll_timeout(), Some(ms(8)));
    // A zero rate, even at the packet's start instant, pauses after it: it keeps its 8 ms.
    let mut l = new_link(&base(10));
    l.handle_packet(Instant::ZERO, PortId(0), pkt(1, 1000));
    l.set_rate(Instant::ZERO, Bitrate(0));
    assert_eq!(l.poll_timeout(), Some(ms(8)));
    // With an outage 2–6 ms the same packet ends at 12 ms, and a rate set at its start
    // instant re-times it through the outage: 1000 B at 2 Mb/s = 4 ms, + 4 ms = 8 ms.
    let mut c = base(10);
    c.outages = vec![outage(2, 4)];
    let mut l = new_link(&c);
    l.handle_packet(Instant::ZERO, PortId(0), pkt(1, 1000));
    assert_eq!(l.poll_timeout(), Some(ms(12)));
    l.set_rate(Instant::ZERO, Bitrate(2_000_000));
    assert_eq!(l.poll_timeout(), Some(ms(8)));
}
