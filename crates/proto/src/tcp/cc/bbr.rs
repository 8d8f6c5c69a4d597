//! BBR v1 as Linux's `tcp_bbr.c` runs it (v6.x; BBRv3 is not in mainline Linux): a model of
//! the path (the windowed maximum delivery rate and the windowed minimum RTT) sets a pacing
//! rate and a window; loss is not the congestion signal.
//!
//! Units: bytes and bytes per second where Linux counts packets and packets per µs; the gains
//! are Linux's own fixed-point values (`BBR_UNIT` = 256), so that rounding matches. The
//! endpoint feeds one [`BbrAck`] per ACK (Linux `bbr_main`, called instead of the window growth
//! and PRR of the other controllers) and paces its data at [`Bbr::pacing_rate`].

use super::Window;
use crate::tcp::rate::RateSample;
use crate::time::{Duration, Instant};

/// Fixed-point one (`BBR_UNIT`).
const UNIT: u64 = 256;
/// 2/ln 2: the smallest gain that doubles the sending rate every round (`bbr_high_gain`).
const HIGH_GAIN: u64 = UNIT * 2885 / 1000 + 1;
/// Its inverse, to drain the queue Startup built in about one round (`bbr_drain_gain`).
const DRAIN_GAIN: u64 = UNIT * 1000 / 2885;
/// cwnd gain in ProbeBW, room for delayed and stretched ACKs (`bbr_cwnd_gain`).
const CWND_GAIN: u64 = UNIT * 2;
/// ProbeBW's pacing gain cycle: probe, drain, six rounds of cruising.
const PACING_GAIN: [u64; CYCLE_LEN] = [
    UNIT * 5 / 4,
    UNIT * 3 / 4,
    UNIT,
    UNIT,
    UNIT,
    UNIT,
    UNIT,
    UNIT,
];
const CYCLE_LEN: usize = 8;
/// The first phase is drawn from this many (`bbr_cycle_rand`).
const CYCLE_RAND: u64 = 7;
/// Rounds in the bandwidth filter's window (`bbr_bw_rtts`).
const BW_RTTS: u64 = CYCLE_LEN as u64 + 2;
/// The min RTT filter's window (`bbr_min_rtt_win_sec`).
const MIN_RTT_WIN: Duration = Duration(10_000_000_000);
/// Time at the minimum window in ProbeRTT (`bbr_probe_rtt_mode_ms`).
const PROBE_RTT_TIME: Duration = Duration(200_000_000);
/// Fewest segments in flight (`bbr_cwnd_min_target`).
const CWND_MIN_SEGMENTS: u64 = 4;
/// Startup ends after this many rounds without 25 % growth (`bbr_full_bw_cnt`,
/// `bbr_full_bw_thresh`).
const FULL_BW_CNT: u32 = 3;
const FULL_BW_THRESH: u64 = UNIT * 5 / 4;
/// Below this pacing rate one segment per burst, else two (`bbr_min_tso_rate`, bytes/s).
const MIN_TSO_RATE: u64 = 1_200_000 / 8;
/// Linux's initial window in segments (`TCP_INIT_CWND`).
const INIT_CWND_SEGMENTS: u64 = 10;
/// Pace 1 % below the estimate (`bbr_pacing_margin_percent`).
const PACING_MARGIN_PERCENT: u64 = 1;
/// Long-term (policer) estimation (`bbr_lt_*`).
const LT_INTVL_MIN_RTTS: u32 = 4;
const LT_LOSS_THRESH: u64 = 50;
const LT_BW_RATIO: u64 = UNIT / 8;
const LT_BW_DIFF: u64 = 4000 / 8;
const LT_BW_MAX_RTTS: u32 = 48;
/// ACK aggregation (`bbr_extra_acked_*`).
const EXTRA_ACKED_WIN_RTTS: u32 = 5;
const ACK_EPOCH_ACKED_RESET: u64 = 1 << 20;
const EXTRA_ACKED_MAX: Duration = Duration(100_000_000);

/// BBR's four modes.
#[derive(Clone, Copy, Debug, Eq, PartialEq)]
pub enum BbrMode {
    /// Ramp up at 2/ln 2 per round until the delivery rate stops growing.
    Startup,
    /// Drain the queue Startup built.
    Drain,
    /// Cruise at the estimate, probing above and below it.
    ProbeBw,
    /// Four segments in flight for 200 ms and a round, to see the path's own RTT.
    ProbeRtt,
}

/// Where the sender's loss recovery stands: the part of Linux's `icsk_ca_state` BBR reads.
#[derive(Clone, Copy, Debug, Eq, Ord, PartialEq, PartialOrd)]
pub enum CaState {
    /// No recovery.
    Open,
    /// Fast recovery.
    Recovery,
    /// After a retransmission timeout.
    Loss,
}

/// One ACK as BBR sees it.
#[derive(Clone, Copy, Debug)]
pub struct BbrAck {
    /// The ACK's delivery rate sample.
    pub rs: RateSample,
    /// Recovery state after the ACK was processed.
    pub state: CaState,
    /// Bytes in flight after it (`tcp_packets_in_flight`).
    pub in_flight: u64,
    /// Bytes delivered over the connection (`tp->delivered`).
    pub delivered: u64,
    /// When that count last grew (`delivered_mstamp`).
    pub delivered_time: Instant,
    /// Bytes marked lost over the connection (`tp->lost`).
    pub lost: u64,
    /// Smoothed RTT, if any.
    pub srtt: Option<Duration>,
    /// Earliest departure time of the next paced segment (`tcp_wstamp_ns`).
    pub edt: Instant,
    /// Sender MSS.
    pub mss: u64,
}

