package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/queuemax/queuemax/gen"
)

func TestRun(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		args       []string
		wantCode   int
		wantStderr string // compared when not empty
	}{
		{name: "Help", args: []string{"-h"}, wantCode: exitOK},
		{name: "UnknownFlag", args: []string{"-bogus"}, wantCode: exitUsage},
		{
			name:       "Problems",
			args:       []string{"-C", "../../testdata/golden/err_duplicate_key"},
			wantCode:   exitProblems,
			wantStderr: "tasks.go:8:38: queuemax:task: duplicate key \"retries\"\n",
		},
		{
			name:       "ProblemsSortedAcrossPackages",
			args:       []string{"-C", "../../testdata/golden", "./err_not_exported", "./err_duplicate_key"},
			wantCode:   exitProblems,
			wantStderr: "err_duplicate_key/tasks.go:8:38: queuemax:task: duplicate key \"retries\"\nerr_not_exported/tasks.go:9:6: queuemax:task sendEmail: function must be exported\n",
		},
		{name: "CheckUpToDate", args: []string{"-C", "../../testdata/golden/basic", "-check"}, wantCode: exitOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var stdout, stderr bytes.Buffer
			code := run(t.Context(), tt.args, &stdout, &stderr)
			if code != tt.wantCode {
				t.Errorf("run(%q) = %d, want %d; stderr:\n%s", tt.args, code, tt.wantCode, stderr.String())
			}
			if tt.wantStderr != "" {
				if diff := cmp.Diff(tt.wantStderr, stderr.String()); diff != "" {
					t.Errorf("run(%q) stderr mismatch (-want +got):\n%s", tt.args, diff)
				}
			}
			if tt.wantCode == exitOK && tt.name != "Help" && stderr.Len() > 0 {
				t.Errorf("run(%q) stderr = %q, want empty", tt.args, stderr.String())
			}
		})
	}
}

func TestWrite(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	f := gen.File{Path: filepath.Join(dir, gen.FileName), Content: []byte("package x\n")}
	changed, err := differs(f)
	if err != nil || !changed {
		t.Fatalf("differs(missing file) = %v, %v; want true, nil", changed, err)
	}
	if err := write(f); err != nil {
		t.Fatalf("write: %v", err)
	}
	got, err := os.ReadFile(f.Path)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(f.Content), string(got)); diff != "" {
		t.Errorf("written file mismatch (-want +got):\n%s", diff)
	}
	if changed, err := differs(f); err != nil || changed {
		t.Errorf("differs(same content) = %v, %v; want false, nil", changed, err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		t.Errorf("directory holds %d entries after write, want 1 (no temporary file left)", len(entries))
	}
	f.Content = []byte("package y\n")
	if changed, err := differs(f); err != nil || !changed {
		t.Errorf("differs(new content) = %v, %v; want true, nil", changed, err)
	}
}
