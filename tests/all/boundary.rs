//! Property tests (issue 16, item 7, "Fuzzing") of the two places untrusted
//! data crosses the WIT boundary: every host import's answer as the guest
//! sees it, and the guest's JSON encoder (`guest/src/json.rs`) on the way
//! back.
//!
//! Why proptest in the real sandbox and not a libFuzzer target: both ends
//! live in the gateway crate and the guest component, so an instrumented
//! build would instrument Wasmtime and Cranelift (most of the build, none of
//! the code under test) and could not see inside the guest, which runs
//! as Wasm: coverage feedback would guide nothing. What varies is data, not
//! code paths: an import's answer is JSON text that the host writes from a
//! `serde_json::Value` (a server cannot put malformed text there), plus the
//! fields of a `forge-error`. Generating those values directly (any
//! Unicode, the keys JavaScript treats specially, numbers at the edges of
//! exactness, nesting, errors with any code, message and suggestion) reaches
//! every shape the boundary can carry, and each case runs the real guest in
//! the real sandbox. `PROPTEST_CASES` raises the case count (256 by default).

use std::sync::{Arc, LazyLock};

use proptest::prelude::*;
use proptest::test_runner::Config;
use quickforge::{
    BoxFuture, ErrorKind, ExecutionContext, ForgeError, ManifestView, Mode, Query, Report, Route,
    SendRequest, Servers, Stash, Target,
};
use serde_json::{Map, Value, json};

use crate::support::{Kind, run_with};

/// One answer of a downstream server.
#[derive(Debug, Clone)]
enum Answer {
    /// A result.
    Value(Value),
    /// A failure, as a server (or the gateway on its behalf) reports it.
    Error {
        code: String,
        message: String,
        retryable: bool,
        suggestion: Option<String>,
    },
}

impl Answer {
    fn get(&self) -> Result<Value, ForgeError> {
        match self {
            Answer::Value(v) => Ok(v.clone()),
            Answer::Error {
                code,
                message,
                retryable,
                suggestion,
            } => {
                let mut e = ForgeError::new(code.as_str(), message.as_str());
                e.retryable = *retryable;
                e.suggestion = suggestion.clone();
                Err(e)
            }
        }
    }
}

/// Every answer the servers and the manifest give in one execution.
#[derive(Debug, Clone)]
struct Plan {
    /// Tool `t<i>`'s answer.
    tools: Vec<Answer>,
    /// Resource `r<i>`'s answer.
    resources: Vec<Answer>,
    /// `manifest.servers`, `manifest.search(...)`, `manifest.tool(...)`.
    servers: Value,
    search: Value,
    tool: Answer,
}

/// Downstream servers and a manifest that answer from a [`Plan`].
struct Planned(Plan);

impl Servers for Planned {
    fn route(&self, target: Target<'_>) -> Result<Route, ForgeError> {
        let (list, name) = match &target {
            Target::Tool { tool, .. } => (&self.0.tools, tool.strip_prefix('t')),
            Target::Resource { uri, .. } => (&self.0.resources, uri.strip_prefix('r')),
        };
        let answer = name
            .and_then(|i| i.parse::<usize>().ok())
            .and_then(|i| list.get(i))
            .cloned()
            .ok_or_else(|| ForgeError::new("TOOL_NOT_FOUND", format!("{target:?}")))?;
        let send: SendRequest =
            Box::new(move || -> BoxFuture<_> { Box::pin(async move { answer.get() }) });
        Ok(Route::To { guards: None, send })
    }
}

impl ManifestView for Planned {
    fn servers(&self) -> Value {
        self.0.servers.clone()
    }

    fn search(&self, _query: &Query, _limit: usize, _visible: &dyn Fn(&str) -> bool) -> Value {
        self.0.search.clone()
    }

    fn tool(&self, _server: &str, _name: &str) -> Result<Value, ForgeError> {
        self.0.tool.get()
    }
}

/// Characters that are special somewhere on the way: JSON escapes, the NUL
/// QuickJS's C parser stops at, ESC, the separators JavaScript once treated
/// as line ends, the BOM, surrogate neighbours and the last code point.
const SPECIAL: &[char] = &[
    '\0',
    '\u{1}',
    '\u{1b}',
    '\u{1f}',
    '\u{7f}',
    '"',
    '\\',
    '/',
    '\n',
    '\r',
    '\t',
    '\u{2028}',
    '\u{2029}',
    '\u{feff}',
    '\u{d7ff}',
    '\u{e000}',
    '\u{fffd}',
    '\u{ffff}',
    '\u{10ffff}',
    'é',
    '😀',
];

fn text() -> impl Strategy<Value = String> {
    let c = prop_oneof![3 => any::<char>(), 1 => proptest::sample::select(SPECIAL)];
    proptest::collection::vec(c, 0..24).prop_map(String::from_iter)
}

