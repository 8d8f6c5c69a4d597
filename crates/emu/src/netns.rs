//! Network namespaces for the scenario's hosts: creation, TUN devices, addresses, routes,
//! socket-buffer sysctls, and removal — on exit, and of left-overs of a crashed run.
//!
//! Naming: every `kind = "host"` node gets a namespace `satpep-<pid>-<run>-<node>` (`<pid>` of
//! the emulator, `<run>` counting runs within that process, `<node>` the node name with
//! characters outside `[A-Za-z0-9_.]` replaced by `_`). Inside it, one TUN device `satpep0`
//! holds the node's scenario address as a /32, and the default route points at it, so every
//! packet the namespace sends to another host reaches the emulator. Routers have no namespace:
//! they are internal to the emulator.
//!
//! A namespace is a bind mount under `/var/run/netns`, which outlives a killed process; the TUN
//! device does not (it is not persistent, so it goes when the emulator's descriptor closes). At
//! start, [`clean_stale`] removes every `satpep-<pid>-…` namespace whose `<pid>` is no longer a
//! running process, killing whatever still runs inside it first. A recycled pid keeps its
//! namespaces until that process exits too: a conservative error, never the removal of a live
//! run's namespace.
//!
//! A host with `netns = "name"` in the scenario is attached to that existing namespace
//! instead (`Namespaces::attach`): a TUN device `satpep<pid>` there, with the host's
//! address and explicit routes for the scenario's other addresses and subnets; at the end —
//! or, after a crash, when its descriptor closes and the watchdog runs — the device goes with
//! its routes, and the namespace and its processes stay.
//!
//! Setup shells out to `ip` (iproute2): it is the tool users know, and what it does is visible
//! with `ip netns`. Only the TUN ioctl needs the emulator itself inside the namespace (see
//! [`crate::sys::Tun::create_in_netns`]).

use std::io::Write;
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};

use crate::sys::{self, Tun};
use crate::EmuError;

/// Prefix of every namespace the emulator creates.
pub const PREFIX: &str = "satpep-";
/// Where `ip netns` keeps its namespace handles.
pub const NETNS_DIR: &str = "/var/run/netns";
/// Name of the TUN device inside each namespace.
pub const TUN_NAME: &str = "satpep0";
/// MTU of the TUN devices (an Ethernet-sized path, as the simulator's default MSS assumes).
pub const MTU: usize = 1500;
/// Packets the TUN device's qdisc holds while the emulator is busy: Ethernet's default, 12 ms at
/// 1 Gb/s (the TUN default, 500, is 6 ms).
pub const TXQUEUELEN: u32 = 1000;

/// Socket-buffer limits written inside every namespace (`/proc/sys/…`, value), and whether a
/// failure is fatal. Linux's default `tcp_wmem` maximum (4 MiB) caps a single TCP sender at
/// 4 MiB per RTT — about 53 Mb/s at 600 ms, less after the kernel's overhead share — so long,
/// fast paths need more: 64 MiB covers 850 Mb/s at 600 ms. `net.core.{r,w}mem_max` only bound
/// explicit `SO_RCVBUF`/`SO_SNDBUF` requests and are not writable inside a namespace on many
/// kernels; they are tried and may fail. IPv6 is switched off so that router solicitations
/// do not show up as unroutable packets.
const SYSCTLS: &[(&str, &str, bool)] = &[
    ("net/ipv4/tcp_rmem", "4096 131072 67108864", true),
    ("net/ipv4/tcp_wmem", "4096 16384 67108864", true),
    ("net/ipv4/tcp_no_metrics_save", "1", false),
    ("net/ipv6/conf/all/disable_ipv6", "1", false),
    ("net/ipv6/conf/default/disable_ipv6", "1", false),
    ("net/core/rmem_max", "67108864", false),
    ("net/core/wmem_max", "67108864", false),
];

/// Runs within this process, for unique names.
static RUN: AtomicU32 = AtomicU32::new(0);

