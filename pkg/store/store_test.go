package store_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clienttesting "k8s.io/client-go/testing"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store/storetest"
)

func TestCreate_AddsTheFinalizerToInstancesAndBindingsOnly(t *testing.T) {
	want := map[string]bool{
		v1alpha1.KindBroker: false, v1alpha1.KindServiceClass: false, v1alpha1.KindServicePlanSchemas: false,
		v1alpha1.KindServiceInstance: true, v1alpha1.KindServiceBinding: true,
	}
	for _, sample := range storetest.SampleRecords() {
		t.Run(kindOf(sample), func(t *testing.T) {
			_, st, _ := newCluster(t)
			got, err := create(context.Background(), st, sample)
			assert.NilError(t, err)
			assert.Equal(t, slices.Contains(got.GetFinalizers(), store.Finalizer), want[kindOf(sample)])
		})
	}
}

func TestCreate_InstanceAndBindingOfTheSameNameLiveSideBySide(t *testing.T) {
	ctx := context.Background()
	c, st, _ := newCluster(t)
	_, err := st.Instances().Create(ctx, storetest.SampleInstance())
	assert.NilError(t, err)
	_, err = st.Bindings().Create(ctx, storetest.SampleBinding())
	assert.NilError(t, err)
	cms, err := c.Core.CoreV1().ConfigMaps(storetest.UserNamespace).List(ctx, metav1.ListOptions{})
	assert.NilError(t, err)
	var names []string
	for _, cm := range cms.Items {
		names = append(names, cm.Name)
	}
	assert.DeepEqual(t, names, []string{"catalog-binding.db", "catalog-instance.db"})
}

func TestCreate_ExistingName_IsAlreadyExists(t *testing.T) {
	ctx := context.Background()
	_, st, _ := newCluster(t)
	mustCreateInstance(t, st, "db")
	_, err := st.Instances().Create(ctx, instance("db"))
	assert.Assert(t, store.IsAlreadyExists(err), "%v", err)
	assert.Check(t, apierrors.IsAlreadyExists(err), "the API error is wrapped")
	assert.Error(t, err, `service instance "db" already exists in namespace "dev": choose another name, `+
		`or see it with "kubectl catalog describe instance db -n dev"`)
}

func TestCreate_InvalidName_IsInvalid(t *testing.T) {
	for _, name := range []string{"", "DB", "db_1", strings.Repeat("a", 254-len("catalog-instance."))} {
		t.Run(fmt.Sprintf("%.20q", name), func(t *testing.T) {
			_, st, _ := newCluster(t)
			_, err := st.Instances().Create(context.Background(), instance(name))
			assert.Check(t, store.IsInvalid(err), "%v", err)
		})
	}
}

func TestGet_Missing_IsNotFoundWithAHint(t *testing.T) {
	_, st, _ := newCluster(t)
	_, err := st.Instances().Get(context.Background(), "dev", "db")
	assert.Assert(t, store.IsNotFound(err))
	assert.Check(t, apierrors.IsNotFound(err), "the API error is wrapped")
	assert.Error(t, err, `service instance "db" not found in namespace "dev": list them with "kubectl catalog get instances -n dev"`)
}

func TestGet_ConfigMapThatIsNotARecord_IsCorrupt(t *testing.T) {
	ctx := context.Background()
	c, st, _ := newCluster(t)
	_, err := c.Core.CoreV1().ConfigMaps("dev").Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "catalog-instance.app", Namespace: "dev"}, Data: map[string]string{"x": "y"},
	}, metav1.CreateOptions{})
	assert.NilError(t, err)
	_, err = st.Instances().Get(ctx, "dev", "app")
	assert.Check(t, store.IsCorrupt(err), "%v", err)
}

func TestUpdate_StaleResourceVersion_IsConflict(t *testing.T) {
	ctx := context.Background()
	_, st, _ := newCluster(t)
	first := mustCreateInstance(t, st, "db")
	second := first.DeepCopy()

	first.Status.Phase = v1alpha1.PhaseProvisioning
	_, err := st.Instances().Update(ctx, first)
	assert.NilError(t, err)

	second.Status.Phase = v1alpha1.PhaseFailed
	_, err = st.Instances().Update(ctx, second)
	assert.Assert(t, store.IsConflict(err), "%v", err)
	assert.Check(t, apierrors.IsConflict(err))
	assert.Check(t, is.ErrorContains(err, `service instance "db" in namespace "dev" was changed by someone else since it was read`))

	got, err := st.Instances().Get(ctx, "dev", "db")
	assert.NilError(t, err)
	assert.Equal(t, got.Status.Phase, v1alpha1.PhaseProvisioning, "the stale write changed nothing")
}

