//! The stateless ACK expander at the hub (Samaraweera 1999 §6), with optional ACK spacing (§7).
//!
//! A router with this middlebox hands it every packet. IP-in-IP packets addressed to the
//! expander are taken out of the tunnel: a plain inner packet is forwarded; a compacted ACK
//! (with a [`trailer`](super::trailer)) becomes `count` regenerated ACKs with evenly stepped
//! acknowledgement numbers, then the received ACK itself, each with both checksums recomputed.
//! Tunnel packets from a source not in `compactors`, or malformed ones (bad outer header, inner
//! header that does not parse or is not a pure ACK, forged trailer) are dropped and counted; never
//! a panic. Every other packet is forwarded unchanged, except that with spacing on, pure ACKs
//! (from `return_port` if set) go through the spacer so that they keep their place among
//! regenerated ones.

use std::collections::{BTreeMap, VecDeque};
use std::net::Ipv4Addr;

use serde::{Deserialize, Serialize};

use super::spacing::Spacer;
use super::trailer::{self, TunnelError};
use crate::node::{Node, Packet, PortId, Transmit};
use crate::time::Instant;
use crate::wire::{parse_ipv4_tcp, SeqNumber, TcpFlags, TcpIpv4View};

/// Settings: `middlebox = { kind = "ack_expander", … }` on the hub router.
#[derive(Clone, Debug, Deserialize, PartialEq, Serialize)]
#[serde(deny_unknown_fields, default)]
#[non_exhaustive]
pub struct AckExpanderConfig {
    /// Tunnel source addresses accepted (the compactors' `tunnel_src`). Default: none (every
    /// tunnel packet is refused: list them).
    pub compactors: Vec<Ipv4Addr>,
    /// The expander's own tunnel address; IP-in-IP packets to other addresses pass through.
    /// Default: none (every IP-in-IP packet is for the expander).
    pub address: Option<Ipv4Addr>,
    /// Space regenerated ACKs (§7). Default: false.
    pub spacing: bool,
    /// Tokens per spacing timer expiry, N. Default: 4.
    pub spacing_tokens: u32,
    /// With spacing: only pure ACKs arriving on this port (the router's incoming-link index of
    /// the return link) share the spacing queue. Default: none (pure ACKs from any port).
    pub return_port: Option<u16>,
    /// With spacing: a queue and token counter per flow (addresses and ports) instead of one for
    /// all, the classifier the paper mentions as an option. Default: false (the paper's runs).
    pub spacing_per_flow: bool,
}

impl Default for AckExpanderConfig {
    fn default() -> Self {
        Self {
            compactors: Vec::new(),
            address: None,
            spacing: false,
            spacing_tokens: 4,
            return_port: None,
            spacing_per_flow: false,
        }
    }
}

impl AckExpanderConfig {
    /// Check values a scenario could get wrong; the message starts with the key.
    pub fn validate(&self) -> Result<(), String> {
        if self.compactors.is_empty() {
            return Err(
                "compactors: list the compactors' tunnel addresses, e.g. [\"10.0.3.1\"]".to_owned(),
            );
        }
        if self.spacing && self.spacing_tokens == 0 {
            return Err("spacing_tokens: must be at least 1 (the paper uses 4)".to_owned());
        }
        Ok(())
    }
}

/// What the expander did.
#[derive(Clone, Copy, Debug, Default, Eq, PartialEq, Serialize)]
#[non_exhaustive]
pub struct ExpanderStats {
    /// Tunnel packets taken out of the tunnel (plain or compacted).
    pub decapsulated: u64,
    /// Compacted ACKs received.
    pub compacted: u64,
    /// ACKs regenerated from trailers (not counting the received ones).
    pub regenerated: u64,
    /// Tunnel packets from a source not in `compactors`: dropped.
    pub unknown_source: u64,
    /// Malformed tunnel packets or inner headers, forged trailers: dropped.
    pub malformed: u64,
    /// Normal ACKs that went through the spacer.
    pub spaced_normal: u64,
}

/// The expander middlebox.
#[derive(Clone, Debug)]
pub struct AckExpander {
    config: AckExpanderConfig,
    out: VecDeque<Packet>,
    spacing: Option<Spacing>,
    stats: ExpanderStats,
}

