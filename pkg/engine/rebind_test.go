package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb/fake"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// rebindFixture is a ready instance "db" with two bound bindings, "a" and "b", whose
// binds answer credentials numbered in the order the broker made them.
func rebindFixture(t *testing.T) (*fixture, *fakeEvents) {
	t.Helper()
	f, _ := bindingFixture(t, nil)
	var n atomic.Int32
	f.broker.OnBind(func(_ context.Context, req *osb.BindRequest) (*osb.BindResponse, error) {
		return &osb.BindResponse{StatusCode: 201, Credentials: map[string]any{"password": fmt.Sprintf("pw-%d", n.Add(1))}}, nil
	})
	for _, name := range []string{"a", "b"} {
		f.createBinding(name, func(in *BindingIntent) { in.ExternalID = "osb-" + name })
		assert.Equal(t, f.driveBinding(name).State, StateSettled)
	}
	f.broker.ResetCalls()
	f.clockMoves()
	rec := &fakeEvents{}
	f.engine.cfg.Events = rec
	return f, rec
}

// brokerLog is the broker's calls in order, as METHOD ID.
func brokerLog(f *fixture) []string {
	var out []string
	for _, c := range f.broker.Calls() {
		switch r := c.Request.(type) {
		case osb.UpdateRequest:
			out = append(out, "update "+r.PlanID)
		case osb.BindRequest:
			out = append(out, "bind predecessor="+r.PredecessorBindingID)
		case osb.UnbindRequest:
			out = append(out, "unbind "+r.BindingID)
		default:
			out = append(out, c.Method)
		}
	}
	return out
}

func TestUpdateRebind_IntentIsRecordedBeforeTheUpdateIsSent(t *testing.T) {
	f, _ := rebindFixture(t)
	var seen *v1alpha1.RebindStatus
	f.hook = func(p HookPoint, op *v1alpha1.Operation) {
		if p == HookBeforeBrokerCall && op.Type == v1alpha1.OperationUpdate {
			seen = f.get("db").Status.Rebind.DeepCopy()
		}
	}

	_, err := f.engine.Update(context.Background(), InstanceUpdateRequest{Namespace: ns, Name: "db",
		UpdateRequest: UpdateRequest{Plan: "large"}, Rebind: true, Follow: Follow{Wait: true}})

	assert.NilError(t, err)
	assert.Assert(t, seen != nil, "status.rebind was not written before the update was sent")
	assert.Equal(t, seen.Reason, RebindOnce)
	assert.Assert(t, seen.AfterUpdate)
	assert.Assert(t, seen.Current == nil)
}

func TestUpdateRebind_RotatesEachBindingOneAtATime_OldIDUnboundAfterItsSecret(t *testing.T) {
	f, rec := rebindFixture(t)
	unboundWith := map[string]string{}
	f.broker.OnUnbind(func(_ context.Context, req *osb.UnbindRequest) (*osb.UnbindResponse, error) {
		// What the binding's Secret holds when its old id is unbound.
		for _, name := range []string{"a", "b"} {
			if req.BindingID == "osb-"+name {
				unboundWith[name] = string(f.secretData(name)["password"])
			}
		}
		return &osb.UnbindResponse{StatusCode: 200}, nil
	})
	var said notes

	res, err := f.engine.Update(context.Background(), InstanceUpdateRequest{Namespace: ns, Name: "db",
		UpdateRequest: UpdateRequest{Plan: "large"}, Rebind: true, Follow: said.follow(false)})

	assert.NilError(t, err)
	assert.Equal(t, res.State, StateSettled, res.Message)
	assert.DeepEqual(t, brokerLog(f), []string{"update " + planLarge, "bind predecessor=", "unbind osb-a", "bind predecessor=", "unbind osb-b"})
	assert.DeepEqual(t, unboundWith, map[string]string{"a": "pw-3", "b": "pw-4"})
	for _, name := range []string{"a", "b"} {
		b := f.getBinding(name)
		assert.Assert(t, b.CurrentExternalID() != "osb-"+name)
		assert.Equal(t, b.Status.Bound.BindingID, b.CurrentExternalID())
		assert.Assert(t, is.Len(b.Status.Retired, 0))
	}
	inst := f.get("db")
	assert.Assert(t, inst.Status.Rebind == nil)
	assert.Assert(t, !inst.HasPendingWork())
	c := meta.FindStatusCondition(inst.Status.Conditions, ConditionBindingsRebound)
	assert.Assert(t, c != nil && c.Status == metav1.ConditionTrue)
	assert.Equal(t, c.Message, `bindings rotated after the update ("update --rebind"): dev/a, dev/b`)
	assert.Assert(t, is.Contains(strings.Join(said, "\n"), `Once the instance settled, its bindings are rotated (dev/a, dev/b), one at a time.`))
	reasons := strings.Join(rec.reasons(), ",")
	assert.Assert(t, is.Contains(reasons, "RebindRequested"))
	assert.Assert(t, strings.Count(reasons, ReasonBindingRotated) == 2, reasons)
	assert.Assert(t, is.Contains(reasons, ReasonBindingsRebound))
}

