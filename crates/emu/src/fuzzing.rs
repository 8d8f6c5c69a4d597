//! The body of the `tun_intake` fuzz target: arbitrary bytes as read from the hosts' TUN
//! devices — with a `virtio_net_hdr` in front ([`crate::vnet`], an offloading device) or
//! without — through [`Engine::ingress_vnet`] and [`Engine::ingress`], the network run until
//! it drains, and what reaches the hosts written out. No system call: the engine is clock- and
//! descriptor-free. Public so that cargo-fuzz (nightly) and a stable smoke test in CI run the
//! same checks; compiled only for tests and with the `fuzzing` feature.
//!
//! Input: records `[host, delta_ms, len_hi, len_lo, bytes…]`: `bytes` read from gw's device
//! (offloading: `bytes` start with the `virtio_net_hdr`) when `host` is even, from term's
//! (plain) when odd, `delta_ms` after the previous read. Panics only if an invariant breaks:
//! - a read counts exactly the wire segments [`vnet::segment`] cuts from it (one for a plain
//!   read) and their bytes, or, when the header makes no sense, one `vnet_malformed`;
//! - every segment cut from a super-packet carries valid IPv4 and TCP checksums, a total
//!   length equal to its size, and at most `gso_size` bytes of payload;
//! - what is written to gw's device parses as a `virtio_net_hdr` and packet, and re-cut gives
//!   exactly the segments and bytes the engine counted as sent (coalescing loses nothing);
//! - once the network has drained, no packet buffer is left alive (nothing leaked).

use std::sync::OnceLock;

use satpep_proto::wire::checksum;
use satpep_proto::Instant;
use satpep_scenario::Scenario;

use crate::engine::{Engine, PathCounters};
use crate::vnet::{self, VirtioNetHdr, GSO_ECN, GSO_TCPV4};

/// gw (10.0.0.1, offloading) → r (router) → term (10.0.1.1): 8 Mb/s then 80 Mb/s, 100 ms +
/// 5 ms, a direct return link term → gw; a 64-packet queue so hostile floods are dropped, not
/// held. The engine tests' network.
const SCENARIO: &str = r#"
[[node]]
name = "gw"
address = "10.0.0.1"
[[node]]
name = "r"
kind = "router"
address = "10.0.2.1"
[[node]]
name = "term"
address = "10.0.1.1"
[[link]]
name = "gw-r"
from = "gw"
to = "r"
rate = "8Mbps"
delay = "100ms"
queue = { limit_packets = 64 }
[[link]]
name = "r-term"
from = "r"
to = "term"
rate = "80Mbps"
delay = "5ms"
[[link]]
name = "term-gw"
from = "term"
to = "gw"
rate = "8Mbps"
delay = "100ms"
queue = { limit_packets = 64 }
"#;

const GW: usize = 0;
const TERM: usize = 2;

fn scenario() -> &'static Scenario {
    static S: OnceLock<Scenario> = OnceLock::new();
    S.get_or_init(
        || match satpep_scenario::load_str(SCENARIO, "tun_intake", &[]) {
            Ok(l) => l.scenario,
            Err(e) => panic!("the fuzz scenario loads: {e}"),
        },
    )
}

/// What [`vnet::segment`] makes of `read` (header and packet) on its own: segments and wire
/// bytes, checking each segment of a super-packet; `None` when it refuses the read.
fn expected_cut(read: &[u8]) -> Option<(u64, u64)> {
    let (hdr, pkt) = VirtioNetHdr::parse(read).ok()?;
    let mut pkt = pkt.to_vec();
    let (mut n, mut bytes) = (0u64, 0u64);
    let tso = hdr.gso_type & !GSO_ECN == GSO_TCPV4;
    vnet::segment(&hdr, &mut pkt, &mut Vec::new(), |head, payload| {
        n += 1;
        bytes += (head.len() + payload.len()) as u64;
        if tso {
            check_segment(head, payload, hdr.gso_size);
        }
    })
    .ok()?;
    Some((n, bytes))
}

/// A segment cut from a super-packet is a complete IPv4 TCP packet.
fn check_segment(head: &[u8], payload: &[u8], gso_size: u16) {
    let ihl = usize::from(head[0] & 0x0f) * 4;
    assert_eq!(
        checksum::finish(checksum::sum(0, &head[..ihl])),
        0,
        "IPv4 checksum"
    );
    let total = head.len() + payload.len();
    assert_eq!(usize::from(u16::from_be_bytes([head[2], head[3]])), total);
    assert!(
        payload.len() <= usize::from(gso_size),
        "{} > gso_size",
        payload.len()
    );
    let addr = |i: usize| std::net::Ipv4Addr::new(head[i], head[i + 1], head[i + 2], head[i + 3]);
    let acc = checksum::pseudo_header_ipv4(addr(12), addr(16), 6, (total - ihl) as u16);
    let sum = checksum::sum(checksum::sum(acc, &head[ihl..]), payload);
    assert_eq!(checksum::finish(sum), 0, "TCP checksum");
}

