package queuemaxpg_test

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// pgNames are the names by which a test of the core module reaches the
// PostgreSQL store that only this module links in.
var pgNames = []string{"pgTestDSN", "newPGTarget", "pgTarget", "PGTestConfigs", "pgStore", "childConfig", "pgEnv", "pgHook"}

// TestOverlaid runs the PostgreSQL cases of packages of the core module
// (github.com/queuemax/queuemax), which requires no PostgreSQL driver: go
// test -overlay adds the files of testdata/<dir> to the package, which link
// this module's store in and hold its PostgreSQL-only tests, and runs the
// tests that reach the store (see pgNames), SQLite cases included.
// QUEUEMAX_OVERLAY_FLAGS adds go test flags (-race, say).
func TestOverlaid(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command:", err)
	}
	for _, p := range []struct{ dir, pkg string }{
		{"rootpkg", "github.com/queuemax/queuemax"},
		{"queuemaxtest", "github.com/queuemax/queuemax/queuemaxtest"},
	} {
		t.Run(p.dir, func(t *testing.T) {
			out, err := exec.Command(goBin, "list", "-f", "{{.Dir}}", p.pkg).Output()
			if err != nil {
				t.Fatalf("go list %s: %v", p.pkg, err)
			}
			pkgDir := strings.TrimSpace(string(out))
			added, err := filepath.Glob(filepath.Join("testdata", p.dir, "*.go"))
			if err != nil || len(added) == 0 {
				t.Fatalf("testdata/%s: %v (no files)", p.dir, err)
			}
			replace := map[string]string{}
			for _, f := range added {
				abs, _ := filepath.Abs(f)
				replace[filepath.Join(pkgDir, filepath.Base(f))] = abs
			}
			ov, _ := json.Marshal(map[string]any{"Replace": replace})
			ovFile := filepath.Join(t.TempDir(), "overlay.json")
			if err := os.WriteFile(ovFile, ov, 0o644); err != nil {
				t.Fatal(err)
			}
			own, _ := filepath.Glob(filepath.Join(pkgDir, "*_test.go"))
			tests := pgTests(t, own, added)
			if len(tests) == 0 {
				t.Fatalf("no test of %s reaches the PostgreSQL store", p.pkg)
			}
			args := []string{"test", "-overlay", ovFile, "-count=1", "-timeout", "20m", "-run", "^(" + strings.Join(tests, "|") + ")$"}
			if testing.Short() {
				args = append(args, "-short")
			}
			args = append(args, strings.Fields(os.Getenv("QUEUEMAX_OVERLAY_FLAGS"))...)
			cmd := exec.CommandContext(t.Context(), goBin, append(args, p.pkg)...)
			res, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("go test of %d tests of %s with the PostgreSQL store: %v\n%s", len(tests), p.pkg, err, res)
			}
			t.Logf("%d tests of %s with the PostgreSQL store: %s", len(tests), p.pkg, strings.TrimSpace(string(res)))
		})
	}
}

// pgTests returns the Test and Example functions of own that reach one of
// pgNames, directly or through the package's other functions, and every
// one of added.
func pgTests(t *testing.T, own, added []string) []string {
	fset := token.NewFileSet()
	uses := map[string][]string{} // function (or method) name -> names it mentions
	var tests []string
	for _, f := range append(slices.Clone(own), added...) {
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range file.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok {
				continue
			}
			name := fd.Name.Name
			ast.Inspect(fd, func(n ast.Node) bool {
				if id, ok := n.(*ast.Ident); ok && id.Name != name {
					uses[name] = append(uses[name], id.Name)
				}
				return true
			})
			if fd.Recv == nil && (strings.HasPrefix(name, "Test") || strings.HasPrefix(name, "Example")) {
				if slices.Contains(added, f) {
					uses[name] = append(uses[name], pgNames[0])
				}
				tests = append(tests, name)
			}
		}
	}
	reach := map[string]bool{}
	for _, n := range pgNames {
		reach[n] = true
	}
	for changed := true; changed; {
		changed = false
		for fn, names := range uses {
			if !reach[fn] && slices.ContainsFunc(names, func(n string) bool { return reach[n] }) {
				reach[fn], changed = true, true
			}
		}
	}
	var out []string
	for _, name := range tests {
		if reach[name] && name != "TestMain" {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
