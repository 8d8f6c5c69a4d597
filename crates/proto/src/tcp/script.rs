//! Packetdrill-style scripts for the sans-IO endpoint: inbound segments at given times, the
//! outbound segments expected in reply, application calls and assertions on the endpoint's
//! state. The syntax follows packetdrill (`< S 0:0(0) win 65535 <mss 1000,sackOK>`) where it
//! carries over; the system calls become commands (`listen`, `connect`, `write 10000`, `close`).
//!
//! ```text
//! // comment (also `#`)
//! tcp profile = "ns2", mss = 1000        header: TOML keys of a `tcp` table
//! profiles rfc linux                    header: run the script once per profile
//! tolerance 4ms                         header: how far an outbound segment may be from its time
//! 0      listen
//! +0     < S 0:0(0) win 65535 <mss 1000,sackOK,wscale 7>
//! +0     > S. 0:0(0) ack 1 <mss 1000,sackOK,wscale 7>
//! +.5    < . 1:1(0) ack 1 win 257
//! +0     write 3000
//! +0     > P. 1:1001(1000) ack 1
//! *      > P. 1:1001(1000) ack 1        `*`: whenever it comes (a timer), within 10 minutes
//! +0     % cwnd == 2000                 assertion: a field, an operator, a number or a name
//! ```
//!
//! Times are seconds, absolute or `+` relative to the previous line. The endpoint's own ISS is 0,
//! so its sequence numbers read as packetdrill's relative ones; the script writes the peer's
//! absolute numbers itself. An outbound line checks flags, sequence range and ack exactly, and
//! `win` and each listed option only when written (`TS val * ecr 100` matches any TSval). Any
//! segment the endpoint sends that no outbound line expects fails the script at the next inbound
//! line, command or the end. Windows are the raw 16-bit field, as on the wire.

use std::collections::VecDeque;
use std::fmt::Write as _;
use std::net::Ipv4Addr;

use super::{Profile, TcpConfig, TcpEndpoint};
use crate::time::{Duration, Instant};
use crate::wire::{SackBlocks, SeqNumber, TcpFlags, TcpRepr};

/// Why a script failed: the line (1-based) and what happened.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScriptError {
    /// Line of the script, 1-based (0: the script as a whole).
    pub line: usize,
    /// What went wrong, with the segment or values involved.
    pub message: String,
}

impl std::fmt::Display for ScriptError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.line {
            0 => f.write_str(&self.message),
            n => write!(f, "line {n}: {}", self.message),
        }
    }
}

impl std::error::Error for ScriptError {}

/// A parsed script: its header and its timed lines.
#[derive(Clone, Debug)]
pub struct Script {
    tcp: toml::Table,
    /// Line of the last `tcp` header (where a header problem is reported).
    tcp_line: usize,
    profiles: Vec<Profile>,
    tolerance: Duration,
    lines: Vec<Line>,
}

#[derive(Clone, Debug)]
struct Line {
    number: usize,
    time: When,
    event: Event,
}

#[derive(Clone, Copy, Debug)]
enum When {
    At(Duration),
    After(Duration),
    Any,
}

