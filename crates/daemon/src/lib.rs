//! satpep-daemon: `satpep gateway` and `satpep terminal` — the mechanisms the simulator and
//! the emulator run (split TCP, spoofing, Snoop, TCP-SuperCharger, ACK filtering and
//! compaction, the IP-in-IP tunnel), on live traffic in a Linux router's forwarding path.
//!
//! ```text
//!  eth1 ─▶ ip rule iif eth1 ─▶ TUN gw-p0 ─┐                    ┌─▶ TUN gw-p0 ─▶ main table ─▶ eth0/eth1
//!  eth0 ─▶ ip rule iif eth0 ─▶ TUN gw-p1 ─┴▶ satpep: shaper ─▶ middlebox ┘
//! ```
//!
//! - [`config`]: the TOML file (the middlebox table is a scenario's).
//! - [`pipeline`]: the packet path, clock-free and unit-tested with hand-made times.
//! - [`routing`]: the rules and tables that put the daemon in the path; [`state`]: what must
//!   be undone after a crash.
//! - [`metrics`]: the Prometheus text endpoint.
//! - [`kernel`]: the kernel split engine (`[split] engine = "kernel"`): Linux TCP on both
//!   legs, nftables TPROXY and splice instead of the TUN path.
//! - [`run()`]: the epoll loop. docs/deploy.md is the operator's guide.

#![warn(missing_docs)]

pub mod accel;
pub mod config;
pub mod egress;
pub mod epoch;
pub mod kernel;
pub mod metrics;
pub mod orphans;
pub mod pipeline;
pub mod routing;
mod run;
pub mod state;

pub use config::{ConfigError, DaemonConfig, Role};
pub use run::{cleanup, run, RunOptions, Status};

use satpep_proto::auth::Trust;

/// Why the daemon could not start or stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum DaemonError {
    /// The configuration file is wrong.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// Another instance with this name is running.
    #[error("instance `{0}` is already running (pid {1}); give this one another `name` and `routing` numbers, or stop that one")]
    Running(String, u32),
    /// Putting the daemon in the path failed (not root, a missing interface, `ip` failed).
    #[error("setup: {0}")]
    Setup(String),
    /// An I/O error.
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

impl DaemonError {
    /// Exit code: 2 for what the operator must change, 1 otherwise.
    pub fn exit_code(&self) -> u8 {
        match self {
            Self::Config(_) | Self::Running(..) => 2,
            Self::Setup(_) | Self::Io(_) => 1,
        }
    }
}

/// How log lines are written (to stderr).
#[derive(Clone, Copy, Debug, Eq, PartialEq)]
pub enum LogFormat {
    /// Human-readable lines with `key=value` fields.
    Text,
    /// One JSON object per line (journald, Loki, Elasticsearch).
    Json,
}

/// Install the log subscriber (once per process; later calls do nothing).
pub fn init_logging(format: LogFormat, verbose: bool) {
    let level = if verbose {
        tracing::Level::DEBUG
    } else {
        tracing::Level::INFO
    };
    let builder = tracing_subscriber::fmt()
        .with_max_level(level)
        .with_writer(std::io::stderr)
        .with_target(false);
    let _ = match format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder.json().flatten_event(true).try_init(),
    };
}

/// What would stop this configuration from starting in `role` that parsing cannot see (it
/// needs the role or the files the configuration names): `(key, why)` for each, for `--check`
/// to report with exit 2 rather than a daemon to fail at start.
pub fn role_problems(config: &DaemonConfig, role: Role) -> Vec<(String, String)> {
    let mut out = Vec::new();
    if let Some(a) = config.accel() {
        match role {
            Role::Terminal if a.gateway.is_none() => out.push((
                "split.accel.gateway".into(),
                "a terminal needs the gateway's address".into(),
            )),
            Role::Gateway if a.allow.is_empty() => out.push((
                "split.accel.allow".into(),
                "list the destinations the gateway may connect to (\"0.0.0.0/0\": anywhere)".into(),
            )),
            _ => {}
        }
        if let Err(e) = accel::tls::load(&a.certificate, &a.key) {
            out.push(("split.accel.certificate".into(), e));
        }
    }
    out
}

