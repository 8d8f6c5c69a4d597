//! The one interface every mechanism implements, and the packet that flows between them.

use crate::time::Instant;

/// A port of a node. Links have one input and one output, both port 0; hosts and routers number
/// their attachments from 0.
#[derive(Clone, Copy, Debug, Default, Eq, Hash, Ord, PartialEq, PartialOrd)]
pub struct PortId(pub u16);

/// Room for an outer IPv4 header (IP-in-IP tunnels), an inner IPv4 header and a TCP header with
/// 40 bytes of options, plus a small trailer (ACK compaction).
pub const MAX_HEADER: usize = 128;

/// A packet: the real header bytes as on the wire, then a payload that is either *virtual* (only
/// a length; the bytes are taken to be zeros) or *real* (the bytes themselves).
///
/// The simulator's hosts send virtual payload: checksums are computed over zeros, so the headers
/// are valid on the wire and in pcap files (which record the headers only, with the true length).
/// The emulator and the daemons carry real payload read from real programs, and a relay that
/// terminates TCP sends real bytes it received; checksums then cover those bytes.
///
/// Whoever holds the packet holds its bytes: header and payload live together in one heap
/// buffer ([`Storage`] behind a box), so a `Packet` is 32 bytes whatever it carries. A packet is
/// moved a dozen times per hop (node output, event queue, link queue, delay line), and moving 32
/// bytes rather than 150 is most of a simulator's speed. Buffers (with the capacity their payload
/// vector grew to) are recycled through a per-thread free list, so in steady state building a
/// packet allocates nothing, with or without real payload.
#[derive(Clone, Debug)]
pub struct Packet {
    /// Unique id within a run, assigned by whoever created the packet (for traces).
    pub id: u64,
    /// Flow index hint for statistics (not used for forwarding); `u32::MAX` when unknown.
    pub flow: u32,
    hdr_len: u8,
    /// The payload bytes are real (in `buf.payload`), not virtual zeros.
    real: bool,
    /// The header's checksums are known to hold for these exact bytes: whoever computed them
    /// said so ([`Packet::mark_checksums_valid`]), and nothing has changed a byte since. Lets
    /// the emulator skip verifying a payload it summed itself a moment before.
    checksums_valid: bool,
    buf: Buf,
    /// Bytes of payload that follow the header on the wire. Equal to the real payload's length
    /// when there is one; change it only on virtual packets (use [`Packet::set_payload`]).
    pub payload_len: u32,
}

/// Largest real payload a packet may carry: an IPv4 datagram's limit. The emulator's TUN MTU is
/// far below it; larger payloads are refused by [`Packet::try_with_payload`].
pub const MAX_PAYLOAD: usize = 65_535;

impl Packet {
    /// A packet with the given header bytes and a virtual payload of `payload_len` bytes.
    ///
    /// Panics if `header` is longer than [`MAX_HEADER`]: headers are built by our own code.
    pub fn new(header: &[u8], payload_len: u32) -> Self {
        Self::with_buf(Buf::take(false), header, payload_len)
    }

    /// A packet with header `header` in `buf` and a virtual payload of `payload_len` bytes.
    fn with_buf(mut buf: Buf, header: &[u8], payload_len: u32) -> Self {
        buf.hdr[..header.len()].copy_from_slice(header);
        Self {
            id: 0,
            flow: u32::MAX,
            hdr_len: header.len() as u8,
            real: false,
            checksums_valid: false,
            buf,
            payload_len,
        }
    }

    /// A packet whose header is written by `fill` into a zeroed buffer; `fill` returns the length.
    /// The payload is virtual.
    #[inline]
    pub fn build(payload_len: u32, fill: impl FnOnce(&mut [u8; MAX_HEADER]) -> usize) -> Self {
        let mut buf = Buf::take(false);
        let n = fill(&mut buf.hdr).min(MAX_HEADER);
        Self {
            id: 0,
            flow: u32::MAX,
            hdr_len: n as u8,
            real: false,
            checksums_valid: false,
            buf,
            payload_len,
        }
    }

