//! Malformed scenarios: each error must name the origin, the exact line, the full key path and
//! what was expected.

use satpep_scenario::{load_str, ScenarioError};

/// A small valid scenario: hosts a, b; router r; links ab, ba; one flow a → b. 18 lines, so a
/// table appended to it starts on line 19.
const MINI: &str = r#"[[node]]
name = "a"
[[node]]
name = "b"
[[node]]
name = "r"
kind = "router"
[[link]]
name = "ab"
from = "a"
to = "b"
[[link]]
name = "ba"
from = "b"
to = "a"
[[flow]]
from = "a"
to = "b"
"#;

/// MINI with `extra` lines added inside the link `ab` table (after line 11, so the first extra
/// line is line 12).
fn with_link_keys(extra: &str) -> String {
    MINI.replacen("to = \"b\"\n", &format!("to = \"b\"\n{extra}"), 1)
}

fn err(text: &str, sets: &[&str]) -> ScenarioError {
    let sets: Vec<String> = sets.iter().map(|s| (*s).to_owned()).collect();
    match load_str(text, "geo.toml", &sets) {
        Ok(_) => panic!("expected an error for:\n{text}\n--set {sets:?}"),
        Err(e) => e,
    }
}

#[track_caller]
fn check(e: &ScenarioError, line: usize, key: &str, word: &str) {
    let shown = e.to_string();
    assert_eq!(e.origin(), "geo.toml", "{shown}");
    assert_eq!(e.line(), Some(line), "{shown}");
    assert_eq!(e.key(), Some(key), "{shown}");
    assert!(e.message().contains(word), "`{word}` not in: {shown}");
    assert!(shown.starts_with(&format!("geo.toml:{line}:")), "{shown}");
    assert!(shown.contains(&format!("key `{key}`")), "{shown}");
}

#[test]
fn mini_is_valid() {
    let l = load_str(MINI, "geo.toml", &[]).unwrap();
    assert_eq!(l.scenario.name, "geo");
    assert_eq!(l.scenario.flows.len(), 1);
    assert!(load_str(&with_link_keys("rate = \"2Mbps\"\n"), "geo.toml", &[]).is_ok());
}

#[test]
fn unknown_top_level_key_lists_expected_keys() {
    let e = err(&format!("seed = 3\ncolour = \"blue\"\n{MINI}"), &[]);
    check(&e, 2, "colour", "expected one of");
    assert!(e.message().contains("`duration`"), "{e}");
}

#[test]
fn unknown_key_in_link_lists_link_keys() {
    let e = err(
        &with_link_keys("rate = \"2Mbps\"\nlatency = \"1ms\"\n"),
        &[],
    );
    check(&e, 13, "link.ab.latency", "unknown field `latency`");
    assert!(
        e.message().contains("`delay`") && e.message().contains("`from`"),
        "{e}"
    );
}

/// A misspelt key gets the closest allowed one, through the real loader.
#[test]
fn misspelt_key_gets_a_suggestion() {
    let e = err(&with_link_keys("rat = \"10Mbps\"\n"), &[]);
    assert!(e.to_string().ends_with("(did you mean `rate`?)"), "{e}");
}

#[test]
fn bad_unit_names_the_units() {
    let e = err(&with_link_keys("rate = \"10 furlongs\"\n"), &[]);
    check(&e, 12, "link.ab.rate", "Mbps");
    assert_eq!(
        e.to_string(),
        "geo.toml:12:1: key `link.ab.rate`: unknown rate unit in `10 furlongs`: expected bps, kbps, \
         Mbps or Gbps (or tc's kbit, mbit, gbit; e.g. \"9.6kbps\", \"10mbit\")"
    );
}

#[test]
fn negative_duration() {
    let e = err(&format!("name = \"x\"\nduration = \"-5s\"\n{MINI}"), &[]);
    check(&e, 2, "duration", "non-negative");
    let e = err(&format!("duration = 0\n{MINI}"), &[]);
    check(&e, 1, "duration", "above 0");
}

#[test]
fn packet_error_rate_above_one() {
    let e = err(
        &with_link_keys("error = { model = \"per\", per = 1.5 }\n"),
        &[],
    );
    check(&e, 12, "link.ab.error.per", "probability");
    assert!(e.message().contains("1.5"), "{e}");
}

#[test]
fn initial_window_outside_1_to_10() {
    let e = err(&format!("[defaults.tcp]\ninitial_window = 0\n{MINI}"), &[]);
    check(&e, 2, "defaults.tcp.initial_window", "1 to 10");
    let e = err(&format!("{MINI}tcp = {{ initial_window = 11 }}\n"), &[]);
    check(&e, 19, "flow.flow1.tcp.initial_window", "got 11");
}

#[test]
fn mss_zero_in_defaults_is_blamed_on_defaults_not_the_flow() {
    let e = err(
        &format!("[defaults.tcp]\ncc = \"reno\"\nmss = 0\n{MINI}"),
        &[],
    );
    check(&e, 3, "defaults.tcp.mss", "at least 1 byte");
}

