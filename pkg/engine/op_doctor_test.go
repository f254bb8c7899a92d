package engine

import (
	"context"
	"errors"
	"testing"

	"gotest.tools/v3/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb/fake"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store/storetest"
)

// configMapsAndSecrets is every ConfigMap and Secret of the fake cluster, to tell that
// an operation wrote nothing.
func (f *fixture) configMapsAndSecrets() ([]corev1.ConfigMap, []corev1.Secret) {
	f.t.Helper()
	cms, err := f.cluster.Core.CoreV1().ConfigMaps("").List(context.Background(), metav1.ListOptions{})
	assert.NilError(f.t, err)
	secrets, err := f.cluster.Core.CoreV1().Secrets("").List(context.Background(), metav1.ListOptions{})
	assert.NilError(f.t, err)
	return cms.Items, secrets.Items
}

func TestProbeBroker(t *testing.T) {
	for _, tc := range []struct {
		name string
		// broker is the record probed: the fixture's cluster broker when nil.
		broker    func(f *fixture) *v1alpha1.Broker
		catalog   func(context.Context, *osb.CatalogRequest) (*osb.CatalogResponse, error)
		wantCalls int
		want      func(t *testing.T, p BrokerProbe)
	}{
		{
			name: "answers",
			catalog: func(context.Context, *osb.CatalogRequest) (*osb.CatalogResponse, error) {
				return &osb.CatalogResponse{Services: []osb.Service{{ID: "a"}, {ID: "b"}}}, nil
			},
			wantCalls: 1,
			want: func(t *testing.T, p BrokerProbe) {
				assert.DeepEqual(t, p, BrokerProbe{Services: 2})
			},
		},
		{
			name: "fails",
			catalog: func(context.Context, *osb.CatalogRequest) (*osb.CatalogResponse, error) {
				return nil, errors.New("connection refused")
			},
			wantCalls: 1,
			want: func(t *testing.T, p BrokerProbe) {
				assert.NilError(t, p.NotCalled)
				assert.ErrorContains(t, p.Err, "connection refused")
			},
		},
		{
			// A namespace-scoped broker naming credentials, written by someone the engine
			// cannot verify: its credentials would go to a URL of their choosing.
			name: "refused, not called",
			broker: func(f *fixture) *v1alpha1.Broker {
				b, err := f.st.Brokers().Create(context.Background(), &v1alpha1.Broker{
					ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "forged"},
					Spec: v1alpha1.BrokerSpec{URL: "https://evil.example", Scope: v1alpha1.ScopeNamespace,
						Auth: &v1alpha1.BrokerAuth{Type: v1alpha1.AuthBearer, SecretRef: v1alpha1.SecretReference{Name: "hidden"}}},
				})
				assert.NilError(t, err)
				return b
			},
			want: func(t *testing.T, p BrokerProbe) {
				r, ok := AsRefused(p.NotCalled)
				assert.Assert(t, ok, "%v", p.NotCalled)
				assert.Equal(t, r.Reason, ReasonRefusedAuthorUnverified)
				assert.NilError(t, p.Err)
			},
		},
		{
			name: "cluster-scoped outside the catalog namespace, not called",
			broker: func(f *fixture) *v1alpha1.Broker {
				return &v1alpha1.Broker{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "pretender"},
					Spec: v1alpha1.BrokerSpec{URL: "https://evil.example", Scope: v1alpha1.ScopeCluster}}
			},
			want: func(t *testing.T, p BrokerProbe) {
				r, ok := AsRefused(p.NotCalled)
				assert.Assert(t, ok, "%v", p.NotCalled)
				assert.Equal(t, r.Reason, ReasonRefusedUntrustedReference)
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			if tc.catalog != nil {
				f.broker.OnGetCatalog(tc.catalog)
			}
			b, err := f.st.Brokers().Get(context.Background(), storetest.CatalogNamespace, brokerName)
			assert.NilError(t, err)
			if tc.broker != nil {
				b = tc.broker(f)
			}
			cms, secrets := f.configMapsAndSecrets()

			tc.want(t, f.engine.ProbeBroker(context.Background(), b))

			assert.Equal(t, len(f.broker.CallsTo(fake.MethodGetCatalog)), tc.wantCalls)
			assert.Equal(t, len(f.broker.Calls()), tc.wantCalls, "only the catalog is asked for")
			afterCMs, afterSecrets := f.configMapsAndSecrets()
			assert.DeepEqual(t, afterCMs, cms)
			assert.DeepEqual(t, afterSecrets, secrets)
		})
	}
}
