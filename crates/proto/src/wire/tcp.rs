//! TCP header (RFC 9293) with the options satpep models: MSS, window scale (RFC 7323),
//! SACK-permitted and SACK blocks (RFC 2018), timestamps (RFC 7323).
//!
//! Read before editing: RFC 9293 §3.1 (header format) and §3.2 (options: unknown kinds are skipped
//! by their length), RFC 7323 §2.2 and §3.2 (window scale and timestamps), RFC 2018 §2–3 (SACK), and
//! Linux `tcp_options_write()` in `net/ipv4/tcp_output.c`, whose layout [`TcpRepr`] reproduces so
//! that simulated captures look like real ones.
//!
//! Emission is field-driven, in Linux's order: MSS, then timestamps (sharing their first word with
//! SACK-permitted when both are present: `04 02 08 0a`), SACK-permitted alone as `01 01 04 02`,
//! window scale as `01 03 03 ws`, SACK blocks as `01 01 05 len`. Every option is padded with NOPs
//! to a 4-byte boundary, so no trailing padding is ever needed. MSS, window scale and
//! SACK-permitted are written on SYN segments only (RFC 9293 §3.7.1, RFC 7323 §2.2, RFC 2018 §2)
//! and ignored when they arrive on any other segment. SACK blocks that do not fit in the 40
//! option bytes are dropped, newest kept (three with timestamps, as in Linux).
//!
//! Simplifications: options satpep does not model (MD5, TFO, MPTCP, experimental) are skipped on
//! parse and never emitted; the NS bit and the reserved bits are ignored; a repeated option
//! overrides an earlier one; a window scale above 14 is passed through as received (RFC 7323
//! §2.3 has the receiver clamp it to 14, which is the TCP model's job).

use std::fmt;

use etherparse::{TcpOptionElement, TcpOptionReadError, TcpOptionsIterator};

use super::{SeqNumber, WireError};

/// Byte layout of the TCP header (RFC 9293 §3.1), as offsets into the header.
pub(super) mod field {
    use std::ops::Range;

    pub const SRC_PORT: Range<usize> = 0..2;
    pub const DST_PORT: Range<usize> = 2..4;
    pub const SEQ_NUM: Range<usize> = 4..8;
    pub const ACK_NUM: Range<usize> = 8..12;
    /// Data offset (upper 4 bits, in 32-bit words), reserved bits, NS.
    pub const DATA_OFF: usize = 12;
    pub const FLAGS: usize = 13;
    pub const WINDOW: Range<usize> = 14..16;
    pub const CHECKSUM: Range<usize> = 16..18;
    pub const URGENT: Range<usize> = 18..20;
    pub const OPTIONS: usize = 20;
}

/// Length of the TCP header without options.
pub const TCP_HEADER_LEN: usize = 20;
/// Most option bytes a TCP header can carry (data offset 15 × 4 − 20).
pub const TCP_MAX_OPTIONS_LEN: usize = 40;
/// The ACK control bit, which [`TcpFlags`] leaves out (it is `TcpRepr::ack.is_some()`).
pub(super) const ACK_BIT: u8 = 0x10;

// Option kinds and lengths (IANA "TCP Option Kind Numbers").
pub(super) const KIND_EOL: u8 = 0;
pub(super) const KIND_NOP: u8 = 1;
pub(super) const KIND_MSS: u8 = 2;
pub(super) const KIND_WS: u8 = 3;
pub(super) const KIND_SACK_PERM: u8 = 4;
pub(super) const KIND_SACK: u8 = 5;
pub(super) const KIND_TS: u8 = 8;
const LEN_MSS: u8 = 4;
const LEN_WS: u8 = 3;
const LEN_SACK_PERM: u8 = 2;
const LEN_TS: u8 = 10;

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
///
/// Equality and `Debug` look at the blocks present only, not at stale slots past `len()`.
#[derive(Clone, Copy, Default)]
pub struct SackBlocks {
    len: u8,
    blocks: [(SeqNumber, SeqNumber); 4],
}

