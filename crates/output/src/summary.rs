//! `summary.json` (totals of one run) and `run.json` (what is needed to reproduce it).
//!
//! Keys come out in field order and floats through `serde_json`'s shortest round-trip
//! formatting, so equal runs give equal bytes. There is deliberately no wall-clock field
//! (start date, elapsed time, host name): determinism tests compare these files byte for byte.
//! Non-finite floats have no JSON form (`serde_json` would write `null` and then fail to read
//! it back), so producers must not put NaN or infinity here; [`goodput_bps`] never returns one.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use std::collections::BTreeMap;

use satpep_proto::middlebox::Middlebox;
use satpep_proto::Instant;
use serde::{Deserialize, Serialize};

/// File name of the run summary.
pub const SUMMARY_JSON: &str = "summary.json";
/// File name of the reproducibility record.
pub const RUN_JSON: &str = "run.json";

/// Totals of one run: written as `summary.json`, rendered by [`crate::render_table`], and
/// reduced to one `sweep.csv` row by [`crate::SweepRow::from_summary`].
#[derive(Clone, Debug, Deserialize, PartialEq, Serialize)]
pub struct Summary {
    /// Scenario name (from the scenario file).
    pub scenario: String,
    /// Seed of the run's random generators.
    pub seed: u64,
    /// Whether the run reached its planned end or was stopped by a signal at `sim_time_s`.
    pub status: RunStatus,
    /// Simulated (or emulated) time covered (s): the stop time of an interrupted run.
    #[serde(serialize_with = "dec9")]
    pub sim_time_s: f64,
    /// Events processed by the driver (simulator: event-queue pops; emulator: packets + timers).
    pub events: u64,
    /// One entry per TCP flow, in scenario order.
    pub flows: Vec<FlowSummary>,
    /// One entry per link, in scenario order.
    pub links: Vec<LinkSummary>,
    /// One entry per router with a middlebox, in scenario order: its counters (forged,
    /// refused and dropped packets included). Absent when the scenario has no middlebox, so
    /// such runs keep the bytes they had before this section existed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub middleboxes: Vec<MiddleboxSummary>,
    /// One entry per router with `multicast`, in scenario order: its IGMP and forwarding
    /// counters. Absent without multicast.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub multicast_routers: Vec<MulticastRouterSummary>,
    /// One entry per (host, group) of every host's `groups`, in scenario order: what the host
    /// received of the group while a member. Absent without groups.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<GroupSummary>,
}

/// A multicast router's counters at the end of a run.
#[derive(Clone, Debug, Deserialize, PartialEq, Serialize)]
pub struct MulticastRouterSummary {
    /// The router (scenario node name).
    pub node: String,
    /// Every counter by name (packets; see `MulticastStats::counters`).
    pub counters: BTreeMap<String, u64>,
}

/// What one host received of one multicast group.
#[derive(Clone, Debug, Deserialize, PartialEq, Serialize)]
pub struct GroupSummary {
    /// The host (scenario node name).
    pub node: String,
    /// The group address.
    pub group: String,
    /// Packets received while a member.
    pub packets: u64,
    /// Their payload bytes.
    pub bytes: u64,
    /// Arrival of the first (s), if any.
    #[serde(serialize_with = "opt_dec9")]
    pub first_s: Option<f64>,
    /// Arrival of the last (s), if any.
    #[serde(serialize_with = "opt_dec9")]
    pub last_s: Option<f64>,
}

/// How a run ended.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RunStatus {
    /// It ran to its duration, or until every flow was done.
    #[default]
    Complete,
    /// SIGINT or SIGTERM stopped it early: the totals cover `sim_time_s` only.
    Interrupted,
}

