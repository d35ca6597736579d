//! forge.toml: configs in Forgemax's documented format load without edits; every error names the
//! file, the line and the key.

use std::path::Path;
use std::time::Duration;

use quickforge::{Config, ConfigError};
use quickforge::{Isolation, Transport};

fn env(name: &str) -> Option<String> {
    match name {
        "GITHUB_TOKEN"
        | "SENTRY_AUTH_TOKEN"
        | "SUPABASE_ACCESS_TOKEN"
        | "NOTION_TOKEN"
        | "STRIPE_SECRET_KEY" => Some(format!("value-of-{name}")),
        _ => None,
    }
}

fn parse(text: &str) -> Result<Config, ConfigError> {
    Config::parse_with_env(text, Path::new("/etc/quickforge/forge.toml"), &env)
}

fn error(text: &str) -> String {
    parse(text).expect_err("the config is invalid").to_string()
}

/// A config in Forgemax's format, written here from its documented keys:
/// stdio and SSE servers, `${VAR}` in args, env and headers, and groups.
const FORGEMAX: &str = r#"
[servers.narsil]
command = "narsil-mcp"
args = ["--repos", "./lib"]
transport = "stdio"
timeout_secs = 20

[servers.github]
command = "docker"
args = ["run", "--rm", "-i", "-e", "GITHUB_PERSONAL_ACCESS_TOKEN", "example/github-mcp"]
transport = "stdio"
timeout_secs = 35
env = { GITHUB_PERSONAL_ACCESS_TOKEN = "${GITHUB_TOKEN}" }

[servers.sentry]
command = "npx"
args = ["example-sentry-mcp", "--token", "${SENTRY_AUTH_TOKEN}"]
transport = "stdio"
timeout_secs = 12

[servers.cloudflare]
url = "https://cloud.example.com/sse"
transport = "sse"
timeout_secs = 25

[servers.notion]
command = "npx"
args = ["-y", "example-notion-mcp"]
transport = "stdio"
timeout_secs = 12
env = { NOTION_HEADERS = "{\"Authorization\":\"Bearer ${NOTION_TOKEN}\"}" }

[servers.gh-remote]
url = "https://mcp.github.com/mcp"
transport = "sse"
headers = { Authorization = "Bearer ${GITHUB_TOKEN}" }
description = "GitHub over HTTP"

[sandbox]
timeout_secs = 7
max_heap_mb = 80
max_concurrent = 3
max_tool_calls = 45
execution_mode = "child_process"

[groups.internal]
servers = ["narsil"]
isolation = "strict"

[groups.external]
servers = ["notion", "cloudflare"]
isolation = "strict"

[groups.tools]
servers = ["github", "sentry"]
isolation = "open"
"#;

#[test]
fn forgemax_format_config_loads() {
    let c = parse(FORGEMAX).unwrap();
    let names: Vec<&str> = c.servers.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "cloudflare",
            "gh-remote",
            "github",
            "narsil",
            "notion",
            "sentry"
        ]
    );
    let github = &c.servers[2];
    let Transport::Stdio { command, env, .. } = &github.transport else {
        panic!("stdio")
    };
    assert_eq!(command, "docker");
    assert_eq!(env["GITHUB_PERSONAL_ACCESS_TOKEN"], "value-of-GITHUB_TOKEN");
    assert_eq!(github.timeout, Duration::from_secs(35));
    let Transport::Http { url, headers } = &c.servers[1].transport else {
        panic!("http")
    };
    assert_eq!(url, "https://mcp.github.com/mcp");
    assert_eq!(headers["Authorization"], "Bearer value-of-GITHUB_TOKEN");
    let Transport::Stdio { env, .. } = &c.servers[4].transport else {
        panic!("stdio")
    };
    assert!(env["NOTION_HEADERS"].contains("Bearer value-of-NOTION_TOKEN"));
    assert_eq!(c.groups.len(), 3);
    assert_eq!(c.groups[0].name, "external");
    assert_eq!(c.groups[0].isolation, Isolation::Strict);
    assert_eq!(c.groups[2].isolation, Isolation::Open);
    assert_eq!(c.sandbox.max_tool_calls, 45);
}

