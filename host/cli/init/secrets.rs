//! Which values of a client's config are secrets, and where they go: out of
//! forge.toml (which gets a `${VAR}` reference) into the `env` block of the
//! snippet that replaces the servers in the client, so the value stays in the
//! client's config where it was and reaches quickforge as an environment
//! variable.
//!
//! A value is a secret when its key says so (the redactor's
//! [`is_sensitive_key`] and the config's [`carries_credentials`]: `*TOKEN*`,
//! `*KEY*`, `*SECRET*`, `*PASSWORD*`, `Authorization`, ...) or when the
//! redactor finds a credential in it (a provider key, a JWT, a PEM block, a
//! long hex or base64 run, a URL with a password or a `token=` query).

use std::collections::BTreeMap;

use crate::config::carries_credentials;
use crate::redact::{is_sensitive_key, redact};

use super::model::{Piece, Template};
use super::parse::valid_var;

/// What the client passes to quickforge under one variable name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Moved {
    /// A value that was written in the client's config.
    Literal(String),
    /// The client's own environment variable, resolved by the client.
    ClientVar {
        /// Its name in the client's environment.
        name: String,
        /// Its default (Claude Code's `${VAR:-fallback}`).
        fallback: Option<String>,
    },
    /// A VS Code input, asked of the person by the client.
    Input(String),
    /// A variable of a VS Code `envFile`, which the snippet's `envFile` keeps
    /// passing; its value stays in that file.
    EnvFile(std::path::PathBuf),
}

/// Where a value sits in a server entry; decides the variable's name and
/// whether its key marks it secret.
#[derive(Debug, Clone, Copy)]
pub(super) enum Field<'a> {
    /// `env.KEY`.
    Env(&'a str),
    /// `headers.NAME`.
    Header(&'a str),
    /// `args[i]`.
    Arg(usize),
    /// `url`.
    Url,
    /// `command`.
    Command,
    /// `cwd`.
    Cwd,
}

/// Redaction markers that stand for a credential. The others (`url`, `ip`,
/// `path`, `stack`) hide infrastructure in error texts, which a config
/// rightly holds in clear.
const SECRET_MARKS: &[&str] = &[
    "[REDACTED]",
    "[REDACTED:token]",
    "[REDACTED:key]",
    "[REDACTED:jwt]",
    "[REDACTED:pem]",
    "[REDACTED:hex]",
    "[REDACTED:base64]",
    "[REDACTED:mnemonic]",
    "[REDACTED:card]",
];

/// Whether a name marks its value as a credential.
pub(crate) fn sensitive_name(name: &str) -> bool {
    is_sensitive_key(name) || carries_credentials(name)
}

/// Whether `value` itself looks like a credential, whatever its key.
pub(crate) fn looks_secret(value: &str) -> bool {
    if let Ok(url) = url::Url::parse(value)
        && url.has_host()
        && (url.password().is_some() || url.query_pairs().any(|(k, _)| sensitive_name(&k)))
    {
        return true;
    }
    let red = redact(value);
    red.changed && SECRET_MARKS.iter().any(|m| red.text.contains(m))
}

/// `s` as literal text in a forge.toml value: `$` doubled, so quickforge's
/// `${VAR}` expansion gives back exactly `s`.
pub(super) fn escape(s: &str) -> String {
    s.replace('$', "$$")
}

/// A variable name made of `s`: upper case, `_` for anything else than
/// letters and digits, never starting with a digit.
pub(super) fn var_name(s: &str) -> String {
    let mut out: String = s
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_uppercase()
            } else {
                '_'
            }
        })
        .collect();
    if !valid_var(&out) {
        out.insert(0, '_');
    }
    out
}

/// The variables the snippet gives quickforge, collected while forge.toml is
/// written.
#[derive(Debug, Default)]
pub(super) struct Vars {
    /// Variable name → what the client passes under it.
    pub map: BTreeMap<String, Moved>,
}

impl Vars {
    /// The forge.toml text for `value` of `server`'s `field`: literal text
    /// escaped, references and secrets as `${VAR}`.
    pub(super) fn render(&mut self, server: &str, field: Field<'_>, value: &Template) -> String {
        let literal = value.iter().all(|p| matches!(p, Piece::Text(_)));
        let named = match field {
            Field::Env(k) | Field::Header(k) => sensitive_name(k),
            _ => false,
        };
        let mut out = String::new();
        for piece in value {
            match piece {
                Piece::Text(s) if s.is_empty() => {}
                Piece::Text(s) if (literal && named) || looks_secret(s) => {
                    out.push_str(&self.move_literal(server, field, s));
                }
                Piece::Text(s) => out.push_str(&escape(s)),
                Piece::Var { name, fallback } => {
                    let moved = Moved::ClientVar {
                        name: name.clone(),
                        fallback: fallback.clone(),
                    };
                    let var = self.claim(name, server, moved);
                    out.push_str(&format!("${{{var}}}"));
                }
                Piece::Input(id) => {
                    let var = self.claim(&var_name(id), server, Moved::Input(id.clone()));
                    out.push_str(&format!("${{{var}}}"));
                }
            }
        }
        out
    }

