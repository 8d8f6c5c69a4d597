//! Reno window growth (RFC 5681 §3.1): slow start, then one SMSS per RTT.

use super::{slow_start, CongestionControl, Window};
use crate::time::{Duration, Instant};

/// Additive increase, multiplicative decrease by one half.
#[derive(Clone, Copy, Debug, Default)]
pub struct Reno;

impl CongestionControl for Reno {
    fn on_ack(&mut self, _now: Instant, acked: u64, w: &mut Window, _srtt: Option<Duration>) {
        if w.in_slow_start() {
            slow_start(acked, w);
        } else {
            // RFC 5681 eq. 3: cwnd += SMSS·SMSS/cwnd per ACK, at least one byte.
            w.cwnd += (w.mss * w.mss / w.cwnd.max(1)).max(1);
        }
    }

    fn on_congestion(&mut self, _now: Instant, flight: u64, w: &mut Window) {
        // RFC 5681 eq. 4: ssthresh = max(FlightSize / 2, 2·SMSS).
        w.ssthresh = (flight / 2).max(2 * w.mss);
        w.cwnd = w.ssthresh;
    }

    fn on_rto(&mut self, _now: Instant, flight: u64, w: &mut Window) {
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
        };
        let mut r = Reno;
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
}
