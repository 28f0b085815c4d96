package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// tree writes files (slash paths relative to the returned root).
func tree(t *testing.T, files map[string]string) string {
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

func read(t *testing.T, root, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(name)))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

const changelog = `# Changelog

## [Unreleased]

### Added
- A thing.

## [0.4.0] - 2026-01-01

### Added
- The start.

[unreleased]: https://github.com/ex/ample/compare/v0.4.0...HEAD
[0.4.0]: https://github.com/ex/ample/releases/tag/v0.4.0
`

func sampleTree(t *testing.T) string {
	return tree(t, map[string]string{
		"go.work": "go 1.26.0\n\nuse (\n\t.\n\t./prom\n\t./cmd/tool\n\t./browser\n)\n\nreplace example.com/x/other v1.0.0 => ../other\n",
		"go.mod":  "module example.com/x\n\ngo 1.26.0\n\nrequire golang.org/x/mod v0.42.0\n",
		"prom/go.mod": "module example.com/x/prom\n\ngo 1.26.0\n\nrequire (\n\texample.com/x v0.0.0-00010101000000-000000000000\n" +
			"\tgolang.org/x/text v0.42.0 // indirect\n)\n\n// The library is developed here.\nreplace example.com/x => ..\n",
		"cmd/tool/go.mod":     "module example.com/x/cmd/tool\n\ngo 1.26.0\n\nrequire example.com/x v0.4.0\n\nrequire example.com/x/prom v0.4.0\n",
		"browser/go.mod":      "module example.com/x/browser\n\ngo 1.26.0\n\n// release: unpublished (tests only)\n\nrequire example.com/x v0.4.0\n",
		"CHANGELOG.md":        changelog,
		"testdata/mod/go.mod": "module example.com/ignored\n",
	})
}

func TestPrepare_RewritesRequirementsWorkAndChangelog(t *testing.T) {
	t.Parallel()
	root := sampleTree(t)
	changed, err := Prepare(root, "v0.5.0", "2026-12-03")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"prom/go.mod", "cmd/tool/go.mod", "browser/go.mod", "go.work", "CHANGELOG.md"}
	if !reflect.DeepEqual(changed, want) {
		t.Errorf("changed %q, want %q", changed, want)
	}
	prom := read(t, root, "prom/go.mod")
	if strings.Contains(prom, "replace") || strings.Contains(prom, "developed here") || !strings.Contains(prom, "example.com/x v0.5.0") ||
		!strings.Contains(prom, "golang.org/x/text v0.42.0 // indirect") {
		t.Errorf("prom/go.mod:\n%s", prom)
	}
	tool := read(t, root, "cmd/tool/go.mod")
	if !strings.Contains(tool, "example.com/x v0.5.0") || !strings.Contains(tool, "example.com/x/prom v0.5.0") {
		t.Errorf("cmd/tool/go.mod:\n%s", tool)
	}
	if b := read(t, root, "browser/go.mod"); !strings.Contains(b, "// release: unpublished (tests only)") {
		t.Errorf("browser/go.mod lost its marker:\n%s", b)
	}
	if root := read(t, root, "go.mod"); !strings.Contains(root, "golang.org/x/mod v0.42.0") {
		t.Errorf("go.mod:\n%s", root)
	}
	work := read(t, root, "go.work")
	for _, line := range []string{
		"example.com/x v0.5.0 => ./", "example.com/x/prom v0.5.0 => ./prom",
		"example.com/x/cmd/tool v0.5.0 => ./cmd/tool", "example.com/x/browser v0.5.0 => ./browser",
		"example.com/x/other v1.0.0 => ../other",
	} {
		if !strings.Contains(work, line) {
			t.Errorf("go.work lacks %q:\n%s", line, work)
		}
	}
	cl := read(t, root, "CHANGELOG.md")
	wantCL := strings.NewReplacer(
		"## [Unreleased]\n", "## [Unreleased]\n\n## [0.5.0] - 2026-12-03\n",
		"[unreleased]: https://github.com/ex/ample/compare/v0.4.0...HEAD\n",
		"[unreleased]: https://github.com/ex/ample/compare/v0.5.0...HEAD\n[0.5.0]: https://github.com/ex/ample/compare/v0.4.0...v0.5.0\n",
	).Replace(changelog)
	if cl != wantCL {
		t.Errorf("CHANGELOG.md:\n%s\nwant:\n%s", cl, wantCL)
	}

	_, tags, err := Tags(root, "v0.5.0")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tg := range tags {
		names = append(names, tg.Name)
	}
	if want := []string{"v0.5.0", "prom/v0.5.0", "cmd/tool/v0.5.0"}; !reflect.DeepEqual(names, want) {
		t.Errorf("tags %q, want %q (browser is unpublished)", names, want)
	}

	// A second run changes nothing.
	changed, err = Prepare(root, "v0.5.0", "2026-12-04")
	if err != nil || len(changed) != 0 {
		t.Errorf("second run: changed %q, err %v", changed, err)
	}
	// The next release moves on from this one.
	if _, err := Prepare(root, "v0.6.0", "2027-01-01"); err == nil {
		t.Error("v0.6.0 with nothing under Unreleased: no error")
	}
}

