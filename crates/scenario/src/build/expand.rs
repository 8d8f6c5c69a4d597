//! `count`: one `[[node]]`, `[[link]]` or `[[flow]]` table written once and copied `count`
//! times, so 1 000 terminals or 100 000 flows are a few lines of TOML.
//!
//! Every string in a copied table may hold `{i}`, the copy's index from 0, optionally followed by
//! integer operations applied left to right: `{i+1}`, `{i%1000}`, `{i/10}`, `{i*10+5}`. So
//!
//! ```toml
//! [[flow]]
//! count = 1000
//! name = "f{i}"
//! from = "client{i%100}"
//! to = "server"
//! start = "{i*10}ms"
//! ```
//!
//! is 1 000 flows from 100 clients, one every 10 ms. In a list of names (`terminals`), an element
//! `"t{0..1000}"` stands for `"t0"` … `"t999"`.
//!
//! Copies keep a link to the table they came from ([`Origin`]), so an error in copy 517 names
//! the line of the table as written and says which copy.

use std::borrow::Cow;

use toml::{Table, Value};

/// Where an element of an expanded array came from.
#[derive(Clone, Copy, Debug, Eq, PartialEq)]
pub(crate) struct Origin {
    /// Index of the table in the file's array.
    pub index: usize,
    /// Which copy (`{i}`), when that table has a `count`.
    pub copy: Option<u64>,
}

/// Why a table could not be expanded: the key (relative to the element) and the message.
#[derive(Debug, Eq, PartialEq)]
pub(crate) struct ExpandError {
    /// Index of the table in the file's array.
    pub index: usize,
    /// Key inside that table.
    pub key: String,
    pub message: String,
}

/// The elements of one array after expansion, and where each came from.
pub(crate) struct Expanded<'a> {
    pub tables: Vec<Cow<'a, Table>>,
    pub origins: Vec<Origin>,
}

/// Expand the `count` tables of `tables` (the file's `[[k]]` array); at most `max` elements
/// result.
pub(crate) fn expand<'a>(tables: &[&'a Table], max: usize) -> Result<Expanded<'a>, ExpandError> {
    let mut out = Expanded {
        tables: Vec::new(),
        origins: Vec::new(),
    };
    for (index, &t) in tables.iter().enumerate() {
        let err = |key: &str, message: String| ExpandError {
            index,
            key: key.to_owned(),
            message,
        };
        let Some(count) = t.get("count") else {
            if out.tables.len() >= max {
                return Err(err("", too_many(max)));
            }
            out.tables.push(Cow::Borrowed(t));
            out.origins.push(Origin { index, copy: None });
            continue;
        };
        let count = match count.as_integer() {
            Some(c) if c >= 0 => c as u64,
            _ => {
                return Err(err(
                    "count",
                    format!("expected a whole number of copies (0 or more), got {count}"),
                ))
            }
        };
        if out.tables.len() as u64 + count > max as u64 {
            return Err(err("count", too_many(max)));
        }
        let mut template = t.clone();
        template.remove("count");
        // Check every template once, before making any copy.
        check_templates(&template, "").map_err(|(key, message)| err(&key, message))?;
        for i in 0..count {
            let copy = substitute_table(&template, i).map_err(|(key, m)| err(&key, m))?;
            out.tables.push(Cow::Owned(copy));
            out.origins.push(Origin {
                index,
                copy: Some(i),
            });
        }
    }
    Ok(out)
}

fn too_many(max: usize) -> String {
    format!("more than {max} elements once `count` is applied (docs/scenario.md, \"Limits\")")
}

fn check_templates(t: &Table, prefix: &str) -> Result<(), (String, String)> {
    for (k, v) in t {
        let key = if prefix.is_empty() {
            k.clone()
        } else {
            format!("{prefix}.{k}")
        };
        check_value(v, &key)?;
    }
    Ok(())
}

fn check_value(v: &Value, key: &str) -> Result<(), (String, String)> {
    match v {
        Value::String(s) => substitute(s, 0).map(drop).map_err(|m| (key.to_owned(), m)),
        Value::Table(t) => check_templates(t, key),
        Value::Array(a) => a.iter().try_for_each(|v| check_value(v, key)),
        _ => Ok(()),
    }
}

fn substitute_table(t: &Table, i: u64) -> Result<Table, (String, String)> {
    let mut out = Table::new();
    for (k, v) in t {
        out.insert(
            k.clone(),
            substitute_value(v, i).map_err(|m| (k.clone(), m))?,
        );
    }
    Ok(out)
}

fn substitute_value(v: &Value, i: u64) -> Result<Value, String> {
    Ok(match v {
        Value::String(s) if s.contains('{') => Value::String(substitute(s, i)?),
        Value::Table(t) => Value::Table(substitute_table(t, i).map_err(|(_, m)| m)?),
        Value::Array(a) => Value::Array(
            a.iter()
                .map(|v| substitute_value(v, i))
                .collect::<Result<_, _>>()?,
        ),
        other => other.clone(),
    })
}

/// `s` with every `{i…}` replaced by its value for copy `i`.
pub(crate) fn substitute(s: &str, i: u64) -> Result<String, String> {
    let mut out = String::with_capacity(s.len() + 8);
    let mut rest = s;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let Some(close) = rest[open..].find('}') else {
            return Err(format!("`{s}`: a `{{` without its `}}`"));
        };
        let expr = &rest[open + 1..open + close];
        out.push_str(
            &eval(expr, i)
                .map_err(|m| format!("`{s}`: {m}"))?
                .to_string(),
        );
        rest = &rest[open + close + 1..];
    }
    if rest.contains('}') {
        return Err(format!("`{s}`: a `}}` without its `{{`"));
    }
    out.push_str(rest);
    Ok(out)
}

