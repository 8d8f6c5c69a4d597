//! Valid scenarios: the built-in default, overrides, sweeps, routes, addresses, round trips.

use std::net::Ipv4Addr;

use proptest::prelude::*;
use satpep_proto::link::ErrorModelConfig;
use satpep_proto::tcp::{CcAlgorithm, Recovery, TcpConfig};
use satpep_proto::{Bitrate, ByteSize, Duration};
use satpep_scenario::{
    default_scenario_text, load_file, load_str, AppSpec, Loaded, NodeKind, Scenario, ScenarioError,
};

fn builtin(sets: &[&str]) -> Result<Loaded, ScenarioError> {
    let sets: Vec<String> = sets.iter().map(|s| (*s).to_owned()).collect();
    load_str(default_scenario_text(), "<built-in>", &sets)
}

fn link(s: &Scenario, name: &str) -> usize {
    s.links.iter().position(|l| l.name == name).unwrap()
}

fn node(s: &Scenario, name: &str) -> usize {
    s.nodes.iter().position(|n| n.name == name).unwrap()
}

#[test]
fn default_scenario_has_the_documented_values() {
    let l = builtin(&[]).unwrap();
    let s = &l.scenario;
    assert!(l.sweep.is_empty());
    assert_eq!(
        (s.name.as_str(), s.seed, s.duration, s.stop_when_done),
        ("default", 1, Duration::from_secs(60), true)
    );
    let nodes: Vec<(&str, NodeKind)> = s.nodes.iter().map(|n| (n.name.as_str(), n.kind)).collect();
    assert_eq!(
        nodes,
        [
            ("server", NodeKind::Host),
            ("gateway", NodeKind::Router),
            ("terminal", NodeKind::Router),
            ("client", NodeKind::Host)
        ]
    );
    // (name, from, to, rate bit/s, delay ms, queue packets)
    type LinkRow<'a> = (&'a str, usize, usize, u64, u64, Option<u32>);
    let links: Vec<LinkRow> = s
        .links
        .iter()
        .map(|l| {
            (
                l.name.as_str(),
                l.from,
                l.to,
                l.config.rate.bps(),
                l.config.delay.as_nanos() / 1_000_000,
                l.config.queue.limit_packets,
            )
        })
        .collect();
    assert_eq!(
        links,
        [
            ("server-gateway", 0, 1, 100_000_000, 10, Some(1000)),
            ("gateway-server", 1, 0, 100_000_000, 10, Some(1000)),
            ("forward", 1, 2, 10_000_000, 250, Some(250)),
            ("return", 2, 1, 512_000, 250, Some(100)),
            ("terminal-client", 2, 3, 100_000_000, 1, Some(1000)),
            ("client-terminal", 3, 2, 100_000_000, 1, Some(1000)),
        ]
    );
    assert!(s
        .links
        .iter()
        .all(|l| l.config.error == ErrorModelConfig::None));
    let flows: Vec<(&str, usize, usize, Duration, u16, u16, AppSpec)> = s
        .flows
        .iter()
        .map(|f| {
            (
                f.name.as_str(),
                f.from,
                f.to,
                f.start,
                f.src_port,
                f.dst_port,
                f.app.clone(),
            )
        })
        .collect();
    let bulk = |mb: u64| AppSpec::Bulk {
        bytes: Some(ByteSize(mb * 1_000_000)),
        duration: None,
    };
    assert_eq!(
        flows,
        [
            ("bulk1", 0, 3, Duration::ZERO, 40001, 5001, bulk(20)),
            ("bulk2", 0, 3, Duration::from_secs(2), 40002, 5002, bulk(10)),
            ("bulk3", 0, 3, Duration::from_secs(4), 40003, 5003, bulk(5)),
        ]
    );
    assert!(s.flows.iter().all(|f| f.tcp == TcpConfig::default()));
    assert_eq!(s.output.interval, Duration::from_millis(10));
    assert_eq!(
        (
            s.output.pcap_links.len(),
            s.output.pcap_per_link,
            s.output.series,
            s.output.plots
        ),
        (0, false, true, false)
    );
}