func TestPrepare_Rejects(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]struct {
		version string
		edit    map[string]string
		want    string
	}{
		"no version":            {"", nil, "no version"},
		"not canonical":         {"v0.5", nil, "not a canonical"},
		"major v2":              {"v2.0.0", nil, "/v2"},
		"foreign replace":       {"v0.5.0", map[string]string{"go.mod": "module example.com/x\n\ngo 1.26.0\n\nreplace golang.org/x/mod => ../mod\n"}, "replaces golang.org/x/mod"},
		"module not in go.work": {"v0.5.0", map[string]string{"extra/go.mod": "module example.com/x/extra\n"}, "does not use the module(s) in extra"},
		"no unreleased":         {"v0.5.0", map[string]string{"CHANGELOG.md": "# Changelog\n"}, "no \"## [Unreleased]\""},
		"nothing to release":    {"v0.5.0", map[string]string{"CHANGELOG.md": "# Changelog\n\n## [Unreleased]\n\n## [0.4.0] - 2026-01-01\n- x\n"}, "nothing under"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			root := sampleTree(t)
			for f, body := range c.edit {
				if err := os.MkdirAll(filepath.Dir(filepath.Join(root, f)), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(root, f), []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			work, prom := read(t, root, "go.work"), read(t, root, "prom/go.mod")
			_, err := Prepare(root, c.version, "2026-12-03")
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err = %v, want one containing %q", err, c.want)
			}
			if read(t, root, "go.work") != work || read(t, root, "prom/go.mod") != prom {
				t.Error("a failed Prepare changed files")
			}
		})
	}
}

func TestTags_InconsistentRequirements(t *testing.T) {
	t.Parallel()
	root := sampleTree(t)
	if _, _, err := Tags(root, "v0.5.0"); err == nil || !strings.Contains(err.Error(), "pseudo-version") {
		t.Errorf("before Prepare: err = %v, want the pseudo-version named", err)
	}
}

func TestRun_PrintsTagsWithoutBuilding(t *testing.T) {
	t.Parallel()
	root := sampleTree(t)
	var out bytes.Buffer
	if err := run(&out, options{root: root, version: "v0.5.0", date: "2026-12-03"}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"updated go.work", "  v0.5.0\n", "  prom/v0.5.0\n", "  cmd/tool/v0.5.0\n", "git push origin v0.5.0 prom/v0.5.0 cmd/tool/v0.5.0"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "browser/v0.5.0") {
		t.Errorf("output tags the unpublished module:\n%s", out.String())
	}
}

func TestRun_Tag(t *testing.T) { // not parallel: it sets git's identity in the environment
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	root := sampleTree(t)
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.com"}, args...)...)
		cmd.Dir = root
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	git("init", "-q")
	git("add", ".")
	git("commit", "-q", "-m", "before")
	o := options{root: root, version: "v0.5.0", date: "2026-12-03", tag: true}
	var out bytes.Buffer
	if err := run(&out, o); err == nil || !strings.Contains(err.Error(), "uncommitted changes") {
		t.Fatalf("tagging with the rewritten files uncommitted: err %v", err)
	}
	if tags := git("tag"); tags != "" {
		t.Fatalf("tags created from a dirty tree: %q", tags)
	}
	git("commit", "-q", "-am", "release v0.5.0")
	// -tag needs git's identity for annotated tags.
	t.Setenv("GIT_COMMITTER_NAME", "t")
	t.Setenv("GIT_COMMITTER_EMAIL", "t@example.com")
	out.Reset()
	if err := run(&out, o); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if tags := strings.Fields(git("tag")); !reflect.DeepEqual(tags, []string{"cmd/tool/v0.5.0", "prom/v0.5.0", "v0.5.0"}) {
		t.Errorf("tags %q", tags)
	}
}
