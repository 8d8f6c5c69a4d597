//! Drop-tail: the FIFO every router had before AQM. An arrival that would take the queue past
//! either limit (packets or bytes) is dropped; nothing already queued is ever dropped.

use super::queue::{Fifo, QueueDisc, QueuedPacket};
use crate::time::Instant;

/// First in, first out, with an optional packet limit and an optional byte limit.
#[derive(Clone, Debug)]
pub struct DropTail {
    limit_packets: Option<usize>,
    limit_bytes: Option<u64>,
    fifo: Fifo,
}

impl DropTail {
    /// A queue holding at most `limit_packets` packets and at most `limit_bytes` bytes (`None`
    /// = no limit of that kind).
    pub fn new(limit_packets: Option<u32>, limit_bytes: Option<u64>) -> Self {
        Self {
            limit_packets: limit_packets.map(|n| n as usize),
            limit_bytes,
            fifo: Fifo::new(),
        }
    }

    /// The packet limit, if any.
    pub fn limit_packets(&self) -> Option<usize> {
        self.limit_packets
    }

    /// The byte limit, if any.
    pub fn limit_bytes(&self) -> Option<u64> {
        self.limit_bytes
    }

    /// Packets waiting, head first.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &QueuedPacket> {
        self.fifo.iter()
    }

    /// Whether `entry` fits under both limits on top of what waits.
    pub fn admits(&self, entry: &QueuedPacket) -> bool {
        self.admits_beside(entry, 0, 0)
    }

    /// Whether `entry` fits under both limits on top of what waits and `packets` more packets
    /// of `bytes` bytes in all (a head that left for the serialiser at this very instant,
    /// when arrivals come first: [`crate::link::SameInstant::ArrivalsFirst`]).
    pub fn admits_beside(&self, entry: &QueuedPacket, packets: usize, bytes: u64) -> bool {
        let too_many = self
            .limit_packets
            .is_some_and(|limit| self.fifo.len() + packets + 1 > limit);
        let too_big = self
            .limit_bytes
            .is_some_and(|limit| self.fifo.bytes() + bytes + entry.pkt.wire_len() > limit);
        !(too_many || too_big)
    }
}

impl QueueDisc for DropTail {
    fn enqueue(&mut self, _now: Instant, entry: QueuedPacket) -> Result<(), QueuedPacket> {
        if !self.admits(&entry) {
            return Err(entry);
        }
        self.fifo.push_back(entry);
        Ok(())
    }

    fn dequeue(&mut self, _now: Instant) -> Option<QueuedPacket> {
        self.fifo.pop_front()
    }

    fn len_packets(&self) -> usize {
        self.fifo.len()
    }

    fn len_bytes(&self) -> u64 {
        self.fifo.bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::node::Packet;

    fn offer(q: &mut DropTail, arrival: u64, wire_len: u32) -> bool {
        let pkt = Packet::new(&[0u8; 20], wire_len - 20);
        q.enqueue(
            Instant(0),
            QueuedPacket {
                pkt,
                arrival,
                enqueued_at: Instant(0),
            },
        )
        .is_ok()
    }

    #[test]
    fn packet_limit_refuses_the_arrival_not_the_queued() {
        let mut q = DropTail::new(Some(2), None);
        let accepted: Vec<bool> = (1..=4).map(|i| offer(&mut q, i, 100)).collect();
        assert_eq!(accepted, [true, true, false, false]);
        assert_eq!(q.iter().map(|e| e.arrival).collect::<Vec<_>>(), [1, 2]);
        assert_eq!(q.dequeue(Instant(0)).map(|e| e.arrival), Some(1));
        assert!(offer(&mut q, 5, 100));
    }

    #[test]
    fn byte_limit_allows_exactly_full() {
        let mut q = DropTail::new(None, Some(2500));
        let accepted: Vec<bool> = [1000, 1000, 1000, 500, 21]
            .iter()
            .zip(1..)
            .map(|(&n, i)| offer(&mut q, i, n))
            .collect();
        // 1000 + 1000 = 2000; +1000 would be 3000 > 2500; +500 = 2500 is allowed; +21 is not.
        assert_eq!(accepted, [true, true, false, true, false]);
        assert_eq!((q.len_packets(), q.len_bytes()), (3, 2500));
    }

    #[test]
    fn either_limit_drops() {
        let mut q = DropTail::new(Some(3), Some(2500));
        let accepted: Vec<bool> = [100, 100, 100, 100]
            .iter()
            .zip(1..)
            .map(|(&n, i)| offer(&mut q, i, n))
            .collect();
        assert_eq!(accepted, [true, true, true, false]); // packet limit bites first
        let mut q = DropTail::new(Some(3), Some(2500));
        let accepted: Vec<bool> = [1500, 1500]
            .iter()
            .zip(1..)
            .map(|(&n, i)| offer(&mut q, i, n))
            .collect();
        assert_eq!(accepted, [true, false]); // byte limit bites first
    }
}
