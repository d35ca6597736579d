//! One tool of one server: its `tools/list` entry cleaned for a model to
//! read ([`ToolEntry::from_json`]), and the JSON `manifest.tool` answers
//! ([`ToolEntry::describe`]).

use quickforge_filters::integrity::{ToolHash, tool_hash};
use quickforge_filters::sanitize;
use serde_json::{Map, Value, json};

use crate::schema::ArgsCheck;
use crate::search;
use crate::typescript::render_signature;

/// One tool of one server, as listed by `tools/list`.
#[derive(Debug)]
pub struct ToolEntry {
    /// Its name on the server.
    pub name: String,
    /// Its human title, if the server gave one.
    pub title: Option<String>,
    /// What it does.
    pub description: String,
    /// The JSON Schema of its arguments (an object schema).
    pub input_schema: Value,
    /// The JSON Schema of its `structuredContent`, if declared.
    pub output_schema: Option<Value>,
    /// MCP tool annotations (`readOnlyHint`, `destructiveHint`, ...).
    pub annotations: Option<Value>,
    /// Its hashes, over its metadata as the server sent it (see
    /// [`quickforge_filters::integrity`]): what pinning compares, and what
    /// `manifest.tool` shows as `hash` so that a client can cache by it.
    pub hash: ToolHash,
    /// What cleaning removed or changed in its metadata (see
    /// [`sanitize`]): instruction-like text, hidden characters, over-long
    /// text, schema parts. Shown to the model as a `warning`.
    pub found: sanitize::Findings,
    /// The argument check: the input schema with what the host will not
    /// run left out, compiled on first use (see [`crate::schema`]).
    check: ArgsCheck,
    /// Its words, for `manifest.search`.
    words: search::ToolWords,
}

impl ToolEntry {
    /// The tool as a `tools/list` entry under `name`: its description,
    /// schemas and annotations (what a flat gateway would list, and what a
    /// direct tool is listed with).
    pub fn listed_as(&self, name: &str) -> Value {
        let mut v = json!({
            "name": name,
            "description": self.description,
            "inputSchema": self.input_schema,
        });
        if let Some(o) = &self.output_schema {
            v["outputSchema"] = o.clone();
        }
        if let Some(a) = &self.annotations {
            v["annotations"] = a.clone();
        }
        v
    }

    /// A tool from its `tools/list` JSON (`name`, `description`,
    /// `inputSchema`, ...), its text cleaned (see [`sanitize`]). `None`
    /// when it has no name, or a name that is not a plain identifier.
    pub fn from_json(tool: &Value) -> Option<ToolEntry> {
        ToolEntry::from_json_with(tool, &sanitize::clean_text)
    }

    /// [`ToolEntry::from_json`] with the text cleaning given: `clean_text` is
    /// [`sanitize::clean_text`] or the same code elsewhere (the edge
    /// provider's pre-initialized redactor component).
    pub fn from_json_with(
        tool: &Value,
        clean_text: &dyn Fn(&str, usize) -> sanitize::Cleaned,
    ) -> Option<ToolEntry> {
        let name = tool.get("name")?.as_str()?;
        if !sanitize::valid_tool_name(name) {
            return None;
        }
        let hash = tool_hash(tool);
        let mut found = sanitize::Findings::default();
        let mut clean = |t: &str, max: usize| {
            let c = clean_text(t, max);
            found |= c.found;
            c.text
        };
        let str_at = |pointer: &str| tool.pointer(pointer).and_then(Value::as_str);
        let title = str_at("/title")
            .or_else(|| str_at("/annotations/title"))
            .map(|t| clean(t, sanitize::MAX_SHORT_TEXT));
        let description = str_at("/description")
            .map(|d| clean(d, sanitize::MAX_DESCRIPTION))
            .unwrap_or_default();
        let mut schema = |k: &str| {
            tool.get(k).filter(|s| s.is_object()).cloned().map(|mut s| {
                found |= sanitize::clean_schema_with(&mut s, clean_text);
                s
            })
        };
        let input_schema = schema("inputSchema").unwrap_or_else(|| json!({"type": "object"}));
        let output_schema = schema("outputSchema");
        let annotations = schema("annotations");
        let check = ArgsCheck::new(&input_schema);
        Some(ToolEntry {
            name: name.to_string(),
            title,
            description,
            input_schema,
            output_schema,
            annotations,
            hash,
            found,
            check,
            words: Default::default(),
        })
    }

    /// The category: the part of the name before its first `.`, if any.
    pub fn category(&self) -> Option<&str> {
        crate::category(&self.name)
    }

    /// Why `args` do not match the input schema, naming each offending
    /// field and what is wrong with it; `None` when they match.
    pub fn mismatch(&self, server: &str, args: &Value) -> Option<String> {
        self.check.mismatch(server, &self.name, args)
    }

    /// Its words, for `manifest.search`.
    pub fn words(&self) -> &search::Words {
        self.words
            .get(&self.name, self.title.as_deref(), &self.description)
    }

    /// What the model should know about this tool's metadata or about how
    /// quickforge checks its arguments, one sentence each.
    pub fn warnings(&self) -> Vec<String> {
        let mut out: Vec<String> = self.found.warning().into_iter().collect();
        out.extend(self.check.warnings().iter().cloned());
        out
    }

    /// The JSON `manifest.tool` returns.
    pub fn describe(&self, server: &str) -> Value {
        let mut out = Map::new();
        out.insert("server".into(), server.into());
        out.insert("name".into(), self.name.clone().into());
        if let Some(title) = &self.title {
            out.insert("title".into(), title.clone().into());
        }
        out.insert("description".into(), self.description.clone().into());
        let warnings = self.warnings();
        if !warnings.is_empty() {
            out.insert("warning".into(), warnings.join("; ").into());
        }
        out.insert("hash".into(), self.hash.whole.clone().into());
        out.insert("inputSchema".into(), self.input_schema.clone());
        if let Some(schema) = &self.output_schema {
            out.insert("outputSchema".into(), schema.clone());
        }
        if let Some(annotations) = &self.annotations {
            out.insert("annotations".into(), annotations.clone());
        }
        out.insert(
            "signature".into(),
            render_signature(
                server,
                &self.name,
                &self.input_schema,
                self.output_schema.as_ref(),
            )
            .into(),
        );
        Value::Object(out)
    }
}
