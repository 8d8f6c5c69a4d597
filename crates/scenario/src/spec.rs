//! The typed, validated scenario: what the simulator and the emulator build from.
//!
//! Every name in the file has become an index here (`LinkSpec::from` is an index into
//! `Scenario::nodes`), every default is filled in, and every cross-reference has been checked,
//! so a driver can index without checking.

use std::collections::BTreeMap;
use std::net::Ipv4Addr;

use satpep_proto::dama::DamaConfig;
use satpep_proto::link::LinkConfig;
use satpep_proto::middlebox::MiddleboxConfig;
use satpep_proto::net::igmp::IgmpTimers;
use satpep_proto::net::Ipv4Prefix;
use satpep_proto::tcp::TcpConfig;
use satpep_proto::{Bitrate, ByteSize, Duration};
use serde::{Deserialize, Serialize};

use crate::routes::Routes;
use toml::{Table, Value};

/// A loaded, validated scenario.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Scenario {
    /// Name for reports and output folders. Default: the file stem (`default` for the built-in).
    pub name: String,
    /// Seed of every random generator in the run. Default: 1.
    pub seed: u64,
    /// Simulated time limit. Default: 60 s.
    pub duration: Duration,
    /// End early when every flow's application has finished. Default: true.
    pub stop_when_done: bool,
    /// Hosts and routers, in file order; their index is their id.
    pub nodes: Vec<NodeSpec>,
    /// Simplex links, in file order; their index is their id.
    pub links: Vec<LinkSpec>,
    /// TCP flows, in file order.
    pub flows: Vec<FlowSpec>,
    /// DVB-RCS return links with DAMA (`[[dama]]`), in file order.
    pub dama: Vec<DamaSpec>,
    /// What to record.
    pub output: OutputSpec,
    /// For each node, the outgoing link toward each destination node
    /// (`routes.next(node, dst)`): fewest hops, ties broken by the lowest link index, then
    /// `[[route]]` overrides. Held in memory linear in the number of nodes (see
    /// [`Routes`]); not serialized (run.json writes the `[[route]]` overrides).
    #[serde(skip)]
    pub routes: Routes,
}

/// What a node does with packets.
#[derive(Clone, Copy, Debug, Default, Deserialize, Eq, Hash, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum NodeKind {
    /// Runs TCP endpoints; can be a flow's end. It also forwards packets not addressed to it.
    #[default]
    Host,
    /// Forwards only; cannot terminate flows.
    Router,
}

/// One node of the topology.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct NodeSpec {
    /// Unique name.
    pub name: String,
    /// Host or router. Default: host.
    pub kind: NodeKind,
    /// IPv4 address, unique. Default: `10.0.<index>.1` (for index ≥ 256: `10.<index/256>.<index%256>.1`).
    pub address: Ipv4Addr,
    /// A mechanism in this router's forwarding path. Default: none (routers only).
    pub middlebox: Option<MiddleboxConfig>,
    /// Networks behind this host (hosts only): every node routes packets for them toward the
    /// host, as it routes the host's own address (`[[route]]` overrides included); longest
    /// prefix after exact addresses. Pairwise disjoint across the scenario, and none holds
    /// another node's address. In `sim` a host drops what arrives for them (`no_route`); in
    /// `emu` they reach the host's namespace, which forwards them. Default: none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub subnets: Vec<Ipv4Prefix>,
    /// `emu` only: an existing network namespace to attach this host to instead of creating
    /// one (hosts only; one host per namespace). Ignored by `sim`. Default: none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub netns: Option<String>,
    /// IGMP and multicast forwarding (routers only). Default: none (packets to a group are
    /// dropped as unroutable).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub multicast: Option<MulticastSpec>,
    /// Multicast groups this host joins and leaves (hosts only). Default: none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<GroupSpec>,
}

