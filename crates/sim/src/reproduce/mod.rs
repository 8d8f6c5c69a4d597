//! `satpep reproduce`: every table and figure of docs/reproductions, from one code path.
//!
//! [`run`] runs one paper's experiments (the scheme definitions and run loops of
//! [`crate::experiments`], or whole scenarios for Lee and Roseti), writes CSV and PNG into the
//! directory given and returns a [`Report`]: the tables as the docs show them (markdown) and one
//! [`Figure`] per image, with a digest of the data it plots. [`docs`] compares a report with the
//! generated blocks of the markdown docs and rewrites them.
//!
//! Layout of the output directory of a paper: `<name>.png` per figure, `figures/<name>.csv` (the
//! plotted series: `series,x,y`), `tables/<name>.md` per table, plus the paper's own CSV files.
//! Wall times are never part of a table: a table must be the same on every machine.

pub mod docs;
mod figure;

mod arora;
mod karaliopoulos;
mod lee;
mod roseti;
mod samaraweera;

use std::fmt;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

pub use figure::Figure;
use figure::Figures;

/// A paper of docs/reproductions.
#[derive(Clone, Copy, Debug, Eq, Ord, PartialEq, PartialOrd)]
pub enum Paper {
    /// Arora et al., DirecPC spoofing and ACK dropping (docs/reproductions/arora.md).
    Arora,
    /// Karaliopoulos et al., split TCP, Snoop, delayed duplicate ACKs over GEO.
    Karaliopoulos,
    /// Lee, Yum & Wan, TCP-SuperCharger and the WINDS channel-release anomaly.
    Lee,
    /// Roseti & Kristiansen, TCP over DVB-RCS DAMA.
    Roseti,
    /// Samaraweera, return-link optimisation (ACK compaction and friends) on DVB-S.
    Samaraweera,
}

impl Paper {
    /// Every paper, alphabetically (the order of `reproduce all`).
    pub const ALL: [Self; 5] = [
        Self::Arora,
        Self::Karaliopoulos,
        Self::Lee,
        Self::Roseti,
        Self::Samaraweera,
    ];

    /// The name used on the command line, in doc markers and as the output sub-directory.
    pub fn name(self) -> &'static str {
        match self {
            Self::Arora => "arora",
            Self::Karaliopoulos => "karaliopoulos",
            Self::Lee => "lee",
            Self::Roseti => "roseti",
            Self::Samaraweera => "samaraweera",
        }
    }

    /// The paper called `name`, if any.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|p| p.name() == name)
    }
}

impl fmt::Display for Paper {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What went wrong in a reproduction: a scenario that does not load, a run that fails, a file
/// that cannot be written. The message names the file or the run.
#[derive(Debug)]
pub struct Error(pub String);

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Error {}

impl From<String> for Error {
    fn from(s: String) -> Self {
        Self(s)
    }
}

impl From<&str> for Error {
    fn from(s: &str) -> Self {
        Self(s.to_string())
    }
}

impl From<fmt::Error> for Error {
    fn from(e: fmt::Error) -> Self {
        Self(e.to_string())
    }
}

/// Result of this module's functions.
pub type Res<T> = Result<T, Error>;

/// One table of a doc, as markdown.
#[derive(Clone, Debug, Eq, PartialEq)]
pub struct Table {
    /// Name in the doc marker (`<!-- satpep reproduce PAPER:table NAME -->`) and file stem.
    pub name: String,
    /// The markdown lines, without a trailing newline.
    pub markdown: String,
}

/// Everything one paper's reproduction produced.
#[derive(Clone, Debug)]
pub struct Report {
    /// Which paper.
    pub paper: Paper,
    /// The directory written (`<out>/<paper>`).
    pub dir: PathBuf,
    /// Tables in the order the doc shows them.
    pub tables: Vec<Table>,
    /// Figures in the order they were drawn.
    pub figures: Vec<Figure>,
}

impl Report {
    /// The table called `name`.
    pub fn table(&self, name: &str) -> Option<&Table> {
        self.tables.iter().find(|t| t.name == name)
    }

    /// The generated block `name` (`figures` or a table's name), as the doc must hold it.
    pub fn block(&self, name: &str) -> Option<String> {
        if name == "figures" {
            return Some(self.figures_table());
        }
        self.table(name).map(|t| t.markdown.clone())
    }

