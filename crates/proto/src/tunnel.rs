//! IP-in-IP tunnel endpoint with port-based path selection (RFC 2003; Arora et al.'s DirecPC
//! hybrid terminal and gateway).
//!
//! Static routes follow the destination address only. To send some traffic over another path
//! (the terminal's upstream over the dial-up, or telnet over the modem both ways while HTTP
//! comes by satellite), the endpoint *encapsulates* the selected packets to the tunnel's far
//! end, whose address is routed over that path; the far end *decapsulates* and forwards the
//! inner packet by its own destination. Selection: packets arriving on `arrival_port` (any when
//! unset) whose TCP source or destination port is in `ports` (any when empty). Packets that are
//! neither selected nor addressed to us pass unchanged.
//!
//! Decapsulation is fail-closed: an IP-in-IP packet to `local` is opened only when its outer
//! header is valid (IPv4 without options, not a fragment, checksum and lengths right), its outer
//! source is `remote` or one of `peers`, and the inner datagram has a valid IPv4 header whose
//! total length fills the outer payload exactly. Everything else to `local` is dropped and
//! counted by reason ([`TunnelStats`]); no input panics (fuzzed by `fuzz/fuzz_targets/tunnel.rs`,
//! docs/robustness.md). RFC 2003 §3 leaves source checks to the decapsulator; RFC 6169 §3.5 and
//! RFC 2003's security section warn that an open decapsulator lets anyone inject packets with
//! spoofed inner addresses. Not modelled: ICMP errors back to the encapsulator.
//!
//! With a `key`, every packet this endpoint encapsulates carries an IP Authentication Header
//! (protocol 51, HMAC-SHA-256-128, [`crate::auth`]), and a tunnel packet to `local` is opened
//! only after its outer source is a peer, its sequence number is not replayed and its ICV
//! verifies; a plain IP-in-IP packet to `local` is then refused (`unauthenticated`). The
//! sender's epoch (high half of the 64-bit sequence number) is [`Tunnel::with_epoch`]'s.
//! Without a key, behaviour and bytes are as before, and AH packets are forwarded untouched.

use std::collections::VecDeque;
use std::net::Ipv4Addr;

use serde::{Deserialize, Serialize};

use crate::auth::{
    AuthError, AuthStats, Opener, Sealer, Trust, TunnelKey, AH_LEN, FIRST_EPOCH, IPPROTO_AH,
};
use crate::node::MAX_HEADER;
use crate::wire::{checksum, ipip, TcpFlags, TcpIpv4View, IPPROTO_IPIP, IPPROTO_TCP};
use crate::{Instant, Node, Packet, PortId, Transmit};

/// Settings (`middlebox = { kind = "ipip_tunnel", … }`).
#[derive(Clone, Debug, Deserialize, PartialEq, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TunnelConfig {
    /// Our tunnel address: outer source of what we encapsulate; outer packets to it are opened.
    pub local: Ipv4Addr,
    /// The far end: outer destination of what we encapsulate, and an accepted outer source of
    /// what we open.
    pub remote: Ipv4Addr,
    /// Further outer source addresses whose tunnel packets are opened (e.g. several terminals
    /// tunnelling to one gateway). Default: none, so only `remote` is accepted.
    #[serde(default)]
    pub peers: Vec<Ipv4Addr>,
    /// Encapsulate only packets arriving on this port (e.g. from the hybrid host's LAN).
    #[serde(default)]
    pub arrival_port: Option<u16>,
    /// Encapsulate only TCP packets with a source or destination port in this list; empty: all.
    #[serde(default)]
    pub ports: Vec<u16>,
    /// Authenticate the tunnel with this key (`"hex:"` and 32 to 128 hex digits, 16 to 64
    /// bytes; both ends the same): see the module doc. Default: none (plain IP-in-IP).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<TunnelKey>,
    /// Run without `key` on purpose: the tunnel then opens any IP-in-IP packet whose outer
    /// source is `remote` or a peer, an address anyone on the path can forge. The daemons
    /// refuse a tunnel with neither (see [`Trust`]); a scenario needs neither. Default: false.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub insecure: bool,
    /// The MTU of the path tunnel packets take (e.g. 1500). With it, the MSS option of every
    /// SYN and SYN-ACK this endpoint handles for the selected ports (encapsulated, opened or
    /// passing) is lowered to what fits once encapsulated: MTU − 20 (outer header) − 28 (AH,
    /// when keyed) − 40. Without it, a full-sized segment grows past the MTU when encapsulated
    /// and, sent with DF as RFC 2003 §3.1 asks, is lost on a real path. Default: none (the
    /// simulator's links have no MTU).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mtu: Option<u16>,
}

impl TunnelConfig {
    /// Check values a scenario could get wrong; the message starts with the key.
    pub fn validate(&self) -> Result<(), String> {
        Trust::validate(self.key.as_ref(), self.insecure)?;
        if self.local == self.remote {
            return Err("remote: must differ from `local`".into());
        }
        if self.peers.contains(&self.local) {
            return Err("peers: must not list `local`".into());
        }
        if let Some(mtu) = self.mtu {
            let least = 576 + self.overhead();
            if mtu < least {
                return Err(format!(
                    "mtu: {mtu} leaves no room for a 536-byte segment once encapsulated (at least {least})"
                ));
            }
        }
        Ok(())
    }

    /// Bytes encapsulation adds: the outer header, and the AH when keyed.
    pub fn overhead(&self) -> u16 {
        (OUTER + if self.key.is_some() { AH_LEN } else { 0 }) as u16
    }

    /// The largest MSS a SYN may announce for segments to fit the `mtu` once encapsulated.
    pub fn mss_clamp(&self) -> Option<u16> {
        self.mtu.map(|m| m.saturating_sub(self.overhead() + 40))
    }

    /// Whether tunnel packets from outer source `src` may be opened.
    pub fn is_peer(&self, src: Ipv4Addr) -> bool {
        src == self.remote || self.peers.contains(&src)
    }
}

/// Counters.
#[derive(Clone, Copy, Debug, Default, Eq, PartialEq, Serialize)]
pub struct TunnelStats {
    /// Packets encapsulated.
    pub encapsulated: u64,
    /// Packets decapsulated.
    pub decapsulated: u64,
    /// IP-in-IP packets to `local` with a valid outer header from a source that is neither
    /// `remote` nor in `peers` (dropped): forged or misrouted.
    pub not_from_peer: u64,
    /// IP-in-IP packets to `local` whose outer header is invalid: options, fragment, checksum,
    /// or a total length that disagrees with the packet (dropped).
    pub malformed_outer: u64,
    /// Tunnel packets from a peer whose inner datagram is not a valid IPv4 header, or whose
    /// length does not fill the outer payload exactly (dropped).
    pub inner_malformed: u64,
    /// Packets too long to encapsulate (header room, with the AH when keyed), passed unchanged.
    pub too_long: u64,
    /// SYN and SYN-ACK segments whose MSS option was lowered to fit the `mtu`.
    pub mss_clamped: u64,
}

/// The tunnel endpoint.
#[derive(Clone, Debug)]
pub struct Tunnel {
    config: TunnelConfig,
    out: VecDeque<Packet>,
    stats: TunnelStats,
    ident: u16,
    /// With a key: the sending and receiving halves, and their counters.
    auth: Option<Box<Auth>>,
}

