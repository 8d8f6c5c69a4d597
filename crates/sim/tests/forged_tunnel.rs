//! Issue 15's forged-tunnel attack on the Arora scenario (`scenarios/arora/arora_paths.toml`):
//! a host on the Internet side sends IP-in-IP packets to the terminal's tunnel address, with a
//! spoofed inner source. The terminal must open none of them, and summary.json must show them.

use std::net::Ipv4Addr;

use satpep_output::Summary;
use satpep_proto::wire::{emit_ipv4_tcp, ipip, Ipv4Repr, SeqNumber, TcpRepr};
use satpep_proto::{Duration, Instant, Packet};
use satpep_sim::Simulation;

const GW: Ipv4Addr = Ipv4Addr::new(10, 0, 1, 1);
const TERM: Ipv4Addr = Ipv4Addr::new(10, 0, 2, 1);
const CLIENT: Ipv4Addr = Ipv4Addr::new(10, 0, 3, 1);
const SERVER: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);

/// A TCP segment "from the server" (spoofed) to the client, inside an IP-in-IP header from
/// `outer_src` to the terminal's tunnel address.
fn forged(outer_src: Ipv4Addr, ident: u16) -> Packet {
    let tcp = TcpRepr {
        src_port: 80,
        dst_port: 40000,
        seq: SeqNumber(1),
        ack: Some(SeqNumber(1)),
        payload_len: 100,
        ..TcpRepr::default()
    };
    let inner = Packet::build(100, |b| {
        emit_ipv4_tcp(&Ipv4Repr::tcp(SERVER, CLIENT, ident), &tcp, b)
    });
    let total = u16::try_from(inner.wire_len() + 20).expect("fits");
    let mut h = vec![0u8; 20];
    ipip::write_outer_header(&mut h, total, 0, ident, outer_src, TERM);
    h.extend_from_slice(inner.header());
    Packet::new(&h, 100)
}

#[test]
fn forged_tunnel_packets_from_a_non_peer_open_nothing_and_show_in_summary_json() {
    let text = include_str!("../../../scenarios/arora/arora_paths.toml");
    let loaded = satpep_scenario::load_str(text, "arora_paths.toml", &[]).expect("loads");
    let sc = &loaded.scenario;
    let node = |name: &str| sc.nodes.iter().position(|n| n.name == name).expect("node");
    let (server, client) = (node("server"), node("client"));
    // Every host external: only the injected packets travel.
    let mut sim = Simulation::emulated(sc);
    const SENT: u16 = 37;
    for i in 0..SENT {
        sim.inject(server, forged(SERVER, i));
    }
    sim.run_until(Instant::ZERO + Duration::from_secs(30));
    assert!(
        sim.poll_received(client).is_none(),
        "a forged packet got through"
    );

    let dir = tempfile::tempdir().expect("tempdir");
    let path = sim.summary().write_json(dir.path()).expect("written");
    let summary = Summary::read_json(&path).expect("reads");
    let term = summary
        .middleboxes
        .iter()
        .find(|m| m.node == "term")
        .expect("term's tunnel in summary.json");
    assert_eq!(term.kind, "ipip_tunnel");
    assert_eq!(term.counters["not_from_peer"], u64::from(SENT));
    assert_eq!(term.counters["decapsulated"], 0);
    assert_eq!(term.counters["malformed_outer"], 0);
    // The gateway's chain is there too, its elements prefixed; it saw nothing for itself.
    let gw = summary
        .middleboxes
        .iter()
        .find(|m| m.node == "gw")
        .expect("gw");
    assert_eq!(gw.kind, "chain");
    assert_eq!(gw.counters["0.ipip_tunnel.not_from_peer"], 0);
    assert!(gw.counters.contains_key("1.spoof.spoofed_acks"));
    let json = std::fs::read_to_string(&path).expect("text");
    assert!(json.contains("\"not_from_peer\": 37"), "{json}");

    // Control: the same packet with the gateway's address as outer source is opened (the check
    // is by address; an attacker who can spoof the peer's address is not stopped by it).
    sim.inject(server, forged(GW, 99));
    sim.run_until(Instant::ZERO + Duration::from_secs(60));
    let got = sim.poll_received(client).expect("opened and delivered");
    assert_eq!(&got.header()[12..20], &[10, 0, 0, 1, 10, 0, 3, 1]);
    let term = &sim.summary().middleboxes[1];
    assert_eq!(
        (term.node.as_str(), term.counters["decapsulated"]),
        ("term", 1)
    );
}

