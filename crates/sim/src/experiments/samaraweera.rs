//! Samaraweera, "Return link optimization for Internet service provision using DVB-S networks"
//! (ACM CCR 29(3), 1999): unmodified TCP, RFC 1144 header compression, ACK suppression, ACK
//! filtering (not in the paper), ACK compaction and compaction with ACK spacing on the return link
//! of a 10 Mb/s DVB-S path. Scenario: `scenarios/samaraweera/samaraweera.toml` (embedded);
//! docs: docs/reproductions/samaraweera.md.

use satpep_proto::link::AnyQueue;
use satpep_proto::middlebox::Middlebox;
use satpep_proto::{Duration, Instant};

use crate::Simulation;

/// The scenario file, embedded so that tests and examples run from any directory.
pub const SCENARIO: &str = include_str!("../../../../scenarios/samaraweera/samaraweera.toml");

/// Scenario link indices (file order).
const LINK_FORWARD: usize = 2;
const LINK_RETURN: usize = 3;
/// Scenario node index of the hub.
const NODE_HUB: usize = 1;

/// A return-link technique.
#[derive(Clone, Copy, Debug, Eq, PartialEq)]
pub enum Technique {
    /// Plain drop-tail return queue.
    Unmodified,
    /// RFC 1144 TCP/IP header compression on the return link.
    HeaderCompression,
    /// ACK suppression (§5), low/high water marks 4/60.
    Suppression,
    /// ACK filtering, ns-2 semantic queue (not in the paper; the usual baseline).
    Filtering,
    /// ACK compaction (§6) with the stateless expander at the hub.
    Compaction,
    /// Compaction with ACK spacing at the expander (§7), N = 4.
    CompactionSpacing,
}

impl Technique {
    /// The paper's four plus filtering and spacing.
    pub const ALL: [Self; 6] = [
        Self::Unmodified,
        Self::HeaderCompression,
        Self::Suppression,
        Self::Filtering,
        Self::Compaction,
        Self::CompactionSpacing,
    ];

    /// Short name for CSV files and legends.
    pub fn name(self) -> &'static str {
        match self {
            Self::Unmodified => "unmodified",
            Self::HeaderCompression => "header_compression",
            Self::Suppression => "suppression",
            Self::Filtering => "filtering",
            Self::Compaction => "compaction",
            Self::CompactionSpacing => "compaction_spacing",
        }
    }

    /// The `--set` overrides that select this technique.
    pub fn overrides(self) -> Vec<String> {
        let kind = |k: &str| format!("link.return.queue.kind={k}");
        match self {
            Self::Unmodified => vec![],
            Self::HeaderCompression => vec!["link.return.compression=vj".into()],
            Self::Suppression => vec![kind("ack_suppression")],
            Self::Filtering => vec![kind("ack_filtering")],
            Self::Compaction => vec![kind("ack_compaction")],
            Self::CompactionSpacing => vec![
                kind("ack_compaction"),
                "node.hub.middlebox.spacing=true".into(),
            ],
        }
    }
}

/// One run.
#[derive(Clone, Debug)]
pub struct Point {
    /// Return-link technique.
    pub technique: Technique,
    /// Return-link rate, e.g. `"9.6kbps"`.
    pub return_rate: String,
    /// Bulk flows from the server to the client (1 or 3 in the paper).
    pub flows: usize,
    /// Gap between flow starts.
    pub stagger: Duration,
    /// Simulated time.
    pub duration: Duration,
    /// Hub satellite-interface queue in packets; `None` = the scenario's (2200, lossless).
    pub forward_queue: Option<u32>,
    /// Suppression and compaction: keep only this many duplicate ACKs per acknowledgement
    /// number (§5's "limit the number of unsuppressed ACKs only up to 3"); `None` = every
    /// duplicate passes, as the paper implemented it.
    pub unsuppressed_duplicates: Option<u32>,
}

