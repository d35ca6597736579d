//! Property tests (issue 16, item 7, "Fuzzing") of config parsing and
//! `${VAR}` expansion: any text, however broken, gives a `Config` or a
//! `ConfigError` that names the file, never a panic; an error names the key
//! at fault; and no error quotes a variable's value (values are credentials:
//! tokens in `env` and `headers`).
//!
//! Why proptest here and not a libFuzzer target: `Config` lives in the
//! gateway crate, which links Wasmtime, so an instrumented build would
//! spend most of CI's fuzzing minutes compiling and instrumenting code
//! that parsing never reaches. What parsing adds to the `toml` crate (which
//! is fuzzed upstream) is the validation of known keys, so byte-level
//! mutation would mostly stop at TOML syntax; these strategies generate
//! documents of the real sections and keys with values of every type and
//! range, and mutate the real example file a character at a time, reaching
//! the validation code on nearly every case. Expansion itself has its own
//! libFuzzer target (`tests/fuzz`, `expand`). Parsing costs microseconds,
//! so the default is 4096 cases; `PROPTEST_CASES` overrides it.

use std::path::Path;

use proptest::prelude::*;
use proptest::test_runner::Config as ProptestConfig;
use quickforge::{Config, ConfigError};

/// What every variable is set to, so that an error quoting a value shows.
const VALUE: &str = "s3cr3t-Value-of-a-Variable";

/// Variables that are set; any other is unset.
const SET: &[&str] = &["TOKEN", "HOME_DIR", "EMPTY"];

fn lookup(name: &str) -> Option<String> {
    match name {
        "EMPTY" => Some(String::new()),
        n if SET.contains(&n) => Some(VALUE.to_string()),
        _ => None,
    }
}

const EXAMPLE: &str = include_str!("../../forge.toml.example");

/// `(section, key)` of every documented key; `*` stands for a server or
/// group name.
const KEYS: &[(&str, &str)] = &[
    ("servers.*", "transport"),
    ("servers.*", "command"),
    ("servers.*", "args"),
    ("servers.*", "url"),
    ("servers.*", "headers"),
    ("servers.*", "env"),
    ("servers.*", "cwd"),
    ("servers.*", "description"),
    ("servers.*", "timeout_secs"),
    ("servers.*", "circuit_breaker"),
    ("servers.*", "failure_threshold"),
    ("servers.*", "recovery_timeout_secs"),
    ("servers.*", "max_in_flight"),
    ("servers.*", "max_response_mb"),
    ("servers.*", "allow"),
    ("servers.*", "deny"),
    ("servers.*", "allow_destructive"),
    ("servers.*", "calls_per_minute"),
    ("groups.*", "servers"),
    ("groups.*", "isolation"),
    ("manifest", "refresh_interval_secs"),
    ("sandbox", "timeout_secs"),
    ("sandbox", "max_fuel"),
    ("sandbox", "max_heap_mb"),
    ("sandbox", "max_code_size"),
    ("sandbox", "max_output_size"),
    ("sandbox", "max_tool_calls"),
    ("sandbox", "max_args_size"),
    ("sandbox", "max_concurrent"),
    ("sandbox", "max_executions_per_minute"),
    ("sandbox", "max_queue_wait_ms"),
    ("sandbox", "max_log_lines"),
    ("sandbox", "max_log_bytes"),
    ("sandbox", "validate"),
    ("sandbox", "cache_dir"),
    ("sandbox", "execution_mode"),
    ("sandbox", "max_parallel"),
    ("sandbox", "startup_concurrency"),
    ("sandbox", "max_resource_size_mb"),
    ("sandbox", "max_ipc_message_size_mb"),
    ("sandbox.pool", "max_workers"),
    ("sandbox.stash", "max_value_size_mb"),
    ("sandbox.stash", "max_total_size_mb"),
    ("sandbox.stash", "max_calls"),
    ("servers.*", "reconnect"),
    ("servers.*", "max_reconnect_backoff_secs"),
    ("sandbox.stash", "max_keys"),
    ("sandbox.stash", "max_value_size"),
    ("sandbox.stash", "max_total_size"),
    ("sandbox.stash", "default_ttl_secs"),
    ("sandbox.stash", "max_ttl_secs"),
    ("audit", "file"),
    ("audit", "stderr"),
    ("audit", "preview_bytes"),
    ("audit", "max_operations"),
];

