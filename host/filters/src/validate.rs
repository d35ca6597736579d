//! Static validator for quickforge scripts.
//!
//! A quickforge script is one `async () => { ... }` arrow function written by a
//! language model. Before any of it reaches the QuickJS sandbox, [`validate`]
//! parses it with oxc and refuses code that reaches for dynamic code
//! evaluation, the global object, prototypes or other escape hatches, or that
//! hides such things behind obfuscation (escapes, look-alike letters, string
//! building, char codes).
//!
//! The validator is a first layer: the sandbox also blocks the Function
//! constructor family at run time. It therefore aims to be strict on anything
//! that is obviously reaching for code construction while never rejecting the
//! plain JavaScript that tool-orchestration scripts are made of.
//!
//! How it works, in order:
//! 1. a byte-level pre-scan bounds the nesting the parser will see, because
//!    oxc's recursive-descent parser has no recursion limit of its own
//!    (rule `too-deep`);
//! 2. oxc parses the script (rule `syntax`) and the shape is checked: exactly
//!    one expression statement holding an async arrow function
//!    (rule `not-async-arrow`);
//! 3. a first AST pass enforces [`ValidatorLimits::max_depth`] and collects
//!    facts: names bound to the global object or to `String`, names bound to
//!    functions, and the values bound to names (for constant folding);
//! 4. a second AST pass applies the rules.
//!
//! All of it runs on a validator thread with a large stack (`threads.rs`), so
//! deeply nested input can never overflow the caller's (possibly small)
//! stack.
//!
//! Identifiers and property names are compared after folding: Unicode NFKC,
//! removal of invisible characters, and a table of Cyrillic/Greek/Armenian
//! letters that look like Latin ones, so `еval` (Cyrillic е) or `ｅｖａｌ`
//! count as `eval`. Computed keys are constant-folded (`"ev" + "al"`,
//! `` `constr${"uctor"}` ``, `["con","structor"].join("")`, `atob(...)`,
//! `(14).toString(36)`, names bound to such values, ...).

use std::borrow::Cow;
use std::cell::RefCell;
use std::collections::{HashMap, HashSet};

use oxc_allocator::Allocator;
use oxc_ast::AstKind;
use oxc_ast::ast::*;
use oxc_ast_visit::{Visit, walk};
use oxc_parser::{ParseOptions, Parser};
use oxc_span::{GetSpan, SourceType, Span};
use unicode_normalization::UnicodeNormalization;

mod threads;

// ============================================================================
// Public API
// ============================================================================

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
    /// Short kebab-case rule id: `eval`, `function-constructor`,
    /// `computed-constructor`, `dynamic-import`, `import-meta`, `require`,
    /// `proto`, `computed-global`, `global-escape`, `reflect`, `proxy`,
    /// `webassembly`, `char-code-obfuscation`, `string-raw`, `with-statement`,
    /// `timer-string`, `too-deep`, `not-async-arrow`, `syntax`, or `internal`
    /// when the validator itself failed (a bug: it panicked).
    pub rule: &'static str,
    /// 1-based line of the offending text.
    pub line: u32,
    /// 1-based column of the offending text, counted in characters.
    pub column: u32,
    /// The offending source snippet, whitespace collapsed, at most 80
    /// characters (longer snippets are cut with `…`).
    pub text: String,
    /// Lowercase sentence for the model: what is banned and what to do instead.
    pub message: String,
}

/// Validates one quickforge script: `Ok(())` when it may run in the sandbox,
/// otherwise the first rule it breaks.
///
/// The work runs on one of a few long-lived validator threads with 32 MiB
/// stacks (reserved, not committed, memory), so callers on small stacks such
/// as async runtime workers are safe; this call blocks until the verdict. If
/// no such thread can be started the work runs on a thread of its own, or
/// at worst on the caller's thread, still bounded by the pre-scan.
pub fn validate(code: &str, limits: &ValidatorLimits) -> Result<(), Rejection> {
    threads::validate(code, limits)
}

/// [`validate`] for async callers: waits for the verdict without blocking
/// a runtime thread.
pub async fn validate_async(code: String, limits: ValidatorLimits) -> Result<(), Rejection> {
    threads::validate_async(code, limits).await
}

/// The verdict on a script whose analysis panicked.
fn unanalysable(code: &str) -> Rejection {
    rejection(
        code,
        "internal",
        Span::new(0, 0),
        "the validator failed on this script (a quickforge bug); rephrasing the code may avoid it"
            .into(),
    )
}

// ============================================================================
// Limits
// ============================================================================

/// Ceiling of the pre-scan's nesting estimate (brackets plus pending
/// right-recursive operators such as `=`, `?`, `=>`, `!`, `new`). Far above
/// any real script, far below what overflows the parser.
const PRESCAN_LIMIT: usize = 1000;

/// Ceiling on the recursion of our own AST walks (every nested expression,
/// statement or pattern, chains included), and the cap of `max_depth`.
const PHYSICAL_LIMIT: usize = 1000;

/// Folding budget per computed key: at most this many expression visits,
/// this deep within one expression, this many names being folded inside each
/// other, this many candidate values, strings this long. Names are folded
/// once and remembered, so only cyclic or very long binding chains ever hit
/// the budget.
const FOLD_BUDGET: usize = 256;
const FOLD_MAX_DEPTH: usize = 24;
const FOLD_MAX_NAMES: usize = 64;
const FOLD_MAX_VALUES: usize = 8;
const FOLD_MAX_LEN: usize = 256;

/// Rounds of alias propagation before falling back to an over-approximation.
const ALIAS_ROUNDS: usize = 16;

/// Longest snippet in [`Rejection::text`], in characters.
const SNIPPET_CHARS: usize = 80;

// ============================================================================
// Driver
// ============================================================================

fn validate_here(code: &str, limits: &ValidatorLimits) -> Result<(), Rejection> {
    let max_depth = limits.max_depth.clamp(1, PHYSICAL_LIMIT);
    if let Err(at) = prescan(code) {
        let at = u32::try_from(at).unwrap_or(u32::MAX);
        return Err(too_deep(
            code,
            Span::new(at, at),
            PRESCAN_LIMIT.min(max_depth),
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
    let program = &parsed.program;
    check_shape(code, program)?;

    let mut collector = Walker::new(code, max_depth, Collector::default());
    collector.visit_program(program);
    if let Some(r) = collector.failure {
        return Err(r);
    }
    let facts = collector.pass.finish();

    let mut checker = Walker::new(
        code,
        max_depth,
        Checker {
            src: code,
            facts: &facts,
        },
    );
    checker.visit_program(program);
    if let Some(r) = checker.failure {
        return Err(r);
    }
    if parsed.diagnostics.has_errors() {
        return Err(syntax_rejection(code, &parsed));
    }
    Ok(())
}

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
    rejection(code, "syntax", span, message)
}

// ============================================================================
// Shape: exactly one async arrow function
// ============================================================================

fn check_shape(code: &str, program: &Program<'_>) -> Result<(), Rejection> {
    let not_arrow = |span: Span| rejection(code, "not-async-arrow", span, String::new());
    if let Some(hashbang) = &program.hashbang {
        return Err(not_arrow(hashbang.span));
    }
    if let Some(directive) = program.directives.first() {
        return Err(not_arrow(directive.span));
    }
    let mut statements = program
        .body
        .iter()
        .filter(|s| !matches!(s, Statement::EmptyStatement(_)));
    let Some(first) = statements.next() else {
        return Err(not_arrow(Span::new(
            0,
            u32::try_from(code.len()).unwrap_or(u32::MAX),
        )));
    };
    let Statement::ExpressionStatement(statement) = first else {
        return Err(not_arrow(first.span()));
    };
    let expression = statement.expression.without_parentheses();
    match expression {
        Expression::ArrowFunctionExpression(arrow) if arrow.r#async => {}
        other => return Err(not_arrow(other.span())),
    }
    if let Some(extra) = statements.next() {
        return Err(not_arrow(extra.span()));
    }
    Ok(())
}

// ============================================================================
// Pre-scan: bound the parser's recursion before parsing
// ============================================================================
//
// oxc parses by recursive descent without a depth limit: `(((…` a few thousand
// levels deep overflows a 2 MiB stack in an unoptimised build. The pre-scan
// estimates, at every point of the source, how deep the parser's recursion can
// be: one unit per open bracket (`(`, `[`, `{`, `${`) plus one per pending
// right-recursive token of the innermost open bracket (`=`, `?`, `:`, `=>`,
// `**`, `...`, `if`, `else`, `while`, `for`, `with`, `do`, `yield`,
// `extends`; and the prefix operators `!`, `~`, unary `+`/`-`, `++`/`--`,
// `new`, `typeof`, `void`, `delete`, `await`, which end at the next binary
// operator). Pending tokens are cleared at `;`, `,` and at line breaks where
// automatic semicolon insertion must end the statement.
//
// Strings, comments, template text and regular expressions are skipped. The
// one real ambiguity of a JavaScript lexer is whether `/` after `}` (or after
// `of`, `await`, `yield` used as names) starts a regular expression; there the
// scan becomes pessimistic for the rest of the line: every opening bracket and
// every token counts and no closing bracket does, so no reading of the line can
// make the estimate too small. If the ambiguity could spill into a template or
// block comment, the rest of the input is scanned that way.

#[derive(Clone, Copy, PartialEq, Eq)]
enum Prev {
    /// Start of input: a `/` starts a regular expression.
    Start,
    /// An operand ended (name, literal, `)`, `]`): `/` divides.
    Operand,
    /// An operator or keyword: `/` starts a regular expression.
    Operator,
    /// `)` closing `if (…)`, `while (…)`, …: `/` starts a regular expression.
    KwClose,
    /// `}`, or `of`/`await`/`yield`, or the end of a pessimistic line: `/` is ambiguous.
    Ambiguous,
    /// `.` or `?.`: the next word is a property name.
    Dot,
}

struct Level {
    closer: u8,
    template: bool,
    kw_paren: bool,
    pending: usize,
    prefix: usize,
}

struct PreScan<'s> {
    src: &'s [u8],
    i: usize,
    levels: Vec<Level>,
    total: usize,
    prev: Prev,
    newline: bool,
    kw_paren_next: bool,
    raw_line: bool,
    raw_all: bool,
}

/// Returns the byte offset where the nesting estimate first exceeds
/// [`PRESCAN_LIMIT`].
fn prescan(src: &str) -> Result<(), usize> {
    let mut scan = PreScan {
        src: src.as_bytes(),
        i: 0,
        levels: vec![Level {
            closer: 0,
            template: false,
            kw_paren: false,
            pending: 0,
            prefix: 0,
        }],
        total: 0,
        prev: Prev::Start,
        newline: false,
        kw_paren_next: false,
        raw_line: false,
        raw_all: false,
    };
    if src.starts_with("#!") {
        scan.skip_line_comment();
    }
    while scan.i < scan.src.len() {
        if scan.raw_line || scan.raw_all {
            scan.raw_step()?;
        } else {
            scan.step()?;
        }
    }
    Ok(())
}

fn is_word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'$' || b >= 0x80
}

