//! Satellite congestion control for the accelerated PEP's QUIC connection, through
//! quinn-proto's pluggable [`Controller`].
//!
//! Two controllers, both deaf to random loss (paper 003: on a satellite hop a lost packet is
//! far more often a line error than a full queue, and halving the rate for it is what makes
//! TCP slow there):
//!
//! - [`SatRate`], the *rate mode*: the capacity is known (the operator configures it, or a
//!   DVB-RCS terminal is granted it, CRA/RBDC, paper 002), so the window is that rate times
//!   the path's round trip, plus the peer's ACK delay, plus a small headroom. Losses are
//!   recovered (quinn retransmits) and counted, never answered with a smaller window; the
//!   in-flight bound keeps the bottleneck queue at the headroom.
//! - [`SatProbe`], the *probing mode*, for shared or unknown capacity: the window follows the
//!   measured delivery rate (its maximum over the last ten round trips) times the smallest RTT,
//!   and every eighth round it asks for 25 % more then gives 25 % back, as BBR's ProbeBW does
//!   (Cardwell et al., ACM Queue 2016). Losses cut the rate estimate only when more than
//!   [`PROBE_LOSS_LIMIT`] of a round's bytes are lost, which random errors at 1e-2 never are
//!   and an overflowing queue is.
//!
//! The window counts QUIC bytes (UDP payloads); configured rates are on the wire, so both
//! convert by `mtu / (mtu + 28)` (IPv4 and UDP headers).
//!
//! quinn paces at 1.25 × window / smoothed RTT, so neither controller needs its own pacer. What
//! is left out: ECN, and BBR's ProbeRTT (the smallest RTT is kept for the connection's life: on
//! a GEO hop the propagation delay does not change; a LEO path would need it).

use std::any::Any;
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

use quinn_proto::congestion::{Controller, ControllerFactory};
use quinn_proto::RttEstimator;

/// IPv4 and UDP headers: what the wire carries beyond the window's bytes.
const UDP_IP_OVERHEAD: u64 = 28;
/// The smallest window either controller opens: four full packets.
const MIN_WINDOW_PACKETS: u64 = 4;

/// Configuration of [`SatRate`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SatRateConfig {
    /// The capacity to fill, on the wire (bits/s).
    pub rate_bps: u64,
    /// The round trip assumed before the first sample (the path's, e.g. 600 ms on GEO), so
    /// the first bytes already go at the full rate.
    pub initial_rtt: Duration,
    /// How long the peer may hold an ACK (its `max_ack_delay`): in flight but delivered.
    pub ack_delay: Duration,
    /// Window beyond rate × RTT, in percent (default 10): the most that queues at the
    /// bottleneck.
    pub headroom_pct: u64,
}

impl SatRateConfig {
    /// `rate_bps` over a path of round trip `initial_rtt`, with the default headroom and a
    /// 25 ms ACK delay.
    pub fn new(rate_bps: u64, initial_rtt: Duration) -> Self {
        Self {
            rate_bps,
            initial_rtt,
            ack_delay: Duration::from_millis(25),
            headroom_pct: 10,
        }
    }
}

impl ControllerFactory for SatRateConfig {
    fn build(self: Arc<Self>, _now: Instant, current_mtu: u16) -> Box<dyn Controller> {
        Box::new(SatRate::new(*self, current_mtu))
    }
}

/// The rate mode (see the module doc).
#[derive(Clone, Debug)]
pub struct SatRate {
    config: SatRateConfig,
    mtu: u16,
    min_rtt: Option<Duration>,
    /// Congestion events quinn reported (each a loss it detected), never acted on.
    pub congestion_events: u64,
    /// Bytes reported lost.
    pub lost_bytes: u64,
}

impl SatRate {
    /// A controller for packets of `mtu` bytes.
    pub fn new(config: SatRateConfig, mtu: u16) -> Self {
        Self {
            config,
            mtu,
            min_rtt: None,
            congestion_events: 0,
            lost_bytes: 0,
        }
    }

    /// Change the rate (a new DAMA grant, an operator's command); takes effect at once.
    pub fn set_rate(&mut self, rate_bps: u64) {
        self.config.rate_bps = rate_bps;
    }

    /// The round trip the window is sized for: the smallest seen, or the configured one.
    pub fn rtt(&self) -> Duration {
        self.min_rtt.unwrap_or(self.config.initial_rtt)
    }

