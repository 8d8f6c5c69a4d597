//! Time-varying links: a rate from a Mahimahi packet-delivery trace, delay and loss schedules,
//! and outages. The files are read by the scenario loader; this module parses their text (no
//! I/O) and holds what a [`super::Link`] needs to follow them.
//!
//! **Mahimahi traces** (`rate_trace`), exactly as `mm-link` reads them (ravinet/mahimahi,
//! `src/frontend/link_queue.cc`, `traces/README`): each line is one integer, a millisecond
//! timestamp at which one delivery opportunity occurs; a timestamp repeated k times is k
//! opportunities in that millisecond; timestamps never decrease; the last one is the period
//! (it must be above 0) and the trace repeats with it (`base_timestamp_ += schedule_.back()`),
//! so a file holding only `1` is one opportunity per millisecond. An opportunity carries
//! `PACKET_SIZE` = 1504 bytes, counted as Mahimahi counts them: the packet plus the 4-byte
//! `tun_pi` header its TUN device reads with each packet (`netdevice.cc` opens `IFF_TUN`
//! without `IFF_NO_PI`). So one opportunity carries exactly one 1500-byte IP packet ("the
//! ability to deliver 1500 bytes", mm-link(1)), or several small ones whose sizes plus 4 each sum
//! to at most 1504; a larger remainder continues in the next opportunity (byte-level
//! accounting), and the packet leaves at the opportunity that carries its last byte. Bytes of
//! an opportunity that finds the queue empty are wasted. An opportunity at the very instant a
//! packet arrives is spent before the packet is queued (`rationalize(now)` runs before
//! `enqueue` in `read_packet`), so it does not carry that packet.
//!
//! **Step schedules** (`delay_trace`, `loss_trace`): one step per line, `TIME VALUE` (white space
//! or a comma between), `TIME` in milliseconds from the start of the run (decimals allowed),
//! strictly increasing; the value holds until the next step, the last one to the end of the
//! run. `#` starts a comment; blank lines are skipped. Before the first step the link's own
//! `delay` (no extra loss) applies.
//!
//! **Outages** (`outages`): intervals during which the serialiser sends nothing (rain fade, a
//! handover gap). Packets wait in the queue, subject to its limits; a packet on the serialiser
//! when an outage begins finishes after it, late by the outage's length. For an outage that
//! loses packets instead, use a `loss_trace` stepping to 1 and back.

use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::rand::Rng;
use crate::time::{Bitrate, Duration, Instant};

/// Bytes one Mahimahi delivery opportunity carries (`LinkQueue::PACKET_SIZE`).
pub const MAHIMAHI_OPPORTUNITY_BYTES: u64 = 1504;
/// Bytes Mahimahi counts per packet besides the IP packet: the TUN `tun_pi` header.
pub const MAHIMAHI_PACKET_OVERHEAD: u64 = 4;
/// Most lines a trace file may have (10⁷: 40 MB of timestamps in memory; Mahimahi's largest
/// bundled trace, `TMobile-LTE-driving.down`, has 505 078).
pub const MAX_TRACE_LINES: usize = 10_000_000;
/// Largest timestamp or step time, in milliseconds (2³² − 1 ms, about 49.7 days).
pub const MAX_TRACE_MS: u64 = u32::MAX as u64;
/// Largest delay a `delay_trace` may give, in milliseconds (one hour).
pub const MAX_TRACE_DELAY_MS: f64 = 3_600_000.0;

const NS_PER_MS: u64 = 1_000_000;

/// Why a trace's text was refused: the 1-based line and what was expected.
#[derive(Clone, Debug, Eq, PartialEq)]
pub struct TraceError {
    /// 1-based line number.
    pub line: usize,
    /// What was wrong and what was expected.
    pub message: String,
}

impl fmt::Display for TraceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

impl std::error::Error for TraceError {}

/// A Mahimahi packet-delivery trace: the opportunities of one period, in milliseconds.
#[derive(Clone, Debug, Eq, PartialEq)]
pub struct DeliveryTrace {
    /// Non-decreasing; the last is the period, > 0.
    ms: Vec<u32>,
}

