//! The natives behind `Intl` and the `toLocaleString` family (the classes
//! are in `intl.js`, which resolves the options and hands these natives a
//! key and a spec array): numbers, percents, currencies and compact numbers
//! from ICU4X's decimal and experimental formatters, dates and times from
//! its Gregorian date-time formatter, string comparison from its collator.
//!
//! The data is ICU4X's own (CLDR 48), cut down to the locale families
//! listed in `guest/intl/export` (the ten of issue 18 and their regional
//! variants); any other locale gets the root locale's data, as ICU4X gives
//! every locale it lacks.
//!
//! A formatter is built once per distinct spec in a run and kept in a small
//! cache: `arr.map(n => n.toLocaleString("de-DE"))` builds one.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

use fixed_decimal::{
    Decimal, FloatPrecision, Sign, SignDisplay, SignedRoundingMode, UnsignedRoundingMode,
};
use icu_calendar::Gregorian;
use icu_collator::options::{AlternateHandling, CaseLevel, CollatorOptions, Strength};
use icu_collator::{Collator, CollatorPreferences};
use icu_datetime::fieldsets::builder::{DateFields, FieldSetBuilder};
use icu_datetime::fieldsets::enums::CompositeDateTimeFieldSet;
use icu_datetime::options::{Alignment, Length, TimePrecision, YearStyle};
use icu_datetime::{DateTimeFormatterPreferences, FixedCalendarDateTimeFormatter};
use icu_decimal::options::{
    CompactDecimalFormatterOptions, DecimalFormatterOptions, GroupingStrategy,
};
use icu_decimal::{CompactDecimalFormatter, DecimalFormatter, DecimalFormatterPreferences};
use icu_experimental::dimension::currency::CurrencyType;
use icu_experimental::dimension::currency::formatter::CurrencyFormatter;
use icu_experimental::dimension::percent::formatter::PercentFormatter;
use icu_locale_core::Locale;
use icu_locale_core::extensions::unicode::Value;
use icu_plurals::{PluralCategory, PluralRuleType, PluralRules, PluralRulesPreferences};
use icu_time::zone::UtcOffset;
use icu_time::{DateTime, ZonedDateTime};
use jiff::Timestamp;
use jiff::tz::TimeZone;
use rquickjs::{Array, Ctx, Exception, Function, Object, Result};

/// Most formatters of one kind kept per run. Scripts use a handful of
/// locale and option combinations; a script that builds more (a locale per
/// row) only rebuilds them, each in a few microseconds, so the cache
/// bounds memory rather than being a contract.
const MAX_CACHED: usize = 64;

/// A cache of built formatters, keyed by the spec `intl.js` derived.
struct Cache<T>(RefCell<BTreeMap<String, Rc<T>>>);

impl<T> Cache<T> {
    const fn new() -> Self {
        Self(RefCell::new(BTreeMap::new()))
    }

    fn get_or_build(&self, key: String, build: impl FnOnce() -> Result<T>) -> Result<Rc<T>> {
        if let Some(hit) = self.0.borrow().get(&key) {
            return Ok(hit.clone());
        }
        let built = Rc::new(build()?);
        let mut map = self.0.borrow_mut();
        if map.len() >= MAX_CACHED {
            map.clear();
        }
        map.insert(key, built.clone());
        Ok(built)
    }
}

thread_local! {
    /// The run's default time zone (`run-options.time-zone`).
    static TIME_ZONE: RefCell<Option<String>> = const { RefCell::new(None) };
    static NUMBERS: Cache<NumberFormat> = const { Cache::new() };
    static DATES: Cache<DateFormat> = const { Cache::new() };
    static COLLATORS: Cache<Collator> = const { Cache::new() };
    static PLURALS: Cache<PluralRules> = const { Cache::new() };
}

/// Starts a run: its default time zone.
pub fn begin(time_zone: Option<String>) {
    TIME_ZONE.with(|z| *z.borrow_mut() = time_zone);
}

/// The run's default time zone, `undefined` for UTC.
fn time_zone() -> Option<String> {
    TIME_ZONE.with(|z| z.borrow().clone())
}

fn range_error(ctx: &Ctx<'_>, message: &str) -> rquickjs::Error {
    Exception::throw_range(ctx, message)
}

