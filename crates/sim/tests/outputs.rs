//! Determinism and trace files of whole runs.

use std::path::Path;

use satpep_proto::wire::parse_packet;
use satpep_proto::Packet;
use satpep_sim::{Outputs, Simulation, TRACE_PCAPNG};

const SCENARIO: &str = r#"
name = "det"
duration = "60s"
[output]
interval = "50ms"
pcap = ["forward", "lan"]
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
    run_with(dir, seed, &[])
}

fn run_with(dir: &Path, seed: u64, sets: &[&str]) -> satpep_output::Summary {
    let mut sets: Vec<String> = sets.iter().map(|s| (*s).to_owned()).collect();
    sets.push(format!("seed={seed}"));
    let loaded =
        satpep_scenario::load_str(SCENARIO, "det", &sets).unwrap_or_else(|e| panic!("{e}"));
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
        TRACE_PCAPNG,
        "run.json",
    ] {
        let (x, y) = (read(a.path(), f), read(b.path(), f));
        assert!(!x.is_empty(), "{f} is empty");
        assert!(x == y, "{f} differs between two runs with the same seed");
    }
    assert_ne!(
        read(a.path(), TRACE_PCAPNG),
        read(c.path(), TRACE_PCAPNG),
        "seed must matter with random errors"
    );
    // The flows did real work.
    assert_eq!(sa.flows[0].bytes_delivered, 2_000_000);
    assert_eq!(sa.flows[1].bytes_delivered, 150_000);
    assert!(sc.links[0].error_drops > 0);
}

/// Interface names and the (interface, timestamp, original length, header) of every packet
/// in a pcapng file.
#[allow(clippy::type_complexity)]
fn read_pcapng(path: &Path) -> (Vec<String>, Vec<(u32, std::time::Duration, u32, Vec<u8>)>) {
    use pcap_file::pcapng::blocks::interface_description::InterfaceDescriptionOption;
    use pcap_file::pcapng::{Block, PcapNgReader};
    let file = std::fs::File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut reader = PcapNgReader::new(file).expect("pcapng section header");
    let (mut names, mut packets) = (Vec::new(), Vec::new());
    while let Some(block) = reader.next_block() {
        match block.expect("block") {
            Block::InterfaceDescription(idb) => {
                assert_eq!(idb.linktype, pcap_file::DataLink::RAW);
                assert!(idb
                    .options
                    .contains(&InterfaceDescriptionOption::IfTsResol(9)));
                let name = idb.options.iter().find_map(|o| match o {
                    InterfaceDescriptionOption::IfName(n) => Some(n.to_string()),
                    _ => None,
                });
                names.push(name.expect("if_name"));
            }
            Block::EnhancedPacket(p) => {
                packets.push((p.interface_id, p.timestamp, p.original_len, p.data.to_vec()))
            }
            other => panic!("unexpected block {other:?}"),
        }
    }
    (names, packets)
}

#[test]
fn pcapng_holds_every_delivered_packet_on_its_links_interface() {
    let dir = tempfile::tempdir().unwrap();
    let summary = run(dir.path(), 1);
    let (names, packets) = read_pcapng(&dir.path().join(TRACE_PCAPNG));
    assert_eq!(
        names,
        ["forward", "lan"],
        "one interface per capture point, in order"
    );
    let (mut count, mut data) = ([0u64; 2], [0u64; 2]);
    let mut last_ts = std::time::Duration::ZERO;
    for (iface, ts, orig_len, header) in &packets {
        assert!(*ts >= last_ts, "packets in time order");
        last_ts = *ts;
        let payload = orig_len - header.len() as u32;
        let (ip, tcp) = parse_packet(&Packet::new(header, payload))
            .expect("valid IPv4/TCP with correct checksums");
        assert_eq!(ip.protocol, 6);
        assert_eq!(tcp.payload_len, payload);
        count[*iface as usize] += 1;
        data[*iface as usize] += u64::from(payload);
    }
    let link = |name: &str| summary.links.iter().find(|l| l.name == name).unwrap();
    assert_eq!(
        count,
        [
            link("forward").delivered_packets,
            link("lan").delivered_packets
        ],
        "one packet per packet each link delivered"
    );
    // Flow a's 2 MB and flow b's three 50 KB responses (plus any retransmissions) crossed
    // both hops.
    for (d, name) in data.iter().zip(["forward", "lan"]) {
        assert!(*d >= 2_150_000, "payload bytes on {name}: {d}");
    }
}

#[test]
fn pcap_per_link_writes_each_interface_of_the_merged_trace_to_its_own_file() {
    let (merged, split) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    run(merged.path(), 3);
    run_with(split.path(), 3, &["output.pcap_per_link=true"]);
    assert!(!split.path().join(TRACE_PCAPNG).exists(), "no merged trace");
    let (_, all) = read_pcapng(&merged.path().join(TRACE_PCAPNG));
    for (id, link) in ["forward", "lan"].iter().enumerate() {
        let (names, packets) = read_pcapng(&split.path().join(format!("{link}.pcapng")));
        assert_eq!(names, [*link]);
        let want: Vec<_> = all
            .iter()
            .filter(|p| p.0 == id as u32)
            .map(|(_, ts, len, data)| (0, *ts, *len, data.clone()))
            .collect();
        assert!(want.len() > 1_000, "{link}: {} packets", want.len());
        assert!(
            packets == want,
            "{link}.pcapng holds exactly the merged trace's interface {id}"
        );
    }
}
