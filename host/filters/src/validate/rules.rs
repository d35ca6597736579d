//! The rules, on literal spellings.
//!
//! Each rule looks at what the script says in so many words: a name as
//! written (an identifier, a property name, a destructuring key), or a key
//! written as a literal string or a concatenation of literals. Names are
//! compared as written and, when they are not ASCII, after folding Unicode
//! look-alikes ([`crate::fold`]), so `еval` (Cyrillic е), `ｅｖａｌ`
//! (fullwidth) or `e\u{200D}val` count as `eval`; oxc has already decoded
//! `\u0065val`. Nothing is evaluated and no alias is followed: what a script
//! computes at run time meets the runtime's containment.
//!
//! A name used only as the operand of `typeof` or the right side of
//! `instanceof` is never refused: it can be neither called nor kept
//! (`typeof require === "function"` is a feature check).

use oxc_ast::AstKind;
use oxc_ast::ast::*;
use oxc_span::{GetSpan, Span};

use super::Rejection;
use super::messages::{Keep, Rule, rejection, rejection_keep};
use super::shape::{Frame, Pass};
use crate::fold::fold;

/// Identifiers that name what a script may not reach.
const BANNED_NAMES: &[(&str, Rule)] = &[
    ("eval", Rule::Eval),
    ("Function", Rule::FunctionConstructor),
    ("AsyncFunction", Rule::FunctionConstructor),
    ("GeneratorFunction", Rule::FunctionConstructor),
    ("AsyncGeneratorFunction", Rule::FunctionConstructor),
    ("require", Rule::Require),
    ("Reflect", Rule::Reflect),
    ("Proxy", Rule::Proxy),
    ("WebAssembly", Rule::WebAssembly),
];

/// Property names refused on any object (besides [`BANNED_NAMES`], which
/// are refused as properties too: `globalThis.eval`).
const BANNED_PROPERTIES: &[(&str, Rule)] = &[
    ("constructor", Rule::FunctionConstructor),
    ("__proto__", Rule::Proto),
    ("__defineGetter__", Rule::Proto),
    ("__defineSetter__", Rule::Proto),
    ("__lookupGetter__", Rule::Proto),
    ("__lookupSetter__", Rule::Proto),
    ("getPrototypeOf", Rule::Proto),
    ("setPrototypeOf", Rule::Proto),
];

/// Names that denote the global object.
const GLOBAL_NAMES: &str = "globalThis self window global";

/// Built-in globals that are functions (a computed access on them with a
/// non-literal key can reach `constructor`).
const BUILTIN_FUNCTIONS: &str = "Object Array String Number Boolean Symbol BigInt Date RegExp Error \
    TypeError RangeError SyntaxError ReferenceError EvalError URIError AggregateError Promise Map Set \
    WeakMap WeakSet WeakRef ArrayBuffer DataView Uint8Array Int32Array Float64Array parseInt \
    parseFloat isNaN isFinite encodeURIComponent decodeURIComponent encodeURI decodeURI escape \
    unescape atob btoa setTimeout setInterval queueMicrotask structuredClone";

/// Built-in (and quickforge) namespaces whose properties are functions.
const BUILTIN_NAMESPACES: &str = "Math JSON Atomics Intl console forge manifest";

/// Most pieces of a literal concatenation that [`literal_string`] joins:
/// keys are single words, and a bound keeps the join's recursion and size
/// small whatever the input (longer concatenations count as not literal).
const LITERAL_PIECES: usize = 64;

/// The first of `words` that `name` spells: as written, or, when `name` is
/// not ASCII, after folding it (once) to its plain spelling.
fn spelled_as<'w>(name: &str, mut words: impl Iterator<Item = &'w str>) -> Option<&'w str> {
    if name.is_ascii() {
        return words.find(|w| *w == name);
    }
    let folded = fold(name);
    words.find(|w| folded == w.to_ascii_lowercase())
}

/// Whether `name` is `word` as written or, if not ASCII, folds to it.
fn spelled(name: &str, word: &str) -> bool {
    spelled_as(name, std::iter::once(word)).is_some()
}

/// Whether `name` spells one of the space-separated words of `list`.
fn listed(list: &str, name: &str) -> bool {
    spelled_as(name, list.split_whitespace()).is_some()
}

/// The rule of the entry of `table` that `name` spells.
fn lookup(table: &[(&str, Rule)], name: &str) -> Option<Rule> {
    let word = spelled_as(name, table.iter().map(|e| e.0))?;
    table.iter().find(|e| e.0 == word).map(|e| e.1)
}

/// The rule for reading a property named `name`, on any object.
fn property_rule(name: &str) -> Option<Rule> {
    lookup(BANNED_PROPERTIES, name).or_else(|| lookup(BANNED_NAMES, name))
}

/// The string a key expression spells literally: a string, number or
/// template literal, or a `+` of such (parenthesised or not).
fn literal_string(e: &Expression<'_>) -> Option<String> {
    let mut out = String::new();
    let mut budget = LITERAL_PIECES;
    append_literal(e, &mut out, &mut budget).then_some(out)
}

