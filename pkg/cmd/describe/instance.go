package describe

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/ahead"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/lifecycle"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/recordevents"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil/complete"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/graph"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/hint"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/printers"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/records"
)

// InstanceOptions are the options of "describe instance".
type InstanceOptions struct {
	record
}

// NewCmdDescribeInstance returns "describe instance". runF, when not nil, is called
// with the completed options instead of Run.
func NewCmdDescribeInstance(f *cmdutil.Factory, runF func(*InstanceOptions) error) *cobra.Command {
	o := &InstanceOptions{record: record{Streams: safeStreams(f.IOStreams)}}
	return &cobra.Command{
		Use:     "instance NAME",
		Aliases: []string{"instances", "inst"},
		Short:   "Show a service instance in detail",
		Long: cmdutil.LongDesc(`
			Show a service instance: its status and conditions with their reasons,
			the operation in flight and its progress, retries, the dashboard URL,
			its bindings and its parameters (values from Secrets are not shown).
			What the spec asks for and the broker does not hold (after a refused
			update, say) is listed with the requested and the applied values.

			Then who consumes it: the namespaces it is shared with, its limits and,
			under "Used by", each binding's Secret with the workloads whose Pod
			templates use it, as "kubectl catalog graph" finds them. It ends with
			the Events recorded about the instance, newest last.`),
		Example: cmdutil.Examples(`
			# Describe instance db
			kubectl catalog describe instance db`),
		Args:              lifecycle.ExactlyOneName,
		ValidArgsFunction: complete.First(complete.Instances(f)),
		RunE:              cmdutil.RunENamed(f, &o.Name, o, runF),
	}
}

// Run describes the instance.
func (o *InstanceOptions) Run(ctx context.Context) error {
	// What needs only the name goes out with the instance's read (the bindings of
	// every namespace included); what needs the record (its class, when the plan the
	// broker holds is not the spec's) right after it.
	var events *recordevents.Pending
	if o.factory != nil {
		events = recordevents.Ahead(ctx, o.factory, o.Namespace, records.ConfigMapName(v1alpha1.KindServiceInstance, o.Name))
	}
	listed := ahead.Start(ctx, func() ([]*v1alpha1.ServiceBinding, error) {
		return o.Reader.Bindings().List(ctx, o.Namespace, records.Filter{Instance: o.Name})
	})
	consumersOfRecord := o.Reader.ConsumersAhead(ctx, o.Namespace, o.Name)
	inst, err := o.Reader.Instances().Get(ctx, o.Namespace, o.Name)
	if err != nil {
		return err
	}
	consumers := ahead.Start(ctx, func() (consumersOf, error) {
		bs, unseen, err := consumersOfRecord(inst)
		return consumersOf{bs, unseen}, err
	})
	// The class names the plan the broker holds when it is not the spec's; nothing
	// else shown needs it.
	var class *v1alpha1.ServiceClass
	if !inst.IsUserProvided() && appliedPlanDiffers(inst) {
		if class, err = o.Reader.Classes().Get(ctx, lifecycle.BrokerNamespace(inst, o.CatalogNamespace), v1alpha1.ClassRecordName(inst.Spec.BrokerName, inst.Spec.ClassID)); err != nil {
			class = nil
		}
	}
	bindings, _ := listed.Wait()
	var names []string
	for _, b := range bindings {
		names = append(names, b.Name)
	}
	out := o.Streams.Out
	fmt.Fprint(out, InstanceView(inst, class, names, o.Now()))
	if inst.IsUserProvided() {
		fmt.Fprint(out, describeCredentials(ctx, o.Reader, inst))
	}
	c, _ := consumers.Wait()
	others := c.bindings
	fmt.Fprint(out, DescribeConsumers(inst, bindings, others, c.unseen))
	if all := slices.Concat(bindings, others); len(all) > 0 {
		if err := o.usedBy(ctx, inst, all); err != nil {
			return err
		}
	}
	if events != nil {
		events.Section(inst.UID)
	}
	return nil
}

// consumersOf are the bindings other namespaces hold of an instance, and the namespaces
// that could not be read.
type consumersOf struct {
	bindings []*v1alpha1.ServiceBinding
	unseen   []string
}

// usedBy writes who uses the bindings' Secrets; the rest of the description stands
// without it, so a failure to find out is a warning.
func (o *InstanceOptions) usedBy(ctx context.Context, inst *v1alpha1.ServiceInstance, bindings []*v1alpha1.ServiceBinding) error {
	var g *graph.Graph
	err := fmt.Errorf("internal error: no client to read the workloads with")
	if o.factory != nil {
		var core kubernetes.Interface
		if core, err = o.factory.KubernetesClient(); err == nil {
			g, err = graph.ForInstance(ctx, core, inst, bindings)
		}
	}
	if err != nil {
		fmt.Fprintf(o.Streams.ErrOut, "Warning: cannot show what uses the bindings: %v\n", err)
		return nil
	}
	return graph.UsedBy(o.Streams.Out, g, graph.NodeID(graph.KindInstance, inst.Namespace, inst.Name))
}

