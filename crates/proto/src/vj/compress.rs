//! The sending side of RFC 1144: `sl_compress_tcp` of appendix A.3, slot by slot.

use super::mask::*;
use super::{PacketType, VjStats, MAX_SLOT_HEADER};
use crate::node::{Packet, MAX_HEADER};
use crate::wire::checksum;

/// TCP flag bits as in the header's flag byte.
const FIN: u8 = 0x01;
const SYN: u8 = 0x02;
const RST: u8 = 0x04;
const PSH: u8 = 0x08;
const ACK: u8 = 0x10;
const URG: u8 = 0x20;

/// RFC 1144 compressor: keeps the last header sent on each of its connection slots and sends
/// only what changed.
///
/// Call [`compress`](Self::compress) (or [`compress_packet`](Self::compress_packet)) on every
/// packet in the order it goes on the line; the far end's [`super::Decompressor`] must see the
/// same order.
#[derive(Clone, Debug)]
pub struct Compressor {
    slots: Vec<Slot>,
    /// Slot numbers, most recently used first (the RFC's circular list).
    lru: Vec<u8>,
    /// Slot of the last packet sent; a compressed packet on the same slot omits its number.
    last_xmit: Option<u8>,
    stats: VjStats,
}

#[derive(Clone, Debug)]
struct Slot {
    hdr: [u8; MAX_SLOT_HEADER],
    len: usize,
}

/// Deltas are at most 5 fields of 3 bytes each.
struct Deltas {
    buf: [u8; 16],
    len: usize,
}

impl Deltas {
    /// RFC 1144 `ENCODE`: 1–255 in one byte, otherwise a zero byte then 16 bits big endian.
    fn encode(&mut self, n: u16) {
        if n >= 256 || n == 0 {
            self.buf[self.len] = 0;
            self.buf[self.len + 1..self.len + 3].copy_from_slice(&n.to_be_bytes());
            self.len += 3;
        } else {
            self.buf[self.len] = n as u8;
            self.len += 1;
        }
    }
}

impl Compressor {
    /// A compressor with `slots` connection slots (1–255; RFC 1144 uses 16, [`super::DEFAULT_SLOTS`]).
    /// The far end's decompressor must have the same number.
    pub fn new(slots: u8) -> Self {
        let n = slots.max(1);
        Self {
            slots: vec![
                Slot {
                    hdr: [0; MAX_SLOT_HEADER],
                    len: 0,
                };
                usize::from(n)
            ],
            lru: (0..n).collect(),
            last_xmit: None,
            stats: VjStats::default(),
        }
    }

    /// Counters.
    pub fn stats(&self) -> VjStats {
        self.stats
    }

    /// Replace `pkt`'s header by its compressed form (the payload stays a length) and say how it
    /// was framed.
    pub fn compress_packet(&mut self, pkt: &mut Packet) -> PacketType {
        let mut out = [0u8; MAX_HEADER];
        let (ty, n) = self.compress(pkt.header(), pkt.payload_len, &mut out);
        if ty != PacketType::Ip {
            pkt.set_header(&out[..n]);
        }
        ty
    }

    /// Compress the IPv4 + TCP `header` of a packet whose payload is `payload_len` zero bytes
    /// into `out`, which must be at least `header.len()` long. Returns the framing and the number
    /// of bytes written. Never panics on any `header` (given a long enough `out`).
    pub fn compress(
        &mut self,
        header: &[u8],
        payload_len: u32,
        out: &mut [u8],
    ) -> (PacketType, usize) {
        self.stats.header_bytes_in += header.len() as u64;
        let (ty, n) = match self.try_compress(header, payload_len, out) {
            Some(done) => done,
            None => {
                out[..header.len()].copy_from_slice(header);
                (PacketType::Ip, header.len())
            }
        };
        match ty {
            PacketType::Ip => self.stats.ip += 1,
            PacketType::UncompressedTcp => self.stats.uncompressed += 1,
            PacketType::CompressedTcp => self.stats.compressed += 1,
        }
        self.stats.header_bytes_out += n as u64;
        (ty, n)
    }

