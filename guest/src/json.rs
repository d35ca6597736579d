//! A fast JSON encoder for plain data, in front of `JSON.stringify`.
//!
//! QuickJS's `JSON.stringify` is general: for every call it builds a wrapper
//! object, a cycle stack and a JS array of keys per object, and looks up
//! `toJSON` on every value. For the small argument objects of a tool call
//! that setup is most of the cost (about a third of a `forge.callTool` round
//! trip). [`encode`] writes the same bytes directly for plain data — objects
//! whose class is `Object`, arrays, strings, numbers, booleans, `null` — and
//! gives up (`None`) on anything else, and on text over [`MAX_BYTES`] or
//! nesting or prototype chains over 64, so the caller falls back to
//! `JSON.stringify`, which then produces the value or the error.
//!
//! Giving up must be unobservable, so the encoder never runs script code: it
//! refuses getters, proxies and every other exotic class before touching
//! them, and any `toJSON` anywhere on an object's prototype chain. What it
//! reads is own data properties, through the C API, which for these classes
//! cannot reach script code.

use std::cell::Cell;
use std::ffi::c_char;
use std::fmt::Write as _;

use rquickjs::{Array, Ctx, Object, Value, qjs};

/// Deepest nesting encoded here; deeper data (and cycles, which are infinitely
/// deep) goes to `JSON.stringify`, which has its own stack check and reports
/// cycles with its usual error.
const MAX_DEPTH: u32 = 64;

/// Longest text written here: 1 MiB, the default argument and output size.
/// The text lives in Rust memory, outside QuickJS's memory limit, in the
/// 8 MiB of headroom between that limit and the linear-memory cap; longer
/// text goes to `JSON.stringify`, whose memory QuickJS counts, so a script
/// that serializes something huge still gets a catchable out-of-memory error
/// rather than a killed instance.
const MAX_BYTES: usize = 1 << 20;

/// Longest prototype chain walked (looking for `toJSON`); longer ones go to
/// `JSON.stringify`. Ordinary data has one or two.
const MAX_CHAIN: usize = 64;

/// Prototypes remembered per encoding as free of `toJSON`. Plain data has
/// two (`Object.prototype`, `Array.prototype`); a chain past this many is
/// still checked, only walked again each time.
const PROTO_CACHE: usize = 8;

thread_local! {
    /// QuickJS's class ids of ordinary objects and arrays (private to
    /// quickjs.c, so read off live objects by [`prepare`]); `None`
    /// until then, and the encoder always gives up.
    static KNOWN: Cell<Option<Known>> = const { Cell::new(None) };
}

/// What the encoder needs from the runtime, learned once.
#[derive(Clone, Copy)]
struct Known {
    object: qjs::JSClassID,
    array: qjs::JSClassID,
    /// The `toJSON` atom, held for the runtime's whole life.
    to_json: qjs::JSAtom,
}

/// Reads the class ids of `{}` and `[]` and interns `toJSON`; called once
/// while the engine is built, so they are part of the snapshot.
pub fn prepare(ctx: &Ctx<'_>) -> rquickjs::Result<()> {
    let object = Object::new(ctx.clone())?;
    let array = Array::new(ctx.clone())?;
    // SAFETY: both values are live objects.
    let known = unsafe {
        Known {
            object: qjs::JS_GetClassID(object.as_raw()),
            array: qjs::JS_GetClassID(array.as_raw()),
            to_json: qjs::JS_NewAtom(ctx.as_raw().as_ptr(), c"toJSON".as_ptr()),
        }
    };
    KNOWN.with(|c| c.set(Some(known)));
    Ok(())
}

/// `value` as the exact JSON text `JSON.stringify(value)` would give, if it is
/// plain data; `None` if it is not (or is `undefined` at the top), and
/// `JSON.stringify` should decide.
pub fn encode(ctx: &Ctx<'_>, value: &Value<'_>) -> Option<String> {
    // SAFETY: `ctx` is live and locked, and `value` belongs to it.
    unsafe { encode_raw(ctx.as_raw().as_ptr(), value.as_raw()) }
}

/// [`encode`] for an ordinary object only (`{...}`, not an array, function
/// or any other class): `None` for anything else.
///
/// # Safety
/// `ctx` must be the live context, locked, that `value` belongs to.
pub unsafe fn encode_object(ctx: *mut qjs::JSContext, value: qjs::JSValue) -> Option<String> {
    let known = KNOWN.with(Cell::get)?;
    // SAFETY: the caller's guarantee.
    unsafe {
        if !qjs::JS_IsObject(value) || qjs::JS_GetClassID(value) != known.object {
            return None;
        }
        encode_raw(ctx, value)
    }
}

