//! Time series as CSV: `flows.csv` (TCP sender state per flow) and `links.csv` (queue and
//! throughput per link), one row per sample, ready for `pandas.read_csv`.
//!
//! Rows are written in the order the driver records them (which, in the simulator, is time
//! order). Flows and links are identified by name, not index, so that files from different
//! runs can be concatenated and compared. Numbers have fixed decimals and no locale, and times
//! are printed from integer nanoseconds, so equal runs give equal bytes. Writes go through a
//! `BufWriter` and allocate nothing per row.
//!
//! Whole rows only: each row is formatted into a scratch buffer and handed to the `BufWriter`
//! in one `write_all`, which flushes *before* a row that would not fit, so every write(2)
//! ends at a line break. A run killed at any moment (even by SIGKILL) leaves files whose
//! last line is complete, which every CSV reader accepts.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;

use satpep_proto::{Duration, Instant};

use crate::csv_fmt::{field, write_f64, write_millis, write_secs};

/// File name of the per-flow series.
pub const FLOWS_CSV: &str = "flows.csv";
/// File name of the per-link series.
pub const LINKS_CSV: &str = "links.csv";

/// Header row of `flows.csv`.
pub const FLOWS_HEADER: &str = "time_s,flow,cwnd_bytes,ssthresh_bytes,srtt_ms,rto_ms,rwnd_bytes,\
bytes_in_flight,snd_una_bytes,snd_nxt_bytes,delivered_bytes,retransmissions,pacing_rate_bps";
/// Header row of `links.csv`.
pub const LINKS_HEADER: &str =
    "time_s,link,queue_packets,queue_bytes,throughput_bps,queue_drops,error_drops";

/// One sample of a TCP sender's state (one row of `flows.csv`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FlowSample {
    /// When the sample was taken.
    pub time: Instant,
    /// Index into the flow names given to [`SeriesWriter::create`].
    pub flow: usize,
    /// Congestion window (bytes).
    pub cwnd: u64,
    /// Slow-start threshold (bytes); `None` while it is still "infinite" (before the first loss).
    pub ssthresh: Option<u64>,
    /// Smoothed RTT (RFC 6298 `SRTT`); `None` before the first RTT sample.
    pub srtt: Option<Duration>,
    /// Retransmission timeout currently in force.
    pub rto: Duration,
    /// Peer's advertised receive window, after window scaling (bytes).
    pub rwnd: u64,
    /// Bytes sent and not yet cumulatively or selectively acknowledged (bytes).
    pub bytes_in_flight: u64,
    /// `SND.UNA` as bytes since the initial sequence number (64-bit: does not wrap).
    pub snd_una: u64,
    /// `SND.NXT` as bytes since the initial sequence number (64-bit: does not wrap).
    pub snd_nxt: u64,
    /// Bytes delivered in order to the receiving application so far.
    pub delivered: u64,
    /// Segments retransmitted so far (fast retransmit, RTO and SACK recovery).
    pub retransmissions: u64,
    /// Pacing rate (bytes/s) of a paced sender (BBR); `None` when it does not pace.
    pub pacing_rate: Option<u64>,
}

/// One sample of a link's queue and output (one row of `links.csv`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LinkSample {
    /// When the sample was taken.
    pub time: Instant,
    /// Index into the link names given to [`SeriesWriter::create`].
    pub link: usize,
    /// Packets waiting in the queue (not counting the one being serialised).
    pub queue_packets: u64,
    /// Bytes waiting in the queue (on-the-wire lengths).
    pub queue_bytes: u64,
    /// Output rate over the sampling interval that ends at `time` (bit/s).
    pub throughput_bps: f64,
    /// Packets dropped so far because the queue was full (cumulative).
    pub queue_drops: u64,
    /// Packets dropped so far by the error model (cumulative).
    pub error_drops: u64,
}

/// Writes `flows.csv` and `links.csv` in one directory.
#[derive(Debug)]
pub struct SeriesWriter {
    flows: BufWriter<File>,
    links: BufWriter<File>,
    /// Names as CSV fields (quoted once here, so rows need no allocation).
    flow_names: Vec<String>,
    link_names: Vec<String>,
    /// One row being formatted (reused: no allocation per row once warm).
    row: Vec<u8>,
}

impl SeriesWriter {
    /// Creates (or truncates) `dir/flows.csv` and `dir/links.csv` and writes their header rows.
    /// `flow_names[i]` names flow `i` in [`FlowSample::flow`], likewise for links.
    pub fn create(
        dir: impl AsRef<Path>,
        flow_names: Vec<String>,
        link_names: Vec<String>,
    ) -> io::Result<Self> {
        let dir = dir.as_ref();
        let mut flows = BufWriter::new(File::create(dir.join(FLOWS_CSV))?);
        let mut links = BufWriter::new(File::create(dir.join(LINKS_CSV))?);
        writeln!(flows, "{FLOWS_HEADER}")?;
        writeln!(links, "{LINKS_HEADER}")?;
        let quote = |names: Vec<String>| names.iter().map(|n| field(n).into_owned()).collect();
        Ok(Self {
            flows,
            links,
            flow_names: quote(flow_names),
            link_names: quote(link_names),
            row: Vec::with_capacity(256),
        })
    }

