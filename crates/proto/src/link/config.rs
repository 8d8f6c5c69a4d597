//! Settings of a link, as written in a scenario's `[[link]]` table.

use serde::{Deserialize, Serialize};

use super::schedule::{DeliveryTrace, Outage, StepTrace, TraceFile};
use crate::ack::AckQueueConfig;
use crate::time::{Bitrate, Duration};
use crate::units::ByteSize;

/// A simplex link. Defaults suit a GEO hop: 10 Mb/s, 250 ms, 100-packet drop-tail queue, no
/// errors.
#[derive(Clone, Debug, Deserialize, PartialEq, Serialize)]
#[serde(deny_unknown_fields, default)]
#[non_exhaustive]
pub struct LinkConfig {
    /// Serialisation rate. Default: `"10Mbps"`.
    pub rate: Bitrate,
    /// One-way propagation delay. Default: `"250ms"` (one GEO hop, ground–satellite–ground).
    pub delay: Duration,
    /// Queue in front of the serialiser. Default: drop-tail, 100 packets.
    pub queue: QueueConfig,
    /// Error model applied to each packet after serialisation. Default: none.
    pub error: ErrorModelConfig,
    /// Header compression applied by this link (RFC 1144): the link serialises the compressed
    /// size and delivers the original header. Default: `"none"`.
    pub compression: Compression,
    /// Channel released after an idle time and set up again on demand (the WINDS anomaly of
    /// Lee, Yum & Wan §5; see [`ChannelReleaseConfig`](super::ChannelReleaseConfig)). Default: none
    /// (always up).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channel_release: Option<super::channel::ChannelReleaseConfig>,
    /// A Mahimahi packet-delivery trace that paces the serialiser instead of `rate` (see
    /// [`super::schedule`]); written as the file's path. Default: none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_trace: Option<TraceFile<DeliveryTrace>>,
    /// One-way delay steps (`TIME_MS DELAY_MS` lines) replacing `delay` from their first step
    /// on; the delay line stays FIFO. Default: none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delay_trace: Option<TraceFile<StepTrace>>,
    /// Loss probability steps (`TIME_MS PROBABILITY` lines), applied after the error model to
    /// each packet as its serialisation completes. Default: none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loss_trace: Option<TraceFile<StepTrace>>,
    /// Intervals during which the serialiser sends nothing; packets wait in the queue.
    /// Default: none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub outages: Vec<Outage>,
    /// Link-layer retransmission of corrupted frames (see [`super::arq`]). Default: none (a
    /// corrupted frame is lost).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arq: Option<super::arq::ArqConfig>,
    /// Bytes of link-layer framing sent with every packet (header, trailer, preamble, gap; the
    /// same key as a `[[dama]]` carrier's): they take serialisation time and are exposed to
    /// bit errors, but are not delivered or counted as delivered. See [`frame_len`]. Default: 0.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub encap_overhead: u32,
    /// Which comes first when a packet arrives at the very instant the serialiser finishes
    /// one and takes the next from the queue: `"completions_first"` (the slot is free, so a
    /// full queue takes the arrival) or `"arrivals_first"` (the arrival is offered to the
    /// queue as it was, full or not, and only then does the head move onto the serialiser;
    /// ns-2's order, see [`SameInstant`]). Applies to drop-tail queues. Default:
    /// `"completions_first"`; scenarios whose `[defaults.tcp]` has `profile = "ns2"`:
    /// `"arrivals_first"`.
    #[serde(default, skip_serializing_if = "SameInstant::is_default")]
    pub same_instant: SameInstant,
}

/// The order of two events at one instant on a link: an arrival, and the completion that
/// frees a queue slot.
#[derive(Clone, Copy, Debug, Default, Deserialize, Eq, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum SameInstant {
    /// The completion first: the arrival finds the slot the departing head left, whichever
    /// order the driver feeds the two in.
    #[default]
    CompletionsFirst,
    /// The arrival first, as in ns-2.35: its scheduler runs events of equal time in the
    /// order they were scheduled (`CalendarScheduler::insert` places an event after those of
    /// the same time), and the arrival was scheduled when the upstream hop began sending it
    /// (`LinkDelay::recv`: transmission time plus propagation delay ahead), the queue's
    /// `resume` only when this hop began its current packet (transmission time ahead); so
    /// whenever the upstream hop's transmission time plus delay exceed this hop's
    /// transmission time, `Queue::recv` → `DropTail::enque` sees the queue before
    /// `Queue::resume` takes its head, and drops the arrival when it is full.
    ArrivalsFirst,
}

impl SameInstant {
    fn is_default(&self) -> bool {
        *self == Self::CompletionsFirst
    }
}

