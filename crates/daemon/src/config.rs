//! The daemon's configuration file: which interfaces feed satpep, which mechanism runs, what is
//! shaped, where metrics are served. One schema for `satpep gateway` and `satpep terminal`; the
//! role only names the instance. docs/deploy.md has worked examples.
//!
//! ```toml
//! interfaces = ["eth1", "eth0"]           # port 0: terrestrial side, port 1: satellite side
//! middlebox = { kind = "split_tcp", ports = [80, 443] }
//! [metrics]
//! listen = "127.0.0.1:9464"
//! ```
//!
//! `middlebox` is exactly a scenario's `middlebox = { kind = "…", … }` (every mechanism, with
//! the same keys and validation), and a packet arriving on `interfaces[i]` reaches it on port
//! `i`, so `satellite_port = 1` means what it means in a scenario.
//!
//! `[split] engine = "kernel"` replaces the middlebox with the kernel split engine
//! ([`crate::kernel`]): Linux TCP on both legs, nftables TPROXY and splice, no TUN device.
//!
//! ```toml
//! interfaces = ["eth1", "eth0"]
//! [split]
//! engine = "kernel"
//! ports = [80, 443]
//! congestion_control = { satellite = "hybla", terrestrial = "cubic" }
//! ```

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use satpep_proto::auth::Trust;
use satpep_proto::link::{LinkConfig, QueueConfig};
use satpep_proto::middlebox::MiddleboxConfig;
use satpep_proto::time::{Bitrate, Duration};
use satpep_proto::units::ByteSize;
use serde::Deserialize;

/// The longest instance name: TUN devices are named `<name>-p<port>` within Linux's 15 bytes.
pub const MAX_NAME: usize = 10;
/// The most interfaces one daemon takes traffic from.
pub const MAX_INTERFACES: usize = 8;

/// A whole configuration file.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DaemonConfig {
    /// Instance name: names the TUN devices (`<name>-p0`, …), the state file and the log lines.
    /// Default: the role (`gateway`, `terminal`). Two daemons on one machine need two names
    /// and two `routing` ranges.
    #[serde(default)]
    pub name: Option<String>,
    /// Interfaces whose arriving IPv4 traffic passes through satpep, in port order. A name
    /// ending in `*` stands for the one interface with that prefix (e.g. `"wwan*"`, or
    /// `"satpep*"` for the emulator's device), resolved at start; none or several is an error.
    pub interfaces: Vec<String>,
    /// The mechanism, as in a scenario (`kind = "split_tcp" | "spoof" | "snoop" |
    /// "supercharger" | "dupack_delay" | "ipip_tunnel" | "ack_expander" | "chain" |
    /// "pass_through"`). Required, unless `[split] engine = "kernel"` (then absent).
    #[serde(default)]
    pub middlebox: Option<MiddleboxConfig>,
    /// Which split-TCP engine runs; absent: the middlebox's (`engine = "user"`).
    #[serde(default)]
    pub split: Option<SplitEngineConfig>,
    /// Shapers: traffic arriving on an interface is paced to a rate through a queue before the
    /// middlebox sees it — a terminal's return link, so that ACKs wait here, where suppression,
    /// filtering or compaction can act, and not in the modem.
    #[serde(default)]
    pub shape: Vec<ShapeConfig>,
    /// The metrics endpoint.
    #[serde(default)]
    pub metrics: MetricsConfig,
    /// Policy-routing numbers.
    #[serde(default)]
    pub routing: RoutingConfig,
    /// Seed of the mechanisms' random streams (e.g. Snoop's, a shaper's error model).
    #[serde(default)]
    pub seed: u64,
    /// Seconds between the log lines that summarise the counters (0: none; at most one day,
    /// [`MAX_LOG_EVERY_S`]). Default 60.
    #[serde(default = "default_log_every")]
    pub log_every_s: u64,
}

/// The longest `log_every_s`: a day (the next log instant is a clock reading plus this, which
/// must not overflow; 18446744073709551615 used to panic the daemon).
pub const MAX_LOG_EVERY_S: u64 = 86_400;

fn default_log_every() -> u64 {
    60
}

/// `[split]`: the split-TCP engine.
#[derive(Clone, Debug, Deserialize, Eq, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SplitEngineConfig {
    /// `"user"`: satpep's TCP on TUN devices, configured by `middlebox = { kind =
    /// "split_tcp", … }` (no other key here); `"kernel"`: Linux TCP on both legs through
    /// nftables TPROXY and splice, configured by the keys below ([`crate::kernel`]).
    pub engine: SplitEngine,
    /// Split only TCP connections to these destination ports; empty (default): every one.
    #[serde(default)]
    pub ports: Vec<u16>,
    /// First local port of the engine's listeners (bound to 127.0.0.1): SYNs arriving on
    /// `interfaces[i]` are diverted to `listen_port + i`. Default 7470.
    #[serde(default = "default_listen_port")]
    pub listen_port: u16,
    /// Connections held at once; a connection beyond is accepted and reset at once (the
    /// client sees a RST right after its handshake). Default 10 000.
    #[serde(default = "default_max_connections")]
    pub max_connections: u32,
    /// Bytes held in the relay per connection and direction (the splice pipe; the kernel
    /// rounds up to a power of two pages): when full, the relay stops reading that direction
    /// and the sender's window closes. Default `"1MB"`.
    #[serde(default = "default_buffer")]
    pub buffer: ByteSize,
    /// Reset both legs of a connection that moved no byte this long. Default: never.
    #[serde(default)]
    pub idle_timeout: Option<Duration>,
    /// The interface whose side is the satellite (one of `interfaces`). Default: the second
    /// (port 1), or the only one.
    #[serde(default)]
    pub satellite: Option<String>,
    /// Congestion control (`TCP_CONGESTION`) per leg; absent: the kernel's default.
    #[serde(default)]
    pub congestion_control: LegCongestion,
    /// `[split.accel]`: the accelerated PEP's satellite transport (`engine = "accel"` only).
    #[serde(default)]
    pub accel: Option<AccelConfig>,
}

