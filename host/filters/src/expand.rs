//! `${VAR}` expansion in config values.
//!
//! `${NAME}` is replaced by the environment variable `NAME`; an unset variable
//! is an error (a server started with an empty token fails later, far from the
//! cause). `${NAME:-fallback}` uses `fallback` when `NAME` is unset or empty.
//! `$$` is a literal `$`. A `$` followed by anything else is kept as it is, so
//! values like `cost: $5` need no escaping.

/// Why a value could not be expanded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExpandError {
    /// `${NAME}` names a variable that is not set.
    #[error(
        "environment variable {0} is not set (referenced as ${{{0}}}); set it, or write ${{{0}:-default}}"
    )]
    Unset(String),
    /// `${` without its closing `}`.
    #[error("unterminated ${{ in {0:?}: write ${{NAME}}, or $$ for a literal $")]
    Unterminated(String),
    /// `${...}` whose name is not `[A-Za-z_][A-Za-z0-9_]*`.
    #[error(
        "invalid variable name {0:?} in ${{...}}: names are letters, digits and _, not starting with a digit"
    )]
    BadName(String),
}

/// Expands `value`, reading variables through `lookup`.
pub fn expand(value: &str, lookup: &dyn Fn(&str) -> Option<String>) -> Result<String, ExpandError> {
    substitute(value, |name, fallback| {
        match (
            lookup(name).filter(|v| !v.is_empty() || fallback.is_none()),
            fallback,
        ) {
            (Some(v), _) => Ok(v),
            (None, Some(fallback)) => Ok(fallback.to_string()),
            (None, None) => Err(ExpandError::Unset(name.to_string())),
        }
    })
}

/// One `${NAME}` or `${NAME:-fallback}` in a value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reference {
    /// The variable's name.
    pub name: String,
    /// Whether it is written with a `:-fallback`, so it may be left unset.
    pub has_fallback: bool,
}

/// The variables `value` references, in order, each with whether it has a
/// fallback, for `quickforge doctor`; a malformed reference ends the list.
pub fn references_with_fallbacks(value: &str) -> Vec<Reference> {
    let mut found = Vec::new();
    let _ = substitute(value, |name, fallback| {
        found.push(Reference {
            name: name.to_string(),
            has_fallback: fallback.is_some(),
        });
        Ok(String::new())
    });
    found
}

/// Walks `value`, replacing each `${NAME}` or `${NAME:-fallback}` by what
/// `resolve` returns for its name and fallback, and `$$` by `$`.
fn substitute(
    value: &str,
    mut resolve: impl FnMut(&str, Option<&str>) -> Result<String, ExpandError>,
) -> Result<String, ExpandError> {
    let mut out = String::with_capacity(value.len());
    let mut rest = value;
    while let Some(i) = rest.find('$') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        if let Some(tail) = after.strip_prefix('$') {
            out.push('$');
            rest = tail;
        } else if let Some(body) = after.strip_prefix('{') {
            let end = body
                .find('}')
                .ok_or_else(|| ExpandError::Unterminated(value.to_string()))?;
            let inner = &body[..end];
            let (name, fallback) = match inner.split_once(":-") {
                Some((name, fallback)) => (name, Some(fallback)),
                None => (inner, None),
            };
            if !valid_name(name) {
                return Err(ExpandError::BadName(name.to_string()));
            }
            out.push_str(&resolve(name, fallback)?);
            rest = &body[end + 1..];
        } else {
            out.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    Ok(out)
}

fn valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(name: &str) -> Option<String> {
        match name {
            "TOKEN" => Some("s3cret".into()),
            "EMPTY" => Some(String::new()),
            _ => None,
        }
    }

    #[test]
    fn expands_set_variables_and_keeps_other_dollars() {
        assert_eq!(expand("Bearer ${TOKEN}", &env).unwrap(), "Bearer s3cret");
        assert_eq!(
            expand("cost: $5 and $$ and $", &env).unwrap(),
            "cost: $5 and $ and $"
        );
        assert_eq!(expand("${TOKEN}${TOKEN}", &env).unwrap(), "s3crets3cret");
        assert_eq!(expand("no vars", &env).unwrap(), "no vars");
    }

    #[test]
    fn fallbacks_apply_to_unset_and_empty() {
        assert_eq!(expand("${MISSING:-x}", &env).unwrap(), "x");
        assert_eq!(expand("${EMPTY:-x}", &env).unwrap(), "x");
        assert_eq!(expand("${EMPTY}", &env).unwrap(), "");
        assert_eq!(expand("${TOKEN:-x}", &env).unwrap(), "s3cret");
    }

    #[test]
    fn errors_name_the_problem() {
        assert_eq!(
            expand("a ${MISSING} b", &env),
            Err(ExpandError::Unset("MISSING".into()))
        );
        assert!(matches!(
            expand("${TOKEN", &env),
            Err(ExpandError::Unterminated(_))
        ));
        assert_eq!(
            expand("${1X}", &env),
            Err(ExpandError::BadName("1X".into()))
        );
        let msg = ExpandError::Unset("GITHUB_TOKEN".into()).to_string();
        assert!(msg.contains("GITHUB_TOKEN is not set"), "{msg}");
    }

    #[test]
    fn references_lists_every_name() {
        let references = |v| -> Vec<String> {
            references_with_fallbacks(v)
                .into_iter()
                .map(|r| r.name)
                .collect()
        };
        assert_eq!(references("${A} and ${B:-x} and $$"), vec!["A", "B"]);
    }

    #[test]
    fn references_say_which_have_a_fallback() {
        let refs = references_with_fallbacks("${A} ${B:-x} ${C:-}");
        let seen: Vec<_> = refs
            .iter()
            .map(|r| (r.name.as_str(), r.has_fallback))
            .collect();
        assert_eq!(seen, vec![("A", false), ("B", true), ("C", true)]);
    }
}
