//! The layer order written in `host/lib.rs`, enforced.
//!
//! `host/lib.rs` lists the crate's top-level modules in layers, top to
//! bottom, under its "Layers" heading. A module may use only modules on
//! layers below its own: an edge to its own layer or one above is a
//! failure, whether or not it closes a cycle (an acyclic graph can still
//! point the wrong way). The edges are read the way rustc reads the crate:
//! from `lib.rs` down every `mod` declaration (test modules, `#[cfg(test)]`,
//! left out), every `crate::`/`super::` path in `use` items, types,
//! expressions and macro bodies. Doc comments and strings are not paths, so
//! a doc link does not count.
//!
//! syn parses the files (a Rust parser, not a regular expression over
//! them: a grouped `use crate::{a, b::{c}}`, a path inside a macro and a
//! `#[cfg(test)]` module are all read as the compiler reads them).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use syn::visit::Visit;

/// One `crate::` edge from one top-level module to another.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Edge {
    from: String,
    to: String,
    /// The file it is written in, relative to the crate's root directory.
    file: String,
    /// The path as written, for the failure message.
    path: String,
}

/// The crate read from its root file: top-level modules, the names the
/// root re-exports (name → the module it comes from), and every edge.
struct Crate {
    modules: BTreeSet<String>,
    edges: Vec<Edge>,
}

fn is_cfg_test(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("cfg")
            && a.parse_args::<syn::Meta>()
                .map(|m| m.path().is_ident("test"))
                .unwrap_or(false)
    })
}

fn path_attr(attrs: &[syn::Attribute]) -> Option<String> {
    attrs.iter().find_map(|a| match &a.meta {
        syn::Meta::NameValue(nv) if nv.path.is_ident("path") => match &nv.value {
            syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Str(s),
                ..
            }) => Some(s.value()),
            _ => None,
        },
        _ => None,
    })
}

/// Every path a `use` tree names, flattened (`a::{b, c::d}` → `a::b`, `a::c::d`).
fn flatten(tree: &syn::UseTree, prefix: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
    match tree {
        syn::UseTree::Path(p) => {
            prefix.push(p.ident.to_string());
            flatten(&p.tree, prefix, out);
            prefix.pop();
        }
        syn::UseTree::Name(n) => {
            let mut p = prefix.clone();
            p.push(n.ident.to_string());
            out.push(p);
        }
        syn::UseTree::Rename(r) => {
            let mut p = prefix.clone();
            p.push(r.ident.to_string());
            out.push(p);
        }
        syn::UseTree::Glob(_) => out.push(prefix.clone()),
        syn::UseTree::Group(g) => {
            for t in &g.items {
                flatten(t, prefix, out);
            }
        }
    }
}

/// Collects the paths of one file, with the module path each is written in.
struct Paths {
    /// The module the visitor is in (the file's, plus inline modules).
    module: Vec<String>,
    /// (module written in, path segments)
    found: Vec<(Vec<String>, Vec<String>)>,
    /// Out-of-line `mod x;` declarations met: (module path of x, its #[path]).
    children: Vec<(Vec<String>, Option<String>)>,
}

impl Paths {
    fn note(&mut self, segments: Vec<String>) {
        if matches!(
            segments.first().map(String::as_str),
            Some("crate" | "super")
        ) {
            self.found.push((self.module.clone(), segments));
        }
    }

    /// `crate :: a :: b` and `super :: a` sequences in a macro's tokens.
    fn note_tokens(&mut self, tokens: proc_macro2::TokenStream) {
        let mut run: Vec<String> = Vec::new();
        let mut colons = 0;
        let flush = |run: &mut Vec<String>, this: &mut Paths| {
            if run.len() > 1 {
                this.note(std::mem::take(run));
            }
            run.clear();
        };
        for tt in tokens {
            match tt {
                proc_macro2::TokenTree::Ident(i) => {
                    let s = i.to_string();
                    if run.is_empty() || colons != 2 {
                        flush(&mut run, self);
                        if s == "crate" || s == "super" {
                            run.push(s);
                        }
                    } else {
                        run.push(s);
                    }
                    colons = 0;
                }
                proc_macro2::TokenTree::Punct(p) if p.as_char() == ':' => colons += 1,
                proc_macro2::TokenTree::Group(g) => {
                    flush(&mut run, self);
                    colons = 0;
                    self.note_tokens(g.stream());
                }
                _ => {
                    flush(&mut run, self);
                    colons = 0;
                }
            }
        }
        flush(&mut run, self);
    }
}

