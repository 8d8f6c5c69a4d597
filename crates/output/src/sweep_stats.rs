//! `sweep_stats.csv`: statistics across seeds. When `seed` is one of the swept keys, the runs
//! that differ only in their seed form a group, and each metric of `sweep.csv` is summarised
//! per group by its mean, sample standard deviation and the half-width of its 95 % confidence
//! interval.
//!
//! `sweep.csv` stays one row per run (the raw data a reader may want to bootstrap or plot as
//! points); the grouped table is a second file with one row per group, as a pandas user would
//! get from `df.groupby(keys).agg(["count", "mean", "std"])` plus the t interval:
//!
//! - the swept keys other than `seed`, in sweep order, then `runs` (runs in the group);
//! - per metric, `<metric>_mean`, `<metric>_sd`, `<metric>_ci95`; metrics that `sweep.csv` may
//!   leave empty (`jain_fairness`, `max_completion_time_s`, `utilisation_<link>`) are preceded
//!   by `<metric>_n`, the number of runs that had a value, over which the three are computed.
//!
//! `sd` is the sample standard deviation (divisor n − 1, pandas' `std`), and `ci95` is
//! `t(0.975, n − 1) · sd / √n`, the half-width of the two-sided 95 % Student t interval of the
//! mean: the mean lies in `mean ± ci95`. With one value `sd` and `ci95` are empty (undefined),
//! with none all three are. Groups come in order of their first run.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use crate::csv_fmt::{field, write_f64};
use crate::sweep::{SweepRow, SWEEP_METRICS, UTILISATION_PREFIX};

/// File name of the grouped table.
pub const SWEEP_STATS_CSV: &str = "sweep_stats.csv";

/// The swept key whose values are replications rather than a parameter.
pub const SEED_KEY: &str = "seed";

/// Mean, spread and 95 % confidence interval of a sample.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Stat {
    /// Values in the sample.
    pub n: usize,
    /// Arithmetic mean.
    pub mean: f64,
    /// Sample standard deviation (divisor n − 1); `None` below two values.
    pub sd: Option<f64>,
    /// Half-width of the 95 % Student t confidence interval of the mean,
    /// `t(0.975, n − 1) · sd / √n`; `None` below two values.
    pub ci95: Option<f64>,
}

impl Stat {
    /// Statistics of `values`; `None` when empty.
    pub fn of(values: &[f64]) -> Option<Self> {
        let n = values.len();
        if n == 0 {
            return None;
        }
        let mean = values.iter().sum::<f64>() / n as f64;
        if n == 1 {
            return Some(Self {
                n,
                mean,
                sd: None,
                ci95: None,
            });
        }
        // Two-pass variance: no cancellation when the values are large and close together
        // (goodputs of 10⁷ b/s that differ in the fourth digit).
        let ss: f64 = values.iter().map(|v| (v - mean) * (v - mean)).sum();
        let sd = (ss / (n - 1) as f64).sqrt();
        Some(Self {
            n,
            mean,
            sd: Some(sd),
            ci95: Some(t_975(n - 1) * sd / (n as f64).sqrt()),
        })
    }
}

/// The 0.975 quantile of Student's t distribution with `df` degrees of freedom (the factor of
/// a two-sided 95 % interval); `df` = 0 gives NaN.
///
/// df 1 to 30 come from a table (R's `qt(0.975, df)`, 9 decimals; the test checks each entry
/// against the t distribution's CDF). Beyond 30 the Cornish–Fisher expansion of Abramowitz &
/// Stegun 26.7.5 around the normal quantile is used; its error there is below 10⁻⁷, far
/// below anything a confidence interval is read to.
pub fn t_975(df: usize) -> f64 {
    const TABLE: [f64; 30] = [
        12.706204736,
        4.302652730,
        3.182446305,
        2.776445105,
        2.570581836,
        2.446911851,
        2.364624252,
        2.306004135,
        2.262157163,
        2.228138852,
        2.200985160,
        2.178812830,
        2.160368656,
        2.144786688,
        2.131449546,
        2.119905299,
        2.109815578,
        2.100922040,
        2.093024054,
        2.085963447,
        2.079613845,
        2.073873068,
        2.068657610,
        2.063898562,
        2.059538553,
        2.055529439,
        2.051830516,
        2.048407142,
        2.045229642,
        2.042272456,
    ];
    match df {
        0 => f64::NAN,
        1..=30 => TABLE[df - 1],
        _ => {
            // A&S 26.7.5 with z = Φ⁻¹(0.975).
            let z: f64 = 1.959_963_984_540_054;
            let v = df as f64;
            let (z3, z5, z7, z9) = (z.powi(3), z.powi(5), z.powi(7), z.powi(9));
            let g1 = (z3 + z) / 4.0;
            let g2 = (5.0 * z5 + 16.0 * z3 + 3.0 * z) / 96.0;
            let g3 = (3.0 * z7 + 19.0 * z5 + 17.0 * z3 - 15.0 * z) / 384.0;
            let g4 = (79.0 * z9 + 776.0 * z7 + 1482.0 * z5 - 1920.0 * z3 - 945.0 * z) / 92_160.0;
            z + g1 / v + g2 / (v * v) + g3 / v.powi(3) + g4 / v.powi(4)
        }
    }
}

