//! `manifest.search(query)` over the native manifest: the ranking is
//! `quickforge_catalog::search`, shared with the edge; this is the query's
//! error as the host words it and the view of the manifest it ranks.
//!
//! Terms are matched against the tool name's words first (`list_issues` →
//! `list`, `issues`), then the server name, then the title and description.
//! Tools that match every term come before tools that match some, so
//! "create issue" puts `issues.create` above `issues.list`. A near-miss in a
//! name (`isues`) still counts, for less. An empty query lists every tool.

use serde_json::Value;

use quickforge_catalog::search::{Candidate, QueryError};

use super::Manifest;
use crate::error::{ErrorCode, ForgeError};

/// A query, checked against the bounds and split into the words it ranks.
#[derive(Debug, Clone)]
pub struct Query(quickforge_catalog::search::Query);

impl Query {
    /// `text` as a query, or `INVALID_ARGUMENT` when it is over the bounds
    /// of `quickforge_catalog::search` (bytes, distinct words).
    pub fn parse(text: &str) -> Result<Query, ForgeError> {
        quickforge_catalog::search::Query::parse(text)
            .map(Query)
            .map_err(|QueryError(message)| {
                ForgeError::new(ErrorCode::InvalidArgument, message).suggest(QueryError::SUGGESTION)
            })
    }

    /// The query as the script wrote it.
    pub fn text(&self) -> &str {
        self.0.text()
    }
}

/// The best `limit` matches for `query` among the servers `visible` lets
/// through: `[{server, tool, description}]`.
pub fn search(
    manifest: &Manifest,
    query: &Query,
    limit: usize,
    visible: &dyn Fn(&str) -> bool,
) -> Value {
    let servers = manifest.servers().filter(|s| visible(&s.name)).map(|s| {
        let tools = s.tools.iter().map(|t| Candidate {
            name: &t.name,
            description: &t.description,
            words: t.words(),
        });
        (s.name.as_str(), tools)
    });
    let mut hits = quickforge_catalog::search::search(&query.0, limit, servers);
    // a tool changed since it was trusted says so where it is found
    for hit in hits.as_array_mut().into_iter().flatten() {
        let (Some(server), Some(tool)) = (hit["server"].as_str(), hit["tool"].as_str()) else {
            continue;
        };
        if let Some(change) = manifest.server(server).and_then(|s| s.changed.get(tool)) {
            hit["changed"] = change.fields.clone().into();
        }
    }
    hits
}

#[cfg(test)]
mod tests {
    use super::super::tests::sample;
    use super::*;
    use quickforge_catalog::search::{MAX_QUERY_BYTES, MAX_QUERY_TERMS};

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

    fn search(m: &Manifest, query: &str, limit: usize) -> Value {
        super::search(m, &Query::parse(query).unwrap(), limit, &|_| true)
    }

    #[test]
    fn queries_over_the_bounds_are_refused_with_the_limit() {
        let long = "a".repeat(MAX_QUERY_BYTES + 1);
        let e = Query::parse(&long).unwrap_err();
        assert!(e.code.is(ErrorCode::InvalidArgument));
        assert!(
            e.message.contains("1025 bytes, over the 1024-byte limit"),
            "{e:?}"
        );
        let many: Vec<String> = (0..=MAX_QUERY_TERMS).map(|i| format!("w{i}")).collect();
        let e = Query::parse(&many.join(" ")).unwrap_err();
        assert!(e.message.contains("33 distinct words"), "{e:?}");
        // Repeats and stop words do not count.
        assert!(Query::parse(&"issue the ".repeat(100)).is_ok());
    }

    #[test]
    fn servers_the_filter_hides_are_not_searched() {
        let m = sample();
        let q = Query::parse("").unwrap();
        let hits = tools(&super::search(&m, &q, 100, &|s| s != "github"));
        assert_eq!(hits, ["memory/create_entities"]);
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
}