/// Object keys: any text, and the names JavaScript objects treat specially
/// (the prototype setter, `toJSON`, array-index-like keys, which objects
/// enumerate first).
fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => text(),
        1 => proptest::sample::select(&[
            "__proto__", "constructor", "toJSON", "then", "0", "1", "-1", "4294967295",
            "1e3", "", "length",
        ][..])
        .prop_map(String::from),
    ]
}

/// Numbers JavaScript holds exactly or nearly: integers within ±2^53, and any
/// finite double (compared to a few units in the last place, as serde_json
/// parses decimal text without its `float_roundtrip` feature).
fn number() -> impl Strategy<Value = Value> {
    const EXACT: i64 = 1 << 53;
    prop_oneof![
        (-EXACT..=EXACT).prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        proptest::sample::select(&[0.0, -0.0, 5e-324, 1e21, 1e-7, 0.1, f64::MAX, f64::MIN][..])
            .prop_map(Value::from),
    ]
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        number(),
        text().prop_map(Value::String),
    ];
    leaf.prop_recursive(5, 48, 6, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            proptest::collection::vec((key(), inner), 0..6)
                .prop_map(|kv| Value::Object(kv.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

/// A stash key: 1 to 32 of the characters the stash allows.
fn stash_key() -> impl Strategy<Value = String> {
    const ALLOWED: &str = "ABCXYZabcxyz0189_-.:/";
    let c = proptest::sample::select(ALLOWED.chars().collect::<Vec<_>>());
    proptest::collection::vec(c, 1..32).prop_map(String::from_iter)
}

fn answer() -> impl Strategy<Value = Answer> {
    prop_oneof![
        2 => json_value().prop_map(Answer::Value),
        1 => (
            prop_oneof![
                proptest::sample::select(&["TOOL_ERROR", "SERVER_UNAVAILABLE", "TIMEOUT"][..])
                    .prop_map(String::from),
                text(),
            ],
            text(),
            any::<bool>(),
            proptest::option::of(text()),
        )
            .prop_map(|(code, message, retryable, suggestion)| Answer::Error {
                code,
                message,
                retryable,
                suggestion,
            }),
    ]
}

fn plan() -> impl Strategy<Value = Plan> {
    (
        proptest::collection::vec(answer(), 1..5),
        proptest::collection::vec(answer(), 0..3),
        json_value(),
        json_value(),
        answer(),
    )
        .prop_map(|(tools, resources, servers, search, tool)| Plan {
            tools,
            resources,
            servers,
            search,
            tool,
        })
}

/// Whether two values are the same JSON data: numbers within a few units
/// in the last place (JavaScript has one number type, so `3.0` comes back
/// as `3`), objects whatever their key order (JavaScript enumerates
/// index-like keys first).
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            let (x, y) = (x.as_f64().unwrap(), y.as_f64().unwrap());
            x == y || (x - y).abs() <= 4.0 * f64::EPSILON * x.abs().max(y.abs())
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same(x, y))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
        }
        _ => a == b,
    }
}

/// What the script must have seen for `answer`: the value, or the error's
/// code, message (redacted exactly once, at the boundary), retryable flag
/// and suggestion.
fn expected(answer: &Answer) -> Value {
    match answer {
        Answer::Value(v) => json!({ "ok": v }),
        Answer::Error {
            code,
            message,
            retryable,
            suggestion,
        } => json!({ "err": [
            code,
            quickforge_filters::redact::redact(message).text,
            retryable,
            suggestion,
        ] }),
    }
}

fn runtime() -> &'static tokio::runtime::Runtime {
    static RT: LazyLock<tokio::runtime::Runtime> =
        LazyLock::new(|| tokio::runtime::Runtime::new().unwrap());
    &RT
}

fn execute(code: &str, plan: Plan) -> Report {
    let planned = Arc::new(Planned(plan));
    let cx = ExecutionContext {
        servers: planned.clone(),
        manifest: planned,
        stash: Arc::new(Stash::default()),
        audit: None,
        ..ExecutionContext::default()
    };
    runtime().block_on(run_with(Kind::Default, Mode::Execute, code, cx))
}

/// The script: every tool at once, every resource in turn, the three
/// manifest queries, each answer recorded as `{ok}` or `{err: [code,
/// message, retryable, suggestion]}`; with `rethrow`, the first error is
/// left uncaught.
fn script(plan: &Plan, rethrow: bool) -> String {
    format!(
        "async () => {{
          const settle = async (f) => {{
            try {{ return {{ ok: await f() }}; }}
            catch (e) {{ if ({rethrow}) throw e; return {{ err: [e.code, e.message, e.retryable, e.suggestion] }}; }}
          }};
          const tools = await Promise.all(Array.from({{ length: {tools} }},
            (_, i) => settle(() => forge.callTool('planned', 't' + i, {{ i }}))));
          const resources = [];
          for (let i = 0; i < {resources}; i++)
            resources.push(await settle(() => forge.readResource('planned', 'r' + i)));
          const servers = await settle(() => manifest.servers);
          const search = await settle(() => manifest.search('q'));
          const tool = await settle(() => manifest.tool('planned', 't0'));
          return {{ tools, resources, servers, search, tool }};
        }}",
        tools = plan.tools.len(),
        resources = plan.resources.len(),
    )
}

