//! The receiving side of RFC 1144: `sl_uncompress_tcp` of appendix A.4, plus the line-error
//! input of §4.1.

use super::compress::{tcp_checksum_ok, u16_at, u32_at};
use super::mask::*;
use super::{PacketType, VjError, VjStats, MAX_SLOT_HEADER};
use crate::node::{Packet, MAX_HEADER};
use crate::wire::checksum;

const PSH: u8 = 0x08;
const URG: u8 = 0x20;

/// RFC 1144 decompressor: rebuilds each header from the slot's saved header and the deltas.
///
/// Feed it every packet the link delivers, in order, with [`decompress`](Self::decompress), and
/// call [`on_line_error`](Self::on_line_error) for every packet the link lost (the framing layer's
/// CRC failed): it then tosses compressed packets until one names its slot explicitly or an
/// uncompressed one arrives (RFC 1144 §4.1).
///
/// Two checks beyond RFC 1144 (so that a wrong header never leaves the link): a line error
/// forgets every slot (see [`on_line_error`](Self::on_line_error)); and the TCP checksum of each rebuilt header is verified (satpep's
/// payloads are zeros, so it can be), and a mismatch drops the packet and forgets that slot
/// until its next uncompressed packet. RFC 1144 leaves that check to the receiving TCP, which
/// drops the segment all the same; doing it here means a wrong header never leaves the link.
#[derive(Clone, Debug)]
pub struct Decompressor {
    slots: Vec<RSlot>,
    last_recv: Option<u8>,
    toss: bool,
    stats: VjStats,
}

#[derive(Clone, Debug)]
struct RSlot {
    hdr: [u8; MAX_SLOT_HEADER],
    /// 0 = never filled (or forgotten after a checksum failure).
    len: usize,
}

impl Decompressor {
    /// A decompressor with `slots` connection slots (as the compressor's).
    pub fn new(slots: u8) -> Self {
        Self {
            slots: vec![
                RSlot {
                    hdr: [0; MAX_SLOT_HEADER],
                    len: 0,
                };
                usize::from(slots.max(1))
            ],
            last_recv: None,
            toss: false,
            stats: VjStats::default(),
        }
    }

    /// Counters.
    pub fn stats(&self) -> VjStats {
        self.stats
    }

    /// Whether compressed packets without an explicit slot number are being tossed.
    pub fn is_tossing(&self) -> bool {
        self.toss
    }

    /// The link lost a packet (RFC 1144 §4.1: the framing layer reports `TYPE_ERROR`).
    ///
    /// Stricter than RFC 1144, which only tosses until the next explicit slot number: every slot
    /// is forgotten until its connection's next uncompressed packet. The lost packet's slot is
    /// unknown, and a lost packet that changed only the IP id or TTL (or a lost uncompressed
    /// packet) would leave a state that the TCP checksum cannot expose; RFC 1144 accepts such
    /// wrong IP headers, satpep promises none.
    pub fn on_line_error(&mut self) {
        self.toss = true;
        for s in &mut self.slots {
            s.len = 0;
        }
    }

    /// Restore `pkt`'s header in place. On `Err` the packet must be dropped.
    pub fn decompress_packet(&mut self, pkt: &mut Packet) -> Result<PacketType, VjError> {
        let mut out = [0u8; MAX_HEADER];
        let (ty, n) = self.decompress(pkt.header(), pkt.payload_len, &mut out)?;
        if ty != PacketType::Ip {
            pkt.set_header(&out[..n]);
        }
        Ok(ty)
    }

