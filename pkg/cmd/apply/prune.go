package apply

import (
	"context"
	"fmt"
	"sort"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/declarative"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/records"
)

// PruneFlags are --prune, -l and --yes of apply.
type PruneFlags struct {
	Prune    bool
	Selector string
	Yes      bool
	selector labels.Selector
}

// AddFlags adds --prune, -l and --yes.
func (p *PruneFlags) AddFlags(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&p.Prune, "prune", false, "Unbind and deprovision the records of the applied namespaces that match -l and that the manifests no longer name.")
	cmd.Flags().StringVarP(&p.Selector, "selector", "l", "", "With --prune: the label selector of the records apply manages (e.g. app=shop).")
	cmd.Flags().BoolVarP(&p.Yes, "yes", "y", false, "With --prune: do not ask for confirmation (needed when not in a terminal). Also: become the author of what another person wrote into a record the manifest changes without asking.")
}

// validate checks the flags without I/O.
func (p *PruneFlags) validate() error {
	if !p.Prune {
		if p.Selector != "" {
			return usageErrorf("-l selects the records --prune may remove: give --prune too")
		}
		return nil
	}
	if p.Selector == "" {
		return usageErrorf("--prune needs -l SELECTOR: the labels of the records these manifests manage")
	}
	sel, err := labels.Parse(p.Selector)
	if err != nil {
		return usageErrorf("-l %q: %v", p.Selector, err)
	}
	if sel.Empty() {
		return usageErrorf("-l %q selects every record: name the labels of the records these manifests manage", p.Selector)
	}
	p.selector = sel
	return nil
}

// prunable lists the bindings, then the instances, of the namespaces of objs that match
// the selector and that objs do not name.
func (o *Options) prunable(ctx context.Context, objs []*declarative.Object) ([]*declarative.Object, error) {
	named := map[string]bool{}
	namespaces := map[string]bool{}
	for _, obj := range objs {
		named[obj.Kind+"/"+obj.Namespace+"/"+obj.Name] = true
		if obj.Kind != v1alpha1.KindBroker {
			namespaces[obj.Namespace] = true
		}
	}
	var nss []string
	for ns := range namespaces {
		nss = append(nss, ns)
	}
	sort.Strings(nss)
	filter := records.Filter{Selector: o.Prune.selector}
	var out []*declarative.Object
	add := func(kind, ns, name string) {
		if !named[kind+"/"+ns+"/"+name] {
			out = append(out, &declarative.Object{Kind: kind, Namespace: ns, Name: name, Doc: declarative.Document{File: "--prune"}})
		}
	}
	for _, ns := range nss {
		bs, err := o.reader.Bindings().List(ctx, ns, filter)
		if err != nil {
			return nil, err
		}
		for _, b := range bs {
			if b.DeletionTimestamp == nil {
				add(v1alpha1.KindServiceBinding, ns, b.Name)
			}
		}
	}
	for _, ns := range nss {
		is, err := o.reader.Instances().List(ctx, ns, filter)
		if err != nil {
			return nil, err
		}
		for _, i := range is {
			if i.DeletionTimestamp == nil {
				add(v1alpha1.KindServiceInstance, ns, i.Name)
			}
		}
	}
	return out, nil
}

// prune unbinds and deprovisions what prunable lists, as delete -f does.
func (o *Options) prune(ctx context.Context, objs []*declarative.Object) error {
	gone, err := o.prunable(ctx, objs)
	if err != nil || len(gone) == 0 {
		return err
	}
	d := &DeleteOptions{Options: *o, Yes: o.Prune.Yes}
	for _, obj := range gone {
		if o.DryRun.Enabled() {
			printName(o.Streams.Out, obj, "pruned"+dryRunSuffix(o.DryRun), o.Output.Format() == "name")
			continue
		}
		if err := d.deleteOne(ctx, obj); err != nil {
			return fmt.Errorf("--prune: %s %q: %w", obj.Kind, obj.Name, err)
		}
		printName(o.Streams.Out, obj, "pruned", o.Output.Format() == "name")
	}
	return nil
}
