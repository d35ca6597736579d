//! The downstream servers' prompts, resources, resource templates and
//! completions on quickforge's own surface, beside `search` and `execute`:
//! merged from every server, routed back to the one that owns each.
//!
//! - Prompts are named `server.prompt`: server names cannot hold a `.`, so
//!   two servers' prompts never collide and the first `.` routes.
//! - Resources keep their URIs (they are addresses); a read goes to the
//!   server that listed the URI, else to the first (by name) whose template
//!   matches it.
//! - The same rules as for scripts: servers in a strict group are left out
//!   (outside an execution nothing is locked, as for an execution that has
//!   made no call yet), and every text that comes back is redacted, but the
//!   identifiers (a resource's URI) the client uses again.
//!
//! `resources/subscribe` is the 2025 era's way (rmcp marks it legacy-only):
//! quickforge serves it to the clients that use it.

#![expect(
    deprecated,
    reason = "resources/subscribe is legacy-only in MCP 2026-07-28, and what 2025-era clients and servers use"
)]

use std::sync::Arc;

use rmcp::ErrorData as McpError;
use rmcp::model::{
    ClientRequest, CompleteRequest, CompleteRequestParams, CompleteResult, GetPromptRequest,
    GetPromptRequestParams, GetPromptResult, Prompt, ReadResourceRequest,
    ReadResourceRequestParams, ReadResourceResult, Reference, Resource, ResourceTemplate,
    ServerResult, SubscribeRequest, SubscribeRequestParams, UnsubscribeRequest,
    UnsubscribeRequestParams,
};
use serde_json::Value;

use super::downstream::{Connection, send};
use super::{Gateway, Server};
use crate::manifest::ServerEntry;
use crate::policy::Isolation;

impl Gateway {
    /// Waits (as an execution does) for servers still making their first
    /// connection attempt, so a client listing right after start-up sees
    /// their prompts and resources.
    pub async fn surface_ready(&self) {
        self.wait_started(super::STARTUP_WAIT).await;
    }

    /// The servers whose prompts and resources the surface shows: ready,
    /// and in no strict group.
    fn surface_servers(&self) -> Vec<Arc<ServerEntry>> {
        let manifest = self.manifest();
        manifest
            .servers()
            .filter(|e| {
                self.server(&e.name).is_some_and(|s| {
                    s.guards
                        .group
                        .as_ref()
                        .is_none_or(|g| g.isolation != Isolation::Strict)
                })
            })
            .cloned()
            .collect()
    }

    /// Every server's prompts, each named `server.prompt`.
    pub fn surface_prompts(&self) -> Vec<Prompt> {
        self.surface_servers()
            .iter()
            .flat_map(|e| {
                e.prompts.iter().map(|p| {
                    let mut p = p.clone();
                    p.name = format!("{}.{}", e.name, p.name);
                    p
                })
            })
            .collect()
    }

    /// Every server's resources.
    pub fn surface_resources(&self) -> Vec<Resource> {
        self.surface_servers()
            .iter()
            .flat_map(|e| {
                e.resources.iter().map(|r| {
                    let mut resource = Resource::new(&r.uri, &r.name);
                    resource.description = r.description.clone();
                    resource.mime_type = r.mime_type.clone();
                    resource
                })
            })
            .collect()
    }

    /// Every server's resource templates.
    pub fn surface_templates(&self) -> Vec<ResourceTemplate> {
        self.surface_servers()
            .iter()
            .flat_map(|e| e.templates.clone())
            .collect()
    }

    /// The live session of `server` (shown on the surface).
    fn surface_connection(&self, server: &str) -> Result<(Arc<Server>, Arc<Connection>), McpError> {
        let shown = self.surface_servers().iter().any(|e| e.name == server);
        let s = self
            .server(server)
            .filter(|_| shown)
            .ok_or_else(|| McpError::invalid_params(format!("no server {server:?}"), None))?;
        let conn = s.connection().ok_or_else(|| {
            McpError::internal_error(
                format!("server {server:?} is not connected; retry shortly"),
                None,
            )
        })?;
        Ok((s.clone(), conn))
    }

    /// The server whose resource (or template) `uri` is.
    fn resource_owner(&self, uri: &str) -> Result<String, McpError> {
        let servers = self.surface_servers();
        if let Some(e) = servers
            .iter()
            .find(|e| e.resources.iter().any(|r| r.uri == uri))
        {
            return Ok(e.name.clone());
        }
        servers
            .iter()
            .find(|e| {
                e.templates
                    .iter()
                    .any(|t| template_matches(&t.uri_template, uri))
            })
            .map(|e| e.name.clone())
            .ok_or_else(|| {
                McpError::resource_not_found(
                    format!("no server lists the resource {uri:?} or a template that matches it"),
                    None,
                )
            })
    }

    /// Sends `request` to `server` under its timeout.
    async fn surface_send(
        &self,
        server: &str,
        request: ClientRequest,
    ) -> Result<ServerResult, McpError> {
        let (s, conn) = self.surface_connection(server)?;
        send(&conn, server, request, s.config.timeout)
            .await
            .map_err(|e| {
                let e = quickforge_core::shown::forge_to_client(e, &quickforge_core::shown::Native);
                McpError::internal_error(e.message, None)
            })
    }

