//! `quickforge init`: switch an MCP client over to quickforge.
//!
//! Reads the server list a client already has (Claude Desktop, Claude Code,
//! Cursor, VS Code, Codex; or `--from FILE`), writes a commented forge.toml
//! with every server it can carry, and prints the entry that replaces them in
//! the client. Secrets never land in forge.toml: they become `${VAR}`s, and
//! their values move into that entry's `env`. `--apply` rewrites the client's
//! file (keeping a backup), `--undo` restores it.
//!
//! - `paths`: the clients and where their files are;
//! - `parse`, `codex`: reading each client's format into `model`;
//! - `secrets`: which values are secrets, and their variables;
//! - `writer`: forge.toml; `snippet`: the client's new entry;
//! - `apply`: `--apply` and `--undo`.

mod apply;
mod codex;
mod model;
mod parse;
mod paths;
mod secrets;
mod snippet;
mod writer;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

pub use paths::Client;

use super::EXIT_USAGE;
use crate::files::{self, write_atomic};

/// `quickforge init`'s options.
#[derive(Debug, clap::Args)]
pub struct InitArgs {
    /// The client to switch over (default: the only one found here).
    #[arg(long, value_enum, conflicts_with = "from")]
    client: Option<Client>,
    /// Read this file instead of a client's usual one.
    #[arg(long, value_name = "PATH")]
    from: Option<PathBuf>,
    /// The format of --from (default: guessed from its name and keys).
    #[arg(long, value_enum, requires = "from")]
    format: Option<Client>,
    /// Also rewrite the client's file to run quickforge, keeping a backup next to it.
    #[arg(long)]
    apply: bool,
    /// Restore the client's file from the backup --apply kept, and stop.
    #[arg(long, conflicts_with_all = ["apply", "force"])]
    undo: bool,
    /// Overwrite an existing forge.toml.
    #[arg(long)]
    force: bool,
}

/// Runs `quickforge init`; forge.toml goes to `config`, else
/// `$FORGE_CONFIG`, else `./forge.toml`.
pub fn init(config: Option<PathBuf>, args: InitArgs) -> ExitCode {
    match run(config, args) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(EXIT_USAGE)
        }
    }
}

/// The client and file to read, from the options or by looking around.
fn choose(args: &InitArgs, places: &paths::Places) -> Result<(Client, PathBuf), String> {
    if let Some(from) = &args.from {
        let text = std::fs::read_to_string(from)
            .map_err(|e| format!("could not read {}: {e}", from.display()))?;
        return Ok((
            args.format.unwrap_or_else(|| paths::detect(from, &text)),
            from.clone(),
        ));
    }
    if let Some(client) = args.client {
        return Ok((client, places.file(client)));
    }
    let found = places.found();
    let found: Vec<_> = if args.undo {
        found
            .into_iter()
            .filter(|(_, f)| files::occupied(&apply::backup_of(f)))
            .collect()
    } else {
        found
    };
    match found.as_slice() {
        [one] => Ok(one.clone()),
        [] => Err(format!(
            "found no {} here; looked for:\n{}\nname one with --client, or a file with --from",
            if args.undo {
                "client file with a quickforge backup"
            } else {
                "MCP client configuration"
            },
            paths::ALL
                .iter()
                .map(|&c| format!("  {:<17} {}", c.id(), places.file(c).display()))
                .collect::<Vec<_>>()
                .join("\n")
        )),
        many => Err(format!(
            "found several clients; choose one with --client:\n{}",
            many.iter()
                .map(|(c, f)| format!("  {:<17} {}", c.id(), f.display()))
                .collect::<Vec<_>>()
                .join("\n")
        )),
    }
}

fn absolute(path: &Path) -> Result<PathBuf, String> {
    std::path::absolute(path).map_err(|e| format!("could not resolve {}: {e}", path.display()))
}

fn run(config: Option<PathBuf>, args: InitArgs) -> Result<ExitCode, String> {
    let places = paths::Places::here()?;
    let (client, file) = choose(&args, &places)?;
    if args.undo {
        apply::undo(&file)?;
        eprintln!("restored {} from its backup", file.display());
        return Ok(ExitCode::SUCCESS);
    }
    let target = absolute(&super::config_path(config))?;
    // Every file this run writes is checked before the first is written, so
    // a link in the way stops it with nothing done (the writes refuse links
    // on their own too).
    files::refuse_link(&target).map_err(|e| e.to_string())?;
    if files::occupied(&target) && !args.force {
        return Err(format!(
            "{} already exists; pass --force to overwrite it, or --config PATH to write elsewhere",
            target.display()
        ));
    }
    if args.apply {
        apply::check(&file)?;
    }
    let read = if args.apply {
        // Read without following a link either: the bytes read are the
        // backup's.
        files::read(&file)
            .map_err(|e| e.to_string())
            .and_then(|b| String::from_utf8(b).map_err(|e| e.to_string()))
    } else {
        std::fs::read_to_string(&file).map_err(|e| e.to_string())
    };
    let original = read.map_err(|e| {
        format!(
            "could not read {} ({}): {e}",
            file.display(),
            client.title()
        )
    })?;
    let source = parse::parse(client, &file, &original, &places)
        .map_err(|e| format!("{} ({}): {e}", file.display(), client.title()))?;
    let built = writer::build(client, &file, &source, &target);
    let program = std::env::current_exe()
        .map_err(|e| format!("could not find the quickforge program: {e}"))?;
    let entry = snippet::Entry {
        client,
        program: &program,
        config: &target,
        vars: &built.vars,
        env_file: built.env_file.as_deref(),
        inputs: &source.inputs,
    };
    write_atomic(&target, built.text.as_bytes()).map_err(|e| e.to_string())?;
    eprintln!(
        "wrote {} with {} server(s) from {} ({})",
        target.display(),
        built.carried.len(),
        client.title(),
        file.display()
    );
    for (from, to) in &built.carried {
        if from != to {
            eprintln!("  {from:?} is {to:?} in forge.toml");
        }
    }
    for (name, why) in &built.skipped {
        eprintln!("not carried over: {name:?}: {why}");
    }
    if args.apply {
        let backup = apply::apply(&file, &original, &entry, &places)?;
        eprintln!(
            "rewrote {} to run quickforge (original kept in {}; `quickforge init --undo` puts it back); restart the client",
            file.display(),
            backup.display()
        );
    } else {
        eprintln!(
            "replace the servers in {} with the entry below (or run again with --apply; secrets are in its env):",
            file.display()
        );
    }
    print!("{}", entry.text());
    Ok(ExitCode::SUCCESS)
}
