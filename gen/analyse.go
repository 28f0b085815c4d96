package gen

import (
	"fmt"
	"go/ast"
	"go/scanner"
	"go/token"
	"go/types"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"golang.org/x/tools/go/packages"

	"github.com/queuemax/queuemax/annotations"
)

// queuemaxPath is the import path of the package generated code targets.
const queuemaxPath = "github.com/queuemax/queuemax"

// pkgModel is everything emit needs, in plain values.
type pkgModel struct {
	// Path and Name are the package's import path and name.
	Path, Name string
	// Tasks are sorted by Func.
	Tasks []taskSpec
	// Imports are the packages the tasks' types and retry_on entries
	// mention, sorted by path, so that emit imports them by their real
	// names.
	Imports []importSpec
	// Taken are the package-scope names that an import of the generated
	// file would clash with, sorted; emit imports those packages under
	// another name.
	Taken []string
}

type importSpec struct{ Path, Name string }

// taskSpec is one annotated function.
type taskSpec struct {
	// Func is the function's name.
	Func string
	// Name is the stable task name stored in job rows.
	Name string
	// Notes are what the generator says on stderr about the task without
	// failing: the parameters it renamed (localNames).
	Notes []string
	// File and Line locate the function: base file name only.
	File string
	Line int
	// Params are the parameters after ctx.
	Params []param
	// Result is T of a (T, error) function, or nil.
	Result *typeRef

	Priority   int
	Retries    *int
	Timeout    time.Duration
	RetryDelay time.Duration
	RateLimit  annotations.Rate
	// GlobalRateLimit and GlobalConcurrency: global_rate_limit= and
	// global_concurrency=.
	GlobalRateLimit   annotations.Rate
	GlobalConcurrency int
	// LimitBy is limit_by=, the payload key the per-key limits apply
	// per; KeyRateLimit and KeyConcurrency are key_rate_limit= and
	// key_concurrency=.
	LimitBy        string
	KeyRateLimit   annotations.Rate
	KeyConcurrency int
	RetryOn        []errorMatch
	InlineRetries  int
	CircuitOff     bool
	Queue          string
	// Unique is "args", "key" or ""; UniqueFor and UniqueStates as in the
	// annotation (UniqueStates nil for the default).
	Unique       string
	UniqueFor    time.Duration
	UniqueStates []string
	Tags         []string
	// Aliases are aliases=, earlier names of the task.
	Aliases []string

	// Periodic is set for //queuemax:periodic, with Every or Cron.
	Periodic bool
	Every    time.Duration
	Cron     string
	Misfire  string
}

// param is one payload parameter.
type param struct {
	// Name is the parameter's name in the function.
	Name string
	// Local is the name generated methods give it: Name, renamed when it
	// would collide with a generated identifier.
	Local string
	// Field and JSON are the payload struct's field name and JSON key.
	Field, JSON string
	Type        typeRef
}

// errorMatch is one resolved retry_on entry.
type errorMatch struct {
	// Path is the import path of the package declaring Name.
	Path, Name string
	// Type is set for an error type (errors.As), unset for a sentinel
	// variable (errors.Is).
	Type bool
	// Pointer is set for *T.
	Pointer bool
}

type refKind int

const (
	refBasic refKind = iota + 1
	refNamed
	refPointer
	refSlice
	refArray
	refMap
	refStruct
)

// typeRef is a Go type written as emit renders it.
type typeRef struct {
	Kind refKind
	// Path and Name name a basic or named type; Path is empty for
	// predeclared types.
	Path, Name string
	// Args are a generic named type's type arguments.
	Args []typeRef
	// Key and Elem are the parts of composite types.
	Key, Elem *typeRef
	// Len is an array's length.
	Len int64
	// Fields are an anonymous struct's fields.
	Fields []fieldRef
}

type fieldRef struct {
	Name     string
	Embedded bool
	Type     typeRef
	Tag      string
}

// analyser holds the state of one package's analysis.
type analyser struct {
	pkg     *packages.Package
	fset    *token.FileSet
	errs    errorList
	imports map[string]string // path → name
	errorT  *types.Interface
}

