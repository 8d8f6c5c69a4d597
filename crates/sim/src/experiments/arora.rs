//! Arora et al. (DirecPC): throughput of a download over a 1 Mb/s satellite with a 28.8 kb/s
//! dial-up return, without enhancement, with TCP spoofing, and with spoofing plus selective ACK
//! dropping at the terminal's return queue. Scenario: `scenarios/arora/arora.toml` (embedded);
//! docs: docs/reproductions/arora.md.

use satpep_proto::middlebox::Middlebox;
use satpep_proto::Instant;

use crate::Simulation;

/// The scenario file, embedded so that tests and examples run from any directory.
pub const SCENARIO: &str = include_str!("../../../../scenarios/arora/arora.toml");

/// The three configurations of the paper.
#[derive(Clone, Copy, Debug, Eq, PartialEq)]
pub enum Config {
    /// Plain end-to-end TCP.
    None,
    /// The gateway spoofs (CCB per connection, 64 KB buffer).
    Spoofing,
    /// Spoofing, and the terminal's return queue keeps only the newest ACK of each flow (the
    /// ACK filter of `satpep_proto::ack`, `kind = "ack_filtering"`).
    SpoofingAckDrop,
}

impl Config {
    /// All three, in the paper's order.
    pub const ALL: [Self; 3] = [Self::None, Self::Spoofing, Self::SpoofingAckDrop];

    /// Short name for CSV files and legends.
    pub fn name(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::Spoofing => "spoofing",
            Self::SpoofingAckDrop => "spoofing_ackdrop",
        }
    }

    /// The `--set` overrides for this configuration and an Internet host window of `window`
    /// bytes.
    pub fn overrides(self, window: u64) -> Vec<String> {
        let mut o = vec![format!("flow.download.tcp.send_buffer={window}B")];
        if self != Self::None {
            o.push(
                "node.gw.middlebox={ kind = \"spoof\", internet_port = 0, buffer_per_conn = \"64KiB\" }"
                    .into(),
            );
        }
        if self == Self::SpoofingAckDrop {
            o.push("link.dialup.queue={ kind = \"ack_filtering\", limit_packets = 50 }".into());
        }
        o
    }
}

/// What one run measured.
#[derive(Clone, Copy, Debug)]
pub struct Outcome {
    /// Bytes × 8 / time until the client had every byte.
    pub throughput_bps: f64,
    /// Spoofed ACKs the gateway sent.
    pub spoofed_acks: u64,
    /// Gateway retransmissions.
    pub gw_retransmissions: u64,
    /// Packets dropped by the dial-up queue (overflow).
    pub dialup_queue_drops: u64,
}

/// Run one configuration with an Internet host window of `window` bytes; ends when the client
/// has every byte (the server finishes much earlier when the gateway spoofs). `extra`: more
/// `--set` overrides (e.g. `flow.download.tcp.delack_segments=1`, `link.dialup.rate=14.4kbps`).
pub fn run(config: Config, window: u64, extra: &[String]) -> Result<Outcome, String> {
    let mut overrides = config.overrides(window);
    overrides.extend_from_slice(extra);
    let loaded =
        satpep_scenario::load_str(SCENARIO, "arora.toml", &overrides).map_err(|e| e.to_string())?;
    let sc = &loaded.scenario;
    let bytes = match &sc.flows[0].app {
        satpep_scenario::AppSpec::Bulk { bytes: Some(b), .. } => b.bytes(),
        _ => return Err("the download must be a bulk transfer of a fixed size".into()),
    };
    let gw = sc
        .nodes
        .iter()
        .position(|n| n.name == "gw")
        .ok_or("no `gw`")?;
    let dialup = sc
        .links
        .iter()
        .position(|l| l.name == "dialup")
        .ok_or("no `dialup`")?;
    let end = Instant::ZERO + sc.duration;
    let mut sim = Simulation::new(sc);
    let step = satpep_proto::Duration::from_millis(10);
    let mut t = Instant::ZERO;
    let mut done = None;
    while t < end {
        t = (t + step).min(end);
        sim.run_until(t);
        if sim.listener(0).bytes_delivered() >= bytes {
            done = Some(t.as_secs_f64());
            break;
        }
    }
    let (spoofed_acks, gw_retransmissions) = match sim.middlebox(gw) {
        Some(Middlebox::Spoof(s)) => (s.stats().spoofed_acks, s.stats().retransmissions),
        _ => (0, 0),
    };
    let delivered = sim.listener(0).bytes_delivered();
    Ok(Outcome {
        throughput_bps: delivered as f64 * 8.0 / done.unwrap_or(t.as_secs_f64()).max(1e-9),
        spoofed_acks,
        gw_retransmissions,
        dialup_queue_drops: sim.link(dialup).stats().queue_drops,
    })
}
