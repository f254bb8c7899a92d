package cmd

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil/complete"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store/storetest"
)

// completionKubeconfig has two contexts; the current one works in namespace dev.
const completionKubeconfig = `apiVersion: v1
kind: Config
clusters:
- name: cluster-a
  cluster: {server: "https://127.0.0.1:1"}
- name: cluster-b
  cluster: {server: "https://127.0.0.1:2"}
users:
- name: alice
  user: {token: not-used}
contexts:
- name: ctx-a
  context: {cluster: cluster-a, user: alice, namespace: dev}
- name: ctx-b
  context: {cluster: cluster-b, user: alice, namespace: prod}
current-context: ctx-a
`

// completionCluster is a fake cluster with a cluster-scoped broker acme (classes
// postgresql: hobby, standard; redis: small), a namespace broker team in dev, instances
// db and cache in dev, their bindings, Secrets and workloads.
func completionCluster(t *testing.T) *storetest.Cluster {
	t.Helper()
	objects := []runtime.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "dev"}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "prod"}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: cmdutil.DefaultCatalogNamespace}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "dev", Name: "db-params"}, Data: map[string][]byte{"k": []byte("secret-value")}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "dev", Name: "other"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: cmdutil.DefaultCatalogNamespace, Name: "acme-auth"}},
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "dev", Name: "web"}},
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "prod", Name: "api"}},
		&appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: "dev", Name: "queue"}},
		&batchv1.CronJob{ObjectMeta: metav1.ObjectMeta{Namespace: "dev", Name: "report"}},
		&batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "dev", Name: "migrate"}},
	}
	c := storetest.NewCluster(objects...)
	st := c.Store()
	ctx := context.Background()
	catNS := cmdutil.DefaultCatalogNamespace
	for _, b := range []*v1alpha1.Broker{
		{ObjectMeta: metav1.ObjectMeta{Namespace: catNS, Name: "acme"}, Spec: v1alpha1.BrokerSpec{URL: "https://acme.example", Scope: v1alpha1.ScopeCluster}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "dev", Name: "team"}, Spec: v1alpha1.BrokerSpec{URL: "https://team.example", Scope: v1alpha1.ScopeNamespace}},
	} {
		_, err := st.Brokers().Create(ctx, b)
		assert.NilError(t, err)
	}
	for _, cl := range []struct {
		id, name string
		plans    []string
	}{{"svc-pg", "postgresql", []string{"hobby", "standard"}}, {"svc-redis", "redis", []string{"small"}}} {
		var plans []v1alpha1.ServicePlan
		for _, p := range cl.plans {
			plans = append(plans, v1alpha1.ServicePlan{ID: cl.id + "-" + p, ExternalName: p, Description: "the " + p + " plan"})
		}
		_, err := st.Classes().Create(ctx, &v1alpha1.ServiceClass{
			ObjectMeta: metav1.ObjectMeta{Namespace: catNS, Name: v1alpha1.ClassRecordName("acme", cl.id)},
			Spec: v1alpha1.ServiceClassSpec{BrokerName: "acme", Scope: v1alpha1.ScopeCluster, ID: cl.id, ExternalName: cl.name,
				Description: cl.name + " as a service", Bindable: true, Plans: plans},
		})
		assert.NilError(t, err)
	}
	for _, i := range []struct{ name, class, classID, plan string }{{"db", "postgresql", "svc-pg", "hobby"}, {"cache", "redis", "svc-redis", "small"}} {
		_, err := st.Instances().Create(ctx, &v1alpha1.ServiceInstance{
			ObjectMeta: metav1.ObjectMeta{Namespace: "dev", Name: i.name},
			Spec: v1alpha1.ServiceInstanceSpec{Scope: v1alpha1.ScopeCluster, BrokerName: "acme", ClassExternalName: i.class, ClassID: i.classID,
				PlanExternalName: i.plan, PlanID: i.classID + "-" + i.plan, ExternalID: "inst-" + i.name},
		})
		assert.NilError(t, err)
	}
	for _, b := range []struct{ name, inst string }{{"db-app", "db"}, {"db-ro", "db"}, {"cache-app", "cache"}} {
		_, err := st.Bindings().Create(ctx, &v1alpha1.ServiceBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: "dev", Name: b.name},
			Spec:       v1alpha1.ServiceBindingSpec{InstanceName: b.inst, ExternalID: "bind-" + b.name, SecretName: b.name},
		})
		assert.NilError(t, err)
	}
	return c
}