/// One host's namespace and its TUN device.
#[derive(Debug)]
pub struct Namespace {
    /// `satpep-<pid>-<run>-<node>`; the scenario's `netns` for an attached one; for the outer
    /// host of a shell, its device's name.
    pub name: String,
    /// The host is the namespace this process runs in (a shell's outer host): its device is
    /// removed, the namespace is not.
    pub here: bool,
    /// The namespace existed before the run (`netns = "…"`): its device is removed, the
    /// namespace and the processes in it are not.
    pub attached: bool,
    /// The TUN device's name inside the namespace.
    pub device: String,
    /// Scenario node index.
    pub node: usize,
    /// The node's scenario address, assigned to the TUN device.
    pub address: Ipv4Addr,
    /// The TUN device (taken out before the namespace is deleted).
    pub tun: Option<Tun>,
}

/// Every namespace of one run; dropping it removes them all (processes inside are killed).
#[derive(Debug, Default)]
pub struct Namespaces {
    /// In creation order.
    pub list: Vec<Namespace>,
    /// Removes them if this process dies without doing it (SIGKILL, a crash).
    watchdog: Option<Watchdog>,
}

/// A small process that removes a run's namespaces when the emulator dies without removing
/// them itself: SIGKILL, an abort, a kill of the whole process group. Namespaces are bind
/// mounts that outlive their creator, and a user's command may have forked grandchildren that
/// no death signal reaches; the watchdog kills every process inside each namespace (as
/// `ip netns pids` lists them) and deletes it.
///
/// It waits for end-of-file on a pipe only the emulator holds (close-on-exec, so no command
/// inherits it): the kernel closes it however the emulator ends. It runs in its own process
/// group, so a signal to the emulator's group (`timeout`, Ctrl-C) does not stop it, and
/// ignores SIGINT, SIGTERM and SIGHUP. After a normal teardown it finds nothing to do.
#[derive(Debug)]
struct Watchdog {
    pipe: Option<std::process::ChildStdin>,
    child: std::process::Child,
}

/// The watchdog's script; `$1` is the namespace name prefix of the run it guards, then pairs
/// of (attached namespace, device) whose device it deletes (normally gone already: a TUN
/// device vanishes with the emulator's descriptor).
const WATCHDOG: &str = r#"trap '' INT TERM HUP
cat >/dev/null
sleep 0.2  # let the kernel close the dead emulator's other descriptors (TUN devices) first
prefix=$1; shift
while [ $# -ge 2 ]; do
  ip -n "$1" link del "$2" 2>/dev/null
  shift 2
done
set -- "$prefix"
for ns in $(ls /var/run/netns 2>/dev/null); do
  case "$ns" in
    "$1"*)
      for _ in 1 2 3; do
        pids=$(ip netns pids "$ns" 2>/dev/null)
        [ -z "$pids" ] && break
        kill -9 $pids 2>/dev/null
        sleep 0.05
      done
      ip netns del "$ns" 2>/dev/null ;;
  esac
done
"#;

impl Watchdog {
    fn spawn(prefix: &str, attached: &[(String, String)]) -> std::io::Result<Self> {
        let mut cmd = Command::new("sh");
        cmd.args(["-c", WATCHDOG, "satpep-watchdog", prefix]);
        for (ns, dev) in attached {
            cmd.args([ns, dev]);
        }
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
        let mut child = cmd.spawn()?;
        Ok(Self {
            pipe: child.stdin.take(),
            child,
        })
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        drop(self.pipe.take()); // end of file: it checks, finds nothing left, and exits
        let _ = self.child.wait();
    }
}