/// Totals of one TCP flow.
#[derive(Clone, Debug, Deserialize, PartialEq, Serialize)]
pub struct FlowSummary {
    /// Flow name (from the scenario).
    pub name: String,
    /// Sending host.
    pub from: String,
    /// Receiving host.
    pub to: String,
    /// Congestion control algorithm (e.g. `"newreno"`, `"cubic"`).
    pub cc: String,
    /// Loss recovery scheme (e.g. `"newreno"`, `"sack"`).
    pub recovery: String,
    /// When the flow's application started (s since scenario start).
    #[serde(serialize_with = "dec9")]
    pub start_s: f64,
    /// From start to the last byte acknowledged (bulk transfer) or the last response received
    /// (request/response) (s); `None` when the flow had not finished by the end of the run.
    #[serde(serialize_with = "opt_dec9")]
    pub completion_time_s: Option<f64>,
    /// Bytes cumulatively acknowledged to the sender.
    pub bytes_acked: u64,
    /// Bytes delivered in order to the receiving application.
    pub bytes_delivered: u64,
    /// `bytes_delivered × 8 / (completion or end of run − start)` (bit/s); see [`goodput_bps`].
    #[serde(serialize_with = "dec3")]
    pub goodput_bps: f64,
    /// Data segments sent, retransmissions included.
    pub segments_sent: u64,
    /// Segments retransmitted (all causes).
    pub retransmissions: u64,
    /// Fast retransmits (RFC 5681 §3.2 / RFC 6582): entries into fast recovery.
    pub fast_retransmits: u64,
    /// Retransmission timer expirations (RFC 6298).
    pub rto_expirations: u64,
    /// Duplicate ACKs received by the sender (RFC 5681 definition).
    pub dup_acks: u64,
    /// Mean of the smoothed RTT (RFC 6298 `SRTT`) over its updates (ms); `None` when the flow
    /// never took an RTT sample.
    #[serde(serialize_with = "opt_dec6")]
    pub mean_srtt_ms: Option<f64>,
    /// Largest congestion window reached (bytes).
    pub max_cwnd_bytes: u64,
    /// The relays' own legs of a split flow (a split-TCP gateway's sender toward the
    /// listener), in path order; the fields above are then the opener's leg. Absent for an
    /// end-to-end flow.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub legs: Vec<LegSummary>,
    /// What the sink of a UDP constant-bit-rate flow measured; absent for TCP flows. For a UDP
    /// flow `segments_sent` counts datagrams, `bytes_delivered` payload bytes received, and the
    /// TCP-only fields are 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub udp: Option<UdpSummary>,
}

/// The receiving end of a UDP flow, as iperf3 reports it.
#[derive(Clone, Debug, Deserialize, PartialEq, Serialize)]
pub struct UdpSummary {
    /// Datagrams the source sent.
    pub packets_sent: u64,
    /// Datagrams the sink received.
    pub packets_received: u64,
    /// Datagrams missing below the highest sequence number received (iperf3's "lost").
    pub lost_packets: u64,
    /// Datagrams received after a higher sequence number.
    pub out_of_order: u64,
    /// RFC 3550 interarrival jitter at the end (ms).
    #[serde(serialize_with = "dec6")]
    pub jitter_ms: f64,
}

/// One relay leg of a split flow: the sender a split-TCP gateway runs toward the listener
/// (for a download, the satellite leg). Named `<flow>@<gateway>` in flows.csv and the table.
#[derive(Clone, Debug, Deserialize, PartialEq, Serialize)]
pub struct LegSummary {
    /// The router that relays (sends this leg).
    pub at: String,
    /// Where this leg goes (the flow's listener).
    pub to: String,
    /// Bytes the listener acknowledged to the relay.
    pub bytes_acked: u64,
    /// Data segments the relay sent on this leg, retransmissions included.
    pub segments_sent: u64,
    /// Segments the relay retransmitted.
    pub retransmissions: u64,
    /// Fast retransmits on this leg.
    pub fast_retransmits: u64,
    /// Retransmission timer expirations on this leg.
    pub rto_expirations: u64,
    /// Mean smoothed RTT of this leg (ms); `None` without an RTT sample.
    #[serde(serialize_with = "opt_dec6")]
    pub mean_srtt_ms: Option<f64>,
    /// Largest congestion window of this leg (bytes).
    pub max_cwnd_bytes: u64,
}