// InstanceView renders an instance for humans; class (nil when unknown) names its plans.
func InstanceView(i *v1alpha1.ServiceInstance, class *v1alpha1.ServiceClass, bindings []string, now time.Time) string {
	var b strings.Builder
	kv := func(k, v string) {
		if v != "" {
			fmt.Fprintf(&b, "%-18s%s\n", k+":", v)
		}
	}
	ago := func(t time.Time) string { return duration.HumanDuration(now.Sub(t)) + " ago" }
	kv("Name", i.Name)
	kv("Namespace", i.Namespace)
	kv("Status", printers.InstanceStatus(i))
	if up := i.Spec.UserProvided; up != nil {
		kv("User-provided", "yes (no broker; bindings get a copy of the credentials)")
		kv("Credentials", fmt.Sprintf("Secret %s (revision %d)", up.CredentialsSecret, up.Revision))
	}
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
	d := driverOf(i, now)
	if l := d.claim; l != nil {
		kv("Claimed by", fmt.Sprintf("%s until %s", l.Holder, l.ExpiresAt.Format(time.RFC3339)))
	}
	refusal(&b, "instance", i.Namespace, &i.Status.OperationStatus)
	describeWork(&b, &i.Status.OperationStatus, false, d, func(t time.Time) string { return t.Format(time.RFC3339) }, now)
	if rows := notApplied(i, class); len(rows) > 0 {
		title := "Not applied yet (the broker holds the applied values):"
		if meta.IsStatusConditionTrue(i.Status.Conditions, v1alpha1.ConditionUpdateFailed) {
			title = fmt.Sprintf(`Not applied (the update was refused; %s goes back to the applied values):`, hint.Quoted(i.Namespace, "update", i.Name, "--revert"))
		}
		b.WriteString(title + "\n")
		t := printers.NewTable(&b, "  FIELD", "REQUESTED", "APPLIED")
		for _, r := range rows {
			t.Append("  "+r[0], r[1], r[2])
		}
		_ = t.Render()
	}
	if i.Spec.Parameters != nil && len(i.Spec.Parameters.Raw) > 0 {
		fmt.Fprintf(&b, "Parameters:\n  %s\n", string(compactJSON(i.Spec.Parameters.Raw)))
	}
	for _, src := range i.Spec.ParametersFrom {
		if r := src.SecretKeyRef; r != nil {
			fmt.Fprintf(&b, "  from Secret %s: <redacted>\n", secretRef(r))
		}
	}
	sort.Strings(bindings)
	if len(bindings) > 0 {
		kv("Bindings", strings.Join(bindings, ", "))
	} else {
		kv("Bindings", "none")
	}
	kv("Rebind on update", rebindPolicy(i.Spec.RebindOnUpdate))
	if r := i.Status.Rebind; r != nil {
		describeRebind(&b, r)
	}
	return b.String()
}

// rebindPolicy says which updates rotate the instance's bindings ("": never set).
func rebindPolicy(p v1alpha1.RebindPolicy) string {
	switch p {
	case v1alpha1.RebindAlways:
		return "always (each settled update rotates every binding)"
	case v1alpha1.RebindPlanChange:
		return "plan-change (a settled update to another plan rotates every binding)"
	case v1alpha1.RebindNever:
		return "never"
	}
	return string(p)
}

// describeRebind shows the rotation of the instance's bindings under way after an
// update: why, the binding rotated now, and those done.
func describeRebind(b *strings.Builder, r *v1alpha1.RebindStatus) {
	fmt.Fprintf(b, "Rebinding:\n  %-16s%s\n", "Why:", r.Reason)
	if c := r.Current; c != nil {
		fmt.Fprintf(b, "  %-16s%s/%s (replacing binding id %s)\n", "Now:", c.Namespace, c.Name, c.FromID)
	} else {
		fmt.Fprintf(b, "  %-16s%s\n", "Now:", "waiting for the update to settle")
	}
	for _, l := range []struct {
		name  string
		names []string
	}{{"Rotated:", r.Rotated}, {"Failed:", r.Failed}, {"Gone:", r.Gone}} {
		if len(l.names) > 0 {
			fmt.Fprintf(b, "  %-16s%s\n", l.name, strings.Join(l.names, ", "))
		}
	}
}

// externalID is the OSB instance id in use at the broker, saying so when it is not the
// spec's (a provision again after orphan mitigation uses a new id).
func externalID(i *v1alpha1.ServiceInstance) string {
	return idInUse(i.CurrentExternalID(), i.Spec.ExternalID)
}

