//! Renders a merged answer as CSV or RSS for clients that ask `format=csv|rss` (SearXNG offers
//! both). JSON is rendered once by the engine and served as cached bytes.

use serde_json::{Map, Value};

fn field<'a>(result: &'a Map<String, Value>, name: &str) -> &'a str {
    result.get(name).and_then(Value::as_str).unwrap_or("")
}

fn csv_cell(value: &str) -> String {
    if value.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", value.replace('"', "\"\""))
    } else {
        value.to_owned()
    }
}

/// CSV with SearXNG's columns: title, url, content, host, engine, score, type.
pub(super) fn csv(document: &Map<String, Value>) -> String {
    let mut out = String::from("title,url,content,host,engine,score,type\r\n");
    for result in results(document) {
        let url = field(result, "url");
        let host = url::Url::parse(url)
            .ok()
            .and_then(|u| u.host_str().map(str::to_owned))
            .unwrap_or_default();
        let score = result
            .get("score")
            .map(Value::to_string)
            .unwrap_or_default();
        let cells = [
            field(result, "title"),
            url,
            field(result, "content"),
            &host,
            field(result, "engine"),
            &score,
            "result",
        ];
        let line: Vec<String> = cells.iter().map(|c| csv_cell(c)).collect();
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
pub(super) fn rss(document: &Map<String, Value>, query: &str) -> String {
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
    fn rss_escapes_markup() {
        let out = rss(&doc(), "a & b");
        assert!(out.contains("<title>A, &quot;quoted&quot;</title>"));
        assert!(out.contains("&lt;b&gt;c&lt;/b&gt;"));
        assert!(out.contains("searxng-gateway: a &amp; b"));
    }
}
