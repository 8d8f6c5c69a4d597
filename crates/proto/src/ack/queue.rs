//! The return-link queue that suppresses, filters or compacts ACKs.
//!
//! Read before editing: Samaraweera 1999 §5 (suppression: one drop-tail queue, a per-flow count of
//! queued ACKs, the low water mark before any deletion, at most high-water-mark deletions before
//! one ACK must pass, no deletion of data-bearing, flagged or duplicate ACKs) and §6 (compaction:
//! the survivor carries the count and bytes of the deleted ACKs); RFC 3449 §5.2.1 (ACK filtering)
//! and ns-2's `semantic-packetqueue.cc` (`filterAcks_`, `replace_head_`, `acksfirst_`).
//!
//! Simplifications and choices, in plain words:
//! - Deletions happen when an ACK arrives (as in ns-2 and the paper's "when a queue of ACKs
//!   builds up"), scanning the arriving ACK's flow from the head of the queue.
//! - An ACK is removed only when the next queued ACK of its flow acknowledges strictly more; the
//!   removed ACK's information then lives on in that one. Suppression and filtering also accept
//!   a data-bearing successor (it carries the cumulative ACK); compaction needs a pure ACK as the
//!   survivor, since the expander copies it.
//! - `replace_head` puts the new ACK in the place of the earliest removed ACK that is behind
//!   every remaining packet of its flow (ns-2 takes the earliest removed place outright, which can
//!   overtake a kept duplicate ACK of the same flow); `acks_first` sends the first pure ACK that
//!   has no earlier packet of its own flow waiting (ns-2 sends the first ACK, which can overtake a
//!   data segment of the same flow).
//! - The high water mark bounds how many consecutive deleted ACKs one surviving ACK stands for
//!   ("at least one ACK in a high water mark of ACKs"); deleting then goes on into the next
//!   survivor. The other reading — no deletion at all for a flow once it has had `high_water`
//!   deletions since its last transmitted ACK — lets the queue grow by every arriving ACK when a
//!   busy flow uses its budget between two of its turns on a shared slow link (measured: three
//!   flows at 9.6 kb/s then ran at 0.54 Mb/s with compaction, a queue of ~700 ACKs and RTOs;
//!   docs/reproductions/samaraweera.md).
//! - Suppression and filtering see inside IP-in-IP (RFC 2003): a tunnel packet whose inner
//!   packet is a TCP ACK is classified by the inner headers, as the DirecPC terminal's SLIP
//!   driver dropped ACKs from the queue that carried its encapsulated packets (Arora et al.,
//!   "selective acknowledgment dropping"). Only a plain outer header (no options, not a
//!   fragment) is looked through; an authenticated (AH) tunnel packet is opaque. Compaction
//!   does not look through: its survivor is itself encapsulated toward the expander.
//! - Duplicate ACKs (a pure ACK with the flow's highest acknowledgement number so far) are never
//!   removed, as the paper implemented it ("prevents the risk of not detecting a lost packet").
//!   The paper's suggested optimisation — "limit the number of unsuppressed ACKs only up to 3",
//!   enough for the sender's fast retransmit — is [`AckQueueConfig::unsuppressed_duplicates`]:
//!   the first n duplicates of each acknowledgement number are kept, later ones may be removed
//!   when a later ACK of the flow (acknowledging at least as much) waits behind them. A removed
//!   duplicate acknowledged nothing new, so compaction does not count it in the trailer (the
//!   expander would otherwise turn it into a stepped, new ACK); it still counts towards the
//!   high water mark's run.
//! - The flow table (a [`FlowTable`]) holds at most [`MAX_FLOWS`] entries; past that, flows with
//!   nothing queued are forgotten (their next ACK is then treated as their first: never
//!   removed), and when every flow has ACKs queued a new flow is not remembered at all: each of
//!   its ACKs is treated as a first one, queued and never removed (counted by
//!   [`AckQueue::flows_refused`]).

use std::collections::VecDeque;
use std::net::Ipv4Addr;

use serde::{Deserialize, Serialize};

