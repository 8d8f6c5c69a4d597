//! Key paths: where a value lives in the scenario table, how people write that (`link.forward.rate`),
//! and where it came from (a line of the file, a `--set`, a sweep key).
//!
//! A [`KeyPath`] is structural (`link`, element 2, `rate`) so that it survives overrides; it is
//! turned into the dotted, name-addressed form only for messages. Spans are collected once from
//! the original text with `toml::de::DeTable` and looked up by structural path, so an error found
//! after overrides, in typed deserialization or in a semantic check still points at a line.

use std::collections::HashMap;
use std::ops::Range;

use toml::de::{DeTable, DeValue};
use toml::{Table, Value};

use crate::error::{line_col, Diagnostic, ScenarioError};

/// One step of a [`KeyPath`].
#[derive(Clone, Debug, Eq, Hash, PartialEq)]
pub(crate) enum Seg {
    Key(String),
    Index(usize),
}

/// A structural path into the scenario table.
pub(crate) type KeyPath = Vec<Seg>;

/// Append a key to a path.
pub(crate) fn join(path: &[Seg], key: &str) -> KeyPath {
    let mut p = path.to_vec();
    p.push(Seg::Key(key.to_owned()));
    p
}

/// Append an array index to a path.
pub(crate) fn join_index(path: &[Seg], index: usize) -> KeyPath {
    let mut p = path.to_vec();
    p.push(Seg::Index(index));
    p
}

/// The name an array-of-tables element is addressed by: its `name` key, else for `flow` the
/// default `flow<i>` (i from 1); `None` when it has no name (routes).
pub(crate) fn element_name(array_key: &str, index: usize, element: &Value) -> Option<String> {
    if let Some(name) = element.get("name").and_then(Value::as_str) {
        return Some(name.to_owned());
    }
    (array_key == "flow").then(|| format!("flow{}", index + 1))
}

/// The dotted form of `path` as people write it, naming array elements where they have a name
/// in `root` (`link.forward.rate`), else by index (`route.0.link`).
pub(crate) fn display_path(root: &Table, path: &[Seg]) -> String {
    let mut out: Vec<String> = Vec::with_capacity(path.len());
    let mut cursor: Option<&Value> = None;
    let mut last_key = "";
    for (i, seg) in path.iter().enumerate() {
        match seg {
            Seg::Key(k) => {
                out.push(k.clone());
                cursor = if i == 0 {
                    root.get(k)
                } else {
                    cursor.and_then(|v| v.get(k.as_str()))
                };
                last_key = k;
            }
            Seg::Index(n) => {
                let element = cursor.and_then(|v| v.get(*n));
                let name = element.and_then(|e| element_name(last_key, *n, e));
                out.push(name.unwrap_or_else(|| n.to_string()));
                cursor = element;
            }
        }
    }
    out.join(".")
}

/// Where a key and its value sit in the original text.
#[derive(Clone, Debug)]
struct Span {
    key: Option<Range<usize>>,
    value: Range<usize>,
}

/// Who set a value that did not come from the file.
#[derive(Clone, Debug)]
pub(crate) enum Setter {
    /// `--set KEY=VALUE`, kept as written.
    Cli(String),
    /// A `[sweep]` key; `at` is the sweep key's path in the file (for its line), `point` says
    /// which combination was being built.
    Sweep { at: KeyPath, point: String },
}

/// Everything needed to turn a structural path into a located [`ScenarioError`].
#[derive(Debug)]
pub(crate) struct Sources<'a> {
    origin: &'a str,
    text: &'a str,
    spans: HashMap<KeyPath, Span>,
    /// Values replaced after parsing, in order of application; later ones win.
    setters: Vec<(KeyPath, Setter)>,
}

