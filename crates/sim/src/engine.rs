//! The event queue: virtual time in integer nanoseconds, total order by (time, insertion
//! sequence), and lazy timers.
//!
//! Wires between nodes are zero-delay (delay lives in link nodes), so deliveries are scheduled
//! for "now"; they go to a FIFO instead of the heap (those into links and plain routers are
//! not events at all: the simulation hands them over at once, see `Simulation::flush`). Both queues hold `(time, seq)` keys and the
//! engine always takes the smaller key, so the order is exactly (time, seq) either way.
//!
//! Timers are lazy: a node's wake-up is pushed only when its deadline moves *earlier*; when it
//! moves later the old wake-up stays and fires early, which the `Node` contract makes harmless.
//! A TCP sender restarts its RTO on every ACK, so this saves one heap entry per ACK.

use std::collections::VecDeque;

use satpep_proto::{Instant, Packet, PortId};

/// Index of a node in the engine.
pub type NodeId = usize;

/// Something that happens at an instant.
#[derive(Debug)]
pub enum Event {
    /// A packet arrives at `to` on `port`.
    Deliver {
        /// Receiving node.
        to: NodeId,
        /// Port it arrives on.
        port: PortId,
        /// The packet.
        pkt: Packet,
    },
    /// A node's timer, armed for `at`.
    Wake {
        /// The node.
        node: NodeId,
    },
    /// A driver-defined event (sampling, stop), identified by a number.
    Tick(u32),
}

/// An event waiting for "now" (the FIFO), in full.
struct Entry {
    at: Instant,
    seq: u64,
    event: Event,
}

/// What the heap holds: a small key, so that sifting moves 24 bytes rather than a packet.
/// `what` is a node id for wake-ups, or an index into `parked` for anything else.
#[derive(Clone, Copy, Debug, Eq, PartialEq)]
struct Key {
    at: Instant,
    seq: u64,
    what: u64,
}

/// Ordered by `(at, seq)` only: `seq` is unique, so `what` never decides, and leaving it out
/// keeps the comparison in the heap's inner loop to two integers.
impl Ord for Key {
    #[inline]
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (self.at, self.seq).cmp(&(other.at, other.seq))
    }
}

impl PartialOrd for Key {
    #[inline]
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

const PARKED: u64 = 1 << 63;

/// A 4-ary min-heap of keys: half the depth of a binary heap, and the four children of a node
/// share a cache line or two. Keys are unique (by `seq`), so any correct heap pops the same
/// order.
#[derive(Default)]
struct QuadHeap {
    v: Vec<Key>,
}

impl QuadHeap {
    #[inline]
    fn peek(&self) -> Option<&Key> {
        self.v.first()
    }

    #[inline]
    fn push(&mut self, k: Key) {
        let mut i = self.v.len();
        self.v.push(k);
        while i > 0 {
            let p = (i - 1) / 4;
            if self.v[p] <= k {
                break;
            }
            self.v[i] = self.v[p];
            i = p;
        }
        self.v[i] = k;
    }

    #[inline]
    fn pop(&mut self) -> Option<Key> {
        let last = self.v.pop()?;
        let Some(&top) = self.v.first() else {
            return Some(last);
        };
        let n = self.v.len();
        let mut i = 0;
        loop {
            let first = 4 * i + 1;
            if first >= n {
                break;
            }
            let mut m = first;
            for c in first + 1..(first + 4).min(n) {
                if self.v[c] < self.v[m] {
                    m = c;
                }
            }
            if self.v[m] >= last {
                break;
            }
            self.v[i] = self.v[m];
            i = m;
        }
        self.v[i] = last;
        Some(top)
    }
}

/// A timing wheel of keys (a calendar queue with one year): bucket `b` holds the keys whose
/// instant `at >> SHIFT` is `b`. Buckets after the current one, up to `SLOTS` of them, are
/// unsorted vectors in a ring; the current bucket and anything at or before it are in a small
/// heap (`near`); keys beyond the ring's span wait in a heap (`far`) and move into the ring as
/// it turns. Pops come out in exactly (at, seq) order, as from [`QuadHeap`].
struct Wheel {
    near: QuadHeap,
    ring: Vec<Vec<Key>>,
    /// Keys in `ring`.
    in_ring: usize,
    far: QuadHeap,
    /// The current bucket: `near` holds every key of bucket ≤ `cur`, the ring those of
    /// `cur + 1 ..= cur + SLOTS - 1`, `far` the rest.
    cur: u64,
}

impl Wheel {
    /// Bucket width 2^14 ns (16.4 µs: a few 1500-byte packets at 1 Gb/s) ...
    const SHIFT: u32 = 14;
    /// ... and 2^15 buckets: a span of 537 ms, beyond a GEO round trip.
    const SLOTS: u64 = 1 << 15;

