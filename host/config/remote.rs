//! `[auth]`: who may call a gateway served over HTTP. Checked here, where
//! every config error gets its file and line; `[auth]` itself is described
//! in `crate::auth`.

use std::path::Path;

use super::{ConfigError, Located, expand};

/// Validates `[auth]`, if present, reporting errors at their line.
pub(super) fn resolve_auth(
    raw: Option<crate::auth::RawAuth>,
    path: &Path,
    located: &Located<'_>,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<Option<crate::auth::AuthConfig>, ConfigError> {
    let Some(raw) = raw else {
        return Ok(None);
    };
    raw.validate(&|text| expand(text, lookup).map_err(|e| e.to_string()))
        .map(Some)
        .map_err(|(key, message)| {
            // The line of the table or key named first (`jwt.issuer` →
            // `[auth.jwt] issuer`; `tokens[1].sha256` → `[[auth.tokens]]`).
            let mut parts = vec!["auth"];
            parts.extend(key.split('.').map(|p| p.split('[').next().unwrap_or(p)));
            let line = located
                .line_of(&parts)
                .or_else(|| located.line_of(&parts[..parts.len().min(2)]))
                .or_else(|| located.line_of(&["auth"]));
            ConfigError::Invalid {
                path: path.to_path_buf(),
                line,
                key: format!("auth.{key}"),
                message,
            }
        })
}
