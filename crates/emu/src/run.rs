//! One emulation run: namespaces up, commands started, the real-time loop, outputs, teardown.
//!
//! The loop is single-threaded: one epoll set holds the hosts' TUN devices and the signal
//! self-pipe, and each wait times out at the earliest of the links' `poll_timeout`, the next
//! sample and the next command event — in nanoseconds with `epoll_pwait2` (Linux 5.11), or
//! through an absolute CLOCK_MONOTONIC timerfd in the same epoll set where that call is
//! missing. Each pass reads the clock once, reads up to [`READ_BATCH`] packets from each
//! readable device, lets every link release what is due, and waits again. The thread's timer
//! slack is 1 ns (the default 50 µs would delay every wake-up), and it runs under SCHED_FIFO
//! unless [`EmuOptions::realtime`] is off (docs/emulator.md has the measurements). The summary
//! splits lateness into the wake-up delay, the time per pass and the time a pass did not run.

use std::fs::File;
use std::io::Write;
use std::net::Ipv4Addr;
use std::os::fd::AsRawFd;
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::Duration as StdDuration;

use satpep_output::{LinkSummary, RunStatus, Summary};
use satpep_proto::{Duration, Instant};
use satpep_scenario::{AppSpec, NodeKind, Scenario};
use satpep_sim::Outputs;
use serde::Serialize;

use crate::engine::{Engine, MAX_PARTS};
use crate::lateness::Histogram;
use crate::netns::{self, Namespaces};
use crate::report::{EmuSummary, LinkLateness};
use crate::shell;
use crate::status::{status_line, LinkSample};
use crate::sys::{self, Caught, Epoll, SignalPipe, TimerFd};
use crate::EmuError;

/// Wire packets read from one device per pass before the links are serviced (a super-packet
/// from an offloading device counts its segments; the last read may go past by up to 44).
pub const READ_BATCH: usize = 64;

/// SCHED_FIFO priority of the loop unless one is asked for: above every ordinary process,
/// below threaded interrupt handlers (SCHED_FIFO 50).
pub const DEFAULT_RT_PRIORITY: u8 = 10;

/// How a run is driven.
#[derive(Clone, Debug)]
pub struct EmuOptions {
    /// Shell command run in the server host (see [`placement`]), or in
    /// [`server_on`](Self::server_on); `{server}` and `{client}` are replaced by the server and
    /// client hosts' addresses.
    pub server: Option<String>,
    /// Shell command run in the client host (see [`placement`]), or in
    /// [`client_on`](Self::client_on), [`client_delay`](Self::client_delay) after the server;
    /// the run ends when it exits.
    pub client: Option<String>,
    /// Host (node name) the server command runs in instead of the default placement.
    pub server_on: Option<String>,
    /// Host (node name) the client command runs in instead of the default placement.
    pub client_on: Option<String>,
    /// Further commands, `(host name, shell command)`, started with the server and stopped at
    /// the end of the run; several may name the same host.
    pub on: Vec<(String, String)>,
    /// Stop after this long whatever the commands do; `None`: when the client exits (or on
    /// SIGINT/SIGTERM when there is no client).
    pub duration: Option<Duration>,
    /// Time between starting the server and starting the client. Default 500 ms.
    pub client_delay: Duration,
    /// Output directory (created if missing).
    pub out: PathBuf,
    /// Write outputs (series, pcap, summary.json, logs) into [`out`](Self::out). Default true;
    /// `satpep shell` without `--out` writes none.
    pub outputs: bool,
    /// Run the loop under SCHED_FIFO (at [`DEFAULT_RT_PRIORITY`], or at
    /// [`rt_priority`](Self::rt_priority)) so that ordinary processes cannot delay it.
    /// Default true; a failure to switch is reported in the summary, not fatal, unless a
    /// priority was asked for.
    pub realtime: bool,
    /// SCHED_FIFO priority (1–99) asked for explicitly (`--rt-priority`): the run fails with
    /// [`EmuError::Privileges`] when the kernel refuses it. `None`: [`DEFAULT_RT_PRIORITY`],
    /// best effort.
    pub rt_priority: Option<u8>,
    /// Wake this long before a packet is due and poll (epoll with a zero timeout) until it
    /// is, so that the timer's and the scheduler's wake-up delay is taken before the due
    /// instant rather than after it; costs up to this much CPU per wake-up. Default 0.
    pub spin: Duration,
    /// Sleep at least this long when the next release is in the future, so that one wake-up
    /// releases several packets: fewer context switches at high packet rates, at the price
    /// of up to this much added lateness. Default 0 (wake exactly when due).
    pub coalesce: Duration,
    /// The client command reads this process's stdin (default: /dev/null). On a terminal it
    /// then stays in this process's group, so that it may read the terminal.
    pub stdin: bool,
    /// Copy the client's output to this process's stdout as it comes (it always goes to
    /// `client.log` too). Default false.
    pub echo: bool,
    /// The live status line (see [`crate::status`]). Default off.
    pub status: StatusMode,
    /// TUN devices with offloads (`IFF_VNET_HDR`, checksum and TSO4: [`crate::vnet`]): one
    /// system call per 64 KB super-packet read, and delivered segments joined into
    /// super-packets; the model still sees wire segments. Default true; a device whose kernel
    /// refuses falls back to one packet per system call. Not used by `satpep shell`.
    pub offload: bool,
    /// `satpep shell`: run this command (argv) in the client host, with stdin, stdout, stderr
    /// and the process group of this process, and the server host in this process's own
    /// namespace (see [`crate::shell`]); the run ends when the command exits.
    pub shell: Option<Vec<String>>,
}