// completeOn runs "kubectl catalog __complete ARGS" on the cluster (nil: none, only the
// kubeconfig) and returns the candidates' names, in order, and what went to stderr.
func completeOn(t *testing.T, c *storetest.Cluster, args ...string) ([]string, string) {
	t.Helper()
	kubeconfig := filepath.Join(t.TempDir(), "config")
	assert.NilError(t, os.WriteFile(kubeconfig, []byte(completionKubeconfig), 0o600))
	t.Setenv("KUBECONFIG", kubeconfig)
	var out, errOut bytes.Buffer
	f := cmdutil.NewFactory(cmdutil.NewTestIOStreams(strings.NewReader(""), &out, &errOut))
	if c != nil {
		f.UseClients(c.Core, c.Metadata)
	}
	root := NewCmdRoot(f)
	root.SetArgs(append([]string{cobra.ShellCompRequestCmd}, args...))
	assert.NilError(t, root.ExecuteContext(context.Background()))
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	assert.Assert(t, len(lines) > 0 && strings.HasPrefix(lines[len(lines)-1], ":"), "no directive in %q", out.String())
	var names []string
	for _, l := range lines[:len(lines)-1] {
		name, _, _ := strings.Cut(l, "\t")
		names = append(names, name)
	}
	return names, errOut.String()
}

