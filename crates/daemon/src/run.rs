//! The daemon's life: clean up after a predecessor, put itself in the forwarding path, run the
//! single-threaded epoll loop until SIGINT, SIGTERM or SIGHUP, take itself out again.

use std::path::Path;
use std::time::Instant as WallInstant;

use satpep_emu::sys::{monotonic_ns, Epoll, SignalPipe, TimerFd, Tun};
use satpep_proto::Instant;
use tracing::{info, warn};

use crate::config::{DaemonConfig, Role};
use crate::egress::{self, EgressTable};
use crate::metrics::{render, MetricsServer};
use crate::pipeline::Pipeline;
use crate::routing::{ip_batch, run_stdin, sh, RoutingPlan};
use crate::state::{self, State};
use crate::DaemonError;

const TOKEN_TIMER: u64 = 1 << 32;
const TOKEN_SIGNAL: u64 = (1 << 32) + 1;
const TOKEN_METRICS: u64 = (1 << 32) + 2;
/// Packets read from one device before the others get their turn.
const READ_BATCH: usize = 64;
/// How soon the loop looks again at a scrape whose request is still arriving.
const SCRAPE_POLL_NS: u64 = 5_000_000;
/// Largest packet read (the TUN devices' MTU is below it).
const MAX_PACKET: usize = 65_535;

/// Options from the command line.
#[derive(Clone, Debug)]
pub struct RunOptions {
    /// Directory of state files (default [`state::STATE_DIR`]).
    pub state_dir: std::path::PathBuf,
    /// Directory of the replay-epoch file, kept across reboots (default
    /// [`crate::epoch::EPOCH_DIR`]).
    pub epoch_dir: std::path::PathBuf,
}

impl Default for RunOptions {
    fn default() -> Self {
        Self {
            state_dir: state::STATE_DIR.into(),
            epoch_dir: crate::epoch::EPOCH_DIR.into(),
        }
    }
}

/// Undo what a previous instance left (rules, tables, sysctls), whether it exited or died.
/// Refuses when that instance is still running. Returns what was done, for the log.
pub fn cleanup(
    config: &DaemonConfig,
    role: Role,
    opts: &RunOptions,
) -> Result<Vec<String>, DaemonError> {
    let name = config.instance(role);
    let plan = RoutingPlan::new(config, &name);
    let file = state::path(&opts.state_dir, &name);
    let mut done = Vec::new();
    match state::read_checked(&file).map_err(DaemonError::Io)? {
        state::Found::Nothing => {}
        state::Found::SetAside(aside, why) => done.push(format!(
            "the state file was damaged ({why}): set aside as {}; nothing restored from it",
            aside.display()
        )),
        state::Found::State {
            state: old,
            refused,
        } => {
            if old.pid != std::process::id() && state::is_live_satpep(old.pid) {
                return Err(DaemonError::Running(name, old.pid));
            }
            for (key, value) in &refused {
                done.push(format!(
                    "refused to restore `{}` = `{}` from the state file: not a sysctl satpep changes",
                    key.escape_debug(),
                    value.escape_debug()
                ));
            }
            for (key, value) in &old.restore {
                state::write_sysctl(key, value).map_err(DaemonError::Io)?;
                done.push(format!("restored {key} = {value}"));
            }
            std::fs::remove_file(&file).map_err(DaemonError::Io)?;
            done.push(format!("removed the state of pid {}", old.pid));
        }
    }
    let before = plan.installed_rules().len();
    let table = plan.has_nft_table();
    sh(&plan.remove_script()).map_err(DaemonError::Setup)?;
    if before > 0 {
        done.push(format!("removed {before} leftover routing rules"));
    }
    if table {
        done.push(format!("removed the nftables table {}", plan.nft_table()));
    }
    Ok(done)
}

/// What every engine finds out before it changes anything.
pub(crate) struct Prepared {
    pub name: String,
    pub interfaces: Vec<String>,
    pub plan: RoutingPlan,
    pub file: std::path::PathBuf,
}

/// Undo what a predecessor left, and resolve the interfaces.
pub(crate) fn prepare(
    config: &DaemonConfig,
    role: Role,
    opts: &RunOptions,
) -> Result<Prepared, DaemonError> {
    let name = config.instance(role);
    for done in cleanup(config, role, opts)? {
        info!(instance = %name, "{done}");
    }
    let present: Vec<String> = std::fs::read_dir("/sys/class/net")
        .map_err(DaemonError::Io)?
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    let interfaces = crate::config::resolve_interfaces(&config.interfaces, &present)
        .map_err(DaemonError::Setup)?;
    let mut plan = RoutingPlan::new(config, &name);
    plan.interfaces = interfaces.clone();
    let file = state::path(&opts.state_dir, &name);
    Ok(Prepared {
        name,
        interfaces,
        plan,
        file,
    })
}

