// The operator's page: reads /ui/api/overview every few seconds and draws it; the actions go to the
// admin routes. Every value from the gateway goes into the page as text (textContent, never as
// markup). The API key and the admin token live in this tab's session storage only and leave it
// only as Authorization headers, never in a URL.
"use strict";

(function () {
  const REFRESH_MS = 3000;
  const KEY_STORE = "searxng-gateway.api-key";
  const ADMIN_STORE = "searxng-gateway.admin-token";
  const OVERVIEW = "/ui/api/overview";
  // Outcome label, legend, light colour, dark colour.
  const OUTCOMES = [
    ["cache_hit", "cache hit", "#1f6feb", "#4c9aff"],
    ["searxng_ok", "SearXNG", "#1a7f37", "#3fb950"],
    ["premium_ok", "premium", "#8250df", "#a371f7"],
    ["searxng_plus_premium_ok", "SearXNG + premium", "#0f8a8a", "#39c5cf"],
    ["fallback_fail", "all failed", "#cf222e", "#f85149"],
  ];
  const SHED = ["shed", "shed (503)", "#6e7781", "#8b949e"];

  const $ = (id) => document.getElementById(id);
  const dark = window.matchMedia("(prefers-color-scheme: dark)");

  let timer = null;
  let charts = null;
  let last = null;
  let adminAvailable = false;

  // ---- small helpers -------------------------------------------------------------------------

  // An element with text or element children; attributes by name (never `style`, never markup).
  function el(tag, attributes, ...children) {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(attributes || {})) {
      if (value !== null && value !== undefined && value !== false) {
        node.setAttribute(name, value === true ? "" : String(value));
      }
    }
    for (const child of children) {
      if (child === null || child === undefined) continue;
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }

  function badge(state, text) {
    return el("span", { class: "state " + state }, text || state.replace("_", "-"));
  }

  function meter(value, max) {
    if (!(max > 0)) return el("span", { class: "muted" }, "unlimited");
    const m = el("meter", { min: 0, max: max, low: max * 0.7, high: max * 0.9, optimum: 0 });
    m.value = Math.min(value, max);
    m.title = Math.round((100 * value) / max) + " %";
    return m;
  }

  function seconds(s) {
    if (s === null || s === undefined) return "—";
    if (s < 0.01) return (Math.round(s * 100000) / 100) + " ms";
    if (s < 1) return Math.round(s * 1000) + " ms";
    if (s < 120) return (Math.round(s * 10) / 10) + " s";
    if (s < 7200) return Math.round(s / 60) + " min";
    return (Math.round(s / 360) / 10) + " h";
  }

  function millis(ms) {
    if (ms === null || ms === undefined) return "—";
    return ms < 1000 ? (Math.round(ms * 10) / 10) + " ms" : seconds(ms / 1000);
  }

  function usd(amount) {
    return "$" + (amount < 1 ? amount.toFixed(4) : amount.toFixed(2));
  }

  function bytes(n) {
    if (n < 1024) return n + " B";
    if (n < 1024 * 1024) return (n / 1024).toFixed(1) + " KiB";
    return (n / 1024 / 1024).toFixed(1) + " MiB";
  }

  function clockTime(secondsAgo) {
    return new Date(Date.now() - secondsAgo * 1000).toLocaleTimeString();
  }

  function fill(tbody, rows, columns, emptyText) {
    tbody.replaceChildren(...rows);
    if (rows.length === 0) {
      tbody.append(el("tr", {}, el("td", { colspan: columns, class: "empty" }, emptyText)));
    }
  }

  function cell(content, attributes) {
    return el("td", attributes || {}, content);
  }

  // ---- messages ------------------------------------------------------------------------------

  function showMessage(text) {
    const m = $("message");
    m.textContent = text;
    m.hidden = false;
  }

  function clearMessage() {
    $("message").hidden = true;
    $("message").textContent = "";
  }

  function notice(text) {
    const n = $("notice");
    n.textContent = text;
    n.hidden = !text;
  }

  async function errorText(response) {
    try {
      const body = await response.json();
      if (body && typeof body.message === "string") return body.message;
    } catch (_) {
      // not JSON: the status says enough
    }
    return "HTTP " + response.status;
  }

  // ---- requests ------------------------------------------------------------------------------

  function headers(token) {
    const h = { Accept: "application/json" };
    if (token) h.Authorization = "Bearer " + token;
    return h;
  }

  // The page's JSON shows an API key its own client's searches and usage, the admin token every
  // client's: reads go with the admin token when one is kept, and with the key when it is refused.
  async function apiGet(path) {
    const get = (token) => fetch(path, { headers: headers(token), cache: "no-store", credentials: "omit" });
    const adminToken = sessionStorage.getItem(ADMIN_STORE);
    const key = sessionStorage.getItem(KEY_STORE);
    if (adminToken) {
      const response = await get(adminToken);
      if (response.status !== 401 || !key) return response;
    }
    return get(key);
  }

  async function refusalText(response) {
    const why = await errorText(response);
    if (response.status === 401) {
      return sessionStorage.getItem(KEY_STORE)
        ? "The gateway refused the API key: " + why + ". Type a key from its API_KEYS_FILE above."
        : "This gateway requires an API key (API_KEYS_FILE is set): type one above. (" + why + ")";
    }
    if (response.status === 429) {
      return "Rate limited for this key: " + why + ". The page keeps trying.";
    }
    return "The gateway answered " + response.status + ": " + why;
  }

  async function refresh() {
    clearTimeout(timer);
    try {
      const response = await apiGet(OVERVIEW);
      if (response.ok) {
        const overview = await response.json();
        clearMessage();
        render(overview);
        $("refreshed").textContent = "Updated " + new Date().toLocaleTimeString() +
          " · every " + REFRESH_MS / 1000 + " s";
      } else {
        showMessage(await refusalText(response));
        $("refreshed").textContent = "Not updated: see the message below.";
      }
    } catch (err) {
      showMessage("Cannot reach the gateway (" + err.message + "). The page keeps trying.");
    } finally {
      timer = setTimeout(refresh, REFRESH_MS);
    }
  }

  // ---- the panels ----------------------------------------------------------------------------

  function render(overview) {
    last = overview;
    adminAvailable = overview.admin === true;
    const adminToken = sessionStorage.getItem(ADMIN_STORE);
    document.body.classList.toggle("admin", adminAvailable && !!adminToken);
    if (adminToken && !adminAvailable) {
      notice("This gateway has no ADMIN_TOKEN: its admin routes, and so the actions, are off.");
    }
    const status = overview.status;
    renderTraffic(overview.traffic);
    renderBreakers(status.breakers);
    renderInstances(status.searxng);
    renderCache(status.cache, overview.traffic);
    renderRedis(status.redis);
    renderPremium(status, overview.clients);
    renderSearches(overview.searches, overview.queries_shown);
    renderCrawls(overview.crawls || []);
    renderScope(overview.scope, overview.client);
  }

  function renderCrawls(crawls) {
    const rows = crawls.map((job) => {
      const state = job.status === "scraping" ? "half_open"
        : job.status === "completed" ? "ok" : "bad";
      const cancel = el("button", { type: "button", class: "small danger" }, "Cancel");
      cancel.disabled = job.status !== "scraping";
      cancel.addEventListener("click", () => crawlCancel(job));
      return el("tr", { "data-crawl": job.id },
        cell(el("span", { title: job.id }, new Date(job.created_at * 1000).toLocaleTimeString())),
        cell(job.owner),
        cell(job.kind),
        cell(badge(state, job.status)),
        cell(job.completed + " of " + job.total),
        cell(job.failed),
        cell(job.pages_per_minute),
        cell(job.shared ? "fleet" : "this replica"),
        cell(cancel, { class: "admin-only" }));
    });
    fill($("crawl-table").tBodies[0], rows, 9, "No crawl.");
  }

  function crawlCancel(job) {
    adminPost("/admin/crawls/" + encodeURIComponent(job.id) + "/cancel",
      "Cancel " + job.owner + "'s " + job.kind + " " + job.id + "? What it read is kept.",
      (body) => "The " + job.kind + " is " + body.status + ".");
  }

  // With a client's key, only that client's own searches and usage are listed.
  function renderScope(scope, client) {
    const own = scope === "client";
    $("scope").hidden = !own;
    $("scope").textContent = own
      ? "Only " + client + "'s own searches and premium usage are listed for this API key; " +
        "the admin token lists every client's."
      : "";
  }

  function renderTraffic(traffic) {
    if (!traffic) return;
    const latency = traffic.latency;
    const ratio = traffic.cache_hit_ratio;
    $("traffic-summary").replaceChildren(
      el("strong", { id: "answered" }, traffic.answered), " answered, ",
      el("strong", { id: "shed" }, traffic.shed), " shed · cache hit ratio ",
      el("strong", { id: "hit-ratio" }, ratio === null ? "—" : Math.round(ratio * 1000) / 10 + " %"),
      " · latency p50 ", el("strong", { id: "p50" }, seconds(latency.p50_seconds)),
      ", p95 ", el("strong", { id: "p95" }, seconds(latency.p95_seconds)),
    );
    drawCharts(traffic);
  }

  const STATE_ORDER = { open: 0, half_open: 1, closed: 2 };

  function renderBreakers(breakers) {
    const showClosed = $("show-closed").checked;
    const open = breakers.filter((b) => b.state === "open").length;
    const probing = breakers.filter((b) => b.state === "half_open").length;
    $("breaker-summary").textContent =
      breakers.length + " breakers: " + open + " open, " + probing + " half-open";
    const shown = breakers
      .filter((b) => showClosed || b.state !== "closed")
      .sort((a, b) =>
        STATE_ORDER[a.state] - STATE_ORDER[b.state] ||
        a.namespace.localeCompare(b.namespace) ||
        a.name.localeCompare(b.name) ||
        (a.instance || "").localeCompare(b.instance || ""));
    const rows = shown.map((b) => {
      const action = b.state === "closed"
        ? el("button", { type: "button", class: "small danger", "data-action": "open" }, "Open")
        : el("button", { type: "button", class: "small", "data-action": "close" }, "Close");
      action.addEventListener("click", () => breakerAction(b, action.dataset.action));
      return el("tr", { "data-breaker": b.namespace + "/" + b.name, "data-instance": b.instance || "" },
        cell(b.namespace),
        cell(b.name),
        cell(b.instance || ""),
        cell(badge(b.state), { class: "state-cell" }),
        cell(b.reason || "—", { class: "reason" }),
        cell(b.state === "closed" ? "—" : seconds(b.open_for_seconds)),
        cell(b.trips),
        cell(action, { class: "admin-only" }));
    });
    fill($("breaker-table").tBodies[0], rows, 8,
      showClosed ? "No breakers yet." : "No breaker is open.");
  }

  function renderInstances(searxng) {
    const rows = searxng.instances.map((i) => {
      const cooldown = i.cooldown.state === "open"
        ? "probe in " + seconds(i.cooldown.open_for_seconds)
        : i.cooldown.consecutive_failures + " failures in a row";
      const engines = i.excluded_engines.length
        ? i.engines_known + " known, excluded: " + i.excluded_engines.join(", ")
        : i.engines_known + " known";
      return el("tr", { "data-instance": i.name },
        cell(el("span", { title: i.url }, i.name)),
        cell(badge(i.state === "closed" ? "up" : i.state === "open" ? "down" : "half_open",
          i.state === "closed" ? "up" : i.state === "open" ? "cooling down" : "probing")),
        cell(seconds(i.latency_seconds)),
        cell(i.in_flight),
        cell(cooldown + " · " + i.cooldown.trips + " trips"),
        cell(engines, { class: "query" }));
    });
    fill($("instance-table").tBodies[0], rows, 6, "No SearXNG instance.");
  }

  function renderCache(cache, traffic) {
    const facts = $("cache-facts");
    const ratio = traffic && traffic.cache_hit_ratio;
    facts.replaceChildren(
      el("dt", {}, "entries"),
      el("dd", {}, el("span", { id: "cache-entries" }, cache.size + " of " + cache.capacity), " ",
        meter(cache.size, cache.capacity)),
      el("dt", {}, "bytes"), el("dd", { id: "cache-bytes" }, bytes(cache.bytes)),
      el("dt", {}, "hit ratio"),
      el("dd", {}, ratio === null || ratio === undefined ? "— (no search in 15 min)"
        : Math.round(ratio * 1000) / 10 + " % of the searches in the last 15 min"));
  }

  function renderRedis(redis) {
    const p = $("redis-state");
    if (!redis) {
      p.replaceChildren(badge("closed", "off"), " REDIS_URL is not set: this replica shares nothing.");
    } else if (redis.connected) {
      p.replaceChildren(badge("up", "connected"), " ", redis.url);
    } else {
      p.replaceChildren(badge("down", "unreachable"), " ", redis.url,
        " — local tiers only until it answers again.");
    }
  }

  function renderPremium(status, clients) {
    const spend = status.premium_spend;
    const cap = spend.usd_per_day_cap;
    $("spend-total").replaceChildren(el("span", {},
      el("strong", {}, usd(spend.usd_last_24h)),
      cap ? " of the " + usd(cap) + " daily cap (PREMIUM_USD_PER_DAY)" : " spent (no daily cap)"),
      cap ? meter(spend.usd_last_24h, cap) : "",
      spend.capped ? badge("open", "capped: SearXNG and cache only") : "");
    const providers = status.providers.map((p) => {
      const windows = p.quota_windows.map((w) =>
        (w.remaining === null ? "?" : w.remaining) + "/" + (w.limit === null ? "?" : w.limit) +
        " (" + w.window + ")");
      const quota = p.quota_parked_for_seconds !== null
        ? "parked " + seconds(p.quota_parked_for_seconds)
        : windows.join(", ") || "—";
      return el("tr", { "data-provider": p.name },
        cell(p.name),
        cell(p.active ? badge("up", "active") : badge("closed", "no key")),
        cell(p.calls_last_24h),
        cell(usd(p.usd_last_24h)),
        cell(cap ? meter(p.usd_last_24h, cap) : el("span", { class: "muted" }, "no cap")),
        cell(usd(p.usd_per_1000_calls)),
        cell(quota));
    });
    fill($("provider-table").tBodies[0], providers, 7, "No premium provider configured.");
    const rows = clients.map((c) => el("tr", { "data-client": c.client },
      cell(c.parent ? c.client + " (via " + c.parent + ")" : c.client),
      cell(c.premium_calls_last_24h),
      cell(meter(c.premium_calls_last_24h, c.premium_calls_per_day)),
      cell(usd(c.premium_spend_usd_last_24h)),
      cell(meter(c.premium_spend_usd_last_24h, c.usd_per_day)),
      cell(c.premium_allowed ? badge("ok", "allowed") : badge("bad", "budget spent"))));
    fill($("client-table").tBodies[0], rows, 6, "No client.");
  }

  function renderSearches(searches, queriesShown) {
    const rows = searches.map((s) => {
      const query = s.query === null
        ? el("span", { class: "muted" }, queriesShown ? "—" : "hidden (UI_SHOW_QUERIES=false)")
        : s.query;
      const outcome = s.outcome === "fallback_fail" || s.outcome === "shed" ? "bad"
        : s.outcome === "cache_hit" ? "closed" : "ok";
      const row = el("tr", { class: "clickable", tabindex: 0, "data-request-id": s.request_id },
        cell(el("span", { title: s.age_seconds + " s ago" }, clockTime(s.age_seconds))),
        cell(s.client),
        cell(query, { class: "query" }),
        cell(badge(outcome, s.outcome)),
        cell(millis(s.latency_ms)),
        cell(s.premium_calls));
      row.addEventListener("click", () => openExplain(s.request_id));
      row.addEventListener("keydown", (event) => {
        if (event.key === "Enter") openExplain(s.request_id);
      });
      return row;
    });
    fill($("search-table").tBodies[0], rows, 6, "No search yet.");
  }

  // ---- the explain record --------------------------------------------------------------------

  async function openExplain(requestId) {
    let response;
    try {
      response = await apiGet("/ui/api/searches/" + encodeURIComponent(requestId));
    } catch (err) {
      showMessage("Cannot reach the gateway (" + err.message + ").");
      return;
    }
    if (!response.ok) {
      notice(response.status === 404
        ? "That search has left the last 50; its record is gone."
        : await refusalText(response));
      return;
    }
    const found = await response.json();
    const s = found.search;
    $("explain-title").textContent = s.query === null ? "Search " + s.request_id : s.query;
    $("explain-facts").replaceChildren(
      el("dt", {}, "request ID"), el("dd", {}, s.request_id),
      el("dt", {}, "client"), el("dd", {}, s.client + " via " + s.surface),
      el("dt", {}, "outcome"), el("dd", {}, s.outcome + (s.cache ? " (cache " + s.cache + ")" : "") +
        ", HTTP " + s.status),
      el("dt", {}, "latency"), el("dd", {}, millis(s.latency_ms)),
      el("dt", {}, "results"), el("dd", {}, s.results),
      el("dt", {}, "premium"), el("dd", {}, s.premium_calls + " calls, " + usd(s.premium_usd)));
    $("explain-body").textContent = found.gateway === null
      ? "This search got no answer (shed): there is no fan-out record."
      : JSON.stringify(found.gateway, null, 2);
    $("explain-dialog").showModal();
  }

  // ---- actions -------------------------------------------------------------------------------

  function confirmAction(text) {
    const dialog = $("confirm-dialog");
    $("confirm-text").textContent = text;
    return new Promise((resolve) => {
      const done = (answer) => {
        $("confirm-ok").removeEventListener("click", yes);
        $("confirm-cancel").removeEventListener("click", no);
        dialog.removeEventListener("cancel", no);
        dialog.close();
        resolve(answer);
      };
      const yes = () => done(true);
      const no = () => done(false);
      $("confirm-ok").addEventListener("click", yes);
      $("confirm-cancel").addEventListener("click", no);
      dialog.addEventListener("cancel", no);
      dialog.showModal();
    });
  }

  async function adminPost(path, question, done) {
    const token = sessionStorage.getItem(ADMIN_STORE);
    if (!token) {
      notice("Type the admin token first.");
      return;
    }
    if (!(await confirmAction(question))) return;
    let response;
    try {
      response = await fetch(path, {
        method: "POST",
        headers: headers(token),
        cache: "no-store",
        credentials: "omit",
      });
    } catch (err) {
      showMessage("Cannot reach the gateway (" + err.message + ").");
      return;
    }
    if (response.ok) {
      notice(done(await response.json()));
      refresh();
    } else if (response.status === 401) {
      notice("The gateway refused the admin token: " + (await errorText(response)) + ".");
    } else {
      notice("Not done: " + (await errorText(response)) + " (HTTP " + response.status + ").");
    }
  }

  function breakerAction(breaker, action) {
    const path = "/admin/breakers/" + encodeURIComponent(breaker.namespace) + "/" +
      encodeURIComponent(breaker.name) + "/" + action;
    const label = breaker.namespace + " " + breaker.name;
    if (action === "open") {
      const secondsOpen = Number($("open-seconds").value);
      if (!Number.isInteger(secondsOpen) || secondsOpen < 1 || secondsOpen > 86400) {
        notice("The open period must be a whole number of seconds from 1 to 86400.");
        return;
      }
      adminPost(path + "?seconds=" + secondsOpen,
        "Open the " + label + " breaker for " + secondsOpen + " s? Nothing is sent to it meanwhile.",
        () => "Opened the " + label + " breaker for " + secondsOpen + " s.");
    } else {
      adminPost(path, "Close the " + label + " breaker now?",
        () => "Closed the " + label + " breaker.");
    }
  }

  function purgeAll() {
    adminPost("/admin/cache/purge", "Purge every cached answer and page?",
      (body) => "Purged " + body.purged + " cached entries.");
  }

  function purgeQuery(event) {
    event.preventDefault();
    const query = $("purge-query").value.trim();
    if (!query) {
      notice("Type the query to purge.");
      return;
    }
    adminPost("/admin/cache/purge?q=" + encodeURIComponent(query),
      "Purge the cached answers of “" + query + "” (every page, category and language)?",
      (body) => "Purged " + body.purged + " cached answers of “" + query + "”.");
  }

  // ---- charts (uPlot) ------------------------------------------------------------------------

  function palette() {
    const css = getComputedStyle(document.documentElement);
    return {
      fg: css.getPropertyValue("--muted").trim() || "#5f6b7a",
      line: css.getPropertyValue("--line").trim() || "#dde2e8",
      dark: dark.matches,
    };
  }

  function axes(colours, unit) {
    const y = {
      stroke: colours.fg, size: 64, grid: { stroke: colours.line, width: 1 }, ticks: { stroke: colours.line },
    };
    if (unit) y.values = (u, ticks) => ticks.map((t) => t + unit);
    return [{ stroke: colours.fg, grid: { stroke: colours.line, width: 1 }, ticks: { stroke: colours.line } }, y];
  }

  function makeCharts() {
    if (typeof uPlot !== "function") return null;
    const colours = palette();
    const colour = (entry) => (colours.dark ? entry[3] : entry[2]);
    const width = (id) => Math.max(280, $(id).clientWidth);
    const rps = new uPlot({
      width: width("rps-chart"),
      height: 220,
      scales: { x: { time: true }, y: { range: (u, min, max) => [0, Math.max(1, max)] } },
      axes: axes(colours, "/s"),
      cursor: { points: { show: false } },
      series: [{}].concat(OUTCOMES.concat([SHED]).map((o) => ({
        label: o[1], stroke: colour(o), width: 1.5, points: { show: false },
      }))),
    }, [[]].concat(OUTCOMES.map(() => [])).concat([[]]), $("rps-chart"));
    const latency = new uPlot({
      width: width("latency-chart"),
      height: 160,
      scales: { x: { time: true }, y: { range: (u, min, max) => [0, Math.max(1, max)] } },
      axes: axes(colours, " ms"),
      cursor: { points: { show: false } },
      series: [{},
        { label: "p50", stroke: colours.dark ? "#4c9aff" : "#1f6feb", width: 1.5, spanGaps: false },
        { label: "p95", stroke: colours.dark ? "#d29922" : "#9a6700", width: 1.5, spanGaps: false }],
    }, [[], [], []], $("latency-chart"));
    return { rps, latency };
  }

  function drawCharts(traffic) {
    if (!charts) charts = makeCharts();
    if (!charts) return;
    const n = traffic.window_seconds;
    const now = Math.floor(Date.now() / 1000);
    const xs = Array.from({ length: n }, (_, i) => now - (n - 1 - i));
    const byOutcome = new Map(traffic.outcomes.map((o) => [o.outcome, o.per_second]));
    charts.rps.setData([xs]
      .concat(OUTCOMES.map((o) => byOutcome.get(o[0]) || xs.map(() => 0)))
      .concat([traffic.shed_per_second]));
    const step = traffic.latency_step_seconds;
    const steps = traffic.latency_series.map((_, j) => now - (n - 1 - (j * step + step - 1)));
    const ms = (s) => (s === null ? null : Math.round(s * 100000) / 100);
    charts.latency.setData([steps,
      traffic.latency_series.map((q) => ms(q.p50_seconds)),
      traffic.latency_series.map((q) => ms(q.p95_seconds))]);
  }

  function resizeCharts() {
    if (!charts) return;
    charts.rps.setSize({ width: Math.max(280, $("rps-chart").clientWidth), height: 220 });
    charts.latency.setSize({ width: Math.max(280, $("latency-chart").clientWidth), height: 160 });
  }

  function rebuildCharts() {
    if (charts) {
      charts.rps.destroy();
      charts.latency.destroy();
      charts = null;
    }
    if (last && last.traffic) drawCharts(last.traffic);
  }

  // ---- start ---------------------------------------------------------------------------------

  function credential(formId, inputId, forgetId, store, what) {
    $(formId).addEventListener("submit", (event) => {
      event.preventDefault();
      const value = $(inputId).value.trim();
      $(inputId).value = "";
      if (value) {
        sessionStorage.setItem(store, value);
        notice(what + " kept for this tab.");
      }
      refresh();
    });
    $(forgetId).addEventListener("click", () => {
      sessionStorage.removeItem(store);
      notice(what + " forgotten.");
      refresh();
    });
  }

  function start() {
    credential("key-form", "key-input", "key-forget", KEY_STORE, "API key");
    credential("admin-form", "admin-input", "admin-forget", ADMIN_STORE, "Admin token");
    $("show-closed").addEventListener("change", () => last && renderBreakers(last.status.breakers));
    $("purge-all").addEventListener("click", purgeAll);
    $("purge-query-form").addEventListener("submit", purgeQuery);
    $("explain-close").addEventListener("click", () => $("explain-dialog").close());
    dark.addEventListener("change", rebuildCharts);
    if (typeof ResizeObserver === "function") {
      new ResizeObserver(resizeCharts).observe($("traffic"));
    }
    refresh();
  }

  start();
})();
