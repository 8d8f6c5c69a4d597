//! The accelerated PEP as a middlebox, for the simulator and the emulator: the daemons'
//! terminal and gateway, with satpep's own TCP endpoints where the daemons have kernel sockets,
//! and quinn-proto driven as a sans-IO [`Node`] where the daemons have quinn's tokio driver. The
//! QUIC settings ([`super::transport`]), the controllers ([`super::cc`]), the TLS with pinned
//! certificates ([`super::tls`]) and the stream header ([`super::header`]) are the daemons'.
//!
//! ```text
//!  client ─TCP─ [terminal: accept half] ══ one QUIC connection, a stream per TCP connection ══
//!                                         [gateway: connect half, from the client's address] ─TCP─ server
//! ```
//!
//! The semantics are the daemons' (docs/accel.md): the terminal answers the client's SYN at
//! once and sends its first bytes on a new stream of the connection that is already up; the
//! gateway connects to the server when the stream's header arrives. A server that refuses or
//! does not answer within `connect_timeout` resets the stream (`Refused`, `TimedOut`) and the
//! terminal resets the client. A RST either side resets the stream and the other connection;
//! a FIN ends the stream's direction and half-closes the other connection. Memory is bounded
//! by QUIC flow control: a terminal reads from its TCP connection only what the stream takes
//! (its advertised window closes when the stream is blocked), and a gateway gives its server
//! connection only what the TCP send buffer has room for.
//!
//! What differs from the daemons: the simulation's TLS identities are [`tls::SIMULATION`]'s
//! (the simulated network has no attacker, so no `allow` list either: the gateway connects
//! anywhere the header names); a terminal with no satellite connection holds its clients'
//! connections until one is up (the daemon resets them after `connect_timeout`, as here).
//!
//! Time: quinn-proto keeps `std::time::Instant`s, which have no constructor but the clock; the
//! node reads it once, as an arbitrary origin onto which simulated time is laid, and never
//! again (every instant it gives quinn is that origin plus the simulated time).

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr, SocketAddrV4};
use std::sync::Arc;

use bytes::BytesMut;
use quinn_proto::{
    ClientConfig, Connection, ConnectionHandle, DatagramEvent, Dir, Endpoint, Event, ReadError,
    ServerConfig, StreamEvent, StreamId, VarInt, WriteError,
};
use serde::{Deserialize, Serialize};

use super::header::{Reset, StreamHeader, LEN as HEADER_LEN};
use super::tls;
use super::transport::{self, Congestion, End};
use crate::flow::{FlowId, FlowKey, FlowTable};
use crate::pep::split_flow::Half;
use crate::tcp::{State, TcpConfig, TcpEndpoint};
use crate::time::{Bitrate, Duration, Instant};
use crate::units::ByteSize;
use crate::wire::udp::{emit_ipv4_udp_for, ipv4_udp, parse_udp_packet, IPPROTO_UDP};
use crate::wire::{parse_packet, TcpFlags};
use crate::{Node, Packet, PortId, Transmit};

/// Which end of the satellite this node is.
#[derive(Clone, Copy, Debug, Deserialize, Eq, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Behind the satellite: intercepts its clients' TCP connections.
    Terminal,
    /// At the hub: opens the server connections.
    Gateway,
}

/// Settings of one end (`middlebox = { kind = "accel", role = "terminal", … }` on a router).
#[derive(Clone, Debug, Deserialize, PartialEq, Serialize)]
#[serde(deny_unknown_fields)]
pub struct AccelPepConfig {
    /// `"terminal"` or `"gateway"`.
    pub role: Role,
    /// This end's address on the satellite side (its router's): the QUIC connection's.
    pub address: Ipv4Addr,
    /// Terminal: the gateway's `address`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gateway: Option<Ipv4Addr>,
    /// UDP port of both ends' QUIC endpoints. Default 4433.
    #[serde(default = "default_udp_port")]
    pub udp_port: u16,
    /// The forward (gateway to terminal) capacity on the wire.
    pub forward: Bitrate,
    /// The return (terminal to gateway) capacity on the wire.
    #[serde(rename = "return")]
    pub return_rate: Bitrate,
    /// The satellite round trip, assumed until measured.
    pub rtt: Duration,
    /// The controller of what this end sends: `"rate"` (default), `"probe"`, or quinn's
    /// `"cubic"`, `"bbr"`, `"new_reno"`.
    #[serde(default)]
    pub congestion: Congestion,
    /// UDP payload bytes per packet (default 1452).
    #[serde(default = "default_mtu")]
    pub mtu: u16,
    /// Gateway: how long a server may take to accept; terminal: how long a client waits for
    /// the satellite connection. Then the client is reset. Default `"10s"`.
    #[serde(default = "default_connect_timeout")]
    pub connect_timeout: Duration,
    /// Streams (TCP connections) one terminal may hold at once; further connections pass
    /// through unaccelerated. Default 10 000.
    #[serde(default = "default_max_streams")]
    pub max_streams: u32,
    /// Accelerate only connections to these destination ports; empty: every TCP connection.
    #[serde(default)]
    pub ports: Vec<u16>,
    /// TCP settings of this end's local connections (the terminal's toward its clients, the
    /// gateway's toward the servers).
    #[serde(default)]
    pub tcp: TcpConfig,
    /// Receive buffer of each local TCP connection (its advertised window). Default `"1MB"`.
    #[serde(default = "default_buffer")]
    pub buffer_per_conn: ByteSize,
}