/// Record, then change, the sysctls; add the rules and the nftables table. The guard takes
/// them out again (explicitly, or on an error return by drop).
pub(crate) fn install(
    plan: &RoutingPlan,
    file: &std::path::Path,
    name: &str,
) -> Result<Teardown, DaemonError> {
    let ip_forward = state::read_sysctl("net/ipv4/ip_forward").map_err(DaemonError::Io)?;
    let changes = state::global_changes(&ip_forward);
    let st = State {
        pid: std::process::id(),
        restore: changes
            .iter()
            .map(|(k, old, _)| (k.clone(), old.clone()))
            .collect(),
    };
    state::write(file, &st).map_err(DaemonError::Io)?;
    let guard = Teardown {
        plan: plan.clone(),
        file: file.to_path_buf(),
        restore: st.restore.clone(),
        armed: true,
    };
    for (key, _, new) in &changes {
        state::write_sysctl(key, new).map_err(DaemonError::Io)?;
        info!(instance = %name, "set {key} = {new}");
    }
    ip_batch(&plan.install_script()).map_err(DaemonError::Setup)?;
    if let Some(script) = plan.nft_script() {
        run_stdin("nft", &["-f", "-"], &script).map_err(|e| {
            DaemonError::Setup(format!(
                "{e} (is nftables installed? apt-get install nftables)"
            ))
        })?;
    }

    Ok(guard)
}

