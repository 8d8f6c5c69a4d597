//! TCP-SuperCharger (J. Y.-B. Lee, P. T.-S. Yum, W.-S. Wan, "TCP-SuperCharger: A New Approach
//! to High-Throughput Satellite Data Transfer"): a gateway that lets a sender send more than the
//! receiver's advertised window, by forecasting when the receiver's buffer will have room.
//!
//! The gateway sits in front of the satellite hop. For every connection whose handshake it sees:
//!
//! - it estimates the gateway–receiver RTT `D` from the segments it forwards and their ACKs
//!   (eqs. 1–2) and the receiver's processing rate `R` from successive advertised windows
//!   (eq. 3; [`estimator`] says how we read it);
//! - it holds the sender's data segments in a FIFO and lets each leave at the first instant at
//!   which the forecast receiver buffer availability B(t) of eq. (4) stays non-negative when the
//!   segment arrives (the `flow` module holds the forecast);
//! - it rewrites the window field of the receiver's ACKs to a *virtual window*: what the
//!   receiver has advertised, or more — up to the bytes the gateway has forwarded plus the room
//!   left in its own buffer for this flow — so the sender is held by the gateway's buffer, not by
//!   the receiver's 64 KB (backpressure: a full gateway buffer closes the virtual window);
//! - so that a virtual window above 64 KB can be expressed, it raises the window-scale shift the
//!   receiver announces in its handshake to `virtual_wscale` (when both ends offer scaling) and
//!   translates every window field of that receiver from its real shift to the virtual one;
//! - when the receiver offers no scaling (the paper's unmodified receivers), it negotiates
//!   scaling with the sender on the receiver's behalf (RFC 7323 §2.2, `add_wscale`): it adds a
//!   Window Scale option announcing `virtual_wscale` to the receiver's SYN-ACK (only if the
//!   sender's SYN offered scaling), or to the receiver's SYN (and turns the sender's answering
//!   option into NOPs, so the receiver never sees scaling agreed to). From then on the receiver's
//!   unscaled windows are scaled toward the sender by that shift, rounding down, and the
//!   sender's scaled windows are expanded toward the receiver (capped at 65 535).
//!
//! Sequence and acknowledgement numbers are never changed. Non-TCP packets, connections whose
//! handshake the gateway did not see, and connections beyond `max_flows` pass untouched.
//!
//! What is left out: a handshake whose options leave no room for the Window Scale option (40
//! bytes full) or a sender that offers no scaling keeps the virtual window below 64 KB
//! (`wscale_no_room` counts the first); retransmissions of bytes already forwarded pass at once rather than in FIFO order
//! (they use no new receiver buffer); a FIN or RST forgets the connection.
//!
//! Flows live in a [`FlowTable`] of `max_flows` (its refusals are `flows_refused`); a flow's
//! deadline is the release time of its queue head, which only its own packets and releases can
//! move, so an input re-evaluates the flow it belongs to and the flows due, not every flow. A
//! flow ends with a FIN in both directions, a RST, or `idle_timeout` without a packet in either
//! direction (`flows_idle_expired`; what it still held goes out first, in order). Without the
//! idle expiry, connections that vanish without FIN or RST (a receiver that lost power, a NAT
//! that timed out) would fill the table for good and every later connection would pass
//! unaccelerated.
//!
//! Window probes: a sender facing a closed *virtual* window probes with one byte at `snd_una`,
//! which the gateway has already forwarded, so the probe passes at once like any
//! retransmission, and the receiver acknowledges it as old data. The gateway itself never probes.

pub mod estimator;
mod flow;

use std::collections::VecDeque;
use std::net::Ipv4Addr;

use serde::{Deserialize, Serialize};

use self::flow::{Flow, Held};
use crate::flow::{FlowId, FlowKey, FlowTable};
use crate::node::{Node, Packet, PortId, Transmit};
use crate::time::{Duration, Instant};
use crate::units::ByteSize;
use crate::wire::{
    add_wscale_option, parse_packet, AddOptionError, TcpFlags, TcpIpv4View, TcpRepr,
};

