//! Set-up memory grows linearly with the topology (issue 13): bytes, counted by an allocator,
//! never a timing. Before routes were computed by peeling stubs, 4× the host pairs took 16× the
//! memory (an all-pairs table); now it must take about 4×. The per-element costs the scenario
//! loader's memory estimate uses are measured here, and a scenario it refuses allocates
//! nothing to speak of (issue 36).

use satpep_sim::Simulation;

/// dhat counts every allocation's bytes (live now, and the peak).
#[global_allocator]
static ALLOC: dhat::Alloc = dhat::Alloc;

/// One dhat profiler at a time: the tests of this file take turns.
static PROFILER: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn live() -> (usize, usize) {
    let s = dhat::HeapStats::get();
    (s.curr_bytes, s.max_bytes)
}

/// A dumbbell of `n` flows, each between its own pair of hosts.
fn dumbbell(n: usize) -> String {
    let access = |name: &str, from: &str, to: &str| {
        format!(
            "[[link]]\ncount = {n}\nname = \"{name}\"\nfrom = \"{from}\"\nto = \"{to}\"\n\
             rate = \"1Gbps\"\ndelay = \"10us\"\n"
        )
    };
    format!(
        "duration = \"60s\"\n[output]\nseries = false\ninterval = \"1s\"\n\
         [[node]]\nname = \"r1\"\nkind = \"router\"\n[[node]]\nname = \"r2\"\nkind = \"router\"\n\
         [[node]]\ncount = {n}\nname = \"s{{i}}\"\n[[node]]\ncount = {n}\nname = \"d{{i}}\"\n\
         [[link]]\nname = \"bottleneck\"\nfrom = \"r1\"\nto = \"r2\"\nrate = \"100Mbps\"\n\
         delay = \"250ms\"\n[[link]]\nname = \"return\"\nfrom = \"r2\"\nto = \"r1\"\n\
         rate = \"10Mbps\"\ndelay = \"250ms\"\n{}{}{}{}\
         [[flow]]\ncount = {n}\nfrom = \"s{{i}}\"\nto = \"d{{i}}\"\nstart = \"{{i}}ms\"\n",
        access("s{i}-r1", "s{i}", "r1"),
        access("r1-s{i}", "r1", "s{i}"),
        access("d{i}-r2", "d{i}", "r2"),
        access("r2-d{i}", "r2", "d{i}"),
    )
}

/// Bytes held once the scenario is loaded and the simulation built (the scenario's own text
/// excluded).
fn set_up_bytes(n: usize) -> usize {
    let text = dumbbell(n);
    let (base, _) = live();
    let loaded = satpep_scenario::load_str(&text, "dumbbell.toml", &[]).expect("dumbbell loads");
    let sim = Simulation::new(&loaded.scenario);
    let held = live().0 - base;
    drop(sim);
    drop(loaded);
    held
}

#[test]
fn set_up_memory_grows_linearly_with_flows_and_hosts() {
    let _turn = PROFILER.lock().unwrap_or_else(|e| e.into_inner());
    let _profiler = dhat::Profiler::builder().testing().build();
    // Warm up once (thread-locals, lazily built statics) so both sizes start from the same state.
    let _ = set_up_bytes(10);
    let small = set_up_bytes(1000);
    let large = set_up_bytes(4000);
    let ratio = large as f64 / small as f64;
    eprintln!(
        "1000 flows: {small} B held ({} B per flow and its two hosts, four links); 4000 flows: \
         {large} B; ratio {ratio:.2}",
        small / 1000
    );
    // Linear is 4 (a little less: fixed costs); all-pairs routes made it about 16.
    assert!((3.5..=4.5).contains(&ratio), "held ratio {ratio:.2}");
}

