//! The two estimators of TCP-SuperCharger (Lee, Yum & Wan, §4.1–4.2): the gateway–receiver
//! round-trip time `D` and the receiver's processing rate `R`.
//!
//! Both are fed with what a gateway sees: the instant it forwarded a segment and the ACKs that
//! come back carrying the receiver's advertised window. Neither reads a clock.

use crate::time::{Duration, Instant};

/// Gateway–receiver RTT, eqs. (1)–(2): `D = t_i − f_i`, smoothed as
/// `RTT ← α·RTT + (1 − α)·D` with α = 0.9 (Jacobson & Karels, as the paper says).
#[derive(Clone, Copy, Debug)]
pub struct RttEstimator {
    alpha: f64,
    srtt: Option<f64>,
    latest: Option<Duration>,
    samples: u64,
}

impl RttEstimator {
    /// A new estimator with smoothing weight `alpha` (the weight of the old value, 0.9 in the
    /// paper); values outside [0, 1) are clamped.
    pub fn new(alpha: f64) -> Self {
        Self {
            alpha: alpha.clamp(0.0, 0.999),
            srtt: None,
            latest: None,
            samples: 0,
        }
    }

    /// One measurement: a segment forwarded at `forwarded` was acknowledged by an ACK that
    /// reached the gateway at `acked` (eq. 1). The first sample initialises the average.
    pub fn on_sample(&mut self, forwarded: Instant, acked: Instant) {
        let d = acked.saturating_since(forwarded);
        let ns = d.as_nanos() as f64;
        self.srtt = Some(match self.srtt {
            None => ns,
            Some(s) => self.alpha * s + (1.0 - self.alpha) * ns,
        });
        self.latest = Some(d);
        self.samples += 1;
    }

    /// The smoothed RTT (eq. 2), once a sample has been taken.
    pub fn srtt(&self) -> Option<Duration> {
        self.srtt.map(|s| Duration::from_nanos(s.round() as u64))
    }

    /// The last raw sample (eq. 1).
    pub fn latest(&self) -> Option<Duration> {
        self.latest
    }

    /// Samples taken so far.
    pub fn samples(&self) -> u64 {
        self.samples
    }
}

/// What the receiver told us in one ACK, in the sender's sequence space (bytes counted from the
/// sender's initial sequence number, so no wraparound): `edge = ack + advertised window`.
#[derive(Clone, Copy, Debug, Eq, PartialEq)]
pub struct AckObservation {
    /// When the ACK reached the gateway (`t_i`).
    pub at: Instant,
    /// Cumulative acknowledgement, as an offset.
    pub ack: u64,
    /// Advertised window in bytes, after scaling (`a_i`).
    pub window: u64,
}

impl AckObservation {
    /// Right edge of the receiver's window: the highest offset it accepts.
    pub fn edge(&self) -> u64 {
        self.ack + self.window
    }
}

/// Receiver processing rate, eq. (3), over windows of `k` ACKs, smoothed as eq. (2).
///
/// Eq. (3) divides the change of the receiver's buffer availability plus the data that reached it
/// by the time between two ACKs. We take "the data that reached it" as the bytes the two ACKs'
/// cumulative acknowledgements differ by (exactly the data that arrived in order between the
/// instants the receiver sent them) rather than the bytes the gateway forwarded between the ACKs'
/// arrivals (what the paper writes): the two agree at a constant rate, but the paper's sum counts
/// what the gateway sends *now*, so a receiver whose buffer is full would appear to read as fast
/// as the gateway chooses to send — a self-confirming estimate. Ours is the speed at which the
/// right edge of the receiver's window advances, which is the application's read rate.
///
/// A sample measures the application's rate only while the receiver holds unread data the whole
/// time (its window stays below the largest it ever advertised): the application was never
/// starved (within a slack of two segments, see [`RateEstimator::set_slack`]). Those are
/// *backlogged* samples and are smoothed with eq. (2). When the window is at
/// its maximum the application kept up with everything that arrived, and the sample is only a
/// lower bound of what it could read — but a useful one: segments that arrive back to back at the
/// bottleneck rate measure that the receiver absorbs that rate. Lower bounds are kept as their
/// maximum, so a burst at link rate tells the gateway at once that the receiver keeps up with the
/// link. (A decaying maximum would spiral down: once the gateway sends at the estimate, the
/// samples are its own sending rate.) The estimate is the backlogged average while the receiver
/// is backlogged, and the larger of the two otherwise; an application that slows down is seen as
/// soon as its receiver holds a backlog.
#[derive(Clone, Debug)]
pub struct RateEstimator {
    k: usize,
    alpha: f64,
    /// The last `k + 1` ACKs that advanced the ack or changed the window, oldest first.
    history: std::collections::VecDeque<(AckObservation, bool)>,
    /// Largest window seen: the receiver's buffer when it is empty.
    max_window: u64,
    backlogged: Option<f64>,
    lower_bound: Option<f64>,
    samples: u64,
    /// A window this far below the maximum still counts as "buffer empty": the receiver's
    /// silly-window avoidance holds back increases below a segment, and a delayed ACK leaves one
    /// segment unacknowledged.
    slack: u64,
}

