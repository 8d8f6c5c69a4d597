//! Per-flow state shared by every mechanism that keeps some: one [`FlowKey`] (the IPv4 4-tuple)
//! and one [`FlowTable`] (slab-indexed entries with a hard capacity, a deadline index and idle
//! expiry).
//!
//! Why one table: a mechanism at a gateway sees every flow of a terminal population (100 000 and
//! more), so "scan every flow on every call" makes `poll_timeout` and `handle_timeout` O(n) and a
//! table without a bound or expiry grows without limit. Here:
//!
//! - **Lookup** by key is a hash lookup; entries live in a [`slab::Slab`] and are addressed by
//!   [`FlowId`] afterwards, so a mechanism looks a flow up once per packet.
//! - **Deadlines** are kept in an ordered index of `(deadline, key, id)` that is updated only
//!   when a flow's deadline actually changes ([`FlowTable::set_deadline`]).
//!   [`FlowTable::poll_timeout`] reads its first element (O(log n)) and [`FlowTable::pop_due`]
//!   visits only flows that are due. Flows due at the same instant come out in key order, which
//!   is deterministic and independent of the history of slot reuse (the order a `BTreeMap` scan
//!   over keys would give).
//! - **Capacity** is hard: [`FlowTable::insert`] refuses a new flow when the table is full and
//!   counts it in [`FlowTableStats::table_full`]. What a refused flow's packets get is the
//!   mechanism's policy, written on its config (all in-tree mechanisms pass them through
//!   untouched).
//! - **Idle expiry**: every entry sits in a least-recently-used list that [`FlowTable::touch`]
//!   keeps in order of last activity; [`FlowTable::expire_idle`] forgets flows quiet for longer
//!   than the idle timeout, oldest first, visiting only those. Expiry is lazy — a mechanism calls
//!   it at the start of each `handle_*` with that call's `now`, and it does not wake the node —
//!   which gives the same packets the same treatment as expiring at the exact instant would
//!   (nothing can observe the flow in between), without an extra timer event per flow.

use std::collections::{BTreeSet, HashMap};
use std::net::Ipv4Addr;
use std::ops::{Index, IndexMut};

use serde::Serialize;

use crate::time::{Duration, Instant};
use crate::wire::{Ipv4Repr, TcpRepr};

/// An IPv4 TCP flow in one direction: (source address, source port, destination address,
/// destination port). Ordered field by field, in that order.
#[derive(Clone, Copy, Debug, Eq, Hash, Ord, PartialEq, PartialOrd)]
pub struct FlowKey {
    /// Source address.
    pub src: Ipv4Addr,
    /// Source port.
    pub src_port: u16,
    /// Destination address.
    pub dst: Ipv4Addr,
    /// Destination port.
    pub dst_port: u16,
}

impl FlowKey {
    /// The key of `(src, src_port) → (dst, dst_port)`.
    pub fn new(src: Ipv4Addr, src_port: u16, dst: Ipv4Addr, dst_port: u16) -> Self {
        Self {
            src,
            src_port,
            dst,
            dst_port,
        }
    }

    /// The key of the segment `seg` carried in `ip`, in the direction it travels.
    pub fn of(ip: &Ipv4Repr, seg: &TcpRepr) -> Self {
        Self::new(ip.src, seg.src_port, ip.dst, seg.dst_port)
    }

    /// The same connection in the other direction (the key of the ACKs of this flow's data).
    #[must_use]
    pub fn reversed(self) -> Self {
        Self::new(self.dst, self.dst_port, self.src, self.src_port)
    }
}

/// Handle of an entry of a [`FlowTable`]; valid until that entry is removed (then it may be
/// reused for another flow).
#[derive(Clone, Copy, Debug, Eq, Hash, Ord, PartialEq, PartialOrd)]
pub struct FlowId(u32);

/// Counters of a [`FlowTable`].
#[derive(Clone, Copy, Debug, Default, Eq, PartialEq, Serialize)]
pub struct FlowTableStats {
    /// New flows refused because the table held `capacity` flows.
    pub table_full: u64,
    /// Flows forgotten by idle expiry.
    pub idle_expired: u64,
    /// Entries visited by [`FlowTable::pop_due`] and [`FlowTable::expire_idle`] (the due and
    /// expired ones, plus one look at the index head per call) and by [`FlowTable::retain`]
    /// (every entry): the work timeouts and scans cost, which tests bound.
    pub visited: u64,
}