/// Bytes a packet of `wire_len` IP bytes occupies on a link (or a DAMA carrier) that adds
/// `encap_overhead` bytes of framing to each: a constant per packet, as Ethernet (38: 14 header,
/// 4 FCS, 8 preamble and start delimiter, 12 inter-frame gap) or PPP in HDLC-like framing
/// (RFC 1662: 8 with flag, address, control, 2-byte protocol and 2-byte FCS) add. Not modelled:
/// ATM's AAL5 padding to whole 48-byte cells of 53 bytes, Ethernet's padding of frames below
/// 64 bytes, HDLC byte stuffing (which depends on the data).
pub fn frame_len(wire_len: u64, encap_overhead: u32) -> u64 {
    wire_len + u64::from(encap_overhead)
}

/// Largest `encap_overhead` accepted: more than any link layer adds (a 64 KiB frame header is
/// a typing mistake).
pub const MAX_ENCAP_OVERHEAD: u32 = 65_535;

#[allow(clippy::trivially_copy_pass_by_ref)] // serde's `skip_serializing_if` passes a reference
fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// Header compression on a link.
#[derive(Clone, Copy, Debug, Default, Deserialize, Eq, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Compression {
    /// Headers go as they are.
    #[default]
    None,
    /// Van Jacobson TCP/IP header compression (RFC 1144), 16 slots, SLIP-style type bits.
    Vj,
}

impl Default for LinkConfig {
    fn default() -> Self {
        Self {
            rate: Bitrate(10_000_000),
            delay: Duration::from_millis(250),
            queue: QueueConfig::default(),
            error: ErrorModelConfig::None,
            compression: Compression::None,
            channel_release: None,
            rate_trace: None,
            delay_trace: None,
            loss_trace: None,
            outages: Vec::new(),
            arq: None,
            encap_overhead: 0,
            same_instant: SameInstant::CompletionsFirst,
        }
    }
}

/// Which queue discipline. Later mechanisms (ACK filtering, suppression, compaction) add kinds.
#[derive(Clone, Copy, Debug, Default, Deserialize, Eq, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum QueueKind {
    /// First in, first out; arrivals beyond the limit are dropped.
    #[default]
    DropTail,
    /// Drop-tail plus ACK suppression (Samaraweera 1999 §5); settings in `ack`.
    AckSuppression,
    /// Drop-tail plus ACK filtering (ns-2 semantic queue, RFC 3449 §5.2.1); settings in `ack`.
    AckFiltering,
    /// Drop-tail plus ACK compaction (Samaraweera 1999 §6); settings in `ack`, tunnel required.
    AckCompaction,
}

/// Queue settings. When both limits are given, a packet is dropped when either would be exceeded.
///
/// In a scenario file, giving only `limit_bytes` means "bytes only" (no packet limit); giving
/// neither means the default of 100 packets. (A plain `#[serde(default)]` would silently keep the
/// 100-packet limit beside a byte limit, and TOML has no `null` to switch it off.)
#[derive(Clone, Debug, Deserialize, PartialEq, Serialize)]
#[serde(from = "QueueConfigToml")]
#[non_exhaustive]
pub struct QueueConfig {
    /// Discipline. Default: `"drop_tail"`.
    pub kind: QueueKind,
    /// Maximum packets waiting (not counting the one being serialised). Default: 100 when
    /// neither limit is given.
    pub limit_packets: Option<u32>,
    /// Maximum bytes waiting (not counting the packet being serialised); a packet longer than
    /// this is always dropped. Default: no byte limit.
    pub limit_bytes: Option<ByteSize>,
    /// Settings of the `ack_*` kinds (water marks, filtering options, tunnel addresses).
    /// Default: [`AckQueueConfig::default`].
    pub ack: AckQueueConfig,
}

impl Default for QueueConfig {
    fn default() -> Self {
        Self {
            kind: QueueKind::DropTail,
            limit_packets: Some(100),
            limit_bytes: None,
            ack: AckQueueConfig::default(),
        }
    }
}

/// [`QueueConfig`] as written: absent limits stay absent, then [`From`] applies the default.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct QueueConfigToml {
    #[serde(default)]
    kind: QueueKind,
    limit_packets: Option<u32>,
    limit_bytes: Option<ByteSize>,
    #[serde(default)]
    ack: AckQueueConfig,
}

impl From<QueueConfigToml> for QueueConfig {
    fn from(raw: QueueConfigToml) -> Self {
        if raw.limit_packets.is_none() && raw.limit_bytes.is_none() {
            return Self {
                kind: raw.kind,
                ack: raw.ack,
                ..Self::default()
            };
        }
        Self {
            kind: raw.kind,
            limit_packets: raw.limit_packets,
            limit_bytes: raw.limit_bytes,
            ack: raw.ack,
        }
    }
}