func TestUpdateWithRetry_ConflictReadsAgainAndReappliesTheMutation(t *testing.T) {
	ctx := context.Background()
	_, st, _ := newCluster(t)
	mustCreateInstance(t, st, "db")

	calls := 0
	got, err := st.Instances().UpdateWithRetry(ctx, "dev", "db", func(inst *v1alpha1.ServiceInstance) error {
		calls++
		if calls == 1 { // someone else writes between our read and our write
			other := inst.DeepCopy()
			other.Labels = map[string]string{"touched": "yes"}
			_, err := st.Instances().Update(ctx, other)
			assert.NilError(t, err)
		}
		inst.Spec.PlanExternalName = "large"
		return nil
	})
	assert.NilError(t, err)
	assert.Equal(t, calls, 2)
	assert.Equal(t, got.Spec.PlanExternalName, "large")
	assert.Equal(t, got.Labels["touched"], "yes", "the other writer's change is kept")
}

func TestUpdateWithRetry_MutationErrorWritesNothing(t *testing.T) {
	ctx := context.Background()
	c, st, _ := newCluster(t)
	mustCreateInstance(t, st, "db")
	c.Core.ClearActions()
	boom := errors.New("boom")
	_, err := st.Instances().UpdateWithRetry(ctx, "dev", "db", func(inst *v1alpha1.ServiceInstance) error {
		inst.Spec.PlanExternalName = "large"
		return boom
	})
	assert.Assert(t, errors.Is(err, boom))
	assert.Equal(t, countActions(c, "update", "configmaps"), 0)
}

func TestUpdateWithRetry_NoChangeWritesNothing(t *testing.T) {
	ctx := context.Background()
	c, st, _ := newCluster(t)
	created := mustCreateInstance(t, st, "db")
	c.Core.ClearActions()
	got, err := st.Instances().UpdateWithRetry(ctx, "dev", "db", func(*v1alpha1.ServiceInstance) error { return nil })
	assert.NilError(t, err)
	assert.Equal(t, got.ResourceVersion, created.ResourceVersion)
	assert.Equal(t, countActions(c, "update", "configmaps"), 0)
}

func countActions(c *storetest.Cluster, verb, resource string) int {
	n := 0
	for _, a := range c.Core.Actions() {
		if a.GetVerb() == verb && a.GetResource().Resource == resource {
			n++
		}
	}
	return n
}

// TestDerivedMetadata_FollowsTheRecord walks an instance through its life and checks
// what the store derives on each write: generation, pending label, filter labels.
func TestDerivedMetadata_FollowsTheRecord(t *testing.T) {
	ctx := context.Background()
	c, st, _ := newCluster(t)
	inst := instance("db")
	inst.Labels = map[string]string{store.LabelClass: "stale", "team": "payments"}
	inst, err := st.Instances().Create(ctx, inst)
	assert.NilError(t, err)

	labelsOnConfigMap := func() map[string]string {
		cm, err := c.Core.CoreV1().ConfigMaps("dev").Get(ctx, "catalog-instance.db", metav1.GetOptions{})
		assert.NilError(t, err)
		return cm.Labels
	}
	steps := []struct {
		name       string
		change     func(*v1alpha1.ServiceInstance)
		generation int64
		pending    bool
		planLabel  string
		classLabel string
	}{
		{name: "created", change: func(*v1alpha1.ServiceInstance) {}, generation: 1, pending: true,
			planLabel: "small", classLabel: "postgres"},
		{name: "settled", change: func(i *v1alpha1.ServiceInstance) {
			i.Status.ObservedGeneration = i.Generation
			i.Status.Phase = v1alpha1.PhaseReady
		}, generation: 1, pending: false, planLabel: "small", classLabel: "postgres"},
		{name: "status-only change keeps the generation", change: func(i *v1alpha1.ServiceInstance) {
			i.Status.Provisioned = &v1alpha1.ProvisionedState{PlanID: storetest.PlanID}
		}, generation: 1, pending: false, planLabel: "small", classLabel: "postgres"},
		{name: "spec change bumps the generation", change: func(i *v1alpha1.ServiceInstance) {
			i.Spec.PlanExternalName, i.Spec.PlanID = "large", "plan-large"
		}, generation: 2, pending: true, planLabel: "large", classLabel: "postgres"},
		{name: "call in flight", change: func(i *v1alpha1.ServiceInstance) {
			i.Status.ObservedGeneration = i.Generation
			i.Status.InFlight = &v1alpha1.Operation{Type: v1alpha1.OperationUpdate}
		}, generation: 2, pending: true, planLabel: "large", classLabel: "postgres"},
		{name: "done", change: func(i *v1alpha1.ServiceInstance) { i.Status.InFlight = nil },
			generation: 2, pending: false, planLabel: "large", classLabel: "postgres"},
		{name: "a class name that is no label value", change: func(i *v1alpha1.ServiceInstance) {
			i.Spec.ClassExternalName = "Postgres Database (HA)"
		}, generation: 3, pending: true, planLabel: "large", classLabel: store.LabelValue("Postgres Database (HA)")},
	}
	for _, step := range steps {
		step.change(inst)
		inst, err = st.Instances().Update(ctx, inst)
		assert.NilError(t, err, step.name)
		got := labelsOnConfigMap()
		assert.Check(t, is.Equal(inst.Generation, step.generation), step.name)
		assert.Check(t, is.Equal(got[store.LabelPending] == "true", step.pending), step.name)
		assert.Check(t, is.Equal(got[store.LabelPlan], step.planLabel), step.name)
		assert.Check(t, is.Equal(got[store.LabelClass], step.classLabel), step.name)
		assert.Check(t, is.Equal(got["team"], "payments"), step.name)
		assert.Check(t, is.Equal(got[store.LabelKind], v1alpha1.KindServiceInstance), step.name)
		assert.Check(t, is.Equal(got[store.LabelManagedBy], store.ManagedBy), step.name)
	}
}

