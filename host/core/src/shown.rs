//! Redaction at the boundaries: what a gateway shows, redacted exactly once
//! where it leaves, one boundary per direction (`ARCHITECTURE.md`, "Errors").
//!
//! Three directions leave a gateway. Each has one boundary, and nothing below
//! a boundary redacts what will cross it (the rules are idempotent, so a
//! second pass would be harmless, but then no boundary would own them):
//!
//! - **Towards the script**: a [`ForgeError`] thrown into it, through
//!   [`to_script`] — natively where the sandbox's imports hand it to the
//!   instance (`host/sandbox/imports`), on the edge where the provider
//!   returns it (`edge/provider/src/error.rs`). Everything a failure can quote
//!   (a server's error text, a JSON-RPC error's `data`, a structured error
//!   result, a task's error) is built raw below and crosses here.
//! - **Towards the client**: an execution's failure where it is made from
//!   foreign words ([`to_client`]: a script's in `host/sandbox`, a direct
//!   call's in `host/execution/direct.rs`), and a failure answered as a
//!   protocol error ([`forge_to_client`]);
//!   what a server sends during a call and the gateway relays (progress, log
//!   messages, its questions) and the results the gateway passes through
//!   (`prompts/get`, `resources/read`, `completion/complete`), through
//!   [`text_to_client`], [`json_to_client`] and [`result_to_client`]; an approval's arguments, which
//!   the script wrote, through [`approval_arguments`].
//! - **Towards the audit log and the gateway's log**: the audit record's
//!   names, previews and error texts (`host/audit`, [`to_audit`]) and every
//!   formatted log line (`host/cli/logging.rs`).
//!
//! The rules differ by source, not by direction: text from a server or from
//! the gateway gets every rule ([`Scope::Everything`]); strings the script
//! itself wrote, quoted back to a person, lose only credentials
//! ([`Scope::Credentials`]); identifiers (a resource's `uri`, a `mimeType`,
//! a `name`) are never rewritten. One text is recorded already redacted: a
//! server's unavailable reason (and the HTTP error page quoted in it), which
//! the log, the manifest, `doctor` and errors all show.

use serde_json::Value;

pub use quickforge_filters::redact::Scope;

use crate::error::ForgeError;
use crate::execution::ExecutionError;

/// How a gateway takes secrets out of text.
pub trait Redactor {
    /// `text` redacted, or `None` when it holds nothing to redact.
    fn redact(&self, text: &str) -> Option<String>;

    /// `text` redacted, then cut to at most `max` bytes (see
    /// [`quickforge_filters::redact::redact_clip`] for why in that order).
    fn redact_clip(&self, text: &str, max: usize) -> String;

    /// A JSON value redacted in place (sensitive field names at any depth,
    /// every string through [`Redactor::redact`]); whether anything changed.
    fn redact_json(&self, value: &mut Value) -> bool {
        quickforge_filters::redact::redact_json_with(value, &|text| self.redact(text))
    }
}

/// The native gateway's redaction: `quickforge_filters::redact`, whose rule
/// set compiles once per process.
#[derive(Debug, Clone, Copy, Default)]
pub struct Native;

impl Redactor for Native {
    fn redact(&self, text: &str) -> Option<String> {
        let r = quickforge_filters::redact::redact(text);
        r.changed.then_some(r.text)
    }

    fn redact_clip(&self, text: &str, max: usize) -> String {
        quickforge_filters::redact::redact_clip(text, max)
    }

    fn redact_json(&self, value: &mut Value) -> bool {
        quickforge_filters::redact::redact_json(value)
    }
}

/// Longest server text a [`ForgeError`] quotes, in bytes. A stack dump from
/// a server is noise for a model; the start says what went wrong.
pub const MAX_ERROR_TEXT: usize = 2048;

/// Longest `ForgeError` message a script receives, in bytes: a quoted
/// server text ([`MAX_ERROR_TEXT`]) and room for the gateway's own words
/// around it (which server, which tool, which JSON-RPC code).
pub const MAX_SCRIPT_MESSAGE: usize = MAX_ERROR_TEXT + 256;

/// Longest error message handed to the client, in bytes: an error explains,
/// it does not carry data (a thrown 20 MB string would otherwise bypass
/// `max_output_size`).
pub const MAX_CLIENT_MESSAGE: usize = 4 * 1024;

/// Longest stack handed to the client, in bytes: twice a message, room for
/// the few dozen frames that locate a failure in a script; deeper stacks
/// (a recursion's thousands of frames) repeat themselves and cost context.
pub const MAX_STACK: usize = 8 * 1024;

/// Longest `ForgeError` code handed on, in bytes: a code is an identifier
/// (the gateway's are under 32 bytes), but a script can throw one of its own.
pub const MAX_CODE: usize = 256;

