//! Static routing: fewest hops, ties broken by the lowest link index, in memory that grows with
//! the number of nodes, not its square.
//!
//! Every node may forward (hosts too), as on a plain IP network with static routes; links are
//! simplex, so the route from a to b and the route from b to a are found separately.
//!
//! Most nodes of a satellite topology hang off one neighbour (a host behind its terminal, a
//! terminal behind the hub). Such a *stub* is never on a shortest path between two other nodes,
//! so the routes among the rest do not depend on it, and its own routes are simple: toward its
//! subtree, down the branch; anywhere else, up to its parent. Peeling stubs repeatedly leaves a
//! small *core* (two routers in a dumbbell, one in a star) whose all-pairs table is tiny; every
//! answer is then exactly what a breadth-first search over the whole graph would give (a
//! property test checks it against one).

use std::collections::{HashMap, HashSet, VecDeque};

use satpep_proto::net::Ipv4Prefix;

use crate::spec::{LinkSpec, NodeSpec};

/// Most hops between a node and the core it hangs from: a deeper node could not be reached
/// within IPv4's TTL anyway, and the bound keeps every lookup to a few hundred steps.
pub const MAX_DEPTH: u32 = 255;

/// Most core nodes (nodes that are not stubs; see the module docs): their table has one entry
/// per ordered pair (16 M entries, 64 MiB, at this bound).
pub const MAX_CORE: usize = 4096;

/// A node that hangs off one neighbour.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Stub {
    parent: u32,
    /// Lowest-index link from the stub to its parent (its only way out).
    up: Option<u32>,
    /// Lowest-index link from the parent to the stub.
    down: Option<u32>,
}

/// Why routes could not be computed.
#[derive(Debug, Eq, PartialEq)]
pub enum RoutesError {
    /// `node` is more than [`MAX_DEPTH`] hops below the core.
    TooDeep { node: usize },
    /// More than [`MAX_CORE`] nodes are not stubs.
    CoreTooLarge { core: usize },
}

/// Every node's route toward every other, computed once, answered per pair in O(depth).
#[derive(Clone, Debug, Default)]
pub struct Routes {
    /// `Some` for stubs.
    stub: Vec<Option<Stub>>,
    /// Hops from the node up to its core node (0 for core nodes).
    depth: Vec<u32>,
    /// The core node a node hangs from (itself for core nodes).
    anchor: Vec<u32>,
    /// Position of a core node in `table`'s rows and columns (`u32::MAX` for stubs).
    core_pos: Vec<u32>,
    /// Core nodes, in node order.
    core: Vec<u32>,
    /// `table[a * core.len() + b]`: first link from core node `a` toward core node `b`.
    table: Vec<Option<u32>>,
    /// Deepest node on the path from the anchor down to this node whose down link is missing
    /// (0 when every one exists): the node is reachable from an ancestor at depth `k` only if
    /// this is at most `k`.
    down_gap: Vec<u32>,
    /// Deepest node on the path from this node up to its anchor whose up link is missing.
    up_gap: Vec<u32>,
    /// `[[route]]` entries, in file order (later ones win).
    overrides: Vec<(usize, usize, usize)>,
    by_pair: HashMap<(usize, usize), usize>,
}

