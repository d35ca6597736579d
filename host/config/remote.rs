//! `[auth]` and `[server]`: who may call a gateway served over HTTP, and
//! the name of this replica. Checked here, where every config error gets
//! its file and line; `[auth]` itself is described in `crate::auth`.

use std::path::Path;

use serde::Deserialize;

use super::{ConfigError, Located, expand};

/// `[server]`: this gateway process among its replicas.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawServerSection {
    replica: Option<String>,
}

/// Longest replica name, in bytes: 128, room for any host name or pod
/// name; it is written in every audit line.
pub const MAX_REPLICA_BYTES: usize = 128;

/// The replica's name: `[server] replica` (with `${VAR}` expanded, e.g.
/// `"${POD_NAME}"`), else the host's name, else `"quickforge"`.
pub(super) fn resolve_replica(
    raw: RawServerSection,
    path: &Path,
    located: &Located<'_>,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<String, ConfigError> {
    let invalid = |message: String| ConfigError::Invalid {
        path: path.to_path_buf(),
        line: located.line_of(&["server", "replica"]),
        key: "server.replica".into(),
        message,
    };
    let Some(text) = raw.replica else {
        return Ok(default_replica());
    };
    let name = expand(&text, lookup).map_err(|e| invalid(e.to_string()))?;
    if name.is_empty() || name.len() > MAX_REPLICA_BYTES || name.chars().any(char::is_control) {
        return Err(invalid(format!(
            "must be 1 to {MAX_REPLICA_BYTES} bytes without control characters, got {:?}",
            crate::error::preview(&name)
        )));
    }
    Ok(name)
}

/// The host's name, as the default replica name.
pub fn default_replica() -> String {
    gethostname::gethostname()
        .into_string()
        .ok()
        .filter(|h| !h.is_empty() && h.len() <= MAX_REPLICA_BYTES)
        .unwrap_or_else(|| "quickforge".into())
}

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
