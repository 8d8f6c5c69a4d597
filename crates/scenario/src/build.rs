//! From the (overridden) scenario table to a validated [`Scenario`]: structure, types, defaults,
//! cross-references and the semantic checks, each error located at the offending key.
//!
//! The structure (which keys a table may have, arrays of tables, names → indices) is walked by
//! hand so that every error has a precise path; leaf values and the configs owned by
//! satpep-proto (`LinkConfig`, `TcpConfig`) go through serde, with `serde_path_to_error` giving
//! the path inside them.

use std::borrow::Cow;
use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::net::Ipv4Addr;

use satpep_proto::link::LinkConfig;
use satpep_proto::middlebox::MiddleboxConfig;
use satpep_proto::net::Ipv4Prefix;
use satpep_proto::tcp::TcpConfig;
use satpep_proto::wire::igmp;
use satpep_proto::Duration;
use serde::de::DeserializeOwned;
use toml::{Table, Value};

use crate::error::ScenarioError;
use crate::keys::{join, join_index, KeyPath, Seg, Sources};
use crate::names;
use crate::routes::{self, Routes, RoutesError, TraceError};
use crate::spec::{
    AppSpec, FlowSpec, GroupSpec, LinkSpec, MulticastSpec, NodeKind, NodeSpec, OutputSpec, Scenario,
};

mod dama;
mod expand;
mod memory;
mod traces;

use expand::Origin;
pub use memory::{FLOW_BYTES, LINK_BYTES, MAX_SETUP_BYTES, MEMORY_ENV, NODE_BYTES};
pub use traces::MAX_TRACE_BYTES;

type Result<T, E = ScenarioError> = std::result::Result<T, E>;

/// An error whose path is relative to some table; the caller decides the prefix.
type RelError = (KeyPath, String);

const ROOT_KEYS: &[&str] = &[
    "name",
    "seed",
    "duration",
    "stop_when_done",
    "defaults",
    "node",
    "link",
    "route",
    "flow",
    "dama",
    "output",
    "sweep",
];
const DEFAULTS_KEYS: &[&str] = &["tcp", "link"];
const NODE_KEYS: &[&str] = &[
    "name",
    "kind",
    "address",
    "middlebox",
    "subnets",
    "netns",
    "multicast",
    "groups",
];
const LINK_OWN_KEYS: &[&str] = &["name", "from", "to"];
const ROUTE_KEYS: &[&str] = &["node", "dst", "link"];
const FLOW_KEYS: &[&str] = &[
    "name", "from", "to", "start", "port", "src_port", "app", "tcp", "to_tcp",
];
const OUTPUT_KEYS: &[&str] = &["interval", "pcap", "pcap_per_link", "series", "plots"];

/// Build and validate the scenario in `root` (which must no longer hold `[sweep]`).
pub(crate) fn build(src: &Sources<'_>, root: &Table, default_name: &str) -> Result<Scenario> {
    Builder {
        src,
        root,
        origins: RefCell::default(),
        default_tcp_config: RefCell::default(),
    }
    .scenario(default_name)
}

struct Builder<'s, 'a> {
    src: &'s Sources<'a>,
    root: &'s Table,
    /// For each array expanded by `count` ([`Builder::elements`]): where each element came
    /// from, so that errors point at the table as written.
    origins: RefCell<HashMap<&'static str, Vec<Origin>>>,
    /// `[defaults.tcp]` parsed, once a flow without its own `tcp` has needed it.
    default_tcp_config: RefCell<Option<TcpConfig>>,
}

