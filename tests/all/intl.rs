//! `Intl` and the locale-aware built-in methods (issue 18, item 1): before
//! them `Intl` was a `ReferenceError` and `(1234567.891).toLocaleString('de-DE')`
//! gave `"1234567.891"`. The expected strings are what Node 20 (V8 with
//! ICU4C) prints for the same calls, except where ICU4X's CLDR 48 data
//! differs: a narrow no-break space before AM/PM (Node 20: a space), and
//! short numeric dates from ICU4X's semantic skeletons, which pad day and
//! month in de and ja (`05.01.2024`, `2024/01/06`; V8's pattern generator
//! gives `5.1.2024`, `2024/1/6`).

use serde_json::{Value, json};

use crate::cli::{quickforge, script, stdout_json};
use crate::support::{Kind, error, run, value};

/// Runs `code` on the default sandbox and returns its value.
async fn eval(code: &str) -> Value {
    value(&run(Kind::Default, code).await).clone()
}

/// Runs `code` and returns the message it failed with.
async fn thrown(code: &str) -> String {
    error(&run(Kind::Default, code).await).message.clone()
}

/// Grouping and decimal separators of the ten locale families, Indian
/// grouping for `en-IN`, and the digit options with ECMA-402's rounding
/// (half-expand on the shortest decimal that round-trips: 1.005 → "1.01").
#[tokio::test]
async fn numbers_in_the_ten_locales() {
    let v = eval(
        r#"async () => {
            const x = 1234567.891;
            const out = { default: x.toLocaleString() };
            for (const l of ["en-US", "de-DE", "fr-FR", "es-ES", "pt-BR", "it-IT", "ja-JP", "zh-CN", "ko-KR", "ru-RU", "en-IN"]) out[l] = x.toLocaleString(l);
            out.frac = new Intl.NumberFormat("en-US", { minimumFractionDigits: 2, maximumFractionDigits: 2 }).format(1.005);
            out.round = (2.5).toLocaleString("en-US", { maximumFractionDigits: 0 });
            out.neg = (-1234.5).toLocaleString("en-US");
            out.sig = new Intl.NumberFormat("en-US", { maximumSignificantDigits: 3 }).format(123456);
            out.sigzero = (0).toLocaleString("en-US", { minimumSignificantDigits: 3 });
            out.sigcarry = new Intl.NumberFormat("en-US", { minimumSignificantDigits: 2, maximumSignificantDigits: 2 }).format(999);
            out.nogroup = (1234567).toLocaleString("en-US", { useGrouping: false });
            out.minint = (5).toLocaleString("en-US", { minimumIntegerDigits: 3 });
            out.sign = new Intl.NumberFormat("en-US", { signDisplay: "always" }).format(5);
            out.nan = new Intl.NumberFormat("en-US").format(NaN);
            out.inf = new Intl.NumberFormat("en-US").format(-Infinity);
            out.bigint = new Intl.NumberFormat("en-US").format(12345678901234567890n);
            return out;
        }"#,
    )
    .await;
    assert_eq!(
        v,
        json!({
            "default": "1,234,567.891",
            "en-US": "1,234,567.891",
            "de-DE": "1.234.567,891",
            "fr-FR": "1\u{202f}234\u{202f}567,891",
            "es-ES": "1.234.567,891",
            "pt-BR": "1.234.567,891",
            "it-IT": "1.234.567,891",
            "ja-JP": "1,234,567.891",
            "zh-CN": "1,234,567.891",
            "ko-KR": "1,234,567.891",
            "ru-RU": "1\u{a0}234\u{a0}567,891",
            "en-IN": "12,34,567.891",
            "frac": "1.01",
            "round": "3",
            "neg": "-1,234.5",
            "sig": "123,000",
            "sigzero": "0.00",
            "sigcarry": "1,000",
            "nogroup": "1234567",
            "minint": "005",
            "sign": "+5",
            "nan": "NaN",
            "inf": "-∞",
            "bigint": "12,345,678,901,234,567,890",
        })
    );
}