/// `[split.accel]`: terminal and gateway joined by one QUIC connection per terminal
/// ([`crate::accel`]). Both ends terminate TCP locally (the terminal intercepts its clients'
/// connections with TPROXY as the kernel engine does; the gateway opens the server connections
/// from the clients' addresses) and carry each connection on a stream of their own.
#[derive(Clone, Debug, Deserialize, Eq, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct AccelConfig {
    /// Terminal: the gateway's UDP address (e.g. `"192.0.2.1:4433"`).
    #[serde(default)]
    pub gateway: Option<SocketAddr>,
    /// Gateway: the UDP address it listens on. Default `0.0.0.0:4433`.
    #[serde(default)]
    pub listen: Option<SocketAddr>,
    /// This end's certificate (PEM; `satpep keygen` makes one). A relative path is taken
    /// from the configuration file's folder.
    pub certificate: PathBuf,
    /// This end's private key (PEM), likewise.
    pub key: PathBuf,
    /// The certificates of the other end this one accepts, as `sha256:<64 hex digits>` of the
    /// certificate (`satpep keygen` prints it): the gateway's on a terminal, the terminals'
    /// on a gateway. Nothing else is trusted (no certificate authority, no skipping).
    pub peers: Vec<String>,
    /// Gateway: the destinations (`a.b.c.d/len`) it opens connections to for terminals;
    /// anything else is refused. Required on a gateway (`["0.0.0.0/0"]` says "anywhere" in
    /// so many words): a gateway is never an open relay by default.
    #[serde(default)]
    pub allow: Vec<String>,
    /// The forward (gateway to terminal) capacity on the wire.
    pub forward: Bitrate,
    /// The return (terminal to gateway) capacity on the wire.
    #[serde(rename = "return")]
    pub return_rate: Bitrate,
    /// The satellite round trip, assumed until measured (e.g. `"600ms"`).
    pub rtt: Duration,
    /// The controller of what this end sends: `"rate"` (at the configured capacity, deaf to
    /// loss; default), `"probe"` (measures shared or unknown capacity), or quinn's own
    /// `"cubic"`, `"bbr"`, `"new_reno"` for comparison.
    #[serde(default)]
    pub congestion: AccelCongestion,
    /// UDP payload bytes per packet (default 1452: a 1500-byte path with room to spare).
    #[serde(default = "default_accel_mtu")]
    pub mtu: u16,
    /// Gateway: how long a server may take to accept before the client is reset. Default
    /// `"10s"`.
    #[serde(default = "default_accel_connect_timeout")]
    pub connect_timeout: Duration,
    /// Streams (TCP connections) one terminal may hold at once. Default 10 000.
    #[serde(default = "default_max_connections")]
    pub max_streams: u32,
}

/// `[split.accel] congestion`: `satpep_proto::accel::transport::Congestion` (the scenario
/// key of the simulated PEP takes the same names).
pub use satpep_proto::accel::transport::Congestion as AccelCongestion;

fn default_accel_mtu() -> u16 {
    1452
}

fn default_accel_connect_timeout() -> Duration {
    Duration::from_secs(10)
}

/// `[split] engine`.
#[derive(Clone, Copy, Debug, Deserialize, Eq, PartialEq)]
#[serde(rename_all = "snake_case")]
pub enum SplitEngine {
    /// satpep's TCP (`SplitRelay`) on TUN devices.
    User,
    /// Linux TCP on both legs: nftables TPROXY, `IP_TRANSPARENT` sockets, splice.
    Kernel,
    /// The accelerated PEP: Linux TCP on the LAN legs, one QUIC connection across the
    /// satellite (`[split.accel]`).
    Accel,
}

/// `[split.congestion_control]`: an algorithm name from
/// `/proc/sys/net/ipv4/tcp_available_congestion_control` per leg.
#[derive(Clone, Debug, Default, Deserialize, Eq, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct LegCongestion {
    /// The leg toward the `satellite` interface (e.g. `"hybla"`, `"bbr"`).
    pub satellite: Option<String>,
    /// The other leg (e.g. `"cubic"`).
    pub terrestrial: Option<String>,
}

fn default_listen_port() -> u16 {
    7470
}

fn default_max_connections() -> u32 {
    10_000
}

fn default_buffer() -> ByteSize {
    ByteSize(1_000_000)
}

/// Limits of `[split]` values.
pub const MAX_SPLIT_CONNECTIONS: u32 = 1_000_000;
/// The largest `buffer`: 64 MiB per direction.
pub const MAX_SPLIT_BUFFER: u64 = 64 << 20;
/// The smallest `buffer`: one page.
pub const MIN_SPLIT_BUFFER: u64 = 4096;

/// A middlebox for configurations that have none (the kernel split engine's).
static PASS_THROUGH: MiddleboxConfig = MiddleboxConfig::PassThrough;

/// `[[shape]]`: pace what arrives on `interface`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShapeConfig {
    /// The interface whose arriving traffic is shaped (one of `interfaces`).
    pub interface: String,
    /// The rate, e.g. `"2Mbps"`: at most the return link's, so its queue stays here.
    pub rate: Bitrate,
    /// The queue, as a scenario link's `queue` (drop-tail, or `ack_suppression`,
    /// `ack_filtering`, `ack_compaction` with their `ack` table).
    #[serde(default)]
    pub queue: QueueConfig,
}

impl ShapeConfig {
    /// The link model that does the shaping: this rate and queue, no delay, no errors.
    pub fn link_config(&self) -> LinkConfig {
        let mut c = LinkConfig::default();
        c.rate = self.rate;
        c.delay = Duration::ZERO;
        c.queue = self.queue.clone();
        c
    }
}

/// `[metrics]`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MetricsConfig {
    /// Address of the Prometheus text endpoint (`GET /metrics`); none: no endpoint.
    pub listen: Option<SocketAddr>,
}

/// `[routing]`: the numbers of the policy-routing rules and tables the daemon owns. Port `i`
/// uses rule preference `priority + i` and table `table + i`; everything with those numbers is
/// removed at start and at exit, so they must not be used by anything else.
#[derive(Clone, Copy, Debug, Deserialize, Eq, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct RoutingConfig {
    /// First routing table. Default 7470.
    pub table: u32,
    /// First rule preference (must come after the `local` rule, 0). Default 7470.
    pub priority: u32,
}

impl Default for RoutingConfig {
    fn default() -> Self {
        Self {
            table: 7470,
            priority: 7470,
        }
    }
}

/// Which end of the path a daemon serves (names the instance and the unit files).
#[derive(Clone, Copy, Debug, Eq, PartialEq)]
pub enum Role {
    /// `satpep gateway`: the hub side.
    Gateway,
    /// `satpep terminal`: the remote side.
    Terminal,
}

impl Role {
    /// `"gateway"` or `"terminal"`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Gateway => "gateway",
            Self::Terminal => "terminal",
        }
    }
}

/// A configuration that cannot be used: the file, the line when known, the key and why.
#[derive(Debug, thiserror::Error)]
#[error("{}{}: {key}: {message}", file.display(), line.map(|l| format!(":{l}")).unwrap_or_default())]
pub struct ConfigError {
    /// The file.
    pub file: PathBuf,
    /// 1-based line, when the key could be found.
    pub line: Option<usize>,
    /// Dotted key path (`middlebox.buffer_total`), or `(file)`.
    pub key: String,
    /// What is wrong and what is expected.
    pub message: String,
}

