#!/usr/bin/env bash
# Runs every test of mcp-gate: installs the pinned reference servers the
# end-to-end tests use (e2e/package-lock.json), then the whole Go suite with
# the race detector. This is the README's test command; .ci/run calls it.
set -euo pipefail
cd "$(dirname "$0")"
(cd e2e && npm ci --no-audit --no-fund --loglevel=error)
# The end-to-end package alone runs for 9-10 minutes on two cores under
# the race detector: past go test's default timeout of 10 minutes per
# package, which would fail it for being slow rather than wrong.
go test -race -count=1 -timeout 14m ./... "$@"
# The Kubernetes manifests and the Dockerfile, checked in a module of their
# own so that the main module does not depend on k8s.io/api.
(cd deploy/kubernetes && go test -count=1 ./...)
