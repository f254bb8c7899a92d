// Package share implements "kubectl catalog share" and "kubectl catalog unshare".
package share

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/catalog"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/lifecycle"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil/complete"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/printers"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/prompt"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
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

// Options are the options of share and unshare.
type Options struct {
	Name      string
	Target    string
	Yes       bool
	DryRun    cmdutil.DryRunStrategy
	Output    *printers.OutputFlags
	Namespace string
	Store     *store.Store
	Engine    *catalog.Engine
	Core      kubernetes.Interface
	Prompter  prompt.Prompter
	Streams   cmdutil.IOStreams
}

// NewCmdShare returns the share command.
func NewCmdShare(f *cmdutil.Factory) *cobra.Command {
	o := &Options{Streams: f.IOStreams, Output: printers.NewOutputFlags(false)}
	cmd := &cobra.Command{
		Use:               "share INSTANCE --to-namespace NAMESPACE",
		Short:             "Let another namespace bind to a service instance",
		Long:              shareLong,
		Example:           shareExample,
		Args:              lifecycle.ExactlyOneName,
		ValidArgsFunction: complete.First(complete.Instances(f)),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Name = args[0]
			if err := validTarget("--to-namespace", o.Target); err != nil {
				return err
			}
			if err := o.Output.Validate(); err != nil {
				return err
			}
			if err := o.Complete(f); err != nil {
				return err
			}
			return o.Share(cmd.Context())
		},
	}
	cmd.Flags().StringVar(&o.Target, "to-namespace", "", "The namespace that may bind to the instance.")
	cmdutil.AddDryRunFlag(cmd, &o.DryRun, "the instance record with the grant added")
	o.Output.AddFlags(cmd)
	return cmd
}

// NewCmdUnshare returns the unshare command.
func NewCmdUnshare(f *cmdutil.Factory) *cobra.Command {
	o := &Options{Streams: f.IOStreams, Output: printers.NewOutputFlags(false)}
	cmd := &cobra.Command{
		Use:               "unshare INSTANCE --from-namespace NAMESPACE",
		Short:             "Stop sharing a service instance with a namespace, removing its bindings",
		Long:              unshareLong,
		Example:           unshareExample,
		Args:              lifecycle.ExactlyOneName,
		ValidArgsFunction: complete.First(complete.Instances(f)),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Name = args[0]
			if err := validTarget("--from-namespace", o.Target); err != nil {
				return err
			}
			if err := o.Output.Validate(); err != nil {
				return err
			}
			if err := o.Complete(f); err != nil {
				return err
			}
			return o.Unshare(cmd.Context())
		},
	}
	cmd.Flags().StringVar(&o.Target, "from-namespace", "", "The namespace that may no longer bind to the instance.")
	cmd.Flags().BoolVarP(&o.Yes, "yes", "y", false, "Do not ask for confirmation (needed when not in a terminal).")
	cmdutil.AddDryRunFlag(cmd, &o.DryRun, "the instance record with the grant withdrawn (the namespace's bindings are only listed)")
	o.Output.AddFlags(cmd)
	return cmd
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

// Complete builds the clients.
func (o *Options) Complete(f *cmdutil.Factory) error {
	ns, _, err := f.Namespace()
	if err != nil {
		return err
	}
	o.Namespace = ns
	eng, err := f.Engine(cmdutil.EngineOptions{})
	if err != nil {
		return err
	}
	o.Engine, o.Store = eng.Engine, eng.Store
	if o.Core, err = f.KubernetesClient(); err != nil {
		return err
	}
	if o.Prompter == nil && o.Streams.CanPrompt() {
		o.Prompter = prompt.NewSurvey(o.Streams.In, o.Streams.Out, o.Streams.ErrOut)
	}
	return nil
}

