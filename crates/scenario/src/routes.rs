//! Static routing: fewest hops by breadth-first search, ties broken by the lowest link index.
//!
//! Every node may forward (hosts too), as on a plain IP network with static routes; links are
//! simplex, so the route from a to b and the route from b to a are found separately.

use std::collections::VecDeque;

use crate::spec::LinkSpec;

/// `routes[node][dst]`: the first link on a fewest-hop path from `node` to `dst`; among several
/// such paths, the one whose first link has the lowest index. `None` on the diagonal and when
/// `dst` cannot be reached.
pub(crate) fn shortest(nodes: usize, links: &[LinkSpec]) -> Vec<Vec<Option<usize>>> {
    let mut routes = vec![vec![None; nodes]; nodes];
    let mut dist = vec![usize::MAX; nodes];
    let mut queue = VecDeque::new();
    // Adjacency lists in link-index order, so that each search costs O(nodes + links) rather
    // than O(nodes × links) (a 1000-terminal DAMA scenario has 2000 links).
    let mut incoming: Vec<Vec<usize>> = vec![Vec::new(); nodes];
    let mut outgoing: Vec<Vec<usize>> = vec![Vec::new(); nodes];
    for (i, l) in links.iter().enumerate() {
        if l.from < nodes && l.to < nodes {
            incoming[l.to].push(i);
            outgoing[l.from].push(i);
        }
    }
    for dst in 0..nodes {
        // Hop count from every node to `dst`: BFS from `dst` over reversed links.
        dist.fill(usize::MAX);
        dist[dst] = 0;
        queue.clear();
        queue.push_back(dst);
        while let Some(v) = queue.pop_front() {
            for &i in &incoming[v] {
                let from = links[i].from;
                if dist[from] == usize::MAX {
                    dist[from] = dist[v] + 1;
                    queue.push_back(from);
                }
            }
        }
        for (node, row) in routes.iter_mut().enumerate() {
            if node == dst || dist[node] == usize::MAX {
                continue;
            }
            row[dst] = outgoing[node]
                .iter()
                .copied()
                .find(|&i| dist[links[i].to].checked_add(1) == Some(dist[node]));
        }
    }
    routes
}

/// Follow `routes` from `from` to `to`; `Err` says why it does not arrive (no route at some
/// node, or a loop).
pub(crate) fn trace(
    routes: &[Vec<Option<usize>>],
    links: &[LinkSpec],
    from: usize,
    to: usize,
) -> Result<Vec<usize>, TraceError> {
    let mut hops = Vec::new();
    let mut at = from;
    while at != to {
        let Some(link) = routes.get(at).and_then(|r| r.get(to)).copied().flatten() else {
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

    #[test]
    fn fewest_hops_then_lowest_link_index() {
        // 0 → 1 → 3 and 0 → 2 → 3 are both two hops; 0 → 3 via link 4 is one hop.
        let links = [link(0, 2), link(0, 1), link(1, 3), link(2, 3)];
        let r = shortest(4, &links);
        // Tie between link 0 (via 2) and link 1 (via 1): lowest index wins.
        assert_eq!(r[0][3], Some(0));
        assert_eq!(r[2][3], Some(3));
        assert_eq!(r[3][0], None, "simplex links: no way back");
        assert_eq!(r[0][0], None);
        let mut links = links.to_vec();
        links.push(link(0, 3));
        assert_eq!(shortest(4, &links)[0][3], Some(4), "one hop beats two");
    }

    #[test]
    fn trace_reports_dead_ends_and_loops() {
        let links = [link(0, 1), link(1, 0), link(1, 2)];
        let mut r = shortest(3, &links);
        assert_eq!(trace(&r, &links, 0, 2), Ok(vec![0, 2]));
        assert_eq!(trace(&r, &links, 2, 0), Err(TraceError::NoRoute { at: 2 }));
        r[1][2] = Some(1); // send it back to 0, which sends it to 1 again
        assert_eq!(trace(&r, &links, 0, 2), Err(TraceError::Loop));
    }
}