impl DeliveryTrace {
    /// Parse the text of a Mahimahi trace file. Anything else than one unsigned integer per line
    /// is an error, empty lines included, as in mm-link (`myatoi`, `src/util/ezio.cc`), except
    /// that white space around the number (a `\r`) is accepted and a sign is not (mm-link's
    /// `strtol` would wrap `-1` to 2⁶⁴ − 1). A final newline is optional.
    pub fn parse_mahimahi(text: &str) -> Result<Self, TraceError> {
        let mut ms: Vec<u32> = Vec::new();
        for (i, raw) in lines(text).enumerate() {
            let line = i + 1;
            let err = |message: String| Err(TraceError { line, message });
            if line > MAX_TRACE_LINES {
                return err(format!(
                    "more than {MAX_TRACE_LINES} lines; at most that many are accepted"
                ));
            }
            let word = raw.trim();
            if word.is_empty() {
                return err(
                    "empty line: each line holds one millisecond timestamp, as mm-link \
                            requires"
                        .into(),
                );
            }
            let Some(t) = parse_ms_integer(word) else {
                return err(format!(
                    "expected a timestamp in whole milliseconds (0 to {MAX_TRACE_MS}), got {}",
                    shown(word)
                ));
            };
            if let Some(&prev) = ms.last() {
                if t < prev {
                    return err(format!(
                        "timestamps must not decrease: {t} ms after {prev} ms"
                    ));
                }
            }
            ms.push(t);
        }
        let Some(&last) = ms.last() else {
            return Err(TraceError {
                line: 1,
                message: "no timestamps: a Mahimahi trace lists at least one delivery \
                          opportunity (e.g. `1` for one 1500-byte packet per ms)"
                    .into(),
            });
        };
        if last == 0 {
            return Err(TraceError {
                line: ms.len(),
                message: "the trace must last above 0 ms: its last timestamp is the period it \
                          repeats with"
                    .into(),
            });
        }
        ms.shrink_to_fit();
        Ok(Self { ms })
    }

    /// Delivery opportunities per period.
    pub fn opportunities(&self) -> usize {
        self.ms.len()
    }

    /// The period the trace repeats with (its last timestamp).
    pub fn period(&self) -> Duration {
        Duration::from_millis(self.ms.last().map_or(0, |&m| u64::from(m)))
    }

    /// The mean rate of one period for 1500-byte IP packets: opportunities × 1500 × 8 / period.
    pub fn mean_rate(&self) -> Bitrate {
        let bits = self.ms.len() as u128 * 1500 * 8 * 1_000_000_000;
        let period = u128::from(self.period().as_nanos().max(1));
        Bitrate(u64::try_from(bits / period).unwrap_or(u64::MAX))
    }

    fn period_ns(&self) -> u64 {
        self.period().as_nanos()
    }

    /// Instant of opportunity `j`, counting from the first of period 0.
    fn at(&self, j: u64) -> Instant {
        let n = self.ms.len() as u64;
        let (q, k) = (j / n, (j % n) as usize);
        Instant(
            q.saturating_mul(self.period_ns())
                .saturating_add(u64::from(self.ms[k]) * NS_PER_MS),
        )
    }

    /// Index of the first opportunity strictly after `t` (or at or after, when `inclusive`).
    fn first_after(&self, t: Instant, inclusive: bool) -> u64 {
        let n = self.ms.len() as u64;
        let p = self.period_ns();
        let (q, r) = (t.0 / p, t.0 % p);
        if inclusive && r == 0 && q > 0 {
            // The previous period's last opportunities fall exactly at the start of this one.
            let k = self.ms.partition_point(|&m| u64::from(m) * NS_PER_MS < p);
            return (q - 1) * n + k as u64;
        }
        let k = self.ms.partition_point(|&m| {
            let x = u64::from(m) * NS_PER_MS;
            if inclusive {
                x < r
            } else {
                x <= r
            }
        });
        q * n + k as u64
    }
}

/// A step schedule: from each time on, a value (a delay in ms, or a loss probability).
#[derive(Clone, Debug, PartialEq)]
pub struct StepTrace {
    /// Strictly increasing times.
    steps: Vec<(Instant, f64)>,
}

/// What the values of a [`StepTrace`] are.
#[derive(Clone, Copy, Debug, Eq, PartialEq)]
pub enum StepKind {
    /// One-way delay in milliseconds, 0 to one hour.
    DelayMs,
    /// Packet loss probability, 0 to 1.
    Probability,
}

