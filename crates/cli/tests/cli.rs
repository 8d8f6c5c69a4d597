//! The `satpep` binary as a user runs it.

use std::path::Path;
use std::process::Output;

mod common;
use common::satpep;

fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn default_scenario_prints_the_table_and_writes_every_output() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let o = satpep(
        &[
            "sim",
            "--out",
            out.to_str().unwrap(),
            "--set",
            "output.pcap=[\"forward\"]",
        ],
        dir.path(),
    );
    let (stdout, stderr) = text(&o);
    assert!(o.status.success(), "{stderr}");
    for name in ["bulk1", "bulk2", "bulk3", "forward", "return", "goodput"] {
        assert!(stdout.contains(name), "table lacks {name}:\n{stdout}");
    }
    for f in [
        "summary.json",
        "run.json",
        "flows.csv",
        "links.csv",
        "trace.pcapng",
    ] {
        let len = std::fs::metadata(out.join(f)).map(|m| m.len()).unwrap_or(0);
        assert!(len > 100, "{f} missing or tiny ({len} bytes)");
    }
    // run.json carries the resolved scenario, which loads again and gives the same results.
    let run: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("run.json")).unwrap()).unwrap();
    assert_eq!(run["seed"], 1);
    assert_eq!(run["scenario"]["link"][2]["rate"], "10Mbps");
}

#[test]
fn default_output_dir_is_under_results() {
    let dir = tempfile::tempdir().unwrap();
    let o = satpep(&["sim", "-q", "--set", "duration=\"5s\""], dir.path());
    assert!(o.status.success(), "{}", text(&o).1);
    let entries: Vec<_> = std::fs::read_dir(dir.path().join("results"))
        .unwrap()
        .flatten()
        .collect();
    assert_eq!(entries.len(), 1);
    let name = entries[0].file_name().to_string_lossy().into_owned();
    assert!(name.starts_with("default-2"), "{name}");
}

#[test]
fn bad_scenarios_exit_2_with_file_line_and_key() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.toml");
    std::fs::write(
        &bad,
        "seed = 1\n[[link]]\nname = \"x\"\nrate = \"10 furlongs\"\n",
    )
    .unwrap();
    let o = satpep(&["sim", bad.to_str().unwrap()], dir.path());
    let (_, stderr) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("bad.toml:"), "{stderr}");
    let o = satpep(&["sim", "--set", "link.nosuch.rate=1Mbps"], dir.path());
    let (_, stderr) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("--set") && stderr.contains("nosuch"),
        "{stderr}"
    );
    let o = satpep(&["sim", "/nonexistent/x.toml"], dir.path());
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn sweep_runs_every_point_and_writes_one_csv() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("sweep.toml");
    let mut text_in = satpep_scenario::default_scenario_text().to_string();
    text_in.push_str("\n[sweep]\n\"link.return.rate\" = [\"64kbps\", \"512kbps\"]\n\"defaults.tcp.cc\" = [\"reno\", \"cubic\"]\n");
    text_in = text_in.replace("duration = \"60s\"", "duration = \"10s\"");
    std::fs::write(&file, text_in).unwrap();
    let out = dir.path().join("sw");
    let o = satpep(
        &[
            "sim",
            file.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--plot",
        ],
        dir.path(),
    );
    let (stdout, stderr) = text(&o);
    assert!(o.status.success(), "{stderr}");
    let csv = std::fs::read_to_string(out.join("sweep.csv")).unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 5, "{csv}");
    assert!(
        lines[0].starts_with("run,link.return.rate,defaults.tcp.cc,"),
        "{}",
        lines[0]
    );
    assert!(lines[1].starts_with("0,64kbps,reno,"), "{}", lines[1]);
    assert!(lines[4].starts_with("3,512kbps,cubic,"), "{}", lines[4]);
    for i in 0..4 {
        assert!(out.join(format!("run-{i:03}/summary.json")).exists());
    }
    assert!(stdout.contains("512kbps"), "{stdout}");
    let pngs = std::fs::read_dir(&out)
        .unwrap()
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "png"))
        .count();
    assert!(pngs >= 1, "sweep plots missing");
    // A slower return link cannot give more goodput: the ACK clock is the bottleneck.
    let col = lines[0]
        .split(',')
        .position(|c| c == "total_goodput_bps")
        .unwrap();
    let g = |l: &str| l.split(',').nth(col).unwrap().parse::<f64>().unwrap();
    assert!(
        g(lines[1]) < g(lines[3]),
        "64 kb/s return {} vs 512 kb/s {}",
        g(lines[1]),
        g(lines[3])
    );
}

