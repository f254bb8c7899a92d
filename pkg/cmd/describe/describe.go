// Package describe implements "kubectl catalog describe" and its subcommands: broker,
// class, plan (plan.go, schema.go), instance and binding (consumers.go: an instance's
// consumers in other namespaces).
package describe

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/marketplace"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/printers"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/records"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/recordevents"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil/complete"
)

// NewCmdDescribe returns the describe command with the broker, class and plan
// subcommands. Add others with AddCommand.
func NewCmdDescribe(f *cmdutil.Factory) *cobra.Command {
	return cmdutil.Group(&cobra.Command{
		Use:   "describe",
		Short: "Show the details of a broker, class, plan or other record",
		Long:  "Show the details of one record in a readable form. Use \"kubectl catalog get ... -o yaml\" for the raw record.",
		Example: cmdutil.Examples(`
			# Describe a broker, then the parameters of a plan
			kubectl catalog describe broker acme
			kubectl catalog describe plan postgres/small`),
	}, NewCmdDescribeBroker(f, nil), NewCmdDescribeClass(f, nil), NewCmdDescribePlan(f, nil))
}

// Options are what describe broker, class and plan share.
type Options struct {
	Name        string
	Scope       string
	Broker      string
	Class       string
	ShowSchemas bool

	Namespace        string
	CatalogNamespace string
	Reader           *records.Reader
	Streams          cmdutil.IOStreams
	Now              func() time.Time

	factory *cmdutil.Factory
}

// Validate checks the arguments without any I/O; it changes nothing.
func (o *Options) Validate() error {
	if o.Name == "" {
		return cmdutil.UsageErrorf("a name is required")
	}
	_, err := cmdutil.ParseScope(o.Scope)
	return err
}

// Complete builds the reader and finds the namespaces.
func (o *Options) Complete(f *cmdutil.Factory) error {
	ns, err := f.UserNamespace()
	if err != nil {
		return err
	}
	r, err := f.Reader()
	if err != nil {
		return err
	}
	o.Namespace, o.CatalogNamespace, o.Reader, o.Now, o.factory = ns, f.CatalogNamespace, r, f.Now, f
	return nil
}

// newCmd builds a describe subcommand that validates and completes its options, then
// calls runF with them when not nil (tests check the parsed flags that way), else run.
func newCmd(f *cmdutil.Factory, use, short, long, example string, aliases []string, runF func(*Options) error, run func(*Options, context.Context) error) (*cobra.Command, *Options) {
	o := &Options{Streams: safeStreams(f.IOStreams)}
	cmd := &cobra.Command{
		Use: use, Short: short, Long: cmdutil.LongDesc(long), Example: cmdutil.Examples(example), Aliases: aliases,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Name = args[0]
			return cmdutil.RunCommandWith(cmd.Context(), f, o, runF, func(ctx context.Context) error { return run(o, ctx) })
		},
	}
	return cmd, o
}

// NewCmdDescribeBroker returns "describe broker". runF, when not nil, is called with the
// completed options instead of RunBroker.
func NewCmdDescribeBroker(f *cmdutil.Factory, runF func(*Options) error) *cobra.Command {
	cmd, o := newCmd(f, "broker NAME", "Show a broker's details", `
		Show a broker: where it is, how it authenticates (never the credentials), its
		restrictions, the last catalog fetch and its error, its classes, and the
		Events recorded about it, newest last.`, `
		# Describe broker acme
		kubectl catalog describe broker acme`, []string{"brokers", "brk"}, runF, (*Options).RunBroker)
	cmd.ValidArgsFunction = complete.First(complete.Brokers(f))
	cmdutil.AddScopeFlag(cmd, &o.Scope)
	return cmd
}

// kv writes aligned "Key:  value" lines.
type kv struct {
	w     io.Writer
	width int
}

func (k kv) line(key, value string) {
	fmt.Fprintf(k.w, "%-*s %s\n", k.width, key+":", value)
}

func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}

func timeOrNever(t interface{ IsZero() bool }, s string) string {
	if t.IsZero() {
		return "<never>"
	}
	return s
}