impl PreScan<'_> {
    fn peek(&self, ahead: usize) -> u8 {
        self.src.get(self.i + ahead).copied().unwrap_or(0)
    }

    /// Length of the line terminator (`\r\n`, `\n`, `\r`, U+2028, U+2029) at
    /// `i`, or 0.
    fn line_break_at(&self, i: usize) -> usize {
        match self.src.get(i) {
            Some(b'\r') if self.src.get(i + 1) == Some(&b'\n') => 2,
            Some(b'\n' | b'\r') => 1,
            Some(0xE2)
                if self.src.get(i + 1) == Some(&0x80)
                    && matches!(self.src.get(i + 2), Some(0xA8 | 0xA9)) =>
            {
                3
            }
            _ => 0,
        }
    }

    /// Non-ASCII whitespace (NBSP, BOM, U+2000…) at `i`: its length, else 0.
    fn unicode_space_at(&self, i: usize) -> usize {
        let Some(rest) = self.src.get(i..) else {
            return 0;
        };
        let head = &rest[..rest.len().min(4)];
        let text = match std::str::from_utf8(head) {
            Ok(t) => t,
            Err(e) => std::str::from_utf8(&head[..e.valid_up_to()]).unwrap_or(""),
        };
        match text.chars().next() {
            Some(c) if c.is_whitespace() || c == '\u{FEFF}' => c.len_utf8(),
            _ => 0,
        }
    }

    fn check(&self) -> Result<(), usize> {
        if self.total > PRESCAN_LIMIT {
            Err(self.i)
        } else {
            Ok(())
        }
    }

    fn push(&mut self, closer: u8, template: bool, kw_paren: bool) -> Result<(), usize> {
        self.levels.push(Level {
            closer,
            template,
            kw_paren,
            pending: 0,
            prefix: 0,
        });
        self.total += 1;
        self.check()
    }

    fn top(&mut self) -> &mut Level {
        let last = self.levels.len() - 1;
        &mut self.levels[last]
    }

    fn unit(&mut self, prefix: bool) -> Result<(), usize> {
        let top = self.top();
        if prefix {
            top.prefix += 1
        } else {
            top.pending += 1
        }
        self.total += 1;
        self.check()
    }

    fn reset_all(&mut self) {
        let top = self.top();
        let cleared = top.pending + top.prefix;
        top.pending = 0;
        top.prefix = 0;
        self.total -= cleared;
    }

    fn reset_prefix(&mut self) {
        let top = self.top();
        let cleared = top.prefix;
        top.prefix = 0;
        self.total -= cleared;
    }

    /// Pops up to and including the innermost open bracket matching `closer`
    /// (never the root, never across a template `${`); returns it.
    fn pop_until(&mut self, closer: u8) -> Option<Level> {
        let mut target = None;
        for (index, level) in self.levels.iter().enumerate().skip(1).rev() {
            if level.closer == closer {
                target = Some(index);
                break;
            }
            if level.template {
                return None;
            }
        }
        let target = target?;
        let mut found = None;
        while self.levels.len() > target {
            let level = self.levels.pop()?;
            self.total -= 1 + level.pending + level.prefix;
            found = Some(level);
        }
        found
    }

    /// Automatic semicolon insertion: a line break after an operand followed
    /// by a token that cannot continue the expression ends the statement.
    fn before_token(&mut self, starts_statement: bool) {
        if self.newline && starts_statement && matches!(self.prev, Prev::Operand | Prev::Ambiguous)
        {
            self.reset_all();
        }
        self.newline = false;
    }

    fn enter_raw_line(&mut self) {
        if self.levels.iter().any(|l| l.template) {
            self.raw_all = true;
        }
        self.raw_line = true;
    }

    fn step(&mut self) -> Result<(), usize> {
        let b = self.src[self.i];
        let line_break = self.line_break_at(self.i);
        if line_break > 0 {
            self.newline = true;
            self.i += line_break;
            return Ok(());
        }
        match b {
            b' ' | b'\t' | 0x0B | 0x0C => self.i += 1,
            b'"' | b'\'' => {
                self.before_token(true);
                self.skip_string(b);
                self.after_operand();
            }
            b'`' => {
                self.before_token(false);
                self.i += 1;
                self.template_text()?;
            }
            b'/' => match self.peek(1) {
                b'/' => self.skip_line_comment(),
                b'*' => self.skip_block_comment(),
                _ => self.slash()?,
            },
            b'(' | b'[' | b'{' => {
                self.before_token(b == b'{');
                let kw = b == b'(' && self.kw_paren_next;
                self.kw_paren_next = false;
                self.i += 1;
                let closer = match b {
                    b'(' => b')',
                    b'[' => b']',
                    _ => b'}',
                };
                self.push(closer, false, kw)?;
                self.prev = Prev::Operator;
            }
            b')' | b']' | b'}' => {
                self.before_token(false);
                self.kw_paren_next = false;
                self.i += 1;
                let popped = self.pop_until(b);
                match (b, popped) {
                    (b'}', Some(level)) if level.template => self.template_text()?,
                    (b'}', _) => self.prev = Prev::Ambiguous,
                    (b')', Some(level)) if level.kw_paren => self.prev = Prev::KwClose,
                    _ => self.after_operand(),
                }
            }
            b';' | b',' => {
                self.before_token(false);
                self.kw_paren_next = false;
                self.i += 1;
                self.reset_all();
                self.prev = Prev::Operator;
            }
            b'0'..=b'9' => self.number(),
            b'.' if self.peek(1).is_ascii_digit() => self.number(),
            b'#' | b'\\' | b'_' | b'$' | b'a'..=b'z' | b'A'..=b'Z' => self.word()?,
            0x80.. => {
                let space = self.unicode_space_at(self.i);
                if space > 0 {
                    self.i += space;
                } else {
                    self.word()?;
                }
            }
            _ => self.punctuator()?,
        }
        Ok(())
    }

    fn after_operand(&mut self) {
        self.prev = Prev::Operand;
        self.kw_paren_next = false;
    }

    fn skip_string(&mut self, quote: u8) {
        self.i += 1;
        while let Some(&c) = self.src.get(self.i) {
            match c {
                b'\\' => {
                    self.i += if self.peek(1) == b'\r' && self.peek(2) == b'\n' {
                        3
                    } else {
                        2
                    };
                }
                b'\n' | b'\r' => return,
                c if c == quote => {
                    self.i += 1;
                    return;
                }
                _ => self.i += 1,
            }
        }
    }

    /// Template text up to the closing backtick or the next `${`.
    fn template_text(&mut self) -> Result<(), usize> {
        while let Some(&c) = self.src.get(self.i) {
            match c {
                b'\\' => self.i += 2,
                b'`' => {
                    self.i += 1;
                    self.after_operand();
                    return Ok(());
                }
                b'$' if self.peek(1) == b'{' => {
                    self.i += 2;
                    self.push(b'}', true, false)?;
                    self.prev = Prev::Operator;
                    return Ok(());
                }
                _ => self.i += 1,
            }
        }
        Ok(())
    }

    fn skip_line_comment(&mut self) {
        while self.i < self.src.len() && self.line_break_at(self.i) == 0 {
            self.i += 1;
        }
    }

    fn skip_block_comment(&mut self) {
        self.i += 2;
        while self.i < self.src.len() {
            if self.src[self.i] == b'*' && self.peek(1) == b'/' {
                self.i += 2;
                return;
            }
            if self.line_break_at(self.i) > 0 {
                self.newline = true;
            }
            self.i += 1;
        }
    }

    fn slash(&mut self) -> Result<(), usize> {
        match self.prev {
            Prev::Operand => {
                self.before_token(false);
                self.reset_prefix();
                self.i += 1;
                if self.peek(0) == b'=' {
                    self.i += 1;
                    self.unit(false)?;
                }
                self.prev = Prev::Operator;
                self.kw_paren_next = false;
            }
            Prev::Ambiguous => self.enter_raw_line(),
            Prev::Start | Prev::Operator | Prev::KwClose | Prev::Dot => {
                self.before_token(false);
                self.skip_regex();
                self.after_operand();
            }
        }
        Ok(())
    }

    fn skip_regex(&mut self) {
        self.i += 1;
        let mut in_class = false;
        while let Some(&c) = self.src.get(self.i) {
            if self.line_break_at(self.i) > 0 {
                return;
            }
            match c {
                b'\\' => {
                    if self.line_break_at(self.i + 1) > 0 {
                        self.i += 1;
                        return;
                    }
                    self.i += 2;
                }
                b'[' => {
                    in_class = true;
                    self.i += 1;
                }
                b']' => {
                    in_class = false;
                    self.i += 1;
                }
                b'/' if !in_class => {
                    self.i += 1;
                    while self.i < self.src.len() && is_word_byte(self.src[self.i]) {
                        self.i += 1;
                    }
                    return;
                }
                _ => self.i += 1,
            }
        }
    }

    fn number(&mut self) {
        self.before_token(true);
        let start = self.i;
        let hex = self.src[start] == b'0' && matches!(self.peek(1), b'x' | b'X');
        self.i += 1;
        while let Some(&c) = self.src.get(self.i) {
            let exponent_sign =
                matches!(c, b'+' | b'-') && !hex && matches!(self.src[self.i - 1], b'e' | b'E');
            if c.is_ascii_alphanumeric() || c == b'_' || c == b'.' || exponent_sign {
                self.i += 1;
            } else {
                break;
            }
        }
        self.after_operand();
    }

    fn word(&mut self) -> Result<(), usize> {
        let start = self.i;
        if self.src[start] != b'\\' {
            self.i += 1;
        }
        while let Some(&c) = self.src.get(self.i) {
            if c == b'\\' {
                self.i += 2;
                if self.src.get(self.i - 1) == Some(&b'u') && self.peek(0) == b'{' {
                    while self.i < self.src.len() && self.src[self.i] != b'}' {
                        self.i += 1;
                    }
                }
            } else if c >= 0x80 && self.unicode_space_at(self.i) > 0 {
                break;
            } else if is_word_byte(c) {
                self.i += 1;
            } else {
                break;
            }
        }
        let end = self.i.min(self.src.len());
        let word = std::str::from_utf8(&self.src[start..end]).unwrap_or("");
        if self.prev == Prev::Dot {
            self.before_token(false);
            self.after_operand();
            return Ok(());
        }
        let continues = matches!(
            word,
            "in" | "instanceof" | "of" | "else" | "catch" | "finally"
        );
        self.before_token(!continues);
        if self.prev == Prev::Operand && matches!(word, "in" | "instanceof") {
            self.reset_prefix();
        }
        let keeps_paren = word == "await" && self.kw_paren_next;
        self.kw_paren_next =
            matches!(word, "if" | "while" | "for" | "with" | "switch" | "catch") || keeps_paren;
        match word {
            "if" | "else" | "while" | "for" | "with" | "do" | "yield" | "extends" => {
                self.unit(false)?
            }
            "new" | "typeof" | "void" | "delete" | "await" => self.unit(true)?,
            _ => {}
        }
        self.prev = match word {
            "this" | "super" | "null" | "true" | "false" => Prev::Operand,
            "of" | "await" | "yield" => Prev::Ambiguous,
            "break" | "case" | "catch" | "class" | "const" | "continue" | "debugger"
            | "default" | "delete" | "do" | "else" | "export" | "extends" | "finally" | "for"
            | "function" | "if" | "import" | "in" | "instanceof" | "new" | "return" | "switch"
            | "throw" | "try" | "typeof" | "var" | "void" | "while" | "with" => Prev::Operator,
            _ => Prev::Operand,
        };
        Ok(())
    }

    fn punctuator(&mut self) -> Result<(), usize> {
        const PUNCTUATORS: [&str; 50] = [
            ">>>=", "...", "===", "!==", "**=", "<<=", ">>=", ">>>", "&&=", "||=", "??=", "=>",
            "==", "!=", "<=", ">=", "&&", "||", "??", "?.", "++", "--", "+=", "-=", "*=", "%=",
            "&=", "|=", "^=", "**", "<<", ">>", "=", "!", "~", "+", "-", "*", "%", "&", "|", "^",
            "<", ">", "?", ":", ".", "@", ";", ",",
        ];
        let rest = &self.src[self.i..];
        let token = PUNCTUATORS
            .iter()
            .find(|p| rest.starts_with(p.as_bytes()))
            .copied()
            .unwrap_or("");
        let token = if token == "?." && self.peek(2).is_ascii_digit() {
            "?"
        } else {
            token
        };
        self.i += token.len().max(1);
        self.before_token(false);
        let after_operand = self.prev == Prev::Operand;
        self.kw_paren_next = false;
        match token {
            "." | "?." => {
                self.prev = Prev::Dot;
                return Ok(());
            }
            "++" | "--" if after_operand => return Ok(()),
            _ => {}
        }
        if after_operand {
            self.reset_prefix();
        }
        match token {
            "!" | "~" | "++" | "--" => self.unit(true)?,
            "+" | "-" if !after_operand => self.unit(true)?,
            "?" | ":" | "=>" | "**" | "..." => self.unit(false)?,
            t if t.ends_with('=') && !matches!(t, "==" | "===" | "!=" | "!==" | "<=" | ">=") => {
                self.unit(false)?
            }
            _ => {}
        }
        self.prev = Prev::Operator;
        Ok(())
    }

    /// Pessimistic scanning: every opening bracket and every token counts,
    /// no closing bracket does, nothing is skipped.
    fn raw_step(&mut self) -> Result<(), usize> {
        let b = self.src[self.i];
        let line_break = self.line_break_at(self.i);
        if line_break > 0 {
            let continued = self.i > 0 && self.src[self.i - 1] == b'\\';
            self.i += line_break;
            if !self.raw_all && !continued {
                self.raw_line = false;
                self.newline = true;
                self.prev = Prev::Ambiguous;
            }
            return Ok(());
        }
        match b {
            b' ' | b'\t' | 0x0B | 0x0C | b')' | b']' | b'}' => self.i += 1,
            b'(' | b'[' | b'{' => {
                self.i += 1;
                let closer = match b {
                    b'(' => b')',
                    b'[' => b']',
                    _ => b'}',
                };
                self.push(closer, false, false)?;
            }
            b'`' => {
                self.raw_all = true;
                self.i += 1;
                self.unit(false)?;
            }
            b'/' if self.peek(1) == b'*' => {
                self.raw_all = true;
                self.i += 2;
                self.unit(false)?;
            }
            c if is_word_byte(c) => {
                while self.i < self.src.len() && is_word_byte(self.src[self.i]) {
                    self.i += 1;
                }
                self.unit(false)?;
            }
            _ => {
                self.i += 1;
                self.unit(false)?;
            }
        }
        Ok(())
    }
}

