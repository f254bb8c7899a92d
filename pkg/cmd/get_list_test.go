package cmd_test

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	"gotest.tools/v3/golden"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store/storetest"
)

// listCluster holds a broker, its class (in the catalog namespace and, namespace-scoped,
// in namespace "team"), and three instances in namespace "dev", created a minute
// apart in the order c, a, b, with plans large, small and medium.
func listCluster(t *testing.T) (*storetest.Cluster, time.Time) {
	t.Helper()
	ctx := context.Background()
	c := storetest.NewCluster()
	now := storetest.SampleTime().Time
	c.SetClock(func() time.Time { return now })
	st := c.Store()
	b := storetest.SampleBroker()
	_, err := st.Brokers().Create(ctx, b)
	assert.NilError(t, err)
	class := storetest.SampleClass()
	_, err = st.Classes().Create(ctx, class)
	assert.NilError(t, err)
	own := storetest.SampleClass()
	own.Namespace, own.Spec.Scope, own.Spec.ExternalName = "team", v1alpha1.ScopeNamespace, "mysql"
	own.Labels = map[string]string{"tier": "gold"}
	_, err = st.Classes().Create(ctx, own)
	assert.NilError(t, err)
	for _, i := range []struct{ name, plan, team string }{{"c", "large", "payments"}, {"a", "small", "payments"}, {"b", "medium", "search"}} {
		now = now.Add(time.Minute)
		_, err := st.Instances().Create(ctx, &v1alpha1.ServiceInstance{
			ObjectMeta: metav1.ObjectMeta{Name: i.name, Namespace: storetest.UserNamespace, Labels: map[string]string{"team": i.team}},
			Spec: v1alpha1.ServiceInstanceSpec{
				Scope: v1alpha1.ScopeCluster, BrokerName: storetest.BrokerName, ClassExternalName: "postgres",
				ClassID: storetest.ClassID, PlanExternalName: i.plan, PlanID: i.plan,
			},
		})
		assert.NilError(t, err)
	}
	return c, now.Add(time.Hour)
}

func run(t *testing.T, c *storetest.Cluster, now time.Time, args ...string) (string, string, int) {
	t.Helper()
	t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "none"))
	var out, errOut bytes.Buffer
	f := cmdutil.NewFactory(cmdutil.NewTestIOStreams(strings.NewReader(""), &out, &errOut))
	f.Now = func() time.Time { return now }
	if c != nil {
		f.UseClients(c.Core, c.Metadata)
	}
	code := cmd.Execute(context.Background(), f, append([]string{"-n", storetest.UserNamespace}, args...))
	return out.String(), errOut.String(), code
}

func TestGet_SelectorSortByAndNoHeaders(t *testing.T) {
	c, now := listCluster(t)
	for _, tc := range []struct {
		golden string
		args   []string
	}{
		{"instances-selector.golden", []string{"get", "instances", "-l", "team=payments"}},
		{"instances-sort-by-plan.golden", []string{"get", "instances", "--sort-by", "{.spec.planExternalName}"}},
		{"instances-sort-by-age-no-headers.golden", []string{"get", "instances", "--sort-by", ".metadata.creationTimestamp", "--no-headers"}},
		{"instances-selector-set.golden", []string{"get", "instances", "-l", "team in (search),team!=payments", "-o", "name"}},
		{"classes-all-selector.golden", []string{"get", "classes", "-A", "-l", "tier=gold"}},
		{"plans-sort-by-no-headers.golden", []string{"get", "plans", "--sort-by", "spec.plans[0].externalName", "--no-headers"}},
		{"brokers-selector.golden", []string{"get", "brokers", "-l", "team=platform", "--no-headers"}},
		{"marketplace-all.golden", []string{"marketplace", "-A", "-o", "wide"}},
		{"marketplace-all-sort-by-no-headers.golden", []string{"marketplace", "-A", "--sort-by", "{.spec.externalName}", "--no-headers"}},
	} {
		t.Run(tc.golden, func(t *testing.T) {
			out, errOut, code := run(t, c, now, tc.args...)
			assert.Equal(t, code, cmdutil.ExitOK, errOut)
			golden.Assert(t, out, "get/"+tc.golden)
		})
	}
}