    /// A packet as read from a wire: the first `header_len` bytes of `bytes` are its header, the
    /// rest its real payload. `None` when the header would not fit [`MAX_HEADER`] or is longer than
    /// `bytes`, or the payload exceeds [`MAX_PAYLOAD`] (network input: the caller counts and drops).
    pub fn from_wire(bytes: &[u8], header_len: usize) -> Option<Self> {
        if header_len > MAX_HEADER || header_len > bytes.len() {
            return None;
        }
        let (h, p) = bytes.split_at(header_len);
        Self::try_with_payload(h, p)
    }

    /// A packet with the given header and real `payload` bytes (copied into the packet's pooled
    /// buffer). `None` when the header exceeds [`MAX_HEADER`] or the payload [`MAX_PAYLOAD`].
    pub fn try_with_payload(header: &[u8], payload: &[u8]) -> Option<Self> {
        if header.len() > MAX_HEADER || payload.len() > MAX_PAYLOAD {
            return None;
        }
        let mut pkt = Self::with_buf(Buf::take(!payload.is_empty()), header, 0);
        pkt.set_payload(payload);
        Some(pkt)
    }

    /// Header bytes (IPv4 and everything up to the payload).
    #[inline]
    pub fn header(&self) -> &[u8] {
        &self.buf.hdr[..usize::from(self.hdr_len)]
    }

    /// Header bytes, writable in place (ACK rewriting, checksum updates). The checksums are no
    /// longer known to hold ([`Packet::checksums_known_valid`]).
    #[inline]
    pub fn header_mut(&mut self) -> &mut [u8] {
        self.checksums_valid = false;
        &mut self.buf.hdr[..usize::from(self.hdr_len)]
    }

    /// Header bytes, writable in place by a change that patches every checksum it touches
    /// incrementally (RFC 1624), such as a router's TTL decrement: checksums that held still
    /// hold, so what was known of them is kept.
    #[inline]
    pub fn header_mut_patching_checksums(&mut self) -> &mut [u8] {
        &mut self.buf.hdr[..usize::from(self.hdr_len)]
    }

    /// Record that the header's checksums (IPv4 and transport) hold for the packet's bytes as
    /// they are now: call only right after computing or verifying them.
    #[inline]
    pub fn mark_checksums_valid(&mut self) {
        self.checksums_valid = true;
    }

    /// Whether the checksums are known to hold without summing the bytes again: marked with
    /// [`Packet::mark_checksums_valid`] and unchanged since (every method that can change the
    /// header or the payload forgets it, but [`Packet::header_mut_patching_checksums`]).
    #[inline]
    pub fn checksums_known_valid(&self) -> bool {
        self.checksums_valid
    }

    /// Replace the header, keeping the payload. Panics past [`MAX_HEADER`].
    pub fn set_header(&mut self, header: &[u8]) {
        self.checksums_valid = false;
        self.buf.hdr[..header.len()].copy_from_slice(header);
        self.hdr_len = header.len() as u8;
    }

    /// Put `outer` in front of the header (encapsulation), keeping the payload where it is.
    /// False, and nothing changed, when the result would exceed [`MAX_HEADER`].
    pub fn prepend_header(&mut self, outer: &[u8]) -> bool {
        let (n, old) = (outer.len(), self.header_len());
        if n + old > MAX_HEADER {
            return false;
        }
        self.checksums_valid = false;
        self.buf.hdr.copy_within(..old, n);
        self.buf.hdr[..n].copy_from_slice(outer);
        self.hdr_len = (n + old) as u8;
        true
    }

    /// Remove the first `n` header bytes (decapsulation), keeping the payload. Removes the whole
    /// header when `n` exceeds it.
    pub fn strip_header_front(&mut self, n: usize) {
        let old = self.header_len();
        let n = n.min(old);
        self.checksums_valid = false;
        self.buf.hdr.copy_within(n..old, 0);
        self.hdr_len = (old - n) as u8;
    }

