//! The results folder of a run: new or empty, or explicitly replaced, never mixed with the
//! files of an earlier run (a 60 s flows.csv beside a 5 s summary.json misleads everyone).

use std::fs;
use std::io;
use std::path::Path;

/// Marker file written into every results folder satpep creates, so that `--force` deletes
/// only folders satpep made.
pub const MARKER: &str = ".satpep";

/// Files by which a folder written before the marker existed is recognised as satpep's.
const KNOWN: [&str; 3] = ["run.json", "summary.json", "sweep.csv"];

/// Makes `dir` ready for a run: created if missing; refused if it holds anything, unless
/// `force` and it is an earlier satpep results folder, whose contents are then removed.
pub fn prepare(dir: &Path, force: bool) -> Result<(), String> {
    let shown = dir.display();
    let io = |e: io::Error| format!("{shown}: {e}");
    if dir.exists() && !dir.is_dir() {
        return Err(format!(
            "{shown} exists and is not a folder: choose another --out"
        ));
    }
    if dir.is_dir() {
        let mut entries: Vec<String> = fs::read_dir(dir)
            .map_err(io)?
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        entries.sort();
        if !entries.is_empty() {
            if !force {
                return Err(format!(
                    "{shown} is not empty ({} entries, e.g. {}): the new outputs would mix with \
                     the old ones. Use --force to replace its contents, or another --out",
                    entries.len(),
                    entries[0]
                ));
            }
            let ours = entries
                .iter()
                .any(|e| e == MARKER || KNOWN.contains(&e.as_str()));
            if !ours {
                return Err(format!(
                    "{shown} does not look like satpep results (no {MARKER}, run.json, \
                     summary.json or sweep.csv in it): not deleting it with --force; remove \
                     it yourself or choose another --out"
                ));
            }
            for e in &entries {
                let p = dir.join(e);
                if p.is_dir() && !p.is_symlink() {
                    fs::remove_dir_all(&p).map_err(io)?;
                } else {
                    fs::remove_file(&p).map_err(io)?;
                }
            }
        }
    }
    fs::create_dir_all(dir).map_err(io)?;
    fs::write(
        dir.join(MARKER),
        "satpep results folder (--force may replace it)\n",
    )
    .map_err(io)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn new_and_empty_folders_are_used_and_marked() {
        let tmp = tempfile::tempdir().unwrap();
        let new = tmp.path().join("a/b");
        prepare(&new, false).unwrap();
        assert_eq!(names(&new), [MARKER]);
        let empty = tmp.path().join("empty");
        fs::create_dir(&empty).unwrap();
        prepare(&empty, false).unwrap();
        assert_eq!(names(&empty), [MARKER]);
    }

    #[test]
    fn a_used_folder_is_refused_without_force_and_cleared_with_it() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        prepare(dir, false).unwrap();
        fs::write(dir.join("flows.csv"), "old").unwrap();
        fs::create_dir(dir.join("run-000")).unwrap();
        fs::write(dir.join("run-000/summary.json"), "{}").unwrap();
        let err = prepare(dir, false).unwrap_err();
        assert!(
            err.contains("not empty (3 entries") && err.contains("--force"),
            "{err}"
        );
        assert_eq!(names(dir).len(), 3, "nothing removed without --force");
        prepare(dir, true).unwrap();
        assert_eq!(names(dir), [MARKER]);
    }

    #[test]
    fn force_never_deletes_a_folder_satpep_did_not_write() {
        let tmp = tempfile::tempdir().unwrap();
        fs::write(tmp.path().join("thesis.tex"), "years of work").unwrap();
        let err = prepare(tmp.path(), true).unwrap_err();
        assert!(err.contains("does not look like satpep results"), "{err}");
        assert_eq!(names(tmp.path()), ["thesis.tex"]);
        // A results folder from before the marker existed is recognised by its files.
        let old = tmp.path().join("old");
        fs::create_dir(&old).unwrap();
        fs::write(old.join("summary.json"), "{}").unwrap();
        prepare(&old, true).unwrap();
        assert_eq!(names(&old), [MARKER]);
    }

    #[test]
    fn a_file_is_not_a_folder() {
        let tmp = tempfile::tempdir().unwrap();
        let f = tmp.path().join("f");
        fs::write(&f, "x").unwrap();
        assert!(prepare(&f, true).unwrap_err().contains("not a folder"));
    }
}
