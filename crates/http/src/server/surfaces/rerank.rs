//! A reranker in the Jina/Cohere shape: `POST /v1/rerank` scores a client's documents against its
//! query with the gateway's passage ranker (BM25, [`gateway_engine::read::passages`]), or the
//! operator's reranker when one is configured, so tools
//! that expect a reranker (LibreChat, node-DeepResearch, LangChain's Jina and Cohere rerankers
//! with a base URL) use the gateway instead of a paid API (#41).
//!
//! Request: `query` (required), `documents` (required: 1 to [`MAX_DOCUMENTS`] strings, or
//! `{"text": …}` objects as Jina and Cohere take them), `top_n` (how many come back, the best
//! first; all by default, more than there are is all), `return_documents` (default `true`, as
//! Jina's; `false`: indices and scores only). `model` is taken and echoed (there is one ranker).
//! Refused by name: Cohere's `max_tokens_per_doc`, `rank_fields`, `max_chunks_per_doc` and any
//! other field.
//!
//! With a reranker configured (`RERANK_URL`), the documents are sent to it — every one, through
//! its breaker and within `RERANK_TIMEOUT_SECONDS`, with the operator's `RERANK_MODEL` (the
//! client's `model` is only echoed) — and its order and scores are the answer; when it cannot be
//! used (open breaker, failure, timeout, garbage) the answer is BM25's, as without one. The header
//! `X-Gateway-Ranked-By` says which: `reranker`, `lexical`, or `lexical_fallback`.
//!
//! Answer: `{"id", "model", "results": [{"index", "relevance_score", "document"?: {"text"}}],
//! "usage": {"total_tokens"}}` — BM25's `relevance_score` is its score `s` mapped to
//! `s / (s + 1)`: 0 for no word of the query, rising towards 1, the same order as BM25's (a score
//! is comparable within one call, as BM25's are); ties keep the documents' order. The reranker's
//! is its own. `total_tokens` counts the
//! query and the documents with `TOKENIZER_ENCODING`. Errors: `{"message", "detail", "code"}`
//! (Cohere's `message`, Jina's `detail`), 400 naming the field, 401/429 from the gate.
//!
//! Bounded: the body by the server's body limit, the documents by [`MAX_DOCUMENTS`], the scoring on
//! the blocking pool (a few milliseconds for a thousand short documents).

use axum::extract::State;
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::Router;
use serde_json::{json, Map, Value};

use crate::gateway::Gateway;
use crate::server::kit::body::LimitedBody;
use crate::server::kit::gate::Gate;
use crate::server::kit::json_fields::{self, field, InvalidField};
use crate::server::kit::refusal::{self, json_response, Door, OwnRefusal, Refusal};
use gateway_engine::read::passages::RankedBy;
use gateway_upstreams::reranker::Scored;

/// Where the reranker is served (Jina's and Cohere's v1 path).
pub(crate) const PATH: &str = "/v1/rerank";
/// The most documents one call ranks (Cohere's own recommendation).
pub(crate) const MAX_DOCUMENTS: usize = 1000;
/// Which ranking ordered the answer: `reranker`, `lexical`, or `lexical_fallback` (the reranker
/// configured could not be used).
const RANKED_BY: &str = "x-gateway-ranked-by";
/// What the answer names as its model when the client named none.
const MODEL: &str = "searxng-gateway-bm25";
/// The fields this door reads.
const READS: [&str; 5] = ["query", "documents", "top_n", "return_documents", "model"];

/// The route, behind the gate.
pub(crate) fn routes(gate: &Gate) -> Router<Gateway> {
    Router::new()
        .route(PATH, post(rerank).fallback(refusal::wrong_method::<Rerank>))
        .layer(gate.layer(Rerank))
}

/// The reranker's error shape.
#[derive(Debug, Clone, Copy)]
struct Rerank;

/// What a reranker client gets instead of scores.
type RerankError = Refusal<Rerank>;

/// What only this door refuses.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum RerankOwn {
    /// A field this reranker does not honour.
    #[error("{0} is not honoured by this gateway's reranker")]
    Unsupported(String),
    /// No documents, or more than [`MAX_DOCUMENTS`].
    #[error("documents: between 1 and {MAX_DOCUMENTS} are ranked in one call, got {0}")]
    DocumentCount(usize),
}

impl OwnRefusal for RerankOwn {
    fn code(&self) -> &'static str {
        match self {
            Self::Unsupported(_) => "unsupported_option",
            Self::DocumentCount(_) => "invalid_documents",
        }
    }

    fn status(&self) -> StatusCode {
        StatusCode::BAD_REQUEST
    }
}

impl Door for Rerank {
    type Own = RerankOwn;
    const KEY_IN_BODY: bool = false;

    fn body(refusal: &RerankError, _status: StatusCode, message: String) -> Value {
        json!({"message": message, "detail": message, "code": refusal.code()})
    }
}