/// Kathleen Nichols' windowed running maximum over three samples (Linux `lib/win_minmax.c`),
/// timed in rounds.
#[derive(Clone, Copy, Debug, Default)]
struct WindowedMax {
    /// (round, value), best first.
    s: [(u64, u64); 3],
}

impl WindowedMax {
    fn get(&self) -> u64 {
        self.s[0].1
    }

    fn reset(&mut self, t: u64, v: u64) {
        self.s = [(t, v); 3];
    }

    fn update(&mut self, win: u64, t: u64, v: u64) {
        if v >= self.s[0].1 || t.wrapping_sub(self.s[2].0) > win {
            self.reset(t, v);
            return;
        }
        if v >= self.s[1].1 {
            self.s[1] = (t, v);
            self.s[2] = (t, v);
        } else if v >= self.s[2].1 {
            self.s[2] = (t, v);
        }
        // The best is older than the window: promote the later choices.
        let dt = t.wrapping_sub(self.s[0].0);
        if dt > win {
            self.s[0] = self.s[1];
            self.s[1] = self.s[2];
            self.s[2] = (t, v);
            if t.wrapping_sub(self.s[0].0) > win {
                self.s[0] = self.s[1];
                self.s[1] = self.s[2];
                self.s[2] = (t, v);
            }
        } else if self.s[1].0 == self.s[0].0 && dt > win / 4 {
            // A quarter of the window without a new best: a second choice from it.
            self.s[1] = (t, v);
            self.s[2] = (t, v);
        } else if self.s[2].0 == self.s[1].0 && dt > win / 2 {
            self.s[2] = (t, v);
        }
    }
}

/// BBR's state (Linux `struct bbr`).
#[derive(Clone, Debug)]
pub struct Bbr {
    mode: BbrMode,
    min_rtt: Option<Duration>,
    min_rtt_stamp: Instant,
    probe_rtt_done: Option<Instant>,
    probe_rtt_round_done: bool,
    /// Delivery rate filter, bytes/s, over rounds.
    bw: WindowedMax,
    round_count: u64,
    next_rtt_delivered: u64,
    round_start: bool,
    cycle_stamp: Instant,
    cycle_idx: usize,
    prev_state: CaState,
    packet_conservation: bool,
    idle_restart: bool,
    pacing_gain: u64,
    cwnd_gain: u64,
    full_bw_reached: bool,
    full_bw_cnt: u32,
    full_bw: u64,
    has_seen_rtt: bool,
    prior_cwnd: u64,
    /// Pacing rate, bytes/s; `None` before [`Bbr::init`].
    pacing_rate: Option<u64>,
    // Long-term (policed) bandwidth.
    lt_is_sampling: bool,
    lt_rtt_cnt: u32,
    lt_use_bw: bool,
    lt_bw: u64,
    lt_last_delivered: u64,
    lt_last_stamp: Instant,
    lt_last_lost: u64,
    // ACK aggregation.
    ack_epoch_stamp: Instant,
    ack_epoch_acked: u64,
    extra_acked: [u64; 2],
    extra_acked_win_rtts: u32,
    extra_acked_win_idx: usize,
    /// Draws the first ProbeBW phase (Linux `get_random_u32_below`), seeded per connection.
    rng: u64,
    /// Sender MSS, to turn Linux's packet counts into bytes.
    mss: u64,
}

impl Bbr {
    /// A controller whose random phase draws are seeded by `seed`.
    pub fn new(seed: u64) -> Self {
        Self {
            mode: BbrMode::Startup,
            min_rtt: None,
            min_rtt_stamp: Instant::ZERO,
            probe_rtt_done: None,
            probe_rtt_round_done: false,
            bw: WindowedMax::default(),
            round_count: 0,
            next_rtt_delivered: 0,
            round_start: false,
            cycle_stamp: Instant::ZERO,
            cycle_idx: 0,
            prev_state: CaState::Open,
            packet_conservation: false,
            idle_restart: false,
            pacing_gain: HIGH_GAIN,
            cwnd_gain: HIGH_GAIN,
            full_bw_reached: false,
            full_bw_cnt: 0,
            full_bw: 0,
            has_seen_rtt: false,
            prior_cwnd: 0,
            pacing_rate: None,
            lt_is_sampling: false,
            lt_rtt_cnt: 0,
            lt_use_bw: false,
            lt_bw: 0,
            lt_last_delivered: 0,
            lt_last_stamp: Instant::ZERO,
            lt_last_lost: 0,
            ack_epoch_stamp: Instant::ZERO,
            ack_epoch_acked: 0,
            extra_acked: [0; 2],
            extra_acked_win_rtts: 0,
            extra_acked_win_idx: 0,
            rng: seed ^ 0x9e37_79b9_7f4a_7c15,
            mss: 1,
        }
    }

    /// The connection is established (Linux `bbr_init`, from `tcp_init_transfer`): the
    /// handshake's RTT, if any, seeds min RTT and the first pacing rate (2/ln 2 · cwnd / SRTT).
    pub fn init(
        &mut self,
        now: Instant,
        w: &Window,
        srtt: Option<Duration>,
        min_rtt: Option<Duration>,
    ) {
        self.mss = w.mss.max(1);
        self.min_rtt = min_rtt;
        self.min_rtt_stamp = now;
        self.ack_epoch_stamp = now;
        self.lt_last_stamp = now;
        self.init_pacing_rate(w.cwnd, srtt);
    }

