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
/// The header bytes live on the heap, so a `Packet` is 32 bytes: a packet is moved a dozen
/// times per hop (node output, event queue, link queue, delay line), and moving 32 bytes rather
/// than 150 is most of a simulator's speed. Building one allocates once.
#[derive(Clone, Debug)]
pub struct Packet {
    /// Unique id within a run, assigned by whoever created the packet (for traces).
    pub id: u64,
    /// Flow index hint for statistics (not used for forwarding); `u32::MAX` when unknown.
    pub flow: u32,
    hdr_len: u8,
    hdr: Box<[u8; MAX_HEADER]>,
    /// Bytes of payload that follow the header on the wire.
    pub payload_len: u32,
}

impl Packet {
    /// A packet with the given header bytes and payload length.
    ///
    /// Panics if `header` is longer than [`MAX_HEADER`]: headers are built by our own code.
    pub fn new(header: &[u8], payload_len: u32) -> Self {
        let mut hdr = Box::new([0u8; MAX_HEADER]);
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
        let mut hdr = Box::new([0u8; MAX_HEADER]);
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
