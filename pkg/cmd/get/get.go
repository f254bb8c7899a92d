// Package get implements "kubectl catalog get" and its broker, class and plan
// subcommands. Other subcommands (instances, bindings) are added to the parent by their
// own packages.
package get

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/watchrecords"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil/complete"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/marketplace"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/printers"
)

// NewCmdGet returns the get command with the brokers, classes and plans subcommands.
// Add others with AddCommand.
func NewCmdGet(f *cmdutil.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "get",
		Short: "List brokers, classes, plans and other records",
		Long: cmdutil.LongDesc(`
			List kubectl-catalog's records as tables, or in any -o format.`),
		Example: cmdutil.Examples(`
			# List brokers, then the plans of class postgres
			kubectl catalog get brokers
			kubectl catalog get plans -c postgres`),
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return cmd.Help() },
	}
	cmd.AddCommand(NewCmdGetBrokers(f, nil), NewCmdGetClasses(f, nil), NewCmdGetPlans(f, nil))
	return cmd
}

// Options are what get brokers, classes and plans share.
type Options struct {
	Names         []string
	AllNamespaces bool
	Broker        string
	Class         string
	Output        *printers.OutputFlags
	List          printers.ListFlags
	Watch         watchrecords.Flags

	Namespace        string
	CatalogNamespace string
	Reader           *engine.Reader
	Streams          cmdutil.IOStreams
	Now              func() time.Time

	core kubernetes.Interface // to watch with
}

func newOptions(f *cmdutil.Factory) *Options {
	return &Options{Streams: f.IOStreams, Output: printers.NewOutputFlags(true), Now: f.Now}
}

// Validate checks the flags without any I/O; it changes nothing.
func (o *Options) Validate() error {
	if err := o.Output.Validate(); err != nil {
		return err
	}
	return validateList(o.List)
}

// validateList checks the list flags on a copy of them, leaving l's parsed selector
// and sort expression to Complete.
func validateList(l printers.ListFlags) error { return l.Validate() }

// Complete builds the reader and finds the namespaces.
func (o *Options) Complete(f *cmdutil.Factory, args []string) error {
	o.Names = args
	if err := o.List.Validate(); err != nil {
		return err
	}
	ns, err := f.UserNamespace()
	if err != nil {
		return err
	}
	r, err := f.Reader()
	if err != nil {
		return err
	}
	o.Namespace, o.CatalogNamespace, o.Reader = ns, f.CatalogNamespace, r
	if o.Watch.On() {
		if o.core, err = f.KubernetesClient(); err != nil {
			return err
		}
	}
	return nil
}

// runE validates and completes o, then runs it: with runF when given (tests check the
// parsed flags that way), else with run.
func runE(f *cmdutil.Factory, o *Options, runF func(*Options) error, run func(context.Context) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		if err := o.Validate(); err != nil {
			return err
		}
		if err := o.Complete(f, args); err != nil {
			return err
		}
		if runF != nil {
			return runF(o)
		}
		return run(cmd.Context())
	}
}

func (o *Options) noneFound(w io.Writer, what string) {
	if o.AllNamespaces {
		fmt.Fprintf(w, "No %s found.\n", what)
		return
	}
	fmt.Fprintf(w, "No %s found in namespace %q or the catalog namespace %q.\n", what, o.Namespace, o.CatalogNamespace)
}

// NewCmdGetBrokers returns "get brokers". runF, when not nil, is called with the
// completed options instead of RunBrokers.
func NewCmdGetBrokers(f *cmdutil.Factory, runF func(*Options) error) *cobra.Command {
	o := newOptions(f)
	cmd := &cobra.Command{
		Use:     "brokers [NAME...]",
		Aliases: []string{"broker", "brk"},
		Short:   "List registered brokers",
		Long: cmdutil.LongDesc(`
			List the brokers visible from the current namespace: cluster-scoped ones
			(in the catalog namespace) and the namespace's own. With -A, the brokers of
			every namespace.

			With -w (--watch), after the list it prints a row, with the same columns,
			each time a broker changes or is deleted, until interrupted;
			--watch-only prints only the changes. With -o json|yaml it prints one
			object per change.`),
		Example: cmdutil.Examples(`
			# List brokers
			kubectl catalog get brokers

			# One broker as YAML
			kubectl catalog get brokers acme -o yaml

			# Watch the brokers' status (catalog fetches, errors) until Ctrl-C
			kubectl catalog get brokers -w`),
		ValidArgsFunction: complete.Each(complete.Brokers(f)),
	}
	cmd.RunE = runE(f, o, runF, o.RunBrokers)
	cmd.Flags().BoolVarP(&o.AllNamespaces, "all-namespaces", "A", false, "List the brokers of every namespace.")
	o.Watch.AddFlags(cmd.Flags(), "brokers")
	o.List.AddWatchedFlags(cmd, "brokers")
	o.Output.AddFlags(cmd)
	return cmd
}

