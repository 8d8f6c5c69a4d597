//! `satpep shell` and the placement, status line and run.json of `satpep emu`, run as a user
//! would. Needs root, `ip`, `unshare`, `ping` and /dev/net/tun; under `CI=true` their absence
//! is a failure.
//!
//! Addresses: every shell runs inside a network namespace the test creates (`unshare -n`), so
//! the device, address and route a shell adds to the namespace it starts in (its "root") exist
//! only there and vanish with it; the shell's hosts are numbered in 100.64.0.0/10 inside that
//! fresh namespace, where nothing else is. `satpep emu` touches only namespaces it creates.

mod common;

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::sync::Mutex;

/// One test at a time: the timing bounds assume an otherwise idle emulator.
static SERIAL: Mutex<()> = Mutex::new(());

/// Round trip of the built-in scenario: 2 × (10 + 250 + 1) ms of link delay.
const DEFAULT_RTT_MS: f64 = 522.0;

fn can_emulate() -> bool {
    let tools = ["ip", "unshare", "ping"].iter().all(|p| {
        Command::new("sh")
            .args(["-c", &format!("command -v {p}")])
            .output()
            .is_ok_and(|o| o.status.success())
    });
    let ok = tools
        && Path::new("/dev/net/tun").exists()
        && std::fs::read_to_string("/proc/self/status").is_ok_and(|s| {
            s.lines()
                .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(1) == Some("0"))
        });
    if !ok {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must run the shell tests: they need root, ip, unshare, ping and /dev/net/tun"
        );
        println!("SKIP: needs root, ip, unshare, ping and /dev/net/tun");
    }
    ok
}

fn satpep_namespaces() -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir("/var/run/netns")
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with("satpep-"))
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// Namespaces of emulator runs whose process is gone: what a run that exited left behind
/// (each run removes such left-overs of others when it starts; emulators still running
/// elsewhere on the machine are not counted).
fn leftovers() -> Vec<String> {
    satpep_namespaces()
        .into_iter()
        .filter(|n| {
            let pid = n.strip_prefix("satpep-").and_then(|r| r.split('-').next());
            pid.is_some_and(|p| !Path::new(&format!("/proc/{p}")).exists())
        })
        .collect()
}

/// `satpep shell ARGS…` inside a fresh network namespace (loopback up), with `stdin` as its
/// input, bounded by `timeout`; asserts that it leaves no namespace behind.
fn shell_in_fresh_netns(args: &[&str], stdin: &[u8]) -> Output {
    let mut cmd = Command::new("timeout");
    cmd.args(["120", "unshare", "-n", "sh", "-c"])
        .arg("ip link set lo up && exec \"$@\"")
        .arg("sh")
        .arg(env!("CARGO_BIN_EXE_satpep"))
        .arg("shell")
        .arg("--no-realtime")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("timeout/unshare run");
    if let Some(mut input) = child.stdin.take() {
        input.write_all(stdin).unwrap();
    }
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        leftovers(),
        Vec::<String>::new(),
        "the shell's namespaces are gone when it returns"
    );
    out
}

/// Every `time=X ms` of ping's output.
fn ping_rtts(text: &str) -> Vec<f64> {
    text.split_whitespace()
        .filter_map(|w| w.strip_prefix("time=")?.parse().ok())
        .collect()
}

#[test]
fn shell_passes_stdin_stdout_and_the_exit_code() {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !can_emulate() {
        return;
    }
    let o = shell_in_fresh_netns(
        &[
            "default",
            "--",
            "sh",
            "-c",
            "cat; echo \"at $SATPEP_SHELL_CLIENT\"; exit 7",
        ],
        b"hi\nthere\n",
    );
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(7), "{stderr}");
    // The built-in scenario's second host, numbered in the first shell block.
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        "hi\nthere\nat 100.64.0.2\n"
    );
    // A command killed by a signal: 128 + its number, as a shell reports it.
    let o = shell_in_fresh_netns(&["default", "--", "sh", "-c", "kill -TERM $$"], b"");
    assert_eq!(o.status.code(), Some(128 + 15));
}