    /// `prompts/get` for a `server.prompt` name, redacted.
    pub async fn get_prompt(
        &self,
        params: GetPromptRequestParams,
    ) -> Result<GetPromptResult, McpError> {
        self.surface_ready().await;
        let (server, prompt) = params.name.split_once('.').ok_or_else(|| {
            McpError::invalid_params(
                format!(
                    "prompt names are server.prompt; {:?} has no server",
                    params.name
                ),
                None,
            )
        })?;
        let mut inner = params.clone();
        inner.name = prompt.to_string();
        let request = ClientRequest::GetPromptRequest(GetPromptRequest::new(inner));
        match self.surface_send(server, request).await? {
            ServerResult::GetPromptResult(r) => redacted(r),
            _ => Err(McpError::internal_error(
                format!("server {server:?} answered prompts/get with something else"),
                None,
            )),
        }
    }

    /// `resources/read`, routed by URI, redacted.
    pub async fn read_resource(&self, uri: &str) -> Result<ReadResourceResult, McpError> {
        self.surface_ready().await;
        let server = self.resource_owner(uri)?;
        let request = ClientRequest::ReadResourceRequest(ReadResourceRequest::new(
            ReadResourceRequestParams::new(uri),
        ));
        match self.surface_send(&server, request).await? {
            ServerResult::ReadResourceResult(r) => redacted(r),
            _ => Err(McpError::internal_error(
                format!("server {server:?} answered resources/read with something else"),
                None,
            )),
        }
    }

    /// `completion/complete`, routed by the prompt's server prefix or the
    /// template's owner.
    pub async fn complete(
        &self,
        mut params: CompleteRequestParams,
    ) -> Result<CompleteResult, McpError> {
        self.surface_ready().await;
        let server = match &mut params.r#ref {
            Reference::Prompt(p) => {
                let (server, prompt) = p.name.split_once('.').ok_or_else(|| {
                    McpError::invalid_params(
                        format!("prompt names are server.prompt; {:?} has no server", p.name),
                        None,
                    )
                })?;
                let server = server.to_string();
                p.name = prompt.to_string();
                server
            }
            Reference::Resource(r) => self.resource_owner(&r.uri)?,
            _ => {
                return Err(McpError::invalid_params(
                    "unknown completion reference",
                    None,
                ));
            }
        };
        let request = ClientRequest::CompleteRequest(CompleteRequest::new(params));
        match self.surface_send(&server, request).await? {
            ServerResult::CompleteResult(r) => redacted(r),
            _ => Err(McpError::internal_error(
                format!("server {server:?} answered completion/complete with something else"),
                None,
            )),
        }
    }

    /// Asks the owner of `uri` to send `notifications/resources/updated`.
    pub async fn subscribe(&self, uri: &str) -> Result<(), McpError> {
        self.surface_ready().await;
        let server = self.resource_owner(uri)?;
        let request = ClientRequest::SubscribeRequest(SubscribeRequest::new(
            SubscribeRequestParams::new(uri),
        ));
        self.surface_send(&server, request).await.map(|_| ())
    }

    /// Tells the owner of `uri` that nobody listens any more.
    pub async fn unsubscribe(&self, uri: &str) -> Result<(), McpError> {
        self.surface_ready().await;
        let server = self.resource_owner(uri)?;
        let request = ClientRequest::UnsubscribeRequest(UnsubscribeRequest::new(
            UnsubscribeRequestParams::new(uri),
        ));
        self.surface_send(&server, request).await.map(|_| ())
    }
}

/// `result` as it crosses to the client (and often the model, as tool
/// results do): every string redacted but the identifiers the client uses
/// again (a resource's `uri`, `mimeType`, `name`: `quickforge_core::shown`).
fn redacted<T: serde::Serialize + serde::de::DeserializeOwned>(result: T) -> Result<T, McpError> {
    let mut json: Value = serde_json::to_value(result)
        .map_err(|e| McpError::internal_error(format!("could not encode a result: {e}"), None))?;
    quickforge_core::shown::result_to_client(&mut json);
    serde_json::from_value(json).map_err(|e| {
        McpError::internal_error(format!("could not decode a redacted result: {e}"), None)
    })
}

/// Whether `uri` fits the RFC 6570 `template`. Hand-written (no maintained
/// crate matches URIs against templates, only expands them): literals must
/// match exactly; `{var}` takes one segment (no `/ ? #`), `{+var}` and
/// `{#var}` take anything, `{/var}`, `{.var}`, `{?var}` and `{&var}` take
/// their optional part. Enough to tell which server's template a URI came
/// from; the server itself parses the URI.
pub fn template_matches(template: &str, uri: &str) -> bool {
    let mut pattern = String::from("^");
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        pattern.push_str(&regex::escape(&rest[..open]));
        let Some(close) = rest[open..].find('}') else {
            return false;
        };
        let expr = &rest[open + 1..open + close];
        pattern.push_str(match expr.chars().next() {
            Some('+') | Some('#') => ".*",
            Some('/') => "(?:/[^/?#]*)*",
            Some('.') => r"(?:\.[^/?#]*)*",
            Some('?') | Some('&') => r"(?:[?&][^#]*)?",
            _ => "[^/?#]+",
        });
        rest = &rest[open + close + 1..];
    }
    pattern.push_str(&regex::escape(rest));
    pattern.push('$');
    regex::Regex::new(&pattern).is_ok_and(|re| re.is_match(uri))
}

#[cfg(test)]
mod tests {
    use super::template_matches;

    #[test]
    fn templates_match_the_uris_they_describe() {
        assert!(template_matches("note://{id}", "note://42"));
        assert!(!template_matches("note://{id}", "note://a/b"));
        assert!(!template_matches("note://{id}", "memo://42"));
        assert!(template_matches("file:///{+path}", "file:///srv/a/b.txt"));
        assert!(template_matches(
            "api://items{?page,size}",
            "api://items?page=2"
        ));
        assert!(template_matches("api://items{?page,size}", "api://items"));
        assert!(!template_matches("a{", "a"));
    }
}
