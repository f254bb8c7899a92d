package cmdutil

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
)

// UserAgentBroker starts a broker with an empty catalog that records the
// User-Agent of every request it gets, and stops it when the test ends. It is
// exported for the tests of package cmdutil_test.
func UserAgentBroker(t *testing.T) (url string, seen *[]string) {
	seen = &[]string{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		*seen = append(*seen, r.Header.Get("User-Agent"))
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"services":[]}`))
	}))
	t.Cleanup(srv.Close)
	return srv.URL, seen
}

// Every command builds its broker clients with BrokerClients, whatever its timeout: a
// broker sees one User-Agent from register, sync, doctor and the engine alike.
func TestBrokerClients_OneUserAgent(t *testing.T) {
	url, seen := UserAgentBroker(t)
	f := NewFactory(NewTestIOStreams(nil, nil, nil))
	f.UseClients(fake.NewSimpleClientset(), nil)
	b := &v1alpha1.Broker{ObjectMeta: metav1.ObjectMeta{Name: "acme", Namespace: "ns"}, Spec: v1alpha1.BrokerSpec{URL: url}}
	for _, timeout := range []time.Duration{0, 5 * time.Second} {
		clients, err := f.BrokerClients(timeout)
		assert.NilError(t, err)
		c, err := clients.ClientFor(context.Background(), b)
		assert.NilError(t, err)
		_, err = c.GetCatalog(context.Background(), nil)
		assert.NilError(t, err)
	}
	assert.DeepEqual(t, *seen, []string{UserAgent(), UserAgent()})
	assert.Assert(t, len(UserAgent()) > len("kubectl-catalog/"))
}
