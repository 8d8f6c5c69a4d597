//! CUBIC as Linux computes it (`net/ipv4/tcp_cubic.c`: `bictcp_update`, `cubictcp_cong_avoid`,
//! `cubictcp_recalc_ssthresh`, `cubictcp_state`, `cubictcp_acked`; `tcp_cong_avoid_ai` and
//! `tcp_slow_start` in `tcp_cong.c`), for `cubic_variant = "linux"`. Same curve as RFC 9438
//! ([`super::Cubic`]), different arithmetic and rules, each of which changes small windows:
//! - cwnd is a whole number of segments; the controller sets a count `cnt` (grow by one segment
//!   per `cnt` segments acknowledged), `cnt = cwnd / (target − cwnd)` truncated and at least 2;
//! - time is in jiffies (`HZ`), the curve in 1/1024 s, C = 410/1024, β = 717/1024; the target is
//!   W(t + delay_min), delay_min the least RTT sample (the RFC: t + SRTT);
//! - the Reno-friendly window gains a segment per cwnd·15/8 acknowledged (α ≈ 0.53) for ever
//!   (the RFC raises α to 1 above W_max) and only lowers `cnt` (the RFC sets cwnd to it);
//! - `cnt` is recomputed at most once a jiffy, and not for `HZ/32` while cwnd is unchanged;
//! - a timeout (`TCP_CA_Loss`) forgets W_max, the epoch and delay_min: the next epoch starts at
//!   its own cwnd (K = 0) and grows at least 5 % a round trip (`cnt` ≤ 20) while W_max is 0;
//! - slow start stops at ssthresh and gives the rest of the ACK to congestion avoidance.
//!
//! The cube root of K is exact here; Linux's table and Newton step err by 0.2 % on average.

use super::hystart::LinuxHystart;
use super::{CongestionControl, Round, Window};
use crate::time::{Duration, Instant};

/// Timer ticks per second: `CONFIG_HZ` of the kernel measured in docs/validation.md (250,
/// Debian's default; 1000 on some distributions).
pub const HZ: u64 = 250;
/// `BICTCP_HZ`: the curve's time unit is 2^-10 s.
const BICTCP_HZ: u32 = 10;
/// `beta` / `BICTCP_BETA_SCALE`.
const BETA: u64 = 717;
const BETA_SCALE: u64 = 1024;
/// `cube_rtt_scale` = `bic_scale` · 10 = 410 (C = 410/1024 ≈ 0.4).
const CUBE_RTT_SCALE: u64 = 41 * 10;
/// `beta_scale` = 8·(1024 + 717) / 3 / (1024 − 717) = 15 in integers: the Reno-friendly window
/// gains one segment per cwnd·15/8 acknowledged.
const FRIENDLY_SCALE: u64 = 8 * (BETA_SCALE + BETA) / 3 / (BETA_SCALE - BETA);
/// `cube_factor` = 2^(10 + 3·BICTCP_HZ) / cube_rtt_scale: K = ∛(cube_factor · (W_max − cwnd)).
const CUBE_FACTOR: u64 = (1 << (10 + 3 * BICTCP_HZ)) / CUBE_RTT_SCALE;

/// Jiffies at `now` (`tcp_jiffies32`, wrapping as it does).
fn jiffies(now: Instant) -> u32 {
    (now.as_nanos() / (1_000_000_000 / HZ)) as u32
}

/// `usecs_to_jiffies`: rounded up.
fn usecs_to_jiffies(us: u64) -> u64 {
    (us * HZ).div_ceil(1_000_000)
}

/// ⌊∛a⌋, exactly.
fn cube_root(a: u64) -> u64 {
    // `f64::cbrt`'s precision is platform-dependent: correct the estimate both ways.
    floor_cube_root_from(a, (a as f64).cbrt() as u64)
}

/// ⌊∛a⌋ from an estimate `x` that may be off either way.
fn floor_cube_root_from(a: u64, mut x: u64) -> u64 {
    // 0³ ≤ a, so this loop ends before x could wrap.
    while x.checked_pow(3).is_none_or(|c| c > a) {
        x -= 1;
    }
    while (x + 1).checked_pow(3).is_some_and(|c| c <= a) {
        x += 1;
    }
    x
}