fn default_udp_port() -> u16 {
    4433
}
fn default_mtu() -> u16 {
    1452
}
fn default_connect_timeout() -> Duration {
    Duration::from_secs(10)
}
fn default_max_streams() -> u32 {
    10_000
}
fn default_buffer() -> ByteSize {
    ByteSize(1_000_000)
}

impl AccelPepConfig {
    /// Check values a scenario could get wrong; the message starts with the key.
    pub fn validate(&self) -> Result<(), String> {
        self.tcp.validate().map_err(|e| format!("tcp.{e}"))?;
        match (self.role, self.gateway) {
            (Role::Terminal, None) => {
                return Err("gateway: a terminal needs the gateway's address".into())
            }
            (Role::Gateway, Some(_)) => {
                return Err("gateway: only a terminal names the gateway".into())
            }
            _ => {}
        }
        if self.address.is_unspecified() || self.address.is_multicast() {
            return Err(format!("address: {} is not a host address", self.address));
        }
        if self.udp_port == 0 {
            return Err("udp_port: must be 1 to 65535".into());
        }
        for (k, r) in [("forward", self.forward), ("return", self.return_rate)] {
            if r.0 == 0 {
                return Err(format!("{k}: must be > 0"));
            }
        }
        if self.rtt == Duration::ZERO || self.rtt > Duration::from_secs(60) {
            return Err("rtt: must be > 0 and at most 60 s".into());
        }
        if !(1200..=65_000).contains(&self.mtu) {
            return Err(format!("mtu: {} is outside 1200 to 65000", self.mtu));
        }
        if self.connect_timeout == Duration::ZERO {
            return Err("connect_timeout: must be > 0".into());
        }
        if self.max_streams == 0 {
            return Err("max_streams: must be at least 1".into());
        }
        let mss = u64::from(self.tcp.mss);
        if self.buffer_per_conn.bytes() < mss {
            return Err(format!(
                "buffer_per_conn: {} bytes is less than one segment ({mss})",
                self.buffer_per_conn.bytes()
            ));
        }
        Ok(())
    }

    fn path(&self) -> transport::Path {
        transport::Path {
            forward_bps: self.forward.0,
            return_bps: self.return_rate.0,
            rtt: std::time::Duration::from_nanos(self.rtt.as_nanos()),
            mtu: self.mtu,
            max_streams: self.max_streams,
            congestion: self.congestion,
        }
    }
}

/// Counters of one end.
#[derive(Clone, Copy, Debug, Default, Eq, PartialEq, Serialize)]
pub struct AccelStats {
    /// TCP connections carried on a stream (terminal: accepted; gateway: header read).
    pub connections: u64,
    /// Connections open now.
    pub open: u64,
    /// Connections ended by a reset, per [`Reset`] code (index = code; reported as
    /// `resets_<name>`).
    #[serde(skip)]
    pub resets: [u64; 8],
    /// Bytes client to server (terminal: read from clients; gateway: given to servers).
    pub bytes_up: u64,
    /// Bytes server to client (terminal: given to clients; gateway: read from servers).
    pub bytes_down: u64,
    /// QUIC connections established.
    pub quic_connections: u64,
    /// QUIC connections lost (timed out, reset or closed by the peer).
    pub quic_lost: u64,
    /// UDP payload bytes this end sent and received (the satellite hop's QUIC bytes; the
    /// terminal's `quic_sent` over the gateway's is the return link's bytes per forward byte).
    pub quic_sent: u64,
    /// See `quic_sent`.
    pub quic_received: u64,
    /// SYNs passed on unaccelerated (port not listed, or `max_streams` connections held).
    pub unaccelerated: u64,
    /// Packets passed on untouched (not TCP, or not of a carried connection).
    pub passed_through: u64,
    /// Datagrams to this end's UDP port that were not valid UDP (counted and dropped).
    pub malformed: u64,
}

/// One satellite connection (the terminal has one; the gateway one per terminal).
struct Satellite {
    handle: ConnectionHandle,
    conn: Connection,
    /// quinn's next timer, in simulated time (kept because `poll_timeout` needs `&mut`).
    timeout: Option<Instant>,
    /// Gateway: streams whose header is still arriving.
    embryos: HashMap<StreamId, Vec<u8>>,
}

impl Satellite {
    fn new(handle: ConnectionHandle, conn: Connection) -> Self {
        Self {
            handle,
            conn,
            timeout: None,
            embryos: HashMap::new(),
        }
    }
}

