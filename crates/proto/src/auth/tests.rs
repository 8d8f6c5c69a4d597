use std::net::Ipv4Addr;

use super::*;
use crate::wire::ipip;

/// The key of the reference vectors: bytes 0x00 to 0x1f.
fn key() -> TunnelKey {
    TunnelKey::from_bytes(&(0u8..32).collect::<Vec<_>>()).expect("32 bytes")
}

/// A pure ACK 10.0.3.1:40000 → 10.0.0.1:80, TOS 0xb8, ack 77 (both checksums valid), as
/// built by the Python sketched on [`reference_packet_matches_an_independent_hmac`].
const INNER: &str =
    "45b80028000940003f06240e0a0003010a0000019c400050000000010000004d5010fffffbf40000";

const EPOCH: u32 = 1_700_000_000;
const SRC: Ipv4Addr = Ipv4Addr::new(10, 0, 3, 1);
const DST: Ipv4Addr = Ipv4Addr::new(10, 0, 1, 1);

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex"))
        .collect()
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// The IP-in-IP packet 10.0.3.1 → 10.0.1.1 (ident `ident`) around [`INNER`].
fn ipip_packet(ident: u16, payload_len: u32) -> Packet {
    let inner = unhex(INNER);
    let mut h = vec![0u8; 20];
    let total = (20 + inner.len()) as u16 + payload_len as u16;
    ipip::write_outer_header(&mut h, total, inner[1], ident, SRC, DST);
    h.extend_from_slice(&inner);
    Packet::new(&h, payload_len)
}

fn is_src(a: Ipv4Addr) -> bool {
    a == SRC
}

/// The exact bytes of a sealed packet, and its ICV, equal what Python's `hmac` and `hashlib`
/// compute from the framing in the module doc (RFC 4302 with HMAC-SHA-256-128):
///
/// ```python
/// key = bytes(range(32)); seq = (1_700_000_000 << 32) | 1
/// outer = ip(tos=0xb8, total=88, ident=1, flags=0x4000, ttl=64, proto=51, 10.0.3.1, 10.0.1.1)
/// ah = struct.pack('!BBHQ', 4, 5, 0, seq)
/// zeroed = outer with bytes 1, 6-8 and 10-11 set to 0
/// icv = hmac.new(key, zeroed + ah + bytes(16) + inner, hashlib.sha256).digest()[:16]
/// ```
#[test]
fn reference_packet_matches_an_independent_hmac() {
    let mut s = Sealer::new(&key(), EPOCH);
    assert_eq!(s.next_sequence(), Some(u64::from(EPOCH) << 32 | 1));
    let sealed = s.seal(ipip_packet(1, 0)).expect("fits");
    assert_eq!(
        hex(sealed.header()),
        "45b8005800014000403321b90a0003010a000101040500006553f10000000001\
         107d396e80d2f4001fad5e02fe9d8478"
            .to_owned()
            + INNER
    );
    // The outer header is a valid IPv4 header with protocol 51 (what Wireshark dissects as AH).
    let v = etherparse::Ipv4HeaderSlice::from_slice(sealed.header()).expect("IPv4");
    assert_eq!(v.protocol(), etherparse::IpNumber::AUTHENTICATION_HEADER);
    assert_eq!(v.header_checksum(), v.to_header().calc_header_checksum());
    let (ah, _) =
        etherparse::IpAuthHeader::from_slice(&sealed.header()[20..]).expect("AH per etherparse");
    assert_eq!(ah.next_header, etherparse::IpNumber::IPV4);
    assert_eq!((ah.spi, ah.sequence_number), (EPOCH, 1));
    assert_eq!(hex(ah.raw_icv()), "107d396e80d2f4001fad5e02fe9d8478");
    // Opened: the IP-in-IP packet that was sealed, byte for byte.
    let mut o = Opener::new(&key());
    let back = o.open(sealed, is_src).expect("verifies");
    assert_eq!(back.header(), ipip_packet(1, 0).header());
    assert_eq!(s.next_sequence(), Some(u64::from(EPOCH) << 32 | 2));
}

