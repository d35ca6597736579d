//! Provider credential shapes as data: gitleaks' rule set (vendored unchanged with its
//! MIT licence in `host/filters/rules/`) and quickforge's own few rules in the same
//! format, compiled once, on first use.
//!
//! Matching follows gitleaks: a rule runs only when one of its `keywords` occurs in the
//! text (ASCII case ignored), found for all rules in one Aho-Corasick scan; the secret
//! is the rule's `secretGroup`, else its first non-empty group, else the whole match;
//! it must reach the rule's `entropy` and pass the allowlists (global and the rule's:
//! `regexes` against the secret, the match or the line, and `stopwords`). The few rules
//! without keywords run together as one [`RegexSet`], which says in one scan which of
//! them match at all; only those then run alone to find where.
//!
//! Dialect: gitleaks' patterns are Go RE2, which Rust's `regex` reads almost entirely.
//! They are compiled as byte regexes with Unicode off, as in Go, where `\w`, `\d`, `\s`
//! and `\b` are ASCII. A pattern that does not compile is counted in [`rule_stats`]
//! (the tests bound the count) and skipped, never a panic.
//!
//! Left out on purpose: `generic-api-key`, which takes the value after any of `key`,
//! `token`, `auth`, `secret`, `access`… with enough entropy. In error texts it masks
//! tool names and ordinary values (`key: github.create_issue`); the sensitive-name rules
//! of [`super::kv`] do that job with a vetted word split. Rules with only a `path` (a
//! file type) have nothing to match in a text.

use super::{MARK_KEY, replace_ranges};
use aho_corasick::{AhoCorasick, MatchKind};
use regex::bytes::{Regex, RegexBuilder, RegexSet, RegexSetBuilder};
use serde::Deserialize;
use std::borrow::Cow;
use std::ops::Range;
use std::sync::LazyLock;

/// gitleaks' default rule set, vendored unchanged (see `rules/README.md`).
const GITLEAKS: &str = include_str!("../../rules/gitleaks.toml");
/// quickforge's own rules, for tokens gitleaks finds only next to a keyword.
const QUICKFORGE: &str = include_str!("../../rules/quickforge.toml");

/// Rules of the vendored set left out on purpose (see the module doc).
const LEFT_OUT: &[&str] = &["generic-api-key"];