#[test]
fn quickforge_keys_parse_with_defaults() {
    let c = parse(
        "[servers.local]\ncommand = \"./server\"\ncwd = \"servers\"\nenv = { A = \"1\" }\ncircuit_breaker = false\nfailure_threshold = 3\nrecovery_timeout_secs = 5\n\n[manifest]\nrefresh_interval_secs = 0\n",
    )
    .unwrap();
    let s = &c.servers[0];
    let Transport::Stdio { cwd, .. } = &s.transport else {
        panic!()
    };
    assert_eq!(
        cwd.as_deref(),
        Some(Path::new("/etc/quickforge/servers")),
        "relative cwd is from the config's folder"
    );
    assert!(!s.circuit_breaker);
    assert_eq!(s.failure_threshold, 3);
    assert_eq!(s.recovery_timeout, Duration::from_secs(5));
    assert_eq!(c.manifest.refresh_interval, None);
    let d = parse("[servers.x]\nurl = \"http://localhost:1/mcp\"\n").unwrap();
    assert_eq!(d.servers[0].timeout, Duration::from_secs(30));
    assert!(d.servers[0].circuit_breaker);
    assert_eq!(d.manifest.refresh_interval, Some(Duration::from_secs(300)));
}

#[test]
fn errors_name_file_line_and_key() {
    let e = error(
        "[servers.a]\ncommand = \"x\"\n\n[servers.b]\ncommand = \"y\"\nargs = [\"--token\", \"${MISSING_TOKEN}\"]\n",
    );
    assert!(e.contains("/etc/quickforge/forge.toml:6"), "{e}");
    assert!(
        e.contains("servers.b.args[1]") && e.contains("MISSING_TOKEN is not set"),
        "{e}"
    );

    let e = error("[servers.a]\ncommand = \"x\"\ncomand = \"y\"\n");
    assert!(
        e.contains("forge.toml") && e.contains("line 3") && e.contains("comand"),
        "{e}"
    );

    let e = error("[servers.a]\ntransport = \"grpc\"\ncommand = \"x\"\n");
    assert!(
        e.contains(":2") && e.contains("servers.a.transport") && e.contains("\"grpc\""),
        "{e}"
    );

    let e = error("[servers.a]\ntransport = \"stdio\"\n");
    assert!(
        e.contains("servers.a.command") && e.contains("needs `command`"),
        "{e}"
    );

    let e = error("[servers.a]\nurl = \"ftp://x\"\n");
    assert!(e.contains("servers.a.url") && e.contains("ftp"), "{e}");

    let e = error("[servers.memory]\ncommand = \"x\"\n\n[groups.g]\nservers = [\"memroy\"]\n");
    assert!(
        e.contains(":5") && e.contains("groups.g.servers") && e.contains("did you mean \"memory\""),
        "{e}"
    );

    let e = error(
        "[servers.a]\ncommand = \"x\"\n[groups.g1]\nservers = [\"a\"]\n[groups.g2]\nservers = [\"a\"]\n",
    );
    assert!(e.contains("already in group \"g1\""), "{e}");

    let e = error("[servers.\"bad name\"]\ncommand = \"x\"\n");
    assert!(
        e.contains("servers.bad name") && e.contains("ASCII letters"),
        "{e}"
    );

    let e = error("[servers.a]\ncommand = \"x\"\nheaders = { X = \"1\" }\n");
    assert!(
        e.contains("servers.a.headers.X") && e.contains("HTTP servers"),
        "{e}"
    );

    let e = error("[servers.a]\ncommand = \"x\"\ntimeout_secs = 0\n");
    assert!(
        e.contains(":3") && e.contains("servers.a.timeout_secs"),
        "{e}"
    );

    let e = error("[sandbox]\n\nmax_concurrent = 0\n");
    assert!(
        e.contains("forge.toml:3") && e.contains("sandbox.max_concurrent"),
        "{e}"
    );

    let e = error("[manifest]\nrefresh = 5\n");
    assert!(e.contains("refresh"), "{e}");

    let e = error("[serverz.a]\ncommand = \"x\"\n");
    assert!(e.contains("serverz") && e.contains("line 1"), "{e}");
}

