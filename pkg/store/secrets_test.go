package store_test

import (
	"context"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/ahead"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store/storetest"
)

func mustCreateBinding(t *testing.T, st *store.Store) *v1alpha1.ServiceBinding {
	t.Helper()
	b, err := st.Bindings().Create(context.Background(), storetest.SampleBinding())
	assert.NilError(t, err)
	return b
}

func TestWriteBindingSecret_CreatesASecretOwnedByTheBindingsConfigMap(t *testing.T) {
	ctx := context.Background()
	c, st, _ := newCluster(t)
	b := mustCreateBinding(t, st)

	_, err := st.WriteBindingSecret(ctx, b, map[string][]byte{"uri": []byte("postgres://u:p@h/db")})
	assert.NilError(t, err)

	s, err := c.Core.CoreV1().Secrets("dev").Get(ctx, "db-credentials", metav1.GetOptions{})
	assert.NilError(t, err)
	assert.DeepEqual(t, s.OwnerReferences, []metav1.OwnerReference{{
		APIVersion: "v1", Kind: "ConfigMap", Name: "catalog-binding.db", UID: b.UID,
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(false),
	}})
	assert.DeepEqual(t, s.Labels, map[string]string{
		store.LabelManagedBy: store.ManagedBy, store.LabelBinding: "db", store.LabelInstance: "db",
	})
	assert.Equal(t, s.Type, corev1.SecretTypeOpaque)
	assert.Equal(t, string(s.Data["uri"]), "postgres://u:p@h/db")
	assert.Check(t, store.OwnedBy(s, b))
}

func TestWriteBindingSecret_ReplacesTheDataOfItsOwnSecret(t *testing.T) {
	ctx := context.Background()
	_, st, _ := newCluster(t)
	b := mustCreateBinding(t, st)
	_, err := st.WriteBindingSecret(ctx, b, map[string][]byte{"old": []byte("1")})
	assert.NilError(t, err)

	s, err := st.WriteBindingSecret(ctx, b, map[string][]byte{"new": []byte("2")})
	assert.NilError(t, err)
	assert.DeepEqual(t, s.Data, map[string][]byte{"new": []byte("2")})
}

func TestWriteBindingSecret_RefusesASecretItDoesNotOwn(t *testing.T) {
	tests := []struct {
		name   string
		owners []metav1.OwnerReference
	}{
		{name: "a user's Secret"},
		{name: "another binding's Secret", owners: []metav1.OwnerReference{{
			APIVersion: "v1", Kind: "ConfigMap", Name: "catalog-binding.other", UID: "uid-of-other",
		}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			c, st, _ := newCluster(t)
			b := mustCreateBinding(t, st)
			_, err := c.Core.CoreV1().Secrets("dev").Create(ctx, &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Name: "db-credentials", Namespace: "dev", OwnerReferences: tc.owners},
				Data:       map[string][]byte{"mine": []byte("keep")},
			}, metav1.CreateOptions{})
			assert.NilError(t, err)

			_, err = st.WriteBindingSecret(ctx, b, map[string][]byte{"uri": []byte("x")})
			assert.Assert(t, store.IsNotOwned(err), "%v", err)
			assert.Error(t, err, `Secret "db-credentials" in namespace "dev" already exists and does not belong to `+
				`service binding "db": choose another secret name, or delete that Secret`)

			s, err := st.GetSecret(ctx, "dev", "db-credentials")
			assert.NilError(t, err)
			assert.DeepEqual(t, s.Data, map[string][]byte{"mine": []byte("keep")})

			assert.NilError(t, st.DeleteBindingSecret(ctx, b), "unbinding leaves a Secret it does not own")
			_, err = st.GetSecret(ctx, "dev", "db-credentials")
			assert.NilError(t, err)
		})
	}
}

func TestWriteBindingSecret_NeedsABindingReadFromTheStore(t *testing.T) {
	_, st, _ := newCluster(t)
	_, err := st.WriteBindingSecret(context.Background(), storetest.SampleBinding(), nil)
	assert.ErrorContains(t, err, "read it from the store first")
}

