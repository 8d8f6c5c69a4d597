//! The accelerated PEP: terminal and gateway joined by one QUIC connection per terminal.
//!
//! ```text
//!  client ─SYN─▶ terminal: nft tproxy ─▶ listener (IP_TRANSPARENT), answered on the LAN
//!                   │ one QUIC stream per connection: header (client, server), then bytes
//!                   ▼
//!   ═══ satellite: one long-lived QUIC connection, TLS 1.3 with pinned certificates,
//!       our satellite congestion control (rate or probe; proto::accel::cc) ═══
//!                   │
//!                   ▼
//!  gateway: stream ─▶ allowed? ─▶ socket bound to the client's address (IP_TRANSPARENT)
//!                   ─▶ server; its answers come back by nft `socket transparent` + fwmark
//! ```
//!
//! **Set-up in one satellite round trip.** The terminal's kernel answers the client's SYN on
//! the LAN; the client's first bytes leave at once on a new stream of the connection that is
//! already up (no handshake, no slow start: the rate controller's window is the whole
//! bandwidth-delay product from the first byte). The gateway connects to the server when the
//! stream's header arrives, so the first response byte is one satellite round trip (plus the
//! server's own) after the request.
//!
//! **Semantics: fail-open handshake, like the kernel engine.** The client's handshake
//! completes before the server is asked; a server that refuses, is not allowed, or does not
//! answer within `connect_timeout` resets the stream with a code (`proto::accel::header::Reset`)
//! and the terminal resets the client's connection: the client sees `ECONNRESET` after its
//! handshake rather than `ECONNREFUSED`. A RST on either side resets the stream and the other
//! side's connection; a FIN ends the stream's direction and half-closes the other side.
//!
//! **Memory** is bounded by QUIC flow control (per stream and per connection windows sized
//! from the bandwidth-delay product) and by `max_streams` per terminal; when a window is full
//! the relay stops reading from TCP and the sender's own window closes (backpressure).
//!
//! The driver is quinn's tokio runtime around quinn-proto; the controllers, the stream header,
//! the QUIC settings and the TLS verification are sans-IO in `satpep_proto::accel`, where
//! `pep.rs` drives the same connection as a simulator and emulator middlebox.

pub mod tls;

use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use nix::sys::socket::{setsockopt, sockopt};
use quinn::{Connection, RecvStream, SendStream, TransportConfig, VarInt};
use satpep_proto::accel::header::{Reset, StreamHeader, LEN};
use satpep_proto::accel::transport;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::watch;
use tracing::{debug, info, warn};

use crate::config::{AccelConfig, DaemonConfig, Role};
use crate::kernel::{raise_fd_limit, transparent_listener};
use crate::metrics::MetricsServer;
use crate::run::{install, prepare, Prepared, RunOptions, Status};
use crate::DaemonError;

pub use crate::egress::parse_prefix;

/// The engine's counters (exported as `satpep_accel_*`).
#[derive(Debug, Default)]
pub struct Stats {
    /// TCP connections carried (terminal: accepted; gateway: streams whose server answered).
    pub connections: AtomicU64,
    /// Connections open now.
    pub open: AtomicU64,
    /// Connections ended by a reset, per [`Reset`] code (index = code).
    pub resets: [AtomicU64; 8],
    /// Bytes client to server.
    pub bytes_up: AtomicU64,
    /// Bytes server to client.
    pub bytes_down: AtomicU64,
    /// Satellite connections established (terminal: to the gateway; gateway: from terminals).
    pub quic_connections: AtomicU64,
    /// Handshakes refused or failed (an unknown terminal, a wrong gateway, no answer).
    pub quic_failures: AtomicU64,
    /// Terminal: connections reset because no satellite connection was up in time.
    pub no_tunnel: AtomicU64,
}

