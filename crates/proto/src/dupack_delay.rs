//! Delayed duplicate ACKs (Vaidya, Mehta, Perkins, Montenegro: "Delayed duplicate
//! acknowledgements: a TCP-unaware approach to improve performance of TCP over wireless",
//! Wireless Networks 8, 2002), as an element on the receiver's side of the lossy hop.
//!
//! The first `threshold − 1` duplicate ACKs of a run pass at once (they keep the sender's
//! ACK clock going); the `threshold`-th and later ones are held for `delay` and released in
//! order. A new ACK (the missing segment arrived, typically repaired by a link-level
//! retransmission) drops the held duplicates, so the sender never reaches its fast-retransmit
//! threshold for a loss that was repaired locally. The choice of `delay` is the scheme's
//! known difficulty (Karaliopoulos et al. §3): shorter than a local repair and it hides
//! nothing, longer than the sender's RTO margin and the sender times out.
//!
//! Only pure ACKs arriving on `port` (the receiver side) are considered; data, SYN, FIN and
//! RST segments pass untouched.
//!
//! Flow state lives in a [`FlowTable`] of at most `max_flows` flows: a flow is forgotten on a
//! RST (its held duplicates released first, in order), on the ACK sender's FIN once nothing is
//! held, or after `idle_timeout` without a packet. ACKs of a flow the full table refuses pass
//! at once (counted in `flows_refused`): no delay, which is what the sender would see without
//! the element.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

use crate::flow::{FlowId, FlowKey, FlowTable};

use crate::time::{Duration, Instant};
use crate::wire::{parse_packet, SeqNumber, TcpFlags};
use crate::{Node, Packet, PortId, Transmit};

/// Settings (`middlebox = { kind = "dupack_delay", … }`).
#[derive(Clone, Debug, Deserialize, PartialEq, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct DupAckDelayConfig {
    /// How long the `threshold`-th and later duplicate ACKs are held. Default `"600ms"` (a
    /// little more than a GEO round trip, the time a local retransmission needs).
    pub delay: Duration,
    /// Which duplicate is the first to be held (the sender's dupthresh). Default 3.
    pub threshold: u32,
    /// Arrival port of the ACKs to act on (the receiver's side); `None`: every port.
    pub port: Option<u16>,
    /// Flows tracked at most; ACKs of further flows pass at once. Default 4096.
    pub max_flows: u32,
    /// A flow without a packet for this long is forgotten. Default `"120s"`.
    pub idle_timeout: Duration,
}

impl Default for DupAckDelayConfig {
    fn default() -> Self {
        Self {
            delay: Duration::from_millis(600),
            threshold: 3,
            port: None,
            max_flows: 4096,
            idle_timeout: Duration::from_secs(120),
        }
    }
}

impl DupAckDelayConfig {
    /// Check values a scenario could get wrong; the message starts with the key.
    pub fn validate(&self) -> Result<(), String> {
        if self.threshold == 0 {
            return Err("threshold: must be at least 1".into());
        }
        if self.max_flows == 0 {
            return Err("max_flows: must be at least 1".into());
        }
        if self.idle_timeout == Duration::ZERO {
            return Err("idle_timeout: must be > 0".into());
        }
        Ok(())
    }
}

/// Counters.
#[derive(Clone, Copy, Debug, Default, Eq, PartialEq, Serialize)]
pub struct DupAckDelayStats {
    /// Duplicate ACKs held.
    pub held: u64,
    /// Held duplicates released after `delay` (the loss was not repaired in time).
    pub released: u64,
    /// Held duplicates dropped because a new ACK came first.
    pub dropped: u64,
    /// New flows not tracked because `max_flows` were (their ACKs passed at once).
    pub flows_refused: u64,
    /// Flows forgotten after `idle_timeout` without a packet.
    pub flows_idle_expired: u64,
}

#[derive(Clone, Debug, Default)]
struct Flow {
    last_ack: Option<SeqNumber>,
    dups: u32,
    held: VecDeque<(Instant, Packet)>,
    /// The ACK sender sent its FIN: forget the flow once nothing is held.
    fin: bool,
}

/// The delayed-duplicate-ACK element.
#[derive(Clone, Debug)]
pub struct DupAckDelay {
    config: DupAckDelayConfig,
    /// Keyed by the ACK direction (ACK sender → ACK receiver); the deadline is the release
    /// time of the oldest held duplicate.
    flows: FlowTable<Flow>,
    /// Flows due in the current `handle_timeout` (kept to reuse its allocation).
    due: Vec<FlowId>,
    out: VecDeque<Packet>,
    stats: DupAckDelayStats,
}

