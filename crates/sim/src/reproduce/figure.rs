//! Figures of a reproduction: the PNG, the series behind it as CSV, and a digest of that CSV.
//!
//! The docs check compares the digest (and the series and point counts), not the PNG bytes: a
//! PNG changes with the font renderer, the data only with the model.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use satpep_output::plot::line_chart_png;

use super::{Error, Paper, Res};

/// Named series of (x, y) points, as the plotting functions take them.
pub type Series = Vec<(String, Vec<(f64, f64)>)>;

/// One image of a doc.
#[derive(Clone, Debug, Eq, PartialEq)]
pub struct Figure {
    /// Which paper drew it.
    pub paper: Paper,
    /// Name without extension, e.g. `fig2_4MB_2Mbps`.
    pub name: String,
    /// The PNG written (`<dir>/<name>.png`).
    pub png: PathBuf,
    /// The plotted data (`<dir>/figures/<name>.csv`, columns `series,x,y`).
    pub data: PathBuf,
    /// Number of series.
    pub series: usize,
    /// Number of points over all series.
    pub points: usize,
    /// FNV-1a (64 bit) of the data file's bytes.
    pub digest: u64,
}

impl Figure {
    /// File name of the image in docs/reproductions/img: `<paper>_<name>.png`.
    pub fn doc_image(&self) -> String {
        format!("{}_{}.png", self.paper.name(), self.name)
    }
}

/// The figures of one paper's run, in drawing order.
pub(super) struct Figures {
    paper: Paper,
    dir: PathBuf,
    list: Vec<Figure>,
}

impl Figures {
    pub(super) fn new(paper: Paper, dir: &Path) -> Self {
        Self {
            paper,
            dir: dir.to_path_buf(),
            list: Vec::new(),
        }
    }

    /// A line chart (satpep's standard look): `categories` label x = 0, 1, 2, …; `markers`
    /// draws a dot at every point.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn line(
        &mut self,
        name: &str,
        title: &str,
        x_label: &str,
        y_label: &str,
        categories: Option<Vec<String>>,
        markers: bool,
        series: Series,
    ) -> Res<()> {
        self.custom(name, &series, |png| {
            line_chart_png(
                png,
                title,
                x_label,
                y_label,
                categories,
                markers,
                series.clone(),
            )
            .map_err(|e| Error(e.to_string()))
        })
    }

    /// A figure drawn by `draw(png_path)` from `series`.
    pub(super) fn custom(
        &mut self,
        name: &str,
        series: &Series,
        draw: impl FnOnce(&Path) -> Res<()>,
    ) -> Res<()> {
        let png = self.dir.join(format!("{name}.png"));
        draw(&png)?;
        let data = self.dir.join("figures").join(format!("{name}.csv"));
        let csv = series_csv(series);
        super::write(&data, &csv)?;
        self.list.push(Figure {
            paper: self.paper,
            name: name.to_string(),
            png,
            data,
            series: series.len(),
            points: series.iter().map(|s| s.1.len()).sum(),
            digest: fnv1a(csv.as_bytes()),
        });
        Ok(())
    }

    pub(super) fn into_vec(self) -> Vec<Figure> {
        self.list
    }
}

/// `series,x,y` rows; numbers in Rust's shortest round-trip form, so equal data gives equal
/// bytes on every platform.
fn series_csv(series: &Series) -> String {
    let mut s = String::from("series,x,y\n");
    for (name, pts) in series {
        let name = name.replace(['"', ','], " ");
        for (x, y) in pts {
            // NOTE: writing to a String cannot fail.
            let _ = writeln!(s, "{name},{x},{y}");
        }
    }
    s
}

/// FNV-1a, 64 bit: a stable digest without a dependency (not for security).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv1a_matches_the_reference_vectors() {
        // From the FNV reference (draft-eastlake-fnv): "" and "a".
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
    }

    #[test]
    fn series_csv_is_one_row_per_point_and_commas_in_names_are_dropped() {
        let s: Series = vec![("a, b".into(), vec![(0.0, 1.5), (1.0, f64::NAN)])];
        assert_eq!(series_csv(&s), "series,x,y\na  b,0,1.5\na  b,1,NaN\n");
    }
}