func TestUpdateRebind_BindingRotatable_NamesThePredecessor(t *testing.T) {
	f, _ := rebindFixture(t)
	_, err := f.st.Classes().UpdateWithRetry(context.Background(), f.classNamespace(), v1alpha1.ClassRecordName(brokerName, classID),
		func(c *v1alpha1.ServiceClass) error {
			for i := range c.Spec.Plans {
				c.Spec.Plans[i].BindingRotatable = true
			}
			return nil
		})
	assert.NilError(t, err)

	_, err = f.engine.Update(context.Background(), InstanceUpdateRequest{Namespace: ns, Name: "db",
		UpdateRequest: UpdateRequest{Plan: "large"}, Rebind: true, Follow: Follow{Wait: true}})

	assert.NilError(t, err)
	assert.DeepEqual(t, brokerLog(f), []string{"update " + planLarge, "bind predecessor=osb-a", "unbind osb-a", "bind predecessor=osb-b", "unbind osb-b"})
}

func TestUpdateRebind_FailedRotationKeepsTheOldCredentialsAndSaysSo(t *testing.T) {
	f, rec := rebindFixture(t)
	f.broker.OnBind(func(context.Context, *osb.BindRequest) (*osb.BindResponse, error) {
		return nil, fake.HTTPError("PUT", 400, "BadRequest", "no more bindings today")
	})

	res, err := f.engine.Update(context.Background(), InstanceUpdateRequest{Namespace: ns, Name: "db",
		UpdateRequest: UpdateRequest{Plan: "large"}, Rebind: true, Follow: Follow{Wait: true}})

	assert.NilError(t, err)
	assert.Equal(t, res.State, StateSettled, res.Message)
	assert.Assert(t, is.Len(f.broker.CallsTo(fake.MethodUnbind), 0), "an old id was unbound: %v", brokerLog(f))
	for i, name := range []string{"a", "b"} {
		assert.Equal(t, string(f.secretData(name)["password"]), fmt.Sprintf("pw-%d", i+1))
		assert.Equal(t, f.getBinding(name).Status.Bound.BindingID, "osb-"+name)
	}
	inst := f.get("db")
	assert.Assert(t, inst.Status.Rebind == nil)
	c := meta.FindStatusCondition(inst.Status.Conditions, ConditionBindingsRebound)
	assert.Assert(t, c != nil && c.Status == metav1.ConditionFalse)
	assert.Assert(t, is.Contains(c.Message, "rotation failed, old credentials kept: dev/a, dev/b"))
	var onBinding int
	for _, ev := range rec.evs {
		if ev.Reason == ReasonBindingRotationFailed && ev.Name == "catalog-binding.a" {
			onBinding++
			assert.Assert(t, is.Contains(ev.Note, `the Secret "a" keeps the old credentials (binding id osb-a)`))
		}
	}
	assert.Equal(t, onBinding, 1)
}

