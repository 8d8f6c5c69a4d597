//! Outputs a user can trust at the moments they rely on them: interrupted runs, runs that end
//! on a sample, reused folders, replays.

use std::collections::HashSet;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

mod common;
use common::satpep;

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn json(p: &Path) -> serde_json::Value {
    serde_json::from_str(&read(p)).unwrap()
}

/// Waits until `file` holds `bytes`, sends SIGINT to `child` (with the shell's builtin `kill`:
/// no extra package, no unsafe code) and returns its output and stderr.
fn interrupt_once_written(
    child: std::process::Child,
    file: &Path,
    bytes: u64,
) -> (std::process::Output, String) {
    let t0 = Instant::now();
    while std::fs::metadata(file).map_or(0, |m| m.len()) < bytes {
        assert!(t0.elapsed() < Duration::from_secs(60), "no rows after 60 s");
        std::thread::sleep(Duration::from_millis(50));
    }
    let kill = Command::new("sh")
        .args(["-c", &format!("kill -INT {}", child.id())])
        .status()
        .unwrap();
    assert!(kill.success());
    let o = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    (o, stderr)
}

/// Every row has the header's field count, and no (time, name) pair appears twice.
fn check_csv(path: &Path) -> usize {
    let text = read(path);
    assert!(text.ends_with('\n'), "{}: cut last row", path.display());
    let mut lines = text.lines();
    let fields = lines.next().unwrap().split(',').count();
    let mut seen = HashSet::new();
    let mut rows = 0;
    for line in lines {
        let cells: Vec<&str> = line.split(',').collect();
        assert_eq!(cells.len(), fields, "{}: bad row {line:?}", path.display());
        assert!(
            seen.insert((cells[0].to_owned(), cells[1].to_owned())),
            "{}: duplicate sample {} {}",
            path.display(),
            cells[0],
            cells[1]
        );
        rows += 1;
    }
    rows
}

