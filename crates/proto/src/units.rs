//! Units as people write them in scenario files: `"10Mbps"`, `"9.6kbps"`, `"280ms"`, `"720KB"`.
//!
//! Decimal prefixes are powers of ten (`KB` = 1000 bytes, `Mbps` = 10⁶ bit/s), binary prefixes are
//! powers of two (`KiB` = 1024 bytes), as in SI/IEC. A bare number is taken in the base unit
//! (seconds, bit/s, bytes) so that `--set` overrides can be plain numbers.

use std::fmt;

use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};

use crate::time::{Bitrate, Duration};

/// A byte count, e.g. a buffer or transfer size.
#[derive(Clone, Copy, Debug, Default, Eq, Hash, Ord, PartialEq, PartialOrd)]
pub struct ByteSize(pub u64);

impl ByteSize {
    /// Bytes.
    pub const fn bytes(self) -> u64 {
        self.0
    }
}

/// Why a unit string was rejected; the message says what was expected.
#[derive(Clone, Debug, Eq, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct UnitError(pub String);

fn split_number(s: &str) -> Result<(f64, &str), UnitError> {
    let s = s.trim();
    let end = s
        .find(|c: char| {
            !(c.is_ascii_digit() || c == '.' || c == 'e' || c == 'E' || c == '-' || c == '+')
        })
        .unwrap_or(s.len());
    let (num, unit) = s.split_at(end);
    let value: f64 = num
        .parse()
        .map_err(|_| UnitError(format!("`{s}` does not start with a number")))?;
    if !value.is_finite() || value < 0.0 {
        return Err(UnitError(format!(
            "`{s}` must be a finite, non-negative number"
        )));
    }
    Ok((value, unit.trim()))
}

/// Parse a duration: `ns`, `us`/`µs`, `ms`, `s`, `min`, `h`; a bare number is seconds.
pub fn parse_duration(s: &str) -> Result<Duration, UnitError> {
    let (v, unit) = split_number(s)?;
    let scale = match unit {
        "ns" | "nsec" => 1.0,
        "us" | "µs" | "usec" => 1e3,
        "ms" | "msec" => 1e6,
        "" | "s" | "sec" | "secs" => 1e9,
        "min" => 60e9,
        "h" => 3600e9,
        _ => {
            return Err(UnitError(format!(
                "unknown time unit in `{s}`: expected ns, us, ms, s, min or h (e.g. \"280ms\")"
            )))
        }
    };
    to_u64(v * scale, s).map(Duration)
}

/// Parse a rate in bit/s, written as scenario files (`10Mbps`, `9.6 kb/s`), tc (`10mbit`,
/// `512kbit`, `1gbit`) or iperf (`10M`, `500k`) write it: prefixes k, M, G, T are powers of ten,
/// kibit/mibit/gibit powers of 1024, letter case is ignored; a bare number is bit/s. A unit
/// with a capital `B` is bytes per second, which satpep does not take: the error says the
/// bit/s value to write instead.
pub fn parse_bitrate(s: &str) -> Result<Bitrate, UnitError> {
    let (v, unit) = split_number(s)?;
    if unit.contains('B') {
        return Err(UnitError(format!(
            "`{s}` is bytes per second; satpep rates are in bits per second{}",
            bytes_rate_hint(v, unit)
        )));
    }
    let lower = unit.to_ascii_lowercase();
    let prefix = lower
        .strip_suffix("bps")
        .or_else(|| lower.strip_suffix("b/s"))
        .or_else(|| lower.strip_suffix("bit/s"))
        .or_else(|| lower.strip_suffix("bit"))
        .unwrap_or(&lower);
    let scale = match prefix {
        "" => 1.0,
        "k" => 1e3,
        "m" => 1e6,
        "g" => 1e9,
        "t" => 1e12,
        "ki" => 1024.0,
        "mi" => 1024.0 * 1024.0,
        "gi" => 1024.0 * 1024.0 * 1024.0,
        _ => {
            return Err(UnitError(format!(
                "unknown rate unit in `{s}`: expected bps, kbps, Mbps or Gbps (or tc's kbit, \
                 mbit, gbit; e.g. \"9.6kbps\", \"10mbit\")"
            )))
        }
    };
    to_u64(v * scale, s).map(Bitrate)
}

/// `: write 80Mbps` for `10MB/s`, or nothing when the prefix is not one we know.
fn bytes_rate_hint(v: f64, unit: &str) -> String {
    let prefix = match unit.chars().next() {
        Some('B') => "",
        Some('k' | 'K') => "k",
        Some('M') => "M",
        Some('G') => "G",
        _ => return String::new(),
    };
    format!(": write {}{prefix}bps", v * 8.0)
}

/// Parse a size: `B`, `KB`/`kB`, `MB`, `GB` (powers of 1000), `KiB`, `MiB`, `GiB` (powers of
/// 1024); a bare number is bytes.
pub fn parse_bytes(s: &str) -> Result<ByteSize, UnitError> {
    let (v, unit) = split_number(s)?;
    let scale = match unit {
        "" | "B" => 1.0,
        "KB" | "kB" | "kb" => 1e3,
        "MB" => 1e6,
        "GB" => 1e9,
        "KiB" => 1024.0,
        "MiB" => 1024.0 * 1024.0,
        "GiB" => 1024.0 * 1024.0 * 1024.0,
        _ => {
            return Err(UnitError(format!(
            "unknown size unit in `{s}`: expected B, KB, MB, GB, KiB, MiB or GiB (e.g. \"720KB\")"
        )))
        }
    };
    to_u64(v * scale, s).map(ByteSize)
}

