//! TCP-SuperCharger (Lee, Yum & Wan) in the simulator: the must-show results of issue 6 on the
//! paper's emulated WINDS path (scenarios/lee/table2.toml: 24 Mb/s, RTT 1000 ms, CUBIC sender).

use satpep_proto::Instant;
use satpep_sim::Simulation;

const TABLE2: &str = include_str!("../../../scenarios/lee/table2.toml");
const GATEWAY: &str = "node.gateway.middlebox={ kind = \"supercharger\" }";

/// Run the Table 2 scenario with `overrides`; stop at `until_s` seconds and return the bytes
/// delivered at `t0_s`, at the end, and the receiver's and sender's counters.
struct Outcome {
    delivered_at: Vec<u64>,
    beyond_window: u64,
    done: bool,
    retransmissions: u64,
}

fn run(overrides: &[&str], sample_s: &[u64]) -> Outcome {
    let overrides: Vec<String> = overrides.iter().map(|s| (*s).to_owned()).collect();
    let loaded = satpep_scenario::load_str(TABLE2, "table2.toml", &overrides)
        .unwrap_or_else(|e| panic!("{e}"));
    let mut sim = Simulation::new(&loaded.scenario);
    let mut delivered_at = Vec::new();
    for &s in sample_s {
        sim.run_until(Instant::ZERO + satpep_proto::Duration::from_secs(s));
        delivered_at.push(sim.listener(0).bytes_delivered());
    }
    Outcome {
        delivered_at,
        beyond_window: sim.listener(0).stats().beyond_window,
        done: sim.done_at(0).is_some(),
        retransmissions: sim.opener(0).stats().retransmissions,
    }
}

fn mbps(bytes: u64, secs: f64) -> f64 {
    bytes as f64 * 8.0 / secs / 1e6
}

#[test]
fn gateway_fills_24_mbps_with_a_64_kb_receiver_window() {
    let o = run(&[GATEWAY], &[25, 40]);
    let tput = mbps(o.delivered_at[1] - o.delivered_at[0], 15.0);
    let utilisation = tput / 24.0;
    assert!(
        utilisation >= 0.90,
        "with the gateway: {tput:.2} Mb/s over 25–40 s = {:.1} % of 24 Mb/s",
        utilisation * 100.0
    );
    assert_eq!(o.beyond_window, 0, "the receiver was overrun");
}

#[test]
fn gateway_fills_24_mbps_for_a_receiver_that_offers_no_window_scaling() {
    // The paper's receiver: 64 KB, no Window Scale option in its SYN-ACK. The gateway negotiates
    // scaling with the sender on its behalf; without that (`add_wscale = false`) the virtual
    // window stops at 64 KB and the flow gets one window per round trip.
    let no_ws = "flow.bulk.to_tcp={ window_scaling = false }";
    let o = run(&[GATEWAY, no_ws], &[25, 40]);
    let tput = mbps(o.delivered_at[1] - o.delivered_at[0], 15.0);
    assert!(tput >= 0.90 * 24.0, "negotiated: {tput:.2} Mb/s");
    assert_eq!(o.beyond_window, 0, "the receiver was overrun");
    let plain = "node.gateway.middlebox={ kind = \"supercharger\", add_wscale = false }";
    let o = run(&[plain, no_ws], &[25, 40]);
    let tput = mbps(o.delivered_at[1] - o.delivered_at[0], 15.0);
    let analytic = 45.0 * 1448.0 * 8.0 / 1.004 / 1e6;
    assert!(
        (tput - analytic).abs() / analytic <= 0.10,
        "not negotiated: {tput:.3} Mb/s, 45 segments/RTT = {analytic:.3} Mb/s"
    );
}

#[test]
fn without_gateway_64_kb_window_gives_window_over_rtt() {
    let o = run(&[], &[25, 40]);
    let tput = mbps(o.delivered_at[1] - o.delivered_at[0], 15.0);
    // 65 535 bytes per round trip of 1.004 s (500 ms each way on the satellite, 1 ms on each
    // access link, plus serialisation).
    let analytic = 65_535.0 * 8.0 / 1.004 / 1e6;
    assert!(
        (tput - analytic).abs() / analytic <= 0.10,
        "without the gateway: {tput:.3} Mb/s, 64 KB/RTT = {analytic:.3} Mb/s"
    );
}

#[test]
fn slow_receiver_application_is_never_overrun_and_the_transfer_completes() {
    // The receiving application reads only 5 Mb/s: the gateway must hold data back (and close
    // its virtual window when its buffer fills) rather than overrun the 64 KB receiver.
    let o = run(
        &[
            GATEWAY,
            "defaults.tcp.app_read_rate=5Mbps",
            "flow.bulk.app={ kind = \"bulk\", bytes = \"10MB\" }",
            "duration=\"60s\"",
            "stop_when_done=true",
        ],
        &[60],
    );
    assert_eq!(o.beyond_window, 0, "segments beyond the receiver's window");
    assert!(o.done, "transfer did not complete in 60 s");
    assert_eq!(o.delivered_at[0], 10_000_000);
    // Nothing was lost: the only retransmission is the SYN's (initial RTO 1 s < RTT 1.004 s).
    assert_eq!(o.retransmissions, 1);
}