use super::trailer;
use crate::auth::{Sealer, TunnelKey, FIRST_EPOCH};
use crate::flow::{FlowKey, FlowTable};
use crate::link::{QueueDisc, QueuedPacket};
use crate::node::Packet;
use crate::time::Instant;
use crate::wire::{SeqNumber, TcpFlags, TcpIpv4View};

/// Flows remembered at once (memory bound); see the module doc.
pub const MAX_FLOWS: usize = 4096;

/// Which ACK discipline.
#[derive(Clone, Copy, Debug, Eq, PartialEq)]
pub enum AckMode {
    /// Samaraweera §5.
    Suppression,
    /// ns-2 semantic queue / RFC 3449 §5.2.1.
    Filtering,
    /// Samaraweera §6.
    Compaction,
}

/// Settings of the ACK disciplines: `queue = { kind = "ack_…", ack = { … } }` in a scenario.
#[derive(Clone, Debug, Deserialize, PartialEq, Serialize)]
#[serde(deny_unknown_fields, default)]
#[non_exhaustive]
pub struct AckQueueConfig {
    /// Suppression and compaction: ACKs of one flow that may wait before any is deleted (the
    /// paper's low water mark). Default: 4.
    pub low_water: u32,
    /// Suppression and compaction: the most consecutive ACKs of one flow that one surviving ACK
    /// may replace, so that the sender receives at least one real ACK in every
    /// `high_water + 1` (the paper's high water mark; see the module doc). Default: 60.
    pub high_water: u32,
    /// Filtering: the new ACK takes the place of a removed older one instead of joining the tail
    /// (ns-2 `replace_head_`). Default: false.
    pub replace_head: bool,
    /// Filtering: pure ACKs are sent before data segments (ns-2 `acksfirst_`). Default: false.
    pub acks_first: bool,
    /// Filtering as ns-2's semantic queue does it (`filterAcks`): an arriving pure ACK removes
    /// *every* queued pure ACK of its flow with a lower acknowledgement number, duplicate ACKs
    /// and SACK-bearing ones included, not only the ones it supersedes in RFC 3449's sense. A
    /// sender behind such a queue sees fewer duplicate ACKs (fewer fast retransmits). Default:
    /// false.
    pub filter_duplicates: bool,
    /// Suppression and compaction: how many duplicate ACKs of one acknowledgement number are
    /// kept; later duplicates of that number may be removed (the paper's §5 suggestion, "limit
    /// the number of unsuppressed ACKs only up to 3": three duplicates trigger the sender's fast
    /// retransmit). `None` keeps every duplicate, as the paper's implementation did. Default:
    /// none. Filtering ignores it (see `filter_duplicates`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unsuppressed_duplicates: Option<u32>,
    /// Compaction: source address of the tunnel (the terminal's return interface). Required.
    pub tunnel_src: Option<Ipv4Addr>,
    /// Compaction: the expander's address at the hub. Required.
    pub tunnel_dst: Option<Ipv4Addr>,
    /// Compaction: authenticate compacted ACKs with this key (`"hex:"` and 32 to 128 hex
    /// digits; the expander's `key`), adding an IP Authentication Header ([`crate::auth`]).
    /// Default: none (plain IP-in-IP, as in the paper).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key: Option<TunnelKey>,
    /// Compaction: run without `key` on purpose (plain IP-in-IP, as in the paper): the
    /// expander can then tell the compacted ACKs only by their outer source address, which
    /// anyone on the path can forge. The daemons refuse a compactor with neither (see
    /// [`Trust`](crate::auth::Trust)); a scenario needs neither. Default: false.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub insecure: bool,
}

impl Default for AckQueueConfig {
    fn default() -> Self {
        Self {
            low_water: 4,
            high_water: 60,
            replace_head: false,
            acks_first: false,
            filter_duplicates: false,
            unsuppressed_duplicates: None,
            tunnel_src: None,
            tunnel_dst: None,
            key: None,
            insecure: false,
        }
    }
}