/// [`encode`] on raw values.
///
/// # Safety
/// `ctx` must be the live context, locked, that `value` belongs to.
unsafe fn encode_raw(ctx: *mut qjs::JSContext, value: qjs::JSValue) -> Option<String> {
    let known = KNOWN.with(Cell::get)?;
    let mut enc = Encoder {
        ctx,
        known,
        out: String::new(),
        plain_protos: [0; PROTO_CACHE],
        plain_count: 0,
    };
    let written = enc.value(value, 0);
    // Giving up must leave nothing behind: a call that failed (only out of
    // memory can) left its exception pending, and JSON.stringify must start
    // clean. The encoder is only called with no exception pending.
    // SAFETY: `ctx` is the live context the caller holds the lock of.
    unsafe {
        if qjs::JS_HasException(ctx) {
            qjs::JS_FreeValue(ctx, qjs::JS_GetException(ctx));
        }
    }
    match written? {
        Written::Yes => Some(enc.out),
        Written::Nothing => None,
    }
}

/// Whether a value produced output, or is one JSON leaves out (`undefined`,
/// a symbol): skipped as an object member, `null` in an array.
enum Written {
    Yes,
    Nothing,
}

struct Encoder {
    ctx: *mut qjs::JSContext,
    known: Known,
    out: String,
    /// Prototypes already found to be ordinary objects without `toJSON`
    /// (compared by address; no script runs while encoding, so they stay so),
    /// the first `plain_count` of them.
    plain_protos: [usize; PROTO_CACHE],
    plain_count: usize,
}

/// A value the encoder owns a reference to, released when dropped.
struct Owned(*mut qjs::JSContext, qjs::JSValue);

impl Drop for Owned {
    fn drop(&mut self) {
        // SAFETY: the encoder took this reference and releases it once.
        unsafe { qjs::JS_FreeValue(self.0, self.1) }
    }
}

impl Encoder {
    fn value(&mut self, v: qjs::JSValue, depth: u32) -> Option<Written> {
        if self.out.len() > MAX_BYTES {
            return None;
        }
        // SAFETY: `v` is a live value borrowed from the caller for the whole
        // call; every reference taken below is released by `Owned` or
        // explicitly, and none of the calls can run script code (see the
        // module docs).
        unsafe {
            match qjs::JS_VALUE_GET_NORM_TAG(v) {
                qjs::JS_TAG_NULL => self.out.push_str("null"),
                qjs::JS_TAG_BOOL => self.out.push_str(if qjs::JS_VALUE_GET_BOOL(v) {
                    "true"
                } else {
                    "false"
                }),
                qjs::JS_TAG_INT => {
                    let mut digits = itoa::Buffer::new();
                    self.out.push_str(digits.format(qjs::JS_VALUE_GET_INT(v)));
                }
                qjs::JS_TAG_FLOAT64 => self.number(v, qjs::JS_VALUE_GET_FLOAT64(v))?,
                qjs::JS_TAG_STRING | qjs::JS_TAG_STRING_ROPE => self.raw_string(v, true)?,
                qjs::JS_TAG_UNDEFINED | qjs::JS_TAG_SYMBOL => return Some(Written::Nothing),
                qjs::JS_TAG_OBJECT if depth < MAX_DEPTH => match qjs::JS_GetClassID(v) {
                    c if c == self.known.object => self.object(v, depth)?,
                    c if c == self.known.array => self.array(v, depth)?,
                    _ => return None,
                },
                // BigInt (JSON throws), functions, boxed primitives, dates,
                // proxies, too deep: JSON.stringify's business.
                _ => return None,
            }
        }
        Some(Written::Yes)
    }

    /// A float as JSON: `null` if not finite, an integer written directly,
    /// anything else through QuickJS's own number-to-string.
    unsafe fn number(&mut self, v: qjs::JSValue, d: f64) -> Option<()> {
        if !d.is_finite() {
            self.out.push_str("null");
        } else if d.fract() == 0.0 && d.abs() < 1e15 {
            // Exact in i64, and printed without exponent by JS too; -0 is "0".
            let mut digits = itoa::Buffer::new();
            self.out.push_str(digits.format(d as i64));
        } else {
            // SAFETY: see `value`.
            let s = Owned(self.ctx, unsafe { qjs::JS_ToString(self.ctx, v) });
            if unsafe { qjs::JS_IsException(s.1) } {
                return None;
            }
            self.raw_string(s.1, false)?;
        }
        Some(())
    }

