package hint

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
)

func TestCommand(t *testing.T) {
	assert.Equal(t, Command("team-a", "describe", "instance", "db"), "kubectl catalog describe instance db -n team-a")
	assert.Equal(t, Quoted("team-a", "unbind", "db", "--abandon"), `"kubectl catalog unbind db --abandon -n team-a"`)
	assert.Equal(t, Command("", "sync", "broker", "acme"), "kubectl catalog sync broker acme")
}

// namespaced finds, in a message's text, a command line that names a record of a
// namespace, or lists a namespace's: without -n, copied as it is, it acts on the
// reader's current namespace. A verb alone ("kubectl catalog reconcile", "kubectl
// catalog update" in words) names no record and is not one.
var namespaced = regexp.MustCompile(`kubectl catalog (?:(?:describe (?:instance|binding)|unbind|deprovision|update|touch instance|bind|share|unshare|provision) [^-"\s,)][^"]*|get (?:instances|bindings)[^"]*)`)

// notYet are the hints without -n that other changes rework (the hints about waiting,
// rotation), by file and the start of the command. Remove an entry when its hint
// carries -n.
var notYet = map[string][]string{
	"engine/binding_intent.go": {"describe instance %s", "provision %s --wait", "update %s", "describe binding %s", "bind %s --wait"},
	"engine/intent.go":         {"describe instance %s"},
	"engine/op_unbind.go":      {"get bindings --instance %s", "get bindings", "unbind %s --all", "unbind %s --wait"},
	"engine/op_bind.go":        {"describe binding %s"},
	"engine/op_provision.go":   {"describe instance %s"},
	"engine/op_rotate.go":      {"get bindings"},
	"engine/ops.go":            {"unbind %s --wait"},
}

// Every command line a message of the plugin suggests for a record of a namespace
// carries -n (hint.Command builds them): the source's strings are read, help texts
// (several lines) and commands of every namespace (-A) aside.
func TestEveryNamespacedHintCarriesItsNamespace(t *testing.T) {
	root := ".."
	var bad []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING || strings.Contains(lit.Value, "\n") {
				return true
			}
			s, err := strconv.Unquote(lit.Value)
			if err != nil {
				return true
			}
			for _, m := range namespaced.FindAllString(s, -1) {
				if strings.Contains(m, " -n ") || strings.HasSuffix(m, " -n") || strings.Contains(m, " -A") || strings.Contains(m, "--all-namespaces") {
					continue
				}
				if allowed(rel, m) {
					continue
				}
				bad = append(bad, fmt.Sprintf("%s: %q", fset.Position(lit.Pos()), m))
			}
			return true
		})
		return nil
	})
	assert.NilError(t, err)
	assert.Assert(t, len(bad) == 0, "hints without -n (build them with hint.Command or hint.Quoted):\n%s", strings.Join(bad, "\n"))

}

func allowed(file, cmd string) bool {
	for _, piece := range notYet[file] {
		if strings.HasPrefix(strings.TrimPrefix(cmd, "kubectl catalog "), piece) {
			return true
		}
	}
	return false
}
