//! Connections a dead daemon held, and ending them at once after a restart.
//!
//! A split-TCP relay terminates each connection twice, with its own sequence numbers on each
//! leg; when the relay dies (`kill -9`, a crash, an upgrade), the two ends' sequence spaces
//! never meet, and their segments go around the dead daemon (the path fails open, see
//! [`crate::routing`]). Neither end can make progress, and an end with nothing to send (a client
//! waiting for a download) would wait forever. So the daemon keeps a *journal* of the
//! connections it splits ([`write_journal`], throttled, atomic), and the next start resets each
//! journalled connection at the first segment it sees of it, from whichever end:
//!
//! - to the segment's sender, a RST from its peer's address with `seq` = the segment's
//!   acknowledgement number: exactly the sender's `RCV.NXT`, which RFC 5961 §3.2 accepts;
//! - to the segment's receiver, an empty ACK from the sender's address with a sequence number
//!   half the sequence space away (outside any window): RFC 9293 §3.10.7.4 makes the receiver
//!   answer with an ACK carrying its own `RCV.NXT`, which the first rule then resets. So an end
//!   that is silent is reached too, one round trip after the other end's next segment.
//!
//! Linux answers at most one out-of-window segment per socket every 500 ms
//! (`tcp_invalid_ratelimit`), and the end may have just answered one of its peer's segments
//! that went around the dead daemon, so the probe is repeated every [`PROBE_EVERY`] (up to
//! [`PROBES`] times) until that end's answer has been reset.
//!
//! The segment itself is dropped. Connections opened while the daemon was down are not in the
//! journal, and pass untouched.

use std::collections::HashMap;
use std::net::{Ipv4Addr, SocketAddrV4};

use satpep_proto::time::Duration;
use satpep_proto::wire::{emit_ipv4_tcp, Ipv4Repr, SeqNumber, TcpFlags, TcpRepr, IPPROTO_TCP};
use satpep_proto::{Instant, Packet};

/// How long a journalled connection is waited for before it is forgotten (its ends have given
/// up by then: Linux's `tcp_retries2` takes about 15 minutes, but a silent end needs its peer's
/// next segment, which comes within a few retransmission timeouts).
pub const ORPHAN_TTL: Duration = Duration::from_secs(600);

/// Time between probes to an end not yet reset (above Linux's 500 ms `tcp_invalid_ratelimit`).
pub const PROBE_EVERY: Duration = Duration::from_millis(600);
/// Probes sent to one end before giving up on it.
pub const PROBES: u8 = 10;

/// A connection by its two ends, as the journal writes it (opener first).
pub type Ends = (SocketAddrV4, SocketAddrV4);

/// The journal's text: one `opener listener` line per connection.
pub fn journal_text(flows: impl Iterator<Item = Ends>) -> String {
    let mut s = String::new();
    for (a, b) in flows {
        s += &format!("{a} {b}\n");
    }
    s
}

/// Parse a journal; lines that are not two `address:port` are skipped (and counted).
pub fn parse_journal(text: &str) -> (Vec<Ends>, usize) {
    let mut v = Vec::new();
    let mut bad = 0;
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let mut it = line.split_whitespace();
        match (
            it.next().and_then(|a| a.parse().ok()),
            it.next().and_then(|b| b.parse().ok()),
            it.next(),
        ) {
            (Some(a), Some(b), None) => v.push((a, b)),
            _ => bad += 1,
        }
    }
    (v, bad)
}

/// Counters.
#[derive(Clone, Copy, Debug, Default, Eq, PartialEq)]
pub struct OrphanStats {
    /// Connections loaded from the journal.
    pub loaded: u64,
    /// Segments of journalled connections dropped.
    pub segments: u64,
    /// RSTs sent.
    pub resets: u64,
    /// Probes (out-of-window ACKs) sent to a segment's receiver.
    pub probes: u64,
    /// Connections forgotten after [`ORPHAN_TTL`] without a segment from each end.
    pub expired: u64,
}

#[derive(Clone, Copy, Debug)]
struct Orphan {
    /// A RST went to the lower / higher end (by [`key`] order).
    reset: [bool; 2],
    until: Instant,
    /// The probe to repeat toward the end not yet reset: (from, to, seq, ack), when, how many
    /// more.
    probe: Option<Probe>,
}

