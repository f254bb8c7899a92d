package unbind_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/cmdtest"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/lifecycle"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/unbind"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/printers"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store/storetest"
)

const dryNS = "dev"

func TestUnbind_DryRun_WritesNothingAndCallsNoBroker(t *testing.T) {
	for _, tc := range []struct {
		name    string
		dry     cmdutil.DryRunStrategy
		output  string
		args    []string
		all     bool
		abandon bool
		want    []string
		note    string
		dryRuns int
	}{
		{name: "client", dry: cmdutil.DryRunClient, args: []string{"a"},
			want: []string{"servicebinding.catalog.kubectl-catalog.io/a deleted (dry run)"}, note: `binding "a" in namespace "dev" would be unbound at the broker, with its credentials Secret`},
		{name: "server", dry: cmdutil.DryRunServer, args: []string{"a"}, dryRuns: 1,
			want: []string{"servicebinding.catalog.kubectl-catalog.io/a deleted (server dry run)"}, note: `binding "a" in namespace "dev" would be unbound at the broker`},
		{name: "server, every binding of the instance", dry: cmdutil.DryRunServer, args: []string{"db"}, all: true, dryRuns: 2,
			want: []string{"servicebinding.catalog.kubectl-catalog.io/a deleted (server dry run)", "servicebinding.catalog.kubectl-catalog.io/b deleted (server dry run)"}, note: `bindings "a", "b" in namespace "dev" would be unbound at the broker, with their credentials Secrets`},
		{name: "abandon, yaml", dry: cmdutil.DryRunClient, args: []string{"a"}, abandon: true, output: "yaml",
			want: []string{"kind: ServiceBinding", "name: a"}, note: "would be abandoned (the broker not told)"},
		{name: "json list", dry: cmdutil.DryRunClient, args: []string{"db"}, all: true, output: "json",
			want: []string{`"kind": "ServiceBindingList"`, `"name": "a"`, `"name": "b"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := storetest.NewCluster()
			st := c.Store()
			ctx := context.Background()
			for _, name := range []string{"a", "b"} {
				_, err := st.Bindings().Create(ctx, engine.NewBinding(engine.BindingIntent{Namespace: dryNS, Name: name, Instance: "db", SecretName: name}))
				assert.NilError(t, err)
			}
			var out, errOut bytes.Buffer
			o := &unbind.Options{Args: tc.args, All: tc.all, Abandon: tc.abandon, VerbOptions: lifecycle.VerbOptions{DryRun: tc.dry, Output: printers.OutputFlagsFor(tc.output),
				Wait: lifecycle.WaitFlags{Interval: 1}, Clients: cmdutil.Clients{Namespace: dryNS, Engine: engine.New(engine.Config{Store: st}),
					Streams: cmdutil.NewTestIOStreams(strings.NewReader(""), &out, &errOut)}}}
			assert.NilError(t, o.Validate())
			// No broker clients: a dry run that reached the broker path would panic.
			assert.NilError(t, o.Run(ctx))
			for _, w := range tc.want {
				assert.Assert(t, is.Contains(out.String(), w))
			}
			assert.Assert(t, is.Contains(errOut.String(), tc.note))
			assert.Equal(t, c.DryRuns(), tc.dryRuns)
			for _, name := range []string{"a", "b"} {
				b, err := st.Bindings().Get(ctx, dryNS, name)
				assert.NilError(t, err, "a dry run removed binding %s", name)
				assert.Assert(t, b.DeletionTimestamp == nil, "a dry run marked binding %s for deletion", name)
			}
		})
	}
}

func TestUnbind_DryRunAndWait_IsAUsageError(t *testing.T) {
	err := cmdtest.RunOffline(t, "unbind", "a", "--dry-run=server", "--wait")
	assert.ErrorContains(t, err, "--dry-run and --wait cannot be used together")
	assert.Equal(t, cmdutil.ExitCode(err), cmdutil.ExitUsage)
}