impl RateEstimator {
    /// Windows of `k` ACKs (at least 1), smoothing weight `alpha` (the weight of the old value).
    pub fn new(k: usize, alpha: f64) -> Self {
        Self {
            k: k.max(1),
            alpha: alpha.clamp(0.0, 0.999),
            history: std::collections::VecDeque::with_capacity(k.max(1) + 1),
            max_window: 0,
            backlogged: None,
            lower_bound: None,
            samples: 0,
            slack: 0,
        }
    }

    /// Windows within `bytes` of the largest one count as an empty buffer (not backlogged).
    /// Two segments is right for a receiver with silly-window avoidance and delayed ACKs.
    pub fn set_slack(&mut self, bytes: u64) {
        self.slack = bytes;
    }

    /// Whether a receiver advertising `window` holds unread data (beyond the slack).
    pub fn is_backlogged(&self, window: u64) -> bool {
        window + self.slack < self.max_window
    }

    /// Feed one ACK from the receiver. Duplicates that change nothing are ignored (they carry no
    /// new information and would shorten the window in time).
    pub fn on_ack(&mut self, obs: AckObservation) {
        if let Some((last, _)) = self.history.back() {
            if obs.ack == last.ack && obs.window == last.window {
                return;
            }
            if obs.at <= last.at || obs.edge() < last.edge() && obs.ack <= last.ack {
                // Reordered or older information (a window that moved left): skip it.
                return;
            }
        }
        self.max_window = self.max_window.max(obs.window);
        let backlogged = self.is_backlogged(obs.window);
        self.history.push_back((obs, backlogged));
        if self.history.len() <= self.k {
            return;
        }
        if self.history.len() > self.k + 1 {
            self.history.pop_front();
        }
        let (first, _) = self.history[0];
        let all_backlogged = self.history.iter().all(|&(_, b)| b);
        let dt = obs.at.saturating_since(first.at).as_secs_f64();
        if dt <= 0.0 {
            return;
        }
        let sample = obs.edge().saturating_sub(first.edge()) as f64 / dt;
        self.samples += 1;
        let smooth = |old: Option<f64>, a: f64| match old {
            None => sample,
            Some(v) => a * v + (1.0 - a) * sample,
        };
        if all_backlogged {
            self.backlogged = Some(smooth(self.backlogged, self.alpha));
        } else {
            self.lower_bound = Some(self.lower_bound.map_or(sample, |l| l.max(sample)));
        }
    }

    /// Estimated processing rate in bytes per second; `None` before the first sample.
    pub fn rate(&self) -> Option<f64> {
        let receiver_backlogged = self.history.back().is_some_and(|&(_, b)| b);
        match (self.backlogged, self.lower_bound) {
            (Some(b), _) if receiver_backlogged => Some(b),
            (Some(b), Some(l)) => Some(b.max(l)),
            (b, l) => b.or(l),
        }
    }

    /// Largest advertised window seen (bytes).
    pub fn max_window(&self) -> u64 {
        self.max_window
    }