impl SackBlocks {
    /// No blocks (usable in `const` templates).
    pub const EMPTY: Self = Self {
        len: 0,
        blocks: [(SeqNumber(0), SeqNumber(0)); 4],
    };

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

impl PartialEq for SackBlocks {
    fn eq(&self, other: &Self) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl Eq for SackBlocks {}

impl fmt::Debug for SackBlocks {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.as_slice()).finish()
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

impl TcpRepr {
    /// Length of the header [`emit_ipv4_tcp`](super::emit_ipv4_tcp) writes for this repr: 20
    /// bytes plus options (a multiple of 4, at most 60).
    pub fn header_len(&self) -> usize {
        TCP_HEADER_LEN + OptionLayout::of(self).len()
    }

    /// How many of `self.sack` blocks fit beside the other options (0–4); emission drops the rest.
    pub fn sack_capacity(&self) -> usize {
        let without_sack = Self {
            sack: SackBlocks::EMPTY,
            ..*self
        };
        OptionLayout::of(&without_sack).sack_room()
    }

    /// Length of sequence space this segment occupies: payload plus one for SYN and one for FIN
    /// (RFC 9293 §3.4, SEG.LEN).
    pub fn segment_len(&self) -> u32 {
        self.payload_len
            + u32::from(self.flags.contains(TcpFlags::SYN))
            + u32::from(self.flags.contains(TcpFlags::FIN))
    }

    /// Write the header with a zero checksum into `buf`; returns its length.
    ///
    /// Panics if `buf` is shorter than [`Self::header_len`].
    pub(super) fn emit_header(&self, buf: &mut [u8]) -> usize {
        let layout = OptionLayout::of(self);
        let len = TCP_HEADER_LEN + layout.len();
        let buf = &mut buf[..len];
        buf[field::SRC_PORT].copy_from_slice(&self.src_port.to_be_bytes());
        buf[field::DST_PORT].copy_from_slice(&self.dst_port.to_be_bytes());
        buf[field::SEQ_NUM].copy_from_slice(&self.seq.0.to_be_bytes());
        let ack = self.ack.map_or(0, |a| a.0);
        buf[field::ACK_NUM].copy_from_slice(&ack.to_be_bytes());
        buf[field::DATA_OFF] = ((len / 4) as u8) << 4;
        let ack_bit = if self.ack.is_some() { ACK_BIT } else { 0 };
        buf[field::FLAGS] = (self.flags.0 & !ACK_BIT) | ack_bit;
        buf[field::WINDOW].copy_from_slice(&self.window.to_be_bytes());
        buf[field::CHECKSUM].fill(0);
        buf[field::URGENT].copy_from_slice(&self.urgent.to_be_bytes());
        layout.emit(&mut buf[field::OPTIONS..]);
        len
    }

    /// Fill the option fields from the option bytes of a header whose fixed part is already in
    /// `self` (the SYN flag decides which options count).
    pub(super) fn parse_options(&mut self, mut opts: &[u8]) -> Result<(), WireError> {
        let syn = self.flags.contains(TcpFlags::SYN);
        loop {
            // EOL and NOP are handled here: half the options Linux sends are NOPs, and a call into
            // the iterator costs more than the byte test.
            match opts.first() {
                None | Some(&KIND_EOL) => return Ok(()),
                Some(&KIND_NOP) => {
                    opts = &opts[1..];
                    continue;
                }
                Some(_) => {}
            }
            let mut iter = TcpOptionsIterator::from_slice(opts);
            let option = match iter.next() {
                None => return Ok(()),
                Some(Ok(option)) => option,
                Some(Err(TcpOptionReadError::UnknownId(_))) => {
                    // RFC 9293 §3.2: an option we do not know is skipped by its length byte.
                    let len = opts.get(1).map_or(0, |&l| usize::from(l));
                    if len < 2 || len > opts.len() {
                        return Err(WireError::BadOption("unknown option with bad length"));
                    }
                    opts = &opts[len..];
                    continue;
                }
                Some(Err(TcpOptionReadError::UnexpectedEndOfSlice { .. })) => {
                    return Err(WireError::BadOption("option runs past the header"));
                }
                Some(Err(TcpOptionReadError::UnexpectedSize { .. })) => {
                    return Err(WireError::BadOption(
                        "option length does not match its kind",
                    ));
                }
            };
            opts = iter.rest();
            match option {
                TcpOptionElement::Noop => {}
                // RFC 9293 §3.7.1, RFC 7323 §2.2, RFC 2018 §2: these three count on SYNs only.
                TcpOptionElement::MaximumSegmentSize(mss) if syn => self.mss = Some(mss),
                TcpOptionElement::WindowScale(shift) if syn => self.window_scale = Some(shift),
                TcpOptionElement::SelectiveAcknowledgementPermitted if syn => {
                    self.sack_permitted = true;
                }
                TcpOptionElement::MaximumSegmentSize(_)
                | TcpOptionElement::WindowScale(_)
                | TcpOptionElement::SelectiveAcknowledgementPermitted => {}
                TcpOptionElement::SelectiveAcknowledgement(first, rest) => {
                    self.sack = SackBlocks::default();
                    for (left, right) in std::iter::once(first).chain(rest.into_iter().flatten()) {
                        self.sack.push(SeqNumber(left), SeqNumber(right));
                    }
                }
                TcpOptionElement::Timestamp(val, ecr) => self.timestamp = Some((val, ecr)),
            }
        }
    }
}

/// Which options a header carries and in what words, following Linux `tcp_options_write()`.
#[derive(Clone, Copy)]
struct OptionLayout<'a> {
    mss: Option<u16>,
    sack_permitted: bool,
    timestamp: Option<(u32, u32)>,
    window_scale: Option<u8>,
    sack: &'a [(SeqNumber, SeqNumber)],
}

impl<'a> OptionLayout<'a> {
    fn of(tcp: &'a TcpRepr) -> Self {
        let syn = tcp.flags.contains(TcpFlags::SYN);
        let mut layout = Self {
            mss: tcp.mss.filter(|_| syn),
            sack_permitted: tcp.sack_permitted && syn,
            timestamp: tcp.timestamp,
            window_scale: tcp.window_scale.filter(|_| syn),
            sack: &[],
        };
        let n = tcp.sack.len().min(layout.sack_room());
        layout.sack = &tcp.sack.as_slice()[..n];
        layout
    }