/// A router's multicast (`multicast = { … }`): where it queries and forwards, and where it
/// reports upstream. Links are named as in the file; the loader checks that they start or
/// end at this router.
#[derive(Clone, Debug, Deserialize, PartialEq, Serialize)]
#[serde(deny_unknown_fields)]
pub struct MulticastSpec {
    /// Links leaving this router toward receivers: IGMP querier there; group traffic is
    /// forwarded on each one with members.
    pub downstream: Vec<String>,
    /// A link leaving this router on which it reports its receivers' groups as an IGMP proxy
    /// (RFC 4605), e.g. a terminal's terrestrial return link. Default: none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upstream: Option<String>,
    /// Incoming link → downstream link: reports arriving over the first count for the second
    /// (RFC 3077 unidirectional link routing: joins from a satellite's receivers come back
    /// over the terrestrial path). By default a downstream link's reverse link (the link from
    /// its far end back to this router) carries its reports.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub reports_via: BTreeMap<String, String>,
    /// IGMP timers (RFC 2236 §8). Default: the RFC's values.
    #[serde(default)]
    pub igmp: IgmpTimers,
    /// The router stands for a broadcast medium such as a satellite beam: every multicast
    /// packet, IGMP included, is repeated unchanged on every downstream link (every receiver
    /// in the footprint hears the channel and filters for itself); no querier, no upstream.
    /// Default false.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub broadcast: bool,
}

/// One stay of a host in a multicast group.
#[derive(Clone, Debug, Deserialize, PartialEq, Serialize)]
#[serde(deny_unknown_fields)]
pub struct GroupSpec {
    /// The group: a multicast address outside 224.0.0.0/24.
    pub group: Ipv4Addr,
    /// When the host joins. Default 0.
    #[serde(default)]
    pub join: Duration,
    /// When it leaves. Default: never.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub leave: Option<Duration>,
}

/// One simplex link.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LinkSpec {
    /// Unique name.
    pub name: String,
    /// Index of the sending node.
    pub from: usize,
    /// Index of the receiving node.
    pub to: usize,
    /// Rate, delay, queue and error model.
    pub config: LinkConfig,
}

/// One DVB-RCS return link with DAMA: an MF-TDMA carrier shared by `terminals`, toward
/// `gateway`.
///
/// The loader gives every terminal a return interface: a [`LinkSpec`] named
/// `<dama name>.<terminal name>` from the terminal to the gateway (rate = carrier, delay =
/// `config.delay`), appended after the `[[link]]`s, so routes and `[[route]]` work as for any
/// link; the simulator sends what enters those links through one shared DAMA node instead.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DamaSpec {
    /// Unique name (among DAMA links).
    pub name: String,
    /// Index of the gateway node (where the NCC is and the carrier ends).
    pub gateway: usize,
    /// Indices of the terminal nodes; terminal i is the DAMA node's input port i.
    pub terminals: Vec<usize>,
    /// `links[i]`: index of terminal i's return interface in `Scenario::links`.
    pub links: Vec<usize>,
    /// Frame structure, delays, terminal settings and NCC choices.
    pub config: DamaConfig,
}

/// One TCP connection and the application on it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FlowSpec {
    /// Unique name. Default: `flow<i>`, i counting flows from 1.
    pub name: String,
    /// Index of the node that opens the connection (bulk: the data sender; request/response: the
    /// client).
    pub from: usize,
    /// Index of the node that listens.
    pub to: usize,
    /// When `from` opens the connection. Default: 0 s.
    pub start: Duration,
    /// Source (ephemeral) port. Default: 40000 + i.
    pub src_port: u16,
    /// Destination (listening) port. Default: 5000 + i.
    pub dst_port: u16,
    /// What the application does.
    pub app: AppSpec,
    /// TCP settings of both ends: `[defaults.tcp]` merged field by field under the flow's `tcp`.
    pub tcp: TcpConfig,
    /// TCP settings of the `to` end when they differ (`tcp` with the flow's `to_tcp` keys laid
    /// over it), e.g. a receiver that offers no window scaling. Default: none (`tcp` for both).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub to_tcp: Option<TcpConfig>,
}

