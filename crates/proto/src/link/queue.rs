//! The queue in front of a link's serialiser: a narrow trait, the entry it holds, and the enum of
//! in-tree disciplines (static dispatch, as `AnyCc` for congestion control).
//!
//! Disciplines that rewrite or remove packets already queued (ACK filtering, ACK suppression,
//! ACK compaction) build on [`Fifo`], which keeps the byte count right when they do.

use std::collections::VecDeque;

use super::config::{QueueConfig, QueueKind};
use super::drop_tail::DropTail;
use crate::ack::{AckMode, AckQueue};
use crate::node::Packet;
use crate::time::Instant;
use crate::units::ByteSize;

/// A packet waiting in a link's queue, with what the link knows about its arrival.
#[derive(Clone, Debug)]
pub struct QueuedPacket {
    /// The packet.
    pub pkt: Packet,
    /// 1-based index of the packet among all that entered the link (the `List` error model
    /// drops by this index).
    pub arrival: u64,
    /// When it entered the queue (sojourn time for AQM and traces).
    pub enqueued_at: Instant,
}

/// A queue discipline: decides which packets wait, which are dropped, and which goes next.
///
/// Every hook takes `now`; the link calls them in time order. Lengths count waiting packets
/// only: the packet being serialised has left the queue.
pub trait QueueDisc {
    /// Offer a packet at `now`; `Err` hands back the packet the discipline refused (dropped).
    /// (A `QueuedPacket` is small, its header bytes being boxed, so returning it by value is cheap.)
    fn enqueue(&mut self, now: Instant, entry: QueuedPacket) -> Result<(), QueuedPacket>;
    /// The next packet to serialise, taken at `now`, or `None` when empty.
    fn dequeue(&mut self, now: Instant) -> Option<QueuedPacket>;
    /// Packets waiting.
    fn len_packets(&self) -> usize;
    /// Bytes waiting (wire lengths).
    fn len_bytes(&self) -> u64;
    /// True when nothing waits.
    fn is_empty(&self) -> bool {
        self.len_packets() == 0
    }
    /// Packets the discipline took out of the queue after accepting them (ACK suppression,
    /// filtering, compaction), since the start; the link reports it as `LinkStats::removed`.
    fn removed(&self) -> u64 {
        0
    }
}

/// The in-tree disciplines, dispatched without `dyn`.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum AnyQueue {
    /// First in, first out, with packet and/or byte limits.
    DropTail(DropTail),
    /// ACK suppression, filtering or compaction ([`crate::ack::AckQueue`]); boxed, so that a
    /// link with a drop-tail queue keeps its hot state in fewer cache lines.
    Ack(Box<AckQueue>),
}

impl AnyQueue {
    /// The discipline a link's settings ask for.
    pub fn from_config(config: &QueueConfig) -> Self {
        match config.kind {
            QueueKind::DropTail => Self::DropTail(DropTail::new(
                config.limit_packets,
                config.limit_bytes.map(ByteSize::bytes),
            )),
            QueueKind::AckSuppression | QueueKind::AckFiltering | QueueKind::AckCompaction => {
                let mode = match config.kind {
                    QueueKind::AckSuppression => AckMode::Suppression,
                    QueueKind::AckFiltering => AckMode::Filtering,
                    _ => AckMode::Compaction,
                };
                Self::Ack(Box::new(AckQueue::new(
                    mode,
                    &config.ack,
                    config.limit_packets,
                    config.limit_bytes.map(ByteSize::bytes),
                )))
            }
        }
    }
}

impl AnyQueue {
    /// Number what a keyed ACK compaction queue authenticates from `epoch · 2³² + 1`
    /// ([`crate::ack::AckQueue::with_epoch`]); other disciplines are unchanged.
    pub fn with_epoch(mut self, epoch: u32) -> Self {
        self.set_epoch(epoch);
        self
    }

    /// For an empty drop-tail queue in front of an idle serialiser: whether `entry` would be
    /// taken in (and so, at once, taken out again). `None` for disciplines that must see every
    /// packet pass through them (the ACK queues rewrite and count what they hold).
    pub fn admits_straight_through(&self, entry: &QueuedPacket) -> Option<bool> {
        match self {
            Self::DropTail(q) if q.len_packets() == 0 => Some(q.admits(entry)),
            _ => None,
        }
    }

    /// For a drop-tail queue whose head left for the serialiser at this instant, `bytes` long:
    /// whether `entry` would be taken in had it arrived before that head left (ns-2's order,
    /// [`crate::link::SameInstant::ArrivalsFirst`]). `None` for the other disciplines, which
    /// keep their own order.
    pub fn admits_before_departure(&self, entry: &QueuedPacket, bytes: u64) -> Option<bool> {
        match self {
            Self::DropTail(q) => Some(q.admits_beside(entry, 1, bytes)),
            Self::Ack(_) => None,
        }
    }