#[test]
fn default_routes_follow_the_satellite_hop() {
    let s = builtin(&[]).unwrap().scenario;
    let (server, gateway, terminal, client) = (
        node(&s, "server"),
        node(&s, "gateway"),
        node(&s, "terminal"),
        node(&s, "client"),
    );
    assert_eq!(s.routes.next(gateway, client), Some(link(&s, "forward")));
    assert_eq!(
        s.routes.next(server, client),
        Some(link(&s, "server-gateway"))
    );
    assert_eq!(
        s.routes.next(terminal, client),
        Some(link(&s, "terminal-client"))
    );
    assert_eq!(
        s.routes.next(client, server),
        Some(link(&s, "client-terminal"))
    );
    assert_eq!(s.routes.next(terminal, server), Some(link(&s, "return")));
    assert_eq!(
        s.routes.next(gateway, server),
        Some(link(&s, "gateway-server"))
    );
    for n in 0..4 {
        assert_eq!(s.routes.next(n, n), None);
    }
}

#[test]
fn auto_addresses_are_unique_and_follow_the_index() {
    let s = builtin(&[]).unwrap().scenario;
    let addrs: Vec<Ipv4Addr> = s.nodes.iter().map(|n| n.address).collect();
    assert_eq!(
        addrs,
        ["10.0.0.1", "10.0.1.1", "10.0.2.1", "10.0.3.1"].map(|a| a.parse::<Ipv4Addr>().unwrap())
    );
    // 300 nodes in a chain: every automatic address distinct, 10.1.44.1 for index 300.
    let mut text = String::new();
    for i in 0..=300 {
        text += &format!("[[node]]\nname = \"n{i}\"\n");
    }
    let s = load_str(&text, "chain.toml", &[]).unwrap().scenario;
    let mut addrs: Vec<Ipv4Addr> = s.nodes.iter().map(|n| n.address).collect();
    assert_eq!(addrs[300], Ipv4Addr::new(10, 1, 44, 1));
    addrs.sort();
    addrs.dedup();
    assert_eq!(addrs.len(), 301);
}

#[test]
fn overrides_by_name_and_by_index() {
    let l = builtin(&[
        "link.forward.rate=2Mbps",
        "link.3.delay=300ms",
        "flow.bulk2.tcp.cc=reno",
        "flow.0.start=1.5",
        "defaults.tcp.mss=1000",
        "node.client.address=192.0.2.7",
        "seed=42",
        "output.pcap=[\"forward\", \"return\"]",
        "output.pcap_per_link=true",
        "link.return.error={ model = \"per\", per = 1e-3 }",
    ])
    .unwrap();
    let s = &l.scenario;
    assert_eq!(s.links[link(s, "forward")].config.rate, Bitrate(2_000_000));
    assert_eq!(
        s.links[link(s, "return")].config.delay,
        Duration::from_millis(300)
    );
    assert_eq!(
        s.links[link(s, "return")].config.error,
        ErrorModelConfig::Per { per: 1e-3 }
    );
    assert_eq!(s.flows[1].tcp.cc, CcAlgorithm::Reno);
    assert_eq!(s.flows[0].tcp.cc, CcAlgorithm::Cubic);
    // The flow's own cc wins; the default mss reaches every flow.
    assert!(s
        .flows
        .iter()
        .all(|f| f.tcp.mss == 1000 && f.tcp.recovery == Recovery::Sack));
    assert_eq!(s.flows[0].start, Duration::from_millis(1500));
    assert_eq!(
        s.nodes[node(s, "client")].address,
        Ipv4Addr::new(192, 0, 2, 7)
    );
    assert_eq!(s.seed, 42);
    assert_eq!(s.output.pcap_links, [link(s, "forward"), link(s, "return")]);
    assert!(s.output.pcap_per_link);
    // The resolved table shows the overridden values.
    assert_eq!(l.resolved["link"][2]["rate"].as_str(), Some("2Mbps"));
    assert_eq!(l.resolved["seed"].as_integer(), Some(42));
    assert_eq!(l.resolved["output"]["pcap_per_link"].as_bool(), Some(true));
}