func TestDeleteBindingSecret_DeletesTheSecretsItOwns(t *testing.T) {
	ctx := context.Background()
	_, st, _ := newCluster(t)
	b := mustCreateBinding(t, st)
	_, err := st.WriteBindingSecret(ctx, b, map[string][]byte{"a": []byte("1")})
	assert.NilError(t, err)
	// The user renamed the Secret: the new one is written, the old one is in the status.
	b.Status.Secret = &v1alpha1.CredentialsSecret{Name: b.Spec.SecretName}
	b.Spec.SecretName = "renamed"
	_, err = st.WriteBindingSecret(ctx, b, map[string][]byte{"a": []byte("1")})
	assert.NilError(t, err)

	assert.NilError(t, st.DeleteBindingSecret(ctx, b))
	for _, name := range []string{"db-credentials", "renamed"} {
		_, err = st.GetSecret(ctx, "dev", name)
		assert.Check(t, store.IsNotFound(err), "%s: %v", name, err)
	}
	assert.NilError(t, st.DeleteBindingSecret(ctx, b), "deleting what is gone is not an error")
}

// The reads started ahead serve the deletion: one request fewer per Secret; a Secret
// re-created since it was read is kept (the delete is guarded by the uid read: a
// conflict, as when it is re-created between a read and the delete, after which the
// next step reads it again), and a name the reads did not start is read as ever.
func TestDeleteBindingSecret_TakesTheReadsStartedAhead(t *testing.T) {
	ctx := context.Background()
	c, st, _ := newCluster(t)
	b := mustCreateBinding(t, st)
	_, err := st.WriteBindingSecret(ctx, b, map[string][]byte{"a": []byte("1")})
	assert.NilError(t, err)
	// Under this schedule the reads run as they start, before the count below begins.
	now := ahead.WithSchedule(ctx, func() bool { return true })
	reads := st.StartBindingSecretReads(now, b)
	gets := 0
	c.Core.PrependReactor("get", "secrets", func(clienttesting.Action) (bool, runtime.Object, error) {
		gets++
		return false, nil, nil
	})
	assert.NilError(t, st.DeleteBindingSecret(ctx, b, reads))
	assert.Equal(t, gets, 0)
	_, err = st.GetSecret(ctx, "dev", b.Spec.SecretName)
	assert.Check(t, store.IsNotFound(err), "%v", err)

	_, err = st.WriteBindingSecret(ctx, b, map[string][]byte{"a": []byte("2")})
	assert.NilError(t, err)
	reads = st.StartBindingSecretReads(now, b)
	assert.NilError(t, c.Core.CoreV1().Secrets("dev").Delete(ctx, b.Spec.SecretName, metav1.DeleteOptions{}))
	_, err = st.WriteBindingSecret(ctx, b, map[string][]byte{"a": []byte("3")})
	assert.NilError(t, err)
	err = st.DeleteBindingSecret(ctx, b, reads)
	assert.Check(t, store.IsConflict(err), "%v", err)
	kept, err := st.GetSecret(ctx, "dev", b.Spec.SecretName)
	assert.NilError(t, err, "the Secret re-created since the read is kept")
	assert.DeepEqual(t, kept.Data, map[string][]byte{"a": []byte("3")})

	b.Spec.SecretName, b.Status.Secret = "other", nil
	_, err = st.WriteBindingSecret(ctx, b, map[string][]byte{"a": []byte("4")})
	assert.NilError(t, err)
	gets = 0
	assert.NilError(t, st.DeleteBindingSecret(ctx, b, reads))
	assert.Equal(t, gets, 1, "a name not read ahead is read")
	_, err = st.GetSecret(ctx, "dev", "other")
	assert.Check(t, store.IsNotFound(err), "%v", err)
}

func TestGetSecret_MissingSecretIsNotFound(t *testing.T) {
	_, st, _ := newCluster(t)
	_, err := st.GetSecret(context.Background(), "dev", "acme-auth")
	assert.Check(t, store.IsNotFound(err))
	assert.Check(t, is.Error(err, `Secret "acme-auth" not found in namespace "dev": check the name, or create the Secret`))
}

// TestBindingSecret_GoesWithTheBindingsConfigMap checks the owner reference is one the
// garbage collector follows (the fake cluster deletes owned Secrets by uid, as the real
// one does).
func TestBindingSecret_GoesWithTheBindingsConfigMap(t *testing.T) {
	ctx := context.Background()
	_, st, _ := newCluster(t)
	b := mustCreateBinding(t, st)
	_, err := st.WriteBindingSecret(ctx, b, map[string][]byte{"a": []byte("1")})
	assert.NilError(t, err)

	assert.NilError(t, st.Bindings().Delete(ctx, "dev", "db"))
	_, err = st.GetSecret(ctx, "dev", "db-credentials")
	assert.NilError(t, err, "the binding is only marked for deletion")
	_, err = st.Bindings().RemoveFinalizer(ctx, b)
	assert.NilError(t, err)
	_, err = st.GetSecret(ctx, "dev", "db-credentials")
	assert.Check(t, store.IsNotFound(err), "%v", err)
}

