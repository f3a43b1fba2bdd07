//! The process's diagnostics, set up once by the binary: log lines (`LOG_LEVEL`; `LOG_FORMAT` text
//! or one JSON object per line; to stdout, or to stderr when stdout carries the MCP protocol) and,
//! when an OTLP endpoint is configured, OpenTelemetry traces of the spans in [`crate::trace`],
//! exported in batches over OTLP/HTTP with protobuf bodies. A log line written inside a traced
//! request carries its trace id (a text line ends with `trace_id=…`, a JSON line has a `trace_id`
//! key), so a line found in the logs leads to the request's trace.
//!
//! Two layers on one registry, each with its own filter: the log layer takes the gateway's events
//! at `LOG_LEVEL` and the `request` span of `server::request_id` (so every line of a request
//! carries its `request_id`), never the trace spans; the OpenTelemetry
//! layer takes the [`crate::trace::TARGET`] spans and nothing else. Without an endpoint the second
//! layer is not installed, so nothing wants those spans and they cost nothing.

use std::fmt;

use opentelemetry::trace::{TraceContextExt, TracerProvider as _};
use opentelemetry_otlp::{Protocol, WithExportConfig};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::SdkTracerProvider;
use opentelemetry_sdk::Resource;
use tracing::{Event, Subscriber};
use tracing_opentelemetry::OpenTelemetrySpanExt;
use tracing_subscriber::field::MakeExt;
use tracing_subscriber::filter::{EnvFilter, Targets};
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::writer::BoxMakeWriter;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::Layer;

use crate::config::otlp::OtlpExport;
use crate::config::{Config, LogFormat};
use crate::trace::TARGET;

/// The running diagnostics; [`Telemetry::shutdown`] exports the spans still buffered.
#[derive(Debug)]
pub struct Telemetry {
    provider: Option<SdkTracerProvider>,
}

/// Where log lines go: stdout when serving HTTP, stderr when stdout carries the MCP protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogTo {
    /// Standard output (serving HTTP).
    Stdout,
    /// Standard error (serving MCP on stdio).
    Stderr,
}

impl LogTo {
    fn writer(self) -> BoxMakeWriter {
        match self {
            LogTo::Stdout => BoxMakeWriter::new(std::io::stdout),
            LogTo::Stderr => BoxMakeWriter::new(std::io::stderr),
        }
    }

    fn is_terminal(self) -> bool {
        match self {
            LogTo::Stdout => std::io::IsTerminal::is_terminal(&std::io::stdout()),
            LogTo::Stderr => std::io::IsTerminal::is_terminal(&std::io::stderr()),
        }
    }
}

/// The exporter could not be built.
#[derive(Debug, thiserror::Error)]
#[error("cannot start the OpenTelemetry exporter: {0}")]
pub struct TelemetryError(String);