#[test]
fn link_to_unknown_node_points_at_to() {
    let text = MINI.replacen("to = \"b\"", "to = \"bb\"", 1);
    let e = err(&text, &[]);
    check(&e, 11, "link.ab.to", "unknown node `bb`");
    assert!(e.message().contains("a, b, r"), "{e}");
}

#[test]
fn duplicate_node_name() {
    let text = MINI.replacen("name = \"r\"", "name = \"a\"", 1);
    let e = err(&text, &[]);
    check(&e, 6, "node.a.name", "used twice");
}

#[test]
fn flow_between_routers() {
    let text = format!(
        "{MINI}[[node]]\nname = \"r2\"\nkind = \"router\"\n[[flow]]\nfrom = \"r\"\nto = \"r2\"\n"
    );
    let e = err(&text, &[]);
    check(&e, 23, "flow.flow2.from", "router");
}

#[test]
fn bulk_with_both_bytes_and_duration() {
    let e = err(
        &format!("{MINI}app = {{ kind = \"bulk\", bytes = \"1MB\", duration = \"1s\" }}\n"),
        &[],
    );
    check(&e, 19, "flow.flow1.app.duration", "not both");
}

#[test]
fn missing_required_from_points_at_the_table() {
    let e = err(
        &format!("{MINI}[[flow]]\nname = \"second\"\nto = \"a\"\n"),
        &[],
    );
    check(&e, 19, "flow.second.from", "missing required key `from`");
}

#[test]
fn wrong_type() {
    let e = err(&with_link_keys("rate = true\n"), &[]);
    check(
        &e,
        12,
        "link.ab.rate",
        "invalid type: boolean `true`, expected a rate",
    );
}

#[test]
fn unroutable_flow() {
    let text =
        format!("{MINI}[[node]]\nname = \"island\"\n[[flow]]\nfrom = \"a\"\nto = \"island\"\n");
    let e = err(&text, &[]);
    check(&e, 23, "flow.flow2.to", "no route from `a` to `island`");
}

#[test]
fn zero_rate() {
    let e = err(&with_link_keys("delay = \"1ms\"\nrate = 0\n"), &[]);
    check(&e, 13, "link.ab.rate", "greater than 0");
}

#[test]
fn toml_syntax_error_has_a_line() {
    let e = err(&format!("{MINI}start = \n"), &[]);
    assert_eq!(e.line(), Some(19), "{e}");
    assert!(e.to_string().starts_with("geo.toml:19:"), "{e}");
    assert!(e.message().contains("TOML syntax"), "{e}");
}

#[test]
fn set_unknown_path_names_set_and_the_path() {
    let e = err(MINI, &["link.nope.rate=1Mbps"]);
    assert_eq!(e.origin(), "--set 'link.nope.rate=1Mbps'");
    assert_eq!(e.line(), None);
    assert!(
        e.message().contains("no element named `nope`") && e.message().contains("ab, ba"),
        "{e}"
    );
    let e = err(MINI, &["link.ab.latency=1ms"]);
    assert_eq!(e.origin(), "--set 'link.ab.latency=1ms'");
    assert_eq!(e.key(), Some("link.ab.latency"));
    assert!(e.message().contains("unknown field `latency`"), "{e}");
    let e = err(MINI, &["outptu.interval=1ms"]);
    assert_eq!(e.key(), Some("outptu"), "{e}");
    assert!(
        e.to_string()
            .starts_with("--set 'outptu.interval=1ms': key `outptu`: unknown key"),
        "{e}"
    );
}

#[test]
fn set_bad_value_names_set() {
    let e = err(MINI, &["link.ab.rate=10 furlongs"]);
    assert_eq!(
        e.to_string(),
        "--set 'link.ab.rate=10 furlongs': key `link.ab.rate`: unknown rate unit in `10 furlongs`: \
         expected bps, kbps, Mbps or Gbps (or tc's kbit, mbit, gbit; e.g. \"9.6kbps\", \"10mbit\")"
    );
    let e = err(MINI, &["seed"]);
    assert!(e.message().contains("KEY=VALUE"), "{e}");
}

#[test]
fn error_in_file_value_overridden_by_set_is_not_blamed_on_the_file() {
    // The file's rate is fine; the override breaks it.
    let e = err(&with_link_keys("rate = \"1Mbps\"\n"), &["link.0.rate=-1"]);
    assert_eq!(e.origin(), "--set 'link.0.rate=-1'");
    // And an override can repair a bad file value.
    assert!(load_str(
        &with_link_keys("rate = 0\n"),
        "geo.toml",
        &["link.ab.rate=1Mbps".into()]
    )
    .is_ok());
}

#[test]
fn sweep_key_not_found_points_at_the_sweep_line() {
    let text =
        format!("{MINI}[sweep]\n\"link.ab.rate\" = [\"1Mbps\"]\n\"link.zz.rate\" = [\"1Mbps\"]\n");
    let e = err(&text, &[]);
    assert_eq!(e.line(), Some(21), "{e}");
    assert!(
        e.message().contains("sweep key `link.zz.rate` not found"),
        "{e}"
    );
}

