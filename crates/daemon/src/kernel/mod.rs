//! The kernel split engine: split TCP where Linux TCP serves both legs, and satpep only moves
//! the bytes between them with splice(2) — for throughput the user-space relay on TUN devices
//! cannot reach (one read and one write per packet there; here the kernel's segmentation
//! offloads, its TCP and zero-copy pipes).
//!
//! ```text
//!  client ─SYN─▶ nft tproxy ─▶ listener 127.0.0.1:listen_port+i (IP_TRANSPARENT)
//!                                 │ accept: local address = the server's
//!                                 ▼
//!                  relay (epoll, splice through a pipe per direction)
//!                                 │ socket bound to the client's address (IP_TRANSPARENT)
//!                                 ▼
//!                               server ─▶ answers to the client's address ─▶ nft `socket
//!                                         transparent` ─▶ fwmark ─▶ local ─▶ that socket
//! ```
//!
//! Transparent both ways: the client's connection is accepted under the server's address, and
//! the server's leg leaves from the client's address and port. Routing set-up is
//! [`crate::routing::RoutingPlan::nft_script`] and `install_script`.
//!
//! **Handshake: fail-open, not `after_listener`.** The kernel answers the client's SYN with
//! its own SYN-ACK before the engine has even started the server leg; a server that refuses
//! (or never answers) then turns into a RST to the client right after its handshake, instead
//! of the server's own RST to its SYN (what the user-space engine's `handshake =
//! "after_listener"` gives). Applications see `ECONNRESET` rather than `ECONNREFUSED`.
//!
//! **Limits.** At most `max_connections` are held; one beyond is accepted and reset at once
//! (counted as refused). Each direction holds at most its pipe (`buffer`), plus what the two
//! sockets' kernel buffers hold (`net.ipv4.tcp_rmem`/`tcp_wmem` bound those).

pub mod relay;

use std::collections::HashSet;
use std::io;
use std::net::{SocketAddr, SocketAddrV4, TcpListener, TcpStream};
use std::os::fd::{AsRawFd, OwnedFd};
use std::time::Instant as WallInstant;

use nix::errno::Errno;
use nix::sys::socket::{
    bind, connect, listen, setsockopt, socket, sockopt, AddressFamily, Backlog, SockFlag,
    SockProtocol, SockType, SockaddrIn,
};
use satpep_emu::sys::{monotonic_ns, Epoll, SignalPipe};
use slab::Slab;
use tracing::{debug, info, warn};

use crate::config::{DaemonConfig, Role, SplitEngineConfig};
use crate::metrics::MetricsServer;
use crate::run::{install, prepare, Prepared, RunOptions, Status};
use crate::DaemonError;
use relay::{Conn, Leg, Moved, Step};

const TOKEN_SIGNAL: u64 = 1 << 40;
const TOKEN_METRICS: u64 = (1 << 40) + 1;
const TOKEN_LISTEN: u64 = 1 << 41;
/// Connections accepted from one listener before the loop looks at the others.
const ACCEPT_BATCH: usize = 64;

/// The engine's counters (exported as `satpep_split_*`).
#[derive(Clone, Copy, Debug, Default, Eq, PartialEq)]
pub struct Stats {
    /// Connections accepted and relayed.
    pub accepted: u64,
    /// Connections reset at once because `max_connections` were held.
    pub refused: u64,
    /// Connections whose server leg could not be opened (refused, unreachable, timed out):
    /// the client got a RST.
    pub connect_failed: u64,
    /// Connections ended by a RST from the client's side (passed on to the server).
    pub reset_by_client: u64,
    /// Connections ended by a RST from the server's side (passed on to the client).
    pub reset_by_server: u64,
    /// Connections reset on both legs after `idle_timeout` without a byte.
    pub idle_reaped: u64,
    /// Connections that ended with FINs both ways.
    pub closed: u64,
    /// Bytes relayed client to server.
    pub bytes_up: u64,
    /// Bytes relayed server to client.
    pub bytes_down: u64,
}

