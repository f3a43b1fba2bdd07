#!/usr/bin/env bash
# Checks the operator pack: Prometheus rules, their unit tests and the scrape config (promtool), every YAML
# and JSON file of the pack, the bind mounts of docker-compose.yml, and the Grafana dashboard (every panel on
# the `datasource` variable, every query valid PromQL and naming only metrics the gateway crate registers), and
# the Dockerfile's builder stage run without Docker (scripts/dockerfile-as-script.sh).
#
# Usage: scripts/check-operator-pack.sh        (from anywhere; PROMTOOL=/path/to/promtool to override)
# Needs promtool (Debian package `prometheus`) and python3 with PyYAML, installed when missing, and cargo.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

PROMTOOL="${PROMTOOL:-promtool}"
PYTHON="${PYTHON:-python3}"

step() { printf '\n== %s\n' "$*"; }

install_promtool() {
    if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
        echo "promtool not found: installing the Debian package prometheus"
        # Only promtool is wanted: keep the package's postinst from starting a Prometheus server.
        local own_policy=""
        if [ ! -e /usr/sbin/policy-rc.d ]; then
            printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d
            chmod +x /usr/sbin/policy-rc.d
            own_policy=1
        fi
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus >/dev/null
        if [ -n "$own_policy" ]; then rm -f /usr/sbin/policy-rc.d; fi
    fi
    command -v "$PROMTOOL" >/dev/null 2>&1 || {
        echo "error: promtool not found; install the prometheus package or set PROMTOOL" >&2
        exit 1
    }
}

install_pyyaml() {
    echo "PyYAML not found: installing it with pip"
    "$PYTHON" -m pip install --quiet pyyaml 2>/dev/null \
        || "$PYTHON" -m pip install --quiet --break-system-packages pyyaml 2>/dev/null \
        || { command -v apt-get >/dev/null 2>&1 && apt-get install -y -qq python3-yaml >/dev/null; } \
        || true
    "$PYTHON" -c 'import yaml' 2>/dev/null || {
        echo "error: python3 cannot import yaml (pip install pyyaml)" >&2
        exit 1
    }
}

command -v "$PROMTOOL" >/dev/null 2>&1 || install_promtool
command -v "$PYTHON" >/dev/null 2>&1 || { echo "error: python3 not found" >&2; exit 1; }
"$PYTHON" -c 'import yaml' 2>/dev/null || install_pyyaml

step "promtool check rules examples/prometheus/alerts.yml"
"$PROMTOOL" check rules examples/prometheus/alerts.yml

step "promtool test rules examples/prometheus/alerts_test.yml"
"$PROMTOOL" test rules examples/prometheus/alerts_test.yml

step "promtool check config examples/prometheus/prometheus.yml"
"$PROMTOOL" check config examples/prometheus/prometheus.yml

step "YAML, JSON, compose mounts, dashboard and alert conventions"
workdir="$(mktemp -d)"
trap 'rm -rf "$workdir"' EXIT
PROMTOOL="$PROMTOOL" WORKDIR="$workdir" "$PYTHON" - <<'PY'
import glob
import json
import os
import re
import subprocess
import sys

import yaml

errors = []
checked = []


def fail(msg):
    errors.append(msg)


def ok(msg):
    checked.append(msg)
    print(f"ok: {msg}")


def load_yaml(path):
    with open(path, encoding="utf-8") as f:
        return yaml.safe_load(f)


# --- every YAML and JSON file parses ----------------------------------------------------------------------
yaml_files = ["docker-compose.yml"] + sorted(
    glob.glob("examples/**/*.yml", recursive=True) + glob.glob("examples/**/*.yaml", recursive=True)
)
docs = {}
for path in yaml_files:
    try:
        docs[path] = load_yaml(path)
        ok(f"{path} parses as YAML")
    except Exception as e:  # noqa: BLE001 - report every parse error
        fail(f"{path}: not valid YAML: {e}")

json_files = sorted(glob.glob("examples/**/*.json", recursive=True))
jdocs = {}
for path in json_files:
    try:
        with open(path, encoding="utf-8") as f:
            jdocs[path] = json.load(f)
        ok(f"{path} parses as JSON")
    except Exception as e:  # noqa: BLE001
        fail(f"{path}: not valid JSON: {e}")

