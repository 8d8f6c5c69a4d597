//! The emulator with real namespaces, real Linux TCP and real programs (iperf3, ping).
//!
//! These tests need root, network namespaces and /dev/net/tun (CI has them: `.ci/run`); without
//! them each prints `SKIP: needs root and network namespaces` and passes. They run one at a time
//! (a lock), because they measure real time on a 2-core machine, and every child process has a
//! timeout. Only addresses inside the namespaces the tests create are used.
//!
//! Child emulators for the crash and signal tests are this test binary run again with
//! `SATPEP_EMU_CHILD` set: the `child_emulator` test then runs one emulation and exits.

use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::Mutex;
use std::time::{Duration as StdDuration, Instant as WallInstant};

use satpep_emu::{netns, EmuOptions};
use satpep_proto::Duration;
use satpep_scenario::Scenario;

static SERIAL: Mutex<()> = Mutex::new(());

/// Two hosts joined by a 20 Mb/s, 300 ms link each way; queues of 1000 packets (about one
/// bandwidth-delay product, 1.5 MB), so one CUBIC flow can fill the link after a loss.
const GEO20: &str = r#"
name = "geo20"
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
rate = "20Mbps"
delay = "300ms"
queue = { limit_packets = 1000 }
[[link]]
name = "ret"
from = "term"
to = "gw"
rate = "20Mbps"
delay = "300ms"
queue = { limit_packets = 1000 }
[[flow]]
from = "gw"
to = "term"
app = { kind = "bulk" }
"#;

fn geo20() -> Scenario {
    satpep_scenario::load_str(GEO20, "<test>", &[])
        .expect("test scenario loads")
        .scenario
}

/// True when this process can create namespaces; otherwise prints the skip line.
fn can_emulate(test: &str) -> bool {
    let ok = netns::check_privileges().is_ok()
        && Command::new("ip")
            .args(["netns", "list"])
            .output()
            .is_ok_and(|o| o.status.success());
    if !ok {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must run {test}: it needs root and network namespaces"
        );
        println!("SKIP: needs root and network namespaces ({test})");
    }
    ok
}

fn has(program: &str, test: &str) -> bool {
    let ok = Command::new("sh")
        .args(["-c", &format!("command -v {program}")])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must run {test}: {program} is missing (.ci/run installs it)"
        );
        println!("SKIP: needs {program} on PATH ({test}; .ci/run installs it)");
    }
    ok
}

