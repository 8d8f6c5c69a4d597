//! TCP endpoint model (RFC 9293), sans-IO.
//!
//! Read before editing: RFC 9293 (state machine), RFC 5681 (congestion control), RFC 6582
//! (NewReno), RFC 6675 (SACK loss recovery), RFC 2018 (SACK), RFC 6298 (RTO), RFC 7323 (window
//! scale, timestamps), RFC 9438 (CUBIC), RFC 6928 (initial window), RFC 1122 §4.2.3 (delayed ACK,
//! SWS avoidance).

mod bytes;
pub mod cc;
mod config;
mod endpoint;
mod ranges;
mod rate;
mod rtt;
pub mod script;
mod stats;

pub use config::{
    CcAlgorithm, CubicVariant, FrSsthresh, FullAckCwnd, Hystart, PartialAckTimer, Profile,
    Recovery, RtoRearm, RtoSsthresh, RttEstimatorKind, SackRecovery, TcpConfig,
};
pub use endpoint::{State, TcpEndpoint};
pub use ranges::RangeSet;
pub use rate::RateSample;
pub use rtt::RttEstimator;
pub use stats::TcpStats;

#[cfg(test)]
mod tests;
