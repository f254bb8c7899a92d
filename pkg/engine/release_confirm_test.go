package engine

import (
	"context"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
)

// newClusterConfirmer is the cluster the records were moved to, confirming with its own
// engine as "release --confirm-with-kubeconfig" does: every record is there (the tests
// move them in), and its move in must be finished.
type newClusterConfirmer struct{ eng *Engine }

func (c newClusterConfirmer) ClusterID(context.Context) (string, error) { return "new", nil }

func (c newClusterConfirmer) Confirm(ctx context.Context, kind, namespace, name, _, _ string) error {
	return c.eng.CheckMoveInFinished(ctx, kind, namespace, name)
}

// An apply of a move interrupted on the new cluster (the binding's record written, its id
// claim or its Secret's hand-over not done) is not confirmed for a release: the release
// on the old cluster is refused, naming what is missing and the fix, and writes nothing;
// once the export is applied again, it is confirmed. A release confirmed while the
// binding's Secret was still its instance's left the new cluster a binding whose next
// bind (a rotation) fails for good on its own Secret.
func TestReleaseMoved_MoveInInterruptedOnTheNewCluster_Refused(t *testing.T) {
	for _, tc := range []struct {
		name, verb, resource, prefix string
		kind, missing                string
	}{
		{name: "binding killed after its record", verb: "create", resource: "configmaps", prefix: "catalog-idclaim-", kind: v1alpha1.KindServiceBinding, missing: "the id claim and the Secret:"},
		{name: "binding killed after its claim", verb: "update", resource: "secrets", prefix: "app", kind: v1alpha1.KindServiceBinding, missing: "the Secret:"},
		{name: "instance killed after its record", verb: "create", resource: "configmaps", prefix: "catalog-idclaim-", kind: v1alpha1.KindServiceInstance, missing: "the id claim:"},
	} {
		for _, retrievable := range []bool{true, false} {
			t.Run(tc.name+map[bool]string{true: ", retrievable", false: ", not retrievable"}[retrievable], func(t *testing.T) {
				ctx := context.Background()
				nf := movingFixture(t, retrievable, false)
				nf.broker.GetInstanceReturns(&osb.GetInstanceResponse{PlanID: planSmall}, nil)
				nf.broker.GetBindingReturns(&osb.GetBindingResponse{Credentials: map[string]any{"password": "held"}}, nil)
				breq := moveInBindingRequest()
				breq.Credentials = map[string][]byte{"password": []byte("held")}
				killed := false
				nf.interruptWrites(tc.verb, tc.resource, tc.prefix, &killed)
				killed = tc.kind == v1alpha1.KindServiceInstance
				_, err := nf.engine.MoveInInstance(ctx, moveInRequest())
				if killed {
					assert.ErrorContains(t, err, "killed")
				} else {
					assert.NilError(t, err)
				}
				killed = tc.kind == v1alpha1.KindServiceBinding
				_, err = nf.engine.MoveInBinding(ctx, breq)
				if killed {
					assert.ErrorContains(t, err, "killed")
				} else {
					assert.NilError(t, err)
				}
				killed = false

				of := releaseFixture(t)
				before := of.snapshot()
				_, err = of.engine.ReleaseMoved(ctx, ReleaseRequest{Namespace: ns, Confirm: newClusterConfirmer{nf.engine}})
				assert.ErrorContains(t, err, "nothing was released")
				assert.ErrorContains(t, err, "interrupted before "+tc.missing)
				assert.ErrorContains(t, err, "apply the export there again")
				of.assertUnchanged(before)
				assert.Assert(t, is.Len(of.broker.Calls(), 0))

				if tc.kind == v1alpha1.KindServiceInstance {
					_, err = nf.engine.MoveInInstance(ctx, moveInRequest())
				} else {
					_, err = nf.engine.MoveInBinding(ctx, breq)
				}
				assert.NilError(t, err, "applied again")
				res, err := of.engine.ReleaseMoved(ctx, ReleaseRequest{Namespace: ns, Confirm: newClusterConfirmer{nf.engine}})
				assert.NilError(t, err)
				assert.Assert(t, is.Len(res.Released, 2))
			})
		}
	}
}

// A record that was not moved in, or whose move in is complete, is confirmed as far as
// the move goes; one that is not there cannot be.
func TestCheckMoveInFinished_NotMovedOrComplete(t *testing.T) {
	f := releaseFixture(t)
	ctx := context.Background()
	assert.NilError(t, f.engine.CheckMoveInFinished(ctx, v1alpha1.KindServiceInstance, ns, "db"))
	assert.NilError(t, f.engine.CheckMoveInFinished(ctx, v1alpha1.KindServiceBinding, ns, "app"))
	assert.ErrorContains(t, f.engine.CheckMoveInFinished(ctx, v1alpha1.KindServiceBinding, ns, "nope"), "could not be read")
}