#[derive(Clone, Debug)]
enum Event {
    Inbound(TcpRepr),
    Outbound(Expect),
    Listen,
    Connect,
    Write(u64),
    Close,
    Read(u64),
    ManualRead,
    Assert(String, Op, String),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

/// What an outbound line requires of a segment.
#[derive(Clone, Debug, Default)]
struct Expect {
    seg: TcpRepr,
    window: Option<u16>,
    mss: Option<u16>,
    wscale: Option<u8>,
    sack_permitted: Option<bool>,
    /// (TSval, TSecr); `None` inside: any value.
    ts: Option<(Option<u32>, Option<u32>)>,
    sack: Option<SackBlocks>,
}

fn err(line: usize, message: impl Into<String>) -> ScriptError {
    ScriptError {
        line,
        message: message.into(),
    }
}

impl Script {
    /// Parse a script; errors name the line.
    pub fn parse(text: &str) -> Result<Self, ScriptError> {
        let mut script = Self {
            tcp: toml::Table::new(),
            tcp_line: 0,
            profiles: Vec::new(),
            tolerance: Duration::from_millis(4),
            lines: Vec::new(),
        };
        for (i, raw) in text.lines().enumerate() {
            let number = i + 1;
            let line = raw.split("//").next().unwrap_or("").trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let (head, rest) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
            let rest = rest.trim();
            match head {
                "tcp" => {
                    let t: toml::Table = toml::from_str(&format!("t = {{ {rest} }}"))
                        .map_err(|e| err(number, format!("tcp header: {e}")))?;
                    if let Some(toml::Value::Table(t)) = t.get("t") {
                        script.tcp.extend(t.clone());
                    }
                    // A key or value the endpoint does not take is this line's error, not
                    // the script's as a whole when it runs.
                    toml::Value::Table(script.tcp.clone())
                        .try_into::<TcpConfig>()
                        .map_err(|e| err(number, format!("tcp header: {}", e.message().trim())))?;
                    script.tcp_line = number;
                }
                "profiles" => {
                    for name in rest.split_whitespace() {
                        script.profiles.push(parse_profile(name).ok_or_else(|| {
                            err(
                                number,
                                format!("unknown profile `{name}` (rfc, linux, ns2)"),
                            )
                        })?);
                    }
                }
                "tolerance" => script.tolerance = parse_duration(rest, number)?,
                _ => {
                    let time = parse_when(head, number)?;
                    let event = parse_event(rest, number)?;
                    script.lines.push(Line {
                        number,
                        time,
                        event,
                    });
                }
            }
        }
        if script.lines.is_empty() {
            // Nothing would be sent, expected or asserted: passing it would prove nothing.
            return Err(err(
                0,
                "the script has no timed line (e.g. `0 listen`): nothing to run or check",
            ));
        }
        Ok(script)
    }

    /// The configurations the script runs under: its `tcp` header, once per listed profile (the
    /// header's own keys win over the profile, as in a scenario).
    pub fn configs(&self) -> Result<Vec<(Profile, TcpConfig)>, ScriptError> {
        let profiles = if self.profiles.is_empty() {
            vec![None]
        } else {
            self.profiles.iter().copied().map(Some).collect()
        };
        profiles
            .into_iter()
            .map(|p| {
                let mut t = self.tcp.clone();
                if let Some(p) = p {
                    let name = profile_name(p);
                    t.insert("profile".into(), toml::Value::String(name.into()));
                }
                let c: TcpConfig = t.try_into().map_err(|e| {
                    err(self.tcp_line, format!("tcp header: {}", e.message().trim()))
                })?;
                Ok((c.profile, c))
            })
            .collect()
    }

    /// Run the script under every configuration it names; the first failure, with the profile.
    pub fn run(&self) -> Result<(), ScriptError> {
        for (profile, config) in self.configs()? {
            Runner::new(config, self.tolerance)
                .run(&self.lines)
                .map_err(|e| ScriptError {
                    line: e.line,
                    message: format!("[profile {}] {}", profile_name(profile), e.message),
                })?;
        }
        Ok(())
    }
}

fn parse_profile(name: &str) -> Option<Profile> {
    match name {
        "rfc" => Some(Profile::Rfc),
        "linux" => Some(Profile::Linux),
        "ns2" => Some(Profile::Ns2),
        _ => None,
    }
}

fn profile_name(p: Profile) -> &'static str {
    match p {
        Profile::Rfc => "rfc",
        Profile::Linux => "linux",
        Profile::Ns2 => "ns2",
    }
}

