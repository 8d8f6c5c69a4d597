//! One emulation run: namespaces up, commands started, the real-time loop, outputs, teardown.
//!
//! The loop is single-threaded: one epoll set holds the hosts' TUN devices and the signal
//! self-pipe, and each wait times out at the earliest of the links' `poll_timeout`, the next
//! sample and the next command event — in nanoseconds with `epoll_pwait2` (Linux 5.11), or
//! through an absolute CLOCK_MONOTONIC timerfd in the same epoll set where that call is
//! missing. Each pass reads the clock once, reads up to [`READ_BATCH`] packets from each
//! readable device, lets every link release what is due, and waits again. The thread's timer
//! slack is 1 ns (the default 50 µs would delay every wake-up), and it runs under SCHED_FIFO
//! unless [`EmuOptions::realtime`] is off (docs/emulator.md has the measurements).

use std::fs::File;
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::Duration as StdDuration;

use satpep_output::{LinkSummary, RunStatus, Summary};
use satpep_proto::{Duration, Instant};
use satpep_scenario::{NodeKind, Scenario};
use satpep_sim::Outputs;

use crate::engine::Engine;
use crate::netns::{self, Namespaces};
use crate::report::{EmuSummary, LinkLateness};
use crate::sys::{self, Epoll, SignalPipe, TimerFd};
use crate::EmuError;

/// Packets read from one device per pass before the links are serviced.
pub const READ_BATCH: usize = 64;

/// How a run is driven.
#[derive(Clone, Debug)]
pub struct EmuOptions {
    /// Shell command run in the first flow's listening host (`{server}`, `{client}` replaced
    /// by the addresses of the first flow's listening and opening hosts).
    pub server: Option<String>,
    /// Shell command run in the first flow's opening host, [`client_delay`](Self::client_delay)
    /// after the server; the run ends when it exits.
    pub client: Option<String>,
    /// Stop after this long whatever the commands do; `None`: when the client exits (or on
    /// SIGINT/SIGTERM when there is no client).
    pub duration: Option<Duration>,
    /// Time between starting the server and starting the client. Default 500 ms.
    pub client_delay: Duration,
    /// Output directory (created if missing).
    pub out: PathBuf,
    /// Run the loop under SCHED_FIFO (priority 10) so other processes cannot delay it.
    /// Default true; a failure to switch is reported in the summary, not fatal.
    pub realtime: bool,
    /// Sleep at least this long when the next release is in the future, so that one wake-up
    /// releases several packets: fewer context switches at high packet rates, at the price
    /// of up to this much added lateness. Default 0 (wake exactly when due).
    pub coalesce: Duration,
}

impl EmuOptions {
    /// Options with no commands, no limit, the default client delay, writing to `out`.
    pub fn new(out: impl Into<PathBuf>) -> Self {
        Self {
            server: None,
            client: None,
            duration: None,
            client_delay: Duration::from_millis(500),
            out: out.into(),
            realtime: true,
            coalesce: Duration::ZERO,
        }
    }
}

/// What a finished run reports.
#[derive(Debug)]
pub struct EmuOutcome {
    /// Written as `summary.json`.
    pub summary: EmuSummary,
    /// Exit status of the client command, if it ran to completion.
    pub client_status: Option<ExitStatus>,
    /// Where the client's stdout and stderr went.
    pub client_log: PathBuf,
    /// Where the server's stdout and stderr went.
    pub server_log: PathBuf,
}

/// Why the loop ended.
#[derive(Clone, Copy, Debug, Eq, PartialEq)]
enum Stop {
    ClientExited,
    Duration,
    Signal,
}

const TOKEN_TIMER: u64 = u64::MAX;
const TOKEN_SIGNAL: u64 = u64::MAX - 1;