    fn new() -> Self {
        Self {
            near: QuadHeap::default(),
            ring: (0..Self::SLOTS).map(|_| Vec::new()).collect(),
            in_ring: 0,
            far: QuadHeap::default(),
            cur: 0,
        }
    }

    #[inline]
    fn peek(&self) -> Option<&Key> {
        self.near.peek()
    }

    #[inline]
    fn push(&mut self, k: Key) {
        let b = k.at.0 >> Self::SHIFT;
        if b <= self.cur {
            self.near.push(k);
            return;
        }
        if b - self.cur < Self::SLOTS {
            self.ring[(b % Self::SLOTS) as usize].push(k);
            self.in_ring += 1;
        } else {
            self.far.push(k);
        }
        if self.near.v.is_empty() {
            self.turn();
        }
    }

    #[inline]
    fn pop(&mut self) -> Option<Key> {
        let k = self.near.pop()?;
        if self.near.v.is_empty() {
            self.turn();
        }
        Some(k)
    }

    /// `near` ran empty: move to the next bucket that holds keys and take them into `near`.
    #[cold]
    fn turn(&mut self) {
        loop {
            if self.in_ring == 0 {
                // Nothing in the ring: jump to the far heap's first bucket.
                let Some(first) = self.far.peek() else { return };
                self.cur = (first.at.0 >> Self::SHIFT) - 1;
            }
            self.cur += 1;
            // Keys of the far heap that the ring now spans (its last slot is new).
            while let Some(&k) = self.far.peek() {
                let b = k.at.0 >> Self::SHIFT;
                if b - self.cur >= Self::SLOTS {
                    break;
                }
                self.far.pop();
                if b == self.cur {
                    self.near.push(k);
                } else {
                    self.ring[(b % Self::SLOTS) as usize].push(k);
                    self.in_ring += 1;
                }
            }
            let slot = &mut self.ring[(self.cur % Self::SLOTS) as usize];
            self.in_ring -= slot.len();
            for k in slot.drain(..) {
                self.near.push(k);
            }
            if !self.near.v.is_empty() {
                return;
            }
        }
    }
}

/// Which structure orders the future events.
enum Future {
    Heap(QuadHeap),
    Wheel(Box<Wheel>),
}

impl Future {
    #[inline]
    fn peek(&self) -> Option<&Key> {
        match self {
            Self::Heap(h) => h.peek(),
            Self::Wheel(w) => w.peek(),
        }
    }

    #[inline]
    fn push(&mut self, k: Key) {
        match self {
            Self::Heap(h) => h.push(k),
            Self::Wheel(w) => w.push(k),
        }
    }

