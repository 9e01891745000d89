# syntax=docker/dockerfile:1
#
# The mcp-gate container image: a static binary on an empty base, run as a
# non-root user, for a read-only root filesystem. docs/deploy.md explains
# the team deployment; deploy/kubernetes/ holds the manifests.
#
#   docker build -t mcp-gate:dev .
#   docker build --target with-node -t mcp-gate:dev-node .   # for node upstreams
#
# The image cannot be built in this repository's CI (no container engine);
# deploy/kubernetes/dockerfile_test.go lints this file, and
# cmd/mcp-gate/static_test.go builds the binary with the same flags and
# checks that it is static.

# Pinned by version; pin by digest too (golang:1.26.8-bookworm@sha256:...)
# where your registry policy asks for it.
FROM golang:1.26.8-bookworm AS build
WORKDIR /src
# Modules first, so that a source change does not download them again.
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
# Static (no libc, no loader: the runtime stage has neither), reproducible
# (-trimpath, no build ID), stripped.
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w -buildid= -X main.version=${VERSION}" -o /out/mcp-gate ./cmd/mcp-gate
# The runtime stage has no shell: its /etc/passwd, its CA bundle (the OIDC
# issuer is reached over TLS) and an empty /tmp are made here.
RUN mkdir -p /out/etc/ssl/certs /out/tmp \
 && cp /etc/ssl/certs/ca-certificates.crt /out/etc/ssl/certs/ \
 && echo 'nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin' > /out/etc/passwd \
 && echo 'nonroot:x:65532:' > /out/etc/group \
 && chmod 1777 /out/tmp

# Optional: the gate with Node.js, for upstream servers run with node or
# npx (most reference MCP servers). Build it with --target with-node. The
# servers' packages are best installed into a derived image at build time:
# npx fetching them at run time needs a writable cache and network access.
FROM node:22.21.1-bookworm-slim AS with-node
# The slim image has no system CA bundle; the gate reads the system's.
COPY --from=build /out/etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --from=build /out/mcp-gate /usr/local/bin/mcp-gate
ENV HOME=/tmp
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/mcp-gate"]
CMD ["serve", "--http", "0.0.0.0:8080"]

# The default image: the binary alone. Upstream servers it runs as child
# processes must be static binaries too, or come from a derived image.
FROM scratch
COPY --from=build /out/etc/ /etc/
COPY --from=build /out/tmp/ /tmp/
COPY --from=build /out/mcp-gate /mcp-gate
ENV HOME=/tmp
USER 65532:65532
EXPOSE 8080
ENTRYPOINT ["/mcp-gate"]
CMD ["serve", "--http", "0.0.0.0:8080"]