/// One call, as asked.
#[derive(Debug, Clone, PartialEq)]
struct Ask {
    query: String,
    documents: Vec<String>,
    top_n: Option<usize>,
    return_documents: bool,
    model: Option<String>,
}

impl Ask {
    fn read(body: &[u8]) -> Result<Self, RerankError> {
        let fields = json_fields::object(body).ok_or(Refusal::NotJson)?;
        if let Some(name) = json_fields::unhonoured(&fields, &READS, &[], |_, _| false) {
            return Err(Refusal::Own(RerankOwn::Unsupported(name)));
        }
        let query: String = field(&fields, "query", "a non-empty string")?
            .filter(|q: &String| !q.trim().is_empty())
            .ok_or(InvalidField {
                name: "query",
                expected: "a non-empty string",
            })?;
        let documents = documents(&fields)?;
        let top_n = field::<usize>(&fields, "top_n", "a positive integer")?;
        if top_n == Some(0) {
            return Err(InvalidField {
                name: "top_n",
                expected: "a positive integer",
            }
            .into());
        }
        let return_documents =
            field::<bool>(&fields, "return_documents", "true or false")?.unwrap_or(true);
        let model = field::<String>(&fields, "model", "a string")?;
        Ok(Self {
            query,
            documents,
            top_n,
            return_documents,
            model,
        })
    }
}

/// `documents`: strings, or objects with a `text`.
fn documents(fields: &Map<String, Value>) -> Result<Vec<String>, RerankError> {
    const EXPECTED: &str = "a list of strings or of {\"text\": string} objects";
    let invalid = || InvalidField {
        name: "documents",
        expected: EXPECTED,
    };
    let Some(Value::Array(items)) = fields.get("documents") else {
        return Err(invalid().into());
    };
    if items.is_empty() || items.len() > MAX_DOCUMENTS {
        return Err(Refusal::Own(RerankOwn::DocumentCount(items.len())));
    }
    items
        .iter()
        .map(|item| match item {
            Value::String(text) => Ok(text.clone()),
            Value::Object(object) => match object.get("text") {
                Some(Value::String(text)) => Ok(text.clone()),
                _ => Err(invalid().into()),
            },
            _ => Err(invalid().into()),
        })
        .collect()
}

/// One document's place in the answer.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Ranked {
    index: usize,
    relevance: f64,
}

/// The documents best first (ties in their order), from BM25's `scores`.
fn lexical(scores: &[f32]) -> Vec<Ranked> {
    let mut ranked: Vec<Ranked> = scores
        .iter()
        .enumerate()
        .map(|(index, score)| {
            let score = f64::from(score.max(0.0));
            Ranked {
                index,
                relevance: score / (score + 1.0),
            }
        })
        .collect();
    ranked.sort_by(|a, b| {
        b.relevance
            .total_cmp(&a.relevance)
            .then(a.index.cmp(&b.index))
    });
    ranked
}

/// The documents in the reranker's order with its scores; one it left out (its own `top_n`)
/// follows, in the documents' order, at the lowest score it gave.
fn from_reranker(scored: &[Scored], documents: usize) -> Vec<Ranked> {
    let mut named = vec![false; documents];
    let mut ranked: Vec<Ranked> = scored
        .iter()
        .map(|s| {
            named[s.index] = true;
            Ranked {
                index: s.index,
                relevance: f64::from(s.relevance),
            }
        })
        .collect();
    let floor = ranked.last().map_or(0.0, |r| r.relevance);
    ranked.extend((0..documents).filter(|i| !named[*i]).map(|index| Ranked {
        index,
        relevance: floor,
    }));
    ranked
}

/// The first `top_n` of `ranked` (all without it).
fn top(mut ranked: Vec<Ranked>, top_n: Option<usize>) -> Vec<Ranked> {
    ranked.truncate(top_n.unwrap_or(usize::MAX));
    ranked
}

