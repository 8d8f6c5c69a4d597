//! UDP constant-bit-rate flows through the simulator: packet-exact delivery below and above
//! the bottleneck rate, loss equal to the link's drops, zero jitter on a constant path, and
//! every middlebox passing UDP untouched.

use proptest::prelude::*;
use satpep_proto::{Duration, Instant};
use satpep_sim::Simulation;

/// a —fwd (rate, 10 ms, `limit` packets)→ b and back; one UDP flow a → b for `secs` seconds.
fn path(rate_c: &str, limit: u32, app: &str) -> String {
    format!(
        r#"
name = "udp"
duration = "60s"
stop_when_done = false
[output]
series = false
interval = "1s"
[[node]]
name = "a"
[[node]]
name = "b"
[[link]]
name = "fwd"
from = "a"
to = "b"
rate = "{rate_c}"
delay = "10ms"
queue = {{ limit_packets = {limit} }}
[[link]]
name = "ret"
from = "b"
to = "a"
rate = "{rate_c}"
delay = "10ms"
[[flow]]
name = "cbr"
from = "a"
to = "b"
app = {app}
"#
    )
}

fn build(text: &str) -> Simulation {
    let loaded = satpep_scenario::load_str(text, "test", &[]).unwrap_or_else(|e| panic!("{e}"));
    Simulation::new(&loaded.scenario)
}

fn ms(x: u64) -> Instant {
    Instant::ZERO + Duration::from_millis(x)
}

/// R = 1 Mb/s of 1000-byte payloads (one every 8 ms) through C = 2 Mb/s: each 1028-byte
/// packet takes 4.112 ms on the wire and never waits, so datagram k arrives at
/// 8k + 4.112 + 10 ms. Every count is exact at every instant; jitter is exactly 0.
#[test]
fn below_the_link_rate_every_datagram_arrives_on_time() {
    let mut sim = build(&path(
        "2Mbps",
        100,
        r#"{ kind = "udp", rate = "1Mbps", packet_size = 1000, duration = "10s" }"#,
    ));
    for t in [5_000u64, 7_777, 10_100] {
        sim.run_until(ms(t));
        let k = sim.udp_sink(0).expect("udp flow");
        // Arrived: k with 8k + 14.112 ≤ t (in µs: 8000k + 14112 ≤ 1000t), none after 10 s.
        let want = ((1000 * t - 14_112) / 8000 + 1).min(1250);
        assert_eq!((k.packets, k.bytes), (want, want * 1000), "at {t} ms");
        assert_eq!((k.lost, k.out_of_order), (0, 0));
        assert_eq!(k.jitter_s, 0.0);
    }
    let src = sim.udp_source(0).expect("udp flow");
    assert_eq!((src.packets_sent(), src.bytes_sent()), (1250, 1_250_000));
    let s = sim.summary();
    let f = &s.flows[0];
    let u = f.udp.as_ref().expect("udp summary");
    assert_eq!(
        (u.packets_sent, u.packets_received, u.lost_packets),
        (1250, 1250, 0)
    );
    // 1 250 000 bytes over the 10 s of sending: R exactly.
    assert_eq!(f.goodput_bps, 1_000_000.0);
    assert_eq!(
        (f.cc.as_str(), f.bytes_acked, f.segments_sent),
        ("udp", 0, 1250)
    );
    assert_eq!(s.links[0].queue_drops, 0);
    assert_eq!(s.links[0].delivered_bytes, 1250 * 1028);
}

/// R = 2 Mb/s (one 1000-byte payload every 4 ms) through C = 1 Mb/s (8.224 ms per 1028-byte
/// packet) with a 10-packet queue: the link never idles, so the k-th delivery is at
/// 8.224 (k + 1) + 10 ms, i.e. C·t; everything else is dropped at the queue, and the sink's
/// loss count is the link's drops, less the drops after the last datagram that arrived (which
/// no receiver can tell from datagrams still to come, as in iperf3).
#[test]
fn above_the_link_rate_the_link_rate_arrives_and_the_rest_is_lost() {
    let mut sim = build(&path(
        "1Mbps",
        10,
        r#"{ kind = "udp", rate = "2Mbps", packet_size = 1000, duration = "10s" }"#,
    ));
    sim.run_until(ms(6_000));
    let k = sim.udp_sink(0).expect("udp flow");
    // (6000 − 10) / 8.224 = 728.3.
    assert_eq!(k.packets, (6_000_000 - 10_000) / 8_224);
    sim.run_until(ms(20_000));
    let k = sim.udp_sink(0).expect("udp flow");
    let sent = sim.udp_source(0).expect("udp").packets_sent();
    let s = sim.summary();
    let drops = s.links[0].queue_drops;
    assert_eq!(sent, 2500);
    assert_eq!(k.packets, s.links[0].delivered_packets);
    assert_eq!(sent - k.packets, drops);
    assert_eq!(k.lost, drops - (sent - k.expected));
    // Busy from 0 until the queue drained: ⌈(10 s + 10 queued · 8.224 ms) / 8.224 ms⌉.
    assert_eq!(k.packets, 1226);
    assert!(k.lost > 1200, "{}", k.lost);
    // The datagram admitted after each departure is the next on the 4 ms send grid, while
    // departures keep an 8.224 ms grid: its queueing varies by up to one send interval, so
    // the jitter is above 0 and below 4 ms.
    assert!(k.jitter_s > 0.0 && k.jitter_s < 4e-3, "{}", k.jitter_s);
}

