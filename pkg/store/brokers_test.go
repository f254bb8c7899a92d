package store_test

import (
	"context"
	"slices"
	"testing"

	"gotest.tools/v3/assert"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store/storetest"
)

// namespaceBroker is a namespace-scoped broker of namespace dev using Secret secret.
func namespaceBroker(name, secret string) *v1alpha1.Broker {
	b := storetest.SampleBroker()
	b.Namespace, b.Name, b.Spec.Scope = "dev", name, v1alpha1.ScopeNamespace
	b.Spec.Auth.SecretRef.Name = secret
	return b
}

func createSecret(t *testing.T, c *storetest.Cluster, namespace, name string) {
	t.Helper()
	_, err := c.Core.CoreV1().Secrets(namespace).Create(context.Background(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Data:       map[string][]byte{"username": []byte("u"), "password": []byte("p")},
	}, metav1.CreateOptions{})
	assert.NilError(t, err)
}

func secretFinalizers(t *testing.T, c *storetest.Cluster, namespace, name string) []string {
	t.Helper()
	s, err := c.Core.CoreV1().Secrets(namespace).Get(context.Background(), name, metav1.GetOptions{})
	assert.NilError(t, err)
	return s.Finalizers
}

func TestCreate_NamespaceScopedBrokerHoldsItsInstances_ClusterScopedDoesNot(t *testing.T) {
	ctx := context.Background()
	_, st, _ := newCluster(t)
	nb, err := st.Brokers().Create(ctx, namespaceBroker("team", "team-auth"))
	assert.NilError(t, err)
	assert.DeepEqual(t, nb.Finalizers, []string{store.Finalizer})
	cb, err := st.Brokers().Create(ctx, storetest.SampleBroker())
	assert.NilError(t, err)
	assert.Check(t, !slices.Contains(cb.Finalizers, store.Finalizer))

	// Deleting the namespace (or the ConfigMap) only marks it.
	assert.NilError(t, st.Brokers().Delete(ctx, "dev", "team"))
	marked, err := st.Brokers().Get(ctx, "dev", "team")
	assert.NilError(t, err, "the finalizer holds the broker")
	assert.Check(t, marked.DeletionTimestamp != nil)
}

func TestProtectBrokerSecret_TheSecretOutlivesItsDeletionUntilTheLastBrokerUsingItIsReleased(t *testing.T) {
	ctx := context.Background()
	c, st, _ := newCluster(t)
	createSecret(t, c, "dev", "team-auth")
	var brokers []*v1alpha1.Broker
	for _, name := range []string{"team", "other"} {
		b, err := st.Brokers().Create(ctx, namespaceBroker(name, "team-auth"))
		assert.NilError(t, err)
		assert.NilError(t, st.ProtectBrokerSecret(ctx, b))
		brokers = append(brokers, b)
	}
	assert.DeepEqual(t, secretFinalizers(t, c, "dev", "team-auth"), []string{store.BrokerSecretFinalizer})

	// The namespace controller deletes the Secret: it stays, with its data.
	assert.NilError(t, c.Core.CoreV1().Secrets("dev").Delete(ctx, "team-auth", metav1.DeleteOptions{}))
	s, err := c.Core.CoreV1().Secrets("dev").Get(ctx, "team-auth", metav1.GetOptions{})
	assert.NilError(t, err)
	assert.Check(t, s.DeletionTimestamp != nil && len(s.Data) > 0)
	assert.NilError(t, st.ProtectBrokerSecret(ctx, brokers[0]), "a Secret being deleted is left as it is")

	assert.NilError(t, st.Brokers().Delete(ctx, "dev", "team"))
	assert.NilError(t, st.ReleaseBroker(ctx, brokers[0]))
	_, err = st.Brokers().Get(ctx, "dev", "team")
	assert.Check(t, store.IsNotFound(err), "released, the broker is gone: %v", err)
	assert.DeepEqual(t, secretFinalizers(t, c, "dev", "team-auth"), []string{store.BrokerSecretFinalizer})

	assert.NilError(t, st.ReleaseBroker(ctx, brokers[1]))
	_, err = c.Core.CoreV1().Secrets("dev").Get(ctx, "team-auth", metav1.GetOptions{})
	assert.Check(t, apierrors.IsNotFound(err), "the last broker using it released, the Secret is gone: %v", err)
	b, err := st.Brokers().Get(ctx, "dev", "other")
	assert.NilError(t, err, "a broker not deleted stays")
	assert.Check(t, !slices.Contains(b.Finalizers, store.Finalizer))

	assert.NilError(t, st.ReleaseBroker(ctx, brokers[1]), "releasing again is harmless")
}

func TestProtectBrokerSecret_MissingSecretOrClusterBroker_DoesNothing(t *testing.T) {
	ctx := context.Background()
	c, st, _ := newCluster(t)
	b, err := st.Brokers().Create(ctx, namespaceBroker("team", "missing"))
	assert.NilError(t, err)
	assert.NilError(t, st.ProtectBrokerSecret(ctx, b))

	createSecret(t, c, storetest.CatalogNamespace, "acme-broker-auth")
	cb, err := st.Brokers().Create(ctx, storetest.SampleBroker())
	assert.NilError(t, err)
	assert.NilError(t, st.ProtectBrokerSecret(ctx, cb))
	assert.Check(t, len(secretFinalizers(t, c, storetest.CatalogNamespace, "acme-broker-auth")) == 0)
}
