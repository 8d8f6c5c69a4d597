//! `satpep bench --peer ns2`: the dumbbell paired with bench/peers/ns2/dumbbell_newreno.tcl, and
//! the two event queues giving the same run.

mod common;
use common::satpep;

fn json_lines(out: &std::process::Output) -> Vec<serde_json::Value> {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON object a line"))
        .collect()
}

#[test]
fn ns2_dumbbell_has_a_host_per_flow_and_both_queues_run_it_alike() {
    let dir = tempfile::tempdir().expect("tempdir");
    // The scenario: 2N + 2 nodes, 4N + 2 links, NewReno with the ns2 profile.
    let o = satpep(
        &["bench", "--peer", "ns2", "--flows", "3", "--print"],
        dir.path(),
    );
    assert!(o.status.success());
    let toml = String::from_utf8_lossy(&o.stdout);
    assert_eq!(toml.matches("[[node]]").count(), 8);
    assert_eq!(toml.matches("[[link]]").count(), 14);
    assert_eq!(toml.matches("[[flow]]").count(), 3);
    assert!(toml.contains("profile = \"ns2\"") && toml.contains("recovery = \"newreno\""));

    let run = |queue| {
        let a = [
            "bench",
            "--peer",
            "ns2",
            "--flows",
            "3",
            "--seconds",
            "5",
            "--json",
            "--queue",
            queue,
        ];
        json_lines(&satpep(&a, dir.path()))
    };
    let (heap, wheel) = (run("heap"), run("wheel"));
    assert_eq!(heap.len(), 1, "no default scenario with --peer");
    assert_eq!(heap[0]["scenario"], "ns2-dumbbell-3");
    for key in ["events", "data_packets", "in_order_packets"] {
        assert_eq!(heap[0][key], wheel[0][key], "{key}");
    }
    // 5 s at 100 Mb/s from 3 flows with initial window 2 and a 0.5 s round trip: slow start
    // delivers a few hundred packets, far below the link's 43 000.
    let pkts = heap[0]["in_order_packets"].as_u64().expect("count");
    assert!((100..43_000).contains(&pkts), "{pkts}");
    assert!(heap[0]["data_packets"].as_u64().expect("count") >= pkts);
}
