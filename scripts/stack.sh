#!/usr/bin/env bash
# The real stack in one command: SearXNG from PyPI in a virtualenv (.ci/install-searxng.sh, pinned), one or more
# SearXNG instances on free loopback ports with a fresh settings file each (random secret_key, JSON on, limiter
# off, SearXNG's own default engines), and the gateway (release build) in front of all of them as a pool. Prints
# the URL to query; Ctrl-C (or SIGTERM) stops everything it started.
#
# Usage: scripts/stack.sh [--instances N] [--listen ADDR] [--gateway BIN] [--engines-from FILE]
#                         [--engine-upstream HOST:PORT]
#   --instances N        SearXNG instances to start (default 2; 1 runs a single instance)
#   --listen ADDR        the gateway's LISTEN_ADDR (default 127.0.0.1:8080)
#   --gateway BIN        run this gateway binary instead of building one (cargo build --release)
#   --engines-from FILE  offline mode: instead of SearXNG's default engines (which need the internet), use the
#                        engines listed in FILE (a YAML list, as under `engines:` in settings.yml).
#                        examples/offline-engines.yml points two engines at a loopback fake: with it the stack
#                        runs with no internet (scripts/offline-engine.py, started and stopped here, stands in
#                        for the sites wherever FILE says @ENGINE_UPSTREAM@)
#   --engine-upstream HOST:PORT
#                        put HOST:PORT for @ENGINE_UPSTREAM@ instead of starting the fake (a fake of your own;
#                        the tests pass theirs)
# Every other gateway variable (BRAVE_API_KEY, LOG_LEVEL, …) passes through from the environment.
# The virtualenv is ${SEARXNG_VENV:-/opt/searxng-gateway/venv} (as root) or ~/.local/share/searxng-gateway/venv.
# Logs (the gateway's, each SearXNG's, the fake's) and settings stay after it stops, in
# ${XDG_STATE_HOME:-~/.local/state}/searxng-gateway/stack-<time>-<id>/, printed at start and at exit; the last 10
# runs are kept.
set -euo pipefail
# Paths given on the command line are the caller's; the script runs from the repository's root.
caller_dir="$PWD"
cd "$(dirname "$0")/.."

instances=2
listen="127.0.0.1:8080"
gateway_bin=""
engines_from=""
engine_upstream=""
usage() { sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//'; }
while [[ $# -gt 0 ]]; do
    case "$1" in
        --instances) instances="${2:?--instances needs a number}"; shift 2 ;;
        --listen) listen="${2:?--listen needs an address}"; shift 2 ;;
        --gateway) gateway_bin="${2:?--gateway needs a path}"; shift 2 ;;
        --engines-from) engines_from="${2:?--engines-from needs a file}"; shift 2
            [[ "$engines_from" == /* ]] || engines_from="$caller_dir/$engines_from" ;;
        --engine-upstream) engine_upstream="${2:?--engine-upstream needs HOST:PORT}"; shift 2 ;;
        -h|--help) usage; exit 0 ;;
        *) echo "stack: unknown argument $1" >&2; usage >&2; exit 2 ;;
    esac
done
if ! [[ "$instances" =~ ^[1-9][0-9]*$ ]] || (( instances > 16 )); then
    echo "stack: --instances must be a number from 1 to 16, not $instances" >&2
    exit 2
fi
if [[ -n "$engines_from" && ! -r "$engines_from" ]]; then
    echo "stack: --engines-from $engines_from is not a readable file" >&2
    exit 2
fi
if [[ -n "$engine_upstream" && ! "$engine_upstream" =~ ^[A-Za-z0-9.:_-]+:[0-9]+$ ]]; then
    echo "stack: --engine-upstream must be HOST:PORT, not $engine_upstream" >&2
    exit 2
fi
if [[ -n "$gateway_bin" && ! -x "$gateway_bin" ]]; then
    echo "stack: --gateway $gateway_bin is not an executable" >&2
    exit 2
fi

if [[ -z "${SEARXNG_VENV:-}" ]]; then
    if [[ "$(id -u)" -eq 0 ]]; then
        SEARXNG_VENV=/opt/searxng-gateway/venv
    else
        SEARXNG_VENV="$HOME/.local/share/searxng-gateway/venv"
    fi
fi
export SEARXNG_VENV
bash .ci/install-searxng.sh

if [[ -z "$gateway_bin" ]]; then
    echo "stack: building the gateway (cargo build --release)"
    cargo build --release --locked -p searxng-gateway --bin searxng-gateway
    gateway_bin="${CARGO_TARGET_DIR:-target}/release/searxng-gateway"
fi

# The run's directory: settings and logs, kept after it stops (the person reads the logs then).
runs="${XDG_STATE_HOME:-$HOME/.local/state}/searxng-gateway"
mkdir -p "$runs"
work="$(mktemp -d "$runs/stack-$(date +%Y%m%d-%H%M%S)-XXXX")"
echo "stack: logs and settings in $work (kept after it stops)"
# Older runs beyond the last 10 go.
ls -1dt "$runs"/stack-* 2>/dev/null | tail -n +11 | while IFS= read -r old; do rm -rf -- "$old"; done
searxng_pids=()
gateway_pid=""
fake_pid=""

stop_all() {
    trap - INT TERM EXIT
    echo
    echo "stack: stopping"
    if [[ -n "$gateway_pid" ]]; then
        kill -TERM "$gateway_pid" 2>/dev/null || true
        wait "$gateway_pid" 2>/dev/null || true
    fi
    local pid
    for pid in "${searxng_pids[@]}"; do
        # Each SearXNG leads its own process group (granian and its worker).
        kill -TERM -- "-$pid" 2>/dev/null || true
    done
    for pid in "${searxng_pids[@]}"; do
        for _ in $(seq 1 50); do
            kill -0 -- "-$pid" 2>/dev/null || break
            sleep 0.1
        done
        kill -KILL -- "-$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    done
    if [[ -n "$fake_pid" ]]; then
        kill -TERM "$fake_pid" 2>/dev/null || true
        wait "$fake_pid" 2>/dev/null || true
    fi
    # SearXNG's caches go; its settings and every log stay.
    rm -rf "$work"/searxng-*/tmp
    echo "stack: stopped; logs kept in $work"
}
trap 'stop_all; exit 0' INT TERM
trap 'stop_all' EXIT

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

settings_yml() {
    local port="$1" secret
    secret="$(python3 -c 'import secrets; print(secrets.token_hex(32))')"
    if [[ -n "$engines_from" ]]; then
        cat <<EOF
use_default_settings:
  engines:
    keep_only: []
search:
  formats: [html, json]
  default_lang: "all"
server:
  bind_address: "127.0.0.1"
  port: $port
  secret_key: "$secret"
  limiter: false
  public_instance: false
valkey:
  url: false
plugins:
  searx.plugins.hash_plugin.SXNGPlugin: {active: true}
engines:
EOF
        sed -e 's/^/  /' -e "s/@ENGINE_UPSTREAM@/$engine_upstream/g" "$engines_from"
    else
        cat <<EOF
use_default_settings: true
search:
  formats: [html, json]
server:
  bind_address: "127.0.0.1"
  port: $port
  secret_key: "$secret"
  limiter: false
  public_instance: false
valkey:
  url: false
EOF
    fi
}

wait_healthy() {
    local url="$1" what="$2" pid="$3" log="$4"
    for _ in $(seq 1 300); do
        if python3 -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=1)' \
            "$url/healthz" 2>/dev/null; then
            return 0
        fi
        if ! kill -0 "$pid" 2>/dev/null; then
            echo "stack: $what exited during start-up; its log:" >&2
            cat "$log" >&2
            return 1
        fi
        sleep 0.1
    done
    echo "stack: $what did not answer $url/healthz within 30 s; its log:" >&2
    cat "$log" >&2
    return 1
}