    /// Moves a secret `value` into the snippet; returns what replaces it in
    /// forge.toml. An `Authorization` scheme (`Bearer `, `Basic `) stays in
    /// clear before the reference.
    fn move_literal(&mut self, server: &str, field: Field<'_>, value: &str) -> String {
        let (scheme, secret) = match field {
            Field::Header(_) => match value.split_once(' ') {
                Some((scheme, rest))
                    if ["bearer", "basic", "token"]
                        .contains(&scheme.to_ascii_lowercase().as_str())
                        && !rest.is_empty() =>
                {
                    (format!("{scheme} "), rest)
                }
                _ => (String::new(), value),
            },
            _ => (String::new(), value),
        };
        let server = var_name(server);
        let want = match field {
            Field::Env(k) => var_name(k),
            Field::Header(_) if !scheme.is_empty() => format!("{server}_TOKEN"),
            Field::Header(h) => format!("{server}_{}", var_name(h)),
            Field::Arg(i) => format!("{server}_ARG{i}"),
            Field::Url => format!("{server}_URL"),
            Field::Command => format!("{server}_COMMAND"),
            Field::Cwd => format!("{server}_CWD"),
        };
        let var = self.claim(&want, &server, Moved::Literal(secret.to_string()));
        format!("{}${{{var}}}", escape(&scheme))
    }

    /// A variable of an `envFile`: `${KEY}`, read from `file` by the client.
    pub(super) fn env_file_var(
        &mut self,
        server: &str,
        key: &str,
        file: &std::path::Path,
    ) -> String {
        let var = self.claim(&var_name(key), server, Moved::EnvFile(file.to_path_buf()));
        format!("${{{var}}}")
    }

    /// `want` for `moved`, or `SERVER_want` (then a number) when `want` is
    /// taken by something else.
    fn claim(&mut self, want: &str, server: &str, moved: Moved) -> String {
        let prefixed = format!("{}_{want}", var_name(server));
        let candidates = [want.to_string(), prefixed.clone()]
            .into_iter()
            .chain((2..).map(|n| format!("{prefixed}_{n}")));
        for name in candidates {
            match self.map.get(&name) {
                Some(existing) if *existing == moved => return name,
                Some(_) => continue,
                None => {
                    self.map.insert(name.clone(), moved);
                    return name;
                }
            }
        }
        unreachable!("the candidate names never run out")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_are_told_from_paths_and_hosts() {
        assert!(looks_secret("ghp_16C7e42F292c6912E7710c838347Ae178B4a"));
        assert!(looks_secret("postgresql://me:hunter2@db.example.com/app"));
        assert!(looks_secret("https://api.example.com/mcp?api_key=abc123"));
        assert!(!looks_secret("/Users/me/Documents/notes"));
        assert!(!looks_secret("https://mcp.example.com/mcp"));
        assert!(!looks_secret("@modelcontextprotocol/server-filesystem"));
        assert!(!looks_secret("-y"));
        assert!(sensitive_name("GITHUB_PERSONAL_ACCESS_TOKEN"));
        assert!(sensitive_name("Authorization"));
        assert!(sensitive_name("X-API-Key"));
        assert!(!sensitive_name("MEMORY_FILE_PATH"));
    }

    #[test]
    fn a_bearer_header_keeps_its_scheme_and_names_collide_safely() {
        let mut vars = Vars::default();
        let a = vars.render(
            "api",
            Field::Header("Authorization"),
            &vec![Piece::Text("Bearer s3cr3t".into())],
        );
        assert_eq!(a, "Bearer ${API_TOKEN}");
        let b = vars.render(
            "one",
            Field::Env("API_KEY"),
            &vec![Piece::Text("k1".into())],
        );
        let c = vars.render(
            "two",
            Field::Env("API_KEY"),
            &vec![Piece::Text("k2".into())],
        );
        assert_eq!((b.as_str(), c.as_str()), ("${API_KEY}", "${TWO_API_KEY}"));
        assert_eq!(vars.map["TWO_API_KEY"], Moved::Literal("k2".into()));
        assert_eq!(
            vars.render("x", Field::Arg(0), &vec![Piece::Text("cost $5".into())]),
            "cost $$5"
        );
    }
}