    /// Current mode.
    pub fn mode(&self) -> BbrMode {
        self.mode
    }

    /// Pacing rate in bytes per second, once initialised.
    pub fn pacing_rate(&self) -> Option<u64> {
        self.pacing_rate
    }

    /// Bandwidth estimate, bytes/s (`bbr_bw`).
    pub fn bw(&self) -> u64 {
        if self.lt_use_bw {
            self.lt_bw
        } else {
            self.bw.get()
        }
    }

    /// Minimum RTT estimate.
    pub fn min_rtt(&self) -> Option<Duration> {
        self.min_rtt
    }

    /// Whether Startup found the pipe full.
    pub fn full_bw_reached(&self) -> bool {
        self.full_bw_reached
    }

    /// Current pacing gain (×256).
    pub fn pacing_gain(&self) -> u64 {
        self.pacing_gain
    }

    fn init_pacing_rate(&mut self, cwnd: u64, srtt: Option<Duration>) {
        let rtt = match srtt {
            Some(s) => {
                self.has_seen_rtt = true;
                s.as_nanos().max(1_000)
            }
            None => 1_000_000,
        };
        let bw = (u128::from(cwnd) * 1_000_000_000 / u128::from(rtt)) as u64;
        self.pacing_rate = Some(self.bw_to_pacing_rate(bw, HIGH_GAIN));
    }

    fn bw_to_pacing_rate(&self, bw: u64, gain: u64) -> u64 {
        (u128::from(bw) * u128::from(gain) / u128::from(UNIT)
            * u128::from(100 - PACING_MARGIN_PERCENT)
            / 100) as u64
    }

    fn set_pacing_rate(&mut self, bw: u64, gain: u64, srtt: Option<Duration>, cwnd: u64) {
        let rate = self.bw_to_pacing_rate(bw, gain);
        if !self.has_seen_rtt && srtt.is_some() {
            self.init_pacing_rate(cwnd, srtt);
        }
        if self.full_bw_reached || self.pacing_rate.is_none_or(|p| rate > p) {
            self.pacing_rate = Some(rate);
        }
    }

    /// Segments per burst the pacing layer sends (`bbr_tso_segs_goal`: about 1 ms of data).
    fn tso_segs_goal(&self) -> u64 {
        let rate = self.pacing_rate.unwrap_or(0);
        let bytes = (rate >> 10).min(65_536 - 1 - 320);
        let min_segs = if rate < MIN_TSO_RATE { 1 } else { 2 };
        (bytes / self.mss).max(min_segs).min(0x7f)
    }

    /// ⌈bw · min RTT · gain⌉ in whole segments, as bytes (`bbr_bdp`).
    fn bdp(&self, bw: u64, gain: u64) -> u64 {
        let Some(rtt) = self.min_rtt else {
            return INIT_CWND_SEGMENTS * self.mss;
        };
        let num = u128::from(bw) * u128::from(rtt.as_nanos()) * u128::from(gain);
        let den = 1_000_000_000u128 * u128::from(UNIT) * u128::from(self.mss);
        (num.div_ceil(den) as u64) * self.mss
    }

    /// Room for the end hosts' bursts (`bbr_quantization_budget`).
    fn quantization_budget(&self, cwnd: u64) -> u64 {
        let mut segs = cwnd.div_ceil(self.mss) + 3 * self.tso_segs_goal();
        segs = (segs + 1) & !1;
        if self.mode == BbrMode::ProbeBw && self.cycle_idx == 0 {
            segs += 2;
        }
        segs * self.mss
    }

    fn inflight(&self, bw: u64, gain: u64) -> u64 {
        self.quantization_budget(self.bdp(bw, gain))
    }

    /// Bytes still in the network when the next paced segment leaves
    /// (`bbr_packets_in_net_at_edt`).
    fn in_net_at_edt(&self, now: Instant, edt: Instant, in_flight: u64) -> u64 {
        let wait = edt.saturating_since(now).as_nanos();
        let drained = (u128::from(self.bw()) * u128::from(wait) / 1_000_000_000) as u64;
        let mut at_edt = in_flight;
        if self.pacing_gain > UNIT {
            at_edt += self.tso_segs_goal() * self.mss;
        }
        at_edt.saturating_sub(drained)
    }

    fn draw_phase(&mut self) -> u64 {
        // splitmix64
        self.rng = self.rng.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.rng;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        (z ^ (z >> 31)) % CYCLE_RAND
    }

    /// Save the window to come back to after recovery or ProbeRTT (`bbr_save_cwnd`); the
    /// endpoint calls it where another controller would set ssthresh (`bbr_ssthresh`).
    pub fn save_cwnd(&mut self, w: &Window) {
        if self.prev_state < CaState::Recovery && self.mode != BbrMode::ProbeRtt {
            self.prior_cwnd = w.cwnd;
        } else {
            self.prior_cwnd = self.prior_cwnd.max(w.cwnd);
        }
    }

    /// A retransmission timeout (`bbr_set_state(TCP_CA_Loss)`): the pipe is not known full any
    /// more and the timeout ends a round.
    /// `stamp`: when the delivery count last grew.
    pub fn on_loss_state(&mut self, stamp: Instant, delivered: u64, lost: u64) {
        self.prev_state = CaState::Loss;
        self.full_bw = 0;
        self.round_start = true;
        let rs = RateSample {
            losses: 1,
            ..RateSample::default()
        };
        self.lt_bw_sampling(stamp, &rs, delivered, lost);
    }

