//! TUN offloads: the `struct virtio_net_hdr` in front of every packet of an `IFF_VNET_HDR`
//! device, software segmentation of the TCP super-packets the kernel hands over (GSO), and
//! coalescing of the wire segments the network delivers back into super-packets (GRO).
//!
//! Read before editing: the virtio 1.2 spec §5.1.6 ("Device Operation": `flags`, `gso_type`,
//! `hdr_len`, `gso_size`, `csum_start`, `csum_offset`), Linux `include/linux/virtio_net.h`
//! (`virtio_net_hdr_to_skb`, what the kernel accepts on write) and `net/ipv4/tcp_offload.c`
//! (`tcp_gso_segment`: FIN and PSH only on the last segment, CWR only on the first, IP ids
//! incrementing from the first), RFC 9293 §3.1 (the checksum and its pseudo-header).
//!
//! The model sees wire segments only: a super-packet read from a host is cut into the
//! segments the host's NIC would have sent ([`segment`]), each with complete checksums, before
//! it enters the network, so queue limits, serialisation, per-packet loss, mechanisms and
//! captures all see exactly what they saw without offloads. On the way out, the segments that
//! reach one host in one pass of the loop and continue each other (same flow, consecutive
//! sequence numbers, equal sizes, identical headers otherwise, valid checksums) are written back
//! as one super-packet ([`Coalescer`]): one system call and one pass through the receiving
//! stack instead of one per segment, at no added lateness (every one of them was due).
//!
//! The header faces the kernel, but it is parsed like network input: whatever does not make
//! sense is an [`OffloadError`], counted and dropped by the caller.

use std::net::Ipv4Addr;

use satpep_proto::wire::checksum;
use satpep_proto::Packet;

/// Bytes of the header in front of every packet (`TUNSETVNETHDRSZ`): the legacy
/// `struct virtio_net_hdr`, without `num_buffers`.
pub const VNET_HDR_LEN: usize = 10;

/// `flags`: the checksum at `csum_start + csum_offset` holds only the pseudo-header sum; the
/// rest is to be summed from `csum_start` to the end.
pub const F_NEEDS_CSUM: u8 = 1;
/// `gso_type`: not a super-packet.
pub const GSO_NONE: u8 = 0;
/// `gso_type`: an IPv4 TCP super-packet to cut into `gso_size`-byte segments.
pub const GSO_TCPV4: u8 = 1;
/// `gso_type` bit: the super-packet carries CWR, to go on its first segment only.
pub const GSO_ECN: u8 = 0x80;

/// Most segments [`Coalescer`] joins into one super-packet (a 64 KB write is 44 of 1448 bytes).
pub const MAX_COALESCE: u32 = 64;

/// Largest IPv4 datagram, the limit of a super-packet.
const MAX_IPV4: usize = 65_535;

const TCP_FIN: u8 = 0x01;
const TCP_SYN: u8 = 0x02;
const TCP_RST: u8 = 0x04;
const TCP_PSH: u8 = 0x08;
const TCP_ACK: u8 = 0x10;
const TCP_URG: u8 = 0x20;
const TCP_CWR: u8 = 0x80;

/// Byte offsets in the IPv4 header (RFC 791 §3.1).
mod ip {
    use std::ops::Range;
    pub const TOTAL_LEN: Range<usize> = 2..4;
    pub const IDENT: Range<usize> = 4..6;
    pub const FRAG: Range<usize> = 6..8;
    pub const PROTOCOL: usize = 9;
    pub const CHECKSUM: Range<usize> = 10..12;
    pub const SRC: Range<usize> = 12..16;
    pub const DST: Range<usize> = 16..20;
}

/// Byte offsets in the TCP header (RFC 9293 §3.1), from its start.
mod tcp {
    use std::ops::Range;
    pub const SEQ: Range<usize> = 4..8;
    pub const DATA_OFFSET: usize = 12;
    pub const FLAGS: usize = 13;
    pub const CHECKSUM: Range<usize> = 16..18;
}

