//! Did-you-mean: the closest known names to a misspelled one.
//!
//! Ranking uses Jaro-Winkler similarity (strsim), which favours shared
//! prefixes, the usual shape of a model's near-miss (`create_issue` for
//! `create_issues`), plus a case- and separator-insensitive exact match
//! (`createIssue` for `create_issue`) and substring containment (`issues`
//! for `github.list_issues`).

/// Lowest similarity worth suggesting. Below 0.8 the "suggestions" for short
/// names are mostly noise.
pub const MIN_SIMILARITY: f64 = 0.8;

/// Most suggestions returned: enough to cover an ambiguous miss, few enough
/// to read at a glance.
pub const MAX_SUGGESTIONS: usize = 3;

/// Longest name, in bytes, worth a did-you-mean: twice MCP's 128-character
/// tool name plus a server prefix. Ranking folds the name and compares it
/// with every candidate (containment, Jaro-Winkler), work that grows with
/// its length; a longer name is no near-miss of any real one, so it gets no
/// suggestion and costs nothing, whoever calls.
pub const MAX_WANTED: usize = 512;

/// Up to [`MAX_SUGGESTIONS`] candidates close to `wanted`, best first; none
/// when `wanted` is over [`MAX_WANTED`].
pub fn suggestions<'a>(
    wanted: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Vec<&'a str> {
    if wanted.len() > MAX_WANTED {
        return Vec::new();
    }
    let folded = fold(wanted);
    let mut scored: Vec<(f64, &str)> = candidates
        .into_iter()
        .filter_map(|c| {
            let cf = fold(c);
            let score = if cf == folded {
                2.0
            } else if !folded.is_empty()
                && (cf.contains(&folded) || folded.contains(&cf))
                && cf.len().min(folded.len()) >= 3
            {
                1.0 + strsim::jaro_winkler(&folded, &cf) / 10.0
            } else {
                strsim::jaro_winkler(&folded, &cf)
            };
            (score >= MIN_SIMILARITY).then_some((score, c))
        })
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(b.1)));
    scored.dedup_by(|a, b| a.1 == b.1);
    scored
        .into_iter()
        .take(MAX_SUGGESTIONS)
        .map(|(_, c)| c)
        .collect()
}

/// The single best candidate, if any is close enough.
pub fn did_you_mean<'a>(
    wanted: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    suggestions(wanted, candidates).into_iter().next()
}

/// `suggestions` as a sentence for an error's `suggestion` field, e.g.
/// `did you mean "create_issue" or "create_issues"?`.
pub fn sentence(found: &[&str]) -> Option<String> {
    let quoted: Vec<String> = found.iter().map(|s| format!("{s:?}")).collect();
    match quoted.as_slice() {
        [] => None,
        [one] => Some(format!("did you mean {one}?")),
        [init @ .., last] => Some(format!("did you mean {} or {last}?", init.join(", "))),
    }
}

/// Most configured names [`listing`] shows: enough for any usual gateway,
/// bounded so a gateway of hundreds of servers does not flood an error.
pub const MAX_LISTED: usize = 20;

/// The known names as a suggestion, when none is close to the one asked
/// for: `the configured names are "a", "b"` (the first [`MAX_LISTED`], and
/// how many more).
pub fn listing<'a>(names: impl IntoIterator<Item = &'a str>) -> Option<String> {
    let mut names: Vec<&str> = names.into_iter().collect();
    names.sort_unstable();
    let shown: Vec<String> = names
        .iter()
        .take(MAX_LISTED)
        .map(|s| format!("{s:?}"))
        .collect();
    match names.len() {
        0 => None,
        n if n > MAX_LISTED => Some(format!(
            "the configured names are {} and {} more (see manifest.servers)",
            shown.join(", "),
            n - MAX_LISTED
        )),
        _ => Some(format!("the configured names are {}", shown.join(", "))),
    }
}

/// Lowercase without `_`, `-`, `.` and spaces.
fn fold(s: &str) -> String {
    s.chars()
        .filter(|c| !matches!(c, '_' | '-' | '.' | ' '))
        .flat_map(char::to_lowercase)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOOLS: &[&str] = &[
        "create_issue",
        "list_issues",
        "get_issue",
        "search_code",
        "echo",
    ];

    #[test]
    fn finds_near_misses() {
        assert_eq!(
            did_you_mean("create_isue", TOOLS.iter().copied()),
            Some("create_issue")
        );
        assert_eq!(
            did_you_mean("createIssue", TOOLS.iter().copied()),
            Some("create_issue")
        );
        assert_eq!(did_you_mean("ecoh", ["echo", "add"]), Some("echo"));
        assert_eq!(
            did_you_mean("memroy", ["memory", "everything"]),
            Some("memory")
        );
    }

    #[test]
    fn stays_quiet_when_nothing_is_close() {
        assert_eq!(
            did_you_mean("deploy_kubernetes", TOOLS.iter().copied()),
            None
        );
        assert!(suggestions("x", TOOLS.iter().copied()).is_empty());
    }

    #[test]
    fn an_oversized_name_gets_no_suggestion() {
        let long = format!("create_issue{}", "x".repeat(MAX_WANTED));
        assert!(suggestions(&long, TOOLS.iter().copied()).is_empty());
    }

    #[test]
    fn ranks_and_bounds() {
        let found = suggestions("issue", TOOLS.iter().copied());
        assert!(
            found.len() <= MAX_SUGGESTIONS && found.contains(&"get_issue"),
            "{found:?}"
        );
        assert_eq!(sentence(&["a"]).unwrap(), "did you mean \"a\"?");
        assert_eq!(
            sentence(&["a", "b", "c"]).unwrap(),
            "did you mean \"a\", \"b\" or \"c\"?"
        );
        assert_eq!(sentence(&[]), None);
    }
}