    /// Bytes of options before the SACK blocks.
    fn fixed_len(&self) -> usize {
        let mss = if self.mss.is_some() { 4 } else { 0 };
        // SACK-permitted shares the timestamp's NOP NOP word when both are present.
        let ts = if self.timestamp.is_some() { 12 } else { 0 };
        let sack_perm = if self.sack_permitted && self.timestamp.is_none() {
            4
        } else {
            0
        };
        let ws = if self.window_scale.is_some() { 4 } else { 0 };
        mss + ts + sack_perm + ws
    }

    /// SACK blocks that fit after the fixed options: NOP NOP kind len, then 8 bytes each.
    fn sack_room(&self) -> usize {
        (TCP_MAX_OPTIONS_LEN - self.fixed_len()).saturating_sub(4) / 8
    }

    fn len(&self) -> usize {
        let sack = if self.sack.is_empty() {
            0
        } else {
            4 + 8 * self.sack.len()
        };
        self.fixed_len() + sack
    }

    /// Write the options into `buf` (exactly [`Self::len`] bytes long).
    fn emit(&self, buf: &mut [u8]) {
        let mut at = 0;
        let mut put = |bytes: &[u8]| {
            buf[at..at + bytes.len()].copy_from_slice(bytes);
            at += bytes.len();
        };
        if let Some(mss) = self.mss {
            let [hi, lo] = mss.to_be_bytes();
            put(&[KIND_MSS, LEN_MSS, hi, lo]);
        }
        if let Some((val, ecr)) = self.timestamp {
            if self.sack_permitted {
                put(&[KIND_SACK_PERM, LEN_SACK_PERM, KIND_TS, LEN_TS]);
            } else {
                put(&[KIND_NOP, KIND_NOP, KIND_TS, LEN_TS]);
            }
            put(&val.to_be_bytes());
            put(&ecr.to_be_bytes());
        } else if self.sack_permitted {
            put(&[KIND_NOP, KIND_NOP, KIND_SACK_PERM, LEN_SACK_PERM]);
        }
        if let Some(shift) = self.window_scale {
            put(&[KIND_NOP, KIND_WS, LEN_WS, shift]);
        }
        if !self.sack.is_empty() {
            put(&[KIND_NOP, KIND_NOP, KIND_SACK, 2 + 8 * self.sack.len() as u8]);
            for (left, right) in self.sack {
                put(&left.0.to_be_bytes());
                put(&right.0.to_be_bytes());
            }
        }
    }