    /// Length of the header bytes.
    #[inline]
    pub fn header_len(&self) -> usize {
        usize::from(self.hdr_len)
    }

    /// The payload bytes when they are real; `None` when the payload is virtual (zeros).
    #[inline]
    pub fn payload(&self) -> Option<&[u8]> {
        self.real.then(|| &self.buf.payload[..])
    }

    /// Whether the payload bytes are real.
    #[inline]
    pub fn has_real_payload(&self) -> bool {
        self.real
    }

    /// Make the payload real and equal to `data` (checksums are the caller's: see
    /// `wire::fill_tcp_checksum`). Panics past [`MAX_PAYLOAD`]: payloads are sized by our code.
    pub fn set_payload(&mut self, data: &[u8]) {
        self.fill_payload(|v| v.extend_from_slice(data));
    }

    /// Make the payload real and let `fill` write it into the (cleared, pooled) vector: no copy
    /// through a temporary. Panics if `fill` writes more than [`MAX_PAYLOAD`] bytes.
    pub fn fill_payload(&mut self, fill: impl FnOnce(&mut Vec<u8>)) {
        self.checksums_valid = false;
        let v = &mut self.buf.payload;
        v.clear();
        fill(v);
        assert!(v.len() <= MAX_PAYLOAD, "payload of {} bytes", v.len());
        self.payload_len = v.len() as u32;
        self.real = true;
    }

    /// Make the payload virtual again, keeping its length (drops the bytes).
    pub fn make_virtual(&mut self) {
        self.checksums_valid = false;
        self.buf.payload.clear();
        self.real = false;
    }

    /// Bytes this packet occupies on the wire (header + payload).
    #[inline]
    pub fn wire_len(&self) -> u64 {
        u64::from(self.hdr_len) + u64::from(self.payload_len)
    }

    /// The whole packet as on the wire, appended to `out`: header, then the real payload or
    /// `payload_len` zeros.
    pub fn write_wire(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(self.header());
        match self.payload() {
            Some(p) => out.extend_from_slice(p),
            None => out.resize(out.len() + self.payload_len as usize, 0),
        }
    }
}

/// Free packet buffers of this thread. Bounded, so a burst does not pin memory forever.
const POOL_MAX: usize = 1 << 16;

/// Payload capacity the free list may keep, bytes, all buffers together: what a drained burst
/// leaves reserved at most (64 MiB ≈ 44 000 MTU-sized payloads, enough that an emulator in
/// steady state at 1 Gb/s and 250 ms never allocates). Past it, freed buffers give their
/// payload capacity back to the allocator.
const POOL_PAYLOAD_BYTES: usize = 64 << 20;

/// A payload vector that grew past this (a jumbo or a GSO-sized datagram) is not kept in the pool.
const POOLED_PAYLOAD_CAPACITY: usize = 9 * 1024;

/// A packet's bytes: header room and the real payload (empty and unallocated when virtual).
#[derive(Debug)]
struct Storage {
    hdr: [u8; MAX_HEADER],
    payload: Vec<u8>,
}

/// The boxes themselves are what is recycled (handed back to packets as they are), so the
/// lists hold boxes, not arrays. Buffers that keep a payload capacity and those without one are
/// kept apart, so that a packet with real payload takes one that has room (a header-only packet
/// — an ACK — freed just before would otherwise come first off one stack, and the payload would
/// be allocated anew: 5 % of the emulator loop's time at 2 Gb/s went to `malloc` that way).
#[allow(clippy::vec_box)]
#[derive(Default)]
struct Pool {
    /// Free buffers with payload capacity.
    free: Vec<Box<Storage>>,
    /// Free buffers without.
    bare: Vec<Box<Storage>>,
    /// Payload capacity held by the buffers in `free`, bytes.
    free_payload_bytes: usize,
    /// Buffers now held by a packet (taken, not yet back).
    live: usize,
}

