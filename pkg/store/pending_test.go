package store_test

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"
	"gotest.tools/v3/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	metadatafake "k8s.io/client-go/metadata/fake"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store/storetest"
)

func partialConfigMap(ns, name string, labels map[string]string, change func(*metav1.PartialObjectMetadata)) *metav1.PartialObjectMetadata {
	p := &metav1.PartialObjectMetadata{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels, UID: types.UID("uid-" + name + "-" + ns)},
	}
	if change != nil {
		change(p)
	}
	return p
}

// item summarises a WorkItem for comparison.
type item struct {
	kind, key        string
	pending, deleted bool
	holder           string
}

func TestListPending_KeepsPendingAndDeletingRecordsOnly(t *testing.T) {
	now := metav1.NewTime(storetest.SampleTime().Time)
	expires := now.Add(time.Minute).UTC()
	claim, err := json.Marshal(store.Lease{Holder: "reconcile@node1/7", ExpiresAt: expires})
	assert.NilError(t, err)
	kind := func(k string, pending bool) map[string]string {
		l := map[string]string{store.LabelKind: k, store.LabelManagedBy: store.ManagedBy}
		if pending {
			l[store.LabelPending] = "true"
		}
		return l
	}
	scheme := metadatafake.NewTestScheme()
	assert.NilError(t, metav1.AddMetaToScheme(scheme))
	meta := metadatafake.NewSimpleMetadataClient(scheme,
		partialConfigMap("dev", "catalog-instance.pending", kind(v1alpha1.KindServiceInstance, true), func(p *metav1.PartialObjectMetadata) {
			p.Annotations = map[string]string{store.AnnotationClaim: string(claim)}
		}),
		partialConfigMap("dev", "catalog-instance.deleting", kind(v1alpha1.KindServiceInstance, false), func(p *metav1.PartialObjectMetadata) {
			p.DeletionTimestamp = &now
			p.Finalizers = []string{store.Finalizer}
		}),
		partialConfigMap("dev", "catalog-instance.settled", kind(v1alpha1.KindServiceInstance, false), nil),
		partialConfigMap("dev", "catalog-binding.pending", kind(v1alpha1.KindServiceBinding, true), func(p *metav1.PartialObjectMetadata) {
			p.Annotations = map[string]string{store.AnnotationClaim: "not json"}
		}),
		partialConfigMap("dev", "catalog-class.x", kind(v1alpha1.KindServiceClass, true), nil),
		partialConfigMap("dev", "app-settings", map[string]string{store.LabelPending: "true"}, nil),
		partialConfigMap("prod", "catalog-instance.pending", kind(v1alpha1.KindServiceInstance, true), nil),
		partialConfigMap(storetest.CatalogNamespace, "catalog-broker.acme", kind(v1alpha1.KindBroker, true), nil),
	)
	st := store.New(nil, meta) // ListPending never touches the typed client

	summary := func(items []store.WorkItem) []item {
		var out []item
		for _, i := range items {
			it := item{kind: i.Kind, key: i.Namespace + "/" + i.Name, pending: i.Pending, deleted: i.Deleting}
			if i.Lease != nil {
				it.holder = fmt.Sprintf("%s until %s", i.Lease.Holder, i.Lease.ExpiresAt.Format(time.RFC3339))
			}
			out = append(out, it)
		}
		slices.SortFunc(out, func(a, b item) int {
			return cmp.Or(strings.Compare(a.kind, b.kind), strings.Compare(a.key, b.key))
		})
		return out
	}
	tests := []struct {
		namespace string
		want      []item
	}{
		{namespace: "dev", want: []item{
			{kind: v1alpha1.KindServiceBinding, key: "dev/pending", pending: true},
			{kind: v1alpha1.KindServiceInstance, key: "dev/deleting", deleted: true},
			{kind: v1alpha1.KindServiceInstance, key: "dev/pending", pending: true, holder: "reconcile@node1/7 until 2026-12-02T14:01:00Z"},
		}},
		{namespace: "", want: []item{
			{kind: v1alpha1.KindBroker, key: "catalog-system/acme", pending: true},
			{kind: v1alpha1.KindServiceBinding, key: "dev/pending", pending: true},
			{kind: v1alpha1.KindServiceInstance, key: "dev/deleting", deleted: true},
			{kind: v1alpha1.KindServiceInstance, key: "dev/pending", pending: true, holder: "reconcile@node1/7 until 2026-12-02T14:01:00Z"},
			{kind: v1alpha1.KindServiceInstance, key: "prod/pending", pending: true},
		}},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("namespace %q", tc.namespace), func(t *testing.T) {
			got, err := st.ListPending(context.Background(), tc.namespace)
			assert.NilError(t, err)
			assert.DeepEqual(t, summary(got), tc.want, gocmp.AllowUnexported(item{}))
		})
	}
}

