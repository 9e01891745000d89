#!/usr/bin/env bash
# Runs every test of mcp-gate: installs the pinned reference servers the
# end-to-end tests use (e2e/package-lock.json), then the whole Go suite with
# the race detector. This is the README's test command; .ci/run calls it.
set -euo pipefail
cd "$(dirname "$0")"
(cd e2e && npm ci --no-audit --no-fund --loglevel=error)
# The end-to-end package alone ran for 9-10 minutes on two cores under
# the race detector, its tests one after another (about 2.5 now): the
# timeout stays past go test's default of 10 minutes per package, which
# would fail it for being slow rather than wrong.
# -parallel 4: the end-to-end tests mostly wait (on processes, timeouts,
# simulated humans), so four at a time on two cores (the default is
# GOMAXPROCS) shortens the package: measured with the sequential tests
# skipped, the parallel ones took 78 s with 2, 46-48 s with 4, 30-36 s
# with 8. Eight at once first exposed a latent race (e2e/harness_test.go,
# waitStderr) and pass since, but would save 15 s for twice the load
# beside the tests' time bounds.
go test -race -count=1 -timeout 14m -parallel 4 ./... "$@"
# The allocation tests of the call path skip under the race detector, which
# allocates on its own account: they run once more without it here, so that
# what they hold (docs/design.md, "The wire") is checked where CI runs.
go test -count=1 -run 'Alloc|DoesNotAllocate|TestDecisionIDDigest' ./rpc/ ./proxy/ ./policy/
# The main goroutine's stack as the gate is built, without the race
# detector, whose larger stack guard changes how the runtime sizes it
# (cmd/mcp-gate/internal/mainstack).
go test -count=1 -run 'TestMainStack' ./cmd/mcp-gate/
# The Kubernetes manifests and the Dockerfile, checked in a module of their
# own so that the main module does not depend on k8s.io/api.
(cd deploy/kubernetes && go test -count=1 ./...)
