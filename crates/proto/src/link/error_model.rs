//! Error models: which packets arrive corrupted at the far end of a link (and are dropped).
//!
//! A model is asked once per packet, when the packet's serialisation completes, in the order
//! packets leave the serialiser. Each model owns its own seeded [`Rng`], so its pattern depends
//! only on the packets of its own link. Models:
//! - PER: independent losses with a fixed probability per packet.
//! - BER: independent bit errors; a packet of n bytes is lost with probability
//!   1 − (1 − ber)^(8n).
//! - Gilbert–Elliott (Gilbert 1960, Elliott 1963): a two-state Markov chain stepped once per
//!   packet, with a loss probability per state. Stationary P(Bad) = p_gb / (p_gb + p_bg); the
//!   mean time in Bad is 1/p_bg packets.
//! - List: drop exactly the packets with the listed arrival indices (as ns-3's
//!   `ListErrorModel`), for tests and teaching.

use super::config::ErrorModelConfig;
use crate::rand::Rng;

/// The loss decision of one link, with its random state.
#[derive(Clone, Debug)]
pub struct ErrorModel {
    kind: Kind,
    rng: Rng,
}

#[derive(Clone, Debug)]
enum Kind {
    None,
    Per(f64),
    Ber(f64),
    GilbertElliott {
        p_good_bad: f64,
        p_bad_good: f64,
        per_good: f64,
        per_bad: f64,
        bad: bool,
    },
    /// Sorted, without duplicates.
    List(Vec<u64>),
}

impl ErrorModel {
    /// The model `config` describes, drawing from `rng`. Gilbert–Elliott starts in Good.
    pub fn new(config: &ErrorModelConfig, rng: Rng) -> Self {
        let kind = match config {
            ErrorModelConfig::None => Kind::None,
            ErrorModelConfig::Per { per } => Kind::Per(*per),
            ErrorModelConfig::Ber { ber } => Kind::Ber(*ber),
            ErrorModelConfig::GilbertElliott {
                p_good_bad,
                p_bad_good,
                per_good,
                per_bad,
            } => Kind::GilbertElliott {
                p_good_bad: *p_good_bad,
                p_bad_good: *p_bad_good,
                per_good: *per_good,
                per_bad: *per_bad,
                bad: false,
            },
            ErrorModelConfig::List { packets } => {
                let mut list = packets.clone();
                list.sort_unstable();
                list.dedup();
                Kind::List(list)
            }
        };
        Self { kind, rng }
    }

    /// Decide whether the packet with 1-based link arrival index `arrival` and `wire_len` bytes
    /// is corrupted. Call once per packet, in the order packets finish serialisation: the
    /// Gilbert–Elliott chain moves one step per call (transition first, then the draw in the
    /// new state).
    pub fn is_corrupted(&mut self, arrival: u64, wire_len: u64) -> bool {
        match &mut self.kind {
            Kind::None => false,
            Kind::Per(per) => self.rng.chance(*per),
            Kind::Ber(ber) => self.rng.chance(ber_loss_probability(*ber, wire_len)),
            Kind::GilbertElliott {
                p_good_bad,
                p_bad_good,
                per_good,
                per_bad,
                bad,
            } => {
                let p_leave = if *bad { *p_bad_good } else { *p_good_bad };
                if self.rng.chance(p_leave) {
                    *bad = !*bad;
                }
                self.rng.chance(if *bad { *per_bad } else { *per_good })
            }
            Kind::List(list) => list.binary_search(&arrival).is_ok(),
        }
    }

    /// True while a Gilbert–Elliott channel is in its Bad state (false for other models).
    pub fn is_bad_state(&self) -> bool {
        matches!(self.kind, Kind::GilbertElliott { bad: true, .. })
    }
}

