package lifecycle

import (
	"testing"

	"github.com/spf13/pflag"
	"gotest.tools/v3/assert"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
)

func TestLimitFlags_ValidateAndApply(t *testing.T) {
	parse := func(args ...string) (*LimitFlags, error) {
		l := &LimitFlags{}
		fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
		l.AddFlags(fs)
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		return l, l.Validate(fs)
	}
	_, err := parse("--max-bindings", "-1")
	assert.ErrorContains(t, err, "--max-bindings must be 0 (no limit) or more")
	_, err = parse("--allowed-namespaces", "ok,Not_OK")
	assert.ErrorContains(t, err, `"Not_OK" is not a valid namespace name`)

	l, err := parse("--max-bindings", "3", "--allowed-namespaces", "b,a,b")
	assert.NilError(t, err)
	var spec v1alpha1.ServiceInstanceSpec
	assert.DeepEqual(t, l.Apply(&spec), []string{"at most 3 bindings", "bindings only from namespaces a, b"})
	assert.Equal(t, *spec.MaxBindings, int32(3))
	assert.DeepEqual(t, spec.AllowedNamespaces, []string{"a", "b"})
	assert.Equal(t, len(l.Apply(&spec)), 0, "nothing changes the second time")

	l, err = parse("--max-bindings", "0", "--allowed-namespaces", "")
	assert.NilError(t, err)
	assert.DeepEqual(t, l.Apply(&spec), []string{"no limit on bindings", "bindings from any namespace it is shared with"})
	assert.Assert(t, spec.MaxBindings == nil && spec.AllowedNamespaces == nil)

	l, err = parse()
	assert.NilError(t, err)
	assert.Assert(t, !l.Given())
}