#[test]
fn sweep_two_by_two_gives_four_points_in_order() {
    let text = format!(
        "{}\n[sweep]\n\"link.forward.rate\" = [\"1Mbps\", \"10Mbps\"]\n\"flow.bulk1.tcp.cc\" = [\"reno\", \"cubic\"]\n",
        default_scenario_text()
    );
    let l = load_str(&text, "sweep.toml", &["link.return.rate=1Mbps".into()]).unwrap();
    assert_eq!(l.sweep.len(), 4);
    let got: Vec<Vec<(&str, &str)>> = l
        .sweep
        .iter()
        .map(|p| {
            p.assignments
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_str()))
                .collect()
        })
        .collect();
    assert_eq!(
        got,
        [
            [
                ("link.forward.rate", "1Mbps"),
                ("flow.bulk1.tcp.cc", "reno")
            ],
            [
                ("link.forward.rate", "1Mbps"),
                ("flow.bulk1.tcp.cc", "cubic")
            ],
            [
                ("link.forward.rate", "10Mbps"),
                ("flow.bulk1.tcp.cc", "reno")
            ],
            [
                ("link.forward.rate", "10Mbps"),
                ("flow.bulk1.tcp.cc", "cubic")
            ],
        ]
    );
    let fwd = link(&l.scenario, "forward");
    let ret = link(&l.scenario, "return");
    for (p, (rate, cc)) in l.sweep.iter().zip([
        (1_000_000, CcAlgorithm::Reno),
        (1_000_000, CcAlgorithm::Cubic),
        (10_000_000, CcAlgorithm::Reno),
        (10_000_000, CcAlgorithm::Cubic),
    ]) {
        assert_eq!(p.scenario.links[fwd].config.rate, Bitrate(rate));
        assert_eq!(p.scenario.flows[0].tcp.cc, cc);
        // The --set applies to every point; the sweep touched nothing else.
        assert_eq!(p.scenario.links[ret].config.rate, Bitrate(1_000_000));
        assert_eq!(p.scenario.flows[1].tcp.cc, CcAlgorithm::Cubic);
    }
    // The base scenario is the file plus --set, without sweep values.
    assert_eq!(l.scenario.links[fwd].config.rate, Bitrate(10_000_000));
}

#[test]
fn sweep_accepts_bare_dotted_keys_and_non_string_values() {
    let text = format!(
        "{}\n[sweep]\nseed = [1, 2, 3]\nlink.forward.queue.limit_packets = [50, 500]\n",
        default_scenario_text()
    );
    let l = load_str(&text, "s.toml", &[]).unwrap();
    assert_eq!(l.sweep.len(), 6);
    assert_eq!(
        l.sweep[5].assignments,
        [
            ("seed".to_owned(), "3".to_owned()),
            (
                "link.forward.queue.limit_packets".to_owned(),
                "500".to_owned()
            )
        ]
    );
    assert_eq!(l.sweep[5].scenario.seed, 3);
    assert_eq!(
        l.sweep[5].scenario.links[2].config.queue.limit_packets,
        Some(500)
    );
}

#[test]
fn resolved_table_loads_back_to_the_same_scenario() {
    let l = builtin(&[
        "flow.bulk2.tcp.initial_window=4",
        "link.return.error={ model = \"gilbert_elliott\", p_good_bad = 0.01, p_bad_good = 0.1 }",
    ])
    .unwrap();
    let text = toml::to_string(&l.resolved).unwrap();
    let again = load_str(&text, "<resolved>", &[]).unwrap();
    assert_eq!(again.scenario, l.scenario);
    // Only routes that differ from the automatic ones are written out.
    assert!(l.resolved.get("route").is_none());
    let with_route = format!(
        "{}\n[[route]]\nnode = \"terminal\"\ndst = \"server\"\nlink = \"terminal-client\"\n",
        default_scenario_text()
    );
    // That route sends server-bound packets back to the client: a loop, so flows fail...
    assert!(load_str(&with_route, "r.toml", &[]).is_err());
    // ...but a harmless one (the same as automatic) round-trips to no [[route]] at all.
    let same = format!(
        "{}\n[[route]]\nnode = \"gateway\"\ndst = \"client\"\nlink = \"forward\"\n",
        default_scenario_text()
    );
    let l = load_str(&same, "r.toml", &[]).unwrap();
    assert!(l.resolved.get("route").is_none());
}

