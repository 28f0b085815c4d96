package gen

import (
	"bytes"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite golden files")

// goldenDir holds one case per directory: input .go files plus the
// expected queuemax_gen.go or errors.golden. Cases whose input does not
// compile live under _broken/, which go vet ./testdata/golden/... skips.
const goldenDir = "../testdata/golden"

const refresh = "go test ./gen -run TestGolden -update"

// tempModuleCases run in a copy of their directory inside a temporary
// module, so that the generated file on disk can be stale or missing while
// the expected one stays in the case directory. The value names the file
// copied in as queuemax_gen.go ("" for none). Their inputs set name= on
// every task because the temporary module has another import path.
var tempModuleCases = map[string]string{
	"stale_generated_file":   "queuemax_gen.go.stale",
	"missing_generated_file": "",
}

// goldenCases returns the case directories relative to goldenDir.
func goldenCases(t *testing.T) []string {
	t.Helper()
	var cases []string
	for _, sub := range []string{".", "_broken"} {
		entries, err := os.ReadDir(filepath.Join(goldenDir, sub))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if e.IsDir() && e.Name() != "_broken" {
				cases = append(cases, filepath.ToSlash(filepath.Join(sub, e.Name())))
			}
		}
	}
	return cases
}

func TestGolden(t *testing.T) {
	t.Parallel()
	cases := goldenCases(t)
	dir, err := filepath.Abs(goldenDir)
	if err != nil {
		t.Fatal(err)
	}
	// Load every in-module case at once: go/packages pays for the go
	// command once, not once per case.
	var patterns []string
	for _, c := range cases {
		if _, ok := tempModuleCases[c]; !ok {
			patterns = append(patterns, "./"+c)
		}
	}
	results, err := generate(t.Context(), Config{Dir: dir, Patterns: patterns})
	if err != nil {
		t.Fatalf("generate: %v", err)
	}
	byDir := map[string]pkgResult{}
	for _, r := range results {
		byDir[r.Dir] = r
	}
	for _, c := range cases {
		t.Run(c, func(t *testing.T) {
			t.Parallel()
			caseDir := filepath.Join(dir, filepath.FromSlash(c))
			if stale, ok := tempModuleCases[c]; ok {
				r := generateInTempModule(t, caseDir, stale)
				checkGolden(t, caseDir, r.dir, r.result)
				return
			}
			r, ok := byDir[caseDir]
			if !ok {
				t.Fatalf("no package loaded from %s", caseDir)
			}
			checkGolden(t, caseDir, caseDir, r)
		})
	}
}

// checkGolden compares one result with the case's expected files. Errors
// are compared with paths relative to workDir, the directory the case ran
// in.
func checkGolden(t *testing.T, caseDir, workDir string, r pkgResult) {
	t.Helper()
	genPath := filepath.Join(caseDir, FileName)
	errPath := filepath.Join(caseDir, "errors.golden")
	var got []byte
	var want, stale string
	if len(r.Errs) > 0 {
		var b strings.Builder
		for _, e := range relative(r.Errs, workDir) {
			// Messages of the go command may hold absolute paths.
			b.WriteString(strings.ReplaceAll(e.Error(), workDir, "$WORK") + "\n")
		}
		got = []byte(b.String())
		want, stale = errPath, genPath
	} else {
		if r.File == nil {
			t.Fatalf("no file generated and no errors")
		}
		got = r.File.Content
		want, stale = genPath, errPath
	}
	if *update {
		if err := os.WriteFile(want, got, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Remove(stale); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		return
	}
	if _, err := os.Stat(stale); err == nil {
		t.Errorf("%s exists, but the case produced %s; run %s", filepath.Base(stale), filepath.Base(want), refresh)
	}
	wantBytes, err := os.ReadFile(want)
	if err != nil {
		t.Fatalf("%v; run %s", err, refresh)
	}
	if diff := cmp.Diff(string(wantBytes), string(got)); diff != "" {
		t.Errorf("%s mismatch (-want +got):\n%s\nrun %s", filepath.Base(want), diff, refresh)
	}
}

type tempResult struct {
	dir    string
	result pkgResult
}

// generateInTempModule copies the case's input into a module of its own
// that requires this one, writes stale (a file of the case) as the
// package's queuemax_gen.go unless stale is empty, and generates twice:
// the second run, with the first output on disk, must give the same bytes.
func generateInTempModule(t *testing.T, caseDir, stale string) tempResult {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	gomod := "module example.com/golden/" + filepath.Base(caseDir) + "\n\ngo 1.26\n\n" +
		"require github.com/queuemax/queuemax v0.0.0-00010101000000-000000000000\n\n" +
		"replace github.com/queuemax/queuemax => " + root + "\n"
	writeFile(t, filepath.Join(work, "go.mod"), []byte(gomod))
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(work, "go.sum"), sum)
	entries, err := os.ReadDir(caseDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".go") || e.Name() == FileName {
			continue
		}
		src, err := os.ReadFile(filepath.Join(caseDir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(work, e.Name()), src)
	}
	genPath := filepath.Join(work, FileName)
	if stale != "" {
		src, err := os.ReadFile(filepath.Join(caseDir, stale))
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, genPath, src)
	}
	cfg := Config{Dir: work, Env: append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")}
	first, err := generate(t.Context(), cfg)
	if err != nil {
		t.Fatalf("generate: %v", err)
	}
	if len(first) != 1 {
		t.Fatalf("generate returned %d packages, want 1", len(first))
	}
	r := first[0]
	if r.File == nil || len(r.Errs) > 0 {
		return tempResult{dir: work, result: r}
	}
	if r.File.Path != genPath {
		t.Errorf("File.Path = %s, want %s", r.File.Path, genPath)
	}
	writeFile(t, genPath, r.File.Content)
	second, err := generate(t.Context(), cfg)
	if err != nil {
		t.Fatalf("second generate: %v", err)
	}
	if len(second) != 1 || second[0].File == nil {
		t.Fatalf("second generate: %+v", second)
	}
	if !bytes.Equal(r.File.Content, second[0].File.Content) {
		t.Errorf("second run with the first output present differs (-first +second):\n%s", cmp.Diff(string(r.File.Content), string(second[0].File.Content)))
	}
	// The written package must now build.
	cmd := exec.CommandContext(t.Context(), "go", "vet", ".")
	cmd.Dir = work
	cmd.Env = cfg.Env
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("go vet of the generated package: %v\n%s", err, out)
	}
	return tempResult{dir: work, result: r}
}

func writeFile(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestGoldenCompiles vets the golden cases with their expected output, as
// CI does: each generated file must compile against the root package.
func TestGoldenCompiles(t *testing.T) {
	if testing.Short() || *update {
		t.Skip("runs go vet")
	}
	t.Parallel()
	cmd := exec.CommandContext(t.Context(), "go", "vet", "./testdata/golden/...")
	cmd.Dir = ".."
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("go vet ./testdata/golden/...: %v\n%s", err, out)
	}
}