// analyse turns one loaded package into a model and reports every
// problem in it. dir is the package's directory ("" if it has no files).
func analyse(pkg *packages.Package) (m pkgModel, dir string, errs scanner.ErrorList) {
	a := &analyser{
		pkg:     pkg,
		fset:    pkg.Fset,
		imports: map[string]string{},
		errorT:  types.Universe.Lookup("error").Type().Underlying().(*types.Interface),
	}
	m = pkgModel{Path: pkg.PkgPath, Name: pkg.Name}
	if len(pkg.GoFiles) > 0 {
		dir = filepath.Dir(pkg.GoFiles[0])
	}
	a.packageErrors()
	if pkg.Types == nil || pkg.TypesInfo == nil {
		return m, dir, a.errs.list
	}
	var decls []*funcDirective
	for _, f := range pkg.Syntax {
		decls = append(decls, a.scanFile(f)...)
	}
	fatal := a.typeErrorsIn(decls)
	for _, d := range decls {
		if fatal[d] {
			continue
		}
		if t, ok := a.task(d); ok && !d.badDir {
			m.Tasks = append(m.Tasks, t)
		}
	}
	sort.Slice(m.Tasks, func(i, j int) bool { return m.Tasks[i].Func < m.Tasks[j].Func })
	a.checkNames(m.Tasks, decls)
	for path, name := range a.imports {
		if path != pkg.PkgPath {
			m.Imports = append(m.Imports, importSpec{Path: path, Name: name})
		}
	}
	sort.Slice(m.Imports, func(i, j int) bool { return m.Imports[i].Path < m.Imports[j].Path })
	names := []string{"queuemax", "context", "time", "errors"}
	for _, im := range m.Imports {
		names = append(names, im.Name)
	}
	for _, name := range names {
		if pkg.Types.Scope().Lookup(name) != nil && !slices.Contains(m.Taken, name) {
			m.Taken = append(m.Taken, name)
		}
	}
	sort.Strings(m.Taken)
	return m, dir, a.errs.list
}

func (a *analyser) errorf(pos token.Pos, format string, args ...any) {
	a.errs.add(a.fset.Position(pos), fmt.Sprintf(format, args...))
}

// packageErrors records load errors that are fatal whatever the
// directives: the go command's own errors and syntax errors. Type errors
// are fatal only where they touch an annotated signature (typeErrorsIn).
func (a *analyser) packageErrors() {
	for _, e := range a.pkg.Errors {
		// Whatever is wrong with the generated file, it is about to be
		// replaced.
		if filepath.Base(parsePos(e.Pos).Filename) == FileName || strings.Contains(e.Msg, FileName+":") {
			continue
		}
		switch e.Kind {
		case packages.TypeError:
			continue
		case packages.ListError:
			// "# pkg\n..." is the compiler's output for the files as
			// they are on disk, stale queuemax_gen.go included; the type
			// checker has judged the cut version instead.
			if strings.HasPrefix(e.Msg, "# ") {
				continue
			}
		}
		a.errs.add(parsePos(e.Pos), e.Msg)
	}
}

// funcDirective is a function with a directive in its doc comment.
type funcDirective struct {
	fn      *ast.FuncDecl
	file    *ast.File
	comment *ast.Comment
	dir     *annotations.Directive
	// badDir: the directive has errors (reported); the function is still
	// checked, so that all its problems are reported, but not generated.
	badDir bool
}

