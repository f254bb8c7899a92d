package lifecycle

import (
	"context"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
)

// A wait that comes to a call left to reconcile says so once, with when reconcile runs,
// instead of sitting silently until --timeout; a wait on anything else says nothing more.
func TestAnnounceReconcile_SaysOnceThatTheWaitIsForReconcile(t *testing.T) {
	v := &VerbOptions{Clients: cmdutil.Clients{ReconcileRuns: func(context.Context) string { return "at its next run, in 3m" }}}
	waiting := &v1alpha1.ServiceInstance{}
	waiting.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: engine.ReasonWaitingForReconcile}}
	var notes []string
	progressed := 0
	base := engine.Follow{Wait: true, Timeout: 3 * time.Second, Progress: func(engine.Result) { progressed++ }, Note: func(l string) { notes = append(notes, l) }}

	f := v.AnnounceReconcile(base)
	f.Progress(engine.Result{Message: "the broker is provisioning"})
	assert.Equal(t, len(notes), 0)
	f.Progress(engine.Result{Instance: waiting})
	f.Progress(engine.Result{Instance: waiting})
	assert.DeepEqual(t, notes, []string{"Waiting for reconcile to send the request: at its next run, in 3m; --timeout 3s ends this wait, not the request."})
	assert.Equal(t, progressed, 3)

	notes = nil
	base.Wait = false
	f = v.AnnounceReconcile(base)
	f.Progress(engine.Result{Instance: waiting})
	assert.Equal(t, len(notes), 0, "without --wait the verb's report says it")
}