func TestList_FiltersByLabelsAcrossNamespaces(t *testing.T) {
	ctx := context.Background()
	_, st, _ := newCluster(t)
	for _, spec := range []struct{ ns, name, broker, class, plan string }{
		{"dev", "a", "acme", "postgres", "small"},
		{"dev", "b", "acme", "postgres", "large"},
		{"dev", "c", "acme", "Redis Cache (HA)", "small"},
		{"prod", "d", "other", "postgres", "small"},
	} {
		inst := instance(spec.name)
		inst.Namespace, inst.Spec.BrokerName = spec.ns, spec.broker
		inst.Spec.ClassExternalName, inst.Spec.PlanExternalName = spec.class, spec.plan
		if spec.name == "b" {
			inst.Labels = map[string]string{"team": "payments"}
		}
		_, err := st.Instances().Create(ctx, inst)
		assert.NilError(t, err)
	}
	_, err := st.Instances().UpdateWithRetry(ctx, "prod", "d", func(i *v1alpha1.ServiceInstance) error {
		i.Status.ObservedGeneration = i.Generation // settled: no longer pending
		return nil
	})
	assert.NilError(t, err)
	binding := storetest.SampleBinding()
	binding.Spec.InstanceName = "a"
	_, err = st.Bindings().Create(ctx, binding)
	assert.NilError(t, err)

	team, err := labels.Parse("team=payments")
	assert.NilError(t, err)
	tests := []struct {
		name      string
		namespace string
		filter    store.Filter
		want      []string
	}{
		{name: "one namespace", namespace: "dev", want: []string{"dev/a", "dev/b", "dev/c"}},
		{name: "all namespaces", want: []string{"dev/a", "dev/b", "dev/c", "prod/d"}},
		{name: "by class", filter: store.Filter{Class: "postgres"}, want: []string{"dev/a", "dev/b", "prod/d"}},
		{name: "by a class name that is no label value", filter: store.Filter{Class: "Redis Cache (HA)"}, want: []string{"dev/c"}},
		{name: "by class and plan", filter: store.Filter{Class: "postgres", Plan: "small"}, want: []string{"dev/a", "prod/d"}},
		{name: "by broker", filter: store.Filter{Broker: "other"}, want: []string{"prod/d"}},
		{name: "by scope", filter: store.Filter{Scope: v1alpha1.ScopeNamespace}, want: nil},
		{name: "by the user's selector", filter: store.Filter{Selector: team}, want: []string{"dev/b"}},
		{name: "pending only", filter: store.Filter{PendingOnly: true}, want: []string{"dev/a", "dev/b", "dev/c"}},
		{name: "a selector that selects nothing", filter: store.Filter{Selector: labels.Nothing()}, want: nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := st.Instances().List(ctx, tc.namespace, tc.filter)
			assert.NilError(t, err)
			assert.DeepEqual(t, keys(got), tc.want)
		})
	}

	bindings, err := st.Bindings().List(ctx, "dev", store.Filter{Instance: "a"})
	assert.NilError(t, err)
	assert.DeepEqual(t, keys(bindings), []string{"dev/db"})
	bindings, err = st.Bindings().List(ctx, "dev", store.Filter{Instance: "b"})
	assert.NilError(t, err)
	assert.Equal(t, len(bindings), 0)
}

