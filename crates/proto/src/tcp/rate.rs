//! Delivery rate estimation (draft-cheng-iccrg-delivery-rate-estimation-02; Linux
//! `tcp_rate.c`): each transmission remembers how much had been delivered when it left, and an
//! ACK that delivers it yields "bytes delivered since then / time it took", the sample BBR
//! builds its bandwidth model from.
//!
//! Byte counts where Linux counts packets (`tp->delivered`): the model's segments are not all
//! full-sized, and a byte count keeps a half segment from weighing as much as a full one.

use crate::time::{Duration, Instant};

/// What a transmission remembers (Linux `tcp_skb_cb.tx`).
#[derive(Clone, Copy, Debug, Default, Eq, PartialEq)]
pub(crate) struct TxState {
    /// Bytes delivered when it was sent (`tx.delivered`).
    pub delivered: u64,
    /// When the delivery count last grew before it was sent (`tx.delivered_mstamp`); `None`
    /// once SACKed, so that the later cumulative ACK does not use it again.
    pub delivered_time: Option<Instant>,
    /// Send time of the first transmission of the flight it belongs to (`tx.first_tx_mstamp`).
    pub first_sent: Instant,
    /// Sent while the sender was application-limited.
    pub app_limited: bool,
}

/// One ACK's delivery rate sample (Linux `struct rate_sample`).
#[derive(Clone, Copy, Debug, Default, Eq, PartialEq)]
pub struct RateSample {
    /// Bytes delivered over `interval` (`rs->delivered`).
    pub delivered: u64,
    /// The longer of the send and the ACK phase; `None` when the sample is invalid (nothing
    /// delivered with a send record, or shorter than the minimum RTT).
    pub interval: Option<Duration>,
    /// Delivery count when the most recently sent delivered segment left (`prior_delivered`).
    pub prior_delivered: u64,
    /// Bytes this ACK newly acknowledged or SACKed (`acked_sacked`).
    pub acked_sacked: u64,
    /// Bytes this ACK newly marked lost (`losses`).
    pub losses: u64,
    /// The sample describes an application-limited flight (`is_app_limited`).
    pub is_app_limited: bool,
    /// The ACK's RTT sample, if it gave one (`rtt_us`).
    pub rtt: Option<Duration>,
    /// Bytes in flight before the ACK (`prior_in_flight`).
    pub prior_in_flight: u64,
}

impl RateSample {
    /// Delivery rate in bytes per second, if the sample is valid.
    pub fn rate(&self) -> Option<u64> {
        let ns = self.interval?.as_nanos();
        (ns > 0).then(|| (u128::from(self.delivered) * 1_000_000_000 / u128::from(ns)) as u64)
    }
}

/// The most recently sent segment an ACK delivered, the one its sample is taken from.
#[derive(Clone, Copy, Debug)]
struct Newest {
    prior_delivered: u64,
    prior_time: Instant,
    app_limited: bool,
    end: u64,
    send_phase: Duration,
}

/// The connection's side of the estimator.
#[derive(Clone, Debug, Default)]
pub(crate) struct RateSampler {
    /// Bytes delivered (acknowledged or SACKed) so far (`tp->delivered`).
    delivered: u64,
    /// When `delivered` last grew (`delivered_mstamp`).
    delivered_time: Option<Instant>,
    /// Send time of the most recently sent segment delivered (`first_tx_mstamp`).
    first_sent: Instant,
    /// Non-zero: the flight up to this delivery count was application-limited
    /// (`tp->app_limited`).
    app_limited: u64,
    /// Bytes marked lost so far (`tp->lost`).
    lost: u64,
    /// This ACK so far.
    newest: Option<Newest>,
    acked_sacked: u64,
    /// Send time of the most recently sent segment this ACK delivered that was never
    /// retransmitted: its RTT is the ACK's sample (Linux `ca_rtt_us`, from `last_ackt`).
    newest_clean: Option<Instant>,
    /// Least RTT sample over the connection (`tcp_min_rtt`; Linux keeps a 300 s window, which
    /// the runs this model serves do not outlast).
    min_rtt: Option<Duration>,
}

impl RateSampler {
    /// A segment goes out at `now` with nothing (`idle`) or something already in flight
    /// (`tcp_rate_skb_sent`): its record.
    pub fn on_sent(&mut self, now: Instant, idle: bool) -> TxState {
        if idle || self.delivered_time.is_none() {
            // Start the sample at this send: ACKs after it show what the network delivered
            // between now and then.
            self.first_sent = now;
            self.delivered_time = Some(now);
        }
        TxState {
            delivered: self.delivered,
            delivered_time: self.delivered_time,
            first_sent: self.first_sent,
            app_limited: self.app_limited != 0,
        }
    }