/// Run the kernel split engine until SIGINT, SIGTERM or SIGHUP (which stops it too).
pub fn run(
    config: &DaemonConfig,
    role: Role,
    opts: &RunOptions,
    ready: impl FnOnce(&Status),
) -> Result<(), DaemonError> {
    let Some(k) = config.kernel_split() else {
        return Err(DaemonError::Setup("no [split] engine = \"kernel\"".into()));
    };
    let Prepared {
        name,
        interfaces,
        plan,
        file,
    } = prepare(config, role, opts)?;
    let signals = SignalPipe::install().map_err(DaemonError::Io)?;
    raise_fd_limit(k.max_connections);

    // Listeners before rules: a SYN diverted before its listener exists would be lost.
    let sat_port = k
        .satellite
        .as_ref()
        .and_then(|sat| config.port_of(sat))
        .unwrap_or(if interfaces.len() > 1 { 1 } else { 0 });
    let cc = &k.congestion_control;
    for algo in [&cc.satellite, &cc.terrestrial].into_iter().flatten() {
        tcp_socket()
            .and_then(|fd| Ok(setsockopt(&fd, sockopt::TcpCongestion, &algo.into())?))
            .map_err(|e| {
                DaemonError::Setup(format!(
                    "split.congestion_control: `{algo}`: {e} (see /proc/sys/net/ipv4/tcp_available_congestion_control)"
                ))
            })?;
    }
    let mut listeners = Vec::new();
    for i in 0..interfaces.len() {
        let port = u32::from(k.listen_port) + i as u32;
        let port = u16::try_from(port)
            .map_err(|_| DaemonError::Setup(format!("listen port {port} is above 65535")))?;
        // Connections arriving from the satellite: the satellite algorithm on the client leg
        // (accepted sockets inherit the listener's), the terrestrial one on the server leg;
        // the other way round for connections arriving from the terrestrial side.
        let (accept_cc, connect_cc) = if i == sat_port {
            (&cc.satellite, &cc.terrestrial)
        } else {
            (&cc.terrestrial, &cc.satellite)
        };
        let l = transparent_listener(port, accept_cc.as_deref()).map_err(|e| {
            DaemonError::Setup(format!(
                "cannot listen on 127.0.0.1:{port} with IP_TRANSPARENT: {e}"
            ))
        })?;
        listeners.push(Listener {
            sock: l,
            connect_cc: connect_cc.clone(),
        });
    }

    let mut guard = install(&plan, &file, &name)?;

    let mut metrics = match config.metrics.listen {
        Some(addr) => Some(
            MetricsServer::bind(addr)
                .map_err(|e| DaemonError::Setup(format!("metrics.listen {addr}: {e}")))?,
        ),
        None => None,
    };
    let mut epoll = Epoll::new().map_err(DaemonError::Io)?;
    epoll
        .add(signals.raw_fd(), TOKEN_SIGNAL)
        .map_err(DaemonError::Io)?;
    if let Some(m) = &metrics {
        epoll
            .add(m.raw_fd(), TOKEN_METRICS)
            .map_err(DaemonError::Io)?;
    }
    for (i, l) in listeners.iter().enumerate() {
        epoll
            .add(l.sock.as_raw_fd(), TOKEN_LISTEN + i as u64)
            .map_err(DaemonError::Io)?;
    }
    info!(
        instance = %name,
        role = role.name(),
        engine = "kernel",
        interfaces = ?interfaces,
        ports = ?k.ports,
        nft_table = %plan.nft_table(),
        "in the forwarding path"
    );
    ready(&Status {
        metrics: metrics.as_ref().and_then(|m| m.local_addr().ok()),
    });

    let started = WallInstant::now();
    let mut engine = Engine {
        cfg: k.clone(),
        conns: Slab::new(),
        stats: Stats::default(),
    };
    let mut tokens: Vec<u64> = Vec::with_capacity(64);
    let mut touched: HashSet<usize> = HashSet::new();
    let log_every = std::time::Duration::from_secs(config.log_every_s);
    let mut next_log = started + log_every;
    let mut next_sweep = monotonic_ns() + SWEEP_NS;
    loop {
        tokens.clear();
        let wait_ms = if metrics.as_ref().is_some_and(MetricsServer::pending) {
            5
        } else {
            1000
        };
        epoll
            .wait(wait_ms, |t| tokens.push(t))
            .map_err(DaemonError::Io)?;
        let now = monotonic_ns();
        let mut stop = false;
        touched.clear();
        for &t in &tokens {
            match t {
                TOKEN_SIGNAL => {
                    let caught = signals.drain();
                    stop |= caught.interrupt || caught.terminate;
                }
                TOKEN_METRICS => {}
                t if t >= TOKEN_LISTEN => {
                    if let Some(l) = listeners.get((t - TOKEN_LISTEN) as usize) {
                        engine.accept(l, &epoll, now);
                    }
                }
                // Both legs' edges of one connection in one batch: pump it once.
                t => {
                    if touched.insert((t >> 1) as usize) {
                        engine.pump((t >> 1) as usize, now);
                    }
                }
            }
        }
        if now >= next_sweep {
            engine.reap_idle(now);
            next_sweep = now + SWEEP_NS;
        }
        if let Some(m) = metrics.as_mut() {
            let up = started.elapsed().as_secs_f64();
            m.serve(|| render(&name, &engine, up));
        }
        if config.log_every_s > 0 && WallInstant::now() >= next_log {
            next_log += log_every;
            let s = engine.stats;
            info!(
                instance = %name,
                connections = engine.conns.len(),
                accepted = s.accepted,
                refused = s.refused,
                connect_failed = s.connect_failed,
                bytes_up = s.bytes_up,
                bytes_down = s.bytes_down,
                "counters"
            );
        }
        if stop {
            break;
        }
    }
    info!(
        instance = %name,
        connections = engine.conns.len(),
        "stopping: resetting the connections held, removing the nftables table and rules"
    );
    for c in engine.conns.drain() {
        c.reset();
    }
    drop(listeners);
    guard.run()?;
    Ok(())
}

