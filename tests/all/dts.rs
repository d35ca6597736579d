//! `host/forge.d.ts` declares exactly the API a script sees: every member of
//! `forge`, `forge.stash`, `console`, `manifest` and `ForgeError`, each with
//! the right kind. The test reads both sides as a map from a member's path
//! (`forge.stash.put`) to its kind, and requires the two maps to be equal:
//!
//! - from the d.ts, by parsing the small TypeScript subset it is written in;
//! - from the guest, by a script that walks the real objects in the sandbox,
//!   in both search and execute mode.
//!
//! A kind is `object`, `string`, `number` or `boolean` for a value; for a
//! function, `async` when it returns a promise (`Promise<...>` in the d.ts)
//! and `function` otherwise.

use std::collections::BTreeMap;

use quickforge::Mode;

use crate::support::{Kind, context, run_with, value};

/// The declarations, as the MCP server sends them to its client.
const DTS: &str = include_str!("../../host/forge.d.ts");

/// The d.ts is part of every session's instructions: every character costs
/// context on every turn, so it has a budget.
const DTS_BUDGET_CHARS: usize = 2000;

/// Member path → kind.
type Surface = BTreeMap<String, String>;

/// Walks the real API in the sandbox and returns its surface as a
/// `{ path: kind }` object.
///
/// The API's globals are the ones the prelude pinned: read-only and not
/// configurable. ECMAScript's own globals are configurable, except the
/// primitives `NaN`, `Infinity` and `undefined`.
///
/// A function's kind comes from calling it with four `undefined` arguments
/// (more than any member takes: a native throws a `TypeError` when arguments
/// are missing, whatever it returns otherwise). An `async` member reports
/// such misuse through its promise, never by throwing; so a function that
/// throws, or returns anything but a promise, is plain `function`. With
/// these arguments no call reaches a tool or changes the stash (the loggers
/// log a line).
///
/// `ForgeError`'s members are those beyond `Error`'s: an instance's own
/// fields and its prototype's methods (as `ForgeError.x`), and the class's
/// own statics (as `ForgeError.static.x`).
const WALK_SCRIPT: &str = r#"async () => {
    const surface = {};
    const probe = [undefined, undefined, undefined, undefined];
    const kind = (owner, value) => {
        if (typeof value !== "function") return typeof value;
        let result;
        try { result = Reflect.apply(value, owner, probe); } catch { return "function"; }
        if (result instanceof Promise) { result.catch(() => {}); return "async"; }
        return "function";
    };
    const members = (path, object) => {
        for (const key of Object.getOwnPropertyNames(object)) {
            const value = object[key];
            surface[`${path}.${key}`] = kind(object, value);
            if (typeof value === "object" && value !== null && !Array.isArray(value)) {
                members(`${path}.${key}`, value);
            }
        }
    };
    for (const name of Object.getOwnPropertyNames(globalThis)) {
        const d = Object.getOwnPropertyDescriptor(globalThis, name);
        const isObject = d.value !== null && (typeof d.value === "object" || typeof d.value === "function");
        if (d.configurable || d.writable || !isObject) continue;
        surface[name] = kind(globalThis, d.value);
        if (typeof d.value === "object") members(name, d.value);
    }
    const error = new ForgeError("CODE", "message", true, "suggestion");
    const plain = new Error("message");
    for (const key of [...Object.getOwnPropertyNames(error), ...Object.getOwnPropertyNames(ForgeError.prototype)]) {
        if (!(key in plain)) surface[`ForgeError.${key}`] = kind(error, error[key]);
    }
    for (const key of Object.getOwnPropertyNames(ForgeError)) {
        if (!(key in Error)) surface[`ForgeError.static.${key}`] = kind(ForgeError, ForgeError[key]);
    }
    return surface;
}"#;

/// The surface the guest really exposes in `mode`.
async fn exposed(mode: Mode) -> Surface {
    let report = run_with(Kind::Default, mode, WALK_SCRIPT, context().0).await;
    value(&report)
        .as_object()
        .expect("the walk returns an object")
        .iter()
        .map(|(path, kind)| {
            (
                path.clone(),
                kind.as_str().expect("kinds are strings").to_string(),
            )
        })
        .collect()
}