/// One TCP connection carried on a stream.
struct Carried {
    half: Half,
    conn: ConnectionHandle,
    stream: Option<StreamId>,
    /// Terminal: header bytes still to write on the stream.
    header: Vec<u8>,
    /// In-order TCP bytes written into the stream.
    fed: u64,
    /// The TCP FIN was passed on (the stream finished).
    fin_sent: bool,
    /// The stream's end was passed on (the TCP connection closed).
    fin_given: bool,
    /// Gateway: decided when the server answers (its SYN-ACK carries real bytes or a
    /// length): the stream's bytes wait until then.
    real: Option<bool>,
    /// Terminal: reset the client if no stream by then; gateway: if the server has not
    /// answered by then.
    deadline: Option<Instant>,
    /// Reset either way: freed once its last packets are out.
    done: bool,
}

/// The accelerated PEP's terminal or gateway (see the module doc).
pub struct AccelPep {
    config: AccelPepConfig,
    endpoint: Endpoint,
    client: Option<ClientConfig>,
    conns: Vec<Satellite>,
    flows: FlowTable<Carried>,
    by_stream: HashMap<(ConnectionHandle, StreamId), FlowId>,
    /// Terminal: when to (re)connect to the gateway.
    next_connect: Option<Instant>,
    epoch: std::time::Instant,
    out: Vec<Packet>,
    sent: usize,
    next_id: u64,
    ident: u16,
    iss: u32,
    buf: Vec<u8>,
    scratch: Vec<u8>,
    due: Vec<FlowId>,
    touched: Vec<FlowId>,
    stats: AccelStats,
}

impl std::fmt::Debug for AccelPep {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AccelPep")
            .field("role", &self.config.role)
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

impl Clone for AccelPep {
    /// A fresh node with the same configuration (a QUIC connection cannot be copied; the
    /// simulator clones middleboxes only before a run starts).
    fn clone(&self) -> Self {
        Self::new(self.config.clone(), self.seed_of())
    }
}

/// Packet ids of this node's packets start here, apart from hosts' and other middleboxes'.
const ID_BASE: u64 = 3 << 60;
/// Zeros written for a modelled host's payload (which exists only as a length).
static ZEROS: [u8; 16_384] = [0; 16_384];

impl AccelPep {
    /// An end with no connections; `seed` seeds quinn's random numbers.
    pub fn new(config: AccelPepConfig, seed: u64) -> Self {
        let (cert, key) = match config.role {
            Role::Terminal => tls::SIMULATION.terminal,
            Role::Gateway => tls::SIMULATION.gateway,
        };
        let (peer_cert, _) = match config.role {
            Role::Terminal => tls::SIMULATION.gateway,
            Role::Gateway => tls::SIMULATION.terminal,
        };
        let path = config.path();
        let end = match config.role {
            Role::Terminal => End::Terminal,
            Role::Gateway => End::Gateway,
        };
        let transport = Arc::new(transport::transport_config(&path, end));
        // The built-in identities are constants: they always parse (a test checks them).
        let pin = pin_of(peer_cert);
        let id = tls::Identity::from_pem(cert.as_bytes(), key.as_bytes()).ok();
        let mut client = None;
        let mut server = None;
        match (config.role, id) {
            (Role::Terminal, Some(id)) => {
                if let Ok(c) = tls::client_config(id, &[pin]) {
                    let mut c = ClientConfig::new(Arc::new(c));
                    c.transport_config(transport);
                    client = Some(c);
                }
            }
            (Role::Gateway, Some(id)) => {
                if let Ok(s) = tls::server_config(id, &[pin]) {
                    let mut s = ServerConfig::with_crypto(Arc::new(s));
                    s.transport_config(transport);
                    server = Some(Arc::new(s));
                }
            }
            _ => {}
        }
        let mut rng_seed = [0u8; 32];
        rng_seed[..8].copy_from_slice(&seed.to_le_bytes());
        let endpoint = Endpoint::new(
            Arc::new(transport::endpoint_config(key.as_bytes())),
            server,
            false,
            Some(rng_seed),
        );
        let next_connect = (config.role == Role::Terminal).then_some(Instant::ZERO);
        let capacity = usize::try_from(config.max_streams).unwrap_or(usize::MAX);
        Self {
            flows: FlowTable::new(capacity, None),
            endpoint,
            client,
            conns: Vec::new(),
            by_stream: HashMap::new(),
            next_connect,
            epoch: std::time::Instant::now(),
            out: Vec::new(),
            sent: 0,
            next_id: ID_BASE,
            ident: 0,
            iss: 0xacce_1000 ^ (seed as u32),
            buf: Vec::new(),
            scratch: Vec::new(),
            due: Vec::new(),
            touched: Vec::new(),
            stats: AccelStats::default(),
            config,
        }
    }

    fn seed_of(&self) -> u64 {
        u64::from(self.iss ^ 0xacce_1000)
    }

    /// Counters.
    pub fn stats(&self) -> AccelStats {
        AccelStats {
            open: self.flows.len() as u64,
            ..self.stats
        }
    }

