//! Number and field formatting shared by the CSV writers.
//!
//! Times are printed from integer nanoseconds with integer arithmetic, so a value written is
//! exact and never depends on float rounding. Floats use Rust's formatting, which ignores the
//! locale: the decimal separator is always `.`.

use std::borrow::Cow;
use std::io::{self, Write};

/// Writes `ns` nanoseconds as seconds with 9 decimals (`1.250000000`): exact.
pub(crate) fn write_secs(w: &mut impl Write, ns: u64) -> io::Result<()> {
    write!(w, "{}.{:09}", ns / 1_000_000_000, ns % 1_000_000_000)
}

/// Writes `ns` nanoseconds as milliseconds with 6 decimals (`280.000000`): exact.
pub(crate) fn write_millis(w: &mut impl Write, ns: u64) -> io::Result<()> {
    write!(w, "{}.{:06}", ns / 1_000_000, ns % 1_000_000)
}

/// Writes `v` with `decimals` fixed decimals; nothing for NaN or infinity (pandas reads an
/// empty cell as NaN).
pub(crate) fn write_f64(w: &mut impl Write, v: f64, decimals: usize) -> io::Result<()> {
    if v.is_finite() {
        // `-0.0` would print as "-0.000": normalise so equal values print equally.
        let v = if v == 0.0 { 0.0 } else { v };
        write!(w, "{v:.decimals$}")?;
    }
    Ok(())
}

/// A CSV field per RFC 4180: quoted, with inner quotes doubled, when it holds a comma, a quote
/// or a line break; as is otherwise.
pub(crate) fn field(s: &str) -> Cow<'_, str> {
    if s.contains([',', '"', '\n', '\r']) {
        Cow::Owned(format!("\"{}\"", s.replace('"', "\"\"")))
    } else {
        Cow::Borrowed(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(f: impl FnOnce(&mut Vec<u8>) -> io::Result<()>) -> String {
        let mut v = Vec::new();
        f(&mut v).unwrap();
        String::from_utf8(v).unwrap()
    }

    #[test]
    fn times_are_exact_decimal_strings() {
        assert_eq!(s(|w| write_secs(w, 0)), "0.000000000");
        assert_eq!(s(|w| write_secs(w, 1_250_000_001)), "1.250000001");
        assert_eq!(s(|w| write_secs(w, u64::MAX)), "18446744073.709551615");
        assert_eq!(s(|w| write_millis(w, 280_000_000)), "280.000000");
        assert_eq!(s(|w| write_millis(w, 1_500)), "0.001500");
    }

    #[test]
    fn floats_have_fixed_decimals_and_non_finite_is_empty() {
        assert_eq!(s(|w| write_f64(w, 1.0 / 3.0, 3)), "0.333");
        assert_eq!(s(|w| write_f64(w, 2e6, 1)), "2000000.0");
        assert_eq!(s(|w| write_f64(w, -0.0, 2)), "0.00");
        assert_eq!(s(|w| write_f64(w, f64::NAN, 2)), "");
        assert_eq!(s(|w| write_f64(w, f64::INFINITY, 2)), "");
    }

    #[test]
    fn fields_are_quoted_only_when_needed() {
        assert_eq!(field("gw->t1"), "gw->t1");
        assert_eq!(field("a,b"), "\"a,b\"");
        assert_eq!(field("say \"hi\""), "\"say \"\"hi\"\"\"");
    }
}
