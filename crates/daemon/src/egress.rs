//! Which of the daemon's interfaces the kernel will forward a packet out of, so that the run
//! loop writes the packet into *that* interface's TUN device.
//!
//! Why it matters: the kernel checks the source of every packet it receives on a TUN device
//! against `rp_filter` (the larger of `all` and the device's value). Its reverse lookup starts
//! from the egress interface, whose policy rule ([`crate::routing`]) leads to the egress
//! port's TUN device; a packet written into that device passes strict (1) and loose (2)
//! filtering, while one written into any other address-less device is dropped
//! (`TcpExtIPReversePathFilter`). Written into the first device, as before issue 36, a gateway
//! forwarded nothing unless `rp_filter` was 0.
//!
//! The egress is found as the kernel finds it for a packet arriving on a TUN device, which no
//! rule of ours matches: a longest-prefix match in the main table, read with
//! `ip -4 -j route show table main` (at start and every [`REFRESH`]). Other rules an
//! administrator added for such packets are not followed (a simplification: the fallback is
//! the first device, as before).

use std::net::Ipv4Addr;
use std::time::Duration;

/// How often the run loop rereads the main table.
pub const REFRESH: Duration = Duration::from_secs(5);

/// The main table's routes, longest prefix first, each with the daemon port of its device
/// (`None`: a device that is not one of the daemon's interfaces, or a route with no device).
#[derive(Clone, Debug, Default, Eq, PartialEq)]
pub struct EgressTable {
    routes: Vec<Route>,
}

#[derive(Clone, Copy, Debug, Eq, PartialEq)]
struct Route {
    net: u32,
    len: u8,
    port: Option<usize>,
}

impl EgressTable {
    /// The table from `ip -4 -j route show table main`'s output; `interfaces` in port order.
    /// Entries it cannot read are skipped (and counted in the second value).
    pub fn from_ip_json(json: &str, interfaces: &[String]) -> Result<(Self, usize), String> {
        let v: serde_json::Value =
            serde_json::from_str(json).map_err(|e| format!("ip route JSON: {e}"))?;
        let list = v.as_array().ok_or("ip route JSON: not a list")?;
        let mut routes = Vec::with_capacity(list.len());
        let mut skipped = 0;
        for r in list {
            let Some(dst) = r.get("dst").and_then(|d| d.as_str()) else {
                skipped += 1;
                continue;
            };
            let Some((net, len)) = parse_prefix(dst) else {
                skipped += 1;
                continue;
            };
            // A multipath route: the kernel hashes between its next hops; the first stands
            // for all of them.
            let dev = r
                .get("dev")
                .or_else(|| r.pointer("/nexthops/0/dev"))
                .and_then(|d| d.as_str());
            let port = dev.and_then(|d| interfaces.iter().position(|i| i == d));
            routes.push(Route { net, len, port });
        }
        routes.sort_by_key(|r| std::cmp::Reverse(r.len));
        Ok((Self { routes }, skipped))
    }

    /// The port of the interface the longest matching route leaves by, if it is one of the
    /// daemon's.
    pub fn port(&self, dst: Ipv4Addr) -> Option<usize> {
        let dst = u32::from(dst);
        self.routes
            .iter()
            .find(|r| r.len == 0 || (dst ^ r.net) >> (32 - u32::from(r.len)) == 0)
            .and_then(|r| r.port)
    }

    /// The table read from the kernel now.
    pub fn read(interfaces: &[String]) -> Result<Self, String> {
        let out = std::process::Command::new("ip")
            .args(["-4", "-j", "route", "show", "table", "main"])
            .output()
            .map_err(|e| format!("ip route show: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "ip route show: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        Self::from_ip_json(&String::from_utf8_lossy(&out.stdout), interfaces).map(|(t, _)| t)
    }
}

/// `default`, `a.b.c.d` or `a.b.c.d/len`, as `ip -j` writes a route's `dst`.
pub fn parse_prefix(s: &str) -> Option<(u32, u8)> {
    if s == "default" {
        return Some((0, 0));
    }
    let (addr, len) = match s.split_once('/') {
        Some((a, l)) => (a, l.parse::<u8>().ok().filter(|&l| l <= 32)?),
        None => (s, 32),
    };
    let addr: Ipv4Addr = addr.parse().ok()?;
    let mask = if len == 0 { 0 } else { u32::MAX << (32 - len) };
    Some((u32::from(addr) & mask, len))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ifaces() -> Vec<String> {
        vec!["lan0".into(), "sat0".into()]
    }

    #[test]
    fn longest_prefix_wins_and_foreign_devices_give_none() {
        let json = r#"[
            {"dst":"default","gateway":"192.0.2.1","dev":"sat0","flags":[]},
            {"dst":"10.1.0.0/16","dev":"lan0","protocol":"kernel","scope":"link","flags":[]},
            {"dst":"10.1.2.0/24","gateway":"10.1.0.9","dev":"mgmt","flags":[]},
            {"dst":"10.1.2.7","dev":"sat0","flags":[]},
            {"dst":"198.51.100.0/24","type":"blackhole","flags":[]},
            {"dst":"203.0.113.0/24","nexthops":[{"gateway":"10.1.0.1","dev":"lan0"},{"gateway":"10.1.0.2","dev":"sat0"}]},
            {"dst":"10.9.0.0/33","dev":"lan0"},
            {"gateway":"1.2.3.4"}
        ]"#;
        let (t, skipped) = EgressTable::from_ip_json(json, &ifaces()).unwrap();
        assert_eq!(skipped, 2, "a /33 and an entry without dst");
        let p = |a: &str| t.port(a.parse().unwrap());
        assert_eq!(p("8.8.8.8"), Some(1), "default route");
        assert_eq!(p("10.1.200.3"), Some(0), "/16 on the LAN");
        assert_eq!(p("10.1.2.8"), None, "/24 on a device not the daemon's");
        assert_eq!(p("10.1.2.7"), Some(1), "host route beats the /24");
        assert_eq!(p("198.51.100.1"), None, "blackhole: no device");
        assert_eq!(p("203.0.113.9"), Some(0), "multipath: the first next hop");
        assert_eq!(p("10.2.0.0"), Some(1), "just outside the /16");
        assert_eq!(p("10.0.255.255"), Some(1), "just below it");
    }

    #[test]
    fn without_a_default_route_an_unmatched_address_has_no_port() {
        let json = r#"[{"dst":"10.88.1.0/24","dev":"lan0"},{"dst":"10.88.2.0/24","dev":"sat0"}]"#;
        let (t, _) = EgressTable::from_ip_json(json, &ifaces()).unwrap();
        assert_eq!(t.port(Ipv4Addr::new(10, 88, 1, 2)), Some(0));
        assert_eq!(t.port(Ipv4Addr::new(10, 88, 2, 2)), Some(1));
        assert_eq!(t.port(Ipv4Addr::new(10, 88, 3, 2)), None);
        assert!(EgressTable::from_ip_json("{}", &ifaces()).is_err());
        assert!(EgressTable::from_ip_json("[", &ifaces()).is_err());
    }

    #[test]
    fn prefixes_are_masked_to_their_length() {
        assert_eq!(parse_prefix("10.1.2.3/8"), Some((0x0a00_0000, 8)));
        assert_eq!(parse_prefix("0.0.0.0/0"), Some((0, 0)));
        assert_eq!(parse_prefix("10.1.2.3"), Some((0x0a01_0203, 32)));
        assert_eq!(parse_prefix("10.1.2/24"), None);
        assert_eq!(parse_prefix("fe80::/64"), None);
    }
}
