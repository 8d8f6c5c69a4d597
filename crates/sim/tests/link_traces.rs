//! Time-varying links in the simulator, with numbers worked by hand: a Mahimahi trace gives
//! its analytic throughput to a saturating TCP flow; an outage stops delivery for exactly its
//! length; a delay step moves the measured RTT at its time.

use std::path::{Path, PathBuf};

use satpep_proto::{Duration, Instant};
use satpep_sim::Simulation;

fn secs(s: f64) -> Instant {
    Instant::ZERO + Duration::from_secs_f64(s)
}

/// Write `text` to a file of this test's temporary folder.
fn file(name: &str, text: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("link_traces");
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

/// Sender `a` → `b` over `fwd` (10 ms, 1000-packet queue, plus `fwd_extra`), ACKs back over
/// 100 Mb/s, 10 ms. One bulk TCP flow, 1500-byte packets (MSS 1460, no timestamps), its window
/// held at 1 MB by the receive buffer: above the path's BDP, below the queue, so the queue
/// never empties once filled and nothing is lost.
fn scenario(fwd_extra: &str, duration: &str) -> Simulation {
    let text = format!(
        "duration = \"{duration}\"\n\
         [[node]]\nname = \"a\"\n[[node]]\nname = \"b\"\n\
         [[link]]\nname = \"fwd\"\nfrom = \"a\"\nto = \"b\"\ndelay = \"10ms\"\n\
         queue = {{ limit_packets = 1000 }}\n{fwd_extra}\n\
         [[link]]\nname = \"ret\"\nfrom = \"b\"\nto = \"a\"\nrate = \"100Mbps\"\ndelay = \"10ms\"\n\
         [[flow]]\nfrom = \"a\"\nto = \"b\"\n\
         tcp = {{ mss = 1460, timestamps = false, recv_buffer = \"1MB\" }}\n"
    );
    let loaded = satpep_scenario::load_str(&text, "traces.toml", &[]).unwrap_or_else(|e| {
        panic!("{e}");
    });
    Simulation::new(&loaded.scenario)
}

/// Application bytes delivered to `b` in [from, to).
fn delivered(sim: &mut Simulation, from: f64, to: f64) -> u64 {
    sim.run_until(secs(from));
    let before = sim.listener(0).bytes_delivered();
    sim.run_until(secs(to));
    sim.listener(0).bytes_delivered() - before
}

#[test]
fn mahimahi_trace_gives_the_analytic_throughput() {
    // 12 opportunities per ms: one 1500-byte packet (1460 payload bytes) each, 12 000 per
    // second: 12 000 × 1460 × 8 = 140.16 Mb/s of goodput, 144 Mb/s on the wire.
    let trace = file("twelve.mahi", &"1\n".repeat(12));
    let mut sim = scenario(
        &format!("rate_trace = {:?}", trace.display().to_string()),
        "5s",
    );
    let bytes = delivered(&mut sim, 2.0, 4.0);
    assert_eq!(bytes, 2 * 12_000 * 1460, "{} Mb/s", bytes as f64 * 4e-6);
    let s = sim.link(0).stats();
    assert_eq!(s.queue_drops + s.error_drops, 0);
}

#[test]
fn fading_trace_gives_the_goodput_of_each_phase() {
    // A 100 ms period: 6 opportunities per ms for 50 ms, then 1 per ms for 50 ms (a fade):
    // 350 opportunities per 100 ms, 3 500 per second: 3 500 × 1460 × 8 = 40.88 Mb/s.
    let mut text = String::new();
    for ms in 1..=50 {
        text.push_str(&format!("{ms}\n").repeat(6));
    }
    for ms in 51..=100 {
        text.push_str(&format!("{ms}\n"));
    }
    let trace = file("fade.mahi", &text);
    let mut sim = scenario(
        &format!("rate_trace = {:?}", trace.display().to_string()),
        "5s",
    );
    let bytes = delivered(&mut sim, 2.0, 4.0);
    assert_eq!(bytes, 2 * 3_500 * 1460, "{} Mb/s", bytes as f64 * 4e-6);
}

#[test]
fn an_outage_stops_delivery_for_exactly_its_length() {
    // 10 Mb/s constant rate: a 1500-byte packet every 1.2 ms. An outage from 2 s to 2.5 s: no
    // packet arrives at b from 2.01 s + 1.2 ms (the one finishing at 2 s is delivered at
    // 2.01 s) until 2.51 s; over [1 s, 4 s) the flow loses exactly 0.5 s of the link.
    let mut sim = scenario(
        "rate = \"10Mbps\"\noutages = [{ start = \"2s\", duration = \"500ms\" }]",
        "5s",
    );
    // A second of a full link: 833 or 834 packets (1 s / 1.2 ms = 833.3).
    let packets = |bytes: u64| {
        assert_eq!(bytes % 1460, 0);
        bytes / 1460
    };
    let before = packets(delivered(&mut sim, 1.0, 2.0));
    assert!((833..=834).contains(&before), "{before}");
    let gap = delivered(&mut sim, 2.0115, 2.51);
    assert_eq!(gap, 0);
    // The packet cut by the outage at 2 s leaves in (2.5, 2.5012] s and arrives 10 ms later.
    assert_eq!(delivered(&mut sim, 2.51, 2.5113), 1460);
    // The first packet after the outage finishes at 2.5012 s and arrives 10 ms later; from
    // then on the link is full again.
    let after = packets(delivered(&mut sim, 2.5113, 3.5113));
    assert!((833..=834).contains(&after), "{after}");

    // The queue (1000 packets) held the window: nothing was dropped.
    let s = sim.link(0).stats();
    assert_eq!(s.queue_drops + s.error_drops, 0);
}

#[test]
fn a_delay_step_moves_the_measured_rtt_at_its_time() {
    // Forward delay 10 ms until 3 s, then 200 ms (a handover to a longer path). A
    // request/response flow sends one 100-byte request every 100 ms; its RTT samples are
    // 20 ms plus serialisation before the step and 210 ms after.
    let steps = file("rtt.txt", "0 10\n3000 200\n");
    let text = format!(
        "duration = \"6s\"\n\
         [[node]]\nname = \"a\"\n[[node]]\nname = \"b\"\n\
         [[link]]\nname = \"fwd\"\nfrom = \"a\"\nto = \"b\"\nrate = \"100Mbps\"\ndelay = \"10ms\"\n\
         delay_trace = {:?}\n\
         [[link]]\nname = \"ret\"\nfrom = \"b\"\nto = \"a\"\nrate = \"100Mbps\"\ndelay = \"10ms\"\n\
         [[flow]]\nfrom = \"a\"\nto = \"b\"\n\
         app = {{ kind = \"request_response\", request = \"100B\", response = \"100B\", count = 50, think = \"100ms\" }}\n\
         tcp = {{ delack_segments = 1 }}\n",
        steps.display().to_string()
    );
    let loaded = satpep_scenario::load_str(&text, "rtt.toml", &[]).unwrap();
    let mut sim = Simulation::new(&loaded.scenario);
    let latest = |sim: &Simulation| sim.opener(0).rtt().latest().unwrap().as_secs_f64() * 1e3;
    sim.run_until(secs(2.9));
    let before = latest(&sim);
    sim.run_until(secs(3.5));
    let after = latest(&sim);
    assert!((20.0..20.1).contains(&before), "{before} ms");
    assert!((210.0..210.1).contains(&after), "{after} ms");
}

/// Link framing (`encap_overhead`) on a rate-limited flow: 1 Mb/s forward link, 1000-byte
/// packets (MSS 960, no timestamps), window 100 KB (below the 1000-packet queue, so no loss).
/// Each packet takes 1038 × 8 / 10⁶ = 8.304 ms with Ethernet's 38 bytes (8 ms without), so the
/// goodput over 2 s is 2 / 0.008304 × 960 = 231 214 bytes (240 000 without), within a packet.
#[test]
fn framing_bytes_give_the_analytic_goodput() {
    for (framing, expect) in [(38u32, 2.0 / 0.008_304 * 960.0), (0, 240_000.0)] {
        let text = format!(
            "duration = \"6s\"\n\
             [[node]]\nname = \"a\"\n[[node]]\nname = \"b\"\n\
             [defaults.link]\nencap_overhead = {framing}\n\
             [[link]]\nname = \"fwd\"\nfrom = \"a\"\nto = \"b\"\nrate = \"1Mbps\"\n\
             delay = \"10ms\"\nqueue = {{ limit_packets = 1000 }}\n\
             [[link]]\nname = \"ret\"\nfrom = \"b\"\nto = \"a\"\nrate = \"100Mbps\"\n\
             delay = \"10ms\"\n\
             [[flow]]\nfrom = \"a\"\nto = \"b\"\n\
             tcp = {{ mss = 960, timestamps = false, recv_buffer = \"100KB\" }}\n"
        );
        let loaded = satpep_scenario::load_str(&text, "framing.toml", &[]).unwrap();
        let mut sim = Simulation::new(&loaded.scenario);
        let bytes = delivered(&mut sim, 2.0, 4.0) as f64;
        assert!(
            (bytes - expect).abs() <= 960.0,
            "framing {framing}: {bytes} bytes, expected {expect}"
        );
    }
}
