//! JWT access tokens checked against the issuer's published keys (JWKS),
//! with the `jsonwebtoken` crate: signature, `iss` equal to the configured
//! issuer, `aud` naming this resource, `exp` (and `nbf` when present)
//! within the leeway.
//!
//! The JWKS is fetched on first use and kept; a token whose `kid` is not
//! among the kept keys makes the gateway fetch again, at most once per
//! `jwks_refresh_secs` (a stream of made-up key ids cannot make it hammer
//! the provider), and the keys are fetched again after `jwks_max_age_secs`
//! in any case. A fetch that fails keeps the old keys. Until a first fetch
//! succeeds every JWT is answered 503 (the keys are out of reach, not the
//! token bad), also between two tries.

use std::str::FromStr;
use std::sync::Arc;

use jsonwebtoken::jwk::{AlgorithmParameters, Jwk, PublicKeyUse};
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use tokio::time::Instant;

use super::config::JwtConfig;
use super::{Rejection, Subject};

/// Longest JWKS document read, in bytes: 1 MiB. A provider publishes a few
/// keys of a few hundred bytes each; anything near this is not a key set.
const MAX_JWKS_BYTES: usize = 1024 * 1024;

/// How long one fetch of the JWKS may take: ten seconds, far above a
/// provider's usual answer, short enough that the requests waiting on it
/// fail in time rather than hang.
const FETCH_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// The answer to a token while no key of the issuer was ever fetched.
const UNREACHABLE: Rejection =
    Rejection::Unavailable("the issuer's signing keys could not be fetched; retry shortly");

/// The keys as last fetched.
#[derive(Default)]
struct Keys {
    keys: Arc<Vec<Jwk>>,
    /// When they were fetched (successfully).
    fetched: Option<Instant>,
    /// When a fetch was last tried, successful or not.
    tried: Option<Instant>,
}

/// Checks JWTs for one issuer.
pub struct JwtVerifier {
    config: JwtConfig,
    client: reqwest::Client,
    keys: tokio::sync::Mutex<Keys>,
}

/// The claims read from a token; the rest are checked by `jsonwebtoken`.
#[derive(serde::Deserialize)]
struct Claims {
    sub: String,
}

impl JwtVerifier {
    /// A verifier for `config`; nothing is fetched until a token comes.
    pub fn new(config: JwtConfig) -> JwtVerifier {
        // reqwest's TLS needs a process-wide provider; whoever is first
        // installs ring, as the downstream HTTP client does.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = reqwest::Client::builder()
            .timeout(FETCH_TIMEOUT)
            // A JWKS URL that redirects elsewhere is not followed: the keys
            // come from where the config says.
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap_or_default();
        JwtVerifier {
            config,
            client,
            keys: tokio::sync::Mutex::default(),
        }
    }

    /// The subject of `token`, if it is a valid token of the issuer for
    /// this resource.
    pub async fn verify(&self, token: &str) -> Result<Subject, Rejection> {
        let header = jsonwebtoken::decode_header(token)
            .map_err(|_| Rejection::invalid("the token is not a well-formed JWT"))?;
        if !self.config.algorithms.contains(&header.alg) {
            return Err(Rejection::invalid(
                "the token is signed with an algorithm this gateway does not accept",
            ));
        }
        let jwk = self.key(header.kid.as_deref(), header.alg).await?;
        let key = DecodingKey::from_jwk(&jwk)
            .map_err(|_| Rejection::invalid("the token's signing key is not usable"))?;
        let mut validation = Validation::new(header.alg);
        validation.leeway = self.config.leeway.as_secs();
        validation.validate_nbf = true;
        validation.set_issuer(&[&self.config.issuer]);
        validation.set_audience(&self.config.audience);
        validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        let data = jsonwebtoken::decode::<Claims>(token, &key, &validation).map_err(|e| {
            use jsonwebtoken::errors::ErrorKind as K;
            Rejection::invalid(match e.kind() {
                K::ExpiredSignature => "the token has expired",
                K::ImmatureSignature => "the token is not valid yet (nbf)",
                K::InvalidAudience => "the token was not issued for this resource (aud)",
                K::InvalidIssuer => "the token was not issued by the configured issuer (iss)",
                K::InvalidSignature => "the token's signature does not verify",
                K::MissingRequiredClaim(_) => {
                    "the token lacks a required claim (exp, iss, aud and sub are required)"
                }
                K::InvalidAlgorithm => "the token's algorithm does not match its key",
                _ => "the token is not valid",
            })
        })?;
        Subject::new(&data.claims.sub)
            .ok_or_else(|| Rejection::invalid("the token's subject (sub) is not usable"))
    }