const NIL: u32 = u32::MAX;

#[derive(Clone, Debug)]
struct Entry<S> {
    key: FlowKey,
    state: S,
    deadline: Option<Instant>,
    last_seen: Instant,
    /// Neighbours in the least-recently-used list (`NIL` at the ends).
    prev: u32,
    next: u32,
}

/// Per-flow state `S` of up to `capacity` flows; see the module doc.
///
/// Call pattern in a mechanism: at the start of every `handle_*`, [`expire_idle`](Self::expire_idle)
/// with `now`; per packet, [`id`](Self::id) (or [`insert`](Self::insert) for a new flow) and
/// [`touch`](Self::touch), then work on `table[id]` and [`set_deadline`](Self::set_deadline) with
/// the flow's next deadline; in `handle_timeout`, [`pop_due`](Self::pop_due) until `None`;
/// `poll_timeout` is [`poll_timeout`](Self::poll_timeout).
#[derive(Clone, Debug)]
pub struct FlowTable<S> {
    entries: slab::Slab<Entry<S>>,
    /// Key → slot. Only looked up, never iterated, so its order cannot reach any output.
    ids: HashMap<FlowKey, u32>,
    deadlines: BTreeSet<(Instant, FlowKey, u32)>,
    capacity: usize,
    idle_timeout: Option<Duration>,
    /// Least recently touched entry first.
    lru_head: u32,
    lru_tail: u32,
    stats: FlowTableStats,
}

impl<S> FlowTable<S> {
    /// An empty table holding at most `capacity` flows, forgetting a flow not touched for
    /// `idle_timeout` (`None`: never).
    pub fn new(capacity: usize, idle_timeout: Option<Duration>) -> Self {
        Self {
            entries: slab::Slab::new(),
            ids: HashMap::new(),
            deadlines: BTreeSet::new(),
            capacity,
            idle_timeout,
            lru_head: NIL,
            lru_tail: NIL,
            stats: FlowTableStats::default(),
        }
    }

    /// Add a flow with state `state`, last seen at `now` and no deadline. `Err(state)` (counted
    /// in `table_full`) when the table is full; a key already present is a caller bug and
    /// replaces nothing: its existing id is returned.
    pub fn insert(&mut self, now: Instant, key: FlowKey, state: S) -> Result<FlowId, S> {
        if let Some(&i) = self.ids.get(&key) {
            return Ok(FlowId(i));
        }
        if self.entries.len() >= self.capacity {
            self.stats.table_full += 1;
            return Err(state);
        }
        let i = self.entries.insert(Entry {
            key,
            state,
            deadline: None,
            last_seen: now,
            prev: NIL,
            next: NIL,
        }) as u32;
        self.ids.insert(key, i);
        self.link_back(i);
        Ok(FlowId(i))
    }

    /// Forget the flow `id`; its state and key. Its slot is free for the next insert.
    pub fn remove(&mut self, id: FlowId) -> Option<(FlowKey, S)> {
        let e = self.entries.get(id.0 as usize)?;
        let (key, deadline) = (e.key, e.deadline);
        if let Some(t) = deadline {
            self.deadlines.remove(&(t, key, id.0));
        }
        self.unlink(id.0);
        self.ids.remove(&key);
        let e = self.entries.remove(id.0 as usize);
        Some((e.key, e.state))
    }

    /// Forget the flow `key`, if present.
    pub fn remove_key(&mut self, key: &FlowKey) -> Option<S> {
        let id = self.id(key)?;
        self.remove(id).map(|(_, s)| s)
    }

    /// Record activity of `id` at `now`: it moves to the back of the idle-expiry order.
    pub fn touch(&mut self, now: Instant, id: FlowId) {
        let Some(e) = self.entries.get_mut(id.0 as usize) else {
            return;
        };
        e.last_seen = e.last_seen.max(now);
        if self.lru_tail != id.0 {
            self.unlink(id.0);
            self.link_back(id.0);
        }
    }

