// Package cmd assembles the kubectl catalog command tree.
package cmd

import (
	"github.com/spf13/cobra"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/access"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/adopt"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/apply"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/bind"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/get"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/completion"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/deprovision"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/deregister"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/describe"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/doctor"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/export"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/graph"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/marketplace"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/migrate"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/provision"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/rbac"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/reconcile"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/register"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/release"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/setup"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/share"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/syncbroker"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/touch"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/unbind"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/update"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/version"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/wait"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil/complete"
)

var rootLong = cmdutil.LongDesc(`
	Use Open Service Broker services from Kubernetes, with nothing installed
	in the cluster.

	kubectl catalog registers service brokers, shows their marketplace, and
	provisions, updates, binds, unbinds and deprovisions service instances.
	It keeps its records in labelled ConfigMaps and writes binding credentials
	to Secrets. Anything left unfinished (an operation still running at the
	broker, an interrupted command, a broker that was down) is finished by
	"kubectl catalog reconcile", run by hand or from a CronJob.`)

var rootExample = cmdutil.Examples(`
	# Register a broker, see what it offers, provision an instance and bind it
	kubectl catalog register acme --url https://broker.example.com --basic-auth-secret acme-auth
	kubectl catalog marketplace
	kubectl catalog provision db --class postgresql --plan hobby --wait
	kubectl catalog bind db --to deployment/web --wait

	# Finish whatever is left unfinished
	kubectl catalog reconcile`)

// NewCmdRoot returns the root command of kubectl catalog.
func NewCmdRoot(f *cmdutil.Factory) *cobra.Command {
	root := &cobra.Command{
		Use:     "kubectl-catalog",
		Short:   "Use Open Service Broker services from Kubernetes",
		Long:    rootLong,
		Example: rootExample,
		Annotations: map[string]string{
			cobra.CommandDisplayNameAnnotation: "kubectl catalog",
		},
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE:          func(cmd *cobra.Command, args []string) error { return cmd.Help() },
		// Completion is a subcommand of its own; cobra's default would
		// shadow the kubectl flavour.
		CompletionOptions: cobra.CompletionOptions{DisableDefaultCmd: true},
	}
	root.SetIn(f.In)
	root.SetOut(f.Out)
	root.SetErr(f.ErrOut)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		return &cmdutil.UsageError{Err: err}
	})
	f.AddFlags(root.PersistentFlags())
	// Checked for every command before it runs, so before any connection.
	root.PersistentPreRunE = func(*cobra.Command, []string) error { return f.CheckServerFlag() }

	getCmd := get.NewCmdGet(f)
	getCmd.AddCommand(get.NewCmdGetInstances(f, nil), get.NewCmdGetBindings(f, nil))
	describeCmd := describe.NewCmdDescribe(f)
	describeCmd.AddCommand(describe.NewCmdDescribeInstance(f, nil), describe.NewCmdDescribeBinding(f, nil))
	root.AddCommand(
		version.NewCmdVersion(f),
		completion.NewCmdCompletion(f.IOStreams),
		setup.NewCmdInit(f, nil),
		register.NewCmdRegister(f, nil),
		deregister.NewCmdDeregister(f, nil),
		syncbroker.NewCmdSync(f, nil),
		marketplace.NewCmdMarketplace(f, nil),
		getCmd,
		describeCmd,
		provision.NewCmdProvision(f, nil),
		apply.NewCmdApply(f, nil),
		apply.NewCmdDiff(f, nil),
		apply.NewCmdDelete(f, nil),
		update.NewCmdUpdate(f, nil),
		deprovision.NewCmdDeprovision(f, nil),
		touch.NewCmdTouch(f, nil),
		wait.NewCmdWait(f, nil),
		bind.NewCmdBind(f, nil),
		unbind.NewCmdUnbind(f, nil),
		share.NewCmdShare(f, nil),
		share.NewCmdUnshare(f, nil),
		access.NewCmdAccess(f),
		graph.NewCmdGraph(f, nil),
		reconcile.NewCmdReconcile(f, nil),
		adopt.NewCmdAdopt(f, nil),
		migrate.NewCmdMigrate(f, nil),
		export.NewCmdExport(f, nil),
		release.NewCmdRelease(f, nil),
		doctor.NewCmdDoctor(f, nil),
		rbac.NewCmdRBAC(f),
	)
	markUsageErrors(root)
	complete.Flags(root, f)
	return root
}