impl Routes {
    /// The fewest-hop routes over `links` among `nodes` nodes.
    pub fn shortest(nodes: usize, links: &[LinkSpec]) -> Result<Self, RoutesError> {
        let valid = |l: &LinkSpec| l.from < nodes && l.to < nodes && l.from != l.to;
        // Distinct neighbours, either direction.
        let mut neighbours: Vec<Vec<u32>> = vec![Vec::new(); nodes];
        for l in links.iter().filter(|l| valid(l)) {
            neighbours[l.from].push(l.to as u32);
            neighbours[l.to].push(l.from as u32);
        }
        for n in &mut neighbours {
            n.sort_unstable();
            n.dedup();
        }
        // Peel stubs: a node with exactly one live neighbour hangs off it.
        let mut live_degree: Vec<usize> = neighbours.iter().map(Vec::len).collect();
        let mut live = vec![true; nodes];
        let mut parent: Vec<Option<u32>> = vec![None; nodes];
        let mut order = Vec::new(); // peeled nodes, leaves first
        let mut queue: VecDeque<usize> = (0..nodes).filter(|&n| live_degree[n] == 1).collect();
        while let Some(n) = queue.pop_front() {
            if !live[n] || live_degree[n] != 1 {
                continue; // its last neighbour went first: n is the root of its tree
            }
            let Some(&p) = neighbours[n].iter().find(|&&p| live[p as usize]) else {
                continue;
            };
            live[n] = false;
            parent[n] = Some(p);
            order.push(n);
            let p = p as usize;
            live_degree[p] -= 1;
            if live_degree[p] == 1 {
                queue.push_back(p);
            }
        }
        // Lowest-index links between each stub and its parent.
        let mut stub: Vec<Option<Stub>> = parent
            .iter()
            .map(|p| {
                p.map(|parent| Stub {
                    parent,
                    up: None,
                    down: None,
                })
            })
            .collect();
        for (i, l) in links.iter().enumerate().filter(|(_, l)| valid(l)) {
            let i = i as u32;
            if let Some(s) = stub[l.from].as_mut().filter(|s| s.parent as usize == l.to) {
                s.up.get_or_insert(i);
            }
            if let Some(s) = stub[l.to].as_mut().filter(|s| s.parent as usize == l.from) {
                s.down.get_or_insert(i);
            }
        }
        // Depths, anchors and gaps, parents before children (reverse peel order).
        let mut depth = vec![0u32; nodes];
        let mut anchor: Vec<u32> = (0..nodes as u32).collect();
        let mut down_gap = vec![0u32; nodes];
        let mut up_gap = vec![0u32; nodes];
        for &n in order.iter().rev() {
            let Some(s) = stub[n] else { continue };
            let p = s.parent as usize;
            let d = depth[p] + 1;
            if d > MAX_DEPTH {
                return Err(RoutesError::TooDeep { node: n });
            }
            depth[n] = d;
            anchor[n] = anchor[p];
            down_gap[n] = if s.down.is_none() { d } else { down_gap[p] };
            up_gap[n] = if s.up.is_none() { d } else { up_gap[p] };
        }
        // All pairs over the core only.
        // Nodes without links route nowhere and are not in the table.
        let core: Vec<u32> = (0..nodes as u32)
            .filter(|&n| stub[n as usize].is_none() && !neighbours[n as usize].is_empty())
            .collect();
        if core.len() > MAX_CORE {
            return Err(RoutesError::CoreTooLarge { core: core.len() });
        }
        let mut core_pos = vec![u32::MAX; nodes];
        for (i, &c) in core.iter().enumerate() {
            core_pos[c as usize] = i as u32;
        }
        let table = core_table(&core, &core_pos, links);
        Ok(Self {
            stub,
            depth,
            anchor,
            core_pos,
            core,
            table,
            down_gap,
            up_gap,
            overrides: Vec::new(),
            by_pair: HashMap::new(),
        })
    }

    /// Send what `node` has for `dst` out of `link` whatever the search found (`[[route]]`).
    pub fn set(&mut self, node: usize, dst: usize, link: usize) {
        self.overrides.push((node, dst, link));
        self.by_pair.insert((node, dst), link);
    }

    /// The `[[route]]` entries that change something, as `(node, dst, link)` in the order
    /// given: the last one for each pair, and only where it differs from the search's.
    pub fn overrides(&self) -> Vec<(usize, usize, usize)> {
        let mut seen = HashSet::new();
        let mut out: Vec<_> = (self.overrides.iter().rev())
            .filter(|&&(n, d, _)| seen.insert((n, d)))
            .filter(|&&(n, d, l)| self.search(n, d).map(|s| s as usize) != Some(l))
            .copied()
            .collect();
        out.reverse();
        out
    }

