//! The sampler: without series it walks no flows (openers' cwnd is folded into the summary's
//! maximum lazily, at a host's first event after a sample), yet the summary is the same as with
//! series, and its maximum cwnd is exactly the largest cwnd the series sampled.

use satpep_sim::{Outputs, Simulation};

fn scenario(sets: &[&str]) -> satpep_scenario::Scenario {
    let sets: Vec<String> = sets.iter().map(|s| (*s).to_owned()).collect();
    satpep_scenario::load_str(satpep_scenario::default_scenario_text(), "default", &sets)
        .unwrap_or_else(|e| panic!("{e}"))
        .scenario
}

#[test]
fn max_cwnd_is_the_largest_sampled_cwnd_with_or_without_series() {
    // A lossy return link so that cwnd falls and grows again between samples.
    let sets = [
        "duration=30s",
        "output.interval=20ms",
        "link.forward.error.model=per",
        "link.forward.error.per=0.005",
    ];
    let sc = scenario(&sets);
    let dir = tempfile::tempdir().expect("tempdir");
    let mut sim = Simulation::new(&sc);
    sim.set_outputs(Outputs::create(dir.path(), &sc).expect("outputs"));
    let with = sim.run(|_| {}).expect("run").summary;
    let without = Simulation::new(&sc).run(|_| {}).expect("run").summary;

    // Largest cwnd per flow in flows.csv (the opener's, every 20 ms and at the end).
    let csv = std::fs::read_to_string(dir.path().join("flows.csv")).expect("flows.csv");
    let head: Vec<&str> = csv.lines().next().expect("header").split(',').collect();
    let col = |name: &str| head.iter().position(|h| *h == name).expect(name);
    let (flow_col, cwnd_col) = (col("flow"), col("cwnd_bytes"));
    let mut rows = 0;
    for f in &with.flows {
        let sampled = csv
            .lines()
            .skip(1)
            .map(|l| l.split(',').collect::<Vec<_>>())
            .filter(|r| r[flow_col] == f.name)
            .map(|r| r[cwnd_col].parse::<u64>().expect("cwnd"))
            .inspect(|_| rows += 1)
            .max()
            .expect("samples of the flow");
        assert_eq!(f.max_cwnd_bytes, sampled, "{}", f.name);
        assert!(f.retransmissions > 0, "{}: no loss, a weak test", f.name);
    }
    assert!(rows > 3 * 1000, "{rows} rows");

    // Same summary without series (and so without any per-flow sampling).
    assert_eq!(with, without);
}
