package main

import (
	"fmt"
	"go/constant"
	"go/token"
	"go/types"
	"sort"
	"strconv"
	"strings"
)

// lister writes the lines of one package, in the form of Go's api/*.txt
// files: "pkg PATH, KIND NAME SIGNATURE".
type lister struct {
	pkg        *types.Package
	deprecated map[token.Pos]bool
	lines      []string
}

// listPackage returns the lines for the exported API of pkg: functions,
// constants (type and value), variables, types (with their exported fields,
// interface methods and the exported methods of T and *T, promoted ones
// included, since a caller can call those), each name once per line, sorted.
func listPackage(pkg *types.Package, deprecated map[token.Pos]bool) []string {
	l := &lister{pkg: pkg, deprecated: deprecated}
	scope := pkg.Scope()
	for _, name := range scope.Names() {
		obj := scope.Lookup(name)
		if !obj.Exported() {
			continue
		}
		switch obj := obj.(type) {
		case *types.Func:
			l.emitDeprecated(obj, "func "+name)
			l.emit("func %s%s", name, l.signature(obj.Type().(*types.Signature), true))
		case *types.Const:
			l.emitDeprecated(obj, "const "+name)
			l.emit("const %s %s", name, l.typ(obj.Type()))
			l.emit("const %s = %s", name, constValue(obj.Val()))
		case *types.Var:
			l.emitDeprecated(obj, "var "+name)
			l.emit("var %s %s", name, l.typ(obj.Type()))
		case *types.TypeName:
			l.emitDeprecated(obj, "type "+name)
			l.emitType(obj)
		}
	}
	return sortedUnique(l.lines)
}

func (l *lister) emit(format string, args ...any) {
	l.lines = append(l.lines, "pkg "+l.pkg.Path()+", "+fmt.Sprintf(format, args...))
}

// emitDeprecated adds "what //deprecated" when obj's doc comment says so, as
// Go's api files do.
func (l *lister) emitDeprecated(obj types.Object, what string) {
	if l.deprecated[obj.Pos()] && obj.Pkg() == l.pkg {
		l.emit("%s //deprecated", what)
	}
}

func (l *lister) emitType(obj *types.TypeName) {
	name := obj.Name()
	if alias, ok := obj.Type().(*types.Alias); ok {
		l.emit("type %s%s = %s", name, l.typeParams(alias.TypeParams()), l.typ(alias.Rhs()))
		// An alias of a type of an internal package is the only name a
		// caller has for it: its fields and methods are API of this
		// package, listed under the alias's name.
		if named, ok := alias.Rhs().(*types.Named); ok && isInternal(named.Obj().Pkg()) {
			l.emitNamed(name, named)
		}
		return
	}
	named, ok := obj.Type().(*types.Named)
	if !ok { // cannot happen for a declared type; listed as is
		l.emit("type %s %s", name, l.typ(obj.Type()))
		return
	}
	l.emitNamed(name, named)
}

// isInternal reports whether pkg is an internal package (its path has an
// "internal" element).
func isInternal(pkg *types.Package) bool {
	if pkg == nil {
		return false
	}
	for _, elem := range strings.Split(pkg.Path(), "/") {
		if elem == "internal" {
			return true
		}
	}
	return false
}

// emitNamed lists named, a struct, interface or other declared type, under
// name: its fields or interface methods, and its methods.
func (l *lister) emitNamed(name string, named *types.Named) {
	head := name + l.typeParams(named.TypeParams())
	switch u := named.Underlying().(type) {
	case *types.Struct:
		l.emit("type %s struct", head)
		l.emitFields(head, u, map[*types.Struct]bool{})
	case *types.Interface:
		l.emit("type %s %s", head, l.interfaceHead(u))
		for i := 0; i < u.NumMethods(); i++ {
			m := u.Method(i)
			if !m.Exported() {
				continue
			}
			l.emitDeprecated(m, fmt.Sprintf("type %s interface, %s", head, m.Name()))
			l.emit("type %s interface, %s%s", head, m.Name(), l.signature(m.Type().(*types.Signature), false))
		}
		return // an interface's methods are the lines above
	default:
		l.emit("type %s %s", head, l.typ(u))
	}

	recv := name
	if tp := named.TypeParams(); tp.Len() > 0 {
		args := make([]string, tp.Len())
		for i := range args {
			args[i] = "$" + strconv.Itoa(i)
		}
		recv += "[" + strings.Join(args, ", ") + "]"
	}
	// The method set of *T holds that of T; a method of T is listed with the
	// value receiver, the others with the pointer receiver.
	valueSet := types.NewMethodSet(named)
	for i := 0; i < valueSet.Len(); i++ {
		if sel := valueSet.At(i); !viaExportedEmbedding(named, sel) {
			l.emitMethod("("+recv+")", sel.Obj().(*types.Func))
		}
	}
	ptrSet := types.NewMethodSet(types.NewPointer(named))
	for i := 0; i < ptrSet.Len(); i++ {
		sel := ptrSet.At(i)
		m := sel.Obj().(*types.Func)
		if valueSet.Lookup(m.Pkg(), m.Name()) != nil || viaExportedEmbedding(named, sel) {
			continue
		}
		l.emitMethod("(*"+recv+")", m)
	}
}

