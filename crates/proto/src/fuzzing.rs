//! The body of the `middleboxes` fuzz target: arbitrary packets, with time advancing and every
//! due timer fired, through one middlebox of every kind (and a chain of several), as a router
//! would run them on hostile traffic. Public so that cargo-fuzz (nightly) and a stable smoke
//! test in CI run the same checks; compiled only for tests and with the `fuzzing` feature.
//!
//! Input: records `[port, delta_ms, header_len, len_hi, len_lo, bytes…]`. Each record becomes a
//! packet (`Packet::from_wire`) arriving on `port & 3` `delta_ms` after the previous one. Panics
//! only if an invariant breaks: a middlebox panics, a timer that fired stays due (a hang), or a
//! middlebox sends more than [`MAX_OUT_PER_EVENT`] packets per input or timer event (unbounded
//! amplification, as a forged compacted ACK expanding to thousands would be).

use std::net::Ipv4Addr;

use crate::ack::AckExpanderConfig;
use crate::middlebox::{Middlebox, MiddleboxConfig};
use crate::node::Packet;
use crate::pep::spoof::SpoofConfig;
use crate::rand::Rng;
use crate::time::{Bitrate, Duration, Instant};
use crate::tunnel::TunnelConfig;
use crate::{Node, PortId};

/// Packets a middlebox may emit per packet in or timer fired, summed over a run: a compacted
/// ACK legitimately expands to at most a few hundred ACKs; anything near this bound is a bug.
pub const MAX_OUT_PER_EVENT: u64 = 1_024;

/// Timer firings allowed at one instant before calling it a hang.
const MAX_FIRES_PER_INSTANT: u32 = 10_000;

/// One middlebox of every kind (defaults, with addresses where a kind needs them) and a chain,
/// plus the options that add code paths on hostile input: the SuperCharger's default
/// `add_wscale` (rewriting handshakes), the spoofing gateway's `satellite_rate` pacing, the
/// tunnel's `mtu` (MSS clamp) and keys.
pub fn every_kind() -> Vec<MiddleboxConfig> {
    let local = Ipv4Addr::new(10, 0, 0, 1);
    let remote = Ipv4Addr::new(10, 0, 0, 2);
    let expander = AckExpanderConfig {
        compactors: vec![remote, Ipv4Addr::new(10, 0, 2, 1)], // the second: samaraweera.toml's compactor (corpus)
        spacing: true,
        spacing_per_flow: true,
        ..AckExpanderConfig::default()
    };
    let key = crate::auth::TunnelKey::from_bytes(&[0x5a; 32]).unwrap_or_else(|e| panic!("{e}"));
    let tunnel = TunnelConfig {
        local,
        remote,
        arrival_port: Some(0),
        ports: Vec::new(),
        peers: vec![Ipv4Addr::new(10, 0, 2, 1)],
        key: None,
        insecure: false,
        mtu: None,
    };
    vec![
        MiddleboxConfig::PassThrough,
        MiddleboxConfig::Supercharger(Default::default()),
        MiddleboxConfig::SplitTcp(Box::default()),
        MiddleboxConfig::Snoop(Default::default()),
        MiddleboxConfig::DupackDelay(Default::default()),
        MiddleboxConfig::Spoof(Default::default()),
        // Paced toward the hybrid hosts (round robin over the CCBs, its own timer), at a rate
        // low enough that hostile input queues segments behind the pacer.
        MiddleboxConfig::Spoof(SpoofConfig {
            satellite_rate: Some(Bitrate::from_bps(1_000_000)),
            ..Default::default()
        }),
        MiddleboxConfig::IpipTunnel(tunnel.clone()),
        // With an MTU: the MSS option of every SYN it handles is rewritten (the clamp).
        MiddleboxConfig::IpipTunnel(TunnelConfig {
            mtu: Some(1500),
            ..tunnel.clone()
        }),
        MiddleboxConfig::AckExpander(expander.clone()),
        // Keyed (crate::auth): hostile packets meet the MAC and replay checks first.
        MiddleboxConfig::IpipTunnel(TunnelConfig {
            key: Some(key.clone()),
            ..tunnel.clone()
        }),
        MiddleboxConfig::AckExpander(AckExpanderConfig {
            key: Some(key),
            ..expander.clone()
        }),
        // The accelerated PEP's two ends: hostile TCP from the clients' side, hostile UDP to
        // the QUIC endpoint (quinn-proto parses it; our handling of its events is what runs).
        MiddleboxConfig::Accel(Box::new(accel(
            crate::accel::pep::Role::Terminal,
            local,
            remote,
        ))),
        MiddleboxConfig::Accel(Box::new(accel(
            crate::accel::pep::Role::Gateway,
            remote,
            remote,
        ))),
        MiddleboxConfig::Chain {
            elements: vec![
                MiddleboxConfig::IpipTunnel(tunnel),
                MiddleboxConfig::AckExpander(expander),
                MiddleboxConfig::Snoop(Default::default()),
                MiddleboxConfig::SplitTcp(Box::default()),
            ],
        },
    ]
}

