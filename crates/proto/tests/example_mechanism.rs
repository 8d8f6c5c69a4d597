//! The worked example of docs/adding-a-mechanism.md: a complete per-flow mechanism in one file,
//! built only on `satpep-proto`'s public API, with its test beside it. It compiles and runs in
//! `cargo test -p satpep-proto`, so the guide cannot drift from the API.
//!
//! `AckHold` holds every pure ACK for `delay` and releases each flow's ACKs in order: a toy
//! stand-in for a paper's mechanism, small enough to read at once, but with everything a real
//! one needs: a config, counters, a `FlowTable` with a deadline per flow, a capacity whose
//! refusals pass untouched, FIN/RST/idle forgetting, and the `Node` contract.

use std::collections::VecDeque;

use satpep_proto::flow::{FlowId, FlowKey, FlowTable, FlowTableStats};
use satpep_proto::wire::{emit_ipv4_tcp, parse_packet, Ipv4Repr, SeqNumber, TcpFlags, TcpRepr};
use satpep_proto::{Duration, Instant, Node, Packet, PortId, Transmit};

/// Settings (`middlebox = { kind = "ack_hold", … }` once registered).
#[derive(Clone, Debug, PartialEq, serde::Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct AckHoldConfig {
    /// How long each pure ACK is held. Default `"100ms"`.
    pub delay: Duration,
    /// Flows tracked at most; ACKs of further flows pass at once. Default 4096.
    pub max_flows: u32,
    /// A flow without a packet for this long is forgotten. Default `"120s"`.
    pub idle_timeout: Duration,
}

impl Default for AckHoldConfig {
    fn default() -> Self {
        Self {
            delay: Duration::from_millis(100),
            max_flows: 4096,
            idle_timeout: Duration::from_secs(120),
        }
    }
}

/// Counters: every field becomes `middleboxes[].counters.<field>` in summary.json once listed
/// in `Middlebox::counters`.
#[derive(Clone, Copy, Debug, Default, Eq, PartialEq, serde::Serialize)]
pub struct AckHoldStats {
    /// Pure ACKs held.
    pub held: u64,
    /// New flows refused by the full table (their ACKs passed at once).
    pub flows_refused: u64,
}

/// Per-flow state: the ACKs held, each with its release time.
#[derive(Clone, Debug, Default)]
struct Flow {
    held: VecDeque<(Instant, Packet)>,
}

/// The mechanism.
#[derive(Clone, Debug)]
pub struct AckHold {
    config: AckHoldConfig,
    /// Keyed by the ACK direction; the deadline is the oldest held ACK's release time.
    flows: FlowTable<Flow>,
    due: Vec<FlowId>,
    out: VecDeque<Packet>,
    stats: AckHoldStats,
}

impl AckHold {
    /// A mechanism holding nothing.
    pub fn new(config: AckHoldConfig) -> Self {
        Self {
            flows: FlowTable::new(config.max_flows as usize, Some(config.idle_timeout)),
            due: Vec::new(),
            out: VecDeque::new(),
            stats: AckHoldStats::default(),
            config,
        }
    }

    /// Counters.
    pub fn stats(&self) -> AckHoldStats {
        AckHoldStats {
            flows_refused: self.flows.stats().table_full,
            ..self.stats
        }
    }

    /// The flow table's counters (entries visited, idle expiries).
    pub fn flow_table_stats(&self) -> FlowTableStats {
        self.flows.stats()
    }

    /// Forget idle flows, letting out what they held, in order.
    fn expire_idle(&mut self, now: Instant) {
        let out = &mut self.out;
        self.flows
            .expire_idle(now, |_, f| out.extend(f.held.into_iter().map(|(_, p)| p)));
    }
}