/// Run the daemon until SIGINT, SIGTERM or SIGHUP (which stops it too; it does not reload).
pub fn run(
    config: &DaemonConfig,
    role: Role,
    opts: &RunOptions,
    ready: impl FnOnce(&Status),
) -> Result<(), DaemonError> {
    if config.accel().is_some() {
        return crate::accel::run(config, role, opts, ready);
    }
    if config.kernel_split().is_some() {
        return crate::kernel::run(config, role, opts, ready);
    }
    let Prepared {
        name,
        interfaces,
        plan,
        file,
    } = prepare(config, role, opts)?;

    // Signals first: a SIGTERM during set-up must still lead to the teardown below.
    let signals = SignalPipe::install().map_err(DaemonError::Io)?;
    let tuns = (0..config.interfaces.len())
        .map(|i| {
            Tun::create_here(&plan.tun_name(i)).map_err(|e| {
                DaemonError::Setup(format!(
                    "cannot create TUN device {}: {e}",
                    plan.tun_name(i)
                ))
            })
        })
        .collect::<Result<Vec<_>, _>>()?;

    // The TUN devices' own sysctls (they vanish with the devices: nothing to record), then
    // the machine-wide ones, recorded first, and the rules.
    for (k, v) in plan.sysctls().iter().skip(1) {
        // IPv6 may be absent from the kernel: only the IPv4 settings are required.
        if let Err(e) = state::write_sysctl(k, v) {
            if k.starts_with("net/ipv4") {
                return Err(DaemonError::Io(e));
            }
        }
    }
    let mut guard = install(&plan, &file, &name)?;

    let mut metrics = match config.metrics.listen {
        Some(addr) => Some(
            MetricsServer::bind(addr)
                .map_err(|e| DaemonError::Setup(format!("metrics.listen {addr}: {e}")))?,
        ),
        None => None,
    };
    let mut epoll = Epoll::new().map_err(DaemonError::Io)?;
    for (i, t) in tuns.iter().enumerate() {
        epoll.add(t.raw_fd(), i as u64).map_err(DaemonError::Io)?;
    }
    let mut timer = TimerFd::new().map_err(DaemonError::Io)?;
    epoll
        .add(timer.raw_fd(), TOKEN_TIMER)
        .map_err(DaemonError::Io)?;
    epoll
        .add(signals.raw_fd(), TOKEN_SIGNAL)
        .map_err(DaemonError::Io)?;
    if let Some(m) = &metrics {
        epoll
            .add(m.raw_fd(), TOKEN_METRICS)
            .map_err(DaemonError::Io)?;
    }

    // A restarted daemon's authenticated packets must number above its predecessor's (the
    // peer's replay window refuses lower ones), even when the clock is behind: crate::epoch.
    let clock_s = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let (epoch, problem) = crate::epoch::take(&crate::epoch::path(&opts.epoch_dir, &name), clock_s);
    if let Some(p) = problem {
        warn!(instance = %name, "replay epoch: {p}");
    }
    let mut pipeline = Pipeline::new(config, epoch);
    let journal = state::journal_path(&opts.state_dir, &name);
    if let Ok(text) = std::fs::read_to_string(&journal) {
        let (flows, bad) = crate::orphans::parse_journal(&text);
        if bad > 0 {
            warn!(instance = %name, "journal {}: {bad} damaged lines skipped", journal.display());
        }
        if !flows.is_empty() {
            info!(
                instance = %name,
                connections = flows.len(),
                "a predecessor held connections: each is reset at its next segment"
            );
        }
        pipeline.set_orphans(&flows, Instant::ZERO);
    }
    info!(
        instance = %name,
        role = role.name(),
        mechanism = pipeline.middlebox().kind(),
        interfaces = ?interfaces,
        tun = ?(0..tuns.len()).map(|i| plan.tun_name(i)).collect::<Vec<_>>(),
        "in the forwarding path"
    );
    for (key, kind, _) in config
        .tunnel_ends()
        .into_iter()
        .filter(|(_, _, t)| *t != satpep_proto::auth::Trust::Keyed)
    {
        warn!(instance = %name, "{key} ({kind}) is unauthenticated (insecure = true): its tunnel packets are told apart by their outer source address alone");
    }
    let epoch = monotonic_ns();
    let started = WallInstant::now();
    let now = || Instant(monotonic_ns().saturating_sub(epoch));
    let mut buf = vec![0u8; MAX_PACKET];
    let mut wire = Vec::with_capacity(MAX_PACKET);
    let mut ready_tokens: Vec<u64> = Vec::with_capacity(64);
    let mut tx_errors = 0u64;
    let log_every = std::time::Duration::from_secs(config.log_every_s);
    let mut next_log = started + log_every;
    let mut journalled = (0, 0);
    let mut egress = EgressTable::read(&config.interfaces).unwrap_or_else(|e| {
        warn!(instance = %name, "{e}: every packet goes into the first TUN device");
        EgressTable::default()
    });
    let mut next_egress = WallInstant::now() + egress::REFRESH;
    let mut next_journal = WallInstant::now();
    write_journal(&journal, &pipeline)?;
    ready(&Status {
        metrics: metrics.as_ref().and_then(|m| m.local_addr().ok()),
    });

    loop {
        // Output first: whatever the last pass produced is written before waiting.
        // Into the TUN device of the port the packet leaves by: a reverse-path check of its
        // source (looked up from that egress interface, whose rule points at this device)
        // then matches the device it came in on, so strict and loose `rp_filter` accept it.
        while let Some(pkt) = pipeline.poll_output() {
            let dst = pkt
                .header()
                .get(16..20)
                .and_then(|d| <[u8; 4]>::try_from(d).ok());
            let port = dst.and_then(|d| egress.port(d.into())).unwrap_or(0);
            let tun = tuns.get(port).unwrap_or(&tuns[0]);
            let written = match pkt.payload() {
                Some(payload) => tun.write_gather(&[pkt.header(), payload]),
                None => {
                    wire.clear();
                    pkt.write_wire(&mut wire);
                    tun.write(&wire)
                }
            };
            match written {
                Ok(Some(_)) => {}
                Ok(None) | Err(_) => tx_errors += 1,
            }
        }
        let deadline = pipeline.poll_timeout();
        let wait = deadline.map(|d| d.as_nanos().saturating_sub(now().as_nanos()));
        let wait = if config.log_every_s > 0 {
            let to_log = next_log
                .saturating_duration_since(WallInstant::now())
                .as_nanos() as u64;
            Some(wait.map_or(to_log, |w| w.min(to_log)))
        } else {
            wait
        };
        // A scrape whose request had not fully arrived when accepted: look again in 5 ms.
        let wait = match metrics.as_ref().filter(|m| m.pending()) {
            Some(_) => Some(wait.map_or(SCRAPE_POLL_NS, |w| w.min(SCRAPE_POLL_NS))),
            None => wait,
        };
        ready_tokens.clear();
        let waited = epoll
            .wait_ns(wait, |t| ready_tokens.push(t))
            .map_err(DaemonError::Io)?;
        if waited.is_none() {
            timer
                .set(deadline.map(|d| d.as_nanos() + epoch))
                .map_err(DaemonError::Io)?;
            let ms = wait.map_or(-1, |w| w.div_ceil(1_000_000).min(60_000) as i32);
            epoll
                .wait(ms, |t| ready_tokens.push(t))
                .map_err(DaemonError::Io)?;
        }
        let mut stop = false;
        for &token in &ready_tokens {
            match token {
                TOKEN_TIMER => timer.clear(),
                TOKEN_SIGNAL => {
                    let caught = signals.drain();
                    stop |= caught.interrupt || caught.terminate;
                }
                TOKEN_METRICS => {}
                port => {
                    let port = port as usize;
                    let Some(tun) = tuns.get(port) else { continue };
                    for _ in 0..READ_BATCH {
                        match tun.read(&mut buf) {
                            Ok(Some(n)) => pipeline.ingress(now(), port, &buf[..n]),
                            Ok(None) => break,
                            Err(e) => {
                                warn!(instance = %name, "read from {}: {e}", plan.tun_name(port));
                                break;
                            }
                        }
                    }
                }
            }
        }
        pipeline.handle_timeout(now());
        while let Some(e) = pipeline.poll_event() {
            log_connection(&name, e);
        }
        if let Some(m) = metrics.as_mut() {
            let up = started.elapsed().as_secs_f64();
            m.serve(|| {
                let mut page = render(&name, &interfaces, &pipeline, up);
                page += &format!(
                    "# HELP satpep_tx_errors_total Packets a TUN device would not take.\n\
                     # TYPE satpep_tx_errors_total counter\n\
                     satpep_tx_errors_total{{instance_name=\"{name}\"}} {tx_errors}\n"
                );
                page
            });
        }
        // The journal of split connections: rewritten when they changed, at most every 100 ms
        // (a connection opened in the last 100 ms before a crash may be missing from it).
        if WallInstant::now() >= next_journal {
            let sig = pipeline.split_signature();
            if sig != journalled {
                write_journal(&journal, &pipeline)?;
                journalled = sig;
            }
            next_journal = WallInstant::now() + JOURNAL_EVERY;
        }
        if config.log_every_s > 0 && WallInstant::now() >= next_log {
            next_log += log_every;
            let c = pipeline.counters();
            info!(
                instance = %name,
                rx_packets = c.rx_packets.iter().sum::<u64>(),
                tx_packets = c.tx_packets,
                malformed = c.malformed,
                tx_errors,
                connections = pipeline.middlebox().open_connections(),
                "counters"
            );
        }
        if WallInstant::now() >= next_egress {
            match EgressTable::read(&config.interfaces) {
                Ok(t) => egress = t,
                Err(e) => warn!(instance = %name, "{e}: keeping the last routes"),
            }
            next_egress = WallInstant::now() + egress::REFRESH;
        }
        if stop {
            break;
        }
    }
    // The relay's connections end with it: the next start resets them (orphans).
    write_journal(&journal, &pipeline)?;
    info!(instance = %name, "stopping: removing rules and restoring sysctls");
    drop(tuns);
    guard.run()?;
    Ok(())
}

