//! Applications that drive TCP endpoint models: bulk transfer and request/response.
//!
//! Apps never see packets; after every input to their endpoint the host calls
//! [`App::update`], and an app may ask to be woken at an instant (start, think time).

use crate::tcp::TcpEndpoint;
use crate::{Duration, Instant};

/// What one side of a flow does.
#[derive(Clone, Debug)]
pub enum App {
    /// Opens the connection and writes data: `bytes` in total, or until `until`, or forever.
    BulkSender {
        /// Total bytes to write (`None` = unlimited).
        bytes: Option<u64>,
        /// Stop writing at this instant (`None` = never).
        until: Option<Instant>,
        /// Bytes written so far.
        written: u64,
        /// Whether the app has closed its side.
        closed: bool,
    },
    /// Reads everything and closes when the peer closes.
    Sink,
    /// Client: sends `count` requests of `request` bytes, each after the previous response of
    /// `response` bytes has fully arrived plus `think`.
    RequestClient {
        /// Request size, bytes.
        request: u64,
        /// Expected response size, bytes.
        response: u64,
        /// Requests to send.
        count: u32,
        /// Pause between a response and the next request.
        think: Duration,
        /// Requests sent so far.
        sent: u32,
        /// When to send the next request.
        next_at: Option<Instant>,
    },
    /// Server: answers each complete request with `response` bytes.
    ResponseServer {
        /// Request size, bytes.
        request: u64,
        /// Response size, bytes.
        response: u64,
        /// Responses queued so far.
        answered: u64,
        /// Response bytes still to write (send buffer was full).
        backlog: u64,
    },
}

impl App {
    /// React to the endpoint's state at `now`: write, close.
    pub fn update(&mut self, now: Instant, ep: &mut TcpEndpoint) {
        match self {
            Self::BulkSender {
                bytes,
                until,
                written,
                closed,
            } => {
                if *closed || ep.state() == crate::tcp::State::Closed {
                    return;
                }
                let stop = until.is_some_and(|u| now >= u);
                let remaining = bytes.map_or(u64::MAX, |b| b - *written);
                if !stop && remaining > 0 {
                    *written += ep.send(now, remaining.min(ep.send_space()));
                }
                if stop || bytes.is_some_and(|b| *written >= b) {
                    ep.close(now);
                    *closed = true;
                }
            }
            Self::Sink => {
                if ep.peer_closed() {
                    ep.close(now);
                }
            }
            Self::RequestClient {
                request,
                response,
                count,
                think,
                sent,
                next_at,
            } => {
                if !ep.is_established() && *sent > 0 {
                    return;
                }
                let got = ep.bytes_delivered();
                if *sent > 0 && next_at.is_none() && got >= u64::from(*sent) * *response {
                    if *sent >= *count {
                        ep.close(now);
                        return;
                    }
                    *next_at = Some(now + *think);
                }
                if next_at.is_some_and(|t| now >= t) && *sent < *count {
                    let n = ep.send(now, *request);
                    if n == *request {
                        *sent += 1;
                        *next_at = None;
                    }
                }
            }
            Self::ResponseServer {
                request,
                response,
                answered,
                backlog,
            } => {
                let complete = ep.bytes_delivered() / (*request).max(1);
                while *answered < complete {
                    *answered += 1;
                    *backlog += *response;
                }
                if *backlog > 0 {
                    *backlog -= ep.send(now, *backlog);
                }
                if ep.peer_closed() && *backlog == 0 {
                    ep.close(now);
                }
            }
        }
    }

    /// When this app must be woken without any packet (think time over).
    pub fn wake_at(&self) -> Option<Instant> {
        match self {
            Self::RequestClient {
                next_at,
                sent,
                count,
                ..
            } if sent < count => *next_at,
            Self::BulkSender {
                until,
                closed: false,
                ..
            } => *until,
            _ => None,
        }
    }

    /// Whether this side has finished its work (all data written and acknowledged, or all
    /// responses received).
    pub fn is_done(&self, ep: &TcpEndpoint) -> bool {
        match self {
            Self::BulkSender { closed, .. } => *closed && ep.all_acked(),
            Self::RequestClient {
                sent,
                count,
                response,
                ..
            } => *sent >= *count && ep.bytes_delivered() >= u64::from(*count) * *response,
            Self::Sink | Self::ResponseServer { .. } => true,
        }
    }
}