    /// Set when `id` next needs `handle_timeout` (`None`: never). The index changes only when
    /// the deadline does.
    pub fn set_deadline(&mut self, id: FlowId, at: Option<Instant>) {
        let Some(e) = self.entries.get_mut(id.0 as usize) else {
            return;
        };
        if e.deadline == at {
            return;
        }
        if let Some(t) = e.deadline {
            self.deadlines.remove(&(t, e.key, id.0));
        }
        if let Some(t) = at {
            self.deadlines.insert((t, e.key, id.0));
        }
        e.deadline = at;
    }

    /// The next flow whose deadline is at or before `now`, earliest first (key order among
    /// equal deadlines), with its deadline cleared: the caller handles it and sets a new one.
    /// A deadline set at or before `now` while handling makes the flow due again.
    pub fn pop_due(&mut self, now: Instant) -> Option<FlowId> {
        self.stats.visited += 1;
        let &(t, _, i) = self.deadlines.first()?;
        if t > now {
            return None;
        }
        self.deadlines.pop_first();
        if let Some(e) = self.entries.get_mut(i as usize) {
            e.deadline = None;
        }
        Some(FlowId(i))
    }

    /// Every flow due at `now` (deadline at or before it), appended to `due` in key order,
    /// deadlines cleared: the flows, and the order, a scan over a key-ordered map would act on.
    /// Unlike a `pop_due` loop, a deadline the caller sets at or before `now` while handling
    /// them waits for the next call: each flow is handled once per `handle_timeout`.
    pub fn take_due(&mut self, now: Instant, due: &mut Vec<FlowId>) {
        let from = due.len();
        while let Some(id) = self.pop_due(now) {
            due.push(id);
        }
        let entries = &self.entries;
        due[from..].sort_unstable_by_key(|id| entries.get(id.0 as usize).map(|e| e.key));
    }

    /// Forget every flow last touched more than the idle timeout before `now`, oldest first,
    /// handing each one's key and state to `gone` (which may, e.g., release held packets).
    /// Visits only the expired flows.
    pub fn expire_idle(&mut self, now: Instant, mut gone: impl FnMut(FlowKey, S)) {
        let Some(idle) = self.idle_timeout else {
            return;
        };
        self.stats.visited += 1;
        while let Some(e) = self.entries.get(self.lru_head as usize) {
            if e.last_seen + idle > now {
                break;
            }
            self.stats.visited += 1;
            self.stats.idle_expired += 1;
            if let Some((k, s)) = self.remove(FlowId(self.lru_head)) {
                gone(k, s);
            }
        }
    }

    /// Keep only the flows for which `keep` is true. O(n): for a mechanism's own eviction policy
    /// when the table is full (e.g. "forget flows with nothing queued"), never per packet.
    pub fn retain(&mut self, mut keep: impl FnMut(&FlowKey, &mut S) -> bool) {
        self.stats.visited += self.entries.len() as u64;
        let gone: Vec<FlowId> = self
            .entries
            .iter_mut()
            .filter_map(|(i, e)| (!keep(&e.key, &mut e.state)).then_some(FlowId(i as u32)))
            .collect();
        for id in gone {
            self.remove(id);
        }
    }

    /// The id of flow `key`, if the table holds it.
    pub fn id(&self, key: &FlowKey) -> Option<FlowId> {
        self.ids.get(key).map(|&i| FlowId(i))
    }

    /// The state of flow `key`.
    pub fn get(&self, key: &FlowKey) -> Option<&S> {
        self.id(key).map(|id| &self[id])
    }

    /// The state of flow `key`, writable (its deadline is set separately).
    pub fn get_mut(&mut self, key: &FlowKey) -> Option<&mut S> {
        let id = self.id(key)?;
        Some(&mut self[id])
    }

    /// The state of flow `id`, if it is still held.
    pub fn get_by_id_mut(&mut self, id: FlowId) -> Option<&mut S> {
        self.entries.get_mut(id.0 as usize).map(|e| &mut e.state)
    }

    /// The key of flow `id`.
    pub fn key(&self, id: FlowId) -> Option<FlowKey> {
        self.entries.get(id.0 as usize).map(|e| e.key)
    }

    /// The deadline of flow `id`.
    pub fn deadline(&self, id: FlowId) -> Option<Instant> {
        self.entries.get(id.0 as usize).and_then(|e| e.deadline)
    }

