package store_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clienttesting "k8s.io/client-go/testing"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store/storetest"
)

func writer(c *storetest.Cluster, user, token string) *store.Store {
	return c.Store(
		store.WithIdentity(func(context.Context) (*store.Identity, error) {
			return &store.Identity{Username: user, Groups: []string{"team", "system:authenticated"}}, nil
		}),
		store.WithTrustToken(func(context.Context) (string, error) { return token, nil }))
}

func instanceCM(t *testing.T, c *storetest.Cluster) (map[string]string, map[string]string) {
	t.Helper()
	inst := storetest.SampleInstance()
	cm, err := c.Core.CoreV1().ConfigMaps(inst.Namespace).Get(context.Background(), store.ConfigMapName(v1alpha1.KindServiceInstance, inst.Name), metav1.GetOptions{})
	assert.NilError(t, err)
	return cm.Annotations, cm.Data
}

func TestAuthor_TheUsersIntentStampsAuthorGroupsAndToken(t *testing.T) {
	c := storetest.NewCluster()
	_, err := writer(c, "bob", "tok").Instances().Create(store.WithIntent(context.Background()), storetest.SampleInstance())
	assert.NilError(t, err)

	a, _ := instanceCM(t, c)
	assert.Equal(t, a[store.AnnotationAuthor], "bob")
	assert.Equal(t, a[store.AnnotationAuthorGroups], "team,system:authenticated")
	assert.Equal(t, a[store.AnnotationTrustToken], "tok")
}

func TestAuthor_AStatusWriteKeepsTheAuthorAndTheSpecByteForByte(t *testing.T) {
	c := storetest.NewCluster()
	ctx := context.Background()
	_, err := writer(c, "bob", "tok").Instances().Create(store.WithIntent(ctx), storetest.SampleInstance())
	assert.NilError(t, err)
	// The spec as someone formatted it by hand, under the same author.
	inst := storetest.SampleInstance()
	cm, err := c.Core.CoreV1().ConfigMaps(inst.Namespace).Get(ctx, store.ConfigMapName(v1alpha1.KindServiceInstance, inst.Name), metav1.GetOptions{})
	assert.NilError(t, err)
	var body map[string]any
	assert.NilError(t, json.Unmarshal([]byte(cm.Data[store.DataKey]), &body))
	compact, err := json.Marshal(body)
	assert.NilError(t, err)
	cm.Data[store.DataKey] = string(compact)
	_, err = c.Core.CoreV1().ConfigMaps(inst.Namespace).Update(ctx, cm, metav1.UpdateOptions{})
	assert.NilError(t, err)

	engine := writer(c, "system:serviceaccount:catalog-system:reconcile", "tok")
	got, err := engine.Instances().Get(ctx, inst.Namespace, inst.Name)
	assert.NilError(t, err)
	got.Status.Phase = v1alpha1.PhaseFailed
	_, err = engine.Instances().Update(ctx, got)
	assert.NilError(t, err)

	a, data := instanceCM(t, c)
	assert.Equal(t, a[store.AnnotationAuthor], "bob")
	assert.Equal(t, a[store.AnnotationTrustToken], "tok")
	assert.Equal(t, data[store.DataKey], string(compact), "a write that leaves the spec as it was leaves its bytes as they were")
	assert.Assert(t, strings.Contains(data[store.StatusDataKey], `"Failed"`))
}

func TestAuthor_ASpecChangeThatIsNotTheUsersIntent_LosesTheToken(t *testing.T) {
	c := storetest.NewCluster()
	ctx := context.Background()
	_, err := writer(c, "bob", "tok").Instances().Create(store.WithIntent(ctx), storetest.SampleInstance())
	assert.NilError(t, err)

	other := writer(c, "admin", "tok")
	got, err := other.Instances().Get(ctx, storetest.UserNamespace, storetest.SampleInstance().Name)
	assert.NilError(t, err)
	got.Spec.PlanID = "another"
	_, err = other.Instances().Update(ctx, got)
	assert.NilError(t, err)

	a, _ := instanceCM(t, c)
	assert.Equal(t, a[store.AnnotationAuthor], "admin", "whoever changes a spec is its author")
	assert.Equal(t, a[store.AnnotationTrustToken], "", "but only a user's own command vouches for it")
	assert.Assert(t, !other.Intended(got))
}

