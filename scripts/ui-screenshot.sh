#!/usr/bin/env bash
# Regenerates docs/src/ui.png, the book's picture of the operator's page: the demo (the real gateway in front of
# the simulated SearXNG and premium APIs, its scenario tripping breakers round after round) on a loopback
# port, extra searches from scripts/ui-screenshot.py for LOAD_SECONDS (default 120) so the charts have
# traffic, then headless Chromium (selenium, the same setup as the browser tests) photographs /ui at
# 1280 px wide, the whole page, light theme.
#
# Needs what scripts/test.sh installs: Debian's chromium and chromium-driver, and the clients virtualenv
# (selenium). Usage: bash scripts/ui-screenshot.sh [OUTPUT]     (default docs/src/ui.png)
set -euo pipefail
cd "$(dirname "$0")/.."

OUTPUT="${1:-docs/src/ui.png}"
VENV="${CLIENTS_VENV:-/opt/searxng-gateway/clients-venv}"
bash scripts/install-chromium.sh
bash .ci/install-clients.sh >/dev/null

cargo build --locked --quiet -p testbed --bin searxng-gateway-demo
PORT="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
LOG="$(mktemp)"
target/debug/searxng-gateway-demo --listen "127.0.0.1:$PORT" --pause 3 >"$LOG" 2>&1 &
DEMO=$!
trap 'kill "$DEMO" 2>/dev/null || true; wait "$DEMO" 2>/dev/null || true; rm -f "$LOG"' EXIT

NO_PROXY=127.0.0.1,localhost no_proxy=127.0.0.1,localhost \
    "$VENV/bin/python" scripts/ui-screenshot.py "http://127.0.0.1:$PORT" "$OUTPUT" "${LOAD_SECONDS:-120}"
echo "ui-screenshot: wrote $OUTPUT"
