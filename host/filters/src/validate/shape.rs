//! The shape of a script and the walk over it.
//!
//! A quickforge script is exactly one expression statement holding an async
//! arrow function ([`check_shape`], rule `not-async-arrow`). [`Walker`] visits
//! the AST once with a parent stack, counts nesting
//! ([`super::ValidatorLimits::max_depth`], rule `too-deep`) and hands each
//! node to a [`Pass`] (the rules) with its ancestors. Its own recursion is
//! bounded by [`PHYSICAL_LIMIT`], whatever the depth count says, so no input
//! can overflow the validator thread's stack.

use oxc_ast::AstKind;
use oxc_ast::ast::*;
use oxc_ast_visit::{Visit, walk};
use oxc_span::{GetSpan, Span};

use super::Rejection;
use super::messages::{Rule, rejection, too_deep};

/// Ceiling on the recursion of the AST walk (every nested expression,
/// statement or pattern, chains included), and the cap of `max_depth`: far
/// above any real script, and with the pre-scan's bound what keeps the walk
/// inside the validator thread's stack.
pub(super) const PHYSICAL_LIMIT: usize = 1000;

/// Exactly one async arrow function, and nothing else but empty statements
/// and comments.
pub(super) fn check_shape(code: &str, program: &Program<'_>) -> Result<(), Rejection> {
    let not_arrow = |span: Span| rejection(code, Rule::NotAsyncArrow, span, "");
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

/// A node on the walk's parent stack, with its nesting depth.
#[derive(Clone, Copy)]
pub(super) struct Frame<'a> {
    pub(super) kind: AstKind<'a>,
    depth: usize,
}

/// One analysis over the AST; `enter` sees each node before its children,
/// with its ancestors (innermost last).
pub(super) trait Pass<'a> {
    fn enter(&mut self, kind: AstKind<'a>, parents: &[Frame<'a>]) -> Option<Rejection>;
}

/// The walk: depth accounting and the recursion guard around a [`Pass`].
pub(super) struct Walker<'a, P> {
    src: &'a str,
    max_depth: usize,
    frames: Vec<Frame<'a>>,
    physical: usize,
    pub(super) failure: Option<Rejection>,
    pass: P,
}

impl<'a, P: Pass<'a>> Walker<'a, P> {
    pub(super) fn new(src: &'a str, max_depth: usize, pass: P) -> Self {
        Self {
            src,
            max_depth,
            frames: Vec::with_capacity(64),
            physical: 0,
            failure: None,
            pass,
        }
    }

    /// Walks into a node with `walk`, one level deeper, unless the walk
    /// has failed or is [`PHYSICAL_LIMIT`] nodes deep already.
    fn nested(&mut self, span: Span, walk: impl FnOnce(&mut Self)) {
        if self.descend(span) {
            self.physical += 1;
            walk(self);
            self.physical -= 1;
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
        self.nested(it.span(), |w| walk::walk_expression(w, it));
    }

    fn visit_statement(&mut self, it: &Statement<'a>) {
        self.nested(it.span(), |w| walk::walk_statement(w, it));
    }

    fn visit_binding_pattern(&mut self, it: &BindingPattern<'a>) {
        self.nested(it.span(), |w| walk::walk_binding_pattern(w, it));
    }

    fn visit_assignment_target(&mut self, it: &AssignmentTarget<'a>) {
        self.nested(it.span(), |w| walk::walk_assignment_target(w, it));
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
