//! `manifest.search(query)`: rank tools by how well their names and
//! descriptions match a free-text query.
//!
//! Terms are matched against the tool name's words first (`list_issues` →
//! `list`, `issues`), then the server name, then the title and description.
//! Tools that match every term come before tools that match some, so
//! "create issue" puts `issues.create` above `issues.list`. A near-miss in a
//! name (`isues`) still counts, for less. An empty query lists every tool.
//!
//! The ranking is over any view of the tools ([`Candidate`]), so the native
//! manifest and the edge's snapshot rank alike.

use std::sync::OnceLock;

use serde_json::{Value, json};

use crate::{SUMMARY_CHARS, summary};

/// Most results one search returns: more than any model reads, and a bound
/// on the JSON one `manifest.search` can make the host build.
pub const MAX_SEARCH_LIMIT: usize = 1000;

/// Longest query, in bytes. A search is a few words; 1 KiB is a paragraph.
/// The bound keeps a search's work proportional to the manifest, not to
/// what a script passes (a megabyte query once ranked for 38 s).
pub const MAX_QUERY_BYTES: usize = 1024;

/// Most distinct words of a query that are ranked (stop words and repeats
/// do not count). Each is compared with every word of every tool, so this
/// bounds the work per tool; 32 is far more than any query needs.
pub const MAX_QUERY_TERMS: usize = 32;

/// Words too common to tell tools apart.
const STOP_WORDS: &[&str] = &[
    "a", "an", "the", "to", "of", "and", "or", "in", "on", "for", "with", "by", "from", "tool",
    "tools",
];

/// A query, checked against the bounds and split into the words it ranks.
#[derive(Debug, Clone)]
pub struct Query {
    text: String,
    terms: Vec<String>,
}

impl Query {
    /// `text` as a query, or why not when it is over [`MAX_QUERY_BYTES`]
    /// or has more than [`MAX_QUERY_TERMS`] words (the callers answer
    /// `INVALID_ARGUMENT` with [`QueryError::SUGGESTION`]).
    pub fn parse(text: &str) -> Result<Query, QueryError> {
        let too_big = |what: String| QueryError(format!("manifest.search query {what}"));
        if text.len() > MAX_QUERY_BYTES {
            return Err(too_big(format!(
                "is {} bytes, over the {MAX_QUERY_BYTES}-byte limit",
                text.len()
            )));
        }
        let mut terms: Vec<String> = Vec::new();
        for w in words(text) {
            if !STOP_WORDS.contains(&w.as_str()) && !terms.contains(&w) {
                terms.push(w);
            }
        }
        if terms.len() > MAX_QUERY_TERMS {
            return Err(too_big(format!(
                "has {} distinct words, over the limit of {MAX_QUERY_TERMS}",
                terms.len()
            )));
        }
        Ok(Query {
            text: text.to_string(),
            terms,
        })
    }

    /// The query as the script wrote it.
    pub fn text(&self) -> &str {
        &self.text
    }
}

/// Why a query was refused: the message for the script.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueryError(pub String);

impl QueryError {
    /// What to do instead, as both gateways suggest it.
    pub const SUGGESTION: &str = "search with a few words, e.g. manifest.search(\"create issue\")";
}

impl std::fmt::Display for QueryError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// A tool's words, split once per manifest rather than once per search.
#[derive(Debug, Default)]
pub struct ToolWords(OnceLock<Words>);

/// A tool's words, as the ranking compares them.
#[derive(Debug)]
pub struct Words {
    name: Vec<String>,
    folded_name: String,
    /// Words of the title and description, sorted, without repeats.
    text: Vec<String>,
}

impl ToolWords {
    /// The words of the tool with this `name`, `title` and `description`,
    /// split on first use.
    pub fn get(&self, name: &str, title: Option<&str>, description: &str) -> &Words {
        self.0.get_or_init(|| {
            let name = words(name);
            let mut text = words(description);
            if let Some(title) = title {
                text.extend(words(title));
            }
            text.sort_unstable();
            text.dedup();
            Words {
                folded_name: name.concat(),
                name,
                text,
            }
        })
    }
}

/// One tool as the ranking sees it.
pub struct Candidate<'a> {
    /// Its name on its server.
    pub name: &'a str,
    /// What it does (shown in the hit, cut to [`SUMMARY_CHARS`]).
    pub description: &'a str,
    /// Its words ([`ToolWords::get`]).
    pub words: &'a Words,
}