    /// A packet was acknowledged; `min_rtt` is the smallest round trip measured so far.
    pub fn handle_ack(&mut self, min_rtt: Duration) {
        if !min_rtt.is_zero() {
            self.min_rtt = Some(self.min_rtt.map_or(min_rtt, |o| o.min(min_rtt)));
        }
    }

    /// `lost` bytes were declared lost: counted, and nothing else.
    pub fn handle_loss(&mut self, lost: u64) {
        self.congestion_events += 1;
        self.lost_bytes += lost;
    }
}

impl Controller for SatRate {
    fn on_ack(
        &mut self,
        _now: Instant,
        _sent: Instant,
        _bytes: u64,
        _app: bool,
        rtt: &RttEstimator,
    ) {
        self.handle_ack(rtt.min());
    }

    fn on_congestion_event(&mut self, _now: Instant, _sent: Instant, _persistent: bool, lost: u64) {
        self.handle_loss(lost);
    }

    fn on_mtu_update(&mut self, new_mtu: u16) {
        self.mtu = new_mtu;
    }

    fn window(&self) -> u64 {
        let payload_bps = wire_to_payload(self.config.rate_bps, self.mtu);
        let t = self.rtt() + self.config.ack_delay;
        let bdp = (u128::from(payload_bps) * t.as_nanos() / 8 / 1_000_000_000) as u64;
        let w = bdp + bdp * self.config.headroom_pct / 100;
        w.max(MIN_WINDOW_PACKETS * u64::from(self.mtu))
    }

    fn clone_box(&self) -> Box<dyn Controller> {
        Box::new(self.clone())
    }

    fn initial_window(&self) -> u64 {
        self.window()
    }

    fn into_any(self: Box<Self>) -> Box<dyn Any> {
        self
    }
}

/// Payload bits/s of `wire_bps` in packets of `mtu` UDP payload bytes.
fn wire_to_payload(wire_bps: u64, mtu: u16) -> u64 {
    let mtu = u64::from(mtu).max(1);
    (u128::from(wire_bps) * u128::from(mtu) / u128::from(mtu + UDP_IP_OVERHEAD)) as u64
}

/// A round's lost share of bytes beyond which [`SatProbe`] takes the loss for congestion.
pub const PROBE_LOSS_LIMIT: f64 = 0.2;
/// Round trips the delivery-rate maximum covers.
const BW_WINDOW_ROUNDS: u64 = 10;
/// ProbeBW's gains, one per round (percent).
const PROBE_GAINS: [u64; 8] = [125, 75, 100, 100, 100, 100, 100, 100];
/// Startup's window gain (percent): 2/ln 2, BBR's.
const STARTUP_GAIN: u64 = 289;

/// Configuration of [`SatProbe`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SatProbeConfig {
    /// The round trip assumed before the first sample.
    pub initial_rtt: Duration,
    /// The window before any delivery was measured, in packets (default 10, RFC 6928's).
    pub initial_packets: u64,
}

impl SatProbeConfig {
    /// Defaults for a path of round trip `initial_rtt`.
    pub fn new(initial_rtt: Duration) -> Self {
        Self {
            initial_rtt,
            initial_packets: 10,
        }
    }
}

impl ControllerFactory for SatProbeConfig {
    fn build(self: Arc<Self>, _now: Instant, current_mtu: u16) -> Box<dyn Controller> {
        Box::new(SatProbe::new(*self, current_mtu))
    }
}

/// Where [`SatProbe`] is.
#[derive(Clone, Copy, Debug, Eq, PartialEq)]
pub enum ProbeState {
    /// Doubling each round until the delivery rate stops growing.
    Startup,
    /// Holding the measured rate, probing for more one round in eight.
    ProbeBw,
}

/// The probing mode (see the module doc).
#[derive(Clone, Debug)]
pub struct SatProbe {
    config: SatProbeConfig,
    mtu: u16,
    state: ProbeState,
    min_rtt: Option<Duration>,
    /// Bytes acknowledged so far.
    delivered: u64,
    /// When `delivered` last grew.
    delivered_at: Option<Instant>,
    /// Per packet in flight: (sent, delivered at its sending, when that was).
    sent: VecDeque<(Instant, u64, Option<Instant>)>,
    /// The round: it ends when a packet sent after it began is acknowledged.
    round: u64,
    round_start: Option<Instant>,
    round_acked: u64,
    round_lost: u64,
    /// Whether an ACK of this round came while the sender had less to send than its window.
    round_app_limited: bool,
    /// Bytes in flight as this controller counts them (sent, less acknowledged and lost).
    inflight: u64,
    /// The most in flight during this round: a round that never came near the window was
    /// limited by the application, whatever the transport's flag says.
    round_max_inflight: u64,
    /// Rounds the application filled: the bandwidth samples' clock, so that an idle
    /// connection's keep-alive rounds neither forget the rate nor end Startup.
    filled: u64,
    /// (filled round, best delivery rate that round in bytes/s), newest last.
    bw_samples: VecDeque<(u64, u64)>,
    /// Startup: the rate three rounds of growth are measured against, and the rounds without.
    full_bw: u64,
    full_bw_rounds: u8,
    cycle: usize,
    /// Rounds whose losses were taken for congestion.
    pub congestion_rounds: u64,
    /// Bytes reported lost.
    pub lost_bytes: u64,
}

