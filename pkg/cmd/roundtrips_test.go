package cmd

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/kube"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store/storetest"
)

// roundTripCluster holds a synchronous cluster-scoped broker (every provision and bind
// answered at once, every delete too), its class (plan "small", whose schema requires
// "storage") and the namespaces.
func roundTripCluster(t *testing.T) *storetest.Cluster {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.Method == http.MethodPut && strings.Contains(r.URL.Path, "/service_bindings/"):
			w.WriteHeader(http.StatusCreated)
			_, _ = w.Write([]byte(`{"credentials": {"uri": "postgres://db"}}`))
			return
		case r.Method == http.MethodPut:
			w.WriteHeader(http.StatusCreated)
		case r.Method == http.MethodDelete || r.Method == http.MethodPatch:
			w.WriteHeader(http.StatusOK)
		default:
			w.WriteHeader(http.StatusNotFound)
		}
		_, _ = w.Write([]byte(`{}`))
	}))
	t.Cleanup(srv.Close)
	ctx := context.Background()
	c := storetest.NewCluster(
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: storetest.UserNamespace, UID: "uid-dev"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: kube.ClusterIDConfigMap, Namespace: storetest.CatalogNamespace},
			Data: map[string]string{kube.ClusterIDKey: "cluster-1"}},
	)
	c.Core.PrependReactor("create", "selfsubjectreviews", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, &authnv1.SelfSubjectReview{Status: authnv1.SelfSubjectReviewStatus{
			UserInfo: authnv1.UserInfo{Username: "alice", Groups: []string{"system:authenticated"}}}}, nil
	})
	st := c.Store()
	_, err := st.Brokers().Create(ctx, &v1alpha1.Broker{
		ObjectMeta: metav1.ObjectMeta{Name: storetest.BrokerName, Namespace: storetest.CatalogNamespace},
		Spec:       v1alpha1.BrokerSpec{URL: srv.URL, Scope: v1alpha1.ScopeCluster},
	})
	assert.NilError(t, err)
	class := storetest.SampleClass()
	class.Spec.Bindable = true
	_, err = st.Classes().Create(ctx, class)
	assert.NilError(t, err)
	_, err = st.PlanSchemas().Create(ctx, storetest.SamplePlanSchemas())
	assert.NilError(t, err)
	return c
}

// runOn runs "kubectl catalog -n dev ARGS" on the cluster, as a new process would (a
// factory of its own), and fails the test unless it succeeds.
func runOn(t *testing.T, c *storetest.Cluster, args ...string) string {
	t.Helper()
	t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "none"))
	var out, errOut bytes.Buffer
	f := cmdutil.NewFactory(cmdutil.NewTestIOStreams(strings.NewReader(""), &out, &errOut))
	f.UseClients(c.Core, c.Metadata)
	f.Getenv = func(string) string { return "" }
	code := Execute(context.Background(), f, append([]string{"-n", storetest.UserNamespace}, args...))
	assert.Equal(t, code, 0, "%s: %s", strings.Join(args, " "), errOut.String())
	return out.String()
}

func TestRoundTrips_Print(t *testing.T) {
	c := roundTripCluster(t)
	for _, args := range [][]string{
		{"provision", "db", "--class", "postgres", "--plan", "small", "-p", "storage=5"},
		{"marketplace"},
		{"get", "instances"},
		{"describe", "instance", "db"},
		{"bind", "db", "--name", "app"},
		{"update", "db", "-p", "storage=6"},
		{"unbind", "app"},
		{"deprovision", "db", "--yes"},
		{"graph"},
	} {
		c.Core.ClearActions()
		runOn(t, c, args...)
		var lines []string
		for _, a := range c.Core.Actions() {
			lines = append(lines, storetest.Request(a))
		}
		t.Logf("%s:\n  %s", strings.Join(args, " "), strings.Join(lines, "\n  "))
	}
}
