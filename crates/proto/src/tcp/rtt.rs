//! Round-trip time estimation and the retransmission timeout: RFC 6298, or ns-2.35's
//! tick-counting estimator (`TcpAgent::rtt_update`, `rtt_timeout`, `rtt_backoff` in tcp.cc).

use super::config::{RttEstimatorKind, TcpConfig};
use crate::time::{Duration, Instant};

/// ns-2's fixed-point weights (`T_SRTT_BITS`, `T_RTTVAR_BITS`, `rttvar_exp_`, their defaults):
/// `t_srtt_` holds 8·SRTT and `t_rttvar_` 4·RTTVAR, in ticks, and RTO = SRTT + 4·RTTVAR.
const NS2_SRTT_BITS: u32 = 3;
const NS2_RTTVAR_BITS: u32 = 2;
const NS2_RTTVAR_EXP: u32 = 2;

/// ns-2's estimator state, everything in whole ticks of `tcpTick_` as tcp.cc keeps it.
#[derive(Clone, Debug)]
struct Ns2Ticks {
    /// `tcpTick_` in nanoseconds (at least 1).
    tick: u64,
    /// `boot_time_`: where between two ticks the sender's clock started (ns-2 draws it
    /// uniformly in `[0, tcpTick_)`), so a sample counts the tick boundaries it crosses.
    phase: u64,
    /// `t_srtt_`: 8·SRTT in ticks; 0 means no estimate (before the first sample, and after
    /// `rtt_backoff` has backed off past 8).
    srtt8: i64,
    /// `t_rttvar_`: 4·RTTVAR in ticks.
    rttvar4: i64,
    /// `t_rtxcur_`: the RTO before the minimum and the backoff (`rtxcur_init_` until a sample).
    rtxcur: Duration,
}

impl Ns2Ticks {
    /// `rtt_update` without timestamps: the sample is the number of tick boundaries between
    /// the send time and now (`int((tao + fmod(sendtime + boot_time_, tick)) / tick)`), at
    /// least 1; SRTT and RTTVAR move by truncating shifts.
    fn update(&mut self, now: Instant, r: Duration) {
        let now_ns = now.as_nanos().saturating_add(self.phase);
        let ticks_now = now_ns / self.tick;
        let ticks_sent = now_ns.saturating_sub(r.as_nanos()) / self.tick;
        let m = i64::try_from(ticks_now - ticks_sent)
            .unwrap_or(i64::MAX)
            .max(1);
        if self.srtt8 != 0 {
            let delta = m - (self.srtt8 >> NS2_SRTT_BITS);
            // ns-2 clamps both at 1 here; with samples of at least one tick and RTTVAR
            // starting at 2 (quarter ticks) neither can fall that low, so no clamp is written.
            self.srtt8 += delta;
            self.rttvar4 += delta.abs() - (self.rttvar4 >> NS2_RTTVAR_BITS);
        } else {
            self.srtt8 = m << NS2_SRTT_BITS;
            self.rttvar4 = m << (NS2_RTTVAR_BITS - 1);
        }
        let shift = NS2_RTTVAR_EXP + NS2_SRTT_BITS - NS2_RTTVAR_BITS;
        let ticks = ((self.rttvar4 << shift) + self.srtt8) >> NS2_SRTT_BITS;
        self.rtxcur = Duration(self.tick.saturating_mul(ticks.unsigned_abs()));
    }
}

/// Linux's estimator (`tcp_rtt_estimator`, `tcp_set_rto`), in µs as Linux keeps it: the mean
/// deviation is tracked as RFC 6298's, but negative errors count an eighth, the RTO's
/// variance term is the largest deviation of the last round trip, at least `min_rto`, and it
/// decays only a quarter of the way down per round trip. A single RTT jump (a queue filling)
/// thus keeps the RTO up for several round trips, where RFC 6298's decays on every sample.
#[derive(Clone, Debug, Default)]
struct LinuxRtt {
    /// `srtt_us`: 8·SRTT.
    srtt8: i64,
    /// `mdev_us`: 4·mean deviation.
    mdev4: i64,
    /// `mdev_max_us`: the largest `mdev_us` of the current round trip, at least the minimum.
    mdev_max: i64,
    /// `rttvar_us`: the RTO's variance term.
    rttvar: i64,
    /// `rtt_seq`: SND.NXT when the round trip began; an ACK past it ends the round.
    rtt_seq: u64,
}

