package engine

import (
	"context"
	"errors"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb/fake"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// confirmer is the other cluster as the tests make it: it holds the ids of held.
type confirmer struct {
	cluster string
	held    map[string]bool
	asked   []string
}

func (c *confirmer) ClusterID(context.Context) (string, error) { return c.cluster, nil }

func (c *confirmer) Confirm(_ context.Context, kind, namespace, name, id, from string) error {
	c.asked = append(c.asked, kind+" "+name+" "+id+" from "+from)
	if !c.held[id] {
		return errors.New("not there")
	}
	return nil
}

// releaseFixture is a fixture with instance db and its binding app, settled.
func releaseFixture(t *testing.T) *fixture {
	t.Helper()
	f, _ := bindingFixture(t, nil)
	f.createBinding("app", nil)
	assert.Equal(t, f.driveBinding("app").State, StateSettled)
	f.broker.ResetCalls()
	return f
}

func TestReleaseMoved_RefusedUnlessTheOtherClusterConfirms(t *testing.T) {
	for _, tc := range []struct {
		name    string
		confirm ReleaseConfirmer
		req     func(*ReleaseRequest)
		want    string
	}{
		{name: "no cluster to confirm with", want: "--confirm-with-kubeconfig"},
		{name: "this cluster confirms itself", confirm: &confirmer{cluster: "cluster-1", held: map[string]bool{instanceOSB: true, bindingOSB: true}}, want: "is this cluster"},
		{name: "the other cluster lacks the binding", confirm: &confirmer{cluster: "new", held: map[string]bool{instanceOSB: true}}, want: `binding "app": not there`},
		{name: "the other cluster lacks the instance", confirm: &confirmer{cluster: "new", held: map[string]bool{bindingOSB: true}}, want: `instance "db": not there`},
		{name: "no such instance", confirm: &confirmer{cluster: "new"}, req: func(r *ReleaseRequest) { r.Instances = []string{"nope"} }, want: `instance "nope" does not exist`},
		{name: "an empty namespace", confirm: &confirmer{cluster: "new"}, req: func(r *ReleaseRequest) { r.Namespace = "empty" }, want: "has no instances"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := releaseFixture(t)
			before := f.snapshot()
			req := ReleaseRequest{Namespace: ns, Confirm: tc.confirm}
			if tc.req != nil {
				tc.req(&req)
			}
			_, err := f.engine.ReleaseMoved(context.Background(), req)
			assert.ErrorContains(t, err, tc.want)
			f.assertUnchanged(before)
		})
	}
}

func TestReleaseMoved_WorkUnderWay_Refused(t *testing.T) {
	f := releaseFixture(t)
	f.editInstance(func(inst *v1alpha1.ServiceInstance) {
		inst.Status.InFlight = &v1alpha1.Operation{Type: v1alpha1.OperationUpdate, InstanceID: instanceOSB, Async: true}
	})
	before := f.snapshot()
	_, err := f.engine.ReleaseMoved(context.Background(), ReleaseRequest{Namespace: ns, Confirm: &confirmer{cluster: "new", held: map[string]bool{instanceOSB: true, bindingOSB: true}}})
	assert.ErrorContains(t, err, `instance "db" has work under way`)
	f.assertUnchanged(before)
}

func TestReleaseMoved_ForgetsWithoutBrokerCalls(t *testing.T) {
	f := releaseFixture(t)
	c := &confirmer{cluster: "new", held: map[string]bool{instanceOSB: true, bindingOSB: true}}
	res, err := f.engine.ReleaseMoved(context.Background(), ReleaseRequest{Namespace: ns, Confirm: c})
	assert.NilError(t, err)
	assert.Equal(t, res.To, "new")
	assert.Assert(t, is.Len(res.Released, 2))
	assert.DeepEqual(t, c.asked, []string{"ServiceBinding app " + bindingOSB + " from cluster-1", "ServiceInstance db " + instanceOSB + " from cluster-1"})
	_, err = f.st.Instances().Get(context.Background(), ns, "db")
	assert.Assert(t, store.IsNotFound(err), "%v", err)
	_, err = f.st.Bindings().Get(context.Background(), ns, "app")
	assert.Assert(t, store.IsNotFound(err), "%v", err)
	assert.Assert(t, !f.secretExists("app"), "the old cluster's copy of the credentials goes")
	assert.Assert(t, is.Len(f.broker.Calls(), 0))
}

// A record marked released is never acted on at the broker again: a deprovision or
// unbind after the mark (by a verb, reconcile, or a namespace's deletion) drops it.
func TestStep_ReleasedRecord_DroppedWithoutBrokerCall(t *testing.T) {
	for _, kind := range []string{v1alpha1.KindServiceInstance, v1alpha1.KindServiceBinding} {
		t.Run(kind, func(t *testing.T) {
			f := releaseFixture(t)
			ctx := context.Background()
			mark := func(a map[string]string) map[string]string {
				if a == nil {
					a = map[string]string{}
				}
				a[AnnotationReleasedTo] = "new"
				return a
			}
			if kind == v1alpha1.KindServiceBinding {
				_, err := f.st.Bindings().UpdateWithRetry(ctx, ns, "app", func(b *v1alpha1.ServiceBinding) error { b.Annotations = mark(b.Annotations); return nil })
				assert.NilError(t, err)
				assert.NilError(t, f.st.Bindings().Delete(ctx, ns, "app"))
				assert.Equal(t, f.stepBinding("app").State, StateDeleted)
			} else {
				for _, name := range []string{"app"} {
					_, err := f.st.Bindings().UpdateWithRetry(ctx, ns, name, func(b *v1alpha1.ServiceBinding) error { b.Annotations = mark(b.Annotations); return nil })
					assert.NilError(t, err)
				}
				f.editInstance(func(inst *v1alpha1.ServiceInstance) { inst.Annotations = mark(inst.Annotations) })
				assert.NilError(t, f.st.Instances().Delete(ctx, ns, "db"))
				assert.Equal(t, f.step("db").State, StateDeleted)
				_, err := f.st.Instances().Get(ctx, ns, "db")
				assert.Assert(t, store.IsNotFound(err), "%v", err)
			}
			_, err := f.st.Bindings().Get(ctx, ns, "app")
			assert.Assert(t, store.IsNotFound(err), "%v", err)
			for _, m := range []string{fake.MethodDeprovision, fake.MethodUnbind, fake.MethodUpdate, fake.MethodBind} {
				assert.Assert(t, is.Len(f.broker.CallsTo(m), 0), m)
			}
		})
	}
}