/// The payload counts: 1 000 virtual bytes as zeros, 3 real bytes as themselves (ICVs from
/// Python as above, with `+ bytes(1000)` and `+ b"abc"`, ident 2, sequence 2).
#[test]
fn icv_covers_virtual_and_real_payload() {
    let mut s = Sealer::new(&key(), EPOCH);
    s.seal(ipip_packet(1, 0)).expect("fits");
    let mut s2 = s.clone();
    let virt = s.seal(ipip_packet(2, 1000)).expect("fits");
    assert_eq!(
        hex(&virt.header()[32..48]),
        "526966342ffc07724318dce3fd999fe2"
    );
    let mut real = ipip_packet(2, 0);
    real.set_payload(b"abc");
    let h = real.header_mut();
    h[2..4].copy_from_slice(&63u16.to_be_bytes());
    h[10..12].fill(0);
    let c = checksum::finish(checksum::sum(0, &h[..20]));
    h[10..12].copy_from_slice(&c.to_be_bytes());
    let real = s2.seal(real).expect("fits");
    assert_eq!(
        hex(&real.header()[32..48]),
        "19bdbfd9f6475c64341e2745c53a1960"
    );
    assert_eq!(real.payload(), Some(&b"abc"[..]));
    let mut o = Opener::new(&key());
    let mut flipped = real.clone();
    flipped.set_payload(b"abd");
    assert_eq!(o.open(flipped, is_src).unwrap_err(), AuthError::BadMac);
    assert!(o.open(real, is_src).is_ok());
}

#[test]
fn keys_parse_from_hex_and_say_what_is_wrong() {
    let k: TunnelKey = "hex:000102030405060708090A0B0C0D0E0F"
        .parse()
        .expect("16 bytes");
    assert_eq!(k.as_bytes(), &(0u8..16).collect::<Vec<_>>()[..]);
    assert_eq!(k.to_string(), "hex:000102030405060708090a0b0c0d0e0f");
    assert_eq!(format!("{k:?}"), "TunnelKey(16 bytes)");
    let err = |s: &str| s.parse::<TunnelKey>().unwrap_err();
    assert!(err("000102030405060708090a0b0c0d0e0f").starts_with("expected `hex:`"));
    assert!(err("hex:000102030405060708090a0b0c0d0e").contains("a key of 15 bytes"));
    assert!(err("hex:000102030405060708090a0b0c0d0e0").contains("even number"));
    assert!(err("hex:000102030405060708090a0b0c0d0e0g").contains("even number"));
    assert!(err(&format!("hex:{}", "ab".repeat(65))).contains("a key of 65 bytes"));
    assert!(format!("hex:{}", "ab".repeat(64))
        .parse::<TunnelKey>()
        .is_ok());
    // Through serde, as a scenario writes it, and back.
    #[derive(Deserialize, Serialize)]
    struct C {
        key: TunnelKey,
    }
    let c: C = toml::from_str("key = \"hex:00112233445566778899aabbccddeeff\"").expect("parses");
    assert_eq!(c.key.as_bytes()[15], 0xff);
    assert_eq!(
        toml::to_string(&c).expect("serialises"),
        "key = \"hex:00112233445566778899aabbccddeeff\"\n"
    );
    let e = toml::from_str::<C>("key = \"hex:0011\"")
        .err()
        .expect("too short");
    assert!(e.to_string().contains("a key of 2 bytes"), "{e}");
}

