//! Keyed authentication of satpep's tunnels: the IP Authentication Header (RFC 4302) with
//! HMAC-SHA-256-128 (RFC 4868) and an anti-replay window (RFC 4303 §3.4.3 and Appendix A), shared
//! by the IP-in-IP endpoint ([`crate::tunnel`]) and the ACK compactor and expander
//! ([`crate::ack`]).
//!
//! Read before editing: RFC 4302 §2 (header layout), §3.3.2–3.3.3 (sequence number, ICV
//! computation and the IPv4 mutable fields), §3.4.3 (receiver's replay check); RFC 4303 Appendix A
//! (window algorithm); RFC 4868 §2 (HMAC-SHA-256-128: the leftmost 128 bits of HMAC-SHA-256).
//!
//! A sealed packet is an IP-in-IP packet (RFC 2003) with an AH between the outer and the inner
//! header, so Wireshark and tcpdump dissect it as AH carrying IPv4:
//!
//! ```text
//! +--------------------------+  outer IPv4, 20 bytes, no options: protocol 51 (AH), DF,
//! | outer IPv4 header        |  total length covering everything below
//! +--------------------------+
//! | next header = 4 | len 5  |  AH, 28 bytes: next header 4 (IPv4), payload length 5
//! | reserved = 0 (2 bytes)   |  (28 / 4 − 2), reserved zero,
//! | SPI = epoch (4 bytes)    |  SPI: the high 32 bits of the 64-bit sequence number,
//! | seq (4 bytes)            |  sequence number: its low 32 bits,
//! | ICV (16 bytes)           |  ICV: HMAC-SHA-256 truncated to its first 16 bytes
//! +--------------------------+
//! | inner IPv4 datagram      |  as without a key (a compacted ACK keeps its 3-byte trailer)
//! +--------------------------+
//! ```
//!
//! The ICV is computed, with the tunnel's key, over exactly the bytes of the packet as sent, in
//! order, with the outer header's mutable fields (TOS byte 1, flags and fragment offset bytes
//! 6–7, TTL byte 8, header checksum bytes 10–11) and the ICV field set to zero: RFC 4302
//! §3.3.3.1.1.1's rule for IPv4 without options, so routers on the way may decrement the TTL.
//! A virtual payload counts as its zeros, as on the wire. The outer source address is covered.
//!
//! Simplifications, in plain words: the SPI does not index a security association; it carries
//! the sender's *epoch*, the high half of a 64-bit sequence number sent whole (SPI then
//! sequence), instead of RFC 4303's implicit extended sequence number. A sender restarted with a
//! larger epoch is therefore "far ahead" of the receiver's window and accepted at once; the
//! driver supplies the epoch (e.g. seconds since 1970 at start: it grows by one a second while a
//! sender can use at most 2³² sequence numbers per epoch step only above 4.3 × 10⁹ packets/s).
//! RFC 4302 reserves SPIs 0–255, so epochs below [`FIRST_EPOCH`] are raised to it. One key per
//! tunnel, shared by all its peers: a peer can forge packets in another peer's name. No
//! confidentiality: nothing is encrypted. A restarted *receiver* forgets its windows, so until
//! each peer's next packet, old packets of that peer can be replayed once;
//! [`Opener::set_floor`] lets a driver restore a window's top saved before the restart.

use std::collections::BTreeMap;
use std::fmt;
use std::net::Ipv4Addr;
use std::str::FromStr;

use hmac::{Hmac, KeyInit, Mac};
use serde::{de, Deserialize, Deserializer, Serialize, Serializer};
use sha2::Sha256;

use crate::node::{Packet, MAX_HEADER};
use crate::wire::{checksum, IPPROTO_IPIP};

/// IP protocol number of the Authentication Header.
pub const IPPROTO_AH: u8 = 51;
/// Length of the ICV: HMAC-SHA-256 truncated to 128 bits (RFC 4868 §2.6).
pub const ICV_LEN: usize = 16;
/// Length of the AH with its ICV (12 fixed bytes + ICV), a multiple of 4 as IPv4 needs.
pub const AH_LEN: usize = 12 + ICV_LEN;
/// Packets the replay window remembers below the highest one (RFC 4303 asks for at least 32
/// and recommends 64; 128 tolerates more reordering).
pub const REPLAY_WINDOW: u64 = 128;
/// Smallest epoch sent: RFC 4302 §2.4 reserves SPIs 0–255.
pub const FIRST_EPOCH: u32 = 256;
/// Fewest key bytes accepted (128 bits).
pub const MIN_KEY_BYTES: usize = 16;
/// Most key bytes accepted (the SHA-256 block; HMAC would hash a longer key down).
pub const MAX_KEY_BYTES: usize = 64;

