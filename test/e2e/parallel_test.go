package e2e

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// serial marks a test that does not run beside the others, and says why: it changes
// or depends on state the whole cluster shares (the trust policy, cluster roles, the
// retired Service Catalog's CRDs), or runs reconcile over every namespace. go test runs
// the serial tests one after another first, then the parallel ones together.
func serial(t *testing.T, why string) {
	t.Helper()
	t.Logf("runs alone: %s", why)
}

// Every test of the package either runs in parallel or says why it cannot: its first
// statement is t.Parallel() or serial(t, "why").
func TestEveryTestRunsInParallelOrSaysWhyNot(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("*_test.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("no test files: %v", err)
	}
	fset := token.NewFileSet()
	var missing []string
	for _, f := range files {
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range file.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Recv != nil || !strings.HasPrefix(fn.Name.Name, "Test") || fn.Name.Name == "TestMain" {
				continue
			}
			if !parallelOrSerial(fn) {
				missing = append(missing, fset.Position(fn.Pos()).String()+" "+fn.Name.Name)
			}
		}
	}
	if len(missing) > 0 {
		t.Errorf("these tests neither call t.Parallel() nor serial(t, \"why\") first:\n%s", strings.Join(missing, "\n"))
	}
}

func parallelOrSerial(fn *ast.FuncDecl) bool {
	if fn.Body == nil || len(fn.Body.List) == 0 {
		return false
	}
	stmt, ok := fn.Body.List[0].(*ast.ExprStmt)
	if !ok {
		return false
	}
	call, ok := stmt.X.(*ast.CallExpr)
	if !ok {
		return false
	}
	switch f := call.Fun.(type) {
	case *ast.SelectorExpr:
		return f.Sel.Name == "Parallel" && len(call.Args) == 0
	case *ast.Ident:
		if f.Name != "serial" || len(call.Args) != 2 {
			return false
		}
		why, ok := call.Args[1].(*ast.BasicLit)
		if !ok || why.Kind != token.STRING {
			return false
		}
		s, err := strconv.Unquote(why.Value)
		return err == nil && strings.TrimSpace(s) != ""
	}
	return false
}
