//! The Prometheus text endpoint (exposition format 0.0.4): every mechanism counter, the
//! connection table's size, buffer use, the path's packet counters and drops by reason.
//!
//! The format is a few lines of text per metric, so it is written here rather than pulled in
//! with a metrics registry; the server is a non-blocking listener in the daemon's own epoll
//! loop (no thread), which answers `GET /metrics` and closes.

use std::fmt::Write as _;
use std::io::{self, Read, Write};
use std::net::{TcpListener, TcpStream};

use satpep_proto::node::DropReason;

use crate::pipeline::Pipeline;

/// Counter names that are gauges (they can fall, or are high-water marks).
fn is_gauge(name: &str) -> bool {
    name == "buffer_bytes"
        || name == "embryonic"
        || name.starts_with("max_")
        || name.ends_with("_now")
}

/// `satpep_<kind>_<counter>`, with only the characters Prometheus allows.
fn metric_name(kind: &str, counter: &str) -> String {
    format!("satpep_{kind}_{counter}")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// The page, for `instance` with ports named `interfaces`.
pub fn render(instance: &str, interfaces: &[String], p: &Pipeline, uptime_s: f64) -> String {
    let mut s = String::new();
    let inst = format!("instance_name=\"{}\"", escape(instance));
    let family = |s: &mut String, name: &str, kind: &str, help: &str| {
        let _ = writeln!(s, "# HELP {name} {help}\n# TYPE {name} {kind}");
    };

    family(
        &mut s,
        "satpep_uptime_seconds",
        "gauge",
        "Seconds since the daemon started.",
    );
    let _ = writeln!(s, "satpep_uptime_seconds{{{inst}}} {uptime_s:.3}");

    let c = p.counters();
    family(
        &mut s,
        "satpep_rx_packets_total",
        "counter",
        "IPv4 packets read, by arrival interface.",
    );
    for (i, n) in c.rx_packets.iter().enumerate() {
        let _ = writeln!(
            s,
            "satpep_rx_packets_total{{{inst},interface=\"{}\"}} {n}",
            escape(&interfaces[i])
        );
    }
    family(
        &mut s,
        "satpep_rx_bytes_total",
        "counter",
        "Bytes read, by arrival interface.",
    );
    for (i, n) in c.rx_bytes.iter().enumerate() {
        let _ = writeln!(
            s,
            "satpep_rx_bytes_total{{{inst},interface=\"{}\"}} {n}",
            escape(&interfaces[i])
        );
    }
    for (name, help, v) in [
        (
            "satpep_tx_packets_total",
            "Packets the mechanisms sent on.",
            c.tx_packets,
        ),
        (
            "satpep_tx_bytes_total",
            "Bytes the mechanisms sent on.",
            c.tx_bytes,
        ),
    ] {
        family(&mut s, name, "counter", help);
        let _ = writeln!(s, "{name}{{{inst}}} {v}");
    }

    family(
        &mut s,
        "satpep_drops_total",
        "counter",
        "Packets dropped by the daemon, by reason.",
    );
    let _ = writeln!(
        s,
        "satpep_drops_total{{{inst},reason=\"malformed\"}} {}",
        c.malformed
    );
    let _ = writeln!(
        s,
        "satpep_drops_total{{{inst},reason=\"bad_output\"}} {}",
        c.bad_output
    );
    for (r, n) in DropReason::ALL.iter().zip(p.shaper_drops()) {
        let _ = writeln!(
            s,
            "satpep_drops_total{{{inst},reason=\"shaper_{}\"}} {n}",
            r.name()
        );
    }

    let o = p.orphans().stats();
    if o.loaded > 0 {
        family(
            &mut s,
            "satpep_orphans_total",
            "counter",
            "Connections a predecessor held, and how they were ended.",
        );
        for (what, v) in [
            ("loaded", o.loaded),
            ("segments", o.segments),
            ("resets", o.resets),
            ("probes", o.probes),
            ("expired", o.expired),
        ] {
            let _ = writeln!(s, "satpep_orphans_total{{{inst},event=\"{what}\"}} {v}");
        }
    }

    let mb = p.middlebox();
    if let Some(n) = mb.open_connections() {
        family(
            &mut s,
            "satpep_connections",
            "gauge",
            "Connections in the connection table now.",
        );
        let _ = writeln!(s, "satpep_connections{{{inst}}} {n}");
        family(
            &mut s,
            "satpep_max_connections",
            "gauge",
            "Largest number of connections the table has held since the start.",
        );
        let _ = writeln!(s, "satpep_max_connections{{{inst}}} {}", c.max_connections);
    }
    // A chain's counters are `<index>.<kind>.<name>`: the index becomes a label.
    let mut seen = std::collections::HashSet::new();
    for (key, v) in mb.counters() {
        let (element, kind, name) = match key.splitn(3, '.').collect::<Vec<_>>()[..] {
            [i, k, n] => (Some(i.to_owned()), k.to_owned(), n.to_owned()),
            _ => (None, mb.kind().to_owned(), key.clone()),
        };
        let gauge = is_gauge(&name);
        let metric = if gauge {
            metric_name(&kind, &name)
        } else {
            metric_name(&kind, &format!("{name}_total"))
        };
        if seen.insert(metric.clone()) {
            let t = if gauge { "gauge" } else { "counter" };
            family(&mut s, &metric, t, &format!("{kind} counter `{name}`."));
        }
        match element {
            Some(e) => {
                let _ = writeln!(s, "{metric}{{{inst},element=\"{e}\"}} {v}");
            }
            None => {
                let _ = writeln!(s, "{metric}{{{inst}}} {v}");
            }
        }
    }

    let shaped: Vec<_> = (0..interfaces.len())
        .filter_map(|i| p.shaper(i).map(|l| (i, l)))
        .collect();
    type Read = fn(&satpep_proto::link::Link) -> u64;
    let shaper_metrics: [(&str, &str, &str, Read); 4] = [
        (
            "satpep_shaper_queue_bytes",
            "gauge",
            "Bytes waiting in a shaper's queue.",
            |l| l.queue_len_bytes(),
        ),
        (
            "satpep_shaper_sent_packets_total",
            "counter",
            "Packets a shaper sent on.",
            |l| l.stats().delivered_packets,
        ),
        (
            "satpep_shaper_removed_total",
            "counter",
            "ACKs a shaper's queue removed (suppressed, filtered or compacted into another).",
            |l| l.stats().removed,
        ),
        (
            "satpep_shaper_queue_drops_total",
            "counter",
            "Packets a shaper's full queue refused.",
            |l| l.stats().queue_drops,
        ),
    ];
    if !shaped.is_empty() {
        for (name, kind, help, read) in shaper_metrics {
            family(&mut s, name, kind, help);
            for (i, l) in &shaped {
                let iface = escape(&interfaces[*i]);
                let _ = writeln!(s, "{name}{{{inst},interface=\"{iface}\"}} {}", read(l));
            }
        }
    }
    s
}

pub(crate) fn escape(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// The listener and the scrapes in progress.
pub struct MetricsServer {
    listener: TcpListener,
    clients: Vec<(TcpStream, Vec<u8>)>,
}

/// Scrapes served at once; the oldest is closed when another arrives.
const MAX_CLIENTS: usize = 16;
/// Longest request read.
const MAX_REQUEST: usize = 8192;

impl MetricsServer {
    /// Listen on `addr` (non-blocking).
    pub fn bind(addr: std::net::SocketAddr) -> io::Result<Self> {
        let listener = TcpListener::bind(addr)?;
        listener.set_nonblocking(true)?;
        Ok(Self {
            listener,
            clients: Vec::new(),
        })
    }

    /// The listening descriptor, to register with epoll.
    pub fn raw_fd(&self) -> std::os::fd::RawFd {
        std::os::fd::AsRawFd::as_raw_fd(&self.listener)
    }

    /// Whether a scrape is waiting for the rest of its request: the loop must then come back
    /// soon, since accepted connections are not in its epoll set.
    pub fn pending(&self) -> bool {
        !self.clients.is_empty()
    }

    /// The bound address.
    pub fn local_addr(&self) -> io::Result<std::net::SocketAddr> {
        self.listener.local_addr()
    }

    /// Accept what is waiting and answer every scrape whose request has arrived, with `page`
    /// made only when one is due. Called when the listener is readable and on every tick.
    pub fn serve(&mut self, page: impl Fn() -> String) {
        while let Ok((stream, _)) = self.listener.accept() {
            if stream.set_nonblocking(true).is_err() {
                continue;
            }
            if self.clients.len() >= MAX_CLIENTS {
                self.clients.remove(0);
            }
            self.clients.push((stream, Vec::new()));
        }
        let mut page_text: Option<String> = None;
        self.clients.retain_mut(|(stream, req)| {
            let mut buf = [0u8; 1024];
            loop {
                match stream.read(&mut buf) {
                    Ok(0) => return false,
                    Ok(n) => {
                        req.extend_from_slice(&buf[..n]);
                        if req.len() > MAX_REQUEST {
                            return false;
                        }
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(_) => return false,
                }
            }
            if !req.windows(4).any(|w| w == b"\r\n\r\n") && !req.windows(2).any(|w| w == b"\n\n") {
                return true; // the request is still arriving
            }
            let first = req.split(|&b| b == b'\n').next().unwrap_or_default();
            let ok = first.starts_with(b"GET /metrics ") || first.starts_with(b"GET / ");
            let response = if ok {
                let body = page_text.get_or_insert_with(&page);
                format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\n\
                     Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                )
            } else {
                "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".into()
            };
            // The page is a few kilobytes: it fits the socket buffer of a fresh connection.
            let _ = stream.set_nonblocking(false);
            let _ = stream.set_write_timeout(Some(std::time::Duration::from_millis(100)));
            let _ = stream.write_all(response.as_bytes());
            let _ = stream.shutdown(std::net::Shutdown::Write);
            false
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::DaemonConfig;
    use std::path::Path;

    #[test]
    fn a_split_gateway_page_has_typed_families_and_labels() {
        let c = DaemonConfig::parse(
            "interfaces = [\"lan\", \"sat\"]\nmiddlebox = { kind = \"split_tcp\" }\n",
            Path::new("t.toml"),
        )
        .unwrap();
        let p = Pipeline::new(&c, 0);
        let page = render("gw", &c.interfaces, &p, 1.5);
        for line in [
            "# TYPE satpep_rx_packets_total counter",
            "satpep_rx_packets_total{instance_name=\"gw\",interface=\"sat\"} 0",
            "satpep_connections{instance_name=\"gw\"} 0",
            "# TYPE satpep_max_connections gauge",
            "satpep_max_connections{instance_name=\"gw\"} 0",
            "# TYPE satpep_split_tcp_flows_split_total counter",
            "# TYPE satpep_split_tcp_buffer_bytes gauge",
            "satpep_split_tcp_buffer_bytes{instance_name=\"gw\"} 0",
            "satpep_drops_total{instance_name=\"gw\",reason=\"malformed\"} 0",
            "satpep_uptime_seconds{instance_name=\"gw\"} 1.500",
        ] {
            assert!(
                page.lines().any(|l| l == line),
                "missing `{line}` in\n{page}"
            );
        }
        // Every sample line is `name{labels} value` with a number; every family is typed once.
        let mut types = std::collections::HashSet::new();
        for l in page.lines() {
            if let Some(t) = l.strip_prefix("# TYPE ") {
                assert!(types.insert(t.split(' ').next().unwrap().to_owned()), "{l}");
            } else if !l.starts_with('#') {
                let (name, value) = l.rsplit_once(' ').unwrap();
                assert!(value.parse::<f64>().is_ok(), "{l}");
                assert!(
                    types.contains(name.split('{').next().unwrap()),
                    "untyped: {l}"
                );
            }
        }
    }

    #[test]
    fn a_chain_labels_its_elements() {
        let c = DaemonConfig::parse(
            "interfaces = [\"lan\", \"sat\"]\n[middlebox]\nkind = \"chain\"\n\
             elements = [{ kind = \"pass_through\" }, { kind = \"snoop\", satellite_port = 1 }]\n",
            Path::new("t.toml"),
        )
        .unwrap();
        let page = render("gw", &c.interfaces, &Pipeline::new(&c, 0), 0.0);
        assert!(
            page.contains(
                "satpep_snoop_local_rtx_timeout_total{instance_name=\"gw\",element=\"1\"} 0"
            ),
            "{page}"
        );
    }

    #[test]
    fn the_server_answers_a_scrape_and_refuses_other_paths() {
        let mut srv = MetricsServer::bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let addr = srv.local_addr().unwrap();
        let get = |path: &str, srv: &mut MetricsServer| {
            let mut c = TcpStream::connect(addr).unwrap();
            c.write_all(format!("GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes())
                .unwrap();
            let mut out = String::new();
            for _ in 0..200 {
                srv.serve(|| "satpep_up 1\n".to_owned());
                c.set_read_timeout(Some(std::time::Duration::from_millis(10)))
                    .unwrap();
                let mut buf = [0u8; 4096];
                match c.read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => out.push_str(std::str::from_utf8(&buf[..n]).unwrap()),
                    Err(_) => {}
                }
            }
            out
        };
        let ok = get("/metrics", &mut srv);
        assert!(ok.starts_with("HTTP/1.1 200 OK\r\n"), "{ok}");
        assert!(ok.ends_with("\r\n\r\nsatpep_up 1\n"), "{ok}");
        assert!(get("/nope", &mut srv).starts_with("HTTP/1.1 404"));
    }
}