/// Outer IPv4 header length (no options).
const OUTER: usize = 20;

/// A tunnel key: 16 to 64 bytes, written `"hex:"` and an even number of hex digits. Its
/// `Debug` form hides the bytes; serialisation writes the `hex:` form (a simulation's run.json
/// holds it, so a key used in deployment should not be put in a scenario).
#[derive(Clone, Eq, PartialEq)]
pub struct TunnelKey(Vec<u8>);

impl TunnelKey {
    /// A key from raw bytes (16 to 64 of them).
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, String> {
        if !(MIN_KEY_BYTES..=MAX_KEY_BYTES).contains(&bytes.len()) {
            return Err(format!(
                "a key of {} bytes: expected {MIN_KEY_BYTES} to {MAX_KEY_BYTES} bytes \
                 (32 to 128 hex digits after `hex:`)",
                bytes.len()
            ));
        }
        Ok(Self(bytes.to_vec()))
    }

    /// The key bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }

    fn mac(&self) -> Hmac<Sha256> {
        // NOTE(unwrap): HMAC takes keys of any length; `Err` is impossible.
        Hmac::<Sha256>::new_from_slice(&self.0).unwrap_or_else(|_| unreachable!())
    }
}

/// Whether a tunnel end (an `ipip_tunnel`, an ACK compactor, an `ack_expander`) authenticates
/// what crosses the tunnel. Without a key an end trusts the outer source address alone, which
/// anyone on the path can forge (one forged compacted ACK becomes up to 65 ACKs at the
/// expander): drivers on real networks (the daemons) refuse [`Trust::Unkeyed`], simulated and
/// emulated scenarios, whose tunnels no stranger can reach, take it.
#[derive(Clone, Copy, Debug, Eq, PartialEq)]
pub enum Trust {
    /// `key` given: AH with HMAC-SHA-256-128 and a replay window.
    Keyed,
    /// No key, and `insecure = true` says so in so many words.
    Insecure,
    /// No key and no `insecure = true`.
    Unkeyed,
}

impl Trust {
    /// The trust of an end with `key` and `insecure` as configured.
    pub fn of(key: Option<&TunnelKey>, insecure: bool) -> Self {
        match (key, insecure) {
            (Some(_), _) => Self::Keyed,
            (None, true) => Self::Insecure,
            (None, false) => Self::Unkeyed,
        }
    }

    /// Checks `key` and `insecure` together: both at once contradict each other. The message
    /// starts with the key (`insecure`), as config checks do.
    pub fn validate(key: Option<&TunnelKey>, insecure: bool) -> Result<(), String> {
        if key.is_some() && insecure {
            return Err("insecure: `insecure = true` says this end has no key, but it has a                         `key`: remove one"
                .to_owned());
        }
        Ok(())
    }
}

impl FromStr for TunnelKey {
    type Err = String;

    /// `"hex:0011…"`: 32 to 128 hex digits (either case).
    fn from_str(s: &str) -> Result<Self, String> {
        const FORM: &str = "expected `hex:` and 32 to 128 hex digits, e.g. \
                            \"hex:000102030405060708090a0b0c0d0e0f\"";
        let Some(digits) = s.strip_prefix("hex:") else {
            return Err(FORM.to_owned());
        };
        if digits.len() % 2 != 0 || !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(format!("{FORM} (not an even number of hex digits)"));
        }
        let bytes: Vec<u8> = (0..digits.len())
            .step_by(2)
            .filter_map(|i| u8::from_str_radix(&digits[i..i + 2], 16).ok())
            .collect();
        Self::from_bytes(&bytes)
    }
}

impl fmt::Debug for TunnelKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TunnelKey({} bytes)", self.0.len())
    }
}

impl fmt::Display for TunnelKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("hex:")?;
        self.0.iter().try_for_each(|b| write!(f, "{b:02x}"))
    }
}

impl Serialize for TunnelKey {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for TunnelKey {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(de::Error::custom)
    }
}

