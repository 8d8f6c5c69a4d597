//! Samaraweera 1999, figure 11 at 9.6 and 28.8 kb/s: aggregate goodput of three flows over 60 s,
//! measured. The paper's ordering is compaction ≥ suppression ≥ header compression ≥ unmodified;
//! it holds when the hub's satellite queue does not drop (the scenario's default, 2200 packets).
//! With a bandwidth-delay-product queue (600 packets) losses there make the receiver send a
//! window's worth of duplicate ACKs, which no technique may delete, and compaction falls below
//! suppression: pinned here too, as measured (docs/reproductions/samaraweera.md), and so is what
//! §5's "at most 3 unsuppressed duplicate ACKs" changes.

use satpep_proto::Duration;
use satpep_sim::experiments::samaraweera::{run, Point, Technique};

fn goodput(t: Technique, rate: &str, forward_queue: Option<u32>) -> f64 {
    let p = Point {
        technique: t,
        return_rate: rate.into(),
        flows: 3,
        stagger: Duration::ZERO,
        duration: Duration::from_secs(60),
        forward_queue,
        unsuppressed_duplicates: None,
    };
    run(&p, None)
        .unwrap_or_else(|e| panic!("{p:?}: {e}"))
        .goodput_bps
}

#[test]
fn fig11_ordering_without_forward_loss() {
    for rate in ["9.6kbps", "28.8kbps"] {
        let g = |t| goodput(t, rate, None);
        let (un, hc, su, co) = (
            g(Technique::Unmodified),
            g(Technique::HeaderCompression),
            g(Technique::Suppression),
            g(Technique::Compaction),
        );
        eprintln!(
            "{rate}: unmodified {un:.0}, vj {hc:.0}, suppression {su:.0}, compaction {co:.0}"
        );
        assert!(
            co >= su && su >= hc && hc >= un,
            "{rate}: {co} {su} {hc} {un}"
        );
        // Measured 2026-11: 9.6 kb/s 8.79 / 7.47 / 0.35 / 0.23 Mb/s; 28.8 kb/s 8.96 / 8.54 /
        // 3.01 / 0.67 Mb/s. Compaction keeps the 10 Mb/s link nearly full at every rate.
        assert!(co > 8.5e6, "{rate}: compaction {co}");
    }
}

#[test]
fn fig11_with_forward_loss_compaction_falls_behind_suppression_at_9600() {
    let co = goodput(Technique::Compaction, "9.6kbps", Some(600));
    let su = goodput(Technique::Suppression, "9.6kbps", Some(600));
    let hc = goodput(Technique::HeaderCompression, "9.6kbps", Some(600));
    eprintln!(
        "600-packet hub queue, 9.6 kb/s: compaction {co:.0}, suppression {su:.0}, vj {hc:.0}"
    );
    // Disagrees with the paper; measured 0.75 vs 4.91 Mb/s (vj 0.35): see the module doc.
    assert!(co < su && co > hc, "{co} {su} {hc}");
}

/// The expander's bounds against forged input (issue 15, docs/robustness.md) never bind in the
/// paper's own runs: with compaction and spacing at 9.6 kb/s nothing is clipped, refused or
/// dropped, so these runs regenerate exactly what they did before the bounds existed. Read
/// from summary.json's `middleboxes` section, as a user would.
#[test]
fn expander_bounds_never_bind_in_the_papers_runs() {
    let text = include_str!("../../../scenarios/samaraweera/samaraweera.toml");
    let sets: Vec<String> =
        satpep_sim::experiments::samaraweera::Technique::CompactionSpacing.overrides();
    let loaded = satpep_scenario::load_str(text, "samaraweera.toml", &sets).expect("loads");
    let summary = satpep_sim::Simulation::new(&loaded.scenario)
        .run(|_| {})
        .expect("runs")
        .summary;
    let hub = &summary.middleboxes[0];
    assert_eq!(
        (hub.node.as_str(), hub.kind.as_str()),
        ("hub", "ack_expander")
    );
    let c = &hub.counters;
    eprintln!("{c:?}");
    assert!(c["compacted"] > 100, "{c:?}");
    assert_eq!(c["clipped"], 0);
    assert_eq!(c["spacing_queue_drops"], 0);
    assert_eq!(c["spacing_flows_refused"], 0);
    assert_eq!(c["unknown_source"] + c["malformed"], 0);
}

/// §5's refinement (at most 3 unsuppressed duplicate ACKs) with the 600-packet hub queue at
/// 9.6 kb/s: the duplicates that filled the return queue are removed, so it never fills, no ACK
/// is dropped there and compaction's goodput rises several-fold; with the lossless 2200-packet
/// queue no duplicate is ever sent, and the run is the same as without.
#[test]
fn three_duplicates_keep_the_return_queue_clear_after_hub_losses() {
    let run_k = |q: Option<u32>, kept: Option<u32>| {
        let p = Point {
            forward_queue: q,
            unsuppressed_duplicates: kept,
            ..Point::three(Technique::Compaction, "9.6kbps", Duration::ZERO)
        };
        run(&p, Some(Duration::from_millis(50))).unwrap_or_else(|e| panic!("{p:?}: {e}"))
    };
    let (all, three) = (run_k(Some(600), None), run_k(Some(600), Some(3)));
    let full = |o: &satpep_sim::experiments::samaraweera::Outcome| {
        o.samples.iter().map(|s| s.return_queue).max().unwrap_or(0)
    };
    // Measured: return queue 1000 (its limit) vs at most ~100; 3449 vs 0 ACKs dropped there;
    // 0.75 vs 3.50 Mb/s. The hub drops the same 544 segments in both.
    assert_eq!((full(&all), three.return_drops), (1000, 0));
    assert!(
        all.return_drops > 1000 && full(&three) < 200,
        "{} {}",
        all.return_drops,
        full(&three)
    );
    assert_eq!(all.forward_drops, three.forward_drops);
    assert!(
        three.goodput_bps > 4.0 * all.goodput_bps,
        "{} {}",
        three.goodput_bps,
        all.goodput_bps
    );
    let last = three.samples.last().expect("samples");
    assert!(
        last.return_duplicates_removed > 0
            && last.return_duplicates_removed < last.return_duplicates
    );
    let (a, b) = (run_k(None, None), run_k(None, Some(3)));
    assert_eq!((a.delivered, a.removed), (b.delivered, b.removed));
    assert_eq!(b.samples.last().map(|s| s.return_duplicates), Some(0));
}