/// Settings of the TCP-SuperCharger middlebox (`middlebox = { kind = "supercharger", … }`).
#[derive(Clone, Debug, Deserialize, PartialEq, Serialize)]
#[serde(deny_unknown_fields, default)]
#[non_exhaustive]
pub struct SuperChargerConfig {
    /// Arrival port (index of the router's incoming link, scenario order) of packets from the
    /// receivers' side, i.e. the satellite hop. Data arriving on any other port is managed.
    /// Default: 1.
    pub satellite_port: u16,
    /// Weight α of the old value in the RTT and rate averages (eq. 2). Default: 0.9.
    pub alpha: f64,
    /// k: ACKs per rate-estimation window (eq. 3). Default: 8.
    pub rate_window_acks: u32,
    /// Fraction of the rate estimate the forecast uses while the receiver is backlogged.
    /// Default: 0.95.
    pub rate_headroom: f64,
    /// Spare receiver buffer the forecast keeps, in segments (covers the receiver's
    /// silly-window avoidance and ACK timing). Default: 4.
    pub safety_segments: u32,
    /// Most bytes held for one connection. Default: `"8MB"`.
    pub flow_buffer: ByteSize,
    /// Most bytes held for all connections together. Default: `"256MB"`.
    pub total_buffer: ByteSize,
    /// Most connections managed at once; later ones pass untouched. Default: 4096.
    pub max_flows: u32,
    /// A connection without a packet in either direction for this long is forgotten (what it
    /// held is released first, in order). Default: `"120s"`.
    pub idle_timeout: Duration,
    /// Window-scale shift announced to senders on the receivers' behalf (0–14). Default: 8
    /// (virtual windows up to 16 MB).
    pub virtual_wscale: u8,
    /// Negotiate window scaling with the sender on the behalf of a receiver that offers none
    /// (adding the option to its handshake). Default: true.
    pub add_wscale: bool,
}

impl Default for SuperChargerConfig {
    fn default() -> Self {
        Self {
            satellite_port: 1,
            alpha: 0.9,
            rate_window_acks: 8,
            rate_headroom: 0.95,
            safety_segments: 4,
            flow_buffer: ByteSize(8_000_000),
            total_buffer: ByteSize(256_000_000),
            max_flows: 4096,
            idle_timeout: Duration::from_secs(120),
            virtual_wscale: 8,
            add_wscale: true,
        }
    }
}

impl SuperChargerConfig {
    /// Check values a scenario could get wrong; the message starts with the key.
    pub fn validate(&self) -> Result<(), String> {
        if !(0.0..1.0).contains(&self.alpha) {
            return Err(format!("alpha: must be in [0, 1), got {}", self.alpha));
        }
        if self.rate_window_acks == 0 {
            return Err("rate_window_acks: must be at least 1".to_owned());
        }
        if !(self.rate_headroom > 0.0 && self.rate_headroom <= 1.0) {
            return Err(format!(
                "rate_headroom: must be in (0, 1], got {}",
                self.rate_headroom
            ));
        }
        if self.flow_buffer.bytes() == 0 {
            return Err("flow_buffer: must be at least 1 byte (e.g. \"8MB\")".to_owned());
        }
        if self.total_buffer < self.flow_buffer {
            return Err("total_buffer: must be at least flow_buffer".to_owned());
        }
        if self.idle_timeout == Duration::ZERO {
            return Err("idle_timeout: must be > 0".to_owned());
        }
        if self.virtual_wscale > 14 {
            return Err(format!(
                "virtual_wscale: at most 14 (RFC 7323 §2.3), got {}",
                self.virtual_wscale
            ));
        }
        Ok(())
    }
}

