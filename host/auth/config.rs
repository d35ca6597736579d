//! `[auth]` in forge.toml: parsed strictly ([`RawAuth`]), then validated
//! into the [`AuthConfig`] the gateway runs on. Here rather than in
//! `config`, beside what it configures, as `[audit]` is.

use std::time::Duration;

use serde::Deserialize;

/// `[auth]` as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawAuth {
    resource: Option<String>,
    #[serde(default)]
    authorization_servers: Vec<String>,
    #[serde(default)]
    tokens: Vec<RawToken>,
    jwt: Option<RawJwt>,
    #[serde(default)]
    rate_limit_scope: RateLimitScope,
}

/// `[[auth.tokens]]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawToken {
    subject: String,
    sha256: String,
}

/// `[auth.jwt]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawJwt {
    issuer: String,
    jwks_uri: String,
    audience: Option<Vec<String>>,
    algorithms: Option<Vec<String>>,
    leeway_secs: Option<u64>,
    jwks_refresh_secs: Option<u64>,
    jwks_max_age_secs: Option<u64>,
}

/// Whose executions `[sandbox] max_executions_per_minute` counts together.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RateLimitScope {
    /// All of the gateway's executions share one budget (the default, and
    /// the only meaning without `[auth]`): the limit protects the
    /// downstream servers, whoever calls.
    #[default]
    Gateway,
    /// Each authenticated subject has a budget of its own, so one user's
    /// loop does not lock the others out.
    Subject,
}

/// Default `[auth.jwt] algorithms`: RS256, what nearly every identity
/// provider signs access tokens with (Keycloak, Entra ID, Auth0, Okta),
/// and the two elliptic-curve algorithms the newer ones offer.
pub const DEFAULT_ALGORITHMS: [&str; 3] = ["RS256", "ES256", "EdDSA"];
/// Default `[auth.jwt] leeway_secs`: a minute of clock skew between the
/// identity provider and this host, jsonwebtoken's own default and what
/// most resource servers allow.
pub const DEFAULT_LEEWAY_SECS: u64 = 60;
/// Largest `leeway_secs`: five minutes. More would keep expired tokens
/// working noticeably long.
pub const MAX_LEEWAY_SECS: u64 = 300;
/// Default `[auth.jwt] jwks_refresh_secs`: the JWKS is fetched again for an
/// unknown `kid` at most once in this long. Thirty seconds picks up a
/// rotated key within a request or two, and a stream of tokens with made-up
/// key ids cannot turn the gateway into a flood against the provider.
pub const DEFAULT_JWKS_REFRESH_SECS: u64 = 30;
/// Default `[auth.jwt] jwks_max_age_secs`: the keys are fetched again after
/// an hour even when every `kid` is known, so a key the provider withdrew
/// stops working within the hour.
pub const DEFAULT_JWKS_MAX_AGE_SECS: u64 = 3600;
/// Longest subject, in bytes: 256, room for any user name, e-mail address
/// or provider subject id; longer is a mistake.
pub const MAX_SUBJECT_BYTES: usize = 256;

/// The validated `[auth]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthConfig {
    /// The canonical URL of this MCP endpoint (RFC 8707 / RFC 9728
    /// `resource`), e.g. `https://gw.example.com/mcp`.
    pub resource: url::Url,
    /// The authorization servers the metadata names (RFC 9728
    /// `authorization_servers`); by default the JWT issuer, if any.
    pub authorization_servers: Vec<String>,
    /// Opaque tokens: `(subject, SHA-256 of the token)`.
    pub tokens: Vec<(String, [u8; 32])>,
    /// JWT validation, if configured.
    pub jwt: Option<JwtConfig>,
    /// Whose executions the execution rate limit counts together.
    pub rate_limit_scope: RateLimitScope,
}

