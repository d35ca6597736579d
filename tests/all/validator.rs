//! Tests of the quickforge script validator against the attack corpus, the
//! benign corpus, positions, shape, depth and speed.

use std::time::Instant;

use crate::bypass_corpus::{BENIGN, BYPASSES};
use quickforge::{Rejection, ValidatorLimits, validate};

/// Rules that mean "refused for safety" (everything but shape and syntax).
const SECURITY_RULES: &[&str] = &[
    "eval",
    "function-constructor",
    "computed-constructor",
    "dynamic-import",
    "import-meta",
    "require",
    "proto",
    "computed-global",
    "global-escape",
    "reflect",
    "proxy",
    "webassembly",
    "string-raw",
    "with-statement",
    "timer-string",
    "too-deep",
];

fn check(code: &str) -> Result<(), Rejection> {
    validate(code, &ValidatorLimits::default())
}

fn rejected(code: &str) -> Rejection {
    match check(code) {
        Ok(()) => panic!("expected a rejection for:\n{code}"),
        Err(r) => r,
    }
}

#[test]
fn corpus_sizes() {
    // In-process and stack-hungry: not while the memory soak measures.
    let _shared = crate::support::EXCLUSIVE.blocking_read();
    println!(
        "{} bypasses, {} benign scripts",
        BYPASSES.len(),
        BENIGN.len()
    );
    assert!(BYPASSES.len() >= 70, "only {} bypasses", BYPASSES.len());
    assert!(BENIGN.len() >= 25, "only {} benign scripts", BENIGN.len());
    let mut names: Vec<&str> = BYPASSES.iter().chain(BENIGN).map(|(n, _)| *n).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(
        names.len(),
        BYPASSES.len() + BENIGN.len(),
        "names must be unique"
    );
}

