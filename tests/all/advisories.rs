//! Known security advisories against the committed lockfiles.
//!
//! The RustSec database cannot be fetched where the tests run, so the
//! advisories that concern this project are kept by hand in
//! `tests/advisories.toml` (its header says what each key means; SECURITY.md,
//! "Known advisories", how to update it). For every advisory and every
//! committed `Cargo.lock` that holds its crate at an affected version:
//! a fix recorded as available (`fixed_available = true`) and not used is a
//! failure; one recorded as not available for the pinned toolchain is
//! printed as acknowledged, with the date it was checked.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use semver::{Version, VersionReq};
use serde::Deserialize;

/// One `[[advisory]]` as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawAdvisory {
    id: String,
    #[serde(rename = "crate")]
    krate: String,
    affected: Vec<String>,
    fixed_in: Vec<String>,
    fixed_available: bool,
    checked: String,
    availability: String,
    source: String,
    note: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawList {
    advisory: Vec<RawAdvisory>,
}

/// One advisory, checked.
#[derive(Debug)]
struct Advisory {
    id: String,
    krate: String,
    affected: Vec<VersionReq>,
    fixed_in: Vec<Version>,
    fixed_available: bool,
    checked: String,
    availability: String,
    source: String,
}

/// Parses and checks the list: ids unique, requirements and versions
/// valid semver, no fixed version inside the affected range, a date, a
/// source and a note on each.
fn parse_list(text: &str) -> Result<Vec<Advisory>, String> {
    let raw: RawList = toml::from_str(text).map_err(|e| e.to_string())?;
    let mut seen = std::collections::BTreeSet::new();
    let mut list = Vec::new();
    for a in raw.advisory {
        let at = |what: String| format!("advisory {}: {what}", a.id);
        if !seen.insert(a.id.clone()) {
            return Err(at("listed twice".into()));
        }
        let affected = a
            .affected
            .iter()
            .map(|r| VersionReq::parse(r).map_err(|e| at(format!("affected {r:?}: {e}"))))
            .collect::<Result<Vec<_>, _>>()?;
        let fixed_in = a
            .fixed_in
            .iter()
            .map(|v| Version::parse(v).map_err(|e| at(format!("fixed_in {v:?}: {e}"))))
            .collect::<Result<Vec<_>, _>>()?;
        if affected.is_empty() {
            return Err(at("affected is empty".into()));
        }
        if let Some(v) = fixed_in
            .iter()
            .find(|v| affected.iter().any(|r| r.matches(v)))
        {
            return Err(at(format!("fixed_in {v} is inside the affected range")));
        }
        let date = a.checked.as_bytes();
        let is_date = date.len() == 10
            && date.iter().enumerate().all(|(i, b)| match i {
                4 | 7 => *b == b'-',
                _ => b.is_ascii_digit(),
            });
        if !is_date {
            return Err(at(format!("checked {:?} is not YYYY-MM-DD", a.checked)));
        }
        for (key, value) in [
            ("source", &a.source),
            ("note", &a.note),
            ("availability", &a.availability),
        ] {
            if value.trim().is_empty() {
                return Err(at(format!("{key} is empty")));
            }
        }
        list.push(Advisory {
            id: a.id,
            krate: a.krate,
            affected,
            fixed_in,
            fixed_available: a.fixed_available,
            checked: a.checked,
            availability: a.availability,
            source: a.source,
        });
    }
    Ok(list)
}

#[derive(Debug, Deserialize)]
struct Lock {
    #[serde(default)]
    package: Vec<LockedPackage>,
}

#[derive(Debug, Deserialize)]
struct LockedPackage {
    name: String,
    version: String,
}

/// A lockfile holding a crate at a version an advisory affects.
#[derive(Debug)]
struct Hit<'a> {
    advisory: &'a Advisory,
    lockfile: String,
    version: Version,
}

/// What the list says about the lockfiles: the hits whose fix is available
/// (failures) and those acknowledged.
#[derive(Debug, Default)]
struct Report<'a> {
    failures: Vec<Hit<'a>>,
    acknowledged: Vec<Hit<'a>>,
}

/// Checks `list` against `locks` (lockfile name → its text).
fn check<'a>(list: &'a [Advisory], locks: &BTreeMap<String, String>) -> Result<Report<'a>, String> {
    let mut report = Report::default();
    for (name, text) in locks {
        let lock: Lock = toml::from_str(text).map_err(|e| format!("{name}: {e}"))?;
        for package in &lock.package {
            let Ok(version) = Version::parse(&package.version) else {
                return Err(format!(
                    "{name}: {} has version {:?}, not semver",
                    package.name, package.version
                ));
            };
            for advisory in list.iter().filter(|a| a.krate == package.name) {
                if !advisory.affected.iter().any(|r| r.matches(&version)) {
                    continue;
                }
                let hit = Hit {
                    advisory,
                    lockfile: name.clone(),
                    version: version.clone(),
                };
                if advisory.fixed_available {
                    report.failures.push(hit);
                } else {
                    report.acknowledged.push(hit);
                }
            }
        }
    }
    Ok(report)
}

