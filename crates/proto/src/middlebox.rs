//! Middleboxes: mechanisms that sit in a router's forwarding path — the ACK expander and spacer,
//! TCP-SuperCharger, Snoop, split-TCP relays. A router hands every packet it receives to its
//! middlebox (after the TTL decrement) and routes whatever the middlebox transmits by destination
//! address, so a middlebox never needs to know the topology; `Transmit::port` from a middlebox is
//! ignored. The port a packet arrives on numbers the router's incoming links from 0 in scenario
//! order, so a middlebox can tell, e.g., the satellite side from the terrestrial side.
//!
//! A scenario selects one with `middlebox = { kind = "…", … }` on a `kind = "router"` node.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

use crate::auth::Trust;
use crate::rand::Rng;
use crate::{Instant, Node, Packet, PortId, Transmit};

/// Which middlebox, with its settings.
#[derive(Clone, Debug, Deserialize, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
#[non_exhaustive]
pub enum MiddleboxConfig {
    /// Forwards every packet unchanged, at once: the identity, for checking the hook itself.
    PassThrough,
    /// TCP-SuperCharger (Lee, Yum & Wan): forecasts the receiver's buffer and advertises a
    /// virtual window to the sender; see [`crate::supercharger`].
    Supercharger(crate::supercharger::SuperChargerConfig),
    /// Split-TCP relay: terminates the opener's connection and carries the data on a second one;
    /// see [`crate::pep::SplitRelay`].
    SplitTcp(Box<crate::pep::SplitConfig>),
    /// Snoop: caches data toward the satellite side and retransmits locally; see
    /// [`crate::snoop`].
    Snoop(crate::snoop::SnoopConfig),
    /// Delayed duplicate ACKs at the receiver side; see [`crate::dupack_delay`].
    DupackDelay(crate::dupack_delay::DupAckDelayConfig),
    /// TCP spoofing as in the DirecPC hybrid gateway (connection control blocks); see
    /// [`crate::pep::spoof`].
    Spoof(crate::pep::SpoofConfig),
    /// IP-in-IP tunnel endpoint with port-based path selection; see [`crate::tunnel`].
    IpipTunnel(crate::tunnel::TunnelConfig),
    /// Several middleboxes in order; see [`crate::chain`].
    Chain {
        /// The elements, first to last.
        elements: Vec<Self>,
    },
    /// Stateless ACK expander with optional ACK spacing (Samaraweera 1999 §6–7), at the hub;
    /// see [`crate::ack::AckExpander`].
    AckExpander(crate::ack::AckExpanderConfig),
    /// One end (terminal or gateway) of the accelerated PEP: TCP terminated locally, carried
    /// over one QUIC connection per terminal; see [`crate::accel::pep`].
    Accel(Box<crate::accel::pep::AccelPepConfig>),
}

impl MiddleboxConfig {
    /// Whether this middlebox is, or chains, a split-TCP relay (whose second legs the
    /// recorders report).
    pub fn has_split_tcp(&self) -> bool {
        match self {
            Self::SplitTcp(_) => true,
            Self::Chain { elements } => elements.iter().any(Self::has_split_tcp),
            _ => false,
        }
    }

    /// Whether this middlebox is, or chains, an end of the simulated accelerated PEP (whose TLS
    /// identities are the public [`crate::accel::tls::SIMULATION`] pair: a daemon must refuse
    /// it and run `[split] engine = "accel"` with its own certificates).
    pub fn has_accel(&self) -> bool {
        match self {
            Self::Accel(_) => true,
            Self::Chain { elements } => elements.iter().any(Self::has_accel),
            _ => false,
        }
    }

    /// Every arrival port this middlebox is configured to act on, with its key (`satellite_port`,
    /// `elements.1.port`, …), defaults included. A driver checks them against the ports it
    /// has: a port nothing arrives on silently turns the mechanism into something else (Snoop
    /// whose ACKs never come from `satellite_port` caches everything and repairs nothing).
    pub fn arrival_ports(&self) -> Vec<(String, u16)> {
        let one = |k: &str, p: u16| vec![(k.to_owned(), p)];
        match self {
            Self::PassThrough | Self::SplitTcp(_) | Self::Accel(_) => Vec::new(),
            Self::Supercharger(c) => one("satellite_port", c.satellite_port),
            Self::Snoop(c) => one("satellite_port", c.satellite_port),
            Self::DupackDelay(c) => c.port.map_or_else(Vec::new, |p| one("port", p)),
            Self::Spoof(c) => one("internet_port", c.internet_port),
            Self::IpipTunnel(c) => c
                .arrival_port
                .map_or_else(Vec::new, |p| one("arrival_port", p)),
            Self::AckExpander(c) => c
                .return_port
                .map_or_else(Vec::new, |p| one("return_port", p)),
            Self::Chain { elements } => elements
                .iter()
                .enumerate()
                .flat_map(|(i, e)| {
                    e.arrival_ports()
                        .into_iter()
                        .map(move |(k, p)| (format!("elements.{i}.{k}"), p))
                })
                .collect(),
        }
    }

