package queuemax

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// forbiddenDeps are what the library must not bring to a program or a
// module that imports it: the integrations and the browser tests are
// modules of their own. queuemaxtest imports the root package (and
// "testing"): the reverse would be a cycle and would put test helpers in
// every binary.
var forbiddenDeps = []string{"github.com/prometheus/", "go.opentelemetry.io/", "github.com/chromedp/",
	"github.com/queuemax/queuemax/queuemaxtest"}

func isForbiddenDep(dep string) bool {
	return slices.ContainsFunc(forbiddenDeps, func(f string) bool { return strings.HasPrefix(dep, f) })
}

// goList runs the go command in dir, outside any workspace (as a user's
// module sees this one), and returns the fields of its output.
func goList(t *testing.T, dir string, args ...string) []string {
	t.Helper()
	return goListEnv(t, dir, "GOWORK=off", args...)
}

// goListWork is goList through the repository's go.work, for the modules
// that require the library at its release version, which go.work (and no
// proxy, before the release) serves.
func goListWork(t *testing.T, dir string, args ...string) []string {
	t.Helper()
	work, err := filepath.Abs("go.work")
	if err != nil {
		t.Fatal(err)
	}
	return goListEnv(t, dir, "GOWORK="+work, args...)
}

func goListEnv(t *testing.T, dir, gowork string, args ...string) []string {
	t.Helper()
	goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := exec.LookPath(goBin); err != nil {
		if goBin, err = exec.LookPath("go"); err != nil {
			t.Skip("no go command to run go list")
		}
	}
	cmd := exec.CommandContext(t.Context(), goBin, append([]string{"list"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), gowork)
	out, err := cmd.Output()
	if err != nil {
		msg := ""
		if ee, ok := err.(*exec.ExitError); ok {
			msg = string(ee.Stderr)
		}
		t.Fatalf("go list %s (in %s): %v\n%s", strings.Join(args, " "), dir, err, msg)
	}
	return strings.Fields(string(out))
}

// TestDeps_RootPullsNoTelemetry checks that a program importing only the
// root package compiles neither Prometheus, OpenTelemetry nor chromedp:
// those live in queuemaxprom, queuemaxotel and the dashboard's tests.
func TestDeps_RootPullsNoTelemetry(t *testing.T) {
	t.Parallel()
	deps := goList(t, ".", "-deps", "github.com/queuemax/queuemax")
	if !slices.Contains(deps, "github.com/queuemax/queuemax/runtime/store") {
		t.Fatalf("go list -deps of the root package lacks runtime/store; got %d packages", len(deps))
	}
	for _, d := range deps {
		if isForbiddenDep(d) {
			t.Errorf("the root package depends on %s; keep it in a separate package", d)
		}
	}
	// The check can see them: the exporter packages do pull them in.
	for _, dir := range []string{"queuemaxprom", "queuemaxotel"} {
		if !slices.ContainsFunc(goListWork(t, dir, "-deps", "."), isForbiddenDep) {
			t.Errorf("go list -deps ./%s shows no telemetry package; the check is broken", dir)
		}
	}
}

// TestDeps_ModuleGraphHasNoIntegrations checks that the library's module
// graph — what go get github.com/queuemax/queuemax adds to a user's
// go.mod and go.sum — holds neither Prometheus, OpenTelemetry nor
// chromedp, while the modules of the integrations do.
func TestDeps_ModuleGraphHasNoIntegrations(t *testing.T) {
	t.Parallel()
	mods := goList(t, ".", "-m", "all")
	if !slices.Contains(mods, "modernc.org/sqlite") {
		t.Fatalf("go list -m all lacks modernc.org/sqlite; got %v", mods)
	}
	for _, m := range mods {
		if isForbiddenDep(m) {
			t.Errorf("the library's module graph holds %s; require it from an integration's own module", m)
		}
	}
	for _, dir := range []string{"queuemaxprom", "queuemaxotel", "queuemaxhttp/browsertest"} {
		if !slices.ContainsFunc(goListWork(t, dir, "-m", "all"), isForbiddenDep) {
			t.Errorf("go list -m all in %s shows no integration module; the check is broken", dir)
		}
	}
}