/// Why a packet read with a `virtio_net_hdr` was dropped.
#[derive(Clone, Copy, Debug, Eq, PartialEq, thiserror::Error)]
pub enum OffloadError {
    /// Shorter than the header, or than the headers it announces.
    #[error("truncated")]
    Truncated,
    /// A `gso_type` the device never asked for (UDP, IPv6, unknown).
    #[error("unsupported gso_type {0:#x}")]
    GsoType(u8),
    /// A field that contradicts the packet.
    #[error("bad {0}")]
    Bad(&'static str),
}

/// The `struct virtio_net_hdr` of one packet (fields as the virtio spec names them; the
/// device is set little-endian, `TUNSETVNETLE`).
#[derive(Clone, Copy, Debug, Default, Eq, PartialEq)]
pub struct VirtioNetHdr {
    /// [`F_NEEDS_CSUM`] and others (DATA_VALID is ignored).
    pub flags: u8,
    /// [`GSO_NONE`], [`GSO_TCPV4`], optionally with [`GSO_ECN`].
    pub gso_type: u8,
    /// Length of the headers; advisory (Linux reports its linear part): not trusted.
    pub hdr_len: u16,
    /// Payload bytes per segment.
    pub gso_size: u16,
    /// Where checksumming starts (the transport header).
    pub csum_start: u16,
    /// Offset of the checksum field from `csum_start`.
    pub csum_offset: u16,
}

impl VirtioNetHdr {
    /// The header at the start of `b`, and the packet after it.
    pub fn parse(b: &[u8]) -> Result<(Self, &[u8]), OffloadError> {
        let (h, rest) = b
            .split_at_checked(VNET_HDR_LEN)
            .ok_or(OffloadError::Truncated)?;
        let le = |i: usize| u16::from_le_bytes([h[i], h[i + 1]]);
        Ok((
            Self {
                flags: h[0],
                gso_type: h[1],
                hdr_len: le(2),
                gso_size: le(4),
                csum_start: le(6),
                csum_offset: le(8),
            },
            rest,
        ))
    }

