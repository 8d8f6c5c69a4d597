//! The first bytes of every stream: which TCP connection it carries.
//!
//! The terminal intercepts a client's connection (TPROXY) and opens one QUIC stream for it; the
//! stream starts with this header, then carries the client's bytes. The gateway reads it, opens
//! the server connection *from the client's address* (transparent both ways), and relays.
//!
//! ```text
//!  0        1                 5        7                 11       13
//!  +--------+-----------------+--------+-----------------+--------+
//!  | ver=1  | client IPv4     | c port | server IPv4     | s port |   (network byte order)
//!  +--------+-----------------+--------+-----------------+--------+
//! ```
//!
//! How a stream ends carries the TCP semantics: a FIN is the stream's end, a RST is a stream
//! reset with one of the [`Reset`] codes (the gateway's "connection refused" reaches the client
//! as a RST).

use std::net::{Ipv4Addr, SocketAddrV4};

/// Length of the header.
pub const LEN: usize = 13;
/// The version this code writes and reads.
pub const VERSION: u8 = 1;

/// The two ends of an intercepted TCP connection.
#[derive(Clone, Copy, Debug, Eq, Hash, PartialEq)]
pub struct StreamHeader {
    /// The client (the terminal's side): the server connection leaves from this address.
    pub client: SocketAddrV4,
    /// The server the client asked for.
    pub server: SocketAddrV4,
}

/// Why a header was refused.
#[derive(Clone, Copy, Debug, Eq, PartialEq, thiserror::Error)]
pub enum HeaderError {
    /// Fewer than [`LEN`] bytes.
    #[error("stream header truncated ({0} of 13 bytes)")]
    Truncated(usize),
    /// Another version.
    #[error("stream header version {0} (this is version 1)")]
    Version(u8),
    /// A port 0, or an unspecified, broadcast or multicast address.
    #[error("stream header names no connectable address")]
    BadAddress,
}

impl StreamHeader {
    /// The header's bytes.
    pub fn encode(&self) -> [u8; LEN] {
        let mut b = [0u8; LEN];
        b[0] = VERSION;
        b[1..5].copy_from_slice(&self.client.ip().octets());
        b[5..7].copy_from_slice(&self.client.port().to_be_bytes());
        b[7..11].copy_from_slice(&self.server.ip().octets());
        b[11..13].copy_from_slice(&self.server.port().to_be_bytes());
        b
    }

    /// Parse the first [`LEN`] bytes of `b` (the rest is the client's data).
    pub fn parse(b: &[u8]) -> Result<Self, HeaderError> {
        let Some(b) = b.get(..LEN) else {
            return Err(HeaderError::Truncated(b.len()));
        };
        if b[0] != VERSION {
            return Err(HeaderError::Version(b[0]));
        }
        let addr = |at: usize| {
            SocketAddrV4::new(
                Ipv4Addr::new(b[at], b[at + 1], b[at + 2], b[at + 3]),
                u16::from_be_bytes([b[at + 4], b[at + 5]]),
            )
        };
        let (client, server) = (addr(1), addr(7));
        let unusable = |a: &SocketAddrV4| {
            a.port() == 0
                || a.ip().is_unspecified()
                || a.ip().is_broadcast()
                || a.ip().is_multicast()
        };
        if unusable(&client) || unusable(&server) {
            return Err(HeaderError::BadAddress);
        }
        Ok(Self { client, server })
    }
}

/// Stream reset codes: how a TCP connection ended abnormally on one side, for the other side
/// to end its own the same way (a RST, never a silent close).
#[derive(Clone, Copy, Debug, Eq, PartialEq)]
#[repr(u32)]
pub enum Reset {
    /// The client or server reset its connection.
    Reset = 1,
    /// The gateway could not connect: refused.
    Refused = 2,
    /// The gateway could not connect: no answer within its `connect_timeout`.
    TimedOut = 3,
    /// The destination is not among the gateway's `allow` prefixes.
    NotAllowed = 4,
    /// A limit (connections per terminal) was reached.
    OverLimit = 5,
    /// The header could not be read.
    BadHeader = 6,
}

