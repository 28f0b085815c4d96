# queuemax — make targets. Only Go is needed.
GO ?= go
PKGS := ./...

.PHONY: all test check-size test-short vet lint fmt generate check-generated golden demo bench bench-pg bench-go clean

all: test

## test: vet, check formatting, generated files and tracked-file sizes, then run every test with -race and -shuffle
test: lint check-generated check-size
	$(GO) test -race -shuffle=on -timeout 20m $(PKGS)

## test-short: the quick run (smaller volume tests, no race detector)
test-short:
	$(GO) test -short $(PKGS)

## vet: go vet over the module and the golden test cases
vet:
	$(GO) vet $(PKGS)
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
