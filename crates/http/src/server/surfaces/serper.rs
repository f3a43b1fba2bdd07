//! Serper's Google search API: `POST /serper/search` and `POST /serper/news`, Serper's request and
//! answer, so the tools
//! built on `google.serper.dev` (LibreChat's search provider, gpt-researcher's serper retriever,
//! agents' search tools) search through the gateway with their URL changed. The key rides as
//! `X-API-KEY`, as Serper's does (checked by the gate with `API_KEYS_FILE`; an open gateway takes
//! any call).
//!
//! Request: one object, or a list of 1–100 (a batch: each answered by its own search, at once, in
//! order). `q` (required); `num` (1–100, default 10); `page` (1–100, default 1); `hl` (a language,
//! `en`) with `gl` (a country, `us`): SearXNG's `en-US`; `tbs` (`qdr:h`, `qdr:d` → the last day,
//! `qdr:w`, `qdr:m`, `qdr:y`); `type` (`search` only); `autocorrect` (accepted and not applied:
//! SearXNG searches the query as written). Any other field — `location`, say — is refused by name:
//! the door never drops what it was asked. `type` is the endpoint's own (`search` at
//! `/serper/search`, `news` at `/serper/news`) or absent; another is refused.
//!
//! News (`/serper/news`, what LangChain's Serper wrapper calls with `type="news"`): the same request,
//! searched in SearXNG's `news` category, answered as Serper's `news` list — `title`, `link`,
//! `snippet`, `date`, `source` (the site's host, `www.` dropped: SearXNG names no publisher) and
//! `position` — with no `answerBox`, `knowledgeGraph` or `relatedSearches` (Serper's news has none).
//!
//! Answer: `{"searchParameters": {q, num, page, type, hl?, gl?, tbs?}, "organic": [{title, link,
//! snippet, position, date?}], "answerBox"?: {answer}, "knowledgeGraph"?: {title, description,
//! descriptionLink, website, imageUrl, attributes}, "relatedSearches"?: [{query}], "credits"}` —
//! `answerBox` when SearXNG had a direct answer, `knowledgeGraph` from its first infobox,
//! `relatedSearches` from its suggestions. `peopleAlsoAsk` has no source in SearXNG's answer and
//! is never sent. A batch answers a list of those.
//!
//! Errors are Serper's `{"message", "statusCode"}`: 400 for a body or field it cannot read, 401/429
//! from the gate, 502 when every upstream failed (naming each and its error class), 503 with
//! `Retry-After` when the gateway sheds load.

use axum::extract::{Extension, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::Router;
use serde_json::{json, Map, Value};

use crate::gateway::Gateway;
use crate::server::kit::body::LimitedBody;
use crate::server::kit::document::{Found, Hit, Infobox};
use crate::server::kit::gate::{Admitted, Gate};
use crate::server::kit::json_fields::{field, number_in, InvalidField};
use crate::server::kit::refusal::{self, json_response, Door, OwnRefusal, Refusal};
use crate::server::kit::{search_call, search_read};
use gateway_core::request::{SearchInput, SearchRequest, Surface, TimeRange};

/// Where the search is served; clients use `…/serper` where they used `https://google.serper.dev`.
pub(crate) const PATH: &str = "/serper/search";
/// Where news is served (Serper's `/news`).
pub(crate) const NEWS_PATH: &str = "/serper/news";

/// Serper's limits.
const MAX_BATCH: usize = 100;
const MAX_NUM: u32 = 100;
const DEFAULT_NUM: u32 = 10;
const MAX_PAGE: u32 = 100;

/// The fields a request may carry.
const FIELDS: [&str; 8] = ["q", "num", "page", "hl", "gl", "tbs", "type", "autocorrect"];

/// The route, behind the gate.
pub(crate) fn routes(gate: &Gate) -> Router<Gateway> {
    Router::new()
        .route(PATH, post(search).fallback(refusal::wrong_method::<Serper>))
        .route(
            NEWS_PATH,
            post(news).fallback(refusal::wrong_method::<Serper>),
        )
        .layer(crate::server::transport::search_span::TRACED)
        .layer(gate.layer(Serper))
}

/// Serper's error shape.
#[derive(Debug, Clone, Copy)]
struct Serper;

/// What a Serper client gets instead of results.
type SerperError = Refusal<Serper>;

/// What only this door refuses.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum SerperOwn {
    /// A field Serper has that this gateway cannot honour, or one Serper does not have.
    #[error("{0} is not a field this gateway honours (it takes q, num, page, hl, gl, tbs, type, autocorrect)")]
    Unsupported(String),
    /// A batch that is empty, too long, or not of objects.
    #[error("a batch is a list of 1 to {MAX_BATCH} request objects")]
    Batch,
}

