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
            // Every entry, all the way down, must be a kind of file satpep writes: one
            // foreign entry (a scenario, a notebook, `.git`) and nothing at all is removed.
            let mut foreign = Vec::new();
            for e in &entries {
                find_foreign(&dir.join(e), e, &mut foreign).map_err(io)?;
            }
            if !foreign.is_empty() {
                let more = match foreign.len() {
                    1 => String::new(),
                    n => format!(" and {} more", n - 1),
                };
                return Err(format!(
                    "{shown} holds files satpep did not write ({}{more}): not deleting \
                     anything with --force; move them out or choose another --out",
                    foreign[0]
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

/// Extensions of the files satpep writes into a results folder: tables and series (csv),
/// summaries and run records (json), captures (pcapng), plots (png, svg), program logs (log).
const OUTPUT_EXTENSIONS: [&str; 6] = ["csv", "json", "pcapng", "png", "svg", "log"];

/// Collects into `foreign` (as paths relative to the results folder) every entry under
/// `path` that satpep does not write: anything but the marker, a regular file with one of
/// [`OUTPUT_EXTENSIONS`] (or an atomic write's `.NAME.tmp` of one) or a visible folder of such
/// files (symbolic links included, since satpep never makes one).
fn find_foreign(path: &Path, shown: &str, foreign: &mut Vec<String>) -> io::Result<()> {
    let meta = fs::symlink_metadata(path)?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy())
        .unwrap_or_default();
    if meta.is_dir() && !name.starts_with('.') {
        let mut children: Vec<_> = fs::read_dir(path)?
            .map(|e| e.map(|e| e.file_name().to_string_lossy().into_owned()))
            .collect::<io::Result<_>>()?;
        children.sort();
        for c in children {
            find_foreign(&path.join(&c), &format!("{shown}/{c}"), foreign)?;
        }
        return Ok(());
    }
    let of_output_kind = |n: &str| {
        Path::new(n)
            .extension()
            .is_some_and(|x| OUTPUT_EXTENSIONS.iter().any(|o| x == *o))
    };
    // `.summary.json.tmp`: what an atomic write left behind when the run was killed.
    let temporary = name
        .strip_prefix('.')
        .and_then(|n| n.strip_suffix(".tmp"))
        .is_some_and(of_output_kind);
    let output = meta.is_file()
        && (name == MARKER || temporary || (!name.starts_with('.') && of_output_kind(&name)));
    if !output {
        foreign.push(shown.to_string());
    }
    Ok(())
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
    fn force_deletes_nothing_when_a_results_folder_holds_foreign_files() {
        // Issue 36 (1): a run.json beside a scenario, docs/ and .git/ once let --force wipe
        // them all.
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        fs::write(dir.join("run.json"), "{}").unwrap();
        fs::write(dir.join("base.toml"), "[scenario]").unwrap();
        fs::create_dir_all(dir.join(".git/objects")).unwrap();
        fs::create_dir_all(dir.join("docs")).unwrap();
        fs::write(dir.join("docs/notes.md"), "mine").unwrap();
        let before = names(dir);
        let err = prepare(dir, true).unwrap_err();
        assert!(err.contains("did not write (.git and 2 more)"), "{err}");
        assert_eq!(names(dir), before, "nothing removed");
        assert_eq!(
            fs::read_to_string(dir.join("docs/notes.md")).unwrap(),
            "mine"
        );
        // A marked folder is no licence either: one foreign file deep in a run folder stops it.
        let marked = dir.join("marked");
        prepare(&marked, false).unwrap();
        fs::create_dir_all(marked.join("run-000/plots")).unwrap();
        fs::write(marked.join("run-000/plots/cwnd.png"), "png").unwrap();
        fs::write(marked.join("run-000/analysis.py"), "import this").unwrap();
        let err = prepare(&marked, true).unwrap_err();
        assert!(err.contains("(run-000/analysis.py)"), "{err}");
        assert!(marked.join("run-000/plots/cwnd.png").exists());
        // Symbolic links are never satpep's, whatever their name.
        fs::remove_file(marked.join("run-000/analysis.py")).unwrap();
        std::os::unix::fs::symlink(dir.join("base.toml"), marked.join("flows.csv")).unwrap();
        let err = prepare(&marked, true).unwrap_err();
        assert!(err.contains("(flows.csv)"), "{err}");
        fs::remove_file(marked.join("flows.csv")).unwrap();
        // With only satpep's own kinds of file left (a killed run's temporary included), it
        // is replaced.
        fs::write(marked.join("run-000/.summary.json.tmp"), "{").unwrap();
        prepare(&marked, true).unwrap();
        assert_eq!(names(&marked), [MARKER]);
        assert_eq!(
            fs::read_to_string(dir.join("base.toml")).unwrap(),
            "[scenario]"
        );
    }

    #[test]
    fn a_file_is_not_a_folder() {
        let tmp = tempfile::tempdir().unwrap();
        let f = tmp.path().join("f");
        fs::write(&f, "x").unwrap();
        assert!(prepare(&f, true).unwrap_err().contains("not a folder"));
    }
}