func TestRequestSecret_OwnedByTheRecordReadOnlyByItAndDeleted(t *testing.T) {
	ctx := context.Background()
	c, st, _ := newCluster(t)
	inst, err := st.Instances().Create(ctx, storetest.SampleInstance())
	assert.NilError(t, err)
	name := store.RequestSecretName("req-1")

	assert.NilError(t, st.WriteRequestSecret(ctx, inst, name, map[string][]byte{store.RequestParametersKey: []byte(`{"p":"v"}`)}))

	s, err := c.Core.CoreV1().Secrets(inst.Namespace).Get(ctx, name, metav1.GetOptions{})
	assert.NilError(t, err)
	assert.DeepEqual(t, s.OwnerReferences, []metav1.OwnerReference{{
		APIVersion: "v1", Kind: "ConfigMap", Name: store.ConfigMapName(v1alpha1.KindServiceInstance, inst.Name), UID: inst.UID,
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(false),
	}})
	assert.DeepEqual(t, s.Labels, map[string]string{store.LabelManagedBy: store.ManagedBy, store.LabelInstance: inst.Name, store.LabelRequest: "true"})
	data, err := st.ReadRequestSecret(ctx, inst, name)
	assert.NilError(t, err)
	assert.Equal(t, string(data[store.RequestParametersKey]), `{"p":"v"}`)

	// A record of the same name but another uid (forged, or re-created) owns nothing.
	other := inst.DeepCopy()
	other.UID = "another-uid"
	_, err = st.ReadRequestSecret(ctx, other, name)
	assert.Assert(t, store.IsNotOwned(err), "%v", err)
	assert.Assert(t, store.IsNotOwned(st.WriteRequestSecret(ctx, other, name, nil)))
	assert.NilError(t, st.DeleteRequestSecret(ctx, other, name))
	_, err = st.ReadRequestSecret(ctx, inst, name)
	assert.NilError(t, err, "a record that does not own the Secret cannot delete it")

	assert.NilError(t, st.DeleteRequestSecret(ctx, inst, name))
	_, err = st.ReadRequestSecret(ctx, inst, name)
	assert.Assert(t, store.IsNotFound(err), "%v", err)
	assert.NilError(t, st.DeleteRequestSecret(ctx, inst, name), "a Secret already gone is no error")
}

func TestRequestSecret_ASecretNotOwnedIsNeverRead(t *testing.T) {
	ctx := context.Background()
	c, st, _ := newCluster(t)
	b := mustCreateBinding(t, st)
	_, err := c.Core.CoreV1().Secrets(b.Namespace).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "users-password"}, Data: map[string][]byte{store.RequestParametersKey: []byte(`{}`)},
	}, metav1.CreateOptions{})
	assert.NilError(t, err)

	_, err = st.ReadRequestSecret(ctx, b, "users-password")
	assert.Assert(t, store.IsNotOwned(err), "%v", err)
	assert.ErrorContains(t, err, "does not belong to")
}

func TestRequestSecret_AnotherSecretTheRecordOwnsIsNeverReadWrittenOrDeletedAsOne(t *testing.T) {
	ctx := context.Background()
	c, st, _ := newCluster(t)
	b := mustCreateBinding(t, st)
	// The binding's credentials Secret, with a key a request Secret has, and even a name
	// a request Secret could have.
	for _, name := range []string{b.Spec.SecretName, store.RequestSecretName("forged")} {
		b.Spec.SecretName = name
		_, err := st.WriteBindingSecret(ctx, b, map[string][]byte{store.RequestParametersKey: []byte(`{"password":"s3cret"}`)})
		assert.NilError(t, err)

		_, err = st.ReadRequestSecret(ctx, b, name)
		assert.Assert(t, store.IsNotOwned(err), "%v", err)
		assert.Assert(t, store.IsNotOwned(st.WriteRequestSecret(ctx, b, name, map[string][]byte{store.RequestParametersKey: []byte(`{}`)})))
		assert.NilError(t, st.DeleteRequestSecret(ctx, b, name))
		s, err := c.Core.CoreV1().Secrets(b.Namespace).Get(ctx, name, metav1.GetOptions{})
		assert.NilError(t, err, "the credentials Secret is left")
		assert.Equal(t, string(s.Data[store.RequestParametersKey]), `{"password":"s3cret"}`)
	}
}
