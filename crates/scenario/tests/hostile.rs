//! Hostile input as an attacker or a careless user writes it (issue 15): random bytes and random
//! TOML built from the scenario's own vocabulary never panic the loader, and every refusal is
//! located — it names the origin and a line or a key — and prints no control character.

use proptest::prelude::*;
use satpep_scenario::{load_file, load_str, ScenarioError};

/// Lines of a scenario: table headers, and `key = value` with keys and values chosen to reach
/// every check (names, references, units, limits, sweeps).
const HEADERS: &[&str] = &[
    "[[node]]",
    "[[link]]",
    "[[flow]]",
    "[[route]]",
    "[[dama]]",
    "[output]",
    "[sweep]",
    "[defaults.tcp]",
    "[defaults]",
    "[node]",
    "[[sweep]]",
    "[link.queue]",
];
const KEYS: &[&str] = &[
    "name",
    "from",
    "to",
    "kind",
    "address",
    "rate",
    "delay",
    "queue",
    "error",
    "start",
    "port",
    "src_port",
    "app",
    "tcp",
    "seed",
    "duration",
    "interval",
    "series",
    "pcap",
    "pcap_per_link",
    "node",
    "dst",
    "link",
    "gateway",
    "terminals",
    "sweep",
    "\"link.ab.rate\"",
    "seed.x",
    "abc_segments",
    "mss",
    "stop_when_done",
    "middlebox",
    "\"node.a.name\"",
    "sweep.sweep",
];
const VALUES: &[&str] = &[
    "\"a\"",
    "\"b\"",
    "\"ab\"",
    "\"r\"",
    "\"router\"",
    "\"host\"",
    "\"../../escape\"",
    "\"/etc\"",
    "\"a\\u001b[2J\"",
    "\"\"",
    "\"..\"",
    "0",
    "-1",
    "1",
    "65536",
    "99999999999999999999",
    "1e300",
    "-0.0",
    "nan",
    "inf",
    "true",
    "[]",
    "[\"a\", \"b\"]",
    "[1, 2]",
    "{}",
    "{ kind = \"drop_tail\", limt = 1 }",
    "{ model = \"per\", per = 2 }",
    "\"1ns\"",
    "\"10Mbps\"",
    "\"1e300s\"",
    "\"10.0.0.1\"",
    "\"60s\"",
    "{ kind = \"bulk\", bytes = \"1MB\" }",
    "1979-05-27",
    "'lit'",
    "\"\"\"multi\nline\"\"\"",
];

fn fragment() -> impl Strategy<Value = String> {
    prop_oneof![
        1 => (0..HEADERS.len()).prop_map(|h| HEADERS[h].to_owned()),
        4 => (0..KEYS.len(), 0..VALUES.len()).prop_map(|(k, v)| format!("{} = {}", KEYS[k], VALUES[v])),
    ]
}

/// `e` names where the problem is: the file and a line or a key, or the `--set` it came from
/// (which is its own location); and it prints no control character.
#[track_caller]
fn located(e: &ScenarioError, file: &str) -> Result<(), TestCaseError> {
    let shown = e.to_string();
    prop_assert!(
        !shown.chars().any(char::is_control),
        "control character in: {:?}",
        shown
    );
    prop_assert!(!e.message().is_empty(), "{}", shown);
    prop_assert!(shown.starts_with(e.origin()), "{}", shown);
    if e.origin().starts_with("--set '") {
        return Ok(());
    }
    prop_assert_eq!(e.origin(), file, "{}", shown);
    prop_assert!(
        e.line().is_some() || e.key().is_some(),
        "not located: {}",
        shown
    );
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1000, ..ProptestConfig::default() })]

    /// Random bytes, read as a file (so non-UTF-8 is part of it): a located error, never a panic.
    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
        let dir = std::env::temp_dir().join(format!("satpep-hostile-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("bytes.toml");
        std::fs::write(&path, &bytes).unwrap();
        let origin = path.display().to_string();
        if let Err(e) = load_file(&path, &[]) {
            located(&e, &origin)?;
        }
    }

    /// Random TOML from the scenario's vocabulary, appended to a valid scenario or alone, with a
    /// random `--set`: a scenario or a located error.
    #[test]
    fn random_toml_fragments_never_panic(
        lines in proptest::collection::vec(fragment(), 0..24),
        on_valid in any::<bool>(),
        set in proptest::option::of((0..KEYS.len(), 0..VALUES.len())),
    ) {
        let base = "[[node]]\nname = \"a\"\n[[node]]\nname = \"b\"\n[[link]]\nname = \"ab\"\n\
                    from = \"a\"\nto = \"b\"\n[[link]]\nname = \"ba\"\nfrom = \"b\"\nto = \"a\"\n\
                    [[flow]]\nfrom = \"a\"\nto = \"b\"\n";
        let text = format!("{}{}\n", if on_valid { base } else { "" }, lines.join("\n"));
        let sets: Vec<String> = set
            .map(|(k, v)| format!("{}={}", KEYS[k].trim_matches('"'), VALUES[v]))
            .into_iter()
            .collect();
        match load_str(&text, "frag.toml", &sets) {
            Ok(l) => {
                // What loads is within the limits and names are names.
                prop_assert!(l.scenario.nodes.iter().all(|n| !n.name.contains(['/', '.'])));
            }
            Err(e) => located(&e, "frag.toml")?,
        }
    }
}

/// A file that is not UTF-8 is refused at the first bad byte, not with "stream did not contain
/// valid UTF-8" and no line.
#[test]
fn non_utf8_file_is_located() {
    let dir = std::env::temp_dir().join(format!("satpep-utf8-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("latin1.toml");
    std::fs::write(&path, b"seed = 1\nname = \"caf\xe9\"\n").unwrap();
    let e = load_file(&path, &[]).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "{}:2:12: the file is not UTF-8 text (TOML files are UTF-8)",
            path.display()
        )
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The `scenario_load` fuzz target's corpus runs through the loader on stable Rust, in CI:
/// every file gives a scenario or a located error, never a panic.
#[test]
fn scenario_load_corpus_runs_clean() {
    let dir =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus/scenario_load");
    let mut files = 0;
    for f in std::fs::read_dir(&dir)
        .expect("fuzz/corpus/scenario_load exists")
        .flatten()
    {
        let bytes = std::fs::read(f.path()).unwrap();
        if let Ok(text) = std::str::from_utf8(&bytes) {
            if let Err(e) = satpep_scenario::load_str(text, "fuzz.toml", &[]) {
                assert!(e.to_string().starts_with("fuzz.toml"), "{e}");
            }
        }
        files += 1;
    }
    assert!(files >= 10, "{files} corpus files");
}
