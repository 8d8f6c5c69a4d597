//! TCP header (RFC 9293) with the options satpep models: MSS, window scale (RFC 7323),
//! SACK-permitted and SACK blocks (RFC 2018), timestamps (RFC 7323).

use super::SeqNumber;

/// TCP control bits other than ACK (whose presence is `TcpRepr::ack.is_some()`).
#[derive(Clone, Copy, Debug, Default, Eq, PartialEq)]
pub struct TcpFlags(pub u8);

impl TcpFlags {
    /// No more data from sender.
    pub const FIN: Self = Self(0x01);
    /// Synchronize sequence numbers.
    pub const SYN: Self = Self(0x02);
    /// Reset the connection.
    pub const RST: Self = Self(0x04);
    /// Push function.
    pub const PSH: Self = Self(0x08);
    /// Urgent pointer significant.
    pub const URG: Self = Self(0x20);
    /// ECN-Echo.
    pub const ECE: Self = Self(0x40);
    /// Congestion window reduced.
    pub const CWR: Self = Self(0x80);

    /// Whether every bit of `other` is set.
    pub const fn contains(self, other: Self) -> bool {
        self.0 & other.0 == other.0
    }
    /// Set the bits of `other`.
    pub fn insert(&mut self, other: Self) {
        self.0 |= other.0;
    }
}

impl std::ops::BitOr for TcpFlags {
    type Output = Self;
    fn bitor(self, rhs: Self) -> Self {
        Self(self.0 | rhs.0)
    }
}

/// Up to four SACK blocks `[left, right)`, most recent first (RFC 2018 §4).
#[derive(Clone, Copy, Debug, Default, Eq, PartialEq)]
pub struct SackBlocks {
    len: u8,
    blocks: [(SeqNumber, SeqNumber); 4],
}

impl SackBlocks {
    /// Append a block; ignored when four are already present.
    pub fn push(&mut self, left: SeqNumber, right: SeqNumber) {
        if usize::from(self.len) < self.blocks.len() {
            self.blocks[usize::from(self.len)] = (left, right);
            self.len += 1;
        }
    }
    /// Number of blocks.
    pub fn len(&self) -> usize {
        usize::from(self.len)
    }
    /// Whether there are no blocks.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// Keep only the first `n` blocks.
    pub fn truncate(&mut self, n: usize) {
        self.len = self.len.min(n as u8);
    }
    /// The blocks, most recent first.
    pub fn as_slice(&self) -> &[(SeqNumber, SeqNumber)] {
        &self.blocks[..usize::from(self.len)]
    }
}

/// A parsed (or to-be-emitted) TCP header. Only a successfully parsed `TcpRepr` enters the TCP
/// model.
#[derive(Clone, Copy, Debug, Default, Eq, PartialEq)]
pub struct TcpRepr {
    /// Source port.
    pub src_port: u16,
    /// Destination port.
    pub dst_port: u16,
    /// Sequence number of the first byte (or of the SYN/FIN).
    pub seq: SeqNumber,
    /// Acknowledgement number; `Some` exactly when the ACK bit is set.
    pub ack: Option<SeqNumber>,
    /// Control bits other than ACK.
    pub flags: TcpFlags,
    /// Window field as on the wire (unscaled).
    pub window: u16,
    /// Urgent pointer.
    pub urgent: u16,
    /// MSS option (SYN only).
    pub mss: Option<u16>,
    /// Window scale shift count (SYN only).
    pub window_scale: Option<u8>,
    /// SACK-permitted option (SYN only).
    pub sack_permitted: bool,
    /// SACK blocks.
    pub sack: SackBlocks,
    /// Timestamps option: (TSval, TSecr).
    pub timestamp: Option<(u32, u32)>,
    /// Payload bytes that follow the header.
    pub payload_len: u32,
}