fn append_literal(e: &Expression<'_>, out: &mut String, budget: &mut usize) -> bool {
    if *budget == 0 {
        return false;
    }
    *budget -= 1;
    match e.without_parentheses() {
        Expression::StringLiteral(s) => out.push_str(&s.value),
        Expression::NumericLiteral(n) => out.push_str(&n.value.to_string()),
        Expression::TemplateLiteral(t) => {
            for (i, quasi) in t.quasis.iter().enumerate() {
                let Some(cooked) = &quasi.value.cooked else {
                    return false;
                };
                out.push_str(cooked);
                if let Some(e) = t.expressions.get(i)
                    && !append_literal(e, out, budget)
                {
                    return false;
                }
            }
        }
        Expression::BinaryExpression(b) if b.operator == BinaryOperator::Addition => {
            return append_literal(&b.left, out, budget) && append_literal(&b.right, out, budget);
        }
        _ => return false,
    }
    true
}

/// Whether `e` is visibly a string: a string or template literal, or a `+`
/// with one among its first [`LITERAL_PIECES`] operands.
fn visibly_string(e: &Expression<'_>, budget: &mut usize) -> bool {
    *budget = budget.saturating_sub(1);
    match e.without_parentheses() {
        Expression::StringLiteral(_) | Expression::TemplateLiteral(_) => true,
        Expression::BinaryExpression(b)
            if b.operator == BinaryOperator::Addition && *budget > 0 =>
        {
            visibly_string(&b.right, budget) || visibly_string(&b.left, budget)
        }
        _ => false,
    }
}

/// The rules, applied to each node of the walk.
pub(super) struct Checker<'a> {
    src: &'a str,
}

impl<'a> Pass<'a> for Checker<'a> {
    fn enter(&mut self, kind: AstKind<'a>, parents: &[Frame<'a>]) -> Option<Rejection> {
        match kind {
            AstKind::IdentifierReference(id) => self.identifier(id, parents),
            AstKind::BindingIdentifier(b) => {
                lookup(BANNED_NAMES, &b.name).map(|rule| self.reject(rule, b.span))
            }
            AstKind::StaticMemberExpression(m) => {
                self.property(&m.property.name, false, &m.object, m.span, parents)
            }
            AstKind::ComputedMemberExpression(m) => self.computed_member(m, parents),
            AstKind::CallExpression(c) => self.timer(c),
            AstKind::ImportExpression(e) => Some(self.reject(Rule::DynamicImport, e.span)),
            AstKind::ImportMeta(e) => Some(self.reject(Rule::ImportMeta, e.span)),
            AstKind::WithStatement(s) => Some(self.reject(
                Rule::WithStatement,
                Span::new(s.span.start, s.body.span().start),
            )),
            AstKind::ObjectProperty(p) if !p.computed => {
                let key = p.key.static_name()?;
                spelled(&key, "__proto__").then(|| self.reject(Rule::Proto, p.key.span()))
            }
            AstKind::BindingProperty(p) => self.pattern_key(&p.key, p.computed, parents),
            AstKind::AssignmentTargetPropertyProperty(p) => {
                self.pattern_key(&p.name, p.computed, parents)
            }
            AstKind::AssignmentTargetPropertyIdentifier(p) => {
                property_rule(&p.binding.name).map(|rule| self.reject(rule, p.binding.span))
            }
            _ => None,
        }
    }
}

impl<'a> Checker<'a> {
    pub(super) fn new(src: &'a str) -> Self {
        Self { src }
    }

    fn reject(&self, rule: Rule, span: Span) -> Rejection {
        rejection(self.src, rule, span, "")
    }

    fn reject_member(&self, rule: Rule, span: Span) -> Rejection {
        rejection_keep(self.src, rule, span, "", Keep::Tail)
    }

