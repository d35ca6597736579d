//! Which values of a client's config are secrets, and where they go: out of
//! forge.toml (which gets a `${VAR}` reference) into the `env` block of the
//! snippet that replaces the servers in the client, so the value stays in the
//! client's config where it was and reaches quickforge as an environment
//! variable.
//!
//! Which values (and which parts of them) are secrets is the filters'
//! judge, [`quickforge_filters::secrets`], kept there so it is fuzzed: a
//! name that says so (`*TOKEN*`, `*KEY*`, `GH_PAT`, `Authorization`...),
//! an argument after a flag that says so (`--api-key VALUE`) or after `=`
//! in one (`--token=VALUE`), the credential parts of a URL (user info,
//! query values, path segments such as `/v1/sk_live_…/sse`), and any value
//! with a credential's shape (the redactor's rule set: `ghp_`, `sk-`,
//! `xox…`, `AKIA…`, JWTs...; long random-looking runs), whatever it is
//! called. Only the secret part moves: `--token=${VAR}`,
//! `https://host/v1/${VAR}/sse`.

use std::collections::BTreeMap;

use quickforge_filters::secrets::{self, Secret, is_secret_name};

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
    /// `args[i]`, with the argument before it when that one is literal
    /// text: a flag there (`--api-key`) can make this one a secret.
    Arg(usize, Option<&'a str>),
    /// `url`.
    Url,
    /// `command`.
    Command,
    /// `cwd`.
    Cwd,
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
            Field::Env(k) | Field::Header(k) => is_secret_name(k),
            _ => false,
        };
        let mut out = String::new();
        for piece in value {
            match piece {
                Piece::Text(s) if s.is_empty() => {}
                Piece::Text(s) => {
                    let found = if literal && named {
                        vec![Secret {
                            range: 0..s.len(),
                            name: None,
                        }]
                    } else if let Field::Arg(_, previous) = field {
                        secrets::in_arg(previous, s)
                    } else {
                        secrets::in_value(s)
                    };
                    let mut at = 0;
                    for secret in found {
                        out.push_str(&escape(&s[at..secret.range.start]));
                        let whole = secret.range == (0..s.len());
                        let part = &s[secret.range.clone()];
                        out.push_str(&self.move_literal(
                            server,
                            field,
                            part,
                            secret.name.as_deref(),
                            whole,
                        ));
                        at = secret.range.end;
                    }
                    out.push_str(&escape(&s[at..]));
                }
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
    /// clear before the reference when the whole header value moves. The
    /// variable is named after the field, or after `hint` (the flag, query
    /// key or path segment that marked the secret) in an argument or a URL.
    fn move_literal(
        &mut self,
        server: &str,
        field: Field<'_>,
        value: &str,
        hint: Option<&str>,
        whole: bool,
    ) -> String {
        let (scheme, secret) = match field {
            Field::Header(_) if whole => match value.split_once(' ') {
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
        let want = match (field, hint) {
            (Field::Env(k), _) => var_name(k),
            (Field::Header(_), _) if !scheme.is_empty() => format!("{server}_TOKEN"),
            (Field::Header(h), _) => format!("{server}_{}", var_name(h)),
            (Field::Arg(..) | Field::Url, Some(hint)) => format!("{server}_{}", var_name(hint)),
            (Field::Arg(i, _), None) => format!("{server}_ARG{i}"),
            (Field::Url, None) => format!("{server}_URL"),
            (Field::Command, _) => format!("{server}_COMMAND"),
            (Field::Cwd, _) => format!("{server}_CWD"),
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
    fn only_the_secret_part_of_a_value_moves() {
        let mut vars = Vars::default();
        let text = |s: &str| vec![Piece::Text(s.into())];
        assert_eq!(
            vars.render("api", Field::Arg(1, Some("--api-key")), &text("abc123")),
            "${API_API_KEY}"
        );
        assert_eq!(
            vars.render("api", Field::Arg(2, None), &text("--token=s3cr3t")),
            "--token=${API_TOKEN}"
        );
        assert_eq!(
            vars.render(
                "ev",
                Field::Url,
                &text("https://mcp.example.com/v1/sk_live_51Hx9QkLmN2pR7sT4uV8wY3zA6bC1dE0fG/sse")
            ),
            "https://mcp.example.com/v1/${EV_URL}/sse"
        );
        assert_eq!(
            vars.render(
                "gh",
                Field::Env("GH_PAT"),
                &text("ghp_R8x2Lq7Vt4Nw9Kc3Hs6Jp1Bd5Fg0Zm2Ya8Ue")
            ),
            "${GH_PAT}"
        );
        for (field, plain) in [
            (Field::Arg(1, Some("--port")), "8080"),
            (Field::Url, "https://mcp.example.com/v1/sse"),
            (Field::Env("DEBUG"), "1"),
        ] {
            assert_eq!(vars.render("x", field, &text(plain)), plain);
        }
        assert_eq!(vars.map["API_API_KEY"], Moved::Literal("abc123".into()));
        assert_eq!(
            vars.map["EV_URL"],
            Moved::Literal("sk_live_51Hx9QkLmN2pR7sT4uV8wY3zA6bC1dE0fG".into())
        );
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
            vars.render(
                "x",
                Field::Arg(0, None),
                &vec![Piece::Text("cost $5".into())]
            ),
            "cost $$5"
        );
    }
}