#[derive(Clone, Copy, Debug)]
struct Probe {
    from: SocketAddrV4,
    to: SocketAddrV4,
    seq: SeqNumber,
    ack: SeqNumber,
    next: Instant,
    left: u8,
}

impl Probe {
    fn packet(&self) -> Packet {
        segment(
            self.from,
            self.to,
            self.seq,
            Some(self.ack),
            TcpFlags::default(),
        )
    }
}

/// The connections a predecessor held.
#[derive(Clone, Debug, Default)]
pub struct Orphans {
    dead: HashMap<Ends, Orphan>,
    stats: OrphanStats,
}

/// The connection key with the lower end first, and which index `src` is.
fn key(src: SocketAddrV4, dst: SocketAddrV4) -> (Ends, usize) {
    if (src.ip().octets(), src.port()) <= (dst.ip().octets(), dst.port()) {
        ((src, dst), 0)
    } else {
        ((dst, src), 1)
    }
}

impl Orphans {
    /// The journalled connections, waited for until `now + ORPHAN_TTL`.
    pub fn new(flows: &[Ends], now: Instant) -> Self {
        let until = now + ORPHAN_TTL;
        let dead: HashMap<Ends, Orphan> = flows
            .iter()
            .map(|&(a, b)| {
                (
                    key(a, b).0,
                    Orphan {
                        reset: [false; 2],
                        until,
                        probe: None,
                    },
                )
            })
            .collect();
        let loaded = dead.len() as u64;
        Self {
            dead,
            stats: OrphanStats {
                loaded,
                ..OrphanStats::default()
            },
        }
    }

    /// Whether nothing is waited for.
    pub fn is_empty(&self) -> bool {
        self.dead.is_empty()
    }

    /// Counters.
    pub fn stats(&self) -> OrphanStats {
        self.stats
    }

    /// If `pkt` is a segment of a journalled connection: the packets to send instead (a RST to
    /// its sender, a probe to its receiver), and `pkt` is consumed. Otherwise `Err(pkt)`.
    pub fn intercept(&mut self, now: Instant, pkt: Packet) -> Result<Vec<Packet>, Packet> {
        if self.dead.is_empty() {
            return Err(pkt);
        }
        let Ok((ip, tcp)) = satpep_proto::wire::parse_packet(&pkt) else {
            return Err(pkt);
        };
        let src = SocketAddrV4::new(ip.src, tcp.src_port);
        let dst = SocketAddrV4::new(ip.dst, tcp.dst_port);
        let (k, side) = key(src, dst);
        let Some(o) = self.dead.get_mut(&k) else {
            return Err(pkt);
        };
        if o.until <= now {
            self.dead.remove(&k);
            self.stats.expired += 1;
            return Err(pkt);
        }
        if tcp.flags.contains(TcpFlags::SYN) && tcp.ack.is_none() {
            // A new connection on the same ends: the old one is over for its opener.
            self.dead.remove(&k);
            return Err(pkt);
        }
        self.stats.segments += 1;
        let mut out = Vec::new();
        if tcp.flags.contains(TcpFlags::RST) {
            // The end gave up by itself: nothing to answer; its peer still needs its reset.
            o.reset[side] = true;
        } else if let Some(ack) = tcp.ack {
            out.push(segment(dst, src, ack, None, TcpFlags::RST));
            o.reset[side] = true;
            self.stats.resets += 1;
        }
        if !o.reset[1 - side] && o.probe.is_none() {
            let probe = Probe {
                from: src,
                to: dst,
                seq: tcp.seq + (1u32 << 31),
                // With the ACK bit (any value): Linux discards a segment without it unread.
                ack: tcp.ack.unwrap_or(tcp.seq),
                next: now + PROBE_EVERY,
                left: PROBES - 1,
            };
            out.push(probe.packet());
            o.probe = Some(probe);
            self.stats.probes += 1;
        }
        if o.reset[1 - side] {
            o.probe = None;
        }
        if o.reset == [true, true] {
            self.dead.remove(&k);
        }
        Ok(out)
    }