/// Percent, currency (symbol, code, a currency without minor units) and
/// compact notation.
#[tokio::test]
async fn percents_currencies_and_compact_numbers() {
    let v = eval(
        r#"async () => ({
            pct: new Intl.NumberFormat("en-US", { style: "percent" }).format(0.256),
            pctDe: new Intl.NumberFormat("de-DE", { style: "percent", maximumFractionDigits: 1 }).format(0.2567),
            usd: new Intl.NumberFormat("en-US", { style: "currency", currency: "USD" }).format(1234.5),
            eur: (1234.5).toLocaleString("de-DE", { style: "currency", currency: "EUR" }),
            jpy: new Intl.NumberFormat("ja-JP", { style: "currency", currency: "JPY" }).format(1234.5),
            code: new Intl.NumberFormat("en-US", { style: "currency", currency: "usd", currencyDisplay: "code" }).format(12),
            compact: new Intl.NumberFormat("en-US", { notation: "compact" }).format(1234567),
            compactK: new Intl.NumberFormat("en-US", { notation: "compact" }).format(1500),
            resolved: new Intl.NumberFormat("de", { style: "currency", currency: "EUR" }).resolvedOptions(),
        })"#,
    )
    .await;
    assert_eq!(v["pct"], "26%");
    assert_eq!(v["pctDe"], "25,7\u{a0}%");
    assert_eq!(v["usd"], "$1,234.50");
    assert_eq!(v["eur"], "1.234,50\u{a0}€");
    assert_eq!(v["jpy"], "￥1,235");
    assert_eq!(v["code"], "USD\u{a0}12.00");
    assert_eq!(v["compact"], "1.2M");
    assert_eq!(v["compactK"], "1.5K");
    assert_eq!(v["resolved"]["currency"], "EUR");
    assert_eq!(v["resolved"]["minimumFractionDigits"], 2);
    assert_eq!(v["resolved"]["locale"], "de");
}

/// Dates and times: the defaults of the three `toLocale*String` methods,
/// styles, component options, `hour12`, and the ten locales' short dates.
#[tokio::test]
async fn dates_and_times() {
    let v = eval(
        r#"async () => {
            const d = new Date(Date.UTC(2024, 0, 5, 15, 4, 9));
            return {
                all: d.toLocaleString("en-US"),
                date: d.toLocaleDateString("en-US"),
                time: d.toLocaleTimeString("en-US"),
                noLocale: d.toLocaleDateString(),
                de: d.toLocaleDateString("de-DE"),
                gb: d.toLocaleDateString("en-GB"),
                long: d.toLocaleDateString("en-US", { year: "numeric", month: "long", day: "numeric" }),
                full: new Intl.DateTimeFormat("en-US", { dateStyle: "full" }).format(d),
                frFull: new Intl.DateTimeFormat("fr-FR", { dateStyle: "full" }).format(d),
                short: new Intl.DateTimeFormat("en-US", { dateStyle: "short" }).format(d),
                medium: new Intl.DateTimeFormat("en-US", { dateStyle: "medium", timeStyle: "short" }).format(d),
                monthYear: d.toLocaleDateString("en-US", { month: "long", year: "numeric" }),
                h23: d.toLocaleTimeString("en-US", { hour12: false }),
                invalid: new Date(NaN).toLocaleString(),
                zone: new Intl.DateTimeFormat().resolvedOptions().timeZone,
            };
        }"#,
    )
    .await;
    assert_eq!(
        v,
        json!({
            "all": "1/5/2024, 3:04:09\u{202f}PM",
            "date": "1/5/2024",
            "time": "3:04:09\u{202f}PM",
            "noLocale": "1/5/2024",
            "de": "05.01.2024",
            "gb": "05/01/2024",
            "long": "January 5, 2024",
            "full": "Friday, January 5, 2024",
            "frFull": "vendredi 5 janvier 2024",
            "short": "1/5/24",
            "medium": "Jan 5, 2024, 3:04\u{202f}PM",
            "monthYear": "January 2024",
            "h23": "15:04:09",
            "invalid": "Invalid Date",
            "zone": "UTC",
        })
    );
}

/// Named zones follow daylight saving time from the IANA database the guest
/// carries; offsets and UTC aliases work; an unknown zone is a `RangeError`
/// that says what to use.
#[tokio::test]
async fn time_zones() {
    let v = eval(
        r#"async () => {
            const winter = new Date(Date.UTC(2024, 0, 5, 15, 4, 9));
            const summer = new Date(Date.UTC(2024, 6, 5, 15, 4, 9));
            const ny = { timeZone: "america/new_york", hour: "numeric", minute: "2-digit" };
            return {
                nyWinter: winter.toLocaleTimeString("en-US", ny),
                nySummer: summer.toLocaleTimeString("en-US", ny),
                tokyo: winter.toLocaleString("ja-JP", { timeZone: "Asia/Tokyo" }),
                offset: winter.toLocaleTimeString("en-US", { timeZone: "+05:30" }),
                compact: winter.toLocaleTimeString("en-US", { timeZone: "+0530" }),
                // Offsets are ±HH:MM or ±HHMM, nothing looser (as V8).
                malformed: ["+05:3:0", "+5:30", "+05:300", "+24:00", "+05:60"].filter((timeZone) => {
                    try { winter.toLocaleTimeString("en-US", { timeZone }); return true; }
                    catch (e) { return !(e instanceof RangeError); }
                }),
                canonical: new Intl.DateTimeFormat("en", { timeZone: "america/new_york" }).resolvedOptions().timeZone,
                gmt: new Intl.DateTimeFormat("en", { timeZone: "Etc/GMT" }).resolvedOptions().timeZone,
            };
        }"#,
    )
    .await;
    assert_eq!(v["nyWinter"], "10:04\u{202f}AM");
    assert_eq!(v["nySummer"], "11:04\u{202f}AM");
    assert_eq!(v["tokyo"], "2024/01/06 0:04:09");
    assert_eq!(v["offset"], "8:34:09\u{202f}PM");
    assert_eq!(v["compact"], "8:34:09\u{202f}PM");
    assert_eq!(
        v["malformed"],
        json!([]),
        "offsets accepted though malformed"
    );
    assert_eq!(v["canonical"], "America/New_York");
    assert_eq!(v["gmt"], "UTC");

    let message =
        thrown(r#"async () => new Date(0).toLocaleString("en-US", { timeZone: "Mars/Olympus" })"#)
            .await;
    assert!(
        message.contains("RangeError: Invalid time zone specified: Mars/Olympus")
            && message.contains("Europe/Berlin"),
        "{message}"
    );
}