/// `i`, then `+ - * / %` and a whole number, any number of times, left to right.
fn eval(expr: &str, i: u64) -> Result<u64, String> {
    let bad = || {
        format!(
            "`{{{expr}}}` is not a copy index: write `{{i}}`, or `{{i}}` with + - * / % and \
             whole numbers, applied left to right (e.g. `{{i%100+1}}`)"
        )
    };
    let expr: String = expr.chars().filter(|c| !c.is_whitespace()).collect();
    let mut rest = expr.strip_prefix('i').ok_or_else(bad)?;
    let mut v = i;
    while let Some(op) = rest.chars().next() {
        rest = &rest[1..];
        let digits = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        let n: u64 = rest[..digits].parse().map_err(|_| bad())?;
        rest = &rest[digits..];
        let overflow = || format!("`{{{expr}}}` overflows or divides by zero at i = {i}");
        v = match op {
            '+' => v.checked_add(n),
            '-' => v.checked_sub(n),
            '*' => v.checked_mul(n),
            '/' => v.checked_div(n),
            '%' => v.checked_rem(n),
            _ => return Err(bad()),
        }
        .ok_or_else(overflow)?;
    }
    Ok(v)
}

/// A list of names with `"prefix{a..b}suffix"` elements expanded (b exclusive), at most `max`
/// names in all.
pub(crate) fn expand_ranges(names: &[String], max: usize) -> Result<Vec<String>, String> {
    let mut out = Vec::with_capacity(names.len());
    for n in names {
        let range = n.find('{').and_then(|open| {
            let close = open + n[open..].find('}')?;
            let (a, b) = n[open + 1..close].split_once("..")?;
            Some((
                open,
                close,
                a.trim().parse::<u64>(),
                b.trim().parse::<u64>(),
            ))
        });
        let Some((open, close, a, b)) = range else {
            out.push(n.clone());
            continue;
        };
        let (Ok(a), Ok(b)) = (a, b) else {
            return Err(format!(
                "`{n}`: a range is `{{first..end}}` with whole numbers (end not included)"
            ));
        };
        if b.saturating_sub(a) > (max - out.len().min(max)) as u64 {
            return Err(format!("`{n}`: more than {max} names"));
        }
        for i in a..b {
            out.push(format!("{}{i}{}", &n[..open], &n[close + 1..]));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn copy_index_expressions() {
        assert_eq!(substitute("client{i}", 7).unwrap(), "client7");
        assert_eq!(substitute("c{i%100}-s{i/100}", 1234).unwrap(), "c34-s12");
        assert_eq!(substitute("{i*10+5}ms", 3).unwrap(), "35ms");
        assert_eq!(substitute("{ i + 1 }", 0).unwrap(), "1");
        assert_eq!(substitute("no braces", 9).unwrap(), "no braces");
        for bad in ["{j}", "{i+}", "{i^2}", "{i", "i}", "{}", "{i+1x}"] {
            assert!(substitute(bad, 1).is_err(), "{bad}");
        }
        assert!(substitute("{i-2}", 1).unwrap_err().contains("at i = 1"));
        assert!(substitute("{i/0}", 1).is_err());
    }

    #[test]
    fn ranges_in_name_lists() {
        let names = ["gw".to_owned(), "t{0..3}x".to_owned()];
        assert_eq!(
            expand_ranges(&names, 10).unwrap(),
            ["gw", "t0x", "t1x", "t2x"]
        );
        assert!(expand_ranges(&["t{0..11}".to_owned()], 10).is_err());
        assert!(expand_ranges(&["t{a..3}".to_owned()], 10).is_err());
        assert_eq!(expand_ranges(&["t{3..3}".to_owned()], 10).unwrap().len(), 0);
    }

    fn table(text: &str) -> Table {
        text.parse().unwrap()
    }

    #[test]
    fn counted_tables_are_copied_with_their_origin() {
        let a = table("count = 3\nname = \"h{i}\"\n[tcp]\ncc = \"x{i+1}\"\n");
        let b = table("name = \"plain\"\n");
        let e = expand(&[&a, &b], 10).unwrap();
        let names: Vec<_> = e
            .tables
            .iter()
            .map(|t| t["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["h0", "h1", "h2", "plain"]);
        assert_eq!(e.tables[2]["tcp"]["cc"].as_str(), Some("x3"));
        assert!(e.tables[0].get("count").is_none());
        assert_eq!(
            e.origins[3],
            Origin {
                index: 1,
                copy: None
            }
        );
        assert_eq!(
            e.origins[1],
            Origin {
                index: 0,
                copy: Some(1)
            }
        );
        let err = expand(&[&a, &b], 3).map(|_| ()).unwrap_err();
        assert_eq!((err.index, err.key.as_str()), (1, ""));
        let err = expand(&[&table("count = -1")], 3).map(|_| ()).unwrap_err();
        assert_eq!(err.key, "count");
        let err = expand(&[&table("count = 2\n[app]\nbytes = \"{k}\"")], 3)
            .map(|_| ())
            .unwrap_err();
        assert_eq!(err.key, "app.bytes");
    }

    proptest! {
        #[test]
        fn operations_apply_left_to_right(i in 0u64..1_000_000, a in 1u64..1000, b in 1u64..1000) {
            prop_assert_eq!(substitute(&format!("{{i%{a}*{b}}}"), i).unwrap(), ((i % a) * b).to_string());
            prop_assert_eq!(substitute(&format!("x{{i/{a}+{b}}}y"), i).unwrap(), format!("x{}y", i / a + b));
        }
    }
}