// scanFile finds the directives of one file, reports malformed and
// detached ones, and returns those attached to functions.
func (a *analyser) scanFile(f *ast.File) []*funcDirective {
	name := a.fset.Position(f.Package).Filename
	if filepath.Base(name) == FileName || ast.IsGenerated(f) {
		return nil
	}
	var out []*funcDirective
	consumed := map[*ast.Comment]bool{}
	for _, decl := range f.Decls {
		fd, ok := decl.(*ast.FuncDecl)
		if !ok || fd.Doc == nil {
			continue
		}
		var first *funcDirective
		for _, c := range fd.Doc.List {
			if !annotations.IsDirective(c.Text) {
				continue
			}
			consumed[c] = true
			d, err := annotations.Parse(c.Text)
			a.annotationErrors(c, err)
			if first != nil {
				a.errorf(c.Slash, "%s: more than one queuemax directive on %s", kindOf(d), fd.Name.Name)
				continue
			}
			first = &funcDirective{fn: fd, file: f, comment: c, dir: d, badDir: err != nil}
		}
		if first != nil && first.dir != nil {
			out = append(out, first)
		}
	}
	for _, cg := range f.Comments {
		for _, c := range cg.List {
			if spaced(c.Text) {
				a.errorf(c.Slash, "queuemax: write the directive as %q, with no space after //", "//"+strings.TrimSpace(c.Text[2:]))
				continue
			}
			if !annotations.IsDirective(c.Text) || consumed[c] {
				continue
			}
			d, err := annotations.Parse(c.Text)
			if d == nil {
				a.annotationErrors(c, err)
				continue
			}
			msg := "directive not attached to a function"
			if followedByFunc(a.fset, f, cg) {
				msg += " (remove the blank line below it)"
			}
			a.errorf(c.Slash, "%s: %s", d.Kind, msg)
		}
	}
	return out
}

// spaced reports whether a comment looks like a directive with a space
// after the slashes, which Go tools read as prose.
func spaced(text string) bool {
	rest, ok := strings.CutPrefix(text, "//")
	if !ok || !strings.HasPrefix(rest, " ") && !strings.HasPrefix(rest, "\t") {
		return false
	}
	rest = strings.TrimLeft(rest, " \t")
	for _, verb := range []string{"task", "periodic"} {
		if d := "queuemax:" + verb; rest == d || strings.HasPrefix(rest, d+" ") {
			return true
		}
	}
	return false
}

func kindOf(d *annotations.Directive) string {
	if d == nil {
		return "queuemax"
	}
	return d.Kind.String()
}

// annotationErrors reports the parser's errors at their columns.
func (a *analyser) annotationErrors(c *ast.Comment, err error) {
	if err == nil {
		return
	}
	list, ok := err.(annotations.ErrorList)
	if !ok {
		a.errorf(c.Slash, "%v", err)
		return
	}
	for _, e := range list {
		a.errorf(c.Slash+token.Pos(e.Offset), "%s", e.Error())
	}
}

// followedByFunc reports whether the next declaration after cg is a
// function without a doc comment, starting after a blank line: the
// directive was most likely meant for it.
func followedByFunc(fset *token.FileSet, f *ast.File, cg *ast.CommentGroup) bool {
	for _, decl := range f.Decls {
		if decl.Pos() < cg.End() {
			continue
		}
		fd, ok := decl.(*ast.FuncDecl)
		return ok && fd.Doc == nil && fset.Position(fd.Pos()).Line > fset.Position(cg.End()).Line+1
	}
	return false
}

// typeErrorsIn reports the type errors located in an annotated signature
// and returns the directives whose signature has one: analysing those
// would only repeat the problem.
func (a *analyser) typeErrorsIn(decls []*funcDirective) map[*funcDirective]bool {
	fatal := map[*funcDirective]bool{}
	for _, e := range a.pkg.TypeErrors {
		for _, d := range decls {
			if e.Fset != a.fset && e.Fset != nil {
				continue
			}
			if d.fn.Type.Pos() <= e.Pos && e.Pos < d.fn.Type.End() {
				a.errorf(e.Pos, "%s", e.Msg)
				fatal[d] = true
			}
		}
	}
	return fatal
}

