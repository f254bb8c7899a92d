package cmdutil

import (
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// TestClientset_HasEveryGroupTheCodeCalls finds every call of a kubernetes.Interface
// method (CoreV1(), RbacV1(), ...) in the plugin's code and checks that the plugin's
// clientset builds that group: a call of a group it leaves out would panic.
func TestClientset_HasEveryGroupTheCodeCalls(t *testing.T) {
	iface := reflect.TypeFor[kubernetes.Interface]()
	methods := map[string]bool{}
	for m := range iface.Methods() {
		methods[m.Name] = true
	}
	call := regexp.MustCompile(`\.([A-Z][A-Za-z0-9]*)\(\)`)
	called := map[string]string{}
	for _, root := range []string{"../../pkg", "../../cmd"} {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			src, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for _, m := range call.FindAllStringSubmatch(string(src), -1) {
				if methods[m[1]] {
					called[m[1]] = path
				}
			}
			return nil
		})
		assert.NilError(t, err)
	}
	assert.Assert(t, called["CoreV1"] != "", "the scan found no CoreV1() call: it is not looking at the code")

	cs, err := newClientset(&rest.Config{Host: "https://127.0.0.1:1", QPS: DefaultQPS, Burst: DefaultBurst})
	assert.NilError(t, err)
	v := reflect.ValueOf(cs)
	for name, where := range called {
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("%s() (called in %s) is not built by the plugin's clientset: add it to pkg/cmdutil/clientset.go", name, where)
				}
			}()
			out := v.MethodByName(name).Call(nil)[0]
			assert.Assert(t, !out.IsNil(), "%s() (called in %s) returns nil: add it to pkg/cmdutil/clientset.go", name, where)
		}()
	}
}