/// What differs between `declared` and `exposed`, one line per member.
fn differences(declared: &Surface, exposed: &Surface) -> Vec<String> {
    let mut out = Vec::new();
    for (path, kind) in declared {
        match exposed.get(path) {
            None => out.push(format!("{path}: declared ({kind}) but not exposed")),
            Some(real) if real != kind => {
                out.push(format!("{path}: declared {kind}, exposed {real}"))
            }
            Some(_) => {}
        }
    }
    for (path, kind) in exposed {
        if !declared.contains_key(path) {
            out.push(format!("{path}: exposed ({kind}) but not declared"));
        }
    }
    out
}

#[tokio::test]
async fn dts_declares_exactly_what_the_guest_exposes() {
    let declared = parse(DTS);
    for mode in [Mode::Search, Mode::Execute] {
        let diff = differences(&declared, &exposed(mode).await);
        assert!(
            diff.is_empty(),
            "host/forge.d.ts does not match the API of the {mode:?} sandbox:\n  {}",
            diff.join("\n  ")
        );
    }
}

#[test]
fn dts_fits_its_budget() {
    assert!(
        DTS.len() <= DTS_BUDGET_CHARS,
        "host/forge.d.ts is {} characters, over its budget of {DTS_BUDGET_CHARS}: it is sent on every turn",
        DTS.len()
    );
}

#[test]
fn the_parser_reads_the_subset_forge_dts_is_written_in() {
    let src = r#"
        // a comment with { braces; and semicolons
        type F = (...a: any[]) => void;
        type Shape = { a: string };
        /** a doc comment */
        declare class C extends Error {
          constructor(x: string);
          static make(): C;
          field: string | null; // trailing comment
          flag?: boolean;
          method(cb: () => unknown): Promise<{ ok: true }>;
        }
        declare const g: {
          run(opts?: { n?: number }): Shape[];
          f: F;
          nested: { deep(): Promise<void>; s: "literal" };
          list: Shape[];
        };
    "#;
    let expected: Surface = [
        ("C", "function"),
        ("C.static.make", "function"),
        ("C.field", "string"),
        ("C.flag", "boolean"),
        ("C.method", "async"),
        ("g", "object"),
        ("g.run", "function"),
        ("g.f", "function"),
        ("g.nested", "object"),
        ("g.nested.deep", "async"),
        ("g.nested.s", "string"),
        ("g.list", "object"),
    ]
    .into_iter()
    .map(|(p, k)| (p.to_string(), k.to_string()))
    .collect();
    assert_eq!(parse(src), expected);
}

// -- the d.ts parser ----------------------------------------------------------
//
// forge.d.ts is written in a small subset of TypeScript: `type` aliases,
// `declare const NAME: { members }` and `declare class NAME ... { members }`.
// A member is `name(params): Return`, `name: Type` or `name?: Type`, where
// Type may be an object type (whose members are read in turn), an alias of a
// function type, or anything else (its kind is its first union arm's). The
// parser panics on anything else, so that a d.ts it cannot read fails loudly
// rather than declaring less than it says.

/// The surface `src` declares.
fn parse(src: &str) -> Surface {
    let text = strip_comments(src);
    let mut aliases = BTreeMap::new();
    let mut surface = Surface::new();
    let mut rest = text.trim();
    while !rest.is_empty() {
        if let Some(decl) = rest.strip_prefix("declare class ") {
            let name = ident(decl);
            let open = decl.find('{').expect("a class has a body");
            let close = matching(decl, open);
            surface.insert(name.to_string(), "function".into());
            for member in split_top(&decl[open + 1..close], ';') {
                declare_member(name, member, &aliases, &mut surface);
            }
            rest = decl[close + 1..].trim_start();
            continue;
        }
        let statement = split_top(rest, ';')[0];
        rest = rest[statement.len()..].trim_start_matches(';').trim_start();
        let statement = statement.trim();
        if let Some(alias) = statement.strip_prefix("type ") {
            let name = ident(alias);
            let (_, ty) = alias.split_once('=').expect("type NAME = TYPE");
            aliases.insert(name.to_string(), ty.trim().to_string());
        } else if let Some(decl) = statement.strip_prefix("declare const ") {
            let name = ident(decl);
            let (_, ty) = decl.split_once(':').expect("declare const NAME: TYPE");
            declare_typed(name, ty, &aliases, &mut surface);
        } else {
            panic!("forge.d.ts: cannot read the statement {statement:?}");
        }
    }
    surface
}

