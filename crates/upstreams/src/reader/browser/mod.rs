//! The local browser: a page rendered by a headless Chromium, for the pages whose text arrives
//! by script. One URL in, the rendered DOM (`document.documentElement.outerHTML`, at most
//! `FETCH_MAX_BYTES`) out; the reader then parses it like any page ([`super::Reader::render`]).
//!
//! - [`settings`]: `BROWSER`, `BROWSER_PATH`, `BROWSER_TABS`, `BROWSER_TIMEOUT_SECONDS`,
//!   `BROWSER_MEMORY_MB`, `BROWSER_HOSTS`.
//! - [`process`]: Chromium's command line, its process tree's memory, its end.
//! - [`supervisor`]: the one browser process, started lazily, watched, restarted with backoff.
//! - [`fence`]: every request a page makes, checked and fetched by the direct reader's client.
//! - [`metrics`]: `browser_reads_total{outcome}`, `browser_read_seconds`, `browser_tabs_in_use`,
//!   `browser_restarts_total{reason}`.
//! - [`screenshot`]: a rendered page as a PNG ([`Browser::screenshot`]), its size bounded.
//!
//! **One render.** A tab lease (`BROWSER_TABS`, a semaphore; a render that gets none within its
//! time fails `busy`), a fresh browser context (an incognito profile: no cookie, storage or cache
//! shared with any other render, disposed of afterwards whatever happened), downloads denied,
//! the fence on, the navigation, then a settle: `waitFor` when the client gave one, else until
//! the page's requests have been quiet for [`QUIET`] (at most [`SETTLE`]). The whole render is
//! within `BROWSER_TIMEOUT_SECONDS` and the request's budget; a page that loops forever in
//! script is cut there, its context disposed of (which ends its renderer) — and if the browser
//! does not even answer that, it is killed and started again.
//!
//! **The fence.** Chromium is started so that its own network reaches nothing: every name
//! resolves to "not found" (`--host-resolver-rules=MAP * ~NOTFOUND`) and every connection goes
//! to a loopback proxy port that refuses it (`--proxy-server`, loopback included). A page's
//! requests are paused with the DevTools `Fetch` domain and fetched by the gateway itself through
//! the direct reader's client ([`fence`]) — the same `FETCH_ALLOW_PRIVATE`, host lists and own
//! address, the same resolver that pins the addresses it checked, so DNS rebinding has no second
//! lookup to exploit: Chromium never resolves a name. What the `Fetch` domain does not pause —
//! WebSockets, service workers (their scripts and their fetches), workers' and out-of-process
//! frames' requests, WebRTC — meets that dead network and fails: the fence fails closed. Site
//! isolation is off so frames stay in the page's process, where their requests are paused. Only
//! `http` and `https` are fetched; `file:` and every other scheme fail (`BlockedByClient`);
//! `data:` and `blob:` are the page's own bytes and are not network requests. Redirects are
//! handed to the page as they come, and the next hop is paused and checked again. Cookies a page
//! sets live in its context only; a request's `Cookie` header is not among the paused headers,
//! so pages that need their own cookies sent back may render without them.
//!
//! **Why chromiumoxide.** It is async on tokio (the gateway's runtime), typed for the whole
//! protocol (the `Fetch` domain, browser contexts), maintained, and it connects to a Chromium the
//! supervisor starts itself (its own process group, its own flags). Measured against
//! `headless_chrome` 1.0.22, the synchronous Rust client, in a scratch crate outside the
//! repository (2026-12-05, 2 shared cores, Chromium 156, release builds of both, the same loopback
//! app page — a shell whose script fetches its article as JSON —, each crate in its own idiom;
//! the book's "Reading pages" benchmarks have the method):
//!
//! | | chromiumoxide 0.9.1 | headless_chrome 1.0.22 |
//! |---|---|---|
//! | start-up to an answering DevTools session, median of 5 | 466–559 ms | 820–877 ms |
//! | browser tree's own memory, idle / 4 tabs open | 239–254 / 355–368 MB | 253–256 / 363–367 MB |
//! | memory per tab | 28–29 MB | 28 MB |
//! | page (new tab, navigate, script's text there, close), p50 of 30 | 194 ms | 1208–1275 ms |
//! | client process: own RSS, threads | 10 MB, 5 | 53 MB, 41 |
//!
//! The browser's memory is Chromium's whichever client drives it (these tabs share one context;
//! the gateway's render opens a fresh context per page, about 78 MB a tab when measured through
//! it by hand earlier). The page time and the client's weight are the client's: `headless_chrome`
//! drives the protocol from blocking calls on threads of its own (41 in the client after the run;
//! the gateway would wrap every call in `spawn_blocking`), and its
//! `new_tab` (477 ms at p50) and `close` (107 ms) wait for the target's whole attach and teardown,
//! its `wait_for_element` polls with its own sleeps; chromiumoxide's commands are awaited messages
//! on one connection task. Through the gateway a rendered read takes longer than the bare page
//! above — the fence fetches every request, the settle waits for 300 ms of quiet, the parse runs
//! in a worker: p50 1.0–1.1 s for two at once on the shared cores (the harness's row k.,
//! rendered reads).