    /// The ACK being processed delivers `len` bytes of a segment last sent at `xmit`, ending at
    /// `end` (`tcp_rate_skb_delivered`). `sacked`: delivered by SACK, so its record is spent.
    pub fn on_delivered(
        &mut self,
        tx: &mut TxState,
        xmit: Instant,
        end: u64,
        len: u64,
        sacked: bool,
    ) {
        self.acked_sacked += len;
        let Some(prior_time) = tx.delivered_time else {
            return;
        };
        let newer = match self.newest {
            None => true,
            Some(n) => xmit > self.first_sent || (xmit == self.first_sent && end > n.end),
        };
        if newer {
            self.first_sent = xmit;
            self.newest = Some(Newest {
                prior_delivered: tx.delivered,
                prior_time,
                app_limited: tx.app_limited,
                end,
                send_phase: xmit.saturating_since(tx.first_sent),
            });
        }
        if sacked {
            tx.delivered_time = None;
        }
    }

    /// The ACK being processed delivers a segment first sent at `sent` and never retransmitted.
    pub fn on_clean_delivery(&mut self, sent: Instant) {
        self.newest_clean = Some(self.newest_clean.map_or(sent, |t| t.max(sent)));
    }

    /// Record an RTT sample for the minimum the validity check uses.
    pub fn on_rtt(&mut self, rtt: Duration) {
        self.min_rtt = Some(self.min_rtt.map_or(rtt, |m| m.min(rtt)));
    }

    /// `lost` more bytes were marked lost.
    pub fn on_lost(&mut self, lost: u64) {
        self.lost += lost;
    }

    /// Close the ACK (`tcp_rate_gen`): count what it delivered and build its sample. Its RTT is
    /// that of the newest segment delivered never retransmitted, at the clock's full
    /// resolution as Linux's skb timestamps; `rtt` (from the timestamp echo, in whole
    /// milliseconds) only when there is none.
    pub fn generate(
        &mut self,
        now: Instant,
        losses: u64,
        rtt: Option<Duration>,
        prior_in_flight: u64,
    ) -> RateSample {
        let rtt = self
            .newest_clean
            .take()
            .map(|t| now.saturating_since(t))
            .or(rtt);
        if let Some(r) = rtt {
            self.on_rtt(r);
        }
        let delivered_now = std::mem::take(&mut self.acked_sacked);
        self.delivered += delivered_now;
        if self.app_limited != 0 && self.delivered > self.app_limited {
            self.app_limited = 0;
        }
        if delivered_now > 0 {
            self.delivered_time = Some(now);
        }
        let mut rs = RateSample {
            acked_sacked: delivered_now,
            losses,
            rtt,
            prior_in_flight,
            ..RateSample::default()
        };
        let Some(n) = self.newest.take() else {
            return rs;
        };
        rs.prior_delivered = n.prior_delivered;
        rs.is_app_limited = n.app_limited;
        rs.delivered = self.delivered - n.prior_delivered;
        let ack_phase = now.saturating_since(n.prior_time);
        let interval = n.send_phase.max(ack_phase);
        // Shorter than the minimum RTT: the ACK stretched or compressed the sample.
        rs.interval = (interval >= self.min_rtt.unwrap_or(Duration::ZERO)).then_some(interval);
        rs
    }

    /// Nothing is left to send, the window has room and no loss waits for a retransmission:
    /// samples until the delivery count passes what is in flight now are application-limited
    /// (`tcp_rate_check_app_limited`).
    pub fn on_app_limited(&mut self, in_flight: u64) {
        self.app_limited = (self.delivered + in_flight).max(1);
    }

    /// Bytes delivered so far.
    pub fn delivered(&self) -> u64 {
        self.delivered
    }

    /// Bytes marked lost so far.
    pub fn lost(&self) -> u64 {
        self.lost
    }

    /// When the delivery count last grew.
    pub fn delivered_time(&self) -> Option<Instant> {
        self.delivered_time
    }

