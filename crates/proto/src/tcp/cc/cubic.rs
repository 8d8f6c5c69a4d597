//! CUBIC (RFC 9438): window growth as a cubic function of the time since the last reduction,
//! with the Reno-friendly region (§4.3) and fast convergence (§4.7). Slow start is RFC 5681's
//! (RFC 9438 §4.10 leaves the exit from slow start open), optionally with Linux's HyStart
//! ([`LinuxHystart`], `hystart = "linux"`).

use super::hystart::LinuxHystart;
use super::{slow_start, CongestionControl, Round, Window};
use crate::time::{Duration, Instant};

/// C in segments/s³ (§5.1).
const C: f64 = 0.4;
/// β_cubic, the multiplicative decrease factor (§4.6).
const BETA: f64 = 0.7;

/// CUBIC state, in segments where the RFC uses segments.
#[derive(Clone, Debug, Default)]
pub struct Cubic {
    /// W_max: window before the last reduction (segments).
    w_max: f64,
    /// W_max before that, for fast convergence.
    w_last_max: f64,
    /// Start of the current congestion-avoidance epoch.
    epoch_start: Option<Instant>,
    /// K: time (s) the cubic function takes to reach W_max.
    k: f64,
    /// W_est: the Reno-friendly estimate (segments).
    w_est: f64,
    /// cwnd at the start of the epoch (segments).
    cwnd_epoch: f64,
    /// A timeout came since the last epoch began: the next one starts from its own window
    /// (§4.8: K = 0, W_max = cwnd at the start of congestion avoidance).
    after_timeout: bool,
    /// Linux's HyStart, when configured.
    hystart: Option<LinuxHystart>,
}

impl Cubic {
    /// CUBIC, with Linux's HyStart if `hystart`.
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

    /// W_cubic(t) in segments (eq. 1).
    fn w_cubic(&self, t: f64) -> f64 {
        C * (t - self.k).powi(3) + self.w_max
    }

    fn reduce(&mut self, w: &mut Window) {
        let cwnd = w.cwnd as f64 / w.mss as f64;
        // Fast convergence (§4.7).
        self.w_max = if cwnd < self.w_last_max {
            cwnd * (1.0 + BETA) / 2.0
        } else {
            cwnd
        };
        self.w_last_max = cwnd;
        self.epoch_start = None;
        w.ssthresh = ((w.cwnd as f64 * BETA) as u64).max(2 * w.mss);
    }
}

impl CongestionControl for Cubic {
    fn on_ack(&mut self, now: Instant, acked: u64, w: &mut Window, srtt: Option<Duration>) {
        if w.in_slow_start() {
            // RFC 9438 §4.10 leaves the rest of an ACK that ends slow start to the stack.
            slow_start(acked, w);
            return;
        }
        let mss = w.mss as f64;
        let cwnd = w.cwnd as f64 / mss;
        let epoch = *self.epoch_start.get_or_insert_with(|| {
            // §4.2: a new epoch starts at the first ACK in congestion avoidance.
            self.cwnd_epoch = cwnd;
            self.w_est = cwnd;
            let after_timeout = std::mem::take(&mut self.after_timeout);
            if after_timeout || self.w_max < cwnd {
                self.w_max = cwnd;
            }
            self.k = ((self.w_max - cwnd).max(0.0) / C).cbrt();
            now
        });
        let t = now.saturating_since(epoch).as_secs_f64();
        let rtt = srtt.map_or(0.0, Duration::as_secs_f64);
        let segs_acked = acked as f64 / mss;
        // Reno-friendly estimate (§4.3, eq. 4): α = 3(1−β)/(1+β) until W_max, then 1.
        let alpha = if self.w_est < self.w_max {
            3.0 * (1.0 - BETA) / (1.0 + BETA)
        } else {
            1.0
        };
        self.w_est += alpha * segs_acked / cwnd;
        let w_cubic_now = self.w_cubic(t);
        let new_cwnd = if w_cubic_now < self.w_est {
            self.w_est
        } else {
            // §4.4/§4.5: aim for W_cubic(t + RTT), clamped to [cwnd, 1.5·cwnd].
            let target = self.w_cubic(t + rtt).clamp(cwnd, 1.5 * cwnd);
            cwnd + (target - cwnd) / cwnd * segs_acked
        };
        w.cwnd = ((new_cwnd * mss) as u64).max(w.cwnd);
    }

