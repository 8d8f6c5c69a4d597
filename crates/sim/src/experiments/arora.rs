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

    /// [`overrides`](Self::overrides) plus the paper's IP-in-IP return path: the terminal
    /// encapsulates everything from the client (RFC 2003, +20 bytes per ACK) toward the gateway,
    /// whose tunnel endpoint opens it before the spoofer (if any) sees the ACKs. The ACK filter
    /// then sees the ACKs inside the tunnel packets, as the paper's SLIP driver did. Addresses as
    /// numbered by the scenario: gw 10.0.1.1, term 10.0.2.1; arrival port 1 is the link from the
    /// client at the terminal and the dial-up at the gateway (which has nothing of its own to
    /// encapsulate: its `ports = [23]` selects no traffic of this scenario).
    pub fn tunnel_overrides(self, window: u64) -> Vec<String> {
        let mut o = self.overrides(window);
        o.retain(|s| !s.starts_with("node.gw.middlebox="));
        o.push(
            "node.term.middlebox={ kind = \"ipip_tunnel\", local = \"10.0.2.1\", \
             remote = \"10.0.1.1\", arrival_port = 1 }"
                .into(),
        );
        let gw_tunnel = "{ kind = \"ipip_tunnel\", local = \"10.0.1.1\", \
                         remote = \"10.0.2.1\", arrival_port = 1, ports = [23] }";
        o.push(match self {
            Self::None => format!("node.gw.middlebox={gw_tunnel}"),
            Self::Spoofing | Self::SpoofingAckDrop => format!(
                "node.gw.middlebox={{ kind = \"chain\", elements = [ {gw_tunnel}, \
                 {{ kind = \"spoof\", internet_port = 0, buffer_per_conn = \"64KiB\" }} ] }}"
            ),
        });
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
    /// The spoofer's mean RTT sample on the satellite leg, seconds (what its 64 KB window is
    /// divided by); `None` without spoofing.
    pub gw_rtt_s: Option<f64>,
    /// Time-averaged packets in the dial-up queue until the client had every byte.
    pub dialup_mean_queue: f64,
    /// ACKs the dial-up's ACK filter recognised inside tunnel packets.
    pub tunnelled_acks_seen: u64,
}

/// Run one configuration with an Internet host window of `window` bytes; ends when the client
/// has every byte (the server finishes much earlier when the gateway spoofs). `extra`: more
/// `--set` overrides (e.g. `flow.download.tcp.delack_segments=1`, `link.dialup.rate=14.4kbps`).
pub fn run(config: Config, window: u64, extra: &[String]) -> Result<Outcome, String> {
    run_with(config.overrides(window), extra)
}

/// [`run`] through the paper's IP-in-IP return tunnel ([`Config::tunnel_overrides`]).
pub fn run_tunnelled(config: Config, window: u64, extra: &[String]) -> Result<Outcome, String> {
    run_with(config.tunnel_overrides(window), extra)
}

/// The spoofer at the gateway, alone or in a chain.
fn spoofer(mb: Option<&Middlebox>) -> Option<&satpep_proto::pep::SpoofGateway> {
    match mb? {
        Middlebox::Spoof(s) => Some(s),
        Middlebox::Chain(c) => c.elements().iter().find_map(|e| spoofer(Some(e))),
        _ => None,
    }
}

fn run_with(mut overrides: Vec<String>, extra: &[String]) -> Result<Outcome, String> {
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
    let mut gw_rtt_s = None;
    while t < end {
        t = (t + step).min(end);
        sim.run_until(t);
        // The CCB is freed after the FINs: keep the last estimate seen.
        if let Some(mean) = spoofer(sim.middlebox(gw))
            .and_then(|s| s.rtt_estimators().next())
            .and_then(|(_, rtt)| rtt.mean())
        {
            gw_rtt_s = Some(mean.as_secs_f64());
        }
        if sim.listener(0).bytes_delivered() >= bytes {
            done = Some(t.as_secs_f64());
            break;
        }
    }
    let (spoofed_acks, gw_retransmissions) = spoofer(sim.middlebox(gw)).map_or((0, 0), |s| {
        (s.stats().spoofed_acks, s.stats().retransmissions)
    });
    let delivered = sim.listener(0).bytes_delivered();
    let link = sim.link(dialup);
    let tunnelled_acks_seen = match link.queue() {
        satpep_proto::link::AnyQueue::Ack(q) => q.stats().tunnelled_acks,
        _ => 0,
    };
    Ok(Outcome {
        throughput_bps: delivered as f64 * 8.0 / done.unwrap_or(t.as_secs_f64()).max(1e-9),
        spoofed_acks,
        gw_retransmissions,
        dialup_queue_drops: link.stats().queue_drops,
        gw_rtt_s,
        dialup_mean_queue: link.stats().mean_queue_packets(t),
        tunnelled_acks_seen,
    })
}