// ============================================================================
// Name folding (Unicode look-alikes, invisible characters, escapes)
// ============================================================================

/// Folds a name for comparison: drops invisible characters, applies NFKC
/// (fullwidth and mathematical letters, ligatures) and maps look-alike
/// Cyrillic, Greek and Armenian letters to Latin.
fn fold_name(name: &str) -> Cow<'_, str> {
    if name.is_ascii() {
        return Cow::Borrowed(name);
    }
    let visible: String = name.chars().filter(|c| !is_invisible(*c)).collect();
    Cow::Owned(visible.nfkc().map(confusable).collect())
}

fn is_invisible(c: char) -> bool {
    matches!(c,
        '\u{00AD}' | '\u{034F}' | '\u{061C}' | '\u{115F}' | '\u{1160}' | '\u{17B4}' | '\u{17B5}'
        | '\u{180B}'..='\u{180F}' | '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}'
        | '\u{2060}'..='\u{2064}' | '\u{2066}'..='\u{206F}' | '\u{3164}' | '\u{FE00}'..='\u{FE0F}'
        | '\u{FEFF}' | '\u{FFA0}' | '\u{1BCA0}'..='\u{1BCA3}' | '\u{E0000}'..='\u{E0FFF}')
}

/// Letters that render like Latin ones (the subset able to spell the banned
/// names, upper and lower case).
fn confusable(c: char) -> char {
    // Pairs of (look-alike, Latin letter): Cyrillic, Greek, Armenian, Latin extensions.
    const PAIRS: &str = "аaвbсcԁdеeёeғfһhіiїiјjкkӏlмmпnоoрpԛqгrѕsтtцuѵvԝwхxуyАAВBСCԀDЕEЁEҒFҺHНHІIӀIЈJ\
        КKМMОOРPԚQЅSТTѴVԜWХXУYҮYαaβbϲcδdεeϝfηnιiϳjκkοoσoρpτtυuνvωwχxγyζzΑAΒBϹCΕEϜFΗHΙIΚKΜMΝNΟOΡP\
        ΤTΥYΧXΖZօoսuցgհhոnıiȷjℓlɡgʐz";
    let mut pairs = PAIRS.chars().filter(|c| !c.is_whitespace());
    while let (Some(from), Some(to)) = (pairs.next(), pairs.next()) {
        if from == c {
            return to;
        }
    }
    c
}

/// Decodes `\uXXXX` and `\u{X…}` escapes of an identifier as written.
fn decode_identifier_escapes(raw: &str) -> Option<String> {
    if !raw.contains('\\') {
        return None;
    }
    let mut out = String::with_capacity(raw.len());
    let mut chars = raw.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' || chars.peek() != Some(&'u') {
            out.push(c);
            continue;
        }
        chars.next();
        let hex: String = if chars.peek() == Some(&'{') {
            chars.next();
            chars.by_ref().take_while(|c| *c != '}').collect()
        } else {
            chars.by_ref().take(4).collect()
        };
        out.push(
            u32::from_str_radix(&hex, 16)
                .ok()
                .and_then(char::from_u32)
                .unwrap_or('\u{FFFD}'),
        );
    }
    Some(out)
}

/// The folded spellings of a name: as oxc decoded it, and as decoded from the
/// raw source text (belt and braces for escaped identifiers).
fn spellings(src: &str, name: &str, span: Span) -> Vec<String> {
    let mut out = vec![fold_name(name).into_owned()];
    if let Some(decoded) = span_text(src, span).and_then(decode_identifier_escapes) {
        let folded = fold_name(&decoded).into_owned();
        if !out.contains(&folded) {
            out.push(folded);
        }
    }
    out
}

// ============================================================================
// Positions, snippets, rejections, messages
// ============================================================================

fn span_text(src: &str, span: Span) -> Option<&str> {
    src.get(span.start as usize..span.end as usize)
}

fn floor_boundary(src: &str, at: usize) -> usize {
    src.floor_char_boundary(at)
}

/// 1-based line and character column of a byte offset (`\r\n`, `\n`, `\r`,
/// U+2028 and U+2029 end lines, as in JavaScript).
fn line_column(src: &str, offset: usize) -> (u32, u32) {
    let offset = floor_boundary(src, offset);
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

/// Which end of a long snippet to keep: the start, or the end (for member
/// accesses, where the offending property comes last).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Keep {
    Head,
    Tail,
}

fn snippet(src: &str, span: Span, keep: Keep) -> String {
    let start = floor_boundary(src, span.start as usize);
    let end = floor_boundary(src, (span.end as usize).max(start));
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
        let from = floor_boundary(before, before.len().saturating_sub(4 * SNIPPET_CHARS));
        let tail: Vec<&str> = before[from..].split_whitespace().collect();
        let tail = tail.join(" ");
        let count = tail.chars().count();
        return if count < SNIPPET_CHARS {
            tail
        } else {
            format!(
                "…{}",
                tail.chars()
                    .skip(count - (SNIPPET_CHARS - 1))
                    .collect::<String>()
            )
        };
    }
    let collapsed = raw.split_whitespace().collect::<Vec<_>>().join(" ");
    let count = collapsed.chars().count();
    if count <= SNIPPET_CHARS {
        return collapsed;
    }
    match keep {
        Keep::Head => format!(
            "{}…",
            collapsed
                .chars()
                .take(SNIPPET_CHARS - 1)
                .collect::<String>()
        ),
        Keep::Tail => format!(
            "…{}",
            collapsed
                .chars()
                .skip(count - (SNIPPET_CHARS - 1))
                .collect::<String>()
        ),
    }
}

fn rejection(src: &str, rule: &'static str, span: Span, detail: String) -> Rejection {
    rejection_keep(src, rule, span, detail, Keep::Head)
}

fn rejection_keep(
    src: &str,
    rule: &'static str,
    span: Span,
    detail: String,
    keep: Keep,
) -> Rejection {
    let (line, column) = line_column(src, span.start as usize);
    let text = snippet(src, span, keep);
    let message = message(rule, &text, &detail);
    Rejection {
        rule,
        line,
        column,
        text,
        message,
    }
}

fn too_deep(src: &str, span: Span, limit: usize) -> Rejection {
    rejection(src, "too-deep", span, limit.to_string())
}

fn message(rule: &str, text: &str, detail: &str) -> String {
    let t = text;
    match rule {
        "eval" => format!(
            "eval is not available in quickforge scripts (found `{t}`); call tools with forge.callTool and compute results in plain javascript"
        ),
        "function-constructor" => format!(
            "building functions from strings is not allowed (found `{t}`: a Function/AsyncFunction/GeneratorFunction constructor or the `.constructor` of a function); write the logic as ordinary functions, and inspect values with typeof, instanceof or Array.isArray"
        ),
        "computed-constructor" => format!(
            "reaching a constructor through a computed key or a computed access on a function is not allowed (found `{t}`); use plain property names, and typeof, instanceof or Array.isArray to inspect values"
        ),
        "dynamic-import" => format!(
            "dynamic import() is not available (found `{t}`); every capability comes from forge.callTool, so call a tool instead"
        ),
        "import-meta" => {
            format!("import.meta is not available in quickforge scripts (found `{t}`); remove it")
        }
        "require" => format!(
            "require is not available (found `{t}`); quickforge scripts have no modules, call tools with forge.callTool"
        ),
        "proto" => format!(
            "prototype manipulation is not allowed (found `{t}`); use plain objects, object spread or Object.assign"
        ),
        "computed-global" => format!(
            "computed property access on the global object is not allowed (found `{t}`); refer to globals by their plain name, e.g. `JSON.parse(text)`"
        ),
        "global-escape" => format!(
            "the global object may only be used as `globalThis.name` (found `{t}`); do not pass it to functions, return it or store it in arrays or objects"
        ),
        "reflect" => format!(
            "using Reflect is not allowed (found `{t}`); use ordinary property access, `in` and function calls"
        ),
        "proxy" => {
            format!("using Proxy is not allowed (found `{t}`); use plain objects and functions")
        }
        "webassembly" => {
            format!("using WebAssembly is not allowed (found `{t}`); compute in plain javascript")
        }
        "char-code-obfuscation" => format!(
            "building strings from character codes (String.fromCharCode, String.fromCodePoint) is not allowed because it is used to hide code (found `{t}`); write the string literal directly"
        ),
        "string-raw" => format!(
            "string building with String.raw is not allowed (found `{t}`); use an ordinary template literal or string literal"
        ),
        "with-statement" => format!(
            "with statements are not allowed (found `{t}`); refer to object properties explicitly, e.g. `obj.prop`"
        ),
        "timer-string" => format!(
            "setTimeout and setInterval only take a function in quickforge scripts (found `{t}`); pass a function, e.g. `setTimeout(() => work(), 100)`"
        ),
        "too-deep" => format!(
            "the script nests more than {detail} levels deep (at `{t}`); flatten it with helper functions, early returns or intermediate variables"
        ),
        "internal" => detail.to_string(),
        "not-async-arrow" => format!(
            "a quickforge script must be exactly one async arrow function such as `async () => {{ ... }}` (found `{t}`); put all code inside that single function and remove other top-level statements"
        ),
        _ => {
            let mut detail = detail.to_string();
            if let Some(first) = detail.get(..1) {
                let lower = first.to_lowercase();
                detail.replace_range(..1, &lower);
            }
            format!(
                "syntax error: {detail} (at `{t}`); fix the javascript syntax and send the whole script again"
            )
        }
    }
}

