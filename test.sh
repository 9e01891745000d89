#!/usr/bin/env bash
# Runs every test of mcp-gate: installs the pinned reference servers the
# end-to-end tests use (e2e/package-lock.json), then the whole Go suite with
# the race detector. This is the README's test command; .ci/run calls it.
set -euo pipefail
cd "$(dirname "$0")"
(cd e2e && npm ci --no-audit --no-fund --loglevel=error)
go test -race -count=1 ./... "$@"
# The Kubernetes manifests and the Dockerfile, checked in a module of their
# own so that the main module does not depend on k8s.io/api.
(cd deploy/kubernetes && go test -count=1 ./...)
