//! Leaving slow start before the first loss: Linux CUBIC's HyStart and HyStart++ (RFC 9406).
//!
//! Read before editing: Linux 6.1 `net/ipv4/tcp_cubic.c` (`hystart_update`, `cubictcp_acked`,
//! `bictcp_hystart_reset`, with the 6.13 fix 4e1fddc98d25's follow-up that checks
//! `hystart_low_window` after the round reset) and RFC 9406 §4.2–4.3. Both count rounds by
//! sequence number: a round ends when SND.UNA passes SND.NXT as it was when the round began.

use crate::time::{Duration, Instant};

use super::Window;

/// `hystart_low_window`: no detection below 16 segments.
const LOW_WINDOW: u64 = 16;
/// `hystart_ack_delta_us`: ACKs at most 2 ms apart form a train.
const ACK_DELTA: Duration = Duration::from_millis(2);
/// `HYSTART_MIN_SAMPLES` / RFC 9406 `N_RTT_SAMPLE`: RTT samples per round before a delay test.
const MIN_SAMPLES: u32 = 8;
/// `HYSTART_DELAY_MIN` / RFC 9406 `MIN_RTT_THRESH`.
const DELAY_MIN: Duration = Duration::from_millis(4);
/// `HYSTART_DELAY_MAX` / RFC 9406 `MAX_RTT_THRESH`.
const DELAY_MAX: Duration = Duration::from_millis(16);
/// RFC 9406 `CSS_GROWTH_DIVISOR`.
pub const CSS_GROWTH_DIVISOR: u64 = 4;
/// RFC 9406 `CSS_ROUNDS`.
const CSS_ROUNDS: u32 = 5;
/// Linux `GSO_MAX_SIZE` (`sk_gso_max_size` of a TUN or Ethernet device without BIG TCP).
const GSO_MAX_SIZE: u64 = 65_536;

/// clamp(rtt/8, 4 ms, 16 ms): `HYSTART_DELAY_THRESH(delay_min >> 3)`, RFC 9406's RttThresh.
fn delay_thresh(rtt: Duration) -> Duration {
    Duration(rtt.as_nanos() / 8).clamp(DELAY_MIN, DELAY_MAX)
}

/// Linux CUBIC's HyStart: sets ssthresh to cwnd (so slow start ends) at the first ACK train
/// longer than half the minimum RTT, or at a round whose least of 8 RTT samples exceeds the
/// minimum RTT by [`delay_thresh`].
#[derive(Clone, Debug)]
pub struct LinuxHystart {
    /// `found`: detection done; cleared at a timeout.
    found: bool,
    /// `round_start`, `last_ack`: when the round began, the last ACK of its train.
    round_start: Instant,
    last_ack: Instant,
    /// `end_seq`: SND.NXT when the round began (an offset).
    end_seq: u64,
    /// `curr_rtt`: least RTT sample of the round so far.
    curr_rtt: Duration,
    /// `sample_cnt`.
    sample_cnt: u32,
    /// `delay_min`: least RTT seen (`None` = `0` in Linux, no sample yet).
    delay_min: Option<Duration>,
    /// Detections by the ACK train and by delay (nstat `TCPHystartTrainDetect`,
    /// `TCPHystartDelayDetect`).
    pub train_detect: u32,
    /// See `train_detect`.
    pub delay_detect: u32,
}

impl Default for LinuxHystart {
    fn default() -> Self {
        Self {
            found: false,
            round_start: Instant::ZERO,
            last_ack: Instant::ZERO,
            end_seq: 0,
            curr_rtt: Duration(u64::MAX),
            sample_cnt: 0,
            delay_min: None,
            train_detect: 0,
            delay_detect: 0,
        }
    }
}

impl LinuxHystart {
    /// `bictcp_hystart_reset`: a new round from `now`, ending when `snd_nxt` is acknowledged.
    fn reset_round(&mut self, now: Instant, snd_nxt: u64) {
        self.round_start = now;
        self.last_ack = now;
        self.end_seq = snd_nxt;
        self.curr_rtt = Duration(u64::MAX);
        self.sample_cnt = 0;
    }

