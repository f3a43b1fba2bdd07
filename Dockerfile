# searxng-gateway container image.
#
#   docker build -t searxng-gateway .
#   docker run --rm -p 8080:8080 -e SEARXNG_BACKEND_URL=http://searxng:8080 searxng-gateway
#
# Two stages: a Rust builder, and a distroless runtime (glibc, CA certificates, no shell, no package
# manager) that runs the gateway as an unprivileged user — the default target. `--target browser`
# builds a third, the same gateway with Chromium (its stage says more).

FROM rust:1.95-slim-bookworm AS builder
WORKDIR /build

# jemalloc, the gateway's allocator, is built from source (tikv-jemalloc-sys): it needs make, which the
# slim image lacks (it has the C compiler). A builder that has make installs nothing.
RUN command -v make >/dev/null \
    || (apt-get update && apt-get install -y --no-install-recommends make && rm -rf /var/lib/apt/lists/*)

ENV CARGO_TERM_COLOR=never

# Dependency layer: build every dependency of the product's crates against placeholder sources, so this
# layer is reused until a manifest or Cargo.lock changes. Cargo loads every workspace member's
# manifest, so the simulator and testbed get placeholder targets too; neither is ever compiled.
COPY Cargo.toml Cargo.lock ./
COPY crates/core/Cargo.toml crates/core/
COPY crates/upstreams/Cargo.toml crates/upstreams/
COPY crates/engine/Cargo.toml crates/engine/
COPY crates/http/Cargo.toml crates/http/
COPY crates/gateway/Cargo.toml crates/gateway/
COPY crates/simulator/Cargo.toml crates/simulator/
COPY crates/testbed/Cargo.toml crates/testbed/
COPY crates/pipeline-bench/Cargo.toml crates/pipeline-bench/
RUN for crate in core upstreams engine http gateway simulator testbed pipeline-bench; do \
        mkdir -p crates/$crate/src \
        && echo '//! placeholder' > crates/$crate/src/lib.rs \
        && echo 'fn main() {}' > crates/$crate/src/main.rs; \
    done \
    && mkdir -p crates/testbed/benches/harness \
    && echo 'fn main() {}' > crates/testbed/benches/harness/main.rs \
    && mkdir -p crates/pipeline-bench/benches \
    && echo 'fn main() {}' > crates/pipeline-bench/benches/pipeline.rs \
    && cargo build --release --locked -p searxng-gateway \
    && rm -rf crates/core/src crates/upstreams/src crates/engine/src crates/http/src crates/gateway/src

# The gateway itself (only the product's crates: the simulator never enters the image). `touch`
# makes the copied sources newer than the placeholder build, whatever modification times the build
# context carried, so cargo rebuilds the crate instead of reusing it. The binary's symbols are
# stripped by `strip` rather than the profile's `strip` setting, which would give every dependency a
# fingerprint of its own (CI's check of these steps shares its build with the benchmark harness).
COPY crates/core/src ./crates/core/src
COPY crates/upstreams/src ./crates/upstreams/src
COPY crates/engine/src ./crates/engine/src
COPY crates/http/src ./crates/http/src
COPY crates/gateway/src ./crates/gateway/src
RUN touch crates/*/src/lib.rs crates/gateway/src/main.rs \
    && cargo build --release --locked -p searxng-gateway --bin searxng-gateway \
    && cp target/release/searxng-gateway /searxng-gateway \
    && strip --strip-all /searxng-gateway \
    && mkdir -p /state

# The gateway with Debian's Chromium, for the local browser (BROWSER, #42): a larger image under its
# own tag, so the default image (the last stage, below) stays small.
#
#   docker build --target browser -t searxng-gateway:browser .
#
# Chromium runs as the unprivileged user with its own sandbox, which needs user namespaces: a
# runtime whose seccomp profile refuses them (Docker's default one without CAP_SYS_ADMIN on older
# engines) stops Chromium from starting — the gateway then logs it and reads without the browser.
FROM debian:bookworm-slim AS browser
RUN apt-get update \
    && apt-get install -y --no-install-recommends chromium ca-certificates fonts-liberation \
    && rm -rf /var/lib/apt/lists/* \
    && groupadd --gid 65532 nonroot && useradd --uid 65532 --gid 65532 --no-create-home nonroot
COPY --from=builder /searxng-gateway /usr/local/bin/searxng-gateway
COPY --chown=65532:65532 --from=builder /state /var/lib/searxng-gateway
ENV LISTEN_ADDR=":8080"
ENV STATE_DIR="/var/lib/searxng-gateway"
ENV BROWSER="auto"
ENV BROWSER_PATH="/usr/bin/chromium"
VOLUME ["/var/lib/searxng-gateway"]
EXPOSE 8080
USER nonroot:nonroot
HEALTHCHECK --interval=30s --timeout=5s --start-period=10s --retries=3 \
    CMD ["/usr/local/bin/searxng-gateway", "healthcheck"]
ENTRYPOINT ["/usr/local/bin/searxng-gateway"]

FROM gcr.io/distroless/cc-debian12:nonroot AS runtime

COPY --from=builder /searxng-gateway /usr/local/bin/searxng-gateway
# STATE_DIR: open breakers, parked quotas and the last 24 h of premium spend survive a restart or an
# upgrade. Owned by nonroot, so a named volume mounted here starts writable.
COPY --chown=65532:65532 --from=builder /state /var/lib/searxng-gateway

ENV LISTEN_ADDR=":8080"
ENV STATE_DIR="/var/lib/searxng-gateway"
VOLUME ["/var/lib/searxng-gateway"]
EXPOSE 8080
# uid/gid 65532 ("nonroot" in distroless images).
USER nonroot:nonroot

# No curl in this image: the binary checks itself (GET http://127.0.0.1:<port of LISTEN_ADDR>/healthz).
HEALTHCHECK --interval=30s --timeout=5s --start-period=10s --retries=3 \
    CMD ["/usr/local/bin/searxng-gateway", "healthcheck"]

ENTRYPOINT ["/usr/local/bin/searxng-gateway"]
