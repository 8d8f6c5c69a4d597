//! Nodes report every packet they drop (`Node::poll_drop`), and the simulator's per-reason
//! counts agree with the links' own counters.

use satpep_proto::DropReason;
use satpep_sim::Simulation;

#[test]
fn reported_drops_match_the_links_counters() {
    let sc = satpep_scenario::load_str(
        satpep_scenario::default_scenario_text(),
        "default",
        &[
            "link.forward.error.model=per".to_owned(),
            "link.forward.error.per=0.01".to_owned(),
            "link.forward.queue.limit_packets=20".to_owned(),
            "duration=20s".to_owned(),
        ],
    )
    .expect("default scenario with overrides")
    .scenario;
    let mut sim = Simulation::new(&sc);
    sim.run_until(satpep_proto::Instant::ZERO + sc.duration);
    let now = sim.now();
    let (mut queue, mut line) = (0, 0);
    for i in 0..sc.links.len() {
        let (st, _, _) = sim.link_stats(i, now);
        queue += st.queue_drops;
        line += st.error_drops;
    }
    let drops = sim.drops();
    let count = |r| drops.iter().find(|(x, _)| *x == r).map_or(0, |&(_, n)| n);
    assert!(
        line > 10 && queue > 10,
        "the run must lose packets both ways: {line} {queue}"
    );
    assert_eq!(count(DropReason::LineError), line);
    assert_eq!(count(DropReason::QueueFull), queue);
}
