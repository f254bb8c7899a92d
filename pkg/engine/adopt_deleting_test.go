package engine

import (
	"context"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/ahead"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb/fake"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

func adoptedBinding(name, inst, id string) BindingAdoption {
	return BindingAdoption{Record: &v1alpha1.ServiceBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       v1alpha1.ServiceBindingSpec{InstanceName: inst, ExternalID: id, SecretName: name},
	}}
}

// A binding adopted (bound at the broker already) while its instance is being deleted,
// before the deletion sent anything: the deletion sends no DELETE under it, whenever its
// lists of the bindings were made; it marks the binding for deletion and waits for it.
// The adoption marks the instance first, and the deletion waits while the adoption is
// pending (adopt_mark.go).
func TestAdoptBinding_InstanceBeingDeleted_NoDeleteUnderTheAdoptedBinding(t *testing.T) {
	for _, tc := range []struct {
		name string
		// run adopts the binding and deletes the instance in the order of the case, and
		// returns the deletion's first step.
		run func(t *testing.T, f *fixture) Result
	}{
		{name: "adopted before the instance is marked", run: func(t *testing.T, f *fixture) Result {
			_, err := f.engine.AdoptBinding(context.Background(), adoptedBinding("app", "db", "old-binding"))
			assert.NilError(t, err)
			assert.NilError(t, f.st.Instances().Delete(context.Background(), ns, "db"))
			return f.step("db")
		}},
		{name: "adopted while the deletion's step runs", run: func(t *testing.T, f *fixture) Result {
			// The whole step of the deletion runs between the adoption's mark and its
			// record: it lists no binding, and must not send the DELETE.
			var raced Result
			f.hook = func(p HookPoint, _ *v1alpha1.Operation) {
				if p != HookAdoptionMarked {
					return
				}
				f.hook = nil
				assert.NilError(t, f.st.Instances().Delete(context.Background(), ns, "db"))
				raced = f.step("db")
			}
			_, err := f.engine.AdoptBinding(context.Background(), adoptedBinding("app", "db", "old-binding"))
			assert.NilError(t, err)
			assert.Equal(t, raced.State, StateWaiting, raced.Message)
			assert.Assert(t, is.Contains(raced.Message, "adoption of binding(s) app"))
			assert.Assert(t, is.Len(f.broker.Calls(), 0))
			return f.step("db")
		}},
		{name: "adopted after the deprovision verb's lists of bindings", run: func(t *testing.T, f *fixture) Result {
			// A deprovision verb lists the bindings together with the drive's first read
			// of the instance: the lists (none) may land before the binding's record, and
			// the read after it.
			ctx := context.Background()
			assert.NilError(t, f.st.Instances().Delete(ctx, ns, "db"))
			ctx = withBindingListsAhead(f.engine, ctx, ns, "db")
			r := ctx.Value(bindingListsAheadKey{}).(*bindingListsAhead)
			for _, l := range []*ahead.Read[listedBindings]{r.own, r.all} {
				got, err := l.Wait()
				assert.NilError(t, err)
				assert.Assert(t, is.Len(got.bs, 0))
			}
			_, err := f.engine.AdoptBinding(ctx, adoptedBinding("app", "db", "old-binding"))
			assert.NilError(t, err)
			res, err := f.engine.StepInstance(ctx, f.get("db"))
			assert.NilError(t, err)
			return res
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			ctx := context.Background()
			f.provisioned("db", planSmall, "")
			_, err := f.cluster.Core.CoreV1().Secrets(ns).Create(ctx, secret("app", map[string]string{"password": "p"}), metav1.CreateOptions{})
			assert.NilError(t, err)
			res := tc.run(t, f)
			assert.Equal(t, res.State, StateWaiting, res.Message)
			assert.Assert(t, is.Contains(res.Message, "app"))
			for _, c := range f.broker.Calls() {
				assert.Assert(t, c.Method != "Deprovision", "a DELETE of the instance under its binding")
			}
			b, err := f.st.Bindings().Get(ctx, ns, "app")
			assert.NilError(t, err)
			assert.Assert(t, b.DeletionTimestamp != nil, "the deletion marks the adopted binding")
			// The next step still waits for it, and sends nothing.
			res = f.step("db")
			assert.Equal(t, res.State, StateWaiting, res.Message)
			assert.Assert(t, is.Len(f.broker.Calls(), 0))
			// Once it is unbound, the instance is deprovisioned.
			res = f.driveBinding("app")
			assert.Equal(t, res.State, StateDeleted, res.Message)
			assert.Equal(t, f.step("db").State, StateDeleted)
			assert.DeepEqual(t, f.broker.MethodNames(), []string{fake.MethodUnbind, fake.MethodDeprovision})
		})
	}
}

