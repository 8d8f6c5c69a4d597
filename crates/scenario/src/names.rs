//! Names as names: element names (`[[node]]`, `[[link]]`, `[[flow]]`, `[[dama]]`) and the
//! scenario's own `name` become parts of key paths (`link.forward.rate`), file names
//! (`<link>.pcapng`, plot files, the results folder) and CSV cells, so they are checked before
//! anything uses them: no path separator, no `..`, no control character, no leading dot, at most
//! [`MAX_NAME_CHARS`] characters.

/// Longest name accepted, in characters.
pub const MAX_NAME_CHARS: usize = 64;

/// Why `name` cannot name a node, link, flow or DAMA link, or `None` when it can.
/// Besides the common rules, such a name is a key path segment: no `.`, `=` or white space.
pub(crate) fn element_name_problem(name: &str) -> Option<String> {
    common_problem(name).or_else(|| {
        name.contains(|c: char| c == '.' || c == '=' || c.is_whitespace())
            .then(|| bad(name, "names are non-empty, without dots, `=` or spaces"))
    })
}

/// Why `name` cannot be the scenario's `name` (which names the results folder), or `None`.
/// Spaces and single dots are fine there; `..` is not.
pub(crate) fn scenario_name_problem(name: &str) -> Option<String> {
    common_problem(name).or_else(|| {
        if name.starts_with('.') || name.contains("..") {
            Some(bad(
                name,
                "it names the results folder, so it must not start with a dot or contain `..`",
            ))
        } else {
            None
        }
    })
}

fn common_problem(name: &str) -> Option<String> {
    let chars = name.chars().count();
    if chars == 0 {
        return Some(bad(
            name,
            "names are non-empty, without dots, `=` or spaces",
        ));
    }
    if chars > MAX_NAME_CHARS {
        return Some(bad(
            name,
            &format!("it has {chars} characters; names have at most {MAX_NAME_CHARS}"),
        ));
    }
    if let Some(c) = name.chars().find(|c| c.is_control()) {
        return Some(bad(
            name,
            &format!("it contains the control character U+{:04X}", u32::from(c)),
        ));
    }
    if name.contains(['/', '\\']) {
        return Some(bad(
            name,
            "names become file names (`<link>.pcapng`, plots, the results folder), so they must \
             not contain `/` or `\\`",
        ));
    }
    None
}

/// "`name` is not a usable name: why", the name as [`crate::keys::shown`] prints it.
fn bad(name: &str, why: &str) -> String {
    format!("`{}` is not a usable name: {why}", crate::keys::shown(name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn element_names_follow_the_rules() {
        for ok in ["a", "gw-1", "server_2", "é", "x".repeat(64).as_str()] {
            assert_eq!(element_name_problem(ok), None, "{ok}");
        }
        let cases = [
            ("", "non-empty"),
            ("a.b", "without dots"),
            ("..", "without dots"),
            ("a b", "spaces"),
            ("a=b", "`=`"),
            ("a/b", "`/`"),
            ("a\\b", "`/`"),
            ("/etc", "`/`"),
            ("a\u{1b}[31m", "U+001B"),
            ("a\0", "U+0000"),
        ];
        for (name, word) in cases {
            let p = element_name_problem(name).unwrap_or_default();
            assert!(p.contains(word), "{name:?}: {p}");
        }
        let p = element_name_problem(&"x".repeat(65)).unwrap_or_default();
        assert!(
            p.contains("65 characters; names have at most 64") && p.contains('…'),
            "{p}"
        );
    }

    #[test]
    fn scenario_names_may_have_spaces_but_not_leave_results() {
        assert_eq!(scenario_name_problem("GEO 10 Mbps, v1.5"), None);
        for (name, word) in [
            ("../../escape", "`/`"),
            ("/tmp/x", "`/`"),
            ("..", "`..`"),
            (".hidden", "start with a dot"),
            ("a\nb", "U+000A"),
        ] {
            let p = scenario_name_problem(name).unwrap_or_default();
            assert!(p.contains(word), "{name:?}: {p}");
        }
    }
}
