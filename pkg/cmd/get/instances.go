package get

import (
	"context"
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
	"github.com/kubectl-catalog/kubectl-catalog/pkg/printers"
)

// InstancesOptions are the options of "get instances".
type InstancesOptions struct {
	RecordListOptions
	Class string
	Plan  string
}

// NewCmdGetInstances returns "get instances". runF, when not nil, is called with the
// completed options instead of Run.
func NewCmdGetInstances(f *cmdutil.Factory, runF func(*InstancesOptions) error) *cobra.Command {
	o := &InstancesOptions{RecordListOptions: newRecordListOptions(f)}
	cmd := &cobra.Command{
		Use:     "instances [NAME...]",
		Aliases: []string{"instance", "inst"},
		Short:   "List service instances",
		Long: cmdutil.LongDesc(`
			List service instances with their class, plan and status.

			With -w (--watch), after the list it prints a row, with the same columns,
			each time an instance changes or is deleted, until interrupted;
			--watch-only prints only the changes. With -o json|yaml it prints one
			object per change.`),
		Example: cmdutil.Examples(`
			# List the instances of the current namespace
			kubectl catalog get instances

			# List the postgresql instances of every namespace
			kubectl catalog get inst -A --class postgresql

			# List the instances, then print a row each time one changes (Ctrl-C ends it)
			kubectl catalog get instances -w`),
		ValidArgsFunction: complete.Each(complete.Instances(f)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.Validate(); err != nil {
				return err
			}
			if err := o.Complete(f, args); err != nil {
				return err
			}
			if runF != nil {
				return runF(o)
			}
			return o.Run(cmd.Context())
		},
	}
	cmd.Flags().BoolVarP(&o.AllNamespaces, "all-namespaces", "A", false, "List instances of every namespace.")
	cmd.Flags().StringVar(&o.Class, "class", "", "Only instances of this class.")
	cmd.Flags().StringVar(&o.Plan, "plan", "", "Only instances of this plan.")
	complete.Register(cmd, "plan", complete.Plans(f))
	o.Watch.AddFlags(cmd.Flags(), "instances")
	o.List.AddWatchedFlags(cmd, "instances")
	o.Output.AddFlags(cmd)
	return cmd
}

func (o *InstancesOptions) filter() engine.Filter {
	return engine.Filter{Class: o.Class, Plan: o.Plan, Selector: o.List.LabelSelector()}
}

// Run lists the instances, or watches them with -w.
func (o *InstancesOptions) Run(ctx context.Context) error {
	if o.Watch.On() {
		return o.watch(ctx)
	}
	items, missing, err := listInstances(ctx, o.Reader, o.Namespace, o.filter(), o.Names)
	if err != nil {
		return err
	}
	if err := printers.SortItems(&o.List, items, func(i *v1alpha1.ServiceInstance) runtime.Object { return i }); err != nil {
		return err
	}
	if !o.Output.IsTable() {
		if err := o.Output.PrintObject(&v1alpha1.ServiceInstanceList{Items: items}, o.Streams.Out); err != nil {
			return err
		}
		return missing
	}
	if len(items) == 0 {
		if missing != nil {
			return missing
		}
		where := fmt.Sprintf("in namespace %q", o.Namespace)
		if o.AllNamespaces {
			where = "in any namespace"
		}
		fmt.Fprintf(o.Streams.ErrOut, "No instances found %s.\n", where)
		return nil
	}
	if err := printers.InstanceTable(o.List.Out(o.Streams.Out), items, o.AllNamespaces, o.Output.IsWide(), o.Now()); err != nil {
		return err
	}
	return missing
}

// watch lists the instances get would list, then prints each change.
func (o *InstancesOptions) watch(ctx context.Context) error {
	if o.core == nil {
		return fmt.Errorf("internal error: no client to watch with")
	}
	sel, err := engine.Selector(v1alpha1.KindServiceInstance, o.filter())
	if err != nil {
		return err
	}
	want := map[string]bool{}
	for _, n := range o.Names {
		want[n] = true
	}
	return watchrecords.Watch(ctx, o.core, []watchrecords.Source{{Namespace: o.Namespace, Selector: sel}}, watchrecords.Printing[*v1alpha1.ServiceInstance]{
		Out: o.List.Out(o.Streams.Out), Output: o.Output, List: &o.List, WatchOnly: o.Watch.WatchOnly,
		Keep: func(i *v1alpha1.ServiceInstance) bool { return len(want) == 0 || want[i.Name] },
		Table: func(w io.Writer, items []*v1alpha1.ServiceInstance) error {
			vals := make([]v1alpha1.ServiceInstance, len(items))
			for i, x := range items {
				vals[i] = *x
			}
			return printers.InstanceTable(w, vals, o.AllNamespaces, o.Output.IsWide(), o.Now())
		},
	}, nil)
}

// listInstances returns the instances get prints: all, or those names names; missing
// names the names that matched none (nil when all did).
func listInstances(ctx context.Context, r *engine.Reader, ns string, filter engine.Filter, names []string) (items []v1alpha1.ServiceInstance, missing, err error) {
	list, err := r.Instances().List(ctx, ns, filter)
	if err != nil && len(list) == 0 {
		return nil, nil, err
	}
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	found := map[string]bool{}
	var known []string
	for _, i := range list {
		known = append(known, i.Name)
		if len(want) == 0 || want[i.Name] {
			found[i.Name] = true
			items = append(items, *i)
		}
	}
	return items, allMissing("instance", names, found, known), nil
}

// RecordListOptions are the options "get instances" and "get bindings" share.
type RecordListOptions struct {
	Names         []string
	AllNamespaces bool
	Output        *printers.OutputFlags
	List          printers.ListFlags
	Watch         watchrecords.Flags

	// Namespace is the namespace listed, "" with -A.
	Namespace string
	Reader    *engine.Reader
	Streams   cmdutil.IOStreams
	Now       func() time.Time

	core kubernetes.Interface // to watch with
}

func newRecordListOptions(f *cmdutil.Factory) RecordListOptions {
	return RecordListOptions{Streams: f.IOStreams, Output: printers.NewOutputFlags(true), Now: f.Now}
}

// Validate checks the flags without any I/O; it changes nothing.
func (o *RecordListOptions) Validate() error {
	if err := o.Output.Validate(); err != nil {
		return err
	}
	return validateList(o.List)
}

// Complete builds the reader (and the client to watch with) and finds the namespace.
func (o *RecordListOptions) Complete(f *cmdutil.Factory, args []string) error {
	o.Names = args
	if err := o.List.Validate(); err != nil {
		return err
	}
	r, ns, err := f.ReaderIn()
	if err != nil {
		return err
	}
	if o.AllNamespaces {
		ns = ""
	}
	o.Namespace, o.Reader = ns, r
	if o.Watch.On() {
		if o.core, err = f.KubernetesClient(); err != nil {
			return err
		}
	}
	return nil
}