    fn identifier(&self, id: &IdentifierReference<'_>, parents: &[Frame<'a>]) -> Option<Rejection> {
        let rule = lookup(BANNED_NAMES, &id.name)?;
        (!inspected_only(parents, id.span)).then(|| self.reject(rule, id.span))
    }

    /// A property read `object.name`, or `object[key]` with a literal key.
    fn property(
        &self,
        name: &str,
        computed: bool,
        object: &Expression<'_>,
        span: Span,
        parents: &[Frame<'a>],
    ) -> Option<Rejection> {
        let rule = match property_rule(name) {
            Some(Rule::FunctionConstructor) if computed => Rule::ComputedConstructor,
            Some(Rule::FunctionConstructor) if safe_constructor_use(parents, span) => return None,
            Some(rule) => rule,
            None if spelled(name, "raw") && is_string_global(object) => Rule::StringRaw,
            None => return None,
        };
        if rule != Rule::ComputedConstructor && inspected_only(parents, span) {
            return None;
        }
        Some(self.reject_member(rule, span))
    }

    fn computed_member(
        &self,
        m: &ComputedMemberExpression<'_>,
        parents: &[Frame<'a>],
    ) -> Option<Rejection> {
        let found = match literal_string(&m.expression) {
            Some(key) => self.property(&key, true, &m.object, m.span, parents),
            // On a function a key the script computes could be
            // "constructor"; plain literal keys (`f["name"]`) are fine.
            None => is_function_value(&m.object)
                .then(|| self.reject_member(Rule::ComputedConstructor, m.span)),
        };
        found.or_else(|| {
            is_global(&m.object, parents).then(|| self.reject_member(Rule::ComputedGlobal, m.span))
        })
    }

    /// `setTimeout`/`setInterval` must get a function, never code in a
    /// string.
    fn timer(&self, call: &CallExpression<'_>) -> Option<Rejection> {
        let name = match call.callee.without_parentheses() {
            Expression::Identifier(id) => &id.name,
            Expression::StaticMemberExpression(m) => &m.property.name,
            _ => return None,
        };
        if !listed("setTimeout setInterval setImmediate", name) {
            return None;
        }
        let first = call.arguments.first()?.as_expression()?;
        let mut budget = LITERAL_PIECES;
        visibly_string(first, &mut budget).then(|| self.reject(Rule::TimerString, call.span))
    }

    /// Keys of destructuring patterns: `const { constructor: c } = f`, and
    /// computed keys taking the global object apart.
    fn pattern_key(
        &self,
        key: &PropertyKey<'_>,
        computed: bool,
        parents: &[Frame<'a>],
    ) -> Option<Rejection> {
        let source = pattern_source(parents);
        if computed && source.is_some_and(|s| is_global(s, parents)) {
            return Some(self.reject(Rule::ComputedGlobal, key.span()));
        }
        let name = match (computed, key.as_expression()) {
            (true, Some(e)) => literal_string(e)?,
            _ => key.static_name()?.into_owned(),
        };
        let rule = match property_rule(&name) {
            Some(rule) => rule,
            None if spelled(&name, "raw") && source.is_some_and(is_string_global) => {
                Rule::StringRaw
            }
            None => return None,
        };
        Some(self.reject(rule, key.span()))
    }
}

/// Whether `e` is the global object as written: `globalThis`, `self`,
/// `window`, `global`, a `this` that is global, or one of those read off
/// another (`globalThis.globalThis`).
fn is_global(e: &Expression<'_>, parents: &[Frame<'_>]) -> bool {
    match e.without_parentheses() {
        Expression::Identifier(id) => listed(GLOBAL_NAMES, &id.name),
        Expression::ThisExpression(t) => this_is_global(parents, t.span),
        Expression::StaticMemberExpression(m) => {
            listed(GLOBAL_NAMES, &m.property.name) && is_global(&m.object, parents)
        }
        _ => false,
    }
}

/// Whether `e` is the `String` global, as written.
fn is_string_global(e: &Expression<'_>) -> bool {
    matches!(e.without_parentheses(), Expression::Identifier(id) if spelled(&id.name, "String"))
}

/// Values that are visibly functions or classes, whose computed properties
/// can reach `constructor`: function and class literals, built-in
/// constructors, `arguments.callee`, `f.bind`/`f.call`/`f.apply`, and
/// methods of well-known namespaces (`Math.max`, `JSON.parse`,
/// `forge.callTool`, ...).
fn is_function_value(e: &Expression<'_>) -> bool {
    match e.without_parentheses() {
        Expression::ArrowFunctionExpression(_)
        | Expression::FunctionExpression(_)
        | Expression::ClassExpression(_) => true,
        Expression::Identifier(id) => listed(BUILTIN_FUNCTIONS, &id.name),
        Expression::StaticMemberExpression(m) => {
            let property = &m.property.name;
            if listed("callee caller bind call apply", property) {
                return true;
            }
            let Expression::Identifier(object) = m.object.without_parentheses() else {
                return false;
            };
            !spelled(property, "prototype")
                && (listed(BUILTIN_NAMESPACES, &object.name)
                    || listed(BUILTIN_FUNCTIONS, &object.name))
        }
        _ => false,
    }
}

/// Whether the value at `span` is only inspected: the operand of `typeof`
/// or the right side of `instanceof` (through parentheses), so it can be
/// neither called nor kept.
fn inspected_only(parents: &[Frame<'_>], span: Span) -> bool {
    let mut child = span;
    for frame in parents.iter().rev() {
        match frame.kind {
            AstKind::ParenthesizedExpression(_) | AstKind::ChainExpression(_) => {
                child = frame.kind.span();
            }
            AstKind::UnaryExpression(u) => return u.operator == UnaryOperator::Typeof,
            AstKind::BinaryExpression(b) => {
                return b.operator == BinaryOperator::Instanceof && b.right.span() == child;
            }
            _ => return false,
        }
    }
    false
}

/// `x.constructor` is allowed only where the constructor cannot be called or
/// kept: `x.constructor.name`, comparisons and `typeof`.
fn safe_constructor_use(parents: &[Frame<'_>], span: Span) -> bool {
    let mut child = span;
    for frame in parents.iter().rev() {
        match frame.kind {
            AstKind::ParenthesizedExpression(_) | AstKind::ChainExpression(_) => {
                child = frame.kind.span();
            }
            AstKind::StaticMemberExpression(m) => {
                return m.object.span() == child && spelled(&m.property.name, "name");
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

/// Whether `inner` lies within `outer`.
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
