package describe

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil/complete"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/marketplace"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/printers"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/records"
)

func newPlanTable(w io.Writer) *printers.Table {
	return printers.NewTable(w, "PLAN", "FREE", "BINDABLE", "STATUS", "DESCRIPTION")
}

// NewCmdDescribePlan returns "describe plan". runF, when not nil, is called with the
// completed options instead of RunPlan.
func NewCmdDescribePlan(f *cmdutil.Factory, runF func(*Options) error) *cobra.Command {
	cmd, o := newCmd(f, "plan CLASS/PLAN", "Show a plan's details and parameters", `
		Show a service plan: its class and broker, OSB id, whether it is free and
		bindable, its costs and maintenance version, and the parameters its JSON
		schemas accept for provisioning, updating and binding, as tables of name,
		type, default, allowed values, whether it is required, and description.
		--show-schemas prints the schemas as the broker sent them. Name the plan as
		CLASS/PLAN, or as PLAN with --class.`, `
		# Describe plan small of class postgres
		kubectl catalog describe plan postgres/small

		# The same, with the raw JSON schemas
		kubectl catalog describe plan small --class postgres --show-schemas`, []string{"plans", "pl"}, runF, (*Options).RunPlan)
	cmd.Flags().StringVarP(&o.Class, "class", "c", "", "Class of the plan, when the plan is named alone.")
	cmd.Flags().BoolVar(&o.ShowSchemas, "show-schemas", false, "Print the plan's JSON schemas as the broker sent them.")
	cmd.ValidArgsFunction = complete.First(complete.Plans(f))
	return cmd
}

// RunPlan describes a plan.
func (o *Options) RunPlan(ctx context.Context) error {
	className, planName := o.Class, o.Name
	if className == "" {
		c, p, ok := cutLast(o.Name)
		if !ok {
			return cmdutil.UsageErrorf("name the plan as CLASS/PLAN, or give its class with --class")
		}
		className, planName = c, p
	}
	c, err := o.findClass(ctx, className)
	if err != nil {
		return err
	}
	p, err := marketplace.FindPlan(c, planName, o.Namespace)
	if err != nil {
		return err
	}
	schemas, err := o.Reader.PlanSchemas().Get(ctx, c.Namespace, c.Name)
	if err != nil && !records.IsNotFound(err) {
		return fmt.Errorf("cannot read the schemas of plan %q: %w", p.ExternalName, err)
	}
	var ps *v1alpha1.PlanSchemas
	if schemas != nil {
		ps = schemas.ForPlan(p.ID)
	}
	rules, err := o.Reader.AccessRules(ctx, marketplace.InCatalogNamespace(o.CatalogNamespace))
	if err != nil {
		return err
	}
	return PlanView(o.Streams.Out, c, p, ps, rules.PlanVisible(o.Namespace, c, p.ID), o.ShowSchemas)
}

// cutLast splits "CLASS/PLAN" (or "BROKER/CLASS/PLAN") at its last slash.
func cutLast(s string) (string, string, bool) {
	i := strings.LastIndex(s, "/")
	if i <= 0 || i == len(s)-1 {
		return "", "", false
	}
	return s[:i], s[i+1:], true
}

// PlanView writes the describe view of a plan.
func PlanView(w io.Writer, c *v1alpha1.ServiceClass, p *v1alpha1.ServicePlan, ps *v1alpha1.PlanSchemas, visible, raw bool) error {
	k := kv{w, 18}
	k.line("Name", p.ExternalName)
	k.line("Description", orNone(p.Description))
	k.line("Class", c.Spec.ExternalName)
	k.line("Broker", fmt.Sprintf("%s (%s scope)", c.Spec.BrokerName, strings.ToLower(string(c.Spec.Scope))))
	k.line("ID", p.ID)
	status := "Active"
	switch {
	case c.PlanRemoved(p.ID):
		status = "Removed (the broker no longer offers it)"
	case !visible:
		status = "Disabled in this namespace"
	}
	k.line("Status", status)
	k.line("Free", printers.YesNo(p.Free))
	k.line("Bindable", printers.YesNo(c.EffectiveBindable(p)))
	k.line("Plan updateable", printers.YesNo(c.EffectivePlanUpdateable(p)))
	if p.BindingRotatable {
		k.line("Rotatable", "yes")
	}
	if mi := p.MaintenanceInfo; mi != nil {
		k.line("Maintenance", strings.TrimSpace(mi.Version+" "+mi.Description))
	}
	if d := p.MaximumPollingDuration; d != nil {
		k.line("Max polling", d.Duration.String())
	}
	if md := p.Metadata; md != nil {
		if md.DisplayName != "" {
			k.line("Display name", md.DisplayName)
		}
		for _, cost := range md.Costs {
			var amounts []string
			for cur, amt := range cost.Amount {
				amounts = append(amounts, fmt.Sprintf("%g %s", amt, strings.ToUpper(cur)))
			}
			k.line("Cost", strings.Join(sortedStrings(amounts), ", ")+" "+strings.ToLower(cost.Unit))
		}
		for _, b := range md.Bullets {
			k.line("Feature", b)
		}
	}
	sections := []struct {
		title string
		raw   func(*v1alpha1.PlanSchemas) *runtime.RawExtension
	}{
		{"Provision parameters", func(s *v1alpha1.PlanSchemas) *runtime.RawExtension { return s.InstanceCreate }},
		{"Update parameters", func(s *v1alpha1.PlanSchemas) *runtime.RawExtension { return s.InstanceUpdate }},
		{"Bind parameters", func(s *v1alpha1.PlanSchemas) *runtime.RawExtension { return s.BindingCreate }},
	}
	for _, sec := range sections {
		var r *runtime.RawExtension
		if ps != nil {
			r = sec.raw(ps)
		}
		if r == nil || len(r.Raw) == 0 {
			fmt.Fprintf(w, "%s: <no schema>\n", sec.title)
			continue
		}
		fmt.Fprintf(w, "%s:\n", sec.title)
		if raw {
			var v any
			if err := json.Unmarshal(r.Raw, &v); err != nil {
				return err
			}
			b, _ := json.MarshalIndent(v, "  ", "  ")
			fmt.Fprintf(w, "  %s\n", b)
			continue
		}
		if err := SchemaTable(w, "  ", r.Raw); err != nil {
			fmt.Fprintf(w, "  <unreadable schema: %v; see --show-schemas>\n", err)
		}
	}
	return nil
}

func sortedStrings(s []string) []string {
	out := append([]string(nil), s...)
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j] < out[j-1]; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}
