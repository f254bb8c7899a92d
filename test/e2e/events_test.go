package e2e

import (
	"context"
	"encoding/json"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/test/broker"
	"github.com/kubectl-catalog/kubectl-catalog/test/controlplane"
)

// A provision leaves Events about the instance's ConfigMap that the real kubectl lists.
func TestEvents_ProvisionLeavesEventsOnTheRecord(t *testing.T) {
	t.Parallel()
	ns, _, _ := instSetup(t)

	r := instCatalog(t, ns, "provision", "db", "--class", "postgresql", "--plan", "hobby", "-p", "storage_gb=5")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)

	r = kubectl(t, controlplane.AdminUser, "get", "events", "-n", ns,
		"--field-selector", "involvedObject.name=catalog-instance.db",
		"-o", "custom-columns=REASON:.reason,TYPE:.type,CONTROLLER:.reportingComponent,NOTE:.message")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	assert.Assert(t, is.Contains(r.Stdout, "ProvisionRequested"))
	assert.Assert(t, is.Contains(r.Stdout, "ProvisionSucceeded"))
	assert.Assert(t, is.Contains(r.Stdout, "kubectl-catalog"))
}

// A record retried over several reconcile runs leaves one Event object per reason, each
// repeat counted in its series, not one object per attempt; what a run held back is
// written before it ends, so the counts are the attempts. (Fifty attempts and the bound
// on objects are checked on the engine with a fake clock:
// TestEvents_ARecordRetriedFiftyTimesByShortRuns_LeavesFewEventsCountingEveryAttempt in
// pkg/engine.)
func TestEvents_ARecordRetriedOverSeveralRuns_LeavesFewEventsCountingEveryAttempt(t *testing.T) {
	t.Parallel()
	ns, b, st := instSetup(t)
	_, err := b.InjectFault(broker.Fault{Op: broker.OpProvision, Action: broker.ActionRespond, Status: 500, Description: "database on fire", Times: 10000})
	assert.NilError(t, err)
	r := instCatalog(t, ns, "provision", "db", "--class", "postgresql", "--plan", "hobby")
	assert.Assert(t, is.Contains(r.Stderr, "database on fire"), r.Stderr)

	env := []string{cmdutil.TestRetryBackoffEnv + "=5ms,10ms"}
	attempts := func() int32 {
		inst, err := st.Instances().Get(context.Background(), ns, "db")
		assert.NilError(t, err)
		if inst.Status.Retry == nil {
			return 0
		}
		return inst.Status.Retry.Attempts
	}
	runs := 0
	for runs < 2 || attempts() < 6 {
		assert.Assert(t, runs < 30, "only %d attempts after %d runs", attempts(), runs)
		recRun(t, ns, env, "--retry-horizon", "0", "--max-duration", "2s")
		runs++
	}
	provisions := len(b.RequestsFor(broker.OpProvision))
	assert.Assert(t, provisions >= 6)

	r = kubectl(t, controlplane.AdminUser, "get", "events", "-n", ns,
		"--field-selector", "involvedObject.name=catalog-instance.db", "-o", "json")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	var list struct {
		Items []struct {
			Reason string `json:"reason"`
			Series *struct {
				Count int `json:"count"`
			} `json:"series"`
		} `json:"items"`
	}
	assert.NilError(t, json.Unmarshal([]byte(r.Stdout), &list))
	assert.Assert(t, len(list.Items) > 0)
	assert.Assert(t, len(list.Items) <= 6, "%d Event objects for %d attempts: %+v", len(list.Items), attempts(), list.Items)
	counts := map[string]int{}
	for _, it := range list.Items {
		n := 1
		if it.Series != nil {
			n = it.Series.Count
		}
		counts[it.Reason] += n
	}
	assert.Equal(t, counts["ProvisionFailed"], provisions, "every failed provision is counted once: %v", counts)
	assert.Equal(t, counts["ProvisionRequested"], provisions, "every provision sent is counted once: %v", counts)
}
