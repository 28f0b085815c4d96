package installtest

import (
	"bytes"
	"encoding/json"
	goversion "go/version"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/queuemax/queuemax/internal/repomod"
)

const core = "github.com/queuemax/queuemax"

// addons is what the test builds against each add-on module: a tiny
// program in a fresh module after the README's go get of the module. A
// row whose module is not (yet) in go.work is skipped; a published module
// with no row here and not in notInstalled fails the test.
var addons = []struct{ path, program string }{
	{core + "/queuemaxprom", `package main

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/queuemax/queuemax/queuemaxprom"
)

func main() {
	reg := prometheus.NewRegistry()
	reg.MustRegister(queuemaxprom.NewCollector(queuemaxprom.Options{}))
	fmt.Println("ok")
}
`},
	{core + "/queuemaxotel", `package main

import (
	"fmt"

	"github.com/queuemax/queuemax/queuemaxotel"
)

func main() {
	if _, err := queuemaxotel.NewMiddleware(queuemaxotel.Options{}); err != nil {
		panic(err)
	}
	fmt.Println("ok")
}
`},
	// The PostgreSQL store's module, once it exists (branch seam).
	{core + "/queuemaxpg", `package main

import (
	"fmt"

	"github.com/queuemax/queuemax/queuemaxpg"
)

func main() {
	_ = queuemaxpg.Open
	fmt.Println("ok")
}
`},
}

// notInstalled are the published modules this test does not install,
// with the reason. Modules below internal/ (test helpers that a published
// module may require) are not installed either: nobody imports them.
var notInstalled = map[string]string{
	core + "/cmd/queuemax-bench":  "the benchmark, run from a clone (make bench)",
	core + "/examples/httpserver": "an example, run from a clone",
}

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// coreGoVersion returns the language version of the core's go directive,
// such as "1.26".
func coreGoVersion(t *testing.T, root string) string {
	t.Helper()
	r, err := repomod.Load(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range r.Modules {
		if m.Dir == "." && m.File.Go != nil {
			return strings.TrimPrefix(goversion.Lang("go"+m.File.Go.Version), "go")
		}
	}
	t.Fatal("go.mod has no go directive")
	return ""
}

// env is the environment of a user outside the repository: no workspace,
// a fresh module cache, the test's proxy in front of the usual ones.
type env struct {
	t     *testing.T
	goBin string // the go command of the toolchain running this test
	gobin string // where go install puts programs
	vars  []string
}

// run runs a command in dir and returns its standard output. name "go" is
// the go command; a name without a directory is looked up in GOBIN.
func (e *env) run(dir string, name string, args ...string) string {
	e.t.Helper()
	switch {
	case name == "go":
		name = e.goBin
	case !strings.ContainsRune(name, filepath.Separator):
		name = filepath.Join(e.gobin, name)
		if runtime.GOOS == "windows" {
			name += ".exe"
		}
	}
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = e.vars
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	start := time.Now()
	err := cmd.Run()
	e.t.Logf("%s: %s %s (%v)", filepath.Base(dir), filepath.Base(name), strings.Join(args, " "), time.Since(start).Round(time.Millisecond))
	if err != nil {
		e.t.Fatalf("in %s: %s %s: %v\n%s%s", dir, name, strings.Join(args, " "), err, out.String(), errOut.String())
	}
	return out.String()
}

// line runs one README command (go ...) in dir.
func (e *env) line(dir, line string) {
	e.t.Helper()
	f := strings.Fields(line)
	e.run(dir, "go", f[1:]...)
}

// module makes a fresh module in a new directory, at the oldest Go the
// core supports, so that a go get that raises the go line shows.
func (e *env) module(name, goVersion string) string {
	e.t.Helper()
	dir := filepath.Join(e.t.TempDir(), name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		e.t.Fatal(err)
	}
	e.run(dir, "go", "mod", "init", "example.com/"+name)
	e.run(dir, "go", "mod", "edit", "-go="+goVersion)
	return dir
}

func (e *env) checkGoLine(dir, goVersion string) {
	e.t.Helper()
	var mf struct{ Go string }
	if err := json.Unmarshal([]byte(e.run(dir, "go", "mod", "edit", "-json")), &mf); err != nil {
		e.t.Fatal(err)
	}
	if mf.Go != goVersion {
		e.t.Errorf("%s/go.mod: go %s after the README's commands, want %s unchanged", filepath.Base(dir), mf.Go, goVersion)
	}
}

func write(t *testing.T, dir, name, body string) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// newEnv builds the proxy and the environment. The module cache is new
// (in t.TempDir); GOFLAGS=-trimpath keeps the directories of the packages
// out of the build cache's keys, so the third-party packages compiled by an
// earlier run, from any directory, are reused (and -modcacherw lets the
// test's cleanup remove the cache).
func newEnv(t *testing.T, r *repomod.Repo, version string) *env {
	t.Helper()
	goroot, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		t.Skipf("no go command: %v", err)
	}
	goBin := filepath.Join(strings.TrimSpace(string(goroot)), "bin", "go")
	if runtime.GOOS == "windows" {
		goBin += ".exe"
	}
	get := func(name string) string {
		out, err := exec.Command(goBin, "env", name).Output()
		if err != nil {
			t.Fatalf("go env %s: %v", name, err)
		}
		return strings.TrimSpace(string(out))
	}
	realCache, upstream, gocache := get("GOMODCACHE"), get("GOPROXY"), get("GOCACHE")

	proxy := filepath.Join(t.TempDir(), "proxy")
	if err := r.WriteProxy(proxy, version, func(m repomod.Module) bool { return m.Published }); err != nil {
		t.Fatal(err)
	}
	gopath := filepath.Join(t.TempDir(), "gopath")
	modcache := filepath.Join(gopath, "pkg", "mod")
	gobin := filepath.Join(t.TempDir(), "bin")

	vars := []string{
		"HOME=" + os.Getenv("HOME"),
		"PATH=" + gobin + string(os.PathListSeparator) + filepath.Dir(goBin) + string(os.PathListSeparator) + os.Getenv("PATH"),
		"GOROOT=" + filepath.Dir(filepath.Dir(goBin)),
		"GOTOOLCHAIN=local",
		"GOWORK=off",
		"GOFLAGS=-trimpath -modcacherw",
		"GOPATH=" + gopath,
		"GOMODCACHE=" + modcache,
		"GOBIN=" + gobin,
		"GOCACHE=" + gocache,
		// Ours first, then the modules already downloaded here, then
		// the usual proxies for any third-party module missing.
		"GOPROXY=" + fileURL(proxy) + "," + fileURL(filepath.Join(realCache, "cache", "download")) + "," + upstream,
		// Our modules are on no checksum database (yet); every other
		// module is checked as usual.
		"GONOSUMDB=" + core,
		"GOENV=off",
		"CGO_ENABLED=" + get("CGO_ENABLED"),
	}
	for _, k := range []string{"TMPDIR", "SYSTEMROOT", "LOCALAPPDATA", "APPDATA", "USERPROFILE", "XDG_CACHE_HOME", "GOSUMDB", "GOPRIVATE", "GOINSECURE", "GONOPROXY", "CC"} {
		if v, ok := os.LookupEnv(k); ok {
			vars = append(vars, k+"="+v)
		}
	}
	e := &env{t: t, goBin: goBin, gobin: gobin, vars: vars}
	if err := os.MkdirAll(gobin, 0o755); err != nil {
		t.Fatal(err)
	}
	return e
}