    /// Writes the text of string `v`, quoted (escaped as `JSON.stringify`
    /// does) or as is.
    fn raw_string(&mut self, v: qjs::JSValue, quoted: bool) -> Option<()> {
        let mut len = 0;
        // SAFETY: see `value`.
        let ptr = unsafe { qjs::JS_ToCStringLen2(self.ctx, &mut len, v, false) };
        self.take_c_string(ptr, len as usize, quoted)
    }

    /// Writes the C string QuickJS returned (`len` bytes at `ptr`), quoted or
    /// as is, and frees it; `None` if it is null, not UTF-8 (a lone
    /// surrogate, which JSON escapes as `\udXXX`), or would take the text
    /// past [`MAX_BYTES`].
    fn take_c_string(&mut self, ptr: *const c_char, len: usize, quoted: bool) -> Option<()> {
        if ptr.is_null() {
            return None;
        }
        // SAFETY: QuickJS returned `len` bytes at `ptr`, freed once below.
        unsafe {
            let bytes = std::slice::from_raw_parts(ptr.cast::<u8>(), len);
            let text = std::str::from_utf8(bytes).ok().filter(|text| {
                // Escaping at most sextuples the text: only a string that
                // might not fit is measured exactly.
                let room = MAX_BYTES.saturating_sub(self.out.len());
                match quoted {
                    false => len <= room,
                    true => len.saturating_mul(6) + 2 <= room || quoted_len(text) <= room,
                }
            });
            if let Some(text) = text {
                if quoted {
                    quote(&mut self.out, text);
                } else {
                    self.out.push_str(text);
                }
            }
            qjs::JS_FreeCString(self.ctx, ptr);
            text.map(|_| ())
        }
    }

    /// Whether `obj` (an ordinary object or array) and its prototype chain
    /// are free of `toJSON` and of anything exotic. Prototypes that pass are
    /// remembered (the first [`PROTO_CACHE`]), so the common chains
    /// (`Object.prototype`, `Array.prototype`) are walked once per encoding.
    /// A prototype is remembered before the rest of its chain is checked:
    /// if that check fails, the whole encoding gives up.
    unsafe fn plain_chain(&mut self, obj: qjs::JSValue) -> Option<()> {
        // SAFETY: see `value`.
        unsafe {
            if self.has_own(obj, self.known.to_json)? {
                return None;
            }
            let mut walked = 0;
            let mut proto = Owned(self.ctx, qjs::JS_GetPrototype(self.ctx, obj));
            loop {
                match qjs::JS_VALUE_GET_NORM_TAG(proto.1) {
                    qjs::JS_TAG_NULL => break,
                    qjs::JS_TAG_OBJECT => {}
                    _ => return None,
                }
                let addr = qjs::JS_VALUE_GET_PTR(proto.1) as usize;
                if self.plain_protos[..self.plain_count].contains(&addr) {
                    break;
                }
                let class = qjs::JS_GetClassID(proto.1);
                if walked == MAX_CHAIN
                    || (class != self.known.object && class != self.known.array)
                    || self.has_own(proto.1, self.known.to_json)?
                {
                    return None;
                }
                walked += 1;
                if self.plain_count < PROTO_CACHE {
                    self.plain_protos[self.plain_count] = addr;
                    self.plain_count += 1;
                }
                proto = Owned(self.ctx, qjs::JS_GetPrototype(self.ctx, proto.1));
            }
            Some(())
        }
    }

    /// Whether ordinary object `obj` has own property `atom`, without
    /// running a getter; `None` on an engine error.
    unsafe fn has_own(&self, obj: qjs::JSValue, atom: qjs::JSAtom) -> Option<bool> {
        // SAFETY: see `value`; no descriptor is asked for, so none to free.
        match unsafe { qjs::JS_GetOwnProperty(self.ctx, std::ptr::null_mut(), obj, atom) } {
            0 => Some(false),
            1 => Some(true),
            _ => None,
        }
    }

    /// The value of own data property `atom` of `obj`: `Ok(None)` if absent,
    /// `Err` for an accessor or an engine error.
    unsafe fn own_data(&self, obj: qjs::JSValue, atom: qjs::JSAtom) -> Result<Option<Owned>, ()> {
        let mut desc = qjs::JSPropertyDescriptor {
            flags: 0,
            value: qjs::JS_UNDEFINED,
            getter: qjs::JS_UNDEFINED,
            setter: qjs::JS_UNDEFINED,
        };
        // SAFETY: see `value`; the descriptor's three values are owned here.
        unsafe {
            match qjs::JS_GetOwnProperty(self.ctx, &mut desc, obj, atom) {
                0 => return Ok(None),
                1 => {}
                _ => return Err(()),
            }
            let (value, getter, setter) = (
                Owned(self.ctx, desc.value),
                Owned(self.ctx, desc.getter),
                Owned(self.ctx, desc.setter),
            );
            drop((getter, setter));
            if desc.flags as u32 & qjs::JS_PROP_GETSET != 0 {
                return Err(());
            }
            Ok(Some(value))
        }
    }