impl Pool {
    /// A free buffer: one with payload capacity first if `for_payload`, one without first
    /// otherwise.
    fn pop(&mut self, for_payload: bool) -> Option<Box<Storage>> {
        let b = if for_payload {
            self.free.pop().or_else(|| self.bare.pop())
        } else {
            self.bare.pop().or_else(|| self.free.pop())
        };
        if let Some(b) = &b {
            self.free_payload_bytes -= b.payload.capacity();
        }
        b
    }

    /// Keep `b` for reuse, within the pool's bounds.
    fn push(&mut self, mut b: Box<Storage>) {
        if self.free.len() + self.bare.len() >= POOL_MAX {
            return;
        }
        let cap = b.payload.capacity();
        if cap > POOLED_PAYLOAD_CAPACITY || self.free_payload_bytes + cap > POOL_PAYLOAD_BYTES {
            b.payload = Vec::new();
        }
        if b.payload.capacity() == 0 {
            self.bare.push(b);
        } else {
            self.free_payload_bytes += b.payload.capacity();
            self.free.push(b);
        }
    }
}

thread_local! {
    static POOL: std::cell::RefCell<Pool> = const {
        std::cell::RefCell::new(Pool {
            free: Vec::new(),
            bare: Vec::new(),
            free_payload_bytes: 0,
            live: 0,
        })
    };
}

/// Packets alive on this thread: buffers taken and not yet dropped. A driver whose network has
/// drained checks this is back to where it started, i.e. that no node kept (leaked) a packet.
pub fn live_packets() -> usize {
    POOL.with(|p| p.borrow().live)
}

/// A packet's storage: a box taken from, and returned to, a per-thread free list. The list holds
/// plain byte buffers only, so it cannot change any result: it only spares the allocator (the
/// simulator's hot path performs no heap allocation once the pool is warm).
#[derive(Debug)]
struct Buf(Option<Box<Storage>>);

impl Buf {
    /// A buffer with a zeroed header and an empty payload; `for_payload`: one that has
    /// payload capacity, if the pool holds one.
    #[inline]
    fn take(for_payload: bool) -> Self {
        let buf = POOL
            .with(|p| {
                let mut p = p.borrow_mut();
                p.live += 1;
                p.pop(for_payload)
            })
            .map_or_else(
                || {
                    Box::new(Storage {
                        hdr: [0u8; MAX_HEADER],
                        payload: Vec::new(),
                    })
                },
                |mut b| {
                    b.hdr.fill(0);
                    b.payload.clear();
                    b
                },
            );
        Self(Some(buf))
    }
}

impl std::ops::Deref for Buf {
    type Target = Storage;
    #[inline]
    fn deref(&self) -> &Storage {
        // NOTE(unwrap): the buffer is `None` only inside `drop`.
        self.0.as_deref().expect("packet buffer present until drop")
    }
}

impl std::ops::DerefMut for Buf {
    #[inline]
    fn deref_mut(&mut self) -> &mut Storage {
        // NOTE(unwrap): the buffer is `None` only inside `drop`.
        self.0
            .as_deref_mut()
            .expect("packet buffer present until drop")
    }
}

impl Clone for Buf {
    fn clone(&self) -> Self {
        let mut new = Self::take(!self.payload.is_empty());
        new.hdr.copy_from_slice(&self.hdr[..]);
        new.payload.extend_from_slice(&self.payload);
        new
    }
}

impl Drop for Buf {
    #[inline]
    fn drop(&mut self) {
        if let Some(b) = self.0.take() {
            // `try_with`: during thread teardown the pool may already be gone; then just free.
            let _ = POOL.try_with(|p| {
                let mut p = p.borrow_mut();
                p.live = p.live.saturating_sub(1);
                p.push(b);
            });
        }
    }
}

/// A packet a node wants sent out of one of its ports.
#[derive(Clone, Debug)]
pub struct Transmit {
    /// The port it leaves by.
    pub port: PortId,
    /// The packet.
    pub pkt: Packet,
}