impl Reset {
    /// Every code, in order.
    pub const ALL: [Self; 6] = [
        Self::Reset,
        Self::Refused,
        Self::TimedOut,
        Self::NotAllowed,
        Self::OverLimit,
        Self::BadHeader,
    ];

    /// The code's name, for logs and metrics.
    pub fn name(self) -> &'static str {
        match self {
            Self::Reset => "reset",
            Self::Refused => "refused",
            Self::TimedOut => "timed_out",
            Self::NotAllowed => "not_allowed",
            Self::OverLimit => "over_limit",
            Self::BadHeader => "bad_header",
        }
    }

    /// The code from its number; unknown numbers read as [`Reset::Reset`].
    pub fn from_code(code: u64) -> Self {
        match code {
            2 => Self::Refused,
            3 => Self::TimedOut,
            4 => Self::NotAllowed,
            5 => Self::OverLimit,
            6 => Self::BadHeader,
            _ => Self::Reset,
        }
    }
}

/// The body of the `accel_header` fuzz target: what parses round-trips and names connectable
/// addresses.
#[cfg(any(test, feature = "fuzzing"))]
pub mod fuzzing {
    use super::*;

    /// Arbitrary bytes as a stream's first bytes.
    pub fn header_input(data: &[u8]) {
        if let Ok(h) = StreamHeader::parse(data) {
            assert_eq!(&h.encode()[..], &data[..LEN]);
            assert!(h.client.port() != 0 && h.server.port() != 0);
            assert!(!h.server.ip().is_unspecified() && !h.server.ip().is_broadcast());
        }
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn exact_bytes_of_a_header() {
        let h = StreamHeader {
            client: "10.1.2.3:40000".parse().unwrap(),
            server: "192.0.2.80:443".parse().unwrap(),
        };
        assert_eq!(
            h.encode(),
            [1, 10, 1, 2, 3, 0x9c, 0x40, 192, 0, 2, 80, 0x01, 0xbb]
        );
        let mut with_data = h.encode().to_vec();
        with_data.extend_from_slice(b"GET / HTTP/1.1\r\n");
        assert_eq!(StreamHeader::parse(&with_data), Ok(h));
    }

    #[test]
    fn short_foreign_and_unconnectable_headers_are_refused() {
        let good = StreamHeader {
            client: "10.1.2.3:40000".parse().unwrap(),
            server: "192.0.2.80:443".parse().unwrap(),
        }
        .encode();
        assert_eq!(
            StreamHeader::parse(&good[..12]),
            Err(HeaderError::Truncated(12))
        );
        assert_eq!(StreamHeader::parse(&[]), Err(HeaderError::Truncated(0)));
        let mut v2 = good;
        v2[0] = 2;
        assert_eq!(StreamHeader::parse(&v2), Err(HeaderError::Version(2)));
        for (client, server) in [
            ("10.1.2.3:0", "192.0.2.80:443"),
            ("0.0.0.0:1", "192.0.2.80:443"),
            ("10.1.2.3:1", "255.255.255.255:443"),
            ("10.1.2.3:1", "224.0.0.1:443"),
            ("10.1.2.3:1", "192.0.2.80:0"),
        ] {
            let b = StreamHeader {
                client: client.parse().unwrap(),
                server: server.parse().unwrap(),
            }
            .encode();
            assert_eq!(
                StreamHeader::parse(&b),
                Err(HeaderError::BadAddress),
                "{client} {server}"
            );
        }
    }

    #[test]
    fn reset_codes_round_trip_and_unknown_ones_are_plain_resets() {
        for r in Reset::ALL {
            assert_eq!(Reset::from_code(r as u64), r, "{}", r.name());
        }
        assert_eq!(Reset::from_code(0), Reset::Reset);
        assert_eq!(Reset::from_code(1 << 40), Reset::Reset);
    }

    proptest! {
        #[test]
        fn any_bytes_parse_or_are_refused_and_what_parses_round_trips(b in proptest::collection::vec(any::<u8>(), 0..40)) {
            if let Ok(h) = StreamHeader::parse(&b) {
                prop_assert_eq!(&h.encode()[..], &b[..LEN]);
            }
        }
    }
}