# --- docker-compose.yml -----------------------------------------------------------------------------------
compose = docs.get("docker-compose.yml") or {}
with open("docker-compose.yml", encoding="utf-8") as f:
    compose_text = f.read()

# Compose interpolation: every `$` must be `$$`, `$NAME` or `${...}`; anything else is rejected by compose.
for lineno, line in enumerate(compose_text.splitlines(), 1):
    if line.lstrip().startswith("#"):
        continue
    for m in re.finditer(r"\$(?!\$|\{[A-Za-z_][A-Za-z0-9_]*(?:(?::?[-?+])[^}]*)?\}|[A-Za-z_])", line):
        if m.start() > 0 and line[m.start() - 1] == "$":
            continue
        fail(f"docker-compose.yml:{lineno}: invalid interpolation at column {m.start() + 1}: {line.strip()}")

container_mounts = {}  # container path -> host path, for the Grafana provisioning cross-check
services = compose.get("services") or {}
if not services:
    fail("docker-compose.yml: no services")
for name, svc in services.items():
    build = svc.get("build")
    if build is not None:
        ctx = build if isinstance(build, str) else build.get("context", ".")
        dockerfile = "Dockerfile" if isinstance(build, str) else build.get("dockerfile", "Dockerfile")
        if not os.path.isdir(ctx):
            fail(f"docker-compose.yml: service {name}: build context {ctx} does not exist")
        elif not os.path.isfile(os.path.join(ctx, dockerfile)):
            fail(f"docker-compose.yml: service {name}: {os.path.join(ctx, dockerfile)} does not exist")
        else:
            ok(f"compose service {name}: build context and {dockerfile} exist")
    image = svc.get("image", "")
    if build is None and (":" not in image or image.endswith(":latest")):
        fail(f"docker-compose.yml: service {name}: image {image!r} is not pinned to a tag")
    for vol in svc.get("volumes") or []:
        if isinstance(vol, str):
            parts = vol.split(":")
            host, target = parts[0], parts[1] if len(parts) > 1 else ""
            is_bind = host.startswith((".", "/", "~"))
        else:
            host, target = vol.get("source", ""), vol.get("target", "")
            is_bind = vol.get("type") == "bind"
        if not is_bind:
            # A named volume must be declared at the top level, or compose refuses the file.
            if host and host not in (compose.get("volumes") or {}):
                fail(f"docker-compose.yml: service {name}: volume {host} is not declared under volumes:")
            continue
        container_mounts[target] = host
        if os.path.exists(os.path.expanduser(host)):
            ok(f"compose service {name}: bind mount {host} exists")
        else:
            fail(f"docker-compose.yml: service {name}: bind-mounted host path {host} does not exist")

# Every published port is on loopback unless the operator says otherwise: the gateway without API keys
# lets anyone who reaches it spend the premium quota, so it is published on every interface only on
# purpose (GATEWAY_PUBLISH_ADDR=0.0.0.0, after API_KEYS_FILE).
for name, svc in services.items():
    for port in svc.get("ports") or []:
        spec = port if isinstance(port, str) else str(port.get("host_ip", "")) + ":" + str(port.get("published", ""))
        if spec.startswith("127.0.0.1:") or spec.startswith("${GATEWAY_PUBLISH_ADDR:-127.0.0.1}:"):
            ok(f"compose service {name}: port {spec} published on loopback by default")
        else:
            fail(f"docker-compose.yml: service {name}: port {spec!r} is published beyond loopback by default")

# --- metric names registered in the gateway crate (each module's metrics.rs — `register`, `registered`, or
# the engine's `register_families!` rows `"name", "help" => family;` —, and a collector's
# `encode_descriptor` such as metrics/log_drops.rs; prometheus-client adds `_total` to counters)
registered = set()
for metrics_file in [f for crate in ("core", "upstreams", "engine", "http", "gateway") for f in glob.glob(f"crates/{crate}/src/**/*.rs", recursive=True)]:
    with open(metrics_file, encoding="utf-8") as f:
        text = f.read()
        registered |= set(re.findall(r'\.(?:register|registered|encode_descriptor)\(\s*"([a-z][a-z0-9_]*)"', text))
        registered |= set(re.findall(r'"([a-z][a-z0-9_]*)",\s*"(?:[^"\\]|\\.)*"\s*=>', text))