/// Rule for an identifier (reference or binding) spelled like a banned global.
fn identifier_rule(name: &str) -> Option<&'static str> {
    Some(match name {
        "eval" => "eval",
        "Function" | "AsyncFunction" | "GeneratorFunction" | "AsyncGeneratorFunction" => {
            "function-constructor"
        }
        "require" => "require",
        "Reflect" => "reflect",
        "Proxy" => "proxy",
        "WebAssembly" => "webassembly",
        _ => return None,
    })
}

/// Rule for reading a property with this name, on any object.
fn property_rule(name: &str) -> Option<&'static str> {
    Some(match name {
        "constructor" => "function-constructor",
        "__proto__" | "__defineGetter__" | "__defineSetter__" | "__lookupGetter__"
        | "__lookupSetter__" | "getPrototypeOf" | "setPrototypeOf" => "proto",
        "fromCharCode" | "fromCodePoint" => "char-code-obfuscation",
        other => return identifier_rule(other),
    })
}

/// Names that denote the global object.
const GLOBAL_NAMES: [&str; 4] = ["globalThis", "self", "window", "global"];

/// Built-in globals that are functions (a computed access on them with a
/// non-constant key can reach `constructor`), space separated.
const BUILTIN_FUNCTIONS: &str = "Object Array String Number Boolean Symbol BigInt Date RegExp Error \
    TypeError RangeError SyntaxError ReferenceError EvalError URIError AggregateError Promise Map Set \
    WeakMap WeakSet WeakRef ArrayBuffer DataView Uint8Array Int32Array Float64Array parseInt \
    parseFloat isNaN isFinite encodeURIComponent decodeURIComponent encodeURI decodeURI escape \
    unescape atob btoa setTimeout setInterval queueMicrotask structuredClone";

/// Built-in (and quickforge) namespaces whose properties are functions.
const BUILTIN_NAMESPACES: &str = "Math JSON Atomics Intl console forge manifest";

/// Whether `name` is one of the single-space separated words of `list`.
fn listed(list: &str, name: &str) -> bool {
    !name.is_empty()
        && list.match_indices(name).any(|(at, _)| {
            let before = list[..at].chars().next_back();
            let after = list[at + name.len()..].chars().next();
            before.is_none_or(|c| c == ' ') && after.is_none_or(|c| c == ' ')
        })
}

// ============================================================================
// AST walking with a parent stack, depth accounting and a recursion guard
// ============================================================================

#[derive(Clone, Copy)]
struct Frame<'a> {
    kind: AstKind<'a>,
    depth: usize,
}

/// One analysis over the AST; `enter` sees each node before its children,
/// with its ancestors (innermost last).
trait Pass<'a> {
    fn enter(&mut self, kind: AstKind<'a>, parents: &[Frame<'a>]) -> Option<Rejection>;
}

struct Walker<'a, P> {
    src: &'a str,
    max_depth: usize,
    frames: Vec<Frame<'a>>,
    physical: usize,
    failure: Option<Rejection>,
    pass: P,
}

impl<'a, P: Pass<'a>> Walker<'a, P> {
    fn new(src: &'a str, max_depth: usize, pass: P) -> Self {
        Self {
            src,
            max_depth,
            frames: Vec::with_capacity(64),
            physical: 0,
            failure: None,
            pass,
        }
    }

    /// Whether to descend into a node; stops after a failure and past
    /// [`PHYSICAL_LIMIT`] nested nodes.
    fn descend(&mut self, span: Span) -> bool {
        if self.failure.is_some() {
            return false;
        }
        if self.physical >= PHYSICAL_LIMIT {
            self.failure = Some(too_deep(self.src, span, self.max_depth));
            return false;
        }
        true
    }
}

impl<'a, P: Pass<'a>> Visit<'a> for Walker<'a, P> {
    fn enter_node(&mut self, kind: AstKind<'a>) {
        let level = usize::from(is_level(&kind));
        let depth = match self.frames.last() {
            Some(parent) if continues_chain(&parent.kind, kind.span()) => parent.depth,
            Some(parent) => parent.depth + level,
            None => level,
        };
        if self.failure.is_none() {
            if depth > self.max_depth {
                self.failure = Some(too_deep(self.src, kind.span(), self.max_depth));
            } else {
                self.failure = self.pass.enter(kind, &self.frames);
            }
        }
        self.frames.push(Frame { kind, depth });
    }

    fn leave_node(&mut self, _kind: AstKind<'a>) {
        self.frames.pop();
    }

    fn visit_expression(&mut self, it: &Expression<'a>) {
        if self.descend(it.span()) {
            self.physical += 1;
            walk::walk_expression(self, it);
            self.physical -= 1;
        }
    }

    fn visit_statement(&mut self, it: &Statement<'a>) {
        if self.descend(it.span()) {
            self.physical += 1;
            walk::walk_statement(self, it);
            self.physical -= 1;
        }
    }

    fn visit_binding_pattern(&mut self, it: &BindingPattern<'a>) {
        if self.descend(it.span()) {
            self.physical += 1;
            walk::walk_binding_pattern(self, it);
            self.physical -= 1;
        }
    }

    fn visit_assignment_target(&mut self, it: &AssignmentTarget<'a>) {
        if self.descend(it.span()) {
            self.physical += 1;
            walk::walk_assignment_target(self, it);
            self.physical -= 1;
        }
    }
}

/// Nodes that count one nesting level: statements, expressions, functions,
/// classes and destructuring patterns (everything but the structural nodes
/// listed here).
fn is_level(kind: &AstKind<'_>) -> bool {
    !matches!(
        kind,
        AstKind::Program(_)
            | AstKind::IdentifierName(_)
            | AstKind::BindingIdentifier(_)
            | AstKind::LabelIdentifier(_)
            | AstKind::PrivateIdentifier(_)
            | AstKind::TemplateElement(_)
            | AstKind::Elision(_)
            | AstKind::ObjectProperty(_)
            | AstKind::Directive(_)
            | AstKind::Hashbang(_)
            | AstKind::VariableDeclarator(_)
            | AstKind::SwitchCase(_)
            | AstKind::CatchClause(_)
            | AstKind::CatchParameter(_)
            | AstKind::BindingProperty(_)
            | AstKind::BindingRestElement(_)
            | AstKind::FormalParameters(_)
            | AstKind::FormalParameter(_)
            | AstKind::FormalParameterRest(_)
            | AstKind::FunctionBody(_)
            | AstKind::ClassBody(_)
            | AstKind::MethodDefinition(_)
            | AstKind::PropertyDefinition(_)
            | AstKind::AccessorProperty(_)
            | AstKind::StaticBlock(_)
            | AstKind::AssignmentTargetRest(_)
            | AstKind::AssignmentTargetWithDefault(_)
            | AstKind::AssignmentTargetPropertyIdentifier(_)
            | AstKind::AssignmentTargetPropertyProperty(_)
    )
}

/// Whether `child` continues a chain that reads flat: `a + b + c`,
/// `x.a().b()`, tagged templates, `else if`, `a ? b : c ? d : e`.
fn continues_chain(parent: &AstKind<'_>, child: Span) -> bool {
    match parent {
        AstKind::BinaryExpression(e) => e.left.span() == child,
        AstKind::LogicalExpression(e) => e.left.span() == child,
        AstKind::StaticMemberExpression(e) => e.object.span() == child,
        AstKind::ComputedMemberExpression(e) => e.object.span() == child,
        AstKind::PrivateFieldExpression(e) => e.object.span() == child,
        AstKind::CallExpression(e) => e.callee.span() == child,
        AstKind::TaggedTemplateExpression(e) => e.tag.span() == child,
        AstKind::ChainExpression(e) => e.span == child,
        AstKind::ConditionalExpression(e) => e.alternate.span() == child,
        AstKind::IfStatement(s) => s.alternate.as_ref().is_some_and(|a| a.span() == child),
        _ => false,
    }
}

fn contains(outer: Span, inner: Span) -> bool {
    outer.start <= inner.start && inner.end <= outer.end
}

/// Whether `this` at `span` may be the global object: anywhere except in
/// class methods, class field initialisers and static blocks (class code is
/// strict and binds `this` to the instance or the class).
fn this_is_global(parents: &[Frame<'_>], span: Span) -> bool {
    let mut child = span;
    for (index, frame) in parents.iter().enumerate().rev() {
        match frame.kind {
            AstKind::Function(_) => {
                let method =
                    index > 0 && matches!(parents[index - 1].kind, AstKind::MethodDefinition(_));
                return !method;
            }
            AstKind::PropertyDefinition(p)
                if p.value.as_ref().is_some_and(|v| contains(v.span(), child)) =>
            {
                return false;
            }
            AstKind::AccessorProperty(p)
                if p.value.as_ref().is_some_and(|v| contains(v.span(), child)) =>
            {
                return false;
            }
            AstKind::StaticBlock(_) => return false,
            _ => {}
        }
        child = frame.kind.span();
    }
    true
}

// ============================================================================
// Pass 1: facts (aliases, function names, values bound to names)
// ============================================================================

#[derive(Clone, Debug)]
enum Seg {
    Key(String),
    Index(usize),
}

/// A value reachable from an expression by a destructuring path.
#[derive(Clone)]
struct Source<'a> {
    base: &'a Expression<'a>,
    path: Vec<Seg>,
}

impl<'a> Source<'a> {
    fn of(base: &'a Expression<'a>) -> Self {
        Self {
            base,
            path: Vec::new(),
        }
    }

    fn with(&self, seg: Seg) -> Self {
        let mut path = self.path.clone();
        path.push(seg);
        Self {
            base: self.base,
            path,
        }
    }
}

/// A value bound to a name: assigned, or appended with `+=`.
enum Cand<'a> {
    Set(Source<'a>),
    Append(&'a Expression<'a>),
}

struct Edge<'a> {
    name: String,
    source: Source<'a>,
    this_global: bool,
}

/// What pass 1 learned. Scope-insensitive on purpose: a name counts as an
/// alias everywhere if it is bound to the global object anywhere.
#[derive(Default)]
struct Facts<'a> {
    /// Names bound to the global object (plus the built-in global names).
    globals: HashSet<String>,
    /// Names bound to the `String` constructor.
    string_ctors: HashSet<String>,
    /// Names bound to functions or classes.
    functions: HashSet<String>,
    /// Values bound to each name, for constant folding.
    values: HashMap<String, Vec<Cand<'a>>>,
    /// Folded values of names, once known completely.
    folded: RefCell<HashMap<String, Vec<Val>>>,
}

#[derive(Default)]
struct Collector<'a> {
    facts: Facts<'a>,
    edges: Vec<Edge<'a>>,
    declared: HashSet<String>,
}

impl<'a> Pass<'a> for Collector<'a> {
    fn enter(&mut self, kind: AstKind<'a>, parents: &[Frame<'a>]) -> Option<Rejection> {
        let global_this = || this_is_global(parents, kind.span());
        match kind {
            AstKind::BindingIdentifier(b) => {
                self.declared.insert(fold_name(&b.name).into_owned());
            }
            AstKind::VariableDeclarator(d) => {
                if let Some(init) = &d.init {
                    self.bind_pattern(&d.id, Source::of(init), global_this(), 0);
                }
            }
            AstKind::FormalParameter(p) => {
                if let Some(init) = &p.initializer {
                    self.bind_pattern(&p.pattern, Source::of(init), global_this(), 0);
                }
            }
            AstKind::AssignmentPattern(p) => {
                self.bind_pattern(&p.left, Source::of(&p.right), global_this(), 0)
            }
            AstKind::AssignmentExpression(a) => match a.operator {
                AssignmentOperator::Assign
                | AssignmentOperator::LogicalOr
                | AssignmentOperator::LogicalAnd
                | AssignmentOperator::LogicalNullish => {
                    self.bind_target(&a.left, Source::of(&a.right), global_this(), 0);
                }
                AssignmentOperator::Addition => {
                    if let AssignmentTarget::AssignmentTargetIdentifier(id) = &a.left {
                        let name = fold_name(&id.name).into_owned();
                        self.facts
                            .values
                            .entry(name)
                            .or_default()
                            .push(Cand::Append(&a.right));
                    }
                }
                _ => {}
            },
            AstKind::AssignmentTargetWithDefault(t) => {
                self.bind_target(&t.binding, Source::of(&t.init), global_this(), 0);
            }
            AstKind::AssignmentTargetPropertyIdentifier(p) => {
                if let Some(init) = &p.init {
                    self.record(
                        fold_name(&p.binding.name).into_owned(),
                        Source::of(init),
                        global_this(),
                    );
                }
            }
            AstKind::Function(f) => {
                if let Some(id) = &f.id {
                    self.facts
                        .functions
                        .insert(fold_name(&id.name).into_owned());
                }
            }
            AstKind::Class(c) => {
                if let Some(id) = &c.id {
                    self.facts
                        .functions
                        .insert(fold_name(&id.name).into_owned());
                }
            }
            _ => {}
        }
        None
    }
}