/// Why a packet was not authenticated.
#[derive(Clone, Copy, Debug, Eq, PartialEq, thiserror::Error)]
pub enum AuthError {
    /// Outer header or AH framing invalid (checked before anything else).
    #[error("malformed authenticated packet: {0}")]
    Malformed(&'static str),
    /// Outer source is not a configured peer (checked before the MAC: no work for strangers).
    #[error("not from a peer")]
    NotFromPeer,
    /// The ICV does not match: wrong key, or a bit changed on the way.
    #[error("bad ICV")]
    BadMac,
    /// A sequence number already received inside the window.
    #[error("replayed")]
    Replayed,
    /// A sequence number below the window (an old packet, or a sender restarted with an epoch
    /// no larger than before).
    #[error("older than the replay window")]
    TooOld,
}

/// Counters of an authenticating endpoint (a [`Sealer`]'s and an [`Opener`]'s outcomes, kept by
/// the mechanism that owns them). Malformed framing and non-peer sources are counted by the
/// mechanism's own counters (`malformed…`, `not_from_peer` / `unknown_source`).
#[derive(Clone, Copy, Debug, Default, Eq, PartialEq, Serialize)]
#[non_exhaustive]
pub struct AuthStats {
    /// Packets sent with an AH.
    pub sealed: u64,
    /// Packets whose ICV verified and were let in.
    pub verified: u64,
    /// Tunnel packets without an AH sent to an endpoint that has a key: dropped.
    pub unauthenticated: u64,
    /// ICV mismatch (wrong key, forged or corrupted): dropped.
    pub bad_mac: u64,
    /// Sequence number seen before: dropped.
    pub replayed: u64,
    /// Sequence number below the replay window: dropped.
    pub too_old: u64,
    /// Packets that could not be sealed (no header room, or the 64-bit sequence exhausted):
    /// not sent through the tunnel.
    pub seal_failed: u64,
}

impl AuthStats {
    /// Count a refusal the mechanism's own counters do not cover; false for
    /// [`AuthError::Malformed`] and [`AuthError::NotFromPeer`], which the caller counts.
    pub fn count_refusal(&mut self, e: AuthError) -> bool {
        match e {
            AuthError::BadMac => self.bad_mac += 1,
            AuthError::Replayed => self.replayed += 1,
            AuthError::TooOld => self.too_old += 1,
            AuthError::Malformed(_) | AuthError::NotFromPeer => return false,
        }
        true
    }

    /// `(name, value)` of every counter, in field order (for `Middlebox::counters`).
    pub fn counters(&self) -> [(&'static str, u64); 7] {
        [
            ("sealed", self.sealed),
            ("verified", self.verified),
            ("unauthenticated", self.unauthenticated),
            ("bad_mac", self.bad_mac),
            ("replayed", self.replayed),
            ("too_old", self.too_old),
            ("seal_failed", self.seal_failed),
        ]
    }
}

/// RFC 4303 Appendix A's sliding window over 64-bit sequence numbers: the highest number
/// authenticated so far and a bitmap of the [`REPLAY_WINDOW`] numbers at and below it.
#[derive(Clone, Copy, Debug, Default, Eq, PartialEq)]
pub struct ReplayWindow {
    /// Highest sequence number authenticated (0: none yet; senders start at 1).
    top: u64,
    /// Bit `i` set: `top − i` was received.
    seen: u128,
}

impl ReplayWindow {
    /// A window that refuses every number up to `floor` (as if all had been received).
    pub fn with_floor(floor: u64) -> Self {
        Self {
            top: floor,
            seen: u128::MAX,
        }
    }

    /// Whether `seq` may be accepted (checked before the ICV, as RFC 4303 §3.4.3 advises; the
    /// window moves only by [`update`](Self::update), after the ICV verified).
    pub fn check(&self, seq: u64) -> Result<(), AuthError> {
        if seq > self.top {
            return Ok(());
        }
        let behind = self.top - seq;
        if behind >= REPLAY_WINDOW || seq == 0 {
            return Err(AuthError::TooOld);
        }
        if self.seen >> behind & 1 == 1 {
            return Err(AuthError::Replayed);
        }
        Ok(())
    }

    /// Record an authenticated `seq` (which passed [`check`](Self::check)).
    pub fn update(&mut self, seq: u64) {
        if seq > self.top {
            let ahead = seq - self.top;
            self.seen = if ahead >= REPLAY_WINDOW {
                0
            } else {
                self.seen << ahead
            };
            self.seen |= 1;
            self.top = seq;
        } else {
            let behind = self.top - seq;
            if behind < REPLAY_WINDOW {
                self.seen |= 1 << behind;
            }
        }
    }

