//! The simulation: topology built from a scenario, the event loop, sampling and the summary.

use std::collections::BTreeMap;
use std::io;
use std::net::Ipv4Addr;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use satpep_output::{
    FlowSample, FlowSummary, GroupSummary, LegSummary, LinkSample, LinkSummary, MiddleboxSummary,
    MulticastRouterSummary, RunStatus, SeriesWriter, Summary, UdpSample, UdpSeriesWriter,
    UdpSummary,
};
use satpep_proto::dama::DamaLink;
use satpep_proto::link::{Link, LinkStats};
use satpep_proto::middlebox::Middlebox;
use satpep_proto::rand::Rng;
use satpep_proto::tcp::{TcpConfig, TcpEndpoint};
use satpep_proto::{DropReason, Dropped, Duration, Instant, Node, Packet, PortId, Transmit};
use satpep_scenario::{AppSpec, NodeKind, Scenario};

use crate::apps::apps_for;
use crate::capture::Captures;
use crate::engine::{Event, EventQueue, NodeId};
use satpep_proto::net::host::UdpEnd;
use satpep_proto::net::igmp::IgmpTimers;
use satpep_proto::net::multicast::{GroupMembership, HostGroups, MulticastPorts, MulticastRouter};
use satpep_proto::net::{CbrSource, ExternalHost, Host, Role, Router, UdpSink, UdpSinkStats};

/// Give routers with `multicast` their IGMP querier, proxy and forwarding, in their own port
/// numbers, and hosts with `groups` their schedule. Link names were checked by the loader.
fn multicast_setup(
    scenario: &Scenario,
    nodes: &mut [SimNode],
    link_port: &[PortId],
    link_node: &[NodeId],
    wires: &[Vec<(NodeId, PortId)>],
    dama_of_link: &[Option<(usize, usize)>],
) {
    let links = &scenario.links;
    let by_name = |name: &str| links.iter().position(|l| l.name == name);
    // The arrival port of link l at its far end (DAMA return links share one node: none).
    let in_port = |l: usize| (dama_of_link[l].is_none()).then(|| wires[link_node[l]][0].1);
    for (i, spec) in scenario.nodes.iter().enumerate() {
        if let (Some(mc), SimNode::Router(r)) = (&spec.multicast, &mut nodes[i]) {
            let downstream: Vec<usize> = mc.downstream.iter().filter_map(|n| by_name(n)).collect();
            let n_in = (0..links.len())
                .filter(|&l| links[l].to == i)
                .filter_map(in_port)
                .map(|p| usize::from(p.0) + 1)
                .max()
                .unwrap_or(0);
            let mut report_port = vec![None; n_in];
            let mut back_port = vec![None; n_in];
            for (l, link) in links.iter().enumerate() {
                let Some(p) = in_port(l).filter(|_| link.to == i) else {
                    continue;
                };
                // The first link back to the neighbour this one comes from.
                let back =
                    (0..links.len()).find(|&b| links[b].from == i && links[b].to == link.from);
                back_port[usize::from(p.0)] = back.map(|b| link_port[b]);
                if let Some(b) = back.filter(|b| downstream.contains(b)) {
                    report_port[usize::from(p.0)] = Some(link_port[b]);
                }
            }
            for (from, to) in &mc.reports_via {
                if let (Some(p), Some(d)) = (by_name(from).and_then(in_port), by_name(to)) {
                    report_port[usize::from(p.0)] = Some(link_port[d]);
                }
            }
            let ports = MulticastPorts {
                address: spec.address,
                downstream: downstream.iter().map(|&l| link_port[l]).collect(),
                upstream: mc
                    .upstream
                    .as_deref()
                    .and_then(by_name)
                    .map(|l| link_port[l]),
                report_port,
                back_port,
                broadcast: mc.broadcast,
            };
            let rng = Rng::for_component(scenario.seed, &format!("igmp:{}", spec.name));
            r.set_multicast(MulticastRouter::new(ports, mc.igmp, rng));
        }
        if let (false, SimNode::Host(h)) = (spec.groups.is_empty(), &mut nodes[i]) {
            let stays: Vec<GroupMembership> = (spec.groups.iter())
                .map(|g| GroupMembership {
                    group: g.group,
                    join: Instant::ZERO + g.join,
                    leave: g.leave.map(|l| Instant::ZERO + l),
                })
                .collect();
            let rng = Rng::for_component(scenario.seed, &format!("igmp:{}", spec.name));
            h.set_groups(HostGroups::new(&stays, IgmpTimers::default(), rng));
        }
    }
}

/// A node of the simulated network (enum dispatch keeps the hot loop free of `dyn`).
#[allow(clippy::large_enum_variant)]
enum SimNode {
    Host(Host),
    Router(Router),
    Link(Link),
    /// A DVB-RCS return link shared by several terminals (`[[dama]]`).
    Dama(DamaLink),
    /// A host outside the model (the emulator's TUN device): see [`Simulation::emulated`].
    External(ExternalHost),
}

impl Node for SimNode {
    fn handle_packet(&mut self, now: Instant, port: PortId, pkt: Packet) {
        match self {
            Self::Host(n) => n.handle_packet(now, port, pkt),
            Self::Router(n) => n.handle_packet(now, port, pkt),
            Self::Link(n) => n.handle_packet(now, port, pkt),
            Self::Dama(n) => n.handle_packet(now, port, pkt),
            Self::External(n) => n.handle_packet(now, port, pkt),
        }
    }
    fn handle_timeout(&mut self, now: Instant) {
        match self {
            Self::Host(n) => n.handle_timeout(now),
            Self::Router(n) => n.handle_timeout(now),
            Self::Link(n) => n.handle_timeout(now),
            Self::Dama(n) => n.handle_timeout(now),
            Self::External(n) => n.handle_timeout(now),
        }
    }
    fn poll_transmit(&mut self, now: Instant) -> Option<Transmit> {
        match self {
            Self::Host(n) => n.poll_transmit(now),
            Self::Router(n) => n.poll_transmit(now),
            Self::Link(n) => n.poll_transmit(now),
            Self::Dama(n) => n.poll_transmit(now),
            Self::External(n) => n.poll_transmit(now),
        }
    }
    fn poll_timeout(&self) -> Option<Instant> {
        match self {
            Self::Host(n) => n.poll_timeout(),
            Self::Router(n) => n.poll_timeout(),
            Self::Link(n) => n.poll_timeout(),
            Self::Dama(n) => n.poll_timeout(),
            Self::External(n) => n.poll_timeout(),
        }
    }
    fn poll_drop(&mut self) -> Option<Dropped> {
        match self {
            Self::Host(n) => n.poll_drop(),
            Self::Router(n) => n.poll_drop(),
            Self::Link(n) => n.poll_drop(),
            Self::Dama(n) => n.poll_drop(),
            Self::External(n) => n.poll_drop(),
        }
    }
    fn drop_counts(&self) -> [u64; DropReason::ALL.len()] {
        match self {
            Self::Host(n) => n.drop_counts(),
            Self::Router(n) => n.drop_counts(),
            Self::Link(n) => n.drop_counts(),
            Self::Dama(n) => n.drop_counts(),
            Self::External(n) => n.drop_counts(),
        }
    }
}

/// One shared copy of each TCP configuration the flows use (see `TcpEndpoint`'s `config`).
/// Scenarios written with `count` repeat one configuration thousands of times; the few most
/// recent distinct ones are compared, so set-up stays linear in the flows.
#[derive(Default)]
struct SharedConfigs {
    recent: Vec<Arc<TcpConfig>>,
}

impl SharedConfigs {
    const KEEP: usize = 4;

