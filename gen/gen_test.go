package gen

import (
	"errors"
	"go/scanner"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestGenerate checks the public contract on two golden cases loaded
// together: files of good packages come back next to the sorted,
// relative errors of bad ones.
func TestGenerate(t *testing.T) {
	t.Parallel()
	files, err := Generate(t.Context(), Config{Dir: goldenDir, Patterns: []string{"./no_params", "./err_not_exported", "./err_duplicate_key"}})
	var list scanner.ErrorList
	if !errors.As(err, &list) {
		t.Fatalf("Generate error = %v (%T), want a scanner.ErrorList", err, err)
	}
	var got []string
	for _, e := range list {
		got = append(got, e.Error())
	}
	want := []string{
		`err_duplicate_key/tasks.go:8:38: queuemax:task: duplicate key "retries"`,
		`err_not_exported/tasks.go:9:6: queuemax:task sendEmail: function must be exported`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Generate errors mismatch (-want +got):\n%s", diff)
	}
	abs, err := filepath.Abs(filepath.Join(goldenDir, "no_params", FileName))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 1 || files[0].Path != abs {
		t.Fatalf("Generate files = %v, want one file %s", files, abs)
	}
}

// TestGenerate_RenameNotes: a parameter is renamed only when a generated
// method taking it uses its name, and each rename is a note (which
// queuemax-gen prints on stderr); o, id and err keep their names.
func TestGenerate_RenameNotes(t *testing.T) {
	t.Parallel()
	files, err := Generate(t.Context(), Config{Dir: goldenDir, Patterns: []string{"./param_names"}})
	if err != nil || len(files) != 1 {
		t.Fatalf("Generate = %d files, %v", len(files), err)
	}
	notes := strings.Join(files[0].Notes, "\n")
	for _, want := range []string{
		"names.go:15: queuemax:task Schedule: parameter ctx is ctx_ in the generated methods",
		"parameter at is at_", "parameter queuemax is queuemax_", "parameter t is t_",
		"queuemax:task Chain: parameter wf is wf_",
	} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes lack %q:\n%s", want, notes)
		}
	}
	for _, p := range []string{"o", "id", "err"} {
		if strings.Contains(notes, "parameter "+p+" is") {
			t.Errorf("parameter %s renamed, though no generated method taking it uses the name:\n%s", p, notes)
		}
	}
}
