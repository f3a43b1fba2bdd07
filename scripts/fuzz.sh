#!/usr/bin/env bash
# Coverage-guided fuzzing of every decoder that reads bytes from outside the gateway (TESTING.md,
# "Fuzzing"), on stable Rust: the targets in fuzz/ are libFuzzer binaries (libfuzzer-sys) built with
# LLVM's sanitizer-coverage through stable codegen flags (-C passes=sancov-module and -C llvm-args),
# the flags cargo-fuzz passes when no sanitizer is asked for, without cargo-fuzz's nightly-only
# extras. Debug assertions and overflow checks stay on, so an arithmetic overflow is a crash too.
#
# Usage: scripts/fuzz.sh SECONDS [TARGET...]           each target (all when none is named) for SECONDS
#        scripts/fuzz.sh --record SECONDS [TARGET...]  the same, then writes the table into TESTING.md
#
# Seeds: fuzz/corpus/<target> (committed) and fuzz/regressions/<target> (inputs of fixed crashes,
# committed); what the fuzzer finds goes to target/fuzz/corpus/<target>. A crash stops the script
# with a non-zero status and the input under target/fuzz/artifacts/<target>/: fix it, commit the
# input to fuzz/regressions/<target>/ (the gateway's `cargo test` replays every committed input) and
# add a plain #[test] on it next to the code it broke.
set -euo pipefail
cd "$(dirname "$0")/.."

record=false
if [[ "${1:-}" == "--record" ]]; then
    record=true
    shift
fi
seconds="${1:?usage: scripts/fuzz.sh [--record] SECONDS [TARGET...]}"
shift
all_targets=(search_params searxng_answer unresponsive_engines provider_brave provider_exa provider_jina
    provider_kagi provider_linkup provider_perplexity provider_searchapi provider_serper
    provider_tavily retry_after brave_rate_limits canonical_url tavily_request door_request
    mcp_web_search page_extraction page_pdf)
targets=("${@:-${all_targets[@]}}")
if [[ $# -eq 0 ]]; then
    targets=("${all_targets[@]}")
fi

triple="$(rustc -vV | sed -n 's/^host: //p')"
built_from="$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)"
# An explicit --target keeps these flags off build scripts and proc macros (which would need the
# libFuzzer runtime to load).
export RUSTFLAGS="-Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4 \
-Cllvm-args=-sanitizer-coverage-inline-8bit-counters -Cllvm-args=-sanitizer-coverage-pc-table \
-Cllvm-args=-sanitizer-coverage-trace-compares --cfg fuzzing"
# page_pdf sends its inputs to parse workers, as the gateway does: the gateway's binary is the
# worker (built without the fuzzing flags, as it ships).
if [[ " ${targets[*]} " == *" page_pdf "* ]]; then
    (unset RUSTFLAGS; cargo build --release --locked -p searxng-gateway --bin searxng-gateway)
    export SEARXNG_GATEWAY_BIN="$PWD/target/release/searxng-gateway"
fi
echo "fuzz: building ${#targets[@]} target(s) for $triple"
cargo build --release --locked --manifest-path fuzz/Cargo.toml --target "$triple" \
    --target-dir target/fuzz --bins

total=0
rows=()
for target in "${targets[@]}"; do
    work="target/fuzz/corpus/$target"
    artifacts="target/fuzz/artifacts/$target"
    log="target/fuzz/logs/$target.log"
    mkdir -p "$work" "$artifacts" "$(dirname "$log")" "fuzz/regressions/$target"
    status=0
    "target/fuzz/$triple/release/$target" -max_total_time="$seconds" -print_final_stats=1 \
        -rss_limit_mb=2048 -timeout=10 -artifact_prefix="$artifacts/" \
        "$work" "fuzz/corpus/$target" "fuzz/regressions/$target" >"$log" 2>&1 || status=$?
    runs="$(sed -n 's/^Done \([0-9]*\) runs.*/\1/p' "$log" | tail -1)"
    edges="$(sed -n 's/^#[0-9]*.*DONE *cov: \([0-9]*\).*/\1/p' "$log" | tail -1)"
    corpus="$(find "$work" -type f | wc -l)"
    if [[ $status -ne 0 || -z "$runs" ]]; then
        echo "fuzz: $target CRASHED (status $status); the input is in $artifacts/, the log in $log:" >&2
        tail -40 "$log" >&2
        exit 1
    fi
    total=$((total + runs))
    echo "fuzz: $target: $runs executions in ${seconds}s, coverage $edges, corpus $corpus inputs, 0 crashes"
    rows+=("| \`$target\` | $runs | $edges | $corpus | 0 |")
done
echo "fuzz: $total executions in all, 0 crashes"

if $record; then
    table="$(printf '%s\n' "| target | executions | coverage (edges) | corpus | crashes |" "|---|---|---|---|---|" "${rows[@]}" \
        "| **total** | **$total** | | | **0** |")"
    when="$(date -u '+%Y-%m-%d %H:%M UTC'), commit $built_from, $(rustc --version), ${seconds} s per target"
    python3 - "$table" "$when" <<'EOF'
import sys
table, when = sys.argv[1], sys.argv[2]
path = "TESTING.md"
text = open(path).read()
start, end = "<!-- fuzz:start -->", "<!-- fuzz:end -->"
a, b = text.index(start) + len(start), text.index(end)
text = text[:a] + "\n<!-- Written by `scripts/fuzz.sh --record`; edit outside the markers. -->\n\nRecorded run: " + when + ".\n\n" + table + "\n" + text[b:]
open(path, "w").write(text)
EOF
    echo "fuzz: recorded in TESTING.md"
fi