/// An accelerated-PEP end at `address` (a terminal's gateway: `gateway`) on the deployment path.
fn accel(
    role: crate::accel::pep::Role,
    address: Ipv4Addr,
    gateway: Ipv4Addr,
) -> crate::accel::pep::AccelPepConfig {
    let text = format!(
        "role = \"{}\"\naddress = \"{address}\"\n{}forward = \"20Mbps\"\n\
         return = \"2Mbps\"\nrtt = \"600ms\"\n",
        match role {
            crate::accel::pep::Role::Terminal => "terminal",
            crate::accel::pep::Role::Gateway => "gateway",
        },
        match role {
            crate::accel::pep::Role::Terminal => format!("gateway = \"{gateway}\"\n"),
            crate::accel::pep::Role::Gateway => String::new(),
        }
    );
    toml::from_str(&text).unwrap_or_else(|e| panic!("{e}"))
}

/// Run the record stream in `data` through every middlebox of [`every_kind`].
pub fn middleboxes(data: &[u8]) {
    run(data);
}

/// [`middleboxes`], returning the middleboxes for their counters.
fn run(data: &[u8]) -> Vec<Middlebox> {
    let mut boxes: Vec<Middlebox> = every_kind()
        .iter()
        .enumerate()
        .map(|(i, c)| Middlebox::new(c, Rng::new(1, i as u64)))
        .collect();
    let mut out = vec![0u64; boxes.len()];
    let mut events = vec![0u64; boxes.len()];
    let mut now = Instant::ZERO;
    let mut rest = data;
    let mut n = 0u64;
    while let [port, delta, hlen, hi, lo, tail @ ..] = rest {
        let len = usize::from(u16::from_be_bytes([*hi, *lo])).min(tail.len());
        let (bytes, next) = tail.split_at(len);
        rest = next;
        now += Duration::from_millis(u64::from(*delta));
        n += 1;
        for (i, mb) in boxes.iter_mut().enumerate() {
            fire_due(mb, now, &mut events[i], &mut out[i]);
        }
        let Some(mut pkt) = Packet::from_wire(bytes, usize::from(*hlen)) else {
            continue;
        };
        pkt.id = n;
        for (i, mb) in boxes.iter_mut().enumerate() {
            mb.handle_packet(now, PortId(u16::from(*port & 3)), pkt.clone());
            events[i] += 1;
            out[i] += drain(mb, now);
            assert_bounded(i, out[i], events[i]);
        }
    }
    // Let every timer run out: ten simulated minutes in one-second steps.
    for _ in 0..600 {
        now += Duration::from_secs(1);
        for (i, mb) in boxes.iter_mut().enumerate() {
            fire_due(mb, now, &mut events[i], &mut out[i]);
        }
    }
    boxes
}

fn fire_due(mb: &mut Middlebox, now: Instant, events: &mut u64, out: &mut u64) {
    let mut fires = 0;
    while mb.poll_timeout().is_some_and(|t| t <= now) {
        mb.handle_timeout(now);
        *events += 1;
        *out += drain(mb, now);
        fires += 1;
        assert!(
            fires < MAX_FIRES_PER_INSTANT,
            "a timer stays due after firing {fires} times at {now:?}"
        );
    }
}

fn drain(mb: &mut Middlebox, now: Instant) -> u64 {
    let mut sent = 0;
    while mb.poll_transmit(now).is_some() {
        sent += 1;
        assert!(sent < 1_000_000, "a middlebox keeps transmitting");
    }
    while mb.poll_drop().is_some() {}
    sent
}

