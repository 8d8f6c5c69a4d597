//! `satpep shell`: a command in the client host's namespace, with the scenario's path between
//! it and the namespace the shell was started in (the *outer* namespace), as Mahimahi's
//! `mm-delay` puts a shell behind a delay.
//!
//! Addresses. The scenario's own host addresses (10.0.x.x in the built-in scenario) would be
//! put on a device in the outer namespace, where they could shadow a real network; a shell
//! therefore renumbers the scenario's hosts inside a block of the shared address space
//! 100.64.0.0/10 (RFC 6598, also Mahimahi's choice), and a nested shell must number its hosts
//! so that every namespace on the way routes its packets the right way:
//!
//! - A top-level shell takes the first block `100.(64+k).0.0/16` (k < 64) that no address or
//!   route of the outer namespace touches.
//! - A shell that owns block P (a prefix of length n < 24) numbers the scenario's hosts in the
//!   first /24 of P (`.1`, `.2`, … in host order) and hands the upper half of P (length n + 1)
//!   to shells started inside it, through `SATPEP_SHELL_PREFIX`. So a /16 allows 7 levels.
//! - The outer namespace gets a TUN device `sp<pid>` holding the outer host's address and a
//!   route for all of P: the shell's client and every shell nested inside it are reached
//!   through it, while addresses of shells further out are not in P and leave by the outer
//!   namespace's own default route.
//!
//! The emulated network routes only its scenario's addresses. A packet from the outer
//! namespace for an address it does not know (a nested shell's host) is carried to the client
//! host inside an IPv4-in-IPv4 header (outer source: the outer host, destination: the client
//! host) that the emulator removes again before the client's namespace sees it; packets from
//! the client for unknown addresses go the other way to the outer host. The intermediate
//! namespaces forward (`ip_forward = 1`, set in the namespaces the shell creates). The links
//! model 20 more bytes for such packets and middleboxes see a tunnel; traffic of the shell's
//! own hosts is never wrapped.

use std::net::Ipv4Addr;

/// Environment variable holding the prefix handed to nested shells (`a.b.c.d/n`).
pub const ENV_PREFIX: &str = "SATPEP_SHELL_PREFIX";
/// Environment variable holding the outer host's address: what the shell's command connects
/// to in order to reach a server running where the shell was started.
pub const ENV_HOST: &str = "SATPEP_SHELL_HOST";
/// Environment variable holding the client host's own address.
pub const ENV_CLIENT: &str = "SATPEP_SHELL_CLIENT";
/// Environment variable holding the nesting depth (1 inside a top-level shell).
pub const ENV_DEPTH: &str = "SATPEP_SHELL_DEPTH";

/// Bytes of the IPv4 header a wrapped packet carries in front of the original.
pub const WRAP_LEN: usize = 20;

/// IP protocol number of IPv4-in-IPv4.
const IPIP: u8 = 4;

/// The block of addresses one shell numbers its hosts in.
#[derive(Clone, Copy, Debug, Eq, PartialEq)]
pub struct AddressPlan {
    /// First address of the block.
    pub base: Ipv4Addr,
    /// Prefix length of the block (16 for a top-level shell).
    pub len: u8,
    /// How deep this shell is nested (0: started outside any shell).
    pub depth: u32,
}

impl AddressPlan {
    /// The plan of a top-level shell whose block is `100.(64+k).0.0/16`.
    pub fn top(k: u8) -> Self {
        Self {
            base: Ipv4Addr::new(100, 64 + (k % 64), 0, 0),
            len: 16,
            depth: 0,
        }
    }

    /// The plan of a shell started inside another, from the outer shell's
    /// [`ENV_PREFIX`]/[`ENV_DEPTH`] values. `None` when the text is not `a.b.c.d/n`
    /// with n < 24 (no room left for another level).
    pub fn nested(prefix: &str, depth: &str) -> Option<Self> {
        let (addr, len) = prefix.trim().split_once('/')?;
        let base: Ipv4Addr = addr.parse().ok()?;
        let len: u8 = len.parse().ok()?;
        if !(8..24).contains(&len) {
            return None;
        }
        Some(Self {
            base,
            len,
            depth: depth.trim().parse().ok()?,
        })
    }