// A ConfigMap made a record by hand without the managed-by label is outside the trust
// policy, which refuses anyone but the author adding the label: the engine's status writes
// must leave it off to be allowed at all; the author's own write adds it.
func TestAuthor_AStatusWriteLeavesTheManagedByLabelOffARecordMadeWithoutIt(t *testing.T) {
	c := storetest.NewCluster()
	ctx := context.Background()
	_, err := writer(c, "alice", "tok").Instances().Create(store.WithIntent(ctx), storetest.SampleInstance())
	assert.NilError(t, err)
	inst := storetest.SampleInstance()
	cms := c.Core.CoreV1().ConfigMaps(inst.Namespace)
	cm, err := cms.Get(ctx, store.ConfigMapName(v1alpha1.KindServiceInstance, inst.Name), metav1.GetOptions{})
	assert.NilError(t, err)
	delete(cm.Labels, store.LabelManagedBy)
	_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
	assert.NilError(t, err)
	managedBy := func() string {
		t.Helper()
		cm, err := cms.Get(ctx, store.ConfigMapName(v1alpha1.KindServiceInstance, inst.Name), metav1.GetOptions{})
		assert.NilError(t, err)
		return cm.Labels[store.LabelManagedBy]
	}

	reconciler := writer(c, "system:serviceaccount:catalog-system:catalog-reconcile", "tok")
	got, err := reconciler.Instances().Get(ctx, inst.Namespace, inst.Name)
	assert.NilError(t, err)
	got.Status.Phase = v1alpha1.PhaseFailed
	got, err = reconciler.Instances().Update(ctx, got)
	assert.NilError(t, err)
	assert.Equal(t, got.Status.Phase, v1alpha1.PhaseFailed)
	assert.Equal(t, managedBy(), "", "a status write does not add the label")

	author := writer(c, "alice", "tok")
	got, err = author.Instances().Get(ctx, inst.Namespace, inst.Name)
	assert.NilError(t, err)
	_, err = author.Instances().Update(store.WithIntent(ctx), got)
	assert.NilError(t, err)
	assert.Equal(t, managedBy(), store.ManagedBy, "the author's own write adds it")
}

func TestAuthor_IntendedIsTheSpecThisProcessWroteAndNothingElse(t *testing.T) {
	c := storetest.NewCluster()
	ctx := context.Background()
	st := writer(c, "bob", "")
	created, err := st.Instances().Create(store.WithIntent(ctx), storetest.SampleInstance())
	assert.NilError(t, err)
	assert.Assert(t, st.Intended(created))
	assert.Assert(t, !writer(c, "bob", "").Intended(created), "another process did not write it")

	changed := created.DeepCopy()
	changed.Spec.PlanID = "forged"
	assert.Assert(t, !st.Intended(changed), "a spec changed since is not the one intended")
}

func TestDecode_ReadsFormat1WithTheStatusInTheRecord(t *testing.T) {
	c := storetest.NewCluster()
	ctx := context.Background()
	st := c.Store()
	sample := storetest.SampleInstance()
	_, err := st.Instances().Create(ctx, sample)
	assert.NilError(t, err)
	name := store.ConfigMapName(v1alpha1.KindServiceInstance, sample.Name)
	cm, err := c.Core.CoreV1().ConfigMaps(sample.Namespace).Get(ctx, name, metav1.GetOptions{})
	assert.NilError(t, err)
	var body map[string]json.RawMessage
	assert.NilError(t, json.Unmarshal([]byte(cm.Data[store.DataKey]), &body))
	body["status"] = json.RawMessage(cm.Data[store.StatusDataKey])
	old, err := json.Marshal(body)
	assert.NilError(t, err)
	cm.Data = map[string]string{store.DataKey: string(old)}
	cm.Annotations[store.AnnotationFormat] = "1"
	_, err = c.Core.CoreV1().ConfigMaps(sample.Namespace).Update(ctx, cm, metav1.UpdateOptions{})
	assert.NilError(t, err)

	got, err := st.Instances().Get(ctx, sample.Namespace, sample.Name)
	assert.NilError(t, err)
	assert.DeepEqual(t, got.Status, sample.Status)
}

func TestAuthor_AStatusWriteWithoutMemoryOfTheSpec_KeepsTheAuthorAndToken(t *testing.T) {
	c := storetest.NewCluster()
	ctx := context.Background()
	_, err := writer(c, "bob", "tok").Instances().Create(store.WithIntent(ctx), storetest.SampleInstance())
	assert.NilError(t, err)
	// The engine's store never read this version (its memory of specs is bounded, and
	// was wiped): the record comes from another store's read.
	inst := storetest.SampleInstance()
	got, err := c.Store().Instances().Get(ctx, inst.Namespace, inst.Name)
	assert.NilError(t, err)
	got.Status.Phase = v1alpha1.PhaseFailed

	_, err = writer(c, "system:serviceaccount:catalog-system:reconcile", "").Instances().Update(ctx, got)
	assert.NilError(t, err)

	a, _ := instanceCM(t, c)
	assert.Equal(t, a[store.AnnotationAuthor], "bob")
	assert.Equal(t, a[store.AnnotationTrustToken], "tok")
}