/// Counters of a [`SuperCharger`].
#[derive(Clone, Copy, Debug, Default, Eq, PartialEq, Serialize)]
pub struct SuperChargerStats {
    /// Connections taken under management (handshake seen).
    pub flows_managed: u64,
    /// Connections left alone because `max_flows` were managed.
    pub flows_refused: u64,
    /// Connections forgotten after `idle_timeout` without a packet.
    pub flows_idle_expired: u64,
    /// Packets passed untouched because they are not IPv4/TCP or did not parse.
    pub passed_other: u64,
    /// Data segments held in a flow queue.
    pub segments_held: u64,
    /// Held segments released toward the receiver.
    pub segments_released: u64,
    /// Retransmissions of bytes already forwarded, passed at once.
    pub retransmissions_passed: u64,
    /// Retransmissions of bytes still held, dropped (the held copy goes out).
    pub duplicates_dropped: u64,
    /// Segments dropped because a buffer limit would have been exceeded (a sender that ignored
    /// the virtual window).
    pub buffer_drops: u64,
    /// ACK window fields rewritten.
    pub windows_rewritten: u64,
    /// Handshake window-scale options rewritten.
    pub wscale_rewritten: u64,
    /// Window-scale options added on a receiver's behalf.
    pub wscale_added: u64,
    /// Window-scale options that could not be added: the handshake's options were full.
    pub wscale_no_room: u64,
    /// Window fields of the sender expanded toward a receiver that reads them unscaled.
    pub sender_windows_rewritten: u64,
    /// Most bytes held at once, all flows.
    pub max_held_bytes: u64,
}

/// What the gateway currently believes about one connection (for traces and tests).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FlowEstimate {
    /// Sender address and port.
    pub sender: (Ipv4Addr, u16),
    /// Receiver address and port.
    pub receiver: (Ipv4Addr, u16),
    /// Smoothed gateway–receiver RTT (eq. 2).
    pub rtt: Option<Duration>,
    /// Receiver processing rate estimate, bytes per second (eq. 3).
    pub rate: Option<f64>,
    /// Bytes held.
    pub held_bytes: u64,
    /// Largest window the receiver advertised (bytes, scaled).
    pub receiver_max_window: u64,
}

/// The TCP-SuperCharger gateway: a [`Node`] for a router's forwarding path.
///
/// - Getters: [`stats`](Self::stats), [`estimates`](Self::estimates),
///   [`held_bytes`](Self::held_bytes).
/// - Inputs: [`Node::handle_packet`] (the arrival port tells the satellite side, see
///   [`SuperChargerConfig::satellite_port`]), [`Node::handle_timeout`].
/// - Outputs: [`Node::poll_transmit`] (its port is meaningless: the router routes by address),
///   [`Node::poll_timeout`] (the next release of a held segment).
#[derive(Debug)]
pub struct SuperCharger {
    config: SuperChargerConfig,
    /// Keyed by the data direction (sender → receiver).
    flows: FlowTable<Flow>,
    /// Flows to re-evaluate in the current input (kept to reuse its allocation).
    due: Vec<FlowId>,
    out: VecDeque<Packet>,
    held: u64,
    stats: SuperChargerStats,
}

impl Clone for SuperCharger {
    fn clone(&self) -> Self {
        // Middleboxes are cloned only before a run (building topologies); held state is empty.
        Self::new(self.config.clone())
    }
}

impl SuperCharger {
    /// A gateway with no connections.
    pub fn new(config: SuperChargerConfig) -> Self {
        Self {
            flows: FlowTable::new(config.max_flows as usize, Some(config.idle_timeout)),
            due: Vec::new(),
            config,
            out: VecDeque::new(),
            held: 0,
            stats: SuperChargerStats::default(),
        }
    }

    /// Counters.
    pub fn stats(&self) -> SuperChargerStats {
        SuperChargerStats {
            flows_idle_expired: self.flows.stats().idle_expired,
            ..self.stats
        }
    }

    /// Bytes held for all connections.
    pub fn held_bytes(&self) -> u64 {
        self.held
    }

    /// Connections managed now (at most `max_flows`).
    pub fn flow_count(&self) -> usize {
        self.flows.len()
    }

    /// Counters of the flow table, among them the entries inputs and timeouts visited.
    pub fn flow_table_stats(&self) -> crate::flow::FlowTableStats {
        self.flows.stats()
    }

    /// The estimates of every managed connection, in address order.
    pub fn estimates(&self) -> Vec<FlowEstimate> {
        self.flows
            .iter_sorted()
            .map(|(k, f)| FlowEstimate {
                sender: (k.src, k.src_port),
                receiver: (k.dst, k.dst_port),
                rtt: f.rtt().srtt(),
                rate: f.rate().rate(),
                held_bytes: f.queued_bytes,
                receiver_max_window: f.rate().max_window(),
            })
            .collect()
    }

