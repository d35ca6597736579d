//! Who an HTTP request comes from (`[auth]`): quickforge as an OAuth
//! resource server in the sense of the MCP authorization specification.
//!
//! Every request to `/mcp` carries `Authorization: Bearer <token>`. The
//! token is either an opaque token listed in forge.toml by its SHA-256
//! (`[[auth.tokens]]`, compared in constant time), or a JWT of the
//! configured issuer checked against its JWKS (`[auth.jwt]`, see `jwt`).
//! Either way the request gets a [`Subject`] in its extensions, which the
//! MCP server reads per request: stash handles, task ids and MRTR request
//! states are sealed for it (`crate::state::HandleKey::mint_for`), the
//! execution rate can be counted per subject, and the audit line carries a
//! hash of it. A missing or bad token is answered 401 with the
//! `WWW-Authenticate` header RFC 6750 and RFC 9728 describe (`http`).
//!
//! Tokens never reach a log: the middleware reads the header, hashes or
//! verifies the token, and drops it; only the subject goes on.
//!
//! Rooms: `config` (`[auth]` parsed and validated), `jwt` (JWTs and the
//! JWKS cache), `http` (the middleware and the metadata document). Which
//! subject each HTTP session belongs to is the session's own fact
//! (`crate::session`).

mod config;
mod http;
mod jwt;

use std::sync::Arc;

use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

pub use config::{AuthConfig, RateLimitScope, RawAuth};
pub use http::{metadata_routes, protect};

/// The `Authorization` header a request was authenticated with. The
/// middleware takes it out of the headers, so nothing further in (rmcp,
/// logs, the audit line) ever sees the token, and keeps it here for the one
/// place that must present it again: forwarding a follow-up to the replica
/// that runs it (`cli::forward`), which checks it afresh. Never shown by
/// `Debug`.
#[derive(Clone)]
pub struct Presented(pub axum::http::HeaderValue);

impl std::fmt::Debug for Presented {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Presented(..)")
    }
}

tokio::task_local! {
    /// The subject of the HTTP request being served, for code that runs
    /// inside the request but is handed neither the request nor its
    /// extensions: rmcp's `SessionStore` (`session::store`), which
    /// must not restore one subject's session for another.
    static REQUEST_SUBJECT: Subject;
}

/// The subject of the HTTP request this task serves, if it was
/// authenticated (`None` without `[auth]`, on stdio, or outside a request).
pub(crate) fn request_subject() -> Option<Subject> {
    REQUEST_SUBJECT.try_with(Subject::clone).ok()
}

/// Runs `fut` as serving a request of `subject` (see [`request_subject`]).
pub(crate) async fn serving<F: std::future::Future>(subject: Subject, fut: F) -> F::Output {
    REQUEST_SUBJECT.scope(subject, fut).await
}

/// The authenticated party a request comes from: the `subject` of an
/// opaque token, or a JWT's `sub` claim. Cheap to clone.
#[derive(Clone, PartialEq, Eq)]
pub struct Subject(Arc<str>);

impl Subject {
    /// `id` as a subject, if it is a usable one (1 to 256 bytes, no control
    /// characters).
    pub fn new(id: &str) -> Option<Subject> {
        config::check_subject(id).ok()?;
        Some(Subject(id.into()))
    }

    /// The subject's id.
    pub fn id(&self) -> &str {
        &self.0
    }

    /// The first 64 bits of the SHA-256 of `id`, hex: what the audit line
    /// shows instead of the id (an e-mail address, often). A pseudonym, not
    /// a secret: whoever guesses the id can compute it, which is how an
    /// investigator finds one user's lines.
    pub fn fingerprint(id: &str) -> String {
        hex::encode(&Sha256::digest(id.as_bytes())[..8])
    }
}

impl std::fmt::Debug for Subject {
    /// The fingerprint only: logs never carry the id.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Subject({})", Subject::fingerprint(&self.0))
    }
}