#[test]
fn scenario_errors_name_the_key() {
    for (app, key, what) in [
        (
            r#"{ kind = "udp", rate = "0bps" }"#,
            "flow.cbr.app.rate",
            "above 0",
        ),
        (
            r#"{ kind = "udp", rate = "1Mbps", packet_size = 15 }"#,
            "flow.cbr.app.packet_size",
            "16–65507",
        ),
        (
            r#"{ kind = "udp", rate = "1Mbps", packet_size = 65508 }"#,
            "flow.cbr.app.packet_size",
            "16–65507",
        ),
        (
            r#"{ kind = "udp", rate = "1Mbps", duration = "0s" }"#,
            "flow.cbr.app.duration",
            "above 0",
        ),
        (r#"{ kind = "udp" }"#, "flow.cbr.app", "rate"),
    ] {
        let e = satpep_scenario::load_str(&path("1Mbps", 10, app), "u.toml", &[])
            .err()
            .unwrap_or_else(|| panic!("{app} accepted"))
            .to_string();
        assert!(
            e.contains("u.toml:") && e.contains(key) && e.contains(what),
            "{app}: {e}"
        );
    }
}

/// A UDP stream beside a TCP bulk flow through a router running each middlebox: every
/// datagram arrives (the sink counts only datagrams whose IPv4 and UDP checksums verify and
/// whose stamp is intact), none lost or reordered, and the TCP flow (3 MB, which the queues
/// hold without a drop) still completes.
#[test]
fn every_middlebox_passes_udp_untouched() {
    let gw_queue_kinds = [
        ("drop_tail", r#"kind = "drop_tail""#),
        ("ack_suppression", r#"kind = "ack_suppression""#),
        ("ack_filtering", r#"kind = "ack_filtering""#),
    ];
    let middleboxes = [
        "none",
        r#"{ kind = "pass_through" }"#,
        r#"{ kind = "snoop" }"#,
        r#"{ kind = "spoof", internet_port = 0 }"#,
        r#"{ kind = "split_tcp" }"#,
        r#"{ kind = "supercharger", satellite_port = 1 }"#,
        r#"{ kind = "dupack_delay" }"#,
    ];
    for (qname, q) in gw_queue_kinds {
        for mb in middleboxes {
            let mbline = if mb == "none" {
                String::new()
            } else {
                format!("middlebox = {mb}")
            };
            let text = format!(
                r#"
name = "mb"
duration = "60s"
stop_when_done = false
[output]
series = false
[[node]]
name = "server"
[[node]]
name = "gw"
kind = "router"
{mbline}
[[node]]
name = "client"
[[link]]
name = "up"
from = "server"
to = "gw"
rate = "10Mbps"
delay = "1ms"
queue = {{ limit_packets = 10000 }}
[[link]]
name = "sat"
from = "gw"
to = "client"
rate = "4Mbps"
delay = "250ms"
queue = {{ limit_packets = 10000 }}
[[link]]
name = "back"
from = "client"
to = "gw"
rate = "1Mbps"
delay = "250ms"
queue = {{ {q}, limit_packets = 100 }}
[[link]]
name = "down"
from = "gw"
to = "server"
rate = "10Mbps"
delay = "1ms"
[[flow]]
name = "bulk"
from = "server"
to = "client"
app = {{ kind = "bulk", bytes = "3MB" }}
[[flow]]
name = "down_udp"
from = "server"
to = "client"
app = {{ kind = "udp", rate = "200kbps", packet_size = 500, duration = "15s" }}
[[flow]]
name = "up_udp"
from = "client"
to = "server"
app = {{ kind = "udp", rate = "64kbps", packet_size = 100, duration = "15s" }}
"#
            );
            let mut sim = build(&text);
            sim.run_until(ms(60_000));
            let case = format!("queue {qname}, middlebox {mb}");
            assert_eq!(sim.drops(), [], "{case}");
            // 200 kb/s of 500-byte payloads for 15 s: 750 datagrams; 64 kb/s of 100: 1200.
            for (flow, sent) in [(1, 750), (2, 1200)] {
                let k = sim.udp_sink(flow).expect("udp flow");
                assert_eq!(
                    (k.packets, k.lost, k.out_of_order, k.expected),
                    (sent, 0, 0, sent),
                    "{case}, flow {flow}: drops {:?}, links {:?}",
                    sim.drops(),
                    sim.summary()
                        .links
                        .iter()
                        .map(|l| (l.queue_drops, l.max_queue_packets))
                        .collect::<Vec<_>>()
                );
            }
            assert_eq!(
                sim.listener(0).bytes_delivered(),
                3_000_000,
                "{case}: TCP delivered {}",
                sim.listener(0).bytes_delivered()
            );
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]
    /// Any rate and size through any link: below its capacity (counting the 28 header bytes)
    /// every datagram sent arrives, in order, with jitter 0; above it, what did not arrive is
    /// exactly what the queue dropped.
    #[test]
    fn delivered_plus_dropped_is_sent(rate_kbps in 50u64..5_000, size in 16u64..1_472,
                                      link_kbps in 50u64..5_000, limit in 1u32..50) {
        let app = format!(r#"{{ kind = "udp", rate = "{rate_kbps}kbps", packet_size = {size}, duration = "2s" }}"#);
        let mut sim = build(&path(&format!("{link_kbps}kbps"), limit, &app));
        sim.run_until(ms(30_000));
        let k = sim.udp_sink(0).expect("udp flow");
        let sent = sim.udp_source(0).expect("udp").packets_sent();
        // ⌈2 s · R / (8 · size)⌉ datagrams.
        prop_assert_eq!(sent, (2 * rate_kbps * 1000).div_ceil(8 * size));
        let s = sim.summary();
        prop_assert_eq!(sent - k.packets, s.links[0].queue_drops);
        prop_assert_eq!(k.lost, s.links[0].queue_drops - (sent - k.expected));
        prop_assert_eq!(k.out_of_order, 0);
        prop_assert_eq!(k.bytes, k.packets * size);
        if rate_kbps * (size + 28) < link_kbps * size {
            prop_assert_eq!(k.packets, sent);
            prop_assert_eq!(k.jitter_s, 0.0);
        }
    }
}

/// What one datagram costs the event loop on a → r → b, two links and a plain router: the
/// source's timer, each link's wake-up for its delivery, and the delivery to b, four events.
/// Entering a link or a router that only forwards is not an event (`Simulation::flush`);
/// as queued deliveries those were three more per datagram. A router with a middlebox keeps
/// its deliveries queued, so that its timers due at an instant still run before a packet
/// arriving then (a fifth event). Every datagram arrives on time either way: 8k ms + (4.112 +
/// 10) ms + (0.4112 + 5) ms.
#[test]
fn a_datagram_through_a_router_costs_four_events_five_with_a_middlebox() {
    for (middlebox, per_datagram) in [("", 4), (r#"middlebox = { kind = "pass_through" }"#, 5)] {
        let text = format!(
            r#"
name = "hops"
duration = "12s"
stop_when_done = false
[output]
series = false
interval = "1s"
[[node]]
name = "a"
[[node]]
name = "r"
kind = "router"
{middlebox}
[[node]]
name = "b"
[[link]]
name = "ar"
from = "a"
to = "r"
rate = "2Mbps"
delay = "10ms"
[[link]]
name = "rb"
from = "r"
to = "b"
rate = "20Mbps"
delay = "5ms"
[[link]]
name = "ba"
from = "b"
to = "a"
rate = "2Mbps"
delay = "15ms"
[[flow]]
name = "cbr"
from = "a"
to = "b"
app = {{ kind = "udp", rate = "1Mbps", packet_size = 1000, duration = "10s" }}
"#
        );
        let mut sim = build(&text);
        // Datagram k (from 0) arrives at 8k + 19.5232 ms: number 1 000 (k = 999) at 8 011.5 ms,
        // number 1 001 at 8 019.5 ms.
        sim.run_until(ms(8_000 + 19));
        assert_eq!(sim.udp_sink(0).expect("udp flow").packets, 1000);
        sim.run_until(ms(8_000 + 20));
        assert_eq!(sim.udp_sink(0).expect("udp flow").packets, 1001);
        sim.run_until(ms(12_000));
        let k = sim.udp_sink(0).expect("udp flow");
        assert_eq!((k.packets, k.lost, k.jitter_s), (1250, 0, 0.0));
        // Samples at 0, 1, …, 12 s are one event each.
        assert_eq!(sim.events(), per_datagram * 1250 + 13, "{middlebox}");
    }
}