/// Collation (German ä sorts with a, numeric collation, sensitivity) and
/// plural rules.
#[tokio::test]
async fn collation_and_plurals() {
    let v = eval(
        r#"async () => ({
            de: ["b", "a", "Z", "ä", "z"].sort(new Intl.Collator("de").compare),
            numeric: ["item10", "item2", "item1"].sort(new Intl.Collator("en", { numeric: true }).compare),
            base: "a".localeCompare("A", "en", { sensitivity: "base" }),
            plain: ["é", "e", "f", "E"].sort((a, b) => a.localeCompare(b)),
            one: new Intl.PluralRules("en-US").select(1),
            ordinal: new Intl.PluralRules("en-US", { type: "ordinal" }).select(22),
            ru: new Intl.PluralRules("ru").select(3),
        })"#,
    )
    .await;
    assert_eq!(
        v,
        json!({
            "de": ["a", "ä", "b", "z", "Z"],
            "numeric": ["item1", "item2", "item10"],
            "base": 0,
            "plain": ["e", "E", "é", "f"],
            "one": "one",
            "ordinal": "two",
            "ru": "few",
        })
    );
}

/// Bad input is a clear `RangeError` or `TypeError`, never a crash, and the
/// sandbox serves the next script.
#[tokio::test]
async fn bad_options_are_clear_errors() {
    let cases = [
        (
            r#"async () => (1).toLocaleString("not a locale!")"#,
            "RangeError: Incorrect locale information provided",
        ),
        (
            r#"async () => new Intl.NumberFormat("en", { style: "currency" })"#,
            "TypeError: Currency code is required with currency style.",
        ),
        (
            r#"async () => new Intl.NumberFormat("en", { style: "currency", currency: "US" })"#,
            "RangeError: Invalid currency code: US",
        ),
        (
            r#"async () => new Intl.NumberFormat("en", { style: "unit", unit: "meter" })"#,
            "append the unit",
        ),
        (
            r#"async () => new Intl.NumberFormat("en", { maximumFractionDigits: 101 })"#,
            "RangeError: maximumFractionDigits value is out of range",
        ),
        (
            r#"async () => new Intl.DateTimeFormat("en", { dateStyle: "long", hour: "numeric" })"#,
            "TypeError: dateStyle and timeStyle cannot be combined",
        ),
        (
            r#"async () => new Intl.NumberFormat("en", { style: "bogus" })"#,
            "RangeError: Value bogus out of range for style",
        ),
    ];
    for (code, expected) in cases {
        let message = thrown(code).await;
        assert!(message.contains(expected), "{code}: {message}");
    }
    assert_eq!(
        eval("async () => 'still serving'").await,
        json!("still serving")
    );
}

/// Through the real binary: `[sandbox] time_zone` is the scripts' default
/// zone, and a zone that does not exist is refused at load with its key and
/// line.
#[test]
fn the_config_names_the_default_time_zone() {
    let code = r#"async () => ({
        time: new Date(Date.UTC(2024, 6, 5, 15, 4, 9)).toLocaleTimeString("de-DE"),
        zone: Intl.DateTimeFormat().resolvedOptions().timeZone,
        price: (1234.5).toLocaleString("de-DE", { style: "currency", currency: "EUR" }),
    })"#;
    let out = quickforge(&["run", "-"], Some(code));
    assert_eq!(
        stdout_json(&out),
        json!({ "time": "15:04:09", "zone": "UTC", "price": "1.234,50\u{a0}€" })
    );

    let config = script("berlin.toml", "[sandbox]\ntime_zone = \"europe/berlin\"\n");
    let out = quickforge(&["run", "--config", &config, "-"], Some(code));
    assert_eq!(
        stdout_json(&out),
        json!({ "time": "17:04:09", "zone": "Europe/Berlin", "price": "1.234,50\u{a0}€" })
    );

    let config = script("mars.toml", "[sandbox]\n\ntime_zone = \"Mars/Olympus\"\n");
    let out = quickforge(&["run", "--config", &config, "-"], Some(code));
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("sandbox.time_zone")
            && stderr.contains("mars.toml:3")
            && stderr.contains("Mars/Olympus"),
        "{stderr}"
    );
}