/// A scenario without middleboxes writes no `middleboxes` key: its summary.json is as before.
#[test]
fn no_middlebox_no_section() {
    let loaded =
        satpep_scenario::load_str(satpep_scenario::default_scenario_text(), "default", &[])
            .expect("loads");
    let sim = Simulation::new(&loaded.scenario);
    let dir = tempfile::tempdir().expect("tempdir");
    let path = sim.summary().write_json(dir.path()).expect("written");
    let json = std::fs::read_to_string(path).expect("text");
    assert!(!json.contains("middleboxes"), "{json}");
}

const KEY: &str = "hex:5a7e11a17e5a7e11a17e5a7e11a17e5a";
const WRONG: &str = "hex:5a7e11a17e5a7e11a17e5a7e11a17e5b";

/// `forged(outer_src, ident)` with an Authentication Header sealed under `key`.
fn sealed(sealer: &mut satpep_proto::auth::Sealer, outer_src: Ipv4Addr, ident: u16) -> Packet {
    sealer
        .seal(forged(outer_src, ident))
        .expect("an IP-in-IP packet seals")
}

/// The Arora scenario with both tunnel ends keyed: forged packets from the gateway's own
/// address (the one thing an address check cannot stop) sealed with a wrong key, unsealed
/// ones, and a genuine packet replayed are all refused, each in its own counter of
/// summary.json; only the genuine packet, once, reaches the client.
#[test]
fn wrong_key_unsealed_and_replayed_tunnel_packets_open_nothing_and_show_in_summary_json() {
    let text = include_str!("../../../scenarios/arora/arora_paths.toml").replace(
        "kind = \"ipip_tunnel\", local = \"10.0.",
        &format!("kind = \"ipip_tunnel\", key = \"{KEY}\", local = \"10.0."),
    );
    assert_eq!(text.matches(KEY).count(), 2, "both tunnel ends keyed");
    let loaded = satpep_scenario::load_str(&text, "arora_keyed.toml", &[]).expect("loads");
    let sc = &loaded.scenario;
    let node = |name: &str| sc.nodes.iter().position(|n| n.name == name).expect("node");
    let (server, client) = (node("server"), node("client"));
    let mut sim = Simulation::emulated(sc);
    let key = |k: &str| {
        satpep_proto::auth::TunnelKey::from_bytes(
            &(0..16)
                .map(|i| u8::from_str_radix(&k[4 + 2 * i..6 + 2 * i], 16).expect("hex"))
                .collect::<Vec<u8>>(),
        )
        .expect("16 bytes")
    };
    let mut wrong = satpep_proto::auth::Sealer::new(&key(WRONG), 1000);
    let mut right = satpep_proto::auth::Sealer::new(&key(KEY), 1000);

    const FORGED: u16 = 23;
    const UNSEALED: u16 = 11;
    for i in 0..FORGED {
        sim.inject(server, sealed(&mut wrong, GW, i));
    }
    for i in 0..UNSEALED {
        sim.inject(server, forged(GW, 100 + i));
    }
    // Sealed with the right key but from a stranger's address: refused before the ICV.
    sim.inject(server, sealed(&mut right, SERVER, 200));
    sim.run_until(Instant::ZERO + Duration::from_secs(30));
    assert!(
        sim.poll_received(client).is_none(),
        "a forged packet got through"
    );

    // The genuine packet, then the same bytes again (a replay).
    let genuine = sealed(&mut right, GW, 300);
    sim.inject(server, genuine.clone());
    sim.run_until(Instant::ZERO + Duration::from_secs(40));
    sim.inject(server, genuine);
    sim.run_until(Instant::ZERO + Duration::from_secs(60));
    let got = sim
        .poll_received(client)
        .expect("the genuine packet is opened");
    assert_eq!(&got.header()[12..20], &[10, 0, 0, 1, 10, 0, 3, 1]);
    assert_eq!(&got.header()[4..6], &300u16.to_be_bytes(), "inner IP id");
    assert!(
        sim.poll_received(client).is_none(),
        "the replay got through"
    );

    let dir = tempfile::tempdir().expect("tempdir");
    let path = sim.summary().write_json(dir.path()).expect("written");
    let summary = Summary::read_json(&path).expect("reads");
    let term = summary
        .middleboxes
        .iter()
        .find(|m| m.node == "term")
        .expect("term's tunnel in summary.json");
    let c = |k: &str| term.counters.get(k).copied().unwrap_or(u64::MAX);
    assert_eq!(
        (
            c("bad_mac"),
            c("unauthenticated"),
            c("not_from_peer"),
            c("replayed"),
            c("verified"),
            c("decapsulated"),
        ),
        (u64::from(FORGED), u64::from(UNSEALED), 1, 1, 1, 1),
        "{:?}",
        term.counters
    );
}