    /// The options as tcpdump lists them, in the order [`Self::emit`] writes them.
    fn fmt_tcpdump(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        let mut item = |f: &mut fmt::Formatter<'_>, args: fmt::Arguments<'_>| {
            let sep = if first { "" } else { "," };
            first = false;
            write!(f, "{sep}{args}")
        };
        f.write_str("options [")?;
        if let Some(mss) = self.mss {
            item(f, format_args!("mss {mss}"))?;
        }
        if let Some((val, ecr)) = self.timestamp {
            if self.sack_permitted {
                item(f, format_args!("sackOK"))?;
            } else {
                item(f, format_args!("nop"))?;
                item(f, format_args!("nop"))?;
            }
            item(f, format_args!("TS val {val} ecr {ecr}"))?;
        } else if self.sack_permitted {
            item(f, format_args!("nop"))?;
            item(f, format_args!("nop"))?;
            item(f, format_args!("sackOK"))?;
        }
        if let Some(shift) = self.window_scale {
            item(f, format_args!("nop"))?;
            item(f, format_args!("wscale {shift}"))?;
        }
        if !self.sack.is_empty() {
            item(f, format_args!("nop"))?;
            item(f, format_args!("nop"))?;
            write!(f, ",sack {}", self.sack.len())?;
            for (left, right) in self.sack {
                write!(f, " {{{left}:{right}}}")?;
            }
        }
        f.write_str("]")
    }
}

impl TcpRepr {
    /// The part of the tcpdump line after the ports: `Flags [S.], seq 1000, ack 2000, …`.
    pub(super) fn fmt_after_ports(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // tcpdump `tcp_flag_values` order: F S R P . U E W.
        f.write_str("Flags [")?;
        let names = [
            (TcpFlags::FIN, 'F'),
            (TcpFlags::SYN, 'S'),
            (TcpFlags::RST, 'R'),
            (TcpFlags::PSH, 'P'),
        ];
        for (flag, c) in names {
            if self.flags.contains(flag) {
                write!(f, "{c}")?;
            }
        }
        if self.ack.is_some() {
            f.write_str(".")?;
        }
        for (flag, c) in [
            (TcpFlags::URG, 'U'),
            (TcpFlags::ECE, 'E'),
            (TcpFlags::CWR, 'W'),
        ] {
            if self.flags.contains(flag) {
                write!(f, "{c}")?;
            }
        }
        if self.flags.0 & !ACK_BIT == 0 && self.ack.is_none() {
            f.write_str("none")?;
        }
        f.write_str("]")?;
        if self.payload_len > 0 {
            write!(f, ", seq {}:{}", self.seq, self.seq + self.payload_len)?;
        } else {
            write!(f, ", seq {}", self.seq)?;
        }
        if let Some(ack) = self.ack {
            write!(f, ", ack {ack}")?;
        }
        write!(f, ", win {}", self.window)?;
        if self.flags.contains(TcpFlags::URG) {
            write!(f, ", urg {}", self.urgent)?;
        }
        let layout = OptionLayout::of(self);
        if layout.len() > 0 {
            f.write_str(", ")?;
            layout.fmt_tcpdump(f)?;
        }
        write!(f, ", length {}", self.payload_len)
    }
}

impl fmt::Display for TcpRepr {
    /// tcpdump-like, without addresses: `5001 > 80: Flags [S.], seq 1000, …, length 0`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} > {}: ", self.src_port, self.dst_port)?;
        self.fmt_after_ports(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sack_equality_ignores_stale_slots() {
        let mut a = SackBlocks::default();
        a.push(SeqNumber(1), SeqNumber(2));
        a.push(SeqNumber(3), SeqNumber(4));
        a.truncate(1);
        let mut b = SackBlocks::default();
        b.push(SeqNumber(1), SeqNumber(2));
        assert_eq!(a, b);
        assert_eq!(format!("{a:?}"), "[(1, 2)]");
        b.push(SeqNumber(3), SeqNumber(5));
        assert_ne!(a, b);
        assert_eq!(SackBlocks::EMPTY, SackBlocks::default());
    }

    #[test]
    fn segment_len_counts_syn_and_fin() {
        let syn = TcpRepr {
            flags: TcpFlags::SYN,
            ..TcpRepr::default()
        };
        assert_eq!(syn.segment_len(), 1);
        let fin = TcpRepr {
            flags: TcpFlags::FIN | TcpFlags::PSH,
            payload_len: 100,
            ..syn
        };
        assert_eq!(fin.segment_len(), 101);
    }
}
