//! Static validator for quickforge scripts: the first filter a script meets,
//! whose product is a precise message for the model.
//!
//! A quickforge script is one `async () => { ... }` arrow function written by
//! a language model. Before any of it runs, [`validate`] parses it with oxc
//! and refuses, with the rule, the position, the offending text and what to
//! write instead, code that reaches for things a quickforge script cannot
//! use: `eval`, the Function constructor family, `import()`, `require`,
//! prototypes, computed access to the global object, `with`, timers given
//! code in a string.
//!
//! Containment does not depend on it. The sandbox has no eval intrinsic and
//! blocks the Function constructor family at run time; the bypass corpus
//! (`tests/all/bypass_corpus.rs`) is run with the validator off and every
//! case stays harmless (`tests/all/hostile.rs`). So the validator looks at
//! literal spellings only: names as written (with Unicode look-alikes folded
//! by [`crate::fold`], so `еval` with a Cyrillic е reads as `eval`), string
//! keys written as literals or literal concatenations. It does not evaluate
//! code or track aliases: a script that builds `"ev" + x` at run time meets
//! the runtime, not the validator.
//!
//! In order:
//! 1. a byte-level pre-scan bounds the nesting the parser will see, because
//!    oxc's recursive-descent parser has no recursion limit of its own
//!    (`prescan.rs`, rule `too-deep`);
//! 2. oxc parses the script (rule `syntax`) and the shape is checked: exactly
//!    one expression statement holding an async arrow function (`shape.rs`,
//!    rule `not-async-arrow`);
//! 3. one walk over the AST enforces [`ValidatorLimits::max_depth`] and
//!    applies the rules (`rules.rs`); the messages are in `messages.rs`.
//!
//! All of it runs on a validator thread with a large stack (`threads.rs`),
//! so deeply nested input can never overflow the caller's (possibly small)
//! stack.

use oxc_allocator::Allocator;
use oxc_ast_visit::Visit;
use oxc_parser::{ParseOptions, Parser};
use oxc_span::{SourceType, Span};

mod messages;
mod prescan;
mod rules;
mod shape;
mod threads;

pub use messages::Rule;

/// Limits of the validator.
#[derive(Debug, Clone)]
pub struct ValidatorLimits {
    /// Deepest allowed nesting of statements, expressions, functions, classes
    /// and destructuring patterns.
    ///
    /// Every such node counts one level below its parent, except where it
    /// continues a chain that reads flat in source: the left operand of a
    /// binary or logical operator (`a + b + c`), the object of a member access
    /// or the callee of a call (`x.map(f).filter(g)`), the tag of a tagged
    /// template, an `else if` and the `: else` branch of a conditional.
    /// Values above 1000 behave like 1000, the validator's own hard ceiling.
    pub max_depth: usize,
}

impl Default for ValidatorLimits {
    /// `max_depth` 64: ordinary tool-orchestration scripts (loops, try/catch,
    /// callbacks inside `Promise.all`, nested object literals) stay around 20
    /// levels by the count above, so 64 leaves three times that headroom while
    /// keeping every recursive pass, ours and QuickJS's own parser and
    /// compiler, far away from its stack limit.
    fn default() -> Self {
        Self { max_depth: 64 }
    }
}

/// Why a script was refused: the rule, where, and the offending text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message} (rule {rule}, line {line}, column {column}: `{text}`)")]
pub struct Rejection {
    /// The rule's kebab-case id ([`Rule::id`] of [`Rejection::kind`]), as
    /// the model and the audit log see it.
    pub rule: &'static str,
    /// The rule.
    pub kind: Rule,
    /// 1-based line of the offending text.
    pub line: u32,
    /// 1-based column of the offending text, counted in characters.
    pub column: u32,
    /// The offending source snippet, whitespace collapsed, at most 80
    /// characters (longer snippets are cut with `…`).
    pub text: String,
    /// Lowercase sentence for the model: what is refused and what to do
    /// instead.
    pub message: String,
}

/// Validates one quickforge script: `Ok(())` when it may run in the sandbox,
/// otherwise the first rule it breaks.
///
/// A short, shallow script (see [`fits_any_stack`]) is checked on the
/// caller's thread; any other runs on one of a few long-lived validator
/// threads with 32 MiB stacks (reserved, not committed, memory), so callers
/// on small stacks such as async runtime workers are safe. This call blocks
/// until the verdict.
pub fn validate(code: &str, limits: &ValidatorLimits) -> Result<(), Rejection> {
    if let Some(deepest) = fits_any_stack(code) {
        return threads::verdict(code, limits, Some(deepest));
    }
    threads::validate(code, limits)
}

