//! The split-TCP relay as a middlebox: a flow table keyed by the 4-tuple, one [`SplitFlow`]
//! per split connection (RFC 3135 §2.1.1, "split connections"; Karaliopoulos et al.'s
//! "split Reno–SACK").
//!
//! Decisions, each with its reason (docs/deploy.md, "Split-TCP semantics", says the same for
//! operators):
//!
//! - **Handshake** (`handshake`). `"local"` (the default, and what the papers' split gateways
//!   do): the accept half answers the opener's SYN at once while the connect half opens its own
//!   connection to the listener. This saves the opener one satellite round trip of handshake;
//!   the price is that the opener is told "connected" before the listener has said anything. If
//!   the listener refuses (RST) or does not answer within `connect_timeout`, the opener gets a
//!   RST — the closest truthful thing it can still be told (RFC 3135 §4.2). `"after_listener"`:
//!   the opener's SYN is held (its retransmissions absorbed) and answered only once the
//!   listener's SYN-ACK has arrived, so a refused or unreachable listener looks to the opener
//!   as it would without a PEP: the listener's RST becomes a RST (ACK of the opener's SYN) from
//!   the listener's address, and the connect timeout a RST of the same form. Time to first
//!   byte is the same in both modes (the request waits for the second leg either way).
//! - **FIN** is passed on once every byte before it has been handed to the other half's send
//!   buffer: it leaves behind them, so the FIN means "sent", as in any TCP half-close; each half
//!   closes on its own, so a half-closed connection stays half-closed end to end.
//! - **RST** from either end, once the half it reaches accepts it (RFC 9293 §3.10.7 with the
//!   exact-sequence rule of RFC 5961 §3.2: a blind RST only draws a challenge ACK), resets the
//!   other end at once and frees the flow: data still in the gateway's buffer is lost, and the
//!   sender has been told (by our ACKs) that it was delivered. That is the
//!   end-to-end-semantics cost of splitting, stated rather than hidden.
//! - **Handshake deadline**: both halves must be established by `connect_timeout` after the
//!   opener's SYN, or both ends get a RST and the flow is freed; so a SYN flood's half-open
//!   flows leave the table after `connect_timeout`.
//! - **Memory**: each half's receive buffer is `buffer_per_conn`, so each direction of a flow
//!   holds at most that much, and the window a half advertises falls to zero when its buffer
//!   is full (backpressure); a new connection is split only while `buffer_total` can cover
//!   the worst case of all split flows (2 × `buffer_per_conn` each), while fewer than
//!   `max_connections` flows are held and fewer than `max_embryonic` are still in their
//!   handshake. Beyond any of these, connections pass through unsplit (end to end, counted in
//!   `unsplit_over_limit` or `unsplit_embryonic`): the relay then behaves as if it were not
//!   there, which never breaks a connection, never amplifies a flood and keeps every bound
//!   strict; a listener's own defences (SYN cookies) see the SYNs the relay could not take.
//! - **Idle reaping** (`idle_timeout`, off by default): a flow with no packet from either end
//!   for that long is reset both ways (counted in `flows_reaped`) and freed. Reset rather than
//!   forgotten, because after it is gone every later segment would pass through unsplit with
//!   sequence numbers the other end never agreed to.
//! - **Flow table**: a [`FlowTable`] whose capacity is the smallest of the limits above, so
//!   the refusal is the table's. Timers of due flows only are run, and the buffer gauges and
//!   the embryonic count are kept by difference, so no call scans every flow.
//! - **Transparency**: the halves use the end hosts' addresses, so neither host can tell; the
//!   router must be on both directions' path (the scenario's routes ensure it).

use std::net::Ipv4Addr;

use serde::{Deserialize, Serialize};

use super::split_flow::{Side, SplitFlow};
use crate::flow::{FlowId, FlowKey, FlowTable};
use crate::tcp::{TcpConfig, TcpEndpoint};
use crate::time::{Duration, Instant};
use crate::units::ByteSize;
use crate::wire::{parse_packet, TcpFlags};
use crate::{Node, Packet, PortId, Transmit};