/// A static property key (identifier, string, number or constant template).
fn static_key(key: &PropertyKey<'_>, computed: bool) -> Option<String> {
    if computed
        && !matches!(
            key,
            PropertyKey::StringLiteral(_) | PropertyKey::NumericLiteral(_)
        )
    {
        return None;
    }
    key.static_name().map(|n| fold_name(&n).into_owned())
}

impl<'a> Collector<'a> {
    fn record(&mut self, name: String, source: Source<'a>, this_global: bool) {
        let function = matches!(
            source.base.without_parentheses(),
            Expression::ArrowFunctionExpression(_)
                | Expression::FunctionExpression(_)
                | Expression::ClassExpression(_)
        );
        if source.path.is_empty() && function {
            self.facts.functions.insert(name.clone());
        }
        self.facts
            .values
            .entry(name.clone())
            .or_default()
            .push(Cand::Set(source.clone()));
        self.edges.push(Edge {
            name,
            source,
            this_global,
        });
    }

    fn bind_pattern(
        &mut self,
        pattern: &'a BindingPattern<'a>,
        source: Source<'a>,
        this_global: bool,
        depth: usize,
    ) {
        if depth > FOLD_MAX_DEPTH {
            return;
        }
        match pattern {
            BindingPattern::BindingIdentifier(b) => {
                self.record(fold_name(&b.name).into_owned(), source, this_global)
            }
            BindingPattern::ObjectPattern(o) => {
                for p in &o.properties {
                    if let Some(key) = static_key(&p.key, p.computed) {
                        self.bind_pattern(
                            &p.value,
                            source.with(Seg::Key(key)),
                            this_global,
                            depth + 1,
                        );
                    }
                }
            }
            BindingPattern::ArrayPattern(a) => {
                for (index, element) in a.elements.iter().enumerate() {
                    if let Some(element) = element {
                        self.bind_pattern(
                            element,
                            source.with(Seg::Index(index)),
                            this_global,
                            depth + 1,
                        );
                    }
                }
            }
            BindingPattern::AssignmentPattern(p) => {
                self.bind_pattern(&p.left, source, this_global, depth + 1)
            }
        }
    }

    fn bind_target(
        &mut self,
        target: &'a AssignmentTarget<'a>,
        source: Source<'a>,
        this_global: bool,
        depth: usize,
    ) {
        if depth > FOLD_MAX_DEPTH {
            return;
        }
        match target {
            AssignmentTarget::AssignmentTargetIdentifier(id) => {
                self.record(fold_name(&id.name).into_owned(), source, this_global);
            }
            AssignmentTarget::ObjectAssignmentTarget(o) => {
                for p in &o.properties {
                    match p {
                        AssignmentTargetProperty::AssignmentTargetPropertyIdentifier(p) => {
                            let name = fold_name(&p.binding.name).into_owned();
                            self.record(name.clone(), source.with(Seg::Key(name)), this_global);
                        }
                        AssignmentTargetProperty::AssignmentTargetPropertyProperty(p) => {
                            if let Some(key) = static_key(&p.name, p.computed) {
                                self.bind_maybe_default(
                                    &p.binding,
                                    source.with(Seg::Key(key)),
                                    this_global,
                                    depth + 1,
                                );
                            }
                        }
                    }
                }
            }
            AssignmentTarget::ArrayAssignmentTarget(a) => {
                for (index, element) in a.elements.iter().enumerate() {
                    if let Some(element) = element {
                        self.bind_maybe_default(
                            element,
                            source.with(Seg::Index(index)),
                            this_global,
                            depth + 1,
                        );
                    }
                }
            }
            _ => {}
        }
    }

    fn bind_maybe_default(
        &mut self,
        target: &'a AssignmentTargetMaybeDefault<'a>,
        source: Source<'a>,
        this_global: bool,
        depth: usize,
    ) {
        match target {
            AssignmentTargetMaybeDefault::AssignmentTargetWithDefault(d) => {
                self.bind_target(&d.binding, source, this_global, depth);
            }
            other => {
                if let Some(target) = other.as_assignment_target() {
                    self.bind_target(target, source, this_global, depth);
                }
            }
        }
    }

    /// Closes the alias sets over the recorded bindings.
    fn finish(self) -> Facts<'a> {
        let Collector {
            mut facts,
            edges,
            declared,
        } = self;
        for name in GLOBAL_NAMES {
            // `self`, `window` and `global` are ordinary names when the script
            // declares them (e.g. the third `filter` callback parameter).
            if name == "globalThis" || !declared.contains(name) {
                facts.globals.insert(name.to_string());
            }
        }
        facts.string_ctors.insert("String".to_string());
        let mut converged = false;
        for _ in 0..ALIAS_ROUNDS {
            let mut changed = false;
            for edge in &edges {
                let kinds = source_kinds(&facts, &edge.source, edge.this_global);
                if kinds.global && !facts.globals.contains(&edge.name) {
                    facts.globals.insert(edge.name.clone());
                    changed = true;
                }
                if kinds.string && !facts.string_ctors.contains(&edge.name) {
                    facts.string_ctors.insert(edge.name.clone());
                    changed = true;
                }
            }
            if !changed {
                converged = true;
                break;
            }
        }
        if !converged {
            // Pathological alias chains: over-approximate, every name bound
            // to another name or to `this` is treated as both kinds.
            for edge in &edges {
                if matches!(
                    edge.source.base.without_parentheses(),
                    Expression::Identifier(_) | Expression::ThisExpression(_)
                ) {
                    facts.globals.insert(edge.name.clone());
                    facts.string_ctors.insert(edge.name.clone());
                }
            }
        }
        facts
    }
}

/// What an expression may evaluate to, as far as the rules care.
#[derive(Clone, Copy, Default)]
struct Kinds {
    /// The global object.
    global: bool,
    /// The `String` constructor.
    string: bool,
}

impl Kinds {
    fn or(self, other: Kinds) -> Kinds {
        Kinds {
            global: self.global || other.global,
            string: self.string || other.string,
        }
    }
}

fn member_kinds(object: Kinds, key: &str) -> Kinds {
    if !object.global {
        return Kinds::default();
    }
    Kinds {
        global: GLOBAL_NAMES.contains(&key),
        string: key == "String",
    }
}

fn source_kinds(facts: &Facts<'_>, source: &Source<'_>, this_global: bool) -> Kinds {
    let mut kinds = expr_kinds(facts, source.base, this_global, 0);
    for seg in &source.path {
        kinds = match seg {
            Seg::Key(key) => member_kinds(kinds, key),
            Seg::Index(_) => Kinds::default(),
        };
    }
    kinds
}

/// Kinds of the values an expression can evaluate to, looking through
/// parentheses, conditionals, logical operators, sequences, assignments,
/// `await` and member accesses such as `globalThis.globalThis`.
fn expr_kinds(facts: &Facts<'_>, e: &Expression<'_>, this_global: bool, depth: usize) -> Kinds {
    if depth > FOLD_MAX_DEPTH {
        return Kinds::default();
    }
    let next = |e: &Expression<'_>| expr_kinds(facts, e, this_global, depth + 1);
    match e {
        Expression::Identifier(id) => {
            let name = fold_name(&id.name);
            Kinds {
                global: facts.globals.contains(name.as_ref()),
                string: facts.string_ctors.contains(name.as_ref()),
            }
        }
        Expression::ThisExpression(_) => Kinds {
            global: this_global,
            string: false,
        },
        Expression::ParenthesizedExpression(p) => next(&p.expression),
        Expression::ConditionalExpression(c) => next(&c.consequent).or(next(&c.alternate)),
        Expression::LogicalExpression(l) => next(&l.left).or(next(&l.right)),
        Expression::SequenceExpression(s) => s.expressions.last().map(next).unwrap_or_default(),
        Expression::AssignmentExpression(a) => next(&a.right),
        Expression::AwaitExpression(a) => next(&a.argument),
        Expression::StaticMemberExpression(m) => {
            member_kinds(next(&m.object), &fold_name(&m.property.name))
        }
        Expression::ComputedMemberExpression(m) => {
            let object = next(&m.object);
            let mut kinds = Kinds::default();
            for key in Folder::new(facts).strings(&m.expression) {
                kinds = kinds.or(member_kinds(object, &fold_name(&key)));
            }
            kinds
        }
        Expression::ChainExpression(c) => match &c.expression {
            ChainElement::StaticMemberExpression(m) => {
                member_kinds(next(&m.object), &fold_name(&m.property.name))
            }
            _ => Kinds::default(),
        },
        _ => Kinds::default(),
    }
}

// ============================================================================
// Constant folding of computed keys
// ============================================================================

/// A constant value, as far as folding can tell.
#[derive(Clone, Debug, PartialEq)]
enum Val {
    Str(String),
    Num(f64),
    Arr(Vec<Val>),
    Obj(Vec<(String, Val)>),
}

impl Val {
    fn to_js_string(&self) -> Option<String> {
        match self {
            Val::Str(s) => Some(s.clone()),
            Val::Num(n) => Some(number_to_string(*n)),
            Val::Arr(items) => {
                let parts: Option<Vec<String>> = items.iter().map(Val::to_js_string).collect();
                parts.map(|p| p.join(","))
            }
            Val::Obj(_) => Some("[object Object]".to_string()),
        }
    }

    fn to_number(&self) -> Option<f64> {
        match self {
            Val::Num(n) => Some(*n),
            Val::Str(s) => s.trim().parse().ok(),
            _ => None,
        }
    }

    fn too_big(&self) -> bool {
        match self {
            Val::Str(s) => s.len() > FOLD_MAX_LEN,
            Val::Arr(items) => items.len() > FOLD_MAX_LEN,
            Val::Obj(props) => props.len() > FOLD_MAX_LEN,
            Val::Num(_) => false,
        }
    }
}

fn number_to_string(n: f64) -> String {
    if n.is_nan() {
        "NaN".into()
    } else if n.is_infinite() {
        if n > 0.0 {
            "Infinity".into()
        } else {
            "-Infinity".into()
        }
    } else if n.fract() == 0.0 && n.abs() < 1e21 {
        format!("{n:.0}")
    } else {
        format!("{n}")
    }
}

fn push_val(out: &mut Vec<Val>, v: Val) {
    if out.len() < FOLD_MAX_VALUES && !v.too_big() && !out.contains(&v) {
        out.push(v);
    }
}

fn js_add(l: &Val, r: &Val) -> Option<Val> {
    match (l, r) {
        (Val::Num(a), Val::Num(b)) => Some(Val::Num(a + b)),
        _ => Some(Val::Str(l.to_js_string()? + &r.to_js_string()?)),
    }
}

/// `index` of a sequence of `len` items, JavaScript style (negative from end).
fn relative(index: f64, len: usize) -> usize {
    let len_f = len as f64;
    let i = if index < 0.0 {
        (len_f + index).max(0.0)
    } else {
        index.min(len_f)
    };
    i as usize
}

