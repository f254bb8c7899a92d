// Package access implements "kubectl catalog access": which classes and plans each
// namespace may see and provision.
package access

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil/complete"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/iostreams"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/printers"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/records"
)

// NewCmdAccess returns the access command with enable, disable and list.
func NewCmdAccess(f *cmdutil.Factory) *cobra.Command {
	return cmdutil.Group(&cobra.Command{
		Use:   "access",
		Short: "Choose which classes and plans each namespace may use",
		Long: cmdutil.LongDesc(`
			Curate the marketplace: enable or disable a class, or one plan of it, in one
			namespace (--namespace) or in every namespace (--all-namespaces).
			Everything is enabled until a rule disables it. The most specific rule wins:
			a namespace's rule over an every-namespace rule, and at the same level a
			plan's rule over its class's. The marketplace, provisioning and completion
			respect the rules.

			The rules are one record in the catalog namespace, so changing them needs
			write access there (a catalog administrator's job).`),
		Example: cmdutil.Examples(`
			# Hide class legacy-db everywhere, and list the rules
			kubectl catalog access disable legacy-db -A
			kubectl catalog access list`),
	}, NewCmdEnable(f, nil), NewCmdDisable(f, nil), NewCmdList(f, nil))
}

// Options are the options of "access enable" and "access disable".
type Options struct {
	Target  string
	Enabled bool

	// Namespace is the rule's namespace; "" for every namespace.
	Namespace string
	// AllNamespaces is -A: the rule is for every namespace. Without it, --namespace
	// must be given: a rule for every namespace is never made by omission.
	AllNamespaces bool
	// NamespaceSet reports an explicit --namespace.
	NamespaceSet  bool
	DryRun        cmdutil.DryRunStrategy
	Output        *printers.OutputFlags
	ViewNamespace string
	Engine        *engine.Engine
	Streams       cmdutil.IOStreams
}

// NewCmdEnable returns "access enable". runF, when not nil, is called with the
// completed Options instead of Run (tests check the flags with it).
func NewCmdEnable(f *cmdutil.Factory, runF func(*Options) error) *cobra.Command {
	return newCmdSet(f, true, runF)
}

// NewCmdDisable returns "access disable"; runF as for NewCmdEnable.
func NewCmdDisable(f *cmdutil.Factory, runF func(*Options) error) *cobra.Command {
	return newCmdSet(f, false, runF)
}

func newCmdSet(f *cmdutil.Factory, enable bool, runF func(*Options) error) *cobra.Command {
	o := &Options{Streams: f.IOStreams, Enabled: enable, Output: printers.NewOutputFlags(false)}
	verb, example := "disable", `
		# Hide class legacy-db from every namespace
		kubectl catalog access disable legacy-db --all-namespaces

		# ...but let namespace migration use its plan small
		kubectl catalog access enable legacy-db/small --namespace migration`
	short := "Hide a class or plan from a namespace, or from all"
	if enable {
		verb, example = "enable", `
		# Let namespace team-a use class postgres again
		kubectl catalog access enable postgres --namespace team-a

		# Enable plan large of postgres in every namespace
		kubectl catalog access enable postgres/large -A

		# Show the rules record this would write, writing nothing
		kubectl catalog access enable postgres -n team-a --dry-run -o yaml`
		short = "Let a namespace, or all, use a class or plan"
	}
	cmd := &cobra.Command{
		Use:   verb + " CLASS[/PLAN]",
		Short: short,
		Long: cmdutil.LongDesc(fmt.Sprintf(`
			%s a class, or one plan of it (CLASS/PLAN), in the namespace given with
			--namespace, or in every namespace with --all-namespaces (-A): one of the
			two is required. When
			several brokers offer a class of that name, name the broker too:
			BROKER/CLASS/PLAN, or the class's record name.`, strings.ToUpper(verb[:1])+verb[1:])),
		Example:           cmdutil.Examples(example),
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: complete.First(complete.ClassOrPlan(f)),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Target = args[0]
			_, explicit, err := f.Namespace()
			if err != nil {
				return err
			}
			o.NamespaceSet = explicit
			return cmdutil.RunCommand(cmd.Context(), f, o, runF)
		},
	}
	cmd.Flags().BoolVarP(&o.AllNamespaces, "all-namespaces", "A", false, "Make the rule for every namespace (instead of --namespace).")
	cmdutil.AddDryRunFlag(cmd, &o.DryRun, "the access rules record")
	o.Output.AddFlags(cmd)
	return cmd
}