/// What an [`AckQueue`] did.
#[derive(Clone, Copy, Debug, Default, Eq, PartialEq, Serialize)]
#[non_exhaustive]
pub struct AckQueueStats {
    /// ACKs removed from the queue (suppressed, filtered or compacted into another).
    pub removed: u64,
    /// Compacted ACKs sent (each carrying a trailer through the tunnel).
    pub compacted_sent: u64,
    /// Packets that were not IPv4/TCP with the ACK bit (queued untouched).
    pub not_acks: u64,
    /// ACKs recognised inside an IP-in-IP tunnel packet (suppression and filtering).
    pub tunnelled_acks: u64,
    /// With a key: compacted ACKs sent with an authentication header.
    pub sealed: u64,
    /// With a key: survivors that could not be sealed (an inner header over 77 bytes leaves no
    /// room for the AH): sent as plain ACKs, their trailer lost, like one that does not fit
    /// the tunnel at all.
    pub seal_failed: u64,
    /// Duplicate ACKs that arrived (pure ACKs repeating the flow's highest acknowledgement
    /// number; SACK-bearing ones included).
    pub duplicates: u64,
    /// Of those, removed (only with `unsuppressed_duplicates`; also counted in `removed`).
    pub duplicates_removed: u64,
}

/// A queue discipline that removes redundant ACKs; see the module doc.
#[derive(Clone, Debug)]
pub struct AckQueue {
    mode: AckMode,
    config: AckQueueConfig,
    limit_packets: Option<usize>,
    limit_bytes: Option<u64>,
    entries: VecDeque<Held>,
    bytes: u64,
    /// Boxed: the table is larger than the rest of the queue, and `AnyQueue` holds this inline.
    flows: Box<FlowTable<FlowState>>,
    /// IPv4 identification of the next tunnel header.
    tunnel_ident: u16,
    /// With a key: numbers and authenticates compacted ACKs.
    sealer: Option<Box<Sealer>>,
    stats: AckQueueStats,
}

/// Addresses and ports, as `u32`/`u16` for a cheap `Ord`.

#[derive(Clone, Copy, Debug)]
struct AckInfo {
    flow: FlowKey,
    ack: SeqNumber,
    /// The flow's highest acknowledgement number before this ACK arrived.
    prev_ack: Option<SeqNumber>,
    /// Pure ACK without URG, SACK or ECE.
    plain: bool,
    /// `plain`, not a duplicate, and with a known predecessor: may be removed.
    removable: bool,
    /// `plain` duplicate past the `unsuppressed_duplicates` kept ones: may be removed in favour
    /// of a later ACK of its flow acknowledging at least as much.
    excess_duplicate: bool,
    /// No payload and no SYN, FIN or RST (SACK allowed): ns-2's `PT_ACK`.
    pure: bool,
}

#[derive(Clone, Debug)]
struct Held {
    entry: QueuedPacket,
    info: Option<AckInfo>,
    /// ACKs compacted into this one, and the bytes they acknowledged.
    merged: u32,
    merged_bytes: u32,
    /// Excess duplicate ACKs removed in favour of this one (not in the trailer).
    duplicates: u32,
}

#[derive(Clone, Copy, Debug, Default)]
struct FlowState {
    queued: u32,
    highest_ack: Option<SeqNumber>,
    /// Duplicates of `highest_ack` that have arrived.
    duplicates: u32,
}

impl AckQueue {
    /// A queue in `mode` with drop-tail limits (`None` = no limit of that kind).
    pub fn new(
        mode: AckMode,
        config: &AckQueueConfig,
        limit_packets: Option<u32>,
        limit_bytes: Option<u64>,
    ) -> Self {
        Self {
            mode,
            config: config.clone(),
            limit_packets: limit_packets.map(|n| n as usize),
            limit_bytes,
            entries: VecDeque::new(),
            bytes: 0,
            flows: Box::new(FlowTable::new(MAX_FLOWS, None)),
            tunnel_ident: 0,
            sealer: config
                .key
                .as_ref()
                .map(|k| Box::new(Sealer::new(k, FIRST_EPOCH))),
            stats: AckQueueStats::default(),
        }
    }

