//! The split-TCP relay as a middlebox: a flow table keyed by the 4-tuple, one [`SplitFlow`]
//! per split connection (RFC 3135 §2.1.1, "split connections"; Karaliopoulos et al.'s
//! "split Reno–SACK").
//!
//! Decisions, each with its reason:
//!
//! - **Handshake: local SYN-ACK.** The accept half answers the opener's SYN at once while the
//!   connect half opens its own connection to the listener. This saves the opener one satellite
//!   round trip, which is what a PEP is for; the price is that the opener is told "connected"
//!   before the listener has said anything. If the listener refuses (RST) or does not answer
//!   within `connect_timeout`, the opener gets a RST — the closest truthful thing it can still
//!   be told (RFC 3135 §4.2 lists this loss of end-to-end semantics).
//! - **FIN** is passed on only after every byte before it has been handed to the other half;
//!   each half closes on its own, so a half-closed connection stays half-closed end to end.
//! - **RST** from either end resets the other end at once and frees the flow: data still in the
//!   gateway's buffer is lost, and the sender has been told (by our ACKs) that it was
//!   delivered. That is the end-to-end-semantics cost of splitting, stated rather than hidden.
//! - **Memory**: each half's receive buffer is `buffer_per_conn`, so each direction of a flow
//!   holds at most that much; a new connection is split only while `buffer_total` can cover
//!   the worst case of all split flows (2 × `buffer_per_conn` each). Beyond that connections
//!   pass through unsplit (end to end, counted in `unsplit_over_limit`), which never breaks
//!   them and keeps the bound strict.
//! - **Flow table**: a [`FlowTable`] whose capacity is what `buffer_total` covers
//!   (`buffer_total / (2 × buffer_per_conn)`), so the refusal above is the table's; no idle
//!   expiry, since each half's own timers (retransmission, connect timeout) end a dead
//!   connection. Timers of due flows only are run, and the buffer gauges are kept by
//!   difference, so no call scans every flow.
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
        }
    }
}

impl SplitConfig {
    /// Check values a scenario could get wrong; the message starts with the key.
    pub fn validate(&self) -> Result<(), String> {
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
        if self.tcp_accept.mss == 0 || self.tcp_connect.mss == 0 {
            return Err("tcp_accept.mss / tcp_connect.mss: must be at least 1".into());
        }
        Ok(())
    }
}

/// Counters of the relay.
#[derive(Clone, Copy, Debug, Default, Eq, PartialEq, Serialize)]
pub struct SplitStats {
    /// Connections split.
    pub flows_split: u64,
    /// Connections passed through unsplit because `buffer_total` was committed.
    pub unsplit_over_limit: u64,
    /// Split connections that ended in a RST (from an end, or the connect timeout).
    pub flows_aborted: u64,
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

/// A split connection and the bytes it held when last accounted.
#[derive(Clone, Debug)]
struct Relayed {
    flow: SplitFlow,
    /// Its share of `SplitRelay::buffered`: both directions, bytes.
    counted: u64,
}

/// The split-TCP relay middlebox.
#[derive(Clone, Debug)]
pub struct SplitRelay {
    config: SplitConfig,
    /// Keyed by (opener, listener). Timers of flows due together run in key order.
    flows: FlowTable<Relayed>,
    /// Bytes held by all flows, as last accounted (the `buffer_bytes` gauge, kept by difference).
    buffered: u64,
    /// Flows due in the current `handle_timeout` (kept to reuse its allocation).
    due: Vec<FlowId>,
    out: Vec<Packet>,
    sent: usize,
    next_id: u64,
    stats: SplitStats,
    iss: u32,
}

/// Packet ids of middlebox-made packets start here, apart from hosts' ids.
pub(crate) const ID_BASE: u64 = 1 << 60;

impl SplitRelay {
    /// A relay with no connections.
    pub fn new(config: SplitConfig) -> Self {
        let per_flow = 2 * config.buffer_per_conn.bytes();
        let capacity = config.buffer_total.bytes().checked_div(per_flow);
        Self {
            flows: FlowTable::new(capacity.map_or(usize::MAX, |c| c as usize), None),
            buffered: 0,
            due: Vec::new(),
            config,
            out: Vec::new(),
            sent: 0,
            next_id: ID_BASE,
            stats: SplitStats::default(),
            iss: 0x5eed_0000,
        }
    }

    /// Counters (buffer fields as of the last input).
    pub fn stats(&self) -> SplitStats {
        self.stats
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
        // Full table: `buffer_total` cannot cover another 2 × `buffer_per_conn`.
        if self.flows.is_full() {
            self.stats.unsplit_over_limit += 1;
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
        let accept = TcpEndpoint::new(ca, listener, opener, self.iss);
        let connect = TcpEndpoint::new(cc, opener, listener, self.iss.rotate_left(16));
        let deadline = now + self.config.connect_timeout;
        let flow = SplitFlow::new(now, syn, accept, connect, deadline, real_bytes, syn_payload);
        let id = self
            .flows
            .insert(now, key, Relayed { flow, counted: 0 })
            .ok()?;
        self.stats.flows_split += 1;
        Some(id)
    }

    /// Forget flow `id` if it has finished.
    fn after(&mut self, id: FlowId) {
        let f = &self.flows[id].flow;
        if f.is_finished() {
            if f.aborted {
                self.stats.flows_aborted += 1;
            }
            if let Some((_, r)) = self.flows.remove(id) {
                self.buffered -= r.counted;
            }
        }
    }

    /// After flow `id` was handled: its counters and buffer into the totals, its next deadline
    /// into the index.
    fn account(&mut self, id: FlowId) {
        let r = &mut self.flows[id];
        self.stats.unsendable += std::mem::take(&mut r.flow.unsendable);
        let b = r.flow.buffered();
        self.stats.max_flow_buffer_bytes = self.stats.max_flow_buffer_bytes.max(b[0]).max(b[1]);
        self.buffered = self.buffered - r.counted + b[0] + b[1];
        r.counted = b[0] + b[1];
        let at = r.flow.poll_timeout();
        self.flows.set_deadline(id, at);
    }

    /// The buffer gauges as of now (after the flows handled by this input were accounted).
    fn publish_buffer_stats(&mut self) {
        self.stats.buffer_bytes = self.buffered;
        self.stats.max_buffer_bytes = self.stats.max_buffer_bytes.max(self.buffered);
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
        self.flows[id]
            .flow
            .handle_segment(now, side, &seg, payload, &mut out);
        self.out = out;
        self.account(id);
        self.publish_buffer_stats();
        self.after(id);
    }

    fn handle_timeout(&mut self, now: Instant) {
        let mut due = std::mem::take(&mut self.due);
        self.flows.take_due(now, &mut due);
        let mut out = std::mem::take(&mut self.out);
        for &id in &due {
            self.flows[id].flow.handle_timeout(now, &mut out);
            self.account(id);
        }
        self.out = out;
        self.publish_buffer_stats();
        for &id in &due {
            self.after(id);
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