/// Run the accelerated PEP until SIGINT or SIGTERM.
pub fn run(
    config: &DaemonConfig,
    role: Role,
    opts: &RunOptions,
    ready: impl FnOnce(&Status),
) -> Result<(), DaemonError> {
    let (Some(k), Some(a)) = (config.kernel_split(), config.accel()) else {
        return Err(DaemonError::Setup("no [split] engine = \"accel\"".into()));
    };
    let pins: Vec<[u8; 32]> = a
        .peers
        .iter()
        .filter_map(|p| tls::parse_fingerprint(p))
        .collect();
    let id = tls::load(&a.certificate, &a.key).map_err(DaemonError::Setup)?;
    let fingerprint = id.fingerprint();
    let allow: Vec<(u32, u8)> = a.allow.iter().filter_map(|p| parse_prefix(p)).collect();
    match role {
        Role::Terminal if a.gateway.is_none() => {
            return Err(DaemonError::Setup(
                "split.accel.gateway: a terminal needs the gateway's address".into(),
            ))
        }
        Role::Gateway if allow.is_empty() => {
            return Err(DaemonError::Setup(
                "split.accel.allow: list the destinations the gateway may connect to (\"0.0.0.0/0\": anywhere)".into(),
            ))
        }
        _ => {}
    }
    let Prepared {
        name,
        interfaces,
        mut plan,
        file,
    } = prepare(config, role, opts)?;
    plan.intercept = role == Role::Terminal;
    raise_fd_limit(k.max_connections.max(a.max_streams));
    // Listeners before rules: a SYN diverted before its listener exists would be lost.
    let mut listeners = Vec::new();
    if role == Role::Terminal {
        for i in 0..interfaces.len() {
            let port = u32::from(k.listen_port) + i as u32;
            let port = u16::try_from(port)
                .map_err(|_| DaemonError::Setup(format!("listen port {port} is above 65535")))?;
            let l = transparent_listener(port, None).map_err(|e| {
                DaemonError::Setup(format!(
                    "cannot listen on 127.0.0.1:{port} with IP_TRANSPARENT: {e}"
                ))
            })?;
            l.set_nonblocking(true).map_err(DaemonError::Io)?;
            listeners.push(l);
        }
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(DaemonError::Io)?;
    let mut guard = install(&plan, &file, &name)?;
    let stats = Arc::new(Stats::default());
    let metrics = match config.metrics.listen {
        Some(addr) => Some(
            MetricsServer::bind(addr)
                .map_err(|e| DaemonError::Setup(format!("metrics.listen {addr}: {e}")))?,
        ),
        None => None,
    };
    info!(
        instance = %name,
        role = role.name(),
        engine = "accel",
        interfaces = ?interfaces,
        ports = ?k.ports,
        certificate = %fingerprint,
        congestion = ?a.congestion,
        "in the forwarding path"
    );
    ready(&Status {
        metrics: metrics.as_ref().and_then(|m| m.local_addr().ok()),
    });
    let result = rt.block_on(async {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
        let mut int = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())?;
        let mut hup = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup())?;
        if let Some(m) = metrics {
            tokio::spawn(serve_metrics(m, name.clone(), role, stats.clone()));
        }
        let live = Live::default();
        let engine = async {
            match role {
                Role::Terminal => {
                    let client = tls::client_config(id, &pins).map_err(DaemonError::Setup)?;
                    terminal(a, client, listeners, stats.clone(), &name, &live).await
                }
                Role::Gateway => {
                    let server = tls::server_config(id, &pins).map_err(DaemonError::Setup)?;
                    gateway(a, server, allow, stats.clone(), &name, &live).await
                }
            }
        };
        let r = tokio::select! {
            r = engine => r,
            _ = term.recv() => Ok(()),
            _ = int.recv() => Ok(()),
            _ = hup.recv() => Ok(()),
        };
        // Tell the other end: its streams are reset at once (a terminal reconnects), instead
        // of waiting out the idle timeout.
        let endpoint = live.lock().ok().and_then(|mut e| e.take());
        if let Some(e) = endpoint {
            e.close(VarInt::from_u32(0), b"stopping");
            let _ = tokio::time::timeout(Duration::from_millis(300), e.wait_idle()).await;
        }
        r
    });
    info!(instance = %name, "stopping: removing the nftables table and rules");
    rt.shutdown_timeout(Duration::from_millis(200));
    guard.run()?;
    result
}

/// The endpoint in use, for the shutdown to close.
type Live = std::sync::Mutex<Option<quinn::Endpoint>>;

/// The QUIC settings of this end (`satpep_proto::accel::transport`, the simulator's too).
fn transport(a: &AccelConfig, role: Role) -> TransportConfig {
    let path = transport::Path {
        forward_bps: a.forward.0,
        return_bps: a.return_rate.0,
        rtt: Duration::from_nanos(a.rtt.as_nanos()),
        mtu: a.mtu,
        max_streams: a.max_streams,
        congestion: a.congestion,
    };
    let end = match role {
        Role::Gateway => transport::End::Gateway,
        Role::Terminal => transport::End::Terminal,
    };
    transport::transport_config(&path, end)
}