    /// Decompress one frame: `frame` is what the compressor wrote, followed on the line by
    /// `payload_len` payload bytes. Writes the restored header (and any frame bytes past the
    /// compressed header, which are payload) into `out` and returns how many. Never panics.
    pub fn decompress(
        &mut self,
        frame: &[u8],
        payload_len: u32,
        out: &mut [u8],
    ) -> Result<(PacketType, usize), VjError> {
        let result = self.try_decompress(frame, payload_len, out);
        match &result {
            Ok((PacketType::Ip, _)) => self.stats.ip += 1,
            Ok((PacketType::UncompressedTcp, _)) => self.stats.uncompressed += 1,
            Ok((PacketType::CompressedTcp, _)) => self.stats.compressed += 1,
            Err(VjError::Tossing) => self.stats.tossed += 1,
            Err(VjError::Malformed(_)) => {
                // RFC 1144 A.4 `bad:` — "comp->flags |= SLF_TOSS".
                self.toss = true;
                self.stats.tossed += 1;
            }
        }
        if let Ok((_, n)) = result {
            self.stats.header_bytes_in += frame.len() as u64;
            self.stats.header_bytes_out += n as u64;
        }
        result
    }

    fn try_decompress(
        &mut self,
        frame: &[u8],
        payload_len: u32,
        out: &mut [u8],
    ) -> Result<(PacketType, usize), VjError> {
        let Some(&first) = frame.first() else {
            return Err(VjError::Malformed("empty frame"));
        };
        let c = first & 0xf0;
        if c & TYPE_COMPRESSED_TCP != 0 {
            return self.compressed(frame, payload_len, out);
        }
        if out.len() < frame.len() {
            return Err(VjError::Malformed("frame longer than the output buffer"));
        }
        if c < TYPE_UNCOMPRESSED_TCP {
            out[..frame.len()].copy_from_slice(frame);
            return Ok((PacketType::Ip, frame.len()));
        }
        // UNCOMPRESSED_TCP: restore the version byte and the protocol, save the header.
        if frame.len() < 40 || first & 0x4f != 0x45 {
            return Err(VjError::Malformed(
                "uncompressed TCP without a plain IPv4 header",
            ));
        }
        let id = frame[9];
        if usize::from(id) >= self.slots.len() {
            return Err(VjError::Malformed("slot number out of range"));
        }
        let hlen = 20 + usize::from(frame[32] >> 4) * 4;
        if hlen < 40 || hlen > frame.len() || hlen > MAX_SLOT_HEADER {
            return Err(VjError::Malformed("bad TCP data offset"));
        }
        out[..frame.len()].copy_from_slice(frame);
        out[0] = first & 0x4f;
        out[9] = 6;
        let slot = &mut self.slots[usize::from(id)];
        slot.hdr[..hlen].copy_from_slice(&out[..hlen]);
        slot.len = hlen;
        self.last_recv = Some(id);
        self.toss = false;
        Ok((PacketType::UncompressedTcp, frame.len()))
    }