func (o *Options) get(ctx context.Context) (*v1alpha1.ServiceInstance, error) {
	inst, err := o.Store.Instances().Get(ctx, o.Namespace, o.Name)
	if store.IsNotFound(err) {
		return nil, fmt.Errorf(`instance %q not found in namespace %q: list the instances with "kubectl catalog get instances -n %s"`, o.Name, o.Namespace, o.Namespace)
	}
	return inst, err
}

// Share adds the grant.
func (o *Options) Share(ctx context.Context) error {
	if o.Target == o.Namespace {
		return cmdutil.UsageErrorf("instance %q is in namespace %q already: bindings of its own namespace need no grant; give another namespace to --to-namespace", o.Name, o.Namespace)
	}
	inst, err := o.get(ctx)
	if err != nil {
		return err
	}
	if inst.DeletionTimestamp != nil {
		return fmt.Errorf("instance %q is being deprovisioned and cannot be shared", o.Name)
	}
	if slices.Contains(inst.Spec.SharedWith, o.Target) {
		fmt.Fprintf(o.Streams.ErrOut, "instance %q is already shared with namespace %q; nothing was changed\n", o.Name, o.Target)
		return nil
	}
	if allowed := inst.Spec.AllowedNamespaces; len(allowed) > 0 && !slices.Contains(allowed, o.Target) {
		return fmt.Errorf("instance %q allows bindings only from namespaces %s, so sharing it with %q would let nobody there bind: add it first with \"kubectl catalog update %s --allowed-namespaces %s,%s\"",
			o.Name, strings.Join(allowed, ", "), o.Target, o.Name, strings.Join(allowed, ","), o.Target)
	}
	switch _, err := o.Core.CoreV1().Namespaces().Get(ctx, o.Target, metav1.GetOptions{}); {
	case apierrors.IsNotFound(err):
		return fmt.Errorf("namespace %q does not exist: create it first, or check the name given to --to-namespace; instance %q was not shared", o.Target, o.Name)
	case apierrors.IsForbidden(err):
		fmt.Fprintf(o.Streams.ErrOut, "Warning: you may not read namespace %q, so whether it exists was not checked.\n", o.Target)
	case err != nil:
		return err
	}
	if o.DryRun.Enabled() {
		return o.printDryRun(ctx, inst, func(x *v1alpha1.ServiceInstance) {
			x.Spec.SharedWith = append(x.Spec.SharedWith, o.Target)
			slices.Sort(x.Spec.SharedWith)
		}, fmt.Sprintf("instance %q of namespace %q would be shared with namespace %q", o.Name, o.Namespace, o.Target))
	}
	_, err = o.Store.Instances().UpdateWithRetry(store.WithIntent(ctx), o.Namespace, o.Name, func(x *v1alpha1.ServiceInstance) error {
		if x.UID != inst.UID {
			return fmt.Errorf("instance %q changed meanwhile: run the command again", o.Name)
		}
		if !slices.Contains(x.Spec.SharedWith, o.Target) {
			x.Spec.SharedWith = append(x.Spec.SharedWith, o.Target)
			slices.Sort(x.Spec.SharedWith)
		}
		return nil
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(o.Streams.ErrOut, "instance %q of namespace %q is shared with namespace %q: bind it there with \"kubectl catalog bind %s/%s -n %s\"\n",
		o.Name, o.Namespace, o.Target, o.Namespace, o.Name, o.Target)
	return nil
}

// Unshare removes the grant, then the bindings it let the namespace make.
func (o *Options) Unshare(ctx context.Context) error {
	inst, err := o.get(ctx)
	if err != nil {
		return err
	}
	if !slices.Contains(inst.Spec.SharedWith, o.Target) {
		return fmt.Errorf("instance %q is not shared with namespace %q (shared with: %s); nothing was changed", o.Name, o.Target, orNone(inst.Spec.SharedWith))
	}
	consumers, unseen, err := o.Engine.Consumers(ctx, inst, o.Target)
	if err != nil {
		return err
	}
	var names []string
	for _, b := range consumers {
		if b.Namespace == o.Target {
			names = append(names, b.Name)
		}
	}
	switch {
	case len(names) > 0:
		fmt.Fprintf(o.Streams.ErrOut, "This removes the bindings of instance %q in namespace %q: %s (their Secrets too, and the broker unbinds them).\n", o.Name, o.Target, strings.Join(names, ", "))
	case slices.Contains(unseen, o.Target):
		fmt.Fprintf(o.Streams.ErrOut, "You may not list the bindings of namespace %q: any binding of instance %q there is removed (its Secret too, and the broker unbinds it).\n", o.Target, o.Name)
	default:
		fmt.Fprintf(o.Streams.ErrOut, "Namespace %q has no binding of instance %q.\n", o.Target, o.Name)
	}
	if o.DryRun.Enabled() {
		return o.printDryRun(ctx, inst, func(x *v1alpha1.ServiceInstance) {
			x.Spec.SharedWith = withdrawn(x.Spec.SharedWith, o.Target)
		}, fmt.Sprintf("instance %q of namespace %q would no longer be shared with namespace %q, and the bindings above would be removed", o.Name, o.Namespace, o.Target))
	}
	if ok, err := cmdutil.Confirm(o.Prompter, o.Streams.ErrOut, o.Yes, cmdutil.NeedsYes("unshare")); !ok {
		return err
	}
	stored, err := o.Store.Instances().UpdateWithRetry(store.WithIntent(ctx), o.Namespace, o.Name, func(x *v1alpha1.ServiceInstance) error {
		x.Spec.SharedWith = withdrawn(x.Spec.SharedWith, o.Target)
		return nil
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(o.Streams.ErrOut, "instance %q is no longer shared with namespace %q\n", o.Name, o.Target)
	revoked, unseen, err := o.Engine.RevokeConsumers(ctx, stored, o.Target)
	if err != nil {
		return fmt.Errorf("the grant is withdrawn, but marking the bindings of namespace %q for deletion failed (reconcile removes them): %w", o.Target, err)
	}
	if len(revoked) > 0 {
		fmt.Fprintf(o.Streams.ErrOut, "Marked for deletion: %s; reconcile unbinds them at the broker (or run \"kubectl catalog reconcile -n %s\").\n", strings.Join(revoked, ", "), o.Target)
	}
	if slices.Contains(unseen, o.Target) {
		fmt.Fprintf(o.Streams.ErrOut, "You may not change the bindings of namespace %q: reconcile removes them.\n", o.Target)
	}
	return nil
}

// withdrawn is the namespaces of a grant without ns (nil when none is left).
func withdrawn(shared []string, ns string) []string {
	shared = slices.DeleteFunc(slices.Clone(shared), func(s string) bool { return s == ns })
	if len(shared) == 0 {
		return nil
	}
	return shared
}

// printDryRun prints the instance record as change would leave it. With
// --dry-run=server the change is sent to the API server as a dry run first
// (validation and admission, the trust policy included); nothing is stored and no
// binding is touched.
func (o *Options) printDryRun(ctx context.Context, inst *v1alpha1.ServiceInstance, change func(*v1alpha1.ServiceInstance), what string) error {
	out := inst.DeepCopy()
	change(out)
	if o.DryRun == cmdutil.DryRunServer {
		updated, err := o.Store.Instances().UpdateWithRetry(store.WithIntent(o.DryRun.Context(ctx)), o.Namespace, o.Name, func(x *v1alpha1.ServiceInstance) error {
			if x.UID != inst.UID {
				return fmt.Errorf("instance %q changed meanwhile: run the command again", o.Name)
			}
			change(x)
			return nil
		})
		if err != nil {
			return fmt.Errorf("instance %q would not be changed: %w", o.Name, err)
		}
		out = updated
	}
	return printers.PrintDryRun(o.Streams, o.Output, o.DryRun, out, "configured", what)
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}
