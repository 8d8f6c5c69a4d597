//! The paper's analytic model (section VI-A): the RTT TCP sees through DAMA (eqs. 3–4) and the
//! transfer time of a file (eq. 5).
//!
//! Eq. 3–4, in time units (the paper counts in frames): with T_f the frame duration,
//!
//! RTT = RTT₀ + (L + β − α)·n_s·T_f
//!
//! where L·n_s·T_f is the system response time (access delay), β ≥ 0 the congestion term and
//! α ≥ 0 the CRA/RBDC gain in superframes (α = L removes the access delay: pure CRA).
//!
//! Eq. 5: T = RTT·f(TCP phase). For f we use the slow-start round count of Cardwell, Savage and
//! Anderson ("Modeling TCP latency", the paper's ref. 13), without losses: one round for the
//! handshake, then rounds of w, w·g, w·g², … segments (g = 1 + 1/b with b segments per ACK)
//! until the window reaches W = min(rwnd, C·RTT); the rest flows at the bottleneck rate C.

use crate::time::{Bitrate, Duration};

/// RTT TCP sees (eq. 4; eq. 3 with `alpha = 0`). `beta` and `alpha` are in superframes.
pub fn rtt(rtt0: Duration, l: f64, n_s: u32, frame: Duration, alpha: f64, beta: f64) -> Duration {
    let sf = frame.as_secs_f64() * f64::from(n_s);
    Duration::from_secs_f64(rtt0.as_secs_f64() + (l + beta - alpha).max(0.0) * sf)
}

/// TCP settings that shape f(TCP phase) in eq. 5.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TcpShape {
    /// Segment payload (bytes).
    pub mss: u64,
    /// Initial window (segments).
    pub initial_window: u64,
    /// Segments acknowledged per ACK (1: every segment; 2: delayed ACKs).
    pub segments_per_ack: f64,
    /// Receive window (bytes).
    pub rwnd: u64,
    /// Bottleneck rate.
    pub capacity: Bitrate,
}

/// Transfer time of `bytes` (eq. 5 with the slow-start f described in the module docs),
/// from the SYN to the last byte's arrival. Returns the time and the number of RTT rounds.
pub fn transfer_time(bytes: u64, rtt: Duration, tcp: &TcpShape) -> (Duration, u32) {
    let r = rtt.as_secs_f64();
    let c = tcp.capacity.bps() as f64 / 8.0;
    let mss = tcp.mss.max(1) as f64;
    let g = 1.0 + 1.0 / tcp.segments_per_ack.max(1.0);
    let w_max = (tcp.rwnd as f64).min(c * r).max(mss);
    let mut t = r; // handshake
    let mut rounds = 1u32;
    let mut sent = 0.0f64;
    let mut w = tcp.initial_window.max(1) as f64 * mss;
    let total = bytes as f64;
    while sent < total {
        if w >= w_max {
            // Window-limited at the bottleneck: the rest flows at C·(W/(C·RTT)).
            let rate = w_max / r;
            t += (total - sent) / rate;
            break;
        }
        let now = w.min(total - sent);
        sent += now;
        // The round's last segment arrives serialisation-late by its round's burst at C.
        t += if sent >= total { r / 2.0 + now / c } else { r };
        rounds += 1;
        w = (w * g).floor().max(w + mss).min(w_max);
    }
    (Duration::from_secs_f64(t), rounds)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eq3_and_eq4_by_hand() {
        let f = Duration::from_millis(24);
        let rtt0 = Duration::from_millis(500);
        // VBDC: 500 + 11·4·24 = 1556 ms.
        assert_eq!(rtt(rtt0, 11.0, 4, f, 0.0, 0.0), Duration::from_millis(1556));
        // CRA (α = L): the physical delay.
        assert_eq!(rtt(rtt0, 11.0, 4, f, 11.0, 0.0), rtt0);
        // Hybrid with α = 5.5 and β = 1: 500 + 6.5·96 = 1124 ms.
        assert_eq!(rtt(rtt0, 11.0, 4, f, 5.5, 1.0), Duration::from_millis(1124));
    }

    #[test]
    fn transfer_time_by_hand() {
        // 10 segments of 1000 B, IW 1, b = 1 (g = 2), RTT 1 s, huge C and rwnd:
        // handshake 1 s; rounds send 1, 2, 4 (3 s), then the last 3 segments: ½ RTT + 3000 B at 1 GB/s (3 µs).
        let tcp = TcpShape {
            mss: 1000,
            initial_window: 1,
            segments_per_ack: 1.0,
            rwnd: 1 << 30,
            capacity: Bitrate(8_000_000_000),
        };
        let (t, rounds) = transfer_time(10_000, Duration::from_secs(1), &tcp);
        assert_eq!(rounds, 5);
        assert!((t.as_secs_f64() - 4.500_003).abs() < 1e-6, "{t:?}");
        // Window-limited: C = 8 kB/s, RTT 1 s → W = 8000 B; 1 s handshake, 1 KB, 2 KB, 4 KB in
        // three rounds (7 KB), then the window is 8 KB = C·RTT: the last 93 KB at 8 kB/s.
        let tcp = TcpShape {
            capacity: Bitrate(64_000),
            ..tcp
        };
        let (t, _) = transfer_time(100_000, Duration::from_secs(1), &tcp);
        assert!(
            (t.as_secs_f64() - (1.0 + 3.0 + 93_000.0 / 8_000.0)).abs() < 1e-9,
            "{t:?}"
        );
    }

    #[test]
    fn transfer_time_scales_with_the_rtt_in_slow_start() {
        // Eq. 5: far from the capacity, T ∝ RTT, so VBDC/CRA ≈ 1556/500 ≈ 3.1.
        let tcp = TcpShape {
            mss: 1460,
            initial_window: 2,
            segments_per_ack: 2.0,
            rwnd: 1 << 20,
            capacity: Bitrate(1_000_000_000),
        };
        let (a, _) = transfer_time(500_000, Duration::from_millis(500), &tcp);
        let (b, _) = transfer_time(500_000, Duration::from_millis(1556), &tcp);
        let ratio = b.as_secs_f64() / a.as_secs_f64();
        assert!((ratio - 3.112).abs() < 0.01, "{ratio}");
    }
}
