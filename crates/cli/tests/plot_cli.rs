//! `satpep plot` as a user runs it: overlays, exit codes, seed sweeps.

use std::path::Path;
use std::process::Output;

mod common;
use common::satpep;

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A 5 s run of the default scenario with `cc` into `dir/name`.
fn run(dir: &Path, name: &str, cc: &str) -> std::path::PathBuf {
    let out = dir.join(name);
    let o = satpep(
        &[
            "sim",
            "-q",
            "--out",
            out.to_str().unwrap(),
            "--set",
            "duration=\"5s\"",
            "--set",
            &format!("defaults.tcp.cc={cc}"),
        ],
        dir,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    out
}

#[test]
fn two_runs_overlay_into_out_with_lines_named_by_directory() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (
        run(dir.path(), "cubic", "cubic"),
        run(dir.path(), "reno", "reno"),
    );
    let both = dir.path().join("both");
    let (a, b, both) = (
        a.to_str().unwrap(),
        b.to_str().unwrap(),
        both.to_str().unwrap(),
    );

    // Several directories need --out: exit 2, nothing written.
    let o = satpep(&["plot", a, b], dir.path());
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--out"), "{}", stderr(&o));
    assert!(!Path::new(a).join("cwnd.png").exists());

    let o = satpep(&["plot", a, b, "--out", both], dir.path());
    assert!(o.status.success(), "{}", stderr(&o));
    let listed = String::from_utf8_lossy(&o.stdout).lines().count();
    assert_eq!(listed, 8, "cwnd, seq, queue, throughput × PNG, SVG");
    let svg = std::fs::read_to_string(Path::new(both).join("cwnd.svg")).unwrap();
    for label in ["cubic: bulk1", "reno: bulk1", "cubic: bulk3", "reno: bulk3"] {
        assert!(
            svg.contains(&format!("\n{label}\n")),
            "cwnd.svg lacks {label}"
        );
    }
}

#[test]
fn missing_or_empty_directories_exit_2_and_say_why() {
    let dir = tempfile::tempdir().unwrap();
    let o = satpep(&["plot", "out/nonexistent"], dir.path());
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(stderr(&o), "error: out/nonexistent: no such directory\n");

    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let o = satpep(&["plot", "empty"], dir.path());
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        stderr(&o),
        "error: nothing to plot in empty: no flows.csv, links.csv or sweep.csv with data\n"
    );
}

#[test]
fn seed_sweep_writes_statistics_and_plots_error_bars() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("seeds.toml");
    let mut scenario = satpep_scenario::default_scenario_text().to_string();
    scenario.push_str("\n[sweep]\n\"defaults.tcp.cc\" = [\"reno\", \"cubic\"]\nseed = [1, 2, 3]\n");
    std::fs::write(&file, scenario).unwrap();
    let out = dir.path().join("sw");
    let o = satpep(
        &[
            "sim",
            file.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--set",
            "duration=\"5s\"",
            "--set",
            "link.forward.error={ model = \"per\", per = 0.01 }",
        ],
        dir.path(),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let table = String::from_utf8_lossy(&o.stdout);
    assert!(table.contains("runs"), "{table}");
    assert!(table.contains(" ± "), "{table}");
    // sweep.csv keeps one row per run; sweep_stats.csv has one per cc.
    let runs = std::fs::read_to_string(out.join("sweep.csv")).unwrap();
    assert_eq!(runs.lines().count(), 7);
    let stats = std::fs::read_to_string(out.join("sweep_stats.csv")).unwrap();
    let lines: Vec<&str> = stats.lines().collect();
    assert_eq!(lines.len(), 3, "{stats}");
    assert!(lines[0].starts_with("defaults.tcp.cc,runs,total_goodput_bps_mean,"));
    assert!(lines[1].starts_with("reno,3,"), "{}", lines[1]);
    assert!(lines[2].starts_with("cubic,3,"), "{}", lines[2]);

    let o = satpep(&["plot", out.to_str().unwrap()], dir.path());
    assert!(o.status.success(), "{}", stderr(&o));
    let svg = std::fs::read_to_string(out.join("sweep_total_goodput_bps.svg")).unwrap();
    assert!(svg.contains("mean ± 95 % CI over seeds"));
}
