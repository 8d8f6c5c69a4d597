//! Generated blocks in the markdown docs, and the staleness check over them.
//!
//! A doc holds what a run produced between two markers:
//!
//! ```text
//! <!-- satpep reproduce arora:table acks2_28k8 -->
//! | window (KiB) | 4 | 8 | … |
//! <!-- /satpep -->
//! ```
//!
//! `arora:figures` names the block listing a paper's images with their data digests. Markers
//! inside fenced code blocks are examples and are ignored. [`check`]
//! compares every block with the run and names the doc line and the first differing word (a
//! number, nearly always); [`update`] rewrites the blocks and copies the images into `img/`.

use std::collections::BTreeSet;
use std::fmt;
use std::path::{Path, PathBuf};

use super::{Error, Paper, Report, Res};

const OPEN: &str = "<!-- satpep reproduce ";
const CLOSE: &str = "<!-- /satpep -->";

/// One generated block found in a doc.
#[derive(Clone, Debug, Eq, PartialEq)]
pub struct Block {
    /// Paper named in the marker (as written; may be unknown).
    pub paper: String,
    /// Block name: a table name, or `figures`.
    pub name: String,
    /// 1-based line of the opening marker.
    pub marker_line: usize,
    /// 0-based index of the first content line, and one past the last.
    pub content: std::ops::Range<usize>,
}

impl Block {
    /// `paper:table name` or `paper:figures`, as in the marker.
    pub fn label(&self) -> String {
        if self.name == "figures" {
            format!("{}:figures", self.paper)
        } else {
            format!("{}:table {}", self.paper, self.name)
        }
    }
}

/// A block that does not match the run.
#[derive(Clone, Debug, Eq, PartialEq)]
pub struct Mismatch {
    /// The doc file.
    pub file: PathBuf,
    /// 1-based line in the doc.
    pub line: usize,
    /// The block's label (`arora:table acks2_28k8`).
    pub block: String,
    /// What differs, with the doc's and the run's word.
    pub what: String,
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}: {}: {}",
            self.file.display(),
            self.line,
            self.block,
            self.what
        )
    }
}

/// The generated blocks of `text`, or the 1-based line and reason of a malformed marker.
pub fn blocks(text: &str) -> Result<Vec<Block>, (usize, String)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    let mut fenced = false;
    while i < lines.len() {
        let line = lines[i].trim();
        // Markers inside a fenced code block are examples, not blocks.
        if line.starts_with("```") {
            fenced = !fenced;
        }
        if fenced {
            i += 1;
            continue;
        }
        if line == CLOSE {
            return Err((i + 1, "closing marker without an opening one".into()));
        }
        let Some(rest) = line.strip_prefix(OPEN) else {
            i += 1;
            continue;
        };
        let spec = rest
            .strip_suffix("-->")
            .ok_or((i + 1, "marker does not end with `-->`".to_string()))?
            .trim();
        let (paper, kind) = spec.split_once(':').ok_or((
            i + 1,
            format!("`{spec}`: expected PAPER:table NAME or PAPER:figures"),
        ))?;
        let name = match kind.split_whitespace().collect::<Vec<_>>()[..] {
            ["figures"] => "figures".to_string(),
            ["table", name] if name != "figures" => name.to_string(),
            _ => {
                return Err((
                    i + 1,
                    format!("`{spec}`: expected PAPER:table NAME or PAPER:figures"),
                ))
            }
        };
        let end = (i + 1..lines.len())
            .find(|&j| lines[j].trim() == CLOSE || lines[j].trim().starts_with(OPEN))
            .filter(|&j| lines[j].trim() == CLOSE)
            .ok_or((
                i + 1,
                format!("`{spec}`: no `{CLOSE}` before the next block"),
            ))?;
        out.push(Block {
            paper: paper.trim().to_string(),
            name,
            marker_line: i + 1,
            content: i + 1..end,
        });
        i = end + 1;
    }
    Ok(out)
}

