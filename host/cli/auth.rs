//! `quickforge auth hash-token`: the SHA-256 that `[[auth.tokens]]
//! sha256` lists, of a token read from standard input (never from the
//! command line, where `ps` and shell history would show it).

use std::io::Read;
use std::process::ExitCode;

use super::{EXIT_FAILED, EXIT_USAGE};

/// Longest token read, in bytes: 4 KiB, far above any bearer token a
/// person would paste (a JWT is not listed here; it is checked by its
/// signature).
const MAX_TOKEN_BYTES: u64 = 4096;

/// Reads one token from stdin (a trailing newline is not part of it) and
/// prints its SHA-256 in hex.
pub(super) fn hash_token() -> ExitCode {
    let mut text = String::new();
    if let Err(e) = std::io::stdin()
        .take(MAX_TOKEN_BYTES + 1)
        .read_to_string(&mut text)
    {
        eprintln!("error: could not read the token from standard input: {e}");
        return ExitCode::from(EXIT_FAILED);
    }
    if text.len() as u64 > MAX_TOKEN_BYTES {
        eprintln!("error: the token is longer than {MAX_TOKEN_BYTES} bytes");
        return ExitCode::from(EXIT_USAGE);
    }
    let token = text.strip_suffix('\n').unwrap_or(&text);
    let token = token.strip_suffix('\r').unwrap_or(token);
    if token.len() < crate::auth::MIN_TOKEN_BYTES || token.chars().any(char::is_whitespace) {
        eprintln!(
            "error: a token must be at least {} bytes without spaces or line breaks (got {} bytes); make one with e.g. `openssl rand -hex 32`",
            crate::auth::MIN_TOKEN_BYTES,
            token.len()
        );
        return ExitCode::from(EXIT_USAGE);
    }
    println!("{}", hex::encode(crate::auth::hash_token(token)));
    ExitCode::SUCCESS
}