func TestUpdateRebind_RefusedUpdateRotatesNothing(t *testing.T) {
	f, _ := rebindFixture(t)
	f.broker.UpdateReturns(nil, fake.HTTPError("PATCH", 400, "BadRequest", "no"))

	_, err := f.engine.Update(context.Background(), InstanceUpdateRequest{Namespace: ns, Name: "db",
		UpdateRequest: UpdateRequest{Plan: "large"}, Rebind: true, Follow: Follow{Wait: true}})

	_ = err // the verb reports the refusal from the record (UpdateFailed)
	assert.DeepEqual(t, brokerLog(f), []string{"update " + planLarge})
	inst := f.get("db")
	assert.Assert(t, inst.Status.Rebind == nil)
	c := meta.FindStatusCondition(inst.Status.Conditions, ConditionBindingsRebound)
	assert.Assert(t, c != nil && c.Reason == ReasonRebindSkipped)
}

// The rebind is written ahead and carried out by the instance's steps, so an
// interruption after the first rotation leaves it to the next driver (reconcile), which
// rotates the second binding only and leaves no id at the broker that a record does
// not name.
func TestUpdateRebind_InterruptedAfterTheFirstRotation_TheNextStepsFinishIt(t *testing.T) {
	f, _ := rebindFixture(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f.broker.OnUnbind(func(_ context.Context, req *osb.UnbindRequest) (*osb.UnbindResponse, error) {
		if req.BindingID == "osb-a" {
			cancel()
		}
		return &osb.UnbindResponse{StatusCode: 200}, nil
	})

	_, err := f.engine.Update(ctx, InstanceUpdateRequest{Namespace: ns, Name: "db",
		UpdateRequest: UpdateRequest{Plan: "large"}, Rebind: true, Follow: Follow{Wait: true}})

	assert.Assert(t, err != nil)
	assert.Assert(t, f.get("db").Status.Rebind != nil)
	assert.Assert(t, f.get("db").HasPendingWork())
	f.advance(DefaultMitigationGrace) // past the grace for the broker's work on the interrupted unbind
	for range 20 {
		if f.get("db").Status.Rebind == nil {
			break
		}
		if b := f.getBinding("a"); b.HasPendingWork() {
			f.stepBinding("a")
		}
		f.step("db")
	}
	// The interrupted unbind of osb-a is sent again (its answer was not recorded); each
	// binding is rotated once.
	assert.DeepEqual(t, brokerLog(f), []string{"update " + planLarge, "bind predecessor=", "unbind osb-a", "unbind osb-a", "bind predecessor=", "unbind osb-b"})
	c := meta.FindStatusCondition(f.get("db").Status.Conditions, ConditionBindingsRebound)
	assert.Assert(t, c != nil && c.Status == metav1.ConditionTrue, "%+v", c)
	for _, name := range []string{"a", "b"} {
		b := f.getBinding(name)
		assert.Assert(t, !b.HasPendingWork())
		assert.Equal(t, b.Status.Bound.BindingID, b.CurrentExternalID())
	}
}

func TestRebindOnUpdate_PolicyDecidesAfterEachUpdate(t *testing.T) {
	for _, tc := range []struct {
		policy  v1alpha1.RebindPolicy
		plan    string
		params  string
		rebinds bool
	}{
		{policy: "", plan: "large", rebinds: false},
		{policy: v1alpha1.RebindNever, plan: "large", rebinds: false},
		{policy: v1alpha1.RebindAlways, plan: "large", rebinds: true},
		{policy: v1alpha1.RebindAlways, params: `{"size":2}`, rebinds: true},
		{policy: v1alpha1.RebindPlanChange, plan: "large", rebinds: true},
		{policy: v1alpha1.RebindPlanChange, params: `{"size":2}`, rebinds: false},
	} {
		t.Run(fmt.Sprintf("%s plan=%q params=%q", tc.policy, tc.plan, tc.params), func(t *testing.T) {
			f, _ := rebindFixture(t)
			_, err := f.st.Instances().UpdateWithRetry(context.Background(), ns, "db", func(i *v1alpha1.ServiceInstance) error {
				i.Spec.RebindOnUpdate = tc.policy
				return nil
			})
			assert.NilError(t, err)
			for range 5 {
				f.step("db")
			}
			f.broker.ResetCalls()
			req := InstanceUpdateRequest{Namespace: ns, Name: "db", UpdateRequest: UpdateRequest{Plan: tc.plan}, Follow: Follow{Wait: true}}
			if tc.params != "" {
				req.Parameters = &ParametersInput{Object: []byte(tc.params)}
			}

			res, err := f.engine.Update(context.Background(), req)

			assert.NilError(t, err)
			assert.Equal(t, res.State, StateSettled, res.Message)
			binds := len(f.broker.CallsTo(fake.MethodBind))
			if tc.rebinds {
				assert.Equal(t, binds, 2, brokerLog(f))
				c := meta.FindStatusCondition(f.get("db").Status.Conditions, ConditionBindingsRebound)
				assert.Assert(t, c != nil && is.Contains(c.Message, "spec.rebindOnUpdate is "+string(tc.policy))().Success(), "%+v", c)
			} else {
				assert.Equal(t, binds, 0, brokerLog(f))
			}
			assert.Assert(t, f.get("db").Status.Rebind == nil)
		})
	}
}

func TestUpdateRebind_BadInput_ChangesNothing(t *testing.T) {
	t.Run("no bindings", func(t *testing.T) {
		f := newFixture(t)
		f.provisioned("db", planSmall, "")
		before := f.snapshot()
		var said notes

		res, err := f.engine.Update(context.Background(), InstanceUpdateRequest{Namespace: ns, Name: "db", Rebind: true, Follow: said.follow(false)})

		assert.NilError(t, err)
		assert.Assert(t, res.Unchanged)
		assert.DeepEqual(t, []string(said), []string{`Instance "db" has no bound binding: --rebind has nothing to rotate.`, `Nothing to update for instance "db".`})
		assert.DeepEqual(t, f.snapshot(), before)
	})
	t.Run("user-provided", func(t *testing.T) {
		f := newFixture(t)
		f.provisioned("db", planSmall, "")
		_, err := f.st.Instances().UpdateWithRetry(context.Background(), ns, "db", func(i *v1alpha1.ServiceInstance) error {
			i.Spec.UserProvided = &v1alpha1.UserProvidedService{CredentialsSecret: "c"}
			return nil
		})
		assert.NilError(t, err)
		before := f.snapshot()

		_, err = f.engine.Update(context.Background(), InstanceUpdateRequest{Namespace: ns, Name: "db", Rebind: true})

		assert.ErrorContains(t, err, `instance "db" is user-provided`)
		var ie *InputError
		assert.Assert(t, errors.As(err, &ie))
		assert.DeepEqual(t, f.snapshot(), before)
	})
}

func TestUpdateRebind_Alone_RotatesNow(t *testing.T) {
	f, _ := rebindFixture(t)

	res, err := f.engine.Update(context.Background(), InstanceUpdateRequest{Namespace: ns, Name: "db", Rebind: true, Follow: Follow{Wait: true}})

	assert.NilError(t, err)
	assert.Equal(t, res.State, StateSettled, res.Message)
	assert.DeepEqual(t, brokerLog(f), []string{"bind predecessor=", "unbind osb-a", "bind predecessor=", "unbind osb-b"})
}

func TestParseRebindPolicy(t *testing.T) {
	for in, want := range map[string]v1alpha1.RebindPolicy{"never": "Never", "always": "Always", "plan-change": "PlanChange", "PlanChange": "PlanChange"} {
		got, ok := ParseRebindPolicy(in)
		assert.Assert(t, ok, in)
		assert.Equal(t, got, want)
	}
	_, ok := ParseRebindPolicy("sometimes")
	assert.Assert(t, !ok)
}

// An unbind names the plan the broker bound the id under: after the instance moved to
// another plan, the old id of a rotation is unbound with the old plan, and the new id,
// bound under the new plan, with the new one.
func TestUnbind_AfterAPlanChange_NamesThePlanTheIDWasBoundUnder(t *testing.T) {
	f, _ := rebindFixture(t)

	_, err := f.engine.Update(context.Background(), InstanceUpdateRequest{Namespace: ns, Name: "db",
		UpdateRequest: UpdateRequest{Plan: "large"}, Rebind: true, Follow: Follow{Wait: true}})
	assert.NilError(t, err)
	assert.NilError(t, f.st.Bindings().Delete(context.Background(), ns, "a"))
	assert.Equal(t, f.driveBinding("a").State, StateDeleted)

	var got []string
	for _, c := range f.broker.CallsTo(fake.MethodUnbind) {
		r := c.Request.(osb.UnbindRequest)
		got = append(got, r.BindingID+" "+r.PlanID)
	}
	newA := got[len(got)-1][:strings.Index(got[len(got)-1], " ")]
	assert.DeepEqual(t, got, []string{"osb-a " + planSmall, "osb-b " + planSmall, newA + " " + planLarge})
}

// A status.rebind naming a binding of a namespace the instance never granted rotates
// nothing there: the binding is left as it is.
func TestRebind_ForgedCurrentOfAnotherNamespace_IsNeverTouched(t *testing.T) {
	f, _ := rebindFixture(t)
	other, err := f.st.Bindings().Create(store.WithIntent(context.Background()), NewBinding(BindingIntent{
		Namespace: "other", Name: "x", Instance: "db", InstanceNamespace: ns, SecretName: "x", ExternalID: "osb-x"}))
	assert.NilError(t, err)
	other.Status.Bound = &v1alpha1.BoundState{BindingID: "osb-x"}
	other, err = f.st.Bindings().Update(context.Background(), other)
	assert.NilError(t, err)
	_, err = f.st.Instances().UpdateWithRetry(context.Background(), ns, "db", func(i *v1alpha1.ServiceInstance) error {
		i.Status.Rebind = &v1alpha1.RebindStatus{Generation: i.Generation, Reason: "forged",
			Current: &v1alpha1.RebindTarget{Namespace: "other", Name: "x", UID: string(other.UID), FromID: "osb-x"}}
		return nil
	})
	assert.NilError(t, err)

	for range 10 {
		if f.step("db").State == StateSettled {
			break
		}
	}

	after, err := f.st.Bindings().Get(context.Background(), "other", "x")
	assert.NilError(t, err)
	assert.Equal(t, after.CurrentExternalID(), "osb-x")
	assert.Equal(t, after.ResourceVersion, other.ResourceVersion)
	assert.Assert(t, f.get("db").Status.Rebind == nil)
	assert.Equal(t, len(f.broker.CallsTo(fake.MethodBind)), 2, brokerLog(f))
}

func TestUpdateRebind_DryRun_SaysWhatItWouldRotateAndWritesNothing(t *testing.T) {
	f, _ := rebindFixture(t)
	before := f.snapshot()

	res, err := f.engine.Update(context.Background(), InstanceUpdateRequest{Namespace: ns, Name: "db",
		UpdateRequest: UpdateRequest{Plan: "large"}, Rebind: true, DryRun: DryRunClient})

	assert.NilError(t, err)
	assert.Equal(t, res.Summary, `instance "db" in namespace "dev" would be updated (plan large), then its bindings are rotated (dev/a, dev/b)`)
	assert.DeepEqual(t, f.snapshot(), before)
	assert.Assert(t, is.Len(f.broker.Calls(), 0))
}