fn parse_duration(s: &str, line: usize) -> Result<Duration, ScriptError> {
    let (num, scale) = if let Some(v) = s.strip_suffix("ms") {
        (v, 1e-3)
    } else if let Some(v) = s.strip_suffix("us") {
        (v, 1e-6)
    } else {
        (s.strip_suffix('s').unwrap_or(s), 1.0)
    };
    let v: f64 = num
        .trim()
        .parse()
        .map_err(|_| err(line, format!("bad duration `{s}`")))?;
    if !(v.is_finite() && v >= 0.0) {
        return Err(err(line, format!("bad duration `{s}`")));
    }
    Ok(Duration::from_secs_f64(v * scale))
}

fn parse_when(s: &str, line: usize) -> Result<When, ScriptError> {
    if s == "*" {
        return Ok(When::Any);
    }
    match s.strip_prefix('+') {
        Some(rel) => Ok(When::After(parse_duration(rel, line)?)),
        None => Ok(When::At(parse_duration(s, line)?)),
    }
}

fn parse_event(s: &str, line: usize) -> Result<Event, ScriptError> {
    let mut words = s.split_whitespace();
    let first = words
        .next()
        .ok_or_else(|| err(line, "a time with no event"))?;
    let number = |w: Option<&str>| -> Result<u64, ScriptError> {
        w.and_then(|w| w.parse().ok())
            .ok_or_else(|| err(line, format!("`{first}` needs a byte count")))
    };
    let event = match first {
        "<" => Event::Inbound(parse_segment(&s[1..], line)?.seg),
        ">" => Event::Outbound(parse_segment(&s[1..], line)?),
        "listen" => Event::Listen,
        "connect" => Event::Connect,
        "close" => Event::Close,
        "manual_read" => Event::ManualRead,
        "write" => Event::Write(number(words.next())?),
        "read" => Event::Read(number(words.next())?),
        "%" => {
            let field = words.next().ok_or_else(|| err(line, "`%` needs a field"))?;
            let op = match words.next() {
                Some("==") => Op::Eq,
                Some("!=") => Op::Ne,
                Some("<") => Op::Lt,
                Some("<=") => Op::Le,
                Some(">") => Op::Gt,
                Some(">=") => Op::Ge,
                other => return Err(err(line, format!("bad operator {other:?}"))),
            };
            let value = words.next().ok_or_else(|| err(line, "`%` needs a value"))?;
            Event::Assert(field.into(), op, value.into())
        }
        other => return Err(err(line, format!("unknown event `{other}`"))),
    };
    Ok(event)
}

/// `FLAGS start:end(len) [ack N] [win N] [<options>]`.
fn parse_segment(s: &str, line: usize) -> Result<Expect, ScriptError> {
    let (main, options) = match s.find('<') {
        Some(i) => {
            let close = s
                .rfind('>')
                .filter(|&j| j > i)
                .ok_or_else(|| err(line, "options `<` without `>`"))?;
            (&s[..i], Some(&s[i + 1..close]))
        }
        None => (s, None),
    };
    let mut words = main.split_whitespace();
    let flags = words
        .next()
        .ok_or_else(|| err(line, "segment without flags"))?;
    let mut e = Expect::default();
    let mut has_ack = false;
    for c in flags.chars() {
        match c {
            'S' => e.seg.flags.insert(TcpFlags::SYN),
            'F' => e.seg.flags.insert(TcpFlags::FIN),
            'R' => e.seg.flags.insert(TcpFlags::RST),
            'P' => e.seg.flags.insert(TcpFlags::PSH),
            '.' => has_ack = true,
            _ => return Err(err(line, format!("unknown flag `{c}` in `{flags}`"))),
        }
    }
    let range = words
        .next()
        .ok_or_else(|| err(line, "segment without start:end(len)"))?;
    let bad_range = || err(line, format!("bad range `{range}`: want start:end(len)"));
    let (start, tail) = range.split_once(':').ok_or_else(bad_range)?;
    let (end, len) = tail.split_once('(').ok_or_else(bad_range)?;
    let len = len.strip_suffix(')').ok_or_else(bad_range)?;
    let (start, end, len): (u32, u32, u32) = (
        start.parse().map_err(|_| bad_range())?,
        end.parse().map_err(|_| bad_range())?,
        len.parse().map_err(|_| bad_range())?,
    );
    if end.wrapping_sub(start) != len {
        return Err(err(line, format!("`{range}`: end − start is not len")));
    }
    e.seg.seq = SeqNumber(start);
    e.seg.payload_len = len;
    while let Some(w) = words.next() {
        let value = words
            .next()
            .and_then(|v| v.parse::<u64>().ok())
            .ok_or_else(|| err(line, format!("`{w}` needs a number")))?;
        match w {
            "ack" => e.seg.ack = Some(SeqNumber(value as u32)),
            "win" => {
                let w = u16::try_from(value).map_err(|_| err(line, "win is a 16-bit field"))?;
                e.seg.window = w;
                e.window = Some(w);
            }
            _ => return Err(err(line, format!("unknown segment field `{w}`"))),
        }
    }
    if has_ack != e.seg.ack.is_some() {
        return Err(err(line, "`.` and `ack N` go together"));
    }
    if let Some(options) = options {
        parse_options(options, &mut e, line)?;
    }
    Ok(e)
}

