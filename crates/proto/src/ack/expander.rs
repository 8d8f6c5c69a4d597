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
//!
//! Bounds against forged input (issue 15; none is in the paper, whose expander trusts the
//! tunnel): only `compactors` are accepted (no default, so a scenario must name them); one
//! compacted ACK regenerates at most [`ExpansionLimit::regenerated`] ACKs, the rest counted in
//! `clipped`; at most 4 096 per-flow spacers exist at once and each spacing queue holds at most
//! `spacing_queue_limit` ACKs, refusals and drops counted. Without a `key` the trailer is not
//! authenticated: a packet forged with a compactor's source address is accepted, and the bound
//! is what limits what it can make the hub send. With a `key` (the compactors' too), only
//! compacted ACKs carrying an IP Authentication Header whose ICV verifies and whose sequence
//! number is not replayed are expanded ([`crate::auth`]); plain IP-in-IP packets to the
//! expander are then refused (`unauthenticated`), so a forged or replayed compacted ACK
//! produces no ACK at all.

use std::collections::{BTreeSet, VecDeque};
use std::net::Ipv4Addr;

use serde::{Deserialize, Serialize};

use super::spacing::Spacer;
use super::trailer::{self, Trailer, TunnelError};
use crate::auth::{AuthError, AuthStats, Opener, Trust, TunnelKey, IPPROTO_AH};
use crate::flow::{FlowId, FlowKey, FlowTable, FlowTableStats};
use crate::node::{Node, Packet, PortId, Transmit};
use crate::time::Instant;
use crate::wire::{parse_ipv4_tcp, SeqNumber, TcpFlags, TcpIpv4View};

/// Settings: `middlebox = { kind = "ack_expander", … }` on the hub router.
#[derive(Clone, Debug, Deserialize, PartialEq, Serialize)]
#[serde(deny_unknown_fields, default)]
#[non_exhaustive]
pub struct AckExpanderConfig {
    /// Tunnel source addresses accepted (the compactors' `tunnel_src`). Default: none, and
    /// [`validate`](Self::validate) refuses an empty list: fail-closed, since an expander that
    /// accepted any source would regenerate ACKs for anyone who can send it IP-in-IP packets.
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
    /// Most ACKs one compacted ACK may regenerate (besides itself), so one tunnel packet
    /// never becomes more than `max_regenerated + 1` ACKs; see [`ExpansionLimit`]. Default: 64 = ⌈65 535 / 1 024⌉, what the largest trailer (65 535
    /// bytes) stands for when each deleted ACK acknowledged at least one segment of the paper's
    /// 1 024-byte MSS.
    pub max_regenerated: u32,
    /// Fewest bytes a deleted ACK is taken to have acknowledged (bytes): one compacted ACK
    /// regenerates at most ⌈trailer bytes / `min_ack_bytes`⌉ ACKs. Default: 536, the IPv4
    /// default MSS (RFC 9293 §3.7.1), so that bulk transfers with any usual MSS are not clipped
    /// by this rule. At least 1.
    pub min_ack_bytes: u32,
    /// With spacing: most ACKs each spacing queue holds; one arriving at a full queue pushes
    /// out the oldest (counted in `spacing_queue_drops`). Default: 2048, more than the ACKs the
    /// paper's runs can have waiting (three 720 KB windows: 3 × 703); 256 dropped 82 ACKs in
    /// Fig 11's 32 kb/s, 600-packet-queue run and moved its goodput from 3.11 to 3.20 Mb/s.
    /// At least 1.
    pub spacing_queue_limit: usize,
    /// Accept only compacted ACKs authenticated with this key (`"hex:"` and 32 to 128 hex
    /// digits; the compactors' `ack.key`): see the module doc. Default: none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key: Option<TunnelKey>,
    /// Run without `key` on purpose: the expander then regenerates ACKs for any compacted ACK
    /// whose outer source is one of `compactors`, an address anyone on the path can forge. The
    /// daemons refuse an expander with neither (see [`Trust`]); a scenario needs neither.
    /// Default: false.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub insecure: bool,
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
            max_regenerated: 64,
            min_ack_bytes: 536,
            spacing_queue_limit: 2048,
            key: None,
            insecure: false,
        }
    }
}