/// Settings of the split-TCP relay (`middlebox = { kind = "split_tcp", … }`).
#[derive(Clone, Debug, Deserialize, PartialEq, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct SplitConfig {
    /// Split only connections to these destination ports; empty: every TCP connection.
    pub ports: Vec<u16>,
    /// Gateway buffer per connection and direction; replaces `recv_buffer` of both halves.
    /// Default `"1MB"`.
    pub buffer_per_conn: ByteSize,
    /// Gateway buffer for all connections together. Default `"64MB"`.
    pub buffer_total: ByteSize,
    /// Give up (RST both ways) when the listener has not completed its handshake by then.
    /// Default `"75s"` (the common BSD connection-establishment timer).
    pub connect_timeout: Duration,
    /// TCP settings of the half that answers the opener (for a download: the terrestrial side).
    pub tcp_accept: TcpConfig,
    /// TCP settings of the half that opens toward the listener (for a download: the satellite
    /// side, e.g. a larger `send_buffer` and SACK).
    pub tcp_connect: TcpConfig,
    /// When the opener's SYN is answered: `"local"` (at once) or `"after_listener"` (once the
    /// listener's SYN-ACK has arrived). Default `"local"`.
    #[serde(skip_serializing_if = "Handshake::is_local")]
    pub handshake: Handshake,
    /// At most this many split connections at once; further ones pass through unsplit.
    /// Default: none (only `buffer_total` limits them).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_connections: Option<u32>,
    /// At most this many split connections still in their handshake (either half not yet
    /// established); further SYNs pass through unsplit. Default: none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_embryonic: Option<u32>,
    /// Reset (both ways) and free a split connection that has seen no packet from either end
    /// for this long. Default: none (never).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idle_timeout: Option<Duration>,
}

/// When the relay answers the opener's SYN (see the module doc).
#[derive(Clone, Copy, Debug, Default, Deserialize, Eq, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Handshake {
    /// At once, while the connect half opens its own connection (saves a round trip of
    /// handshake; a refusal reaches the opener as a RST after it was told "connected").
    #[default]
    Local,
    /// Only once the listener has accepted the connect half: refusals and unreachable
    /// listeners look as they would without a PEP.
    AfterListener,
}

impl Handshake {
    fn is_local(&self) -> bool {
        *self == Self::Local
    }
}

impl Default for SplitConfig {
    fn default() -> Self {
        Self {
            ports: Vec::new(),
            buffer_per_conn: ByteSize(1_000_000),
            buffer_total: ByteSize(64_000_000),
            connect_timeout: Duration::from_secs(75),
            tcp_accept: TcpConfig::default(),
            tcp_connect: TcpConfig::default(),
            handshake: Handshake::Local,
            max_connections: None,
            max_embryonic: None,
            idle_timeout: None,
        }
    }
}

impl SplitConfig {
    /// Check values a scenario could get wrong; the message starts with the key.
    pub fn validate(&self) -> Result<(), String> {
        // Each half is a TCP endpoint like a flow's: checked as a flow's `tcp` table is.
        for (k, tcp) in [
            ("tcp_accept", &self.tcp_accept),
            ("tcp_connect", &self.tcp_connect),
        ] {
            tcp.validate().map_err(|e| format!("{k}.{e}"))?;
        }
        let mss = u64::from(self.tcp_accept.mss.max(self.tcp_connect.mss));
        if self.buffer_per_conn.bytes() < mss {
            return Err(format!(
                "buffer_per_conn: {} bytes is less than one segment ({mss})",
                self.buffer_per_conn.bytes()
            ));
        }
        if self.buffer_total.bytes() < 2 * self.buffer_per_conn.bytes() {
            return Err(
                "buffer_total: must hold at least one connection (2 × buffer_per_conn)".into(),
            );
        }
        if self.connect_timeout == Duration::ZERO {
            return Err("connect_timeout: must be > 0".into());
        }
        if self.max_connections == Some(0) {
            return Err("max_connections: must be at least 1 (leave it out for no limit)".into());
        }
        if self.max_embryonic == Some(0) {
            return Err("max_embryonic: must be at least 1 (leave it out for no limit)".into());
        }
        if self.idle_timeout == Some(Duration::ZERO) {
            return Err("idle_timeout: must be > 0 (leave it out to never reap)".into());
        }
        Ok(())
    }
}

