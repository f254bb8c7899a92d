package cmd_test

import (
	"testing"

	"gotest.tools/v3/assert"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/cmdtest"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/provision"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
)

func TestUpdateRebind_FlagReachesTheRequest(t *testing.T) {
	for _, tc := range []struct {
		args   []string
		once   bool
		policy v1alpha1.RebindPolicy
	}{
		{args: []string{"db", "--plan", "large", "--rebind"}, once: true},
		{args: []string{"db", "--rebind"}, once: true},
		{args: []string{"db", "--rebind=once"}, once: true},
		{args: []string{"db", "--rebind=always"}, policy: v1alpha1.RebindAlways},
		{args: []string{"db", "--rebind=plan-change"}, policy: v1alpha1.RebindPlanChange},
		{args: []string{"db", "--rebind=never", "--plan", "large"}, policy: v1alpha1.RebindNever},
	} {
		o := parseUpdate(t, tc.args...)
		assert.NilError(t, o.Validate())
		req, err := o.Request(engine.Follow{})
		assert.NilError(t, err)
		assert.Equal(t, req.Rebind, tc.once, "%v", tc.args)
		if tc.policy == "" {
			assert.Assert(t, req.RebindOnUpdate == nil, "%v", tc.args)
		} else {
			assert.Equal(t, *req.RebindOnUpdate, tc.policy, "%v", tc.args)
		}
	}
}

func TestProvisionRebind_FlagSetsTheSpecChoice(t *testing.T) {
	o := cmdtest.Parse(t, provision.NewCmdProvision, "db", "--class", "c", "--rebind=plan-change")
	req, err := o.Request(engine.Follow{})
	assert.NilError(t, err)
	assert.Equal(t, req.RebindOnUpdate, v1alpha1.RebindPlanChange)
}

func TestRebind_BadValuesAreUsageErrors(t *testing.T) {
	cmdtest.UsageErrors(t, []cmdtest.BadInvocation{
		{Args: []string{"update", "db", "--rebind=sometimes"}, Want: `invalid value "sometimes" for --rebind: give --rebind alone (or --rebind=once) for this update, or --rebind=always, --rebind=plan-change or --rebind=never for every update`},
		{Args: []string{"update", "db", "--rebind", "--revert"}, Want: "--revert sets the spec back to what the broker holds: give it alone, without --plan, parameters, --upgrade or --rebind"},
		{Args: []string{"update", "db", "--rebind", "--credentials-json", `{"a":"b"}`}, Want: "--rebind is for an instance of a broker"},
		{Args: []string{"provision", "db", "--class", "c", "--rebind=once"}, Want: `invalid value "once" for --rebind: give --rebind=always, --rebind=plan-change or --rebind=never`},
		{Args: []string{"provision", "db", "--user-provided", "--credentials-json", `{"a":"b"}`, "--rebind=always"}, Want: "--rebind is for an instance of a broker"},
	})
}
