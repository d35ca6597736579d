//! The HTTP side of `[auth]`: the middleware in front of `/mcp`, and the
//! Protected Resource Metadata document (RFC 9728) clients read to learn
//! where to get a token.
//!
//! Per the MCP authorization specification (resource server): a request
//! without a token is answered 401 with `WWW-Authenticate: Bearer
//! resource_metadata="…"`; one with a token that is not valid here
//! (expired, another audience, another issuer, bad signature, unknown key)
//! 401 with `error="invalid_token"` and an `error_description` (RFC 6750
//! §3). The metadata is served without authentication at
//! `/.well-known/oauth-protected-resource` and at the form with the
//! endpoint's path appended (`…/mcp`), which RFC 9728 §3.1 derives from a
//! resource URL with a path.

use std::sync::Arc;

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use super::{Authenticator, Rejection};

/// The well-known path of the metadata document (RFC 9728 §3).
const WELL_KNOWN: &str = "/.well-known/oauth-protected-resource";

/// How long a client should wait before retrying when the issuer's keys
/// are out of reach, in seconds: `[auth.jwt] jwks_refresh_secs`, since the
/// JWKS is fetched again after that at the earliest, so sooner is no use
/// (and later would keep clients waiting after the keys are back).
fn retry_after(auth: &Authenticator) -> u64 {
    auth.config()
        .jwt
        .as_ref()
        .map_or(super::config::DEFAULT_JWKS_REFRESH_SECS, |jwt| {
            jwt.refresh.as_secs()
        })
}

/// `router` with every request checked against `auth` first: a request
/// with a valid bearer token goes on with its [`super::Subject`] in its
/// extensions and without its `Authorization` header (nothing after this
/// sees the token); any other is answered here.
pub fn protect(router: axum::Router, auth: Arc<Authenticator>) -> axum::Router {
    router.layer(axum::middleware::from_fn(move |req, next| {
        check(auth.clone(), req, next)
    }))
}

/// The metadata document's routes, unauthenticated.
pub fn metadata_routes(auth: &Authenticator) -> axum::Router {
    let config = auth.config();
    let mut document = serde_json::json!({
        "resource": config.resource.as_str(),
        "bearer_methods_supported": ["header"],
        "resource_name": "quickforge",
    });
    if !config.authorization_servers.is_empty() {
        document["authorization_servers"] = config.authorization_servers.clone().into();
    }
    let document = Arc::new(document);
    let serve = move || {
        let document = document.clone();
        async move { axum::Json((*document).clone()) }
    };
    axum::Router::new()
        .route(WELL_KNOWN, axum::routing::get(serve.clone()))
        .route(&format!("{WELL_KNOWN}/mcp"), axum::routing::get(serve))
}

/// Where the metadata of `resource` is, as RFC 9728 §3.1 builds it: the
/// well-known path between the host and the resource's path.
fn metadata_url(resource: &url::Url) -> String {
    let path = resource.path().trim_end_matches('/');
    format!(
        "{}{WELL_KNOWN}{path}",
        resource.origin().ascii_serialization()
    )
}

async fn check(
    auth: Arc<Authenticator>,
    mut req: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let token = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(bearer)
        .map(str::to_owned);
    // A request without a bearer token gets no error code (RFC 6750 §3.1):
    // it is the client's cue to go and get one.
    let Some(token) = token else {
        return challenge(&auth, None);
    };
    match auth.authenticate(&token).await {
        Ok(subject) => {
            if let Some(presented) = req.headers_mut().remove(header::AUTHORIZATION) {
                req.extensions_mut().insert(super::Presented(presented));
            }
            req.extensions_mut().insert(subject.clone());
            super::serving(subject, next.run(req)).await
        }
        Err(Rejection::Invalid(why)) => challenge(&auth, Some(why)),
        Err(Rejection::Unavailable(why)) => (
            StatusCode::SERVICE_UNAVAILABLE,
            [(header::RETRY_AFTER, retry_after(&auth).to_string())],
            axum::Json(
                serde_json::json!({"error": "temporarily_unavailable", "error_description": why}),
            ),
        )
            .into_response(),
    }
}

/// The token of an `Authorization: Bearer <token>` header value (the scheme
/// is case-insensitive, RFC 7235 §2.1).
fn bearer(value: &str) -> Option<&str> {
    let (scheme, token) = value.split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

/// 401 with the challenge: `resource_metadata` always, and for a token
/// that was given but refused, `invalid_token` and why.
fn challenge(auth: &Authenticator, refused: Option<&'static str>) -> Response {
    let metadata = metadata_url(&auth.config().resource);
    let (value, body) = match refused {
        None => (
            format!("Bearer resource_metadata=\"{metadata}\""),
            serde_json::json!({"error": "unauthorized", "error_description": "this MCP endpoint needs Authorization: Bearer <token>"}),
        ),
        Some(why) => (
            format!(
                "Bearer error=\"invalid_token\", error_description=\"{why}\", resource_metadata=\"{metadata}\""
            ),
            serde_json::json!({"error": "invalid_token", "error_description": why}),
        ),
    };
    let mut response = (StatusCode::UNAUTHORIZED, axum::Json(body)).into_response();
    // The URL comes from a validated `url::Url` and the reasons are fixed
    // ASCII text without quotes, so the value is always a valid header.
    if let Ok(value) = HeaderValue::from_str(&value) {
        response
            .headers_mut()
            .insert(header::WWW_AUTHENTICATE, value);
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_metadata_url_puts_the_well_known_path_before_the_resource_path() {
        let u = |s: &str| url::Url::parse(s).unwrap();
        assert_eq!(
            metadata_url(&u("https://gw.example.com/mcp")),
            "https://gw.example.com/.well-known/oauth-protected-resource/mcp"
        );
        assert_eq!(
            metadata_url(&u("https://gw.example.com:8443/")),
            "https://gw.example.com:8443/.well-known/oauth-protected-resource"
        );
    }

    #[test]
    fn only_bearer_headers_carry_a_token() {
        assert_eq!(bearer("Bearer abc"), Some("abc"));
        assert_eq!(bearer("bearer  abc "), Some("abc"));
        assert_eq!(bearer("Basic abc"), None);
        assert_eq!(bearer("Bearer "), None);
        assert_eq!(bearer("Bearerabc"), None);
    }
}