    /// Number the compacted ACKs this queue authenticates from `epoch · 2³² + 1` (see
    /// [`crate::auth`]; the simulator keeps [`FIRST_EPOCH`], a daemon passes e.g. its start time
    /// in seconds since 1970). No effect without a key.
    pub fn with_epoch(mut self, epoch: u32) -> Self {
        self.set_epoch(epoch);
        self
    }

    /// The sequence number the next authenticated compacted ACK gets (`None` without a key).
    pub fn next_sequence(&self) -> Option<u64> {
        self.sealer.as_ref().and_then(|s| s.next_sequence())
    }

    /// [`with_epoch`](Self::with_epoch) on a queue already built.
    pub fn set_epoch(&mut self, epoch: u32) {
        if let (Some(s), Some(k)) = (self.sealer.as_mut(), self.config.key.as_ref()) {
            **s = Sealer::new(k, epoch);
        }
    }

    /// Counters.
    pub fn stats(&self) -> AckQueueStats {
        self.stats
    }

    /// New flows not remembered because all `MAX_FLOWS` (4 096) had ACKs queued.
    pub fn flows_refused(&self) -> u64 {
        self.flows.stats().table_full
    }

    /// The discipline.
    pub fn mode(&self) -> AckMode {
        self.mode
    }

    /// Packets waiting, head first.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &QueuedPacket> {
        self.entries.iter().map(|h| &h.entry)
    }

    fn classify(&mut self, pkt: &Packet) -> Option<AckInfo> {
        let header = pkt.header();
        let inner = match self.mode {
            AckMode::Compaction => None,
            AckMode::Suppression | AckMode::Filtering => tunnelled_inner(header),
        };
        let view = TcpIpv4View::new_checked(inner.unwrap_or(header)).ok()?;
        let ack = view.ack_number()?;
        if inner.is_some() {
            self.stats.tunnelled_acks += 1;
        }
        let flow = FlowKey::new(
            view.src_addr(),
            view.src_port(),
            view.dst_addr(),
            view.dst_port(),
        );
        if self.flows.is_full() && self.flows.id(&flow).is_none() {
            self.flows.retain(|_, f| f.queued > 0);
        }
        // No clock here: the table's idle expiry is off, so the instant is never read.
        let mut untracked = FlowState::default();
        let state = match self.flows.id(&flow) {
            Some(id) => &mut self.flows[id],
            None => match self.flows.insert(Instant::ZERO, flow, FlowState::default()) {
                Ok(id) => &mut self.flows[id],
                Err(_) => &mut untracked,
            },
        };
        let prev_ack = state.highest_ack;
        let is_dup = prev_ack.is_some_and(|p| ack <= p);
        state.highest_ack = Some(prev_ack.map_or(ack, |p| p.max(ack)));
        // The view's payload length counts header bytes past TCP too; the packet's payload adds.
        let pure = view.is_pure_ack() && pkt.payload_len == 0;
        let plain = pure
            && !view.flags().contains(TcpFlags::URG)
            && !view.flags().contains(TcpFlags::ECE)
            && !view.has_sack();
        // A duplicate in RFC 5681's sense repeats the highest number; an older number
        // (reordering) is not one and stays protected.
        let duplicate = pure && prev_ack == Some(ack);
        if duplicate {
            state.duplicates = state.duplicates.saturating_add(1);
        } else if !is_dup {
            state.duplicates = 0;
        }
        let excess_duplicate = duplicate
            && plain
            && self.mode != AckMode::Filtering
            && self
                .config
                .unsuppressed_duplicates
                .is_some_and(|n| state.duplicates > n);
        if duplicate {
            self.stats.duplicates += 1;
        }
        Some(AckInfo {
            flow,
            ack,
            prev_ack,
            plain,
            removable: plain && !is_dup && prev_ack.is_some(),
            excess_duplicate,
            pure,
        })
    }

    /// Remove the arriving ACK's flow's superseded ACKs (the arrival is the last entry).
    fn remove_superseded(&mut self, flow: FlowKey) {
        let state = self.flows.get(&flow).copied().unwrap_or_default();
        let all = self.mode == AckMode::Filtering;
        if !all && state.queued <= self.config.low_water {
            return;
        }
        // How many deleted ACKs one survivor may stand for (see the module doc).
        let max_run = match self.mode {
            AckMode::Filtering => u32::MAX,
            AckMode::Suppression => self.config.high_water,
            AckMode::Compaction => self.config.high_water.min(trailer::MAX_COUNT),
        };
        let idx: Vec<usize> = (0..self.entries.len())
            .filter(|&i| self.entries[i].info.is_some_and(|a| a.flow == flow))
            .collect();
        let mut drop = vec![false; self.entries.len()];
        let mut removed = 0u32;
        let mut duplicates_removed = 0u32;
        if all && self.config.filter_duplicates {
            // ns-2 `filterAcks`: the arrival (the last entry) against every earlier one.
            if let Some((&last, earlier)) = idx.split_last() {
                if let Some(arrival) = self.entries[last].info.filter(|a| a.pure) {
                    for &x in earlier {
                        if self.entries[x]
                            .info
                            .is_some_and(|a| a.pure && a.ack < arrival.ack)
                        {
                            drop[x] = true;
                            removed += 1;
                        }
                    }
                }
            }
        }
        for w in idx
            .windows(2)
            .filter(|_| !(all && self.config.filter_duplicates))
        {
            let (x, y) = (w[0], w[1]);
            let (Some(xa), Some(ya)) = (self.entries[x].info, self.entries[y].info) else {
                continue;
            };
            // An excess duplicate goes in favour of a later ACK acknowledging at least as
            // much; any other removable ACK only in favour of one acknowledging more.
            let dup = xa.excess_duplicate;
            if !(xa.removable && ya.ack > xa.ack || dup && ya.ack >= xa.ack) {
                continue;
            }
            let (hx, hy) = (&self.entries[x], &self.entries[y]);
            let count = hy.merged.saturating_add(hx.merged) + u32::from(!dup);
            let dups = hy.duplicates.saturating_add(hx.duplicates) + u32::from(dup);
            if count.saturating_add(dups) > max_run {
                continue;
            }
            if self.mode == AckMode::Compaction {
                let Some(prev) = xa.prev_ack else { continue };
                let (xb, yb) = (self.entries[x].merged_bytes, self.entries[y].merged_bytes);
                // A duplicate acknowledged nothing (its number is its predecessor's).
                let span = u64::try_from(xa.ack - prev).unwrap_or(u64::MAX);
                let bytes = (u64::from(yb) + u64::from(xb)).saturating_add(span);
                if !ya.plain || bytes > trailer::MAX_BYTES {
                    continue;
                }
                self.entries[y].merged_bytes = bytes as u32;
            }
            self.entries[y].merged = count;
            self.entries[y].duplicates = dups;
            drop[x] = true;
            removed += 1;
            duplicates_removed += u32::from(dup);
        }
        if removed == 0 {
            return;
        }
        if self.mode == AckMode::Filtering && self.config.replace_head {
            let tail = self.entries.len() - 1;
            let last_kept = idx.iter().copied().filter(|&i| i != tail && !drop[i]).max();
            let target = idx
                .iter()
                .copied()
                .find(|&i| drop[i] && last_kept.is_none_or(|k| i > k));
            if let Some(t) = target {
                self.entries.swap(t, tail);
                drop[t] = false;
                drop[tail] = true;
            }
        }
        let mut i = 0;
        let mut removed_bytes = 0;
        self.entries.retain(|h| {
            let keep = !drop[i];
            i += 1;
            if !keep {
                removed_bytes += h.entry.pkt.wire_len();
            }
            keep
        });
        self.bytes -= removed_bytes;
        self.stats.removed += u64::from(removed);
        self.stats.duplicates_removed += u64::from(duplicates_removed);
        if let Some(f) = self.flows.get_mut(&flow) {
            f.queued -= removed;
        }
    }

    /// Index of the next packet to send.
    fn next_index(&self) -> Option<usize> {
        if self.entries.is_empty() {
            return None;
        }
        if !(self.mode == AckMode::Filtering && self.config.acks_first) {
            return Some(0);
        }
        let first_ack = (0..self.entries.len()).find(|&i| {
            let Some(a) = self.entries[i].info.filter(|a| a.plain) else {
                return false;
            };
            // No earlier packet of the same flow (any kind) may be overtaken.
            !self
                .entries
                .iter()
                .take(i)
                .any(|h| h.info.is_some_and(|b| b.flow == a.flow) || h.info.is_none())
        });
        Some(first_ack.unwrap_or(0))
    }

    /// Wrap a compacted ACK in the tunnel header and append its trailer.
    fn encapsulate(&mut self, held: &mut Held) {
        let (Some(src), Some(dst)) = (self.config.tunnel_src, self.config.tunnel_dst) else {
            return;
        };
        let count = u8::try_from(held.merged).unwrap_or(u8::MAX);
        let bytes = u16::try_from(held.merged_bytes).unwrap_or(u16::MAX);
        self.tunnel_ident = self.tunnel_ident.wrapping_add(1);
        let inner = held.entry.pkt.header();
        let mut buf = [0u8; crate::node::MAX_HEADER];
        let Some(n) = trailer::encapsulate(
            inner,
            trailer::Trailer { count, bytes },
            src,
            dst,
            self.tunnel_ident,
            &mut buf,
        ) else {
            return;
        };
        if let Some(sealer) = self.sealer.as_mut() {
            let mut tunnelled = held.entry.pkt.clone();
            tunnelled.set_header(&buf[..n]);
            match sealer.seal(tunnelled) {
                Ok(sealed) => {
                    held.entry.pkt = sealed;
                    self.stats.sealed += 1;
                }
                Err(_) => {
                    self.stats.seal_failed += 1;
                    return;
                }
            }
        } else {
            held.entry.pkt.set_header(&buf[..n]);
        }
        self.stats.compacted_sent += 1;
    }
}

