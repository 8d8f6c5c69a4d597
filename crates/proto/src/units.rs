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
        "ns" => 1.0,
        "us" | "µs" => 1e3,
        "ms" => 1e6,
        "" | "s" | "sec" => 1e9,
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

/// Parse a rate: `bps`, `kbps`, `Mbps`, `Gbps` (also `b/s`, `kb/s`, `Mb/s`, `Gb/s`); a bare
/// number is bit/s.
pub fn parse_bitrate(s: &str) -> Result<Bitrate, UnitError> {
    let (v, unit) = split_number(s)?;
    let scale = match unit {
        "" | "bps" | "b/s" | "bit/s" => 1.0,
        "kbps" | "Kbps" | "kb/s" | "kbit/s" => 1e3,
        "Mbps" | "mbps" | "Mb/s" | "Mbit/s" => 1e6,
        "Gbps" | "gbps" | "Gb/s" | "Gbit/s" => 1e9,
        _ => {
            return Err(UnitError(format!(
                "unknown rate unit in `{s}`: expected bps, kbps, Mbps or Gbps (e.g. \"9.6kbps\")"
            )))
        }
    };
    to_u64(v * scale, s).map(Bitrate)
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
                        self.visit_str(&v.to_string())
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
