//! `sweep.csv`: one row per run of a parameter sweep, the table people plot "throughput vs
//! parameter" from.
//!
//! Columns: `run`, each swept key in the order given, then
//! `total_goodput_bps, mean_goodput_bps, min_goodput_bps, jain_fairness, retransmissions,
//! rto_expirations, max_completion_time_s, flows_completed`, then `utilisation_<link>` for each
//! link. Rows are sorted by run index when the file is written, so a sweep whose runs finish
//! in any order (parallel workers) still gives the same bytes.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use crate::csv_fmt::{field, write_f64};
use crate::summary::Summary;
use crate::sweep_stats::{link_names, write_sweep_stats, SEED_KEY};

/// File name of the sweep table.
pub const SWEEP_CSV: &str = "sweep.csv";

/// Metric columns that follow the swept keys, before the per-link utilisations.
pub const SWEEP_METRICS: [&str; 8] = [
    "total_goodput_bps",
    "mean_goodput_bps",
    "min_goodput_bps",
    "jain_fairness",
    "retransmissions",
    "rto_expirations",
    "max_completion_time_s",
    "flows_completed",
];

/// Prefix of the per-link utilisation columns (`utilisation_sat_fwd`).
pub const UTILISATION_PREFIX: &str = "utilisation_";

/// The metrics of one run of a sweep (one row of `sweep.csv`).
#[derive(Clone, Debug, PartialEq)]
pub struct SweepRow {
    /// Run index within the sweep (0-based).
    pub run: usize,
    /// The swept keys and the values this run used, as written in the sweep (`"10Mbps"`).
    pub assignments: Vec<(String, String)>,
    /// Sum of the flows' goodputs (bit/s).
    pub total_goodput_bps: f64,
    /// Mean goodput per flow (bit/s); 0 without flows.
    pub mean_goodput_bps: f64,
    /// Smallest goodput of any flow (bit/s); 0 without flows.
    pub min_goodput_bps: f64,
    /// Jain's fairness index of the goodputs, `(Σx)² / (n·Σx²)`, from 1/n (one flow gets all)
    /// to 1 (equal shares); `None` without flows or when every goodput is zero.
    pub jain_fairness: Option<f64>,
    /// Retransmitted segments, all flows.
    pub retransmissions: u64,
    /// RTO expirations, all flows.
    pub rto_expirations: u64,
    /// Longest completion time among the flows that completed (s); `None` when none did.
    /// Read it with `flows_completed`: flows that had not finished are not in the maximum.
    pub max_completion_time_s: Option<f64>,
    /// Flows that completed before the end of the run.
    pub flows_completed: usize,
    /// Utilisation (0 to 1) of each link, by link name, in scenario order.
    pub link_utilisation: Vec<(String, f64)>,
}

impl SweepRow {
    /// Reduces one run's summary to its sweep metrics.
    pub fn from_summary(run: usize, assignments: &[(String, String)], s: &Summary) -> Self {
        let goodputs: Vec<f64> = s.flows.iter().map(|f| f.goodput_bps).collect();
        let total: f64 = goodputs.iter().sum();
        let n = goodputs.len() as f64;
        let sum_sq: f64 = goodputs.iter().map(|x| x * x).sum();
        let completed: Vec<f64> = s.flows.iter().filter_map(|f| f.completion_time_s).collect();
        Self {
            run,
            assignments: assignments.to_vec(),
            total_goodput_bps: total,
            mean_goodput_bps: if goodputs.is_empty() { 0.0 } else { total / n },
            min_goodput_bps: goodputs.iter().copied().reduce(f64::min).unwrap_or(0.0),
            jain_fairness: (sum_sq > 0.0).then(|| total * total / (n * sum_sq)),
            retransmissions: s.flows.iter().map(|f| f.retransmissions).sum(),
            rto_expirations: s.flows.iter().map(|f| f.rto_expirations).sum(),
            max_completion_time_s: completed.iter().copied().reduce(f64::max),
            flows_completed: completed.len(),
            link_utilisation: s
                .links
                .iter()
                .map(|l| (l.name.clone(), l.utilisation))
                .collect(),
        }
    }