/// Strings that mean something to the parser: `${...}` references (set,
/// unset, empty, malformed, with fallbacks), enum words, URLs and paths.
fn string() -> impl Strategy<Value = String> {
    let word = proptest::sample::select(
        &[
            "${TOKEN}",
            "${HOME_DIR}/x",
            "${EMPTY:-fallback}",
            "${UNSET}",
            "${UNSET:-}",
            "${",
            "${1BAD}",
            "$$",
            "$",
            "Bearer ${TOKEN}",
            "stdio",
            "sse",
            "http",
            "strict",
            "shared",
            "child_process",
            "in_process",
            "npx",
            "https://",
            "http://127.0.0.1:1/mcp",
            "ftp://host",
            "/tmp",
            ".",
            "..",
            "a",
            "memory",
            "everything",
            " ",
            "\n",
            "\0",
            "é",
            "\u{202e}",
        ][..],
    );
    proptest::collection::vec(word, 0..4).prop_map(|w| w.concat())
}

fn value() -> impl Strategy<Value = toml::Value> {
    let leaf = prop_oneof![
        string().prop_map(toml::Value::String),
        any::<bool>().prop_map(toml::Value::Boolean),
        prop_oneof![
            any::<i64>(),
            -2i64..70_000,
            proptest::sample::select(&[0i64, 1, -1, 4096, 4097, i64::MAX, i64::MIN][..]),
        ]
        .prop_map(toml::Value::Integer),
        prop_oneof![
            any::<f64>(),
            proptest::sample::select(
                &[0.0, -0.0, 0.001, 600.0, 600.1, f64::NAN, f64::INFINITY][..]
            ),
        ]
        .prop_map(toml::Value::Float),
    ];
    leaf.prop_recursive(2, 12, 4, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(toml::Value::Array),
            proptest::collection::vec((string(), inner), 0..4)
                .prop_map(|kv| toml::Value::Table(kv.into_iter().collect())),
        ]
    })
}

/// A document: some of the documented keys, under one or two server and
/// group names, with values of any type.
fn document() -> impl Strategy<Value = String> {
    let name = proptest::sample::select(&["memory", "everything", "bad name", "", "a.b"][..]);
    let entry = (proptest::sample::select(KEYS), name, value());
    proptest::collection::vec(entry, 0..12).prop_map(|entries| {
        let mut doc = toml::Table::new();
        for ((section, key), name, value) in entries {
            let mut table = &mut doc;
            for part in section.split('.') {
                let part = if part == "*" { name } else { part };
                let slot = table
                    .entry(part.to_string())
                    .or_insert_with(|| toml::Value::Table(toml::Table::new()));
                if !slot.is_table() {
                    *slot = toml::Value::Table(toml::Table::new());
                }
                table = slot.as_table_mut().unwrap();
            }
            table.insert(key.to_string(), value);
        }
        toml::to_string(&doc).unwrap_or_default()
    })
}

/// The example file with a few characters deleted, replaced or inserted.
fn mutated_example() -> impl Strategy<Value = String> {
    let edit = (
        0..EXAMPLE.len(),
        0u8..3,
        proptest::sample::select(
            &[
                '"', '[', ']', '=', '\n', '#', '0', '-', '$', '{', '}', ' ', 'x',
            ][..],
        ),
    );
    proptest::collection::vec(edit, 1..6).prop_map(|edits| {
        let mut text: Vec<char> = EXAMPLE.chars().collect();
        for (at, op, c) in edits {
            let at = at % (text.len() + 1);
            match op {
                0 if at < text.len() => {
                    text.remove(at);
                }
                1 if at < text.len() => text[at] = c,
                _ => text.insert(at, c),
            }
        }
        // Uncomment the commented-out keys too, so they are reached.
        text.into_iter().collect::<String>().replace("\n# ", "\n")
    })
}

fn cases(default: u32) -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Parses `text` and checks the properties of the outcome.
fn check(text: &str) -> Result<(), TestCaseError> {
    let path = Path::new("/etc/quickforge/forge.toml");
    let Err(e) = Config::parse_with_env(text, path, &lookup) else {
        return Ok(());
    };
    let message = e.to_string();
    prop_assert!(message.contains("/etc/quickforge/forge.toml"), "{message}");
    prop_assert!(
        !message.contains(VALUE),
        "a variable's value in {message:?}"
    );
    if let ConfigError::Invalid { key, line, .. } = &e {
        prop_assert!(!key.is_empty(), "{message}");
        if let Some(line) = line {
            prop_assert!(
                *line >= 1 && *line <= text.lines().count().max(1),
                "{message}"
            );
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: cases(4096),
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    /// Any document of the real keys, with values of any type and range,
    /// parses or fails with an error that names the file and the key,
    /// without panicking or quoting a variable's value.
    #[test]
    fn any_document_of_known_keys_parses_or_names_its_error(text in document()) {
        check(&text)?;
    }

    /// The example file, broken a few characters at a time, likewise.
    #[test]
    fn a_broken_example_parses_or_names_its_error(text in mutated_example()) {
        check(&text)?;
    }
}