    /// Address of the `i`-th host of the scenario (in node order); `None` beyond 253 hosts.
    pub fn host(&self, i: usize) -> Option<Ipv4Addr> {
        let i = u32::try_from(i).ok().filter(|&i| i < 253)?;
        Some(Ipv4Addr::from(u32::from(self.base) + i + 1))
    }

    /// The block handed to shells started inside this one: the upper half of this one.
    /// `None` when this block is a /23 or longer (its first /24 would overlap the half).
    pub fn child(&self) -> Option<Self> {
        if self.len >= 23 {
            return None;
        }
        Some(Self {
            base: Ipv4Addr::from(u32::from(self.base) + (1u32 << (31 - u32::from(self.len)))),
            len: self.len + 1,
            depth: self.depth + 1,
        })
    }

    /// `a.b.c.d/n`, as `ip route` takes it.
    pub fn cidr(&self) -> String {
        format!("{}/{}", self.base, self.len)
    }

    /// Whether `addr` lies in this block.
    pub fn contains(&self, addr: Ipv4Addr) -> bool {
        let mask = u32::MAX.checked_shl(32 - u32::from(self.len)).unwrap_or(0);
        u32::from(addr) & mask == u32::from(self.base) & mask
    }
}

/// The first top-level block `k` (0..64) none of whose addresses appears in `ip -4 addr` /
/// `ip -4 route` output `text` of the outer namespace.
pub fn free_top_block(text: &str) -> Option<u8> {
    let used: Vec<Ipv4Addr> = text
        .split(|c: char| !(c.is_ascii_digit() || c == '.'))
        .filter_map(|w| w.parse().ok())
        .collect();
    (0..64u8).find(|&k| {
        let plan = AddressPlan::top(k);
        !used.iter().any(|&a| plan.contains(a))
    })
}

/// Destination address of an IPv4 packet, if it is one.
pub fn destination(pkt: &[u8]) -> Option<Ipv4Addr> {
    if pkt.len() < 20 || pkt[0] >> 4 != 4 {
        return None;
    }
    Some(Ipv4Addr::new(pkt[16], pkt[17], pkt[18], pkt[19]))
}

/// Put an IPv4-in-IPv4 header from `src` to `dst` in front of the `len` bytes at the start of
/// `buf` (which must have [`WRAP_LEN`] bytes to spare); returns the new length, or `None` when
/// the result would exceed an IPv4 datagram (then the packet is left as it was).
pub fn wrap(buf: &mut [u8], len: usize, src: Ipv4Addr, dst: Ipv4Addr) -> Option<usize> {
    let total = len + WRAP_LEN;
    if total > usize::from(u16::MAX) || buf.len() < total || len < 20 {
        return None;
    }
    buf.copy_within(0..len, WRAP_LEN);
    let ttl = buf[WRAP_LEN + 8];
    let h = &mut buf[..WRAP_LEN];
    h.fill(0);
    h[0] = 0x45;
    h[2..4].copy_from_slice(&(total as u16).to_be_bytes());
    h[6] = 0x40; // don't fragment, as the packets of the hosts' own TCP are
    h[8] = ttl.max(1);
    h[9] = IPIP;
    h[12..16].copy_from_slice(&src.octets());
    h[16..20].copy_from_slice(&dst.octets());
    let sum = checksum(h);
    h[10..12].copy_from_slice(&sum.to_be_bytes());
    Some(total)
}

/// Whether `head` (the first bytes of a packet the network delivers) starts with a header
/// [`wrap`] made from `src` to `dst`: then the first [`WRAP_LEN`] bytes are to be removed.
pub fn is_wrapped(head: &[u8], src: Ipv4Addr, dst: Ipv4Addr) -> bool {
    head.len() >= 2 * WRAP_LEN
        && head[0] == 0x45
        && head[9] == IPIP
        && head[12..16] == src.octets()
        && head[16..20] == dst.octets()
}

