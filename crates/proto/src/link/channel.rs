//! Channel release: a link whose channel is torn down after it has been idle for a while and
//! must be set up again before the next packet can go — the anomaly Lee, Yum & Wan measured on
//! the WINDS satellite (TCP-SuperCharger paper, §5 and Table 1): RTT 5.78 s instead of 1.03 s
//! and 0.12 Mb/s for a 64 KB TCP flow, until 400 kb/s of background traffic kept the channel up.
//!
//! The model: the serialiser remembers when it last finished a packet. A packet that finds the
//! link idle for at least `idle` waits `setup` before its serialisation starts; packets arriving
//! during the setup queue behind it (subject to the queue's limits). Once set up, the channel
//! stays up while packets keep coming less than `idle` apart. Which component of the real system
//! releases the channel is unknown (the paper says so); the model only reproduces the timing.

use serde::{Deserialize, Serialize};

use crate::time::{Duration, Instant};

/// `channel_release = { idle = "…", setup = "…" }` on a link.
#[derive(Clone, Copy, Debug, Deserialize, Eq, PartialEq, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ChannelReleaseConfig {
    /// The channel is released after the serialiser has been idle this long (> 0).
    pub idle: Duration,
    /// Time to set the channel up again before the first packet after a release.
    pub setup: Duration,
}

impl ChannelReleaseConfig {
    /// Check the values; the message begins with the key inside the table.
    pub fn validate(&self) -> Result<(), String> {
        if self.idle == Duration::ZERO {
            return Err("idle: must be greater than 0 (e.g. \"500ms\")".to_owned());
        }
        Ok(())
    }
}

/// Channel state of one link.
#[derive(Clone, Debug)]
pub(super) struct Channel {
    config: ChannelReleaseConfig,
    /// When the serialiser last finished a packet (the channel is up at time zero).
    last_busy: Instant,
    /// A setup in progress ends then.
    setup_until: Option<Instant>,
    setups: u64,
}

impl Channel {
    pub fn new(config: ChannelReleaseConfig) -> Self {
        Self {
            config,
            last_busy: Instant::ZERO,
            setup_until: None,
            setups: 0,
        }
    }

    /// A packet is waiting to start at `t`: true if the channel holds it back (being set up,
    /// or released and now starting a setup).
    pub fn holds(&mut self, t: Instant) -> bool {
        if let Some(u) = self.setup_until {
            if t < u {
                return true;
            }
            self.setup_until = None;
            self.last_busy = u;
            return false;
        }
        if t.saturating_since(self.last_busy) >= self.config.idle {
            self.setup_until = Some(t + self.config.setup);
            self.setups += 1;
            return self.config.setup > Duration::ZERO;
        }
        false
    }

    /// The serialiser finished a packet at `t`.
    pub fn on_finish(&mut self, t: Instant) {
        self.last_busy = t;
    }

    /// When a setup in progress completes.
    pub fn ready_at(&self) -> Option<Instant> {
        self.setup_until
    }

    /// Setups so far.
    pub fn setups(&self) -> u64 {
        self.setups
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::link::{Link, LinkConfig};
    use crate::node::{Node, Packet, PortId};
    use crate::rand::Rng;
    use crate::time::Bitrate;

    fn at(ms: u64) -> Instant {
        Instant::ZERO + Duration::from_millis(ms)
    }

    /// 1 Mb/s, 100 ms, released after 300 ms idle, 2 s to set up again.
    fn link() -> Link {
        let mut c = LinkConfig {
            rate: Bitrate(1_000_000),
            delay: Duration::from_millis(100),
            ..LinkConfig::default()
        };
        c.channel_release = Some(ChannelReleaseConfig {
            idle: Duration::from_millis(300),
            setup: Duration::from_secs(2),
        });
        Link::new(&c, Rng::for_component(1, "channel"))
    }

    /// Feed 1250-byte packets (10 ms each) at the given instants; return delivery instants.
    fn deliveries(send_ms: &[u64]) -> (Vec<u64>, u64) {
        let mut l = link();
        let mut out = Vec::new();
        let mut sends = send_ms.iter().copied().peekable();
        let mut now = Instant::ZERO;
        loop {
            let next_send = sends.peek().map(|&ms| at(ms));
            let next = match (next_send, l.poll_timeout()) {
                (Some(a), Some(b)) => a.min(b),
                (a, b) => match a.or(b) {
                    Some(x) => x,
                    None => break,
                },
            };
            now = now.max(next);
            if next_send == Some(now) {
                sends.next();
                l.handle_packet(now, PortId(0), Packet::new(&[0x45; 20], 1230));
            } else {
                l.handle_timeout(now);
            }
            while let Some(tx) = l.poll_transmit(now) {
                drop(tx);
                out.push(now.as_nanos() / 1_000_000);
            }
        }
        (out, l.channel_setups())
    }

    #[test]
    fn busy_channel_stays_up() {
        // Packets 100 ms apart never leave the channel idle for 300 ms: 10 ms + 100 ms each.
        let (d, setups) = deliveries(&[0, 100, 200, 300]);
        assert_eq!(d, vec![110, 210, 310, 410]);
        assert_eq!(setups, 0);
    }

    #[test]
    fn idle_channel_is_set_up_again_and_followers_queue_behind() {
        // Idle from 10 ms; at 500 ms it has been idle 490 ms ≥ 300 ms: the packet waits for the
        // 2 s setup (starts at 2500), the one at 600 ms queues behind it (starts at 2510).
        let (d, setups) = deliveries(&[0, 500, 600]);
        assert_eq!(d, vec![110, 2610, 2620]);
        assert_eq!(setups, 1);
    }

    #[test]
    fn idle_just_below_the_threshold_keeps_the_channel() {
        // Finished at 10 ms, next at 309 ms: idle 299 ms < 300 ms.
        let (d, setups) = deliveries(&[0, 309, 610]);
        assert_eq!(d, vec![110, 419, 720]);
        assert_eq!(setups, 0);
    }

    #[test]
    fn validate_names_the_key() {
        let c = ChannelReleaseConfig {
            idle: Duration::ZERO,
            setup: Duration::from_secs(1),
        };
        assert!(c.validate().unwrap_err().starts_with("idle:"));
    }
}