/// One host to set up (see [`Namespaces::create`]).
#[derive(Clone, Debug)]
pub struct HostSetup {
    /// Scenario node index.
    pub node: usize,
    /// Node name.
    pub name: String,
    /// The node's scenario address.
    pub address: Ipv4Addr,
    /// An existing namespace to attach to (the scenario's `netns`) instead of creating one.
    pub netns: Option<String>,
    /// Networks are behind the host (`subnets`): its namespace must forward.
    pub forward: bool,
    /// For an attached namespace: the destinations (`a.b.c.d/len`) routed into the device —
    /// every other node's address and every other host's subnets. A created namespace has a
    /// default route into its device instead.
    pub routes: Vec<String>,
    /// Ask for a TUN device with offloads ([`crate::vnet`]); the device falls back to plain
    /// packets when the kernel refuses ([`Tun::vnet_hdr`] says which it got).
    pub offload: bool,
}

/// The TUN device's name in an attached namespace: unique per emulator process (one host per
/// namespace), within Linux's 15 characters.
pub fn attached_device() -> String {
    format!("satpep{}", std::process::id())
}

impl Namespaces {
    /// Create one namespace per host, named for this process and run, or attach to the
    /// host's existing namespace (`netns`); the host `outer` names (a shell's) gets a device
    /// in this process's namespace instead. On error, those already made are removed.
    pub fn create(hosts: &[HostSetup], outer: Option<&Outer>) -> Result<Self, EmuError> {
        // Refuse before making anything: an attached namespace must exist and be no run's own.
        for h in hosts {
            let Some(ns) = &h.netns else { continue };
            if ns.starts_with(PREFIX) {
                return Err(EmuError::Scenario(format!(
                    "host `{}`: netns `{ns}`: names starting with `{PREFIX}` belong to the \
                     emulator's own namespaces",
                    h.name
                )));
            }
            if !Path::new(NETNS_DIR).join(ns).exists() {
                return Err(EmuError::Scenario(format!(
                    "host `{}`: network namespace `{ns}` does not exist (no {NETNS_DIR}/{ns}); \
                     create it first (`ip netns add {ns}`, or bench/deploy/topology.sh up)",
                    h.name
                )));
            }
        }
        let run = RUN.fetch_add(1, Ordering::Relaxed);
        let pid = std::process::id();
        let prefix = format!("{PREFIX}{pid}-{run}-");
        let device = attached_device();
        let attached: Vec<(String, String)> = (hosts.iter())
            .filter_map(|h| Some((h.netns.clone()?, device.clone())))
            .collect();
        let mut me = Self {
            list: Vec::new(),
            watchdog: Some(Watchdog::spawn(&prefix, &attached).map_err(|e| {
                EmuError::Setup(format!("cannot start the clean-up watchdog (sh): {e}"))
            })?),
        };
        for h in hosts {
            let (node, name, address) = (&h.node, &h.name, &h.address);
            if let Some(ns) = &h.netns {
                me.attach(h, ns, &device)?;
                continue;
            }
            if let Some(o) = outer.filter(|o| o.node == *node) {
                let tun = Tun::create_here(&o.device).map_err(|e| {
                    EmuError::Privileges(format!("cannot create TUN device {}: {e}", o.device))
                })?;
                // No IPv6 on the device: its router solicitations would reach the emulator
                // as packets it cannot route (counted as malformed). Best effort.
                let _ = std::fs::write(
                    format!("/proc/sys/net/ipv6/conf/{}/disable_ipv6", o.device),
                    "1",
                );
                me.list.push(Namespace {
                    name: o.device.clone(),
                    here: true,
                    attached: false,
                    device: o.device.clone(),
                    node: *node,
                    address: *address,
                    tun: Some(tun),
                });
                ip_batch(
                    None,
                    &format!(
                        "link set {dev} mtu {MTU} txqueuelen {TXQUEUELEN} up\n\
                         addr add {address}/32 dev {dev}\n\
                         route add {route} dev {dev}\n",
                        dev = o.device,
                        route = o.route
                    ),
                )
                .map_err(|e| EmuError::Setup(format!("{}: {e}", o.device)))?;
                continue;
            }
            let ns = format!("{prefix}{}", sanitize(name));
            ip(&["netns", "add", &ns]).map_err(|e| {
                EmuError::Privileges(format!("cannot create network namespace {ns}: {e}"))
            })?;
            me.list.push(Namespace {
                name: ns.clone(),
                here: false,
                attached: false,
                device: TUN_NAME.into(),
                node: *node,
                address: *address,
                tun: None,
            });
            set_sysctls(&ns, outer.is_some() || h.forward)?;
            let tun =
                Tun::create_in_netns_with(&Path::new(NETNS_DIR).join(&ns), TUN_NAME, h.offload)
                    .map_err(|e| EmuError::Privileges(format!("cannot create TUN device: {e}")))?;
            if let Some(last) = me.list.last_mut() {
                last.tun = Some(tun);
            }
            ip_batch(
                Some(&ns),
                &format!(
                    "link set lo up\n\
                     link set {TUN_NAME} mtu {MTU} txqueuelen {TXQUEUELEN} up\n\
                     addr add {address}/32 dev {TUN_NAME}\n\
                     route add default dev {TUN_NAME}\n"
                ),
            )
            .map_err(|e| EmuError::Setup(format!("{ns}: {e}")))?;
        }
        Ok(me)
    }