fn member_of(v: &Val, key: &Val) -> Option<Val> {
    let key_str = key.to_js_string()?;
    match v {
        Val::Obj(props) => props
            .iter()
            .rev()
            .find(|(k, _)| *k == key_str)
            .map(|(_, v)| v.clone()),
        Val::Arr(items) if key_str == "length" => Some(Val::Num(items.len() as f64)),
        Val::Arr(items) => key_str
            .parse::<usize>()
            .ok()
            .and_then(|i| items.get(i).cloned()),
        Val::Str(s) if key_str == "length" => Some(Val::Num(s.chars().count() as f64)),
        Val::Str(s) => key_str
            .parse::<usize>()
            .ok()
            .and_then(|i| s.chars().nth(i))
            .map(|c| Val::Str(c.to_string())),
        Val::Num(_) => None,
    }
}

fn chars_of(s: &str) -> Val {
    Val::Arr(s.chars().map(|c| Val::Str(c.to_string())).collect())
}

/// Evaluates constant expressions. Each name's values are folded once and
/// remembered when complete; a name met again while it is being folded (a
/// cycle such as `k = k + "x"`) yields the values found so far.
struct Folder<'f, 'a> {
    facts: &'f Facts<'a>,
    budget: usize,
    /// Names being folded, innermost last, with their values so far.
    active: Vec<(String, Vec<Val>)>,
    /// Whether a limit or a cycle cut the current result short.
    incomplete: bool,
}

impl<'f, 'a> Folder<'f, 'a> {
    fn new(facts: &'f Facts<'a>) -> Self {
        Self {
            facts,
            budget: FOLD_BUDGET,
            active: Vec::new(),
            incomplete: false,
        }
    }

    /// The constant strings `e` may evaluate to (empty when unknown).
    fn strings(&mut self, e: &Expression<'_>) -> Vec<String> {
        self.vals(e, 0)
            .iter()
            .filter_map(Val::to_js_string)
            .collect()
    }

    fn vals(&mut self, e: &Expression<'_>, depth: usize) -> Vec<Val> {
        if depth > FOLD_MAX_DEPTH || self.budget == 0 {
            self.incomplete = true;
            return Vec::new();
        }
        self.budget -= 1;
        let d = depth + 1;
        let mut out = Vec::new();
        match e {
            Expression::StringLiteral(s) => push_val(&mut out, Val::Str(s.value.to_string())),
            Expression::NumericLiteral(n) => push_val(&mut out, Val::Num(n.value)),
            Expression::TemplateLiteral(t) => out = self.template(t, d),
            Expression::ParenthesizedExpression(p) => out = self.vals(&p.expression, d),
            Expression::Identifier(id) => out = self.identifier(&fold_name(&id.name)),
            Expression::BinaryExpression(b) if b.operator == BinaryOperator::Addition => {
                let left = self.vals(&b.left, d);
                if !left.is_empty() {
                    let right = self.vals(&b.right, d);
                    for l in &left {
                        for r in &right {
                            if let Some(v) = js_add(l, r) {
                                push_val(&mut out, v);
                            }
                        }
                    }
                }
            }
            Expression::ConditionalExpression(c) => {
                out = self.vals(&c.consequent, d);
                for v in self.vals(&c.alternate, d) {
                    push_val(&mut out, v);
                }
            }
            Expression::LogicalExpression(l) => {
                out = self.vals(&l.left, d);
                for v in self.vals(&l.right, d) {
                    push_val(&mut out, v);
                }
            }
            Expression::SequenceExpression(s) => {
                if let Some(last) = s.expressions.last() {
                    out = self.vals(last, d);
                }
            }
            Expression::ArrayExpression(a) => out = self.array(a, d),
            Expression::ObjectExpression(o) => out = self.object(o, d),
            Expression::StaticMemberExpression(m) => {
                let key = Val::Str(m.property.name.to_string());
                for v in self.vals(&m.object, d) {
                    if let Some(v) = member_of(&v, &key) {
                        push_val(&mut out, v);
                    }
                }
            }
            Expression::ComputedMemberExpression(m) => {
                let objects = self.vals(&m.object, d);
                if !objects.is_empty() {
                    let keys = self.vals(&m.expression, d);
                    for o in &objects {
                        for k in &keys {
                            if let Some(v) = member_of(o, k) {
                                push_val(&mut out, v);
                            }
                        }
                    }
                }
            }
            Expression::CallExpression(c) => out = self.call(c, d),
            _ => {}
        }
        out
    }

    fn identifier(&mut self, name: &str) -> Vec<Val> {
        let facts = self.facts;
        if let Some(known) = facts.folded.borrow().get(name) {
            return known.clone();
        }
        if let Some((_, so_far)) = self.active.iter().find(|(n, _)| n == name) {
            self.incomplete = true;
            return so_far.clone();
        }
        let Some(cands) = facts.values.get(name) else {
            return Vec::new();
        };
        if self.active.len() >= FOLD_MAX_NAMES {
            self.incomplete = true;
            return Vec::new();
        }
        let outer_incomplete = std::mem::replace(&mut self.incomplete, false);
        self.active.push((name.to_string(), Vec::new()));
        for cand in cands {
            if let Cand::Set(source) = cand {
                let mut vals = self.vals(source.base, 0);
                for seg in &source.path {
                    let key = match seg {
                        Seg::Key(k) => Val::Str(k.clone()),
                        Seg::Index(i) => Val::Num(*i as f64),
                    };
                    vals = vals.iter().filter_map(|v| member_of(v, &key)).collect();
                }
                self.add_active(vals);
            }
        }
        for cand in cands {
            if let Cand::Append(e) = cand {
                let extra = self.vals(e, 0);
                let so_far = self
                    .active
                    .last()
                    .map(|(_, v)| v.clone())
                    .unwrap_or_default();
                let grown = so_far
                    .iter()
                    .flat_map(|l| extra.iter().filter_map(move |r| js_add(l, r)))
                    .collect();
                self.add_active(grown);
            }
        }
        let out = self.active.pop().map(|(_, v)| v).unwrap_or_default();
        if !self.incomplete {
            facts
                .folded
                .borrow_mut()
                .insert(name.to_string(), out.clone());
        }
        self.incomplete |= outer_incomplete;
        out
    }

    fn add_active(&mut self, vals: Vec<Val>) {
        if let Some((_, so_far)) = self.active.last_mut() {
            for v in vals {
                push_val(so_far, v);
            }
        }
    }

    fn template(&mut self, t: &TemplateLiteral<'_>, depth: usize) -> Vec<Val> {
        let mut partial = vec![String::new()];
        for (index, quasi) in t.quasis.iter().enumerate() {
            let Some(cooked) = &quasi.value.cooked else {
                return Vec::new();
            };
            partial.iter_mut().for_each(|p| p.push_str(cooked));
            if let Some(e) = t.expressions.get(index) {
                let parts: Vec<String> = self
                    .vals(e, depth)
                    .iter()
                    .filter_map(Val::to_js_string)
                    .collect();
                if parts.is_empty() {
                    return Vec::new();
                }
                partial = partial
                    .iter()
                    .flat_map(|p| parts.iter().map(move |s| format!("{p}{s}")))
                    .take(FOLD_MAX_VALUES)
                    .collect();
            }
        }
        let mut out = Vec::new();
        for p in partial {
            push_val(&mut out, Val::Str(p));
        }
        out
    }

    fn array(&mut self, a: &ArrayExpression<'_>, depth: usize) -> Vec<Val> {
        let mut combos: Vec<Vec<Val>> = vec![Vec::new()];
        for element in &a.elements {
            let options: Vec<Vec<Val>> = match element {
                ArrayExpressionElement::SpreadElement(s) => self
                    .vals(&s.argument, depth)
                    .into_iter()
                    .filter_map(|v| match v {
                        Val::Str(s) => match chars_of(&s) {
                            Val::Arr(items) => Some(items),
                            _ => None,
                        },
                        Val::Arr(items) => Some(items),
                        _ => None,
                    })
                    .collect(),
                ArrayExpressionElement::Elision(_) => return Vec::new(),
                other => match other.as_expression() {
                    Some(e) => self.vals(e, depth).into_iter().map(|v| vec![v]).collect(),
                    None => return Vec::new(),
                },
            };
            if options.is_empty() {
                return Vec::new();
            }
            combos = combos
                .iter()
                .flat_map(|c| {
                    options.iter().map(move |o| {
                        let mut next = c.clone();
                        next.extend(o.iter().cloned());
                        next
                    })
                })
                .take(FOLD_MAX_VALUES)
                .collect();
        }
        let mut out = Vec::new();
        for c in combos {
            push_val(&mut out, Val::Arr(c));
        }
        out
    }

    fn object(&mut self, o: &ObjectExpression<'_>, depth: usize) -> Vec<Val> {
        let mut props = Vec::new();
        for p in &o.properties {
            if let ObjectPropertyKind::ObjectProperty(p) = p {
                let key = static_key(&p.key, p.computed);
                let value = self.vals(&p.value, depth).into_iter().next();
                if let (Some(k), Some(v)) = (key, value) {
                    props.push((k, v));
                }
            }
        }
        vec![Val::Obj(props)]
    }

    fn call(&mut self, c: &CallExpression<'_>, depth: usize) -> Vec<Val> {
        let callee = c.callee.without_parentheses();
        // Immediately invoked `() => expr` / `() => { return expr }`.
        if let Expression::ArrowFunctionExpression(f) = callee {
            let body = match &f.body {
                ArrowFunctionBody::FunctionBody(b) => match b.statements.as_slice() {
                    [Statement::ReturnStatement(r)] => r.argument.as_ref(),
                    _ => None,
                },
                other => other.as_expression(),
            };
            return body.map(|b| self.vals(b, depth)).unwrap_or_default();
        }
        let mut args: Vec<Vec<Val>> = Vec::new();
        for a in &c.arguments {
            match a.as_expression() {
                Some(e) => args.push(self.vals(e, depth)),
                None => return Vec::new(),
            }
        }
        let first = |i: usize| args.get(i).and_then(|a| a.first());
        let mut out = Vec::new();
        match callee {
            Expression::Identifier(id) => {
                let arg = first(0).and_then(Val::to_js_string);
                let v = match (fold_name(&id.name).as_ref(), arg) {
                    ("String", Some(s)) => Some(s),
                    ("atob", Some(s)) => base64_decode(&s),
                    ("decodeURIComponent" | "decodeURI", Some(s)) => percent_decode(&s, false),
                    ("unescape", Some(s)) => percent_decode(&s, true),
                    _ => None,
                };
                if let Some(v) = v {
                    push_val(&mut out, Val::Str(v));
                }
            }
            Expression::StaticMemberExpression(m) => {
                let method = fold_name(&m.property.name);
                if let Expression::Identifier(object) = m.object.without_parentheses() {
                    let statics = match (fold_name(&object.name).as_ref(), method.as_ref()) {
                        ("String", "fromCharCode" | "fromCodePoint") => args
                            .iter()
                            .map(|a| {
                                a.first()
                                    .and_then(Val::to_number)
                                    .and_then(|n| char::from_u32(n as u32))
                            })
                            .collect::<Option<String>>()
                            .map(Val::Str),
                        ("Array", "from") => match first(0) {
                            Some(Val::Str(s)) => Some(chars_of(s)),
                            Some(v @ Val::Arr(_)) => Some(v.clone()),
                            _ => None,
                        },
                        ("JSON", "parse") => first(0)
                            .and_then(Val::to_js_string)
                            .and_then(|t| parse_json(&t)),
                        ("Object", "keys") => match first(0) {
                            Some(Val::Obj(props)) => Some(Val::Arr(
                                props.iter().map(|(k, _)| Val::Str(k.clone())).collect(),
                            )),
                            _ => None,
                        },
                        _ => None,
                    };
                    if let Some(v) = statics {
                        push_val(&mut out, v);
                        return out;
                    }
                }
                for receiver in self.vals(&m.object, depth) {
                    if let Some(v) = apply_method(&receiver, &method, &args) {
                        push_val(&mut out, v);
                    }
                }
            }
            _ => {}
        }
        out
    }
}