    /// Every tunnel end in this middlebox (an `ipip_tunnel`, an `ack_expander`), with its key
    /// path (`""` for the middlebox itself, `elements.1` in a chain), its kind and whether it
    /// authenticates what it opens. A driver on a real network refuses [`Trust::Unkeyed`].
    pub fn tunnel_ends(&self) -> Vec<(String, &'static str, Trust)> {
        match self {
            Self::IpipTunnel(c) => vec![(
                String::new(),
                "ipip_tunnel",
                Trust::of(c.key.as_ref(), c.insecure),
            )],
            Self::AckExpander(c) => vec![(
                String::new(),
                "ack_expander",
                Trust::of(c.key.as_ref(), c.insecure),
            )],
            Self::Chain { elements } => elements
                .iter()
                .enumerate()
                .flat_map(|(i, e)| {
                    e.tunnel_ends().into_iter().map(move |(k, kind, t)| {
                        let k = if k.is_empty() {
                            format!("elements.{i}")
                        } else {
                            format!("elements.{i}.{k}")
                        };
                        (k, kind, t)
                    })
                })
                .collect(),
            _ => Vec::new(),
        }
    }

    /// Check values a scenario file could get wrong; the message starts with the key.
    pub fn validate(&self) -> Result<(), String> {
        match self {
            Self::PassThrough => Ok(()),
            Self::Supercharger(c) => c.validate(),
            Self::SplitTcp(c) => c.validate(),
            Self::Snoop(c) => c.validate(),
            Self::DupackDelay(c) => c.validate(),
            Self::Spoof(c) => c.validate(),
            Self::IpipTunnel(c) => c.validate(),
            Self::Chain { elements } => elements
                .iter()
                .enumerate()
                .try_for_each(|(i, e)| e.validate().map_err(|m| format!("elements.{i}.{m}"))),
            Self::AckExpander(c) => c.validate(),
            Self::Accel(c) => c.validate(),
        }
    }
}

/// The in-tree middleboxes (enum dispatch, as for congestion control).
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum Middlebox {
    /// See [`MiddleboxConfig::PassThrough`].
    PassThrough(PassThrough),
    /// See [`MiddleboxConfig::Supercharger`].
    Supercharger(Box<crate::supercharger::SuperCharger>),
    /// See [`MiddleboxConfig::SplitTcp`].
    SplitTcp(Box<crate::pep::SplitRelay>),
    /// See [`MiddleboxConfig::Snoop`].
    Snoop(Box<crate::snoop::Snoop>),
    /// See [`MiddleboxConfig::DupackDelay`].
    DupackDelay(Box<crate::dupack_delay::DupAckDelay>),
    /// See [`MiddleboxConfig::Spoof`].
    Spoof(Box<crate::pep::SpoofGateway>),
    /// See [`MiddleboxConfig::IpipTunnel`].
    IpipTunnel(Box<crate::tunnel::Tunnel>),
    /// See [`MiddleboxConfig::Chain`].
    Chain(Box<crate::chain::Chain>),
    /// See [`MiddleboxConfig::AckExpander`].
    AckExpander(Box<crate::ack::AckExpander>),
    /// See [`MiddleboxConfig::Accel`].
    Accel(Box<crate::accel::pep::AccelPep>),
}

