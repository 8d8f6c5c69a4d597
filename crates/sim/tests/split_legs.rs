//! A split-TCP flow in every output: the opener's leg under the flow's name, the gateway's
//! leg as `<flow>@<gateway>` in flows.csv and as `legs` in summary.json.

use std::collections::BTreeMap;

use satpep_sim::{Outputs, Simulation};

fn run(dir: &std::path::Path, split: bool) -> satpep_output::Summary {
    let mut set = vec![
        "duration=\"20s\"".to_string(),
        "output.interval=\"100ms\"".to_string(),
    ];
    if split {
        set.push("node.gateway.middlebox={ kind = \"split_tcp\" }".into());
    }
    let loaded =
        satpep_scenario::load_str(satpep_scenario::default_scenario_text(), "<built-in>", &set)
            .unwrap_or_else(|e| panic!("{e}"));
    let mut sim = Simulation::new(&loaded.scenario);
    sim.set_outputs(Outputs::create(dir, &loaded.scenario).unwrap());
    let r = sim.run(|_| {}).unwrap();
    r.summary.write_json(dir).unwrap();
    r.summary
}

/// flows.csv rows per flow name: (time_s, srtt_ms, delivered_bytes).
fn rows(dir: &std::path::Path) -> BTreeMap<String, Vec<(String, f64, u64)>> {
    let text = std::fs::read_to_string(dir.join("flows.csv")).unwrap();
    let mut by_flow: BTreeMap<String, Vec<(String, f64, u64)>> = BTreeMap::new();
    for line in text.lines().skip(1) {
        let c: Vec<&str> = line.split(',').collect();
        by_flow.entry(c[1].to_owned()).or_default().push((
            c[0].to_owned(),
            c[4].parse().unwrap_or(f64::NAN),
            c[10].parse().unwrap(),
        ));
    }
    by_flow
}

#[test]
fn both_legs_of_a_split_flow_are_reported_and_labelled() {
    let dir = tempfile::tempdir().unwrap();
    let s = run(dir.path(), true);
    for f in &s.flows {
        assert_eq!(f.legs.len(), 1, "{}", f.name);
        let leg = &f.legs[0];
        assert_eq!((leg.at.as_str(), leg.to.as_str()), ("gateway", "client"));
        // The opener's leg is terrestrial (about 25 ms here); the gateway's crosses the
        // satellite (250 ms each way plus queueing).
        let (near, far) = (f.mean_srtt_ms.unwrap(), leg.mean_srtt_ms.unwrap());
        assert!(near < 100.0 && far > 500.0, "{}: {near} / {far} ms", f.name);
        assert!(leg.bytes_acked <= f.bytes_delivered, "{}", f.name);
        assert!(leg.bytes_acked * 10 >= f.bytes_delivered * 9, "{}", f.name);
        assert!(leg.segments_sent * 1460 >= leg.bytes_acked, "{}", f.name);
    }
    let by_flow = rows(dir.path());
    for f in &s.flows {
        let ends = &by_flow[&f.name];
        let relay = &by_flow[&format!("{}@gateway", f.name)];
        // The relay leg exists from its connection's start to the end of the run: one row per
        // sample, at the same instants as the flow's own rows from then on.
        assert!(relay.len() > 150, "{}: {} rows", f.name, relay.len());
        let tail = &ends[ends.len() - relay.len()..];
        for (a, b) in tail.iter().zip(relay) {
            assert_eq!(a.0, b.0, "sample times");
            assert_eq!(a.2, b.2, "same listener, same delivered bytes");
        }
        let srtt = relay.last().unwrap().1;
        assert!(srtt > 500.0, "{}@gateway srtt {srtt}", f.name);
    }
    let json = std::fs::read_to_string(dir.path().join("summary.json")).unwrap();
    assert!(json.contains("\"legs\": ["));
}

#[test]
fn an_end_to_end_flow_has_no_legs() {
    let dir = tempfile::tempdir().unwrap();
    let s = run(dir.path(), false);
    assert!(s.flows.iter().all(|f| f.legs.is_empty()));
    assert!(rows(dir.path()).keys().all(|k| !k.contains('@')));
    let json = std::fs::read_to_string(dir.path().join("summary.json")).unwrap();
    assert!(!json.contains("legs"), "no key for end-to-end flows");
}