/// The endpoint's settings, with keys derived from this end's private key (see
/// `satpep_proto::accel::transport::endpoint_config`).
fn endpoint_config(a: &AccelConfig) -> quinn::EndpointConfig {
    transport::endpoint_config(&std::fs::read(&a.key).unwrap_or_default())
}

/// A UDP socket with buffers for a long fat path.
fn udp_socket(addr: SocketAddr) -> std::io::Result<std::net::UdpSocket> {
    let s = std::net::UdpSocket::bind(addr)?;
    let _ = setsockopt(&s, sockopt::RcvBuf, &(8 << 20));
    let _ = setsockopt(&s, sockopt::SndBuf, &(8 << 20));
    Ok(s)
}

/// The terminal: keep one connection to the gateway up, and carry every intercepted TCP
/// connection on a stream of it.
async fn terminal(
    a: &AccelConfig,
    client: quinn::crypto::rustls::QuicClientConfig,
    listeners: Vec<std::net::TcpListener>,
    stats: Arc<Stats>,
    name: &str,
    live: &Live,
) -> Result<(), DaemonError> {
    let gw = a
        .gateway
        .ok_or_else(|| DaemonError::Setup("no gateway".into()))?;
    let socket = udp_socket(SocketAddr::from(([0, 0, 0, 0], 0))).map_err(DaemonError::Io)?;
    let mut endpoint = quinn::Endpoint::new(
        endpoint_config(a),
        None,
        socket,
        Arc::new(quinn::TokioRuntime),
    )
    .map_err(DaemonError::Io)?;
    let mut cc = quinn::ClientConfig::new(Arc::new(client));
    cc.transport_config(Arc::new(transport(a, Role::Terminal)));
    endpoint.set_default_client_config(cc);
    if let Ok(mut l) = live.lock() {
        *l = Some(endpoint.clone());
    }
    let (tx, rx) = watch::channel::<Option<Connection>>(None);
    // The satellite connection: up at start, and again whenever it drops (backing off to 5 s).
    {
        let stats = stats.clone();
        let name = name.to_owned();
        tokio::spawn(async move {
            let mut backoff = Duration::from_millis(100);
            loop {
                let attempt = match endpoint.connect(gw, tls::SERVER_NAME) {
                    Ok(c) => c.await.map_err(|e| e.to_string()),
                    Err(e) => Err(e.to_string()),
                };
                match attempt {
                    Ok(conn) => {
                        stats.quic_connections.fetch_add(1, Ordering::Relaxed);
                        info!(instance = %name, gateway = %gw, rtt_ms = conn.rtt().as_millis() as u64, "satellite connection up");
                        backoff = Duration::from_millis(100);
                        let _ = tx.send(Some(conn.clone()));
                        let why = conn.closed().await;
                        let _ = tx.send(None);
                        warn!(instance = %name, "satellite connection lost: {why}");
                    }
                    Err(e) => {
                        stats.quic_failures.fetch_add(1, Ordering::Relaxed);
                        warn!(instance = %name, gateway = %gw, "cannot reach the gateway: {e}");
                        tokio::time::sleep(backoff).await;
                        backoff = (backoff * 2).min(Duration::from_secs(5));
                    }
                }
            }
        });
    }
    let wait_for_tunnel = Duration::from_nanos(a.connect_timeout.as_nanos());
    let mut accepts = tokio::task::JoinSet::new();
    for l in listeners {
        let l = tokio::net::TcpListener::from_std(l).map_err(DaemonError::Io)?;
        let rx = rx.clone();
        let stats = stats.clone();
        accepts.spawn(async move {
            loop {
                let Ok((tcp, _)) = l.accept().await else {
                    continue;
                };
                let rx = rx.clone();
                let stats = stats.clone();
                tokio::spawn(async move {
                    stats.connections.fetch_add(1, Ordering::Relaxed);
                    stats.open.fetch_add(1, Ordering::Relaxed);
                    carry(tcp, rx, wait_for_tunnel, &stats).await;
                    stats.open.fetch_sub(1, Ordering::Relaxed);
                });
            }
        });
    }
    while accepts.join_next().await.is_some() {}
    Ok(())
}