#[test]
fn bad_sweep_value_names_the_point() {
    let text = format!("{MINI}[sweep]\n\"link.ab.rate\" = [\"1Mbps\", \"fast\"]\n");
    let e = err(&text, &[]);
    assert_eq!(e.line(), Some(20), "{e}");
    assert_eq!(e.key(), Some("link.ab.rate"));
    assert!(e.message().contains("sweep point link.ab.rate=fast"), "{e}");
    let e = err(&format!("{MINI}[sweep]\nseed = 3\n"), &[]);
    assert!(e.message().contains("non-empty array"), "{e}");
}

#[test]
fn route_must_start_at_its_node() {
    let text = format!("{MINI}[[route]]\nnode = \"a\"\ndst = \"b\"\nlink = \"ba\"\n");
    let e = err(&text, &[]);
    check(&e, 22, "route.0.link", "starts at `b`, not at `a`");
}

#[test]
fn routing_loop_is_reported() {
    // a ⇄ r ⇄ b plus a direct a → b; force r to send b-bound packets back to a, and a via r.
    let text = r#"
[[node]]
name = "a"
[[node]]
name = "b"
[[node]]
name = "r"
kind = "router"
[[link]]
name = "ar"
from = "a"
to = "r"
[[link]]
name = "ra"
from = "r"
to = "a"
[[link]]
name = "rb"
from = "r"
to = "b"
[[link]]
name = "br"
from = "b"
to = "r"
[[route]]
node = "r"
dst = "b"
link = "ra"
[[flow]]
from = "a"
to = "b"
"#;
    let e = err(text, &[]);
    check(&e, 31, "flow.flow1.to", "loop");
}

#[test]
fn explicit_address_colliding_with_automatic_one() {
    // Node b (index 1) gets 10.0.1.1 automatically; node a claims it explicitly.
    let text = MINI.replacen(
        "name = \"a\"\n",
        "name = \"a\"\naddress = \"10.0.1.1\"\n",
        1,
    );
    let e = err(&text, &[]);
    check(&e, 3, "node.a.address", "node `b`");
}

#[test]
fn pcap_of_unknown_link() {
    let e = err(&format!("{MINI}[output]\npcap = [\"ab\", \"fwd\"]\n"), &[]);
    check(&e, 20, "output.pcap.1", "unknown link `fwd`");
}

/// Names become file names (`<link>.pcapng`, plots, the results folder) and key path
/// segments: each hostile kind is refused at the `name` key.
#[test]
fn names_that_are_no_file_names_are_refused_at_the_key() {
    let cases = [
        ("a/b", "must not contain `/` or `\\`"),
        ("..", "without dots"),
        ("a\\\\b", "must not contain `/` or `\\`"),
        ("/etc/passwd", "must not contain `/`"),
        ("a\\u001b[2J", "control character U+001B"),
        ("tab\there", "control character U+0009"),
        ("", "non-empty"),
    ];
    for (written, why) in cases {
        let text = MINI.replacen("name = \"ab\"", &format!("name = \"{written}\""), 1);
        let e = err(&text, &[]);
        assert_eq!(e.line(), Some(9), "{e}");
        assert!(e.key().is_some_and(|k| k.ends_with(".name")), "{e}");
        assert!(e.message().contains(why), "{written}: {e}");
    }
    let long = "x".repeat(65);
    let e = err(
        &MINI.replacen("name = \"a\"", &format!("name = \"{long}\""), 1),
        &[],
    );
    assert_eq!(
        e.to_string(),
        format!(
            "geo.toml:2:1: key `node.{x40}….name`: `{x40}…` is not a usable name: it has 65 \
             characters; names have at most 64",
            x40 = "x".repeat(40)
        )
    );
    // The flows' names too, and a --set is blamed as such.
    let e = err(&format!("{MINI}name = \"f/1\"\n"), &[]);
    check(&e, 19, "flow.f/1.name", "must not contain `/`");
}

/// The scenario's `name` names the results folder: `..` and separators are refused (it
/// wrote outside `results/` before the CLI made the folder name path-safe).
#[test]
fn scenario_name_cannot_leave_the_results_folder() {
    for (name, why) in [
        ("../../escape", "must not contain `/`"),
        ("/tmp/anywhere", "must not contain `/`"),
        ("..", "contain `..`"),
        (".hidden", "start with a dot"),
    ] {
        let e = err(&format!("name = \"{name}\"\n{MINI}"), &[]);
        check(&e, 1, "name", why);
    }
    let e = err(MINI, &["name=../x"]);
    assert_eq!(e.origin(), "--set 'name=../x'", "{e}");
    // Spaces and single dots are fine in the scenario's name.
    let l = load_str(&format!("name = \"GEO 1.5 Mbps\"\n{MINI}"), "geo.toml", &[]).unwrap();
    assert_eq!(l.scenario.name, "GEO 1.5 Mbps");
}

#[test]
fn flow_start_after_the_end() {
    let e = err(&format!("duration = \"10s\"\n{MINI}start = \"10s\"\n"), &[]);
    check(&e, 20, "flow.flow1.start", "after the end");
}

