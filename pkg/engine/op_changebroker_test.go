package engine

import (
	"context"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store/storetest"
)

func TestChangeBroker_Unchanged_WritesNothingAndCallsNoBroker(t *testing.T) {
	f := newBrokerFixture(t, authSecret(storetest.CatalogNamespace), catalogNamespace())
	f.registered()
	before := f.snapshot()
	res, err := f.engine.ChangeBroker(context.Background(), f.registerRequest())
	assert.NilError(t, err)
	assert.Assert(t, res.Unchanged)
	assert.DeepEqual(t, f.snapshot(), before)
	assert.Equal(t, len(f.tb.Requests()), 0)
}

func TestChangeBroker_Changed_WritesAsTheUsersIntentAndFetchesTheCatalog(t *testing.T) {
	f := newBrokerFixture(t, authSecret(storetest.CatalogNamespace), catalogNamespace())
	old := f.registered()
	req := f.registerRequest()
	req.RelistInterval = time.Hour
	req.PlanRestrictions = []string{"free==true"}

	// A dry run: checked, nothing written, no call.
	req.DryRun = DryRunClient
	before := f.snapshot()
	res, err := f.engine.ChangeBroker(context.Background(), req)
	assert.NilError(t, err)
	assert.Equal(t, res.Broker.Spec.RelistInterval.Duration, time.Hour)
	assert.DeepEqual(t, f.snapshot(), before)

	req.DryRun = DryRunNone
	res, err = f.engine.ChangeBroker(context.Background(), req)
	assert.NilError(t, err)
	assert.Assert(t, !res.Unchanged && res.Catalog != nil)
	assert.Equal(t, f.catalogCalls(), 1)
	b, err := f.st.Brokers().Get(context.Background(), storetest.CatalogNamespace, brokerName)
	assert.NilError(t, err)
	assert.Equal(t, b.Spec.RelistInterval.Duration, time.Hour)
	assert.DeepEqual(t, b.Spec.CatalogRestrictions.ServicePlan, []string{"free==true"})
	assert.Equal(t, b.Spec.URL, old.Spec.URL)
}

func TestChangeBroker_Refusals_ChangeNothing(t *testing.T) {
	f := newBrokerFixture(t, authSecret(storetest.CatalogNamespace), catalogNamespace())
	f.registered()
	before := f.snapshot()
	for name, tc := range map[string]struct {
		edit func(*RegisterBrokerRequest)
		want string
	}{
		"missing Secret":  {func(r *RegisterBrokerRequest) { r.BasicAuthSecret = "nosuch" }, `"nosuch"`},
		"not registered":  {func(r *RegisterBrokerRequest) { r.Name = "other" }, "not registered"},
		"two credentials": {func(r *RegisterBrokerRequest) { r.BearerTokenSecret = "tok" }, "cannot be used together"},
	} {
		t.Run(name, func(t *testing.T) {
			req := f.registerRequest()
			tc.edit(&req)
			_, err := f.engine.ChangeBroker(context.Background(), req)
			assert.ErrorContains(t, err, tc.want)
			assert.DeepEqual(t, f.snapshot(), before)
			assert.Equal(t, len(f.tb.Requests()), 0)
		})
	}
}

func TestRelabel_KeepsTheCatalogsKeysAndTheAuthor(t *testing.T) {
	f := newBrokerFixture(t, authSecret(storetest.CatalogNamespace), catalogNamespace())
	ctx := context.Background()
	inst := storetest.SampleInstance()
	inst.Labels = map[string]string{"team": "a", "gone": "x"}
	created, err := f.st.Instances().Create(store.WithIntent(ctx), inst)
	assert.NilError(t, err)
	ownLabels, ownAnnotations := catalogKeys(created.Labels), catalogKeys(created.Annotations)
	assert.Assert(t, len(ownLabels) > 0 && len(ownAnnotations) > 0)

	req := RelabelRequest{Kind: v1alpha1.KindServiceInstance, Namespace: created.Namespace, Name: created.Name, Metadata: RecordMetadata{
		Labels:      map[string]string{"team": "b", store.LabelKind: "ServiceBinding", store.LabelManagedBy: "someone"},
		Annotations: map[string]string{"note": "n", store.AnnotationAuthor: "mallory"},
	}}
	changed, err := f.engine.Relabel(ctx, req)
	assert.NilError(t, err)
	assert.Assert(t, changed)
	got, err := f.st.Instances().Get(ctx, created.Namespace, created.Name)
	assert.NilError(t, err)
	assert.DeepEqual(t, UserMetadata(got.Labels, got.Annotations), RecordMetadata{Labels: map[string]string{"team": "b"}, Annotations: map[string]string{"note": "n"}})
	for k, v := range ownLabels {
		assert.Check(t, is.Equal(got.Labels[k], v), "label %s", k)
	}
	for k, v := range ownAnnotations {
		assert.Check(t, is.Equal(got.Annotations[k], v), "annotation %s", k)
	}
	assert.DeepEqual(t, got.Spec, created.Spec)

	changed, err = f.engine.Relabel(ctx, req)
	assert.NilError(t, err)
	assert.Assert(t, !changed)
}

func TestChangeBroker_NamespaceScope_NewSecretProtectedOldOneReleased(t *testing.T) {
	other := authSecret(ns)
	other.Name = "acme-auth-2"
	f := newBrokerFixture(t, authSecret(ns), other)
	ctx := context.Background()
	req := f.registerRequest()
	req.Scope = v1alpha1.ScopeNamespace
	_, err := f.engine.RegisterBroker(ctx, req)
	assert.NilError(t, err)

	req.BasicAuthSecret = "acme-auth-2"
	res, err := f.engine.ChangeBroker(ctx, req)
	assert.NilError(t, err)
	assert.Equal(t, res.Broker.Spec.Auth.SecretRef.Name, "acme-auth-2")
	finalizers := func(name string) []string {
		s, err := f.cluster.Core.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
		assert.NilError(t, err)
		return s.Finalizers
	}
	assert.Equal(t, len(finalizers("acme-auth")), 0, "the Secret no longer named keeps its finalizer")
	assert.Assert(t, len(finalizers("acme-auth-2")) > 0, "the Secret now named has no finalizer")
	b, err := f.st.Brokers().Get(ctx, ns, brokerName)
	assert.NilError(t, err)
	assert.Assert(t, is.Contains(b.Finalizers, store.Finalizer), "the broker's own finalizer was removed")

	// The scope cannot change.
	req.Scope = v1alpha1.ScopeCluster
	_, err = f.engine.ChangeBroker(ctx, req)
	assert.ErrorContains(t, err, "not registered")
}
