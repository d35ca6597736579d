//! `host/forge.d.ts` declares exactly the API a script sees: every member of
//! `forge`, `forge.stash`, `console`, `manifest` and `ForgeError`, each with
//! the right kind. The test reads both sides as a map from a member's path
//! (`forge.stash.put`) to its kind, and requires the two maps to be equal:
//!
//! - from the d.ts, by parsing it with oxc as a declaration file and reading
//!   the small subset of TypeScript it is written in;
//! - from the guest, by a script that walks the real objects in the sandbox,
//!   in both search and execute mode.
//!
//! A kind is `object`, `string`, `number` or `boolean` for a value; for a
//! function, `async` when it returns a promise (`Promise<...>` in the d.ts)
//! and `function` otherwise.

use std::collections::BTreeMap;

use oxc_allocator::Allocator;
use oxc_ast::ast::{
    BindingPattern, ClassElement, MethodDefinitionKind, PropertyKey, Statement, TSLiteral,
    TSSignature, TSType, TSTypeAnnotation, TSTypeName, VariableDeclarationKind,
};
use oxc_parser::{ParseOptions, Parser};
use oxc_span::{GetSpan as _, SourceType};
use quickforge::Mode;

use crate::support::{Kind, context, run_with, value};

/// The declarations, as the MCP server sends them to its client.
const DTS: &str = include_str!("../../host/forge.d.ts");

/// The d.ts is part of every session's instructions: every character costs
/// context on every turn, so it has a budget.
const DTS_BUDGET_CHARS: usize = 2600;

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

// -- reading the d.ts -----------------------------------------------------
//
// oxc parses forge.d.ts as a declaration file; this reads the subset of the
// AST the file is written in: `type` aliases, `declare const NAME: TYPE` and
// `declare class NAME ... { members }`. A member is a method (`name(params):
// Return`) or a property (`name: Type`, `name?: Type`), where Type may be an
// object type (whose members are read in turn), an alias of one, a function
// type, or anything else (its kind is its first union arm's). Anything else
// panics, so that a d.ts this cannot read fails loudly rather than declaring
// less than it says.

/// Type alias name → its type.
type Aliases<'s, 'a> = BTreeMap<&'s str, &'s TSType<'a>>;

/// The surface `src` declares.
fn parse(src: &str) -> Surface {
    let allocator = Allocator::default();
    let options = ParseOptions {
        preserve_parens: false,
        ..ParseOptions::default()
    };
    let parsed = Parser::new(&allocator, src, SourceType::d_ts())
        .with_options(options)
        .parse();
    assert!(
        !parsed.diagnostics.has_errors() && !parsed.panicked,
        "forge.d.ts does not parse: {:?}",
        parsed.diagnostics
    );
    let mut aliases = Aliases::new();
    let mut surface = Surface::new();
    for statement in &parsed.program.body {
        match statement {
            Statement::TSTypeAliasDeclaration(alias) => {
                aliases.insert(alias.id.name.as_str(), &alias.type_annotation);
            }
            Statement::ClassDeclaration(class) if class.declare => {
                let name = class.id.as_ref().expect("a declared class has a name");
                let name = name.name.as_str();
                surface.insert(name.to_string(), "function".into());
                for member in &class.body.body {
                    declare_class_member(name, member, &aliases, &mut surface);
                }
            }
            Statement::VariableDeclaration(decl)
                if decl.declare && decl.kind == VariableDeclarationKind::Const =>
            {
                for declarator in &decl.declarations {
                    let BindingPattern::BindingIdentifier(name) = &declarator.id else {
                        panic!("forge.d.ts: a declared const is not a plain name");
                    };
                    let ty = declarator
                        .type_annotation
                        .as_ref()
                        .unwrap_or_else(|| panic!("forge.d.ts: {} has no type", name.name));
                    declare_typed(
                        name.name.as_str(),
                        &ty.type_annotation,
                        &aliases,
                        &mut surface,
                    );
                }
            }
            other => panic!(
                "forge.d.ts: cannot read the statement {:?}",
                other.span().source_text(src)
            ),
        }
    }
    surface
}