impl AckExpanderConfig {
    /// Check values a scenario could get wrong; the message starts with the key.
    pub fn validate(&self) -> Result<(), String> {
        Trust::validate(self.key.as_ref(), self.insecure)?;
        if self.compactors.is_empty() {
            return Err(
                "compactors: list the compactors' tunnel addresses, e.g. [\"10.0.3.1\"]".to_owned(),
            );
        }
        if self.spacing && self.spacing_tokens == 0 {
            return Err("spacing_tokens: must be at least 1 (the paper uses 4)".to_owned());
        }
        if self.min_ack_bytes == 0 {
            return Err("min_ack_bytes: must be at least 1".to_owned());
        }
        if self.spacing_queue_limit == 0 {
            return Err("spacing_queue_limit: must be at least 1".to_owned());
        }
        Ok(())
    }

    /// The bound on regenerated ACKs these settings give.
    pub fn limit(&self) -> ExpansionLimit {
        ExpansionLimit {
            max_regenerated: self.max_regenerated,
            min_ack_bytes: self.min_ack_bytes.max(1),
        }
    }
}

/// How many ACKs one compacted ACK may regenerate.
///
/// A trailer says `count` ACKs acknowledging `bytes` in all were deleted; the compactor never
/// lets `count` exceed 255 nor `bytes` 65 535 (trailer.rs). An ACK that is not a duplicate
/// acknowledges at least one segment, so a legitimate trailer has `count ≤ bytes / segment`;
/// taking `min_ack_bytes` as the smallest segment gives `⌈bytes / min_ack_bytes⌉`, and
/// `max_regenerated` caps the result whatever `bytes` says. The expander regenerates
/// `min(count, ⌈bytes / min_ack_bytes⌉, max_regenerated)` ACKs, still evenly stepped over the
/// whole `bytes` range, so the sender learns the same cumulative points, in fewer steps. A
/// forged 63-byte packet from a compactor's address claiming 255 ACKs thus yields at most
/// 64 + 1 ACKs (2 600 bytes) with the defaults, instead of 256 (10 240 bytes).
#[derive(Clone, Copy, Debug, Eq, PartialEq)]
pub struct ExpansionLimit {
    /// Cap on regenerated ACKs per compacted ACK.
    pub max_regenerated: u32,
    /// Smallest acknowledged amount assumed per deleted ACK (bytes, ≥ 1).
    pub min_ack_bytes: u32,
}

impl ExpansionLimit {
    /// No bound beyond the trailer's own (`count` ACKs): exact round trips, for tests.
    pub const NONE: Self = Self {
        max_regenerated: u32::MAX,
        min_ack_bytes: 1,
    };

    /// ACKs to regenerate for trailer `t`.
    pub fn regenerated(&self, t: Trailer) -> u8 {
        let by_bytes = u32::from(t.bytes).div_ceil(self.min_ack_bytes.max(1));
        let n = u32::from(t.count).min(by_bytes).min(self.max_regenerated);
        // NOTE(unwrap): n ≤ count, a u8.
        u8::try_from(n).unwrap_or(t.count)
    }
}

/// What [`AckExpander::expand`] produced.
#[derive(Clone, Copy, Debug, Eq, PartialEq)]
pub struct Expansion {
    /// Packets pushed to the output (regenerated ACKs plus the received one, or one plain
    /// inner packet).
    pub acks: usize,
    /// ACKs the trailer asked for but the [`ExpansionLimit`] refused.
    pub clipped: u32,
}

