//! TCP sequence numbers: modulo-2³² arithmetic, ordered by signed difference (RFC 9293 §3.4).

use std::cmp::Ordering;
use std::fmt;
use std::ops::{Add, Sub};

/// A TCP sequence number. Compare with `<`/`>` only within half the sequence space of each other.
#[derive(Clone, Copy, Default, Eq, Hash, PartialEq)]
pub struct SeqNumber(pub u32);

impl SeqNumber {
    /// The larger of two sequence numbers.
    pub fn max(self, other: Self) -> Self {
        if self >= other {
            self
        } else {
            other
        }
    }
    /// The smaller of two sequence numbers.
    pub fn min(self, other: Self) -> Self {
        if self <= other {
            self
        } else {
            other
        }
    }
}

impl Add<u32> for SeqNumber {
    type Output = Self;
    fn add(self, n: u32) -> Self {
        Self(self.0.wrapping_add(n))
    }
}

impl Sub<u32> for SeqNumber {
    type Output = Self;
    fn sub(self, n: u32) -> Self {
        Self(self.0.wrapping_sub(n))
    }
}

impl Sub for SeqNumber {
    type Output = i64;
    /// Signed distance `self - rhs` in bytes.
    fn sub(self, rhs: Self) -> i64 {
        i64::from(self.0.wrapping_sub(rhs.0) as i32)
    }
}

impl PartialOrd for SeqNumber {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for SeqNumber {
    fn cmp(&self, other: &Self) -> Ordering {
        (self.0.wrapping_sub(other.0) as i32).cmp(&0)
    }
}

impl fmt::Debug for SeqNumber {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl fmt::Display for SeqNumber {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn ordering_survives_wraparound(base: u32, d in 1u32..0x7fff_ffff) {
            let a = SeqNumber(base);
            let b = a + d;
            prop_assert!(a < b);
            prop_assert!(b > a);
            prop_assert_eq!(b - a, i64::from(d));
            prop_assert_eq!(a - b, -i64::from(d));
            prop_assert_eq!(b - d, a);
        }
    }

    #[test]
    fn wraps_at_two_to_the_32() {
        let a = SeqNumber(u32::MAX - 10);
        let b = a + 20;
        assert_eq!(b.0, 9);
        assert!(b > a);
        assert_eq!(a.max(b), b);
    }
}
