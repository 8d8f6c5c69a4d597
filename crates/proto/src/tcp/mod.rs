//! TCP endpoint model (RFC 9293), sans-IO.

mod config;

pub use config::{CcAlgorithm, Recovery, TcpConfig};