    /// Whether the sender is application-limited now.
    pub fn is_app_limited(&self) -> bool {
        self.app_limited != 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Instant {
        Instant::ZERO + Duration::from_millis(n)
    }

    /// Ten segments of 1000 bytes sent 1 ms apart from idle at t = 0, each acknowledged 100 ms
    /// after it left: the tenth ACK's sample is the 10 000 bytes delivered since the first send
    /// over max(send phase 9 ms, ACK phase 109 ms): 91 743 B/s.
    #[test]
    fn a_flight_from_idle_gives_delivered_over_the_ack_phase() {
        let mut r = RateSampler::default();
        let mut tx: Vec<TxState> = (0..10).map(|i| r.on_sent(ms(i), i == 0)).collect();
        let mut last = RateSample::default();
        for (i, t) in tx.iter_mut().enumerate() {
            let i = i as u64;
            r.on_rtt(Duration::from_millis(100));
            r.on_delivered(t, ms(i), (i + 1) * 1000, 1000, false);
            last = r.generate(ms(100 + i), 0, Some(Duration::from_millis(100)), 0);
        }
        assert_eq!(last.delivered, 10_000);
        assert_eq!(last.prior_delivered, 0);
        assert_eq!(last.interval, Some(Duration::from_millis(109)));
        assert_eq!(last.rate(), Some(91_743));
        assert_eq!(r.delivered(), 10_000);
    }

    /// The second flight, sent as the first one's ACKs arrive, measures only what was
    /// delivered since each of its segments left: 1000 bytes per 1 ms of ACK spacing
    /// once the sample spans a whole round.
    #[test]
    fn a_second_flight_samples_the_ack_rate() {
        let mut r = RateSampler::default();
        r.on_rtt(Duration::from_millis(100));
        let mut first: Vec<TxState> = (0..10).map(|i| r.on_sent(ms(i), i == 0)).collect();
        let mut second = Vec::new();
        for (i, t) in first.iter_mut().enumerate() {
            let i = i as u64;
            r.on_delivered(t, ms(i), (i + 1) * 1000, 1000, false);
            r.generate(ms(100 + i), 0, None, 0);
            second.push(r.on_sent(ms(100 + i), false));
        }
        // The second flight's first segment left at 100 ms with 1000 delivered; acknowledged
        // at 200 ms, it finds 10 000 bytes delivered since, over 100 ms.
        r.on_delivered(&mut second[0], ms(100), 11_000, 1000, false);
        let rs = r.generate(ms(200), 0, None, 0);
        assert_eq!((rs.prior_delivered, rs.delivered), (1000, 10_000));
        assert_eq!(rs.interval, Some(Duration::from_millis(100)));
        assert_eq!(rs.rate(), Some(100_000));
    }

    /// A sample shorter than the minimum RTT is invalid (an ACK compressed by the path).
    #[test]
    fn a_sample_shorter_than_min_rtt_is_invalid() {
        let mut r = RateSampler::default();
        r.on_rtt(Duration::from_millis(100));
        let mut t = r.on_sent(ms(0), true);
        r.on_delivered(&mut t, ms(0), 1000, 1000, false);
        let rs = r.generate(ms(50), 0, None, 0);
        assert_eq!(rs.interval, None);
        assert_eq!(rs.rate(), None);
        assert_eq!(rs.acked_sacked, 1000);
    }

    /// A SACKed segment's record is spent: the cumulative ACK that covers it later counts its
    /// bytes (Linux counts the SACK) but takes no sample from it.
    #[test]
    fn a_sacked_record_is_not_used_twice() {
        let mut r = RateSampler::default();
        let mut t = r.on_sent(ms(0), true);
        r.on_delivered(&mut t, ms(0), 1000, 1000, true);
        assert_eq!(t.delivered_time, None);
        assert!(r.generate(ms(10), 0, None, 0).interval.is_some());
        r.on_delivered(&mut t, ms(0), 1000, 0, false);
        let rs = r.generate(ms(20), 0, None, 0);
        assert_eq!((rs.interval, rs.delivered), (None, 0));
    }

    /// Among the segments one ACK delivers, the sample comes from the one sent last.
    #[test]
    fn the_sample_comes_from_the_most_recently_sent() {
        let mut r = RateSampler::default();
        let mut a = r.on_sent(ms(0), true);
        let mut b = r.on_sent(ms(5), false);
        r.on_delivered(&mut b, ms(5), 2000, 1000, true);
        r.on_delivered(&mut a, ms(0), 1000, 1000, false);
        let rs = r.generate(ms(30), 0, None, 0);
        // b's send phase is 5 ms; the ACK phase from the start is 30 ms.
        assert_eq!(rs.interval, Some(Duration::from_millis(30)));
        assert_eq!(rs.delivered, 2000);
    }

    /// Sent while application-limited: the sample says so until the delivery count passes
    /// what was in flight when the application ran dry.
    #[test]
    fn app_limited_marks_last_until_the_flight_is_delivered() {
        let mut r = RateSampler::default();
        r.on_app_limited(3000);
        let mut t = r.on_sent(ms(0), true);
        assert!(t.app_limited);
        r.on_delivered(&mut t, ms(0), 3000, 3000, false);
        let rs = r.generate(ms(10), 0, None, 0);
        assert!(rs.is_app_limited);
        assert!(r.is_app_limited(), "3000 delivered is not past 3000");
        let mut u = r.on_sent(ms(10), true);
        r.on_delivered(&mut u, ms(10), 4000, 1000, false);
        r.generate(ms(20), 0, None, 0);
        assert!(!r.is_app_limited());
    }

    /// The ACK's RTT comes from the newest never-retransmitted segment it delivers, to the
    /// nanosecond, before any timestamp-echo sample; it also lowers the minimum.
    #[test]
    fn the_rtt_is_the_newest_clean_segments_at_full_resolution() {
        let mut r = RateSampler::default();
        let mut t = r.on_sent(ms(0), true);
        r.on_delivered(&mut t, ms(0), 1000, 1000, false);
        r.on_clean_delivery(Instant(1_000_000));
        r.on_clean_delivery(Instant(300_000));
        let rs = r.generate(Instant(601_264_000), 0, Some(Duration::from_millis(600)), 0);
        assert_eq!(rs.rtt, Some(Duration(600_264_000)));
        let rs = r.generate(Instant(700_000_000), 0, Some(Duration::from_millis(599)), 0);
        assert_eq!(
            rs.rtt,
            Some(Duration::from_millis(599)),
            "no clean segment: the echo"
        );
        assert_eq!(r.min_rtt, Some(Duration::from_millis(599)));
    }
}