    /// The value of the `sweep.csv` metric column `name` (`total_goodput_bps`,
    /// `utilisation_sat_fwd`, …); `None` when the cell would be empty or no such column exists.
    pub fn metric(&self, name: &str) -> Option<f64> {
        if let Some(link) = name.strip_prefix(UTILISATION_PREFIX) {
            return self
                .link_utilisation
                .iter()
                .find(|(l, _)| l == link)
                .map(|(_, u)| *u);
        }
        match name {
            "total_goodput_bps" => Some(self.total_goodput_bps),
            "mean_goodput_bps" => Some(self.mean_goodput_bps),
            "min_goodput_bps" => Some(self.min_goodput_bps),
            "jain_fairness" => self.jain_fairness,
            "retransmissions" => Some(self.retransmissions as f64),
            "rto_expirations" => Some(self.rto_expirations as f64),
            "max_completion_time_s" => self.max_completion_time_s,
            "flows_completed" => Some(self.flows_completed as f64),
            _ => None,
        }
    }
}

/// Collects the rows of a sweep and writes `sweep.csv` when [`finish`](Self::finish)ed.
///
/// Rows are kept in memory (a few hundred bytes each) so that they can be written in run
/// order whatever order the runs finish in. The link columns are the union of the rows'
/// links, in order of first appearance; a run without a given link leaves its cell empty.
#[derive(Debug)]
pub struct SweepWriter {
    path: PathBuf,
    keys: Vec<String>,
    rows: Vec<SweepRow>,
}

impl SweepWriter {
    /// A writer for `dir/sweep.csv` with the swept `keys` as columns, in this order. The file
    /// is created (and a bad directory reported) now, and filled by `finish`.
    pub fn create(dir: impl AsRef<Path>, keys: Vec<String>) -> io::Result<Self> {
        let path = dir.as_ref().join(SWEEP_CSV);
        File::create(&path)?;
        Ok(Self {
            path,
            keys,
            rows: Vec::new(),
        })
    }

    /// Adds one run's row.
    pub fn push(&mut self, row: SweepRow) {
        self.rows.push(row);
    }

    /// The rows added so far, in the order added.
    pub fn rows(&self) -> &[SweepRow] {
        &self.rows
    }

