//! The QUIC settings of the accelerated PEP's connection, the same for the daemons (through
//! quinn) and for the simulator and emulator (through [`super::pep::AccelPep`]): flow control
//! for the satellite's bandwidth-delay product, the connection kept up across idle periods, our
//! controller, and ACKs only as often as the return link affords (paper 000).

use std::sync::Arc;
use std::time::Duration;

use quinn_proto::congestion::{BbrConfig, CubicConfig, NewRenoConfig};
use quinn_proto::{AckFrequencyConfig, EndpointConfig, IdleTimeout, TransportConfig, VarInt};
use serde::{Deserialize, Serialize};

use super::cc::{SatProbeConfig, SatRateConfig};

/// Which end of the satellite a transport is at.
#[derive(Clone, Copy, Debug, Eq, PartialEq)]
pub enum End {
    /// Behind the satellite (the client side): sends on the return link.
    Terminal,
    /// At the hub (the server side): sends on the forward link.
    Gateway,
}

/// The controller of what an end sends.
#[derive(Clone, Copy, Debug, Default, Deserialize, Eq, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Congestion {
    /// [`super::cc::SatRate`]: at the configured capacity, deaf to loss.
    #[default]
    Rate,
    /// [`super::cc::SatProbe`]: measures shared or unknown capacity.
    Probe,
    /// quinn's CUBIC (for comparison).
    Cubic,
    /// quinn's BBR (for comparison).
    Bbr,
    /// quinn's NewReno (for comparison).
    NewReno,
}

/// What the transport needs to know of the satellite path.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Path {
    /// Forward (gateway to terminal) capacity on the wire, bits/s.
    pub forward_bps: u64,
    /// Return (terminal to gateway) capacity on the wire, bits/s.
    pub return_bps: u64,
    /// The satellite round trip, assumed until measured.
    pub rtt: Duration,
    /// UDP payload bytes per packet.
    pub mtu: u16,
    /// Streams (TCP connections) one terminal may hold at once.
    pub max_streams: u32,
    /// The controller of what this end sends.
    pub congestion: Congestion,
}

/// Receive windows, in bandwidth-delay products of the faster direction: (per stream, per
/// connection).
///
/// A lost packet holds a stream's later bytes at the receiver until its retransmission arrives
/// (about 1.5 round trips after it was sent), and the window's update needs half a round trip
/// more to reach the sender: with less than about 2.5 products per stream, every line error
/// stalls the sender (measured in the daemons: 2 products gave 17.4 Mb/s of 19.0 at PER 1e-3).
/// Not much more either: quinn gives up a whole connection (INTERNAL_ERROR "too many gaps in
/// stream buffer") when one stream's window holds more than 1 024 separate pieces, and a
/// drop-tail queue that overflows under a paced sender drops every other packet: with quinn's
/// BBR, 6 products (6 400 packets) did that in a 100 MB download. 4 products leave room for a
/// quarter of the packets lost one by one. The connection's window bounds what a terminal's
/// streams hold in all.
pub fn windows(p: &Path) -> (u64, u64) {
    let fastest = p.forward_bps.max(p.return_bps);
    let bdp = (u128::from(fastest) * p.rtt.as_nanos() / 8 / 1_000_000_000) as u64;
    (
        (4 * bdp).clamp(1 << 20, 48 << 20),
        (8 * bdp).clamp(4 << 20, 256 << 20),
    )
}

/// One ACK per this many packets the gateway asks of a terminal, and the longest it may hold
/// one: each ACK costs about 60 bytes on the wire, and at most a tenth of the return link goes
/// to them. At 20 Mb/s forward: one per 4 packets over a 2 Mb/s return, one per 130 over
/// 64 kb/s.
pub fn ack_frequency(p: &Path) -> (u32, Duration) {
    let fwd_pps = p.forward_bps as f64 / (8.0 * f64::from(p.mtu) + 224.0);
    let acks_ps = (p.return_bps as f64 / 10.0 / 480.0).max(1.0);
    let threshold = (fwd_pps / acks_ps).ceil().clamp(2.0, 1000.0) as u32;
    let delay = Duration::from_secs_f64((f64::from(threshold) / fwd_pps).clamp(0.025, 0.2));
    (threshold, delay)
}