/// `struct bictcp` plus the socket's `snd_cwnd_cnt`, in segments and jiffies.
#[derive(Clone, Debug, Default)]
pub struct LinuxCubic {
    /// `cnt`: segments acknowledged per segment of growth.
    cnt: u32,
    /// `last_max_cwnd`: W_max (0 after a timeout).
    last_max_cwnd: u32,
    /// `last_cwnd`, `last_time`: cwnd and jiffies when `cnt` was last computed.
    last_cwnd: u32,
    last_time: u32,
    /// `bic_origin_point`: the window the curve levels at.
    origin_point: u32,
    /// `bic_K` in 2^-10 s.
    k: u64,
    /// `delay_min` in µs (`None`: Linux's 0, no sample).
    delay_min_us: Option<u64>,
    /// `epoch_start` in jiffies (`None`: Linux's 0).
    epoch_start: Option<u32>,
    /// `ack_cnt`: segments acknowledged in the epoch, less those the Reno-friendly window used.
    ack_cnt: u32,
    /// `tcp_cwnd`: the Reno-friendly window.
    tcp_cwnd: u32,
    /// `tp->snd_cwnd_cnt`: segments acknowledged towards the next increment.
    snd_cwnd_cnt: u32,
    /// Bytes acknowledged short of a whole segment.
    acked_rem: u64,
    /// Linux's HyStart, when configured.
    hystart: Option<LinuxHystart>,
}

impl LinuxCubic {
    /// Linux's CUBIC, with HyStart if `hystart`.
    pub fn new(hystart: bool) -> Self {
        Self {
            hystart: hystart.then(LinuxHystart::default),
            ..Self::default()
        }
    }

    /// HyStart's detections so far: (ACK train, delay).
    pub fn hystart_detections(&self) -> (u32, u32) {
        self.hystart
            .as_ref()
            .map_or((0, 0), |h| (h.train_detect, h.delay_detect))
    }

    /// `bictcp_update`: recompute `cnt` for window `cwnd` after `acked` segments at jiffy `now`.
    fn update(&mut self, now: u32, cwnd: u32, acked: u32) {
        self.ack_cnt = self.ack_cnt.wrapping_add(acked);
        if self.last_cwnd == cwnd && (now.wrapping_sub(self.last_time) as i32) <= (HZ / 32) as i32 {
            return;
        }
        // At most once per jiffy, unless a reduction ended the epoch.
        if self.epoch_start.is_none() || now != self.last_time {
            self.cubic_cnt(now, cwnd, acked);
        }
        self.friendly_cnt(cwnd);
        // At most one segment per two acknowledged: cwnd × 1.5 a round trip.
        self.cnt = self.cnt.max(2);
    }

    /// The cubic part of `bictcp_update`.
    fn cubic_cnt(&mut self, now: u32, cwnd: u32, acked: u32) {
        self.last_cwnd = cwnd;
        self.last_time = now;
        let epoch = match self.epoch_start {
            Some(e) => e,
            None => {
                self.epoch_start = Some(now);
                self.ack_cnt = acked;
                self.tcp_cwnd = cwnd;
                if self.last_max_cwnd <= cwnd {
                    self.k = 0;
                    self.origin_point = cwnd;
                } else {
                    self.k = cube_root(CUBE_FACTOR * u64::from(self.last_max_cwnd - cwnd));
                    self.origin_point = self.last_max_cwnd;
                }
                now
            }
        };
        // t + delay_min, in 2^-10 s.
        let ticks =
            u64::from(now.wrapping_sub(epoch)) + usecs_to_jiffies(self.delay_min_us.unwrap_or(0));
        let t = (ticks << BICTCP_HZ) / HZ;
        let offs = t.abs_diff(self.k);
        // C·(t − K)³; Linux's u64 arithmetic wraps past 2^64 (|t − K| > ~330 s), so does this.
        let delta = (CUBE_RTT_SCALE
            .wrapping_mul(offs)
            .wrapping_mul(offs)
            .wrapping_mul(offs)
            >> (10 + 3 * BICTCP_HZ)) as u32;
        let target = if t < self.k {
            self.origin_point.wrapping_sub(delta)
        } else {
            self.origin_point.wrapping_add(delta)
        };
        self.cnt = if target > cwnd {
            cwnd / (target - cwnd)
        } else {
            cwnd.saturating_mul(100)
        };
        // "The initial growth of cubic function may be too conservative": 5 % a round trip.
        if self.last_max_cwnd == 0 {
            self.cnt = self.cnt.min(20);
        }
    }