/// The best `limit` matches for `query` among `servers` (each a server's
/// name and its tools): `[{server, tool, description}]`, best first, ties
/// by server and tool name.
pub fn search<'a, T>(
    query: &Query,
    limit: usize,
    servers: impl IntoIterator<Item = (&'a str, T)>,
) -> Value
where
    T: IntoIterator<Item = Candidate<'a>>,
{
    let limit = limit.clamp(1, MAX_SEARCH_LIMIT);
    let terms = &query.terms;
    let folded_query: String = terms.concat();
    let mut hits: Vec<(f64, &str, &str, &str)> = Vec::new();
    for (server, tools) in servers {
        let server_words = words(server);
        for tool in tools {
            let score = if terms.is_empty() {
                1.0
            } else {
                score(terms, &folded_query, &server_words, tool.words)
            };
            if score > 0.0 {
                hits.push((score, server, tool.name, tool.description));
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

fn score(terms: &[String], folded_query: &str, server_words: &[String], tool: &Words) -> f64 {
    let name_words = &tool.name;
    let text_words = &tool.text;
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
    if tool.folded_name == folded_query {
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
pub fn words(text: &str) -> Vec<String> {
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
    use super::*;

    /// The sample the native manifest's tests use, as plain candidates.
    fn sample() -> Vec<(&'static str, Vec<(&'static str, &'static str)>)> {
        vec![
            (
                "github",
                vec![
                    ("issues.create", "Create an issue in a repository"),
                    ("issues.list", "List issues of a repository"),
                    ("search_code", "Search code across repositories"),
                ],
            ),
            (
                "memory",
                vec![("create_entities", "Create entities in the knowledge graph")],
            ),
        ]
    }

    fn ranked(query: &str, limit: usize) -> Vec<String> {
        let servers = sample();
        let words: Vec<Vec<ToolWords>> = servers
            .iter()
            .map(|(_, tools)| tools.iter().map(|_| ToolWords::default()).collect())
            .collect();
        let view = servers.iter().zip(&words).map(|((server, tools), words)| {
            (
                *server,
                tools
                    .iter()
                    .zip(words)
                    .map(|((name, description), w)| Candidate {
                        name,
                        description,
                        words: w.get(name, None, description),
                    }),
            )
        });
        let hits = search(&Query::parse(query).unwrap(), limit, view);
        hits.as_array()
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
    fn queries_over_the_bounds_are_refused_with_the_limit() {
        let long = "a".repeat(MAX_QUERY_BYTES + 1);
        let e = Query::parse(&long).unwrap_err();
        assert!(
            e.0.contains("1025 bytes, over the 1024-byte limit"),
            "{e:?}"
        );
        let many: Vec<String> = (0..=MAX_QUERY_TERMS).map(|i| format!("w{i}")).collect();
        let e = Query::parse(&many.join(" ")).unwrap_err();
        assert!(e.0.contains("33 distinct words"), "{e:?}");
        // Repeats and stop words do not count.
        assert!(Query::parse(&"issue the ".repeat(100)).is_ok());
    }

    #[test]
    fn words_split_names() {
        assert_eq!(words("listIssues"), ["list", "issues"]);
        assert_eq!(words("search_code.v2"), ["search", "code", "v2"]);
        assert_eq!(words("HTTPRequest"), ["httprequest"]);
    }

    #[test]
    fn ranks_full_matches_first() {
        let hits = ranked("create an issue", 10);
        assert_eq!(hits[0], "github/issues.create", "{hits:?}");
        assert!(hits.contains(&"github/issues.list".to_string()));
        assert!(
            !hits.contains(&"github/search_code".to_string()),
            "{hits:?}"
        );
    }

    #[test]
    fn finds_by_description_server_and_typos() {
        assert_eq!(ranked("knowledge graph", 5), ["memory/create_entities"]);
        assert_eq!(ranked("memory", 5), ["memory/create_entities"]);
        assert_eq!(ranked("isues", 5)[0], "github/issues.create");
    }

    #[test]
    fn empty_query_lists_everything_within_limit() {
        assert_eq!(ranked("", 100).len(), 4);
        assert_eq!(ranked("  ", 2).len(), 2);
        assert!(ranked("zzzz", 5).is_empty());
    }
}
