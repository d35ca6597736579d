// `Intl` of the quickforge guest (NumberFormat, DateTimeFormat, Collator,
// PluralRules, getCanonicalLocales) and the locale-aware methods that use it:
// Number/Date `toLocaleString`, `toLocaleDateString`, `toLocaleTimeString`,
// `String.prototype.localeCompare`.
//
// This file resolves ECMA-402's options into a spec array and a cache key;
// the natives (`apis/intl.rs`) format with ICU4X. Like `web.js`, it is one
// function expression compiled at snapshot time and called with `host`.
//
// What differs from a browser, on purpose: the default locale is en-US and
// the default time zone UTC (or the host's `[sandbox] time_zone`), not the
// machine's; calendars other than Gregorian and numbering systems other
// than the locale's default are not served.
(function (host) {
  "use strict";

  const global = globalThis;
  const ObjectDefineProperty = Object.defineProperty;
  const ArrayIsArray = Array.isArray;
  const TypeErrorCtor = TypeError;
  const RangeErrorCtor = RangeError;
  const StringCtor = String;
  const NumberCtor = Number;
  const MathTrunc = Math.trunc;
  const apply = Reflect.apply;
  const dateGetTime = Date.prototype.getTime;
  const numberValueOf = Number.prototype.valueOf;
  const intlLocale = host.intlLocale;
  const intlNumber = host.intlNumber;
  const intlDate = host.intlDate;
  const intlCompare = host.intlCompare;
  const intlPlural = host.intlPlural;
  const intlZone = host.intlZone;

  const DEFAULT_LOCALE = "en-US";
  // The run's time zone: the host's `[sandbox] time_zone`, else UTC.
  const hostTimeZone = host.timeZone;
  const defaultZone = () => hostTimeZone() ?? "UTC";

  // Every locale resolves (ICU4X falls back to the root locale for the ones
  // it has no data for); these are the families whose own data is carried
  // (guest/intl/export), which `supportedLocalesOf` reports.
  const SERVED = { __proto__: null, en: 1, de: 1, fr: 1, es: 1, pt: 1, it: 1, ja: 1, zh: 1, ko: 1, ru: 1 };

  // ISO 4217 minor units of the currencies that do not have two (ECMA-402's
  // CurrencyDigits); every other code has two.
  const CURRENCY_DIGITS = {
    __proto__: null,
    BHD: 3, IQD: 3, JOD: 3, KWD: 3, LYD: 3, OMR: 3, TND: 3,
    BIF: 0, CLP: 0, DJF: 0, GNF: 0, ISK: 0, JPY: 0, KMF: 0, KRW: 0, PYG: 0,
    RWF: 0, UGX: 0, UYI: 0, VND: 0, VUV: 0, XAF: 0, XOF: 0, XPF: 0,
  };

  const canonicalList = (locales) => {
    if (locales === undefined) return [];
    const list = typeof locales === "string" || (typeof locales === "object" && locales !== null && !ArrayIsArray(locales) && typeof locales.baseName === "string")
      ? [locales]
      : locales;
    if (list === null || (typeof list !== "object" && typeof list !== "function")) {
      throw new TypeErrorCtor("locales must be a string or an array of strings");
    }
    const out = [];
    const n = list.length >>> 0;
    for (let i = 0; i < n; i++) {
      const tag = list[i];
      if (typeof tag !== "string" && (typeof tag !== "object" || tag === null)) {
        throw new TypeErrorCtor("a locale must be a string, got " + (tag === null ? "null" : typeof tag));
      }
      const canonical = intlLocale(StringCtor(tag));
      if (out.indexOf(canonical) < 0) out.push(canonical);
    }
    return out;
  };
  const resolveLocale = (locales) => {
    if (typeof locales === "string") return intlLocale(locales);
    const list = canonicalList(locales);
    return list.length ? list[0] : DEFAULT_LOCALE;
  };
  // `tag` with a Unicode extension keyword added (`kn`, `hc`, ...), unless
  // the tag already names that keyword.
  const withKeyword = (tag, key, value) => {
    if (tag.indexOf("-u-") >= 0) {
      if (tag.indexOf("-" + key + "-") >= 0 || tag.indexOf("-x-") >= 0) return tag;
      return intlLocale(tag + "-" + key + "-" + value);
    }
    return intlLocale(tag + "-u-" + key + "-" + value);
  };

  const toOptions = (options) => {
    if (options === undefined) return { __proto__: null };
    if (options === null) throw new TypeErrorCtor("options must be an object, got null");
    return Object(options);
  };
  const getOption = (options, name, allowed, fallback) => {
    let value = options[name];
    if (value === undefined) return fallback;
    if (allowed === "boolean") return !!value;
    value = StringCtor(value);
    if (allowed && allowed.indexOf(value) < 0) {
      throw new RangeErrorCtor("Value " + value + " out of range for " + name + ": use one of " + allowed.join(", "));
    }
    return value;
  };
  const getNumber = (options, name, min, max, fallback) => {
    const raw = options[name];
    if (raw === undefined) return fallback;
    const value = NumberCtor(raw);
    if (value !== value || value < min || value > max) {
      throw new RangeErrorCtor(name + " value is out of range: it must be between " + min + " and " + max);
    }
    return MathTrunc(value);
  };

  // -- NumberFormat -------------------------------------------------------------

  const numberState = new WeakMap();
  const numberSlots = (self, method) => {
    const state = typeof self === "object" && self !== null ? numberState.get(self) : undefined;
    if (!state) throw new TypeErrorCtor("Intl.NumberFormat.prototype." + method + " called on an incompatible receiver");
    return state;
  };

  function resolveNumber(locales, options) {
    const locale = resolveLocale(locales);
    options = toOptions(options);
    const style = getOption(options, "style", ["decimal", "percent", "currency", "unit"], "decimal");
    if (style === "unit") {
      throw new RangeErrorCtor("style \"unit\" is not supported in this sandbox: format the number and append the unit");
    }
    let currency = getOption(options, "currency", undefined, undefined);
    if (currency !== undefined) {
      if (!/^[A-Za-z]{3}$/.test(currency)) throw new RangeErrorCtor("Invalid currency code: " + currency);
      currency = currency.toUpperCase();
    }
    if (style === "currency" && currency === undefined) {
      throw new TypeErrorCtor("Currency code is required with currency style.");
    }
    const currencyDisplay = getOption(options, "currencyDisplay", ["code", "symbol", "narrowSymbol", "name"], "symbol");
    const notation = getOption(options, "notation", ["standard", "scientific", "engineering", "compact"], "standard");
    if (notation === "scientific" || notation === "engineering") {
      throw new RangeErrorCtor("notation \"" + notation + "\" is not supported in this sandbox: use toExponential");
    }
    const compactDisplay = getOption(options, "compactDisplay", ["short", "long"], "short");
    const cDigits = style === "currency" ? (CURRENCY_DIGITS[currency] ?? 2) : 0;
    const minInt = getNumber(options, "minimumIntegerDigits", 1, 21, 1);
    const hasSignificant = options.minimumSignificantDigits !== undefined || options.maximumSignificantDigits !== undefined;
    let minSig = 0;
    let maxSig = 0;
    let minFrac;
    let maxFrac;
    if (hasSignificant) {
      minSig = getNumber(options, "minimumSignificantDigits", 1, 21, 1);
      maxSig = getNumber(options, "maximumSignificantDigits", minSig, 21, 21);
      minFrac = 0;
      maxFrac = 0;
    } else {
      const minDefault = notation === "compact" ? 0 : cDigits;
      const maxDefault = notation === "compact" ? 0 : style === "currency" ? cDigits : style === "percent" ? 0 : 3;
      minFrac = getNumber(options, "minimumFractionDigits", 0, 100, undefined);
      maxFrac = getNumber(options, "maximumFractionDigits", 0, 100, undefined);
      if (minFrac === undefined && maxFrac === undefined) {
        minFrac = minDefault;
        maxFrac = maxDefault;
      } else if (minFrac === undefined) {
        minFrac = minDefault < maxFrac ? minDefault : maxFrac;
      } else if (maxFrac === undefined) {
        maxFrac = maxDefault > minFrac ? maxDefault : minFrac;
      } else if (minFrac > maxFrac) {
        throw new RangeErrorCtor("maximumFractionDigits value is out of range: it is below minimumFractionDigits");
      }
    }
    let grouping = options.useGrouping;
    if (grouping === undefined) grouping = notation === "compact" ? "min2" : "auto";
    else if (grouping === true || grouping === "true") grouping = "always";
    else if (grouping === false || grouping === "false" || grouping === "" || grouping === null) grouping = "false";
    else grouping = getOption({ useGrouping: grouping }, "useGrouping", ["min2", "auto", "always"], "auto");
    const signDisplay = getOption(options, "signDisplay", ["auto", "never", "always", "exceptZero", "negative"], "auto");
    const spec = [locale, style, currency ?? "", currencyDisplay, notation, compactDisplay, grouping, minInt, minFrac, maxFrac, minSig, maxSig, signDisplay];
    const resolved = { locale, numberingSystem: "latn", style };
    if (style === "currency") {
      resolved.currency = currency;
      resolved.currencyDisplay = currencyDisplay;
    }
    resolved.minimumIntegerDigits = minInt;
    if (hasSignificant) {
      resolved.minimumSignificantDigits = minSig;
      resolved.maximumSignificantDigits = maxSig;
    } else {
      resolved.minimumFractionDigits = minFrac;
      resolved.maximumFractionDigits = maxFrac;
    }
    resolved.useGrouping = grouping === "false" ? false : grouping;
    resolved.notation = notation;
    if (notation === "compact") resolved.compactDisplay = compactDisplay;
    resolved.signDisplay = signDisplay;
    return { spec, key: spec.join("\u0000"), resolved };
  }

  // A BigInt goes over as its digits, so none is lost to a double.
  const toNumeric = (value) => (typeof value === "bigint" ? StringCtor(value) : NumberCtor(value));

  class NumberFormat {
    constructor(locales, options) {
      numberState.set(this, resolveNumber(locales, options));
    }
    get format() {
      const state = numberSlots(this, "format");
      if (!state.bound) state.bound = (value) => intlNumber(state.key, state.spec, toNumeric(value));
      return state.bound;
    }
    formatToParts(value) {
      const state = numberSlots(this, "formatToParts");
      return [{ type: "literal", value: intlNumber(state.key, state.spec, toNumeric(value)) }];
    }
    resolvedOptions() {
      return { ...numberSlots(this, "resolvedOptions").resolved };
    }
    static supportedLocalesOf(locales) {
      return supported(locales);
    }
  }

  // -- DateTimeFormat -----------------------------------------------------------

  const dateState = new WeakMap();
  const dateSlots = (self, method) => {
    const state = typeof self === "object" && self !== null ? dateState.get(self) : undefined;
    if (!state) throw new TypeErrorCtor("Intl.DateTimeFormat.prototype." + method + " called on an incompatible receiver");
    return state;
  };

  const STYLES = ["full", "long", "medium", "short"];
  function resolveDate(locales, options, required, defaults) {
    let locale = resolveLocale(locales);
    options = toOptions(options);
    const hour12 = options.hour12;
    const hourCycle = getOption(options, "hourCycle", ["h11", "h12", "h23", "h24"], undefined);
    if (hour12 !== undefined) locale = withKeyword(locale, "hc", hour12 ? "h12" : "h23");
    else if (hourCycle !== undefined) locale = withKeyword(locale, "hc", hourCycle === "h11" || hourCycle === "h12" ? "h12" : "h23");
    const zone = options.timeZone === undefined ? defaultZone() : intlZone(StringCtor(options.timeZone));
    const weekday = getOption(options, "weekday", ["narrow", "short", "long"], undefined);
    const year = getOption(options, "year", ["2-digit", "numeric"], undefined);
    const month = getOption(options, "month", ["2-digit", "numeric", "narrow", "short", "long"], undefined);
    const day = getOption(options, "day", ["2-digit", "numeric"], undefined);
    let hour = getOption(options, "hour", ["2-digit", "numeric"], undefined);
    let minute = getOption(options, "minute", ["2-digit", "numeric"], undefined);
    let second = getOption(options, "second", ["2-digit", "numeric"], undefined);
    const dateStyle = getOption(options, "dateStyle", STYLES, undefined);
    const timeStyle = getOption(options, "timeStyle", STYLES, undefined);
    const hasComponents = weekday || year || month || day || hour || minute || second;
    if ((dateStyle || timeStyle) && hasComponents) {
      throw new TypeErrorCtor("dateStyle and timeStyle cannot be combined with weekday, year, month, day, hour, minute or second");
    }
    let length = "short";
    let fields = "";
    let time = "";
    let yearStyle = "numeric";
    let twoDigit = false;
    if (dateStyle || timeStyle) {
      if (dateStyle) {
        fields = dateStyle === "full" ? "YMDE" : "YMD";
        length = dateStyle === "full" || dateStyle === "long" ? "long" : dateStyle;
        if (dateStyle === "short") yearStyle = "2-digit";
      }
      if (timeStyle) time = timeStyle === "short" ? "minute" : "second";
    } else {
      let y = year;
      let m = month;
      let d = day;
      // ECMA-402's ToDateTimeOptions: the defaults apply only when the
      // options name none of the fields the method requires.
      let needDefaults = true;
      if ((required === "date" || required === "any") && (weekday || y || m || d)) needDefaults = false;
      if ((required === "time" || required === "any") && (hour || minute || second)) needDefaults = false;
      if (needDefaults && (defaults === "date" || defaults === "all")) y = m = d = "numeric";
      if (needDefaults && (defaults === "time" || defaults === "all")) hour = minute = second = "numeric";
      if (m === "2-digit" || d === "2-digit" || hour === "2-digit") twoDigit = true;
      if (y && m && d) fields = "YMD";
      else if (y && m) fields = "YM";
      else if (m && d) fields = "MD";
      else if (y && d) fields = "YMD";
      else if (y) fields = "Y";
      else if (m) fields = "M";
      else if (d) fields = "D";
      if (weekday) fields = fields === "" ? "E" : fields === "D" ? "DE" : fields === "MD" ? "MDE" : fields === "YMD" ? "YMDE" : fields;
      if (m === "long" || (!m && weekday === "long")) length = "long";
      else if (m === "short" || m === "narrow" || (!m && weekday)) length = "medium";
      if (y === "2-digit") yearStyle = "2-digit";
      if (second) time = "second";
      else if (minute) time = "minute";
      else if (hour) time = "hour";
    }
    const spec = [locale, length, fields, time, yearStyle, zone, twoDigit];
    const resolved = { locale, calendar: "gregory", numberingSystem: "latn", timeZone: zone };
    if (dateStyle) resolved.dateStyle = dateStyle;
    if (timeStyle) resolved.timeStyle = timeStyle;
    if (!dateStyle && !timeStyle) {
      if (weekday) resolved.weekday = weekday;
      if (fields.indexOf("Y") >= 0) resolved.year = yearStyle;
      if (fields.indexOf("M") >= 0) resolved.month = month || "numeric";
      if (fields.indexOf("D") >= 0) resolved.day = day || "numeric";
      if (time) resolved.hour = hour || "numeric";
      if (time === "minute" || time === "second") resolved.minute = "2-digit";
      if (time === "second") resolved.second = "2-digit";
    }
    if (time) resolved.hour12 = hour12 !== undefined ? !!hour12 : hourCycle ? hourCycle === "h11" || hourCycle === "h12" : undefined;
    if (resolved.hour12 === undefined) delete resolved.hour12;
    return { spec, key: spec.join("\u0000"), resolved };
  }

  const timeValue = (date) => {
    if (date === undefined) return Date.now();
    if (typeof date === "object" && date !== null && date instanceof Date) return apply(dateGetTime, date, []);
    return NumberCtor(date);
  };

  class DateTimeFormat {
    constructor(locales, options) {
      dateState.set(this, resolveDate(locales, options, "any", "date"));
    }
    get format() {
      const state = dateSlots(this, "format");
      if (!state.bound) state.bound = (date) => intlDate(state.key, state.spec, timeValue(date));
      return state.bound;
    }
    formatToParts(date) {
      const state = dateSlots(this, "formatToParts");
      return [{ type: "literal", value: intlDate(state.key, state.spec, timeValue(date)) }];
    }
    resolvedOptions() {
      return { ...dateSlots(this, "resolvedOptions").resolved };
    }
    static supportedLocalesOf(locales) {
      return supported(locales);
    }
  }

  // -- Collator and PluralRules -------------------------------------------------

  const collatorState = new WeakMap();
  function resolveCollator(locales, options) {
    let locale = resolveLocale(locales);
    options = toOptions(options);
    const usage = getOption(options, "usage", ["sort", "search"], "sort");
    const sensitivity = getOption(options, "sensitivity", ["base", "accent", "case", "variant"], "variant");
    const ignorePunctuation = getOption(options, "ignorePunctuation", "boolean", false);
    const numeric = getOption(options, "numeric", "boolean", undefined);
    const caseFirst = getOption(options, "caseFirst", ["upper", "lower", "false"], undefined);
    if (numeric) locale = withKeyword(locale, "kn", "true");
    if (caseFirst !== undefined && caseFirst !== "false") locale = withKeyword(locale, "kf", caseFirst);
    const spec = [locale, sensitivity, ignorePunctuation];
    const resolved = { locale, usage, sensitivity, ignorePunctuation, collation: "default", numeric: !!numeric, caseFirst: caseFirst ?? "false" };
    return { spec, key: spec.join("\u0000"), resolved };
  }

  class Collator {
    constructor(locales, options) {
      collatorState.set(this, resolveCollator(locales, options));
    }
    get compare() {
      const state = collatorState.get(this);
      if (!state) throw new TypeErrorCtor("Intl.Collator.prototype.compare called on an incompatible receiver");
      if (!state.bound) state.bound = (a, b) => intlCompare(state.key, state.spec, StringCtor(a), StringCtor(b));
      return state.bound;
    }
    resolvedOptions() {
      const state = collatorState.get(this);
      if (!state) throw new TypeErrorCtor("Intl.Collator.prototype.resolvedOptions called on an incompatible receiver");
      return { ...state.resolved };
    }
    static supportedLocalesOf(locales) {
      return supported(locales);
    }
  }

  const pluralState = new WeakMap();
  class PluralRules {
    constructor(locales, options) {
      const locale = resolveLocale(locales);
      const type = getOption(toOptions(options), "type", ["cardinal", "ordinal"], "cardinal");
      const spec = [locale, type];
      pluralState.set(this, { spec, key: spec.join("\u0000"), resolved: { locale, type } });
    }
    select(n) {
      const state = pluralState.get(this);
      if (!state) throw new TypeErrorCtor("Intl.PluralRules.prototype.select called on an incompatible receiver");
      return intlPlural(state.key, state.spec, NumberCtor(n));
    }
    resolvedOptions() {
      const state = pluralState.get(this);
      if (!state) throw new TypeErrorCtor("Intl.PluralRules.prototype.resolvedOptions called on an incompatible receiver");
      return { ...state.resolved };
    }
    static supportedLocalesOf(locales) {
      return supported(locales);
    }
  }

  function supported(locales) {
    const out = [];
    const list = canonicalList(locales);
    for (let i = 0; i < list.length; i++) {
      if (SERVED[list[i].split("-")[0]]) out.push(list[i]);
    }
    return out;
  }

  // NumberFormat, DateTimeFormat and Collator may be called without `new`
  // (ECMA-402 keeps that for old code, and `Intl.DateTimeFormat()
  // .resolvedOptions().timeZone` is how scripts ask for the zone): each is a
  // plain function that constructs its class, sharing its prototype.
  const callable = (Class) => {
    const F = {
      [Class.name]: function (locales, options) {
        return new Class(locales, options);
      },
    }[Class.name];
    ObjectDefineProperty(F, "prototype", { value: Class.prototype, writable: false });
    ObjectDefineProperty(Class.prototype, "constructor", { value: F, writable: true, configurable: true });
    F.supportedLocalesOf = Class.supportedLocalesOf;
    return F;
  };

  const Intl = {
    NumberFormat: callable(NumberFormat),
    DateTimeFormat: callable(DateTimeFormat),
    Collator: callable(Collator),
    PluralRules,
    getCanonicalLocales(locales) {
      return canonicalList(locales);
    },
  };
  ObjectDefineProperty(Intl, Symbol.toStringTag, { value: "Intl", configurable: true });

  // -- the locale-aware methods of the built-ins -------------------------------

  // The argument-free calls (the common case: `n.toLocaleString()` over a
  // whole array) share one resolved format each.
  let defaultNumber;
  let defaultCollator;
  const defaultDates = { __proto__: null };

  const methods = [
    [Number.prototype, "toLocaleString", function toLocaleString(locales, options) {
      const x = apply(numberValueOf, this, []);
      let state;
      if (locales === undefined && options === undefined) state = defaultNumber ??= resolveNumber();
      else state = resolveNumber(locales, options);
      return intlNumber(state.key, state.spec, x);
    }],
    [String.prototype, "localeCompare", function localeCompare(that, locales, options) {
      if (this === undefined || this === null) throw new TypeErrorCtor("String.prototype.localeCompare called on null or undefined");
      let state;
      if (locales === undefined && options === undefined) state = defaultCollator ??= resolveCollator();
      else state = resolveCollator(locales, options);
      return intlCompare(state.key, state.spec, StringCtor(this), StringCtor(that));
    }],
  ];
  const dateMethod = (name, required, defaults) => [Date.prototype, name, {
    [name](locales, options) {
      const t = apply(dateGetTime, this, []);
      if (t !== t) return "Invalid Date";
      let state;
      if (locales === undefined && options === undefined) state = defaultDates[name] ??= resolveDate(undefined, undefined, required, defaults);
      else state = resolveDate(locales, options, required, defaults);
      return intlDate(state.key, state.spec, t);
    },
  }[name]];
  methods.push(dateMethod("toLocaleString", "any", "all"));
  methods.push(dateMethod("toLocaleDateString", "date", "date"));
  methods.push(dateMethod("toLocaleTimeString", "time", "time"));
  for (let i = 0; i < methods.length; i++) {
    ObjectDefineProperty(methods[i][0], methods[i][1], { value: methods[i][2], writable: true, enumerable: false, configurable: true });
  }
  for (const ctor of [NumberFormat, DateTimeFormat, Collator, PluralRules]) {
    ObjectDefineProperty(ctor.prototype, Symbol.toStringTag, { value: "Intl." + ctor.name, configurable: true });
  }
  ObjectDefineProperty(global, "Intl", { value: Intl, writable: true, enumerable: false, configurable: true });
})
