//! Performance-enhancing proxies that terminate TCP (RFC 3135): the split-TCP relay
//! ([`SplitRelay`]) and the DirecPC-style spoofing gateway ([`spoof`]).
//!
//! Read before editing: RFC 3135 (PEPs, and what splitting costs), Arora et al. (the DirecPC
//! hybrid gateway: connection control blocks, spoofing, selective ACK dropping), Karaliopoulos
//! et al. (split Reno–SACK over GEO under packet errors).

#[cfg(any(test, feature = "fuzzing"))]
pub mod fuzzing;
mod proxy;
pub(crate) mod split_flow;
pub mod spoof;

pub use proxy::{
    Handshake, SplitConfig, SplitEnd, SplitEvent, SplitFlowInfo, SplitRelay, SplitStats,
    SPLIT_EVENT_CAP,
};
pub use split_flow::Side;
pub use spoof::{CcbState, SpoofConfig, SpoofGateway, SpoofStats};

#[cfg(test)]
mod semantics_tests;
#[cfg(test)]
mod spoof_tests;
#[cfg(test)]
mod tests;