    /// Earliest deadline of any flow: the first element of the index, O(log n).
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.deadlines.first().map(|&(t, _, _)| t)
    }

    /// Flows held now.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the table holds no flow.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Most flows the table holds.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Whether an insert of a new key would be refused now.
    pub fn is_full(&self) -> bool {
        self.entries.len() >= self.capacity
    }

    /// Counters.
    pub fn stats(&self) -> FlowTableStats {
        self.stats
    }

    /// Every flow, in slot order (not key order): for gauges and reports, never on a per-packet
    /// path.
    pub fn iter(&self) -> impl Iterator<Item = (FlowKey, &S)> + '_ {
        self.entries.iter().map(|(_, e)| (e.key, &e.state))
    }

    /// Every flow, in key order (a sort of all keys: for reports whose order reaches an output).
    pub fn iter_sorted(&self) -> impl Iterator<Item = (FlowKey, &S)> + '_ {
        let mut v: Vec<(FlowKey, &S)> = self.iter().collect();
        v.sort_unstable_by_key(|(k, _)| *k);
        v.into_iter()
    }

    fn link_back(&mut self, i: u32) {
        let tail = self.lru_tail;
        if let Some(e) = self.entries.get_mut(i as usize) {
            e.prev = tail;
            e.next = NIL;
        }
        match self.entries.get_mut(tail as usize) {
            Some(t) => t.next = i,
            None => self.lru_head = i,
        }
        self.lru_tail = i;
    }

    fn unlink(&mut self, i: u32) {
        let Some(e) = self.entries.get(i as usize) else {
            return;
        };
        let (prev, next) = (e.prev, e.next);
        match self.entries.get_mut(prev as usize) {
            Some(p) => p.next = next,
            None => self.lru_head = next,
        }
        match self.entries.get_mut(next as usize) {
            Some(n) => n.prev = prev,
            None => self.lru_tail = prev,
        }
    }
}

impl<S> Index<FlowId> for FlowTable<S> {
    type Output = S;
    /// Panics on an id that was removed: ids come from this table within one call.
    fn index(&self, id: FlowId) -> &S {
        &self.entries[id.0 as usize].state
    }
}

impl<S> IndexMut<FlowId> for FlowTable<S> {
    fn index_mut(&mut self, id: FlowId) -> &mut S {
        &mut self.entries[id.0 as usize].state
    }
}

/// Packets of many distinct flows, for the mechanisms' scale tests.
#[cfg(test)]
pub(crate) mod testing {
    use super::FlowKey;
    use crate::wire::{emit_ipv4_tcp, Ipv4Repr, SeqNumber, TcpFlags, TcpRepr};
    use crate::Packet;
    use std::net::Ipv4Addr;

    /// The `n`-th of up to 2²⁴ distinct flows: 10.x.y.z:5000 → 192.168.0.1:80.
    pub(crate) fn many(n: u32) -> FlowKey {
        FlowKey::new(
            Ipv4Addr::from(0x0a00_0000 + n),
            5000,
            Ipv4Addr::new(192, 168, 0, 1),
            80,
        )
    }

    /// A segment of flow `key` (in its direction) with a virtual payload of `len` bytes.
    pub(crate) fn segment(
        key: FlowKey,
        seq: u32,
        ack: Option<u32>,
        flags: TcpFlags,
        len: u32,
    ) -> Packet {
        let ip = Ipv4Repr::tcp(key.src, key.dst, 0);
        let seg = TcpRepr {
            src_port: key.src_port,
            dst_port: key.dst_port,
            seq: SeqNumber(seq),
            ack: ack.map(SeqNumber),
            flags,
            window: 65_535,
            payload_len: len,
            ..TcpRepr::default()
        };
        Packet::build(len, |b| emit_ipv4_tcp(&ip, &seg, b))
    }

    /// The header bytes and payload length of every packet `node` transmits now.
    pub(crate) fn drain(node: &mut impl crate::Node, now: crate::Instant) -> Vec<(Vec<u8>, u32)> {
        std::iter::from_fn(|| node.poll_transmit(now))
            .map(|t| (t.pkt.header().to_vec(), t.pkt.payload_len))
            .collect()
    }