    /// The header's bytes.
    pub fn to_bytes(self) -> [u8; VNET_HDR_LEN] {
        let mut b = [0; VNET_HDR_LEN];
        b[0] = self.flags;
        b[1] = self.gso_type;
        b[2..4].copy_from_slice(&self.hdr_len.to_le_bytes());
        b[4..6].copy_from_slice(&self.gso_size.to_le_bytes());
        b[6..8].copy_from_slice(&self.csum_start.to_le_bytes());
        b[8..10].copy_from_slice(&self.csum_offset.to_le_bytes());
        b
    }
}

/// The wire segments of packet `pkt` read with header `hdr`, each handed to `each` in order as
/// (first bytes, rest), the packet being the two joined: a plain packet once, whole in the
/// first part, its checksum completed when the kernel left it partial; a TCP super-packet as
/// the segments `tcp_gso_segment` would make, with complete IPv4 and TCP checksums, each as its
/// IPv4 and TCP headers (built in `out`, which is reused) and its payload (a slice of `pkt`: no
/// copy). Returns the number of segments. `pkt` may be changed (a completed checksum).
pub fn segment(
    hdr: &VirtioNetHdr,
    pkt: &mut [u8],
    out: &mut Vec<u8>,
    mut each: impl FnMut(&[u8], &[u8]),
) -> Result<usize, OffloadError> {
    match hdr.gso_type & !GSO_ECN {
        GSO_NONE => {
            if hdr.flags & F_NEEDS_CSUM != 0 {
                complete_checksum(pkt, hdr.csum_start.into(), hdr.csum_offset.into())?;
            }
            each(pkt, &[]);
            Ok(1)
        }
        GSO_TCPV4 => segment_tcpv4(hdr, pkt, out, each),
        t => Err(OffloadError::GsoType(t)),
    }
}

/// Store the checksum of `pkt[start..]` at `start + offset`, whose field holds the
/// pseudo-header sum (Linux `skb_checksum_help`).
fn complete_checksum(pkt: &mut [u8], start: usize, offset: usize) -> Result<(), OffloadError> {
    let field = start + offset;
    if field + 2 > pkt.len() {
        return Err(OffloadError::Bad("csum_start/csum_offset"));
    }
    let sum = checksum::finish(checksum::sum(0, &pkt[start..]));
    pkt[field..field + 2].copy_from_slice(&sum.to_be_bytes());
    Ok(())
}

/// IPv4 header length and TCP header length of an IPv4 TCP packet of `total` bytes whose
/// first bytes are `head` (which must hold both headers), checked against `total`.
fn tcpv4_lengths(head: &[u8], total: usize) -> Result<(usize, usize), OffloadError> {
    if head.len() < 20 || head[0] >> 4 != 4 {
        return Err(OffloadError::Bad("IPv4 header"));
    }
    let ihl = usize::from(head[0] & 0x0f) * 4;
    if ihl < 20 || head[ip::PROTOCOL] != 6 {
        return Err(OffloadError::Bad("IPv4 header"));
    }
    if usize::from(u16::from_be_bytes([head[2], head[3]])) != total {
        return Err(OffloadError::Bad("IPv4 total length"));
    }
    let thl = head
        .get(ihl + tcp::DATA_OFFSET)
        .map(|&d| usize::from(d >> 4) * 4)
        .ok_or(OffloadError::Truncated)?;
    if thl < 20 || ihl + thl > head.len() {
        return Err(OffloadError::Truncated);
    }
    Ok((ihl, thl))
}

fn segment_tcpv4(
    hdr: &VirtioNetHdr,
    pkt: &[u8],
    out: &mut Vec<u8>,
    mut each: impl FnMut(&[u8], &[u8]),
) -> Result<usize, OffloadError> {
    let (ihl, thl) = tcpv4_lengths(pkt, pkt.len())?;
    let mss = usize::from(hdr.gso_size);
    if mss == 0 {
        return Err(OffloadError::Bad("gso_size"));
    }
    if u16::from_be_bytes([pkt[ip::FRAG.start], pkt[ip::FRAG.start + 1]]) & 0x3fff != 0 {
        return Err(OffloadError::Bad("fragment"));
    }
    let hl = ihl + thl;
    let payload = &pkt[hl..];
    let (src, dst) = (addr(&pkt[ip::SRC]), addr(&pkt[ip::DST]));
    let id0 = u16::from_be_bytes([pkt[ip::IDENT.start], pkt[ip::IDENT.start + 1]]);
    let seq0 = be32(&pkt[ihl + tcp::SEQ.start..]);
    let flags0 = pkt[ihl + tcp::FLAGS];
    // A super-packet without payload (never made by Linux) is passed on as the one segment.
    let n = payload.len().div_ceil(mss).max(1);
    for i in 0..n {
        let chunk = &payload[(i * mss).min(payload.len())..((i + 1) * mss).min(payload.len())];
        out.clear();
        out.extend_from_slice(&pkt[..hl]);
        let len = (hl + chunk.len()) as u16; // ≤ pkt.len() ≤ 65 535
        out[ip::TOTAL_LEN].copy_from_slice(&len.to_be_bytes());
        out[ip::IDENT].copy_from_slice(&id0.wrapping_add(i as u16).to_be_bytes());
        out[ip::CHECKSUM].copy_from_slice(&[0, 0]);
        let ip_sum = checksum::finish(checksum::sum(0, &out[..ihl]));
        out[ip::CHECKSUM].copy_from_slice(&ip_sum.to_be_bytes());
        let seq = seq0.wrapping_add((i * mss) as u32);
        out[ihl + tcp::SEQ.start..ihl + tcp::SEQ.end].copy_from_slice(&seq.to_be_bytes());
        let mut flags = flags0;
        if i + 1 < n {
            flags &= !(TCP_FIN | TCP_PSH);
        }
        if i > 0 {
            flags &= !TCP_CWR;
        }
        out[ihl + tcp::FLAGS] = flags;
        // The TCP checksum over the pseudo-header, the TCP header (a multiple of 4 bytes, so
        // the payload's words line up) and the payload.
        let c = ihl + tcp::CHECKSUM.start;
        out[c..c + 2].copy_from_slice(&[0, 0]);
        let acc = checksum::pseudo_header_ipv4(src, dst, 6, len - ihl as u16);
        let sum = checksum::finish(checksum::sum(checksum::sum(acc, &out[ihl..]), chunk));
        out[c..c + 2].copy_from_slice(&sum.to_be_bytes());
        each(out, chunk);
    }
    Ok(n)
}

fn addr(b: &[u8]) -> Ipv4Addr {
    Ipv4Addr::new(b[0], b[1], b[2], b[3])
}

fn be32(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

/// Joins consecutive TCP segments of one flow into one super-packet for a `virtio_net_hdr`
/// write; see the module documentation for when segments continue each other.
///
/// Payloads are not copied when the segment comes as a [`Packet`] that owns them
/// ([`push_packet`](Self::push_packet)): the coalescer keeps the packet and the batch lists its
/// payload for a gathering write (`writev`), so the only copy of the bytes on the way out is the
/// kernel's. Segments given as byte slices ([`push`](Self::push)) are copied.
///
/// Call order: push each packet in delivery order; when it is refused, [`take`](Self::take)
/// what was joined, write it, and push the packet again; a packet refused by an empty coalescer
/// goes out on its own (with an all-zero header). `take` at the end of every pass.
#[derive(Debug, Default)]
pub struct Coalescer {
    /// `virtio_net_hdr` and the headers of the first segment.
    head: Vec<u8>,
    /// Where each joined segment's payload is.
    parts: Vec<Part>,
    /// Payloads of the segments pushed as slices, one after another.
    copied: Vec<u8>,
    /// Payload bytes joined so far.
    payload_len: usize,
    /// Segments joined so far.
    segments: u32,
    /// Their bytes on the wire.
    wire_bytes: u64,
    ihl: usize,
    /// IPv4 + TCP header length.
    hl: usize,
    gso_size: usize,
    next_seq: u32,
    next_id: u16,
    /// A short, PSH or FIN segment was joined: nothing may follow it.
    closed: bool,
}

/// Where one joined segment's payload is.
#[derive(Debug)]
enum Part {
    /// In the packet, kept until the batch is written.
    Held(Packet),
    /// In `copied`, at this range.
    Copied(std::ops::Range<usize>),
}

/// One write [`Coalescer::take`] produced: `virtio_net_hdr` and headers, then the payloads, in
/// [`parts`](Self::parts). Dropping it releases the packets it held.
#[derive(Debug)]
pub struct Batch<'a> {
    c: &'a mut Coalescer,
    /// Wire segments it carries.
    pub segments: u32,
    /// Their bytes on the wire (each one's IPv4 total length).
    pub wire_bytes: u64,
}

impl Batch<'_> {
    /// The write's bytes in order, as slices for one gathering write: the `virtio_net_hdr` and
    /// headers first, then each segment's payload. At most [`MAX_COALESCE`] + 1 of them.
    pub fn parts(&self) -> impl Iterator<Item = &[u8]> {
        let c = &*self.c;
        std::iter::once(c.head.as_slice()).chain(c.parts.iter().map(move |p| match p {
            Part::Held(pkt) => pkt.payload().unwrap_or_default(),
            Part::Copied(r) => &c.copied[r.clone()],
        }))
    }