/// One intercepted connection, on a new stream of the satellite connection.
async fn carry(
    tcp: TcpStream,
    mut rx: watch::Receiver<Option<Connection>>,
    wait: Duration,
    stats: &Stats,
) {
    let _ = tcp.set_nodelay(true);
    let (Ok(SocketAddr::V4(client)), Ok(SocketAddr::V4(server))) =
        (tcp.peer_addr(), tcp.local_addr())
    else {
        return reset_tcp(tcp);
    };
    let conn = tokio::time::timeout(wait, rx.wait_for(Option::is_some))
        .await
        .ok()
        .and_then(|r| r.ok().and_then(|c| c.clone()));
    let Some(conn) = conn else {
        stats.no_tunnel.fetch_add(1, Ordering::Relaxed);
        return reset_tcp(tcp);
    };
    let Ok((mut send, recv)) = conn.open_bi().await else {
        stats.no_tunnel.fetch_add(1, Ordering::Relaxed);
        return reset_tcp(tcp);
    };
    let header = StreamHeader { client, server }.encode();
    if send.write_all(&header).await.is_err() {
        return reset_tcp(tcp);
    }
    relay(tcp, send, recv, stats, true).await;
}

/// The gateway: accept authenticated terminals, and for each of their streams connect to the
/// server from the client's address.
async fn gateway(
    a: &AccelConfig,
    server: quinn::crypto::rustls::QuicServerConfig,
    allow: Vec<(u32, u8)>,
    stats: Arc<Stats>,
    name: &str,
    live: &Live,
) -> Result<(), DaemonError> {
    let listen = a
        .listen
        .unwrap_or_else(|| SocketAddr::from(([0, 0, 0, 0], 4433)));
    let mut sc = quinn::ServerConfig::with_crypto(Arc::new(server));
    sc.transport_config(Arc::new(transport(a, Role::Gateway)));
    let socket = udp_socket(listen)
        .map_err(|e| DaemonError::Setup(format!("split.accel.listen {listen}: {e}")))?;
    let endpoint = quinn::Endpoint::new(
        endpoint_config(a),
        Some(sc),
        socket,
        Arc::new(quinn::TokioRuntime),
    )
    .map_err(DaemonError::Io)?;
    if let Ok(mut l) = live.lock() {
        *l = Some(endpoint.clone());
    }
    let allow = Arc::new(allow);
    let timeout = Duration::from_nanos(a.connect_timeout.as_nanos());
    while let Some(incoming) = endpoint.accept().await {
        let stats = stats.clone();
        let allow = allow.clone();
        let name = name.to_owned();
        tokio::spawn(async move {
            let remote = incoming.remote_address();
            let conn = match incoming.await {
                Ok(c) => c,
                Err(e) => {
                    stats.quic_failures.fetch_add(1, Ordering::Relaxed);
                    warn!(instance = %name, %remote, "terminal refused: {e}");
                    return;
                }
            };
            stats.quic_connections.fetch_add(1, Ordering::Relaxed);
            let who = conn
                .peer_identity()
                .and_then(|i| {
                    i.downcast::<Vec<rustls::pki_types::CertificateDer<'static>>>()
                        .ok()
                })
                .and_then(|c| c.first().map(|c| tls::fingerprint(c)))
                .unwrap_or_default();
            info!(instance = %name, %remote, terminal = %who, "terminal connected");
            // The satellite connection's path, once a second (`--verbose`): what a controller
            // that does not fill the link is doing.
            let watched = conn.clone();
            let (wname, wremote) = (name.clone(), remote);
            tokio::spawn(async move {
                let mut tick = tokio::time::interval(Duration::from_secs(1));
                while watched.close_reason().is_none() {
                    tick.tick().await;
                    let p = watched.stats().path;
                    let probe = watched
                        .congestion_state()
                        .into_any()
                        .downcast::<satpep_proto::accel::cc::SatProbe>()
                        .map(|c| format!("{:?} at {} B/s", c.state(), c.bandwidth()))
                        .unwrap_or_default();
                    debug!(instance = %wname, remote = %wremote, rtt_ms = p.rtt.as_secs_f64() * 1e3,
                        cwnd = p.cwnd, sent = p.sent_packets, lost = p.lost_packets,
                        congestion_events = p.congestion_events, probe, "satellite path");
                }
            });
            loop {
                let Ok((send, recv)) = conn.accept_bi().await else {
                    break;
                };
                let stats = stats.clone();
                let allow = allow.clone();
                tokio::spawn(async move {
                    stats.open.fetch_add(1, Ordering::Relaxed);
                    open(send, recv, &allow, timeout, &stats).await;
                    stats.open.fetch_sub(1, Ordering::Relaxed);
                });
            }
            info!(instance = %name, %remote, terminal = %who, "terminal gone: {}", conn.close_reason().map(|r| r.to_string()).unwrap_or_default());
        });
    }
    Ok(())
}