/// Counters of the relay.
#[derive(Clone, Copy, Debug, Default, Eq, PartialEq, Serialize)]
pub struct SplitStats {
    /// Connections split.
    pub flows_split: u64,
    /// Connections passed through unsplit because the table was full (`buffer_total` committed
    /// or `max_connections` reached).
    pub unsplit_over_limit: u64,
    /// Connections passed through unsplit because `max_embryonic` flows were in their
    /// handshake.
    pub unsplit_embryonic: u64,
    /// Split connections that ended in a RST (from an end, or the handshake deadline).
    pub flows_aborted: u64,
    /// Of `flows_aborted`: the listener refused or did not answer in time (the handshake
    /// deadline passed with either half not established).
    pub handshakes_failed: u64,
    /// Split connections reset both ways and freed after `idle_timeout` without a packet.
    pub flows_reaped: u64,
    /// RSTs an end sent that the half they reached did not accept (RFC 5961: not at the
    /// exact sequence number); the flow carried on.
    pub resets_ignored: u64,
    /// Split connections in their handshake now (a gauge).
    pub embryonic: u64,
    /// Packets forwarded untouched (not TCP, not split, not parseable).
    pub passed_through: u64,
    /// Bytes the gateway holds now, all flows and directions.
    pub buffer_bytes: u64,
    /// Largest `buffer_bytes` seen.
    pub max_buffer_bytes: u64,
    /// Largest buffer of one flow and direction seen.
    pub max_flow_buffer_bytes: u64,
    /// Real-bytes segments not sent because the relay did not hold their bytes (a bug if not 0).
    pub unsendable: u64,
}

/// A snapshot of one split connection (for time series: Karaliopoulos et al.'s Fig. 4).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SplitFlowInfo {
    /// Opener address and port.
    pub opener: (Ipv4Addr, u16),
    /// Listener address and port.
    pub listener: (Ipv4Addr, u16),
    /// Bytes held opener → listener, listener → opener.
    pub buffered: [u64; 2],
    /// Congestion window of the connect half (the gateway's satellite-side sender), bytes.
    pub connect_cwnd: u64,
    /// Bytes in flight of the connect half.
    pub connect_in_flight: u64,
    /// Window the connect half's peer advertises, bytes.
    pub connect_snd_wnd: u64,
}

/// How a split connection ended, for [`SplitEvent::Ended`].
#[derive(Clone, Copy, Debug, Eq, PartialEq)]
pub enum SplitEnd {
    /// Both halves closed (FIN both ways, everything acknowledged).
    Closed,
    /// A half was not established by the connect deadline, or the listener refused it.
    HandshakeFailed,
    /// Reset by either end or by the relay (retry limit, buffer limits).
    Aborted,
    /// Idle longer than `idle_timeout`: reset by the reaper.
    Reaped,
}

impl SplitEnd {
    /// The word a log line uses.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Closed => "closed",
            Self::HandshakeFailed => "handshake_failed",
            Self::Aborted => "aborted",
            Self::Reaped => "reaped",
        }
    }
}

/// A split connection opened or ended: what an operator's connection log shows. Recorded only
/// after [`SplitRelay::record_events`] (the simulator keeps none), read with
/// [`SplitRelay::poll_event`].
#[derive(Clone, Copy, Debug, Eq, PartialEq)]
pub enum SplitEvent {
    /// The opener's SYN was taken: the connection is split from now on.
    Split {
        at: Instant,
        opener: (Ipv4Addr, u16),
        listener: (Ipv4Addr, u16),
    },
    /// The connection left the table.
    Ended {
        at: Instant,
        opener: (Ipv4Addr, u16),
        listener: (Ipv4Addr, u16),
        how: SplitEnd,
        /// When it was split.
        since: Instant,
        /// Bytes relayed [opener → listener, listener → opener].
        bytes: [u64; 2],
    },
}

/// Events held for a reader that has not polled: beyond this many, further ones are counted
/// in [`SplitRelay::events_dropped`] and lost (a log must not grow without bound).
pub const SPLIT_EVENT_CAP: usize = 65_536;