impl LinuxRtt {
    /// One sample of `m` µs, SND.UNA and SND.NXT after the ACK, `rto_min` µs.
    fn update(&mut self, m: i64, snd_una: u64, snd_nxt: u64, rto_min: i64) {
        let mut m = m.max(1);
        if self.srtt8 != 0 {
            m -= self.srtt8 >> 3;
            self.srtt8 += m;
            if m < 0 {
                m = -m - (self.mdev4 >> 2);
                if m > 0 {
                    m >>= 3;
                }
            } else {
                m -= self.mdev4 >> 2;
            }
            self.mdev4 += m;
            if self.mdev4 > self.mdev_max {
                self.mdev_max = self.mdev4;
                self.rttvar = self.rttvar.max(self.mdev_max);
            }
            if snd_una > self.rtt_seq {
                if self.mdev_max < self.rttvar {
                    self.rttvar -= (self.rttvar - self.mdev_max) >> 2;
                }
                self.rtt_seq = snd_nxt;
                self.mdev_max = rto_min;
            }
        } else {
            self.srtt8 = m << 3;
            self.mdev4 = m << 1;
            self.rttvar = self.mdev4.max(rto_min);
            self.mdev_max = self.rttvar;
            self.rtt_seq = snd_nxt;
        }
        self.srtt8 = self.srtt8.max(1);
    }
}

/// SRTT, RTTVAR and RTO per RFC 6298 (or ns-2's or Linux's estimator), with exponential
/// backoff.
#[derive(Clone, Debug)]
pub struct RttEstimator {
    srtt: Option<Duration>,
    rttvar: Duration,
    /// RTO before backoff.
    base_rto: Duration,
    /// Number of consecutive backoffs (RFC 6298 §5.5).
    backoff: u32,
    min_rto: Duration,
    max_rto: Duration,
    granularity: Duration,
    latest: Option<Duration>,
    samples: u64,
    sum_ns: u128,
    /// `Some` with `rtt_estimator = "ns2"`: then SRTT, RTTVAR and the RTO come from here.
    ns2: Option<Ns2Ticks>,
    /// `Some` with `rtt_estimator = "linux"`: likewise.
    linux: Option<LinuxRtt>,
}

impl RttEstimator {
    /// Before the first sample the RTO is `initial_rto` (§2.1).
    pub fn new(
        initial_rto: Duration,
        min_rto: Duration,
        max_rto: Duration,
        granularity: Duration,
    ) -> Self {
        Self {
            srtt: None,
            rttvar: Duration::ZERO,
            base_rto: initial_rto.max(min_rto).min(max_rto),
            backoff: 0,
            min_rto,
            max_rto,
            granularity,
            latest: None,
            samples: 0,
            sum_ns: 0,
            ns2: None,
            linux: None,
        }
    }

    /// ns-2.35's estimator: samples counted in ticks of `tick` (`tcpTick_`) from a clock that
    /// started `phase` into a tick (`boot_time_`, reduced modulo `tick`), fixed-point SRTT and
    /// RTTVAR, and `rtt_timeout`'s bounds: the minimum before the backoff, then the maximum,
    /// then at least two ticks.
    pub fn ns2(
        initial_rto: Duration,
        min_rto: Duration,
        max_rto: Duration,
        tick: Duration,
        phase: Duration,
    ) -> Self {
        let tick = tick.as_nanos().max(1);
        Self {
            ns2: Some(Ns2Ticks {
                tick,
                phase: phase.as_nanos() % tick,
                srtt8: 0,
                rttvar4: 0,
                rtxcur: initial_rto,
            }),
            ..Self::new(initial_rto, min_rto, max_rto, Duration(tick))
        }
    }

