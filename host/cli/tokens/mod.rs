//! `quickforge tokens`: the context tokens of quickforge's surface against
//! listing every downstream tool, as a table or JSON.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use crate::gateway::{Gateway, SERVER_GRACE, STARTUP_WAIT};

pub mod count;

use super::{EXIT_FAILED, load_config};

/// Runs `quickforge tokens`.
pub(super) async fn tokens(config: Option<PathBuf>, as_json: bool) -> ExitCode {
    let config = match load_config(config) {
        Ok(c) => c,
        Err(code) => return code,
    };
    let (configured, direct) = if config.servers.is_empty() {
        (None, Vec::new())
    } else {
        let gateway = Gateway::start(&config.gateway());
        gateway.wait_started(STARTUP_WAIT).await;
        let m = gateway.manifest();
        let direct: Vec<_> = gateway.direct_tools().listed().cloned().collect();
        gateway.close(SERVER_GRACE).await;
        (Some(count::downstream_tools(&m)), direct)
    };
    let table = match count::table(configured, &direct, &config.surface) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(EXIT_FAILED);
        }
    };
    let mut out = std::io::stdout().lock();
    if as_json {
        let _ = writeln!(
            out,
            "{}",
            serde_json::to_string_pretty(&table).unwrap_or_default()
        );
    } else {
        let _ = write!(out, "{}", count::markdown(&table));
    }
    ExitCode::SUCCESS
}
