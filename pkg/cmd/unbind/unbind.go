// Package unbind implements "kubectl catalog unbind".
package unbind

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/catalog"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/lifecycle"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil/complete"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/printers"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/prompt"
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
	Wait     lifecycle.WaitFlags
	DryRun   cmdutil.DryRunStrategy
	Output   *printers.OutputFlags

	Namespace string
	Engine    *catalog.Engine
	Prompter  prompt.Prompter
	Streams   cmdutil.IOStreams
}

// NewCmdUnbind returns the unbind command. runF, when not nil, is called with the
// completed options instead of Run.
func NewCmdUnbind(f *cmdutil.Factory, runF func(*Options) error) *cobra.Command {
	o := &Options{Streams: f.IOStreams, Output: printers.NewOutputFlags(false)}
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
			if err := o.Validate(); err != nil {
				return err
			}
			if err := o.Complete(f); err != nil {
				return err
			}
			if runF != nil {
				return runF(o)
			}
			return o.Run(cmd.Context())
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.Instance, "instance", "", "The instance whose bindings --all or --name select (or give it as the argument).")
	fs.BoolVar(&o.All, "all", false, "Unbind every binding of the instance.")
	fs.StringSliceVar(&o.Names, "name", nil, "Unbind these bindings of the instance, comma-separated.")
	fs.BoolVarP(&o.Yes, "yes", "y", false, "Do not ask for confirmation (needed outside a terminal to remove more than one binding, or to abandon).")
	fs.BoolVar(&o.Abandon, "abandon", false, "Drop the records, Secrets and projections without calling the broker; what the broker holds is left there.")
	o.Wait.AddFlags(fs, "unbind")
	cmdutil.AddDryRunFlag(cmd, &o.DryRun, "the binding records to be marked for deletion")
	o.Output.AddFlags(cmd)
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
		return cmdutil.UsageErrorf(`unbind needs the BINDING to unbind (or an instance with --all): list the bindings with "kubectl catalog get bindings"`)
	}
	if err := cmdutil.DryRunWithWait(o.DryRun, o.Wait.Wait, "records nothing"); err != nil {
		return err
	}
	if err := o.Wait.Validate(); err != nil {
		return err
	}
	return o.output().Validate()
}

// output is -o, the default when the options were built without it.
func (o *Options) output() *printers.OutputFlags {
	if o.Output == nil {
		return printers.NewOutputFlags(false)
	}
	return o.Output
}

// Complete builds the clients.
func (o *Options) Complete(f *cmdutil.Factory) error {
	ns, _, err := f.Namespace()
	if err != nil {
		return err
	}
	o.Namespace = ns
	eng, err := f.Engine(cmdutil.EngineOptions{PollInterval: o.Wait.Interval})
	if err != nil {
		return err
	}
	o.Engine = eng.Engine
	if o.Prompter == nil && o.Streams.CanPrompt() {
		o.Prompter = prompt.NewSurvey(o.Streams.In, o.Streams.Out, o.Streams.ErrOut)
	}
	return nil
}

// request is what the user asked for: the bindings named, or an instance's.
func (o *Options) request() catalog.UnbindRequest {
	req := catalog.UnbindRequest{Namespace: o.Namespace, Abandon: o.Abandon, DryRun: o.DryRun.Engine()}
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
	fol := lifecycle.NewFollowing(o.Streams)
	defer fol.Done()
	req := o.request()
	req.Follow, req.Confirm = fol.Follow(o.Wait), o.confirm
	req.Unbound = func(u catalog.UnbindOutcome) error {
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
func (o *Options) confirm(bindings []*v1alpha1.ServiceBinding) (bool, error) {
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
func (o *Options) printDryRun(namespace string, bindings []*v1alpha1.ServiceBinding) error {
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
func (o *Options) report(namespace string, u catalog.UnbindOutcome) error {
	b, r := u.Binding, u.Followed
	switch {
	case u.Abandoned:
		fmt.Fprintf(o.Streams.ErrOut, "Binding %q abandoned: its record, Secret and projections are gone; the broker was not told.\n", b.Name)
		return nil
	case r.State == catalog.StateDeleted:
		fmt.Fprintf(o.Streams.ErrOut, "Binding %q is gone: %s.\n", b.Name, whatWent(b))
	case !o.Wait.Wait:
		fmt.Fprintf(o.Streams.ErrOut, "Binding %q is marked for deletion; the broker is working on it (%s). \"kubectl catalog reconcile\" finishes it; follow it with %s.\n",
			b.Name, r.Message, fmt.Sprintf(`"kubectl catalog describe binding %s -n %s"`, b.Name, namespace))
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