    /// The estimator a TCP endpoint's settings ask for. ns-2's `boot_time_` phase is taken
    /// from the initial sequence number `iss` (uniform in `[0, tick)` as ns-2's draw is), so
    /// it costs no extra random draw.
    pub fn for_config(config: &TcpConfig, iss: u32) -> Self {
        match config.rtt_estimator {
            RttEstimatorKind::Rfc6298 => Self::new(
                config.initial_rto,
                config.min_rto,
                config.max_rto,
                config.clock_granularity,
            ),
            RttEstimatorKind::Ns2 => {
                let tick = config.clock_granularity.as_nanos().max(1);
                let phase = (u128::from(iss) * u128::from(tick)) >> 32;
                Self::ns2(
                    config.initial_rto,
                    config.min_rto,
                    config.max_rto,
                    Duration(tick),
                    Duration(phase as u64),
                )
            }
            RttEstimatorKind::Linux => Self {
                linux: Some(LinuxRtt::default()),
                ..Self::new(
                    config.initial_rto,
                    config.min_rto,
                    config.max_rto,
                    Duration::ZERO,
                )
            },
        }
    }

    /// RFC 6298 §5.7: the SYN timed out and no RTT sample exists when data transmission
    /// begins: the RTO restarts at 3 s (at least; within the bounds), with no backoff. ns-2
    /// has no such rule (its backoff lasts until a timed segment is acknowledged).
    pub fn on_syn_timeout_established(&mut self) {
        if self.srtt.is_none() && self.ns2.is_none() {
            self.base_rto = Duration::from_secs(3).max(self.min_rto).min(self.max_rto);
            self.backoff = 0;
        }
    }

    /// Take one RTT measurement R, ending at `now` (§2.2, §2.3, α = 1/8, β = 1/4), clearing
    /// any backoff.
    pub fn on_sample(&mut self, now: Instant, r: Duration) {
        self.on_sample_in_round(now, r, 0, 0);
    }

    /// [`Self::on_sample`] from an ACK that leaves SND.UNA at `snd_una` with SND.NXT at
    /// `snd_nxt` (offsets): Linux's estimator counts round trips with them.
    pub fn on_sample_in_round(&mut self, now: Instant, r: Duration, snd_una: u64, snd_nxt: u64) {
        self.backoff = 0;
        self.latest = Some(r);
        self.samples += 1;
        self.sum_ns += u128::from(r.as_nanos());
        if let Some(n) = self.ns2.as_mut() {
            n.update(now, r);
            return;
        }
        if let Some(l) = self.linux.as_mut() {
            let us = |d: Duration| i64::try_from(d.as_nanos() / 1_000).unwrap_or(i64::MAX);
            l.update(us(r), snd_una, snd_nxt, us(self.min_rto));
            let srtt = Duration((l.srtt8 >> 3).unsigned_abs() * 1_000);
            self.srtt = Some(srtt);
            self.rttvar = Duration((l.mdev4 >> 2).unsigned_abs() * 1_000);
            let var = Duration(l.rttvar.unsigned_abs() * 1_000);
            self.base_rto = (srtt + var).min(self.max_rto);
            return;
        }
        let r_ns = r.as_nanos();
        match self.srtt {
            None => {
                self.srtt = Some(r);
                self.rttvar = Duration(r_ns / 2);
            }
            Some(srtt) => {
                let s = srtt.as_nanos();
                let err = s.abs_diff(r_ns);
                self.rttvar = Duration((3 * self.rttvar.as_nanos() + err) / 4);
                self.srtt = Some(Duration((7 * s + r_ns) / 8));
            }
        }
        let srtt = self.srtt.unwrap_or(r);
        let var = self.granularity.max(self.rttvar.saturating_mul(4));
        self.base_rto = (srtt + var).max(self.min_rto).min(self.max_rto);
    }