impl OwnRefusal for SerperOwn {
    fn code(&self) -> &'static str {
        match self {
            Self::Unsupported(_) => "unsupported",
            Self::Batch => "invalid_batch",
        }
    }

    fn status(&self) -> StatusCode {
        StatusCode::BAD_REQUEST
    }
}

impl Door for Serper {
    type Own = SerperOwn;
    const KEY_IN_BODY: bool = false;

    fn body(refusal: &SerperError, status: StatusCode, message: String) -> Value {
        let mut body = json!({"message": message, "statusCode": status.as_u16()});
        if let Some(listed) = refusal.failed_upstreams() {
            body["upstreams"] = listed;
        }
        body
    }
}

/// Which of Serper's endpoints was called.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// `/search`: web results as `organic`.
    Search,
    /// `/news`: SearXNG's news category as `news`.
    News,
}

impl Kind {
    /// Its `type` in Serper's `searchParameters`.
    fn name(self) -> &'static str {
        match self {
            Self::Search => "search",
            Self::News => "news",
        }
    }
}

/// One query of a request, read and checked (the query itself is validated as a search).
#[derive(Debug, Clone)]
struct Ask {
    kind: Kind,
    input: SearchInput,
    num: usize,
    /// What `searchParameters` echoes.
    echo: Map<String, Value>,
}

impl Ask {
    /// One request object sent to the `kind` endpoint.
    fn read(kind: Kind, fields: &Map<String, Value>) -> Result<Self, SerperError> {
        if let Some(name) = fields.keys().find(|name| !FIELDS.contains(&name.as_str())) {
            return Err(Refusal::Own(SerperOwn::Unsupported(name.clone())));
        }
        let query: String = field(fields, "q", "a string")?.unwrap_or_default();
        let num = number_in(fields, "num", 1..=MAX_NUM, "an integer from 1 to 100")?
            .unwrap_or(DEFAULT_NUM);
        let page =
            number_in(fields, "page", 1..=MAX_PAGE, "an integer from 1 to 100")?.unwrap_or(1);
        let code = |name: &'static str, expected: &'static str| {
            field::<String>(fields, name, expected)
                .map(|value| value.map(|v| v.trim().to_owned()).filter(|v| !v.is_empty()))
        };
        let hl = code("hl", "a language code such as en")?;
        let gl = code("gl", "a country code such as us")?;
        let tbs = code("tbs", "qdr:h, qdr:d, qdr:w, qdr:m or qdr:y")?;
        let time_range = tbs.as_deref().map(time_range).transpose()?;
        match field::<String>(fields, "type", kind.name())?.as_deref() {
            None => {}
            Some(named) if named == kind.name() => {}
            Some(_) => return Err(Refusal::Own(SerperOwn::Unsupported("type".to_owned()))),
        }
        field::<bool>(fields, "autocorrect", "true or false")?;
        let language = match (&hl, &gl) {
            (Some(hl), Some(gl)) if gl.len() == 2 => Some(format!(
                "{}-{}",
                hl.to_ascii_lowercase(),
                gl.to_ascii_uppercase()
            )),
            (Some(hl), _) => Some(hl.to_ascii_lowercase()),
            (None, _) => None,
        };
        let mut echo = Map::new();
        echo.insert("q".into(), Value::from(query.as_str()));
        echo.insert("type".into(), Value::from(kind.name()));
        echo.insert("num".into(), Value::from(num));
        echo.insert("page".into(), Value::from(page));
        for (name, value) in [("hl", hl), ("gl", gl), ("tbs", tbs)] {
            if let Some(value) = value {
                echo.insert(name.into(), Value::from(value));
            }
        }
        let categories = match kind {
            Kind::Search => Vec::new(),
            Kind::News => vec!["news".to_owned()],
        };
        Ok(Self {
            kind,
            input: SearchInput {
                query,
                pageno: (page > 1).then_some(page),
                categories,
                language,
                time_range,
                ..SearchInput::default()
            },
            num: num as usize,
            echo,
        })
    }