impl DupAckDelay {
    /// An element holding nothing.
    pub fn new(config: DupAckDelayConfig) -> Self {
        Self {
            flows: FlowTable::new(config.max_flows as usize, Some(config.idle_timeout)),
            config,
            due: Vec::new(),
            out: VecDeque::new(),
            stats: DupAckDelayStats::default(),
        }
    }

    /// Counters.
    pub fn stats(&self) -> DupAckDelayStats {
        let t = self.flows.stats();
        DupAckDelayStats {
            flows_refused: t.table_full,
            flows_idle_expired: t.idle_expired,
            ..self.stats
        }
    }

    /// Flows tracked now (at most `max_flows`).
    pub fn flow_count(&self) -> usize {
        self.flows.len()
    }

    /// Counters of the flow table, among them the entries timeouts visited.
    pub fn flow_table_stats(&self) -> crate::flow::FlowTableStats {
        self.flows.stats()
    }

    /// Forget idle flows; whatever they still hold goes out in order.
    fn expire_idle(&mut self, now: Instant) {
        let out = &mut self.out;
        self.flows
            .expire_idle(now, |_, f| out.extend(f.held.into_iter().map(|(_, p)| p)));
    }
}

impl Node for DupAckDelay {
    fn handle_packet(&mut self, now: Instant, port: PortId, pkt: Packet) {
        if self.config.port.is_some_and(|p| p != port.0) {
            self.out.push_back(pkt);
            return;
        }
        let Ok((ip, seg)) = parse_packet(&pkt) else {
            self.out.push_back(pkt);
            return;
        };
        self.expire_idle(now);
        let key = FlowKey::of(&ip, &seg);
        let pure = seg.payload_len == 0
            && !seg.flags.contains(TcpFlags::SYN)
            && !seg.flags.contains(TcpFlags::FIN)
            && !seg.flags.contains(TcpFlags::RST);
        let (Some(ack), true) = (seg.ack, pure) else {
            if seg.flags.contains(TcpFlags::RST) {
                // Nothing held matters any more; release in order before the RST.
                if let Some(f) = self.flows.remove_key(&key) {
                    self.out.extend(f.held.into_iter().map(|(_, p)| p));
                }
            } else if seg.flags.contains(TcpFlags::FIN) {
                if let Some(id) = self.flows.id(&key) {
                    self.flows.touch(now, id);
                    self.flows[id].fin = true;
                    if self.flows[id].held.is_empty() {
                        self.flows.remove(id);
                    }
                }
            } else if let Some(id) = self.flows.id(&key) {
                self.flows.touch(now, id);
            }
            self.out.push_back(pkt);
            return;
        };
        let id = match self.flows.id(&key) {
            Some(id) => id,
            None => match self.flows.insert(now, key, Flow::default()) {
                Ok(id) => id,
                Err(_) => {
                    self.out.push_back(pkt);
                    return;
                }
            },
        };
        self.flows.touch(now, id);
        let f = &mut self.flows[id];
        match f.last_ack {
            Some(last) if ack == last => {
                f.dups += 1;
                if f.dups >= self.config.threshold {
                    self.stats.held += 1;
                    let at = now + self.config.delay;
                    f.held.push_back((at, pkt));
                    if f.held.len() == 1 {
                        self.flows.set_deadline(id, Some(at));
                    }
                    return;
                }
            }
            Some(last) if ack < last => {}
            _ => {
                f.last_ack = Some(ack);
                f.dups = 0;
                self.stats.dropped += f.held.len() as u64;
                f.held.clear();
                if f.fin {
                    self.flows.remove(id);
                } else {
                    self.flows.set_deadline(id, None);
                }
            }
        }
        // A duplicate below the threshold must not overtake held ones (none are held then).
        self.out.push_back(pkt);
    }

    fn handle_timeout(&mut self, now: Instant) {
        self.expire_idle(now);
        let mut due = std::mem::take(&mut self.due);
        self.flows.take_due(now, &mut due);
        for &id in &due {
            let f = &mut self.flows[id];
            while f.held.front().is_some_and(|(t, _)| *t <= now) {
                if let Some((_, p)) = f.held.pop_front() {
                    self.stats.released += 1;
                    self.out.push_back(p);
                }
            }
            match f.held.front() {
                Some(&(at, _)) => self.flows.set_deadline(id, Some(at)),
                None if f.fin => {
                    self.flows.remove(id);
                }
                None => {}
            }
        }
        due.clear();
        self.due = due;
    }

