//! `satpep reproduce` as a user runs it: argument errors, the staleness check on a changed doc,
//! and the real docs check (every paper, 3.6–6.4 min of release-mode wall time on two cores).

use std::path::{Path, PathBuf};

mod common;
use common::satpep;

fn docs() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/reproductions")
}

#[test]
fn unknown_paper_missing_docs_dir_and_no_paper_exit_2() {
    let dir = tempfile::tempdir().expect("tempdir");
    let o = satpep(&["reproduce", "aroar"], dir.path());
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("unknown paper `aroar`"), "{err}");
    assert!(err.contains("karaliopoulos"), "lists the papers: {err}");
    let o = satpep(
        &["reproduce", "arora", "--check", "no/such/dir"],
        dir.path(),
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("no/such/dir"));
    let o = satpep(&["reproduce"], dir.path());
    assert_eq!(o.status.code(), Some(2));
}

/// arora.md as committed passes; with one number of a block changed it fails, naming the line
/// and both numbers; --update puts the run's number back.
#[test]
fn check_fails_on_a_changed_number_in_a_copy_of_arora_md_and_update_repairs_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path().join("docs");
    std::fs::create_dir(&d).expect("mkdir");
    let real = std::fs::read_to_string(docs().join("arora.md")).expect("arora.md");
    std::fs::write(d.join("arora.md"), &real).expect("write");
    let out = dir.path().join("out");
    let args = |mode: &str| {
        [
            "reproduce",
            "arora",
            "--out",
            out.to_str().expect("utf-8"),
            mode,
            d.to_str().expect("utf-8"),
        ]
        .map(str::to_string)
    };
    let run = |mode: &str| {
        let a = args(mode);
        let a: Vec<&str> = a.iter().map(String::as_str).collect();
        satpep(&a, dir.path())
    };
    let o = run("--check");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));

    // The spoofing row of the first table: "| spoofing | 766 | 929 | …" → 767.
    let (line, _) = real
        .lines()
        .enumerate()
        .find(|(_, l)| l.starts_with("| spoofing | 766 |"))
        .expect("arora.md shows the spoofing row");
    let changed = real.replacen("| spoofing | 766 |", "| spoofing | 767 |", 1);
    std::fs::write(d.join("arora.md"), &changed).expect("write");
    let o = run("--check");
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    let want = format!(
        "arora.md:{}: arora:table acks2_28k8: the doc has `767`, the run gives `766` (column 2)",
        line + 1
    );
    assert!(err.contains(&want), "want `{want}` in:\n{err}");

    let o = run("--update");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(
        std::fs::read_to_string(d.join("arora.md")).expect("read"),
        real
    );
    assert!(d.join("img/arora_acks2_28k8.png").is_file());
}

/// The real docs: every generated block of docs/reproductions matches a fresh run of every
/// paper. Measured at 3.6–6.4 min wall in release mode on the shared 2-core machine, so it
/// runs in CI in full (the limit is ~15 min).
#[test]
fn docs_reproductions_match_a_fresh_run() {
    let dir = tempfile::tempdir().expect("tempdir");
    let docs = docs();
    let o = satpep(
        &[
            "reproduce",
            "--check",
            docs.to_str().expect("utf-8"),
            "--out",
            dir.path().to_str().expect("utf-8"),
        ],
        dir.path(),
    );
    assert!(
        o.status.success(),
        "stale docs; rerun `satpep reproduce --update docs/reproductions` and reread the prose \
         around each changed table:\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
}