/// The application driving a flow.
#[derive(Clone, Debug, Deserialize, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum AppSpec {
    /// `from` sends as fast as TCP allows: `bytes` in total, or for `duration`, or (neither)
    /// until the end of the run. Giving both is an error.
    Bulk {
        /// Total bytes to send.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        bytes: Option<ByteSize>,
        /// How long to keep sending, from the flow's start.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        duration: Option<Duration>,
    },
    /// `from` sends `request` bytes, `to` answers with `response` bytes; `count` times, waiting
    /// `think` after each response.
    RequestResponse {
        /// Request size, at least 1 byte.
        request: ByteSize,
        /// Response size, at least 1 byte.
        response: ByteSize,
        /// Number of exchanges, at least 1. Default: 1.
        #[serde(default = "one")]
        count: u32,
        /// Pause between a response and the next request. Default: 0 s.
        #[serde(default)]
        think: Duration,
    },
    /// `from` sends UDP datagrams of `packet_size` payload bytes at a constant `rate` (payload
    /// bits, as iperf3's `-b`) from `start`, for `duration` or until the end of the run; `to`
    /// counts them, the lost and the reordered ones, and the RFC 3550 jitter. No TCP: the
    /// flow's `tcp` keys do not apply.
    Udp {
        /// Payload bit rate, above 0.
        rate: Bitrate,
        /// UDP payload bytes per datagram, 16–65 507 (the first 16 carry the send time and the
        /// sequence number). Default: 1472 (a 1500-byte IPv4 packet).
        #[serde(default = "udp_packet_size")]
        packet_size: ByteSize,
        /// How long to send, from the flow's start.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        duration: Option<Duration>,
        /// Send to this multicast group instead of `to` (IP multicast over routers with
        /// `multicast`; hosts count what they receive through their `groups`, and `to`'s sink
        /// gets nothing). Default: none.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        group: Option<Ipv4Addr>,
    },
}

fn udp_packet_size() -> ByteSize {
    ByteSize(1472)
}

fn one() -> u32 {
    1
}

/// What the run records.
#[derive(Clone, Debug, Eq, PartialEq, Serialize)]
pub struct OutputSpec {
    /// Time-series sampling interval, > 0. Default: 10 ms.
    pub interval: Duration,
    /// Indices of the links whose delivered packets are captured, in the order the scenario
    /// lists them (the order of the pcapng interfaces). Default: none.
    pub pcap_links: Vec<usize>,
    /// One file `<link>.pcapng` per captured link instead of one `trace.pcapng` with an
    /// interface per link. Default: false.
    pub pcap_per_link: bool,
    /// Write `flows.csv` / `links.csv`. Default: true.
    pub series: bool,
    /// Render plots after the run. Default: false.
    pub plots: bool,
}

impl Default for OutputSpec {
    fn default() -> Self {
        Self {
            interval: Duration::from_millis(10),
            pcap_links: Vec::new(),
            pcap_per_link: false,
            series: true,
            plots: false,
        }
    }
}

/// One combination of a `[sweep]`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SweepPoint {
    /// `(key, value)` pairs applied to the base scenario, in `[sweep]` order; values as written
    /// (strings bare, other values in TOML syntax).
    pub assignments: Vec<(String, String)>,
    /// The base scenario with these assignments applied, validated.
    pub scenario: Scenario,
}

