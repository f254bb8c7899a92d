package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store/storetest"
)

func TestHoldsExternalID_OnlyARecordThatNamesTheIDHoldsIt(t *testing.T) {
	ctx := context.Background()
	c, st, _ := newCluster(t)
	ns := storetest.UserNamespace
	_, err := st.Instances().Create(ctx, &v1alpha1.ServiceInstance{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db"},
		Spec: v1alpha1.ServiceInstanceSpec{ExternalID: "id-1", PlanID: "p"}})
	assert.NilError(t, err)
	for name, data := range map[string]map[string]string{"empty": nil, "junk": {store.DataKey: "{"}} {
		_, err := c.Core.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns,
			Name:   store.ConfigMapName(v1alpha1.KindServiceInstance, name),
			Labels: map[string]string{store.LabelKind: v1alpha1.KindServiceInstance, store.IDLabel("id-1"): "true"}}, Data: data}, metav1.CreateOptions{})
		assert.NilError(t, err)
	}
	users, err := st.WithExternalID(ctx, v1alpha1.KindServiceInstance, "", "id-1")
	assert.NilError(t, err)
	assert.Equal(t, len(users), 3, "every label is listed: %+v", users)
	holders := map[string]bool{}
	for _, u := range users {
		holds, err := st.HoldsExternalID(ctx, v1alpha1.KindServiceInstance, u, "id-1")
		assert.NilError(t, err)
		holders[u.Name] = holds
	}
	assert.DeepEqual(t, holders, map[string]bool{"db": true, "empty": false, "junk": false})

	holds, err := st.HoldsExternalID(ctx, v1alpha1.KindServiceInstance, users[0], "id-2")
	assert.NilError(t, err)
	assert.Assert(t, !holds, "a record holds only the ids it names")
	holds, err = st.HoldsExternalID(ctx, v1alpha1.KindServiceInstance, store.IDUser{Namespace: ns, Name: "gone"}, "id-1")
	assert.NilError(t, err)
	assert.Assert(t, !holds)
}

func TestUnreadable_SplitsAListsErrorIntoItsUnreadableRecords(t *testing.T) {
	ctx := context.Background()
	c, st, _ := newCluster(t)
	ns := storetest.UserNamespace
	_, err := st.Brokers().Create(ctx, &v1alpha1.Broker{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "ok"},
		Spec: v1alpha1.BrokerSpec{URL: "https://b.example", Scope: v1alpha1.ScopeNamespace}})
	assert.NilError(t, err)
	for name, format := range map[string]string{"junk": "", "future": "99"} {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: store.ConfigMapName(v1alpha1.KindBroker, name),
			Labels: map[string]string{store.LabelKind: v1alpha1.KindBroker}}}
		if format != "" {
			cm.Annotations = map[string]string{store.AnnotationFormat: format}
		}
		_, err := c.Core.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{})
		assert.NilError(t, err)
	}
	brokers, err := st.Brokers().List(ctx, "", store.Filter{})
	assert.Equal(t, len(brokers), 1)
	bad, ok := store.Unreadable(err)
	assert.Assert(t, ok, "%v", err)
	names := map[string]bool{}
	for _, e := range bad {
		names[e.Namespace+"/"+e.Name] = true
	}
	assert.DeepEqual(t, names, map[string]bool{ns + "/junk": true, ns + "/future": true})

	_, ok = store.Unreadable(errors.New("connection refused"))
	assert.Assert(t, !ok)
	_, ok = store.Unreadable(nil)
	assert.Assert(t, !ok)
}

func TestClaimExternalID_CountsOnlyForTheRecordItsNameSays(t *testing.T) {
	ctx := context.Background()
	c, st, clk := newCluster(t)
	ns := storetest.UserNamespace
	db, err := st.Instances().Create(ctx, &v1alpha1.ServiceInstance{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db"},
		Spec: v1alpha1.ServiceInstanceSpec{ExternalID: "id-1", PlanID: "p"}})
	assert.NilError(t, err)
	other, err := st.Instances().Create(ctx, &v1alpha1.ServiceInstance{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "other"},
		Spec: v1alpha1.ServiceInstanceSpec{ExternalID: "id-1", PlanID: "p"}})
	assert.NilError(t, err)
	// Labels on a ConfigMap named otherwise, and a claim of other's uid for another id,
	// are no claim of either.
	for _, name := range []string{"catalog-idclaim-x", store.IDClaimName(v1alpha1.KindServiceInstance, other.UID, "id-2")} {
		_, err := c.Core.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
			Labels: map[string]string{store.LabelKind: v1alpha1.KindServiceInstance + "IDClaim", store.IDLabel("id-1"): "true"}}}, metav1.CreateOptions{})
		assert.NilError(t, err)
	}
	clk.advance(time.Minute)
	made, _, err := st.ClaimExternalID(ctx, v1alpha1.KindServiceInstance, db, "id-1")
	assert.NilError(t, err)
	clk.advance(time.Minute)
	again, _, err := st.ClaimExternalID(ctx, v1alpha1.KindServiceInstance, db, "id-1")
	assert.NilError(t, err)
	assert.Assert(t, again.Equal(&made), "a claim made before keeps its time: %s, %s", again, made)

	users, err := st.WithExternalID(ctx, v1alpha1.KindServiceInstance, "", "id-1")
	assert.NilError(t, err)
	_, idx, err := st.ListPendingWithIDs(ctx, "")
	assert.NilError(t, err)
	indexed, ok := idx.Lookup(v1alpha1.KindServiceInstance, "", "id-1", db.UID)
	assert.Assert(t, ok)
	for _, list := range [][]store.IDUser{users, indexed} {
		adopted := map[string]bool{}
		for _, u := range list {
			adopted[u.Name] = !u.Adopted.IsZero()
			if u.Name == "db" {
				assert.Equal(t, u.Adopted.Unix(), made.Unix())
			}
		}
		assert.DeepEqual(t, adopted, map[string]bool{"db": true, "other": false})
	}
	cm, err := c.Core.CoreV1().ConfigMaps(ns).Get(ctx, store.IDClaimName(v1alpha1.KindServiceInstance, db.UID, "id-1"), metav1.GetOptions{})
	assert.NilError(t, err)
	assert.Equal(t, cm.OwnerReferences[0].UID, db.UID)
}