/// `e`'s message with its quoted words, redacted, then cut to `max`.
fn shown_message(e: &mut ForgeError, redactor: &dyn Redactor, max: usize) -> bool {
    let mut text = std::mem::take(&mut e.message);
    if let Some(mut words) = e.quoted.take() {
        // names first, as JSON (a sensitive field goes whatever its value)
        redactor.redact_json(&mut words);
        text.push_str(&words.to_string());
    }
    let shown = redactor.redact_clip(&text, max);
    let changed = shown != text;
    e.message = shown;
    changed
}

/// A failure as it is thrown into a script: its message, with the server's
/// quoted words, redacted, then cut to [`MAX_SCRIPT_MESSAGE`]. The code and
/// the suggestion are the gateway's own words.
pub fn to_script(mut e: ForgeError, redactor: &dyn Redactor) -> ForgeError {
    shown_message(&mut e, redactor, MAX_SCRIPT_MESSAGE);
    e
}

/// An execution's failure as the client reads it, applied where the failure
/// is made from foreign words (a script's, natively in `host/sandbox`; a
/// direct call's, in `host/execution/direct.rs`): its message and its
/// `ForgeError`'s (code and suggestion included, when a script made them up)
/// redacted and cut; its stack cut, not redacted (the stack rules would take every frame
/// of the script's own), and dropped whole when a message needed redaction,
/// since its first line repeats the message.
pub fn to_client(mut e: ExecutionError, redactor: &dyn Redactor) -> ExecutionError {
    let shown = redactor.redact_clip(&e.message, MAX_CLIENT_MESSAGE);
    let mut changed = shown != e.message;
    e.message = shown;
    if let Some(f) = &mut e.forge {
        changed |= shown_message(f, redactor, MAX_CLIENT_MESSAGE);
        if let crate::Code::Other(code) = &f.code {
            f.code = crate::Code::from(redactor.redact_clip(code, MAX_CODE));
        }
        // a script's own ForgeError may carry a suggestion of its own
        f.suggestion = f
            .suggestion
            .take()
            .map(|s| redactor.redact_clip(&s, MAX_CLIENT_MESSAGE));
    }
    e.stack = if changed {
        None
    } else {
        e.stack
            .map(|s| quickforge_filters::text::clip(&s, MAX_STACK))
    };
    e
}

/// A failure answered to the client as a protocol error (a `prompts/get`
/// or `resources/read` the gateway passed through): its message, with the
/// server's quoted words, redacted, then cut to [`MAX_CLIENT_MESSAGE`].
pub fn forge_to_client(mut e: ForgeError, redactor: &dyn Redactor) -> ForgeError {
    shown_message(&mut e, redactor, MAX_CLIENT_MESSAGE);
    e
}

/// A server's text relayed to the client (a progress message, a log
/// message's logger): every rule, then cut to `max` bytes.
pub fn text_to_client(text: &str, max: usize) -> String {
    quickforge_filters::redact::redact_clip(text, max)
}

/// A server's JSON relayed to the client (a log message's `data`), redacted
/// in place: sensitive names at any depth, every string by every rule.
pub fn json_to_client(value: &mut Value) -> bool {
    quickforge_filters::redact::redact_json(value)
}

/// Fields whose string value is an identifier the client uses again, kept
/// as it is by [`result_to_client`].
pub const IDENTIFIERS: &[&str] = &["uri", "uriTemplate", "mimeType", "name"];

/// A server's result the gateway passes through to the client (a
/// `resources/read`, `prompts/get` or `completion/complete` result),
/// redacted in place like [`json_to_client`], except the [`IDENTIFIERS`]'
/// values: a resource's URI is what the client reads it by again.
pub fn result_to_client(value: &mut Value) -> bool {
    quickforge_filters::redact::redact_json_keeping(value, IDENTIFIERS, &|text| Native.redact(text))
}

/// Longest text of the arguments shown in an approval question, bytes:
/// enough to see what the call will do, short enough for a dialog.
pub const MAX_APPROVAL_ARGS: usize = 1024;

/// A call's arguments (JSON text, as the script wrote them) as the person
/// asked to approve the call reads them: the script's own words, so only
/// credentials are redacted ([`Scope::Credentials`]: the path, URL or
/// address the person approves is the one the tool gets, and two different
/// paths must not read alike); every invisible, control or direction
/// character written out as `<U+XXXX>`, so the text reads as the tool will
/// receive it; then cut to [`MAX_APPROVAL_ARGS`]. Fuzzed
/// (`tests/fuzz/fuzz_targets/approval_text.rs`).
pub fn approval_arguments(args: &str) -> String {
    let words = quickforge_filters::redact::redact_in(args, Scope::Credentials).text;
    quickforge_filters::text::clip(
        &quickforge_filters::sanitize::reveal(&words),
        MAX_APPROVAL_ARGS,
    )
}

