package engine

import (
	"context"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// takeOver writes, as anyone who may update the ConfigMap of instance team-b/name may,
// OSB id id into its status as the id in use and one the broker holds.
func (f *fixture) takeOver(name, id string) {
	f.t.Helper()
	_, err := f.st.Instances().UpdateWithRetry(context.Background(), "team-b", name, func(i *v1alpha1.ServiceInstance) error {
		i.Status.ExternalID = id
		i.Status.ExternalIDs = append(i.Status.ExternalIDs, id)
		i.Status.Provisioned = &v1alpha1.ProvisionedState{PlanID: planSmall}
		i.Status.Phase = v1alpha1.PhaseReady
		return nil
	})
	assert.NilError(f.t, err)
}

func TestIDOwner_AnIDCopiedIntoTheStatusOfAnOlderRecord_IsNeverSentForIt(t *testing.T) {
	f := newFixture(t)
	// The attacker's record is the older one: created before the victim's.
	_, err := f.st.Instances().Create(store.WithIntent(context.Background()), forgedInstance("early", "team-b", v1alpha1.NewNamespaceBoundID("team-b"), nil))
	assert.NilError(t, err)
	f.advance(2 * time.Second)
	victim := f.provisioned("db", planSmall, "")
	id := victim.CurrentExternalID()
	f.takeOver("early", id)

	t.Run("the victim's record goes on", func(t *testing.T) {
		f.editInstance(func(i *v1alpha1.ServiceInstance) { i.Spec.PlanID, i.Spec.PlanExternalName = planLarge, "large" })
		res := f.step("db")
		assert.Assert(t, !res.Refused, "%+v", res)
		assert.Equal(t, len(f.broker.Calls()), 1)
		assert.Equal(t, f.broker.Calls()[0].Method, "Update")
		f.broker.ResetCalls()
	})
	t.Run("a bind through the copy", func(t *testing.T) {
		f.broker.BindReturns(nil, nil)
		_, err := f.st.Bindings().Create(store.WithIntent(context.Background()), NewBinding(BindingIntent{Namespace: "team-b", Name: "steal", Instance: "early", SecretName: "steal"}))
		assert.NilError(t, err)
		res := f.stepBindingIn("team-b", "steal")
		assert.Assert(t, res.Refused, "%+v", res)
		b := assertBindingRefused(t, f, "team-b", "steal", ReasonRefusedIDNotOwned)
		c := meta.FindStatusCondition(b.Status.Conditions, v1alpha1.ConditionRefused)
		assert.Assert(t, strings.Contains(c.Message, id), c.Message)
		assert.Equal(t, len(f.broker.Calls()), 0, "nothing is sent for a refused record")
	})
	t.Run("deleting the copy", func(t *testing.T) {
		rec := &fakeEvents{}
		f.engine.cfg.Events = rec
		assert.NilError(t, f.st.Bindings().Delete(context.Background(), "team-b", "steal"))
		f.stepBindingIn("team-b", "steal")
		assert.NilError(t, f.st.Instances().Delete(context.Background(), "team-b", "early"))
		// The id it does not own is never sent for it, and keeps its deletion from
		// finishing no more: it is forgotten, visibly.
		var res Result
		for range 3 {
			if res = f.stepRecord(&v1alpha1.ServiceInstance{ObjectMeta: metav1.ObjectMeta{Namespace: "team-b", Name: "early"}}); res.State == StateDeleted {
				break
			}
		}
		assert.Equal(t, res.State, StateDeleted, "%+v", res)
		for _, c := range f.broker.Calls() {
			// Only the id it owns may be deleted at the broker.
			assert.Assert(t, c.Method != "Deprovision" || c.Request.(osb.DeprovisionRequest).InstanceID != id, "%+v", c)
		}
		_, err := f.st.Instances().Get(context.Background(), "team-b", "early")
		assert.Assert(t, store.IsNotFound(err), "%v", err)
		var notes []string
		for _, ev := range rec.evs {
			if ev.Reason == ReasonUnownedIDsForgotten {
				notes = append(notes, ev.Namespace+"/"+ev.Name+": "+ev.Note)
			}
		}
		assert.Equal(t, len(notes), 1, "%v", rec.evs)
		assert.Assert(t, strings.Contains(notes[0], "team-b/catalog-instance.early: instance \"early\" in namespace \"team-b\" lists OSB id(s) ["+id+"]"), notes[0])
	})
}

func TestIDOwner_AnIDBoundToAnotherNamespace_IsNotAdoptedThroughTheSpec(t *testing.T) {
	f := newFixture(t)
	id := v1alpha1.NewNamespaceBoundID(ns)
	// A spec naming another namespace's id: written after the victim's record or
	// before it, it is never this record's.
	_, err := f.st.Instances().Create(store.WithIntent(context.Background()), forgedInstance("copy", "team-b", id, nil))
	assert.NilError(t, err)

	res := f.stepRecord(&v1alpha1.ServiceInstance{ObjectMeta: metav1.ObjectMeta{Namespace: "team-b", Name: "copy"}})

	assertRefused(t, f, res, "team-b", "copy", ReasonRefusedIDNotOwned)
}

func TestIDOwner_APredecessorInTheStatus_IsSentOnlyWhenItIsTheBindingsOwn(t *testing.T) {
	f, _ := bindingFixture(t, func(c *v1alpha1.ServiceClass) { c.Spec.Plans[0].BindingRotatable = true })
	f.createBinding("victim", nil)
	assert.Equal(t, f.driveBinding("victim").State, StateSettled)
	victimID := f.getBinding("victim").CurrentExternalID()
	f.createBinding("mine", func(in *BindingIntent) { in.ExternalID = "" })
	_, err := f.st.Bindings().UpdateWithRetry(context.Background(), ns, "mine", func(b *v1alpha1.ServiceBinding) error {
		b.Status.Predecessor = &v1alpha1.BindingReference{Name: "victim", ExternalID: victimID}
		return nil
	})
	assert.NilError(t, err)
	f.broker.ResetCalls()

	res := f.stepBinding("mine")

	assert.Assert(t, res.Refused, "%+v", res)
	assertBindingRefused(t, f, ns, "mine", ReasonRefusedIDNotOwned)
	assert.Equal(t, len(f.broker.Calls()), 0)
}