#[test]
fn names_with_dots_are_rejected() {
    let text = MINI.replacen("name = \"ab\"", "name = \"a.b\"", 1);
    check(&err(&text, &[]), 9, "link.a.b.name", "without dots");
}

/// `output.interval = "1ns"` filled the disk (1.1 GB of CSV a minute): the rows a run would
/// sample are bounded, and the error names the key, the size and the interval that would do.
#[test]
fn sampling_volume_is_bounded() {
    let e = err(&format!("{MINI}[output]\ninterval = \"1ns\"\n"), &[]);
    assert_eq!(
        e.to_string(),
        "geo.toml:20:1: key `output.interval`: sampling 1 flow and 2 links every 1ns for 60s \
         makes 180000000003 rows (about 10.8 TB of CSV); at most 10000000 are accepted: set \
         `output.interval` to 19us or more, or shorten `duration`"
    );
    // A long run at the default interval is blamed on `duration`; without series files only
    // the ticks count (each still costs time), so 100 000 flows sampled every second load.
    let e = err(
        &format!("duration = \"100h\"\n{MINI}[output]\nseries = false\n"),
        &[],
    );
    check(
        &e,
        1,
        "duration",
        "sampling every 10ms for 360000s makes 36000001 samples; at most 10000000",
    );
    let many = MINI.replacen("[[flow]]\n", "[[flow]]\ncount = 100000\n", 1);
    let many = format!("{many}[output]\nseries = false\ninterval = \"1s\"\n");
    assert!(load_str(&many, "geo.toml", &[]).is_ok());
    let e = err(MINI, &["output.interval=1us"]);
    assert_eq!(e.origin(), "--set 'output.interval=1us'", "{e}");
    // The interval the message proposes loads; one below it does not.
    assert!(load_str(MINI, "geo.toml", &["output.interval=19us".into()]).is_ok());
    assert!(load_str(MINI, "geo.toml", &["output.interval=18us".into()]).is_err());
}

/// Numbers that do not fit, and duplicate keys, had no line or no key (issue 15).
#[test]
fn numbers_that_do_not_fit_and_duplicate_keys_are_located() {
    let e = err(&format!("seed = 99999999999999999999999\n{MINI}"), &[]);
    assert_eq!(
        e.to_string(),
        "geo.toml:1:1: key `seed`: the integer 99999999999999999999999 does not fit in 64 bits \
         (from -9223372036854775808 to 9223372036854775807)"
    );
    let e = err(
        &with_link_keys("queue = { limit_packets = 0x1_0000_0000_0000_0000 }\n"),
        &[],
    );
    check(
        &e,
        12,
        "link.ab.queue.limit_packets",
        "0x10000000000000000 does not fit",
    );
    let e = err(
        &with_link_keys("error = { model = \"per\", per = 1e999 }\n"),
        &[],
    );
    check(
        &e,
        12,
        "link.ab.error.per",
        "1e999 is too large for a 64-bit float",
    );
    // NaN is no number at all, not a large one (issue 36, 13).
    let e = err(
        &with_link_keys("error = { model = \"per\", per = nan }\n"),
        &[],
    );
    check(&e, 12, "link.ab.error.per", "`nan` is not a number (NaN)");
    assert!(!e.message().contains("too large"), "{e}");
    // A huge float where a duration goes: shown as written, not as 301 digits.
    let e = err(&format!("duration = 1e300\n{MINI}"), &[]);
    assert_eq!(
        e.to_string(),
        "geo.toml:1:1: key `duration`: `1e300` is too large"
    );
    // Through --set: it became a string, and the message spoke of a string.
    let e = err(MINI, &["seed=99999999999999999999"]);
    assert_eq!(
        e.to_string(),
        "--set 'seed=99999999999999999999': key `seed`: the integer 99999999999999999999 does \
         not fit in 64 bits (from -9223372036854775808 to 9223372036854775807)"
    );
    let e = err(&format!("seed = 1\nseed = 2\n{MINI}"), &[]);
    assert_eq!(
        e.to_string(),
        "geo.toml:2:1: key `seed`: duplicate key: each key may be set only once in a table"
    );
    let e = err(&with_link_keys("rate = \"1Mbps\"\nrate = \"2Mbps\"\n"), &[]);
    check(&e, 13, "link.ab.rate", "duplicate key");
}