/// RFC 4303 Appendix A's cases on a 128-packet window.
#[test]
fn replay_window_follows_rfc_4303_appendix_a() {
    let mut w = ReplayWindow::default();
    let accept = |w: &mut ReplayWindow, s: u64| {
        let r = w.check(s);
        if r.is_ok() {
            w.update(s);
        }
        r
    };
    for s in 1..=10 {
        assert_eq!(accept(&mut w, s), Ok(()));
    }
    assert_eq!(w.top(), 10);
    // Duplicate, inside the window.
    assert_eq!(accept(&mut w, 10), Err(AuthError::Replayed));
    assert_eq!(accept(&mut w, 3), Err(AuthError::Replayed));
    // Out of order within the window: a gap filled once.
    assert_eq!(accept(&mut w, 300), Ok(()));
    assert_eq!(accept(&mut w, 250), Ok(()));
    assert_eq!(accept(&mut w, 250), Err(AuthError::Replayed));
    assert_eq!(w.top(), 300);
    // The window's bottom edge: 300 − 127 is inside, 300 − 128 is too old.
    assert_eq!(accept(&mut w, 173), Ok(()));
    assert_eq!(accept(&mut w, 172), Err(AuthError::TooOld));
    assert_eq!(accept(&mut w, 10), Err(AuthError::TooOld));
    // Far ahead: accepted, and the window starts afresh there.
    assert_eq!(accept(&mut w, 1 << 40), Ok(()));
    assert_eq!(accept(&mut w, (1 << 40) - 1), Ok(()));
    assert_eq!(accept(&mut w, (1 << 40) - 127), Ok(()));
    assert_eq!(accept(&mut w, (1 << 40) - 128), Err(AuthError::TooOld));
    assert_eq!(accept(&mut w, 300), Err(AuthError::TooOld));
    // A shift by exactly the window size keeps nothing but the new top.
    let mut v = ReplayWindow::default();
    accept(&mut v, 5).expect("first");
    accept(&mut v, 5 + REPLAY_WINDOW).expect("ahead");
    assert_eq!(v.check(5 + REPLAY_WINDOW), Err(AuthError::Replayed));
    assert_eq!(v.check(6), Ok(()));
    assert_eq!(v.check(5), Err(AuthError::TooOld));
    // A shift by one less keeps the old top at the window's bottom edge.
    let mut u = ReplayWindow::default();
    accept(&mut u, 5).expect("first");
    accept(&mut u, 4 + REPLAY_WINDOW).expect("ahead");
    assert_eq!(u.check(5), Err(AuthError::Replayed));
    assert_eq!(u.check(6), Ok(()));
    // Zero is never a sequence number; a floor refuses everything up to it.
    assert_eq!(ReplayWindow::default().check(0), Err(AuthError::TooOld));
    let f = ReplayWindow::with_floor(1000);
    assert_eq!(f.check(1000), Err(AuthError::Replayed));
    assert_eq!(f.check(900), Err(AuthError::Replayed));
    assert_eq!(f.check(872), Err(AuthError::TooOld));
    assert_eq!(f.check(1001), Ok(()));
}

/// Refusals in the documented order: a stranger is refused before the MAC is looked at, a
/// replay is refused even with a valid MAC, and a forged packet does not move the window.
#[test]
fn opener_refuses_strangers_wrong_keys_and_replays() {
    let mut s = Sealer::new(&key(), EPOCH);
    let mut o = Opener::new(&key());
    let first = s.seal(ipip_packet(1, 0)).expect("fits");
    assert_eq!(
        o.open(first.clone(), |_| false).unwrap_err(),
        AuthError::NotFromPeer
    );
    let other = TunnelKey::from_bytes(&[7; 32]).expect("32 bytes");
    let forged = Sealer::new(&other, EPOCH + 1000)
        .seal(ipip_packet(1, 0))
        .expect("fits");
    assert_eq!(o.open(forged, is_src).unwrap_err(), AuthError::BadMac);
    assert!(o.window(SRC).is_none(), "a forged packet made a window");
    assert!(o.open(first.clone(), is_src).is_ok());
    assert_eq!(o.open(first, is_src).unwrap_err(), AuthError::Replayed);
    // A forged packet far ahead (wrong key) does not move the window: the next genuine one
    // still gets in.
    let far = Sealer::new(&other, u32::MAX)
        .seal(ipip_packet(1, 0))
        .expect("fits");
    assert_eq!(o.open(far, is_src).unwrap_err(), AuthError::BadMac);
    assert_eq!(
        o.window(SRC).map(ReplayWindow::top),
        Some(u64::from(EPOCH) << 32 | 1)
    );
    assert!(o
        .open(s.seal(ipip_packet(2, 0)).expect("fits"), is_src)
        .is_ok());
    // Routers may change the mutable fields (TTL, TOS, DF) and fix the checksum: still valid.
    let mut p = s.seal(ipip_packet(3, 0)).expect("fits");
    let h = p.header_mut();
    h[8] = 3;
    h[1] = 0;
    h[6] = 0;
    h[10..12].fill(0);
    let c = checksum::finish(checksum::sum(0, &h[..20]));
    h[10..12].copy_from_slice(&c.to_be_bytes());
    assert!(o.open(p, is_src).is_ok());
}

