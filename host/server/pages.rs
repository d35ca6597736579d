//! quickforge's own prompts, resources and completions: the downstream
//! servers' (see `gateway::merged`), paginated here over the merged lists.

use rmcp::ErrorData as McpError;
use rmcp::model::{Cursor, PaginatedRequestParams};

/// Items per page of a merged list: large enough that a typical gateway's
/// lists fit in one page, small enough that a page stays a modest message.
pub const PAGE_SIZE: usize = 100;

/// The page of `items` that `request`'s cursor names, and the cursor of
/// the next page. A cursor is the offset of the page's first item; the
/// lists are rebuilt from the live manifest for every page, so a server
/// that changes its list between two pages can shift what a page holds,
/// as with any server's own paging.
pub fn page<T>(
    items: Vec<T>,
    request: Option<&PaginatedRequestParams>,
) -> Result<(Vec<T>, Option<Cursor>), McpError> {
    let start = match request.and_then(|r| r.cursor.as_deref()) {
        None => 0,
        Some(c) => c
            .strip_prefix("qf:")
            .and_then(|n| n.parse::<usize>().ok())
            .filter(|n| *n <= items.len())
            .ok_or_else(|| McpError::invalid_params(format!("unknown cursor {c:?}"), None))?,
    };
    let end = (start + PAGE_SIZE).min(items.len());
    let next = (end < items.len()).then(|| format!("qf:{end}"));
    Ok((
        items.into_iter().skip(start).take(PAGE_SIZE).collect(),
        next,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(cursor: Option<String>) -> PaginatedRequestParams {
        let mut p = PaginatedRequestParams::default();
        p.cursor = cursor;
        p
    }

    /// Every item once, in order, across pages; a cursor past the end or
    /// not ours is refused.
    #[test]
    fn pages_cover_every_item_once() {
        let items: Vec<usize> = (0..250).collect();
        let mut seen = Vec::new();
        let mut cursor = None;
        loop {
            let (page, next) = page(items.clone(), Some(&params(cursor))).unwrap();
            seen.extend(page);
            match next {
                Some(n) => cursor = Some(n),
                None => break,
            }
        }
        assert_eq!(seen, items);
        assert!(page(items.clone(), Some(&params(Some("qf:999".into())))).is_err());
        assert!(page(items, Some(&params(Some("abc".into())))).is_err());
    }
}