/// An unknown key inside a link's `queue` or `error` lists the keys of that table only (it
/// listed the link's `name`, `from`, `to` too), and points at the key itself.
#[test]
fn unknown_key_in_an_inner_table_lists_only_that_tables_keys() {
    let e = err(
        &with_link_keys("queue = { kind = \"drop_tail\", limt = 3 }\n"),
        &[],
    );
    assert_eq!(
        e.to_string(),
        "geo.toml:12:31: key `link.ab.queue.limt`: unknown field `limt`, expected one of \
         `kind`, `limit_packets`, `limit_bytes`, `ack`"
    );
    let e = err(
        &with_link_keys("error = { model = \"per\", pr = 0.1 }\n"),
        &[],
    );
    assert_eq!(
        e.to_string(),
        "geo.toml:12:26: key `link.ab.error.pr`: unknown field `pr`, expected `per` (did you \
         mean `per`?)"
    );
    // Inside a middlebox chain's element, too.
    let text = MINI.replacen(
        "kind = \"router\"\n",
        "kind = \"router\"\nmiddlebox = { kind = \"chain\", elements = [{ kind = \"snoop\", cache = 3 }] }\n",
        1,
    );
    let e = err(&text, &[]);
    check(
        &e,
        8,
        "node.r.middlebox.elements.0.cache",
        "unknown field `cache`",
    );
    assert!(!e.message().contains("`name`"), "{e}");
    // At the link's own level, the link's own keys are still listed.
    let e = err(&with_link_keys("form = \"a\"\n"), &[]);
    assert!(
        e.message()
            .contains("`name`, `from` or `to` (did you mean `from`?)"),
        "{e}"
    );
}

/// Accepted silently before (issue 15): each is refused, at the key.
#[test]
fn silent_cases_are_refused() {
    // A sweep of the [sweep] table itself.
    let e = err(&format!("{MINI}[sweep]\nsweep = [1, 2]\n"), &[]);
    assert_eq!(
        e.to_string(),
        "geo.toml:20:1: key `sweep.sweep`: a sweep cannot vary the `[sweep]` table itself"
    );
    // abc_segments = 0 (slow start would never grow the window).
    let e = err(&format!("{MINI}tcp = {{ abc_segments = 0 }}\n"), &[]);
    check(
        &e,
        19,
        "flow.flow1.tcp.abc_segments",
        "at least 1 segment per ACK",
    );
    // The same key twice on the command line: which one was meant?
    let e = err(MINI, &["seed=3", "seed=4"]);
    assert_eq!(
        e.to_string(),
        "--set 'seed=4': key `seed`: the same key is set by --set 'seed=3' too; give each key once"
    );
    let e = err(MINI, &["link.ab.rate=1Mbps", "link.0.rate=2Mbps"]);
    assert!(e.message().contains("--set 'link.ab.rate=1Mbps'"), "{e}");
}

/// Issue 36 (9): a sweep key under `sweep.` written as one quoted key ran three identical
/// runs; a split relay's `tcp_connect` / `tcp_accept` were not checked as a flow's `tcp` is.
#[test]
fn quoted_sweep_keys_and_split_relay_tcp_tables_are_refused_at_the_key() {
    let e = err(&format!("{MINI}[sweep]\n\"sweep.x\" = [1, 2, 3]\n"), &[]);
    check(&e, 20, "sweep.sweep.x", "cannot vary the `[sweep]` table");
    for half in ["tcp_connect", "tcp_accept"] {
        let router = format!(
            "kind = \"router\"\nmiddlebox = {{ kind = \"split_tcp\", {half} = {{ initial_window = 0 }} }}\n"
        );
        let e = err(&MINI.replacen("kind = \"router\"\n", &router, 1), &[]);
        check(
            &e,
            8,
            &format!("node.r.middlebox.{half}.initial_window"),
            "1 to 10 segments",
        );
    }
}

/// Sweeping or overriding a node's name broke every reference to it and the error blamed the
/// file ("unknown node"); it is refused at the sweep key or the `--set`.
#[test]
fn renaming_an_element_by_sweep_or_set_is_refused() {
    let e = err(
        &format!("{MINI}[sweep]\n\"node.a.name\" = [\"x\", \"y\"]\n"),
        &[],
    );
    assert_eq!(
        e.to_string(),
        "geo.toml:20:1: key `sweep.node.a.name`: `node.a.name` renames a node that other keys \
         refer to by name; rename it in the file (names cannot be overridden or swept)"
    );
    let e = err(MINI, &["link.ab.name=x"]);
    assert_eq!(e.origin(), "--set 'link.ab.name=x'", "{e}");
    // `--set node=[]` names the --set, not the file.
    let e = err(MINI, &["node=[]"]);
    assert_eq!(
        e.to_string(),
        "--set 'node=[]': key `node`: the scenario has no nodes: add [[node]] tables (at least \
         two hosts)"
    );
    // Flows are not referred to by name: renaming one is fine.
    assert!(load_str(MINI, "geo.toml", &["flow.flow1.name=bulk".into()]).is_ok());
}

/// Sizes a small file could blow up: more elements than the routing table or memory allow, and
/// a sweep whose points together would not fit in memory.
#[test]
fn element_counts_and_sweep_memory_are_bounded() {
    // MINI has three nodes; `count` copies are counted before any is made.
    let e = err(
        &format!("{MINI}[[node]]\ncount = 1048575\nname = \"n{{i}}\"\n"),
        &[],
    );
    assert_eq!(
        e.to_string(),
        "geo.toml:20:1: key `node.n{i}.count`: more than 1048576 elements once `count` is \
         applied (docs/scenario.md, \"Limits\")"
    );
    let nodes = "[[node]]\ncount = 200000\nname = \"n{i}\"\n";
    let seeds: Vec<String> = (0..100).map(|i| i.to_string()).collect();
    let text = format!("{MINI}{nodes}[sweep]\nseed = [{}]\n", seeds.join(", "));
    let e = err(&text, &[]);
    let line = text.lines().count() - 1;
    check(
        &e,
        line,
        "sweep",
        "the sweep builds 100 scenarios of about ",
    );
    assert!(
        e.message().ends_with(
            "at most 1024 MiB are accepted: sweep fewer values or use a smaller scenario"
        ),
        "{e}"
    );
}