/// Folds the common string and array methods used to assemble names.
fn apply_method(receiver: &Val, method: &str, args: &[Vec<Val>]) -> Option<Val> {
    let arg = |i: usize| args.get(i).and_then(|a| a.first());
    let text = |i: usize| arg(i).and_then(Val::to_js_string);
    let num = |i: usize| arg(i).and_then(Val::to_number);
    match receiver {
        Val::Str(s) => {
            let chars: Vec<char> = s.chars().collect();
            let len = chars.len();
            let range = |a: usize, b: usize| {
                Val::Str(chars[a.min(len)..b.clamp(a.min(len), len)].iter().collect())
            };
            Some(match method {
                "split" => match text(0) {
                    None if args.is_empty() => Val::Arr(vec![Val::Str(s.clone())]),
                    Some(sep) if sep.is_empty() => chars_of(s),
                    Some(sep) => Val::Arr(
                        s.split(sep.as_str())
                            .map(|p| Val::Str(p.to_string()))
                            .collect(),
                    ),
                    None => return None,
                },
                "concat" => {
                    let mut joined = s.clone();
                    for a in args {
                        joined.push_str(&a.first()?.to_js_string()?);
                    }
                    Val::Str(joined)
                }
                "toLowerCase" => Val::Str(s.to_lowercase()),
                "toUpperCase" => Val::Str(s.to_uppercase()),
                "trim" => Val::Str(s.trim().to_string()),
                "toString" => Val::Str(s.clone()),
                "slice" => range(
                    relative(num(0).unwrap_or(0.0), len),
                    relative(num(1).unwrap_or(len as f64), len),
                ),
                "substring" => {
                    let a = num(0).unwrap_or(0.0).clamp(0.0, len as f64) as usize;
                    let b = num(1).unwrap_or(len as f64).clamp(0.0, len as f64) as usize;
                    range(a.min(b), a.max(b))
                }
                "charAt" | "at" => {
                    let i = num(0).unwrap_or(0.0);
                    let i = if method == "at" {
                        relative(i, len)
                    } else {
                        i.max(0.0) as usize
                    };
                    range(i, i + 1)
                }
                "repeat" => {
                    let n = num(0)?;
                    if !(0.0..=FOLD_MAX_LEN as f64).contains(&n)
                        || s.len() * (n as usize) > FOLD_MAX_LEN
                    {
                        return None;
                    }
                    Val::Str(s.repeat(n as usize))
                }
                "replace" => Val::Str(s.replacen(text(0)?.as_str(), &text(1)?, 1)),
                "replaceAll" => Val::Str(s.replace(text(0)?.as_str(), &text(1)?)),
                "normalize" => Val::Str(match text(0).as_deref().unwrap_or("NFC") {
                    "NFC" => s.nfc().collect(),
                    "NFD" => s.nfd().collect(),
                    "NFKC" => s.nfkc().collect(),
                    "NFKD" => s.nfkd().collect(),
                    _ => return None,
                }),
                _ => return None,
            })
        }
        Val::Arr(items) => Some(match method {
            "join" => {
                let sep = text(0).unwrap_or_else(|| ",".to_string());
                let parts: Option<Vec<String>> = items.iter().map(Val::to_js_string).collect();
                Val::Str(parts?.join(&sep))
            }
            "toString" => Val::Str(receiver.to_js_string()?),
            "reverse" => Val::Arr(items.iter().rev().cloned().collect()),
            "concat" => {
                let mut all = items.clone();
                for a in args {
                    match a.first()? {
                        Val::Arr(more) => all.extend(more.iter().cloned()),
                        other => all.push(other.clone()),
                    }
                }
                Val::Arr(all)
            }
            "slice" => {
                let len = items.len();
                let a = relative(num(0).unwrap_or(0.0), len);
                let b = relative(num(1).unwrap_or(len as f64), len).max(a);
                Val::Arr(items[a..b].to_vec())
            }
            "at" => items
                .get(relative(num(0).unwrap_or(0.0), items.len()))?
                .clone(),
            _ => return None,
        }),
        Val::Num(n) if method == "toString" => {
            let radix = num(0).unwrap_or(10.0);
            if radix == 10.0 {
                return Some(Val::Str(number_to_string(*n)));
            }
            if n.fract() != 0.0
                || n.abs() > 9_007_199_254_740_991.0
                || !(2.0..=36.0).contains(&radix)
            {
                return None;
            }
            let (mut value, radix) = (n.abs() as u64, radix as u64);
            let mut digits = Vec::new();
            loop {
                digits.push(char::from_digit((value % radix) as u32, radix as u32)?);
                value /= radix;
                if value == 0 {
                    break;
                }
            }
            if *n < 0.0 {
                digits.push('-');
            }
            Some(Val::Str(digits.iter().rev().collect()))
        }
        _ => None,
    }
}

/// `JSON.parse` of a string, a number or a (nested) array of those.
fn parse_json(text: &str) -> Option<Val> {
    fn value(chars: &mut std::iter::Peekable<std::str::Chars<'_>>, depth: usize) -> Option<Val> {
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        match chars.peek()? {
            '"' => {
                chars.next();
                let mut out = String::new();
                loop {
                    match chars.next()? {
                        '"' => return Some(Val::Str(out)),
                        '\\' => out.push(match chars.next()? {
                            'n' => '\n',
                            't' => '\t',
                            'r' => '\r',
                            'b' => '\u{8}',
                            'f' => '\u{c}',
                            'u' => {
                                let hex: String = chars.by_ref().take(4).collect();
                                char::from_u32(u32::from_str_radix(&hex, 16).ok()?)?
                            }
                            other => other,
                        }),
                        c => out.push(c),
                    }
                }
            }
            '[' if depth < FOLD_MAX_DEPTH => {
                chars.next();
                let mut items = Vec::new();
                loop {
                    while chars.peek().is_some_and(|c| c.is_whitespace() || *c == ',') {
                        chars.next();
                    }
                    if chars.peek() == Some(&']') {
                        chars.next();
                        return Some(Val::Arr(items));
                    }
                    items.push(value(chars, depth + 1)?);
                }
            }
            _ => {
                let mut number = String::new();
                while let Some(c) = chars.next_if(|c| !matches!(c, ',' | ']') && !c.is_whitespace())
                {
                    number.push(c);
                }
                number.parse().ok().map(Val::Num)
            }
        }
    }
    value(&mut text.chars().peekable(), 0)
}

fn base64_decode(s: &str) -> Option<String> {
    let mut bits = 0u32;
    let mut count = 0;
    let mut out = String::new();
    for c in s.chars().filter(|c| !c.is_ascii_whitespace() && *c != '=') {
        let v = match c {
            'A'..='Z' => c as u32 - 'A' as u32,
            'a'..='z' => c as u32 - 'a' as u32 + 26,
            '0'..='9' => c as u32 - '0' as u32 + 52,
            '+' => 62,
            '/' => 63,
            _ => return None,
        };
        bits = (bits << 6) | v;
        count += 6;
        if count >= 8 {
            count -= 8;
            out.push(char::from(((bits >> count) & 0xFF) as u8));
        }
    }
    Some(out)
}

/// `decodeURIComponent` (UTF-8 percent escapes) or, with `legacy`,
/// `unescape` (`%XX` as Latin-1 and `%uXXXX`).
fn percent_decode(s: &str, legacy: bool) -> Option<String> {
    let hex = |h: &str| u32::from_str_radix(h, 16).ok();
    let mut bytes = Vec::new();
    let mut out = String::new();
    let mut rest = s;
    while let Some(c) = rest.chars().next() {
        if c == '%' {
            let wide = rest.get(2..6).and_then(hex).and_then(char::from_u32);
            if let (true, Some("u"), Some(ch)) = (legacy, rest.get(1..2), wide) {
                out.push(ch);
                rest = &rest[6..];
                continue;
            }
            if let Some(v) = rest.get(1..3).and_then(hex) {
                if legacy {
                    out.push(char::from(v as u8));
                } else {
                    bytes.push(v as u8);
                }
                rest = &rest[3..];
                continue;
            }
        }
        if !bytes.is_empty() {
            out.push_str(&String::from_utf8(std::mem::take(&mut bytes)).ok()?);
        }
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    if !bytes.is_empty() {
        out.push_str(&String::from_utf8(bytes).ok()?);
    }
    Some(out)
}

// ============================================================================
// Pass 2: the rules
// ============================================================================

struct Checker<'a, 'f> {
    src: &'a str,
    facts: &'f Facts<'a>,
}

impl<'a> Pass<'a> for Checker<'a, '_> {
    fn enter(&mut self, kind: AstKind<'a>, parents: &[Frame<'a>]) -> Option<Rejection> {
        match kind {
            AstKind::IdentifierReference(id) => self.identifier(id, parents),
            AstKind::BindingIdentifier(b) => self.banned_identifier(&b.name, b.span),
            AstKind::ThisExpression(t) if this_is_global(parents, t.span) => {
                self.global_use(t.span, parents)
            }
            AstKind::StaticMemberExpression(m) => self.static_member(m, parents),
            AstKind::ComputedMemberExpression(m) => self.computed_member(m, parents),
            AstKind::CallExpression(c) => self.timer(&c.callee, &c.arguments, c.span),
            AstKind::TaggedTemplateExpression(t) => self.tag(&t.tag, t.span),
            AstKind::ImportExpression(e) => Some(self.reject("dynamic-import", e.span)),
            AstKind::ImportMeta(e) => Some(self.reject("import-meta", e.span)),
            AstKind::WithStatement(s) => Some(self.reject(
                "with-statement",
                Span::new(s.span.start, s.body.span().start),
            )),
            AstKind::ObjectProperty(p) if !p.computed => {
                let key = p.key.static_name()?;
                (fold_name(&key) == "__proto__").then(|| self.reject("proto", p.key.span()))
            }
            AstKind::BindingProperty(p) => self.pattern_key(&p.key, p.computed, parents),
            AstKind::AssignmentTargetPropertyProperty(p) => {
                self.pattern_key(&p.name, p.computed, parents)
            }
            AstKind::AssignmentTargetPropertyIdentifier(p) => {
                let name = fold_name(&p.binding.name);
                property_rule(&name).map(|rule| self.reject(rule, p.binding.span))
            }
            _ => None,
        }
    }
}

