package describe

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/recordevents"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil/complete"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/printers"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/records"
)

// BindingOptions are the options of "describe binding".
type BindingOptions struct {
	record
	ShowSecrets bool
}

// NewCmdDescribeBinding returns "describe binding". runF, when not nil, is called with
// the completed options instead of Run.
func NewCmdDescribeBinding(f *cmdutil.Factory, runF func(*BindingOptions) error) *cobra.Command {
	o := &BindingOptions{record: record{Streams: safeStreams(f.IOStreams)}}
	cmd := &cobra.Command{
		Use:     "binding NAME",
		Aliases: []string{"bindings", "bnd"},
		Short:   "Show a service binding in detail",
		Long: cmdutil.LongDesc(`
			Show a service binding: its status and conditions with their reasons,
			the operation in flight, retries, what the broker returned (endpoints,
			syslog drain, route service, volume mounts, expiry), the credentials
			Secret with the length of each value, the workloads it is projected
			into, and its parameters (values from Secrets are not shown). It ends
			with the Events recorded about the binding, newest last.

			Credential values are shown only with --show-secrets.`),
		Example: cmdutil.Examples(`
			# Describe binding db
			kubectl catalog describe binding db

			# Include the credential values
			kubectl catalog describe binding db --show-secrets`),
		Args:              exactlyOneBinding,
		ValidArgsFunction: complete.First(complete.Bindings(f, false)),
		RunE:              cmdutil.RunENamed(f, &o.Name, o, runF),
	}
	cmd.Flags().BoolVar(&o.ShowSecrets, "show-secrets", false, "Show the credential values, not only their lengths.")
	return cmd
}

// Run describes the binding.
func (o *BindingOptions) Run(ctx context.Context) error {
	// The Events go out with the binding's read.
	var events *recordevents.Pending
	if o.factory != nil {
		events = recordevents.Ahead(ctx, o.factory, o.Namespace, records.ConfigMapName(v1alpha1.KindServiceBinding, o.Name))
	}
	b, err := o.Reader.Bindings().Get(ctx, o.Namespace, o.Name)
	if err != nil {
		return err
	}
	var secret *corev1.Secret
	var secretErr error
	if name := printers.BindingSecretName(b); name != "" && b.Status.Secret != nil {
		secret, secretErr = o.Reader.Secret(ctx, o.Namespace, name)
		if secretErr == nil && !records.OwnedBy(secret, b) {
			secret, secretErr = nil, fmt.Errorf("Secret %q is not owned by this binding", name)
		}
	}
	fmt.Fprint(o.Streams.Out, BindingView(b, SecretView{Secret: secret, Err: secretErr, Show: o.ShowSecrets}, o.Now()))
	if events != nil {
		events.Section(b.UID)
	}
	return nil
}

func exactlyOneBinding(cmd *cobra.Command, args []string) error {
	switch {
	case len(args) == 1 && args[0] != "":
		return nil
	case len(args) == 1:
		return cmdutil.UsageErrorf("the binding name must not be empty: see %q", cmd.CommandPath()+" --help")
	case len(args) == 0:
		return cmdutil.UsageErrorf("%s needs the binding's NAME: see %q", cmd.CommandPath(), cmd.CommandPath()+" --help")
	}
	return cmdutil.UsageErrorf("%s takes one NAME, got %d arguments (%s): see %q", cmd.CommandPath(), len(args), strings.Join(args, " "), cmd.CommandPath()+" --help")
}

// SecretView is what describe shows of the credentials Secret.
type SecretView struct {
	// Secret is the Secret as read; nil when it was not read.
	Secret *corev1.Secret
	// Err is why it could not be read.
	Err error
	// Show prints the values; otherwise only their lengths.
	Show bool
}

// BindingView renders a binding for humans.
func BindingView(b *v1alpha1.ServiceBinding, sv SecretView, now time.Time) string {
	var out strings.Builder
	kv := func(k, v string) {
		if v != "" {
			fmt.Fprintf(&out, "%-18s%s\n", k+":", v)
		}
	}
	ago := func(t time.Time) string { return duration.HumanDuration(now.Sub(t)) + " ago" }
	ts := func(t time.Time) string { return t.UTC().Format(time.RFC3339) }
	kv("Name", b.Name)
	kv("Namespace", b.Namespace)
	kv("Status", printers.BindingStatus(b, now))
	kv("Instance", printers.BindingInstance(b))
	kv("Binding ID", bindingID(b))
	if p := b.RotatedFrom(); p != nil {
		kv("Rotated from", p.ExternalID)
	}
	if len(b.Status.Retired) > 0 {
		kv("To unbind", strings.Join(b.Status.Retired, ", ")+" (replaced by a rotation)")
	}
	var earlier []string
	for _, id := range b.Status.ExternalIDs {
		if id != b.CurrentExternalID() && !slices.Contains(b.Status.Retired, id) {
			earlier = append(earlier, id)
		}
	}
	if len(earlier) > 0 {
		kv("Earlier IDs", strings.Join(earlier, ", ")+" (the broker may still hold them; unbound there before the record goes)")
	}
	if b.DeletionTimestamp != nil {
		kv("Deletion", "requested "+ago(b.DeletionTimestamp.Time))
	}
	d := driverOf(b, now)
	if l := d.claim; l != nil {
		kv("Claimed by", fmt.Sprintf("%s until %s", l.Holder, ts(l.ExpiresAt)))
	}
	refusal(&out, "binding", b.Namespace, &b.Status.OperationStatus)
	describeWork(&out, &b.Status.OperationStatus, true, d, ts, now)
	describeBound(&out, b, ts, now)
	describeSecret(&out, b, sv, ts)
	describeProjections(&out, b)
	if b.Spec.Parameters != nil && len(b.Spec.Parameters.Raw) > 0 {
		fmt.Fprintf(&out, "Parameters:\n  %s\n", compactJSON(b.Spec.Parameters.Raw))
	}
	for _, src := range b.Spec.ParametersFrom {
		if r := src.SecretKeyRef; r != nil {
			if b.Spec.Parameters == nil {
				out.WriteString("Parameters:\n")
			}
			fmt.Fprintf(&out, "  from Secret %s: <redacted>\n", secretRef(r))
		}
	}
	if len(b.Spec.SecretTransforms) > 0 {
		out.WriteString("Secret transforms:\n")
		for _, t := range b.Spec.SecretTransforms {
			fmt.Fprintf(&out, "  %s\n", transformText(t))
		}
	}
	return out.String()
}