    #[inline]
    fn pop(&mut self) -> Option<Key> {
        match self {
            Self::Heap(h) => h.pop(),
            Self::Wheel(w) => w.pop(),
        }
    }
}

/// The structure behind [`EventQueue`] for future events; both pop the same order.
#[derive(Clone, Copy, Debug, Default, Eq, PartialEq)]
pub enum QueueKind {
    /// A 4-ary heap.
    #[default]
    Heap,
    /// A timing wheel of 16 µs buckets over 537 ms, with a heap beyond.
    Wheel,
}

/// The event queue and the lazy-timer bookkeeping.
pub struct EventQueue {
    heap: Future,
    immediate: VecDeque<Entry>,
    /// Future events other than wake-ups (rare: ticks, packets scheduled ahead).
    parked: Vec<Option<Event>>,
    free_parked: Vec<usize>,
    seq: u64,
    now: Instant,
    armed: Vec<Option<Instant>>,
    processed: u64,
}

impl EventQueue {
    /// An empty queue for `nodes` nodes.
    pub fn new(nodes: usize) -> Self {
        Self {
            heap: Future::Heap(QuadHeap::default()),
            immediate: VecDeque::with_capacity(1024),
            parked: Vec::new(),
            free_parked: Vec::new(),
            seq: 0,
            now: Instant::ZERO,
            armed: vec![None; nodes],
            processed: 0,
        }
    }

    /// Order future events with `kind` from now on (the events already queued move over).
    pub fn set_kind(&mut self, kind: QueueKind) {
        let mut next = match kind {
            QueueKind::Heap => Future::Heap(QuadHeap::default()),
            QueueKind::Wheel => {
                let mut w = Wheel::new();
                w.cur = self.now.0 >> Wheel::SHIFT;
                Future::Wheel(Box::new(w))
            }
        };
        while let Some(k) = self.heap.pop() {
            next.push(k);
        }
        self.heap = next;
    }

    /// Current virtual time.
    pub fn now(&self) -> Instant {
        self.now
    }

    /// Events taken off the queue so far (stale timer entries excluded).
    pub fn processed(&self) -> u64 {
        self.processed
    }

    /// Schedule `event` at `at` (never before now).
    pub fn push(&mut self, at: Instant, event: Event) {
        let at = at.max(self.now);
        let seq = self.seq;
        self.seq += 1;
        if at == self.now {
            self.immediate.push_back(Entry { at, seq, event });
            return;
        }
        let what = match event {
            Event::Wake { node } => node as u64,
            other => {
                let slot = match self.free_parked.pop() {
                    Some(i) => {
                        self.parked[i] = Some(other);
                        i
                    }
                    None => {
                        self.parked.push(Some(other));
                        self.parked.len() - 1
                    }
                };
                PARKED | slot as u64
            }
        };
        self.heap.push(Key { at, seq, what });
    }

    /// Schedule `event` for now: what the simulation's flush does for every delivery to a node
    /// that is not a link, so straight to the FIFO, as [`EventQueue::push`] would, without its
    /// general path (it was a call of ~55 instructions per packet hop).
    #[inline]
    pub(crate) fn push_now(&mut self, event: Event) {
        let seq = self.seq;
        self.seq += 1;
        self.immediate.push_back(Entry {
            at: self.now,
            seq,
            event,
        });
    }

    /// Ask for `node` to be woken at `deadline` (its current `poll_timeout`).
    ///
    /// A deadline already past is armed for now, and remembered as such: `pop` knows a
    /// wake-up as current by its instant, so remembering the past one would make it look
    /// stale and leave the node asleep.
    pub fn arm(&mut self, node: NodeId, deadline: Option<Instant>) {
        let Some(at) = deadline else { return };
        if self.armed[node].is_none_or(|armed| at < armed) {
            let at = at.max(self.now);
            self.armed[node] = Some(at);
            // `push` for a wake-up, without its matching on the event.
            let seq = self.seq;
            self.seq += 1;
            if at == self.now {
                self.immediate.push_back(Entry {
                    at,
                    seq,
                    event: Event::Wake { node },
                });
            } else {
                self.heap.push(Key {
                    at,
                    seq,
                    what: node as u64,
                });
            }
        }
    }

    /// Time of the next event, if any.
    pub fn peek_time(&self) -> Option<Instant> {
        match (self.immediate.front(), self.heap.peek()) {
            (Some(a), Some(b)) => Some(a.at.min(b.at)),
            (Some(a), None) => Some(a.at),
            (None, Some(b)) => Some(b.at),
            (None, None) => None,
        }
    }