    /// When the next probe is due.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.dead
            .values()
            .filter_map(|o| o.probe.map(|p| p.next))
            .min()
    }

    /// Probes due by `now` (early calls return none).
    pub fn handle_timeout(&mut self, now: Instant) -> Vec<Packet> {
        let mut out = Vec::new();
        for o in self.dead.values_mut() {
            let Some(p) = o.probe.as_mut() else { continue };
            if p.next > now {
                continue;
            }
            out.push(p.packet());
            self.stats.probes += 1;
            p.left = p.left.saturating_sub(1);
            p.next = now + PROBE_EVERY;
            if p.left == 0 {
                o.probe = None;
            }
        }
        out
    }

    /// Forget connections whose time ran out.
    pub fn expire(&mut self, now: Instant) {
        let before = self.dead.len();
        self.dead.retain(|_, o| o.until > now);
        self.stats.expired += (before - self.dead.len()) as u64;
    }
}

/// An empty segment `from → to` with `seq`, `ack` (the ACK bit is set iff `ack` is `Some`) and
/// `flags` (TTL 64, window 0).
fn segment(
    from: SocketAddrV4,
    to: SocketAddrV4,
    seq: SeqNumber,
    ack: Option<SeqNumber>,
    flags: TcpFlags,
) -> Packet {
    let ip = Ipv4Repr {
        src: *from.ip(),
        dst: *to.ip(),
        protocol: IPPROTO_TCP,
        ttl: 64,
        ident: 0,
        dscp_ecn: 0,
        payload_len: 0,
    };
    let tcp = TcpRepr {
        src_port: from.port(),
        dst_port: to.port(),
        seq,
        ack,
        flags,
        window: 0,
        ..TcpRepr::default()
    };
    Packet::build(0, |b| emit_ipv4_tcp(&ip, &tcp, b))
}

