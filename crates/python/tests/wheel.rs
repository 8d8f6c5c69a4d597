//! The Python package, end to end, from `cargo test`: builds the wheel with maturin, installs
//! it with pip alone into a fresh venv and runs the README's example there, then installs it
//! into a venv that sees the system's packages (pandas, pyarrow, Ray, nbclient, pytest; .ci/run
//! installs them) and runs the pytest suite in tests/python: run/sweep against the CLI, the
//! Ray cluster test and the notebooks of examples/.
//!
//! Under `CI=true` a missing maturin, Ray or any other of those packages fails the test; outside
//! CI it prints SKIP, as the repository's other tool-dependent tests do.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Instant;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn python_has(python: &str, modules: &str) -> bool {
    Command::new(python)
        .args(["-c", &format!("import {modules}")])
        .output()
        .is_ok_and(|o| o.status.success())
}

#[track_caller]
fn check(what: &str, o: std::io::Result<Output>) -> Output {
    let o = o.unwrap_or_else(|e| panic!("{what}: cannot start: {e}"));
    assert!(
        o.status.success(),
        "{what}: {}\n--- stdout\n{}\n--- stderr\n{}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    o
}

/// The `satpep` binary that `cargo test --workspace` built beside this test (same profile).
fn satpep_cli() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    let dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("target/<profile>");
    let cli = dir.join("satpep");
    assert!(
        cli.exists(),
        "{} not built: run `cargo test --workspace` (or `cargo build -p satpep` with this profile)",
        cli.display()
    );
    cli
}

/// The first ```python block of a markdown file.
fn first_python_block(md: &str) -> String {
    let start = md.find("```python\n").expect("a ```python block") + "```python\n".len();
    let len = md[start..].find("```").expect("closing ```");
    md[start..start + len].to_owned()
}

#[test]
fn wheel_installs_with_pip_and_python_tests_pass() {
    let needed = "maturin, pandas, pyarrow, ray, nbclient, nbformat, ipykernel, pytest, matplotlib";
    if !python_has("python3", needed) {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must run the Python tests: python3 lacks one of {needed} (.ci/run installs them)"
        );
        println!("SKIP: python3 with {needed} needed");
        return;
    }
    let root = workspace();
    let tmp = tempfile::tempdir().unwrap();
    let profile_release = !cfg!(debug_assertions);

    // maturin's cargo shares target/ with the outer `cargo test` (which no longer holds its lock
    // while tests run), so it reuses what that built; `timeout` turns a hang into a failure.
    let t = Instant::now();
    let wheels = tmp.path().join("wheels");
    let mut build = Command::new("timeout");
    build
        .args([
            "1200",
            "python3",
            "-m",
            "maturin",
            "build",
            "--quiet",
            "--manifest-path",
        ])
        .arg(root.join("crates/python/Cargo.toml"))
        .arg("--out")
        .arg(&wheels)
        .args(["--interpreter", "python3"]);
    if profile_release {
        build.arg("--release");
    }
    check("maturin build", build.output());
    let wheel = std::fs::read_dir(&wheels)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "whl"))
        .expect("a .whl");
    let name = wheel.file_name().unwrap().to_string_lossy().into_owned();
    assert!(
        name.contains("abi3"),
        "{name}: one wheel for every CPython >= 3.9"
    );
    println!("wheel {name} built in {:.0} s", t.elapsed().as_secs_f64());

    // A fresh venv: pip alone brings pandas and numpy from the index; then the README example.
    let t = Instant::now();
    let fresh = tmp.path().join("fresh");
    check(
        "venv",
        Command::new("python3")
            .arg("-m")
            .arg("venv")
            .arg(&fresh)
            .output(),
    );
    let py = fresh.join("bin/python");
    check(
        "pip install wheel",
        Command::new(&py)
            .args([
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
            ])
            .arg(&wheel)
            .output(),
    );
    let readme = std::fs::read_to_string(root.join("crates/python/README.md")).unwrap();
    let example = first_python_block(&readme);
    let work = tmp.path().join("readme");
    std::fs::create_dir(&work).unwrap();
    let o = check(
        "README example",
        Command::new(&py)
            .args(["-c", &example])
            .current_dir(&work)
            .output(),
    );
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        stdout.contains("total_goodput_bps"),
        "README example printed:\n{stdout}"
    );
    println!(
        "fresh venv + README example: {:.0} s",
        t.elapsed().as_secs_f64()
    );

    // The suite, with the system's Ray, pyarrow, nbclient and pytest visible.
    let t = Instant::now();
    let venv = tmp.path().join("venv");
    check(
        "venv --system-site-packages",
        Command::new("python3")
            .args(["-m", "venv", "--system-site-packages"])
            .arg(&venv)
            .output(),
    );
    let py = venv.join("bin/python");
    check(
        "pip install --no-deps wheel",
        Command::new(&py)
            .args([
                "-m",
                "pip",
                "install",
                "--quiet",
                "--no-deps",
                "--disable-pip-version-check",
            ])
            .arg(&wheel)
            .output(),
    );
    // The venv first on PATH: ipykernel's kernel spec starts `python`, which must be this one.
    let path = std::env::join_paths(std::iter::once(venv.join("bin")).chain(
        std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()),
    ))
    .unwrap();
    let o = Command::new(&py)
        .args([
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-rs",
            "--durations=5",
        ])
        .arg(root.join("crates/python/tests/python"))
        .env("SATPEP_CLI", satpep_cli())
        .env("SATPEP_ROOT", &root)
        .env("PATH", path)
        .env("CI", "true") // a skipped Python test is a failure here (conftest.py)
        .current_dir(tmp.path())
        .output();
    let o = check("pytest", o);
    let out = String::from_utf8_lossy(&o.stdout);
    println!("{out}");
    println!("pytest: {:.0} s", t.elapsed().as_secs_f64());
    assert!(
        !out.contains("skipped"),
        "no Python test may be skipped:\n{out}"
    );
}