/// [`validate`] for async callers: waits for the verdict without blocking
/// a runtime thread for long.
pub async fn validate_async(code: String, limits: ValidatorLimits) -> Result<(), Rejection> {
    if let Some(deepest) = fits_any_stack(&code) {
        return threads::verdict(&code, &limits, Some(deepest));
    }
    threads::validate_async(code, limits).await
}

/// Longest script validated on the caller's thread, bytes. Real scripts are
/// a few hundred bytes to a few KiB and validate in tens of microseconds;
/// 8 KiB keeps the time an async runtime thread spends here well under a
/// millisecond even on a slow machine.
const INLINE_MAX_BYTES: usize = 8 * 1024;

/// Deepest pre-scan estimate validated on the caller's thread. At ~3 KiB of
/// stack per level in an unoptimised build (see `threads::STACK_BYTES`),
/// 64 levels need under 200 KiB, a tenth of an async runtime thread's
/// 2 MiB stack; real scripts nest 5 to 20 levels.
const INLINE_MAX_DEPTH: usize = 64;

/// The pre-scan's deepest estimate when `code` is small and shallow enough
/// to validate on any thread's stack, without the hand-off to a validator
/// thread (the estimate is passed on, so the pre-scan runs once). The hand-off is two
/// thread wake-ups, which on a virtual machine with idle cores cost more
/// than validating a short script (a trivial `execute` went from 229 to
/// 322 µs when the validator threads stopped spinning, measured with a raw
/// stdio client).
fn fits_any_stack(code: &str) -> Option<usize> {
    if code.len() > INLINE_MAX_BYTES {
        return None;
    }
    prescan::prescan(code)
        .ok()
        .filter(|deepest| *deepest <= INLINE_MAX_DEPTH)
}

/// The verdict on a script whose analysis panicked.
fn unanalysable(code: &str) -> Rejection {
    messages::rejection(
        code,
        Rule::Internal,
        Span::new(0, 0),
        "the validator failed on this script (a quickforge bug); rephrasing the code may avoid it",
    )
}

/// The whole check, on the current thread (which must have the stack
/// [`threads`] gives it, unless [`fits_any_stack`] said otherwise, whose
/// pre-scan estimate `prescanned` then is).
fn validate_here(
    code: &str,
    limits: &ValidatorLimits,
    prescanned: Option<usize>,
) -> Result<(), Rejection> {
    let max_depth = limits.max_depth.clamp(1, shape::PHYSICAL_LIMIT);
    if let Err(at) = prescanned.map_or_else(|| prescan::prescan(code), Ok) {
        let at = u32::try_from(at).unwrap_or(u32::MAX);
        return Err(messages::too_deep(
            code,
            Span::new(at, at),
            prescan::PRESCAN_LIMIT.min(max_depth),
        ));
    }
    let allocator = Allocator::default();
    let options = ParseOptions {
        preserve_parens: true,
        ..ParseOptions::default()
    };
    let parsed = Parser::new(&allocator, code, SourceType::script())
        .with_options(options)
        .parse();
    if parsed.panicked {
        return Err(syntax_rejection(code, &parsed));
    }
    shape::check_shape(code, &parsed.program)?;
    let mut walker = shape::Walker::new(code, max_depth, rules::Checker::new(code));
    walker.visit_program(&parsed.program);
    if let Some(r) = walker.failure {
        return Err(r);
    }
    if parsed.diagnostics.has_errors() {
        return Err(syntax_rejection(code, &parsed));
    }
    Ok(())
}

/// The parser's first complaint, where it points.
fn syntax_rejection(code: &str, parsed: &oxc_parser::ParserReturn<'_>) -> Rejection {
    let first = (&parsed.diagnostics).into_iter().next();
    let (message, span) = match first {
        Some(d) => {
            let span = d.labels.first().map_or(Span::new(0, 0), |l| {
                Span::new(l.offset(), l.offset().saturating_add(l.len()))
            });
            (d.message.to_string(), span)
        }
        None => (
            "the script could not be parsed".to_string(),
            Span::new(0, 0),
        ),
    };
    messages::rejection(code, Rule::Syntax, span, &message)
}
