//! The accelerated PEP in the simulator (`proto::accel::pep`): on the deployment test path
//! (`scenarios/accel/geo_20_2.toml`: 20/2 Mb/s, 600 ms, PER 1e-3) it fills the forward link
//! where end-to-end CUBIC cannot, answers in one satellite round trip, carries every byte, and
//! the same seed gives the same run. Figures beside the emulator's in docs/accel.md.

use satpep_proto::middlebox::Middlebox;
use satpep_proto::{Duration, Instant};
use satpep_sim::Simulation;

const SCENARIO: &str = include_str!("../../../scenarios/accel/geo_20_2.toml");

/// The overrides that put the accelerated PEP's terminal and gateway on the two routers.
fn accel(extra: &[&str]) -> Vec<String> {
    let mut v = vec![
        "node.term.middlebox={ kind = \"accel\", role = \"terminal\", address = \"10.77.0.2\", \
         gateway = \"10.77.0.1\", forward = \"20Mbps\", return = \"2Mbps\", rtt = \"600ms\" }"
            .to_string(),
        "node.gw.middlebox={ kind = \"accel\", role = \"gateway\", address = \"10.77.0.1\", \
         forward = \"20Mbps\", return = \"2Mbps\", rtt = \"600ms\" }"
            .to_string(),
    ];
    v.extend(extra.iter().map(|s| s.to_string()));
    v
}

fn sim(overrides: &[String]) -> Simulation {
    let loaded = satpep_scenario::load_str(SCENARIO, "geo_20_2.toml", overrides).expect("loads");
    Simulation::new(&loaded.scenario)
}

fn secs(t: Instant) -> f64 {
    t.as_secs_f64()
}

/// The counters of the middlebox on router `name` (term is node 1, gw node 2).
fn counters(s: &Simulation, node: usize) -> std::collections::HashMap<String, u64> {
    let mb = s.middlebox(node).expect("a middlebox");
    assert_eq!(mb.kind(), "accel");
    mb.counters().into_iter().collect()
}

/// The client asks at 2 s, once the satellite connection is up (the terminal connects at the
/// start, as a daemon does long before its first client), as bench/deploy/run.sh measures.
const START: f64 = 2.0;

/// 100 MB: the accelerated PEP's goodput is within 7 % of what the forward link can carry in
/// QUIC packets (20 Mb/s × 1452 / 1480 bytes of UDP payload per wire byte, less what line errors
/// take; QUIC's own headers take about 2.4 % of that), while end-to-end CUBIC, halving on every
/// line error, stays below a quarter of it.
#[test]
fn a_100_mb_download_fills_the_forward_link_where_end_to_end_cubic_cannot() {
    let mut s = sim(&accel(&["flow.download.start=2s"]));
    s.run_until(Instant::ZERO + Duration::from_secs(120));
    let done = s.done_at(0).expect("the download completes within 120 s");
    assert_eq!(
        s.opener(0).bytes_delivered(),
        100_000_000,
        "every byte, once"
    );
    let goodput = 800e6 / (secs(done) - START);
    let limit = 20e6 * 1452.0 / 1480.0 * (1.0 - 1e-3);
    assert!(
        goodput > 0.93 * limit && goodput < limit,
        "goodput {goodput:.0} b/s against a limit of {limit:.0}"
    );
    let term = counters(&s, 1);
    let gw = counters(&s, 2);
    assert_eq!(term["connections"], 1);
    assert_eq!(gw["connections"], 1);
    assert_eq!(term["quic_connections"], 1);
    assert_eq!(gw["bytes_down"], 100_000_000);
    assert_eq!(term["bytes_down"], 100_000_000);
    assert_eq!(term["bytes_up"], 100);
    // Return-link economy: the terminal's ACKs are under 1 % of the forward bytes (one ACK per
    // 5 packets, paper 000), where TCP's delayed ACKs alone would be about 1.4 %.
    let ratio = term["quic_sent"] as f64 / gw["quic_sent"] as f64;
    assert!(ratio < 0.01, "return bytes per forward byte {ratio:.4}");

    let mut e2e = sim(&["duration=60s".to_string()]);
    e2e.run_until(Instant::ZERO + Duration::from_secs(60));
    let got = e2e.opener(0).bytes_delivered() as f64 * 8.0 / 60.0;
    assert!(got < 0.25 * limit, "end-to-end CUBIC {got:.0} b/s");
}