impl Middlebox {
    /// Build the middlebox `config` asks for; `rng` is its own seeded generator.
    pub fn new(config: &MiddleboxConfig, rng: Rng) -> Self {
        match config {
            MiddleboxConfig::PassThrough => Self::PassThrough(PassThrough::default()),
            MiddleboxConfig::Supercharger(c) => {
                Self::Supercharger(Box::new(crate::supercharger::SuperCharger::new(c.clone())))
            }
            MiddleboxConfig::SplitTcp(c) => {
                Self::SplitTcp(Box::new(crate::pep::SplitRelay::new((**c).clone())))
            }
            MiddleboxConfig::Snoop(c) => Self::Snoop(Box::new(crate::snoop::Snoop::new(c.clone()))),
            MiddleboxConfig::DupackDelay(c) => {
                Self::DupackDelay(Box::new(crate::dupack_delay::DupAckDelay::new(c.clone())))
            }
            MiddleboxConfig::Spoof(c) => {
                Self::Spoof(Box::new(crate::pep::SpoofGateway::new(c.clone())))
            }
            MiddleboxConfig::IpipTunnel(c) => {
                Self::IpipTunnel(Box::new(crate::tunnel::Tunnel::new(c.clone())))
            }
            MiddleboxConfig::Chain { elements } => {
                Self::Chain(Box::new(crate::chain::Chain::new(elements, rng)))
            }
            MiddleboxConfig::AckExpander(c) => {
                Self::AckExpander(Box::new(crate::ack::AckExpander::new(c)))
            }
            MiddleboxConfig::Accel(c) => {
                let mut rng = rng;
                Self::Accel(Box::new(crate::accel::pep::AccelPep::new(
                    (**c).clone(),
                    rng.next_u64(),
                )))
            }
        }
    }
}

impl Middlebox {
    /// Number what a keyed tunnel endpoint (alone or in a chain) authenticates from
    /// `epoch · 2³² + 1` ([`crate::auth`]): a daemon passes e.g. its start time in seconds since
    /// 1970, larger at every restart. Other middleboxes, and unkeyed tunnels, are unchanged.
    pub fn with_epoch(mut self, epoch: u32) -> Self {
        self.set_epoch(epoch);
        self
    }

    fn set_epoch(&mut self, epoch: u32) {
        match self {
            Self::IpipTunnel(t) => t.set_epoch(epoch),
            Self::Chain(c) => c.elements_mut().iter_mut().for_each(|e| e.set_epoch(epoch)),
            _ => {}
        }
    }
}

/// `[("field", stats.field), …]` for a counter struct whose fields are all `u64`.
macro_rules! counters {
    ($s:expr; $($f:ident),+ $(,)?) => {{
        let s = $s;
        vec![$((stringify!($f), s.$f)),+]
    }};
}

