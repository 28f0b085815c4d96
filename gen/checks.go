package gen

import (
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"path/filepath"
	"sort"
	"strings"
)

// Checks across a task's fields and names, and its retry_on errors.

// fieldIdent is one declared parameter: its name (nil if unnamed) and
// position.
type fieldIdent struct {
	name *ast.Ident
	pos  token.Pos
}

// fieldIdents flattens a parameter list so that it lines up with the
// signature's tuple.
func fieldIdents(fl *ast.FieldList) []fieldIdent {
	var out []fieldIdent
	for _, f := range fl.List {
		if len(f.Names) == 0 {
			out = append(out, fieldIdent{pos: f.Type.Pos()})
			continue
		}
		for _, n := range f.Names {
			out = append(out, fieldIdent{name: n, pos: n.Pos()})
		}
	}
	return out
}

// checkFields reports parameters that map to the same payload field or
// JSON key, such as userID and userId.
func checkFields(ps []param, fields []fieldIdent, fail func(token.Pos, string, ...any)) {
	byField := map[string]string{}
	byJSON := map[string]string{}
	for _, p := range ps {
		pos := token.NoPos
		for _, f := range fields {
			if f.name != nil && f.name.Name == p.Name {
				pos = f.pos
			}
		}
		if other, ok := byField[p.Field]; ok {
			fail(pos, "parameters %s and %s both map to payload field %s; rename one", other, p.Name, p.Field)
			continue
		}
		if other, ok := byJSON[p.JSON]; ok {
			fail(pos, "parameters %s and %s both map to JSON key %q; rename one", other, p.Name, p.JSON)
			continue
		}
		byField[p.Field] = p.Name
		byJSON[p.JSON] = p.Name
	}
}

// ReservedParams are the parameter names that generated methods taking a
// task's parameters use themselves (docs/tasks.md lists them): the
// receiver t; the parameters ctx, tx, at, d, wf, stepName and stepOpts of
// Delay, the Tx forms, ScheduleAt, ScheduleIn and Step; the locals args, i
// and v and the builtins make, len and append of Map; and the packages
// queuemax, context and time that their signatures name. A task
// parameter with one of these names, or named like the task's generated
// identifiers (SendEmailArgs, SendEmailTask, sendEmailOptions,
// sendEmailFunc), would not compile (or, for i and v, would be read
// wrongly), so the generator appends "_" and says so.
var ReservedParams = []string{"t", "ctx", "tx", "at", "d", "wf", "stepName", "stepOpts",
	"args", "i", "v", "make", "len", "append", "queuemax", "context", "time"}

// localNames picks the names generated methods give parameters, renaming
// only those that would collide with an identifier the methods taking
// them use (ReservedParams), and returns a note for each rename. Names
// that only methods without the task's parameters use (With's o,
// Result's id, the retry_on closure's err) are not reserved.
func localNames(t *taskSpec) []string {
	lower := unexportedName(t.Func)
	reserved := map[string]bool{
		t.Func + "Args": true, t.Func + "Task": true, lower + "Options": true, lower + "Func": true,
	}
	for _, r := range ReservedParams {
		reserved[r] = true
	}
	var notes []string
	for i := range t.Params {
		p := &t.Params[i]
		p.Local = p.Name
		for reserved[p.Local] {
			p.Local += "_"
		}
		if p.Local != p.Name {
			notes = append(notes, fmt.Sprintf("%s:%d: queuemax:task %s: parameter %s is %s in the generated methods, which use %s themselves (rename it to keep its name; see docs/tasks.md#reserved-parameter-names)",
				t.File, t.Line, t.Func, p.Name, p.Local, p.Name))
		}
	}
	return notes
}

