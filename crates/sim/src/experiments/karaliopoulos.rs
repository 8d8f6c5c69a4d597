//! Karaliopoulos, Tafazolli, Evans: TCP over a GEO link with packet errors — end-to-end Reno and
//! SACK, split Reno–SACK, split with delayed duplicate ACKs, Snoop. Scenario:
//! `scenarios/karaliopoulos/karaliopoulos.toml` (embedded); docs: docs/reproductions/karaliopoulos.md.

use satpep_proto::middlebox::Middlebox;
use satpep_proto::{Duration, Instant};

use crate::Simulation;

/// The scenario file, embedded so that tests and examples run from any directory.
pub const SCENARIO: &str = include_str!("../../../../scenarios/karaliopoulos/karaliopoulos.toml");

/// The five schemes of the paper.
#[derive(Clone, Copy, Debug, Eq, PartialEq)]
pub enum Scheme {
    /// Reno end to end.
    RenoE2e,
    /// SACK end to end.
    SackE2e,
    /// Split connection: Reno sender, SACK over the satellite (gateway window 100 packets).
    SplitRenoSack,
    /// Split connection whose satellite part is Reno with delayed duplicate ACKs and link-level
    /// retransmission (Snoop without dupACK hiding at the gateway, the delay element at the
    /// terminal).
    SplitDelDupAcks,
    /// Snoop at the gateway, Reno end to end.
    Snoop,
    /// Split, Reno over the satellite with delayed duplicate ACKs, and the satellite link's own
    /// selective-repeat ARQ (3 retries, frames delivered as they arrive) as the link-level
    /// retransmitter: the paper's pairing, with a link-layer ARQ instead of Snoop.
    SplitDelDupAcksArq,
    /// Split, Reno over the satellite, the link's ARQ delivering in order (TCP sees delay,
    /// never a duplicate ACK from a corruption), no delay element.
    SplitRenoArqInOrder,
}

impl Scheme {
    /// All five, in the paper's order.
    pub const ALL: [Self; 5] = [
        Self::RenoE2e,
        Self::SackE2e,
        Self::SplitRenoSack,
        Self::SplitDelDupAcks,
        Self::Snoop,
    ];

    /// The link-level retransmitters compared under split Reno (docs: "Link-layer ARQ").
    pub const LINK_LEVEL: [Self; 3] = [
        Self::SplitDelDupAcks,
        Self::SplitDelDupAcksArq,
        Self::SplitRenoArqInOrder,
    ];

    /// Short name for CSV files and legends.
    pub fn name(self) -> &'static str {
        match self {
            Self::SplitDelDupAcksArq => "split_deldupacks_arq",
            Self::SplitRenoArqInOrder => "split_reno_arq_in_order",
            Self::RenoE2e => "reno_e2e",
            Self::SackE2e => "sack_e2e",
            Self::SplitRenoSack => "split_reno_sack",
            Self::SplitDelDupAcks => "split_deldupacks",
            Self::Snoop => "snoop",
        }
    }
}

/// One point of the experiment.
#[derive(Clone, Debug)]
pub struct Point {
    /// Which scheme.
    pub scheme: Scheme,
    /// Packet error rate on the satellite forward link.
    pub per: f64,
    /// Bytes transferred.
    pub bytes: u64,
    /// Satellite link rate (both directions), e.g. `"2Mbps"`.
    pub rate: String,
    /// Seed of the error model.
    pub seed: u64,
    /// How long the delay element holds the third and later duplicate ACKs.
    pub dupack_delay: Duration,
}

impl Point {
    /// The `--set` overrides that turn the baseline scenario into this point.
    pub fn overrides(&self) -> Vec<String> {
        let tcp_half = |recovery: &str, send_buffer: &str| {
            format!(
                "{{ cc = \"reno\", recovery = \"{recovery}\", mss = 1012, initial_window = 4, \
                 send_buffer = \"{send_buffer}\", delack_segments = 1 }}"
            )
        };
        let split = |recovery: &str| {
            format!(
                "node.gw.middlebox={{ kind = \"split_tcp\", buffer_per_conn = \"16MB\", \
                 buffer_total = \"64MB\", tcp_accept = {}, tcp_connect = {} }}",
                tcp_half("reno", "32000B"),
                tcp_half(recovery, "100000B")
            )
        };
        let mut o = vec![
            format!("seed={}", self.seed),
            format!(
                "link.satellite.error={{ model = \"per\", per = {} }}",
                self.per
            ),
            format!("link.satellite.rate={}", self.rate),
            format!("link.satellite-return.rate={}", self.rate),
            format!(
                "flow.transfer.app={{ kind = \"bulk\", bytes = \"{}B\" }}",
                self.bytes
            ),
        ];
        match self.scheme {
            Scheme::RenoE2e => {}
            Scheme::SackE2e => o.push("defaults.tcp.recovery=sack".into()),
            Scheme::SplitRenoSack => o.push(split("sack")),
            Scheme::SplitDelDupAcks => {
                o.push(split("reno"));
                o.push(
                    "node.arq.middlebox={ kind = \"snoop\", satellite_port = 1, \
                     suppress_dupacks = false }"
                        .into(),
                );
                o.push(format!(
                    "node.term.middlebox={{ kind = \"dupack_delay\", port = 1, delay = \"{}ns\" }}",
                    self.dupack_delay.as_nanos()
                ));
            }
            Scheme::Snoop => {
                o.push("node.arq.middlebox={ kind = \"snoop\", satellite_port = 1 }".into())
            }
            Scheme::SplitDelDupAcksArq => {
                o.push(split("reno"));
                o.push("link.satellite.arq={ max_retries = 3, in_order = false }".into());
                o.push(format!(
                    "node.term.middlebox={{ kind = \"dupack_delay\", port = 1, delay = \"{}ns\" }}",
                    self.dupack_delay.as_nanos()
                ));
            }
            Scheme::SplitRenoArqInOrder => {
                o.push(split("reno"));
                o.push("link.satellite.arq={ max_retries = 3, in_order = true }".into());
            }
        }
        o
    }
}