/// A star: `hosts` hosts behind router `r`, a link each way to each, `flows` flows from the
/// server `srv` to the first hosts. 35 lines; the `count` of the links from the hosts is on
/// line 22.
fn star(hosts: u64, flows: u64) -> String {
    format!(
        "duration = \"1s\"\n[output]\nseries = false\ninterval = \"1s\"\n\
         [[node]]\nname = \"r\"\nkind = \"router\"\n[[node]]\nname = \"srv\"\n\
         [[link]]\nname = \"up\"\nfrom = \"srv\"\nto = \"r\"\n\
         [[link]]\nname = \"down\"\nfrom = \"r\"\nto = \"srv\"\n\
         [[node]]\ncount = {hosts}\nname = \"h{{i}}\"\n\
         [[link]]\ncount = {hosts}\nname = \"a{{i}}\"\nfrom = \"h{{i}}\"\nto = \"r\"\n\
         [[link]]\ncount = {hosts}\nname = \"b{{i}}\"\nfrom = \"r\"\nto = \"h{{i}}\"\n\
         [[flow]]\ncount = {flows}\nfrom = \"srv\"\nto = \"h{{i}}\"\n\
         app = {{ kind = \"bulk\", bytes = \"1KB\" }}\n"
    )
}

/// Issue 36 (5): a few hundred bytes of `count` tables, every element count within the
/// limits (1 048 574 hosts and the router and server: 1 048 576 nodes; 2 097 150 links;
/// 100 000 flows), grew past 8 GB and aborted after 112 s. The estimate refuses it before any
/// copy is made, at the `count` of the table that costs most; a moderate star loads.
#[test]
fn count_tables_whose_estimated_memory_exceeds_the_budget_are_refused_before_copying() {
    assert!(
        std::env::var_os(satpep_scenario::MEMORY_ENV).is_none(),
        "this test checks the default budget: unset {}",
        satpep_scenario::MEMORY_ENV
    );
    let text = star(1_048_574, 100_000);
    assert!(text.len() < 700, "{} bytes", text.len());
    let t = std::time::Instant::now();
    let e = err(&text, &[]);
    let took = t.elapsed();
    check(
        &e,
        22,
        "link.a{i}.count",
        "building this scenario would take about 8.4 GB of memory (1048576 nodes × 1.4 kB, \
         2097150 links × 3.0 kB, 100000 flows × 6.6 kB, measured per element); at most 4.3 GB \
         are accepted",
    );
    assert!(e.message().contains("SATPEP_MAX_MEMORY=16GB"), "{e}");
    // Copying alone took seconds and gigabytes; the estimate is a sum over eight tables.
    assert!(took.as_secs_f64() < 2.0, "took {took:?}");
    // A `--set` that raises a count is blamed, not the file.
    let e = err(
        &star(1000, 10),
        &[
            "link.3.count=1000000",
            "link.2.count=1000000",
            "node.2.count=1000000",
        ],
    );
    assert!(
        e.to_string()
            .starts_with("--set 'link.2.count=1000000': key `link.a{i}.count`: building"),
        "{e}"
    );
    // 10 000 hosts (81 MB estimated) load.
    let l = load_str(&star(10_000, 1000), "geo.toml", &[]).unwrap();
    assert_eq!(
        (
            l.scenario.nodes.len(),
            l.scenario.links.len(),
            l.scenario.flows.len()
        ),
        (10_002, 20_002, 1000)
    );
}

/// MINI with `a_keys` after node a's name (line 3 on) and `b_keys` after node b's name.
fn with_node_keys(a_keys: &str, b_keys: &str) -> String {
    MINI.replacen("name = \"a\"\n", &format!("name = \"a\"\n{a_keys}"), 1)
        .replacen("name = \"b\"\n", &format!("name = \"b\"\n{b_keys}"), 1)
}

