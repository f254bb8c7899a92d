package e2e

import (
	"context"
	"sort"
	"testing"

	"gotest.tools/v3/assert"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/test/broker"
	"github.com/kubectl-catalog/kubectl-catalog/test/controlplane"
)

// bndEnv is one test's broker and namespace with instance "db" ready on the plan given to
// bndSetup.
type bndEnv struct {
	*instEnv
	admin kubernetes.Interface
}

func (e *bndEnv) run(t *testing.T, args ...string) result {
	t.Helper()
	return instCatalog(t, e.ns, args...)
}

func (e *bndEnv) binding(t *testing.T, name string) *v1alpha1.ServiceBinding {
	t.Helper()
	b, err := e.st.Bindings().Get(context.Background(), e.ns, name)
	assert.NilError(t, err)
	return b
}

func (e *bndEnv) secret(t *testing.T, name string) (*corev1.Secret, bool) {
	t.Helper()
	s, err := e.admin.CoreV1().Secrets(e.ns).Get(context.Background(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, false
	}
	assert.NilError(t, err)
	return s, true
}

// bndGone checks that binding name, its record and its Secret, are gone.
func (e *bndEnv) bndGone(t *testing.T, name, secret string) {
	t.Helper()
	_, err := e.st.Bindings().Get(context.Background(), e.ns, name)
	assert.Assert(t, store.IsNotFound(err), "binding %s: %v", name, err)
	_, ok := e.secret(t, secret)
	assert.Assert(t, !ok, "Secret %s is left behind", secret)
}

func (e *bndEnv) deployment(t *testing.T, name string) *appsv1.Deployment {
	t.Helper()
	d, err := e.admin.AppsV1().Deployments(e.ns).Get(context.Background(), name, metav1.GetOptions{})
	assert.NilError(t, err)
	return d
}

// bndSetup registers a test broker (its catalog changed by edit, when set) in a fresh
// namespace and provisions instance "db" of postgresql/plan, waiting until it is ready.
func bndSetup(t *testing.T, plan string, edit func(*broker.Catalog)) *bndEnv {
	t.Helper()
	env := instSetupCatalog(t, edit)
	admin, err := cp.Client(controlplane.AdminUser)
	assert.NilError(t, err)
	r := instCatalog(t, env.ns, "provision", "db", "--class", "postgresql", "--plan", plan, "--wait", "--interval", "200ms")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	return &bndEnv{instEnv: env, admin: admin}
}

// bndBrokerBindings is the ids of the bindings the broker holds, sorted.
func bndBrokerBindings(b *broker.Broker) []string {
	ids := []string{}
	for _, x := range b.Bindings() {
		ids = append(ids, x.ID)
	}
	sort.Strings(ids)
	return ids
}
