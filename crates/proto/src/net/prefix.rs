//! IPv4 prefixes (`10.9.1.0/24`) and a longest-prefix-match table over them (RFC 1812 §5.2.4.3:
//! "the route with the longest prefix match is chosen").
//!
//! The table keeps one hash map per prefix length in use, longest first, so a lookup costs one
//! probe per distinct length (at most 33), whatever the number of prefixes: a scenario with a
//! subnet behind each of 100 000 terminals still forwards in a handful of probes.

use std::collections::HashMap;
use std::fmt;
use std::net::Ipv4Addr;
use std::str::FromStr;

use super::host::FastHash;

/// An IPv4 prefix: a network address whose bits past `len` are zero, and the length.
#[derive(Clone, Copy, Debug, Eq, Hash, Ord, PartialEq, PartialOrd)]
pub struct Ipv4Prefix {
    net: u32,
    len: u8,
}

/// Why a string is not an [`Ipv4Prefix`].
#[derive(Clone, Debug, Eq, PartialEq, thiserror::Error)]
pub enum PrefixError {
    /// Not of the form `a.b.c.d/len`.
    #[error("expected an IPv4 prefix such as \"10.9.1.0/24\"")]
    Syntax,
    /// A length above 32.
    #[error("prefix length {0} is above 32")]
    Length(u32),
    /// Bits set past the length (`10.9.1.5/24`): most likely a typo, so it is refused rather
    /// than silently truncated.
    #[error("{given} has bits set past its length; the network is {network}")]
    HostBits {
        /// As written.
        given: String,
        /// With those bits cleared.
        network: Ipv4Prefix,
    },
}

impl Ipv4Prefix {
    /// The prefix `addr/len` with the bits past `len` cleared; `None` when `len > 32`.
    pub fn truncating(addr: Ipv4Addr, len: u8) -> Option<Self> {
        (len <= 32).then(|| Self {
            net: u32::from(addr) & mask(len),
            len,
        })
    }

    /// The network address.
    pub fn network(&self) -> Ipv4Addr {
        Ipv4Addr::from(self.net)
    }

    /// The prefix length in bits.
    pub fn prefix_len(&self) -> u8 {
        self.len
    }

    /// The last address the prefix covers.
    pub fn last(&self) -> Ipv4Addr {
        Ipv4Addr::from(self.net | !mask(self.len))
    }

    /// True when `addr` is inside the prefix.
    pub fn contains(&self, addr: Ipv4Addr) -> bool {
        u32::from(addr) & mask(self.len) == self.net
    }

    /// True when the two prefixes share an address (prefixes either nest or are disjoint).
    pub fn overlaps(&self, other: &Self) -> bool {
        let len = self.len.min(other.len);
        (self.net ^ other.net) & mask(len) == 0
    }
}

/// The netmask of a `len`-bit prefix.
fn mask(len: u8) -> u32 {
    u32::MAX.checked_shl(32 - u32::from(len)).unwrap_or(0)
}

impl FromStr for Ipv4Prefix {
    type Err = PrefixError;

    fn from_str(s: &str) -> Result<Self, PrefixError> {
        let (addr, len) = s.split_once('/').ok_or(PrefixError::Syntax)?;
        let addr: Ipv4Addr = addr.parse().map_err(|_| PrefixError::Syntax)?;
        // Decimal digits without leading zeros (`/024` is more likely a typo than 24).
        let digits = len.bytes().all(|b| b.is_ascii_digit());
        if len.is_empty() || !digits || (len.len() > 1 && len.starts_with('0')) {
            return Err(PrefixError::Syntax);
        }
        let len: u32 = len.parse().map_err(|_| PrefixError::Syntax)?;
        let p = u8::try_from(len)
            .ok()
            .and_then(|l| Self::truncating(addr, l))
            .ok_or(PrefixError::Length(len))?;
        if p.network() != addr {
            return Err(PrefixError::HostBits {
                given: s.to_owned(),
                network: p,
            });
        }
        Ok(p)
    }
}

impl fmt::Display for Ipv4Prefix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.network(), self.len)
    }
}

impl serde::Serialize for Ipv4Prefix {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for Ipv4Prefix {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// Values by prefix, answered by longest match (see the module doc).
#[derive(Clone, Debug)]
pub struct PrefixTable<V> {
    /// One map per length in use, keyed by network address; longest length first.
    by_len: Vec<(u8, HashMap<u32, V, FastHash>)>,
}

impl<V> Default for PrefixTable<V> {
    fn default() -> Self {
        Self { by_len: Vec::new() }
    }
}

impl<V: Copy> PrefixTable<V> {
    /// Map `prefix` to `value`, replacing what it mapped to.
    pub fn insert(&mut self, prefix: Ipv4Prefix, value: V) {
        let at = self.by_len.partition_point(|(l, _)| *l > prefix.len);
        if self.by_len.get(at).is_none_or(|(l, _)| *l != prefix.len) {
            self.by_len.insert(at, (prefix.len, HashMap::default()));
        }
        self.by_len[at].1.insert(prefix.net, value);
    }

    /// The value of the longest prefix holding `addr`.
    pub fn lookup(&self, addr: Ipv4Addr) -> Option<V> {
        let a = u32::from(addr);
        self.by_len
            .iter()
            .find_map(|(len, m)| m.get(&(a & mask(*len))).copied())
    }

