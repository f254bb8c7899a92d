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

func TestWait_BadInvocations_AreUsageErrors(t *testing.T) {
	cmdtest.UsageErrors(t, []cmdtest.BadInvocation{
		{Name: "nothing to wait for", Args: []string{"wait"}, Want: "needs what to wait for, such as instance/db"},
		{Name: "a kind of kubectl's", Args: []string{"wait", "pod/web"}, Want: `"pod/web" is not something to wait for: name it as instance/NAME or binding/NAME`},
		{Name: "a bare name", Args: []string{"wait", "db"}, Want: `"db" is not something to wait for`},
		{Name: "a kind without a name", Args: []string{"wait", "instance/"}, Want: `"instance/" names no instance: give instance/NAME`},
		{Name: "a kind alone", Args: []string{"wait", "instance"}, Want: `"instance" names no instance`},
		{Name: "a kind then TYPE/NAME", Args: []string{"wait", "instance", "binding/x"}, Want: "give names only"},
		{Name: "an invalid name", Args: []string{"wait", "instance/DB"}, Want: `"DB" is not a valid instance name`},
		{Name: "condition Ready false", Args: []string{"wait", "instance/db", "--for=condition=Ready=false"}, Want: "the Ready condition to be true only"},
		{Name: "another condition", Args: []string{"wait", "instance/db", "--for=condition=Failed"}, Want: "give --for=condition=Ready"},
		{Name: "jsonpath", Args: []string{"wait", "instance/db", "--for=jsonpath={.status.phase}=Ready"}, Want: "give --for=condition=Ready"},
		{Name: "create", Args: []string{"wait", "instance/db", "--for=create"}, Want: "or --for=delete (the record gone)"},
		{Name: "delete with a value", Args: []string{"wait", "instance/db", "--for=delete=true"}, Want: "give --for=condition=Ready"},
		{Name: "bad timeout", Args: []string{"wait", "instance/db", "--timeout", "soon"}, Want: "is not a duration", PflagWording: true},
		{Name: "zero interval", Args: []string{"wait", "instance/db", "--interval", "0s"}, Want: "--interval must be positive"},
		{Name: "unknown flag", Args: []string{"wait", "instance/db", "--wait"}, Want: "unknown flag"},
	})
}

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
