//! Arora et al. (DirecPC): spoofing lifts a window-limited download to the satellite rate, and
//! selective ACK dropping matters once the return link is congested by ACKs. Numbers in
//! docs/reproductions/arora.md.

use satpep_sim::experiments::arora::{run, Config};

#[test]
fn spoofing_lifts_an_8k_window_from_window_limited_to_the_satellite_rate() {
    let none = run(Config::None, 8 * 1024, &[]).expect("runs");
    let spoof = run(Config::Spoofing, 8 * 1024, &[]).expect("runs");
    // Measured: 135 kb/s (8 KiB over a ~0.49 s round trip) and 929 kb/s (1 Mb/s less headers).
    assert!(none.throughput_bps < 160_000.0, "{none:?}");
    assert!(spoof.throughput_bps > 900_000.0, "{spoof:?}");
    assert_eq!(spoof.gw_retransmissions, 0);
}

#[test]
fn ack_dropping_restores_the_rate_when_acks_congest_a_14k4_return() {
    let extra = [
        "flow.download.tcp.delack_segments=1".to_string(),
        "link.dialup.rate=14.4kbps".to_string(),
    ];
    let spoof = run(Config::Spoofing, 32 * 1024, &extra).expect("runs");
    let drop = run(Config::SpoofingAckDrop, 32 * 1024, &extra).expect("runs");
    // Measured: 521 kb/s (ACK-clocked by the saturated return) and 929 kb/s.
    assert!(
        drop.throughput_bps > 1.5 * spoof.throughput_bps,
        "{spoof:?} {drop:?}"
    );
}
