//! "Did you mean …?" for misspelt keys, element names and variants: the error messages name
//! the unknown word and list what is allowed; this picks the closest allowed word.

/// Phrases after which an error message quotes the unknown word in backticks.
const UNKNOWN: [&str; 5] = [
    "unknown field `",
    "unknown variant `",
    "unknown key `",
    "no element named `",
    "unknown node `",
];

/// `message` with ` (did you mean `x`?)` appended when it names an unknown word and one of the
/// words it lists is close to it (Damerau–Levenshtein distance at most a third of its length,
/// at least 1; case differences cost nothing).
pub(crate) fn did_you_mean(message: String) -> String {
    let Some((word, rest)) = UNKNOWN.iter().find_map(|p| {
        let start = message.find(p)? + p.len();
        let len = message[start..].find('`')?;
        Some((&message[start..start + len], &message[start + len + 1..]))
    }) else {
        return message;
    };
    let best = candidates(rest)
        .filter(|c| *c != word)
        .map(|c| {
            let d = strsim::damerau_levenshtein(&word.to_lowercase(), &c.to_lowercase());
            (d, c)
        })
        .min_by_key(|&(d, _)| d);
    match best {
        Some((d, c))
            if d <= (word.chars().count() / 3).max(1)
                && d < word.chars().count().max(c.chars().count()) =>
        {
            let c = c.to_owned();
            format!("{message} (did you mean `{c}`?)")
        }
        _ => message,
    }
}

/// The allowed words: every backticked word, and the comma-separated list after "(it has:" or
/// "are:".
fn candidates(rest: &str) -> impl Iterator<Item = &str> {
    let quoted = rest.split('`').skip(1).step_by(2);
    let listed = ["(it has: ", "are: "]
        .iter()
        .find_map(|p| rest.find(p).map(|i| &rest[i + p.len()..]))
        .map(|list| list.split(')').next().unwrap_or(list))
        .into_iter()
        .flat_map(|list| list.split(',').map(str::trim).filter(|w| !w.is_empty()));
    quoted.chain(listed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggests_the_closest_allowed_word() {
        let cases = [
            (
                "unknown field `rat`, expected one of `rate`, `delay`, `queue`",
                Some("rate"),
            ),
            (
                "unknown variant `cubik`, expected `reno` or `cubic`",
                Some("cubic"),
            ),
            (
                "unknown variant `NewReno`, expected `reno` or `newreno`",
                Some("newreno"),
            ),
            (
                "`link` has no element named `forwrd` (it has: server-gateway, forward, return)",
                Some("forward"),
            ),
            ("unknown node `bb`; the nodes are: a, b", Some("b")),
            (
                "unknown key `recovry`, expected one of `cc`, `recovery`",
                Some("recovery"),
            ),
            // Too far from anything: no guess.
            (
                "unknown field `zzzz`, expected one of `rate`, `delay`",
                None,
            ),
            ("unknown node `x`; the nodes are: a, b", None),
            // No unknown word at all.
            ("expected a rate", None),
        ];
        for (msg, want) in cases {
            let got = did_you_mean(msg.to_owned());
            match want {
                Some(w) => assert_eq!(got, format!("{msg} (did you mean `{w}`?)")),
                None => assert_eq!(got, msg),
            }
        }
    }
}