/// A split connection and the bytes it held when last accounted.
#[derive(Clone, Debug)]
struct Relayed {
    flow: SplitFlow,
    /// Its share of `SplitRelay::buffered`: both directions, bytes.
    counted: u64,
    /// Counted in `SplitRelay::embryonic`.
    embryonic: bool,
    /// Last packet from either end (for `idle_timeout`).
    last_seen: Instant,
    /// Reset by the idle reaper (counted apart from aborts).
    reaped: bool,
    /// When it was split.
    since: Instant,
}

/// The split-TCP relay middlebox.
#[derive(Clone, Debug)]
pub struct SplitRelay {
    config: SplitConfig,
    /// Keyed by (opener, listener). Timers of flows due together run in key order.
    flows: FlowTable<Relayed>,
    /// Bytes held by all flows, as last accounted (the `buffer_bytes` gauge, kept by difference).
    buffered: u64,
    /// Flows in their handshake, as last accounted (kept by difference).
    embryonic: u64,
    /// Flows due in the current `handle_timeout` (kept to reuse its allocation).
    due: Vec<FlowId>,
    out: Vec<Packet>,
    sent: usize,
    next_id: u64,
    stats: SplitStats,
    iss: u32,
    /// Connection events not yet polled, at most `event_cap`; `None` when nobody asked.
    events: Option<std::collections::VecDeque<SplitEvent>>,
    event_cap: usize,
    events_dropped: u64,
}

/// Packet ids of middlebox-made packets start here, apart from hosts' ids.
pub(crate) const ID_BASE: u64 = 1 << 60;

impl SplitRelay {
    /// A relay with no connections.
    pub fn new(config: SplitConfig) -> Self {
        let per_flow = 2 * config.buffer_per_conn.bytes();
        let capacity = config
            .buffer_total
            .bytes()
            .checked_div(per_flow)
            .unwrap_or(u64::MAX)
            .min(config.max_connections.map_or(u64::MAX, u64::from));
        Self {
            flows: FlowTable::new(usize::try_from(capacity).unwrap_or(usize::MAX), None),
            buffered: 0,
            embryonic: 0,
            due: Vec::new(),
            config,
            out: Vec::new(),
            sent: 0,
            next_id: ID_BASE,
            stats: SplitStats::default(),
            iss: 0x5eed_0000,
            events: None,
            event_cap: 0,
            events_dropped: 0,
        }
    }

    /// Counters (buffer fields as of the last input).
    pub fn stats(&self) -> SplitStats {
        self.stats
    }

    /// Split connections held now (the table's size; O(1), for a gauge).
    pub fn connections(&self) -> usize {
        self.flows.len()
    }

    /// Counters of the flow table, among them the entries timeouts visited.
    pub fn flow_table_stats(&self) -> crate::flow::FlowTableStats {
        self.flows.stats()
    }

