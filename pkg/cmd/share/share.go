// Package share implements "kubectl catalog share" and "kubectl catalog unshare".
package share

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/lifecycle"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/printers"
)

var shareLong = cmdutil.LongDesc(`
	Let another namespace bind to a service instance of this namespace.

	The grant is kept in the instance's record, in its own namespace: only
	someone who may write the instance's record can share it, and the grant
	counts only while its author (verified by the catalog's trust policy)
	may. Users of the other namespace then bind with
	"kubectl catalog bind NAMESPACE/INSTANCE" (they need to read the
	instance's record: the kubectl-catalog-viewer role in this namespace).
	Their bindings count against the instance's --max-bindings and must be
	in its --allowed-namespaces, if set.

	A shared instance cannot be deprovisioned until it is unshared from
	every namespace.`)

var shareExample = cmdutil.Examples(`
	# Let namespace team-b bind to instance db of namespace team-a
	kubectl catalog share db --to-namespace team-b -n team-a

	# Then, in team-b
	kubectl catalog bind team-a/db -n team-b`)

var unshareLong = cmdutil.LongDesc(`
	Withdraw the grant "kubectl catalog share" gave another namespace.

	The bindings that namespace holds of the instance are removed: their
	Secrets (and projections into workloads) are deleted, then the broker is
	asked to unbind them. The command marks them for deletion when you may;
	otherwise, and for the broker calls, reconcile removes them (the
	instance's change tells it to). It asks for confirmation, or needs --yes
	when not in a terminal.`)

var unshareExample = cmdutil.Examples(`
	# Stop sharing instance db with namespace team-b, removing team-b's bindings of it
	kubectl catalog unshare db --from-namespace team-b -n team-a --yes`)

// Options are the options of share.
type Options struct {
	Name string
	// Target is the namespace given to --to-namespace (--from-namespace for unshare).
	Target string
	// Yes is --yes: for share, become the author of what another person wrote without
	// asking; for unshare, that and remove the namespace's bindings without asking.
	Yes bool

	lifecycle.VerbOptions
}

// UnshareOptions are the options of unshare.
type UnshareOptions struct {
	Options
}

// NewCmdShare returns the share command. runF, when not nil, is called with the
// completed Options instead of Run (tests check the flags with it).
func NewCmdShare(f *cmdutil.Factory, runF func(*Options) error) *cobra.Command {
	o := &Options{VerbOptions: lifecycle.NewVerbOptions(f)}
	cmd := lifecycle.OnInstance(f, &cobra.Command{
		Use:     "share INSTANCE --to-namespace NAMESPACE",
		Short:   "Let another namespace bind to a service instance",
		Long:    shareLong,
		Example: shareExample,
	}, &o.Name, o, runF)
	cmd.Flags().StringVar(&o.Target, "to-namespace", "", "The namespace that may bind to the instance.")
	cmd.Flags().BoolVarP(&o.Yes, "yes", "y", false, cmdutil.VouchYesUsage)
	o.AddDryRunFlags(cmd, "the instance record with the grant added")
	return cmd
}

// NewCmdUnshare returns the unshare command. runF, when not nil, is called with the
// completed UnshareOptions instead of Run.
func NewCmdUnshare(f *cmdutil.Factory, runF func(*UnshareOptions) error) *cobra.Command {
	o := &UnshareOptions{Options: Options{VerbOptions: lifecycle.NewVerbOptions(f)}}
	cmd := lifecycle.OnInstance(f, &cobra.Command{
		Use:     "unshare INSTANCE --from-namespace NAMESPACE",
		Short:   "Stop sharing a service instance with a namespace, removing its bindings",
		Long:    unshareLong,
		Example: unshareExample,
	}, &o.Name, o, runF)
	cmd.Flags().StringVar(&o.Target, "from-namespace", "", "The namespace that may no longer bind to the instance.")
	cmd.Flags().BoolVarP(&o.Yes, "yes", "y", false, "Do not ask for confirmation (needed when not in a terminal).")
	o.AddDryRunFlags(cmd, "the instance record with the grant withdrawn (the namespace's bindings are only listed)")
	return cmd
}

// Validate checks the flags without I/O.
func (o *Options) Validate() error { return o.validate("--to-namespace") }

// Validate checks the flags without I/O.
func (o *UnshareOptions) Validate() error { return o.validate("--from-namespace") }

func (o *Options) validate(flag string) error {
	if err := validTarget(flag, o.Target); err != nil {
		return err
	}
	return o.ValidateOutput()
}