/// From inside the shell, a listener where the shell was started (here: the test's own fresh
/// namespace) is reached across the scenario's path: no round trip is shorter than the
/// scenario's 522 ms, and a TCP handshake takes one of them.
#[test]
fn shell_reaches_its_root_across_the_modelled_path() {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !can_emulate() {
        return;
    }
    // A TCP listener in the outer namespace, then the shell; `sh` there starts both.
    let exe = env!("CARGO_BIN_EXE_satpep");
    let script = format!(
        "ip link set lo up && \
         python3 -c 'import socket,time; s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind((\"0.0.0.0\", 7001)); s.listen(); time.sleep(60)' & L=$!; \
         {exe} shell --no-realtime default -- sh -c 'ping -n -c 3 -i 0.3 $SATPEP_SHELL_HOST; \
         python3 -c \"import socket,time,os; t=time.monotonic(); socket.create_connection((os.environ[\\\"SATPEP_SHELL_HOST\\\"], 7001)); print(\\\"connect_ms\\\", (time.monotonic()-t)*1000)\"'; \
         rc=$?; kill $L; exit $rc"
    );
    let o = Command::new("timeout")
        .args(["120", "unshare", "-n", "sh", "-c", &script])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(leftovers(), Vec::<String>::new());
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{stdout}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let rtts = ping_rtts(&stdout);
    assert_eq!(rtts.len(), 3, "{stdout}");
    // The lower bound is the model's; the upper one tells one crossing from two.
    for rtt in &rtts {
        assert!(
            *rtt >= DEFAULT_RTT_MS,
            "rtt {rtt} ms below the path's 522 ms"
        );
        assert!(
            *rtt < 2.0 * DEFAULT_RTT_MS,
            "rtt {rtt} ms: crossed more than once"
        );
    }
    let connect: f64 = stdout
        .lines()
        .find_map(|l| l.strip_prefix("connect_ms ")?.trim().parse().ok())
        .unwrap_or_else(|| panic!("no connect time in {stdout}"));
    assert!(
        connect >= DEFAULT_RTT_MS,
        "TCP connect {connect} ms < one RTT"
    );
}

/// A shell inside a shell adds its path: the outermost namespace is two crossings away.
#[test]
fn a_nested_shell_adds_the_path_again() {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !can_emulate() {
        return;
    }
    let exe = env!("CARGO_BIN_EXE_satpep");
    // `$SATPEP_SHELL_HOST` is read by the outer shell's `sh`: the outermost namespace.
    let inner = format!(
        "echo \"outer depth $SATPEP_SHELL_DEPTH\"; {exe} shell --no-realtime default -- sh -c \
         \"echo inner depth \\$SATPEP_SHELL_DEPTH at \\$SATPEP_SHELL_CLIENT; ping -n -c 2 -i 0.3 $SATPEP_SHELL_HOST\""
    );
    let o = shell_in_fresh_netns(&["default", "--", "sh", "-c", &inner], b"");
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{stdout}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(stdout.contains("outer depth 1\n"), "{stdout}");
    // The nested shell numbers its hosts in the upper half of the outer block.
    assert!(
        stdout.contains("inner depth 2 at 100.64.128.2\n"),
        "{stdout}"
    );
    let rtts = ping_rtts(&stdout);
    assert_eq!(rtts.len(), 2, "{stdout}");
    for rtt in rtts {
        assert!(
            rtt >= 2.0 * DEFAULT_RTT_MS,
            "rtt {rtt} ms: not two crossings"
        );
        assert!(
            rtt < 3.0 * DEFAULT_RTT_MS,
            "rtt {rtt} ms: more than two crossings"
        );
    }
}

