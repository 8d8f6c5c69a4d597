//! Putting the daemon in the forwarding path, and taking it out again.
//!
//! One TUN device per configured interface; a policy-routing rule sends every IPv4 packet that
//! *arrives* on interface `i` (and is not for the router itself: the `local` rule, preference
//! 0, comes first) to table `table + i`, whose only route is the TUN device `<name>-p<i>`. The
//! daemon reads it there, so it knows the arrival port, and writes what the mechanism sends
//! back into a TUN device: the kernel then routes it by the main table, since no rule matches
//! packets arriving on the TUN devices. No nftables, no ipip module: plain `ip rule`/`ip route`.
//! The kernel split engine ([`crate::kernel`]) is the exception: no TUN device, one nftables
//! table named after the instance ([`RoutingPlan::nft_script`]) and one fwmark rule.
//!
//! Everything the daemon adds is named by its numbers (rule preferences and tables), so
//! removal is idempotent and also cleans up after a `kill -9`: [`RoutingPlan::remove_script`]
//! deletes whatever carries those numbers, duplicates included. The TUN devices are not
//! persistent: they vanish with the process. sysctls changed at start are recorded in a state
//! file first ([`crate::state`]) and restored at exit or at the next start.

use std::process::{Command, Stdio};

use crate::config::{DaemonConfig, RoutingConfig, SplitEngineConfig};

/// What the daemon adds to the routing configuration.
#[derive(Clone, Debug, Eq, PartialEq)]
pub struct RoutingPlan {
    /// Instance name.
    pub name: String,
    /// Interfaces, in port order.
    pub interfaces: Vec<String>,
    /// Numbers.
    pub routing: RoutingConfig,
    /// The kernel split engine's settings, when it runs: then no TUN device, one nftables
    /// table and one fwmark rule ([`crate::kernel`]).
    pub kernel: Option<SplitEngineConfig>,
    /// Whether SYNs arriving on the interfaces are diverted to the engine's listeners (the
    /// kernel engine, an accelerated terminal); an accelerated gateway opens connections
    /// only, so it needs just the `socket transparent` mark for their answers.
    pub intercept: bool,
}

impl RoutingPlan {
    /// The plan for `config` running as instance `name`.
    pub fn new(config: &DaemonConfig, name: &str) -> Self {
        Self {
            name: name.to_owned(),
            interfaces: config.interfaces.clone(),
            routing: config.routing,
            kernel: config.kernel_split().cloned(),
            intercept: true,
        }
    }

    /// The nftables table of the kernel split engine: `satpep_<name>` (`-` becomes `_`, which
    /// nft identifiers allow). Deleting it removes every nftables statement the daemon added.
    pub fn nft_table(&self) -> String {
        format!("satpep_{}", self.name.replace('-', "_"))
    }

    /// The fwmark that routes diverted and returning segments to the local sockets (the first
    /// table's number, so it is the daemon's own like the rest).
    pub fn fwmark(&self) -> u32 {
        self.routing.table
    }

    /// The kernel split engine's `nft -f -` script, or `None` for the TUN path. It creates the
    /// table empty first and deletes it, then fills it, in one transaction: running it twice
    /// leaves one copy.
    ///
    /// - `socket transparent 1`: a segment of a connection one of the engine's sockets holds
    ///   (the client's side of an accepted one, or the server's answer to a connection the
    ///   engine opened from the client's address) is marked, so the fwmark rule delivers it
    ///   locally instead of forwarding it.
    /// - `fib daddr type local`: connections to the router itself are never split.
    /// - `tproxy`: a SYN (no ACK) arriving on `interfaces[i]` to one of `ports` goes to the
    ///   listener `127.0.0.1:listen_port + i`, and so does an ACK (no SYN, no RST) that no
    ///   socket holds: the last segment of a handshake the listener answered with a SYN cookie
    ///   (its SYN queue full), for which no request socket exists for `socket` to find.
    ///   Without that rule the ACK was forwarded to the server, which had never seen the SYN
    ///   and reset the client (docs/deploy.md, "SYN flood"). The price: a connection forwarded
    ///   end to end while no daemon ran (before its first start, after a crash) is reset by the
    ///   listener at its next ACK once one runs. With no listener (the daemon died) `tproxy`
    ///   does not match, and the segment is forwarded: the path fails open.
    pub fn nft_script(&self) -> Option<String> {
        let k = self.kernel.as_ref()?;
        let t = self.nft_table();
        let mark = self.fwmark();
        let ports = match k.ports.as_slice() {
            [] => String::new(),
            ps => format!(
                "tcp dport {{ {} }} ",
                ps.iter().map(u16::to_string).collect::<Vec<_>>().join(", ")
            ),
        };
        let mut s = format!(
            "table ip {t} {{}}\ndelete table ip {t}\ntable ip {t} {{\n\
             \tchain prerouting {{\n\
             \t\ttype filter hook prerouting priority mangle; policy accept;\n\
             \t\tmeta l4proto tcp socket transparent 1 meta mark set {mark} accept\n\
             \t\tfib daddr type local accept\n"
        );
        let intercepted = if self.intercept {
            &self.interfaces[..]
        } else {
            &[]
        };
        for (i, iface) in intercepted.iter().enumerate() {
            let port = u32::from(k.listen_port) + i as u32;
            for flags in ["(syn | ack) == syn", "(syn | ack | rst) == ack"] {
                s += &format!(
                    "\t\tiifname \"{iface}\" tcp flags & {flags} {ports}\
                     tproxy to 127.0.0.1:{port} meta mark set {mark} accept\n"
                );
            }
        }
        s += "\t}\n}\n";
        Some(s)
    }

