//! Sorted, disjoint, non-adjacent byte ranges `[start, end)` over 64-bit stream offsets: the
//! receiver's out-of-order data and the sender's SACK scoreboard.

/// A set of byte ranges kept merged and sorted.
#[derive(Clone, Debug, Default, Eq, PartialEq)]
pub struct RangeSet {
    ranges: Vec<(u64, u64)>,
}

impl RangeSet {
    /// Add `[start, end)`, merging with overlapping or adjacent ranges. Returns the bytes that
    /// were not already present.
    pub fn insert(&mut self, start: u64, end: u64) -> u64 {
        if start >= end {
            return 0;
        }
        // First range whose end reaches `start` (could merge).
        let i = self.ranges.partition_point(|&(_, e)| e < start);
        let mut j = i;
        let (mut s, mut e) = (start, end);
        let mut covered = 0;
        while j < self.ranges.len() && self.ranges[j].0 <= end {
            let (rs, re) = self.ranges[j];
            covered += re.min(end).saturating_sub(rs.max(start));
            s = s.min(rs);
            e = e.max(re);
            j += 1;
        }
        self.ranges.splice(i..j, std::iter::once((s, e)));
        (end - start) - covered
    }

    /// Forget everything below `offset` (cumulatively acknowledged or delivered).
    pub fn remove_below(&mut self, offset: u64) {
        let n = self.ranges.partition_point(|&(_, e)| e <= offset);
        self.ranges.drain(..n);
        if let Some(first) = self.ranges.first_mut() {
            first.0 = first.0.max(offset);
        }
    }

    /// The range containing `offset`, if any.
    pub fn containing(&self, offset: u64) -> Option<(u64, u64)> {
        let i = self.ranges.partition_point(|&(_, e)| e <= offset);
        self.ranges.get(i).copied().filter(|&(s, _)| s <= offset)
    }

    /// The first range starting at or after `offset`, or containing it.
    pub fn next_from(&self, offset: u64) -> Option<(u64, u64)> {
        let i = self.ranges.partition_point(|&(_, e)| e <= offset);
        self.ranges.get(i).copied()
    }

    /// Bytes in `[start, end)` that are in the set.
    pub fn covered(&self, start: u64, end: u64) -> u64 {
        let i = self.ranges.partition_point(|&(_, e)| e <= start);
        self.ranges[i..]
            .iter()
            .take_while(|&&(s, _)| s < end)
            .map(|&(s, e)| e.min(end) - s.max(start))
            .sum()
    }

    /// All ranges, lowest first.
    pub fn as_slice(&self) -> &[(u64, u64)] {
        &self.ranges
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    /// Total bytes in the set.
    pub fn total(&self) -> u64 {
        self.ranges.iter().map(|&(s, e)| e - s).sum()
    }

    /// Highest end, if any.
    pub fn max_end(&self) -> Option<u64> {
        self.ranges.last().map(|&(_, e)| e)
    }

    /// Remove all ranges.
    pub fn clear(&mut self) {
        self.ranges.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn merges_overlaps_and_neighbours() {
        let mut r = RangeSet::default();
        assert_eq!(r.insert(10, 20), 10);
        assert_eq!(r.insert(30, 40), 10);
        assert_eq!(r.insert(20, 30), 10);
        assert_eq!(r.as_slice(), &[(10, 40)]);
        assert_eq!(r.insert(15, 45), 5);
        assert_eq!(r.as_slice(), &[(10, 45)]);
        r.insert(50, 60);
        assert_eq!(r.covered(0, 100), 45);
        assert_eq!(r.covered(40, 55), 10);
        r.remove_below(12);
        assert_eq!(r.as_slice(), &[(12, 45), (50, 60)]);
        r.remove_below(47);
        assert_eq!(r.as_slice(), &[(50, 60)]);
        assert_eq!(r.containing(55), Some((50, 60)));
        assert_eq!(r.containing(60), None);
    }

    proptest! {
        #[test]
        fn matches_a_bitmap(ops in proptest::collection::vec((0u64..200, 0u64..40), 0..40)) {
            let mut r = RangeSet::default();
            let mut bits = [false; 240];
            for (s, len) in ops {
                let fresh = r.insert(s, s + len);
                let mut expect = 0;
                for b in &mut bits[s as usize..(s + len) as usize] {
                    if !*b { expect += 1; *b = true; }
                }
                prop_assert_eq!(fresh, expect);
            }
            let total = bits.iter().filter(|&&b| b).count() as u64;
            prop_assert_eq!(r.total(), total);
            for w in r.as_slice().windows(2) {
                prop_assert!(w[0].1 < w[1].0, "not disjoint/merged: {:?}", r.as_slice());
            }
        }

        /// Inserts and `remove_below` interleaved: the set is always the bitmap's runs.
        #[test]
        fn remove_below_matches_a_bitmap(ops in proptest::collection::vec((any::<bool>(), 0u64..200, 0u64..40), 0..60)) {
            let mut r = RangeSet::default();
            let mut bits = [false; 240];
            for (remove, s, len) in ops {
                if remove {
                    r.remove_below(s);
                    bits[..s as usize].fill(false);
                } else {
                    r.insert(s, s + len);
                    bits[s as usize..(s + len) as usize].fill(true);
                }
                let mut runs = Vec::new();
                let mut i = 0;
                while i < bits.len() {
                    if bits[i] {
                        let start = i;
                        while i < bits.len() && bits[i] { i += 1; }
                        runs.push((start as u64, i as u64));
                    } else {
                        i += 1;
                    }
                }
                prop_assert_eq!(r.as_slice(), &runs[..]);
            }
        }
    }
}
