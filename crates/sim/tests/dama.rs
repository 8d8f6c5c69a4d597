//! DVB-RCS DAMA return link in the whole simulator: the RTT TCP sees through CRA and VBDC, and
//! the Fig 7 VBDC/CRA ratio of Roseti & Kristiansen (measured, not tuned).

use std::path::Path;

use satpep_scenario::load_file;
use satpep_sim::Simulation;

const SINGLE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../scenarios/roseti/single.toml"
);

fn set(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

const CRA: &[&str] = &[
    "dama.rcs.terminal.cra_slots=32",
    "dama.rcs.terminal.vbdc_max_slots=0",
];

/// (completion time s, mean RTT sample ms, retransmissions) of single.toml with `extra`.
fn run(extra: &[&str]) -> (f64, f64, u64) {
    let loaded = load_file(Path::new(SINGLE), &set(extra)).expect("scenario loads");
    let r = Simulation::new(&loaded.scenario).run(|_| {}).expect("runs");
    let f = &r.summary.flows[0];
    (
        f.completion_time_s.expect("transfer completes"),
        f.mean_srtt_ms.expect("RTT sampled"),
        f.retransmissions,
    )
}

/// A 64 KB receive window stays below the 128 KB bandwidth-delay product of 2048 kb/s × 500 ms,
/// so no ST queue builds up: the RTT is the access scheme's, not a standing queue's.
const SMALL_WINDOW: &[&str] = &[
    "defaults.tcp.recv_buffer=\"64KB\"",
    "flow.ftp.app.bytes=\"2MB\"",
];

#[test]
fn cra_only_rtt_is_the_physical_delay() {
    let (_, rtt, rtx) = run(&[SMALL_WINDOW, CRA].concat());
    // 500 ms propagation + at most a window's serialisation backlog; measured 5xx ms.
    assert!((500.0..560.0).contains(&rtt), "CRA mean RTT {rtt} ms");
    assert_eq!(rtx, 0);
}

#[test]
fn vbdc_rtt_is_physical_plus_access_delay() {
    let (_, rtt, _) = run(SMALL_WINDOW);
    // 500 ms + L·T_sf = 1056 ms, plus up to one superframe waiting for the next request and
    // up to one for the slot's place in the granted superframe: [1556, 1556 + 2·96] ms.
    assert!((1556.0..=1748.0).contains(&rtt), "VBDC mean RTT {rtt} ms");
}

#[test]
fn fig7_vbdc_over_cra_for_500kb_is_about_three() {
    let size = "flow.ftp.app.bytes=\"500KB\"";
    let (cra, _, _) = run(&[CRA, &[size]].concat());
    let (vbdc, _, _) = run(&[size]);
    let ratio = vbdc / cra;
    // The paper reports about 3; the issue asks for [2, 4]. Measured: 22.195 / 7.441 = 2.98.
    assert!(
        (2.0..=4.0).contains(&ratio),
        "VBDC/CRA = {vbdc}/{cra} = {ratio}"
    );
}

#[test]
fn hybrid_cra_helps_short_files_more_than_long_ones() {
    // Fig 7's last observation, measured: 5 CRA + 27 VBDC normalised to CRA.
    let five = "dama.rcs.terminal.cra_slots=5";
    let norm = |size: &str| {
        let s = format!("flow.ftp.app.bytes=\"{size}\"");
        let (cra, _, _) = run(&[CRA, &[s.as_str()]].concat());
        let (hyb, _, _) = run(&[five, s.as_str()]);
        hyb / cra
    };
    let (short, long) = (norm("500KB"), norm("10MB"));
    assert!(short > long && long > 1.0, "500KB {short}, 10MB {long}");
}

#[test]
fn dama_csv_shows_the_first_grant_exactly_l_superframes_after_the_first_request() {
    use satpep_sim::Outputs;
    let dir = tempfile::tempdir().expect("tempdir");
    let loaded =
        load_file(Path::new(SINGLE), &set(&["flow.ftp.app.bytes=\"100KB\""])).expect("loads");
    let mut sim = Simulation::new(&loaded.scenario);
    sim.set_outputs(Outputs::create(dir.path(), &loaded.scenario).expect("outputs"));
    sim.run(|_| {}).expect("runs");
    let text = std::fs::read_to_string(dir.path().join("dama.csv")).expect("dama.csv");
    let mut lines = text.lines();
    assert_eq!(
        lines.next(),
        Some("time_s,dama,terminal,superframe,cra,rbdc,vbdc,fca,queue_bytes,req_rbdc,req_vbdc,req_lost")
    );
    let rows: Vec<Vec<u64>> = lines
        .map(|l| {
            l.split(',')
                .skip(3)
                .map(|v| v.parse().expect("number"))
                .collect()
        })
        .collect();
    // Columns from `superframe`: 0 sf, 1 cra, 2 rbdc, 3 vbdc, 4 fca, 5 queue, 6 req_rbdc, 7 req_vbdc.
    let first_req = rows.iter().find(|r| r[7] > 0).expect("a request");
    let first_grant = rows.iter().find(|r| r[3] > 0).expect("a grant");
    assert_eq!(first_grant[0], first_req[0] + 11);
    // The SYN (60 bytes with options) waits for superframe 1: one slot requested, one granted.
    assert_eq!((first_req[0], first_req[5], first_req[7]), (1, 60, 1));
    assert_eq!(first_grant[3], 1);
    assert!(rows.iter().all(|r| r[1] + r[2] + r[3] + r[4] <= 128));
    let rtt = std::fs::read_to_string(dir.path().join("rtt.csv")).expect("rtt.csv");
    assert!(rtt.starts_with("time_s,flow,rtt_ms,srtt_ms\n"));
    assert!(rtt.lines().count() > 5);
}