#[test]
fn malformed_framing_is_refused_before_anything_else() {
    let mut s = Sealer::new(&key(), EPOCH);
    let good = s.seal(ipip_packet(1, 0)).expect("fits");
    let mut o = Opener::new(&key());
    let with = |f: &dyn Fn(&mut [u8]), fix: bool| {
        let mut p = good.clone();
        let h = p.header_mut();
        f(h);
        if fix {
            h[10..12].fill(0);
            let c = checksum::finish(checksum::sum(0, &h[..20]));
            h[10..12].copy_from_slice(&c.to_be_bytes());
        }
        p
    };
    type Case<'a> = (&'a dyn Fn(&mut [u8]), bool, &'a str);
    let cases: [Case; 8] = [
        (&|h| h[0] = 0x46, true, "outer header"),
        (&|h| h[9] = 4, true, "outer header"),
        (&|h| h[7] = 1, true, "fragment"),
        (&|h| h[11] ^= 1, false, "outer checksum"),
        (&|h| h[3] += 1, true, "outer total length"),
        (&|h| h[20] = 41, true, "AH next header, length or reserved"),
        (&|h| h[21] = 4, true, "AH next header, length or reserved"),
        (&|h| h[23] = 1, true, "AH next header, length or reserved"),
    ];
    for (f, fix, why) in cases {
        assert_eq!(
            o.open(with(f, fix), is_src).unwrap_err(),
            AuthError::Malformed(why)
        );
    }
    let mut short = Packet::new(&good.header()[..40], 0);
    let h = short.header_mut();
    h[2..4].copy_from_slice(&40u16.to_be_bytes());
    h[10..12].fill(0);
    let c = checksum::finish(checksum::sum(0, &h[..20]));
    h[10..12].copy_from_slice(&c.to_be_bytes());
    assert_eq!(
        o.open(short, is_src).unwrap_err(),
        AuthError::Malformed("truncated AH")
    );
    // Shorter than an IPv4 header: refused without reading past it.
    for n in [0, 5, 19] {
        assert_eq!(
            o.open(Packet::new(&good.header()[..n], 0), is_src)
                .unwrap_err(),
            AuthError::Malformed("outer header")
        );
    }
    assert!(o.open(good, is_src).is_ok());
}