impl Middlebox {
    /// The scenario `kind` of this middlebox (`"ipip_tunnel"`, `"chain"`, …).
    pub fn kind(&self) -> &'static str {
        match self {
            Self::PassThrough(_) => "pass_through",
            Self::Supercharger(_) => "supercharger",
            Self::SplitTcp(_) => "split_tcp",
            Self::Snoop(_) => "snoop",
            Self::DupackDelay(_) => "dupack_delay",
            Self::Spoof(_) => "spoof",
            Self::IpipTunnel(_) => "ipip_tunnel",
            Self::Chain(_) => "chain",
            Self::AckExpander(_) => "ack_expander",
            Self::Accel(_) => "accel",
        }
    }

    /// Every counter of this middlebox, named as the fields of its stats struct, in field
    /// order; a chain's are its elements' as `<index>.<kind>.<name>`. What summary.json's
    /// `middleboxes` section reports. Call any time; the values only grow, except gauges named
    /// `buffer_bytes` and `embryonic` (split relay, now).
    pub fn counters(&self) -> Vec<(String, u64)> {
        let own: Vec<(&'static str, u64)> = match self {
            Self::PassThrough(_) => Vec::new(),
            Self::Supercharger(m) => counters!(m.stats();
                flows_managed, flows_refused, flows_idle_expired, passed_other, segments_held, segments_released,
                retransmissions_passed, duplicates_dropped, buffer_drops, windows_rewritten,
                wscale_rewritten, wscale_added, wscale_no_room, sender_windows_rewritten,
                max_held_bytes),
            Self::SplitTcp(m) => counters!(m.stats();
                flows_split, unsplit_over_limit, unsplit_embryonic, flows_aborted,
                handshakes_failed, flows_reaped, resets_ignored, embryonic, passed_through,
                buffer_bytes, max_buffer_bytes, max_flow_buffer_bytes, unsendable),
            Self::Snoop(m) => counters!(m.stats();
                local_rtx_dupack, local_rtx_timeout, dupacks_suppressed, dupacks_forwarded,
                sender_rtx, cache_full, flows_refused, flows_idle_expired),
            Self::DupackDelay(m) => counters!(m.stats();
                held, released, dropped, flows_refused, flows_idle_expired),
            Self::Spoof(m) => counters!(m.stats();
                ccbs_allocated, ccbs_closed, ccbs_reset, resets_kept, ccbs_idle_freed, aborts,
                bytes_lost_on_abort, spoofed_acks, acks_consumed, retransmissions,
                window_probes, segments_sent, over_limit, buffer_full_drops),
            Self::IpipTunnel(m) => counters!(m.stats();
                encapsulated, decapsulated, not_from_peer, malformed_outer, inner_malformed,
                too_long, mss_clamped),
            Self::AckExpander(m) => counters!(m.stats();
                decapsulated, compacted, regenerated, unknown_source, malformed, spaced_normal,
                clipped, spacing_flows_refused, spacing_queue_drops),
            Self::Accel(m) => {
                let s = m.stats();
                let mut v = counters!(s;
                    connections, open, bytes_up, bytes_down, quic_connections, quic_lost,
                    quic_sent, quic_received, unaccelerated, passed_through, malformed);
                use crate::accel::header::Reset;
                for (name, r) in [
                    ("resets_reset", Reset::Reset),
                    ("resets_refused", Reset::Refused),
                    ("resets_timed_out", Reset::TimedOut),
                    ("resets_not_allowed", Reset::NotAllowed),
                    ("resets_over_limit", Reset::OverLimit),
                    ("resets_bad_header", Reset::BadHeader),
                ] {
                    v.push((name, s.resets[r as usize]));
                }
                v
            }
            Self::Chain(c) => {
                return c
                    .elements()
                    .iter()
                    .enumerate()
                    .flat_map(|(i, e)| {
                        let kind = e.kind();
                        e.counters()
                            .into_iter()
                            .map(move |(name, v)| (format!("{i}.{kind}.{name}"), v))
                    })
                    .collect();
            }
        };
        // Authentication counters only when keyed, so unkeyed runs report what they did before.
        let auth = match self {
            Self::IpipTunnel(m) => m.auth_stats(),
            Self::AckExpander(m) => m.auth_stats(),
            _ => None,
        };
        own.into_iter()
            .chain(auth.iter().flat_map(|a| a.counters()))
            .map(|(k, v)| (k.to_owned(), v))
            .collect()
    }
}

impl Middlebox {
    /// The split-TCP relays in this middlebox: itself, or the elements of a chain.
    pub fn split_relays(&self) -> Vec<&crate::pep::SplitRelay> {
        match self {
            Self::SplitTcp(r) => vec![r],
            Self::Chain(c) => c.elements().iter().flat_map(Self::split_relays).collect(),
            _ => Vec::new(),
        }
    }

    /// Keep split connections' open/end events (a daemon's connection log), in every split
    /// relay of this middlebox.
    pub fn record_split_events(&mut self) {
        match self {
            Self::SplitTcp(r) => r.record_events(crate::pep::SPLIT_EVENT_CAP),
            Self::Chain(c) => c
                .elements_mut()
                .iter_mut()
                .for_each(Self::record_split_events),
            _ => {}
        }
    }

    /// The next split-connection event, from the first relay that has one.
    pub fn poll_split_event(&mut self) -> Option<crate::pep::SplitEvent> {
        match self {
            Self::SplitTcp(r) => r.poll_event(),
            Self::Chain(c) => c.elements_mut().iter_mut().find_map(Self::poll_split_event),
            _ => None,
        }
    }

    /// Connections held in a connection table now (split flows, spoofing CCBs; summed over a
    /// chain), or `None` for a middlebox that keeps none. What a leak check reads after a run.
    pub fn open_connections(&self) -> Option<u64> {
        match self {
            Self::SplitTcp(m) => Some(m.connections() as u64),
            Self::Spoof(m) => Some(m.ccb_count() as u64),
            Self::Accel(m) => Some(m.stats().open),
            Self::Chain(c) => c
                .elements()
                .iter()
                .filter_map(Self::open_connections)
                .reduce(|a, b| a + b),
            _ => None,
        }
    }
}