fn parse_options(s: &str, e: &mut Expect, line: usize) -> Result<(), ScriptError> {
    for opt in s.split(',').map(str::trim).filter(|o| !o.is_empty()) {
        let words: Vec<&str> = opt.split_whitespace().collect();
        let num = |i: usize| -> Result<u64, ScriptError> {
            words
                .get(i)
                .and_then(|w| w.parse().ok())
                .ok_or_else(|| err(line, format!("option `{opt}` needs a number")))
        };
        match words.first().copied() {
            Some("nop" | "eol") => {}
            Some("mss") => {
                let v = u16::try_from(num(1)?).map_err(|_| err(line, "mss is 16 bits"))?;
                e.mss = Some(v);
                e.seg.mss = Some(v);
            }
            Some("wscale") => {
                let v = u8::try_from(num(1)?).map_err(|_| err(line, "wscale is 8 bits"))?;
                e.wscale = Some(v);
                e.seg.window_scale = Some(v);
            }
            Some("sackOK") => {
                e.sack_permitted = Some(true);
                e.seg.sack_permitted = true;
            }
            Some("TS") => {
                // TS val V ecr E
                let any = |i: usize| -> Result<Option<u32>, ScriptError> {
                    match words.get(i) {
                        Some(&"*") => Ok(None),
                        _ => Ok(Some(num(i)? as u32)),
                    }
                };
                if words.get(1) != Some(&"val") || words.get(3) != Some(&"ecr") {
                    return Err(err(line, format!("`{opt}`: want `TS val V ecr E`")));
                }
                let (val, ecr) = (any(2)?, any(4)?);
                e.ts = Some((val, ecr));
                e.seg.timestamp = Some((val.unwrap_or(0), ecr.unwrap_or(0)));
            }
            Some("sack") => {
                let mut blocks = SackBlocks::EMPTY;
                for b in &words[1..] {
                    let (l, r) = b
                        .split_once(':')
                        .and_then(|(l, r)| Some((l.parse().ok()?, r.parse().ok()?)))
                        .ok_or_else(|| err(line, format!("bad sack block `{b}`")))?;
                    blocks.push(SeqNumber(l), SeqNumber(r));
                }
                e.sack = Some(blocks);
                e.seg.sack = blocks;
            }
            _ => return Err(err(line, format!("unknown option `{opt}`"))),
        }
    }
    Ok(())
}

/// What an outbound line expects, in script syntax (no `win` unless the line has one).
fn show_expected(e: &Expect) -> String {
    let s = show(&e.seg);
    match e.window {
        Some(_) => s,
        None => s.replacen(&format!(" win {}", e.seg.window), "", 1),
    }
}