/// The validated `[auth.jwt]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JwtConfig {
    /// The one issuer accepted; the `iss` claim must equal it exactly.
    pub issuer: String,
    /// Where the issuer's public keys are.
    pub jwks_uri: url::Url,
    /// Accepted `aud` values; by default `[resource]`.
    pub audience: Vec<String>,
    /// Accepted signing algorithms (asymmetric only).
    pub algorithms: Vec<jsonwebtoken::Algorithm>,
    /// Clock skew allowed on `exp` and `nbf`.
    pub leeway: Duration,
    /// Least time between two fetches of the JWKS for an unknown `kid`.
    pub refresh: Duration,
    /// Longest the fetched keys are used before they are fetched again.
    pub max_age: Duration,
}

impl RawAuth {
    /// Validates `[auth]`; `expand` resolves `${VAR}` in URLs, the issuer
    /// and the audience. Errors are `(key under auth, message)`.
    pub fn validate(
        self,
        expand: &dyn Fn(&str) -> Result<String, String>,
    ) -> Result<AuthConfig, (String, String)> {
        let bad = |key: &str, message: String| (key.to_string(), message);
        let Some(resource) = self.resource else {
            return Err(bad(
                "resource",
                "is required: the canonical URL clients use for this gateway's MCP endpoint, e.g. \"https://gw.example.com/mcp\" (tokens must be issued for it)".into(),
            ));
        };
        let resource = web_url(&expand(&resource).map_err(|m| bad("resource", m))?)
            .map_err(|m| bad("resource", m))?;
        if resource.fragment().is_some() {
            return Err(bad(
                "resource",
                "must not have a #fragment (RFC 8707)".into(),
            ));
        }
        if self.tokens.is_empty() && self.jwt.is_none() {
            return Err(bad(
                "tokens",
                "[auth] needs a way to check tokens: at least one [[auth.tokens]] (subject and sha256 from `quickforge auth hash-token`) or an [auth.jwt] table".into(),
            ));
        }
        let mut tokens: Vec<(String, [u8; 32])> = Vec::new();
        for (i, t) in self.tokens.into_iter().enumerate() {
            let key = format!("tokens[{i}]");
            check_subject(&t.subject).map_err(|m| bad(&format!("{key}.subject"), m))?;
            // `${VAR}` too: a deployment keeps the hash in the replicas'
            // environment (deploy/replica.env) beside its other settings.
            let sha256 = expand(&t.sha256).map_err(|m| bad(&format!("{key}.sha256"), m))?;
            let hash = hex::decode(sha256.trim())
                .ok()
                .and_then(|b| <[u8; 32]>::try_from(b).ok())
                .ok_or_else(|| {
                    bad(
                        &format!("{key}.sha256"),
                        format!(
                            "must be 64 hex digits (the SHA-256 of the token, from `quickforge auth hash-token`), got {} characters",
                            sha256.trim().len()
                        ),
                    )
                })?;
            if tokens.iter().any(|(_, h)| *h == hash) {
                return Err(bad(
                    &format!("{key}.sha256"),
                    "is listed twice: one token, one subject".into(),
                ));
            }
            tokens.push((t.subject, hash));
        }
        let jwt = match self.jwt {
            None => None,
            Some(j) => Some(validate_jwt(j, &resource, expand)?),
        };
        let mut authorization_servers = Vec::new();
        for (i, s) in self.authorization_servers.iter().enumerate() {
            let key = format!("authorization_servers[{i}]");
            let s = expand(s).map_err(|m| bad(&key, m))?;
            web_url(&s).map_err(|m| bad(&key, m))?;
            authorization_servers.push(s);
        }
        if authorization_servers.is_empty()
            && let Some(j) = &jwt
        {
            authorization_servers.push(j.issuer.clone());
        }
        Ok(AuthConfig {
            resource,
            authorization_servers,
            tokens,
            jwt,
            rate_limit_scope: self.rate_limit_scope,
        })
    }
}