    /// Appends one row to `flows.csv`. Fails if `s.flow` has no name.
    pub fn write_flow(&mut self, s: &FlowSample) -> io::Result<()> {
        let name = self
            .flow_names
            .get(s.flow)
            .ok_or_else(|| unknown("flow", s.flow))?;
        let w = &mut self.row;
        w.clear();
        write_secs(w, s.time.as_nanos())?;
        write!(w, ",{name},{},", s.cwnd)?;
        if let Some(ssthresh) = s.ssthresh {
            write!(w, "{ssthresh}")?;
        }
        w.write_all(b",")?;
        if let Some(srtt) = s.srtt {
            write_millis(w, srtt.as_nanos())?;
        }
        w.write_all(b",")?;
        write_millis(w, s.rto.as_nanos())?;
        write!(
            w,
            ",{},{},{},{},{},{},",
            s.rwnd, s.bytes_in_flight, s.snd_una, s.snd_nxt, s.delivered, s.retransmissions
        )?;
        if let Some(rate) = s.pacing_rate {
            write!(w, "{}", rate * 8)?;
        }
        w.write_all(b"\n")?;
        self.flows.write_all(&self.row)
    }

    /// Appends one row to `links.csv`. Fails if `s.link` has no name.
    pub fn write_link(&mut self, s: &LinkSample) -> io::Result<()> {
        let name = self
            .link_names
            .get(s.link)
            .ok_or_else(|| unknown("link", s.link))?;
        let w = &mut self.row;
        w.clear();
        write_secs(w, s.time.as_nanos())?;
        write!(w, ",{name},{},{},", s.queue_packets, s.queue_bytes)?;
        write_f64(w, s.throughput_bps, 1)?;
        writeln!(w, ",{},{}", s.queue_drops, s.error_drops)?;
        self.links.write_all(&self.row)
    }

    /// Flushes both files and reports any write error that buffering had deferred.
    pub fn finish(mut self) -> io::Result<()> {
        self.flows.flush()?;
        self.links.flush()
    }
}

/// File name of the UDP flows' series (written only when a scenario has UDP flows, so that
/// the files of TCP-only runs stay as they were).
pub const UDP_CSV: &str = "udp.csv";
/// Header row of `udp.csv`.
pub const UDP_HEADER: &str =
    "time_s,flow,packets_sent,packets_received,bytes_received,lost_packets,out_of_order,jitter_ms";

/// One sample of a UDP flow's sink (one row of `udp.csv`); its `flows.csv` row carries the
/// bytes received as `delivered_bytes`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct UdpSample {
    /// When the sample was taken.
    pub time: Instant,
    /// Flow name, as in `flows.csv`.
    pub flow: usize,
    /// Datagrams the source sent so far.
    pub packets_sent: u64,
    /// Datagrams received so far.
    pub packets_received: u64,
    /// Payload bytes received so far.
    pub bytes_received: u64,
    /// Datagrams missing below the highest sequence number received.
    pub lost_packets: u64,
    /// Datagrams received after a higher sequence number.
    pub out_of_order: u64,
    /// RFC 3550 interarrival jitter (s).
    pub jitter_s: f64,
}

/// Writes `udp.csv`.
#[derive(Debug)]
pub struct UdpSeriesWriter {
    out: BufWriter<File>,
    names: Vec<String>,
}

impl UdpSeriesWriter {
    /// Creates (or truncates) `dir/udp.csv` with its header; `flow_names[i]` names flow `i`.
    pub fn create(dir: impl AsRef<Path>, flow_names: Vec<String>) -> io::Result<Self> {
        let mut out = BufWriter::new(File::create(dir.as_ref().join(UDP_CSV))?);
        writeln!(out, "{UDP_HEADER}")?;
        let names = flow_names.iter().map(|n| field(n).into_owned()).collect();
        Ok(Self { out, names })
    }

    /// Appends one row. Fails if `s.flow` has no name.
    pub fn write(&mut self, s: &UdpSample) -> io::Result<()> {
        let name = self
            .names
            .get(s.flow)
            .ok_or_else(|| unknown("flow", s.flow))?;
        write_secs(&mut self.out, s.time.as_nanos())?;
        write!(
            self.out,
            ",{name},{},{},{},{},{},",
            s.packets_sent, s.packets_received, s.bytes_received, s.lost_packets, s.out_of_order
        )?;
        write_f64(&mut self.out, s.jitter_s * 1e3, 6)?;
        writeln!(self.out)
    }

