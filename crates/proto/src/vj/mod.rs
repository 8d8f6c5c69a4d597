//! Van Jacobson TCP/IP header compression (RFC 1144), written by hand over the serialised headers.
//!
//! Read before editing: RFC 1144 §3.2 (the compressed packet format: change mask `C I P S A W U`,
//! connection number, TCP checksum, then the deltas), §3.2.2–3.2.3 (compressor and decompressor
//! procedures), §4 (error recovery: "toss until an uncompressed packet or one with an explicit
//! connection number"), and appendix A (`sl_compress_tcp`, `sl_uncompress_tcp`), which this code
//! follows step by step.
//!
//! A [`Compressor`] sits at the sending end of a serial link and a [`Decompressor`] at the
//! receiving end; each keeps a table of connection slots (16 by default, RFC 1144 §3.2.1). The
//! packet type travels in band as SLIP carries it (appendix A.2): the first byte of an
//! `UNCOMPRESSED_TCP` packet is its IPv4 version byte ORed with `0x70`, the change mask of a
//! `COMPRESSED_TCP` packet is ORed with `0x80`, and anything else is `TYPE_IP`. So a compressed
//! ACK is just the compressed header (3–7 bytes for an ACK stream), with no framing overhead,
//! which is what the Samaraweera paper assumes (§4: "reducing … 40 bytes to an average of 6–7").
//!
//! Where this differs from the 1990 code, and why: RFC 1144 predates ECN (RFC 3168), so its
//! compressor never looks at the ECE/CWR bits or the reserved bits, and a change of those would
//! be silently lost. Here every flag other than PSH and URG, and the whole data-offset byte, must
//! equal the saved header or the packet goes uncompressed; and a header whose IPv4 checksum is
//! wrong goes as `TYPE_IP` (the decompressor recomputes that checksum, so it could not restore
//! the wrong one). With these, decompressing gives back the original header byte for byte, or
//! nothing at all (tests below and the `vj_decompress` fuzz target check this).

mod compress;
mod decompress;

pub use compress::Compressor;
pub use decompress::Decompressor;

use serde::Serialize;

/// Connection slots on each side of a link (RFC 1144 §3.2.1: "16 … is adequate").
pub const DEFAULT_SLOTS: u8 = 16;

/// How a packet was framed by the compressor (RFC 1144 §3.2, SLIP encoding of appendix A.2).
#[derive(Clone, Copy, Debug, Eq, PartialEq)]
pub enum PacketType {
    /// Sent as is (not TCP, not compressible).
    Ip,
    /// Whole header, the IPv4 protocol field replaced by the slot number: resynchronises a slot.
    UncompressedTcp,
    /// Change mask, optional slot number, TCP checksum and deltas.
    CompressedTcp,
}

/// Why the decompressor refused a packet; the slot state is then tossed until resynchronised.
#[derive(Clone, Copy, Debug, Eq, PartialEq, thiserror::Error)]
pub enum VjError {
    /// A line error was reported (or seen) since the last explicit connection number: RFC 1144
    /// §4.1 says to toss compressed packets until then.
    #[error("tossing until resynchronised")]
    Tossing,
    /// The packet is shorter than its fields, or its slot number is out of range or unused.
    #[error("malformed compressed packet: {0}")]
    Malformed(&'static str),
}

/// Counters of one compressor or decompressor.
#[derive(Clone, Copy, Debug, Default, Eq, PartialEq, Serialize)]
#[non_exhaustive]
pub struct VjStats {
    /// Packets sent (or received) as `TYPE_IP`.
    pub ip: u64,
    /// Packets sent (or received) as `UNCOMPRESSED_TCP`.
    pub uncompressed: u64,
    /// Packets sent (or received) as `COMPRESSED_TCP`.
    pub compressed: u64,
    /// Decompressor: packets tossed (line error, toss state, malformed).
    pub tossed: u64,
    /// Header bytes before compression (compressor) or after decompression (decompressor).
    pub header_bytes_in: u64,
    /// Header bytes after compression (compressor) or before decompression (decompressor).
    pub header_bytes_out: u64,
}

/// Change-mask bits (RFC 1144 appendix A.1).
pub(crate) mod mask {
    pub const NEW_C: u8 = 0x40;
    pub const NEW_I: u8 = 0x20;
    pub const TCP_PUSH_BIT: u8 = 0x10;
    pub const NEW_S: u8 = 0x08;
    pub const NEW_A: u8 = 0x04;
    pub const NEW_W: u8 = 0x02;
    pub const NEW_U: u8 = 0x01;
    /// Echoed interactive traffic: seq and ack both advance by the last payload length.
    pub const SPECIAL_I: u8 = NEW_S | NEW_W | NEW_U;
    /// Unidirectional data: seq advances by the last payload length.
    pub const SPECIAL_D: u8 = NEW_S | NEW_A | NEW_W | NEW_U;
    pub const SPECIALS_MASK: u8 = SPECIAL_D;
    /// SLIP type bits in the first byte (appendix A.2).
    pub const TYPE_UNCOMPRESSED_TCP: u8 = 0x70;
    pub const TYPE_COMPRESSED_TCP: u8 = 0x80;
}

/// Longest IPv4 + TCP header a slot holds: 20 bytes of IPv4 (options go as `TYPE_IP`) and 60 of
/// TCP.
pub(crate) const MAX_SLOT_HEADER: usize = 80;

#[cfg(any(test, feature = "fuzzing"))]
pub mod fuzzing;

#[cfg(test)]
mod tests;