mod fence;
mod metrics;
mod process;
mod screenshot;
mod settings;
mod supervisor;
#[cfg(test)]
mod tests;

use std::sync::Arc;
use std::time::Duration;

use chromiumoxide::cdp::browser_protocol::browser::{
    SetDownloadBehaviorBehavior, SetDownloadBehaviorParams,
};
use chromiumoxide::cdp::browser_protocol::fetch::{
    EnableParams, EventRequestPaused, RequestPattern, RequestStage,
};
use chromiumoxide::cdp::browser_protocol::page::{
    EventDomContentEventFired, EventLoadEventFired, NavigateParams,
};
use chromiumoxide::cdp::browser_protocol::target::{
    CreateBrowserContextParams, CreateTargetParams,
};
use chromiumoxide::cdp::js_protocol::runtime::EvaluateParams;
use futures::StreamExt;
use tokio::sync::Semaphore;
use tokio::time::Instant;
use url::Url;

pub use metrics::BrowserMetrics;
pub use screenshot::{Screenshot, Shot};
pub use settings::{BrowserMode, BrowserSettings, ModeOrigin};

use super::fetch::Fetcher;
use fence::Fence;
use metrics::OutcomeLabels;
use supervisor::Supervisor;

/// Quiet needed after the load before the DOM is taken: no request of the page in flight.
const QUIET: Duration = Duration::from_millis(300);
/// The longest settle without a `waitFor`.
const SETTLE: Duration = Duration::from_secs(3);
/// Bytes a page's requests may read in all: this many times `FETCH_MAX_BYTES`.
const PAGE_BUDGET_BODIES: u64 = 4;
/// The time disposing of a context may take before the browser counts as hung.
const DISPOSE_TIMEOUT: Duration = Duration::from_secs(2);

/// How one render ended: the `outcome` label of `browser_reads_total`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RenderOutcome {
    /// The DOM was taken.
    Ok,
    /// The page did not load (its document failed, or is not a page).
    Failed,
    /// The page's own address is one reads may not reach (the fence refused its document).
    Forbidden,
    /// The page took longer than its time.
    Timeout,
    /// No tab was free within the read's time.
    Busy,
    /// The browser could not be started (or is in its backoff).
    Unavailable,
    /// The browser ended during the render.
    Crashed,
    /// The DOM is larger than `FETCH_MAX_BYTES`.
    TooLarge,
}

impl RenderOutcome {
    const ALL: [Self; 8] = [
        Self::Ok,
        Self::Failed,
        Self::Forbidden,
        Self::Timeout,
        Self::Busy,
        Self::Unavailable,
        Self::Crashed,
        Self::TooLarge,
    ];

    /// The label value.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::Failed => "failed",
            Self::Forbidden => "forbidden",
            Self::Timeout => "timeout",
            Self::Busy => "busy",
            Self::Unavailable => "unavailable",
            Self::Crashed => "crashed",
            Self::TooLarge => "too_large",
        }
    }
}

/// Why the browser was started again: the `reason` label of `browser_restarts_total`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RestartReason {
    /// It exited or dropped its DevTools connection.
    Crashed,
    /// It did not answer in time.
    Hung,
    /// Its process tree outgrew `BROWSER_MEMORY_MB`.
    Memory,
}

impl RestartReason {
    const ALL: [Self; 3] = [Self::Crashed, Self::Hung, Self::Memory];

    /// The label value.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Crashed => "crashed",
            Self::Hung => "hung",
            Self::Memory => "memory",
        }
    }
}

/// What a render is asked for.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RenderOptions {
    /// Firecrawl's `waitFor`: how long to wait after the load instead of the settle.
    pub wait_for: Option<Duration>,
}

/// A page as rendered.
#[derive(Debug, Clone)]
pub(crate) struct Rendered {
    /// Where the page ended up (after redirects and script navigation).
    pub(crate) final_url: Url,
    /// The DOM as HTML.
    pub(crate) html: String,
}