    /// Whether a satellite connection is established (terminal: to the gateway; gateway: from
    /// at least one terminal).
    pub fn is_connected(&self) -> bool {
        self.conns
            .iter()
            .any(|s| !s.conn.is_handshaking() && !s.conn.is_closed())
    }

    /// The satellite connections' smoothed round trips (one per connection).
    pub fn rtts(&self) -> Vec<Duration> {
        self.conns
            .iter()
            .map(|s| Duration::from_nanos(s.conn.rtt().as_nanos() as u64))
            .collect()
    }

    fn std(&self, t: Instant) -> std::time::Instant {
        self.epoch + std::time::Duration::from_nanos(t.as_nanos())
    }

    fn sim(&self, t: std::time::Instant) -> Instant {
        Instant(t.saturating_duration_since(self.epoch).as_nanos() as u64)
    }

    fn index(&self, h: ConnectionHandle) -> Option<usize> {
        self.conns.iter().position(|s| s.handle == h)
    }

    /// A QUIC datagram for this end.
    fn quic_input(&mut self, now: Instant, src: SocketAddr, data: BytesMut) {
        self.stats.quic_received += data.len() as u64;
        self.buf.clear();
        let event = self.endpoint.handle(
            self.std(now),
            src,
            Some(IpAddr::V4(self.config.address)),
            None,
            data,
            &mut self.buf,
        );
        match event {
            Some(DatagramEvent::ConnectionEvent(h, ev)) => {
                if let Some(i) = self.index(h) {
                    self.conns[i].conn.handle_event(ev);
                    self.drive(now, i);
                }
            }
            Some(DatagramEvent::NewConnection(incoming)) => {
                self.buf.clear();
                match self
                    .endpoint
                    .accept(incoming, self.std(now), &mut self.buf, None)
                {
                    Ok((handle, conn)) => {
                        self.conns.push(Satellite::new(handle, conn));
                        self.drive(now, self.conns.len() - 1);
                    }
                    Err(e) => {
                        if let Some(t) = e.response {
                            let bytes = self.buf[..t.size].to_vec();
                            self.send_udp(t.destination, &bytes);
                        }
                    }
                }
            }
            Some(DatagramEvent::Response(t)) => {
                let bytes = self.buf[..t.size].to_vec();
                self.send_udp(t.destination, &bytes);
            }
            None => {}
        }
    }

    /// An IPv4/UDP packet from this end to `dst` carrying `payload`.
    fn send_udp(&mut self, dst: SocketAddr, payload: &[u8]) {
        let SocketAddr::V4(dst) = dst else {
            return;
        };
        let ip = ipv4_udp(self.config.address, *dst.ip(), self.ident);
        self.ident = self.ident.wrapping_add(1);
        let mut h = [0u8; 28];
        emit_ipv4_udp_for(&ip, self.config.udp_port, dst.port(), payload, &mut h);
        if let Some(p) = Packet::try_with_payload(&h, payload) {
            self.stats.quic_sent += payload.len() as u64;
            self.out.push(p);
        }
    }

    /// After input to connection `i`: its events (new streams, readable and writable ones,
    /// the handshake's end, its loss), the flows they touch, and its packets out.
    fn drive(&mut self, now: Instant, i: usize) {
        loop {
            let s = &mut self.conns[i];
            let handle = s.handle;
            while let Some(ev) = s.conn.poll_endpoint_events() {
                if let Some(back) = self.endpoint.handle_event(handle, ev) {
                    s.conn.handle_event(back);
                }
            }
            let mut lost = false;
            let mut any = false;
            let mut opened = false;
            while let Some(ev) = self.conns[i].conn.poll() {
                any = true;
                match ev {
                    Event::Connected => {
                        self.stats.quic_connections += 1;
                        opened = true;
                    }
                    Event::ConnectionLost { .. } => lost = true,
                    Event::Stream(StreamEvent::Opened { dir: Dir::Bi }) => {
                        let mut ids = Vec::new();
                        let s = &mut self.conns[i];
                        while let Some(id) = s.conn.streams().accept(Dir::Bi) {
                            s.embryos.insert(id, Vec::with_capacity(HEADER_LEN));
                            ids.push(id);
                        }
                        for id in ids {
                            self.read_header(now, i, id);
                        }
                    }
                    Event::Stream(StreamEvent::Available { dir: Dir::Bi }) => opened = true,
                    Event::Stream(
                        StreamEvent::Readable { id }
                        | StreamEvent::Writable { id }
                        | StreamEvent::Finished { id }
                        | StreamEvent::Stopped { id, .. },
                    ) => {
                        if self.conns[i].embryos.contains_key(&id) {
                            self.read_header(now, i, id);
                        } else if let Some(&f) = self.by_stream.get(&(handle, id)) {
                            self.touched.push(f);
                        }
                    }
                    _ => {}
                }
            }
            if opened {
                self.open_streams(now, i);
            }
            if lost {
                self.lose(now, i);
                return;
            }
            let touched = std::mem::take(&mut self.touched);
            for &f in &touched {
                self.pump(now, f);
            }
            self.touched = touched;
            self.touched.clear();
            self.transmit(now, i);
            if !any {
                break;
            }
        }
        let s = &mut self.conns[i];
        if s.conn.is_drained() {
            self.conns.swap_remove(i);
        }
    }