    fn get(&mut self, c: &TcpConfig) -> Arc<TcpConfig> {
        if let Some(a) = self.recent.iter().find(|a| ***a == *c) {
            return Arc::clone(a);
        }
        let a = Arc::new(c.clone());
        if self.recent.len() == Self::KEEP {
            self.recent.remove(0);
        }
        self.recent.push(Arc::clone(&a));
        a
    }
}

/// Where a flow's two connections live: TCP connections (`Host::conns`) or, for a UDP flow,
/// the source and the sink (`Host::udp`).
#[derive(Clone, Copy, Debug)]
struct FlowLoc {
    opener: (NodeId, usize),
    listener: (NodeId, usize),
    udp: bool,
}

/// Files a run writes while it runs.
pub struct Outputs {
    series: Option<SeriesWriter>,
    dama: Option<crate::dama_out::DamaWriter>,
    pcap: Option<Captures>,
    udp: Option<UdpSeriesWriter>,
}

impl Outputs {
    /// Open the series CSVs and the pcapng trace(s) (as the scenario's `[output]` asks) in `dir`.
    pub fn create(dir: &Path, scenario: &Scenario) -> io::Result<Self> {
        std::fs::create_dir_all(dir)?;
        let series = if scenario.output.series {
            let mut flows: Vec<String> = scenario.flows.iter().map(|f| f.name.clone()).collect();
            // The second legs of split flows: `<flow>@<gateway>`, one name per flow for each
            // split-TCP router (rows appear only for flows that router splits).
            for &r in &split_routers(scenario) {
                for f in &scenario.flows {
                    flows.push(format!("{}@{}", f.name, scenario.nodes[r].name));
                }
            }
            let links = scenario.links.iter().map(|l| l.name.clone()).collect();
            Some(SeriesWriter::create(dir, flows, links)?)
        } else {
            None
        };
        let dama = if scenario.output.series {
            crate::dama_out::DamaWriter::create(dir, scenario)?
        } else {
            None
        };
        let pcap = Captures::create(dir, scenario)?;
        let has_udp = scenario
            .flows
            .iter()
            .any(|f| matches!(f.app, AppSpec::Udp { .. }));
        let udp = if scenario.output.series && has_udp {
            let names = scenario.flows.iter().map(|f| f.name.clone()).collect();
            Some(UdpSeriesWriter::create(dir, names)?)
        } else {
            None
        };
        Ok(Self {
            series,
            dama,
            pcap,
            udp,
        })
    }
}

/// One flows.csv row: sender `ep`'s state now, and the bytes its listener has delivered.
fn sender_sample(now: Instant, flow: usize, ep: &TcpEndpoint, delivered: u64) -> FlowSample {
    FlowSample {
        time: now,
        flow,
        cwnd: ep.cwnd(),
        ssthresh: ep.ssthresh(),
        srtt: ep.rtt().srtt(),
        rto: ep.rtt().rto(),
        rwnd: ep.snd_wnd(),
        bytes_in_flight: ep.bytes_in_flight(),
        snd_una: ep.bytes_acked(),
        snd_nxt: ep.bytes_sent_new(),
        delivered,
        retransmissions: ep.stats().retransmissions,
        pacing_rate: ep.pacing_rate(),
    }
}

/// Routers whose middlebox is, or chains, a split-TCP relay, in node order.
fn split_routers(scenario: &Scenario) -> Vec<NodeId> {
    scenario
        .nodes
        .iter()
        .enumerate()
        .filter(|(_, n)| n.middlebox.as_ref().is_some_and(|m| m.has_split_tcp()))
        .map(|(i, _)| i)
        .collect()
}

/// A connection's (opener, listener) addresses and ports.
type Ends = ((Ipv4Addr, u16), (Ipv4Addr, u16));

/// A split flow's relay leg as last sampled (its connection may close before the run ends).
#[derive(Clone, Debug, Default)]
struct LegRecord {
    stats: satpep_proto::tcp::TcpStats,
    bytes_acked: u64,
    mean_srtt: Option<Duration>,
    max_cwnd: u64,
}

/// What a finished run reports.
#[derive(Clone, Debug)]
pub struct RunResult {
    /// Per-flow and per-link results.
    pub summary: Summary,
    /// Events processed.
    pub events: u64,
    /// Virtual time reached.
    pub sim_time: Duration,
    /// Data packets delivered to receiving hosts (segments with payload).
    pub data_packets: u64,
}

impl RunResult {
    /// Whether a stop request ended the run before its planned end.
    pub fn interrupted(&self) -> bool {
        self.summary.status == RunStatus::Interrupted
    }
}

const TICK_SAMPLE: u32 = 0;

/// What the event loop reads of a node on every event besides the node itself, in one
/// 32-byte record: with a host pair per flow (10 000 flows: 60 000 nodes) each separate
/// per-node array was a cache miss of its own on every event.
#[derive(Clone, Copy, Debug)]
struct NodeMeta {
    /// `samples` when its openers were last folded into `max_cwnd` (or it last had an event).
    folded_at: u64,
    /// Finished openers on this host at the last look, to notice new ones cheaply.
    host_done: u32,
    /// Where port 0 leads (every node but a router has that one port only).
    wire0: (u32, PortId),
    /// With more than one port: where its wires start in `Simulation::more_wires`.
    wires_at: u32,
    /// Its number of ports.
    wires_len: u16,
    /// The scenario link it models (`NO_LINK` for hosts, routers and DAMA return links).
    link: u32,
}

const NO_LINK: u32 = u32::MAX;
const _: () = assert!(std::mem::size_of::<NodeMeta>() == 32);

impl NodeMeta {
    /// The records for `wires` (per node, per port: where it leads) and `link_index`; node ids
    /// and link indices fit in 32 bits (4 G nodes would not fit in memory anyway).
    fn all(wires: &[Vec<(NodeId, PortId)>], link_index: &[Option<usize>]) -> Vec<Self> {
        let mut at = 0;
        wires
            .iter()
            .zip(link_index)
            .map(|(w, l)| {
                let m = Self {
                    folded_at: 0,
                    host_done: 0,
                    wire0: w
                        .first()
                        .map_or((u32::MAX, PortId(0)), |&(to, p)| (to as u32, p)),
                    wires_at: at as u32,
                    wires_len: w.len() as u16,
                    link: l.map_or(NO_LINK, |l| l as u32),
                };
                if w.len() > 1 {
                    at += w.len();
                }
                m
            })
            .collect()
    }

    /// Where a packet sent out of `port` goes.
    #[inline]
    fn wire(&self, port: PortId, more: &[(NodeId, PortId)]) -> Option<(NodeId, PortId)> {
        let p = usize::from(port.0);
        if p >= usize::from(self.wires_len) {
            return None;
        }
        if p == 0 {
            return Some((self.wire0.0 as NodeId, self.wire0.1));
        }
        more.get(self.wires_at as usize + p).copied()
    }

    #[inline]
    fn link(&self) -> Option<usize> {
        (self.link != NO_LINK).then_some(self.link as usize)
    }
}

