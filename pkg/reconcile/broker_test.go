package reconcile

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb/fake"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

const teamBroker = "team"

// namespaceBroker records the namespace-scoped broker "team" in ns, with its credentials
// Secret "team-auth", as "register --scope namespace" does, and its class.
func (f *fixture) namespaceBroker() *v1alpha1.Broker {
	f.t.Helper()
	ctx := context.Background()
	_, err := f.cluster.Core.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "team-auth"},
		Data:       map[string][]byte{"token": []byte("t")},
	}, metav1.CreateOptions{})
	assert.NilError(f.t, err)
	b, err := f.st.Brokers().Create(store.WithIntent(ctx), &v1alpha1.Broker{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: teamBroker},
		Spec: v1alpha1.BrokerSpec{URL: "https://team.example", Scope: v1alpha1.ScopeNamespace,
			Auth: &v1alpha1.BrokerAuth{Type: v1alpha1.AuthBearer, SecretRef: v1alpha1.SecretReference{Name: "team-auth"}}},
	})
	assert.NilError(f.t, err)
	assert.NilError(f.t, f.st.ProtectBrokerSecret(ctx, b))
	b, err = f.st.Brokers().UpdateWithRetry(ctx, ns, teamBroker, func(b *v1alpha1.Broker) error {
		b.Status.ObservedGeneration = b.Generation
		return nil
	})
	assert.NilError(f.t, err)
	_, err = f.st.Classes().Create(ctx, &v1alpha1.ServiceClass{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: v1alpha1.ClassRecordName(teamBroker, classID)},
		Spec: v1alpha1.ServiceClassSpec{BrokerName: teamBroker, Scope: v1alpha1.ScopeNamespace, ID: classID, ExternalName: "db",
			Bindable: true, Plans: []v1alpha1.ServicePlan{{ID: planID, ExternalName: "small"}}},
	})
	assert.NilError(f.t, err)
	return b
}

// teamInstance creates an instance of the namespace-scoped broker (pending).
func (f *fixture) teamInstance(name string) {
	f.t.Helper()
	_, err := f.st.Instances().Create(context.Background(), &v1alpha1.ServiceInstance{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.ServiceInstanceSpec{Scope: v1alpha1.ScopeNamespace, BrokerName: teamBroker, ClassExternalName: "db",
			ClassID: classID, PlanExternalName: "small", PlanID: planID, ExternalID: "osb-" + name},
	})
	assert.NilError(f.t, err)
}

func (f *fixture) kindItem(sum Summary, kind, name string) Item {
	f.t.Helper()
	for _, it := range sum.Items {
		if it.Kind == kind && it.Name == name {
			return it
		}
	}
	f.t.Fatalf("no %s %q in %+v", kind, name, sum.Items)
	return Item{}
}

// Deleting a namespace deletes every ConfigMap and Secret in it at once: the broker's
// finalizer keeps it, and its Secret, until one run has unbound and deprovisioned.
func TestRun_NamespaceDeletion_KeepsTheNamespaceBrokerUntilItsInstancesAreGone(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.namespaceBroker()
	f.teamInstance("db")
	sum := f.run(Options{})
	assert.Equal(t, f.item(sum, "db").Outcome, Done, "%+v", sum.Items)
	f.bindAnswers("s3cret", time.Time{})
	f.bound("app")

	// What the namespace controller does, the broker and its Secret first.
	assert.NilError(t, f.st.Brokers().Delete(ctx, ns, teamBroker))
	assert.NilError(t, f.cluster.Core.CoreV1().Secrets(ns).Delete(ctx, "team-auth", metav1.DeleteOptions{}))
	assert.NilError(t, f.st.Instances().Delete(ctx, ns, "db"))
	assert.NilError(t, f.st.Bindings().Delete(ctx, ns, "app"))
	_, err := f.st.Brokers().Get(ctx, ns, teamBroker)
	assert.NilError(t, err, "the finalizer keeps the broker")

	sum = f.run(Options{MaxDuration: 10 * time.Second})

	assert.DeepEqual(t, f.broker.MethodNames(), []string{fake.MethodUnbind, fake.MethodDeprovision})
	for _, it := range []Item{
		f.kindItem(sum, v1alpha1.KindServiceBinding, "app"),
		f.kindItem(sum, v1alpha1.KindServiceInstance, "db"),
		f.kindItem(sum, v1alpha1.KindBroker, teamBroker),
	} {
		assert.Equal(t, it.Outcome, Done, "%s %s: %s", it.Kind, it.Name, it.Detail)
	}
	_, err = f.st.Brokers().Get(ctx, ns, teamBroker)
	assert.Check(t, store.IsNotFound(err), "released, the broker is gone: %v", err)
	_, err = f.cluster.Core.CoreV1().Secrets(ns).Get(ctx, "team-auth", metav1.GetOptions{})
	assert.Check(t, apierrors.IsNotFound(err), "released, its Secret is gone: %v", err)
}

