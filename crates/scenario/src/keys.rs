//! Key paths: where a value lives in the scenario table, how people write that (`link.forward.rate`),
//! and where it came from (a line of the file, a `--set`, a sweep key).
//!
//! A [`KeyPath`] is structural (`link`, element 2, `rate`) so that it survives overrides; it is
//! turned into the dotted, name-addressed form only for messages. Spans are collected once from
//! the original text with `toml::de::DeTable` and looked up by structural path, so an error found
//! after overrides, in typed deserialization or in a semantic check still points at a line.

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
    display_path_with(path, |prefix| {
        let (first, rest) = prefix.split_first()?;
        let Seg::Key(k) = first else { return None };
        let mut v = root.get(k)?;
        for seg in rest {
            v = match seg {
                Seg::Key(k) => v.get(k.as_str())?,
                Seg::Index(n) => v.get(*n)?,
            };
        }
        v.get("name").and_then(Value::as_str).map(str::to_owned)
    })
}

/// [`display_path`] with the element names given by `name_at(prefix)` (the `name` of the
/// element at `prefix`, which ends with an index), so that it works on any tree.
fn display_path_with(path: &[Seg], name_at: impl Fn(&[Seg]) -> Option<String>) -> String {
    let mut out: Vec<String> = Vec::with_capacity(path.len());
    let mut last_key = "";
    for (i, seg) in path.iter().enumerate() {
        match seg {
            Seg::Key(k) => {
                out.push(k.clone());
                last_key = k;
            }
            Seg::Index(n) => {
                let name = name_at(&path[..=i])
                    .map(|name| shown(&name))
                    .or_else(|| (last_key == "flow").then(|| format!("flow{}", n + 1)));
                out.push(name.unwrap_or_else(|| n.to_string()));
            }
        }
    }
    out.join(".")
}