/// Why a node dropped a packet (see [`Node::poll_drop`]).
#[derive(Clone, Copy, Debug, Eq, Hash, Ord, PartialEq, PartialOrd)]
pub enum DropReason {
    /// The queue discipline refused it (full queue).
    QueueFull,
    /// The link's error model corrupted it on the line.
    LineError,
    /// A header-compressed packet the decompressor could not restore.
    Decompression,
    /// Not a packet the node can read (too short, not IPv4).
    Malformed,
    /// No route toward its destination.
    NoRoute,
    /// Its TTL ran out.
    TtlExpired,
    /// The outside host's driver did not take arrivals fast enough.
    Overflow,
}

impl DropReason {
    /// Every reason, in the order of the enum (for per-reason counters).
    pub const ALL: [Self; 7] = [
        Self::QueueFull,
        Self::LineError,
        Self::Decompression,
        Self::Malformed,
        Self::NoRoute,
        Self::TtlExpired,
        Self::Overflow,
    ];

    /// Name used in outputs.
    pub fn name(self) -> &'static str {
        match self {
            Self::QueueFull => "queue_full",
            Self::LineError => "line_error",
            Self::Decompression => "decompression",
            Self::Malformed => "malformed",
            Self::NoRoute => "no_route",
            Self::TtlExpired => "ttl_expired",
            Self::Overflow => "overflow",
        }
    }
}

/// A packet a node dropped: what a driver records (a trace, per-reason counters) without
/// having to guess where a packet went. The packet itself is gone (its buffer back in the pool).
#[derive(Clone, Copy, Debug, Eq, PartialEq)]
pub struct Dropped {
    /// The packet's id.
    pub id: u64,
    /// Its flow hint.
    pub flow: u32,
    /// Bytes it occupied on the wire.
    pub wire_len: u64,
    /// Why.
    pub reason: DropReason,
}

impl Dropped {
    /// The record of dropping `pkt` for `reason`.
    pub fn of(pkt: &Packet, reason: DropReason) -> Self {
        Self {
            id: pkt.id,
            flow: pkt.flow,
            wire_len: pkt.wire_len(),
            reason,
        }
    }
}

/// Drops a node has not yet reported, bounded: a driver that never asks cannot make it grow
/// past [`DropLog::CAPACITY`] (older records are then lost and counted), plus a count per
/// reason that is never lost. A driver that only counts reads [`DropLog::counts`] when it
/// reports, and pays nothing per packet; one that traces drains [`Node::poll_drop`].
#[derive(Clone, Debug, Default)]
pub struct DropLog {
    records: std::collections::VecDeque<Dropped>,
    counts: [u64; DropReason::ALL.len()],
    /// Records discarded because nobody drained the log.
    pub discarded: u64,
}

impl DropLog {
    /// Most records kept.
    pub const CAPACITY: usize = 1024;

    /// Record a drop.
    #[cold]
    pub fn push(&mut self, d: Dropped) {
        self.counts[d.reason as usize] += 1;
        if self.records.len() >= Self::CAPACITY {
            self.records.pop_front();
            self.discarded += 1;
        }
        self.records.push_back(d);
    }

    /// Drops so far per reason, in [`DropReason::ALL`] order (drained or not).
    pub fn counts(&self) -> [u64; DropReason::ALL.len()] {
        self.counts
    }

    /// Oldest unreported drop.
    #[inline]
    pub fn pop(&mut self) -> Option<Dropped> {
        self.records.pop_front()
    }
}