    /// The `tcp_friendliness` part of `bictcp_update`.
    fn friendly_cnt(&mut self, cwnd: u32) {
        let per_segment = ((u64::from(cwnd) * FRIENDLY_SCALE) >> 3).max(1) as u32;
        // Linux's `while (ack_cnt > delta) { ack_cnt -= delta; tcp_cwnd++; }` in one step.
        let gained = self.ack_cnt.saturating_sub(1) / per_segment;
        self.tcp_cwnd += gained;
        self.ack_cnt -= gained * per_segment;
        if self.tcp_cwnd > cwnd {
            self.cnt = self.cnt.min(cwnd / (self.tcp_cwnd - cwnd));
        }
    }

    /// `tcp_cong_avoid_ai(tp, cnt, acked)`: the new cwnd in segments.
    fn cong_avoid_ai(&mut self, cwnd: u32, acked: u32) -> u32 {
        let w = self.cnt.max(1);
        let mut cwnd = cwnd;
        // Credits earned at a larger cnt are spent gently.
        if self.snd_cwnd_cnt >= w {
            self.snd_cwnd_cnt = 0;
            cwnd += 1;
        }
        self.snd_cwnd_cnt += acked;
        if self.snd_cwnd_cnt >= w {
            let delta = self.snd_cwnd_cnt / w;
            self.snd_cwnd_cnt -= delta * w;
            cwnd += delta;
        }
        cwnd
    }

    /// `cubictcp_recalc_ssthresh`: ends the epoch, sets W_max (fast convergence) and ssthresh.
    fn recalc_ssthresh(&mut self, w: &mut Window) {
        let cwnd = (w.cwnd / w.mss) as u32;
        self.epoch_start = None;
        self.last_max_cwnd = if cwnd < self.last_max_cwnd {
            ((u64::from(cwnd) * (BETA_SCALE + BETA)) / (2 * BETA_SCALE)) as u32
        } else {
            cwnd
        };
        // `tcp_init_cwnd_reduction` / `tcp_enter_loss` clear the growth credit.
        self.snd_cwnd_cnt = 0;
        w.ssthresh = (u64::from(cwnd) * BETA / BETA_SCALE).max(2) * w.mss;
    }
}

impl CongestionControl for LinuxCubic {
    fn on_ack(&mut self, now: Instant, acked: u64, w: &mut Window, _srtt: Option<Duration>) {
        let mut acked = acked;
        if w.in_slow_start() {
            // `tcp_slow_start`: up to ssthresh; the rest goes on to congestion avoidance.
            let grown = (w.cwnd + acked).min(w.ssthresh);
            acked -= grown - w.cwnd;
            w.cwnd = grown;
            if acked == 0 {
                return;
            }
        }
        let total = self.acked_rem + acked;
        self.acked_rem = total % w.mss;
        let segs = (total / w.mss) as u32;
        if segs == 0 {
            return;
        }
        let cwnd = (w.cwnd / w.mss) as u32;
        self.update(jiffies(now), cwnd, segs);
        let grown = self.cong_avoid_ai(cwnd, segs);
        w.cwnd += u64::from(grown - cwnd) * w.mss;
    }

    fn on_congestion(&mut self, _now: Instant, _flight: u64, w: &mut Window) {
        self.recalc_ssthresh(w);
        w.cwnd = w.ssthresh;
    }

    fn on_rto(&mut self, _now: Instant, _flight: u64, w: &mut Window) {
        self.recalc_ssthresh(w);
    }