if len(registered) < 20:
    fail(f"the product crates: found only {len(registered)} registered metric names")
PREFIX = "searxng_gateway_"


def unknown_metrics(expr):
    bad = []
    for name in set(re.findall(r"\b(" + PREFIX + r"[a-zA-Z0-9_]+)", expr)):
        base = name[len(PREFIX):]
        candidates = {base}
        for suffix in ("_bucket", "_sum", "_count", "_total"):
            if base.endswith(suffix):
                candidates.add(base[: -len(suffix)])
        if not candidates & registered:
            bad.append(name)
    return sorted(bad)


# --- the Grafana dashboard --------------------------------------------------------------------------------
DASHBOARD = "examples/grafana/searxng-gateway-dashboard.json"
DS_REFS = ("${datasource}", "$datasource")
record_rules = []
dash = jdocs.get(DASHBOARD)
if dash is None:
    fail(f"{DASHBOARD}: missing or unparsable")
else:
    variables = (dash.get("templating") or {}).get("list") or []
    if not any(v.get("name") == "datasource" and v.get("type") == "datasource" and v.get("query") == "prometheus"
               for v in variables):
        fail(f"{DASHBOARD}: no `datasource` template variable of type datasource/prometheus")
    else:
        ok("dashboard has the `datasource` template variable (prometheus)")

    def walk(panels):
        for p in panels:
            yield p
            yield from walk(p.get("panels") or [])

    ids = set()
    data_panels = 0
    for p in walk(dash.get("panels") or []):
        title = p.get("title", "?")
        pid = p.get("id")
        if pid in ids:
            fail(f"dashboard: panel id {pid} used twice")
        ids.add(pid)
        if "gridPos" not in p:
            fail(f"dashboard: panel {title!r} has no gridPos")
        if p.get("type") == "row":
            # Rows only group panels: they carry no query.
            continue
        data_panels += 1
        ds = p.get("datasource") or {}
        if not isinstance(ds, dict) or ds.get("uid") not in DS_REFS or ds.get("type") != "prometheus":
            fail(f"dashboard: panel {title!r} does not use the datasource variable (datasource={ds!r})")
        targets = p.get("targets") or []
        if not targets:
            fail(f"dashboard: panel {title!r} has no target")
        refids = set()
        for t in targets:
            ref = t.get("refId")
            expr = (t.get("expr") or "").strip()
            if not ref:
                fail(f"dashboard: panel {title!r}: a target has no refId")
            elif ref in refids:
                fail(f"dashboard: panel {title!r}: refId {ref} used twice")
            refids.add(ref)
            tds = t.get("datasource")
            if tds is not None and (not isinstance(tds, dict) or tds.get("uid") not in DS_REFS):
                fail(f"dashboard: panel {title!r} target {ref}: datasource {tds!r} is not the variable")
            if not expr:
                fail(f"dashboard: panel {title!r} target {ref}: no expr")
                continue
            macros = set(re.findall(r"\$\{?[A-Za-z_][A-Za-z0-9_]*", expr)) - {"$__rate_interval"}
            if macros:
                fail(f"dashboard: panel {title!r} target {ref}: Grafana variables {sorted(macros)} in expr")
            bad = unknown_metrics(expr)
            if bad:
                fail(f"dashboard: panel {title!r} target {ref}: metrics not registered in the product crates: {bad}")
            record_rules.append({"record": f"dashboard:panel_{pid}:{ref}",
                                 "expr": expr.replace("$__rate_interval", "5m")})
    ok(f"dashboard: {data_panels} data panels, each on the datasource variable with refId'd targets")