/// A name as it may be printed: control characters escaped (a name must not drive the
/// terminal), cut at 40 characters.
pub(crate) fn shown(name: &str) -> String {
    let mut out = String::new();
    for c in name.chars().take(40) {
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    if name.chars().count() > 40 {
        out.push('…');
    }
    out
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
///
/// The text is parsed once, into `doc` (which borrows the text and keeps the span of every key
/// and value); the [`Table`] the builder checks is converted from it. A span is found by walking
/// `doc` along the path when an error needs it, so no per-key index is built.
#[derive(Debug)]
pub(crate) struct Sources<'a> {
    origin: &'a str,
    text: &'a str,
    doc: DeTable<'a>,
    /// Values replaced after parsing, in order of application; later ones win.
    setters: Vec<(KeyPath, Setter)>,
    /// Trace files already read, by (absolute path, kind): sweep points share them.
    traces: TraceCache,
}

/// Parsed trace files by (absolute path, kind).
type TraceCache = std::cell::RefCell<
    std::collections::HashMap<(String, u8), std::sync::Arc<dyn std::any::Any + Send + Sync>>,
>;

impl<'a> Sources<'a> {
    /// Parse `text` once: the spans, and the table it holds. A TOML syntax error, a duplicate
    /// key or a number that does not fit is returned located at its span.
    pub(crate) fn parse(origin: &'a str, text: &'a str) -> Result<(Self, Table), ScenarioError> {
        let doc = DeTable::parse(text).map_err(|e| {
            let (line, column) = match e.span() {
                Some(span) => {
                    let (l, c) = line_col(text, span.start);
                    (Some(l), Some(c))
                }
                None => (None, None),
            };
            let message = e.message().trim();
            // toml says only "duplicate key": name it (the span is the repeated key).
            let key = e
                .span()
                .filter(|_| message.starts_with("duplicate key"))
                .and_then(|s| Some((text.get(s.clone())?, s.start)))
                .map(|(k, at)| {
                    duplicate_key_path(origin, text, k.trim().trim_matches(['"', '\'']), at)
                });
            let message = if key.is_some() {
                "duplicate key: each key may be set only once in a table".to_owned()
            } else {
                format!("TOML syntax: {message}")
            };
            invalid(origin, line, column, key, message)
        })?;
        let src = Self {
            origin,
            text,
            doc: doc.into_inner(),
            setters: Vec::new(),
            traces: TraceCache::default(),
        };
        // Refuse too many elements before they are converted into a Table (a 16.7 MB file of
        // 400 000 flows: refused in 12 s instead of 15 s, debug build; the peak memory is the
        // parse's).
        for (k, v) in src.doc.iter() {
            let len = v.get_ref().as_array().map_or(0, |a| a.len());
            if let Some(message) = crate::build::too_many(k.get_ref(), len) {
                let path = [Seg::Key(k.get_ref().to_string())];
                let (line, column) = src.line_of(&path);
                return Err(invalid(
                    origin,
                    line,
                    column,
                    Some(k.get_ref().to_string()),
                    message,
                ));
            }
        }
        let mut path = Vec::new();
        let table = convert_table(&src.doc, &mut path).map_err(|(path, message)| {
            let key = (!path.is_empty()).then(|| src.display_in_file(&path));
            let (line, column) = src.line_of(&path);
            invalid(origin, line, column, key, message)
        })?;
        Ok((src, table))
    }

    /// The file name (or `<built-in>`) the scenario was loaded from.
    pub(crate) fn origin(&self) -> &str {
        self.origin
    }

    /// A trace file read earlier in this load.
    pub(crate) fn cached_trace(
        &self,
        key: &(String, u8),
    ) -> Option<std::sync::Arc<dyn std::any::Any + Send + Sync>> {
        self.traces.borrow().get(key).cloned()
    }

    /// Remember a trace file read in this load.
    pub(crate) fn cache_trace(
        &self,
        key: (String, u8),
        data: std::sync::Arc<dyn std::any::Any + Send + Sync>,
    ) {
        self.traces.borrow_mut().insert(key, data);
    }

    /// Record that the value at `path` (and everything below it) was set by `setter`.
    pub(crate) fn record(&mut self, path: KeyPath, setter: Setter) {
        self.setters.push((path, setter));
    }

    /// The `--set` assignment that already set exactly `path`, if any.
    pub(crate) fn cli_setter_of(&self, path: &[Seg]) -> Option<&str> {
        self.setters.iter().find_map(|(p, s)| match s {
            Setter::Cli(assignment) if p == path => Some(assignment.as_str()),
            _ => None,
        })
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
        let exact_in_file = self.span(path).is_some();
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
        self.span(path).map_or(usize::MAX, |s| s.start)
    }

    /// Span of the key at `path` in the text (of the value, for an array element), if the file
    /// has it. Walks `doc`: one map lookup per segment.
    fn span(&self, path: &[Seg]) -> Option<Range<usize>> {
        let (first, rest) = path.split_first()?;
        let Seg::Key(k) = first else { return None };
        let (mut key, mut value) = self.doc.get_key_value(k.as_str())?;
        let mut at = key.span();
        for seg in rest {
            match (seg, value.get_ref()) {
                (Seg::Key(k), DeValue::Table(t)) => {
                    (key, value) = t.get_key_value(k.as_str())?;
                    at = key.span();
                }
                (Seg::Index(n), DeValue::Array(items)) => {
                    value = items.get(*n)?;
                    at = value.span();
                }
                _ => return None,
            }
        }
        Some(at)
    }

    /// Line and column of the key at `path`, or of its nearest ancestor found in the file.
    fn line_of(&self, path: &[Seg]) -> (Option<usize>, Option<usize>) {
        (0..=path.len())
            .rev()
            .find_map(|n| self.span(&path[..n]))
            .map_or((None, None), |span| {
                let (l, c) = line_col(self.text, span.start);
                (Some(l), Some(c))
            })
    }

    /// [`display_path`] over the parsed text, for errors found before the table exists.
    fn display_in_file(&self, path: &[Seg]) -> String {
        display_path_with(path, |prefix| {
            let (first, rest) = prefix.split_first()?;
            let Seg::Key(k) = first else { return None };
            let mut v = self.doc.get(k.as_str())?.get_ref();
            for seg in rest {
                v = match seg {
                    Seg::Key(k) => v.get(k.as_str())?.get_ref(),
                    Seg::Index(n) => v.get(*n)?.get_ref(),
                };
            }
            v.get("name")
                .and_then(|n| n.get_ref().as_str())
                .map(str::to_owned)
        })
    }
}

/// The full dotted path of a key written twice, `word` being the repeated key at byte `at`: the
/// first `word` before `at` in the document toml recovers (the repeated one is left out of it).
fn duplicate_key_path(origin: &str, text: &str, word: &str, at: usize) -> String {
    fn search(
        table: &DeTable<'_>,
        word: &str,
        at: usize,
        path: &mut KeyPath,
        best: &mut Option<(usize, KeyPath)>,
    ) {
        for (k, v) in table {
            path.push(Seg::Key(k.get_ref().to_string()));
            let start = k.span().start;
            if k.get_ref() == word && start < at && best.as_ref().is_none_or(|(b, _)| start > *b) {
                *best = Some((start, path.clone()));
            }
            match v.get_ref() {
                DeValue::Table(t) => search(t, word, at, path, best),
                DeValue::Array(items) => {
                    for (i, item) in items.iter().enumerate() {
                        if let DeValue::Table(t) = item.get_ref() {
                            path.push(Seg::Index(i));
                            search(t, word, at, path, best);
                            path.pop();
                        }
                    }
                }
                _ => {}
            }
            path.pop();
        }
    }
    let (doc, _) = DeTable::parse_recoverable(text);
    let mut best = None;
    search(doc.get_ref(), word, at, &mut Vec::new(), &mut best);
    let Some((_, path)) = best else {
        return word.to_owned();
    };
    let partial = Sources {
        origin,
        text,
        doc: doc.into_inner(),
        setters: Vec::new(),
        traces: TraceCache::default(),
    };
    partial.display_in_file(&path)
}

/// A located [`ScenarioError`]: suggestions added, control characters escaped.
pub(crate) fn invalid(
    origin: &str,
    line: Option<usize>,
    column: Option<usize>,
    key: Option<String>,
    message: String,
) -> ScenarioError {
    // Messages quote what was written; a value must not drive the terminal that prints them.
    ScenarioError::Invalid(Box::new(Diagnostic {
        origin: escape_controls(origin),
        line,
        column,
        key: key.map(|k| escape_controls(&k)),
        message: escape_controls(&crate::suggest::did_you_mean(message)),
    }))
}

/// `text` with control characters (newlines, escapes) written as `\n`, `\u{1b}`.
fn escape_controls(text: &str) -> String {
    if !text.contains(char::is_control) {
        return text.to_owned();
    }
    text.chars()
        .flat_map(|c| {
            let escaped: Vec<char> = if c.is_control() {
                c.escape_default().collect()
            } else {
                vec![c]
            };
            escaped
        })
        .collect()
}

/// The parsed text as a [`Table`]; a number that does not fit is an error at its path.
fn convert_table(table: &DeTable<'_>, path: &mut KeyPath) -> Result<Table, (KeyPath, String)> {
    let mut out = Table::with_capacity(table.len());
    for (key, value) in table {
        path.push(Seg::Key(key.get_ref().to_string()));
        let v = convert_value(value.get_ref(), path)?;
        path.pop();
        out.insert(key.get_ref().to_string(), v);
    }
    Ok(out)
}

fn convert_value(value: &DeValue<'_>, path: &mut KeyPath) -> Result<Value, (KeyPath, String)> {
    Ok(match value {
        DeValue::String(s) => Value::String(s.to_string()),
        DeValue::Integer(i) => {
            let Ok(n) = i64::from_str_radix(i.as_str(), i.radix()) else {
                return Err((
                    path.clone(),
                    format!(
                        "the integer {i} does not fit in 64 bits (from {} to {})",
                        i64::MIN,
                        i64::MAX
                    ),
                ));
            };
            Value::Integer(n)
        }
        DeValue::Float(f) => {
            let x: Option<f64> = f.as_str().parse().ok();
            match x {
                Some(x) if x.is_finite() || f.as_str().contains("inf") => Value::Float(x),
                Some(x) if x.is_nan() => {
                    return Err((
                        path.clone(),
                        format!("`{f}` is not a number (NaN); give a value"),
                    ))
                }
                _ => {
                    return Err((
                        path.clone(),
                        format!("the number {f} is too large for a 64-bit float"),
                    ))
                }
            }
        }
        DeValue::Boolean(b) => Value::Boolean(*b),
        DeValue::Datetime(d) => Value::Datetime(*d),
        DeValue::Array(items) => {
            let mut out = Vec::with_capacity(items.len());
            for (i, item) in items.iter().enumerate() {
                path.push(Seg::Index(i));
                out.push(convert_value(item.get_ref(), path)?);
                path.pop();
            }
            Value::Array(out)
        }
        DeValue::Table(t) => Value::Table(convert_table(t, path)?),
    })
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
/// quoted string), else the text itself as a string. Datetimes are taken as strings. A number
/// that parses but does not fit in 64 bits is an error (it used to become a string, and the
/// message then spoke of a string).
pub(crate) fn parse_value(text: &str) -> Result<Value, String> {
    let doc = format!("v = {text}");
    let Ok(parsed) = DeTable::parse(&doc) else {
        return Ok(Value::String(text.trim().to_owned()));
    };
    let parsed = parsed.into_inner();
    if parsed.len() != 1 {
        return Ok(Value::String(text.trim().to_owned()));
    }
    let mut t = convert_table(&parsed, &mut Vec::new()).map_err(|(_, msg)| msg)?;
    Ok(match t.remove("v") {
        Some(Value::Datetime(_)) | None => Value::String(text.to_owned()),
        Some(v) => v,
    })
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
        let pv = |t: &str| parse_value(t).unwrap();
        assert_eq!(pv("42"), Value::Integer(42));
        assert_eq!(pv("1e-3"), Value::Float(1e-3));
        assert_eq!(pv("true"), Value::Boolean(true));
        assert_eq!(pv("10Mbps"), Value::from("10Mbps"));
        assert_eq!(pv("\"quoted\""), Value::from("quoted"));
        assert_eq!(pv("[\"a\", \"b\"]").as_array().map(Vec::len), Some(2));
        assert_eq!(
            pv("{ limit_packets = 5 }")["limit_packets"].as_integer(),
            Some(5)
        );
        assert_eq!(pv("1979-05-27"), Value::from("1979-05-27"));
        // A value that smuggles a second key in stays a plain string.
        assert_eq!(pv("1\nseed = 2"), Value::from("1\nseed = 2"));
        // A number too large for 64 bits is an error, not a string.
        let e = parse_value("99999999999999999999").unwrap_err();
        assert!(e.contains("does not fit in 64 bits"), "{e}");
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