func TestGet_SelectorMatchingNothingSaysSo(t *testing.T) {
	c, now := listCluster(t)
	out, errOut, code := run(t, c, now, "get", "instances", "-l", "team=nobody")
	assert.Equal(t, code, cmdutil.ExitOK, errOut)
	assert.Equal(t, out, "")
	assert.Assert(t, is.Contains(errOut, "No instances found"))
}

func TestGet_BadSelectorOrSortByIsAUsageErrorBeforeTheCluster(t *testing.T) {
	for _, args := range [][]string{
		{"get", "instances", "-l", "=x"},
		{"get", "bindings", "-l", "a b"},
		{"get", "brokers", "--selector", "!"},
		{"get", "classes", "--sort-by", "{.metadata.name}}"},
		{"get", "plans", "--sort-by", "{.spec.plans[}"},
		{"marketplace", "-l", "x in (", "-A"},
		{"marketplace", "--sort-by", "{{.x}}"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			// No cluster: a usage error must come before any client is built.
			_, errOut, code := run(t, nil, time.Now(), args...)
			assert.Equal(t, code, cmdutil.ExitUsage, errOut)
			assert.Assert(t, is.Contains(errOut, "--help"))
		})
	}
}

func TestGet_SortByAFieldNoRecordHasIsAUsageError(t *testing.T) {
	c, now := listCluster(t)
	_, errOut, code := run(t, c, now, "get", "instances", "--sort-by", ".spec.planExternalNam")
	assert.Equal(t, code, cmdutil.ExitUsage, errOut)
	assert.Assert(t, is.Contains(errOut, `--sort-by ".spec.planExternalNam": no record has this field`))
}

func TestGet_ClassOrPlanNamingNothingFailsWithTheMarketplaceMessage(t *testing.T) {
	c, now := listCluster(t)
	for _, tc := range []struct {
		args    []string
		wantErr string
	}{
		{[]string{"get", "classes", "postgress"}, `error: class "postgress" not found in the marketplace of namespace "dev"; did you mean "postgres"?`},
		{[]string{"get", "plans", "-c", "postgress"}, `error: class "postgress" not found in the marketplace of namespace "dev"; did you mean "postgres"?`},
		{[]string{"get", "plans", "postgres/smal"}, `error: plan "postgres/smal" of class "postgres" not found in the marketplace of namespace "dev"; did you mean "postgres/small"?`},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			out, errOut, code := run(t, c, now, tc.args...)
			assert.Equal(t, code, cmdutil.ExitError, errOut)
			assert.Equal(t, out, "")
			assert.Assert(t, is.Contains(errOut, tc.wantErr))
		})
	}
	out, errOut, code := run(t, c, now, "get", "classes", storetest.BrokerName+"/postgres", "-o", "name")
	assert.Equal(t, code, cmdutil.ExitOK, errOut)
	assert.Assert(t, out != "")
}

