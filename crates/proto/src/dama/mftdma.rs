//! The MF-TDMA return carrier: frames of `frame` duration, each cut into `slots_per_frame`
//! equal slots; `frames_per_superframe` frames make the superframe, the period at which the NCC
//! allocates. With the paper's defaults (2048 kb/s, 24 ms, 32 slots, 4 frames) a slot carries
//! 2048 000 × 0.024 / 32 / 8 = 192 bytes and lasts 0.75 ms, and a superframe (96 ms) holds 128
//! slots = 24 576 bytes.
//!
//! Where an ST's slots sit inside the superframe matters for delay (a CRA of one slot per frame
//! should recur every 24 ms, not come as a burst of four). [`layout`] spreads each ST's slots
//! evenly over the superframe: its m-th of a slots aims at position (m + ½)·S/a, and slots are
//! placed in the order of those aims at the first free position not before the aim, never
//! leaving too few positions for the rest.

use crate::time::{Bitrate, Duration, Instant};

/// Frame structure of the carrier.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameConfig {
    /// Capacity of the whole carrier (every slot of a frame used).
    pub carrier: Bitrate,
    /// Frame duration.
    pub frame: Duration,
    /// Frames per superframe (n_s).
    pub frames_per_superframe: u32,
    /// Slots per frame.
    pub slots_per_frame: u32,
}

impl Default for FrameConfig {
    /// The paper's defaults: 2048 kb/s, 24 ms frames, 4 frames per superframe, 32 slots.
    fn default() -> Self {
        Self {
            carrier: Bitrate(2_048_000),
            frame: Duration::from_millis(24),
            frames_per_superframe: 4,
            slots_per_frame: 32,
        }
    }
}

impl FrameConfig {
    /// Check the structure can carry data; the message starts with the key.
    pub fn validate(&self) -> Result<(), String> {
        if self.frame == Duration::ZERO {
            return Err("frame: must be above 0".into());
        }
        if self.frames_per_superframe == 0 {
            return Err("frames_per_superframe: must be at least 1".into());
        }
        if self.slots_per_frame == 0 {
            return Err("slots_per_frame: must be at least 1".into());
        }
        if self.slot_payload() == 0 {
            return Err(format!(
                "carrier: {} b/s over {} slots of a {} ms frame leaves less than one byte per slot",
                self.carrier.bps(),
                self.slots_per_frame,
                self.frame.as_secs_f64() * 1e3
            ));
        }
        if self.frame.as_nanos() < u64::from(self.slots_per_frame) {
            return Err("slots_per_frame: more slots than nanoseconds in a frame".into());
        }
        Ok(())
    }

    /// Bytes one slot carries: carrier × frame / slots / 8, rounded down.
    pub fn slot_payload(&self) -> u32 {
        let bits = u128::from(self.carrier.bps()) * u128::from(self.frame.as_nanos())
            / 1_000_000_000
            / u128::from(self.slots_per_frame.max(1));
        u32::try_from(bits / 8).unwrap_or(u32::MAX)
    }

    /// Duration of one slot (the frame divided evenly, rounded down to the nanosecond).
    pub fn slot_duration(&self) -> Duration {
        Duration(self.frame.as_nanos() / u64::from(self.slots_per_frame.max(1)))
    }

    /// Duration of one superframe.
    pub fn superframe(&self) -> Duration {
        self.frame
            .saturating_mul(u64::from(self.frames_per_superframe))
    }

    /// Slots in one superframe.
    pub fn slots_per_superframe(&self) -> u32 {
        self.slots_per_frame
            .saturating_mul(self.frames_per_superframe)
    }

    /// Start of superframe `k`.
    pub fn superframe_start(&self, k: u64) -> Instant {
        Instant(self.superframe().as_nanos().saturating_mul(k))
    }