/// The segment in script syntax, for messages.
fn show(seg: &TcpRepr) -> String {
    let mut s = String::new();
    for (f, c) in [
        (TcpFlags::SYN, 'S'),
        (TcpFlags::FIN, 'F'),
        (TcpFlags::RST, 'R'),
        (TcpFlags::PSH, 'P'),
    ] {
        if seg.flags.contains(f) {
            s.push(c);
        }
    }
    if seg.ack.is_some() {
        s.push('.');
    }
    let start = seg.seq.0;
    let _ = write!(
        s,
        " {start}:{}({})",
        start.wrapping_add(seg.payload_len),
        seg.payload_len
    );
    if let Some(a) = seg.ack {
        let _ = write!(s, " ack {}", a.0);
    }
    let _ = write!(s, " win {}", seg.window);
    let mut opts = Vec::new();
    if let Some(m) = seg.mss {
        opts.push(format!("mss {m}"));
    }
    if seg.sack_permitted {
        opts.push("sackOK".into());
    }
    if let Some((v, e)) = seg.timestamp {
        opts.push(format!("TS val {v} ecr {e}"));
    }
    if let Some(w) = seg.window_scale {
        opts.push(format!("wscale {w}"));
    }
    if !seg.sack.is_empty() {
        let blocks: Vec<String> = seg
            .sack
            .as_slice()
            .iter()
            .map(|(l, r)| format!("{}:{}", l.0, r.0))
            .collect();
        opts.push(format!("sack {}", blocks.join(" ")));
    }
    if !opts.is_empty() {
        let _ = write!(s, " <{}>", opts.join(","));
    }
    s
}

/// Differences between an expected and an actual segment, empty if it matches.
fn mismatches(e: &Expect, got: &TcpRepr) -> Vec<String> {
    let mut out = Vec::new();
    let w = &e.seg;
    if w.flags != got.flags || w.ack.is_some() != got.ack.is_some() {
        out.push("flags".into());
    }
    if w.seq != got.seq || w.payload_len != got.payload_len {
        out.push("sequence range".into());
    }
    if w.ack.is_some() && w.ack != got.ack {
        out.push("ack".into());
    }
    if e.window.is_some_and(|v| v != got.window) {
        out.push("win".into());
    }
    if e.mss.is_some() && e.mss != got.mss {
        out.push("mss".into());
    }
    if e.wscale.is_some() && e.wscale != got.window_scale {
        out.push("wscale".into());
    }
    if e.sack_permitted.is_some_and(|v| v != got.sack_permitted) {
        out.push("sackOK".into());
    }
    if let Some((val, ecr)) = e.ts {
        let ok = got
            .timestamp
            .is_some_and(|(v, c)| val.is_none_or(|x| x == v) && ecr.is_none_or(|x| x == c));
        if !ok {
            out.push("TS".into());
        }
    }
    if e.sack.is_some_and(|s| s != got.sack) {
        out.push("sack blocks".into());
    }
    out
}

struct Runner {
    ep: TcpEndpoint,
    now: Instant,
    tolerance: Duration,
    sent: VecDeque<(Instant, TcpRepr)>,
}

/// How long `*` waits for a segment.
const ANY_LIMIT: Duration = Duration::from_secs(600);

/// Segments one drain collects at most (no script expects more than a few windows at once).
const MAX_BURST: usize = 10_000;

impl Runner {
    fn new(config: TcpConfig, tolerance: Duration) -> Self {
        let local = (Ipv4Addr::new(192, 0, 2, 1), 8080);
        let remote = (Ipv4Addr::new(192, 0, 2, 2), 40_000);
        Self {
            ep: TcpEndpoint::new(config, local, remote, 0),
            now: Instant::ZERO,
            tolerance,
            sent: VecDeque::new(),
        }
    }

    /// Collect what the endpoint sends now, at most [`MAX_BURST`] segments: a sender that
    /// never stops (a mutant) then fails at its first unexpected segment instead of filling
    /// memory until the kernel kills the test.
    fn drain(&mut self, at: Instant) {
        for _ in 0..MAX_BURST {
            let Some(seg) = self.ep.poll_transmit(at) else {
                return;
            };
            self.sent.push_back((at, seg));
        }
    }