/// Whether and how the status line is shown.
#[derive(Clone, Copy, Debug, Default, Eq, PartialEq)]
pub enum StatusMode {
    /// Not shown.
    #[default]
    Off,
    /// Redrawn in place on stderr (a terminal).
    Redraw,
    /// One line per second on stderr (not a terminal, but asked for).
    Lines,
}

impl EmuOptions {
    /// Options with no commands, no limit, the default client delay, writing to `out`.
    pub fn new(out: impl Into<PathBuf>) -> Self {
        Self {
            server: None,
            client: None,
            server_on: None,
            client_on: None,
            on: Vec::new(),
            duration: None,
            client_delay: Duration::from_millis(500),
            out: out.into(),
            outputs: true,
            realtime: true,
            rt_priority: None,
            spin: Duration::ZERO,
            coalesce: Duration::ZERO,
            stdin: false,
            echo: false,
            status: StatusMode::Off,
            offload: true,
            shell: None,
        }
    }
}

/// The default hosts of the server and client commands, `(server node, client node)`: from the
/// first flow, the host that answers — a bulk flow's `from` (the data sender: `iperf3 -s`
/// there and `iperf3 -c {server} -R`, or `curl`, in the client make a download along the
/// flow) and a request/response flow's `to` — and the other end. Without flows: the first
/// and the last host. `None` with fewer than two hosts.
pub fn placement(scenario: &Scenario) -> Option<(usize, usize)> {
    if let Some(f) = scenario.flows.first() {
        return Some(match f.app {
            AppSpec::Bulk { .. } | AppSpec::Udp { .. } => (f.from, f.to),
            _ => (f.to, f.from),
        });
    }
    let hosts: Vec<usize> = (0..scenario.nodes.len())
        .filter(|&i| scenario.nodes[i].kind == NodeKind::Host)
        .collect();
    match hosts[..] {
        [first, .., last] => Some((first, last)),
        _ => None,
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
const TOKEN_OUTPUT: u64 = u64::MAX - 2;

/// A command the run started.
struct Started {
    child: Child,
    /// In a process group of its own (stopped by group), or in ours (stopped by pid).
    own_group: bool,
}

/// Emulate `scenario` in real time with `opts` (see the crate documentation).
///
/// Errors: [`EmuError::Privileges`] when this process cannot create namespaces or TUN
/// devices, [`EmuError::Scenario`] when the scenario has no host to emulate, others for
/// set-up and I/O failures. Namespaces are removed on every path out, including errors and
/// SIGINT/SIGTERM/SIGHUP.
pub fn run(scenario: &Scenario, opts: &EmuOptions) -> Result<EmuOutcome, EmuError> {
    netns::check_privileges()?;
    // Before any namespace exists, so that a refusal leaves nothing to undo; the commands
    // started later run under the normal policy (SCHED_RESET_ON_FORK).
    let rt_priority = match (opts.realtime, opts.rt_priority) {
        (false, _) => None,
        (true, None) => sys::set_realtime(i32::from(DEFAULT_RT_PRIORITY))
            .ok()
            .map(|()| DEFAULT_RT_PRIORITY),
        (true, Some(p)) => match sys::set_realtime(i32::from(p)) {
            Ok(()) => Some(p),
            Err(e) => {
                return Err(EmuError::Privileges(format!(
                    "--rt-priority {p}: the kernel refused SCHED_FIFO ({e}); it needs \
                     CAP_SYS_NICE or an RLIMIT_RTPRIO of at least {p} (`ulimit -r`), and a \
                     cgroup with real-time runtime; without --rt-priority the loop runs \
                     under the normal scheduler when this fails"
                )));
            }
        },
    };
    // Back to the normal policy on every way out (a library caller's thread lives on).
    let _normal = rt_priority.map(|_| NormalOnDrop);
    let host_nodes: Vec<usize> = (0..scenario.nodes.len())
        .filter(|&i| scenario.nodes[i].kind == NodeKind::Host)
        .collect();
    if host_nodes.len() < 2 {
        return Err(EmuError::Scenario(
            "the emulator needs at least two nodes of kind \"host\"".into(),
        ));
    }
    let host_named = |name: &str| -> Result<usize, EmuError> {
        host_nodes
            .iter()
            .copied()
            .find(|&i| scenario.nodes[i].name == name)
            .ok_or_else(|| {
                let names: Vec<&str> = host_nodes
                    .iter()
                    .map(|&i| scenario.nodes[i].name.as_str())
                    .collect();
                EmuError::Scenario(format!(
                    "no host named {name:?}; commands run in the hosts {}",
                    names.join(", ")
                ))
            })
    };
    let (default_server, default_client) =
        placement(scenario).ok_or_else(|| EmuError::Scenario("no hosts to place".into()))?;
    let server_node = match &opts.server_on {
        Some(n) => host_named(n)?,
        None => default_server,
    };
    let client_node = match &opts.client_on {
        Some(n) => host_named(n)?,
        None => default_client,
    };
    let mut extra = Vec::new();
    for (node, cmd) in &opts.on {
        extra.push((host_named(node)?, cmd.clone()));
    }

    // A shell renumbers the hosts in its address block and keeps the server host here.
    let mut renumbered;
    let mut scenario = scenario;
    let mut outer = None;
    let mut shell_env = Vec::new();
    if opts.shell.is_some() {
        // A shell renumbers the hosts and routes what it does not know through one tunnel:
        // neither fits networks behind hosts or namespaces that exist already.
        if let Some(n) =
            (scenario.nodes.iter()).find(|n| n.netns.is_some() || !n.subnets.is_empty())
        {
            return Err(EmuError::Scenario(format!(
                "node `{}`: `netns` and `subnets` work in `satpep emu`, not in `satpep shell`",
                n.name
            )));
        }
        let plan = shell_plan()?;
        renumbered = scenario.clone();
        for (i, &n) in host_nodes.iter().enumerate() {
            renumbered.nodes[n].address = plan
                .host(i)
                .ok_or_else(|| EmuError::Scenario("a shell numbers at most 253 hosts".into()))?;
        }
        scenario = &renumbered;
        outer = Some(netns::Outer {
            node: server_node,
            device: format!("sp{}", std::process::id()),
            route: plan.cidr(),
        });
        shell_env.push((
            shell::ENV_HOST,
            scenario.nodes[server_node].address.to_string(),
        ));
        shell_env.push((
            shell::ENV_CLIENT,
            scenario.nodes[client_node].address.to_string(),
        ));
        shell_env.push((shell::ENV_DEPTH, (plan.depth + 1).to_string()));
        shell_env.push((
            shell::ENV_PREFIX,
            plan.child().map(|c| c.cidr()).unwrap_or_default(),
        ));
    }
    // A shell wraps and unwraps the packets of its devices, which offloads would hand over as
    // super-packets: it keeps one packet per system call.
    let hosts = host_setups(scenario, &host_nodes, opts.offload && opts.shell.is_none());
    let known: Vec<Ipv4Addr> = hosts.iter().map(|h| h.address).collect();

    let stale_removed = netns::clean_stale();
    if opts.outputs {
        std::fs::create_dir_all(&opts.out)
            .map_err(|e| EmuError::Setup(format!("{}: {e}", opts.out.display())))?;
    }

    // Catch SIGINT/SIGTERM before the first namespace exists, so that a signal during set-up
    // still ends in the clean-up path rather than the default action.
    let signals = SignalPipe::install()?;
    let mut spaces = Namespaces::create(&hosts, outer.as_ref())?;
    let ns_of = |node: usize| spaces.list.iter().position(|n| n.node == node);
    let mut port_of = vec![None; scenario.nodes.len()];
    for (p, ns) in spaces.list.iter().enumerate() {
        port_of[ns.node] = Some(p);
    }
    // Shell: packets for addresses the scenario does not know cross between the client and
    // the outer host wrapped (see `crate::shell`): per port, the (source, destination) of
    // the wrapping header it adds on the way in; per node, the one it removes on the way out.
    let (s_addr, c_addr) = (
        scenario.nodes[server_node].address,
        scenario.nodes[client_node].address,
    );
    let mut wrap_in = vec![None; spaces.list.len()];
    let mut unwrap_out = vec![None; scenario.nodes.len()];
    if opts.shell.is_some() {
        if let (Some(ps), Some(pc)) = (port_of[server_node], port_of[client_node]) {
            wrap_in[ps] = Some((s_addr, c_addr));
            wrap_in[pc] = Some((c_addr, s_addr));
            unwrap_out[client_node] = Some((s_addr, c_addr));
            unwrap_out[server_node] = Some((c_addr, s_addr));
        }
    }

    // The network writes the series (links.csv, and dama.csv for DAMA return links) and the
    // pcap of the scenario's capture links itself, at the model's instants, as in `sim`.
    let mut engine = Engine::new(scenario);
    let mut offload_devices = 0;
    for ns in &spaces.list {
        let vnet = ns.tun.as_ref().is_some_and(sys::Tun::vnet_hdr);
        engine.set_vnet(ns.node, vnet);
        offload_devices += usize::from(vnet);
    }
    if opts.outputs {
        engine.set_outputs(Outputs::create(&opts.out, scenario)?);
    }

    // What run.json records of this run (the CLI wrote what was asked before it started).
    let (server_addr, client_addr) = (s_addr, c_addr);
    let subst = move |cmd: &str| {
        cmd.replace("{server}", &server_addr.to_string())
            .replace("{client}", &client_addr.to_string())
    };
    if opts.outputs {
        let mut commands = Vec::new();
        let name = |n: usize| scenario.nodes[n].name.clone();
        if let Some(c) = &opts.server {
            commands.push(CommandRecord::new("server", name(server_node), subst(c)));
        }
        if let Some(c) = &opts.client {
            commands.push(CommandRecord::new("client", name(client_node), subst(c)));
        }
        for (n, c) in &extra {
            commands.push(CommandRecord::new("on", name(*n), subst(c)));
        }
        if let Some(argv) = &opts.shell {
            commands.push(CommandRecord::new(
                "shell",
                name(client_node),
                argv.join(" "),
            ));
        }
        record_environment(&opts.out, &spaces, scenario, commands, opts.shell.is_some());
    }

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

    let server_log = opts.out.join("server.log");
    let client_log = opts.out.join("client.log");
    // stdout and stderr of a command share one file offset, so neither overwrites the other.
    let log_file = |log: &PathBuf| -> Result<(Stdio, Stdio), EmuError> {
        if !opts.outputs {
            return Ok((Stdio::null(), Stdio::null()));
        }
        let out = File::create(log)?;
        Ok((out.try_clone()?.into(), out.into()))
    };
    let spawn = |node: usize, cmd: &str, log: &PathBuf| -> Result<Started, EmuError> {
        let name = ns_of(node)
            .and_then(|i| spaces.list.get(i))
            .map(|n| n.name.clone())
            .ok_or_else(|| EmuError::Scenario("the command's host has no namespace".into()))?;
        let (out, err) = log_file(log)?;
        let mut c: Command = netns::command_in(&name, &subst(cmd));
        c.stdin(Stdio::null()).stdout(out).stderr(err);
        std::os::unix::process::CommandExt::process_group(&mut c, 0);
        sys::kill_child_with_parent(&mut c);
        Ok(Started {
            child: c.spawn()?,
            own_group: true,
        })
    };

    let epoch = sys::monotonic_ns();
    let clock = || Instant(sys::monotonic_ns().saturating_sub(epoch));
    let mut server = match &opts.server {
        Some(cmd) => Some(spawn(server_node, cmd, &server_log)?),
        None => None,
    };
    let mut others = Vec::new();
    for (k, (node, cmd)) in extra.iter().enumerate() {
        let log = opts.out.join(format!(
            "on-{}-{}.log",
            netns::sanitize(&scenario.nodes[*node].name),
            k + 1
        ));
        others.push(spawn(*node, cmd, &log)?);
    }
    // The client's output: straight into client.log, or through a pipe that this loop copies
    // to stdout and client.log as it comes.
    let mut client_out: Option<(std::io::PipeReader, Option<File>)> = None;
    let mut client: Option<Started> = None;
    let mut client_due = opts
        .client
        .as_ref()
        .map(|_| Instant::ZERO + opts.client_delay);
    if let Some(argv) = &opts.shell {
        let name = ns_of(client_node)
            .and_then(|i| spaces.list.get(i))
            .map(|n| n.name.clone())
            .ok_or_else(|| EmuError::Scenario("the client host has no namespace".into()))?;
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &name]).args(argv);
        for (k, v) in &shell_env {
            c.env(k, v);
        }
        sys::kill_child_with_parent(&mut c);
        client = Some(Started {
            child: c.spawn()?,
            own_group: false,
        });
        client_due = None;
    }
    let start_client = |cmd: &str| -> Result<(Started, Option<_>), EmuError> {
        let name = ns_of(client_node)
            .and_then(|i| spaces.list.get(i))
            .map(|n| n.name.clone())
            .ok_or_else(|| EmuError::Scenario("the client host has no namespace".into()))?;
        let mut c: Command = netns::command_in(&name, &subst(cmd));
        let mut pipe = None;
        if opts.echo {
            let (r, w) = std::io::pipe()?;
            sys::set_nonblocking(r.as_raw_fd())?;
            c.stdout(w.try_clone()?).stderr(w);
            let log = if opts.outputs {
                Some(File::create(&client_log)?)
            } else {
                None
            };
            pipe = Some((r, log));
        } else {
            let (out, err) = log_file(&client_log)?;
            c.stdout(out).stderr(err);
        }
        // A client reading a terminal must be in the terminal's foreground group: ours.
        let own_group = !(opts.stdin && sys::isatty(0));
        if opts.stdin {
            c.stdin(Stdio::inherit());
        } else {
            c.stdin(Stdio::null());
        }
        if own_group {
            std::os::unix::process::CommandExt::process_group(&mut c, 0);
        }
        sys::kill_child_with_parent(&mut c);
        let child = c.spawn()?;
        drop(c); // our copy of the pipe's write end: end of file comes when the client's goes
        Ok((Started { child, own_group }, pipe))
    };

    let mut client_status = None;
    let mut server_status = None;
    let end = opts.duration.map(|d| Instant::ZERO + d);
    let mut ready = vec![false; spaces.list.len()];
    let mut output_ready = false;
    let mut wakeups = 0u64;
    let mut child_event = false;
    let mut timer_fired = false;
    // epoll_pwait2 gives ns timeouts in the wait itself; without it, a timerfd.
    let mut use_timerfd = false;
    // Shell: a SIGTERM/SIGHUP is passed to the command, which has this long to exit.
    let mut shell_grace: Option<Instant> = None;
    let mut status = StatusState::new(opts.status, scenario);
    let mut echo_buf = vec![0u8; 1 << 16];
    // Where lateness comes from: how late each timed wait that nothing cut short returned
    // (the timer's and the scheduler's delay), how long each pass took (a packet due during a
    // pass waits for its end), and how much of that the thread did not run (preempted, or
    // the vCPU stolen by the hypervisor).
    let mut wake_late = Histogram::default();
    let mut pass_time = Histogram::default();
    let mut pass_lost = Histogram::default();
    let mut asked_wake: Option<u64> = None;
    let loop_cpu_start = sys::thread_cpu_ns();
    // The thread's CPU clock is a system call (not the vDSO), read once per pass, at its end:
    // the CPU between two ends also holds the wait's own system call, so `pass_lost` comes
    // out low by that (a few µs), never high.
    let mut cpu_at_end = loop_cpu_start;

    let stop = loop {
        let now = clock();
        if let Some(at) = asked_wake.take() {
            wake_late.record((epoch + now.as_nanos()).saturating_sub(at));
        }
        for (p, r) in ready.iter_mut().enumerate() {
            if !std::mem::take(r) {
                continue;
            }
            let Some(tun) = spaces.list[p].tun.as_ref() else {
                continue;
            };
            let node = spaces.list[p].node;
            let wrap_to = wrap_in[p];
            let vnet = tun.vnet_hdr();
            // The budget is in wire packets: a read from an offloading device brings up to 45,
            // and a pass that reads thousands delays every release due meanwhile.
            let budget_end = engine.rx_packets() + READ_BATCH as u64;
            for _ in 0..READ_BATCH {
                if engine.rx_packets() >= budget_end {
                    *r = true; // more may wait: read again on the next pass
                    break;
                }
                let got = match wrap_to {
                    None if vnet => engine.ingress_vnet(node, now, |b| tun.read(b))?,
                    None => engine.ingress(node, now, |b| tun.read(b))?,
                    Some((src, dst)) => engine.ingress(node, now, |b| {
                        let room = b.len() - shell::WRAP_LEN;
                        let Some(n) = tun.read(&mut b[..room])? else {
                            return Ok(None);
                        };
                        let foreign =
                            shell::destination(&b[..n]).is_some_and(|d| !known.contains(&d));
                        Ok(Some(
                            foreign
                                .then(|| shell::wrap(b, n, src, dst))
                                .flatten()
                                .unwrap_or(n),
                        ))
                    })?,
                };
                if !got {
                    break;
                }
            }
        }
        engine.service(now, |node, parts| {
            let Some(tun) = port_of[node].and_then(|p| spaces.list[p].tun.as_ref()) else {
                return Ok(false);
            };
            match (unwrap_out[node], parts) {
                (Some((src, dst)), [head, rest @ ..]) if shell::is_wrapped(head, src, dst) => {
                    let mut unwrapped: [&[u8]; MAX_PARTS] = [&[]; MAX_PARTS];
                    unwrapped[0] = &head[shell::WRAP_LEN..];
                    for (u, p) in unwrapped[1..].iter_mut().zip(rest) {
                        *u = p;
                    }
                    Ok(tun
                        .write_gather(&unwrapped[..parts.len().min(MAX_PARTS)])?
                        .is_some())
                }
                _ => Ok(tun.write_gather(parts)?.is_some()),
            }
        })?;

        if std::mem::take(&mut output_ready) {
            if let Some((r, log)) = client_out.as_mut() {
                let eof = copy_output(r.as_raw_fd(), log.as_mut(), &mut echo_buf, &mut status)?;
                if eof {
                    epoll.delete(r.as_raw_fd())?;
                    client_out = None;
                }
            }
        }
        if client_due.is_some_and(|t| now >= t) {
            client_due = None;
            if let Some(cmd) = &opts.client {
                let (c, pipe) = start_client(cmd)?;
                client = Some(c);
                if let Some((r, log)) = pipe {
                    epoll.add(r.as_raw_fd(), TOKEN_OUTPUT)?;
                    client_out = Some((r, log));
                }
            }
        }
        // Children are reaped only after a SIGCHLD (wait4 on every pass cost 12 % of the
        // loop's time at 70 kpps).
        if std::mem::take(&mut child_event) {
            if let Some(c) = client.as_mut() {
                if let Some(st) = c.child.try_wait()? {
                    client_status = Some(st);
                    break Stop::ClientExited;
                }
            }
            if let Some(s) = server.as_mut() {
                if server_status.is_none() {
                    server_status = s.child.try_wait()?;
                }
            }
        }
        if end.is_some_and(|e| now >= e) {
            break Stop::Duration;
        }
        if shell_grace.is_some_and(|g| now >= g) {
            break Stop::Signal;
        }
        status.tick(now, &engine);

        // `coalesce` stretches only waits for packets: the client's start and the end of the
        // run happen on time whatever it is. `spin` shortens them: the loop wakes early and
        // polls until the packet is due.
        let now_ns = sys::monotonic_ns();
        let pass_ns = now_ns.saturating_sub(epoch + now.as_nanos());
        pass_time.record(pass_ns);
        let cpu = sys::thread_cpu_ns();
        pass_lost.record(pass_ns.saturating_sub(cpu.saturating_sub(cpu_at_end)));
        cpu_at_end = cpu;
        let until = |d: Instant| (epoch + d.as_nanos()).saturating_sub(now_ns);
        let spin = opts.spin.as_nanos();
        let packet_wait = engine.poll_timeout().map(|d| match until(d) {
            0 => 0,
            w if w <= spin => 0,
            w if spin > 0 => w - spin,
            w => w.max(opts.coalesce.as_nanos()),
        });
        let other_wait = [client_due, end, shell_grace, status.due()]
            .into_iter()
            .flatten()
            .map(until)
            .min();
        let wait_ns = [packet_wait, other_wait].into_iter().flatten().min();
        let mut caught = Caught::default();
        let mut on_event = |token: u64| match token {
            TOKEN_TIMER => timer_fired = true,
            TOKEN_OUTPUT => output_ready = true,
            TOKEN_SIGNAL => {
                let c = signals.drain();
                caught.interrupt |= c.interrupt;
                caught.terminate |= c.terminate;
                child_event |= c.child;
            }
            p => {
                if let Some(r) = ready.get_mut(p as usize) {
                    *r = true;
                }
            }
        };
        let mut events = None;
        if !use_timerfd {
            events = epoll.wait_ns(wait_ns, &mut on_event)?;
            use_timerfd = events.is_none();
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
            events = Some(epoll.wait(timeout_ms, &mut on_event)?);
        }
        if std::mem::take(&mut timer_fired) {
            timer.clear();
            events = Some(0);
        }
        // Woken by the timeout alone: how late, measured at the next pass's clock reading.
        if let (Some(0), Some(w @ 1..)) = (events, wait_ns) {
            asked_wake = Some(now_ns + w);
        }
        wakeups += 1;
        if opts.shell.is_some() {
            // Ctrl-C reaches the command from the terminal (it shares our process group);
            // SIGTERM/SIGHUP are passed on, and the run ends when it exits (or a second
            // later, or at a second such signal).
            if caught.terminate {
                if shell_grace.is_some() {
                    break Stop::Signal;
                }
                if let Some(c) = &client {
                    let _ = sys::kill(c.child.id() as i32, libc::SIGTERM);
                    let _ = sys::kill(c.child.id() as i32, libc::SIGHUP);
                }
                shell_grace = Some(clock() + Duration::from_secs(1));
            }
        } else if caught.interrupt || caught.terminate {
            break Stop::Signal;
        }
    };
    let now = clock();
    status.clear();
    let server_exited_early = server_status.is_some();

    // Stop the commands: SIGTERM to their process groups, then SIGKILL after a second.
    for child in [client.as_mut(), server.as_mut()]
        .into_iter()
        .flatten()
        .chain(others.iter_mut())
    {
        stop_child(child);
    }
    if let Some((r, log)) = client_out.as_mut() {
        // What the client wrote before it ended (anything of a grandchild still running is
        // cut off: this read does not block).
        copy_output(r.as_raw_fd(), log.as_mut(), &mut echo_buf, &mut status)?;
    }
    if let Some(s) = server.as_mut() {
        if server_status.is_none() {
            server_status = s.child.try_wait().ok().flatten();
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
                arq_retransmissions: s.arq_retransmissions,
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
            multicast_routers: engine.network().multicast_router_summaries(),
            groups: Vec::new(),
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
        client_signal: client_status.and_then(|s| s.signal()),
        server_exit: server_status.and_then(|s| s.code()),
        server_exited_early,
        stale_removed,
        realtime: rt_priority.is_some(),
        rt_priority,
        wake_lateness: wake_late.stats(),
        pass_time: pass_time.stats(),
        pass_lost: pass_lost.stats(),
        loop_cpu_s: sys::thread_cpu_ns().saturating_sub(loop_cpu_start) as f64 / 1e9,
        offload_devices,
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
    if opts.outputs {
        summary.write_json(&opts.out)?;
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

/// Puts the thread back under the normal scheduler when dropped.
struct NormalOnDrop;

impl Drop for NormalOnDrop {
    fn drop(&mut self) {
        sys::set_normal();
    }
}

/// SIGTERM to the child's process group (or the child alone when it shares ours), up to 1 s
/// for it to go, then SIGKILL; reaps it.
fn stop_child(started: &mut Started) {
    let child = &mut started.child;
    if matches!(child.try_wait(), Ok(Some(_))) {
        return;
    }
    let target = if started.own_group {
        -(child.id() as i32)
    } else {
        child.id() as i32
    };
    let _ = sys::kill(target, libc::SIGTERM);
    for _ in 0..100 {
        if matches!(child.try_wait(), Ok(Some(_))) {
            if started.own_group {
                let _ = sys::kill(target, libc::SIGKILL); // stragglers in the group
            }
            return;
        }
        std::thread::sleep(StdDuration::from_millis(10));
    }
    let _ = sys::kill(target, libc::SIGKILL);
    let _ = child.wait();
}

/// The address block of a shell started here: handed down by an enclosing shell, or the
/// first top-level block no address or route of this namespace uses.
fn shell_plan() -> Result<shell::AddressPlan, EmuError> {
    if let Ok(prefix) = std::env::var(shell::ENV_PREFIX) {
        let depth = std::env::var(shell::ENV_DEPTH).unwrap_or_default();
        return shell::AddressPlan::nested(&prefix, &depth).ok_or_else(|| {
            EmuError::Scenario(format!(
                "{}={prefix:?}: shells nest at most 7 deep (or the variable was changed)",
                shell::ENV_PREFIX
            ))
        });
    }
    let mut seen = String::new();
    for args in [
        &["-4", "-o", "addr", "show"][..],
        &["-4", "route", "show", "table", "all"],
    ] {
        let out = Command::new("ip")
            .args(args)
            .output()
            .map_err(|e| EmuError::Privileges(format!("cannot run ip: {e}")))?;
        seen += &String::from_utf8_lossy(&out.stdout);
    }
    shell::free_top_block(&seen)
        .map(shell::AddressPlan::top)
        .ok_or_else(|| EmuError::Setup("every block of 100.64.0.0/10 is in use here".into()))
}

/// Copy what waits on the client's output pipe to stdout and its log; true at end of file.
fn copy_output(
    fd: std::os::fd::RawFd,
    mut log: Option<&mut File>,
    buf: &mut [u8],
    status: &mut StatusState,
) -> Result<bool, EmuError> {
    loop {
        match sys::read_fd(fd, buf)? {
            None => return Ok(false),
            Some(0) => return Ok(true),
            Some(n) => {
                if let Some(log) = log.as_mut() {
                    log.write_all(&buf[..n])?;
                }
                status.clear();
                let mut out = std::io::stdout().lock();
                // A closed stdout (`| head`) is not the run's failure.
                let _ = out.write_all(&buf[..n]).and_then(|()| out.flush());
                status.at_line_start = buf[n - 1] == b'\n';
            }
        }
    }
}

/// The live status line's state (see [`crate::status`]).
struct StatusState {
    mode: StatusMode,
    next: Instant,
    last: Instant,
    prev: Vec<LinkSample>,
    names: Vec<String>,
    /// A line is drawn in place on the terminal now.
    drawn: bool,
    /// The commands' output ended a line: a status line may be drawn.
    at_line_start: bool,
}

impl StatusState {
    fn new(mode: StatusMode, scenario: &Scenario) -> Self {
        let names: Vec<String> = scenario.links.iter().map(|l| l.name.clone()).collect();
        Self {
            mode,
            next: Instant::ZERO + Duration::from_secs(1),
            last: Instant::ZERO,
            prev: names
                .iter()
                .map(|n| LinkSample {
                    name: n.clone(),
                    ..LinkSample::default()
                })
                .collect(),
            names,
            drawn: false,
            at_line_start: true,
        }
    }

    fn due(&self) -> Option<Instant> {
        (self.mode != StatusMode::Off).then_some(self.next)
    }

    fn tick(&mut self, now: Instant, engine: &Engine) {
        if self.mode == StatusMode::Off || now < self.next {
            return;
        }
        let samples: Vec<LinkSample> = self
            .names
            .iter()
            .enumerate()
            .map(|(i, name)| {
                let (s, queue_packets, _) = engine.link_stats(i, now);
                LinkSample {
                    name: name.clone(),
                    delivered_bytes: s.delivered_bytes,
                    queue_packets,
                    drops: s.queue_drops + s.error_drops,
                }
            })
            .collect();
        let mut all = engine.other_lateness().clone();
        for i in 0..self.names.len() {
            all.merge(engine.lateness(i));
        }
        let dt = now.saturating_since(self.last).as_secs_f64();
        let line = status_line(
            now.as_secs_f64(),
            dt,
            &self.prev,
            &samples,
            all.stats().p99_us,
        );
        self.prev = samples;
        self.last = now;
        // The next whole second of run time, however late this one was.
        let secs = now.as_nanos() / 1_000_000_000 + 1;
        self.next = Instant(secs * 1_000_000_000);
        let mut err = std::io::stderr().lock();
        match self.mode {
            StatusMode::Redraw if self.at_line_start => {
                // A line longer than the terminal would wrap, and erasing erases only its
                // last row: cut it to fit.
                let cols = sys::terminal_columns(2).unwrap_or(80);
                let line: String = line.chars().take(cols.saturating_sub(1)).collect();
                let _ = write!(err, "\r\x1b[K{line}");
                self.drawn = true;
            }
            StatusMode::Lines => {
                let _ = writeln!(err, "{line}");
            }
            _ => {}
        }
        let _ = err.flush();
    }

    /// Erase the line drawn in place (at the end of the run, and before any other output).
    fn clear(&mut self) {
        if std::mem::take(&mut self.drawn) {
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "\r\x1b[K");
            let _ = err.flush();
        }
    }
}

/// One command of the run, as run.json records it.
#[derive(Serialize)]
struct CommandRecord {
    /// `server`, `client`, `on` or `shell`.
    role: &'static str,
    /// Host (node name) it ran in.
    host: String,
    /// The command line, placeholders replaced.
    command: String,
}

impl CommandRecord {
    fn new(role: &'static str, host: String, command: String) -> Self {
        Self {
            role,
            host,
            command,
        }
    }
}

/// Add an `"emu"` object to `dir/run.json` (when it exists): the commands, the kernel, the
/// What [`Namespaces::create`] sets up for each host: an attached namespace (`netns`) gets a
/// route into its device for every other node's address and every other host's subnet.
fn host_setups(scenario: &Scenario, host_nodes: &[usize], offload: bool) -> Vec<netns::HostSetup> {
    host_nodes
        .iter()
        .map(|&i| {
            let n = &scenario.nodes[i];
            let routes = match n.netns {
                None => Vec::new(),
                Some(_) => (scenario.nodes.iter().enumerate())
                    .filter(|&(k, _)| k != i)
                    .flat_map(|(_, o)| {
                        std::iter::once(format!("{}/32", o.address))
                            .chain(o.subnets.iter().map(ToString::to_string))
                    })
                    .collect(),
            };
            netns::HostSetup {
                node: i,
                name: n.name.clone(),
                address: n.address,
                netns: n.netns.clone(),
                forward: !n.subnets.is_empty(),
                routes,
                offload,
            }
        })
        .collect()
}

/// sysctls written in the hosts' namespaces with the values read back, and each host's
/// namespace, address and TCP congestion control. Best effort: a run.json that cannot be
/// read or written is left as it is.
fn record_environment(
    dir: &std::path::Path,
    spaces: &Namespaces,
    scenario: &Scenario,
    commands: Vec<CommandRecord>,
    shell: bool,
) {
    let path = dir.join("run.json");
    let Ok(text) = std::fs::read_to_string(&path) else {
        return;
    };
    let Ok(mut run) = serde_json::from_str::<serde_json::Value>(&text) else {
        return;
    };
    let asked = netns::sysctls_set(shell);
    let keys: Vec<&str> = asked
        .iter()
        .map(|(k, _)| *k)
        .chain(["net/ipv4/tcp_congestion_control"])
        .collect();
    let mut hosts = Vec::new();
    let mut sysctls = serde_json::Map::new();
    for ns in &spaces.list {
        let values = netns::read_sysctls((!ns.here).then_some(ns.name.as_str()), &keys);
        let get = |k: &str| {
            values
                .iter()
                .find(|(key, _)| key == k)
                .map(|(_, v)| v.clone())
        };
        if !ns.here && !ns.attached && sysctls.is_empty() {
            // The same in every namespace the run made; a key that could not be written keeps
            // the kernel's default, which is what is recorded.
            for (k, wanted) in &asked {
                sysctls.insert(
                    k.replace('/', "."),
                    serde_json::json!({ "set": wanted, "value": get(k) }),
                );
            }
        }
        hosts.push(serde_json::json!({
            "host": scenario.nodes[ns.node].name,
            "namespace": if ns.here { None } else { Some(&ns.name) },
            "device": ns.device,
            "attached": ns.attached,
            "address": ns.address.to_string(),
            "congestion_control": get("net/ipv4/tcp_congestion_control"),
        }));
    }
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_owned())
        .ok();
    if let Some(obj) = run.as_object_mut() {
        obj.insert(
            "emu".into(),
            serde_json::json!({
                "kernel": kernel,
                "commands": commands,
                "sysctls": sysctls,
                "hosts": hosts,
            }),
        );
    }
    if let Ok(mut text) = serde_json::to_string_pretty(&run) {
        text.push('\n');
        let _ = std::fs::write(&path, text);
    }
}
