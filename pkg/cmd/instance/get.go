package instance

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/printers"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// NewCmdGetInstances returns "get instances".
func NewCmdGetInstances(f *cmdutil.Factory) *cobra.Command {
	var all bool
	var class, plan string
	out := printers.NewOutputFlags(true)
	cmd := &cobra.Command{
		Use:     "instances [NAME...]",
		Aliases: []string{"instance", "inst"},
		Short:   "List service instances",
		Long:    cmdutil.LongDesc(`List service instances with their class, plan and status.`),
		Example: cmdutil.Examples(`
			# List the instances of the current namespace
			kubectl catalog get instances

			# List the postgresql instances of every namespace
			kubectl catalog get inst -A --class postgresql`),
		ValidArgsFunction: CompleteInstances(f),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := out.Validate(); err != nil {
				return err
			}
			st, err := f.Store()
			if err != nil {
				return err
			}
			ns, _, err := f.Namespace()
			if err != nil {
				return err
			}
			if all {
				ns = ""
			}
			items, err := listInstances(cmd.Context(), st, ns, class, plan, args)
			if err != nil {
				return err
			}
			if !out.IsTable() {
				return out.PrintObject(&v1alpha1.ServiceInstanceList{Items: items}, f.Out)
			}
			if len(items) == 0 {
				where := fmt.Sprintf("in namespace %q", ns)
				if all {
					where = "in any namespace"
				}
				fmt.Fprintf(f.ErrOut, "No instances found %s.\n", where)
				return nil
			}
			headers := []string{"NAME", "CLASS", "PLAN", "STATUS", "AGE"}
			if all {
				headers = append([]string{"NAMESPACE"}, headers...)
			}
			if out.IsWide() {
				headers = append(headers, "BROKER", "EXTERNAL ID")
			}
			t := printers.NewTable(f.Out, headers...)
			for _, i := range items {
				row := []string{i.Name, i.Spec.ClassExternalName, i.Spec.PlanExternalName, Status(&i), duration.HumanDuration(f.Now().Sub(i.CreationTimestamp.Time))}
				if all {
					row = append([]string{i.Namespace}, row...)
				}
				if out.IsWide() {
					row = append(row, i.Spec.BrokerName, i.CurrentExternalID())
				}
				t.Append(row...)
			}
			return t.Render()
		},
	}
	cmd.Flags().BoolVarP(&all, "all-namespaces", "A", false, "List instances of every namespace.")
	cmd.Flags().StringVar(&class, "class", "", "Only instances of this class.")
	cmd.Flags().StringVar(&plan, "plan", "", "Only instances of this plan.")
	out.AddFlags(cmd)
	return cmd
}

func listInstances(ctx context.Context, st *store.Store, ns, class, plan string, names []string) ([]v1alpha1.ServiceInstance, error) {
	list, err := st.Instances().List(ctx, ns, store.Filter{Class: class, Plan: plan})
	if err != nil && len(list) == 0 {
		return nil, err
	}
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	var items []v1alpha1.ServiceInstance
	for _, i := range list {
		if len(want) == 0 || want[i.Name] {
			items = append(items, *i)
		}
	}
	return items, nil
}

// Status is the STATUS column: the phase, or Deleting, with the reason when not Ready.
func Status(i *v1alpha1.ServiceInstance) string {
	phase := string(i.Status.Phase)
	if phase == "" {
		phase = string(v1alpha1.PhasePending)
	}
	if i.DeletionTimestamp != nil && i.Status.Phase != v1alpha1.PhaseDeprovisioning {
		phase = "Deleting"
	}
	if c := meta.FindStatusCondition(i.Status.Conditions, v1alpha1.ConditionReady); c != nil && c.Status != "True" {
		return phase + " (" + c.Reason + ")"
	}
	return phase
}

// NewCmdDescribeInstance returns "describe instance".
func NewCmdDescribeInstance(f *cmdutil.Factory) *cobra.Command {
	return &cobra.Command{
		Use:     "instance NAME",
		Aliases: []string{"instances", "inst"},
		Short:   "Show a service instance in detail",
		Long: cmdutil.LongDesc(`
			Show a service instance: its status and conditions with their reasons,
			the operation in flight and its progress, retries, the dashboard URL,
			its bindings and its parameters (values from Secrets are not shown).`),
		Example: cmdutil.Examples(`
			# Describe instance db
			kubectl catalog describe instance db`),
		Args:              ExactlyOneName,
		ValidArgsFunction: CompleteInstances(f),
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := f.Store()
			if err != nil {
				return err
			}
			ns, _, err := f.Namespace()
			if err != nil {
				return err
			}
			inst, err := st.Instances().Get(cmd.Context(), ns, args[0])
			if err != nil {
				return err
			}
			bindings, _ := st.Bindings().List(cmd.Context(), ns, store.Filter{Instance: inst.Name})
			var names []string
			for _, b := range bindings {
				names = append(names, b.Name)
			}
			fmt.Fprint(f.Out, Describe(inst, names, f.Now()))
			return nil
		},
	}
}

