//! The deduplication key of a result's URL ([`canonical_url`]): what the merge groups results by
//! and the fan-out counts distinct results with. Each result's key is computed once, when the
//! result is decoded (`search_result.rs`).

/// Query parameters that only track the click, never select content.
fn is_tracking_param(name: &str) -> bool {
    name.as_bytes()
        .get(..4)
        .is_some_and(|prefix| prefix.eq_ignore_ascii_case(b"utm_"))
        || [
            "gclid",
            "fbclid",
            "msclkid",
            "dclid",
            "yclid",
            "igshid",
            "mc_cid",
            "mc_eid",
            "_ga",
            "_hsenc",
            "_hsmi",
            "mkt_tok",
            "oly_anon_id",
            "oly_enc_id",
            "vero_id",
            "wickedid",
        ]
        .iter()
        .any(|tracking| name.eq_ignore_ascii_case(tracking))
}

/// The deduplication key of a URL: scheme-less, lower-case host without `www.`, no fragment, no
/// trailing `/`, no tracking parameters, remaining parameters sorted.
///
/// Nearly every URL a search engine returns is a plain `http(s)://host/path?query` in printable
/// ASCII, where parsing with `url::Url` (WHATWG normalisation, a copy of the whole URL) is most of
/// the cost: [`canonical_url_ascii`] builds the same key straight from the text, and anything it is
/// not sure of goes through `url::Url`. A test compares both on every edge we know of.
pub fn canonical_url(raw: &str) -> String {
    let raw = raw.trim();
    canonical_url_ascii(raw).unwrap_or_else(|| canonical_url_parsed(raw))
}

/// The key of a URL that `url::Url` would leave as it is apart from lower-casing the host: `http`
/// or `https`, a host of letters, digits, `-` and `.` (not numeric, no IDNA label, no port, no
/// user), a path without dot segments, percent signs or characters the parser would escape. `None`
/// for anything else.
fn canonical_url_ascii(raw: &str) -> Option<String> {
    // Runs twice per result of every miss: one pass per check, `memchr` for the delimiters.
    let rest = raw
        .strip_prefix("https://")
        .or_else(|| raw.strip_prefix("http://"))?;
    if !rest.bytes().all(|b| b.is_ascii_graphic() && b != b'\\') {
        return None;
    }
    let rest = &rest[..memchr::memchr(b'#', rest.as_bytes()).unwrap_or(rest.len())];
    let (rest, query) = match memchr::memchr(b'?', rest.as_bytes()) {
        Some(at) => (&rest[..at], Some(&rest[at + 1..])),
        None => (rest, None),
    };
    let (host, path) = rest.split_at(memchr::memchr(b'/', rest.as_bytes()).unwrap_or(rest.len()));
    if !plain_host(host.as_bytes()) || !plain_path(path) {
        return None;
    }
    let host = match host.get(..4) {
        Some(www) if www.eq_ignore_ascii_case("www.") => &host[4..],
        _ => host,
    };
    let path = path.trim_end_matches('/');
    let mut key =
        String::with_capacity(2 + host.len() + path.len() + query.map_or(0, str::len) + 1);
    key.push_str("//");
    key.push_str(host);
    key[2..].make_ascii_lowercase();
    key.push_str(path);
    if let Some(query) = query {
        push_params(&mut key, url::form_urlencoded::parse(query.as_bytes()));
    }
    Some(key)
}

/// A host `url::Url` keeps as it is apart from lower-casing: letters, digits, `-` and `.`, no
/// empty label, no IDNA label (`xn--`), and a last label that starts with a letter (a domain,
/// never an IPv4 address).
fn plain_host(host: &[u8]) -> bool {
    let mut label_start = 0;
    for (i, &b) in host.iter().enumerate() {
        if b == b'.' {
            if i == label_start {
                return false;
            }
            label_start = i + 1;
        } else if !(b.is_ascii_alphanumeric() || b == b'-') {
            return false;
        }
    }
    let last_label_is_a_name = host
        .get(label_start)
        .is_some_and(|first| first.is_ascii_alphabetic());
    last_label_is_a_name
        && !(host.contains(&b'-')
            && host
                .windows(4)
                .any(|label| label.eq_ignore_ascii_case(b"xn--")))
}

/// A path `url::Url` keeps as it is: only [`PLAIN_PATH_BYTES`], no `.` or `..` segment.
fn plain_path(path: &str) -> bool {
    path.bytes().all(|b| PLAIN_PATH_BYTES[usize::from(b)])
        && !(memchr::memchr(b'.', path.as_bytes()).is_some()
            && path.split('/').any(|s| s == "." || s == ".."))
}

/// Path bytes `url::Url` keeps as they are: letters, digits and `-._~!$&'()*+,;=:@/`.
const PLAIN_PATH_BYTES: [bool; 256] = {
    let mut plain = [false; 256];
    let mut b = 0;
    while b < 256 {
        plain[b] = (b as u8).is_ascii_alphanumeric();
        b += 1;
    }
    let punctuation = b"-._~!$&'()*+,;=:@/";
    let mut i = 0;
    while i < punctuation.len() {
        plain[punctuation[i] as usize] = true;
        i += 1;
    }
    plain
};

