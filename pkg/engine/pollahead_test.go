package engine

import (
	"context"
	"errors"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	k8sschema "k8s.io/apimachinery/pkg/runtime/schema"
	clienttesting "k8s.io/client-go/testing"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb/fake"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// errStopDrive ends a drive from its Sleep.
var errStopDrive = errors.New("stop")

// instanceGoneAfter makes every read of instance dev/db answer "not found" once *gone is
// set, and counts the reads made since.
func (f *fixture) instanceGoneAfter(gone *bool) (readsSince *int) {
	n := 0
	name := store.ConfigMapName(v1alpha1.KindServiceInstance, "db")
	f.cluster.Core.PrependReactor("get", "configmaps", func(a clienttesting.Action) (bool, runtime.Object, error) {
		g := a.(clienttesting.GetAction)
		if !*gone || g.GetNamespace() != ns || g.GetName() != name {
			return false, nil, nil
		}
		n++
		return true, nil, apierrors.NewNotFound(k8sschema.GroupResource{Resource: "configmaps"}, name)
	})
	return &n
}

// A binding's drive reads its instance together with the binding before each poll; the
// poll uses that read as it used its own: an instance gone while the poll waited stops
// the next poll before anything is sent, with the refusal of the binding's own namespace
// (the instance is gone: unbind --abandon) or of another namespace (not reached, the
// same whether the instance exists), for a bind and an unbind alike.
func TestPollAhead_AnInstanceGoneWhileThePollWaits_StopsTheNextPollBeforeItIsSent(t *testing.T) {
	for _, tc := range []struct {
		name   string
		bns    string
		unbind bool
		want   string
	}{
		{name: "bind, own namespace", bns: ns, want: `instance "db" of binding "app" is gone`},
		{name: "bind, another namespace", bns: consumerNS, want: `which does not exist or is not shared with namespace "team-b"`},
		{name: "unbind, own namespace", bns: ns, unbind: true, want: `instance "db" of binding "app" is gone`},
		{name: "unbind, another namespace", bns: consumerNS, unbind: true, want: `which does not exist or is not shared with namespace "team-b"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := shareFixture(t)
			f.engine.cfg.Projector = &recordingProjector{projected: map[string]bool{}}
			ctx := context.Background()
			_, err := f.engine.Share(ctx, ShareRequest{Namespace: ns, Name: "db", To: consumerNS, DryRun: DryRunNone})
			assert.NilError(t, err)
			if tc.bns == ns {
				f.createBinding("app", nil)
			} else {
				f.consumerBinding(nil, consumerNS, "app")
			}
			if tc.unbind {
				f.broker.BindReturns(&osb.BindResponse{StatusCode: 201, Credentials: map[string]any{"password": secretValue}}, nil)
				assert.Equal(t, f.stepBindingIn(tc.bns, "app").State, StateSettled)
				f.broker.UnbindReturns(&osb.UnbindResponse{StatusCode: 202, Async: true, Operation: "op-1"}, nil)
				assert.NilError(t, f.st.Bindings().Delete(ctx, tc.bns, "app"))
			} else {
				f.broker.BindReturns(&osb.BindResponse{StatusCode: 202, Async: true, Operation: "op-1"}, nil)
			}
			f.broker.SetBindingPollSequence("op-1", fake.InProgress("working"), fake.Succeeded())
			res := f.stepBindingIn(tc.bns, "app")
			assert.Equal(t, res.State, StateWaiting, res.Message)

			gone := false
			reads := f.instanceGoneAfter(&gone)
			sleeps := 0
			f.engine.cfg.Sleep = func(_ context.Context, d time.Duration) error {
				f.advance(max(d, time.Second))
				// The first poll has run (in progress): the instance goes now.
				if len(f.broker.CallsTo(fake.MethodBindingLastOperation)) > 0 {
					gone = true
				}
				if sleeps++; sleeps > 6 {
					return errStopDrive
				}
				return nil
			}
			_, _ = f.engine.DriveBinding(ctx, tc.bns, "app", DriveOptions{})

			assert.Check(t, *reads > 0, "the instance was read after it went")
			assert.Check(t, is.Len(f.broker.CallsTo(fake.MethodBindingLastOperation), 1), "no poll is sent once the instance is gone")
			assert.Check(t, is.Len(f.broker.CallsTo(fake.MethodGetBinding), 0))
			b, err := f.bindingIn(tc.bns, "app")
			assert.NilError(t, err)
			assert.Assert(t, b.Status.InFlight != nil && b.Status.InFlight.Async, "the operation stays to be polled: %+v", b.Status.InFlight)
			var msgs []string
			for _, c := range b.Status.Conditions {
				msgs = append(msgs, c.Message)
			}
			found := false
			for _, m := range msgs {
				found = found || is.Contains(m, tc.want)().Success()
			}
			assert.Check(t, found, "%q in %q", tc.want, msgs)
		})
	}
}

// An unbind the broker confirmed gives back the place the binding held under the
// instance's limit, whether the broker answered at once or after a poll, in the
// instance's namespace and in another, driven as unbind --wait drives it.
func TestPollAhead_AnUnbindGivesBackThePlaceItsBindingHeld_SyncOrAsync(t *testing.T) {
	for _, tc := range []struct {
		name  string
		bns   string
		async bool
	}{
		{name: "own namespace, sync", bns: ns},
		{name: "own namespace, async", bns: ns, async: true},
		{name: "another namespace, sync", bns: consumerNS},
		{name: "another namespace, async", bns: consumerNS, async: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := shareFixture(t)
			f.engine.cfg.Projector = &recordingProjector{projected: map[string]bool{}}
			f.engine.cfg.Sleep = func(_ context.Context, d time.Duration) error { f.advance(max(d, time.Second)); return nil }
			ctx := context.Background()
			two := int32(2)
			_, err := f.engine.Share(ctx, ShareRequest{Namespace: ns, Name: "db", To: consumerNS, DryRun: DryRunNone})
			assert.NilError(t, err)
			f.editInstance(func(i *v1alpha1.ServiceInstance) { i.Spec.MaxBindings = &two })
			f.broker.BindReturns(&osb.BindResponse{StatusCode: 201, Credentials: map[string]any{"password": secretValue}}, nil)
			if tc.bns == ns {
				f.createBinding("app", nil)
			} else {
				f.consumerBinding(nil, consumerNS, "app")
			}
			assert.Equal(t, f.stepBindingIn(tc.bns, "app").State, StateSettled)
			assert.Equal(t, len(f.get("db").Status.Consumers), 1)
			if tc.async {
				f.broker.UnbindReturns(&osb.UnbindResponse{StatusCode: 202, Async: true, Operation: "op-1"}, nil)
				f.broker.SetBindingPollSequence("op-1", fake.InProgress("working"), fake.Succeeded())
			}

			_, err = f.engine.Unbind(ctx, UnbindRequest{Namespace: tc.bns, Bindings: []string{"app"}, DryRun: DryRunNone, Follow: Follow{Wait: true}})
			assert.NilError(t, err)
			_, err = f.bindingIn(tc.bns, "app")
			assert.Assert(t, store.IsNotFound(err), "%v", err)
			if tc.async {
				assert.Check(t, is.Len(f.broker.CallsTo(fake.MethodBindingLastOperation), 2))
			}
			assert.Check(t, is.Len(f.get("db").Status.Consumers, 0), "the place is given back")
			assert.Check(t, meta.FindStatusCondition(f.get("db").Status.Conditions, v1alpha1.ConditionFailed) == nil)
		})
	}
}