    fn pass(&mut self, pkt: Packet) {
        self.out.push_back(pkt);
    }

    fn on_sender_segment(&mut self, now: Instant, tcp: &TcpRepr, key: FlowKey, mut pkt: Packet) {
        let syn = tcp.flags.contains(TcpFlags::SYN);
        if syn && tcp.ack.is_none() {
            match self.flows.get_mut(&key) {
                // A retransmitted SYN: its RTT sample would be ambiguous (Karn).
                Some(f) => f.syn_at = None,
                None => {
                    let mut f = Flow::new(&self.config, tcp.seq);
                    f.sender_ws = Some(tcp.window_scale.is_some());
                    f.sender_shift = tcp.window_scale.unwrap_or(0).min(14);
                    f.syn_at = Some(now);
                    match self.flows.insert(now, key, f) {
                        Ok(_) => self.stats.flows_managed += 1,
                        Err(_) => self.stats.flows_refused += 1,
                    }
                }
            }
            return self.pass(pkt);
        }
        let Some(flow) = self.flows.get_mut(&key) else {
            return self.pass(pkt);
        };
        if syn {
            // The sender answers a receiver's SYN (the paper's receiver-initiated transfer).
            flow.set_isn(tcp.seq);
            flow.sender_ws = Some(tcp.window_scale.is_some());
            if let (Some(r), Some(_)) = (flow.receiver_ws, tcp.window_scale) {
                flow.rcv_shift = r;
                flow.virt_shift = self.config.virtual_wscale.max(r);
            } else if let (true, Some(s)) = (flow.ws_added, tcp.window_scale) {
                // The sender agreed to the scaling offered on the receiver's behalf; the
                // receiver offered none, so it must not see the option (RFC 7323 §2.2).
                if let Ok(mut v) = TcpIpv4View::new_checked(pkt.header_mut()) {
                    v.remove_wscale_option();
                }
                flow.sender_shift = s.min(14);
                flow.virt_shift = self.config.virtual_wscale;
                flow.on_behalf = true;
            }
            let window = flow.pending_window;
            flow.on_receiver_handshake(now, window);
            return self.pass(pkt);
        }
        if flow.on_behalf {
            // The sender scales its windows, the receiver reads them as they are.
            let wide = (u32::from(tcp.window) << flow.sender_shift).min(65_535) as u16;
            if wide != tcp.window {
                if let Ok(mut view) = TcpIpv4View::new_checked(pkt.header_mut()) {
                    view.set_window(wide);
                    self.stats.sender_windows_rewritten += 1;
                }
            }
        }
        if tcp.flags.contains(TcpFlags::RST) {
            self.remove(key);
            return self.pass(pkt);
        }
        let fin = tcp.flags.contains(TcpFlags::FIN);
        let len = tcp.payload_len;
        if len == 0 && !fin {
            return self.pass(pkt);
        }
        let start = flow.offset(tcp.seq);
        let end = start + u64::from(len);
        flow.mss = flow.mss.max(u64::from(len));
        if len > 0 && end <= flow.fwd_nxt {
            flow.forget_samples();
            self.stats.retransmissions_passed += 1;
            return self.pass(pkt);
        }
        if len > 0 && end <= flow.rcvd_nxt {
            self.stats.duplicates_dropped += 1;
            return;
        }
        let over_flow = flow.queued_bytes + u64::from(len) > self.config.flow_buffer.bytes();
        let over_total = self.held + u64::from(len) > self.config.total_buffer.bytes();
        if len > 0 && (over_flow || over_total) {
            self.stats.buffer_drops += 1;
            return;
        }
        flow.fin_fwd |= fin;
        flow.rcvd_nxt = flow.rcvd_nxt.max(end);
        flow.queued_bytes += u64::from(len);
        flow.queue.push_back(Held { pkt, end, len });
        self.held += u64::from(len);
        self.stats.segments_held += 1;
        self.stats.max_held_bytes = self.stats.max_held_bytes.max(self.held);
    }

