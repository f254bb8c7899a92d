// Package unbind implements "kubectl catalog unbind".
package unbind

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/lifecycle"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil/complete"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/hint"
)

var unbindLong = cmdutil.LongDesc(`
	Unbind: take each binding's credentials out of the workloads they are
	projected into, delete its Secret, then delete the binding at the broker,
	and drop its record once the broker confirmed.

	Name the bindings, or an instance with --all (every binding of the
	instance) or with --name B1,B2 (those of its bindings). The bindings are
	marked for deletion first, so a broker that is down or refuses leaves them
	pending, visibly: "kubectl catalog describe binding" shows why, and
	"kubectl catalog reconcile" (or the same command with --wait) finishes
	them.

	The command lists what it removes and asks for confirmation in a terminal;
	elsewhere it needs --yes to remove more than one binding.

	--abandon drops the records (and the Secrets and projections) without
	calling the broker, for a broker that is gone for good: whatever the broker
	holds stays there.`)

var unbindExample = cmdutil.Examples(`
	# Unbind binding db
	kubectl catalog unbind db

	# Unbind two bindings without asking, and wait until the broker has finished
	kubectl catalog unbind db-readonly db-admin --yes --wait

	# Unbind every binding of instance db
	kubectl catalog unbind db --all --yes

	# See which bindings that would unbind, checked by the API server, changing nothing
	kubectl catalog unbind db --all --dry-run=server

	# Unbind some of the bindings of instance db (the svcat form)
	kubectl catalog unbind db --name db-readonly,db-admin

	# Forget a binding whose broker no longer exists
	kubectl catalog unbind db --abandon --yes`)

// Options are the options of unbind.
type Options struct {
	// Args are the command's arguments: binding names, or the instance with --all or
	// --name.
	Args     []string
	Instance string
	All      bool
	Names    []string
	Yes      bool
	Abandon  bool

	lifecycle.VerbOptions
}

// NewCmdUnbind returns the unbind command. runF, when not nil, is called with the
// completed options instead of Run.
func NewCmdUnbind(f *cmdutil.Factory, runF func(*Options) error) *cobra.Command {
	o := &Options{VerbOptions: lifecycle.NewVerbOptions(f)}
	cmd := &cobra.Command{
		Use:     "unbind BINDING... | unbind INSTANCE (--all | --name B1,B2)",
		Short:   "Unbind: delete bindings and their credentials Secrets",
		Long:    unbindLong,
		Example: unbindExample,
		ValidArgsFunction: func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
			if o.All || len(o.Names) > 0 {
				if len(args) > 0 || o.Instance != "" {
					return nil, cobra.ShellCompDirectiveNoFileComp
				}
				return complete.Instances(f)(cmd, args, toComplete)
			}
			return complete.Each(complete.Bindings(f, false))(cmd, args, toComplete)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Args = args
			o.Namespace = f.FlagNamespace() // for the hints of Validate; Complete sets it
			return cmdutil.RunCommand(cmd.Context(), f, o, runF)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.Instance, "instance", "", "The instance whose bindings --all or --name select (or give it as the argument).")
	fs.BoolVar(&o.All, "all", false, "Unbind every binding of the instance.")
	fs.StringSliceVar(&o.Names, "name", nil, "Unbind these bindings of the instance, comma-separated.")
	fs.BoolVarP(&o.Yes, "yes", "y", false, "Do not ask for confirmation (needed outside a terminal to remove more than one binding, or to abandon).")
	fs.BoolVar(&o.Abandon, "abandon", false, "Drop the records, Secrets and projections without calling the broker; what the broker holds is left there.")
	o.AddFlags(cmd, "unbind", "the binding records to be marked for deletion")
	complete.Register(cmd, "name", complete.CommaList(complete.Bindings(f, true)))
	return cmd
}

// byInstance reports whether the bindings are selected through an instance.
func (o *Options) byInstance() bool { return o.All || len(o.Names) > 0 || o.Instance != "" }

// Validate checks the arguments and flags without I/O, changing nothing.
func (o *Options) Validate() error {
	if o.Abandon && o.Wait.Wait {
		return cmdutil.UsageErrorf("--abandon and --wait cannot be used together: abandoning does not call the broker, so there is nothing to wait for")
	}
	if o.All && len(o.Names) > 0 {
		return cmdutil.UsageErrorf("--all and --name cannot be used together")
	}
	for _, n := range o.Names {
		if n == "" {
			return cmdutil.UsageErrorf("--name has an empty binding name: use --name B1,B2")
		}
	}
	for _, a := range o.Args {
		if a == "" {
			return cmdutil.UsageErrorf("a binding or instance name must not be empty")
		}
	}
	if o.byInstance() {
		switch {
		case o.Instance != "" && len(o.Args) > 0:
			return cmdutil.UsageErrorf("--instance %s names the instance already: give no argument, or drop --instance", o.Instance)
		case o.Instance == "" && len(o.Args) != 1:
			return cmdutil.UsageErrorf("--all and --name select bindings of one instance: give the instance as the only argument (or --instance), got %d arguments", len(o.Args))
		case !o.All && len(o.Names) == 0:
			return cmdutil.UsageErrorf("--instance selects the bindings of an instance: add --all for every one, or --name B1,B2 for some")
		}
	} else if len(o.Args) == 0 {
		return cmdutil.UsageErrorf(`unbind needs the BINDING to unbind (or an instance with --all): list the bindings with %s`, hint.Quoted(o.Namespace, "get", "bindings"))
	}
	return o.ValidateFlags("records nothing")
}

// request is what the user asked for: the bindings named, or an instance's.
func (o *Options) request() engine.UnbindRequest {
	req := engine.UnbindRequest{Namespace: o.Namespace, Abandon: o.Abandon, DryRun: o.DryRun.Engine()}
	if !o.byInstance() {
		req.Bindings = o.Args
		return req
	}
	req.Instance, req.All, req.Names = o.Instance, o.All, o.Names
	if req.Instance == "" {
		req.Instance = o.Args[0]
	}
	return req
}

// Run unbinds the bindings: they are marked for deletion, then driven.
func (o *Options) Run(ctx context.Context) error {
	return (&lifecycle.Unbinding{Yes: o.Yes, Abandon: o.Abandon, VerbOptions: o.VerbOptions}).Run(ctx, o.request())
}