// viaExportedEmbedding reports whether the method sel is promoted through
// an exported embedded field: the "embedded" line lists that field, and the
// embedded type's own listing (or its module's) its methods. A method
// promoted only through unexported embedded fields is listed as the outer
// type's own, since no other line shows it.
func viaExportedEmbedding(named *types.Named, sel *types.Selection) bool {
	t := types.Type(named)
	index := sel.Index()
	for _, i := range index[:len(index)-1] {
		s, ok := t.Underlying().(*types.Struct)
		if !ok {
			return false
		}
		f := s.Field(i)
		if f.Exported() {
			return true
		}
		t = f.Type()
		if p, ok := t.(*types.Pointer); ok {
			t = p.Elem()
		}
	}
	return false
}

func (l *lister) emitMethod(recv string, m *types.Func) {
	if !m.Exported() {
		return
	}
	l.emitDeprecated(m, fmt.Sprintf("method %s %s", recv, m.Name()))
	l.emit("method %s %s%s", recv, m.Name(), l.signature(m.Type().(*types.Signature), false))
}

// emitFields lists the exported fields of s; the fields of an embedded
// unexported struct are listed as the outer type's, since they are promoted
// into it and a caller reaches them by its name.
func (l *lister) emitFields(head string, s *types.Struct, seen map[*types.Struct]bool) {
	if seen[s] {
		return
	}
	seen[s] = true
	for i := 0; i < s.NumFields(); i++ {
		f := s.Field(i)
		if f.Embedded() {
			if f.Exported() {
				l.emitDeprecated(f, fmt.Sprintf("type %s struct, embedded %s", head, l.typ(f.Type())))
				l.emit("type %s struct, embedded %s", head, l.typ(f.Type()))
				continue
			}
			t := f.Type()
			if p, ok := t.(*types.Pointer); ok {
				t = p.Elem()
			}
			if inner, ok := t.Underlying().(*types.Struct); ok {
				l.emitFields(head, inner, seen)
			}
			continue
		}
		if !f.Exported() {
			continue
		}
		l.emitDeprecated(f, fmt.Sprintf("type %s struct, %s", head, f.Name()))
		l.emit("type %s struct, %s %s", head, f.Name(), l.typ(f.Type()))
	}
}

// interfaceHead is the first line of an interface type: its exported method
// names, its embedded non-interface terms (constraints), and whether it has
// unexported methods (so that no other package can implement it).
func (l *lister) interfaceHead(it *types.Interface) string {
	var parts []string
	unexported := false
	for i := 0; i < it.NumMethods(); i++ {
		if m := it.Method(i); m.Exported() {
			parts = append(parts, m.Name())
		} else {
			unexported = true
		}
	}
	sort.Strings(parts)
	for i := 0; i < it.NumEmbeddeds(); i++ {
		if _, ok := it.EmbeddedType(i).Underlying().(*types.Interface); ok {
			continue // its methods are in the method set above
		}
		parts = append(parts, l.typ(it.EmbeddedType(i)))
	}
	if unexported {
		parts = append(parts, "unexported methods")
	}
	if len(parts) == 0 {
		return "interface {}"
	}
	return "interface { " + strings.Join(parts, ", ") + " }"
}