// TestListPending_ReadsMetadataOnlyPageByPage runs against the shared fake cluster: the
// records written through the store are found by a paged metadata list, without reading
// any record in full.
func TestListPending_ReadsMetadataOnlyPageByPage(t *testing.T) {
	ctx := context.Background()
	c, st, _ := newCluster(t, store.WithPageSize(1))
	for i := range 3 {
		mustCreateInstance(t, st, fmt.Sprintf("new-%d", i)) // new: pending
	}
	settled := mustCreateInstance(t, st, "settled")
	settled.Status.ObservedGeneration = settled.Generation
	_, err := st.Instances().Update(ctx, settled)
	assert.NilError(t, err)
	assert.NilError(t, st.Instances().Delete(ctx, "dev", "settled")) // deletion: work again

	c.Core.ClearActions()
	items, err := st.ListPending(ctx, "dev")
	assert.NilError(t, err)
	var names []string
	for _, i := range items {
		names = append(names, i.Name)
	}
	assert.DeepEqual(t, names, []string{"new-0", "new-1", "new-2", "settled"})
	assert.Check(t, items[3].Deleting && !items[3].Pending)
	assert.Equal(t, c.MetadataLists(), 4, "one page per record")
	assert.Equal(t, len(c.Core.Actions()), 0, "no ConfigMap read in full")
}

// The index of ListPendingWithIDs answers WithExternalID as a list of its own would, for
// records it listed; for any other record, or for another scope, it says it cannot
// answer.
func TestListPendingWithIDs_IndexesTheOSBIDsOfWhatItListed(t *testing.T) {
	ctx := context.Background()
	c := storetest.NewCluster()
	now := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	c.SetClock(func() time.Time { return now })
	st := c.Store()
	create := func(ns, name, id string) *v1alpha1.ServiceInstance {
		t.Helper()
		inst, err := st.Instances().Create(ctx, &v1alpha1.ServiceInstance{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec:       v1alpha1.ServiceInstanceSpec{Scope: v1alpha1.ScopeCluster, BrokerName: "b", ClassID: "c", PlanID: "p", ExternalID: id},
		})
		assert.NilError(t, err)
		now = now.Add(time.Minute)
		return inst
	}
	owner := create(storetest.UserNamespace, "owner", "id-x")
	copied := create("team-b", "copy", "id-x")
	other := create(storetest.UserNamespace, "other", "id-y")
	newest := create("team-b", "newest", "id-z")

	items, idx, err := st.ListPendingWithIDs(ctx, "")
	assert.NilError(t, err)
	plain, err := st.ListPending(ctx, "")
	assert.NilError(t, err)
	assert.Equal(t, len(items), len(plain))

	live, err := st.WithExternalID(ctx, v1alpha1.KindServiceInstance, "", "id-x")
	assert.NilError(t, err)
	for _, rec := range []*v1alpha1.ServiceInstance{owner, copied} {
		users, ok := idx.Lookup(v1alpha1.KindServiceInstance, "", "id-x", rec.UID)
		assert.Assert(t, ok, rec.Name)
		assert.DeepEqual(t, sortedUsers(users), sortedUsers(live))
	}
	users, ok := idx.Lookup(v1alpha1.KindServiceInstance, "", "id-y", other.UID)
	assert.Assert(t, ok)
	assert.Equal(t, len(users), 1)
	assert.Equal(t, users[0].Name, "other")
	// Another kind's id is not an instance's.
	users, ok = idx.Lookup(v1alpha1.KindServiceBinding, "", "id-y", other.UID)
	assert.Assert(t, ok)
	assert.Equal(t, len(users), 0)

	// The newest record it listed: a record created since, even in the same second, is
	// newer than it.
	users, ok = idx.Lookup(v1alpha1.KindServiceInstance, "", "id-z", newest.UID)
	assert.Assert(t, ok)
	assert.Equal(t, len(users), 1)
	// A record the list did not hold, created in the same second as the newest it held.
	now = newest.CreationTimestamp.Time
	later := create(storetest.UserNamespace, "later", "id-w")
	_, ok = idx.Lookup(v1alpha1.KindServiceInstance, "", "id-w", later.UID)
	assert.Assert(t, !ok)
	// Another scope than the list's.
	_, ok = idx.Lookup(v1alpha1.KindServiceInstance, "team-b", "id-x", copied.UID)
	assert.Assert(t, !ok)
	_, nsIdx, err := st.ListPendingWithIDs(ctx, "team-b")
	assert.NilError(t, err)
	_, ok = nsIdx.Lookup(v1alpha1.KindServiceInstance, "", "id-x", copied.UID)
	assert.Assert(t, !ok)
	// No index answers nothing.
	var none *store.IDIndex
	_, ok = none.Lookup(v1alpha1.KindServiceInstance, "", "id-x", owner.UID)
	assert.Assert(t, !ok)
}

func sortedUsers(us []store.IDUser) []string {
	var out []string
	for _, u := range us {
		out = append(out, u.Namespace+"/"+u.Name+"/"+string(u.UID)+"/"+u.Created.UTC().String())
	}
	slices.Sort(out)
	return out
}