    /// Memory held, about: linear in the nodes, plus the core's table.
    pub fn heap_bytes(&self) -> usize {
        use std::mem::size_of;
        self.len() * (size_of::<Option<Stub>>() + 5 * size_of::<u32>())
            + self.table.len() * size_of::<Option<u32>>()
            + self.overrides.len() * 4 * size_of::<(usize, usize, usize)>()
    }

    /// Number of nodes.
    pub fn len(&self) -> usize {
        self.stub.len()
    }

    /// True for a topology without nodes.
    pub fn is_empty(&self) -> bool {
        self.stub.is_empty()
    }

    /// The first link from `node` toward `dst`, or `None` (same node, or unreachable).
    pub fn next(&self, node: usize, dst: usize) -> Option<usize> {
        if node == dst || node >= self.len() || dst >= self.len() {
            return None;
        }
        if let Some(&l) = self.by_pair.get(&(node, dst)) {
            return Some(l);
        }
        self.search(node, dst).map(|l| l as usize)
    }

    /// What the fewest-hop search gives (no overrides).
    fn search(&self, n: usize, d: usize) -> Option<u32> {
        let (an, ad) = (self.anchor[n], self.anchor[d]);
        if an != ad {
            // Up to n's core node, across the core, down to d.
            if self.up_gap[n] != 0 || self.down_gap[d] != 0 {
                return None;
            }
            let across = self.core_link(an as usize, ad as usize)?;
            return match self.stub[n] {
                Some(s) => s.up,
                None => Some(across),
            };
        }
        let x = self.common_ancestor(n, d);
        let dx = self.depth[x];
        if self.down_gap[d] > dx || self.up_gap[n] > dx {
            return None;
        }
        if x == n {
            // d is below n: down the branch that holds it.
            let mut c = d;
            while self.depth[c] > dx + 1 {
                c = self.stub[c]?.parent as usize;
            }
            self.stub[c]?.down
        } else {
            self.stub[n]?.up
        }
    }

    fn core_link(&self, a: usize, b: usize) -> Option<u32> {
        let (pa, pb) = (self.core_pos[a], self.core_pos[b]);
        if pa == u32::MAX || pb == u32::MAX {
            return None; // a node without links
        }
        self.table[pa as usize * self.core.len() + pb as usize]
    }

    /// The deepest node that is an ancestor of both (each is its own ancestor); both must hang
    /// from the same core node.
    fn common_ancestor(&self, mut a: usize, mut b: usize) -> usize {
        let up = |x: usize| self.stub[x].map_or(x, |s| s.parent as usize);
        while self.depth[a] > self.depth[b] {
            a = up(a);
        }
        while self.depth[b] > self.depth[a] {
            b = up(b);
        }
        while a != b {
            (a, b) = (up(a), up(b));
        }
        a
    }