    /// Take the next event at or before `end`, advancing time. Stale wake-ups are skipped.
    pub fn pop(&mut self, end: Instant) -> Option<Event> {
        loop {
            let from_immediate = match (self.immediate.front(), self.heap.peek()) {
                (Some(a), Some(b)) => (a.at, a.seq) < (b.at, b.seq),
                (Some(_), None) => true,
                (None, Some(_)) => false,
                (None, None) => return None,
            };
            if from_immediate {
                let entry = self.immediate.front()?;
                if entry.at > end {
                    return None;
                }
                let entry = self.immediate.pop_front()?;
                self.now = entry.at;
                if let Event::Wake { node } = entry.event {
                    if self.armed[node] != Some(entry.at) {
                        continue;
                    }
                    self.armed[node] = None;
                }
                self.processed += 1;
                return Some(entry.event);
            }
            let key = *self.heap.peek()?;
            if key.at > end {
                return None;
            }
            self.heap.pop();
            self.now = key.at;
            let event = if key.what & PARKED != 0 {
                let slot = (key.what & !PARKED) as usize;
                self.free_parked.push(slot);
                self.parked.get_mut(slot).and_then(Option::take)?
            } else {
                let node = key.what as usize;
                if self.armed[node] != Some(key.at) {
                    continue; // superseded by an earlier wake-up
                }
                self.armed[node] = None;
                Event::Wake { node }
            };
            self.processed += 1;
            return Some(event);
        }
    }

    /// Move the clock to `t` when no event remains before it.
    pub fn advance_to(&mut self, t: Instant) {
        if t > self.now {
            self.now = t;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quad_heap_pops_in_key_order() {
        // A fixed pseudo-random sequence of pushes and pops against a sorted reference.
        let mut h = QuadHeap::default();
        let mut reference: Vec<Key> = Vec::new();
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for seq in 0..5000u64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            if x.is_multiple_of(3) {
                reference.sort();
                let want = (!reference.is_empty()).then(|| reference.remove(0));
                assert_eq!(h.pop(), want);
            } else {
                let k = Key {
                    at: Instant(x % 100),
                    seq,
                    what: x,
                };
                h.push(k);
                reference.push(k);
            }
        }
        reference.sort();
        let rest: Vec<Key> = std::iter::from_fn(|| h.pop()).collect();
        assert_eq!(rest, reference);
    }

    #[test]
    fn wheel_pops_what_the_heap_pops() {
        // Times spread over several spans of the ring (so keys go near, into the ring and to
        // the far heap), pops interleaved with pushes that never go before the last pop.
        let mut heap = QuadHeap::default();
        let mut wheel = Wheel::new();
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        let mut now = 0u64;
        let mut popped = 0;
        for seq in 0..200_000u64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            if x % 5 < 2 {
                let (a, b) = (heap.pop(), wheel.pop());
                assert_eq!(a, b, "pop {popped}");
                if let Some(k) = a {
                    now = k.at.0;
                    popped += 1;
                }
            } else {
                // Mostly near (a few buckets ahead), some a ring span or more ahead.
                let ahead = match x % 7 {
                    0 => x % (3 * (Wheel::SLOTS << Wheel::SHIFT)),
                    1 => 0,
                    _ => x % (64 << Wheel::SHIFT),
                };
                let k = Key {
                    at: Instant(now + ahead),
                    seq,
                    what: x,
                };
                heap.push(k);
                wheel.push(k);
            }
        }
        while let Some(k) = heap.pop() {
            assert_eq!(wheel.pop(), Some(k));
        }
        assert_eq!(wheel.pop(), None);
        assert!(popped > 50_000, "{popped}");
    }

