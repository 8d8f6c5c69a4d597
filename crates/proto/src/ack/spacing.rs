//! ACK spacing at the expander (Samaraweera 1999 §7): a queue and a token counter release
//! regenerated ACKs at the rate the receiver generated them, instead of in one burst.
//!
//! - Every received packet (a normal ACK, or a compacted ACK) adds one token at once; the timer
//!   adds `n = min(N, queued)` tokens every `ack_tov = n · ack_iat`.
//! - `ack_iat` for a compacted ACK is the time since the previous compacted ACK divided by the
//!   ACKs it stands for (deleted + itself). For the first compacted ACK after normal ones, it is
//!   the mean inter-arrival of the last N normal ACKs ("the most recent estimated average value
//!   represents the inter-arrival time for the first compacted packet").
//! - Whenever ACKs are forwarded, the timer is (re)started if it is not running or would expire
//!   later than `ack_tov` from now.
//!
//! One `Spacer` serves all flows, as the paper's implementation ("does not classify packets"), or
//! the expander keeps one per flow (`spacing_per_flow`), the variant the paper mentions.
//!
//! Not in the paper: the queue has a size limit ([`Spacer::with_queue_limit`]), because a
//! forged flood of ACKs would otherwise grow it without bound. When an ACK arrives at a full
//! queue, the *oldest* waiting ACK is dropped (and counted): ACKs are cumulative, so the newer
//! one carries everything the older one said, and the sender still learns the newest point.

use std::collections::VecDeque;

use crate::node::Packet;
use crate::time::{Duration, Instant};

/// The spacer's state.
#[derive(Clone, Debug)]
pub struct Spacer {
    n: u32,
    queue: VecDeque<Packet>,
    tokens: u32,
    timer: Option<Instant>,
    ack_iat: Duration,
    /// Last N inter-arrival times of normal ACKs, and the last normal arrival.
    normal_iats: VecDeque<Duration>,
    last_normal: Option<Instant>,
    last_compacted: Option<Instant>,
    last_was_compacted: bool,
    max_queue: usize,
    limit: usize,
    dropped: u64,
}

impl Spacer {
    /// A spacer adding up to `n` tokens per timer expiry (the paper uses 4).
    pub fn new(n: u32) -> Self {
        Self {
            n: n.max(1),
            queue: VecDeque::new(),
            tokens: 0,
            timer: None,
            ack_iat: Duration::ZERO,
            normal_iats: VecDeque::new(),
            last_normal: None,
            last_compacted: None,
            last_was_compacted: false,
            max_queue: 0,
            limit: usize::MAX,
            dropped: 0,
        }
    }

    /// The same spacer holding at most `limit` ACKs (at least 1): an ACK arriving at a full
    /// queue pushes the oldest one out, counted in [`dropped`](Self::dropped).
    pub fn with_queue_limit(mut self, limit: usize) -> Self {
        self.limit = limit.max(1);
        self
    }

    /// A normal (not compacted) ACK arrived.
    pub fn handle_normal(&mut self, now: Instant, pkt: Packet) {
        if let Some(t) = self.last_normal {
            if self.normal_iats.len() == self.n as usize {
                self.normal_iats.pop_front();
            }
            self.normal_iats.push_back(now.saturating_since(t));
        }
        self.last_normal = Some(now);
        self.last_was_compacted = false;
        self.push(pkt);
        self.tokens += 1;
    }

    /// A compacted ACK arrived and was expanded into `acks` (lowest first, the received one
    /// last).
    pub fn handle_compacted(&mut self, now: Instant, acks: impl IntoIterator<Item = Packet>) {
        let mut k = 0u64;
        for p in acks {
            self.push(p);
            k += 1;
        }
        let k = k.max(1);
        self.ack_iat = match (self.last_was_compacted, self.last_compacted) {
            (true, Some(t)) => Duration::from_nanos(now.saturating_since(t).as_nanos() / k),
            _ => self.mean_normal_iat(),
        };
        self.last_compacted = Some(now);
        self.last_was_compacted = true;
        self.tokens += 1;
    }

    /// The timer expired (call at or after [`poll_timeout`](Self::poll_timeout)).
    pub fn handle_timeout(&mut self, now: Instant) {
        if self.timer.is_some_and(|t| t <= now) {
            self.timer = None;
            self.tokens += self.batch();
            if !self.queue.is_empty() {
                // Keep ticking while ACKs wait.
                self.timer = Some(now + self.ack_tov());
            }
        }
    }

    /// Next ACK allowed out at `now`; arms the timer as the paper says.
    pub fn poll_release(&mut self, now: Instant) -> Option<Packet> {
        if self.tokens == 0 || self.queue.is_empty() {
            if self.queue.is_empty() {
                self.tokens = 0;
                self.timer = None;
            }
            return None;
        }
        self.tokens -= 1;
        let pkt = self.queue.pop_front();
        if self.queue.is_empty() {
            self.tokens = 0;
            self.timer = None;
        } else {
            let tov = self.ack_tov();
            if self.timer.is_none_or(|t| t.saturating_since(now) > tov) {
                self.timer = Some(now + tov);
            }
        }
        pkt
    }

    /// When the spacing timer expires.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.timer
    }

    /// ACKs waiting.
    pub fn len(&self) -> usize {
        self.queue.len()
    }

    /// Whether [`poll_release`](Self::poll_release) would hand out an ACK now (a token and a
    /// queued ACK): what a driver of many spacers keeps an index of.
    pub fn is_ready(&self) -> bool {
        self.tokens > 0 && !self.queue.is_empty()
    }

    /// True when nothing waits.
    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    /// Most ACKs that waited at once.
    pub fn max_len(&self) -> usize {
        self.max_queue
    }

    /// ACKs pushed out of a full queue (see [`with_queue_limit`](Self::with_queue_limit)).
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    /// The current per-ACK spacing estimate.
    pub fn ack_iat(&self) -> Duration {
        self.ack_iat
    }

    fn push(&mut self, pkt: Packet) {
        if self.queue.len() >= self.limit {
            self.queue.pop_front();
            self.dropped += 1;
        }
        self.queue.push_back(pkt);
        self.max_queue = self.max_queue.max(self.queue.len());
    }

    fn batch(&self) -> u32 {
        self.n.min(self.queue.len() as u32)
    }

    fn ack_tov(&self) -> Duration {
        Duration::from_nanos(self.ack_iat.as_nanos() * u64::from(self.batch().max(1)))
    }

    fn mean_normal_iat(&self) -> Duration {
        match self.normal_iats.len() as u64 {
            0 => Duration::ZERO,
            k => {
                Duration::from_nanos(self.normal_iats.iter().map(|d| d.as_nanos()).sum::<u64>() / k)
            }
        }
    }
}