impl<'s> Builder<'s, '_> {
    fn scenario(&self, default_name: &str) -> Result<Scenario> {
        let root = self.root;
        self.check_keys(root, &[], ROOT_KEYS)?;
        let name = match self.get::<String>(root, &[], "name")? {
            Some(name) => {
                if let Some(problem) = names::scenario_name_problem(&name) {
                    return Err(self.err(&key("name"), problem));
                }
                name
            }
            // A file stem: one path component already; only its length may be off.
            None => default_name.to_owned(),
        };
        let seed = self.get::<u64>(root, &[], "seed")?.unwrap_or(1);
        let duration = self
            .get::<Duration>(root, &[], "duration")?
            .unwrap_or(Duration::from_secs(60));
        if duration == Duration::ZERO {
            return Err(self.err(
                &key("duration"),
                "the run needs a duration above 0 (e.g. \"60s\")",
            ));
        }
        let stop_when_done = self
            .get::<bool>(root, &[], "stop_when_done")?
            .unwrap_or(true);
        let default_tcp = self.default_tcp()?;
        // Before any `count` copy is made: 696 bytes of them could ask for 8 GB.
        self.check_memory()?;
        let nodes = self.nodes()?;
        let mut links = self.links(&nodes)?;
        let dama = self.dama(&nodes, &mut links)?;
        let link_index = index_by_name(links.iter().map(|l| l.name.as_str()));
        self.check_multicast(&nodes, &links, &link_index)?;
        let routes = self.routes(&nodes, &links, &link_index)?;
        let flows = self.flows(&nodes, &links, &routes, &default_tcp, duration)?;
        let output = self.output(&links, &link_index)?;
        self.check_sampling(duration, &output, flows.len(), links.len())?;
        let nodes = nodes.specs;
        Ok(Scenario {
            name,
            seed,
            duration,
            stop_when_done,
            nodes,
            links,
            flows,
            dama,
            output,
            routes,
        })
    }

    /// `[defaults.tcp]`, checked on its own so that its errors point at it, not at each flow.
    fn default_tcp(&self) -> Result<Table> {
        self.defaults_of("tcp", |v| {
            typed_rel::<TcpConfig>(v).and_then(|c| check_tcp(&c))
        })
    }

    /// `[defaults.link]`: keys every `[[link]]` starts from, checked on its own.
    fn default_link(&self) -> Result<Table> {
        self.defaults_of("link", |v| {
            typed_rel::<LinkConfig>(v).and_then(|c| check_link(&c))
        })
    }

    fn defaults_of(
        &self,
        k: &str,
        check: impl Fn(&Value) -> std::result::Result<(), RelError>,
    ) -> Result<Table> {
        let path = key("defaults");
        let Some(defaults) = self.root.get("defaults") else {
            return Ok(Table::new());
        };
        let defaults = self.table(defaults, &path)?;
        self.check_keys(defaults, &path, DEFAULTS_KEYS)?;
        let path = join(&path, k);
        let Some(table) = defaults.get(k) else {
            return Ok(Table::new());
        };
        let table = self.table(table, &path)?.clone();
        if let Some(own) = LINK_OWN_KEYS
            .iter()
            .find(|o| k == "link" && table.contains_key(**o))
        {
            return Err(self.err(
                &join(&path, own),
                format!("`{own}` belongs to each [[link]], not to [defaults.link]"),
            ));
        }
        check(&Value::Table(table.clone()))
            .map_err(|(rel, msg)| self.err(&[path, rel].concat(), msg))?;
        Ok(table)
    }

    fn nodes(&self) -> Result<Nodes> {
        let elements = self.elements("node")?;
        if elements.is_empty() {
            return Err(self.err(
                &key("node"),
                "the scenario has no nodes: add [[node]] tables (at least two hosts)",
            ));
        }
        let mut nodes: Vec<NodeSpec> = Vec::with_capacity(elements.len());
        let mut index: HashMap<String, usize> = HashMap::with_capacity(elements.len());
        let mut explicit: Vec<bool> = Vec::with_capacity(elements.len());
        for (i, t) in elements.iter().enumerate() {
            let path = join_index(&key("node"), i);
            self.check_keys(t, &path, NODE_KEYS)?;
            let name = self.name(t, &path, |n| index.contains_key(n), "node")?;
            index.insert(name.clone(), i);
            let kind = self.get::<NodeKind>(t, &path, "kind")?.unwrap_or_default();
            let given = self.get::<Ipv4Addr>(t, &path, "address")?;
            explicit.push(given.is_some());
            let address = match given {
                Some(a) => a,
                None => auto_address(i).ok_or_else(|| {
                    self.err(
                        &path,
                        "too many nodes for automatic addresses (16 646 144); give addresses",
                    )
                })?,
            };
            let middlebox = match t.get("middlebox") {
                None => None,
                Some(v) => {
                    let mb_path = join(&path, "middlebox");
                    if kind != NodeKind::Router {
                        return Err(self.err(&mb_path, "a middlebox needs `kind = \"router\"`"));
                    }
                    let mb: MiddleboxConfig = self.typed(v, &mb_path)?;
                    mb.validate().map_err(|msg| {
                        let (rel, msg) = rel_error(msg);
                        self.err(&[mb_path.clone(), rel].concat(), msg)
                    })?;
                    Some(mb)
                }
            };
            let subnets = self.subnets(t, &path, kind)?;
            let netns = match self.get::<String>(t, &path, "netns")? {
                None => None,
                Some(ns) => {
                    let ns_path = join(&path, "netns");
                    if kind != NodeKind::Host {
                        return Err(self.err(
                            &ns_path,
                            "only a host has a namespace (`kind = \"host\"`); routers live \
                             inside the emulator",
                        ));
                    }
                    if let Some(problem) = netns_problem(&ns) {
                        return Err(self.err(&ns_path, problem));
                    }
                    if let Some(other) = nodes.iter().find(|n| n.netns.as_ref() == Some(&ns)) {
                        return Err(self.err(
                            &ns_path,
                            format!(
                                "namespace `{ns}` is also the namespace of host `{}`; \
                                 attach one host per namespace",
                                other.name
                            ),
                        ));
                    }
                    Some(ns)
                }
            };
            let multicast = match self.get::<MulticastSpec>(t, &path, "multicast")? {
                None => None,
                Some(mc) => {
                    let mc_path = join(&path, "multicast");
                    if kind != NodeKind::Router {
                        return Err(self.err(&mc_path, "multicast needs `kind = \"router\"`"));
                    }
                    mc.igmp
                        .validate()
                        .map_err(|msg| self.err(&join(&mc_path, "igmp"), msg))?;
                    Some(mc)
                }
            };
            let groups = self.groups(t, &path, kind)?;
            nodes.push(NodeSpec {
                name,
                kind,
                address,
                middlebox,
                subnets,
                netns,
                multicast,
                groups,
            });
        }
        let mut seen: HashMap<Ipv4Addr, usize> = HashMap::new();
        for (i, n) in nodes.iter().enumerate() {
            let Some(&first) = seen.get(&n.address) else {
                seen.insert(n.address, i);
                continue;
            };
            // Blame an explicitly written address (the automatic one only follows the order).
            let (at, other) = if explicit[i] { (i, first) } else { (first, i) };
            return Err(self.err(
                &[
                    key("node"),
                    vec![Seg::Index(at), Seg::Key("address".into())],
                ]
                .concat(),
                format!(
                    "address {} is also the address of node `{}`; addresses must be unique",
                    n.address, nodes[other].name
                ),
            ));
        }
        self.check_subnets(&nodes)?;
        Ok(Nodes {
            specs: nodes,
            index,
        })
    }

    /// A host's `groups`: each a multicast group outside the link-local block, left after it
    /// was joined.
    fn groups(&self, t: &Table, path: &[Seg], kind: NodeKind) -> Result<Vec<GroupSpec>> {
        let Some(groups) = self.get::<Vec<GroupSpec>>(t, path, "groups")? else {
            return Ok(Vec::new());
        };
        let path = join(path, "groups");
        if kind != NodeKind::Host {
            return Err(self.err(&path, "groups are joined by hosts (`kind = \"host\"`)"));
        }
        for (j, g) in groups.iter().enumerate() {
            let at = join_index(&path, j);
            if !igmp::is_multicast(g.group) || igmp::is_link_local_multicast(g.group) {
                return Err(self.err(
                    &join(&at, "group"),
                    format!(
                        "{} is not a group a host can join: use a multicast address in \
                         224.0.1.0–239.255.255.255 (224.0.0.0/24 is link-local)",
                        g.group
                    ),
                ));
            }
            if g.leave.is_some_and(|l| l <= g.join) {
                return Err(self.err(&join(&at, "leave"), "a host leaves after it joins"));
            }
        }
        Ok(groups)
    }

    /// Every link a router's `multicast` names exists and starts (`downstream`, `upstream`,
    /// the values of `reports_via`) or ends (the keys of `reports_via`) at that router.
    fn check_multicast(
        &self,
        nodes: &[NodeSpec],
        links: &[LinkSpec],
        link_index: &HashMap<&str, usize>,
    ) -> Result<()> {
        for (i, n) in nodes.iter().enumerate() {
            let Some(mc) = &n.multicast else { continue };
            let path = [
                key("node"),
                vec![Seg::Index(i), Seg::Key("multicast".into())],
            ]
            .concat();
            let find = |at: KeyPath, name: &str, leaves: bool| -> Result<usize> {
                let Some(&l) = link_index.get(name) else {
                    return Err(self.err(
                        &at,
                        unknown_name("link", name, links.iter().map(|l| &l.name)),
                    ));
                };
                let (end, word) = if leaves {
                    (links[l].from, "leave")
                } else {
                    (links[l].to, "arrive at")
                };
                if end != i {
                    return Err(
                        self.err(&at, format!("link `{name}` does not {word} `{}`", n.name))
                    );
                }
                Ok(l)
            };
            if mc.downstream.is_empty() {
                return Err(self.err(
                    &join(&path, "downstream"),
                    "name at least one link toward receivers",
                ));
            }
            let mut down = Vec::new();
            for (j, name) in mc.downstream.iter().enumerate() {
                let at = join_index(&join(&path, "downstream"), j);
                let l = find(at.clone(), name, true)?;
                if down.contains(&l) {
                    return Err(self.err(&at, format!("link `{name}` is listed twice")));
                }
                down.push(l);
            }
            if mc.broadcast && (mc.upstream.is_some() || !mc.reports_via.is_empty()) {
                return Err(self.err(
                    &join(&path, "broadcast"),
                    "a broadcast medium only repeats: it has no `upstream` or `reports_via`",
                ));
            }
            if let Some(up) = &mc.upstream {
                let at = join(&path, "upstream");
                let l = find(at.clone(), up, true)?;
                if down.contains(&l) {
                    return Err(self.err(&at, format!("link `{up}` is also downstream")));
                }
            }
            for (from, to) in &mc.reports_via {
                let at = join(&join(&path, "reports_via"), from);
                find(at.clone(), from, false)?;
                let l = find(at.clone(), to, true)?;
                if !down.contains(&l) {
                    return Err(self.err(&at, format!("link `{to}` is not downstream")));
                }
            }
        }
        Ok(())
    }

    /// A node's `subnets`: an array of IPv4 prefixes, on hosts only.
    fn subnets(&self, t: &Table, path: &[Seg], kind: NodeKind) -> Result<Vec<Ipv4Prefix>> {
        let Some(v) = t.get("subnets") else {
            return Ok(Vec::new());
        };
        let path = join(path, "subnets");
        if kind != NodeKind::Host {
            return Err(self.err(
                &path,
                "subnets are networks behind a host (`kind = \"host\"`); a router routes \
                 them without being told",
            ));
        }
        let Some(items) = v.as_array() else {
            return Err(self.err(
                &path,
                format!(
                    "expected an array of prefixes such as [\"10.9.1.0/24\"], got {}",
                    type_name(v)
                ),
            ));
        };
        (items.iter().enumerate())
            .map(|(j, item)| {
                let at = join_index(&path, j);
                let Some(text) = item.as_str() else {
                    return Err(self.err(
                        &at,
                        format!(
                            "expected an IPv4 prefix such as \"10.9.1.0/24\", got {}",
                            type_name(item)
                        ),
                    ));
                };
                text.parse::<Ipv4Prefix>()
                    .map_err(|e| self.err(&at, e.to_string()))
            })
            .collect()
    }

    /// Subnets are pairwise disjoint and hold no other node's address, so that every address
    /// has one owner: sorted by first address, two prefixes overlap only if neighbours do
    /// (prefixes nest or are disjoint), and a binary search finds any address inside one.
    fn check_subnets(&self, nodes: &[NodeSpec]) -> Result<()> {
        let mut all: Vec<(Ipv4Prefix, usize, usize)> = (nodes.iter().enumerate())
            .flat_map(|(i, n)| n.subnets.iter().enumerate().map(move |(j, p)| (*p, i, j)))
            .collect();
        if all.is_empty() {
            return Ok(());
        }
        let at = |i: usize, j: usize| {
            [
                key("node"),
                vec![Seg::Index(i), Seg::Key("subnets".into()), Seg::Index(j)],
            ]
            .concat()
        };
        let mut addresses: Vec<(Ipv4Addr, usize)> = (nodes.iter().enumerate())
            .map(|(i, n)| (n.address, i))
            .collect();
        addresses.sort_unstable();
        for &(p, i, j) in &all {
            let first = addresses.partition_point(|(a, _)| *a < p.network());
            let inside = addresses[first..]
                .iter()
                .take_while(|(a, _)| *a <= p.last())
                .find(|&&(_, k)| k != i);
            if let Some(&(a, k)) = inside {
                return Err(self.err(
                    &at(i, j),
                    format!(
                        "subnet {p} holds the address {a} of node `{}`; a subnet must not hold \
                         another node's address",
                        nodes[k].name
                    ),
                ));
            }
        }
        // Blame the later-written of two overlapping prefixes.
        all.sort_unstable_by_key(|&(p, i, j)| (p.network(), p.prefix_len(), i, j));
        for w in all.windows(2) {
            let ((a, ai, aj), (b, bi, bj)) = (w[0], w[1]);
            if a.overlaps(&b) {
                let ((p, i, j), (q, k, _)) = if (ai, aj) > (bi, bj) {
                    ((a, ai, aj), (b, bi, bj))
                } else {
                    ((b, bi, bj), (a, ai, aj))
                };
                let whose = if k == i {
                    "of this host".to_owned()
                } else {
                    format!("of host `{}`", nodes[k].name)
                };
                return Err(self.err(
                    &at(i, j),
                    format!("subnet {p} overlaps subnet {q} {whose}; subnets must be disjoint"),
                ));
            }
        }
        Ok(())
    }

    fn links(&self, nodes: &Nodes) -> Result<Vec<LinkSpec>> {
        let mut defaults = self.default_link()?;
        // The `ns2` profile also orders a link's same-instant events as ns-2 does, unless the
        // scenario says otherwise (docs/tcp-profiles.md).
        let ns2 = self.default_tcp()?.get("profile").and_then(Value::as_str) == Some("ns2");
        if ns2 && !defaults.contains_key("same_instant") {
            defaults.insert("same_instant".into(), Value::from("arrivals_first"));
        }
        let mut links: Vec<LinkSpec> = Vec::new();
        let mut taken: HashSet<String> = HashSet::new();
        for (i, t) in self.elements("link")?.iter().enumerate() {
            let path = join_index(&key("link"), i);
            let name = self.name(t, &path, |n| taken.contains(n), "link")?;
            taken.insert(name.clone());
            let from = self.node_ref(t, &path, "from", nodes)?;
            let to = self.node_ref(t, &path, "to", nodes)?;
            if from == to {
                return Err(self.err(&join(&path, "to"), "a link must join two different nodes"));
            }
            // [defaults.link], then the link's own keys over it, key by key.
            let mut merged = defaults.clone();
            merged.extend(
                (t.iter())
                    .filter(|(k, _)| !LINK_OWN_KEYS.contains(&k.as_str()))
                    .map(|(k, v)| (k.clone(), v.clone())),
            );
            let blame = |rel: KeyPath| {
                let own = matches!(rel.first(), Some(Seg::Key(k)) if t.contains_key(k));
                let base = if own || defaults.is_empty() {
                    path.clone()
                } else {
                    vec![Seg::Key("defaults".into()), Seg::Key("link".into())]
                };
                [base, rel].concat()
            };
            let mut config =
                typed_rel::<LinkConfig>(&Value::Table(merged)).map_err(|(rel, mut msg)| {
                    // An unknown key of the link table itself (not of its `queue` or `error`):
                    // the link's own keys are allowed there too.
                    if msg.starts_with("unknown field") && rel.len() == 1 {
                        msg.push_str(", `name`, `from` or `to`");
                    }
                    self.err(&blame(rel), msg)
                })?;
            self.read_traces(&mut config, &path)?;
            check_link(&config).map_err(|(rel, msg)| self.err(&blame(rel), msg))?;
            links.push(LinkSpec {
                name,
                from,
                to,
                config,
            });
        }
        Ok(links)
    }

    fn routes(
        &self,
        nodes: &Nodes,
        links: &[LinkSpec],
        link_index: &HashMap<&str, usize>,
    ) -> Result<Routes> {
        let mut routes = Routes::shortest(nodes.len(), links).map_err(|e| match e {
            RoutesError::TooDeep { node } => self.err(
                &key("link"),
                format!(
                    "node `{}` is more than {} hops from the rest of the network (a chain of \
                     links that long could not be crossed within IPv4's TTL)",
                    nodes[node].name,
                    routes::MAX_DEPTH
                ),
            ),
            RoutesError::CoreTooLarge { core } => self.err(
                &key("link"),
                format!(
                    "{core} nodes have links to two or more other nodes; routes among at most \
                     {} such nodes are computed (hosts and terminals that hang off one \
                     neighbour do not count: docs/scenario.md, \"Limits\")",
                    routes::MAX_CORE
                ),
            ),
        })?;
        for (i, t) in self.array_of_tables("route")?.iter().enumerate() {
            let path = join_index(&key("route"), i);
            self.check_keys(t, &path, ROUTE_KEYS)?;
            let node = self.node_ref(t, &path, "node", nodes)?;
            let dst = self.node_ref(t, &path, "dst", nodes)?;
            if node == dst {
                return Err(self.err(
                    &join(&path, "dst"),
                    "a route's destination must differ from its node",
                ));
            }
            let link_name = self.require::<String>(t, &path, "link")?;
            let Some(&link) = link_index.get(link_name.as_str()) else {
                return Err(self.err(
                    &join(&path, "link"),
                    unknown_name("link", &link_name, links.iter().map(|l| &l.name)),
                ));
            };
            if links[link].from != node {
                return Err(self.err(
                    &join(&path, "link"),
                    format!(
                        "link `{link_name}` starts at `{}`, not at `{}`",
                        nodes[links[link].from].name, nodes[node].name
                    ),
                ));
            }
            routes.set(node, dst, link);
        }
        Ok(routes)
    }

    fn flows(
        &self,
        nodes: &Nodes,
        links: &[LinkSpec],
        routes: &Routes,
        default_tcp: &Table,
        duration: Duration,
    ) -> Result<Vec<FlowSpec>> {
        let mut flows: Vec<FlowSpec> = Vec::new();
        let mut names: HashSet<String> = HashSet::new();
        // (from, to, src_port, dst_port) → flow index, for the duplicate check.
        let mut ends: HashMap<(usize, usize, u16, u16), usize> = HashMap::new();
        for (i, t) in self.elements("flow")?.iter().enumerate() {
            let path = join_index(&key("flow"), i);
            self.check_keys(t, &path, FLOW_KEYS)?;
            let name = match t.get("name") {
                Some(_) => self.name(t, &path, |n| names.contains(n), "flow")?,
                None => format!("flow{}", i + 1),
            };
            if !names.insert(name.clone()) {
                return Err(self.err(
                    &path,
                    format!("flow name `{name}` is used twice; names must be unique"),
                ));
            }
            let from = self.node_ref(t, &path, "from", nodes)?;
            let to = self.node_ref(t, &path, "to", nodes)?;
            for (end, k) in [(from, "from"), (to, "to")] {
                if nodes[end].kind == NodeKind::Router {
                    return Err(self.err(
                        &join(&path, k),
                        format!(
                            "`{}` is a router; flows start and end at hosts",
                            nodes[end].name
                        ),
                    ));
                }
            }
            if from == to {
                return Err(self.err(&join(&path, "to"), "a flow must join two different hosts"));
            }
            let start = self
                .get::<Duration>(t, &path, "start")?
                .unwrap_or(Duration::ZERO);
            if start >= duration {
                return Err(self.err(
                    &join(&path, "start"),
                    format!(
                        "the flow starts at {start}, at or after the end of the run ({duration})"
                    ),
                ));
            }
            let n = u32::try_from(i + 1).unwrap_or(u32::MAX);
            // 5000 + n and 40000 + n, wrapping past 65535 (so 100 000 flows between two hosts
            // still get distinct port pairs).
            let wrap = |base: u32| base + 1 + (n - 1) % (65_535 - base);
            let dst_port = self.port(t, &path, "port", wrap(5000))?;
            let src_port = self.port(t, &path, "src_port", wrap(40_000))?;
            if let Some(&other) = ends.get(&(from, to, src_port, dst_port)) {
                return Err(self.err(
                    &join(&path, "port"),
                    format!("flow `{}` already uses these hosts and ports; set another `port` or `src_port`", flows[other].name),
                ));
            }
            ends.insert((from, to, src_port, dst_port), i);
            let app = self
                .get::<AppSpec>(t, &path, "app")?
                .unwrap_or(AppSpec::Bulk {
                    bytes: None,
                    duration: None,
                });
            check_app(&app)
                .map_err(|(rel, msg)| self.err(&[join(&path, "app"), rel].concat(), msg))?;
            let tcp = self.flow_tcp(t, &path, default_tcp)?;
            let to_tcp = self.flow_to_tcp(t, &path, default_tcp)?;
            for (a, b) in [(from, to), (to, from)] {
                let Err(e) = routes::trace(routes, links, a, b) else {
                    continue;
                };
                let why = match e {
                    TraceError::NoRoute { at } if at == a => String::new(),
                    TraceError::NoRoute { at } => {
                        format!(": `{}` has no route toward it", nodes[at].name)
                    }
                    TraceError::Loop => ": the routes toward it go round in a loop".to_owned(),
                };
                return Err(self.err(
                    &join(&path, "to"),
                    format!(
                        "no route from `{}` to `{}`{why}; add a link or fix the [[route]] tables",
                        nodes[a].name, nodes[b].name
                    ),
                ));
            }
            flows.push(FlowSpec {
                name,
                from,
                to,
                start,
                src_port,
                dst_port,
                app,
                tcp,
                to_tcp,
            });
        }
        Ok(flows)
    }

    /// `[defaults.tcp]` with the flow's own `tcp` keys laid over it; an error in a key the flow
    /// sets points at the flow, otherwise at `[defaults.tcp]`.
    fn flow_tcp(&self, t: &Table, path: &[Seg], default_tcp: &Table) -> Result<TcpConfig> {
        let own_path = join(path, "tcp");
        let own = match t.get("tcp") {
            Some(v) => self.table(v, &own_path)?.clone(),
            // Most flows (all of a `count` table's copies) take the defaults as they are:
            // parse those once.
            None => {
                if let Some(c) = self.default_tcp_config.borrow().as_ref() {
                    return Ok(c.clone());
                }
                Table::new()
            }
        };
        let mut merged = default_tcp.clone();
        merged.extend(own.clone());
        let checked =
            typed_rel::<TcpConfig>(&Value::Table(merged)).and_then(|c| check_tcp(&c).map(|()| c));
        if let (Ok(c), true) = (&checked, own.is_empty()) {
            *self.default_tcp_config.borrow_mut() = Some(c.clone());
        }
        checked.map_err(|(rel, msg)| {
            let in_own = matches!(rel.first(), Some(Seg::Key(k)) if own.contains_key(k))
                || default_tcp.is_empty();
            let base = if in_own {
                own_path.clone()
            } else {
                vec![Seg::Key("defaults".into()), Seg::Key("tcp".into())]
            };
            self.err(&[base, rel].concat(), msg)
        })
    }

    /// The `to` end's settings when the flow has `to_tcp`: `[defaults.tcp]`, then the flow's
    /// `tcp`, then `to_tcp`, key by key; errors point at `to_tcp`.
    fn flow_to_tcp(
        &self,
        t: &Table,
        path: &[Seg],
        default_tcp: &Table,
    ) -> Result<Option<TcpConfig>> {
        let Some(v) = t.get("to_tcp") else {
            return Ok(None);
        };
        let own_path = join(path, "to_tcp");
        let own = self.table(v, &own_path)?;
        let mut merged = default_tcp.clone();
        if let Some(v) = t.get("tcp") {
            merged.extend(self.table(v, &join(path, "tcp"))?.clone());
        }
        merged.extend(own.clone());
        typed_rel::<TcpConfig>(&Value::Table(merged))
            .and_then(|c| check_tcp(&c).map(|()| c))
            .map(Some)
            .map_err(|(rel, msg)| self.err(&[own_path, rel].concat(), msg))
    }

    fn output(&self, links: &[LinkSpec], link_index: &HashMap<&str, usize>) -> Result<OutputSpec> {
        let path = key("output");
        let mut out = OutputSpec::default();
        let Some(t) = self.root.get("output") else {
            return Ok(out);
        };
        let t = self.table(t, &path)?;
        self.check_keys(t, &path, OUTPUT_KEYS)?;
        if let Some(interval) = self.get::<Duration>(t, &path, "interval")? {
            if interval == Duration::ZERO {
                return Err(self.err(
                    &join(&path, "interval"),
                    "the sampling interval must be above 0 (e.g. \"10ms\")",
                ));
            }
            out.interval = interval;
        }
        for (i, name) in self
            .get::<Vec<String>>(t, &path, "pcap")?
            .unwrap_or_default()
            .iter()
            .enumerate()
        {
            let Some(&link) = link_index.get(name.as_str()) else {
                return Err(self.err(
                    &join_index(&join(&path, "pcap"), i),
                    unknown_name("link", name, links.iter().map(|l| &l.name)),
                ));
            };
            if !out.pcap_links.contains(&link) {
                out.pcap_links.push(link);
            }
        }
        out.pcap_per_link = self
            .get::<bool>(t, &path, "pcap_per_link")?
            .unwrap_or(out.pcap_per_link);
        // With `pcap_per_link` each captured link names a file `<link>.pcapng`: link names
        // cannot hold a path separator (see `names`), so the file stays in the run folder.
        out.series = self.get::<bool>(t, &path, "series")?.unwrap_or(out.series);
        out.plots = self.get::<bool>(t, &path, "plots")?.unwrap_or(out.plots);
        Ok(out)
    }

    /// The run samples every flow and link each `output.interval` until `duration` (and writes
    /// a CSV row for each when `output.series`): refuse more than [`MAX_SERIES_ROWS`] rows,
    /// naming the interval (or the duration, when the interval is the default) and the size.
    fn check_sampling(
        &self,
        duration: Duration,
        output: &OutputSpec,
        flows: usize,
        links: usize,
    ) -> Result<()> {
        let interval = output.interval.as_nanos().max(1);
        let samples = u128::from(duration.as_nanos() / interval) + 1;
        // Without series files nothing is written per flow or link: only the ticks count.
        let series = if output.series { flows + links } else { 1 } as u128;
        let rows = samples * series;
        if rows <= u128::from(MAX_SERIES_ROWS) {
            return Ok(());
        }
        // flows.csv rows are about 100 bytes, links.csv rows about 40 (docs/outputs.md).
        let bytes = samples * (flows as u128 * 100 + links as u128 * 40);
        let needed = u128::from(duration.as_nanos()) * series / u128::from(MAX_SERIES_ROWS) + 1;
        let needed = Duration::from_nanos(round_up_nice(u64::try_from(needed).unwrap_or(u64::MAX)));
        let written = self
            .root
            .get("output")
            .and_then(|o| o.get("interval"))
            .is_some();
        let at = if written {
            vec![Seg::Key("output".into()), Seg::Key("interval".into())]
        } else {
            key("duration")
        };
        let what = if output.series {
            format!(
                "sampling {} and {} every {} for {duration} makes {rows} rows (about {} of \
                 CSV)",
                count(flows, "flow"),
                count(links, "link"),
                output.interval,
                human_bytes(bytes)
            )
        } else {
            format!(
                "sampling every {} for {duration} makes {rows} samples",
                output.interval
            )
        };
        Err(self.err(
            &at,
            format!(
                "{what}; at most {MAX_SERIES_ROWS} are accepted: set `output.interval` to \
                 {needed} or more, or shorten `duration`"
            ),
        ))
    }

    // --- helpers -------------------------------------------------------------------------

    fn err(&self, path: &[Seg], message: impl Into<String>) -> ScenarioError {
        let mut message = message.into();
        // An element made by `count`: point at the table as written, and say which copy.
        if let [Seg::Key(k), Seg::Index(i), rest @ ..] = path {
            if let Some(o) = self
                .origins
                .borrow()
                .get(k.as_str())
                .and_then(|o| o.get(*i))
            {
                let mut at = vec![Seg::Key(k.clone()), Seg::Index(o.index)];
                at.extend_from_slice(rest);
                if let Some(copy) = o.copy {
                    message.push_str(&format!(" (in copy i = {copy} of this `count` table)"));
                }
                return self.src.error(self.root, &at, message);
            }
        }
        self.src.error(self.root, path, message)
    }

    /// The `[[k]]` tables with every `count` table copied (`build::expand`); errors inside
    /// the copies are then located at the table as written ([`Builder::err`]).
    fn elements(&self, k: &'static str) -> Result<Vec<Cow<'s, Table>>> {
        let written = self.array_of_tables(k)?;
        let max = MAX_ELEMENTS
            .iter()
            .find(|(name, _)| *name == k)
            .map_or(usize::MAX, |&(_, max)| max);
        let expanded = expand::expand(&written, max).map_err(|e| {
            let mut path = join_index(&key(k), e.index);
            path.extend(
                e.key
                    .split('.')
                    .filter(|s| !s.is_empty())
                    .map(|s| Seg::Key(s.into())),
            );
            self.err(&path, e.message)
        })?;
        self.origins.borrow_mut().insert(k, expanded.origins);
        Ok(expanded.tables)
    }

    fn check_keys(&self, t: &Table, path: &[Seg], allowed: &[&str]) -> Result<()> {
        let Some(unknown) = t.keys().find(|k| !allowed.contains(&k.as_str())) else {
            return Ok(());
        };
        let expected: Vec<String> = allowed.iter().map(|k| format!("`{k}`")).collect();
        Err(self.err(
            &join(path, unknown),
            format!(
                "unknown key `{unknown}`, expected one of {}",
                expected.join(", ")
            ),
        ))
    }

    fn typed<T: DeserializeOwned>(&self, value: &Value, path: &[Seg]) -> Result<T> {
        typed_rel(value).map_err(|(rel, msg)| self.err(&[path, &rel].concat(), msg))
    }

    fn get<T: DeserializeOwned>(&self, t: &Table, path: &[Seg], k: &str) -> Result<Option<T>> {
        t.get(k).map(|v| self.typed(v, &join(path, k))).transpose()
    }

    fn require<T: DeserializeOwned>(&self, t: &Table, path: &[Seg], k: &str) -> Result<T> {
        // The key path names the missing key; its line is that of the enclosing table.
        self.get(t, path, k)?
            .ok_or_else(|| self.err(&join(path, k), format!("missing required key `{k}`")))
    }

    fn table<'v>(&self, v: &'v Value, path: &[Seg]) -> Result<&'v Table> {
        v.as_table()
            .ok_or_else(|| self.err(path, format!("expected a table, got {}", type_name(v))))
    }

    fn array_of_tables(&self, k: &str) -> Result<Vec<&'s Table>> {
        let Some(v) = self.root.get(k) else {
            return Ok(Vec::new());
        };
        let expected = || format!("expected an array of tables, written [[{k}]]");
        let items = v
            .as_array()
            .ok_or_else(|| self.err(&key(k), format!("{}, got {}", expected(), type_name(v))))?;
        if let Some(msg) = too_many(k, items.len()) {
            return Err(self.err(&key(k), msg));
        }
        let tables = items.iter().enumerate().map(|(i, item)| {
            item.as_table().ok_or_else(|| {
                self.err(
                    &join_index(&key(k), i),
                    format!("{}, got {}", expected(), type_name(item)),
                )
            })
        });
        tables.collect()
    }

    /// The element's required `name`: well formed and not `taken`.
    fn name(
        &self,
        t: &Table,
        path: &[Seg],
        taken: impl Fn(&str) -> bool,
        what: &str,
    ) -> Result<String> {
        let name = self.require::<String>(t, path, "name")?;
        if let Some(problem) = names::element_name_problem(&name) {
            return Err(self.err(&join(path, "name"), problem));
        }
        if taken(&name) {
            return Err(self.err(
                &join(path, "name"),
                format!("{what} name `{name}` is used twice; names must be unique"),
            ));
        }
        Ok(name)
    }

    /// A required key naming a node; returns the node's index.
    fn node_ref(&self, t: &Table, path: &[Seg], k: &str, nodes: &Nodes) -> Result<usize> {
        let name = self.require::<String>(t, path, k)?;
        nodes.index.get(&name).copied().ok_or_else(|| {
            self.err(
                &join(path, k),
                unknown_name("node", &name, nodes.iter().map(|n| &n.name)),
            )
        })
    }

    fn port(&self, t: &Table, path: &[Seg], k: &str, default: u32) -> Result<u16> {
        let port = match self.get::<u16>(t, path, k)? {
            Some(p) => p,
            None => u16::try_from(default).map_err(|_| {
                self.err(
                    path,
                    format!("too many flows for a default `{k}`; set it explicitly"),
                )
            })?,
        };
        if port == 0 {
            return Err(self.err(
                &join(path, k),
                "port 0 is not a usable port: expected 1 to 65535",
            ));
        }
        Ok(port)
    }
}

