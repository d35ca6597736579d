//! The natives behind `URL` and `URLSearchParams` (in `web.js`): WHATWG URL
//! parsing and its setters from the `url` crate (`url::quirks` is the URL
//! Standard's API, getter for getter and setter for setter), and the
//! `application/x-www-form-urlencoded` codec from `form_urlencoded`.

use rquickjs::function::Opt;
use rquickjs::{Ctx, Exception, Function, Object, Result};
use url::{Url, quirks};

/// The components `web.js` reads, in this order: href, origin, protocol,
/// username, password, host, hostname, port, pathname, search, hash.
fn parts(url: &Url) -> Vec<String> {
    vec![
        quirks::href(url).to_owned(),
        quirks::origin(url),
        quirks::protocol(url).to_owned(),
        quirks::username(url).to_owned(),
        quirks::password(url).to_owned(),
        quirks::host(url).to_owned(),
        quirks::hostname(url).to_owned(),
        quirks::port(url).to_owned(),
        quirks::pathname(url).to_owned(),
        quirks::search(url).to_owned(),
        quirks::hash(url).to_owned(),
    ]
}

fn invalid(ctx: &Ctx<'_>, input: &str) -> rquickjs::Error {
    let shown: String = input.chars().take(200).collect();
    Exception::throw_type(ctx, &format!("Invalid URL: {shown:?}"))
}

/// `new URL(input, base?)`: the components, or a `TypeError`.
fn parse(ctx: Ctx<'_>, input: String, base: Opt<String>) -> Result<Vec<String>> {
    let parsed = match base.0 {
        Some(base) => Url::parse(&base).and_then(|b| b.join(&input)),
        None => Url::parse(&input),
    };
    parsed.map(|u| parts(&u)).map_err(|_| invalid(&ctx, &input))
}

/// A setter of `URL` (`field` is its name) applied to `href`: the new
/// components. As the Standard has it, a value a setter cannot use leaves
/// the URL as it was, except for `href`, which throws.
fn set(ctx: Ctx<'_>, href: String, field: String, value: String) -> Result<Vec<String>> {
    let mut url = Url::parse(&href).map_err(|_| invalid(&ctx, &href))?;
    match field.as_str() {
        "href" => {
            url = Url::parse(&value).map_err(|_| invalid(&ctx, &value))?;
        }
        "protocol" => drop(quirks::set_protocol(&mut url, &value)),
        "username" => drop(quirks::set_username(&mut url, &value)),
        "password" => drop(quirks::set_password(&mut url, &value)),
        "host" => drop(quirks::set_host(&mut url, &value)),
        "hostname" => drop(quirks::set_hostname(&mut url, &value)),
        "port" => drop(quirks::set_port(&mut url, &value)),
        "pathname" => quirks::set_pathname(&mut url, &value),
        "search" => quirks::set_search(&mut url, &value),
        "hash" => quirks::set_hash(&mut url, &value),
        _ => {
            return Err(Exception::throw_type(
                &ctx,
                &format!("no URL field {field:?}"),
            ));
        }
    }
    Ok(parts(&url))
}

/// `URLSearchParams` from a query string: `[name, value, name, value, ...]`.
fn form_parse(query: String) -> Vec<String> {
    let query = query.strip_prefix('?').unwrap_or(&query);
    url::form_urlencoded::parse(query.as_bytes())
        .flat_map(|(k, v)| [k.into_owned(), v.into_owned()])
        .collect()
}

/// `URLSearchParams.toString`: `[name, value, ...]` as a query string.
fn form_serialize(pairs: Vec<String>) -> String {
    let mut out = url::form_urlencoded::Serializer::new(String::new());
    for pair in pairs.chunks_exact(2) {
        out.append_pair(&pair[0], &pair[1]);
    }
    out.finish()
}

/// Puts `urlParse`, `urlSet`, `formParse` and `formSerialize` on `host`.
pub fn register<'js>(ctx: &Ctx<'js>, host: &Object<'js>) -> Result<()> {
    host.set("urlParse", Function::new(ctx.clone(), parse)?)?;
    host.set("urlSet", Function::new(ctx.clone(), set)?)?;
    host.set("formParse", Function::new(ctx.clone(), form_parse)?)?;
    host.set("formSerialize", Function::new(ctx.clone(), form_serialize)?)?;
    Ok(())
}