#[test]
fn subnets_are_disjoint_prefixes_on_hosts_that_hold_no_other_address() {
    let ok = with_node_keys(
        "subnets = [\"10.9.1.0/24\", \"10.9.2.0/24\"]\n",
        "subnets = [\"10.8.0.0/16\"]\nnetns = \"spd-b\"\n",
    );
    let l = load_str(&ok, "geo.toml", &[]).unwrap();
    let a = &l.scenario.nodes[0];
    let shown: Vec<String> = a.subnets.iter().map(ToString::to_string).collect();
    assert_eq!(shown, ["10.9.1.0/24", "10.9.2.0/24"]);
    assert_eq!(l.scenario.nodes[1].netns.as_deref(), Some("spd-b"));
    // Written back for run.json, and read again to the same scenario.
    let again = load_str(&toml::to_string(&l.resolved).unwrap(), "geo.toml", &[]).unwrap();
    assert_eq!(again.scenario, l.scenario);

    // Line 3 is a's first key line; b's is line 5, or 6 after one line of a's.
    let e = err(&with_node_keys("", "subnets = [\"10.9.1.5/24\"]\n"), &[]);
    check(&e, 5, "node.b.subnets.0", "the network is 10.9.1.0/24");
    let e = err(&with_node_keys("subnets = \"10.9.1.0/24\"\n", ""), &[]);
    check(&e, 3, "node.a.subnets", "expected an array of prefixes");
    let e = err(&with_node_keys("subnets = [\"10.9.1.0/33\"]\n", ""), &[]);
    check(&e, 3, "node.a.subnets.0", "above 32");
    let e = err(
        &with_node_keys(
            "subnets = [\"10.9.0.0/16\"]\n",
            "subnets = [\"10.9.1.0/24\"]\n",
        ),
        &[],
    );
    check(
        &e,
        6,
        "node.b.subnets.0",
        "overlaps subnet 10.9.0.0/16 of host `a`",
    );
    let e = err(
        &with_node_keys("subnets = [\"10.9.1.0/24\", \"10.9.1.128/25\"]\n", ""),
        &[],
    );
    check(
        &e,
        3,
        "node.a.subnets.1",
        "overlaps subnet 10.9.1.0/24 of this host",
    );
    // b's automatic address is 10.0.1.1; a's own address inside its subnet is allowed.
    let e = err(&with_node_keys("subnets = [\"10.0.0.0/23\"]\n", ""), &[]);
    check(
        &e,
        3,
        "node.a.subnets.0",
        "holds the address 10.0.1.1 of node `b`",
    );
    assert!(load_str(
        &with_node_keys("subnets = [\"10.0.0.0/24\"]\n", ""),
        "g.toml",
        &[]
    )
    .is_ok());
    let text = MINI.replacen(
        "kind = \"router\"\n",
        "kind = \"router\"\nsubnets = []\n",
        1,
    );
    check(
        &err(&text, &[]),
        8,
        "node.r.subnets",
        "networks behind a host",
    );
    // An override is checked like the file.
    let e = err(MINI, &["node.a.subnets=[\"10.0.1.0/24\"]"]);
    assert!(e.message().contains("holds the address 10.0.1.1"), "{e}");
}

#[test]
fn netns_names_an_existing_namespace_for_one_host() {
    let e = err(&with_node_keys("netns = \"x\"\n", "netns = \"x\"\n"), &[]);
    check(&e, 6, "node.b.netns", "also the namespace of host `a`");
    let e = err(&with_node_keys("netns = \"../etc\"\n", ""), &[]);
    check(&e, 3, "node.a.netns", "not a namespace name");
    let text = MINI.replacen(
        "kind = \"router\"\n",
        "kind = \"router\"\nnetns = \"r\"\n",
        1,
    );
    check(
        &err(&text, &[]),
        8,
        "node.r.netns",
        "only a host has a namespace",
    );
}

#[test]
fn a_bad_to_tcp_key_is_blamed_on_to_tcp() {
    let e = err(&format!("{MINI}to_tcp = {{ mss = 0 }}\n"), &[]);
    check(&e, 19, "flow.flow1.to_tcp.mss", "");
    let e = err(&format!("{MINI}to_tcp = {{ nope = 1 }}\n"), &[]);
    check(&e, 19, "flow.flow1.to_tcp.nope", "");
}

/// A source, a router and two receivers, each joined both ways; `r_keys` go into the router
/// (line 6 is its first key line), `h_keys` into receiver h1 (line 8).
fn multicast_net(r_keys: &str, h_keys: &str) -> String {
    format!(
        r#"[[node]]
name = "src"
[[node]]
name = "r"
kind = "router"
{r_keys}[[node]]
name = "h1"
{h_keys}[[node]]
name = "h2"
[[link]]
name = "src-r"
from = "src"
to = "r"
[[link]]
name = "r-src"
from = "r"
to = "src"
[[link]]
name = "r-h1"
from = "r"
to = "h1"
[[link]]
name = "h1-r"
from = "h1"
to = "r"
[[link]]
name = "r-h2"
from = "r"
to = "h2"
[[link]]
name = "h2-r"
from = "h2"
to = "r"
"#
    )
}