/// A BCP 47 tag, or a `RangeError` as ECMA-402 has it.
fn parse_locale(ctx: &Ctx<'_>, tag: &str) -> Result<Locale> {
    Locale::try_from_str(tag).map_err(|_| {
        range_error(
            ctx,
            &format!("Incorrect locale information provided: {tag:?}"),
        )
    })
}

/// `Intl.getCanonicalLocales` for one tag: its canonical form.
fn canonical_locale(ctx: Ctx<'_>, tag: String) -> Result<String> {
    Ok(parse_locale(&ctx, &tag)?.to_string())
}

// -- numbers ------------------------------------------------------------------

enum NumberStyle {
    Decimal(DecimalFormatter),
    Percent(PercentFormatter<DecimalFormatter>),
    Currency(CurrencyFormatter<DecimalFormatter>),
    Compact(CompactDecimalFormatter),
}

/// A resolved `Intl.NumberFormat`.
struct NumberFormat {
    style: NumberStyle,
    min_integer: i16,
    min_fraction: i16,
    max_fraction: i16,
    /// Significant digits, when the options asked for them (0: not).
    min_significant: i16,
    max_significant: i16,
    sign: SignDisplay,
}

/// How `Intl` shows infinity and NaN, which `Decimal` cannot hold: CLDR's
/// symbols, the same in every locale served.
const INFINITY: &str = "∞";
const NAN: &str = "NaN";

/// The spec `intl.js` hands over, index by index.
mod spec {
    pub const LOCALE: usize = 0;
    pub const STYLE: usize = 1;
    pub const CURRENCY: usize = 2;
    pub const CURRENCY_DISPLAY: usize = 3;
    pub const NOTATION: usize = 4;
    pub const COMPACT_DISPLAY: usize = 5;
    pub const GROUPING: usize = 6;
    pub const MIN_INTEGER: usize = 7;
    pub const MIN_FRACTION: usize = 8;
    pub const MAX_FRACTION: usize = 9;
    pub const MIN_SIGNIFICANT: usize = 10;
    pub const MAX_SIGNIFICANT: usize = 11;
    pub const SIGN: usize = 12;
}

fn data_error(ctx: &Ctx<'_>, what: &str, e: impl std::fmt::Display) -> rquickjs::Error {
    range_error(ctx, &format!("{what}: {e}"))
}

impl NumberFormat {
    fn build(ctx: &Ctx<'_>, s: &Array<'_>) -> Result<Self> {
        let locale = parse_locale(ctx, &s.get::<String>(spec::LOCALE)?)?;
        let grouping = match s.get::<String>(spec::GROUPING)?.as_str() {
            "always" => GroupingStrategy::Always,
            "min2" => GroupingStrategy::Min2,
            "false" => GroupingStrategy::Never,
            _ => GroupingStrategy::Auto,
        };
        let mut options = DecimalFormatterOptions::default();
        options.grouping_strategy = Some(grouping);
        let prefs = DecimalFormatterPreferences::from(&locale);
        let decimal = DecimalFormatter::try_new(prefs, options)
            .map_err(|e| data_error(ctx, "number format", e))?;
        let style = match (
            s.get::<String>(spec::NOTATION)?.as_str(),
            s.get::<String>(spec::STYLE)?.as_str(),
        ) {
            ("compact", _) => {
                let long = s.get::<String>(spec::COMPACT_DISPLAY)? == "long";
                let prefs = (&locale).into();
                let options = CompactDecimalFormatterOptions::default();
                let built = if long {
                    CompactDecimalFormatter::try_new_long(prefs, options)
                } else {
                    CompactDecimalFormatter::try_new_short(prefs, options)
                };
                NumberStyle::Compact(built.map_err(|e| data_error(ctx, "compact format", e))?)
            }
            (_, "percent") => NumberStyle::Percent(
                PercentFormatter::try_new_with_decimal_formatter(
                    (&locale).into(),
                    decimal,
                    Default::default(),
                )
                .map_err(|e| data_error(ctx, "percent format", e))?,
            ),
            (_, "currency") => {
                let code = s.get::<String>(spec::CURRENCY)?.to_ascii_lowercase();
                let currency = Value::try_from_str(&code)
                    .ok()
                    .and_then(|v| CurrencyType::try_from(&v).ok())
                    .ok_or_else(|| range_error(ctx, &format!("Invalid currency code: {code}")))?;
                let prefs = (&locale).into();
                let built = match s.get::<String>(spec::CURRENCY_DISPLAY)?.as_str() {
                    "narrowSymbol" => CurrencyFormatter::try_new_symbol_narrow(
                        prefs,
                        currency,
                        Default::default(),
                    ),
                    "code" => CurrencyFormatter::try_new_code(prefs, currency, Default::default()),
                    "name" => CurrencyFormatter::try_new_name(prefs, currency),
                    _ => CurrencyFormatter::try_new_symbol(prefs, currency, Default::default()),
                };
                NumberStyle::Currency(built.map_err(|e| data_error(ctx, "currency format", e))?)
            }
            _ => NumberStyle::Decimal(decimal),
        };
        let sign = match s.get::<String>(spec::SIGN)?.as_str() {
            "never" => SignDisplay::Never,
            "always" => SignDisplay::Always,
            "exceptZero" => SignDisplay::ExceptZero,
            "negative" => SignDisplay::Negative,
            _ => SignDisplay::Auto,
        };
        let digits = |i| -> Result<i16> { Ok(s.get::<i32>(i)?.clamp(0, 100) as i16) };
        Ok(Self {
            style,
            min_integer: digits(spec::MIN_INTEGER)?,
            min_fraction: digits(spec::MIN_FRACTION)?,
            max_fraction: digits(spec::MAX_FRACTION)?,
            min_significant: digits(spec::MIN_SIGNIFICANT)?,
            max_significant: digits(spec::MAX_SIGNIFICANT)?,
            sign,
        })
    }