impl<'a> Sources<'a> {
    /// Parse `text` for spans. A TOML syntax error is returned located at its span.
    pub(crate) fn parse(origin: &'a str, text: &'a str) -> Result<Self, ScenarioError> {
        let doc = DeTable::parse(text).map_err(|e| {
            let (line, column) = match e.span() {
                Some(span) => {
                    let (l, c) = line_col(text, span.start);
                    (Some(l), Some(c))
                }
                None => (None, None),
            };
            invalid(
                origin,
                line,
                column,
                None,
                format!("TOML syntax: {}", e.message().trim()),
            )
        })?;
        let mut spans = HashMap::new();
        collect_table(doc.get_ref(), &mut Vec::new(), &mut spans);
        Ok(Self {
            origin,
            text,
            spans,
            setters: Vec::new(),
        })
    }

    /// Record that the value at `path` (and everything below it) was set by `setter`.
    pub(crate) fn record(&mut self, path: KeyPath, setter: Setter) {
        self.setters.push((path, setter));
    }

    /// Forget setters recorded after the first `keep` (used between sweep points).
    pub(crate) fn truncate_setters(&mut self, keep: usize) {
        self.setters.truncate(keep);
    }

    /// How many setters are recorded.
    pub(crate) fn setter_count(&self) -> usize {
        self.setters.len()
    }

    /// A located error for the value at `path` of `root`.
    pub(crate) fn error(
        &self,
        root: &Table,
        path: &[Seg],
        message: impl Into<String>,
    ) -> ScenarioError {
        let key = (!path.is_empty()).then(|| display_path(root, path));
        let message = message.into();
        // A value replaced by an override: the override is to blame (latest first).
        let exact_in_file = self.spans.contains_key(path);
        let setter = self.setters.iter().rev().find(|(p, _)| {
            path.starts_with(p) || (!exact_in_file && p.starts_with(path) && !path.is_empty())
        });
        match setter {
            Some((_, Setter::Cli(assignment))) => {
                invalid(&format!("--set '{assignment}'"), None, None, key, message)
            }
            Some((_, Setter::Sweep { at, point })) => {
                let (line, column) = self.line_of(at);
                invalid(
                    self.origin,
                    line,
                    column,
                    key,
                    format!("{message} (in sweep point {point})"),
                )
            }
            None => {
                let (line, column) = self.line_of(path);
                invalid(self.origin, line, column, key, message)
            }
        }
    }

    /// An error about a `--set` assignment itself (syntax, unknown path).
    pub(crate) fn cli_error(
        &self,
        assignment: &str,
        key: Option<String>,
        message: impl Into<String>,
    ) -> ScenarioError {
        invalid(
            &format!("--set '{assignment}'"),
            None,
            None,
            key,
            message.into(),
        )
    }

    /// Byte offset of the key at `path` in the text (`usize::MAX` when it is not in the file), for
    /// sorting keys in file order.
    pub(crate) fn position(&self, path: &[Seg]) -> usize {
        self.spans.get(path).map_or(usize::MAX, |s| {
            s.key.as_ref().map_or(s.value.start, |k| k.start)
        })
    }

    /// Line and column of the key at `path`, or of its nearest ancestor found in the file.
    fn line_of(&self, path: &[Seg]) -> (Option<usize>, Option<usize>) {
        (0..=path.len())
            .rev()
            .find_map(|n| self.spans.get(&path[..n]))
            .map_or((None, None), |span| {
                let at = span.key.as_ref().map_or(span.value.start, |k| k.start);
                let (l, c) = line_col(self.text, at);
                (Some(l), Some(c))
            })
    }
}

fn invalid(
    origin: &str,
    line: Option<usize>,
    column: Option<usize>,
    key: Option<String>,
    message: String,
) -> ScenarioError {
    ScenarioError::Invalid(Box::new(Diagnostic {
        origin: origin.to_owned(),
        line,
        column,
        key,
        message: crate::suggest::did_you_mean(message),
    }))
}

