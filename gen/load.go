package gen

import (
	"context"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/tools/go/packages"
)

// FileName is the name of the file the generator writes in each package.
const FileName = "queuemax_gen.go"

// loadMode is what analysis needs and no more: the syntax and types of the
// named packages, with dependencies read from export data.
const loadMode = packages.NeedName | packages.NeedFiles | packages.NeedSyntax |
	packages.NeedTypes | packages.NeedTypesInfo

// load loads the packages that cfg names.
//
// A stale or missing queuemax_gen.go must not stop generation, so the
// ParseFile hook cuts every queuemax_gen.go down to its package clause
// before type checking: the package then type-checks as if the file were
// new, and the type errors that follow in code that uses generated names
// are not fatal (see analyser.typeErrorsIn). The cut is made in ParseFile and not
// with packages.Config.Overlay because any overlay makes go/packages
// distrust all export data and type-check every dependency from source,
// which turns a half-second load into many seconds.
//
// The go command still compiles the original files to produce export
// data, so a stale file shows up as a "# pkg" ListError; analyser.packageErrors drops
// those because the type checker's own errors replace them.
func load(ctx context.Context, cfg Config) ([]*packages.Package, error) {
	patterns := cfg.Patterns
	if len(patterns) == 0 {
		patterns = []string{"."}
	}
	pcfg := &packages.Config{
		Context:    ctx,
		Mode:       loadMode,
		Dir:        cfg.Dir,
		Env:        cfg.Env,
		BuildFlags: cfg.BuildFlags,
		Fset:       token.NewFileSet(),
		ParseFile:  parseFile,
	}
	pkgs, err := packages.Load(pcfg, patterns...)
	if err != nil {
		return nil, fmt.Errorf("load %v: %w", patterns, err)
	}
	return pkgs, nil
}

// parseFile parses one file for go/packages, replacing a queuemax_gen.go
// by its package clause.
func parseFile(fset *token.FileSet, filename string, src []byte) (*ast.File, error) {
	const mode = parser.AllErrors | parser.ParseComments | parser.SkipObjectResolution
	if filepath.Base(filename) == FileName {
		name := packageName(filename, src)
		if name == "" {
			// An empty or garbled file: take the name of a sibling.
			entries, _ := os.ReadDir(filepath.Dir(filename))
			for _, e := range entries {
				n := e.Name()
				if n == FileName || !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") {
					continue
				}
				b, err := os.ReadFile(filepath.Join(filepath.Dir(filename), n))
				if err == nil {
					if name = packageName(n, b); name != "" {
						break
					}
				}
			}
		}
		if name != "" {
			src = []byte("package " + name + "\n")
		}
	}
	return parser.ParseFile(fset, filename, src, mode)
}

// packageName returns the package clause's name, or "" if there is none.
func packageName(filename string, src []byte) string {
	f, err := parser.ParseFile(token.NewFileSet(), filename, src, parser.PackageClauseOnly)
	if err != nil {
		return ""
	}
	return f.Name.Name
}