/// The satellite connection is up before the client asks (the terminal connects at start), so
/// a 1 KB response comes one satellite round trip (600 ms) plus the LAN hops and the response's
/// serialisation after the request; end to end it takes two (handshake, then request).
#[test]
fn a_small_response_comes_one_round_trip_after_the_request() {
    let small = [
        "flow.download.app.response=1KB",
        "flow.download.start=5s",
        "duration=10s",
    ];
    let mut s = sim(&accel(&small));
    s.run_until(Instant::ZERO + Duration::from_secs(10));
    let accel = secs(s.done_at(0).expect("done")) - 5.0;
    let extra: Vec<String> = small.iter().map(|s| s.to_string()).collect();
    let mut e = sim(&extra);
    e.run_until(Instant::ZERO + Duration::from_secs(10));
    let e2e = secs(e.done_at(0).expect("done")) - 5.0;
    assert!((0.600..0.620).contains(&accel), "accelerated: {accel:.4} s");
    assert!((1.200..1.220).contains(&e2e), "end to end: {e2e:.4} s");
}

/// At PER 1e-2 both ways the rate controller does not halve for line errors (paper 003):
/// goodput stays within 7 % of the link's payload rate, and every byte arrives once.
#[test]
fn line_errors_at_1e_2_cost_only_the_lost_packets() {
    let lossy = [
        "link.forward.error.per=1e-2",
        "link.return.error.per=1e-2",
        "flow.download.start=2s",
    ];
    let mut s = sim(&accel(&lossy));
    s.run_until(Instant::ZERO + Duration::from_secs(120));
    let done = s.done_at(0).expect("completes");
    assert_eq!(s.opener(0).bytes_delivered(), 100_000_000);
    let goodput = 800e6 / (secs(done) - START);
    let limit = 20e6 * 1452.0 / 1480.0 * (1.0 - 1e-2);
    assert!(
        goodput > 0.93 * limit && goodput < limit,
        "goodput {goodput:.0} b/s, limit {limit:.0}"
    );
    let fwd = s.link(2).stats();
    assert!(fwd.error_drops > 100, "{fwd:?}");
}

/// Same scenario, same seed: the same run, although rustls draws its own random numbers (the
/// simulation's identities are Ed25519, whose signatures have one length, so every handshake
/// packet has the same size).
#[test]
fn the_same_seed_gives_the_same_run() {
    let short = ["flow.download.app.response=5MB", "duration=20s"];
    let a = sim(&accel(&short));
    let b = sim(&accel(&short));
    let (ra, rb) = (a.run(|_| {}).expect("runs"), b.run(|_| {}).expect("runs"));
    let (ja, jb) = (
        serde_json::to_string(&ra.summary).expect("json"),
        serde_json::to_string(&rb.summary).expect("json"),
    );
    assert_eq!(ja, jb);
    assert!(ja.contains("\"bytes_down\":5000000"), "{ja}");
}

