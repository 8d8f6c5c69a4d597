//! A UDP constant-bit-rate source and the sink that measures it, as iperf3's UDP mode does:
//! every datagram carries a send time and a sequence number ([`UdpStamp`]); the sink counts
//! what arrived, what is missing from the sequence (lost) and what came out of order, and
//! keeps the RFC 3550 §6.4.1 interarrival jitter estimate.
//!
//! Both are sans-IO: the host asks the source what is due at `now` and hands the sink each
//! parsed datagram with its arrival time.

use crate::wire::UdpStamp;
use crate::{Bitrate, Instant};

/// A constant-bit-rate source: datagrams of `packet_size` payload bytes, the k-th at
/// `start + k · packet_size · 8 / rate` (exact to the nanosecond, no drift), until `stop`.
/// The rate counts UDP payload bits, as iperf3's `-b` and ns-3's `OnOffApplication` do.
#[derive(Clone, Debug)]
pub struct CbrSource {
    rate: Bitrate,
    packet_size: u32,
    start: Instant,
    stop: Option<Instant>,
    sent: u64,
}

impl CbrSource {
    /// A source sending `packet_size`-byte payloads at `rate` from `start` until `stop`
    /// (exclusive; `None`: forever). A zero rate sends nothing.
    pub fn new(rate: Bitrate, packet_size: u32, start: Instant, stop: Option<Instant>) -> Self {
        Self {
            rate,
            packet_size,
            start,
            stop,
            sent: 0,
        }
    }

    /// Payload bytes per datagram.
    pub fn packet_size(&self) -> u32 {
        self.packet_size
    }

    /// When datagram number `k` is due.
    fn at(&self, k: u64) -> Option<Instant> {
        if self.rate.bps() == 0 {
            return None;
        }
        let ns = u128::from(k) * u128::from(self.packet_size) * 8 * 1_000_000_000
            / u128::from(self.rate.bps());
        let t = u64::try_from(ns).ok()?.checked_add(self.start.as_nanos())?;
        let t = Instant(t);
        self.stop.is_none_or(|s| t < s).then_some(t)
    }

    /// When the next datagram is due (`None`: the source has finished).
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.at(self.sent)
    }

    /// The stamp of the next datagram if it is due at `now` (call until `None`).
    pub fn poll_datagram(&mut self, now: Instant) -> Option<UdpStamp> {
        let t = self.at(self.sent).filter(|&t| t <= now)?;
        let stamp = UdpStamp {
            sent_ns: t.as_nanos(),
            seq: self.sent,
        };
        self.sent += 1;
        Some(stamp)
    }

    /// Datagrams sent so far.
    pub fn packets_sent(&self) -> u64 {
        self.sent
    }

    /// Payload bytes sent so far.
    pub fn bytes_sent(&self) -> u64 {
        self.sent * u64::from(self.packet_size)
    }

    /// Whether every datagram has been sent (never, without a stop time).
    pub fn is_done(&self) -> bool {
        self.poll_timeout().is_none()
    }
}

/// What a [`UdpSink`] has measured.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct UdpSinkStats {
    /// Datagrams received.
    pub packets: u64,
    /// Payload bytes received.
    pub bytes: u64,
    /// Datagrams missing: one more than the highest sequence number seen, minus `packets`
    /// (iperf3's "lost"; datagrams still in flight past the highest seen are not counted).
    pub lost: u64,
    /// Datagrams whose sequence number was below one already seen.
    pub out_of_order: u64,
    /// One more than the highest sequence number received (iperf3's packet count).
    pub expected: u64,
    /// RFC 3550 interarrival jitter, seconds.
    pub jitter_s: f64,
}

/// The receiving end of a CBR flow.
#[derive(Clone, Debug, Default)]
pub struct UdpSink {
    packets: u64,
    bytes: u64,
    next_seq: u64,
    out_of_order: u64,
    /// Previous datagram's transit time (arrival − send), nanoseconds.
    transit: Option<i128>,
    /// Jitter, nanoseconds.
    jitter: f64,
}

impl UdpSink {
    /// A sink that has received nothing.
    pub fn new() -> Self {
        Self::default()
    }

    /// A datagram of `payload_len` bytes stamped `stamp` arrived at `now`.
    pub fn handle_datagram(&mut self, now: Instant, stamp: UdpStamp, payload_len: u32) {
        self.packets += 1;
        self.bytes += u64::from(payload_len);
        if stamp.seq >= self.next_seq {
            self.next_seq = stamp.seq + 1;
        } else {
            self.out_of_order += 1;
        }
        // RFC 3550 §6.4.1: J += (|D(i-1,i)| - J) / 16, in arrival order, as iperf3 does.
        let transit = i128::from(now.as_nanos()) - i128::from(stamp.sent_ns);
        if let Some(prev) = self.transit {
            let d = (transit - prev).unsigned_abs() as f64;
            self.jitter += (d - self.jitter) / 16.0;
        }
        self.transit = Some(transit);
    }