/// The name of a member: a plain (not computed) key.
fn member_name(owner: &str, key: &PropertyKey, computed: bool) -> String {
    match key.static_name() {
        Some(name) if !computed => name.into_owned(),
        _ => panic!("forge.d.ts: a member of {owner} has no plain name"),
    }
}

/// Records one member of the class at `owner`; statics as `owner.static.x`.
fn declare_class_member(
    owner: &str,
    member: &ClassElement,
    aliases: &Aliases,
    surface: &mut Surface,
) {
    let at = |is_static: bool, key: &PropertyKey, computed: bool| {
        let owner = if is_static {
            format!("{owner}.static")
        } else {
            owner.to_string()
        };
        let name = member_name(&owner, key, computed);
        format!("{owner}.{name}")
    };
    match member {
        ClassElement::MethodDefinition(m) if m.kind == MethodDefinitionKind::Constructor => {}
        ClassElement::MethodDefinition(m) => {
            let path = at(m.r#static, &m.key, m.computed);
            let kind = function_kind(&path, m.value.return_type.as_deref());
            surface.insert(path, kind.into());
        }
        ClassElement::PropertyDefinition(p) => {
            let path = at(p.r#static, &p.key, p.computed);
            let ty = p
                .type_annotation
                .as_ref()
                .unwrap_or_else(|| panic!("forge.d.ts: {path} has no type"));
            declare_typed(&path, &ty.type_annotation, aliases, surface);
        }
        _ => panic!("forge.d.ts: cannot read a member of {owner}"),
    }
}

/// Records `path`, declared with type `ty`, and the members of an object type.
fn declare_typed(path: &str, ty: &TSType, aliases: &Aliases, surface: &mut Surface) {
    let mut ty = ty;
    while let TSType::TSTypeReference(r) = ty
        && r.type_arguments.is_none()
        && let TSTypeName::IdentifierReference(name) = &r.type_name
        && let Some(alias) = aliases.get(name.name.as_str())
    {
        ty = alias;
    }
    match ty {
        TSType::TSTypeLiteral(object) => {
            surface.insert(path.to_string(), "object".into());
            for member in &object.members {
                match member {
                    TSSignature::TSPropertySignature(p) => {
                        let name = member_name(path, &p.key, p.computed);
                        let member_path = format!("{path}.{name}");
                        let ty = p
                            .type_annotation
                            .as_ref()
                            .unwrap_or_else(|| panic!("forge.d.ts: {member_path} has no type"));
                        declare_typed(&member_path, &ty.type_annotation, aliases, surface);
                    }
                    TSSignature::TSMethodSignature(m) => {
                        let name = member_name(path, &m.key, m.computed);
                        let member_path = format!("{path}.{name}");
                        let kind = function_kind(&member_path, m.return_type.as_deref());
                        surface.insert(member_path, kind.into());
                    }
                    _ => panic!("forge.d.ts: cannot read a member of {path}"),
                }
            }
        }
        TSType::TSFunctionType(f) => {
            let kind = function_kind(path, Some(&f.return_type));
            surface.insert(path.to_string(), kind.into());
        }
        _ => {
            let first = match ty {
                TSType::TSUnionType(union) => &union.types[0],
                _ => ty,
            };
            let kind = match first {
                TSType::TSStringKeyword(_) => "string",
                TSType::TSNumberKeyword(_) => "number",
                TSType::TSBooleanKeyword(_) => "boolean",
                TSType::TSLiteralType(literal) => match literal.literal {
                    TSLiteral::BooleanLiteral(_) => "boolean",
                    TSLiteral::StringLiteral(_) => "string",
                    _ => "object",
                },
                _ => "object",
            };
            surface.insert(path.to_string(), kind.into());
        }
    }
}

/// `async` for a function whose declared return type is a promise,
/// `function` otherwise.
fn function_kind(path: &str, returns: Option<&TSTypeAnnotation>) -> &'static str {
    let returns = returns.unwrap_or_else(|| panic!("forge.d.ts: {path} has no return type"));
    match &returns.type_annotation {
        TSType::TSTypeReference(r) if matches!(&r.type_name, TSTypeName::IdentifierReference(n) if n.name == "Promise") => {
            "async"
        }
        _ => "function",
    }
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
        "wit/sandbox.wit and host/core/src/code.rs"
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
        if path.ends_with("host/core/src/code.rs") {
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