if [[ -n "$engines_from" && -z "$engine_upstream" ]] && grep -q '@ENGINE_UPSTREAM@' "$engines_from"; then
    fake_port="$(free_port)"
    python3 scripts/offline-engine.py "$fake_port" </dev/null >"$work/offline-engine.log" 2>&1 &
    fake_pid="$!"
    wait_healthy "http://127.0.0.1:$fake_port" "the offline engines' fake" "$fake_pid" "$work/offline-engine.log"
    engine_upstream="127.0.0.1:$fake_port"
    echo "stack: offline engines answered by a loopback fake on http://$engine_upstream (log $work/offline-engine.log)"
fi

urls=()
for i in $(seq 1 "$instances"); do
    port="$(free_port)"
    dir="$work/searxng-$i"
    mkdir -p "$dir/tmp"
    settings_yml "$port" > "$dir/settings.yml"
    # setsid: its own process group, so the whole group (granian and its worker) stops together.
    (cd "$dir" && exec env SEARXNG_SETTINGS_PATH="$dir/settings.yml" TMPDIR="$dir/tmp" PYTHONUNBUFFERED=1 \
        setsid "$SEARXNG_VENV/bin/granian" --interface wsgi --host 127.0.0.1 --port "$port" \
        --workers 1 --blocking-threads 4 --no-access-log searx.webapp:app) \
        </dev/null >"$dir/searxng.log" 2>&1 &
    searxng_pids+=("$!")
    wait_healthy "http://127.0.0.1:$port" "SearXNG $i" "$!" "$dir/searxng.log"
    urls+=("http://127.0.0.1:$port")
    echo "stack: SearXNG $i on http://127.0.0.1:$port (log $dir/searxng.log)"
done

backend="$(IFS=,; echo "${urls[*]}")"
SEARXNG_BACKEND_URL="$backend" LISTEN_ADDR="$listen" "$gateway_bin" </dev/null >"$work/gateway.log" 2>&1 &
gateway_pid="$!"
gateway_url="http://${listen/#:/127.0.0.1:}"
gateway_url="${gateway_url/0.0.0.0/127.0.0.1}"
wait_healthy "$gateway_url" "the gateway" "$gateway_pid" "$work/gateway.log"
echo "stack: gateway on $gateway_url in front of $backend (log $work/gateway.log)"
echo "stack: query: curl '$gateway_url/search?q=hello+world&format=json'"
echo "stack: status: $gateway_url/status  metrics: $gateway_url/metrics  (Ctrl-C stops everything)"
wait "$gateway_pid" || true
echo "stack: the gateway exited; its log:" >&2
tail -n 20 "$work/gateway.log" >&2
exit 1