fn to_u64(x: f64, s: &str) -> Result<u64, UnitError> {
    if x > u64::MAX as f64 {
        return Err(UnitError(format!("`{s}` is too large")));
    }
    Ok(x.round() as u64)
}

macro_rules! unit_serde {
    ($ty:ty, $parse:ident, $what:literal, $example:literal) => {
        impl<'de> Deserialize<'de> for $ty {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct V;
                impl<'de> Visitor<'de> for V {
                    type Value = $ty;
                    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                        write!(f, concat!($what, " such as \"", $example, "\""))
                    }
                    fn visit_str<E: de::Error>(self, v: &str) -> Result<$ty, E> {
                        $parse(v).map_err(|e| E::custom(e.0))
                    }
                    fn visit_u64<E: de::Error>(self, v: u64) -> Result<$ty, E> {
                        self.visit_str(&v.to_string())
                    }
                    fn visit_i64<E: de::Error>(self, v: i64) -> Result<$ty, E> {
                        self.visit_str(&v.to_string())
                    }
                    fn visit_f64<E: de::Error>(self, v: f64) -> Result<$ty, E> {
                        // `1e300` as written, not as 301 digits in the error message.
                        if v.abs() >= 1e16 {
                            self.visit_str(&format!("{v:e}"))
                        } else {
                            self.visit_str(&v.to_string())
                        }
                    }
                }
                d.deserialize_any(V)
            }
        }
        impl Serialize for $ty {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_str(self)
            }
        }
    };
}

unit_serde!(Duration, parse_duration, "a duration", "280ms");
unit_serde!(Bitrate, parse_bitrate, "a rate", "10Mbps");
unit_serde!(ByteSize, parse_bytes, "a size", "720KB");

impl fmt::Display for ByteSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}B", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_what_people_write() {
        assert_eq!(parse_bitrate("10Mbps"), Ok(Bitrate(10_000_000)));
        assert_eq!(parse_bitrate("9.6kbps"), Ok(Bitrate(9_600)));
        assert_eq!(parse_bitrate("430 kb/s"), Ok(Bitrate(430_000)));
        assert_eq!(parse_duration("280ms"), Ok(Duration::from_millis(280)));
        assert_eq!(parse_duration("1.5"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("250us"), Ok(Duration::from_micros(250)));
        assert_eq!(parse_bytes("720KB"), Ok(ByteSize(720_000)));
        assert_eq!(parse_bytes("64KiB"), Ok(ByteSize(65_536)));
        assert_eq!(parse_bytes("1e6"), Ok(ByteSize(1_000_000)));
    }

    /// The forms tc (`tc qdisc … rate 10mbit`) and iperf (`-b 10M`) users type.
    #[test]
    fn parses_tc_and_iperf_rates() {
        for (text, bps) in [
            ("10mbit", 10_000_000),
            ("10 Mbit", 10_000_000),
            ("512kbit", 512_000),
            ("1gbit", 1_000_000_000),
            ("64bit", 64),
            ("10M", 10_000_000),
            ("500k", 500_000),
            ("2G", 2_000_000_000),
            ("1mibit", 1_048_576),
            ("1.5Mbit/s", 1_500_000),
        ] {
            assert_eq!(parse_bitrate(text), Ok(Bitrate(bps)), "{text}");
        }
        assert_eq!(parse_duration("40msec"), Ok(Duration::from_millis(40)));
        assert_eq!(parse_duration("200usec"), Ok(Duration::from_micros(200)));
    }

    /// Bytes per second are refused, with the bit/s value to write instead.
    #[test]
    fn byte_rates_are_refused_with_the_bit_rate_to_write() {
        let e = parse_bitrate("10MB/s").unwrap_err().0;
        assert!(
            e.contains("bytes per second") && e.ends_with("write 80Mbps"),
            "{e}"
        );
        let e = parse_bitrate("1.2 kBps").unwrap_err().0;
        assert!(e.ends_with("write 9.6kbps"), "{e}");
        assert!(parse_bitrate("10 furlongs")
            .unwrap_err()
            .0
            .contains("10mbit"));
    }

    #[test]
    fn rejects_with_a_reason() {
        assert!(parse_bitrate("10 furlongs").unwrap_err().0.contains("Mbps"));
        assert!(parse_duration("fast").unwrap_err().0.contains("number"));
        assert!(parse_bytes("-3KB").is_err());
    }

    #[test]
    fn display_round_trips() {
        for s in ["280ms", "1s", "250us", "7ns"] {
            assert_eq!(parse_duration(s).unwrap().to_string(), s);
        }
        for s in ["9.6kbps", "10Mbps", "1Gbps", "64bps"] {
            assert_eq!(parse_bitrate(s).unwrap().to_string(), s);
        }
    }
}