func (o *Options) namespaces() []string {
	switch {
	case o.AllNamespaces:
		return []string{""}
	case o.Namespace == o.CatalogNamespace:
		return []string{o.Namespace}
	}
	return []string{o.CatalogNamespace, o.Namespace}
}

func matchName(names []string, candidates ...string) bool {
	if len(names) == 0 {
		return true
	}
	for _, n := range names {
		for _, c := range candidates {
			if n == c {
				return true
			}
		}
	}
	return false
}

// missing returns an error for the first name that matched nothing.
func missing(kind string, names []string, found map[string]bool, known []string) error {
	for _, n := range names {
		if !found[n] {
			return notFound(kind, n, known)
		}
	}
	return nil
}

// allMissing returns an error naming, one a line, every name that matched nothing: get
// prints what it found and fails for the rest, as kubectl get does.
func allMissing(kind string, names []string, found map[string]bool, known []string) error {
	var errs []error
	for _, n := range names {
		if !found[n] {
			errs = append(errs, notFound(kind, n, known))
		}
	}
	return errors.Join(errs...)
}

// notFound is a name that matched nothing, with the closest of known as a suggestion.
func notFound(kind, name string, known []string) error {
	msg := fmt.Sprintf("%s %q not found", kind, name)
	if s := marketplace.Suggest(name, known); len(s) > 0 {
		msg += fmt.Sprintf("; did you mean %q?", s[0])
	}
	return &engine.NotFoundError{Msg: msg}
}

// lookupNamespace is the namespace names are looked up from, "" for every namespace.
func (o *Options) lookupNamespace() string {
	if o.AllNamespaces {
		return ""
	}
	return o.Namespace
}

// brokerVisible reports whether get lists broker b from namespace ns: a cluster-scoped
// broker only from the catalog namespace.
func (o *Options) brokerVisible(b *v1alpha1.Broker) bool {
	return o.AllNamespaces || b.Namespace == o.CatalogNamespace || b.Spec.Scope != v1alpha1.ScopeCluster
}

// watchBrokers lists the brokers get would list, then prints each change.
func (o *Options) watchBrokers(ctx context.Context) error {
	if o.core == nil {
		return fmt.Errorf("internal error: no client to watch with")
	}
	sel, err := engine.Selector(v1alpha1.KindBroker, engine.Filter{Selector: o.List.LabelSelector()})
	if err != nil {
		return err
	}
	var sources []watchrecords.Source
	for _, ns := range o.namespaces() {
		sources = append(sources, watchrecords.Source{Namespace: ns, Selector: sel, Optional: ns == o.CatalogNamespace && !o.AllNamespaces})
	}
	return watchrecords.Watch(ctx, o.core, sources, watchrecords.Printing[*v1alpha1.Broker]{
		Out: o.List.Out(o.Streams.Out), Output: o.Output, List: &o.List, WatchOnly: o.Watch.WatchOnly,
		Keep: func(b *v1alpha1.Broker) bool { return o.brokerVisible(b) && matchName(o.Names, b.Name) },
		Table: func(w io.Writer, items []*v1alpha1.Broker) error {
			vals := make([]v1alpha1.Broker, len(items))
			for i, x := range items {
				vals[i] = *x
			}
			return printers.BrokerTable(w, vals, o.AllNamespaces, o.Output.IsWide(), o.Now())
		},
	}, func(_ watchrecords.Source, err error) {
		fmt.Fprintf(o.Streams.ErrOut, "Warning: not allowed to list cluster brokers: %v\n", err)
	})
}