    fn tick(q: &mut EventQueue) -> Option<(u64, u32)> {
        match q.pop(Instant::FAR_FUTURE)? {
            Event::Tick(n) => Some((q.now().as_nanos(), n)),
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn orders_by_time_then_insertion() {
        let mut q = EventQueue::new(0);
        q.push(Instant(30), Event::Tick(1));
        q.push(Instant(10), Event::Tick(2));
        q.push(Instant(30), Event::Tick(3));
        q.push(Instant(0), Event::Tick(4));
        q.push(Instant(10), Event::Tick(5));
        let order: Vec<_> = std::iter::from_fn(|| tick(&mut q)).collect();
        assert_eq!(order, vec![(0, 4), (10, 2), (10, 5), (30, 1), (30, 3)]);
    }

    #[test]
    fn immediate_events_queue_behind_earlier_insertions_at_the_same_time() {
        let mut q = EventQueue::new(0);
        q.push(Instant(10), Event::Tick(1));
        q.push(Instant(10), Event::Tick(2));
        assert_eq!(tick(&mut q), Some((10, 1)));
        // Scheduled "now" (10) after Tick(2) was: must run after it.
        q.push(Instant(10), Event::Tick(3));
        assert_eq!(tick(&mut q), Some((10, 2)));
        assert_eq!(tick(&mut q), Some((10, 3)));
    }

    #[test]
    fn lazy_timers_fire_once_at_the_earliest_deadline() {
        let mut q = EventQueue::new(1);
        q.arm(0, Some(Instant(100)));
        q.arm(0, Some(Instant(200))); // later: keep the 100 wake-up
        q.arm(0, Some(Instant(50))); // earlier: push a new one; 100 becomes stale
        assert!(matches!(
            q.pop(Instant::FAR_FUTURE),
            Some(Event::Wake { node: 0 })
        ));
        assert_eq!(q.now(), Instant(50));
        assert!(
            q.pop(Instant::FAR_FUTURE).is_none(),
            "the stale 100 ns wake-up must be skipped"
        );
        assert_eq!(q.processed(), 1);
    }

    #[test]
    fn a_deadline_already_past_wakes_the_node_now_and_later_ones_still_arm() {
        let mut q = EventQueue::new(1);
        q.push(Instant(50), Event::Tick(1));
        assert_eq!(tick(&mut q), Some((50, 1)));
        // A late driver may ask for an instant already gone: the node wakes at once.
        q.arm(0, Some(Instant(20)));
        assert!(matches!(
            q.pop(Instant::FAR_FUTURE),
            Some(Event::Wake { node: 0 })
        ));
        assert_eq!(q.now(), Instant(50));
        // And is not left believing a wake-up is still pending.
        q.arm(0, Some(Instant(60)));
        assert!(matches!(
            q.pop(Instant::FAR_FUTURE),
            Some(Event::Wake { node: 0 })
        ));
        assert_eq!((q.now(), q.processed()), (Instant(60), 3));
    }

    #[test]
    fn wake_ups_at_one_instant_come_out_in_the_order_they_were_armed() {
        // 60 nodes, every seventh due earlier: each group must come out in arming order, as
        // the heap moves entries past one another.
        let mut q = EventQueue::new(60);
        for n in 0..60 {
            q.arm(n, Some(Instant(if n % 7 == 3 { 5 } else { 10 })));
        }
        let order: Vec<usize> = std::iter::from_fn(|| match q.pop(Instant::FAR_FUTURE) {
            Some(Event::Wake { node }) => Some(node),
            _ => None,
        })
        .collect();
        let early = (0..60).filter(|n| n % 7 == 3);
        let late = (0..60).filter(|n| n % 7 != 3);
        assert_eq!(order, early.chain(late).collect::<Vec<_>>());
    }

    #[test]
    fn pop_stops_at_end() {
        let mut q = EventQueue::new(0);
        q.push(Instant(5), Event::Tick(1));
        assert!(q.pop(Instant(4)).is_none());
        assert_eq!(q.peek_time(), Some(Instant(5)));
        assert_eq!(tick(&mut q), Some((5, 1)));
    }
}
