//! The state file: what a running daemon changed that outlives it, written *before* the change,
//! so that the next start (or `--cleanup`) can undo it after a `kill -9` or a power cut.
//!
//! Rules and tables need no record (they are found by their numbers, [`crate::routing`], and
//! the kernel split engine's nftables table by the instance's name); TUN
//! devices vanish with the process. What remains is the machine-wide sysctls the daemon had to
//! change (`ip_forward`), with their old values, and the daemon's pid,
//! so that a second instance with the same name is refused instead of tearing the first down.

use std::io;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// Where state files live (`/run` is emptied at boot, as the changes they record are).
pub const STATE_DIR: &str = "/run/satpep";

/// One instance's record.
#[derive(Clone, Debug, Default, Deserialize, Eq, PartialEq, Serialize)]
pub struct State {
    /// The daemon that wrote it.
    pub pid: u32,
    /// `(sysctl path under /proc/sys, value before the daemon changed it)`.
    pub restore: Vec<(String, String)>,
}

/// The state file of instance `name`.
pub fn path(dir: &Path, name: &str) -> PathBuf {
    dir.join(format!("{name}.json"))
}

/// The journal of split connections of instance `name` (see [`crate::orphans`]).
pub fn journal_path(dir: &Path, name: &str) -> PathBuf {
    dir.join(format!("{name}.flows"))
}

/// Replace `file` with `text` atomically.
pub fn write_atomic(file: &Path, text: &str) -> io::Result<()> {
    if let Some(dir) = file.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let tmp = file.with_extension("tmp");
    std::fs::write(&tmp, text)?;
    std::fs::rename(&tmp, file)
}