impl Expansion {
    /// Whether the packet was a compacted ACK (a trailer always asks for at least one ACK,
    /// regenerated or clipped), not a plain tunnelled packet.
    pub fn is_compacted(&self) -> bool {
        self.acks > 1 || self.clipped > 0
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
    /// ACKs trailers asked for beyond the [`ExpansionLimit`]: not regenerated.
    pub clipped: u64,
    /// ACKs of a new flow forwarded unspaced because 4 096 per-flow spacers all held ACKs.
    pub spacing_flows_refused: u64,
    /// ACKs pushed out of a full spacing queue (`spacing_queue_limit`): dropped.
    pub spacing_queue_drops: u64,
}

/// The expander middlebox.
#[derive(Clone, Debug)]
pub struct AckExpander {
    config: AckExpanderConfig,
    out: VecDeque<Packet>,
    spacing: Option<Spacing>,
    stats: ExpanderStats,
    /// With a key: the replay windows, and the authentication counters.
    auth: Option<Box<(Opener, AuthStats)>>,
}

/// One spacer for all, or one per flow.
#[derive(Clone, Debug)]
enum Spacing {
    Shared(Spacer),
    PerFlow {
        n: u32,
        limit: usize,
        /// One spacer per ACK flow; its deadline is the spacer's timer.
        flows: FlowTable<Spacer>,
        /// Spacers holding ACKs: when all of a full table's are, a new flow is refused without
        /// a scan for idle ones.
        busy: usize,
        /// Spacers that can release an ACK now, in the order ACKs leave when several can:
        /// (source, destination, source port, destination port).
        ready: BTreeSet<(ReleaseOrder, FlowId)>,
        /// Flows due in the current `handle_timeout` (kept to reuse its allocation).
        due: Vec<FlowId>,
    },
}

/// A spacer's state before a change, for [`Spacing::reindex`].
#[derive(Clone, Copy)]
struct Was {
    ready: bool,
    empty: bool,
}

impl Was {
    fn of(s: &Spacer) -> Self {
        Self {
            ready: s.is_ready(),
            empty: s.is_empty(),
        }
    }
}

/// IPv4 addresses, then TCP ports, of an ACK: the order spacers release in when several can.
type ReleaseOrder = (Ipv4Addr, Ipv4Addr, u16, u16);

fn release_order(k: FlowKey) -> ReleaseOrder {
    (k.src, k.dst, k.src_port, k.dst_port)
}

/// The spacing flow of an ACK (all unparseable packets share one, as before).
fn spacing_key(pkt: &Packet) -> FlowKey {
    let none = Ipv4Addr::UNSPECIFIED;
    TcpIpv4View::new_checked(pkt.header()).map_or(FlowKey::new(none, 0, none, 0), |v| {
        FlowKey::new(v.src_addr(), v.src_port(), v.dst_addr(), v.dst_port())
    })
}

/// Per-flow spacers kept at once; past this, idle ones are forgotten, and when none is idle a
/// new flow's ACKs are forwarded unspaced.
const MAX_SPACED_FLOWS: usize = 4096;

impl Spacing {
    /// Make sure flow `key` has a spacer (creating one); false when it would be a new flow
    /// and all [`MAX_SPACED_FLOWS`] spacers hold ACKs.
    fn admit(&mut self, now: Instant, key: FlowKey) -> bool {
        let Self::PerFlow {
            n,
            limit,
            flows,
            busy,
            ..
        } = self
        else {
            return true;
        };
        if flows.id(&key).is_some() {
            return true;
        }
        if flows.is_full() && *busy < flows.len() {
            // Forget every idle spacer (nothing queued: no timer, not ready) at once: each scan
            // frees at least one, so its cost is paid by the insertions that filled the table.
            flows.retain(|_, s| !s.is_empty());
        }
        let spacer = Spacer::new(*n).with_queue_limit(*limit);
        flows.insert(now, key, spacer).is_ok()
    }

    /// Apply `f` to the spacer of flow `key`, then re-index it; `None` (and `f` not called)
    /// when the flow was not admitted.
    fn with_spacer<T>(&mut self, key: FlowKey, f: impl FnOnce(&mut Spacer) -> T) -> Option<T> {
        match self {
            Self::Shared(s) => Some(f(s)),
            Self::PerFlow {
                flows, ready, busy, ..
            } => {
                let id = flows.id(&key)?;
                let was = Was::of(&flows[id]);
                let out = f(&mut flows[id]);
                Self::reindex(flows, ready, busy, id, was);
                Some(out)
            }
        }
    }

    /// After spacer `id` changed: its deadline, its place among the ready ones and the count
    /// of busy spacers.
    fn reindex(
        flows: &mut FlowTable<Spacer>,
        ready: &mut BTreeSet<(ReleaseOrder, FlowId)>,
        busy: &mut usize,
        id: FlowId,
        was: Was,
    ) {
        let was_ready = was.ready;
        let (is_ready, at) = (flows[id].is_ready(), flows[id].poll_timeout());
        match (was.empty, flows[id].is_empty()) {
            (true, false) => *busy += 1,
            (false, true) => *busy -= 1,
            _ => {}
        }
        flows.set_deadline(id, at);
        if was_ready != is_ready {
            if let Some(k) = flows.key(id) {
                if is_ready {
                    ready.insert((release_order(k), id));
                } else {
                    ready.remove(&(release_order(k), id));
                }
            }
        }
    }