impl SatProbe {
    /// A controller for packets of `mtu` bytes.
    pub fn new(config: SatProbeConfig, mtu: u16) -> Self {
        Self {
            config,
            mtu,
            state: ProbeState::Startup,
            min_rtt: None,
            delivered: 0,
            delivered_at: None,
            sent: VecDeque::new(),
            round: 0,
            round_start: None,
            round_acked: 0,
            round_lost: 0,
            round_app_limited: false,
            inflight: 0,
            round_max_inflight: 0,
            filled: 0,
            bw_samples: VecDeque::new(),
            full_bw: 0,
            full_bw_rounds: 0,
            cycle: 0,
            congestion_rounds: 0,
            lost_bytes: 0,
        }
    }

    /// The state.
    pub fn state(&self) -> ProbeState {
        self.state
    }

    /// The bottleneck rate estimate (payload bytes/s): the largest delivery rate of the last
    /// [`BW_WINDOW_ROUNDS`] rounds.
    pub fn bandwidth(&self) -> u64 {
        self.bw_samples.iter().map(|&(_, b)| b).max().unwrap_or(0)
    }

    fn rtt(&self) -> Duration {
        self.min_rtt.unwrap_or(self.config.initial_rtt)
    }

    fn end_round(&mut self, now: Instant) {
        // Losses beyond the limit: a queue overflowed somewhere; give up a sixth of the rate.
        // A round of fewer than ten packets says nothing about a loss rate.
        let total = self.round_acked + self.round_lost;
        let congested = total >= 10 * u64::from(self.mtu)
            && self.round_lost as f64 > PROBE_LOSS_LIMIT * total as f64;
        if congested {
            self.congestion_rounds += 1;
            for s in &mut self.bw_samples {
                s.1 = s.1 * 5 / 6;
            }
            // Startup has overflowed the bottleneck's queue: the rate is found.
            if self.state == ProbeState::Startup {
                self.state = ProbeState::ProbeBw;
                self.cycle = 1;
            }
        }
        let bw = self.bandwidth();
        // A round the application did not fill says nothing about the path's capacity: it
        // neither ends Startup (a connection idle between small requests would otherwise
        // leave it at the rate of those requests, and then grow by a quarter per eight rounds)
        // nor moves the gain cycle nor ages the samples. Not filled: flagged by the transport,
        // or never near the window in flight. The second matters on the live path: there
        // quinn flags the keep-alive rounds of an idle connection as not application-limited,
        // and five seconds of them ended Startup at 2.4 kB/s (measured with `satpep gateway
        // --verbose`), so every transfer then grew by a quarter per eight rounds.
        // Filled: at least half the window was in flight at some point of the round (not all
        // of it: the receiver's stream window, holding data behind a loss, can keep the
        // flight below the window while the bottleneck is full).
        let window = self.window();
        let near = (window / 2).min(window.saturating_sub(2 * u64::from(self.mtu)));
        let filled = !self.round_app_limited && self.round_max_inflight >= near;
        if filled {
            self.filled += 1;
            if self.state == ProbeState::Startup {
                if bw >= self.full_bw + self.full_bw / 4 {
                    self.full_bw = bw;
                    self.full_bw_rounds = 0;
                } else {
                    self.full_bw_rounds += 1;
                    if self.full_bw_rounds >= 3 {
                        self.state = ProbeState::ProbeBw;
                        // Start by draining what Startup queued: the 75 % round.
                        self.cycle = 1;
                    }
                }
            } else {
                self.cycle = (self.cycle + 1) % PROBE_GAINS.len();
            }
        }
        self.round += 1;
        self.round_start = Some(now);
        self.round_acked = 0;
        self.round_lost = 0;
        self.round_app_limited = false;
        self.round_max_inflight = self.inflight;
        let oldest = self.filled.saturating_sub(BW_WINDOW_ROUNDS);
        while self.bw_samples.front().is_some_and(|&(r, _)| r < oldest) {
            self.bw_samples.pop_front();
        }
    }
}