/// `--server` runs on the data sender's side (the built-in scenario's "server", behind the
/// gateway), `--client` on the other; `--on` puts commands where it says, several per host;
/// each host's address, as its own `ip` shows it, says where it ran.
#[test]
fn emu_places_commands_and_records_them_in_run_json() {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !can_emulate() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r");
    let addr = "ip -4 -o addr show satpep0";
    let cc = "cat /proc/sys/net/ipv4/tcp_congestion_control";
    let o = Command::new(env!("CARGO_BIN_EXE_satpep"))
        .args([
            "emu",
            "-q",
            "--no-realtime",
            "--client-delay",
            "0s",
            "--out",
        ])
        .arg(&out)
        .args(["--server", &format!("{addr}; sleep 30")])
        .args(["--client", &format!("{addr}; sleep 2.5")])
        .args([
            "--on", "client", cc, "--on", "server", addr, "--on", "client", addr,
        ])
        .args(["--status", "--plot"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{stderr}");
    let read = |f: &str| std::fs::read_to_string(out.join(f)).unwrap();
    assert!(String::from_utf8_lossy(&o.stdout).contains("plots: 4"));
    assert!(out.join("queue.png").is_file() && out.join("throughput.svg").is_file());
    assert!(
        read("server.log").contains("inet 10.0.0.1/32"),
        "server side"
    );
    assert!(
        read("client.log").contains("inet 10.0.3.1/32"),
        "client side"
    );
    let cc_client = read("on-client-1.log").trim().to_owned();
    assert!(read("on-server-2.log").contains("inet 10.0.0.1/32"));
    assert!(read("on-client-3.log").contains("inet 10.0.3.1/32"));

    let run: serde_json::Value = serde_json::from_str(&read("run.json")).unwrap();
    let emu = &run["emu"];
    let commands: Vec<(String, String)> = emu["commands"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["role"].as_str().unwrap().to_owned(),
                c["host"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let pairs = [
        ("server", "server"),
        ("client", "client"),
        ("on", "client"),
        ("on", "server"),
        ("on", "client"),
    ];
    assert_eq!(
        commands,
        pairs.map(|(r, h)| (r.to_owned(), h.to_owned())).to_vec()
    );
    assert_eq!(emu["commands"][1]["command"], format!("{addr}; sleep 2.5"));
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap();
    assert_eq!(emu["kernel"], kernel.trim());
    assert_eq!(
        emu["sysctls"]["net.ipv4.tcp_rmem"]["value"],
        "4096 131072 67108864"
    );
    assert_eq!(
        emu["sysctls"]["net.ipv4.tcp_rmem"]["set"],
        "4096 131072 67108864"
    );
    let hosts = emu["hosts"].as_array().unwrap();
    assert_eq!(hosts.len(), 2);
    assert_eq!(hosts[1]["host"], "client");
    assert_eq!(hosts[1]["address"], "10.0.3.1");
    assert_eq!(hosts[1]["congestion_control"], cc_client.as_str());

    // --status with stderr not a terminal: one line a second, in the documented form.
    let lines: Vec<&str> = stderr.lines().filter(|l| l.starts_with('[')).collect();
    assert!(lines.len() >= 2, "{stderr}");
    for l in &lines {
        let (secs, rest) = l[1..].split_once(" s] ").unwrap_or_else(|| panic!("{l}"));
        assert!(secs.trim().parse::<u32>().is_ok(), "{l}");
        let (_, late) = rest
            .rsplit_once("| late p99 ")
            .unwrap_or_else(|| panic!("{l}"));
        let late = late.strip_suffix(" µs").unwrap_or_else(|| panic!("{l}"));
        assert!(late.parse::<u64>().is_ok(), "{l}");
    }
    assert_eq!(
        lines[0]
            .split_once(" s]")
            .unwrap()
            .0
            .trim_start_matches('['),
        "    1"
    );

    // Without --status and with stderr not a terminal: no status line; `output.plots = true`
    // draws the plots as --plot does.
    let out2 = dir.path().join("r2");
    let o = Command::new(env!("CARGO_BIN_EXE_satpep"))
        .args(["emu", "-q", "--no-realtime", "--duration", "1.5s", "--out"])
        .arg(&out2)
        .args([
            "--set",
            "output.plots=true",
            "--client",
            "ping -c 2 -i 0.2 {server}",
        ])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{stderr}");
    assert!(!stderr.lines().any(|l| l.starts_with('[')), "{stderr}");
    assert!(out2.join("queue.png").is_file(), "output.plots honoured");
}

/// `--on` names a host that does not exist: exit 2 naming the hosts there are.
#[test]
fn emu_on_an_unknown_host_is_refused() {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !can_emulate() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let o = common::satpep(
        &["emu", "-q", "--on", "gateway", "true", "--out", "r"],
        dir.path(),
    );
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("no host named \"gateway\"; commands run in the hosts server, client"),
        "{stderr}"
    );
}

/// Live processes whose command line is exactly `argv` (NUL-separated), zombies excluded.
fn processes_running(argv: &[&str]) -> Vec<u32> {
    let want: Vec<u8> = argv
        .iter()
        .flat_map(|a| [a.as_bytes(), b"\0"].concat())
        .collect();
    std::fs::read_dir("/proc")
        .map(|d| {
            d.flatten()
                .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
                .filter(|pid| {
                    std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| c == want)
                        && !std::fs::read_to_string(format!("/proc/{pid}/stat"))
                            .unwrap_or_default()
                            .contains(") Z ")
                })
                .collect()
        })
        .unwrap_or_default()
}

fn wait_until(what: &str, mut cond: impl FnMut() -> bool) {
    let t0 = std::time::Instant::now();
    while !cond() {
        assert!(t0.elapsed().as_secs() < 20, "timed out waiting for {what}");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// SIGTERM to `satpep shell` is passed to the command (exit 128 + 15); SIGKILL leaves the
/// watchdog to clean up. Either way the namespace and the command are gone.
#[test]
fn shell_cleans_up_after_sigterm_and_sigkill() {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !can_emulate() {
        return;
    }
    for (sig, marker, want) in [("TERM", "4343", Some(143)), ("KILL", "4344", None)] {
        // `unshare` and `sh` exec: the child is satpep itself.
        let mut child = Command::new("unshare")
            .args(["-n", "sh", "-c", "ip link set lo up && exec \"$@\"", "sh"])
            .arg(env!("CARGO_BIN_EXE_satpep"))
            .args(["shell", "--no-realtime", "default", "--", "sleep", marker])
            .stdin(Stdio::null())
            .spawn()
            .unwrap();
        let prefix = format!("satpep-{}-", child.id());
        let mine = || {
            satpep_namespaces()
                .into_iter()
                .filter(|n| n.starts_with(&prefix))
                .count()
        };
        wait_until("the command to start", || {
            !processes_running(&["sleep", marker]).is_empty()
        });
        assert_eq!(
            mine(),
            1,
            "one namespace: the client's (the server host is here)"
        );
        let ok = Command::new("kill")
            .args(["-s", sig, &child.id().to_string()])
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok);
        let status = child.wait().unwrap();
        assert_eq!(status.code(), want, "after SIG{sig}");
        wait_until("the namespace to go", || mine() == 0);
        wait_until("the command to go", || {
            processes_running(&["sleep", marker]).is_empty()
        });
    }
}

/// Two hosts, 10 Mb/s and 300 ms each way: a 600 ms round trip.
const GEO600: &str = r#"
name = "geo600"
[[node]]
name = "gw"
address = "10.0.0.1"
[[node]]
name = "term"
address = "10.0.1.1"
[[link]]
name = "fwd"
from = "gw"
to = "term"
rate = "10Mbps"
delay = "300ms"
[[link]]
name = "ret"
from = "term"
to = "gw"
rate = "10Mbps"
delay = "300ms"
[[flow]]
from = "gw"
to = "term"
app = { kind = "bulk" }
"#;

/// The issue's example: `curl` in the shell fetches a file from a web server where the shell
/// was started, over a 600 ms path. A 10 000-byte file fits Linux's initial window (10
/// segments), so the model says: the TCP handshake takes one round trip (600 ms), the
/// request and the whole response one more, plus 10 000 bytes and headers serialised at
/// 10 Mb/s (8 ms) — 1 208 ms. The lower bounds are the model's; the upper ones stop short of
/// one more round trip, which a wrong path, a second crossing or a smaller window would add
/// (the programs at both ends are not real-time: on a loaded machine they alone took tens of
/// milliseconds, so a tighter bound would test the machine, not satpep).
#[test]
fn shell_curl_over_a_600ms_path_takes_the_modelled_time() {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !can_emulate() {
        return;
    }
    let has = |p: &str| {
        Command::new("sh")
            .args(["-c", &format!("command -v {p}")])
            .output()
            .is_ok_and(|o| o.status.success())
    };
    if !(has("curl") && has("python3")) {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must have curl and python3"
        );
        println!("SKIP: needs curl and python3");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let www = dir.path().join("www");
    std::fs::create_dir(&www).unwrap();
    std::fs::write(www.join("f10k"), vec![b'x'; 10_000]).unwrap();
    let scenario = dir.path().join("geo600.toml");
    std::fs::write(&scenario, GEO600).unwrap();
    let exe = env!("CARGO_BIN_EXE_satpep");
    // `--bind 0.0.0.0`: bound to a name, http.server would ask a resolver first.
    let script = format!(
        "ip link set lo up && \
         python3 -m http.server 8000 --bind 0.0.0.0 -d {www} >/dev/null 2>&1 & L=$!; \
         for i in $(seq 50); do python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", 8000))' 2>/dev/null && break; sleep 0.1; done; \
         {exe} shell {sc} -- sh -c 'curl -sS -o /dev/null -w \"%{{time_connect}} %{{time_total}} %{{size_download}}\" http://$SATPEP_SHELL_HOST:8000/f10k'; \
         rc=$?; kill $L; exit $rc",
        www = www.display(),
        sc = scenario.display()
    );
    let o = Command::new("timeout")
        .args(["120", "unshare", "-n", "sh", "-c", &script])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(leftovers(), Vec::<String>::new());
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{stdout}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let v: Vec<f64> = stdout
        .split_whitespace()
        .filter_map(|w| w.parse().ok())
        .collect();
    let [connect, total, size] = v[..] else {
        panic!("curl printed {stdout}")
    };
    assert_eq!(size, 10_000.0);
    assert!((0.600..1.200).contains(&connect), "connect {connect} s");
    assert!((1.208..1.808).contains(&total), "total {total} s");
}

/// `satpep emu`'s client reads satpep's stdin, and its output reaches satpep's stdout (and
/// client.log).
#[test]
fn emu_client_reads_stdin_and_its_output_is_shown() {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !can_emulate() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r");
    let mut child = Command::new(env!("CARGO_BIN_EXE_satpep"))
        .args(["emu", "--no-realtime", "--client-delay", "0s", "--out"])
        .arg(&out)
        .args(["--client", "tr a-z A-Z"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"over the satellite\n")
        .unwrap();
    let o = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(stdout.starts_with("OVER THE SATELLITE\n"), "{stdout}");
    assert_eq!(
        std::fs::read_to_string(out.join("client.log")).unwrap(),
        "OVER THE SATELLITE\n"
    );
}

/// `satpep shell --out DIR` writes the emulator's outputs; run.json names the shell's command,
/// the client host's namespace and the server host's device in the shell's own namespace.
#[test]
fn shell_with_out_records_the_run() {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !can_emulate() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r");
    let o = shell_in_fresh_netns(
        &[
            "default",
            "--out",
            out.to_str().unwrap(),
            "--",
            "ping",
            "-n",
            "-c",
            "1",
            "100.64.0.1",
        ],
        b"",
    );
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    let run: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("run.json")).unwrap()).unwrap();
    let emu = &run["emu"];
    assert_eq!(emu["commands"][0]["role"], "shell");
    assert_eq!(emu["commands"][0]["host"], "client");
    assert_eq!(emu["commands"][0]["command"], "ping -n -c 1 100.64.0.1");
    let hosts = emu["hosts"].as_array().unwrap();
    assert_eq!(hosts[0]["host"], "server");
    assert_eq!(hosts[0]["address"], "100.64.0.1");
    assert_eq!(hosts[0]["namespace"], serde_json::Value::Null);
    assert!(hosts[0]["device"].as_str().unwrap().starts_with("sp"));
    assert_eq!(hosts[1]["address"], "100.64.0.2");
    // The ping and its reply crossed every link once.
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let forward = summary["links"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["name"] == "forward")
        .unwrap();
    assert_eq!(forward["delivered_packets"], 1, "{forward}");
}