    /// The timer expired: double the RTO (§5.5), up to the maximum. ns-2 (`rtt_backoff`) also
    /// forgets SRTT once the multiplier passes 8, so the next sample starts afresh.
    pub fn on_backoff(&mut self) {
        self.backoff = (self.backoff + 1).min(32);
        if let Some(n) = self.ns2.as_mut() {
            if self.backoff > 3 {
                n.rttvar4 += n.srtt8 >> NS2_SRTT_BITS;
                n.srtt8 = 0;
            }
        }
    }

    /// Current RTO including backoff.
    pub fn rto(&self) -> Duration {
        let factor = 1u64.checked_shl(self.backoff).unwrap_or(u64::MAX);
        match &self.ns2 {
            None => self.base_rto.saturating_mul(factor).min(self.max_rto),
            Some(n) => n
                .rtxcur
                .max(self.min_rto)
                .saturating_mul(factor)
                .min(self.max_rto)
                .max(Duration(2 * n.tick)),
        }
    }

    /// Smoothed RTT, once there is a sample (ns-2: `t_srtt_`/8 ticks, none after it was
    /// forgotten in a long backoff).
    pub fn srtt(&self) -> Option<Duration> {
        match &self.ns2 {
            None => self.srtt,
            Some(n) => (n.srtt8 > 0).then(|| Duration(n.tick * n.srtt8.unsigned_abs() / 8)),
        }
    }

    /// RTT variation.
    pub fn rttvar(&self) -> Duration {
        match &self.ns2 {
            None => self.rttvar,
            Some(n) => Duration(n.tick * n.rttvar4.unsigned_abs() / 4),
        }
    }

    /// Most recent sample.
    pub fn latest(&self) -> Option<Duration> {
        self.latest
    }

    /// Mean of all samples, for reports.
    pub fn mean(&self) -> Option<Duration> {
        (self.samples > 0).then(|| Duration((self.sum_ns / u128::from(self.samples)) as u64))
    }

