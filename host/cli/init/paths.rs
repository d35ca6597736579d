//! Which MCP clients `quickforge init` knows, and where each keeps its server
//! list on this OS.
//!
//! The home folder comes from `directories-next`, which reads `$HOME` on Unix
//! (so tests point it at a temporary folder); project files are looked up in
//! the working directory.

use std::path::{Path, PathBuf};

/// An MCP client whose server list `quickforge init` reads and rewrites.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Client {
    /// Claude Desktop: `claude_desktop_config.json`, `mcpServers`.
    ClaudeDesktop,
    /// Claude Code, project scope: `.mcp.json` in the project.
    ClaudeCode,
    /// Claude Code, user and local scopes: `~/.claude.json`, `mcpServers` and
    /// `projects.<this folder>.mcpServers`.
    ClaudeCodeUser,
    /// Cursor, project scope: `.cursor/mcp.json`.
    Cursor,
    /// Cursor, user scope: `~/.cursor/mcp.json`.
    CursorUser,
    /// VS Code: `.vscode/mcp.json`, `servers` and `inputs`.
    Vscode,
    /// Codex: `~/.codex/config.toml` (or `$CODEX_HOME`), `[mcp_servers.NAME]`.
    Codex,
}

/// Every client, in the order discovery looks for them.
pub const ALL: [Client; 7] = [
    Client::ClaudeDesktop,
    Client::ClaudeCode,
    Client::ClaudeCodeUser,
    Client::Cursor,
    Client::CursorUser,
    Client::Vscode,
    Client::Codex,
];

/// How a client writes references to its environment inside values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Syntax {
    /// None: every value is literal (Claude Desktop).
    Literal,
    /// `${VAR}` and `${VAR:-default}` (Claude Code).
    Dollar,
    /// `${env:VAR}`, `${userHome}`, `${workspaceFolder}`, and in VS Code
    /// `${input:id}` (Cursor, VS Code).
    Editor,
    /// No interpolation; `env_vars` and `*_env_var` keys name variables (Codex).
    Codex,
}

impl Client {
    /// Its name on the command line (`--client`, `--format`).
    pub fn id(self) -> &'static str {
        match self {
            Client::ClaudeDesktop => "claude-desktop",
            Client::ClaudeCode => "claude-code",
            Client::ClaudeCodeUser => "claude-code-user",
            Client::Cursor => "cursor",
            Client::CursorUser => "cursor-user",
            Client::Vscode => "vscode",
            Client::Codex => "codex",
        }
    }

    /// Its name for people.
    pub fn title(self) -> &'static str {
        match self {
            Client::ClaudeDesktop => "Claude Desktop",
            Client::ClaudeCode => "Claude Code (project .mcp.json)",
            Client::ClaudeCodeUser => "Claude Code (~/.claude.json)",
            Client::Cursor => "Cursor (project)",
            Client::CursorUser => "Cursor (user)",
            Client::Vscode => "VS Code",
            Client::Codex => "Codex",
        }
    }

    /// How it writes references.
    pub fn syntax(self) -> Syntax {
        match self {
            Client::ClaudeDesktop => Syntax::Literal,
            Client::ClaudeCode | Client::ClaudeCodeUser => Syntax::Dollar,
            Client::Cursor | Client::CursorUser | Client::Vscode => Syntax::Editor,
            Client::Codex => Syntax::Codex,
        }
    }

    /// Where its file is on this machine, given the home folder and the
    /// project (working) directory.
    pub fn path(self, home: &Path, config_dir: &Path, project: &Path) -> PathBuf {
        match self {
            Client::ClaudeDesktop => config_dir.join("Claude").join("claude_desktop_config.json"),
            Client::ClaudeCode => project.join(".mcp.json"),
            Client::ClaudeCodeUser => home.join(".claude.json"),
            Client::Cursor => project.join(".cursor").join("mcp.json"),
            Client::CursorUser => home.join(".cursor").join("mcp.json"),
            Client::Vscode => project.join(".vscode").join("mcp.json"),
            Client::Codex => std::env::var_os("CODEX_HOME")
                .filter(|h| !h.is_empty())
                .map_or_else(|| home.join(".codex"), PathBuf::from)
                .join("config.toml"),
        }
    }
}

/// The folders client files live under.
#[derive(Debug, Clone)]
pub struct Places {
    /// The user's home.
    pub home: PathBuf,
    /// The per-OS configuration folder: `~/Library/Application Support` on
    /// macOS, `%APPDATA%` on Windows, `$XDG_CONFIG_HOME` or `~/.config` on
    /// Linux.
    pub config_dir: PathBuf,
    /// The project: the working directory.
    pub project: PathBuf,
}

impl Places {
    /// This user's folders and the working directory.
    pub fn here() -> Result<Places, String> {
        let dirs = directories_next::BaseDirs::new()
            .ok_or("could not find the home folder (is $HOME set?)")?;
        let project = std::env::current_dir()
            .map_err(|e| format!("could not read the working directory: {e}"))?;
        Ok(Places {
            home: dirs.home_dir().to_path_buf(),
            config_dir: dirs.config_dir().to_path_buf(),
            project,
        })
    }

    /// `client`'s file here.
    pub fn file(&self, client: Client) -> PathBuf {
        client.path(&self.home, &self.config_dir, &self.project)
    }

    /// The clients whose file exists here, with their files.
    pub fn found(&self) -> Vec<(Client, PathBuf)> {
        ALL.iter()
            .map(|&c| (c, self.file(c)))
            .filter(|(_, p)| p.is_file())
            .collect()
    }
}

/// Guesses the client format of a file given with `--from`: by its name and
/// then by its keys.
pub fn detect(path: &Path, text: &str) -> Client {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let parent = path
        .parent()
        .and_then(|p| p.file_name())
        .and_then(|n| n.to_str())
        .unwrap_or("");
    if name.ends_with(".toml") {
        return Client::Codex;
    }
    match (parent, name) {
        (_, "claude_desktop_config.json") => return Client::ClaudeDesktop,
        (_, ".mcp.json") => return Client::ClaudeCode,
        (_, ".claude.json") => return Client::ClaudeCodeUser,
        (".cursor", "mcp.json") => return Client::Cursor,
        (".vscode", "mcp.json") => return Client::Vscode,
        _ => {}
    }
    let json: serde_json::Value = serde_json::from_str(text).unwrap_or_default();
    if json.get("servers").is_some() {
        Client::Vscode
    } else if json.get("projects").is_some() {
        Client::ClaudeCodeUser
    } else if text.contains("${env:") {
        Client::Cursor
    } else if text.contains("${") {
        Client::ClaudeCode
    } else {
        Client::ClaudeDesktop
    }
}
