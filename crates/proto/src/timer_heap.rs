//! One deadline per item (connection, source), indexed: the earliest in O(1), a deadline moved
//! or cleared in O(log n), and the due items found without touching the others.
//!
//! A host restarts a connection's RTO on nearly every ACK, so its deadline moves on nearly
//! every event. A `BTreeSet<(Instant, usize)>` paid a remove and an insert (about 190
//! instructions) each time even with one connection; a 4-ary heap with a position per item
//! pays a sift over a path of length log₄ n, nothing for n = 1.

use crate::time::Instant;

/// Items `0..n`, each with at most one deadline.
#[derive(Clone, Debug, Default)]
pub struct TimerHeap {
    /// A 4-ary min-heap of (deadline, item), ordered by deadline only: nothing observable
    /// depends on how ties sit in it ([`due`](Self::due) reports a set).
    heap: Vec<(Instant, u32)>,
    /// Where each item sits in `heap` (`ABSENT`: no deadline).
    pos: Vec<u32>,
}

const ABSENT: u32 = u32::MAX;

impl TimerHeap {
    /// An empty heap.
    pub fn new() -> Self {
        Self::default()
    }

    /// Set item `i`'s deadline (`None` clears it).
    pub fn set(&mut self, i: usize, at: Option<Instant>) {
        if i >= self.pos.len() {
            self.pos.resize(i + 1, ABSENT);
        }
        let p = self.pos[i];
        match (p, at) {
            (ABSENT, None) => {}
            (ABSENT, Some(t)) => {
                let slot = self.heap.len();
                // An item number beyond u32 would need 4 G connections on one host.
                self.heap.push((t, i as u32));
                self.pos[i] = slot as u32;
                self.sift_up(slot);
            }
            (p, None) => self.remove_at(p as usize),
            (p, Some(t)) => {
                let p = p as usize;
                let old = self.heap[p].0;
                self.heap[p].0 = t;
                if t < old {
                    self.sift_up(p);
                } else if t > old {
                    self.sift_down(p);
                }
            }
        }
    }

    /// Item `i`'s deadline.
    pub fn get(&self, i: usize) -> Option<Instant> {
        match self.pos.get(i) {
            Some(&p) if p != ABSENT => Some(self.heap[p as usize].0),
            _ => None,
        }
    }

    /// The earliest deadline.
    pub fn first(&self) -> Option<Instant> {
        self.heap.first().map(|&(t, _)| t)
    }

    /// Items with deadlines.
    pub fn len(&self) -> usize {
        self.heap.len()
    }

    /// True when no item has a deadline.
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }

    /// Append to `out` every item whose deadline is at or before `now`, in no particular
    /// order; only the due entries and their children are visited.
    pub fn due(&self, now: Instant, out: &mut Vec<usize>) {
        self.due_from(0, now, out);
    }

    /// [`due`](Self::due) in the subtree at `k` (depth log₄ n: recursion is bounded).
    fn due_from(&self, k: usize, now: Instant, out: &mut Vec<usize>) {
        match self.heap.get(k) {
            Some(&(t, i)) if t <= now => {
                out.push(i as usize);
                let first = 4 * k + 1;
                for c in first..(first + 4).min(self.heap.len()) {
                    self.due_from(c, now, out);
                }
            }
            _ => {}
        }
    }

    fn remove_at(&mut self, p: usize) {
        let (_, gone) = self.heap[p];
        self.pos[gone as usize] = ABSENT;
        let Some(last) = self.heap.pop() else { return };
        if p == self.heap.len() {
            return;
        }
        self.heap[p] = last;
        self.pos[last.1 as usize] = p as u32;
        if p > 0 && last.0 < self.heap[(p - 1) / 4].0 {
            self.sift_up(p);
        } else {
            self.sift_down(p);
        }
    }

    fn sift_up(&mut self, mut k: usize) {
        let e = self.heap[k];
        while k > 0 {
            let parent = (k - 1) / 4;
            if self.heap[parent].0 <= e.0 {
                break;
            }
            self.heap[k] = self.heap[parent];
            self.pos[self.heap[k].1 as usize] = k as u32;
            k = parent;
        }
        self.heap[k] = e;
        self.pos[e.1 as usize] = k as u32;
    }

    fn sift_down(&mut self, mut k: usize) {
        let e = self.heap[k];
        let n = self.heap.len();
        loop {
            let first = 4 * k + 1;
            if first >= n {
                break;
            }
            let mut m = first;
            for c in first + 1..(first + 4).min(n) {
                if self.heap[c].0 < self.heap[m].0 {
                    m = c;
                }
            }
            if self.heap[m].0 >= e.0 {
                break;
            }
            self.heap[k] = self.heap[m];
            self.pos[self.heap[k].1 as usize] = k as u32;
            k = m;
        }
        self.heap[k] = e;
        self.pos[e.1 as usize] = k as u32;
    }
}

