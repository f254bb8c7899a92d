package reconcile

import (
	"context"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb/fake"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// bindAnswers makes the broker answer binds with credentials that are to be renewed
// at renewBefore (none when zero).
func (f *fixture) bindAnswers(password string, renewBefore time.Time) {
	resp := &osb.BindResponse{StatusCode: 201, Credentials: map[string]any{"password": password}}
	if !renewBefore.IsZero() {
		resp.Metadata = &osb.BindingMetadata{RenewBefore: renewBefore.UTC().Format(time.RFC3339)}
	}
	f.broker.BindReturns(resp, nil)
}

// binding creates a binding record of the provisioned instance "db" (pending: not
// bound yet).
func (f *fixture) binding(name string) {
	f.t.Helper()
	_, err := f.st.Bindings().Create(context.Background(), engine.NewBinding(engine.BindingIntent{
		Namespace: ns, Name: name, Instance: "db", SecretName: name + "-creds",
	}))
	assert.NilError(f.t, err)
}

// bound creates a binding and reconciles it to Ready.
func (f *fixture) bound(name string) {
	f.t.Helper()
	f.binding(name)
	sum := f.run(Options{})
	assert.Equal(f.t, f.bindingItem(sum, name).Outcome, Done, "%+v", sum.Items)
	f.broker.ResetCalls()
}

func (f *fixture) bindingItem(sum Summary, name string) Item {
	f.t.Helper()
	for _, it := range sum.Items {
		if it.Kind == v1alpha1.KindServiceBinding && it.Name == name {
			return it
		}
	}
	f.t.Fatalf("no binding %q in %+v", name, sum.Items)
	return Item{}
}

func (f *fixture) secret(name string) (*corev1.Secret, error) {
	return f.cluster.Core.CoreV1().Secrets(ns).Get(context.Background(), name, metav1.GetOptions{})
}

// bindingLists counts the full lists of binding records sent to the API server.
func (f *fixture) bindingLists() int {
	n := 0
	for _, a := range f.cluster.Core.Actions() {
		if l, ok := a.(clienttesting.ListAction); ok && a.GetResource().Resource == "configmaps" &&
			strings.Contains(l.GetListRestrictions().Labels.String(), v1alpha1.KindServiceBinding) {
			n++
		}
	}
	return n
}

func TestRun_BindsAPendingBinding(t *testing.T) {
	f := newFixture(t)
	f.provisioned("db")
	f.bindAnswers("s3cret", time.Time{})
	f.binding("app")

	sum := f.run(Options{})

	it := f.bindingItem(sum, "app")
	assert.Equal(t, it.Outcome, Done, it.Detail)
	assert.DeepEqual(t, f.broker.MethodNames(), []string{fake.MethodBind})
	s, err := f.secret("app-creds")
	assert.NilError(t, err)
	assert.Equal(t, string(s.Data["password"]), "s3cret")
	b, err := f.st.Bindings().Get(context.Background(), ns, "app")
	assert.NilError(t, err)
	assert.Equal(t, b.Status.Phase, v1alpha1.PhaseReady)
	_, claimed := store.LeaseOf(b)
	assert.Assert(t, !claimed)
}

func TestRun_PlainDeleteOfABinding_UnbindsAndDeletesTheSecret(t *testing.T) {
	f := newFixture(t)
	f.provisioned("db")
	f.bindAnswers("s3cret", time.Time{})
	f.bound("app")
	// What "kubectl delete configmap" does: the finalizer holds the record.
	assert.NilError(t, f.st.Bindings().Delete(context.Background(), ns, "app"))

	sum := f.run(Options{})

	assert.Equal(t, f.bindingItem(sum, "app").Outcome, Done)
	assert.DeepEqual(t, f.broker.MethodNames(), []string{fake.MethodUnbind})
	_, err := f.st.Bindings().Get(context.Background(), ns, "app")
	assert.Assert(t, store.IsNotFound(err), "the record is gone: %v", err)
	_, err = f.secret("app-creds")
	assert.Assert(t, err != nil, "the Secret is gone")
}

func TestRun_DeletedInstanceWithABinding_UnbindsThenDeprovisions(t *testing.T) {
	f := newFixture(t)
	f.provisioned("db")
	f.bindAnswers("s3cret", time.Time{})
	f.bound("app")
	assert.NilError(t, f.st.Instances().Delete(context.Background(), ns, "db"))

	sum := f.run(Options{MaxDuration: 10 * time.Second})

	assert.Equal(t, f.item(sum, "db").Outcome, Done, "%+v", sum.Items)
	assert.DeepEqual(t, f.broker.MethodNames(), []string{fake.MethodUnbind, fake.MethodDeprovision})
	_, err := f.st.Instances().Get(context.Background(), ns, "db")
	assert.Assert(t, store.IsNotFound(err))
}

func TestRun_RotationDue(t *testing.T) {
	f := newFixture(t)
	f.provisioned("db")
	due := f.now.Add(-time.Minute)
	f.bindAnswers("old", due)
	f.binding("app")

	// Listed anyway (it was pending): bound, and its rotation reported, not done.
	sum := f.run(Options{})
	it := f.bindingItem(sum, "app")
	assert.Equal(t, it.Outcome, Waiting)
	assert.Assert(t, is.Contains(it.Detail, "rotation due"))
	assert.Assert(t, is.Contains(it.Detail, "--rotate-due"))
	assert.Equal(t, f.bindingLists(), 0, "without --rotate-due the bindings are not listed in full")
	f.broker.ResetCalls()

	// Settled: without the flag, it is not even read.
	sum = f.run(Options{})
	assert.Assert(t, is.Len(sum.Items, 0))

	// --dry-run --rotate-due says what it would do.
	sum = f.run(Options{RotateDue: true, DryRun: true})
	it = f.bindingItem(sum, "app")
	assert.Equal(t, it.Outcome, WouldDrive)
	assert.Assert(t, is.Contains(it.Detail, "rotate the credentials"))
	assert.Assert(t, is.Len(f.broker.Calls(), 0))

	// --rotate-due: a new binding id is bound, the Secret gets the new credentials, the
	// old id is unbound, in the same run.
	before, err := f.st.Bindings().Get(context.Background(), ns, "app")
	assert.NilError(t, err)
	f.bindAnswers("new", f.now.Add(time.Hour))
	sum = f.run(Options{RotateDue: true})
	it = f.bindingItem(sum, "app")
	assert.Equal(t, it.Outcome, Done, it.Detail)
	assert.Assert(t, it.Rotated)
	assert.Assert(t, strings.HasPrefix(it.Detail, "rotated"), it.Detail)
	assert.Assert(t, f.bindingLists() > 0)
	assert.DeepEqual(t, f.broker.MethodNames(), []string{fake.MethodBind, fake.MethodUnbind})
	unbind := f.broker.CallsTo(fake.MethodUnbind)[0].Request.(osb.UnbindRequest)
	assert.Equal(t, unbind.BindingID, before.Spec.ExternalID)
	s, err := f.secret("app-creds")
	assert.NilError(t, err)
	assert.Equal(t, string(s.Data["password"]), "new")
	after, err := f.st.Bindings().Get(context.Background(), ns, "app")
	assert.NilError(t, err)
	assert.Assert(t, after.CurrentExternalID() != before.CurrentExternalID())
	assert.DeepEqual(t, after.Spec, before.Spec) // a scheduled rotation writes the status only
	assert.Assert(t, !engine.RotationDue(after, f.now))

	// Nothing due any more.
	sum = f.run(Options{RotateDue: true})
	assert.Assert(t, is.Len(sum.Items, 0))
}

// A binding another driver begins to rotate between the run's read of it and the run's
// own rotation (a second replica, a user's "bind --rotate") is not rotated a second
// time, and its item is no failure: the run drives the rotation under way.
func TestRun_RotateDueLeavesARotationBegunMeanwhile(t *testing.T) {
	f := newFixture(t)
	f.provisioned("db")
	f.bindAnswers("old", f.now.Add(-time.Minute))
	f.binding("app")
	f.run(Options{})
	f.broker.ResetCalls()

	ctx := context.Background()
	gvr := corev1.SchemeGroupVersion.WithResource("configmaps")
	cm := store.ConfigMapName(v1alpha1.KindServiceBinding, "app")
	tr := f.cluster.Core.Tracker()
	read, err := tr.Get(gvr, ns, cm)
	assert.NilError(t, err)
	// The other driver's rotation, as it lands after the run read the binding.
	other, err := f.rec.Engine.RotateScheduled(ctx, ns, "app")
	assert.NilError(t, err)
	rotated, err := tr.Get(gvr, ns, cm)
	assert.NilError(t, err)
	assert.NilError(t, tr.Update(gvr, read, ns))
	landed := false
	f.cluster.Core.PrependReactor("update", "configmaps", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if a.GetNamespace() == ns && a.(clienttesting.UpdateAction).GetObject().(metav1.Object).GetName() == cm && !landed {
			landed = true
			o := rotated.DeepCopyObject()
			o.(metav1.Object).SetResourceVersion("rotated-meanwhile")
			assert.NilError(t, tr.Update(gvr, o, ns))
		}
		return false, nil, nil
	})

	f.bindAnswers("new", f.now.Add(time.Hour))
	sum := f.run(Options{RotateDue: true})
	assert.Assert(t, landed)
	it := f.bindingItem(sum, "app")
	assert.Equal(t, it.Outcome, Done, it.Detail)
	after, err := f.st.Bindings().Get(ctx, ns, "app")
	assert.NilError(t, err)
	assert.Equal(t, after.Status.Bound.BindingID, other.CurrentExternalID(), "the rotation under way is the one carried out")
	assert.Equal(t, len(f.broker.CallsTo(fake.MethodBind)), 1)
}
