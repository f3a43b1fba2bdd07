//! The `q` parameter's own syntax (`!engine` and `!category` select engines, `:de` a language, `<3` a
//! timeout, `!!bang` an external redirect) and SearXNG's parameter checks, which turn a request into the
//! validated [`SearchRequest`] the search uses — or into SearXNG's `Invalid value …` message.

use super::instance::Instance;
use super::params::Params;

/// The query text after SearXNG's prefix syntax (`!!bang`, `!engine`, `:lang`, `<timeout`) is taken off.
pub(super) struct QueryText {
    /// What is left to search for.
    pub(super) text: String,
    /// `!!name`: redirect to that site instead of searching.
    pub(super) external_bang: Option<String>,
    /// Engines selected by `!name` (index, category), in order.
    pub(super) engine_refs: Vec<(usize, String)>,
    /// `:code` prefixes, in order (the last wins).
    languages: Vec<String>,
}

impl QueryText {
    /// Like SearXNG's `RawTextQuery`: only leading tokens are syntax; the first plain word starts the query.
    pub(super) fn parse(raw: &str, instance: &Instance) -> Self {
        let mut parsed = QueryText {
            text: String::new(),
            external_bang: None,
            engine_refs: Vec::new(),
            languages: Vec::new(),
        };
        let tokens: Vec<&str> = raw.split_whitespace().collect();
        let mut first_plain = tokens.len();
        for (position, token) in tokens.iter().enumerate() {
            if !parsed.take_special(token, instance) {
                first_plain = position;
                break;
            }
        }
        parsed.text = tokens[first_plain..].join(" ");
        parsed
    }

    fn take_special(&mut self, token: &str, instance: &Instance) -> bool {
        if let Some(bang) = token.strip_prefix("!!").filter(|bang| !bang.is_empty()) {
            self.external_bang = Some(bang.to_owned());
            return true;
        }
        if let Some(name) = token.strip_prefix('!').filter(|name| !name.is_empty()) {
            let name = name.replace(['-', '_'], " ");
            let by_name = instance
                .engines
                .iter()
                .position(|engine| engine.shortcut == name || engine.name == name);
            if let Some(index) = by_name {
                self.engine_refs
                    .push((index, instance.engines[index].main_category()));
                return true;
            }
            let in_category: Vec<(usize, String)> = instance
                .engines
                .iter()
                .enumerate()
                .filter(|(_, engine)| engine.categories.contains(&name))
                .map(|(index, _)| (index, name.clone()))
                .collect();
            let found = !in_category.is_empty();
            self.engine_refs.extend(in_category);
            return found;
        }
        if let Some(code) = token.strip_prefix(':') {
            if is_language_code(code) {
                self.languages.push(code.to_owned());
                return true;
            }
            return false;
        }
        if let Some(timeout) = token.strip_prefix('<') {
            return !timeout.is_empty() && timeout.bytes().all(|byte| byte.is_ascii_digit());
        }
        false
    }
}

/// SearXNG's `VALID_LANGUAGE_CODE` (`^[a-z]{2,3}(-[a-zA-Z]{2})?$`), which also admits `all`.
fn is_language_code(code: &str) -> bool {
    let (language, region) = match code.split_once('-') {
        Some((language, region)) => (language, Some(region)),
        None => (code, None),
    };
    let language_ok =
        (2..=3).contains(&language.len()) && language.bytes().all(|byte| byte.is_ascii_lowercase());
    let region_ok = region
        .is_none_or(|region| region.len() == 2 && region.bytes().all(|b| b.is_ascii_alphabetic()));
    language_ok && region_ok
}

/// The validated parameters the search itself uses.
pub(super) struct SearchRequest {
    /// The query text without its prefix syntax.
    pub(super) query: String,
    /// The page, from 1.
    pub(super) pageno: u64,
    /// `day`, `week`, `month` or `year`.
    pub(super) time_range: Option<String>,
}

impl SearchRequest {
    /// SearXNG's checks, in its order; the error is its `SearxParameterException` message.
    pub(super) fn validate(params: &Params, query: &QueryText) -> Result<Self, String> {
        let pageno_text = params.get("pageno").unwrap_or("1");
        let all_digits =
            !pageno_text.is_empty() && pageno_text.bytes().all(|byte| byte.is_ascii_digit());
        let pageno = if all_digits {
            // Python parses any length; a number beyond u64 is simply a very late page.
            pageno_text.parse::<u64>().unwrap_or(u64::MAX)
        } else {
            0
        };
        if pageno < 1 {
            return Err(parameter_error("pageno", pageno_text));
        }

        let language = match query.languages.last() {
            Some(language) => Some(language.as_str()),
            None => params.get("language"),
        };
        if let Some(language) = language {
            if language != "auto" && !is_language_code(language) {
                return Err(parameter_error("language", language));
            }
        }

        if let Some(safesearch) = params.get("safesearch") {
            if !matches!(safesearch, "0" | "1" | "2") {
                return Err(parameter_error("safesearch", safesearch));
            }
        }

        let time_range = match params.get("time_range") {
            None | Some("" | "None") => None,
            Some(range @ ("day" | "week" | "month" | "year")) => Some(range.to_owned()),
            Some(other) => return Err(parameter_error("time_range", other)),
        };

        if let Some(timeout) = params.get("timeout_limit") {
            if !matches!(timeout, "" | "None") && timeout.trim().parse::<f64>().is_err() {
                return Err(parameter_error("timeout_limit", timeout));
            }
        }

        Ok(Self {
            query: query.text.clone(),
            pageno,
            time_range,
        })
    }
}

fn parameter_error(name: &str, value: &str) -> String {
    if value.is_empty() {
        format!("Empty {name} parameter")
    } else {
        format!("Invalid value \"{value}\" for parameter {name}")
    }
}

/// Where SearXNG's bang database would send the user; any name redirects so tests need not know the database.
pub(super) fn external_bang_url(bang: &str, query: &str) -> String {
    let encoded: String = url::form_urlencoded::byte_serialize(query.as_bytes()).collect();
    match bang {
        "g" => format!("https://www.google.com/search?q={encoded}"),
        "ddg" => format!("https://duckduckgo.com/?q={encoded}"),
        "w" | "wen" => format!("https://en.wikipedia.org/wiki/Special:Search?search={encoded}"),
        "gh" => format!("https://github.com/search?q={encoded}"),
        other => {
            let bang: String =
                url::form_urlencoded::byte_serialize(format!("!{other} {query}").as_bytes())
                    .collect();
            format!("https://duckduckgo.com/?q={bang}")
        }
    }
}