/// How often idle connections are looked for.
const SWEEP_NS: u64 = 1_000_000_000;

/// A listener and the algorithm of the server legs it leads to.
struct Listener {
    sock: TcpListener,
    connect_cc: Option<String>,
}

/// The connections and counters.
struct Engine {
    cfg: SplitEngineConfig,
    conns: Slab<Conn>,
    stats: Stats,
}

impl Engine {
    /// Accept what waits on `l`: relay it, or refuse it beyond the limit.
    fn accept(&mut self, l: &Listener, epoll: &Epoll, now: u64) {
        for _ in 0..ACCEPT_BATCH {
            let (client, peer) = match l.sock.accept() {
                Ok(a) => a,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) => {
                    // EMFILE and the like: the connection stays in the backlog for later.
                    warn!("accept: {e}");
                    return;
                }
            };
            // The local address of a diverted connection is the server's; a connection made
            // to the listener itself (loopback) has nowhere to go.
            let server = match (peer, client.local_addr()) {
                (SocketAddr::V4(p), Ok(SocketAddr::V4(s))) if !s.ip().is_loopback() => (p, s),
                _ => {
                    relay::abort(&client);
                    self.stats.refused += 1;
                    continue;
                }
            };
            let (peer, server) = server;
            if self.conns.len() >= self.cfg.max_connections as usize {
                relay::abort(&client);
                self.stats.refused += 1;
                debug!(%peer, %server, "refused: max_connections held");
                continue;
            }
            let leg = match connect_from(peer, server, l.connect_cc.as_deref()) {
                Ok(s) => s,
                Err(e) => {
                    debug!(%peer, %server, "server leg: {e}");
                    relay::abort(&client);
                    self.stats.connect_failed += 1;
                    continue;
                }
            };
            let setup = client
                .set_nonblocking(true)
                .and_then(|()| client.set_nodelay(true));
            let conn = setup.and_then(|()| {
                Conn::new(client, leg, false, self.cfg.buffer.bytes() as usize, now)
            });
            let conn = match conn {
                Ok(c) => c,
                Err(e) => {
                    // Dropped sockets close; no pipe: out of descriptors or pipe memory.
                    warn!(%peer, %server, "cannot relay: {e}");
                    self.stats.refused += 1;
                    continue;
                }
            };
            let key = self.conns.insert(conn);
            let c = &self.conns[key];
            let registered = epoll
                .add_edge(c.client.as_raw_fd(), (key as u64) << 1)
                .and_then(|()| epoll.add_edge(c.server.as_raw_fd(), ((key as u64) << 1) | 1));
            if let Err(e) = registered {
                warn!("epoll: {e}");
                self.conns.remove(key).reset();
                self.stats.refused += 1;
                continue;
            }
            self.stats.accepted += 1;
            self.pump(key, now);
        }
    }

    /// Move connection `key`'s bytes and act on what it reports.
    fn pump(&mut self, key: usize, now: u64) {
        let Some(c) = self.conns.get_mut(key) else {
            return;
        };
        let mut moved = Moved::default();
        let step = c.pump(now, &mut moved);
        self.stats.bytes_up += moved.up;
        self.stats.bytes_down += moved.down;
        match step {
            Step::Open => {}
            Step::Closed => {
                self.conns.remove(key).finish();
                self.stats.closed += 1;
            }
            Step::Reset(leg) => {
                self.conns.remove(key).reset();
                match leg {
                    Leg::Client => self.stats.reset_by_client += 1,
                    Leg::Server => self.stats.reset_by_server += 1,
                }
            }
            Step::ConnectFailed => {
                self.conns.remove(key).reset();
                self.stats.connect_failed += 1;
            }
        }
    }

    /// Reset the connections that moved nothing for `idle_timeout`.
    fn reap_idle(&mut self, now: u64) {
        let Some(idle) = self.cfg.idle_timeout else {
            return;
        };
        let idle = idle.as_nanos();
        let stale: Vec<usize> = self
            .conns
            .iter()
            .filter(|(_, c)| now.saturating_sub(c.last_active_ns) >= idle)
            .map(|(k, _)| k)
            .collect();
        for k in stale {
            self.conns.remove(k).reset();
            self.stats.idle_reaped += 1;
        }
    }
}

