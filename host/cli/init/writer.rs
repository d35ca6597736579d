//! The forge.toml `quickforge init` writes: one commented `[servers.NAME]`
//! per server carried over, built with `toml_edit`, each checked by the
//! config loader on its own so one server quickforge cannot take (say, a
//! token over plain http) is left out with the reason instead of failing the
//! rest.

use std::collections::BTreeSet;
use std::path::Path;

use toml_edit::{Array, DocumentMut, InlineTable, Item, Table, value};

use super::model::{Imported, Kind, Source};
use super::paths::Client;
use super::secrets::{Field, Moved, Vars};
use crate::config::{Config, MAX_NAME_LEN};

/// What a config check substitutes for a variable whose value is not known
/// at `init` time (the client resolves it later).
const PLACEHOLDER: &str = "quickforge-init-check";

/// The result of converting one client file.
pub(super) struct Built {
    /// forge.toml's text.
    pub text: String,
    /// What the snippet's `env` must pass.
    pub vars: Vars,
    /// Servers carried over: (client name, forge.toml name).
    pub carried: Vec<(String, String)>,
    /// Servers left out, with why.
    pub skipped: Vec<(String, String)>,
    /// The `envFile` the snippet keeps (VS Code), when servers used one.
    pub env_file: Option<std::path::PathBuf>,
}

/// Builds forge.toml from `source`, read from `client`'s `file`; `target` is
/// where it will be written (relative `cwd`s resolve against its folder).
pub(super) fn build(client: Client, file: &Path, source: &Source, target: &Path) -> Built {
    let mut vars = Vars::default();
    let mut doc = DocumentMut::new();
    let mut servers = Table::new();
    servers.set_implicit(true);
    let mut taken = BTreeSet::new();
    let mut carried = Vec::new();
    let mut skipped = Vec::new();
    let mut env_file = None;
    for imported in &source.servers {
        if let Kind::Skipped(why) = &imported.kind {
            skipped.push((imported.name.clone(), why.clone()));
            continue;
        }
        if is_quickforge(imported) {
            skipped.push((imported.name.clone(), "this is quickforge itself".into()));
            continue;
        }
        let name = forge_name(&imported.name, &taken);
        let before = vars.map.clone();
        let (table, file_used) = match server(&name, imported, &mut vars, env_file.as_deref()) {
            Ok(t) => t,
            Err(why) => {
                vars.map = before;
                skipped.push((imported.name.clone(), why));
                continue;
            }
        };
        if let Err(e) = check(&name, &table, &vars, target) {
            vars.map = before;
            skipped.push((imported.name.clone(), e));
            continue;
        }
        if env_file.is_none() {
            env_file = file_used;
        }
        taken.insert(name.clone());
        servers.insert(&name, Item::Table(table));
        carried.push((imported.name.clone(), name));
    }
    doc.insert("servers", Item::Table(servers));
    let mut text = header(client, file, &vars, source);
    text.push_str(&doc.to_string());
    if !text.ends_with('\n') {
        text.push('\n');
    }
    if !skipped.is_empty() {
        text.push_str("\n# Not carried over (keep them in the client):\n");
        for (name, why) in &skipped {
            text.push_str(&format!("#   {name:?}: {}\n", one_line(why)));
        }
    }
    Built {
        text,
        vars,
        carried,
        skipped,
        env_file,
    }
}

/// Whether the entry runs quickforge (a client already switched over): it
/// must not become a server of itself.
fn is_quickforge(imported: &Imported) -> bool {
    let Kind::Stdio { command, .. } = &imported.kind else {
        return false;
    };
    let program: String = command
        .iter()
        .filter_map(|p| match p {
            super::model::Piece::Text(t) => Some(t.as_str()),
            _ => None,
        })
        .collect();
    Path::new(&program)
        .file_stem()
        .is_some_and(|s| s == "quickforge")
}

/// A comment-safe single line.
fn one_line(s: &str) -> String {
    s.replace(['\n', '\r'], " ")
}

/// The comment block at the top.
fn header(client: Client, file: &Path, vars: &Vars, source: &Source) -> String {
    let mut h = format!(
        "# forge.toml written by `quickforge init` from {}\n# ({}).\n#\n\
         # Each [servers.NAME] was a server of that client. Values that looked like\n\
         # secrets, and the client's own variable references, are ${{VAR}} here: the\n\
         # client now starts quickforge with them in its `env` (the snippet\n\
         # `quickforge init` printed), so this file holds no secret in clear.\n\
         # Every other key takes forge.toml.example's default; see it for the rest.\n",
        client.title(),
        one_line(&file.display().to_string())
    );
    if !vars.map.is_empty() {
        h.push_str("#\n# Variables the client passes to quickforge:\n");
        for (var, moved) in &vars.map {
            let what = match moved {
                Moved::Literal(_) => "a secret moved out of the client's server entry".to_string(),
                Moved::ClientVar { name, .. } => {
                    format!("the client's own environment variable {name}")
                }
                Moved::Input(id) => {
                    let description = source
                        .inputs
                        .iter()
                        .find(|i| &i.id == id)
                        .and_then(|i| i.description.as_deref())
                        .map(|d| format!(" ({})", one_line(d)))
                        .unwrap_or_default();
                    format!("VS Code input {id:?}{description}, asked by the client")
                }
                Moved::EnvFile(path) => format!(
                    "read by the client from {}",
                    one_line(&path.display().to_string())
                ),
            };
            h.push_str(&format!("#   {var}: {what}\n"));
        }
    }
    h
}