    /// Rounds and pads `value` as the digit options say (ECMA-402's
    /// "half expand", on the shortest decimal that round-trips the double,
    /// as V8 does).
    fn decimal(&self, value: Numeric) -> Option<Decimal> {
        let mut d = match value {
            Numeric::Float(x) => Decimal::try_from_f64(x, FloatPrecision::RoundTrip).ok()?,
            Numeric::Exact(d) => d,
        };
        if matches!(self.style, NumberStyle::Percent(_)) {
            d.multiply_pow10(2);
        }
        let half_expand = SignedRoundingMode::Unsigned(UnsignedRoundingMode::HalfExpand);
        if self.max_significant > 0 {
            d.round_with_mode(magnitude_end(&d) - self.max_significant + 1, half_expand);
            d.absolute.trim_end();
            // Rounding may have carried into a new digit (999 → 1000).
            d.absolute
                .pad_end(magnitude_end(&d) - self.min_significant.max(1) + 1);
        } else if !matches!(self.style, NumberStyle::Compact(_)) {
            d.round_with_mode(-self.max_fraction, half_expand);
            d.absolute.trim_end();
            d.absolute.pad_end(-self.min_fraction);
        }
        d.absolute.pad_start(self.min_integer.max(1));
        d.apply_sign_display(self.sign);
        Some(d)
    }

    fn format(&self, value: Numeric) -> String {
        let negative = match &value {
            Numeric::Float(x) if x.is_nan() => return NAN.to_owned(),
            Numeric::Float(x) => *x < 0.0,
            Numeric::Exact(d) => d.sign == Sign::Negative,
        };
        let finite = !matches!(value, Numeric::Float(x) if x.is_infinite());
        let Some(d) = (if finite { self.decimal(value) } else { None }) else {
            let sign = match (negative, self.sign) {
                (_, SignDisplay::Never) => "",
                (true, _) => "-",
                (false, SignDisplay::Always | SignDisplay::ExceptZero) => "+",
                _ => "",
            };
            return format!("{sign}{INFINITY}");
        };
        match &self.style {
            NumberStyle::Decimal(f) => f.format(&d).to_string(),
            NumberStyle::Percent(f) => f.format(&d).to_string(),
            NumberStyle::Currency(f) => f.format_fixed_decimal(&d).to_string(),
            NumberStyle::Compact(f) => f.format(&d).to_string(),
        }
    }
}