#[test]
fn a_server_needs_a_command_or_a_url() {
    let e = error("[servers.a]\ndescription = \"nothing to run\"\n");
    assert!(
        e.contains("servers.a") && e.contains("`command`") && e.contains("`url`"),
        "{e}"
    );
    let e = error("[servers.a]\ncommand = \"x\"\nurl = \"http://x\"\n");
    assert!(e.contains("servers.a.url"), "{e}");
}

#[test]
fn the_example_config_documents_every_key_and_loads() {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/forge.toml.example"))
        .unwrap();
    let c = Config::parse_with_env(&text, Path::new("forge.toml.example"), &|_| {
        Some("x".into())
    })
    .unwrap();
    assert!(!c.servers.is_empty());
    for key in [
        "transport",
        "command",
        "args",
        "url",
        "headers",
        "description",
        "timeout_secs",
        "circuit_breaker",
        "failure_threshold",
        "recovery_timeout_secs",
        "env",
        "cwd",
        "refresh_interval_secs",
        "isolation",
        "max_fuel",
        "max_output_size",
        "max_args_size",
        "max_queue_wait_ms",
        "max_log_lines",
        "max_log_bytes",
        "max_keys",
        "max_value_size",
        "max_total_size",
        "default_ttl_secs",
        "max_ttl_secs",
        "max_stashes",
        "max_gateway_size",
        "evict_idle_secs",
        "max_sessions",
        "max_concurrent_per_session",
        "max_in_flight",
        "max_response_mb",
        "allow",
        "deny",
        "allow_destructive",
        "calls_per_minute",
        "max_executions_per_minute",
        "file",
        "stderr",
        "preview_bytes",
        "max_operations",
        "reconnect",
        "max_reconnect_backoff_secs",
        "max_parallel",
        "startup_concurrency",
        "max_resource_size_mb",
        "max_ipc_message_size_mb",
        "max_calls",
        "expose",
        "replica",
        "peers",
        "resource",
        "authorization_servers",
        "rate_limit_scope",
        "subject",
        "sha256",
        "issuer",
        "jwks_uri",
        "audience",
        "algorithms",
        "leeway_secs",
        "jwks_refresh_secs",
        "jwks_max_age_secs",
        "backend",
        "timeout_ms",
        "key_prefix",
        "header_read_timeout_secs",
        "body_read_timeout_secs",
        "max_connections",
    ] {
        assert!(
            text.contains(&format!("{key} =")),
            "forge.toml.example documents {key}"
        );
    }
}

/// `[state]`: a backend that is neither memory nor a Redis URL, a bound
/// out of range and a prefix with odd characters are refused at load with
/// the key and what is allowed, and a password in the URL is never echoed.
#[test]
fn the_state_backend_is_validated_at_load() {
    let ok = |text: &str| {
        Config::parse_with_env(text, Path::new("forge.toml"), &|name| {
            (name == "REDIS_PASSWORD").then(|| "s3cret".to_string())
        })
        .unwrap()
        .state
    };
    assert_eq!(ok(""), quickforge::StateBackend::Memory);
    for url in [
        "redis://127.0.0.1:6379",
        "rediss://redis.internal:6380/2",
        "redis+unix:///run/redis/redis.sock",
        "unix:///run/redis/redis.sock",
        "redis://:${REDIS_PASSWORD}@127.0.0.1:6379",
    ] {
        let backend = ok(&format!("[state]\nbackend = \"{url}\"\n"));
        assert!(
            matches!(backend, quickforge::StateBackend::Redis { .. }),
            "{url}"
        );
        assert!(!format!("{backend:?}").contains("s3cret"), "{backend:?}");
    }
    let e = error("[state]\nbackend = \"postgres://x\"\n");
    assert!(e.contains("state.backend") && e.contains("redis://"), "{e}");
    let e = error("[state]\nbackend = \"redis://:hunter2@[::1\"\n");
    assert!(e.contains("state.backend") && !e.contains("hunter2"), "{e}");
    let e = error("[state]\nbackend = \"redis://x\"\ntimeout_ms = 0\n");
    assert!(e.contains("state.timeout_ms") && e.contains("10000"), "{e}");
    let e = error("[state]\nkey_prefix = \"a b\"\n");
    assert!(e.contains("state.key_prefix"), "{e}");
    let e = error("[state]\nbackend = \"memory\"\ntimeout = 3\n");
    assert!(e.contains("unknown field"), "{e}");
}