// retryOn resolves the retry_on entries against the file's imports and the
// package scope.
func (a *analyser) retryOn(d *funcDirective, label string) []errorMatch {
	if len(d.dir.RetryOn) == 0 {
		return nil
	}
	imports := map[string]*types.Package{}
	for _, spec := range d.file.Imports {
		var obj types.Object
		if spec.Name != nil {
			obj = a.pkg.TypesInfo.Defs[spec.Name]
		} else {
			obj = a.pkg.TypesInfo.Implicits[spec]
		}
		if pn, ok := obj.(*types.PkgName); ok {
			imports[pn.Name()] = pn.Imported()
		}
	}
	var out []errorMatch
	for _, ref := range d.dir.RetryOn {
		pos := d.comment.Slash + token.Pos(ref.Offset)
		fail := func(format string, args ...any) {
			a.errorf(pos, "%s: retry_on %s: %s", label, ref, fmt.Sprintf(format, args...))
		}
		var obj types.Object
		if ref.Pkg == "" {
			obj = a.pkg.Types.Scope().Lookup(ref.Name)
		} else {
			p, ok := imports[ref.Pkg]
			if !ok {
				fail("package %s is not imported by %s", ref.Pkg, filepath.Base(a.fset.Position(d.file.Package).Filename))
				continue
			}
			if obj = p.Scope().Lookup(ref.Name); obj != nil && !obj.Exported() {
				obj = nil
			}
		}
		switch obj := obj.(type) {
		case nil:
			fail("undefined")
		case *types.Var:
			switch {
			case ref.Pointer:
				fail("%s is a variable; drop the *", strings.TrimPrefix(ref.String(), "*"))
			case !types.Implements(obj.Type(), a.errorT):
				fail("%s has type %s, which does not implement error", ref, a.typeString(obj.Type()))
			default:
				out = append(out, a.match(obj, false, false))
			}
		case *types.TypeName:
			typ := obj.Type()
			if n, ok := typ.(*types.Named); ok && n.TypeParams().Len() > 0 {
				fail("%s is generic", ref)
				continue
			}
			if ref.Pointer {
				typ = types.NewPointer(typ)
			}
			switch {
			case types.Implements(typ, a.errorT):
				out = append(out, a.match(obj, true, ref.Pointer))
			case !ref.Pointer && types.Implements(types.NewPointer(typ), a.errorT):
				fail("%s does not implement error (did you mean *%s?)", ref, ref)
			default:
				fail("%s does not implement error", ref)
			}
		default:
			fail("%s is not an error variable or type", ref)
		}
	}
	return out
}

func (a *analyser) match(obj types.Object, isType, pointer bool) errorMatch {
	a.imports[obj.Pkg().Path()] = obj.Pkg().Name()
	return errorMatch{Path: obj.Pkg().Path(), Name: obj.Name(), Type: isType, Pointer: pointer}
}

// checkNames reports duplicate task names and generated identifiers that
// collide with the package's own declarations.
func (a *analyser) checkNames(tasks []taskSpec, decls []*funcDirective) {
	byFunc := map[string]*funcDirective{}
	for _, d := range decls {
		byFunc[d.fn.Name.Name] = d
	}
	// Duplicates are reported at every directive after the first in
	// source order.
	ordered := append([]taskSpec(nil), tasks...)
	sort.SliceStable(ordered, func(i, j int) bool {
		return byFunc[ordered[i].Func].comment.Slash < byFunc[ordered[j].Func].comment.Slash
	})
	first := map[string]taskSpec{}
	for _, t := range ordered {
		d := byFunc[t.Func]
		if prev, dup := first[t.Name]; dup {
			a.errorf(d.comment.Slash, "%s %s: duplicate task name %q (also %s at %s:%d)", d.dir.Kind, t.Func, t.Name, prev.Func, prev.File, prev.Line)
			continue
		}
		first[t.Name] = t
	}
	scope := a.pkg.Types.Scope()
	taken := map[string]string{}
	for _, t := range tasks {
		d := byFunc[t.Func]
		lower := unexportedName(t.Func)
		for _, name := range []string{t.Func + "Args", t.Func + "Task", lower + "Options", lower + "Func"} {
			if obj := scope.Lookup(name); obj != nil {
				p := a.fset.Position(obj.Pos())
				a.errorf(d.fn.Name.Pos(), "%s %s: generated name %s collides with the declaration at %s:%d", d.dir.Kind, t.Func, name, filepath.Base(p.Filename), p.Line)
			}
			if other, ok := taken[name]; ok {
				a.errorf(d.fn.Name.Pos(), "%s %s: generated name %s collides with one generated for %s", d.dir.Kind, t.Func, name, other)
			}
			taken[name] = t.Func
		}
	}
	if len(tasks) == 0 {
		return
	}
	for _, name := range []string{"Tasks", "New", "Handlers"} {
		if obj := scope.Lookup(name); obj != nil {
			p := a.fset.Position(obj.Pos())
			a.errorf(obj.Pos(), "queuemax: generated name %s collides with the declaration at %s:%d", name, filepath.Base(p.Filename), p.Line)
		}
	}
}