/// Compare the blocks of `text` (the doc `file`) with `generated(paper, name)`; blocks of papers
/// not in `papers` are skipped. One mismatch per differing block, at its first differing line.
pub fn check_text(
    file: &Path,
    text: &str,
    papers: &BTreeSet<Paper>,
    generated: impl Fn(Paper, &str) -> Option<String>,
) -> Vec<Mismatch> {
    let lines: Vec<&str> = text.lines().collect();
    let found = match blocks(text) {
        Ok(b) => b,
        Err((line, what)) => {
            return vec![Mismatch {
                file: file.to_path_buf(),
                line,
                block: "marker".into(),
                what,
            }]
        }
    };
    let mut out = Vec::new();
    for b in found {
        let mismatch = |line: usize, what: String| Mismatch {
            file: file.to_path_buf(),
            line,
            block: b.label(),
            what,
        };
        let Some(paper) = Paper::from_name(&b.paper) else {
            out.push(mismatch(
                b.marker_line,
                format!("unknown paper `{}`", b.paper),
            ));
            continue;
        };
        if !papers.contains(&paper) {
            continue;
        }
        let Some(gen) = generated(paper, &b.name) else {
            out.push(mismatch(
                b.marker_line,
                format!("the run has no block `{}`", b.name),
            ));
            continue;
        };
        let doc = &lines[b.content.clone()];
        let run: Vec<&str> = gen.lines().collect();
        for k in 0..doc.len().max(run.len()) {
            let (d, r) = (doc.get(k).copied(), run.get(k).copied());
            if d == r {
                continue;
            }
            let line = b.content.start + k + 1;
            let what = match (d, r) {
                (Some(d), Some(r)) => first_difference(d, r),
                (Some(d), None) => format!("line `{d}` is not in the run's output"),
                (None, Some(r)) => format!("the run has one more line: `{r}`"),
                (None, None) => continue,
            };
            out.push(mismatch(line, what));
            break;
        }
    }
    out
}

/// The first cell (table rows) or word (other lines) in which two lines differ.
fn first_difference(doc: &str, run: &str) -> String {
    let table = doc.trim_start().starts_with('|') && run.trim_start().starts_with('|');
    let split = |s: &str| -> Vec<String> {
        if table {
            let s = s.trim().trim_start_matches('|').trim_end_matches('|');
            s.split('|').map(|c| c.trim().to_string()).collect()
        } else {
            s.split_whitespace().map(str::to_string).collect()
        }
    };
    let (d, r) = (split(doc), split(run));
    let unit = if table { "column" } else { "word" };
    for k in 0..d.len().max(r.len()) {
        match (d.get(k), r.get(k)) {
            (Some(a), Some(b)) if a == b => continue,
            (a, b) => {
                return format!(
                    "the doc has `{}`, the run gives `{}` ({unit} {})",
                    a.map_or("", String::as_str),
                    b.map_or("", String::as_str),
                    k + 1
                )
            }
        }
    }
    format!("spacing differs: the doc has `{doc}`, the run gives `{run}`")
}

/// `text` with every block of a paper in `papers` replaced by `generated(paper, name)`.
/// Blocks the run does not have are left as they are (the check reports them).
pub fn update_text(
    text: &str,
    papers: &BTreeSet<Paper>,
    generated: impl Fn(Paper, &str) -> Option<String>,
) -> Result<String, (usize, String)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out: Vec<String> = Vec::new();
    let mut next = 0;
    for b in blocks(text)? {
        let new = Paper::from_name(&b.paper)
            .filter(|p| papers.contains(p))
            .and_then(|p| generated(p, &b.name));
        let Some(new) = new else { continue };
        out.extend(lines[next..b.content.start].iter().map(|l| l.to_string()));
        out.extend(new.lines().map(str::to_string));
        next = b.content.end;
    }
    out.extend(lines[next..].iter().map(|l| l.to_string()));
    let mut s = out.join("\n");
    if text.ends_with('\n') {
        s.push('\n');
    }
    Ok(s)
}

/// The `*.md` files of `dir`, sorted.
pub fn doc_files(dir: &Path) -> Res<Vec<PathBuf>> {
    let rd = std::fs::read_dir(dir).map_err(|e| Error(format!("{}: {e}", dir.display())))?;
    let mut files: Vec<PathBuf> = rd
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    files.sort();
    Ok(files)
}

/// The papers named by the blocks of the docs in `dir` (unknown names are left out: the check
/// reports them).
pub fn papers_in(dir: &Path) -> Res<BTreeSet<Paper>> {
    let mut set = BTreeSet::new();
    for f in doc_files(dir)? {
        let text = read(&f)?;
        let found = blocks(&text).map_err(|(l, e)| Error(format!("{}:{l}: {e}", f.display())))?;
        set.extend(found.iter().filter_map(|b| Paper::from_name(&b.paper)));
    }
    Ok(set)
}

/// Check every doc of `dir` against `reports` (only the reports' papers are checked).
pub fn check(dir: &Path, reports: &[Report]) -> Res<Vec<Mismatch>> {
    let papers: BTreeSet<Paper> = reports.iter().map(|r| r.paper).collect();
    let mut out = Vec::new();
    for f in doc_files(dir)? {
        let text = read(&f)?;
        out.extend(check_text(&f, &text, &papers, |p, n| lookup(reports, p, n)));
    }
    Ok(out)
}

