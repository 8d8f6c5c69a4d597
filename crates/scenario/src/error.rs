//! The one error type of this crate: where (file or `--set`, line, column, key) and what.

use std::fmt;

/// Why a scenario could not be loaded.
///
/// Displays as `FILE:LINE:COL: key `link.forward.rate`: <what was expected>`; the origin is the
/// file name, `<built-in>`, or `--set 'KEY=VALUE'` for a command-line override. The CLI prints it
/// as is and exits with code 2.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ScenarioError {
    /// The scenario file could not be read.
    #[error("{path}: cannot read the scenario file: {source}")]
    Read {
        /// The path as given.
        path: String,
        /// What the OS said.
        #[source]
        source: std::io::Error,
    },
    /// A `run.json` given for replay is not one satpep wrote.
    #[error("{path}: {message}")]
    RunJson {
        /// The path as given.
        path: String,
        /// What is wrong with it.
        message: String,
    },
    /// The scenario text, an override or a sweep is invalid.
    #[error("{0}")]
    Invalid(Box<Diagnostic>),
}

impl ScenarioError {
    /// Where the problem is (file name, `<built-in>` or the `--set` assignment), if known.
    pub fn origin(&self) -> &str {
        match self {
            Self::Read { path, .. } | Self::RunJson { path, .. } => path,
            Self::Invalid(d) => &d.origin,
        }
    }

    /// 1-based line of the offending key, when it comes from a file.
    pub fn line(&self) -> Option<usize> {
        match self {
            Self::Read { .. } | Self::RunJson { .. } => None,
            Self::Invalid(d) => d.line,
        }
    }

    /// Full dotted key path, arrays of tables addressed by element name (`link.forward.rate`).
    pub fn key(&self) -> Option<&str> {
        match self {
            Self::Read { .. } | Self::RunJson { .. } => None,
            Self::Invalid(d) => d.key.as_deref(),
        }
    }

    /// What was wrong and what was expected, without the location.
    pub fn message(&self) -> String {
        match self {
            Self::Read { source, .. } => source.to_string(),
            Self::RunJson { message, .. } => message.clone(),
            Self::Invalid(d) => d.message.clone(),
        }
    }
}

/// The location and text of one problem in a scenario.
#[derive(Clone, Debug, Eq, PartialEq)]
pub struct Diagnostic {
    /// File name, `<built-in>`, or `--set 'KEY=VALUE'`.
    pub origin: String,
    /// 1-based line, when the problem is in a file.
    pub line: Option<usize>,
    /// 1-based column (in characters), when the problem is in a file.
    pub column: Option<usize>,
    /// Full dotted key path, if the problem belongs to a key.
    pub key: Option<String>,
    /// What was wrong and what was expected.
    pub message: String,
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.origin)?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
            if let Some(col) = self.column {
                write!(f, ":{col}")?;
            }
        }
        if let Some(key) = &self.key {
            write!(f, ": key `{key}`")?;
        }
        write!(f, ": {}", self.message)
    }
}

/// 1-based (line, column) of byte `offset` in `text`; an offset past the end (or inside a UTF-8
/// sequence) is clamped.
pub(crate) fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let column = before[line_start..].chars().count() + 1;
    (line, column)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_col_counts_from_one_in_characters() {
        let text = "a = 1\nbé = 2\n";
        assert_eq!(line_col(text, 0), (1, 1));
        assert_eq!(line_col(text, 6), (2, 1));
        // 'é' is two bytes; the '=' after "bé " is the 4th character of line 2.
        assert_eq!(line_col(text, 10), (2, 4));
        assert_eq!(line_col(text, 9999), (3, 1));
        // Inside the 'é' sequence: clamped back to its start.
        assert_eq!(line_col(text, 8), (2, 2));
    }

    #[test]
    fn display_names_origin_line_key_and_message() {
        let d = Diagnostic {
            origin: "geo.toml".into(),
            line: Some(12),
            column: Some(1),
            key: Some("link.forward.rate".into()),
            message: "expected a rate".into(),
        };
        assert_eq!(
            d.to_string(),
            "geo.toml:12:1: key `link.forward.rate`: expected a rate"
        );
        let d = Diagnostic {
            line: None,
            column: None,
            key: None,
            origin: "--set 'x'".into(),
            ..d
        };
        assert_eq!(d.to_string(), "--set 'x': expected a rate");
    }
}