/// A stream from a terminal: read its header, connect, relay; or reset it with the reason.
async fn open(
    mut send: SendStream,
    mut recv: RecvStream,
    allow: &[(u32, u8)],
    timeout: Duration,
    stats: &Stats,
) {
    let mut buf = [0u8; LEN];
    let refuse = |send: &mut SendStream, recv: &mut RecvStream, why: Reset| {
        stats.resets[why as usize].fetch_add(1, Ordering::Relaxed);
        let _ = send.reset(VarInt::from_u32(why as u32));
        let _ = recv.stop(VarInt::from_u32(why as u32));
    };
    let header = match recv.read_exact(&mut buf).await {
        Ok(()) => StreamHeader::parse(&buf),
        Err(_) => return refuse(&mut send, &mut recv, Reset::BadHeader),
    };
    let Ok(h) = header else {
        return refuse(&mut send, &mut recv, Reset::BadHeader);
    };
    if !allowed(allow, *h.server.ip()) {
        return refuse(&mut send, &mut recv, Reset::NotAllowed);
    }
    let tcp = match tokio::time::timeout(timeout, connect_from(h.client, h.server)).await {
        Ok(Ok(t)) => t,
        Ok(Err(e)) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
            return refuse(&mut send, &mut recv, Reset::Refused)
        }
        Ok(Err(_)) | Err(_) => return refuse(&mut send, &mut recv, Reset::TimedOut),
    };
    stats.connections.fetch_add(1, Ordering::Relaxed);
    relay(tcp, send, recv, stats, false).await;
}

/// Whether `ip` lies in one of the allowed prefixes.
fn allowed(allow: &[(u32, u8)], ip: Ipv4Addr) -> bool {
    let ip = u32::from(ip);
    allow
        .iter()
        .any(|&(net, len)| len == 0 || (ip ^ net) >> (32 - u32::from(len)) == 0)
}

/// The server connection, from the client's own address and port.
async fn connect_from(client: SocketAddrV4, server: SocketAddrV4) -> std::io::Result<TcpStream> {
    let s = tokio::net::TcpSocket::new_v4()?;
    setsockopt(&s, sockopt::IpTransparent, &true)?;
    s.set_reuseaddr(true)?;
    s.set_nodelay(true)?;
    s.bind(SocketAddr::V4(client))?;
    s.connect(SocketAddr::V4(server)).await
}

/// End a TCP connection with a RST (linger 0, then close).
fn reset_tcp(tcp: TcpStream) {
    // A zero linger makes close send a RST at once (it never blocks, unlike a positive one).
    let zero = nix::libc::linger {
        l_onoff: 1,
        l_linger: 0,
    };
    let _ = setsockopt(&tcp, sockopt::Linger, &zero);
    drop(tcp);
}

/// Move bytes both ways between a TCP connection and a stream until both directions ended.
/// `client_side`: the TCP connection is the client's (terminal), else the server's (gateway).
async fn relay(
    tcp: TcpStream,
    mut send: SendStream,
    mut recv: RecvStream,
    stats: &Stats,
    client_side: bool,
) {
    let (mut tr, mut tw) = tcp.into_split();
    let (to_sat, from_sat) = if client_side {
        (&stats.bytes_up, &stats.bytes_down)
    } else {
        (&stats.bytes_down, &stats.bytes_up)
    };
    // TCP to stream: a FIN finishes the stream; a RST (or any read error) resets it.
    let up = async {
        let mut buf = vec![0u8; 64 << 10];
        loop {
            match tr.read(&mut buf).await {
                Ok(0) => {
                    let _ = send.finish();
                    return true;
                }
                Ok(n) => {
                    if send.write_all(&buf[..n]).await.is_err() {
                        return false;
                    }
                    to_sat.fetch_add(n as u64, Ordering::Relaxed);
                }
                Err(_) => {
                    let _ = send.reset(VarInt::from_u32(Reset::Reset as u32));
                    return false;
                }
            }
        }
    };
    // Stream to TCP: its end half-closes the connection; a reset resets it.
    let down = async {
        let mut buf = vec![0u8; 64 << 10];
        loop {
            match recv.read(&mut buf).await {
                Ok(None) => {
                    let _ = tw.shutdown().await;
                    return true;
                }
                Ok(Some(n)) => {
                    if tw.write_all(&buf[..n]).await.is_err() {
                        let _ = recv.stop(VarInt::from_u32(Reset::Reset as u32));
                        return false;
                    }
                    from_sat.fetch_add(n as u64, Ordering::Relaxed);
                }
                Err(e) => {
                    let code = match e {
                        quinn::ReadError::Reset(c) => Reset::from_code(c.into_inner()),
                        _ => Reset::Reset,
                    };
                    stats.resets[code as usize].fetch_add(1, Ordering::Relaxed);
                    return false;
                }
            }
        }
    };
    // Both directions until both end cleanly; an abnormal end of either (a reset, a refused
    // server) ends the other at once, even while it waits for bytes that will never come.
    let clean = {
        tokio::pin!(up, down);
        let (mut up_end, mut down_end) = (None, None);
        while up_end.is_none() || down_end.is_none() {
            tokio::select! {
                r = &mut up, if up_end.is_none() => {
                    up_end = Some(r);
                    if !r { break; }
                }
                r = &mut down, if down_end.is_none() => {
                    down_end = Some(r);
                    if !r { break; }
                }
            }
        }
        up_end == Some(true) && down_end == Some(true)
    };
    if !clean {
        if let Ok(tcp) = tr.reunite(tw) {
            reset_tcp(tcp);
        }
        let _ = send.reset(VarInt::from_u32(Reset::Reset as u32));
        let _ = recv.stop(VarInt::from_u32(Reset::Reset as u32));
    } else {
        // Let the last bytes reach the peer before the stream is dropped.
        let _ = send.stopped().await;
    }
}

