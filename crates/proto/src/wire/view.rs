//! An in-place view of an IPv4 + TCP header, for mechanisms that read or rewrite a queued packet
//! without a full parse (ACK filtering, ACK compaction).
//!
//! Read before editing: RFC 791 §3.1, RFC 9293 §3.1, RFC 1624 (incremental checksum update).
//!
//! The view covers the header bytes of a [`crate::Packet`]; the payload is the rest of the IPv4
//! total length and is taken as zeros, as everywhere in satpep. Setters keep the TCP checksum valid
//! by RFC 1624 incremental update, so a rewritten ACK stays a valid packet at the cost of a few
//! additions instead of a pass over the header.

use std::net::Ipv4Addr;
use std::ops::Range;

use super::ipv4::{field as ip_field, FRAG_MASK, IPV4_HEADER_LEN};
use super::tcp::{
    field as tcp_field, ACK_BIT, KIND_EOL, KIND_MSS, KIND_NOP, KIND_SACK, KIND_WS, TCP_HEADER_LEN,
    TCP_MAX_OPTIONS_LEN,
};
use super::{checksum, SeqNumber, TcpFlags, WireError, IPPROTO_TCP, MAX_IPV4_TCP_HEADER_LEN};

/// Offsets of a TCP field inside the whole IPv4 + TCP header (the TCP header starts at 20).
const fn tcp(r: Range<usize>) -> Range<usize> {
    IPV4_HEADER_LEN + r.start..IPV4_HEADER_LEN + r.end
}

/// A zero-copy view of an IPv4 (no options) + TCP header in a byte buffer.
///
/// Build it with [`Self::new_checked`] on untrusted bytes: after that no getter or setter panics.
/// [`Self::new_unchecked`] skips the checks, and accessors then panic on a short buffer. Neither
/// verifies checksums: call [`Self::verify_checksums`] for that.
#[derive(Clone, Copy, Debug, Eq, PartialEq)]
pub struct TcpIpv4View<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> TcpIpv4View<T> {
    /// Wrap `buffer` without any check.
    pub const fn new_unchecked(buffer: T) -> Self {
        Self { buffer }
    }

    /// Wrap `buffer` after [`Self::check_len`].
    pub fn new_checked(buffer: T) -> Result<Self, WireError> {
        let view = Self::new_unchecked(buffer);
        view.check_len()?;
        Ok(view)
    }

    /// Check that the buffer holds a whole IPv4 header without options, not a fragment, carrying
    /// TCP, with the whole TCP header present and the buffer no longer than the IPv4 total length.
    pub fn check_len(&self) -> Result<(), WireError> {
        let b = self.buffer.as_ref();
        if b.len() < IPV4_HEADER_LEN {
            return Err(WireError::Truncated);
        }
        if b[ip_field::VER_IHL] >> 4 != 4 {
            return Err(WireError::Unsupported("not IPv4"));
        }
        if b[ip_field::VER_IHL] & 0x0f != 5 {
            return Err(WireError::Unsupported("IPv4 options"));
        }
        if self.read_u16(ip_field::FLAGS_FRAG) & FRAG_MASK != 0 {
            return Err(WireError::Unsupported("IPv4 fragment"));
        }
        if b[ip_field::PROTOCOL] != IPPROTO_TCP {
            return Err(WireError::Unsupported("not TCP"));
        }
        if b.len() < IPV4_HEADER_LEN + TCP_HEADER_LEN {
            return Err(WireError::Truncated);
        }
        let tcp_len = self.tcp_header_len();
        if tcp_len < TCP_HEADER_LEN {
            return Err(WireError::Unsupported("TCP data offset below 5"));
        }
        if b.len() < IPV4_HEADER_LEN + tcp_len {
            return Err(WireError::Truncated);
        }
        if usize::from(self.total_len()) < b.len() {
            return Err(WireError::Unsupported(
                "IPv4 total length shorter than the header",
            ));
        }
        Ok(())
    }

    /// The underlying buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// IPv4 source address.
    pub fn src_addr(&self) -> Ipv4Addr {
        Ipv4Addr::from(self.read_u32(ip_field::SRC_ADDR))
    }

    /// IPv4 destination address.
    pub fn dst_addr(&self) -> Ipv4Addr {
        Ipv4Addr::from(self.read_u32(ip_field::DST_ADDR))
    }

    /// IPv4 total length: header plus payload, in bytes.
    pub fn total_len(&self) -> u16 {
        self.read_u16(ip_field::TOTAL_LEN)
    }

    /// IPv4 identification field.
    pub fn ident(&self) -> u16 {
        self.read_u16(ip_field::IDENT)
    }

    /// IPv4 time to live.
    pub fn ttl(&self) -> u8 {
        self.buffer.as_ref()[ip_field::TTL]
    }

    /// IPv4 DSCP (upper 6 bits) and ECN (lower 2 bits).
    pub fn dscp_ecn(&self) -> u8 {
        self.buffer.as_ref()[ip_field::DSCP_ECN]
    }

    /// TCP source port.
    pub fn src_port(&self) -> u16 {
        self.read_u16(tcp(tcp_field::SRC_PORT))
    }

