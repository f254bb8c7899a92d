package cmd_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/cmdtest"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/deregister"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/printers"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store/storetest"
)

const catNS = cmdutil.DefaultCatalogNamespace

// seed records broker acme with two classes, and with an instance when inUse.
func seed(t *testing.T, inUse bool) (*storetest.Cluster, *store.Store) {
	t.Helper()
	c := storetest.NewCluster()
	st := c.Store()
	ctx := context.Background()
	_, err := st.Brokers().Create(ctx, &v1alpha1.Broker{ObjectMeta: metav1.ObjectMeta{Namespace: catNS, Name: "acme"},
		Spec: v1alpha1.BrokerSpec{URL: "https://acme.example", Scope: v1alpha1.ScopeCluster}})
	assert.NilError(t, err)
	for _, id := range []string{"svc-pg", "svc-redis"} {
		_, err := st.Classes().Create(ctx, &v1alpha1.ServiceClass{
			ObjectMeta: metav1.ObjectMeta{Namespace: catNS, Name: v1alpha1.ClassRecordName("acme", id)},
			Spec: v1alpha1.ServiceClassSpec{BrokerName: "acme", Scope: v1alpha1.ScopeCluster, ID: id, ExternalName: id,
				Plans: []v1alpha1.ServicePlan{{ID: id + "-small", ExternalName: "small"}}},
		})
		assert.NilError(t, err)
	}
	if inUse {
		_, err := st.Instances().Create(ctx, &v1alpha1.ServiceInstance{
			ObjectMeta: metav1.ObjectMeta{Namespace: "dev", Name: "db"},
			Spec: v1alpha1.ServiceInstanceSpec{Scope: v1alpha1.ScopeCluster, BrokerName: "acme", ClassExternalName: "svc-pg", ClassID: "svc-pg",
				PlanExternalName: "small", PlanID: "svc-pg-small", ExternalID: "inst-db"},
		})
		assert.NilError(t, err)
	}
	return c, st
}

func options(t *testing.T, c *storetest.Cluster, dry cmdutil.DryRunStrategy, output string, out, errOut *bytes.Buffer) *deregister.Options {
	t.Helper()
	streams := cmdutil.NewTestIOStreams(strings.NewReader(""), out, errOut)
	f := cmdutil.NewFactory(streams)
	f.UseClients(c.Core, c.Metadata)
	f.Getenv = func(string) string { return "" }
	eng, err := f.Engine(cmdutil.EngineOptions{})
	assert.NilError(t, err)
	o := &deregister.Options{Name: "acme", DryRun: dry, Output: printers.OutputFlagsFor(output),
		Namespace: "dev", Engine: eng.Engine, Streams: streams}
	return o
}

// assertUnchanged checks that the broker and both classes are still recorded.
func assertUnchanged(t *testing.T, st *store.Store) {
	t.Helper()
	ctx := context.Background()
	b, err := st.Brokers().Get(ctx, catNS, "acme")
	assert.NilError(t, err, "the broker record was removed")
	assert.Assert(t, b.DeletionTimestamp == nil, "the broker was marked for deletion")
	classes, err := st.Classes().List(ctx, catNS, store.Filter{Broker: "acme"})
	assert.NilError(t, err)
	assert.Equal(t, len(classes), 2, "classes were removed")
}

func TestDeregister_DryRun_WritesNothing(t *testing.T) {
	for _, tc := range []struct {
		dry     cmdutil.DryRunStrategy
		output  string
		want    string
		dryRuns bool
	}{
		{dry: cmdutil.DryRunClient, want: "broker.catalog.kubectl-catalog.io/acme deleted (dry run)"},
		{dry: cmdutil.DryRunServer, want: "broker.catalog.kubectl-catalog.io/acme deleted (server dry run)", dryRuns: true},
		{dry: cmdutil.DryRunClient, output: "yaml", want: "kind: Broker"},
	} {
		t.Run(string(tc.dry)+tc.output, func(t *testing.T) {
			c, st := seed(t, false)
			var out, errOut bytes.Buffer
			o := options(t, c, tc.dry, tc.output, &out, &errOut)
			assert.NilError(t, o.Validate())
			assert.NilError(t, o.Run(context.Background()))
			assert.Assert(t, is.Contains(out.String(), tc.want))
			assert.Assert(t, is.Contains(errOut.String(), `broker "acme" (cluster scope, namespace "catalog-system") would be deregistered: 2 classes removed`))
			assert.Assert(t, !strings.Contains(errOut.String(), "Deregistering"))
			// The classes and the broker record: deletions checked by the server, none stored.
			if tc.dryRuns {
				assert.Assert(t, c.DryRuns() >= 3, "dry-run deletions sent: %d", c.DryRuns())
			} else {
				assert.Equal(t, c.DryRuns(), 0)
			}
			assertUnchanged(t, st)
		})
	}
}

func TestDeregister_DryRun_RefusedAsTheRealCommandWouldBe(t *testing.T) {
	c, st := seed(t, true)
	var out, errOut bytes.Buffer
	err := options(t, c, cmdutil.DryRunServer, "", &out, &errOut).Run(context.Background())
	assert.ErrorContains(t, err, `broker "acme" still has 1 instance: dev/db; deprovision them first`)
	assert.Equal(t, c.DryRuns(), 0)
	assertUnchanged(t, st)
}

func TestDeregister_Run_RemovesTheBrokerAndItsClasses(t *testing.T) {
	c, st := seed(t, false)
	var out, errOut bytes.Buffer
	assert.NilError(t, options(t, c, cmdutil.DryRunNone, "", &out, &errOut).Run(context.Background()))
	assert.Assert(t, is.Contains(out.String(), `broker "acme" deregistered: 2 classes removed`))
	_, err := st.Brokers().Get(context.Background(), catNS, "acme")
	assert.Assert(t, store.IsNotFound(err), "%v", err)
}

func TestDeregister_BadInvocations_AreUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"deregister", "acme", "--dry-run=maybe"},
		{"deregister", "acme", "-o", "table"},
		{"deregister", "Not_Valid"},
	} {
		err := cmdtest.RunOffline(t, args...)
		assert.Assert(t, err != nil, "%v", args)
		assert.Equal(t, cmdutil.ExitCode(err), cmdutil.ExitUsage, "%v: %v", args, err)
	}
}

func TestNewCmdDeregister_FlagsBecomeTheRequest(t *testing.T) {
	f, _ := cmdtest.FakeFactoryIn(t, "team")
	got := cmdtest.Completed(t, f, deregister.NewCmdDeregister, "acme", "--scope", "namespace", "--force", "--dry-run=client", "-o", "yaml")
	assert.Assert(t, got != nil && got.Engine != nil)
	req := got.Request()
	req.Note = nil
	assert.DeepEqual(t, req, engine.DeregisterRequest{Name: "acme", Scope: v1alpha1.ScopeNamespace, Namespace: "team", Force: true, DryRun: engine.DryRunClient})
}

func TestValidate_DoesNotChangeTheOptions(t *testing.T) {
	o := &deregister.Options{Name: "acme"}
	assert.NilError(t, o.Validate())
	assert.Assert(t, o.Output == nil)
}