    /// The TUN device of port `port`.
    pub fn tun_name(&self, port: usize) -> String {
        format!("{}-p{port}", self.name)
    }

    /// `ip -batch` lines that bring the TUN devices up and add the rules and tables (after
    /// [`remove_script`](Self::remove_script) has run, so nothing is doubled).
    pub fn install_script(&self) -> String {
        let mut s = String::new();
        if self.kernel.is_some() {
            // The kernel's TPROXY recipe (Documentation/networking/tproxy.rst): marked
            // segments are for this host.
            let (table, pref) = self.numbers(0);
            let mark = self.fwmark();
            s += &format!("route replace local 0.0.0.0/0 dev lo table {table}\n");
            s += &format!("rule add pref {pref} fwmark {mark} lookup {table}\n");
            return s;
        }
        for (i, iface) in self.interfaces.iter().enumerate() {
            let tun = self.tun_name(i);
            let (table, pref) = self.numbers(i);
            s += &format!("link set dev {tun} up mtu {TUN_MTU}\n");
            s += &format!("route replace default dev {tun} table {table}\n");
            s += &format!("rule add pref {pref} iif {iface} lookup {table}\n");
        }
        s
    }

    /// Shell lines that remove every rule with the daemon's preferences (repeated: a crashed
    /// run's and a duplicate alike) and flush its tables; they succeed when nothing is there.
    pub fn remove_script(&self) -> String {
        let mut s = String::new();
        for i in 0..self.interfaces.len() {
            let (table, pref) = self.numbers(i);
            s += &format!(
                "while ip -4 rule del pref {pref} 2>/dev/null; do :; done\n\
                 ip -4 route flush table {table} 2>/dev/null\n"
            );
        }
        // The kernel split engine's table, whether or not this run has the engine (a
        // predecessor may have): absent table and absent nft alike are silent.
        s += &format!("nft delete table ip {} 2>/dev/null\n", self.nft_table());
        s += "true\n";
        s
    }

    /// sysctls the daemon needs: forwarding, and reverse-path filtering off on its devices
    /// (packets it writes carry the sources of hosts behind other interfaces). `all` must not
    /// be strict (1): the kernel uses the larger of `all` and the device's value.
    pub fn sysctls(&self) -> Vec<(String, String)> {
        let mut v = vec![("net/ipv4/ip_forward".to_owned(), "1".to_owned())];
        if self.kernel.is_some() {
            return v;
        }
        for i in 0..self.interfaces.len() {
            let tun = self.tun_name(i);
            v.push((format!("net/ipv4/conf/{tun}/rp_filter"), "0".into()));
            // The kernel's own IPv6 chatter on the devices (router solicitations) would only
            // be read back as packets that are not IPv4.
            v.push((format!("net/ipv6/conf/{tun}/disable_ipv6"), "1".into()));
        }
        v
    }

    fn numbers(&self, port: usize) -> (u32, u32) {
        (
            self.routing.table + port as u32,
            self.routing.priority + port as u32,
        )
    }