/// Most time-series rows a run may sample: (duration / `output.interval` + 1) × (flows + links).
/// 10⁷ rows are about 1 GB of `flows.csv`; the default scenario samples 54 009.
pub const MAX_SERIES_ROWS: u64 = 10_000_000;

/// `ns` rounded up to whole milliseconds (from 1 ms), microseconds (from 1 µs) or nanoseconds.
fn round_up_nice(ns: u64) -> u64 {
    let unit = match ns {
        1_000_000.. => 1_000_000,
        1_000.. => 1_000,
        _ => 1,
    };
    ns.div_ceil(unit).saturating_mul(unit)
}

/// "1 flow", "2 flows".
fn count(n: usize, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}

/// `bytes` as "12 MB", "3.4 GB" (powers of 1000).
fn human_bytes(bytes: u128) -> String {
    let units = ["B", "kB", "MB", "GB", "TB", "PB", "EB"];
    let mut v = bytes as f64;
    let mut i = 0;
    while v >= 1000.0 && i + 1 < units.len() {
        v /= 1000.0;
        i += 1;
    }
    if i == 0 || v >= 100.0 {
        format!("{v:.0} {}", units[i])
    } else {
        format!("{v:.1} {}", units[i])
    }
}

/// Most nodes a scenario may have: routes take memory linear in the nodes (see
/// `routes::Routes`), about 60 bytes each once loaded.
pub const MAX_NODES: usize = 1 << 20;

