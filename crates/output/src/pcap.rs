//! Packet traces in pcapng, for Wireshark, tshark and tcptrace, with one interface per capture
//! point.
//!
//! Format choices, each for a reason:
//! - **pcapng, one Interface Description Block per capture point**, named after its link
//!   (`if_name`) and described (`if_description`, e.g. "satpep link sat_fwd (gw -> term)").
//!   A run that captures the same packet at two hops writes it twice; in classic pcap the two
//!   copies were indistinguishable and Wireshark flagged them as retransmissions and
//!   out-of-order segments. With interfaces, `frame.interface_name == "sat_fwd"` picks one hop.
//!   All interfaces are declared before the first packet so that interface ids are fixed by
//!   the caller's order, never by traffic.
//! - **Nanosecond timestamps** (`if_tsresol` = 9): satpep's clock is integer nanoseconds, and
//!   at 1 Gb/s a 1500-byte packet lasts 12 µs, so microseconds would merge distinct events.
//!   Timestamps are [`Instant`]s since scenario start written as time since the Unix epoch, so
//!   captures start at 1970-01-01 00:00:00 (use Wireshark's "seconds since beginning of
//!   capture" view). pcapng's 64-bit count of nanoseconds reaches year 2554, beyond
//!   [`Instant::FAR_FUTURE`], so no instant is out of range.
//! - **Link type `LINKTYPE_RAW` (101)**: packets are bare IP headers with no link layer.
//!   Wireshark, tshark, tcpdump and libpcap have decoded 101 as raw IP (version taken from the
//!   first nibble) for decades, whereas `LINKTYPE_IPV4` (228) is newer and unknown to some older
//!   tools (tcptrace, older libpcap). Both decode the same in current Wireshark.
//! - **Headers only**: the simulator carries payloads as a length ([`Packet`]), so a block's
//!   captured bytes are the header bytes and its original length is [`Packet::wire_len`].
//!   Wireshark shows such a frame as "1500 bytes on wire, 40 bytes captured", exactly as for
//!   a `tcpdump -s 40` capture ("[Packet size limited during capture]" where a dissector wants
//!   the payload); TCP analysis (sequence graphs, RTT, retransmissions) still works.
//! - **Little-endian, no host or clock data** (no `shb_os`, `shb_hardware`, no capture date):
//!   the same run gives the same bytes on any machine.
//!
//! The blocks are encoded by the `pcap-file` crate; its EPB encoder always writes nanoseconds,
//! which is why `if_tsresol` = 9 is not optional here.

use std::borrow::Cow;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use pcap_file::pcapng::blocks::enhanced_packet::EnhancedPacketBlock;
use pcap_file::pcapng::blocks::interface_description::{
    InterfaceDescriptionBlock, InterfaceDescriptionOption,
};
use pcap_file::pcapng::blocks::section_header::{SectionHeaderBlock, SectionHeaderOption};
use pcap_file::pcapng::PcapNgWriter;
use pcap_file::{DataLink, Endianness, PcapError};
use satpep_proto::{Instant, Packet};

/// Snapshot length written in each interface: the usual 65535, larger than any header we
/// capture (readers only use it as a hint).
const SNAPLEN: u32 = 65_535;

/// `if_tsresol` = 9: timestamps count nanoseconds (pcapng's default, 6, means microseconds).
const TSRESOL_NS: u8 = 9;

/// One capture point of a trace, written as a pcapng interface.
#[derive(Clone, Debug, Eq, PartialEq)]
pub struct CaptureInterface {
    /// `if_name`: what Wireshark shows as the interface and `frame.interface_name` matches;
    /// satpep uses the link's name.
    pub name: String,
    /// `if_description`: a sentence for people, e.g. "satpep link sat_fwd (gw -> term)".
    pub description: String,
}

impl CaptureInterface {
    /// The interface of a satpep link `link` from node `from` to node `to`.
    pub fn link(link: &str, from: &str, to: &str) -> Self {
        Self {
            name: link.to_owned(),
            description: format!("satpep link {link} ({from} -> {to})"),
        }
    }
}

