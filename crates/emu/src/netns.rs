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
    /// `satpep-<pid>-<run>-<node>`; for the outer host of a shell, its device's name.
    pub name: String,
    /// The host is the namespace this process runs in (a shell's outer host): its device is
    /// removed, the namespace is not.
    pub here: bool,
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

/// The watchdog's script; `$1` is the namespace name prefix of the run it guards.
const WATCHDOG: &str = r#"trap '' INT TERM HUP
cat >/dev/null
sleep 0.2  # let the kernel close the dead emulator's other descriptors (TUN devices) first
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
    fn spawn(prefix: &str) -> std::io::Result<Self> {
        let mut cmd = Command::new("sh");
        cmd.args(["-c", WATCHDOG, "satpep-watchdog", prefix])
            .stdin(Stdio::piped())
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

impl Namespaces {
    /// Create one namespace per `(node index, node name, address)`, named for this process and
    /// run; the host `outer` names (a shell's) gets a device in this process's namespace
    /// instead. On error, those already created are removed.
    pub fn create(
        hosts: &[(usize, String, Ipv4Addr)],
        outer: Option<&Outer>,
    ) -> Result<Self, EmuError> {
        let run = RUN.fetch_add(1, Ordering::Relaxed);
        let pid = std::process::id();
        let prefix = format!("{PREFIX}{pid}-{run}-");
        let mut me = Self {
            list: Vec::new(),
            watchdog: Some(Watchdog::spawn(&prefix).map_err(|e| {
                EmuError::Setup(format!("cannot start the clean-up watchdog (sh): {e}"))
            })?),
        };
        for (node, name, address) in hosts {
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
                node: *node,
                address: *address,
                tun: None,
            });
            set_sysctls(&ns, outer.is_some())?;
            let tun = Tun::create_in_netns(&Path::new(NETNS_DIR).join(&ns), TUN_NAME)
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

    /// Remove every namespace now (also done on drop).
    pub fn teardown(&mut self) {
        for mut ns in self.list.drain(..) {
            // Close the TUN first: a device still open when its namespace dies would be moved
            // to the root namespace instead of vanishing.
            drop(ns.tun.take());
            if !ns.here {
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