/// Most elements of each array of tables, after `count` copies are made. Flows: about 10 KB of
/// memory each once loaded (each holds its full TCP configuration, twice with
/// `Loaded::resolved`), so 100 000 flows take about 1 GB.
pub const MAX_ELEMENTS: [(&str, usize); 5] = [
    ("node", MAX_NODES),
    ("link", 2 * MAX_NODES),
    ("route", 100_000),
    ("flow", 100_000),
    ("dama", 1024),
];

/// The nodes, and their indices by name (so that references resolve in constant time).
struct Nodes {
    specs: Vec<NodeSpec>,
    index: HashMap<String, usize>,
}

impl std::ops::Deref for Nodes {
    type Target = [NodeSpec];
    fn deref(&self) -> &[NodeSpec] {
        &self.specs
    }
}

/// Why `len` elements are too many for the array of tables `k` ([`MAX_ELEMENTS`]), if they are.
pub(crate) fn too_many(k: &str, len: usize) -> Option<String> {
    let &(_, max) = MAX_ELEMENTS.iter().find(|(name, _)| *name == k)?;
    (len > max).then(|| {
        format!("{len} [[{k}]] tables; at most {max} are accepted (docs/scenario.md, \"Limits\")")
    })
}

/// Names to indices; the first of equal names wins (names are unique once checked).
fn index_by_name<'n>(names: impl Iterator<Item = &'n str>) -> HashMap<&'n str, usize> {
    let mut index = HashMap::new();
    for (i, n) in names.enumerate() {
        index.entry(n).or_insert(i);
    }
    index
}

