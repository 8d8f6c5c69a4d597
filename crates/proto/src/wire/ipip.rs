//! The outer header of IP-in-IP (RFC 2003), shared by every tunnel satpep builds (the ACK
//! compactor's tunnel to the expander, the hybrid terminal's return tunnel).

use std::net::Ipv4Addr;

use super::{checksum, IPPROTO_IPIP};

/// Length of the outer IPv4 header (no options).
pub const OUTER_LEN: usize = 20;

/// Write a 20-byte outer IPv4 header into `out[..20]`: protocol 4, DF set, TTL 64, the TOS byte
/// copied from the inner header (RFC 2003 §3.1), `total_len` covering everything after it, and
/// a correct header checksum. Panics if `out` is shorter than 20 bytes (callers size it).
pub fn write_outer_header(
    out: &mut [u8],
    total_len: u16,
    tos: u8,
    ident: u16,
    src: Ipv4Addr,
    dst: Ipv4Addr,
) {
    let o = &mut out[..OUTER_LEN];
    o[0] = 0x45;
    o[1] = tos;
    o[2..4].copy_from_slice(&total_len.to_be_bytes());
    o[4..6].copy_from_slice(&ident.to_be_bytes());
    o[6..8].copy_from_slice(&0x4000u16.to_be_bytes());
    o[8] = 64;
    o[9] = IPPROTO_IPIP;
    o[10..12].fill(0);
    o[12..16].copy_from_slice(&src.octets());
    o[16..20].copy_from_slice(&dst.octets());
    let check = checksum::finish(checksum::sum(0, o));
    o[10..12].copy_from_slice(&check.to_be_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outer_header_is_valid_ipv4_per_etherparse() {
        let mut b = [0u8; 20];
        write_outer_header(
            &mut b,
            72,
            0x10,
            7,
            Ipv4Addr::new(10, 0, 2, 1),
            Ipv4Addr::new(10, 0, 1, 1),
        );
        let h = etherparse::Ipv4HeaderSlice::from_slice(&b).expect("parses");
        assert_eq!(h.protocol(), etherparse::IpNumber(4));
        assert_eq!(h.total_len(), 72);
        assert_eq!(h.header_checksum(), h.to_header().calc_header_checksum());
        assert!(h.dont_fragment());
        assert_eq!(
            (
                h.ttl(),
                h.identification(),
                h.dcp().value() << 2 | h.ecn().value()
            ),
            (64, 7, 0x10)
        );
    }
}