    /// Every route a node must hold so that forwarding follows [`Routes::next`] toward every
    /// reachable destination, given that stubs also hold a default route
    /// ([`Routes::default_link`]): `(node, dst, link)`. Memory and time are O(nodes × depth +
    /// core × nodes), so a dumbbell of 100 000 hosts yields about 400 000 entries, not 10¹⁰.
    pub fn entries(&self) -> impl Iterator<Item = (usize, usize, usize)> + '_ {
        let nodes = self.len();
        // Down the tree: every ancestor of d routes it toward the branch that holds it.
        let down = (0..nodes).flat_map(move |d| {
            let mut child = d;
            std::iter::from_fn(move || {
                let s = self.stub[child]?;
                let p = s.parent as usize;
                let hop = (p, d, s.down);
                child = p;
                Some(hop)
            })
            .filter(move |&(p, d, _)| self.down_gap[d] <= self.depth[p])
            .filter_map(|(p, d, l)| Some((p, d, l? as usize)))
        });
        // Across the core: every core node routes every node hanging from another core node.
        let across = self.core.iter().flat_map(move |&c| {
            (0..nodes).filter_map(move |d| {
                let ad = self.anchor[d] as usize;
                if ad == c as usize || self.down_gap[d] != 0 {
                    return None;
                }
                self.core_link(c as usize, ad)
                    .map(|l| (c as usize, d, l as usize))
            })
        });
        down.chain(across).chain(self.overrides.iter().copied())
    }

    /// The routes toward hosts' `subnets` a node must hold beside [`Routes::entries`]: a
    /// subnet goes where its host's address goes, so each `(node, host, link)` entry is
    /// repeated for every subnet of the host, as `(node, subnet, link)`. Nodes whose default
    /// route already leads there hold nothing more. Linear in the entries times the subnets.
    pub fn subnet_entries<'a>(
        &'a self,
        nodes: &'a [NodeSpec],
    ) -> impl Iterator<Item = (usize, Ipv4Prefix, usize)> + 'a {
        let any = nodes.iter().any(|n| !n.subnets.is_empty());
        (any.then(|| self.entries()))
            .into_iter()
            .flatten()
            .flat_map(move |(n, d, l)| {
                let subnets = nodes.get(d).map_or(&[][..], |h| &h.subnets[..]);
                subnets.iter().map(move |p| (n, *p, l))
            })
    }

    /// The link a stub sends everything not in its subtree to (its only way out); `None` for
    /// core nodes.
    pub fn default_link(&self, node: usize) -> Option<usize> {
        self.stub
            .get(node)
            .copied()
            .flatten()?
            .up
            .map(|l| l as usize)
    }
}

/// Equal when every node routes every destination the same way.
impl PartialEq for Routes {
    fn eq(&self, other: &Self) -> bool {
        self.stub == other.stub
            && self.core == other.core
            && self.table == other.table
            && self.overrides() == other.overrides()
    }
}

/// Breadth-first search toward each core node over links among core nodes (stubs are never on
/// a shortest path between two core nodes).
fn core_table(core: &[u32], core_pos: &[u32], links: &[LinkSpec]) -> Vec<Option<u32>> {
    let c = core.len();
    let pos = |n: usize| core_pos.get(n).copied().filter(|&p| p != u32::MAX);
    let mut incoming: Vec<Vec<u32>> = vec![Vec::new(); c];
    let mut outgoing: Vec<Vec<u32>> = vec![Vec::new(); c];
    for (i, l) in links.iter().enumerate() {
        if let (Some(f), Some(t)) = (pos(l.from), pos(l.to)) {
            if f != t {
                incoming[t as usize].push(i as u32);
                outgoing[f as usize].push(i as u32);
            }
        }
    }
    let mut table = vec![None; c * c];
    let mut dist = vec![u32::MAX; c];
    let mut queue = VecDeque::new();
    for dst in 0..c {
        dist.fill(u32::MAX);
        dist[dst] = 0;
        queue.clear();
        queue.push_back(dst);
        while let Some(v) = queue.pop_front() {
            for &i in &incoming[v] {
                let Some(from) = pos(links[i as usize].from) else {
                    continue;
                };
                let from = from as usize;
                if dist[from] == u32::MAX {
                    dist[from] = dist[v] + 1;
                    queue.push_back(from);
                }
            }
        }
        for node in 0..c {
            if node == dst || dist[node] == u32::MAX {
                continue;
            }
            table[node * c + dst] = outgoing[node].iter().copied().find(|&i| {
                pos(links[i as usize].to)
                    .is_some_and(|t| dist[t as usize].checked_add(1) == Some(dist[node]))
            });
        }
    }
    table
}