    /// Spacers that exist now.
    fn spacers(&self) -> usize {
        match self {
            Self::Shared(_) => 1,
            Self::PerFlow { flows, .. } => flows.len(),
        }
    }

    fn handle_timeout(&mut self, now: Instant) {
        match self {
            Self::Shared(s) => s.handle_timeout(now),
            Self::PerFlow {
                flows,
                ready,
                due,
                busy,
                ..
            } => {
                // A spacer's timeout only adds tokens: the order among due spacers is invisible.
                flows.take_due(now, due);
                for &id in due.iter() {
                    let was = Was::of(&flows[id]);
                    flows[id].handle_timeout(now);
                    Self::reindex(flows, ready, busy, id, was);
                }
                due.clear();
            }
        }
    }

    fn poll_release(&mut self, now: Instant) -> Option<Packet> {
        match self {
            Self::Shared(s) => s.poll_release(now),
            Self::PerFlow {
                flows, ready, busy, ..
            } => {
                // The first ready spacer in release order, as a scan over all of them found.
                let &(_, id) = ready.first()?;
                let was = Was::of(&flows[id]);
                let pkt = flows[id].poll_release(now);
                Self::reindex(flows, ready, busy, id, was);
                pkt
            }
        }
    }

    fn poll_timeout(&self) -> Option<Instant> {
        match self {
            Self::Shared(s) => s.poll_timeout(),
            Self::PerFlow { flows, .. } => flows.poll_timeout(),
        }
    }
}

impl AckExpander {
    /// An expander as `config` says (check it with [`AckExpanderConfig::validate`] first).
    pub fn new(config: &AckExpanderConfig) -> Self {
        Self {
            spacing: config.spacing.then(|| match config.spacing_per_flow {
                false => Spacing::Shared(
                    Spacer::new(config.spacing_tokens).with_queue_limit(config.spacing_queue_limit),
                ),
                true => Spacing::PerFlow {
                    n: config.spacing_tokens,
                    limit: config.spacing_queue_limit,
                    flows: FlowTable::new(MAX_SPACED_FLOWS, None),
                    busy: 0,
                    ready: BTreeSet::new(),
                    due: Vec::new(),
                },
            }),
            config: config.clone(),
            out: VecDeque::new(),
            stats: ExpanderStats::default(),
            auth: config
                .key
                .as_ref()
                .map(|k| Box::new((Opener::new(k), AuthStats::default()))),
        }
    }

    /// Counters.
    pub fn stats(&self) -> ExpanderStats {
        self.stats
    }

    /// Authentication counters, when the expander has a key.
    pub fn auth_stats(&self) -> Option<AuthStats> {
        self.auth.as_ref().map(|a| a.1)
    }

    /// The replay windows ([`Opener::set_floor`] after a restart), when keyed.
    pub fn opener_mut(&mut self) -> Option<&mut Opener> {
        self.auth.as_mut().map(|a| &mut a.0)
    }

    /// Spacers that exist now: 0 without spacing, 1 shared, or one per flow (≤ 4 096).
    pub fn spacers(&self) -> usize {
        self.spacing.as_ref().map_or(0, Spacing::spacers)
    }

    /// Work counters of the per-flow spacers' table (entries visited by timeouts and by
    /// scans for idle spacers), when spacing is per flow.
    pub fn spacing_table_stats(&self) -> Option<FlowTableStats> {
        match &self.spacing {
            Some(Spacing::PerFlow { flows, .. }) => Some(flows.stats()),
            _ => None,
        }
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
            Some(Spacing::PerFlow { flows, .. }) => flows.iter().map(|(_, s)| s.len()).sum(),
            None => 0,
        }
    }

