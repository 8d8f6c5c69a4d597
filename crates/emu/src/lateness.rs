//! Release lateness: how much later than intended each packet left a link, as a histogram.
//!
//! The link model says when a packet is due at the far end ([`satpep_proto::Node::poll_timeout`]);
//! the emulator can only hand it over when it wakes. The difference, over every packet, tells a
//! user whether the emulation kept up. Values go into a log-linear histogram (64 exact buckets
//! below 64 ns, then 32 buckets per power of two: ≤ 3.2 % relative error), 16 KiB, no
//! allocation per value; the maximum is kept exactly.

use serde::{Deserialize, Serialize};

const BUCKETS: usize = 2048;

/// A histogram of durations in nanoseconds.
#[derive(Clone, Debug)]
pub struct Histogram {
    counts: Box<[u64; BUCKETS]>,
    total: u64,
    max: u64,
}

/// The figures reported for a histogram.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Serialize)]
pub struct LatenessStats {
    /// Packets measured.
    pub packets: u64,
    /// Median lateness (µs).
    pub p50_us: f64,
    /// 99th percentile (µs).
    pub p99_us: f64,
    /// Largest lateness (µs), exact.
    pub max_us: f64,
}

impl Default for Histogram {
    fn default() -> Self {
        Self {
            counts: Box::new([0; BUCKETS]),
            total: 0,
            max: 0,
        }
    }
}

impl Histogram {
    /// Count one value (ns).
    #[inline]
    pub fn record(&mut self, ns: u64) {
        self.counts[index(ns)] += 1;
        self.total += 1;
        self.max = self.max.max(ns);
    }

    /// Add every value of `other`.
    pub fn merge(&mut self, other: &Self) {
        for (a, b) in self.counts.iter_mut().zip(other.counts.iter()) {
            *a += b;
        }
        self.total += other.total;
        self.max = self.max.max(other.max);
    }

    /// Values counted.
    pub fn len(&self) -> u64 {
        self.total
    }

    /// True when nothing was counted.
    pub fn is_empty(&self) -> bool {
        self.total == 0
    }

    /// The `q`-quantile (0 < q ≤ 1) in ns: the middle of the bucket holding the value of rank
    /// ⌈q·n⌉, never more than the exact maximum; 0 when empty.
    pub fn quantile(&self, q: f64) -> u64 {
        if self.total == 0 {
            return 0;
        }
        let rank = ((q * self.total as f64).ceil() as u64).clamp(1, self.total);
        let mut seen = 0;
        for (i, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                let (lo, width) = bucket(i);
                return (lo + width / 2).min(self.max);
            }
        }
        self.max
    }

    /// p50, p99 and max in µs.
    pub fn stats(&self) -> LatenessStats {
        LatenessStats {
            packets: self.total,
            p50_us: self.quantile(0.5) as f64 / 1e3,
            p99_us: self.quantile(0.99) as f64 / 1e3,
            max_us: self.max as f64 / 1e3,
        }
    }
}

/// Bucket of `v`: exact below 64, then 32 per power of two.
#[inline]
fn index(v: u64) -> usize {
    if v < 64 {
        return v as usize;
    }
    let e = 63 - v.leading_zeros() as usize; // ≥ 6
    let shift = e - 5;
    let sub = (v >> shift) as usize; // 32..64
    (shift * 32 + sub).min(BUCKETS - 1)
}

/// Lowest value and width of bucket `i`.
fn bucket(i: usize) -> (u64, u64) {
    if i < 64 {
        return (i as u64, 1);
    }
    let shift = i / 32 - 1;
    let sub = (i % 32 + 32) as u64;
    (sub << shift, 1 << shift)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_tile_the_line_without_gaps() {
        for i in 0..1900 {
            let (lo, w) = bucket(i);
            assert_eq!(index(lo), i, "bucket {i} starts at {lo}");
            assert_eq!(index(lo + w - 1), i);
            assert_eq!(index(lo + w), i + 1);
        }
    }

    #[test]
    fn quantiles_within_the_bucket_error() {
        let mut h = Histogram::default();
        // 1..=1000 µs, one each: p50 = 500 µs, p99 = 990 µs.
        for us in 1..=1000u64 {
            h.record(us * 1000);
        }
        let s = h.stats();
        assert_eq!(s.packets, 1000);
        assert!((s.p50_us - 500.0).abs() / 500.0 < 0.032, "{s:?}");
        assert!((s.p99_us - 990.0).abs() / 990.0 < 0.032, "{s:?}");
        assert_eq!(s.max_us, 1000.0);
        assert_eq!(Histogram::default().quantile(0.99), 0);
    }

    #[test]
    fn merge_adds_counts_and_keeps_the_max() {
        let (mut a, mut b) = (Histogram::default(), Histogram::default());
        a.record(10);
        b.record(5_000_000);
        a.merge(&b);
        assert_eq!(a.len(), 2);
        assert_eq!(a.quantile(0.5), 10);
        assert_eq!(a.stats().max_us, 5000.0);
    }
}
