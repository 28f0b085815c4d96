package gen

import (
	"errors"
	"go/scanner"
	"path/filepath"
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
