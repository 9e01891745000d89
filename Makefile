# Builds of mcp-gate. `make dist` cross-compiles the release binaries:
# static (CGO_ENABLED=0: no libc, no loader on Linux; on macOS only the
# system's own libraries, which every Mac has) and reproducible
# (-trimpath, no build id), one per OS and architecture below.
# cmd/mcp-gate/dist_test.go builds the same PLATFORMS with the same flags
# and checks each binary's headers.

VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
PLATFORMS := linux/amd64 linux/arm64 darwin/amd64 darwin/arm64
DIST      ?= dist
LDFLAGS   := -s -w -buildid= -X main.version=$(VERSION)

.PHONY: build install dist test clean

build:
	CGO_ENABLED=0 go build -trimpath -ldflags "$(LDFLAGS)" -o mcp-gate ./cmd/mcp-gate

install:
	CGO_ENABLED=0 go install -trimpath -ldflags "$(LDFLAGS)" ./cmd/mcp-gate

dist:
	@mkdir -p $(DIST)
	@for p in $(PLATFORMS); do \
		os=$${p%/*}; arch=$${p#*/}; \
		echo "$(DIST)/mcp-gate-$(VERSION)-$$os-$$arch"; \
		CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch go build -trimpath -ldflags "$(LDFLAGS)" \
			-o $(DIST)/mcp-gate-$(VERSION)-$$os-$$arch ./cmd/mcp-gate || exit 1; \
	done

test:
	./test.sh

clean:
	rm -rf $(DIST) mcp-gate