/// What a render takes from the settled page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Take {
    /// The DOM as HTML.
    Dom,
    /// A PNG of the page.
    Screenshot(Shot),
}

/// What a render took.
enum Taken {
    Dom(String),
    Png(Vec<u8>),
}

/// The local browser. Cheap to clone.
#[derive(Clone)]
pub struct Browser {
    inner: Arc<Inner>,
}

struct Inner {
    /// `BROWSER=always`: every page is rendered first.
    always: bool,
    /// `BROWSER_HOSTS`: these hosts' pages are rendered first.
    hosts: super::address::HostList,
    /// `BROWSER_TIMEOUT_SECONDS`.
    timeout: Duration,
    supervisor: Supervisor,
    tabs: Semaphore,
    fetcher: Fetcher,
    max_bytes: usize,
    metrics: BrowserMetrics,
}

impl std::fmt::Debug for Browser {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Browser").finish_non_exhaustive()
    }
}

impl Browser {
    /// The browser of `settings` (`None` when off), fetching through `fetcher`; nothing is
    /// started until the first render.
    pub(crate) fn new(
        settings: &BrowserSettings,
        fetcher: Fetcher,
        max_bytes: usize,
        metrics: BrowserMetrics,
    ) -> Option<Self> {
        match (settings.mode, settings.origin, &settings.program) {
            (BrowserMode::Off, ModeOrigin::NotFound, _) => {
                tracing::info!("local browser off: BROWSER=auto and no Chromium found (BROWSER_PATH, or chromium, chromium-browser, google-chrome on PATH)");
                None
            }
            (BrowserMode::Off, _, _) | (_, _, None) => {
                tracing::info!("local browser off: BROWSER=off");
                None
            }
            (mode, _, Some(program)) => {
                tracing::info!(
                    mode = mode.as_str(),
                    program = %program.display(),
                    tabs = settings.tabs,
                    "local browser on (started at the first page it renders)"
                );
                Some(Self {
                    inner: Arc::new(Inner {
                        always: mode == BrowserMode::Always,
                        hosts: settings.hosts.clone(),
                        timeout: settings.timeout,
                        supervisor: Supervisor::new(
                            program.clone(),
                            settings.memory_bytes,
                            metrics.clone(),
                        ),
                        tabs: Semaphore::new(settings.tabs),
                        fetcher,
                        max_bytes,
                        metrics,
                    }),
                })
            }
        }
    }

    /// Whether `host`'s pages are rendered without a direct read first (`BROWSER=always`, or a
    /// host of `BROWSER_HOSTS`).
    pub(crate) fn renders_first(&self, host: &str) -> bool {
        self.inner.always || self.inner.hosts.matches(host)
    }

    /// Renders `url` within `timeout` (at most `BROWSER_TIMEOUT_SECONDS`).
    pub(crate) async fn render(
        &self,
        url: &Url,
        options: RenderOptions,
        timeout: Duration,
    ) -> Result<Rendered, RenderOutcome> {
        match self.counted(url, options, Take::Dom, timeout).await? {
            (final_url, Taken::Dom(html)) => Ok(Rendered { final_url, html }),
            (_, Taken::Png(_)) => Err(RenderOutcome::Failed),
        }
    }

    /// Renders `url` as [`Browser::render`] does (the same fence, tab lease and time) and takes
    /// a PNG of it ([`screenshot`]).
    pub(crate) async fn screenshot(
        &self,
        url: &Url,
        shot: Shot,
        options: RenderOptions,
        timeout: Duration,
    ) -> Result<Screenshot, RenderOutcome> {
        match self
            .counted(url, options, Take::Screenshot(shot), timeout)
            .await?
        {
            (final_url, Taken::Png(png)) => Ok(Screenshot { final_url, png }),
            (_, Taken::Dom(_)) => Err(RenderOutcome::Failed),
        }
    }

    /// One render, counted in `browser_reads_total` and `browser_read_seconds`.
    async fn counted(
        &self,
        url: &Url,
        options: RenderOptions,
        take: Take,
        timeout: Duration,
    ) -> Result<(Url, Taken), RenderOutcome> {
        let timeout = timeout.min(self.inner.timeout);
        let started = std::time::Instant::now();
        let deadline = Instant::now() + timeout;
        let result = self.lease_and_render(url, options, take, deadline).await;
        let outcome = match &result {
            Ok(_) => RenderOutcome::Ok,
            Err(outcome) => *outcome,
        };
        let m = &self.inner.metrics;
        m.reads.get_or_create(&OutcomeLabels { outcome }).inc();
        m.seconds.observe(started.elapsed().as_secs_f64());
        result
    }