/// Largest compiled size of one rule's program, bytes. The largest gitleaks patterns
/// (alternations of provider prefixes) stay far below; the bound keeps a future rule
/// from costing megabytes each.
const RULE_SIZE_LIMIT: usize = 2 << 20;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct FileDef {
    allowlist: Option<AllowDef>,
    #[serde(default)]
    rules: Vec<RuleDef>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RuleDef {
    id: String,
    regex: Option<String>,
    secret_group: Option<usize>,
    entropy: Option<f64>,
    #[serde(default)]
    keywords: Vec<String>,
    #[serde(default)]
    allowlists: Vec<AllowDef>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct AllowDef {
    #[serde(default)]
    regexes: Vec<String>,
    regex_target: Option<String>,
    #[serde(default)]
    stopwords: Vec<String>,
    #[serde(default)]
    paths: Vec<String>,
    condition: Option<String>,
}

/// What an allowlist regex is matched against.
#[derive(Clone, Copy)]
enum Target {
    Secret,
    Match,
    Line,
}

#[derive(Clone)]
struct Allow {
    regexes: Vec<Regex>,
    target: Target,
    stopwords: Vec<String>,
}

struct Rule {
    regex: Regex,
    secret_group: Option<usize>,
    entropy: f64,
    allow: Vec<Allow>,
}

struct RuleSetInner {
    rules: Vec<Rule>,
    /// One pattern per keyword; `keyword_rules[p]` are the rules that keyword calls.
    keywords: AhoCorasick,
    keyword_rules: Vec<Vec<usize>>,
    /// The rules without keywords, as one set, and their indices in `rules`.
    unkeyed: RegexSet,
    unkeyed_rules: Vec<usize>,
    stats: RuleStats,
}

/// What became of the rule files' rules when they were compiled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleStats {
    /// Rules compiled and in use.
    pub loaded: usize,
    /// Rules whose pattern Rust's `regex` does not accept: `(id, error)`.
    pub not_compiled: Vec<(String, String)>,
    /// Rules left out on purpose or with no pattern (only a file `path`).
    pub left_out: Vec<String>,
}

/// The compiled rule set's statistics (compiles it if needed).
pub fn rule_stats() -> RuleStats {
    RULES.stats.clone()
}

static RULES: LazyLock<RuleSetInner> = LazyLock::new(compile);

fn compile_regex(pattern: &str) -> Result<Regex, regex::Error> {
    RegexBuilder::new(pattern)
        .unicode(false)
        .size_limit(RULE_SIZE_LIMIT)
        .build()
}

fn compile_allow(def: &AllowDef) -> Option<Allow> {
    // an allowlist that also needs a file path can never hold for a text
    if !def.paths.is_empty() && (def.condition.as_deref() == Some("AND") || def.regexes.is_empty())
    {
        return None;
    }
    let target = match def.regex_target.as_deref() {
        Some("match") => Target::Match,
        Some("line") => Target::Line,
        _ => Target::Secret,
    };
    Some(Allow {
        regexes: def
            .regexes
            .iter()
            .filter_map(|r| compile_regex(r).ok())
            .collect(),
        target,
        stopwords: def.stopwords.iter().map(|s| s.to_lowercase()).collect(),
    })
}

fn compile() -> RuleSetInner {
    let mut stats = RuleStats {
        loaded: 0,
        not_compiled: Vec::new(),
        left_out: Vec::new(),
    };
    let mut rules = Vec::new();
    let mut keyword_list: Vec<String> = Vec::new();
    let mut keyword_rules: Vec<Vec<usize>> = Vec::new();
    let mut unkeyed_patterns = Vec::new();
    let mut unkeyed_rules = Vec::new();
    for source in [GITLEAKS, QUICKFORGE] {
        let file: FileDef = match toml::from_str(source) {
            Ok(f) => f,
            Err(e) => panic!("redact: a vendored rule file does not parse: {e}"),
        };
        // a file's global allowlist holds for that file's rules
        let global: Vec<Allow> = file.allowlist.iter().filter_map(compile_allow).collect();
        for def in file.rules {
            let Some(pattern) = def.regex.as_deref() else {
                stats.left_out.push(def.id);
                continue;
            };
            if LEFT_OUT.contains(&def.id.as_str()) {
                stats.left_out.push(def.id);
                continue;
            }
            let regex = match compile_regex(pattern) {
                Ok(r) => r,
                Err(e) => {
                    stats.not_compiled.push((def.id, e.to_string()));
                    continue;
                }
            };
            let index = rules.len();
            if def.keywords.is_empty() {
                unkeyed_patterns.push(pattern.to_string());
                unkeyed_rules.push(index);
            }
            for k in &def.keywords {
                let k = k.to_ascii_lowercase();
                match keyword_list.iter().position(|x| *x == k) {
                    Some(p) => keyword_rules[p].push(index),
                    None => {
                        keyword_list.push(k);
                        keyword_rules.push(vec![index]);
                    }
                }
            }
            rules.push(Rule {
                regex,
                secret_group: def.secret_group,
                entropy: def.entropy.unwrap_or(0.0),
                allow: def
                    .allowlists
                    .iter()
                    .filter_map(compile_allow)
                    .chain(global.iter().map(Allow::clone))
                    .collect(),
            });
        }
    }
    stats.loaded = rules.len();
    let keywords = match AhoCorasick::builder()
        .ascii_case_insensitive(true)
        .match_kind(MatchKind::Standard)
        .build(&keyword_list)
    {
        Ok(a) => a,
        Err(e) => panic!("redact: rule keywords do not build: {e}"),
    };
    let unkeyed = match RegexSetBuilder::new(&unkeyed_patterns)
        .unicode(false)
        .size_limit(RULE_SIZE_LIMIT * 4)
        .build()
    {
        Ok(s) => s,
        Err(e) => panic!("redact: rules without keywords do not build as a set: {e}"),
    };
    RuleSetInner {
        rules,
        keywords,
        keyword_rules,
        unkeyed,
        unkeyed_rules,
        stats,
    }
}

/// Shannon entropy of `s` in bits per byte, as gitleaks computes it for `entropy`;
/// also the randomness test of [`crate::secrets`]' shape judge.
pub(crate) fn entropy(s: &[u8]) -> f64 {
    let mut counts = [0u32; 256];
    for &b in s {
        counts[usize::from(b)] += 1;
    }
    let n = s.len() as f64;
    counts
        .iter()
        .filter(|&&c| c > 0)
        .map(|&c| {
            let p = f64::from(c) / n;
            -p * p.log2()
        })
        .sum()
}

impl Allow {
    fn allows(&self, secret: &[u8], whole: &[u8], line: &[u8]) -> bool {
        let target = match self.target {
            Target::Secret => secret,
            Target::Match => whole,
            Target::Line => line,
        };
        if self.regexes.iter().any(|r| r.is_match(target)) {
            return true;
        }
        if self.stopwords.is_empty() {
            return false;
        }
        let lower = String::from_utf8_lossy(secret).to_lowercase();
        self.stopwords.iter().any(|w| lower.contains(w.as_str()))
    }
}

/// The line of `text` around `range`.
fn line_of(text: &[u8], range: &Range<usize>) -> Range<usize> {
    let start = text[..range.start]
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |i| i + 1);
    let end = text[range.end..]
        .iter()
        .position(|&b| b == b'\n')
        .map_or(text.len(), |i| range.end + i);
    start..end
}