fn key(k: &str) -> KeyPath {
    vec![Seg::Key(k.to_owned())]
}

/// Deserialize `value` as `T`; on failure the path inside `value` and the message.
fn typed_rel<T: DeserializeOwned>(value: &Value) -> std::result::Result<T, RelError> {
    serde_path_to_error::deserialize(value.clone()).map_err(
        |e: serde_path_to_error::Error<toml::de::Error>| {
            let rel = e
                .path()
                .iter()
                .filter_map(|s| match s {
                    serde_path_to_error::Segment::Seq { index } => Some(Seg::Index(*index)),
                    serde_path_to_error::Segment::Map { key } => Some(Seg::Key(key.clone())),
                    _ => None,
                })
                .collect();
            let mut rel: KeyPath = rel;
            let msg = e.inner().message().trim().to_owned();
            // Inside an internally tagged enum (a link's `error`, a middlebox, a chain's
            // elements) serde loses the path at the enum: point at the unknown key itself, in
            // the first table below that holds it.
            if let Some(word) = msg
                .strip_prefix("unknown field `")
                .and_then(|rest| rest.split('`').next())
            {
                let below = rel.iter().try_fold(value, |v, seg| match seg {
                    Seg::Key(k) => v.get(k.as_str()),
                    Seg::Index(n) => v.get(*n),
                });
                if let Some(found) = below.and_then(|v| path_to_key(v, word)) {
                    rel.extend(found);
                }
            }
            (rel, msg)
        },
    )
}

