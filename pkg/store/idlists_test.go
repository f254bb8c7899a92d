package store_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store/storetest"
)

// The index of the lists of some namespaces (ListIDUsersIn) answers the id checks of
// their records as the index of a full pass does, for the users a check can find holding
// the id (those of the record's own namespace, for an id bound to a uid or a
// namespace), and leaves to a list of their own the checks it cannot answer: an id
// bound to nothing, a record it did not list, a namespace it does not cover, one whose
// labels it could not all keep.
func TestListIDUsersIn_AnswersAsTheFullPassDoes(t *testing.T) {
	ctx := context.Background()
	c := storetest.NewCluster()
	now := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	c.SetClock(func() time.Time { return now })
	st := c.Store()
	dev, teamB, teamC := storetest.UserNamespace, "team-b", "team-c"
	devID, teamBID := v1alpha1.NewNamespaceBoundID(dev), v1alpha1.NewNamespaceBoundID(teamB)
	type rec struct {
		kind, ns, name string
		uid            types.UID
		id             string
	}
	create := func(kind, ns, name, id string) rec {
		t.Helper()
		now = now.Add(time.Minute)
		meta := metav1.ObjectMeta{Namespace: ns, Name: name}
		if kind == v1alpha1.KindServiceBinding {
			b, err := st.Bindings().Create(ctx, &v1alpha1.ServiceBinding{ObjectMeta: meta,
				Spec: v1alpha1.ServiceBindingSpec{InstanceName: "db", ExternalID: id, SecretName: name}})
			assert.NilError(t, err)
			return rec{kind, ns, name, b.UID, id}
		}
		inst, err := st.Instances().Create(ctx, &v1alpha1.ServiceInstance{ObjectMeta: meta,
			Spec: v1alpha1.ServiceInstanceSpec{Scope: v1alpha1.ScopeCluster, BrokerName: "b", ClassID: "c", PlanID: "p", ExternalID: id}})
		assert.NilError(t, err)
		return rec{kind, ns, name, inst.UID, id}
	}
	inst, bind := v1alpha1.KindServiceInstance, v1alpha1.KindServiceBinding
	older := create(inst, dev, "older", devID)
	younger := create(inst, dev, "younger", devID)       // an older record uses its id
	elsewhere := create(inst, teamB, "elsewhere", devID) // a duplicate in another namespace
	deleting := create(inst, dev, "deleting", v1alpha1.NewNamespaceBoundID(dev))
	assert.NilError(t, st.Instances().Delete(ctx, dev, "deleting")) // a record being deleted
	alone := create(inst, dev, "alone", v1alpha1.NewNamespaceBoundID(dev))
	creds := create(bind, dev, "creds", devID) // a binding's id of the same value: another kind
	external := create(inst, dev, "external", "ext-1")
	externalB := create(inst, teamB, "external-b", "ext-1")
	ownB := create(inst, teamB, "own-b", teamBID)
	notCovered := create(inst, teamC, "not-covered", v1alpha1.NewNamespaceBoundID(teamC))

	_, full, err := st.ListPendingWithIDs(ctx, "")
	assert.NilError(t, err)
	selectors := len(c.MetadataSelectors())
	items, part, err := st.ListIDUsersIn(ctx, []string{dev, teamB})
	assert.NilError(t, err)
	assert.Assert(t, part.Partial() && !full.Partial())
	// One list of each namespace (pages of the store's size).
	assert.Equal(t, len(c.MetadataSelectors())-selectors, 2)
	inNamespace := func(users []store.IDUser, ns string) []string {
		var out []string
		for _, u := range users {
			if u.Namespace == ns {
				out = append(out, fmt.Sprintf("%s/%s/%s/%s/%s", u.Namespace, u.Name, u.UID, u.Created.UTC(), u.Adopted.UTC()))
			}
		}
		slices.Sort(out)
		return out
	}
	for _, tc := range []struct {
		name     string
		r        rec
		answered bool
	}{
		{"the older record", older, true},
		{"an older record uses the id", younger, true},
		{"a duplicate in another namespace", elsewhere, true},
		{"being deleted", deleting, true},
		{"alone with its id", alone, true},
		{"a binding", creds, true},
		{"its namespace's own id", ownB, true},
		{"an id bound to nothing", external, false},
		{"an id bound to nothing, in the other namespace", externalB, false},
		{"a namespace not listed", notCovered, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want, ok := full.Lookup(tc.r.kind, "", tc.r.id, tc.r.uid)
			assert.Assert(t, ok)
			got, ok := part.Lookup(tc.r.kind, "", tc.r.id, tc.r.uid)
			assert.Equal(t, ok, tc.answered)
			if ok {
				assert.DeepEqual(t, inNamespace(got, tc.r.ns), inNamespace(want, tc.r.ns))
			}
		})
	}
	// The record being deleted is work, found by the list of its namespace.
	var work []string
	for _, it := range items {
		work = append(work, it.Namespace+"/"+it.Name)
	}
	assert.Assert(t, strings.Contains(strings.Join(work, ","), dev+"/deleting"), "%v", work)

	// A record created after the lists is not in them: its check lists.
	later := create(inst, dev, "later", devID)
	_, ok := part.Lookup(later.kind, "", later.id, later.uid)
	assert.Assert(t, !ok)
	// Nor does an index of a namespace whose labels it could not all keep answer.
	c2 := storetest.NewCluster()
	st2 := c2.Store()
	big := map[string]string{}
	for i := range 70 {
		big[fmt.Sprintf("x%d", i)] = strings.Repeat("v", 1000)
	}
	r, err := st2.Instances().Create(ctx, &v1alpha1.ServiceInstance{ObjectMeta: metav1.ObjectMeta{Namespace: dev, Name: "r"},
		Spec: v1alpha1.ServiceInstanceSpec{Scope: v1alpha1.ScopeCluster, BrokerName: "b", ClassID: "c", PlanID: "p", ExternalID: devID}})
	assert.NilError(t, err)
	_, err = st2.Instances().Create(ctx, &v1alpha1.ServiceInstance{ObjectMeta: metav1.ObjectMeta{Namespace: dev, Name: "big", Annotations: big},
		Spec: v1alpha1.ServiceInstanceSpec{Scope: v1alpha1.ScopeCluster, BrokerName: "b", ClassID: "c", PlanID: "p", ExternalID: devID}})
	assert.NilError(t, err)
	_, part2, err := st2.ListIDUsersIn(ctx, []string{dev})
	assert.NilError(t, err)
	assert.Equal(t, len(part2.Oversized()), 1)
	_, ok = part2.Lookup(inst, "", devID, r.UID)
	assert.Assert(t, !ok)
	// Claims are not its to tell of outside the namespaces it covers.
	_, _, ok = part.Claimed(inst, teamC, notCovered.uid, notCovered.id)
	assert.Assert(t, !ok)
}
