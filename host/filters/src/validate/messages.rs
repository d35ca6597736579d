//! What the model reads when a script is refused: the rule, where, the
//! offending text, and a sentence saying what to do instead.
//!
//! The message is the validator's product. Containment comes from the
//! runtime (the sandbox has no eval intrinsic and blocks the Function
//! constructor family); what the validator adds is a precise answer before
//! any of the script runs, so the model can fix its code in one turn.

use oxc_span::Span;

use super::Rejection;

/// Longest snippet in [`Rejection::text`], in characters: one line of a
/// model's context, enough to recognise the expression.
const SNIPPET_CHARS: usize = 80;

/// The rules of the validator. Each has a stable kebab-case id
/// ([`Rule::id`]) that appears in rejections, audit lines and tests, and a
/// message of its own ([`Rule::message`]); both are exhaustive matches, so a
/// rule cannot exist without its id (derived, kebab-case) and its advice.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, strum::IntoStaticStr)]
#[strum(serialize_all = "kebab-case")]
pub enum Rule {
    /// `eval`, however it is reached by name.
    Eval,
    /// The Function constructor family, or `.constructor` of a value.
    FunctionConstructor,
    /// `constructor` reached through a computed key, or a computed access
    /// on a function whose key is not a literal.
    ComputedConstructor,
    /// `import(...)`.
    DynamicImport,
    /// `import.meta`.
    ImportMeta,
    /// `require`.
    Require,
    /// `__proto__`, `getPrototypeOf`, `setPrototypeOf` and the legacy
    /// accessor methods.
    Proto,
    /// A computed access on the global object.
    ComputedGlobal,
    /// `Reflect`.
    Reflect,
    /// `Proxy`.
    Proxy,
    /// `WebAssembly`.
    #[strum(serialize = "webassembly")]
    WebAssembly,
    /// `String.raw`.
    StringRaw,
    /// A `with` statement.
    WithStatement,
    /// `setTimeout`/`setInterval` given code in a string.
    TimerString,
    /// Nesting past the limit.
    TooDeep,
    /// Not exactly one async arrow function.
    NotAsyncArrow,
    /// Not JavaScript.
    Syntax,
    /// The validator itself failed (a bug: it panicked).
    Internal,
}

impl Rule {
    /// The rule's stable id.
    pub fn id(self) -> &'static str {
        self.into()
    }

    /// The sentence for the model: what was found (`t`), why it is refused
    /// and what to write instead. `detail` is the parser's message for
    /// [`Rule::Syntax`], the limit for [`Rule::TooDeep`], the whole message
    /// for [`Rule::Internal`].
    fn message(self, t: &str, detail: &str) -> String {
        match self {
            Rule::Eval => format!(
                "eval is not available in quickforge scripts (found `{t}`); call tools with forge.callTool and compute results in plain javascript"
            ),
            Rule::FunctionConstructor => format!(
                "building functions from strings is not allowed (found `{t}`: a Function/AsyncFunction/GeneratorFunction constructor or the `.constructor` of a function); write the logic as ordinary functions, and inspect values with typeof, instanceof or Array.isArray"
            ),
            Rule::ComputedConstructor => format!(
                "reaching a constructor through a computed key or a computed access on a function is not allowed (found `{t}`); use plain property names, and typeof, instanceof or Array.isArray to inspect values"
            ),
            Rule::DynamicImport => format!(
                "dynamic import() is not available (found `{t}`); every capability comes from forge.callTool, so call a tool instead"
            ),
            Rule::ImportMeta => {
                format!(
                    "import.meta is not available in quickforge scripts (found `{t}`); remove it"
                )
            }
            Rule::Require => format!(
                "require is not available (found `{t}`); quickforge scripts have no modules, call tools with forge.callTool"
            ),
            Rule::Proto => format!(
                "prototype manipulation is not allowed (found `{t}`); use plain objects, object spread or Object.assign"
            ),
            Rule::ComputedGlobal => format!(
                "computed property access on the global object is not allowed (found `{t}`); refer to globals by their plain name, e.g. `JSON.parse(text)`"
            ),
            Rule::Reflect => format!(
                "using Reflect is not allowed (found `{t}`); use ordinary property access, `in` and function calls"
            ),
            Rule::Proxy => {
                format!("using Proxy is not allowed (found `{t}`); use plain objects and functions")
            }
            Rule::WebAssembly => {
                format!(
                    "using WebAssembly is not allowed (found `{t}`); compute in plain javascript"
                )
            }
            Rule::StringRaw => format!(
                "string building with String.raw is not allowed (found `{t}`); use an ordinary template literal or string literal"
            ),
            Rule::WithStatement => format!(
                "with statements are not allowed (found `{t}`); refer to object properties explicitly, e.g. `obj.prop`"
            ),
            Rule::TimerString => format!(
                "setTimeout and setInterval only take a function in quickforge scripts (found `{t}`); pass a function, e.g. `setTimeout(() => work(), 100)`"
            ),
            Rule::TooDeep => format!(
                "the script nests more than {detail} levels deep (at `{t}`); flatten it with helper functions, early returns or intermediate variables"
            ),
            Rule::NotAsyncArrow => format!(
                "a quickforge script must be exactly one async arrow function such as `async () => {{ ... }}` (found `{t}`); put all code inside that single function and remove other top-level statements"
            ),
            Rule::Syntax => {
                let mut chars = detail.chars();
                let detail: String = chars
                    .next()
                    .map(|first| first.to_lowercase().chain(chars).collect())
                    .unwrap_or_default();
                format!(
                    "syntax error: {detail} (at `{t}`); fix the javascript syntax and send the whole script again"
                )
            }
            Rule::Internal => detail.to_string(),
        }
    }
}