/// Installs the log layer and, when configured, the trace export, as the process's subscriber.
/// Call it once, outside the async runtime.
pub fn init(config: &Config, to: LogTo) -> Result<Telemetry, TelemetryError> {
    let level = config.log_level().as_str();
    // The request span is on at every level, so a warning inside a request still names its ID.
    let log_filter = EnvFilter::new(format!(
        "searxng_gateway={level},searxng-gateway={level},{}=info,warn",
        crate::trace::REQUEST_TARGET
    ));
    let json = config.log_format() == LogFormat::Json;
    let Some(export) = &config.otlp else {
        let logs = if json {
            json_lines(to).with_filter(log_filter).boxed()
        } else {
            tracing_subscriber::fmt::layer()
                .with_writer(to.writer())
                .with_target(false)
                .with_ansi(to.is_terminal())
                .fmt_fields(text_fields(to.is_terminal()))
                .with_filter(log_filter)
                .boxed()
        };
        tracing_subscriber::registry().with(logs).init();
        return Ok(Telemetry { provider: None });
    };
    let provider = tracer_provider(export)?;
    opentelemetry::global::set_text_map_propagator(TraceContextPropagator::new());
    let spans = tracing_opentelemetry::layer()
        .with_tracer(provider.tracer("searxng-gateway"))
        .with_filter(Targets::new().with_target(TARGET, tracing::Level::TRACE));
    let logs = if json {
        tracing_subscriber::fmt::layer()
            .json()
            .with_writer(to.writer())
            .event_format(WithTraceId::json(json_format()))
            .with_filter(log_filter)
            .boxed()
    } else {
        tracing_subscriber::fmt::layer()
            .with_writer(to.writer())
            .with_ansi(false)
            .fmt_fields(text_fields(false))
            .event_format(WithTraceId::text(
                tracing_subscriber::fmt::format().with_target(false),
            ))
            .with_filter(log_filter)
            .boxed()
    };
    tracing_subscriber::registry().with(spans).with(logs).init();
    tracing::info!(
        endpoint = %export.traces_url,
        service = %export.service_name,
        "exporting traces over OTLP/HTTP"
    );
    Ok(Telemetry {
        provider: Some(provider),
    })
}

/// A text line's fields: on a terminal, tracing-subscriber's own (names in italics); elsewhere the
/// same text — `message` bare, then `name=value` with the value's `Debug`, space-separated — written
/// directly, where the default formatter still sends every name through its styling code with the
/// colours off (≈ 12 % of a cache hit's instructions; BENCHMARKS.md, issue #16).
fn text_fields(terminal: bool) -> TextFields {
    if terminal {
        return TextFields::Default(tracing_subscriber::fmt::format::DefaultFields::new());
    }
    TextFields::Plain(
        tracing_subscriber::fmt::format::debug_fn(plain_field as PlainField).delimited(" "),
    )
}

type PlainField = fn(&mut Writer<'_>, &tracing::field::Field, &dyn fmt::Debug) -> fmt::Result;

fn plain_field(
    writer: &mut Writer<'_>,
    field: &tracing::field::Field,
    value: &dyn fmt::Debug,
) -> fmt::Result {
    if field.name() == "message" {
        write!(writer, "{value:?}")
    } else {
        write!(writer, "{}={value:?}", field.name())
    }
}

/// The two field formatters of [`text_fields`] as one type.
enum TextFields {
    Default(tracing_subscriber::fmt::format::DefaultFields),
    Plain(
        tracing_subscriber::field::delimited::Delimited<
            &'static str,
            tracing_subscriber::fmt::format::FieldFn<PlainField>,
        >,
    ),
}

impl<'w> FormatFields<'w> for TextFields {
    fn format_fields<R: tracing_subscriber::field::RecordFields>(
        &self,
        writer: Writer<'w>,
        fields: R,
    ) -> fmt::Result {
        match self {
            TextFields::Default(inner) => inner.format_fields(writer, fields),
            TextFields::Plain(inner) => inner.format_fields(writer, fields),
        }
    }
}

/// `LOG_FORMAT=json`: one JSON object per line, the event's fields under `fields` and the
/// request's span (with its `request_id`) under `span`.
fn json_lines<S>(to: LogTo) -> impl Layer<S>
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    tracing_subscriber::fmt::layer()
        .json()
        .with_writer(to.writer())
        .event_format(json_format())
}

/// The JSON line's layout (see [`json_lines`]).
fn json_format() -> tracing_subscriber::fmt::format::Format<tracing_subscriber::fmt::format::Json> {
    tracing_subscriber::fmt::format()
        .json()
        .with_target(false)
        .with_current_span(true)
        .with_span_list(false)
}

fn tracer_provider(export: &OtlpExport) -> Result<SdkTracerProvider, TelemetryError> {
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(Protocol::HttpBinary)
        .with_endpoint(export.traces_url.as_str())
        .build()
        .map_err(|err| TelemetryError(err.to_string()))?;
    Ok(SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(
            Resource::builder()
                .with_service_name(export.service_name.clone())
                .build(),
        )
        .build())
}

