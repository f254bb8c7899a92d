package reconcile

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/reconcile"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store/storetest"
)

func TestReconcile_FlagsReachTheCompletedOptions(t *testing.T) {
	t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "none"))
	var out, errOut bytes.Buffer
	f := cmdutil.NewFactory(cmdutil.NewTestIOStreams(strings.NewReader(""), &out, &errOut))
	c := storetest.NewCluster()
	f.UseClients(c.Core, c.Metadata)
	var got *Options
	cmd := NewCmdReconcile(f, func(o *Options) error { got = o; return nil })
	cmd.SetArgs([]string{"-A", "--shard", "1/3", "--workers", "2", "--dry-run", "-o", "json", "--trust-namespace-writers"})
	assert.NilError(t, cmd.Execute())
	assert.Assert(t, got.AllNamespaces)
	assert.Equal(t, got.Shard, reconcile.Shard{I: 1, N: 3})
	assert.Equal(t, got.Workers, 2)
	assert.Equal(t, got.DryRun, cmdutil.DryRunClient)
	assert.Equal(t, got.Output.Format(), "json")
	assert.Assert(t, got.TrustUnverifiedAuthors)
	assert.Assert(t, got.Reconciler != nil)
}

func TestValidate_ChangesNothing(t *testing.T) {
	o, err := serveOptions(t, "--serve")
	assert.NilError(t, err)
	o.MaxDuration, o.RetryHorizon = time.Hour, time.Minute
	o.ShardFlag = "1/3"
	o.Serve.ShardGroup = ""
	before := *o
	assert.NilError(t, o.Validate())
	assert.Equal(t, o.MaxDuration, before.MaxDuration)
	assert.Equal(t, o.RetryHorizon, before.RetryHorizon)
	assert.Equal(t, o.Shard, before.Shard)
}

func TestReconcile_TrustNamespaceWritersFormerNameStillWorksWithAWarning(t *testing.T) {
	t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "none"))
	var out, errOut bytes.Buffer
	f := cmdutil.NewFactory(cmdutil.NewTestIOStreams(strings.NewReader(""), &out, &errOut))
	c := storetest.NewCluster()
	f.UseClients(c.Core, c.Metadata)
	var got *Options
	cmd := NewCmdReconcile(f, func(o *Options) error { got = o; return nil })
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SetArgs([]string{"--trust-unverified-authors"})
	assert.NilError(t, cmd.Execute())
	assert.Assert(t, got.TrustUnverifiedAuthors)
	assert.Assert(t, strings.Contains(errOut.String(), "--trust-unverified-authors has been deprecated, use --trust-namespace-writers"), errOut.String())
	assert.Assert(t, cmd.Flags().Lookup("trust-unverified-authors").Hidden)
}

func TestReconcile_ServeNeverTrustsNamespaceWriters(t *testing.T) {
	t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "none"))
	for _, flag := range []string{"--trust-namespace-writers", "--trust-unverified-authors"} {
		var out bytes.Buffer
		f := cmdutil.NewFactory(cmdutil.NewTestIOStreams(strings.NewReader(""), &out, &out))
		c := storetest.NewCluster()
		f.UseClients(c.Core, c.Metadata)
		cmd := NewCmdReconcile(f, func(*Options) error { t.Fatal("ran"); return nil })
		cmd.SetOut(&out)
		cmd.SetErr(&out)
		cmd.SetArgs([]string{"-A", "--serve", flag})
		assert.ErrorContains(t, cmd.Execute(), "--trust-namespace-writers is for a run by hand, not --serve")
	}
}

func TestReconcile_RecordsNoOneVouchesFor_NameTheFlagOnce(t *testing.T) {
	detail := "refused to get Secret \"root\" in namespace \"team-a\" on the record's behalf: ... (" + engine.NoVoucher + " \"team-a\")"
	sum := reconcile.Summary{Items: []reconcile.Item{
		{Namespace: "team-a", Kind: "ServiceInstance", Name: "db", Outcome: reconcile.Refused, Detail: detail},
		{Namespace: "team-a", Kind: "ServiceBinding", Name: "app", Outcome: reconcile.Refused, Detail: detail},
		{Namespace: "team-a", Kind: "ServiceInstance", Name: "other", Outcome: reconcile.Refused, Detail: "plan not allowed"},
	}}
	var errOut bytes.Buffer
	o := &Options{Streams: cmdutil.NewTestIOStreams(strings.NewReader(""), &bytes.Buffer{}, &errOut)}
	o.noVoucherHint(sum)
	assert.Equal(t, errOut.String(), "2 records were refused because no one vouches for their author: an administrator runs \"kubectl catalog init\" and their owners adopt them (\"kubectl catalog adopt -n NAMESPACE\"), or, trusting everyone who may write ConfigMaps in namespace team-a, run again with --trust-namespace-writers\n")

	errOut.Reset()
	o.TrustUnverifiedAuthors = true
	o.noVoucherHint(sum)
	assert.Equal(t, errOut.String(), "")
}