fn wait_timeout(child: &mut Child, limit: StdDuration) -> Option<ExitStatus> {
    let start = WallInstant::now();
    while start.elapsed() < limit {
        if let Ok(Some(st)) = child.try_wait() {
            return Some(st);
        }
        std::thread::sleep(StdDuration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
    None
}

/// A real TCP transfer with Linux CUBIC across 20 Mb/s / 300 ms each way reaches the link
/// rate: iperf3's receiver goodput over 30 s after 10 s of ramp-up (omitted with `-O`) is
/// within 10 % of 20 Mb/s, and cannot exceed the payload share of it (1448 of 1500 bytes).
#[test]
fn tcp_cubic_transfer_reaches_the_link_rate() {
    let _serial = SERIAL.lock();
    let name = "tcp_cubic_transfer_reaches_the_link_rate";
    if !can_emulate(name) || !has("iperf3", name) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut opts = EmuOptions::new(dir.path());
    // The upload gw → term along the flow: iperf3's client sends, so it runs in gw.
    opts.server_on = Some("term".into());
    opts.client_on = Some("gw".into());
    opts.server = Some("iperf3 -s -1".into());
    opts.client = Some("iperf3 -c {server} -C cubic -t 30 -O 10 -J".into());
    opts.duration = Some(Duration::from_secs(75));
    let out = satpep_emu::run(&geo20(), &opts).unwrap();
    let log = std::fs::read_to_string(&out.client_log).unwrap();
    assert_eq!(out.summary.stop_reason, "client exited", "{log}");
    assert_eq!(out.summary.client_exit, Some(0), "{log}");
    let json: serde_json::Value = serde_json::from_str(&log).unwrap();
    let bps = json["end"]["sum_received"]["bits_per_second"]
        .as_f64()
        .unwrap();
    let cc = json["end"]["sender_tcp_congestion"].as_str().unwrap_or("");
    println!(
        "iperf3 receiver goodput {:.3} Mb/s ({cc}); lateness p50 {:.1} µs p99 {:.1} µs max {:.1} µs",
        bps / 1e6,
        out.summary.lateness.p50_us,
        out.summary.lateness.p99_us,
        out.summary.lateness.max_us
    );
    assert_eq!(cc, "cubic");
    assert!(bps >= 0.9 * 20e6, "goodput {bps} below 90 % of 20 Mb/s");
    let payload_ceiling = 20e6 * 1448.0 / 1500.0;
    assert!(
        bps <= payload_ceiling * 1.02,
        "goodput {bps} above the link's payload rate {payload_ceiling}: the rate is not enforced"
    );
    let fwd = &out.summary.base.links[0];
    assert!(fwd.delivered_bytes > 70_000_000, "{fwd:?}");
    assert_eq!(out.summary.path.unroutable, 0);
    assert!(netns::list(&format!("satpep-{}-", std::process::id())).is_empty());
}

/// The accelerated PEP as the emulator's middleboxes (`proto::accel::pep` on the terminal and
/// gateway routers of scenarios/accel/geo_20_2.toml, PER 1e-3 both ways): real Linux TCP at
/// both ends, its real bytes carried on a QUIC stream. A 20 MB download arrives byte for byte
/// (xfer.py's sha256 of its deterministic stream), its first byte one satellite round trip
/// after the request (the QUIC connection is up before the client starts), and both ends count
/// it as one accelerated connection.
#[test]
fn real_tcp_through_the_simulated_accelerated_pep_arrives_byte_for_byte() {
    let _serial = SERIAL.lock();
    let name = "real_tcp_through_the_simulated_accelerated_pep_arrives_byte_for_byte";
    if !can_emulate(name) {
        return;
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let text = std::fs::read_to_string(root.join("scenarios/accel/geo_20_2.toml")).unwrap();
    let set = [
        "node.term.middlebox={ kind = \"accel\", role = \"terminal\", address = \"10.77.0.2\", \
         gateway = \"10.77.0.1\", forward = \"20Mbps\", return = \"2Mbps\", rtt = \"600ms\" }"
            .to_string(),
        "node.gw.middlebox={ kind = \"accel\", role = \"gateway\", address = \"10.77.0.1\", \
         forward = \"20Mbps\", return = \"2Mbps\", rtt = \"600ms\" }"
            .to_string(),
    ];
    let sc = satpep_scenario::load_str(&text, "geo_20_2.toml", &set)
        .unwrap()
        .scenario;
    let xfer = root.join("bench/deploy/xfer.py");
    let dir = tempfile::tempdir().unwrap();
    let mut opts = EmuOptions::new(dir.path());
    opts.server = Some(format!("python3 {} serve --port 5001", xfer.display()));
    opts.client = Some(format!(
        "python3 {} get --host {{server}} --port 5001 --size 20000000",
        xfer.display()
    ));
    opts.client_delay = Duration::from_secs(3);
    opts.duration = Some(Duration::from_secs(90));
    let out = satpep_emu::run(&sc, &opts).unwrap();
    let log = std::fs::read_to_string(&out.client_log).unwrap();
    assert_eq!(out.summary.stop_reason, "client exited", "{log}");
    let r: serde_json::Value = serde_json::from_str(log.trim()).unwrap();
    assert_eq!(r["sha256_ok"], true, "{r}");
    assert_eq!(r["received"], 20_000_000, "{r}");
    let ttfb = r["ttfb_s"].as_f64().unwrap();
    assert!((0.6..0.7).contains(&ttfb), "first byte after {ttfb} s");
    let mbs = &out.summary.base.middleboxes;
    for (node, c) in mbs.iter().map(|m| (m.node.as_str(), &m.counters)) {
        assert_eq!(c["connections"], 1, "{node}: {c:?}");
        assert_eq!(c["bytes_down"], 20_000_000, "{node}: {c:?}");
        assert_eq!(c["unaccelerated"], 0, "{node}: {c:?}");
    }
    assert_eq!(mbs.len(), 2);
    assert!(netns::list(&format!("satpep-{}-", std::process::id())).is_empty());
}

/// A consumer VSAT: 10 Mb/s forward, 64 kb/s return (250 ms each way), 20-packet return queue
/// of kind `{kind}`.
fn asymmetric(kind: &str) -> Scenario {
    let text = format!(
        r#"
        name = "asym"
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
        rate = "10Mbps"
        delay = "250ms"
        queue = {{ limit_packets = 1000 }}
        [[link]]
        name = "ret"
        from = "term"
        to = "gw"
        rate = "64kbps"
        delay = "250ms"
        queue = {{ kind = "{kind}", limit_packets = 20 }}
        [[flow]]
        from = "gw"
        to = "term"
        app = {{ kind = "bulk" }}
        "#
    );
    satpep_scenario::load_str(&text, "<test>", &[])
        .expect("asymmetric scenario loads")
        .scenario
}

/// gw → term forward 10 Mb/s; term → hub → gw return, 64 kb/s then 10 Mb/s; the return queue
/// compacts ACKs into a tunnel to the hub, whose `ack_expander` restores them.
fn compacting() -> Scenario {
    let text = r#"
        name = "compact"
        [[node]]
        name = "gw"
        address = "10.0.0.1"
        [[node]]
        name = "term"
        address = "10.0.1.1"
        [[node]]
        name = "hub"
        kind = "router"
        address = "10.0.2.1"
        middlebox = { kind = "ack_expander", compactors = ["10.0.1.1"] }
        [[link]]
        name = "fwd"
        from = "gw"
        to = "term"
        rate = "10Mbps"
        delay = "250ms"
        queue = { limit_packets = 1000 }
        [[link]]
        name = "ret"
        from = "term"
        to = "hub"
        rate = "64kbps"
        delay = "250ms"
        queue = { kind = "ack_compaction", limit_packets = 20, ack = { tunnel_src = "10.0.1.1", tunnel_dst = "10.0.2.1" } }
        [[link]]
        name = "hub-gw"
        from = "hub"
        to = "gw"
        rate = "10Mbps"
        delay = "1ms"
        [[link]]
        name = "gw-hub"
        from = "gw"
        to = "hub"
        rate = "10Mbps"
        delay = "1ms"
        [[flow]]
        from = "gw"
        to = "term"
        app = { kind = "bulk" }
        "#;
    satpep_scenario::load_str(text, "<test>", &[])
        .expect("compaction scenario loads")
        .scenario
}

/// ACK compaction + the stateless expander run in the emulator as in the simulator (the same
/// queue discipline inside the return link, the same middlebox at the hub), carrying Linux's
/// real ACKs: goodput beats plain drop-tail on the same 64 kb/s return link.
#[test]
fn ack_compaction_and_expander_carry_real_acks() {
    let _serial = SERIAL.lock();
    let name = "ack_compaction_and_expander_carry_real_acks";
    if !can_emulate(name) || !has("iperf3", name) {
        return;
    }
    let (plain, _) = asymmetric_goodput("drop_tail");
    let dir = tempfile::tempdir().unwrap();
    let (compacted, summary) = iperf_goodput_in(&compacting(), dir.path());
    let ret = &summary.base.links[1];
    // summary.json's `middleboxes` section, as a user reads it: the hub's expander counted the
    // compacted ACKs it opened and the ACKs it regenerated, and nothing forged or broken.
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("summary.json")).unwrap())
            .unwrap();
    let mbs = json["middleboxes"]
        .as_array()
        .expect("a middleboxes section");
    assert_eq!(mbs.len(), 1, "{mbs:?}");
    assert_eq!(
        (&mbs[0]["node"], &mbs[0]["kind"]),
        (&"hub".into(), &"ack_expander".into())
    );
    let counter = |k: &str| {
        mbs[0]["counters"][k]
            .as_u64()
            .unwrap_or_else(|| panic!("{k}: {mbs:?}"))
    };
    println!("hub expander counters {}", mbs[0]["counters"]);
    assert!(counter("compacted") > 0, "{mbs:?}");
    assert!(counter("regenerated") > 0, "{mbs:?}");
    assert!(counter("decapsulated") >= counter("compacted"), "{mbs:?}");
    assert_eq!(
        (counter("unknown_source"), counter("malformed")),
        (0, 0),
        "{mbs:?}"
    );
    println!(
        "goodput drop-tail {:.3} Mb/s, compaction + expander {:.3} Mb/s; return link delivered {} \
         packets",
        plain / 1e6,
        compacted / 1e6,
        ret.delivered_packets,
    );
    assert!(
        compacted > plain * 1.03,
        "compaction {compacted} vs drop-tail {plain}"
    );
}

/// Goodput (b/s, iperf3's receiver) of a 30 s CUBIC transfer over [`asymmetric`], and the
/// return link's summary.
fn asymmetric_goodput(kind: &str) -> (f64, satpep_output::LinkSummary) {
    let (bps, summary) = iperf_goodput(&asymmetric(kind));
    (bps, summary.base.links[1].clone())
}

/// Goodput (b/s, iperf3's receiver) of a 30 s CUBIC transfer between the first flow's hosts of
/// `scenario`, and the emulator's summary.
fn iperf_goodput(scenario: &Scenario) -> (f64, satpep_emu::EmuSummary) {
    let dir = tempfile::tempdir().unwrap();
    iperf_goodput_in(scenario, dir.path())
}

/// [`iperf_goodput`] with the outputs (summary.json, logs) written to `out`.
fn iperf_goodput_in(scenario: &Scenario, out: &Path) -> (f64, satpep_emu::EmuSummary) {
    let mut opts = EmuOptions::new(out);
    // The upload gw → term along the flow: iperf3's client sends, so it runs in gw.
    opts.server_on = Some("term".into());
    opts.client_on = Some("gw".into());
    opts.server = Some("iperf3 -s -1".into());
    opts.client = Some("iperf3 -c {server} -C cubic -t 30 -J".into());
    opts.duration = Some(Duration::from_secs(60));
    let out = satpep_emu::run(scenario, &opts).unwrap();
    let log = std::fs::read_to_string(&out.client_log).unwrap();
    assert_eq!(out.summary.client_exit, Some(0), "{log}");
    let json: serde_json::Value = serde_json::from_str(&log).unwrap();
    let bps = json["end"]["sum_received"]["bits_per_second"]
        .as_f64()
        .unwrap();
    (bps, out.summary)
}

/// With ACK filtering on the 64 kb/s return link, a bulk transfer's goodput is higher than
/// with drop-tail. Measured: 8.30 / 8.32 Mb/s drop-tail, 8.79 / 8.79 Mb/s filtering (+5.6 %,
/// run-to-run spread 0.25 %); the test asks for +3 %.
#[test]
fn ack_filtering_on_a_slow_return_link_raises_goodput() {
    let _serial = SERIAL.lock();
    let name = "ack_filtering_on_a_slow_return_link_raises_goodput";
    if !can_emulate(name) || !has("iperf3", name) {
        return;
    }
    let (plain, plain_ret) = asymmetric_goodput("drop_tail");
    let (filtered, filtered_ret) = asymmetric_goodput("ack_filtering");
    println!(
        "goodput drop-tail {:.3} Mb/s, ACK filtering {:.3} Mb/s (+{:.1} %); return link \
         delivered {} / {} ACKs, dropped or filtered {} / {}",
        plain / 1e6,
        filtered / 1e6,
        (filtered / plain - 1.0) * 100.0,
        plain_ret.delivered_packets,
        filtered_ret.delivered_packets,
        plain_ret.queue_drops,
        filtered_ret.queue_drops
    );
    assert!(plain > 5e6, "the transfer ran: {plain}");
    assert!(
        filtered > plain * 1.03,
        "ACK filtering {filtered} b/s is not 3 % above drop-tail {plain} b/s"
    );
}

/// `coalesce` stretches only the waits for packets, never the client's start or the end of the
/// run (issue 15: with a huge value the client never started and the run hung). With 30 s of
/// coalescing and a 20 s run, ping's echo (600 ms round trip) waits in the link until ping
/// gives up after 3 s, while the client starts at 0.5 s and its exit ends the run: had the
/// first wait been stretched too, the loop would have woken at 30 s, past the run's end
/// ("duration"). Without coalescing, the same ping is answered.
#[test]
fn coalesce_stretches_packet_waits_only() {
    let _serial = SERIAL.lock();
    let name = "coalesce_stretches_packet_waits_only";
    if !can_emulate(name) || !has("ping", name) {
        return;
    }
    for (coalesce, exit, received) in [(0, 0, "1 received"), (30, 1, "0 received")] {
        let dir = tempfile::tempdir().unwrap();
        let mut opts = EmuOptions::new(dir.path());
        opts.server_on = Some("term".into());
        opts.client_on = Some("gw".into());
        opts.client = Some("ping -c 1 -W 3 {server}".into());
        opts.coalesce = Duration::from_secs(coalesce);
        opts.duration = Some(Duration::from_secs(20));
        let start = WallInstant::now();
        let out = satpep_emu::run(&geo20(), &opts).unwrap();
        let log = std::fs::read_to_string(&out.client_log).unwrap();
        println!(
            "coalesce {coalesce} s: {} after {:.1} s, client exit {:?}, lateness max {:.0} µs",
            out.summary.stop_reason,
            start.elapsed().as_secs_f64(),
            out.summary.client_exit,
            out.summary.lateness.max_us
        );
        assert_eq!(out.summary.stop_reason, "client exited", "{log}");
        assert_eq!(out.summary.client_exit, Some(exit), "{log}");
        assert!(log.contains(received), "{log}");
        assert!(out.summary.path.rx_packets >= 1, "the echo was read");
        assert!(netns::list(&format!("satpep-{}-", std::process::id())).is_empty());
    }
}

/// ping's RTT equals the configured 2 × 300 ms plus the serialisation of its 84-byte packets
/// at 20 Mb/s both ways (2 × 33.6 µs), within 2 ms — and is never shorter than the model.
#[test]
fn ping_rtt_matches_the_configured_delay() {
    let _serial = SERIAL.lock();
    let name = "ping_rtt_matches_the_configured_delay";
    if !can_emulate(name) || !has("ping", name) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut opts = EmuOptions::new(dir.path());
    opts.client = Some("ping -n -c 10 -i 0.2 {server}".into());
    opts.duration = Some(Duration::from_secs(20));
    let mut scenario = geo20();
    scenario.output.pcap_links = vec![0, 1];
    let out = satpep_emu::run(&scenario, &opts).unwrap();
    let log = std::fs::read_to_string(&out.client_log).unwrap();
    assert_eq!(out.summary.client_exit, Some(0), "{log}");
    // rtt min/avg/max/mdev = 600.268/600.321/600.390/0.042 ms
    let stats = log
        .lines()
        .find_map(|l| l.split_once("rtt min/avg/max/mdev = "))
        .and_then(|(_, v)| v.split_whitespace().next().map(str::to_owned))
        .unwrap_or_else(|| panic!("no rtt line in: {log}"));
    let v: Vec<f64> = stats.split('/').map(|x| x.parse().unwrap()).collect();
    let model = 600.0 + 2.0 * 84.0 * 8.0 / 20e6 * 1e3;
    println!(
        "ping rtt min {:.3} avg {:.3} max {:.3} ms; model {model:.3} ms",
        v[0], v[1], v[2]
    );
    assert!(v[0] >= model, "faster than the modelled path: {stats}");
    assert!((v[1] - model).abs() < 2.0, "avg {} vs {model}", v[1]);
    // The maximum is one sample and on a loaded 2-core machine a single scheduling stall shows
    // in it; the issue's bound applies to the measured (average) RTT above.
    assert!((v[2] - model).abs() < 10.0, "max {} vs {model}", v[2]);
    assert!(log.contains("10 received"), "{log}");
    // Outputs: summary.json as the simulator's reader reads it, links.csv with both links.
    let base = satpep_output::Summary::read_json(dir.path().join("summary.json")).unwrap();
    // (Floats can differ in the last digit: serde_json parses without exact round trip.)
    assert_eq!(base.scenario, "geo20");
    assert_eq!(base.links.len(), 2);
    assert_eq!(base.links[0].name, out.summary.base.links[0].name);
    assert_eq!(base.links[0].delivered_packets, 10, "10 echo requests");
    assert_eq!(base.links[1].delivered_packets, 10, "10 echo replies");
    assert_eq!(base.links[0].delivered_bytes, 840);
    let csv = std::fs::read_to_string(dir.path().join("links.csv")).unwrap();
    assert!(
        csv.lines().filter(|l| l.contains(",fwd,")).count() > 100,
        "10 ms samples"
    );
    assert!(csv.lines().any(|l| l.contains(",ret,")));
    assert_eq!(
        out.summary.lateness.packets, 20,
        "every packet leaving a link is measured"
    );
    // trace.pcapng, written by the same recorder as in `sim`: one interface per captured link,
    // named after it, with that link's 10 packets.
    let (names, counts) = pcapng_interfaces(&dir.path().join("trace.pcapng"));
    assert_eq!(names, ["fwd", "ret"]);
    assert_eq!(counts, [10, 10]);
}

/// The interface names of a pcapng file and how many packets each holds.
fn pcapng_interfaces(path: &Path) -> (Vec<String>, Vec<u64>) {
    use pcap_file::pcapng::blocks::interface_description::InterfaceDescriptionOption;
    use pcap_file::pcapng::{Block, PcapNgReader};
    let file = std::fs::File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut reader = PcapNgReader::new(file).expect("pcapng section header");
    let (mut names, mut counts) = (Vec::new(), Vec::new());
    while let Some(block) = reader.next_block() {
        match block.expect("block") {
            Block::InterfaceDescription(idb) => {
                let name = idb.options.iter().find_map(|o| match o {
                    InterfaceDescriptionOption::IfName(n) => Some(n.to_string()),
                    _ => None,
                });
                names.push(name.expect("if_name"));
                counts.push(0);
            }
            Block::EnhancedPacket(p) => counts[p.interface_id as usize] += 1,
            _ => {}
        }
    }
    (names, counts)
}

/// A SIGKILLed emulator leaves its namespaces behind (a bind mount outlives the process); the
/// next start removes them, and nothing keeps running in them.
#[test]
fn leftovers_of_a_killed_run_are_removed_at_next_start() {
    let _serial = SERIAL.lock();
    let name = "leftovers_of_a_killed_run_are_removed_at_next_start";
    if !can_emulate(name) {
        return;
    }
    let mut child = spawn_child("sleep 300");
    let prefix = format!("satpep-{}-", child.id());
    let spaces = wait_for_namespaces(&prefix, &mut child);
    assert_eq!(spaces.len(), 2, "one per host: {spaces:?}");
    // The server ("sleep 300") runs inside the first flow's listener namespace.
    let mut server = Vec::new();
    wait_for(
        || {
            server = spaces.iter().flat_map(|ns| pids_in(ns)).collect();
            !server.is_empty()
        },
        "server start",
    );
    child.kill().unwrap(); // SIGKILL: no cleanup code runs in the emulator
    child.wait().unwrap();
    // Its watchdog removes the namespaces and kills what ran inside them.
    wait_for(
        || netns::list(&prefix).is_empty(),
        "the watchdog's clean-up",
    );
    for pid in &server {
        wait_for(
            || {
                std::fs::read_to_string(format!("/proc/{pid}/stat"))
                    .map_or(true, |s| s.contains(") Z "))
            },
            "the server's end",
        );
    }

    // Leftovers that even the watchdog could not remove (it was killed too) are removed by
    // the next start: a namespace named for a pid that no longer runs.
    let dead = child.id(); // reaped above: no longer a process
    let stale = format!("satpep-{dead}-99-left");
    let added = Command::new("ip").args(["netns", "add", &stale]).status();
    assert!(added.is_ok_and(|s| s.success()), "ip netns add {stale}");
    let dir = tempfile::tempdir().unwrap();
    let mut opts = EmuOptions::new(dir.path());
    opts.duration = Some(Duration::from_millis(200));
    let out = satpep_emu::run(&geo20(), &opts).unwrap();
    assert!(
        out.summary.stale_removed.contains(&stale),
        "{:?}",
        out.summary.stale_removed
    );
    assert_eq!(netns::list(&prefix), Vec::<String>::new());
    assert!(
        netns::list(&format!("satpep-{}-", std::process::id())).is_empty(),
        "this run's own namespaces are gone too"
    );
    assert!(!Path::new(netns::NETNS_DIR).join(&stale).exists());
}

/// SIGTERM stops a running emulation cleanly: it exits 0, writes its summary and removes its
/// namespaces and the commands in them.
#[test]
fn sigterm_stops_the_run_and_removes_its_namespaces() {
    let _serial = SERIAL.lock();
    let name = "sigterm_stops_the_run_and_removes_its_namespaces";
    if !can_emulate(name) {
        return;
    }
    let mut child = spawn_child("sleep 300");
    let prefix = format!("satpep-{}-", child.id());
    let spaces = wait_for_namespaces(&prefix, &mut child);
    // Wait for the server command itself: set-up also runs short-lived commands (sysctl) in
    // the namespaces.
    let is_sleep = |pid: &i32| {
        std::fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|c| c.trim() == "sleep")
    };
    wait_for(
        || {
            spaces
                .iter()
                .flat_map(|ns| pids_in(ns))
                .any(|p| is_sleep(&p))
        },
        "server start",
    );
    let sleepers: Vec<i32> = spaces
        .iter()
        .flat_map(|ns| pids_in(ns))
        .filter(is_sleep)
        .collect();
    let status = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let st = wait_timeout(&mut child, StdDuration::from_secs(15)).expect("exits after SIGTERM");
    assert!(st.success(), "{st:?}");
    assert_eq!(netns::list(&prefix), Vec::<String>::new());
    for pid in sleepers {
        assert!(
            !Path::new(&format!("/proc/{pid}")).exists()
                || std::fs::read_to_string(format!("/proc/{pid}/stat"))
                    .is_ok_and(|s| s.contains(") Z ")),
            "server process {pid} still running"
        );
    }
}