#[test]
fn route_override_is_kept_and_resolved() {
    // A second, slower forward link; route the gateway's client traffic over it.
    let text = format!(
        "{}\n[[link]]\nname = \"backup\"\nfrom = \"gateway\"\nto = \"terminal\"\nrate = \"1Mbps\"\n\n[[route]]\nnode = \"gateway\"\ndst = \"client\"\nlink = \"backup\"\n",
        default_scenario_text()
    );
    let l = load_str(&text, "r.toml", &[]).unwrap();
    let s = &l.scenario;
    assert_eq!(
        s.routes.next(node(s, "gateway"), node(s, "client")),
        Some(link(s, "backup"))
    );
    // gateway → terminal is still the lower-index forward link.
    assert_eq!(
        s.routes.next(node(s, "gateway"), node(s, "terminal")),
        Some(link(s, "forward"))
    );
    let routes = l.resolved["route"].as_array().unwrap();
    assert_eq!(routes.len(), 1);
    assert_eq!(routes[0]["link"].as_str(), Some("backup"));
    let again = load_str(&toml::to_string(&l.resolved).unwrap(), "<resolved>", &[]).unwrap();
    assert_eq!(&again.scenario, s);
}

#[test]
fn request_response_defaults() {
    let text = default_scenario_text().replacen(
        "app = { kind = \"bulk\", bytes = \"20MB\" }",
        "app = { kind = \"request_response\", request = \"300B\", response = \"100KB\" }",
        1,
    );
    let s = load_str(&text, "rr.toml", &[]).unwrap().scenario;
    assert_eq!(
        s.flows[0].app,
        AppSpec::RequestResponse {
            request: ByteSize(300),
            response: ByteSize(100_000),
            count: 1,
            think: Duration::ZERO
        }
    );
}