    /// Rate samples taken so far.
    pub fn samples(&self) -> u64 {
        self.samples
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rand::Rng;

    fn at(ns: u64) -> Instant {
        Instant::ZERO + Duration::from_nanos(ns)
    }

    #[test]
    fn rtt_converges_within_five_percent_of_a_jittered_path() {
        // True RTT 600 ms; each ACK is late by up to 40 ms of queueing jitter (uniform), so the
        // mean measured RTT is 620 ms. After 200 segments the average is within 5 % of it.
        let mut e = RttEstimator::new(0.9);
        let mut rng = Rng::new(7, 1);
        for i in 0..200u64 {
            let f = at(i * 1_000_000);
            let jitter = (rng.next_f64() * 40e6) as u64;
            e.on_sample(
                f,
                f + Duration::from_millis(600) + Duration::from_nanos(jitter),
            );
        }
        let srtt = e.srtt().expect("sampled").as_secs_f64();
        assert!((srtt - 0.620).abs() / 0.620 < 0.05, "srtt {srtt}");
        assert_eq!(e.samples(), 200);
    }

    #[test]
    fn rtt_follows_a_step_with_alpha_point_nine() {
        let mut e = RttEstimator::new(0.9);
        e.on_sample(at(0), at(1_000_000_000));
        assert_eq!(e.srtt(), Some(Duration::from_secs(1)));
        // One 2 s sample moves the average by a tenth of the difference: 1.1 s.
        e.on_sample(at(0), at(2_000_000_000));
        assert_eq!(e.srtt(), Some(Duration::from_millis(1100)));
        // After 50 more the remaining error is 0.9^51 of the step: under 0.5 %.
        for _ in 0..50 {
            e.on_sample(at(0), at(2_000_000_000));
        }
        let s = e.srtt().expect("sampled").as_secs_f64();
        assert!((s - 2.0).abs() / 2.0 < 0.005, "{s}");
    }

    /// A synthetic receiver: reads at `read_bps` bytes/s with a `buffer`, data arrives at
    /// `arrive_bps` in 1448-byte segments, one ACK per two segments (delayed ACK).
    fn synthetic(read: f64, arrive: f64, buffer: u64, n_acks: u64) -> RateEstimator {
        let mut e = RateEstimator::new(8, 0.9);
        let seg = 1448u64;
        let mut arrived = 0u64;
        let mut read_bytes = 0f64;
        let gap = 2.0 * seg as f64 / arrive;
        let mut last = 0f64;
        for i in 1..=n_acks {
            let t = i as f64 * gap;
            read_bytes = (read_bytes + read * (t - last)).min(arrived as f64);
            last = t;
            // Arrivals beyond the buffer would be refused; the synthetic sender respects it.
            arrived = (arrived + 2 * seg).min(read_bytes as u64 + buffer);
            read_bytes = (read_bytes + 0.0).min(arrived as f64);
            let unread = arrived - read_bytes as u64;
            e.on_ack(AckObservation {
                at: at((t * 1e9) as u64),
                ack: arrived,
                window: buffer - unread,
            });
        }
        e
    }

    #[test]
    fn rate_of_a_slow_reader_is_its_read_rate() {
        // 5 Mb/s reader, data offered at 24 Mb/s, 64 KB buffer: backlogged samples.
        let e = synthetic(625_000.0, 3_000_000.0, 65_535, 2000);
        let r = e.rate().expect("estimated");
        assert!((r - 625_000.0).abs() / 625_000.0 < 0.05, "rate {r}");
    }

    #[test]
    fn rate_of_a_fast_reader_is_the_arrival_rate() {
        // 1 Gb/s reader, data at 24 Mb/s: the buffer stays empty; the estimate is the rate the
        // receiver was seen to absorb.
        let e = synthetic(125_000_000.0, 3_000_000.0, 65_535, 500);
        let r = e.rate().expect("estimated");
        assert!((r - 3_000_000.0).abs() / 3_000_000.0 < 0.05, "rate {r}");
        // Each ACK finds the two segments it acknowledges not yet read.
        assert_eq!(e.max_window(), 65_535 - 2 * 1448);
    }

    #[test]
    fn rate_drops_when_the_reader_slows() {
        // A fast reader measured at 24 Mb/s, then the application slows to 2 Mb/s: once the
        // receiver is backlogged the estimate is the backlogged rate, not the stale maximum.
        let mut e = RateEstimator::new(8, 0.9);
        let mut t = 0u64;
        let mut ack = 0u64;
        for _ in 0..100 {
            t += 965_333; // 2 × 1448 B at 3 MB/s
            ack += 2896;
            e.on_ack(AckObservation {
                at: at(t),
                ack,
                window: 65_535,
            });
        }
        let fast = e.rate().expect("estimated");
        assert!((fast - 3_000_000.0).abs() / 3_000_000.0 < 0.01, "{fast}");
        // Now the application reads 250 kB/s: the window shrinks by what it cannot read until
        // 10 kB are left, then the receiver accepts only what is read (the edge moves at the
        // read rate, whatever the split between ack and window).
        let mut window = 65_535u64;
        for _ in 0..400 {
            let dt = 2896.0 / 250_000.0 / 2.0;
            t += (dt * 1e9) as u64;
            let read = (250_000.0 * dt) as u64;
            if window > 10_000 {
                ack += 2896;
                window = (window + read).saturating_sub(2896).max(10_000);
            } else {
                ack += read;
            }
            e.on_ack(AckObservation {
                at: at(t),
                ack,
                window,
            });
        }
        let slow = e.rate().expect("estimated");
        assert!((slow - 250_000.0).abs() / 250_000.0 < 0.05, "{slow}");
    }

    #[test]
    fn stale_and_duplicate_acks_are_ignored() {
        let mut e = RateEstimator::new(1, 0.9);
        let o = AckObservation {
            at: at(1_000),
            ack: 1000,
            window: 5000,
        };
        e.on_ack(o);
        e.on_ack(o);
        e.on_ack(AckObservation { at: at(500), ..o });
        assert_eq!(e.samples(), 0);
        e.on_ack(AckObservation {
            at: at(1_000_001_000),
            ack: 2000,
            window: 5000,
        });
        assert_eq!(e.samples(), 1);
        assert_eq!(e.rate(), Some(1000.0));
    }
}