/// Without root the emulator refuses with a message naming what it needs, and exit code 2.
#[test]
fn without_root_the_error_says_what_is_needed_and_exits_2() {
    let _serial = SERIAL.lock();
    let name = "without_root_the_error_says_what_is_needed_and_exits_2";
    if !can_emulate(name) || !has("setpriv", name) {
        return;
    }
    // A copy of this test binary that `nobody` may run wherever the build tree lives (a
    // root-owned target/ under a 0700 home is common in CI).
    use std::os::unix::fs::PermissionsExt;
    let copy_dir = tempfile::tempdir().unwrap();
    let exe = copy_dir.path().join("child");
    std::fs::copy(std::env::current_exe().unwrap(), &exe).unwrap();
    for p in [copy_dir.path(), exe.as_path()] {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let out = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(&exe)
        .args([
            "--exact",
            "child_emulator",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("SATPEP_EMU_CHILD", "true")
        .env("SATPEP_EMU_CHILD_OUT", "/tmp")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("needs root"), "{stderr}");
    assert!(stderr.contains("network namespaces"), "{stderr}");
}

/// Not a test on its own: when `SATPEP_EMU_CHILD` is set, run one emulation of [`GEO20`] with
/// that server command for at most 60 s and exit with the emulator's exit code.
#[test]
fn child_emulator() {
    let Ok(server) = std::env::var("SATPEP_EMU_CHILD") else {
        return;
    };
    let out = std::env::var("SATPEP_EMU_CHILD_OUT").unwrap_or_else(|_| "/tmp".into());
    let mut opts = EmuOptions::new(Path::new(&out).join(format!("emu-{}", std::process::id())));
    opts.server = Some(server);
    opts.duration = Some(Duration::from_secs(60));
    match satpep_emu::run(&geo20(), &opts) {
        Ok(_) => std::process::exit(0),
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(i32::from(e.exit_code()));
        }
    }
}

fn spawn_child(server: &str) -> Child {
    let dir = std::env::temp_dir();
    Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "child_emulator",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("SATPEP_EMU_CHILD", server)
        .env("SATPEP_EMU_CHILD_OUT", dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .spawn()
        .unwrap()
}

/// Wait (≤ 20 s) until the child's two namespaces exist and return them.
fn wait_for_namespaces(prefix: &str, child: &mut Child) -> Vec<String> {
    let start = WallInstant::now();
    loop {
        let v = netns::list(prefix);
        if v.len() >= 2 {
            return v;
        }
        if start.elapsed() > StdDuration::from_secs(20) {
            let _ = child.kill();
            panic!("the child emulator created no namespaces in 20 s: {v:?}");
        }
        if let Ok(Some(st)) = child.try_wait() {
            panic!("the child emulator exited early: {st:?}");
        }
        std::thread::sleep(StdDuration::from_millis(20));
    }
}

fn wait_for(mut cond: impl FnMut() -> bool, what: &str) {
    let start = WallInstant::now();
    while !cond() {
        assert!(
            start.elapsed() < StdDuration::from_secs(20),
            "timed out waiting for {what}"
        );
        std::thread::sleep(StdDuration::from_millis(20));
    }
}

fn pids_in(ns: &str) -> Vec<i32> {
    Command::new("ip")
        .args(["netns", "pids", ns])
        .output()
        .map(|o| {
            String::from_utf8_lossy(&o.stdout)
                .split_whitespace()
                .filter_map(|p| p.parse().ok())
                .collect()
        })
        .unwrap_or_default()
}
