//! Congestion window growth and reduction: a narrow trait, dispatched through [`AnyCc`].
//!
//! Loss *recovery* (which segment to retransmit, window inflation) lives in the endpoint; the
//! controller only decides how cwnd grows on ACKs and what ssthresh becomes on a congestion event.

mod bbr;
mod cubic;
mod cubic_linux;
pub(crate) mod hystart;
mod reno;

pub use bbr::{Bbr, BbrAck, BbrMode, CaState};
pub use cubic::Cubic;
pub use cubic_linux::LinuxCubic;
pub use hystart::{HystartPlusPlus, LinuxHystart};
pub use reno::Reno;

use super::config::{CcAlgorithm, CubicVariant, Hystart};
use crate::time::{Duration, Instant};

/// The window state a controller reads and changes, in bytes.
#[derive(Clone, Copy, Debug)]
pub struct Window {
    /// Congestion window.
    pub cwnd: u64,
    /// Slow-start threshold (`u64::MAX` = unbounded).
    pub ssthresh: u64,
    /// Sender maximum segment size (payload bytes).
    pub mss: u64,
    /// Most bytes one ACK may add in slow start (RFC 3465's L·SMSS; RFC 5681: SMSS).
    pub abc_limit: u64,
    /// Slow start stops at ssthresh and the rest of the ACK counts in congestion avoidance
    /// (`slow_start_to_ssthresh`; Linux `tcp_slow_start`).
    pub ss_to_ssthresh: bool,
}

impl Window {
    /// Whether the sender is in slow start (cwnd < ssthresh, RFC 5681 §3.1).
    pub fn in_slow_start(&self) -> bool {
        self.cwnd < self.ssthresh
    }
}

/// A congestion controller's hooks. All take `now` so that time-based algorithms (CUBIC) need no
/// clock of their own.
pub trait CongestionControl {
    /// `acked` new bytes were cumulatively acknowledged outside loss recovery.
    fn on_ack(&mut self, now: Instant, acked: u64, w: &mut Window, srtt: Option<Duration>);
    /// A congestion event (fast retransmit): set ssthresh, and cwnd to the post-recovery value.
    fn on_congestion(&mut self, now: Instant, flight: u64, w: &mut Window);
    /// A retransmission timeout: set ssthresh; the endpoint sets cwnd to the loss window.
    fn on_rto(&mut self, now: Instant, flight: u64, w: &mut Window);
    /// An ACK gave the RTT sample `rtt` (from timestamps, a timed segment or SACKed data) when
    /// SND.UNA is `snd_una` and SND.NXT `snd_nxt` (offsets). For delay-based slow-start exit.
    fn on_rtt_sample(&mut self, _now: Instant, _rtt: Duration, _round: Round, _w: &mut Window) {}
    /// After [`Self::on_rto`]: the timeout's instant and SND.NXT then.
    fn on_rto_round(&mut self, _now: Instant, _snd_nxt: u64) {}
}

/// Where an ACK leaves the sender, for round counting and pacing-rate estimates.
#[derive(Clone, Copy, Debug)]
pub struct Round {
    /// SND.UNA after the ACK (an offset).
    pub snd_una: u64,
    /// Highest offset sent.
    pub snd_nxt: u64,
    /// Smoothed RTT after the sample, if any.
    pub srtt: Option<Duration>,
}

/// The in-tree controllers (enum dispatch, no `Box<dyn>`).
#[derive(Clone, Debug)]
pub enum AnyCc {
    /// RFC 5681.
    Reno(Reno),
    /// RFC 9438.
    Cubic(Cubic),
    /// CUBIC in Linux's arithmetic (`tcp_cubic.c`).
    LinuxCubic(LinuxCubic),
    /// BBR v1 (`tcp_bbr.c`); boxed, being four times the size of the others. It sets cwnd
    /// itself on every ACK ([`Bbr::on_ack`]), so the window hooks below only save the window.
    Bbr(Box<Bbr>),
}