    /// TCP destination port.
    pub fn dst_port(&self) -> u16 {
        self.read_u16(tcp(tcp_field::DST_PORT))
    }

    /// TCP sequence number.
    pub fn seq_number(&self) -> SeqNumber {
        SeqNumber(self.read_u32(tcp(tcp_field::SEQ_NUM)))
    }

    /// TCP acknowledgement number, `Some` exactly when the ACK bit is set.
    pub fn ack_number(&self) -> Option<SeqNumber> {
        self.is_ack()
            .then(|| SeqNumber(self.read_u32(tcp(tcp_field::ACK_NUM))))
    }

    /// Whether the ACK bit is set.
    pub fn is_ack(&self) -> bool {
        self.flag_byte() & ACK_BIT != 0
    }

    /// TCP control bits other than ACK.
    pub fn flags(&self) -> TcpFlags {
        TcpFlags(self.flag_byte() & !ACK_BIT)
    }

    /// TCP window field as on the wire (unscaled).
    pub fn window(&self) -> u16 {
        self.read_u16(tcp(tcp_field::WINDOW))
    }

    /// TCP checksum field.
    pub fn tcp_checksum(&self) -> u16 {
        self.read_u16(tcp(tcp_field::CHECKSUM))
    }

    /// TCP header length in bytes, from the data offset (20–60).
    pub fn tcp_header_len(&self) -> usize {
        usize::from(self.buffer.as_ref()[IPV4_HEADER_LEN + tcp_field::DATA_OFF] >> 4) * 4
    }

    /// IPv4 + TCP header length in bytes.
    pub fn header_len(&self) -> usize {
        IPV4_HEADER_LEN + self.tcp_header_len()
    }

    /// TCP payload bytes: the IPv4 total length minus both headers.
    pub fn payload_len(&self) -> u32 {
        u32::from(self.total_len()).saturating_sub(self.header_len() as u32)
    }

    /// The TCP option bytes, unparsed.
    pub fn options(&self) -> &[u8] {
        &self.buffer.as_ref()[IPV4_HEADER_LEN + tcp_field::OPTIONS..self.header_len()]
    }

    /// Whether the TCP options hold a SACK option (kind 5). Malformed options end the scan.
    pub fn has_sack(&self) -> bool {
        let mut opts = self.options();
        while let [kind, rest @ ..] = opts {
            match *kind {
                KIND_EOL => return false,
                KIND_NOP => opts = rest,
                KIND_SACK => return true,
                _ => match rest.first().map(|&l| usize::from(l)) {
                    Some(len) if len >= 2 && len <= opts.len() => opts = &opts[len..],
                    _ => return false,
                },
            }
        }
        false
    }

    /// Where the first TCP option of `kind` with exactly `len` bytes starts (offset in the whole
    /// header), walking the option list; `None` when absent or when the list is malformed
    /// before it.
    pub fn find_option(&self, kind: u8, len: usize) -> Option<usize> {
        let b = self.buffer.as_ref();
        let end = self.header_len().min(b.len());
        let mut i = IPV4_HEADER_LEN + tcp_field::OPTIONS;
        while i < end {
            match b[i] {
                KIND_EOL => return None,
                KIND_NOP => i += 1,
                k => {
                    let l = usize::from(*b.get(i + 1)?);
                    if l < 2 || i + l > end {
                        return None;
                    }
                    if k == kind && l == len {
                        return Some(i);
                    }
                    i += l;
                }
            }
        }
        None
    }

    /// The MSS option's value (SYN segments carry it).
    pub fn mss_option(&self) -> Option<u16> {
        let at = self.find_option(KIND_MSS, 4)?;
        Some(self.read_u16(at + 2..at + 4))
    }

    /// A pure ACK: ACK set, no SYN, FIN or RST, and no payload. What ACK filtering may drop or
    /// rewrite (flags such as ECE or SACK options are the caller's to check).
    pub fn is_pure_ack(&self) -> bool {
        let other = TcpFlags::SYN | TcpFlags::FIN | TcpFlags::RST;
        self.is_ack() && self.flags().0 & other.0 == 0 && self.payload_len() == 0
    }

    /// Whether both checksums are valid, taking the payload as zeros.
    pub fn verify_checksums(&self) -> bool {
        let b = self.buffer.as_ref();
        checksum::is_valid(checksum::sum(0, &b[..IPV4_HEADER_LEN]))
            && checksum::is_valid(checksum::sum(self.pseudo_header(), &b[IPV4_HEADER_LEN..]))
    }

    fn flag_byte(&self) -> u8 {
        self.buffer.as_ref()[IPV4_HEADER_LEN + tcp_field::FLAGS]
    }

    fn pseudo_header(&self) -> u64 {
        let segment_len = self.total_len().saturating_sub(IPV4_HEADER_LEN as u16);
        checksum::pseudo_header_ipv4(self.src_addr(), self.dst_addr(), IPPROTO_TCP, segment_len)
    }

    fn read_u16(&self, r: Range<usize>) -> u16 {
        let b = &self.buffer.as_ref()[r];
        u16::from_be_bytes([b[0], b[1]])
    }