impl StepTrace {
    /// Parse `TIME VALUE` lines (see the module documentation).
    pub fn parse(text: &str, kind: StepKind) -> Result<Self, TraceError> {
        let mut steps: Vec<(Instant, f64)> = Vec::new();
        for (i, raw) in lines(text).enumerate() {
            let line = i + 1;
            let err = |message: String| Err(TraceError { line, message });
            if line > MAX_TRACE_LINES {
                return err(format!(
                    "more than {MAX_TRACE_LINES} lines; at most that many are accepted"
                ));
            }
            let content = raw.split('#').next().unwrap_or("").trim();
            if content.is_empty() {
                continue;
            }
            let mut fields = content
                .split(|c: char| c == ',' || c.is_whitespace())
                .filter(|f| !f.is_empty());
            let (Some(time), Some(value), None) = (fields.next(), fields.next(), fields.next())
            else {
                let n = content
                    .split(|c: char| c == ',' || c.is_whitespace())
                    .filter(|f| !f.is_empty())
                    .count();
                let plural = if n == 1 { "" } else { "s" };
                return err(format!(
                    "expected `TIME_MS VALUE` (two numbers), got {n} field{plural}"
                ));
            };
            let Some(t) = parse_decimal(time)
                .filter(|&t| t <= MAX_TRACE_MS as f64)
                .map(|ms| Instant((ms * NS_PER_MS as f64).round() as u64))
            else {
                return err(format!(
                    "expected a time in milliseconds (0 to {MAX_TRACE_MS}), got {}",
                    shown(time)
                ));
            };
            let v = match (parse_decimal(value), kind) {
                (Some(v), StepKind::DelayMs) if v <= MAX_TRACE_DELAY_MS => v,
                (Some(v), StepKind::Probability) if v <= 1.0 => v,
                _ => {
                    let expected = match kind {
                        StepKind::DelayMs => "a one-way delay in milliseconds (0 to 3600000)",
                        StepKind::Probability => "a loss probability in [0, 1]",
                    };
                    return err(format!("expected {expected}, got {}", shown(value)));
                }
            };
            if let Some(&(prev, _)) = steps.last() {
                if t <= prev {
                    return err(format!(
                        "times must increase: {} ms is not after {} ms",
                        shown(time),
                        prev.0 as f64 / NS_PER_MS as f64
                    ));
                }
            }
            steps.push((t, v));
        }
        if steps.is_empty() {
            return Err(TraceError {
                line: 1,
                message: "no steps: expected lines of `TIME_MS VALUE`".into(),
            });
        }
        steps.shrink_to_fit();
        Ok(Self { steps })
    }

    /// Number of steps.
    pub fn len(&self) -> usize {
        self.steps.len()
    }

    /// True when there is no step (never, once parsed).
    pub fn is_empty(&self) -> bool {
        self.steps.is_empty()
    }

    /// The value in force at `t`, if a step has begun; `cursor` remembers how far a caller whose
    /// times never decrease has read (start it at 0).
    pub fn value_at(&self, t: Instant, cursor: &mut usize) -> Option<f64> {
        if *cursor > 0 && self.steps.get(*cursor - 1).is_some_and(|s| s.0 > t) {
            // Time went back (it does not on the link): search from the start.
            *cursor = 0;
        }
        while self.steps.get(*cursor).is_some_and(|s| s.0 <= t) {
            *cursor += 1;
        }
        cursor.checked_sub(1).map(|i| self.steps[i].1)
    }
}

/// An interval during which a link's serialiser sends nothing.
#[derive(Clone, Copy, Debug, Deserialize, Eq, PartialEq, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Outage {
    /// When it begins, from the start of the run.
    pub start: Duration,
    /// How long it lasts (> 0).
    pub duration: Duration,
}

impl Outage {
    fn end(&self) -> Instant {
        Instant::ZERO + self.start + self.duration
    }
}

/// Check a link's outages: each longer than 0, in time order, not overlapping. The message
/// begins with the key path inside the link table.
pub fn validate_outages(outages: &[Outage]) -> Result<(), String> {
    for (i, o) in outages.iter().enumerate() {
        if o.duration == Duration::ZERO {
            return Err(format!(
                "outages.{i}.duration: must be above 0 (e.g. \"2s\")"
            ));
        }
        if let Some(prev) = i.checked_sub(1).map(|p| outages[p]) {
            if o.start < prev.start + prev.duration {
                return Err(format!(
                    "outages.{i}.start: outages must be in time order and not overlap; this \
                     one starts at {} before the previous one ends at {}",
                    o.start,
                    prev.start + prev.duration
                ));
            }
        }
    }
    Ok(())
}