    fn poll_transmit(&mut self, _now: Instant) -> Option<Transmit> {
        self.out.pop_front().map(|pkt| Transmit {
            port: PortId(0),
            pkt,
        })
    }

    fn poll_timeout(&self) -> Option<Instant> {
        self.flows.poll_timeout()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::snoop::{Snoop, SnoopConfig};
    use crate::testnet::{tcp, Hop, Net, MB};
    use crate::time::Bitrate;
    use crate::wire::{emit_ipv4_tcp, Ipv4Repr, TcpRepr, IPPROTO_TCP};
    use std::net::Ipv4Addr;

    fn ack(n: u32) -> Packet {
        let ip = Ipv4Repr {
            src: Ipv4Addr::new(10, 0, 2, 1),
            dst: Ipv4Addr::new(10, 0, 0, 1),
            protocol: IPPROTO_TCP,
            ttl: 64,
            ident: 0,
            dscp_ecn: 0,
            payload_len: 0,
        };
        let seg = TcpRepr {
            src_port: 80,
            dst_port: 4000,
            seq: SeqNumber(1),
            ack: Some(SeqNumber(n)),
            window: 1000,
            ..TcpRepr::default()
        };
        Packet::build(0, |b| emit_ipv4_tcp(&ip, &seg, b))
    }

    fn acks_out(d: &mut DupAckDelay, now: Instant) -> Vec<u32> {
        std::iter::from_fn(|| d.poll_transmit(now))
            .map(|t| {
                let (_, s) = crate::wire::parse_ipv4_tcp(t.pkt.header(), 0).expect("parses");
                s.ack.map_or(0, |a| a.0)
            })
            .collect()
    }

    use crate::flow::testing::{drain, many, seen, segment};

    /// ACKs of the `n`-th flow (receiver → sender), acknowledging `a`.
    fn ack_of(n: u32, a: u32) -> Packet {
        segment(many(n).reversed(), 1, Some(a), TcpFlags(0), 0)
    }

    /// Work, not time: 100 000 flows each hold one duplicate; the first release visits one
    /// flow (plus a look at the next deadline and at the idle list).
    #[test]
    fn one_due_release_among_100_000_flows_visits_only_that_flow() {
        let mut d = DupAckDelay::new(DupAckDelayConfig {
            max_flows: 100_000,
            ..DupAckDelayConfig::default()
        });
        let t = |n: u64| Instant::ZERO + Duration::from_micros(n);
        for n in 0..100_000u32 {
            for _ in 0..4 {
                d.handle_packet(t(n.into()), PortId(0), ack_of(n, 100));
            }
        }
        // The new ACK and two duplicates pass; the third duplicate is held.
        assert_eq!(drain(&mut d, t(100_000)).len(), 300_000);
        assert_eq!(d.stats().held, 100_000);
        let first = Instant::ZERO + Duration::from_millis(600);
        assert_eq!(d.poll_timeout(), Some(first));
        let before = d.flow_table_stats().visited;
        d.handle_timeout(first);
        assert_eq!(d.flow_table_stats().visited - before, 3);
        assert_eq!(drain(&mut d, first), vec![seen(&ack_of(0, 100))]);
        assert_eq!(d.poll_timeout(), Some(first + Duration::from_micros(1)));
    }

    /// Memory is bounded by `max_flows`: of 100 000 flows offered to a table of 1 000, 99 000
    /// are refused and counted, and even their duplicates pass at once, unchanged.
    #[test]
    fn memory_is_bounded_by_max_flows_and_refused_flows_pass_unchanged() {
        let mut d = DupAckDelay::new(DupAckDelayConfig {
            max_flows: 1000,
            ..DupAckDelayConfig::default()
        });
        let t0 = Instant::ZERO;
        let mut passed = 0;
        for n in 0..100_000u32 {
            for _ in 0..4 {
                let pkt = ack_of(n, 100);
                let expect = seen(&pkt);
                d.handle_packet(t0, PortId(0), pkt);
                let out = drain(&mut d, t0);
                assert!(out.is_empty() || out == vec![expect]);
                passed += out.len();
            }
        }
        assert_eq!(d.flow_count(), 1000);
        assert_eq!(d.stats().flows_refused, 99_000 * 4);
        assert_eq!((d.stats().held, passed), (1000, 400_000 - 1000));
        // Idle for the timeout: forgotten, and what they held goes out in order first.
        let later = t0 + Duration::from_secs(120);
        d.handle_packet(later, PortId(0), ack_of(100_000, 5));
        assert_eq!(d.flow_count(), 1);
        assert_eq!(d.stats().flows_idle_expired, 1000);
        let out = drain(&mut d, later);
        assert_eq!(out.len(), 1001);
        assert_eq!(out[0], seen(&ack_of(0, 100)));
        assert_eq!(out[1000], seen(&ack_of(100_000, 5)));
    }

    /// A reordered older ACK is neither a duplicate nor new: held duplicates stay held.
    #[test]
    fn an_older_ack_does_not_drop_held_duplicates() {
        let mut d = DupAckDelay::new(DupAckDelayConfig::default());
        let t0 = Instant::ZERO;
        for n in [200, 200, 200, 200, 150, 200] {
            d.handle_packet(t0, PortId(0), ack(n));
        }
        // 200, two duplicates and the old 150 pass; the 3rd and 4th duplicates are held.
        assert_eq!(acks_out(&mut d, t0), vec![200, 200, 200, 150]);
        assert_eq!((d.stats().held, d.stats().dropped), (2, 0));
    }

    /// With `port` set, ACKs arriving on another port pass untouched and create no state.
    #[test]
    fn acks_on_another_port_are_not_delayed() {
        let mut d = DupAckDelay::new(DupAckDelayConfig {
            port: Some(1),
            ..DupAckDelayConfig::default()
        });
        let t0 = Instant::ZERO;
        for _ in 0..5 {
            d.handle_packet(t0, PortId(0), ack(200));
        }
        assert_eq!(acks_out(&mut d, t0), vec![200; 5]);
        assert_eq!(d.flow_count(), 0);
        for _ in 0..5 {
            d.handle_packet(t0, PortId(1), ack(200));
        }
        assert_eq!(acks_out(&mut d, t0), vec![200; 3]);
        assert_eq!(d.stats().held, 2);
    }

    #[test]
    fn config_refuses_an_empty_flow_table_and_a_zero_idle_timeout() {
        let ok = DupAckDelayConfig::default();
        assert_eq!(ok.validate(), Ok(()));
        let no_flows = DupAckDelayConfig {
            max_flows: 0,
            ..ok.clone()
        };
        assert!(no_flows
            .validate()
            .is_err_and(|m| m.starts_with("max_flows")));
        let no_idle = DupAckDelayConfig {
            idle_timeout: Duration::ZERO,
            ..ok
        };
        assert!(no_idle
            .validate()
            .is_err_and(|m| m.starts_with("idle_timeout")));
    }

    /// The ACK sender's FIN forgets the flow once nothing is held; with duplicates held, the
    /// flow goes when they are released.
    #[test]
    fn fin_forgets_the_flow_once_nothing_is_held() {
        let mut d = DupAckDelay::new(DupAckDelayConfig::default());
        let t0 = Instant::ZERO;
        let fin = |n| segment(many(n).reversed(), 1, Some(100), TcpFlags::FIN, 0);
        d.handle_packet(t0, PortId(0), ack_of(1, 100));
        d.handle_packet(t0, PortId(0), fin(1));
        assert_eq!(d.flow_count(), 0);
        for _ in 0..4 {
            d.handle_packet(t0, PortId(0), ack_of(2, 100));
        }
        d.handle_packet(t0, PortId(0), fin(2));
        assert_eq!(d.flow_count(), 1);
        let t1 = t0 + Duration::from_millis(600);
        d.handle_timeout(t1);
        assert_eq!((d.flow_count(), d.poll_timeout()), (0, None));
        assert_eq!(d.stats().released, 1);
    }

    #[test]
    fn third_and_later_duplicates_are_held_and_dropped_when_the_hole_fills() {
        let mut d = DupAckDelay::new(DupAckDelayConfig::default());
        let t0 = Instant::ZERO;
        for n in [100, 200, 200, 200, 200, 200] {
            d.handle_packet(t0, PortId(0), ack(n));
        }
        // The new ACKs and the first two duplicates pass; duplicates 3 and 4 are held.
        assert_eq!(acks_out(&mut d, t0), vec![100, 200, 200, 200]);
        assert_eq!(d.poll_timeout(), Some(t0 + Duration::from_millis(600)));
        let t1 = t0 + Duration::from_millis(300);
        d.handle_packet(t1, PortId(0), ack(900));
        assert_eq!(acks_out(&mut d, t1), vec![900]);
        assert_eq!(
            d.stats(),
            DupAckDelayStats {
                held: 2,
                released: 0,
                dropped: 2,
                flows_refused: 0,
                flows_idle_expired: 0,
            }
        );
        assert_eq!(d.poll_timeout(), None);
    }

    #[test]
    fn held_duplicates_are_released_after_the_delay_in_order() {
        let mut d = DupAckDelay::new(DupAckDelayConfig {
            delay: Duration::from_millis(100),
            ..DupAckDelayConfig::default()
        });
        let t0 = Instant::ZERO;
        for (i, n) in [200, 200, 200, 200, 200].into_iter().enumerate() {
            d.handle_packet(t0 + Duration::from_millis(i as u64), PortId(0), ack(n));
        }
        assert_eq!(acks_out(&mut d, t0).len(), 3);
        d.handle_timeout(t0 + Duration::from_millis(103));
        assert_eq!(acks_out(&mut d, t0), vec![200]);
        d.handle_timeout(t0 + Duration::from_millis(200));
        assert_eq!(acks_out(&mut d, t0), vec![200]);
        assert_eq!(d.stats().released, 2);
        // Released, not finished: the flow (and its duplicate count) stays.
        assert_eq!((d.flow_count(), d.poll_timeout()), (1, None));
    }

    #[test]
    fn with_local_retransmission_the_sender_does_not_fast_retransmit() {
        // Vaidya's pairing: a TCP-unaware local retransmitter (Snoop without hiding dupACKs)
        // at the gateway and delayed dupACKs at the receiver. Here both sit in one test net:
        // the delay element's job is checked by what reaches the sender.
        let r = |bps| Some(Bitrate::from_bps(bps));
        let mut h = [
            Hop::new(10, r(10_000_000)),
            Hop::new(250, r(2_000_000)),
            Hop::new(250, r(2_000_000)),
            Hop::new(10, r(10_000_000)),
        ];
        h[MB].drop_data = vec![30];
        let chain = Chain {
            snoop: Snoop::new(SnoopConfig {
                suppress_dupacks: false,
                ..SnoopConfig::default()
            }),
            delay: DupAckDelay::new(DupAckDelayConfig::default()),
        };
        let total = 500_000;
        let mut net = Net::new(chain, tcp(1000), tcp(1000), h, total);
        net.run_until(Instant::ZERO + Duration::from_secs(60));
        assert_eq!(net.b.bytes_delivered(), total);
        let a = net.a.stats();
        assert_eq!(
            a.dup_acks, 2,
            "only the first two duplicates reach the sender: {a:?}"
        );
        assert_eq!((a.fast_retransmits, a.retransmissions), (0, 0), "{a:?}");
        let st = net.m.delay.stats();
        assert!(
            st.held >= 1 && st.released == 0 && st.dropped == st.held,
            "{st:?}"
        );
    }

    /// ACKs from B go through the delay element first (receiver side), then Snoop.
    struct Chain {
        snoop: Snoop,
        delay: DupAckDelay,
    }

    impl Node for Chain {
        fn handle_packet(&mut self, now: Instant, port: PortId, pkt: Packet) {
            if port.0 == 1 {
                self.delay.handle_packet(now, port, pkt);
                self.pump(now);
            } else {
                self.snoop.handle_packet(now, port, pkt);
            }
        }
        fn handle_timeout(&mut self, now: Instant) {
            self.delay.handle_timeout(now);
            self.pump(now);
            self.snoop.handle_timeout(now);
        }
        fn poll_transmit(&mut self, now: Instant) -> Option<Transmit> {
            self.snoop.poll_transmit(now)
        }
        fn poll_timeout(&self) -> Option<Instant> {
            [self.snoop.poll_timeout(), self.delay.poll_timeout()]
                .into_iter()
                .flatten()
                .min()
        }
    }

    impl Chain {
        fn pump(&mut self, now: Instant) {
            while let Some(t) = self.delay.poll_transmit(now) {
                self.snoop.handle_packet(now, PortId(1), t.pkt);
            }
        }
    }
}
