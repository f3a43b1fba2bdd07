#!/usr/bin/env bash
# Builds the book (docs/, mdBook) into docs/book and fails on a broken internal link
# (scripts/check-book-links.py says what it checks). Installs the pinned mdBook first when `mdbook`
# is missing or another version: `cargo install`, without the `serve` and `watch` features, which
# the build does not need. CI runs this; so can you: `bash scripts/book.sh`, then open
# docs/book/index.html.
set -euo pipefail
cd "$(dirname "$0")/.."

MDBOOK_VERSION=0.5.4
export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"

installed=$(mdbook --version 2>/dev/null || true)
if [[ "$installed" != "mdbook v$MDBOOK_VERSION" ]]; then
    echo "book: installing mdbook $MDBOOK_VERSION (found: ${installed:-none})"
    cargo install mdbook --locked --version "$MDBOOK_VERSION" --no-default-features --features search
fi

mdbook build docs
python3 scripts/check-book-links.py