/// A keyed tunnel's authentication state.
#[derive(Clone, Debug)]
struct Auth {
    sealer: Sealer,
    opener: Opener,
    stats: AuthStats,
}

const OUTER: usize = 20;

impl Tunnel {
    /// A tunnel endpoint; with a key, its sender starts in epoch [`FIRST_EPOCH`] (the
    /// simulator's choice; a daemon calls [`with_epoch`](Self::with_epoch)).
    pub fn new(config: TunnelConfig) -> Self {
        let auth = config.key.as_ref().map(|k| {
            Box::new(Auth {
                sealer: Sealer::new(k, FIRST_EPOCH),
                opener: Opener::new(k),
                stats: AuthStats::default(),
            })
        });
        Self {
            config,
            out: VecDeque::new(),
            stats: TunnelStats::default(),
            ident: 0,
            auth,
        }
    }

    /// Number what this endpoint seals from `epoch · 2³² + 1` (see [`crate::auth`]): a daemon
    /// passes e.g. its start time in seconds since 1970, larger at every restart. No effect
    /// without a key.
    pub fn with_epoch(mut self, epoch: u32) -> Self {
        self.set_epoch(epoch);
        self
    }

    /// [`with_epoch`](Self::with_epoch) on an endpoint already built; numbering restarts at
    /// `epoch · 2³² + 1`.
    pub fn set_epoch(&mut self, epoch: u32) {
        if let (Some(a), Some(k)) = (self.auth.as_mut(), self.config.key.as_ref()) {
            a.sealer = Sealer::new(k, epoch);
        }
    }

    /// Counters.
    pub fn stats(&self) -> TunnelStats {
        self.stats
    }

    /// Authentication counters, when the tunnel has a key.
    pub fn auth_stats(&self) -> Option<AuthStats> {
        self.auth.as_ref().map(|a| a.stats)
    }

    /// The receiving half (replay windows; [`Opener::set_floor`] after a restart), when keyed.
    pub fn opener_mut(&mut self) -> Option<&mut Opener> {
        self.auth.as_mut().map(|a| &mut a.opener)
    }

    fn selected(&self, port: PortId, h: &[u8]) -> bool {
        if self.config.arrival_port.is_some_and(|p| p != port.0) {
            return false;
        }
        self.config.ports.is_empty() || self.port_listed(h)
    }

    /// A TCP packet with its source or destination port in `ports`.
    fn port_listed(&self, h: &[u8]) -> bool {
        let ihl = usize::from(h[0] & 0x0f) * 4;
        if h[9] != IPPROTO_TCP || h.len() < ihl + 4 {
            return false;
        }
        let sport = u16::from_be_bytes([h[ihl], h[ihl + 1]]);
        let dport = u16::from_be_bytes([h[ihl + 2], h[ihl + 3]]);
        self.config.ports.contains(&sport) || self.config.ports.contains(&dport)
    }

    /// With an `mtu`: lower the MSS of a SYN or SYN-ACK of the selected ports (any arrival
    /// port: the answer to a tunnelled SYN may come back by another path, and its MSS sizes
    /// what the other end sends into the tunnel).
    fn clamp_mss(&mut self, pkt: &mut Packet) {
        let Some(max) = self.config.mss_clamp() else {
            return;
        };
        let h = pkt.header();
        if h.len() < 20
            || h[9] != IPPROTO_TCP
            || !(self.config.ports.is_empty() || self.port_listed(h))
        {
            return;
        }
        let Ok(mut view) = TcpIpv4View::new_checked(pkt.header_mut()) else {
            return;
        };
        if view.flags().0 & TcpFlags::SYN.0 != 0 && view.clamp_mss(max) {
            self.stats.mss_clamped += 1;
        }
    }
}

impl Tunnel {
    /// Keyed: verify, then open as a plain tunnel packet; every refusal counted once.
    fn open_authenticated(&mut self, pkt: Packet) {
        let Some(auth) = self.auth.as_mut() else {
            return;
        };
        if pkt.header()[9] == IPPROTO_IPIP {
            auth.stats.unauthenticated += 1;
            return;
        }
        let config = &self.config;
        let opened = match auth.opener.open(pkt, |a| config.is_peer(a)) {
            Ok(p) => p,
            Err(e) => {
                if !auth.stats.count_refusal(e) {
                    match e {
                        AuthError::NotFromPeer => self.stats.not_from_peer += 1,
                        _ => self.stats.malformed_outer += 1,
                    }
                }
                return;
            }
        };
        auth.stats.verified += 1;
        match decapsulate(opened, config) {
            Ok(mut inner) => {
                self.stats.decapsulated += 1;
                self.clamp_mss(&mut inner);
                self.out.push_back(inner);
            }
            Err(Refused::MalformedOuter) => self.stats.malformed_outer += 1,
            Err(Refused::NotFromPeer) => self.stats.not_from_peer += 1,
            Err(Refused::InnerMalformed) => self.stats.inner_malformed += 1,
        }
    }

    /// Keyed: encapsulate and add the AH; a packet without room for both passes unchanged
    /// (`too_long`), as without a key.
    fn seal(&mut self, pkt: Packet) {
        let Some(auth) = self.auth.as_mut() else {
            return;
        };
        let room = pkt.header_len() + OUTER + AH_LEN <= MAX_HEADER
            && pkt.wire_len() + (OUTER + AH_LEN) as u64 <= u64::from(u16::MAX);
        if !room {
            self.stats.too_long += 1;
            self.out.push_back(pkt);
            return;
        }
        let outer = match encapsulate(pkt, self.config.local, self.config.remote, self.ident) {
            Ok(outer) => outer,
            Err(pkt) => {
                self.stats.too_long += 1;
                self.out.push_back(pkt);
                return;
            }
        };
        self.ident = self.ident.wrapping_add(1);
        match auth.sealer.seal(outer) {
            Ok(sealed) => {
                auth.stats.sealed += 1;
                self.stats.encapsulated += 1;
                self.out.push_back(sealed);
            }
            // Only when 2^64 packets were sealed: nothing goes out unauthenticated.
            Err(_) => auth.stats.seal_failed += 1,
        }
    }
}

/// Prepend a 20-byte IPv4 header (protocol 4, DF, TTL 64, TOS copied) to `pkt`, in place (the
/// payload, real or virtual, stays where it is). `Err(pkt)` unchanged when it would not fit.
fn encapsulate(
    mut pkt: Packet,
    src: Ipv4Addr,
    dst: Ipv4Addr,
    ident: u16,
) -> Result<Packet, Packet> {
    let Ok(total) = u16::try_from(pkt.wire_len() + OUTER as u64) else {
        return Err(pkt);
    };
    // (`prepend_header` refuses a header that would not fit in `MAX_HEADER`.)
    let tos = pkt.header().get(1).copied().unwrap_or(0);
    let mut outer = [0u8; OUTER];
    ipip::write_outer_header(&mut outer, total, tos, ident, src, dst);
    if !pkt.prepend_header(&outer) {
        return Err(pkt);
    }
    Ok(pkt)
}

/// Why a packet addressed to the tunnel endpoint was not opened.
#[derive(Clone, Copy, Debug, Eq, PartialEq)]
enum Refused {
    MalformedOuter,
    NotFromPeer,
    InnerMalformed,
}