impl DaemonConfig {
    /// Read and check `path`.
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|e| ConfigError {
            file: path.to_owned(),
            line: None,
            key: "(file)".into(),
            message: format!("cannot read: {e}"),
        })?;
        Self::parse(&text, path)
    }

    /// Parse and check `text` (read from `file`, for messages).
    pub fn parse(text: &str, file: &Path) -> Result<Self, ConfigError> {
        let err = |line: Option<usize>, key: String, message: String| ConfigError {
            file: file.to_owned(),
            line,
            key,
            message,
        };
        let de = toml::Deserializer::parse(text)
            .map_err(|e| err(line_at(text, e.span()), "(syntax)".into(), one_line(&e)))?;
        let mut config: Self = serde_path_to_error::deserialize(de).map_err(|e| {
            let key = e.path().to_string();
            let inner = e.into_inner();
            if key == "middlebox" {
                // serde reads an internally tagged enum (`kind = …`) through a buffer that
                // keeps neither the path nor the spans below it: find the key inside.
                if let Some(key) = blame_in_middlebox(text) {
                    return err(find_key(text, &key), key, one_line(&inner));
                }
            }
            let line = line_at(text, inner.span()).or_else(|| find_key(text, &key));
            err(line, key, one_line(&inner))
        })?;
        // Relative certificate and key paths are the configuration file's neighbours, wherever
        // the daemon is started from.
        if let (Some(a), Some(dir)) = (
            config.split.as_mut().and_then(|s| s.accel.as_mut()),
            file.parent(),
        ) {
            for p in [&mut a.certificate, &mut a.key] {
                if p.is_relative() {
                    *p = dir.join(&*p);
                }
            }
        }
        config
            .validate()
            .map_err(|(key, message)| err(find_key(text, &key), key, message))?;
        Ok(config)
    }

    fn validate(&self) -> Result<(), (String, String)> {
        if let Some(name) = &self.name {
            if name.is_empty()
                || name.len() > MAX_NAME
                || !name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
            {
                return Err((
                    "name".into(),
                    format!("`{name}`: 1 to {MAX_NAME} letters, digits, `-` or `_` (it names TUN devices)"),
                ));
            }
        }
        if self.log_every_s > MAX_LOG_EVERY_S {
            return Err((
                "log_every_s".into(),
                format!("0 (no counter lines) to {MAX_LOG_EVERY_S} seconds (a day)"),
            ));
        }
        if self.interfaces.is_empty() || self.interfaces.len() > MAX_INTERFACES {
            return Err((
                "interfaces".into(),
                format!("list 1 to {MAX_INTERFACES} interfaces (port 0 first)"),
            ));
        }
        for (i, name) in self.interfaces.iter().enumerate() {
            let bare = name.strip_suffix('*').unwrap_or(name);
            if bare.is_empty() || name.len() > 15 || bare.contains(['/', ' ', '\0', '*']) {
                return Err((
                    format!("interfaces.{i}"),
                    format!("`{name}` is not an interface name"),
                ));
            }
            if self.interfaces[..i].contains(name) {
                return Err((
                    format!("interfaces.{i}"),
                    format!("`{name}` is listed twice"),
                ));
            }
        }
        match (&self.middlebox, self.kernel_split()) {
            (Some(_), Some(_)) => {
                return Err((
                    "middlebox".into(),
                    "the kernel split engine ([split] engine = \"kernel\") replaces the middlebox: remove one".into(),
                ))
            }
            (None, None) => {
                return Err((
                    "middlebox".into(),
                    "missing: give `middlebox = { kind = … }`, or `[split] engine = \"kernel\"`"
                        .into(),
                ))
            }
            (Some(mb), None) => {
                mb.validate().map_err(|m| split_key("middlebox", &m))?;
                // Port i is interfaces[i]: a port beyond them matches no packet, and the
                // mechanism silently does something else (no ACK ever from the satellite side).
                let n = self.interfaces.len();
                if let Some((k, p)) = mb
                    .arrival_ports()
                    .into_iter()
                    .find(|&(_, p)| usize::from(p) >= n)
                {
                    return Err((
                        format!("middlebox.{k}"),
                        format!(
                            "port {p} is no interface's: `interfaces` lists {n}, ports 0 to {} in that order",
                            n - 1
                        ),
                    ));
                }
            }
            (None, Some(k)) => {
                self.validate_kernel_split(k)?;
                self.validate_accel(k)?;
            }
        }
        if let Some(sp) = self
            .split
            .as_ref()
            .filter(|s| s.engine == SplitEngine::User)
        {
            if *sp
                != (SplitEngineConfig {
                    engine: SplitEngine::User,
                    ..kernel_defaults()
                })
            {
                return Err((
                    "split".into(),
                    "with engine = \"user\" the split is configured in `middlebox = { kind = \"split_tcp\", … }`; no other key here".into(),
                ));
            }
            if !self
                .middlebox
                .as_ref()
                .is_some_and(MiddleboxConfig::has_split_tcp)
            {
                return Err((
                    "split.engine".into(),
                    "\"user\" needs `middlebox = { kind = \"split_tcp\", … }`".into(),
                ));
            }
        }
        for (i, s) in self.shape.iter().enumerate() {
            if !self.interfaces.contains(&s.interface) {
                return Err((
                    format!("shape.{i}.interface"),
                    format!("`{}` is not one of `interfaces`", s.interface),
                ));
            }
            if self.shape[..i].iter().any(|o| o.interface == s.interface) {
                return Err((
                    format!("shape.{i}.interface"),
                    format!("`{}` is shaped twice", s.interface),
                ));
            }
            if s.rate.0 == 0 {
                return Err((format!("shape.{i}.rate"), "must be above 0".into()));
            }
            // The shaper is a scenario link: its queue is checked as a link's (a
            // `limit_packets = 0` queue drops every packet).
            s.link_config()
                .validate()
                .map_err(|m| split_key(&format!("shape.{i}"), &m))?;
        }
        // The simulated accelerated PEP authenticates with the simulator's public identities:
        // on a real network that is no authentication at all.
        if self.middlebox().has_accel() {
            return Err((
                "middlebox".into(),
                "kind = \"accel\" is the simulator's accelerated PEP, whose TLS identities are \
                 public; a daemon runs it as [split] engine = \"accel\" with its own certificates"
                    .into(),
            ));
        }
        // Secure by default (issue 36): on a real network a tunnel end without a key trusts
        // an outer source address anyone on the path can forge.
        if let Some((key, kind, _)) = self
            .tunnel_ends()
            .into_iter()
            .find(|(_, _, t)| *t == Trust::Unkeyed)
        {
            return Err((key, unkeyed(kind)));
        }
        if self.routing.priority == 0 || self.routing.table == 0 {
            return Err((
                "routing".into(),
                "table and priority must be above 0 (0 is the local rule and an unspecified table)"
                    .into(),
            ));
        }
        // Port i uses table + i and preference priority + i: both ranges are checked whole,
        // without wrapping (table 4294967295 + 1 would be table 0, which `ip route flush`
        // reads as every table).
        let n = self.interfaces.len() as u32;
        let last_table = self.routing.table.checked_add(n - 1).ok_or_else(|| {
            (
                "routing.table".into(),
                format!(
                    "table + {} (one table per interface) must fit in 32 bits",
                    n - 1
                ),
            )
        })?;
        // 253–255 are the kernel's default, main and local tables.
        if (self.routing.table..=last_table).any(|t| (253..=255).contains(&t)) {
            return Err((
                "routing.table".into(),
                "the range must not include 253–255 (default, main, local)".into(),
            ));
        }
        if self
            .routing
            .priority
            .checked_add(n - 1)
            .is_none_or(|last| last >= 32_766)
        {
            return Err((
                "routing.priority".into(),
                format!(
                    "priority + {} (one rule per interface) must come before the main rule (32766)",
                    n - 1
                ),
            ));
        }
        Ok(())
    }

    fn validate_kernel_split(&self, k: &SplitEngineConfig) -> Result<(), (String, String)> {
        if !self.shape.is_empty() {
            return Err((
                "shape".into(),
                "shapers need the TUN path; the kernel split engine has none".into(),
            ));
        }
        if k.ports.contains(&0) {
            return Err(("split.ports".into(), "port 0 is not a port".into()));
        }
        let n = self.interfaces.len() as u32;
        if u32::from(k.listen_port) + n > 65_536 || k.listen_port == 0 {
            return Err((
                "split.listen_port".into(),
                format!("1 to {} (one port per interface)", 65_536 - n),
            ));
        }
        if k.max_connections == 0 || k.max_connections > MAX_SPLIT_CONNECTIONS {
            return Err((
                "split.max_connections".into(),
                format!("1 to {MAX_SPLIT_CONNECTIONS}"),
            ));
        }
        if !(MIN_SPLIT_BUFFER..=MAX_SPLIT_BUFFER).contains(&k.buffer.bytes()) {
            return Err((
                "split.buffer".into(),
                format!("{MIN_SPLIT_BUFFER} bytes to 64 MiB per direction"),
            ));
        }
        if k.idle_timeout.is_some_and(|d| d.as_nanos() < 1_000_000_000) {
            return Err((
                "split.idle_timeout".into(),
                "at least 1 s (the engine looks once a second)".into(),
            ));
        }
        if let Some(sat) = &k.satellite {
            if !self.interfaces.contains(sat) {
                return Err((
                    "split.satellite".into(),
                    format!("`{sat}` is not one of `interfaces`"),
                ));
            }
        }
        for (leg, cc) in [
            ("satellite", &k.congestion_control.satellite),
            ("terrestrial", &k.congestion_control.terrestrial),
        ] {
            if let Some(cc) = cc {
                // TCP_CA_NAME_MAX is 16 with the terminating NUL.
                if cc.is_empty()
                    || cc.len() > 15
                    || !cc.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
                {
                    return Err((
                        format!("split.congestion_control.{leg}"),
                        format!("`{cc}`: an algorithm name, e.g. \"cubic\" (see /proc/sys/net/ipv4/tcp_available_congestion_control)"),
                    ));
                }
            }
        }
        Ok(())
    }

    /// The kernel split engine's settings, when it (or the accelerated PEP, which
    /// intercepts connections the same way) runs instead of a middlebox.
    pub fn kernel_split(&self) -> Option<&SplitEngineConfig> {
        self.split
            .as_ref()
            .filter(|s| matches!(s.engine, SplitEngine::Kernel | SplitEngine::Accel))
    }

    /// The accelerated PEP's settings, when it runs.
    pub fn accel(&self) -> Option<&AccelConfig> {
        self.split
            .as_ref()
            .filter(|s| s.engine == SplitEngine::Accel)
            .and_then(|s| s.accel.as_ref())
    }

    fn validate_accel(&self, k: &SplitEngineConfig) -> Result<(), (String, String)> {
        let Some(a) = &k.accel else {
            if k.engine == SplitEngine::Accel {
                return Err((
                    "split".into(),
                    "`engine = \"accel\"` needs a `[split.accel]` table".into(),
                ));
            }
            return Ok(());
        };
        if k.engine != SplitEngine::Accel {
            return Err((
                "split.accel".into(),
                "only with `engine = \"accel\"`".into(),
            ));
        }
        if a.peers.is_empty() {
            return Err((
                "split.accel.peers".into(),
                "list the certificates this end accepts (`sha256:…`, from `satpep keygen`)".into(),
            ));
        }
        for (i, p) in a.peers.iter().enumerate() {
            if crate::accel::tls::parse_fingerprint(p).is_none() {
                return Err((
                    format!("split.accel.peers.{i}"),
                    format!("`{p}`: `sha256:` and 64 hex digits"),
                ));
            }
        }
        for (i, p) in a.allow.iter().enumerate() {
            if crate::accel::parse_prefix(p).is_none() {
                return Err((
                    format!("split.accel.allow.{i}"),
                    format!("`{p}`: an IPv4 prefix, e.g. \"192.0.2.0/24\""),
                ));
            }
        }
        for (key, rate) in [("forward", a.forward), ("return", a.return_rate)] {
            if rate.0 < 8_000 {
                return Err((format!("split.accel.{key}"), "at least 8 kb/s".into()));
            }
        }
        if !(1_000_000..=10_000_000_000).contains(&a.rtt.as_nanos()) {
            return Err(("split.accel.rtt".into(), "1 ms to 10 s".into()));
        }
        if !(1200..=8952).contains(&a.mtu) {
            return Err((
                "split.accel.mtu".into(),
                "1200 (QUIC's least) to 8952".into(),
            ));
        }
        if a.max_streams == 0 || a.max_streams > MAX_SPLIT_CONNECTIONS {
            return Err((
                "split.accel.max_streams".into(),
                format!("1 to {MAX_SPLIT_CONNECTIONS}"),
            ));
        }
        Ok(())
    }

    /// The middlebox (pass-through when the kernel split engine runs instead).
    pub fn middlebox(&self) -> &MiddleboxConfig {
        self.middlebox.as_ref().unwrap_or(&PASS_THROUGH)
    }

    /// Every tunnel end this daemon runs (an `ipip_tunnel`, an `ack_expander`, a shaper's ACK
    /// compactor), with its key path, kind and [`Trust`]; after [`Self::parse`] none is
    /// [`Trust::Unkeyed`].
    pub fn tunnel_ends(&self) -> Vec<(String, &'static str, Trust)> {
        let mut ends: Vec<_> = self
            .middlebox()
            .tunnel_ends()
            .into_iter()
            .map(|(k, kind, t)| {
                let key = if k.is_empty() {
                    "middlebox".to_owned()
                } else {
                    format!("middlebox.{k}")
                };
                (key, kind, t)
            })
            .collect();
        for (i, s) in self.shape.iter().enumerate() {
            if let Some(t) = s.queue.trust() {
                ends.push((format!("shape.{i}.queue.ack"), "ack_compaction", t));
            }
        }
        ends
    }

    /// The instance name: `name`, or the role's.
    pub fn instance(&self, role: Role) -> String {
        self.name.clone().unwrap_or_else(|| role.name().to_owned())
    }

    /// The port of interface `name`.
    pub fn port_of(&self, name: &str) -> Option<usize> {
        self.interfaces.iter().position(|i| i == name)
    }
}

