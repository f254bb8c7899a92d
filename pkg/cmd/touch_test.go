package cmd_test

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	authnv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/cmdtest"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store/storetest"
)

func TestTouch_WithoutKind_ShowsHelp(t *testing.T) {
	out, err := cmdtest.RunOfflineOutput(t, "touch")
	assert.NilError(t, err)
	assert.Assert(t, strings.Contains(out, "touch instance"), out)
}

func TestTouch_DryRun_ChangesNothingAndCallsNoBroker(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		want    string
		dryRuns int
	}{
		{args: []string{"--dry-run=client"}, want: "configured (dry run)"},
		{args: []string{"--dry-run=server"}, want: "configured (server dry run)", dryRuns: 1},
		{args: []string{"--dry-run", "-o", "yaml"}, want: "parametersChecksum: touched"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			c := storetest.NewCluster()
			c.Core.PrependReactor("create", "selfsubjectreviews", func(clienttesting.Action) (bool, runtime.Object, error) {
				return true, &authnv1.SelfSubjectReview{Status: authnv1.SelfSubjectReviewStatus{
					UserInfo: authnv1.UserInfo{Username: "alice", Groups: []string{"system:authenticated"}}}}, nil
			})
			ctx := context.Background()
			_, err := c.Store().Instances().Create(ctx, &v1alpha1.ServiceInstance{
				ObjectMeta: metav1.ObjectMeta{Namespace: storetest.UserNamespace, Name: "db"},
				Spec: v1alpha1.ServiceInstanceSpec{Scope: v1alpha1.ScopeCluster, BrokerName: "acme", ClassExternalName: "pg", ClassID: "pg",
					PlanExternalName: "small", PlanID: "pg-small", ExternalID: "inst-db"},
				Status: v1alpha1.ServiceInstanceStatus{OperationStatus: v1alpha1.OperationStatus{Phase: v1alpha1.PhaseReady}, Provisioned: &v1alpha1.ProvisionedState{PlanID: "pg-small", ParametersChecksum: "abc"}},
			})
			assert.NilError(t, err)
			before, err := c.Store().Instances().Get(ctx, storetest.UserNamespace, "db")
			assert.NilError(t, err)

			t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "none"))
			var out, errOut bytes.Buffer
			f := cmdutil.NewFactory(cmdutil.NewTestIOStreams(strings.NewReader(""), &out, &errOut))
			f.UseClients(c.Core, c.Metadata)
			code := cmd.Execute(ctx, f, append([]string{"-n", storetest.UserNamespace, "touch", "instance", "db"}, tc.args...))
			assert.Equal(t, code, 0, errOut.String())
			assert.Assert(t, is.Contains(out.String(), tc.want))
			assert.Assert(t, is.Contains(errOut.String(), `the parameters of instance "db" in namespace "dev" would be re-sent to its broker`))
			assert.Assert(t, !strings.Contains(errOut.String(), "Re-sending"))
			assert.Equal(t, c.DryRuns(), tc.dryRuns)
			after, err := c.Store().Instances().Get(ctx, storetest.UserNamespace, "db")
			assert.NilError(t, err)
			assert.Equal(t, after.ResourceVersion, before.ResourceVersion, "a dry run wrote the instance")
		})
	}
}

func TestTouch_DryRunAndWait_IsAUsageError(t *testing.T) {
	err := cmdtest.RunOffline(t, "touch", "instance", "db", "--dry-run", "--wait")
	assert.ErrorContains(t, err, "--dry-run and --wait cannot be used together")
	assert.Equal(t, cmdutil.ExitCode(err), cmdutil.ExitUsage)
}
