# syntax=docker/dockerfile:1
# The toolgate container image: one binary on a slim Debian, run as a non-root user.
#
#   docker build -t toolgate .
#   docker run --rm -p 8080:8080 -e TOOLGATE_JWT_SECRET=$(openssl rand -hex 32) toolgate \
#       serve --seed /etc/toolgate/demo-catalog.yaml
#
# The first line selects the BuildKit Dockerfile frontend, which the cache mounts below need
# (BuildKit is the default builder of current Docker and of `docker compose build`).

# ---------------------------------------------------------------------------------------------
# Build stage. rust:1-bookworm: the official Rust image on the same Debian release as the runtime
# stage, so the binary links against the glibc it will run with. It carries a C compiler, which
# aws-lc (TLS to MongoDB), zstd and mimalloc need. The toolchain actually used is the one pinned
# in rust-toolchain.toml (1.95.0, profile minimal, clippy and rustfmt): rustup reads that file
# in /src and installs it, whatever stable version the image happens to ship.
FROM rust:1-bookworm AS build
WORKDIR /src

# Install the pinned toolchain in a layer of its own, before the sources are copied, so that a
# source change does not download the toolchain again (the layer changes only with the file).
# `rustup toolchain install` with no name installs the one rust-toolchain.toml names.
COPY rust-toolchain.toml ./
RUN rustup toolchain install && cargo --version

COPY . .

# The build itself is scripts/docker-build.sh, so that CI runs exactly the same steps without
# Docker: cargo build --release --locked, copy the binary to /out, strip it, then run
# `toolgate --version` and `toolgate check config/demo-catalog.yaml` on the copy.
# Cache mounts keep the crates.io registry (downloads) and target/ (compiled dependencies)
# between builds. They are safe here because the script copies the binary out of target/ into
# /out, which is not a mount: /out stays in the stage's layer for the COPY --from below.
RUN --mount=type=cache,target=/usr/local/cargo/registry --mount=type=cache,target=/src/target scripts/docker-build.sh /out

# ---------------------------------------------------------------------------------------------
# Runtime stage. debian:bookworm-slim: glibc (the binary is dynamically linked against it), a
# shell for debugging, and little else. Only ca-certificates is added: the gateway makes TLS
# connections (JWKS URLs, OpenAPI/MCP imports, upstream tool calls, MongoDB/Redis over TLS) and
# verifies them against the system roots. The apt lists are removed so they do not weigh on
# every layer after this one. ca-certificates is deliberately not pinned to a version: it should
# follow Debian's security updates whenever the image is rebuilt.
FROM debian:bookworm-slim

# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates \
    && rm -rf /var/lib/apt/lists/*

# A fixed numeric uid/gid (10001), so that Kubernetes `runAsUser`/`fsGroup`, volume ownership
# and `USER 10001:10001` below all name the same user without looking up /etc/passwd, and so
# that it cannot collide with a system user of the base image (those stay below 1000).
# /var/lib/toolgate is the embedded store's data dir (TOOLGATE_DATA_DIR), owned by that user:
# the only place the process writes, so the root filesystem can be mounted read-only.
RUN groupadd --system --gid 10001 toolgate \
    && useradd --system --uid 10001 --gid 10001 --home-dir /var/lib/toolgate --no-create-home \
        --shell /usr/sbin/nologin toolgate \
    && install -d -o 10001 -g 10001 -m 0750 /var/lib/toolgate

COPY --from=build /out/toolgate /usr/local/bin/toolgate
# The demo catalog and the documented example configuration (config/toolgate.example.toml).
# A real configuration is given through TOOLGATE_* variables, or a file mounted and named by
# TOOLGATE_CONFIG; config/toolgate.toml (which may hold secrets) is kept out by .dockerignore.
COPY config /etc/toolgate

# Relative paths (such as the default config/toolgate.toml lookup) resolve in the data dir.
WORKDIR /var/lib/toolgate
USER 10001:10001

# Listen on every interface (the default, 127.0.0.1, is unreachable from outside a container);
# keep the embedded store in the data dir above. Everything else comes from the environment
# at run time: TOOLGATE_JWT_SECRET or TOOLGATE_JWKS_URL (required), TOOLGATE_MONGODB_URI,
# TOOLGATE_REDIS_URL... (docs/operations.md lists them all).
ENV TOOLGATE_LISTEN=0.0.0.0:8080 TOOLGATE_DATA_DIR=/var/lib/toolgate
EXPOSE 8080

# No HEALTHCHECK: the slim image has no curl or wget, and adding one only for this would grow
# the image and its attack surface. Orchestrators probe the gateway over HTTP themselves:
# GET /healthz (liveness: the process serves) and GET /readyz (readiness: the catalog store
# answers; 503 when it does not). See deploy/README.md and the Helm chart's probes.

# The binary is the entrypoint, so `docker run toolgate check FILE` or `... token --admin` run
# other subcommands; with no arguments it serves.
ENTRYPOINT ["toolgate"]
CMD ["serve"]