#[cfg(test)]
impl TimerHeap {
    /// The heap order and the position index, checked everywhere.
    fn check(&self) {
        for (k, &(t, i)) in self.heap.iter().enumerate() {
            if k > 0 {
                assert!(
                    self.heap[(k - 1) / 4].0 <= t,
                    "heap order broken at {k}: {self:?}"
                );
            }
            assert_eq!(self.pos[i as usize] as usize, k, "position of item {i}");
        }
        let present = self.pos.iter().filter(|&&p| p != ABSENT).count();
        assert_eq!(present, self.heap.len());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    #[test]
    fn one_item_moves_and_clears() {
        let mut h = TimerHeap::new();
        assert_eq!(h.first(), None);
        h.set(0, Some(Instant(50)));
        assert_eq!(h.first(), Some(Instant(50)));
        assert!(!h.is_empty());
        h.set(0, Some(Instant(80)));
        assert_eq!(
            (h.first(), h.get(0), h.len()),
            (Some(Instant(80)), Some(Instant(80)), 1)
        );
        h.set(0, None);
        assert!(h.is_empty());
        assert_eq!((h.first(), h.get(0)), (None, None));
        h.set(0, None);
        assert!(h.is_empty());
    }

    #[test]
    fn due_finds_exactly_the_due_items_among_many() {
        let mut h = TimerHeap::new();
        for i in 0..1000 {
            h.set(i, Some(Instant(1000 + i as u64)));
        }
        let mut out = Vec::new();
        h.due(Instant(1002), &mut out);
        out.sort_unstable();
        assert_eq!(out, vec![0, 1, 2]);
        h.due(Instant(999), &mut out);
        assert_eq!(out.len(), 3);
    }

    proptest! {
        /// Against a map of the same deadlines: the first, each item's deadline and the due
        /// set agree after any sequence of sets and clears.
        #[test]
        fn agrees_with_a_map(ops in proptest::collection::vec((0usize..40, proptest::option::of(0u64..200)), 0..400), now in 0u64..200) {
            let mut h = TimerHeap::new();
            let mut model: BTreeMap<usize, u64> = BTreeMap::new();
            for (i, t) in ops {
                h.set(i, t.map(Instant));
                h.check();
                match t {
                    Some(t) => { model.insert(i, t); }
                    None => { model.remove(&i); }
                }
                prop_assert_eq!(h.first(), model.values().min().copied().map(Instant));
                prop_assert_eq!(h.len(), model.len());
                prop_assert_eq!(h.get(i), model.get(&i).copied().map(Instant));
            }
            let mut out = Vec::new();
            h.due(Instant(now), &mut out);
            out.sort_unstable();
            let expect: Vec<usize> = model.iter().filter(|&(_, &t)| t <= now).map(|(&i, _)| i).collect();
            prop_assert_eq!(out, expect);
        }
    }
}