/// The path from `v` to the first key `word` in it (depth first, in order), ending with `word`.
fn path_to_key(v: &Value, word: &str) -> Option<KeyPath> {
    match v {
        Value::Table(t) if t.contains_key(word) => Some(vec![Seg::Key(word.to_owned())]),
        Value::Table(t) => t.iter().find_map(|(k, v)| {
            let mut p = path_to_key(v, word)?;
            p.insert(0, Seg::Key(k.clone()));
            Some(p)
        }),
        Value::Array(items) => items.iter().enumerate().find_map(|(i, v)| {
            let mut p = path_to_key(v, word)?;
            p.insert(0, Seg::Index(i));
            Some(p)
        }),
        _ => None,
    }
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::String(_) => "a string",
        Value::Integer(_) => "an integer",
        Value::Float(_) => "a float",
        Value::Boolean(_) => "a boolean",
        Value::Datetime(_) => "a datetime",
        Value::Array(_) => "an array",
        Value::Table(_) => "a table",
    }
}

fn unknown_name<'n>(what: &str, name: &str, known: impl Iterator<Item = &'n String>) -> String {
    let known: Vec<&str> = known.map(String::as_str).collect();
    format!(
        "unknown {what} `{name}`; the {what}s are: {}",
        if known.is_empty() {
            "none".into()
        } else {
            known.join(", ")
        }
    )
}