/// Records one member of the object or class at `owner`.
fn declare_member(
    owner: &str,
    member: &str,
    aliases: &BTreeMap<String, String>,
    surface: &mut Surface,
) {
    let member = member.trim();
    let (owner, member) = match member.strip_prefix("static ") {
        Some(m) => (format!("{owner}.static"), m.trim_start()),
        None => (owner.to_string(), member.trim_start_matches("readonly ")),
    };
    let name = ident(member);
    assert!(
        !name.is_empty(),
        "forge.d.ts: cannot read the member {member:?} of {owner}"
    );
    let path = format!("{owner}.{name}");
    let rest = member[name.len()..].trim_start();
    let rest = rest.strip_prefix('?').unwrap_or(rest).trim_start();
    if rest.starts_with('(') {
        if name == "constructor" {
            return;
        }
        let returns = rest[matching(rest, 0) + 1..]
            .trim_start()
            .strip_prefix(':')
            .unwrap_or_else(|| panic!("forge.d.ts: {path} has no return type"));
        surface.insert(path, function_kind(returns).into());
    } else if let Some(ty) = rest.strip_prefix(':') {
        declare_typed(&path, ty, aliases, surface);
    } else {
        panic!("forge.d.ts: cannot read the member {member:?} of {owner}");
    }
}

/// Records `path`, declared with type `ty`, and the members of an object type.
fn declare_typed(path: &str, ty: &str, aliases: &BTreeMap<String, String>, surface: &mut Surface) {
    let mut ty = ty.trim();
    while let Some(alias) = aliases.get(ty) {
        ty = alias;
    }
    if ty.starts_with('{') && matching(ty, 0) == ty.len() - 1 {
        surface.insert(path.to_string(), "object".into());
        for member in split_top(&ty[1..ty.len() - 1], ';') {
            declare_member(path, member, aliases, surface);
        }
    } else if let Some(returns) = ty
        .starts_with('(')
        .then(|| ty[matching(ty, 0) + 1..].trim_start().strip_prefix("=>"))
        .flatten()
    {
        surface.insert(path.to_string(), function_kind(returns).into());
    } else {
        let first = split_top(ty, '|')[0].trim();
        let kind = match first {
            "string" | "number" | "boolean" => first,
            "true" | "false" => "boolean",
            _ if first.starts_with('"') => "string",
            _ => "object",
        };
        surface.insert(path.to_string(), kind.into());
    }
}

/// `async` for a function returning a promise, `function` otherwise.
fn function_kind(returns: &str) -> &'static str {
    if returns.trim_start().starts_with("Promise<") {
        "async"
    } else {
        "function"
    }
}

/// The identifier `s` starts with.
fn ident(s: &str) -> &str {
    let end = s
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '$'))
        .unwrap_or(s.len());
    &s[..end]
}

/// Change of bracket depth at byte `i` of `s` (`=>` is not a bracket).
fn depth_change(s: &str, i: usize) -> i32 {
    match s.as_bytes()[i] {
        b'{' | b'(' | b'[' | b'<' => 1,
        b'}' | b')' | b']' => -1,
        b'>' if i == 0 || s.as_bytes()[i - 1] != b'=' => -1,
        _ => 0,
    }
}

/// Index of the bracket that closes the one at `open`.
fn matching(s: &str, open: usize) -> usize {
    let mut depth = 0;
    for i in open..s.len() {
        depth += depth_change(s, i);
        if depth == 0 {
            return i;
        }
    }
    panic!("forge.d.ts: unbalanced brackets in {s:?}");
}

/// The non-empty parts of `s` between the `sep`s outside any brackets.
fn split_top(s: &str, sep: char) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0, 0);
    for (i, c) in s.char_indices() {
        if c == sep && depth == 0 {
            parts.push(&s[start..i]);
            start = i + 1;
        } else if c.is_ascii() {
            depth += depth_change(s, i);
        }
    }
    parts.push(&s[start..]);
    parts.retain(|p| !p.trim().is_empty());
    parts
}