/// A sans-IO network element: a link, a host, a router, a PEP.
///
/// Contract: time never goes backwards between calls. After every `handle_*` call the driver
/// drains [`poll_transmit`](Node::poll_transmit) until `None`, then reads
/// [`poll_timeout`](Node::poll_timeout), then drains [`poll_drop`](Node::poll_drop).
/// `handle_timeout` may be called late or more than once: early and repeated calls do nothing.
pub trait Node {
    /// A packet arrived on `port` at `now`.
    fn handle_packet(&mut self, now: Instant, port: PortId, pkt: Packet);
    /// Called at or after the instant returned by `poll_timeout`.
    fn handle_timeout(&mut self, now: Instant);
    /// Next packet to send; `None` when there is nothing more at `now`.
    fn poll_transmit(&mut self, now: Instant) -> Option<Transmit>;
    /// Earliest instant at which `handle_timeout` must run; `None` when only a packet can wake us.
    fn poll_timeout(&self) -> Option<Instant>;
    /// Next packet this node dropped since the last call (links, routers and hosts report
    /// theirs; a mechanism that reports none keeps its own counters).
    fn poll_drop(&mut self) -> Option<Dropped> {
        None
    }
    /// Packets this node dropped so far, per reason in [`DropReason::ALL`] order, whether
    /// drained through [`poll_drop`](Node::poll_drop) or not.
    fn drop_counts(&self) -> [u64; DropReason::ALL.len()] {
        [0; DropReason::ALL.len()]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recycled_buffers_come_back_zeroed_and_packets_stay_independent() {
        let a = Packet::new(&[0xff; 100], 10);
        drop(a);
        // The next packet may reuse a's buffer: bytes past its header must read as zeros.
        let b = Packet::build(0, |buf| {
            assert!(
                buf.iter().all(|&x| x == 0),
                "a recycled buffer was not zeroed"
            );
            buf[0] = 0x45;
            20
        });
        let mut c = b.clone();
        c.header_mut()[0] = 0x46;
        assert_eq!(b.header()[0], 0x45);
        assert_eq!(c.header()[0], 0x46);
        assert_eq!(std::mem::size_of::<Packet>(), 32);
    }

    /// A packet with real payload takes a freed buffer that has payload room, even when a
    /// header-only packet (an ACK) was freed after it.
    #[test]
    fn payload_packets_reuse_payload_buffers_past_freed_acks() {
        let data = [7u8; 1448];
        let a = Packet::try_with_payload(&[0x45; 40], &data).expect("fits");
        let a_payload = a.payload().expect("real").as_ptr();
        let ack = Packet::try_with_payload(&[0x45; 40], &[]).expect("fits");
        drop(a);
        drop(ack); // on top of `a` on a single free list
        let b = Packet::try_with_payload(&[0x45; 40], &data).expect("fits");
        assert_eq!(
            b.payload().expect("real").as_ptr(),
            a_payload,
            "a's payload room reused"
        );
        assert_eq!(b.payload(), Some(&data[..]));
        // A header-only packet takes the ACK's bare buffer, not the payload room b frees.
        let payload_free = POOL.with(|p| p.borrow().free_payload_bytes);
        drop(b);
        let ack2 = Packet::new(&[0x45; 40], 0);
        let kept = POOL.with(|p| p.borrow().free_payload_bytes) - payload_free;
        assert!(kept >= data.len(), "payload room kept: {kept}");
        drop(ack2);
        // Pool bookkeeping: what is free holds exactly the payload capacity it counts.
        POOL.with(|p| {
            let p = p.borrow();
            let held: usize = p.free.iter().map(|b| b.payload.capacity()).sum();
            assert_eq!(held, p.free_payload_bytes);
            assert!(p.bare.iter().all(|b| b.payload.capacity() == 0));
            assert!(p.free.iter().all(|b| b.payload.capacity() > 0));
        });
    }

    /// The pool is bounded: freed buffers past `POOL_MAX` are let go, payload room past
    /// `POOL_PAYLOAD_BYTES` is given back (up to the cap, exactly, it is kept), and a payload
    /// vector grown past `POOLED_PAYLOAD_CAPACITY` is never kept (one of exactly that is); what
    /// the pool counts is what it holds.
    #[test]
    fn the_pool_keeps_payload_room_up_to_its_caps() {
        let data = [1u8; 2048]; // divides the byte cap: the last buffer fills it exactly
        let fit = POOL_PAYLOAD_BYTES / data.len();
        let n = fit + 100;
        let pkts: Vec<Packet> = (0..n)
            .map(|_| Packet::try_with_payload(&[0x45; 20], &data).expect("fits"))
            .collect();
        assert_eq!(live_packets(), n);
        drop(pkts);
        POOL.with(|p| {
            let p = p.borrow();
            let held: usize = p.free.iter().map(|b| b.payload.capacity()).sum();
            assert_eq!(held, p.free_payload_bytes);
            assert_eq!(held, POOL_PAYLOAD_BYTES, "kept up to the cap, exactly");
            assert_eq!((p.free.len(), p.bare.len()), (fit, 100));
        });
        let at_cap = |len: usize| {
            let pkts: Vec<Packet> = (0..fit)
                .map(|_| Packet::try_with_payload(&[0x45; 20], &data).expect("fits"))
                .collect();
            let one = Packet::try_with_payload(&[0x45; 20], &vec![0; len]).expect("fits");
            drop(pkts); // the byte cap is full again: free five buffers' worth under it
            POOL.with(|p| {
                let mut p = p.borrow_mut();
                for _ in 0..5 {
                    assert!(p
                        .pop(true)
                        .is_some_and(|b| b.payload.capacity() == data.len()));
                }
            });
            let before = POOL.with(|p| p.borrow().free.len());
            drop(one);
            POOL.with(|p| p.borrow().free.len()) - before
        };
        assert_eq!(
            at_cap(POOLED_PAYLOAD_CAPACITY),
            1,
            "exactly the largest pooled payload: kept"
        );
        assert_eq!(
            at_cap(POOLED_PAYLOAD_CAPACITY + 1),
            0,
            "one byte more: not kept"
        );
        let many: Vec<Packet> = (0..POOL_MAX + 10)
            .map(|_| Packet::new(&[0x45; 20], 0))
            .collect();
        drop(many);
        POOL.with(|p| {
            let p = p.borrow();
            assert_eq!(p.free.len() + p.bare.len(), POOL_MAX);
            assert!(p
                .free
                .iter()
                .all(|b| b.payload.capacity() <= POOLED_PAYLOAD_CAPACITY));
        });
        assert_eq!(live_packets(), 0);
    }

    /// Network input at the limits: a header of exactly `MAX_HEADER` bytes and a payload of
    /// exactly `MAX_PAYLOAD` fit; one byte more of either is refused, not a panic.
    #[test]
    fn packets_from_the_wire_fit_exactly_to_the_limits() {
        let p = Packet::try_with_payload(&[0x45; MAX_HEADER], &vec![3; MAX_PAYLOAD]).expect("fits");
        assert_eq!(p.wire_len(), (MAX_HEADER + MAX_PAYLOAD) as u64);
        assert!(Packet::try_with_payload(&[0x45; MAX_HEADER + 1], &[]).is_none());
        assert!(Packet::try_with_payload(&[0x45; 20], &vec![3; MAX_PAYLOAD + 1]).is_none());
        assert!(Packet::from_wire(&[0x45; 40], 41).is_none());
    }

    /// A clone of a payload packet also takes payload room, past a freed ACK; live buffers are
    /// counted one by one.
    #[test]
    fn clones_take_payload_room_and_buffers_are_counted() {
        let data = [9u8; 1000];
        let a = Packet::try_with_payload(&[0x45; 40], &data).expect("fits");
        let room = a.payload().expect("real").as_ptr();
        let b = Packet::try_with_payload(&[0x45; 40], &data).expect("fits");
        let ack = Packet::new(&[0x45; 40], 0);
        assert_eq!(live_packets(), 3);
        drop(a);
        drop(ack);
        assert_eq!(live_packets(), 1);
        let c = b.clone();
        assert_eq!(c.payload().expect("real").as_ptr(), room);
        assert_eq!(live_packets(), 2);
        drop((b, c));
        assert_eq!(live_packets(), 0);
    }

    /// What is known of the checksums survives only what keeps them: a clone, a router's
    /// patched TTL; every other change to header or payload forgets it.
    #[test]
    fn checksum_knowledge_is_forgotten_by_every_change_but_a_patch() {
        let fresh = || {
            let mut p = Packet::try_with_payload(&[0x45; 40], b"data").expect("fits");
            assert!(!p.checksums_known_valid(), "nobody vouched yet");
            p.mark_checksums_valid();
            assert!(p.checksums_known_valid());
            p
        };
        let mut p = fresh();
        p.header_mut_patching_checksums()[8] -= 1;
        assert!(p.checksums_known_valid() && p.clone().checksums_known_valid());
        type Change = (&'static str, fn(&mut Packet));
        let changes: [Change; 7] = [
            ("header_mut", |p| p.header_mut()[0] = 0x46),
            ("set_header", |p| p.set_header(&[0x45; 20])),
            ("prepend_header", |p| assert!(p.prepend_header(&[0x45; 20]))),
            ("strip_header_front", |p| p.strip_header_front(20)),
            ("set_payload", |p| p.set_payload(b"other")),
            ("fill_payload", |p| p.fill_payload(|v| v.push(1))),
            ("make_virtual", |p| p.make_virtual()),
        ];
        for (name, change) in changes {
            let mut p = fresh();
            change(&mut p);
            assert!(!p.checksums_known_valid(), "{name} kept it");
        }
        assert!(!Packet::new(&[0x45; 20], 0).checksums_known_valid());
        assert!(!Packet::build(0, |_| 20).checksums_known_valid());
    }

    #[test]
    fn real_payload_travels_with_the_packet_and_is_not_leaked_into_the_next_one() {
        let p = Packet::try_with_payload(&[0x45; 40], b"hello, satellite").expect("fits");
        assert_eq!(p.payload(), Some(&b"hello, satellite"[..]));
        assert_eq!(p.payload_len, 16);
        assert_eq!(p.wire_len(), 56);
        let q = p.clone();
        drop(p);
        assert_eq!(
            q.payload(),
            Some(&b"hello, satellite"[..]),
            "clone owns its bytes"
        );
        let mut wire = Vec::new();
        q.write_wire(&mut wire);
        assert_eq!(&wire[40..], b"hello, satellite");
        drop(q);
        // The recycled buffers carry no payload into a virtual packet.
        let v = Packet::new(&[0x45; 20], 1000);
        assert_eq!(v.payload(), None);
        let mut wire = Vec::new();
        v.write_wire(&mut wire);
        assert_eq!(wire.len(), 1020);
        assert!(wire[20..].iter().all(|&b| b == 0));
    }

    #[test]
    fn encapsulation_in_place_keeps_the_payload() {
        let mut p = Packet::try_with_payload(&[1, 2, 3, 4], b"data").expect("fits");
        assert!(p.prepend_header(&[9; 20]));
        assert_eq!(p.header_len(), 24);
        assert_eq!(&p.header()[20..], &[1, 2, 3, 4]);
        assert!(!p.prepend_header(&[0; MAX_HEADER]), "would not fit");
        p.strip_header_front(20);
        assert_eq!(p.header(), &[1, 2, 3, 4]);
        assert_eq!(p.payload(), Some(&b"data"[..]));
        p.strip_header_front(99);
        assert_eq!(p.header_len(), 0);
    }

    #[test]
    fn from_wire_refuses_what_does_not_fit() {
        let bytes = vec![7u8; 300];
        assert!(Packet::from_wire(&bytes, MAX_HEADER + 1).is_none());
        assert!(Packet::from_wire(&bytes[..10], 20).is_none());
        let big = vec![0u8; MAX_PAYLOAD + 41];
        assert!(Packet::from_wire(&big, 40).is_none());
        let p = Packet::from_wire(&bytes, 60).expect("fits");
        assert_eq!((p.header_len(), p.payload_len), (60, 240));
        let mut back = Vec::new();
        p.write_wire(&mut back);
        assert_eq!(back, bytes);
    }
}