func TestComplete_Names(t *testing.T) {
	c := completionCluster(t)
	namespaces := []string{"catalog-system", "dev", "prod"}
	allPlans := []string{"postgresql/hobby", "postgresql/standard", "redis/small"}
	for _, tc := range []struct {
		args []string
		want []string
	}{
		// instances
		{[]string{"describe", "instance", ""}, []string{"cache", "db"}},
		{[]string{"describe", "instance", "d"}, []string{"db"}},
		{[]string{"describe", "instance", "db", ""}, nil},
		{[]string{"get", "instances", "db", ""}, []string{"cache"}},
		{[]string{"-n", "prod", "get", "instances", ""}, nil},
		{[]string{"deprovision", ""}, []string{"cache", "db"}},
		{[]string{"update", ""}, []string{"cache", "db"}},
		{[]string{"touch", "instance", ""}, []string{"cache", "db"}},
		{[]string{"share", ""}, []string{"cache", "db"}},
		{[]string{"unshare", ""}, []string{"cache", "db"}},
		{[]string{"export", ""}, []string{"cache", "db"}},
		{[]string{"release", ""}, []string{"cache", "db"}},
		{[]string{"bind", ""}, []string{"cache", "db"}},
		{[]string{"get", "bindings", "--instance", ""}, []string{"cache", "db"}},
		{[]string{"unbind", "--all", ""}, []string{"cache", "db"}},
		// bindings
		{[]string{"describe", "binding", ""}, []string{"cache-app", "db-app", "db-ro"}},
		{[]string{"get", "bindings", "db-app", ""}, []string{"cache-app", "db-ro"}},
		{[]string{"unbind", ""}, []string{"cache-app", "db-app", "db-ro"}},
		{[]string{"unbind", "db", "--name", ""}, []string{"db-app", "db-ro"}},
		{[]string{"unbind", "db", "--name", "db-app,"}, []string{"db-app,db-ro"}},
		{[]string{"unbind", "--instance", "cache", "--name", ""}, []string{"cache-app"}},
		{[]string{"bind", "--rotate", ""}, []string{"cache-app", "db-app", "db-ro"}},
		// wait: TYPE/ first, then the names of the type; or TYPE then names
		{[]string{"wait", ""}, []string{"instance/", "binding/"}},
		{[]string{"wait", "b"}, []string{"binding/"}},
		{[]string{"wait", "instance/"}, []string{"instance/cache", "instance/db"}},
		{[]string{"wait", "instance/db", "binding/db-"}, []string{"binding/db-app", "binding/db-ro"}},
		{[]string{"wait", "instance/db", "instance/"}, []string{"instance/cache"}},
		{[]string{"wait", "pod/"}, nil},
		{[]string{"wait", "binding", "db-app", ""}, []string{"cache-app", "db-ro"}},
		{[]string{"wait", "instance/db", "--for", ""}, []string{"condition=Ready", "delete"}},
		// brokers
		{[]string{"get", "brokers", ""}, []string{"team", "acme"}},
		{[]string{"describe", "broker", "a"}, []string{"acme"}},
		{[]string{"deregister", ""}, []string{"team", "acme"}},
		{[]string{"sync", "broker", ""}, []string{"team", "acme"}},
		{[]string{"marketplace", "--broker", ""}, []string{"team", "acme"}},
		{[]string{"get", "classes", "--broker", ""}, []string{"team", "acme"}},
		// classes
		{[]string{"provision", "x", "--class", ""}, []string{"postgresql", "redis"}},
		{[]string{"get", "instances", "--class", ""}, []string{"postgresql", "redis"}},
		{[]string{"get", "classes", "redis", ""}, []string{"postgresql"}},
		{[]string{"describe", "class", ""}, []string{"postgresql", "redis"}},
		{[]string{"marketplace", "--class", "p"}, []string{"postgresql"}},
		{[]string{"access", "enable", ""}, []string{"postgresql", "redis"}},
		{[]string{"access", "disable", "postgresql/"}, []string{"postgresql/hobby", "postgresql/standard"}},
		// plans: of the class given by flag, of the instance's class, or CLASS/PLAN
		{[]string{"provision", "x", "--class", "postgresql", "--plan", ""}, []string{"hobby", "standard"}},
		{[]string{"provision", "x", "--plan", ""}, allPlans},
		{[]string{"update", "db", "--plan", ""}, []string{"hobby", "standard"}},
		{[]string{"update", "cache", "--plan", ""}, []string{"small"}},
		{[]string{"update", "--plan", ""}, nil},
		{[]string{"get", "instances", "--class", "redis", "--plan", ""}, []string{"small"}},
		{[]string{"get", "plans", "--class", "redis", ""}, []string{"small"}},
		{[]string{"get", "plans", ""}, allPlans},
		{[]string{"describe", "plan", ""}, allPlans},
		{[]string{"describe", "plan", "--class", "postgresql", ""}, []string{"hobby", "standard"}},
		// bind --to: kinds, then the workloads of the kind typed
		{[]string{"bind", "db", "--to", ""}, []string{"deployment/", "statefulset/", "daemonset/", "cronjob/"}},
		{[]string{"bind", "db", "--to", "deployment/"}, []string{"deployment/web"}},
		{[]string{"bind", "db", "--to", "deploy/w"}, []string{"deploy/web"}},
		{[]string{"bind", "db", "--to", "sts/"}, []string{"sts/queue"}},
		{[]string{"bind", "db", "--to", "cj/"}, []string{"cj/report"}},
		{[]string{"bind", "db", "--to", "job/"}, nil},
		{[]string{"-n", "prod", "bind", "db", "--to", "deployment/"}, []string{"deployment/api"}},
		// namespaces, contexts, clusters, users
		{[]string{"get", "instances", "-n", ""}, namespaces},
		{[]string{"get", "instances", "--namespace", "p"}, []string{"prod"}},
		{[]string{"--catalog-namespace", "c"}, []string{"catalog-system"}},
		{[]string{"bind", "db", "--instance-namespace", ""}, namespaces},
		{[]string{"share", "db", "--to-namespace", ""}, namespaces},
		{[]string{"unshare", "db", "--from-namespace", "pr"}, []string{"prod"}},
		{[]string{"provision", "x", "--allowed-namespaces", "dev,"}, []string{"dev,catalog-system", "dev,prod"}},
		{[]string{"update", "db", "--allowed-namespaces", ""}, namespaces},
		{[]string{"reconcile", "install", "--namespace", "c"}, []string{"catalog-system"}},
		{[]string{"reconcile", "uninstall", "--namespace", "c"}, []string{"catalog-system"}},
		{[]string{"doctor", "--reconcile-namespace", "c"}, []string{"catalog-system"}},
		{[]string{"get", "instances", "--context", ""}, []string{"ctx-a", "ctx-b"}},
		{[]string{"--cluster", ""}, []string{"cluster-a", "cluster-b"}},
		{[]string{"--user", ""}, []string{"alice"}},
		// Secrets: names only
		{[]string{"provision", "x", "--params-from-secret", ""}, []string{"db-params", "other"}},
		{[]string{"bind", "db", "--add-keys-from-secret", "o"}, []string{"other"}},
		{[]string{"provision", "x", "--user-provided", "--credentials-from-secret", ""}, []string{"db-params", "other"}},
		{[]string{"register", "b", "--basic-auth-secret", ""}, []string{"acme-auth"}},
		{[]string{"register", "b", "--scope", "namespace", "--bearer-token-secret", ""}, []string{"db-params", "other"}},
		// enums
		{[]string{"bind", "db", "--dry-run="}, []string{"none", "client", "server"}},
		{[]string{"register", "b", "--scope", ""}, []string{"cluster", "namespace"}},
		{[]string{"completion", ""}, []string{"bash", "zsh", "fish", "powershell", "kubectl"}},
		// what takes no name completes none (and no file names)
		{[]string{"provision", ""}, nil},
		{[]string{"version", ""}, nil},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			got, errOut := completeOn(t, c, tc.args...)
			assert.DeepEqual(t, got, tc.want)
			assert.Assert(t, !strings.Contains(errOut, "error"), errOut)
		})
	}
}

