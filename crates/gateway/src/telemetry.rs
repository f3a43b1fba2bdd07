//! The process's diagnostics, set up once by the binary: log lines (`LOG_LEVEL`; `LOG_FORMAT` text
//! or one JSON object per line; to stdout, or to stderr when stdout carries the MCP protocol) and,
//! when an OTLP endpoint is configured, OpenTelemetry traces of the spans in [`gateway_core::trace`],
//! exported in batches over OTLP/HTTP with protobuf bodies. A log line written inside a traced
//! request carries its trace id (a text line ends with `trace_id=…`, a JSON line has a `trace_id`
//! key), so a line found in the logs leads to the request's trace.
//!
//! Two layers on one registry, each with its own filter: the log layer takes the gateway's events
//! at `LOG_LEVEL` and the `request` span of `server::request_id` (so every line of a request
//! carries its `request_id`), never the trace spans; the OpenTelemetry
//! layer takes the [`gateway_core::trace::TARGET`] spans and nothing else. Without an endpoint the second
//! layer is not installed, so nothing wants those spans and they cost nothing.
//!
//! Lines are written by a thread of their own (tracing-appender's non-blocking writer): a request
//! formats its line into a queue of `LOG_QUEUE_LINES` and goes on, so a slow or stalled stdout (a
//! log shipper that stopped reading) never holds up a search. A full queue drops the line and
//! counts it (`log_lines_dropped_total`); [`Telemetry::shutdown`] writes out what is queued. The
//! thread writes each batch it takes off the queue in one `write` and then rests
//! ([`Batched`]), so at a busy gateway's rate it is woken about once a millisecond, not once a line.

use std::fmt;

use opentelemetry::trace::{TraceContextExt, TracerProvider as _};
use opentelemetry_otlp::{Protocol, WithExportConfig};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::SdkTracerProvider;
use opentelemetry_sdk::Resource;
use tracing::field::{Field, Visit};
use tracing::{Event, Subscriber};
use tracing_appender::non_blocking::{NonBlocking, NonBlockingBuilder, WorkerGuard};
use tracing_opentelemetry::OpenTelemetrySpanExt;
use tracing_subscriber::field::RecordFields;
use tracing_subscriber::filter::{EnvFilter, Targets};
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::time::FormatTime;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::Layer;

use crate::config::otlp::OtlpExport;
use crate::config::{Config, LogFormat};
use gateway_core::trace::TARGET;

/// The running diagnostics; [`Telemetry::shutdown`] exports the spans still buffered.
#[derive(Debug)]
pub struct Telemetry {
    provider: Option<SdkTracerProvider>,
    /// The log writer thread; dropping it writes out the queued lines.
    log_writer: WorkerGuard,
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
    /// The process's log writer: a thread writing this stream, fed by a queue of `queue_lines`
    /// lines that drops (and counts) what does not fit.
    fn writer(self, queue_lines: usize) -> (NonBlocking, WorkerGuard) {
        let builder = NonBlockingBuilder::default()
            .lossy(true)
            .buffered_lines_limit(queue_lines)
            .thread_name("log-writer");
        let (writer, guard) = match self {
            LogTo::Stdout => builder.finish(Batched::new(std::io::stdout())),
            LogTo::Stderr => builder.finish(Batched::new(std::io::stderr())),
        };
        gateway_core::metrics::log_drops::count_from(writer.error_counter());
        (writer, guard)
    }

    fn is_terminal(self) -> bool {
        match self {
            LogTo::Stdout => std::io::IsTerminal::is_terminal(&std::io::stdout()),
            LogTo::Stderr => std::io::IsTerminal::is_terminal(&std::io::stderr()),
        }
    }
}

/// The log writer thread's stream, written a batch at a time. tracing-appender's worker writes
/// every line it takes off the queue and calls `flush` when the queue is empty; here the lines
/// gather in a buffer, `flush` writes them in one call and then pauses the thread for
/// [`Batched::PAUSE`]. While it pauses, requests queue their lines without waking it (a woken
/// writer costs a futex wake on the request's thread and a context switch per line: 6 % of the
/// gateway's CPU on cache hits, BENCHMARKS.md "#28"). A line waits at most that long; the queue's
/// bound and its count of dropped lines are unchanged. tracing-appender has no setting for this,
/// hence the wrapper.
struct Batched<W: std::io::Write> {
    out: W,
    buffer: Vec<u8>,
}