fn collect_table(table: &DeTable<'_>, path: &mut KeyPath, spans: &mut HashMap<KeyPath, Span>) {
    for (key, value) in table {
        path.push(Seg::Key(key.get_ref().to_string()));
        spans.insert(
            path.clone(),
            Span {
                key: Some(key.span()),
                value: value.span(),
            },
        );
        collect_value(value.get_ref(), path, spans);
        path.pop();
    }
}

fn collect_value(value: &DeValue<'_>, path: &mut KeyPath, spans: &mut HashMap<KeyPath, Span>) {
    match value {
        DeValue::Table(t) => collect_table(t, path, spans),
        DeValue::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                path.push(Seg::Index(i));
                spans.insert(
                    path.clone(),
                    Span {
                        key: None,
                        value: item.span(),
                    },
                );
                collect_value(item.get_ref(), path, spans);
                path.pop();
            }
        }
        _ => {}
    }
}

/// Parse a dotted key as people write it into segments (no quoting: names must not contain
/// dots).
pub(crate) fn split_key(key: &str) -> Result<Vec<&str>, String> {
    let parts: Vec<&str> = key.trim().split('.').map(str::trim).collect();
    if parts.iter().any(|p| p.is_empty()) {
        return Err(format!(
            "`{key}` is not a key path: expected dotted names such as `link.forward.rate`"
        ));
    }
    Ok(parts)
}

/// Set the value at the dotted `key` in `root`, creating missing tables on the way, and return
/// the structural path that was set. Array elements are found by name (see [`element_name`]),
/// then by index. The error says which part of the key was not found.
pub(crate) fn set_path(root: &mut Table, key: &str, value: Value) -> Result<KeyPath, String> {
    let parts = split_key(key)?;
    let mut path: KeyPath = Vec::with_capacity(parts.len());
    let mut slot: &mut Value = {
        let first = parts[0];
        path.push(Seg::Key(first.to_owned()));
        if parts.len() == 1 {
            root.insert(first.to_owned(), value);
            return Ok(path);
        }
        root.entry(first.to_owned())
            .or_insert_with(|| Value::Table(Table::new()))
    };
    let mut last_key = parts[0];
    for (i, part) in parts.iter().enumerate().skip(1) {
        let is_last = i + 1 == parts.len();
        let shown = parts[..i].join(".");
        slot = match slot {
            Value::Table(t) => {
                path.push(Seg::Key((*part).to_owned()));
                last_key = part;
                if is_last {
                    t.insert((*part).to_owned(), value);
                    return Ok(path);
                }
                t.entry((*part).to_owned())
                    .or_insert_with(|| Value::Table(Table::new()))
            }
            Value::Array(items) => {
                let by_name = items
                    .iter()
                    .enumerate()
                    .position(|(n, e)| element_name(last_key, n, e).as_deref() == Some(part));
                let index =
                    by_name.or_else(|| part.parse::<usize>().ok().filter(|&n| n < items.len()));
                let Some(index) = index else {
                    let names: Vec<String> = items
                        .iter()
                        .enumerate()
                        .map(|(n, e)| element_name(last_key, n, e).unwrap_or_else(|| n.to_string()))
                        .collect();
                    return Err(format!(
                        "`{shown}` has no element named `{part}` (it has: {})",
                        if names.is_empty() {
                            "none".to_owned()
                        } else {
                            names.join(", ")
                        }
                    ));
                };
                path.push(Seg::Index(index));
                if is_last {
                    items[index] = value;
                    return Ok(path);
                }
                &mut items[index]
            }
            _ => {
                return Err(format!(
                    "`{shown}` is a single value, it has no key `{part}`"
                ))
            }
        };
    }
    // NOTE: unreachable in practice: the loop returns at the last part.
    Ok(path)
}

/// A `--set` value: a TOML value when it parses as one (number, bool, array, inline table,
/// quoted string), else the text itself as a string. Datetimes are taken as strings.
pub(crate) fn parse_value(text: &str) -> Value {
    let doc = format!("v = {text}");
    match doc.parse::<Table>() {
        Ok(mut t) if t.len() == 1 => match t.remove("v") {
            Some(Value::Datetime(_)) | None => Value::String(text.to_owned()),
            Some(v) => v,
        },
        _ => Value::String(text.trim().to_owned()),
    }
}