    /// Bytes of the write, `virtio_net_hdr` included.
    pub fn len(&self) -> usize {
        self.c.head.len() + self.c.payload_len
    }

    /// Never: a batch holds at least the header.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// The write's bytes joined (for tests and for writers that cannot gather).
    pub fn to_vec(&self) -> Vec<u8> {
        self.parts().flatten().copied().collect()
    }
}

impl Drop for Batch<'_> {
    fn drop(&mut self) {
        self.c.parts.clear();
        self.c.copied.clear();
        self.c.payload_len = 0;
    }
}

impl Coalescer {
    /// Join the packet `head` + `payload` (one IPv4 packet as on the wire: its headers, or all
    /// of it, in `head`) to the segments held, or start with it when none are; false when it
    /// cannot join (another flow, a gap, different headers, a bad checksum, not a TCP data
    /// segment, too long). `checksums_known`: the caller knows the checksums hold (it computed
    /// them and nothing changed the bytes since), so they are not summed again. The payload is
    /// copied.
    pub fn push(&mut self, head: &[u8], payload: &[u8], checksums_known: bool) -> bool {
        let Some(payload) = self.admit(head, payload, checksums_known) else {
            return false;
        };
        let start = self.copied.len();
        self.copied.extend_from_slice(payload);
        self.parts.push(Part::Copied(start..self.copied.len()));
        true
    }

