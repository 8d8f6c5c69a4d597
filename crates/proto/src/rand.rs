//! A small seeded generator (PCG-XSH-RR 64/32) for in-core randomness.
//!
//! Every component that draws random numbers owns one, seeded from the scenario seed and a stable
//! name ([`Rng::for_component`]), so adding a flow never changes another link's loss pattern.

/// PCG-XSH-RR with 64-bit state and 32-bit output (O'Neill 2014).
#[derive(Clone, Debug)]
pub struct Rng {
    state: u64,
    inc: u64,
}

const MULT: u64 = 6_364_136_223_846_793_005;

impl Rng {
    /// A generator from a seed and a stream number; equal inputs give equal sequences.
    pub fn new(seed: u64, stream: u64) -> Self {
        let mut rng = Self {
            state: 0,
            inc: (stream << 1) | 1,
        };
        rng.next_u32();
        rng.state = rng.state.wrapping_add(seed);
        rng.next_u32();
        rng
    }

    /// A generator for the component called `name` in a run seeded with `seed`.
    pub fn for_component(seed: u64, name: &str) -> Self {
        Self::new(seed, fnv1a(name.as_bytes()))
    }

    /// Next 32 uniformly distributed bits.
    pub fn next_u32(&mut self) -> u32 {
        let old = self.state;
        self.state = old.wrapping_mul(MULT).wrapping_add(self.inc);
        let xorshifted = (((old >> 18) ^ old) >> 27) as u32;
        let rot = (old >> 59) as u32;
        xorshifted.rotate_right(rot)
    }

    /// Next 64 uniformly distributed bits.
    pub fn next_u64(&mut self) -> u64 {
        (u64::from(self.next_u32()) << 32) | u64::from(self.next_u32())
    }

    /// A uniform float in [0, 1) with 53 bits of precision.
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// True with probability `p` (p ≤ 0 never, p ≥ 1 always).
    pub fn chance(&mut self, p: f64) -> bool {
        p > 0.0 && (p >= 1.0 || self.next_f64() < p)
    }
}

/// 64-bit FNV-1a: a stable hash for deriving per-component streams from names.
pub fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_sequence_different_stream_different() {
        let a: Vec<u32> = (0..8)
            .map({
                let mut r = Rng::new(42, 1);
                move |_| r.next_u32()
            })
            .collect();
        let b: Vec<u32> = (0..8)
            .map({
                let mut r = Rng::new(42, 1);
                move |_| r.next_u32()
            })
            .collect();
        let c: Vec<u32> = (0..8)
            .map({
                let mut r = Rng::new(42, 2);
                move |_| r.next_u32()
            })
            .collect();
        assert_eq!(a, b);
        assert_ne!(a, c);
    }

    #[test]
    fn chance_matches_probability() {
        let mut r = Rng::for_component(7, "link:forward");
        let n = 200_000;
        let hits = (0..n).filter(|_| r.chance(0.01)).count();
        // Binomial(200000, 0.01): mean 2000, sd ≈ 44.5; 5 sd bounds.
        assert!((1778..=2222).contains(&hits), "{hits}");
        assert!(!r.chance(0.0));
        assert!(r.chance(1.0));
    }

    #[test]
    fn uniform_floats_stay_in_range_and_mean_is_half() {
        let mut r = Rng::new(1, 1);
        let xs: Vec<f64> = (0..100_000).map(|_| r.next_f64()).collect();
        assert!(xs.iter().all(|&x| (0.0..1.0).contains(&x)));
        let mean = xs.iter().sum::<f64>() / xs.len() as f64;
        assert!((mean - 0.5).abs() < 0.005, "{mean}");
    }
}