impl<W: std::io::Write> Batched<W> {
    /// How long the thread rests after writing a batch.
    const PAUSE: std::time::Duration = std::time::Duration::from_millis(1);
    /// A batch larger than this is written out as it grows.
    const MAX_BATCH: usize = 64 * 1024;

    fn new(out: W) -> Self {
        Batched {
            out,
            buffer: Vec::with_capacity(Self::MAX_BATCH),
        }
    }

    /// Writes out the buffered lines; they are gone afterwards even when the write failed (a
    /// closed stdout must not grow the buffer).
    fn write_out(&mut self) -> std::io::Result<()> {
        if self.buffer.is_empty() {
            return Ok(());
        }
        let written = self.out.write_all(&self.buffer);
        self.buffer.clear();
        written
    }
}

impl<W: std::io::Write> std::io::Write for Batched<W> {
    fn write(&mut self, line: &[u8]) -> std::io::Result<usize> {
        if self.buffer.len() + line.len() > Self::MAX_BATCH {
            self.write_out()?;
        }
        self.buffer.extend_from_slice(line);
        Ok(line.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.write_out()?;
        self.out.flush()?;
        std::thread::sleep(Self::PAUSE);
        Ok(())
    }
}

/// The exporter could not be built.
#[derive(Debug, thiserror::Error)]
#[error("cannot start the OpenTelemetry exporter: {0}")]
pub struct TelemetryError(String);

/// The log targets of the product's crates: `LOG_LEVEL` applies to them, warnings only to the
/// libraries beneath.
const PRODUCT_CRATES: [&str; 6] = [
    "searxng_gateway",
    "searxng-gateway",
    "gateway_core",
    "gateway_upstreams",
    "gateway_engine",
    "gateway_http",
];

/// Installs the log layer and, when configured, the trace export, as the process's subscriber.
/// Call it once, outside the async runtime.
pub fn init(config: &Config, to: LogTo) -> Result<Telemetry, TelemetryError> {
    let level = config.log_level().as_str();
    // The request span is on at every level, so a warning inside a request still names its ID.
    let crates: String = PRODUCT_CRATES
        .iter()
        .map(|name| format!("{name}={level},"))
        .collect();
    let log_filter = EnvFilter::new(format!(
        "{crates}{}=info,warn",
        gateway_core::trace::REQUEST_TARGET
    ));
    let json = config.log_format() == LogFormat::Json;
    let (writer, log_writer) = to.writer(config.log_queue_lines());
    let Some(export) = &config.otlp else {
        let logs = if json {
            json_lines(writer).with_filter(log_filter).boxed()
        } else {
            tracing_subscriber::fmt::layer()
                .with_writer(writer)
                .with_timer(LineTime)
                .with_target(false)
                .with_ansi(to.is_terminal())
                .fmt_fields(text_fields(to.is_terminal()))
                .with_filter(log_filter)
                .boxed()
        };
        tracing_subscriber::registry().with(logs).init();
        return Ok(Telemetry {
            provider: None,
            log_writer,
        });
    };
    let provider = tracer_provider(export)?;
    opentelemetry::global::set_text_map_propagator(TraceContextPropagator::new());
    let spans = tracing_opentelemetry::layer()
        .with_tracer(provider.tracer("searxng-gateway"))
        .with_filter(Targets::new().with_target(TARGET, tracing::Level::TRACE));
    let logs = if json {
        tracing_subscriber::fmt::layer()
            .json()
            .with_writer(writer)
            .event_format(WithTraceId::json(json_format()))
            .with_filter(log_filter)
            .boxed()
    } else {
        tracing_subscriber::fmt::layer()
            .with_writer(writer)
            .with_ansi(false)
            .fmt_fields(text_fields(false))
            .event_format(WithTraceId::text(
                tracing_subscriber::fmt::format()
                    .with_timer(LineTime)
                    .with_target(false),
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
        log_writer,
    })
}

/// A text line's fields: on a terminal, tracing-subscriber's own (names in italics); elsewhere the
/// same text written by [`PlainFields`].
fn text_fields(terminal: bool) -> TextFields {
    if terminal {
        TextFields::Default(tracing_subscriber::fmt::format::DefaultFields::new())
    } else {
        TextFields::Plain(PlainFields)
    }
}

/// The two field formatters of [`text_fields`] as one type.
enum TextFields {
    Default(tracing_subscriber::fmt::format::DefaultFields),
    Plain(PlainFields),
}

impl<'w> FormatFields<'w> for TextFields {
    fn format_fields<R: RecordFields>(&self, writer: Writer<'w>, fields: R) -> fmt::Result {
        match self {
            TextFields::Default(inner) => inner.format_fields(writer, fields),
            TextFields::Plain(inner) => inner.format_fields(writer, fields),
        }
    }
}

/// The default field formatter's text without colours — `message` bare, then `name=value` with
/// the value's `Debug`, space-separated — written directly: the default formatter sends every name
/// through its styling code even with colours off, and every value through `fmt`'s machinery.
/// Every search logs a line (≈ a quarter of a cache hit's instructions; BENCHMARKS.md, issue #16),
/// so the common values take short cuts that give the same text: a string of printable ASCII
/// without `"` or `\\` is its `Debug` between quotes, an integer its digits.
#[derive(Debug, Clone, Copy)]
struct PlainFields;

impl<'w> FormatFields<'w> for PlainFields {
    fn format_fields<R: RecordFields>(&self, writer: Writer<'w>, fields: R) -> fmt::Result {
        let mut visitor = PlainVisitor {
            writer,
            first: true,
            result: Ok(()),
        };
        fields.record(&mut visitor);
        visitor.result
    }
}

struct PlainVisitor<'w> {
    writer: Writer<'w>,
    first: bool,
    result: fmt::Result,
}

impl PlainVisitor<'_> {
    /// The separator and `name=` (nothing for `message`).
    fn name(&mut self, field: &Field) -> fmt::Result {
        if !std::mem::take(&mut self.first) {
            self.writer.write_char(' ')?;
        }
        if field.name() != "message" {
            self.writer.write_str(field.name())?;
            self.writer.write_char('=')?;
        }
        Ok(())
    }