    /// Run timers due up to `t`, collecting what they send; the clock then reads `t`.
    fn advance(&mut self, t: Instant) {
        while let Some(at) = self.ep.poll_timeout().filter(|&at| at <= t) {
            let at = at.max(self.now);
            self.now = at;
            self.ep.handle_timeout(at);
            self.drain(at);
        }
        self.now = self.now.max(t);
    }

    /// Run the next timer if it is due by `limit`; false if none is.
    fn step(&mut self, limit: Instant) -> bool {
        match self.ep.poll_timeout().filter(|&at| at <= limit) {
            Some(at) => {
                let at = at.max(self.now);
                self.now = at;
                self.ep.handle_timeout(at);
                self.drain(at);
                true
            }
            None => false,
        }
    }

    fn nothing_unexpected(&self, line: usize) -> Result<(), ScriptError> {
        match self.sent.front() {
            Some((at, seg)) => Err(err(
                line,
                format!(
                    "unexpected outbound segment at {:.6}s: > {}",
                    at.as_secs_f64(),
                    show(seg)
                ),
            )),
            None => Ok(()),
        }
    }

    fn run(mut self, lines: &[Line]) -> Result<(), ScriptError> {
        let mut script_time = Instant::ZERO;
        for l in lines {
            let n = l.number;
            let t = match l.time {
                When::At(d) => Instant::ZERO + d,
                When::After(d) => script_time + d,
                When::Any => script_time,
            };
            match &l.event {
                Event::Outbound(e) => {
                    let at = self.expect(n, l.time, t, e)?;
                    script_time = if matches!(l.time, When::Any) { at } else { t };
                    continue;
                }
                _ => {
                    self.advance(t);
                    self.nothing_unexpected(n)?;
                }
            }
            script_time = t;
            let now = self.now;
            match &l.event {
                Event::Inbound(seg) => {
                    let mut seg = *seg;
                    seg.src_port = 40_000;
                    seg.dst_port = 8080;
                    self.ep.handle_segment(now, &seg);
                }
                Event::Listen => self.ep.listen(),
                Event::Connect => self.ep.connect(now),
                Event::Write(b) => {
                    let took = self.ep.send(now, *b);
                    if took != *b {
                        return Err(err(n, format!("write {b}: the send buffer took {took}")));
                    }
                }
                Event::Close => self.ep.close(now),
                Event::ManualRead => self.ep.set_manual_read(),
                Event::Read(b) => {
                    let total = self.ep.bytes_delivered() + b;
                    self.ep.read_to(now, total);
                }
                Event::Assert(field, op, value) => self.check(n, field, *op, value)?,
                Event::Outbound(_) => {}
            }
            self.drain(now);
        }
        self.nothing_unexpected(lines.last().map_or(0, |l| l.number))
    }

    /// The next outbound segment must match `e` and leave at `t` (± tolerance), or at any time
    /// for `*`; returns when it left.
    fn expect(
        &mut self,
        n: usize,
        when: When,
        t: Instant,
        e: &Expect,
    ) -> Result<Instant, ScriptError> {
        let limit = match when {
            When::Any => t + ANY_LIMIT,
            _ => t + self.tolerance,
        };
        if !matches!(when, When::Any) {
            let early = Instant::ZERO + t.saturating_since(Instant::ZERO + self.tolerance);
            self.advance(early.max(self.now));
        }
        while self.sent.is_empty() && self.step(limit) {}
        let Some((at, got)) = self.sent.pop_front() else {
            return Err(err(
                n,
                format!(
                    "expected > {} at {:.6}s; nothing was sent by {:.6}s",
                    show_expected(e),
                    t.as_secs_f64(),
                    limit.as_secs_f64()
                ),
            ));
        };
        let bad = mismatches(e, &got);
        if !bad.is_empty() {
            return Err(err(
                n,
                format!(
                    "{} differ: expected > {}, got > {} at {:.6}s",
                    bad.join(", "),
                    show_expected(e),
                    show(&got),
                    at.as_secs_f64()
                ),
            ));
        }
        if !matches!(when, When::Any) {
            let off = if at > t {
                at.saturating_since(t)
            } else {
                t.saturating_since(at)
            };
            if off > self.tolerance {
                return Err(err(
                    n,
                    format!(
                        "> {} left at {:.6}s, expected {:.6}s (tolerance {})",
                        show(&got),
                        at.as_secs_f64(),
                        t.as_secs_f64(),
                        self.tolerance
                    ),
                ));
            }
        }
        Ok(at)
    }