/// The inner packet's header bytes of a plain IP-in-IP packet (outer IPv4 without options, not
/// a fragment, protocol 4); `None` for anything else.
fn tunnelled_inner(header: &[u8]) -> Option<&[u8]> {
    let outer = header.get(..crate::wire::ipip::OUTER_LEN)?;
    let fragment = u16::from_be_bytes([outer[6], outer[7]]) & 0x3fff != 0;
    (outer[0] == 0x45 && outer[9] == crate::wire::IPPROTO_IPIP && !fragment)
        .then(|| &header[crate::wire::ipip::OUTER_LEN..])
}

impl QueueDisc for AckQueue {
    fn enqueue(&mut self, _now: Instant, entry: QueuedPacket) -> Result<(), QueuedPacket> {
        let too_many = self
            .limit_packets
            .is_some_and(|limit| self.entries.len() + 1 > limit);
        let too_big = self
            .limit_bytes
            .is_some_and(|limit| self.bytes + entry.pkt.wire_len() > limit);
        if too_many || too_big {
            return Err(entry);
        }
        let info = self.classify(&entry.pkt);
        if info.is_none() {
            self.stats.not_acks += 1;
        }
        self.bytes += entry.pkt.wire_len();
        self.entries.push_back(Held {
            entry,
            info,
            merged: 0,
            merged_bytes: 0,
            duplicates: 0,
        });
        if let Some(a) = info {
            if let Some(f) = self.flows.get_mut(&a.flow) {
                f.queued += 1;
            }
            self.remove_superseded(a.flow);
        }
        Ok(())
    }

    fn dequeue(&mut self, _now: Instant) -> Option<QueuedPacket> {
        let i = self.next_index()?;
        let mut held = self.entries.remove(i)?;
        self.bytes -= held.entry.pkt.wire_len();
        if let Some(a) = held.info {
            if let Some(f) = self.flows.get_mut(&a.flow) {
                f.queued = f.queued.saturating_sub(1);
            }
        }
        if self.mode == AckMode::Compaction && held.merged > 0 {
            self.encapsulate(&mut held);
        }
        Some(held.entry)
    }

    fn len_packets(&self) -> usize {
        self.entries.len()
    }

    fn len_bytes(&self) -> u64 {
        self.bytes
    }

    fn removed(&self) -> u64 {
        self.stats.removed
    }
}