/// A simulation built from a scenario.
pub struct Simulation {
    scenario: Scenario,
    q: EventQueue,
    nodes: Vec<SimNode>,
    /// What every event reads of its node besides the node itself (see [`NodeMeta`]).
    meta: Vec<NodeMeta>,
    /// For each node with more than one port, its wires: `meta[id].wires_at ..` holds
    /// `meta[id].wires_len` of them.
    more_wires: Vec<(NodeId, PortId)>,
    /// Node id of each scenario link.
    link_node: Vec<NodeId>,
    /// For each node, for each arrival port, the scenario link that feeds it.
    in_links: Vec<Vec<Option<usize>>>,
    flows: Vec<FlowLoc>,
    /// Flows that are TCP connections (UDP flows never complete: see [`Simulation::is_done`]).
    tcp_flows: usize,
    outputs: Option<Outputs>,
    last_link_bytes: Vec<u64>,
    /// When the series were last sampled: the end of a run samples only if time moved on
    /// since (a run ending on a tick would otherwise write that instant twice), and a last,
    /// shorter interval divides by its true length.
    last_sample: Option<Instant>,
    /// A stop request ended the run early.
    interrupted: bool,
    /// Every event at or before this instant has been handled: links (which are not woken
    /// for serialisation completions) can be settled up to it before they are read.
    handled_upto: Instant,
    /// Split-TCP routers (see [`split_routers`]) and, per router × flow, the relay leg seen.
    split_routers: Vec<NodeId>,
    legs: Vec<Option<LegRecord>>,
    /// Flow index by its opener's (local, remote) address and port, to find a relay's legs.
    flow_by_ends: BTreeMap<Ends, usize>,
    /// Sample instants so far. A host's openers' cwnd is folded into their largest seen at a
    /// sample instant (`Conn::max_cwnd`) lazily: the host hears of the samples at its first
    /// event after them, and each connection folds at its own next input (a cwnd cannot
    /// change without one, so it is the value every sample since saw), not by a walk over
    /// every flow, or every connection of a host, at every sample.
    samples: u64,
    done_flows: usize,
    /// Flows whose opener finished but whose data has not all reached the listener's app.
    pending: Vec<usize>,
    /// When each flow completed (see [`Simulation::done_at`]).
    complete_at: Vec<Option<Instant>>,
    data_packets: u64,
    io_error: Option<io::Error>,
    /// Node id of each `[[dama]]` group.
    dama_nodes: Vec<NodeId>,
    /// For each scenario link: `Some((group, terminal))` when it is a DAMA return interface.
    dama_of_link: Vec<Option<(usize, usize)>>,
    /// Last (latest RTT sample, SRTT) written to `rtt.csv` per flow.
    last_rtt: Vec<Option<(Duration, Duration)>>,
}

impl Simulation {
    /// Build the network of `scenario`, with modelled hosts running its flows.
    pub fn new(scenario: &Scenario) -> Self {
        Self::build(scenario, false)
    }

    /// Build the network of `scenario` for a real-time driver: every host is an
    /// [`ExternalHost`] whose traffic comes from outside ([`Simulation::inject`],
    /// [`Simulation::poll_received`]) and no flow is modelled; routers, middleboxes, links and
    /// DAMA return links are built exactly as [`Simulation::new`] builds them, with the same
    /// port numbering, routes and random streams.
    pub fn emulated(scenario: &Scenario) -> Self {
        Self::build(scenario, true)
    }

    fn build(scenario: &Scenario, external: bool) -> Self {
        let n_nodes = scenario.nodes.len();
        let mut nodes: Vec<SimNode> = scenario
            .nodes
            .iter()
            .enumerate()
            .map(|(i, n)| match n.kind {
                NodeKind::Host if external => SimNode::External(ExternalHost::new(n.address)),
                NodeKind::Host => SimNode::Host(Host::new(n.address, (i as u64) << 40)),
                NodeKind::Router => SimNode::Router(match &n.middlebox {
                    Some(mb) => Router::with_middlebox(Middlebox::new(
                        mb,
                        Rng::for_component(scenario.seed, &format!("middlebox:{}", n.name)),
                    )),
                    None => Router::new(),
                }),
            })
            .collect();
        let mut wires: Vec<Vec<(NodeId, PortId)>> = vec![Vec::new(); n_nodes];
        let mut link_node = Vec::new();
        let mut in_ports = vec![0u16; n_nodes];
        let mut link_port = Vec::new();
        // DAMA return interfaces: link index → (DAMA group, terminal port).
        let mut dama_of_link = vec![None; scenario.links.len()];
        for (g, d) in scenario.dama.iter().enumerate() {
            for (k, &l) in d.links.iter().enumerate() {
                if let Some(slot) = dama_of_link.get_mut(l) {
                    *slot = Some((g, k));
                }
            }
        }
        let mut dama_node: Vec<Option<NodeId>> = vec![None; scenario.dama.len()];
        for (li, l) in scenario.links.iter().enumerate() {
            if let Some((g, k)) = dama_of_link[li] {
                // All of a group's terminals feed one shared node, created at its first link.
                let id = *dama_node[g].get_or_insert_with(|| {
                    let d = &scenario.dama[g];
                    let id = nodes.len();
                    let rng = Rng::for_component(scenario.seed, &format!("dama:{}", d.name));
                    let mut link = DamaLink::new(&d.config, d.terminals.len(), rng);
                    // Records are kept only for a run that writes them (`set_outputs`).
                    link.set_recording(false);
                    nodes.push(SimNode::Dama(link));
                    wires.push(vec![(d.gateway, PortId(in_ports[d.gateway]))]);
                    in_ports[d.gateway] += 1;
                    id
                });
                let port = PortId(wires[l.from].len() as u16);
                wires[l.from].push((id, PortId(k as u16)));
                link_node.push(id);
                link_port.push(port);
                continue;
            }
            let id = nodes.len();
            let rng = Rng::for_component(scenario.seed, &format!("link:{}", l.name));
            nodes.push(SimNode::Link(Link::new(&l.config, rng)));
            let port = PortId(wires[l.from].len() as u16);
            wires[l.from].push((id, PortId(0)));
            // The far end numbers its incoming links from 0 in scenario order (middleboxes use
            // the arrival port to tell one side from the other).
            wires.push(vec![(l.to, PortId(in_ports[l.to]))]);
            in_ports[l.to] += 1;
            link_node.push(id);
            link_port.push(port);
        }
        let mut link_index: Vec<Option<usize>> = vec![None; nodes.len()];
        let mut in_links: Vec<Vec<Option<usize>>> = vec![Vec::new(); nodes.len()];
        for (i, &id) in link_node.iter().enumerate() {
            if dama_of_link[i].is_none() {
                link_index[id] = Some(i);
                let (to, port) = wires[id][0];
                let row = &mut in_links[to];
                let p = usize::from(port.0);
                if row.len() <= p {
                    row.resize(p + 1, None);
                }
                row[p] = Some(i);
            }
        }
        // Static routes: a node that hangs off one neighbour sends everything outside its
        // subtree up its one link (a default route); the other entries say where each
        // destination leaves (linear in the number of nodes: `Routes::entries`).
        // An outside host (emulator) instead names every destination, so that what a real
        // program sends to an address outside the scenario is counted where it enters.
        let routes = &scenario.routes;
        for (n, node) in nodes.iter_mut().enumerate().take(scenario.nodes.len()) {
            match node {
                SimNode::Host(h) => routes
                    .default_link(n)
                    .inspect(|&l| h.set_default_route(link_port[l])),
                SimNode::Router(r) => routes
                    .default_link(n)
                    .inspect(|&l| r.set_default_route(link_port[l])),
                SimNode::External(h) => {
                    for (d, dst) in scenario.nodes.iter().enumerate() {
                        if let Some(l) = routes.next(n, d) {
                            h.add_route(dst.address, link_port[l]);
                            for &p in &dst.subnets {
                                h.add_prefix_route(p, link_port[l]);
                            }
                        }
                    }
                    None
                }
                SimNode::Link(_) | SimNode::Dama(_) => None,
            };
        }
        // Subnets behind hosts: delivered to (emulator) or dropped at (simulator) their host,
        // and routed everywhere else as the host's own address is.
        for (n, spec) in scenario.nodes.iter().enumerate() {
            for &p in &spec.subnets {
                match &mut nodes[n] {
                    SimNode::Host(h) => h.add_subnet(p),
                    SimNode::External(h) => h.add_subnet(p),
                    _ => {}
                }
            }
        }
        for (n, p, l) in scenario.routes.subnet_entries(&scenario.nodes) {
            match &mut nodes[n] {
                SimNode::Host(h) => h.add_prefix_route(p, link_port[l]),
                SimNode::Router(r) => r.add_prefix_route(p, link_port[l]),
                SimNode::External(h) => h.add_prefix_route(p, link_port[l]),
                SimNode::Link(_) | SimNode::Dama(_) => {}
            }
        }
        for (n, d, l) in scenario.routes.entries() {
            let dst = scenario.nodes[d].address;
            match &mut nodes[n] {
                SimNode::Host(h) => h.add_route(dst, link_port[l]),
                SimNode::Router(r) => r.add_route(dst, link_port[l]),
                SimNode::External(h) => h.add_route(dst, link_port[l]),
                SimNode::Link(_) | SimNode::Dama(_) => {}
            }
        }
        multicast_setup(
            scenario,
            &mut nodes,
            &link_port,
            &link_node,
            &wires,
            &dama_of_link,
        );
        let mut flows = Vec::new();
        let mut configs = SharedConfigs::default();
        let modelled_flows = if external {
            &[][..]
        } else {
            &scenario.flows[..]
        };
        for (i, f) in modelled_flows.iter().enumerate() {
            let start = Instant::ZERO + f.start;
            let (a, b) = (scenario.nodes[f.from].address, scenario.nodes[f.to].address);
            if let AppSpec::Udp {
                rate,
                packet_size,
                duration,
                group,
            } = f.app
            {
                let b = group.unwrap_or(b);
                // NOTE(unwrap-free): the loader bounds packet_size to 16–65507.
                let size = u32::try_from(packet_size.bytes()).unwrap_or(u32::MAX);
                let src = CbrSource::new(rate, size, start, duration.map(|d| start + d));
                let oc = add_udp(
                    &mut nodes[f.from],
                    i,
                    f.src_port,
                    (b, f.dst_port),
                    UdpEnd::Source(src),
                );
                let lc = add_udp(
                    &mut nodes[f.to],
                    i,
                    f.dst_port,
                    (a, f.src_port),
                    UdpEnd::Sink(UdpSink::new()),
                );
                flows.push(FlowLoc {
                    opener: (f.from, oc),
                    listener: (f.to, lc),
                    udp: true,
                });
                continue;
            }
            let mut rng = Rng::for_component(scenario.seed, &format!("flow:{}", f.name));
            let (opener_app, listener_app) = apps_for(&f.app, start);
            let opener = TcpEndpoint::new(
                configs.get(&f.tcp),
                (a, f.src_port),
                (b, f.dst_port),
                rng.next_u32(),
            );
            let listener = TcpEndpoint::new(
                configs.get(f.to_tcp.as_ref().unwrap_or(&f.tcp)),
                (b, f.dst_port),
                (a, f.src_port),
                rng.next_u32(),
            );
            let oc = add_conn(
                &mut nodes[f.from],
                i,
                Role::Opener,
                opener,
                opener_app,
                start,
            );
            let lc = add_conn(
                &mut nodes[f.to],
                i,
                Role::Listener,
                listener,
                listener_app,
                start,
            );
            flows.push(FlowLoc {
                opener: (f.from, oc),
                listener: (f.to, lc),
                udp: false,
            });
        }
        let n_flows = flows.len();
        let n_total = nodes.len();
        let split = split_routers(scenario);
        let flow_by_ends = flows
            .iter()
            .enumerate()
            .filter(|(_, loc)| !loc.udp)
            .filter_map(|(i, loc)| match &nodes[loc.opener.0] {
                SimNode::Host(h) => {
                    let ep = &h.conns()[loc.opener.1].ep;
                    Some(((ep.local(), ep.remote()), i))
                }
                _ => None,
            })
            .collect();
        let mut q = EventQueue::new(n_total);
        for (id, n) in nodes.iter().enumerate() {
            q.arm(id, n.poll_timeout());
        }
        // A real-time driver samples only when it writes series (see `set_outputs`).
        if scenario.output.interval > Duration::ZERO && !external {
            q.push(Instant::ZERO, Event::Tick(TICK_SAMPLE));
        }
        Self {
            last_link_bytes: vec![0; scenario.links.len()],
            last_sample: None,
            interrupted: false,
            handled_upto: Instant::ZERO,
            legs: vec![None; split.len() * n_flows],
            split_routers: split,
            flow_by_ends,
            samples: 0,
            scenario: scenario.clone(),
            q,
            nodes,
            meta: NodeMeta::all(&wires, &link_index),
            more_wires: wires
                .iter()
                .filter(|w| w.len() > 1)
                .flatten()
                .copied()
                .collect(),
            link_node,
            in_links,
            tcp_flows: flows.iter().filter(|l| !l.udp).count(),
            flows,
            outputs: None,
            done_flows: 0,
            pending: Vec::new(),
            complete_at: vec![None; n_flows],
            dama_nodes: dama_node.into_iter().flatten().collect(),
            dama_of_link,
            last_rtt: vec![None; n_flows],
            data_packets: 0,
            io_error: None,
        }
    }

