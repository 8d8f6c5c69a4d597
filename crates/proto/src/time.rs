//! Time and rate types: integer nanoseconds since scenario start, and bits per second.
//!
//! Nanoseconds keep rate maths exact: a 1500-byte packet at 2 Mb/s takes 6 ms, at 1 Gb/s 12 µs.

use std::fmt;
use std::ops::{Add, AddAssign, Sub};

/// A point in time: nanoseconds since the start of the scenario (the simulator starts at
/// [`Instant::ZERO`]; the emulator maps its monotonic clock through a fixed epoch).
#[derive(Clone, Copy, Debug, Default, Eq, Hash, Ord, PartialEq, PartialOrd)]
pub struct Instant(pub u64);

/// A span of time in nanoseconds.
#[derive(Clone, Copy, Debug, Default, Eq, Hash, Ord, PartialEq, PartialOrd)]
pub struct Duration(pub u64);

/// A data rate in bits per second.
#[derive(Clone, Copy, Debug, Default, Eq, Hash, Ord, PartialEq, PartialOrd)]
pub struct Bitrate(pub u64);

impl Instant {
    /// The start of a scenario.
    pub const ZERO: Self = Self(0);
    /// Later than any real event; used as "never".
    pub const FAR_FUTURE: Self = Self(u64::MAX);

    /// Nanoseconds since scenario start.
    pub const fn as_nanos(self) -> u64 {
        self.0
    }

    /// Seconds since scenario start, for reports and plots.
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 * 1e-9
    }

    /// `self - earlier`, or zero when `earlier` is later.
    pub fn saturating_since(self, earlier: Self) -> Duration {
        Duration(self.0.saturating_sub(earlier.0))
    }
}

impl Duration {
    /// No time at all.
    pub const ZERO: Self = Self(0);
    /// The largest representable span.
    pub const MAX: Self = Self(u64::MAX);

    /// From nanoseconds.
    pub const fn from_nanos(ns: u64) -> Self {
        Self(ns)
    }
    /// From microseconds.
    pub const fn from_micros(us: u64) -> Self {
        Self(us * 1_000)
    }
    /// From milliseconds.
    pub const fn from_millis(ms: u64) -> Self {
        Self(ms * 1_000_000)
    }
    /// From whole seconds.
    pub const fn from_secs(s: u64) -> Self {
        Self(s * 1_000_000_000)
    }
    /// From fractional seconds, rounded to the nearest nanosecond (negative becomes zero).
    pub fn from_secs_f64(s: f64) -> Self {
        Self((s * 1e9).round().max(0.0) as u64)
    }
    /// Nanoseconds.
    pub const fn as_nanos(self) -> u64 {
        self.0
    }
    /// Seconds as a float, for reports and for algorithms written in seconds (CUBIC).
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 * 1e-9
    }
    /// Multiply, saturating at [`Duration::MAX`].
    pub const fn saturating_mul(self, k: u64) -> Self {
        Self(self.0.saturating_mul(k))
    }
}

impl Bitrate {
    /// No serialisation time at all (`tx_time` is zero): a link that only delays.
    pub const INFINITE: Self = Self(u64::MAX);

    /// From bits per second.
    pub const fn from_bps(bps: u64) -> Self {
        Self(bps)
    }
    /// Bits per second.
    pub const fn bps(self) -> u64 {
        self.0
    }
    /// Time to serialise `bytes` at this rate, rounded up to the next nanosecond so that a link
    /// never runs faster than configured. A zero rate never finishes ([`Duration::MAX`]).
    pub fn tx_time(self, bytes: u64) -> Duration {
        if self.0 == 0 {
            return Duration::MAX;
        }
        if self == Self::INFINITE {
            return Duration::ZERO;
        }
        // Any packet (under 2.3 GB) fits the product in 64 bits: one division instead of the
        // 128-bit one, which is a library call (this runs once per packet per link).
        if let Some(bits) = bytes.checked_mul(8_000_000_000) {
            return Duration(bits.div_ceil(self.0));
        }
        let bits = u128::from(bytes) * 8 * 1_000_000_000;
        let ns = bits.div_ceil(u128::from(self.0));
        Duration(u64::try_from(ns).unwrap_or(u64::MAX))
    }
    /// Bytes this rate carries in `d` (rounded down).
    pub fn bytes_in(self, d: Duration) -> u64 {
        let b = u128::from(self.0) * u128::from(d.0) / 8 / 1_000_000_000;
        u64::try_from(b).unwrap_or(u64::MAX)
    }
}