#[test]
fn credentials_travel_only_over_https_or_to_loopback() {
    let e = error(
        "[servers.api]\nurl = \"http://api.example.com/mcp\"\nheaders = { Authorization = \"Bearer x\" }\n",
    );
    assert!(
        e.contains(":3")
            && e.contains("servers.api.headers.Authorization")
            && e.contains("clear text to api.example.com")
            && e.contains("https://"),
        "{e}"
    );
    let e = error(
        "[servers.api]\nurl = \"http://10.0.0.8:9000/mcp\"\n[servers.api.headers]\nX-API-Key = \"k\"\n",
    );
    assert!(e.contains("servers.api.headers.X-API-Key"), "{e}");
    let e = error("[servers.api]\nurl = \"http://user:pw@api.example.com/mcp\"\n");
    assert!(
        e.contains("servers.api.url") && e.contains("credentials"),
        "{e}"
    );
    // Over https, to loopback, or without credentials: accepted.
    for ok in [
        "url = \"https://api.example.com/mcp\"\nheaders = { Authorization = \"Bearer x\" }",
        "url = \"http://127.0.0.1:8080/mcp\"\nheaders = { Authorization = \"Bearer x\" }",
        "url = \"http://[::1]:8080/mcp\"\nheaders = { Cookie = \"a=b\" }",
        "url = \"http://localhost:8080/mcp\"\nheaders = { X-Auth-Token = \"t\" }",
        "url = \"http://api.example.com/mcp\"\nheaders = { Accept-Language = \"en\" }",
    ] {
        parse(&format!("[servers.api]\n{ok}\n")).unwrap_or_else(|e| panic!("{ok}: {e}"));
    }
    // Header values cannot smuggle a second header.
    let e = error(
        "[servers.api]\nurl = \"https://api.example.com/mcp\"\nheaders = { X-Trace = \"a\\r\\nX-Evil: 1\" }\n",
    );
    assert!(e.contains("not a valid HTTP header value"), "{e}");
}

#[test]
fn the_audit_section_is_checked_and_its_file_resolved() {
    let c = parse("[audit]\nfile = \"logs/audit.jsonl\"\n").unwrap();
    assert_eq!(
        c.audit.file.as_deref(),
        Some(Path::new("/etc/quickforge/logs/audit.jsonl")),
        "relative to the config file's folder"
    );
    assert!(c.audit.enabled() && !c.audit.stderr);
    assert!(!parse("").unwrap().audit.enabled(), "off by default");
    let e = error("[audit]\nstderr = true\nmax_operations = 0\n");
    assert!(
        e.contains(":3") && e.contains("audit.max_operations") && e.contains("from 1 to 100000"),
        "{e}"
    );
    let e = error("[audit]\npreview_bytes = 1000000\n");
    assert!(
        e.contains("audit.preview_bytes") && e.contains("at most 65536"),
        "{e}"
    );
    let e = error("[audit]\nfile = \"${NOT_SET_ANYWHERE}/a.jsonl\"\n");
    assert!(
        e.contains("audit.file") && e.contains("NOT_SET_ANYWHERE"),
        "{e}"
    );
    let e = error("[audit]\nfile = \"\"\n");
    assert!(
        e.contains("audit.file") && e.contains("must be a path"),
        "{e}"
    );
    let e = error("[audit]\nfiel = \"a.jsonl\"\n");
    assert!(e.contains("fiel"), "unknown keys are errors: {e}");
}