/// Emulate `scenario` in real time with `opts` (see the crate documentation).
///
/// Errors: [`EmuError::Privileges`] when this process cannot create namespaces or TUN
/// devices, [`EmuError::Scenario`] when the scenario has no host to emulate, others for
/// set-up and I/O failures. Namespaces are removed on every path out, including errors and
/// SIGINT/SIGTERM.
pub fn run(scenario: &Scenario, opts: &EmuOptions) -> Result<EmuOutcome, EmuError> {
    netns::check_privileges()?;
    let hosts: Vec<(usize, String, std::net::Ipv4Addr)> = scenario
        .nodes
        .iter()
        .enumerate()
        .filter(|(_, n)| n.kind == NodeKind::Host)
        .map(|(i, n)| (i, n.name.clone(), n.address))
        .collect();
    if hosts.len() < 2 {
        return Err(EmuError::Scenario(
            "the emulator needs at least two nodes of kind \"host\"".into(),
        ));
    }
    let first_flow = scenario.flows.first();
    if first_flow.is_none() && (opts.server.is_some() || opts.client.is_some()) {
        return Err(EmuError::Scenario(
            "--server/--client run in the hosts of the first [[flow]]; the scenario has none"
                .into(),
        ));
    }
    let stale_removed = netns::clean_stale();
    std::fs::create_dir_all(&opts.out)
        .map_err(|e| EmuError::Setup(format!("{}: {e}", opts.out.display())))?;

    // Catch SIGINT/SIGTERM before the first namespace exists, so that a signal during set-up
    // still ends in the clean-up path rather than the default action.
    let signals = SignalPipe::install()?;
    let mut spaces = Namespaces::create(&hosts)?;
    let ns_of = |node: usize| spaces.list.iter().position(|n| n.node == node);
    let mut port_of = vec![None; scenario.nodes.len()];
    for (p, ns) in spaces.list.iter().enumerate() {
        port_of[ns.node] = Some(p);
    }

    // The network writes the series (links.csv, and dama.csv for DAMA return links) and the
    // pcap of the scenario's capture links itself, at the model's instants, as in `sim`.
    let mut engine = Engine::new(scenario);
    engine.set_outputs(Outputs::create(&opts.out, scenario)?);

    let mut epoll = Epoll::new()?;
    let mut timer = TimerFd::new()?;
    for (p, ns) in spaces.list.iter().enumerate() {
        if let Some(tun) = &ns.tun {
            epoll.add(tun.raw_fd(), p as u64)?;
        }
    }
    epoll.add(timer.raw_fd(), TOKEN_TIMER)?;
    epoll.add(signals.raw_fd(), TOKEN_SIGNAL)?;
    sys::set_timer_slack_1ns();
    let realtime = opts.realtime && sys::set_realtime(10).is_ok();

    // Commands: `{server}` is the first flow's listener, `{client}` its opener.
    let (server_ns, client_ns, subst) = match first_flow {
        Some(f) => {
            let (s, c) = (scenario.nodes[f.to].address, scenario.nodes[f.from].address);
            let subst = move |cmd: &str| {
                cmd.replace("{server}", &s.to_string())
                    .replace("{client}", &c.to_string())
            };
            (ns_of(f.to), ns_of(f.from), Some(subst))
        }
        None => (None, None, None),
    };
    let server_log = opts.out.join("server.log");
    let client_log = opts.out.join("client.log");
    let spawn = |ns: Option<usize>, cmd: &str, log: &PathBuf| -> Result<Child, EmuError> {
        let name = ns
            .and_then(|i| spaces.list.get(i))
            .map(|n| n.name.clone())
            .ok_or_else(|| EmuError::Scenario("the first flow's hosts have no namespace".into()))?;
        let cmd = subst.as_ref().map_or_else(|| cmd.to_owned(), |f| f(cmd));
        let out = File::create(log)?;
        let mut c: Command = netns::command_in(&name, &cmd);
        c.stdin(Stdio::null()).stdout(out.try_clone()?).stderr(out);
        std::os::unix::process::CommandExt::process_group(&mut c, 0);
        sys::kill_child_with_parent(&mut c);
        Ok(c.spawn()?)
    };

    let epoch = sys::monotonic_ns();
    let clock = || Instant(sys::monotonic_ns().saturating_sub(epoch));
    let mut server = match &opts.server {
        Some(cmd) => Some(spawn(server_ns, cmd, &server_log)?),
        None => None,
    };
    let mut client: Option<Child> = None;
    let mut client_due = opts
        .client
        .as_ref()
        .map(|_| Instant::ZERO + opts.client_delay);
    let mut client_status = None;
    let mut server_status = None;
    let end = opts.duration.map(|d| Instant::ZERO + d);
    let mut ready = vec![false; spaces.list.len()];
    let mut wakeups = 0u64;
    let mut child_event = false;
    let mut timer_fired = false;
    // epoll_pwait2 gives ns timeouts in the wait itself; without it, a timerfd.
    let mut use_timerfd = false;

    let stop = loop {
        let now = clock();
        for (p, r) in ready.iter_mut().enumerate() {
            if !std::mem::take(r) {
                continue;
            }
            let Some(tun) = spaces.list[p].tun.as_ref() else {
                continue;
            };
            let node = spaces.list[p].node;
            for _ in 0..READ_BATCH {
                if !engine.ingress(node, now, |b| tun.read(b))? {
                    break;
                }
            }
        }
        engine.service(now, |node, head, tail| {
            let Some(tun) = port_of[node].and_then(|p| spaces.list[p].tun.as_ref()) else {
                return Ok(false);
            };
            Ok(tun.write2(head, tail)?.is_some())
        })?;

        if client_due.is_some_and(|t| now >= t) {
            client_due = None;
            if let Some(cmd) = &opts.client {
                client = Some(spawn(client_ns, cmd, &client_log)?);
            }
        }
        // Children are reaped only after a SIGCHLD (wait4 on every pass cost 12 % of the
        // loop's time at 70 kpps).
        if std::mem::take(&mut child_event) {
            if let Some(c) = client.as_mut() {
                if let Some(st) = c.try_wait()? {
                    client_status = Some(st);
                    break Stop::ClientExited;
                }
            }
            if let Some(s) = server.as_mut() {
                if server_status.is_none() {
                    server_status = s.try_wait()?;
                }
            }
        }
        if end.is_some_and(|e| now >= e) {
            break Stop::Duration;
        }

        // `coalesce` stretches only waits for packets: the client's start and the end of the
        // run happen on time whatever it is.
        let now_ns = sys::monotonic_ns();
        let until = |d: Instant| (epoch + d.as_nanos()).saturating_sub(now_ns);
        let packet_wait = engine.poll_timeout().map(|d| match until(d) {
            0 => 0,
            w => w.max(opts.coalesce.as_nanos()),
        });
        let other_wait = [client_due, end].into_iter().flatten().map(until).min();
        let wait_ns = [packet_wait, other_wait].into_iter().flatten().min();
        let mut stop = false;
        let mut on_event = |token: u64| match token {
            TOKEN_TIMER => timer_fired = true,
            TOKEN_SIGNAL => {
                let (s, c) = signals.drain();
                stop |= s;
                child_event |= c;
            }
            p => {
                if let Some(r) = ready.get_mut(p as usize) {
                    *r = true;
                }
            }
        };
        if !use_timerfd && epoll.wait_ns(wait_ns, &mut on_event)?.is_none() {
            use_timerfd = true;
        }
        if use_timerfd {
            let timeout_ms = match wait_ns {
                Some(0) => 0,
                Some(w) => {
                    timer.set(Some(now_ns + w))?;
                    -1
                }
                None => -1,
            };
            epoll.wait(timeout_ms, &mut on_event)?;
        }
        if std::mem::take(&mut timer_fired) {
            timer.clear();
        }
        wakeups += 1;
        if stop {
            break Stop::Signal;
        }
    };
    let now = clock();
    let server_exited_early = server_status.is_some();

    // Stop the commands: SIGTERM to their process groups, then SIGKILL after a second.
    for child in [client.as_mut(), server.as_mut()].into_iter().flatten() {
        stop_child(child);
    }
    if let Some(s) = server.as_mut() {
        if server_status.is_none() {
            server_status = s.try_wait().ok().flatten();
        }
    }

    let links: Vec<LinkSummary> = scenario
        .links
        .iter()
        .enumerate()
        .map(|(i, spec)| {
            let (s, _, _) = engine.link_stats(i, now);
            LinkSummary {
                name: spec.name.clone(),
                from: scenario.nodes[spec.from].name.clone(),
                to: scenario.nodes[spec.to].name.clone(),
                rate_bps: spec.config.rate.bps(),
                delay_ms: spec.config.delay.as_nanos() as f64 / 1e6,
                utilisation: s.utilisation(now),
                delivered_packets: s.delivered_packets,
                delivered_bytes: s.delivered_bytes,
                queue_drops: s.queue_drops,
                error_drops: s.error_drops,
                mean_queue_packets: s.mean_queue_packets(now),
                max_queue_packets: s.max_queue_packets,
                mean_queue_bytes: s.mean_queue_bytes(now),
            }
        })
        .collect();
    let mut all = engine.other_lateness().clone();
    let link_lateness = scenario
        .links
        .iter()
        .enumerate()
        .map(|(i, spec)| {
            all.merge(engine.lateness(i));
            LinkLateness {
                name: spec.name.clone(),
                stats: engine.lateness(i).stats(),
            }
        })
        .collect();
    let counters = engine.counters();
    let summary = EmuSummary {
        base: Summary {
            scenario: scenario.name.clone(),
            seed: scenario.seed,
            // A signal is the normal end of a run without a client and without a duration;
            // otherwise it cut the run short.
            status: if matches!(stop, Stop::Signal)
                && (opts.client.is_some() || opts.duration.is_some())
            {
                RunStatus::Interrupted
            } else {
                RunStatus::Complete
            },
            sim_time_s: now.as_secs_f64(),
            events: counters.rx_packets + wakeups,
            flows: Vec::new(),
            links,
            middleboxes: engine.network().middlebox_summaries(),
        },
        lateness: all.stats(),
        link_lateness,
        path: counters,
        stop_reason: match stop {
            Stop::ClientExited => "client exited",
            Stop::Duration => "duration reached",
            Stop::Signal => "signal",
        }
        .into(),
        client_exit: client_status.and_then(|s| s.code()),
        server_exit: server_status.and_then(|s| s.code()),
        server_exited_early,
        stale_removed,
        realtime,
        open_connections: engine.network().open_connections(),
        live_packets: engine.buffers_in_use() as u64,
        drops: engine
            .network()
            .drops()
            .into_iter()
            .map(|(r, n)| (r.name().to_owned(), n))
            .collect(),
    };
    engine.finish()?;
    summary.write_json(&opts.out)?;
    if realtime {
        sys::set_normal();
    }
    // Teardown while the signal handlers still stand: a second SIGINT or SIGTERM (`timeout`
    // signals the process and then its group) must not kill us half-way.
    spaces.teardown();
    drop(signals);
    Ok(EmuOutcome {
        summary,
        client_status,
        client_log,
        server_log,
    })
}

/// SIGTERM to the child's process group, up to 1 s for it to go, then SIGKILL; reaps it.
fn stop_child(child: &mut Child) {
    if matches!(child.try_wait(), Ok(Some(_))) {
        return;
    }
    let pgid = child.id() as i32;
    let _ = sys::kill(-pgid, libc::SIGTERM);
    for _ in 0..100 {
        if matches!(child.try_wait(), Ok(Some(_))) {
            let _ = sys::kill(-pgid, libc::SIGKILL); // stragglers in the group
            return;
        }
        std::thread::sleep(StdDuration::from_millis(10));
    }
    let _ = sys::kill(-pgid, libc::SIGKILL);
    let _ = child.wait();
}