// RunBrokers lists brokers.
func (o *Options) RunBrokers(ctx context.Context) error {
	if o.Watch.On() {
		return o.watchBrokers(ctx)
	}
	var items []v1alpha1.Broker
	found := map[string]bool{}
	var known []string
	for _, ns := range o.namespaces() {
		bs, err := o.Reader.Brokers().List(ctx, ns, engine.Filter{Selector: o.List.LabelSelector()})
		if err != nil && len(bs) == 0 {
			if engine.IsForbidden(err) && ns == o.CatalogNamespace && !o.AllNamespaces {
				fmt.Fprintf(o.Streams.ErrOut, "Warning: not allowed to list cluster brokers: %v\n", err)
				continue
			}
			return err
		}
		for _, b := range bs {
			if ns != "" && ns != o.CatalogNamespace && b.Spec.Scope == v1alpha1.ScopeCluster {
				continue
			}
			known = append(known, b.Name)
			if matchName(o.Names, b.Name) {
				found[b.Name] = true
				items = append(items, *b)
			}
		}
	}
	if err := missing("broker", o.Names, found, known); err != nil {
		return err
	}
	if err := printers.SortItems(&o.List, items, func(b *v1alpha1.Broker) runtime.Object { return b }); err != nil {
		return err
	}
	if !o.Output.IsTable() {
		return o.Output.PrintObject(&v1alpha1.BrokerList{Items: items}, o.Streams.Out)
	}
	if len(items) == 0 {
		o.noneFound(o.Streams.ErrOut, "brokers")
		return nil
	}
	return printers.BrokerTable(o.List.Out(o.Streams.Out), items, o.AllNamespaces, o.Output.IsWide(), o.Now())
}

// NewCmdGetClasses returns "get classes". runF, when not nil, is called with the
// completed options instead of RunClasses.
func NewCmdGetClasses(f *cmdutil.Factory, runF func(*Options) error) *cobra.Command {
	o := newOptions(f)
	cmd := &cobra.Command{
		Use:     "classes [NAME...]",
		Aliases: []string{"class", "cl"},
		Short:   "List service classes",
		Long: cmdutil.LongDesc(`
			List the service classes of the brokers visible from the current namespace,
			including classes the broker no longer offers (status Removed) and classes
			access rules hide. NAME is a class's name, BROKER/NAME, its record name or
			its OSB id. For what the namespace may provision, use "kubectl catalog
			marketplace".`),
		Example: cmdutil.Examples(`
			# List classes
			kubectl catalog get classes

			# Classes of one broker, with their ids
			kubectl catalog get classes -b acme -o wide

			# One class as YAML
			kubectl catalog get classes postgres -o yaml`),
		ValidArgsFunction: complete.Each(complete.Classes(f)),
	}
	cmd.RunE = runE(f, o, runF, o.RunClasses)
	cmd.Flags().BoolVarP(&o.AllNamespaces, "all-namespaces", "A", false, "List the classes of every namespace.")
	cmd.Flags().StringVarP(&o.Broker, "broker", "b", "", "Only the classes of this broker.")
	o.List.AddFlags(cmd, "classes")
	o.Output.AddFlags(cmd)
	return cmd
}

func (o *Options) classes(ctx context.Context, class string) ([]*v1alpha1.ServiceClass, error) {
	filter := engine.Filter{Broker: o.Broker, Class: class, Selector: o.List.LabelSelector()}
	var out []*v1alpha1.ServiceClass
	var err error
	if o.AllNamespaces {
		out, err = o.Reader.Classes().List(ctx, "", filter)
	} else {
		out, err = o.Reader.MarketClasses(ctx, o.Namespace, filter, marketplace.InCatalogNamespace(o.CatalogNamespace))
	}
	if err != nil && len(out) > 0 {
		fmt.Fprintf(o.Streams.ErrOut, "Warning: %v\n", err)
		err = nil
	}
	return out, err
}

