//! Real payload bytes of one TCP endpoint, for drivers that carry real data (split-TCP relay,
//! spoofing gateway, Snoop in the emulator). In virtual mode the endpoint has none of this.
//!
//! Both stores are indexed by the endpoint's 64-bit stream offsets (SYN = 0, first data byte =
//! 1). They hold bytes only; which offsets are valid is decided by the endpoint (`snd_una`,
//! `app_written` on the send side; `rcv_nxt` and the out-of-order `RangeSet` on the receive side).

use std::collections::VecDeque;

/// Both directions' bytes of one endpoint.
#[derive(Clone, Debug)]
pub(super) struct ByteStore {
    pub(super) send: SendBytes,
    pub(super) recv: RecvBytes,
}

impl ByteStore {
    /// Empty stores; the receive side never holds more than `recv_capacity` bytes.
    pub(super) fn new(recv_capacity: u64) -> Self {
        Self {
            send: SendBytes::default(),
            recv: RecvBytes::new(recv_capacity),
        }
    }
}

/// Send ring: every byte the application wrote that the peer has not yet cumulatively
/// acknowledged, i.e. offsets `[base, base + len)`. Its size is bounded by the endpoint's send
/// buffer, which refuses writes beyond `send_space`.
#[derive(Clone, Debug)]
pub(super) struct SendBytes {
    /// Offset of `buf[0]`.
    base: u64,
    buf: VecDeque<u8>,
}

impl Default for SendBytes {
    fn default() -> Self {
        Self {
            base: 1,
            buf: VecDeque::new(),
        }
    }
}

impl SendBytes {
    /// Append bytes the application wrote (they take the offsets after the last held byte).
    pub(super) fn push(&mut self, data: &[u8]) {
        self.buf.extend(data);
    }

    /// The peer acknowledged every offset below `offset`: drop those bytes. Offsets past the data
    /// (the FIN) or before it (the SYN) drop nothing more than is held.
    pub(super) fn ack_to(&mut self, offset: u64) {
        let n = offset.saturating_sub(self.base).min(self.buf.len() as u64);
        self.buf.drain(..n as usize);
        self.base += n;
    }

    /// Append the `len` bytes at `offset` to `out`; false (nothing appended) if not all held.
    pub(super) fn copy(&self, offset: u64, len: usize, out: &mut Vec<u8>) -> bool {
        let Some(start) = offset.checked_sub(self.base) else {
            return false;
        };
        let Some(end) = start.checked_add(len as u64) else {
            return false;
        };
        if end > self.buf.len() as u64 {
            return false;
        }
        out.extend(self.buf.range(start as usize..end as usize));
        true
    }

    /// Bytes held (written, not yet acknowledged).
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.buf.len()
    }
}

/// Receive reassembly buffer: offsets `[base, base + capacity)`, where `base` is the first byte
/// the application has not read. In-order and out-of-order bytes share it; gaps hold zeros until
/// their data arrives. It grows only as far as the highest byte stored, never past `capacity`.
#[derive(Clone, Debug)]
pub(super) struct RecvBytes {
    /// Offset of `buf[0]`: the application has read everything below.
    base: u64,
    capacity: u64,
    buf: VecDeque<u8>,
}

impl RecvBytes {
    /// An empty buffer for data from offset 1 that never holds more than `capacity` bytes.
    pub(super) fn new(capacity: u64) -> Self {
        Self {
            base: 1,
            capacity,
            buf: VecDeque::new(),
        }
    }

    /// One past the highest offset this buffer can hold now.
    pub(super) fn limit(&self) -> u64 {
        self.base.saturating_add(self.capacity)
    }

    /// Store `data` at `offset`, overwriting what is there (a retransmission carries the same
    /// bytes). Bytes below `base` (already read) or at or beyond `limit()` are skipped.
    pub(super) fn write(&mut self, offset: u64, data: &[u8]) {
        let skip = self.base.saturating_sub(offset);
        let start = offset.max(self.base);
        let end = offset.saturating_add(data.len() as u64).min(self.limit());
        if start >= end {
            return;
        }
        let Some(data) = data.get(skip as usize..(skip + (end - start)) as usize) else {
            return; // cannot happen: `end - start` bytes follow `skip`
        };
        let at = (start - self.base) as usize;
        let need = (end - self.base) as usize;
        if self.buf.len() < need {
            self.buf.resize(need, 0);
        }
        for (dst, &src) in self.buf.range_mut(at..need).zip(data) {
            *dst = src;
        }
    }

    /// Move up to `n` bytes from the front to `out` (the caller knows they are in order);
    /// returns how many.
    pub(super) fn read(&mut self, n: usize, out: &mut Vec<u8>) -> usize {
        let n = n.min(self.buf.len());
        out.extend(self.buf.drain(..n));
        self.base += n as u64;
        n
    }