/// Follow `routes` from `from` to `to`; `Err` says why it does not arrive (no route at some
/// node, or a loop).
pub(crate) fn trace(
    routes: &Routes,
    links: &[LinkSpec],
    from: usize,
    to: usize,
) -> Result<Vec<usize>, TraceError> {
    let mut hops = Vec::new();
    let mut at = from;
    while at != to {
        let Some(link) = routes.next(at, to) else {
            return Err(TraceError::NoRoute { at });
        };
        if hops.len() > routes.len() {
            return Err(TraceError::Loop);
        }
        hops.push(link);
        at = links.get(link).map_or(to, |l| l.to);
    }
    Ok(hops)
}

/// Why [`trace`] failed.
#[derive(Debug, Eq, PartialEq)]
pub(crate) enum TraceError {
    /// Node `at` has no route to the destination.
    NoRoute { at: usize },
    /// The routes go round in a circle.
    Loop,
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use satpep_proto::link::LinkConfig;

    use super::*;

    fn link(from: usize, to: usize) -> LinkSpec {
        LinkSpec {
            name: format!("{from}-{to}"),
            from,
            to,
            config: LinkConfig::default(),
        }
    }

    /// The reference: one breadth-first search per destination over the whole graph, the
    /// all-pairs table the loader kept before (nodes² entries).
    fn all_pairs(nodes: usize, links: &[LinkSpec]) -> Vec<Vec<Option<usize>>> {
        let mut routes = vec![vec![None; nodes]; nodes];
        for dst in 0..nodes {
            let mut dist = vec![usize::MAX; nodes];
            dist[dst] = 0;
            let mut queue = VecDeque::from([dst]);
            while let Some(v) = queue.pop_front() {
                for l in links.iter().filter(|l| l.to == v) {
                    if dist[l.from] == usize::MAX {
                        dist[l.from] = dist[v] + 1;
                        queue.push_back(l.from);
                    }
                }
            }
            for (node, row) in routes.iter_mut().enumerate() {
                if node == dst || dist[node] == usize::MAX {
                    continue;
                }
                row[dst] = links
                    .iter()
                    .position(|l| l.from == node && dist[l.to].checked_add(1) == Some(dist[node]));
            }
        }
        routes
    }

    fn routes(nodes: usize, links: &[LinkSpec]) -> Routes {
        Routes::shortest(nodes, links).expect("small graph")
    }

    #[test]
    fn fewest_hops_then_lowest_link_index() {
        // 0 → 1 → 3 and 0 → 2 → 3 are both two hops; 0 → 3 via link 4 is one hop.
        let links = [link(0, 2), link(0, 1), link(1, 3), link(2, 3)];
        let r = routes(4, &links);
        // Tie between link 0 (via 2) and link 1 (via 1): lowest index wins.
        assert_eq!(r.next(0, 3), Some(0));
        assert_eq!(r.next(2, 3), Some(3));
        assert_eq!(r.next(3, 0), None, "simplex links: no way back");
        assert_eq!(r.next(0, 0), None);
        let mut links = links.to_vec();
        links.push(link(0, 3));
        assert_eq!(routes(4, &links).next(0, 3), Some(4), "one hop beats two");
    }

    #[test]
    fn trace_reports_dead_ends_and_loops() {
        let links = [link(0, 1), link(1, 0), link(1, 2)];
        let mut r = routes(3, &links);
        assert_eq!(trace(&r, &links, 0, 2), Ok(vec![0, 2]));
        assert_eq!(trace(&r, &links, 2, 0), Err(TraceError::NoRoute { at: 2 }));
        r.set(1, 2, 1); // send it back to 0, which sends it to 1 again
        assert_eq!(trace(&r, &links, 0, 2), Err(TraceError::Loop));
    }

    /// A dumbbell of `n` host pairs: hosts 2..2+n on the left of router 0, 2+n..2+2n on the
    /// right of router 1, duplex links everywhere.
    fn dumbbell(n: usize) -> Vec<LinkSpec> {
        let mut links = vec![link(0, 1), link(1, 0)];
        for i in 0..n {
            for (h, r) in [(2 + i, 0), (2 + n + i, 1)] {
                links.push(link(h, r));
                links.push(link(r, h));
            }
        }
        links
    }