/// Why `name` cannot be a network namespace name (`ip netns` keeps them as file names), if it
/// cannot.
fn netns_problem(name: &str) -> Option<String> {
    let ok = (1..=64).contains(&name.len())
        && !name.starts_with(['.', '-'])
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_.-".contains(&b));
    (!ok).then(|| {
        format!(
            "{name:?} is not a namespace name: 1 to 64 letters, digits, `_`, `.` or `-`, \
             not starting with `.` or `-`"
        )
    })
}

/// `10.<index / 256>.<index % 256>.1` for the first 65 536 nodes, then the same with the last
/// byte 2, 3, … 254 (so the first addresses never change as a scenario grows).
fn auto_address(index: usize) -> Option<Ipv4Addr> {
    let block = index / 65_536;
    let last = u8::try_from(block + 1).ok().filter(|&b| b < 255)?;
    let within = index % 65_536;
    Some(Ipv4Addr::new(
        10,
        (within / 256) as u8,
        (within % 256) as u8,
        last,
    ))
}

/// Semantic checks of a TCP config, by [`TcpConfig::validate`]; the path is relative to its
/// `tcp` table.
fn check_tcp(c: &TcpConfig) -> std::result::Result<(), RelError> {
    c.validate().map_err(rel_error)
}

/// Semantic checks of a link config, by [`LinkConfig::validate`] (owned by the link model, so
/// the rules live beside the code that relies on them); the path is relative to the `[[link]]`
/// table.
fn check_link(c: &LinkConfig) -> std::result::Result<(), RelError> {
    c.validate().map_err(rel_error)
}