/// A pcapng file being written, one Enhanced Packet Block per [`write`](Self::write).
///
/// Writes are buffered: call [`flush`](Self::flush) (or drop the trace, which flushes and
/// ignores errors) before another program reads the file. Writing a packet allocates nothing.
pub struct PcapTrace<W: Write = BufWriter<File>> {
    out: PcapNgWriter<W>,
    /// The file, named in error messages; `None` for other writers.
    path: Option<PathBuf>,
}

impl PcapTrace<BufWriter<File>> {
    /// Creates (or truncates) the file at `path` and writes the section header and one
    /// interface per entry of `interfaces` (interface id = index). Errors name the file.
    pub fn create(path: impl AsRef<Path>, interfaces: &[CaptureInterface]) -> io::Result<Self> {
        let path = path.as_ref();
        let file = File::create(path).map_err(|e| in_file(path, e))?;
        let mut trace =
            Self::new(BufWriter::new(file), interfaces).map_err(|e| in_file(path, e))?;
        trace.path = Some(path.to_owned());
        Ok(trace)
    }
}

impl<W: Write> PcapTrace<W> {
    /// A trace written to any writer (a pipe for live viewing in Wireshark, a `Vec` in tests);
    /// writes the section header and the interfaces at once.
    ///
    /// Fails on I/O errors and on a name or description longer than 65535 bytes (a pcapng
    /// option length is 16 bits).
    pub fn new(out: W, interfaces: &[CaptureInterface]) -> io::Result<Self> {
        let section = SectionHeaderBlock {
            endianness: Endianness::Little,
            options: vec![SectionHeaderOption::UserApplication(Cow::Borrowed(
                "satpep",
            ))],
            ..SectionHeaderBlock::default()
        };
        let mut out = PcapNgWriter::with_section_header(out, section).map_err(into_io)?;
        for i in interfaces {
            for text in [&i.name, &i.description] {
                if text.len() > usize::from(u16::MAX) {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidInput,
                        format!(
                            "capture interface `{}`: text longer than 65535 bytes",
                            i.name
                        ),
                    ));
                }
            }
            let idb = InterfaceDescriptionBlock {
                linktype: DataLink::RAW,
                snaplen: SNAPLEN,
                options: vec![
                    InterfaceDescriptionOption::IfName(Cow::Borrowed(&i.name)),
                    InterfaceDescriptionOption::IfDescription(Cow::Borrowed(&i.description)),
                    InterfaceDescriptionOption::IfTsResol(TSRESOL_NS),
                ],
            };
            out.write_pcapng_block(idb).map_err(into_io)?;
        }
        Ok(Self { out, path: None })
    }

    /// Records `pkt` as seen at `t` on interface `interface` (an index into the interfaces
    /// given at creation): its header bytes, with its full on-the-wire length.
    ///
    /// Fails on I/O errors and on an unknown interface.
    pub fn write(&mut self, interface: u32, t: Instant, pkt: &Packet) -> io::Result<()> {
        let original_len = u32::try_from(pkt.wire_len())
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "packet longer than 4 GiB"))?;
        let epb = EnhancedPacketBlock {
            interface_id: interface,
            timestamp: std::time::Duration::from_nanos(t.as_nanos()),
            original_len,
            data: Cow::Borrowed(pkt.header()),
            options: Vec::new(),
        };
        match self.out.write_pcapng_block(epb) {
            Ok(_) => Ok(()),
            Err(e) => Err(self.name_file(into_io(e))),
        }
    }

    /// Pushes buffered packets to the underlying writer.
    pub fn flush(&mut self) -> io::Result<()> {
        self.out.get_mut().flush().map_err(|e| self.name_file(e))
    }

    /// Flushes and returns the underlying writer.
    pub fn into_inner(mut self) -> io::Result<W> {
        self.flush()?;
        Ok(self.out.into_inner())
    }

    fn name_file(&self, e: io::Error) -> io::Error {
        match &self.path {
            Some(p) => in_file(p, e),
            None => e,
        }
    }
}