/// Totals of one link (one direction).
#[derive(Clone, Debug, Deserialize, PartialEq, Serialize)]
pub struct LinkSummary {
    /// Link name (from the scenario).
    pub name: String,
    /// Node at the input end.
    pub from: String,
    /// Node at the output end.
    pub to: String,
    /// Serialisation rate (bit/s); for a link paced by a `rate_trace`, the trace's mean rate.
    pub rate_bps: u64,
    /// One-way propagation delay (ms).
    #[serde(serialize_with = "dec6")]
    pub delay_ms: f64,
    /// Fraction of the run the serialiser was busy, 0 to 1.
    #[serde(serialize_with = "dec9")]
    pub utilisation: f64,
    /// Packets that left the link.
    pub delivered_packets: u64,
    /// Bytes that left the link (on-the-wire lengths).
    pub delivered_bytes: u64,
    /// Packets dropped because the queue was full.
    pub queue_drops: u64,
    /// Packets dropped by the error model (with link-layer ARQ: given up after the last
    /// retransmission).
    pub error_drops: u64,
    /// Link-layer retransmissions (links with `arq`; absent when 0).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub arq_retransmissions: u64,
    /// Time-weighted mean queue length (packets).
    #[serde(serialize_with = "dec6")]
    pub mean_queue_packets: f64,
    /// Largest queue length seen (packets).
    pub max_queue_packets: u64,
    /// Time-weighted mean queue length (bytes).
    #[serde(serialize_with = "dec3")]
    pub mean_queue_bytes: f64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// The counters of one router's middlebox at the end of a run.
#[derive(Clone, Debug, Deserialize, PartialEq, Serialize)]
pub struct MiddleboxSummary {
    /// The router (scenario node name).
    pub node: String,
    /// The middlebox `kind` from the scenario (`"ipip_tunnel"`, `"chain"`, …).
    pub kind: String,
    /// Every counter, by name, sorted by name (see `Middlebox::counters`): a chain's as
    /// `<element index>.<element kind>.<name>`. Packets unless the name says otherwise
    /// (`*_bytes`).
    pub counters: BTreeMap<String, u64>,
}

impl MiddleboxSummary {
    /// The summary entry of `middlebox`, on router `node`. The simulator and the emulator
    /// both build theirs with this.
    pub fn new(node: &str, middlebox: &Middlebox) -> Self {
        Self {
            node: node.to_owned(),
            kind: middlebox.kind().to_owned(),
            counters: middlebox.counters().into_iter().collect(),
        }
    }
}

impl Summary {
    /// Writes `dir/summary.json` (pretty, newline-terminated) and returns its path.
    pub fn write_json(&self, dir: impl AsRef<Path>) -> io::Result<PathBuf> {
        let path = dir.as_ref().join(SUMMARY_JSON);
        write_pretty(&path, self)?;
        Ok(path)
    }

    /// Reads a `summary.json` written by [`write_json`](Self::write_json).
    pub fn read_json(path: impl AsRef<Path>) -> io::Result<Self> {
        let text = fs::read_to_string(path)?;
        serde_json::from_str(&text).map_err(io::Error::from)
    }
}

/// Goodput of `bytes` delivered between `start` and `end` (bit/s); 0 for an empty interval
/// (never NaN or infinity, which JSON cannot hold).
pub fn goodput_bps(bytes: u64, start: Instant, end: Instant) -> f64 {
    let span = end.saturating_since(start).as_secs_f64();
    if span > 0.0 {
        bytes as f64 * 8.0 / span
    } else {
        0.0
    }
}

/// Writes `dir/run.json`: `{ "satpep_version": …, "seed": …, "scenario": {…} }` with the fully
/// resolved scenario (defaults filled in, overrides applied), so that the run can be repeated
/// exactly. Returns its path.
///
/// Key order inside `scenario` is that of its `Serialize` impl: use structs and `BTreeMap`s
/// (not `HashMap`s) there to keep the file deterministic.
pub fn write_run_json(
    dir: impl AsRef<Path>,
    version: &str,
    seed: u64,
    resolved_scenario: &impl Serialize,
) -> io::Result<PathBuf> {
    #[derive(Serialize)]
    struct Run<'a, S> {
        satpep_version: &'a str,
        seed: u64,
        scenario: &'a S,
    }
    let path = dir.as_ref().join(RUN_JSON);
    write_pretty(
        &path,
        &Run {
            satpep_version: version,
            seed,
            scenario: resolved_scenario,
        },
    )?;
    Ok(path)
}