    /// Put a TUN device into the existing namespace `ns` for host `h`: the host's address on
    /// it, a route into it for each of `h.routes`, forwarding on when subnets are behind the
    /// host. Nothing else of the namespace changes; no default route is added, so the
    /// namespace keeps its own routes for everything outside the scenario. A route that
    /// already exists there (the namespace routes that network elsewhere) is an error.
    fn attach(&mut self, h: &HostSetup, ns: &str, device: &str) -> Result<(), EmuError> {
        let tun = Tun::create_in_netns_with(&Path::new(NETNS_DIR).join(ns), device, h.offload);
        let tun = tun.map_err(|e| {
            EmuError::Privileges(format!("cannot create TUN device {device} in {ns}: {e}"))
        })?;
        self.list.push(Namespace {
            name: ns.to_owned(),
            here: false,
            attached: true,
            device: device.to_owned(),
            node: h.node,
            address: h.address,
            tun: Some(tun),
        });
        let mut script = String::new();
        // The device's own conf only: no router solicitations into the emulator.
        script += &format!("echo 1 > /proc/sys/net/ipv6/conf/{device}/disable_ipv6 2>/dev/null\n");
        if h.forward {
            script += "echo 1 > /proc/sys/net/ipv4/ip_forward || exit 3\n";
        }
        script += "exit 0\n";
        let out = command_in(ns, &script)
            .output()
            .map_err(|e| EmuError::Setup(format!("{ns}: cannot run ip netns exec: {e}")))?;
        if !out.status.success() {
            return Err(EmuError::Setup(format!(
                "{ns}: cannot set net.ipv4.ip_forward (host `{}` has subnets)",
                h.name
            )));
        }
        let mut batch = format!(
            "link set {device} mtu {MTU} txqueuelen {TXQUEUELEN} up\n\
             addr add {}/32 dev {device}\n",
            h.address
        );
        for r in &h.routes {
            batch += &format!("route add {r} dev {device} src {}\n", h.address);
        }
        ip_batch(Some(ns), &batch).map_err(|e| {
            EmuError::Setup(format!(
                "namespace {ns} (host `{}`): {e}; a route satpep adds there ({}) may already \
                 exist (`ip -n {ns} route`)",
                h.name,
                h.routes.join(", ")
            ))
        })
    }

    /// Remove every namespace now (also done on drop).
    pub fn teardown(&mut self) {
        for mut ns in self.list.drain(..) {
            // Close the TUN first: a device still open when its namespace dies would be moved
            // to the root namespace instead of vanishing.
            drop(ns.tun.take());
            if ns.attached {
                // Closing it removed the device with its address and routes; this only
                // reports nothing when the device is gone, as it should be.
                let _ = ip(&["-n", &ns.name, "link", "del", &ns.device]);
            } else if !ns.here {
                remove(&ns.name);
            }
        }
        drop(self.watchdog.take());
    }
}

impl Drop for Namespaces {
    fn drop(&mut self) {
        self.teardown();
    }
}