/// Why a request's token was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rejection {
    /// The token is not valid here (RFC 6750 `invalid_token`); the text
    /// says why, without the token.
    Invalid(&'static str),
    /// The token could not be checked now (the issuer's keys are out of
    /// reach): 503, retry.
    Unavailable(&'static str),
}

impl Rejection {
    fn invalid(why: &'static str) -> Rejection {
        Rejection::Invalid(why)
    }
}

/// Checks bearer tokens as `[auth]` says.
pub struct Authenticator {
    config: AuthConfig,
    jwt: Option<jwt::JwtVerifier>,
}

impl Authenticator {
    /// The checks `config` describes.
    pub fn new(config: AuthConfig) -> Authenticator {
        Authenticator {
            jwt: config.jwt.clone().map(jwt::JwtVerifier::new),
            config,
        }
    }

    /// The configuration.
    pub fn config(&self) -> &AuthConfig {
        &self.config
    }

    /// The subject `token` authenticates.
    pub async fn authenticate(&self, token: &str) -> Result<Subject, Rejection> {
        if let Some(subject) = self.opaque(token) {
            return Ok(subject);
        }
        match &self.jwt {
            // A JWT is three base64url parts.
            Some(jwt) if token.bytes().filter(|&b| b == b'.').count() == 2 => {
                jwt.verify(token).await
            }
            _ => Err(Rejection::invalid("the token is not valid here")),
        }
    }

    /// The subject of the opaque token `token`, if it is listed. Every
    /// listed hash is compared, in constant time, whatever matched: the
    /// time taken says nothing about which hash came close.
    fn opaque(&self, token: &str) -> Option<Subject> {
        let hash = hash_token(token);
        let mut found = None;
        for (subject, listed) in &self.config.tokens {
            if bool::from(listed.ct_eq(&hash)) {
                found = Some(subject);
            }
        }
        found.and_then(|s| Subject::new(s))
    }
}

/// The SHA-256 of `token`, as `[[auth.tokens]] sha256` lists it (in hex).
/// A plain hash suffices: the tokens are random secrets of 128 bits or
/// more, not passwords, so no one inverts the hash by guessing.
pub fn hash_token(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

/// Shortest token `quickforge auth hash-token` accepts, in bytes: 32,
/// e.g. 24 random bytes in base64 or 16 in hex; shorter is guessable.
pub const MIN_TOKEN_BYTES: usize = 32;

#[cfg(test)]
mod tests {
    use super::*;

    fn with_tokens(tokens: &[(&str, &str)]) -> Authenticator {
        Authenticator::new(AuthConfig {
            resource: url::Url::parse("https://gw.example.com/mcp").unwrap(),
            authorization_servers: Vec::new(),
            tokens: tokens
                .iter()
                .map(|(s, t)| (s.to_string(), hash_token(t)))
                .collect(),
            jwt: None,
            rate_limit_scope: RateLimitScope::Gateway,
        })
    }

    #[tokio::test]
    async fn an_opaque_token_names_its_subject_and_others_are_refused() {
        let auth = with_tokens(&[("alice", "token-of-alice"), ("bob", "token-of-bob")]);
        assert_eq!(auth.authenticate("token-of-bob").await.unwrap().id(), "bob");
        assert_eq!(
            auth.authenticate("token-of-alice").await.unwrap().id(),
            "alice"
        );
        for bad in ["", "token-of-carol", "token-of-alice ", "a.b.c"] {
            assert!(matches!(
                auth.authenticate(bad).await,
                Err(Rejection::Invalid(_))
            ));
        }
    }

    #[test]
    fn a_subject_shows_only_its_fingerprint() {
        let s = Subject::new("alice@example.com").unwrap();
        let shown = format!("{s:?}");
        assert!(!shown.contains("alice"), "{shown}");
        assert_eq!(Subject::fingerprint(s.id()).len(), 16);
        assert!(Subject::new("").is_none() && Subject::new("a\nb").is_none());
    }
}