/// `x` rounded to `decimals` places, so that float noise (`30.514627500000003`) never reaches
/// a file: times are then exact to the nanosecond, and `serde_json`'s shortest form prints no
/// more than `decimals` places. Values too large for the scaling to be exact are left as they
/// are (they have no fractional noise at that precision anyway).
fn rounded(x: f64, decimals: i32) -> f64 {
    let scale = 10f64.powi(decimals);
    let scaled = x * scale;
    if !scaled.is_finite() || scaled.abs() >= 2f64.powi(52) {
        return x;
    }
    let r = scaled.round() / scale;
    if r == 0.0 {
        0.0 // no "-0.0"
    } else {
        r
    }
}

fn dec9<S: serde::Serializer>(x: &f64, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(rounded(*x, 9))
}

fn dec6<S: serde::Serializer>(x: &f64, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(rounded(*x, 6))
}

fn dec3<S: serde::Serializer>(x: &f64, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(rounded(*x, 3))
}

fn opt_dec9<S: serde::Serializer>(x: &Option<f64>, s: S) -> Result<S::Ok, S::Error> {
    x.map(|v| rounded(v, 9)).serialize(s)
}

fn opt_dec6<S: serde::Serializer>(x: &Option<f64>, s: S) -> Result<S::Ok, S::Error> {
    x.map(|v| rounded(v, 6)).serialize(s)
}

/// Writes `path` so that a reader never sees half a file: the text goes to a temporary file
/// beside it, which is then renamed over `path` (atomic on POSIX file systems).
pub(crate) fn write_atomic(path: &Path, text: &[u8]) -> io::Result<()> {
    let name = path
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no file name"))?;
    let mut tmp_name = std::ffi::OsString::from(".");
    tmp_name.push(name);
    tmp_name.push(".tmp");
    let tmp = path.with_file_name(tmp_name);
    fs::write(&tmp, text)?;
    fs::rename(&tmp, path)
}