/// The whole-gateway caps (issue 16, item 2) have defaults that fit each
/// other, and settings that cannot work are refused with the key.
#[test]
fn session_and_gateway_stash_caps_are_checked() {
    let c = parse("[sandbox]\nmax_concurrent = 5\n").unwrap();
    assert_eq!(c.sessions.max_concurrent_per_session, 3, "half, rounded up");
    assert_eq!(c.sessions.max_sessions, 64);
    assert!(c.stash.max_gateway_size >= c.stash.max_total_size);
    let c = parse("[sandbox]\nmax_sessions = 2\nmax_concurrent_per_session = 1\n\n[sandbox.stash]\nmax_stashes = 3\nmax_gateway_size = 16777216\nevict_idle_secs = 0\n").unwrap();
    assert_eq!(
        (
            c.sessions.max_sessions,
            c.sessions.max_concurrent_per_session
        ),
        (2, 1)
    );
    assert_eq!((c.stash.max_stashes, c.stash.evict_idle_secs), (3, 0));
    let e = error("[sandbox]\nmax_concurrent = 4\nmax_concurrent_per_session = 5\n");
    assert!(
        e.contains("forge.toml:3")
            && e.contains("sandbox.max_concurrent_per_session")
            && e.contains("from 1 to max_concurrent (4)"),
        "{e}"
    );
    let e = error("[sandbox.stash]\nmax_gateway_size = 1024\n");
    assert!(
        e.contains("sandbox.stash.max_gateway_size") && e.contains("at least stash.max_total_size"),
        "{e}"
    );
    let e = error("[sandbox]\nmax_sessions = 0\n");
    assert!(e.contains("sandbox.max_sessions"), "{e}");
}

/// Issue 19: the approval, sampling, roots and waiting keys parse, have the
/// documented defaults, and bad values are refused with the key named.
#[test]
fn approval_sampling_roots_and_waiting_keys_are_checked() {
    let c = parse("[sandbox]\nmax_concurrent = 6\n").unwrap();
    assert_eq!(c.relay.max_waiting, 3, "half of max_concurrent");
    assert_eq!(c.relay.max_wait.as_secs(), 300);
    let c = parse(
        "[sandbox]\nmax_wait_secs = 60\nmax_waiting = 2\n[servers.a]\ncommand = \"x\"\nallow_destructive = \"ask\"\nconfirm = [\"send_*\"]\nsampling = false\nroots = [\"file:///srv/data\"]\n",
    )
    .unwrap();
    assert_eq!((c.relay.max_wait.as_secs(), c.relay.max_waiting), (60, 2));
    let a = &c.servers[0];
    assert!(!a.sampling);
    assert_eq!(a.roots, ["file:///srv/data"]);
    assert_eq!(a.policy.confirm(), ["send_*"]);

    let e = error("[servers.a]\ncommand = \"x\"\nallow_destructive = \"maybe\"\n");
    assert!(
        e.contains(":3") && e.contains("servers.a.allow_destructive") && e.contains("\"ask\""),
        "{e}"
    );
    let e = error("[servers.a]\ncommand = \"x\"\nconfirm = [\"[\"]\n");
    assert!(e.contains("servers.a.confirm[0]"), "{e}");
    let e = error("[servers.a]\ncommand = \"x\"\nroots = [\"not a uri\"]\n");
    assert!(
        e.contains("servers.a.roots[0]") && e.contains("file:///"),
        "{e}"
    );
    let e = error("[sandbox]\nmax_concurrent = 4\nmax_waiting = 5\n");
    assert!(
        e.contains("sandbox.max_waiting") && e.contains("from 1 to max_concurrent (4)"),
        "{e}"
    );
    let e = error("[sandbox]\nmax_wait_secs = 0\n");
    assert!(e.contains("sandbox.max_wait_secs"), "{e}");
}