/// What `--check` prints: the configuration as the daemon understands it, and what it would
/// install. Interfaces that do not exist on this machine are listed as warnings.
pub fn describe(config: &DaemonConfig, role: Role) -> String {
    let name = config.instance(role);
    let mut plan = routing::RoutingPlan::new(config, &name);
    plan.intercept = config.accel().is_none() || role == Role::Terminal;
    let mb = satpep_proto::middlebox::Middlebox::new(
        config.middlebox(),
        satpep_proto::rand::Rng::new(config.seed, 1),
    );
    let mechanism = match (config.accel(), config.kernel_split()) {
        (Some(a), Some(k)) => format!(
            "accelerated PEP: {} (ports {}), one QUIC connection ({:?} congestion control, {} forward / {} return, {} ms RTT), certificate {}, trusting {}{}",
            match role {
                Role::Terminal => format!(
                    "intercepts TCP on its interfaces and carries it to the gateway {}",
                    a.gateway.map_or("(missing: split.accel.gateway)".to_owned(), |g| g.to_string())
                ),
                Role::Gateway => format!(
                    "accepts terminals on UDP {} and opens their connections from the clients' addresses",
                    a.listen.map_or("0.0.0.0:4433".to_owned(), |l| l.to_string())
                ),
            },
            if k.ports.is_empty() {
                "all".to_owned()
            } else {
                format!("{:?}", k.ports)
            },
            a.congestion,
            a.forward,
            a.return_rate,
            a.rtt.as_nanos() / 1_000_000,
            accel::tls::load(&a.certificate, &a.key)
                .map_or_else(|e| format!("unreadable ({e})"), |id| id.fingerprint()),
            a.peers.join(", "),
            match role {
                Role::Gateway if a.allow.is_empty() => {
                    "; allow: none (missing: a gateway must list its destinations)".to_owned()
                }
                Role::Gateway => format!("; allow: {}", a.allow.join(", ")),
                Role::Terminal => String::new(),
            }
        ),
        (None, Some(k)) => format!(
            "split_tcp, kernel engine (ports {}, at most {} connections, {} bytes per direction, idle timeout {})",
            if k.ports.is_empty() {
                "all".to_owned()
            } else {
                format!("{:?}", k.ports)
            },
            k.max_connections,
            k.buffer.bytes(),
            k.idle_timeout.map_or("none".to_owned(), |d| format!("{} s", d.as_nanos() / 1_000_000_000)),
        ),
        _ => mb.kind().to_owned(),
    };
    let mut s = format!(
        "instance {name} ({})\nmechanism: {mechanism}\n",
        role.name()
    );
    for (key, kind, trust) in config.tunnel_ends() {
        s += &format!(
            "tunnel {key} ({kind}): {}\n",
            match trust {
                Trust::Keyed => "authenticated (key: AH, HMAC-SHA-256-128, replay window)",
                Trust::Insecure | Trust::Unkeyed =>
                    "UNAUTHENTICATED (insecure = true): its tunnel packets are told apart by their outer source address alone, which anyone on the path can forge",
            }
        );
    }
    for (i, iface) in config.interfaces.iter().enumerate() {
        let shaped = config
            .shape
            .iter()
            .find(|sh| &sh.interface == iface)
            .map(|sh| format!(", shaped to {} ({:?} queue)", sh.rate, sh.queue.kind))
            .unwrap_or_default();
        let missing = if iface.ends_with('*') {
            "  (the one interface with this prefix, at start)"
        } else if std::path::Path::new("/sys/class/net").join(iface).exists() {
            ""
        } else {
            "  (warning: no such interface here)"
        };
        let to = match config.kernel_split() {
            Some(_) if !plan.intercept => {
                "connections opened from the clients' addresses".to_owned()
            }
            Some(k) => format!(
                "SYNs to listener 127.0.0.1:{}",
                u32::from(k.listen_port) + i as u32
            ),
            None => format!("TUN {}", plan.tun_name(i)),
        };
        s += &format!("port {i}: {iface} -> {to}{shaped}{missing}\n");
    }
    match config.metrics.listen {
        Some(a) => s += &format!("metrics: http://{a}/metrics\n"),
        None => s += "metrics: off\n",
    }
    s += "would run: ip -batch - <<\n";
    for l in plan.install_script().lines() {
        s += &format!("  {l}\n");
    }
    if let Some(nft) = plan.nft_script() {
        s += "would run: nft -f - <<\n";
        for l in nft.lines() {
            s += &format!("  {l}\n");
        }
    }
    s
}