// task checks one annotated function and builds its spec.
func (a *analyser) task(d *funcDirective) (taskSpec, bool) {
	fd, dir := d.fn, d.dir
	label := fmt.Sprintf("%s %s", dir.Kind, fd.Name.Name)
	n := len(a.errs.list)
	fail := func(pos token.Pos, format string, args ...any) {
		a.errorf(pos, "%s: %s", label, fmt.Sprintf(format, args...))
	}
	pos := a.fset.Position(fd.Name.Pos())
	t := taskSpec{
		Func:              fd.Name.Name,
		Name:              dir.Name,
		File:              filepath.Base(pos.Filename),
		Line:              pos.Line,
		Retries:           dir.Retries,
		Timeout:           dir.Timeout,
		RetryDelay:        dir.RetryDelay,
		RateLimit:         dir.RateLimit,
		GlobalRateLimit:   dir.GlobalRateLimit,
		GlobalConcurrency: dir.GlobalConcurrency,
		LimitBy:           dir.LimitBy,
		KeyRateLimit:      dir.KeyRateLimit,
		KeyConcurrency:    dir.KeyConcurrency,
		InlineRetries:     dir.InlineRetries,
		CircuitOff:        dir.CircuitOff,
		Queue:             dir.Queue,
		Unique:            dir.Unique,
		UniqueFor:         dir.UniqueFor,
		UniqueStates:      dir.UniqueStates,
		Tags:              dir.Tags,
		Aliases:           dir.Aliases,
		Periodic:          dir.Kind == annotations.KindPeriodic,
		Every:             dir.Every,
		Cron:              dir.Cron,
		Misfire:           dir.Misfire,
	}
	if t.Name == "" {
		// The package name, not its import path: moving the package
		// keeps its tasks' names (and their stored jobs runnable).
		// Open rejects two tasks of one program with the same name.
		t.Name = a.pkg.Name + "." + fd.Name.Name
	}
	if dir.Priority != nil {
		t.Priority = *dir.Priority
	}
	if fd.Recv != nil {
		fail(fd.Name.Pos(), "directive on a method; annotate a top-level function")
		return t, false
	}
	if !fd.Name.IsExported() {
		fail(fd.Name.Pos(), "function must be exported")
	}
	if fd.Type.TypeParams != nil && len(fd.Type.TypeParams.List) > 0 {
		fail(fd.Type.TypeParams.Pos(), "function must not be generic")
		return t, false
	}
	fn, ok := a.pkg.TypesInfo.Defs[fd.Name].(*types.Func)
	if !ok {
		return t, false
	}
	sig := fn.Signature()

	// Parameters: ctx first, then named, non-variadic, encodable ones.
	params := sig.Params()
	if params.Len() == 0 || !isContext(params.At(0).Type()) {
		got := "none"
		if params.Len() > 0 {
			got = a.typeString(params.At(0).Type())
		}
		fail(fd.Name.Pos(), "first parameter must be context.Context, got %s", got)
	}
	fields := fieldIdents(fd.Type.Params)
	for i := 1; i < params.Len(); i++ {
		v := params.At(i)
		at := fields[i].pos
		switch {
		case fields[i].name == nil:
			fail(at, "parameter %d (%s) must be named", i+1, a.typeString(v.Type()))
			continue
		case v.Name() == "_":
			fail(at, "parameter %d (%s) must be named, not _", i+1, a.typeString(v.Type()))
			continue
		case sig.Variadic() && i == params.Len()-1:
			fail(at, "parameter %s is variadic; take a slice instead", v.Name())
			continue
		case t.Periodic:
			fail(at, "periodic task must take only ctx, got parameter %s", v.Name())
			continue
		}
		if why := a.jsonProblem(v.Type(), "", map[types.Type]bool{}); why != "" {
			fail(at, "parameter %s has type %s, which is not JSON-encodable (%s)", v.Name(), a.typeString(v.Type()), why)
			continue
		}
		t.Params = append(t.Params, param{
			Name:  v.Name(),
			Field: exportedName(v.Name()),
			JSON:  snakeName(v.Name()),
			Type:  a.ref(v.Type()),
		})
	}
	checkFields(t.Params, fields, fail)
	checkLimitBy(d, t, fail)

	// Results: error or (T, error).
	results := sig.Results()
	resultsPos := fd.Name.Pos()
	if fd.Type.Results != nil {
		resultsPos = fd.Type.Results.Pos()
	}
	switch {
	case results.Len() == 1 && isError(results.At(0).Type()):
	case results.Len() == 2 && isError(results.At(1).Type()):
		rt := results.At(0).Type()
		if why := a.jsonProblem(rt, "", map[types.Type]bool{}); why != "" {
			fail(resultsPos, "result type %s is not JSON-encodable (%s)", a.typeString(rt), why)
		} else {
			r := a.ref(rt)
			t.Result = &r
		}
	default:
		fail(resultsPos, "results must be error or (T, error), got %s", a.tupleString(results))
	}

	t.RetryOn = a.retryOn(d, label)
	t.Notes = localNames(&t)
	return t, len(a.errs.list) == n
}