// Validate checks the argument without any I/O.
func (o *Options) Validate() error {
	if strings.Trim(o.Target, "/") == "" || strings.Contains(o.Target, "//") {
		return cmdutil.UsageErrorf("name a class (CLASS) or a plan (CLASS/PLAN), not %q", o.Target)
	}
	if strings.Count(o.Target, "/") > 2 {
		return cmdutil.UsageErrorf("%q has too many slashes: use CLASS, CLASS/PLAN or BROKER/CLASS/PLAN", o.Target)
	}
	verb := "disable"
	if o.Enabled {
		verb = "enable"
	}
	switch {
	case o.AllNamespaces && o.NamespaceSet:
		return cmdutil.UsageErrorf("--namespace and --all-namespaces cannot be used together: a rule is for one namespace (-n NS) or for every one (-A)")
	case !o.AllNamespaces && !o.NamespaceSet:
		return cmdutil.UsageErrorf("access %s needs where the rule applies: pass -n NS for one namespace, or -A (--all-namespaces) for every namespace", verb)
	}
	if o.Output == nil {
		return nil
	}
	return o.Output.Validate()
}

// Complete reads the namespace flag (an explicit --namespace makes a namespace's rule)
// and builds the engine.
func (o *Options) Complete(f *cmdutil.Factory) error {
	eng, ns, err := f.EngineIn(cmdutil.EngineOptions{})
	if err != nil {
		return err
	}
	o.ViewNamespace, o.Engine = ns, eng
	if !o.AllNamespaces {
		o.Namespace = ns
	}
	return nil
}

// Run records the rule (engine.Engine.SetAccess) and prints the outcome.
func (o *Options) Run(ctx context.Context) error {
	res, err := o.Engine.SetAccess(ctx, engine.AccessRequest{
		Target: o.Target, Enabled: o.Enabled, Namespace: o.Namespace, ViewNamespace: o.ViewNamespace, DryRun: o.DryRun.Engine(),
		Record: o.Output != nil && !o.Output.IsTable(),
		Note:   func(line string) { fmt.Fprintln(o.Streams.ErrOut, iostreams.SafeText(line)) },
	})
	if err != nil {
		return err
	}
	state := "disabled"
	if o.Enabled {
		state = "enabled"
	}
	if o.DryRun.Enabled() {
		return printers.PrintDryRun(o.Streams, o.Output, o.DryRun, res.Access, res.Operation, fmt.Sprintf("%s would be %s in %s", res.What, state, res.Where))
	}
	if res.Access != nil {
		return o.Output.PrintObject(res.Access, o.Streams.Out)
	}
	suffix := ""
	if !res.Changed {
		suffix = " (unchanged)"
	}
	fmt.Fprintf(o.Streams.Out, "%s %s in %s%s\n", res.What, state, res.Where, suffix)
	return nil
}

// ListOptions are the options of "access list".
type ListOptions struct {
	Output           *printers.OutputFlags
	CatalogNamespace string
	Reader           *records.Reader
	Streams          cmdutil.IOStreams
}

// NewCmdList returns "access list". runF, when not nil, is called with the completed
// ListOptions instead of Run.
func NewCmdList(f *cmdutil.Factory, runF func(*ListOptions) error) *cobra.Command {
	o := &ListOptions{Streams: f.IOStreams, Output: printers.NewOutputFlags(false)}
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the access rules",
		Long:  "List the access rules: which classes and plans are enabled or disabled, and where.",
		Example: cmdutil.Examples(`
			# List the rules
			kubectl catalog access list

			# The rules record as YAML
			kubectl catalog access list -o yaml`),
		Args: cobra.NoArgs,
		RunE: cmdutil.RunE(f, o, runF),
	}
	o.Output.AddFlags(cmd)
	return cmd
}

// Validate checks the flags without I/O.
func (o *ListOptions) Validate() error { return o.Output.Validate() }

// Complete builds the reader of the records.
func (o *ListOptions) Complete(f *cmdutil.Factory) error {
	r, err := f.Reader()
	if err != nil {
		return err
	}
	o.Reader, o.CatalogNamespace = r, f.CatalogNamespace
	return nil
}

// Run lists the rules.
func (o *ListOptions) Run(ctx context.Context) error {
	a, err := o.Reader.Access().Get(ctx, o.CatalogNamespace, v1alpha1.CatalogAccessName)
	if records.IsNotFound(err) {
		a, err = &v1alpha1.CatalogAccess{}, nil
		a.Namespace, a.Name = o.CatalogNamespace, v1alpha1.CatalogAccessName
	}
	if err != nil {
		return err
	}
	if !o.Output.IsTable() {
		return o.Output.PrintObject(a, o.Streams.Out)
	}
	if len(a.Spec.Rules) == 0 {
		fmt.Fprintln(o.Streams.ErrOut, "No access rules: every class and plan is enabled in every namespace.")
		return nil
	}
	t := printers.NewTable(o.Streams.Out, "NAMESPACE", "BROKER", "CLASS", "PLAN", "ACCESS")
	for _, r := range a.Spec.Rules {
		ns, plan, access := r.Namespace, r.PlanExternalName, "disabled"
		if ns == "" {
			ns = "<all>"
		}
		if r.PlanID == "" {
			plan = "<all>"
		}
		if r.Enabled {
			access = "enabled"
		}
		t.Append(ns, r.BrokerName, r.ClassExternalName, plan, access)
	}
	return t.Render()
}