/// The transport settings of `end` on path `p`.
pub fn transport_config(p: &Path, end: End) -> TransportConfig {
    let send_bps = match end {
        End::Gateway => p.forward_bps,
        End::Terminal => p.return_bps,
    };
    let mut t = TransportConfig::default();
    let (stream_window, conn_window) = windows(p);
    t.stream_receive_window(VarInt::from_u64(stream_window).unwrap_or(VarInt::MAX));
    t.receive_window(VarInt::from_u64(conn_window).unwrap_or(VarInt::MAX));
    t.send_window(conn_window);
    // Only terminals open streams (one per intercepted connection). quinn keeps state for every
    // stream the peer may open, so a terminal allows the gateway none: measured in `satpep
    // sim` with 100 terminals and 20 000 allowed streams, 402 MB of memory against 156 MB.
    let peer_streams = match end {
        End::Gateway => p.max_streams,
        End::Terminal => 0,
    };
    t.max_concurrent_bidi_streams(VarInt::from_u32(peer_streams));
    t.max_concurrent_uni_streams(VarInt::from_u32(0));
    t.initial_rtt(p.rtt);
    // Kept up across idle periods by a PING every second (a restarted gateway answers the
    // next one with a stateless reset, so the terminal notices within about a second plus a
    // round trip); given up after 10 s without a packet from the peer.
    t.keep_alive_interval(Some(Duration::from_secs(1)));
    t.max_idle_timeout(Some(IdleTimeout::from(VarInt::from_u32(10_000))));
    t.initial_mtu(p.mtu.max(1200));
    t.min_mtu(1200);
    t.mtu_discovery_config(None);
    if end == End::Gateway {
        let (threshold, delay) = ack_frequency(p);
        let mut f = AckFrequencyConfig::default();
        f.ack_eliciting_threshold(VarInt::from_u32(threshold - 1));
        f.max_ack_delay(Some(delay));
        f.reordering_threshold(VarInt::from_u32(threshold.max(3)));
        t.ack_frequency_config(Some(f));
    }
    match p.congestion {
        Congestion::Rate => {
            let mut c = SatRateConfig::new(send_bps, p.rtt);
            c.ack_delay = Duration::from_millis(50);
            t.congestion_controller_factory(Arc::new(c));
        }
        Congestion::Probe => {
            t.congestion_controller_factory(Arc::new(SatProbeConfig::new(p.rtt)));
        }
        Congestion::Cubic => {
            t.congestion_controller_factory(Arc::new(CubicConfig::default()));
        }
        Congestion::Bbr => {
            t.congestion_controller_factory(Arc::new(BbrConfig::default()));
        }
        Congestion::NewReno => {
            t.congestion_controller_factory(Arc::new(NewRenoConfig::default()));
        }
    }
    t
}