    /// Write time series and pcapng while running.
    pub fn set_outputs(&mut self, outputs: Outputs) {
        let record = outputs.dama.is_some();
        for (g, &id) in self.dama_nodes.iter().enumerate() {
            if let SimNode::Dama(d) = &mut self.nodes[id] {
                d.set_recording(record && self.scenario.dama[g].config.record);
            }
        }
        let external = self.nodes.iter().any(|n| matches!(n, SimNode::External(_)));
        if external && outputs.series.is_some() && self.scenario.output.interval > Duration::ZERO {
            self.q.push(self.q.now(), Event::Tick(TICK_SAMPLE));
        }
        self.outputs = Some(outputs);
    }

    /// Order future events with a different structure (same results; for `satpep bench`).
    pub fn set_queue_kind(&mut self, kind: crate::engine::QueueKind) {
        self.q.set_kind(kind);
    }

    /// Current virtual time.
    pub fn now(&self) -> Instant {
        self.q.now()
    }

    /// Events processed so far.
    pub fn events(&self) -> u64 {
        self.q.processed()
    }

    /// The scenario this simulation was built from.
    pub fn scenario(&self) -> &Scenario {
        &self.scenario
    }

    /// Run to the scenario's end (its duration, or earlier when every flow is done and
    /// `stop_when_done` is set), calling `progress` with the virtual time now and then.
    pub fn run(self, progress: impl FnMut(Instant)) -> io::Result<RunResult> {
        self.run_stoppable(progress, &AtomicBool::new(false))
    }

    /// [`Simulation::run`] that also ends, cleanly, once `stop` is set (a signal handler sets
    /// it): the last sample and the summary are written as at a normal end, and the summary
    /// says [`RunStatus::Interrupted`] with the virtual time reached. `stop` is checked every
    /// 100 ms of virtual time.
    pub fn run_stoppable(
        mut self,
        mut progress: impl FnMut(Instant),
        stop: &AtomicBool,
    ) -> io::Result<RunResult> {
        let end = Instant::ZERO + self.scenario.duration;
        let mut next_report = Instant::ZERO;
        while self.q.now() < end {
            if stop.load(Ordering::Relaxed) {
                self.interrupted = true;
                break;
            }
            let step_end = (self.q.now() + Duration::from_millis(100)).min(end);
            self.run_events(step_end, |_, _, _| {});
            if self.q.now() >= next_report {
                progress(self.q.now());
                next_report = self.q.now() + Duration::from_secs(1);
            }
            if self.is_done() {
                break;
            }
            if self.q.peek_time().is_none() {
                self.q.advance_to(end);
                self.handled_upto = end;
            }
        }
        self.finish()
    }

    /// The outside host at scenario node `node` sent `pkt` at the current instant (bring the
    /// clock there first with [`Simulation::run_until`]). Ignored for a node that is not an
    /// [`ExternalHost`].
    pub fn inject(&mut self, node: NodeId, pkt: Packet) {
        if let Some(SimNode::External(h)) = self.nodes.get_mut(node) {
            h.send(pkt);
            self.flush(node, &mut |_, _, _| {});
        }
    }