/// One spacer for all, or one per flow.
#[derive(Clone, Debug)]
enum Spacing {
    Shared(Spacer),
    PerFlow {
        n: u32,
        flows: BTreeMap<FlowKey, Spacer>,
    },
}

/// IPv4 addresses and TCP ports of an ACK.
type FlowKey = (u32, u32, u16, u16);

/// Per-flow spacers kept at once; past this, idle ones are forgotten.
const MAX_SPACED_FLOWS: usize = 4096;

impl Spacing {
    fn for_packet(&mut self, pkt: &Packet) -> &mut Spacer {
        match self {
            Self::Shared(s) => s,
            Self::PerFlow { n, flows } => {
                let key = TcpIpv4View::new_checked(pkt.header()).map_or((0, 0, 0, 0), |v| {
                    (
                        u32::from(v.src_addr()),
                        u32::from(v.dst_addr()),
                        v.src_port(),
                        v.dst_port(),
                    )
                });
                if flows.len() >= MAX_SPACED_FLOWS && !flows.contains_key(&key) {
                    flows.retain(|_, s| !s.is_empty());
                }
                flows.entry(key).or_insert_with(|| Spacer::new(*n))
            }
        }
    }

    fn handle_timeout(&mut self, now: Instant) {
        match self {
            Self::Shared(s) => s.handle_timeout(now),
            Self::PerFlow { flows, .. } => flows.values_mut().for_each(|s| s.handle_timeout(now)),
        }
    }

    fn poll_release(&mut self, now: Instant) -> Option<Packet> {
        match self {
            Self::Shared(s) => s.poll_release(now),
            Self::PerFlow { flows, .. } => flows.values_mut().find_map(|s| s.poll_release(now)),
        }
    }

    fn poll_timeout(&self) -> Option<Instant> {
        match self {
            Self::Shared(s) => s.poll_timeout(),
            Self::PerFlow { flows, .. } => flows.values().filter_map(Spacer::poll_timeout).min(),
        }
    }
}

impl AckExpander {
    /// An expander as `config` says (check it with [`AckExpanderConfig::validate`] first).
    pub fn new(config: &AckExpanderConfig) -> Self {
        Self {
            spacing: config.spacing.then(|| match config.spacing_per_flow {
                false => Spacing::Shared(Spacer::new(config.spacing_tokens)),
                true => Spacing::PerFlow {
                    n: config.spacing_tokens,
                    flows: BTreeMap::new(),
                },
            }),
            config: config.clone(),
            out: VecDeque::new(),
            stats: ExpanderStats::default(),
        }
    }

    /// Counters.
    pub fn stats(&self) -> ExpanderStats {
        self.stats
    }

    /// The spacer, when spacing is on with one queue for all flows.
    pub fn spacer(&self) -> Option<&Spacer> {
        match &self.spacing {
            Some(Spacing::Shared(s)) => Some(s),
            _ => None,
        }
    }

    /// ACKs waiting in the spacing queue(s).
    pub fn spacing_queue_len(&self) -> usize {
        match &self.spacing {
            Some(Spacing::Shared(s)) => s.len(),
            Some(Spacing::PerFlow { flows, .. }) => flows.values().map(Spacer::len).sum(),
            None => 0,
        }
    }

    /// Expand one compacted tunnel packet into `out` (regenerated ACKs lowest first, then the
    /// received one). Pure function of the packet: the expander keeps no per-flow state.
    pub fn expand(
        pkt: &Packet,
        accept: impl Fn(Ipv4Addr) -> bool,
        out: &mut Vec<Packet>,
    ) -> Result<usize, ExpandError> {
        let t = trailer::parse(pkt.header(), pkt.payload_len).map_err(ExpandError::Tunnel)?;
        if !accept(t.src) {
            return Err(ExpandError::UnknownSource(t.src));
        }
        let Some(tr) = t.trailer else {
            if t.inner.len() < 20 || t.inner[0] >> 4 != 4 {
                return Err(ExpandError::Tunnel(TunnelError::BadInner("not IPv4")));
            }
            // Plain tunnel: the outer payload (virtual or real) is the inner datagram's payload.
            let mut inner = pkt.clone();
            inner.strip_header_front(pkt.header_len() - t.inner.len());
            out.push(inner);
            return Ok(1);
        };
        // A compacted ACK must be a valid pure ACK: checksums verified by a full parse.
        let (_, tcp) = parse_ipv4_tcp(t.inner, 0)
            .map_err(|_| ExpandError::Tunnel(TunnelError::BadInner("inner TCP/IP invalid")))?;
        let pure = tcp.payload_len == 0
            && tcp.flags.0 & (TcpFlags::SYN.0 | TcpFlags::FIN.0 | TcpFlags::RST.0) == 0;
        let Some(ack) = tcp.ack.filter(|_| pure) else {
            return Err(ExpandError::Tunnel(TunnelError::BadTrailer(
                "trailer on a packet that is not a pure ACK",
            )));
        };
        for a in trailer::stepped_acks(ack.0, tr) {
            let mut copy = inherit(Packet::new(t.inner, 0), pkt);
            let mut view = TcpIpv4View::new_unchecked(copy.header_mut());
            view.set_ack_number(SeqNumber(a));
            view.fill_checksums();
            out.push(copy);
        }
        out.push(inherit(Packet::new(t.inner, 0), pkt));
        Ok(usize::from(tr.count) + 1)
    }

