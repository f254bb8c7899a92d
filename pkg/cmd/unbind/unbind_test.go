package unbind_test

import (
	"testing"

	"gotest.tools/v3/assert"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/lifecycle"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/unbind"
)

func TestUnbindOptions_Validate_SelectsByInstance(t *testing.T) {
	for _, tc := range []struct {
		name     string
		o        unbind.Options
		instance string
	}{
		{name: "bindings", o: unbind.Options{Args: []string{"a", "b"}}},
		{name: "instance argument, all", o: unbind.Options{Args: []string{"db"}, All: true}, instance: "db"},
		{name: "instance argument, names", o: unbind.Options{Args: []string{"db"}, Names: []string{"a", "b"}}, instance: "db"},
		{name: "instance flag", o: unbind.Options{Instance: "db", All: true}, instance: "db"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.o.Wait = lifecycle.WaitFlags{Interval: 1}
			given := tc.o.Instance
			assert.NilError(t, tc.o.Validate())
			assert.Equal(t, tc.o.Instance, given, "Validate changes nothing")
			assert.Equal(t, unbind.RequestOf(&tc.o).Instance, tc.instance)
		})
	}
}