    /// Connection `i`'s packets out, and its next timer.
    fn transmit(&mut self, now: Instant, i: usize) {
        loop {
            self.buf.clear();
            let at = self.std(now);
            let t = self.conns[i].conn.poll_transmit(at, 1, &mut self.buf);
            let Some(t) = t else { break };
            let bytes = std::mem::take(&mut self.buf);
            self.send_udp(t.destination, &bytes[..t.size]);
            self.buf = bytes;
        }
        let t = self.conns[i].conn.poll_timeout();
        self.conns[i].timeout = t.map(|t| self.sim(t));
    }

    /// The satellite connection `i` is gone: reset every connection it carried.
    fn lose(&mut self, now: Instant, i: usize) {
        self.stats.quic_lost += 1;
        let handle = self.conns[i].handle;
        let ids: Vec<FlowId> = self
            .by_stream
            .iter()
            .filter(|((h, _), _)| *h == handle)
            .map(|(_, &f)| f)
            .collect();
        for f in ids {
            if let Some(c) = self.flows.get_by_id_mut(f) {
                c.stream = None;
                c.done = true;
                if c.half.ep.state() != State::Closed {
                    self.out.extend(c.half.reset());
                }
            }
            self.finish(now, f);
        }
        self.by_stream.retain(|(h, _), _| *h != handle);
        self.conns.swap_remove(i);
        if self.config.role == Role::Terminal {
            self.next_connect = Some(now + Duration::from_secs(1));
        }
    }

    /// Terminal: open a stream for every connection waiting for one.
    fn open_streams(&mut self, now: Instant, i: usize) {
        if self.config.role != Role::Terminal {
            return;
        }
        let handle = self.conns[i].handle;
        let waiting: Vec<FlowId> = self
            .flows
            .iter_sorted()
            .filter(|(_, c)| c.stream.is_none() && !c.done)
            .map(|(k, _)| k)
            .filter_map(|k| self.flows.id(&k))
            .collect();
        for f in waiting {
            let Some(id) = self.conns[i].conn.streams().open(Dir::Bi) else {
                break;
            };
            if let Some(c) = self.flows.get_by_id_mut(f) {
                c.stream = Some(id);
                c.conn = handle;
                c.deadline = None;
                self.by_stream.insert((handle, id), f);
                self.stats.connections += 1;
            }
            self.pump(now, f);
        }
    }

    /// Gateway: read the header of stream `id` of connection `i`; once whole, connect.
    fn read_header(&mut self, now: Instant, i: usize, id: StreamId) {
        let s = &mut self.conns[i];
        let Some(have) = s.embryos.get_mut(&id) else {
            return;
        };
        let mut failed = None;
        let mut ended = false;
        if let Ok(mut chunks) = s.conn.recv_stream(id).read(true) {
            while have.len() < HEADER_LEN {
                match chunks.next(HEADER_LEN - have.len()) {
                    Ok(Some(c)) => have.extend_from_slice(&c.bytes),
                    Ok(None) => {
                        ended = true;
                        break;
                    }
                    Err(ReadError::Blocked) => break,
                    Err(ReadError::Reset(_)) => {
                        ended = true;
                        break;
                    }
                }
            }
            let _ = chunks.finalize();
        }
        if have.len() < HEADER_LEN {
            if ended {
                s.embryos.remove(&id);
                failed = Some(Reset::BadHeader);
            }
        } else {
            let bytes = std::mem::take(have);
            s.embryos.remove(&id);
            match StreamHeader::parse(&bytes) {
                Ok(h) => {
                    if self.flows.is_full() {
                        failed = Some(Reset::OverLimit);
                    } else {
                        self.connect(now, i, id, h);
                    }
                }
                Err(_) => failed = Some(Reset::BadHeader),
            }
        }
        if let Some(code) = failed {
            let s = &mut self.conns[i];
            let v = VarInt::from_u32(code as u32);
            let _ = s.conn.send_stream(id).reset(v);
            let _ = s.conn.recv_stream(id).stop(v);
            self.stats.resets[code as usize] += 1;
        }
    }