/// The outer host of a shell: the scenario host whose address goes on a TUN device in this
/// process's own namespace (see [`crate::shell`]).
#[derive(Clone, Debug)]
pub struct Outer {
    /// Scenario node index.
    pub node: usize,
    /// Device name, `sp<pid>` (unique on the machine, within the 15 characters Linux allows).
    pub device: String,
    /// Route sent into the device: the shell's whole address block.
    pub route: String,
}

/// Sysctls a shell sets in the namespaces it creates on top of [`SYSCTLS`]: they forward
/// packets of shells nested inside them, whose sources are not local addresses.
const FORWARDING: &[(&str, &str, bool)] = &[
    ("net/ipv4/ip_forward", "1", true),
    ("net/ipv4/conf/all/rp_filter", "0", false),
    ("net/ipv4/conf/default/rp_filter", "0", false),
];

/// The sysctls written in every namespace (`key`, value), for run.json; `shell` adds those of
/// a shell's namespaces.
pub fn sysctls_set(shell: bool) -> Vec<(&'static str, &'static str)> {
    let extra = if shell { FORWARDING } else { &[] };
    SYSCTLS
        .iter()
        .chain(extra)
        .map(|(k, v, _)| (*k, *v))
        .collect()
}

/// Read `/proc/sys/<key>` for each key inside namespace `ns` (`None`: this process's own);
/// a key that cannot be read is left out.
pub fn read_sysctls(ns: Option<&str>, keys: &[&str]) -> Vec<(String, String)> {
    let script =
        "for k; do v=$(cat /proc/sys/$k 2>/dev/null) && printf '%s=%s\\n' \"$k\" \"$v\"; done";
    let mut cmd = match ns {
        Some(ns) => {
            let mut c = Command::new("ip");
            c.args(["netns", "exec", ns, "sh", "-c", script, "sh"]);
            c
        }
        None => {
            let mut c = Command::new("sh");
            c.args(["-c", script, "sh"]);
            c
        }
    };
    let out = cmd.args(keys).stderr(Stdio::null()).output();
    out.map(|o| {
        String::from_utf8_lossy(&o.stdout)
            .lines()
            .filter_map(|l| l.split_once('='))
            .map(|(k, v)| {
                (
                    k.to_owned(),
                    v.split_whitespace().collect::<Vec<_>>().join(" "),
                )
            })
            .collect()
    })
    .unwrap_or_default()
}

/// Fail early, with what is needed, when this process cannot create namespaces or TUN devices.
pub fn check_privileges() -> Result<(), EmuError> {
    const NEED: &str = "satpep emu needs root (CAP_NET_ADMIN and CAP_SYS_ADMIN) to create \
                        network namespaces and TUN devices, the `ip` command (iproute2) and \
                        /dev/net/tun";
    if sys::euid() != 0 {
        return Err(EmuError::Privileges(format!(
            "{NEED}; this process is not root (try sudo)"
        )));
    }
    if !Path::new("/dev/net/tun").exists() {
        return Err(EmuError::Privileges(format!(
            "{NEED}; /dev/net/tun is missing (modprobe tun)"
        )));
    }
    if let Err(e) = Command::new("ip").arg("-V").output() {
        return Err(EmuError::Privileges(format!(
            "{NEED}; cannot run `ip`: {e}"
        )));
    }
    if !Path::new("/proc/self/ns/net").exists() {
        return Err(EmuError::Privileges(format!(
            "{NEED}; this kernel has no network namespaces"
        )));
    }
    Ok(())
}

/// Remove the namespaces of emulator runs whose process is gone (see the module doc); returns
/// their names.
pub fn clean_stale() -> Vec<String> {
    let Ok(dir) = std::fs::read_dir(NETNS_DIR) else {
        return Vec::new();
    };
    let mut removed = Vec::new();
    for entry in dir.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(pid) = owner_pid(&name) else {
            continue;
        };
        if pid == std::process::id() || Path::new(&format!("/proc/{pid}")).exists() {
            continue;
        }
        remove(&name);
        removed.push(name);
    }
    removed.sort();
    removed
}

