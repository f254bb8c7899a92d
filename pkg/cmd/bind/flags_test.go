package bind_test

import (
	"testing"

	"gotest.tools/v3/assert"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/bind"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/cmdtest"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
)

// parsed runs "bind ARGS" on a fake cluster up to Run, and returns the completed options.
func parsed(t *testing.T, args ...string) *bind.Options {
	t.Helper()
	got := cmdtest.Parse(t, bind.NewCmdBind, args...)
	assert.Assert(t, got.Engine != nil, "Run is replaced by runF, with the options completed")
	return got
}

func TestNewCmdBind_FlagsMakeTheRequest(t *testing.T) {
	o := parsed(t, "team-a/db", "-n", "team-b", "--name", "ro", "--to", "deploy/web", "--env-prefix", "DB_", "-p", "role=readonly",
		"--rename-key", "uri=URL", "--remove-key", "tls", "--dry-run=server")
	assert.Equal(t, o.Instance, "team-a/db", "Validate changes nothing")
	req, err := bind.RequestOf(o)
	assert.NilError(t, err)
	assert.DeepEqual(t, req, engine.BindRequest{
		Namespace: "team-b", Instance: "db", InstanceNamespace: "team-a", Name: "ro",
		Parameters: engine.ParametersInput{Pairs: []string{"role=readonly"}},
		Transforms: []v1alpha1.SecretTransform{
			{RenameKey: &v1alpha1.RenameKeyTransform{From: "uri", To: "URL"}},
			{RemoveKey: &v1alpha1.RemoveKeyTransform{Key: "tls"}},
		},
		Projections: []v1alpha1.WorkloadProjection{{Kind: "Deployment", Name: "web", Env: true, EnvPrefix: "DB_"}},
		DryRun:      engine.DryRunServer,
	})
}

func TestNewCmdBind_Rotate(t *testing.T) {
	o := parsed(t, "--rotate", "db", "-n", "dev", "--wait")
	assert.Assert(t, o.Rotate)
	assert.Equal(t, o.Instance, "db")
	assert.Equal(t, o.Namespace, "dev")
	assert.Assert(t, o.Wait.Wait)
}

func TestBind_EnvPrefixOfALoaderVariable_UsageError(t *testing.T) {
	var bad []cmdtest.BadInvocation
	for prefix, family := range map[string]string{"LD_": "LD_", "DYLD_X": "DYLD_", "BASH_FUNC_": "BASH_FUNC_"} {
		bad = append(bad, cmdtest.BadInvocation{Args: []string{"bind", "db", "--to", "deployment/web", "--env-prefix", prefix},
			Want: "makes every key a loader variable (" + family + "*), which is never projected: choose another prefix"})
	}
	cmdtest.UsageErrors(t, bad)
}
