#!/usr/bin/env bash
# Rewrites README.md's configuration table (between its config-table markers) from the code's list of
# variables (`searxng-gateway --config-table`). Run after changing crates/gateway/src/env/variables.rs;
# a unit test fails while the two differ.
set -euo pipefail
cd "$(dirname "$0")/.."
table=$(cargo run -q -p searxng-gateway -- --config-table)
TABLE="$table" python3 - <<'PY'
import os, re
text = open("README.md").read()
start, end = "<!-- config-table:start -->", "<!-- config-table:end -->"
head, rest = text.split(start, 1)
_, tail = rest.split(end, 1)
open("README.md", "w").write(head + start + "\n" + os.environ["TABLE"].strip() + "\n" + end + tail)
PY
echo "README.md: configuration table updated"
