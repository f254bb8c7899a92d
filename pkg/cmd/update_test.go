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
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/cmdtest"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/lifecycle"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/update"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/enginetest"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb/fake"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/printers"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store/storetest"
)

func TestUpdateOptions_Validate(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*update.Options)
		want   string
	}{
		{name: "plan", change: func(o *update.Options) { o.Plan = "standard" }},
		{name: "upgrade", change: func(o *update.Options) { o.Upgrade = true }},
		{name: "a parameter", change: func(o *update.Options) { o.Params.Params = []string{"a=1"} }},
		{name: "parameters from a secret only", change: func(o *update.Options) { o.Params.FromSecret = []string{"s/k"} }},
		{name: "nothing", change: func(*update.Options) {}, want: "nothing to update"},
		{name: "wait alone: waits for the update under way", change: func(o *update.Options) { o.Wait.Wait = true }},
		{name: "revert", change: func(o *update.Options) { o.Revert = true }},
		{name: "revert and a plan", change: func(o *update.Options) { o.Revert, o.Plan = true, "standard" }, want: "give it alone"},
		{name: "revert and upgrade", change: func(o *update.Options) { o.Revert, o.Upgrade = true, true }, want: "give it alone"},
		{name: "json and file", change: func(o *update.Options) { o.Params.JSON, o.Params.File = "{}", "f" }, want: "cannot be used together"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := &update.Options{Name: "db", VerbOptions: lifecycle.VerbOptions{Output: printers.NewOutputFlags(false), Wait: lifecycle.WaitFlags{Interval: 2e9}}}
			tc.change(o)
			err := o.Validate()
			cmdtest.Validated(t, err, tc.want)
		})
	}
}

func TestUpdate_DryRun_PrintsTheRecordAndWritesNothing(t *testing.T) {
	for _, tc := range []struct {
		mode    cmdutil.DryRunStrategy
		dryRuns int
		note    string
	}{
		{mode: cmdutil.DryRunClient, note: `instance "db" in namespace "dev" would be updated (plan standard, parameters) (dry run: nothing was written and no broker was called)`},
		{mode: cmdutil.DryRunServer, dryRuns: 1, note: `(server dry run: accepted by the API server, nothing was stored and no broker was called)`},
	} {
		t.Run(string(tc.mode), func(t *testing.T) {
			cluster := storetest.NewCluster()
			st := cluster.Store()
			broker := fake.New()
			eng := enginetest.New(st, broker)
			ctx := context.Background()
			_, err := st.Classes().Create(ctx, &v1alpha1.ServiceClass{
				ObjectMeta: metav1.ObjectMeta{Namespace: storetest.CatalogNamespace, Name: v1alpha1.ClassRecordName("acme", "svc-pg")},
				Spec: v1alpha1.ServiceClassSpec{BrokerName: "acme", Scope: v1alpha1.ScopeCluster, ID: "svc-pg", ExternalName: "postgresql", PlanUpdateable: true,
					Plans: []v1alpha1.ServicePlan{{ID: "plan-hobby", ExternalName: "hobby"}, {ID: "plan-standard", ExternalName: "standard"}}},
			})
			assert.NilError(t, err)
			before, err := st.Instances().Create(store.WithIntent(ctx), &v1alpha1.ServiceInstance{
				ObjectMeta: metav1.ObjectMeta{Namespace: storetest.UserNamespace, Name: "db"},
				Spec: v1alpha1.ServiceInstanceSpec{Scope: v1alpha1.ScopeCluster, BrokerName: "acme", ClassExternalName: "postgresql", ClassID: "svc-pg",
					PlanExternalName: "hobby", PlanID: "plan-hobby", ExternalID: "inst-db"},
				Status: v1alpha1.ServiceInstanceStatus{OperationStatus: v1alpha1.OperationStatus{Phase: v1alpha1.PhaseReady},
					Provisioned: &v1alpha1.ProvisionedState{PlanID: "plan-hobby"}},
			})
			assert.NilError(t, err)

			var out, errOut bytes.Buffer
			o := &update.Options{
				Name: "db", Plan: "standard", Params: lifecycle.ParamFlags{Params: []string{"storage_gb=8"}},
				VerbOptions: lifecycle.VerbOptions{DryRun: tc.mode, Output: printers.NewOutputFlags(false), Wait: lifecycle.WaitFlags{Interval: 2e9},
					Clients: cmdutil.Clients{Namespace: storetest.UserNamespace, Engine: eng,
						Streams: cmdutil.NewTestIOStreams(strings.NewReader(""), &out, &errOut)}},
			}
			flags := &cobra.Command{}
			o.Output.AddFlags(flags)
			assert.NilError(t, flags.Flags().Set("output", "yaml"))
			assert.NilError(t, o.Validate())
			assert.NilError(t, o.Run(ctx))

			assert.Assert(t, is.Contains(out.String(), "planExternalName: standard"))
			assert.Assert(t, is.Contains(out.String(), `parameters:`))
			assert.Assert(t, is.Contains(errOut.String(), tc.note))
			assert.Assert(t, !strings.Contains(errOut.String(), "Updating"), errOut.String())
			after, err := st.Instances().Get(ctx, storetest.UserNamespace, "db")
			assert.NilError(t, err)
			assert.DeepEqual(t, after.Spec, before.Spec)
			assert.Equal(t, cluster.DryRuns(), tc.dryRuns)
			assert.Assert(t, is.Len(broker.Calls(), 0))
		})
	}
}
