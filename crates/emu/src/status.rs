//! The live status line of `satpep emu`: once a second, what each busy link delivered in the
//! last second, its queue now, its drops so far, and the release lateness so far.
//!
//! On a terminal the line is redrawn in place (`\r`, erase to end of line) on stderr and
//! erased before anything else is written there or to stdout, so it never interleaves with
//! the commands' output (which the emulator itself copies to stdout). When stderr is not a
//! terminal and the line was asked for, each second is a line of its own.

use std::fmt::Write;

/// One link's counters at one instant.
#[derive(Clone, Debug, Default, Eq, PartialEq)]
pub struct LinkSample {
    /// Link name.
    pub name: String,
    /// Bytes delivered so far.
    pub delivered_bytes: u64,
    /// Packets queued now.
    pub queue_packets: u64,
    /// Packets dropped so far (queue overflow and line errors).
    pub drops: u64,
}

/// The status text for the second that ended at `elapsed_s` (run time): links in scenario
/// order that delivered something in the last `dt_s` seconds, hold a queue, or dropped
/// something in it; `prev` holds the same links a second earlier. Links with nothing going on
/// are left out so that the line fits a terminal; `idle` when none is busy.
pub fn status_line(
    elapsed_s: f64,
    dt_s: f64,
    prev: &[LinkSample],
    now: &[LinkSample],
    late_p99_us: f64,
) -> String {
    let mut s = format!("[{elapsed_s:>5.0} s]");
    let mut busy = false;
    for (i, l) in now.iter().enumerate() {
        let before = prev.get(i).cloned().unwrap_or_default();
        let bytes = l.delivered_bytes.saturating_sub(before.delivered_bytes);
        let new_drops = l.drops.saturating_sub(before.drops);
        if bytes == 0 && l.queue_packets == 0 && new_drops == 0 {
            continue;
        }
        busy = true;
        let bps = if dt_s > 0.0 {
            bytes as f64 * 8.0 / dt_s
        } else {
            0.0
        };
        let _ = write!(s, " {} {} q {}", l.name, rate(bps), l.queue_packets);
        if l.drops > 0 {
            let _ = write!(s, " drop {}", l.drops);
        }
        s.push_str(" |");
    }
    if !busy {
        s.push_str(" idle |");
    }
    let _ = write!(s, " late p99 {late_p99_us:.0} µs");
    s
}

/// A bit rate with three significant digits and a unit people read at a glance.
pub fn rate(bps: f64) -> String {
    let (v, unit) = if bps >= 1e9 {
        (bps / 1e9, "Gb/s")
    } else if bps >= 1e6 {
        (bps / 1e6, "Mb/s")
    } else if bps >= 1e3 {
        (bps / 1e3, "kb/s")
    } else {
        (bps, "b/s")
    };
    if v >= 100.0 || unit == "b/s" {
        format!("{v:.0} {unit}")
    } else if v >= 10.0 {
        format!("{v:.1} {unit}")
    } else {
        format!("{v:.2} {unit}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn l(name: &str, bytes: u64, q: u64, drops: u64) -> LinkSample {
        LinkSample {
            name: name.into(),
            delivered_bytes: bytes,
            queue_packets: q,
            drops,
        }
    }

    #[test]
    fn busy_links_show_their_last_second_idle_ones_are_left_out() {
        let prev = [
            l("forward", 1_000_000, 0, 3),
            l("return", 10_000, 0, 0),
            l("lan", 0, 0, 0),
        ];
        // 1 250 000 bytes in one second = 10 Mb/s; 4 000 bytes = 32 kb/s.
        let now = [
            l("forward", 2_250_000, 250, 12),
            l("return", 14_000, 1, 0),
            l("lan", 0, 0, 0),
        ];
        assert_eq!(
            status_line(12.0, 1.0, &prev, &now, 45.4),
            "[   12 s] forward 10.0 Mb/s q 250 drop 12 | return 32.0 kb/s q 1 | late p99 45 µs"
        );
        // Over half a second, the same bytes are twice the rate.
        assert!(status_line(1.0, 0.5, &prev, &now, 0.0).contains("forward 20.0 Mb/s"));
    }

    #[test]
    fn nothing_moving_says_idle() {
        let s = [l("forward", 5, 0, 2)];
        assert_eq!(
            status_line(3.0, 1.0, &s, &s, 0.0),
            "[    3 s] idle | late p99 0 µs"
        );
    }

    #[test]
    fn rates_keep_three_digits() {
        assert_eq!(rate(0.0), "0 b/s");
        assert_eq!(rate(999.0), "999 b/s");
        assert_eq!(rate(512_000.0), "512 kb/s");
        assert_eq!(rate(1_234_567.0), "1.23 Mb/s");
        assert_eq!(rate(3.1e9), "3.10 Gb/s");
    }
}
