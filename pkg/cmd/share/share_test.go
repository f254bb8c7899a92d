package share_test

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/lifecycle"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/share"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/enginetest"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/printers"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store/storetest"
)

// fixture is instance db of namespace team-a, shared with team-c when shared, and a
// binding of it in team-c.
func fixture(t *testing.T, dry cmdutil.DryRunStrategy, output, target string, shared bool) (*storetest.Cluster, *share.Options, *bytes.Buffer, *bytes.Buffer) {
	t.Helper()
	c := storetest.NewCluster(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-b"}}, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-c"}})
	st := c.Store()
	ctx := context.Background()
	inst := &v1alpha1.ServiceInstance{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "db"},
		Spec: v1alpha1.ServiceInstanceSpec{Scope: v1alpha1.ScopeCluster, BrokerName: "acme", ClassExternalName: "pg", ClassID: "pg",
			PlanExternalName: "small", PlanID: "pg-small", ExternalID: "inst-db"},
	}
	if shared {
		inst.Spec.SharedWith = []string{"team-c"}
	}
	_, err := st.Instances().Create(ctx, inst)
	assert.NilError(t, err)
	_, err = st.Bindings().Create(ctx, engine.NewBinding(engine.BindingIntent{Namespace: "team-c", Name: "app", Instance: "db", InstanceNamespace: "team-a", SecretName: "app"}))
	assert.NilError(t, err)
	var out, errOut bytes.Buffer
	o := &share.Options{Name: "db", Target: target, VerbOptions: lifecycle.VerbOptions{DryRun: dry, Output: printers.OutputFlagsFor(output),
		Clients: cmdutil.Clients{Namespace: "team-a", Engine: enginetest.New(st, nil),
			Streams: cmdutil.NewTestIOStreams(strings.NewReader(""), &out, &errOut)}}}
	return c, o, &out, &errOut
}

func sharedWith(t *testing.T, c *storetest.Cluster) []string {
	t.Helper()
	inst, err := c.Store().Instances().Get(context.Background(), "team-a", "db")
	assert.NilError(t, err)
	return inst.Spec.SharedWith
}

// dryRunCase is a dry run of share or unshare: the strategy, -o, what the output shows
// and how many writes the API server got as dry runs.
type dryRunCase struct {
	dry     cmdutil.DryRunStrategy
	output  string
	want    string
	dryRuns int
}

func TestShare_DryRun_ChangesNothing(t *testing.T) {
	for _, tc := range []dryRunCase{
		{dry: cmdutil.DryRunClient, want: "configured (dry run)"},
		{dry: cmdutil.DryRunServer, want: "configured (server dry run)", dryRuns: 1},
		{dry: cmdutil.DryRunServer, output: "yaml", want: "- team-b", dryRuns: 1},
	} {
		t.Run(string(tc.dry)+tc.output, func(t *testing.T) {
			c, o, out, errOut := fixture(t, tc.dry, tc.output, "team-b", false)
			assert.NilError(t, o.Run(context.Background()))
			assert.Assert(t, is.Contains(out.String(), tc.want))
			assert.Assert(t, is.Contains(errOut.String(), `instance "db" of namespace "team-a" would be shared with namespace "team-b"`))
			assert.Equal(t, c.DryRuns(), tc.dryRuns)
			assert.Assert(t, is.Len(sharedWith(t, c), 0), "a dry run shared the instance")
		})
	}
}

func TestUnshare_DryRun_ChangesNothingAndAsksNothing(t *testing.T) {
	for _, tc := range []dryRunCase{
		{dry: cmdutil.DryRunClient, want: "configured (dry run)"},
		{dry: cmdutil.DryRunServer, want: "configured (server dry run)", dryRuns: 1},
		{dry: cmdutil.DryRunClient, output: "json", want: `"name": "db"`},
	} {
		t.Run(string(tc.dry)+tc.output, func(t *testing.T) {
			c, o, out, errOut := fixture(t, tc.dry, tc.output, "team-c", true)
			// No --yes and no terminal: a real unshare would be refused; a dry run asks nothing.
			u := &share.UnshareOptions{Options: *o}
			assert.NilError(t, u.Run(context.Background()))
			assert.Assert(t, is.Contains(out.String(), tc.want))
			assert.Assert(t, is.Contains(errOut.String(), `This removes the bindings of instance "db" in namespace "team-c": app`))
			assert.Assert(t, is.Contains(errOut.String(), `would no longer be shared with namespace "team-c"`))
			assert.Equal(t, c.DryRuns(), tc.dryRuns)
			assert.DeepEqual(t, sharedWith(t, c), []string{"team-c"})
			b, err := c.Store().Bindings().Get(context.Background(), "team-c", "app")
			assert.NilError(t, err)
			assert.Assert(t, b.DeletionTimestamp == nil, "a dry run marked the binding for deletion")
		})
	}
}

func TestUnshare_WithoutYes_OutsideATerminal_IsRefused(t *testing.T) {
	c, o, _, _ := fixture(t, cmdutil.DryRunNone, "", "team-c", true)
	err := (&share.UnshareOptions{Options: *o}).Run(context.Background())
	assert.ErrorContains(t, err, "unshare needs --yes")
	assert.DeepEqual(t, sharedWith(t, c), []string{"team-c"})
}

func TestNewCmdShareAndUnshare_ParseTheFlagsIntoOptions(t *testing.T) {
	t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "none"))
	c := storetest.NewCluster()
	f := cmdutil.NewFactory(cmdutil.NewTestIOStreams(strings.NewReader(""), &bytes.Buffer{}, &bytes.Buffer{}))
	f.UseClients(c.Core, c.Metadata)

	var shared *share.Options
	cmd := share.NewCmdShare(f, func(o *share.Options) error { shared = o; return nil })
	f.AddFlags(cmd.PersistentFlags())
	cmd.SetArgs([]string{"db", "-n", "team-a", "--to-namespace", "team-b", "--dry-run=server", "-o", "yaml"})
	assert.NilError(t, cmd.Execute())
	assert.Equal(t, shared.Name, "db")
	assert.Equal(t, shared.Namespace, "team-a")
	assert.Equal(t, shared.Target, "team-b")
	assert.Equal(t, shared.DryRun, cmdutil.DryRunServer)
	assert.Assert(t, shared.Engine != nil)

	var unshared *share.UnshareOptions
	cmd = share.NewCmdUnshare(f, func(o *share.UnshareOptions) error { unshared = o; return nil })
	f.AddFlags(cmd.PersistentFlags())
	cmd.SetArgs([]string{"db", "-n", "team-a", "--from-namespace", "team-b", "--yes"})
	assert.NilError(t, cmd.Execute())
	assert.Equal(t, unshared.Target, "team-b")
	assert.Assert(t, unshared.Yes && unshared.Prompter == nil)
	assert.Assert(t, unshared.Engine != nil)
}

func TestShareOptions_Validate(t *testing.T) {
	for _, tc := range []struct {
		target string
		want   string
	}{
		{target: "team-b"},
		{target: "", want: "--to-namespace NAMESPACE is required"},
		{target: "Bad_Name", want: `--to-namespace "Bad_Name" is not a valid namespace name`},
	} {
		o := share.Options{Name: "db", Target: tc.target}
		err := o.Validate()
		if tc.want == "" {
			assert.NilError(t, err)
			continue
		}
		assert.ErrorContains(t, err, tc.want)
		assert.Equal(t, cmdutil.ExitCode(err), cmdutil.ExitUsage)
		u := share.UnshareOptions{Options: o}
		assert.ErrorContains(t, u.Validate(), "--from-namespace")
	}
}
