//! Round-trip time estimation and the retransmission timeout (RFC 6298).

use crate::time::Duration;

/// SRTT, RTTVAR and RTO per RFC 6298, with exponential backoff.
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
        }
    }

    /// RFC 6298 §5.7: the SYN timed out and no RTT sample exists when data transmission
    /// begins: the RTO restarts at 3 s (at least; within the bounds), with no backoff.
    pub fn on_syn_timeout_established(&mut self) {
        if self.srtt.is_none() {
            self.base_rto = Duration::from_secs(3).max(self.min_rto).min(self.max_rto);
            self.backoff = 0;
        }
    }

    /// Take one RTT measurement R (§2.2, §2.3, α = 1/8, β = 1/4), clearing any backoff.
    pub fn on_sample(&mut self, r: Duration) {
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
        self.backoff = 0;
        self.latest = Some(r);
        self.samples += 1;
        self.sum_ns += u128::from(r_ns);
    }

    /// The timer expired: double the RTO (§5.5), up to the maximum.
    pub fn on_backoff(&mut self) {
        self.backoff = (self.backoff + 1).min(32);
    }

    /// Current RTO including backoff.
    pub fn rto(&self) -> Duration {
        let factor = 1u64.checked_shl(self.backoff).unwrap_or(u64::MAX);
        self.base_rto.saturating_mul(factor).min(self.max_rto)
    }

    /// Smoothed RTT, once there is a sample.
    pub fn srtt(&self) -> Option<Duration> {
        self.srtt
    }

    /// RTT variation.
    pub fn rttvar(&self) -> Duration {
        self.rttvar
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
        e.on_sample(Duration::from_millis(500));
        assert_eq!(e.srtt(), Some(Duration::from_millis(500)));
        assert_eq!(e.rttvar(), Duration::from_millis(250));
        // RTO = 500 + 4·250 = 1500 ms.
        assert_eq!(e.rto(), Duration::from_millis(1500));
    }

    #[test]
    fn later_samples_use_alpha_and_beta() {
        let mut e = est();
        e.on_sample(Duration::from_millis(500));
        e.on_sample(Duration::from_millis(600));
        // RTTVAR = 3/4·250 + 1/4·100 = 212.5; SRTT = 7/8·500 + 1/8·600 = 512.5.
        assert_eq!(e.rttvar(), Duration::from_micros(212_500));
        assert_eq!(e.srtt(), Some(Duration::from_micros(512_500)));
        assert_eq!(e.rto(), Duration::from_micros(512_500 + 850_000));
    }

    #[test]
    fn constant_rtt_converges_to_min_rto_floor_and_backoff_doubles() {
        let mut e = est();
        for _ in 0..200 {
            e.on_sample(Duration::from_millis(50));
        }
        // RTTVAR decays towards zero; G = 1 ms keeps RTO ≥ SRTT + 1 ms, and the floor is 200 ms.
        assert_eq!(e.rto(), Duration::from_millis(200));
        e.on_backoff();
        assert_eq!(e.rto(), Duration::from_millis(400));
        for _ in 0..20 {
            e.on_backoff();
        }
        assert_eq!(e.rto(), Duration::from_secs(60));
        e.on_sample(Duration::from_millis(50));
        assert_eq!(e.backoff(), 0);
    }
}
