package lifecycle

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/printers"
)

// Unbinding unbinds bindings as "kubectl catalog unbind" does, for the command and for
// "delete -f": it lists what goes and confirms (Yes: without asking), follows each
// binding and says where it stands. Abandon drops the records without calling the
// broker.
type Unbinding struct {
	Yes     bool
	Abandon bool

	VerbOptions
}

// output is -o, the default when the options were built without it.
func (o *Unbinding) output() *printers.OutputFlags {
	if o.Output == nil {
		return printers.NewOutputFlags(false)
	}
	return o.Output
}

// Run unbinds the bindings: they are marked for deletion, then driven.
func (o *Unbinding) Run(ctx context.Context, req engine.UnbindRequest) error {
	fol := NewFollowing(o.Streams)
	defer fol.Done()
	req.Follow, req.Confirm = o.AnnounceReconcile(fol.Follow(o.Wait)), o.confirm
	req.Unbound = func(u engine.UnbindOutcome) error {
		fol.Done()
		return o.report(req.Namespace, u)
	}
	res, err := o.Engine.Unbind(ctx, req)
	fol.Done()
	switch {
	case err != nil:
		return err
	case len(res.Bindings) == 0:
		fmt.Fprintf(o.Streams.ErrOut, "Instance %q has no bindings in namespace %q; nothing to unbind.\n", req.Instance, req.Namespace)
	case o.DryRun.Enabled():
		return o.printDryRun(req.Namespace, res.Bindings)
	}
	return nil
}

// confirm lists what goes and asks whether to go on: in a terminal it asks; elsewhere
// one binding goes without --yes, while several, or abandoning, need it.
func (o *Unbinding) confirm(bindings []*v1alpha1.ServiceBinding) (bool, error) {
	if o.Abandon {
		fmt.Fprintf(o.Streams.ErrOut, "WARNING: abandoning in namespace %q:\n", o.Namespace)
	} else {
		fmt.Fprintf(o.Streams.ErrOut, "This unbinds at the broker, in namespace %q:\n", o.Namespace)
	}
	for _, b := range bindings {
		fmt.Fprintf(o.Streams.ErrOut, "  %s\n", whatGoes(b))
	}
	if o.Abandon {
		fmt.Fprintf(o.Streams.ErrOut, "WARNING: the broker is NOT called: the credentials stay valid there and whatever it holds for these bindings stays (and may still be billed).\n")
	}
	var needYes string
	switch {
	case o.Abandon:
		needYes = cmdutil.NeedsYes("unbind --abandon")
	case len(bindings) > 1:
		needYes = fmt.Sprintf("unbind needs --yes to remove %d bindings when it cannot ask for confirmation (not a terminal)", len(bindings))
	}
	return cmdutil.Confirm(o.Prompter, o.Streams.ErrOut, o.Yes, needYes)
}

// printDryRun prints the bindings that would be unbound (or abandoned); the operation
// wrote nothing, asked nothing and called no broker (with --dry-run=server, it had the
// API server check the deletions).
func (o *Unbinding) printDryRun(namespace string, bindings []*v1alpha1.ServiceBinding) error {
	out := o.output()
	verb := "unbound at the broker"
	if o.Abandon {
		verb = "abandoned (the broker not told)"
	}
	names := make([]string, len(bindings))
	for i, b := range bindings {
		names[i] = strconv.Quote(b.Name)
	}
	what := fmt.Sprintf("binding %s in namespace %q would be %s, with its credentials Secret", names[0], namespace, verb)
	if len(bindings) > 1 {
		what = fmt.Sprintf("bindings %s in namespace %q would be %s, with their credentials Secrets", strings.Join(names, ", "), namespace, verb)
	}
	if len(bindings) > 1 && !out.IsTable() && !out.IsName() {
		// -o json|yaml|jsonpath: one document, a list, as kubectl prints several objects.
		list := &v1alpha1.ServiceBindingList{}
		for _, b := range bindings {
			list.Items = append(list.Items, *b)
		}
		return printers.PrintDryRun(o.Streams, out, o.DryRun, list, "deleted", what)
	}
	for i, b := range bindings {
		note := ""
		if i == len(bindings)-1 {
			note = what
		}
		if err := printers.PrintDryRun(o.Streams, out, o.DryRun, b, "deleted", note); err != nil {
			return err
		}
	}
	return nil
}

// whatGoes describes what unbinding b removes.
func whatGoes(b *v1alpha1.ServiceBinding) string {
	parts := []string{fmt.Sprintf("binding %q of instance %q (binding id %s)", b.Name, b.Spec.InstanceName, b.CurrentExternalID())}
	if b.Status.Secret != nil {
		parts = append(parts, fmt.Sprintf("Secret %q", b.Status.Secret.Name))
	}
	var ws []string
	for _, p := range b.Status.Projected {
		ws = append(ws, printers.WorkloadName(p))
	}
	if len(ws) > 0 {
		parts = append(parts, "its projection into "+strings.Join(ws, ", "))
	}
	if b.DeletionTimestamp != nil {
		parts = append(parts, "(already marked for deletion)")
	}
	return strings.Join(parts, ", ")
}

// report says where one binding stands once the operation is done with it, and with
// -o prints the record as it was last seen (gone: as it was marked for deletion).
func (o *Unbinding) report(namespace string, u engine.UnbindOutcome) error {
	b, r := u.Binding, u.Followed
	switch {
	case u.Abandoned:
		fmt.Fprintf(o.Streams.ErrOut, "Binding %q abandoned: its record, Secret and projections are gone; the broker was not told.\n", b.Name)
		return nil
	case r.State == engine.StateDeleted:
		fmt.Fprintf(o.Streams.ErrOut, "Binding %q is gone: %s.\n", b.Name, whatWent(b))
	case engine.WaitingForReconcile(r.Binding):
		fmt.Fprintf(o.Streams.ErrOut, "Binding %q is marked for deletion: %s. Follow it with %s.\n",
			b.Name, r.Message, fmt.Sprintf(`"kubectl catalog describe binding %s -n %s"`, b.Name, namespace))
		o.SayWhenReconcileRuns()
	case !o.Wait.Wait:
		fmt.Fprintf(o.Streams.ErrOut, "Binding %q is marked for deletion; the broker is working on it (%s). \"kubectl catalog reconcile\" finishes it, or wait for it with \"%s\"; follow it with %s.\n",
			b.Name, r.Message, engine.WaitCommand(v1alpha1.KindServiceBinding, namespace, b.Name, engine.WaitForDelete), fmt.Sprintf(`"kubectl catalog describe binding %s -n %s"`, b.Name, namespace))
	}
	if out := o.output(); !out.IsTable() {
		last := b
		if r.Binding != nil {
			last = r.Binding
		}
		return out.PrintObject(last, o.Streams.Out)
	}
	return nil
}

// whatWent says what unbinding b removed.
func whatWent(b *v1alpha1.ServiceBinding) string {
	what := "unbound at the broker"
	if b.Status.Secret != nil {
		what += fmt.Sprintf("; Secret %q deleted", b.Status.Secret.Name)
	}
	if len(b.Status.Projected) > 0 {
		var ws []string
		for _, p := range b.Status.Projected {
			ws = append(ws, printers.WorkloadName(p))
		}
		what += "; projection removed from " + strings.Join(ws, ", ")
	}
	return what
}