// Describe renders an instance for humans.
func Describe(i *v1alpha1.ServiceInstance, bindings []string, now time.Time) string {
	var b strings.Builder
	kv := func(k, v string) {
		if v != "" {
			fmt.Fprintf(&b, "%-18s%s\n", k+":", v)
		}
	}
	ago := func(t time.Time) string { return duration.HumanDuration(now.Sub(t)) + " ago" }
	kv("Name", i.Name)
	kv("Namespace", i.Namespace)
	kv("Status", Status(i))
	kv("Class", i.Spec.ClassExternalName)
	kv("Plan", i.Spec.PlanExternalName)
	kv("Broker", i.Spec.BrokerName)
	kv("External ID", externalID(i))
	kv("Earlier IDs", earlierIDs(i.Status.ExternalIDs, i.CurrentExternalID()))
	if i.DeletionTimestamp != nil {
		kv("Deletion", "requested "+ago(i.DeletionTimestamp.Time))
	}
	if p := i.Status.Provisioned; p != nil {
		kv("Dashboard URL", p.DashboardURL)
		kv("Maintenance", p.MaintenanceInfoVersion)
	}
	if i.Status.Usable != nil && !*i.Status.Usable {
		kv("Usable", "no (the broker says so after a failed operation)")
	}
	if l, ok := store.LeaseOf(i); ok && l.Live(now) {
		kv("Claimed by", fmt.Sprintf("%s until %s", l.Holder, l.ExpiresAt.Format(time.RFC3339)))
	}
	if op := i.Status.InFlight; op != nil {
		b.WriteString("Operation in flight:\n")
		fmt.Fprintf(&b, "  %s since %s (%s)\n", op.Type, op.StartedAt.Format(time.RFC3339), ago(op.StartedAt.Time))
		if op.Async {
			fmt.Fprintf(&b, "  asynchronous, operation %q\n", op.OperationKey)
		} else {
			b.WriteString("  request sent or about to be; it is re-sent identically if interrupted\n")
		}
		if op.LastDescription != "" {
			fmt.Fprintf(&b, "  progress: %s\n", op.LastDescription)
		}
		if op.NextPollAt != nil {
			fmt.Fprintf(&b, "  next poll: %s\n", op.NextPollAt.Format(time.RFC3339))
		}
		if op.PollDeadline != nil {
			fmt.Fprintf(&b, "  gives up at: %s\n", op.PollDeadline.Format(time.RFC3339))
		}
	}
	if r := i.Status.Retry; r != nil {
		b.WriteString("Retry:\n")
		fmt.Fprintf(&b, "  attempts: %d\n  reason: %s\n", r.Attempts, r.Reason)
		if r.LastError != "" {
			fmt.Fprintf(&b, "  last error: %s\n", r.LastError)
		}
		if r.NextRetryAt != nil {
			fmt.Fprintf(&b, "  next retry: %s\n", r.NextRetryAt.Format(time.RFC3339))
		}
	}
	if om := i.Status.OrphanMitigation; om != nil {
		fmt.Fprintf(&b, "Orphan mitigation:\n  %s: %s (since %s)\n", om.Reason, om.Message, om.StartedAt.Format(time.RFC3339))
	}
	if len(i.Status.Conditions) > 0 {
		b.WriteString("Conditions:\n")
		t := printers.NewTable(&b, "  TYPE", "STATUS", "REASON", "AGE", "MESSAGE")
		for _, c := range i.Status.Conditions {
			t.Append("  "+c.Type, string(c.Status), c.Reason, duration.HumanDuration(now.Sub(c.LastTransitionTime.Time)), c.Message)
		}
		_ = t.Render()
	}
	if i.Spec.Parameters != nil && len(i.Spec.Parameters.Raw) > 0 {
		fmt.Fprintf(&b, "Parameters:\n  %s\n", string(compactJSON(i.Spec.Parameters.Raw)))
	}
	for _, src := range i.Spec.ParametersFrom {
		if r := src.SecretKeyRef; r != nil {
			ref := r.Name
			if r.Key != "" {
				ref += "/" + r.Key
			}
			fmt.Fprintf(&b, "  from Secret %s: <redacted>\n", ref)
		}
	}
	sort.Strings(bindings)
	if len(bindings) > 0 {
		kv("Bindings", strings.Join(bindings, ", "))
	} else {
		kv("Bindings", "none")
	}
	return b.String()
}

// externalID is the OSB instance id in use at the broker, saying so when it is not the
// spec's (a provision again after orphan mitigation uses a new id).
func externalID(i *v1alpha1.ServiceInstance) string {
	cur := i.CurrentExternalID()
	if cur == i.Spec.ExternalID {
		return cur
	}
	return fmt.Sprintf("%s (the spec's %s is no longer used)", cur, i.Spec.ExternalID)
}

// earlierIDs are the OSB ids of earlier attempts the broker may still hold: each is
// deleted there before the record goes.
func earlierIDs(ids []string, current string) string {
	var out []string
	for _, id := range ids {
		if id != current {
			out = append(out, id)
		}
	}
	if len(out) == 0 {
		return ""
	}
	return strings.Join(out, ", ") + " (the broker may still hold them; deleted there before the record goes)"
}