    /// The split connections now open.
    pub fn flows(&self) -> impl Iterator<Item = SplitFlowInfo> + '_ {
        self.flows.iter_sorted().map(|(_, r)| {
            let f = &r.flow;
            let (opener, listener) = f.ends();
            let c = &f.connect.ep;
            SplitFlowInfo {
                opener,
                listener,
                buffered: f.buffered(),
                connect_cwnd: c.cwnd(),
                connect_in_flight: c.bytes_in_flight(),
                connect_snd_wnd: c.snd_wnd(),
            }
        })
    }

    /// The relay's own senders toward the listeners (the connect halves: for a download, the
    /// satellite leg), each with the ends (opener, listener) of its connection, so that a
    /// recorder can report the second leg of a split flow beside the first.
    pub fn connect_senders(
        &self,
    ) -> impl Iterator<Item = ((Ipv4Addr, u16), (Ipv4Addr, u16), &TcpEndpoint)> + '_ {
        self.flows.iter_sorted().map(|(k, r)| {
            let (o, l) = ((k.src, k.src_port), (k.dst, k.dst_port));
            (o, l, &r.flow.connect.ep)
        })
    }

    fn open(
        &mut self,
        now: Instant,
        key: FlowKey,
        syn: &crate::wire::TcpRepr,
        real_bytes: bool,
        syn_payload: Option<&[u8]>,
    ) -> Option<FlowId> {
        if !self.config.ports.is_empty() && !self.config.ports.contains(&key.dst_port) {
            return None;
        }
        // Full table: `buffer_total` cannot cover another 2 × `buffer_per_conn`, or
        // `max_connections` are held.
        if self.flows.is_full() {
            self.stats.unsplit_over_limit += 1;
            return None;
        }
        if self
            .config
            .max_embryonic
            .is_some_and(|m| self.embryonic >= u64::from(m))
        {
            self.stats.unsplit_embryonic += 1;
            return None;
        }
        let per_conn = self.config.buffer_per_conn;
        let mut ca = self.config.tcp_accept.clone();
        ca.recv_buffer = per_conn;
        let mut cc = self.config.tcp_connect.clone();
        cc.recv_buffer = per_conn;
        // Distinct initial sequence numbers per half and flow (RFC 9293 §3.4.1 wants them
        // unpredictable; a deterministic simulator wants them reproducible).
        self.iss = self.iss.wrapping_mul(1_103_515_245).wrapping_add(12_345);
        let (opener, listener) = ((key.src, key.src_port), (key.dst, key.dst_port));
        let defer = self.config.handshake == Handshake::AfterListener;
        // A live gateway's connect half opens with the opener's own initial sequence number:
        // the opener's stack chose it per RFC 6528 (a clock plus a hash of the ends), so a
        // listener that still holds the same ends in TIME-WAIT takes the new SYN exactly as it
        // would without a PEP (Linux accepts a SYN in TIME-WAIT only above the old sequence
        // space; the relay's own numbers are not, and the listener then refuses it).
        let connect_iss = if defer {
            syn.seq.0
        } else {
            self.iss.rotate_left(16)
        };
        let accept = TcpEndpoint::new(ca, listener, opener, self.iss);
        let mut connect = TcpEndpoint::new(cc, opener, listener, connect_iss);
        if defer {
            // And with the opener's timestamp clock, for the listener's PAWS check in TIME-WAIT.
            if let Some((tsval, _)) = syn.timestamp {
                connect.set_ts_origin(now, tsval);
            }
        }
        let deadline = now + self.config.connect_timeout;
        let flow = SplitFlow::new(
            now,
            syn,
            (accept, connect),
            deadline,
            defer,
            real_bytes,
            syn_payload,
        );
        let relayed = Relayed {
            flow,
            counted: 0,
            embryonic: false,
            last_seen: now,
            reaped: false,
            since: now,
        };
        let id = self.flows.insert(now, key, relayed).ok()?;
        self.stats.flows_split += 1;
        self.record(SplitEvent::Split {
            at: now,
            opener: (key.src, key.src_port),
            listener: (key.dst, key.dst_port),
        });
        Some(id)
    }

    /// Keep connection events from now on, at most `cap` unread (a daemon's log, with
    /// [`SPLIT_EVENT_CAP`]); the simulator does not call it.
    pub fn record_events(&mut self, cap: usize) {
        self.events.get_or_insert_with(Default::default);
        self.event_cap = cap;
    }

    /// The oldest connection event not yet read.
    pub fn poll_event(&mut self) -> Option<SplitEvent> {
        self.events.as_mut()?.pop_front()
    }

    /// Events lost because the cap's worth waited unread.
    pub fn events_dropped(&self) -> u64 {
        self.events_dropped
    }

    fn record(&mut self, e: SplitEvent) {
        if let Some(q) = self.events.as_mut() {
            if q.len() < self.event_cap {
                q.push_back(e);
            } else {
                self.events_dropped += 1;
            }
        }
    }

    /// Forget flow `id` if it has finished.
    fn after(&mut self, now: Instant, id: FlowId) {
        let r = &self.flows[id];
        if r.flow.is_finished() {
            let how = if r.reaped {
                self.stats.flows_reaped += 1;
                SplitEnd::Reaped
            } else if r.flow.aborted {
                self.stats.flows_aborted += 1;
                self.stats.handshakes_failed += u64::from(r.flow.handshake_failed);
                if r.flow.handshake_failed {
                    SplitEnd::HandshakeFailed
                } else {
                    SplitEnd::Aborted
                }
            } else {
                SplitEnd::Closed
            };
            let (opener, listener) = r.flow.ends();
            let ended = SplitEvent::Ended {
                at: now,
                opener,
                listener,
                how,
                since: r.since,
                bytes: r.flow.relayed(),
            };
            self.record(ended);
            if let Some((_, r)) = self.flows.remove(id) {
                self.buffered -= r.counted;
                self.embryonic -= u64::from(r.embryonic);
                self.stats.embryonic = self.embryonic;
            }
        }
    }

    /// After flow `id` was handled: its counters and buffer into the totals, its next deadline
    /// into the index.
    fn account(&mut self, id: FlowId) {
        let r = &mut self.flows[id];
        self.stats.unsendable += std::mem::take(&mut r.flow.unsendable);
        self.stats.resets_ignored += std::mem::take(&mut r.flow.resets_ignored);
        let b = r.flow.buffered();
        self.stats.max_flow_buffer_bytes = self.stats.max_flow_buffer_bytes.max(b[0]).max(b[1]);
        self.buffered = self.buffered - r.counted + b[0] + b[1];
        r.counted = b[0] + b[1];
        let embryonic = r.flow.is_embryonic();
        self.embryonic = self.embryonic - u64::from(r.embryonic) + u64::from(embryonic);
        r.embryonic = embryonic;
        let idle = self.config.idle_timeout.map(|d| r.last_seen + d);
        let at = [r.flow.poll_timeout(), idle].into_iter().flatten().min();
        self.flows.set_deadline(id, at);
    }

    /// The buffer gauges as of now (after the flows handled by this input were accounted).
    fn publish_buffer_stats(&mut self) {
        self.stats.buffer_bytes = self.buffered;
        self.stats.max_buffer_bytes = self.stats.max_buffer_bytes.max(self.buffered);
        self.stats.embryonic = self.embryonic;
    }
}

