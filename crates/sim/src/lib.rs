//! satpep-sim: the deterministic discrete-event simulator.
//!
//! Builds hosts, routers and links from a [`satpep_scenario::Scenario`] and drives the sans-IO
//! elements of `satpep-proto` in virtual time. Same scenario and seed give byte-identical outputs.

pub mod apps;
mod capture;
mod dama_out;
pub mod engine;
pub mod experiments;
pub mod parallel;
pub mod reproduce;
mod world;

pub use capture::TRACE_PCAPNG;
pub use engine::QueueKind;
pub use world::{Outputs, RunResult, Simulation};
