//! quickforge's filters for untrusted text, kept free of Wasmtime and of
//! the gateway so that they build, test and fuzz on their own.
//!
//! - [`validate`] — the static check of a model's script before it runs;
//! - [`redact`] — secrets out of every error text and log line;
//! - [`secrets`] — which parts of a server's configuration are credentials
//!   (`quickforge init`);
//! - [`integrity`] — a downstream tool's hash, for pinning what was trusted;
//! - [`fold`] — look-alike text folded to one spelling before matching;
//! - [`sanitize`] — downstream tool metadata made safe for a model to read;
//! - [`expand`] — `${VAR}` references in configuration values;
//! - [`text`] — cutting text to a byte limit on a character boundary;
//! - [`seal`] — ids a client carries back (stash handles), sealed with an
//!   HMAC so a forged one is refused before any lookup.

pub mod expand;
pub mod fold;
pub mod integrity;
pub mod redact;
pub mod sanitize;
pub mod seal;
pub mod secrets;
pub mod text;
pub mod validate;