    /// Consecutive backoffs since the last sample.
    pub fn backoff(&self) -> u32 {
        self.backoff
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn est() -> RttEstimator {
        RttEstimator::new(
            Duration::from_secs(1),
            Duration::from_millis(200),
            Duration::from_secs(60),
            Duration::from_millis(1),
        )
    }

    #[test]
    fn first_sample_sets_srtt_and_half_variance() {
        let mut e = est();
        assert_eq!(e.rto(), Duration::from_secs(1));
        e.on_sample(Instant(10_000_000_000), Duration::from_millis(500));
        assert_eq!(e.srtt(), Some(Duration::from_millis(500)));
        assert_eq!(e.rttvar(), Duration::from_millis(250));
        // RTO = 500 + 4·250 = 1500 ms.
        assert_eq!(e.rto(), Duration::from_millis(1500));
    }

    #[test]
    fn later_samples_use_alpha_and_beta() {
        let mut e = est();
        e.on_sample(Instant(10_000_000_000), Duration::from_millis(500));
        e.on_sample(Instant(10_000_000_000), Duration::from_millis(600));
        // RTTVAR = 3/4·250 + 1/4·100 = 212.5; SRTT = 7/8·500 + 1/8·600 = 512.5.
        assert_eq!(e.rttvar(), Duration::from_micros(212_500));
        assert_eq!(e.srtt(), Some(Duration::from_micros(512_500)));
        assert_eq!(e.rto(), Duration::from_micros(512_500 + 850_000));
    }

    #[test]
    fn constant_rtt_converges_to_min_rto_floor_and_backoff_doubles() {
        let mut e = est();
        for _ in 0..200 {
            e.on_sample(Instant(10_000_000_000), Duration::from_millis(50));
        }
        // RTTVAR decays towards zero; G = 1 ms keeps RTO ≥ SRTT + 1 ms, and the floor is 200 ms.
        assert_eq!(e.rto(), Duration::from_millis(200));
        e.on_backoff();
        assert_eq!(e.rto(), Duration::from_millis(400));
        for _ in 0..20 {
            e.on_backoff();
        }
        assert_eq!(e.rto(), Duration::from_secs(60));
        e.on_sample(Instant(10_000_000_000), Duration::from_millis(50));
        assert_eq!(e.backoff(), 0);
    }

    /// ns-2's estimator with a 10 ms tick, starting `phase_ms` into a tick, and its defaults
    /// (`rtxcur_init_` 3 s, `minrto_` 200 ms, `maxrto_` 60 s).
    fn ns2(phase_ms: u64) -> RttEstimator {
        RttEstimator::ns2(
            Duration::from_secs(3),
            Duration::from_millis(200),
            Duration::from_secs(60),
            Duration::from_millis(10),
            Duration::from_millis(phase_ms),
        )
    }

    /// A segment sent at 1.000 s and acknowledged 564.9 ms later.
    const SENT: Instant = Instant(1_000_000_000);
    const R: Duration = Duration::from_micros(564_900);

    #[test]
    fn ns2_counts_the_tick_boundaries_a_sample_crosses() {
        // Phase 0: ticks 100 → 156, 56 ticks; srtt8 = 448, rttvar4 = 112, RTO = (8·112 + 448)
        // >> 3 = 168 ticks.
        let mut e = ns2(0);
        assert_eq!(e.rto(), Duration::from_secs(3));
        e.on_sample(SENT + R, R);
        assert_eq!(e.srtt(), Some(Duration::from_millis(560)));
        assert_eq!(e.rttvar(), Duration::from_millis(280));
        assert_eq!(e.rto(), Duration::from_millis(1680));
        // Phase 5 ms: 1.005 → 1.5699 s, still 56 boundaries.
        let mut e = ns2(5);
        e.on_sample(SENT + R, R);
        assert_eq!(e.rto(), Duration::from_millis(1680));
        // Phase 6 ms: 1.006 → 1.5709 s crosses 57: srtt8 = 456, rttvar4 = 114, RTO 171 ticks.
        let mut e = ns2(6);
        e.on_sample(SENT + R, R);
        assert_eq!(e.srtt(), Some(Duration::from_millis(570)));
        assert_eq!(e.rto(), Duration::from_millis(1710));
        // A sample within one tick counts as one: srtt8 = 8, rttvar4 = 2, RTO 3 ticks, below
        // the 200 ms minimum.
        let mut e = ns2(0);
        e.on_sample(SENT, Duration::ZERO);
        assert_eq!(e.srtt(), Some(Duration::from_millis(10)));
        assert_eq!(e.rttvar(), Duration::from_millis(5));
        assert_eq!(e.rto(), Duration::from_millis(200));
    }

    #[test]
    fn ns2_smooths_with_truncating_shifts() {
        let mut e = ns2(0);
        // 56 ticks: srtt8 448, rttvar4 112. Then 57 ticks (1.000 → 1.575 s): delta = 57 − 448
        // >> 3 = 1, srtt8 = 449; rttvar4 = 112 + 1 − 112 >> 2 = 85; RTO = (8·85 + 449) >> 3 =
        // 1129 >> 3 = 141 ticks (RFC 6298: 1411.25 ms).
        e.on_sample(SENT + R, R);
        let r = Duration::from_millis(575);
        e.on_sample(SENT + r, r);
        assert_eq!(e.srtt(), Some(Duration::from_micros(561_250)));
        assert_eq!(e.rttvar(), Duration::from_micros(212_500));
        assert_eq!(e.rto(), Duration::from_millis(1410));
        // 54 ticks: delta = 54 − 56 = −2, srtt8 = 447; rttvar4 = 85 + 2 − 21 = 66;
        // RTO = (528 + 447) >> 3 = 121 ticks.
        e.on_sample(
            SENT + Duration::from_millis(549),
            Duration::from_millis(549),
        );
        assert_eq!(e.srtt(), Some(Duration::from_micros(558_750)));
        assert_eq!(e.rttvar(), Duration::from_millis(165));
        assert_eq!(e.rto(), Duration::from_millis(1210));
    }

    #[test]
    fn ns2_rttvar_stops_at_three_quarters_of_a_tick() {
        // Constant 56-tick samples: rttvar4 112 → 84 → 63 → 48 → 36 → 27 → 21 → 16 → 12 → 9
        // → 7 → 6 → 5 → 4 → 3, where 3 − 3 >> 2 = 3 stays. RTO = (24 + 448) >> 3 = 59 ticks,
        // 590 ms, where RFC 6298 with G = 10 ms converges to 570 ms.
        let mut e = ns2(0);
        for _ in 0..14 {
            e.on_sample(SENT + R, R);
        }
        assert_eq!(e.rttvar(), Duration::from_micros(10_000));
        assert_eq!(e.rto(), Duration::from_millis(600));
        for _ in 0..20 {
            e.on_sample(SENT + R, R);
        }
        assert_eq!(e.rttvar(), Duration::from_micros(7_500));
        assert_eq!(e.srtt(), Some(Duration::from_millis(560)));
        assert_eq!(e.rto(), Duration::from_millis(590));
    }

    #[test]
    fn ns2_applies_the_minimum_before_the_backoff() {
        // 1-tick samples: RTO 3 ticks = 30 ms, raised to 200 ms, then doubled: 400, 800 ms
        // (doubling 30 ms first would leave 200 ms, then 200 ms).
        let mut e = ns2(0);
        e.on_sample(SENT, Duration::from_millis(1));
        e.on_backoff();
        assert_eq!(e.rto(), Duration::from_millis(400));
        e.on_backoff();
        assert_eq!(e.rto(), Duration::from_millis(800));
        for _ in 0..40 {
            e.on_backoff();
        }
        assert_eq!(e.rto(), Duration::from_secs(60));
    }

    #[test]
    fn ns2_floors_the_rto_at_two_ticks_after_the_maximum() {
        let e = RttEstimator::ns2(
            Duration::from_secs(3),
            Duration::ZERO,
            Duration::from_millis(15),
            Duration::from_millis(10),
            Duration::ZERO,
        );
        assert_eq!(e.rto(), Duration::from_millis(20));
    }

    #[test]
    fn ns2_forgets_srtt_when_the_backoff_passes_eight() {
        let mut e = ns2(0);
        e.on_sample(SENT + R, R); // RTO 1.68 s
        for _ in 0..3 {
            e.on_backoff();
        }
        // Multiplier 8: SRTT kept.
        assert_eq!(e.srtt(), Some(Duration::from_millis(560)));
        assert_eq!(e.rto(), Duration::from_millis(13_440));
        let mut kept = e.clone();
        e.on_backoff();
        // Multiplier 16: SRTT forgotten into RTTVAR (t_rttvar_ += t_srtt_ >> 3: 112 + 56 = 168
        // quarter ticks, what ns-2's `rttvar_` trace shows), the RTO itself unchanged until the
        // next sample.
        assert_eq!(e.srtt(), None);
        assert_eq!(e.rttvar(), Duration::from_millis(420));
        assert_eq!(e.rto(), Duration::from_millis(26_880));
        // A 30-tick sample then starts afresh: srtt8 240, rttvar4 60, RTO (480 + 240) >> 3 =
        // 90 ticks. After only three backoffs it is smoothed in: delta = −26, srtt8 = 422,
        // rttvar4 = 112 + 26 − 28 = 110, RTO (880 + 422) >> 3 = 162 ticks.
        let r = Duration::from_millis(300);
        e.on_sample(SENT + r, r);
        assert_eq!(e.rto(), Duration::from_millis(900));
        assert_eq!(e.backoff(), 0);
        kept.on_sample(SENT + r, r);
        assert_eq!(kept.rto(), Duration::from_millis(1620));
    }

    #[test]
    fn ns2_keeps_the_backoff_after_a_syn_timeout() {
        let mut rfc = est();
        rfc.on_backoff();
        rfc.on_syn_timeout_established();
        assert_eq!(rfc.rto(), Duration::from_secs(3));
        let mut e = ns2(0);
        e.on_backoff();
        e.on_syn_timeout_established();
        assert_eq!(e.rto(), Duration::from_secs(6));
    }

    #[test]
    fn the_config_picks_the_estimator_and_the_phase_comes_from_the_iss() {
        use crate::tcp::config::Profile;
        let ns2 = TcpConfig::for_profile(Profile::Ns2);
        // iss / 2³² of a 10 ms tick: 0x8000_0000 → 5 ms (56 ticks), 0x9999_9999 → 5.999 999 9
        // ms (1.000 → 1.5649 s plus that crosses 57 boundaries).
        let mut e = RttEstimator::for_config(&ns2, 0x8000_0000);
        e.on_sample(SENT + R, R);
        assert_eq!(e.rto(), Duration::from_millis(1680));
        let mut e = RttEstimator::for_config(&ns2, 0x9999_9999);
        e.on_sample(SENT + R, R);
        assert_eq!(e.rto(), Duration::from_millis(1710));
        // The rfc profile: RFC 6298 at full resolution, 3 × 564.9 ms.
        let mut e = RttEstimator::for_config(&TcpConfig::default(), 0x9999_9999);
        e.on_sample(SENT + R, R);
        assert_eq!(e.rto(), Duration::from_micros(1_694_700));
        assert_eq!(e.srtt(), Some(R));
    }

    /// Linux's estimator: the first 600 ms sample gives RTO = 600 + 2·600 ms (as RFC 6298);
    /// steady samples then shrink the mean deviation, but the RTO's variance term holds for
    /// the rest of that round trip and the next, then falls a quarter of the way to the
    /// 200 ms floor per round trip: 1800, 1800, 1550, 1362.5 ms. RFC 6298's would be down to
    /// SRTT + G = 800 ms after the same eleven samples.
    #[test]
    fn linux_keeps_the_variance_term_for_round_trips_not_samples() {
        use crate::tcp::config::Profile;
        let linux = TcpConfig::for_profile(Profile::Linux);
        let mut e = RttEstimator::for_config(&linux, 0);
        let r = Duration::from_millis(600);
        e.on_sample_in_round(SENT + r, r, 1, 1000);
        assert_eq!(e.rto(), Duration::from_millis(1800));
        for _ in 0..10 {
            e.on_sample_in_round(SENT + r, r, 500, 1000);
        }
        assert_eq!(e.rto(), Duration::from_millis(1800));
        assert!(e.rttvar() < Duration::from_millis(20), "{:?}", e.rttvar());
        let mut rfc = RttEstimator::new(
            Duration::from_secs(1),
            linux.min_rto,
            linux.max_rto,
            linux.min_rto,
        );
        for _ in 0..11 {
            rfc.on_sample(SENT + r, r);
        }
        assert_eq!(rfc.rto(), Duration::from_millis(800));
        e.on_sample_in_round(SENT + r, r, 1001, 2000);
        assert_eq!(e.rto(), Duration::from_millis(1800));
        e.on_sample_in_round(SENT + r, r, 2001, 3000);
        assert_eq!(e.rto(), Duration::from_millis(1550));
        e.on_sample_in_round(SENT + r, r, 3001, 4000);
        assert_eq!(e.rto(), Duration::from_micros(1_362_500));
        // A jump to 900 ms: SRTT moves an eighth, the deviation a quarter of 4 · 300 ms.
        e.on_sample_in_round(SENT + r, Duration::from_millis(900), 3500, 4000);
        assert_eq!(e.srtt(), Some(Duration::from_micros(637_500)));
        assert!(
            e.rto() >= Duration::from_micros(637_500 + 762_500),
            "{:?}",
            e.rto()
        );
    }
}