    /// What [`drain`] reports for `pkt`.
    pub(crate) fn seen(pkt: &Packet) -> (Vec<u8>, u32) {
        (pkt.header().to_vec(), pkt.payload_len)
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn key(n: u32) -> FlowKey {
        FlowKey::new(
            Ipv4Addr::from(0x0a00_0000 + n),
            1024,
            Ipv4Addr::new(10, 9, 9, 9),
            80,
        )
    }

    fn at(ms: u64) -> Instant {
        Instant::ZERO + Duration::from_millis(ms)
    }

    impl<S> FlowTable<S> {
        /// Brute-force checks of every invariant the index and the list keep.
        fn check(&self) {
            assert!(self.len() <= self.capacity);
            assert_eq!(self.ids.len(), self.entries.len());
            let brute = self.entries.iter().filter_map(|(_, e)| e.deadline).min();
            assert_eq!(self.poll_timeout(), brute);
            let armed = self.entries.iter().filter(|(_, e)| e.deadline.is_some());
            assert_eq!(self.deadlines.len(), armed.count());
            for (i, e) in &self.entries {
                assert_eq!(self.ids[&e.key], i as u32);
                if let Some(t) = e.deadline {
                    assert!(self.deadlines.contains(&(t, e.key, i as u32)));
                }
            }
            // The list holds every entry once, in order of last activity.
            let (mut n, mut i, mut last) = (0, self.lru_head, Instant::ZERO);
            while let Some(e) = self.entries.get(i as usize) {
                assert!(e.last_seen >= last);
                last = e.last_seen;
                n += 1;
                i = e.next;
            }
            assert_eq!(n, self.len());
        }
    }

    #[test]
    fn reversed_swaps_the_ends_and_order_is_field_by_field() {
        let k = FlowKey::new(Ipv4Addr::new(1, 2, 3, 4), 5, Ipv4Addr::new(6, 7, 8, 9), 10);
        let r = k.reversed();
        assert_eq!(
            (r.src, r.src_port, r.dst, r.dst_port),
            (Ipv4Addr::new(6, 7, 8, 9), 10, Ipv4Addr::new(1, 2, 3, 4), 5)
        );
        assert_eq!(r.reversed(), k);
        // Source address first, then source port: the order of the tuple keys it replaces.
        assert!(key(1) < key(2));
        let mut p = key(1);
        p.src_port = 1025;
        assert!(key(1) < p && p < key(2));
    }

    #[test]
    fn full_table_refuses_counts_and_frees_on_remove() {
        let mut t = FlowTable::new(2, None);
        assert!(t.is_empty() && !t.is_full());
        assert_eq!(t.capacity(), 2);
        let a = t.insert(at(0), key(1), 'a').expect("room");
        assert!(!t.is_empty());
        t.insert(at(0), key(2), 'b').expect("room");
        assert!(t.is_full());
        assert_eq!(t.insert(at(0), key(3), 'c'), Err('c'));
        assert_eq!(t.insert(at(0), key(4), 'd'), Err('d'));
        assert_eq!(t.stats().table_full, 2);
        // An existing key is not a new flow: no refusal, same id.
        assert_eq!(t.insert(at(0), key(1), 'x'), Ok(a));
        assert_eq!(t[a], 'a');
        assert_eq!(t.remove(a), Some((key(1), 'a')));
        assert_eq!(t.remove(a), None);
        assert!(t.insert(at(0), key(3), 'c').is_ok());
        assert_eq!(t.get(&key(3)), Some(&'c'));
        *t.get_mut(&key(3)).expect("held") = 'C';
        assert_eq!(t.get(&key(3)), Some(&'C'));
        assert!(t.get_mut(&key(9)).is_none());
        assert_eq!((t.len(), t.stats().table_full), (2, 2));
        t.check();
    }

    #[test]
    fn due_flows_come_out_by_deadline_then_key_and_only_those() {
        let mut t = FlowTable::new(10, None);
        let ids: Vec<FlowId> = (0..5)
            .map(|n| t.insert(at(0), key(n), n).expect("room"))
            .collect();
        t.set_deadline(ids[4], Some(at(10)));
        t.set_deadline(ids[1], Some(at(10)));
        t.set_deadline(ids[2], Some(at(5)));
        t.set_deadline(ids[3], Some(at(11)));
        assert_eq!(t.poll_timeout(), Some(at(5)));
        let mut due = Vec::new();
        while let Some(id) = t.pop_due(at(10)) {
            due.push(t[id]);
        }
        assert_eq!(due, vec![2, 1, 4]);
        assert_eq!(t.poll_timeout(), Some(at(11)));
        assert_eq!(t.deadline(ids[1]), None);
        assert_eq!(t.deadline(ids[3]), Some(at(11)));
        t.check();
    }

    #[test]
    fn take_due_hands_every_due_flow_once_in_key_order() {
        let mut t = FlowTable::new(10, None);
        let ids: Vec<FlowId> = (0..4)
            .map(|n| t.insert(at(0), key(n), n).expect("room"))
            .collect();
        t.set_deadline(ids[3], Some(at(1)));
        t.set_deadline(ids[0], Some(at(7)));
        t.set_deadline(ids[2], Some(at(3)));
        t.set_deadline(ids[1], Some(at(9)));
        let mut due = vec![ids[1]];
        t.take_due(at(7), &mut due);
        // Appended after what was there, by key (not by deadline).
        assert_eq!(due, vec![ids[1], ids[0], ids[2], ids[3]]);
        // Re-armed at `now` while handling: due again only at the next call.
        t.set_deadline(ids[0], Some(at(7)));
        let mut again = Vec::new();
        t.take_due(at(7), &mut again);
        assert_eq!(again, vec![ids[0]]);
        assert_eq!(t.poll_timeout(), Some(at(9)));
        t.check();
    }

    #[test]
    fn retain_removes_exactly_the_rejected_flows_with_their_deadlines() {
        let mut t = FlowTable::new(10, Some(Duration::from_secs(1)));
        for n in 0..6 {
            let id = t.insert(at(n.into()), key(n), n).expect("room");
            t.set_deadline(id, Some(at(100 - u64::from(n))));
        }
        t.retain(|k, s| {
            *s += 10;
            k.src != key(5).src && *s % 2 == 0
        });
        let keys: Vec<FlowKey> = t.iter_sorted().map(|(k, _)| k).collect();
        assert_eq!(keys, vec![key(0), key(2), key(4)]);
        let mut left: Vec<u32> = t.iter().map(|(_, s)| *s).collect();
        left.sort_unstable();
        assert_eq!(left, vec![10, 12, 14]);
        assert_eq!(t.poll_timeout(), Some(at(96)));
        t.check();
    }

    #[test]
    fn idle_flows_are_forgotten_oldest_first_and_touch_keeps_one() {
        let mut t = FlowTable::new(10, Some(Duration::from_secs(1)));
        let a = t.insert(at(0), key(1), 1).expect("room");
        let b = t.insert(at(100), key(2), 2).expect("room");
        t.insert(at(200), key(3), 3).expect("room");
        t.set_deadline(b, Some(at(5000)));
        t.touch(at(900), a);
        let mut gone = Vec::new();
        t.expire_idle(at(1199), |k, s| gone.push((k, s)));
        assert_eq!(gone, vec![(key(2), 2)]);
        // Exactly at last_seen + idle the flow is gone (idle for the whole timeout).
        t.expire_idle(at(1200), |k, s| gone.push((k, s)));
        assert_eq!(gone, vec![(key(2), 2), (key(3), 3)]);
        assert_eq!(
            t.poll_timeout(),
            None,
            "an expired flow's deadline goes with it"
        );
        assert_eq!((t.len(), t.stats().idle_expired), (1, 2));
        t.check();
    }

    /// Work, not time: one due flow among 100 000 costs a handful of visits, and a pass over
    /// the idle list visits only the expired ones.
    #[test]
    fn one_due_flow_among_100_000_is_found_without_visiting_the_others() {
        let mut t = FlowTable::new(100_000, Some(Duration::from_secs(60)));
        for n in 0..100_000u32 {
            let id = t.insert(at(u64::from(n)), key(n), n).expect("room");
            t.set_deadline(id, Some(at(1_000_000 + u64::from(n))));
        }
        let one = t.id(&key(77_777)).expect("held");
        t.set_deadline(one, Some(at(500)));
        assert_eq!(t.poll_timeout(), Some(at(500)));
        let before = t.stats().visited;
        let due: Vec<FlowId> = std::iter::from_fn(|| t.pop_due(at(999_999))).collect();
        assert_eq!(due, vec![one]);
        // Two looks at the index head: the due flow, then the first one not due.
        assert_eq!(t.stats().visited - before, 2);
        // 60 s after the 10th insert, the first 11 flows are idle: 11 visited plus one look.
        let before = t.stats().visited;
        t.expire_idle(at(60_010), |_, _| {});
        assert_eq!(t.stats().visited - before, 12);
        assert_eq!(t.len(), 100_000 - 11);
    }

    #[derive(Clone, Debug)]
    enum Op {
        Insert(u8, u16),
        Remove(u8),
        Deadline(u8, Option<u16>),
        Touch(u8),
        PopDue,
        Expire,
        Advance(u16),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            (any::<u8>(), any::<u16>()).prop_map(|(k, v)| Op::Insert(k % 24, v)),
            any::<u8>().prop_map(|k| Op::Remove(k % 24)),
            (any::<u8>(), proptest::option::of(0u16..2000))
                .prop_map(|(k, d)| Op::Deadline(k % 24, d)),
            any::<u8>().prop_map(|k| Op::Touch(k % 24)),
            Just(Op::PopDue),
            Just(Op::Expire),
            (0u16..500).prop_map(Op::Advance),
        ]
    }