/// `$body` with `$m` bound to the mechanism inside whichever variant `$self` is: the one place
/// the per-packet dispatch lists the variants (a variant missing here fails to compile).
macro_rules! dispatch {
    ($self:expr, $m:ident => $body:expr) => {
        match $self {
            Middlebox::PassThrough($m) => $body,
            Middlebox::Supercharger($m) => $body,
            Middlebox::SplitTcp($m) => $body,
            Middlebox::Snoop($m) => $body,
            Middlebox::DupackDelay($m) => $body,
            Middlebox::Spoof($m) => $body,
            Middlebox::IpipTunnel($m) => $body,
            Middlebox::Chain($m) => $body,
            Middlebox::AckExpander($m) => $body,
            Middlebox::Accel($m) => $body,
        }
    };
}

impl Node for Middlebox {
    fn handle_packet(&mut self, now: Instant, port: PortId, pkt: Packet) {
        dispatch!(self, m => m.handle_packet(now, port, pkt));
    }
    fn handle_timeout(&mut self, now: Instant) {
        dispatch!(self, m => m.handle_timeout(now));
    }
    fn poll_transmit(&mut self, now: Instant) -> Option<Transmit> {
        dispatch!(self, m => m.poll_transmit(now))
    }
    fn poll_timeout(&self) -> Option<Instant> {
        dispatch!(self, m => m.poll_timeout())
    }
}

/// The identity middlebox.
#[derive(Clone, Debug, Default)]
pub struct PassThrough {
    out: VecDeque<Packet>,
}