    fn is_for_us(&self, h: &[u8]) -> bool {
        h.len() >= 20
            && h[9] == crate::wire::IPPROTO_IPIP
            && self
                .config
                .address
                .is_none_or(|a| a.octets() == [h[16], h[17], h[18], h[19]])
    }

    fn is_return_ack(&self, port: PortId, pkt: &Packet) -> bool {
        if self.config.return_port.is_some_and(|p| p != port.0) {
            return false;
        }
        TcpIpv4View::new_checked(pkt.header()).is_ok_and(|v| v.is_pure_ack())
            && pkt.payload_len == 0
    }
}

/// Why a tunnel packet was dropped.
#[derive(Clone, Copy, Debug, Eq, PartialEq, thiserror::Error)]
pub enum ExpandError {
    /// Malformed or forged.
    #[error("{0}")]
    Tunnel(TunnelError),
    /// From a source not configured as a compactor.
    #[error("tunnel packet from unknown source {0}")]
    UnknownSource(Ipv4Addr),
}

impl Node for AckExpander {
    fn handle_packet(&mut self, now: Instant, port: PortId, pkt: Packet) {
        if !self.is_for_us(pkt.header()) {
            if self.spacing.is_some() && self.is_return_ack(port, &pkt) {
                self.stats.spaced_normal += 1;
                if let Some(s) = self.spacing.as_mut() {
                    s.for_packet(&pkt).handle_normal(now, pkt);
                }
            } else {
                self.out.push_back(pkt);
            }
            return;
        }
        let compactors = &self.config.compactors;
        let mut acks = Vec::new();
        match Self::expand(&pkt, |a| compactors.contains(&a), &mut acks) {
            Ok(n) => {
                self.stats.decapsulated += 1;
                if n > 1 {
                    self.stats.compacted += 1;
                    self.stats.regenerated += n as u64 - 1;
                }
                match self.spacing.as_mut() {
                    Some(s) if n > 1 => s.for_packet(&acks[0]).handle_compacted(now, acks),
                    Some(s) if self.config.return_port.is_none_or(|p| p == port.0) => {
                        // A tunnelled normal ACK: spaced like one that came plain.
                        for a in acks {
                            s.for_packet(&a).handle_normal(now, a);
                        }
                    }
                    _ => self.out.extend(acks),
                }
            }
            Err(ExpandError::UnknownSource(_)) => self.stats.unknown_source += 1,
            Err(ExpandError::Tunnel(_)) => self.stats.malformed += 1,
        }
    }

    fn handle_timeout(&mut self, now: Instant) {
        if let Some(s) = self.spacing.as_mut() {
            s.handle_timeout(now);
        }
    }

    fn poll_transmit(&mut self, now: Instant) -> Option<Transmit> {
        let pkt = match self.out.pop_front() {
            Some(p) => p,
            None => self.spacing.as_mut()?.poll_release(now)?,
        };
        Some(Transmit {
            port: PortId(0),
            pkt,
        })
    }

    fn poll_timeout(&self) -> Option<Instant> {
        self.spacing.as_ref().and_then(Spacing::poll_timeout)
    }
}

/// A packet made from `from` keeps its trace id and flow hint.
fn inherit(mut p: Packet, from: &Packet) -> Packet {
    p.id = from.id;
    p.flow = from.flow;
    p
}
