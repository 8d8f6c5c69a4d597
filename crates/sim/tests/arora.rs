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

/// Asymmetric routing and port-based path selection (`scenarios/arora/arora_paths.toml`):
/// everything upstream goes through the terminal's IP-in-IP tunnel over the dial-up, telnet
/// comes back over the modem, HTTP by satellite and spoofed.
#[test]
fn upstream_is_tunnelled_over_the_dialup_and_telnet_never_touches_the_satellite() {
    use satpep_proto::middlebox::Middlebox;
    use satpep_proto::{Duration, Instant};

    let text = include_str!("../../../scenarios/arora/arora_paths.toml");
    let loaded = satpep_scenario::load_str(text, "arora_paths.toml", &[]).expect("loads");
    let sc = &loaded.scenario;
    let link = |name: &str| sc.links.iter().position(|l| l.name == name).expect("link");
    let node = |name: &str| sc.nodes.iter().position(|n| n.name == name).expect("node");
    let mut sim = satpep_sim::Simulation::new(sc);
    // Telnet alone for the first 30 s (HTTP starts at 30 s).
    sim.run_until(Instant::ZERO + Duration::from_secs(29));
    assert_eq!(sim.listener(0).bytes_delivered(), 100, "5 requests of 20 B");
    assert_eq!(
        sim.opener(0).bytes_delivered(),
        1000,
        "5 responses of 200 B"
    );
    assert_eq!(sim.link(link("satellite")).stats().delivered_packets, 0);
    let down = sim.link(link("dialdown")).stats();
    assert!(down.delivered_packets >= 6, "{down:?}");
    sim.run_until(Instant::ZERO + Duration::from_secs(120));
    assert_eq!(sim.listener(1).bytes_delivered(), 1_000_000);
    // Every packet from the client crossed the dial-up 20 bytes longer: one outer IPv4 header.
    let (up, lan) = (
        sim.link(link("dialup")).stats(),
        sim.link(link("client-term")).stats(),
    );
    assert_eq!(up.delivered_packets, lan.delivered_packets);
    assert_eq!(
        up.delivered_bytes,
        lan.delivered_bytes + 20 * lan.delivered_packets
    );
    let Some(Middlebox::IpipTunnel(t)) = sim.middlebox(node("term")) else {
        panic!("term has a tunnel");
    };
    assert_eq!(t.stats().encapsulated, lan.delivered_packets);
    let Some(Middlebox::Chain(c)) = sim.middlebox(node("gw")) else {
        panic!("gw has a chain");
    };
    let (Middlebox::IpipTunnel(gt), Middlebox::Spoof(sp)) = (&c.elements()[0], &c.elements()[1])
    else {
        panic!("gw chain is [tunnel, spoof]");
    };
    assert_eq!(gt.stats().decapsulated, lan.delivered_packets);
    // Downstream, the gateway tunnelled exactly what the dial-down carried: telnet only.
    let down_end = sim.link(link("dialdown")).stats();
    assert_eq!(gt.stats().encapsulated, down_end.delivered_packets);
    assert_eq!(down_end.delivered_packets, down.delivered_packets);
    // Only HTTP was spoofed.
    assert_eq!(sp.stats().ccbs_allocated, 1);
    assert!(sp.stats().spoofed_acks > 600);
}
