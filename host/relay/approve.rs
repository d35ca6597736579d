//! Approvals: a call the tool policy marks "ask" (`allow_destructive =
//! "ask"`, or a tool in `confirm`) is put to the person, through the
//! client's elicitation, before it is sent. Accept sends it; decline (or
//! dismissing the question) throws `DECLINED`, which the script can catch;
//! a client that cannot be asked leaves the call refused, as
//! `POLICY_DENIED`, with the config key that would allow it.

use rmcp::model::{
    ClientResult, ElicitRequest, ElicitRequestParams, ElicitationAction, ElicitationSchema,
    ServerRequest,
};

use super::{Asked, Upstream};
use crate::error::{ErrorCode, ForgeError};

/// Longest text of the arguments shown in an approval question, bytes:
/// enough to see what the call will do, short enough for a dialog.
pub const MAX_SHOWN_ARGS: usize = 1024;

/// What is being approved.
pub struct Question<'a> {
    /// The server.
    pub server: &'a str,
    /// The tool.
    pub tool: &'a str,
    /// Why it needs approval (the policy's words).
    pub why: &'a str,
    /// Its arguments, as JSON text, as the script wrote them (shown by
    /// [`shown_args`]).
    pub args: &'a str,
}

/// The arguments as the person reads them, where they cross to the client:
/// the script's own words, so only credentials are redacted (the path, URL
/// or address the person approves is the one the tool gets; two different
/// paths must not read alike); every invisible, control or direction
/// character written out as `<U+XXXX>`, so the text reads as the tool will
/// receive it; then cut to [`MAX_SHOWN_ARGS`].
pub fn shown_args(args: &str) -> String {
    let words = quickforge_core::shown::script_words(args);
    crate::error::clip(
        &quickforge_filters::sanitize::reveal(&words),
        MAX_SHOWN_ARGS,
    )
}

/// Asks `upstream`'s person whether `q`'s call may go out.
pub async fn approve(upstream: Option<&Upstream>, q: Question<'_>) -> Result<(), ForgeError> {
    let what = format!("{}.{}", q.server, q.tool);
    let Some(up) = upstream.filter(|up| up.caps().elicit_form) else {
        return Err(ForgeError::new(
            ErrorCode::PolicyDenied,
            format!(
                "{what} needs the person's approval ({}), and this client cannot be asked (it does not support elicitation)",
                q.why
            ),
        )
        .suggest(format!(
            "use a client that supports elicitation, or set servers.{}.allow_destructive = true (or remove the tool from servers.{}.confirm) to allow it without asking",
            q.server, q.server
        )));
    };
    let args = shown_args(q.args);
    let message = format!(
        "quickforge: a script wants to call {what}.\n{}.\nArguments: {args}\nAllow this call?",
        q.why
    );
    let schema: ElicitationSchema =
        serde_json::from_value(serde_json::json!({"type": "object", "properties": {}}))
            .map_err(|e| ForgeError::new(ErrorCode::Internal, format!("approval form: {e}")))?;
    let request = ServerRequest::ElicitRequest(ElicitRequest::new(
        ElicitRequestParams::FormElicitationParams {
            meta: None,
            message,
            requested_schema: schema,
        },
    ));
    let declined = |how: &str| {
        ForgeError::new(
            ErrorCode::Declined,
            format!("the person {how} the call to {what}"),
        )
        .suggest("do not retry it unasked; tell the user what the call would have done, or carry on without it")
    };
    match up.ask(request, Asked::Person).await {
        Ok(ClientResult::ElicitResult(r)) => match r.action {
            ElicitationAction::Accept => Ok(()),
            ElicitationAction::Decline => Err(declined("declined")),
            ElicitationAction::Cancel => Err(declined("dismissed the question about")),
            _ => Err(declined("did not accept")),
        },
        Ok(_) => Err(ForgeError::new(
            ErrorCode::PolicyDenied,
            format!(
                "{what} was not approved: the client answered the question with something else"
            ),
        )),
        Err(e) => Err(ForgeError::new(
            ErrorCode::PolicyDenied,
            format!("{what} was not approved: {}", e.message),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Red team round 3, point 10: the question showed every path as
    /// `[REDACTED:path]` (two different calls read alike) and bidi,
    /// zero-width and tag characters as they were; credentials stay hidden.
    #[test]
    fn a_person_reads_the_arguments_the_tool_will_get_without_credentials() {
        let a = shown_args(r#"{"path":"/home/alice/notes.txt"}"#);
        let b = shown_args(r#"{"path":"/home/alice/.ssh/id_rsa"}"#);
        assert_ne!(a, b);
        assert!(b.contains("/home/alice/.ssh/id_rsa"), "{b}");
        let url = shown_args(r#"{"url":"https://10.0.0.5:8443/admin?x=1"}"#);
        assert!(url.contains("https://10.0.0.5:8443/admin?x=1"), "{url}");
        let hidden = shown_args("{\"name\":\"report\u{202E}fdp.exe\u{200B}\u{E0041}\"}");
        assert_eq!(
            hidden,
            r#"{"name":"report<U+202E>fdp.exe<U+200B><U+E0041>"}"#
        );
        let token = "ghp_16C7e42F292c6912E7710c838347Ae178B4a";
        let secret = shown_args(&format!(
            r#"{{"body":"use {token}","password":"hunter2","url":"https://bob:pw@example.com/"}}"#
        ));
        for gone in [token, "hunter2", ":pw@"] {
            assert!(!secret.contains(gone), "{gone} in {secret}");
        }
        assert!(shown_args(&"x".repeat(10 * MAX_SHOWN_ARGS)).len() < MAX_SHOWN_ARGS + 64);
    }
}
