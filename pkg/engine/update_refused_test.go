package engine

import (
	"context"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb/fake"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// refuseUpdate changes db's spec (plan large, a changed and a new parameter) and lets
// the broker refuse it as refusal says.
func refuseUpdate(t *testing.T, f *fixture, refusal string) Result {
	t.Helper()
	no := false
	setIntent(t, f, func(i *v1alpha1.ServiceInstance) {
		i.Spec.PlanID, i.Spec.PlanExternalName = planLarge, "large"
		i.Spec.Parameters = &runtime.RawExtension{Raw: []byte(`{"a":2,"b":"x","c":true}`)}
	})
	switch refusal {
	case "400":
		f.broker.UpdateReturns(nil, fake.HTTPError("PATCH", 400, "", "plan large is sold out"))
	case "update_repeatable false":
		f.broker.UpdateReturns(nil, &osb.HTTPStatusError{StatusCode: 422, Description: "resize failed", UpdateRepeatable: &no})
	case "async failed, not repeatable":
		f.broker.UpdateReturns(&osb.UpdateResponse{StatusCode: 202, Async: true, Operation: "up"}, nil)
		f.broker.SetPollSequence("up", fake.PollStep{Response: &osb.LastOperationResponse{State: osb.StateFailed, Description: "resize failed", UpdateRepeatable: &no}})
		f.step("db")
		f.advance(2 * time.Second)
	case "unusable":
		f.broker.UpdateReturns(nil, &osb.HTTPStatusError{StatusCode: 400, Description: "disk lost", InstanceUsable: &no})
	default:
		t.Fatalf("unknown refusal %q", refusal)
	}
	return f.step("db")
}

func TestStepInstance_RefusedUpdate_StaysReadyAtWhatTheBrokerHolds(t *testing.T) {
	for _, tc := range []struct {
		refusal, reason, words string
	}{
		{refusal: "400", reason: ReasonUpdateRejected, words: "plan large is sold out"},
		{refusal: "update_repeatable false", reason: ReasonUpdateNotRepeatable, words: "resize failed"},
		{refusal: "async failed, not repeatable", reason: ReasonUpdateNotRepeatable, words: "resize failed"},
	} {
		t.Run(tc.refusal, func(t *testing.T) {
			f := newFixture(t)
			f.provisioned("db", planSmall, `{"a":1,"b":"x"}`)
			before := f.get("db").Status.Provisioned.DeepCopy()

			res := refuseUpdate(t, f, tc.refusal)

			inst := f.get("db")
			assert.Equal(t, res.State, StateNeedsUser, res.Message)
			assert.Assert(t, is.Contains(res.Message, tc.words))
			assert.Assert(t, is.Contains(res.Message, `"kubectl catalog update db --revert -n dev"`))
			assert.Equal(t, inst.Status.Phase, v1alpha1.PhaseReady)
			assert.Equal(t, condition(inst, v1alpha1.ConditionReady).Status, metav1.ConditionTrue)
			failed := condition(inst, v1alpha1.ConditionUpdateFailed)
			assert.Equal(t, failed.Status, metav1.ConditionTrue)
			assert.Equal(t, failed.Reason, tc.reason)
			assert.Assert(t, is.Contains(failed.Message, "still runs with its previous plan and parameters"))
			assert.Equal(t, condition(inst, v1alpha1.ConditionFailed).Type, "", "no Failed condition: the instance runs")
			assert.DeepEqual(t, inst.Status.Provisioned, before)
			assert.Assert(t, !inst.HasPendingWork())
			assert.NilError(t, CheckBindable(inst, f.class()))

			calls := len(f.broker.Calls())
			f.advance(time.Hour)
			assert.Equal(t, f.step("db").State, StateNeedsUser)
			assert.Equal(t, len(f.broker.Calls()), calls, "a refused update is not sent again until the spec changes")
		})
	}
}

func TestStepInstance_RefusedUpdateOfUnusableInstance_IsFailedAndNotBindable(t *testing.T) {
	f := newFixture(t)
	f.provisioned("db", planSmall, `{"a":1}`)

	res := refuseUpdate(t, f, "unusable")

	inst := f.get("db")
	assert.Equal(t, res.State, StateNeedsUser)
	assert.Equal(t, inst.Status.Phase, v1alpha1.PhaseFailed)
	assert.Equal(t, condition(inst, v1alpha1.ConditionReady).Status, metav1.ConditionFalse)
	assert.Equal(t, condition(inst, v1alpha1.ConditionUpdateFailed).Reason, ReasonUpdateRejected)
	assert.ErrorContains(t, CheckBindable(inst, f.class()), "unusable")
}

func TestStepInstance_PlanNotUpdateable_StaysReadyWithUpdateFailed(t *testing.T) {
	f := newFixture(t)
	f.provisioned("db", planFixed, "")
	setSpec(t, f, "db", func(i *v1alpha1.ServiceInstance) { i.Spec.PlanID, i.Spec.PlanExternalName = planLarge, "large" })

	res := f.step("db")

	inst := f.get("db")
	assert.Equal(t, res.State, StateNeedsUser)
	assert.Equal(t, inst.Status.Phase, v1alpha1.PhaseReady)
	assert.Equal(t, condition(inst, v1alpha1.ConditionReady).Status, metav1.ConditionTrue)
	assert.Assert(t, is.Contains(condition(inst, v1alpha1.ConditionUpdateFailed).Message, "plan_updateable: false"))
	assert.Assert(t, is.Len(f.broker.Calls(), 0))
}

func TestStepInstance_Success_RecordsTheParametersAsTheSpecNamedThem(t *testing.T) {
	f := newFixture(t)
	_, err := f.cluster.Core.CoreV1().Secrets(ns).Create(context.Background(), secret("db-params", map[string]string{"extra": `{"password":"hunter2"}`}), metav1.CreateOptions{})
	assert.NilError(t, err)
	inst := f.create("db", planSmall, `{"a":1}`)
	inst.Spec.ParametersFrom = []v1alpha1.ParametersFromSource{{SecretKeyRef: &v1alpha1.SecretKeyReference{Name: "db-params", Key: "extra"}}}
	_, err = f.st.Instances().Update(store.WithIntent(context.Background()), inst)
	assert.NilError(t, err)

	assert.Equal(t, f.step("db").State, StateSettled)

	applied := f.get("db").Status.Provisioned.Parameters
	assert.Assert(t, applied != nil)
	assert.Equal(t, string(applied.Inline.Raw), `{"a":1}`)
	assert.DeepEqual(t, applied.From, inst.Spec.ParametersFrom)
	cm, err := f.cluster.Core.CoreV1().ConfigMaps(ns).Get(context.Background(), store.ConfigMapName(v1alpha1.KindServiceInstance, "db"), metav1.GetOptions{})
	assert.NilError(t, err)
	for k, v := range cm.Data {
		assert.Assert(t, !strings.Contains(v, "hunter2"), "a Secret's value in the record's key %s", k)
	}
}

func TestRevert_AfterARefusedUpdate_SettlesReadyWithoutCallingTheBroker(t *testing.T) {
	f := newFixture(t)
	_, err := f.cluster.Core.CoreV1().Secrets(ns).Create(context.Background(), secret("db-params", map[string]string{"extra": `{"password":"hunter2"}`}), metav1.CreateOptions{})
	assert.NilError(t, err)
	inst := f.create("db", planSmall, `{"a":1,"b":"x"}`)
	from := []v1alpha1.ParametersFromSource{{SecretKeyRef: &v1alpha1.SecretKeyReference{Name: "db-params", Key: "extra"}}}
	inst.Spec.ParametersFrom = from
	_, err = f.st.Instances().Update(store.WithIntent(context.Background()), inst)
	assert.NilError(t, err)
	assert.Equal(t, f.step("db").State, StateSettled)
	setIntent(t, f, func(i *v1alpha1.ServiceInstance) {
		i.Spec.ParametersFrom = append(i.Spec.ParametersFrom, v1alpha1.ParametersFromSource{SecretKeyRef: &v1alpha1.SecretKeyReference{Name: "other"}})
	})
	_, err = f.cluster.Core.CoreV1().Secrets(ns).Create(context.Background(), secret("other", map[string]string{"tier": "gold"}), metav1.CreateOptions{})
	assert.NilError(t, err)
	refuseUpdate(t, f, "400")
	f.broker.ResetCalls()

	reverted, changes, err := f.engine.revertSpec(context.Background(), ns, "db")

	assert.NilError(t, err)
	assert.DeepEqual(t, changes, []string{"plan small", `parameters {"a":1,"b":"x"}`, "parameters from Secret db-params/extra"})
	assert.Equal(t, reverted.Spec.PlanID, planSmall)
	assert.Equal(t, reverted.Spec.PlanExternalName, "small")
	assert.Equal(t, string(reverted.Spec.Parameters.Raw), `{"a":1,"b":"x"}`)
	assert.DeepEqual(t, reverted.Spec.ParametersFrom, from)

	res := f.step("db")

	inst = f.get("db")
	assert.Equal(t, res.State, StateSettled, res.Message)
	assert.Assert(t, is.Len(f.broker.Calls(), 0), "the broker holds this already")
	assert.Equal(t, condition(inst, v1alpha1.ConditionUpdateFailed).Type, "")
	assert.Equal(t, condition(inst, v1alpha1.ConditionReady).Message, "the broker holds the instance as specified")
	assert.Equal(t, inst.Status.Phase, v1alpha1.PhaseReady)
	assert.Assert(t, !inst.HasPendingWork())
}

func TestRevert_WithoutRecordedParameters_UsesTheHashesTheBrokerHolds(t *testing.T) {
	for _, tc := range []struct {
		name, requested, want, wantErr string
	}{
		{name: "a parameter the broker never got is dropped", requested: `{"a":1,"c":true}`, want: `{"a":1}`},
		{name: "a changed value cannot be restored", requested: `{"a":2}`, wantErr: "parameters a are not recorded"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.provisioned("db", planSmall, `{"a":1}`)
			// As an earlier release left it: hashes, no values.
			_, err := f.st.Instances().UpdateWithRetry(context.Background(), ns, "db", func(i *v1alpha1.ServiceInstance) error {
				i.Status.Provisioned.Parameters = nil
				return nil
			})
			assert.NilError(t, err)
			setSpec(t, f, "db", func(i *v1alpha1.ServiceInstance) { i.Spec.Parameters.Raw = []byte(tc.requested) })
			f.broker.UpdateReturns(nil, fake.HTTPError("PATCH", 400, "", "no"))
			f.step("db")

			reverted, _, err := f.engine.revertSpec(context.Background(), ns, "db")

			if tc.wantErr != "" {
				assert.ErrorContains(t, err, tc.wantErr)
				return
			}
			assert.NilError(t, err)
			assert.Equal(t, string(reverted.Spec.Parameters.Raw), tc.want)
			assert.Equal(t, f.step("db").State, StateSettled)
		})
	}
}