    /// The `figures` block: one row per image, with the data that is checked instead of the
    /// PNG bytes (number of series and points, and a digest of `figures/<name>.csv`).
    pub fn figures_table(&self) -> String {
        let rows = self
            .figures
            .iter()
            .map(|f| {
                vec![
                    format!("[{}](img/{})", f.name, f.doc_image()),
                    f.series.to_string(),
                    f.points.to_string(),
                    format!("`{:016x}`", f.digest),
                ]
            })
            .collect();
        md_table(&["figure", "series", "points", "data digest"], rows)
    }
}

/// Run every experiment of `paper`, writing into `<out>/<paper>/`. Uses every core.
pub fn run(paper: Paper, out: &Path) -> Res<Report> {
    let dir = out.join(paper.name());
    for d in [dir.clone(), dir.join("tables"), dir.join("figures")] {
        std::fs::create_dir_all(&d).map_err(|e| format!("{}: {e}", d.display()))?;
    }
    let mut figs = Figures::new(paper, &dir);
    let tables = match paper {
        Paper::Arora => arora::run(&dir, &mut figs)?,
        Paper::Karaliopoulos => karaliopoulos::run(&dir, &mut figs)?,
        Paper::Lee => lee::run(&dir, &mut figs)?,
        Paper::Roseti => roseti::run(&dir, &mut figs)?,
        Paper::Samaraweera => samaraweera::run(&dir, &mut figs)?,
    };
    for t in &tables {
        write(
            &dir.join("tables").join(format!("{}.md", t.name)),
            &t.markdown,
        )?;
    }
    let report = Report {
        paper,
        dir,
        tables,
        figures: figs.into_vec(),
    };
    write(
        &report.dir.join("tables/figures.md"),
        &report.figures_table(),
    )?;
    Ok(report)
}

/// Run `scenario` to its end with its outputs (series, summary) in `dir`.
fn run_scenario(
    scenario: &satpep_scenario::Scenario,
    dir: &Path,
) -> Result<satpep_output::Summary, String> {
    let ctx = |e: std::io::Error| format!("{}: {e}", dir.display());
    let mut sim = crate::Simulation::new(scenario);
    sim.set_outputs(crate::Outputs::create(dir, scenario).map_err(ctx)?);
    let summary = sim.run(|_| {}).map_err(ctx)?.summary;
    summary.write_json(dir).map_err(ctx)?;
    Ok(summary)
}

/// Load scenario `text` (called `name` in errors) with `--set`-style overrides.
fn load(text: &str, name: &str, set: &[String]) -> Res<satpep_scenario::Loaded> {
    satpep_scenario::load_str(text, name, set).map_err(|e| Error(format!("{name}: {e}")))
}

/// Index of the node called `name` in `scenario` (called `file` in the error).
fn node(scenario: &satpep_scenario::Scenario, name: &str, file: &str) -> Res<usize> {
    scenario
        .nodes
        .iter()
        .position(|n| n.name == name)
        .ok_or_else(|| Error(format!("{file}: no node `{name}`")))
}

/// Write `text` to `path`, the error naming the file.
fn write(path: &Path, text: &str) -> Res<()> {
    std::fs::write(path, text).map_err(|e| Error(format!("{}: {e}", path.display())))
}

/// A markdown table (`| a | b |` lines), no trailing newline.
fn md_table(header: &[&str], rows: Vec<Vec<String>>) -> String {
    let mut s = format!("| {} |\n|", header.join(" | "));
    s.push_str(&"---|".repeat(header.len()));
    for r in rows {
        // NOTE: writing to a String cannot fail.
        let _ = write!(s, "\n| {} |", r.join(" | "));
    }
    s
}

/// A table whose rows are also the series of a categorical figure: one row (and series) per
/// scheme, one column per category (x = 0, 1, 2, … on the figure).
struct Grid {
    header: Vec<String>,
    decimals: usize,
    rows: Vec<Vec<String>>,
    series: figure::Series,
}

impl Grid {
    /// `corner` heads the label column; `columns` name the categories.
    fn new(corner: &str, columns: impl IntoIterator<Item = String>, decimals: usize) -> Self {
        let mut header = vec![corner.to_string()];
        header.extend(columns);
        Self {
            header,
            decimals,
            rows: Vec::new(),
            series: Vec::new(),
        }
    }

    /// One row labelled `label` in the table and `legend` on the figure.
    fn row(&mut self, label: &str, legend: &str, values: &[f64]) {
        let mut row = vec![label.to_string()];
        row.extend(values.iter().map(|v| fixed(*v, self.decimals)));
        self.rows.push(row);
        let pts = values.iter().enumerate().map(|(i, v)| (i as f64, *v));
        self.series.push((legend.to_string(), pts.collect()));
    }

    /// The table called `name`, and the series for the figure.
    fn finish(self, name: &str) -> (Table, figure::Series) {
        let header: Vec<&str> = self.header.iter().map(String::as_str).collect();
        let table = Table {
            name: name.to_string(),
            markdown: md_table(&header, self.rows),
        };
        (table, self.series)
    }
}

/// `v` with `d` decimals.
fn fixed(v: f64, d: usize) -> String {
    format!("{v:.d$}")
}

/// Run `f` over `items` on every core, stopping at the first error (in input order).
fn par_map<T: Sync, R: Send>(
    items: &[T],
    f: impl Fn(&T) -> Result<R, String> + Sync,
) -> Res<Vec<R>> {
    crate::parallel::map_in_order(items, 0, |_, x| f(x))
        .into_iter()
        .collect::<Result<_, _>>()
        .map_err(Error)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paper_names_round_trip_and_unknown_names_are_none() {
        for p in Paper::ALL {
            assert_eq!(Paper::from_name(p.name()), Some(p));
        }
        assert_eq!(Paper::from_name("aroar"), None);
        assert_eq!(Paper::from_name(""), None);
    }

    #[test]
    fn md_table_has_header_rule_and_rows() {
        let t = md_table(
            &["PER", "Reno"],
            vec![
                vec!["0".into(), "472".into()],
                vec!["1e-4".into(), "452".into()],
            ],
        );
        assert_eq!(t, "| PER | Reno |\n|---|---|\n| 0 | 472 |\n| 1e-4 | 452 |");
    }
}