/// `[split]` with every default (engine kernel).
fn kernel_defaults() -> SplitEngineConfig {
    SplitEngineConfig {
        engine: SplitEngine::Kernel,
        ports: Vec::new(),
        listen_port: default_listen_port(),
        max_connections: default_max_connections(),
        buffer: default_buffer(),
        idle_timeout: None,
        satellite: None,
        congestion_control: LegCongestion::default(),
        accel: None,
    }
}

/// The interfaces `configured` names, among those `present`: a name ending in `*` must match
/// exactly one present interface by prefix; other names must be present.
pub fn resolve_interfaces(
    configured: &[String],
    present: &[String],
) -> Result<Vec<String>, String> {
    configured
        .iter()
        .map(|c| match c.strip_suffix('*') {
            Some(prefix) => {
                let mut m: Vec<&String> =
                    present.iter().filter(|p| p.starts_with(prefix)).collect();
                m.sort();
                match m.as_slice() {
                    [one] => Ok((*one).clone()),
                    [] => Err(format!("no interface matches `{c}` (see `ip link`)")),
                    many => Err(format!(
                        "`{c}` matches several interfaces ({}); name one",
                        many.iter()
                            .map(|s| s.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    )),
                }
            }
            None if present.contains(c) => Ok(c.clone()),
            None => Err(format!("interface `{c}` does not exist (see `ip link`)")),
        })
        .collect()
}

/// The dotted path (`middlebox.tcp_connect.initial_window`) of the value that makes the
/// middlebox fail to deserialize, when one key is to blame: the first key whose removal
/// changes the error, followed down through tables and arrays.
fn blame_in_middlebox(text: &str) -> Option<String> {
    let root: toml::Table = toml::from_str(text).ok()?;
    let mb = root.get("middlebox")?;
    let error = |v: &toml::Value| {
        v.clone()
            .try_into::<MiddleboxConfig>()
            .err()
            .map(|e| e.to_string())
    };
    let path = blame(mb, &error);
    (!path.is_empty()).then(|| format!("middlebox.{}", path.join(".")))
}

/// The path inside `v` of what `error` complains about (see [`blame_in_middlebox`]); `error`
/// judges a modified `v`.
fn blame(v: &toml::Value, error: &dyn Fn(&toml::Value) -> Option<String>) -> Vec<String> {
    let Some(now) = error(v) else {
        return Vec::new();
    };
    match v {
        toml::Value::Table(t) => {
            for (k, x) in t.iter().filter(|(k, _)| *k != "kind") {
                let mut without = t.clone();
                without.remove(k);
                if error(&toml::Value::Table(without)).as_ref() == Some(&now) {
                    continue;
                }
                let inner = |sub: &toml::Value| {
                    let mut with = t.clone();
                    with.insert(k.clone(), sub.clone());
                    error(&toml::Value::Table(with))
                };
                let mut path = vec![k.clone()];
                path.extend(blame(x, &inner));
                return path;
            }
            Vec::new()
        }
        toml::Value::Array(items) => {
            for (i, x) in items.iter().enumerate() {
                let inner = |sub: &toml::Value| {
                    let mut with = items.clone();
                    with[i] = sub.clone();
                    error(&toml::Value::Array(with))
                };
                let mut without = items.clone();
                without.remove(i);
                if error(&toml::Value::Array(without)).as_ref() == Some(&now) {
                    continue;
                }
                let mut path = vec![i.to_string()];
                path.extend(blame(x, &inner));
                return path;
            }
            Vec::new()
        }
        _ => Vec::new(),
    }
}

/// A mechanism's `"key: message"` as (`prefix.key`, message).
/// Why a tunnel end without `key` (and without `insecure = true`) is refused: on a real
/// network the outer source address it trusts can be forged by anyone on the path.
fn unkeyed(kind: &str) -> String {
    let what = match kind {
        "ipip_tunnel" => "opens any IP-in-IP packet whose outer source is `remote` or a peer",
        "ack_expander" => {
            "regenerates ACKs for any compacted ACK whose outer source is a compactor's (one forged packet becomes up to `max_regenerated` + 1 ACKs, 65 by default)"
        }
        _ => "sends compacted ACKs the expander can tell only by their outer source address",
    };
    format!(
        "{kind} without `key`: it {what}, an address anyone on the path can forge. Give \
         `key = \"hex:…\"` (the same at both ends; `head -c 32 /dev/urandom | od -An -tx1 | \
         tr -d ' \\n'`), or `insecure = true` to run it unauthenticated on purpose"
    )
}

fn split_key(prefix: &str, m: &str) -> (String, String) {
    match m.split_once(": ") {
        Some((k, rest)) if !k.contains(' ') => (format!("{prefix}.{k}"), rest.to_owned()),
        _ => (prefix.to_owned(), m.to_owned()),
    }
}

fn one_line(e: &toml::de::Error) -> String {
    e.message().trim().replace('\n', " ")
}

/// 1-based line of byte offset `span.start`.
fn line_at(text: &str, span: Option<std::ops::Range<usize>>) -> Option<usize> {
    let start = span?.start.min(text.len());
    // An error at the very end (an unterminated string) is the last line's, not the empty
    // one after the final newline (found by the daemon_config fuzz target).
    let line = text[..start].bytes().filter(|&b| b == b'\n').count() + 1;
    Some(line.min(text.lines().count().max(1)))
}

/// The line where the last named segment of dotted `key` is written (as `seg =` or a table
/// header), searched after the line of its first segment; an index after a segment written as
/// an array of tables (`shape.1`) moves to that `[[shape]]`. A best effort for messages.
fn find_key(text: &str, key: &str) -> Option<usize> {
    let lines: Vec<&str> = text.lines().collect();
    let mut from = 0;
    let mut found = None;
    let mut prev: Option<&str> = None;
    for seg in key.split('.').filter(|s| !s.is_empty()) {
        if let Ok(n) = seg.parse::<usize>() {
            // The n-th `[[…prev]]` after the first; an inline array stays where it is.
            let header = |l: &str| {
                let l = l.trim();
                l.starts_with("[[")
                    && l.trim_start_matches('[')
                        .trim_end_matches(']')
                        .rsplit('.')
                        .next()
                        .map(str::trim)
                        == prev
            };
            let nth = n.checked_sub(1).and_then(|skip| {
                (from + 1..lines.len())
                    .filter(|&i| header(lines[i]))
                    .nth(skip)
            });
            if let Some(i) = nth {
                from = i;
                found = Some(i + 1);
            }
            continue;
        }
        prev = Some(seg);
        let hit = lines.iter().enumerate().skip(from).find(|(_, l)| {
            // A dotted table header (`[[middlebox.elements]]`) names its last segment.
            let t = l.trim();
            if t.starts_with('[')
                && t.trim_start_matches('[')
                    .trim_end_matches(']')
                    .rsplit('.')
                    .next()
                    .map(str::trim)
                    == Some(seg)
            {
                return true;
            }
            let l = l.trim_start();
            let l = l.trim_start_matches('[').trim_start();
            l.starts_with(seg) && l[seg.len()..].trim_start().starts_with(['=', ']', '.'])
                || l.contains(&format!(" {seg} ="))
                || l.contains(&format!("{{{seg} ="))
                || l.contains(&format!("{{ {seg} ="))
        });
        if let Some((i, _)) = hit {
            from = i;
            found = Some(i + 1);
        }
    }
    found
}

/// The body of the `daemon_config` fuzz target, and of the test that runs its corpus.
pub mod fuzzing {
    use super::*;

    /// Arbitrary bytes as a configuration file: it parses (and describes itself for both
    /// roles, as `--check` does) or gives an error naming the file and, if a line, one of its
    /// lines.
    pub fn config_input(data: &[u8]) {
        let Ok(text) = std::str::from_utf8(data) else {
            return;
        };
        match DaemonConfig::parse(text, Path::new("fuzz.toml")) {
            Ok(c) => {
                let _ = crate::describe(&c, Role::Gateway);
                let _ = crate::describe(&c, Role::Terminal);
            }
            Err(e) => {
                assert_eq!(e.file, Path::new("fuzz.toml"));
                if let Some(line) = e.line {
                    assert!(line >= 1 && line <= text.lines().count().max(1), "{e}");
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<DaemonConfig, ConfigError> {
        DaemonConfig::parse(text, Path::new("gw.toml"))
    }

    #[test]
    fn a_split_gateway_parses_with_its_defaults() {
        let c = parse(
            "interfaces = [\"lan0\", \"sat0\"]\n\
             [middlebox]\nkind = \"split_tcp\"\nports = [80]\n\
             [metrics]\nlisten = \"127.0.0.1:9464\"\n",
        )
        .unwrap();
        assert_eq!(c.interfaces, ["lan0", "sat0"]);
        assert!(c.middlebox().has_split_tcp());
        assert_eq!(c.instance(Role::Gateway), "gateway");
        assert_eq!(c.routing.table, 7470);
        assert_eq!(c.log_every_s, 60);
        assert_eq!(c.metrics.listen, Some("127.0.0.1:9464".parse().unwrap()));
        assert_eq!(c.port_of("sat0"), Some(1));
    }

    #[test]
    fn a_terminal_shaper_becomes_a_zero_delay_link() {
        let c = parse(
            "interfaces = [\"lan0\", \"sat0\"]\nmiddlebox = { kind = \"pass_through\" }\n\
             [[shape]]\ninterface = \"lan0\"\nrate = \"2Mbps\"\n\
             queue = { kind = \"ack_filtering\", limit_packets = 50 }\n",
        )
        .unwrap();
        let l = c.shape[0].link_config();
        assert_eq!(l.rate, Bitrate(2_000_000));
        assert_eq!(l.delay, Duration::ZERO);
        assert_eq!(l.queue.limit_packets, Some(50));
    }

    #[test]
    fn a_trailing_star_names_the_one_interface_with_that_prefix() {
        let present: Vec<String> = ["lo", "lan0", "satpep4242", "wwan0", "wwan1"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let ask = |v: &[&str]| {
            resolve_interfaces(
                &v.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
                &present,
            )
        };
        assert_eq!(ask(&["lan0", "satpep*"]).unwrap(), ["lan0", "satpep4242"]);
        assert!(ask(&["wwan*"]).unwrap_err().contains("wwan0, wwan1"));
        assert!(ask(&["eth*"])
            .unwrap_err()
            .contains("no interface matches `eth*`"));
        assert!(ask(&["eth0"])
            .unwrap_err()
            .contains("`eth0` does not exist"));
        assert!(parse("interfaces = [\"*\"]\nmiddlebox = { kind = \"pass_through\" }\n").is_err());
        assert!(
            parse("interfaces = [\"a*b\"]\nmiddlebox = { kind = \"pass_through\" }\n").is_err()
        );
    }

    #[test]
    fn errors_name_the_file_line_and_key() {
        let e = parse("interfaces = [\"a\"]\nmiddlebox = { kind = \"pass_through\" }\nbogus = 3\n")
            .unwrap_err();
        assert_eq!(e.line, Some(3), "{e}");
        assert!(e.to_string().starts_with("gw.toml:3: "), "{e}");
        assert!(e.to_string().contains("bogus"), "{e}");

        let e = parse(
            "interfaces = [\"a\", \"b\"]\n[middlebox]\nkind = \"split_tcp\"\n\
             buffer_total = \"1kB\"\n",
        )
        .unwrap_err();
        assert_eq!(e.key, "middlebox.buffer_total", "{e}");
        assert_eq!(e.line, Some(4), "{e}");

        let e = parse("interfaces = [\"a\", \"a\"]\nmiddlebox = { kind = \"pass_through\" }\n")
            .unwrap_err();
        assert_eq!((e.key.as_str(), e.line), ("interfaces.1", Some(1)), "{e}");

        let e = parse(
            "interfaces = [\"a\"]\nmiddlebox = { kind = \"pass_through\" }\n\
             [[shape]]\ninterface = \"b\"\nrate = \"1Mbps\"\n",
        )
        .unwrap_err();
        assert_eq!(
            (e.key.as_str(), e.line),
            ("shape.0.interface", Some(4)),
            "{e}"
        );

        let e = parse("interfaces = [\"a\"\nmiddlebox = 3\n").unwrap_err();
        assert_eq!(e.key, "(syntax)");
        assert!(e.line.is_some());

        let e = parse(
            "name = \"much-too-long-name\"\ninterfaces = [\"a\"]\n\
             middlebox = { kind = \"pass_through\" }\n",
        )
        .unwrap_err();
        assert_eq!((e.key.as_str(), e.line), ("name", Some(1)), "{e}");

        let e = parse(
            "interfaces = [\"a\", \"b\"]\nmiddlebox = { kind = \"pass_through\" }\n\
             [routing]\ntable = 252\n",
        )
        .unwrap_err();
        assert_eq!(e.key, "routing.table", "{e}");
    }

    #[test]
    fn the_fuzz_corpus_runs_clean() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus/daemon_config");
        let mut n = 0;
        for f in std::fs::read_dir(dir).unwrap().flatten() {
            fuzzing::config_input(&std::fs::read(f.path()).unwrap());
            n += 1;
        }
        assert!(n >= 10, "{n} files");
    }

    #[test]
    fn a_syntax_error_at_the_end_of_the_file_names_its_last_line() {
        let text = "interfaces = [\"a\"]\n[metrics]\nlisten = \"\"\"\"127.0.0.1:9464\"\n";
        let e = parse(text).unwrap_err();
        assert_eq!((e.key.as_str(), e.line), ("(syntax)", Some(3)), "{e}");
    }

    #[test]
    fn log_every_s_beyond_a_day_is_refused_at_its_line() {
        // Issue 36 (7): u64::MAX passed --check and then panicked the daemon (exit 101).
        let text = "interfaces = [\"a\"]\nmiddlebox = { kind = \"pass_through\" }\n\
                    log_every_s = 18446744073709551615\n";
        let e = parse(text).unwrap_err();
        assert_eq!((e.key.as_str(), e.line), ("log_every_s", Some(3)), "{e}");
        let ok = parse(&text.replace("18446744073709551615", "86400")).unwrap();
        assert_eq!(ok.log_every_s, MAX_LOG_EVERY_S);
        assert!(parse(&text.replace("18446744073709551615", "86401")).is_err());
    }

    #[test]
    fn routing_numbers_near_two_to_the_32_are_refused_not_wrapped() {
        // Issue 36 (3): table 4294967295 made port 1's table 0 (`ip route flush table 0`
        // empties every table) and priority 4294967295 made port 1's rule preference 0 (the
        // `local` rule, which the start-up clean-up then deleted).
        let two = "interfaces = [\"a\", \"b\"]\nmiddlebox = { kind = \"pass_through\" }\n";
        for (extra, key, line) in [
            ("[routing]\ntable = 4294967295\n", "routing.table", 4),
            ("[routing]\npriority = 4294967295\n", "routing.priority", 4),
            ("[routing]\npriority = 32765\n", "routing.priority", 4),
        ] {
            let e = parse(&format!("{two}{extra}")).unwrap_err();
            assert_eq!((e.key.as_str(), e.line), (key, Some(line)), "{extra}: {e}");
            assert!(e.to_string().contains("one "), "{e}");
        }
        // The last numbers that fit are accepted, and give what they say.
        let c = parse(&format!(
            "{two}[routing]\ntable = 4294967294\npriority = 32764\n"
        ))
        .unwrap();
        let plan = crate::routing::RoutingPlan::new(&c, "gw");
        assert!(plan
            .install_script()
            .contains("rule add pref 32765 iif b lookup 4294967295\n"));
        // One interface: its single table may be the very last.
        parse(
            "interfaces = [\"a\"]\nmiddlebox = { kind = \"pass_through\" }\n\
             [routing]\ntable = 4294967295\n",
        )
        .unwrap();
    }

    #[test]
    fn a_kernel_split_gateway_parses_without_a_middlebox() {
        let c = parse(
            "interfaces = [\"lan0\", \"sat0\"]\n\
             [split]\nengine = \"kernel\"\nports = [80, 443]\nbuffer = \"2MB\"\n\
             idle_timeout = \"5min\"\nsatellite = \"sat0\"\n\
             congestion_control = { satellite = \"hybla\", terrestrial = \"cubic\" }\n",
        )
        .unwrap();
        let k = c.kernel_split().unwrap();
        assert_eq!(k.ports, [80, 443]);
        assert_eq!(k.buffer, ByteSize(2_000_000));
        assert_eq!(k.idle_timeout, Some(Duration::from_secs(300)));
        assert_eq!(k.listen_port, 7470);
        assert_eq!(k.max_connections, 10_000);
        assert_eq!(k.congestion_control.satellite.as_deref(), Some("hybla"));
        assert_eq!(c.middlebox(), &MiddleboxConfig::PassThrough);

        // `engine = "user"` is the middlebox's split_tcp, and says nothing else.
        let u = parse(
            "interfaces = [\"a\", \"b\"]\nmiddlebox = { kind = \"split_tcp\" }\n\
             [split]\nengine = \"user\"\n",
        )
        .unwrap();
        assert!(u.kernel_split().is_none());
    }

    #[test]
    fn kernel_split_errors_name_the_file_line_and_key() {
        let base = "interfaces = [\"a\", \"b\"]\n[split]\nengine = \"kernel\"\n";
        for (extra, key, line) in [
            ("max_connections = 0\n", "split.max_connections", 4),
            ("buffer = \"1kB\"\n", "split.buffer", 4),
            ("buffer = \"1GB\"\n", "split.buffer", 4),
            ("idle_timeout = \"10ms\"\n", "split.idle_timeout", 4),
            ("ports = [80, 0]\n", "split.ports", 4),
            ("listen_port = 65535\n", "split.listen_port", 4),
            ("satellite = \"c\"\n", "split.satellite", 4),
            (
                "congestion_control = { satellite = \"no such\" }\n",
                "split.congestion_control.satellite",
                4,
            ),
            ("bogus = 1\n", "split.bogus", 4),
        ] {
            let e = parse(&format!("{base}{extra}")).unwrap_err();
            assert_eq!((e.key.as_str(), e.line), (key, Some(line)), "{extra}: {e}");
            assert!(
                e.to_string()
                    .starts_with(&format!("gw.toml:{line}: {key}: ")),
                "{e}"
            );
        }
        let e = parse("interfaces = [\"a\"]\n[split]\nengine = \"turbo\"\n").unwrap_err();
        assert_eq!((e.key.as_str(), e.line), ("split.engine", Some(3)), "{e}");
        // Both engines at once, or neither.
        let e = parse(&format!(
            "middlebox = {{ kind = \"pass_through\" }}\n{base}"
        ))
        .unwrap_err();
        assert_eq!((e.key.as_str(), e.line), ("middlebox", Some(1)), "{e}");
        let e = parse("interfaces = [\"a\"]\n").unwrap_err();
        assert_eq!(e.key, "middlebox", "{e}");
        let e = parse(
            "interfaces = [\"a\"]\nmiddlebox = { kind = \"pass_through\" }\n\
             [split]\nengine = \"user\"\n",
        )
        .unwrap_err();
        assert_eq!((e.key.as_str(), e.line), ("split.engine", Some(4)), "{e}");
        let e = parse(&format!(
            "{base}[[shape]]\ninterface = \"a\"\nrate = \"1Mbps\"\n"
        ))
        .unwrap_err();
        assert_eq!(e.key, "shape", "{e}");
    }

    /// Issue 36 (9): values that were accepted and then did something else than written.
    #[test]
    fn silently_wrong_values_are_refused_at_their_line() {
        let two = "interfaces = [\"a\", \"b\"]\n";
        let pass = "middlebox = { kind = \"pass_through\" }\n";
        // A shaper whose queue holds no packet drops every packet (a scenario link refuses
        // it); the second shaper's line, not the first's.
        let e = parse(&format!(
            "{two}{pass}[[shape]]\ninterface = \"a\"\nrate = \"1Mbps\"\n\
             [[shape]]\ninterface = \"b\"\nrate = \"1Mbps\"\nqueue = {{ limit_packets = 0 }}\n"
        ))
        .unwrap_err();
        assert_eq!(
            (e.key.as_str(), e.line),
            ("shape.1.queue.limit_packets", Some(9)),
            "{e}"
        );
        assert!(e.message.contains("at least 1"), "{e}");
        // Mechanism ports no interface has: 2 interfaces are ports 0 and 1.
        for (mb, key, line) in [
            (
                "middlebox = { kind = \"supercharger\", satellite_port = 99 }\n",
                "middlebox.satellite_port",
                2,
            ),
            (
                "middlebox = { kind = \"spoof\", internet_port = 2 }\n",
                "middlebox.internet_port",
                2,
            ),
            (
                "[middlebox]\nkind = \"chain\"\n[[middlebox.elements]]\nkind = \"pass_through\"\n\
                 [[middlebox.elements]]\nkind = \"dupack_delay\"\nport = 2\n",
                "middlebox.elements.1.port",
                8,
            ),
        ] {
            let e = parse(&format!("{two}{mb}")).unwrap_err();
            assert_eq!((e.key.as_str(), e.line), (key, Some(line)), "{mb}: {e}");
            assert!(e.message.contains("ports 0 to 1"), "{e}");
        }
        // Snoop's default satellite_port (1) on a daemon with one interface: never an ACK.
        let e = parse("interfaces = [\"a\"]\nmiddlebox = { kind = \"snoop\" }\n").unwrap_err();
        assert_eq!(e.key, "middlebox.satellite_port", "{e}");
        parse(&format!(
            "{two}middlebox = {{ kind = \"supercharger\", satellite_port = 1 }}\n"
        ))
        .unwrap();
        // A split relay's halves are checked as a flow's `tcp` table.
        for half in ["tcp_connect", "tcp_accept"] {
            let e = parse(&format!(
                "{two}[middlebox]\nkind = \"split_tcp\"\n{half} = {{ initial_window = 0 }}\n"
            ))
            .unwrap_err();
            assert_eq!(
                (e.key, e.line),
                (format!("middlebox.{half}.initial_window"), Some(4)),
            );
        }
    }

    /// Issue 36 (13): a bad value inside the middlebox was reported at `middlebox`, on the
    /// line of its table header; it is reported at its own key and line.
    #[test]
    fn a_bad_value_inside_the_middlebox_is_located_at_its_own_line() {
        let head =
            "interfaces = [\"a\", \"b\"]\n\n[middlebox]\nkind = \"split_tcp\"\nports = [80]\n";
        for (extra, key, word) in [
            (
                "buffer_per_conn = \"abc\"\n",
                "middlebox.buffer_per_conn",
                "abc",
            ),
            (
                "connect_timeout = \"-3s\"\n",
                "middlebox.connect_timeout",
                "-3s",
            ),
            ("idle_timeout = \"x\"\n", "middlebox.idle_timeout", "x"),
            (
                "handshake = \"sometimes\"\n",
                "middlebox.handshake",
                "sometimes",
            ),
            (
                "tcp_connect = { initial_window = \"x\" }\n",
                "middlebox.tcp_connect.initial_window",
                "u32",
            ),
        ] {
            let e = parse(&format!("{head}{extra}")).unwrap_err();
            assert_eq!((e.key.as_str(), e.line), (key, Some(6)), "{extra}: {e}");
            assert!(e.message.contains(word), "{e}");
        }
        // The same inside a chain's second element.
        let e = parse(
            "interfaces = [\"a\", \"b\"]\n[middlebox]\nkind = \"chain\"\nelements = [\n  \
             { kind = \"pass_through\" },\n  { kind = \"snoop\", initial_rto = \"soon\" },\n]\n",
        )
        .unwrap_err();
        assert_eq!(
            (e.key.as_str(), e.line),
            ("middlebox.elements.1.initial_rto", Some(6)),
            "{e}"
        );
    }

    /// Issue 36 (11): an unkeyed tunnel, compactor or expander trusts an outer source address
    /// anyone on the path can forge; the daemon refuses one unless `insecure = true` says so,
    /// and `--check` says which ends are unauthenticated.
    #[test]
    fn the_simulators_accelerated_pep_is_refused_in_a_daemon() {
        let text = "interfaces = [\"a\", \"b\"]\n\n[middlebox]\nkind = \"accel\"\n\
                    role = \"gateway\"\naddress = \"10.0.0.1\"\nforward = \"20Mbps\"\n\
                    return = \"2Mbps\"\nrtt = \"600ms\"\n";
        let e = parse(text).unwrap_err();
        assert_eq!((e.key.as_str(), e.line), ("middlebox", Some(3)), "{e}");
        assert!(e.message.contains("[split] engine = \"accel\""), "{e}");
    }

    #[test]
    fn unkeyed_tunnels_compactors_and_expanders_are_refused_unless_insecure_says_so() {
        const KEY: &str = "hex:00112233445566778899aabbccddeeff";
        let two = "interfaces = [\"a\", \"b\"]\n";
        let tunnel = |extra: &str| {
            format!(
                "{two}\n[middlebox]\nkind = \"ipip_tunnel\"\nlocal = \"10.0.0.1\"\n\
                 remote = \"10.0.0.2\"\n{extra}"
            )
        };
        let chain = |extra: &str| {
            format!(
                "{two}[middlebox]\nkind = \"chain\"\n[[middlebox.elements]]\nkind = \"snoop\"\n\
                 satellite_port = 0\n[[middlebox.elements]]\nkind = \"ack_expander\"\n\
                 compactors = [\"10.0.0.2\"]\n{extra}"
            )
        };
        let compactor = |extra: &str| {
            format!(
                "{two}middlebox = {{ kind = \"pass_through\" }}\n[[shape]]\ninterface = \"a\"\n\
                 rate = \"1Mbps\"\n\
                 queue = {{ kind = \"ack_compaction\", limit_packets = 10, ack = {{ \
                 tunnel_src = \"10.0.0.2\", tunnel_dst = \"10.0.0.1\"{extra} }} }}\n"
            )
        };
        // Without key: refused at the mechanism's table, naming what to write.
        for (text, key, line, kind) in [
            (tunnel(""), "middlebox", 3, "ipip_tunnel"),
            (compactor(""), "shape.0.queue.ack", 6, "ack_compaction"),
        ] {
            let e = parse(&text).unwrap_err();
            assert_eq!((e.key.as_str(), e.line), (key, Some(line)), "{text}: {e}");
            assert!(
                e.to_string()
                    .starts_with(&format!("gw.toml:{line}: {key}: {kind} without `key`")),
                "{e}"
            );
            assert!(e.message.contains("insecure = true"), "{e}");
        }
        let e = parse(&chain("")).unwrap_err();
        assert_eq!(
            (e.key.as_str(), e.line),
            ("middlebox.elements.1", Some(7)),
            "{e}"
        );
        assert!(
            e.message.contains("up to `max_regenerated` + 1 ACKs"),
            "{e}"
        );
        // `insecure = true` in so many words: accepted, and `--check` says it plainly.
        for (text, end) in [
            (
                tunnel("insecure = true\n"),
                "tunnel middlebox (ipip_tunnel): UNAUTHENTICATED",
            ),
            (
                chain("insecure = true\n"),
                "tunnel middlebox.elements.1 (ack_expander): UNAUTHENTICATED",
            ),
            (
                compactor(", insecure = true"),
                "tunnel shape.0.queue.ack (ack_compaction): UNAUTHENTICATED",
            ),
        ] {
            let c = parse(&text).unwrap_or_else(|e| panic!("{text}: {e}"));
            let d = crate::describe(&c, Role::Gateway);
            assert!(d.contains(end), "{d}");
            assert_eq!(c.tunnel_ends()[0].2, Trust::Insecure);
        }
        // A key: accepted and described as authenticated.
        for text in [
            tunnel(&format!("key = \"{KEY}\"\n")),
            chain(&format!("key = \"{KEY}\"\n")),
            compactor(&format!(", key = \"{KEY}\"")),
        ] {
            let c = parse(&text).unwrap_or_else(|e| panic!("{text}: {e}"));
            assert!(crate::describe(&c, Role::Terminal).contains("): authenticated (key"));
            assert_eq!(c.tunnel_ends()[0].2, Trust::Keyed);
        }
        // Both say opposite things: refused at `insecure`.
        let e = parse(&tunnel(&format!("key = \"{KEY}\"\ninsecure = true\n"))).unwrap_err();
        assert_eq!(
            (e.key.as_str(), e.line),
            ("middlebox.insecure", Some(8)),
            "{e}"
        );
        let e = parse(&compactor(&format!(", key = \"{KEY}\", insecure = true"))).unwrap_err();
        assert_eq!(e.key, "shape.0.queue.ack.insecure", "{e}");
        // Nothing else needs it.
        parse(&format!("{two}middlebox = {{ kind = \"snoop\" }}\n")).unwrap();
    }
}