impl Point {
    /// A point with one flow for 60 s.
    pub fn single(technique: Technique, return_rate: &str) -> Self {
        Self {
            technique,
            return_rate: return_rate.into(),
            flows: 1,
            stagger: Duration::ZERO,
            duration: Duration::from_secs(60),
            forward_queue: None,
            unsuppressed_duplicates: None,
        }
    }

    /// Three flows started `stagger` apart, 60 s.
    pub fn three(technique: Technique, return_rate: &str, stagger: Duration) -> Self {
        Self {
            flows: 3,
            stagger,
            ..Self::single(technique, return_rate)
        }
    }

    /// The scenario text (flows 2.. appended) and the overrides for this point.
    pub fn scenario(&self) -> (String, Vec<String>) {
        let mut text = SCENARIO.to_owned();
        for i in 1..self.flows {
            text.push_str(&format!(
                "\n[[flow]]\nname = \"f{}\"\nfrom = \"server\"\nto = \"client\"\nstart = \"{}ns\"\n\
                 app = {{ kind = \"bulk\" }}\n",
                i + 1,
                self.stagger.as_nanos() * i as u64
            ));
        }
        let mut o = self.technique.overrides();
        o.push(format!("link.return.rate={}", self.return_rate));
        o.push(format!("duration={}ns", self.duration.as_nanos()));
        if let Some(q) = self.forward_queue {
            o.push(format!("link.forward.queue.limit_packets={q}"));
        }
        if let Some(n) = self.unsuppressed_duplicates {
            o.push(format!("link.return.queue.ack.unsuppressed_duplicates={n}"));
        }
        (text, o)
    }
}

/// One sample.
#[derive(Clone, Debug)]
pub struct Sample {
    /// Seconds since the start.
    pub t: f64,
    /// Each flow's congestion window, bytes.
    pub cwnd: Vec<u64>,
    /// Each flow's bytes acknowledged (first unacknowledged sequence offset).
    pub acked: Vec<u64>,
    /// Packets waiting at the hub's satellite (forward) interface.
    pub forward_queue: usize,
    /// Packets waiting at the client's return interface.
    pub return_queue: usize,
    /// Packets dropped so far at the hub's satellite interface (queue full).
    pub forward_drops: u64,
    /// Packets offered to the hub's satellite interface so far (queued, sent or dropped).
    pub forward_arrivals: u64,
    /// ACKs dropped so far at the client's return interface (queue full).
    pub return_drops: u64,
    /// Duplicate ACKs that have entered the return interface's ACK queue so far (0 without one).
    pub return_duplicates: u64,
    /// Of those, removed (only with `unsuppressed_duplicates`).
    pub return_duplicates_removed: u64,
    /// Retransmission timeouts so far, all flows.
    pub rtos: u64,
    /// Fast retransmits so far, all flows.
    pub fast_retransmits: u64,
}

/// What one flow of a run measured.
#[derive(Clone, Debug)]
pub struct FlowOutcome {
    /// Bytes delivered to the client application.
    pub delivered: u64,
    /// Retransmission timeouts.
    pub rtos: u64,
    /// Fast retransmits.
    pub fast_retransmits: u64,
    /// Retransmitted segments.
    pub retransmissions: u64,
}

/// What one run measured.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// Bytes delivered to the client applications, all flows.
    pub delivered: u64,
    /// Aggregate goodput over the run, bit/s.
    pub goodput_bps: f64,
    /// Retransmission timeouts, all flows.
    pub rtos: u64,
    /// Retransmitted segments, all flows.
    pub retransmissions: u64,
    /// ACKs removed at the return queue (suppressed, filtered, compacted).
    pub removed: u64,
    /// ACKs dropped at the return queue (full).
    pub return_drops: u64,
    /// ACKs the expander regenerated.
    pub regenerated: u64,
    /// Largest forward queue, packets.
    pub max_forward_queue: u64,
    /// Time-average return queue, packets.
    pub mean_return_queue: f64,
    /// Packets dropped at the hub's satellite interface (queue full).
    pub forward_drops: u64,
    /// Per flow, in start order.
    pub flows: Vec<FlowOutcome>,
    /// Samples (empty unless asked for).
    pub samples: Vec<Sample>,
}