/// What [`run_many`] measured.
#[derive(Clone, Debug)]
pub struct ManyOutcome {
    /// Each download's bytes × 8 / time until the client had its last byte.
    pub per_flow_bps: Vec<f64>,
    /// All bytes × 8 / time until the last download was complete.
    pub aggregate_bps: f64,
    /// CCBs the gateway allocated.
    pub ccbs_allocated: u64,
    /// Connections that passed unspoofed because `max_ccbs` CCBs were in use.
    pub over_limit: u64,
    /// Most bytes the gateway held for all connections at once (sampled every 10 ms).
    pub peak_buffered: u64,
    /// Gateway retransmissions toward the terminal.
    pub gw_retransmissions: u64,
    /// Connections the gateway aborted (retry limit exceeded), and the bytes it had
    /// acknowledged to the Internet host that were then lost.
    pub aborts: u64,
    pub bytes_lost_on_abort: u64,
    /// Packets the satellite queue dropped.
    pub satellite_queue_drops: u64,
    /// Packets (the hybrid host's ACKs) the dial-up queue dropped.
    pub dialup_queue_drops: u64,
}

/// `n` downloads of `bytes_each` starting together through one spoofing gateway (at most
/// `max_ccbs` CCBs; the rest pass end to end), each from its own server port with the
/// scenario's 8 KiB Internet host window; `paced`: the gateway paces all CCBs together at the
/// satellite's 1 Mb/s (`satellite_rate`).
pub fn run_many(
    n: usize,
    bytes_each: u64,
    max_ccbs: u32,
    paced: bool,
) -> Result<ManyOutcome, String> {
    let mut text = SCENARIO.to_string();
    for i in 1..n {
        text.push_str(&format!(
            "\n[[flow]]\nname = \"download{i}\"\nfrom = \"server\"\nto = \"client\"\n\
             port = {}\napp = {{ kind = \"bulk\", bytes = \"{bytes_each}B\" }}\n",
            80 + i
        ));
    }
    let overrides = [
        format!("flow.download.app={{ kind = \"bulk\", bytes = \"{bytes_each}B\" }}"),
        format!(
            "node.gw.middlebox={{ kind = \"spoof\", internet_port = 0, \
             buffer_per_conn = \"64KiB\", max_ccbs = {max_ccbs}{} }}",
            if paced {
                ", satellite_rate = \"1Mbps\""
            } else {
                ""
            }
        ),
    ];
    let loaded =
        satpep_scenario::load_str(&text, "arora.toml", &overrides).map_err(|e| e.to_string())?;
    let sc = &loaded.scenario;
    let gw = sc
        .nodes
        .iter()
        .position(|n| n.name == "gw")
        .ok_or("no `gw`")?;
    let end = Instant::ZERO + sc.duration;
    let mut sim = Simulation::new(sc);
    let step = satpep_proto::Duration::from_millis(10);
    let mut t = Instant::ZERO;
    let mut done: Vec<Option<f64>> = vec![None; n];
    let mut peak_buffered = 0;
    while t < end && done.iter().any(Option::is_none) {
        t = (t + step).min(end);
        sim.run_until(t);
        for (i, d) in done.iter_mut().enumerate() {
            if d.is_none() && sim.listener(i).bytes_delivered() >= bytes_each {
                *d = Some(t.as_secs_f64());
            }
        }
        if let Some(s) = spoofer(sim.middlebox(gw)) {
            peak_buffered = peak_buffered.max(s.buffered_bytes());
        }
    }
    let secs = |d: &Option<f64>| d.unwrap_or(t.as_secs_f64()).max(1e-9);
    let per_flow_bps = (0..n)
        .map(|i| sim.listener(i).bytes_delivered() as f64 * 8.0 / secs(&done[i]))
        .collect();
    let total: u64 = (0..n).map(|i| sim.listener(i).bytes_delivered()).sum();
    let last = done.iter().map(secs).fold(0.0, f64::max);
    let stats = spoofer(sim.middlebox(gw))
        .map(|s| s.stats())
        .ok_or("the gateway has no spoofer")?;
    Ok(ManyOutcome {
        per_flow_bps,
        aggregate_bps: total as f64 * 8.0 / last,
        ccbs_allocated: stats.ccbs_allocated,
        over_limit: stats.over_limit,
        peak_buffered,
        gw_retransmissions: stats.retransmissions,
        aborts: stats.aborts,
        bytes_lost_on_abort: stats.bytes_lost_on_abort,
        satellite_queue_drops: sc
            .links
            .iter()
            .position(|l| l.name == "satellite")
            .map_or(0, |i| sim.link(i).stats().queue_drops),
        dialup_queue_drops: sc
            .links
            .iter()
            .position(|l| l.name == "dialup")
            .map_or(0, |i| sim.link(i).stats().queue_drops),
    })
}

