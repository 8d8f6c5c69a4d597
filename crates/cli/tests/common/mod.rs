//! What every test of the `satpep` binary needs: run it as a user would.

use std::path::Path;
use std::process::{Command, Output};

/// `satpep ARGS…` in `cwd`, to completion.
pub fn satpep(args: &[&str], cwd: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_satpep"))
        .args(args)
        .current_dir(cwd)
        .output()
        .expect("satpep runs")
}
