package describe_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	"gotest.tools/v3/golden"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/printers"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/cmdtest"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/describe"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/recordevents"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store/storetest"
)

// sample is a ready binding projected into a deployment, with a Secret holding a
// password.
func sample() (*v1alpha1.ServiceBinding, *corev1.Secret) {
	b := storetest.SampleBinding()
	b.CreationTimestamp = storetest.SampleTime()
	b.Status.InFlight, b.Status.OrphanMitigation = nil, nil
	b.Status.Retry = &v1alpha1.RetryState{Attempts: 2, Reason: "UnbindCallFailed", LastError: "503 Service Unavailable",
		NextRetryAt: &metav1.Time{Time: storetest.SampleTime().Add(time.Minute)}}
	b.Status.Bound.BindingID = b.Spec.ExternalID
	b.Spec.Projections = []v1alpha1.WorkloadProjection{{Kind: "Deployment", Name: "web"}, {Kind: "CronJob", Name: "report", Env: true, EnvPrefix: "DB_"}}
	b.Status.Projected = []v1alpha1.WorkloadProjection{{Kind: "Deployment", Name: "web"}, {Kind: "StatefulSet", Name: "old"}}
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "db-credentials", Namespace: b.Namespace},
		Data: map[string][]byte{"DATABASE_URL": []byte("postgresql://u:hunter2-pass@pg:5432/app"), "driver": []byte("postgres"), "blob": {0, 1, 2}}}
	return b, s
}

func TestBindingTable(t *testing.T) {
	b, _ := sample()
	due := b.DeepCopy()
	due.Name = "db-due"
	now := storetest.SampleTime().Add(24 * 24 * time.Hour) // past renew_before (23 days)
	fresh := b.DeepCopy()
	fresh.Name, fresh.Status.Bound.RenewBefore = "db-fresh", &metav1.Time{Time: now.Add(time.Hour)}
	deleting := fresh.DeepCopy()
	deleting.Name, deleting.DeletionTimestamp = "db-gone", &metav1.Time{Time: now}
	deleting.Status.Phase = v1alpha1.PhaseReady
	items := []v1alpha1.ServiceBinding{*due, *fresh, *deleting}
	for _, tc := range []struct {
		name   string
		withNS bool
		wide   bool
	}{{name: "bindings-table"}, {name: "bindings-table-wide-all", withNS: true, wide: true}} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			assert.NilError(t, printers.BindingTable(&buf, items, tc.withNS, tc.wide, now))
			golden.Assert(t, buf.String(), tc.name+".golden")
		})
	}
}

func TestDescribeBinding(t *testing.T) {
	b, s := sample()
	now := storetest.SampleTime().Add(24 * 24 * time.Hour)
	hidden := describe.BindingView(b, describe.SecretView{Secret: s}, now)
	// describe binding ends with the binding's Events.
	var events bytes.Buffer
	recordevents.Write(&events, []eventsv1.Event{{
		EventTime: metav1.NewMicroTime(now.Add(-3 * time.Minute)), ReportingController: "kubectl-catalog", ReportingInstance: "cli",
		Type: "Normal", Reason: "BindSucceeded", Note: "bind succeeded",
	}, {
		EventTime: metav1.NewMicroTime(now.Add(-2 * time.Minute)), ReportingController: "kubectl-catalog", ReportingInstance: "reconciler-0",
		Type: "Warning", Reason: "RetryScheduled", Note: "UnbindCallFailed: 503 Service Unavailable (attempt 2)",
		Series: &eventsv1.EventSeries{Count: 2, LastObservedTime: metav1.NewMicroTime(now.Add(-time.Minute))},
	}}, nil, b.Namespace, now)
	golden.Assert(t, hidden+events.String(), "binding.golden")
	assert.Assert(t, !strings.Contains(hidden, "hunter2-pass"), "a credential value is shown without --show-secrets")
	assert.Assert(t, is.Contains(hidden, "rotation due"))
	shown := describe.BindingView(b, describe.SecretView{Secret: s, Show: true}, now)
	golden.Assert(t, shown, "binding-show-secrets.golden")
	assert.Assert(t, is.Contains(shown, "hunter2-pass"))

	pending := b.DeepCopy()
	pending.Status.Secret, pending.Status.Bound = nil, nil
	assert.Assert(t, is.Contains(describe.BindingView(pending, describe.SecretView{}, now), "db-credentials (not written yet)"))
}

func TestDescribeBinding_ShowsTheIDInUseAtTheBroker(t *testing.T) {
	b, s := sample()
	b.Status.Predecessor = &v1alpha1.BindingReference{Name: b.Name, ExternalID: b.Spec.ExternalID}
	b.Status.ExternalID = "b-rotated"
	b.Status.ExternalIDs = []string{b.Spec.ExternalID, "b-earlier", "b-rotated"}
	b.Status.Retired = []string{b.Spec.ExternalID}

	out := describe.BindingView(b, describe.SecretView{Secret: s}, storetest.SampleTime().Time)

	assert.Assert(t, is.Contains(out, "Binding ID:       b-rotated (the spec's "+b.Spec.ExternalID+" is no longer used)"))
	assert.Assert(t, is.Contains(out, "Rotated from:     "+b.Spec.ExternalID+"\n"))
	assert.Assert(t, is.Contains(out, "Earlier IDs:      b-earlier (the broker may still hold them"))
}

func TestGetAndDescribeBinding_BadInvocations(t *testing.T) {
	cmdtest.UsageErrors(t, []cmdtest.BadInvocation{
		{Args: []string{"describe", "binding"}, Want: "needs the binding's NAME"},
		{Args: []string{"describe", "binding", "a", "b"}, Want: "takes one NAME"},
		{Args: []string{"get", "bindings", "-o", "nosuch"}, Want: "--output"},
		{Args: []string{"get", "bnd", "--no-such"}, Want: "unknown flag"},
	})
}
