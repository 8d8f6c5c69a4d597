//! A Mahimahi trace drives a link of the emulator on real traffic: iperf3 UDP, saturating,
//! gets exactly the trace's capacity. Needs root, network namespaces and iperf3, as
//! `emulator.rs` does (CI runs it as root with `CI=true`: there, a missing capability fails).

use std::process::Command;

use satpep_emu::{netns, EmuOptions};
use satpep_proto::Duration;

fn can_emulate(test: &str) -> bool {
    let ok = netns::check_privileges().is_ok()
        && Command::new("ip")
            .args(["netns", "list"])
            .output()
            .is_ok_and(|o| o.status.success())
        && Command::new("sh")
            .args(["-c", "command -v iperf3"])
            .output()
            .is_ok_and(|o| o.status.success());
    if !ok {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must run {test}: it needs root, network namespaces and iperf3"
        );
        println!("SKIP: needs root, network namespaces and iperf3 ({test})");
    }
    ok
}

/// A fading trace, period 100 ms: 4 opportunities per ms for 50 ms, then 1 per ms for 50 ms —
/// 250 per period, 2 500 per second. iperf3 sends 1472-byte UDP payloads (1500-byte IP
/// packets, one per opportunity) at 60 Mb/s, twice the capacity, for 10 s; the receiver gets
/// 2 500 × 1472 × 8 = 29.44 Mb/s. The same trace in `sim` (crates/sim/tests/link_traces.rs,
/// `fading_trace_gives_the_goodput_of_each_phase`) gives TCP exactly the same packet rate.
#[test]
fn fading_mahimahi_trace_sets_udp_goodput_on_real_traffic() {
    let name = "fading_mahimahi_trace_sets_udp_goodput_on_real_traffic";
    if !can_emulate(name) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut trace = String::new();
    for ms in 1..=50 {
        trace.push_str(&format!("{ms}\n").repeat(4));
    }
    for ms in 51..=100 {
        trace.push_str(&format!("{ms}\n"));
    }
    let trace_path = dir.path().join("fade.mahi");
    std::fs::write(&trace_path, trace).unwrap();
    let text = format!(
        r#"
name = "fade"
[[node]]
name = "gw"
address = "10.0.0.1"
[[node]]
name = "term"
address = "10.0.1.1"
[[link]]
name = "fwd"
from = "gw"
to = "term"
delay = "20ms"
rate_trace = {:?}
queue = {{ limit_packets = 200 }}
[[link]]
name = "ret"
from = "term"
to = "gw"
rate = "20Mbps"
delay = "20ms"
[[flow]]
from = "gw"
to = "term"
"#,
        trace_path.display().to_string()
    );
    let scenario = satpep_scenario::load_str(&text, "<test>", &[])
        .unwrap_or_else(|e| panic!("{e}"))
        .scenario;
    let out_dir = dir.path().join("out");
    let mut opts = EmuOptions::new(&out_dir);
    // The client sends from the gateway across the traced forward link to the terminal.
    opts.server_on = Some("term".into());
    opts.client_on = Some("gw".into());
    opts.server = Some("iperf3 -s -1".into());
    opts.client = Some("iperf3 -c {server} -u -b 60M -l 1472 -t 10 -J".into());
    opts.duration = Some(Duration::from_secs(30));
    let out = satpep_emu::run(&scenario, &opts).unwrap();
    let log = std::fs::read_to_string(&out.client_log).unwrap();
    assert_eq!(out.summary.client_exit, Some(0), "{log}");
    // iperf3 warns that a 1472-byte block exceeds the TCP MSS before its JSON: skip to it.
    let body = log.find('{').map_or("", |i| &log[i..]);
    let json: serde_json::Value =
        serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {log}"));
    // The receiver's byte count, over the sender's 10 s. iperf3's own receiver rate divides by
    // the server's interval, which ends when the TCP control message TEST_END arrives: that
    // segment crosses the same full queue and, when the queue drops it, waits for an RTO (a CI
    // run measured 28.84 Mb/s, −2.0 %, that way). Bytes do not depend on it.
    let received = &json["end"]["sum_received"];
    let bytes = received["bytes"]
        .as_f64()
        .unwrap_or_else(|| panic!("{log}"));
    let sent_seconds = json["end"]["sum_sent"]["seconds"]
        .as_f64()
        .unwrap_or_else(|| panic!("{log}"));
    let bps = bytes * 8.0 / sent_seconds;
    let fwd = &out.summary.base.links[0];
    println!(
        "UDP goodput {:.3} Mb/s over the sender's {sent_seconds:.3} s (trace: 29.440 Mb/s); \
         iperf3's receiver rate {:.3} Mb/s; fwd delivered {} packets, dropped {}; \
         lateness p50 {:.1} µs p99 {:.1} µs max {:.1} µs",
        bps / 1e6,
        received["bits_per_second"].as_f64().unwrap_or(f64::NAN) / 1e6,
        fwd.delivered_packets,
        fwd.queue_drops,
        out.summary.lateness.p50_us,
        out.summary.lateness.p99_us,
        out.summary.lateness.max_us
    );
    // The link is backlogged from the first packet (5 packets/ms offered, at most 4 served), so
    // the sender's 10 s — ten whole trace periods — carry exactly 25 000 packets, and the
    // 200-packet queue drains after the sender stops: between 25 000 and 25 200 packets, ±1 %
    // for iperf3's bursty pacing at the ends.
    let packets = bytes / 1472.0;
    assert!(
        (25_000.0 * 0.99..=25_200.0 * 1.01).contains(&packets),
        "{packets} packets received; the trace serves 25 000 in 10 s plus at most the 200 queued"
    );
    // The same figure as a rate: within 2 % of the trace's 29.44 Mb/s.
    let analytic = 2_500.0 * 1472.0 * 8.0;
    assert!(
        (bps - analytic).abs() / analytic < 0.02,
        "goodput {bps} b/s vs trace {analytic} b/s"
    );
    // Twice the capacity was offered: the queue overflowed.
    assert!(fwd.queue_drops > 10_000, "{fwd:?}");
    assert!(netns::list(&format!("satpep-{}-", std::process::id())).is_empty());
}
