package gen

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// mismatchSrc uses the generated workflow code of the golden case
// testdata/golden/workflow. Each line marked `// want "re"` must fail to
// compile with an error matching re; every other line must compile.
const mismatchSrc = `package workflow

import "github.com/queuemax/queuemax"

func useSteps(tasks *Tasks, wf *queuemax.Workflow) {
	order := Order{ID: "o-1", Amount: 4200}
	charge := tasks.Charge.Step(wf, "charge", queuemax.Value(order))
	ship := tasks.Ship.Step(wf, "ship", queuemax.Value(order), queuemax.From(charge))
	audit := tasks.Audit.Step(wf, "audit", queuemax.After(charge.Name()))
	tasks.Mail.Step(wf, "mail", queuemax.Value("a@example.com"), queuemax.From(charge), queuemax.From(ship), queuemax.After(audit.Name()))
	tasks.Mail.StepArgs(wf, "mail2", MailArgs{To: "b@example.com"}, queuemax.Bind("receipt", charge.Name()))

	tasks.Mail.Step(wf, "m1", queuemax.Value("a"), queuemax.From(charge), queuemax.From(charge)) // want "cannot use queuemax.From\\(charge\\) \\(value of struct type queuemax.Input\\[Receipt\\]\\) as queuemax.Input\\[\\*Tracking\\] value in argument to tasks.Mail.Step"
	tasks.Ship.Step(wf, "s1", queuemax.Value(order), queuemax.From(ship)) // want "cannot use queuemax.From\\(ship\\) \\(value of struct type queuemax.Input\\[\\*Tracking\\]\\) as queuemax.Input\\[Receipt\\] value in argument to tasks.Ship.Step"
	tasks.Ship.Step(wf, "s2", queuemax.Value(order), queuemax.From(audit)) // want "cannot use queuemax.From\\(audit\\) \\(value of struct type queuemax.Input\\[queuemax.NoResult\\]\\) as queuemax.Input\\[Receipt\\] value in argument to tasks.Ship.Step"
	tasks.Charge.Step(wf, "c1", queuemax.Value("o-1")) // want "cannot use queuemax.Value\\(\"o-1\"\\) \\(value of struct type queuemax.Input\\[string\\]\\) as queuemax.Input\\[Order\\] value in argument to tasks.Charge.Step"
	tasks.Mail.Step(wf, "m2", queuemax.Value("a"), queuemax.From(charge)) // want "not enough arguments in call to tasks.Mail.Step"
	tasks.Ship.StepArgs(wf, "s3", ChargeArgs{Order: order}) // want "cannot use ChargeArgs{…} \\(value of struct type ChargeArgs\\) as ShipArgs value in argument to tasks.Ship.StepArgs"
}
`

// TestWorkflowBindingTypeErrors type-checks code that binds step
// parameters to results of the wrong type: the compiler must refuse each
// such line, naming both types, and accept the correct ones.
func TestWorkflowBindingTypeErrors(t *testing.T) {
	if testing.Short() || *update {
		t.Skip("runs go vet")
	}
	t.Parallel()
	caseDir, err := filepath.Abs(filepath.Join(goldenDir, "workflow"))
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	src := filepath.Join(work, "mismatch.go")
	writeFile(t, src, []byte(mismatchSrc))
	overlay, err := json.Marshal(map[string]any{"Replace": map[string]string{filepath.Join(caseDir, "zz_mismatch.go"): src}})
	if err != nil {
		t.Fatal(err)
	}
	overlayPath := filepath.Join(work, "overlay.json")
	writeFile(t, overlayPath, overlay)

	cmd := exec.CommandContext(t.Context(), "go", "build", "-overlay", overlayPath, "-gcflags=-e", "./testdata/golden/workflow")
	cmd.Dir = ".."
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("go build accepted the mismatched bindings:\n%s", out)
	}

	// want maps a line number of mismatchSrc to the error it must get.
	want := map[int]*regexp.Regexp{}
	wantRe := regexp.MustCompile(`// want "((?:[^"\\]|\\.)*)"$`)
	for i, line := range strings.Split(mismatchSrc, "\n") {
		if m := wantRe.FindStringSubmatch(line); m != nil {
			re, err := strconv.Unquote(`"` + m[1] + `"`)
			if err != nil {
				t.Fatalf("line %d: %v", i+1, err)
			}
			want[i+1] = regexp.MustCompile(re)
		}
	}
	errLine := regexp.MustCompile(`mismatch\.go:(\d+):\d+: (.*)`)
	got := map[int]string{}
	for _, line := range strings.Split(string(out), "\n") {
		m := errLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		n, _ := strconv.Atoi(m[1])
		got[n] = m[2]
		if want[n] == nil {
			t.Errorf("line %d should compile, got: %s", n, m[2])
		}
	}
	for n, re := range want {
		switch msg, ok := got[n]; {
		case !ok:
			t.Errorf("line %d compiled, want an error matching %q", n, re)
		case !re.MatchString(msg):
			t.Errorf("line %d: got error %q, want one matching %q", n, msg, re)
		}
	}
	if t.Failed() {
		t.Logf("go build output:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(caseDir, "zz_mismatch.go")); err == nil {
		t.Errorf("zz_mismatch.go exists on disk; the test must only overlay it")
	}
}