    /// Gateway: open the server connection for stream `id`, from the client's address.
    fn connect(&mut self, now: Instant, i: usize, id: StreamId, h: StreamHeader) {
        let client = (*h.client.ip(), h.client.port());
        let server = (*h.server.ip(), h.server.port());
        let mut cfg = self.config.tcp.clone();
        cfg.recv_buffer = self.config.buffer_per_conn;
        self.iss = self.iss.wrapping_mul(1_103_515_245).wrapping_add(12_345);
        let mut ep = TcpEndpoint::new(cfg, client, server, self.iss);
        ep.set_manual_read();
        ep.connect(now);
        let handle = self.conns[i].handle;
        let carried = Carried {
            half: Half::new(ep),
            conn: handle,
            stream: Some(id),
            header: Vec::new(),
            fed: 0,
            fin_sent: false,
            fin_given: false,
            real: None,
            deadline: Some(now + self.config.connect_timeout),
            done: false,
        };
        let key = FlowKey::new(client.0, client.1, server.0, server.1);
        match self.flows.insert(now, key, carried) {
            Ok(f) => {
                self.by_stream.insert((handle, id), f);
                self.stats.connections += 1;
                self.pump(now, f);
            }
            Err(_) => {
                // The same client and server twice at once: refused like an overload.
                let v = VarInt::from_u32(Reset::OverLimit as u32);
                let _ = self.conns[i].conn.send_stream(id).reset(v);
                self.stats.resets[Reset::OverLimit as usize] += 1;
            }
        }
    }

    /// Terminal: a client's SYN; answered here, carried on a stream as soon as one opens.
    fn accept(&mut self, now: Instant, key: FlowKey, pkt: &Packet) -> bool {
        let Ok((_, syn)) = parse_packet(pkt) else {
            return false;
        };
        if !self.config.ports.is_empty() && !self.config.ports.contains(&key.dst_port) {
            return false;
        }
        if self.flows.is_full() {
            return false;
        }
        let mut cfg = self.config.tcp.clone();
        cfg.recv_buffer = self.config.buffer_per_conn;
        self.iss = self.iss.wrapping_mul(1_103_515_245).wrapping_add(12_345);
        let server = (key.dst, key.dst_port);
        let client = (key.src, key.src_port);
        let mut ep = TcpEndpoint::new(cfg, server, client, self.iss);
        ep.set_manual_read();
        if pkt.has_real_payload() {
            ep.carry_bytes();
        }
        ep.listen();
        ep.handle_segment_with_payload(now, &syn, pkt.payload());
        let header = StreamHeader {
            client: SocketAddrV4::new(client.0, client.1),
            server: SocketAddrV4::new(server.0, server.1),
        };
        let carried = Carried {
            half: Half::new(ep),
            conn: self
                .conns
                .first()
                .map_or(ConnectionHandle(usize::MAX), |s| s.handle),
            stream: None,
            header: header.encode().to_vec(),
            fed: 0,
            fin_sent: false,
            fin_given: false,
            real: Some(pkt.has_real_payload()),
            deadline: Some(now + self.config.connect_timeout),
            done: false,
        };
        let Ok(f) = self.flows.insert(now, key, carried) else {
            return false;
        };
        if let Some(i) = (0..self.conns.len()).find(|&i| !self.conns[i].conn.is_handshaking()) {
            self.open_streams(now, i);
            self.transmit(now, i);
        }
        self.pump(now, f);
        true
    }

