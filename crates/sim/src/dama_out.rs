//! `dama.csv` (one row per ST per superframe) and `rtt.csv` (RTT samples per flow), written
//! when the scenario has `[[dama]]` links. Kept apart from `flows.csv`/`links.csv` so those
//! keep their columns.
//!
//! `dama.csv`: `time_s,dama,terminal,superframe,cra,rbdc,vbdc,fca,queue_bytes,req_rbdc,
//! req_vbdc,req_lost` — slots granted for the superframe by category, bytes queued at its start,
//! and the request sent then (for superframe + L).
//!
//! `rtt.csv`: `time_s,flow,rtt_ms,srtt_ms` — the sender's latest RTT sample and SRTT, written at
//! each sampling tick at which they changed (so at most one sample per `output.interval`).

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;

use satpep_proto::dama::SuperframeRecord;
use satpep_proto::{Duration, Instant};
use satpep_scenario::Scenario;

/// File name of the DAMA series.
pub const DAMA_CSV: &str = "dama.csv";
/// File name of the RTT samples.
pub const RTT_CSV: &str = "rtt.csv";

/// Writer of `dama.csv` and `rtt.csv`.
pub struct DamaWriter {
    dama: BufWriter<File>,
    rtt: BufWriter<File>,
    groups: Vec<String>,
    terminals: Vec<Vec<String>>,
    flows: Vec<String>,
}

impl DamaWriter {
    /// Create both files in `dir`, or nothing when `scenario` has no `[[dama]]`.
    pub fn create(dir: &Path, scenario: &Scenario) -> io::Result<Option<Self>> {
        if scenario.dama.is_empty() {
            return Ok(None);
        }
        let mut dama = BufWriter::new(File::create(dir.join(DAMA_CSV))?);
        writeln!(
            dama,
            "time_s,dama,terminal,superframe,cra,rbdc,vbdc,fca,queue_bytes,req_rbdc,req_vbdc,req_lost"
        )?;
        let mut rtt = BufWriter::new(File::create(dir.join(RTT_CSV))?);
        writeln!(rtt, "time_s,flow,rtt_ms,srtt_ms")?;
        Ok(Some(Self {
            dama,
            rtt,
            groups: scenario.dama.iter().map(|d| d.name.clone()).collect(),
            terminals: scenario
                .dama
                .iter()
                .map(|d| {
                    d.terminals
                        .iter()
                        .map(|&t| scenario.nodes[t].name.clone())
                        .collect()
                })
                .collect(),
            flows: scenario.flows.iter().map(|f| f.name.clone()).collect(),
        }))
    }

    /// One row of `dama.csv` for group `g`.
    pub fn write_superframe(&mut self, g: usize, r: &SuperframeRecord) -> io::Result<()> {
        let group = self.groups.get(g).map_or("?", String::as_str);
        let term = self
            .terminals
            .get(g)
            .and_then(|t| t.get(r.terminal))
            .map_or("?", String::as_str);
        let a = r.granted;
        writeln!(
            self.dama,
            "{},{group},{term},{},{},{},{},{},{},{},{},{}",
            secs(r.time),
            r.superframe,
            a.cra,
            a.rbdc,
            a.vbdc,
            a.fca,
            r.queue_bytes,
            r.request.rbdc,
            r.request.vbdc,
            u8::from(r.lost)
        )
    }

    /// One row of `rtt.csv`.
    pub fn write_rtt(
        &mut self,
        now: Instant,
        flow: usize,
        rtt: Duration,
        srtt: Duration,
    ) -> io::Result<()> {
        let name = self.flows.get(flow).map_or("?", String::as_str);
        writeln!(
            self.rtt,
            "{},{name},{:.3},{:.3}",
            secs(now),
            rtt.as_nanos() as f64 / 1e6,
            srtt.as_nanos() as f64 / 1e6
        )
    }

    /// Flush both files.
    pub fn finish(mut self) -> io::Result<()> {
        self.dama.flush()?;
        self.rtt.flush()
    }
}

/// Seconds with 9 decimals from integer nanoseconds (exact, locale-free).
fn secs(t: Instant) -> String {
    let ns = t.as_nanos();
    format!("{}.{:09}", ns / 1_000_000_000, ns % 1_000_000_000)
}