impl Scenario {
    /// The scenario written back in the file format with every default spelled out, for
    /// `run.json` and for re-running: loading `toml::to_string(&s.to_table())` gives `s` again.
    ///
    /// `[defaults.tcp]` and `[defaults.link]` are the most common flow TCP and link configs,
    /// every key spelled out, and each flow and link holds what differs from them; only the
    /// routes that differ from the automatic ones are written as `[[route]]`.
    pub fn to_table(&self) -> Table {
        let mut t = Table::new();
        t.insert("name".into(), self.name.clone().into());
        t.insert("seed".into(), integer(self.seed));
        t.insert("duration".into(), self.duration.to_string().into());
        t.insert("stop_when_done".into(), self.stop_when_done.into());
        let node_name = |i: usize| Value::from(self.nodes.get(i).map_or("", |n| n.name.as_str()));
        let nodes = self.nodes.iter().map(|n| {
            let mut e = Table::new();
            e.insert("name".into(), n.name.clone().into());
            e.insert("kind".into(), to_value(&n.kind));
            e.insert("address".into(), n.address.to_string().into());
            if let Some(mb) = &n.middlebox {
                e.insert("middlebox".into(), to_value(mb));
            }
            if !n.subnets.is_empty() {
                let s = n.subnets.iter().map(|p| Value::from(p.to_string()));
                e.insert("subnets".into(), Value::Array(s.collect()));
            }
            if let Some(ns) = &n.netns {
                e.insert("netns".into(), ns.clone().into());
            }
            if let Some(mc) = &n.multicast {
                e.insert("multicast".into(), to_value(mc));
            }
            if !n.groups.is_empty() {
                e.insert("groups".into(), to_value(&n.groups));
            }
            Value::Table(e)
        });
        t.insert("node".into(), Value::Array(nodes.collect()));
        let mut generated = vec![false; self.links.len()];
        for &l in self.dama.iter().flat_map(|d| &d.links) {
            if let Some(g) = generated.get_mut(l) {
                *g = true;
            }
        }
        // The most common link config, every key spelled out, becomes `[defaults.link]`, and
        // each link writes only the keys where it differs (400 000 access links of a dumbbell
        // write their name and ends, not 600 bytes each); the same for flows' `tcp`.
        let written = || {
            (self.links.iter().enumerate())
                .filter(|&(i, _)| !generated[i])
                .map(|(_, l)| &l.config)
        };
        let link_defaults = common_defaults(written);
        let tcp_defaults = common_defaults(|| self.flows.iter().map(|f| &f.tcp));
        let mut defaults = Table::new();
        for (k, d) in [("tcp", &tcp_defaults), ("link", &link_defaults)] {
            if !d.is_empty() {
                defaults.insert(k.into(), Value::Table(d.clone()));
            }
        }
        if !defaults.is_empty() {
            t.insert("defaults".into(), Value::Table(defaults));
        }
        let link_differs = |v: Value| differs(&link_defaults, v);
        let tcp_differs = |v: Value| differs(&tcp_defaults, v);
        let links = self
            .links
            .iter()
            .enumerate()
            .filter(|&(i, _)| !generated[i])
            .map(|(_, l)| {
                let mut e = Table::new();
                e.insert("name".into(), l.name.clone().into());
                e.insert("from".into(), node_name(l.from));
                e.insert("to".into(), node_name(l.to));
                if let Some(Value::Table(cfg)) = link_differs(to_value(&l.config)) {
                    e.extend(cfg);
                }
                Value::Table(e)
            });
        t.insert("link".into(), Value::Array(links.collect()));
        if !self.dama.is_empty() {
            let dama = self.dama.iter().map(|d| {
                let mut e = Table::new();
                e.insert("name".into(), d.name.clone().into());
                e.insert("gateway".into(), node_name(d.gateway));
                e.insert(
                    "terminals".into(),
                    Value::Array(d.terminals.iter().map(|&n| node_name(n)).collect()),
                );
                if let Value::Table(cfg) = to_value(&d.config) {
                    e.extend(cfg);
                }
                Value::Table(e)
            });
            t.insert("dama".into(), Value::Array(dama.collect()));
        }
        let mut routes = Vec::new();
        for (n, d, link) in self.routes.overrides() {
            let mut e = Table::new();
            e.insert("node".into(), node_name(n));
            e.insert("dst".into(), node_name(d));
            e.insert(
                "link".into(),
                self.links.get(link).map_or("", |l| l.name.as_str()).into(),
            );
            routes.push(Value::Table(e));
        }
        if !routes.is_empty() {
            t.insert("route".into(), Value::Array(routes));
        }
        let flows = self.flows.iter().map(|f| {
            let mut e = Table::new();
            e.insert("name".into(), f.name.clone().into());
            e.insert("from".into(), node_name(f.from));
            e.insert("to".into(), node_name(f.to));
            e.insert("start".into(), f.start.to_string().into());
            e.insert("port".into(), i64::from(f.dst_port).into());
            e.insert("src_port".into(), i64::from(f.src_port).into());
            e.insert("app".into(), to_value(&f.app));
            if let Some(tcp) = tcp_differs(to_value(&f.tcp)) {
                e.insert("tcp".into(), tcp);
            }
            if let Some(to_tcp) = &f.to_tcp {
                e.insert("to_tcp".into(), to_value(to_tcp));
            }
            Value::Table(e)
        });
        t.insert("flow".into(), Value::Array(flows.collect()));
        let mut out = Table::new();
        out.insert("interval".into(), self.output.interval.to_string().into());
        let pcap = self
            .output
            .pcap_links
            .iter()
            .map(|&i| self.links.get(i).map_or("", |l| l.name.as_str()).into());
        out.insert("pcap".into(), Value::Array(pcap.collect()));
        out.insert("pcap_per_link".into(), self.output.pcap_per_link.into());
        out.insert("series".into(), self.output.series.into());
        out.insert("plots".into(), self.output.plots.into());
        t.insert("output".into(), Value::Table(out));
        t
    }
}