/// A config type's `"key.path: message"` as a path relative to its table and the message (a
/// message with no key in front stays at the table).
fn rel_error(e: String) -> RelError {
    match e.split_once(": ") {
        Some((k, msg)) if !k.is_empty() && !k.contains(' ') => (
            k.split('.')
                .map(|s| match s.parse() {
                    Ok(n) => Seg::Index(n),
                    Err(_) => Seg::Key(s.to_owned()),
                })
                .collect(),
            msg.to_owned(),
        ),
        _ => (Vec::new(), e),
    }
}

/// Semantic checks of an application; the path is relative to the `app` table.
fn check_app(app: &AppSpec) -> std::result::Result<(), RelError> {
    match app {
        AppSpec::Bulk {
            bytes: Some(_),
            duration: Some(_),
        } => Err((
            key("duration"),
            "a bulk app takes `bytes` or `duration`, not both".into(),
        )),
        AppSpec::Bulk { bytes: Some(b), .. } if b.bytes() == 0 => {
            Err((key("bytes"), "bytes must be at least 1".into()))
        }
        AppSpec::Bulk {
            duration: Some(Duration::ZERO),
            ..
        } => Err((
            key("duration"),
            "duration must be above 0; leave it out to send until the end".into(),
        )),
        AppSpec::RequestResponse { request, .. } if request.bytes() == 0 => {
            Err((key("request"), "request must be at least 1 byte".into()))
        }
        AppSpec::RequestResponse { response, .. } if response.bytes() == 0 => {
            Err((key("response"), "response must be at least 1 byte".into()))
        }
        AppSpec::RequestResponse { count: 0, .. } => {
            Err((key("count"), "count must be at least 1".into()))
        }
        AppSpec::Udp { rate, .. } if rate.bps() == 0 => {
            Err((key("rate"), "rate must be above 0".into()))
        }
        AppSpec::Udp { packet_size, .. } if !(16..=65_507).contains(&packet_size.bytes()) => Err((
            key("packet_size"),
            format!(
                "packet_size must be 16–65507 bytes (a UDP payload in one IPv4 datagram, with room for the 16-byte stamp), not {}",
                packet_size.bytes()
            ),
        )),
        AppSpec::Udp {
            group: Some(g), ..
        } if !igmp::is_multicast(*g) || igmp::is_link_local_multicast(*g) => Err((
            key("group"),
            format!(
                "{g} is not a group to send to: use a multicast address in \
                 224.0.1.0–239.255.255.255"
            ),
        )),
        AppSpec::Udp {
            duration: Some(Duration::ZERO),
            ..
        } => Err((
            key("duration"),
            "duration must be above 0; leave it out to send until the end".into(),
        )),
        _ => Ok(()),
    }
}
