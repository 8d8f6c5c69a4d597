//! Reno window growth (RFC 5681 §3.1): slow start, then one SMSS per RTT.

use super::{slow_start, CongestionControl, Window};
use crate::time::{Duration, Instant};

/// Additive increase, multiplicative decrease by one half.
#[derive(Clone, Copy, Debug, Default)]
pub struct Reno {
    /// Congestion avoidance: SMSS² byte-units not yet turned into whole bytes of cwnd, so that
    /// the window grows by the exact SMSS·SMSS/cwnd per ACK over time. Rounding each ACK's
    /// share down cost 3 % of growth at 70 segments and 27 % at 528 (2.74 bytes per ACK taken
    /// as 2), measured against ns-2's `cwnd_ += 1/cwnd_` (bench/peers/compare-ns2.sh).
    remainder: u64,
    /// Count bytes, not ACKs, in congestion avoidance (RFC 3465 §2.1; Linux's
    /// `tcp_cong_avoid_ai` counts segments acknowledged): one SMSS per window of data
    /// acknowledged, whatever the ACK ratio. RFC 5681 eq. 3 adds SMSS²/cwnd per ACK, so with
    /// delayed ACKs the window grows about half a segment per RTT.
    byte_counting: bool,
}

impl Reno {
    /// Reno, counting ACKs (RFC 5681 eq. 3) or bytes (RFC 3465) in congestion avoidance.
    pub fn new(byte_counting: bool) -> Self {
        Self {
            remainder: 0,
            byte_counting,
        }
    }
}

impl CongestionControl for Reno {
    fn on_ack(&mut self, _now: Instant, acked: u64, w: &mut Window, _srtt: Option<Duration>) {
        let mut acked = acked;
        if w.in_slow_start() {
            // Linux `tcp_reno_cong_avoid`: what slow start leaves goes on to `tcp_cong_avoid_ai`.
            acked = slow_start(acked, w);
        }
        if acked > 0 && !w.in_slow_start() {
            // RFC 5681 eq. 3: cwnd += SMSS·SMSS/cwnd per ACK, the fraction carried forward.
            let cwnd = w.cwnd.max(1);
            let unit = if self.byte_counting { acked } else { w.mss };
            self.remainder += unit * w.mss;
            let grow = self.remainder / cwnd;
            self.remainder -= grow * cwnd;
            w.cwnd += grow;
        }
    }

    fn on_congestion(&mut self, _now: Instant, flight: u64, w: &mut Window) {
        self.remainder = 0;
        // RFC 5681 eq. 4: ssthresh = max(FlightSize / 2, 2·SMSS).
        w.ssthresh = (flight / 2).max(2 * w.mss);
        w.cwnd = w.ssthresh;
    }

    fn on_rto(&mut self, _now: Instant, flight: u64, w: &mut Window) {
        self.remainder = 0;
        w.ssthresh = (flight / 2).max(2 * w.mss);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slow_start_then_linear() {
        let mut w = Window {
            cwnd: 1000,
            ssthresh: 4000,
            mss: 1000,
            abc_limit: 1000,
            ss_to_ssthresh: false,
        };
        let mut r = Reno::new(false);
        r.on_ack(Instant::ZERO, 1000, &mut w, None);
        assert_eq!(w.cwnd, 2000);
        // One delayed ACK for two segments: RFC 5681 counts one SMSS, RFC 3465 with L = 2 both.
        r.on_ack(Instant::ZERO, 2000, &mut w, None);
        assert_eq!(w.cwnd, 3000);
        w.abc_limit = 2000;
        r.on_ack(Instant::ZERO, 2000, &mut w, None);
        assert_eq!(w.cwnd, 5000);
        w.ssthresh = 4000;
        w.abc_limit = 1000;
        w.cwnd = 4000;
        // One window of ACKs (4 × 1000 bytes) adds about one SMSS.
        for _ in 0..4 {
            r.on_ack(Instant::ZERO, 1000, &mut w, None);
        }
        assert!((4900..=5000).contains(&w.cwnd), "{}", w.cwnd);
        r.on_congestion(Instant::ZERO, 10_000, &mut w);
        assert_eq!((w.ssthresh, w.cwnd), (5000, 5000));
        r.on_congestion(Instant::ZERO, 1000, &mut w);
        assert_eq!(w.ssthresh, 2000);
    }

    /// RFC 5681 eq. 3 summed over one window of per-segment ACKs is one SMSS, also where
    /// SMSS²/cwnd is not a whole number of bytes (2.74 at 528 segments of 1448 bytes).
    #[test]
    fn a_large_window_grows_one_smss_per_window_of_acks() {
        let mss = 1448;
        for segments in [70, 528, 5000] {
            let start = segments * mss;
            let mut w = Window {
                cwnd: start,
                ssthresh: 0,
                mss,
                abc_limit: mss,
                ss_to_ssthresh: false,
            };
            let mut r = Reno::new(false);
            for _ in 0..segments {
                r.on_ack(Instant::ZERO, mss, &mut w, None);
            }
            // The window grows during the round, so later ACKs add a little less: at least
            // SMSS·(1 − 1/segments), against 2·segments bytes with each share rounded down.
            let grown = w.cwnd - start;
            let low = mss - mss / segments - 1;
            assert!((low..=mss).contains(&grown), "{segments}: grew {grown}");
        }
    }

    /// With delayed ACKs (one ACK per two segments) RFC 5681 eq. 3 grows the window by half a
    /// segment per window of data; byte counting (RFC 3465, Linux) by a whole one.
    #[test]
    fn byte_counting_grows_one_smss_per_window_whatever_the_ack_ratio() {
        let mss = 1000;
        for (byte_counting, expect) in [(false, mss / 2), (true, mss)] {
            let start = 100 * mss;
            let mut w = Window {
                cwnd: start,
                ssthresh: 0,
                mss,
                abc_limit: mss,
                ss_to_ssthresh: false,
            };
            let mut r = Reno::new(byte_counting);
            for _ in 0..50 {
                r.on_ack(Instant::ZERO, 2 * mss, &mut w, None);
            }
            let grown = w.cwnd - start;
            assert!(
                (expect - expect / 50 - 1..=expect).contains(&grown),
                "byte_counting {byte_counting}: grew {grown}, expected about {expect}"
            );
        }
    }
}