/// A trace file a scenario names: the path (as the loader resolved it) and, once the loader has
/// read it, its parsed contents, shared between the copies of a configuration (sweeps).
///
/// In a scenario (and in `run.json`) it is written as the path alone.
#[derive(Clone, Debug)]
pub struct TraceFile<T> {
    /// The file's path.
    pub path: String,
    /// The parsed file; `None` until the loader has read it (a link with an unread
    /// `rate_trace` never sends, an unread delay or loss schedule changes nothing).
    pub data: Option<Arc<T>>,
}

impl<T> TraceFile<T> {
    /// A trace whose file has been read and parsed.
    pub fn new(path: impl Into<String>, data: T) -> Self {
        Self {
            path: path.into(),
            data: Some(Arc::new(data)),
        }
    }
}

impl<T: PartialEq> PartialEq for TraceFile<T> {
    fn eq(&self, other: &Self) -> bool {
        self.path == other.path && self.data == other.data
    }
}

impl<T> Serialize for TraceFile<T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.path)
    }
}

impl<'de, T> Deserialize<'de> for TraceFile<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let path = String::deserialize(d)?;
        if path.is_empty() {
            return Err(serde::de::Error::custom(
                "expected the path of a trace file, got an empty string",
            ));
        }
        Ok(Self { path, data: None })
    }
}

/// What a link follows over time, and where it has got to. Built only for links that have a
/// schedule, so that a link without one runs exactly the code it ran before.
#[derive(Clone, Debug)]
pub(super) struct Schedules {
    rate: Option<Opportunities>,
    delay: Option<(Arc<StepTrace>, usize)>,
    loss: Option<(Arc<StepTrace>, usize, Rng)>,
    outages: Vec<Outage>,
    /// Index of the first outage that has not ended before the last lookup.
    outage_cursor: usize,
    /// Delivery instant of the last packet put in the delay line (keeps it FIFO).
    last_due: Instant,
}

/// The cursor over a delivery trace.
#[derive(Clone, Debug)]
struct Opportunities {
    trace: Option<Arc<DeliveryTrace>>,
    /// The next opportunity not yet used.
    next: u64,
    /// Bytes left in the last opportunity used (at `busy_until`).
    left: u64,
    /// When the last packet left, while the serialiser has kept working since; `None` after
    /// it found the queue empty (the rest of that instant's opportunities are wasted).
    busy_until: Option<Instant>,
}

impl Schedules {
    /// The schedules of `config`, or `None` when it has none. `rng` is the link's generator;
    /// the loss schedule draws from a stream derived from a copy of it, so the error model's
    /// draws are those it makes without a schedule.
    pub fn new(config: &super::LinkConfig, rng: &Rng) -> Option<Self> {
        if config.rate_trace.is_none()
            && config.delay_trace.is_none()
            && config.loss_trace.is_none()
            && config.outages.is_empty()
        {
            return None;
        }
        let loss_rng = || Rng::new(rng.clone().next_u64(), 0x6c6f_7373_5f74_7263);
        Some(Self {
            rate: config.rate_trace.as_ref().map(|t| Opportunities {
                trace: t.data.clone(),
                next: 0,
                left: 0,
                busy_until: None,
            }),
            delay: config
                .delay_trace
                .as_ref()
                .and_then(|t| t.data.clone())
                .map(|d| (d, 0)),
            loss: config
                .loss_trace
                .as_ref()
                .and_then(|t| t.data.clone())
                .map(|d| (d, 0, loss_rng())),
            outages: config.outages.clone(),
            outage_cursor: 0,
            last_due: Instant::ZERO,
        })
    }

    /// If `t` falls in an outage, the instant it ends.
    pub fn outage_end(&mut self, t: Instant) -> Option<Instant> {
        let o = self.outage_from(t)?;
        (Instant::ZERO + o.start <= t).then(|| o.end())
    }

    /// The first outage that ends after `t` (times asked never decrease on the link).
    fn outage_from(&mut self, t: Instant) -> Option<Outage> {
        if self
            .outage_cursor
            .checked_sub(1)
            .and_then(|i| self.outages.get(i))
            .is_some_and(|o| o.end() > t)
        {
            self.outage_cursor = 0;
        }
        while self
            .outages
            .get(self.outage_cursor)
            .is_some_and(|o| o.end() <= t)
        {
            self.outage_cursor += 1;
        }
        self.outages.get(self.outage_cursor).copied()
    }

    /// True when a rate trace sets the link's pace.
    pub fn has_rate_trace(&self) -> bool {
        self.rate.is_some()
    }