    fn on_rtt_sample(&mut self, now: Instant, rtt: Duration, round: Round, w: &mut Window) {
        // `cubictcp_acked`: "Discard delay samples right after fast recovery" (1 s).
        if self
            .epoch_start
            .is_some_and(|e| u64::from(jiffies(now).wrapping_sub(e)) < HZ)
        {
            return;
        }
        let us = (rtt.as_nanos() / 1_000).max(1);
        self.delay_min_us = Some(self.delay_min_us.map_or(us, |d| d.min(us)));
        if let Some(h) = self.hystart.as_mut() {
            h.on_rtt_sample(now, rtt, round.snd_una, round.snd_nxt, round.srtt, w);
        }
    }

    fn on_rto_round(&mut self, now: Instant, snd_nxt: u64) {
        // `cubictcp_state(TCP_CA_Loss)`: `bictcp_reset` (every field but HyStart's round), then
        // `bictcp_hystart_reset`. The growth credit was cleared by `tcp_enter_loss`.
        *self = Self {
            hystart: self.hystart.take(),
            ..Self::default()
        };
        if let Some(h) = self.hystart.as_mut() {
            h.on_rto(now, snd_nxt);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u64 = 1000;

    fn window(cwnd: u64, ssthresh: u64) -> Window {
        Window {
            cwnd: cwnd * MSS,
            ssthresh: ssthresh * MSS,
            mss: MSS,
            abc_limit: u64::MAX,
            ss_to_ssthresh: false,
        }
    }

    /// The instant of jiffy `j`.
    fn at(j: u64) -> Instant {
        Instant(j * 1_000_000_000 / HZ)
    }

    fn round() -> Round {
        Round {
            snd_una: 0,
            snd_nxt: 0,
            srtt: None,
        }
    }

    #[test]
    fn cube_root_is_exact_floor() {
        for a in [0, 1, 7, 8, 26, 27, 80_452_070_310, u64::MAX] {
            let x = cube_root(a);
            assert!(x.pow(3) <= a, "{a}");
            assert!((x + 1).checked_pow(3).is_none_or(|c| c > a), "{a}");
        }
        assert_eq!(cube_root(27), 3);
        assert_eq!(cube_root(26), 2);
        assert_eq!(cube_root(u64::MAX), 2_642_245);
        // Large cubes and their neighbours. Here (glibc's cbrt) the f64 estimate is one too
        // high for every c − 1 whose f64 rounds up to c, and never too low.
        let mut over = 0;
        for x in (2_600_000..=2_642_245).rev().step_by(7) {
            let c: u64 = x * x * x;
            for a in [c - 1, c, c + 1] {
                let est = (a as f64).cbrt() as u64;
                // Checked: (2 642 245 + 1)³ is past u64::MAX.
                over += u32::from(est.checked_pow(3).is_none_or(|e| e > a));
                let want = if a < c { x - 1 } else { x };
                assert_eq!(cube_root(a), want, "∛{a}");
            }
        }
        assert!(over > 0, "the estimate was never too high");
        // Estimates off either way, by more than one, are corrected.
        for (a, est) in [
            (26, 5),
            (27, 0),
            (27, 2),
            (28, 9),
            (u64::MAX, 2_642_240),
            (u64::MAX, 2_700_000),
        ] {
            assert_eq!(
                floor_cube_root_from(a, est),
                cube_root(a),
                "∛{a} from {est}"
            );
        }
        assert_eq!(floor_cube_root_from(64, 1), 4);
        assert_eq!(floor_cube_root_from(63, 7), 3);
    }

    #[test]
    fn reduction_is_717_of_1024_with_fast_convergence() {
        let mut c = LinuxCubic::default();
        let mut w = window(100, u64::MAX / MSS);
        c.on_congestion(at(0), 0, &mut w);
        // 100·717/1024 = 70.02.
        assert_eq!(
            (w.cwnd / MSS, w.ssthresh / MSS, c.last_max_cwnd),
            (70, 70, 100)
        );
        // A loss below W_max: W_max = 90·1741/2048 = 76.5, ssthresh 90·717/1024 = 63.0.
        w.cwnd = 90 * MSS;
        c.on_congestion(at(10), 0, &mut w);
        assert_eq!((w.ssthresh / MSS, c.last_max_cwnd), (63, 76));
        // A loss at exactly W_max is no sign of a new flow (`snd_cwnd < last_max_cwnd`).
        w.cwnd = 76 * MSS;
        c.on_congestion(at(15), 0, &mut w);
        assert_eq!(c.last_max_cwnd, 76);
        // Never below two segments.
        w.cwnd = 2 * MSS;
        c.on_rto(at(20), 0, &mut w);
        assert_eq!(w.ssthresh, 2 * MSS);
    }

    /// After a loss at 100 segments the epoch starts at 70: K = ∛(⌊2^40/410⌋·30) = 4316 in
    /// 2^-10 s (4.215 s; C = 410/1024 rather than 0.4 moves it from 4318). With a 100 ms minimum
    /// RTT (25 jiffies) the target at the epoch's first ACK is W(102/1024 s) = 100 − ⌊27.9⌋ =
    /// 73, so cnt = ⌊70/3⌋ = 23 (RFC 9438: 70/3.1 per segment); 100 jiffies in it is W(125
    /// jiffies = 512/1024 s) = 100 − ⌊410·3804³/2^40⌋ = 80, so cnt = ⌊70/10⌋ = 7; SRTT plays no
    /// part. At t + delay_min ≥ K the target is W_max and cnt = ⌊70/30⌋ = 2, one segment per
    /// two acknowledged.
    #[test]
    fn cnt_follows_the_integer_curve_at_t_plus_the_minimum_rtt() {
        for srtt in [None, Some(Duration::from_secs(10))] {
            let mut c = LinuxCubic::default();
            let mut w = window(100, u64::MAX / MSS);
            c.on_rtt_sample(at(0), Duration::from_millis(100), round(), &mut w);
            c.on_congestion(at(0), 0, &mut w);
            c.on_ack(at(0), MSS, &mut w, srtt);
            assert_eq!((c.k, c.origin_point, c.cnt), (4316, 100, 23));
            c.on_ack(at(100), MSS, &mut w, srtt);
            assert_eq!(c.cnt, 7, "srtt {srtt:?}");
            assert_eq!(w.cwnd, 70 * MSS);
            c.on_ack(at(1030), MSS, &mut w, srtt);
            assert_eq!(c.cnt, 2);
            // The third segment acknowledged makes the count reach cnt: one segment more.
            assert_eq!(w.cwnd, 71 * MSS);
        }
        // Without an RTT sample the targets are W(0) = 100 − ⌊29.9⌋ = 71 (cnt 70), then
        // W(100 jiffies = 409/1024 s) = 100 − 22 (cnt 8).
        let mut c = LinuxCubic::default();
        let mut w = window(100, u64::MAX / MSS);
        c.on_congestion(at(0), 0, &mut w);
        c.on_ack(at(0), MSS, &mut w, None);
        assert_eq!(c.cnt, 70);
        c.on_ack(at(100), MSS, &mut w, None);
        assert_eq!(c.cnt, 8);
    }

    /// Above W_max the Reno-friendly window still gains one segment per cwnd·15/8 acknowledged
    /// (RFC 9438 would use α = 1, one per cwnd): at cwnd 10, the 19th segment acknowledged
    /// (more than 18) makes it 11, and cnt becomes 10/(11 − 10) = 10.
    #[test]
    fn the_reno_friendly_window_keeps_alpha_below_one_above_w_max() {
        let mut c = LinuxCubic {
            last_max_cwnd: 10,
            ..LinuxCubic::default()
        };
        c.update(0, 10, 1);
        assert_eq!((c.k, c.origin_point, c.tcp_cwnd, c.cnt), (0, 10, 10, 1000));
        c.update(8, 10, 17);
        assert_eq!((c.tcp_cwnd, c.cnt), (10, 1000));
        c.update(16, 10, 1);
        assert_eq!((c.tcp_cwnd, c.ack_cnt, c.cnt), (11, 1, 10));
        // Two segments ahead: cnt = 10/(12 − 10) = 5.
        c.update(24, 10, 18);
        assert_eq!((c.tcp_cwnd, c.ack_cnt, c.cnt), (12, 1, 5));
    }

    /// While cwnd is unchanged `cnt` is kept for HZ/32 = 7 jiffies; a later ACK recomputes it.
    #[test]
    fn cnt_is_recomputed_only_after_hz_over_32_at_the_same_window() {
        let mut c = LinuxCubic {
            last_max_cwnd: 100,
            ..LinuxCubic::default()
        };
        c.update(0, 70, 1);
        assert_eq!(c.cnt, 70);
        c.update(1000, 70, 1);
        assert_eq!(c.cnt, 2);
        c.cnt = 99;
        c.update(1007, 70, 1);
        assert_eq!(c.cnt, 99, "kept within 7 jiffies");
        c.update(1008, 70, 1);
        assert_eq!(c.cnt, 2);
        // A new window is recomputed at once, but not twice in one jiffy.
        c.cnt = 99;
        c.update(1008, 71, 1);
        assert_eq!(c.cnt, 99);
        c.update(1009, 71, 1);
        assert_eq!(c.cnt, 2);
    }

    /// A timeout forgets W_max, the epoch and the minimum RTT: the next epoch starts at its own
    /// window (K = 0) and, W_max being 0, grows by at least one segment per 20 acknowledged.
    #[test]
    fn a_timeout_forgets_w_max_and_the_next_epoch_starts_at_its_own_window() {
        let mut c = LinuxCubic::default();
        let mut w = window(100, u64::MAX / MSS);
        c.on_rtt_sample(at(0), Duration::from_millis(100), round(), &mut w);
        c.on_congestion(at(0), 0, &mut w);
        c.on_ack(at(0), MSS, &mut w, None);
        assert_eq!(c.cnt, 23);
        w.cwnd = 100 * MSS;
        c.on_rto(at(500), 0, &mut w);
        assert_eq!(w.ssthresh, 70 * MSS);
        c.on_rto_round(at(500), 0);
        assert_eq!(
            (c.last_max_cwnd, c.delay_min_us, c.epoch_start),
            (0, None, None)
        );
        w.cwnd = 70 * MSS;
        c.on_ack(at(600), MSS, &mut w, None);
        assert_eq!((c.k, c.origin_point, c.cnt), (0, 70, 20));
    }

    /// `tcp_slow_start` stops at ssthresh and the rest of the ACK counts in congestion avoidance.
    #[test]
    fn slow_start_stops_at_ssthresh_and_hands_on_the_rest() {
        let mut c = LinuxCubic::default();
        let mut w = window(9, 10);
        c.on_ack(at(0), 3 * MSS, &mut w, None);
        assert_eq!(w.cwnd, 10 * MSS);
        assert_eq!((c.snd_cwnd_cnt, c.cnt), (2, 20));
        // Bytes short of a segment wait for the next ACK.
        c.on_ack(at(1), MSS / 2, &mut w, None);
        assert_eq!(c.snd_cwnd_cnt, 2);
        c.on_ack(at(2), MSS / 2, &mut w, None);
        assert_eq!(c.snd_cwnd_cnt, 3);
    }

    /// `tcp_cong_avoid_ai`: a count earned at a larger cnt buys one segment, then counting
    /// restarts; several increments at once when an ACK covers several cnt.
    #[test]
    fn growth_credit_is_spent_one_segment_at_a_time() {
        let mut c = LinuxCubic {
            cnt: 2,
            snd_cwnd_cnt: 5,
            ..LinuxCubic::default()
        };
        assert_eq!(c.cong_avoid_ai(10, 1), 11);
        assert_eq!(c.snd_cwnd_cnt, 1);
        assert_eq!(c.cong_avoid_ai(11, 7), 15);
        assert_eq!(c.snd_cwnd_cnt, 0);
    }

    /// HyStart runs inside the Linux variant: a round whose least RTT sample is 30 ms above the
    /// minimum (more than clamp(100/8, 4, 16) ms) ends slow start by the delay test.
    #[test]
    fn hystart_delay_detection_ends_slow_start() {
        let mut c = LinuxCubic::new(true);
        let mut w = window(20, u64::MAX / MSS);
        let mut r = round();
        c.on_rtt_sample(at(0), Duration::from_millis(100), r, &mut w);
        r.snd_una = 1;
        r.snd_nxt = 1_000_000;
        for i in 0..9 {
            c.on_rtt_sample(at(100 + i), Duration::from_millis(130), r, &mut w);
        }
        assert_eq!(c.hystart_detections(), (0, 1));
        assert_eq!(w.ssthresh, w.cwnd);
        assert_eq!(LinuxCubic::new(false).hystart_detections(), (0, 0));
        // A timeout resets CUBIC but keeps HyStart, re-armed: the slow start after it ends by
        // the same test.
        c.on_rto_round(at(1_000), 2_000_000);
        let mut w = window(20, u64::MAX / MSS);
        r.snd_una = 2_000_001;
        r.snd_nxt = 3_000_000;
        c.on_rtt_sample(at(1_100), Duration::from_millis(100), r, &mut w);
        r.snd_una = 3_000_001;
        r.snd_nxt = 4_000_000;
        for i in 0..9 {
            c.on_rtt_sample(at(1_200 + i), Duration::from_millis(130), r, &mut w);
        }
        assert_eq!(c.hystart_detections(), (0, 2));
        assert_eq!(w.ssthresh, w.cwnd);
    }

    /// RTT samples within 1 s (250 jiffies) of an epoch's start are dropped, later ones count.
    #[test]
    fn rtt_samples_right_after_a_reduction_are_ignored() {
        let mut c = LinuxCubic::default();
        let mut w = window(100, u64::MAX / MSS);
        c.on_rtt_sample(at(0), Duration::from_millis(300), round(), &mut w);
        c.on_congestion(at(0), 0, &mut w);
        c.on_ack(at(10), MSS, &mut w, None);
        c.on_rtt_sample(at(259), Duration::from_millis(100), round(), &mut w);
        assert_eq!(c.delay_min_us, Some(300_000));
        c.on_rtt_sample(at(260), Duration::from_millis(200), round(), &mut w);
        assert_eq!(c.delay_min_us, Some(200_000));
    }

    /// The whole loop: one ACK per segment over a 100 ms path after a loss at 100 segments;
    /// the window is back at W_max near K (4.2 s) and grows past it only slowly.
    #[test]
    fn window_returns_to_w_max_after_k() {
        let mut c = LinuxCubic::default();
        let mut w = window(100, u64::MAX / MSS);
        c.on_rtt_sample(at(0), Duration::from_millis(100), round(), &mut w);
        c.on_congestion(at(0), 0, &mut w);
        let mut now = Instant::ZERO;
        let mut cwnd_at = |until: Instant, now: &mut Instant, w: &mut Window| {
            while *now < until {
                // A window's worth of ACKs spread over one 100 ms round trip (at least 1 ms
                // apart, so that a broken controller cannot stall the clock).
                let gap = Duration((100_000_000 / (w.cwnd / MSS).max(1)).max(1_000_000));
                *now += gap;
                c.on_ack(*now, MSS, w, None);
            }
            w.cwnd / MSS
        };
        let half = cwnd_at(Instant(2_000_000_000), &mut now, &mut w);
        let at_k = cwnd_at(Instant(4_215_000_000), &mut now, &mut w);
        let after = cwnd_at(Instant(5_000_000_000), &mut now, &mut w);
        // W(2 s + 0.1 s) = 100 − 0.4·2.1³ ≈ 96.3.
        assert!((94..=98).contains(&half), "cwnd at 2 s: {half}");
        assert!((99..=101).contains(&at_k), "cwnd at K: {at_k}");
        // W(5.1 s) = 100 + 0.4·0.89³ ≈ 100.3.
        assert!((100..=102).contains(&after), "cwnd at 5 s: {after}");
    }
}
