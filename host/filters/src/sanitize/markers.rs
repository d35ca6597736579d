//! Instruction-like text: what a server writes into its metadata to speak
//! to the model as if it were the user, the system or the model's own
//! chat template. Matched on the folded text ([`crate::fold`]), so the
//! patterns are lowercase ASCII and catch look-alike, fullwidth and
//! mixed-case spellings alike; the matched part of the original text is
//! replaced by [`super::INJECTION_MARKER`].

use std::sync::LazyLock;

use regex::Regex;

use crate::fold::Folded;

/// The patterns, on folded text (lowercase, look-alikes folded). Word
/// boundaries are ASCII ones (`(?-u:\b)`): folded text keeps the letters
/// of other scripts, and a Unicode boundary would let `说ignore previous
/// instructions` through, a CJK letter being a word character.
static MARKERS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r"(?m)",
        // Chat template special tokens: <|im_start|>, <|system|>,
        // <|begin_of_text|>, <|start_header_id|>, <|eot_id|>,
        // <｜begin▁of▁sentence｜> (folded: fullwidth bars are |).
        r"<\|[^|<>\n]{1,64}\|>",
        // Gemma's turns and the sentence tokens of SentencePiece templates.
        r"|<\s*/?\s*(?:start_of_turn|end_of_turn|bos|eos|eot)\s*>",
        r"|</\s*s\s*>",
        // Role tags, opening or closing, with or without attributes:
        // <system>, </assistant>, <instructions>, <developer role="x">.
        r"|<\s*/?\s*(?:system|assistant|human|developer|instructions?|system_prompt|im_start|im_end|function_calls|function_results|tool_calls?|tool_results?|tool_use)(?-u:\b)[^<>\n]{0,80}>",
        // Closing tags of roles whose opening tag doubles as an honest
        // placeholder (`/home/<user>/`, `<tool> name`): only `</user>` and
        // the like are caught.
        r"|</\s*(?:user|tool|model|prompt|context)\s*>",
        // Llama 2 markers.
        r"|\[/?inst\]|<<\s*/?\s*sys\s*>>",
        // A fake turn: a role and a colon at the start of a line, maybe
        // dressed as markdown (`**System:**`, `> Human:`, `### Assistant:`).
        r"|^[ \t>*_#\-]*(?:human|assistant|user|system|developer|ai)[*_]*\s*:",
        // Alpaca-style section headers.
        r"|^[ \t]*#{2,}\s*(?:instruction|instructions|response|input)\s*:",
        // "ignore / disregard / forget (all) (the) previous instructions".
        r"|(?-u:\b)(?:ignore|disregard|forget|override|bypass)\s+(?:(?:all|any|every|the|your|my|of|these|those)\s+)*(?:previous|prior|above|earlier|preceding|system|original|former)\s+(?:instructions?|prompts?|messages?|rules|directions|directives|context|guidelines)",
        // "you are now ...", "new instructions:", "system prompt:".
        r"|(?-u:\b)you\s+are\s+now(?-u:\b)|(?-u:\b)new\s+(?:system\s+)?instructions?\s*:|(?-u:\b)system\s+(?:prompt|message|instructions?)\s*:",
    ))
    .expect("a valid regex")
});

/// `text` with every instruction-like part replaced by the marker, or
/// `None` when there is none.
pub(super) fn neutralise(text: &str) -> Option<String> {
    let folded = Folded::new(text);
    let mut out = String::with_capacity(text.len());
    let mut done = 0;
    let mut any = false;
    for m in MARKERS.find_iter(&folded.text) {
        let at = folded.original(m.range());
        // Two matches can map into one original character (a ligature);
        // the second is then already replaced.
        if at.start < done {
            continue;
        }
        out.push_str(&text[done..at.start]);
        out.push_str(super::INJECTION_MARKER);
        done = at.end;
        any = true;
    }
    if !any {
        return None;
    }
    out.push_str(&text[done..]);
    Some(out)
}

/// Where in `text` its first instruction-like part starts, if it has one.
pub(super) fn first_at(text: &str) -> Option<usize> {
    let folded = Folded::new(text);
    let m = MARKERS.find(&folded.text)?;
    Some(folded.original(m.range()).start)
}

/// Whether `text` holds instruction-like text.
#[cfg(test)]
pub(super) fn found_in(text: &str) -> bool {
    MARKERS.is_match(&crate::fold::fold(text))
}
