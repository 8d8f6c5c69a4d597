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

use std::collections::VecDeque;
use std::net::Ipv4Addr;

use serde::{Deserialize, Serialize};

use crate::wire::{checksum, ipip, IPPROTO_IPIP, IPPROTO_TCP};
use crate::{Instant, Node, Packet, PortId, Transmit};

/// Settings (`middlebox = { kind = "ipip_tunnel", … }`).
#[derive(Clone, Debug, Deserialize, PartialEq, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TunnelConfig {
    /// Our tunnel address: outer source of what we encapsulate; outer packets to it are opened.
    pub local: Ipv4Addr,
    /// The far end: outer destination of what we encapsulate.
    pub remote: Ipv4Addr,
    /// Encapsulate only packets arriving on this port (e.g. from the hybrid host's LAN).
    #[serde(default)]
    pub arrival_port: Option<u16>,
    /// Encapsulate only TCP packets with a source or destination port in this list; empty: all.
    #[serde(default)]
    pub ports: Vec<u16>,
}

impl TunnelConfig {
    /// Check values a scenario could get wrong; the message starts with the key.
    pub fn validate(&self) -> Result<(), String> {
        if self.local == self.remote {
            return Err("remote: must differ from `local`".into());
        }
        Ok(())
    }
}

/// Counters.
#[derive(Clone, Copy, Debug, Default, Eq, PartialEq, Serialize)]
pub struct TunnelStats {
    /// Packets encapsulated.
    pub encapsulated: u64,
    /// Packets decapsulated.
    pub decapsulated: u64,
    /// Packets to us that were not a valid tunnel packet (dropped).
    pub malformed: u64,
    /// Packets too long to encapsulate (header room), passed unchanged.
    pub too_long: u64,
}

/// The tunnel endpoint.
#[derive(Clone, Debug)]
pub struct Tunnel {
    config: TunnelConfig,
    out: VecDeque<Packet>,
    stats: TunnelStats,
    ident: u16,
}

const OUTER: usize = 20;

impl Tunnel {
    /// A tunnel endpoint.
    pub fn new(config: TunnelConfig) -> Self {
        Self {
            config,
            out: VecDeque::new(),
            stats: TunnelStats::default(),
            ident: 0,
        }
    }

    /// Counters.
    pub fn stats(&self) -> TunnelStats {
        self.stats
    }

    fn selected(&self, port: PortId, h: &[u8]) -> bool {
        if self.config.arrival_port.is_some_and(|p| p != port.0) {
            return false;
        }
        if self.config.ports.is_empty() {
            return true;
        }
        let ihl = usize::from(h[0] & 0x0f) * 4;
        if h[9] != IPPROTO_TCP || h.len() < ihl + 4 {
            return false;
        }
        let sport = u16::from_be_bytes([h[ihl], h[ihl + 1]]);
        let dport = u16::from_be_bytes([h[ihl + 2], h[ihl + 3]]);
        self.config.ports.contains(&sport) || self.config.ports.contains(&dport)
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

/// The inner packet of a plain tunnel packet (in place), or `None` if the outer header is not
/// valid.
fn decapsulate(mut pkt: Packet) -> Option<Packet> {
    let h = pkt.header();
    if h.len() < OUTER + 20 || h[0] != 0x45 || h[9] != IPPROTO_IPIP {
        return None;
    }
    if !checksum::is_valid(checksum::sum(0, &h[..OUTER])) {
        return None;
    }
    let total = u64::from(u16::from_be_bytes([h[2], h[3]]));
    let inner_total = u64::from(u16::from_be_bytes([h[OUTER + 2], h[OUTER + 3]]));
    if total != pkt.wire_len() || inner_total + OUTER as u64 != total {
        return None;
    }
    pkt.strip_header_front(OUTER);
    Some(pkt)
}

impl Node for Tunnel {
    fn handle_packet(&mut self, _now: Instant, port: PortId, pkt: Packet) {
        let h = pkt.header();
        if h.len() < 20 {
            self.out.push_back(pkt);
            return;
        }
        let dst = Ipv4Addr::new(h[16], h[17], h[18], h[19]);
        if dst == self.config.local && h[9] == IPPROTO_IPIP {
            match decapsulate(pkt) {
                Some(inner) => {
                    self.stats.decapsulated += 1;
                    self.out.push_back(inner);
                }
                None => self.stats.malformed += 1,
            }
            return;
        }
        if self.selected(port, h) {
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

    #[test]
    fn selected_packets_cross_the_tunnel_byte_for_byte_and_others_pass() {
        let term = Ipv4Addr::new(10, 0, 2, 1);
        let isp = Ipv4Addr::new(10, 0, 5, 1);
        let mut a = Tunnel::new(TunnelConfig {
            local: term,
            remote: isp,
            arrival_port: Some(1),
            ports: vec![80],
        });
        let mut b = Tunnel::new(TunnelConfig {
            local: isp,
            remote: term,
            arrival_port: None,
            ports: vec![23],
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
        assert_eq!(b.stats().malformed, 1);
    }

    #[test]
    fn data_packets_keep_their_payload_length_through_the_tunnel() {
        let (x, y) = (Ipv4Addr::new(1, 1, 1, 1), Ipv4Addr::new(2, 2, 2, 2));
        let mut a = Tunnel::new(TunnelConfig {
            local: x,
            remote: y,
            arrival_port: None,
            ports: vec![],
        });
        let mut b = Tunnel::new(TunnelConfig {
            local: y,
            remote: x,
            arrival_port: Some(99),
            ports: vec![],
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
        assert_eq!(c.stats().decapsulated + c.stats().malformed, 0);
    }
}
