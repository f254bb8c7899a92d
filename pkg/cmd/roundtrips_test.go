package cmd

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
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
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store/storetest"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/trust"
)

// rtConfig is one configuration of the round-trip matrix: where the broker is
// registered, how it authenticates the platform, whether the trust policy is in force,
// and whether the broker answers at once or works asynchronously.
type rtConfig struct {
	scope v1alpha1.Scope
	// auth is "basic" or "bearer" (credentials in a Secret of the broker's namespace)
	// or "" (none).
	auth  v1alpha1.AuthType
	trust bool
	async bool
}

func (c rtConfig) String() string {
	auth := "no credentials"
	if c.auth != "" {
		auth = string(c.auth) + " Secret"
	}
	pol := "no trust policy"
	if c.trust {
		pol = "trust policy"
	}
	calls := "sync"
	if c.async {
		calls = "async"
	}
	return fmt.Sprintf("%s broker, %s, %s, %s", c.scope, auth, pol, calls)
}

// brokerNamespace is the namespace of the broker's records (broker, Secret, classes).
func (c rtConfig) brokerNamespace() string {
	if c.scope == v1alpha1.ScopeNamespace {
		return storetest.UserNamespace
	}
	return storetest.CatalogNamespace
}

// roundTripCluster holds a synchronous cluster-scoped broker (every provision and bind
// answered at once, every delete too), its class (plan "small", whose schema requires
// "storage") and the namespaces.
func roundTripCluster(t *testing.T) *storetest.Cluster {
	return roundTripClusterFor(t, rtConfig{scope: v1alpha1.ScopeCluster})
}

// roundTripClusterFor holds the broker of cfg, its class (plan "small", whose schema
// requires "storage") and the namespaces. A synchronous broker answers every call at
// once; an asynchronous one answers 202 and reports the operation succeeded at its first
// poll. With cfg.trust the trust policy, its binding and its token are installed.
func roundTripClusterFor(t *testing.T, cfg rtConfig) *storetest.Cluster {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/last_operation"):
			w.WriteHeader(http.StatusOK)
			_, _ = w.Write([]byte(`{"state": "succeeded"}`))
			return
		case r.Method == http.MethodGet && strings.Contains(r.URL.Path, "/service_bindings/"):
			w.WriteHeader(http.StatusOK)
			_, _ = w.Write([]byte(`{"credentials": {"uri": "postgres://db"}}`))
			return
		case cfg.async && r.URL.Query().Get("accepts_incomplete") == "true" && r.Method != http.MethodGet:
			w.WriteHeader(http.StatusAccepted)
			_, _ = w.Write([]byte(`{"operation": "op-1"}`))
			return
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
	objects := []runtime.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: storetest.UserNamespace, UID: "uid-dev"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: kube.ClusterIDConfigMap, Namespace: storetest.CatalogNamespace},
			Data: map[string]string{kube.ClusterIDKey: "cluster-1"}},
	}
	if cfg.trust {
		objects = append(objects, trust.Policy(), trust.Binding(), trust.TokenConfigMap(storetest.CatalogNamespace, "token-1"))
	}
	c := storetest.NewCluster(objects...)
	c.Core.PrependReactor("create", "selfsubjectreviews", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, &authnv1.SelfSubjectReview{Status: authnv1.SelfSubjectReviewStatus{
			UserInfo: authnv1.UserInfo{Username: "alice", Groups: []string{"system:authenticated"}}}}, nil
	})
	ns := cfg.brokerNamespace()
	// The broker's records are written as the user who registered it, under the trust
	// token when the policy is in force, as "kubectl catalog register" writes them.
	st := c.Store(store.WithIdentity(func(context.Context) (*store.Identity, error) {
		return &store.Identity{Username: "alice", Groups: []string{"system:authenticated"}}, nil
	}), store.WithTrustToken(func(context.Context) (string, error) {
		if cfg.trust {
			return "token-1", nil
		}
		return "", nil
	}))
	ctx = store.WithIntent(ctx)
	broker := &v1alpha1.Broker{
		ObjectMeta: metav1.ObjectMeta{Name: storetest.BrokerName, Namespace: ns},
		Spec:       v1alpha1.BrokerSpec{URL: srv.URL, Scope: cfg.scope},
	}
	if cfg.auth != "" {
		data := map[string][]byte{"username": []byte("platform"), "password": []byte("secret")}
		if cfg.auth == v1alpha1.AuthBearer {
			data = map[string][]byte{"token": []byte("token")}
		}
		_, err := c.Core.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: "acme-auth", Namespace: ns}, Data: data}, metav1.CreateOptions{})
		assert.NilError(t, err)
		broker.Spec.Auth = &v1alpha1.BrokerAuth{Type: cfg.auth, SecretRef: v1alpha1.SecretReference{Name: "acme-auth"}}
	}
	_, err := st.Brokers().Create(ctx, broker)
	assert.NilError(t, err)
	class := storetest.SampleClass()
	class.Namespace, class.Spec.Scope = ns, cfg.scope
	class.Spec.Bindable = true
	_, err = st.Classes().Create(ctx, class)
	assert.NilError(t, err)
	schemas := storetest.SamplePlanSchemas()
	schemas.Namespace = ns
	_, err = st.PlanSchemas().Create(ctx, schemas)
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
// (what docs/reconcile.md reports as round trips against a remote API server), in every
// configuration of the matrix: a cluster- or namespace-scoped broker, its credentials in
// a Secret (basic or bearer) or none, the trust policy in force or not, a synchronous
// broker or an asynchronous one waited for with --wait. A request more, or one that
// waits for another it need not wait for, fails here, so the round trips cannot grow
// back unnoticed. The verbs run in turn on one cluster per configuration, each as a new
// process. Events are written in the background: only the one each verb's outcome sends
// is listed, in the outcome's group.
func TestRoundTrips_EachVerbsRequestGroups(t *testing.T) {
	for _, scope := range []v1alpha1.Scope{v1alpha1.ScopeCluster, v1alpha1.ScopeNamespace} {
		for _, auth := range []v1alpha1.AuthType{v1alpha1.AuthBasic, v1alpha1.AuthBearer, ""} {
			for _, inForce := range []bool{true, false} {
				for _, async := range []bool{false, true} {
					cfg := rtConfig{scope: scope, auth: auth, trust: inForce, async: async}
					t.Run(cfg.String(), func(t *testing.T) {
						c := roundTripClusterFor(t, cfg)
						for _, tc := range rtVerbs(cfg) {
							t.Run(tc.args[0], func(t *testing.T) {
								check := c.ExpectGroups(t, tc.groups...)
								runOn(t, c, tc.args...)
								check()
							})
						}
					})
				}
			}
		}
	}
}