    /// Start of slot `pos` (0-based, frame-major) of the superframe starting at `sf_start`.
    pub fn slot_start(&self, sf_start: Instant, pos: u32) -> Instant {
        let s = self.slots_per_frame.max(1);
        let frame = u64::from(pos / s);
        let within = u64::from(pos % s);
        sf_start + self.frame.saturating_mul(frame) + self.slot_duration().saturating_mul(within)
    }
}

/// Place `grants[i]` slots for ST i in a superframe of `total` slots: returns `(position, st)`
/// in increasing position order. Grants summing past `total` are cut (the controller never asks
/// for that). Deterministic: equal aims go to the lower ST index first.
pub fn layout(grants: &[u32], total: u32) -> Vec<(u32, usize)> {
    let sum: u64 = grants.iter().map(|&g| u64::from(g)).sum();
    let mut aims: Vec<(u64, u64, usize)> = Vec::with_capacity(sum.min(u64::from(total)) as usize);
    for (st, &a) in grants.iter().enumerate() {
        for m in 0..u64::from(a) {
            // Aim (m + 1/2)·total/a as the fraction num/den with den = 2a, compared exactly.
            let num = (2 * m + 1) * u64::from(total);
            let den = 2 * u64::from(a);
            aims.push((num, den, st));
        }
    }
    aims.sort_by(|x, y| {
        (u128::from(x.0) * u128::from(y.1))
            .cmp(&(u128::from(y.0) * u128::from(x.1)))
            .then(x.2.cmp(&y.2))
    });
    aims.truncate(total as usize);
    let n = aims.len() as u64;
    let mut out = Vec::with_capacity(aims.len());
    let mut next_free = 0u64;
    for (k, &(num, den, st)) in aims.iter().enumerate() {
        let aim = num / den;
        let latest = u64::from(total) - (n - k as u64);
        let pos = aim.max(next_free).min(latest);
        out.push((pos as u32, st));
        next_free = pos + 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn paper_defaults_give_192_byte_slots_of_750_us() {
        let f = FrameConfig::default();
        assert_eq!(f.slot_payload(), 192);
        assert_eq!(f.slot_duration(), Duration::from_micros(750));
        assert_eq!(f.superframe(), Duration::from_millis(96));
        assert_eq!(f.slots_per_superframe(), 128);
        // 128 slots × 192 bytes per 96 ms = 2048 kb/s exactly.
        assert_eq!(128 * 192 * 8 * 1000 / 96, 2_048_000);
        assert_eq!(
            f.slot_start(f.superframe_start(2), 33),
            Instant(192_000_000 + 24_000_000 + 750_000)
        );
    }

    #[test]
    fn one_slot_per_frame_recurs_every_frame() {
        // CRA of 1 slot per frame = 4 per superframe: positions 16, 48, 80, 112 (one per frame).
        let l = layout(&[4], 128);
        assert_eq!(l, vec![(16, 0), (48, 0), (80, 0), (112, 0)]);
    }

    #[test]
    fn a_full_superframe_uses_every_position_once() {
        let l = layout(&[100, 28], 128);
        let pos: Vec<u32> = l.iter().map(|p| p.0).collect();
        assert_eq!(pos, (0..128).collect::<Vec<_>>());
        assert_eq!(l.iter().filter(|p| p.1 == 1).count(), 28);
    }

    proptest! {
        #[test]
        fn layout_is_increasing_in_range_and_keeps_counts(
            grants in proptest::collection::vec(0u32..40, 0..20),
            total in 1u32..200,
        ) {
            let l = layout(&grants, total);
            let sum: u32 = grants.iter().sum();
            prop_assert_eq!(l.len() as u32, sum.min(total));
            for w in l.windows(2) {
                prop_assert!(w[0].0 < w[1].0);
            }
            prop_assert!(l.iter().all(|p| p.0 < total));
            if sum <= total {
                for (st, &g) in grants.iter().enumerate() {
                    prop_assert_eq!(l.iter().filter(|p| p.1 == st).count() as u32, g);
                }
            }
        }
    }
}