    /// A spurious recovery was undone (`bbr_undo_cwnd`): the window stays, the full-pipe and
    /// policer estimates restart.
    pub fn on_undo(&mut self, stamp: Instant, delivered: u64, lost: u64) {
        self.full_bw = 0;
        self.full_bw_cnt = 0;
        self.reset_lt_bw_sampling(stamp, delivered, lost);
    }

    /// Data is sent with nothing in flight while application-limited (`CA_EVENT_TX_START`).
    pub fn on_tx_start(&mut self, now: Instant, srtt: Option<Duration>, w: &mut Window) {
        self.idle_restart = true;
        self.ack_epoch_stamp = now;
        self.ack_epoch_acked = 0;
        match self.mode {
            BbrMode::ProbeBw => self.set_pacing_rate(self.bw(), UNIT, srtt, w.cwnd),
            BbrMode::ProbeRtt => self.check_probe_rtt_done(now, now, w),
            _ => {}
        }
    }

    /// One ACK (`bbr_main`): update the model, then the pacing rate and cwnd. Returns true when
    /// ProbeRTT wants the samples of the coming round marked application-limited.
    pub fn on_ack(&mut self, now: Instant, a: &BbrAck, w: &mut Window) -> bool {
        self.mss = a.mss.max(1);
        self.update_bw(a);
        self.update_ack_aggregation(a, w);
        self.update_cycle_phase(now, a);
        self.check_full_bw_reached(&a.rs);
        self.check_drain(now, a, w);
        let app_limited = self.update_min_rtt(now, a, w);
        self.update_gains();
        let bw = self.bw();
        self.set_pacing_rate(bw, self.pacing_gain, a.srtt, w.cwnd);
        self.set_cwnd(a, bw, w);
        app_limited
    }

    fn update_bw(&mut self, a: &BbrAck) {
        self.round_start = false;
        let Some(rate) = a.rs.rate() else {
            return;
        };
        if a.rs.prior_delivered >= self.next_rtt_delivered {
            self.next_rtt_delivered = a.delivered;
            self.round_count += 1;
            self.round_start = true;
            self.packet_conservation = false;
        }
        self.lt_bw_sampling(a.delivered_time, &a.rs, a.delivered, a.lost);
        if !a.rs.is_app_limited || rate >= self.bw.get() {
            self.bw.update(BW_RTTS, self.round_count, rate);
        }
    }

    fn update_ack_aggregation(&mut self, a: &BbrAck, w: &Window) {
        if a.rs.acked_sacked == 0 || a.rs.rate().is_none() {
            return;
        }
        if self.round_start {
            self.extra_acked_win_rtts = (self.extra_acked_win_rtts + 1).min(0x1f);
            if self.extra_acked_win_rtts >= EXTRA_ACKED_WIN_RTTS {
                self.extra_acked_win_rtts = 0;
                self.extra_acked_win_idx ^= 1;
                self.extra_acked[self.extra_acked_win_idx] = 0;
            }
        }
        let epoch = a
            .delivered_time
            .saturating_since(self.ack_epoch_stamp)
            .as_nanos();
        let mut expected = (u128::from(self.bw()) * u128::from(epoch) / 1_000_000_000) as u64;
        if self.ack_epoch_acked <= expected
            || self.ack_epoch_acked + a.rs.acked_sacked >= ACK_EPOCH_ACKED_RESET * self.mss
        {
            self.ack_epoch_acked = 0;
            self.ack_epoch_stamp = a.delivered_time;
            expected = 0;
        }
        self.ack_epoch_acked = (self.ack_epoch_acked + a.rs.acked_sacked).min(0xfffff * self.mss);
        let extra = (self.ack_epoch_acked - expected).min(w.cwnd);
        let slot = &mut self.extra_acked[self.extra_acked_win_idx];
        *slot = (*slot).max(extra);
    }

    fn ack_aggregation_cwnd(&self) -> u64 {
        if !self.full_bw_reached {
            return 0;
        }
        let max_aggr =
            (u128::from(self.bw()) * u128::from(EXTRA_ACKED_MAX.as_nanos()) / 1_000_000_000) as u64;
        self.extra_acked[0].max(self.extra_acked[1]).min(max_aggr)
    }

    fn update_cycle_phase(&mut self, now: Instant, a: &BbrAck) {
        if self.mode == BbrMode::ProbeBw && self.is_next_cycle_phase(now, a) {
            self.advance_cycle_phase(a.delivered_time);
        }
    }

    fn is_next_cycle_phase(&self, now: Instant, a: &BbrAck) -> bool {
        let min_rtt = self.min_rtt.unwrap_or(Duration(u64::MAX));
        let full_length = a.delivered_time.saturating_since(self.cycle_stamp) > min_rtt;
        if self.pacing_gain == UNIT {
            return full_length;
        }
        let inflight = self.in_net_at_edt(now, a.edt, a.rs.prior_in_flight);
        let bw = self.bw.get();
        if self.pacing_gain > UNIT {
            return full_length
                && (a.rs.losses > 0 || inflight >= self.inflight(bw, self.pacing_gain));
        }
        full_length || inflight <= self.inflight(bw, UNIT)
    }

    fn advance_cycle_phase(&mut self, delivered_time: Instant) {
        self.cycle_idx = (self.cycle_idx + 1) % CYCLE_LEN;
        self.cycle_stamp = delivered_time;
    }

