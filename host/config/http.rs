//! `[http]`: the limits of the HTTP listeners (`serve --http` and
//! `[observability] listen`) on what one connection may hold, so slow or
//! idle clients cannot keep the gateway's sockets (red team, issue 38 item
//! 7: 300 connections trickling header bytes stayed open indefinitely).
//! The listener that applies them is `cli::listen`.

use std::time::Duration;

use serde::Deserialize;

/// Default `header_read_timeout_secs`. A request's headers are a few
/// hundred bytes to a few KB, which even a lossy mobile link sends in well
/// under a second; 10 s leaves room for that and frees a trickling
/// connection three times sooner than hyper's own 30 s.
pub const DEFAULT_HEADER_READ_SECS: u64 = 10;
/// Default `body_read_timeout_secs`. A body is one JSON-RPC message: a few
/// KB as a rule, at most rmcp's 4 MiB cap, which 30 s carries at about
/// 1 Mbit/s.
pub const DEFAULT_BODY_READ_SECS: u64 = 30;
/// Default `max_connections`. Each connection is a file descriptor, and
/// the usual soft limit of open files is 1024: 512 leaves the other half
/// for the gateway's own (downstream pipes and sockets, the audit file,
/// Redis), and is four times what the default 64 sessions need with a
/// stream and a request open each.
pub const DEFAULT_MAX_CONNECTIONS: usize = 512;
/// Largest `header_read_timeout_secs`: five minutes. No client needs longer
/// to send its headers, and every second more is a second a trickling
/// client holds a connection.
pub const MAX_HEADER_READ_SECS: u64 = 300;
/// Largest `body_read_timeout_secs`: an hour, far past what the largest
/// body needs on any link that can use the gateway at all.
pub const MAX_BODY_READ_SECS: u64 = 3600;
/// Largest `max_connections`: Linux's default ceiling on open files per
/// process (`fs.nr_open`); the process could not hold more.
pub const MAX_CONNECTIONS: u64 = 1_048_576;

/// `[http]`, validated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HttpLimits {
    /// How long a connection may take to deliver a request's headers, from
    /// when the server starts waiting for them; it also ends a kept-alive
    /// connection idle that long between requests.
    pub header_read_timeout: Duration,
    /// How long a request's whole body may take to arrive after its
    /// headers; past it the answer is 408 and the connection closes.
    pub body_read_timeout: Duration,
    /// Connections open at once on each listener; one more is answered 503
    /// and closed at once.
    pub max_connections: usize,
}

impl Default for HttpLimits {
    fn default() -> Self {
        HttpLimits {
            header_read_timeout: Duration::from_secs(DEFAULT_HEADER_READ_SECS),
            body_read_timeout: Duration::from_secs(DEFAULT_BODY_READ_SECS),
            max_connections: DEFAULT_MAX_CONNECTIONS,
        }
    }
}

/// `[http]` as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub(super) struct RawHttp {
    header_read_timeout_secs: u64,
    body_read_timeout_secs: u64,
    max_connections: u64,
}

impl Default for RawHttp {
    fn default() -> Self {
        RawHttp {
            header_read_timeout_secs: DEFAULT_HEADER_READ_SECS,
            body_read_timeout_secs: DEFAULT_BODY_READ_SECS,
            max_connections: DEFAULT_MAX_CONNECTIONS as u64,
        }
    }
}

impl RawHttp {
    /// Checks each bound; on error, the key and why.
    pub(super) fn resolve(self) -> Result<HttpLimits, (&'static str, String)> {
        let check = |key: &'static str, value: u64, max: u64| {
            if (1..=max).contains(&value) {
                Ok(value)
            } else {
                Err((key, format!("must be from 1 to {max}, got {value}")))
            }
        };
        let header = check(
            "header_read_timeout_secs",
            self.header_read_timeout_secs,
            MAX_HEADER_READ_SECS,
        )?;
        let body = check(
            "body_read_timeout_secs",
            self.body_read_timeout_secs,
            MAX_BODY_READ_SECS,
        )?;
        let connections = check("max_connections", self.max_connections, MAX_CONNECTIONS)?;
        Ok(HttpLimits {
            header_read_timeout: Duration::from_secs(header),
            body_read_timeout: Duration::from_secs(body),
            max_connections: connections as usize,
        })
    }
}