impl<W: Write> std::fmt::Debug for PcapTrace<W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PcapTrace")
            .field("path", &self.path)
            .field("interfaces", &self.out.interfaces().len())
            .finish_non_exhaustive()
    }
}

fn in_file(path: &Path, e: io::Error) -> io::Error {
    io::Error::new(e.kind(), format!("{}: {e}", path.display()))
}

fn into_io(e: PcapError) -> io::Error {
    match e {
        PcapError::IoError(e) => e,
        other => io::Error::new(io::ErrorKind::InvalidInput, other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pcap_file::pcapng::{Block, PcapNgReader};
    use std::process::Command;

    /// A valid 40-byte IPv4+TCP header (checksums over a zero payload of `payload_len` bytes),
    /// built with etherparse because the satpep wire module is written elsewhere.
    fn tcp_packet(src_port: u16, seq: u32, payload_len: u32) -> Packet {
        let builder = etherparse::PacketBuilder::ipv4([10, 0, 0, 1], [10, 0, 1, 1], 64)
            .tcp(src_port, 80, seq, 65_535)
            .ack(1);
        let payload = vec![0u8; payload_len as usize];
        let mut bytes = Vec::with_capacity(builder.size(payload.len()));
        builder.write(&mut bytes, &payload).unwrap();
        Packet::new(&bytes[..40], payload_len)
    }

    fn two_links() -> Vec<CaptureInterface> {
        vec![
            CaptureInterface::link("sat_fwd", "gw", "term"),
            CaptureInterface::link("lan", "term", "client"),
        ]
    }

    /// (interface, time, packet): the same segment seen on two hops, then another.
    fn sample() -> Vec<(u32, Instant, Packet)> {
        vec![
            (0, Instant(0), tcp_packet(5001, 1000, 1460)),
            (1, Instant(1_000_000_001), tcp_packet(5001, 1000, 1460)),
            (0, Instant(1_270_000_123), tcp_packet(5002, 7, 0)),
        ]
    }

    fn write_all(trace: &mut PcapTrace<impl Write>, pkts: &[(u32, Instant, Packet)]) {
        for (i, t, p) in pkts {
            trace.write(*i, *t, p).unwrap();
        }
    }

    fn le32(v: u32) -> [u8; 4] {
        v.to_le_bytes()
    }

    #[test]
    fn blocks_are_laid_out_as_the_pcapng_spec_says() {
        let ifs = [CaptureInterface::link("fwd", "a", "b")];
        let mut trace = PcapTrace::new(Vec::new(), &ifs).unwrap();
        let pkt = tcp_packet(5001, 1000, 1460);
        trace.write(0, Instant(0x1_0000_0002), &pkt).unwrap();
        let bytes = trace.into_inner().unwrap();

        let mut want = Vec::new();
        // Section Header Block: type, length 44, byte-order magic, version 1.0, unknown section
        // length, shb_userappl (4) "satpep" padded to 8, end of options, length again.
        want.extend(le32(0x0A0D_0D0A));
        want.extend(le32(44));
        want.extend(le32(0x1A2B_3C4D));
        want.extend([1, 0, 0, 0]);
        want.extend((-1i64).to_le_bytes());
        want.extend([4, 0, 6, 0]);
        want.extend(b"satpep\0\0");
        want.extend([0, 0, 0, 0]);
        want.extend(le32(44));
        // Interface Description Block: LINKTYPE_RAW, snaplen 65535, if_name (2) "fwd",
        // if_description (3) "satpep link fwd (a -> b)" (24 bytes), if_tsresol (9) = 9.
        want.extend(le32(1));
        want.extend(le32(68));
        want.extend([101, 0, 0, 0]);
        want.extend(le32(65_535));
        want.extend([2, 0, 3, 0]);
        want.extend(b"fwd\0");
        want.extend([3, 0, 24, 0]);
        want.extend(b"satpep link fwd (a -> b)");
        want.extend([9, 0, 1, 0, 9, 0, 0, 0]);
        want.extend([0, 0, 0, 0]);
        want.extend(le32(68));
        // Enhanced Packet Block: interface 0, 64-bit ns timestamp as high then low word,
        // captured 40, original 1500, the header bytes.
        want.extend(le32(6));
        want.extend(le32(72));
        want.extend(le32(0));
        want.extend(le32(1));
        want.extend(le32(2));
        want.extend(le32(40));
        want.extend(le32(1500));
        want.extend(pkt.header());
        want.extend(le32(72));
        assert_eq!(bytes, want);
    }

    #[test]
    fn packets_read_back_with_their_interface_ns_timestamps_and_true_lengths() {
        let pkts = sample();
        let mut trace = PcapTrace::new(Vec::new(), &two_links()).unwrap();
        write_all(&mut trace, &pkts);
        let bytes = trace.into_inner().unwrap();

        let mut reader = PcapNgReader::new(&bytes[..]).unwrap();
        assert_eq!(reader.section().endianness, Endianness::Little);
        let mut interfaces = Vec::new();
        let mut packets = Vec::new();
        while let Some(block) = reader.next_block() {
            match block.unwrap() {
                Block::InterfaceDescription(idb) => interfaces.push(idb.into_owned()),
                Block::EnhancedPacket(epb) => packets.push(epb.into_owned()),
                other => panic!("unexpected block {other:?}"),
            }
        }
        assert_eq!(interfaces.len(), 2);
        for (idb, want) in interfaces.iter().zip(["sat_fwd", "lan"]) {
            assert_eq!(idb.linktype, DataLink::RAW);
            assert_eq!(idb.snaplen, 65_535);
            let names: Vec<_> = idb
                .options
                .iter()
                .filter_map(|o| match o {
                    InterfaceDescriptionOption::IfName(n) => Some(n.as_ref()),
                    _ => None,
                })
                .collect();
            assert_eq!(names, [want]);
            assert!(idb
                .options
                .contains(&InterfaceDescriptionOption::IfTsResol(9)));
        }
        assert!(interfaces[0]
            .options
            .contains(&InterfaceDescriptionOption::IfDescription(
                "satpep link sat_fwd (gw -> term)".into()
            )));
        assert_eq!(packets.len(), 3);
        for (epb, (i, t, p)) in packets.iter().zip(&pkts) {
            assert_eq!(epb.interface_id, *i);
            assert_eq!(epb.timestamp.as_nanos(), u128::from(t.as_nanos()));
            assert_eq!(u64::from(epb.original_len), p.wire_len());
            assert_eq!(&epb.data[..], p.header());
        }
        // The exact header bytes of the first packet: IPv4, 20-byte header, total length
        // 40 + 1460 = 1500 (0x05dc), TTL 64, TCP, 10.0.0.1 -> 10.0.1.1, ports 5001 -> 80.
        assert_eq!(
            packets[0].data[..20],
            [
                0x45,
                0,
                0x05,
                0xdc,
                0,
                0,
                0x40,
                0,
                64,
                6,
                packets[0].data[10],
                packets[0].data[11],
                10,
                0,
                0,
                1,
                10,
                0,
                1,
                1
            ]
        );
        assert_eq!(packets[0].data[20..24], [0x13, 0x89, 0, 80]);
    }

    #[test]
    fn same_packets_give_identical_bytes_on_file() {
        let dir = tempfile::tempdir().unwrap();
        let mut files = Vec::new();
        for name in ["a.pcapng", "b.pcapng"] {
            let path = dir.path().join(name);
            let mut trace = PcapTrace::create(&path, &two_links()).unwrap();
            write_all(&mut trace, &sample());
            trace.flush().unwrap();
            files.push(std::fs::read(&path).unwrap());
        }
        // SHB 44 + IDB (sat_fwd: 8 + 12 + 36 + 8 + 4 + 12 = 80) + IDB (lan: 8 + 8 + 36 + 8 + 4
        // + 12 = 76) + 3 EPBs of 72.
        assert_eq!(files[0].len(), 44 + 80 + 76 + 3 * 72);
        assert_eq!(files[0], files[1]);
    }

    #[test]
    fn unknown_interface_and_oversized_name_are_errors_not_panics() {
        let mut trace = PcapTrace::new(Vec::new(), &two_links()).unwrap();
        let err = trace
            .write(2, Instant(0), &tcp_packet(1, 1, 0))
            .unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);

        let long = CaptureInterface {
            name: "x".repeat(70_000),
            description: String::new(),
        };
        let err = PcapTrace::new(Vec::new(), &[long]).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
    }

    #[test]
    fn the_last_instant_fits_the_64_bit_timestamp() {
        let mut trace = PcapTrace::new(Vec::new(), &two_links()).unwrap();
        trace
            .write(0, Instant::FAR_FUTURE, &tcp_packet(1, 1, 0))
            .unwrap();
        let bytes = trace.into_inner().unwrap();
        let mut reader = PcapNgReader::new(&bytes[..]).unwrap();
        let mut last = None;
        while let Some(block) = reader.next_block() {
            if let Block::EnhancedPacket(epb) = block.unwrap() {
                last = Some(epb.timestamp);
            }
        }
        assert_eq!(
            last.map(|d| d.as_nanos()),
            Some(u128::from(Instant::FAR_FUTURE.as_nanos()))
        );
    }

    #[test]
    fn create_names_the_file_in_its_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("missing").join("t.pcapng");
        let err = PcapTrace::create(&path, &two_links()).unwrap_err();
        assert!(
            err.to_string().contains("missing/t.pcapng"),
            "error does not name the file: {err}"
        );
    }

    /// The real consumer: tshark must decode our packets as IPv4/TCP with the right fields
    /// and the right interface names.
    #[test]
    fn tshark_decodes_packets_as_ipv4_tcp_on_named_interfaces() {
        if Command::new("tshark").arg("--version").output().is_err() {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "CI must run this test: tshark is missing (.ci/run installs it)"
            );
            println!("NOTICE: tshark not on PATH; not checking with tshark");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.pcapng");
        let mut trace = PcapTrace::create(&path, &two_links()).unwrap();
        write_all(&mut trace, &sample());
        trace.flush().unwrap();

        let out = Command::new("tshark")
            .arg("-r")
            .arg(&path)
            .args(["-o", "tcp.relative_sequence_numbers:FALSE"])
            .args([
                "-o",
                "ip.check_checksum:TRUE",
                "-o",
                "tcp.check_checksum:TRUE",
            ])
            .args(["-T", "fields", "-E", "separator=;"])
            .args(["-e", "frame.interface_id", "-e", "frame.interface_name"])
            .args([
                "-e",
                "frame.time_epoch",
                "-e",
                "frame.len",
                "-e",
                "frame.cap_len",
            ])
            .args(["-e", "ip.src", "-e", "tcp.srcport", "-e", "tcp.seq"])
            .args(["-e", "ip.checksum.status", "-e", "tcp.checksum.status"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "tshark failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8(out.stdout).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        // Checksum status 1 = "Good". TCP checksums over the zero payload we did not capture
        // cannot be verified by tshark; it reports 2 ("Unverified") for truncated segments.
        assert_eq!(
            lines,
            [
                "0;sat_fwd;0.000000000;1500;40;10.0.0.1;5001;1000;1;2",
                "1;lan;1.000000001;1500;40;10.0.0.1;5001;1000;1;2",
                "0;sat_fwd;1.270000123;40;40;10.0.0.1;5002;7;1;1",
            ]
        );
    }
}