/// `src` without its `//` and `/* */` comments (string literals kept whole).
fn strip_comments(src: &str) -> String {
    let mut out = String::with_capacity(src.len());
    let mut chars = src.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, chars.peek()) {
            ('/', Some('/')) => while chars.next_if(|&c| c != '\n').is_some() {},
            ('/', Some('*')) => {
                chars.next();
                let mut last = ' ';
                for c in chars.by_ref() {
                    if last == '*' && c == '/' {
                        break;
                    }
                    last = c;
                }
                out.push(' ');
            }
            ('"' | '\'', _) => {
                out.push(c);
                for d in chars.by_ref() {
                    out.push(d);
                    if d == c {
                        break;
                    }
                }
            }
            _ => out.push(c),
        }
    }
    out
}

/// The `ForgeError` codes: the WIT enum `error-code` and the Rust
/// `ErrorCode` name the same cases with the same texts, and every code
/// `forge.d.ts` mentions as an example is one of them (the whole list
/// reaches scripts as `ForgeError.codes`, tested below).
#[test]
fn error_codes_agree_across_wit_rust_and_dts() {
    use strum::IntoEnumIterator as _;
    let wit = include_str!("../../wit/sandbox.wit");
    let start = wit
        .find("enum error-code {")
        .expect("the WIT declares enum error-code");
    let body = &wit[start..][..wit[start..].find('}').expect("the enum ends")];
    let from_wit: Vec<String> = body
        .lines()
        .skip(1)
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with("//"))
        .map(|l| {
            l.trim_end_matches(',')
                .to_ascii_uppercase()
                .replace('-', "_")
        })
        .collect();
    let from_rust: Vec<String> = quickforge::ErrorCode::iter()
        .map(|c| c.as_str().to_string())
        .collect();
    assert_eq!(
        from_wit, from_rust,
        "wit/sandbox.wit and host/error/code.rs"
    );
    let mentioned: Vec<&str> = DTS
        .split(|c: char| !(c.is_ascii_uppercase() || c == '_'))
        .filter(|w| w.len() > 4 && w.contains('_'))
        .collect();
    assert!(!mentioned.is_empty(), "forge.d.ts names some codes");
    for code in mentioned {
        assert!(
            from_rust.iter().any(|c| c == code),
            "forge.d.ts mentions {code}, which is not an ErrorCode"
        );
    }
}

/// No code of the vocabulary is spelled as a string literal in the host's
/// or the guest's source (tests and comments aside): every use goes through the enum, so
/// a renamed code cannot leave a stale spelling behind.
#[test]
fn error_codes_are_not_spelled_outside_the_vocabulary() {
    use strum::IntoEnumIterator as _;
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    let mut dirs = vec![root.join("host"), root.join("guest/src")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs" || e == "js") {
                files.push(path);
            }
        }
    }
    assert!(files.len() > 20, "found the sources: {files:?}");
    let mut found = Vec::new();
    for path in files {
        if path.ends_with("host/error/code.rs") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        // Code only: comments may name a code, tests assert on the texts.
        let code_part: String = text
            .split("#[cfg(test)]")
            .next()
            .unwrap_or("")
            .lines()
            .filter(|l| !l.trim_start().starts_with("//"))
            .collect::<Vec<_>>()
            .join("\n");
        for code in quickforge::ErrorCode::iter() {
            if code_part.contains(&format!("\"{}\"", code.as_str())) {
                found.push(format!("{}: \"{code}\"", path.display()));
            }
        }
    }
    assert!(found.is_empty(), "codes spelled as literals: {found:#?}");
}

/// `ForgeError.codes`, the list `forge.d.ts` points scripts to, is exactly
/// the Rust `ErrorCode` list (and so the WIT enum's), in order.
#[tokio::test]
async fn scripts_read_every_code_as_forge_error_codes() {
    use strum::IntoEnumIterator as _;
    let report = run_with(
        Kind::Default,
        Mode::Search,
        "async () => [ForgeError.codes, Object.isFrozen(ForgeError.codes)]",
        context().0,
    )
    .await;
    let expected: Vec<&str> = quickforge::ErrorCode::iter().map(|c| c.as_str()).collect();
    assert_eq!(value(&report), &serde_json::json!([expected, true]));
}