    fn compressed(
        &mut self,
        frame: &[u8],
        payload_len: u32,
        out: &mut [u8],
    ) -> Result<(PacketType, usize), VjError> {
        const SHORT: VjError = VjError::Malformed("compressed packet truncated");
        let changes = frame[0] & 0x7f;
        let mut cp = 1;
        let id = if changes & NEW_C != 0 {
            let &id = frame.get(1).ok_or(SHORT)?;
            if usize::from(id) >= self.slots.len() {
                return Err(VjError::Malformed("slot number out of range"));
            }
            cp = 2;
            self.toss = false;
            self.last_recv = Some(id);
            id
        } else {
            if self.toss {
                return Err(VjError::Tossing);
            }
            self.last_recv
                .ok_or(VjError::Malformed("implicit slot before any explicit one"))?
        };
        let slot = &self.slots[usize::from(id)];
        let hlen = slot.len;
        if hlen == 0 {
            // Never filled, or forgotten after a line error: wait for an uncompressed packet.
            return Err(VjError::Tossing);
        }
        // Work on a copy; the slot changes only if the whole packet decodes.
        let mut h = slot.hdr;
        let mut rd = Reader { frame, at: cp };
        let cks = rd.u16().ok_or(SHORT)?;
        h[36..38].copy_from_slice(&cks.to_be_bytes());
        if changes & TCP_PUSH_BIT != 0 {
            h[33] |= PSH;
        } else {
            h[33] &= !PSH;
        }
        let last_payload = u32::from(u16_at(&h, 2)).wrapping_sub(hlen as u32);
        match changes & SPECIALS_MASK {
            SPECIAL_I => {
                add_u32(&mut h, 28, last_payload);
                add_u32(&mut h, 24, last_payload);
            }
            SPECIAL_D => add_u32(&mut h, 24, last_payload),
            _ => {
                if changes & NEW_U != 0 {
                    h[33] |= URG;
                    let urp = rd.delta().ok_or(SHORT)?;
                    h[38..40].copy_from_slice(&urp.to_be_bytes());
                } else {
                    h[33] &= !URG;
                }
                if changes & NEW_W != 0 {
                    let w = u16_at(&h, 34).wrapping_add(rd.delta().ok_or(SHORT)?);
                    h[34..36].copy_from_slice(&w.to_be_bytes());
                }
                if changes & NEW_A != 0 {
                    let d = u32::from(rd.delta().ok_or(SHORT)?);
                    add_u32(&mut h, 28, d);
                }
                if changes & NEW_S != 0 {
                    let d = u32::from(rd.delta().ok_or(SHORT)?);
                    add_u32(&mut h, 24, d);
                }
            }
        }
        let ip_id = if changes & NEW_I != 0 {
            u16_at(&h, 4).wrapping_add(rd.delta().ok_or(SHORT)?)
        } else {
            u16_at(&h, 4).wrapping_add(1)
        };
        h[4..6].copy_from_slice(&ip_id.to_be_bytes());
        // Whatever follows the compressed header is payload (here: usually nothing).
        let extra = &frame[rd.at..];
        let total = (hlen + extra.len()) as u64 + u64::from(payload_len);
        let total = u16::try_from(total).map_err(|_| VjError::Malformed("IPv4 length overflow"))?;
        if hlen + extra.len() > out.len() {
            return Err(VjError::Malformed("header longer than the output buffer"));
        }
        h[2..4].copy_from_slice(&total.to_be_bytes());
        h[10..12].fill(0);
        let ip_check = checksum::finish(checksum::sum(0, &h[..20]));
        h[10..12].copy_from_slice(&ip_check.to_be_bytes());
        out[..hlen].copy_from_slice(&h[..hlen]);
        out[hlen..hlen + extra.len()].copy_from_slice(extra);
        if !tcp_checksum_ok(&out[..hlen + extra.len()]) {
            // Deltas applied to a state the compressor did not have (a lost packet on another
            // slot's turn, or a forged frame): forget the slot until it is resent whole.
            self.slots[usize::from(id)].len = 0;
            return Err(VjError::Malformed("TCP checksum wrong after decompression"));
        }
        self.slots[usize::from(id)].hdr[..hlen].copy_from_slice(&h[..hlen]);
        Ok((PacketType::CompressedTcp, hlen + extra.len()))
    }
}

/// Reads the fields after the change mask.
struct Reader<'a> {
    frame: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn u16(&mut self) -> Option<u16> {
        let b = self.frame.get(self.at..self.at + 2)?;
        self.at += 2;
        Some(u16::from_be_bytes([b[0], b[1]]))
    }

    /// RFC 1144 `DECODE*`: one byte 1–255, or a zero byte then 16 bits big endian.
    fn delta(&mut self) -> Option<u16> {
        let &b = self.frame.get(self.at)?;
        self.at += 1;
        match b {
            0 => self.u16(),
            n => Some(u16::from(n)),
        }
    }
}

/// Add `d` (mod 2^32) to the big-endian 32-bit field at `i`.
fn add_u32(h: &mut [u8], i: usize, d: u32) {
    let v = u32_at(h, i).wrapping_add(d);
    h[i..i + 4].copy_from_slice(&v.to_be_bytes());
}