func (l *lister) typeParams(list *types.TypeParamList) string {
	if list.Len() == 0 {
		return ""
	}
	parts := make([]string, list.Len())
	for i := range parts {
		tp := list.At(i)
		parts[i] = "$" + strconv.Itoa(tp.Index()) + " " + l.typ(tp.Constraint())
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// signature writes a function's type parameters (when withTypeParams),
// parameter types and result types, without names: renaming a parameter
// does not change the API.
func (l *lister) signature(sig *types.Signature, withTypeParams bool) string {
	var b strings.Builder
	if withTypeParams {
		b.WriteString(l.typeParams(sig.TypeParams()))
	}
	b.WriteString("(")
	params := sig.Params()
	for i := 0; i < params.Len(); i++ {
		if i > 0 {
			b.WriteString(", ")
		}
		t := params.At(i).Type()
		if sig.Variadic() && i == params.Len()-1 {
			b.WriteString("...")
			t = t.(*types.Slice).Elem()
		}
		b.WriteString(l.typ(t))
	}
	b.WriteString(")")
	res := sig.Results()
	switch res.Len() {
	case 0:
	case 1:
		b.WriteString(" " + l.typ(res.At(0).Type()))
	default:
		b.WriteString(" (")
		for i := 0; i < res.Len(); i++ {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(l.typ(res.At(i).Type()))
		}
		b.WriteString(")")
	}
	return b.String()
}

// typ writes a type the same way whatever the Go release's own printing: a
// type of another package is qualified by its full import path (two
// packages named v1 are not confused), one of this package by its name
// alone, `any` and `interface{}` are both "any", and type parameters are
// $0, $1, ... by position.
func (l *lister) typ(t types.Type) string {
	switch t := t.(type) {
	case *types.Basic:
		if t.Kind() == types.UnsafePointer {
			return "unsafe.Pointer"
		}
		return t.Name()
	case *types.Alias:
		obj := t.Obj()
		if obj.Pkg() == nil { // any
			return l.typ(types.Unalias(t))
		}
		return l.qualified(obj) + l.typeArgs(t.TypeArgs())
	case *types.Named:
		return l.qualified(t.Obj()) + l.typeArgs(t.TypeArgs())
	case *types.TypeParam:
		return "$" + strconv.Itoa(t.Index())
	case *types.Pointer:
		return "*" + l.typ(t.Elem())
	case *types.Slice:
		return "[]" + l.typ(t.Elem())
	case *types.Array:
		return "[" + strconv.FormatInt(t.Len(), 10) + "]" + l.typ(t.Elem())
	case *types.Map:
		return "map[" + l.typ(t.Key()) + "]" + l.typ(t.Elem())
	case *types.Chan:
		elem := l.typ(t.Elem())
		switch t.Dir() {
		case types.SendOnly:
			return "chan<- " + elem
		case types.RecvOnly:
			return "<-chan " + elem
		}
		if c, ok := t.Elem().(*types.Chan); ok && c.Dir() == types.RecvOnly {
			elem = "(" + elem + ")"
		}
		return "chan " + elem
	case *types.Signature:
		return "func" + l.signature(t, false)
	case *types.Struct:
		if t.NumFields() == 0 {
			return "struct{}"
		}
		parts := make([]string, t.NumFields())
		for i := range parts {
			f := t.Field(i)
			if f.Embedded() {
				parts[i] = l.typ(f.Type())
			} else {
				parts[i] = f.Name() + " " + l.typ(f.Type())
			}
		}
		return "struct{ " + strings.Join(parts, "; ") + " }"
	case *types.Interface:
		if t.Empty() {
			return "any"
		}
		var parts []string
		for i := 0; i < t.NumExplicitMethods(); i++ {
			m := t.ExplicitMethod(i)
			parts = append(parts, m.Name()+l.signature(m.Type().(*types.Signature), false))
		}
		sort.Strings(parts)
		for i := 0; i < t.NumEmbeddeds(); i++ {
			parts = append(parts, l.typ(t.EmbeddedType(i)))
		}
		return "interface{ " + strings.Join(parts, "; ") + " }"
	case *types.Union:
		parts := make([]string, t.Len())
		for i := range parts {
			term := t.Term(i)
			parts[i] = l.typ(term.Type())
			if term.Tilde() {
				parts[i] = "~" + parts[i]
			}
		}
		return strings.Join(parts, " | ")
	case *types.Tuple:
		parts := make([]string, t.Len())
		for i := range parts {
			parts[i] = l.typ(t.At(i).Type())
		}
		return "(" + strings.Join(parts, ", ") + ")"
	}
	return t.String()
}

func (l *lister) qualified(obj *types.TypeName) string {
	if obj.Pkg() == nil || obj.Pkg() == l.pkg || obj.Pkg().Path() == l.pkg.Path() {
		return obj.Name()
	}
	return obj.Pkg().Path() + "." + obj.Name()
}

func (l *lister) typeArgs(list *types.TypeList) string {
	if list.Len() == 0 {
		return ""
	}
	parts := make([]string, list.Len())
	for i := range parts {
		parts[i] = l.typ(list.At(i))
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// constValue writes a constant's exact value: a changed default is a change
// of the API a reviewer should see.
func constValue(v constant.Value) string {
	switch v.Kind() {
	case constant.String:
		return strconv.Quote(constant.StringVal(v))
	case constant.Float:
		if f, exact := constant.Float64Val(v); exact {
			return strconv.FormatFloat(f, 'g', -1, 64)
		}
	}
	return v.ExactString()
}
