//! OpenTelemetry export, read from the standard `OTEL_*` variables: off unless a traces endpoint is
//! set. Only OTLP over HTTP with protobuf bodies to a plain `http://` collector is built in (the
//! specification's default protocol; a TLS endpoint is refused, naming the variable, rather than
//! failing at the first export).

use url::Url;

use gateway_core::env::{ConfigError, Env, Problem};

/// Where and as whom spans are exported.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct OtlpExport {
    /// The full traces URL (`…/v1/traces`).
    pub(crate) traces_url: Url,
    /// `service.name`.
    pub(crate) service_name: String,
}

impl OtlpExport {
    /// `None` when neither endpoint variable is set: tracing is off.
    pub(super) fn read(env: &Env<'_>) -> Result<Option<Self>, ConfigError> {
        let base = env.optional_url("OTEL_EXPORTER_OTLP_ENDPOINT")?;
        let traces = env.optional_url("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")?;
        if let Some(raw) = env.value("OTEL_EXPORTER_OTLP_PROTOCOL") {
            if raw.text != "http/protobuf" {
                return Err(raw.error(Problem::Unsupported(
                    "http/protobuf (the OTLP default); grpc and http/json are not built in",
                )));
            }
        }
        let service_name = env
            .value("OTEL_SERVICE_NAME")
            .map_or_else(|| "searxng-gateway".to_owned(), |raw| raw.text);
        let (variable, traces_url) = match (traces, base) {
            (Some(url), _) => ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", url),
            (None, Some(mut url)) => {
                let path = format!("{}/v1/traces", url.path().trim_end_matches('/'));
                url.set_path(&path);
                ("OTEL_EXPORTER_OTLP_ENDPOINT", url)
            }
            (None, None) => return Ok(None),
        };
        if traces_url.scheme() != "http" {
            return Err(ConfigError::new(
                variable,
                traces_url.as_str(),
                Problem::NotPlainHttp,
            ));
        }
        Ok(Some(Self {
            traces_url,
            service_name,
        }))
    }
}