// RunBroker describes a broker.
func (o *Options) RunBroker(ctx context.Context) error {
	scope, _ := cmdutil.ParseScope(o.Scope)
	b, err := o.Reader.FindBroker(ctx, o.CatalogNamespace, o.Namespace, o.Name, scope)
	if err != nil {
		return err
	}
	classes, err := o.Reader.Classes().List(ctx, b.Namespace, records.Filter{Broker: b.Name})
	if err != nil && len(classes) == 0 {
		return err
	}
	if err := BrokerView(o.Streams.Out, b, classes, o.Now()); err != nil {
		return err
	}
	if o.factory != nil {
		recordevents.Section(ctx, o.factory, b.Namespace, records.ConfigMapName(v1alpha1.KindBroker, b.Name), b.UID)
	}
	return nil
}

// BrokerView writes the describe view of a broker.
func BrokerView(w io.Writer, b *v1alpha1.Broker, classes []*v1alpha1.ServiceClass, now time.Time) error {
	k := kv{w, 18}
	k.line("Name", b.Name)
	k.line("Namespace", b.Namespace)
	k.line("Scope", string(b.Spec.Scope))
	k.line("URL", b.Spec.URL)
	k.line("Status", printers.BrokerStatus(b))
	auth := "<none>"
	if a := b.Spec.Auth; a != nil {
		auth = fmt.Sprintf("%s, from secret %q", a.Type, a.SecretRef.Name)
	}
	k.line("Authentication", auth)
	tlsInfo := "system roots"
	switch {
	case b.Spec.InsecureSkipTLSVerify:
		tlsInfo = "NOT VERIFIED (--insecure-skip-tls-verify)"
	case b.Spec.CABundle != "":
		tlsInfo = fmt.Sprintf("CA bundle (%d certificates)", strings.Count(b.Spec.CABundle, "BEGIN CERTIFICATE"))
	}
	if strings.HasPrefix(b.Spec.URL, "https://") {
		k.line("TLS", tlsInfo)
	}
	relist := "on request (kubectl catalog sync broker " + b.Name + ")"
	if ri := b.Spec.RelistInterval; ri != nil && ri.Duration > 0 {
		relist = "every " + ri.Duration.String()
	}
	k.line("Relist", relist)
	if r := b.Spec.CatalogRestrictions; r != nil {
		k.line("Class rules", orNone(strings.Join(r.ServiceClass, "; ")))
		k.line("Plan rules", orNone(strings.Join(r.ServicePlan, "; ")))
	}
	last := "<never>"
	if t := b.Status.LastCatalogFetch; t != nil {
		last = t.UTC().Format(time.RFC3339) + " (" + printers.Age(t.Time, now) + " ago)"
	}
	k.line("Last fetch", last)
	if b.Status.LastCatalogError != "" {
		k.line("Last error", b.Status.LastCatalogError)
	}
	if r := b.Status.Retry; r != nil && r.NextRetryAt != nil {
		k.line("Next retry", fmt.Sprintf("%s (attempt %d failed: %s)", r.NextRetryAt.UTC().Format(time.RFC3339), r.Attempts, r.Reason))
	}
	k.line("Offered", fmt.Sprintf("%s, %s", printers.Plural(int(b.Status.ClassCount), "class", "classes"),
		printers.Plural(int(b.Status.PlanCount), "plan", "plans")))
	if len(classes) == 0 {
		fmt.Fprintln(w, "Classes:           <none>")
		return nil
	}
	fmt.Fprintln(w, "Classes:")
	items := make([]v1alpha1.ServiceClass, len(classes))
	for i, c := range classes {
		items[i] = *c
	}
	var buf bytes.Buffer
	if err := printers.ClassTable(&buf, items, false, false, now); err != nil {
		return err
	}
	for _, l := range strings.Split(strings.TrimRight(buf.String(), "\n"), "\n") {
		fmt.Fprintln(w, strings.TrimRight("  "+l, " "))
	}
	return nil
}

