package printers

import (
	"errors"
	"testing"

	"github.com/spf13/cobra"
	"gotest.tools/v3/assert"
)

func TestFormatOutputFlags_TakeTheCommandsFormatsHelpAndError(t *testing.T) {
	newFlags := func() *OutputFlags {
		return NewFormatOutputFlags([]string{"dot", "json"}, "tree", "Output format: tree, dot, json.", func(f string) error {
			return errors.New("no format " + f)
		})
	}
	o := newFlags()
	cmd := &cobra.Command{}
	o.AddFlags(cmd)
	flag := cmd.Flags().Lookup("output")
	assert.Equal(t, flag.Usage, "Output format: tree, dot, json.")
	assert.Equal(t, flag.DefValue, "tree")
	assert.Assert(t, cmd.Flags().Lookup("template") == nil, "a command's own formats have no template flags")
	assert.NilError(t, o.Validate())
	assert.Equal(t, o.Format(), "tree")

	for _, tc := range []struct{ value, err string }{{"dot", ""}, {"tree", ""}, {"yaml", "no format yaml"}, {"", "no format "}} {
		o := newFlags()
		cmd := &cobra.Command{}
		o.AddFlags(cmd)
		assert.NilError(t, cmd.Flags().Set("output", tc.value))
		if tc.err == "" {
			assert.NilError(t, o.Validate())
			assert.Equal(t, o.Format(), tc.value)
		} else {
			assert.Error(t, o.Validate(), tc.err)
		}
	}
}