fn validate_jwt(
    j: RawJwt,
    resource: &url::Url,
    expand: &dyn Fn(&str) -> Result<String, String>,
) -> Result<JwtConfig, (String, String)> {
    let bad = |key: &str, message: String| (format!("jwt.{key}"), message);
    let issuer = expand(&j.issuer).map_err(|m| bad("issuer", m))?;
    if issuer.trim().is_empty() {
        return Err(bad(
            "issuer",
            "must name the issuer exactly as its tokens' `iss` claim does".into(),
        ));
    }
    let jwks_uri = web_url(&expand(&j.jwks_uri).map_err(|m| bad("jwks_uri", m))?)
        .map_err(|m| bad("jwks_uri", m))?;
    if jwks_uri.scheme() == "http" && !is_loopback(&jwks_uri) {
        return Err(bad(
            "jwks_uri",
            format!(
                "{jwks_uri} is plain HTTP to another host: whoever sits on the path could hand the gateway keys of their own and sign any token; use https (http is accepted for loopback only)"
            ),
        ));
    }
    let audience = match j.audience {
        None => vec![resource.to_string()],
        Some(list) if list.is_empty() => {
            return Err(bad(
                "audience",
                "must not be empty: tokens not issued for this gateway must be refused (leave it out to accept `resource`)".into(),
            ));
        }
        Some(list) => list
            .iter()
            .map(|a| expand(a).map_err(|m| bad("audience", m)))
            .collect::<Result<_, _>>()?,
    };
    let names = j
        .algorithms
        .unwrap_or_else(|| DEFAULT_ALGORITHMS.iter().map(|s| s.to_string()).collect());
    if names.is_empty() {
        return Err(bad(
            "algorithms",
            "must name at least one algorithm, e.g. [\"RS256\"]".into(),
        ));
    }
    let mut algorithms = Vec::new();
    for name in &names {
        let alg: jsonwebtoken::Algorithm = name.parse().map_err(|_| {
            bad(
                "algorithms",
                format!(
                    "unknown algorithm {name:?}; use RS256, RS384, RS512, PS256, PS384, PS512, ES256, ES384 or EdDSA"
                ),
            )
        })?;
        if matches!(
            alg,
            jsonwebtoken::Algorithm::HS256
                | jsonwebtoken::Algorithm::HS384
                | jsonwebtoken::Algorithm::HS512
        ) {
            return Err(bad(
                "algorithms",
                format!(
                    "{name} is symmetric: it needs a secret shared with the issuer, which a JWKS of public keys does not carry; use an asymmetric algorithm (RS256, ES256, EdDSA, ...)"
                ),
            ));
        }
        algorithms.push(alg);
    }
    let leeway = j.leeway_secs.unwrap_or(DEFAULT_LEEWAY_SECS);
    if leeway > MAX_LEEWAY_SECS {
        return Err(bad(
            "leeway_secs",
            format!("must be at most {MAX_LEEWAY_SECS}, got {leeway}"),
        ));
    }
    let refresh = j.jwks_refresh_secs.unwrap_or(DEFAULT_JWKS_REFRESH_SECS);
    let max_age = j.jwks_max_age_secs.unwrap_or(DEFAULT_JWKS_MAX_AGE_SECS);
    if refresh == 0 || max_age < refresh {
        return Err(bad(
            "jwks_refresh_secs",
            format!("must be above 0 and at most jwks_max_age_secs ({max_age}), got {refresh}"),
        ));
    }
    Ok(JwtConfig {
        issuer,
        jwks_uri,
        audience,
        algorithms,
        leeway: Duration::from_secs(leeway),
        refresh: Duration::from_secs(refresh),
        max_age: Duration::from_secs(max_age),
    })
}

/// Why `subject` is not a usable subject, if it is not.
pub(super) fn check_subject(subject: &str) -> Result<(), String> {
    if subject.is_empty() || subject.len() > MAX_SUBJECT_BYTES {
        return Err(format!(
            "must be 1 to {MAX_SUBJECT_BYTES} bytes, got {}",
            subject.len()
        ));
    }
    if subject.chars().any(char::is_control) {
        return Err("must not contain control characters".into());
    }
    Ok(())
}