impl SatProbe {
    /// Packets of `bytes` in all were sent at `now`: one, or a batch (quinn reports a GSO
    /// batch of up to ten datagrams in one call), counted as that many packets of `mtu` bytes.
    pub fn handle_sent(&mut self, now: Instant, bytes: u64) {
        let mtu = u64::from(self.mtu).max(1);
        let packets = bytes.div_ceil(mtu).max(1);
        // Bounded: a packet never acknowledged nor declared lost is forgotten after 100 000.
        while self.sent.len() as u64 + packets > 100_000 && !self.sent.is_empty() {
            self.sent.pop_front();
        }
        // Sending after an idle period: the delivery clock restarts now (Linux's tcp_rate
        // does the same), or the first samples would spread a round's bytes over the idle
        // time before it.
        if self.inflight == 0 {
            self.delivered_at = Some(now);
        }
        self.inflight += bytes;
        self.round_max_inflight = self.round_max_inflight.max(self.inflight);
        for _ in 0..packets {
            self.sent
                .push_back((now, self.delivered, self.delivered_at));
        }
        if self.round_start.is_none() {
            self.round_start = Some(now);
        }
    }

    /// The packet sent at `sent`, of `bytes`, was acknowledged at `now`; `min_rtt` is the
    /// smallest round trip measured so far.
    pub fn handle_ack(
        &mut self,
        now: Instant,
        sent: Instant,
        bytes: u64,
        app_limited: bool,
        min_rtt: Duration,
    ) {
        let m = min_rtt;
        if !m.is_zero() {
            self.min_rtt = Some(self.min_rtt.map_or(m, |o| o.min(m)));
        }
        self.delivered += bytes;
        self.round_acked += bytes;
        self.round_app_limited |= app_limited;
        self.inflight = self.inflight.saturating_sub(bytes);
        let before = self.delivered_at;
        self.delivered_at = Some(now);
        // The packet's record: the first sent at that instant (packets are sent in order).
        let i = self.sent.partition_point(|&(t, _, _)| t < sent);
        let rec = self.sent.get(i).copied().filter(|&(t, _, _)| t == sent);
        if let Some((_, delivered_then, at_then)) = rec {
            self.sent.remove(i);
            // Delivery rate: bytes delivered between this packet's sending and its ACK, over
            // the longer of the send and the ACK intervals (BBR's estimate, simplified).
            let start = at_then.or(before).unwrap_or(sent);
            let interval = now
                .saturating_duration_since(start)
                .max(now.saturating_duration_since(sent));
            let bytes = self.delivered - delivered_then;
            if !interval.is_zero() {
                let rate = (u128::from(bytes) * 1_000_000_000 / interval.as_nanos()) as u64;
                // An application-limited sample only counts if it raises the estimate.
                if !app_limited || rate > self.bandwidth() {
                    match self.bw_samples.back_mut() {
                        Some((r, b)) if *r == self.filled => *b = (*b).max(rate),
                        _ => self.bw_samples.push_back((self.filled, rate)),
                    }
                }
            }
        }
        if let Some(start) = self.round_start {
            if sent >= start && now.saturating_duration_since(start) >= self.rtt() {
                self.end_round(now);
            }
        }
    }

    /// `lost` bytes, the last of them sent at `sent`, were declared lost.
    pub fn handle_loss(&mut self, sent: Instant, lost: u64) {
        self.lost_bytes += lost;
        self.round_lost += lost;
        self.inflight = self.inflight.saturating_sub(lost);
        // The lost packets' records go too (all sent up to `sent`, at the latest).
        let i = self.sent.partition_point(|&(t, _, _)| t <= sent);
        if i > 0 && lost > 0 {
            let n = (lost / u64::from(self.mtu).max(1)).max(1) as usize;
            for _ in 0..n.min(i) {
                self.sent.pop_front();
            }
        }
    }
}

impl Controller for SatProbe {
    fn on_sent(&mut self, now: Instant, bytes: u64, _last_packet_number: u64) {
        self.handle_sent(now, bytes);
    }

    fn on_ack(&mut self, now: Instant, sent: Instant, bytes: u64, app: bool, rtt: &RttEstimator) {
        self.handle_ack(now, sent, bytes, app, rtt.min());
    }