    /// `None`: send as `TYPE_IP`.
    fn try_compress(
        &mut self,
        h: &[u8],
        payload_len: u32,
        out: &mut [u8],
    ) -> Option<(PacketType, usize)> {
        // Only plain IPv4 (no options, not a fragment) carrying a whole TCP header and nothing
        // else; both checksums valid, so the decompressor can restore them exactly.
        if h.len() < 40 || h[0] != 0x45 || h[9] != 6 || u16_at(h, 6) & 0x3fff != 0 {
            return None;
        }
        let hlen = 20 + usize::from(h[32] >> 4) * 4;
        if hlen < 40 || hlen != h.len() || hlen > MAX_SLOT_HEADER {
            return None;
        }
        if u64::from(u16_at(h, 2)) != h.len() as u64 + u64::from(payload_len) {
            return None;
        }
        if !checksum::is_valid(checksum::sum(0, &h[..20])) || !tcp_checksum_ok(h) {
            return None;
        }
        // RFC 1144 A.3: "if (th->th_flags & (TH_SYN|TH_FIN|TH_RST|TH_ACK)) != TH_ACK".
        if h[33] & (SYN | FIN | RST | ACK) != ACK {
            return None;
        }

        // Find the slot of this connection (addresses and ports), or recycle the oldest.
        let found = self.lru.iter().position(|&s| {
            let slot = &self.slots[usize::from(s)];
            slot.len != 0 && slot.hdr[12..20] == h[12..20] && slot.hdr[20..24] == h[20..24]
        });
        let (pos, fresh) = match found {
            Some(p) => (p, false),
            None => (self.lru.len() - 1, true),
        };
        let id = self.lru.remove(pos);
        self.lru.insert(0, id);
        if fresh {
            return Some(self.uncompressed(id, h, out));
        }
        let o = self.slots[usize::from(id)].hdr;
        let oh = &o[..self.slots[usize::from(id)].len];

        // "Make sure that only what we expect to change changed": version/IHL/TOS, fragment
        // word, TTL/protocol, data offset (and reserved bits), flags other than PSH/URG, options.
        if h[0..2] != oh[0..2]
            || h[6..10] != oh[6..10]
            || oh.len() != hlen
            || h[32] != oh[32]
            || h[33] & !(PSH | URG) != oh[33] & !(PSH | URG)
            || h[40..hlen] != oh[40..hlen]
        {
            return Some(self.uncompressed(id, h, out));
        }

        let mut d = Deltas {
            buf: [0; 16],
            len: 0,
        };
        let mut changes = 0u8;
        if h[33] & URG != 0 {
            d.encode(u16_at(h, 38));
            changes |= NEW_U;
        } else if h[38..40] != oh[38..40] {
            return Some(self.uncompressed(id, h, out));
        }
        let dw = u16_at(h, 34).wrapping_sub(u16_at(oh, 34));
        if dw != 0 {
            d.encode(dw);
            changes |= NEW_W;
        }
        let da = u32_at(h, 28).wrapping_sub(u32_at(oh, 28));
        if da != 0 {
            if da > 0xffff {
                return Some(self.uncompressed(id, h, out));
            }
            d.encode(da as u16);
            changes |= NEW_A;
        }
        let ds = u32_at(h, 24).wrapping_sub(u32_at(oh, 24));
        if ds != 0 {
            if ds > 0xffff {
                return Some(self.uncompressed(id, h, out));
            }
            d.encode(ds as u16);
            changes |= NEW_S;
        }
        // The previous packet's payload length, for the special cases.
        let last_payload = u32::from(u16_at(oh, 2)).wrapping_sub(hlen as u32);
        // "If this packet contains data and the last one didn't, this is probably a data packet
        // following an ack … Otherwise it's probably a retransmission, retransmitted ack or
        // window probe. Send it uncompressed."
        let data_after_ack = u16_at(h, 2) != u16_at(oh, 2) && usize::from(u16_at(oh, 2)) == hlen;
        match changes {
            0 if !data_after_ack => return Some(self.uncompressed(id, h, out)),
            SPECIAL_I | SPECIAL_D => return Some(self.uncompressed(id, h, out)),
            c if c == NEW_S | NEW_A && ds == da && ds == last_payload => {
                changes = SPECIAL_I;
                d.len = 0;
            }
            NEW_S if ds == last_payload => {
                changes = SPECIAL_D;
                d.len = 0;
            }
            _ => {}
        }
        let di = u16_at(h, 4).wrapping_sub(u16_at(oh, 4));
        if di != 1 {
            d.encode(di);
            changes |= NEW_I;
        }
        if h[33] & PSH != 0 {
            changes |= TCP_PUSH_BIT;
        }
        let slot = &mut self.slots[usize::from(id)];
        slot.hdr[..hlen].copy_from_slice(h);
        let mut n = 0;
        if self.last_xmit != Some(id) {
            self.last_xmit = Some(id);
            out[0] = TYPE_COMPRESSED_TCP | changes | NEW_C;
            out[1] = id;
            n = 2;
        } else {
            out[0] = TYPE_COMPRESSED_TCP | changes;
            n += 1;
        }
        out[n..n + 2].copy_from_slice(&h[36..38]); // the TCP checksum, unchanged
        n += 2;
        out[n..n + d.len].copy_from_slice(&d.buf[..d.len]);
        Some((PacketType::CompressedTcp, n + d.len))
    }

    /// Save `h` in slot `id` and send it whole, the protocol field carrying the slot number.
    fn uncompressed(&mut self, id: u8, h: &[u8], out: &mut [u8]) -> (PacketType, usize) {
        let slot = &mut self.slots[usize::from(id)];
        slot.hdr[..h.len()].copy_from_slice(h);
        slot.len = h.len();
        self.last_xmit = Some(id);
        out[..h.len()].copy_from_slice(h);
        out[0] |= TYPE_UNCOMPRESSED_TCP;
        out[9] = id;
        (PacketType::UncompressedTcp, h.len())
    }
}

/// Whether the TCP checksum of a whole IPv4 + TCP header with zero payload is valid.
pub(super) fn tcp_checksum_ok(h: &[u8]) -> bool {
    let total = u16_at(h, 2);
    let Some(seg_len) = total.checked_sub(20) else {
        return false;
    };
    let src = std::net::Ipv4Addr::new(h[12], h[13], h[14], h[15]);
    let dst = std::net::Ipv4Addr::new(h[16], h[17], h[18], h[19]);
    let pseudo = checksum::pseudo_header_ipv4(src, dst, 6, seg_len);
    checksum::is_valid(checksum::sum(pseudo, &h[20..]))
}

pub(super) fn u16_at(h: &[u8], i: usize) -> u16 {
    u16::from_be_bytes([h[i], h[i + 1]])
}

pub(super) fn u32_at(h: &[u8], i: usize) -> u32 {
    u32::from_be_bytes([h[i], h[i + 1], h[i + 2], h[i + 3]])
}