/// One group of a seed sweep: the runs that share every swept value but the seed.
#[derive(Clone, Debug, PartialEq)]
pub struct SweepGroup {
    /// The swept keys other than `seed` and their values, in sweep order.
    pub assignments: Vec<(String, String)>,
    /// Run indices of the group, ascending.
    pub runs: Vec<usize>,
    /// Per metric (the `sweep.csv` metric columns, then `utilisation_<link>`): its name and
    /// the statistics over the runs that have a value (`None` if none has).
    pub metrics: Vec<(String, Option<Stat>)>,
}

/// Whether `seed` is among the swept keys of these rows.
pub fn is_seed_sweep(rows: &[SweepRow]) -> bool {
    rows.first()
        .is_some_and(|r| r.assignments.iter().any(|(k, _)| k == SEED_KEY))
}

/// Groups runs that differ only in seed and computes each metric's statistics. Groups are in
/// order of their first run; rows may come in any order. Without a swept `seed` every run is
/// its own group.
pub fn group_by_seed(rows: &[SweepRow]) -> Vec<SweepGroup> {
    let mut sorted: Vec<&SweepRow> = rows.iter().collect();
    sorted.sort_by_key(|r| r.run);
    let links = link_names(rows);
    let key_of = |r: &SweepRow| -> Vec<(String, String)> {
        r.assignments
            .iter()
            .filter(|(k, _)| k != SEED_KEY)
            .cloned()
            .collect()
    };
    // (the values of the keys other than seed, the group's rows)
    type Members<'a> = (Vec<(String, String)>, Vec<&'a SweepRow>);
    let mut groups: Vec<Members> = Vec::new();
    for r in sorted {
        let key = key_of(r);
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, members)) => members.push(r),
            None => groups.push((key, vec![r])),
        }
    }
    groups
        .into_iter()
        .map(|(assignments, members)| {
            let names = SWEEP_METRICS
                .iter()
                .map(|m| m.to_string())
                .chain(links.iter().map(|l| format!("{UTILISATION_PREFIX}{l}")));
            let metrics = names
                .map(|name| {
                    let values: Vec<f64> = members
                        .iter()
                        .filter_map(|r| r.metric(&name))
                        .filter(|v| v.is_finite())
                        .collect();
                    let stat = Stat::of(&values);
                    (name, stat)
                })
                .collect();
            SweepGroup {
                assignments,
                runs: members.iter().map(|r| r.run).collect(),
                metrics,
            }
        })
        .collect()
}

/// Whether `sweep.csv` may leave this metric empty (so its count is written).
fn may_be_empty(metric: &str) -> bool {
    matches!(metric, "jain_fairness" | "max_completion_time_s")
        || metric.starts_with(UTILISATION_PREFIX)
}

/// Writes `dir/sweep_stats.csv` from the rows of a sweep whose keys (in sweep order) include
/// `seed`, and returns its path.
pub fn write_sweep_stats(dir: &Path, keys: &[String], rows: &[SweepRow]) -> io::Result<PathBuf> {
    let path = dir.join(SWEEP_STATS_CSV);
    let groups = group_by_seed(rows);
    let keys: Vec<&String> = keys.iter().filter(|k| *k != SEED_KEY).collect();
    let mut w = BufWriter::new(File::create(&path)?);
    for key in &keys {
        write!(w, "{},", field(key))?;
    }
    w.write_all(b"runs")?;
    let metric_names: Vec<&str> = groups
        .first()
        .map(|g| g.metrics.iter().map(|(m, _)| m.as_str()).collect())
        .unwrap_or_default();
    for m in &metric_names {
        if may_be_empty(m) {
            write!(w, ",{}", field(&format!("{m}_n")))?;
        }
        for suffix in ["mean", "sd", "ci95"] {
            write!(w, ",{}", field(&format!("{m}_{suffix}")))?;
        }
    }
    writeln!(w)?;
    for g in &groups {
        for key in &keys {
            let value = g
                .assignments
                .iter()
                .find(|(k, _)| k == *key)
                .map_or("", |(_, v)| v);
            write!(w, "{},", field(value))?;
        }
        write!(w, "{}", g.runs.len())?;
        for (m, stat) in &g.metrics {
            if may_be_empty(m) {
                write!(w, ",{}", stat.map_or(0, |s| s.n))?;
            }
            let decimals = if m.ends_with("_bps") { 1 } else { 6 };
            let nan = f64::NAN;
            for v in [
                stat.map_or(nan, |s| s.mean),
                stat.and_then(|s| s.sd).unwrap_or(nan),
                stat.and_then(|s| s.ci95).unwrap_or(nan),
            ] {
                w.write_all(b",")?;
                write_f64(&mut w, v, decimals)?;
            }
        }
        writeln!(w)?;
    }
    w.flush()?;
    Ok(path)
}

