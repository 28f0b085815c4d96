package repomod

import (
	"archive/zip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for name, body := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

var sample = map[string]string{
	"internal/faults/go.mod": "module example.com/x/internal/faults\n\ngo 1.26.0\n\nrequire example.com/x v0.5.0\n",
	"go.work":                "go 1.26.0\n\nuse (\n\t.\n\t./sub\n\t./internal/faults\n)\n",
	"go.mod":                 "module example.com/x\n\ngo 1.26.0\n",
	"x.go":                   "package x\n",
	".gitignore":             "*.out\n",
	"build.out":              "ignored build output\n",
	"sub/go.mod":             "module example.com/x/sub\n\ngo 1.26.0\n\n// release: unpublished (a test)\n\nrequire example.com/x v0.5.0\n",
	"sub/sub.go":             "package sub\n",
	"testdata/go.mod":        "module example.com/fixture\n",
}

func zipNames(t *testing.T, p string) []string {
	t.Helper()
	zr, err := zip.OpenReader(p)
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	var names []string
	for _, f := range zr.File {
		names = append(names, f.Name)
	}
	slices.Sort(names)
	return names
}

func TestLoad_VersionAndTags(t *testing.T) {
	t.Parallel()
	r, err := Load(writeTree(t, sample))
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Modules) != 3 || r.Modules[0].Tag("v0.5.0") != "v0.5.0" || r.Modules[1].Tag("v0.5.0") != "sub/v0.5.0" {
		t.Fatalf("modules %+v", r.Modules)
	}
	if !r.Modules[0].Published || r.Modules[1].Published || !r.Modules[2].Published {
		t.Errorf("published: %v %v %v, want true false true (only the marked one is unpublished)", r.Modules[0].Published, r.Modules[1].Published, r.Modules[2].Published)
	}
	if v, err := r.Version(); v != "v0.5.0" || err != nil {
		t.Errorf("Version() = %q, %v", v, err)
	}
}

func TestVersion_Rejects(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]struct{ file, body, want string }{
		"patch-level go":       {"sub/go.mod", "module example.com/x/sub\n\ngo 1.26.8\n\nrequire example.com/x v0.5.0\n", "go 1.26.8"},
		"requires unpublished": {"go.mod", "module example.com/x\n\ngo 1.26.0\n\nrequire example.com/x/sub v0.5.0\n", "requires example.com/x/sub, which is unpublished"},
		"disagree":             {"internal/faults/go.mod", "module example.com/x/internal/faults\n\ngo 1.26.0\n\nrequire example.com/x v0.4.0\n", "requires example.com/x at v0.4.0"},
	} {
		files := map[string]string{}
		for k, v := range sample {
			files[k] = v
		}
		files[c.file] = c.body
		r, err := Load(writeTree(t, files))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.Version(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: Version() error %v, want one containing %q", name, err, c.want)
		}
	}
}

func TestWriteProxy(t *testing.T) {
	t.Parallel()
	for _, git := range []bool{false, true} {
		root := writeTree(t, sample)
		if git {
			if _, err := exec.LookPath("git"); err != nil {
				t.Skip("no git")
			}
			cmd := exec.Command("git", "init", "-q")
			cmd.Dir = root
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("git init: %v\n%s", err, out)
			}
		}
		r, err := Load(root)
		if err != nil {
			t.Fatal(err)
		}
		proxy := t.TempDir()
		if err := r.WriteProxy(proxy, "v0.5.0", nil); err != nil {
			t.Fatal(err)
		}
		list, err := os.ReadFile(filepath.Join(proxy, "example.com", "x", "@v", "list"))
		if err != nil || string(list) != "v0.5.0\n" {
			t.Errorf("list = %q, %v", list, err)
		}
		want := []string{"example.com/x@v0.5.0/.gitignore", "example.com/x@v0.5.0/go.mod", "example.com/x@v0.5.0/go.work", "example.com/x@v0.5.0/x.go"}
		if !git {
			// Without git every file of the directory goes in.
			want = []string{"example.com/x@v0.5.0/.gitignore", "example.com/x@v0.5.0/build.out", "example.com/x@v0.5.0/go.mod", "example.com/x@v0.5.0/go.work", "example.com/x@v0.5.0/x.go"}
		}
		if got := zipNames(t, filepath.Join(proxy, "example.com", "x", "@v", "v0.5.0.zip")); !slices.Equal(got, want) {
			t.Errorf("git %v: root zip holds %q, want %q (no sub/, no testdata/; go.work goes in, as in a zip the proxy makes from the tag)", git, got, want)
		}
		if got := zipNames(t, filepath.Join(proxy, "example.com", "x", "sub", "@v", "v0.5.0.zip")); !slices.Equal(got, []string{"example.com/x/sub@v0.5.0/go.mod", "example.com/x/sub@v0.5.0/sub.go"}) {
			t.Errorf("sub zip holds %q", got)
		}
		mod, _ := os.ReadFile(filepath.Join(proxy, "example.com", "x", "sub", "@v", "v0.5.0.mod"))
		if !strings.Contains(string(mod), "require example.com/x v0.5.0") {
			t.Errorf("sub .mod:\n%s", mod)
		}
	}
}