/// The endpoint's settings: stateless-reset and connection-ID keys derived from `secret` (this
/// end's private key), so a restarted gateway recognises its predecessor's connection IDs and
/// answers their packets with a reset the terminal can verify (RFC 9000, 10.3): the terminal
/// reconnects at once instead of waiting out the idle timeout (about 30 s once PTO backoff
/// stretches it, measured).
pub fn endpoint_config(secret: &[u8]) -> EndpointConfig {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    h.update(b"satpep accel stateless reset v1");
    h.update(secret);
    let digest = h.finalize();
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, &digest);
    let mut c = EndpointConfig::new(Arc::new(key));
    // Connection IDs carry a keyed hash that the endpoint checks before it answers with a
    // reset: the key must survive a restart too, or the successor drops the predecessor's
    // packets silently ("invalid CID") and the terminal waits for its idle timeout.
    let mut cid_key = [0u8; 8];
    cid_key.copy_from_slice(&digest[..8]);
    let cid_key = u64::from_le_bytes(cid_key);
    c.cid_generator(move || Box::new(quinn_proto::HashedConnectionIdGenerator::from_key(cid_key)));
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    fn deploy() -> Path {
        Path {
            forward_bps: 20_000_000,
            return_bps: 2_000_000,
            rtt: Duration::from_millis(600),
            mtu: 1452,
            max_streams: 100,
            congestion: Congestion::Rate,
        }
    }

    #[test]
    fn windows_are_four_and_eight_products_of_the_faster_direction() {
        // 20 Mb/s × 0.6 s = 1.5 MB.
        assert_eq!(windows(&deploy()), (6_000_000, 12_000_000));
        // Tiny paths keep the floors; huge ones the ceilings.
        let slow = Path {
            forward_bps: 64_000,
            return_bps: 64_000,
            ..deploy()
        };
        assert_eq!(windows(&slow), (1 << 20, 4 << 20));
        let fast = Path {
            forward_bps: 10_000_000_000,
            ..deploy()
        };
        assert_eq!(windows(&fast), (48 << 20, 256 << 20));
    }

    #[test]
    fn acks_take_at_most_a_tenth_of_the_return_link() {
        // 20 Mb/s of 1452-byte packets (11 840 bits on the wire): 1 689 packets/s. A tenth of
        // a 2 Mb/s return is 416 ACKs of 480 bits per second: one per ⌈4.05⌉ = 5 packets.
        let (n, delay) = ack_frequency(&deploy());
        assert_eq!(n, 5);
        assert_eq!(delay, Duration::from_millis(25));
        let thin = Path {
            return_bps: 64_000,
            ..deploy()
        };
        let (n, delay) = ack_frequency(&thin);
        // 64 kb/s / 10 / 480 = 13.3 ACKs/s; 1 700 / 13.3 = 128 → 128.
        assert!((125..=131).contains(&n), "{n}");
        assert!(delay > Duration::from_millis(70) && delay < Duration::from_millis(80));
        // Both ends of the clamp.
        let fat = Path {
            return_bps: 1_000_000_000,
            ..deploy()
        };
        assert_eq!(ack_frequency(&fat).0, 2);
        let none = Path {
            return_bps: 1,
            forward_bps: 10_000_000_000,
            ..deploy()
        };
        assert_eq!(ack_frequency(&none).0, 1000);
    }

    /// The settings as quinn prints them (its fields are private; its `Debug` lists them all).
    fn shown(end: End) -> String {
        format!("{:?}", transport_config(&deploy(), end))
    }

    #[test]
    fn the_transport_carries_the_windows_streams_and_ack_frequency_of_each_end() {
        let (gw, term) = (shown(End::Gateway), shown(End::Terminal));
        for t in [&gw, &term] {
            assert!(t.contains("stream_receive_window: 6000000"), "{t}");
            assert!(t.contains("receive_window: 12000000"), "{t}");
            assert!(t.contains("send_window: 12000000"), "{t}");
            assert!(t.contains("max_concurrent_uni_streams: 0"), "{t}");
            assert!(t.contains("initial_mtu: 1452"), "{t}");
            assert!(t.contains("initial_rtt: 600ms"), "{t}");
            assert!(t.contains("keep_alive_interval: Some(1s)"), "{t}");
        }
        // Only the gateway accepts streams, and only it asks for fewer ACKs: one per 5
        // packets (threshold 4 further ack-eliciting packets), reordering threshold 5.
        assert!(gw.contains("max_concurrent_bidi_streams: 100"), "{gw}");
        assert!(term.contains("max_concurrent_bidi_streams: 0"), "{term}");
        assert!(gw.contains("ack_eliciting_threshold: 4"), "{gw}");
        assert!(gw.contains("reordering_threshold: 5"), "{gw}");
        assert!(gw.contains("max_ack_delay: Some(25ms)"), "{gw}");
        assert!(term.contains("ack_frequency_config: None"), "{term}");
    }

    #[test]
    fn the_congestion_names_are_the_configuration_s() {
        #[derive(Deserialize)]
        struct T {
            c: Congestion,
        }
        for (s, c) in [
            ("rate", Congestion::Rate),
            ("probe", Congestion::Probe),
            ("cubic", Congestion::Cubic),
            ("bbr", Congestion::Bbr),
            ("new_reno", Congestion::NewReno),
        ] {
            let t: T = toml::from_str(&format!("c = \"{s}\"")).unwrap();
            assert_eq!(t.c, c);
        }
    }
}