impl AnyCc {
    /// A controller for `algo`; `ca_byte_counting`: Reno counts bytes acknowledged, not ACKs,
    /// in congestion avoidance (CUBIC always counts segments acknowledged); `hystart =
    /// Linux` gives CUBIC Linux's HyStart (other values are not the controller's business);
    /// `cubic` picks RFC 9438's CUBIC or Linux's; `seed` draws BBR's random gain phase.
    pub fn new(
        algo: CcAlgorithm,
        ca_byte_counting: bool,
        hystart: Hystart,
        cubic: CubicVariant,
        seed: u64,
    ) -> Self {
        let linux_hystart = hystart == Hystart::Linux;
        match (algo, cubic) {
            (CcAlgorithm::Bbr, _) => Self::Bbr(Box::new(Bbr::new(seed))),
            (CcAlgorithm::Reno, _) => Self::Reno(Reno::new(ca_byte_counting)),
            (CcAlgorithm::Cubic, CubicVariant::Rfc9438) => Self::Cubic(Cubic::new(linux_hystart)),
            (CcAlgorithm::Cubic, CubicVariant::Linux) => {
                Self::LinuxCubic(LinuxCubic::new(linux_hystart))
            }
        }
    }
}

impl CongestionControl for AnyCc {
    fn on_ack(&mut self, now: Instant, acked: u64, w: &mut Window, srtt: Option<Duration>) {
        match self {
            Self::Reno(c) => c.on_ack(now, acked, w, srtt),
            Self::Cubic(c) => c.on_ack(now, acked, w, srtt),
            Self::LinuxCubic(c) => c.on_ack(now, acked, w, srtt),
            Self::Bbr(_) => {}
        }
    }
    fn on_congestion(&mut self, now: Instant, flight: u64, w: &mut Window) {
        match self {
            Self::Reno(c) => c.on_congestion(now, flight, w),
            Self::Cubic(c) => c.on_congestion(now, flight, w),
            Self::LinuxCubic(c) => c.on_congestion(now, flight, w),
            Self::Bbr(c) => c.save_cwnd(w),
        }
    }
    fn on_rto(&mut self, now: Instant, flight: u64, w: &mut Window) {
        match self {
            Self::Reno(c) => c.on_rto(now, flight, w),
            Self::Cubic(c) => c.on_rto(now, flight, w),
            Self::LinuxCubic(c) => c.on_rto(now, flight, w),
            Self::Bbr(c) => c.save_cwnd(w),
        }
    }
    fn on_rtt_sample(&mut self, now: Instant, rtt: Duration, round: Round, w: &mut Window) {
        match self {
            Self::Reno(c) => c.on_rtt_sample(now, rtt, round, w),
            Self::Cubic(c) => c.on_rtt_sample(now, rtt, round, w),
            Self::LinuxCubic(c) => c.on_rtt_sample(now, rtt, round, w),
            Self::Bbr(_) => {}
        }
    }
    fn on_rto_round(&mut self, now: Instant, snd_nxt: u64) {
        match self {
            Self::Reno(c) => c.on_rto_round(now, snd_nxt),
            Self::Cubic(c) => c.on_rto_round(now, snd_nxt),
            Self::LinuxCubic(c) => c.on_rto_round(now, snd_nxt),
            Self::Bbr(_) => {}
        }
    }
}

impl AnyCc {
    /// Linux HyStart's detections so far: (ACK train, delay); (0, 0) without it.
    pub fn hystart_detections(&self) -> (u32, u32) {
        match self {
            Self::Cubic(c) => c.hystart_detections(),
            Self::LinuxCubic(c) => c.hystart_detections(),
            Self::Reno(_) | Self::Bbr(_) => (0, 0),
        }
    }

    /// BBR, which owns cwnd and paces: the endpoint's window rules stand aside for it.
    pub fn bbr(&self) -> Option<&Bbr> {
        match self {
            Self::Bbr(b) => Some(b),
            _ => None,
        }
    }

    /// BBR, mutably.
    pub fn bbr_mut(&mut self) -> Option<&mut Bbr> {
        match self {
            Self::Bbr(b) => Some(b),
            _ => None,
        }
    }
}

/// Slow start per RFC 5681 §3.1 / RFC 3465: cwnd += min(N, L·SMSS) for each ACK of N new
/// bytes (L = 1 unless configured). With `ss_to_ssthresh`, as Linux's `tcp_slow_start`: cwnd
/// goes at most to ssthresh, and the bytes beyond what took it there are returned for
/// congestion avoidance (0 otherwise).
pub(crate) fn slow_start(acked: u64, w: &mut Window) -> u64 {
    let grow = acked.min(w.abc_limit.max(w.mss));
    if !w.ss_to_ssthresh {
        w.cwnd += grow;
        return 0;
    }
    let grow = grow.min(w.ssthresh.saturating_sub(w.cwnd));
    w.cwnd += grow;
    acked - grow
}
