//! `satpep emu` leaves nothing behind however it is stopped: SIGKILL, `timeout` (SIGTERM to the
//! process, then to its group), two quick SIGINTs, and a command that ignores SIGTERM. After
//! each: no namespace of the run, no process it started, no TUN device in the root namespace,
//! and run.json written — without a later run having to clean up. Needs root and network
//! namespaces; under `CI=true` their absence is a failure.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// One emulator at a time: the checks look at the whole machine.
static SERIAL: Mutex<()> = Mutex::new(());

fn can_emulate() -> bool {
    let ok = Path::new("/dev/net/tun").exists()
        && Command::new("ip")
            .args(["netns", "list"])
            .output()
            .is_ok_and(|o| o.status.success())
        && std::fs::read_to_string("/proc/self/status").is_ok_and(|s| {
            s.lines()
                .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(1) == Some("0"))
        });
    if !ok {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must run the emulator signal tests: they need root, ip and /dev/net/tun"
        );
        println!("SKIP: needs root, ip (iproute2) and /dev/net/tun");
    }
    ok
}

/// Live processes running `sleep N` exactly (not a shell or emulator that mentions it).
fn sleepers(n: u32) -> Vec<u32> {
    let want = format!("sleep\0{n}\0").into_bytes();
    processes_where(|cmdline| cmdline == want.as_slice())
}

/// Pids of live processes whose command line (arguments joined by spaces) contains `needle`.
fn processes_with(needle: &str) -> Vec<u32> {
    processes_where(|c| {
        String::from_utf8_lossy(c)
            .replace('\0', " ")
            .contains(needle)
    })
}

fn processes_where(pred: impl Fn(&[u8]) -> bool) -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| {
                let state =
                    std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
                pred(&c) && !state.contains(") Z ")
            })
        })
        .collect()
}

/// Pids whose parent is `parent`.
fn children_of(parent: u32) -> Vec<u32> {
    processes_where(|_| true)
        .into_iter()
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|st| {
                // Fields after the parenthesised name: state, ppid, …
                st.rsplit_once(") ")
                    .and_then(|(_, rest)| rest.split_whitespace().nth(1)?.parse::<u32>().ok())
                    == Some(parent)
            })
        })
        .collect()
}

fn namespaces_of(pid: u32) -> Vec<String> {
    let prefix = format!("satpep-{pid}-");
    std::fs::read_dir("/var/run/netns")
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with(&prefix))
                .collect()
        })
        .unwrap_or_default()
}