    /// Copy up to `n` bytes from `offset` on to `out` without reading them (the caller knows they
    /// are in order); returns how many. Nothing below `base` can be copied.
    pub(super) fn peek(&self, offset: u64, n: usize, out: &mut Vec<u8>) -> usize {
        let Some(at) = offset.checked_sub(self.base) else {
            return 0;
        };
        let at = usize::try_from(at)
            .unwrap_or(usize::MAX)
            .min(self.buf.len());
        let n = n.min(self.buf.len() - at);
        out.extend(self.buf.range(at..at + n));
        n
    }

    /// The application has read (or discarded) everything below `offset`.
    pub(super) fn discard_to(&mut self, offset: u64) {
        if offset <= self.base {
            return;
        }
        let n = (offset - self.base).min(self.buf.len() as u64);
        self.buf.drain(..n as usize);
        self.base = offset;
    }

    /// Bytes of memory in use (held data and gaps).
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.buf.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn send_ring_drops_acknowledged_bytes_and_ignores_syn_and_fin_offsets() {
        let mut s = SendBytes::default();
        s.ack_to(1); // SYN acknowledged: nothing held yet, nothing dropped
        s.push(b"hello ");
        s.push(b"world");
        assert_eq!(s.len(), 11);
        let mut out = Vec::new();
        assert!(s.copy(7, 5, &mut out));
        assert_eq!(out, b"world");
        s.ack_to(4); // "hel" acknowledged
        assert_eq!(s.len(), 8);
        out.clear();
        assert!(s.copy(4, 3, &mut out));
        assert_eq!(out, b"lo ");
        assert!(!s.copy(3, 1, &mut out), "acknowledged bytes are gone");
        assert!(!s.copy(10, 3, &mut out), "past the written data");
        assert_eq!(out, b"lo ", "a failed copy appends nothing");
        s.ack_to(13); // all data and the FIN
        assert_eq!(s.len(), 0);
        s.ack_to(2); // an old ACK changes nothing
        assert_eq!(s.len(), 0);
        s.push(b"!");
        out.clear();
        assert!(s.copy(12, 1, &mut out));
        assert_eq!(out, b"!");
    }

    #[test]
    fn recv_buffer_reassembles_out_of_order_and_reads_in_order() {
        let mut r = RecvBytes::new(16);
        r.write(6, b"world"); // offsets 6..11 arrive first
        assert_eq!(r.len(), 10, "the gap 1..6 is held as zeros");
        r.write(1, b"hello");
        r.write(3, b"llo"); // a retransmission overwrites with the same bytes
        let mut out = Vec::new();
        assert_eq!(r.read(3, &mut out), 3);
        assert_eq!(r.read(100, &mut out), 7);
        assert_eq!(out, b"helloworld");
        assert_eq!(r.len(), 0);
        r.write(2, b"old"); // entirely below base: skipped
        assert_eq!(r.len(), 0);
    }

    #[test]
    fn recv_buffer_never_grows_past_its_capacity() {
        let mut r = RecvBytes::new(8);
        r.write(5, b"0123456789"); // offsets 5..15; only 5..9 fit below base 1 + 8
        assert_eq!(r.len(), 8);
        assert_eq!(r.limit(), 9);
        r.write(100, b"far");
        assert_eq!(r.len(), 8);
        let mut out = Vec::new();
        r.discard_to(5);
        assert_eq!(r.limit(), 13);
        assert_eq!(r.read(10, &mut out), 4);
        assert_eq!(out, b"0123");
        // A write straddling the read point keeps only the unread part.
        r.write(7, b"abcdefgh"); // base is 9: "cdefgh" at 9..15
        out.clear();
        assert_eq!(r.read(10, &mut out), 6);
        assert_eq!(out, b"cdefgh");
        r.discard_to(40); // past everything held: the buffer restarts there
        r.write(40, b"x");
        out.clear();
        assert_eq!(r.read(1, &mut out), 1);
        assert_eq!(out, b"x");
    }

    #[test]
    fn peek_copies_only_what_is_held_and_never_below_base() {
        let mut r = RecvBytes::new(16);
        r.write(1, b"hello");
        let mut out = Vec::new();
        assert_eq!(r.peek(3, 100, &mut out), 3, "only offsets 3..6 are held");
        assert_eq!(out, b"llo");
        r.discard_to(3);
        out.clear();
        assert_eq!(r.peek(2, 2, &mut out), 0, "offset 2 is below base");
        assert_eq!(r.peek(9, 2, &mut out), 0, "nothing held at 9");
        assert!(out.is_empty());
        assert_eq!(r.len(), 3, "peeking reads nothing");
    }
}