/// One sample of the windows and the gateway buffer.
#[derive(Clone, Copy, Debug)]
pub struct Sample {
    /// Seconds since the start.
    pub t: f64,
    /// The Internet sender's congestion window, bytes.
    pub sender_cwnd: u64,
    /// The gateway's satellite-side sender congestion window (split schemes), bytes.
    pub gw_cwnd: u64,
    /// Bytes in flight of the gateway's satellite-side sender (split schemes).
    pub gw_in_flight: u64,
    /// Bytes held by the gateway (split schemes).
    pub gw_buffer: u64,
}

/// What one run measured.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// Bytes × 8 / time until the receiving application had every byte.
    pub goodput_bps: f64,
    /// That time, seconds (`None`: not finished within the scenario duration).
    pub completion_s: Option<f64>,
    /// The Internet sender's retransmission timeouts.
    pub sender_rtos: u64,
    /// The Internet sender's fast retransmits.
    pub sender_fast_retransmits: u64,
    /// Largest gateway buffer (split schemes), bytes.
    pub max_gw_buffer: u64,
    /// The satellite link's ARQ: retransmissions, and frames given up.
    pub link_retransmissions: u64,
    pub link_given_up: u64,
    /// Samples every `sample_every` (empty if not asked for).
    pub samples: Vec<Sample>,
}

/// Run one point. The run ends when the receiver has every byte: `stop_when_done` would stop
/// at the *sender*'s completion, which a split gateway reaches long before the receiver.
pub fn run(point: &Point, sample_every: Option<Duration>) -> Result<Outcome, String> {
    let loaded = satpep_scenario::load_str(SCENARIO, "karaliopoulos.toml", &point.overrides())
        .map_err(|e| e.to_string())?;
    let sc = &loaded.scenario;
    let gw = sc
        .nodes
        .iter()
        .position(|n| n.name == "gw")
        .ok_or("no node `gw`")?;
    let end = Instant::ZERO + sc.duration;
    let mut sim = Simulation::new(sc);
    let step = Duration::from_millis(10);
    let mut t = Instant::ZERO;
    let mut next_sample = Instant::ZERO;
    let mut samples = Vec::new();
    let mut max_buf = 0;
    let mut completion = None;
    while t < end {
        t = (t + step).min(end);
        sim.run_until(t);
        let (cwnd, infl, buf) = match sim.middlebox(gw) {
            Some(Middlebox::SplitTcp(r)) => {
                let st = r.stats();
                max_buf = max_buf.max(st.max_buffer_bytes);
                r.flows().next().map_or((0, 0, 0), |f| {
                    (f.connect_cwnd, f.connect_in_flight, f.buffered[0])
                })
            }
            _ => (0, 0, 0),
        };
        if let Some(every) = sample_every {
            if t >= next_sample {
                samples.push(Sample {
                    t: t.as_secs_f64(),
                    sender_cwnd: sim.opener(0).cwnd(),
                    gw_cwnd: cwnd,
                    gw_in_flight: infl,
                    gw_buffer: buf,
                });
                next_sample += every;
            }
        }
        if sim.listener(0).bytes_delivered() >= point.bytes {
            completion = Some(t.as_secs_f64());
            break;
        }
    }
    let st = sim.opener(0).stats();
    let sat = sc
        .links
        .iter()
        .position(|l| l.name == "satellite")
        .ok_or("no link `satellite`")?;
    let link = sim.link(sat).stats();
    let goodput_bps = match completion {
        Some(c) => point.bytes as f64 * 8.0 / c,
        None => sim.listener(0).bytes_delivered() as f64 * 8.0 / t.as_secs_f64().max(1e-9),
    };
    Ok(Outcome {
        goodput_bps,
        completion_s: completion,
        sender_rtos: st.rto_expirations,
        sender_fast_retransmits: st.fast_retransmits,
        max_gw_buffer: max_buf,
        link_retransmissions: link.arq_retransmissions,
        link_given_up: link.arq_given_up,
        samples,
    })
}
