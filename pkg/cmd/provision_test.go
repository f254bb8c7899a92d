package cmd_test

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
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/kube"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/cmdtest"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/lifecycle"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/provision"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/printers"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store/storetest"
)

func TestProvisionOptions_Validate(t *testing.T) {
	valid := func() *provision.Options {
		return &provision.Options{
			Name: "db", Class: "postgresql",
			VerbOptions: lifecycle.VerbOptions{Output: printers.NewOutputFlags(false), Wait: lifecycle.WaitFlags{Interval: 2e9}},
		}
	}
	for _, tc := range []struct {
		name   string
		change func(*provision.Options)
		want   string
	}{
		{name: "valid", change: func(*provision.Options) {}},
		{name: "no class is fine (asked in a terminal)", change: func(o *provision.Options) { o.Class = "" }},
		{name: "json and file", change: func(o *provision.Options) { o.Params.JSON, o.Params.File = "{}", "x" }, want: "cannot be used together"},
		{name: "negative interval", change: func(o *provision.Options) { o.Wait.Interval = -1 }, want: "--interval"},
		{name: "bad secret ref", change: func(o *provision.Options) { o.Params.FromSecret = []string{""} }, want: "SECRET or SECRET/KEY"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := valid()
			tc.change(o)
			err := o.Validate()
			cmdtest.Validated(t, err, tc.want)
		})
	}
}

// provisionCluster holds a cluster-scoped broker answering every provision with 201,
// its class (plan "small", whose schema requires "storage") and the namespaces.
func provisionCluster(t *testing.T) *storetest.Cluster {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.Method != http.MethodPut {
			w.WriteHeader(http.StatusNotFound)
		} else {
			w.WriteHeader(http.StatusCreated)
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
	b := &v1alpha1.Broker{
		ObjectMeta: metav1.ObjectMeta{Name: storetest.BrokerName, Namespace: storetest.CatalogNamespace},
		Spec:       v1alpha1.BrokerSpec{URL: srv.URL, Scope: v1alpha1.ScopeCluster},
	}
	_, err := st.Brokers().Create(ctx, b)
	assert.NilError(t, err)
	_, err = st.Classes().Create(ctx, storetest.SampleClass())
	assert.NilError(t, err)
	_, err = st.PlanSchemas().Create(ctx, storetest.SamplePlanSchemas())
	assert.NilError(t, err)
	c.Core.ClearActions()
	return c
}

// runProvision runs "kubectl catalog -n dev ARGS" on the cluster.
func runProvision(t *testing.T, c *storetest.Cluster, args ...string) (string, string, int) {
	t.Helper()
	t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "none"))
	var out, errOut bytes.Buffer
	f := cmdutil.NewFactory(cmdutil.NewTestIOStreams(strings.NewReader(""), &out, &errOut))
	f.UseClients(c.Core, c.Metadata)
	f.Getenv = func(string) string { return "" }
	code := cmd.Execute(context.Background(), f, append([]string{"-n", storetest.UserNamespace}, args...))
	return out.String(), errOut.String(), code
}

// actions are the requests the cluster got, as "verb resource" (and "list
// configmaps (metadata)" for each metadata-only list), in order.
func actions(c *storetest.Cluster) []string {
	var out []string
	for _, a := range c.Core.Actions() {
		line := a.GetVerb() + " " + a.GetResource().Resource
		if g, ok := a.(clienttesting.GetAction); ok {
			line += " " + g.GetName()
		}
		out = append(out, line)
	}
	for range c.MetadataLists() {
		out = append(out, "list configmaps (metadata)")
	}
	return out
}

func TestProvision_NameTaken_SaysSoAndChangesNothing(t *testing.T) {
	c := provisionCluster(t)
	_, stderr, code := runProvision(t, c, "provision", "db", "--class", "postgres", "--plan", "small", "-p", "storage=5")
	assert.Equal(t, code, 0, stderr)
	before, err := c.Store().Instances().Get(context.Background(), storetest.UserNamespace, "db")
	assert.NilError(t, err)

	_, stderr, code = runProvision(t, c, "provision", "db", "--class", "postgres", "--plan", "small", "-p", "storage=5")
	assert.Equal(t, code, 1)
	assert.Assert(t, strings.Contains(stderr, `instance "db" already exists in namespace "dev": see it with "kubectl catalog describe instance db -n dev", wait for what is under way on it with "kubectl catalog wait instance/db --for=condition=Ready -n dev", or pick another name`), stderr)
	after, err := c.Store().Instances().Get(context.Background(), storetest.UserNamespace, "db")
	assert.NilError(t, err)
	assert.Equal(t, after.ResourceVersion, before.ResourceVersion)
}

// The requests of one synchronous provision, in the groups that go out together, group
// after group: what docs/reconcile.md lists and explains. A request more, or one that
// waits for another it need not wait for, fails here, so the round trips cannot grow back
// unnoticed.
func TestProvision_Synchronous_SendsOnlyTheNeededAPIRequests(t *testing.T) {
	c := provisionCluster(t)
	check := c.ExpectGroups(t,
		// The class (cluster and namespace scope) and the access rules; read ahead of
		// where they are needed: who the user is and the trust state (the policy, its
		// binding and the token: the author stamp and the engine's checks), the cluster
		// id and the namespace (the OSB context).
		[]string{
			"list configmaps", "list configmaps", "get configmaps catalog-access.default",
			"create selfsubjectreviews", "get configmaps catalog-trust",
			"get validatingadmissionpolicies kubectl-catalog-record-author", "get validatingadmissionpolicybindings kubectl-catalog-record-author",
			"get configmaps " + kube.ClusterIDConfigMap, "get namespaces dev",
		},
		// The plan's schemas, which the class names, and the class's broker (for the
		// credentials Secret it may name).
		[]string{"get configmaps catalog-schemas.acme." + storetest.ClassID, "get configmaps catalog-broker.acme"},
		[]string{"create configmaps"},
		// The engine, from the record as created and the class and access rules the
		// verb read: its broker (read after the create, so that a broker being deleted
		// is seen), the write-ahead, the outcome. No list for the check that no older
		// record uses the OSB id: the process generated it moments before.
		[]string{"get configmaps catalog-broker.acme"},
		[]string{"update configmaps"},
		[]string{"update configmaps"},
	)
	_, stderr, code := runProvision(t, c, "provision", "db", "--class", "postgres", "--plan", "small", "-p", "storage=5")
	assert.Equal(t, code, 0, stderr)
	check()
	inst, err := c.Store().Instances().Get(context.Background(), storetest.UserNamespace, "db")
	assert.NilError(t, err)
	assert.Equal(t, inst.Status.Phase, v1alpha1.PhaseReady)
	// An Event for the write-ahead and one for the outcome, written in the background.
	assert.Equal(t, strings.Count(strings.Join(actions(c), "\n"), "create events"), 2)
}

// An OSB id the user gives may be one an older record uses: it is checked with a list.
func TestProvision_GivenExternalID_IsCheckedWithAList(t *testing.T) {
	c := provisionCluster(t)
	_, stderr, code := runProvision(t, c, "provision", "db", "--class", "postgres", "--plan", "small", "-p", "storage=5",
		"--external-id", "0d1a4a48-8a1e-4d8e-9d8e-2f3c5e6a7b8c")
	assert.Equal(t, code, 0, stderr)
	assert.Equal(t, c.MetadataLists(), 1)
}