/// Which end of a long snippet to keep: the start, or the end (for member
/// accesses, where the offending property comes last).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Keep {
    Head,
    Tail,
}

/// The rejection for `rule` at `span` of `src`, its snippet cut at the end.
pub(super) fn rejection(src: &str, rule: Rule, span: Span, detail: &str) -> Rejection {
    rejection_keep(src, rule, span, detail, Keep::Head)
}

/// The rejection for `rule` at `span` of `src`, keeping `keep`'s end of a
/// long snippet.
pub(super) fn rejection_keep(
    src: &str,
    rule: Rule,
    span: Span,
    detail: &str,
    keep: Keep,
) -> Rejection {
    let (line, column) = line_column(src, span.start as usize);
    let text = snippet(src, span, keep);
    let message = rule.message(&text, detail);
    Rejection {
        rule: rule.id(),
        kind: rule,
        line,
        column,
        text,
        message,
    }
}

/// The rejection for nesting past `limit` at `span`.
pub(super) fn too_deep(src: &str, span: Span, limit: usize) -> Rejection {
    rejection(src, Rule::TooDeep, span, &limit.to_string())
}

/// 1-based line and character column of a byte offset (`\r\n`, `\n`, `\r`,
/// U+2028 and U+2029 end lines, as in JavaScript).
fn line_column(src: &str, offset: usize) -> (u32, u32) {
    let offset = src.floor_char_boundary(offset);
    let (mut line, mut column, mut after_cr) = (1u32, 1u32, false);
    for c in src[..offset].chars() {
        match c {
            '\n' if after_cr => after_cr = false,
            '\n' | '\r' | '\u{2028}' | '\u{2029}' => {
                line = line.saturating_add(1);
                column = 1;
                after_cr = c == '\r';
            }
            _ => {
                column = column.saturating_add(1);
                after_cr = false;
            }
        }
    }
    (line, column)
}

/// The text at `span`, whitespace collapsed, at most [`SNIPPET_CHARS`]
/// characters. An empty span shows the next non-blank line; at the end of
/// the input, what precedes it.
fn snippet(src: &str, span: Span, keep: Keep) -> String {
    let start = src.floor_char_boundary(span.start as usize);
    let end = src.floor_char_boundary((span.end as usize).max(start));
    let mut raw = &src[start..end];
    if raw.trim().is_empty() {
        raw = src[start..]
            .lines()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("");
    }
    if raw.trim().is_empty() {
        // Nothing at or after the position (end of input): show what precedes it.
        let before = src[..start].trim_end();
        let from = before.floor_char_boundary(before.len().saturating_sub(4 * SNIPPET_CHARS));
        return cut(&before[from..], Keep::Tail);
    }
    cut(raw, keep)
}

/// `raw` with whitespace collapsed, cut to [`SNIPPET_CHARS`] characters
/// with `…` on the side that was dropped.
fn cut(raw: &str, keep: Keep) -> String {
    let collapsed = raw.split_whitespace().collect::<Vec<_>>().join(" ");
    let count = collapsed.chars().count();
    if count <= SNIPPET_CHARS {
        return collapsed;
    }
    let kept = SNIPPET_CHARS - 1;
    match keep {
        Keep::Head => format!("{}…", collapsed.chars().take(kept).collect::<String>()),
        Keep::Tail => format!(
            "…{}",
            collapsed.chars().skip(count - kept).collect::<String>()
        ),
    }
}