#[test]
fn multicast_and_groups_are_checked_where_they_are_written() {
    let ok = multicast_net(
        "multicast = { downstream = [\"r-h1\", \"r-h2\"], upstream = \"r-src\", \
         reports_via = { src-r = \"r-h1\" }, igmp = { query_interval = \"60s\" } }\n",
        "groups = [{ group = \"239.1.1.1\", join = \"5s\", leave = \"20s\" }, \
         { group = \"239.1.1.2\" }]\n",
    );
    let l = load_str(&ok, "geo.toml", &[]).unwrap();
    let mc = l.scenario.nodes[1]
        .multicast
        .as_ref()
        .expect("router multicast");
    assert_eq!(mc.downstream, ["r-h1", "r-h2"]);
    assert_eq!(
        mc.igmp.query_interval,
        satpep_proto::Duration::from_secs(60)
    );
    assert_eq!(mc.igmp.robustness, 2, "RFC 2236 default kept");
    let g = &l.scenario.nodes[2].groups;
    assert_eq!(g.len(), 2);
    assert_eq!(g[0].leave, Some(satpep_proto::Duration::from_secs(20)));
    assert_eq!(
        (g[1].join, g[1].leave),
        (satpep_proto::Duration::ZERO, None)
    );
    // Written back for run.json, and read again to the same scenario.
    let again = load_str(&toml::to_string(&l.resolved).unwrap(), "geo.toml", &[]).unwrap();
    assert_eq!(again.scenario, l.scenario);

    let mc = |keys: &str| multicast_net(&format!("multicast = {{ {keys} }}\n"), "");
    let e = err(&mc("downstream = [\"r-h1\", \"r-h3\"]"), &[]);
    check(
        &e,
        6,
        "node.r.multicast.downstream.1",
        "unknown link `r-h3`",
    );
    let e = err(&mc("downstream = [\"h1-r\"]"), &[]);
    check(&e, 6, "node.r.multicast.downstream.0", "does not leave `r`");
    let e = err(&mc("downstream = [\"r-h1\", \"r-h1\"]"), &[]);
    check(&e, 6, "node.r.multicast.downstream.1", "listed twice");
    let e = err(&mc("downstream = []"), &[]);
    check(&e, 6, "node.r.multicast.downstream", "at least one link");
    let e = err(&mc("downstream = [\"r-h1\"], upstream = \"r-h1\""), &[]);
    check(&e, 6, "node.r.multicast.upstream", "also downstream");
    let e = err(
        &mc("downstream = [\"r-h1\"], reports_via = { r-src = \"r-h1\" }"),
        &[],
    );
    check(
        &e,
        6,
        "node.r.multicast.reports_via.r-src",
        "does not arrive at `r`",
    );
    let e = err(
        &mc("downstream = [\"r-h1\"], reports_via = { h2-r = \"r-h2\" }"),
        &[],
    );
    check(
        &e,
        6,
        "node.r.multicast.reports_via.h2-r",
        "`r-h2` is not downstream",
    );
    let e = err(
        &mc("downstream = [\"r-h1\"], igmp = { robustness = 0 }"),
        &[],
    );
    check(&e, 6, "node.r.multicast.igmp", "robustness");
    let e = err(&mc("downstream = [\"r-h1\"], querier = true"), &[]);
    check(&e, 6, "node.r.multicast.querier", "unknown field");
    let e = err(
        &multicast_net("", "multicast = { downstream = [\"h1-r\"] }\n"),
        &[],
    );
    check(&e, 8, "node.h1.multicast", "kind = \"router\"");

    let g = |keys: &str| multicast_net("", &format!("groups = [{{ {keys} }}]\n"));
    let e = err(&g("group = \"10.0.0.1\""), &[]);
    check(&e, 8, "node.h1.groups.0.group", "not a group");
    let e = err(&g("group = \"224.0.0.5\""), &[]);
    check(&e, 8, "node.h1.groups.0.group", "link-local");
    let e = err(
        &g("group = \"239.1.1.1\", join = \"5s\", leave = \"5s\""),
        &[],
    );
    check(&e, 8, "node.h1.groups.0.leave", "leaves after it joins");
    let e = err(&g("group = \"239.1.1.1\", at = \"5s\""), &[]);
    check(&e, 8, "node.h1.groups.0.at", "unknown field");
    let e = err(
        &multicast_net("groups = [{ group = \"239.1.1.1\" }]\n", ""),
        &[],
    );
    check(&e, 6, "node.r.groups", "joined by hosts");
}

/// Link framing (`encap_overhead`): a value out of range or of the wrong type names the file,
/// the line and the key, in a link or in `[defaults.link]`; a valid one reaches the config.
#[test]
fn encap_overhead_errors_name_the_line_and_key() {
    let e = err(&with_link_keys("encap_overhead = 70000\n"), &[]);
    check(&e, 12, "link.ab.encap_overhead", "at most 65535");
    let e = err(&with_link_keys("encap_overhead = -1\n"), &[]);
    check(&e, 12, "link.ab.encap_overhead", "-1");
    let e = err(
        &format!("[defaults.link]\nencap_overhead = \"38B\"\n{MINI}"),
        &[],
    );
    check(&e, 2, "defaults.link.encap_overhead", "expected u32");
    let l = load_str(
        &format!(
            "[defaults.link]\nencap_overhead = 8\n{}",
            with_link_keys("encap_overhead = 38\n")
        ),
        "geo.toml",
        &[],
    )
    .unwrap();
    let framing: Vec<u32> = l
        .scenario
        .links
        .iter()
        .map(|k| k.config.encap_overhead)
        .collect();
    assert_eq!(framing, [38, 8]);
}