impl<'ast> Visit<'ast> for Paths {
    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        if is_cfg_test(&m.attrs) {
            return;
        }
        let mut inner = self.module.clone();
        inner.push(m.ident.to_string());
        match &m.content {
            None => self.children.push((inner, path_attr(&m.attrs))),
            Some((_, items)) => {
                let outer = std::mem::replace(&mut self.module, inner);
                for item in items {
                    self.visit_item(item);
                }
                self.module = outer;
            }
        }
    }

    fn visit_item_fn(&mut self, f: &'ast syn::ItemFn) {
        if !is_cfg_test(&f.attrs) {
            syn::visit::visit_item_fn(self, f);
        }
    }

    fn visit_item_impl(&mut self, i: &'ast syn::ItemImpl) {
        if !is_cfg_test(&i.attrs) {
            syn::visit::visit_item_impl(self, i);
        }
    }

    fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
        if is_cfg_test(&u.attrs) {
            return;
        }
        let mut out = Vec::new();
        flatten(&u.tree, &mut Vec::new(), &mut out);
        for p in out {
            self.note(p);
        }
    }

    fn visit_path(&mut self, p: &'ast syn::Path) {
        self.note(p.segments.iter().map(|s| s.ident.to_string()).collect());
        syn::visit::visit_path(self, p);
    }

    fn visit_macro(&mut self, m: &'ast syn::Macro) {
        self.note_tokens(m.tokens.clone());
        syn::visit::visit_macro(self, m);
    }
}

/// Reads the crate whose root file is `root` (its `lib.rs`).
fn read_crate(root: &Path) -> Crate {
    let dir = root.parent().unwrap().to_path_buf();
    let lib = syn::parse_file(&std::fs::read_to_string(root).unwrap()).unwrap();
    let mut modules = BTreeSet::new();
    let mut reexports = BTreeMap::new();
    for item in &lib.items {
        match item {
            syn::Item::Mod(m) if !is_cfg_test(&m.attrs) => {
                modules.insert(m.ident.to_string());
            }
            syn::Item::Use(u) => {
                let mut out = Vec::new();
                flatten(&u.tree, &mut Vec::new(), &mut out);
                for p in out {
                    if let (Some(first), Some(last)) = (p.first(), p.last()) {
                        reexports.insert(last.clone(), first.clone());
                    }
                }
            }
            _ => {}
        }
    }
    // A root name resolves to the module it is, or the module it is
    // re-exported from; anything else (an external crate) is no edge.
    let top_of = |name: &str| -> Option<String> {
        if modules.contains(name) {
            Some(name.to_string())
        } else {
            reexports
                .get(name)
                .filter(|m| modules.contains(*m))
                .cloned()
        }
    };

    let mut edges = Vec::new();
    // (module path, file) still to read, starting from the root's modules.
    let mut queue: Vec<(Vec<String>, PathBuf)> = Vec::new();
    let mut root_paths = Paths {
        module: vec![],
        found: vec![],
        children: vec![],
    };
    // Only the root's module declarations: the root itself is the table
    // of contents and is exempt.
    for item in &lib.items {
        if let syn::Item::Mod(m) = item {
            root_paths.visit_item_mod(m);
        }
    }
    let locate = |dir: &Path, module: &[String], attr: &Option<String>| -> PathBuf {
        let name = module.last().unwrap();
        if let Some(p) = attr {
            return dir.join(p);
        }
        let flat = dir.join(format!("{name}.rs"));
        if flat.exists() {
            flat
        } else {
            dir.join(name).join("mod.rs")
        }
    };
    for (module, attr) in root_paths.children {
        queue.push((module.clone(), locate(&dir, &module, &attr)));
    }
    while let Some((module, file)) = queue.pop() {
        let text = std::fs::read_to_string(&file)
            .unwrap_or_else(|e| panic!("could not read {}: {e}", file.display()));
        let ast = syn::parse_file(&text)
            .unwrap_or_else(|e| panic!("could not parse {}: {e}", file.display()));
        let mut paths = Paths {
            module: module.clone(),
            found: vec![],
            children: vec![],
        };
        paths.visit_file(&ast);
        // A file's own children live in the folder named after it
        // (`a/mod.rs` → `a/`, `a/b.rs` → `a/b/`).
        let child_dir = if file.file_name().unwrap() == "mod.rs" {
            file.parent().unwrap().to_path_buf()
        } else {
            file.with_extension("")
        };
        for (child, attr) in paths.children {
            // Children of inline modules sit in subfolders of their names.
            let mut d = child_dir.clone();
            for seg in &child[module.len()..child.len() - 1] {
                d = d.join(seg);
            }
            queue.push((child.clone(), locate(&d, &child, &attr)));
        }
        let rel = file
            .strip_prefix(&dir)
            .unwrap_or(&file)
            .display()
            .to_string();
        for (written_in, segments) in paths.found {
            let mut base: Vec<String> = written_in.clone();
            let mut rest = segments.as_slice();
            if rest[0] == "crate" {
                base.clear();
                rest = &rest[1..];
            } else {
                while rest.first().map(String::as_str) == Some("super") {
                    base.pop();
                    rest = &rest[1..];
                }
            }
            let target_top = match (base.first(), rest.first()) {
                (Some(top), _) => Some(top.clone()),
                (None, Some(name)) => top_of(name),
                (None, None) => None,
            };
            if let Some(to) = target_top
                && to != module[0]
            {
                edges.push(Edge {
                    from: module[0].clone(),
                    to,
                    file: rel.clone(),
                    path: segments.join("::"),
                });
            }
        }
    }
    edges.sort();
    edges.dedup();
    Crate { modules, edges }
}