    fn check(&self, n: usize, field: &str, op: Op, value: &str) -> Result<(), ScriptError> {
        if field == "state" {
            let got = format!("{:?}", self.ep.state()).to_ascii_lowercase();
            let want = value.to_ascii_lowercase().replace('_', "");
            let holds = match op {
                Op::Eq => got == want,
                Op::Ne => got != want,
                _ => return Err(err(n, "state compares with == or != only")),
            };
            return if holds {
                Ok(())
            } else {
                Err(err(n, format!("state is {got}, expected {op:?} {want}")))
            };
        }
        let got = self
            .number(field)
            .ok_or_else(|| err(n, format!("unknown field `{field}`")))?;
        let want: u64 = if value == "inf" {
            u64::MAX
        } else {
            value
                .parse()
                .map_err(|_| err(n, format!("`{value}` is not a number")))?
        };
        let holds = match op {
            Op::Eq => got == want,
            Op::Ne => got != want,
            Op::Lt => got < want,
            Op::Le => got <= want,
            Op::Gt => got > want,
            Op::Ge => got >= want,
        };
        if holds {
            Ok(())
        } else {
            Err(err(
                n,
                format!(
                    "{field} is {got}, expected {op:?} {value} (at {:.6}s)",
                    self.now.as_secs_f64()
                ),
            ))
        }
    }

    /// A numeric field of the endpoint by name (times in milliseconds).
    fn number(&self, field: &str) -> Option<u64> {
        let ep = &self.ep;
        let s = ep.stats();
        let ms = |d: Duration| d.as_nanos() / 1_000_000;
        Some(match field {
            "cwnd" => ep.cwnd(),
            "ssthresh" => ep.ssthresh().unwrap_or(u64::MAX),
            "snd_wnd" => ep.snd_wnd(),
            "flight" => ep.bytes_in_flight(),
            "smss" => ep.smss(),
            "rto_ms" => ms(ep.rtt().rto()),
            "srtt_ms" => ms(ep.rtt().srtt()?),
            "bytes_acked" => ep.bytes_acked(),
            "bytes_received" => ep.bytes_received(),
            "bytes_delivered" => ep.bytes_delivered(),
            "segments_sent" => s.segments_sent,
            "bytes_sent" => s.bytes_sent,
            "retransmissions" => s.retransmissions,
            "bytes_retransmitted" => s.bytes_retransmitted,
            "fast_retransmits" => s.fast_retransmits,
            "rto_expirations" => s.rto_expirations,
            "dup_acks" => s.dup_acks,
            "segments_received" => s.segments_received,
            "acks_sent" => s.acks_sent,
            "out_of_order" => s.out_of_order,
            "beyond_window" => s.beyond_window,
            "unacceptable" => s.unacceptable,
            "window_probes" => s.window_probes,
            "resets_ignored" => s.resets_ignored,
            "challenge_acks" => s.challenge_acks,
            "rack_marked_lost" => s.rack_marked_lost,
            "tlp_probes" => s.tlp_probes,
            "tlp_recoveries" => s.tlp_recoveries,
            "spurious_rtos" => s.spurious_rtos,
            _ => return None,
        })
    }
}