    /// [`push`](Self::push) a packet whose payload it owns, without copying the payload: the
    /// packet is kept until the batch is written. A refused packet comes back, as does one
    /// without a real payload of its own (push its materialised bytes instead).
    pub fn push_packet(&mut self, pkt: Packet) -> Result<(), Packet> {
        let Some(payload) = pkt.payload().filter(|p| !p.is_empty()) else {
            return Err(pkt);
        };
        if self
            .admit(pkt.header(), payload, pkt.checksums_known_valid())
            .is_none()
        {
            return Err(pkt);
        }
        self.parts.push(Part::Held(pkt));
        Ok(())
    }

    /// The checks of [`push`](Self::push) and the bookkeeping of a joined segment, all but
    /// storing its payload, which it returns (in `head` when `payload` is empty).
    fn admit<'p>(
        &mut self,
        head: &'p [u8],
        payload: &'p [u8],
        checksums_known: bool,
    ) -> Option<&'p [u8]> {
        let total = head.len() + payload.len();
        let (ihl, hl, flags) = data_segment(head, total)?;
        let payload = match (head.len() == hl, payload.is_empty()) {
            (_, true) => &head[hl..],
            (true, false) => payload,
            (false, false) => return None, // payload bytes on both sides: not worth joining
        };
        let seq = be32(&head[ihl + tcp::SEQ.start..]);
        let id = u16::from_be_bytes([head[ip::IDENT.start], head[ip::IDENT.start + 1]]);
        if self.segments > 0 {
            let first = &self.head[VNET_HDR_LEN..VNET_HDR_LEN + self.hl];
            if self.closed
                || hl != self.hl
                || ihl != self.ihl
                || seq != self.next_seq
                || id != self.next_id
                || payload.len() > self.gso_size
                || self.segments >= MAX_COALESCE
                || self.hl + self.payload_len + payload.len() > MAX_IPV4
                || !same_headers(first, &head[..hl], ihl)
            {
                return None;
            }
        }
        // Last, as the dearest test: a corrupted segment must reach the host as it is, to be
        // dropped there.
        if !checksums_known && !checksums_valid(&head[..hl], payload, ihl) {
            return None;
        }
        if self.segments == 0 {
            self.head.clear();
            self.head.extend_from_slice(&[0; VNET_HDR_LEN]);
            self.head.extend_from_slice(&head[..hl]);
            (self.ihl, self.hl, self.gso_size) = (ihl, hl, payload.len());
        } else {
            self.head[VNET_HDR_LEN + ihl + tcp::FLAGS] |= flags & (TCP_PSH | TCP_FIN);
        }
        self.payload_len += payload.len();
        self.segments += 1;
        self.wire_bytes += total as u64;
        self.next_seq = seq.wrapping_add(payload.len() as u32);
        self.next_id = id.wrapping_add(1);
        self.closed = payload.len() < self.gso_size || flags & (TCP_PSH | TCP_FIN) != 0;
        Some(payload)
    }

    /// What was joined, emptied: one segment as it came (all-zero header), several as a
    /// super-packet with `gso_type` TCPV4 and a partial checksum for the kernel to finish.
    pub fn take(&mut self) -> Option<Batch<'_>> {
        if self.segments == 0 {
            return None;
        }
        let (segments, wire_bytes) = (self.segments, self.wire_bytes);
        (self.segments, self.wire_bytes, self.closed) = (0, 0, false);
        if segments > 1 {
            let ihl = self.ihl;
            let total = (self.hl + self.payload_len) as u16; // ≤ MAX_IPV4, checked in `push`
            let p = &mut self.head[VNET_HDR_LEN..];
            p[ip::TOTAL_LEN].copy_from_slice(&total.to_be_bytes());
            p[ip::CHECKSUM].copy_from_slice(&[0, 0]);
            let ip_sum = checksum::finish(checksum::sum(0, &p[..ihl]));
            p[ip::CHECKSUM].copy_from_slice(&ip_sum.to_be_bytes());
            // CHECKSUM_PARTIAL: the field holds the pseudo-header sum over the whole segment
            // length, as `tcp_v4_send_check` leaves it and `tcp_gso_segment` expects.
            let seg_len = total - ihl as u16;
            let pseudo =
                checksum::pseudo_header_ipv4(addr(&p[ip::SRC]), addr(&p[ip::DST]), 6, seg_len);
            let c = ihl + tcp::CHECKSUM.start;
            p[c..c + 2].copy_from_slice(&checksum::fold(pseudo).to_be_bytes());
            let hdr = VirtioNetHdr {
                flags: F_NEEDS_CSUM,
                gso_type: GSO_TCPV4,
                hdr_len: self.hl as u16,
                gso_size: self.gso_size as u16,
                csum_start: ihl as u16,
                csum_offset: tcp::CHECKSUM.start as u16,
            };
            self.head[..VNET_HDR_LEN].copy_from_slice(&hdr.to_bytes());
        }
        Some(Batch {
            c: self,
            segments,
            wire_bytes,
        })
    }
}