    fn reset_probe_bw_mode(&mut self, delivered_time: Instant) {
        self.mode = BbrMode::ProbeBw;
        self.cycle_idx = CYCLE_LEN - 1 - self.draw_phase() as usize;
        self.advance_cycle_phase(delivered_time);
    }

    fn reset_mode(&mut self, delivered_time: Instant) {
        if self.full_bw_reached {
            self.reset_probe_bw_mode(delivered_time);
        } else {
            self.mode = BbrMode::Startup;
        }
    }

    fn check_full_bw_reached(&mut self, rs: &RateSample) {
        if self.full_bw_reached || !self.round_start || rs.is_app_limited {
            return;
        }
        let thresh =
            (u128::from(self.full_bw) * u128::from(FULL_BW_THRESH) / u128::from(UNIT)) as u64;
        if self.bw.get() >= thresh {
            self.full_bw = self.bw.get();
            self.full_bw_cnt = 0;
            return;
        }
        self.full_bw_cnt += 1;
        self.full_bw_reached = self.full_bw_cnt >= FULL_BW_CNT;
    }

    fn check_drain(&mut self, now: Instant, a: &BbrAck, w: &mut Window) {
        if self.mode == BbrMode::Startup && self.full_bw_reached {
            self.mode = BbrMode::Drain;
            w.ssthresh = self.inflight(self.bw.get(), UNIT);
        }
        if self.mode == BbrMode::Drain
            && self.in_net_at_edt(now, a.edt, a.in_flight) <= self.inflight(self.bw.get(), UNIT)
        {
            self.reset_probe_bw_mode(a.delivered_time);
        }
    }

    /// `stamp`: when the delivery count last grew, where a new gain cycle starts.
    fn check_probe_rtt_done(&mut self, now: Instant, stamp: Instant, w: &mut Window) {
        if self.probe_rtt_done.is_none_or(|d| now <= d) {
            return;
        }
        self.min_rtt_stamp = now;
        w.cwnd = w.cwnd.max(self.prior_cwnd);
        self.reset_mode(stamp);
    }

    fn update_min_rtt(&mut self, now: Instant, a: &BbrAck, w: &mut Window) -> bool {
        let expired = now > self.min_rtt_stamp + MIN_RTT_WIN;
        if let Some(rtt) = a.rs.rtt {
            if self.min_rtt.is_none_or(|m| rtt < m) || expired {
                self.min_rtt = Some(rtt);
                self.min_rtt_stamp = now;
            }
        }
        if expired && !self.idle_restart && self.mode != BbrMode::ProbeRtt {
            self.mode = BbrMode::ProbeRtt;
            self.save_cwnd(w);
            self.probe_rtt_done = None;
        }
        let mut app_limited = false;
        if self.mode == BbrMode::ProbeRtt {
            app_limited = true;
            if self.probe_rtt_done.is_none() && a.in_flight <= CWND_MIN_SEGMENTS * self.mss {
                self.probe_rtt_done = Some(now + PROBE_RTT_TIME);
                self.probe_rtt_round_done = false;
                self.next_rtt_delivered = a.delivered;
            } else if self.probe_rtt_done.is_some() {
                if self.round_start {
                    self.probe_rtt_round_done = true;
                }
                if self.probe_rtt_round_done {
                    self.check_probe_rtt_done(now, a.delivered_time, w);
                }
            }
        }
        if a.rs.delivered > 0 {
            self.idle_restart = false;
        }
        app_limited
    }

    fn update_gains(&mut self) {
        (self.pacing_gain, self.cwnd_gain) = match self.mode {
            BbrMode::Startup => (HIGH_GAIN, HIGH_GAIN),
            BbrMode::Drain => (DRAIN_GAIN, HIGH_GAIN),
            BbrMode::ProbeBw if self.lt_use_bw => (UNIT, CWND_GAIN),
            BbrMode::ProbeBw => (PACING_GAIN[self.cycle_idx], CWND_GAIN),
            BbrMode::ProbeRtt => (UNIT, UNIT),
        };
    }

    /// Packet conservation in the first round of a recovery, the saved window back when it
    /// ends (`bbr_set_cwnd_to_recover_or_restore`). Returns the window and whether
    /// conservation holds it.
    fn recover_or_restore(&mut self, a: &BbrAck, w: &Window) -> (u64, bool) {
        let mut cwnd = w.cwnd;
        if a.rs.losses > 0 {
            cwnd = cwnd.saturating_sub(a.rs.losses).max(self.mss);
        }
        let acked = a.rs.acked_sacked;
        if a.state == CaState::Recovery && self.prev_state != CaState::Recovery {
            self.packet_conservation = true;
            self.next_rtt_delivered = a.delivered;
            cwnd = a.in_flight + acked;
        } else if self.prev_state >= CaState::Recovery && a.state < CaState::Recovery {
            cwnd = cwnd.max(self.prior_cwnd);
            self.packet_conservation = false;
        }
        self.prev_state = a.state;
        if self.packet_conservation {
            return (cwnd.max(a.in_flight + acked), true);
        }
        (cwnd, false)
    }

