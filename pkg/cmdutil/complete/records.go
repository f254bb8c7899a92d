package complete

import (
	"context"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/marketplace"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/records"
)

// Instances completes the names of the instances in the command's namespace.
func Instances(f *cmdutil.Factory) cobra.CompletionFunc {
	return run(f, func(ctx context.Context, c *call) ([]string, error) {
		r, ns, err := c.f.ReaderIn()
		if err != nil {
			return nil, err
		}
		items, err := r.Instances().List(ctx, ns, records.Filter{})
		if len(items) == 0 {
			return nil, err
		}
		var out []string
		for _, i := range items {
			out = append(out, i.Name+"\t"+describe(i.Spec.ClassExternalName, i.Spec.PlanExternalName))
		}
		return out, nil
	})
}

// Bindings completes the names of the bindings in the command's namespace; of the
// instance in --instance, or given as the first argument when instanceArg, when there is
// one.
func Bindings(f *cmdutil.Factory, instanceArg bool) cobra.CompletionFunc {
	return run(f, func(ctx context.Context, c *call) ([]string, error) {
		r, ns, err := c.f.ReaderIn()
		if err != nil {
			return nil, err
		}
		filter := records.Filter{Instance: c.flag("instance")}
		if filter.Instance == "" && instanceArg && len(c.args) > 0 {
			filter.Instance = c.args[0]
		}
		items, err := r.Bindings().List(ctx, ns, filter)
		if len(items) == 0 {
			return nil, err
		}
		var out []string
		for _, b := range items {
			_, inst := b.InstanceRef()
			out = append(out, b.Name+"\tinstance "+inst)
		}
		return out, nil
	})
}

// Records completes the arguments of "wait": TYPE/NAME of the instances and bindings
// in the command's namespace (instance/ and binding/ first), or the names of the TYPE
// given as the first argument without a slash.
func Records(f *cmdutil.Factory) cobra.CompletionFunc {
	instances, bindings := Instances(f), Bindings(f, false)
	names := func(kind string) cobra.CompletionFunc {
		switch strings.ToLower(kind) {
		case "instance", "instances", "inst", "serviceinstance", "serviceinstances":
			return instances
		case "binding", "bindings", "bnd", "servicebinding", "servicebindings":
			return bindings
		}
		return nil
	}
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) > 0 && !strings.Contains(args[0], "/") {
			fn := names(args[0])
			if fn == nil {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			return Each(fn)(cmd, args[1:], toComplete)
		}
		kind, name, ok := strings.Cut(toComplete, "/")
		if !ok {
			return matching([]string{"instance/", "binding/"}, toComplete), cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace
		}
		fn := names(kind)
		if fn == nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		candidates, directive := fn(cmd, nil, name)
		var out []string
		for _, c := range candidates {
			if !slices.Contains(args, kind+"/"+strings.SplitN(c, "\t", 2)[0]) {
				out = append(out, kind+"/"+c)
			}
		}
		return out, directive
	}
}

// Brokers completes the names of the brokers the command's namespace sees: its own and
// the cluster-scoped ones.
func Brokers(f *cmdutil.Factory) cobra.CompletionFunc {
	return run(f, func(ctx context.Context, c *call) ([]string, error) {
		r, ns, err := c.f.ReaderIn()
		if err != nil {
			return nil, err
		}
		var out []string
		var firstErr error
		for _, n := range []string{ns, f.CatalogNamespace} {
			bs, err := r.Brokers().List(ctx, n, records.Filter{})
			if err != nil && firstErr == nil {
				firstErr = err
			}
			for _, b := range bs {
				out = append(out, b.Name+"\t"+string(b.Spec.Scope)+" broker")
			}
		}
		if len(out) == 0 {
			return nil, firstErr
		}
		return out, nil
	})
}

// offerings lists what the namespace may provision, of the broker in --broker and of
// class when given.
func offerings(ctx context.Context, c *call, broker, class string) ([]marketplace.Offering, error) {
	r, ns, err := c.f.ReaderIn()
	if err != nil {
		return nil, err
	}
	offers, err := r.Offerings(ctx, ns, marketplace.Filter{Broker: broker, Class: class}, marketplace.InCatalogNamespace(c.f.CatalogNamespace))
	if len(offers) == 0 {
		return nil, err
	}
	return offers, nil
}

// Classes completes the names of the classes the command's namespace may use (access
// rules applied), of the broker in --broker when the command has it set.
func Classes(f *cmdutil.Factory) cobra.CompletionFunc {
	return run(f, func(ctx context.Context, c *call) ([]string, error) {
		offers, err := offerings(ctx, c, c.flag("broker"), "")
		if err != nil {
			return nil, err
		}
		var out []string
		for _, o := range offers {
			out = append(out, o.Class.Spec.ExternalName+"\t"+firstLine(o.Class.Spec.Description))
		}
		return out, nil
	})
}

// Plans completes plan names: of the class in --class when the command has it set, or
// else CLASS/PLAN of every class the namespace may use.
func Plans(f *cmdutil.Factory) cobra.CompletionFunc {
	return run(f, func(ctx context.Context, c *call) ([]string, error) {
		return plans(ctx, c, c.flag("broker"), c.flag("class"))
	})
}

func plans(ctx context.Context, c *call, broker, class string) ([]string, error) {
	offers, err := offerings(ctx, c, broker, class)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, o := range offers {
		for _, p := range o.Plans {
			name := p.ExternalName
			if class == "" {
				name = o.Class.Spec.ExternalName + "/" + name
			}
			out = append(out, name+"\t"+firstLine(p.Description))
		}
	}
	return out, nil
}

// ClassOrPlan completes CLASS, or CLASS/PLAN once a slash is typed.
func ClassOrPlan(f *cmdutil.Factory) cobra.CompletionFunc {
	classes, plans := Classes(f), Plans(f)
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if strings.Contains(toComplete, "/") || cmd.Flags().Changed("class") {
			return plans(cmd, args, toComplete)
		}
		return classes(cmd, args, toComplete)
	}
}

// PlansOfInstance completes the plans of the class of the instance named by the first
// argument: update's --plan.
func PlansOfInstance(f *cmdutil.Factory) cobra.CompletionFunc {
	return run(f, func(ctx context.Context, c *call) ([]string, error) {
		if len(c.args) == 0 {
			return nil, nil
		}
		r, ns, err := c.f.ReaderIn()
		if err != nil {
			return nil, err
		}
		inst, err := r.Instances().Get(ctx, ns, c.args[0])
		if err != nil {
			return nil, err
		}
		if inst.Spec.ClassExternalName == "" {
			return nil, nil
		}
		out, err := plans(ctx, c, inst.Spec.BrokerName, inst.Spec.ClassExternalName)
		if err != nil {
			return nil, err
		}
		for i, p := range out {
			if name, _, _ := strings.Cut(p, "\t"); name == inst.Spec.PlanExternalName {
				out[i] = name + "\tthe current plan"
			}
		}
		return out, nil
	})
}
