//! Renders a merged answer as CSV or RSS for clients that ask `format=csv|rss` (SearXNG offers
//! both). JSON is rendered once by the engine and served as cached bytes.
//!
//! A CSV cell is text from the web (a title, a snippet, a URL): one that a spreadsheet would take
//! for a formula (it starts with `=`, `+`, `-`, `@`, a tab or a carriage return) is prefixed with
//! a single quote, as OWASP's "CSV Injection" advice says, so opening the file runs nothing. Only
//! the score, a number the gateway writes itself, is left as it is.

use serde_json::{Map, Value};

fn field<'a>(result: &'a Map<String, Value>, name: &str) -> &'a str {
    result.get(name).and_then(Value::as_str).unwrap_or("")
}

/// The characters a spreadsheet reads a formula after, at the start of a cell.
const FORMULA_STARTS: [char; 6] = ['=', '+', '-', '@', '\t', '\r'];

/// A text cell: neutralised when a spreadsheet would read it as a formula, then quoted if needed.
fn csv_cell(value: &str) -> String {
    if value.starts_with(FORMULA_STARTS) {
        csv_quoted(&format!("'{value}"))
    } else {
        csv_quoted(value)
    }
}

/// `value` as one CSV field: quoted (and its quotes doubled) when it holds a separator, a quote or
/// a line break.
fn csv_quoted(value: &str) -> String {
    if value.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", value.replace('"', "\"\""))
    } else {
        value.to_owned()
    }
}

/// CSV with SearXNG's columns: title, url, content, host, engine, score, type.
pub(crate) fn csv(document: &Map<String, Value>) -> String {
    let mut out = String::from("title,url,content,host,engine,score,type\r\n");
    for result in results(document) {
        let url = field(result, "url");
        let host = url::Url::parse(url)
            .ok()
            .and_then(|u| u.host_str().map(str::to_owned))
            .unwrap_or_default();
        let score = match result.get("score") {
            // A number as JSON writes it (`-0.5` included) is no formula.
            Some(Value::Number(number)) => number.to_string(),
            Some(other) => csv_cell(&other.to_string()),
            None => String::new(),
        };
        let text = [
            field(result, "title"),
            url,
            field(result, "content"),
            &host,
            field(result, "engine"),
        ];
        let mut line: Vec<String> = text.iter().map(|c| csv_cell(c)).collect();
        line.extend([score, "result".to_owned()]);
        out.push_str(&line.join(","));
        out.push_str("\r\n");
    }
    out
}

fn xml_escape(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c if (c as u32) < 0x20 && !matches!(c, '\t' | '\n' | '\r') => {}
            c => out.push(c),
        }
    }
    out
}

/// RSS 2.0 with one item per result.
pub(crate) fn rss(document: &Map<String, Value>, query: &str) -> String {
    let mut out = String::from(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<rss version=\"2.0\">\n<channel>\n",
    );
    out.push_str(&format!(
        "<title>searxng-gateway: {}</title>\n<link>/search?q={}</link>\n<description>Search results for \"{}\"</description>\n",
        xml_escape(query),
        xml_escape(&url::form_urlencoded::byte_serialize(query.as_bytes()).collect::<String>()),
        xml_escape(query)
    ));
    for result in results(document) {
        out.push_str(&format!(
            "<item>\n<title>{}</title>\n<link>{}</link>\n<description>{}</description>\n<guid>{}</guid>\n</item>\n",
            xml_escape(field(result, "title")),
            xml_escape(field(result, "url")),
            xml_escape(field(result, "content")),
            xml_escape(field(result, "url")),
        ));
    }
    out.push_str("</channel>\n</rss>\n");
    out
}

fn results(document: &Map<String, Value>) -> impl Iterator<Item = &Map<String, Value>> {
    document
        .get("results")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_object)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    fn doc() -> Map<String, Value> {
        json!({"results": [{"url": "https://a.example/x", "title": "A, \"quoted\"", "content": "<b>c</b>", "engine": "alpha", "score": 1.5}]})
            .as_object()
            .unwrap()
            .clone()
    }

    #[test]
    fn csv_quotes_cells_that_need_it() {
        let out = csv(&doc());
        assert!(out.starts_with("title,url,content,host,engine,score,type\r\n"));
        assert!(out.contains(
            "\"A, \"\"quoted\"\"\",https://a.example/x,<b>c</b>,a.example,alpha,1.5,result"
        ));
    }

    #[test]
    fn csv_cells_a_spreadsheet_would_read_as_formulas_start_with_a_single_quote() {
        let doc = json!({"results": [
            {"url": "https://a.example/x", "title": "=HYPERLINK(\"https://evil.example\",\"click\")",
             "content": "+1 555 0100", "engine": "@sum", "score": -0.5},
            {"url": "https://a.example/y", "title": "-2+3", "content": "\tindented",
             "engine": "alpha", "score": "=1+1"},
            {"url": "https://a.example/z", "title": "\rcarriage", "content": "fine - not at the start",
             "engine": "alpha"},
        ]});
        let out = csv(doc.as_object().unwrap());
        let lines: Vec<&str> = out.split("\r\n").collect();
        assert_eq!(
            lines[1],
            "\"'=HYPERLINK(\"\"https://evil.example\"\",\"\"click\"\")\",https://a.example/x,\
             '+1 555 0100,a.example,'@sum,-0.5,result"
        );
        assert_eq!(
            lines[2],
            "'-2+3,https://a.example/y,'\tindented,a.example,alpha,\"\"\"=1+1\"\"\",result"
        );
        // A carriage return also needs quoting: the quote goes inside the quoted field.
        assert!(
            out.contains("\"'\rcarriage\",https://a.example/z,fine - not at the start,"),
            "{out:?}"
        );
    }

    #[test]
    fn rss_escapes_markup() {
        let out = rss(&doc(), "a & b");
        assert!(out.contains("<title>A, &quot;quoted&quot;</title>"));
        assert!(out.contains("&lt;b&gt;c&lt;/b&gt;"));
        assert!(out.contains("searxng-gateway: a &amp; b"));
    }
}
