//! Writes `guest/intl/baked/`: ICU4X's compiled data for the markers the
//! guest links, cut down to the locale families its `Intl` serves.
//!
//! ICU4X's compiled data holds every CLDR locale (the collator's tailorings
//! alone are 1.2 MB of wasm). The guest builds against this subset instead,
//! through `ICU4X_DATA_DIR` (set in `guest/.cargo/config.toml`), which every
//! `icu_*_data` crate honours. Run after changing [`LOCALES`] or the ICU4X
//! version: `cargo run --release --manifest-path guest/intl/export/Cargo.toml`.

// The baked data names `alloc::` paths.
extern crate alloc;

use std::path::PathBuf;

use icu_provider::DataMarker as _;
use icu_provider_export::baked_exporter::{BakedExporter, Options};
use icu_provider_export::prelude::*;

use source::Baked;

/// The source: the `icu_*_data` crates' baked data, iterable.
mod source {
    /// The provider the `icu_*_data` macros implement every marker on.
    pub struct Baked;

    /// ICU4X 2.4's singleton markers spell `BTreeSet` as `BtreeSet` in their
    /// `ITER` arm (only export tools expand it); a local `std` whose
    /// `collections` has both names lets that arm compile unchanged.
    #[allow(dead_code, unused_imports)]
    mod std {
        pub use ::std::*;
        pub mod collections {
            pub use ::std::collections::*;
            pub type BtreeSet<T> = ::std::collections::BTreeSet<T>;
        }
    }

    use icu_provider::DataMarker as _;

    // The baked macros name the `icu` meta crate's paths, which this crate has.
    include!("markers.rs");
}

/// The locale families served, with their regional variants (`en-GB`,
/// `pt-PT`, `zh-Hant`, ...): the ten that issue 18 names. Any other locale
/// falls back to the root locale's data (`und`, which is CLDR's neutral
/// format, close to `en`'s), as ICU4X does for every missing locale.
const LOCALES: [&str; 10] = ["en", "de", "fr", "es", "pt", "it", "ja", "zh", "ko", "ru"];

fn main() {
    let out = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../baked");
    if out.exists() {
        std::fs::remove_dir_all(&out).expect("remove the old guest/intl/baked");
    }
    let families = LOCALES.map(|l| DataLocaleFamily::with_descendants(l.parse().expect("locale")));
    let markers = <Baked as icu_provider::export::ExportableProvider>::supported_markers(&Baked);
    let exporter = BakedExporter::new(out.clone(), {
        let mut options = Options::default();
        options.overwrite = true;
        // Checked in and read by people: keep it formatted and licensed.
        options.pretty = true;
        options
    })
    .expect("create the baked exporter");
    ExportDriver::new(
        families,
        DeduplicationStrategy::Maximal.into(),
        LocaleFallbacker::new().static_to_owned(),
    )
    .with_markers(markers)
    // Transliteration (the largest table of all) is not part of `Intl`.
    .with_marker_attributes_filter(
        icu::experimental::transliterate::provider::TransliteratorRulesV1::INFO.attributes_domain,
        |_| false,
    )
    .export(&Baked, exporter)
    .expect("export the data");
    eprintln!("wrote {}", out.display());
}
