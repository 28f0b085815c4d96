// Package gen is queuemax's code generator: it finds //queuemax:task and
// //queuemax:periodic directives in Go packages and writes, for each
// package, a queuemax_gen.go with typed task stubs, payload structs, the
// registry of handlers and compile-time guards.
//
// The pipeline is load (go/packages) → analyse (a plain model, no go/types
// values) → emit (jennifer). [Generate] returns the files; only
// cmd/queuemax-gen writes them. The directive grammar lives in package
// annotations.
package gen

import (
	"context"
	"fmt"
	"go/scanner"
	"os"
	"path/filepath"
	"sort"
)

// Config says which packages to generate for. Its zero value generates
// for the package in the current directory.
type Config struct {
	// Dir is the directory the go command runs in, which resolves
	// Patterns; error positions are relative to it. Empty means the
	// current directory.
	Dir string
	// Patterns select the packages, as for go build. Empty means ".".
	Patterns []string
	// Env is the go command's environment. Nil means the current process's.
	Env []string
	// BuildFlags are passed to the go command, such as "-tags=integration".
	BuildFlags []string
}

// File is one generated file.
type File struct {
	// Path is the file's absolute path: the package directory joined with
	// FileName.
	Path string
	// Content is the gofmt-formatted source.
	Content []byte
	// Notes are remarks the generator makes without failing, one line
	// each, starting with the function's base file name and line: a
	// parameter renamed because a generated method uses its name.
	Notes []string
}

// pkgResult is the outcome for one loaded package.
type pkgResult struct {
	// Dir is the package's absolute directory.
	Dir string
	// File is the generated file, or nil when there is nothing to write
	// or Errs is not empty.
	File *File
	// Errs are the package's problems, absolute positions.
	Errs scanner.ErrorList
}

// Generate loads the packages cfg names and returns one File per package
// that has directives, or that has none but still holds a queuemax_gen.go
// (which then shrinks to empty Tasks and Handlers). It writes nothing.
//
// Problems in annotated code are returned together as a scanner.ErrorList
// sorted by position, with file names relative to cfg.Dir; the files of
// packages without problems are returned alongside it. Any other error
// (the go command failed, ctx ended) comes back alone.
func Generate(ctx context.Context, cfg Config) ([]File, error) {
	dir, err := absDir(cfg.Dir)
	if err != nil {
		return nil, err
	}
	cfg.Dir = dir
	results, err := generate(ctx, cfg)
	if err != nil {
		return nil, err
	}
	var files []File
	var errs scanner.ErrorList
	for _, r := range results {
		errs = append(errs, r.Errs...)
		if r.File != nil {
			files = append(files, *r.File)
		}
	}
	sort.Slice(files, func(i, j int) bool { return files[i].Path < files[j].Path })
	return files, relative(errs, dir).Err()
}

func absDir(dir string) (string, error) {
	if dir == "" {
		dir = "."
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("queuemax-gen: %w", err)
	}
	return abs, nil
}

// generate runs the pipeline and reports per package; cfg.Dir is absolute.
func generate(ctx context.Context, cfg Config) ([]pkgResult, error) {
	pkgs, err := load(ctx, cfg)
	if err != nil {
		return nil, err
	}
	results := make([]pkgResult, 0, len(pkgs))
	for _, pkg := range pkgs {
		m, dir, errs := analyse(pkg)
		r := pkgResult{Dir: dir, Errs: errs}
		if len(errs) == 0 && dir != "" {
			path := filepath.Join(dir, FileName)
			if len(m.Tasks) > 0 || fileExists(path) {
				src, err := emit(m)
				if err != nil {
					return nil, err
				}
				r.File = &File{Path: path, Content: src}
				for _, t := range m.Tasks {
					r.File.Notes = append(r.File.Notes, t.Notes...)
				}
			}
		}
		results = append(results, r)
	}
	return results, nil
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