/// The magnitude of the most significant digit of `d`; 0 for zero, whose
/// significant digits count from the ones place (`0.00` at three digits).
fn magnitude_end(d: &Decimal) -> i16 {
    if d.absolute.is_zero() {
        0
    } else {
        *d.absolute.magnitude_range().end()
    }
}

/// A number to format: a double, or a BigInt's exact digits.
enum Numeric {
    Float(f64),
    Exact(Decimal),
}

/// `Intl.NumberFormat.prototype.format`: `value` is a number, or a BigInt
/// as its decimal string (so 2**64 keeps every digit).
fn format_number(
    ctx: Ctx<'_>,
    key: String,
    spec: Array<'_>,
    value: rquickjs::Value<'_>,
) -> Result<String> {
    let format = NUMBERS.with(|c| c.get_or_build(key, || NumberFormat::build(&ctx, &spec)))?;
    let value = match value.as_string() {
        Some(digits) => Numeric::Exact(
            Decimal::try_from_str(&digits.to_string()?)
                .map_err(|_| range_error(&ctx, "not a decimal number"))?,
        ),
        None => Numeric::Float(value.as_number().unwrap_or(f64::NAN)),
    };
    Ok(format.format(value))
}

// -- dates --------------------------------------------------------------------

/// A resolved `Intl.DateTimeFormat`: a Gregorian formatter and its time
/// zone.
struct DateFormat {
    formatter: FixedCalendarDateTimeFormatter<Gregorian, CompositeDateTimeFieldSet>,
    zone: Zone,
}

/// A time zone: UTC or a fixed offset, or an IANA zone whose offset
/// depends on the instant (daylight saving time, history).
enum Zone {
    Fixed(UtcOffset),
    Named(TimeZone),
}

impl Zone {
    /// `name` as ECMA-402 accepts it: `UTC` and its aliases, an offset
    /// (`+05:30`, `-0800`), or an IANA name in any case.
    fn parse(name: &str) -> Option<(String, Zone)> {
        let upper = name.to_ascii_uppercase();
        if matches!(
            upper.as_str(),
            "UTC"
                | "ETC/UTC"
                | "GMT"
                | "ETC/GMT"
                | "Z"
                | "UCT"
                | "ETC/UCT"
                | "ZULU"
                | "ETC/ZULU"
                | "UNIVERSAL"
                | "ETC/UNIVERSAL"
                | "GREENWICH"
                | "ETC/GREENWICH"
                | "GMT0"
                | "ETC/GMT0"
                | "GMT+0"
                | "ETC/GMT+0"
                | "GMT-0"
                | "ETC/GMT-0"
        ) {
            return Some(("UTC".into(), Zone::Fixed(UtcOffset::zero())));
        }
        if let Some(rest) = name.strip_prefix(['+', '-']) {
            let digits: String = rest.chars().filter(|c| *c != ':').collect();
            let valid = digits.len() == 4
                && digits.bytes().all(|b| b.is_ascii_digit())
                && (rest.len() == 4 || (rest.len() == 5 && rest.as_bytes()[2] == b':'));
            let hours: i32 = digits.get(..2)?.parse().ok()?;
            let minutes: i32 = digits.get(2..)?.parse().ok()?;
            if !valid || hours > 23 || minutes > 59 {
                return None;
            }
            let sign = if name.starts_with('-') { -1 } else { 1 };
            let offset = UtcOffset::try_from_seconds(sign * (hours * 3600 + minutes * 60)).ok()?;
            let canonical = format!("{}{:02}:{:02}", &name[..1], hours, minutes);
            return Some((canonical, Zone::Fixed(offset)));
        }
        let zone = TimeZone::get(name).ok()?;
        let canonical = zone.iana_name()?.to_owned();
        Some((canonical, Zone::Named(zone)))
    }

    /// The offset from UTC at `epoch_ms`.
    fn offset_at(&self, epoch_ms: i64) -> UtcOffset {
        match self {
            Zone::Fixed(offset) => *offset,
            Zone::Named(zone) => Timestamp::from_millisecond(epoch_ms)
                .ok()
                .and_then(|t| UtcOffset::try_from_seconds(zone.to_offset(t).seconds()).ok())
                .unwrap_or(UtcOffset::zero()),
        }
    }
}