/// A restarted sender with a larger epoch is accepted at once; its old packets are then too
/// old; a restart that reuses an epoch is refused until its numbers pass the old ones (why the
/// driver must supply a growing epoch); a floor restored after a receiver restart holds.
#[test]
fn a_restarted_sender_with_a_new_epoch_is_not_blackholed() {
    let mut o = Opener::new(&key());
    let mut before = Sealer::new(&key(), EPOCH);
    let old: Vec<Packet> = (0..5)
        .map(|i| before.seal(ipip_packet(i, 0)).expect("fits"))
        .collect();
    for p in &old {
        assert!(o.open(p.clone(), is_src).is_ok());
    }
    // Restarted one second later.
    let mut after = Sealer::new(&key(), EPOCH + 1);
    assert!(o
        .open(after.seal(ipip_packet(9, 0)).expect("fits"), is_src)
        .is_ok());
    assert_eq!(
        o.window(SRC).map(ReplayWindow::top),
        Some(u64::from(EPOCH + 1) << 32 | 1)
    );
    for p in &old {
        assert_eq!(o.open(p.clone(), is_src).unwrap_err(), AuthError::TooOld);
    }
    // Restarted again in the same epoch: its first numbers were seen.
    let mut same = Sealer::new(&key(), EPOCH + 1);
    assert_eq!(
        o.open(same.seal(ipip_packet(9, 0)).expect("fits"), is_src)
            .unwrap_err(),
        AuthError::Replayed
    );
    assert!(o
        .open(same.seal(ipip_packet(9, 0)).expect("fits"), is_src)
        .is_ok());
    // A receiver restarted with the saved top refuses the old packets.
    let top = o.window(SRC).map_or(0, ReplayWindow::top);
    let mut fresh = Opener::new(&key());
    fresh.set_floor(SRC, top);
    fresh.set_floor(SRC, 1); // lower: no effect
    for p in &old {
        assert_eq!(
            fresh.open(p.clone(), is_src).unwrap_err(),
            AuthError::TooOld
        );
    }
    assert!(fresh
        .open(same.seal(ipip_packet(9, 0)).expect("fits"), is_src)
        .is_ok());
    // A floor at the window's top also refuses the gaps below it; one below the top does
    // nothing.
    let mut gaps = Opener::new(&key());
    let mut g = Sealer::new(&key(), EPOCH + 5);
    let skipped = g.seal(ipip_packet(1, 0)).expect("fits");
    let second = g.seal(ipip_packet(2, 0)).expect("fits");
    let third = g.seal(ipip_packet(3, 0)).expect("fits");
    assert!(gaps.open(third, is_src).is_ok());
    gaps.set_floor(SRC, u64::from(EPOCH + 5) << 32 | 2);
    assert!(
        gaps.open(second, is_src).is_ok(),
        "a floor below the top changed the window"
    );
    gaps.set_floor(SRC, u64::from(EPOCH + 5) << 32 | 3);
    assert_eq!(gaps.open(skipped, is_src).unwrap_err(), AuthError::Replayed);
    // Epochs below 256 (reserved SPIs) are raised to 256.
    assert_eq!(Sealer::new(&key(), 7).next_sequence(), Some(256 << 32 | 1));
}

#[test]
fn seal_refuses_what_is_not_a_fitting_ipip_packet() {
    let mut s = Sealer::new(&key(), EPOCH);
    // An IP-in-IP header one byte too long for the AH, and one that just fits.
    let ipip_header = |len: usize| {
        let mut h = vec![0x45; len];
        h[9] = IPPROTO_IPIP;
        Packet::new(&h, 0)
    };
    assert!(s.seal(ipip_header(MAX_HEADER - AH_LEN + 1)).is_err());
    assert_eq!(
        s.seal(ipip_header(MAX_HEADER - AH_LEN))
            .expect("fits")
            .header_len(),
        MAX_HEADER
    );
    // The outer header alone is enough; less is refused without reading past it.
    assert_eq!(s.seal(ipip_header(20)).expect("fits").header_len(), 48);
    assert!(s.seal(ipip_header(19)).is_err());
    assert!(s.seal(Packet::new(&[0x45; 5], 0)).is_err());
    // Outer options (IHL 6) with protocol 4.
    let mut options = ipip_header(40);
    options.header_mut()[0] = 0x46;
    assert!(s.seal(options).is_err());
    let mut not_ipip = ipip_packet(1, 0);
    not_ipip.header_mut()[9] = 6;
    assert!(s.seal(not_ipip).is_err());
    let huge = ipip_packet(1, 65_535 - 60 - AH_LEN as u32 + 1);
    assert!(s.seal(huge).is_err());
    let just = ipip_packet(1, 65_535 - 60 - AH_LEN as u32);
    assert_eq!(s.seal(just).expect("fits").wire_len(), 65_535);
    // Nothing was numbered by the refusals.
    assert_eq!(s.next_sequence(), Some(u64::from(EPOCH) << 32 | 4));
    // The last sequence number is used, then sealing stops.
    let mut end = Sealer::new(&key(), u32::MAX);
    end.next = Some(u64::MAX);
    assert!(end.seal(ipip_packet(1, 0)).is_ok());
    assert_eq!(end.next_sequence(), None);
    assert!(end.seal(ipip_packet(1, 0)).is_err());
}

