#!/usr/bin/env bash
# Runs the Dockerfile's builder stage without Docker, then checks the binary it produced the way the image
# uses it: `--help` prints the configuration table, `healthcheck` fails when nothing listens and succeeds
# against a running gateway, and SIGTERM stops the gateway cleanly.
#
# The Dockerfile is read, not restated: the builder stage's ENV, WORKDIR, COPY and RUN instructions are
# executed in order, in a temporary root, from a build context filtered by .dockerignore (files keep their
# modification times, as `docker build` does), so a COPY of an ignored file, a placeholder binary surviving
# the dependency layer, or a RUN step that stopped working fails here. The runtime stage's
# `COPY --from=builder <path>` names the artifacts; absolute paths to them in RUN lines are moved into the
# temporary root. RUN lines execute on this machine with its Rust toolchain: keep the builder stage to
# cargo and coreutils.
#
# Usage: scripts/dockerfile-as-script.sh
# DOCKERFILE_TARGET_DIR (default target/dockerfile-as-script) keeps cargo's build cache between runs; the
# stage's own `target/` is a link to it, so only the gateway crate itself is rebuilt each time.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
repo="$PWD"
PYTHON="${PYTHON:-python3}"
cache="${DOCKERFILE_TARGET_DIR:-$repo/target/dockerfile-as-script}"

step() { printf '\n== %s\n' "$*"; }
die() { echo "error: $*" >&2; exit 1; }

work="$(mktemp -d)"
gateway_pid=""
cleanup() {
    if [ -n "$gateway_pid" ]; then
        kill "$gateway_pid" 2>/dev/null || true
        wait "$gateway_pid" 2>/dev/null || true
    fi
    rm -rf "$work"
}
trap cleanup EXIT
context="$work/context"
root="$work/root"
mkdir -p "$context" "$root" "$cache"

step "build context (.dockerignore applied)"
# Docker's rule: the last pattern matching a path (or one of its parent directories) decides; `!` re-includes.
# target/ and .git are skipped outright: no image context should carry them.
"$PYTHON" - "$repo" "$context" <<'PY'
import fnmatch
import os
import shutil
import sys

repo, context = sys.argv[1], sys.argv[2]
patterns = []
ignore_file = os.path.join(repo, ".dockerignore")
if os.path.exists(ignore_file):
    with open(ignore_file, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            negate = line.startswith("!")
            pattern = os.path.normpath(line.lstrip("!").strip().lstrip("/"))
            patterns.append((negate, pattern))


def matches(pattern, path):
    parts = path.split("/")
    return any(fnmatch.fnmatchcase("/".join(parts[: i + 1]), pattern) for i in range(len(parts)))


def ignored(path):
    verdict = False
    for negate, pattern in patterns:
        if matches(pattern, path):
            verdict = not negate
    return verdict


copied = 0
for top, dirs, files in os.walk(repo):
    rel_top = os.path.relpath(top, repo)
    if rel_top == ".":
        dirs[:] = [d for d in dirs if d not in ("target", ".git")]
    for name in files:
        rel = os.path.normpath(os.path.join(rel_top, name))
        if ignored(rel):
            continue
        dest = os.path.join(context, rel)
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        shutil.copy2(os.path.join(repo, rel), dest)
        copied += 1
print(f"{copied} files in the build context")
PY

# The Dockerfile as instructions: comment lines dropped, `\` continuations joined.
instructions=()
pending=""
while IFS= read -r line || [ -n "$line" ]; do
    if [[ "$line" =~ ^[[:space:]]*# ]]; then continue; fi
    if [[ "$line" =~ \\[[:space:]]*$ ]]; then
        line="${line%"${line##*[![:space:]]}"}"
        pending+="${line%\\} "
        continue
    fi
    line="$pending$line"
    pending=""
    if [[ "$line" =~ ^[[:space:]]*$ ]]; then continue; fi
    instructions+=("$line")
done < Dockerfile
[ -z "$pending" ] || die "Dockerfile ends inside a continued line"

# Stages by name, and what later stages copy out of the builder.
builder=""
artifacts=()
stage=""
for instruction in "${instructions[@]}"; do
    read -r keyword rest <<<"$instruction"
    case "${keyword^^}" in
        FROM)
            stage="$(sed -nE 's/.*[[:space:]][Aa][Ss][[:space:]]+([^[:space:]]+)[[:space:]]*$/\1/p' <<<"$rest")"
            [ -n "$builder" ] || builder="$stage"
            ;;
        COPY)
            if [ "$stage" != "$builder" ] && [[ "$rest" =~ --from=([^[:space:]]+)[[:space:]]+([^[:space:]]+) ]]; then
                [ "${BASH_REMATCH[1]}" = "$builder" ] && artifacts+=("${BASH_REMATCH[2]}")
            fi
            ;;
    esac
done
[ -n "$builder" ] || die "Dockerfile: the first stage has no name (FROM … AS builder)"
[ "${#artifacts[@]}" -gt 0 ] || die "Dockerfile: no later stage copies anything --from=$builder"

step "builder stage '$builder', run as a script in $root"
# Only the stage's own ENV values, as in the image: nothing from the caller's cargo configuration.
unset CARGO_TARGET_DIR CARGO_BUILD_TARGET CARGO_PROFILE_RELEASE_STRIP RUSTFLAGS
cwd="$root"
stage=""
for instruction in "${instructions[@]}"; do
    read -r keyword rest <<<"$instruction"
    if [ "${keyword^^}" = FROM ]; then
        stage="$(sed -nE 's/.*[[:space:]][Aa][Ss][[:space:]]+([^[:space:]]+)[[:space:]]*$/\1/p' <<<"$rest")"
        continue
    fi
    [ "$stage" = "$builder" ] || continue
    echo "+ $keyword $rest"
    case "${keyword^^}" in
        WORKDIR)
            case "$rest" in /*) cwd="$root$rest" ;; *) cwd="$cwd/$rest" ;; esac
            mkdir -p "$cwd"
            # The stage builds into target/ under its WORKDIR: a link to the cache outside the temporary root.
            [ -e "$cwd/target" ] || ln -s "$cache" "$cwd/target"
            ;;
        ENV)
            if [[ "$rest" == *=* ]]; then
                eval "export $rest"
            else
                read -r name value <<<"$rest"
                export "$name=$value"
            fi
            ;;
        COPY)
            [[ "$rest" != --* ]] || die "COPY flags in the builder stage are not supported here: $rest"
            read -r -a paths <<<"$rest"
            dest="${paths[-1]}"
            unset 'paths[-1]'
            case "$dest" in /*) dest="$root$dest" ;; *) dest="$cwd/$dest" ;; esac
            for source in "${paths[@]}"; do
                [ -e "$context/$source" ] || die "COPY $source: not in the build context (see .dockerignore)"
                if [ -d "$context/$source" ]; then
                    # A directory's contents go into the destination, as Docker does.
                    mkdir -p "$dest"
                    cp -a "$context/$source/." "$dest/"
                elif [[ "$dest" == */ ]] || [ "${#paths[@]}" -gt 1 ]; then
                    mkdir -p "$dest"
                    cp -a "$context/$source" "$dest"
                else
                    mkdir -p "$(dirname "$dest")"
                    cp -a "$context/$source" "$dest"
                fi
            done
            ;;
        RUN)
            command="$rest"
            for artifact in "${artifacts[@]}"; do
                command="$(ARTIFACT="$artifact" ROOT="$root" "$PYTHON" -c '
