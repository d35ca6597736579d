//! Pre-scan: bound the parser's recursion before parsing.
//!
//! oxc parses by recursive descent without a depth limit (no recursion guard:
//! oxc-project/oxc#21953, #24375): `(((…` a few thousand
//! levels deep overflows a 2 MiB stack in an unoptimised build. The pre-scan
//! estimates, at every point of the source, how deep the parser's recursion can
//! be: one unit per open bracket (`(`, `[`, `{`, `${`) plus one per pending
//! right-recursive token of the innermost open bracket (`=`, `?`, `:`, `=>`,
//! `**`, `...`, `if`, `else`, `while`, `for`, `with`, `do`, `yield`,
//! `extends`; and the prefix operators `!`, `~`, unary `+`/`-`, `++`/`--`,
//! `new`, `typeof`, `void`, `delete`, `await`, which end at the next binary
//! operator). Pending tokens are cleared at `;`, `,` and at line breaks where
//! automatic semicolon insertion must end the statement.
//!
//! Strings, comments, template text and regular expressions are skipped. The
//! one real ambiguity of a JavaScript lexer is whether `/` after `}` (or after
//! `of`, `await`, `yield` used as names) starts a regular expression; there the
//! scan becomes pessimistic for the rest of the line: every opening bracket and
//! every token counts and no closing bracket does, so no reading of the line can
//! make the estimate too small. If the ambiguity could spill into a template or
//! block comment, the rest of the input is scanned that way.

/// Ceiling of the pre-scan's nesting estimate (brackets plus pending
/// right-recursive operators such as `=`, `?`, `=>`, `!`, `new`). Far above
/// any real script, far below what overflows the parser.
pub(super) const PRESCAN_LIMIT: usize = 1000;

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
    /// The largest `total` so far.
    deepest: usize,
    prev: Prev,
    newline: bool,
    kw_paren_next: bool,
    raw_line: bool,
    raw_all: bool,
}

/// The deepest nesting estimate anywhere in `src`, or the byte offset where
/// the estimate first exceeds [`PRESCAN_LIMIT`].
pub(super) fn prescan(src: &str) -> Result<usize, usize> {
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
        deepest: 0,
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
    Ok(scan.deepest)
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

    fn check(&mut self) -> Result<(), usize> {
        self.deepest = self.deepest.max(self.total);
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