    fn str_field(&mut self, field: &Field, value: &str) -> fmt::Result {
        self.name(field)?;
        if field.name() == "message" {
            self.writer.write_str(value)
        } else if value
            .bytes()
            .all(|b| (b' '..=b'~').contains(&b) && b != b'"' && b != b'\\')
        {
            self.writer.write_char('"')?;
            self.writer.write_str(value)?;
            self.writer.write_char('"')
        } else {
            write!(self.writer, "{value:?}")
        }
    }

    fn digits(&mut self, field: &Field, digits: &str) -> fmt::Result {
        self.name(field)?;
        self.writer.write_str(digits)
    }

    fn debug_field(&mut self, field: &Field, value: &dyn fmt::Debug) -> fmt::Result {
        self.name(field)?;
        write!(self.writer, "{value:?}")
    }
}

impl Visit for PlainVisitor<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        if self.result.is_ok() {
            self.result = self.str_field(field, value);
        }
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        if self.result.is_ok() {
            self.result = self.digits(field, itoa::Buffer::new().format(value));
        }
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        if self.result.is_ok() {
            self.result = self.digits(field, itoa::Buffer::new().format(value));
        }
    }

    fn record_error(&mut self, field: &Field, value: &(dyn std::error::Error + 'static)) {
        // As the default formatter: the error, then its sources as `NAME.sources=[a, b]`.
        let sources = ErrorSources(value.source());
        match value.source() {
            Some(_) => self.record_debug(
                field,
                &format_args!("{value} {}.sources={sources}", field.name()),
            ),
            None => self.record_debug(field, &format_args!("{value}")),
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        if self.result.is_ok() {
            self.result = self.debug_field(field, value);
        }
    }
}

/// An error's sources as `[a, b]`.
struct ErrorSources<'a>(Option<&'a (dyn std::error::Error + 'static)>);

impl fmt::Display for ErrorSources<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut list = f.debug_list();
        let mut next = self.0;
        while let Some(source) = next {
            list.entry(&format_args!("{source}"));
            next = source.source();
        }
        list.finish()
    }
}

/// The time at the start of a log line: RFC 3339 in UTC with microseconds, as tracing-subscriber's
/// default writes it, written by `humantime` (digits straight into a buffer, where the default
/// goes through `fmt`'s padding code for each of its seven numbers).
#[derive(Debug, Clone, Copy)]
struct LineTime;

impl FormatTime for LineTime {
    fn format_time(&self, w: &mut Writer<'_>) -> fmt::Result {
        write_time(w, std::time::SystemTime::now())
    }
}

fn write_time(w: &mut impl fmt::Write, at: std::time::SystemTime) -> fmt::Result {
    write!(w, "{}", humantime::format_rfc3339_micros(at))
}