/// How packets are corrupted (and then dropped) on a link.
#[derive(Clone, Debug, Default, Deserialize, PartialEq, Serialize)]
#[serde(tag = "model", rename_all = "snake_case", deny_unknown_fields)]
#[non_exhaustive]
pub enum ErrorModelConfig {
    /// No errors.
    #[default]
    None,
    /// Each packet is lost with probability `per`, independently.
    Per {
        /// Packet error rate in [0, 1].
        per: f64,
    },
    /// Each bit is in error with probability `ber`, independently; a packet of n bytes is lost
    /// with probability 1 − (1 − ber)^(8n).
    Ber {
        /// Bit error rate in [0, 1].
        ber: f64,
    },
    /// Two-state Gilbert–Elliott channel, stepped once per packet.
    GilbertElliott {
        /// Probability of moving Good → Bad at each packet.
        p_good_bad: f64,
        /// Probability of moving Bad → Good at each packet.
        p_bad_good: f64,
        /// Packet error rate in the Good state. Default 0.
        #[serde(default)]
        per_good: f64,
        /// Packet error rate in the Bad state. Default 1.
        #[serde(default = "one")]
        per_bad: f64,
    },
    /// Drop exactly the listed packets, counted from 1 in order of arrival at the link (as
    /// ns-3's `ListErrorModel`); for tests and teaching.
    List {
        /// 1-based arrival indices of the packets to drop.
        packets: Vec<u64>,
    },
}

fn one() -> f64 {
    1.0
}

impl LinkConfig {
    /// The rate to report for this link: `rate`, or a `rate_trace`'s mean rate for 1500-byte
    /// packets (a loaded trace; `rate` is not used then).
    pub fn nominal_rate(&self) -> Bitrate {
        self.rate_trace
            .as_ref()
            .and_then(|t| t.data.as_ref())
            .map_or(self.rate, |d| d.mean_rate())
    }

    /// Checks every value, so that a scenario loader can reject a bad file before a run starts.
    ///
    /// The message begins with the key path inside the `[[link]]` table (`rate`,
    /// `queue.limit_bytes`, `error.per`, …) and says what is expected. [`Link::new`] does not
    /// panic on values this rejects, but their behaviour is not meaningful (a zero rate never
    /// sends; probabilities are clamped to [0, 1]).
    ///
    /// [`Link::new`]: super::Link::new
    pub fn validate(&self) -> Result<(), String> {
        if self.rate.bps() == 0 {
            return Err("rate: must be greater than 0 (e.g. \"10Mbps\")".to_owned());
        }
        if self.encap_overhead > MAX_ENCAP_OVERHEAD {
            return Err(format!(
                "encap_overhead: bytes of framing per packet, at most {MAX_ENCAP_OVERHEAD} \
                 (Ethernet adds 38, PPP 8), got {}",
                self.encap_overhead
            ));
        }
        if let Some(c) = &self.channel_release {
            c.validate().map_err(|e| format!("channel_release.{e}"))?;
        }
        super::schedule::validate_outages(&self.outages)?;
        let unread = [
            (
                "rate_trace",
                self.rate_trace.as_ref().map(|t| t.data.is_none()),
            ),
            (
                "delay_trace",
                self.delay_trace.as_ref().map(|t| t.data.is_none()),
            ),
            (
                "loss_trace",
                self.loss_trace.as_ref().map(|t| t.data.is_none()),
            ),
        ];
        if let Some((key, _)) = unread.iter().find(|(_, u)| *u == Some(true)) {
            return Err(format!(
                "{key}: the trace file was not read (the scenario loader reads it)"
            ));
        }
        if self.arq.is_some() && self.compression != Compression::None {
            return Err(
                "arq: not with `compression`: the header decompressor needs frames in order \
                 and hears of every corrupted one"
                    .to_owned(),
            );
        }
        self.queue.validate().map_err(|e| format!("queue.{e}"))?;
        self.error.validate().map_err(|e| format!("error.{e}"))
    }
}

impl QueueConfig {
    /// Whether the ACK compactor of this queue authenticates what it sends into the tunnel;
    /// `None` for a queue that sends nothing into a tunnel (every kind but `ack_compaction`).
    pub fn trust(&self) -> Option<crate::auth::Trust> {
        (self.kind == QueueKind::AckCompaction)
            .then(|| crate::auth::Trust::of(self.ack.key.as_ref(), self.ack.insecure))
    }