    /// One query's answer in Serper's shape.
    fn answer(&self, found: Found) -> Value {
        if self.kind == Kind::News {
            return self.news(found);
        }
        let organic = self.items(found.hits);
        let mut answer = json!({
            "searchParameters": self.echo,
            "organic": organic,
            "credits": 1,
        });
        if let Some(text) = found.answers.into_iter().next() {
            answer["answerBox"] = json!({ "answer": text });
        }
        if let Some(card) = found.infoboxes.into_iter().next() {
            answer["knowledgeGraph"] = knowledge_graph(card);
        }
        if !found.suggestions.is_empty() {
            answer["relatedSearches"] = found
                .suggestions
                .into_iter()
                .map(|query| json!({ "query": query }))
                .collect();
        }
        answer
    }
}

impl Ask {
    /// A news query's answer: Serper's `news` list.
    fn news(&self, found: Found) -> Value {
        json!({"searchParameters": self.echo, "news": self.items(found.hits), "credits": 1})
    }

    /// The first `num` hits as Serper's list items: `title`, `link`, `snippet`, a news item's
    /// `source`, `position` (from 1), and `date` when the hit has one.
    fn items(&self, hits: Vec<Hit>) -> Vec<Value> {
        hits.into_iter()
            .take(self.num)
            .enumerate()
            .map(|(i, hit)| {
                let mut item = Map::new();
                let source = (self.kind == Kind::News).then(|| source(&hit.url));
                item.insert("title".into(), Value::from(hit.title));
                item.insert("link".into(), Value::from(hit.url));
                item.insert("snippet".into(), Value::from(hit.content));
                if let Some(source) = source {
                    item.insert("source".into(), Value::from(source));
                }
                item.insert("position".into(), Value::from(i + 1));
                if let Some(date) = hit.published_date {
                    item.insert("date".into(), Value::from(date));
                }
                Value::Object(item)
            })
            .collect()
    }
}

/// A news item's `source`: the host of its link, without `www.` (empty for a link without one).
fn source(link: &str) -> String {
    let host = url::Url::parse(link)
        .ok()
        .and_then(|url| url.host_str().map(str::to_owned))
        .unwrap_or_default();
    host.strip_prefix("www.").map(str::to_owned).unwrap_or(host)
}

/// An infobox as Serper's `knowledgeGraph`: `title`, `description`, `descriptionLink` and
/// `website` (the card's page), `imageUrl`, `attributes` (label → value).
fn knowledge_graph(card: Infobox) -> Value {
    let mut graph = json!({"title": card.title, "description": card.content});
    if let Some(url) = card.url {
        graph["descriptionLink"] = Value::from(url.as_str());
        graph["website"] = Value::from(url);
    }
    if let Some(image) = card.image {
        graph["imageUrl"] = Value::from(image);
    }
    if !card.attributes.is_empty() {
        graph["attributes"] = card
            .attributes
            .into_iter()
            .map(|(label, value)| (label, Value::from(value)))
            .collect::<Map<String, Value>>()
            .into();
    }
    graph
}

/// `tbs` as SearXNG's time range (SearXNG has no hour: the last day).
fn time_range(tbs: &str) -> Result<TimeRange, SerperError> {
    Ok(match tbs {
        "qdr:h" | "qdr:d" => TimeRange::Day,
        "qdr:w" => TimeRange::Week,
        "qdr:m" => TimeRange::Month,
        "qdr:y" => TimeRange::Year,
        _ => {
            return Err(Refusal::InvalidField(InvalidField {
                name: "tbs",
                expected: "qdr:h, qdr:d, qdr:w, qdr:m or qdr:y",
            }))
        }
    })
}