    /// A timeout (`cubictcp_state(TCP_CA_Loss)`: `bictcp_reset` then `bictcp_hystart_reset`):
    /// detection starts over, with no minimum RTT.
    pub fn on_rto(&mut self, now: Instant, snd_nxt: u64) {
        self.found = false;
        self.delay_min = None;
        self.reset_round(now, snd_nxt);
    }

    /// `cubictcp_acked` once the caller has dropped samples CUBIC discards: an ACK with RTT
    /// sample `rtt` when SND.UNA is `snd_una` and SND.NXT `snd_nxt`; `srtt` sets Linux's pacing
    /// rate for the ACK-train cushion. May set `w.ssthresh = w.cwnd`.
    pub fn on_rtt_sample(
        &mut self,
        now: Instant,
        rtt: Duration,
        snd_una: u64,
        snd_nxt: u64,
        srtt: Option<Duration>,
        w: &mut Window,
    ) {
        let delay = rtt.max(Duration::from_micros(1));
        let delay_min = match self.delay_min {
            Some(d) if d <= delay => d,
            _ => delay,
        };
        self.delay_min = Some(delay_min);
        if self.found || !w.in_slow_start() {
            return;
        }
        // hystart_update
        if snd_una > self.end_seq {
            self.reset_round(now, snd_nxt);
        }
        if w.cwnd < LOW_WINDOW * w.mss {
            return;
        }
        if now.saturating_since(self.last_ack) <= ACK_DELTA {
            self.last_ack = now;
            // Unpaced (`SK_PACING_NONE`): half of delay_min plus `hystart_ack_delay`.
            let threshold = Duration((delay_min + ack_delay(w, srtt)).as_nanos() / 2);
            if now.saturating_since(self.round_start) > threshold {
                self.found = true;
                self.train_detect += 1;
                w.ssthresh = w.cwnd;
            }
        }
        self.curr_rtt = self.curr_rtt.min(delay);
        if self.sample_cnt < MIN_SAMPLES {
            self.sample_cnt += 1;
        } else if self.curr_rtt > delay_min + delay_thresh(delay_min) {
            self.found = true;
            self.delay_detect += 1;
            w.ssthresh = w.cwnd;
        }
    }
}

/// `hystart_ack_delay`: min(1 ms, 4·GSO_MAX_SIZE / pacing rate), the pacing rate in slow start
/// being 2·cwnd/SRTT (`tcp_update_pacing_rate`, `tcp_pacing_ss_ratio` 200 %); 0 before an SRTT.
fn ack_delay(w: &Window, srtt: Option<Duration>) -> Duration {
    let Some(srtt) = srtt else {
        return Duration::ZERO;
    };
    // 4·GSO / (2·cwnd/srtt) = 2·GSO·srtt / cwnd.
    let ns = u128::from(2 * GSO_MAX_SIZE) * u128::from(srtt.as_nanos()) / u128::from(w.cwnd.max(1));
    Duration(ns.min(1_000_000) as u64)
}

/// HyStart++ (RFC 9406 §4.2): delay-based exit into Conservative Slow Start (CSS), only in the
/// first slow start (§4.3: "only for the initial slow start … and fall back to using standard
/// slow start for the remainder of the connection lifetime").
#[derive(Clone, Debug, Default)]
pub struct HystartPlusPlus {
    /// windowEnd: the round ends when SND.UNA reaches it.
    window_end: Option<u64>,
    /// lastRoundMinRTT, currentRoundMinRTT (`None` = infinity).
    last_round_min_rtt: Option<Duration>,
    current_round_min_rtt: Option<Duration>,
    /// rttSampleCount.
    rtt_sample_count: u32,
    /// cssBaselineMinRtt: `Some` while in CSS.
    css_baseline_min_rtt: Option<Duration>,
    /// CSS rounds completed.
    css_rounds: u32,
    /// The initial slow start is over (CSS ended, a loss, or a timeout).
    done: bool,
}

impl HystartPlusPlus {
    /// Whether slow start's growth is divided by `CSS_GROWTH_DIVISOR` now.
    pub fn in_css(&self) -> bool {
        !self.done && self.css_baseline_min_rtt.is_some()
    }