/// The Internet checksum (RFC 1071) of `b`.
fn checksum(b: &[u8]) -> u16 {
    let mut sum: u32 = b
        .chunks(2)
        .map(|c| u32::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)])))
        .sum();
    while sum >> 16 != 0 {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nested_blocks_halve_and_never_overlap_their_parents_hosts() {
        let top = AddressPlan::top(0);
        assert_eq!(top.cidr(), "100.64.0.0/16");
        assert_eq!(top.host(0), Some(Ipv4Addr::new(100, 64, 0, 1)));
        assert_eq!(top.host(1), Some(Ipv4Addr::new(100, 64, 0, 2)));
        let c1 = top.child().unwrap();
        assert_eq!(c1.cidr(), "100.64.128.0/17");
        assert_eq!(c1.depth, 1);
        let c2 = c1.child().unwrap();
        assert_eq!(c2.cidr(), "100.64.192.0/18");
        // Every level's hosts are inside its own block and its parents' blocks, and outside
        // its children's: a namespace routes them inward, its parents' hosts outward.
        let mut plan = top;
        let mut levels = vec![top];
        while let Some(c) = plan.child() {
            levels.push(c);
            plan = c;
        }
        assert_eq!(levels.len(), 8, "a /16 gives 7 nested levels below the top");
        assert_eq!(levels.last().unwrap().cidr(), "100.64.254.0/23");
        for (d, l) in levels.iter().enumerate() {
            for i in 0..253 {
                let a = l.host(i).unwrap();
                assert!(levels[..=d].iter().all(|p| p.contains(a)), "{a} in parents");
                assert!(
                    !levels[d + 1..].iter().any(|c| c.contains(a)),
                    "{a} not inward"
                );
            }
        }
        assert_eq!(top.host(253), None);
    }

    #[test]
    fn nested_plans_read_back_from_the_environment() {
        let c = AddressPlan::top(3).child().unwrap();
        assert_eq!(AddressPlan::nested(&c.cidr(), "1"), Some(c));
        assert_eq!(AddressPlan::nested("100.64.255.0/24", "8"), None);
        assert_eq!(AddressPlan::nested("junk", "1"), None);
        assert_eq!(AddressPlan::nested("100.64.128.0/17", "x"), None);
    }

    #[test]
    fn a_block_seen_in_the_outer_namespace_is_not_taken() {
        let ip = "2: eth0    inet 10.1.2.3/24 brd 10.1.2.255 scope global eth0\n\
                  5: sp4711    inet 100.64.0.1/32 scope global sp4711\n\
                  100.65.0.0/16 dev sp4712 scope link\n";
        assert_eq!(free_top_block(ip), Some(2));
        assert_eq!(free_top_block(""), Some(0));
        assert_eq!(
            free_top_block("inet 100.100.1.1/32"),
            Some(0),
            "k = 36 only"
        );
    }

    #[test]
    fn wrap_prefixes_a_valid_ipip_header_and_is_recognised() {
        // A 28-byte ICMP echo from 100.64.128.2 to 100.64.0.1, TTL 63.
        let mut pkt = vec![0u8; 100];
        pkt[0] = 0x45;
        pkt[3] = 28;
        pkt[8] = 63;
        pkt[9] = 1;
        pkt[12..16].copy_from_slice(&[100, 64, 128, 2]);
        pkt[16..20].copy_from_slice(&[100, 64, 0, 1]);
        let orig = pkt[..28].to_vec();
        let (s, d) = (Ipv4Addr::new(100, 64, 0, 2), Ipv4Addr::new(100, 64, 0, 1));
        let n = wrap(&mut pkt, 28, s, d).unwrap();
        assert_eq!(n, 48);
        assert_eq!(pkt[..10], [0x45, 0, 0, 48, 0, 0, 0x40, 0, 63, 4]);
        assert_eq!(pkt[12..20], [100, 64, 0, 2, 100, 64, 0, 1]);
        assert_eq!(checksum(&pkt[..20]), 0, "header checksum verifies");
        assert_eq!(pkt[20..48], orig[..]);
        assert_eq!(destination(&pkt), Some(d));
        assert!(is_wrapped(&pkt[..48], s, d));
        assert!(!is_wrapped(&pkt[..48], d, s), "only our own direction");
        assert!(!is_wrapped(&orig, s, d), "a plain packet is not wrapped");
        // No room: left alone.
        let mut small = orig.clone();
        assert_eq!(wrap(&mut small, 28, s, d), None);
        assert_eq!(small, orig);
    }

    #[test]
    fn checksum_matches_rfc1071_example() {
        // RFC 1071 §3: 0001 f203 f4f5 f6f7 sums (with carries) to ddf2; the checksum is !ddf2.
        assert_eq!(
            checksum(&[0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7]),
            !0xddf2
        );
    }
}