async fn rerank(State(gateway): State<Gateway>, LimitedBody(body): LimitedBody) -> Response {
    let ask = match body.map_err(RerankError::from).and_then(|b| Ask::read(&b)) {
        Ok(ask) => ask,
        Err(err) => {
            tracing::info!(error = err.code(), "rerank refused");
            return err.into_response();
        }
    };
    let texts: Vec<&str> = ask.documents.iter().map(String::as_str).collect();
    let reranked = gateway
        .rerank_texts(&ask.query, &texts, gateway.settings().request_budget)
        .await;
    let selector = gateway.passages();
    let scored = tokio::task::spawn_blocking(move || {
        let texts: Vec<&str> = ask.documents.iter().map(String::as_str).collect();
        let order = match reranked {
            Some(Ok(scored)) => (from_reranker(&scored, texts.len()), RankedBy::Reranker),
            // BM25's scores only when they are the answer.
            Some(Err(why)) => (
                lexical(&selector.rank_texts(&ask.query, &texts)),
                RankedBy::Fallback(why),
            ),
            None => (
                lexical(&selector.rank_texts(&ask.query, &texts)),
                RankedBy::Lexical,
            ),
        };
        let counter = selector.counter();
        let tokens =
            counter.count(&ask.query) + texts.iter().map(|t| counter.count(t)).sum::<usize>();
        (ask, order, tokens)
    })
    .await;
    let Ok((ask, (order, by), tokens)) = scored else {
        return RerankError::Internal.into_response();
    };
    let results: Vec<Value> = top(order, ask.top_n)
        .into_iter()
        .map(|r| {
            let mut result = json!({"index": r.index, "relevance_score": r.relevance});
            if ask.return_documents {
                result["document"] = json!({"text": ask.documents[r.index]});
            }
            result
        })
        .collect();
    tracing::info!(
        documents = ask.documents.len(),
        returned = results.len(),
        ranked_by = by.as_str(),
        fallback = by.fallback().map(|why| why.as_str()),
        "reranked"
    );
    let body = json!({
        "id": uuid::Uuid::new_v4().to_string(),
        "model": ask.model.as_deref().unwrap_or(MODEL),
        "results": results,
        "usage": {"total_tokens": tokens},
    });
    let mut response = json_response(StatusCode::OK, body.to_string());
    response
        .headers_mut()
        .insert(RANKED_BY, HeaderValue::from_static(by.as_str()));
    response
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn ask(body: Value) -> Result<Ask, RerankError> {
        Ask::read(body.to_string().as_bytes())
    }

    #[test]
    fn takes_jina_and_cohere_requests() {
        let jina = ask(
            json!({"model": "jina-reranker-v2-base-multilingual", "query": "q",
            "documents": ["a", {"text": "b"}], "top_n": 1, "return_documents": false}),
        )
        .unwrap();
        assert_eq!(jina.documents, ["a", "b"]);
        assert_eq!(jina.top_n, Some(1));
        assert!(!jina.return_documents);
        let cohere = ask(json!({"query": "q", "documents": ["a"]})).unwrap();
        assert!(cohere.return_documents, "Jina's default");
        assert_eq!(cohere.model, None);
    }

    #[test]
    fn refuses_by_name_what_it_cannot_do_and_what_is_malformed() {
        let code = |body: Value| ask(body).unwrap_err().code();
        let message = |body: Value| ask(body).unwrap_err().message();
        assert!(
            message(json!({"query": "q", "documents": ["a"], "max_tokens_per_doc": 10}))
                .contains("max_tokens_per_doc")
        );
        assert!(message(json!({"documents": ["a"]})).contains("query"));
        assert!(message(json!({"query": " ", "documents": ["a"]})).contains("query"));
        assert!(message(json!({"query": "q", "documents": [1]})).contains("documents"));
        assert!(message(json!({"query": "q", "documents": "a"})).contains("documents"));
        assert_eq!(
            code(json!({"query": "q", "documents": []})),
            "invalid_documents"
        );
        let many = vec!["a"; MAX_DOCUMENTS + 1];
        assert_eq!(
            code(json!({"query": "q", "documents": many})),
            "invalid_documents"
        );
        assert!(message(json!({"query": "q", "documents": ["a"], "top_n": 0})).contains("top_n"));
        assert_eq!(
            Ask::read(b"not json").unwrap_err().status(),
            StatusCode::BAD_REQUEST
        );
    }

    #[test]
    fn the_best_come_first_scores_map_into_zero_to_one_and_ties_keep_their_order() {
        let ranked = lexical(&[0.0, 3.0, 1.0, 3.0]);
        let order: Vec<usize> = ranked.iter().map(|r| r.index).collect();
        assert_eq!(order, [1, 3, 2, 0]);
        assert!((ranked[0].relevance - 0.75).abs() < 1e-9);
        assert_eq!(ranked[3].relevance, 0.0);
        assert_eq!(top(lexical(&[1.0, 2.0, 3.0]), Some(2)).len(), 2);
        assert_eq!(
            top(lexical(&[1.0]), Some(5)).len(),
            1,
            "more than there are: all"
        );
    }

    #[test]
    fn the_rerankers_order_and_scores_are_the_answer_and_what_it_left_out_follows() {
        let scored = [
            Scored {
                index: 2,
                relevance: 0.9,
            },
            Scored {
                index: 0,
                relevance: 0.25,
            },
        ];
        let ranked = from_reranker(&scored, 4);
        let order: Vec<usize> = ranked.iter().map(|r| r.index).collect();
        assert_eq!(order, [2, 0, 1, 3]);
        assert!((ranked[0].relevance - 0.9).abs() < 1e-6);
        assert_eq!(ranked[2].relevance, ranked[1].relevance);
    }
}