// rtVerb is a command and the groups its requests go out in.
type rtVerb struct {
	args   []string
	groups [][]string
}

// rtVerbs are the verbs of TestRoundTrips_EachVerbsRequestGroups in configuration cfg,
// run in turn, and their groups.
func rtVerbs(cfg rtConfig) []rtVerb {
	const (
		class    = "catalog-class.acme." + storetest.ClassID
		schemas  = "catalog-schemas.acme." + storetest.ClassID
		instance = "get configmaps catalog-instance.db"
		binding  = "get configmaps catalog-binding.app"
		broker   = "get configmaps catalog-broker.acme"
		user     = "create selfsubjectreviews"
		access   = "get configmaps catalog-access.default"
		update   = "update configmaps"
		// The check that no older record uses an OSB id lists the records labelled
		// with it in every namespace.
		idList = storetest.MetadataList + " configmaps"
	)
	// The trust policy's state: the policy, its binding and the token, read together
	// once per command, whether or not they are there. The token is what the records
	// the verb writes are stamped with, the state what the checks of the records its
	// call rests on take.
	policy := []string{"get validatingadmissionpolicies " + trust.PolicyName, "get validatingadmissionpolicybindings " + trust.PolicyName,
		"get configmaps " + trust.ConfigMapName}
	// The broker's credentials Secret, read ahead of the call from a read of the broker
	// made as soon as the verb knows its name: with the verb's other reads, never after
	// the read of the broker that the call rests on.
	var secret []string
	if cfg.auth != "" {
		secret = []string{"get secrets acme-auth"}
	}
	// The Event of what the broker answered goes out with the write of the outcome, not
	// after it; the other Events are written in the background and are not listed.
	succeeded := func(action string) string { return "create events " + action + "Succeeded" }
	// The OSB context, and the key of the namespace an id is bound to: the cluster id
	// and the namespace's uid.
	osbContext := []string{"get configmaps " + kube.ClusterIDConfigMap, "get namespaces dev"}
	with := func(group []string, more ...[]string) []string {
		out := slices.Clone(group)
		for _, m := range more {
			out = append(out, m...)
		}
		return out
	}
	wait := func(args ...string) []string {
		if cfg.async {
			return append(args, "--wait", "--interval", "1ms")
		}
		return args
	}
	// outcome is the group of a call's outcome, with its Event; for an asynchronous
	// broker, the write of the operation accepted, then each poll (one here): the
	// records it reads first, together (first: a binding's poll reads the binding and
	// its instance in one group), the broker with what goes out with it (withBroker:
	// the class, for a deletion), the broker's Secret, what the poll's answer needs
	// written before the record (then: a binding's Secret) and the write of what the
	// poll found, with the Event of the outcome.
	outcome := func(action string, first []string, withBroker []string, then ...[]string) [][]string {
		if !cfg.async {
			return [][]string{{update, succeeded(action)}}
		}
		out := [][]string{{update}}
		out = append(out, first)
		out = append(out, with([]string{broker}, withBroker))
		if secret != nil {
			out = append(out, secret)
		}
		out = append(out, then...)
		return append(out, []string{update, succeeded(action)})
	}
	classOf := []string{"get configmaps " + class}
	return []rtVerb{
		{
			// The classes of both scopes and the access rules (and those of the verbs
			// ahead: who the user is, the trust state, the OSB context); the schemas
			// the class names, with its broker (for its Secret); the create, with the
			// broker's Secret; the broker, read after the create so that one being
			// deleted is seen; the write-ahead; the outcome.
			args: wait("provision", "db", "--class", "postgres", "--plan", "small", "-p", "storage=5"),
			groups: append([][]string{
				with([]string{"list configmaps", "list configmaps", access, user}, policy, osbContext),
				{"get configmaps " + schemas, broker}, with([]string{"create configmaps"}, secret), {broker}, {update},
			}, outcome("Provision", []string{instance}, nil)...),
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
			// user is, the trust state, the OSB context); what the instance names: its
			// class and schemas, and its broker (for its Secret); the create, with the
			// broker's Secret; the instance again and its broker, both after the
			// create, so that a deprovision, an unshare or a deregistration marked
			// meanwhile is seen, with the lists of the checks that no older record uses
			// the instance's or the binding's OSB id; the write-ahead; the Secret; the
			// outcome. The class and rules read first serve the engine.
			args: wait("bind", "db", "--name", "app"),
			groups: func() [][]string {
				g := [][]string{
					with([]string{instance, binding, "get secrets app", access, user}, policy, osbContext),
					{"get configmaps " + class, "get configmaps " + schemas, broker}, with([]string{"create configmaps"}, secret),
					{instance, broker, idList, idList}, {update},
				}
				if !cfg.async {
					return append(g, []string{"create secrets"}, []string{update, succeeded("Bind")})
				}
				return append(g, outcome("Bind", []string{binding, instance}, nil, []string{"create secrets"})...)
			}(),
		},
		{
			// The instance (and who the user is, the trust state, the OSB context); the
			// class and schemas it names; the update; the broker, read after the update
			// so that a deregistration marked meanwhile is seen, with the list of the
			// instance's OSB id check; the write-ahead; the outcome. The engine's step
			// starts from the update's answer and takes the class read first.
			args: wait("update", "db", "-p", "storage=6"),
			groups: append([][]string{
				with([]string{instance, user}, policy, osbContext),
				with([]string{"get configmaps " + class, "get configmaps " + schemas, broker}), with([]string{update}, secret), {broker, idList}, {update},
			}, outcome("Update", []string{instance}, nil)...),
		},
		{
			// The binding and who the user is (and the trust state); the deletion mark,
			// with the instance the binding names (for its broker's Secret); the binding
			// again, its Secret and its instance (named by the binding as read before
			// the mark, used only if the binding read after it names the same), all
			// after the mark, with the instance's broker; the Secret's deletion with the
			// instance's broker and class and the lists of the checks of the binding's
			// and the instance's OSB ids, and the broker's Secret; the write-ahead; the
			// outcome (the finalizer's removal). The instance read after the mark holds
			// no place for the binding under a limit: there is none to give back.
			args: wait("unbind", "app"),
			groups: append([][]string{
				with([]string{binding, user}, policy), {"delete configmaps catalog-binding.app", instance},
				{binding, "get secrets app", instance, osbContext[0], osbContext[1], broker},
				with([]string{"delete secrets app", broker, "get configmaps " + class, idList, idList}, secret), {update},
			}, outcome("Unbind", []string{binding, instance}, classOf)...),
		},
		{
			// The instance and its bindings (and who the user is, the trust state); the
			// deletion mark, with the instance's broker (for its Secret); the instance
			// again, its broker and class, the list of its OSB id check and its
			// bindings, in its namespace and in any, all after the mark and together,
			// with the key of the namespace its id is bound to and the broker's Secret;
			// the write-ahead; the outcome, which removes the record (from the
			// write-ahead's answer).
			args: wait("deprovision", "db", "--yes"),
			groups: append([][]string{
				with([]string{instance, "list configmaps", user}, policy), {"delete configmaps catalog-instance.db", broker},
				with([]string{instance, broker, "get configmaps " + class, idList, "list configmaps", "list configmaps", osbContext[0], osbContext[1]}, secret), {update},
			}, outcome("Deprovision", []string{instance}, classOf)...),
		},
		{args: []string{"graph"}, groups: [][]string{{"list configmaps", "list configmaps"}}},
	}
}
