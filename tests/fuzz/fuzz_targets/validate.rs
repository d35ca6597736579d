//! The script validator on arbitrary text: it never panics (a panic on a
//! validator thread would come back as rule `internal`, which is checked
//! too), and every rejection names a known rule and a real place.
#![no_main]

use libfuzzer_sys::fuzz_target;
use quickforge_filters::validate::{ValidatorLimits, validate};

/// The rules `Rejection::rule` documents, less `internal` (a validator bug).
const RULES: &[&str] = &[
    "eval",
    "function-constructor",
    "computed-constructor",
    "dynamic-import",
    "import-meta",
    "require",
    "proto",
    "computed-global",
    "global-escape",
    "reflect",
    "proxy",
    "webassembly",
    "char-code-obfuscation",
    "string-raw",
    "with-statement",
    "timer-string",
    "too-deep",
    "not-async-arrow",
    "syntax",
];

fuzz_target!(|data: &[u8]| {
    let Ok(code) = std::str::from_utf8(data) else {
        return;
    };
    if let Err(rejection) = validate(code, &ValidatorLimits::default()) {
        assert!(
            RULES.contains(&rejection.rule),
            "rule {:?} for {code:?}: {rejection}",
            rejection.rule
        );
        assert!(rejection.line >= 1 && rejection.column >= 1, "{rejection}");
        assert!(
            rejection.text.chars().count() <= 81,
            "snippet over 80 characters: {rejection}"
        );
        assert!(!rejection.message.is_empty());
    }
});
