package store_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// interfaces returns the interface types package store declares, and the
// names Store embeds.
func interfaces(t *testing.T) (declared []string, embedded map[string]bool) {
	t.Helper()
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, ".", func(fi fs.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, 0)
	if err != nil {
		t.Fatal(err)
	}
	embedded = map[string]bool{}
	for _, f := range pkgs["store"].Files {
		ast.Inspect(f, func(n ast.Node) bool {
			ts, ok := n.(*ast.TypeSpec)
			if !ok {
				return true
			}
			it, ok := ts.Type.(*ast.InterfaceType)
			if !ok {
				return true
			}
			declared = append(declared, ts.Name.Name)
			if ts.Name.Name == "Store" {
				for _, m := range it.Methods.List {
					if id, ok := m.Type.(*ast.Ident); ok && len(m.Names) == 0 {
						embedded[id.Name] = true
					}
				}
			}
			return true
		})
	}
	return declared, embedded
}

// TestOneContract: every interface of package store is part of Store, so
// no store can lack a capability the engine or the client would then skip:
// there is no optional interface to implement or to look for.
func TestOneContract(t *testing.T) {
	declared, embedded := interfaces(t)
	if len(embedded) == 0 {
		t.Fatal("Store embeds nothing: the parse found no Store interface")
	}
	for _, name := range declared {
		if name != "Store" && !embedded[name] {
			t.Errorf("interface store.%s is not part of Store: a store could lack it, and its callers would have to look for it by a type assertion and skip what it serves", name)
		}
	}
}

// TestNoFeatureSkipped: no code of the repository (tests aside) asks a
// store.Store for more by a type assertion to an interface of package
// store; optional capabilities are asked for with Store.Features.
func TestNoFeatureSkipped(t *testing.T) {
	declared, _ := interfaces(t)
	isStore := map[string]bool{}
	for _, n := range declared {
		isStore[n] = true
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	files := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); name == "testdata" || name == "node_modules" || strings.HasPrefix(name, ".") && path != root {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		files++
		ast.Inspect(f, func(n ast.Node) bool {
			ta, ok := n.(*ast.TypeAssertExpr)
			if !ok || ta.Type == nil {
				return true
			}
			name := ""
			switch ty := ta.Type.(type) {
			case *ast.SelectorExpr:
				if x, ok := ty.X.(*ast.Ident); ok && x.Name == "store" {
					name = ty.Sel.Name
				}
			case *ast.Ident:
				if f.Name.Name == "store" {
					name = ty.Name
				}
			}
			if isStore[name] {
				rel, _ := filepath.Rel(root, fset.Position(ta.Pos()).Filename)
				t.Errorf("%s:%d: type assertion to store.%s (ask Store.Features, or make it part of Store)", rel, fset.Position(ta.Pos()).Line, name)
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 100 {
		t.Fatalf("read %d Go files under %s; want the whole repository", files, root)
	}
}