// A binding adopted once the deletion of its instance wrote its DELETE ahead (or sent it,
// or is done with it) is refused, saying why and naming the instance and the OSB binding
// id: no record is made (it would name an instance the broker deleted, and could never
// be unbound), and the Secret stays as it was.
func TestAdoptBinding_AfterTheDeletionsWriteAhead_IsRefused_NothingWritten(t *testing.T) {
	for _, tc := range []struct {
		name string
		// run deletes the instance and adopts the binding when the case says, and
		// returns the adoption's error.
		run  func(t *testing.T, f *fixture) error
		want string
	}{
		{name: "written ahead, the DELETE not sent yet", want: "its deprovision is written ahead or under way at the broker", run: func(t *testing.T, f *fixture) error {
			var err error
			f.hook = func(p HookPoint, op *v1alpha1.Operation) {
				if p == HookBeforeBrokerCall && op.Type == v1alpha1.OperationDeprovision {
					f.hook = nil
					_, err = f.engine.AdoptBinding(context.Background(), adoptedBinding("app", "db", "old-binding"))
				}
			}
			assert.NilError(t, f.st.Instances().Delete(context.Background(), ns, "db"))
			assert.Equal(t, f.step("db").State, StateDeleted)
			return err
		}},
		{name: "asynchronous deprovision under way", want: "its deprovision is written ahead or under way at the broker", run: func(t *testing.T, f *fixture) error {
			f.broker.DeprovisionReturns(&osb.DeprovisionResponse{StatusCode: 202, Async: true, Operation: "dop-1"}, nil)
			assert.NilError(t, f.st.Instances().Delete(context.Background(), ns, "db"))
			assert.Equal(t, f.step("db").State, StateWaiting)
			_, err := f.engine.AdoptBinding(context.Background(), adoptedBinding("app", "db", "old-binding"))
			return err
		}},
		{name: "deprovision failed, the broker may have deleted it", want: "its deprovision was sent to the broker and failed", run: func(t *testing.T, f *fixture) error {
			f.broker.DeprovisionReturns(nil, &osb.HTTPStatusError{Method: "DELETE", Path: "/v2/service_instances/" + instanceOSB, StatusCode: 500})
			assert.NilError(t, f.st.Instances().Delete(context.Background(), ns, "db"))
			assert.Equal(t, f.step("db").State, StateWaiting)
			_, err := f.engine.AdoptBinding(context.Background(), adoptedBinding("app", "db", "old-binding"))
			return err
		}},
		{name: "deprovisioned, the record gone", want: `its instance "db" does not exist in namespace "dev"`, run: func(t *testing.T, f *fixture) error {
			assert.NilError(t, f.st.Instances().Delete(context.Background(), ns, "db"))
			assert.Equal(t, f.step("db").State, StateDeleted)
			_, err := f.engine.AdoptBinding(context.Background(), adoptedBinding("app", "db", "old-binding"))
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			ctx := context.Background()
			f.provisioned("db", planSmall, "")
			_, err := f.cluster.Core.CoreV1().Secrets(ns).Create(ctx, secret("app", map[string]string{"password": "p"}), metav1.CreateOptions{})
			assert.NilError(t, err)

			err = tc.run(t, f)

			assert.ErrorContains(t, err, `binding "app" is not adopted`)
			assert.ErrorContains(t, err, tc.want)
			_, gerr := f.st.Bindings().Get(ctx, ns, "app")
			assert.Assert(t, store.IsNotFound(gerr), "no record of a binding under a deleted instance: %v", gerr)
			s, gerr := f.cluster.Core.CoreV1().Secrets(ns).Get(ctx, "app", metav1.GetOptions{})
			assert.NilError(t, gerr)
			assert.Assert(t, is.Len(s.OwnerReferences, 0), "the Secret is not adopted")
			if inst, gerr := f.st.Instances().Get(ctx, ns, "db"); gerr == nil {
				assert.Assert(t, is.Len(f.engine.pendingAdoptions(inst), 0), "no adoption is left pending")
			}
		})
	}
}