    /// Next packet that reached the outside host at scenario node `node`.
    pub fn poll_received(&mut self, node: NodeId) -> Option<Packet> {
        match self.nodes.get_mut(node)? {
            SimNode::External(h) => h.poll_received(),
            _ => None,
        }
    }

    /// Counters of the outside host at scenario node `node`.
    pub fn external_stats(
        &self,
        node: NodeId,
    ) -> Option<satpep_proto::net::external::ExternalStats> {
        match self.nodes.get(node)? {
            SimNode::External(h) => Some(h.stats()),
            _ => None,
        }
    }

    /// Nodes of the network (scenario nodes first, then links and DAMA return links).
    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }

    /// Write the last sample and close the output files (a real-time driver's end of run).
    pub fn finish_outputs(self) -> io::Result<()> {
        self.finish().map(|_| ())
    }

    /// Connections in the routers' middlebox tables now (see
    /// [`Middlebox::open_connections`]); `None` when no middlebox keeps a table.
    pub fn open_connections(&self) -> Option<u64> {
        self.nodes
            .iter()
            .filter_map(|n| match n {
                SimNode::Router(r) => r.middlebox().and_then(Middlebox::open_connections),
                _ => None,
            })
            .reduce(|a, b| a + b)
    }

    /// Packets dropped so far by links, routers and hosts, per reason (reasons never seen left
    /// out), in [`DropReason::ALL`] order.
    pub fn drops(&self) -> Vec<(DropReason, u64)> {
        let mut total = [0u64; DropReason::ALL.len()];
        for n in &self.nodes {
            for (t, c) in total.iter_mut().zip(n.drop_counts()) {
                *t += c;
            }
        }
        DropReason::ALL
            .iter()
            .zip(total)
            .filter(|&(_, n)| n > 0)
            .map(|(&r, n)| (r, n))
            .collect()
    }

    /// When the next event is due, if any.
    pub fn next_event_at(&self) -> Option<Instant> {
        self.q.peek_time()
    }

    /// The scenario link a node id models (`None` for hosts, routers and DAMA return links).
    pub fn link_of_node(&self, node: NodeId) -> Option<usize> {
        self.meta.get(node).and_then(NodeMeta::link)
    }

    /// For each node, for each arrival port, the scenario link whose packets arrive there
    /// (`None` for a DAMA return link, shared by several terminals).
    pub fn in_links(&self) -> &[Vec<Option<usize>>] {
        &self.in_links
    }

    /// Counters and current queue (packets, bytes) of scenario link `i`, plain or DAMA.
    pub fn link_stats(&self, i: usize, now: Instant) -> (LinkStats, u64, u64) {
        self.link_view(i, now)
    }

    /// Whether every TCP flow's application has finished and the scenario stops then. UDP
    /// flows do not count: a constant-bit-rate stream is background that runs to its own stop
    /// or the end of the run, so a run of UDP flows alone lasts `duration`.
    pub fn is_done(&self) -> bool {
        self.scenario.stop_when_done && self.tcp_flows > 0 && self.done_flows == self.tcp_flows
    }

    /// Process every event up to and including `end`.
    pub fn run_until(&mut self, end: Instant) {
        self.run_until_observed(end, |_, _, _| {});
    }

    /// [`Simulation::run_until`], telling `observe` the node and the scheduled instant of every
    /// node event (a real-time driver measures how late it ran each one). Links are settled
    /// at the end, so that [`Simulation::link`] and [`Simulation::link_stats`] read them as of
    /// the last instant handled.
    pub fn run_until_observed(
        &mut self,
        end: Instant,
        observe: impl FnMut(NodeId, Option<PortId>, Instant),
    ) {
        self.run_events(end, observe);
        self.settle_links();
    }

    /// Bring every link up to [`Self::handled_upto`] (see [`Link::settle`]).
    fn settle_links(&mut self) {
        let t = self.handled_upto;
        for &id in &self.link_node {
            if let SimNode::Link(l) = &mut self.nodes[id] {
                l.settle(t);
            }
        }
    }

    /// The event loop: every event up to and including `end`, or until the scenario is done.
    fn run_events(
        &mut self,
        end: Instant,
        mut observe: impl FnMut(NodeId, Option<PortId>, Instant),
    ) {
        while let Some(ev) = self.q.pop(end) {
            let id = match ev {
                Event::Deliver { to, port, pkt } => {
                    observe(to, Some(port), self.q.now());
                    if self.meta[to].folded_at != self.samples {
                        self.fold_max_cwnd(to);
                    }
                    if pkt.payload_len > 0 && matches!(self.nodes[to], SimNode::Host(_)) {
                        self.data_packets += 1;
                    }
                    self.nodes[to].handle_packet(self.q.now(), port, pkt);
                    to
                }
                Event::Wake { node } => {
                    observe(node, None, self.q.now());
                    if self.meta[node].folded_at != self.samples {
                        self.fold_max_cwnd(node);
                    }
                    self.nodes[node].handle_timeout(self.q.now());
                    node
                }
                Event::Tick(_) => {
                    // Events at this instant queued after the tick are still to come.
                    self.handled_upto = Instant(self.q.now().0.saturating_sub(1));
                    self.sample();
                    let next = self.q.now() + self.scenario.output.interval;
                    self.q.push(next, Event::Tick(TICK_SAMPLE));
                    continue;
                }
            };
            self.flush(id, &mut observe);
            if let SimNode::Host(h) = &self.nodes[id] {
                let d = h.done_count();
                // A host's openers number far below 2^32.
                let d = d as u32;
                if d != self.meta[id].host_done {
                    self.meta[id].host_done = d;
                    self.openers_finished(id);
                }
                if !self.pending.is_empty() {
                    self.settle_pending();
                    if self.is_done() {
                        self.handled_upto = Instant(self.q.now().0.saturating_sub(1));
                        return;
                    }
                }
            }
        }
        self.q.advance_to(end);
        self.handled_upto = end;
    }

    /// A sample was taken since `node`'s last event: its openers' cwnd is still what that
    /// sample saw; mark it, so that each folds it into its `Conn::max_cwnd` before its next
    /// input changes it.
    #[cold]
    fn fold_max_cwnd(&mut self, node: NodeId) {
        self.meta[node].folded_at = self.samples;
        if let SimNode::Host(h) = &mut self.nodes[node] {
            h.fold_max_cwnd();
        }
    }

    /// Drain node `id`'s output after an event and re-arm its timer. A packet whose wire
    /// leads into a link, or into a router that only forwards, is handed over at once rather
    /// than as a queued event (`observe` hears of it as of an event). Neither can do anything
    /// with it that depends on what else is due at this instant: a link takes a packet in
    /// after settling itself to now and holds it for its serialisation at least, and its
    /// wake-ups for what it has due now are armed already; such a router has no timers and
    /// forwards into links. The event would cost a push, a pop and a dispatch, on two hops of
    /// three. Hosts, routers with a middlebox or multicast, and DAMA return links keep the
    /// FIFO, so that their timers due at an instant still run before packets arriving then.
    fn flush(&mut self, id: NodeId, observe: &mut impl FnMut(NodeId, Option<PortId>, Instant)) {
        let now = self.q.now();
        while let Some(tx) = self.nodes[id].poll_transmit(now) {
            self.hand_over(id, tx, now, observe);
        }
        self.q.arm(id, self.nodes[id].poll_timeout());
    }

    /// Carry `tx`, sent by node `from` at `now`, along its wire: into a link at once, through
    /// plain routers at once (each forwards it into the next wire, with no queue and no poll,
    /// since such a router keeps nothing and has no timer to arm), and into the FIFO for
    /// anything else.
    fn hand_over(
        &mut self,
        mut from: NodeId,
        mut tx: Transmit,
        now: Instant,
        observe: &mut impl FnMut(NodeId, Option<PortId>, Instant),
    ) {
        loop {
            let meta = self.meta[from];
            if let (Some(l), Some(out)) = (meta.link(), self.outputs.as_mut()) {
                if let Some(p) = out.pcap.as_mut() {
                    if let Err(e) = p.write(l, now, &tx.pkt) {
                        self.io_error.get_or_insert(e);
                    }
                }
            }
            let Some((to, port)) = meta.wire(tx.port, &self.more_wires) else {
                return;
            };
            match &mut self.nodes[to] {
                SimNode::Link(link) => {
                    observe(to, Some(port), now);
                    link.handle_packet(now, port, tx.pkt);
                    self.q.arm(to, link.poll_timeout());
                    return;
                }
                SimNode::Router(r) if r.forwards_only() => {
                    observe(to, Some(port), now);
                    let Some(next) = r.forward(now, port, tx.pkt) else {
                        return;
                    };
                    (from, tx) = (to, next);
                }
                _ => {
                    self.q.push_now(Event::Deliver {
                        to,
                        port,
                        pkt: tx.pkt,
                    });
                    return;
                }
            }
        }
    }

    /// Append the DAMA superframe records and new RTT samples to `dama.csv` / `rtt.csv`.
    fn write_dama_and_rtt(&mut self, now: Instant) {
        let Some(w) = self.outputs.as_mut().and_then(|o| o.dama.as_mut()) else {
            return;
        };
        for (g, &id) in self.dama_nodes.iter().enumerate() {
            if let SimNode::Dama(d) = &mut self.nodes[id] {
                for r in d.drain_records() {
                    if let Err(e) = w.write_superframe(g, &r) {
                        self.io_error.get_or_insert(e);
                    }
                }
            }
        }
        for i in 0..self.flows.len() {
            if self.flows[i].udp {
                continue;
            }
            let ep = &self.conn(self.flows[i].opener).ep;
            let (Some(latest), Some(srtt)) = (ep.rtt().latest(), ep.rtt().srtt()) else {
                continue;
            };
            if self.last_rtt[i] == Some((latest, srtt)) {
                continue;
            }
            self.last_rtt[i] = Some((latest, srtt));
            let Some(w) = self.outputs.as_mut().and_then(|o| o.dama.as_mut()) else {
                return;
            };
            if let Err(e) = w.write_rtt(now, i, latest, srtt) {
                self.io_error.get_or_insert(e);
            }
        }
    }

    fn conn(&self, (node, i): (NodeId, usize)) -> &satpep_proto::net::Conn {
        match &self.nodes[node] {
            SimNode::Host(h) => &h.conns()[i],
            // NOTE(unwrap-free): flows are only placed on hosts (the scenario checks it).
            _ => unreachable!("flow endpoint on a non-host node"),
        }
    }

    /// The source of UDP flow `i`; `None` for a TCP flow.
    pub fn udp_source(&self, i: usize) -> Option<&CbrSource> {
        let loc = self.flows.get(i).filter(|l| l.udp)?;
        match &self.nodes[loc.opener.0] {
            SimNode::Host(h) => match &h.udp()[loc.opener.1].end {
                UdpEnd::Source(s) => Some(s),
                UdpEnd::Sink(_) => None,
            },
            _ => None,
        }
    }

    /// What the sink of UDP flow `i` has measured; `None` for a TCP flow.
    pub fn udp_sink(&self, i: usize) -> Option<UdpSinkStats> {
        let loc = self.flows.get(i).filter(|l| l.udp)?;
        match &self.nodes[loc.listener.0] {
            SimNode::Host(h) => match &h.udp()[loc.listener.1].end {
                UdpEnd::Sink(k) => Some(k.stats()),
                UdpEnd::Source(_) => None,
            },
            _ => None,
        }
    }

    /// The opening endpoint of flow `i` (bulk sender, request client). Panics for a UDP flow
    /// (see [`Self::udp_source`]).
    pub fn opener(&self, i: usize) -> &TcpEndpoint {
        assert!(!self.flows[i].udp, "flow {i} is a UDP flow");
        &self.conn(self.flows[i].opener).ep
    }

    /// The listening endpoint of flow `i` (bulk sink, response server). Panics for a UDP flow
    /// (see [`Self::udp_sink`]).
    pub fn listener(&self, i: usize) -> &TcpEndpoint {
        assert!(!self.flows[i].udp, "flow {i} is a UDP flow");
        &self.conn(self.flows[i].listener).ep
    }

    /// When flow `i` completed: its opener finished its work *and* the listener's application
    /// has every byte the opener wrote. For an end-to-end flow that is the opener's last ACK;
    /// behind a split-TCP relay, which acknowledges early, it is the receiver's last byte.
    pub fn done_at(&self, i: usize) -> Option<Instant> {
        self.complete_at[i]
    }

    /// Openers on host `node` whose applications just finished start waiting for their data to
    /// reach the far application.
    fn openers_finished(&mut self, node: NodeId) {
        for f in 0..self.flows.len() {
            let (host, _) = self.flows[f].opener;
            if host == node
                && !self.flows[f].udp
                && self.complete_at[f].is_none()
                && !self.pending.contains(&f)
                && self.conn(self.flows[f].opener).done_at.is_some()
            {
                self.pending.push(f);
            }
        }
    }

    fn settle_pending(&mut self) {
        let now = self.q.now();
        let mut i = 0;
        while i < self.pending.len() {
            let f = self.pending[i];
            let written = self.conn(self.flows[f].opener).ep.bytes_written();
            if self.conn(self.flows[f].listener).ep.bytes_delivered() >= written {
                self.complete_at[f] = Some(now);
                self.done_flows += 1;
                self.pending.swap_remove(i);
            } else {
                i += 1;
            }
        }
    }

    /// Scenario link `i`. Panics for a DAMA return interface (see [`Self::dama`]).
    pub fn link(&self, i: usize) -> &Link {
        match &self.nodes[self.link_node[i]] {
            SimNode::Link(l) => l,
            _ => panic!("link {i} is a DAMA return interface; use Simulation::dama"),
        }
    }

    /// The middlebox of scenario node `i`, when it is a router with one (to sample a gateway's
    /// buffer or a relay's windows while a run goes on).
    pub fn middlebox(&self, i: usize) -> Option<&satpep_proto::middlebox::Middlebox> {
        match self.nodes.get(i)? {
            SimNode::Router(r) => r.middlebox(),
            _ => None,
        }
    }

    /// The shared return link of `[[dama]]` group `g`.
    pub fn dama(&self, g: usize) -> Option<&DamaLink> {
        match self.nodes.get(*self.dama_nodes.get(g)?)? {
            SimNode::Dama(d) => Some(d),
            _ => None,
        }
    }

    /// Counters, current queue (packets, bytes) of scenario link `i`, whether a plain link or
    /// a terminal's DAMA return interface; time-weighted counters brought up to `now`.
    fn link_view(&self, i: usize, now: Instant) -> (LinkStats, u64, u64) {
        match (&self.nodes[self.link_node[i]], self.dama_of_link[i]) {
            (SimNode::Dama(d), Some((_, k))) => (
                d.link_stats_at(k, now),
                d.queue_len_packets(k) as u64,
                d.queue_len_bytes(k),
            ),
            (SimNode::Link(l), _) => (
                l.stats_at(now),
                l.queue_len_packets() as u64,
                l.queue_len_bytes(),
            ),
            _ => (LinkStats::default(), 0, 0),
        }
    }

    /// The bulk/data sender of flow `i`: for request/response flows the server sends most data,
    /// but the opener is reported, as its cwnd is what the table shows.
    fn sample(&mut self) {
        let now = self.q.now();
        if self.last_sample == Some(now) {
            return;
        }
        let since = self.last_sample.replace(now);
        // Openers' cwnd: folded lazily (see `samples`), so that without series a sample costs
        // nothing per flow.
        self.samples += 1;
        let leg_rows = match self.split_routers.is_empty() {
            true => Vec::new(),
            false => self.sample_legs(now),
        };
        if self.outputs.as_ref().is_none_or(|o| o.series.is_none()) {
            return;
        }
        let mut rows = Vec::with_capacity(self.flows.len() + leg_rows.len());
        let mut udp_rows = Vec::new();
        for i in 0..self.flows.len() {
            let loc = self.flows[i];
            if loc.udp {
                let (row, udp) = self.udp_sample(now, i);
                rows.push(row);
                udp_rows.push(udp);
                continue;
            }
            let (ep, rx) = (&self.conn(loc.opener).ep, &self.conn(loc.listener).ep);
            rows.push(sender_sample(now, i, ep, rx.bytes_delivered()));
        }
        if let Some(w) = self.outputs.as_mut().and_then(|o| o.udp.as_mut()) {
            for r in &udp_rows {
                if let Err(e) = w.write(r) {
                    self.io_error.get_or_insert(e);
                }
            }
        }
        rows.extend(leg_rows);
        let interval = match since {
            Some(t) => now.saturating_since(t).as_secs_f64(),
            None => self.scenario.output.interval.as_secs_f64(),
        };
        let mut links = Vec::with_capacity(self.link_node.len());
        self.write_dama_and_rtt(now);
        self.settle_links();
        for i in 0..self.link_node.len() {
            let (st, qp, qb) = self.link_view(i, now);
            let bytes = st.delivered_bytes;
            let tput = (bytes - self.last_link_bytes[i]) as f64 * 8.0 / interval;
            self.last_link_bytes[i] = bytes;
            links.push(LinkSample {
                time: now,
                link: i,
                queue_packets: qp,
                queue_bytes: qb,
                throughput_bps: tput,
                queue_drops: st.queue_drops,
                error_drops: st.error_drops,
            });
        }
        let Some(series) = self.outputs.as_mut().and_then(|o| o.series.as_mut()) else {
            return;
        };
        for r in &rows {
            if let Err(e) = series.write_flow(r) {
                self.io_error.get_or_insert(e);
            }
        }
        for r in &links {
            if let Err(e) = series.write_link(r) {
                self.io_error.get_or_insert(e);
            }
        }
    }

    /// UDP flow `i`'s `flows.csv` row (bytes sent as `snd_nxt`, received as `delivered`, the
    /// TCP state empty) and its `udp.csv` row.
    fn udp_sample(&self, now: Instant, i: usize) -> (FlowSample, UdpSample) {
        let (sent, sent_bytes) = self
            .udp_source(i)
            .map_or((0, 0), |s| (s.packets_sent(), s.bytes_sent()));
        let k = self.udp_sink(i).unwrap_or_default();
        let row = FlowSample {
            time: now,
            flow: i,
            cwnd: 0,
            ssthresh: None,
            srtt: None,
            rto: Duration::ZERO,
            rwnd: 0,
            bytes_in_flight: 0,
            snd_una: 0,
            snd_nxt: sent_bytes,
            delivered: k.bytes,
            retransmissions: 0,
            pacing_rate: None,
        };
        let udp = UdpSample {
            time: now,
            flow: i,
            packets_sent: sent,
            packets_received: k.packets,
            bytes_received: k.bytes,
            lost_packets: k.lost,
            out_of_order: k.out_of_order,
            jitter_s: k.jitter_s,
        };
        (row, udp)
    }

    /// Records every split flow's relay leg (for the summary) and returns its flows.csv rows,
    /// flow index `n_flows + router × n_flows + flow` (the names [`Outputs::create`] adds).
    fn sample_legs(&mut self, now: Instant) -> Vec<FlowSample> {
        let n = self.flows.len();
        let mut rows = Vec::new();
        for (r, &node) in self.split_routers.iter().enumerate() {
            let SimNode::Router(router) = &self.nodes[node] else {
                continue;
            };
            let Some(mb) = router.middlebox() else {
                continue;
            };
            for relay in mb.split_relays() {
                for (opener, listener, ep) in relay.connect_senders() {
                    let Some(&i) = self.flow_by_ends.get(&(opener, listener)) else {
                        continue;
                    };
                    let rec = self.legs[r * n + i].get_or_insert_with(LegRecord::default);
                    rec.stats = ep.stats();
                    rec.bytes_acked = ep.bytes_acked();
                    rec.mean_srtt = ep.rtt().mean();
                    rec.max_cwnd = rec.max_cwnd.max(ep.cwnd());
                    let delivered = match &self.nodes[self.flows[i].listener.0] {
                        SimNode::Host(h) => {
                            h.conns()[self.flows[i].listener.1].ep.bytes_delivered()
                        }
                        _ => 0,
                    };
                    rows.push(sender_sample(now, n + r * n + i, ep, delivered));
                }
            }
        }
        // Rows in (router, flow) order whatever the relays' table order.
        rows.sort_by_key(|r| r.flow);
        rows
    }

    /// The relay legs of flow `i` seen so far, in router order.
    fn legs_of(&self, i: usize) -> Vec<LegSummary> {
        let n = self.flows.len();
        let sc = &self.scenario;
        self.split_routers
            .iter()
            .enumerate()
            .filter_map(|(r, &node)| {
                let rec = self.legs[r * n + i].as_ref()?;
                Some(LegSummary {
                    at: sc.nodes[node].name.clone(),
                    to: sc.nodes[sc.flows[i].to].name.clone(),
                    bytes_acked: rec.bytes_acked,
                    segments_sent: rec.stats.segments_sent,
                    retransmissions: rec.stats.retransmissions,
                    fast_retransmits: rec.stats.fast_retransmits,
                    rto_expirations: rec.stats.rto_expirations,
                    mean_srtt_ms: rec.mean_srtt.map(|d| d.as_secs_f64() * 1e3),
                    max_cwnd_bytes: rec.max_cwnd,
                })
            })
            .collect()
    }

    /// Results so far.
    pub fn summary(&self) -> Summary {
        let now = self.q.now();
        let sc = &self.scenario;
        let name = |i: usize| sc.nodes[i].name.clone();
        let flows = sc
            .flows
            .iter()
            .take(self.flows.len())
            .enumerate()
            .map(|(i, f)| {
                if self.flows[i].udp {
                    return self.udp_summary(i, now);
                }
                let ep = self.opener(i);
                let rx = self.listener(i);
                let st = ep.stats();
                let start = Instant::ZERO + f.start;
                let done = self.done_at(i);
                // For request/response the data of interest flows both ways; report the
                // bytes the opener received when it received more than it sent.
                let delivered = rx.bytes_delivered().max(ep.bytes_delivered());
                FlowSummary {
                    name: f.name.clone(),
                    from: name(f.from),
                    to: name(f.to),
                    cc: format!("{:?}", f.tcp.cc).to_lowercase(),
                    recovery: format!("{:?}", f.tcp.recovery).to_lowercase(),
                    start_s: f.start.as_secs_f64(),
                    completion_time_s: done.map(|d| d.saturating_since(start).as_secs_f64()),
                    bytes_acked: ep.bytes_acked(),
                    bytes_delivered: delivered,
                    goodput_bps: satpep_output::goodput_bps(delivered, start, done.unwrap_or(now)),
                    segments_sent: st.segments_sent,
                    retransmissions: st.retransmissions,
                    fast_retransmits: st.fast_retransmits,
                    rto_expirations: st.rto_expirations,
                    dup_acks: st.dup_acks,
                    mean_srtt_ms: ep.rtt().mean().map(|d| d.as_secs_f64() * 1e3),
                    max_cwnd_bytes: self.conn(self.flows[i].opener).max_cwnd.max(ep.cwnd()),
                    legs: self.legs_of(i),
                    udp: None,
                }
            })
            .collect();
        let links = sc
            .links
            .iter()
            .enumerate()
            .map(|(i, l)| {
                let (st, _, _) = self.link_view(i, now);
                LinkSummary {
                    name: l.name.clone(),
                    from: name(l.from),
                    to: name(l.to),
                    rate_bps: l.config.nominal_rate().bps(),
                    delay_ms: l.config.delay.as_secs_f64() * 1e3,
                    utilisation: st.utilisation(now),
                    delivered_packets: st.delivered_packets,
                    delivered_bytes: st.delivered_bytes,
                    queue_drops: st.queue_drops,
                    error_drops: st.error_drops,
                    arq_retransmissions: st.arq_retransmissions,
                    mean_queue_packets: st.mean_queue_packets(now),
                    max_queue_packets: st.max_queue_packets,
                    mean_queue_bytes: st.mean_queue_bytes(now),
                }
            })
            .collect();
        Summary {
            scenario: sc.name.clone(),
            seed: sc.seed,
            status: if self.interrupted {
                RunStatus::Interrupted
            } else {
                RunStatus::Complete
            },
            sim_time_s: now.as_secs_f64(),
            events: self.q.processed(),
            flows,
            links,
            middleboxes: self.middlebox_summaries(),
            multicast_routers: self.multicast_router_summaries(),
            groups: self.group_summaries(),
        }
    }

    /// Every multicast router's counters, in scenario order (the emulator reports the same).
    pub fn multicast_router_summaries(&self) -> Vec<MulticastRouterSummary> {
        (self.scenario.nodes.iter().zip(&self.nodes))
            .filter_map(|(spec, n)| match n {
                SimNode::Router(r) => r.multicast().map(|mc| MulticastRouterSummary {
                    node: spec.name.clone(),
                    counters: (mc.stats().counters().into_iter())
                        .map(|(k, v)| (k.to_owned(), v))
                        .collect(),
                }),
                _ => None,
            })
            .collect()
    }

    /// What each host with `groups` received, per group, in scenario order.
    fn group_summaries(&self) -> Vec<GroupSummary> {
        let mut out = Vec::new();
        for (spec, n) in self.scenario.nodes.iter().zip(&self.nodes) {
            let SimNode::Host(h) = n else { continue };
            let Some(g) = h.groups() else { continue };
            for (group, r) in g.received() {
                out.push(GroupSummary {
                    node: spec.name.clone(),
                    group: group.to_string(),
                    packets: r.packets,
                    bytes: r.bytes,
                    first_s: r.first.map(Instant::as_secs_f64),
                    last_s: r.last.map(Instant::as_secs_f64),
                });
            }
        }
        out
    }

    /// UDP flow `i`'s summary: goodput is payload bytes received over the sending time (from
    /// `start` to its stop or the end of the run), as iperf3 reports it.
    fn udp_summary(&self, i: usize, now: Instant) -> FlowSummary {
        let sc = &self.scenario;
        let f = &sc.flows[i];
        let start = Instant::ZERO + f.start;
        let until = match f.app {
            AppSpec::Udp {
                duration: Some(d), ..
            } => now.min(start + d),
            _ => now,
        };
        let k = self.udp_sink(i).unwrap_or_default();
        let sent = self.udp_source(i).map_or(0, CbrSource::packets_sent);
        FlowSummary {
            name: f.name.clone(),
            from: sc.nodes[f.from].name.clone(),
            to: sc.nodes[f.to].name.clone(),
            cc: "udp".into(),
            recovery: "none".into(),
            start_s: f.start.as_secs_f64(),
            completion_time_s: None,
            bytes_acked: 0,
            bytes_delivered: k.bytes,
            goodput_bps: satpep_output::goodput_bps(k.bytes, start, until),
            segments_sent: sent,
            retransmissions: 0,
            fast_retransmits: 0,
            rto_expirations: 0,
            dup_acks: 0,
            mean_srtt_ms: None,
            max_cwnd_bytes: 0,
            legs: Vec::new(),
            udp: Some(UdpSummary {
                packets_sent: sent,
                packets_received: k.packets,
                lost_packets: k.lost,
                out_of_order: k.out_of_order,
                jitter_ms: k.jitter_s * 1e3,
            }),
        }
    }

    /// Every router's middlebox counters now, in scenario order (summary.json's
    /// `middleboxes`; the emulator reports the same).
    pub fn middlebox_summaries(&self) -> Vec<MiddleboxSummary> {
        (0..self.scenario.nodes.len())
            .filter_map(|i| {
                let mb = self.middlebox(i)?;
                Some(MiddleboxSummary::new(&self.scenario.nodes[i].name, mb))
            })
            .collect()
    }

    fn finish(mut self) -> io::Result<RunResult> {
        self.settle_links();
        self.sample();
        let summary = self.summary();
        if let Some(out) = self.outputs.take() {
            if let Some(s) = out.series {
                s.finish()?;
            }
            if let Some(d) = out.dama {
                d.finish()?;
            }
            if let Some(mut p) = out.pcap {
                p.flush()?;
            }
            if let Some(u) = out.udp {
                u.finish()?;
            }
        }
        if let Some(e) = self.io_error.take() {
            return Err(e);
        }
        Ok(RunResult {
            events: self.q.processed(),
            sim_time: self.q.now().saturating_since(Instant::ZERO),
            data_packets: self.data_packets,
            summary,
        })
    }
}