/// The canonical name of a time zone, or a `RangeError` that says what
/// the sandbox accepts.
fn canonical_zone(ctx: Ctx<'_>, name: String) -> Result<String> {
    match Zone::parse(&name) {
        Some((canonical, _)) => Ok(canonical),
        None => Err(range_error(
            &ctx,
            &format!(
                "Invalid time zone specified: {name} (use an IANA name such as \"Europe/Berlin\", \"UTC\" or an offset such as \"+05:30\")"
            ),
        )),
    }
}

/// The date spec `intl.js` hands over: locale (with any `-u-hc-` the
/// `hour12`/`hourCycle` options asked for), length, date fields, time
/// precision, year style, time zone (as [`canonical_zone`] gave it), and
/// whether a `2-digit` option asks for numeric fields padded to two digits.
mod date_spec {
    pub const LOCALE: usize = 0;
    pub const LENGTH: usize = 1;
    pub const DATE_FIELDS: usize = 2;
    pub const TIME: usize = 3;
    pub const YEAR: usize = 4;
    pub const ZONE: usize = 5;
    pub const TWO_DIGIT: usize = 6;
}

impl DateFormat {
    fn build(ctx: &Ctx<'_>, s: &Array<'_>) -> Result<Self> {
        let locale = parse_locale(ctx, &s.get::<String>(date_spec::LOCALE)?)?;
        let mut builder = FieldSetBuilder::new();
        builder.length = Some(match s.get::<String>(date_spec::LENGTH)?.as_str() {
            "long" => Length::Long,
            "medium" => Length::Medium,
            _ => Length::Short,
        });
        builder.date_fields = match s.get::<String>(date_spec::DATE_FIELDS)?.as_str() {
            "D" => Some(DateFields::D),
            "MD" => Some(DateFields::MD),
            "YMD" => Some(DateFields::YMD),
            "DE" => Some(DateFields::DE),
            "MDE" => Some(DateFields::MDE),
            "YMDE" => Some(DateFields::YMDE),
            "E" => Some(DateFields::E),
            "M" => Some(DateFields::M),
            "YM" => Some(DateFields::YM),
            "Y" => Some(DateFields::Y),
            _ => None,
        };
        builder.time_precision = match s.get::<String>(date_spec::TIME)?.as_str() {
            "hour" => Some(TimePrecision::Hour),
            "minute" => Some(TimePrecision::Minute),
            "second" => Some(TimePrecision::Second),
            _ => None,
        };
        if builder.date_fields.is_some_and(|f| {
            !matches!(
                f,
                DateFields::D | DateFields::DE | DateFields::E | DateFields::MD | DateFields::MDE
            )
        }) {
            builder.year_style = Some(match s.get::<String>(date_spec::YEAR)?.as_str() {
                "2-digit" => YearStyle::Auto,
                _ => YearStyle::Full,
            });
        }
        if s.get::<bool>(date_spec::TWO_DIGIT)? {
            builder.alignment = Some(Alignment::Column);
        }
        // A month or a year alone (a calendar period) takes no time of day.
        if builder
            .date_fields
            .is_some_and(|f| matches!(f, DateFields::M | DateFields::YM | DateFields::Y))
        {
            builder.time_precision = None;
        }
        let fields = if builder.date_fields.is_none() {
            builder.time_precision.get_or_insert(TimePrecision::Second);
            builder.build_time().map(CompositeDateTimeFieldSet::Time)
        } else {
            builder.build_composite_datetime()
        }
        .map_err(|e| range_error(ctx, &format!("unsupported date-time options: {e:?}")))?;
        let prefs = DateTimeFormatterPreferences::from(&locale);
        let formatter = FixedCalendarDateTimeFormatter::try_new(prefs, fields)
            .map_err(|e| data_error(ctx, "date-time format", e))?;
        let zone_name = s.get::<String>(date_spec::ZONE)?;
        let (_, zone) = Zone::parse(&zone_name).ok_or_else(|| {
            range_error(ctx, &format!("Invalid time zone specified: {zone_name}"))
        })?;
        Ok(Self { formatter, zone })
    }

