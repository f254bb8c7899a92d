package lifecycle

import (
	"testing"

	"github.com/spf13/pflag"
	"gotest.tools/v3/assert"
)

func TestLimitFlags_ValidateAndLimits(t *testing.T) {
	parse := func(args ...string) (*LimitFlags, error) {
		l := &LimitFlags{}
		fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
		l.AddFlags(fs)
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		l.SetGiven(fs)
		return l, l.Validate()
	}
	_, err := parse("--max-bindings", "-1")
	assert.ErrorContains(t, err, "--max-bindings must be 0 (no limit) or more")
	_, err = parse("--allowed-namespaces", "ok,Not_OK")
	assert.ErrorContains(t, err, `"Not_OK" is not a valid namespace name`)

	l, err := parse("--max-bindings", "3", "--allowed-namespaces", "b,a,b")
	assert.NilError(t, err)
	assert.Assert(t, l.Given())
	before := append([]string(nil), l.AllowedNamespaces...)
	assert.NilError(t, l.Validate())
	assert.DeepEqual(t, l.AllowedNamespaces, before)
	got := l.Limits()
	assert.Equal(t, *got.MaxBindings, int32(3))
	assert.DeepEqual(t, *got.AllowedNamespaces, []string{"b", "a", "b"})

	l, err = parse("--max-bindings", "0", "--allowed-namespaces", "")
	assert.NilError(t, err)
	got = l.Limits()
	assert.Equal(t, *got.MaxBindings, int32(0))
	assert.Equal(t, len(*got.AllowedNamespaces), 0)

	l, err = parse()
	assert.NilError(t, err)
	assert.Assert(t, !l.Given())
	got = l.Limits()
	assert.Assert(t, got.MaxBindings == nil && got.AllowedNamespaces == nil)
}