    fn on_end_acks(&mut self, _now: Instant, in_flight: u64, _app: bool, _largest: Option<u64>) {
        // quinn's count is the truth: packets of discarded handshake spaces and losses it
        // reports in bulk leave it without passing through this controller.
        self.inflight = in_flight;
    }

    fn on_congestion_event(&mut self, _now: Instant, sent: Instant, _persistent: bool, lost: u64) {
        self.handle_loss(sent, lost);
    }

    fn on_mtu_update(&mut self, new_mtu: u16) {
        self.mtu = new_mtu;
    }

    fn window(&self) -> u64 {
        let floor = MIN_WINDOW_PACKETS * u64::from(self.mtu);
        let bw = self.bandwidth();
        if bw == 0 {
            return (self.config.initial_packets * u64::from(self.mtu)).max(floor);
        }
        let gain = match self.state {
            ProbeState::Startup => STARTUP_GAIN,
            ProbeState::ProbeBw => PROBE_GAINS[self.cycle],
        };
        let bdp = (u128::from(bw) * self.rtt().as_nanos() / 1_000_000_000) as u64;
        // Plus two packets, so that ACKs held by the peer never starve the pipe.
        (bdp * gain / 100 + 2 * u64::from(self.mtu)).max(floor)
    }

    fn clone_box(&self) -> Box<dyn Controller> {
        Box::new(self.clone())
    }

    fn initial_window(&self) -> u64 {
        self.config.initial_packets * u64::from(self.mtu)
    }

