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

// The requests of each verb, in the groups that go out together, group after group
// (what docs/reconcile.md reports as round trips against a remote API server): a request
// more, or one that waits for another it need not wait for, fails here, so the round
// trips cannot grow back unnoticed. The verbs run in turn on one cluster, each as a new
// process. Events are written in the background: only the one each verb's outcome sends
// is listed, in the outcome's group.
func TestRoundTrips_EachVerbsRequestGroups(t *testing.T) {
	c := roundTripCluster(t)
	const (
		class    = "catalog-class.acme." + storetest.ClassID
		schemas  = "catalog-schemas.acme." + storetest.ClassID
		instance = "get configmaps catalog-instance.db"
		binding  = "get configmaps catalog-binding.app"
		broker   = "get configmaps catalog-broker.acme"
		user     = "create selfsubjectreviews"
		trust    = "get configmaps catalog-trust"
		access   = "get configmaps catalog-access.default"
		update   = "update configmaps"
		// The check that no older record uses an OSB id lists the records labelled
		// with it in every namespace.
		idList = storetest.MetadataList + " configmaps"
	)
	// The Event of what the broker answered goes out with the write of the outcome, not
	// after it; the other Events are written in the background and are not listed.
	succeeded := func(action string) string { return "create events " + action + "Succeeded" }
	// The OSB context, and the key of the namespace an id is bound to: the cluster id
	// and the namespace's uid.
	osbContext := []string{"get configmaps " + kube.ClusterIDConfigMap, "get namespaces dev"}
	for _, tc := range []struct {
		args   []string
		groups [][]string
	}{
		{
			// The classes of both scopes and the access rules (and those of the verbs
			// ahead: who the user is, the trust token, the OSB context); the schemas
			// the class names; the create; the broker, read after the create so that
			// one being deleted is seen; the write-ahead; the outcome.
			args: []string{"provision", "db", "--class", "postgres", "--plan", "small", "-p", "storage=5"},
			groups: [][]string{
				append([]string{"list configmaps", "list configmaps", access, user, trust}, osbContext...),
				{"get configmaps " + schemas}, {"create configmaps"}, {broker}, {update}, {update, succeeded("Provision")},
			},
		},
		{args: []string{"get", "instances"}, groups: [][]string{{"list configmaps"}}},
		{args: []string{"marketplace"}, groups: [][]string{{"list configmaps", "list configmaps", access}}},
		{
			// The instance, its bindings, those of every namespace and its Events, all
			// together: the class is read only when the broker holds another plan
			// than the spec's (the only thing describe shows from it).
			args:   []string{"describe", "instance", "db"},
			groups: [][]string{{instance, "list configmaps", "list configmaps", "list events"}},
		},
		{
			// The instance, the names the binding takes, the access rules (and who the
			// user is, the trust token, the OSB context); what the instance names: its
			// class and schemas; the create; the instance again and its broker, both
			// after the create, so that a deprovision, an unshare or a deregistration
			// marked meanwhile is seen, with the lists of the checks that no older record
			// uses the instance's or the binding's OSB id; the write-ahead; the Secret;
			// the outcome. The class and rules read first serve the engine.
			args: []string{"bind", "db", "--name", "app"},
			groups: [][]string{
				append([]string{instance, binding, "get secrets app", access, user, trust}, osbContext...),
				{"get configmaps " + class, "get configmaps " + schemas}, {"create configmaps"}, {instance, broker, idList, idList},
				{update}, {"create secrets"}, {update, succeeded("Bind")},
			},
		},
		{
			// The instance (and who the user is, the trust token, the OSB context); the
			// class and schemas it names; the update; the broker, read after the update
			// so that a deregistration marked meanwhile is seen, with the list of the
			// instance's OSB id check; the write-ahead; the outcome. The engine's step starts from the update's answer and takes the
			// class read first.
			args: []string{"update", "db", "-p", "storage=6"},
			groups: [][]string{
				append([]string{instance, user, trust}, osbContext...),
				{"get configmaps " + class, "get configmaps " + schemas}, {update}, {broker, idList}, {update}, {update, succeeded("Update")},
			},
		},
		{
			// The binding and who the user is; the deletion mark; the binding again,
			// its Secret and its instance (named by the binding as read before the
			// mark, used only if the binding read after it names the same), all after
			// the mark; the Secret's deletion with the instance's broker and class and
			// the lists of the checks of the binding's and the instance's OSB ids; the
			// write-ahead; the outcome (the finalizer's removal). The instance read after the mark holds no place for
			// the binding under a limit: there is none to give back.
			args: []string{"unbind", "app"},
			groups: [][]string{
				{binding, user}, {"delete configmaps catalog-binding.app"}, {binding, "get secrets app", instance, osbContext[0], osbContext[1]},
				{"delete secrets app", broker, "get configmaps " + class, idList, idList}, {update}, {update, succeeded("Unbind")},
			},
		},
		{
			// The instance and its bindings (and who the user is); the deletion mark;
			// the instance again, its broker and class, the list of its OSB id check
			// and its bindings, in its namespace and in any, all after the mark and
			// together, with the key of the namespace its id is bound to; the
			// write-ahead; the outcome, which removes the record (from the
			// write-ahead's answer).
			args: []string{"deprovision", "db", "--yes"},
			groups: [][]string{
				{instance, "list configmaps", user}, {"delete configmaps catalog-instance.db"},
				{instance, broker, "get configmaps " + class, idList, "list configmaps", "list configmaps", osbContext[0], osbContext[1]}, {update}, {update, succeeded("Deprovision")},
			},
		},
		{args: []string{"graph"}, groups: [][]string{{"list configmaps", "list configmaps"}}},
	} {
		t.Run(strings.Join(tc.args[:1], " "), func(t *testing.T) {
			check := c.ExpectGroups(t, tc.groups...)
			runOn(t, c, tc.args...)
			check()
		})
	}
}
