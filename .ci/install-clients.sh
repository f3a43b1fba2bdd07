#!/usr/bin/env bash
# Installs the real client libraries the gateway is tested with — LangChain (langchain-community), Open WebUI,
# tavily-python, the MCP Python SDK, firecrawl-py, the perplexityai SDK, exa-py, selenium (the operator's page in Chromium;
# scripts/test.sh installs the browser) and pytest — into a virtualenv of their own, for
# crates/gateway/tests/integration/real_clients.rs. Versions: crates/gateway/tests/clients/requirements.txt,
# plus open-webui (installed with --no-deps: only the modules its SearXNG search imports are in the file) and
# gpt-researcher (--no-deps too: the tests load its custom retriever's module, which needs only requests; 0.15.1, the
# last release for Python 3.11).
#
# Idempotent: does nothing when the venv was built from the same pins (a checksum kept in the venv).
# Usage: bash .ci/install-clients.sh        (venv at ${CLIENTS_VENV:-/opt/searxng-gateway/clients-venv})
set -euo pipefail
cd "$(dirname "$0")/.."

VENV="${CLIENTS_VENV:-/opt/searxng-gateway/clients-venv}"
PYTHON="${PYTHON:-python3}"
REQUIREMENTS="crates/gateway/tests/clients/requirements.txt"
NO_DEPS=("open-webui==0.12.4" "gpt-researcher==0.15.1")
STAMP="$VENV/.searxng-gateway-pins"

wanted="$( (cat "$REQUIREMENTS"; printf '%s\n' "${NO_DEPS[@]}") | sha256sum | cut -d' ' -f1)"
if [[ -x "$VENV/bin/python" && -f "$STAMP" && "$(cat "$STAMP")" == "$wanted" ]]; then
    echo "install-clients: $VENV already has the pinned clients, nothing to do"
    exit 0
fi

if [[ ! -x "$VENV/bin/python" ]]; then
    echo "install-clients: creating virtualenv $VENV with $("$PYTHON" --version 2>&1)"
    mkdir -p "$(dirname "$VENV")"
    "$PYTHON" -m venv "$VENV"
fi

pip() { "$VENV/bin/python" -m pip --disable-pip-version-check "$@"; }
echo "install-clients: installing $REQUIREMENTS into $VENV"
pip install --quiet -r "$REQUIREMENTS"
echo "install-clients: installing ${NO_DEPS[*]} without its dependencies"
pip install --quiet --no-deps "${NO_DEPS[@]}"

# What the tests import must import: a pin that no longer fits fails here, not in the middle of a test.
"$VENV/bin/python" -c 'import langchain_community.utilities.searx_search, tavily, mcp, pytest, firecrawl, perplexity, exa_py, selenium, importlib.util; assert importlib.util.find_spec("gpt_researcher")'
echo "$wanted" > "$STAMP"
echo "install-clients: done: $(pip freeze | grep -Ei '^(langchain-community|tavily-python|mcp|open-webui|gpt-researcher|firecrawl-py|perplexityai|exa-py|selenium|pytest)==' | tr '\n' ' ')"