// A binding made by bind cannot race a deletion so: its record exists before its step
// reads the instance, and that step binds no instance being deleted. A deletion that
// starts while the bind is being sent (its write-ahead stored) finds the binding, marks
// it and waits for it; nothing more is needed for bind.
func TestBind_DeletionStartedDuringTheBind_WaitsForTheBinding(t *testing.T) {
	for _, async := range []bool{false, true} {
		t.Run(map[bool]string{false: "synchronous bind", true: "asynchronous bind"}[async], func(t *testing.T) {
			f, _ := bindingFixture(t, func(c *v1alpha1.ServiceClass) { c.Spec.BindingsRetrievable = async })
			if async {
				f.broker.BindReturns(&osb.BindResponse{StatusCode: 202, Async: true, Operation: "bop-1"}, nil)
			}
			f.createBinding("app", nil)
			var raced Result
			f.hook = func(p HookPoint, op *v1alpha1.Operation) {
				if p == HookBeforeBrokerCall && op.Type == v1alpha1.OperationBind {
					f.hook = nil
					assert.NilError(t, f.st.Instances().Delete(context.Background(), ns, "db"))
					raced = f.step("db")
				}
			}
			f.stepBinding("app")
			assert.Equal(t, raced.State, StateWaiting, raced.Message)
			assert.Assert(t, is.Contains(raced.Message, "app"))
			assert.DeepEqual(t, f.broker.MethodNames(), []string{fake.MethodBind})
			assert.Assert(t, f.getBinding("app").DeletionTimestamp != nil, "the deletion marks the binding")
			assert.Equal(t, f.step("db").State, StateWaiting)
			assert.DeepEqual(t, f.broker.MethodNames(), []string{fake.MethodBind})
		})
	}
}

// An adopter that ended between its mark and the binding's record (killed) holds the
// deletion up only for the mark's time, timed from when the deleting process first saw
// it; then the deletion goes on. An adopter that took longer than most of that time to
// mark the instance writes no record and clears its mark.
func TestAdoptBinding_PendingMark_HoldsTheDeletionForItsTimeOnly(t *testing.T) {
	t.Run("adopter killed after its mark", func(t *testing.T) {
		f := newFixture(t)
		ctx := context.Background()
		f.provisioned("db", planSmall, "")
		_, err := f.engine.markAdoption(ctx, adoptedBinding("app", "db", "old-binding").Record)
		assert.NilError(t, err)
		assert.NilError(t, f.st.Instances().Delete(ctx, ns, "db"))
		res := f.step("db")
		assert.Equal(t, res.State, StateWaiting, res.Message)
		assert.Assert(t, is.Contains(res.Message, "waiting for the adoption of binding(s) app to finish"))
		f.advance(f.engine.cfg.ClaimTTL - time.Second)
		assert.Equal(t, f.step("db").State, StateWaiting)
		assert.Assert(t, is.Len(f.broker.Calls(), 0))
		f.advance(2 * time.Second)
		res = f.step("db")
		assert.Equal(t, res.State, StateDeleted, res.Message)
		assert.DeepEqual(t, f.broker.MethodNames(), []string{fake.MethodDeprovision})
	})
	t.Run("mark older than most of its time", func(t *testing.T) {
		f := newFixture(t)
		ctx := context.Background()
		f.provisioned("db", planSmall, "")
		_, err := f.cluster.Core.CoreV1().Secrets(ns).Create(ctx, secret("app", map[string]string{"password": "p"}), metav1.CreateOptions{})
		assert.NilError(t, err)
		f.hook = func(p HookPoint, _ *v1alpha1.Operation) {
			if p == HookAdoptionMarked {
				f.advance(f.engine.cfg.ClaimTTL * 7 / 8)
			}
		}
		_, err = f.engine.AdoptBinding(ctx, adoptedBinding("app", "db", "old-binding"))
		assert.ErrorContains(t, err, `binding "app" is not adopted: marking its instance "db" took longer than the mark holds; nothing else was written: run this again`)
		_, err = f.st.Bindings().Get(ctx, ns, "app")
		assert.Assert(t, store.IsNotFound(err), "%v", err)
		assert.Assert(t, is.Len(f.engine.pendingAdoptions(f.get("db")), 0))
		// Run again, it adopts the binding.
		f.hook = nil
		_, err = f.engine.AdoptBinding(ctx, adoptedBinding("app", "db", "old-binding"))
		assert.NilError(t, err)
		_, adopted := adoptionsOf(f.get("db"))
		assert.Assert(t, adopted, "the instance keeps the mark that a binding was adopted under it")
		assert.Assert(t, is.Len(f.engine.pendingAdoptions(f.get("db")), 0))
	})
}
