package bind

import (
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/lifecycle"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/projection"
)

func isTransformFlag(name string) bool {
	switch name {
	case FlagRenameKey, FlagAddKey, FlagAddKeysFromSecret, FlagRemoveKey:
		return true
	}
	return false
}

func oneName(cmd *cobra.Command, args []string, rotate bool) error {
	what := "INSTANCE"
	if rotate {
		what = "BINDING"
	}
	help := cmd.CommandPath() + " --help"
	switch {
	case len(args) == 1 && args[0] != "":
		return nil
	case len(args) == 1:
		return cmdutil.UsageErrorf("the %s name must not be empty: see %q", strings.ToLower(what), help)
	case len(args) == 0 && rotate:
		return cmdutil.UsageErrorf("%s --rotate needs the BINDING to rotate: see %q", cmd.CommandPath(), help)
	case len(args) == 0:
		return cmdutil.UsageErrorf("%s needs the INSTANCE to bind: see %q", cmd.CommandPath(), help)
	}
	return cmdutil.UsageErrorf("%s takes one %s, got %d arguments (%s): see %q", cmd.CommandPath(), what, len(args), strings.Join(args, " "), help)
}

// rotateAlone refuses the flags --rotate cannot be combined with.
func rotateAlone(changed *pflag.FlagSet, dryRun cmdutil.DryRunStrategy) error {
	var clash []string
	for _, n := range []string{"name", "secret-name", "external-id", "param", "params-json", "params-file", "params-from-secret",
		"to", "env", "env-prefix", FlagRenameKey, FlagAddKey, FlagAddKeysFromSecret, FlagRemoveKey} {
		if changed != nil && changed.Changed(n) {
			clash = append(clash, "--"+n)
		}
	}
	if len(clash) > 0 {
		return cmdutil.UsageErrorf("--rotate keeps the binding as it is and cannot be combined with %s", strings.Join(clash, ", "))
	}
	if dryRun.Enabled() {
		return cmdutil.UsageErrorf("--rotate cannot be combined with --dry-run")
	}
	return nil
}

// instance is the instance to bind and its namespace ("" for the binding's), from
// NAMESPACE/INSTANCE or --instance-namespace.
func (o *Options) instance() (name, namespace string, err error) {
	return lifecycle.BindInstance(o.Instance, o.InstanceNamespace, o.Rotate)
}

// projections are the workloads of --to, projected as --env and --env-prefix say.
func (o *Options) projections() ([]v1alpha1.WorkloadProjection, error) {
	var out []v1alpha1.WorkloadProjection
	seen := map[string]bool{}
	for _, to := range o.To {
		kind, name, err := projection.ParseWorkload(to)
		if err != nil {
			return nil, cmdutil.UsageErrorf("%v", err)
		}
		if kind == projection.KindJob {
			return nil, cmdutil.UsageErrorf("--to %q: a Job's pod template cannot be changed once it is created, so the Secret cannot be projected into it: project into a CronJob, or mount the Secret in the Job yourself", to)
		}
		key := kind + "/" + name
		if seen[key] {
			return nil, cmdutil.UsageErrorf("--to %q is given twice", to)
		}
		seen[key] = true
		out = append(out, v1alpha1.WorkloadProjection{Kind: kind, Name: name, Env: o.Env || o.EnvPrefix != "", EnvPrefix: o.EnvPrefix})
	}
	return out, nil
}