/// Several clients at once: one stream each on the one satellite connection, every response
/// complete, and no connection starved (the streams share the connection's rate).
#[test]
fn parallel_connections_share_the_satellite_connection_fairly() {
    let mut extra: Vec<String> = vec!["duration=60s".into()];
    let mut text = SCENARIO.to_string();
    for i in 0..8 {
        text.push_str(&format!(
            "\n[[flow]]\nname = \"p{i}\"\nfrom = \"cli\"\nto = \"srv\"\n\
             app = {{ kind = \"request_response\", request = \"100B\", response = \"5MB\" }}\n"
        ));
    }
    extra.extend(accel(&[]));
    extra.push("flow.download.app.response=5MB".into());
    let loaded = satpep_scenario::load_str(&text, "geo_20_2.toml", &extra).expect("loads");
    let mut s = Simulation::new(&loaded.scenario);
    s.run_until(Instant::ZERO + Duration::from_secs(60));
    let mut times = Vec::new();
    for i in 0..9 {
        assert_eq!(s.opener(i).bytes_delivered(), 5_000_000, "flow {i}");
        times.push(secs(s.done_at(i).expect("done")));
    }
    // 45 MB at about 18.8 Mb/s: 19 s; all finish within a few seconds of one another.
    let (first, last) = (
        times.iter().cloned().fold(f64::MAX, f64::min),
        times.iter().cloned().fold(0.0, f64::max),
    );
    assert!(last < 22.0, "{times:?}");
    assert!(first > 0.8 * last, "{times:?}");
    let gw = counters(&s, 2);
    assert_eq!(gw["connections"], 9);
    assert_eq!(gw["quic_connections"], 1);
    let Some(Middlebox::Accel(t)) = s.middlebox(1) else {
        panic!("terminal")
    };
    assert_eq!(t.stats().quic_connections, 1);
}

/// A server that never answers: the gateway gives up after `connect_timeout` (10 s), resets
/// the stream with `TimedOut`, and the terminal resets the client's connection, which the
/// client had been told was open (the fail-open handshake of docs/accel.md, "Semantics").
#[test]
fn a_silent_server_reaches_the_client_as_a_reset_after_the_connect_timeout() {
    let silent = [
        "link.gw-srv.error={ model = \"per\", per = 1.0 }",
        "flow.download.start=2s",
        "duration=20s",
    ];
    let mut s = sim(&accel(&silent));
    s.run_until(Instant::ZERO + Duration::from_secs(11));
    // Before the timeout: the client's handshake with the terminal is done, nothing more.
    assert!(s.opener(0).established_at().is_some());
    assert_eq!(counters(&s, 2)["resets_timed_out"], 0);
    s.run_until(Instant::ZERO + Duration::from_secs(20));
    let (term, gw) = (counters(&s, 1), counters(&s, 2));
    assert_eq!(gw["resets_timed_out"], 1, "{gw:?}");
    assert_eq!(term["resets_timed_out"], 1, "{term:?}");
    assert_eq!((term["open"], gw["open"]), (0, 0));
    assert_eq!(s.opener(0).bytes_delivered(), 0);
    assert_eq!(s.opener(0).state(), satpep_proto::tcp::State::Closed);
    assert!(s.done_at(0).is_none());
}

/// Over `max_streams`, a connection passes end to end, unaccelerated but whole: the terminal
/// counts it and both ends relay it untouched.
#[test]
fn a_connection_over_max_streams_passes_unaccelerated_and_completes() {
    let mut text = SCENARIO.to_string();
    text.push_str(
        "\n[[flow]]\nname = \"second\"\nfrom = \"cli\"\nto = \"srv\"\nstart = \"2.1s\"\n\
         app = { kind = \"request_response\", request = \"100B\", response = \"1MB\" }\n",
    );
    let mut o = accel(&["flow.download.start=2s", "flow.download.app.response=1MB"]);
    o[0] = o[0].replace(" }", ", max_streams = 1 }");
    let loaded = satpep_scenario::load_str(&text, "geo_20_2.toml", &o).expect("loads");
    let mut s = Simulation::new(&loaded.scenario);
    s.run_until(Instant::ZERO + Duration::from_secs(60));
    let (term, gw) = (counters(&s, 1), counters(&s, 2));
    assert_eq!(
        (term["connections"], term["unaccelerated"]),
        (1, 1),
        "{term:?}"
    );
    assert_eq!(gw["connections"], 1);
    for i in 0..2 {
        assert_eq!(s.opener(i).bytes_delivered(), 1_000_000, "flow {i}");
    }
    // The accelerated one a round trip after its request plus 1 MB at the link's rate; the
    // other end to end (handshake, request, slow start over 600 ms): several times longer.
    let fast = secs(s.done_at(0).expect("done")) - 2.0;
    let slow = secs(s.done_at(1).expect("done")) - 2.1;
    assert!(fast < 1.6, "{fast}");
    assert!(slow > 2.0 * fast, "{slow} against {fast}");
}
