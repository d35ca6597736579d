//! Stack traces, collapsed to one marker per run of frames.

use super::{MARK_STACK, re};
use regex::Regex;
use std::borrow::Cow;
use std::sync::LazyLock;

static STACK_REST_HEADER_RE: LazyLock<Regex> =
    LazyLock::new(|| re(r"^[ \t]*(?:Caused by:|goroutine [0-9]+ \[[^\]]*\]:[ \t]*$)"));

static STACK_BLOCK_HEADER_RE: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"^[ \t]*(?:Traceback \(most recent call last\):|[Ss]tack backtrace:|Backtrace:|Stack ?trace:)[ \t]*$",
    )
});

static STACK_PY_FILE_RE: LazyLock<Regex> =
    LazyLock::new(|| re(r#"^[ \t]*File "[^"]*", line [0-9]+"#));

static STACK_FRAME_RE: LazyLock<Regex> = LazyLock::new(|| {
    re(concat!(
        // JS / Java / .NET / Rust `at` lines ending in a location
        r"^[ \t]+at[ \t]+[^\r\n]*?(?::[0-9]+\)?|:line [0-9]+|\((?:Native Method|Unknown Source|native|index [0-9]+)\)|<anonymous>\)?)(?:[ \t]*\{)?[ \t]*$",
        // Java / .NET `at Qualified.Name(args)` without a location
        r"|^[ \t]+at[ \t]+[\w$.<>\[\]/`+-]+\([^\r\n]*\)[ \t]*$",
        r"|^[ \t]+\.\.\. [0-9]+ (?:more|common frames omitted)[ \t]*$",
        // Rust backtrace frames: `  3: core::panicking::panic_fmt`, `  4: 0x55d0 - <T as …>`
        r"|^[ \t]*[0-9]+:[ \t]+(?:0x[0-9a-fA-F]+[ \t]+-[ \t]+)?(?:<|[A-Za-z_][A-Za-z0-9_]*::)",
        r"|^[ \t]*[0-9]+:[ \t]+0x[0-9a-fA-F]+",
        // PHP `#0 /x.php(12): f()`, `#1 {main}`
        r"|^#[0-9]+ (?:\{main\}|\S+\([0-9]+\): )",
        // .NET `--- End of stack trace from previous location ---`
        r"|^[ \t]*--- End of [^\r\n]*stack trace[^\r\n]*---[ \t]*$",
        // Ruby `from /x.rb:10:in `f'`
        r"|^[ \t]+from \S+:[0-9]+:in ",
    ))
});

#[derive(Clone, Copy, PartialEq)]
enum StackState {
    Normal,
    /// After a header like `Traceback (most recent call last):`: indented lines are frames.
    Indented,
    /// After a Python `File "…", line N` line: deeper-indented lines are its source.
    PySource(usize),
    /// After `Caused by:` or a Go `goroutine N [running]:`: everything is stack.
    Rest,
}

fn indent_of(line: &str) -> usize {
    line.len() - line.trim_start_matches([' ', '\t']).len()
}

fn is_stack_line(body: &str, state: &mut StackState) -> bool {
    if *state == StackState::Rest {
        return true;
    }
    if STACK_REST_HEADER_RE.is_match(body) {
        *state = StackState::Rest;
        return true;
    }
    if STACK_BLOCK_HEADER_RE.is_match(body) {
        *state = StackState::Indented;
        return true;
    }
    match *state {
        StackState::Indented => {
            if body.starts_with([' ', '\t']) && !body.trim().is_empty() {
                return true;
            }
            *state = StackState::Normal;
        }
        StackState::PySource(ind) => {
            if indent_of(body) > ind && !body.trim().is_empty() && !STACK_PY_FILE_RE.is_match(body)
            {
                return true;
            }
            *state = StackState::Normal;
        }
        StackState::Normal | StackState::Rest => {}
    }
    if STACK_PY_FILE_RE.is_match(body) {
        *state = StackState::PySource(indent_of(body));
        return true;
    }
    STACK_FRAME_RE.is_match(body)
}

/// Collapses every run of stack-trace lines into one `[REDACTED:stack]` line. Stack
/// frames name files, functions and line numbers of the downstream server; the message
/// line(s) around them are kept (for Python, the exception line after the traceback).
/// From a `Caused by:` line (Java, anyhow) or a Go `goroutine N [...]:` header on,
/// everything is stack: the first line of the message says what failed.
pub(crate) fn collapse_stacks(text: &str) -> Cow<'_, str> {
    let mut out = String::new();
    let mut changed = false;
    let mut state = StackState::Normal;
    let mut in_run = false;
    let mut run_eol = "";
    for line in text.split_inclusive('\n') {
        let body = line.trim_end_matches(['\n', '\r']);
        let eol = &line[body.len()..];
        if is_stack_line(body, &mut state) {
            if !in_run {
                out.push_str(MARK_STACK);
                in_run = true;
            }
            run_eol = eol;
            changed = true;
        } else {
            if in_run {
                out.push_str(run_eol);
                in_run = false;
            }
            out.push_str(line);
        }
    }
    if in_run {
        out.push_str(run_eol);
    }
    if changed {
        Cow::Owned(out)
    } else {
        Cow::Borrowed(text)
    }
}