    /// True when no prefix is mapped.
    pub fn is_empty(&self) -> bool {
        self.by_len.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn p(s: &str) -> Ipv4Prefix {
        s.parse().expect("valid prefix")
    }

    #[test]
    fn parses_and_prints_and_refuses_what_is_not_a_prefix() {
        assert_eq!(p("10.9.1.0/24").to_string(), "10.9.1.0/24");
        assert_eq!(p("0.0.0.0/0").last(), Ipv4Addr::BROADCAST);
        assert_eq!(p("10.9.1.7/32").last(), Ipv4Addr::new(10, 9, 1, 7));
        assert_eq!(p("10.9.0.0/16").last(), Ipv4Addr::new(10, 9, 255, 255));
        for bad in [
            "10.9.1.0",
            "10.9.1/24",
            "10.9.1.0/",
            "10.9.1.0/+4",
            "10.9.1.0/024",
            "10.9.1.0/99999999999",
            "x/8",
            "",
        ] {
            assert_eq!(bad.parse::<Ipv4Prefix>(), Err(PrefixError::Syntax), "{bad}");
        }
        assert_eq!(
            "10.0.0.0/33".parse::<Ipv4Prefix>(),
            Err(PrefixError::Length(33))
        );
        assert_eq!(
            "10.0.0.0/100".parse::<Ipv4Prefix>(),
            Err(PrefixError::Length(100))
        );
        let e = "10.9.1.5/24".parse::<Ipv4Prefix>().unwrap_err();
        assert_eq!(
            e.to_string(),
            "10.9.1.5/24 has bits set past its length; the network is 10.9.1.0/24"
        );
    }

    #[test]
    fn containment_and_overlap() {
        let lan = p("10.9.1.0/24");
        assert!(lan.contains(Ipv4Addr::new(10, 9, 1, 0)));
        assert!(lan.contains(Ipv4Addr::new(10, 9, 1, 255)));
        assert!(!lan.contains(Ipv4Addr::new(10, 9, 2, 0)));
        assert!(!lan.contains(Ipv4Addr::new(10, 9, 0, 255)));
        assert!(lan.overlaps(&p("10.9.0.0/16")) && p("10.9.0.0/16").overlaps(&lan));
        assert!(lan.overlaps(&p("10.9.1.128/25")));
        assert!(!lan.overlaps(&p("10.9.2.0/24")));
        assert!(p("0.0.0.0/0").overlaps(&lan));
    }

    #[test]
    fn longest_prefix_wins() {
        let mut t = PrefixTable::default();
        assert!(t.is_empty() && t.lookup(Ipv4Addr::new(10, 9, 1, 1)).is_none());
        t.insert(p("10.9.0.0/16"), 1);
        t.insert(p("10.9.1.0/24"), 2);
        t.insert(p("10.9.1.4/30"), 3);
        t.insert(p("0.0.0.0/0"), 0);
        assert_eq!(t.lookup(Ipv4Addr::new(10, 9, 1, 5)), Some(3));
        assert_eq!(t.lookup(Ipv4Addr::new(10, 9, 1, 8)), Some(2));
        assert_eq!(t.lookup(Ipv4Addr::new(10, 9, 7, 8)), Some(1));
        assert_eq!(t.lookup(Ipv4Addr::new(11, 0, 0, 0)), Some(0));
        t.insert(p("10.9.1.0/24"), 9); // replaces
        assert_eq!(t.lookup(Ipv4Addr::new(10, 9, 1, 8)), Some(9));
    }

    fn prefix() -> impl Strategy<Value = Ipv4Prefix> {
        // Few distinct networks, so that prefixes nest and collide often.
        (0u32..8, 0u8..=32).prop_map(|(net, len)| {
            Ipv4Prefix::truncating(Ipv4Addr::from(net.rotate_right(3) | 0x0a00_0000), len)
                .expect("len ≤ 32")
        })
    }

    proptest! {
        /// The table answers what a scan of every prefix for the longest match answers
        /// (later insertions of the same prefix replacing earlier ones), and the parser reads
        /// back what `Display` writes.
        #[test]
        fn lookup_is_the_longest_match_of_a_scan(
            entries in prop::collection::vec((prefix(), 0u16..100), 0..20),
            probes in prop::collection::vec(any::<u32>(), 1..40),
        ) {
            let mut t = PrefixTable::default();
            for &(pr, v) in &entries {
                t.insert(pr, v);
                prop_assert_eq!(pr.to_string().parse::<Ipv4Prefix>(), Ok(pr));
            }
            let nets: Vec<Ipv4Addr> = entries.iter().map(|(pr, _)| pr.network()).collect();
            let inside = nets.iter().map(|a| u32::from(*a) | 1);
            for a in probes.into_iter().chain(inside).map(Ipv4Addr::from) {
                let want = entries
                    .iter()
                    .enumerate()
                    .filter(|(_, (pr, _))| pr.contains(a))
                    .max_by_key(|(i, (pr, _))| (pr.prefix_len(), *i))
                    .map(|(_, (_, v))| *v);
                prop_assert_eq!(t.lookup(a), want, "{}", a);
            }
        }
    }
}