impl Add<Duration> for Instant {
    type Output = Self;
    fn add(self, d: Duration) -> Self {
        Self(self.0.saturating_add(d.0))
    }
}

impl AddAssign<Duration> for Instant {
    fn add_assign(&mut self, d: Duration) {
        self.0 = self.0.saturating_add(d.0);
    }
}

impl Sub<Self> for Instant {
    type Output = Duration;
    /// Panics in debug builds when `rhs` is later; use [`Instant::saturating_since`] when unsure.
    fn sub(self, rhs: Self) -> Duration {
        Duration(self.0 - rhs.0)
    }
}

impl Add for Duration {
    type Output = Self;
    fn add(self, d: Self) -> Self {
        Self(self.0.saturating_add(d.0))
    }
}

impl Sub for Duration {
    type Output = Self;
    fn sub(self, d: Self) -> Self {
        Self(self.0.saturating_sub(d.0))
    }
}

impl fmt::Display for Instant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:.6}s", self.as_secs_f64())
    }
}

impl fmt::Display for Duration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ns = self.0;
        if ns.is_multiple_of(1_000_000_000) {
            write!(f, "{}s", ns / 1_000_000_000)
        } else if ns.is_multiple_of(1_000_000) {
            write!(f, "{}ms", ns / 1_000_000)
        } else if ns.is_multiple_of(1_000) {
            write!(f, "{}us", ns / 1_000)
        } else {
            write!(f, "{ns}ns")
        }
    }
}

impl fmt::Display for Bitrate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = self.0;
        if b >= 1_000_000_000 && b.is_multiple_of(1_000_000) {
            write!(f, "{}Gbps", b as f64 / 1e9)
        } else if b >= 1_000_000 && b.is_multiple_of(1_000) {
            write!(f, "{}Mbps", b as f64 / 1e6)
        } else if b >= 1_000 {
            write!(f, "{}kbps", b as f64 / 1e3)
        } else {
            write!(f, "{b}bps")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tx_time_is_exact_for_round_numbers() {
        assert_eq!(Bitrate(2_000_000).tx_time(1500), Duration::from_millis(6));
        assert_eq!(
            Bitrate(1_000_000_000).tx_time(1500),
            Duration::from_micros(12)
        );
        // 40-byte ACK at 9.6 kb/s: 33.333… ms, rounded up.
        assert_eq!(Bitrate(9_600).tx_time(40), Duration(33_333_334));
        assert_eq!(Bitrate(0).tx_time(1), Duration::MAX);
    }

    proptest::proptest! {
        /// The 64-bit path gives exactly the 128-bit ceiling, on both sides of where the
        /// product stops fitting in 64 bits.
        #[test]
        fn tx_time_is_the_exact_ceiling(bytes in proptest::prop_oneof![0u64..100_000, 2_305_843_000u64..2_305_844_000, 0u64..u64::MAX / 8], bps in 1u64..u64::MAX - 1) {
            let exact = (u128::from(bytes) * 8_000_000_000).div_ceil(u128::from(bps));
            let want = Duration(u64::try_from(exact).unwrap_or(u64::MAX));
            proptest::prop_assert_eq!(Bitrate(bps).tx_time(bytes), want);
        }
    }

    #[test]
    fn bytes_in_inverts_tx_time() {
        let r = Bitrate(10_000_000);
        assert_eq!(r.bytes_in(Duration::from_secs(1)), 1_250_000);
        assert_eq!(r.bytes_in(r.tx_time(1500)), 1500);
    }

    #[test]
    fn display_uses_people_units() {
        assert_eq!(Duration::from_millis(280).to_string(), "280ms");
        assert_eq!(Bitrate(9_600).to_string(), "9.6kbps");
        assert_eq!(Bitrate(10_000_000).to_string(), "10Mbps");
    }
}