    async fn lease_and_render(
        &self,
        url: &Url,
        options: RenderOptions,
        take: Take,
        deadline: Instant,
    ) -> Result<(Url, Taken), RenderOutcome> {
        let inner = &self.inner;
        let _tab = tokio::time::timeout_at(deadline, inner.tabs.acquire())
            .await
            .map_err(|_| RenderOutcome::Busy)?
            .map_err(|_| RenderOutcome::Busy)?;
        inner.metrics.tabs_in_use.inc();
        let _in_use = scopeguard(|| {
            inner.metrics.tabs_in_use.dec();
        });
        let instance = inner
            .supervisor
            .instance(deadline)
            .await
            .map_err(|_| RenderOutcome::Unavailable)?;
        let devtools = &instance.devtools;
        let context = tokio::time::timeout_at(
            deadline,
            devtools.create_browser_context(CreateBrowserContextParams::default()),
        )
        .await;
        let context = match context {
            Ok(Ok(context)) => context,
            Ok(Err(_)) => return Err(RenderOutcome::Crashed),
            Err(_) => {
                instance.kill_hung();
                return Err(RenderOutcome::Timeout);
            }
        };
        let fence = Fence::new(
            inner.fetcher.clone(),
            deadline.saturating_duration_since(Instant::now()),
            PAGE_BUDGET_BODIES * inner.max_bytes as u64,
        );
        let rendered = tokio::time::timeout_at(deadline, async {
            tokio::select! {
                rendered = in_context(devtools, context.clone(), url, options, take, &fence, inner.max_bytes) => rendered,
                () = instance.gone() => Err(RenderOutcome::Crashed),
            }
        })
        .await;
        if !instance.ended() {
            let disposed =
                tokio::time::timeout(DISPOSE_TIMEOUT, devtools.dispose_browser_context(context))
                    .await;
            if disposed.is_err() {
                instance.kill_hung();
            }
        }
        let result = match rendered {
            Ok(result) => result,
            Err(_) => Err(RenderOutcome::Timeout),
        };
        let result = match result {
            Err(_) if instance.ended() || !answers(&instance).await => Err(RenderOutcome::Crashed),
            other => other,
        };
        if result.is_ok() {
            inner.supervisor.healthy().await;
        }
        result
    }
}

/// Whether the browser still answers (a failed render may be its end, not the page's).
async fn answers(instance: &supervisor::Instance) -> bool {
    let answered = tokio::time::timeout(DISPOSE_TIMEOUT, instance.devtools.version()).await;
    if matches!(answered, Ok(Ok(_))) {
        return true;
    }
    let _ = tokio::time::timeout(DISPOSE_TIMEOUT, instance.gone()).await;
    false
}