/// Probability that a packet of `wire_len` bytes has at least one of its 8·`wire_len` bits in
/// error, each independently with probability `ber`: 1 − (1 − ber)^(8n).
///
/// Computed as −expm1(8n · ln1p(−ber)), which keeps full precision when `ber` is tiny (the
/// direct form rounds 1 − 1e-12 and loses four digits).
pub fn ber_loss_probability(ber: f64, wire_len: u64) -> f64 {
    if wire_len == 0 || ber.is_nan() || ber <= 0.0 {
        return 0.0;
    }
    if ber >= 1.0 {
        return 1.0;
    }
    let bits = 8.0 * wire_len as f64;
    -(bits * (-ber).ln_1p()).exp_m1()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ge(p_good_bad: f64, p_bad_good: f64, per_good: f64, per_bad: f64) -> ErrorModel {
        let config = ErrorModelConfig::GilbertElliott {
            p_good_bad,
            p_bad_good,
            per_good,
            per_bad,
        };
        ErrorModel::new(&config, Rng::for_component(11, "link:ge"))
    }

    #[test]
    fn ber_probability_is_precise_for_tiny_ber() {
        // 1 − (1 − 1e-12)^12000 = 12000·1e-12 − C(12000, 2)·1e-24 + … = 1.19999999280e-8.
        let p = ber_loss_probability(1e-12, 1500);
        assert!((p - 1.199_999_992_8e-8).abs() < 1e-18, "{p:e}");
        // 1000-byte packets at 1e-5: 1 − (1 − 1e-5)^8000 = 0.076_884_…
        let p = ber_loss_probability(1e-5, 1000);
        assert!(
            (p - (1.0 - (1.0f64 - 1e-5).powi(8000))).abs() < 1e-12,
            "{p}"
        );
        assert_eq!(ber_loss_probability(0.0, 1500), 0.0);
        assert_eq!(ber_loss_probability(1e-3, 0), 0.0);
        assert_eq!(ber_loss_probability(1.0, 1), 1.0);
    }

    #[test]
    fn gilbert_elliott_long_run_loss_matches_stationary_mix() {
        let (p_gb, p_bg, per_g, per_b) = (0.01, 0.1, 0.001, 0.5);
        let mut m = ge(p_gb, p_bg, per_g, per_b);
        let n = 1_000_000u64;
        let losses = (1..=n).filter(|&i| m.is_corrupted(i, 1000)).count() as f64;

        let pi_bad = p_gb / (p_gb + p_bg);
        let pi_good = 1.0 - pi_bad;
        let p = pi_bad * per_b + pi_good * per_g; // 0.046_363_…
                                                  // Asymptotic variance per packet of a Markov-modulated Bernoulli process: the mean
                                                  // Bernoulli variance plus the state term (f_b − f_g)²·π_b·π_g·(1 + λ)/(1 − λ), with
                                                  // λ = 1 − p_gb − p_bg the chain's second eigenvalue.
        let lambda = 1.0 - p_gb - p_bg;
        let var = pi_bad * per_b * (1.0 - per_b)
            + pi_good * per_g * (1.0 - per_g)
            + (per_b - per_g).powi(2) * pi_bad * pi_good * (1.0 + lambda) / (1.0 - lambda);
        let sd = (var * n as f64).sqrt(); // ≈ 614 packets
        let mean = p * n as f64; // ≈ 46 364 packets
        assert!(
            (losses - mean).abs() < 5.0 * sd,
            "losses {losses}, expected {mean} ± {sd}"
        );
    }

    #[test]
    fn gilbert_elliott_bursts_last_one_over_p_bad_good() {
        // per_bad = 1, per_good = 0: a loss burst is exactly a stay in Bad, geometric with mean
        // 1/p_bg = 10 packets (sd √(1 − p)/p ≈ 9.49).
        let (p_gb, p_bg) = (0.01, 0.1);
        let mut m = ge(p_gb, p_bg, 0.0, 1.0);
        let (mut bursts, mut lost, mut run) = (0u64, 0u64, 0u64);
        for i in 1..=1_000_000 {
            if m.is_corrupted(i, 1000) {
                run += 1;
                lost += 1;
                assert!(m.is_bad_state());
            } else if run > 0 {
                bursts += 1;
                run = 0;
            }
        }
        let mean_burst = lost as f64 / bursts as f64;
        let sd = (1.0 - p_bg).sqrt() / p_bg / (bursts as f64).sqrt(); // ≈ 0.1
        assert!(
            (mean_burst - 1.0 / p_bg).abs() < 5.0 * sd,
            "mean burst {mean_burst}"
        );
        assert!(bursts > 8_000, "{bursts}"); // ≈ 1e6 / (1/p_gb + 1/p_bg) = 9091 cycles
    }

    #[test]
    fn list_drops_exactly_the_listed_indices() {
        let config = ErrorModelConfig::List {
            packets: vec![7, 2, 2, 5],
        };
        let mut m = ErrorModel::new(&config, Rng::new(0, 0));
        let dropped: Vec<u64> = (1..=10).filter(|&i| m.is_corrupted(i, 100)).collect();
        assert_eq!(dropped, [2, 5, 7]);
    }
}
