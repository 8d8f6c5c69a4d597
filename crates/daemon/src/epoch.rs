//! The replay epoch of keyed tunnels: the high half of every authenticated packet's 64-bit
//! sequence number (docs/robustness.md, "Sequence numbers and restarts"). The peer refuses
//! numbers at or below what it has seen, so a restarted daemon must start above its
//! predecessor. The wall clock alone does not do that: a terminal restarted with its clock
//! behind (no real-time clock before NTP, a corrected clock) was refused as `too_old` until the
//! gateway restarted. So the epoch is max(clock, last epoch + 1), and the last epoch is kept in
//! a file that survives reboots ([`EPOCH_DIR`], not `/run`), written before any packet is
//! sealed with the new one.

use std::path::{Path, PathBuf};

use crate::state;

/// Where epoch files live: kept across reboots (systemd's `StateDirectory=satpep`).
pub const EPOCH_DIR: &str = "/var/lib/satpep";

/// The epoch file of instance `name`.
pub fn path(dir: &Path, name: &str) -> PathBuf {
    dir.join(format!("{name}.epoch"))
}

/// The epoch of a start at `clock_s` (seconds since 1970) after one that used `last`: never at
/// or below `last` (it saturates at `u32::MAX`, in the year 2106).
pub fn next(clock_s: u64, last: Option<u32>) -> u32 {
    let clock = u32::try_from(clock_s).unwrap_or(u32::MAX);
    last.map_or(clock, |l| clock.max(l.saturating_add(1)))
}

/// The epoch for this start: the last one from `file`, [`next`] of it, written back to `file`
/// before it is returned. A missing file is a first start; a damaged or unwritable one is
/// reported in the second value (the clock's epoch is used then: nothing better is known).
pub fn take(file: &Path, clock_s: u64) -> (u32, Option<String>) {
    let mut problem = None;
    let last = match std::fs::read_to_string(file) {
        Ok(text) => match text.trim().parse::<u32>() {
            Ok(n) => Some(n),
            Err(_) => {
                problem = Some(format!(
                    "{}: damaged (not a number); starting from the clock",
                    file.display()
                ));
                None
            }
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => {
            problem = Some(format!("{}: {e}; starting from the clock", file.display()));
            None
        }
    };
    let epoch = next(clock_s, last);
    if let Err(e) = state::write_atomic(file, &format!("{epoch}\n")) {
        problem = Some(format!(
            "{}: {e}; the next start cannot know this epoch ({epoch}), so a restart with the clock behind would be refused by the peer",
            file.display()
        ));
    }
    (epoch, problem)
}

#[cfg(test)]
mod tests {
    use super::*;

    const DAY: u64 = 86_400;
    const T: u64 = 1_800_000_000;

    #[test]
    fn the_epoch_never_goes_back_across_restarts_whatever_the_clock_says() {
        let dir = std::env::temp_dir().join(format!("satpep-epoch-test-{}", std::process::id()));
        let f = path(&dir, "term");
        assert_eq!(take(&f, T), (T as u32, None), "first start: the clock");
        // Restarted a day behind (no RTC before NTP): above the last start, not a day below
        // it (the clock alone gave T − DAY, which the gateway refused as too old).
        assert_eq!(take(&f, T - DAY), (T as u32 + 1, None));
        assert_eq!(take(&f, T - DAY), (T as u32 + 2, None));
        // Two starts within one second: still distinct.
        assert_eq!(take(&f, T + 2), (T as u32 + 3, None));
        // The clock ahead again: the clock.
        assert_eq!(take(&f, T + DAY), ((T + DAY) as u32, None));
        // A damaged file is reported and replaced, not fatal.
        std::fs::write(&f, "garbage").unwrap();
        let (e, problem) = take(&f, T);
        assert_eq!(e, T as u32);
        assert!(problem.is_some_and(|p| p.contains("damaged")));
        assert_eq!(take(&f, T).0, T as u32 + 1);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_epoch_saturates_instead_of_wrapping() {
        assert_eq!(next(u64::MAX, None), u32::MAX);
        assert_eq!(next(0, Some(u32::MAX)), u32::MAX);
        assert_eq!(next(5, Some(9)), 10);
    }
}