    /// When a packet of `wire_len` bytes that starts at `t` has left: by the delivery trace if
    /// there is one, else at `rate`, with the serialiser stopped through outages.
    pub fn finish(&mut self, t: Instant, wire_len: u64, rate: Bitrate) -> Instant {
        match self.rate.take() {
            Some(mut opp) => {
                let done = self.by_trace(&mut opp, t, wire_len);
                self.rate = Some(opp);
                done
            }
            None => {
                let mut finish = t + rate.tx_time(wire_len);
                let mut probe = t;
                // Each outage that begins while the packet is being sent stops the clock.
                while let Some(o) = self.outage_from(probe) {
                    let start = Instant::ZERO + o.start;
                    if start >= finish {
                        break;
                    }
                    let paused = o.end().saturating_since(start.max(t));
                    finish += paused;
                    probe = o.end();
                }
                finish
            }
        }
    }

    fn by_trace(&mut self, opp: &mut Opportunities, t: Instant, wire_len: u64) -> Instant {
        let Some(trace) = opp.trace.clone() else {
            return Instant::FAR_FUTURE;
        };
        let mut cost = wire_len + MAHIMAHI_PACKET_OVERHEAD;
        if opp.busy_until == Some(t) {
            // Straight after the previous packet, at the same instant: the rest of its
            // opportunity, then the further opportunities of this instant.
            if cost <= opp.left {
                opp.left -= cost;
                return t;
            }
            cost -= opp.left;
        } else {
            opp.next = opp.next.max(trace.first_after(t, false));
        }
        opp.left = 0;
        loop {
            let at = trace.at(opp.next);
            if at == Instant::FAR_FUTURE {
                return at;
            }
            if let Some(end) = self.outage_end(at) {
                opp.next = opp.next.max(trace.first_after(end, true));
                continue;
            }
            opp.next += 1;
            if cost <= MAHIMAHI_OPPORTUNITY_BYTES {
                opp.left = MAHIMAHI_OPPORTUNITY_BYTES - cost;
                opp.busy_until = Some(at);
                return at;
            }
            cost -= MAHIMAHI_OPPORTUNITY_BYTES;
        }
    }

    /// The serialiser found nothing to send at `t`: what is left of this instant's
    /// opportunities is wasted.
    pub fn on_idle(&mut self) {
        if let Some(opp) = &mut self.rate {
            opp.busy_until = None;
            opp.left = 0;
        }
    }

    /// True when the loss schedule drops a packet whose serialisation completed at `t`.
    pub fn is_lost(&mut self, t: Instant) -> bool {
        let Some((trace, cursor, rng)) = &mut self.loss else {
            return false;
        };
        trace.value_at(t, cursor).is_some_and(|p| rng.chance(p))
    }

    /// When a packet whose serialisation completed at `t` reaches the far end: `t` plus the
    /// delay in force at `t` (`delay` before the first step), never before the packet ahead.
    pub fn due(&mut self, t: Instant, delay: Duration) -> Instant {
        let d = match &mut self.delay {
            Some((trace, cursor)) => trace
                .value_at(t, cursor)
                .map_or(delay, |ms| Duration((ms * NS_PER_MS as f64).round() as u64)),
            None => delay,
        };
        let due = (t + d).max(self.last_due);
        self.last_due = due;
        due
    }
}

/// Lines of `text`, without their `\n` (a final newline does not make an empty last line, and
/// empty text has no line).
fn lines(text: &str) -> impl Iterator<Item = &str> {
    let body = text.strip_suffix('\n').unwrap_or(text);
    (!text.is_empty())
        .then(|| body.split('\n'))
        .into_iter()
        .flatten()
}

/// A whole number of milliseconds, 0 to [`MAX_TRACE_MS`], digits only.
fn parse_ms_integer(word: &str) -> Option<u32> {
    if word.is_empty() || !word.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    word.parse::<u32>().ok()
}

/// A non-negative decimal number (digits, at most one `.`), finite.
fn parse_decimal(word: &str) -> Option<f64> {
    let ok = !word.is_empty()
        && word.bytes().all(|b| b.is_ascii_digit() || b == b'.')
        && word.bytes().filter(|&b| b == b'.').count() <= 1
        && word.bytes().any(|b| b.is_ascii_digit());
    ok.then(|| word.parse::<f64>().ok())
        .flatten()
        .filter(|v| v.is_finite())
}