/// The render inside its browser context: a tab with the fence and the viewport, the
/// navigation, the settle, then what `take` asks for.
async fn in_context(
    devtools: &chromiumoxide::Browser,
    context: chromiumoxide::cdp::browser_protocol::browser::BrowserContextId,
    url: &Url,
    options: RenderOptions,
    take: Take,
    fence: &Fence,
    max_bytes: usize,
) -> Result<(Url, Taken), RenderOutcome> {
    let failed = |_| RenderOutcome::Failed;
    devtools
        .execute(
            SetDownloadBehaviorParams::builder()
                .behavior(SetDownloadBehaviorBehavior::Deny)
                .browser_context_id(context.clone())
                .build()
                .map_err(|_| RenderOutcome::Failed)?,
        )
        .await
        .map_err(failed)?;
    let target = CreateTargetParams::builder()
        .url("about:blank")
        .browser_context_id(context)
        .build()
        .map_err(|_| RenderOutcome::Failed)?;
    let page = devtools.new_page(target).await.map_err(failed)?;
    screenshot::set_viewport(&page).await?;
    let mut paused = page
        .event_listener::<EventRequestPaused>()
        .await
        .map_err(failed)?;
    page.execute(EnableParams {
        patterns: Some(vec![RequestPattern {
            url_pattern: Some("*".to_owned()),
            resource_type: None,
            request_stage: Some(RequestStage::Request),
        }]),
        handle_auth_requests: None,
    })
    .await
    .map_err(failed)?;
    let answering = {
        let (page, fence) = (page.clone(), fence.clone());
        tokio::spawn(async move {
            while let Some(event) = paused.next().await {
                let (page, fence) = (page.clone(), fence.clone());
                tokio::spawn(async move { fence.answer(&page, &event).await });
            }
        })
    };
    let _answering = AbortOnDrop(answering);
    // Not the crate's `goto`: it waits for every frame to load, and a frame Chromium refuses to
    // start (a `file:` iframe) never does. The document parsed is enough; its load is waited
    // for at most [`SETTLE`], then the settle.
    let mut parsed = page
        .event_listener::<EventDomContentEventFired>()
        .await
        .map_err(failed)?;
    let mut loaded = page
        .event_listener::<EventLoadEventFired>()
        .await
        .map_err(failed)?;
    // The crate answers a navigation only once it counts it done (every frame loaded): the
    // page's own events decide here, the answer only tells a refused document apart.
    if let Some(frame) = page.mainframe().await.map_err(failed)? {
        fence.watch_frame(AsRef::<str>::as_ref(&frame));
    }
    let navigate = page.execute(NavigateParams::new(url.as_str()));
    tokio::pin!(navigate);
    tokio::select! {
        navigated = &mut navigate => {
            let navigated = navigated.map_err(failed)?;
            if navigated.result.error_text.is_some() {
                return Err(if fence.document() == fence::REFUSED {
                    RenderOutcome::Forbidden
                } else {
                    RenderOutcome::Failed
                });
            }
            parsed.next().await.ok_or(RenderOutcome::Crashed)?;
        }
        event = parsed.next() => {
            event.ok_or(RenderOutcome::Crashed)?;
        }
    }
    match fence.document() {
        fence::REFUSED => return Err(RenderOutcome::Forbidden),
        fence::NO_DOCUMENT | fence::FAILED => return Err(RenderOutcome::Failed),
        // The page's own status: an error page is no page, as for a direct read.
        status if status >= 400 => return Err(RenderOutcome::Failed),
        _ => {}
    }
    let _ = tokio::time::timeout(SETTLE, loaded.next()).await;
    settle(fence, options.wait_for).await;
    let taken = match take {
        Take::Dom => Taken::Dom(dom(&page, max_bytes).await?),
        Take::Screenshot(shot) => Taken::Png(screenshot::capture(&page, shot).await?),
    };
    let final_url = page
        .url()
        .await
        .ok()
        .flatten()
        .and_then(|u| Url::parse(&u).ok())
        .unwrap_or_else(|| url.clone());
    Ok((final_url, taken))
}

/// The page's DOM as HTML, at most `max_bytes`.
async fn dom(page: &chromiumoxide::Page, max_bytes: usize) -> Result<String, RenderOutcome> {
    let limit = max_bytes;
    // The raw command, not the crate's `evaluate`, which waits for its frame tracking as `goto`.
    let expression = format!(
        "(() => {{ const h = document.documentElement ? document.documentElement.outerHTML : ''; return h.length > {limit} ? null : h; }})()"
    );
    let evaluated = page
        .execute(
            EvaluateParams::builder()
                .expression(expression)
                .return_by_value(true)
                .build()
                .map_err(|_| RenderOutcome::Failed)?,
        )
        .await
        .map_err(|_| RenderOutcome::Failed)?;
    let html = match evaluated.result.result.value {
        Some(serde_json::Value::String(html)) => html,
        Some(serde_json::Value::Null) => return Err(RenderOutcome::TooLarge),
        _ => return Err(RenderOutcome::Failed),
    };
    if html.len() > max_bytes {
        return Err(RenderOutcome::TooLarge);
    }
    Ok(html)
}

/// Waits `wait_for`, or until the page's requests have been quiet for [`QUIET`] (at most
/// [`SETTLE`]).
async fn settle(fence: &Fence, wait_for: Option<Duration>) {
    if let Some(wait) = wait_for {
        tokio::time::sleep(wait).await;
        return;
    }
    let until = Instant::now() + SETTLE;
    let mut quiet_since = Instant::now();
    while Instant::now() < until {
        tokio::time::sleep(Duration::from_millis(50)).await;
        if fence.in_flight() > 0 {
            quiet_since = Instant::now();
        } else if quiet_since.elapsed() >= QUIET {
            return;
        }
    }
}

/// A task aborted when this is dropped.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Runs `f` when dropped.
fn scopeguard<F: FnOnce()>(f: F) -> impl Drop {
    struct Guard<F: FnOnce()>(Option<F>);
    impl<F: FnOnce()> Drop for Guard<F> {
        fn drop(&mut self) {
            if let Some(f) = self.0.take() {
                f();
            }
        }
    }
    Guard(Some(f))
}