fn assert_bounded(i: usize, out: u64, events: u64) {
    assert!(
        out <= MAX_OUT_PER_EVENT * events,
        "middlebox {i} of every_kind() sent {out} packets for {events} events"
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Every fuzz target's corpus (`fuzz/corpus/<target>`: real traffic of simulated runs and
    /// hand-made seeds) runs clean through the target's body on stable Rust, in CI. A target
    /// without an entry here fails the test, so a new one cannot be forgotten.
    #[test]
    fn every_corpus_runs_clean() {
        type Body = fn(&[u8]);
        let bodies: [(&str, Body); 8] = [
            ("middleboxes", middleboxes),
            ("wire_ipv4_tcp", crate::wire::fuzzing::ipv4_tcp),
            ("vj_decompress", crate::vj::fuzzing::vj_decompress),
            ("ack_expander", crate::ack::fuzzing::expander_input),
            ("real_packets", crate::pep::fuzzing::real_packets),
            ("tunnel", crate::tunnel::fuzzing::decapsulate_input),
            ("link_trace", crate::link::schedule::fuzzing::trace_input),
            ("accel_header", crate::accel::header::fuzzing::header_input),
        ];
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus");
        let mut targets = 0;
        for dir in std::fs::read_dir(&root)
            .expect("fuzz/corpus exists")
            .flatten()
        {
            let name = dir.file_name().to_string_lossy().into_owned();
            // satpep-scenario's tests run the loader's corpus, satpep-emu's the TUN intake's,
            // satpep-daemon's the daemon configuration's.
            if name == "scenario_load" || name == "tun_intake" || name == "daemon_config" {
                continue;
            }
            let body = bodies
                .iter()
                .find(|(n, _)| *n == name)
                .unwrap_or_else(|| panic!("fuzz/corpus/{name}: no body listed in this test"))
                .1;
            let mut files = 0;
            for f in std::fs::read_dir(dir.path()).unwrap().flatten() {
                body(&std::fs::read(f.path()).unwrap());
                files += 1;
            }
            assert!(files >= 2, "fuzz/corpus/{name}: {files} files");
            targets += 1;
        }
        assert_eq!(targets, bodies.len());
    }

    /// The committed corpus reaches the code paths added since the first campaign, so the
    /// fuzzer starts from inputs that exercise them: the SuperCharger negotiating window scaling
    /// (`add_wscale`) and rewriting the scale, the paced spoofing gateway sending from its
    /// queues, the tunnel clamping an MSS.
    #[test]
    fn corpus_reaches_wscale_pacing_and_mss_clamp() {
        let kinds = every_kind();
        let root =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus/middleboxes");
        let mut sums = vec![std::collections::BTreeMap::<String, u64>::new(); kinds.len()];
        for f in std::fs::read_dir(&root).unwrap().flatten() {
            for (i, mb) in run(&std::fs::read(f.path()).unwrap()).iter().enumerate() {
                for (k, v) in mb.counters() {
                    *sums[i].entry(k).or_default() += v;
                }
            }
        }
        let find = |pred: &dyn Fn(&MiddleboxConfig) -> bool| {
            kinds
                .iter()
                .position(pred)
                .expect("configured in every_kind")
        };
        let sc = find(&|c| matches!(c, MiddleboxConfig::Supercharger(s) if s.add_wscale));
        let paced = find(&|c| matches!(c, MiddleboxConfig::Spoof(s) if s.satellite_rate.is_some()));
        let clamp = find(&|c| matches!(c, MiddleboxConfig::IpipTunnel(t) if t.mtu.is_some()));
        assert!(sums[sc]["wscale_added"] > 0, "{:?}", sums[sc]);
        assert!(sums[sc]["wscale_rewritten"] > 0, "{:?}", sums[sc]);
        assert!(sums[paced]["segments_sent"] > 0, "{:?}", sums[paced]);
        assert!(sums[clamp]["mss_clamped"] > 0, "{:?}", sums[clamp]);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]
        #[test]
        fn random_records_never_panic(data in proptest::collection::vec(any::<u8>(), 0..3000)) {
            middleboxes(&data);
        }
    }

    /// Every kind the scenario format offers is in [`every_kind`] (a new kind must be added
    /// there to be fuzzed).
    #[test]
    fn every_kind_covers_every_variant() {
        let names: Vec<String> = every_kind()
            .iter()
            .map(|c| {
                format!("{c:?}")
                    .split(['(', ' ', '{'])
                    .next()
                    .unwrap_or("")
                    .to_owned()
            })
            .collect();
        for want in [
            "PassThrough",
            "Supercharger",
            "SplitTcp",
            "Snoop",
            "DupackDelay",
            "Spoof",
            "IpipTunnel",
            "AckExpander",
            "Chain",
            "Accel",
        ] {
            assert!(
                names.iter().any(|n| n == want),
                "{want} missing from {names:?}"
            );
        }
    }
}
