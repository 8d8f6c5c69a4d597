//! Packet buffers: fixed 2 KiB slots in one growable arena, handed out by index.
//!
//! The link model carries a [`satpep_proto::Packet`] (header bytes and a payload *length*); the
//! real bytes a program sent wait here, in the slot whose index travels beside the packet, until
//! the packet leaves the emulated path. Slots start [`HEADROOM`] bytes in, so a mechanism that
//! rewrites the header to a different length (compaction, tunnelling) costs one header copy and
//! no payload move. The arena grows in chunks of [`CHUNK`] slots up to a limit, so the steady
//! state allocates nothing; a new chunk is fresh zeroed memory from the allocator (no copy of
//! the old ones, which a growing `Vec` would do: copying 30 MB stalled the loop for
//! milliseconds at 800 Mb/s), and its pages are faulted in one by one as slots are first used.

/// Bytes per slot: headroom plus an MTU-sized packet, rounded up to a power of two.
pub const SLOT: usize = 2048;
/// Bytes reserved in front of every packet for headers that grow.
pub const HEADROOM: usize = 128;
/// Largest packet a slot holds.
pub const MAX_PACKET: usize = SLOT - HEADROOM;
/// Slots per chunk (8 MiB).
pub const CHUNK: u32 = 4096;

/// An arena of [`SLOT`]-byte buffers with a free list.
#[derive(Debug)]
pub struct Pool {
    chunks: Vec<Box<[u8]>>,
    free: Vec<u32>,
    slots: u32,
    max_slots: u32,
}

impl Pool {
    /// An arena of `initial` slots that may grow to `max_slots` (each [`SLOT`] bytes).
    pub fn new(initial: u32, max_slots: u32) -> Self {
        let mut p = Self {
            chunks: Vec::new(),
            free: Vec::new(),
            slots: 0,
            max_slots: max_slots.max(1),
        };
        while p.slots < initial.clamp(1, p.max_slots) {
            p.grow();
        }
        p
    }

    /// A free slot, or `None` when all `max_slots` are in use.
    #[inline]
    pub fn alloc(&mut self) -> Option<u32> {
        if self.free.is_empty() && self.slots < self.max_slots {
            self.grow();
        }
        self.free.pop()
    }

    /// Return slot `s` (given out by [`alloc`](Self::alloc)).
    #[inline]
    pub fn release(&mut self, s: u32) {
        self.free.push(s);
    }

    /// Slot `s`'s bytes.
    #[inline]
    pub fn slot(&self, s: u32) -> &[u8] {
        let at = (s % CHUNK) as usize * SLOT;
        &self.chunks[(s / CHUNK) as usize][at..at + SLOT]
    }

    /// Slot `s`'s bytes, writable.
    #[inline]
    pub fn slot_mut(&mut self, s: u32) -> &mut [u8] {
        let at = (s % CHUNK) as usize * SLOT;
        &mut self.chunks[(s / CHUNK) as usize][at..at + SLOT]
    }

    /// Slots handed out and not yet released.
    pub fn in_use(&self) -> usize {
        (self.slots as usize) - self.free.len()
    }

    /// Slots that exist (in use or free).
    #[cfg(test)]
    pub fn capacity(&self) -> usize {
        self.slots as usize
    }

    /// Add one chunk (or what is left up to `max_slots`).
    fn grow(&mut self) {
        let to = (self.slots + CHUNK).min(self.max_slots);
        if to <= self.slots {
            return;
        }
        // vec![0; n] of this size comes from calloc/mmap: zero pages, no memset.
        self.chunks
            .push(vec![0u8; CHUNK as usize * SLOT].into_boxed_slice());
        // Hand out low slots first (pop takes from the end).
        self.free.extend((self.slots..to).rev());
        self.slots = to;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grows_up_to_the_limit_then_refuses() {
        let mut p = Pool::new(2, 5);
        let got: Vec<u32> = (0..5).map(|_| p.alloc().unwrap()).collect();
        assert_eq!(got, [0, 1, 2, 3, 4]);
        assert_eq!(p.capacity(), 5);
        assert_eq!(p.alloc(), None);
        p.release(3);
        assert_eq!(p.in_use(), 4);
        assert_eq!(p.alloc(), Some(3));
    }

    #[test]
    fn slots_do_not_overlap_and_survive_growth() {
        let mut p = Pool::new(1, CHUNK + 8);
        let a = (0..CHUNK).map(|_| p.alloc().unwrap()).last().unwrap();
        assert_eq!(p.capacity(), CHUNK as usize);
        p.slot_mut(a)[SLOT - 1] = 7;
        let b = p.alloc().unwrap(); // a second chunk
        assert_eq!((a, b), (CHUNK - 1, CHUNK));
        p.slot_mut(b)[0] = 9;
        assert_eq!(p.slot(a)[SLOT - 1], 7);
        assert_eq!(p.slot(a)[0], 0);
        assert_eq!(p.slot(b)[0], 9);
    }
}