/// The multicast scenario (the paper's "IP Multicast Extension to the Hybrid Network"),
/// embedded like [`SCENARIO`].
pub const MULTICAST: &str = include_str!("../../../../scenarios/arora/multicast.toml");

/// What [`run_multicast`] measured.
#[derive(Clone, Debug)]
pub struct MulticastOutcome {
    /// Per 100 ms: (end of the interval in s, kb/s delivered on `satellite`, on `t1-c1`, on
    /// `t2-c2`), every byte on the wire (IGMP included).
    pub series: Vec<(f64, [f64; 3])>,
    /// The run's summary (its `groups` and `multicast_routers`).
    pub summary: satpep_output::Summary,
    /// Datagrams the source sent.
    pub sent: u64,
    /// First and last 100 ms interval (their ends, s) in which the satellite carried more than
    /// IGMP (a datagram is 1028 bytes, an IGMP message 32).
    pub satellite_stream: Option<(f64, f64)>,
    /// IGMP messages, and their bytes, the two dial-ups carried.
    pub dialup_igmp: (u64, u64),
}

/// Run `scenarios/arora/multicast.toml` with `extra` overrides, sampling the satellite and
/// the two LAN links every 100 ms.
pub fn run_multicast(extra: &[String]) -> Result<MulticastOutcome, String> {
    let loaded =
        satpep_scenario::load_str(MULTICAST, "multicast.toml", extra).map_err(|e| e.to_string())?;
    let sc = &loaded.scenario;
    let link = |name: &str| {
        (sc.links.iter().position(|l| l.name == name)).ok_or(format!("no link `{name}`"))
    };
    let watched = [link("satellite")?, link("t1-c1")?, link("t2-c2")?];
    let dialups = [link("dialup1")?, link("dialup2")?];
    let end = Instant::ZERO + sc.duration;
    let mut sim = Simulation::new(sc);
    let step = satpep_proto::Duration::from_millis(100);
    let mut t = Instant::ZERO;
    let mut last = [0u64; 3];
    let mut series = Vec::new();
    let mut stream: Option<(f64, f64)> = None;
    while t < end {
        t = (t + step).min(end);
        sim.run_until(t);
        let mut kbps = [0.0; 3];
        for (k, &l) in watched.iter().enumerate() {
            let bytes = sim.link_stats(l, t).0.delivered_bytes;
            kbps[k] = (bytes - last[k]) as f64 * 8.0 / 0.1 / 1e3;
            if k == 0 && bytes - last[k] >= 1000 {
                let s = t.as_secs_f64();
                stream = Some(stream.map_or((s, s), |(a, _)| (a, s)));
            }
            last[k] = bytes;
        }
        series.push((t.as_secs_f64(), kbps));
    }
    let dialup_igmp = dialups.iter().fold((0, 0), |(n, b), &l| {
        let s = sim.link_stats(l, t).0;
        (n + s.delivered_packets, b + s.delivered_bytes)
    });
    let sent = sim.udp_source(0).map_or(0, |s| s.packets_sent());
    Ok(MulticastOutcome {
        series,
        summary: sim.summary(),
        sent,
        satellite_stream: stream,
        dialup_igmp,
    })
}
