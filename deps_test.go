package queuemax

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// TestDeps_RootPullsNoTelemetry checks that a program importing only the
// root package compiles neither Prometheus, OpenTelemetry nor chromedp:
// those live in queuemaxprom, queuemaxotel and the dashboard's tests.
func TestDeps_RootPullsNoTelemetry(t *testing.T) {
	t.Parallel()
	goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := exec.LookPath(goBin); err != nil {
		if goBin, err = exec.LookPath("go"); err != nil {
			t.Skip("no go command to run go list")
		}
	}
	list := func(pkg string) []string {
		t.Helper()
		out, err := exec.CommandContext(t.Context(), goBin, "list", "-deps", pkg).Output()
		if err != nil {
			msg := ""
			if ee, ok := err.(*exec.ExitError); ok {
				msg = string(ee.Stderr)
			}
			t.Fatalf("go list -deps %s: %v\n%s", pkg, err, msg)
		}
		return strings.Fields(string(out))
	}
	// queuemaxtest imports the root package (and "testing"): the reverse
	// would be a cycle and would put test helpers in every binary.
	forbidden := []string{"github.com/prometheus/", "go.opentelemetry.io/", "github.com/chromedp/", "github.com/queuemax/queuemax/queuemaxtest"}
	isForbidden := func(dep string) bool {
		for _, f := range forbidden {
			if strings.HasPrefix(dep, f) {
				return true
			}
		}
		return false
	}
	deps := list("github.com/queuemax/queuemax")
	if !slices.Contains(deps, "github.com/queuemax/queuemax/runtime/store") {
		t.Fatalf("go list -deps of the root package lacks runtime/store; got %d packages", len(deps))
	}
	for _, d := range deps {
		if isForbidden(d) {
			t.Errorf("the root package depends on %s; keep it in a separate package", d)
		}
	}
	// The check can see them: the exporter packages do pull them in.
	for _, pkg := range []string{"github.com/queuemax/queuemax/queuemaxprom", "github.com/queuemax/queuemax/queuemaxotel"} {
		if !slices.ContainsFunc(list(pkg), isForbidden) {
			t.Errorf("go list -deps %s shows no telemetry package; the check is broken", pkg)
		}
	}
}
