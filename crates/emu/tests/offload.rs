//! TUN offloads end to end: a file fetched with `curl` over devices with `IFF_VNET_HDR` arrives
//! byte for byte, the hosts' TCP super-packets were read and written as such, and yet the
//! model — link counters, captures, the path counters — saw only wire-sized segments (their
//! checksums are the unit tests' concern, crate::vnet: captures hold headers only). Needs
//! root (namespaces, TUN), python3 and curl; under `CI=true` a missing one is a failure.

use std::path::Path;
use std::process::Command;

use satpep_emu::{netns, EmuOptions};
use satpep_proto::Duration;

/// srv (10.0.0.1) ⇄ term (10.0.1.1): 400 Mb/s, 5 ms each way, queues far larger than any
/// window here (no drops, so every packet read is one delivered); the download link captured.
const PATH: &str = r#"
name = "offload"
seed = 1
[[node]]
name = "srv"
address = "10.0.0.1"
[[node]]
name = "term"
address = "10.0.1.1"
[[link]]
name = "down"
from = "srv"
to = "term"
rate = "400Mbps"
delay = "5ms"
queue = { limit_packets = 50000 }
[[link]]
name = "up"
from = "term"
to = "srv"
rate = "400Mbps"
delay = "5ms"
queue = { limit_packets = 50000 }
[[flow]]
from = "srv"
to = "term"
app = { kind = "bulk" }
[output]
series = false
pcap = ["down"]
"#;

/// Device MTU: the largest packet on the wire.
const MTU: usize = 1500;

fn ready(test: &str) -> bool {
    let root = netns::check_privileges().is_ok();
    let tools = ["curl", "python3", "ip"].iter().all(|p| {
        Command::new("sh")
            .args(["-c", &format!("command -v {p}")])
            .output()
            .is_ok_and(|o| o.status.success())
    });
    if !(root && tools) {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must run {test}: it needs root, curl and python3 (.ci/run installs them)"
        );
        println!("SKIP: {test} needs root, curl and python3");
    }
    root && tools
}

/// A deterministic, incompressible file of `size` bytes.
fn blob(path: &Path, size: usize) -> Vec<u8> {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let data: Vec<u8> = (0..size)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect();
    std::fs::write(path, &data).unwrap();
    data
}

/// The length on the wire of every packet of the capture (which holds headers only, see
/// satpep_output::pcap).
fn captured_lengths(path: &Path) -> Vec<u32> {
    use pcap_file::pcapng::{Block, PcapNgReader};
    let file = std::fs::File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut reader = PcapNgReader::new(file).expect("pcapng section header");
    let mut out = Vec::new();
    while let Some(block) = reader.next_block() {
        if let Block::EnhancedPacket(p) = block.expect("block") {
            out.push(p.original_len);
        }
    }
    out
}

#[test]
fn offloaded_tcp_transfer_is_byte_exact_and_counted_in_wire_segments() {
    let test = "offloaded_tcp_transfer_is_byte_exact_and_counted_in_wire_segments";
    if !ready(test) {
        return;
    }
    let sc = satpep_scenario::load_str(PATH, "<offload>", &[])
        .unwrap_or_else(|e| panic!("scenario: {e}"))
        .scenario;
    let dir = tempfile::tempdir().unwrap();
    let www = dir.path().join("www");
    std::fs::create_dir_all(&www).unwrap();
    const SIZE: usize = 16 * 1024 * 1024;
    let data = blob(&www.join("blob"), SIZE);
    let got = dir.path().join("got");
    let out_dir = dir.path().join("out");
    let mut opts = EmuOptions::new(&out_dir);
    assert!(opts.offload, "offloads are the default");
    opts.server_on = Some("srv".into());
    opts.client_on = Some("term".into());
    // `--bind 0.0.0.0`: a namespace has no resolver (see real_bytes.rs).
    opts.server = Some(format!(
        "exec python3 -m http.server 8000 --bind 0.0.0.0 --directory {}",
        www.display()
    ));
    opts.client_delay = Duration::from_millis(1500);
    opts.client = Some(format!(
        "curl -sS --max-time 100 -o {} http://{{server}}:8000/blob; e=$?; sleep 1; exit $e",
        got.display()
    ));
    opts.duration = Some(Duration::from_secs(150));
    let out = satpep_emu::run(&sc, &opts).unwrap();
    let log = std::fs::read_to_string(&out.client_log).unwrap_or_default();
    assert_eq!(out.summary.stop_reason, "client exited", "{log}");
    assert_eq!(out.summary.client_exit, Some(0), "curl failed: {log}");
    let copy = std::fs::read(&got).unwrap();
    assert_eq!(copy.len(), SIZE);
    assert!(copy == data, "bytes differ");

    let s = &out.summary;
    let p = s.path;
    println!("path {p:?}; lateness {:?}", s.lateness);
    assert_eq!(s.offload_devices, 2, "both devices offload");
    // The server's stack handed over super-packets, and delivered runs went back joined.
    assert!(p.rx_super_packets > 0, "no super-packet read: {p:?}");
    assert!(p.tx_super_packets > 0, "no super-packet written: {p:?}");
    assert_eq!((p.malformed, p.vnet_malformed, p.tx_dropped), (0, 0, 0));
    // Counted in wire segments: every packet read is a segment the links carried (no drops,
    // two hosts, no router), and a segment is at most an MTU.
    let down = &s.base.links[0];
    let up = &s.base.links[1];
    assert_eq!((down.queue_drops, up.queue_drops), (0, 0));
    assert_eq!(p.rx_packets, down.delivered_packets + up.delivered_packets);
    assert_eq!(p.tx_packets, p.rx_packets);
    assert_eq!(p.rx_bytes, down.delivered_bytes + up.delivered_bytes);
    assert_eq!(p.tx_bytes, p.rx_bytes);
    assert!(down.delivered_bytes <= down.delivered_packets * MTU as u64);
    // 16 MiB in segments of at most 1448 bytes of payload: at least 11 586 of them, far more
    // than the super-packets read.
    let min_segments = SIZE.div_ceil(1448) as u64;
    assert!(down.delivered_packets >= min_segments, "{down:?}");
    assert!(p.rx_super_packets * 4 < min_segments, "{p:?}");
    // The capture shows wire-sized packets, as many as the link carried, with the payload.
    let cap = captured_lengths(&out_dir.join("trace.pcapng"));
    assert_eq!(cap.len() as u64, down.delivered_packets);
    let too_long = cap.iter().filter(|&&len| len as usize > MTU).count();
    assert_eq!(too_long, 0, "packets over the MTU in the capture");
    let wire: u64 = cap.iter().map(|&len| u64::from(len)).sum();
    assert_eq!(wire, down.delivered_bytes);
    assert!(wire >= (SIZE + min_segments as usize * 52) as u64);
}