proptest! {
    #![proptest_config(Config { failure_persistence: None, ..Config::default() })]

    /// Any answer of any import reaches the script intact (values as sent,
    /// errors with their code, suggestion and redacted message), the host
    /// never panics, and every execution ends with a classified verdict:
    /// a value, or, when the script lets an error through, `thrown`.
    #[test]
    fn every_import_answer_reaches_the_script_intact(plan in plan(), rethrow in any::<bool>()) {
        let report = execute(&script(&plan, rethrow), plan.clone());
        let errors = plan.tools.iter().chain(&plan.resources).chain([&plan.tool])
            .any(|a| matches!(a, Answer::Error { .. }));
        match &report.result {
            Ok(got) => {
                prop_assert!(!(rethrow && errors), "an error went uncaught, yet: {got}");
                let want = json!({
                    "tools": plan.tools.iter().map(expected).collect::<Vec<_>>(),
                    "resources": plan.resources.iter().map(expected).collect::<Vec<_>>(),
                    "servers": { "ok": plan.servers },
                    "search": { "ok": plan.search },
                    "tool": expected(&plan.tool),
                });
                prop_assert!(same(got, &want), "got {got}\nwant {want}");
            }
            Err(e) => {
                prop_assert!(rethrow && errors, "unexpected failure {e:?}");
                prop_assert_eq!(e.kind, ErrorKind::Thrown, "{:?}", e);
                prop_assert!(!e.message.is_empty());
            }
        }
    }

    /// The guest's encoder writes what `JSON.stringify` writes and what
    /// serde_json reads back as the same data: a value from the host comes
    /// back unchanged as the execution's result (the fast encoder), as tool
    /// arguments (the same encoder, on the call path) and through
    /// `JSON.stringify`, and the stash keeps it unchanged under any key.
    #[test]
    fn the_guest_encoder_round_trips_any_json(value in json_value(), stash_key in stash_key()) {
        let plan = Plan {
            tools: vec![Answer::Value(value.clone())],
            resources: vec![],
            servers: Value::Null,
            search: Value::Null,
            tool: Answer::Value(Value::Null),
        };
        let echo = Arc::new(std::sync::Mutex::new(None));
        let key = serde_json::to_string(&stash_key).unwrap();
        let code = format!(
            "async () => {{
              const v = await forge.callTool('planned', 't0', {{}});
              await forge.callTool('echo', 'args', {{ v }});
              await forge.stash.put({key}, v);
              return [v, JSON.stringify(v), await forge.stash.get({key})];
            }}"
        );
        let cx = ExecutionContext {
            servers: Arc::new(Echo(Planned(plan.clone()), echo.clone())),
            manifest: Arc::new(Planned(plan)),
            stash: Arc::new(Stash::default()),
            audit: None,
            ..ExecutionContext::default()
        };
        let report = runtime().block_on(run_with(Kind::Default, Mode::Execute, &code, cx));
        let got = match &report.result {
            Ok(got) => got,
            Err(e) => return Err(TestCaseError::fail(format!("{e:?} for {value}"))),
        };
        prop_assert!(same(&got[0], &value), "result {} for {value}", got[0]);
        let text = got[1].as_str().unwrap();
        let parsed: Value = serde_json::from_str(text).unwrap();
        prop_assert!(same(&parsed, &value), "JSON.stringify gave {text} for {value}");
        let args = echo.lock().unwrap().take().unwrap();
        prop_assert!(same(&args, &json!({ "v": value })), "arguments {args} for {value}");
        prop_assert!(same(&got[2], &value), "stash gave {} for {value}", got[2]);
    }
}

/// [`Planned`], plus a server `echo` whose tool records its arguments.
struct Echo(Planned, Arc<std::sync::Mutex<Option<Value>>>);

impl Servers for Echo {
    fn route(&self, target: Target<'_>) -> Result<Route, ForgeError> {
        match target {
            Target::Tool {
                server: "echo",
                args,
                ..
            } => {
                *self.1.lock().unwrap() = Some(Value::Object(args));
                let send: SendRequest =
                    Box::new(|| -> BoxFuture<_> { Box::pin(async { Ok(Value::Null) }) });
                Ok(Route::To { guards: None, send })
            }
            other => self.0.route(other),
        }
    }
}