/// The task keys: a task's own time limit and when `execute` becomes one.
#[test]
fn task_keys_are_checked() {
    let c = parse("").unwrap();
    assert_eq!(c.tasks.timeout.as_secs(), 900);
    assert_eq!(c.tasks.after.as_millis(), 2000);
    let c = parse("[sandbox]\ntask_timeout_secs = 3600\ntask_after_ms = 0\n").unwrap();
    assert_eq!(
        (c.tasks.timeout.as_secs(), c.tasks.after.as_millis()),
        (3600, 0)
    );
    let e = error("[sandbox]\ntask_timeout_secs = 0\n");
    assert!(
        e.contains("sandbox.task_timeout_secs") && e.contains("from 1 to 86400"),
        "{e}"
    );
    let e = error("[sandbox]\ntask_after_ms = 600001\n");
    assert!(e.contains("sandbox.task_after_ms"), "{e}");
}

/// Issue 21 item 5: `expose` takes "code" (the default), "direct" or tool
/// globs; anything else is refused at its line with the key named.
#[test]
fn expose_is_code_direct_or_globs() {
    let c = parse("[servers.a]\ncommand = \"x\"\n[servers.b]\ncommand = \"x\"\nexpose = \"direct\"\n[servers.c]\ncommand = \"x\"\nexpose = [\"get_*\"]\n[servers.d]\ncommand = \"x\"\nexpose = \"code\"\n").unwrap();
    let by_name = |n: &str| c.servers.iter().find(|s| s.name == n).unwrap();
    assert!(by_name("a").expose.is_none() && by_name("d").expose.is_none());
    assert!(by_name("b").expose.matches("anything"));
    assert!(
        by_name("c").expose.matches("get_issue") && !by_name("c").expose.matches("delete_issue")
    );
    let e = error("[servers.a]\ncommand = \"x\"\nexpose = \"sometimes\"\n");
    assert!(
        e.contains(":3") && e.contains("servers.a.expose") && e.contains("\"direct\""),
        "{e}"
    );
    let e = error("[servers.a]\ncommand = \"x\"\nexpose = [\"[\"]\n");
    assert!(
        e.contains("servers.a.expose") && e.contains("not a valid glob"),
        "{e}"
    );
}

/// Issue 23 item 4: `[cluster]` names this replica and lists every
/// replica's own URL; a peer name that cannot go into a run id, a list
/// that leaves this replica out and a URL that is not http(s) are each
/// refused at their key, saying what to write.
#[test]
fn cluster_names_this_replica_among_its_peers() {
    let c = parse(
        "[cluster]\nreplica = \"r1\"\npeers.r1 = \"http://127.0.0.1:8781/mcp\"\npeers.r2 = \"http://10.0.0.2:8781/mcp\"\n",
    )
    .unwrap();
    assert_eq!(c.cluster.replica, "r1");
    assert_eq!(c.cluster.peers.len(), 2);
    assert_eq!(c.cluster.peers["r2"].as_str(), "http://10.0.0.2:8781/mcp");
    assert!(parse("").unwrap().cluster.peers.is_empty());
    for (toml, key, says) in [
        (
            "[cluster]\nreplica = \"r.1\"\npeers.\"r.1\" = \"http://127.0.0.1:8781/mcp\"\n",
            "cluster.peers",
            "A-Z a-z 0-9 _ -",
        ),
        (
            "[cluster]\nreplica = \"r3\"\npeers.r1 = \"http://127.0.0.1:8781/mcp\"\n",
            "cluster.peers",
            "does not list this replica",
        ),
        (
            "[cluster]\nreplica = \"r1\"\npeers.r1 = \"ftp://127.0.0.1/mcp\"\n",
            "cluster.peers",
            "http(s) /mcp URL",
        ),
    ] {
        let e = error(toml);
        assert!(e.contains(key) && e.contains(says), "{toml}: {e}");
    }
}