    #[test]
    fn a_dumbbell_is_a_tree_with_linear_entries() {
        for n in [10, 1000] {
            let links = dumbbell(n);
            let r = routes(2 + 2 * n, &links);
            // Hosts hang off their routers, then router 0 off router 1.
            assert_eq!(r.core, vec![1]);
            assert_eq!(r.table.len(), 1);
            // Entries: each left host at routers 0 and 1, each right host at router 1, router 0
            // at router 1; everything else is a default route.
            assert_eq!(r.entries().count(), 3 * n + 1);
            let left = 2;
            let right = 2 + n;
            assert_eq!(r.next(left, right), Some(2)); // host 2's only link, to router 0
            assert_eq!(r.next(0, right), Some(0)); // across the bottleneck
            assert_eq!(r.next(1, right), Some(5)); // router 1 down to its host
            assert_eq!(r.next(1, left), Some(1)); // back across
            assert_eq!(r.default_link(left), Some(2));
            assert_eq!(r.default_link(0), Some(0));
            assert_eq!(r.default_link(1), None);
        }
    }

    #[test]
    fn a_tree_collapses_to_one_core_node() {
        // server 0 – gateway 1 – terminals 2, 3 – clients 4 (behind 2), 5 (behind 3).
        let mut links = Vec::new();
        for (a, b) in [(0, 1), (1, 2), (1, 3), (2, 4), (3, 5)] {
            links.push(link(a, b));
            links.push(link(b, a));
        }
        let r = routes(6, &links);
        assert_eq!(r.core.len(), 1);
        assert_eq!(r, r.clone());
        let reference = all_pairs(6, &links);
        for (n, row) in reference.iter().enumerate() {
            for (d, &want) in row.iter().enumerate() {
                assert_eq!(r.next(n, d), want, "{n} → {d}");
            }
        }
    }

    #[test]
    fn a_chain_deeper_than_the_ttl_is_refused() {
        // Peeled from both ends, a chain's middle is its core: depth is half its length.
        let n = 2 * MAX_DEPTH as usize + 4;
        let links: Vec<_> = (0..n - 1)
            .flat_map(|i| [link(i, i + 1), link(i + 1, i)])
            .collect();
        assert!(matches!(
            Routes::shortest(n, &links),
            Err(RoutesError::TooDeep { .. })
        ));
        let ok: Vec<_> = (0..200)
            .flat_map(|i| [link(i, i + 1), link(i + 1, i)])
            .collect();
        let r = routes(201, &ok);
        assert_eq!(trace(&r, &ok, 0, 200).map(|h| h.len()), Ok(200));
        assert_eq!(trace(&r, &ok, 200, 0).map(|h| h.len()), Ok(200));
    }

    #[test]
    fn a_large_mesh_is_refused_not_tabled() {
        // A ring has no stubs: every node is core.
        let n = MAX_CORE + 1;
        let links: Vec<_> = (0..n).map(|i| link(i, (i + 1) % n)).collect();
        assert_eq!(
            Routes::shortest(n, &links),
            Err(RoutesError::CoreTooLarge { core: n })
        );
    }

    /// Random graphs, dense enough to have cores and sparse enough to have trees, with simplex
    /// and parallel links.
    fn graph() -> impl Strategy<Value = (usize, Vec<LinkSpec>)> {
        (2usize..14).prop_flat_map(|n| {
            let edge = (0..n, 0..n, 0u8..4);
            (Just(n), prop::collection::vec(edge, 0..(3 * n))).prop_map(|(n, edges)| {
                let mut links = Vec::new();
                for (a, b, kind) in edges {
                    if a == b {
                        continue;
                    }
                    // Mostly duplex pairs (as scenarios write them), some one-way.
                    match kind {
                        0 => links.push(link(a, b)),
                        1 => links.push(link(b, a)),
                        _ => {
                            links.push(link(a, b));
                            links.push(link(b, a));
                        }
                    }
                }
                (n, links)
            })
        })
    }

