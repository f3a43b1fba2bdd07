#!/usr/bin/env bash
# Installs Debian's chromium and chromium-driver when either is missing: the browser the operator's page
# is tested in (crates/gateway/tests/clients/test_ui.py) and that scripts/ui-screenshot.sh photographs it
# with, and the gateway's local browser (BROWSER, #42) its browser tests render pages in
# (crates/upstreams/src/reader/browser/tests.rs, crates/gateway/tests/integration/browser_reads.rs).
# Idempotent. Usage: bash scripts/install-chromium.sh
set -euo pipefail

if command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1; then
    exit 0
fi
echo "install-chromium: installing Debian packages chromium and chromium-driver"
if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; else SUDO=; fi
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium chromium-driver >/dev/null
