package apply

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/lifecycle"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/declarative"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/records"
)

var deleteLong = cmdutil.LongDesc(`
	Unbind and deprovision what manifests name: the bindings first, then the
	instances, each as "kubectl catalog unbind" and "kubectl catalog deprovision"
	do it (the broker asked, the records kept until it confirmed), then
	deregister the brokers, as "kubectl catalog deregister" does (refused while
	instances of the broker's classes exist). Other kinds are skipped with a
	note. An object that does not exist is said so.

	In a terminal each deletion is confirmed; elsewhere --yes is needed.`)

var deleteExample = cmdutil.Examples(`
	# Unbind and deprovision what the directory names, without questions
	kubectl catalog delete -f services/ --yes --wait`)

// DeleteOptions are the options of delete.
type DeleteOptions struct {
	Options
	Yes bool
}

// NewCmdDelete returns the delete command. runF, when not nil, is called with the
// completed options instead of Run.
func NewCmdDelete(f *cmdutil.Factory, runF func(*DeleteOptions) error) *cobra.Command {
	o := &DeleteOptions{Options: Options{VerbOptions: lifecycle.NewVerbOptions(f)}}
	cmd := &cobra.Command{
		Use:     "delete -f FILENAME [-R] [--yes]",
		Short:   "Unbind and deprovision what manifests name",
		Long:    deleteLong,
		Example: deleteExample,
		Args:    cmdutil.NoArgs,
		RunE:    cmdutil.RunE(f, o, runF),
	}
	o.Files.AddFlags(cmd, "whose objects to delete")
	cmd.Flags().BoolVarP(&o.Yes, "yes", "y", false, "Do not ask for confirmation (needed when not in a terminal).")
	o.AddFlags(cmd, "unbind or deprovision", "the records to be marked for deletion")
	return cmd
}

// Validate checks the flags without I/O.
func (o *DeleteOptions) Validate() error {
	if err := o.Files.Validate(); err != nil {
		return err
	}
	return o.ValidateFlags("deletes nothing")
}

// Run unbinds the bindings the manifests name, then deprovisions the instances.
func (o *DeleteOptions) Run(ctx context.Context) error {
	objs, err := o.load()
	if err != nil {
		return fmt.Errorf("nothing was deleted:\n%w", err)
	}
	if !o.Yes && !o.DryRun.Enabled() && !o.Streams.CanPrompt() {
		return cmdutil.UsageErrorf("delete -f unbinds and deprovisions at the broker what the files name: confirm with --yes (there is no terminal to ask in)")
	}
	// The first failure stops: what follows may depend on it (an instance's bindings).
	for _, kind := range []string{v1alpha1.KindServiceBinding, v1alpha1.KindServiceInstance} {
		for _, obj := range objs {
			if obj.Kind != kind {
				continue
			}
			if err := o.deleteOne(ctx, obj); err != nil {
				return fmt.Errorf("%s: %w", obj.Doc.Where(), err)
			}
		}
	}
	for _, obj := range objs {
		if obj.Kind == v1alpha1.KindBroker {
			if err := o.deregister(ctx, obj); err != nil {
				return fmt.Errorf("%s: %w", obj.Doc.Where(), err)
			}
		}
	}
	return nil
}

// deregister deregisters the broker obj names, as "kubectl catalog deregister" does:
// refused, with the reason, while instances of its classes exist.
func (o *DeleteOptions) deregister(ctx context.Context, obj *declarative.Object) error {
	scope := strings.ToLower(string(obj.Broker.Scope))
	if _, err := o.reader.FindBroker(ctx, o.CatalogNamespace, obj.Namespace, obj.Name, obj.Broker.Scope); err != nil {
		if brokerNotFound(err) {
			fmt.Fprintf(o.Streams.ErrOut, "broker %q (%s scope) not registered: nothing to deregister\n", obj.Name, scope)
			return nil
		}
		return err
	}
	if !o.DryRun.Enabled() {
		fmt.Fprintf(o.Streams.ErrOut, "This deregisters broker %q (%s scope) and removes its classes.\n", obj.Name, scope)
		if ok, err := cmdutil.Confirm(o.Prompter, o.Streams.ErrOut, o.Yes, cmdutil.NeedsYes("delete -f")); !ok || err != nil {
			return err
		}
	}
	req := lifecycle.DeregisterRequest(obj.Name, scope, obj.Namespace, false, o.DryRun.Engine(), o.Streams.ErrOut)
	return lifecycle.Deregister(ctx, o.Engine, o.Streams, nil, o.DryRun, req)
}

// deleteOne unbinds or deprovisions obj, as the verb does.
func (o *DeleteOptions) deleteOne(ctx context.Context, obj *declarative.Object) error {
	verb := o.VerbOptions
	verb.Namespace = obj.Namespace
	if obj.Kind == v1alpha1.KindServiceBinding {
		if _, err := o.reader.Bindings().Get(ctx, obj.Namespace, obj.Name); records.IsNotFound(err) {
			fmt.Fprintf(o.Streams.ErrOut, "binding %q not found in namespace %q: nothing to unbind\n", obj.Name, obj.Namespace)
			return nil
		}
		req := engine.UnbindRequest{Namespace: obj.Namespace, Bindings: []string{obj.Name}, DryRun: o.DryRun.Engine()}
		return (&lifecycle.Unbinding{Yes: o.Yes, VerbOptions: verb}).Run(ctx, req)
	}
	if _, err := o.reader.Instances().Get(ctx, obj.Namespace, obj.Name); records.IsNotFound(err) {
		fmt.Fprintf(o.Streams.ErrOut, "instance %q not found in namespace %q: nothing to deprovision\n", obj.Name, obj.Namespace)
		return nil
	}
	return (&lifecycle.Deprovisioning{Name: obj.Name, Yes: o.Yes, VerbOptions: verb}).Run(ctx)
}