    fn read_u32(&self, r: Range<usize>) -> u32 {
        let b = &self.buffer.as_ref()[r];
        u32::from_be_bytes([b[0], b[1], b[2], b[3]])
    }

    /// Where the option list ends (offset in the whole header): at its first EOL, else at the
    /// end of the TCP header; `None` when an option's length is malformed.
    fn options_end(&self) -> Option<usize> {
        let b = self.buffer.as_ref();
        let end = self.header_len().min(b.len());
        let mut i = IPV4_HEADER_LEN + tcp_field::OPTIONS;
        while i < end {
            match b[i] {
                KIND_EOL => return Some(i),
                KIND_NOP => i += 1,
                _ => {
                    let l = usize::from(*b.get(i + 1)?);
                    if l < 2 || i + l > end {
                        return None;
                    }
                    i += l;
                }
            }
        }
        Some(end)
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> TcpIpv4View<T> {
    /// The underlying buffer, writable (changes bypass the checksum updates of the setters).
    pub fn buffer_mut(&mut self) -> &mut [u8] {
        self.buffer.as_mut()
    }

    /// Rewrite the acknowledgement number field (whether or not ACK is set); the TCP checksum is
    /// updated incrementally and stays valid if it was.
    pub fn set_ack_number(&mut self, ack: SeqNumber) {
        let old = self.read_u32(tcp(tcp_field::ACK_NUM));
        self.write_u32(tcp(tcp_field::ACK_NUM), ack.0);
        let check = checksum::update_u32(self.tcp_checksum(), old, ack.0);
        self.write_u16(tcp(tcp_field::CHECKSUM), check);
    }

    /// Rewrite the sequence number; the TCP checksum stays valid if it was.
    pub fn set_seq_number(&mut self, seq: SeqNumber) {
        let old = self.read_u32(tcp(tcp_field::SEQ_NUM));
        self.write_u32(tcp(tcp_field::SEQ_NUM), seq.0);
        let check = checksum::update_u32(self.tcp_checksum(), old, seq.0);
        self.write_u16(tcp(tcp_field::CHECKSUM), check);
    }

    /// Rewrite the window field; the TCP checksum stays valid if it was.
    pub fn set_window(&mut self, window: u16) {
        let old = self.window();
        self.write_u16(tcp(tcp_field::WINDOW), window);
        let check = checksum::update_u16(self.tcp_checksum(), old, window);
        self.write_u16(tcp(tcp_field::CHECKSUM), check);
    }

    /// Overwrite header bytes from offset `at` (inside the TCP header) with `new`, updating the
    /// TCP checksum word by word (RFC 1624), so it stays valid whatever the payload holds and
    /// wherever the bytes fall (an option may start at an odd offset).
    pub fn patch_tcp_bytes(&mut self, at: usize, new: &[u8]) {
        let (start, end) = (at & !1, (at + new.len() + 1) & !1);
        let mut old = [0u8; 64];
        old[..end - start].copy_from_slice(&self.buffer.as_ref()[start..end]);
        self.buffer.as_mut()[at..at + new.len()].copy_from_slice(new);
        let mut check = self.tcp_checksum();
        for w in (start..end).step_by(2) {
            let was = u16::from_be_bytes([old[w - start], old[w - start + 1]]);
            check = checksum::update_u16(check, was, self.read_u16(w..w + 2));
        }
        self.write_u16(tcp(tcp_field::CHECKSUM), check);
    }

    /// Lower the MSS option of a SYN or SYN-ACK to `max` (what a tunnel's smaller MTU lets
    /// through, as routers' "MSS clamping" does); true when it was above and was rewritten.
    pub fn clamp_mss(&mut self, max: u16) -> bool {
        let Some(at) = self.find_option(KIND_MSS, 4) else {
            return false;
        };
        if self.read_u16(at + 2..at + 4) <= max {
            return false;
        }
        self.patch_tcp_bytes(at + 2, &max.to_be_bytes());
        true
    }

    /// Set the window-scale option's shift; true when there is one and it changed.
    pub fn set_wscale_option(&mut self, shift: u8) -> bool {
        match self.find_option(KIND_WS, 3) {
            Some(at) if self.buffer.as_ref()[at + 2] != shift => {
                self.patch_tcp_bytes(at + 2, &[shift]);
                true
            }
            _ => false,
        }
    }

    /// Turn the window-scale option into three NOPs (RFC 7323 §2.2: a peer that was offered no
    /// scaling must not see it agreed to); true when there was one.
    pub fn remove_wscale_option(&mut self) -> bool {
        let Some(at) = self.find_option(KIND_WS, 3) else {
            return false;
        };
        self.patch_tcp_bytes(at, &[KIND_NOP; 3]);
        true
    }

    /// Recompute both checksums from scratch (after edits through [`Self::buffer_mut`]).
    pub fn fill_checksums(&mut self) {
        self.write_u16(ip_field::CHECKSUM, 0);
        let ip_check = checksum::finish(checksum::sum(0, &self.buffer.as_ref()[..IPV4_HEADER_LEN]));
        self.write_u16(ip_field::CHECKSUM, ip_check);
        self.write_u16(tcp(tcp_field::CHECKSUM), 0);
        let pseudo = self.pseudo_header();
        let tcp_check = checksum::finish(checksum::sum(
            pseudo,
            &self.buffer.as_ref()[IPV4_HEADER_LEN..],
        ));
        self.write_u16(tcp(tcp_field::CHECKSUM), tcp_check);
    }

    fn write_u16(&mut self, r: Range<usize>, v: u16) {
        self.buffer.as_mut()[r].copy_from_slice(&v.to_be_bytes());
    }

    fn write_u32(&mut self, r: Range<usize>, v: u32) {
        self.buffer.as_mut()[r].copy_from_slice(&v.to_be_bytes());
    }
}

/// Why [`add_wscale_option`] left a packet as it was.
#[derive(Clone, Copy, Debug, Eq, PartialEq)]
pub enum AddOptionError {
    /// The header is not one [`TcpIpv4View`] accepts, or its option list is malformed.
    Unparsable,
    /// The header already carries a window-scale option.
    Present,
    /// The TCP header's 40 bytes of options (or the IPv4 total length) have no room left.
    NoRoom,
}

/// Add a Window Scale option (RFC 7323 §2.2) announcing `shift` to the TCP header of `pkt`.
///
/// The option goes where the option list ends (over an EOL and its padding when they leave
/// room), NOP-padded in front so the list stays a multiple of 4 bytes: `NOP, 3, 3, shift`
/// after a list that ends on a 4-byte boundary, as Linux lays it out. The header grows by 4 bytes
/// when the padding had no room; the data offset, the IPv4 total length and both checksums are
/// updated incrementally (RFC 1624), so a checksum stays valid whatever the payload holds (the
/// payload moves by a multiple of 4 bytes, so its words sum as before) and a bad one stays bad.
pub fn add_wscale_option(pkt: &mut crate::Packet, shift: u8) -> Result<(), AddOptionError> {
    let view = TcpIpv4View::new_checked(pkt.header()).map_err(|_| AddOptionError::Unparsable)?;
    let old_end = view.header_len();
    if pkt.header_len() != old_end {
        return Err(AddOptionError::Unparsable);
    }
    if view.find_option(KIND_WS, 3).is_some() {
        return Err(AddOptionError::Present);
    }
    let used = view.options_end().ok_or(AddOptionError::Unparsable)?;
    let start = IPV4_HEADER_LEN + tcp_field::OPTIONS;
    let pad = (4 - (used - start + 3) % 4) % 4;
    let new_end = old_end.max(used + pad + 3);
    if new_end - start > TCP_MAX_OPTIONS_LEN {
        return Err(AddOptionError::NoRoom);
    }
    let old_total = view.total_len();
    let total = u16::try_from(usize::from(old_total) + new_end - old_end)
        .map_err(|_| AddOptionError::NoRoom)?;
    let mut h = [0u8; MAX_IPV4_TCP_HEADER_LEN];
    h[..old_end].copy_from_slice(pkt.header());
    let doff = IPV4_HEADER_LEN + tcp_field::DATA_OFF;
    let reserved = h[doff] & 0x0f;
    // Bytes past the old header are zeros, which add nothing to a checksum: patching them in
    // updates it exactly as if the header had always been that long.
    let mut v = TcpIpv4View::new_unchecked(&mut h[..new_end]);
    let mut opt = [0u8; TCP_MAX_OPTIONS_LEN];
    let n = new_end - used;
    opt[..pad].fill(KIND_NOP);
    opt[pad..pad + 3].copy_from_slice(&[KIND_WS, 3, shift]);
    v.patch_tcp_bytes(used, &opt[..n]);
    let doff_byte = (((new_end - IPV4_HEADER_LEN) / 4) as u8) << 4 | reserved;
    v.patch_tcp_bytes(doff, &[doff_byte]);
    // The pseudo-header's TCP length and the IPv4 total length grow by the same bytes.
    let tcp_len = |t: u16| t - IPV4_HEADER_LEN as u16;
    let check = checksum::update_u16(v.tcp_checksum(), tcp_len(old_total), tcp_len(total));
    v.write_u16(tcp(tcp_field::CHECKSUM), check);
    let ip_check = v.read_u16(ip_field::CHECKSUM);
    v.write_u16(ip_field::TOTAL_LEN, total);
    v.write_u16(
        ip_field::CHECKSUM,
        checksum::update_u16(ip_check, old_total, total),
    );
    pkt.set_header(&h[..new_end]);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::{emit_ipv4_tcp, parse_ipv4_tcp, Ipv4Repr, SackBlocks, TcpRepr};

    /// A pure ACK 10.0.1.1.80 > 10.0.0.1.5001 with timestamps and one SACK block.
    fn ack_packet() -> Vec<u8> {
        let mut sack = SackBlocks::default();
        sack.push(SeqNumber(9000), SeqNumber(9500));
        let ip = Ipv4Repr {
            src: Ipv4Addr::new(10, 0, 1, 1),
            dst: Ipv4Addr::new(10, 0, 0, 1),
            protocol: IPPROTO_TCP,
            ttl: 64,
            ident: 7,
            dscp_ecn: 0,
            payload_len: 0,
        };
        let tcp = TcpRepr {
            src_port: 80,
            dst_port: 5001,
            seq: SeqNumber(2001),
            ack: Some(SeqNumber(8000)),
            window: 1000,
            sack,
            timestamp: Some((5, 6)),
            ..TcpRepr::default()
        };
        let mut buf = [0u8; 80];
        let n = emit_ipv4_tcp(&ip, &tcp, &mut buf);
        buf[..n].to_vec()
    }

    #[test]
    fn getters_read_the_emitted_fields() {
        let bytes = ack_packet();
        let view = TcpIpv4View::new_checked(&bytes[..]).expect("valid");
        assert_eq!(view.src_addr(), Ipv4Addr::new(10, 0, 1, 1));
        assert_eq!(view.dst_addr(), Ipv4Addr::new(10, 0, 0, 1));
        assert_eq!((view.src_port(), view.dst_port()), (80, 5001));
        assert_eq!(view.seq_number(), SeqNumber(2001));
        assert_eq!(view.ack_number(), Some(SeqNumber(8000)));
        assert_eq!((view.window(), view.ident(), view.ttl()), (1000, 7, 64));
        // NOP NOP TS (12) + NOP NOP SACK with one block (12).
        assert_eq!((view.tcp_header_len(), view.header_len()), (44, 64));
        assert_eq!((view.total_len(), view.payload_len()), (64, 0));
        assert_eq!(view.options().len(), 24);
        assert!(view.is_pure_ack());
        assert!(view.has_sack());
        assert!(view.verify_checksums());
    }

    #[test]
    fn setters_keep_the_checksum_equal_to_a_full_recompute() {
        let mut bytes = ack_packet();
        let mut view = TcpIpv4View::new_checked(&mut bytes[..]).expect("valid");
        view.set_ack_number(SeqNumber(0xdead_beef));
        view.set_window(0);
        view.set_seq_number(SeqNumber(u32::MAX));
        assert!(view.verify_checksums());
        let incremental = view.tcp_checksum();
        view.fill_checksums();
        assert_eq!(view.tcp_checksum(), incremental);
        let (_, tcp) = parse_ipv4_tcp(&bytes, 0).expect("still valid");
        assert_eq!(tcp.ack, Some(SeqNumber(0xdead_beef)));
        assert_eq!((tcp.window, tcp.seq), (0, SeqNumber(u32::MAX)));
    }

    #[test]
    fn setters_do_not_repair_a_bad_checksum() {
        let mut bytes = ack_packet();
        bytes[36] ^= 0xff;
        let mut view = TcpIpv4View::new_checked(&mut bytes[..]).expect("lengths are fine");
        assert!(!view.verify_checksums());
        view.set_ack_number(SeqNumber(1));
        assert!(!view.verify_checksums());
    }

    #[test]
    fn pure_ack_excludes_data_and_control_segments() {
        let mut bytes = ack_packet();
        let len = bytes.len() as u16;
        let mut view = TcpIpv4View::new_checked(&mut bytes[..]).expect("valid");
        view.buffer_mut()[20 + 13] |= TcpFlags::FIN.0;
        assert!(!view.is_pure_ack());
        view.buffer_mut()[20 + 13] &= !TcpFlags::FIN.0;
        view.buffer_mut()[2..4].copy_from_slice(&(len + 1).to_be_bytes());
        assert_eq!(view.payload_len(), 1);
        assert!(!view.is_pure_ack());
        view.buffer_mut()[2..4].copy_from_slice(&len.to_be_bytes());
        view.buffer_mut()[20 + 13] &= !ACK_BIT;
        assert!(!view.is_pure_ack());
        assert_eq!(view.ack_number(), None);
    }

    #[test]
    fn has_sack_walks_option_lengths() {
        let mut bytes = ack_packet();
        let mut view = TcpIpv4View::new_checked(&mut bytes[..]).expect("valid");
        // Turn the SACK option (after NOP NOP TS NOP NOP) into an unknown kind of the same length.
        assert_eq!(view.buffer_mut()[40 + 14], KIND_SACK);
        view.buffer_mut()[40 + 14] = 99;
        assert!(!view.has_sack());
        // EOL before it hides it.
        view.buffer_mut()[40 + 14] = KIND_SACK;
        view.buffer_mut()[40] = KIND_EOL;
        assert!(!view.has_sack());
    }

    #[test]
    fn new_checked_rejects_what_it_cannot_index() {
        let bytes = ack_packet();
        let check = |b: &[u8]| TcpIpv4View::new_checked(b).map(|_| ());
        for k in 0..bytes.len() {
            assert!(check(&bytes[..k]).is_err(), "cut at {k}");
        }
        let mut b = bytes.clone();
        b[0] = 0x46;
        assert_eq!(check(&b), Err(WireError::Unsupported("IPv4 options")));
        let mut b = bytes.clone();
        b[9] = 17;
        assert_eq!(check(&b), Err(WireError::Unsupported("not TCP")));
        let mut b = bytes.clone();
        b[32] = 0x40;
        assert_eq!(
            check(&b),
            Err(WireError::Unsupported("TCP data offset below 5"))
        );
        let mut b = bytes.clone();
        b[2..4].copy_from_slice(&63u16.to_be_bytes());
        assert!(matches!(check(&b), Err(WireError::Unsupported(_))));
        let mut b = bytes;
        b[6] = 0x20;
        assert_eq!(check(&b), Err(WireError::Unsupported("IPv4 fragment")));
    }

    /// A SYN 10.0.0.1.40000 > 10.0.1.1.5001 with `nops` NOPs before an MSS option of `mss`
    /// (so the value can sit at an odd offset), a window-scale option, padding, and `payload`
    /// (a SYN with data), checksums computed over all of it.
    fn syn_with_options(nops: usize, mss: u16, payload: &[u8]) -> (Vec<u8>, Vec<u8>) {
        let mut opts = vec![1u8; nops];
        opts.extend_from_slice(&[2, 4]);
        opts.extend_from_slice(&mss.to_be_bytes());
        opts.extend_from_slice(&[3, 3, 7]);
        syn_with_raw_options(opts, payload)
    }

    /// The SYN of [`syn_with_options`] with the option bytes `opts` (zero-padded to 4 bytes).
    fn syn_with_raw_options(mut opts: Vec<u8>, payload: &[u8]) -> (Vec<u8>, Vec<u8>) {
        while !opts.len().is_multiple_of(4) {
            opts.push(0);
        }
        let tcp_len = 20 + opts.len();
        let total = (20 + tcp_len + payload.len()) as u16;
        let mut h = vec![
            0x45, 0, 0, 0, 0, 1, 0x40, 0, 64, 6, 0, 0, 10, 0, 0, 1, 10, 0, 1, 1,
        ];
        h[2..4].copy_from_slice(&total.to_be_bytes());
        h.extend_from_slice(&40000u16.to_be_bytes());
        h.extend_from_slice(&5001u16.to_be_bytes());
        h.extend_from_slice(&[
            0,
            0,
            0,
            9,
            0,
            0,
            0,
            0,
            (tcp_len as u8 / 4) << 4,
            0x02,
            0xff,
            0xff,
        ]);
        h.extend_from_slice(&[0, 0, 0, 0]);
        h.extend_from_slice(&opts);
        let ip = checksum::finish(checksum::sum(0, &h[..20]));
        h[10..12].copy_from_slice(&ip.to_be_bytes());
        let check = tcp_checksum_over(&h, payload);
        h[36..38].copy_from_slice(&check.to_be_bytes());
        (h, payload.to_vec())
    }

    /// The TCP checksum a receiver computes over header and payload (field taken as zero).
    fn tcp_checksum_over(h: &[u8], payload: &[u8]) -> u16 {
        let mut t = h[20..].to_vec();
        t[16..18].fill(0);
        t.extend_from_slice(payload);
        let pseudo = checksum::pseudo_header_ipv4(
            Ipv4Addr::new(h[12], h[13], h[14], h[15]),
            Ipv4Addr::new(h[16], h[17], h[18], h[19]),
            IPPROTO_TCP,
            t.len() as u16,
        );
        let mut acc = pseudo;
        acc = checksum::sum(acc, &t);
        checksum::finish(acc)
    }

    #[test]
    fn clamp_mss_rewrites_the_option_at_an_odd_offset_and_keeps_the_checksum() {
        let (mut h, p) = syn_with_options(1, 1460, b"hello");
        let mut v = TcpIpv4View::new_checked(&mut h[..]).expect("valid");
        assert_eq!(v.mss_option(), Some(1460));
        assert!(v.clamp_mss(1412));
        assert!(!v.clamp_mss(1412), "already at the clamp");
        assert!(!v.clamp_mss(1500), "never raised");
        assert_eq!(v.mss_option(), Some(1412));
        // NOP at 40, MSS kind at 41: the value is bytes 43..45, straddling two words.
        assert_eq!(&h[41..45], &[2, 4, 0x05, 0x84]);
        assert_eq!(
            u16::from_be_bytes([h[36], h[37]]),
            tcp_checksum_over(&h, &p)
        );
    }

    proptest::proptest! {
        /// Over any option alignment, MSS, clamp and payload: the MSS becomes min(mss, max),
        /// only those two bytes change, and the checksum equals one computed from scratch.
        #[test]
        fn clamp_mss_keeps_the_checksum_valid(
            nops in 0usize..4,
            mss in 0u16..,
            max in 0u16..,
            payload in proptest::collection::vec(proptest::num::u8::ANY, 0..40),
            shift in 0u8..15,
        ) {
            let (mut h, p) = syn_with_options(nops, mss, &payload);
            let before = h.clone();
            let mut v = TcpIpv4View::new_checked(&mut h[..]).expect("valid");
            proptest::prop_assert_eq!(v.clamp_mss(max), mss > max);
            proptest::prop_assert_eq!(v.mss_option(), Some(mss.min(max)));
            proptest::prop_assert_eq!(v.set_wscale_option(shift), shift != 7);
            let changed: Vec<usize> = (0..h.len()).filter(|&i| h[i] != before[i]).collect();
            proptest::prop_assert!(changed.iter().all(|&i| (36..38).contains(&i)
                || (40 + nops + 2..40 + nops + 4).contains(&i)
                || i == 40 + nops + 6), "{changed:?}");
            proptest::prop_assert_eq!(u16::from_be_bytes([h[36], h[37]]), tcp_checksum_over(&h, &p));
        }
    }

    /// A packet of header `h` and real payload `p`.
    fn pkt_of(h: &[u8], p: &[u8]) -> crate::Packet {
        crate::Packet::try_with_payload(h, p).expect("fits")
    }

    /// Both checksums of `h` + payload `p` are valid and the IPv4 total length covers them.
    fn valid(h: &[u8], p: &[u8]) -> bool {
        let total = u16::from_be_bytes([h[2], h[3]]);
        checksum::is_valid(checksum::sum(0, &h[..20]))
            && u16::from_be_bytes([h[36], h[37]]) == tcp_checksum_over(h, p)
            && usize::from(total) == h.len() + p.len()
    }

    #[test]
    fn add_wscale_option_gives_the_syn_ack_linux_would_have_sent_with_scaling() {
        // A SYN-ACK of a receiver without window scaling: MSS, SACK-permitted, timestamps.
        let tcp = TcpRepr {
            src_port: 5001,
            dst_port: 40000,
            seq: SeqNumber(50_000),
            ack: Some(SeqNumber(1_001)),
            flags: TcpFlags::SYN,
            window: 65_535,
            mss: Some(1460),
            sack_permitted: true,
            timestamp: Some((0x0102_0304, 0x0a0b_0c0d)),
            ..TcpRepr::default()
        };
        let ip = Ipv4Repr {
            src: Ipv4Addr::new(10, 0, 2, 1),
            dst: Ipv4Addr::new(10, 0, 0, 1),
            protocol: 6,
            ttl: 64,
            ident: 0,
            dscp_ecn: 0,
            payload_len: 0,
        };
        let mut buf = [0u8; 80];
        let n = crate::wire::emit_ipv4_tcp(&ip, &tcp, &mut buf);
        let mut pkt = crate::Packet::new(&buf[..n], 0);
        assert_eq!(n, 56);
        assert_eq!(add_wscale_option(&mut pkt, 8), Ok(()));
        // Exactly the bytes of the same SYN-ACK emitted with `wscale 8`: Linux puts the option
        // after the timestamps, which is where the list ended.
        let with = TcpRepr {
            window_scale: Some(8),
            ..tcp
        };
        let n = crate::wire::emit_ipv4_tcp(&ip, &with, &mut buf);
        assert_eq!(pkt.header(), &buf[..n]);
        let h = pkt.header();
        assert_eq!(h.len(), 60);
        assert_eq!(&h[2..4], &[0, 60], "IPv4 total length + 4");
        assert_eq!(h[32], 10 << 4, "data offset 40 bytes");
        assert_eq!(
            &h[40..60],
            &[
                2, 4, 0x05, 0xb4, // MSS 1460
                4, 2, 8, 10, 1, 2, 3, 4, 10, 11, 12, 13, // SACK-permitted, timestamps
                1, 3, 3, 8, // NOP, window scale 8
            ]
        );
        assert!(valid(h, &[]));
        assert_eq!(add_wscale_option(&mut pkt, 8), Err(AddOptionError::Present));
    }

    #[test]
    fn add_wscale_option_fills_eol_padding_at_an_odd_offset_and_keeps_the_payload_summed() {
        // NOP, MSS, EOL and padding: the option list ends at byte 5 of 8.
        let (h, p) = syn_with_raw_options(vec![1, 2, 4, 5, 180, 0], b"hello");
        let mut pkt = pkt_of(&h, &p);
        assert_eq!(add_wscale_option(&mut pkt, 14), Ok(()));
        let n = pkt.header();
        assert_eq!(n.len(), h.len(), "the padding had room: no growth");
        assert_eq!(&n[40..48], &[1, 2, 4, 5, 180, 3, 3, 14]);
        assert!(valid(n, &p));
        // An EOL right after MSS (byte 4): a NOP aligns the option to the end of the list.
        let (h, p) = syn_with_raw_options(vec![2, 4, 5, 180, 0], b"hi!");
        let mut pkt = pkt_of(&h, &p);
        assert_eq!(add_wscale_option(&mut pkt, 0), Ok(()));
        assert_eq!(&pkt.header()[40..48], &[2, 4, 5, 180, 1, 3, 3, 0]);
        assert!(valid(pkt.header(), &p));
    }

    #[test]
    fn add_wscale_option_refuses_a_full_header_and_uses_the_last_three_bytes() {
        // 40 bytes of options in use (MSS and 36 NOPs): no room, nothing changed.
        let mut opts = vec![2, 4, 5, 180];
        opts.extend([1u8; 36]);
        let (h, p) = syn_with_raw_options(opts, b"");
        let mut pkt = pkt_of(&h, &p);
        assert_eq!(add_wscale_option(&mut pkt, 8), Err(AddOptionError::NoRoom));
        assert_eq!(pkt.header(), &h[..]);
        // 37 in use and an EOL: the option takes the last three bytes of the 40.
        let mut opts = vec![2, 4, 5, 180];
        opts.extend([1u8; 33]);
        opts.extend([0, 0, 0]);
        let (h, p) = syn_with_raw_options(opts, b"x");
        let mut pkt = pkt_of(&h, &p);
        assert_eq!(add_wscale_option(&mut pkt, 8), Ok(()));
        assert_eq!(pkt.header().len(), 80);
        assert_eq!(&pkt.header()[77..80], &[3, 3, 8]);
        assert!(valid(pkt.header(), &p));
        // Malformed lists (a length of 1; a length past the header's end) are not touched.
        for opts in [vec![2, 1, 0, 0], vec![2, 8, 5, 180]] {
            let (h, p) = syn_with_raw_options(opts, b"");
            let mut pkt = pkt_of(&h, &p);
            let got = add_wscale_option(&mut pkt, 8);
            assert_eq!(got, Err(AddOptionError::Unparsable));
            assert_eq!(pkt.header(), &h[..]);
        }
    }

    #[test]
    fn remove_wscale_option_leaves_nops_and_a_valid_checksum() {
        let (mut h, p) = syn_with_options(1, 1460, b"data");
        let mut v = TcpIpv4View::new_checked(&mut h[..]).expect("valid");
        assert!(v.remove_wscale_option());
        assert!(!v.remove_wscale_option(), "gone");
        assert_eq!(&h[40..48], &[1, 2, 4, 5, 180, 1, 1, 1]);
        assert!(valid(&h, &p));
    }

    /// One TCP option as bytes: NOP, MSS, SACK-permitted, timestamps or an unknown kind.
    fn option() -> impl proptest::strategy::Strategy<Value = Vec<u8>> {
        use proptest::prelude::*;
        prop_oneof![
            Just(vec![1u8]),
            any::<u16>().prop_map(|m| vec![2, 4, (m >> 8) as u8, m as u8]),
            Just(vec![4u8, 2]),
            any::<[u8; 8]>().prop_map(|t| [&[8u8, 10][..], &t[..]].concat()),
            (30u8..200, proptest::collection::vec(any::<u8>(), 0..10)).prop_map(|(k, d)| [
                &[k, d.len() as u8 + 2][..],
                &d[..]
            ]
            .concat()),
        ]
    }

    proptest::proptest! {
        /// Over any well-formed option list (with or without an EOL), payload and shift: either
        /// the option is added — checksums valid against a full recompute, every other option
        /// kept, the list a multiple of 4 within 40 bytes — or there was no room and nothing
        /// changed.
        #[test]
        fn add_wscale_option_keeps_every_packet_valid(
            opts in proptest::collection::vec(option(), 0..8),
            eol in proptest::bool::ANY,
            payload in proptest::collection::vec(proptest::num::u8::ANY, 0..30),
            shift in 0u8..15,
        ) {
            let mut raw: Vec<u8> = opts.concat();
            if eol {
                raw.push(0);
            }
            proptest::prop_assume!(raw.len() <= 40);
            let used = if eol { raw.len() - 1 } else { raw.len() };
            let (h, p) = syn_with_raw_options(raw.clone(), &payload);
            // The parser sums a payload as zeros: compare options on a twin with zero payload.
            let (h0, p0) = syn_with_raw_options(raw, &vec![0; payload.len()]);
            let before = parse_ipv4_tcp(&h0, p0.len() as u32).expect("valid").1;
            let mut twin = pkt_of(&h0, &p0);
            let mut pkt = pkt_of(&h, &p);
            let fits = used + (4 - (used + 3) % 4) % 4 + 3 <= 40;
            match add_wscale_option(&mut pkt, shift) {
                Ok(()) => {
                    proptest::prop_assert!(fits);
                    let n = pkt.header();
                    proptest::prop_assert!(valid(n, &p));
                    proptest::prop_assert!(n.len() == h.len() || n.len() == h.len() + 4);
                    proptest::prop_assert!(n.len() <= 80);
                    proptest::prop_assert_eq!(add_wscale_option(&mut twin, shift), Ok(()));
                    let after = parse_ipv4_tcp(twin.header(), p.len() as u32).expect("valid").1;
                    proptest::prop_assert_eq!(after.window_scale, Some(shift));
                    proptest::prop_assert_eq!(TcpRepr { window_scale: None, ..after }, before);
                    // Addresses, ports, numbers and the options before it are untouched.
                    proptest::prop_assert_eq!(&n[12..32], &h[12..32]);
                    proptest::prop_assert_eq!(&n[40..40 + used], &h[40..40 + used]);
                }
                Err(e) => {
                    proptest::prop_assert_eq!(e, AddOptionError::NoRoom);
                    proptest::prop_assert!(!fits);
                    proptest::prop_assert_eq!(pkt.header(), &h[..]);
                }
            }
        }
    }
}