/// How often the journal of split connections may be rewritten.
const JOURNAL_EVERY: std::time::Duration = std::time::Duration::from_millis(100);

/// One log line per split connection opened or ended (an operator's connection log).
fn log_connection(name: &str, e: satpep_proto::pep::SplitEvent) {
    use satpep_proto::pep::SplitEvent;
    let addr = |(a, p): (std::net::Ipv4Addr, u16)| std::net::SocketAddrV4::new(a, p);
    match e {
        SplitEvent::Split {
            opener, listener, ..
        } => info!(
            instance = %name,
            client = %addr(opener),
            server = %addr(listener),
            "connection split"
        ),
        SplitEvent::Ended {
            at,
            opener,
            listener,
            how,
            since,
            bytes,
        } => info!(
            instance = %name,
            client = %addr(opener),
            server = %addr(listener),
            how = how.as_str(),
            seconds = (at - since).as_secs_f64(),
            bytes_to_server = bytes[0],
            bytes_to_client = bytes[1],
            "connection ended"
        ),
    }
}

fn write_journal(file: &Path, pipeline: &Pipeline) -> Result<(), DaemonError> {
    let text = crate::orphans::journal_text(pipeline.split_connections().into_iter());
    state::write_atomic(file, &text).map_err(DaemonError::Io)
}

/// What the daemon tells its caller once it is in the path.
#[derive(Clone, Debug)]
pub struct Status {
    /// Where metrics are served (the bound address, e.g. when the port was 0).
    pub metrics: Option<std::net::SocketAddr>,
}

/// Takes the daemon out of the path: on the normal exit path explicitly, on an error return or
/// a panic by drop.
pub(crate) struct Teardown {
    pub(crate) plan: RoutingPlan,
    pub(crate) file: std::path::PathBuf,
    pub(crate) restore: Vec<(String, String)>,
    pub(crate) armed: bool,
}

impl Teardown {
    pub(crate) fn run(&mut self) -> Result<(), DaemonError> {
        if !self.armed {
            return Ok(());
        }
        self.armed = false;
        sh(&self.plan.remove_script()).map_err(DaemonError::Setup)?;
        for (k, v) in &self.restore {
            state::write_sysctl(k, v).map_err(DaemonError::Io)?;
        }
        match std::fs::remove_file(&self.file) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(DaemonError::Io(e)),
        }
    }
}

impl Drop for Teardown {
    fn drop(&mut self) {
        if let Err(e) = self.run() {
            warn!("teardown: {e}");
        }
    }
}
