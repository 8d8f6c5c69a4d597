//! The body of the `wire_ipv4_tcp` fuzz target, public so that the cargo-fuzz crate (nightly)
//! and a stable smoke test in this crate run the same checks.
//!
//! It is always compiled rather than behind `cfg(fuzzing)` so that `cargo test` on stable
//! exercises it too.

use super::{emit_ipv4_tcp, parse_ipv4_tcp, TcpIpv4Display, TcpIpv4View, MAX_IPV4_TCP_HEADER_LEN};
use crate::wire::SeqNumber;

/// Feed `data` to [`parse_ipv4_tcp`] and [`TcpIpv4View`]: the first two bytes are the payload
/// length (big endian), the rest the header bytes. Panics only if an invariant is broken:
/// parse and view disagree, a re-emitted repr does not parse back equal, or a setter breaks a
/// valid checksum.
pub fn ipv4_tcp(data: &[u8]) {
    let [hi, lo, header @ ..] = data else { return };
    let payload_len = u32::from(u16::from_be_bytes([*hi, *lo]));
    let parsed = parse_ipv4_tcp(header, payload_len);
    let view = TcpIpv4View::new_checked(header);

    if let Ok((ip, tcp)) = &parsed {
        let Ok(view) = &view else {
            panic!("parse accepted what the view rejects: {view:?}")
        };
        assert!(view.verify_checksums());
        assert_eq!((view.src_addr(), view.dst_addr()), (ip.src, ip.dst));
        assert_eq!(
            (view.src_port(), view.dst_port()),
            (tcp.src_port, tcp.dst_port)
        );
        assert_eq!((view.seq_number(), view.ack_number()), (tcp.seq, tcp.ack));
        assert_eq!((view.flags(), view.window()), (tcp.flags, tcp.window));
        // Header bytes past the TCP header count as payload on both sides.
        assert_eq!(view.payload_len(), tcp.payload_len);
        assert_eq!(view.has_sack(), !tcp.sack.is_empty());
        let _ = TcpIpv4Display(ip, tcp).to_string();

        // Re-emit in satpep's layout and parse back: equal up to SACK blocks that no longer fit.
        let emitted_len = 20 + tcp.header_len();
        if emitted_len as u64 + u64::from(tcp.payload_len) <= 0xffff {
            let mut buf = [0u8; MAX_IPV4_TCP_HEADER_LEN];
            let n = emit_ipv4_tcp(ip, tcp, &mut buf);
            assert_eq!(n, emitted_len);
            let (ip2, tcp2) = parse_ipv4_tcp(&buf[..n], tcp.payload_len)
                .unwrap_or_else(|e| panic!("re-emitted header does not parse: {e}"));
            let mut expect = *tcp;
            expect.sack.truncate(tcp.sack_capacity());
            assert_eq!(tcp2, expect);
            assert_eq!(
                (ip2.src, ip2.dst, ip2.ttl, ip2.ident),
                (ip.src, ip.dst, ip.ttl, ip.ident)
            );
            assert_eq!(ip2.dscp_ecn, ip.dscp_ecn);
            assert_eq!(ip2.payload_len, tcp.header_len() as u32 + tcp.payload_len);
        }
    }

    if let Ok(view) = view {
        // Every getter must be panic-free on a checked view.
        let _ = (
            view.ident(),
            view.ttl(),
            view.dscp_ecn(),
            view.is_pure_ack(),
            view.has_sack(),
        );
        let was_valid = view.verify_checksums();
        let mut copy = TcpIpv4View::new_unchecked(header.to_vec());
        let new_ack = SeqNumber(view.seq_number().0 ^ 0x5a5a_5a5a);
        copy.set_ack_number(new_ack);
        copy.set_seq_number(SeqNumber(u32::from(view.window())));
        copy.set_window(view.window().rotate_left(3));
        assert_eq!(
            copy.verify_checksums(),
            was_valid,
            "incremental update changed validity"
        );
        copy.fill_checksums();
        assert!(copy.verify_checksums());
        let bytes = copy.into_inner();
        assert_eq!(bytes[28..32], new_ack.0.to_be_bytes());
    }
}
