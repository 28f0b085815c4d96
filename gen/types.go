package gen

import (
	"fmt"
	"go/types"
	"reflect"
	"strings"
)

// Checks on the Go types of a task's parameters and results, and their references in generated code.

func isContext(t types.Type) bool {
	n, ok := types.Unalias(t).(*types.Named)
	return ok && n.Obj().Pkg() != nil && n.Obj().Pkg().Path() == "context" && n.Obj().Name() == "Context"
}

func isError(t types.Type) bool {
	return types.Identical(t, types.Universe.Lookup("error").Type())
}

// qualifier writes types of other packages with their package name.
func (a *analyser) qualifier(p *types.Package) string {
	if p == a.pkg.Types {
		return ""
	}
	return p.Name()
}

func (a *analyser) typeString(t types.Type) string { return types.TypeString(t, a.qualifier) }

func (a *analyser) tupleString(t *types.Tuple) string {
	if t.Len() == 0 {
		return "none"
	}
	parts := make([]string, t.Len())
	for i := range t.Len() {
		parts[i] = a.typeString(t.At(i).Type())
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

// jsonProblem says why encoding/json cannot round-trip a value of type t,
// or returns "". path names the field being checked, "" at the top.
func (a *analyser) jsonProblem(t types.Type, path string, seen map[types.Type]bool) string {
	at := func(why string) string {
		if path == "" {
			return why
		}
		return "field " + path + ": " + why
	}
	if seen[t] {
		return ""
	}
	seen[t] = true
	if hasMethod(t, "MarshalJSON") || hasMethod(t, "MarshalText") {
		if _, isIface := t.Underlying().(*types.Interface); !isIface {
			return ""
		}
	}
	switch u := t.Underlying().(type) {
	case *types.Basic:
		switch {
		case u.Kind() == types.UnsafePointer:
			return at("an unsafe.Pointer")
		case u.Info()&types.IsComplex != 0:
			return at("a complex number")
		case u.Kind() == types.Invalid:
			return at("a type that does not type-check")
		}
	case *types.Chan:
		return at("a channel")
	case *types.Signature:
		return at("a function")
	case *types.Interface:
		if u.Empty() {
			return at("an empty interface, which does not decode to a concrete type")
		}
		return at("an interface, not a concrete type")
	case *types.TypeParam:
		return at("a type parameter")
	case *types.Pointer:
		return a.jsonProblem(u.Elem(), path, seen)
	case *types.Slice:
		return a.jsonProblem(u.Elem(), path, seen)
	case *types.Array:
		return a.jsonProblem(u.Elem(), path, seen)
	case *types.Map:
		k := u.Key()
		kb, isBasic := k.Underlying().(*types.Basic)
		if !(isBasic && kb.Info()&(types.IsString|types.IsInteger) != 0) && !hasMethod(k, "MarshalText") {
			return at(fmt.Sprintf("a map with key type %s", a.typeString(k)))
		}
		return a.jsonProblem(u.Elem(), path, seen)
	case *types.Struct:
		encoded, hidden := 0, 0
		for i := range u.NumFields() {
			if f := u.Field(i); f.Exported() || f.Embedded() {
				encoded++
			} else {
				hidden++
			}
		}
		if encoded == 0 && hidden > 0 {
			return at("a struct with only unexported fields, whose JSON is always {}: export its fields or give it MarshalJSON and UnmarshalJSON")
		}
		for i := range u.NumFields() {
			f := u.Field(i)
			if !f.Exported() && !f.Embedded() {
				continue
			}
			if tag := reflect.StructTag(u.Tag(i)).Get("json"); tag == "-" {
				continue
			}
			p := f.Name()
			if path != "" {
				p = path + "." + p
			}
			if why := a.jsonProblem(f.Type(), p, seen); why != "" {
				return why
			}
		}
	}
	return ""
}

// hasMethod reports whether t or *t has the named method.
func hasMethod(t types.Type, name string) bool {
	for _, typ := range []types.Type{t, types.NewPointer(t)} {
		obj, _, _ := types.LookupFieldOrMethod(typ, true, nil, name)
		if _, ok := obj.(*types.Func); ok {
			return true
		}
	}
	return false
}

// ref converts a checked type to a typeRef, recording the imports it
// needs.
func (a *analyser) ref(t types.Type) typeRef {
	switch t := t.(type) {
	case *types.Alias:
		return a.named(t.Obj(), t.TypeArgs())
	case *types.Named:
		return a.named(t.Obj(), t.TypeArgs())
	case *types.Basic:
		return typeRef{Kind: refBasic, Name: t.Name()}
	case *types.Pointer:
		e := a.ref(t.Elem())
		return typeRef{Kind: refPointer, Elem: &e}
	case *types.Slice:
		e := a.ref(t.Elem())
		return typeRef{Kind: refSlice, Elem: &e}
	case *types.Array:
		e := a.ref(t.Elem())
		return typeRef{Kind: refArray, Elem: &e, Len: t.Len()}
	case *types.Map:
		k, e := a.ref(t.Key()), a.ref(t.Elem())
		return typeRef{Kind: refMap, Key: &k, Elem: &e}
	case *types.Struct:
		r := typeRef{Kind: refStruct}
		for i := range t.NumFields() {
			f := t.Field(i)
			r.Fields = append(r.Fields, fieldRef{Name: f.Name(), Embedded: f.Embedded(), Type: a.ref(f.Type()), Tag: t.Tag(i)})
		}
		return r
	}
	// jsonProblem rejected every other kind before ref runs.
	panic(fmt.Sprintf("queuemax-gen: unexpected type %T %s", t, t))
}

func (a *analyser) named(obj *types.TypeName, args *types.TypeList) typeRef {
	r := typeRef{Kind: refNamed, Name: obj.Name()}
	if obj.Pkg() != nil {
		r.Path = obj.Pkg().Path()
		a.imports[r.Path] = obj.Pkg().Name()
	}
	for i := range args.Len() {
		r.Args = append(r.Args, a.ref(args.At(i)))
	}
	return r
}
