//! The one interface every mechanism implements, and the packet that flows between them.

use crate::time::Instant;

/// A port of a node. Links have one input and one output, both port 0; hosts and routers number
/// their attachments from 0.
#[derive(Clone, Copy, Debug, Default, Eq, Hash, Ord, PartialEq, PartialOrd)]
pub struct PortId(pub u16);

/// Room for an outer IPv4 header (IP-in-IP tunnels), an inner IPv4 header and a TCP header with
/// 40 bytes of options, plus a small trailer (ACK compaction).
pub const MAX_HEADER: usize = 128;

/// A packet: the real header bytes as on the wire, plus a payload that is only a length.
///
/// Payload bytes are taken to be zeros; checksums are computed accordingly, so the headers are
/// valid on the wire and in pcap files (which record the headers only, with the true length).
/// The header bytes live in a heap buffer, so a `Packet` is 32 bytes: a packet is moved a dozen
/// times per hop (node output, event queue, link queue, delay line), and moving 32 bytes rather
/// than 150 is most of a simulator's speed. Buffers are recycled through a per-thread free list
/// ([`HeaderBuf`]), so in steady state building a packet allocates nothing.
#[derive(Clone, Debug)]
pub struct Packet {
    /// Unique id within a run, assigned by whoever created the packet (for traces).
    pub id: u64,
    /// Flow index hint for statistics (not used for forwarding); `u32::MAX` when unknown.
    pub flow: u32,
    hdr_len: u8,
    hdr: HeaderBuf,
    /// Bytes of payload that follow the header on the wire.
    pub payload_len: u32,
}

impl Packet {
    /// A packet with the given header bytes and payload length.
    ///
    /// Panics if `header` is longer than [`MAX_HEADER`]: headers are built by our own code.
    pub fn new(header: &[u8], payload_len: u32) -> Self {
        let mut hdr = HeaderBuf::zeroed();
        hdr[..header.len()].copy_from_slice(header);
        Self {
            id: 0,
            flow: u32::MAX,
            hdr_len: header.len() as u8,
            hdr,
            payload_len,
        }
    }

    /// A packet whose header is written by `fill` into a zeroed buffer; `fill` returns the length.
    #[inline]
    pub fn build(payload_len: u32, fill: impl FnOnce(&mut [u8; MAX_HEADER]) -> usize) -> Self {
        let mut hdr = HeaderBuf::zeroed();
        let n = fill(&mut hdr).min(MAX_HEADER);
        Self {
            id: 0,
            flow: u32::MAX,
            hdr_len: n as u8,
            hdr,
            payload_len,
        }
    }

    /// Header bytes (IPv4 and everything up to the payload).
    #[inline]
    pub fn header(&self) -> &[u8] {
        &self.hdr[..usize::from(self.hdr_len)]
    }

    /// Header bytes, writable in place (ACK rewriting, checksum updates).
    #[inline]
    pub fn header_mut(&mut self) -> &mut [u8] {
        &mut self.hdr[..usize::from(self.hdr_len)]
    }

    /// Replace the header, keeping the payload length. Panics past [`MAX_HEADER`].
    pub fn set_header(&mut self, header: &[u8]) {
        self.hdr[..header.len()].copy_from_slice(header);
        self.hdr_len = header.len() as u8;
    }

    /// Length of the header bytes.
    #[inline]
    pub fn header_len(&self) -> usize {
        usize::from(self.hdr_len)
    }

    /// Bytes this packet occupies on the wire (header + payload).
    #[inline]
    pub fn wire_len(&self) -> u64 {
        u64::from(self.hdr_len) + u64::from(self.payload_len)
    }
}

/// Free header buffers of this thread. Bounded, so a burst does not pin memory forever.
const POOL_MAX: usize = 1 << 16;

/// The boxes themselves are what is recycled (handed back to packets as they are), so the
/// list holds boxes, not arrays.
#[allow(clippy::vec_box)]
type Pool = std::cell::RefCell<Vec<Box<[u8; MAX_HEADER]>>>;

thread_local! {
    static POOL: Pool = const { std::cell::RefCell::new(Vec::new()) };
}

/// A packet's header storage: a boxed array taken from, and returned to, a per-thread free list.
/// The list holds plain byte buffers only, so it cannot change any result: it only spares the
/// allocator (the simulator's hot path performs no heap allocation once the pool is warm).
#[derive(Debug)]
struct HeaderBuf(Option<Box<[u8; MAX_HEADER]>>);

impl HeaderBuf {
    #[inline]
    fn zeroed() -> Self {
        let buf = POOL.with(|p| p.borrow_mut().pop()).map_or_else(
            || Box::new([0u8; MAX_HEADER]),
            |mut b| {
                b.fill(0);
                b
            },
        );
        Self(Some(buf))
    }
}

impl std::ops::Deref for HeaderBuf {
    type Target = [u8; MAX_HEADER];
    #[inline]
    fn deref(&self) -> &[u8; MAX_HEADER] {
        // NOTE(unwrap): the buffer is `None` only inside `drop`.
        self.0.as_deref().expect("header buffer present until drop")
    }
}

impl std::ops::DerefMut for HeaderBuf {
    #[inline]
    fn deref_mut(&mut self) -> &mut [u8; MAX_HEADER] {
        // NOTE(unwrap): the buffer is `None` only inside `drop`.
        self.0
            .as_deref_mut()
            .expect("header buffer present until drop")
    }
}

impl Clone for HeaderBuf {
    fn clone(&self) -> Self {
        let mut new = Self::zeroed();
        new.copy_from_slice(&self[..]);
        new
    }
}

impl Drop for HeaderBuf {
    #[inline]
    fn drop(&mut self) {
        if let Some(b) = self.0.take() {
            // `try_with`: during thread teardown the pool may already be gone; then just free.
            let _ = POOL.try_with(|p| {
                let mut p = p.borrow_mut();
                if p.len() < POOL_MAX {
                    p.push(b);
                }
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

/// A sans-IO network element: a link, a host, a router, a PEP.
///
/// Contract: time never goes backwards between calls. After every `handle_*` call the driver
/// drains [`poll_transmit`](Node::poll_transmit) until `None`, then reads
/// [`poll_timeout`](Node::poll_timeout). `handle_timeout` may be called late or more than once:
/// early and repeated calls do nothing.
pub trait Node {
    /// A packet arrived on `port` at `now`.
    fn handle_packet(&mut self, now: Instant, port: PortId, pkt: Packet);
    /// Called at or after the instant returned by `poll_timeout`.
    fn handle_timeout(&mut self, now: Instant);
    /// Next packet to send; `None` when there is nothing more at `now`.
    fn poll_transmit(&mut self, now: Instant) -> Option<Transmit>;
    /// Earliest instant at which `handle_timeout` must run; `None` when only a packet can wake us.
    fn poll_timeout(&self) -> Option<Instant>;
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
}
