//! The Python recipes of docs/outputs.md, run against real outputs: a recipe that no longer
//! works with the files satpep writes (a renamed column, duplicate rows that break `pivot`)
//! fails here. Needs python3 with pandas and matplotlib (.ci/run installs them); under
//! `CI=true` their absence is a failure.

use std::path::Path;
use std::process::Command;

fn python_has(modules: &str) -> bool {
    Command::new("python3")
        .args(["-c", &format!("import {modules}")])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// The fenced ```python blocks of a markdown text, with the line each starts on.
fn python_blocks(md: &str) -> Vec<(usize, String)> {
    let mut blocks = Vec::new();
    let mut current: Option<(usize, String)> = None;
    for (i, line) in md.lines().enumerate() {
        match (&mut current, line.trim_start()) {
            (None, l) if l.starts_with("```python") => current = Some((i + 1, String::new())),
            (Some(_), l) if l.starts_with("```") => blocks.extend(current.take()),
            (Some((_, text)), _) => {
                text.push_str(line);
                text.push('\n');
            }
            (None, _) => {}
        }
    }
    blocks
}

fn satpep(args: &[&str], cwd: &Path) {
    let o = Command::new(env!("CARGO_BIN_EXE_satpep"))
        .args(args)
        .current_dir(cwd)
        .output()
        .expect("satpep runs");
    assert!(
        o.status.success(),
        "satpep {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

#[test]
fn outputs_md_python_recipes_run_on_real_outputs() {
    if !python_has("pandas, matplotlib") {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must run the docs recipes: python3-pandas/python3-matplotlib missing (.ci/run installs them)"
        );
        println!("SKIP: python3 with pandas and matplotlib needed");
        return;
    }
    let doc = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/outputs.md");
    let md = std::fs::read_to_string(&doc).unwrap();
    let blocks = python_blocks(&md);
    assert!(blocks.len() >= 3, "recipes found: {}", blocks.len());
    let dir = tempfile::tempdir().unwrap();
    let short = ["--set", "duration=\"10s\"", "--set", "stop_when_done=false"];
    let mut args = vec!["sim", "-q", "--out", "out"];
    args.extend_from_slice(&short);
    satpep(&args, dir.path());
    // The sweep of docs/scenario.md, shortened.
    let sweep = format!(
        "{}\n[sweep]\n\"link.forward.rate\" = [\"1Mbps\", \"10Mbps\"]\n\
         \"flow.bulk1.tcp.cc\" = [\"reno\", \"cubic\"]\nseed = [1, 2, 3]\n",
        satpep_scenario::default_scenario_text()
    );
    std::fs::write(dir.path().join("sweep.toml"), sweep).unwrap();
    let mut args = vec!["sim", "sweep.toml", "-q", "--out", "sweep"];
    args.extend_from_slice(&short);
    satpep(&args, dir.path());
    for (line, code) in blocks {
        let o = Command::new("python3")
            .args(["-c", &code])
            .env("MPLBACKEND", "Agg")
            .current_dir(dir.path())
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "docs/outputs.md:{line}: recipe failed:\n{code}\n{}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
}