/// A forge.toml server name for the client's `name`: letters, digits, `_`
/// and `-`, at most [`MAX_NAME_LEN`], unique.
fn forge_name(name: &str, taken: &BTreeSet<String>) -> String {
    let mut base: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '-'
            }
        })
        .take(MAX_NAME_LEN - 4)
        .collect();
    if base.trim_matches('-').is_empty() {
        base = "server".into();
    }
    let mut candidate = base.clone();
    let mut n = 2;
    while taken.contains(&candidate) {
        candidate = format!("{base}-{n}");
        n += 1;
    }
    candidate
}

/// One `[servers.NAME]` table, and the `envFile` it read, if any.
fn server(
    name: &str,
    imported: &Imported,
    vars: &mut Vars,
    snippet_env_file: Option<&Path>,
) -> Result<(Table, Option<std::path::PathBuf>), String> {
    let mut t = Table::new();
    let mut comment = format!("\n# {:?} in the client", imported.name);
    if imported.name != name {
        comment.push_str(" (renamed: forge.toml names are letters, digits, _ and -)");
    }
    comment.push('\n');
    let mut file_used = None;
    match &imported.kind {
        Kind::Stdio {
            command,
            args,
            env,
            cwd,
        } => {
            t.insert("command", value(vars.render(name, Field::Command, command)));
            let mut list = Array::new();
            for (i, arg) in args.iter().enumerate() {
                // Arguments are judged in pairs: `--api-key VALUE`.
                let previous = i
                    .checked_sub(1)
                    .and_then(|p| super::model::literal(&args[p]));
                list.push(vars.render(name, Field::Arg(i, previous), arg));
            }
            t.insert("args", value(list));
            let mut table = InlineTable::new();
            for (k, v) in env {
                table.insert(k, vars.render(name, Field::Env(k), v).into());
            }
            if let Some(path) = &imported.env_file {
                let text = std::fs::read_to_string(path)
                    .map_err(|e| format!("could not read its envFile {}: {e}", path.display()))?;
                let shared = snippet_env_file.is_none_or(|f| f == path);
                for (k, v) in dotenv(&text) {
                    if table.contains_key(&k) {
                        continue;
                    }
                    let forge = if shared {
                        vars.env_file_var(name, &k, path)
                    } else {
                        // The snippet carries one envFile; another one's
                        // values move like any other secret.
                        vars.render(name, Field::Env(&k), &super::model::text(v))
                    };
                    table.insert(&k, forge.into());
                }
                if shared {
                    file_used = Some(path.clone());
                }
            }
            if !table.is_empty() {
                t.insert("env", value(table));
            }
            if let Some(cwd) = cwd {
                t.insert("cwd", value(vars.render(name, Field::Cwd, cwd)));
            }
        }
        Kind::Http { url, headers } => {
            t.insert("url", value(vars.render(name, Field::Url, url)));
            let mut table = InlineTable::new();
            for (k, v) in headers {
                table.insert(k, vars.render(name, Field::Header(k), v).into());
            }
            if table.is_empty() {
                comment.push_str("# No credentials in the client: if it signs in with OAuth, quickforge cannot do that for it.\n");
            } else {
                t.insert("headers", value(table));
            }
        }
        Kind::Skipped(why) => return Err(why.clone()),
    }
    t.decor_mut().set_prefix(comment);
    Ok((t, file_used))
}

/// `KEY=VALUE` lines of a dotenv file, as VS Code's `envFile` reads them.
/// Hand-written: the format is a few lines of rules and no dotenv crate is a
/// dependency; blank lines, `#` comments and `export ` prefixes are skipped,
/// matching quotes around a value removed.
fn dotenv(text: &str) -> Vec<(String, String)> {
    text.lines()
        .filter_map(|line| {
            let line = line.trim();
            let line = line.strip_prefix("export ").unwrap_or(line);
            if line.is_empty() || line.starts_with('#') {
                return None;
            }
            let (k, v) = line.split_once('=')?;
            let v = v.trim();
            let v = ['"', '\'']
                .iter()
                .find_map(|q| v.strip_prefix(*q).and_then(|x| x.strip_suffix(*q)))
                .unwrap_or(v);
            Some((k.trim().to_string(), v.to_string()))
        })
        .collect()
}

/// Loads `[servers.NAME]` alone with the config loader, variables set to the
/// values the client will pass (or a placeholder for those it resolves).
fn check(name: &str, table: &Table, vars: &Vars, target: &Path) -> Result<(), String> {
    let mut doc = DocumentMut::new();
    let mut servers = Table::new();
    servers.insert(name, Item::Table(table.clone()));
    doc.insert("servers", Item::Table(servers));
    let lookup = |var: &str| -> Option<String> {
        Some(match vars.map.get(var) {
            Some(Moved::Literal(v)) => v.clone(),
            Some(Moved::ClientVar { name, fallback }) => std::env::var(name)
                .ok()
                .or_else(|| fallback.clone())
                .unwrap_or_else(|| PLACEHOLDER.into()),
            _ => PLACEHOLDER.into(),
        })
    };
    Config::parse_with_env(&doc.to_string(), target, &lookup)
        .map(|_| ())
        .map_err(|e| e.to_string())
}