/// Read a state file; `Ok(None)` when there is none. A file that cannot be parsed is an error
/// (nothing is guessed about what to restore).
pub fn read(file: &Path) -> io::Result<Option<State>> {
    match std::fs::read_to_string(file) {
        Ok(text) => serde_json::from_str(&text)
            .map(Some)
            .map_err(|e| io::Error::other(format!("{}: {e}", file.display()))),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// The sysctls a state file may ask to restore: exactly those a daemon changes
/// ([`global_changes`]). Anything else in a `restore` list (another `/proc/sys` path, a `..`)
/// was not written by a daemon and is never applied.
pub const RESTORABLE: [&str; 1] = ["net/ipv4/ip_forward"];

/// What the next start finds in a state file.
#[derive(Debug, Eq, PartialEq)]
pub enum Found {
    /// No file: nothing to undo.
    Nothing,
    /// A predecessor's state; `refused` lists the entries of its `restore` list that are not
    /// [`RESTORABLE`] or whose value is not a number (they are left out of `state`).
    State {
        /// What may be applied.
        state: State,
        /// What was left out, as written.
        refused: Vec<(String, String)>,
    },
    /// A file that is not a state file (damaged, empty, foreign): it was renamed to the path
    /// given, so that neither this start nor `--cleanup` stops on it again.
    SetAside(PathBuf, String),
}

/// Read the state file of a predecessor for the next start or `--cleanup`: checked against
/// [`RESTORABLE`], and a damaged one set aside (renamed `<file>.damaged`) instead of stopping
/// every later start (a crash loop under `Restart=always`).
pub fn read_checked(file: &Path) -> io::Result<Found> {
    let text = match std::fs::read_to_string(file) {
        Ok(t) => t,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Found::Nothing),
        Err(e) if e.kind() == io::ErrorKind::InvalidData => String::new(),
        Err(e) => return Err(e),
    };
    match serde_json::from_str::<State>(&text) {
        Ok(mut state) => {
            let (ok, refused): (Vec<_>, Vec<_>) = state.restore.drain(..).partition(|(k, v)| {
                RESTORABLE.contains(&k.as_str())
                    && !v.is_empty()
                    && v.len() <= 20
                    && v.bytes().all(|b| b.is_ascii_digit())
            });
            state.restore = ok;
            Ok(Found::State { state, refused })
        }
        Err(e) => {
            let aside = file.with_extension("json.damaged");
            std::fs::rename(file, &aside)?;
            Ok(Found::SetAside(aside, e.to_string()))
        }
    }
}

/// Write `state` atomically (a temporary file renamed over the old one).
pub fn write(file: &Path, state: &State) -> io::Result<()> {
    if let Some(dir) = file.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let tmp = file.with_extension("json.tmp");
    let text = serde_json::to_string_pretty(state).map_err(io::Error::other)?;
    std::fs::write(&tmp, text)?;
    std::fs::rename(&tmp, file)
}

/// Whether `pid` is a live satpep process: not a recycled pid of something else, and not a
/// killed one whose parent has not reaped it yet (a zombie keeps its name).
pub fn is_live_satpep(pid: u32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    is_live_satpep_stat(&stat)
}

/// [`is_live_satpep`] on the text of `/proc/<pid>/stat`: `pid (comm) state …`.
fn is_live_satpep_stat(stat: &str) -> bool {
    let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else {
        return false;
    };
    let comm = &stat[open + 1..close];
    let state = stat[close + 1..].trim_start().chars().next();
    comm.starts_with("satpep") && !matches!(state, Some('Z' | 'X' | 'x') | None)
}

/// Read sysctl `key` (path under /proc/sys).
pub fn read_sysctl(key: &str) -> io::Result<String> {
    std::fs::read_to_string(Path::new("/proc/sys").join(key)).map(|s| s.trim().to_owned())
}

/// Write sysctl `key`.
pub fn write_sysctl(key: &str, value: &str) -> io::Result<()> {
    std::fs::write(Path::new("/proc/sys").join(key), value)
        .map_err(|e| io::Error::new(e.kind(), format!("{key}: {e}")))
}

/// Machine-wide sysctl changes the daemon needs, from the current value: forwarding on.
/// Reverse-path filtering is left as the host has it, whatever it is: the daemon writes each
/// packet into the TUN device of the interface it leaves by, which the reverse lookup from
/// that interface resolves to (`RoutingPlan::install_script`'s rule), so strict and loose
/// filtering accept it (earlier versions relaxed a strict `all` to loose, which did not help:
/// the kernel refuses any packet on an address-less device under loose filtering unless the
/// source routes back through that device).
pub fn global_changes(ip_forward: &str) -> Vec<(String, String, String)> {
    let mut v = Vec::new();
    if ip_forward != "1" {
        v.push((
            "net/ipv4/ip_forward".into(),
            ip_forward.to_owned(),
            "1".to_owned(),
        ));
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_state_file_restores_only_the_daemons_own_sysctls_and_a_damaged_one_is_set_aside() {
        // Issue 36 (6): the restore list was applied unchecked (any /proc/sys path, `..`), and
        // a damaged or empty file stopped both start and --cleanup.
        let dir = tempfile::tempdir().unwrap();
        let file = path(dir.path(), "gw");
        assert_eq!(read_checked(&file).unwrap(), Found::Nothing);
        std::fs::write(
            &file,
            r#"{"pid": 7, "restore": [["net/ipv4/ip_forward", "0"],
               ["kernel/core_pattern", "|/tmp/x"], ["net/ipv4/../../kernel/modprobe", "/tmp/m"],
               ["net/ipv4/ip_forward", "1; rm"]]}"#,
        )
        .unwrap();
        let Found::State { state, refused } = read_checked(&file).unwrap() else {
            panic!("a state");
        };
        assert_eq!(state.pid, 7);
        assert_eq!(
            state.restore,
            vec![("net/ipv4/ip_forward".into(), "0".into())]
        );
        assert_eq!(refused.len(), 3, "{refused:?}");
        for damaged in ["", "{", "\u{0}\u{1}", "[1, 2]", "{\"pid\": \"x\"}"] {
            std::fs::write(&file, damaged).unwrap();
            let Found::SetAside(aside, why) = read_checked(&file).unwrap() else {
                panic!("{damaged:?} was read as a state");
            };
            assert!(!file.exists() && aside.exists(), "{damaged:?}");
            assert!(!why.is_empty());
            assert_eq!(
                read_checked(&file).unwrap(),
                Found::Nothing,
                "the next start goes on"
            );
        }
        // Bytes that are not UTF-8 are damaged too.
        std::fs::write(&file, [0xff, 0xfe, 0x00]).unwrap();
        assert!(matches!(read_checked(&file).unwrap(), Found::SetAside(..)));
    }

    #[test]
    fn only_what_differs_is_changed_and_the_old_value_kept() {
        assert!(global_changes("1").is_empty());
        assert_eq!(
            global_changes("0"),
            vec![("net/ipv4/ip_forward".into(), "0".into(), "1".into())]
        );
    }

    #[test]
    fn a_zombie_or_another_program_is_not_a_running_daemon() {
        assert!(is_live_satpep_stat("6565 (satpep) S 1 6565 6565 0 -1"));
        assert!(is_live_satpep_stat("6565 (satpep) R 1"));
        assert!(!is_live_satpep_stat("6565 (satpep) Z 1 6565"));
        assert!(!is_live_satpep_stat("6565 (bash) S 1"));
        assert!(!is_live_satpep_stat("6565 (satpep) "));
        assert!(!is_live_satpep_stat("garbage"));
        assert!(
            is_live_satpep(std::process::id())
                == std::fs::read_to_string("/proc/self/comm")
                    .unwrap()
                    .starts_with("satpep")
        );
    }

    #[test]
    fn a_state_file_round_trips_and_a_missing_one_is_none() {
        let dir = std::env::temp_dir().join(format!("satpep-state-test-{}", std::process::id()));
        let f = path(&dir, "gw");
        assert_eq!(read(&f).unwrap(), None);
        let s = State {
            pid: 42,
            restore: vec![("net/ipv4/ip_forward".into(), "0".into())],
        };
        write(&f, &s).unwrap();
        assert_eq!(read(&f).unwrap(), Some(s));
        std::fs::write(&f, "{not json").unwrap();
        assert!(
            read(&f).is_err(),
            "a damaged file is an error, not an empty state"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