func keys[T v1alpha1.Record](items []T) []string {
	var out []string
	for _, i := range items {
		out = append(out, i.GetNamespace()+"/"+i.GetName())
	}
	return out
}

func TestList_ReadsEveryPage(t *testing.T) {
	tests := []struct {
		name    string
		expire  int
		records int
		pages   int
	}{
		{name: "small pages", records: 7, pages: 4},
		{name: "exact pages", records: 6, pages: 3},
		{name: "expired continue token lists again", records: 7, expire: 1, pages: 2 + 4},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			c, st, _ := newCluster(t, store.WithPageSize(2))
			var want []string
			for i := range tc.records {
				name := fmt.Sprintf("i%02d", i)
				mustCreateInstance(t, st, name)
				want = append(want, "dev/"+name)
			}
			c.ExpireContinueTokens(tc.expire)
			c.SetMaxPageSize(2)
			c.Core.ClearActions()
			got, err := st.Instances().List(ctx, "dev", store.Filter{})
			assert.NilError(t, err)
			assert.DeepEqual(t, keys(got), want)
			assert.Equal(t, countActions(c, "list", "configmaps"), tc.pages)
		})
	}
}

func TestList_UnreadableRecordDoesNotHideTheOthers(t *testing.T) {
	ctx := context.Background()
	c, st, _ := newCluster(t)
	mustCreateInstance(t, st, "good")
	mustCreateInstance(t, st, "newer")
	cm, err := c.Core.CoreV1().ConfigMaps("dev").Get(ctx, "catalog-instance.newer", metav1.GetOptions{})
	assert.NilError(t, err)
	cm.Annotations[store.AnnotationFormat] = "4"
	_, err = c.Core.CoreV1().ConfigMaps("dev").Update(ctx, cm, metav1.UpdateOptions{})
	assert.NilError(t, err)

	got, err := st.Instances().List(ctx, "dev", store.Filter{})
	assert.DeepEqual(t, keys(got), []string{"dev/good"})
	assert.Check(t, store.IsUnsupportedFormat(err), "%v", err)
	assert.Check(t, is.ErrorContains(err, `service instance "newer"`))
}

func TestDelete_RecordWithFinalizerIsOnlyMarkedUntilTheFinalizerGoes(t *testing.T) {
	ctx := context.Background()
	_, st, _ := newCluster(t)
	created := mustCreateInstance(t, st, "db")

	assert.NilError(t, st.Instances().Delete(ctx, "dev", "db"))
	marked, err := st.Instances().Get(ctx, "dev", "db")
	assert.NilError(t, err, "the record stays while its finalizer is there")
	assert.Check(t, marked.DeletionTimestamp != nil)
	assert.Check(t, marked.HasPendingWork())
	assert.NilError(t, st.Instances().Delete(ctx, "dev", "db"), "deleting again is harmless")

	_, err = st.Instances().AddFinalizer(ctx, marked)
	assert.NilError(t, err, "adding a finalizer it already has writes nothing")

	_, err = st.Instances().RemoveFinalizer(ctx, created) // an older copy: re-read on conflict
	assert.NilError(t, err)
	_, err = st.Instances().Get(ctx, "dev", "db")
	assert.Check(t, store.IsNotFound(err), "gone once the finalizer is removed: %v", err)
}

func TestDelete_RecordWithoutFinalizerIsGoneAtOnce(t *testing.T) {
	ctx := context.Background()
	_, st, _ := newCluster(t)
	_, err := st.Brokers().Create(ctx, storetest.SampleBroker())
	assert.NilError(t, err)
	assert.NilError(t, st.Brokers().Delete(ctx, storetest.CatalogNamespace, storetest.BrokerName))
	_, err = st.Brokers().Get(ctx, storetest.CatalogNamespace, storetest.BrokerName)
	assert.Check(t, store.IsNotFound(err))

	err = st.Brokers().Delete(ctx, storetest.CatalogNamespace, storetest.BrokerName)
	assert.Check(t, store.IsNotFound(err), "deleting what is gone says so: %v", err)
}

