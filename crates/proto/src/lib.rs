//! satpep-proto: every satpep mechanism as a sans-IO state machine.
//!
//! Nothing in this crate reads a clock, sleeps, spawns a thread or touches a socket: time comes in
//! as an [`Instant`] argument, packets come in as bytes, and what a mechanism wants done is pulled
//! out through `poll_*` methods. The simulator drives these types in virtual time and the emulator
//! drives the very same types in real time (see `../shared/DESIGN.md`).
//!
//! Call order for every [`Node`]: after any `handle_*` call or command, drain
//! [`Node::poll_transmit`] until `None`, then read [`Node::poll_timeout`]. Time never goes
//! backwards between calls; inputs at the same instant may arrive in any order.
//!
//! Layers inside the crate, bottom up: [`time`] and [`units`] → [`wire`] (header bytes) →
//! [`tcp`] (endpoint model) and [`link`] (rate, delay, queue, errors) → [`middlebox`] (mechanisms
//! in a router's forwarding path).

pub mod accel;
pub mod ack;
pub mod auth;
pub mod chain;
pub mod dama;
pub mod dupack_delay;
pub mod flow;
#[cfg(any(test, feature = "fuzzing"))]
pub mod fuzzing;
pub mod link;
pub mod middlebox;
pub mod net;
pub mod node;
pub mod pep;
pub mod rand;
pub mod snoop;
pub mod supercharger;
pub mod tcp;
pub mod time;
pub mod timer_heap;
pub mod tunnel;
pub mod units;
pub mod vj;
pub mod wire;

#[cfg(test)]
mod testnet;

pub use node::{DropReason, Dropped, Node, Packet, PortId, Transmit};
pub use time::{Bitrate, Duration, Instant};
pub use units::ByteSize;