    proptest! {
        /// Under any sequence of operations: the index head is the minimum deadline over live
        /// entries, the capacity is never exceeded, refusals are counted exactly, a removed
        /// flow's slot is reusable, and the table agrees with a plain map model.
        #[test]
        fn table_keeps_its_invariants_and_matches_a_model(
            cap in 1usize..16,
            ops in proptest::collection::vec(op(), 1..200),
        ) {
            let idle = Duration::from_millis(700);
            let mut t = FlowTable::new(cap, Some(idle));
            let mut model: std::collections::BTreeMap<FlowKey, (u16, Option<Instant>, Instant)> =
                std::collections::BTreeMap::new();
            let mut now = at(0);
            let mut refused = 0;
            for op in ops {
                match op {
                    Op::Insert(k, v) => {
                        let r = t.insert(now, key(k.into()), v);
                        if model.contains_key(&key(k.into())) {
                            prop_assert!(r.is_ok());
                        } else if model.len() >= cap {
                            prop_assert_eq!(r, Err(v));
                            refused += 1;
                        } else {
                            prop_assert!(r.is_ok());
                            model.insert(key(k.into()), (v, None, now));
                        }
                    }
                    Op::Remove(k) => {
                        let got = t.remove_key(&key(k.into()));
                        prop_assert_eq!(got, model.remove(&key(k.into())).map(|m| m.0));
                    }
                    Op::Deadline(k, d) => {
                        let d = d.map(|ms| now + Duration::from_millis(ms.into()));
                        if let Some(id) = t.id(&key(k.into())) {
                            t.set_deadline(id, d);
                            model.get_mut(&key(k.into())).expect("model").1 = d;
                        }
                    }
                    Op::Touch(k) => {
                        if let Some(id) = t.id(&key(k.into())) {
                            t.touch(now, id);
                            model.get_mut(&key(k.into())).expect("model").2 = now;
                        }
                    }
                    Op::PopDue => {
                        let expect = model
                            .iter()
                            .filter_map(|(k, m)| m.1.filter(|&d| d <= now).map(|d| (d, *k)))
                            .min();
                        let got = match t.pop_due(now) {
                            Some(id) => t.key(id).map(|k| (t.deadline(id), k)),
                            None => None,
                        };
                        prop_assert_eq!(got.map(|g| g.1), expect.map(|e| e.1));
                        if let Some((_, k)) = expect {
                            prop_assert_eq!(got.and_then(|g| g.0), None);
                            model.get_mut(&k).expect("model").1 = None;
                        }
                    }
                    Op::Expire => {
                        let mut gone = Vec::new();
                        t.expire_idle(now, |k, _| gone.push(k));
                        let mut expect: Vec<FlowKey> = model
                            .iter()
                            .filter(|(_, m)| m.2 + idle <= now)
                            .map(|(k, _)| *k)
                            .collect();
                        model.retain(|_, m| m.2 + idle > now);
                        gone.sort();
                        expect.sort();
                        prop_assert_eq!(gone, expect);
                    }
                    Op::Advance(ms) => now += Duration::from_millis(ms.into()),
                }
                t.check();
                prop_assert_eq!(t.len(), model.len());
                prop_assert_eq!(
                    t.poll_timeout(),
                    model.values().filter_map(|m| m.1).min()
                );
                prop_assert_eq!(t.stats().table_full, refused);
            }
        }
    }
}