func TestComplete_OutputFormats(t *testing.T) {
	got, _ := completeOn(t, nil, "get", "instances", "-o", "")
	assert.Check(t, is.Contains(got, "wide"))
	assert.Check(t, is.Contains(got, "yaml"))
	got, _ = completeOn(t, nil, "provision", "db", "-o", "")
	assert.Check(t, !slices.Contains(got, "wide"))
	assert.Check(t, is.Contains(got, "json"))
}

// TestComplete_SecretsAreListedAsMetadata: completing a Secret's name reads no Secret.
func TestComplete_SecretsAreListedAsMetadata(t *testing.T) {
	c := completionCluster(t)
	c.Core.ClearActions()
	got, _ := completeOn(t, c, "provision", "x", "--params-from-secret", "")
	assert.DeepEqual(t, got, []string{"db-params", "other"})
	for _, a := range c.Core.Actions() {
		assert.Assert(t, a.GetResource().Resource != "secrets", "%s %s", a.GetVerb(), a.GetResource())
	}
}

// TestComplete_FailureCompletesNothing: no cluster, a forbidden list or a server that does
// not answer completes nothing, prints no error, and returns within the timeout.
func TestComplete_FailureCompletesNothing(t *testing.T) {
	t.Run("forbidden", func(t *testing.T) {
		c := completionCluster(t)
		c.Core.PrependReactor("list", "*", func(a clienttesting.Action) (bool, runtime.Object, error) {
			return true, nil, errForbidden(a)
		})
		for _, args := range [][]string{{"describe", "instance", ""}, {"get", "brokers", ""}, {"-n", ""}, {"provision", "x", "--plan", ""}} {
			got, errOut := completeOn(t, c, args...)
			assert.Check(t, is.Len(got, 0), "%v", args)
			assert.Check(t, !strings.Contains(errOut, "forbidden"), errOut)
		}
	})
	t.Run("no kubeconfig", func(t *testing.T) {
		t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "none"))
		var out, errOut bytes.Buffer
		f := cmdutil.NewFactory(cmdutil.NewTestIOStreams(strings.NewReader(""), &out, &errOut))
		root := NewCmdRoot(f)
		root.SetArgs([]string{cobra.ShellCompRequestCmd, "describe", "instance", ""})
		assert.NilError(t, root.ExecuteContext(context.Background()))
		assert.Equal(t, strings.TrimSpace(out.String()), ":4")
		assert.Assert(t, !strings.Contains(errOut.String(), "error"), errOut.String())
	})
	t.Run("server does not answer", func(t *testing.T) {
		release := make(chan struct{})
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}))
		defer srv.Close()
		defer close(release)
		old := complete.Timeout
		complete.Timeout = 200 * time.Millisecond
		defer func() { complete.Timeout = old }()
		var out, errOut bytes.Buffer
		f := cmdutil.NewFactory(cmdutil.NewTestIOStreams(strings.NewReader(""), &out, &errOut))
		root := NewCmdRoot(f)
		root.SetArgs([]string{cobra.ShellCompRequestCmd, "--server", srv.URL, "-n", "dev", "describe", "instance", ""})
		start := time.Now()
		assert.NilError(t, root.ExecuteContext(context.Background()))
		assert.Assert(t, time.Since(start) < 5*time.Second, "took %s", time.Since(start))
		assert.Equal(t, strings.TrimSpace(out.String()), ":4")
	})
}