/// Link names of the rows, in order of first appearance (the `utilisation_` columns).
pub(crate) fn link_names(rows: &[SweepRow]) -> Vec<String> {
    let mut links: Vec<String> = Vec::new();
    for (name, _) in rows.iter().flat_map(|r| &r.link_utilisation) {
        if !links.contains(name) {
            links.push(name.clone());
        }
    }
    links
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::summary::tests::example;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    #[test]
    fn mean_sd_and_ci_match_a_hand_computation() {
        // 10, 12, 17: mean 39/3 = 13; squares of deviations 9 + 1 + 16 = 26, variance 26/2 = 13,
        // sd √13 = 3.605551; t(0.975, 2) = 4.302653; ci = 4.302653 · 3.605551 / √3 = 8.956686.
        let s = Stat::of(&[10.0, 12.0, 17.0]).unwrap();
        assert_eq!(s.n, 3);
        assert_eq!(s.mean, 13.0);
        assert!(close(s.sd.unwrap(), 3.605_551, 1e-6), "{s:?}");
        assert!(close(s.ci95.unwrap(), 8.956_686, 1e-6), "{s:?}");
        // Two values 4 and 6: mean 5, sd √2, ci = 12.706205 · √2 / √2 = 12.706205.
        let s = Stat::of(&[4.0, 6.0]).unwrap();
        assert!(close(s.sd.unwrap(), 2f64.sqrt(), 1e-12));
        assert!(close(s.ci95.unwrap(), 12.706_205, 1e-6));
        // One value: a mean, no spread; none: nothing.
        assert_eq!(
            Stat::of(&[7.0]),
            Some(Stat {
                n: 1,
                mean: 7.0,
                sd: None,
                ci95: None
            })
        );
        assert_eq!(Stat::of(&[]), None);
        // Large close values (goodputs): the two-pass variance keeps every digit.
        let s = Stat::of(&[1e9 + 1.0, 1e9 + 2.0, 1e9 + 3.0]).unwrap();
        assert!(close(s.sd.unwrap(), 1.0, 1e-9));
    }

    /// Student t CDF at `t > 0` for `df` degrees of freedom, by Simpson's rule on the density:
    /// an independent check of the quantile table.
    fn t_cdf(t: f64, df: usize) -> f64 {
        // Γ((ν+1)/2) / Γ(ν/2) from Γ(1/2) = √π, Γ(1) = 1 and Γ(x + 1) = x Γ(x).
        let gamma_half = |k: usize| -> f64 {
            // Γ(k/2)
            let mut g = if k.is_multiple_of(2) {
                1.0
            } else {
                std::f64::consts::PI.sqrt()
            };
            let mut x = if k.is_multiple_of(2) { 1.0 } else { 0.5 };
            while x < k as f64 / 2.0 - 1e-9 {
                g *= x;
                x += 1.0;
            }
            g
        };
        let v = df as f64;
        let c = gamma_half(df + 1) / gamma_half(df) / (v * std::f64::consts::PI).sqrt();
        let pdf = |x: f64| c * (1.0 + x * x / v).powf(-(v + 1.0) / 2.0);
        let steps = 20_000;
        let h = t / steps as f64;
        let mut sum = pdf(0.0) + pdf(t);
        for i in 1..steps {
            sum += pdf(i as f64 * h) * if i % 2 == 1 { 4.0 } else { 2.0 };
        }
        0.5 + sum * h / 3.0
    }

    #[test]
    fn t_quantiles_are_the_975_points_of_the_t_distribution() {
        assert!(t_975(0).is_nan());
        // The table (df ≤ 30) to 1e-10 of probability; the expansion beyond to 2e-9, which at
        // a density of 0.05 is 4e-8 in t.
        for df in 1..=200 {
            let p = t_cdf(t_975(df), df);
            let tolerance = if df <= 30 { 1e-10 } else { 2e-9 };
            assert!(close(p, 0.975, tolerance), "df {df}: CDF {p}");
        }
        // Closed forms for df 1 and 2: tan(0.475π) and 2·0.95 / √(2·(1 − 0.95²)).
        assert!(close(t_975(1), (0.475 * std::f64::consts::PI).tan(), 1e-8));
        assert!(close(
            t_975(2),
            0.95 * (2.0f64 / (1.0 - 0.95 * 0.95)).sqrt(),
            1e-8
        ));
        // Approaches the normal quantile.
        assert!(close(t_975(100_000), 1.959_964, 1e-4));
    }

    fn row(run: usize, rate: &str, seed: &str, goodput: f64) -> SweepRow {
        let mut s = example();
        s.flows[0].goodput_bps = goodput;
        s.flows[1].goodput_bps = 0.0;
        let mut r = SweepRow::from_summary(
            run,
            &[
                ("rate".to_string(), rate.to_string()),
                ("seed".to_string(), seed.to_string()),
            ],
            &s,
        );
        r.retransmissions = run as u64;
        r
    }

    #[test]
    fn runs_differing_only_in_seed_form_a_group() {
        // rate slowest, seed fastest; pushed out of order as parallel runs finish.
        let rows = vec![
            row(3, "10Mbps", "1", 20e6),
            row(0, "2Mbps", "1", 10e6),
            row(2, "2Mbps", "3", 17e6),
            row(1, "2Mbps", "2", 12e6),
            row(4, "10Mbps", "2", 22e6),
        ];
        assert!(is_seed_sweep(&rows));
        let groups = group_by_seed(&rows);
        assert_eq!(groups.len(), 2);
        assert_eq!(
            groups[0].assignments,
            [("rate".to_string(), "2Mbps".to_string())]
        );
        assert_eq!(groups[0].runs, [0, 1, 2]);
        assert_eq!(groups[1].runs, [3, 4]);
        let total = groups[0].metrics[0].1.unwrap();
        assert_eq!(groups[0].metrics[0].0, "total_goodput_bps");
        assert_eq!(total.mean, 13e6);
        assert!(close(total.ci95.unwrap(), 8.956_686e6, 1.0));
        // Jain is 0.5 in every run (one of two flows carries everything).
        let jain = &groups[0].metrics[3];
        assert_eq!(jain.0, "jain_fairness");
        assert_eq!(jain.1.unwrap().mean, 0.5);
        assert_eq!(jain.1.unwrap().sd, Some(0.0));
    }

    #[test]
    fn optional_metrics_count_the_runs_that_have_a_value() {
        let mut rows = vec![
            row(0, "2Mbps", "1", 10e6),
            row(1, "2Mbps", "2", 12e6),
            row(2, "2Mbps", "3", 17e6),
        ];
        rows[0].max_completion_time_s = Some(2.0);
        rows[1].max_completion_time_s = None;
        rows[2].max_completion_time_s = Some(4.0);
        rows[1].jain_fairness = None;
        rows[2].jain_fairness = None;
        let dir = tempfile::tempdir().unwrap();
        let keys = ["rate".to_string(), "seed".to_string()];
        let path = write_sweep_stats(dir.path(), &keys, &rows).unwrap();
        let text = std::fs::read_to_string(path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "rate,runs,\
             total_goodput_bps_mean,total_goodput_bps_sd,total_goodput_bps_ci95,\
             mean_goodput_bps_mean,mean_goodput_bps_sd,mean_goodput_bps_ci95,\
             min_goodput_bps_mean,min_goodput_bps_sd,min_goodput_bps_ci95,\
             jain_fairness_n,jain_fairness_mean,jain_fairness_sd,jain_fairness_ci95,\
             retransmissions_mean,retransmissions_sd,retransmissions_ci95,\
             rto_expirations_mean,rto_expirations_sd,rto_expirations_ci95,\
             max_completion_time_s_n,max_completion_time_s_mean,max_completion_time_s_sd,\
             max_completion_time_s_ci95,\
             flows_completed_mean,flows_completed_sd,flows_completed_ci95,\
             utilisation_sat_fwd_n,utilisation_sat_fwd_mean,utilisation_sat_fwd_sd,\
             utilisation_sat_fwd_ci95"
        );
        // Goodput 10, 12, 17 Mb/s: 13 ± 8.956686 Mb/s; mean per flow is half; min is 0.
        // Jain from one run only: a mean, no spread. Completion 2 and 4 s: mean 3,
        // sd √2, ci 12.706205. Retransmissions 0, 1, 2: mean 1, sd 1, ci 4.302653/√3.
        assert_eq!(
            lines[1],
            "2Mbps,3,\
             13000000.0,3605551.3,8956685.9,\
             6500000.0,1802775.6,4478342.9,\
             0.0,0.0,0.0,\
             1,0.500000,,,\
             1.000000,1.000000,2.484138,\
             2.000000,0.000000,0.000000,\
             2,3.000000,1.414214,12.706205,\
             1.000000,0.000000,0.000000,\
             3,0.600000,0.000000,0.000000"
        );
        assert_eq!(lines.len(), 2);
    }
}