    /// Whether the kernel split engine's nftables table exists now (false without nft).
    pub fn has_nft_table(&self) -> bool {
        Command::new("nft")
            .args(["list", "table", "ip", &self.nft_table()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    }

    /// The rules now installed with the daemon's preferences (`ip rule` lines), e.g. to check
    /// that a restart doubled nothing.
    pub fn installed_rules(&self) -> Vec<String> {
        let out = Command::new("ip")
            .args(["-4", "rule", "show"])
            .stderr(Stdio::null())
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default();
        let prefs: Vec<String> = (0..self.interfaces.len())
            .map(|i| format!("{}:", self.numbers(i).1))
            .collect();
        out.lines()
            .filter(|l| prefs.iter().any(|p| l.starts_with(p.as_str())))
            .map(str::to_owned)
            .collect()
    }
}

/// MTU of the TUN devices: above any Ethernet MTU plus a tunnel header, so the devices never
/// refuse a packet the kernel forwards to them.
pub const TUN_MTU: u32 = 9000;

/// Run `ip -batch -` with `script`.
pub fn ip_batch(script: &str) -> Result<(), String> {
    run_stdin("ip", &["-batch", "-"], script)
}

/// Run `sh -c` with `script`.
pub fn sh(script: &str) -> Result<(), String> {
    run_stdin("sh", &["-s"], script)
}

pub(crate) fn run_stdin(prog: &str, args: &[&str], input: &str) -> Result<(), String> {
    use std::io::Write;
    let mut child = Command::new(prog)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run {prog}: {e}"))?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin
            .write_all(input.as_bytes())
            .map_err(|e| format!("{prog}: {e}"))?;
    }
    let out = child
        .wait_with_output()
        .map_err(|e| format!("{prog}: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{prog}: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn plan() -> RoutingPlan {
        let c = DaemonConfig::parse(
            "name = \"gw\"\ninterfaces = [\"eth1\", \"eth0\"]\n\
             middlebox = { kind = \"pass_through\" }\n[routing]\ntable = 100\npriority = 200\n",
            Path::new("t.toml"),
        )
        .unwrap();
        RoutingPlan::new(&c, "gw")
    }

    #[test]
    fn one_rule_and_table_per_interface_in_port_order() {
        assert_eq!(
            plan().install_script(),
            "link set dev gw-p0 up mtu 9000\n\
             route replace default dev gw-p0 table 100\n\
             rule add pref 200 iif eth1 lookup 100\n\
             link set dev gw-p1 up mtu 9000\n\
             route replace default dev gw-p1 table 101\n\
             rule add pref 201 iif eth0 lookup 101\n"
        );
    }

    #[test]
    fn removal_deletes_every_copy_of_each_rule_and_flushes_the_tables() {
        let s = plan().remove_script();
        assert!(s.contains("while ip -4 rule del pref 200 2>/dev/null; do :; done"));
        assert!(s.contains("while ip -4 rule del pref 201 2>/dev/null; do :; done"));
        assert!(s.contains("ip -4 route flush table 100"));
        assert!(s.contains("ip -4 route flush table 101"));
        assert!(s.ends_with("true\n"), "succeeds when nothing was there");
    }

    #[test]
    fn sysctls_turn_forwarding_on_and_rp_filter_off_on_our_devices_only() {
        let s = plan().sysctls();
        assert_eq!(s[0], ("net/ipv4/ip_forward".into(), "1".into()));
        assert_eq!(s[1], ("net/ipv4/conf/gw-p0/rp_filter".into(), "0".into()));
        assert_eq!(
            s[2],
            ("net/ipv6/conf/gw-p0/disable_ipv6".into(), "1".into())
        );
        assert_eq!(s.len(), 5);
    }

    fn kernel_plan(ports: &str) -> RoutingPlan {
        let c = DaemonConfig::parse(
            &format!(
                "name = \"gw-1\"\ninterfaces = [\"eth1\", \"eth0\"]\n\
                 [split]\nengine = \"kernel\"\n{ports}"
            ),
            Path::new("t.toml"),
        )
        .unwrap();
        RoutingPlan::new(&c, "gw-1")
    }

    #[test]
    fn the_kernel_engine_adds_one_table_one_rule_and_one_nft_table_and_no_tun() {
        let p = kernel_plan("ports = [80, 443]\nlisten_port = 9000\n");
        assert_eq!(
            p.install_script(),
            "route replace local 0.0.0.0/0 dev lo table 7470\n\
             rule add pref 7470 fwmark 7470 lookup 7470\n"
        );
        assert_eq!(p.nft_table(), "satpep_gw_1");
        assert_eq!(
            p.nft_script().unwrap(),
            "table ip satpep_gw_1 {}\ndelete table ip satpep_gw_1\ntable ip satpep_gw_1 {\n\
             \tchain prerouting {\n\
             \t\ttype filter hook prerouting priority mangle; policy accept;\n\
             \t\tmeta l4proto tcp socket transparent 1 meta mark set 7470 accept\n\
             \t\tfib daddr type local accept\n\
             \t\tiifname \"eth1\" tcp flags & (syn | ack) == syn tcp dport { 80, 443 } \
             tproxy to 127.0.0.1:9000 meta mark set 7470 accept\n\
             \t\tiifname \"eth1\" tcp flags & (syn | ack | rst) == ack tcp dport { 80, 443 } \
             tproxy to 127.0.0.1:9000 meta mark set 7470 accept\n\
             \t\tiifname \"eth0\" tcp flags & (syn | ack) == syn tcp dport { 80, 443 } \
             tproxy to 127.0.0.1:9001 meta mark set 7470 accept\n\
             \t\tiifname \"eth0\" tcp flags & (syn | ack | rst) == ack tcp dport { 80, 443 } \
             tproxy to 127.0.0.1:9001 meta mark set 7470 accept\n\
             \t}\n}\n"
        );
        // No ports: every TCP SYN, and every ACK no socket holds.
        let all = kernel_plan("").nft_script().unwrap();
        assert!(all
            .contains("iifname \"eth1\" tcp flags & (syn | ack) == syn tproxy to 127.0.0.1:7470"));
        assert!(all.contains(
            "iifname \"eth1\" tcp flags & (syn | ack | rst) == ack tproxy to 127.0.0.1:7470"
        ));
        assert_eq!(p.sysctls(), [("net/ipv4/ip_forward".into(), "1".into())]);
        let rm = p.remove_script();
        assert!(rm.contains("while ip -4 rule del pref 7470 2>/dev/null; do :; done"));
        assert!(rm.contains("ip -4 route flush table 7470"));
        assert!(rm.contains("nft delete table ip satpep_gw_1 2>/dev/null\n"));
        assert!(plan().nft_script().is_none());
    }
}