    fn into_any(self: Box<Self>) -> Box<dyn Any> {
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rand::Rng;

    /// What the test path needs of a controller (quinn's `RttEstimator` cannot be built
    /// outside quinn, so the path calls the controllers' own inputs).
    trait Cc {
        fn sent(&mut self, now: Instant);
        fn acked(&mut self, now: Instant, sent: Instant, bytes: u64, min_rtt: Duration);
        fn lost(&mut self, sent: Instant, bytes: u64);
        fn cwnd(&self) -> u64;
    }

    impl Cc for SatRate {
        fn sent(&mut self, _: Instant) {}
        fn acked(&mut self, _: Instant, _: Instant, _: u64, min_rtt: Duration) {
            self.handle_ack(min_rtt);
        }
        fn lost(&mut self, _: Instant, bytes: u64) {
            self.handle_loss(bytes);
        }
        fn cwnd(&self) -> u64 {
            self.window()
        }
    }

    impl Cc for SatProbe {
        fn sent(&mut self, now: Instant) {
            self.handle_sent(now, 1400);
        }
        fn acked(&mut self, now: Instant, sent: Instant, bytes: u64, min_rtt: Duration) {
            self.handle_ack(now, sent, bytes, false, min_rtt);
        }
        fn lost(&mut self, sent: Instant, bytes: u64) {
            self.handle_loss(sent, bytes);
        }
        fn cwnd(&self) -> u64 {
            self.window()
        }
    }

    /// Loss-based control as TCP Reno's congestion avoidance does it (RFC 5681): +1 packet
    /// per window, halved on a loss (at most once per round trip).
    struct Reno {
        cwnd: u64,
        mtu: u64,
        recover_until: Option<Instant>,
    }

    impl Cc for Reno {
        fn sent(&mut self, _: Instant) {}
        fn acked(&mut self, _: Instant, _: Instant, bytes: u64, _: Duration) {
            self.cwnd += self.mtu * bytes / self.cwnd;
        }
        fn lost(&mut self, sent: Instant, _: u64) {
            if self.recover_until.is_some_and(|t| sent <= t) {
                return;
            }
            self.cwnd = (self.cwnd / 2).max(2 * self.mtu);
            self.recover_until = Some(sent + Duration::from_secs(1));
        }
        fn cwnd(&self) -> u64 {
            self.cwnd
        }
    }

    /// A bottleneck of `rate_bps` for 1400-byte packets, a fixed round trip, random loss
    /// `per` and a queue of `queue` packets that overflows.
    struct Path {
        rate_bps: u64,
        rtt: Duration,
        per: f64,
        queue: usize,
    }

    /// Drive `cc` over `path` packet by packet for `secs`: it sends while its window allows,
    /// paced as quinn paces (1.25 × window per round trip), and each packet's ACK (or its
    /// loss, an eighth of a round trip late) comes back in order. The goodput (bits/s) over
    /// the second half.
    fn goodput(cc: &mut dyn Cc, path: &Path, secs: u64, seed: u64) -> f64 {
        let mtu = 1400u64;
        let t0 = Instant::now();
        let mut rng = Rng::new(seed, 0);
        let ser = Duration::from_nanos(mtu * 8 * 1_000_000_000 / path.rate_bps);
        let mut flight: VecDeque<(Instant, Option<Instant>)> = VecDeque::new();
        let mut in_flight = 0u64;
        let mut link_free = t0;
        let mut now = t0;
        let mut next_send = t0;
        let mut min_rtt = Duration::MAX;
        let end = t0 + Duration::from_secs(secs);
        let half = t0 + Duration::from_secs(secs / 2);
        let mut counted = 0u64;
        while now < end {
            let next_ack = flight
                .front()
                .map(|&(sent, ack)| ack.unwrap_or(sent + path.rtt + path.rtt / 8));
            let can_send = in_flight + mtu <= cc.cwnd();
            let send_at = next_send.max(now);
            if can_send && next_ack.is_none_or(|a| send_at < a) {
                now = send_at;
                let depart = link_free.max(now) + ser;
                let queued = ((depart - now).as_nanos() / ser.as_nanos()) as usize;
                let overflow = queued > path.queue;
                if !overflow {
                    link_free = depart;
                }
                let lost = overflow || rng.next_f64() < path.per;
                cc.sent(now);
                flight.push_back((now, (!lost).then(|| depart + path.rtt)));
                in_flight += mtu;
                let srtt = if min_rtt == Duration::MAX {
                    path.rtt
                } else {
                    min_rtt
                };
                let gap = srtt.as_nanos() as u64 * mtu * 4 / (5 * cc.cwnd()).max(1);
                next_send = now + Duration::from_nanos(gap.max(1));
                continue;
            }
            let Some((sent, ack)) = flight.pop_front() else {
                break;
            };
            now = next_ack.unwrap_or(now).max(now);
            in_flight -= mtu;
            match ack {
                Some(_) => {
                    min_rtt = min_rtt.min(now - sent);
                    cc.acked(now, sent, mtu, min_rtt);
                    if now >= half {
                        counted += mtu;
                    }
                }
                None => cc.lost(sent, mtu),
            }
        }
        counted as f64 * 8.0 / (secs - secs / 2) as f64
    }

    const GEO: Duration = Duration::from_millis(600);

    #[test]
    fn rate_window_is_rate_times_rtt_plus_ack_delay_and_headroom() {
        let r = SatRate::new(SatRateConfig::new(20_000_000, GEO), 1472);
        // 20 Mb/s on the wire is 20e6 × 1472/1500 = 19.627 Mb/s of UDP payload; × 0.625 s
        // = 1 533 333 bytes; + 10 % = 1 686 666.
        assert_eq!(r.window(), 1_686_666);
        assert_eq!(
            r.initial_window(),
            r.window(),
            "full rate from the first byte"
        );
        let mut slow = SatRate::new(SatRateConfig::new(64_000, GEO), 1472);
        assert_eq!(slow.window(), 4 * 1472, "never below four packets");
        slow.set_rate(2_000_000);
        assert_eq!(slow.window(), 168_666);
    }

    #[test]
    fn rate_mode_counts_losses_and_keeps_its_window() {
        let mut r = SatRate::new(SatRateConfig::new(20_000_000, GEO), 1472);
        let w = r.window();
        for _ in 0..50 {
            r.handle_loss(1472);
        }
        assert_eq!(
            (r.window(), r.congestion_events, r.lost_bytes),
            (w, 50, 50 * 1472)
        );
        // A measured round trip below the configured one sizes the window from then on.
        r.handle_ack(Duration::from_millis(550));
        r.handle_ack(Duration::from_millis(580));
        assert_eq!(r.rtt(), Duration::from_millis(550));
        assert_eq!(r.window(), 1_551_732, "19.627 Mb/s × 0.575 s × 1.1");
    }

    #[test]
    fn rate_mode_fills_a_lossy_geo_link_where_loss_based_control_does_not() {
        let path = Path {
            rate_bps: 20_000_000,
            rtt: GEO,
            per: 1e-2,
            queue: 300,
        };
        // The operator configures the link's rate on the wire; the path's packets are 1400
        // bytes of payload, so the window is sized with their overhead.
        let mut r = SatRate::new(SatRateConfig::new(20_000_000 * 1428 / 1400, GEO), 1400);
        let g = goodput(&mut r, &path, 60, 1);
        assert!(g > 0.97 * 20e6 * 0.99 && g <= 20e6, "rate mode: {g}");
        let mut reno = Reno {
            cwnd: 10 * 1400,
            mtu: 1400,
            recover_until: None,
        };
        let g_reno = goodput(&mut reno, &path, 60, 1);
        assert!(
            g_reno < 0.3 * g,
            "Reno halves on every loss: {g_reno} vs {g}"
        );
    }

    #[test]
    fn probe_mode_finds_an_unknown_rate_and_random_loss_does_not_halve_it() {
        // Startup overshoots a queue of 400 packets (the path holds 535 in flight), and that
        // overflow is congestion; random loss must add no congestion round to it.
        let mut rounds = Vec::new();
        for (per, seed) in [(0.0, 1), (1e-3, 2), (1e-2, 3)] {
            let path = Path {
                rate_bps: 10_000_000,
                rtt: GEO,
                per,
                queue: 400,
            };
            let mut p = SatProbe::new(SatProbeConfig::new(GEO), 1400);
            let g = goodput(&mut p, &path, 60, seed);
            assert!(
                g > 0.85 * 10e6 * (1.0 - per),
                "probe mode at PER {per}: {g} b/s, state {:?}, bw {}",
                p.state(),
                p.bandwidth()
            );
            assert_eq!(p.state(), ProbeState::ProbeBw, "left Startup");
            rounds.push(p.congestion_rounds);
        }
        assert!(rounds.iter().all(|&r| r <= rounds[0] + 1), "{rounds:?}");
        // With a queue Startup cannot overflow, no round is congested at any PER.
        for per in [0.0, 1e-2] {
            let path = Path {
                rate_bps: 10_000_000,
                rtt: GEO,
                per,
                queue: 2000,
            };
            let mut p = SatProbe::new(SatProbeConfig::new(GEO), 1400);
            goodput(&mut p, &path, 30, 5);
            assert_eq!(p.congestion_rounds, 0, "PER {per}");
        }
    }

    #[test]
    fn probe_mode_stays_in_startup_through_application_limited_rounds() {
        // Small requests first (a few packets per round trip, flagged application-limited by
        // the transport), then a bulk transfer: Startup must still be there to find the rate.
        let mut p = SatProbe::new(SatProbeConfig::new(GEO), 1400);
        let t0 = Instant::now();
        let ms = Duration::from_millis;
        for round in 0..10u64 {
            let t = t0 + ms(700 * round);
            for i in 0..3 {
                p.handle_sent(t + ms(i), 1400);
            }
            for i in 0..3 {
                p.handle_ack(t + ms(600 + i), t + ms(i), 1400, true, ms(600));
            }
        }
        assert_eq!(p.state(), ProbeState::Startup, "idle rounds ended Startup");
        // The same rounds not flagged (as quinn's driver reports an idle connection's
        // keep-alive rounds on the live path): three packets never fill a window of ten, so
        // they are application-limited all the same.
        let mut q = SatProbe::new(SatProbeConfig::new(GEO), 1400);
        for round in 0..10u64 {
            let t = t0 + ms(700 * round);
            for i in 0..3 {
                q.handle_sent(t + ms(i), 1400);
            }
            for i in 0..3 {
                q.handle_ack(t + ms(600 + i), t + ms(i), 1400, false, ms(600));
            }
        }
        assert_eq!(
            q.state(),
            ProbeState::Startup,
            "unflagged idle rounds ended Startup"
        );
        // Rounds that fill the window (ten packets in flight) and do not grow do end it.
        let mut r = SatProbe::new(SatProbeConfig::new(GEO), 1400);
        for round in 0..10u64 {
            let t = t0 + ms(700 * round);
            let n = r.window() / 1400;
            for i in 0..n {
                r.handle_sent(t + ms(i), 1400);
            }
            // Acknowledged at a fixed 10 packets per round trip whatever was sent: no growth.
            for i in 0..n.min(10) {
                r.handle_ack(t + ms(600 + 60 * i), t + ms(i), 1400, false, ms(600));
            }
            for i in 10..n {
                r.handle_loss(t + ms(i), 0);
            }
            r.inflight = 0;
        }
        assert_eq!(
            r.state(),
            ProbeState::ProbeBw,
            "filled rounds without growth"
        );
    }

    #[test]
    fn a_batch_of_packets_sent_at_once_is_measured_as_its_packets() {
        // quinn reports a GSO batch in one `on_sent` (its bytes in all) and then acknowledges
        // each packet: every ACK must find a record, as if the packets had been sent one by one.
        let ms = Duration::from_millis;
        let t0 = Instant::now();
        let mut one = SatProbe::new(SatProbeConfig::new(GEO), 1400);
        let mut batch = SatProbe::new(SatProbeConfig::new(GEO), 1400);
        for r in 0..4u64 {
            let t = t0 + ms(700 * r);
            for _ in 0..10 {
                one.handle_sent(t, 1400);
            }
            batch.handle_sent(t, 14_000);
            for i in 0..10 {
                one.handle_ack(t + ms(600 + 5 * i), t, 1400, false, ms(600));
                batch.handle_ack(t + ms(600 + 5 * i), t, 1400, false, ms(600));
            }
        }
        assert!(one.bandwidth() > 0);
        assert_eq!(batch.bandwidth(), one.bandwidth());
        assert_eq!(batch.sent.len(), 0);
    }

    #[test]
    fn the_packet_records_are_bounded_and_quinns_flight_count_wins() {
        let mut p = SatProbe::new(SatProbeConfig::new(GEO), 1400);
        let t = Instant::now();
        for _ in 0..99_995 {
            p.handle_sent(t, 1400);
        }
        // A batch of ten at 99 995 records: the five oldest go, never more.
        p.handle_sent(t, 14_000);
        assert_eq!(p.sent.len(), 100_000);
        p.handle_sent(t, 1400);
        assert_eq!(p.sent.len(), 100_000);
        // Our own count says 140 MB in flight; quinn's (packets of discarded spaces, losses
        // reported in bulk) is the one kept.
        assert_eq!(p.inflight, 100_006 * 1400);
        Controller::on_end_acks(&mut p, t, 2800, false, None);
        assert_eq!(p.inflight, 2800);
    }

    #[test]
    fn probe_mode_keeps_its_rate_through_keep_alive_rounds() {
        // A measured rate (bulk rounds at 10 Mb/s), then 30 s of keep-alives: one packet a
        // second, acknowledged, not flagged as application-limited. The rate is still known
        // when the next transfer starts, and the first packets after the idle time measure
        // their own round, not the idle time.
        let path = Path {
            rate_bps: 10_000_000,
            rtt: GEO,
            per: 0.0,
            queue: 1000,
        };
        let mut p = SatProbe::new(SatProbeConfig::new(GEO), 1400);
        goodput(&mut p, &path, 30, 9);
        let before = p.bandwidth();
        assert!(before > 1_000_000, "{before}");
        p.inflight = 0;
        let t0 = Instant::now() + Duration::from_secs(100);
        for s in 0..30u64 {
            let t = t0 + Duration::from_secs(s);
            p.handle_sent(t, 60);
            p.handle_ack(t + GEO, t, 60, false, GEO);
        }
        assert_eq!(p.bandwidth(), before, "keep-alive rounds aged the rate out");
        assert!(p.window() > 500 * 1400, "{}", p.window());
    }

    #[test]
    fn probe_mode_backs_off_when_a_queue_overflows_each_round() {
        // A queue of 20 packets on a 600 ms, 10 Mb/s path (535 packets in flight): Startup
        // overflows it; more than a fifth of a round lost is taken for congestion.
        let path = Path {
            rate_bps: 10_000_000,
            rtt: GEO,
            per: 0.0,
            queue: 20,
        };
        let mut p = SatProbe::new(SatProbeConfig::new(GEO), 1400);
        let g = goodput(&mut p, &path, 60, 4);
        assert!(p.congestion_rounds >= 1, "{}", p.congestion_rounds);
        assert!(g > 0.7 * 10e6, "still fills the link: {g}");
        // Loss bursts below the limit are not congestion.
        let mut q = SatProbe::new(SatProbeConfig::new(Duration::from_millis(100)), 1000);
        let t0 = Instant::now();
        let ms = Duration::from_millis;
        for i in 0..100u64 {
            q.handle_sent(t0 + ms(i), 1000);
        }
        for i in 0..100u64 {
            let sent = t0 + ms(i);
            if i % 10 == 0 {
                q.handle_loss(sent, 1000);
            } else {
                q.handle_ack(sent + ms(100), sent, 1000, false, ms(100));
            }
        }
        assert_eq!(q.congestion_rounds, 0, "10 % lost");
        // One flight from idle: its delivery clock starts at its first packet (as Linux's
        // tcp_rate does), so the best sample is the last ACK's, 90 packets of 1000 bytes
        // delivered over the 199 ms since then: 452 261 bytes/s.
        let bw = q.bandwidth();
        assert!((450_000..=455_000).contains(&bw), "{bw}");
    }
}