// freeText are the flags whose value is not a name or an enum: the user types it. Flags
// of a numeric or duration type are free text too. A flag that takes a file name keeps
// the shell's completion of file names (it needs none of its own).
var freeText = map[string]string{
	"namespace-broker-allow-cidr": "a CIDR",
	"namespace-broker-deny-cidr":  "a CIDR",
	"add-key":                     "KEY=VALUE",
	"confirm-context":             "a context of the file --confirm-with-kubeconfig names",
	"moved-from-context":          "a context of the file --moved-from-kubeconfig names",
	"to-cluster-id":               "the id of another cluster, read there",
	"as":                          "a user name the cluster knows, not listable",
	"as-uid":                      "a uid",
	"as-group":                    "a group name",
	"as-user-extra":               "KEY=VALUE",
	"cache-dir":                   "a directory",
	"certificate-authority":       "a file name",
	"class-restrictions":          "a rule",
	"client-certificate":          "a file name",
	"client-key":                  "a file name",
	"credentials-file":            "a file name",
	"credentials-json":            "JSON",
	"credentials-keys":            "new credential keys",
	"external-id":                 "a new OSB id",
	"env-prefix":                  "a prefix",
	"image":                       "an image reference",
	"kubeconfig":                  "a file name",
	"param":                       "KEY=VALUE",
	"params-file":                 "a file name",
	"params-json":                 "JSON",
	"secret-template":             "a file name",
	"plan-restrictions":           "a rule",
	"proxy-url":                   "a URL",
	"remove-key":                  "a credentials key",
	"rename-key":                  "FROM=TO",
	"selector":                    "a label selector",
	"sort-by":                     "a JSONPath expression",
	"request-timeout":             "a duration",
	"route-service-url":           "a URL",
	"secret-name":                 "the name of the Secret to write (new)",
	"server":                      "a URL",
	"syslog-drain-url":            "a URL",
	"tls-server-name":             "a host name",
	"token":                       "a secret",
	"url":                         "a URL",
	"kubectl catalog bind --name": "the new binding's name",
	"kubectl catalog reconcile install --name":   "the installation's name (new)",
	"kubectl catalog reconcile uninstall --name": "the installation's name",
	"kubectl catalog doctor --reconcile-name":    "the installation's name",
}

// TestComplete_EveryNameHasACompletion walks the whole command tree: every flag whose
// value is a name or an enum completes it (the others are in freeText), and every
// command that takes names as arguments completes them.
func TestComplete_EveryNameHasACompletion(t *testing.T) {
	f := cmdutil.NewFactory(cmdutil.NewTestIOStreams(nil, &bytes.Buffer{}, &bytes.Buffer{}))
	root := NewCmdRoot(f)
	used := map[string]bool{}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Name() == "help" {
			return
		}
		path := c.CommandPath()
		c.LocalFlags().VisitAll(func(fl *pflag.Flag) {
			switch fl.Value.Type() {
			case "bool", "int", "int32", "int64", "float32", "float64", "duration", "count":
				return
			}
			if complete.HasCompletion(c, fl) {
				return
			}
			for _, key := range []string{path + " --" + fl.Name, fl.Name} {
				if _, ok := freeText[key]; ok {
					used[key] = true
					return
				}
			}
			t.Errorf("%s --%s (%s) completes nothing: register a completion, or add it to freeText", path, fl.Name, fl.Value.Type())
		})
		if c.Runnable() {
			assert.Check(t, c.ValidArgsFunction != nil || len(c.ValidArgs) > 0, "%s completes no arguments (not even none)", path)
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	for key := range freeText {
		assert.Check(t, used[key], "freeText has %q, which no command has (or which now completes)", key)
	}
}

// TestComplete_EveryNameArgumentIsCompleted: every command whose arguments are names of
// records (its Use says NAME, INSTANCE, BINDING, CLASS or PLAN) has a case in
// TestComplete_Names that completes them.
func TestComplete_EveryNameArgumentIsCompleted(t *testing.T) {
	tested := map[string]bool{}
	for _, args := range [][]string{
		{"describe", "instance"}, {"get", "instances"}, {"deprovision"}, {"update"}, {"touch", "instance"}, {"share"}, {"unshare"},
		{"bind"}, {"describe", "binding"}, {"get", "bindings"}, {"unbind"}, {"get", "brokers"}, {"describe", "broker"},
		{"deregister"}, {"sync", "broker"}, {"get", "classes"}, {"describe", "class"}, {"access", "enable"},
		{"access", "disable"}, {"get", "plans"}, {"describe", "plan"}, {"wait"}, {"export"}, {"release"},
	} {
		tested["kubectl catalog "+strings.Join(args, " ")] = true
	}
	f := cmdutil.NewFactory(cmdutil.NewTestIOStreams(nil, &bytes.Buffer{}, &bytes.Buffer{}))
	newNames := []string{"kubectl catalog provision", "kubectl catalog register"}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		words := strings.Fields(c.Use)
		if c.Runnable() && len(words) > 1 {
			arg := strings.Trim(words[1], "[](")
			takesName := !strings.HasPrefix(arg, "-") && strings.ToUpper(arg) == arg && strings.ContainsAny(arg, "ABCDEFGHIJKLMNOPQRSTUVWXYZ")
			if takesName && !slices.Contains(newNames, c.CommandPath()) {
				assert.Check(t, tested[c.CommandPath()], "%s takes %s: add its completion to TestComplete_Names", c.CommandPath(), arg)
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(NewCmdRoot(f))
}

func errForbidden(a clienttesting.Action) error {
	return apierrors.NewForbidden(a.GetResource().GroupResource(), "", errors.New("not allowed"))
}