impl<'a> Checker<'a, '_> {
    fn reject(&self, rule: &'static str, span: Span) -> Rejection {
        rejection(self.src, rule, span, String::new())
    }

    fn reject_member(&self, rule: &'static str, span: Span) -> Rejection {
        rejection_keep(self.src, rule, span, String::new(), Keep::Tail)
    }

    fn kinds(&self, e: &Expression<'_>, parents: &[Frame<'_>], at: Span) -> Kinds {
        expr_kinds(self.facts, e, this_is_global(parents, at), 0)
    }

    fn banned_identifier(&self, name: &str, span: Span) -> Option<Rejection> {
        spellings(self.src, name, span)
            .iter()
            .find_map(|n| identifier_rule(n))
            .map(|rule| self.reject(rule, span))
    }

    fn identifier(&self, id: &IdentifierReference<'_>, parents: &[Frame<'a>]) -> Option<Rejection> {
        if let Some(r) = self.banned_identifier(&id.name, id.span) {
            return Some(r);
        }
        if self.facts.globals.contains(fold_name(&id.name).as_ref()) {
            return self.global_use(id.span, parents);
        }
        None
    }

    /// A property read `object.name` (or `object[name]` with a constant key).
    fn property(
        &self,
        name: &str,
        computed: bool,
        object: &Expression<'_>,
        span: Span,
        parents: &[Frame<'a>],
    ) -> Option<Rejection> {
        let rule = match name {
            "constructor" if computed => "computed-constructor",
            "constructor" if safe_constructor_use(parents, span) => return None,
            "raw" if self.kinds(object, parents, span).string => "string-raw",
            other => property_rule(other)?,
        };
        Some(self.reject_member(rule, span))
    }

    fn static_member(
        &self,
        m: &StaticMemberExpression<'_>,
        parents: &[Frame<'a>],
    ) -> Option<Rejection> {
        spellings(self.src, &m.property.name, m.property.span)
            .iter()
            .find_map(|name| self.property(name, false, &m.object, m.span, parents))
    }

    fn computed_member(
        &self,
        m: &ComputedMemberExpression<'_>,
        parents: &[Frame<'a>],
    ) -> Option<Rejection> {
        let keys = Folder::new(self.facts).strings(&m.expression);
        if let Some(r) = keys
            .iter()
            .find_map(|k| self.property(&fold_name(k), true, &m.object, m.span, parents))
        {
            return Some(r);
        }
        // On a function only plain literal keys are allowed: folding cannot see
        // mutations (`parts.push("con")`), so it is not trusted here.
        let literal = match m.expression.without_parentheses() {
            Expression::StringLiteral(_) | Expression::NumericLiteral(_) => true,
            Expression::TemplateLiteral(t) => t.expressions.is_empty(),
            _ => false,
        };
        (!literal && self.is_function_value(&m.object))
            .then(|| self.reject_member("computed-constructor", m.span))
    }

    /// Values that are (almost certainly) functions or classes, whose
    /// computed properties can reach `constructor`: function and class
    /// literals, names bound to them, built-in constructors, `arguments.callee`,
    /// `f.bind`/`f.call`/`f.apply`, and methods of well-known namespaces
    /// (`Math.max`, `JSON.parse`, `forge.callTool`, ...).
    fn is_function_value(&self, e: &Expression<'_>) -> bool {
        match e.without_parentheses() {
            Expression::ArrowFunctionExpression(_)
            | Expression::FunctionExpression(_)
            | Expression::ClassExpression(_) => true,
            Expression::Identifier(id) => {
                let name = fold_name(&id.name);
                self.facts.functions.contains(name.as_ref()) || listed(BUILTIN_FUNCTIONS, &name)
            }
            Expression::StaticMemberExpression(m) => {
                let property = fold_name(&m.property.name);
                if matches!(
                    property.as_ref(),
                    "callee" | "caller" | "bind" | "call" | "apply"
                ) {
                    return true;
                }
                let Expression::Identifier(object) = m.object.without_parentheses() else {
                    return false;
                };
                let object = fold_name(&object.name);
                property != "prototype"
                    && (listed(BUILTIN_NAMESPACES, &object) || listed(BUILTIN_FUNCTIONS, &object))
            }
            _ => false,
        }
    }

    /// `setTimeout`/`setInterval` must get a function, never code in a string.
    fn timer(
        &self,
        callee: &Expression<'_>,
        args: &[Argument<'_>],
        span: Span,
    ) -> Option<Rejection> {
        let name = match callee.without_parentheses() {
            Expression::Identifier(id) => fold_name(&id.name),
            Expression::StaticMemberExpression(m) => fold_name(&m.property.name),
            _ => return None,
        };
        if !matches!(name.as_ref(), "setTimeout" | "setInterval" | "setImmediate") {
            return None;
        }
        let first = args.first()?;
        let callable = first.as_expression().is_some_and(|e| match e.without_parentheses() {
            Expression::ArrowFunctionExpression(_) | Expression::FunctionExpression(_) => true,
            Expression::Identifier(_) | Expression::StaticMemberExpression(_) | Expression::ComputedMemberExpression(_) => {
                Folder::new(self.facts).strings(e).is_empty()
            }
            Expression::CallExpression(c) => {
                matches!(c.callee.without_parentheses(), Expression::StaticMemberExpression(m) if m.property.name == "bind")
            }
            _ => false,
        });
        (!callable).then(|| self.reject("timer-string", span))
    }

    /// `String.raw` used as a tag, however it is spelled.
    fn tag(&self, tag: &Expression<'_>, span: Span) -> Option<Rejection> {
        let names = match tag.without_parentheses() {
            Expression::StaticMemberExpression(m) => {
                spellings(self.src, &m.property.name, m.property.span)
            }
            Expression::ComputedMemberExpression(m) => {
                Folder::new(self.facts).strings(&m.expression)
            }
            _ => return None,
        };
        names
            .iter()
            .any(|n| fold_name(n) == "raw")
            .then(|| self.reject("string-raw", span))
    }

    /// Keys of destructuring patterns: `const { constructor: c } = f`.
    fn pattern_key(
        &self,
        key: &PropertyKey<'_>,
        computed: bool,
        parents: &[Frame<'a>],
    ) -> Option<Rejection> {
        let names = match (computed, key.as_expression()) {
            (true, Some(e)) => Folder::new(self.facts).strings(e),
            _ => key
                .static_name()
                .map(|n| vec![n.into_owned()])
                .unwrap_or_default(),
        };
        for name in &names {
            let name = fold_name(name);
            let rule = match name.as_ref() {
                "raw" => {
                    let source = pattern_source(parents);
                    if source.is_some_and(|s| self.kinds(s, parents, key.span()).string) {
                        Some("string-raw")
                    } else {
                        None
                    }
                }
                other => property_rule(other),
            };
            if let Some(rule) = rule {
                return Some(self.reject(rule, key.span()));
            }
        }
        None
    }

    /// Where the global object (a name bound to it, or a global `this`) at
    /// `span` flows. Allowed: `g.name`, `typeof g`, comparisons, tests, plain
    /// aliases (`const g2 = g`) and destructuring with static keys. Rejected:
    /// `g[x]` (computed-global) and anything that lets it escape untracked,
    /// such as call arguments, return values, array elements or object values
    /// (global-escape).
    fn global_use(&self, span: Span, parents: &[Frame<'a>]) -> Option<Rejection> {
        let mut child = span;
        for frame in parents.iter().rev() {
            let here = frame.kind.span();
            match frame.kind {
                AstKind::ParenthesizedExpression(_)
                | AstKind::ChainExpression(_)
                | AstKind::LogicalExpression(_)
                | AstKind::AwaitExpression(_) => {}
                AstKind::ConditionalExpression(c) if c.test.span() == child => return None,
                AstKind::ConditionalExpression(_) => {}
                AstKind::SequenceExpression(s) => {
                    if s.expressions.last().map(GetSpan::span) != Some(child) {
                        return None;
                    }
                }
                AstKind::AssignmentExpression(a) => {
                    if a.left.span() == child {
                        return None;
                    }
                    match &a.left {
                        AssignmentTarget::AssignmentTargetIdentifier(_)
                        | AssignmentTarget::ArrayAssignmentTarget(_) => {}
                        AssignmentTarget::ObjectAssignmentTarget(o) => {
                            let computed =
                                o.properties.iter().find_map(|p| match p {
                                    AssignmentTargetProperty::AssignmentTargetPropertyProperty(
                                        p,
                                    ) if p.computed => Some(p.span),
                                    _ => None,
                                });
                            if let Some(at) = computed {
                                return Some(self.reject("computed-global", at));
                            }
                        }
                        _ => return Some(self.reject("global-escape", child)),
                    }
                }
                AstKind::StaticMemberExpression(m) => {
                    if m.object.span() != child
                        || !GLOBAL_NAMES.contains(&fold_name(&m.property.name).as_ref())
                    {
                        return None;
                    }
                }
                AstKind::ComputedMemberExpression(m) => {
                    return (m.object.span() == child)
                        .then(|| self.reject_member("computed-global", here));
                }
                AstKind::CallExpression(c) if c.callee.span() == child => return None,
                AstKind::NewExpression(c) if c.callee.span() == child => return None,
                AstKind::TaggedTemplateExpression(t) if t.tag.span() == child => return None,
                AstKind::VariableDeclarator(d) => return self.destructure_global(&d.id),
                AstKind::FormalParameter(p) => return self.destructure_global(&p.pattern),
                AstKind::AssignmentPattern(p) if p.right.span() == child => {
                    return self.destructure_global(&p.left);
                }
                AstKind::AssignmentPattern(_)
                | AstKind::AssignmentTargetWithDefault(_)
                | AstKind::AssignmentTargetPropertyIdentifier(_)
                | AstKind::AssignmentTargetPropertyProperty(_)
                | AstKind::ArrayAssignmentTarget(_)
                | AstKind::ObjectAssignmentTarget(_)
                | AstKind::AssignmentTargetRest(_)
                | AstKind::PrivateFieldExpression(_)
                | AstKind::UnaryExpression(_)
                | AstKind::UpdateExpression(_)
                | AstKind::BinaryExpression(_)
                | AstKind::PrivateInExpression(_)
                | AstKind::TemplateLiteral(_)
                | AstKind::ExpressionStatement(_)
                | AstKind::IfStatement(_)
                | AstKind::WhileStatement(_)
                | AstKind::DoWhileStatement(_)
                | AstKind::ForStatement(_)
                | AstKind::ForInStatement(_)
                | AstKind::ForOfStatement(_)
                | AstKind::SwitchStatement(_)
                | AstKind::SwitchCase(_)
                | AstKind::WithStatement(_) => return None,
                _ => return Some(self.reject("global-escape", child)),
            }
            child = here;
        }
        None
    }

    /// Destructuring the global object: static keys only (nested through
    /// `globalThis`-like keys).
    fn destructure_global(&self, pattern: &BindingPattern<'_>) -> Option<Rejection> {
        match pattern {
            BindingPattern::ObjectPattern(o) => o.properties.iter().find_map(|p| {
                if p.computed {
                    return Some(self.reject("computed-global", p.span));
                }
                let key = p.key.static_name()?;
                if GLOBAL_NAMES.contains(&fold_name(&key).as_ref()) {
                    self.destructure_global(&p.value)
                } else {
                    None
                }
            }),
            BindingPattern::AssignmentPattern(p) => self.destructure_global(&p.left),
            _ => None,
        }
    }
}

/// `x.constructor` is allowed only where the constructor cannot be called or
/// kept: `x.constructor.name`, comparisons and `typeof`.
fn safe_constructor_use(parents: &[Frame<'_>], span: Span) -> bool {
    let mut child = span;
    for frame in parents.iter().rev() {
        match frame.kind {
            AstKind::ParenthesizedExpression(_) | AstKind::ChainExpression(_) => {
                child = frame.kind.span()
            }
            AstKind::StaticMemberExpression(m) => {
                return m.object.span() == child && fold_name(&m.property.name) == "name";
            }
            AstKind::BinaryExpression(b) => {
                return matches!(
                    b.operator,
                    BinaryOperator::Equality
                        | BinaryOperator::Inequality
                        | BinaryOperator::StrictEquality
                        | BinaryOperator::StrictInequality
                        | BinaryOperator::Instanceof
                );
            }
            AstKind::UnaryExpression(u) => return u.operator == UnaryOperator::Typeof,
            _ => return false,
        }
    }
    false
}

/// The value a destructuring pattern (the innermost parent) takes apart,
/// when it is written right there.
fn pattern_source<'a>(parents: &[Frame<'a>]) -> Option<&'a Expression<'a>> {
    let holder = parents.iter().rev().nth(1)?;
    match holder.kind {
        AstKind::VariableDeclarator(d) => d.init.as_ref(),
        AstKind::AssignmentExpression(a) => Some(&a.right),
        AstKind::AssignmentPattern(p) => Some(&p.right),
        AstKind::FormalParameter(p) => p.initializer.as_deref(),
        _ => None,
    }
}