    fn on_congestion(&mut self, _now: Instant, _flight: u64, w: &mut Window) {
        // A fast retransmit after the timeout (in its slow start) makes the next epoch an
        // ordinary one again: §4.8 is about the first congestion avoidance after a timeout.
        self.after_timeout = false;
        self.reduce(w);
        w.cwnd = w.ssthresh;
    }

    fn on_rto(&mut self, _now: Instant, _flight: u64, w: &mut Window) {
        self.reduce(w);
    }

    fn on_rtt_sample(&mut self, now: Instant, rtt: Duration, round: Round, w: &mut Window) {
        let Some(h) = self.hystart.as_mut() else {
            return;
        };
        // `cubictcp_acked`: "Discard delay samples right after fast recovery" (for 1 s after
        // the epoch began).
        if self
            .epoch_start
            .is_some_and(|e| now.saturating_since(e) < Duration::from_secs(1))
        {
            return;
        }
        h.on_rtt_sample(now, rtt, round.snd_una, round.snd_nxt, round.srtt, w);
    }

    fn on_rto_round(&mut self, now: Instant, snd_nxt: u64) {
        self.after_timeout = true;
        if let Some(h) = self.hystart.as_mut() {
            h.on_rto(now, snd_nxt);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A window of `segments` MSS-sized segments, in congestion avoidance's reach (no ssthresh).
    fn window(segments: u64, mss: u64) -> Window {
        Window {
            cwnd: segments * mss,
            ssthresh: u64::MAX,
            mss,
            abc_limit: mss,
            ss_to_ssthresh: false,
        }
    }

    #[test]
    fn reduction_is_beta_and_window_returns_to_w_max_after_k() {
        let mss = 1000;
        let mut w = window(100, mss);
        let mut c = Cubic::default();
        c.on_congestion(Instant::ZERO, w.cwnd, &mut w);
        assert_eq!(w.cwnd, 70 * mss);
        assert_eq!(w.ssthresh, 70 * mss);
        // K = cbrt(100·0.3/0.4) = cbrt(75) ≈ 4.217 s. Feed one ACK per segment every 10 ms
        // (RTT 100 ms, window-sized bursts are irrelevant for the cubic curve).
        let rtt = Duration::from_millis(100);
        let mut now = Instant::ZERO;
        while now < Instant(4_217_000_000) {
            now += Duration::from_millis(10);
            c.on_ack(now, mss, &mut w, Some(rtt));
        }
        let seg = w.cwnd as f64 / mss as f64;
        // At t ≈ K the window (aiming one RTT ahead) is close to W_max = 100.
        assert!((98.0..=101.5).contains(&seg), "cwnd at K = {seg}");
        // Fast convergence: a second loss below the previous W_max lowers W_max further.
        w.cwnd = 90 * mss;
        c.on_congestion(now, w.cwnd, &mut w);
        assert!((c.w_max - 90.0 * 1.7 / 2.0).abs() < 1e-9);
        // A loss at exactly the previous W_max is no sign of a new flow: no fast convergence.
        w.cwnd = 90 * mss;
        c.on_congestion(now, w.cwnd, &mut w);
        assert_eq!(c.w_max, 90.0);
    }

    /// Eq. 1 and §4.4/§4.5 to the byte: after a reduction from W_max = 100 segments, one ACK
    /// 2 s into the epoch (concave, t < K) and one 6 s in (convex, t > K) each add
    /// (W_cubic(t + RTT) − cwnd)/cwnd segments.
    #[test]
    fn cwnd_follows_the_cubic_curve_one_rtt_ahead() {
        let mss = 1000;
        let mut w = window(100, mss);
        let mut c = Cubic::default();
        c.on_congestion(Instant::ZERO, w.cwnd, &mut w);
        let rtt = Duration::from_millis(100);
        let k = 75.0f64.cbrt();
        // The epoch starts at the first ACK; move cwnd by hand so each step is one formula.
        c.on_ack(Instant(1_000_000_000), mss, &mut w, Some(rtt));
        assert!((c.k - k).abs() < 1e-12);
        // (t, cwnd, segments acknowledged by the ACK)
        for (t, cwnd, acked) in [(2.0, 70_000u64, 1), (6.0, 100_000, 2)] {
            w.cwnd = cwnd;
            c.on_ack(
                Instant(1_000_000_000 + (t * 1e9) as u64),
                acked * mss,
                &mut w,
                Some(rtt),
            );
            let seg = cwnd as f64 / 1000.0;
            let target = 0.4 * (t + 0.1 - k).powi(3) + 100.0;
            let want = ((seg + (target - seg) / seg * acked as f64) * 1000.0) as u64;
            assert_eq!(w.cwnd, want, "t = {t}: target {target}");
        }
        // Far past K the target is clamped to 1.5·cwnd: half a segment per segment acknowledged.
        w.cwnd = 100_000;
        c.on_ack(Instant(31_000_000_000), mss, &mut w, Some(rtt));
        assert_eq!(w.cwnd, 100_500);
    }

    /// §4.8: the first congestion avoidance after a timeout runs the curve with K = 0 and W_max =
    /// the window it starts at, so it grows at once (convex) instead of creeping up to the old
    /// W_max; a fast retransmit keeps W_max.
    #[test]
    fn after_a_timeout_the_epoch_starts_from_its_own_window() {
        let mss = 1000;
        for timeout in [false, true] {
            let mut w = window(100, mss);
            let mut c = Cubic::default();
            c.on_congestion(Instant::ZERO, w.cwnd, &mut w);
            if timeout {
                c.on_rto(Instant::ZERO, w.cwnd, &mut w);
                c.on_rto_round(Instant::ZERO, 0);
            }
            w.cwnd = 40 * mss;
            w.ssthresh = w.cwnd;
            c.on_ack(Instant(1), mss, &mut w, Some(Duration::from_millis(100)));
            if timeout {
                assert_eq!((c.w_max, c.k), (40.0, 0.0));
            } else {
                assert_eq!(c.w_max, 100.0);
                assert!((c.k - (60.0f64 / C).cbrt()).abs() < 1e-9);
            }
            // The next epoch (after a fast retransmit) is an ordinary one again.
            c.on_congestion(Instant(2), w.cwnd, &mut w);
            w.cwnd = 20 * mss;
            w.ssthresh = w.cwnd;
            c.on_ack(Instant(3), mss, &mut w, Some(Duration::from_millis(100)));
            assert!(c.k > 0.0, "timeout {timeout}");
        }
    }

    /// A fast retransmit in the slow start that follows a timeout ends §4.8's special case: the
    /// next epoch is an ordinary one, with K from the W_max that fast retransmit left.
    #[test]
    fn a_fast_retransmit_after_a_timeout_makes_the_next_epoch_ordinary() {
        let mss = 1000;
        let mut w = window(100, mss);
        let mut c = Cubic::default();
        c.on_rto(Instant::ZERO, w.cwnd, &mut w);
        c.on_rto_round(Instant::ZERO, 0);
        w.cwnd = 60 * mss;
        c.on_congestion(Instant(1), w.cwnd, &mut w);
        // Fast convergence: 60 is below the 100 of the timeout.
        assert_eq!(c.w_max, 51.0);
        w.cwnd = 42 * mss;
        w.ssthresh = w.cwnd;
        c.on_ack(Instant(2), mss, &mut w, Some(Duration::from_millis(100)));
        assert_eq!(c.w_max, 51.0);
        assert!((c.k - (9.0f64 / C).cbrt()).abs() < 1e-9, "K = {}", c.k);
    }

    #[test]
    fn reno_friendly_region_dominates_at_small_windows_and_short_rtt() {
        // With a tiny W_max and 10 ms RTT, cubic growth is slower than Reno's: W_est wins.
        let mss = 1000;
        let mut w = window(10, mss);
        let mut c = Cubic::default();
        c.on_congestion(Instant::ZERO, w.cwnd, &mut w);
        let start = w.cwnd;
        let mut now = Instant::ZERO;
        for _ in 0..70 {
            now += Duration::from_millis(1);
            c.on_ack(now, mss, &mut w, Some(Duration::from_millis(10)));
        }
        // 70 segments acked at cwnd 7: W_est grows by α·70/7 ≈ 5.3 segments.
        let grown = (w.cwnd - start) as f64 / mss as f64;
        assert!(grown > 3.0, "grew only {grown} segments");
    }

    /// Eq. 4 to the byte. At the epoch's first instant W_cubic(0) is the window itself, so
    /// W_est sets cwnd: below W_max it gains α = 3(1 − β)/(1 + β) per window acknowledged,
    /// at or above W_max (a first epoch, with no loss yet) α = 1 (§4.3).
    #[test]
    fn reno_friendly_window_grows_by_alpha_below_w_max_and_by_one_above() {
        let mss = 1000;
        let alpha = 3.0 * (1.0 - BETA) / (1.0 + BETA);
        // Below W_max: after a loss at 100 segments, cwnd 70.
        let mut w = window(100, mss);
        let mut c = Cubic::default();
        c.on_congestion(Instant::ZERO, w.cwnd, &mut w);
        let mut w_est = 70.0;
        for _ in 0..3 {
            let seg = w.cwnd as f64 / 1000.0;
            w_est += alpha / seg;
            c.on_ack(Instant(5), mss, &mut w, None);
            assert_eq!(w.cwnd, (w_est * 1000.0) as u64);
        }
        assert_eq!(w.cwnd, 70_022);
        // An ACK for two segments counts twice.
        let seg = w.cwnd as f64 / 1000.0;
        w_est += alpha * 2.0 / seg;
        c.on_ack(Instant(5), 2 * mss, &mut w, None);
        assert_eq!(w.cwnd, (w_est * 1000.0) as u64);
        assert_eq!(w.cwnd, 70_037);
        // A first epoch at 10 segments: W_max = cwnd, K = 0, α = 1.
        let mut w = window(10, mss);
        w.ssthresh = w.cwnd;
        let mut c = Cubic::default();
        c.on_ack(Instant(5), mss, &mut w, None);
        assert_eq!((c.w_max, c.k), (10.0, 0.0));
        assert_eq!(w.cwnd, 10_100);
        // 1 s later the curve, now above W_est, is what sets cwnd: W_cubic(1 + RTT) = 10.5324.
        c.on_ack(
            Instant(1_000_000_005),
            mss,
            &mut w,
            Some(Duration::from_millis(100)),
        );
        let target = 0.4 * 1.1f64.powi(3) + 10.0;
        assert_eq!(w.cwnd, ((10.1 + (target - 10.1) / 10.1) * 1000.0) as u64);
    }

    /// §4.6: ssthresh is β·cwnd but never below two segments.
    #[test]
    fn ssthresh_is_at_least_two_segments() {
        let mss = 1000;
        let mut w = window(2, mss);
        Cubic::default().on_congestion(Instant::ZERO, w.cwnd, &mut w);
        assert_eq!((w.ssthresh, w.cwnd), (2 * mss, 2 * mss));
        let mut w = window(3, mss);
        Cubic::default().on_congestion(Instant::ZERO, w.cwnd, &mut w);
        assert_eq!(w.ssthresh, 2_100);
    }

    /// `cubictcp_acked` drops RTT samples for 1 s after a congestion-avoidance epoch began; a
    /// timeout (`on_rto_round`) lets HyStart detect again. RTT 10 ms, no SRTT: the ACK train
    /// fires when it has lasted more than 5 ms.
    #[test]
    fn hystart_ignores_samples_for_a_second_after_the_epoch_and_rearms_at_a_timeout() {
        let mss = 1000;
        let mut w = Window {
            cwnd: 20 * mss,
            ssthresh: 10 * mss,
            mss,
            abc_limit: mss,
            ss_to_ssthresh: false,
        };
        let mut c = Cubic::new(true);
        // Congestion avoidance: the epoch begins at t = 0.
        c.on_ack(Instant::ZERO, mss, &mut w, Some(Duration::from_millis(10)));
        w.ssthresh = u64::MAX;
        let rtt = Duration::from_millis(10);
        let round = Round {
            snd_una: 1,
            snd_nxt: 100_000,
            srtt: None,
        };
        let mut fired_at = None;
        for us in (500_000..520_000).chain(994_000..1_020_000).step_by(1000) {
            c.on_rtt_sample(Instant(us * 1000), rtt, round, &mut w);
            if fired_at.is_none() && w.ssthresh != u64::MAX {
                fired_at = Some(us);
            }
        }
        // The first sample kept is the one at 1.000 s: the round starts there.
        assert_eq!(fired_at, Some(1_006_000));
        assert_eq!(c.hystart_detections(), (1, 0));
        // A timeout starts detection over (and forgets the epoch, so nothing is dropped).
        c.on_rto(Instant(2_000_000_000), w.cwnd, &mut w);
        c.on_rto_round(Instant(2_000_000_000), 200_000);
        w.cwnd = 20 * mss;
        w.ssthresh = u64::MAX;
        for ms in 2_100..2_110 {
            let round = Round {
                snd_una: 200_001,
                snd_nxt: 300_000,
                srtt: None,
            };
            c.on_rtt_sample(Instant(ms * 1_000_000), rtt, round, &mut w);
        }
        assert_eq!(c.hystart_detections(), (2, 0));
        assert_eq!(w.ssthresh, 20 * mss);
    }
}