func TestGetInstancesAndBindings_MissingNameFailsLikeKubectlGet(t *testing.T) {
	c, now := listCluster(t)
	_, err := c.Store().Bindings().Create(context.Background(), storetest.SampleBinding())
	assert.NilError(t, err)
	for _, tc := range []struct {
		name      string
		args      []string
		wantOut   []string
		noOut     []string
		wantErr   []string
		wantNoErr []string
	}{
		{
			name:    "one instance missing",
			args:    []string{"get", "instances", "nosuch"},
			wantErr: []string{`error: instance "nosuch" not found`},
			noOut:   []string{"NAME"}, wantNoErr: []string{"No instances found"},
		},
		{
			name:    "a typo is suggested",
			args:    []string{"get", "instances", "aa"},
			wantErr: []string{`error: instance "aa" not found; did you mean "a"?`},
		},
		{
			name:    "found ones printed, missing ones fail",
			args:    []string{"get", "instances", "a", "nosuch", "b", "gone"},
			wantOut: []string{"a ", "b "}, noOut: []string{"c "},
			wantErr: []string{`error: instance "nosuch" not found`, `instance "gone" not found`},
		},
		{
			name:    "found ones printed as a list with -o name",
			args:    []string{"get", "instances", "a", "nosuch", "-o", "name"},
			wantOut: []string{"/a\n"},
			wantErr: []string{`error: instance "nosuch" not found`},
		},
		{
			name:    "one binding missing",
			args:    []string{"get", "bindings", "nosuch"},
			wantErr: []string{`error: binding "nosuch" not found`},
			noOut:   []string{"NAME"}, wantNoErr: []string{"No bindings found"},
		},
		{
			name:    "found binding printed, missing one fails",
			args:    []string{"get", "bindings", "db", "nosuch"},
			wantOut: []string{"db "},
			wantErr: []string{`error: binding "nosuch" not found`},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, code := run(t, c, now, tc.args...)
			assert.Equal(t, code, cmdutil.ExitError, errOut)
			for _, s := range tc.wantOut {
				assert.Assert(t, is.Contains(out, s))
			}
			for _, s := range tc.noOut {
				assert.Assert(t, !strings.Contains(out, s), out)
			}
			for _, s := range tc.wantErr {
				assert.Assert(t, is.Contains(errOut, s))
			}
			for _, s := range tc.wantNoErr {
				assert.Assert(t, !strings.Contains(errOut, s), errOut)
			}
		})
	}
}

func TestGetInstancesAndBindings_AllNamesFoundOrNoneGivenExitsZero(t *testing.T) {
	c, now := listCluster(t)
	for _, args := range [][]string{
		{"get", "instances", "a", "b"},
		{"get", "bindings"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			_, errOut, code := run(t, c, now, args...)
			assert.Equal(t, code, cmdutil.ExitOK, errOut)
		})
	}
	_, errOut, _ := run(t, c, now, "get", "bindings")
	assert.Assert(t, is.Contains(errOut, "No bindings found"))
}

func TestGet_OneNamePrintsTheObjectAndAListPrintsAList(t *testing.T) {
	c, now := listCluster(t)
	for _, tc := range []struct {
		golden string
		args   []string
	}{
		{"instance-one-yaml.golden", []string{"get", "instance", "a", "-o", "yaml"}},
		{"instances-two-yaml.golden", []string{"get", "instances", "a", "b", "-o", "yaml"}},
		{"broker-one-json.golden", []string{"get", "broker", "acme", "-o", "json"}},
		{"brokers-list-json.golden", []string{"get", "brokers", "-o", "json"}},
	} {
		t.Run(tc.golden, func(t *testing.T) {
			out, errOut, code := run(t, c, now, tc.args...)
			assert.Equal(t, code, cmdutil.ExitOK, errOut)
			golden.Assert(t, out, "get/"+tc.golden)
		})
	}
	// -o name and templates see the List's items.
	out, errOut, code := run(t, c, now, "get", "instances", "-o", "name")
	assert.Equal(t, code, cmdutil.ExitOK, errOut)
	assert.Equal(t, out, "serviceinstance.catalog.kubectl-catalog.io/a\nserviceinstance.catalog.kubectl-catalog.io/b\nserviceinstance.catalog.kubectl-catalog.io/c\n")
	out, errOut, code = run(t, c, now, "get", "instances", "-o", "jsonpath={.items[*].metadata.name}")
	assert.Equal(t, code, cmdutil.ExitOK, errOut)
	assert.Equal(t, out, "a b c")
	out, errOut, code = run(t, c, now, "get", "instance", "b", "-o", "jsonpath={.kind}/{.metadata.name}")
	assert.Equal(t, code, cmdutil.ExitOK, errOut)
	assert.Equal(t, out, "ServiceInstance/b")
}