/// A listener on 127.0.0.1:`port` that accepts connections TPROXY diverts to it, with
/// congestion control `cc` for the connections it accepts.
pub(crate) fn transparent_listener(port: u16, cc: Option<&str>) -> io::Result<TcpListener> {
    let fd = tcp_socket()?;
    setsockopt(&fd, sockopt::IpTransparent, &true)?;
    setsockopt(&fd, sockopt::ReuseAddr, &true)?;
    // Accepted sockets inherit both.
    setsockopt(&fd, sockopt::TcpNoDelay, &true)?;
    if let Some(cc) = cc {
        setsockopt(&fd, sockopt::TcpCongestion, &cc.into())?;
    }
    let addr = SockaddrIn::from(SocketAddrV4::new([127, 0, 0, 1].into(), port));
    bind(fd.as_raw_fd(), &addr)?;
    listen(&fd, Backlog::new(4096).unwrap_or(Backlog::MAXCONN))?;
    Ok(TcpListener::from(fd))
}

/// The server leg: a socket bound to the client's address and port (IP_TRANSPARENT lets it
/// use an address that is not this host's), `TCP_NODELAY`, its congestion control, and a
/// connect in progress.
fn connect_from(
    client: SocketAddrV4,
    server: SocketAddrV4,
    cc: Option<&str>,
) -> io::Result<TcpStream> {
    let fd = tcp_socket()?;
    setsockopt(&fd, sockopt::IpTransparent, &true)?;
    // A previous connection of the same four-tuple may linger in TIME-WAIT here.
    setsockopt(&fd, sockopt::ReuseAddr, &true)?;
    setsockopt(&fd, sockopt::TcpNoDelay, &true)?;
    if let Some(cc) = cc {
        setsockopt(&fd, sockopt::TcpCongestion, &cc.into())?;
    }
    bind(fd.as_raw_fd(), &SockaddrIn::from(client))?;
    match connect(fd.as_raw_fd(), &SockaddrIn::from(server)) {
        Ok(()) | Err(Errno::EINPROGRESS) => Ok(TcpStream::from(fd)),
        Err(e) => Err(e.into()),
    }
}