func fileURL(dir string) string {
	dir = filepath.ToSlash(dir)
	if !strings.HasPrefix(dir, "/") {
		dir = "/" + dir // C:/x on Windows
	}
	return "file://" + dir
}

const tasksFile = `// Package tasks is the install test's annotated package.
package tasks

//go:generate go tool queuemax-gen

import (
	"context"
	"strings"
)

// Greet greets name.
//
//queuemax:task retries=1 timeout=30s
func Greet(ctx context.Context, name string) (string, error) {
	return "hello " + strings.ToLower(name), nil
}
`

const mainFile = `package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/queuemax/queuemax"

	"example.com/app/tasks"
)

func main() {
	if err := run(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "app:", err)
		os.Exit(1)
	}
}

func run(dir string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := queuemax.Open(ctx, queuemax.Config{Dir: dir, Handlers: tasks.Handlers()})
	if err != nil {
		return err
	}
	defer c.Close()
	t := tasks.New(c)
	id, err := t.Greet.Delay(ctx, "World")
	if err != nil {
		return err
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- c.Run(runCtx) }()
	if err := c.WaitUntilEmpty(ctx); err != nil {
		return err
	}
	stop()
	if err := <-done; err != nil {
		return err
	}
	greeting, err := t.Greet.Result(ctx, id)
	if err != nil {
		return err
	}
	fmt.Println(greeting)
	return nil
}
`

