//! The accelerated PEP's sans-IO parts: what terminal and gateway say to each other when a TCP
//! connection crosses the satellite ([`header`]), and the satellite congestion controllers that
//! pace the one QUIC connection joining them ([`cc`]).
//!
//! The transport itself is quinn-proto (a sans-IO QUIC implementation): one long-lived,
//! authenticated and encrypted connection per terminal, one bidirectional stream per TCP
//! connection, so a lost packet of one connection never holds another's bytes (no head-of-line
//! blocking between connections) and a new TCP connection never waits for a handshake or a
//! slow start. Paper 003's lesson decides the controllers: random line errors are not
//! congestion, so neither halves its rate on a loss.

pub mod cc;
pub mod header;
pub mod pep;
pub mod tls;
pub mod transport;