    /// Flushes the file and reports any deferred write error.
    pub fn finish(mut self) -> io::Result<()> {
        self.out.flush()
    }
}

fn unknown(what: &str, index: usize) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("no {what} named for index {index}"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flow_sample() -> FlowSample {
        FlowSample {
            time: Instant(1_250_000_001),
            flow: 1,
            cwnd: 14_600,
            ssthresh: None,
            srtt: None,
            rto: Duration::from_secs(1),
            rwnd: 65_535,
            bytes_in_flight: 2_920,
            snd_una: 1,
            snd_nxt: 2_921,
            delivered: 0,
            retransmissions: 0,
            pacing_rate: None,
        }
    }

    #[test]
    fn rows_have_fixed_formatting_and_empty_cells_for_unknowns() {
        let dir = tempfile::tempdir().unwrap();
        let names = vec!["bulk0".to_string(), "web,1".to_string()];
        let mut w = SeriesWriter::create(dir.path(), names, vec!["gw->sat".into()]).unwrap();
        w.write_flow(&flow_sample()).unwrap();
        w.write_flow(&FlowSample {
            time: Instant(2_000_000_000),
            ssthresh: Some(7_300),
            srtt: Some(Duration::from_micros(560_250)),
            snd_una: 5_000_000_000, // past 2^32: no wrap
            snd_nxt: 5_000_014_600,
            delivered: 4_999_999_999,
            retransmissions: 3,
            pacing_rate: Some(2_500_000),
            ..flow_sample()
        })
        .unwrap();
        w.write_link(&LinkSample {
            time: Instant(100_000_000),
            link: 0,
            queue_packets: 12,
            queue_bytes: 18_000,
            throughput_bps: 9_999_999.96,
            queue_drops: 2,
            error_drops: 1,
        })
        .unwrap();
        w.finish().unwrap();

        let flows = std::fs::read_to_string(dir.path().join(FLOWS_CSV)).unwrap();
        assert_eq!(
            flows,
            format!(
                "{FLOWS_HEADER}\n\
                 1.250000001,\"web,1\",14600,,,1000.000000,65535,2920,1,2921,0,0,\n\
                 2.000000000,\"web,1\",14600,7300,560.250000,1000.000000,65535,2920,\
                 5000000000,5000014600,4999999999,3,20000000\n"
            )
        );
        let links = std::fs::read_to_string(dir.path().join(LINKS_CSV)).unwrap();
        assert_eq!(
            links,
            format!("{LINKS_HEADER}\n0.100000000,gw->sat,12,18000,10000000.0,2,1\n")
        );
    }

    /// What a reader sees of a run killed without warning (the writer never flushed): only
    /// whole rows, however many buffer flushes happened before.
    #[test]
    fn a_writer_that_never_finishes_leaves_only_whole_rows() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = SeriesWriter::create(dir.path(), vec!["f".into()], vec!["l".into()]).unwrap();
        for i in 0..3_000u64 {
            w.write_flow(&FlowSample {
                time: Instant(i * 10_000_000),
                snd_una: i * 1_460,
                ..flow_sample_for(0)
            })
            .unwrap();
        }
        std::mem::forget(w); // as SIGKILL would: no flush, no drop
        let flows = std::fs::read_to_string(dir.path().join(FLOWS_CSV)).unwrap();
        let rows = flows.lines().count() - 1;
        assert!(
            rows > 1_000,
            "the buffer flushed several times: {rows} rows"
        );
        assert!(flows.ends_with('\n'));
        for line in flows.lines().skip(1) {
            assert_eq!(line.split(',').count(), 13, "cut row: {line}");
        }
    }

    fn flow_sample_for(flow: usize) -> FlowSample {
        FlowSample {
            flow,
            ..flow_sample()
        }
    }

    #[test]
    fn header_has_the_documented_columns() {
        assert_eq!(FLOWS_HEADER.split(',').count(), 13);
        assert_eq!(LINKS_HEADER.split(',').count(), 7);
        assert!(FLOWS_HEADER.starts_with("time_s,flow,cwnd_bytes,ssthresh_bytes,srtt_ms"));
    }

    #[test]
    fn unnamed_index_is_an_error_and_writes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = SeriesWriter::create(dir.path(), vec!["f".into()], vec![]).unwrap();
        let err = w
            .write_flow(&FlowSample {
                flow: 7,
                ..flow_sample()
            })
            .unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
        let err = w
            .write_link(&LinkSample {
                time: Instant::ZERO,
                link: 0,
                queue_packets: 0,
                queue_bytes: 0,
                throughput_bps: 0.0,
                queue_drops: 0,
                error_drops: 0,
            })
            .unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
        w.finish().unwrap();
        let flows = std::fs::read_to_string(dir.path().join(FLOWS_CSV)).unwrap();
        assert_eq!(flows, format!("{FLOWS_HEADER}\n"));
    }
}
