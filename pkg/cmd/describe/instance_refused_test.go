package describe

import (
	"bytes"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	"gotest.tools/v3/golden"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/printers"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store/storetest"
)

// refusedInstance is db after the broker refused moving it from plan legacy with
// {"storage":20,"tags":["a"]} to plan small with a larger storage, a new key and a new
// parameters Secret.
func refusedInstance(t *testing.T) *v1alpha1.ServiceInstance {
	t.Helper()
	i := storetest.SampleInstance()
	i.CreationTimestamp = storetest.SampleTime()
	i.Spec.MaintenanceInfoVersion = ""
	i.Spec.Parameters = &runtime.RawExtension{Raw: []byte(`{"storage":50,"tags":["a"],"tier":"gold"}`)}
	i.Spec.ParametersFrom = append(i.Spec.ParametersFrom, v1alpha1.ParametersFromSource{SecretKeyRef: &v1alpha1.SecretKeyReference{Name: "db-extra"}})
	applied := &runtime.RawExtension{Raw: []byte(`{"storage":20,"tags":["a"]}`)}
	hashes, err := engine.InlineParameterHashes(applied)
	assert.NilError(t, err)
	msg := `the broker answered 400 Bad Request: storage above 40 needs plan large: the instance still runs with its previous plan and parameters; go back to them with "kubectl catalog update db --revert", or change the spec to try another update`
	i.Status = v1alpha1.ServiceInstanceStatus{
		OperationStatus: v1alpha1.OperationStatus{
			Phase: v1alpha1.PhaseReady, ObservedGeneration: 3,
			Conditions: []metav1.Condition{
				{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: engine.ReasonProvisioned, LastTransitionTime: storetest.SampleTime(),
					Message: "the broker holds the instance with its previous plan and parameters; the last update was refused (see the UpdateFailed condition)"},
				{Type: v1alpha1.ConditionUpdateFailed, Status: metav1.ConditionTrue, Reason: engine.ReasonUpdateRejected, LastTransitionTime: storetest.SampleTime(), Message: msg},
			},
		},
		Provisioned: &v1alpha1.ProvisionedState{
			PlanID: "0c5e2f5a-legacy", ParametersChecksum: "hmac-sha256:00", ParameterHashes: hashes,
			Parameters: &v1alpha1.AppliedParameters{Inline: applied, From: i.Spec.ParametersFrom[:1]},
		},
	}
	i.Generation = 3
	return i
}

func TestGetInstances_RefusedUpdate_ShowsReadyWithTheReason(t *testing.T) {
	i := refusedInstance(t)
	var buf bytes.Buffer

	assert.NilError(t, printers.InstanceTable(&buf, []v1alpha1.ServiceInstance{*i}, false, false, storetest.SampleTime().Add(49*time.Hour)))

	golden.Assert(t, buf.String(), "instances-table-refused.golden")
}

func TestDescribeInstance_RefusedUpdate_ShowsRequestedAndApplied(t *testing.T) {
	i := refusedInstance(t)

	out := InstanceView(i, storetest.SampleClass(), []string{"db-app"}, storetest.SampleTime().Add(time.Hour))

	golden.Assert(t, out, "instance-refused.golden")
}

// An update that sends an unchanged key again drops its hash; refused, the recorded
// values still say the broker holds it.
func TestDescribeInstance_RefusedUpdateThatSentUnchangedKeys_ListsOnlyWhatDiffers(t *testing.T) {
	i := refusedInstance(t)
	delete(i.Status.Provisioned.ParameterHashes, "tags")

	out := InstanceView(i, storetest.SampleClass(), []string{"db-app"}, storetest.SampleTime().Add(time.Hour))

	golden.Assert(t, out, "instance-refused.golden")
}

func TestDescribeInstance_ValuesNotRecorded_SaysSo(t *testing.T) {
	i := refusedInstance(t)
	i.Status.Provisioned.Parameters = nil

	out := InstanceView(i, nil, nil, storetest.SampleTime().Add(time.Hour))

	golden.Assert(t, out, "instance-refused-unrecorded.golden")
}

// untrustedInstance is db as the engine leaves it when it refuses to re-send a provision
// the broker may still be working on: its author cannot be verified.
func untrustedInstance() *v1alpha1.ServiceInstance {
	i := storetest.SampleInstance()
	i.CreationTimestamp = storetest.SampleTime()
	i.Status.OrphanMitigation = nil
	msg := `refused to read Secret "db-params" on the record's behalf: the catalog's trust policy is not in force (no policy), so the author of instance "db" cannot be verified: an administrator runs "kubectl catalog init"`
	next := metav1.NewTime(storetest.SampleTime().Add(2 * time.Minute))
	i.Status.OperationStatus = v1alpha1.OperationStatus{
		Phase: v1alpha1.PhaseFailed,
		InFlight: &v1alpha1.Operation{Type: v1alpha1.OperationProvision, InstanceID: storetest.InstanceID, RequestID: "r-1",
			StartedAt: storetest.SampleTime()},
		Retry: &v1alpha1.RetryState{Attempts: 1, Reason: engine.ReasonRefusedAuthorUnverified, LastError: msg, NextRetryAt: &next},
		Conditions: []metav1.Condition{
			{Type: v1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: engine.ReasonRefusedAuthorUnverified, LastTransitionTime: storetest.SampleTime(), Message: msg},
			{Type: v1alpha1.ConditionRefused, Status: metav1.ConditionTrue, Reason: engine.ReasonRefusedAuthorUnverified, LastTransitionTime: storetest.SampleTime(),
				Message: msg + "; nothing is sent to the broker for this record until that changes"},
		},
	}
	return i
}

func TestGetInstances_RefusedByTrust_ShowsRefusedNotFailed(t *testing.T) {
	i := untrustedInstance()
	deleting := i.DeepCopy()
	deleting.Name, deleting.DeletionTimestamp = "old", &metav1.Time{Time: storetest.SampleTime().Add(time.Hour)}
	var buf bytes.Buffer

	assert.NilError(t, printers.InstanceTable(&buf, []v1alpha1.ServiceInstance{*i, *deleting}, false, false, storetest.SampleTime().Add(2*time.Hour)))

	golden.Assert(t, buf.String(), "instances-table-untrusted.golden")
}

func TestDescribeInstance_RefusedByTrust_SaysWhyWhatIsHeldBackAndTheFix(t *testing.T) {
	out := InstanceView(untrustedInstance(), storetest.SampleClass(), nil, storetest.SampleTime().Add(time.Hour))

	golden.Assert(t, out, "instance-untrusted.golden")
}