func TestRevert_NothingToRevert_WritesNothing(t *testing.T) {
	f := newFixture(t)
	f.provisioned("db", planSmall, `{"a":1}`)
	rv := f.get("db").ResourceVersion

	_, changes, err := f.engine.revertSpec(context.Background(), ns, "db")

	assert.NilError(t, err)
	assert.Assert(t, is.Len(changes, 0))
	assert.Equal(t, f.get("db").ResourceVersion, rv)
}

func TestRevert_RefusesAnInstanceWithAnOperationInFlight(t *testing.T) {
	f := newFixture(t)
	f.provisioned("db", planSmall, `{"a":1}`)
	setSpec(t, f, "db", func(i *v1alpha1.ServiceInstance) { i.Spec.Parameters.Raw = []byte(`{"a":2}`) })
	f.broker.UpdateReturns(&osb.UpdateResponse{StatusCode: 202, Async: true, Operation: "up"}, nil)
	f.step("db")

	_, _, err := f.engine.revertSpec(context.Background(), ns, "db")

	assert.ErrorContains(t, err, "still updating")
}

// setIntent changes db's spec as a verb does, as the user's intent.
func setIntent(t *testing.T, f *fixture, mutate func(*v1alpha1.ServiceInstance)) {
	t.Helper()
	_, err := f.st.Instances().UpdateWithRetry(store.WithIntent(context.Background()), ns, "db", func(i *v1alpha1.ServiceInstance) error {
		mutate(i)
		return nil
	})
	assert.NilError(t, err)
}

// class is the fixture's class record.
func (f *fixture) class() *v1alpha1.ServiceClass {
	f.t.Helper()
	c, err := f.st.Classes().Get(context.Background(), f.classNamespace(), v1alpha1.ClassRecordName(brokerName, classID))
	assert.NilError(f.t, err)
	return c
}
