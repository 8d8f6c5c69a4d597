//! Determinism and trace files of whole runs.

use std::path::Path;
use std::process::Command;

use satpep_proto::wire::parse_packet;
use satpep_proto::Packet;
use satpep_sim::{Outputs, Simulation};

const SCENARIO: &str = r#"
name = "det"
duration = "60s"
[output]
interval = "50ms"
pcap = ["forward"]
[[node]]
name = "server"
[[node]]
name = "terminal"
[[node]]
name = "client"
[[link]]
name = "forward"
from = "server"
to = "terminal"
rate = "4Mbps"
delay = "250ms"
queue = { limit_packets = 40 }
error = { model = "gilbert_elliott", p_good_bad = 0.002, p_bad_good = 0.3 }
[[link]]
name = "return"
from = "terminal"
to = "server"
rate = "128kbps"
delay = "250ms"
error = { model = "per", per = 0.01 }
[[link]]
name = "lan"
from = "terminal"
to = "client"
rate = "100Mbps"
delay = "1ms"
[[link]]
name = "lan-up"
from = "client"
to = "terminal"
rate = "100Mbps"
delay = "1ms"
[[flow]]
name = "a"
from = "server"
to = "client"
app = { kind = "bulk", bytes = "2MB" }
[[flow]]
name = "b"
from = "client"
to = "server"
start = "1s"
app = { kind = "request_response", request = "300B", response = "50KB", count = 3, think = "500ms" }
tcp = { cc = "reno", recovery = "newreno" }
"#;

fn run(dir: &Path, seed: u64) -> satpep_output::Summary {
    let loaded = satpep_scenario::load_str(SCENARIO, "det", &[format!("seed={seed}")])
        .unwrap_or_else(|e| panic!("{e}"));
    let mut sim = Simulation::new(&loaded.scenario);
    sim.set_outputs(Outputs::create(dir, &loaded.scenario).expect("outputs"));
    let r = sim.run(|_| {}).expect("run");
    r.summary.write_json(dir).expect("summary");
    satpep_output::write_run_json(dir, "test", seed, &loaded.resolved).expect("run.json");
    r.summary
}

fn read(dir: &Path, name: &str) -> Vec<u8> {
    std::fs::read(dir.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

#[test]
fn same_seed_gives_byte_identical_outputs_and_another_seed_does_not() {
    let (a, b, c) = (
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
    );
    let sa = run(a.path(), 7);
    run(b.path(), 7);
    let sc = run(c.path(), 8);
    for f in [
        "summary.json",
        "flows.csv",
        "links.csv",
        "trace.pcap",
        "run.json",
    ] {
        let (x, y) = (read(a.path(), f), read(b.path(), f));
        assert!(!x.is_empty(), "{f} is empty");
        assert!(x == y, "{f} differs between two runs with the same seed");
    }
    assert_ne!(
        read(a.path(), "trace.pcap"),
        read(c.path(), "trace.pcap"),
        "seed must matter with random errors"
    );
    // The flows did real work.
    assert_eq!(sa.flows[0].bytes_delivered, 2_000_000);
    assert_eq!(sa.flows[1].bytes_delivered, 150_000);
    assert!(sc.links[0].error_drops > 0);
}

#[test]
fn pcap_holds_every_delivered_packet_with_valid_headers() {
    let dir = tempfile::tempdir().unwrap();
    let summary = run(dir.path(), 1);
    let file = std::fs::File::open(dir.path().join("trace.pcap")).unwrap();
    let mut reader = pcap_file::pcap::PcapReader::new(file).expect("pcap header");
    assert_eq!(reader.header().datalink, pcap_file::DataLink::RAW);
    let (mut n, mut last_ts, mut data) = (0u64, std::time::Duration::ZERO, 0u64);
    while let Some(pkt) = reader.next_packet() {
        let pkt = pkt.expect("record");
        assert!(pkt.timestamp >= last_ts, "records in time order");
        last_ts = pkt.timestamp;
        let payload = pkt.orig_len - pkt.data.len() as u32;
        let p = Packet::new(&pkt.data, payload);
        let (ip, tcp) = parse_packet(&p).expect("valid IPv4/TCP with correct checksums");
        assert_eq!(ip.protocol, 6);
        assert_eq!(tcp.payload_len, payload);
        data += u64::from(payload);
        n += 1;
    }
    let fwd = &summary.links[0];
    assert_eq!(
        n, fwd.delivered_packets,
        "one record per packet the link delivered"
    );
    // Flow a's 2 MB and flow b's three 50 KB responses (plus any retransmissions).
    assert!(
        data >= 2_150_000,
        "all payload bytes crossed the forward link ({data})"
    );

    // tshark, when installed (CI installs it), must decode both TCP conversations.
    let Ok(out) = Command::new("tshark")
        .args(["-r"])
        .arg(dir.path().join("trace.pcap"))
        .args(["-q", "-z", "conv,tcp"])
        .output()
    else {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must run the tshark check: tshark is missing (.ci/run installs it)"
        );
        eprintln!("SKIP tshark check: tshark not installed");
        return;
    };
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "tshark failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let convs = text.lines().filter(|l| l.contains("<->")).count();
    assert_eq!(convs, 2, "tshark sees both flows:\n{text}");
}