impl Node for SplitRelay {
    fn handle_packet(&mut self, now: Instant, _port: PortId, pkt: Packet) {
        let Ok((ip, seg)) = parse_packet(&pkt) else {
            self.stats.passed_through += 1;
            self.out.push(pkt);
            return;
        };
        // Header bytes past the TCP header are payload too (`parse_packet` counts them): give the
        // endpoint the whole segment's bytes.
        let joined;
        let payload = match pkt.payload() {
            Some(p) if p.len() != seg.payload_len as usize => {
                let tail = (seg.payload_len as usize).saturating_sub(p.len());
                let tail_at = pkt.header_len().saturating_sub(tail);
                joined = [pkt.header().get(tail_at..).unwrap_or(&[]), p].concat();
                Some(&joined[..])
            }
            p => p,
        };
        let key = FlowKey::of(&ip, &seg);
        let (id, side) = if let Some(id) = self.flows.id(&key) {
            (id, Side::Accept)
        } else if let Some(id) = self.flows.id(&key.reversed()) {
            (id, Side::Connect)
        } else if let Some(id) = (seg.flags.contains(TcpFlags::SYN) && seg.ack.is_none())
            .then(|| self.open(now, key, &seg, pkt.has_real_payload(), payload))
            .flatten()
        {
            // The SYN went to the new accept half in `open`.
            let mut out = std::mem::take(&mut self.out);
            self.flows[id].flow.handle_timeout(now, &mut out);
            self.out = out;
            self.account(id);
            self.publish_buffer_stats();
            return;
        } else {
            self.stats.passed_through += 1;
            self.out.push(pkt);
            return;
        };
        let mut out = std::mem::take(&mut self.out);
        let r = &mut self.flows[id];
        r.last_seen = now;
        r.flow.handle_segment(now, side, &seg, payload, &mut out);
        self.out = out;
        self.account(id);
        self.publish_buffer_stats();
        self.after(now, id);
    }

    fn handle_timeout(&mut self, now: Instant) {
        let mut due = std::mem::take(&mut self.due);
        self.flows.take_due(now, &mut due);
        let mut out = std::mem::take(&mut self.out);
        let idle = self.config.idle_timeout;
        for &id in &due {
            let r = &mut self.flows[id];
            if idle.is_some_and(|d| now >= r.last_seen + d) {
                r.reaped = true;
                r.flow.abort(&mut out);
            } else {
                r.flow.handle_timeout(now, &mut out);
            }
            self.account(id);
        }
        self.out = out;
        self.publish_buffer_stats();
        for &id in &due {
            self.after(now, id);
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
        self.flows.poll_timeout()
    }
}
