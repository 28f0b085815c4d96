# queuemax — make targets. Only Go is needed.
GO ?= go
PKGS := ./...
# The library's module first, then the modules of the integrations, tools and
# browser tests (each has its own go.mod, so importing the library pulls in
# none of their dependencies). Every target below runs over all of them, each
# module on its own (GOWORK=off), as a user's build would see it; go.work
# joins them for go build / go run from the root.
MODULES := . examples/httpserver queuemaxhttp/browsertest queuemaxotel queuemaxprom
# The PostgreSQL store's module, its test modules and the commands that
# import it require their siblings at the zero version without a replace in
# their go.mod: they build with go.work, which resolves them.
WORKMODULES := cmd/queuemax cmd/queuemax-bench queuemaxpg internal/pgtest internal/pgfaults
EACH = set -e; for m in $(MODULES); do echo "== $$m"; (cd $$m && GOWORK=off $(1)); done; \
	for m in $(WORKMODULES); do echo "== $$m (go.work)"; (cd $$m && $(1)); done

.PHONY: all test check-size tidy test-short vet lint fmt generate check-generated golden demo bench bench-pg bench-go clean

all: test

## test: vet, check formatting, generated files and tracked-file sizes, then run every test with -race and -shuffle
test: lint check-generated check-size
	@export QUEUEMAX_OVERLAY_FLAGS="-race -shuffle=on"; $(call EACH,$(GO) test -race -shuffle=on -timeout 30m $(PKGS))
	@echo "== . (global limits: rates and timing bounds, without the race detector)"
	@GOWORK=off $(GO) test -count=1 -timeout 10m -run 'Processes_Global|GlobalLimits_Rate|QueueLimits_?Rate' .
	@echo "== internal/pgfaults (PostgreSQL failover at full size, 10,000 jobs each, without the race detector)"
	@GOWORK=off $(GO) test -count=1 -timeout 10m -run 'TestFailover' ./internal/pgfaults/

## test-short: the quick run (smaller volume tests, no race detector)
test-short:
	@$(call EACH,$(GO) test -short $(PKGS))

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

## tidy: go mod tidy in every module (needs the module proxy)
tidy:
	@$(call EACH,$(GO) mod tidy)

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