    /// [`with_epoch`](Self::with_epoch) on a queue already in place (a link's).
    pub fn set_epoch(&mut self, epoch: u32) {
        if let Self::Ack(q) = self {
            q.set_epoch(epoch);
        }
    }
}

impl QueueDisc for AnyQueue {
    fn enqueue(&mut self, now: Instant, entry: QueuedPacket) -> Result<(), QueuedPacket> {
        match self {
            Self::DropTail(q) => q.enqueue(now, entry),
            Self::Ack(q) => q.enqueue(now, entry),
        }
    }

    fn dequeue(&mut self, now: Instant) -> Option<QueuedPacket> {
        match self {
            Self::DropTail(q) => q.dequeue(now),
            Self::Ack(q) => q.dequeue(now),
        }
    }

    fn len_packets(&self) -> usize {
        match self {
            Self::DropTail(q) => q.len_packets(),
            Self::Ack(q) => q.len_packets(),
        }
    }

    fn len_bytes(&self) -> u64 {
        match self {
            Self::DropTail(q) => q.len_bytes(),
            Self::Ack(q) => q.len_bytes(),
        }
    }

    fn removed(&self) -> u64 {
        match self {
            Self::DropTail(q) => q.removed(),
            Self::Ack(q) => q.removed(),
        }
    }
}

/// A FIFO of queued packets that keeps its byte total, and lets a discipline remove or rewrite
/// packets in the middle without reordering the rest. Capacity is reused: no allocation per
/// packet once the queue has reached its working size.
#[derive(Clone, Debug, Default)]
pub struct Fifo {
    entries: VecDeque<QueuedPacket>,
    bytes: u64,
}

impl Fifo {
    /// An empty FIFO.
    pub fn new() -> Self {
        Self::default()
    }

    /// Append at the tail.
    pub fn push_back(&mut self, entry: QueuedPacket) {
        self.bytes += entry.pkt.wire_len();
        self.entries.push_back(entry);
    }

    /// Take from the head.
    pub fn pop_front(&mut self) -> Option<QueuedPacket> {
        let entry = self.entries.pop_front()?;
        self.bytes -= entry.pkt.wire_len();
        Some(entry)
    }

    /// Keep only the entries for which `keep` is true, in their order; returns how many were
    /// removed.
    pub fn retain(&mut self, mut keep: impl FnMut(&QueuedPacket) -> bool) -> usize {
        let before = self.entries.len();
        let mut removed_bytes = 0;
        self.entries.retain(|e| {
            let k = keep(e);
            if !k {
                removed_bytes += e.pkt.wire_len();
            }
            k
        });
        self.bytes -= removed_bytes;
        before - self.entries.len()
    }

    /// Rewrite entries in place (e.g. an ACK's number); the byte total is recomputed after, so
    /// `f` may change a packet's length.
    pub fn for_each_mut(&mut self, f: impl FnMut(&mut QueuedPacket)) {
        self.entries.iter_mut().for_each(f);
        self.bytes = self.entries.iter().map(|e| e.pkt.wire_len()).sum();
    }

    /// Entries from head to tail.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &QueuedPacket> {
        self.entries.iter()
    }

    /// Packets held.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Bytes held (wire lengths).
    pub fn bytes(&self) -> u64 {
        self.bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(arrival: u64, payload: u32) -> QueuedPacket {
        QueuedPacket {
            pkt: Packet::new(&[0u8; 40], payload),
            arrival,
            enqueued_at: Instant(0),
        }
    }

    #[test]
    fn fifo_keeps_byte_total_through_remove_and_rewrite() {
        let mut f = Fifo::new();
        for i in 1..=4 {
            f.push_back(entry(i, 960)); // 1000 B each
        }
        assert_eq!((f.len(), f.bytes()), (4, 4000));
        assert_eq!(f.retain(|e| e.arrival % 2 == 0), 2);
        assert_eq!((f.len(), f.bytes()), (2, 2000));
        assert_eq!(f.iter().map(|e| e.arrival).collect::<Vec<_>>(), [2, 4]);
        f.for_each_mut(|e| e.pkt.payload_len = 0); // shrink to bare 40-byte headers
        assert_eq!(f.bytes(), 80);
        assert_eq!(f.pop_front().map(|e| e.arrival), Some(2));
        assert_eq!(f.bytes(), 40);
    }
}