fn write_pretty(path: &Path, value: &impl Serialize) -> io::Result<()> {
    let mut text = serde_json::to_string_pretty(value)?;
    text.push('\n');
    write_atomic(path, text.as_bytes())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A two-flow, one-link summary with round numbers, shared by the other modules' tests.
    pub(crate) fn example() -> Summary {
        let flow = |name: &str, goodput: f64, done: Option<f64>| FlowSummary {
            name: name.into(),
            from: "server".into(),
            to: "client".into(),
            cc: "newreno".into(),
            recovery: "sack".into(),
            start_s: 0.0,
            completion_time_s: done,
            bytes_acked: 1_000_000,
            bytes_delivered: 1_000_000,
            goodput_bps: goodput,
            segments_sent: 700,
            retransmissions: 5,
            fast_retransmits: 2,
            rto_expirations: 1,
            dup_acks: 9,
            mean_srtt_ms: Some(561.5),
            max_cwnd_bytes: 262_144,
            legs: Vec::new(),
            udp: None,
        };
        Summary {
            scenario: "geo".into(),
            seed: 7,
            status: RunStatus::Complete,
            sim_time_s: 30.0,
            events: 123_456,
            flows: vec![
                flow("bulk0", 4_000_000.0, Some(2.5)),
                flow("bulk1", 2_000_000.0, None),
            ],
            links: vec![LinkSummary {
                name: "sat_fwd".into(),
                from: "gw".into(),
                to: "term".into(),
                rate_bps: 10_000_000,
                delay_ms: 280.0,
                utilisation: 0.6,
                delivered_packets: 4_000,
                delivered_bytes: 6_000_000,
                queue_drops: 3,
                error_drops: 4,
                arq_retransmissions: 0,
                mean_queue_packets: 12.25,
                max_queue_packets: 100,
                mean_queue_bytes: 18_375.0,
            }],
            middleboxes: Vec::new(),
            multicast_routers: Vec::new(),
            groups: Vec::new(),
        }
    }

    #[test]
    fn summary_json_round_trips_and_keeps_field_order() {
        let dir = tempfile::tempdir().unwrap();
        let path = example().write_json(dir.path()).unwrap();
        let text = fs::read_to_string(&path).unwrap();
        assert!(text
            .starts_with("{\n  \"scenario\": \"geo\",\n  \"seed\": 7,\n  \"status\": \"complete\",\n  \"sim_time_s\": 30.0,"));
        assert!(text.contains("\"completion_time_s\": null"));
        assert!(text.ends_with("}\n"));
        assert_eq!(Summary::read_json(&path).unwrap(), example());
        // Same value, same bytes.
        let again = example().write_json(dir.path()).unwrap();
        assert_eq!(fs::read_to_string(again).unwrap(), text);
    }

    /// Float noise from arithmetic never reaches the file; each key keeps the precision its
    /// unit needs (ns for seconds, µs-of-ms… see the field attributes).
    #[test]
    fn floats_are_rounded_to_their_documented_decimals() {
        let mut s = example();
        s.sim_time_s = 0.1 + 0.2; // 0.30000000000000004
        s.flows[0].completion_time_s = Some(30.514_627_500_000_003);
        s.flows[0].goodput_bps = 2_621_440.123_456_7;
        s.flows[0].mean_srtt_ms = Some(561.000_000_4);
        s.links[0].utilisation = 1.0 / 3.0;
        s.links[0].mean_queue_packets = -1e-12;
        let dir = tempfile::tempdir().unwrap();
        let text = fs::read_to_string(s.write_json(dir.path()).unwrap()).unwrap();
        for want in [
            "\"sim_time_s\": 0.3,",
            "\"completion_time_s\": 30.5146275,",
            "\"goodput_bps\": 2621440.123,",
            "\"mean_srtt_ms\": 561.0,",
            "\"utilisation\": 0.333333333,",
            "\"mean_queue_packets\": 0.0,",
        ] {
            assert!(text.contains(want), "{want} not in\n{text}");
        }
        assert!(!dir.path().join(".summary.json.tmp").exists());
        assert_eq!(rounded(1e300, 9), 1e300);
    }

    /// Without middleboxes the section is absent (byte-identical to summaries written before
    /// it existed, and such files still read); with one, it follows `links`.
    #[test]
    fn middleboxes_section_is_absent_when_empty_and_round_trips() {
        let dir = tempfile::tempdir().unwrap();
        let text = fs::read_to_string(example().write_json(dir.path()).unwrap()).unwrap();
        assert!(!text.contains("middleboxes"));
        let mut s = example();
        let tunnel = satpep_proto::middlebox::MiddleboxConfig::IpipTunnel(
            satpep_proto::tunnel::TunnelConfig {
                local: [10, 0, 1, 1].into(),
                remote: [10, 0, 2, 1].into(),
                arrival_port: None,
                ports: Vec::new(),
                peers: Vec::new(),
                key: None,
                insecure: false,
                mtu: None,
            },
        );
        let mb = Middlebox::new(&tunnel, satpep_proto::rand::Rng::new(1, 1));
        s.middleboxes.push(MiddleboxSummary::new("gw", &mb));
        let path = s.write_json(dir.path()).unwrap();
        let text = fs::read_to_string(&path).unwrap();
        let at = |k: &str| text.find(k).unwrap_or_else(|| panic!("{k} missing"));
        assert!(at("\"links\"") < at("\"middleboxes\""));
        assert!(text.contains(
            "\"middleboxes\": [\n    {\n      \"node\": \"gw\",\n      \"kind\": \"ipip_tunnel\","
        ));
        assert!(text.contains("\"not_from_peer\": 0"));
        assert_eq!(Summary::read_json(&path).unwrap(), s);
    }

    #[test]
    fn run_json_wraps_the_resolved_scenario() {
        let dir = tempfile::tempdir().unwrap();
        let scenario = BTreeMap::from([("duration", "30s"), ("name", "geo")]);
        let path = write_run_json(dir.path(), "0.1.0", 42, &scenario).unwrap();
        assert_eq!(
            fs::read_to_string(path).unwrap(),
            "{\n  \"satpep_version\": \"0.1.0\",\n  \"seed\": 42,\n  \"scenario\": {\n    \
             \"duration\": \"30s\",\n    \"name\": \"geo\"\n  }\n}\n"
        );
    }

    #[test]
    fn goodput_is_bits_over_seconds_and_zero_for_empty_interval() {
        let t = |ms: u64| Instant(ms * 1_000_000);
        assert_eq!(goodput_bps(1_250_000, t(500), t(1_500)), 10_000_000.0);
        assert_eq!(goodput_bps(1_000, t(3), t(3)), 0.0);
        assert_eq!(goodput_bps(1_000, t(5), t(3)), 0.0);
    }
}