    unsafe fn object(&mut self, obj: qjs::JSValue, depth: u32) -> Option<()> {
        // SAFETY: see `value`; the key table is freed on every path.
        unsafe {
            self.plain_chain(obj)?;
            let mut tab: *mut qjs::JSPropertyEnum = std::ptr::null_mut();
            let mut len = 0u32;
            if qjs::JS_GetOwnPropertyNames(
                self.ctx,
                &mut tab,
                &mut len,
                obj,
                (qjs::JS_GPN_STRING_MASK | qjs::JS_GPN_ENUM_ONLY) as _,
            ) != 0
            {
                return None;
            }
            let keys = std::slice::from_raw_parts(tab, len as usize);
            let done = self.members(obj, keys, depth);
            qjs::JS_FreePropertyEnum(self.ctx, tab, len);
            done
        }
    }

    unsafe fn members(
        &mut self,
        obj: qjs::JSValue,
        keys: &[qjs::JSPropertyEnum],
        depth: u32,
    ) -> Option<()> {
        self.out.push('{');
        let mut first = true;
        for key in keys {
            // SAFETY: see `value`.
            let Ok(Some(value)) = (unsafe { self.own_data(obj, key.atom) }) else {
                return None;
            };
            let mark = self.out.len();
            if !first {
                self.out.push(',');
            }
            self.atom(key.atom)?;
            self.out.push(':');
            match self.value(value.1, depth + 1)? {
                Written::Yes => first = false,
                Written::Nothing => self.out.truncate(mark),
            }
        }
        self.out.push('}');
        Some(())
    }

    /// A property key, quoted.
    fn atom(&mut self, atom: qjs::JSAtom) -> Option<()> {
        let mut len = 0;
        // SAFETY: see `value`.
        let ptr = unsafe { qjs::JS_AtomToCStringLen(self.ctx, &mut len, atom) };
        self.take_c_string(ptr, len as usize, true)
    }

    unsafe fn array(&mut self, arr: qjs::JSValue, depth: u32) -> Option<()> {
        // SAFETY: see `value`.
        unsafe {
            self.plain_chain(arr)?;
            let mut len = 0i64;
            if qjs::JS_GetLength(self.ctx, arr, &mut len) != 0 || len > u32::MAX as i64 {
                return None;
            }
            self.out.push('[');
            for i in 0..len as u32 {
                if i > 0 {
                    self.out.push(',');
                }
                let atom = qjs::JS_NewAtomUInt32(self.ctx, i);
                let item = self.own_data(arr, atom);
                qjs::JS_FreeAtom(self.ctx, atom);
                // A hole reads through the prototype chain: JSON.stringify's.
                let Ok(Some(item)) = item else {
                    return None;
                };
                if let Written::Nothing = self.value(item.1, depth + 1)? {
                    self.out.push_str("null");
                }
            }
            self.out.push(']');
            Some(())
        }
    }
}

/// How `JSON.stringify` escapes byte `b` of UTF-8 text: `None` if it is
/// written as is, `Some("")` for a `\u00XX` escape, else the short escape.
fn escape(b: u8) -> Option<&'static str> {
    Some(match b {
        b'"' => "\\\"",
        b'\\' => "\\\\",
        b'\n' => "\\n",
        b'\r' => "\\r",
        b'\t' => "\\t",
        0x08 => "\\b",
        0x0c => "\\f",
        0..=0x1f => "",
        _ => return None,
    })
}

/// Length of `text` once [`quote`]d.
fn quoted_len(text: &str) -> usize {
    2 + text
        .bytes()
        .map(|b| match escape(b) {
            None => 1,
            Some("") => 6,
            Some(short) => short.len(),
        })
        .sum::<usize>()
}

/// Appends `text` as a JSON string, escaped exactly as QuickJS's
/// `JSON.stringify` escapes it (short escapes, `\u00XX` lowercase for other
/// control characters, everything else as is).
fn quote(out: &mut String, text: &str) {
    out.reserve(text.len() + 2);
    out.push('"');
    let mut start = 0;
    for (i, b) in text.bytes().enumerate() {
        let Some(escape) = escape(b) else {
            continue;
        };
        out.push_str(&text[start..i]);
        if escape.is_empty() {
            let _ = write!(out, "\\u{b:04x}");
        } else {
            out.push_str(escape);
        }
        start = i + 1;
    }
    out.push_str(&text[start..]);
    out.push('"');
}
