#!/usr/bin/env bash
# Rewrites the book's configuration reference (docs/src/configuration.md, between its config-table
# markers) from the code's list of variables (`searxng-gateway --config-table`). Run after changing that
# list (crates/core/src/env/variables.rs); a unit test and a test of the binary fail while the two differ.
set -euo pipefail
cd "$(dirname "$0")/.."
page=docs/src/configuration.md
table=$(cargo run -q -p searxng-gateway -- --config-table)
TABLE="$table" PAGE="$page" python3 - <<'PY'
import os
page = os.environ["PAGE"]
text = open(page).read()
start, end = "<!-- config-table:start -->", "<!-- config-table:end -->"
head, rest = text.split(start, 1)
_, tail = rest.split(end, 1)
open(page, "w").write(head + start + "\n" + os.environ["TABLE"].strip() + "\n" + end + tail)
PY
echo "$page: configuration table updated"