/// Run the record stream in `data` through the engine's intake.
pub fn tun_intake(data: &[u8]) {
    run(data);
}

/// [`tun_intake`], returning the engine's counters at the end.
fn run(data: &[u8]) -> PathCounters {
    let live = satpep_proto::node::live_packets();
    let mut e = Engine::new(scenario());
    e.set_vnet(GW, true);
    let mut now = Instant::ZERO;
    let (mut written, mut written_bytes) = (0u64, 0u64);
    let mut rest = data;
    while let [host, delta, hi, lo, tail @ ..] = rest {
        let len = usize::from(u16::from_be_bytes([*hi, *lo])).min(tail.len());
        let (bytes, next) = tail.split_at(len);
        rest = next;
        now = Instant(now.0 + u64::from(*delta) * 1_000_000);
        let before = e.counters();
        let read = |buf: &mut [u8]| {
            buf[..bytes.len()].copy_from_slice(bytes);
            Ok(Some(bytes.len()))
        };
        let after = if host % 2 == 0 {
            let got = e.ingress_vnet(GW, now, read);
            assert!(matches!(got, Ok(true)));
            let c = e.counters();
            match expected_cut(bytes) {
                Some((n, b)) => {
                    assert_eq!(c.rx_packets - before.rx_packets, n);
                    assert_eq!(c.rx_bytes - before.rx_bytes, b);
                    assert_eq!(c.vnet_malformed, before.vnet_malformed);
                }
                None => {
                    assert_eq!(c.rx_packets, before.rx_packets);
                    assert_eq!(c.vnet_malformed, before.vnet_malformed + 1);
                }
            }
            c
        } else {
            assert!(matches!(e.ingress(TERM, now, read), Ok(true)));
            let c = e.counters();
            assert_eq!(c.rx_packets, before.rx_packets + 1);
            assert_eq!(c.rx_bytes, before.rx_bytes + len as u64);
            c
        };
        assert!(after.malformed - before.malformed <= after.rx_packets - before.rx_packets + 1);
        // Deliver what is due, as the run loop does after each pass of reads.
        service(&mut e, now, &mut written, &mut written_bytes);
    }
    // Drain: every event, then what reached the hosts, in passes at most 4 ms late (as a
    // loaded run loop would be) so that several segments are due together and coalesce.
    let mut passes = 0u32;
    while let Some(t) = e.poll_timeout() {
        now = Instant(now.0.max(t.0) + 4_000_000);
        service(&mut e, now, &mut written, &mut written_bytes);
        passes += 1;
        assert!(passes < 10_000_000, "the network never drains");
    }
    let c = e.counters();
    assert_eq!((c.tx_packets, c.tx_bytes), (written, written_bytes));
    assert_eq!(satpep_proto::node::live_packets(), live, "packets leaked");
    c
}

/// Run the engine to `now`, checking what it writes and counting its wire packets and bytes.
fn service(e: &mut Engine, now: Instant, written: &mut u64, bytes: &mut u64) {
    let r = e.service(now, |host, parts| {
        let read = parts.concat();
        if host == GW {
            // Gathering write: the `virtio_net_hdr` and headers, then the payloads.
            let cut = expected_cut(&read);
            let Some((n, b)) = cut else {
                panic!("written to an offloading device and refused by our own parser")
            };
            *written += n;
            *bytes += b;
        } else {
            *written += 1;
            *bytes += read.len() as u64;
        }
        Ok(true)
    });
    assert!(r.is_ok());
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The `tun_intake` fuzz target's corpus (`fuzz/corpus/tun_intake`: a TSO super-packet as
    /// Linux hands it over, a run of segments to coalesce, the packets of simulated traces) runs
    /// clean through the body on stable Rust, in CI.
    #[test]
    fn tun_intake_corpus_runs_clean() {
        let root =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus/tun_intake");
        let (mut files, mut sum) = (0, PathCounters::default());
        for f in std::fs::read_dir(&root)
            .expect("fuzz/corpus/tun_intake exists")
            .flatten()
        {
            let c = run(&std::fs::read(f.path()).unwrap());
            sum.rx_packets += c.rx_packets;
            sum.rx_super_packets += c.rx_super_packets;
            sum.tx_super_packets += c.tx_super_packets;
            sum.tx_packets += c.tx_packets;
            files += 1;
        }
        assert!(files >= 2, "fuzz/corpus/tun_intake: {files} files");
        // The seeds reach segmentation on the way in and coalescing on the way out.
        assert!(
            sum.rx_super_packets > 0 && sum.tx_super_packets > 0,
            "{sum:?}"
        );
        assert!(sum.tx_packets > 0, "{sum:?}");
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn random_records_never_panic(data in proptest::collection::vec(any::<u8>(), 0..3000)) {
            tun_intake(&data);
        }
    }
}