    /// Move flow `f`'s bytes both ways, pass FINs and resets on, and send its TCP segments.
    fn pump(&mut self, now: Instant, f: FlowId) {
        let Some(c) = self.flows.get_by_id_mut(f) else {
            return;
        };
        let ep_state = c.half.ep.state();
        let conn = match (c.stream, self.conns.iter_mut().find(|s| s.handle == c.conn)) {
            (Some(id), Some(s)) if !c.done => Some((id, &mut s.conn)),
            _ => None,
        };
        let up = self.config.role == Role::Terminal;
        let mut reset_from_peer = None;
        if let Some((id, conn)) = conn {
            // Gateway: the stream's bytes wait for the server's answer, which says whether
            // this connection carries real bytes.
            if c.real.is_none() && c.half.ep.is_established() {
                let real = c.half.ep.carries_bytes();
                c.real = Some(real);
            }
            if self.config.role == Role::Gateway && c.half.ep.established_at().is_some() {
                c.deadline = None;
            }
            let real = c.real.unwrap_or(false);
            let mut s = conn.send_stream(id);
            // The header first (terminal).
            while !c.header.is_empty() {
                match s.write(&c.header) {
                    Ok(n) if n > 0 => {
                        c.header.drain(..n);
                    }
                    _ => break,
                }
            }
            // TCP → stream: what arrived in order and the stream takes.
            let mut stopped = false;
            if c.header.is_empty() && c.real.is_some() {
                loop {
                    let avail = c.half.ep.bytes_received() - c.fed;
                    if avail == 0 {
                        break;
                    }
                    let n = usize::try_from(avail)
                        .unwrap_or(usize::MAX)
                        .min(ZEROS.len());
                    let wrote = if real {
                        self.scratch.clear();
                        let got = c.half.ep.peek_bytes(c.fed, n, &mut self.scratch);
                        s.write(&self.scratch[..got])
                    } else {
                        s.write(&ZEROS[..n])
                    };
                    match wrote {
                        Ok(w) => {
                            c.fed += w as u64;
                            if up {
                                self.stats.bytes_up += w as u64;
                            } else {
                                self.stats.bytes_down += w as u64;
                            }
                            // A partial write is not yet "blocked": quinn registers the
                            // stream for a `Writable` event only when a write takes nothing,
                            // so write again (stalled five of nine connections otherwise).
                            if w == 0 {
                                break;
                            }
                        }
                        Err(WriteError::Blocked) => break,
                        Err(_) => {
                            stopped = true;
                            break;
                        }
                    }
                }
                c.half.ep.read_to(now, c.fed);
                if !c.fin_sent
                    && !stopped
                    && c.half.ep.peer_closed()
                    && c.fed == c.half.ep.bytes_received()
                {
                    c.fin_sent = s.finish().is_ok();
                }
            }
            if let Ok(Some(code)) = s.stopped() {
                reset_from_peer = Some(code);
            }
            // Stream → TCP: what the send buffer has room for.
            let space = c.half.ep.send_space();
            if c.real.is_some() && !c.fin_given && reset_from_peer.is_none() {
                if let Ok(mut chunks) = conn.recv_stream(id).read(true) {
                    let mut left = usize::try_from(space).unwrap_or(usize::MAX);
                    while left > 0 {
                        match chunks.next(left) {
                            Ok(Some(ch)) => {
                                let n = ch.bytes.len();
                                if real {
                                    c.half.ep.send_bytes(now, &ch.bytes);
                                } else {
                                    c.half.ep.send(now, n as u64);
                                }
                                left -= n;
                                if up {
                                    self.stats.bytes_down += n as u64;
                                } else {
                                    self.stats.bytes_up += n as u64;
                                }
                            }
                            Ok(None) => {
                                c.half.ep.close(now);
                                c.fin_given = true;
                                break;
                            }
                            Err(ReadError::Blocked) => break,
                            Err(ReadError::Reset(code)) => {
                                reset_from_peer = Some(code);
                                break;
                            }
                        }
                    }
                    let _ = chunks.finalize();
                }
            }
            if let Some(code) = reset_from_peer {
                // The other side reset: so does this one.
                let n = usize::try_from(code.into_inner()).unwrap_or(0).min(7);
                self.stats.resets[n] += 1;
                c.done = true;
                if ep_state != State::Closed {
                    self.out.extend(c.half.reset());
                }
                let v = VarInt::from_u32(Reset::Reset as u32);
                let _ = conn.send_stream(id).reset(v);
                let _ = conn.recv_stream(id).stop(v);
            }
        }
        while let Some(seg) = c.half.ep.poll_transmit(now) {
            if let Some(p) = c.half.packet(&seg) {
                self.out.push(p);
            }
        }
        let deadline = [c.half.ep.poll_timeout(), c.deadline]
            .into_iter()
            .flatten()
            .min();
        self.flows.set_deadline(f, deadline);
        self.finish(now, f);
    }

    /// This end's TCP connection of flow `f` reset or refused: reset its stream with `code`.
    fn reset_stream(&mut self, f: FlowId, code: Reset) {
        let Some(c) = self.flows.get_by_id_mut(f) else {
            return;
        };
        c.done = true;
        self.stats.resets[code as usize] += 1;
        let Some(id) = c.stream else {
            return;
        };
        if let Some(s) = self.conns.iter_mut().find(|s| s.handle == c.conn) {
            let v = VarInt::from_u32(code as u32);
            let _ = s.conn.send_stream(id).reset(v);
            let _ = s.conn.recv_stream(id).stop(v);
        }
    }

    /// Free flow `f` if it is over: reset, or closed both ways with both stream directions
    /// ended.
    fn finish(&mut self, _now: Instant, f: FlowId) {
        let Some(c) = self.flows.get_by_id_mut(f) else {
            return;
        };
        let tcp_over =
            matches!(c.half.ep.state(), State::Closed | State::TimeWait) || c.half.ep.is_finished();
        // A reset flow's RST is already out: later segments of it pass through (and the end
        // that still has the connection answers them with its own RST).
        let over = c.done || (tcp_over && c.fin_sent && c.fin_given);
        if !over {
            return;
        }
        let stream = c.stream.map(|id| (c.conn, id));
        if let Some(k) = stream {
            self.by_stream.remove(&k);
        }
        self.flows.remove(f);
    }