# --- alert rules and their tests --------------------------------------------------------------------------
ALERTS = "examples/prometheus/alerts.yml"
TESTS = "examples/prometheus/alerts_test.yml"
alerts = docs.get(ALERTS) or {}
alert_names = []
for group in alerts.get("groups") or []:
    for rule in group.get("rules") or []:
        name = rule.get("alert")
        if not name:
            continue
        alert_names.append(name)
        if not rule.get("for"):
            fail(f"{ALERTS}: {name} has no `for`")
        if (rule.get("labels") or {}).get("severity") not in ("critical", "warning", "info"):
            fail(f"{ALERTS}: {name} has no severity label (critical, warning or info)")
        ann = rule.get("annotations") or {}
        if not ann.get("summary") or not ann.get("description"):
            fail(f"{ALERTS}: {name} lacks a summary or description annotation")
        bad = unknown_metrics(rule.get("expr", ""))
        if bad:
            fail(f"{ALERTS}: {name}: metrics not registered in the product crates: {bad}")
if not alert_names:
    fail(f"{ALERTS}: no alerts")

fires, silent = set(), set()
for test in (docs.get(TESTS) or {}).get("tests") or []:
    for case in test.get("alert_rule_test") or []:
        (fires if case.get("exp_alerts") else silent).add(case.get("alertname"))
for name in alert_names:
    if name not in fires:
        fail(f"{TESTS}: no test shows {name} firing")
    if name not in silent:
        fail(f"{TESTS}: no test shows {name} not firing")
ok(f"alerts: {len(alert_names)} alerts, each with for/severity/summary/description and tests both ways")

# --- prometheus.yml scrapes the gateway and loads the rules -----------------------------------------------
prom = docs.get("examples/prometheus/prometheus.yml") or {}
if "alerts.yml" not in (prom.get("rule_files") or []):
    fail("prometheus.yml: rule_files does not load alerts.yml")
jobs = {j.get("job_name"): j for j in prom.get("scrape_configs") or []}
job = jobs.get("searxng-gateway")
targets = [t for sc in (job or {}).get("static_configs") or [] for t in sc.get("targets") or []]
# Every gateway replica of the compose file is scraped directly (not through the load balancer).
replicas = [n for n, svc in services.items() if (svc or {}).get("image") == "searxng-gateway:local"]
missing = [r for r in replicas if f"{r}:8080" not in targets]
if not replicas or missing:
    fail(f"prometheus.yml: job searxng-gateway does not scrape every gateway replica: missing {missing or 'all'}")
else:
    ok("prometheus.yml scrapes searxng-gateway:8080 and loads alerts.yml")

# --- Grafana provisioning points at the mounted dashboard -------------------------------------------------
prov = docs.get("examples/grafana/provisioning/dashboards/dashboards.yml") or {}
for provider in prov.get("providers") or []:
    path = ((provider.get("options") or {}).get("path") or "").rstrip("/")
    mounted = [c for c, h in container_mounts.items() if os.path.dirname(c) == path and h.endswith(".json")]
    if not mounted:
        fail(f"dashboards.yml: provider {provider.get('name')!r} reads {path}, where compose mounts no dashboard")
    else:
        ok(f"grafana provider {provider.get('name')!r} reads {path}, where compose mounts {mounted[0]}")
dsprov = docs.get("examples/grafana/provisioning/datasources/prometheus.yml") or {}
if not any(d.get("type") == "prometheus" for d in dsprov.get("datasources") or []):
    fail("datasources/prometheus.yml: no prometheus data source")

# --- every dashboard query is valid PromQL (promtool parses it as a recording rule) ------------------------
if record_rules:
    rules_path = os.path.join(os.environ["WORKDIR"], "dashboard-queries.rules.yml")
    with open(rules_path, "w", encoding="utf-8") as f:
        yaml.safe_dump({"groups": [{"name": "dashboard-queries", "rules": record_rules}]}, f, sort_keys=False)
    res = subprocess.run([os.environ["PROMTOOL"], "check", "rules", rules_path], capture_output=True, text=True)
    if res.returncode != 0:
        fail("dashboard queries are not valid PromQL:\n" + res.stdout + res.stderr)
    else:
        ok(f"dashboard: all {len(record_rules)} queries parse as PromQL (promtool)")

if errors:
    print(f"\n{len(errors)} problem(s):", file=sys.stderr)
    for e in errors:
        print(f"  - {e}", file=sys.stderr)
    sys.exit(1)
PY

step "Dockerfile builder stage, run as a script (no Docker daemon needed)"
bash scripts/dockerfile-as-script.sh

printf '\noperator pack: all checks passed\n'