    fn set_cwnd(&mut self, a: &BbrAck, bw: u64, w: &mut Window) {
        let acked = a.rs.acked_sacked;
        if acked > 0 {
            let (mut cwnd, conserving) = self.recover_or_restore(a, w);
            if !conserving {
                let target = self.quantization_budget(
                    self.bdp(bw, self.cwnd_gain) + self.ack_aggregation_cwnd(),
                );
                if self.full_bw_reached {
                    cwnd = (cwnd + acked).min(target);
                } else if cwnd < target || a.delivered < INIT_CWND_SEGMENTS * self.mss {
                    cwnd += acked;
                }
                cwnd = cwnd.max(CWND_MIN_SEGMENTS * self.mss);
            }
            w.cwnd = cwnd;
        }
        if self.mode == BbrMode::ProbeRtt {
            w.cwnd = w.cwnd.min(CWND_MIN_SEGMENTS * self.mss);
        }
    }

    fn reset_lt_bw_sampling_interval(&mut self, now: Instant, delivered: u64, lost: u64) {
        self.lt_last_stamp = now;
        self.lt_last_delivered = delivered;
        self.lt_last_lost = lost;
        self.lt_rtt_cnt = 0;
    }

    fn reset_lt_bw_sampling(&mut self, now: Instant, delivered: u64, lost: u64) {
        self.lt_bw = 0;
        self.lt_use_bw = false;
        self.lt_is_sampling = false;
        self.reset_lt_bw_sampling_interval(now, delivered, lost);
    }

    fn lt_bw_interval_done(&mut self, now: Instant, bw: u64, delivered: u64, lost: u64) {
        if self.lt_bw > 0 {
            let diff = bw.abs_diff(self.lt_bw);
            let close = diff * UNIT <= LT_BW_RATIO * self.lt_bw
                || self.bw_to_pacing_rate(diff, UNIT) <= LT_BW_DIFF;
            if close {
                self.lt_bw = (bw + self.lt_bw) / 2;
                self.lt_use_bw = true;
                self.pacing_gain = UNIT;
                self.lt_rtt_cnt = 0;
                return;
            }
        }
        self.lt_bw = bw;
        self.reset_lt_bw_sampling_interval(now, delivered, lost);
    }

