//! Set-up memory grows linearly with the topology (issue 13): bytes, counted by an allocator,
//! never a timing. Before routes were computed by peeling stubs, 4× the host pairs took 16× the
//! memory (an all-pairs table); now it must take about 4×.

use satpep_sim::Simulation;

/// dhat counts every allocation's bytes (live now, and the peak).
#[global_allocator]
static ALLOC: dhat::Alloc = dhat::Alloc;

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