/// The inner packet of a plain tunnel packet (in place), once the outer header, the source and
/// the inner header have been checked in that order (a source read from a header that fails
/// its checksum means nothing).
fn decapsulate(mut pkt: Packet, config: &TunnelConfig) -> Result<Packet, Refused> {
    let h = pkt.header();
    // RFC 2003 §3.1: our own encapsulation never sets options or fragments.
    if h.len() < OUTER || h[0] != 0x45 || h[9] != IPPROTO_IPIP {
        return Err(Refused::MalformedOuter);
    }
    if u16::from_be_bytes([h[6], h[7]]) & 0x3fff != 0 {
        return Err(Refused::MalformedOuter);
    }
    if !checksum::is_valid(checksum::sum(0, &h[..OUTER])) {
        return Err(Refused::MalformedOuter);
    }
    let total = u64::from(u16::from_be_bytes([h[2], h[3]]));
    if total != pkt.wire_len() {
        return Err(Refused::MalformedOuter);
    }
    if !config.is_peer(Ipv4Addr::new(h[12], h[13], h[14], h[15])) {
        return Err(Refused::NotFromPeer);
    }
    let inner = &h[OUTER..];
    if inner.len() < 20 || inner[0] >> 4 != 4 {
        return Err(Refused::InnerMalformed);
    }
    let ihl = usize::from(inner[0] & 0x0f) * 4;
    let inner_total = u64::from(u16::from_be_bytes([inner[2], inner[3]]));
    if ihl < 20 || inner.len() < ihl || (ihl as u64) > inner_total {
        return Err(Refused::InnerMalformed);
    }
    if inner_total + OUTER as u64 != total || !checksum::is_valid(checksum::sum(0, &inner[..ihl])) {
        return Err(Refused::InnerMalformed);
    }
    pkt.strip_header_front(OUTER);
    Ok(pkt)
}

