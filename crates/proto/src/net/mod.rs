//! The network around the mechanisms: hosts with their TCP endpoints and applications, routers
//! that forward by destination (with an optional middlebox in the path), and external hosts whose
//! packets come from and go to the world outside (a TUN device in the emulator). One topology
//! builder (`satpep_sim::Network`) puts these between the link models for every driver.

pub mod apps;
pub mod external;
pub mod host;
pub mod igmp;
pub mod multicast;
pub mod prefix;
pub mod router;
pub mod udp;

pub use apps::App;
pub use external::ExternalHost;
pub use host::{Conn, Host, HostStats, Role};
pub use prefix::{Ipv4Prefix, PrefixTable};
pub use router::{Router, RouterStats};
pub use udp::{CbrSource, UdpSink, UdpSinkStats};
