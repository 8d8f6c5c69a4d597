//! Packet capture at the scenario's capture links (`output.pcap`), shared by `sim` and `emu`.
//!
//! By default one `trace.pcapng` holds an interface per captured link, in the order the
//! scenario lists them, so a packet seen at two hops is two frames on two named interfaces
//! rather than a duplicate. With `output.pcap_per_link = true` each link gets `<link>.pcapng`
//! (interface 0), for tools that read one interface only.

use std::io;
use std::path::Path;

use satpep_output::{CaptureInterface, PcapTrace};
use satpep_proto::{Instant, Packet};
use satpep_scenario::Scenario;

/// File name of the merged trace.
pub const TRACE_PCAPNG: &str = "trace.pcapng";

/// The open traces and where each captured link writes.
pub(crate) struct Captures {
    traces: Vec<PcapTrace>,
    /// Per link index: (index into `traces`, interface id) when the link is captured.
    route: Vec<Option<(usize, u32)>>,
}

impl Captures {
    /// Opens the trace file(s) in `dir`; `None` when the scenario captures no link.
    pub(crate) fn create(dir: &Path, scenario: &Scenario) -> io::Result<Option<Self>> {
        let out = &scenario.output;
        if out.pcap_links.is_empty() {
            return Ok(None);
        }
        let node = |n: usize| scenario.nodes.get(n).map_or("?", |n| n.name.as_str());
        let mut interfaces = Vec::with_capacity(out.pcap_links.len());
        let mut route = vec![None; scenario.links.len()];
        for &l in &out.pcap_links {
            // The loader only lists existing links.
            let (Some(link), Some(slot)) = (scenario.links.get(l), route.get_mut(l)) else {
                continue;
            };
            let i = interfaces.len();
            let id = u32::try_from(i).map_err(|_| {
                io::Error::new(io::ErrorKind::InvalidInput, "more than 2^32 capture links")
            })?;
            *slot = Some(if out.pcap_per_link { (i, 0) } else { (0, id) });
            interfaces.push(CaptureInterface::link(
                &link.name,
                node(link.from),
                node(link.to),
            ));
        }
        let traces = if out.pcap_per_link {
            interfaces
                .into_iter()
                .map(|i| PcapTrace::create(dir.join(format!("{}.pcapng", i.name)), &[i]))
                .collect::<io::Result<_>>()?
        } else {
            vec![PcapTrace::create(dir.join(TRACE_PCAPNG), &interfaces)?]
        };
        Ok(Some(Self { traces, route }))
    }

    /// Records `pkt` as delivered by link `link` at `now`; nothing if the link is not captured.
    pub(crate) fn write(&mut self, link: usize, now: Instant, pkt: &Packet) -> io::Result<()> {
        let Some(Some((trace, interface))) = self.route.get(link) else {
            return Ok(());
        };
        match self.traces.get_mut(*trace) {
            Some(t) => t.write(*interface, now, pkt),
            None => Ok(()),
        }
    }

    /// Pushes every buffered packet to its file.
    pub(crate) fn flush(&mut self) -> io::Result<()> {
        self.traces.iter_mut().try_for_each(PcapTrace::flush)
    }
}
