//! docs/validation.md's comparison tables against ns-2, and docs/accel.md's simulator column
//! beside the emulator's, are generated blocks (`bench/doc_blocks.py`): CI reruns ns-2 and
//! satpep on every case and fails when a table differs, so a model change cannot leave the
//! figures behind.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn doc_blocks(args: &[&str]) -> Output {
    Command::new("python3")
        .arg(root().join("bench/doc_blocks.py"))
        .args(args)
        .env("SATPEP", env!("CARGO_BIN_EXE_satpep"))
        .output()
        .expect("python3 runs")
}

/// The checker itself: a block whose text is not its command's output fails, naming the file,
/// the line and both texts; `--update` writes the output and the check then passes.
#[test]
fn a_stale_block_fails_the_check_and_update_repairs_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let md = dir.path().join("doc.md");
    let text = "# t\n\n<!-- generated: printf '| a |\\n| 41 |\\n' -->\n| a |\n| 42 |\n<!-- /generated -->\ntail\n";
    std::fs::write(&md, text).expect("write");
    let path = md.to_str().expect("utf-8");
    let o = doc_blocks(&["--check", path]);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    // The line named is the block's opening marker.
    assert!(err.contains(&format!("{path}:3: ")), "{err}");
    assert!(err.contains("-| 42 |") && err.contains("+| 41 |"), "{err}");
    let o = doc_blocks(&["--update", path]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(
        std::fs::read_to_string(&md).expect("read"),
        text.replace("| 42 |", "| 41 |")
    );
    let o = doc_blocks(&["--check", path]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stdout).contains("1 generated blocks checked"));

    // A file without blocks is an error, not a pass.
    std::fs::write(&md, "no blocks\n").expect("write");
    assert_eq!(doc_blocks(&["--check", path]).status.code(), Some(1));
}

/// The three §1b tables (the fidelity cases, the slow-return sweep and the multi-flow GEO
/// queue, 20 seeds each) match a fresh run of ns-2 2.35 and of this build (about 10 min of wall
/// time on two cores).
#[test]
fn validation_md_ns2_tables_match_a_fresh_run() {
    let have_ns = Command::new("sh")
        .args(["-c", "command -v ns"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !have_ns {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must check docs/validation.md against ns-2: install Debian's ns2 (.ci/run does)"
        );
        println!("SKIP: needs ns (Debian package ns2)");
        return;
    }
    let doc = root().join("docs/validation.md");
    let o = doc_blocks(&["--check", doc.to_str().expect("utf-8")]);
    assert!(
        o.status.success(),
        "stale tables in docs/validation.md; rerun `bench/doc_blocks.py --update \
         docs/validation.md` and reread the prose around them:\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("3 generated blocks checked"),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
}

/// docs/accel.md's goodput-against-PER table: its sim column is rerun here (about 10 s), so a
/// change to the TCP model or the accelerated PEP cannot leave it behind; the emu column is the
/// committed measurement it is compared with (`bench/accel/emu-per-sweep.csv`).
#[test]
fn accel_md_per_sweep_table_matches_a_fresh_run() {
    let doc = root().join("docs/accel.md");
    let o = doc_blocks(&["--check", doc.to_str().expect("utf-8")]);
    assert!(
        o.status.success(),
        "stale table in docs/accel.md; rerun `SATPEP=target/release/satpep bench/doc_blocks.py \
         --update docs/accel.md` and reread the prose around it:\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("1 generated blocks checked"),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
}