    /// Expand one compacted tunnel packet into `out` (regenerated ACKs lowest first, then the
    /// received one), regenerating no more than `limit` allows. Pure function of the packet:
    /// the expander keeps no per-flow state.
    pub fn expand(
        pkt: &Packet,
        accept: impl Fn(Ipv4Addr) -> bool,
        limit: ExpansionLimit,
        out: &mut Vec<Packet>,
    ) -> Result<Expansion, ExpandError> {
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
            return Ok(Expansion {
                acks: 1,
                clipped: 0,
            });
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
        let count = limit.regenerated(tr);
        let stepped = Trailer {
            count,
            bytes: tr.bytes,
        };
        for a in trailer::stepped_acks(ack.0, stepped) {
            let mut copy = inherit(Packet::new(t.inner, 0), pkt);
            let mut view = TcpIpv4View::new_unchecked(copy.header_mut());
            view.set_ack_number(SeqNumber(a));
            view.fill_checksums();
            out.push(copy);
        }
        out.push(inherit(Packet::new(t.inner, 0), pkt));
        Ok(Expansion {
            acks: usize::from(count) + 1,
            clipped: u32::from(tr.count - count),
        })
    }

    fn is_for_us(&self, h: &[u8]) -> bool {
        h.len() >= 20
            && (h[9] == crate::wire::IPPROTO_IPIP || (self.auth.is_some() && h[9] == IPPROTO_AH))
            && self
                .config
                .address
                .is_none_or(|a| a.octets() == [h[16], h[17], h[18], h[19]])
    }

    /// A normal ACK into its flow's spacer (true), or out unspaced when no spacer can be had.
    fn space_normal(&mut self, now: Instant, pkt: Packet) -> bool {
        let Some(spacing) = self.spacing.as_mut() else {
            self.out.push_back(pkt);
            return false;
        };
        if !spacing.admit(now, spacing_key(&pkt)) {
            self.stats.spacing_flows_refused += 1;
            self.out.push_back(pkt);
            return false;
        }
        let drops = spacing.with_spacer(spacing_key(&pkt), |sp| {
            let before = sp.dropped();
            sp.handle_normal(now, pkt);
            sp.dropped() - before
        });
        self.stats.spacing_queue_drops += drops.unwrap_or(0);
        true
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
                if self.space_normal(now, pkt) {
                    self.stats.spaced_normal += 1;
                }
            } else {
                self.out.push_back(pkt);
            }
            return;
        }
        let compactors = &self.config.compactors;
        let pkt = match self.auth.as_deref_mut() {
            None => pkt,
            Some((_, stats)) if pkt.header()[9] != IPPROTO_AH => {
                stats.unauthenticated += 1;
                return;
            }
            Some((opener, stats)) => match opener.open(pkt, |a| compactors.contains(&a)) {
                Ok(p) => {
                    stats.verified += 1;
                    p
                }
                Err(e) => {
                    if !stats.count_refusal(e) {
                        match e {
                            AuthError::NotFromPeer => self.stats.unknown_source += 1,
                            _ => self.stats.malformed += 1,
                        }
                    }
                    return;
                }
            },
        };
        let mut acks = Vec::new();
        match Self::expand(
            &pkt,
            |a| compactors.contains(&a),
            self.config.limit(),
            &mut acks,
        ) {
            Ok(x) => {
                self.stats.decapsulated += 1;
                self.stats.clipped += u64::from(x.clipped);
                if x.is_compacted() {
                    self.stats.compacted += 1;
                    self.stats.regenerated += x.acks as u64 - 1;
                }
                let spaced_port = self.config.return_port.is_none_or(|p| p == port.0);
                match self.spacing.as_mut() {
                    Some(s) if x.is_compacted() => {
                        let key = spacing_key(&acks[0]);
                        if s.admit(now, key) {
                            let drops = s.with_spacer(key, |sp| {
                                let before = sp.dropped();
                                sp.handle_compacted(now, acks);
                                sp.dropped() - before
                            });
                            self.stats.spacing_queue_drops += drops.unwrap_or(0);
                        } else {
                            self.stats.spacing_flows_refused += acks.len() as u64;
                            self.out.extend(acks);
                        }
                    }
                    // A tunnelled normal ACK: spaced like one that came plain.
                    Some(_) if spaced_port => {
                        for a in acks {
                            self.space_normal(now, a);
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
