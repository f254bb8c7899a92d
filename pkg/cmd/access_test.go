package cmd_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/access"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/cmdtest"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/enginetest"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/printers"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store/storetest"
)

func newStore(t *testing.T) (*storetest.Cluster, *store.Store) {
	t.Helper()
	c := storetest.NewCluster()
	st := c.Store()
	_, err := st.Classes().Create(context.Background(), &v1alpha1.ServiceClass{
		ObjectMeta: metav1.ObjectMeta{Namespace: storetest.CatalogNamespace, Name: v1alpha1.ClassRecordName("acme", "svc-redis")},
		Spec: v1alpha1.ServiceClassSpec{BrokerName: "acme", Scope: v1alpha1.ScopeCluster, ID: "svc-redis", ExternalName: "redis",
			Plans: []v1alpha1.ServicePlan{{ID: "plan-small", ExternalName: "small"}}},
	})
	assert.NilError(t, err)
	return c, st
}

func engineOn(st *store.Store) *engine.Engine {
	return enginetest.New(st, nil)
}

func TestAccess_DryRun_WritesNothing(t *testing.T) {
	for _, tc := range []struct {
		dry    cmdutil.DryRunStrategy
		output string
		want   string
	}{
		{dry: cmdutil.DryRunClient, want: "catalogaccess.catalog.kubectl-catalog.io/" + v1alpha1.CatalogAccessName + " created (dry run)"},
		{dry: cmdutil.DryRunServer, want: "created (server dry run)"},
		{dry: cmdutil.DryRunClient, output: "yaml", want: "classExternalName: redis"},
		{dry: cmdutil.DryRunServer, output: "json", want: `"classExternalName": "redis"`},
	} {
		t.Run(string(tc.dry)+"-"+tc.output, func(t *testing.T) {
			c, st := newStore(t)
			var out, errOut bytes.Buffer
			o := &access.Options{Target: "redis", AllNamespaces: true, DryRun: tc.dry, Output: printers.OutputFlagsFor(tc.output),
				ViewNamespace: storetest.UserNamespace, Engine: engineOn(st),
				Streams: cmdutil.NewTestIOStreams(strings.NewReader(""), &out, &errOut)}
			assert.NilError(t, o.Run(context.Background()))
			assert.Assert(t, is.Contains(out.String(), tc.want))
			assert.Assert(t, is.Contains(errOut.String(), `class "redis" would be disabled in every namespace`))
			_, err := st.Access().Get(context.Background(), storetest.CatalogNamespace, v1alpha1.CatalogAccessName)
			assert.Assert(t, store.IsNotFound(err), "a dry run wrote the access rules: %v", err)
			if tc.dry == cmdutil.DryRunServer {
				assert.Equal(t, c.DryRuns(), 1)
			} else {
				assert.Equal(t, c.DryRuns(), 0)
			}
		})
	}
}

func TestAccess_DryRun_OnExistingRules_LeavesThem(t *testing.T) {
	_, st := newStore(t)
	ctx := context.Background()
	var out, errOut bytes.Buffer
	o := &access.Options{Target: "redis/small", Namespace: storetest.UserNamespace, DryRun: cmdutil.DryRunNone,
		Output: printers.NewOutputFlags(false), ViewNamespace: storetest.UserNamespace,
		Engine: engineOn(st), Streams: cmdutil.NewTestIOStreams(strings.NewReader(""), &out, &errOut)}
	assert.NilError(t, o.Run(ctx))
	before, err := st.Access().Get(ctx, storetest.CatalogNamespace, v1alpha1.CatalogAccessName)
	assert.NilError(t, err)

	out.Reset()
	o.DryRun, o.Enabled = cmdutil.DryRunServer, true
	assert.NilError(t, o.Run(ctx))
	assert.Assert(t, is.Contains(out.String(), "configured (server dry run)"))
	after, err := st.Access().Get(ctx, storetest.CatalogNamespace, v1alpha1.CatalogAccessName)
	assert.NilError(t, err)
	assert.Equal(t, after.ResourceVersion, before.ResourceVersion)
	assert.Assert(t, !after.Spec.Rules[0].Enabled)
}

func TestNewCmdAccess_ParsesTheFlagsIntoOptions(t *testing.T) {
	for _, tc := range []struct {
		new     func(*cmdutil.Factory, func(*access.Options) error) *cobra.Command
		args    []string
		enabled bool
		ns      string
	}{
		{new: access.NewCmdEnable, args: []string{"redis/small", "-n", "team-a"}, enabled: true, ns: "team-a"},
		{new: access.NewCmdDisable, args: []string{"redis", "-A", "--dry-run=server"}},
	} {
		got := cmdtest.Parse(t, tc.new, tc.args...)
		assert.Equal(t, got.Target, tc.args[0])
		assert.Equal(t, got.Enabled, tc.enabled)
		assert.Equal(t, got.Namespace, tc.ns)
		assert.Assert(t, got.Engine != nil)
	}

	f, _ := cmdtest.FakeFactory(t)
	var list *access.ListOptions
	cmd := access.NewCmdList(f, func(o *access.ListOptions) error { list = o; return nil })
	f.AddFlags(cmd.PersistentFlags())
	cmd.SetArgs([]string{"-o", "yaml", "--catalog-namespace", "cat"})
	assert.NilError(t, cmd.Execute())
	assert.Equal(t, list.CatalogNamespace, "cat")
	assert.Assert(t, list.Reader != nil && !list.Output.IsTable())
}