// idInUse is the OSB id cur in use, saying so when it is not the spec's.
func idInUse(cur, spec string) string {
	if cur == spec {
		return cur
	}
	return fmt.Sprintf("%s (the spec's %s is no longer used)", cur, spec)
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

// appliedPlanDiffers reports whether notApplied lists the plan: the broker holds
// another plan than the spec's (the only row that names a plan from the class).
func appliedPlanDiffers(i *v1alpha1.ServiceInstance) bool {
	prov := i.Status.Provisioned
	return prov != nil && i.DeletionTimestamp == nil && i.Spec.PlanID != prov.PlanID
}

// notApplied lists what the spec asks for that the broker does not hold (FIELD,
// REQUESTED, APPLIED): the plan, the maintenance version, each inline parameter whose
// hash differs from the one status.provisioned keeps, and the parameter Secrets named.
// Values from Secrets are never shown.
func notApplied(i *v1alpha1.ServiceInstance, class *v1alpha1.ServiceClass) [][3]string {
	prov := i.Status.Provisioned
	if prov == nil || i.DeletionTimestamp != nil {
		return nil
	}
	var rows [][3]string
	if appliedPlanDiffers(i) {
		applied := "id " + prov.PlanID
		if class != nil {
			if p := class.PlanByID(prov.PlanID); p != nil {
				applied = p.ExternalName
			}
		}
		rows = append(rows, [3]string{"plan", i.Spec.PlanExternalName, applied})
	}
	if mi := i.Spec.MaintenanceInfoVersion; mi != "" && mi != prov.MaintenanceInfoVersion {
		rows = append(rows, [3]string{"maintenance", mi, none(prov.MaintenanceInfoVersion)})
	}
	want, err := engine.InlineParameterHashes(i.Spec.Parameters)
	if err != nil || prov.ParameterHashes == nil && prov.Parameters == nil {
		return rows
	}
	// "touch" drops the hashes, and an update those of the unchanged parameters it sends
	// again: the recorded values tell what the broker holds.
	held := maps.Clone(prov.ParameterHashes)
	if prov.Parameters != nil {
		applied, err := engine.InlineParameterHashes(prov.Parameters.Inline)
		if err != nil {
			return rows
		}
		if held == nil {
			held = map[string]string{}
		}
		for k, h := range applied {
			if _, ok := held[k]; !ok {
				held[k] = h
			}
		}
	}
	requested := jsonObject(i.Spec.Parameters)
	var applied map[string]json.RawMessage
	if prov.Parameters != nil {
		applied = jsonObject(prov.Parameters.Inline)
	}
	keys := map[string]bool{}
	for k := range want {
		keys[k] = true
	}
	for k := range held {
		keys[k] = true
	}
	for _, k := range sortedKeys(keys) {
		if want[k] == held[k] {
			continue
		}
		a := "<none>"
		switch {
		case applied != nil && applied[k] != nil:
			a = shortJSON(applied[k])
		case held[k] != "":
			a = "(not recorded)"
		}
		r := "<none>"
		if requested[k] != nil {
			r = shortJSON(requested[k])
		}
		rows = append(rows, [3]string{"parameters." + k, r, a})
	}
	if prov.Parameters != nil && !sameRefs(i.Spec.ParametersFrom, prov.Parameters.From) {
		rows = append(rows, [3]string{"parametersFrom", secretRefs(i.Spec.ParametersFrom), secretRefs(prov.Parameters.From)})
	}
	return rows
}

func jsonObject(r *runtime.RawExtension) map[string]json.RawMessage {
	out := map[string]json.RawMessage{}
	if r != nil && len(r.Raw) > 0 {
		_ = json.Unmarshal(r.Raw, &out)
	}
	return out
}

// shortJSON is a parameter's value on one line, cut to keep the table readable.
func shortJSON(v json.RawMessage) string {
	s := string(compactJSON(v))
	if len(s) > 40 {
		s = s[:37] + "..."
	}
	return s
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func sameRefs(a, b []v1alpha1.ParametersFromSource) bool {
	return secretRefs(a) == secretRefs(b)
}

func secretRefs(from []v1alpha1.ParametersFromSource) string {
	var refs []string
	for _, s := range from {
		if r := s.SecretKeyRef; r != nil {
			refs = append(refs, secretRef(r))
		}
	}
	return none(strings.Join(refs, ", "))
}

// secretRef names a parameters Secret as --params-from-secret takes it: SECRET or
// SECRET/KEY.
func secretRef(r *v1alpha1.SecretKeyReference) string {
	if r.Key == "" {
		return r.Name
	}
	return r.Name + "/" + r.Key
}

func none(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}

// describeCredentials names the keys of a user-provided instance's credentials, never
// their values, or says why they cannot be shown.
func describeCredentials(ctx context.Context, r *records.Reader, inst *v1alpha1.ServiceInstance) string {
	name := inst.Spec.UserProvided.CredentialsSecret
	s, err := r.OwnedSecret(ctx, inst, name)
	switch {
	case err == nil:
		keys := make([]string, 0, len(s.Data))
		for k := range s.Data {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		return fmt.Sprintf("%-18s%s\n", "Credential keys:", strings.Join(keys, ", "))
	case records.IsNotOwned(err):
		return fmt.Sprintf("%-18s%s\n", "Credential keys:", "(Secret "+name+" is not the instance's: it is not read)")
	case records.IsNotFound(err):
		return fmt.Sprintf("%-18s%s\n", "Credential keys:", "(Secret "+name+" is missing)")
	default:
		return fmt.Sprintf("%-18s%s\n", "Credential keys:", "(cannot be read: "+err.Error()+")")
	}
}
