//! What `quickforge init` reads out of a client's configuration, in one shape
//! for every client: servers whose values are [`Template`]s, so a client's own
//! `${VAR}`, `${env:VAR}` and `${input:id}` survive the trip as references
//! rather than being resolved (and their values written down) on the way.

use std::path::PathBuf;

/// One part of a value as the client wrote it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Piece {
    /// Literal text.
    Text(String),
    /// A reference to the client's environment (`${VAR}`, `${VAR:-fallback}`,
    /// `${env:VAR}`, Codex's `env_vars`): the client resolves it.
    Var {
        /// The variable.
        name: String,
        /// Used when it is unset (Claude Code's `${VAR:-fallback}`).
        fallback: Option<String>,
    },
    /// VS Code's `${input:id}`: the client asks the person for it.
    Input(String),
}

/// A value: its pieces, in order.
pub(super) type Template = Vec<Piece>;

/// A template of one literal text.
pub(super) fn text(s: impl Into<String>) -> Template {
    vec![Piece::Text(s.into())]
}

/// The text of a template that is one literal text, if it is.
pub(super) fn literal(t: &Template) -> Option<&str> {
    match t.as_slice() {
        [Piece::Text(s)] => Some(s),
        _ => None,
    }
}

/// One server of a client's list.
#[derive(Debug, Clone)]
pub(super) struct Imported {
    /// Its name in the client.
    pub name: String,
    /// How it is reached, or why it cannot be carried over.
    pub kind: Kind,
    /// VS Code's `envFile`, resolved to a path.
    pub env_file: Option<PathBuf>,
}

/// How a server is reached.
#[derive(Debug, Clone)]
pub(super) enum Kind {
    /// A child process.
    Stdio {
        /// The program.
        command: Template,
        /// Its arguments.
        args: Vec<Template>,
        /// Its environment, in the client's order.
        env: Vec<(String, Template)>,
        /// Its working directory.
        cwd: Option<Template>,
    },
    /// A URL (streamable HTTP or legacy SSE: quickforge tries both).
    Http {
        /// The endpoint.
        url: Template,
        /// Request headers, in the client's order.
        headers: Vec<(String, Template)>,
    },
    /// Not carried over, and why (OAuth, an unknown transport, disabled).
    Skipped(String),
}

/// A VS Code `inputs` entry a server refers to.
#[derive(Debug, Clone)]
pub(super) struct Input {
    /// Its id, as in `${input:id}`.
    pub id: String,
    /// Its description, for the comment in forge.toml.
    pub description: Option<String>,
    /// The entry as the client wrote it, carried into the snippet.
    pub raw: serde_json::Value,
}

/// Everything read from one client file.
#[derive(Debug, Clone)]
pub(super) struct Source {
    /// Its servers, in the file's order.
    pub servers: Vec<Imported>,
    /// VS Code's `inputs`.
    pub inputs: Vec<Input>,
}