    fn on_receiver_segment(&mut self, now: Instant, tcp: &TcpRepr, key: FlowKey, mut pkt: Packet) {
        let syn = tcp.flags.contains(TcpFlags::SYN);
        let virtual_wscale = self.config.virtual_wscale;
        let add_wscale = self.config.add_wscale;
        if syn && tcp.ack.is_none() {
            // The receiver opens: remember its window and scale until the sender answers.
            if self.flows.id(&key).is_none() {
                if self
                    .flows
                    .insert(now, key, Flow::new(&self.config, tcp.seq))
                    .is_err()
                {
                    self.stats.flows_refused += 1;
                    return self.pass(pkt);
                }
                self.stats.flows_managed += 1;
            }
            if let Some(f) = self.flows.get_mut(&key) {
                f.receiver_ws = tcp.window_scale;
                f.pending_window = u64::from(tcp.window);
            }
            if let Some(r) = tcp.window_scale {
                if rewrite_wscale(&mut pkt, virtual_wscale.max(r)) {
                    // A SYN may carry data (TCP Fast Open): the rewrite summed the header only.
                    crate::wire::add_payload_to_tcp_checksum(&mut pkt);
                    self.stats.wscale_rewritten += 1;
                }
            } else if add_wscale && self.add_wscale(&mut pkt, virtual_wscale) {
                if let Some(f) = self.flows.get_mut(&key) {
                    f.ws_added = true;
                }
            }
            return self.pass(pkt);
        }
        let Some(flow) = self.flows.get_mut(&key) else {
            return self.pass(pkt);
        };
        if syn {
            flow.receiver_ws = tcp.window_scale;
            if let (Some(r), Some(true)) = (tcp.window_scale, flow.sender_ws) {
                flow.rcv_shift = r;
                flow.virt_shift = virtual_wscale.max(r);
                if rewrite_wscale(&mut pkt, flow.virt_shift) {
                    crate::wire::add_payload_to_tcp_checksum(&mut pkt);
                    self.stats.wscale_rewritten += 1;
                }
            }
            let on_behalf =
                add_wscale && tcp.window_scale.is_none() && flow.sender_ws == Some(true);
            if on_behalf && self.add_wscale(&mut pkt, virtual_wscale) {
                if let Some(flow) = self.flows.get_mut(&key) {
                    flow.rcv_shift = 0;
                    flow.virt_shift = virtual_wscale;
                    flow.on_behalf = true;
                }
            }
            // Windows in SYN segments are never scaled (RFC 7323 §2.2).
            if let Some(flow) = self.flows.get_mut(&key) {
                flow.on_receiver_handshake(now, u64::from(tcp.window));
            }
            return self.pass(pkt);
        }
        if tcp.flags.contains(TcpFlags::RST) {
            self.remove(key);
            return self.pass(pkt);
        }
        flow.fin_rev |= tcp.flags.contains(TcpFlags::FIN);
        let Some(ack) = tcp.ack else {
            return self.pass(pkt);
        };
        let ack = flow.offset(ack);
        let window = u64::from(tcp.window) << flow.rcv_shift;
        flow.on_ack(now, ack, window, !tcp.sack.is_empty());
        // The virtual window: at least what the receiver offers, and up to the bytes forwarded
        // plus the room left for this flow in the gateway (shared room when the total is short).
        let room_flow = self
            .config
            .flow_buffer
            .bytes()
            .saturating_sub(flow.queued_bytes);
        let room_total = self.config.total_buffer.bytes().saturating_sub(self.held);
        let room = room_flow.min(room_total);
        let edge = (ack + window).max(flow.fwd_nxt.max(flow.rcvd_nxt) + room);
        flow.virt_edge = flow.virt_edge.max(edge);
        let field = (flow.virt_edge.saturating_sub(ack) >> flow.virt_shift).min(65_535) as u16;
        if field != tcp.window {
            if let Ok(mut view) = TcpIpv4View::new_checked(pkt.header_mut()) {
                view.set_window(field);
                self.stats.windows_rewritten += 1;
            }
        }
        self.pass(pkt);
    }

    /// Add a Window Scale option announcing `shift` to a receiver's handshake segment; true
    /// when added. A full option space is counted; a header the view does not take (IPv4
    /// options) passes unchanged.
    fn add_wscale(&mut self, pkt: &mut Packet, shift: u8) -> bool {
        match add_wscale_option(pkt, shift) {
            Ok(()) => {
                self.stats.wscale_added += 1;
                true
            }
            Err(AddOptionError::NoRoom) => {
                self.stats.wscale_no_room += 1;
                false
            }
            Err(_) => false,
        }
    }