/// A body sent to the `kind` endpoint: one request, or a batch (whether it was one).
fn decode(kind: Kind, body: &[u8]) -> Result<(Vec<Ask>, bool), SerperError> {
    match serde_json::from_slice::<Value>(body) {
        Ok(Value::Object(fields)) => Ok((vec![Ask::read(kind, &fields)?], false)),
        Ok(Value::Array(list)) if (1..=MAX_BATCH).contains(&list.len()) => {
            let asks = list
                .iter()
                .map(|item| match item {
                    Value::Object(fields) => Ask::read(kind, fields),
                    _ => Err(Refusal::Own(SerperOwn::Batch)),
                })
                .collect::<Result<Vec<_>, _>>()?;
            Ok((asks, true))
        }
        Ok(Value::Array(_)) => Err(Refusal::Own(SerperOwn::Batch)),
        _ => Err(Refusal::NotJson),
    }
}

/// `POST /serper/search`.
async fn search(
    State(gateway): State<Gateway>,
    Extension(admitted): Extension<Admitted>,
    body: LimitedBody,
) -> Response {
    serve(gateway, Kind::Search, admitted, body).await
}

/// `POST /serper/news`.
async fn news(
    State(gateway): State<Gateway>,
    Extension(admitted): Extension<Admitted>,
    body: LimitedBody,
) -> Response {
    serve(gateway, Kind::News, admitted, body).await
}

/// One call to either endpoint.
async fn serve(
    gateway: Gateway,
    kind: Kind,
    admitted: Admitted,
    LimitedBody(body): LimitedBody,
) -> Response {
    let max_query_bytes = gateway.server().max_query_bytes;
    let asked = body
        .map_err(SerperError::from)
        .and_then(|body| decode(kind, &body))
        .and_then(|(asks, batch)| {
            let requests = asks
                .iter()
                .map(|ask| SearchRequest::new(ask.input.clone(), max_query_bytes))
                .collect::<Result<Vec<_>, _>>()?;
            Ok((asks, batch, requests))
        });
    let (asks, batch, requests) = match asked {
        Ok(asked) => asked,
        Err(err) => {
            search_call::log_refused(Surface::Serper, err.code());
            return err.into_response();
        }
    };
    let searched =
        match search_read::search_all(&gateway, Surface::Serper, requests, &admitted).await {
            Ok(searched) => searched,
            Err(unanswered) => return SerperError::from(unanswered).into_response(),
        };
    let mut answers: Vec<Value> = asks
        .iter()
        .zip(searched.found)
        .map(|(ask, found)| ask.answer(found))
        .collect();
    let body = if batch {
        Value::from(answers)
    } else {
        answers.pop().unwrap_or(Value::Null)
    };
    let mut response = json_response(StatusCode::OK, body.to_string());
    if let Some(served) = &searched.first {
        search_call::set_served_headers(response.headers_mut(), served);
    }
    response
}