/// The return link's ACK-queue duplicate counters (arrived, removed); zeros without one.
fn return_duplicates(sim: &Simulation) -> (u64, u64) {
    match sim.link(LINK_RETURN).queue() {
        AnyQueue::Ack(q) => (q.stats().duplicates, q.stats().duplicates_removed),
        _ => (0, 0),
    }
}

/// Run one point, sampling every `sample_every` if given.
pub fn run(point: &Point, sample_every: Option<Duration>) -> Result<Outcome, String> {
    let (text, overrides) = point.scenario();
    let loaded = satpep_scenario::load_str(&text, "samaraweera.toml", &overrides)
        .map_err(|e| e.to_string())?;
    let sc = &loaded.scenario;
    let end = Instant::ZERO + sc.duration;
    let n = sc.flows.len();
    let mut sim = Simulation::new(sc);
    let step = sample_every.unwrap_or(Duration::from_millis(500));
    let mut t = Instant::ZERO;
    let mut samples = Vec::new();
    while t < end {
        t = (t + step).min(end);
        sim.run_until(t);
        if sample_every.is_some() {
            let (dups, dups_removed) = return_duplicates(&sim);
            let sum = |f: fn(&satpep_proto::tcp::TcpStats) -> u64| {
                (0..n).map(|i| f(&sim.opener(i).stats())).sum::<u64>()
            };
            samples.push(Sample {
                t: t.as_secs_f64(),
                cwnd: (0..n).map(|i| sim.opener(i).cwnd()).collect(),
                acked: (0..n).map(|i| sim.opener(i).bytes_acked()).collect(),
                forward_queue: sim.link(LINK_FORWARD).queue_len_packets(),
                return_queue: sim.link(LINK_RETURN).queue_len_packets(),
                forward_drops: sim.link(LINK_FORWARD).stats().queue_drops,
                forward_arrivals: sim.link(LINK_FORWARD).stats().arrivals,
                return_drops: sim.link(LINK_RETURN).stats().queue_drops,
                return_duplicates: dups,
                return_duplicates_removed: dups_removed,
                rtos: sum(|s| s.rto_expirations),
                fast_retransmits: sum(|s| s.fast_retransmits),
            });
        }
    }
    let delivered: u64 = (0..n).map(|i| sim.listener(i).bytes_delivered()).sum();
    let (mut rtos, mut retx) = (0, 0);
    let mut flows = Vec::with_capacity(n);
    for i in 0..n {
        let st = sim.opener(i).stats();
        rtos += st.rto_expirations;
        retx += st.retransmissions;
        flows.push(FlowOutcome {
            delivered: sim.listener(i).bytes_delivered(),
            rtos: st.rto_expirations,
            fast_retransmits: st.fast_retransmits,
            retransmissions: st.retransmissions,
        });
    }
    let ret = sim.link(LINK_RETURN).stats_at(t);
    let regenerated = match sim.middlebox(NODE_HUB) {
        Some(Middlebox::AckExpander(x)) => x.stats().regenerated,
        _ => 0,
    };
    Ok(Outcome {
        delivered,
        goodput_bps: delivered as f64 * 8.0 / sc.duration.as_secs_f64(),
        rtos,
        retransmissions: retx,
        removed: ret.removed,
        return_drops: ret.queue_drops,
        regenerated,
        max_forward_queue: sim.link(LINK_FORWARD).stats().max_queue_packets,
        mean_return_queue: sim.link(LINK_RETURN).mean_queue_packets(t),
        forward_drops: sim.link(LINK_FORWARD).stats().queue_drops,
        flows,
        samples,
    })
}
