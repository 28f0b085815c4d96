# queuemax — make targets. Only Go is needed.
GO ?= go
PKGS := ./...
# Every module of the repository: go.work's use lines, the library's module
# first (each has its own go.mod, so importing the library pulls in none of
# the add-ons' dependencies). A new module needs only `go work use DIR`
# (and, for the release, the replace line that `make release` writes).
# Every target below runs over all of them, each in its own directory,
# through go.work: the go.mod files require their siblings at the release
# version, which go.work points at these directories, so nothing of ours
# is fetched. How a user outside the repository sees them is what the
# install test (internal/installtest, part of the library's tests) checks.
export GOWORK := $(CURDIR)/go.work
MODULES := $(patsubst $(CURDIR)%,.%,$(shell GOWORK=$(CURDIR)/go.work $(GO) list -m -f '{{.Dir}}'))
EACH = set -e; for m in $(MODULES); do echo "== $$m"; (cd $$m && $(1)); done
# The platforms every module must build for (make cross).
PLATFORMS := linux/amd64 linux/arm64 darwin/arm64 windows/amd64
# The newest Go release CI also builds and runs the short tests with; the
# go command fetches it from the module proxy (make test-newest).
NEWEST_GO := go1.27.3
# The tests of timing bounds (rates within 5%, a job started within 10 s
# behind 2,000 keys at their limit), in . and runtime/engine, which make
# test runs again without the race detector, and make test-newest leaves to it.
DEVNULL := /dev/null
TIMING_TESTS := Processes_Global|GlobalLimits_Rate|QueueLimits_?Rate|LimitBy_ManyKeysAtLimit

.PHONY: all test check-size tidy test-short test-newest vet cross lint fmt generate check-generated golden demo bench bench-pg bench-go release clean

all: test

## test: vet (on every platform), check formatting, generated files and tracked-file sizes, then run every test with -race and -shuffle (the install test included)
test: lint cross check-generated check-size
	@export QUEUEMAX_OVERLAY_FLAGS="-race -shuffle=on"; $(call EACH,$(GO) test -race -shuffle=on -timeout 30m $(PKGS))
	@echo "== . and runtime/engine (global limits: rates and timing bounds, without the race detector)"
	@$(GO) test -count=1 -timeout 10m -run '$(TIMING_TESTS)' . ./runtime/engine
	@echo "== internal/pgfaults (PostgreSQL failover at full size, 10,000 jobs each, without the race detector)"
	@cd internal/pgfaults && $(GO) test -count=1 -timeout 10m -run 'TestFailover' .

## test-short: the quick run (smaller volume tests, no race detector)
test-short:
	@$(call EACH,$(GO) test -short $(PKGS))

## test-newest: on the newest Go release, the library's short tests (less the timing bounds) and a build of every module
test-newest:
	GOTOOLCHAIN=$(NEWEST_GO) $(GO) version
	GOTOOLCHAIN=$(NEWEST_GO) $(GO) test -short -count=1 -skip '$(TIMING_TESTS)' ./...
	@$(call EACH,GOTOOLCHAIN=$(NEWEST_GO) $(GO) build -o $(DEVNULL) ./...)

## cross: go vet every module, tests included, for each of PLATFORMS (linux/amd64 linux/arm64 darwin/arm64 windows/amd64)
cross:
	@set -e; for p in $(PLATFORMS); do for m in $(MODULES); do echo "== $$p $$m"; \
		(cd $$m && GOOS=$${p%/*} GOARCH=$${p#*/} $(GO) vet ./...); done; done

## vet: go vet over the module and the golden test cases
vet:
	@$(call EACH,$(GO) vet $(PKGS))
	$(GO) vet ./testdata/golden/...

## lint: gofmt must be clean, then vet
lint: vet
	@out=$$(gofmt -l $$( (git ls-files '*.go' 2>/dev/null || find . -name '*.go') | grep -v 'testdata/golden/_broken/')); \
	if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi

fmt:
	gofmt -w $$(git ls-files '*.go' | grep -v '^testdata/golden/_broken/')

## check-size: no tracked file may exceed 1 MiB (compiled binaries, data dumps)
check-size:
	@big=$$(git ls-files -z | xargs -0 -r stat -c '%s %n' 2>/dev/null | awk '$$1 > 1048576 {print "  " $$2 " (" $$1 " bytes)"}'); \
	if [ -n "$$big" ]; then echo "tracked files over 1 MiB:"; echo "$$big"; exit 1; fi

## tidy: go mod tidy in every module, each on its own (GOWORK=off), with the siblings served from the working tree (a file proxy, through a scratch module cache) and their checksums kept out of go.sum
TIDY = GOWORK=off GOFLAGS=-mod=mod GOMODCACHE="$$tmp/mod" GONOSUMDB=github.com/queuemax/queuemax \
	GOPROXY="file://$$tmp/proxy$(COMMA)file://$$cache/cache/download$(COMMA)$$upstream" $(GO) mod tidy && \
	{ grep -v '^github.com/queuemax/queuemax[/ ]' go.sum > go.sum.new || true; } && mv go.sum.new go.sum
COMMA := ,
tidy:
	@tmp=$$(mktemp -d) && trap 'chmod -R u+w "$$tmp"; rm -rf "$$tmp"' EXIT && \
	$(GO) run ./internal/release -write-proxy "$$tmp/proxy" && \
	upstream=$$($(GO) env GOPROXY) && cache=$$($(GO) env GOMODCACHE) && $(call EACH,$(TIDY))

## release: prepare the release VERSION (make release VERSION=v0.5.0; RELEASEFLAGS=-skip-tests, -tag): see docs/releasing.md
release:
	$(GO) run ./internal/release -version "$(VERSION)" $(RELEASEFLAGS)

## generate: run the generator over the examples
generate:
	$(GO) generate ./examples/...

## check-generated: the committed generated files must match a fresh go generate
check-generated: generate
	@git diff --exit-code -- examples/ || (echo "examples/: generated files are stale; run make generate and commit"; exit 1)

## golden: rewrite the generator's golden files
golden:
	$(GO) test ./gen -run TestGolden -update

## demo: generate, enqueue and process real tasks on the embedded SQLite runtime
demo:
	$(GO) generate ./examples/tasks
	$(GO) run ./examples/demo

## bench: queue-max's performance table measured against the SQLite floor (see docs/performance.md); BENCHFLAGS='-scale 0.1' for a quick run
bench:
	$(GO) run ./cmd/queuemax-bench $(BENCHFLAGS)

## bench-pg: the same on PostgreSQL against the same-server SQL floor; the server is QUEUE_MAX_DSN (default the local test database)
bench-pg:
	$(GO) run ./cmd/queuemax-bench -store postgres $(BENCHFLAGS)

clean:
	rm -rf data