/// A value as a person wrote it: strings bare, anything else in TOML syntax.
pub(crate) fn value_as_written(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(text: &str) -> Table {
        text.parse().unwrap()
    }

    #[test]
    fn set_path_finds_elements_by_name_then_index() {
        let mut t =
            table("[[link]]\nname = \"fwd\"\n[[link]]\nname = \"ret\"\n[[flow]]\n[[flow]]\n");
        let p = set_path(&mut t, "link.ret.rate", Value::from("1Mbps")).unwrap();
        assert_eq!(
            p,
            vec![
                Seg::Key("link".into()),
                Seg::Index(1),
                Seg::Key("rate".into())
            ]
        );
        assert_eq!(t["link"][1]["rate"].as_str(), Some("1Mbps"));
        set_path(&mut t, "link.0.delay", Value::from("1ms")).unwrap();
        assert_eq!(t["link"][0]["delay"].as_str(), Some("1ms"));
        // Flows without a name answer to flow<i>.
        set_path(&mut t, "flow.flow2.tcp.cc", Value::from("reno")).unwrap();
        assert_eq!(t["flow"][1]["tcp"]["cc"].as_str(), Some("reno"));
        let e = set_path(&mut t, "link.nope.rate", Value::from(1)).unwrap_err();
        assert!(
            e.contains("no element named `nope`") && e.contains("fwd, ret"),
            "{e}"
        );
        let e = set_path(&mut t, "link.fwd.name.x", Value::from(1)).unwrap_err();
        assert!(e.contains("single value"), "{e}");
        assert!(set_path(&mut t, "a..b", Value::from(1)).is_err());
    }

    #[test]
    fn set_path_creates_missing_tables() {
        let mut t = Table::new();
        set_path(&mut t, "defaults.tcp.mss", Value::from(1000)).unwrap();
        assert_eq!(t["defaults"]["tcp"]["mss"].as_integer(), Some(1000));
    }

    #[test]
    fn parse_value_prefers_toml_then_string() {
        assert_eq!(parse_value("42"), Value::Integer(42));
        assert_eq!(parse_value("1e-3"), Value::Float(1e-3));
        assert_eq!(parse_value("true"), Value::Boolean(true));
        assert_eq!(parse_value("10Mbps"), Value::from("10Mbps"));
        assert_eq!(parse_value("\"quoted\""), Value::from("quoted"));
        assert_eq!(
            parse_value("[\"a\", \"b\"]").as_array().map(Vec::len),
            Some(2)
        );
        assert_eq!(
            parse_value("{ limit_packets = 5 }")["limit_packets"].as_integer(),
            Some(5)
        );
        assert_eq!(parse_value("1979-05-27"), Value::from("1979-05-27"));
        // A value that smuggles a second key in stays a plain string.
        assert_eq!(parse_value("1\nseed = 2"), Value::from("1\nseed = 2"));
    }

    #[test]
    fn display_path_uses_names() {
        let t = table("[[node]]\nname = \"gw\"\n[[route]]\nnode = \"gw\"\n[[flow]]\n");
        let p = vec![
            Seg::Key("node".into()),
            Seg::Index(0),
            Seg::Key("address".into()),
        ];
        assert_eq!(display_path(&t, &p), "node.gw.address");
        let p = vec![
            Seg::Key("route".into()),
            Seg::Index(0),
            Seg::Key("link".into()),
        ];
        assert_eq!(display_path(&t, &p), "route.0.link");
        let p = vec![
            Seg::Key("flow".into()),
            Seg::Index(0),
            Seg::Key("start".into()),
        ];
        assert_eq!(display_path(&t, &p), "flow.flow1.start");
    }
}