proptest::proptest! {
    /// Any single bit flipped anywhere in an authenticated packet (header or real payload) makes
    /// it refused; with the outer checksum repaired afterwards, only a flip in RFC 4302's
    /// mutable fields (TOS, flags, fragment offset, TTL) may still be accepted.
    #[test]
    fn any_single_bit_flip_is_refused(bit in 0usize..(88 + 8) * 8, repair in proptest::bool::ANY) {
        let mut s = Sealer::new(&key(), EPOCH);
        let mut p = ipip_packet(1, 0);
        p.set_payload(b"satpep!!");
        let h = p.header_mut();
        h[2..4].copy_from_slice(&(60u16 + 8).to_be_bytes());
        h[10..12].fill(0);
        let c = checksum::finish(checksum::sum(0, &h[..20]));
        h[10..12].copy_from_slice(&c.to_be_bytes());
        let sealed = s.seal(p).expect("fits");
        let mut o = Opener::new(&key());
        proptest::prop_assert!(o.clone().open(sealed.clone(), is_src).is_ok());
        let (byte, mask) = (bit / 8, 1u8 << (bit % 8));
        let mut bad = sealed.clone();
        if byte < 88 {
            let h = bad.header_mut();
            h[byte] ^= mask;
            if repair && !(10..12).contains(&byte) {
                h[10..12].fill(0);
                let c = checksum::finish(checksum::sum(0, &h[..20]));
                h[10..12].copy_from_slice(&c.to_be_bytes());
            }
        } else {
            let mut data = b"satpep!!".to_vec();
            data[byte - 88] ^= mask;
            bad.set_payload(&data);
        }
        let mutable = matches!(byte, 1 | 6 | 7 | 8);
        let r = o.open(bad, is_src);
        if !(repair && mutable) {
            proptest::prop_assert!(r.is_err(), "bit {} accepted", bit);
        }
    }
}

/// Each refusal the mechanisms do not count themselves goes to its own counter, once; the two
/// they do count leave the stats untouched.
#[test]
fn count_refusal_counts_each_reason_once() {
    let mut s = AuthStats::default();
    assert!(s.count_refusal(AuthError::BadMac));
    assert!(s.count_refusal(AuthError::Replayed));
    assert!(s.count_refusal(AuthError::Replayed));
    assert!(s.count_refusal(AuthError::TooOld));
    assert!(!s.count_refusal(AuthError::NotFromPeer));
    assert!(!s.count_refusal(AuthError::Malformed("x")));
    assert_eq!((s.bad_mac, s.replayed, s.too_old), (1, 2, 1));
    assert_eq!(s.verified + s.sealed + s.unauthenticated + s.seal_failed, 0);
    let names: Vec<&str> = s.counters().iter().map(|c| c.0).collect();
    assert_eq!(
        names,
        [
            "sealed",
            "verified",
            "unauthenticated",
            "bad_mac",
            "replayed",
            "too_old",
            "seal_failed"
        ]
    );
    assert_eq!(s.counters()[4].1, 2);
}