/// The emulator pid encoded in a namespace name `satpep-<pid>-…`.
pub fn owner_pid(name: &str) -> Option<u32> {
    name.strip_prefix(PREFIX)?.split('-').next()?.parse().ok()
}

/// The namespaces that exist now whose names start with `prefix`.
pub fn list(prefix: &str) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(NETNS_DIR)
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with(prefix))
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// A command that runs `shell` (through `sh -c`) inside namespace `ns`.
pub fn command_in(ns: &str, shell: &str) -> Command {
    let mut cmd = Command::new("ip");
    cmd.args(["netns", "exec", ns, "sh", "-c", shell]);
    cmd
}

/// Kill every process inside `ns`, then delete it. Errors are ignored: this is cleanup.
fn remove(ns: &str) {
    for _ in 0..3 {
        let pids = Command::new("ip")
            .args(["netns", "pids", ns])
            .stderr(Stdio::null())
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default();
        let pids: Vec<i32> = pids
            .split_whitespace()
            .filter_map(|p| p.parse().ok())
            .collect();
        if pids.is_empty() {
            break;
        }
        for p in pids {
            let _ = sys::kill(p, libc::SIGKILL);
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let _ = ip(&["netns", "del", ns]);
}

fn set_sysctls(ns: &str, shell: bool) -> Result<(), EmuError> {
    // One shell for all of them: a required value that cannot be written stops with its key.
    let mut script = String::new();
    let extra = if shell { FORWARDING } else { &[] };
    for (key, value, required) in SYSCTLS.iter().chain(extra) {
        let path = PathBuf::from("/proc/sys").join(key);
        let path = path.display();
        if *required {
            script += &format!("echo '{value}' > {path} || {{ echo {key} >&2; exit 3; }}\n");
        } else {
            script += &format!("echo '{value}' > {path} 2>/dev/null\n");
        }
    }
    script += "exit 0\n";
    let out = command_in(ns, &script)
        .output()
        .map_err(|e| EmuError::Setup(format!("{ns}: cannot run ip netns exec: {e}")))?;
    if out.status.success() {
        return Ok(());
    }
    Err(EmuError::Setup(format!(
        "{ns}: cannot set sysctl {}",
        String::from_utf8_lossy(&out.stderr)
            .trim()
            .replace('/', ".")
    )))
}

fn ip(args: &[&str]) -> Result<(), String> {
    let out = Command::new("ip")
        .args(args)
        .output()
        .map_err(|e| format!("cannot run ip: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "ip {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// Run `ip -batch` in namespace `ns` (`None`: this process's own).
fn ip_batch(ns: Option<&str>, script: &str) -> Result<(), String> {
    let mut cmd = Command::new("ip");
    if let Some(ns) = ns {
        cmd.args(["-n", ns]);
    }
    let mut child = cmd
        .args(["-batch", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run ip: {e}"))?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin
            .write_all(script.as_bytes())
            .map_err(|e| format!("ip -batch: {e}"))?;
    }
    let out = child
        .wait_with_output()
        .map_err(|e| format!("ip -batch: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "ip -batch: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// A node name as part of a namespace or file name: characters outside `[A-Za-z0-9_.]` become
/// `_`.
pub fn sanitize(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owner_pid_reads_the_first_field_only() {
        assert_eq!(owner_pid("satpep-4242-0-gw"), Some(4242));
        assert_eq!(owner_pid("satpep-17-3-my_host"), Some(17));
        assert_eq!(owner_pid("satpep-x-0-gw"), None);
        assert_eq!(owner_pid("other-17-0-gw"), None);
    }

    #[test]
    fn node_names_become_safe_namespace_parts() {
        assert_eq!(sanitize("gw-1/a b"), "gw_1_a_b");
        assert_eq!(sanitize("term.0_x"), "term.0_x");
    }
}