fn web_url(text: &str) -> Result<url::Url, String> {
    let url = url::Url::parse(text).map_err(|e| format!("{text:?} is not a URL: {e}"))?;
    if !matches!(url.scheme(), "https" | "http") || url.host().is_none() {
        return Err(format!("{text:?} must be an http(s) URL with a host"));
    }
    Ok(url)
}

fn is_loopback(url: &url::Url) -> bool {
    match url.host() {
        Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<AuthConfig, (String, String)> {
        let raw: RawAuth = toml::from_str(text).unwrap();
        raw.validate(&|s| Ok(s.to_string()))
    }

    const HASH: &str = "5e884898da28047151d0e56f8dc6292773603d0d6aabbdd62a11ef721d1542d8";

    #[test]
    fn opaque_tokens_and_defaults() {
        let c = parse(&format!(
            "resource = \"https://gw.example.com/mcp\"\n[[tokens]]\nsubject = \"alice\"\nsha256 = \"{HASH}\"\n"
        ))
        .unwrap();
        assert_eq!(c.tokens[0].0, "alice");
        assert!(c.jwt.is_none() && c.authorization_servers.is_empty());
        assert_eq!(c.rate_limit_scope, RateLimitScope::Gateway);
    }

    #[test]
    fn jwt_defaults_take_the_resource_and_issuer() {
        let c = parse(
            "resource = \"https://gw.example.com/mcp\"\n[jwt]\nissuer = \"https://id.example.com\"\njwks_uri = \"https://id.example.com/jwks\"\n",
        )
        .unwrap();
        let j = c.jwt.unwrap();
        assert_eq!(j.audience, vec!["https://gw.example.com/mcp".to_string()]);
        assert_eq!(c.authorization_servers, vec!["https://id.example.com"]);
        assert_eq!(j.algorithms.len(), 3);
    }

    #[test]
    fn mistakes_name_their_key() {
        for (text, key, says) in [
            (
                "[[tokens]]\nsubject = \"a\"\nsha256 = \"00\"",
                "resource",
                "is required",
            ),
            ("resource = \"https://g/mcp\"", "tokens", "needs a way"),
            (
                "resource = \"https://g/mcp\"\n[[tokens]]\nsubject = \"a\"\nsha256 = \"00\"",
                "tokens[0].sha256",
                "64 hex digits",
            ),
            (
                "resource = \"ftp://g/mcp\"\n[[tokens]]\nsubject = \"a\"\nsha256 = \"00\"",
                "resource",
                "http(s)",
            ),
            (
                "resource = \"https://g/mcp\"\n[jwt]\nissuer = \"i\"\njwks_uri = \"http://id.example.com/jwks\"",
                "jwt.jwks_uri",
                "plain HTTP",
            ),
            (
                "resource = \"https://g/mcp\"\n[jwt]\nissuer = \"i\"\njwks_uri = \"https://id/jwks\"\nalgorithms = [\"HS256\"]",
                "jwt.algorithms",
                "symmetric",
            ),
            (
                "resource = \"https://g/mcp\"\n[jwt]\nissuer = \"i\"\njwks_uri = \"https://id/jwks\"\naudience = []",
                "jwt.audience",
                "must not be empty",
            ),
        ] {
            let (k, m) = parse(text).unwrap_err();
            assert_eq!(k, key, "{text}: {m}");
            assert!(m.contains(says), "{text}: {m}");
        }
        let twice = format!(
            "resource = \"https://g/mcp\"\n[[tokens]]\nsubject = \"a\"\nsha256 = \"{HASH}\"\n[[tokens]]\nsubject = \"b\"\nsha256 = \"{HASH}\"\n"
        );
        assert_eq!(parse(&twice).unwrap_err().0, "tokens[1].sha256");
    }
}