    /// Checks the limits; the message begins with the key inside the `queue` table.
    pub fn validate(&self) -> Result<(), String> {
        if self.limit_packets == Some(0) {
            return Err("limit_packets: must be at least 1".to_owned());
        }
        if self.limit_bytes == Some(ByteSize(0)) {
            return Err("limit_bytes: must be at least 1 byte (e.g. \"720KB\")".to_owned());
        }
        if self.limit_packets.is_none() && self.limit_bytes.is_none() {
            return Err(
                "limit_packets: give limit_packets or limit_bytes; an unbounded queue \
                        could grow without limit"
                    .to_owned(),
            );
        }
        let ack = &self.ack;
        if self.kind == QueueKind::AckCompaction
            && (ack.tunnel_src.is_none() || ack.tunnel_dst.is_none())
        {
            return Err(
                "ack.tunnel_src: ack_compaction needs tunnel_src (the terminal) and \
                        tunnel_dst (the expander), e.g. tunnel_src = \"10.0.3.1\""
                    .to_owned(),
            );
        }
        if self.kind != QueueKind::AckCompaction && (ack.key.is_some() || ack.insecure) {
            return Err(format!(
                "ack.{}: only `ack_compaction` sends through the tunnel; remove it",
                if ack.insecure { "insecure" } else { "key" }
            ));
        }
        crate::auth::Trust::validate(ack.key.as_ref(), ack.insecure)
            .map_err(|e| format!("ack.{e}"))?;
        if matches!(
            self.kind,
            QueueKind::AckSuppression | QueueKind::AckCompaction
        ) && ack.high_water == 0
        {
            return Err("ack.high_water: must be at least 1 (the paper uses 60)".to_owned());
        }
        Ok(())
    }
}

impl ErrorModelConfig {
    /// Checks probabilities (in [0, 1], not NaN) and list indices (from 1); the message begins
    /// with the key inside the `error` table.
    pub fn validate(&self) -> Result<(), String> {
        match self {
            Self::None => Ok(()),
            Self::Per { per } => probability("per", *per),
            Self::Ber { ber } => probability("ber", *ber),
            Self::GilbertElliott {
                p_good_bad,
                p_bad_good,
                per_good,
                per_bad,
            } => {
                probability("p_good_bad", *p_good_bad)?;
                probability("p_bad_good", *p_bad_good)?;
                probability("per_good", *per_good)?;
                probability("per_bad", *per_bad)
            }
            Self::List { packets } => match packets.contains(&0) {
                true => Err(
                    "packets: indices count from 1 (the first packet to arrive is 1)".to_owned(),
                ),
                false => Ok(()),
            },
        }
    }
}

fn probability(key: &str, p: f64) -> Result<(), String> {
    if (0.0..=1.0).contains(&p) {
        return Ok(());
    }
    Err(format!("{key}: must be a probability in [0, 1], got {p}"))
}

#[cfg(test)]
mod tests {
    use serde::de::value::{Error as DeError, MapDeserializer, StrDeserializer};
    use serde::de::{Deserializer, IntoDeserializer, Visitor};

    use super::*;