    /// A loss or timeout: §4.2 "If loss or ECN-marking is observed anytime during standard slow
    /// start or CSS, exit" and later slow starts are standard (§4.3).
    pub fn on_loss(&mut self) {
        self.done = true;
    }

    /// An ACK that acknowledged new data in slow start, with its RTT sample if any, when
    /// SND.UNA is `snd_una` and SND.NXT `snd_nxt`. Sets `w.ssthresh = w.cwnd` when CSS ends.
    pub fn on_ack(&mut self, rtt: Option<Duration>, snd_una: u64, snd_nxt: u64, w: &mut Window) {
        if self.done || !w.in_slow_start() {
            return;
        }
        if w.ssthresh != u64::MAX {
            // Not the initial slow start (RFC 9406 §4.3).
            self.done = true;
            return;
        }
        let window_end = *self.window_end.get_or_insert(snd_nxt);
        if let Some(rtt) = rtt {
            self.current_round_min_rtt =
                Some(self.current_round_min_rtt.map_or(rtt, |m| m.min(rtt)));
            self.rtt_sample_count += 1;
        }
        if self.rtt_sample_count >= MIN_SAMPLES {
            if let (Some(cur), Some(base)) = (self.current_round_min_rtt, self.css_baseline_min_rtt)
            {
                // §4.2: the exit was spurious, resume slow start.
                if cur < base {
                    self.css_baseline_min_rtt = None;
                    self.css_rounds = 0;
                }
            } else if let (Some(cur), Some(last)) =
                (self.current_round_min_rtt, self.last_round_min_rtt)
            {
                if cur >= last + delay_thresh(last) {
                    self.css_baseline_min_rtt = Some(cur);
                }
            }
        }
        if snd_una >= window_end {
            // The round ends; the next begins (windowEnd = SND.NXT).
            self.window_end = Some(snd_nxt);
            self.last_round_min_rtt = self.current_round_min_rtt;
            self.current_round_min_rtt = None;
            self.rtt_sample_count = 0;
            if self.css_baseline_min_rtt.is_some() {
                self.css_rounds += 1;
                if self.css_rounds >= CSS_ROUNDS {
                    // Enter congestion avoidance.
                    w.ssthresh = w.cwnd;
                    self.done = true;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn win(segments: u64) -> Window {
        Window {
            cwnd: segments * 1000,
            ssthresh: u64::MAX,
            mss: 1000,
            abc_limit: 1000,
            ss_to_ssthresh: false,
        }
    }

    #[test]
    fn delay_threshold_is_an_eighth_clamped_to_4_and_16_ms() {
        assert_eq!(delay_thresh(Duration::from_millis(20)), DELAY_MIN);
        assert_eq!(
            delay_thresh(Duration::from_millis(80)),
            Duration::from_millis(10)
        );
        assert_eq!(delay_thresh(Duration::from_millis(500)), DELAY_MAX);
    }

    #[test]
    fn ack_delay_is_capped_at_1ms_and_shrinks_with_the_rate() {
        let w = win(100);
        assert_eq!(ack_delay(&w, None), Duration::ZERO);
        // 2·65536·0.5 s / 100 000 B = 655 ms: capped.
        assert_eq!(
            ack_delay(&w, Some(Duration::from_millis(500))),
            Duration::from_millis(1)
        );
        // 2·65536·1 ms / 1 000 000 B = 131 µs.
        let big = win(1000);
        assert_eq!(
            ack_delay(&big, Some(Duration::from_millis(1))),
            Duration(131_072)
        );
    }

    /// An ACK every millisecond from t = 0 with RTT 100 ms: the train passes (100 + 1)/2 ms
    /// after the round began, at the ACK of t = 51 ms; the window below 16 segments never tests.
    #[test]
    fn ack_train_longer_than_half_the_min_rtt_sets_ssthresh() {
        let rtt = Duration::from_millis(100);
        let mut h = LinuxHystart::default();
        let mut w = win(15);
        for ms in 0..60 {
            h.on_rtt_sample(
                Instant(ms * 1_000_000),
                rtt,
                1 + ms,
                1000,
                Some(rtt),
                &mut w,
            );
        }
        assert_eq!(w.ssthresh, u64::MAX, "below hystart_low_window");
        let mut h = LinuxHystart::default();
        let mut w = win(16);
        let mut at = None;
        for ms in 0..60 {
            h.on_rtt_sample(
                Instant(ms * 1_000_000),
                rtt,
                1 + ms,
                1000,
                Some(rtt),
                &mut w,
            );
            if at.is_none() && w.ssthresh != u64::MAX {
                at = Some(ms);
            }
        }
        assert_eq!(at, Some(51));
        assert_eq!(w.ssthresh, 16_000);
        assert_eq!((h.train_detect, h.delay_detect), (1, 0));
    }

    /// A gap of more than 2 ms breaks the train for the rest of the round.
    #[test]
    fn a_gap_breaks_the_train() {
        let rtt = Duration::from_millis(100);
        let mut h = LinuxHystart::default();
        let mut w = win(20);
        for ms in (0..10).chain(13..90) {
            h.on_rtt_sample(Instant(ms * 1_000_000), rtt, 1, 1000, Some(rtt), &mut w);
        }
        assert_eq!(w.ssthresh, u64::MAX);
    }

    /// Delay: min RTT 100 ms (threshold 12.5 ms). A round whose first 8 samples are all at
    /// least 112.6 ms fires at its 9th sample; 112.5 ms does not.
    #[test]
    fn delay_rise_above_an_eighth_of_the_min_rtt_sets_ssthresh() {
        for (rise_us, fires) in [(12_500, false), (12_600, true)] {
            let mut h = LinuxHystart::default();
            let mut w = win(20);
            let base = Duration::from_millis(100);
            // Round 1 (ends when SND.UNA passes 10): the minimum, ACKs 10 ms apart (no train).
            for i in 0..10 {
                h.on_rtt_sample(Instant(i * 10_000_000), base, i, 10, Some(base), &mut w);
            }
            let high = base + Duration::from_micros(rise_us);
            for i in 0..9 {
                let t = Instant(200_000_000 + i * 10_000_000);
                h.on_rtt_sample(t, high, 11 + i, 30, Some(base), &mut w);
                let expect = fires && i == 8;
                assert_eq!(
                    w.ssthresh != u64::MAX,
                    expect,
                    "rise {rise_us} µs, sample {i}"
                );
            }
            assert_eq!(h.delay_detect, u32::from(fires));
        }
    }

    /// After a timeout detection starts over: a second train can fire.
    #[test]
    fn timeout_rearms_detection() {
        let rtt = Duration::from_millis(10);
        let mut h = LinuxHystart::default();
        let mut w = win(20);
        for ms in 0..7 {
            h.on_rtt_sample(Instant(ms * 1_000_000), rtt, 1, 100, None, &mut w);
        }
        assert_eq!(w.ssthresh, 20_000);
        w.ssthresh = u64::MAX;
        h.on_rtt_sample(Instant(8_000_000), rtt, 1, 100, None, &mut w);
        assert_eq!(w.ssthresh, u64::MAX, "found: no second detection");
        h.on_rtt_sample(
            Instant(9_000_000),
            Duration::from_millis(20),
            1,
            100,
            None,
            &mut w,
        );
        h.on_rto(Instant(100_000_000), 200);
        let mut at = None;
        for ms in 100..115 {
            let t = Instant(ms * 1_000_000);
            h.on_rtt_sample(t, Duration::from_millis(20), 1, 200, None, &mut w);
            if at.is_none() && w.ssthresh != u64::MAX {
                at = Some(ms);
            }
        }
        // delay_min restarted at 20 ms: threshold 10 ms from the reset at 100 ms.
        assert_eq!(at, Some(111));
        assert_eq!(h.train_detect, 2);
    }

    /// RFC 9406: round 1 at 100 ms, round 2's minimum 112.5 ms (= 100 + 100/8) enters CSS;
    /// five CSS rounds later ssthresh = cwnd.
    #[test]
    fn hystart_plus_plus_enters_css_then_congestion_avoidance() {
        let mut h = HystartPlusPlus::default();
        let mut w = win(20);
        let mut una = 0;
        let mut round = |h: &mut HystartPlusPlus, w: &mut Window, rtt_us: u64, end: u64| {
            for _ in 0..8 {
                h.on_ack(Some(Duration::from_micros(rtt_us)), una, end, w);
            }
            una = end;
            h.on_ack(None, una, end + 100, w);
        };
        round(&mut h, &mut w, 100_000, 100);
        assert!(!h.in_css());
        round(&mut h, &mut w, 112_499, 200);
        assert!(!h.in_css(), "below the threshold");
        // lastRoundMinRTT is now 112.499 ms: threshold 14.06 ms.
        round(&mut h, &mut w, 126_562, 300);
        assert!(h.in_css());
        // The round that entered CSS counts as the first of the five.
        for r in 0..3 {
            round(&mut h, &mut w, 127_000, 400 + 100 * r);
            assert_eq!(w.ssthresh, u64::MAX, "CSS round {r}");
        }
        round(&mut h, &mut w, 127_000, 700);
        assert_eq!(w.ssthresh, w.cwnd);
        assert!(!h.in_css());
    }

    /// In CSS, a round whose minimum falls below the baseline resumes slow start.
    #[test]
    fn hystart_plus_plus_resumes_slow_start_when_the_rtt_falls() {
        let mut h = HystartPlusPlus::default();
        let mut w = win(20);
        for (i, rtt) in [100_000u64, 120_000, 119_999].into_iter().enumerate() {
            let end = 100 * (i as u64 + 1);
            for _ in 0..8 {
                h.on_ack(Some(Duration::from_micros(rtt)), end - 1, end, &mut w);
            }
            if i == 1 {
                assert!(h.in_css());
            }
            h.on_ack(None, end, end + 100, &mut w);
        }
        assert!(!h.in_css());
        // Not the first slow start: standard slow start from then on.
        let mut h = HystartPlusPlus::default();
        w.ssthresh = 50_000;
        h.on_ack(Some(Duration::from_millis(1)), 1, 2, &mut w);
        assert!(h.done);
    }

    /// delay_min follows the least sample: after 20 ms then 10 ms samples the train threshold
    /// is 5 ms (it would be 10 ms with delay_min stuck at 20 ms).
    #[test]
    fn delay_min_is_the_least_sample() {
        let mut h = LinuxHystart::default();
        let mut w = win(20);
        h.on_rtt_sample(
            Instant::ZERO,
            Duration::from_millis(20),
            1,
            100,
            None,
            &mut w,
        );
        let mut at = None;
        for ms in 1..12 {
            h.on_rtt_sample(
                Instant(ms * 1_000_000),
                Duration::from_millis(10),
                1,
                100,
                None,
                &mut w,
            );
            if at.is_none() && w.ssthresh != u64::MAX {
                at = Some(ms);
            }
        }
        assert_eq!(at, Some(6));
    }

    /// A round ends when SND.UNA passes end_seq (`after(snd_una, end_seq)`), not when it
    /// reaches it: ACKs at exactly end_seq continue the train, which fires at 6 ms.
    #[test]
    fn the_round_ends_only_past_end_seq() {
        let rtt = Duration::from_millis(10);
        let mut h = LinuxHystart::default();
        let mut w = win(20);
        // The first sample starts a round ending at 1000.
        h.on_rtt_sample(Instant::ZERO, rtt, 1, 1000, None, &mut w);
        for ms in 1..7 {
            h.on_rtt_sample(Instant(ms * 1_000_000), rtt, 1000, 2000, None, &mut w);
        }
        assert_eq!(w.ssthresh, 20_000);
    }

    /// A loss ends HyStart++ for good (RFC 9406 §4.2, §4.3): no CSS afterwards.
    #[test]
    fn hystart_plus_plus_stops_at_a_loss() {
        let mut h = HystartPlusPlus::default();
        let mut w = win(20);
        for _ in 0..8 {
            h.on_ack(Some(Duration::from_millis(100)), 1, 100, &mut w);
        }
        h.on_ack(None, 100, 200, &mut w);
        h.on_loss();
        for _ in 0..8 {
            h.on_ack(Some(Duration::from_millis(200)), 101, 200, &mut w);
        }
        assert!(!h.in_css());
        assert_eq!(w.ssthresh, u64::MAX);
    }
}