    /// Sorts the rows by run index, writes `sweep.csv` and returns its path. When `seed` is
    /// one of the swept keys it also writes `sweep_stats.csv` (statistics per group of runs
    /// that differ only in seed, see [`crate::sweep_stats`]) beside it.
    pub fn finish(mut self) -> io::Result<PathBuf> {
        self.rows.sort_by_key(|r| r.run);
        if self.keys.iter().any(|k| k == SEED_KEY) {
            let dir = self.path.parent().unwrap_or(Path::new("."));
            write_sweep_stats(dir, &self.keys, &self.rows)?;
        }
        let links = link_names(&self.rows);
        let mut w = BufWriter::new(File::create(&self.path)?);
        w.write_all(b"run")?;
        for key in &self.keys {
            write!(w, ",{}", field(key))?;
        }
        for metric in SWEEP_METRICS {
            write!(w, ",{metric}")?;
        }
        for link in &links {
            write!(w, ",{}", field(&format!("{UTILISATION_PREFIX}{link}")))?;
        }
        writeln!(w)?;
        for r in &self.rows {
            write!(w, "{}", r.run)?;
            for key in &self.keys {
                let value = r
                    .assignments
                    .iter()
                    .find(|(k, _)| k == key)
                    .map_or("", |(_, v)| v);
                write!(w, ",{}", field(value))?;
            }
            for v in [r.total_goodput_bps, r.mean_goodput_bps, r.min_goodput_bps] {
                w.write_all(b",")?;
                write_f64(&mut w, v, 1)?;
            }
            w.write_all(b",")?;
            write_f64(&mut w, r.jain_fairness.unwrap_or(f64::NAN), 6)?;
            write!(w, ",{},{},", r.retransmissions, r.rto_expirations)?;
            write_f64(&mut w, r.max_completion_time_s.unwrap_or(f64::NAN), 6)?;
            write!(w, ",{}", r.flows_completed)?;
            for link in &links {
                w.write_all(b",")?;
                if let Some((_, u)) = r.link_utilisation.iter().find(|(n, _)| n == link) {
                    write_f64(&mut w, *u, 6)?;
                }
            }
            writeln!(w)?;
        }
        w.flush()?;
        Ok(self.path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::summary::tests::example;

    #[test]
    fn metrics_follow_their_definitions() {
        let row = SweepRow::from_summary(3, &[], &example());
        assert_eq!(row.total_goodput_bps, 6e6);
        assert_eq!(row.mean_goodput_bps, 3e6);
        assert_eq!(row.min_goodput_bps, 2e6);
        // (4+2)² / (2 · (16+4)) = 36/40.
        assert!((row.jain_fairness.unwrap() - 0.9).abs() < 1e-12);
        assert_eq!(row.retransmissions, 10);
        assert_eq!(row.rto_expirations, 2);
        assert_eq!(row.max_completion_time_s, Some(2.5));
        assert_eq!(row.flows_completed, 1);
        assert_eq!(row.link_utilisation, vec![("sat_fwd".to_string(), 0.6)]);
    }

    #[test]
    fn jain_is_one_for_equal_shares_and_undefined_without_traffic() {
        let mut s = example();
        s.flows[1].goodput_bps = 4e6;
        assert_eq!(SweepRow::from_summary(0, &[], &s).jain_fairness, Some(1.0));
        s.flows[0].goodput_bps = 0.0;
        s.flows[1].goodput_bps = 0.0;
        assert_eq!(SweepRow::from_summary(0, &[], &s).jain_fairness, None);
        s.flows.clear();
        let row = SweepRow::from_summary(0, &[], &s);
        assert_eq!(
            (row.jain_fairness, row.min_goodput_bps, row.mean_goodput_bps),
            (None, 0.0, 0.0)
        );
    }

    #[test]
    fn csv_is_sorted_by_run_and_exact() {
        let dir = tempfile::tempdir().unwrap();
        let keys = vec!["rate".to_string(), "cc".to_string()];
        let mut w = SweepWriter::create(dir.path(), keys).unwrap();
        let assign = |rate: &str, cc: &str| {
            vec![
                ("rate".to_string(), rate.to_string()),
                ("cc".to_string(), cc.to_string()),
            ]
        };
        let mut other = example();
        other.links[0].name = "ret,link".into();
        other.flows.truncate(1);
        // Pushed out of order, as parallel runs finish.
        w.push(SweepRow::from_summary(
            1,
            &assign("10Mbps", "cubic"),
            &other,
        ));
        w.push(SweepRow::from_summary(
            0,
            &assign("2Mbps", "reno"),
            &example(),
        ));
        let path = w.finish().unwrap();
        assert_eq!(
            std::fs::read_to_string(path).unwrap(),
            "run,rate,cc,total_goodput_bps,mean_goodput_bps,min_goodput_bps,jain_fairness,\
             retransmissions,rto_expirations,max_completion_time_s,flows_completed,\
             utilisation_sat_fwd,\"utilisation_ret,link\"\n\
             0,2Mbps,reno,6000000.0,3000000.0,2000000.0,0.900000,10,2,2.500000,1,0.600000,\n\
             1,10Mbps,cubic,4000000.0,4000000.0,4000000.0,1.000000,5,1,2.500000,1,,0.600000\n"
        );
        // No seed swept: no grouped table.
        assert!(!dir
            .path()
            .join(crate::sweep_stats::SWEEP_STATS_CSV)
            .exists());
    }
}