    fn node(i: usize, subnets: Vec<Ipv4Prefix>) -> NodeSpec {
        NodeSpec {
            name: format!("n{i}"),
            kind: crate::spec::NodeKind::Host,
            address: std::net::Ipv4Addr::new(10, 0, i as u8, 1),
            middlebox: None,
            subnets,
            netns: None,
            multicast: None,
            groups: Vec::new(),
        }
    }

    /// The subnet `172.16.d.0/24` of node d, or 172.16.d.0/25 and .128/25 for some.
    fn subnet_of(d: usize, half: bool) -> Vec<Ipv4Prefix> {
        let p = |s: String| s.parse::<Ipv4Prefix>().expect("valid");
        if half {
            vec![
                p(format!("172.16.{d}.0/25")),
                p(format!("172.16.{d}.128/25")),
            ]
        } else {
            vec![p(format!("172.16.{d}.0/24"))]
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1000))]
        /// Installed in real routers as the simulator installs them (default route for stubs,
        /// address entries, subnet entries), an address inside a host's subnet leaves every
        /// node by the link the full search gives toward that host; an address outside every
        /// subnet is caught by no prefix route.
        #[test]
        fn subnets_are_routed_as_their_hosts(
            g in graph(),
            owners in prop::collection::vec(0u8..3, 14),
        ) {
            use satpep_proto::net::Router;
            use satpep_proto::PortId;
            let (n, links) = g;
            let nodes: Vec<NodeSpec> = (0..n)
                .map(|i| match owners[i] {
                    0 => node(i, Vec::new()),
                    k => node(i, subnet_of(i, k == 2)),
                })
                .collect();
            let r = routes(n, &links);
            let mut routers: Vec<Router> = (0..n).map(|_| Router::new()).collect();
            let port = |l: usize| PortId(l as u16);
            for (i, rt) in routers.iter_mut().enumerate() {
                if let Some(l) = r.default_link(i) {
                    rt.set_default_route(port(l));
                }
            }
            for (i, d, l) in r.entries() {
                routers[i].add_route(nodes[d].address, port(l));
            }
            for (i, p, l) in r.subnet_entries(&nodes) {
                routers[i].add_prefix_route(p, port(l));
            }
            let reference = all_pairs(n, &links);
            for (i, row) in reference.iter().enumerate() {
                let foreign = std::net::Ipv4Addr::new(172, 17, 0, 1);
                prop_assert_eq!(routers[i].route_of(foreign), r.default_link(i).map(port));
                for (d, &want) in row.iter().enumerate() {
                    let Some(want) = want else { continue };
                    for p in &nodes[d].subnets {
                        let inside = std::net::Ipv4Addr::from(u32::from(p.network()) | 77);
                        prop_assert_eq!(
                            routers[i].route_of(inside), Some(port(want)), "{} → {}", i, p
                        );
                    }
                }
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]
        #[test]
        fn every_answer_is_the_full_search(g in graph()) {
            let (n, links) = g;
            let r = routes(n, &links);
            let reference = all_pairs(n, &links);
            for (node, row) in reference.iter().enumerate() {
                for (dst, &want) in row.iter().enumerate() {
                    prop_assert_eq!(r.next(node, dst), want, "{} → {}", node, dst);
                }
            }
            // What forwarding installs reaches the same first links.
            let mut table: HashMap<(usize, usize), usize> = HashMap::new();
            for (node, dst, l) in r.entries() {
                table.insert((node, dst), l);
            }
            for (node, row) in reference.iter().enumerate() {
                for (dst, &want) in row.iter().enumerate() {
                    let Some(want) = want else { continue };
                    let got = table.get(&(node, dst)).copied().or(r.default_link(node));
                    prop_assert_eq!(got, Some(want), "installed {} → {}", node, dst);
                }
            }
        }
    }
}