    /// The key `kid` names that may verify `alg`, fetching the JWKS again
    /// when it is unknown (at most once per `refresh`) or the keys are old.
    async fn key(&self, kid: Option<&str>, alg: Algorithm) -> Result<Jwk, Rejection> {
        let mut keys = self.keys.lock().await;
        let now = Instant::now();
        let stale = keys
            .fetched
            .is_none_or(|at| now.duration_since(at) >= self.config.max_age);
        let found = pick(&keys.keys, kid, alg);
        let may_refetch = keys
            .tried
            .is_none_or(|at| now.duration_since(at) >= self.config.refresh);
        if (found.is_none() || stale) && may_refetch {
            keys.tried = Some(now);
            match self.fetch().await {
                Ok(fresh) => {
                    keys.keys = Arc::new(fresh);
                    keys.fetched = Some(now);
                }
                Err(e) => {
                    tracing::warn!(
                        "could not fetch the JWKS from {} ([auth.jwt] jwks_uri): {e}",
                        self.config.jwks_uri
                    );
                    if keys.fetched.is_none() {
                        return Err(UNREACHABLE);
                    }
                }
            }
            return pick(&keys.keys, kid, alg)
                .ok_or_else(|| Rejection::invalid("the token's signing key (kid) is unknown"));
        }
        // No key was ever fetched and the last try is too recent to try
        // again: the token cannot be checked yet, which is not the same as
        // invalid (a 401 would send a client for a new token that fails
        // the same way).
        if keys.fetched.is_none() {
            return Err(UNREACHABLE);
        }
        found.ok_or_else(|| Rejection::invalid("the token's signing key (kid) is unknown"))
    }

    /// The keys at `jwks_uri`, skipping the ones this gateway cannot use
    /// (encryption keys, symmetric keys, unknown types) so that one odd key
    /// does not hide the rest.
    async fn fetch(&self) -> Result<Vec<Jwk>, String> {
        let response = self
            .client
            .get(self.config.jwks_uri.clone())
            .header(reqwest::header::ACCEPT, "application/json")
            .send()
            .await
            .map_err(|e| e.without_url().to_string())?;
        if !response.status().is_success() {
            return Err(format!("HTTP {}", response.status()));
        }
        if response
            .content_length()
            .is_some_and(|n| n > MAX_JWKS_BYTES as u64)
        {
            return Err(format!(
                "the document is larger than {MAX_JWKS_BYTES} bytes"
            ));
        }
        let mut body = Vec::new();
        let mut response = response;
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| e.without_url().to_string())?
        {
            body.extend_from_slice(&chunk);
            if body.len() > MAX_JWKS_BYTES {
                return Err(format!(
                    "the document is larger than {MAX_JWKS_BYTES} bytes"
                ));
            }
        }
        #[derive(serde::Deserialize)]
        struct Set {
            keys: Vec<serde_json::Value>,
        }
        let set: Set =
            serde_json::from_slice(&body).map_err(|e| format!("not a JWKS document: {e}"))?;
        Ok(set
            .keys
            .into_iter()
            .filter_map(|k| serde_json::from_value::<Jwk>(k).ok())
            .filter(|k| {
                !matches!(k.algorithm, AlgorithmParameters::OctetKey(_))
                    && k.common
                        .public_key_use
                        .as_ref()
                        .is_none_or(|u| *u == PublicKeyUse::Signature)
            })
            .collect())
    }
}

/// The key among `keys` that `kid` names (or the only key, for a token
/// without `kid`), if its declared algorithm, if any, is `alg`.
fn pick(keys: &[Jwk], kid: Option<&str>, alg: Algorithm) -> Option<Jwk> {
    let key = match kid {
        Some(kid) => keys
            .iter()
            .find(|k| k.common.key_id.as_deref() == Some(kid))?,
        None if keys.len() == 1 => &keys[0],
        None => return None,
    };
    let fits = key
        .common
        .key_algorithm
        .is_none_or(|a| Algorithm::from_str(&a.to_string()).is_ok_and(|a| a == alg));
    fits.then(|| key.clone())
}
