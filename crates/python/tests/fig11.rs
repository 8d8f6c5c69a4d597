//! scenarios/samaraweera/fig11.toml is the Fig 11 sweep that the Python/Ray test compares with
//! the CLI: each of its points must be the scenario `satpep reproduce samaraweera` runs for
//! that technique and return rate (three flows, 60 s, lossless hub queue), so that the rows
//! compared there are the figure's.

use satpep_proto::Duration;
use satpep_sim::experiments::samaraweera::{Point, Technique};

fn without_name(mut t: toml::Table) -> toml::Table {
    t.remove("name");
    t
}

#[test]
fn every_fig11_point_is_the_reproductions_scenario() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../scenarios/samaraweera/fig11.toml"
    );
    let loaded = satpep_scenario::load_file(std::path::Path::new(path), &[]).unwrap();
    assert_eq!(loaded.sweep.len(), 32);
    let kind = |t: Technique| match t {
        Technique::Unmodified => Some("drop_tail"),
        Technique::Suppression => Some("ack_suppression"),
        Technique::Filtering => Some("ack_filtering"),
        Technique::Compaction => Some("ack_compaction"),
        _ => None,
    };
    let mut matched = 0;
    for t in Technique::ALL {
        let Some(k) = kind(t) else { continue };
        for rate in [
            "9.6kbps", "14.4kbps", "19.2kbps", "28.8kbps", "32kbps", "64kbps", "128kbps", "430kbps",
        ] {
            let point = Point {
                technique: t,
                return_rate: rate.into(),
                flows: 3,
                stagger: Duration::ZERO,
                duration: Duration::from_secs(60),
                forward_queue: None,
                unsuppressed_duplicates: None,
            };
            let (text, overrides) = point.scenario();
            let theirs = satpep_scenario::load_str(&text, "<fig11>", &overrides).unwrap();
            let ours = loaded
                .sweep
                .iter()
                .find(|p| {
                    p.assignments
                        == [
                            ("link.return.queue.kind".to_owned(), k.to_owned()),
                            ("link.return.rate".to_owned(), rate.to_owned()),
                        ]
                })
                .unwrap_or_else(|| panic!("fig11.toml has no point {k} {rate}"));
            assert_eq!(
                without_name(ours.scenario.to_table()),
                without_name(theirs.scenario.to_table()),
                "{k} at {rate}"
            );
            matched += 1;
        }
    }
    assert_eq!(matched, 32);
}