/// A body through the decoder and validation, for the fuzz target: the searches it asks for, or
/// the refusal's status.
#[cfg(any(test, feature = "fuzzing"))]
pub(crate) fn exercise(body: &[u8]) -> Result<usize, StatusCode> {
    let refused = |err: SerperError| err.into_response().status();
    let (asks, _) = decode(Kind::Search, body).map_err(refused)?;
    for ask in &asks {
        let req = SearchRequest::new(ask.input.clone(), 2048).map_err(|err| refused(err.into()))?;
        let _ = req.cache_key(gateway_core::request::AnswerScope::WithPremium);
        let _ = ask.answer(Found::default());
    }
    Ok(asks.len())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::server::kit::document::Hit;

    fn ask(body: Value) -> Result<(Vec<Ask>, bool), SerperError> {
        decode(Kind::Search, body.to_string().as_bytes())
    }

    #[test]
    fn reads_what_serper_clients_send() {
        let (asks, batch) = ask(json!({"q": "rust async", "gl": "us", "hl": "en", "num": 5,
            "page": 2, "tbs": "qdr:w", "autocorrect": true}))
        .unwrap();
        assert!(!batch);
        let one = &asks[0];
        assert_eq!(one.input.query, "rust async");
        assert_eq!(one.input.language.as_deref(), Some("en-US"));
        assert_eq!(one.input.pageno, Some(2));
        assert_eq!(one.input.time_range, Some(TimeRange::Week));
        assert_eq!(one.num, 5);
        assert_eq!(one.echo["gl"], "us");
        let (asks, batch) = ask(json!([{"q": "a"}, {"q": "b", "tbs": "qdr:h"}])).unwrap();
        assert!(batch);
        assert_eq!(asks.len(), 2);
        assert_eq!(asks[1].input.time_range, Some(TimeRange::Day));
        assert_eq!(asks[0].num, 10);
    }

    #[test]
    fn what_it_cannot_honour_is_refused_by_name() {
        for (body, code, named) in [
            (
                json!({"q": "q", "location": "Austin"}),
                "unsupported",
                "location",
            ),
            (json!({"q": "q", "type": "images"}), "unsupported", "type"),
            (json!({"q": "q", "num": 101}), "invalid_field", "num"),
            (json!({"q": "q", "tbs": "qdr:x"}), "invalid_field", "tbs"),
            (json!([]), "invalid_batch", "batch"),
            (json!(["q"]), "invalid_batch", "batch"),
            (json!("q"), "not_json", "JSON object"),
        ] {
            let err = ask(body.clone()).unwrap_err();
            assert_eq!(err.code(), code, "{body}");
            assert_eq!(err.status(), StatusCode::BAD_REQUEST, "{body}");
            assert!(err.message().contains(named), "{body}: {}", err.message());
        }
    }

    #[test]
    fn the_answer_is_serpers_shape() {
        let (asks, _) = ask(json!({"q": "q", "num": 1})).unwrap();
        let hit = |url: &str| Hit {
            url: url.into(),
            title: "t".into(),
            content: "s".into(),
            engines: vec![],
            published_date: Some("2026-11-30".into()),
        };
        let answer = asks[0].answer(Found {
            hits: vec![hit("https://a.example/"), hit("https://b.example/")],
            answers: vec!["forty-two".into()],
            suggestions: vec!["q tutorial".into()],
            infoboxes: vec![Infobox {
                title: "Q".into(),
                content: "A letter.".into(),
                url: Some("https://en.wikipedia.org/wiki/Q".into()),
                image: None,
                attributes: vec![("Script".into(), "Latin".into())],
            }],
        });
        assert_eq!(answer["relatedSearches"], json!([{"query": "q tutorial"}]));
        assert_eq!(
            answer["knowledgeGraph"],
            json!({"title": "Q", "description": "A letter.",
                   "descriptionLink": "https://en.wikipedia.org/wiki/Q",
                   "website": "https://en.wikipedia.org/wiki/Q", "attributes": {"Script": "Latin"}})
        );
        assert_eq!(
            answer["organic"],
            json!([{"title": "t", "link": "https://a.example/", "snippet": "s", "position": 1,
                    "date": "2026-11-30"}])
        );
        assert_eq!(answer["answerBox"]["answer"], "forty-two");
        assert_eq!(answer["searchParameters"]["q"], "q");
        let refused = SerperError::NotJson.into_response();
        assert_eq!(refused.status(), StatusCode::BAD_REQUEST);
    }

    #[test]
    fn news_searches_the_news_category_and_answers_serpers_news_list() {
        let (asks, _) = decode(Kind::News, br#"{"q": "rust", "num": 1}"#).unwrap();
        assert_eq!(asks[0].input.categories, vec!["news".to_owned()]);
        assert_eq!(asks[0].echo["type"], "news");
        let hit = |url: &str| Hit {
            url: url.into(),
            title: "t".into(),
            content: "s".into(),
            engines: vec![],
            published_date: Some("2026-11-30".into()),
        };
        let answer = asks[0].answer(Found {
            hits: vec![hit("https://www.news.example/a"), hit("https://b.example/")],
            answers: vec!["not news".into()],
            ..Found::default()
        });
        assert_eq!(
            answer["news"],
            json!([{"title": "t", "link": "https://www.news.example/a", "snippet": "s",
                    "source": "news.example", "position": 1, "date": "2026-11-30"}])
        );
        assert!(answer.get("organic").is_none() && answer.get("answerBox").is_none());
        // `type` names the endpoint's own kind or nothing.
        assert!(decode(Kind::News, br#"{"q": "q", "type": "news"}"#).is_ok());
        let refused = decode(Kind::News, br#"{"q": "q", "type": "search"}"#).unwrap_err();
        assert!(refused.message().contains("type"), "{}", refused.message());
        assert!(decode(Kind::Search, br#"{"q": "q", "type": "news"}"#).is_err());
    }
}
