package get

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/watchrecords"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil/complete"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/iostreams"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/printers"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/records"
)

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
` + watchHelp("a broker")),
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
	if o.watcher == nil {
		return fmt.Errorf("internal error: no client to watch with")
	}
	sel, err := records.Selector(v1alpha1.KindBroker, records.Filter{Selector: o.List.LabelSelector()})
	if err != nil {
		return err
	}
	var sources []watchrecords.Source
	for _, ns := range o.namespaces() {
		sources = append(sources, watchrecords.Source{Namespace: ns, Selector: sel, Optional: ns == o.CatalogNamespace && !o.AllNamespaces})
	}
	return watchrecords.Watch(ctx, o.watcher, sources, watchrecords.Printing[*v1alpha1.Broker]{
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
		fmt.Fprintf(o.Streams.ErrOut, "Warning: not allowed to list cluster brokers: %s\n", iostreams.SafeText(err.Error()))
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
		bs, err := o.Reader.Brokers().List(ctx, ns, records.Filter{Selector: o.List.LabelSelector()})
		if err != nil && len(bs) == 0 {
			if records.IsForbidden(err) && ns == o.CatalogNamespace && !o.AllNamespaces {
				fmt.Fprintf(o.Streams.ErrOut, "Warning: not allowed to list cluster brokers: %s\n", iostreams.SafeText(err.Error()))
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
		return o.Output.PrintRecords(printers.Objects(items), len(o.Names) == 1, o.Streams.Out)
	}
	if len(items) == 0 {
		o.noneFound(o.Streams.ErrOut, "brokers")
		return nil
	}
	return printers.BrokerTable(o.List.Out(o.Streams.Out), items, o.AllNamespaces, o.Output.IsWide(), o.Now())
}
