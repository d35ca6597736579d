//! The natives behind `TextEncoder`, `TextDecoder` and `crypto`; the
//! classes themselves are in `web.js`, which hands these natives only
//! `Uint8Array`s and well-formed strings.

use rquickjs::{ArrayBuffer, Ctx, Exception, Function, Object, Result, TypedArray};
use sha2::Digest as _;

/// Most bytes one `wasi:random` request may ask for: the host serves at most
/// 256 (`MAX_RANDOM_BYTES` in `host/sandbox/mod.rs`).
const RANDOM_CHUNK: usize = 256;

/// The bytes a `Uint8Array` views, for as long as no JS runs.
fn view<'a>(array: &'a TypedArray<'_, u8>) -> &'a [u8] {
    match array.as_raw() {
        // SAFETY: the view's own bytes; the natives below run no JS while
        // they hold them, so the buffer can be neither detached nor resized.
        Some(ptr) => unsafe { &*ptr.as_ptr() },
        None => &[],
    }
}

/// The bytes a `Uint8Array` views, to write, for as long as no JS runs.
fn view_mut<'a>(array: &'a mut TypedArray<'_, u8>) -> &'a mut [u8] {
    match array.as_raw() {
        // SAFETY: as for `view`; `&mut` to the array stands for the only
        // native that writes through it.
        Some(ptr) => unsafe { &mut *ptr.as_ptr() },
        None => &mut [],
    }
}

/// `TextEncoder.encode`: the UTF-8 bytes of a (well-formed) string.
fn encode<'js>(ctx: Ctx<'js>, text: String) -> Result<TypedArray<'js, u8>> {
    TypedArray::new(ctx, text.into_bytes())
}

/// `TextDecoder.decode`: UTF-8 to a string. `fatal` throws a `TypeError` on
/// malformed input instead of replacing it with U+FFFD; without
/// `ignore_bom`, a leading byte order mark is dropped.
fn decode<'js>(
    ctx: Ctx<'js>,
    bytes: TypedArray<'js, u8>,
    fatal: bool,
    ignore_bom: bool,
) -> Result<String> {
    let mut bytes: &[u8] = view(&bytes);
    if !ignore_bom {
        bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    }
    if fatal {
        match std::str::from_utf8(bytes) {
            Ok(text) => Ok(text.to_owned()),
            Err(e) => Err(Exception::throw_type(
                &ctx,
                &format!(
                    "The encoded data was not valid for encoding utf-8 (at byte {})",
                    e.valid_up_to()
                ),
            )),
        }
    } else {
        Ok(String::from_utf8_lossy(bytes).into_owned())
    }
}

/// `crypto.getRandomValues`: fills the bytes from `wasi:random`, the host's
/// CSPRNG with a generator of its own per execution (not `Math.random`'s
/// fast generator, which is not cryptographic).
fn random_fill(mut bytes: TypedArray<'_, u8>) {
    for chunk in view_mut(&mut bytes).chunks_mut(RANDOM_CHUNK) {
        getrandom::fill(chunk).expect("wasi:random cannot fail");
    }
}

/// `crypto.subtle.digest`: the hash of `bytes` under `name` (already
/// normalized to `SHA-1`, `SHA-256`, `SHA-384` or `SHA-512` by `web.js`).
fn digest<'js>(
    ctx: Ctx<'js>,
    name: String,
    bytes: TypedArray<'js, u8>,
) -> Result<ArrayBuffer<'js>> {
    let data: &[u8] = view(&bytes);
    let hash = match name.as_str() {
        "SHA-1" => sha1::Sha1::digest(data).to_vec(),
        "SHA-256" => sha2::Sha256::digest(data).to_vec(),
        "SHA-384" => sha2::Sha384::digest(data).to_vec(),
        "SHA-512" => sha2::Sha512::digest(data).to_vec(),
        _ => {
            return Err(Exception::throw_dom(
                &ctx,
                "NotSupportedError",
                &format!(
                    "unsupported digest algorithm {name:?}: use SHA-1, SHA-256, SHA-384 or SHA-512"
                ),
            ));
        }
    };
    ArrayBuffer::new(ctx, hash)
}

/// Puts `encodeUtf8`, `decodeUtf8`, `randomFill` and `digest` on `host`.
pub fn register<'js>(ctx: &Ctx<'js>, host: &Object<'js>) -> Result<()> {
    host.set("encodeUtf8", Function::new(ctx.clone(), encode)?)?;
    host.set("decodeUtf8", Function::new(ctx.clone(), decode)?)?;
    host.set("randomFill", Function::new(ctx.clone(), random_fill)?)?;
    host.set("digest", Function::new(ctx.clone(), digest)?)?;
    Ok(())
}
