//! The script validator on arbitrary text: it never panics (a panic on a
//! validator thread would come back as rule `internal`, which is checked
//! too), and every rejection names a rule and a real place.
#![no_main]

use libfuzzer_sys::fuzz_target;
use quickforge_filters::validate::{ValidatorLimits, validate};

fuzz_target!(|data: &[u8]| {
    let Ok(code) = std::str::from_utf8(data) else {
        return;
    };
    if let Err(rejection) = validate(code, &ValidatorLimits::default()) {
        // `internal` is the validator's own failure (it panicked).
        assert_ne!(rejection.rule, "internal", "for {code:?}: {rejection}");
        assert!(
            !rejection.rule.is_empty()
                && rejection
                    .rule
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b == b'-'),
            "rule {:?} is not a kebab-case id",
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