fn add_conn(
    node: &mut SimNode,
    flow: usize,
    role: Role,
    ep: TcpEndpoint,
    app: satpep_proto::net::App,
    start: Instant,
) -> usize {
    match node {
        SimNode::Host(h) => h.add_conn(flow, role, ep, app, start),
        // The scenario loader rejects flows on routers.
        _ => usize::MAX,
    }
}

fn add_udp(
    node: &mut SimNode,
    flow: usize,
    local_port: u16,
    remote: (Ipv4Addr, u16),
    end: UdpEnd,
) -> usize {
    match node {
        SimNode::Host(h) => h.add_udp(flow, local_port, remote, end),
        // The scenario loader rejects flows on routers.
        _ => usize::MAX,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Equal configurations come back as one shared copy; a different one gets its own, and
    /// only the last `KEEP` distinct ones are remembered.
    #[test]
    fn shared_configs_hand_out_one_copy_per_recent_configuration() {
        let mut shared = SharedConfigs::default();
        let base = TcpConfig::default();
        let a = shared.get(&base);
        assert!(Arc::ptr_eq(&a, &shared.get(&base.clone())));
        let others: Vec<TcpConfig> = (1..=SharedConfigs::KEEP as u16)
            .map(|i| {
                let mut c = TcpConfig::default();
                c.mss = 1000 + i;
                c
            })
            .collect();
        let first_other = shared.get(&others[0]);
        assert!(!Arc::ptr_eq(&a, &first_other));
        assert_eq!(*first_other, others[0]);
        assert!(Arc::ptr_eq(&a, &shared.get(&base)));
        let last: Vec<_> = others[1..].iter().map(|o| shared.get(o)).collect();
        // `KEEP` others came after `base`: it is forgotten, and a new copy is made.
        let again = shared.get(&base);
        assert!(!Arc::ptr_eq(&a, &again));
        assert_eq!(*again, base);
        assert_eq!(shared.recent.len(), SharedConfigs::KEEP);
        // The most recent ones are still shared.
        assert!(Arc::ptr_eq(
            &last[last.len() - 1],
            &shared.get(&others[others.len() - 1])
        ));
    }
}