/// A star: `hosts` hosts behind router `r`, `links` links each way between each host and `r`
/// (parallel links), `flows` bulk flows of 1 kB from the server to the hosts in turn; 5 s and
/// the server's queues long enough for them all (two 250 ms hops each way, no SYN lost).
fn star(hosts: usize, links: usize, flows: usize) -> String {
    let mut s = format!(
        "duration = \"5s\"\n[output]\nseries = false\ninterval = \"1s\"\n\
         [[node]]\nname = \"r\"\nkind = \"router\"\n[[node]]\nname = \"srv\"\n\
         [[link]]\nname = \"up\"\nfrom = \"srv\"\nto = \"r\"\nqueue = {{ limit_packets = 5000 }}\n\
         [[link]]\nname = \"down\"\nfrom = \"r\"\nto = \"srv\"\nqueue = {{ limit_packets = 5000 }}\n\
         [[node]]\ncount = {hosts}\nname = \"h{{i}}\"\n"
    );
    for l in 0..links {
        s += &format!(
            "[[link]]\ncount = {hosts}\nname = \"a{l}-{{i}}\"\nfrom = \"h{{i}}\"\nto = \"r\"\n\
             [[link]]\ncount = {hosts}\nname = \"b{l}-{{i}}\"\nfrom = \"r\"\nto = \"h{{i}}\"\n"
        );
    }
    s + &format!(
        "[[flow]]\ncount = {flows}\nfrom = \"srv\"\nto = \"h{{i%{hosts}}}\"\n\
         app = {{ kind = \"bulk\", bytes = \"1KB\" }}\n"
    )
}

/// Bytes held once `text` is loaded and built.
fn held(text: &str) -> u64 {
    let (base, _) = live();
    let loaded = satpep_scenario::load_str(text, "star.toml", &[]).expect("star loads");
    let sim = Simulation::new(&loaded.scenario);
    let held = live().0 - base;
    drop(sim);
    drop(loaded);
    held as u64
}

/// The loader refuses a scenario whose estimated set-up memory is over its budget
/// (`satpep_scenario::MAX_SETUP_BYTES`) from per-element costs. Those costs are measured here
/// as differences between stars (fixed costs cancel): the estimate must not be below what an
/// element takes (or a scenario it accepts could still exhaust memory), nor far above (or it
/// would refuse what fits). A refused scenario allocates next to nothing, and a moderate one
/// runs to the end.
#[test]
fn the_per_element_costs_the_estimate_uses_are_measured() {
    use satpep_scenario::{FLOW_BYTES, LINK_BYTES, NODE_BYTES};
    let _turn = PROFILER.lock().unwrap_or_else(|e| e.into_inner());
    let _profiler = dhat::Profiler::builder().testing().build();
    let _ = held(&star(10, 1, 10));
    // First, while the peak is still the warm-up's. Issue 36 (5): 1 048 574 hosts, their
    // 2 097 148 links and 100 000 flows took over 8 GB.
    let (before, _) = live();
    let e = satpep_scenario::load_str(&star(1_048_574, 1, 100_000), "star.toml", &[])
        .expect_err("refused");
    let peak = dhat::HeapStats::get().max_bytes - before;
    assert!(
        e.to_string()
            .contains("building this scenario would take about 8.4 GB"),
        "{e}"
    );
    assert!(peak < 16 << 20, "refusing took {peak} B");

    let n = 2000;
    let base = held(&star(n, 1, 10));
    let per_link = (held(&star(n, 2, 10)) - base) / (2 * n as u64);
    let per_flow = (held(&star(n, 1, 10 + n)) - base) / n as u64;
    let per_node = (held(&star(2 * n, 1, 10)) - base) / n as u64 - 2 * per_link;
    eprintln!(
        "measured: {per_node} B per node, {per_link} B per link, {per_flow} B per flow \
         (estimate: {NODE_BYTES}, {LINK_BYTES}, {FLOW_BYTES})"
    );
    for (what, measured, estimate) in [
        ("node", per_node, NODE_BYTES),
        ("link", per_link, LINK_BYTES),
        ("flow", per_flow, FLOW_BYTES),
    ] {
        assert!(
            measured <= estimate && measured * 3 >= estimate * 2,
            "a {what} takes {measured} B; the estimate says {estimate} B: update it"
        );
    }

    // 10 000 hosts (81 MB estimated) load and run: every flow delivers its kilobyte.
    let loaded =
        satpep_scenario::load_str(&star(10_000, 1, 1000), "star.toml", &[]).expect("loads");
    let run = Simulation::new(&loaded.scenario).run(|_| {}).expect("runs");
    assert_eq!(run.summary.flows.len(), 1000);
    let late: Vec<_> = run
        .summary
        .flows
        .iter()
        .filter(|f| f.bytes_delivered != 1000)
        .collect();
    assert!(
        late.is_empty(),
        "{} flows not done, e.g. {:?}",
        late.len(),
        late.first()
    );
}