func validTarget(flag, ns string) error {
	if ns == "" {
		return cmdutil.UsageErrorf("%s NAMESPACE is required", flag)
	}
	if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
		return cmdutil.UsageErrorf("%s %q is not a valid namespace name: %s", flag, ns, strings.Join(errs, "; "))
	}
	return nil
}

// Complete builds the clients and, in a terminal, the prompter.
func (o *Options) Complete(f *cmdutil.Factory) error { return o.VerbOptions.Complete(f) }

// Complete builds the clients and, in a terminal, the prompter.
func (o *UnshareOptions) Complete(f *cmdutil.Factory) error { return o.VerbOptions.Complete(f) }

// Run adds the grant (engine.Engine.Share).
func (o *Options) Run(ctx context.Context) error {
	res, err := o.Engine.Share(ctx, engine.ShareRequest{Namespace: o.Namespace, Name: o.Name, To: o.Target, DryRun: o.DryRun.Engine(),
		Vouch: cmdutil.Voucher(o.Prompter, o.Streams.ErrOut, o.Yes, "share")})
	if res.NamespaceUnchecked {
		fmt.Fprintf(o.Streams.ErrOut, "Warning: you may not read namespace %q, so whether it exists was not checked.\n", o.Target)
	}
	switch {
	case err != nil:
		return err
	case res.AlreadyShared:
		fmt.Fprintf(o.Streams.ErrOut, "instance %q is already shared with namespace %q; nothing was changed\n", o.Name, o.Target)
		return nil
	case o.DryRun.Enabled():
		return printers.PrintDryRun(o.Streams, o.Output, o.DryRun, res.Instance, "configured",
			fmt.Sprintf("instance %q of namespace %q would be shared with namespace %q", o.Name, o.Namespace, o.Target))
	}
	fmt.Fprintf(o.Streams.ErrOut, "instance %q of namespace %q is shared with namespace %q: bind it there with \"kubectl catalog bind %s/%s -n %s\"\n",
		o.Name, o.Namespace, o.Target, o.Namespace, o.Name, o.Target)
	return nil
}

// Run removes the grant, then the bindings it let the namespace make
// (engine.Engine.Unshare).
func (o *UnshareOptions) Run(ctx context.Context) error {
	res, err := o.Engine.Unshare(ctx, engine.UnshareRequest{Namespace: o.Namespace, Name: o.Name, From: o.Target, DryRun: o.DryRun.Engine(), Confirm: o.confirm,
		Vouch: cmdutil.Voucher(o.Prompter, o.Streams.ErrOut, o.Yes, "unshare")})
	if res.Withdrawn {
		fmt.Fprintf(o.Streams.ErrOut, "instance %q is no longer shared with namespace %q\n", o.Name, o.Target)
	}
	if err != nil || res.Declined {
		return err
	}
	if o.DryRun.Enabled() {
		return printers.PrintDryRun(o.Streams, o.Output, o.DryRun, res.Record, "configured",
			fmt.Sprintf("instance %q of namespace %q would no longer be shared with namespace %q, and the bindings above would be removed", o.Name, o.Namespace, o.Target))
	}
	if len(res.Revoked) > 0 {
		fmt.Fprintf(o.Streams.ErrOut, "Marked for deletion: %s; reconcile unbinds them at the broker (or run \"kubectl catalog reconcile -n %s\").\n", strings.Join(res.Revoked, ", "), o.Target)
	}
	if res.LeftToReconcile {
		fmt.Fprintf(o.Streams.ErrOut, "You may not change the bindings of namespace %q: reconcile removes them.\n", o.Target)
	}
	return nil
}

// confirm says which bindings the unshare removes and, unless it is a dry run, asks
// whether to go on.
func (o *UnshareOptions) confirm(u engine.Unsharing) (bool, error) {
	switch {
	case len(u.Bindings) > 0:
		fmt.Fprintf(o.Streams.ErrOut, "This removes the bindings of instance %q in namespace %q: %s (their Secrets too, and the broker unbinds them).\n", o.Name, o.Target, strings.Join(u.Bindings, ", "))
	case u.Unseen:
		fmt.Fprintf(o.Streams.ErrOut, "You may not list the bindings of namespace %q: any binding of instance %q there is removed (its Secret too, and the broker unbinds it).\n", o.Target, o.Name)
	default:
		fmt.Fprintf(o.Streams.ErrOut, "Namespace %q has no binding of instance %q.\n", o.Target, o.Name)
	}
	if o.DryRun.Enabled() {
		return true, nil
	}
	return cmdutil.Confirm(o.Prompter, o.Streams.ErrOut, o.Yes, cmdutil.NeedsYes("unshare"))
}