impl Telemetry {
    /// Exports what is still buffered and stops the exporter (blocking; outside the runtime).
    pub fn shutdown(self) {
        if let Some(provider) = self.provider {
            if let Err(err) = provider.shutdown() {
                eprintln!("searxng-gateway: exporting the last spans failed: {err}");
            }
        }
    }
}

/// The log line as the inner format writes it, plus the trace id inside a traced request.
struct WithTraceId<F> {
    inner: F,
    json: bool,
}

impl<F> WithTraceId<F> {
    /// A text line: ` trace_id=…` at its end.
    fn text(inner: F) -> Self {
        Self { inner, json: false }
    }

    /// A JSON object: `"trace_id":"…"` as its first key.
    fn json(inner: F) -> Self {
        Self { inner, json: true }
    }
}

impl<S, N, F> FormatEvent<S, N> for WithTraceId<F>
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
    F: FormatEvent<S, N>,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        let Some(trace_id) = current_trace_id() else {
            return self.inner.format_event(ctx, writer, event);
        };
        let mut line = String::new();
        self.inner
            .format_event(ctx, Writer::new(&mut line), event)?;
        let line = line.trim_end_matches('\n');
        match line.strip_prefix('{').filter(|_| self.json) {
            // A trace id is hexadecimal: nothing in it needs escaping.
            Some(rest) if rest.starts_with('}') => {
                writeln!(writer, "{{\"trace_id\":\"{trace_id}\"{rest}")
            }
            Some(rest) => writeln!(writer, "{{\"trace_id\":\"{trace_id}\",{rest}"),
            None => writeln!(writer, "{line} trace_id={trace_id}"),
        }
    }
}

/// The trace of the span the current task is in, if it is traced.
fn current_trace_id() -> Option<String> {
    let span = tracing::Span::current();
    if span.is_none() {
        return None;
    }
    let context = span.context();
    let span_context = context.span().span_context().clone();
    span_context
        .is_valid()
        .then(|| span_context.trace_id().to_string())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::sync::{Arc, Mutex};

    use tracing_subscriber::fmt::MakeWriter;
    use tracing_subscriber::layer::SubscriberExt;

    use super::*;

    #[derive(Clone, Default)]
    struct Capture(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Capture {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl<'a> MakeWriter<'a> for Capture {
        type Writer = Capture;

        fn make_writer(&'a self) -> Self::Writer {
            self.clone()
        }
    }

    #[test]
    fn plain_text_fields_read_as_the_default_formatters_without_colours() {
        let (default, plain) = (Capture::default(), Capture::default());
        let subscriber = tracing_subscriber::registry()
            .with(
                tracing_subscriber::fmt::layer()
                    .with_writer(default.clone())
                    .with_ansi(false)
                    .without_time(),
            )
            .with(
                tracing_subscriber::fmt::layer()
                    .with_writer(plain.clone())
                    .with_ansi(false)
                    .without_time()
                    .fmt_fields(text_fields(false)),
            );
        tracing::subscriber::with_default(subscriber, || {
            let span = tracing::info_span!("request", request_id = "r-1", n = 3u64);
            let _entered = span.enter();
            tracing::info!(
                surface = "searxng",
                quoted = "a \"b\" c",
                status = 200u16,
                elapsed = -4i64,
                ratio = 0.5f64,
                hit = true,
                listen = %"127.0.0.1:8080",
                engines = ?["bing", "google"],
                "search"
            );
            tracing::warn!("no fields: {}", 42);
        });
        let default = String::from_utf8(default.0.lock().unwrap().clone()).unwrap();
        let plain = String::from_utf8(plain.0.lock().unwrap().clone()).unwrap();
        assert!(default.contains("request_id=\"r-1\""), "{default}");
        assert_eq!(plain, default);
    }
}