// TestInstall installs the working tree's modules as a user would (see
// the package doc) with the exact commands of the README's Install
// section, and fails on any command of that section it does not run.
func TestInstall(t *testing.T) {
	if testing.Short() {
		t.Skip("installs every module through a file proxy (a minute or two); not with -short")
	}
	root := repoRoot(t)
	r, err := repomod.Load(root)
	if err != nil {
		t.Fatal(err)
	}
	version, err := r.Version()
	if err != nil {
		t.Fatalf("the go.mod files do not require their siblings at one release version:\n%v", err)
	}
	lines, _, err := installLines(root)
	if err != nil {
		t.Fatal(err)
	}
	byKey := map[string]string{}
	for _, l := range lines {
		byKey[commandKey(l)] = l
	}
	ran := map[string]bool{}
	readme := func(key string) string {
		t.Helper()
		l, ok := byKey[key]
		if !ok {
			t.Fatalf("README's Install section has no %q<@version> command; its commands: %q", key, lines)
		}
		ran[l] = true
		return l
	}
	published := map[string]bool{}
	for _, m := range r.Modules {
		if m.Published {
			published[m.Path] = true
		}
	}
	for _, m := range r.Modules {
		known := m.Path == core || m.Path == core+"/cmd/queuemax" || notInstalled[m.Path] != "" ||
			strings.Contains("/"+m.Dir+"/", "/internal/")
		for _, a := range addons {
			known = known || a.path == m.Path
		}
		if m.Published && !known {
			t.Errorf("published module %s (%s) has no row in this test's addons table, nor a reason in notInstalled", m.Path, m.Dir)
		}
	}
	goVersion := strings.TrimPrefix(goversion.Lang("go"+moduleGo(t, r, core)), "go") + ".0"
	e := newEnv(t, r, version)

	// The core, the generator as a tool, an annotated task generated,
	// built and run to completion.
	app := e.module("app", goVersion)
	e.line(app, readme("go get "+core))
	e.line(app, readme("go get -tool "+core+"/cmd/queuemax-gen"))
	write(t, app, "tasks/tasks.go", tasksFile)
	write(t, app, "main.go", mainFile)
	e.run(app, "go", "generate", "./...")
	if _, err := os.Stat(filepath.Join(app, "tasks", "queuemax_gen.go")); err != nil {
		t.Fatalf("go generate wrote no queuemax_gen.go: %v", err)
	}
	e.run(app, "go", "mod", "tidy")
	e.run(app, "go", "build", "-o", filepath.Join(app, "app.exe"), ".")
	data := filepath.Join(t.TempDir(), "data")
	if out := e.run(app, filepath.Join(app, "app.exe"), data); strings.TrimSpace(out) != "hello world" {
		t.Errorf("the program printed %q, want %q", out, "hello world")
	}
	e.checkGoLine(app, goVersion)

	// The CLI and the generator installed as programs, each run once.
	outside := t.TempDir()
	e.line(outside, readme("go install "+core+"/cmd/queuemax"))
	var st struct{ Completed int64 }
	out := e.run(outside, "queuemax", "--data-dir", data, "stats", "--json")
	if err := json.Unmarshal([]byte(out), &st); err != nil || st.Completed != 1 {
		t.Errorf("queuemax stats --json: completed %d, err %v, want 1 completed job:\n%s", st.Completed, err, out)
	}
	e.line(outside, readme("go install "+core+"/cmd/queuemax-gen"))
	e.run(app, "queuemax-gen", "-check", "./tasks")

	// Each add-on in a fresh module: the README's go get first, then a
	// program that uses it built.
	for _, a := range addons {
		if !r.Sibling(a.path) {
			t.Logf("%s: no such module in go.work yet; skipped", a.path)
			continue
		}
		if !published[a.path] {
			t.Errorf("%s is marked unpublished, but users go get it", a.path)
			continue
		}
		dir := e.module(filepath.Base(a.path), goVersion)
		e.line(dir, readme("go get "+a.path))
		write(t, dir, "main.go", a.program)
		e.run(dir, "go", "mod", "tidy")
		e.run(dir, "go", "build", "-o", filepath.Join(dir, "prog.exe"), ".")
		e.checkGoLine(dir, goVersion)
	}

	for _, l := range lines {
		if !ran[l] {
			t.Errorf("README's Install section gives %q, which this test does not run", l)
		}
	}
}

func moduleGo(t *testing.T, r *repomod.Repo, path string) string {
	t.Helper()
	for _, m := range r.Modules {
		if m.Path == path && m.File.Go != nil {
			return m.File.Go.Version
		}
	}
	t.Fatalf("no go directive for %s", path)
	return ""
}