/// `addr:port` of an IPv4 address and port (for the journal from relay snapshots).
pub fn ends(a: (Ipv4Addr, u16), b: (Ipv4Addr, u16)) -> Ends {
    (SocketAddrV4::new(a.0, a.1), SocketAddrV4::new(b.0, b.1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use satpep_proto::wire::parse_packet;

    const C: SocketAddrV4 = SocketAddrV4::new(Ipv4Addr::new(10, 77, 1, 2), 40_000);
    const S: SocketAddrV4 = SocketAddrV4::new(Ipv4Addr::new(10, 77, 2, 2), 80);
    const OTHER: SocketAddrV4 = SocketAddrV4::new(Ipv4Addr::new(10, 77, 1, 2), 40_001);

    fn seg(from: SocketAddrV4, to: SocketAddrV4, seq: u32, ack: u32, flags: TcpFlags) -> Packet {
        segment(from, to, SeqNumber(seq), Some(SeqNumber(ack)), flags)
    }

    fn parsed(p: &Packet) -> (Ipv4Repr, TcpRepr) {
        parse_packet(p).expect("valid segment")
    }

    #[test]
    fn the_journal_round_trips_and_skips_damaged_lines() {
        let text = journal_text([(C, S), (OTHER, S)].into_iter());
        assert_eq!(
            text,
            "10.77.1.2:40000 10.77.2.2:80\n10.77.1.2:40001 10.77.2.2:80\n"
        );
        let (v, bad) = parse_journal(&format!("{text}garbage\n1.2.3.4:5\n\n"));
        assert_eq!(v, vec![(C, S), (OTHER, S)]);
        assert_eq!(bad, 2);
    }

    #[test]
    fn the_server_is_reset_at_its_rcv_nxt_and_the_silent_client_probed_then_reset() {
        let mut o = Orphans::new(&[(C, S)], Instant::ZERO);
        // The server retransmits: seq 5000, it expects 777 from the client.
        let out = o
            .intercept(Instant(1), seg(S, C, 5000, 777, TcpFlags::default()))
            .expect("journalled");
        assert_eq!(out.len(), 2);
        let (ip, rst) = parsed(&out[0]);
        assert_eq!((ip.src, ip.dst), (*C.ip(), *S.ip()));
        assert_eq!((rst.src_port, rst.dst_port), (C.port(), S.port()));
        assert_eq!(rst.seq, SeqNumber(777), "exactly the server's RCV.NXT");
        assert!(rst.flags.contains(TcpFlags::RST) && rst.ack.is_none());
        let (ip, probe) = parsed(&out[1]);
        assert_eq!((ip.src, ip.dst), (*S.ip(), *C.ip()));
        assert_eq!(probe.seq, SeqNumber(5000u32.wrapping_add(1 << 31)));
        assert!(probe.ack.is_some() && !probe.flags.contains(TcpFlags::RST));
        // The client answers the probe with its RCV.NXT (123): reset there, and done.
        let out = o
            .intercept(Instant(2), seg(C, S, 777, 123, TcpFlags::default()))
            .expect("still journalled");
        assert_eq!(out.len(), 1, "no probe toward an end already reset");
        let (_, rst) = parsed(&out[0]);
        assert_eq!(rst.seq, SeqNumber(123));
        assert_eq!((rst.src_port, rst.dst_port), (S.port(), C.port()));
        assert!(o.is_empty());
        assert_eq!(o.poll_timeout(), None);
        assert_eq!(
            o.stats(),
            OrphanStats {
                loaded: 1,
                segments: 2,
                resets: 2,
                probes: 1,
                expired: 0
            }
        );
        // Afterwards the 4-tuple is free again.
        assert!(o
            .intercept(Instant(3), seg(C, S, 1, 1, TcpFlags::default()))
            .is_err());
    }

    #[test]
    fn a_new_syn_on_journalled_ends_passes_and_forgets_the_old_connection() {
        let mut o = Orphans::new(&[(C, S)], Instant::ZERO);
        let syn = segment(C, S, SeqNumber(9), None, TcpFlags::SYN);
        assert!(o.intercept(Instant(1), syn).is_err());
        assert!(o.is_empty());
    }

    #[test]
    fn a_silent_end_is_probed_again_until_it_answers_then_not_beyond_the_limit() {
        let mut o = Orphans::new(&[(C, S)], Instant::ZERO);
        let first = o
            .intercept(Instant(1), seg(S, C, 5000, 777, TcpFlags::default()))
            .expect("j");
        assert_eq!(first.len(), 2);
        assert!(o.handle_timeout(Instant(2)).is_empty(), "not due yet");
        let due = Instant(1) + PROBE_EVERY;
        assert_eq!(o.poll_timeout(), Some(due));
        let again = o.handle_timeout(due);
        assert_eq!(again.len(), 1);
        assert_eq!(parsed(&again[0]), parsed(&first[1]), "the same probe");
        // The client answers the second probe: reset, and no more probes.
        let out = o
            .intercept(due, seg(C, S, 777, 123, TcpFlags::default()))
            .expect("j");
        assert_eq!(out.len(), 1);
        assert_eq!(o.poll_timeout(), None);

        // An end that never answers gets PROBES probes in all.
        let mut o = Orphans::new(&[(C, S)], Instant::ZERO);
        o.intercept(Instant(1), seg(S, C, 5000, 777, TcpFlags::default()))
            .expect("j");
        let mut now = Instant(1);
        while let Some(t) = o.poll_timeout() {
            now = t;
            o.handle_timeout(now);
        }
        assert_eq!(o.stats().probes, u64::from(PROBES));
        assert_eq!(
            now,
            Instant(1) + Duration(PROBE_EVERY.0 * u64::from(PROBES - 1))
        );
    }

    #[test]
    fn other_connections_pass_and_journalled_ones_expire() {
        let mut o = Orphans::new(&[(C, S)], Instant::ZERO);
        assert!(o
            .intercept(Instant(1), seg(OTHER, S, 1, 1, TcpFlags::default()))
            .is_err());
        let late = Instant::ZERO + ORPHAN_TTL;
        assert!(o
            .intercept(late, seg(C, S, 1, 1, TcpFlags::default()))
            .is_err());
        assert_eq!(o.stats().expired, 1);
        assert!(o.is_empty());
    }

    #[test]
    fn an_end_that_resets_itself_needs_no_reset_but_its_peer_is_probed() {
        let mut o = Orphans::new(&[(C, S)], Instant::ZERO);
        let out = o
            .intercept(Instant(1), seg(C, S, 10, 20, TcpFlags::RST))
            .expect("journalled");
        assert_eq!(out.len(), 1);
        let (ip, probe) = parsed(&out[0]);
        assert_eq!(ip.dst, *S.ip());
        assert!(!probe.flags.contains(TcpFlags::RST));
        assert_eq!(o.stats().resets, 0);
    }
}