#[test]
fn every_bypass_is_rejected_with_an_expected_rule() {
    // In-process and stack-hungry: not while the memory soak measures.
    let _shared = crate::support::EXCLUSIVE.blocking_read();
    let mut failures = Vec::new();
    for (name, code) in BYPASSES {
        let expected: Vec<&str> = name
            .split(':')
            .next()
            .unwrap_or("")
            .split('|')
            .map(str::trim)
            .collect();
        match check(code) {
            // Not spelled literally: the runtime contains it (hostile.rs).
            Ok(()) if expected.contains(&"runtime") => println!("{name:<75} -> runtime"),
            Ok(()) => failures.push(format!("ACCEPTED  {name}")),
            Err(r) => {
                println!(
                    "{name:<75} -> {} @{}:{} `{}`",
                    r.rule, r.line, r.column, r.text
                );
                if !SECURITY_RULES.contains(&r.rule) || !expected.contains(&r.rule) {
                    failures.push(format!("WRONG RULE {name}: got {} ({})", r.rule, r.message));
                }
                assert!(
                    r.text.chars().count() <= 80,
                    "{name}: text too long: {}",
                    r.text
                );
                assert!(
                    !r.message.is_empty()
                        && r.message.chars().next().is_some_and(|c| !c.is_uppercase())
                );
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn every_benign_script_passes() {
    // In-process and stack-hungry: not while the memory soak measures.
    let _shared = crate::support::EXCLUSIVE.blocking_read();
    let mut failures = Vec::new();
    for (name, code) in BENIGN {
        if let Err(r) = check(code) {
            failures.push(format!("{name}: {r}"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} benign scripts rejected:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn rejection_names_rule_line_column_and_text() {
    // In-process and stack-hungry: not while the memory soak measures.
    let _shared = crate::support::EXCLUSIVE.blocking_read();
    let r = rejected(
        "async () => {\n  const a = 1;\n  const r = await forge.callTool(\"s\", \"t\", {});\n  return eval(r);\n}",
    );
    assert_eq!(
        (r.rule, r.line, r.column, r.text.as_str()),
        ("eval", 4, 10, "eval")
    );
    assert!(r.message.contains("forge.callTool"), "{}", r.message);
    assert!(
        r.to_string()
            .contains("rule eval, line 4, column 10: `eval`"),
        "{r}"
    );

    let r = rejected(
        "async () => {\n  // get the constructor\n  const F = (async () => {}).constructor;\n  return F;\n}",
    );
    assert_eq!((r.rule, r.line, r.column), ("function-constructor", 3, 13));
    assert_eq!(r.text, "(async () => {}).constructor");

    // Columns count characters, not bytes.
    let r = rejected("async () => {\n  const s = \"ééé\"; return globalThis[s];\n}");
    assert_eq!(
        (r.rule, r.line, r.column, r.text.as_str()),
        ("computed-global", 2, 27, "globalThis[s]")
    );

    let r = rejected(
        "async () => {\r\n  const g = globalThis;\r\n  return g[\"ev\" + \"al\"](\"1\");\r\n}",
    );
    assert_eq!(
        (r.rule, r.line, r.column, r.text.as_str()),
        ("eval", 3, 10, "g[\"ev\" + \"al\"]")
    );

    let r = rejected("async () => {\n  with (obj) {\n    x = 1;\n  }\n}");
    assert_eq!(
        (r.rule, r.line, r.column, r.text.as_str()),
        ("with-statement", 2, 3, "with (obj)")
    );

    let r = rejected("async () => {\n  const x = 1;\n  setTimeout(\"alert(1)\", 5);\n}");
    assert_eq!((r.rule, r.line, r.column), ("timer-string", 3, 3));
    assert_eq!(r.text, "setTimeout(\"alert(1)\", 5)");

    let long = format!(
        "async () => {{\n  return ({{ {} }}).constructor;\n}}",
        "a: 1, ".repeat(40)
    );
    let r = rejected(&long);
    assert_eq!((r.rule, r.line, r.column), ("function-constructor", 2, 10));
    assert_eq!(r.text.chars().count(), 80);
    assert!(
        r.text.starts_with('…') && r.text.ends_with(".constructor"),
        "{}",
        r.text
    );
}

#[test]
fn syntax_errors_report_oxc_message_and_position() {
    // In-process and stack-hungry: not while the memory soak measures.
    let _shared = crate::support::EXCLUSIVE.blocking_read();
    let r = rejected("async () => {\n  const x = ;\n}");
    assert_eq!(r.rule, "syntax");
    assert_eq!((r.line, r.column), (2, 13));
    assert!(r.message.starts_with("syntax error: "), "{}", r.message);
    println!("{r}");
    let r = rejected("async () => { return 1 ");
    assert_eq!(r.rule, "syntax");
    println!("{r}");
}

#[test]
#[cfg_attr(
    debug_assertions,
    ignore = "oxc_parser's own debug_assert fires on these (oxc-project/oxc#23669)"
)]
fn a_pure_annotation_before_a_bare_label_colon_is_a_syntax_error() {
    // oxc_parser 0.146 trips its own debug assertion on these
    // (oxc-project/oxc#23669, found by tests/fuzz's `validate`); the
    // release build the gateway runs parses them into a syntax error.
    let _shared = crate::support::EXCLUSIVE.blocking_read();
    for code in [
        "/*#__PURE__*/:",
        "/*#__PURE__*/ a:",
        "async () => { /*#__PURE__*/: }",
    ] {
        let r = rejected(code);
        assert_eq!(r.rule, "syntax", "{code:?}: {r}");
    }
}

#[test]
fn shape_must_be_one_async_arrow() {
    // In-process and stack-hungry: not while the memory soak measures.
    let _shared = crate::support::EXCLUSIVE.blocking_read();
    for code in [
        "function f() { return 1; }",
        "1 + 1",
        "async function main() { return 1; }",
        "() => 1",
        "async () => 1; async () => 2",
        "const x = 1; async () => x",
        "async () => 1, 2",
        "\"use strict\"; async () => 1",
        "",
        "   // only a comment\n",
        "(async function () { return 1; })",
        "async x => x; 1",
    ] {
        let r = rejected(code);
        assert_eq!(r.rule, "not-async-arrow", "{code:?}: {r}");
        assert!(r.message.contains("async arrow function"), "{}", r.message);
    }
    for code in [
        "async () => 1",
        "async () => 1;",
        "  async () => {}  ;;",
        "/* a */ async x => x // b",
        "(async () => 1)",
    ] {
        assert_eq!(check(code), Ok(()), "{code:?}");
    }
}

#[test]
fn deep_nesting_is_refused_without_crashing() {
    // In-process and stack-hungry: not while the memory soak measures.
    let _shared = crate::support::EXCLUSIVE.blocking_read();
    for (open, close) in [
        ("[", "]"),
        ("(", ")"),
        ("{a:", "}"),
        ("!", ""),
        ("x=>", ""),
        ("-", ""),
        ("`${", "}`"),
    ] {
        for n in [100_000usize, 5_000] {
            let code = format!("async () => {}1{}", open.repeat(n), close.repeat(n));
            let started = Instant::now();
            let r = rejected(&code);
            println!(
                "{open:>4} x {n:>6}: {} in {:?} ({})",
                r.rule,
                started.elapsed(),
                r.text
            );
            assert!(matches!(r.rule, "too-deep" | "syntax"), "{open} x {n}: {r}");
        }
    }
    // Unclosed, and hidden behind an ambiguous `/` after `}`.
    let r = rejected(&format!(
        "async () => {{ x = {{}} / \"/ ))))\"; {} }}",
        "(".repeat(100_000)
    ));
    assert!(matches!(r.rule, "too-deep" | "syntax"), "{r}");
    let r = rejected(&format!(
        "async () => {{ if (a) {{}} /[/ (/ ; {} }}",
        "[".repeat(100_000)
    ));
    assert!(matches!(r.rule, "too-deep" | "syntax"), "{r}");
    // A string continued across CRLF right after the ambiguous `/`.
    let deep = "(".repeat(100_000);
    for trick in [
        "x = {} / \"/ \\\r\n ))))\"; ",
        "x = {} / `/ ))))\n))))`; ",
        "x = {} / 1 /* / ))))\n)))) */; ",
        "for (const m of /)))/g.exec(s)) ; ",
        "await /)))/; ",
    ] {
        let code = format!("async () => {{ {trick}{deep} }}");
        let r = rejected(&code);
        assert!(matches!(r.rule, "too-deep" | "syntax"), "{trick:?}: {r}");
    }
    // Long flat chains are fine up to a point, then refused, never a crash.
    let chain = format!("async () => x{}", ".a".repeat(200_000));
    assert_eq!(rejected(&chain).rule, "too-deep");
    let sum = format!("async () => 1{}", " + 1".repeat(200_000));
    assert_eq!(rejected(&sum).rule, "too-deep");
}

#[test]
fn max_depth_is_configurable() {
    // In-process and stack-hungry: not while the memory soak measures.
    let _shared = crate::support::EXCLUSIVE.blocking_read();
    let nested = |n: usize| format!("async () => {}1{}", "[".repeat(n), "]".repeat(n));
    assert_eq!(check(&nested(10)), Ok(()));
    let r = validate(&nested(10), &ValidatorLimits { max_depth: 8 }).unwrap_err();
    assert_eq!(r.rule, "too-deep");
    assert!(r.message.contains("more than 8 levels"), "{}", r.message);
    assert_eq!(
        validate(&nested(200), &ValidatorLimits { max_depth: 500 }),
        Ok(())
    );
    assert_eq!(rejected(&nested(70)).rule, "too-deep");
}

#[test]
fn validating_64_kib_is_fast() {
    // In-process and stack-hungry: not while the memory soak measures.
    let _shared = crate::support::EXCLUSIVE.blocking_read();
    let mut script = String::from("async () => {\n  const results = [];\n");
    let mut i = 0;
    while script.len() < 64 * 1024 {
        script.push_str(&format!(
            "  const r{i} = await forge.callTool(\"server\", \"tool_{i}\", {{ id: {i}, tags: [\"a\", \"b\"], q: `item ${{{i}}}` }});\n  if (r{i}?.items?.length > 0) {{ results.push(...r{i}.items.map((x) => ({{ id: x.id, name: x.name.trim() }}))); }} // note {i}\n"
        ));
        i += 1;
    }
    script.push_str("  return results;\n}\n");
    check(&script).expect("generated script is valid");
    let runs = 5;
    let started = Instant::now();
    for _ in 0..runs {
        check(&script).expect("generated script is valid");
    }
    let each = started.elapsed() / runs;
    println!("validated {} bytes in {each:?} per run", script.len());
}

#[test]
fn validator_runs_on_small_stacks() {
    // In-process and stack-hungry: not while the memory soak measures.
    let _shared = crate::support::EXCLUSIVE.blocking_read();
    let handle = std::thread::Builder::new()
        .stack_size(256 * 1024)
        .spawn(|| {
            let deep = format!("async () => {}1{}", "(".repeat(900), ")".repeat(900));
            (rejected(&deep).rule, check(BENIGN[0].1))
        })
        .expect("thread starts");
    let (rule, benign) = handle.join().expect("no stack overflow");
    assert_eq!(rule, "too-deep");
    assert_eq!(benign, Ok(()));
}

#[test]
fn inputs_at_the_hard_ceilings_do_not_crash() {
    // In-process and stack-hungry: not while the memory soak measures.
    let _shared = crate::support::EXCLUSIVE.blocking_read();
    let n = 990;
    let cases = [
        format!("async () => {}1{}", "(".repeat(n), ")".repeat(n)),
        format!("async () => {}1{}", "[".repeat(n), "]".repeat(n)),
        format!("async () => {}1{}", "{a:".repeat(n / 2), "}".repeat(n / 2)),
        format!("async () => {}1", "x=>".repeat(n)),
        format!("async () => {}x", "new ".repeat(n)),
        format!("async () => {}x", "!".repeat(n)),
        format!("async () => {{ {}x; }}", "if(a)".repeat(n / 2)),
        format!("async () => x{}", ".a".repeat(3000)),
        format!("async () => 1{}", "+1".repeat(3000)),
        format!("async () => {{ {}1 }}", "a = b ? c : ".repeat(n / 3)),
    ];
    for code in &cases {
        let result = validate(code, &ValidatorLimits { max_depth: 100_000 });
        assert!(
            matches!(
                &result,
                Ok(())
                    | Err(Rejection {
                        rule: "too-deep",
                        ..
                    })
            ),
            "{result:?}"
        );
    }
}

#[test]
fn long_flat_scripts_pass() {
    // In-process and stack-hungry: not while the memory soak measures.
    let _shared = crate::support::EXCLUSIVE.blocking_read();
    // No semicolons: automatic semicolon insertion must end each statement
    // for the pre-scan too.
    let mut asi = String::from("async () => {\n  let a = 1, b = 2, total = 0\n");
    for i in 0..3000 {
        asi.push_str(&format!("  total = total + (a > {i} ? -b : !a ? b : typeof a === \"number\" ? {i} : 0)\n  if (total > 1e9) total = 0\n"));
    }
    asi.push_str("  return total\n}");
    assert_eq!(check(&asi), Ok(()));

    let array = format!(
        "async () => [{}]",
        (0..20_000)
            .map(|i| i.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    );
    assert_eq!(check(&array), Ok(()));
    let object = format!(
        "async () => ({{ {} }})",
        (0..5_000)
            .map(|i| format!("k{i}: {{ v: -{i}, s: \"(\" }}"))
            .collect::<Vec<_>>()
            .join(",\n")
    );
    assert_eq!(check(&object), Ok(()));
    let else_if = format!(
        "async (x) => {{\n  if (x === -1) return -1\n{}  else return 0\n}}",
        (0..300)
            .map(|i| format!("  else if (x === {i}) {{ return {i} }}\n"))
            .collect::<String>()
    );
    assert_eq!(check(&else_if), Ok(()));
    let regexes = format!(
        "async (s) => [{}]",
        (0..2_000)
            .map(|_| r"/[(\[{]+(\d)/.test(s)")
            .collect::<Vec<_>>()
            .join(", ")
    );
    assert_eq!(check(&regexes), Ok(()));
    let templates = format!(
        "async (v) => [{}]",
        (0..2_000)
            .map(|_| "`a${v}(${`[${v}`}`")
            .collect::<Vec<_>>()
            .join(", ")
    );
    assert_eq!(check(&templates), Ok(()));
}