/// IPv4 header length, IPv4 + TCP header length and TCP flags of a packet of `total` bytes
/// starting with `head` that may join a super-packet: IPv4 without fragmentation, TCP with
/// payload, only ACK (and ECE, PSH, FIN) set.
fn data_segment(head: &[u8], total: usize) -> Option<(usize, usize, u8)> {
    let (ihl, thl) = tcpv4_lengths(head, total).ok()?;
    let hl = ihl + thl;
    if total == hl {
        return None;
    }
    if u16::from_be_bytes([head[ip::FRAG.start], head[ip::FRAG.start + 1]]) & 0x3fff != 0 {
        return None;
    }
    let flags = head[ihl + tcp::FLAGS];
    if flags & TCP_ACK == 0 || flags & (TCP_SYN | TCP_RST | TCP_URG | TCP_CWR) != 0 {
        return None;
    }
    Some((ihl, hl, flags))
}

/// Whether the IPv4 checksum of `headers` and the TCP checksum of `headers` + `payload` hold
/// (the TCP header is a multiple of 4 bytes, so the payload's words line up).
fn checksums_valid(headers: &[u8], payload: &[u8], ihl: usize) -> bool {
    if !checksum::is_valid(checksum::sum(0, &headers[..ihl])) {
        return false;
    }
    let tcp_len = (headers.len() - ihl + payload.len()) as u16;
    let acc =
        checksum::pseudo_header_ipv4(addr(&headers[ip::SRC]), addr(&headers[ip::DST]), 6, tcp_len);
    checksum::is_valid(checksum::sum(checksum::sum(acc, &headers[ihl..]), payload))
}

/// Whether two headers (`ihl` bytes of IPv4, then TCP) agree in everything but what differs
/// between segments of one super-packet: total length, identification, IPv4 checksum,
/// sequence number, PSH and FIN, TCP checksum.
fn same_headers(a: &[u8], b: &[u8], ihl: usize) -> bool {
    let t = ihl;
    let flags = t + tcp::FLAGS;
    a.len() == b.len()
        && a.len() >= t + 20
        && a[..ip::TOTAL_LEN.start] == b[..ip::TOTAL_LEN.start]
        && a[ip::FRAG.start..ip::CHECKSUM.start] == b[ip::FRAG.start..ip::CHECKSUM.start]
        && a[ip::SRC.start..t + tcp::SEQ.start] == b[ip::SRC.start..t + tcp::SEQ.start]
        && a[t + tcp::SEQ.end..flags] == b[t + tcp::SEQ.end..flags]
        && (a[flags] | TCP_PSH | TCP_FIN) == (b[flags] | TCP_PSH | TCP_FIN)
        && a[flags + 1..t + tcp::CHECKSUM.start] == b[flags + 1..t + tcp::CHECKSUM.start]
        && a[t + tcp::CHECKSUM.end..] == b[t + tcp::CHECKSUM.end..]
}

#[cfg(test)]
mod tests;
