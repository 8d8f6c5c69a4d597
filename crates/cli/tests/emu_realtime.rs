//! `satpep emu --rt-priority N` and `--spin D`: the loop runs under SCHED_FIFO at the priority
//! asked for (read from /proc while it runs, and from summary.json after), a kernel that refuses
//! it ends the run with exit code 2 and a message that says what is missing — before any
//! namespace exists — and summary.json says where lateness came from. Needs root, network
//! namespaces and `setpriv`; under `CI=true` their absence is a failure.

use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// One emulator at a time: the namespace check looks at the whole machine.
static SERIAL: Mutex<()> = Mutex::new(());

const EXE: &str = env!("CARGO_BIN_EXE_satpep");

fn can_emulate() -> bool {
    let ok = Path::new("/dev/net/tun").exists()
        && Command::new("ip")
            .args(["netns", "list"])
            .output()
            .is_ok_and(|o| o.status.success())
        && Command::new("setpriv")
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
        && std::fs::read_to_string("/proc/self/status").is_ok_and(|s| {
            s.lines()
                .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(1) == Some("0"))
        });
    if !ok {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must run the real-time tests: they need root, ip, setpriv and /dev/net/tun"
        );
        println!("SKIP: needs root, ip (iproute2), setpriv and /dev/net/tun");
    }
    ok
}

/// Namespaces of the emulator with process id `pid` (`satpep-<pid>-…`) now on the machine
/// (other tests may run emulators of their own meanwhile).
fn namespaces_of(pid: u32) -> Vec<String> {
    let prefix = format!("satpep-{pid}-");
    let out = Command::new("ip").args(["netns", "list"]).output();
    let text = out.map(|o| o.stdout).unwrap_or_default();
    String::from_utf8_lossy(&text)
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|n| n.starts_with(&prefix))
        .map(str::to_owned)
        .collect()
}

/// Runs `satpep emu ARGS` as root without CAP_SYS_NICE (dropped from the bounding and
/// inheritable sets, so the exec does not give it back) and with no real-time allowance
/// (RLIMIT_RTPRIO 0): the kernel refuses SCHED_FIFO. setpriv and prlimit exec what follows,
/// so the child's pid is the emulator's. Returns the output and that pid.
fn emu_without_sys_nice(args: &[&str]) -> (std::process::Output, u32) {
    let child = Command::new("setpriv")
        .args(["--inh-caps=-sys_nice", "--bounding-set=-sys_nice"])
        .args(["prlimit", "--rtprio=0", "--", EXE, "emu", "-q"])
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    (child.wait_with_output().unwrap(), pid)
}

/// (policy, rt_priority) of process `pid` from /proc/PID/stat (fields 41 and 40).
fn policy(pid: u32) -> Option<(u32, u32)> {
    let st = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the parenthesised name start at field 3.
    let rest: Vec<&str> = st.rsplit_once(") ")?.1.split_whitespace().collect();
    Some((rest.get(38)?.parse().ok()?, rest.get(37)?.parse().ok()?))
}

#[test]
fn out_of_range_priorities_and_conflicts_are_refused_before_anything_runs() {
    for args in [
        &["--rt-priority", "0"][..],
        &["--rt-priority", "100"],
        &["--rt-priority", "20", "--no-realtime"],
        &["--spin", "2ms"],
        &["--spin", "10us", "--coalesce", "50us"],
    ] {
        let o = Command::new(EXE).arg("emu").args(args).output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains("error"), "{args:?}: {err}");
    }
}

#[test]
fn a_refused_priority_fails_with_a_clear_message_and_leaves_no_namespace() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !can_emulate() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let out_s = out.to_str().unwrap();
    let (o, pid) =
        emu_without_sys_nice(&["--rt-priority", "20", "--duration", "1s", "--out", out_s]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "stderr: {err}");
    assert!(
        err.contains("--rt-priority 20") && err.contains("CAP_SYS_NICE"),
        "{err}"
    );
    assert!(err.contains("Operation not permitted"), "{err}");
    assert_eq!(namespaces_of(pid), Vec::<String>::new());

    // Without --rt-priority the same refusal is not fatal: the loop runs under the normal
    // scheduler, and summary.json says so.
    let out2 = dir.path().join("out2");
    let (o, pid) = emu_without_sys_nice(&["--duration", "1s", "--out", out2.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    let s: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out2.join("summary.json")).unwrap()).unwrap();
    assert_eq!(s["realtime"], false);
    assert_eq!(s["rt_priority"], serde_json::Value::Null);
    assert_eq!(namespaces_of(pid), Vec::<String>::new());
}

#[test]
fn the_loop_runs_at_the_priority_asked_and_reports_where_lateness_comes_from() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !can_emulate() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let mut child = Command::new(EXE)
        .args([
            "emu",
            "-q",
            "--rt-priority",
            "23",
            "--spin",
            "20us",
            "--out",
        ])
        .arg(&out)
        .args([
            "--client",
            "ping -c 5 -i 0.2 {server}",
            "--client-delay",
            "0s",
        ])
        .args(["--duration", "20s"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    // SCHED_FIFO is 1; the priority is set before the namespaces are made.
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut seen = None;
    while Instant::now() < deadline && seen != Some((1, 23)) {
        seen = policy(child.id());
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(seen, Some((1, 23)));
    let status = child.wait().unwrap();
    assert!(status.success(), "{status:?}");
    let s: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(s["realtime"], true);
    assert_eq!(s["rt_priority"], 23);
    // Five echo requests and five replies, each across the built-in scenario's three links
    // (server, gateway, terminal, client).
    assert_eq!(s["lateness"]["packets"], 30, "{}", s["lateness"]);
    // Passes: at least one per packet read; the time not run is counted for each pass.
    let passes = s["pass_time"]["packets"].as_u64().unwrap();
    assert!(passes >= 10, "{passes}");
    assert_eq!(s["pass_lost"]["packets"].as_u64(), Some(passes));
    // Nothing but the timeout wakes the loop for a packet due inside the network: at least
    // one timed wake-up (20 µs early, with --spin) for each of the ten packets' deliveries.
    let wakes = s["wake_lateness"]["packets"].as_u64().unwrap();
    assert!(wakes >= 10, "{}", s["wake_lateness"]);
    // The loop's CPU time is counted (it read, modelled and wrote 10 packets).
    assert!(
        s["loop_cpu_s"].as_f64().is_some_and(|c| c > 0.0),
        "{}",
        s["loop_cpu_s"]
    );
}
