# searxng-gateway container image.
#
#   docker build -t searxng-gateway .
#   docker run --rm -p 8080:8080 -e SEARXNG_BACKEND_URL=http://searxng:8080 searxng-gateway
#
# Two stages: a Rust builder, and a distroless runtime (glibc, CA certificates, no shell, no package
# manager) that runs the gateway as an unprivileged user.

FROM rust:1.95-slim-bookworm AS builder
WORKDIR /build

# Strip symbols from the release binary; set once so both builds below share one fingerprint.
ENV CARGO_PROFILE_RELEASE_STRIP=symbols \
    CARGO_TERM_COLOR=never

# Dependency layer: build every dependency against placeholder sources, so this layer is reused until
# Cargo.toml or Cargo.lock changes.
COPY Cargo.toml Cargo.lock ./
RUN mkdir src \
    && echo 'fn main() {}' > src/main.rs \
    && echo '//! placeholder' > src/lib.rs \
    && cargo build --release --locked \
    && rm -rf src

# The gateway itself. `touch` makes the copied sources newer than the placeholder build, whatever
# modification times the build context carried, so cargo rebuilds the crate instead of reusing it.
COPY src ./src
RUN touch src/main.rs src/lib.rs \
    && cargo build --release --locked \
    && cp target/release/searxng-gateway /searxng-gateway

FROM gcr.io/distroless/cc-debian12:nonroot AS runtime

COPY --from=builder /searxng-gateway /usr/local/bin/searxng-gateway

ENV LISTEN_ADDR=":8080"
EXPOSE 8080
# uid/gid 65532 ("nonroot" in distroless images).
USER nonroot:nonroot

# No curl in this image: the binary checks itself (GET http://127.0.0.1:<port of LISTEN_ADDR>/healthz).
HEALTHCHECK --interval=30s --timeout=5s --start-period=10s --retries=3 \
    CMD ["/usr/local/bin/searxng-gateway", "healthcheck"]

ENTRYPOINT ["/usr/local/bin/searxng-gateway"]