/// Rewrite the blocks of every doc of `dir` from `reports` and copy their images into
/// `dir/img/`. Returns the files changed.
pub fn update(dir: &Path, reports: &[Report]) -> Res<Vec<PathBuf>> {
    let papers: BTreeSet<Paper> = reports.iter().map(|r| r.paper).collect();
    let mut changed = Vec::new();
    for f in doc_files(dir)? {
        let text = read(&f)?;
        let new = update_text(&text, &papers, |p, n| lookup(reports, p, n))
            .map_err(|(l, e)| Error(format!("{}:{l}: {e}", f.display())))?;
        if new != text {
            super::write(&f, &new)?;
            changed.push(f);
        }
    }
    let img = dir.join("img");
    std::fs::create_dir_all(&img).map_err(|e| Error(format!("{}: {e}", img.display())))?;
    for fig in reports.iter().flat_map(|r| &r.figures) {
        let to = img.join(fig.doc_image());
        std::fs::copy(&fig.png, &to)
            .map_err(|e| Error(format!("{} → {}: {e}", fig.png.display(), to.display())))?;
    }
    Ok(changed)
}

fn lookup(reports: &[Report], paper: Paper, name: &str) -> Option<String> {
    reports
        .iter()
        .find(|r| r.paper == paper)
        .and_then(|r| r.block(name))
}

fn read(f: &Path) -> Res<String> {
    std::fs::read_to_string(f).map_err(|e| Error(format!("{}: {e}", f.display())))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A doc whose block holds what the run gives (fixture `fresh.md`) and one with a number
    /// changed by hand (`stale.md`, line 8: 135 → 153).
    const FRESH: &str = include_str!("fixtures/fresh.md");
    const STALE: &str = include_str!("fixtures/stale.md");
    const RUN: &str = "| window (KiB) | 4 | 8 |\n|---|---|---|\n| no enhancement | 62 | 135 |\n| spoofing | 766 | 929 |";

    fn generated(p: Paper, name: &str) -> Option<String> {
        (p == Paper::Arora && name == "throughput").then(|| RUN.to_string())
    }

    fn arora() -> BTreeSet<Paper> {
        [Paper::Arora].into_iter().collect()
    }

    #[test]
    fn fresh_fixture_passes() {
        let m = check_text(Path::new("fresh.md"), FRESH, &arora(), generated);
        assert_eq!(m, vec![]);
    }

    #[test]
    fn stale_fixture_fails_naming_the_line_and_the_number() {
        let m = check_text(Path::new("stale.md"), STALE, &arora(), generated);
        assert_eq!(m.len(), 1, "{m:?}");
        assert_eq!(m[0].line, 8);
        assert_eq!(
            m[0].to_string(),
            "stale.md:8: arora:table throughput: the doc has `153`, the run gives `135` (column 3)"
        );
    }

    #[test]
    fn blocks_of_other_papers_are_skipped() {
        let none = BTreeSet::new();
        assert_eq!(
            check_text(Path::new("stale.md"), STALE, &none, generated),
            vec![]
        );
    }

    #[test]
    fn update_turns_the_stale_fixture_into_the_fresh_one() {
        let new = update_text(STALE, &arora(), generated).expect("well-formed");
        assert_eq!(new, FRESH);
        // And is a no-op on a fresh doc.
        assert_eq!(
            update_text(FRESH, &arora(), generated).as_deref(),
            Ok(FRESH)
        );
    }

    #[test]
    fn a_missing_row_and_an_unknown_table_are_reported() {
        let short = FRESH.replace("| spoofing | 766 | 929 |\n", "");
        let m = check_text(Path::new("d.md"), &short, &arora(), generated);
        assert_eq!(m.len(), 1);
        assert_eq!(m[0].line, 9);
        assert!(m[0].what.contains("one more line"), "{}", m[0]);
        let unknown = FRESH.replace("arora:table throughput", "arora:table nope");
        let m = check_text(Path::new("d.md"), &unknown, &arora(), generated);
        assert_eq!(m[0].line, 5);
        assert!(m[0].what.contains("no block `nope`"), "{}", m[0]);
    }

    #[test]
    fn malformed_markers_are_errors_with_their_line() {
        assert_eq!(
            blocks("a\n<!-- satpep reproduce arora:table x -->\n| 1 |\n").map_err(|e| e.0),
            Err(2)
        );
        assert_eq!(blocks("<!-- /satpep -->\n").map_err(|e| e.0), Err(1));
        assert_eq!(
            blocks("<!-- satpep reproduce arora -->\n<!-- /satpep -->\n").map_err(|e| e.0),
            Err(1)
        );
        let b = blocks("x\n<!-- satpep reproduce lee:figures -->\n<!-- /satpep -->\n")
            .expect("well-formed");
        let example =
            "```text\n<!-- satpep reproduce arora:table x -->\n…\n<!-- /satpep -->\n```\n";
        assert_eq!(blocks(example), Ok(vec![]));
        assert_eq!(b[0].name, "figures");
        assert_eq!(b[0].content, 2..2);
    }
}