fn tcp_socket() -> io::Result<OwnedFd> {
    Ok(socket(
        AddressFamily::Inet,
        SockType::Stream,
        SockFlag::SOCK_NONBLOCK | SockFlag::SOCK_CLOEXEC,
        SockProtocol::Tcp,
    )?)
}

/// Six descriptors per connection (two sockets, two pipes): raise the soft limit to the hard
/// one, and say so when even that is short of `max_connections`.
pub(crate) fn raise_fd_limit(max_connections: u32) {
    use nix::sys::resource::{getrlimit, setrlimit, Resource};
    let need = u64::from(max_connections) * 6 + 64;
    if let Ok((soft, hard)) = getrlimit(Resource::RLIMIT_NOFILE) {
        if soft < need {
            let _ = setrlimit(Resource::RLIMIT_NOFILE, need.min(hard), hard);
        }
        if hard < need {
            warn!(
                "RLIMIT_NOFILE {hard} is below the {need} descriptors max_connections = {max_connections} needs (LimitNOFILE= in the unit)"
            );
        }
    }
}

/// The metrics page of the kernel engine.
fn render(instance: &str, e: &Engine, uptime_s: f64) -> String {
    use std::fmt::Write as _;
    let inst = format!("instance_name=\"{}\"", crate::metrics::escape(instance));
    let s = &e.stats;
    let mut p = String::new();
    let family = |p: &mut String, name: &str, kind: &str, help: &str| {
        let _ = writeln!(p, "# HELP {name} {help}\n# TYPE {name} {kind}");
    };
    family(
        &mut p,
        "satpep_uptime_seconds",
        "gauge",
        "Seconds since the daemon started.",
    );
    let _ = writeln!(p, "satpep_uptime_seconds{{{inst}}} {uptime_s:.3}");
    family(
        &mut p,
        "satpep_split_connections",
        "gauge",
        "Connections the kernel split engine holds now.",
    );
    let _ = writeln!(p, "satpep_split_connections{{{inst}}} {}", e.conns.len());
    family(
        &mut p,
        "satpep_split_buffer_bytes",
        "gauge",
        "Bytes in the relay's pipes now.",
    );
    let queued: usize = e.conns.iter().map(|(_, c)| c.queued()).sum();
    let _ = writeln!(p, "satpep_split_buffer_bytes{{{inst}}} {queued}");
    family(
        &mut p,
        "satpep_split_connections_total",
        "counter",
        "Connections by how they began or ended: accepted, refused (max_connections), \
         connect_failed, reset_by_client, reset_by_server, idle_reaped, closed (FIN both ways).",
    );
    for (event, v) in [
        ("accepted", s.accepted),
        ("refused", s.refused),
        ("connect_failed", s.connect_failed),
        ("reset_by_client", s.reset_by_client),
        ("reset_by_server", s.reset_by_server),
        ("idle_reaped", s.idle_reaped),
        ("closed", s.closed),
    ] {
        let _ = writeln!(
            p,
            "satpep_split_connections_total{{{inst},event=\"{event}\"}} {v}"
        );
    }
    family(
        &mut p,
        "satpep_split_bytes_total",
        "counter",
        "Bytes relayed, by direction.",
    );
    let _ = writeln!(
        p,
        "satpep_split_bytes_total{{{inst},direction=\"to_server\"}} {}",
        s.bytes_up
    );
    let _ = writeln!(
        p,
        "satpep_split_bytes_total{{{inst},direction=\"to_client\"}} {}",
        s.bytes_down
    );
    p
}
