//! Link-layer ARQ: selective repeat with a bounded number of retransmissions per frame.
//!
//! Karaliopoulos, Tafazolli & Evans (§2) pair delayed duplicate ACKs with "link level
//! retransmissions" that are "less strict" than a connection-oriented data link protocol: a
//! frame corrupted on the satellite hop is sent again by the link, a bounded number of times,
//! so that TCP sees a late segment rather than a loss. Here:
//!
//! - The receiver detects a corrupted frame when its last bit arrives and reports it (a NAK on
//!   a feedback channel that is not modelled as a link); the sender may start the
//!   retransmission `feedback_delay` after the frame's last bit left (default: twice the
//!   link's delay, the NAK's round trip).
//! - Retransmissions go before the queue (selective repeat: frames behind keep flowing while
//!   the NAK is under way) and are corrupted or not like any frame; after `max_retries`
//!   retransmissions a frame still corrupted is given up: dropped and counted in
//!   `error_drops` and `arq_given_up`.
//! - `in_order = true` (default): the receiver releases frames in the order they were first
//!   sent, holding the ones behind a missing frame until it arrives or is given up (TCP sees
//!   delay, never reordering). `false`: each frame is delivered when it arrives (TCP sees
//!   reordering, which delayed duplicate ACKs are built to absorb).

use serde::{Deserialize, Serialize};

use crate::time::Duration;

/// `arq = { … }` on a `[[link]]`.
#[derive(Clone, Debug, Deserialize, PartialEq, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct ArqConfig {
    /// Retransmissions of one frame before it is given up. Default 3.
    pub max_retries: u32,
    /// From a corrupted frame's last bit to the instant its retransmission may start. Default:
    /// twice the link's delay.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub feedback_delay: Option<Duration>,
    /// Deliver frames in the order they were first sent. Default true.
    pub in_order: bool,
}

impl Default for ArqConfig {
    fn default() -> Self {
        Self {
            max_retries: 3,
            feedback_delay: None,
            in_order: true,
        }
    }
}