// A broker deleted while its instances stay (a plain "kubectl delete configmap") waits
// for them, says so, and provisions nothing new.
func TestRun_DeletedNamespaceBrokerWithInstances_WaitsAndProvisionsNothingNew(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.namespaceBroker()
	f.teamInstance("db")
	f.run(Options{})
	f.broker.ResetCalls()
	assert.NilError(t, f.st.Brokers().Delete(ctx, ns, teamBroker))
	f.teamInstance("late")

	sum := f.run(Options{MaxDuration: 5 * time.Second})

	it := f.kindItem(sum, v1alpha1.KindBroker, teamBroker)
	assert.Equal(t, it.Outcome, Waiting)
	assert.Equal(t, it.Detail, "being deleted: kept until its 2 instances (db, late) are deprovisioned")
	late := f.kindItem(sum, v1alpha1.KindServiceInstance, "late")
	assert.Equal(t, late.Outcome, Waiting, late.Detail)
	assert.Check(t, strings.Contains(late.Detail, `broker "team" is being deleted`), late.Detail)
	assert.Equal(t, len(f.broker.MethodNames()), 0, "nothing provisioned")
	b, err := f.st.Brokers().Get(ctx, ns, teamBroker)
	assert.NilError(t, err)
	assert.Check(t, b.DeletionTimestamp != nil)
}

// A namespace-scoped broker recorded before brokers held their instances gets the
// finalizer, and its Secret too, from the next run.
func TestRun_OlderNamespaceBroker_GetsTheFinalizers(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	b := f.namespaceBroker()
	_, err := f.st.Brokers().RemoveFinalizer(ctx, b)
	assert.NilError(t, err)
	assert.NilError(t, store.RemoveSecretFinalizer(ctx, f.cluster.Core, ns, "team-auth", ""))

	sum := f.run(Options{DryRun: true})
	assert.Equal(t, f.kindItem(sum, v1alpha1.KindBroker, teamBroker).Outcome, WouldDrive)
	sum = f.run(Options{})

	it := f.kindItem(sum, v1alpha1.KindBroker, teamBroker)
	assert.Equal(t, it.Outcome, Done, it.Detail)
	b, err = f.st.Brokers().Get(ctx, ns, teamBroker)
	assert.NilError(t, err)
	assert.Check(t, slices.Contains(b.Finalizers, store.Finalizer))
	s, err := f.cluster.Core.CoreV1().Secrets(ns).Get(ctx, "team-auth", metav1.GetOptions{})
	assert.NilError(t, err)
	assert.Check(t, store.ProtectsBrokerSecret(s))

	sum = f.run(Options{})
	assert.Equal(t, len(sum.Items), 0, "nothing more to do: %+v", sum.Items)
}

// A run that ends while a deleted broker still waits for an instance the broker is
// deprovisioning leaves the broker's item as it is (waiting), and does not fail.
func TestRun_TimeUpWhileADeletedBrokerWaitsForItsInstances_LeavesItWaiting(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.namespaceBroker()
	f.teamInstance("db")
	f.run(Options{})
	f.broker.DeprovisionReturns(&osb.DeprovisionResponse{StatusCode: 202, Async: true, Operation: "op-del"}, nil)
	f.broker.OnLastOperation(func(context.Context, *osb.LastOperationRequest) (*osb.LastOperationResponse, error) {
		return &osb.LastOperationResponse{State: osb.StateInProgress}, nil
	})
	assert.NilError(t, f.st.Instances().Delete(ctx, ns, "db"))
	assert.NilError(t, f.st.Brokers().Delete(ctx, ns, teamBroker))

	sum := f.run(Options{MaxDuration: time.Second})

	it := f.kindItem(sum, v1alpha1.KindBroker, teamBroker)
	assert.Equal(t, it.Outcome, Waiting, it.Detail)
	assert.Check(t, strings.Contains(it.Detail, "kept until"), it.Detail)
}
