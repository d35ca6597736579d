//! Redaction against its fixture files (`tests/redact/*.toml`), and its properties.

use proptest::prelude::*;
use quickforge_filters::redact::{is_sensitive_key, redact, redact_clip, redact_json, rule_stats};
use serde::Deserialize;
use serde_json::{Value, json};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Case {
    input: String,
    expected: Option<String>,
    marker: Option<String>,
    #[serde(default)]
    gone: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Fixture {
    case: Vec<Case>,
}

/// Every case of every fixture file: the exact output (or the marker and what must be
/// gone), the `changed` flag, and that the output is a fixed point.
#[test]
fn fixtures() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/redact");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("the fixture directory")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    files.sort();
    assert!(files.len() >= 5, "fixture files missing in {dir:?}");
    let mut failures = Vec::new();
    let mut count = 0;
    for file in &files {
        let text = std::fs::read_to_string(file).expect("a fixture file");
        let fixture: Fixture =
            toml::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        for case in fixture.case {
            count += 1;
            let name = file.file_name().unwrap_or_default().to_string_lossy();
            let r = redact(&case.input);
            if let Some(marker) = &case.marker {
                if !r.text.contains(marker.as_str()) {
                    failures.push(format!(
                        "{name}: {marker} missing\n  input:  {:?}\n  output: {:?}",
                        case.input, r.text
                    ));
                }
                for g in &case.gone {
                    if r.text.contains(g.as_str()) {
                        failures.push(format!(
                            "{name}: {g:?} left\n  input:  {:?}\n  output: {:?}",
                            case.input, r.text
                        ));
                    }
                }
            } else {
                let expected = case.expected.as_deref().unwrap_or(&case.input);
                if r.text != expected {
                    failures.push(format!(
                        "{name}:\n  input:    {:?}\n  expected: {expected:?}\n  got:      {:?}",
                        case.input, r.text
                    ));
                }
                if r.changed != (expected != case.input) {
                    failures.push(format!("{name}: wrong changed flag for {:?}", case.input));
                }
            }
            let again = redact(&r.text);
            if again.changed {
                failures.push(format!(
                    "{name}: not a fixed point\n  input: {:?}\n  once:  {:?}\n  twice: {:?}",
                    case.input, r.text, again.text
                ));
            }
        }
    }
    assert!(count > 150, "only {count} cases");
    assert!(
        failures.is_empty(),
        "{} of {count} cases failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// The vendored gitleaks rules compile in Rust's regex dialect, but for a few; the
/// count is bounded so that an update of the file that breaks many is noticed.
#[test]
fn rules_compile_but_a_few() {
    let stats = rule_stats();
    println!("rules loaded: {}", stats.loaded);
    for (id, e) in &stats.not_compiled {
        println!(
            "not compiled: {id}: {}",
            e.lines().last().unwrap_or_default()
        );
    }
    println!("left out: {:?}", stats.left_out);
    assert!(stats.loaded >= 200, "{} rules loaded", stats.loaded);
    assert!(stats.not_compiled.len() <= 5, "{:?}", stats.not_compiled);
    assert!(stats.left_out.contains(&"generic-api-key".to_string()));
}

/// Issue 16, item 4: the text is cut to its limit only after redaction, so a secret
/// straddling the limit is not left half visible (cut first, `ghp_16C7e42F292c69…`
/// kept 16 of its 40 characters, in a shape no rule knows any more).
#[test]
fn secret_straddling_the_limit_is_redacted_before_the_cut() {
    let secret = "ghp_16C7e42F292c6912E7710c838347Ae178B4a";
    for pad in 0..secret.len() {
        let text = format!(
            "{}{secret} rejected {}",
            "x".repeat(100 - pad),
            "y".repeat(200)
        );
        let out = redact_clip(&text, 100);
        assert!(!out.contains("ghp_"), "{out:?}");
        assert!(!out.contains("16C7e42F"), "{out:?}");
        assert!(out.contains("more bytes cut"), "{out:?}");
        // the cut never splits a marker either
        assert!(
            !out.contains("[REDACTED:ke…") && !out.contains("[REDA…"),
            "{out:?}"
        );
    }
    assert_eq!(redact_clip("short", 100), "short");
}

/// A text a few KiB long, as servers send them, redacts within a bound (a rough
/// guard against a rule that makes every error expensive; the lead keeps benches).
#[test]
fn a_typical_error_is_quick() {
    let sample = "Error: ENOENT: no such file or directory, open '/home/app/.config/secret.json'\n    at Object.openSync (node:fs:573:3)\n\
        connection to server at \"10.1.2.3\", port 5432 failed: FATAL: password authentication failed for user \"app\"\n\
        error sending request for url (https://api.example.com/v1/items?api_key=sk-proj-Abc123Def456Ghi789Jkl012)\n\
        tool \"github.create_issue\" not found; did you mean \"github.create_issues\"? took 1.5 s, max_tokens must be <= 4096\n";
    let mut text = String::new();
    while text.len() < 4096 {
        text.push_str(sample);
    }
    let _ = redact(&text); // compile the rules once
    let start = std::time::Instant::now();
    let runs = 50;
    for _ in 0..runs {
        let r = redact(&text);
        assert!(!r.text.contains("sk-proj"));
    }
    let each = start.elapsed() / runs;
    println!("redact: {} bytes in {each:?}", text.len());
    assert!(each < std::time::Duration::from_millis(50), "{each:?}");
}

/// Inputs of any bytes and of secret-like fragments must not panic, and much
/// (a megabyte) must finish.
#[test]
fn hostile_and_large_inputs_finish() {
    let inputs: Vec<String> = vec![
        "\u{0}\u{FFFF}é🙂://@[]:::/\\\\".into(),
        ":".repeat(64),
        "[[[[[[]]]]]]://x".into(),
        "https://[::1".into(),
        "https://@".into(),
        "a:".repeat(1000),
        "/".repeat(5000),
        "a/".repeat(5000),
        "é/ü/ß.txt /é/ü/ß.txt ~/é".into(),
        "-----BEGIN X-----".into(),
        "Caused by:".into(),
        "eyJ.eyJ.".into(),
        "Basic ====".into(),
        "1.1.1.1.1.1.1.1.1.1".into(),
        "0x".into(),
        "C:".into(),
        "\\\\".into(),
        "%".repeat(999),
        "%25".repeat(999),
        "\\u00".repeat(999),
        "&#".repeat(999),
        "&amp;".repeat(999),
        "Ab1 ".repeat(3000),
        "zoo ".repeat(3000),
    ];
    for i in &inputs {
        let r = redact(i);
        assert_eq!(redact(&r.text).text, r.text, "not idempotent for {i:?}");
    }
    let big = "connect 10.1.2.3 with token=abc and ghp_16C7e42F292c6912E7710c838347Ae178B4a; the quick brown fox 12:30:00 é\n".repeat(10_000);
    let start = std::time::Instant::now();
    let r = redact(&big);
    println!("redact: {} bytes in {:?}", big.len(), start.elapsed());
    assert!(!r.text.contains("ghp_"));
}

/// Which field names are sensitive, and which are not (pagination tokens, counts,
/// public keys).
#[test]
fn sensitive_keys() {
    for k in [
        "password",
        "Password",
        "passwd",
        "pwd",
        "db_password",
        "PGPASSWORD",
        "passwordHash",
        "secret",
        "client_secret",
        "clientSecret",
        "aws_secret_access_key",
        "private_key",
        "privateKey",
        "PRIVATE-KEY",
        "api_key",
        "apiKey",
        "APIKey",
        "x-api-key",
        "apikey",
        "access_token",
        "accessToken",
        "refresh_token",
        "auth_token",
        "id_token",
        "session_token",
        "token",
        "csrftoken",
        "x-auth-token",
        "token_value",
        "authorization",
        "Proxy-Authorization",
        "cookie",
        "Set-Cookie",
        "credentials",
        "credential",
        "mnemonic",
        "seed_phrase",
        "seedPhrase",
        "recovery_phrase",
        "passphrase",
        "ssn",
        "card_number",
        "cardNumber",
        "credit_card",
        "cvv",
        "auth",
        "basic_auth",
        "DB_PASS",
        "signing_key",
        "webhook_secret",
    ] {
        assert!(is_sensitive_key(k), "{k} should be sensitive");
    }
    for k in [
        "token_count",
        "max_tokens",
        "tokens_used",
        "tokens",
        "token_type",
        "tokenizer",
        "next_token",
        "NextToken",
        "page_token",
        "eos_token",
        "keyboard",
        "monkey",
        "secretary",
        "secret_name",
        "key",
        "key_name",
        "public_key",
        "private_key_id",
        "primary_key",
        "cookie_domain",
        "seed",
        "author",
        "authority",
        "authorization_url",
        "passwordless",
        "session_id",
        "name",
        "repo",
        "",
        "___",
    ] {
        assert!(!is_sensitive_key(k), "{k} should not be sensitive");
    }
}

/// JSON error payloads (a JSON-RPC error's `data`, a structured error result):
/// sensitive fields go whatever their value, strings are redacted as text.
#[test]
fn json_nested_objects_and_arrays() {
    let mut v = json!({
        "error": {
            "message": "request to https://api.example.com/v1/x?key=1 failed",
            "details": [
                {"password": "hunter2", "user": "bob"},
                {"headers": {"Authorization": "Bearer abc", "Set-Cookie": ["a=1", "b=2"]}},
                {"clientSecret": {"value": "s", "rotated": true}},
                {"privateKey": "-----BEGIN PRIVATE KEY-----\nMIIB\n-----END PRIVATE KEY-----"}
            ],
            "token_count": 1234,
            "max_tokens": 4096,
            "keyboard": "qwerty",
            "access_token": 12345,
            "refresh_token": null,
            "mnemonic_note": "abandon ability able about above absent absorb abstract absurd abuse access accident"
        }
    });
    assert!(redact_json(&mut v));
    assert_eq!(
        v,
        json!({
            "error": {
                "message": "request to https://api.example.com/[REDACTED:url] failed",
                "details": [
                    {"password": "[REDACTED]", "user": "bob"},
                    {"headers": {"Authorization": "[REDACTED]", "Set-Cookie": "[REDACTED]"}},
                    {"clientSecret": "[REDACTED]"},
                    {"privateKey": "[REDACTED]"}
                ],
                "token_count": 1234,
                "max_tokens": 4096,
                "keyboard": "qwerty",
                "access_token": "[REDACTED]",
                "refresh_token": null,
                "mnemonic_note": "[REDACTED:mnemonic]"
            }
        })
    );
    // idempotent
    let snapshot = v.clone();
    assert!(!redact_json(&mut v));
    assert_eq!(v, snapshot);
}

/// Redacted keys keep their order; mnemonic arrays go whole.
#[test]
fn json_keys_order_and_mnemonic_arrays() {
    let mut v = json!({
        "z": 1,
        "/home/bob/.netrc": "x",
        "a": ["legal","winner","thank","year","wave","sausage","worth","useful","legal","winner","thank","yellow"],
        "b": ["only", "three", "words"]
    });
    assert!(redact_json(&mut v));
    let keys: Vec<&String> = v
        .as_object()
        .map(|m| m.keys().collect())
        .unwrap_or_default();
    assert_eq!(keys, ["z", "[REDACTED:path]", "a", "b"]);
    assert_eq!(v["a"], json!("[REDACTED:mnemonic]"));
    assert_eq!(v["b"], json!(["only", "three", "words"]));

    let mut clean =
        json!({"message": "tool \"x\" not found", "code": -32601, "data": {"max_tokens": 10}});
    assert!(!redact_json(&mut clean));

    let mut s = json!("Bearer abcdEF12ghIJ34kl");
    assert!(redact_json(&mut s));
    assert_eq!(s, json!("Bearer [REDACTED:token]"));
}

/// A deep value does not overflow the stack.
#[test]
fn deep_json_does_not_overflow() {
    let mut v = json!("secret");
    for _ in 0..100_000 {
        v = Value::Array(vec![v]);
    }
    assert!(!redact_json(&mut v));
    // dropping a very deep Value recurses inside serde_json; unwind it by hand
    let mut cur = v;
    while let Value::Array(mut items) = cur {
        cur = items.pop().unwrap_or(Value::Null);
    }
}

/// Secrets the property tests hide in text.
const SECRETS: &[&str] = &[
    "ghp_16C7e42F292c6912E7710c838347Ae178B4a",
    "AKIAIOSFODNN7EXAMPLE",
    "shpat_0123456789abcdef0123456789abcdef",
    "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
    "GOCSPX-AbCdEfGhIjKlMnOpQrStUvWx1234",
    "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",
];

/// Separators and neighbours the property tests put around secrets.
const NEIGHBOURS: &[&str] = &[
    " ", "\n", ": ", "=", "\"", "'", "(", ")", ", ", "; ", " error ", " token ", " at ", "/", "[",
    "]", " é ", "🙂", "\t",
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Issue 16, items 4 and 7: redaction is idempotent on any text.
    #[test]
    fn idempotent_on_any_text(text in "\\PC{0,300}") {
        let once = redact(&text);
        let twice = redact(&once.text);
        prop_assert_eq!(&twice.text, &once.text);
        prop_assert!(!twice.changed);
    }

    /// Idempotent on texts built from the material rules look at: markers, secrets,
    /// encodings, separators.
    #[test]
    fn idempotent_on_secret_material(parts in proptest::collection::vec(
        prop_oneof![
            proptest::sample::select(SECRETS).prop_map(str::to_string),
            proptest::sample::select(NEIGHBOURS).prop_map(str::to_string),
            Just("[REDACTED:key]".to_string()),
            Just("%3D".to_string()),
            Just("\\u0041".to_string()),
            Just("&amp;".to_string()),
            Just("https://h.example/a?b=1".to_string()),
            Just("10.0.0.1".to_string()),
            "[a-zA-Z0-9_]{1,12}",
        ], 0..16)) {
        let text = parts.concat();
        let once = redact(&text);
        let twice = redact(&once.text);
        prop_assert_eq!(&twice.text, &once.text, "input {:?}", text);
    }

    /// Issue 16, item 4: no secret of the input survives in the output, whatever stands
    /// around it (the output is never longer-lived than the input).
    #[test]
    fn no_secret_survives(
        before in proptest::sample::select(NEIGHBOURS),
        secret in proptest::sample::select(SECRETS),
        after in proptest::sample::select(NEIGHBOURS),
        prose in "[a-z ]{0,40}",
    ) {
        let text = format!("{prose}{before}{secret}{after}{prose}");
        let out = redact(&text).text;
        prop_assert!(!out.contains(secret), "{:?} -> {:?}", text, out);
        // nor a long piece of it
        let piece = &secret[4..20];
        prop_assert!(!out.contains(piece), "{:?} -> {:?}", text, out);
    }
}
