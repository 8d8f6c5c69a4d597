//! Several middleboxes in one router's forwarding path, in order: what element *i* transmits
//! is handed to element *i + 1* with the packet's original arrival port, and what the last one
//! transmits is routed. Example: the DirecPC gateway opens the terminal's IP-in-IP tunnel
//! *before* its spoofer sees the ACKs inside (`[ipip_tunnel, spoof]`).

use std::collections::VecDeque;

use crate::middlebox::{Middlebox, MiddleboxConfig};
use crate::rand::Rng;
use crate::{Instant, Node, Packet, PortId, Transmit};

/// A chain of middleboxes.
#[derive(Clone, Debug)]
pub struct Chain {
    elements: Vec<Middlebox>,
    /// (element index to feed next, arrival port, packet)
    pending: VecDeque<(usize, PortId, Packet)>,
    out: VecDeque<Packet>,
}

impl Chain {
    /// Build each element in order; element *i* gets its own generator derived from `rng`.
    pub fn new(configs: &[MiddleboxConfig], mut rng: Rng) -> Self {
        let elements = configs
            .iter()
            .map(|c| Middlebox::new(c, Rng::new(rng.next_u64(), rng.next_u64())))
            .collect();
        Self {
            elements,
            pending: VecDeque::new(),
            out: VecDeque::new(),
        }
    }

    /// The elements, in order.
    pub fn elements(&self) -> &[Middlebox] {
        &self.elements
    }

    /// The elements, in order, to change (e.g. [`Middlebox::with_epoch`] on each).
    pub fn elements_mut(&mut self) -> &mut [Middlebox] {
        &mut self.elements
    }

    /// Drain element `i`'s output into the next element (or the chain's output), then carry
    /// everything pending down the chain.
    fn drain_from(&mut self, now: Instant, i: usize, port: PortId) {
        self.collect(now, i, port);
        while let Some((j, p, pkt)) = self.pending.pop_front() {
            if let Some(e) = self.elements.get_mut(j) {
                e.handle_packet(now, p, pkt);
                self.collect(now, j, p);
            } else {
                self.out.push_back(pkt);
            }
        }
    }

    fn collect(&mut self, now: Instant, i: usize, port: PortId) {
        if let Some(e) = self.elements.get_mut(i) {
            while let Some(tx) = e.poll_transmit(now) {
                self.pending.push_back((i + 1, port, tx.pkt));
            }
        }
    }
}

impl Node for Chain {
    fn handle_packet(&mut self, now: Instant, port: PortId, pkt: Packet) {
        self.pending.push_back((0, port, pkt));
        self.drain_from(now, usize::MAX, port);
    }

    fn handle_timeout(&mut self, now: Instant) {
        for i in 0..self.elements.len() {
            if self.elements[i].poll_timeout().is_some_and(|t| t <= now) {
                self.elements[i].handle_timeout(now);
                // Packets an element makes on its own have no arrival port; 0 is used.
                self.drain_from(now, i, PortId(0));
            }
        }
    }

    fn poll_transmit(&mut self, _now: Instant) -> Option<Transmit> {
        self.out.pop_front().map(|pkt| Transmit {
            port: PortId(0),
            pkt,
        })
    }

    fn poll_timeout(&self) -> Option<Instant> {
        self.elements.iter().filter_map(Node::poll_timeout).min()
    }
}