impl Node for Tunnel {
    fn handle_packet(&mut self, _now: Instant, port: PortId, pkt: Packet) {
        let h = pkt.header();
        if h.len() < 20 {
            self.out.push_back(pkt);
            return;
        }
        let dst = Ipv4Addr::new(h[16], h[17], h[18], h[19]);
        if dst == self.config.local
            && self.auth.is_some()
            && matches!(h[9], IPPROTO_IPIP | IPPROTO_AH)
        {
            self.open_authenticated(pkt);
            return;
        }
        if dst == self.config.local && h[9] == IPPROTO_IPIP {
            match decapsulate(pkt, &self.config) {
                Ok(mut inner) => {
                    self.stats.decapsulated += 1;
                    self.clamp_mss(&mut inner);
                    self.out.push_back(inner);
                }
                Err(Refused::MalformedOuter) => self.stats.malformed_outer += 1,
                Err(Refused::NotFromPeer) => self.stats.not_from_peer += 1,
                Err(Refused::InnerMalformed) => self.stats.inner_malformed += 1,
            }
            return;
        }
        let mut pkt = pkt;
        self.clamp_mss(&mut pkt);
        let h = pkt.header();
        if self.selected(port, h) {
            if self.auth.is_some() {
                self.seal(pkt);
                return;
            }
            match encapsulate(pkt, self.config.local, self.config.remote, self.ident) {
                Ok(outer) => {
                    self.ident = self.ident.wrapping_add(1);
                    self.stats.encapsulated += 1;
                    self.out.push_back(outer);
                }
                Err(pkt) => {
                    self.stats.too_long += 1;
                    self.out.push_back(pkt);
                }
            }
            return;
        }
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

/// The body of the `tunnel` fuzz target, public so that cargo-fuzz (nightly) and a stable
/// property test run the same checks.
#[cfg(any(test, feature = "fuzzing"))]
pub mod fuzzing {
    use std::net::Ipv4Addr;

    use super::{Tunnel, TunnelConfig, OUTER};
    use crate::auth::{TunnelKey, AH_LEN, IPPROTO_AH};
    use crate::node::MAX_HEADER;
    use crate::wire::{checksum, ipip};
    use crate::{Instant, Node, Packet, PortId};

    /// The key of [`keyed_endpoint`]: 32 bytes of 0x5a.
    pub const KEY: [u8; 32] = [0x5a; 32];

    /// The endpoint under test: `local` 10.0.2.1, `remote` 10.0.1.1, one extra peer 10.0.9.1.
    pub fn endpoint() -> Tunnel {
        Tunnel::new(TunnelConfig {
            local: Ipv4Addr::new(10, 0, 2, 1),
            remote: Ipv4Addr::new(10, 0, 1, 1),
            arrival_port: Some(7),
            ports: vec![],
            peers: vec![Ipv4Addr::new(10, 0, 9, 1)],
            key: None,
            insecure: false,
            mtu: None,
        })
    }

    /// [`endpoint`] with the key [`KEY`].
    pub fn keyed_endpoint() -> Tunnel {
        let mut c = endpoint().config;
        c.key = TunnelKey::from_bytes(&KEY).ok();
        Tunnel::new(c)
    }

    /// Feed `data` to [`endpoint`] and to [`keyed_endpoint`]; panics only if an invariant is
    /// broken.
    ///
    /// 1. Raw: `data` (2 bytes of payload length, then header bytes) is one packet, to both.
    /// 2. Structured, plain: a valid tunnel packet from the source `data[0]` picks (`remote`, a
    ///    peer or a stranger) around the header bytes of `data`, with one byte at `data[1]`
    ///    XORed with `data[2]`, to the plain endpoint.
    /// 3. Structured, keyed: the same packet sealed by a sender of that source with [`KEY`]
    ///    (or, when `data[0]` is odd, with another key), then corrupted the same way, to the
    ///    keyed endpoint, twice (the second time a replay).
    ///
    /// Invariants: at most one packet out per packet in; one counter moves per packet; a packet
    /// is opened only if its outer source is a peer, and then comes out exactly 20 bytes
    /// (plain) or 48 bytes (keyed) shorter, with the bytes that followed the outer header (and
    /// AH). Keyed: an uncorrupted packet with the right key from a peer is opened once and then
    /// refused as replayed; a corrupted one or one with the wrong key is never opened.
    pub fn decapsulate_input(data: &[u8]) {
        if let [hi, lo, header @ ..] = data {
            let header = &header[..header.len().min(MAX_HEADER)];
            let pkt = Packet::new(header, u32::from(u16::from_be_bytes([*hi, *lo])));
            check(&mut endpoint(), pkt.clone());
            check(&mut keyed_endpoint(), pkt);
        }
        let [who, at, flip, inner @ ..] = data else {
            return;
        };
        let src = match who % 3 {
            0 => Ipv4Addr::new(10, 0, 1, 1),
            1 => Ipv4Addr::new(10, 0, 9, 1),
            _ => Ipv4Addr::new(192, 0, 2, *who),
        };
        let inner = &inner[..inner.len().min(MAX_HEADER - OUTER - AH_LEN)];
        let mut buf = [0u8; MAX_HEADER];
        let total = (OUTER + inner.len()) as u16;
        let local = Ipv4Addr::new(10, 0, 2, 1);
        ipip::write_outer_header(&mut buf, total, 0, 1, src, local);
        buf[OUTER..OUTER + inner.len()].copy_from_slice(inner);
        let n = OUTER + inner.len();
        let plain = Packet::new(&buf[..n], 0);
        let mut corrupted = plain.clone();
        if *flip != 0 {
            corrupted.header_mut()[usize::from(*at) % n] ^= flip;
        }
        check(&mut endpoint(), corrupted);

        let key = if who % 2 == 0 { KEY } else { [0xa5; 32] };
        let Some(k) = TunnelKey::from_bytes(&key).ok() else {
            return;
        };
        let mut sealer = crate::auth::Sealer::new(&k, u32::from(*at));
        let Ok(mut sealed) = sealer.seal(plain) else {
            panic!("{n} + {AH_LEN} bytes fit");
        };
        let m = sealed.header_len();
        if *flip != 0 {
            sealed.header_mut()[usize::from(*at) % m] ^= flip;
        }
        let mut t = keyed_endpoint();
        let genuine = *flip == 0 && key == KEY && t.config.is_peer(src);
        let first = check(&mut t, sealed.clone());
        check(&mut t, sealed);
        if genuine {
            let auth = t.auth_stats().unwrap_or_default();
            assert_eq!(auth.verified, 1, "a genuine packet was not verified");
            assert_eq!(auth.replayed, 1, "a replay was not refused as one");
            // Opened (once) unless the inner datagram is malformed.
            assert_eq!(first.len() as u64, t.stats().decapsulated);
        } else {
            // (A corrupted destination address makes it someone else's packet: it passes.)
            let verified = t.auth_stats().map_or(0, |a| a.verified);
            assert_eq!(
                t.stats().decapsulated + verified,
                0,
                "opened a forged packet"
            );
        }
    }

    /// One packet into `t`: the invariants above; returns what came out.
    fn check(t: &mut Tunnel, pkt: Packet) -> Vec<Packet> {
        let (before, auth_before) = (t.stats(), t.auth_stats().unwrap_or_default());
        t.handle_packet(Instant::ZERO, PortId(0), pkt.clone());
        let out: Vec<_> =
            std::iter::from_fn(|| t.poll_transmit(Instant::ZERO).map(|x| x.pkt)).collect();
        assert!(out.len() <= 1, "one packet in, {} out", out.len());
        let (a, b) = (before, t.stats());
        let (x, y) = (auth_before, t.auth_stats().unwrap_or_default());
        let refused = [
            b.not_from_peer - a.not_from_peer,
            b.malformed_outer - a.malformed_outer,
            b.inner_malformed - a.inner_malformed,
            y.unauthenticated - x.unauthenticated,
            y.bad_mac - x.bad_mac,
            y.replayed - x.replayed,
            y.too_old - x.too_old,
        ];
        let opened = b.decapsulated - a.decapsulated;
        assert!(
            opened + refused.iter().sum::<u64>() <= 1,
            "{opened} {refused:?}"
        );
        assert!(y.verified - x.verified <= 1);
        if opened == 1 {
            let h = pkt.header();
            let src = Ipv4Addr::new(h[12], h[13], h[14], h[15]);
            assert!(t.config.is_peer(src), "opened a packet from {src}");
            assert!(checksum::is_valid(checksum::sum(0, &h[..OUTER])));
            let cut = if t.auth.is_some() {
                assert_eq!(
                    h[9], IPPROTO_AH,
                    "a keyed endpoint opened a packet without AH"
                );
                assert_eq!(y.verified - x.verified, 1);
                OUTER + AH_LEN
            } else {
                OUTER
            };
            assert_eq!(out[0].wire_len() + cut as u64, pkt.wire_len());
            assert_eq!(out[0].header(), &h[cut..]);
        }
        if refused.iter().sum::<u64>() == 1 {
            assert!(out.is_empty(), "a refused packet went on");
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::node::MAX_HEADER;
    use crate::wire::{emit_ipv4_tcp, parse_ipv4_tcp, Ipv4Repr, TcpRepr};

    fn tcp_packet(sport: u16, dport: u16, payload: u32) -> Packet {
        let ip = Ipv4Repr {
            src: Ipv4Addr::new(10, 0, 3, 1),
            dst: Ipv4Addr::new(10, 0, 0, 1),
            protocol: IPPROTO_TCP,
            ttl: 63,
            ident: 9,
            dscp_ecn: 0,
            payload_len: 0,
        };
        let seg = TcpRepr {
            src_port: sport,
            dst_port: dport,
            ack: Some(crate::wire::SeqNumber(77)),
            payload_len: payload,
            ..TcpRepr::default()
        };
        Packet::build(payload, |b| emit_ipv4_tcp(&ip, &seg, b))
    }

    fn drain(t: &mut Tunnel) -> Vec<Packet> {
        std::iter::from_fn(|| t.poll_transmit(Instant::ZERO).map(|x| x.pkt)).collect()
    }

    /// A SYN (or SYN-ACK) `sport` > `dport` announcing MSS 1460.
    fn syn(sport: u16, dport: u16, syn_ack: bool) -> Packet {
        let ip = Ipv4Repr::tcp(Ipv4Addr::new(10, 0, 3, 1), Ipv4Addr::new(10, 0, 0, 1), 3);
        let seg = TcpRepr {
            src_port: sport,
            dst_port: dport,
            flags: TcpFlags::SYN,
            ack: syn_ack.then_some(crate::wire::SeqNumber(1)),
            mss: Some(1460),
            window_scale: Some(7),
            ..TcpRepr::default()
        };
        Packet::build(0, |b| emit_ipv4_tcp(&ip, &seg, b))
    }

    fn mss_of(pkt: &Packet) -> Option<u16> {
        TcpIpv4View::new_checked(pkt.header()).ok()?.mss_option()
    }

    /// With `mtu = 1500`: a SYN to a selected port leaves in the tunnel announcing 1500 − 20 −
    /// 28 − 40 = 1412 (keyed), the SYN-ACK coming back by another path (not encapsulated)
    /// too, and the far end opens a valid segment; other ports and data are untouched, and
    /// without `mtu` nothing is clamped. Unkeyed the clamp is 1440.
    #[test]
    fn an_mtu_clamps_the_mss_of_selected_handshakes_to_what_fits_encapsulated() {
        let (x, y) = (Ipv4Addr::new(10, 0, 2, 1), Ipv4Addr::new(10, 0, 5, 1));
        let key = TunnelKey::from_bytes(&[7; 16]).ok();
        let cfg = |local, remote, mtu| TunnelConfig {
            local,
            remote,
            arrival_port: Some(1),
            ports: vec![5001],
            peers: vec![],
            key: key.clone(),
            insecure: false,
            mtu,
        };
        let mut a = Tunnel::new(cfg(x, y, Some(1500)));
        let mut b = Tunnel::new(cfg(y, x, Some(1500)));
        a.handle_packet(Instant::ZERO, PortId(1), syn(40000, 5001, false));
        a.handle_packet(Instant::ZERO, PortId(0), syn(5001, 40000, true));
        a.handle_packet(Instant::ZERO, PortId(1), syn(40000, 80, false));
        a.handle_packet(Instant::ZERO, PortId(1), tcp_packet(40000, 5001, 1460));
        let out = drain(&mut a);
        assert_eq!(out.len(), 4);
        assert_eq!(out[0].header()[9], IPPROTO_AH, "the SYN is tunnelled");
        assert_eq!(mss_of(&out[1]), Some(1412), "SYN-ACK from another path");
        assert_eq!(mss_of(&out[2]), Some(1460), "port 80 is not the tunnel's");
        assert_eq!(a.stats().mss_clamped, 2);
        b.handle_packet(Instant::ZERO, PortId(0), out[0].clone());
        let inner = drain(&mut b);
        assert_eq!(inner.len(), 1);
        assert_eq!(mss_of(&inner[0]), Some(1412));
        assert!(
            parse_ipv4_tcp(inner[0].header(), 0).is_ok(),
            "checksums valid"
        );
        assert_eq!(b.stats().mss_clamped, 0, "already clamped");
        // A full segment of the clamped size fits 1500 bytes once sealed.
        assert_eq!(1412 + 40 + 20 + AH_LEN as u16, 1500);

        let mut plain = cfg(x, y, Some(1500));
        plain.key = None;
        assert_eq!(plain.mss_clamp(), Some(1440));
        let mut c = Tunnel::new(plain.clone());
        c.handle_packet(Instant::ZERO, PortId(0), syn(5001, 40000, true));
        assert_eq!(mss_of(&drain(&mut c)[0]), Some(1440));
        plain.mtu = None;
        let mut d = Tunnel::new(plain);
        d.handle_packet(Instant::ZERO, PortId(0), syn(5001, 40000, true));
        assert_eq!(mss_of(&drain(&mut d)[0]), Some(1460));
        assert_eq!(d.stats().mss_clamped, 0);

        // An MSS option on a segment without SYN is not the tunnel's to touch (RFC 9293 §3.7.1:
        // it is sent only in SYNs, and a receiver ignores it elsewhere).
        let mut not_syn = syn(5001, 40000, true);
        {
            let mut v = TcpIpv4View::new_checked(not_syn.header_mut()).expect("valid");
            let flags = v.buffer_mut()[33];
            v.patch_tcp_bytes(33, &[flags & !TcpFlags::SYN.0]);
        }
        let mut e = Tunnel::new(cfg(x, y, Some(1500)));
        e.handle_packet(Instant::ZERO, PortId(0), not_syn.clone());
        let out = drain(&mut e);
        assert_eq!(out[0].header(), not_syn.header());
        assert_eq!(e.stats().mss_clamped, 0);
    }

    #[test]
    fn an_mtu_too_small_for_a_minimum_segment_is_refused() {
        let mut c = TunnelConfig {
            local: Ipv4Addr::new(1, 1, 1, 1),
            remote: Ipv4Addr::new(2, 2, 2, 2),
            arrival_port: None,
            ports: vec![],
            peers: vec![],
            key: None,
            insecure: false,
            mtu: Some(595),
        };
        assert!(c.validate().is_err_and(|e| e.starts_with("mtu: 595")));
        c.mtu = Some(596);
        assert_eq!(c.validate(), Ok(()));
        c.key = TunnelKey::from_bytes(&[1; 16]).ok();
        assert!(c.validate().is_err(), "the AH needs 28 more");
    }

    #[test]
    fn selected_packets_cross_the_tunnel_byte_for_byte_and_others_pass() {
        let term = Ipv4Addr::new(10, 0, 2, 1);
        let isp = Ipv4Addr::new(10, 0, 5, 1);
        let mut a = Tunnel::new(TunnelConfig {
            local: term,
            remote: isp,
            arrival_port: Some(1),
            ports: vec![80],
            peers: vec![],
            key: None,
            insecure: false,
            mtu: None,
        });
        let mut b = Tunnel::new(TunnelConfig {
            local: isp,
            remote: term,
            arrival_port: None,
            ports: vec![23],
            peers: vec![],
            key: None,
            insecure: false,
            mtu: None,
        });
        let web = tcp_packet(40000, 80, 0);
        let telnet = tcp_packet(40001, 23, 0);
        a.handle_packet(Instant::ZERO, PortId(1), web.clone());
        a.handle_packet(Instant::ZERO, PortId(1), telnet.clone());
        a.handle_packet(Instant::ZERO, PortId(0), web.clone());
        let out = drain(&mut a);
        // Port 80 from port 1: tunnelled, 20 bytes longer, outer header to `isp`, valid.
        assert_eq!(out[0].wire_len(), web.wire_len() + 20);
        assert_eq!(&out[0].header()[16..20], &isp.octets());
        assert_eq!(out[0].header()[9], IPPROTO_IPIP);
        assert!(checksum::is_valid(checksum::sum(0, &out[0].header()[..20])));
        // Port 23, and anything from port 0: unchanged.
        assert_eq!(out[1].header(), telnet.header());
        assert_eq!(out[2].header(), web.header());
        // The far end opens it: the inner packet exactly as sent, still a valid TCP segment.
        b.handle_packet(Instant::ZERO, PortId(0), out[0].clone());
        let inner = drain(&mut b);
        assert_eq!(inner.len(), 1);
        assert_eq!(inner[0].header(), web.header());
        assert_eq!(inner[0].payload_len, web.payload_len);
        assert!(parse_ipv4_tcp(inner[0].header(), inner[0].payload_len).is_ok());
        assert_eq!((a.stats().encapsulated, b.stats().decapsulated), (1, 1));
        // A forged tunnel packet (bad outer checksum) addressed to us is counted and dropped.
        let mut bad = out[0].clone();
        bad.header_mut()[10] ^= 0xff;
        b.handle_packet(Instant::ZERO, PortId(0), bad);
        assert!(drain(&mut b).is_empty());
        assert_eq!(b.stats().malformed_outer, 1);
    }

    #[test]
    fn data_packets_keep_their_payload_length_through_the_tunnel() {
        let (x, y) = (Ipv4Addr::new(1, 1, 1, 1), Ipv4Addr::new(2, 2, 2, 2));
        let mut a = Tunnel::new(TunnelConfig {
            local: x,
            remote: y,
            arrival_port: None,
            ports: vec![],
            peers: vec![],
            key: None,
            insecure: false,
            mtu: None,
        });
        let mut b = Tunnel::new(TunnelConfig {
            local: y,
            remote: x,
            arrival_port: Some(99),
            ports: vec![],
            peers: vec![],
            key: None,
            insecure: false,
            mtu: None,
        });
        let p = tcp_packet(5, 6, 1460);
        a.handle_packet(Instant::ZERO, PortId(0), p.clone());
        let t = drain(&mut a);
        assert_eq!(t[0].wire_len(), 1460 + 40 + 20);
        b.handle_packet(Instant::ZERO, PortId(0), t[0].clone());
        let back = drain(&mut b);
        assert_eq!(back[0].header(), p.header());
        assert_eq!(back[0].payload_len, 1460);
    }

    /// Real payload bytes come out of the tunnel as they went in; a header with no room for the
    /// outer one goes on unencapsulated and counted; packets for the tunnel's address that are
    /// not IP-in-IP, and IP-in-IP packets for someone else, are forwarded untouched.
    #[test]
    fn real_bytes_cross_and_what_is_not_ours_passes() {
        let (x, y) = (Ipv4Addr::new(1, 1, 1, 1), Ipv4Addr::new(2, 2, 2, 2));
        let cfg = |local, remote| TunnelConfig {
            local,
            remote,
            arrival_port: Some(0),
            ports: vec![],
            peers: vec![],
            key: None,
            insecure: false,
            mtu: None,
        };
        let (mut a, mut b) = (Tunnel::new(cfg(x, y)), Tunnel::new(cfg(y, x)));
        let seg = TcpRepr {
            src_port: 5,
            dst_port: 6,
            payload_len: 15,
            ..TcpRepr::default()
        };
        let ip = Ipv4Repr::tcp(Ipv4Addr::new(10, 0, 3, 1), Ipv4Addr::new(10, 0, 0, 1), 9);
        let p =
            crate::wire::emit_tcp_packet(&ip, &seg, |v| v.extend_from_slice(b"satellite bytes"))
                .expect("length");
        a.handle_packet(Instant::ZERO, PortId(0), p.clone());
        let t = drain(&mut a);
        b.handle_packet(Instant::ZERO, PortId(1), t[0].clone());
        let back = drain(&mut b);
        assert_eq!(back[0].payload(), Some(&b"satellite bytes"[..]));
        assert_eq!(back[0].header(), p.header());

        // 108 header bytes + 20 fit exactly; 109 do not.
        let fits = Packet::try_with_payload(&[0x45; MAX_HEADER - OUTER], b"x").expect("fits");
        a.handle_packet(Instant::ZERO, PortId(0), fits);
        assert_eq!(drain(&mut a)[0].header_len(), MAX_HEADER);
        let long = Packet::try_with_payload(&[0x45; MAX_HEADER - OUTER + 1], b"x").expect("fits");
        a.handle_packet(Instant::ZERO, PortId(0), long);
        assert_eq!(drain(&mut a)[0].header_len(), MAX_HEADER - OUTER + 1);
        assert_eq!(a.stats().too_long, 1);

        // TCP to the tunnel's own address (port 1: not selected for encapsulation) passes.
        let mut to_us = tcp_packet(5, 6, 10);
        to_us.header_mut()[16..20].copy_from_slice(&x.octets());
        a.handle_packet(Instant::ZERO, PortId(1), to_us.clone());
        assert_eq!(drain(&mut a)[0].header(), to_us.header());
        // IP-in-IP for another endpoint passes unopened.
        b.handle_packet(Instant::ZERO, PortId(1), t[0].clone());
        let mut c = Tunnel::new(cfg(Ipv4Addr::new(3, 3, 3, 3), x));
        c.handle_packet(Instant::ZERO, PortId(1), t[0].clone());
        assert_eq!(drain(&mut c)[0].header(), t[0].header());
        assert_eq!(c.stats().decapsulated + c.stats().malformed_outer, 0);
    }

    /// An endpoint at `local` whose only peer is `remote`, with no selection settings, for
    /// tests of decapsulation.
    fn opener(local: Ipv4Addr, remote: Ipv4Addr) -> Tunnel {
        Tunnel::new(TunnelConfig {
            local,
            remote,
            arrival_port: None,
            ports: vec![],
            peers: vec![],
            key: None,
            insecure: false,
            mtu: None,
        })
    }

    fn tunnel_to(local: Ipv4Addr, from: Ipv4Addr, inner: &Packet) -> Packet {
        encapsulate(inner.clone(), from, local, 1).expect("fits")
    }

    /// The attack of issue 15: IP-in-IP packets to the endpoint from an address that is neither
    /// `remote` nor a peer carry a spoofed inner source. None is opened; each is counted once.
    #[test]
    fn tunnel_packets_from_a_non_peer_are_dropped_and_counted() {
        let (term, isp) = (Ipv4Addr::new(10, 0, 2, 1), Ipv4Addr::new(10, 0, 1, 1));
        let extra = Ipv4Addr::new(10, 0, 9, 1);
        let mut t = Tunnel::new(TunnelConfig {
            local: term,
            remote: isp,
            arrival_port: None,
            ports: vec![],
            peers: vec![extra],
            key: None,
            insecure: false,
            mtu: None,
        });
        let spoofed = tcp_packet(80, 40000, 100);
        for i in 0..37u8 {
            let from = Ipv4Addr::new(203, 0, 113, i);
            t.handle_packet(Instant::ZERO, PortId(0), tunnel_to(term, from, &spoofed));
        }
        assert!(drain(&mut t).is_empty());
        assert_eq!(t.stats().not_from_peer, 37);
        assert_eq!(t.stats().decapsulated, 0);
        // From `remote` and from the listed peer: opened, byte for byte.
        t.handle_packet(Instant::ZERO, PortId(0), tunnel_to(term, isp, &spoofed));
        t.handle_packet(Instant::ZERO, PortId(0), tunnel_to(term, extra, &spoofed));
        let out = drain(&mut t);
        assert_eq!(out.len(), 2);
        assert!(out.iter().all(|p| p.header() == spoofed.header()));
        assert_eq!(t.stats().decapsulated, 2);
        assert_eq!(t.stats().not_from_peer, 37);
        assert_eq!(t.stats().malformed_outer + t.stats().inner_malformed, 0);
    }

    /// Each refusal reason, with the packet that triggers it and nothing else.
    #[test]
    fn refused_tunnel_packets_are_counted_by_reason() {
        let (x, y) = (Ipv4Addr::new(1, 1, 1, 1), Ipv4Addr::new(2, 2, 2, 2));
        let mut t = opener(x, y);
        let good = tunnel_to(x, y, &tcp_packet(5, 6, 0));
        let fix = |p: &mut Packet| {
            let h = p.header_mut();
            h[10..12].fill(0);
            let c = checksum::finish(checksum::sum(0, &h[..OUTER]));
            h[10..12].copy_from_slice(&c.to_be_bytes());
        };
        let outer = |f: &dyn Fn(&mut [u8])| {
            let mut p = good.clone();
            f(p.header_mut());
            fix(&mut p);
            p
        };
        let malformed_outer = [
            outer(&|h| h[7] = 1),                    // fragment offset
            outer(&|h| h[6] = 0x20),                 // more fragments
            outer(&|h| h[3] = h[3].wrapping_add(1)), // total length
            outer(&|h| h[0] = 0x46),                 // options
            {
                let mut p = good.clone();
                p.header_mut()[11] ^= 1; // checksum
                p
            },
        ];
        let inner_malformed = [
            outer(&|h| h[20] = 0x65),                  // inner version 6
            outer(&|h| h[20] = 0x44),                  // inner IHL 16 bytes
            outer(&|h| h[20] = 0x4f),                  // inner IHL past the header
            outer(&|h| h[23] = h[23].wrapping_add(1)), // inner total length
            outer(&|h| h[30] ^= 0xff),                 // inner checksum
        ];
        for p in malformed_outer.iter().chain(&inner_malformed) {
            t.handle_packet(Instant::ZERO, PortId(0), p.clone());
        }
        // Too short to hold an inner header (but a valid outer one).
        let mut short = Packet::new(&good.header()[..OUTER + 8], 0);
        short.header_mut()[2..4].copy_from_slice(&28u16.to_be_bytes());
        fix(&mut short);
        t.handle_packet(Instant::ZERO, PortId(0), short);
        assert!(drain(&mut t).is_empty());
        let s = t.stats();
        assert_eq!((s.malformed_outer, s.inner_malformed), (5, 6));
        assert_eq!((s.not_from_peer, s.decapsulated), (0, 0));
        t.handle_packet(Instant::ZERO, PortId(0), good);
        assert_eq!(drain(&mut t).len(), 1);
    }

    /// An IP-in-IP packet from `y` to `x` around `inner` (header bytes; their checksum is
    /// filled over the first IHL bytes), with `payload` virtual payload bytes after it.
    fn wrap(x: Ipv4Addr, y: Ipv4Addr, inner: &[u8], payload: u32) -> Packet {
        let mut inner = inner.to_vec();
        let ihl = (usize::from(inner[0] & 0x0f) * 4).min(inner.len());
        if ihl >= 12 {
            inner[10..12].fill(0);
            let c = checksum::finish(checksum::sum(0, &inner[..ihl]));
            inner[10..12].copy_from_slice(&c.to_be_bytes());
        }
        let total = (OUTER + inner.len()) as u16 + payload as u16;
        let mut h = vec![0u8; OUTER];
        ipip::write_outer_header(&mut h, total, 0, 1, y, x);
        h.extend_from_slice(&inner);
        Packet::new(&h, payload)
    }

    /// An inner IPv4 header: `vihl` (version and IHL byte), total length `total`, protocol
    /// 17, `len` bytes long (options zero).
    fn inner_header(vihl: u8, total: u16, len: usize) -> Vec<u8> {
        let mut h = vec![0u8; len];
        h[0] = vihl;
        h[2..4].copy_from_slice(&total.to_be_bytes());
        h[8] = 64;
        h[9] = 17;
        h[12..16].copy_from_slice(&[10, 0, 3, 1]);
        h[16..20].copy_from_slice(&[10, 0, 0, 1]);
        h
    }

    /// The edges of the inner header checks, each refused (or accepted) by one check alone:
    /// every other field is valid, checksums included.
    #[test]
    fn inner_header_edges_are_judged_by_their_own_check() {
        let (x, y) = (Ipv4Addr::new(1, 1, 1, 1), Ipv4Addr::new(2, 2, 2, 2));
        let mut t = opener(x, y);
        let mut send = |p: Packet| {
            t.handle_packet(Instant::ZERO, PortId(0), p);
            let out = drain(&mut t);
            (out.len(), t.stats())
        };
        // A bare 20-byte inner datagram, and one with 4 bytes of IP options: opened.
        let (n, s) = send(wrap(x, y, &inner_header(0x45, 20, 20), 0));
        assert_eq!((n, s.decapsulated), (1, 1));
        let (n, s) = send(wrap(x, y, &inner_header(0x46, 24, 24), 0));
        assert_eq!((n, s.decapsulated), (1, 2));
        // An outer header alone (total 20, protocol 4): no inner datagram.
        let mut outer_only = vec![0u8; OUTER];
        ipip::write_outer_header(&mut outer_only, 20, 0, 1, y, x);
        let (n, s) = send(Packet::new(&outer_only, 0));
        assert_eq!((n, s.inner_malformed, s.malformed_outer), (0, 1, 0));
        // Version 6 with a valid checksum.
        let (n, s) = send(wrap(x, y, &inner_header(0x65, 20, 20), 0));
        assert_eq!((n, s.inner_malformed), (0, 2));
        // IHL 4 (16 bytes) with a checksum valid over those 16 bytes.
        let (n, s) = send(wrap(x, y, &inner_header(0x44, 20, 20), 0));
        assert_eq!((n, s.inner_malformed), (0, 3));
        // IHL 15 (60 bytes) but only 40 header bytes, the rest of the datagram payload: must be
        // refused without reading past the header.
        let (n, s) = send(wrap(x, y, &inner_header(0x4f, 140, 40), 100));
        assert_eq!((n, s.inner_malformed), (0, 4));
        assert_eq!(s.decapsulated, 2);
    }

    #[test]
    fn peers_must_not_list_local() {
        let (x, y) = (Ipv4Addr::new(1, 1, 1, 1), Ipv4Addr::new(2, 2, 2, 2));
        let mut c = TunnelConfig {
            local: x,
            remote: y,
            arrival_port: None,
            ports: vec![],
            peers: vec![Ipv4Addr::new(3, 3, 3, 3)],
            key: None,
            insecure: false,
            mtu: None,
        };
        assert_eq!(c.validate(), Ok(()));
        c.peers.push(x);
        assert!(c.validate().unwrap_err().starts_with("peers:"));
    }

    fn keyed(local: Ipv4Addr, remote: Ipv4Addr, key: u8) -> Tunnel {
        Tunnel::new(TunnelConfig {
            key: Some(TunnelKey::from_bytes(&[key; 32]).expect("32 bytes")),
            ..opener(local, remote).config
        })
    }

    /// With a key: packets cross as AH (protocol 51) and come out byte for byte; a forged
    /// (wrong key), replayed, unauthenticated or non-peer packet is dropped, each counted once
    /// under its own reason.
    #[test]
    fn keyed_tunnel_opens_only_authenticated_packets_from_peers() {
        let (x, y) = (Ipv4Addr::new(10, 0, 2, 1), Ipv4Addr::new(10, 0, 1, 1));
        let mut a = keyed(x, y, 1).with_epoch(1_700_000_000);
        let mut b = keyed(y, x, 1);
        let p = tcp_packet(40000, 80, 1000);
        a.handle_packet(Instant::ZERO, PortId(0), p.clone());
        let sealed = drain(&mut a).remove(0);
        assert_eq!(sealed.header()[9], IPPROTO_AH);
        assert_eq!(sealed.wire_len(), p.wire_len() + 20 + 28);
        assert_eq!(
            &sealed.header()[24..32],
            &(1_700_000_000u64 << 32 | 1).to_be_bytes()
        );
        b.handle_packet(Instant::ZERO, PortId(0), sealed.clone());
        let out = drain(&mut b);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].header(), p.header());
        assert_eq!(out[0].payload_len, 1000);
        // The same packet again: replayed.
        b.handle_packet(Instant::ZERO, PortId(0), sealed.clone());
        // Sealed with another key (epoch far ahead): bad MAC, and the window did not move.
        let mut forger = keyed(x, y, 2).with_epoch(u32::MAX);
        forger.handle_packet(Instant::ZERO, PortId(0), p.clone());
        b.handle_packet(Instant::ZERO, PortId(0), drain(&mut forger).remove(0));
        // The right key from an address that is not a peer.
        let mut stranger = keyed(Ipv4Addr::new(203, 0, 113, 5), y, 1);
        stranger.handle_packet(Instant::ZERO, PortId(0), p.clone());
        b.handle_packet(Instant::ZERO, PortId(0), drain(&mut stranger).remove(0));
        // Plain IP-in-IP from the peer: unauthenticated.
        b.handle_packet(Instant::ZERO, PortId(0), tunnel_to(y, x, &p));
        // A corrupted AH (bad outer checksum): malformed.
        let mut bad = sealed.clone();
        bad.header_mut()[10] ^= 1;
        b.handle_packet(Instant::ZERO, PortId(0), bad);
        assert!(drain(&mut b).is_empty());
        let (s, t) = (b.auth_stats().expect("keyed"), b.stats());
        assert_eq!(
            (
                s.verified,
                s.replayed,
                s.bad_mac,
                s.unauthenticated,
                s.too_old
            ),
            (1, 1, 1, 1, 0)
        );
        assert_eq!(
            (t.decapsulated, t.not_from_peer, t.malformed_outer),
            (1, 1, 1)
        );
        // The genuine sender's next packet still gets in.
        a.handle_packet(Instant::ZERO, PortId(0), p.clone());
        b.handle_packet(Instant::ZERO, PortId(0), drain(&mut a).remove(0));
        assert_eq!(drain(&mut b).len(), 1);
        assert_eq!(a.auth_stats().map(|s| s.sealed), Some(2));
        // A restarted sender (new epoch) is accepted at once; one with the old epoch is not.
        let mut restarted = keyed(x, y, 1).with_epoch(1_700_000_001);
        restarted.handle_packet(Instant::ZERO, PortId(0), p.clone());
        b.handle_packet(Instant::ZERO, PortId(0), drain(&mut restarted).remove(0));
        let mut old = keyed(x, y, 1).with_epoch(1_700_000_000);
        old.handle_packet(Instant::ZERO, PortId(0), p.clone());
        b.handle_packet(Instant::ZERO, PortId(0), drain(&mut old).remove(0));
        assert_eq!(drain(&mut b).len(), 1);
        assert_eq!(
            b.auth_stats().map(|s| (s.verified, s.too_old)),
            Some((3, 1))
        );
        // Authentic, but its inner datagram is not IPv4: verified, then refused as before.
        let mut odd = keyed(x, y, 1).with_epoch(1_700_000_005);
        odd.handle_packet(Instant::ZERO, PortId(0), Packet::new(&[0x65; 20], 0));
        b.handle_packet(Instant::ZERO, PortId(0), drain(&mut odd).remove(0));
        assert!(drain(&mut b).is_empty());
        assert_eq!(b.stats().inner_malformed, 1);
        assert_eq!(b.auth_stats().map(|s| s.verified), Some(4));
        // A floor restored after a restart of the receiver.
        let mut b2 = keyed(y, x, 1);
        let floor = 1_700_000_001u64 << 32 | 1;
        b2.opener_mut().expect("keyed").set_floor(x, floor);
        let mut again = keyed(x, y, 1).with_epoch(1_700_000_001);
        again.handle_packet(Instant::ZERO, PortId(0), p.clone());
        b2.handle_packet(Instant::ZERO, PortId(0), drain(&mut again).remove(0));
        assert!(drain(&mut b2).is_empty());
        assert_eq!(b2.auth_stats().map(|s| s.replayed), Some(1));
    }

    /// A key changes nothing for packets that are not the tunnel's, and without a key an AH
    /// packet to `local` is not opened (it is like any other packet: here, not selected, it
    /// passes untouched); header room counts the AH.
    #[test]
    fn keyed_room_and_unkeyed_ah_passthrough() {
        let (x, y) = (Ipv4Addr::new(1, 1, 1, 1), Ipv4Addr::new(2, 2, 2, 2));
        let mut a = keyed(x, y, 1);
        let fits =
            Packet::try_with_payload(&[0x45; MAX_HEADER - OUTER - AH_LEN], b"x").expect("fits");
        a.handle_packet(Instant::ZERO, PortId(0), fits);
        assert_eq!(drain(&mut a)[0].header_len(), MAX_HEADER);
        let long =
            Packet::try_with_payload(&[0x45; MAX_HEADER - OUTER - AH_LEN + 1], b"x").expect("fits");
        a.handle_packet(Instant::ZERO, PortId(0), long);
        assert_eq!(
            drain(&mut a)[0].header_len(),
            MAX_HEADER - OUTER - AH_LEN + 1
        );
        let huge = tcp_packet(5, 6, 65_535 - 40 - 48);
        a.handle_packet(Instant::ZERO, PortId(0), huge.clone());
        assert_eq!(drain(&mut a)[0].wire_len(), 65_535);
        let over = tcp_packet(5, 6, 65_535 - 40 - 47);
        a.handle_packet(Instant::ZERO, PortId(0), over.clone());
        assert_eq!(drain(&mut a)[0].header(), over.header());
        assert_eq!((a.stats().too_long, a.stats().encapsulated), (2, 2));
        let mut ah = keyed(y, x, 1);
        ah.handle_packet(Instant::ZERO, PortId(0), tcp_packet(5, 6, 0));
        let sealed = drain(&mut ah).remove(0);
        let mut plain = Tunnel::new(TunnelConfig {
            arrival_port: Some(99),
            ..opener(x, y).config
        });
        plain.handle_packet(Instant::ZERO, PortId(0), sealed.clone());
        assert_eq!(drain(&mut plain)[0].header(), sealed.header());
        assert_eq!(plain.stats(), TunnelStats::default());
        assert_eq!(plain.auth_stats(), None);
        // Non-tunnel traffic to a keyed endpoint's address, not selected, passes.
        let mut to_us = tcp_packet(5, 6, 10);
        to_us.header_mut()[16..20].copy_from_slice(&x.octets());
        let mut k = Tunnel::new(TunnelConfig {
            arrival_port: Some(99),
            ..keyed(x, y, 1).config
        });
        k.handle_packet(Instant::ZERO, PortId(0), to_us.clone());
        assert_eq!(drain(&mut k)[0].header(), to_us.header());
    }

    #[test]
    fn key_is_read_from_a_scenario_and_left_out_when_unset() {
        let c: crate::middlebox::MiddleboxConfig = toml::from_str(
            "kind = \"ipip_tunnel\"\nlocal = \"1.1.1.1\"\nremote = \"2.2.2.2\"\n\
             key = \"hex:00112233445566778899aabbccddeeff\"",
        )
        .expect("parses");
        let crate::middlebox::MiddleboxConfig::IpipTunnel(t) = c else {
            panic!("not a tunnel");
        };
        assert_eq!(t.key.as_ref().map(|k| k.as_bytes()[1]), Some(0x11));
        let plain = opener(Ipv4Addr::new(1, 1, 1, 1), Ipv4Addr::new(2, 2, 2, 2)).config;
        assert!(!serde_json::to_string(&plain).expect("json").contains("key"));
        let e = toml::from_str::<TunnelConfig>(
            "local = \"1.1.1.1\"\nremote = \"2.2.2.2\"\nkey = \"00112233\"",
        )
        .expect_err("refused");
        assert!(e.to_string().contains("expected `hex:`"), "{e}");
    }

    /// The fuzz corpus' sealed seed, written by Python's `hmac` (fuzz/corpus/tunnel), opens
    /// in the keyed fuzz endpoint: the two implementations agree on every byte.
    #[test]
    fn python_sealed_seed_opens() {
        let seed = include_bytes!("../../../fuzz/corpus/tunnel/seed_keyed_raw_from_remote");
        let mut t = fuzzing::keyed_endpoint();
        t.handle_packet(Instant::ZERO, PortId(0), Packet::new(&seed[2..], 0));
        let out = drain(&mut t);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].header(), &seed[2 + 48..]);
        assert_eq!(t.auth_stats().map(|a| a.verified), Some(1));
        fuzzing::decapsulate_input(seed);
    }

    proptest::proptest! {
        /// Arbitrary bytes, raw and as a corrupted tunnel packet: the fuzz target's checks.
        #[test]
        fn arbitrary_bytes_never_panic_nor_open_a_non_peer_packet(
            data in proptest::collection::vec(proptest::num::u8::ANY, 0..160),
        ) {
            fuzzing::decapsulate_input(&data);
        }
    }
}