// RunClasses lists classes.
func (o *Options) RunClasses(ctx context.Context) error {
	all, err := o.classes(ctx, "")
	if err != nil {
		return err
	}
	var items []v1alpha1.ServiceClass
	matched := map[*v1alpha1.ServiceClass]bool{}
	for _, n := range o.Names {
		m := marketplace.MatchClasses(all, n)
		if len(m) == 0 {
			return marketplace.ClassNotFound(n, o.lookupNamespace(), all)
		}
		for _, c := range m {
			matched[c] = true
		}
	}
	for _, c := range all {
		if len(o.Names) == 0 || matched[c] {
			items = append(items, *c)
		}
	}
	if err := printers.SortItems(&o.List, items, func(c *v1alpha1.ServiceClass) runtime.Object { return c }); err != nil {
		return err
	}
	if !o.Output.IsTable() {
		return o.Output.PrintObject(&v1alpha1.ServiceClassList{Items: items}, o.Streams.Out)
	}
	if len(items) == 0 {
		o.noneFound(o.Streams.ErrOut, "classes")
		return nil
	}
	return printers.ClassTable(o.List.Out(o.Streams.Out), items, o.AllNamespaces, o.Output.IsWide(), o.Now())
}

// NewCmdGetPlans returns "get plans". runF, when not nil, is called with the
// completed options instead of RunPlans.
func NewCmdGetPlans(f *cmdutil.Factory, runF func(*Options) error) *cobra.Command {
	o := newOptions(f)
	cmd := &cobra.Command{
		Use:     "plans [CLASS/PLAN | PLAN...]",
		Aliases: []string{"plan", "pl"},
		Short:   "List service plans",
		Long: cmdutil.LongDesc(`
			List the plans of the classes visible from the current namespace, including
			plans the broker no longer offers (status Removed). Name plans as CLASS/PLAN,
			or as PLAN together with --class. With -o json|yaml the class records
			holding the plans are printed, with only the selected plans.`),
		Example: cmdutil.Examples(`
			# List every plan
			kubectl catalog get plans

			# The plans of one class
			kubectl catalog get plans -c postgres

			# One plan, with its id
			kubectl catalog get plans postgres/small -o wide`),
	}
	cmd.RunE = runE(f, o, runF, o.RunPlans)
	cmd.Flags().BoolVarP(&o.AllNamespaces, "all-namespaces", "A", false, "List the plans of every namespace.")
	cmd.Flags().StringVarP(&o.Broker, "broker", "b", "", "Only the plans of this broker's classes.")
	cmd.Flags().StringVarP(&o.Class, "class", "c", "", "Only the plans of this class.")
	cmd.ValidArgsFunction = complete.Each(complete.Plans(f))
	o.List.AddFlags(cmd, "plans")
	o.Output.AddFlags(cmd)
	return cmd
}

// RunPlans lists plans.
func (o *Options) RunPlans(ctx context.Context) error {
	all, err := o.classes(ctx, "")
	if err != nil {
		return err
	}
	classes := all
	if o.Class != "" {
		if classes = marketplace.MatchClasses(all, o.Class); len(classes) == 0 {
			return marketplace.ClassNotFound(o.Class, o.lookupNamespace(), all)
		}
	}
	var rows []printers.PlanRow
	var list v1alpha1.ServiceClassList
	found := map[string]bool{}
	for _, c := range classes {
		kept := c.DeepCopy()
		kept.Spec.Plans = nil
		for i := range c.Spec.Plans {
			p := &c.Spec.Plans[i]
			match := len(o.Names) == 0
			for _, n := range o.Names {
				if marketplace.MatchPlanIn(c, p, n) {
					found[n], match = true, true
				}
			}
			if match {
				rows = append(rows, printers.PlanRow{Class: c, Plan: p})
				kept.Spec.Plans = append(kept.Spec.Plans, *p)
			}
		}
		if len(kept.Spec.Plans) > 0 {
			list.Items = append(list.Items, *kept)
		}
	}
	for _, n := range o.Names {
		if !found[n] {
			return marketplace.PlanNotFoundAmong(n, o.lookupNamespace(), classes)
		}
	}
	if !o.Output.IsTable() {
		if err := printers.SortItems(&o.List, list.Items, func(c *v1alpha1.ServiceClass) runtime.Object { return c }); err != nil {
			return err
		}
		return o.Output.PrintObject(&list, o.Streams.Out)
	}
	// A plan's row sorts as its class record holding only that plan.
	if err := printers.SortItems(&o.List, rows, func(r *printers.PlanRow) runtime.Object { return r.Record() }); err != nil {
		return err
	}
	if len(rows) == 0 {
		o.noneFound(o.Streams.ErrOut, "plans")
		return nil
	}
	return printers.PlanTable(o.List.Out(o.Streams.Out), rows, o.AllNamespaces, o.Output.IsWide())
}