    /// Token-bucket policer detection (`bbr_lt_bw_sampling`): two intervals of consistent
    /// throughput with ≥ 20 % loss, and BBR paces at their average for 48 rounds. `now` is
    /// when the delivery count last grew (`delivered_mstamp`).
    fn lt_bw_sampling(&mut self, now: Instant, rs: &RateSample, delivered: u64, lost: u64) {
        if self.lt_use_bw {
            if self.mode == BbrMode::ProbeBw && self.round_start {
                self.lt_rtt_cnt += 1;
                if self.lt_rtt_cnt >= LT_BW_MAX_RTTS {
                    self.reset_lt_bw_sampling(now, delivered, lost);
                    self.reset_probe_bw_mode(now);
                }
            }
            return;
        }
        if !self.lt_is_sampling {
            if rs.losses == 0 {
                return;
            }
            self.reset_lt_bw_sampling_interval(now, delivered, lost);
            self.lt_is_sampling = true;
        }
        if rs.is_app_limited {
            self.reset_lt_bw_sampling(now, delivered, lost);
            return;
        }
        if self.round_start {
            self.lt_rtt_cnt += 1;
        }
        if self.lt_rtt_cnt < LT_INTVL_MIN_RTTS {
            return;
        }
        if self.lt_rtt_cnt > 4 * LT_INTVL_MIN_RTTS {
            self.reset_lt_bw_sampling(now, delivered, lost);
            return;
        }
        if rs.losses == 0 {
            return;
        }
        let lost_i = lost - self.lt_last_lost;
        let delivered_i = delivered - self.lt_last_delivered;
        if delivered_i == 0 || lost_i * UNIT < LT_LOSS_THRESH * delivered_i {
            return;
        }
        let ms = now.saturating_since(self.lt_last_stamp).as_nanos() / 1_000_000;
        if ms < 1 {
            return;
        }
        let bw = delivered_i * 1000 / ms;
        self.lt_bw_interval_done(now, bw, delivered, lost);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u64 = 1448;

    fn ms(n: u64) -> Instant {
        Instant::ZERO + Duration::from_millis(n)
    }

    fn window() -> Window {
        Window {
            cwnd: 10 * MSS,
            ssthresh: u64::MAX,
            mss: MSS,
            abc_limit: MSS,
            ss_to_ssthresh: false,
        }
    }

    /// A controller past `init` on a 600 ms path.
    fn started() -> (Bbr, Window) {
        let mut b = Bbr::new(1);
        let w = window();
        let rtt = Duration::from_millis(600);
        b.init(ms(0), &w, Some(rtt), Some(rtt));
        (b, w)
    }

    /// An ACK at `t_ms` of `acked` bytes that ends a round: `rate` bytes/s measured over one
    /// 600 ms interval, `in_flight` left.
    fn round_ack(delivered: u64, acked: u64, rate: u64, in_flight: u64, t_ms: u64) -> BbrAck {
        let interval = Duration::from_millis(600);
        BbrAck {
            rs: RateSample {
                delivered: rate * 6 / 10,
                interval: Some(interval),
                prior_delivered: delivered - acked,
                acked_sacked: acked,
                losses: 0,
                is_app_limited: false,
                rtt: Some(Duration::from_millis(600)),
                prior_in_flight: in_flight + acked,
            },
            state: CaState::Open,
            in_flight,
            delivered,
            delivered_time: ms(t_ms),
            lost: 0,
            srtt: Some(Duration::from_millis(600)),
            edt: ms(t_ms),
            mss: MSS,
        }
    }

    /// lib/win_minmax.c's running max: a new best resets; a quarter and a half of the window
    /// without one take second and third choices; an expired best gives way to them in order.
    #[test]
    fn windowed_max_keeps_the_best_of_the_window() {
        let mut m = WindowedMax::default();
        m.reset(1, 100);
        m.update(10, 2, 50);
        assert_eq!((m.get(), m.s[1], m.s[2]), (100, (1, 100), (1, 100)));
        m.update(10, 4, 60); // a quarter (2) passed: second choice
        assert_eq!((m.s[1], m.s[2]), ((4, 60), (4, 60)));
        m.update(10, 7, 40); // half (5) passed: third choice
        assert_eq!(m.s[2], (7, 40));
        m.update(10, 12, 30); // the best (round 1) expired
        assert_eq!(m.s, [(4, 60), (7, 40), (12, 30)]);
        m.update(10, 15, 10);
        assert_eq!(m.get(), 40);
        m.update(10, 16, 45); // new best of what is left
        assert_eq!(m.get(), 45);
        m.update(10, 40, 5); // nothing left in the window: reset
        assert_eq!(m.s, [(40, 5); 3]);
    }

    /// `bbr_init_pacing_rate_from_rtt`: 2/ln 2 · 10 segments / 600 ms, less the 1 % margin:
    /// 14 480 B / 0.6 s = 24 133 B/s; · 739/256 = 69 665; · 0.99 = 68 968 B/s.
    #[test]
    fn first_pacing_rate_is_high_gain_times_the_initial_window_over_srtt() {
        let (b, _) = started();
        assert_eq!(b.pacing_rate(), Some(68_968));
        let mut cold = Bbr::new(1);
        cold.init(ms(0), &window(), None, None);
        // No handshake RTT: a nominal 1 ms.
        assert_eq!(cold.pacing_rate(), Some(14_480_000 * 739 / 256 * 99 / 100));
    }

    /// Startup doubles the window each round (cwnd += acked) while the delivery rate grows;
    /// three rounds without 25 % growth fill the pipe, Drain reports the one-BDP inflight as
    /// ssthresh, and Drain ends once in flight is down to it.
    #[test]
    fn startup_ends_after_three_rounds_without_growth() {
        let (mut b, mut w) = started();
        let rate = 2_500_000; // 20 Mb/s
        let mut delivered = 0;
        for (round, t) in [(1u64, 600u64), (2, 1200), (3, 1800)] {
            delivered += 10 * MSS;
            let cwnd = w.cwnd;
            b.on_ack(
                ms(t),
                &round_ack(delivered, 10 * MSS, rate, 3000 * MSS, t),
                &mut w,
            );
            assert_eq!(b.mode(), BbrMode::Startup, "round {round}");
            assert_eq!(
                w.cwnd,
                cwnd + 10 * MSS,
                "round {round}: cwnd grows by acked"
            );
        }
        assert_eq!(b.bw(), rate);
        // Pacing: 2.5 MB/s · 739/256 · 0.99 = 7 144 628 B/s.
        assert_eq!(b.pacing_rate(), Some(7_144_628));
        delivered += 10 * MSS;
        b.on_ack(
            ms(2400),
            &round_ack(delivered, 10 * MSS, rate, 3000 * MSS, 2400),
            &mut w,
        );
        assert!(b.full_bw_reached());
        assert_eq!(b.mode(), BbrMode::Drain);
        // BDP 1.5 MB = ⌈1035.9⌉ = 1036 segments, + 3 · 4 (a 1 ms burst at 7.1 MB/s is 4
        // segments) = 1048 segments.
        assert_eq!(w.ssthresh, 1048 * MSS);
        assert_eq!(b.pacing_gain(), DRAIN_GAIN);
        delivered += 10 * MSS;
        b.on_ack(
            ms(2500),
            &round_ack(delivered, 10 * MSS, rate, 1000 * MSS, 2500),
            &mut w,
        );
        assert_eq!(b.mode(), BbrMode::ProbeBw);
    }

    /// ProbeBW's first phase is drawn from all but the draining one (`bbr_cycle_rand` = 7 of
    /// 8 phases, never the 3/4 phase): over 200 seeds every other phase comes up.
    #[test]
    fn probe_bw_never_starts_in_the_drain_phase() {
        let mut seen = [0u32; CYCLE_LEN];
        for seed in 0..200 {
            let mut b = Bbr::new(seed);
            b.reset_probe_bw_mode(ms(0));
            seen[b.cycle_idx] += 1;
        }
        assert_eq!(seen[1], 0);
        assert!(
            seen.iter().enumerate().all(|(i, &n)| i == 1 || n > 0),
            "{seen:?}"
        );
    }

    /// After the pipe is full cwnd snaps to 2 · BDP plus the burst budget, and never grows by
    /// more than what an ACK delivers.
    #[test]
    fn probe_bw_cwnd_is_twice_the_bdp_plus_the_burst_budget() {
        let (mut b, mut w) = started();
        let rate = 2_500_000;
        let mut delivered = 0;
        for t in [600, 1200, 1800, 2400, 3000] {
            delivered += 10 * MSS;
            b.on_ack(
                ms(t),
                &round_ack(delivered, 10 * MSS, rate, 100 * MSS, t),
                &mut w,
            );
        }
        assert_eq!(b.mode(), BbrMode::ProbeBw);
        w.cwnd = 10_000 * MSS;
        delivered += 10 * MSS;
        b.on_ack(
            ms(3600),
            &round_ack(delivered, 10 * MSS, rate, 100 * MSS, 3600),
            &mut w,
        );
        // 2 · 1.5 MB = ⌈2071.8⌉ = 2072 segments, + 10 of ACK aggregation (each ACK brings 10
        // segments at once), + 3 · 2 (1 ms at 2.5–3.1 MB/s is under two segments: the
        // minimum, 2) = 2088, + 2 in the probing phase.
        let probing = u64::from(b.cycle_idx == 0) * 2;
        assert_eq!(w.cwnd, (2088 + probing) * MSS);
        let before = 100 * MSS;
        w.cwnd = before;
        delivered += 3 * MSS;
        b.on_ack(
            ms(3700),
            &round_ack(delivered, 3 * MSS, rate, 100 * MSS, 3700),
            &mut w,
        );
        assert_eq!(w.cwnd, before + 3 * MSS);
    }

    /// Ten seconds without a lower RTT: ProbeRTT holds four segments for 200 ms and a round,
    /// with its samples application-limited, then restores the window it had.
    #[test]
    fn probe_rtt_after_ten_seconds_then_the_old_window_back() {
        let (mut b, mut w) = started();
        let rate = 2_500_000;
        let mut delivered = 0;
        for t in [600, 1200, 1800, 2400, 3000] {
            delivered += 10 * MSS;
            b.on_ack(
                ms(t),
                &round_ack(delivered, 10 * MSS, rate, 100 * MSS, t),
                &mut w,
            );
        }
        let mut ack = |b: &mut Bbr, w: &mut Window, t: u64, in_flight: u64, rtt_ms: u64| {
            delivered += 10 * MSS;
            let mut a = round_ack(delivered, 10 * MSS, rate, in_flight, t);
            a.rs.rtt = Some(Duration::from_millis(rtt_ms));
            b.on_ack(ms(t), &a, w)
        };
        // 700 ms samples never lower the 600 ms minimum taken at 0 s.
        assert!(!ack(&mut b, &mut w, 9_900, 2000 * MSS, 700));
        assert_eq!(b.mode(), BbrMode::ProbeBw);
        let prior = w.cwnd;
        assert!(ack(&mut b, &mut w, 10_001, 2000 * MSS, 700));
        assert_eq!(b.mode(), BbrMode::ProbeRtt);
        assert_eq!(w.cwnd, 4 * MSS);
        // The expired filter took the 700 ms sample as the new minimum.
        assert_eq!(b.min_rtt(), Some(Duration::from_millis(700)));
        assert!(ack(&mut b, &mut w, 10_500, 4 * MSS, 650)); // down to 4: 200 ms from now
        assert!(ack(&mut b, &mut w, 10_650, 4 * MSS, 650)); // a round, but not 200 ms yet
        assert_eq!(b.mode(), BbrMode::ProbeRtt);
        ack(&mut b, &mut w, 10_701, 4 * MSS, 650);
        assert_eq!(b.mode(), BbrMode::ProbeBw);
        assert!(w.cwnd >= prior, "{} < {prior}", w.cwnd);
        assert_eq!(b.min_rtt(), Some(Duration::from_millis(650)));
    }

    /// The first round of a fast recovery conserves packets: cwnd = in flight + acked, never
    /// less; the window saved at the loss comes back when recovery ends.
    #[test]
    fn recovery_conserves_packets_then_restores_the_saved_window() {
        let (mut b, mut w) = started();
        w.cwnd = 500 * MSS;
        b.save_cwnd(&w);
        let mut a = round_ack(100 * MSS, 2 * MSS, 2_500_000, 300 * MSS, 600);
        a.state = CaState::Recovery;
        a.rs.prior_delivered = 0; // within the round the recovery started
        b.on_ack(ms(600), &a, &mut w);
        assert_eq!(w.cwnd, 302 * MSS);
        a.delivered += 2 * MSS;
        a.in_flight = 290 * MSS;
        b.on_ack(ms(610), &a, &mut w);
        assert_eq!(
            w.cwnd,
            302 * MSS,
            "conservation: max(cwnd, in flight + acked)"
        );
        a.state = CaState::Open;
        a.delivered += 2 * MSS;
        b.on_ack(ms(620), &a, &mut w);
        assert_eq!(
            w.cwnd,
            500 * MSS + 2 * MSS,
            "saved window back, then slow start"
        );
    }

    /// Two sampling intervals of at least four rounds with a fifth of the data lost and the
    /// same delivery rate: BBR takes itself to be policed and paces at that rate with gain 1.
    #[test]
    fn a_policer_is_detected_from_two_lossy_intervals_of_equal_rate() {
        let (mut b, mut w) = started();
        let mut delivered = 0;
        let mut lost = 0;
        let mut t = 0;
        for _ in 0..5 {
            t += 600;
            delivered += 100 * MSS;
            b.on_ack(
                ms(t),
                &round_ack(delivered, 100 * MSS, 250_000, 100 * MSS, t),
                &mut w,
            );
        }
        // Losses of 25 %, 100 segments delivered per 600 ms round: 241 333 B/s.
        for _ in 0..12 {
            t += 600;
            delivered += 100 * MSS;
            lost += 25 * MSS;
            let mut a = round_ack(delivered, 100 * MSS, 250_000, 100 * MSS, t);
            a.rs.losses = 25 * MSS;
            a.lost = lost;
            b.on_ack(ms(t), &a, &mut w);
            if b.lt_use_bw {
                break;
            }
        }
        assert!(b.lt_use_bw);
        assert_eq!(b.bw(), 100 * MSS * 1000 / 600);
        assert_eq!(b.pacing_gain(), UNIT);
    }
}