#[test]
fn plot_renders_png_and_svg_for_a_run() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("p");
    let o = satpep(
        &[
            "sim",
            "-q",
            "--out",
            out.to_str().unwrap(),
            "--set",
            "duration=\"5s\"",
        ],
        dir.path(),
    );
    assert!(o.status.success());
    let o = satpep(&["plot", out.to_str().unwrap()], dir.path());
    assert!(o.status.success(), "{}", text(&o).1);
    for f in ["cwnd.png", "cwnd.svg", "seq.png", "queue.png"] {
        let bytes = std::fs::read(out.join(f)).unwrap_or_default();
        assert!(bytes.len() > 1000, "{f}");
    }
    assert_eq!(
        &std::fs::read(out.join("cwnd.png")).unwrap()[..4],
        b"\x89PNG"
    );
}

/// Hostile or careless scenario input (issue 15) exits 2 with a located message, before any
/// run: nothing is written, inside `results/` or outside it.
#[test]
fn hostile_scenarios_exit_2_before_running() {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("a/b");
    std::fs::create_dir_all(&work).unwrap();
    let escape = work.join("escape.toml");
    std::fs::write(&escape, "name = \"../../escape\"\n").unwrap();
    let huge = work.join("huge.toml");
    std::fs::write(&huge, "# padding\n".repeat(1_700_000)).unwrap();
    let cases: [(&[&str], &str); 5] = [
        (
            &["sim", "escape.toml"],
            "escape.toml:1:1: key `name`: `../../escape` is not a usable name",
        ),
        (
            &["sim", "--set", "seed=3", "--seed", "5"],
            "--seed 5: key `seed`: --set 'seed=3' sets the seed too; give the seed once",
        ),
        (
            &["sim", "--set", "output.interval=1ns"],
            "--set 'output.interval=1ns': key `output.interval`: sampling 3 flows and 6 links",
        ),
        (
            &["sim", "huge.toml"],
            "huge.toml: the file is 17000000 bytes; at most 16777216 bytes (16 MiB)",
        ),
        (
            &["sim", "--set", "node=[]"],
            "--set 'node=[]': key `node`: the scenario has no nodes",
        ),
    ];
    for (args, want) in cases {
        let o = satpep(args, &work);
        let (_, stderr) = text(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(
            stderr.starts_with(&format!("error: {want}")),
            "{args:?}: {stderr}"
        );
    }
    let mut left: Vec<_> = walk(dir.path());
    left.sort();
    assert_eq!(left, [escape, huge], "nothing but the inputs is written");
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(walk(&path));
        } else {
            files.push(path);
        }
    }
    files
}

/// `satpep … | head`: when the reader goes away, the command ends as any Unix filter does, by
/// SIGPIPE, without a panic message (Rust ignores SIGPIPE unless told otherwise, and
/// `println!` then panics on the closed pipe).
#[test]
fn a_closed_pipe_ends_the_output_quietly() {
    use std::os::unix::process::ExitStatusExt;
    use std::process::{Command, Stdio};
    // A 2 000-flow scenario printed as TOML: far more than a pipe buffer holds.
    let mut child = Command::new(env!("CARGO_BIN_EXE_satpep"))
        .args(["bench", "--peer", "ns2", "--flows", "2000", "--print"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn satpep");
    drop(child.stdout.take()); // the reader closes before the first write
    let out = child.wait_with_output().expect("wait");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.signal(), Some(13), "{:?} {stderr}", out.status);
    assert!(!stderr.contains("panicked"), "{stderr}");
}