    /// What was measured so far.
    pub fn stats(&self) -> UdpSinkStats {
        UdpSinkStats {
            packets: self.packets,
            bytes: self.bytes,
            lost: self.next_seq.saturating_sub(self.packets),
            out_of_order: self.out_of_order,
            expected: self.next_seq,
            jitter_s: self.jitter / 1e9,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Duration;
    use proptest::prelude::*;

    #[test]
    fn cbr_schedule_is_exact_and_stops() {
        // 1470 B at 400 kb/s: one datagram every 29.4 ms.
        let start = Instant::ZERO + Duration::from_secs(1);
        let stop = start + Duration::from_millis(100);
        let mut s = CbrSource::new(Bitrate::from_bps(400_000), 1470, start, Some(stop));
        assert_eq!(s.poll_timeout(), Some(start));
        assert!(s.poll_datagram(Instant(start.as_nanos() - 1)).is_none());
        let mut times = Vec::new();
        while let Some(t) = s.poll_timeout() {
            let st = s.poll_datagram(t).expect("due");
            times.push((st.sent_ns - start.as_nanos(), st.seq));
        }
        assert_eq!(
            times,
            [(0, 0), (29_400_000, 1), (58_800_000, 2), (88_200_000, 3)]
        );
        assert_eq!(
            (s.packets_sent(), s.bytes_sent(), s.is_done()),
            (4, 5880, true)
        );
        assert!(CbrSource::new(Bitrate::from_bps(0), 100, start, None).is_done());
    }

    #[test]
    fn a_late_poll_sends_everything_due_with_its_own_stamp() {
        let mut s = CbrSource::new(Bitrate::from_bps(8_000), 1000, Instant::ZERO, None);
        let now = Instant::ZERO + Duration::from_millis(2500);
        let stamps: Vec<_> = std::iter::from_fn(|| s.poll_datagram(now)).collect();
        assert_eq!(
            stamps.iter().map(|s| s.sent_ns).collect::<Vec<_>>(),
            [0, 1_000_000_000, 2_000_000_000]
        );
    }

    #[test]
    fn sink_counts_loss_reordering_and_jitter() {
        let mut k = UdpSink::new();
        let ms = |x: u64| Instant::ZERO + Duration::from_millis(x);
        let st = |t: u64, seq| UdpStamp {
            sent_ns: ms(t).as_nanos(),
            seq,
        };
        // Constant 100 ms transit: no jitter.
        k.handle_datagram(ms(100), st(0, 0), 100);
        k.handle_datagram(ms(110), st(10, 1), 100);
        assert_eq!(k.stats().jitter_s, 0.0);
        // Seq 2 lost, 4 arrives before 3, 16 ms more transit for 4.
        k.handle_datagram(ms(146), st(30, 4), 100);
        k.handle_datagram(ms(140), st(40, 3), 200);
        let s = k.stats();
        assert_eq!((s.packets, s.bytes, s.lost, s.out_of_order), (4, 500, 1, 1));
        // J = 16/16 = 1 ms, then |(100) - (116)| = 16: J = 1 + (16 - 1)/16 = 1.9375 ms.
        assert!((s.jitter_s - 1.9375e-3).abs() < 1e-12, "{}", s.jitter_s);
    }

    proptest! {
        /// Over any interval, a source sends ⌈interval · rate / (8 · size)⌉ datagrams, each at
        /// its exact instant; a sink that receives them after a constant delay sees no loss and
        /// no jitter.
        #[test]
        fn counts_match_the_rate(rate in 1_000u64..10_000_000, size in 16u32..9000,
                                 ms in 1u64..2_000, delay in 0u64..1_000_000_000) {
            let stop = Instant::ZERO + Duration::from_millis(ms);
            let mut s = CbrSource::new(Bitrate::from_bps(rate), size, Instant::ZERO, Some(stop));
            let mut k = UdpSink::new();
            while let Some(t) = s.poll_timeout() {
                let st = s.poll_datagram(t).expect("due");
                k.handle_datagram(t + Duration::from_nanos(delay), st, size);
            }
            let bits_ns = u128::from(size) * 8 * 1_000_000_000;
            let want = (u128::from(ms) * 1_000_000 * u128::from(rate)).div_ceil(bits_ns);
            prop_assert_eq!(u128::from(s.packets_sent()), want);
            let st = k.stats();
            prop_assert_eq!((st.packets, st.lost, st.out_of_order), (s.packets_sent(), 0, 0));
            prop_assert_eq!(st.jitter_s, 0.0);
        }
    }
}
