//! The body of the `real_packets` fuzz target, public so that the cargo-fuzz crate (nightly) and
//! a stable smoke test run the same checks: arbitrary wire bytes, read as real packets, fed to the
//! mechanisms that terminate or cache real traffic (split-TCP relay, spoofing gateway, Snoop).
//!
//! Input: a sequence of records `[port, header_len, len_hi, len_lo, bytes…]`. Each record becomes
//! a packet (`Packet::from_wire`) arriving on `port & 1` one millisecond after the previous one;
//! every few records the mechanisms' timers run. Panics only if an invariant breaks: a mechanism
//! panics, or a TCP packet it emits with real payload fails its own checksum.

use crate::node::Packet;
use crate::pep::{SplitConfig, SplitRelay, SpoofConfig, SpoofGateway};
use crate::snoop::{Snoop, SnoopConfig};
use crate::time::{Duration, Instant};
use crate::wire::{parse_packet, IPPROTO_TCP};
use crate::{Node, PortId};

/// Run the record stream in `data` through one relay, one spoofing gateway and one Snoop.
pub fn real_packets(data: &[u8]) {
    let mut relay = SplitRelay::new(SplitConfig::default());
    let mut spoof = SpoofGateway::new(SpoofConfig::default());
    let mut snoop = Snoop::new(SnoopConfig::default());
    let mut now = Instant::ZERO;
    let mut rest = data;
    let mut n = 0u32;
    while let [port, hlen, hi, lo, tail @ ..] = rest {
        let len = usize::from(u16::from_be_bytes([*hi, *lo])).min(tail.len());
        let (bytes, next) = tail.split_at(len);
        rest = next;
        now += Duration::from_millis(1);
        n += 1;
        let Some(mut pkt) = Packet::from_wire(bytes, usize::from(*hlen)) else {
            continue;
        };
        // Input ids stay below the relay's own (`ID_BASE`), so its built packets stand out.
        pkt.id = u64::from(n);
        let port = PortId(u16::from(*port & 1));
        relay.handle_packet(now, port, pkt.clone());
        spoof.handle_packet(now, port, pkt.clone());
        snoop.handle_packet(now, port, pkt);
        if n.is_multiple_of(4) {
            now += Duration::from_secs(1);
            relay.handle_timeout(now);
            spoof.handle_timeout(now);
            snoop.handle_timeout(now);
        }
        drain(&mut relay, now, true);
        drain(&mut spoof, now, false);
        drain(&mut snoop, now, false);
    }
}

/// Drain a mechanism's output. With `check`, every TCP packet the relay built (id from
/// `ID_BASE` on) must parse with valid checksums over its real payload; packets passed on may be
/// as malformed as they came in.
fn drain(node: &mut impl Node, now: Instant, check: bool) {
    let mut guard = 0;
    while let Some(tx) = node.poll_transmit(now) {
        guard += 1;
        assert!(guard < 1_000_000, "a mechanism keeps transmitting");
        let pkt = tx.pkt;
        let built_here = check && pkt.id >= crate::pep::proxy::ID_BASE;
        if built_here && pkt.header().get(9) == Some(&IPPROTO_TCP) {
            if let Err(e) = parse_packet(&pkt) {
                panic!("the relay emitted an invalid packet: {e}");
            }
        }
        let _ = node.poll_drop();
    }
}