/// `?k=v&…` for the parameters that are not tracking ones, sorted; nothing when none is left.
fn push_params<'a>(
    key: &mut String,
    pairs: impl Iterator<Item = (std::borrow::Cow<'a, str>, std::borrow::Cow<'a, str>)>,
) {
    let mut params: Vec<_> = pairs.filter(|(k, _)| !is_tracking_param(k)).collect();
    if params.is_empty() {
        return;
    }
    params.sort();
    for (i, (k, v)) in params.iter().enumerate() {
        key.push(if i == 0 { '?' } else { '&' });
        key.push_str(k);
        key.push('=');
        key.push_str(v);
    }
}

/// The host a key names — lower-case ASCII, without `www.` or a port — or `None` for a key of a
/// URL that is not http(s): what domain filters compare a result by, without parsing its URL again.
pub(crate) fn key_host(key: &str) -> Option<&str> {
    let rest = key.strip_prefix("//")?;
    let end = rest.find(['/', '?']).unwrap_or(rest.len());
    let authority = &rest[..end];
    let host = match authority.strip_prefix('[') {
        Some(v6) => &authority[..v6.find(']')? + 2],
        None => authority.split(':').next().unwrap_or(""),
    };
    (!host.is_empty()).then_some(host)
}

/// [`canonical_url`] through `url::Url`: any URL it can parse; the trimmed text lower-cased when it
/// cannot.
fn canonical_url_parsed(raw: &str) -> String {
    let Ok(url) = url::Url::parse(raw) else {
        return raw.trim().to_ascii_lowercase();
    };
    let host = url.host_str().unwrap_or("").to_ascii_lowercase();
    let host = host.strip_prefix("www.").unwrap_or(&host);
    let scheme = match url.scheme() {
        "http" | "https" => "",
        other => other,
    };
    let port = match url.port() {
        Some(p) => format!(":{p}"),
        None => String::new(),
    };
    let path = url.path().trim_end_matches('/');
    let mut key = format!("{scheme}//{host}{port}{path}");
    push_params(&mut key, url.query_pairs());
    key
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    #[test]
    fn a_keys_host_is_what_domain_filters_compare() {
        for (url, host) in [
            ("https://www.Example.com/a?b=1", Some("example.com")),
            ("http://docs.example.com:8080/x", Some("docs.example.com")),
            ("https://bücher.de/", Some("xn--bcher-kva.de")),
            ("http://[::1]:9000/p", Some("[::1]")),
            ("https://example.org", Some("example.org")),
            ("ftp://example.org/file", None),
            ("not a url", None),
        ] {
            assert_eq!(key_host(&canonical_url(url)), host, "{url}");
        }
    }

    #[test]
    fn canonical_url_folds_cosmetic_differences() {
        let same = [
            "https://www.Example.org/a/?utm_source=x&b=2&a=1#frag",
            "http://example.org/a?a=1&b=2",
            "HTTPS://EXAMPLE.ORG/a?gclid=123&a=1&b=2&fbclid=9",
        ];
        let keys: BTreeSet<String> = same.iter().map(|u| canonical_url(u)).collect();
        assert_eq!(keys.len(), 1, "{keys:?}");
        assert_ne!(
            canonical_url("https://example.org/a"),
            canonical_url("https://example.org/b")
        );
        assert_ne!(
            canonical_url("https://example.org/a?x=1"),
            canonical_url("https://example.org/a?x=2")
        );
        assert_ne!(
            canonical_url("https://example.org:8443/a"),
            canonical_url("https://example.org/a")
        );
    }

    #[test]
    fn the_ascii_fast_path_gives_the_parsers_key_or_steps_aside() {
        let schemes = ["https://", "http://", "HTTPS://", "ftp://", ""];
        let hosts = [
            "www.Example.org",
            "a.b",
            "EXAMPLE.org",
            "127.0.0.1",
            "0x7f.1",
            "example.123",
            "xn--bcher-kva.example",
            "exa_mple.org",
            "host.",
            ".host",
            "a..b",
            "",
            "ex%61mple.org",
            "user@host.org",
            "Bücher.example",
            "www",
        ];
        let ports = ["", ":80", ":443", ":8080", ":0443", ":"];
        let paths = [
            "",
            "/",
            "/a",
            "/A/b/",
            "/a//",
            "/./x",
            "/x/../y",
            "/%2e/",
            "/a%20b",
            "/a b",
            "/ü",
            "//",
            "/a;b=c,d",
            "/~user/(x)",
            "/a\\b",
            "/a|b",
            "/'q'",
        ];
        let queries = [
            "",
            "?",
            "?a=1&b=2",
            "?utm_source=x&z=%20",
            "?b=+&a",
            "?&&a=1=2",
            "?a=%zz",
            "?ü=1",
            "?UTM_Medium=1&Gclid=2&q",
            "?a=\"x\"&b=<y>",
            "?a=1?b",
        ];
        let fragments = ["", "#f", "#a?b=1"];
        let mut fast = 0;
        for scheme in schemes {
            for host in hosts {
                for port in ports {
                    for path in paths {
                        for query in queries {
                            for fragment in fragments {
                                let url = format!("{scheme}{host}{port}{path}{query}{fragment}");
                                if let Some(key) = canonical_url_ascii(&url) {
                                    fast += 1;
                                    assert_eq!(key, canonical_url_parsed(&url), "{url}");
                                }
                            }
                        }
                    }
                }
            }
        }
        assert!(fast > 1000, "the fast path takes plain URLs ({fast})");
    }
}