impl Node for PassThrough {
    fn handle_packet(&mut self, _now: Instant, _port: PortId, pkt: Packet) {
        self.out.push_back(pkt);
    }
    fn handle_timeout(&mut self, _now: Instant) {}
    fn poll_transmit(&mut self, _now: Instant) -> Option<Transmit> {
        self.out.pop_front().map(|pkt| Transmit {
            port: PortId(0),
            pkt,
        })
    }
    fn poll_timeout(&self) -> Option<Instant> {
        None
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::net::Ipv4Addr;

    use super::*;

    /// The field names of `stats` as serde sees them (sorted): what `counters` must list.
    fn fields(stats: impl Serialize) -> Vec<String> {
        match serde_json::to_value(stats) {
            Ok(serde_json::Value::Object(m)) => m.keys().cloned().collect(),
            other => panic!("not a struct: {other:?}"),
        }
    }

    fn sorted_names(m: &Middlebox) -> Vec<String> {
        let mut v: Vec<String> = m.counters().into_iter().map(|(k, _)| k).collect();
        v.sort();
        v
    }

    fn build(toml: &str) -> Middlebox {
        let c: MiddleboxConfig = toml::from_str(toml).expect("config");
        Middlebox::new(&c, Rng::new(1, 2))
    }

    /// Every middlebox lists every field of its stats struct (a field added later without a
    /// line in `counters` fails here), and its kind is the scenario's.
    #[test]
    fn counters_list_every_stats_field_and_kind_matches_the_config() {
        let cases = [
            "kind = \"pass_through\"",
            "kind = \"supercharger\"",
            "kind = \"split_tcp\"",
            "kind = \"snoop\"",
            "kind = \"dupack_delay\"",
            "kind = \"spoof\"",
            "kind = \"ipip_tunnel\"\nlocal = \"1.1.1.1\"\nremote = \"2.2.2.2\"",
            "kind = \"ack_expander\"\ncompactors = [\"3.3.3.3\"]",
            "kind = \"chain\"\nelements = []",
            "kind = \"accel\"\nrole = \"gateway\"\naddress = \"1.1.1.1\"\nforward = \"20Mbps\"\nreturn = \"2Mbps\"\nrtt = \"600ms\"",
        ];
        for toml in cases {
            let m = build(toml);
            assert!(toml.contains(&format!("\"{}\"", m.kind())), "{toml}");
            let expect = match &m {
                Middlebox::PassThrough(_) | Middlebox::Chain(_) => Vec::new(),
                Middlebox::Supercharger(x) => fields(x.stats()),
                Middlebox::SplitTcp(x) => fields(x.stats()),
                Middlebox::Snoop(x) => fields(x.stats()),
                Middlebox::DupackDelay(x) => fields(x.stats()),
                Middlebox::Spoof(x) => fields(x.stats()),
                Middlebox::IpipTunnel(x) => fields(x.stats()),
                Middlebox::AckExpander(x) => fields(x.stats()),
                Middlebox::Accel(x) => {
                    let mut f = fields(x.stats());
                    f.extend(
                        crate::accel::header::Reset::ALL.map(|r| format!("resets_{}", r.name())),
                    );
                    f.sort();
                    f
                }
            };
            assert_eq!(sorted_names(&m), expect, "{toml}");
        }
    }

    /// With a key, the tunnel and the expander also list every authentication counter (after
    /// their own); a packet sealed with another key shows up as `bad_mac`.
    #[test]
    fn keyed_middleboxes_list_the_authentication_counters() {
        let key = "key = \"hex:00112233445566778899aabbccddeeff\"";
        let auth = fields(crate::auth::AuthStats::default());
        for toml in [
            format!("kind = \"ipip_tunnel\"\nlocal = \"1.1.1.1\"\nremote = \"2.2.2.2\"\n{key}"),
            format!("kind = \"ack_expander\"\ncompactors = [\"2.2.2.2\"]\n{key}"),
        ] {
            let mut m = build(&toml);
            let mut expect = match &m {
                Middlebox::IpipTunnel(x) => fields(x.stats()),
                Middlebox::AckExpander(x) => fields(x.stats()),
                _ => panic!("{toml}"),
            };
            let own = expect.len();
            expect.extend(auth.iter().cloned());
            expect.sort();
            assert_eq!(sorted_names(&m), expect, "{toml}");
            let names: Vec<String> = m.counters().into_iter().map(|(k, _)| k).collect();
            assert_eq!(
                names[own], "sealed",
                "auth counters come after the own ones"
            );
            // 2.2.2.2 → 1.1.1.1 sealed with another key.
            let other = crate::auth::TunnelKey::from_bytes(&[9; 16]).expect("16 bytes");
            let mut h = [0u8; 60];
            h[20..40].copy_from_slice(&[
                0x45, 0, 0, 40, 0, 0, 0, 0, 64, 17, 0, 0, 3, 3, 3, 3, 4, 4, 4, 4,
            ]);
            let c = crate::wire::checksum::finish(crate::wire::checksum::sum(0, &h[20..40]));
            h[30..32].copy_from_slice(&c.to_be_bytes());
            crate::wire::ipip::write_outer_header(
                &mut h,
                60,
                0,
                1,
                Ipv4Addr::new(2, 2, 2, 2),
                Ipv4Addr::new(1, 1, 1, 1),
            );
            let sealed = crate::auth::Sealer::new(&other, 300)
                .seal(Packet::new(&h, 0))
                .expect("fits");
            m.handle_packet(Instant::ZERO, PortId(0), sealed);
            assert!(m.poll_transmit(Instant::ZERO).is_none());
            let c: BTreeMap<String, u64> = m.counters().into_iter().collect();
            assert_eq!(c.get("bad_mac"), Some(&1), "{toml}");
        }
    }

    /// The epoch a daemon passes reaches a keyed tunnel alone and inside a chain (the SPI of
    /// what it seals), and a keyed compaction queue built from a link's settings.
    #[test]
    fn epoch_reaches_keyed_tunnels_and_queues() {
        let tunnel = "{ kind = \"ipip_tunnel\", local = \"1.1.1.1\", remote = \"2.2.2.2\", \
                      key = \"hex:00112233445566778899aabbccddeeff\" }";
        for (toml, epoch) in [
            (
                format!("kind = \"chain\"\nelements = [{tunnel}]"),
                1_700_000_000u32,
            ),
            (
                tunnel.trim_matches(['{', '}', ' ']).replace(", ", "\n"),
                300,
            ),
        ] {
            let mut m = build(&toml).with_epoch(epoch);
            let mut h = [0u8; 40];
            h[..20].copy_from_slice(&[
                0x45, 0, 0, 40, 0, 0, 0, 0, 64, 17, 0, 0, 3, 3, 3, 3, 4, 4, 4, 4,
            ]);
            m.handle_packet(Instant::ZERO, PortId(0), Packet::new(&h[..20], 20));
            let out = m.poll_transmit(Instant::ZERO).expect("sealed").pkt;
            assert_eq!(out.header()[9], crate::auth::IPPROTO_AH, "{toml}");
            assert_eq!(&out.header()[24..28], &epoch.to_be_bytes(), "{toml}");
        }
        let q: crate::link::QueueConfig = toml::from_str(
            "kind = \"ack_compaction\"\nlimit_packets = 100\n[ack]\ntunnel_src = \"1.1.1.1\"\n\
             tunnel_dst = \"2.2.2.2\"\nkey = \"hex:00112233445566778899aabbccddeeff\"",
        )
        .expect("queue");
        let crate::link::AnyQueue::Ack(q) = crate::link::AnyQueue::from_config(&q).with_epoch(777)
        else {
            panic!("not an ACK queue");
        };
        let crate::link::AnyQueue::Ack(plain) = crate::link::AnyQueue::from_config(
            &toml::from_str("kind = \"ack_filtering\"").expect("queue"),
        )
        .with_epoch(777) else {
            panic!("not an ACK queue");
        };
        assert_eq!(plain.mode(), crate::ack::AckMode::Filtering);
        assert_eq!(q.mode(), crate::ack::AckMode::Compaction);
        assert_eq!(q.next_sequence(), Some(777 << 32 | 1));
    }

    /// Split-connection events reach the caller from a split relay alone or inside a chain,
    /// and only once asked for (`record_split_events`).
    #[test]
    fn split_events_come_out_of_a_relay_in_a_chain_once_recorded() {
        use crate::pep::SplitEvent;
        use crate::wire::{emit_ipv4_tcp, Ipv4Repr, TcpFlags, TcpRepr, IPPROTO_TCP};
        let (a, b) = (Ipv4Addr::new(10, 0, 1, 2), Ipv4Addr::new(10, 0, 2, 2));
        let syn = || {
            let ip = Ipv4Repr {
                src: a,
                dst: b,
                protocol: IPPROTO_TCP,
                ttl: 64,
                ident: 0,
                dscp_ecn: 0,
                payload_len: 0,
            };
            let seg = TcpRepr {
                src_port: 40000,
                dst_port: 80,
                seq: crate::wire::SeqNumber(1000),
                flags: TcpFlags::SYN,
                window: 65535,
                mss: Some(1460),
                ..TcpRepr::default()
            };
            Packet::build(0, |buf| emit_ipv4_tcp(&ip, &seg, buf))
        };
        for toml in [
            "kind = \"split_tcp\"",
            "kind = \"chain\"\nelements = [{ kind = \"pass_through\" }, { kind = \"split_tcp\" }]",
        ] {
            let mut quiet = build(toml);
            quiet.handle_packet(Instant::ZERO, PortId(0), syn());
            assert_eq!(quiet.poll_split_event(), None, "{toml}: not recording");
            let mut m = build(toml);
            m.record_split_events();
            m.handle_packet(Instant::ZERO, PortId(0), syn());
            assert_eq!(
                m.poll_split_event(),
                Some(SplitEvent::Split {
                    at: Instant::ZERO,
                    opener: (a, 40000),
                    listener: (b, 80)
                }),
                "{toml}"
            );
            assert_eq!(m.poll_split_event(), None);
        }
        assert_eq!(build("kind = \"snoop\"").poll_split_event(), None);
    }

    /// A chain reports each element's counters under `<index>.<kind>.`, with their values.
    #[test]
    fn chain_counters_are_prefixed_by_element() {
        let mut m = build(
            "kind = \"chain\"\nelements = [\n\
             { kind = \"ipip_tunnel\", local = \"10.0.1.1\", remote = \"10.0.2.1\" },\n\
             { kind = \"dupack_delay\" },\n]",
        );
        // A tunnel packet to 10.0.1.1 from a stranger: one not_from_peer.
        let mut h = [0u8; 60];
        crate::wire::ipip::write_outer_header(
            &mut h,
            60,
            0,
            1,
            Ipv4Addr::new(9, 9, 9, 9),
            Ipv4Addr::new(10, 0, 1, 1),
        );
        m.handle_packet(Instant::ZERO, PortId(0), Packet::new(&h, 0));
        let c = m.counters();
        assert_eq!(c.len(), 7 + 5);
        assert_eq!(c[0], ("0.ipip_tunnel.encapsulated".to_owned(), 0));
        assert_eq!(c[2], ("0.ipip_tunnel.not_from_peer".to_owned(), 1));
        assert_eq!(c[6], ("0.ipip_tunnel.mss_clamped".to_owned(), 0));
        assert_eq!(c[9], ("1.dupack_delay.dropped".to_owned(), 0));
        assert_eq!(m.kind(), "chain");
        assert!(build("kind = \"pass_through\"").counters().is_empty());
    }
}