async fn serve_metrics(mut m: MetricsServer, name: String, role: Role, stats: Arc<Stats>) {
    let mut tick = tokio::time::interval(Duration::from_millis(20));
    loop {
        tick.tick().await;
        m.serve(|| render(&name, role, &stats));
    }
}

/// The Prometheus page.
fn render(name: &str, role: Role, s: &Stats) -> String {
    let l = format!("instance_name=\"{name}\",role=\"{}\"", role.name());
    let g = |v: &AtomicU64| v.load(Ordering::Relaxed);
    let mut p = String::new();
    for (metric, kind, help, v) in [
        (
            "satpep_accel_connections_total",
            "counter",
            "TCP connections carried.",
            g(&s.connections),
        ),
        (
            "satpep_accel_open_connections",
            "gauge",
            "TCP connections open now.",
            g(&s.open),
        ),
        (
            "satpep_accel_bytes_up_total",
            "counter",
            "Bytes client to server.",
            g(&s.bytes_up),
        ),
        (
            "satpep_accel_bytes_down_total",
            "counter",
            "Bytes server to client.",
            g(&s.bytes_down),
        ),
        (
            "satpep_accel_quic_connections_total",
            "counter",
            "Satellite connections established.",
            g(&s.quic_connections),
        ),
        (
            "satpep_accel_quic_failures_total",
            "counter",
            "Satellite handshakes refused or failed.",
            g(&s.quic_failures),
        ),
        (
            "satpep_accel_no_tunnel_total",
            "counter",
            "Connections reset: no satellite connection in time.",
            g(&s.no_tunnel),
        ),
    ] {
        p += &format!("# HELP {metric} {help}\n# TYPE {metric} {kind}\n{metric}{{{l}}} {v}\n");
    }
    p += "# HELP satpep_accel_resets_total Streams reset, by reason.\n# TYPE satpep_accel_resets_total counter\n";
    for r in Reset::ALL {
        p += &format!(
            "satpep_accel_resets_total{{{l},reason=\"{}\"}} {}\n",
            r.name(),
            g(&s.resets[r as usize])
        );
    }
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allowed_prefixes_match_as_routes_do() {
        let allow: Vec<_> = ["10.77.2.0/24", "192.0.2.7"]
            .iter()
            .filter_map(|p| parse_prefix(p))
            .collect();
        assert!(allowed(&allow, Ipv4Addr::new(10, 77, 2, 200)));
        assert!(!allowed(&allow, Ipv4Addr::new(10, 77, 3, 2)));
        assert!(allowed(&allow, Ipv4Addr::new(192, 0, 2, 7)));
        assert!(!allowed(&allow, Ipv4Addr::new(192, 0, 2, 8)));
        assert!(
            !allowed(&[], Ipv4Addr::new(10, 77, 2, 2)),
            "nothing by default"
        );
        assert!(allowed(&[(0, 0)], Ipv4Addr::new(203, 0, 113, 1)));
    }
}