    /// Forget the flows idle for `idle_timeout`; what they held still goes out, in order.
    fn expire_idle(&mut self, now: Instant) {
        let (out, held) = (&mut self.out, &mut self.held);
        self.flows.expire_idle(now, |_, f| {
            *held -= f.queued_bytes;
            out.extend(f.queue.into_iter().map(|h| h.pkt));
        });
    }

    fn remove(&mut self, key: FlowKey) {
        if let Some(f) = self.flows.remove_key(&key) {
            self.held -= f.queued_bytes;
            // Whatever was held still goes out, in order: the connection's end is the
            // endpoints' business.
            self.out.extend(f.queue.into_iter().map(|h| h.pkt));
        }
    }

    /// Let every head of queue whose time has come leave, and set its flow's next time: for
    /// the flows due and the flow `touched` by this input (whose state changed), in key order.
    /// Every other flow's next time is unchanged: it depends on that flow's state only.
    fn release(&mut self, now: Instant, touched: Option<FlowKey>) {
        let mut due = std::mem::take(&mut self.due);
        self.flows.take_due(now, &mut due);
        if let Some(id) = touched.and_then(|k| self.flows.id(&k)) {
            if !due.contains(&id) {
                let flows = &self.flows;
                let at = due.partition_point(|&d| flows.key(d) < flows.key(id));
                due.insert(at, id);
            }
        }
        let mut finished = Vec::new();
        for &id in &due {
            let Some(key) = self.flows.key(id) else {
                continue;
            };
            let flow = &mut self.flows[id];
            let margin = u64::from(self.config.safety_segments) * flow.mss;
            let mut next_at = None;
            while let Some(head) = flow.queue.front() {
                let at = if head.len == 0 {
                    Some(now)
                } else {
                    flow.release_time(now, head.end, margin)
                };
                match at {
                    Some(t) if t <= now => {}
                    other => {
                        next_at = other;
                        break;
                    }
                }
                let Some(h) = flow.queue.pop_front() else {
                    break;
                };
                flow.queued_bytes -= u64::from(h.len);
                self.held -= u64::from(h.len);
                flow.on_forwarded(now, h.end, h.len);
                self.out.push_back(h.pkt);
                self.stats.segments_released += 1;
            }
            if flow.fin_fwd && flow.fin_rev && flow.queue.is_empty() {
                finished.push(key);
            }
            self.flows.set_deadline(id, next_at);
        }
        due.clear();
        self.due = due;
        for key in finished {
            self.remove(key);
        }
    }
}

/// Set the window-scale option of a SYN or SYN-ACK to `shift`, keeping the checksum valid.
fn rewrite_wscale(pkt: &mut Packet, shift: u8) -> bool {
    TcpIpv4View::new_checked(pkt.header_mut()).is_ok_and(|mut v| v.set_wscale_option(shift))
}

impl Node for SuperCharger {
    fn handle_packet(&mut self, now: Instant, port: PortId, pkt: Packet) {
        self.expire_idle(now);
        let Ok((ip, tcp)) = parse_packet(&pkt) else {
            self.stats.passed_other += 1;
            return self.pass(pkt);
        };
        let key = FlowKey::of(&ip, &tcp);
        let key = if port.0 == self.config.satellite_port {
            let key = key.reversed();
            self.on_receiver_segment(now, &tcp, key, pkt);
            key
        } else {
            self.on_sender_segment(now, &tcp, key, pkt);
            key
        };
        if let Some(id) = self.flows.id(&key) {
            self.flows.touch(now, id);
        }
        self.release(now, Some(key));
    }

    fn handle_timeout(&mut self, now: Instant) {
        self.expire_idle(now);
        self.release(now, None);
    }

    fn poll_transmit(&mut self, _now: Instant) -> Option<Transmit> {
        self.out.pop_front().map(|pkt| Transmit {
            port: PortId(0),
            pkt,
        })
    }

    fn poll_timeout(&self) -> Option<Instant> {
        self.flows.poll_timeout()
    }
}

#[cfg(test)]
mod tests;
