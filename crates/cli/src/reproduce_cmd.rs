//! `satpep reproduce`: regenerate the tables and figures of docs/reproductions, and check or
//! update the docs' generated blocks (`satpep_sim::reproduce`).

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant as WallInstant;

use clap::Args;
use satpep_sim::reproduce::{self, docs, Paper, Report};

/// Arguments of `satpep reproduce`.
#[derive(Debug, Args)]
pub struct ReproduceArgs {
    /// Paper: arora, karaliopoulos, lee, roseti, samaraweera, or `all`. With --check or
    /// --update and no paper: every paper the docs name.
    #[arg(value_parser = parse_target)]
    paper: Option<Target>,
    /// Output directory; each paper writes CSV, PNG and tables/*.md into DIR/<paper>/.
    /// Default: results/reproduce
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Compare the generated blocks of the markdown files in DOCS (e.g. docs/reproductions)
    /// with this run; exit 1 naming the file, line and number of each stale block.
    #[arg(long, value_name = "DOCS", conflicts_with = "update")]
    check: Option<PathBuf>,
    /// Rewrite the generated blocks of the markdown files in DOCS from this run and copy the
    /// figures into DOCS/img.
    #[arg(long, value_name = "DOCS")]
    update: Option<PathBuf>,
}

/// Which papers to run.
#[derive(Clone, Copy, Debug)]
enum Target {
    All,
    One(Paper),
}

fn parse_target(s: &str) -> Result<Target, String> {
    if s == "all" {
        return Ok(Target::All);
    }
    Paper::from_name(s).map(Target::One).ok_or_else(|| {
        let names: Vec<&str> = Paper::ALL.iter().map(|p| p.name()).collect();
        format!("unknown paper `{s}`: one of {}, or all", names.join(", "))
    })
}

/// Run `satpep reproduce`. Exit codes: 0 ok (and docs up to date), 1 a run failed or a doc is
/// stale, 2 bad arguments (unknown paper, missing docs directory).
pub fn run(args: ReproduceArgs) -> ExitCode {
    let docs_dir = args.check.as_deref().or(args.update.as_deref());
    if let Some(d) = docs_dir {
        if !d.is_dir() {
            eprintln!("error: {}: no such directory", d.display());
            return ExitCode::from(2);
        }
    }
    let papers: Vec<Paper> = match (args.paper, docs_dir) {
        (Some(Target::All), _) => Paper::ALL.to_vec(),
        (Some(Target::One(p)), _) => vec![p],
        (None, Some(d)) => match docs::papers_in(d) {
            Ok(set) => set.into_iter().collect(),
            Err(e) => {
                eprintln!("error: {e}");
                return ExitCode::from(1);
            }
        },
        (None, None) => {
            eprintln!(
                "error: name a paper (arora, karaliopoulos, lee, roseti, samaraweera) or `all`"
            );
            return ExitCode::from(2);
        }
    };
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from("results/reproduce"));
    let wall = WallInstant::now();
    let mut reports = Vec::new();
    for p in papers {
        match run_paper(p, &out) {
            Ok(r) => reports.push(r),
            Err(e) => {
                eprintln!("error: {p}: {e}");
                return ExitCode::from(1);
            }
        }
    }
    if reports.len() > 1 {
        println!(
            "\nall {} papers: {:.1} s wall",
            reports.len(),
            wall.elapsed().as_secs_f64()
        );
    }
    if let Some(d) = &args.check {
        return check(d, &reports);
    }
    if let Some(d) = &args.update {
        match docs::update(d, &reports) {
            Ok(files) => {
                for f in &files {
                    println!("updated {}", f.display());
                }
                println!(
                    "{} doc(s) changed; figures copied into {}",
                    files.len(),
                    d.join("img").display()
                );
            }
            Err(e) => {
                eprintln!("error: {e}");
                return ExitCode::from(1);
            }
        }
    }
    ExitCode::SUCCESS
}

/// One paper: run, print its tables and wall time.
fn run_paper(p: Paper, out: &Path) -> Result<Report, reproduce::Error> {
    println!("== {p}");
    let wall = WallInstant::now();
    let r = reproduce::run(p, out)?;
    for t in &r.tables {
        println!("\n{p}:table {}\n{}", t.name, t.markdown);
    }
    println!(
        "\n{p}: {} tables, {} figures in {}; {:.1} s wall\n",
        r.tables.len(),
        r.figures.len(),
        r.dir.display(),
        wall.elapsed().as_secs_f64()
    );
    Ok(r)
}

fn check(dir: &Path, reports: &[Report]) -> ExitCode {
    match docs::check(dir, reports) {
        Ok(m) if m.is_empty() => {
            println!("{}: every generated block matches the run", dir.display());
            ExitCode::SUCCESS
        }
        Ok(m) => {
            for x in &m {
                eprintln!("stale: {x}");
            }
            eprintln!(
                "{} stale block(s); `satpep reproduce --update {}` rewrites them",
                m.len(),
                dir.display()
            );
            ExitCode::from(1)
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(1)
        }
    }
}