fn versions(v: &[Version]) -> String {
    v.iter()
        .map(Version::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

impl Hit<'_> {
    fn failure(&self) -> String {
        let a = self.advisory;
        format!(
            "{}: {} {} is affected by {} and a fix is available ({}; recorded {}). Update the lock \
             (cargo update -p {} --precise <fixed version>, and the `=` pins in the Cargo.toml files), \
             or, if the fix cannot be used after all, set fixed_available = false with the date and why. Source: {}",
            self.lockfile,
            a.krate,
            self.version,
            a.id,
            versions(&a.fixed_in),
            a.checked,
            a.krate,
            a.source
        )
    }

    fn acknowledgement(&self) -> String {
        let a = self.advisory;
        format!(
            "acknowledged: {}: {} {} is affected by {} (fixed in {}); no fix usable as of {}: {}",
            self.lockfile,
            a.krate,
            self.version,
            a.id,
            versions(&a.fixed_in),
            a.checked,
            a.availability
        )
    }
}

/// Every `Cargo.lock` in the repository, outside build output and
/// installed packages, by its path from the root.
fn committed_lockfiles() -> BTreeMap<String, String> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, String>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if path.is_dir() {
                if name.starts_with('.') || name == "target" || name == "node_modules" {
                    continue;
                }
                walk(root, &path, out);
            } else if name == "Cargo.lock" {
                let rel = path
                    .strip_prefix(root)
                    .unwrap()
                    .to_string_lossy()
                    .into_owned();
                out.insert(rel, std::fs::read_to_string(&path).unwrap());
            }
        }
    }
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut out = BTreeMap::new();
    walk(&root, &root, &mut out);
    out
}

#[test]
fn no_known_advisory_has_a_fix_left_unused() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(root.join("tests/advisories.toml")).unwrap();
    let list = parse_list(&text).unwrap_or_else(|e| panic!("tests/advisories.toml: {e}"));
    let locks = committed_lockfiles();
    assert!(
        locks.contains_key("Cargo.lock") && locks.contains_key("edge/Cargo.lock"),
        "the lockfiles are found: {:?}",
        locks.keys().collect::<Vec<_>>()
    );
    let report = check(&list, &locks).unwrap();
    for hit in &report.acknowledged {
        eprintln!("{}", hit.acknowledgement());
    }
    for a in &list {
        let hits = report.acknowledged.iter().chain(&report.failures);
        if !hits.into_iter().any(|h| h.advisory.id == a.id) {
            eprintln!(
                "not in any lockfile at an affected version (remove it once no branch needs it): {} ({})",
                a.id, a.krate
            );
        }
    }
    assert!(
        report.failures.is_empty(),
        "advisories with a fix available and not used:\n{}",
        report
            .failures
            .iter()
            .map(Hit::failure)
            .collect::<Vec<_>>()
            .join("\n")
    );
}

/// The checker itself, on a planted lockfile and list
/// (tests/fixtures/advisories/): an entry whose fix is available fails,
/// one whose fix is not is acknowledged, one outside the range or for a
/// crate not in the lock says nothing, and a malformed list is refused.
#[test]
fn the_advisory_checker_fails_on_a_planted_entry() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/advisories");
    let list = parse_list(&std::fs::read_to_string(dir.join("planted.toml")).unwrap()).unwrap();
    let locks = BTreeMap::from([(
        "planted/Cargo.lock".to_string(),
        std::fs::read_to_string(dir.join("planted.lock")).unwrap(),
    )]);
    let report = check(&list, &locks).unwrap();
    let ids = |hits: &[Hit<'_>]| {
        hits.iter()
            .map(|h| format!("{} {} {}", h.advisory.id, h.advisory.krate, h.version))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        ids(&report.failures),
        ["PLANTED-FIX-AVAILABLE wasmtime 48.0.8"]
    );
    assert_eq!(
        ids(&report.acknowledged),
        ["PLANTED-NO-FIX-YET wasmtime-wasi 48.0.8"]
    );
    let message = report.failures[0].failure();
    assert!(
        message.starts_with(
            "planted/Cargo.lock: wasmtime 48.0.8 is affected by PLANTED-FIX-AVAILABLE and a fix is available (48.0.9; recorded 2026-11-28)"
        ),
        "{message}"
    );

    let entry = |affected: &str, fixed: &str, checked: &str| {
        format!(
            "[[advisory]]\nid = \"X\"\ncrate = \"c\"\naffected = [{affected:?}]\nfixed_in = [{fixed:?}]\n\
             fixed_available = false\nchecked = {checked:?}\navailability = \"a\"\nsource = \"s\"\nnote = \"n\"\n"
        )
    };
    parse_list(&entry(">=1.0.0, <1.0.2", "1.0.2", "2026-11-28")).unwrap();
    for (text, expected) in [
        (
            entry(">=1.0.0, <1.0.2", "1.0.1", "2026-11-28"),
            "advisory X: fixed_in 1.0.1 is inside the affected range",
        ),
        (
            entry("<<1", "1.0.2", "2026-11-28"),
            "advisory X: affected \"<<1\": ",
        ),
        (
            entry("<1.0.2", "1.0", "2026-11-28"),
            "advisory X: fixed_in \"1.0\": ",
        ),
        (
            entry("<1.0.2", "1.0.2", "28.11.2026"),
            "advisory X: checked \"28.11.2026\" is not YYYY-MM-DD",
        ),
    ] {
        let e = parse_list(&text).unwrap_err();
        assert!(e.starts_with(expected), "{e}");
    }
    let twice = entry("<1.0.2", "1.0.2", "2026-11-28").repeat(2);
    assert_eq!(parse_list(&twice).unwrap_err(), "advisory X: listed twice");
}