/// `LOG_FORMAT=json`: one JSON object per line, the event's fields under `fields` and the
/// request's span (with its `request_id`) under `span`.
fn json_lines<S>(writer: NonBlocking) -> impl Layer<S>
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    tracing_subscriber::fmt::layer()
        .json()
        .with_writer(writer)
        .event_format(json_format())
}

/// The JSON line's layout (see [`json_lines`]).
fn json_format(
) -> tracing_subscriber::fmt::format::Format<tracing_subscriber::fmt::format::Json, LineTime> {
    tracing_subscriber::fmt::format()
        .with_timer(LineTime)
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
        drop(self.log_writer);
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

    /// A stream that keeps each `write` call apart, or refuses them all.
    #[derive(Default)]
    struct Calls {
        writes: Vec<Vec<u8>>,
        broken: bool,
    }

    impl std::io::Write for Calls {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            if self.broken {
                return Err(std::io::ErrorKind::BrokenPipe.into());
            }
            self.writes.push(buf.to_vec());
            Ok(buf.len())
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn the_log_writer_writes_a_batch_of_lines_in_one_call() {
        use std::io::Write as _;
        let mut out = Batched::new(Calls::default());
        out.write_all(b"one\n").unwrap();
        out.write_all(b"two\n").unwrap();
        assert!(out.out.writes.is_empty(), "lines wait for the batch's end");
        out.flush().unwrap();
        assert_eq!(out.out.writes, vec![b"one\ntwo\n".to_vec()]);
        out.flush().unwrap();
        assert_eq!(out.out.writes.len(), 1, "an empty batch writes nothing");

        // A batch that would outgrow the buffer goes out first.
        let long = vec![b'x'; Batched::<Calls>::MAX_BATCH - 2];
        out.write_all(b"three\n").unwrap();
        out.write_all(&long).unwrap();
        assert_eq!(out.out.writes.len(), 2);
        assert_eq!(out.out.writes[1], b"three\n".to_vec());
        out.flush().unwrap();
        assert_eq!(out.out.writes[2], long);
    }

    #[test]
    fn a_failed_batch_is_dropped_not_kept() {
        use std::io::Write as _;
        let mut out = Batched::new(Calls {
            broken: true,
            ..Calls::default()
        });
        out.write_all(b"lost\n").unwrap();
        assert!(out.flush().is_err());
        assert!(out.buffer.is_empty());
        out.out.broken = false;
        out.write_all(b"next\n").unwrap();
        out.flush().unwrap();
        assert_eq!(out.out.writes, vec![b"next\n".to_vec()]);
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
                empty = "",
                apostrophe = "it's",
                accented = "café ☕",
                control = "a\tb\nc\u{7f}",
                backslash = "a\\b",
                message_like = "x",
                big = u64::MAX,
                negative = i64::MIN,
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
            tracing::info!(message = "a str message", n = 1u64);
            let io = std::io::Error::other("disk gone");
            let err = anyhow::Error::new(io).context("while saving");
            let err: &(dyn std::error::Error + 'static) = err.as_ref();
            tracing::warn!(error = err, "failed");
            let plain = std::io::Error::other("plain");
            tracing::warn!(
                error = &plain as &(dyn std::error::Error + 'static),
                "failed"
            );
        });
        let default = String::from_utf8(default.0.lock().unwrap().clone()).unwrap();
        let plain = String::from_utf8(plain.0.lock().unwrap().clone()).unwrap();
        assert!(default.contains("request_id=\"r-1\""), "{default}");
        assert!(default.contains("error.sources=[disk gone]"), "{default}");
        assert_eq!(plain, default);
    }

    #[test]
    fn a_line_time_is_rfc_3339_in_utc_with_microseconds_as_the_default_writes_it() {
        let at = std::time::UNIX_EPOCH + std::time::Duration::new(1_796_135_553, 123_456_789);
        let mut text = String::new();
        write_time(&mut text, at).unwrap();
        assert_eq!(text, "2026-12-01T14:32:33.123456Z");
        // The default's layout, character class by character class.
        let mut default = String::new();
        tracing_subscriber::fmt::time::SystemTime
            .format_time(&mut Writer::new(&mut default))
            .unwrap();
        let shape = |s: &str| -> String {
            s.chars()
                .map(|c| if c.is_ascii_digit() { '0' } else { c })
                .collect()
        };
        assert_eq!(shape(&text), shape(&default));
    }
}