/// The value that more than half of `items` equal, if one does (else some value of them):
/// Boyer–Moore majority vote, one pass, no hashing.
fn majority<'t, T: PartialEq + 't>(items: impl Iterator<Item = &'t T>) -> Option<&'t T> {
    let mut candidate = None;
    let mut count = 0usize;
    for x in items {
        if count == 0 {
            candidate = Some(x);
            count = 1;
        } else if candidate == Some(x) {
            count += 1;
        } else {
            count -= 1;
        }
    }
    candidate
}

/// The most common of `items` ([`majority`]) as a table, without the keys that some item does
/// not write (an optional key left out): a default cannot be unset, so such a key must stay
/// with the items that have it.
fn common_defaults<'t, T, I>(items: impl Fn() -> I) -> Table
where
    T: PartialEq + Serialize + 't,
    I: Iterator<Item = &'t T>,
{
    let Some(Value::Table(mut d)) = majority(items()).map(to_value) else {
        return Table::new();
    };
    for item in items() {
        if let Value::Table(t) = to_value(item) {
            d.retain(|k, _| t.contains_key(k));
        }
    }
    d
}

/// The keys of table `v` whose values differ from `defaults` (`None` when none do).
fn differs(defaults: &Table, v: Value) -> Option<Value> {
    let Value::Table(full) = v else {
        return Some(v);
    };
    let own: Table = (full.into_iter())
        .filter(|(k, v)| defaults.get(k) != Some(v))
        .collect();
    (!own.is_empty()).then_some(Value::Table(own))
}

/// A u64 as a TOML integer; TOML integers are i64, so larger values become strings.
fn integer(v: u64) -> Value {
    i64::try_from(v).map_or_else(|_| Value::String(v.to_string()), Value::Integer)
}

/// Serialize a config struct to a TOML value. The types here and in satpep-proto serialize to
/// tables of strings, numbers and booleans, which TOML always represents.
fn to_value(v: &impl Serialize) -> Value {
    Value::try_from(v).unwrap_or_else(|e| Value::String(format!("<unserializable: {e}>")))
}