#[test]
fn load_file_names_the_scenario_after_the_stem() {
    let dir = std::env::temp_dir().join(format!("satpep-scenario-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("geo-bentpipe.toml");
    std::fs::write(&path, default_scenario_text()).unwrap();
    let l = load_file(&path, &[]).unwrap();
    assert_eq!(l.scenario.name, "geo-bentpipe");
    std::fs::write(&path, "seed = \"one\"\n").unwrap();
    let e = load_file(&path, &[]).unwrap_err();
    assert_eq!(e.origin(), path.display().to_string());
    assert_eq!(e.line(), Some(1));
    let missing = dir.join("missing.toml");
    let e = load_file(&missing, &[]).unwrap_err();
    assert!(matches!(e, ScenarioError::Read { .. }), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Keys and values a mutation may write: valid and invalid ones, so that both the typed layer and
/// the semantic checks are reached.
const KEYS: &[&str] = &[
    "seed",
    "duration",
    "name",
    "rate",
    "delay",
    "from",
    "to",
    "kind",
    "start",
    "port",
    "app",
    "tcp",
    "queue",
    "error",
    "cc",
    "mss",
    "initial_window",
    "address",
    "pcap",
    "pcap_per_link",
    "interval",
    "sweep",
    "link",
    "node",
    "flow",
    "defaults",
];
const VALUES: &[&str] = &[
    "1",
    "0",
    "-1",
    "1.5",
    "nan",
    "inf",
    "true",
    "\"\"",
    "\"x\"",
    "\"10Mbps\"",
    "\"10 furlongs\"",
    "\"-5s\"",
    "\"gateway\"",
    "\"client\"",
    "[]",
    "[1, 2]",
    "{}",
    "{ model = \"per\", per = 2 }",
    "{ kind = \"bulk\", bytes = 1, duration = 1 }",
    "\"99999999999999999999s\"",
    "18446744073709551615",
    "\"1e400MB\"",
    "1979-05-27",
    "{ limit_packets = 0 }",
];

#[derive(Clone, Debug)]
enum Mutation {
    DeleteLine(usize),
    DuplicateLine(usize),
    SetLine(usize, usize, usize),
    InsertBytes(usize, Vec<u8>),
    Truncate(usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        any::<usize>().prop_map(Mutation::DeleteLine),
        any::<usize>().prop_map(Mutation::DuplicateLine),
        (any::<usize>(), 0..KEYS.len(), 0..VALUES.len())
            .prop_map(|(l, k, v)| Mutation::SetLine(l, k, v)),
        (any::<usize>(), proptest::collection::vec(any::<u8>(), 1..8))
            .prop_map(|(at, b)| Mutation::InsertBytes(at, b)),
        any::<usize>().prop_map(Mutation::Truncate),
    ]
}

fn apply(text: &str, m: &Mutation) -> String {
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    let n = lines.len().max(1);
    match m {
        Mutation::DeleteLine(i) => {
            if !lines.is_empty() {
                lines.remove(i % n);
            }
        }
        Mutation::DuplicateLine(i) => {
            if let Some(l) = lines.get(i % n).cloned() {
                lines.insert(i % n, l);
            }
        }
        Mutation::SetLine(i, k, v) => {
            let line = format!("{} = {}", KEYS[*k], VALUES[*v]);
            match lines.get_mut(i % n) {
                Some(l) => *l = line,
                None => lines.push(line),
            }
        }
        Mutation::InsertBytes(at, bytes) => {
            let mut raw = lines.join("\n").into_bytes();
            let at = at % (raw.len() + 1);
            raw.splice(at..at, bytes.iter().copied());
            return String::from_utf8_lossy(&raw).into_owned();
        }
        Mutation::Truncate(at) => {
            let raw = lines.join("\n");
            let cut = (0..=at % (raw.len() + 1))
                .rev()
                .find(|&c| raw.is_char_boundary(c))
                .unwrap_or(0);
            return raw[..cut].to_owned();
        }
    }
    lines.join("\n")
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    /// Random mutations of the default file and random `--set`s never panic; every error names a
    /// line inside the text (or none), and every success round-trips through `resolved`.
    #[test]
    fn mutated_default_never_panics(
        mutations in proptest::collection::vec(mutation(), 1..4),
        sets in proptest::collection::vec((0..KEYS.len(), 0..VALUES.len(), proptest::option::of(0..6usize)), 0..2),
    ) {
        let mut text = default_scenario_text().to_owned();
        for m in &mutations {
            text = apply(&text, m);
        }
        let prefixes = ["", "link.forward.", "flow.bulk1.", "flow.0.tcp.", "node.gateway.", "output."];
        let sets: Vec<String> = sets
            .iter()
            .map(|&(k, v, p)| format!("{}{}={}", p.map_or("", |p| prefixes[p]), KEYS[k], VALUES[v]))
            .collect();
        match load_str(&text, "m.toml", &sets) {
            Ok(l) => {
                let again = load_str(&toml::to_string(&l.resolved).unwrap(), "<resolved>", &[]);
                prop_assert_eq!(again.map(|a| a.scenario).ok(), Some(l.scenario));
            }
            Err(e) => {
                let shown = e.to_string();
                prop_assert!(!e.message().is_empty(), "{}", shown);
                if let Some(line) = e.line() {
                    prop_assert!(line <= text.lines().count() + 1, "{}", shown);
                }
            }
        }
    }
}

/// Every scenario shipped in `scenarios/` loads within the limits (names, sampling volume,
/// sizes) that the loader enforces.
#[test]
fn every_shipped_scenario_loads() {
    fn walk(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "toml") {
                out.push(path);
            }
        }
    }
    let mut files = Vec::new();
    walk(
        &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios"),
        &mut files,
    );
    assert!(files.len() >= 9, "{files:?}");
    for f in files {
        if let Err(e) = load_file(&f, &[]) {
            panic!("{}: {e}", f.display());
        }
    }
}

/// A star of `n` terminals, each with a flow toward the hub, written out table by table.
fn star_written_out(n: usize) -> String {
    let mut s =
        String::from("[[node]]\nname = \"hub\"\nkind = \"router\"\n[[node]]\nname = \"srv\"\n");
    for i in 0..n {
        s.push_str(&format!("[[node]]\nname = \"t{i}\"\n"));
    }
    s.push_str("[[link]]\nname = \"hub-srv\"\nfrom = \"hub\"\nto = \"srv\"\n");
    s.push_str("[[link]]\nname = \"srv-hub\"\nfrom = \"srv\"\nto = \"hub\"\n");
    for i in 0..n {
        s.push_str(&format!(
            "[[link]]\nname = \"up{i}\"\nfrom = \"t{i}\"\nto = \"hub\"\nrate = \"{}kbps\"\n",
            64 * (i % 4 + 1)
        ));
        s.push_str(&format!(
            "[[link]]\nname = \"down{i}\"\nfrom = \"hub\"\nto = \"t{i}\"\n"
        ));
    }
    for i in 0..3 * n {
        s.push_str(&format!(
            "[[flow]]\nname = \"f{i}\"\nfrom = \"t{}\"\nto = \"srv\"\nstart = \"{}ms\"\n",
            i % n,
            i * 10 + 5
        ));
    }
    s
}

/// The same star in a few lines with `count`.
const STAR_COUNTED: &str = r#"
[[node]]
name = "hub"
kind = "router"
[[node]]
name = "srv"
[[node]]
count = 50
name = "t{i}"
[[link]]
name = "hub-srv"
from = "hub"
to = "srv"
[[link]]
name = "srv-hub"
from = "srv"
to = "hub"
[[link]]
count = 50
name = "up{i}"
from = "t{i}"
to = "hub"
rate = "{i%4+1*64}kbps"
[[link]]
count = 50
name = "down{i}"
from = "hub"
to = "t{i}"
[[flow]]
count = 150
name = "f{i}"
from = "t{i%50}"
to = "srv"
start = "{i*10+5}ms"
"#;

#[test]
fn count_tables_load_exactly_as_if_written_out() {
    // Links are interleaved when written out (up0, down0, up1, …) but grouped with `count`
    // (up0 … up49, down0 …): compare the counted form with the same order written out.
    let written = star_written_out(50);
    let counted = load_str(STAR_COUNTED, "star.toml", &[]).unwrap();
    let s = &counted.scenario;
    assert_eq!(s.nodes.len(), 52);
    assert_eq!(s.links.len(), 102);
    assert_eq!(s.flows.len(), 150);
    assert_eq!(s.links[2].name, "up0");
    assert_eq!(s.links[2].config.rate.bps(), 64_000);
    assert_eq!(s.links[5].config.rate.bps(), 256_000);
    assert_eq!(s.flows[149].name, "f149");
    assert_eq!(s.flows[149].from, node(s, "t49"));
    assert_eq!(
        s.flows[149].start,
        satpep_proto::Duration::from_millis(1495)
    );
    // Everything else matches the written-out file, element by element.
    let w = load_str(&written, "star.toml", &[]).unwrap();
    assert_eq!(w.scenario.nodes, s.nodes);
    assert_eq!(w.scenario.flows, s.flows);
    let by_name = |l: &satpep_scenario::LinkSpec| (l.name.clone(), l.from, l.to, l.config.clone());
    let mut a: Vec<_> = w.scenario.links.iter().map(by_name).collect();
    let mut b: Vec<_> = s.links.iter().map(by_name).collect();
    a.sort_by(|x, y| x.0.cmp(&y.0));
    b.sort_by(|x, y| x.0.cmp(&y.0));
    assert_eq!(a, b);
    // run.json writes the copies out; it loads back to the same scenario, with each flow's tcp
    // written once in [defaults.tcp].
    let again = load_str(
        &toml::to_string(&counted.resolved).unwrap(),
        "<resolved>",
        &[],
    )
    .unwrap();
    assert_eq!(&again.scenario, s);
    assert!(counted.resolved["flow"][0].get("tcp").is_none());
}

#[test]
fn an_error_in_a_copy_names_the_table_as_written_and_the_copy() {
    // Flow i starts at i × 80 ms: copy 13 (1.04 s) is the first past the end of a 1 s run.
    let text = format!("duration = \"1s\"\n{STAR_COUNTED}")
        .replace("start = \"{i*10+5}ms\"", "start = \"{i*80}ms\"");
    let e = load_str(&text, "star.toml", &[]).unwrap_err();
    let shown = e.to_string();
    assert_eq!(e.line(), Some(35), "{shown}");
    assert_eq!(e.key(), Some("flow.f{i}.start"), "{shown}");
    assert!(
        shown.contains("(in copy i = 13 of this `count` table)"),
        "{shown}"
    );
    let bad = STAR_COUNTED.replace("name = \"t{i}\"", "name = \"t{j}\"");
    let e = load_str(&bad, "star.toml", &[]).unwrap_err();
    assert_eq!(e.line(), Some(9), "{e}");
    assert!(e.to_string().contains("`{j}` is not a copy index"), "{e}");
}

#[test]
fn defaults_link_is_laid_under_every_link_and_run_json_uses_it() {
    let text = STAR_COUNTED.replace(
        "[[node]]\nname = \"hub\"",
        "[defaults.link]\ndelay = \"7ms\"\nqueue = { limit_packets = 33 }\n\n[[node]]\nname = \"hub\"",
    );
    let l = load_str(&text, "star.toml", &[]).unwrap();
    let s = &l.scenario;
    // Every link takes the defaults' delay and queue; `up{i}` keeps its own rate.
    assert!(s
        .links
        .iter()
        .all(|k| k.config.delay == Duration::from_millis(7)));
    assert!(s
        .links
        .iter()
        .all(|k| k.config.queue.limit_packets == Some(33)));
    assert_eq!(s.links[3].config.rate.bps(), 128_000);
    // run.json: the most common config (50 down links + 2 hub-server links: 52 of 102) is
    // [defaults.link]; those links write only their name and ends; it loads back the same.
    let r = &l.resolved;
    let down = r["link"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["name"].as_str() == Some("down3"));
    assert_eq!(down.unwrap().as_table().unwrap().len(), 3);
    assert_eq!(r["defaults"]["link"]["delay"].as_str(), Some("7ms"));
    let again = load_str(&toml::to_string(r).unwrap(), "<resolved>", &[]).unwrap();
    assert_eq!(&again.scenario, s);
    // A bad key in [defaults.link] is blamed there, not on each link; a link's own key wins.
    let bad = text.replace("delay = \"7ms\"", "delay = \"7 parsecs\"");
    let e = load_str(&bad, "star.toml", &[]).unwrap_err();
    assert_eq!(e.key(), Some("defaults.link.delay"), "{e}");
    assert_eq!(e.line(), Some(3), "{e}");
    let own = text.replace("[defaults.link]\n", "[defaults.link]\nname = \"x\"\n");
    let e = load_str(&own, "star.toml", &[]).unwrap_err();
    assert!(e.to_string().contains("belongs to each [[link]]"), "{e}");
}

#[test]
fn to_tcp_is_laid_over_the_flows_tcp_for_the_to_end_only_and_round_trips() {
    let l = builtin(&[
        "defaults.tcp.mss=1000",
        "flow.bulk2.tcp.cc=reno",
        "flow.bulk2.to_tcp={ window_scaling = false, recv_buffer = \"17520\" }",
    ])
    .unwrap();
    let f = &l.scenario.flows[1];
    let tcp: TcpConfig = toml::from_str("mss = 1000\ncc = \"reno\"").unwrap();
    let to: TcpConfig = toml::from_str(
        "mss = 1000\ncc = \"reno\"\nwindow_scaling = false\nrecv_buffer = \"17520\"",
    )
    .unwrap();
    assert_eq!(f.tcp, tcp);
    assert_eq!(f.to_tcp, Some(to));
    assert_eq!(l.scenario.flows[0].to_tcp, None);
    let text = toml::to_string(&l.resolved).unwrap();
    let again = load_str(&text, "<resolved>", &[]).unwrap();
    assert_eq!(again.scenario, l.scenario);
}

/// `profile = "ns2"` in `[defaults.tcp]` orders every link's same-instant events as ns-2 does
/// (arrivals first), unless `[defaults.link]` or the link itself says otherwise; a flow's own
/// profile does not reach the links.
#[test]
fn the_ns2_profile_puts_arrivals_first_on_every_link_unless_told() {
    use satpep_proto::link::SameInstant;
    let order = |sets: &[&str]| -> Vec<SameInstant> {
        let l = builtin(sets).unwrap();
        l.scenario
            .links
            .iter()
            .map(|l| l.config.same_instant)
            .collect()
    };
    let (first, arrivals) = (SameInstant::CompletionsFirst, SameInstant::ArrivalsFirst);
    assert_eq!(order(&[]), [first; 6]);
    assert_eq!(order(&["flow.0.tcp.profile=ns2"]), [first; 6]);
    assert_eq!(order(&["defaults.tcp.profile=ns2"]), [arrivals; 6]);
    assert_eq!(
        order(&[
            "defaults.tcp.profile=ns2",
            "defaults.link.same_instant=completions_first"
        ]),
        [first; 6]
    );
    let l = builtin(&[
        "defaults.tcp.profile=ns2",
        "link.forward.same_instant=completions_first",
    ])
    .unwrap();
    let s = &l.scenario;
    for (i, spec) in s.links.iter().enumerate() {
        let want = if i == link(s, "forward") {
            first
        } else {
            arrivals
        };
        assert_eq!(spec.config.same_instant, want, "{}", spec.name);
    }
}