// A status write by a store that never read the record (its memory is bounded, and another
// process may have read it) reads the spec again first; when that read fails, the write
// must fail too: written blind, it would stamp its writer as the spec's author.
func TestAuthor_AStatusWriteAfterAFailedReRead_FailsAndKeepsTheAuthor(t *testing.T) {
	c := storetest.NewCluster()
	ctx := context.Background()
	_, err := writer(c, "bob", "tok").Instances().Create(store.WithIntent(ctx), storetest.SampleInstance())
	assert.NilError(t, err)
	inst := storetest.SampleInstance()
	got, err := writer(c, "bob", "tok").Instances().Get(ctx, inst.Namespace, inst.Name)
	assert.NilError(t, err)

	failures := 1
	c.Core.PrependReactor("get", "configmaps", func(clienttesting.Action) (bool, runtime.Object, error) {
		if failures == 0 {
			return false, nil, nil
		}
		failures--
		return true, nil, apierrors.NewServerTimeout(schema.GroupResource{Resource: "configmaps"}, "get", 1)
	})
	reconciler := writer(c, "system:serviceaccount:catalog-system:catalog-reconcile", "tok")
	got.Status.Phase = v1alpha1.PhaseFailed
	_, err = reconciler.Instances().Update(ctx, got)
	assert.Assert(t, err != nil, "a write whose spec could not be read again must not be made")

	a, data := instanceCM(t, c)
	assert.Equal(t, a[store.AnnotationAuthor], "bob")
	assert.Equal(t, a[store.AnnotationTrustToken], "tok")
	assert.Assert(t, !strings.Contains(data[store.StatusDataKey], `"Failed"`), "nothing is written")

	// The next attempt reads the record again and writes the status under bob's name.
	got, err = reconciler.Instances().Get(ctx, inst.Namespace, inst.Name)
	assert.NilError(t, err)
	got.Status.Phase = v1alpha1.PhaseFailed
	_, err = reconciler.Instances().Update(ctx, got)
	assert.NilError(t, err)
	a, _ = instanceCM(t, c)
	assert.Equal(t, a[store.AnnotationAuthor], "bob")
	assert.Equal(t, a[store.AnnotationTrustToken], "tok")
}

// An LDAP group holds commas ("cn=a,ou=b"): joined with "," it would read back as two
// groups, neither of them the author's. Such groups are kept as a list; every other set of
// groups keeps the form of every release, and that form still reads as before.
func TestAuthor_GroupsWithCommasAreKeptApart(t *testing.T) {
	for _, groups := range [][]string{
		nil,
		{"team", "system:authenticated"},
		{"cn=admins,ou=groups,dc=example", "system:authenticated"},
		{`[odd`, `back\slash`, `quo"te`, ""},
		{"a,b"},
	} {
		enc := store.EncodeGroups(groups)
		got := store.DecodeGroups(enc)
		if len(groups) == 0 {
			assert.Assert(t, len(got) == 0, "%q", enc)
			continue
		}
		assert.DeepEqual(t, got, groups)
	}
	assert.Equal(t, store.EncodeGroups([]string{"team", "system:authenticated"}), "team,system:authenticated")
	assert.Equal(t, store.EncodeGroups([]string{"cn=a,ou=b", "dev"}), `["cn=a,ou=b","dev"]`)
	assert.DeepEqual(t, store.DecodeGroups("a,b"), []string{"a", "b"}) // the form of earlier releases
	for _, bad := range []string{`["a"`, `["a",]`, `["a""b"]`, `[a]`, `["a\x"]`, `["a"],`} {
		assert.Assert(t, store.DecodeGroups(bad) == nil, "%q makes up no group", bad)
	}

	c := storetest.NewCluster()
	w := c.Store(store.WithIdentity(func(context.Context) (*store.Identity, error) {
		return &store.Identity{Username: "carol", Groups: []string{"cn=db-admins,ou=groups,dc=example", "system:authenticated"}}, nil
	}), store.WithTrustToken(func(context.Context) (string, error) { return "tok", nil }))
	created, err := w.Instances().Create(store.WithIntent(context.Background()), storetest.SampleInstance())
	assert.NilError(t, err)
	assert.DeepEqual(t, store.AuthorOf(created).Groups, []string{"cn=db-admins,ou=groups,dc=example", "system:authenticated"})
}