impl Node for AckHold {
    fn handle_packet(&mut self, now: Instant, _port: PortId, pkt: Packet) {
        // Network input: anything unparseable passes untouched.
        let Ok((ip, seg)) = parse_packet(&pkt) else {
            self.out.push_back(pkt);
            return;
        };
        self.expire_idle(now);
        let key = FlowKey::of(&ip, &seg);
        let control = [TcpFlags::SYN, TcpFlags::FIN, TcpFlags::RST];
        if control.iter().any(|&f| seg.flags.contains(f)) || seg.payload_len > 0 {
            // The end of a flow: what it holds goes first (in order), then the state goes.
            if let Some(f) = self.flows.remove_key(&key) {
                self.out.extend(f.held.into_iter().map(|(_, p)| p));
            }
            self.out.push_back(pkt);
            return;
        }
        let id = match self.flows.id(&key) {
            Some(id) => id,
            None => match self.flows.insert(now, key, Flow::default()) {
                Ok(id) => id,
                // Refusal policy: a full table passes the ACK untouched (counted by the table).
                Err(_) => {
                    self.out.push_back(pkt);
                    return;
                }
            },
        };
        self.flows.touch(now, id);
        let at = now + self.config.delay;
        let f = &mut self.flows[id];
        f.held.push_back((at, pkt));
        self.stats.held += 1;
        if f.held.len() == 1 {
            // The deadline moves only when the head of this flow's queue does.
            self.flows.set_deadline(id, Some(at));
        }
    }

    fn handle_timeout(&mut self, now: Instant) {
        self.expire_idle(now);
        // Only the due flows, in key order; a spurious call finds none.
        let mut due = std::mem::take(&mut self.due);
        self.flows.take_due(now, &mut due);
        for &id in &due {
            let f = &mut self.flows[id];
            while f.held.front().is_some_and(|(t, _)| *t <= now) {
                self.out.extend(f.held.pop_front().map(|(_, p)| p));
            }
            let next = f.held.front().map(|(t, _)| *t);
            self.flows.set_deadline(id, next);
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

/// A pure ACK from host `n` (10.0.0.n:5000) to 192.168.0.1:80, acknowledging `ack`.
fn ack(n: u8, ack: u32) -> Packet {
    let ip = Ipv4Repr::tcp([10, 0, 0, n].into(), [192, 168, 0, 1].into(), 0);
    let seg = TcpRepr {
        src_port: 5000,
        dst_port: 80,
        seq: SeqNumber(1),
        ack: Some(SeqNumber(ack)),
        window: 1000,
        ..TcpRepr::default()
    };
    Packet::build(0, |b| emit_ipv4_tcp(&ip, &seg, b))
}

/// The ack numbers `m` transmits now.
fn acks_out(m: &mut AckHold, now: Instant) -> Vec<u32> {
    std::iter::from_fn(|| m.poll_transmit(now))
        .filter_map(|t| parse_packet(&t.pkt).ok()?.1.ack.map(|a| a.0))
        .collect()
}

#[test]
fn acks_are_held_for_the_delay_per_flow_and_a_full_table_passes_them() {
    let mut m = AckHold::new(AckHoldConfig {
        max_flows: 2,
        ..AckHoldConfig::default()
    });
    let t0 = Instant::ZERO;
    let ms = |n| t0 + Duration::from_millis(n);
    m.handle_packet(t0, PortId(0), ack(1, 100));
    m.handle_packet(ms(10), PortId(0), ack(2, 200));
    m.handle_packet(ms(20), PortId(0), ack(1, 101));
    // A third flow finds the table full: its ACK passes at once, counted.
    m.handle_packet(ms(30), PortId(0), ack(3, 300));
    assert_eq!(acks_out(&mut m, ms(30)), vec![300]);
    assert_eq!(
        m.stats(),
        AckHoldStats {
            held: 3,
            flows_refused: 1
        }
    );
    assert_eq!(m.poll_timeout(), Some(ms(100)));
    // Each flow's ACKs leave `delay` after they came, in order; only due flows are visited.
    m.handle_timeout(ms(100));
    assert_eq!(acks_out(&mut m, ms(100)), vec![100]);
    assert_eq!(m.poll_timeout(), Some(ms(110)));
    // A late call finds two flows due: they are handled in key order (10.0.0.1 first).
    m.handle_timeout(ms(120));
    assert_eq!(acks_out(&mut m, ms(120)), vec![101, 200]);
    assert_eq!(m.poll_timeout(), None);
    // Idle for `idle_timeout`: both flows are forgotten, so a new one fits.
    m.handle_packet(ms(120_030), PortId(0), ack(3, 301));
    assert_eq!(m.flow_table_stats().idle_expired, 2);
    assert_eq!(m.stats().flows_refused, 1);
}