    fn format(&self, epoch_ms: f64) -> String {
        let epoch_ms = epoch_ms as i64;
        let zoned = ZonedDateTime::from_epoch_milliseconds_and_utc_offset(
            epoch_ms,
            self.zone.offset_at(epoch_ms),
        );
        let date = zoned.date.to_calendar(Gregorian);
        self.formatter
            .format(&DateTime {
                date,
                time: zoned.time,
            })
            .to_string()
    }
}

/// `Intl.DateTimeFormat.prototype.format`, for a valid time value.
fn format_date(ctx: Ctx<'_>, key: String, spec: Array<'_>, epoch_ms: f64) -> Result<String> {
    if !epoch_ms.is_finite() {
        return Err(range_error(&ctx, "Invalid time value"));
    }
    let format = DATES.with(|c| c.get_or_build(key, || DateFormat::build(&ctx, &spec)))?;
    Ok(format.format(epoch_ms))
}

// -- collation and plurals ----------------------------------------------------

/// `Intl.Collator.prototype.compare`: spec is locale (with `-u-kn-true`
/// for `numeric` and `-u-kf-` for `caseFirst`), sensitivity, and whether
/// punctuation is ignored.
fn compare(ctx: Ctx<'_>, key: String, spec: Array<'_>, a: String, b: String) -> Result<i32> {
    let collator = COLLATORS.with(|c| {
        c.get_or_build(key, || {
            let locale = parse_locale(&ctx, &spec.get::<String>(0)?)?;
            let mut options = CollatorOptions::default();
            match spec.get::<String>(1)?.as_str() {
                "base" => options.strength = Some(Strength::Primary),
                "accent" => options.strength = Some(Strength::Secondary),
                "case" => {
                    options.strength = Some(Strength::Primary);
                    options.case_level = Some(CaseLevel::On);
                }
                _ => options.strength = Some(Strength::Tertiary),
            }
            if spec.get::<bool>(2)? {
                options.alternate_handling = Some(AlternateHandling::Shifted);
            }
            Collator::try_new(CollatorPreferences::from(&locale), options)
                .map(|c| c.static_to_owned())
                .map_err(|e| data_error(&ctx, "collator", e))
        })
    })?;
    Ok(collator.as_borrowed().compare(&a, &b) as i32)
}

/// `Intl.PluralRules.prototype.select`: spec is locale and type
/// (`cardinal` or `ordinal`).
fn plural(ctx: Ctx<'_>, key: String, spec: Array<'_>, n: f64) -> Result<&'static str> {
    let rules = PLURALS.with(|c| {
        c.get_or_build(key, || {
            let locale = parse_locale(&ctx, &spec.get::<String>(0)?)?;
            let kind = if spec.get::<String>(1)? == "ordinal" {
                PluralRuleType::Ordinal
            } else {
                PluralRuleType::Cardinal
            };
            PluralRules::try_new(PluralRulesPreferences::from(&locale), kind.into())
                .map_err(|e| data_error(&ctx, "plural rules", e))
        })
    })?;
    let Ok(d) = Decimal::try_from_f64(n.abs(), FloatPrecision::RoundTrip) else {
        return Ok("other");
    };
    Ok(match rules.category_for(&d) {
        PluralCategory::Zero => "zero",
        PluralCategory::One => "one",
        PluralCategory::Two => "two",
        PluralCategory::Few => "few",
        PluralCategory::Many => "many",
        PluralCategory::Other => "other",
    })
}

/// Puts the `intl*` natives on `host`.
pub fn register<'js>(ctx: &Ctx<'js>, host: &Object<'js>) -> Result<()> {
    host.set("intlLocale", Function::new(ctx.clone(), canonical_locale)?)?;
    host.set("intlNumber", Function::new(ctx.clone(), format_number)?)?;
    host.set("intlDate", Function::new(ctx.clone(), format_date)?)?;
    host.set("intlZone", Function::new(ctx.clone(), canonical_zone)?)?;
    host.set("timeZone", Function::new(ctx.clone(), time_zone)?)?;
    host.set("intlCompare", Function::new(ctx.clone(), compare)?)?;
    host.set("intlPlural", Function::new(ctx.clone(), plural)?)?;
    Ok(())
}