/// Issue 23: `[auth]` and `[cluster]` are checked at load like every other
/// table: a bad token hash names its key and line, `[auth]` without a way
/// to check tokens says what to add, a symmetric JWT algorithm is refused,
/// and `[cluster] replica` takes `${VAR}`.
#[test]
fn auth_and_replica_are_checked_at_load() {
    let e = error(
        "[auth]\nresource = \"https://gw.test/mcp\"\n\n[[auth.tokens]]\nsubject = \"alice\"\nsha256 = \"abc\"\n",
    );
    assert!(
        e.contains("forge.toml:4")
            && e.contains("auth.tokens[0].sha256")
            && e.contains("quickforge auth hash-token"),
        "{e}"
    );
    let e = error("[auth]\nresource = \"https://gw.test/mcp\"\n");
    assert!(
        e.contains("[[auth.tokens]]") && e.contains("[auth.jwt]"),
        "{e}"
    );
    let e = error(
        "[auth]\nresource = \"https://gw.test/mcp\"\n[auth.jwt]\nissuer = \"https://id.test\"\njwks_uri = \"https://id.test/jwks\"\nalgorithms = [\"HS256\"]\n",
    );
    assert!(
        e.contains("auth.jwt.algorithms") && e.contains("symmetric"),
        "{e}"
    );
    let c = parse("[cluster]\nreplica = \"gw-${GITHUB_TOKEN}\"\n").unwrap();
    assert_eq!(c.cluster.replica, "gw-value-of-GITHUB_TOKEN");
    let e = error("[cluster]\nreplica = \"\"\n");
    assert!(e.contains("cluster.replica"), "{e}");
}

/// `[http]`: the listeners' limits have their defaults, are read when
/// given, and a zero, a value past the maximum, a negative number, a wrong
/// type or an unknown key is refused at load with the line and the key.
#[test]
fn http_limits_are_checked() {
    let c = parse("").unwrap();
    assert_eq!(c.http.header_read_timeout, Duration::from_secs(10));
    assert_eq!(c.http.body_read_timeout, Duration::from_secs(30));
    assert_eq!(c.http.max_connections, 512);
    let c = parse(
        "[http]\nheader_read_timeout_secs = 2\nbody_read_timeout_secs = 5\nmax_connections = 4\n",
    )
    .unwrap();
    assert_eq!(c.http.header_read_timeout, Duration::from_secs(2));
    assert_eq!(c.http.body_read_timeout, Duration::from_secs(5));
    assert_eq!(c.http.max_connections, 4);

    for (text, expected) in [
        (
            "[http]\nheader_read_timeout_secs = 0\n",
            "invalid config file /etc/quickforge/forge.toml:2: key `http.header_read_timeout_secs`: must be from 1 to 300, got 0",
        ),
        (
            "[http]\nheader_read_timeout_secs = 301\n",
            "invalid config file /etc/quickforge/forge.toml:2: key `http.header_read_timeout_secs`: must be from 1 to 300, got 301",
        ),
        (
            "[http]\n\nbody_read_timeout_secs = 0\n",
            "invalid config file /etc/quickforge/forge.toml:3: key `http.body_read_timeout_secs`: must be from 1 to 3600, got 0",
        ),
        (
            "[http]\nmax_connections = 0\n",
            "invalid config file /etc/quickforge/forge.toml:2: key `http.max_connections`: must be from 1 to 1048576, got 0",
        ),
    ] {
        assert_eq!(error(text), expected);
    }
    for (text, expected) in [
        ("[http]\nmax_connections = -1\n", "-1"),
        ("[http]\nbody_read_timeout_secs = \"30\"\n", "string"),
        ("[http]\nheader_read_timeout_secs = 1.5\n", "float"),
        ("[http]\nmax_conections = 4\n", "max_conections"),
    ] {
        let e = error(text);
        assert!(
            e.starts_with(
                "invalid config file /etc/quickforge/forge.toml: TOML parse error at line 2"
            ) && e.contains(expected),
            "{e}"
        );
    }
}