func describeSecret(out *strings.Builder, b *v1alpha1.ServiceBinding, sv SecretView, ts func(time.Time) string) {
	name := printers.BindingSecretName(b)
	switch {
	case b.Status.Secret == nil:
		fmt.Fprintf(out, "Secret:\n  %s (not written yet)\n", name)
		return
	case sv.Err != nil:
		fmt.Fprintf(out, "Secret:\n  %s (written %s; cannot be read now: %v)\n", name, ts(b.Status.Secret.WrittenAt.Time), sv.Err)
		return
	case sv.Secret == nil:
		fmt.Fprintf(out, "Secret:\n  %s (written %s), keys: %s\n", name, ts(b.Status.Secret.WrittenAt.Time), strings.Join(b.Status.Secret.Keys, ", "))
		return
	}
	fmt.Fprintf(out, "Secret:\n  %s (written %s)\n", name, ts(b.Status.Secret.WrittenAt.Time))
	keys := make([]string, 0, len(sv.Secret.Data))
	for k := range sv.Secret.Data {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	t := printers.NewTable(out, "  KEY", "LENGTH")
	if sv.Show {
		t = printers.NewTable(out, "  KEY", "LENGTH", "VALUE")
	}
	for _, k := range keys {
		v := sv.Secret.Data[k]
		row := []string{"  " + k, fmt.Sprintf("%d bytes", len(v))}
		if sv.Show {
			row = append(row, showValue(v))
		}
		t.Append(row...)
	}
	_ = t.Render()
	if !sv.Show && len(keys) > 0 {
		out.WriteString("  (values hidden: use --show-secrets to show them)\n")
	}
}

// showValue prints a credential value as text, or quoted when it is not printable on
// one line.
func showValue(v []byte) string {
	s := string(v)
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return fmt.Sprintf("%q", s)
		}
	}
	return s
}

func describeProjections(out *strings.Builder, b *v1alpha1.ServiceBinding) {
	if len(b.Spec.Projections) == 0 && len(b.Status.Projected) == 0 {
		return
	}
	out.WriteString("Projections:\n")
	t := printers.NewTable(out, "  WORKLOAD", "AS", "APPLIED")
	as := func(p v1alpha1.WorkloadProjection) string {
		if p.Env {
			if p.EnvPrefix != "" {
				return "env, prefix " + p.EnvPrefix
			}
			return "env"
		}
		return "files, $SERVICE_BINDING_ROOT/" + b.Name
	}
	applied := func(p v1alpha1.WorkloadProjection) bool {
		for _, q := range b.Status.Projected {
			if q == p {
				return true
			}
		}
		return false
	}
	for _, p := range b.Spec.Projections {
		state := "no (pending)"
		if applied(p) {
			state = "yes"
		}
		t.Append("  "+printers.WorkloadName(p), as(p), state)
	}
	for _, p := range b.Status.Projected {
		found := false
		for _, q := range b.Spec.Projections {
			if q == p {
				found = true
			}
		}
		if !found {
			t.Append("  "+printers.WorkloadName(p), as(p), "yes (to be removed)")
		}
	}
	_ = t.Render()
}

// transformText is a transform as the flag that makes it; literal values are not shown.
func transformText(t v1alpha1.SecretTransform) string {
	switch {
	case t.RenameKey != nil:
		return fmt.Sprintf("rename key %s to %s", t.RenameKey.From, t.RenameKey.To)
	case t.AddKey != nil && t.AddKey.JSONPathExpression != nil:
		return fmt.Sprintf("add key %s from %s", t.AddKey.Key, *t.AddKey.JSONPathExpression)
	case t.AddKey != nil:
		return fmt.Sprintf("add key %s (literal value)", t.AddKey.Key)
	case t.AddKeysFrom != nil:
		return fmt.Sprintf("add the keys of Secret %s", t.AddKeysFrom.SecretRef.Name)
	case t.RemoveKey != nil:
		return fmt.Sprintf("remove key %s", t.RemoveKey.Key)
	}
	return "(empty transform)"
}

func compactJSON(b []byte) string {
	var out bytes.Buffer
	if err := json.Compact(&out, b); err != nil {
		return string(b)
	}
	return out.String()
}

// bindingID is the OSB binding id in use at the broker, saying so when it is not the
// spec's (a rotation, or a bind again after orphan mitigation, uses a new id).
func bindingID(b *v1alpha1.ServiceBinding) string {
	return idInUse(b.CurrentExternalID(), b.Spec.ExternalID)
}