import os, re, sys
print(re.sub(r"(?<![^\s=])" + re.escape(os.environ["ARTIFACT"]) + r"(?=\s|$)",
             lambda m: os.environ["ROOT"] + m.group(0), sys.stdin.read().rstrip("\n")))
' <<<"$command")"
            done
            (cd "$cwd" && sh -c "$command") || die "RUN failed: $rest"
            ;;
        ARG | LABEL | USER | EXPOSE | HEALTHCHECK | ENTRYPOINT | CMD) ;;
        *) die "instruction $keyword in the builder stage is not supported by this script" ;;
    esac
done

binary=""
for artifact in "${artifacts[@]}"; do
    [ -e "$root$artifact" ] || die "the builder stage did not produce $artifact, which a later stage copies"
    case "$artifact" in */searxng-gateway) binary="$root$artifact" ;; esac
done
[ -n "$binary" ] || die "no searxng-gateway binary among the copied artifacts: ${artifacts[*]}"
[ -x "$binary" ] || die "$binary is not executable"

free_port() {
    "$PYTHON" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

step "searxng-gateway --help"
help="$("$binary" --help)" || die "--help exited non-zero"
grep -q SEARXNG_BACKEND_URL <<<"$help" \
    || die "--help does not print the configuration table (is this the placeholder binary?):"$'\n'"$help"
echo "ok: --help prints the configuration table"

step "searxng-gateway healthcheck"
port="$(free_port)"
nowhere="http://127.0.0.1:$(free_port)"
if LISTEN_ADDR="127.0.0.1:$port" "$binary" healthcheck 2>/dev/null; then
    die "healthcheck exited 0 with nothing listening on 127.0.0.1:$port"
fi
echo "ok: healthcheck fails while nothing listens"

LISTEN_ADDR="127.0.0.1:$port" SEARXNG_BACKEND_URL="$nowhere" LOG_LEVEL=warn \
    "$binary" >"$work/gateway.log" 2>&1 &
gateway_pid=$!
ready=""
for _ in $(seq 100); do
    if ! kill -0 "$gateway_pid" 2>/dev/null; then
        die "the gateway exited during start-up:"$'\n'"$(cat "$work/gateway.log")"
    fi
    if "$PYTHON" -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=1)' \
        "http://127.0.0.1:$port/healthz" 2>/dev/null; then
        ready=1
        break
    fi
    sleep 0.1
done
[ -n "$ready" ] || die "the gateway did not answer /healthz within 10 s:"$'\n'"$(cat "$work/gateway.log")"
LISTEN_ADDR="127.0.0.1:$port" "$binary" healthcheck \
    || die "healthcheck exited non-zero while the gateway answers /healthz"
echo "ok: healthcheck succeeds while the gateway listens"

step "SIGTERM"
kill -TERM "$gateway_pid"
status=0
for _ in $(seq 100); do
    kill -0 "$gateway_pid" 2>/dev/null || break
    sleep 0.1
done
kill -0 "$gateway_pid" 2>/dev/null && die "the gateway was still running 10 s after SIGTERM"
wait "$gateway_pid" || status=$?
gateway_pid=""
[ "$status" = 0 ] || die "the gateway exited with status $status after SIGTERM:"$'\n'"$(cat "$work/gateway.log")"
echo "ok: SIGTERM stops the gateway with status 0"

printf '\nDockerfile as a script: the builder stage builds a working gateway\n'