/// What a message may quote of a field: only what looks like a number (digits, signs, a
/// decimal point, an exponent, `inf`, `nan`), at most 24 characters. A trace path may name any
/// file (a scenario someone else wrote could point at `/etc/shadow`), so anything else is
/// described, never quoted.
fn shown(word: &str) -> String {
    let numeric = word.len() <= 24
        && !word.is_empty()
        && word.chars().all(|c| {
            c.is_ascii_digit()
                || matches!(
                    c.to_ascii_lowercase(),
                    '.' | '+' | '-' | 'e' | 'i' | 'n' | 'f' | 'a'
                )
        });
    if numeric {
        format!("`{word}`")
    } else {
        format!(
            "a field of {} characters that is not a number (not quoted)",
            word.chars().count()
        )
    }
}

/// The body of the `link_trace` fuzz target, shared with a stable test.
#[cfg(any(test, feature = "fuzzing"))]
pub mod fuzzing {
    use super::*;
    use crate::link::{Link, LinkConfig, QueueConfig};
    use crate::node::{Node, Packet, PortId};

    /// First byte: which parser (0 Mahimahi, 1 delay steps, 2 loss steps, by its value mod 3);
    /// the rest is the file's text. A trace that parses is checked and then drives a link: 40
    /// packets of 40 to 3 000 bytes (sizes from the text's bytes) sent at 0, under an outage,
    /// must all leave, in order, at non-decreasing instants, within 10⁶ wake-ups.
    pub fn trace_input(data: &[u8]) {
        let Some((&mode, rest)) = data.split_first() else {
            return;
        };
        let Ok(text) = std::str::from_utf8(rest) else {
            return;
        };
        let mut c = LinkConfig {
            delay: Duration::from_millis(1),
            queue: QueueConfig {
                limit_packets: Some(1000),
                ..QueueConfig::default()
            },
            outages: vec![Outage {
                start: Duration::from_millis(2),
                duration: Duration::from_millis(3),
            }],
            ..LinkConfig::default()
        };
        match mode % 3 {
            0 => match DeliveryTrace::parse_mahimahi(text) {
                Ok(t) => {
                    assert!(t.opportunities() > 0 && t.period() > Duration::ZERO);
                    assert!(t.opportunities() <= MAX_TRACE_LINES);
                    c.rate_trace = Some(TraceFile::new("fuzz", t));
                }
                Err(e) => return check_error(&e, text),
            },
            kind => {
                let kind = if kind == 1 {
                    StepKind::DelayMs
                } else {
                    StepKind::Probability
                };
                match StepTrace::parse(text, kind) {
                    Ok(t) => {
                        assert!(!t.is_empty());
                        if kind == StepKind::DelayMs {
                            c.delay_trace = Some(TraceFile::new("fuzz", t));
                        } else {
                            c.loss_trace = Some(TraceFile::new("fuzz", t));
                        }
                    }
                    Err(e) => return check_error(&e, text),
                }
            }
        }
        c.validate().expect("a parsed trace makes a valid link");
        let mut link = Link::new(&c, Rng::new(1, 1));
        let sizes = rest.iter().cycle().take(40);
        for (i, &b) in sizes.enumerate() {
            let len = 40 + u32::from(b) * 11;
            let mut p = Packet::new(&[0x45; 20], len - 20);
            p.id = i as u64;
            link.handle_packet(Instant::ZERO, PortId(0), p);
        }
        let (mut last, mut next_id, mut wakes) = (Instant::ZERO, 0u64, 0u32);
        loop {
            while let Some(tx) = link.poll_transmit(last) {
                assert!(tx.pkt.id >= next_id, "reordered");
                next_id = tx.pkt.id + 1;
            }
            while link.poll_drop().is_some() {}
            let Some(at) = link.poll_timeout() else { break };
            assert!(at >= last, "time went back: {at:?} < {last:?}");
            last = at;
            link.handle_timeout(at);
            wakes += 1;
            assert!(wakes < 1_000_000, "the link never settles");
        }
        let s = link.stats();
        assert_eq!(s.arrivals, 40);
        assert_eq!(s.delivered_packets + s.error_drops, 40, "{s:?}");
    }

    fn check_error(e: &TraceError, text: &str) {
        let lines = text.split('\n').count().max(1);
        assert!((1..=lines).contains(&e.line), "line {} of {lines}", e.line);
        assert!(!e.message.chars().any(char::is_control), "{e}");
    }
}

#[cfg(test)]
mod tests;