/// The byte ranges of `text` that a rule takes for a secret, sorted and merged, each
/// on character boundaries.
pub(crate) fn secret_ranges(text: &str) -> Vec<Range<usize>> {
    let set = &*RULES;
    let bytes = text.as_bytes();
    let mut candidate = vec![false; set.rules.len()];
    for m in set.keywords.find_overlapping_iter(text) {
        for &r in &set.keyword_rules[m.pattern().as_usize()] {
            candidate[r] = true;
        }
    }
    for i in set.unkeyed.matches(bytes).iter() {
        candidate[set.unkeyed_rules[i]] = true;
    }
    let mut ranges = Vec::new();
    for (rule, _) in set.rules.iter().zip(&candidate).filter(|(_, c)| **c) {
        for caps in rule.regex.captures_iter(bytes) {
            let Some(whole) = caps.get(0) else { continue };
            let secret = match rule.secret_group {
                Some(g) => caps.get(g),
                None => caps.iter().skip(1).flatten().find(|m| !m.is_empty()),
            }
            .unwrap_or(whole);
            let s = secret.as_bytes();
            // a marker of an earlier rule is no secret (and must stay as it is)
            if s.is_empty()
                || entropy(s) < rule.entropy
                || memchr::memmem::find(s, b"[REDACTED").is_some()
            {
                continue;
            }
            let line = &bytes[line_of(bytes, &secret.range())];
            if rule
                .allow
                .iter()
                .any(|a| a.allows(s, whole.as_bytes(), line))
            {
                continue;
            }
            let start = text.floor_char_boundary(secret.start());
            let end = text.ceil_char_boundary(secret.end());
            ranges.push(start..end);
        }
    }
    merge(ranges)
}

/// Sorts ranges and merges those that overlap or touch.
pub(crate) fn merge(mut ranges: Vec<Range<usize>>) -> Vec<Range<usize>> {
    ranges.sort_by_key(|r| (r.start, r.end));
    let mut out: Vec<Range<usize>> = Vec::with_capacity(ranges.len());
    for r in ranges {
        match out.last_mut() {
            Some(last) if r.start <= last.end => last.end = last.end.max(r.end),
            _ => out.push(r),
        }
    }
    out
}

/// Provider credentials found by the rule set become `[REDACTED:key]`.
pub(crate) fn redact_keys(text: &str) -> Cow<'_, str> {
    let ranges = secret_ranges(text);
    replace_ranges(text, &ranges, MARK_KEY)
}