/// SIGINT in the middle of a long run: exit 130, whole CSV rows, and a summary that says the
/// run was interrupted and when; a second run can plot it.
#[test]
fn an_interrupted_run_leaves_whole_outputs_marked_incomplete() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("cut");
    let child = Command::new(env!("CARGO_BIN_EXE_satpep"))
        .args([
            "sim",
            "-q",
            "--out",
            out.to_str().unwrap(),
            "--set",
            // Long enough to be cut, within the sampling bound (10⁷ rows: 9 series × 10⁶ samples).
            "duration=\"10000s\"",
            "--set",
            "stop_when_done=false",
            "--set",
            "output.interval=\"10ms\"",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until rows are being written, then interrupt.
    let (o, stderr) = interrupt_once_written(child, &out.join("flows.csv"), 200_000);
    assert_eq!(o.status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("interrupted at"), "{stderr}");
    let summary = json(&out.join("summary.json"));
    assert_eq!(summary["status"], "interrupted");
    let stopped = summary["sim_time_s"].as_f64().unwrap();
    assert!(stopped > 0.0 && stopped < 100_000.0, "{stopped}");
    assert_eq!(summary["flows"].as_array().unwrap().len(), 3);
    assert!(out.join("run.json").exists());
    let rows = check_csv(&out.join("flows.csv"));
    assert!(rows > 1_000, "{rows}");
    check_csv(&out.join("links.csv"));
    // The last sample is at the stop time, within one interval.
    let flows = read(&out.join("flows.csv"));
    let last: f64 = flows
        .lines()
        .last()
        .unwrap()
        .split(',')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        (stopped - last).abs() <= 0.010 + 1e-9,
        "{last} vs {stopped}"
    );
    let o = satpep(&["plot", out.to_str().unwrap()], dir.path());
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

/// A run whose duration falls on a sample instant writes that instant once, and the last
/// throughput sample covers its true interval.
#[test]
fn a_run_ending_on_a_sample_writes_it_once() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r");
    let o = satpep(
        &[
            "sim",
            "-q",
            "--out",
            out.to_str().unwrap(),
            "--set",
            "duration=\"5s\"",
            "--set",
            "stop_when_done=false",
            "--set",
            "output.interval=\"100ms\"",
        ],
        dir.path(),
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // 0.0, 0.1, …, 5.0: 51 samples per flow and per link.
    let s = json(&out.join("summary.json"));
    let (flows, links) = (
        s["flows"].as_array().unwrap(),
        s["links"].as_array().unwrap(),
    );
    assert_eq!(check_csv(&out.join("flows.csv")), 51 * flows.len());
    assert_eq!(check_csv(&out.join("links.csv")), 51 * links.len());
    assert_eq!(json(&out.join("summary.json"))["status"], "complete");
}

#[test]
fn a_used_out_folder_is_refused_unless_forced() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r");
    let o5 = ["--set", "duration=\"5s\"", "--set", "stop_when_done=false"];
    let run = |extra: &[&str]| {
        let mut args = vec!["sim", "-q", "--out", out.to_str().unwrap()];
        args.extend_from_slice(extra);
        satpep(&args, dir.path())
    };
    assert!(run(&[]).status.success());
    let first = json(&out.join("summary.json"))["sim_time_s"].clone();
    std::fs::write(out.join("notes.txt"), "stale").unwrap();
    let o = run(&o5);
    assert_eq!(o.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(
        stderr.contains("not empty") && stderr.contains("--force"),
        "{stderr}"
    );
    assert_eq!(
        json(&out.join("summary.json"))["sim_time_s"],
        first,
        "untouched"
    );
    let mut forced = o5.to_vec();
    forced.push("--force");
    // A file satpep did not write stops --force too, and nothing is removed (issue 36).
    let o = run(&forced);
    assert_eq!(o.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(stderr.contains("did not write (notes.txt)"), "{stderr}");
    assert_eq!(
        std::fs::read_to_string(out.join("notes.txt")).unwrap(),
        "stale"
    );
    assert_eq!(json(&out.join("summary.json"))["sim_time_s"], first);
    // Only satpep's own kinds of file: --force replaces them.
    std::fs::remove_file(out.join("notes.txt")).unwrap();
    std::fs::write(out.join("old_flows.csv"), "stale").unwrap();
    assert!(run(&forced).status.success());
    assert!(
        !out.join("old_flows.csv").exists(),
        "--force clears the folder"
    );
    assert_eq!(json(&out.join("summary.json"))["sim_time_s"], 5.0);
}

/// `--replay run.json` repeats the run: every output file byte for byte.
#[test]
fn replay_gives_byte_identical_outputs() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a");
    let b = dir.path().join("b");
    let o = satpep(
        &[
            "sim",
            "-q",
            "--out",
            a.to_str().unwrap(),
            "--seed",
            "7",
            "--set",
            "link.forward.error={ model = \"per\", per = 0.01 }",
            "--set",
            "output.pcap=[\"forward\"]",
        ],
        dir.path(),
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let run_json = a.join("run.json");
    let o = satpep(
        &[
            "sim",
            "-q",
            "--replay",
            run_json.to_str().unwrap(),
            "--out",
            b.to_str().unwrap(),
        ],
        dir.path(),
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let mut names: Vec<_> = std::fs::read_dir(&a)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    names.sort();
    assert!(names.len() >= 6, "{names:?}");
    for n in &names {
        let (x, y) = (
            std::fs::read(a.join(n)).unwrap(),
            std::fs::read(b.join(n)).unwrap(),
        );
        assert!(x == y, "{n:?} differs after replay");
    }
    // Retransmissions happened: the replay reproduced a random run, not a trivial one.
    let s = json(&a.join("summary.json"));
    assert!(s["flows"][0]["retransmissions"].as_u64().unwrap() > 0);
    // Overrides make no sense with a replay.
    let o = satpep(
        &["sim", "--replay", run_json.to_str().unwrap(), "--seed", "3"],
        dir.path(),
    );
    assert_eq!(o.status.code(), Some(2));
    let o = satpep(&["sim", "--replay", "missing.json"], dir.path());
    assert_eq!(o.status.code(), Some(2));
}

/// `--flows` takes several values, as its help shows, separated by spaces or commas.
#[test]
fn bench_takes_several_flow_counts() {
    let dir = tempfile::tempdir().unwrap();
    for args in [&["1", "2"][..], &["1,2"][..]] {
        let mut a = vec!["bench", "--json", "--seconds", "1", "--flows"];
        a.extend_from_slice(args);
        let o = satpep(&a, dir.path());
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let names: Vec<String> = String::from_utf8_lossy(&o.stdout)
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["scenario"].to_string())
            .collect();
        assert_eq!(names, ["\"dumbbell-1\"", "\"dumbbell-2\"", "\"default\""]);
    }
}

/// Every command given a path that does not exist fails with exit 2 and names it.
#[test]
fn missing_paths_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    for args in [
        &["sim", "nope.toml"][..],
        &["sim", "--replay", "nope/run.json"],
        &["tcp-script", "nope.pkt"],
        &["emu", "nope.toml"],
        &["plot", "nope"],
    ] {
        let o = satpep(args, dir.path());
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains("nope"), "{args:?}: {stderr}");
    }
}

/// SIGINT during a sweep: runs under way end whole and marked interrupted, runs not started
/// are skipped, sweep.csv is written (here with no complete run), exit 130.
#[test]
fn an_interrupted_sweep_writes_whole_outputs() {
    let dir = tempfile::tempdir().unwrap();
    let sweep = format!(
        "{}\n[sweep]\nseed = [1, 2, 3, 4, 5, 6, 7, 8]\n",
        satpep_scenario::default_scenario_text()
    );
    std::fs::write(dir.path().join("s.toml"), sweep).unwrap();
    let out = dir.path().join("sw");
    let child = Command::new(env!("CARGO_BIN_EXE_satpep"))
        .args(["sim", "s.toml", "-q", "--jobs", "2", "--out"])
        .arg(&out)
        .args([
            "--set",
            "duration=\"10000s\"",
            "--set",
            "stop_when_done=false",
        ])
        .current_dir(dir.path())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (o, stderr) = interrupt_once_written(child, &out.join("run-000/flows.csv"), 100_000);
    assert_eq!(o.status.code(), Some(130), "{stderr}");
    assert!(
        stderr.contains("sweep.csv holds the 0 of 8 runs"),
        "{stderr}"
    );
    let csv = read(&out.join("sweep.csv"));
    assert_eq!(csv.lines().count(), 1, "header only: {csv}");
    let started: Vec<_> = (0..8)
        .map(|i| out.join(format!("run-{i:03}")))
        .filter(|d| d.exists())
        .collect();
    assert!(!started.is_empty() && started.len() < 8, "{started:?}");
    for d in &started {
        assert_eq!(json(&d.join("summary.json"))["status"], "interrupted");
        check_csv(&d.join("flows.csv"));
    }
}
