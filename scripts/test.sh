#!/usr/bin/env bash
# The test command (README): makes sure what the tests start is installed — a real SearXNG in a
# virtualenv, the real client libraries (LangChain, Open WebUI, tavily-python, the MCP Python SDK,
# selenium) in another, Prometheus and promtool, redis-server, Chromium and its driver — then runs every
# test. Idempotent; safe to run repeatedly.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v promtool >/dev/null 2>&1 || ! command -v prometheus >/dev/null 2>&1; then
    echo "test: installing Debian package prometheus (promtool + prometheus)"
    if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; else SUDO=; fi
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq prometheus >/dev/null
fi
if ! command -v redis-server >/dev/null 2>&1 || ! command -v redis-sentinel >/dev/null 2>&1; then
    echo "test: installing Debian packages redis-server and redis-sentinel (the shared-tier tests start their own servers, Cluster and Sentinels)"
    if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; else SUDO=; fi
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq redis-server redis-sentinel >/dev/null
fi
bash scripts/install-chromium.sh
bash .ci/install-searxng.sh
bash .ci/install-clients.sh

# The Debian packages start a Prometheus service on :9090 and a Redis on :6379 when systemd is
# present (and redis-sentinel one on :26379); the tests start their own on free ports and do not
# need them.
# Every test runs here: a test whose program is missing fails instead of returning early.
GATEWAY_EXTERNAL_TESTS=required cargo test --workspace --all-targets --locked -- --test-threads="${TEST_THREADS:-4}"