func TestAddFinalizer_ProtectsARecordFromDeletion(t *testing.T) {
	ctx := context.Background()
	_, st, _ := newCluster(t)
	b, err := st.Brokers().Create(ctx, storetest.SampleBroker())
	assert.NilError(t, err)
	b, err = st.Brokers().AddFinalizer(ctx, b)
	assert.NilError(t, err)
	assert.DeepEqual(t, b.Finalizers, []string{store.Finalizer})

	assert.NilError(t, st.Brokers().Delete(ctx, b.Namespace, b.Name))
	b, err = st.Brokers().Get(ctx, b.Namespace, b.Name)
	assert.NilError(t, err)
	assert.Check(t, b.DeletionTimestamp != nil)

	b.Finalizers = append(b.Finalizers, "example.com/another")
	_, err = st.Brokers().Update(ctx, b)
	assert.Check(t, store.IsInvalid(err), "no finalizer can be added to a record being deleted: %v", err)
}

func TestRemoveFinalizer_RecordCreatedAgainUnderTheSameName_IsLeftAlone(t *testing.T) {
	ctx := context.Background()
	_, st, _ := newCluster(t)
	old := mustCreateInstance(t, st, "db")
	assert.NilError(t, st.Instances().Delete(ctx, "dev", "db"))
	_, err := st.Instances().RemoveFinalizer(ctx, old)
	assert.NilError(t, err)
	mustCreateInstance(t, st, "db")

	_, err = st.Instances().RemoveFinalizer(ctx, old)
	assert.Check(t, store.IsNotFound(err), "%v", err)
	current, err := st.Instances().Get(ctx, "dev", "db")
	assert.NilError(t, err)
	assert.DeepEqual(t, current.Finalizers, []string{store.Finalizer})
}

func TestErrors_ForbiddenSaysWhatPermissionIsMissing(t *testing.T) {
	ctx := context.Background()
	c, st, _ := newCluster(t)
	forbid := func(verb string) {
		c.Core.PrependReactor(verb, "configmaps", func(a clienttesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "",
				errors.New(`User "alice" cannot `+verb+` resource "configmaps"`))
		})
	}
	forbid("get")
	forbid("list")

	_, err := st.Instances().Get(ctx, "dev", "db")
	assert.Assert(t, store.IsForbidden(err))
	assert.Check(t, apierrors.IsForbidden(err))
	assert.Check(t, is.ErrorContains(err, `not allowed to get service instance "db" in namespace "dev": `+
		`ask your cluster administrator for permission to get configmaps in namespace "dev": `))

	_, err = st.Instances().List(ctx, "", store.Filter{})
	assert.Assert(t, store.IsForbidden(err))
	assert.Check(t, is.ErrorContains(err, `not allowed to list instances in all namespaces: `+
		`ask your cluster administrator for permission to list configmaps cluster-wide, or name one namespace with -n`))
}

func TestUpdate_RecordNeverRead_IsRefused(t *testing.T) {
	_, st, _ := newCluster(t)
	mustCreateInstance(t, st, "db")
	_, err := st.Instances().Update(context.Background(), instance("db"))
	assert.Check(t, store.IsInvalid(err), "%v", err)
	assert.Check(t, is.ErrorContains(err, "it has no resourceVersion; read it from the store"))
}

func TestDryRunWritesStoreNothing(t *testing.T) {
	c, st, _ := newCluster(t)
	ctx := context.Background()
	inst, err := st.Instances().Create(ctx, storetest.SampleInstance())
	assert.NilError(t, err)
	dry := store.WithDryRun(ctx)
	assert.Assert(t, store.IsDryRun(dry) && !store.IsDryRun(ctx))

	other := storetest.SampleInstance()
	other.Name = "other"
	got, err := st.Instances().Create(dry, other)
	assert.NilError(t, err)
	assert.Equal(t, got.Name, "other")
	_, err = st.Instances().Get(ctx, other.Namespace, "other")
	assert.Assert(t, store.IsNotFound(err), "a dry-run create stored the record: %v", err)

	_, err = st.Instances().Create(dry, storetest.SampleInstance())
	assert.Assert(t, store.IsAlreadyExists(err), "a dry-run create of an existing record: %v", err)

	changed := inst.DeepCopy()
	changed.Spec.PlanExternalName = "changed"
	_, err = st.Instances().Update(dry, changed)
	assert.NilError(t, err)
	assert.NilError(t, st.Instances().Delete(dry, inst.Namespace, inst.Name))
	after, err := st.Instances().Get(ctx, inst.Namespace, inst.Name)
	assert.NilError(t, err)
	assert.Equal(t, after.ResourceVersion, inst.ResourceVersion)
	assert.Assert(t, after.DeletionTimestamp == nil)
	assert.Equal(t, c.DryRuns(), 3)
}
