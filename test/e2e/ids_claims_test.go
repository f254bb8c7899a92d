package e2e

import (
	"context"
	"slices"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/test/broker"
	"github.com/kubectl-catalog/kubectl-catalog/test/controlplane"
)

// TestIDsClaims_AClaimOutlivesTheDeletionOfItsRecord has bob take over two OSB ids bound
// to nothing (provision --external-id), and alice write, in her own namespace, younger
// records naming the same ids, each with an id claim of its own. bob's id claims are
// owned by his records: a foreground deletion of one record, and the deletion of his
// namespace, have the garbage collector and the namespace controller delete them while
// the records, held by the catalog's finalizer, wait for their deprovision. The claims
// stay until the records are released, so the records keep the ids: reconcile, run with
// its ServiceAccount's token, deprovisions both at the broker, the records go, the
// namespace goes, and no claim of bob's is left behind.
func TestIDsClaims_AClaimOutlivesTheDeletionOfItsRecord(t *testing.T) {
	serial(t, clusterTrustPolicy)
	e := trustSetup(t)
	ctx := context.Background()
	const first, second = "ids-claims-e2e-foreground", "ids-claims-e2e-namespace"
	for name, id := range map[string]string{"fg": first, "db": second} {
		r := trustBob(t, e, "provision", name, "--class", "object-storage", "--plan", "bucket", "--external-id", id)
		assert.Equal(t, r.ExitCode, 0, r.Stderr)
	}
	trustReconcile(t, e, e.teamB)
	bobs := map[string]*v1alpha1.ServiceInstance{}
	for name, id := range map[string]string{"fg": first, "db": second} {
		inst, err := e.st.Instances().Get(ctx, e.teamB, name)
		assert.NilError(t, err)
		assert.Equal(t, inst.Status.Phase, v1alpha1.PhaseReady, "%+v", inst.Status.Conditions)
		_, held := e.b.Instance(id)
		assert.Assert(t, held)
		bobs[name] = inst
	}

	// alice's records name the same ids, with claims made after bob's.
	hers := store.New(e.alice, nil, store.WithIdentity(func(context.Context) (*store.Identity, error) {
		return &store.Identity{Username: controlplane.AliceUser, Groups: []string{authenticatedGroups}}, nil
	}))
	for name, id := range map[string]string{"copy-fg": first, "copy-db": second} {
		src := bobs["fg"]
		if id == second {
			src = bobs["db"]
		}
		c := &v1alpha1.ServiceInstance{ObjectMeta: metav1.ObjectMeta{Namespace: e.teamA, Name: name}, Spec: src.Spec}
		c.Spec.ExternalID = id
		created, err := hers.Instances().Create(ctx, c)
		assert.NilError(t, err)
		_, _, err = hers.ClaimExternalID(ctx, v1alpha1.KindServiceInstance, created, id)
		assert.NilError(t, err)
	}
	deprovisioned := func(id string) bool {
		return slices.ContainsFunc(e.b.RequestsFor(broker.OpDeprovision), func(r broker.RecordedRequest) bool { return r.InstanceID == id })
	}
	refusal := func(name string) string {
		inst, err := e.st.Instances().Get(ctx, e.teamB, name)
		if err != nil {
			return ""
		}
		if c := meta.FindStatusCondition(inst.Status.Conditions, v1alpha1.ConditionRefused); c != nil && c.Status == metav1.ConditionTrue {
			return c.Message
		}
		return ""
	}

	t.Run("a foreground deletion of the record", func(t *testing.T) {
		fg := bobs["fg"]
		claim := store.IDClaimName(v1alpha1.KindServiceInstance, fg.UID, first)
		// The garbage collector of a controller-manager just started acts only once its
		// monitors synced: wait for it to collect a dependent before the record's
		// foreground deletion, so that the deletion meets a collector whose graph holds
		// the record's id claim.
		waitForGarbageCollector(t, e.admin, e.teamB)
		r := kubectl(t, controlplane.AdminUser, "delete", "configmap", "-n", e.teamB, store.ConfigMapName(v1alpha1.KindServiceInstance, "fg"),
			"--cascade=foreground", "--wait=false")
		assert.Equal(t, r.ExitCode, 0, r.Stderr)
		start := time.Now()
		t.Cleanup(func() {
			if t.Failed() {
				rec, errR := e.admin.CoreV1().ConfigMaps(e.teamB).Get(ctx, store.ConfigMapName(v1alpha1.KindServiceInstance, "fg"), metav1.GetOptions{})
				cm, errC := e.admin.CoreV1().ConfigMaps(e.teamB).Get(ctx, claim, metav1.GetOptions{})
				if errR == nil && errC == nil {
					t.Logf("record: deletion %v, finalizers %v; claim: deletion %v, finalizers %v, owners %+v",
						rec.DeletionTimestamp, rec.Finalizers, cm.DeletionTimestamp, cm.Finalizers, cm.OwnerReferences)
				}
			}
		})
		instWaitFor(t, "the garbage collector to delete the record's dependents", 60*time.Second, func() bool {
			cm, err := e.admin.CoreV1().ConfigMaps(e.teamB).Get(ctx, claim, metav1.GetOptions{})
			return apierrors.IsNotFound(err) || err == nil && cm.DeletionTimestamp != nil
		})
		t.Logf("the garbage collector acted on the claim after %s", time.Since(start).Round(time.Millisecond))
		trustReconcile(t, e, e.teamB)
		assert.Equal(t, refusal("fg"), "", "bob's record is refused")
		assert.Assert(t, deprovisioned(first), "the DELETE reached the broker")
		_, held := e.b.Instance(first)
		assert.Assert(t, !held)
		instWaitFor(t, "the record and its id claim to go", 60*time.Second, func() bool {
			_, errR := e.st.Instances().Get(ctx, e.teamB, "fg")
			_, errC := e.admin.CoreV1().ConfigMaps(e.teamB).Get(ctx, claim, metav1.GetOptions{})
			return store.IsNotFound(errR) && apierrors.IsNotFound(errC)
		})
	})

	t.Run("the deletion of the record's namespace", func(t *testing.T) {
		deleteNamespaceUntilFinalizersRemain(t, e.admin, e.teamB, "the namespace controller to delete what it may")
		trustReconcile(t, e, e.teamB)
		assert.Equal(t, refusal("db"), "", "bob's record is refused")
		assert.Assert(t, deprovisioned(second), "the DELETE reached the broker")
		instWaitFor(t, "bob's namespace to go", 90*time.Second, func() bool {
			_, err := e.admin.CoreV1().Namespaces().Get(ctx, e.teamB, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return true
			}
			trustReconcile(t, e, e.teamB)
			return false
		})
	})

	t.Run("alice's records keep their own claims", func(t *testing.T) {
		for name, id := range map[string]string{"copy-fg": first, "copy-db": second} {
			c, err := e.st.Instances().Get(ctx, e.teamA, name)
			assert.NilError(t, err)
			_, err = e.admin.CoreV1().ConfigMaps(e.teamA).Get(ctx, store.IDClaimName(v1alpha1.KindServiceInstance, c.UID, id), metav1.GetOptions{})
			assert.NilError(t, err)
		}
	})
}