// NewCmdDescribeClass returns "describe class". runF, when not nil, is called with the
// completed options instead of RunClass.
func NewCmdDescribeClass(f *cmdutil.Factory, runF func(*Options) error) *cobra.Command {
	cmd, _ := newCmd(f, "class NAME", "Show a class's details and plans", `
		Show a service class: its broker, OSB id, description, tags, what it requires,
		and its plans. NAME is the class's name, BROKER/NAME when several brokers offer
		that name, its record name or its OSB id.`, `
		# Describe class postgres
		kubectl catalog describe class postgres

		# The class of that name offered by broker acme
		kubectl catalog describe class acme/postgres`, []string{"classes", "cl"}, runF, (*Options).RunClass)
	cmd.ValidArgsFunction = complete.First(complete.Classes(f))
	return cmd
}

// findClass finds a class by the names Resolve accepts, but also removed and disabled
// ones: describe shows them with their status.
func (o *Options) findClass(ctx context.Context, name string) (*v1alpha1.ServiceClass, error) {
	var brokerName string
	if b, _, ok := strings.Cut(name, "/"); ok {
		brokerName = b
	}
	all, err := o.Reader.MarketClasses(ctx, o.Namespace, records.Filter{Broker: brokerName}, marketplace.InCatalogNamespace(o.CatalogNamespace))
	if err != nil && len(all) == 0 {
		return nil, err
	}
	return marketplace.FindClass(all, name, o.Namespace)
}

// RunClass describes a class.
func (o *Options) RunClass(ctx context.Context) error {
	c, err := o.findClass(ctx, o.Name)
	if err != nil {
		return err
	}
	rules, err := o.Reader.AccessRules(ctx, marketplace.InCatalogNamespace(o.CatalogNamespace))
	if err != nil {
		return err
	}
	return ClassView(o.Streams.Out, c, rules, o.Namespace)
}

// ClassView writes the describe view of a class as seen from namespace.
func ClassView(w io.Writer, c *v1alpha1.ServiceClass, rules marketplace.Rules, namespace string) error {
	k := kv{w, 18}
	k.line("Name", c.Spec.ExternalName)
	k.line("Description", orNone(c.Spec.Description))
	k.line("Broker", fmt.Sprintf("%s (%s scope)", c.Spec.BrokerName, strings.ToLower(string(c.Spec.Scope))))
	k.line("ID", c.Spec.ID)
	k.line("Record", c.Namespace+"/"+c.Name)
	k.line("Status", printers.ClassStatus(c))
	k.line("Bindable", printers.YesNo(c.Spec.Bindable))
	k.line("Plan updateable", printers.YesNo(c.Spec.PlanUpdateable))
	k.line("Tags", orNone(strings.Join(c.Spec.Tags, ", ")))
	if len(c.Spec.Requires) > 0 {
		k.line("Requires", strings.Join(c.Spec.Requires, ", "))
	}
	if c.Spec.Metadata != nil && len(c.Spec.Metadata.Raw) > 0 {
		var md map[string]any
		if json.Unmarshal(c.Spec.Metadata.Raw, &md) == nil {
			for _, key := range []string{"displayName", "longDescription", "providerDisplayName", "documentationUrl", "supportUrl"} {
				if s, ok := md[key].(string); ok && s != "" {
					k.line(key, s)
				}
			}
		}
	}
	fmt.Fprintln(w, "Plans:")
	var buf bytes.Buffer
	t := newPlanTable(&buf)
	for i := range c.Spec.Plans {
		p := &c.Spec.Plans[i]
		status := "Active"
		switch {
		case c.PlanRemoved(p.ID):
			status = "Removed"
		case !rules.PlanVisible(namespace, c, p.ID):
			status = "Disabled here"
		}
		t.Append(p.ExternalName, printers.FreeOrPaid(p), printers.YesNo(c.EffectiveBindable(p)), status, printers.Truncate(p.Description, 60))
	}
	if err := t.Render(); err != nil {
		return err
	}
	for _, l := range strings.Split(strings.TrimRight(buf.String(), "\n"), "\n") {
		fmt.Fprintln(w, strings.TrimRight("  "+l, " "))
	}
	return nil
}