    /// Highest sequence number authenticated (0: none).
    pub fn top(&self) -> u64 {
        self.top
    }
}

/// The sending half: adds an AH to IP-in-IP packets, numbering them from `epoch · 2³² + 1`.
#[derive(Clone)]
pub struct Sealer {
    mac: Hmac<Sha256>,
    /// Next sequence number; `None` once all 2⁶⁴ − 1 are used.
    next: Option<u64>,
}

impl Sealer {
    /// A sealer with `key` for a sender started in `epoch` (raised to [`FIRST_EPOCH`]); the
    /// driver must give a restarted sender a larger epoch than any before with the same key.
    pub fn new(key: &TunnelKey, epoch: u32) -> Self {
        Self {
            mac: key.mac(),
            next: Some(u64::from(epoch.max(FIRST_EPOCH)) << 32 | 1),
        }
    }

    /// The sequence number the next sealed packet gets.
    pub fn next_sequence(&self) -> Option<u64> {
        self.next
    }

    /// Turn the IP-in-IP packet `pkt` (20-byte outer header, protocol 4) into an authenticated
    /// one, in place. `Err(pkt)` unchanged when it is not such a packet, when the AH does not fit
    /// ([`MAX_HEADER`], or an outer total length past 65 535), or when the sequence is exhausted.
    pub fn seal(&mut self, mut pkt: Packet) -> Result<Packet, Packet> {
        let h = pkt.header();
        let total = pkt.wire_len() + AH_LEN as u64;
        if h.len() < OUTER
            || h[0] != 0x45
            || h[9] != IPPROTO_IPIP
            || h.len() + AH_LEN > MAX_HEADER
            || total > u64::from(u16::MAX)
        {
            return Err(pkt);
        }
        let Some(seq) = self.next else {
            return Err(pkt);
        };
        self.next = seq.checked_add(1);
        let mut buf = [0u8; MAX_HEADER];
        let n = h.len() + AH_LEN;
        buf[..OUTER].copy_from_slice(&h[..OUTER]);
        buf[OUTER + AH_LEN..n].copy_from_slice(&h[OUTER..]);
        buf[9] = IPPROTO_AH;
        buf[2..4].copy_from_slice(&(total as u16).to_be_bytes());
        buf[10..12].fill(0);
        let c = checksum::finish(checksum::sum(0, &buf[..OUTER]));
        buf[10..12].copy_from_slice(&c.to_be_bytes());
        let ah = &mut buf[OUTER..OUTER + AH_LEN];
        ah[0] = IPPROTO_IPIP;
        ah[1] = (AH_LEN / 4 - 2) as u8;
        ah[4..12].copy_from_slice(&seq.to_be_bytes());
        let full = icv_state(&self.mac, &buf[..n], &pkt)
            .finalize()
            .into_bytes();
        buf[OUTER + 12..OUTER + AH_LEN].copy_from_slice(&full[..ICV_LEN]);
        pkt.set_header(&buf[..n]);
        Ok(pkt)
    }
}

impl fmt::Debug for Sealer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sealer").field("next", &self.next).finish()
    }
}

/// The receiving half: verifies authenticated packets from peers, one replay window per peer
/// (created at a peer's first authenticated packet, so at most one per configured peer).
#[derive(Clone)]
pub struct Opener {
    mac: Hmac<Sha256>,
    windows: BTreeMap<Ipv4Addr, ReplayWindow>,
}

impl Opener {
    /// An opener with `key` and no window yet.
    pub fn new(key: &TunnelKey) -> Self {
        Self {
            mac: key.mac(),
            windows: BTreeMap::new(),
        }
    }

    /// Refuse every sequence number up to `seq` from `peer` (e.g. the window top a driver saved
    /// before a restart), unless the window is already past it.
    pub fn set_floor(&mut self, peer: Ipv4Addr, seq: u64) {
        let w = self.windows.entry(peer).or_default();
        if w.top <= seq {
            *w = ReplayWindow::with_floor(seq);
        }
    }

    /// The replay window of `peer`, once it sent an authenticated packet.
    pub fn window(&self, peer: Ipv4Addr) -> Option<&ReplayWindow> {
        self.windows.get(&peer)
    }