/// The layers written under "## Layers" in the root file: one numbered
/// line each (`//! 3. `a` · `b` — what they are`), top first; the module
/// names are the backticked words before the dash.
fn read_layers(root: &Path) -> Vec<Vec<String>> {
    let text = std::fs::read_to_string(root).unwrap();
    let mut layers = Vec::new();
    let mut inside = false;
    for line in text.lines() {
        let Some(doc) = line.strip_prefix("//!") else {
            continue;
        };
        let doc = doc.trim();
        if doc.starts_with("## ") {
            inside = doc == "## Layers";
            continue;
        }
        if !inside {
            continue;
        }
        let Some((number, rest)) = doc.split_once(". ") else {
            continue;
        };
        if number.is_empty() || !number.chars().all(|c| c.is_ascii_digit()) {
            continue;
        }
        let names = rest.split(" — ").next().unwrap();
        let layer: Vec<String> = names
            .split('`')
            .skip(1)
            .step_by(2)
            .map(str::to_string)
            .collect();
        layers.push(layer);
    }
    layers
}

/// Every edge that does not point down, as a readable line.
fn upward(layers: &[Vec<String>], edges: &[Edge]) -> Vec<String> {
    let level = |m: &str| layers.iter().position(|l| l.iter().any(|x| x == m));
    edges
        .iter()
        .filter_map(|e| {
            let (from, to) = (level(&e.from)?, level(&e.to)?);
            (to <= from).then(|| {
                format!(
                    "{}: `{}` uses `{}` (`{}`), which is on layer {} — {} is on layer {}",
                    e.file,
                    e.from,
                    e.to,
                    e.path,
                    to + 1,
                    e.from,
                    from + 1
                )
            })
        })
        .collect()
}

/// What is wrong with `root`'s layering: modules missing from the order or
/// named there but absent, and every upward edge.
fn check(root: &Path) -> Vec<String> {
    let krate = read_crate(root);
    let layers = read_layers(root);
    let mut problems = Vec::new();
    if layers.is_empty() {
        problems.push(format!("{} has no \"## Layers\" list", root.display()));
    }
    let listed: BTreeSet<String> = layers.iter().flatten().cloned().collect();
    for m in krate.modules.difference(&listed) {
        problems.push(format!("module `{m}` is on no layer"));
    }
    for m in listed.difference(&krate.modules) {
        problems.push(format!("layer list names `{m}`, which is no module"));
    }
    problems.extend(upward(&layers, &krate.edges));
    problems
}

fn manifest_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn no_module_uses_one_on_its_own_layer_or_above() {
    let problems = check(&manifest_dir().join("host/lib.rs"));
    assert!(
        problems.is_empty(),
        "the layer order in host/lib.rs is broken:\n{}",
        problems.join("\n")
    );
}

/// The check itself can fail: a fixture crate with one planted upward
/// import (and, around it, the things that must not count: a test module,
/// a doc link, a string) reports exactly that import.
#[test]
fn a_planted_upward_import_fails_the_check() {
    let root = manifest_dir().join("tests/fixtures/layers/lib.rs");
    let problems = check(&root);
    assert_eq!(problems.len(), 3, "{problems:#?}");
    assert!(
        problems[0].starts_with("module `orphan` is on no layer"),
        "{problems:#?}"
    );
    assert!(
        problems[1].starts_with("low/mod.rs: `low` uses `high` (`crate::high::Top`)"),
        "{problems:#?}"
    );
    assert!(
        problems[2].starts_with("low/nested.rs: `low` uses `high` (`super::super::high::Top`)"),
        "{problems:#?}"
    );
}

/// The reader sees what rustc sees: grouped and nested `use` trees, paths in
/// expressions and macro bodies, root re-exports, `#[path]` modules.
#[test]
fn the_reader_finds_every_kind_of_path() {
    let krate = read_crate(&manifest_dir().join("tests/fixtures/layers/lib.rs"));
    let found: BTreeSet<(String, String, String)> = krate
        .edges
        .iter()
        .map(|e| (e.from.clone(), e.to.clone(), e.path.clone()))
        .collect();
    for (from, to, path) in [
        ("high", "low", "crate::low::Bottom"),
        ("high", "low", "crate::low::deeper::Deep"),
        ("high", "low", "crate::Bottom"),
        ("high", "low", "crate::low::in_macro"),
        ("high", "low", "super::low::Bottom"),
        ("low", "high", "crate::high::Top"),
        ("low", "high", "super::super::high::Top"),
        ("orphan", "low", "crate::low::Bottom"),
    ] {
        assert!(
            found.contains(&(from.into(), to.into(), path.into())),
            "missing {from} → {to} ({path}) in {found:#?}"
        );
    }
    assert_eq!(found.len(), 8, "{found:#?}");
}
