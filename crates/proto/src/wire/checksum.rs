//! The Internet checksum (RFC 1071) and its incremental update (RFC 1624).
//!
//! Read before editing: RFC 1071 §1–2 (one's complement sum of 16-bit words, byte-order
//! independence, deferred carries), RFC 1624 §3 (eqn. 3: `HC' = ~(~HC + ~m + m')`), RFC 9293 §3.1
//! (the TCP pseudo-header).
//!
//! Sums are carried in a `u64` and folded only at the end (RFC 1071 §2(C), "deferred carries"), so
//! a caller can add several pieces — pseudo-header, header bytes — without folding in between.
//! Payload bytes that satpep does not materialise are zeros and add nothing to a sum; only their
//! count enters, through the pseudo-header length.

use std::net::Ipv4Addr;

/// One's complement sum of `data` as big-endian 16-bit words (an odd last byte is padded with a
/// zero byte, RFC 1071 §4.1), added to `acc`. The result is unfolded: pass it on or [`fold`] it.
#[inline]
pub fn sum(mut acc: u64, data: &[u8]) -> u64 {
    let mut words = data.chunks_exact(4);
    for w in &mut words {
        acc += u64::from(u32::from_be_bytes([w[0], w[1], w[2], w[3]]));
    }
    let rest = words.remainder();
    let mut pairs = rest.chunks_exact(2);
    for p in &mut pairs {
        acc += u64::from(u16::from_be_bytes([p[0], p[1]]));
    }
    if let [last] = pairs.remainder() {
        acc += u64::from(*last) << 8;
    }
    acc
}

/// [`sum`] of `data` that follows an odd number of bytes already summed (a payload after a header
/// of odd length): the bytes pair up the other way round, which swaps the bytes of the sum
/// (RFC 1071 §2(B), byte-order independence).
#[inline]
pub fn sum_at_odd(acc: u64, data: &[u8]) -> u64 {
    acc + u64::from(fold(sum(0, data)).swap_bytes())
}

/// New checksum field after bytes whose sum is `added` were appended to the covered data
/// (payload bytes joining a header whose checksum took them as zeros).
#[inline]
pub fn add(check: u16, added: u64) -> u16 {
    !fold(u64::from(!check) + added)
}

/// Fold an unfolded sum to 16 bits with end-around carries.
#[inline]
pub fn fold(mut acc: u64) -> u16 {
    while acc > 0xffff {
        acc = (acc & 0xffff) + (acc >> 16);
    }
    acc as u16
}

/// The checksum field value for an unfolded sum taken with the checksum field zeroed.
#[inline]
pub fn finish(acc: u64) -> u16 {
    !fold(acc)
}

/// Whether data whose unfolded sum (checksum field included) is `acc` carries a valid checksum:
/// the folded sum is all ones (negative zero).
#[inline]
pub fn is_valid(acc: u64) -> bool {
    fold(acc) == 0xffff
}

/// Unfolded sum of the IPv4 pseudo-header (RFC 9293 §3.1): source, destination, zero, protocol,
/// and the length of the transport segment (header + payload) in bytes.
#[inline]
pub fn pseudo_header_ipv4(src: Ipv4Addr, dst: Ipv4Addr, protocol: u8, segment_len: u16) -> u64 {
    let acc = sum(0, &src.octets());
    let acc = sum(acc, &dst.octets());
    acc + u64::from(protocol) + u64::from(segment_len)
}

/// New checksum field after a 16-bit word of the covered data changed from `old` to `new`
/// (RFC 1624 eqn. 3), without touching the rest of the data.
#[inline]
pub fn update_u16(check: u16, old: u16, new: u16) -> u16 {
    // RFC 1624 eqn. 3: HC' = ~(~HC + ~m + m').
    !fold(u64::from(!check) + u64::from(!old) + u64::from(new))
}

/// [`update_u16`] for an aligned 32-bit field (two words), e.g. a sequence or ACK number.
#[inline]
pub fn update_u32(check: u16, old: u32, new: u32) -> u16 {
    let acc = u64::from(!check)
        + u64::from(!(old >> 16) as u16)
        + u64::from(!(old as u16))
        + u64::from(new >> 16)
        + u64::from(new as u16);
    !fold(acc)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// RFC 1071 §3 worked example: bytes 00 01 f2 03 f4 f5 f6 f7 sum to ddf2 (folded).
    #[test]
    fn rfc1071_example() {
        let data = [0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7];
        assert_eq!(fold(sum(0, &data)), 0xddf2);
        assert_eq!(finish(sum(0, &data)), !0xddf2);
    }

    #[test]
    fn odd_length_pads_with_zero() {
        assert_eq!(fold(sum(0, &[0x12, 0x34, 0x56])), 0x1234 + 0x5600);
        assert_eq!(fold(sum(0, &[0xff])), 0xff00);
        assert_eq!(sum(0, &[]), 0);
    }

    /// A well-known IPv4 header (Wikipedia "IPv4 header checksum" example): checksum b861.
    #[test]
    fn ipv4_header_example() {
        let mut hdr = [
            0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0x00, 0x00, 0xc0, 0xa8,
            0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7,
        ];
        assert_eq!(finish(sum(0, &hdr)), 0xb861);
        hdr[10..12].copy_from_slice(&0xb861u16.to_be_bytes());
        assert!(is_valid(sum(0, &hdr)));
    }

    proptest! {
        /// The sum does not depend on how the data is split at even offsets (deferred carries).
        #[test]
        fn split_sums_agree(data in proptest::collection::vec(any::<u8>(), 0..200), cut in 0usize..100) {
            let cut = (cut * 2).min(data.len() & !1);
            prop_assert_eq!(fold(sum(sum(0, &data[..cut]), &data[cut..])), fold(sum(0, &data)));
        }

        /// Incremental update gives exactly the checksum a full recomputation gives.
        #[test]
        fn incremental_update_matches_recompute(
            mut words in proptest::collection::vec(any::<u16>(), 2..40),
            idx in any::<prop::sample::Index>(),
            new in any::<u16>(),
        ) {
            let bytes = |w: &[u16]| w.iter().flat_map(|x| x.to_be_bytes()).collect::<Vec<u8>>();
            let check = finish(sum(0, &bytes(&words)));
            let i = idx.index(words.len());
            let old = words[i];
            words[i] = new;
            // All-zero data is the one case where the two differ, as +0 and -0 (RFC 1624 §3).
            prop_assume!(words.iter().any(|&w| w != 0));
            let full = finish(sum(0, &bytes(&words)));
            prop_assert_eq!(update_u16(check, old, new), full);
        }

        /// Same for a 32-bit field.
        #[test]
        fn incremental_update_u32_matches_recompute(
            mut data in proptest::collection::vec(any::<u8>(), 8..60),
            new in any::<u32>(),
        ) {
            data.truncate(data.len() & !3);
            let check = finish(sum(0, &data));
            let old = u32::from_be_bytes([data[4], data[5], data[6], data[7]]);
            data[4..8].copy_from_slice(&new.to_be_bytes());
            prop_assume!(data.iter().any(|&b| b != 0));
            prop_assert_eq!(update_u32(check, old, new), finish(sum(0, &data)));
        }
    }
}