    /// A TCP segment of carried flow `f` from this end's side.
    fn tcp_input(&mut self, now: Instant, f: FlowId, pkt: &Packet) {
        let Ok((_, seg)) = parse_packet(pkt) else {
            return;
        };
        let Some(c) = self.flows.get_by_id_mut(f) else {
            return;
        };
        if c.real.is_none() && pkt.has_real_payload() {
            // Gateway: a server of a real program (the emulator): carry its bytes.
            c.half.ep.carry_bytes();
        }
        let before = c.half.ep.state();
        c.half
            .ep
            .handle_segment_with_payload(now, &seg, pkt.payload());
        let after = c.half.ep.state();
        let conn = c.conn;
        if seg.flags.contains(TcpFlags::RST) && after != before {
            // Refused by the server before it accepted, or reset by either end later.
            let code = if self.config.role == Role::Gateway && before == State::SynSent {
                Reset::Refused
            } else {
                Reset::Reset
            };
            self.reset_stream(f, code);
        }
        self.pump(now, f);
        if let Some(i) = self.index(conn) {
            self.drive(now, i);
        }
    }
}

/// The sha-256 of the first certificate in `pem` (a built-in constant: always parses).
fn pin_of(pem: &str) -> [u8; 32] {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::CertificateDer;
    use sha2::{Digest, Sha256};
    CertificateDer::from_pem_slice(pem.as_bytes())
        .map(|c| Sha256::digest(c.as_ref()).into())
        .unwrap_or([0; 32])
}

impl Node for AccelPep {
    fn handle_packet(&mut self, now: Instant, _port: PortId, pkt: Packet) {
        let h = pkt.header();
        let to_us = h.len() >= 20
            && h[9] == IPPROTO_UDP
            && Ipv4Addr::new(h[16], h[17], h[18], h[19]) == self.config.address;
        if to_us {
            let Ok((ip, udp, _)) = parse_udp_packet(&pkt) else {
                self.stats.malformed += 1;
                return;
            };
            if udp.dst_port != self.config.udp_port {
                self.stats.passed_through += 1;
                self.out.push(pkt);
                return;
            }
            let mut data = BytesMut::with_capacity(udp.payload_len as usize);
            data.extend_from_slice(pkt.header().get(28..).unwrap_or(&[]));
            data.extend_from_slice(pkt.payload().unwrap_or(&[]));
            if data.len() != udp.payload_len as usize {
                // A modelled datagram (its payload only a length): not QUIC.
                self.stats.malformed += 1;
                return;
            }
            let src = SocketAddr::V4(SocketAddrV4::new(ip.src, udp.src_port));
            self.quic_input(now, src, data);
            return;
        }
        if let Ok((ip, seg)) = parse_packet(&pkt) {
            let key = FlowKey::of(&ip, &seg);
            let flow = match self.config.role {
                Role::Terminal => self.flows.id(&key),
                Role::Gateway => self.flows.id(&key.reversed()),
            };
            if let Some(f) = flow {
                self.tcp_input(now, f, &pkt);
                return;
            }
            let syn = seg.flags.contains(TcpFlags::SYN) && seg.ack.is_none();
            if syn && self.config.role == Role::Terminal {
                if self.accept(now, key, &pkt) {
                    return;
                }
                self.stats.unaccelerated += 1;
            }
        }
        self.stats.passed_through += 1;
        self.out.push(pkt);
    }

    fn handle_timeout(&mut self, now: Instant) {
        if self.next_connect.is_some_and(|t| t <= now) {
            self.next_connect = None;
            if let (Some(gw), Some(cfg)) = (self.config.gateway, self.client.clone()) {
                let remote = SocketAddr::V4(SocketAddrV4::new(gw, self.config.udp_port));
                match self
                    .endpoint
                    .connect(self.std(now), cfg, remote, tls::SERVER_NAME)
                {
                    Ok((handle, conn)) => {
                        self.conns.push(Satellite::new(handle, conn));
                        let i = self.conns.len() - 1;
                        self.drive(now, i);
                    }
                    Err(_) => self.next_connect = Some(now + Duration::from_secs(1)),
                }
            }
        }
        let mut i = 0;
        while i < self.conns.len() {
            if self.conns[i].timeout.is_some_and(|t| t <= now) {
                let t = self.std(now);
                self.conns[i].conn.handle_timeout(t);
                let n = self.conns.len();
                self.drive(now, i);
                if self.conns.len() < n {
                    continue;
                }
            }
            i += 1;
        }
        let mut due = std::mem::take(&mut self.due);
        self.flows.take_due(now, &mut due);
        for &f in &due {
            let Some(c) = self.flows.get_by_id_mut(f) else {
                continue;
            };
            c.half.ep.handle_timeout(now);
            let late = c.deadline.is_some_and(|d| d <= now);
            let conn = c.conn;
            if late {
                c.deadline = None;
                // No satellite connection in time (terminal), or no answer from the server
                // (gateway): reset the client.
                if c.half.ep.state() != State::Closed {
                    self.out.extend(c.half.reset());
                }
                self.reset_stream(f, Reset::TimedOut);
            }
            self.pump(now, f);
            if let Some(i) = self.index(conn) {
                self.transmit(now, i);
            }
        }
        due.clear();
        self.due = due;
    }

    fn poll_transmit(&mut self, _now: Instant) -> Option<Transmit> {
        if self.sent == self.out.len() {
            self.out.clear();
            self.sent = 0;
            return None;
        }
        let mut pkt = std::mem::replace(&mut self.out[self.sent], Packet::new(&[], 0));
        self.sent += 1;
        if pkt.id == 0 {
            pkt.id = self.next_id;
            self.next_id += 1;
        }
        Some(Transmit {
            port: PortId(0),
            pkt,
        })
    }

    fn poll_timeout(&self) -> Option<Instant> {
        let quic = self.conns.iter().filter_map(|s| s.timeout).min();
        [self.next_connect, quic, self.flows.poll_timeout()]
            .into_iter()
            .flatten()
            .min()
    }
}
