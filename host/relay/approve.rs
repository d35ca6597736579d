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

/// What is being approved.
pub struct Question<'a> {
    /// The server.
    pub server: &'a str,
    /// The tool.
    pub tool: &'a str,
    /// Why it needs approval (the policy's words).
    pub why: &'a str,
    /// Its arguments, as JSON text, as the script wrote them (shown by
    /// [`quickforge_core::shown::approval_arguments`], where they cross to
    /// the client).
    pub args: &'a str,
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
    let args = quickforge_core::shown::approval_arguments(q.args);
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
