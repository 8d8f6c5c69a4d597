//! Table 1 / §5 of Lee, Yum & Wan: the WINDS channel-release anomaly (scenarios/lee/table1.toml).
//! A link that releases its channel after 500 ms idle and needs 2.375 s to set it up again turns
//! a 1.03 s round trip into 5.78 s for a 64 KB TCP flow, until background traffic keeps it up.

use satpep_proto::{Duration, Instant};
use satpep_sim::Simulation;

const TABLE1: &str = include_str!("../../../scenarios/lee/table1.toml");

/// Goodput (b/s) of the 64 KB flow over 240–360 s and its smoothed RTT at the end.
fn run(background: &str) -> (f64, f64, u64) {
    let overrides = [
        format!("flow.background.app={background}"),
        "flow.tcp.tcp.recv_buffer=65535".to_owned(),
    ];
    let loaded = satpep_scenario::load_str(TABLE1, "table1.toml", &overrides)
        .unwrap_or_else(|e| panic!("{e}"));
    let mut sim = Simulation::new(&loaded.scenario);
    sim.run_until(Instant::ZERO + Duration::from_secs(240));
    let before = sim.listener(0).bytes_delivered();
    sim.run_until(Instant::ZERO + Duration::from_secs(360));
    let bytes = sim.listener(0).bytes_delivered() - before;
    let srtt = sim
        .opener(0)
        .rtt()
        .srtt()
        .map_or(f64::NAN, |d| d.as_secs_f64());
    let setups = sim.link(0).channel_setups() + sim.link(1).channel_setups();
    (bytes as f64 * 8.0 / 120.0, srtt, setups)
}

#[test]
fn channel_release_stretches_the_rtt_to_5_8_s_without_background_traffic() {
    let (goodput, srtt, setups) = run("{ kind = \"bulk\", bytes = \"1B\" }");
    // Every round trip pays two set-ups: 1.03 s + 2 × 2.375 s = 5.78 s (Table 1: 5.78 s).
    assert!((srtt - 5.78).abs() / 5.78 < 0.02, "srtt {srtt:.3} s");
    // One 64 KB window per 5.78 s: 90.7 kb/s (Table 1: 0.12 Mb/s).
    let analytic = 65_535.0 * 8.0 / 5.78;
    assert!(
        (goodput - analytic).abs() / analytic < 0.10,
        "goodput {goodput:.0} b/s, 64 KB / 5.78 s = {analytic:.0} b/s"
    );
    // Two per round trip from 120 s to 360 s: 2 × 240 / 5.78 ≈ 83.
    assert!(setups >= 80, "{setups} channel set-ups");
}

#[test]
fn background_traffic_keeps_the_channel_up() {
    let (goodput, srtt, _) = run("{ kind = \"bulk\" }");
    // Table 1: RTT 1.03 s and 0.5 Mb/s with the 400 kb/s background flow.
    assert!((srtt - 1.03).abs() / 1.03 < 0.05, "srtt {srtt:.3} s");
    let analytic = 65_535.0 * 8.0 / 1.03;
    assert!(
        (goodput - analytic).abs() / analytic < 0.10,
        "goodput {goodput:.0} b/s, 64 KB / 1.03 s = {analytic:.0} b/s"
    );
}