/// A text for the audit record: every rule, then cut to `max` bytes.
pub fn to_audit(text: &str, max: usize) -> String {
    quickforge_filters::redact::redact_clip(text, max)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::code::ErrorCode;
    use crate::execution::ErrorKind;

    const TOKEN: &str = "ghp_16C7e42F292c6912E7710c838347Ae178B4a";

    /// Red team round 3, point 10: the question showed every path as
    /// `[REDACTED:path]` (two different calls read alike) and bidi,
    /// zero-width and tag characters as they were; credentials stay hidden.
    #[test]
    fn a_person_reads_the_arguments_the_tool_will_get_without_credentials() {
        let a = approval_arguments(r#"{"path":"/home/alice/notes.txt"}"#);
        let b = approval_arguments(r#"{"path":"/home/alice/.ssh/id_rsa"}"#);
        assert_ne!(a, b);
        assert!(b.contains("/home/alice/.ssh/id_rsa"), "{b}");
        let url = approval_arguments(r#"{"url":"https://10.0.0.5:8443/admin?x=1"}"#);
        assert!(url.contains("https://10.0.0.5:8443/admin?x=1"), "{url}");
        let hidden = approval_arguments("{\"name\":\"report\u{202E}fdp.exe\u{200B}\u{E0041}\"}");
        assert_eq!(
            hidden,
            r#"{"name":"report<U+202E>fdp.exe<U+200B><U+E0041>"}"#
        );
        let secret = approval_arguments(&format!(
            r#"{{"body":"use {TOKEN}","password":"hunter2","url":"https://bob:pw@example.com/"}}"#
        ));
        for gone in [TOKEN, "hunter2", ":pw@"] {
            assert!(!secret.contains(gone), "{gone} in {secret}");
        }
        assert!(
            approval_arguments(&"x".repeat(10 * MAX_APPROVAL_ARGS)).len() < MAX_APPROVAL_ARGS + 64
        );
    }

    /// The script's boundary redacts the message and the quoted words once,
    /// masking a sensitive field whatever its value, and cuts after.
    #[test]
    fn a_failure_crossing_into_the_script_is_redacted_then_cut() {
        let e = ForgeError::new(ErrorCode::DownstreamError, "server \"s\" refused: ")
            .quote(serde_json::json!({"password": ["a", "b"], "note": TOKEN}));
        let shown = to_script(e, &Native);
        assert!(!shown.message.contains(TOKEN), "{}", shown.message);
        assert!(
            shown.message.contains(r#""password":"[REDACTED]""#),
            "{}",
            shown.message
        );
        assert!(shown.quoted.is_none());
        let long = ForgeError::new(
            ErrorCode::ToolError,
            format!("{} {TOKEN}", "x".repeat(2100)),
        );
        let shown = to_script(long, &Native);
        assert!(!shown.message.contains("ghp_"), "{}", shown.message);
        assert!(shown.message.len() < MAX_SCRIPT_MESSAGE + 64);
    }

    /// The client's boundary drops the stack of a failure whose message
    /// held a secret, and keeps it (cut) otherwise.
    #[test]
    fn a_failure_crossing_to_the_client_loses_a_stack_that_repeats_a_secret() {
        let mut e = ExecutionError::new(ErrorKind::Thrown, format!("bad {TOKEN}"));
        e.stack = Some(format!("Error: bad {TOKEN}\n    at f (script:1:1)"));
        let shown = to_client(e, &Native);
        assert!(!shown.message.contains(TOKEN));
        assert_eq!(shown.stack, None);
        let mut e = ExecutionError::new(ErrorKind::Thrown, "plain");
        e.stack = Some("x".repeat(3 * MAX_STACK));
        assert!(to_client(e, &Native).stack.unwrap().len() < MAX_STACK + 64);
    }

    /// Identifiers pass through to the client as they are; their neighbours
    /// do not.
    #[test]
    fn identifiers_reach_the_client_unchanged() {
        let uri = "file:///home/alice/notes.txt";
        let mut v = serde_json::json!({"contents": [{"uri": uri, "mimeType": "text/plain",
            "text": "see /home/alice/.ssh/id_rsa"}]});
        result_to_client(&mut v);
        assert_eq!(v["contents"][0]["uri"], uri);
        assert_eq!(v["contents"][0]["text"], "see [REDACTED:path]");
    }

    /// A script's own words keep their paths and URLs for a person to read,
    /// and lose their credentials.
    #[test]
    fn a_scripts_words_keep_paths_and_lose_credentials() {
        let shown = approval_arguments(&format!(
            r#"{{"path":"/home/alice/a.txt","url":"https://u:pw@example.com/x","key":"{TOKEN}"}}"#
        ));
        assert!(shown.contains("/home/alice/a.txt"), "{shown}");
        assert!(
            shown.contains("https://u:[REDACTED]@example.com/x"),
            "{shown}"
        );
        assert!(!shown.contains(TOKEN), "{shown}");
    }
}