fn wait_for(what: &str, limit: Duration, mut cond: impl FnMut() -> bool) {
    let t0 = Instant::now();
    while !cond() {
        assert!(t0.elapsed() < limit, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn signal(pid: u32, sig: &str) {
    let ok = Command::new("sh")
        .args(["-c", &format!("kill -s {sig} {pid}")])
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "kill -s {sig} {pid}");
}

/// Starts `prefix… satpep emu` with a server and a client that ignores SIGTERM, each a
/// compound command (so the shell forks the real program), waits until both run, and returns
/// the child, the emulator's pid and the marker in the commands.
fn start(wrapper: &[&str], out: &Path, marker: u32) -> (Reaped, u32) {
    let exe = env!("CARGO_BIN_EXE_satpep");
    let server = format!("sleep {marker}; echo done");
    let client = format!("trap '' TERM; sleep {}; echo done", marker + 1);
    let mut args: Vec<&str> = wrapper.to_vec();
    args.extend_from_slice(&[exe, "emu", "-q", "--no-realtime", "--out"]);
    let out_s = out.to_str().unwrap().to_owned();
    args.push(&out_s);
    args.extend_from_slice(&[
        "--server",
        &server,
        "--client",
        &client,
        "--client-delay",
        "0s",
    ]);
    let child = Reaped(
        Command::new(args[0])
            .args(&args[1..])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    wait_for("the commands to start", Duration::from_secs(30), || {
        !sleepers(marker).is_empty() && !sleepers(marker + 1).is_empty()
    });
    // The emulator is the child itself, or (under `timeout`) the child's child.
    let emu = if wrapper.is_empty() {
        child.0.id()
    } else {
        children_of(child.0.id())
            .into_iter()
            .find(|&p| processes_with(&format!("{exe} emu")).contains(&p))
            .expect("the emulator runs under the wrapper")
    };
    assert_eq!(namespaces_of(emu).len(), 2, "the run's namespaces exist");
    (child, emu)
}

/// Everything the run made is gone within a few seconds, and run.json is there.
fn assert_clean(emu: u32, marker: u32, out: &Path) {
    wait_for("namespaces to go", Duration::from_secs(10), || {
        namespaces_of(emu).is_empty()
    });
    wait_for("commands to go", Duration::from_secs(10), || {
        sleepers(marker).is_empty() && sleepers(marker + 1).is_empty()
    });
    let links = Command::new("ip")
        .args(["-o", "link", "show"])
        .output()
        .unwrap();
    let links = String::from_utf8_lossy(&links.stdout);
    assert!(
        !links.contains("satpep0"),
        "a TUN device moved to the root namespace:\n{links}"
    );
    assert!(out.join("run.json").exists(), "run.json written");
}

/// The emulator (or its wrapper): killed if a failed assertion leaves it running, so one
/// failing test does not leave a run going for an hour.
struct Reaped(Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        if matches!(self.0.try_wait(), Ok(None)) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

fn finish(mut child: Reaped) -> Option<i32> {
    let t0 = Instant::now();
    loop {
        if let Some(st) = child.0.try_wait().unwrap() {
            return st.code();
        }
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "the emulator did not exit"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn sigkill_leaves_nothing_behind() {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !can_emulate() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (child, emu) = start(&[], dir.path(), 3011);
    signal(emu, "KILL");
    assert_eq!(finish(child), None, "killed by the signal");
    assert_clean(emu, 3011, dir.path());
}

#[test]
fn timeout_sigterm_to_process_and_group_leaves_nothing_behind() {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !can_emulate() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // Long enough that `start` sees both commands running before timeout's TERM, even on a
    // loaded machine (the commands sleep 3021 s: the TERM is what ends the run).
    let (child, emu) = start(&["timeout", "10"], dir.path(), 3021);
    assert_eq!(finish(child), Some(124), "timeout's own status");
    assert_clean(emu, 3021, dir.path());
    let summary = std::fs::read_to_string(dir.path().join("summary.json")).unwrap();
    assert!(summary.contains("\"status\": \"interrupted\""), "{summary}");
}

#[test]
fn two_quick_sigints_leave_nothing_behind() {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !can_emulate() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (child, emu) = start(&[], dir.path(), 3031);
    signal(emu, "INT");
    std::thread::sleep(Duration::from_millis(20));
    signal(emu, "INT");
    finish(child);
    assert_clean(emu, 3031, dir.path());
    assert!(dir.path().join("summary.json").exists());
}

/// A server command that cannot start is an error (exit 1, naming status 127), not a silent
/// success; the run itself ends at its duration.
#[test]
fn a_server_that_cannot_start_is_an_error() {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !can_emulate() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r");
    let o = Command::new(env!("CARGO_BIN_EXE_satpep"))
        .args(["emu", "-q", "--no-realtime", "--duration", "2s", "--out"])
        .arg(&out)
        .args(["--server", "no-such-program-satpep-test"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("server command exited with status 127"),
        "{stderr}"
    );
    let summary = std::fs::read_to_string(out.join("summary.json")).unwrap();
    assert!(
        summary.contains("\"server_exited_early\": true"),
        "{summary}"
    );
}

/// `--coalesce` is bounded: a value that would stall the run is refused before anything starts.
#[test]
fn coalesce_is_bounded() {
    let o = Command::new(env!("CARGO_BIN_EXE_satpep"))
        .args(["emu", "--coalesce", "1e9s"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("10ms limit"), "{stderr}");
}