    /// A scalar as a self-describing format (TOML, JSON) presents it: digits as an integer,
    /// anything else as a string, and `Some(_)` to an `Option` field (serde's own
    /// `StrDeserializer` refuses that).
    #[derive(Clone, Copy)]
    struct Val(&'static str);

    impl<'de> Deserializer<'de> for Val {
        type Error = DeError;
        fn deserialize_any<V: Visitor<'de>>(self, v: V) -> Result<V::Value, DeError> {
            match self.0.parse::<u64>() {
                Ok(n) => v.visit_u64(n), // a TOML integer
                Err(_) => v.visit_str(self.0),
            }
        }
        fn deserialize_option<V: Visitor<'de>>(self, v: V) -> Result<V::Value, DeError> {
            v.visit_some(self)
        }
        fn deserialize_enum<V: Visitor<'de>>(
            self,
            name: &'static str,
            variants: &'static [&'static str],
            v: V,
        ) -> Result<V::Value, DeError> {
            let inner: StrDeserializer<'_, DeError> = self.0.into_deserializer();
            inner.deserialize_enum(name, variants, v)
        }
        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
            unit unit_struct newtype_struct seq tuple tuple_struct map struct identifier ignored_any
        }
    }

    impl IntoDeserializer<'_, DeError> for Val {
        type Deserializer = Self;
        fn into_deserializer(self) -> Self {
            self
        }
    }

    fn queue_from(pairs: &[(&'static str, &'static str)]) -> Result<QueueConfig, DeError> {
        let pairs = pairs.iter().map(|&(k, v)| (k, Val(v)));
        QueueConfig::deserialize(MapDeserializer::<_, DeError>::new(pairs))
    }

    /// run.json records `encap_overhead` only when set, so runs without it stay as they were.
    #[test]
    fn encap_overhead_is_serialised_only_when_set() {
        let json = |c: &LinkConfig| serde_json::to_string(c).unwrap();
        assert!(!json(&LinkConfig::default()).contains("encap_overhead"));
        let framed = LinkConfig {
            encap_overhead: 38,
            ..LinkConfig::default()
        };
        assert!(json(&framed).contains("\"encap_overhead\":38"));
    }

    #[test]
    fn link_defaults_are_valid() {
        assert_eq!(LinkConfig::default().validate(), Ok(()));
    }

    #[test]
    fn queue_limits_as_written() {
        // Neither limit: 100 packets.
        let q = queue_from(&[]).unwrap();
        assert_eq!((q.limit_packets, q.limit_bytes), (Some(100), None));
        // Bytes only: no packet limit sneaks in from the default.
        let q = queue_from(&[("limit_bytes", "3000")]).unwrap();
        assert_eq!(
            (q.limit_packets, q.limit_bytes),
            (None, Some(ByteSize(3000)))
        );
        let q = queue_from(&[("kind", "drop_tail"), ("limit_bytes", "64KiB")]).unwrap();
        assert_eq!(
            (q.limit_packets, q.limit_bytes),
            (None, Some(ByteSize(65_536)))
        );
        // Both: both kept.
        let q = queue_from(&[("limit_packets", "20"), ("limit_bytes", "30KB")]).unwrap();
        assert_eq!(
            (q.limit_packets, q.limit_bytes),
            (Some(20), Some(ByteSize(30_000)))
        );
        assert!(queue_from(&[("limt_bytes", "3000")]).is_err());
    }

    /// ARQ goes with every link but one with header compression (whose decompressor needs
    /// frames in order and hears of every corrupted one).
    #[test]
    fn arq_is_refused_only_with_compression() {
        let arq = LinkConfig {
            arq: Some(crate::link::ArqConfig::default()),
            ..LinkConfig::default()
        };
        assert_eq!(arq.validate(), Ok(()));
        let vj = LinkConfig {
            compression: Compression::Vj,
            ..LinkConfig::default()
        };
        assert_eq!(vj.validate(), Ok(()));
        let both = LinkConfig {
            compression: Compression::Vj,
            ..arq
        };
        assert!(both.validate().is_err_and(|e| e.starts_with("arq:")));
    }

    #[test]
    fn validate_names_the_key() {
        let mut c = LinkConfig {
            rate: Bitrate(0),
            ..LinkConfig::default()
        };
        assert!(c.validate().unwrap_err().starts_with("rate:"));
        c.rate = Bitrate(1_000_000);
        c.queue.limit_packets = Some(0);
        assert!(c
            .validate()
            .unwrap_err()
            .starts_with("queue.limit_packets:"));
        c.queue.limit_packets = None;
        assert!(c
            .validate()
            .unwrap_err()
            .starts_with("queue.limit_packets:"));
        c.queue.limit_bytes = Some(ByteSize(0));
        assert!(c.validate().unwrap_err().starts_with("queue.limit_bytes:"));
        c.queue.limit_bytes = Some(ByteSize(1500));
        assert_eq!(c.validate(), Ok(()));

        let bad = [
            (ErrorModelConfig::Per { per: 1.5 }, "error.per:"),
            (ErrorModelConfig::Ber { ber: -1e-9 }, "error.ber:"),
            (ErrorModelConfig::Per { per: f64::NAN }, "error.per:"),
            (
                ErrorModelConfig::GilbertElliott {
                    p_good_bad: 0.1,
                    p_bad_good: 2.0,
                    per_good: 0.0,
                    per_bad: 1.0,
                },
                "error.p_bad_good:",
            ),
            (
                ErrorModelConfig::List {
                    packets: vec![3, 0],
                },
                "error.packets:",
            ),
        ];
        for (error, key) in bad {
            let c = LinkConfig {
                error,
                ..LinkConfig::default()
            };
            let msg = c.validate().unwrap_err();
            assert!(msg.starts_with(key), "{msg}");
        }
        let good = ErrorModelConfig::GilbertElliott {
            p_good_bad: 0.0,
            p_bad_good: 1.0,
            per_good: 0.0,
            per_bad: 1.0,
        };
        assert_eq!(
            LinkConfig {
                error: good,
                ..LinkConfig::default()
            }
            .validate(),
            Ok(())
        );
    }
}
