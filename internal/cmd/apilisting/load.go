package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
)

// listedPackage is the part of `go list -json` output the loader reads.
type listedPackage struct {
	ImportPath string
	Name       string
	Dir        string
	GoFiles    []string
	CgoFiles   []string
	Export     string
	ImportMap  map[string]string
	Error      *struct{ Err string }
}

// goList runs `go list -e -json` with args in dir and decodes its stream of
// packages.
func goList(dir string, args ...string) ([]listedPackage, error) {
	cmd := exec.Command("go", append([]string{"list", "-e", "-json"}, args...)...)
	cmd.Dir = dir
	// A go.work outside the module must not change what the module builds.
	cmd.Env = append(os.Environ(), "GOWORK=off")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("go list %s in %s: %v\n%s", strings.Join(args, " "), dir, err, stderr.String())
	}
	var pkgs []listedPackage
	dec := json.NewDecoder(&stdout)
	for {
		var p listedPackage
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			return nil, fmt.Errorf("go list in %s: %v", dir, err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs, nil
}

// public reports whether a package of module modPath is part of the public
// API: not a command, and no path element below the module is internal,
// testdata or examples (the set the apisurface count walks).
func public(p listedPackage) bool {
	if p.Name == "main" {
		return false
	}
	for _, elem := range strings.Split(p.ImportPath, "/") {
		switch elem {
		case "internal", "testdata", "examples":
			return false
		}
	}
	return true
}

// loadModule type-checks, from source, every public package of the module
// rooted at dir, with its imports read from the compiler's export data (`go
// list -export`, which builds them, from the build cache when it can). It
// returns the listing's lines for those packages.
func loadModule(dir string) ([]string, error) {
	all, err := goList(dir, "./...")
	if err != nil {
		return nil, err
	}
	var targets []listedPackage
	var paths []string
	for _, p := range all {
		if p.Error != nil {
			return nil, fmt.Errorf("%s: %s", p.ImportPath, p.Error.Err)
		}
		if public(p) {
			if len(p.CgoFiles) > 0 {
				return nil, fmt.Errorf("%s: cgo packages are not supported", p.ImportPath)
			}
			targets = append(targets, p)
			paths = append(paths, p.ImportPath)
		}
	}
	if len(targets) == 0 {
		return nil, nil
	}
	deps, err := goList(dir, append([]string{"-export", "-deps"}, paths...)...)
	if err != nil {
		return nil, err
	}
	exports := map[string]string{}
	for _, p := range deps {
		if p.Error != nil {
			return nil, fmt.Errorf("%s: %s", p.ImportPath, p.Error.Err)
		}
		exports[p.ImportPath] = p.Export
	}

	fset := token.NewFileSet()
	gc := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		file, ok := exports[path]
		if !ok || file == "" {
			return nil, fmt.Errorf("no export data for %q", path)
		}
		return os.Open(file)
	})
	var lines []string
	for _, p := range targets {
		pkgLines, err := checkPackage(fset, gc, p)
		if err != nil {
			return nil, err
		}
		lines = append(lines, pkgLines...)
	}
	return lines, nil
}

// mappedImporter resolves the import paths written in one package's source
// through that package's ImportMap (vendored standard library paths) before
// reading their export data.
type mappedImporter struct {
	gc        types.Importer
	importMap map[string]string
}

func (m mappedImporter) Import(path string) (*types.Package, error) {
	if mapped, ok := m.importMap[path]; ok {
		path = mapped
	}
	return m.gc.Import(path)
}

func checkPackage(fset *token.FileSet, gc types.Importer, p listedPackage) ([]string, error) {
	var files []*ast.File
	for _, name := range p.GoFiles {
		f, err := parser.ParseFile(fset, filepath.Join(p.Dir, name), nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	conf := types.Config{
		Importer: mappedImporter{gc: gc, importMap: p.ImportMap},
		Sizes:    types.SizesFor("gc", runtime.GOARCH),
	}
	pkg, err := conf.Check(p.ImportPath, fset, files, nil)
	if err != nil {
		return nil, fmt.Errorf("type-checking %s: %v", p.ImportPath, err)
	}
	return listPackage(pkg, deprecatedPositions(files)), nil
}

// deprecatedPositions returns the positions of the names whose doc comment
// has a paragraph that starts with "Deprecated: ".
func deprecatedPositions(files []*ast.File) map[token.Pos]bool {
	dep := map[token.Pos]bool{}
	mark := func(doc *ast.CommentGroup, names ...*ast.Ident) {
		if !isDeprecated(doc) {
			return
		}
		for _, n := range names {
			dep[n.Pos()] = true
		}
	}
	fields := func(list *ast.FieldList) {
		if list == nil {
			return
		}
		for _, f := range list.List {
			names := f.Names
			if len(names) == 0 { // embedded: the type names the field
				ast.Inspect(f.Type, func(n ast.Node) bool {
					switch x := n.(type) {
					case *ast.Ident:
						names = []*ast.Ident{x}
						return false
					case *ast.SelectorExpr:
						names = []*ast.Ident{x.Sel}
						return false
					case *ast.IndexExpr, *ast.IndexListExpr:
						// The field is named by the generic type, not its arguments.
						ast.Inspect(typeOfIndex(x), func(n ast.Node) bool {
							if id, ok := n.(*ast.Ident); ok && len(names) == 0 {
								names = []*ast.Ident{id}
							}
							return len(names) == 0
						})
						return false
					}
					return true
				})
			}
			mark(f.Doc, names...)
		}
	}
	for _, f := range files {
		for _, decl := range f.Decls {
			switch d := decl.(type) {
			case *ast.FuncDecl:
				mark(d.Doc, d.Name)
			case *ast.GenDecl:
				for _, spec := range d.Specs {
					doc := d.Doc
					switch s := spec.(type) {
					case *ast.TypeSpec:
						if s.Doc != nil || d.Lparen.IsValid() {
							doc = s.Doc
						}
						mark(doc, s.Name)
						switch t := s.Type.(type) {
						case *ast.StructType:
							fields(t.Fields)
						case *ast.InterfaceType:
							fields(t.Methods)
						}
					case *ast.ValueSpec:
						if s.Doc != nil || d.Lparen.IsValid() {
							doc = s.Doc
						}
						mark(doc, s.Names...)
					}
				}
			}
		}
	}
	return dep
}

func typeOfIndex(n ast.Node) ast.Expr {
	switch x := n.(type) {
	case *ast.IndexExpr:
		return x.X
	case *ast.IndexListExpr:
		return x.X
	}
	return nil
}

// isDeprecated reports whether doc has a paragraph starting "Deprecated: ",
// the convention go doc and gopls follow.
func isDeprecated(doc *ast.CommentGroup) bool {
	if doc == nil {
		return false
	}
	paragraphStart := true
	for _, line := range strings.Split(doc.Text(), "\n") {
		if strings.TrimSpace(line) == "" {
			paragraphStart = true
			continue
		}
		if paragraphStart && strings.HasPrefix(line, "Deprecated: ") {
			return true
		}
		paragraphStart = false
	}
	return false
}

// sortedUnique sorts lines and drops repeats.
func sortedUnique(lines []string) []string {
	sort.Strings(lines)
	out := lines[:0]
	for i, l := range lines {
		if i == 0 || l != lines[i-1] {
			out = append(out, l)
		}
	}
	return out
}
