//! `manifest.search(query)`: rank tools by how well their names and
//! descriptions match a free-text query.
//!
//! Terms are matched against the tool name's words first (`list_issues` →
//! `list`, `issues`), then the server name, then the title and description.
//! Tools that match every term come before tools that match some, so
//! "create issue" puts `issues.create` above `issues.list`. A near-miss in a
//! name (`isues`) still counts, for less. An empty query lists every tool.

use serde_json::{Value, json};

use super::{Manifest, SUMMARY_CHARS, summary};

/// Most results one search returns: more than any model reads, and a bound
/// on the JSON one `manifest.search` can make the host build.
pub const MAX_SEARCH_LIMIT: usize = 1000;

/// Words too common to tell tools apart.
const STOP_WORDS: &[&str] = &[
    "a", "an", "the", "to", "of", "and", "or", "in", "on", "for", "with", "by", "from", "tool",
    "tools",
];

/// The best `limit` matches for `query`: `[{server, tool, description}]`.
pub fn search(manifest: &Manifest, query: &str, limit: usize) -> Value {
    let limit = limit.clamp(1, MAX_SEARCH_LIMIT);
    let terms: Vec<String> = words(query)
        .into_iter()
        .filter(|w| !STOP_WORDS.contains(&w.as_str()))
        .collect();
    let mut hits: Vec<(f64, &str, &str, &str)> = Vec::new();
    for server in manifest.servers() {
        let server_words = words(&server.name);
        for tool in &server.tools {
            let score = if terms.is_empty() {
                1.0
            } else {
                score(
                    &terms,
                    &server_words,
                    &tool.name,
                    tool.title.as_deref(),
                    &tool.description,
                )
            };
            if score > 0.0 {
                hits.push((score, &server.name, &tool.name, &tool.description));
            }
        }
    }
    hits.sort_by(|a, b| {
        b.0.total_cmp(&a.0)
            .then_with(|| (a.1, a.2).cmp(&(b.1, b.2)))
    });
    Value::Array(
        hits.into_iter()
            .take(limit)
            .map(|(_, server, tool, description)| {
                json!({"server": server, "tool": tool, "description": summary(description, SUMMARY_CHARS)})
            })
            .collect(),
    )
}

fn score(
    terms: &[String],
    server_words: &[String],
    name: &str,
    title: Option<&str>,
    description: &str,
) -> f64 {
    let name_words = words(name);
    let mut text_words = words(description);
    if let Some(title) = title {
        text_words.extend(words(title));
    }
    let folded_query: String = terms.concat();
    let folded_name: String = name_words.concat();
    let mut total = 0.0;
    let mut matched = 0usize;
    for term in terms {
        let root = stem(term);
        let in_name = if name_words.iter().any(|w| w == term || stem(w) == root) {
            10.0
        } else if term.len() >= 3
            && name_words
                .iter()
                .any(|w| w.starts_with(root) || w.contains(term.as_str()))
        {
            6.0
        } else if term.len() >= 4
            && name_words
                .iter()
                .any(|w| strsim::jaro_winkler(w, term) >= 0.88)
        {
            4.0
        } else {
            0.0
        };
        let in_server = if server_words.iter().any(|w| w == term) {
            4.0
        } else {
            0.0
        };
        let in_text = if text_words.iter().any(|w| w == term || stem(w) == root) {
            3.0
        } else if term.len() >= 4 && text_words.iter().any(|w| w.starts_with(root)) {
            1.5
        } else {
            0.0
        };
        let best =
            f64::max(in_name, f64::max(in_server, in_text)) + 0.1 * (in_name + in_server + in_text);
        if best > 0.0 {
            matched += 1;
            total += best;
        }
    }
    if matched == 0 {
        return 0.0;
    }
    if folded_name == folded_query {
        total += 20.0;
    }
    let coverage = matched as f64 / terms.len() as f64;
    total * coverage * coverage
}

/// A crude English stem: enough that "issue" finds "issues" and "listing"
/// finds "list".
fn stem(word: &str) -> &str {
    for suffix in ["ing", "es", "s", "ed"] {
        if word.len() > suffix.len() + 2
            && let Some(s) = word.strip_suffix(suffix)
        {
            return s;
        }
    }
    word
}

/// Lowercase words of `text`, split at non-alphanumerics and camelCase humps.
fn words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut prev_lower = false;
    for c in text.chars() {
        if c.is_alphanumeric() {
            if c.is_uppercase() && prev_lower && !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
            prev_lower = c.is_lowercase() || c.is_ascii_digit();
            cur.extend(c.to_lowercase());
        } else {
            prev_lower = false;
            if !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::tests::sample;
    use super::*;

    fn tools(v: &Value) -> Vec<String> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|h| {
                format!(
                    "{}/{}",
                    h["server"].as_str().unwrap(),
                    h["tool"].as_str().unwrap()
                )
            })
            .collect()
    }

    #[test]
    fn words_split_names() {
        assert_eq!(words("listIssues"), ["list", "issues"]);
        assert_eq!(words("search_code.v2"), ["search", "code", "v2"]);
        assert_eq!(words("HTTPRequest"), ["httprequest"]);
    }

    #[test]
    fn ranks_full_matches_first() {
        let m = sample();
        let hits = tools(&search(&m, "create an issue", 10));
        assert_eq!(hits[0], "github/issues.create", "{hits:?}");
        assert!(hits.contains(&"github/issues.list".to_string()));
        assert!(
            !hits.contains(&"github/search_code".to_string()),
            "{hits:?}"
        );
    }

    #[test]
    fn finds_by_description_server_and_typos() {
        let m = sample();
        assert_eq!(
            tools(&search(&m, "knowledge graph", 5)),
            ["memory/create_entities"]
        );
        assert_eq!(tools(&search(&m, "memory", 5)), ["memory/create_entities"]);
        assert_eq!(tools(&search(&m, "isues", 5))[0], "github/issues.create");
    }

    #[test]
    fn empty_query_lists_everything_within_limit() {
        let m = sample();
        assert_eq!(tools(&search(&m, "", 100)).len(), 4);
        assert_eq!(tools(&search(&m, "  ", 2)).len(), 2);
        assert_eq!(search(&m, "zzzz", 5), json!([]));
    }
}
