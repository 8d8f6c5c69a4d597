//! Middleboxes: mechanisms that sit in a router's forwarding path — the ACK expander and spacer,
//! TCP-SuperCharger, Snoop, split-TCP relays. A router hands every packet it receives to its
//! middlebox (after the TTL decrement) and routes whatever the middlebox transmits by destination
//! address, so a middlebox never needs to know the topology; `Transmit::port` from a middlebox is
//! ignored. The port a packet arrives on numbers the router's incoming links from 0 in scenario
//! order, so a middlebox can tell, e.g., the satellite side from the terrestrial side.
//!
//! A scenario selects one with `middlebox = { kind = "…", … }` on a `kind = "router"` node.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

use crate::rand::Rng;
use crate::{Instant, Node, Packet, PortId, Transmit};

/// Which middlebox, with its settings.
#[derive(Clone, Debug, Deserialize, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
#[non_exhaustive]
pub enum MiddleboxConfig {
    /// Forwards every packet unchanged, at once: the identity, for checking the hook itself.
    PassThrough,
}

impl MiddleboxConfig {
    /// Check values a scenario file could get wrong; the message starts with the key.
    pub fn validate(&self) -> Result<(), String> {
        match self {
            Self::PassThrough => Ok(()),
        }
    }
}

/// The in-tree middleboxes (enum dispatch, as for congestion control).
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum Middlebox {
    /// See [`MiddleboxConfig::PassThrough`].
    PassThrough(PassThrough),
}

impl Middlebox {
    /// Build the middlebox `config` asks for; `rng` is its own seeded generator.
    pub fn new(config: &MiddleboxConfig, _rng: Rng) -> Self {
        match config {
            MiddleboxConfig::PassThrough => Self::PassThrough(PassThrough::default()),
        }
    }
}

impl Node for Middlebox {
    fn handle_packet(&mut self, now: Instant, port: PortId, pkt: Packet) {
        match self {
            Self::PassThrough(m) => m.handle_packet(now, port, pkt),
        }
    }
    fn handle_timeout(&mut self, now: Instant) {
        match self {
            Self::PassThrough(m) => m.handle_timeout(now),
        }
    }
    fn poll_transmit(&mut self, now: Instant) -> Option<Transmit> {
        match self {
            Self::PassThrough(m) => m.poll_transmit(now),
        }
    }
    fn poll_timeout(&self) -> Option<Instant> {
        match self {
            Self::PassThrough(m) => m.poll_timeout(),
        }
    }
}

/// The identity middlebox.
#[derive(Clone, Debug, Default)]
pub struct PassThrough {
    out: VecDeque<Packet>,
}

impl Node for PassThrough {
    fn handle_packet(&mut self, _now: Instant, _port: PortId, pkt: Packet) {
        self.out.push_back(pkt);
    }
    fn handle_timeout(&mut self, _now: Instant) {}
    fn poll_transmit(&mut self, _now: Instant) -> Option<Transmit> {
        self.out.pop_front().map(|pkt| Transmit {
            port: PortId(0),
            pkt,
        })
    }
    fn poll_timeout(&self) -> Option<Instant> {
        None
    }
}
