package cmd_test

import (
	"testing"
	"time"

	"gotest.tools/v3/assert"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/cmdtest"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/wait"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
)

func TestWait_Flags_AreParsed(t *testing.T) {
	inst := func(n string) wait.Target { return wait.Target{Kind: v1alpha1.KindServiceInstance, Name: n} }
	bnd := func(n string) wait.Target { return wait.Target{Kind: v1alpha1.KindServiceBinding, Name: n} }
	for _, tc := range []struct {
		name    string
		args    []string
		targets []wait.Target
		cond    engine.WaitFor
		timeout time.Duration
	}{
		{name: "default: Ready", args: []string{"instance/db"}, targets: []wait.Target{inst("db")}, cond: engine.WaitForReady, timeout: 5 * time.Minute},
		{name: "condition in any case, =true", args: []string{"inst/db", "--for=Condition=ready=True"}, targets: []wait.Target{inst("db")}, cond: engine.WaitForReady, timeout: 5 * time.Minute},
		{name: "delete", args: []string{"binding/creds", "--for=delete"}, targets: []wait.Target{bnd("creds")}, cond: engine.WaitForDelete, timeout: 5 * time.Minute},
		{name: "several, kinds mixed, once each", args: []string{"instance/db", "bindings/creds", "instance/db", "--for", "condition=Ready"},
			targets: []wait.Target{inst("db"), bnd("creds")}, cond: engine.WaitForReady, timeout: 5 * time.Minute},
		{name: "TYPE NAME...", args: []string{"binding", "a", "b", "--timeout", "10m"}, targets: []wait.Target{bnd("a"), bnd("b")}, cond: engine.WaitForReady, timeout: 10 * time.Minute},
		{name: "no limit", args: []string{"instance/db", "--timeout", "0"}, targets: []wait.Target{inst("db")}, cond: engine.WaitForReady},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := cmdtest.Parse(t, wait.NewCmdWait, tc.args...)
			assert.DeepEqual(t, o.Targets, tc.targets)
			assert.Equal(t, o.Condition, tc.cond)
			assert.Equal(t, o.Timeout, tc.timeout)
		})
	}
}