    /// Verify the authenticated packet `pkt` (outer protocol 51) from a source `is_peer`
    /// accepts, and turn it back into the IP-in-IP packet that was sealed (outer protocol 4,
    /// the outer header as received otherwise, checksum recomputed). Checks in this order:
    /// outer header and AH framing, peer, replay window, ICV; the window moves only after the
    /// ICV verified.
    pub fn open(
        &mut self,
        mut pkt: Packet,
        is_peer: impl Fn(Ipv4Addr) -> bool,
    ) -> Result<Packet, AuthError> {
        let h = pkt.header();
        if h.len() < OUTER || h[0] != 0x45 || h[9] != IPPROTO_AH {
            return Err(AuthError::Malformed("outer header"));
        }
        if u16::from_be_bytes([h[6], h[7]]) & 0x3fff != 0 {
            return Err(AuthError::Malformed("fragment"));
        }
        if !checksum::is_valid(checksum::sum(0, &h[..OUTER])) {
            return Err(AuthError::Malformed("outer checksum"));
        }
        let total = u16::from_be_bytes([h[2], h[3]]);
        if u64::from(total) != pkt.wire_len() {
            return Err(AuthError::Malformed("outer total length"));
        }
        let src = Ipv4Addr::new(h[12], h[13], h[14], h[15]);
        if !is_peer(src) {
            return Err(AuthError::NotFromPeer);
        }
        if h.len() < OUTER + AH_LEN {
            return Err(AuthError::Malformed("truncated AH"));
        }
        let ah = &h[OUTER..OUTER + AH_LEN];
        if ah[0] != IPPROTO_IPIP || usize::from(ah[1]) != AH_LEN / 4 - 2 || ah[2..4] != [0, 0] {
            return Err(AuthError::Malformed("AH next header, length or reserved"));
        }
        let mut seq = [0u8; 8];
        seq.copy_from_slice(&ah[4..12]);
        let seq = u64::from_be_bytes(seq);
        if let Some(w) = self.windows.get(&src) {
            w.check(seq)?;
        } else if seq == 0 {
            return Err(AuthError::TooOld);
        }
        let mut zeroed = [0u8; MAX_HEADER];
        zeroed[..h.len()].copy_from_slice(h);
        zeroed[OUTER + 12..OUTER + AH_LEN].fill(0);
        // RustCrypto's comparison takes the same time wherever the ICVs differ.
        let state = icv_state(&self.mac, &zeroed[..h.len()], &pkt);
        if state.verify_truncated_left(&ah[12..]).is_err() {
            return Err(AuthError::BadMac);
        }
        self.windows.entry(src).or_default().update(seq);
        let mut out = [0u8; MAX_HEADER];
        let n = h.len() - AH_LEN;
        out[..OUTER].copy_from_slice(&h[..OUTER]);
        out[OUTER..n].copy_from_slice(&h[OUTER + AH_LEN..]);
        out[9] = IPPROTO_IPIP;
        out[2..4].copy_from_slice(&(total - AH_LEN as u16).to_be_bytes());
        out[10..12].fill(0);
        let c = checksum::finish(checksum::sum(0, &out[..OUTER]));
        out[10..12].copy_from_slice(&c.to_be_bytes());
        pkt.set_header(&out[..n]);
        Ok(pkt)
    }
}

impl fmt::Debug for Opener {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Opener")
            .field("windows", &self.windows)
            .finish()
    }
}

/// HMAC-SHA-256, not yet finalised, of a packet whose header (outer IPv4, AH with a zero ICV
/// field, the rest) is `header` and whose payload is `pkt`'s: the header with the outer mutable
/// fields zeroed, then the payload (zeros when virtual). Its first 16 bytes are the ICV.
fn icv_state(mac: &Hmac<Sha256>, header: &[u8], pkt: &Packet) -> Hmac<Sha256> {
    let mut m = mac.clone();
    let mut outer = [0u8; OUTER];
    outer.copy_from_slice(&header[..OUTER]);
    outer[1] = 0; // TOS (DSCP, ECN)
    outer[6..9].fill(0); // flags, fragment offset, TTL
    outer[10..12].fill(0); // header checksum
    m.update(&outer);
    m.update(&header[OUTER..]);
    match pkt.payload() {
        Some(p) => m.update(p),
        None => {
            const ZEROS: [u8; 512] = [0; 512];
            let mut left = pkt.payload_len as usize;
            while left > 0 {
                let k = left.min(ZEROS.len());
                m.update(&ZEROS[..k]);
                left -= k;
            }
        }
    }
    m
}

#[cfg(test)]
mod tests;
