// Package provision implements "kubectl catalog provision".
package provision

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/catalog"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/catalog/credentials"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/catalog/marketplace"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/lifecycle"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil/complete"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/printers"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/prompt"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

var provisionLong = cmdutil.LongDesc(`
	Provision a service instance of a class and plan from the marketplace.

	The instance is recorded first (a ConfigMap in the namespace), then the
	broker is asked to create it. A synchronous broker answers at once; an
	asynchronous one is followed with --wait, or later by "kubectl catalog
	reconcile". If the command is interrupted, the record stays pending and
	is finished with the same ids, so nothing is created twice.

	Parameters come from -p key=value (repeat a key for an array; values are
	typed by the plan's schema), --params-json, --params-file, and
	--params-from-secret (read for every new broker call, never copied into
	the record; a re-send of an interrupted call sends the values it first
	sent, kept meanwhile in a Secret the record owns). They are checked against the plan's JSON schema before
	anything is recorded. In a terminal, a missing class, plan or required
	parameter is asked for.

	With --user-provided, the instance is a service the catalog does not
	provision (a database another team runs, say): no broker is called. Its
	credentials come from --credentials-json, --credentials-file,
	--credentials-from-secret, or are asked for key by key without echo in a
	terminal (--credentials-keys); they are kept in a Secret owned by the
	instance's record (NAME-credentials), never in the record. Each binding
	of the instance gets a copy, with its transforms and projections; "kubectl
	catalog update NAME --credentials-..." changes them for every binding.`)

var provisionExample = cmdutil.Examples(`
	# Provision a PostgreSQL instance on the hobby plan
	kubectl catalog provision db --class postgresql --plan hobby -p storage_gb=5

	# Provision and wait until the broker has finished, for up to 10 minutes
	kubectl catalog provision db --class postgresql --plan standard --wait --timeout 10m

	# Allow at most 3 bindings of the instance, from every namespace together
	kubectl catalog provision db --class postgresql --plan hobby --max-bindings 3

	# A user-provided instance: credentials of a database the catalog does not manage
	kubectl catalog provision legacy-db --user-provided --credentials-file db.json

	# A user-provided instance whose password is typed in, unseen
	kubectl catalog provision legacy-db --user-provided --credentials-keys host,username,password

	# Show the instance record that would be written, without writing it or calling the broker
	kubectl catalog provision db --class postgresql --plan hobby --dry-run=client -o yaml

	# Take parameters from a file and a password from a Secret
	kubectl catalog provision db --class postgresql --plan hobby --params-file params.json --params-from-secret db-secrets/params`)

// Options are the options of provision.
type Options struct {
	Name       string
	Class      string
	Plan       string
	ExternalID string
	Params     lifecycle.ParamFlags
	Limits     lifecycle.LimitFlags
	Wait       lifecycle.WaitFlags
	Output     *printers.OutputFlags
	DryRun     cmdutil.DryRunStrategy

	UserProvided bool
	Credentials  lifecycle.CredentialFlags

	Namespace        string
	CatalogNamespace string
	Store            *store.Store
	Engine           *catalog.Engine
	Prompter         prompt.Prompter
	Streams          cmdutil.IOStreams
}

// NewCmdProvision returns the provision command.
func NewCmdProvision(f *cmdutil.Factory) *cobra.Command {
	o := &Options{Streams: f.IOStreams, Output: printers.NewOutputFlags(false)}
	cmd := &cobra.Command{
		Use:     "provision NAME --class CLASS [--plan PLAN] [-p key=value]... | provision NAME --user-provided --credentials-...",
		Short:   "Provision a service instance",
		Long:    provisionLong,
		Example: provisionExample,
		Args:    lifecycle.ExactlyOneName,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Name = args[0]
			if err := o.Limits.Validate(cmd.Flags()); err != nil {
				return err
			}
			if err := o.Validate(); err != nil {
				return err
			}
			if err := o.Complete(f); err != nil {
				return err
			}
			return o.Run(cmd.Context())
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.Class, "class", "", "The class (service) to provision, by name, BROKER/NAME or OSB id.")
	fs.StringVar(&o.Plan, "plan", "", "The plan; not needed when the class has one plan.")
	fs.StringVar(&o.ExternalID, "external-id", "", "The OSB instance id to use (default: a new UUID). A provision again after orphan mitigation uses a new one.")
	o.Params.AddFlags(fs)
	fs.BoolVar(&o.UserProvided, "user-provided", false, "A user-provided instance: no broker is called; bindings get a copy of the credentials given with --credentials-*.")
	o.Credentials.AddFlags(fs)
	o.Limits.AddFlags(fs)
	o.Wait.AddFlags(fs, "provision")
	o.Output.AddFlags(cmd)
	complete.Register(cmd, "plan", complete.Plans(f))
	cmdutil.AddDryRunFlag(cmd, &o.DryRun, "the instance record")
	return cmd
}

// Validate checks the flags without I/O.
func (o *Options) Validate() error {
	if err := o.Params.Validate(); err != nil {
		return err
	}
	if o.UserProvided {
		if o.Class != "" || o.Plan != "" || o.ExternalID != "" || o.Params.Given() || len(o.Params.FromSecret) > 0 {
			return cmdutil.UsageErrorf("--user-provided takes no --class, --plan, --external-id or parameters: no broker is called; give its credentials with --credentials-json, --credentials-file, --credentials-from-secret or --credentials-keys")
		}
		if o.Credentials.Sources() == 0 {
			return cmdutil.UsageErrorf("--user-provided needs its credentials: give --credentials-json, --credentials-file, --credentials-from-secret or --credentials-keys")
		}
		if err := o.Credentials.Validate(); err != nil {
			return err
		}
	} else if o.Credentials.Given() {
		return cmdutil.UsageErrorf("--credentials-*, --syslog-drain-url and --route-service-url are for a user-provided instance: add --user-provided")
	}
	if err := o.Wait.Validate(); err != nil {
		return err
	}
	if o.DryRun.Enabled() && o.Wait.Wait {
		return cmdutil.UsageErrorf("--dry-run and --wait cannot be used together: a dry run records nothing, so there is nothing to wait for")
	}
	return o.Output.Validate()
}

// Complete builds the clients.
func (o *Options) Complete(f *cmdutil.Factory) error {
	ns, _, err := f.Namespace()
	if err != nil {
		return err
	}
	o.Namespace, o.CatalogNamespace = ns, f.CatalogNamespace
	o.Engine, o.Store, err = lifecycle.NewEngine(f, o.Wait.Interval)
	if err != nil {
		return err
	}
	if o.Prompter == nil && o.Streams.CanPrompt() {
		o.Prompter = prompt.NewSurvey(o.Streams.In, o.Streams.Out, o.Streams.ErrOut)
	}
	return nil
}

// Run records the instance and drives it.
func (o *Options) Run(ctx context.Context) error {
	if _, err := o.Store.Instances().Get(ctx, o.Namespace, o.Name); err == nil {
		return fmt.Errorf(`instance %q already exists in namespace %q: see it with "kubectl catalog describe instance %s", or pick another name`, o.Name, o.Namespace, o.Name)
	} else if !store.IsNotFound(err) {
		return err
	}
	if o.UserProvided {
		return o.runUserProvided(ctx)
	}
	res, err := o.resolve(ctx)
	if err != nil {
		return err
	}
	var createSchema json.RawMessage
	if s, err := res.Schemas(ctx); err != nil {
		return err
	} else if s != nil && s.InstanceCreate != nil {
		createSchema = s.InstanceCreate.Raw
	}
	inline, err := o.Params.Inline(o.Streams.In, createSchema)
	if err != nil {
		return err
	}
	if err := o.askRequired(createSchema, inline); err != nil {
		return err
	}
	from, _ := lifecycle.ParseSecretRefs(o.Params.FromSecret)
	var raw []byte
	if len(inline) > 0 {
		raw, _ = json.Marshal(inline)
	}
	all, err := catalog.ResolveParameters(ctx, o.Namespace, rawExt(raw), from, func(ctx context.Context, ns, name string) (map[string][]byte, error) {
		s, err := o.Store.GetSecret(ctx, ns, name)
		if err != nil {
			return nil, err
		}
		return s.Data, nil
	})
	if err != nil {
		return err
	}
	if err := catalog.ValidateParameters(createSchema, all.JSON()); err != nil {
		return fmt.Errorf("instance %q not provisioned: %w (see the plan's schema with \"kubectl catalog describe plan %s/%s --show-schemas\")", o.Name, err, res.Class.Spec.ExternalName, res.Plan.ExternalName)
	}
	inst := catalog.NewInstance(o.Namespace, o.Name, res.Class, res.Plan, raw, from, o.ExternalID)
	o.Limits.Apply(&inst.Spec)
	if o.DryRun.Enabled() {
		return o.printDryRun(ctx, inst, fmt.Sprintf("instance %q of %s/%s would be provisioned in namespace %q", o.Name, res.Class.Spec.ExternalName, res.Plan.ExternalName, o.Namespace))
	}
	fmt.Fprintf(o.Streams.ErrOut, "Provisioning instance %q of %s/%s in namespace %q...\n", o.Name, res.Class.Spec.ExternalName, res.Plan.ExternalName, o.Namespace)
	if _, err := o.Store.Instances().Create(store.WithIntent(ctx), inst); err != nil {
		return err
	}
	r, err := lifecycle.Drive(ctx, o.Streams, o.Engine, o.Namespace, o.Name, "provision", o.Wait)
	if err != nil {
		return err
	}
	return lifecycle.Report(o.Streams, o.Output, r, o.Name, o.Namespace, "provision", o.Wait.Wait)
}

// printDryRun prints the instance record that would be created: for
// --dry-run=server, as the API server (validation and admission, the trust policy
// included) accepted it without storing it. No broker is called.
func (o *Options) printDryRun(ctx context.Context, inst *v1alpha1.ServiceInstance, what string) error {
	out := inst
	if o.DryRun == cmdutil.DryRunServer {
		created, err := o.Store.Instances().Create(store.WithIntent(o.DryRun.Context(ctx)), inst)
		if err != nil {
			return fmt.Errorf("instance %q would not be provisioned: %w", o.Name, err)
		}
		out = created
	}
	return printers.PrintDryRun(o.Streams, o.Output, o.DryRun, out, "created", what)
}

func rawExt(b []byte) *runtime.RawExtension {
	if len(b) == 0 {
		return nil
	}
	return &runtime.RawExtension{Raw: b}
}

// resolve finds the class and plan, asking for what is missing in a terminal.
func (o *Options) resolve(ctx context.Context) (*marketplace.Resolution, error) {
	opt := marketplace.InCatalogNamespace(o.CatalogNamespace)
	if o.Class == "" {
		if o.Prompter == nil {
			return nil, cmdutil.UsageErrorf(`--class is required: list the classes with "kubectl catalog marketplace"`)
		}
		classes, err := marketplace.ListClasses(ctx, o.Store, o.Namespace, store.Filter{}, opt)
		if err != nil {
			return nil, err
		}
		var names []string
		for _, c := range classes {
			if !c.Status.RemovedFromBroker {
				names = append(names, c.Spec.ExternalName)
			}
		}
		if len(names) == 0 {
			return nil, fmt.Errorf(`no class can be provisioned in namespace %q: register a broker with "kubectl catalog register"`, o.Namespace)
		}
		sort.Strings(names)
		if o.Class, err = o.Prompter.Select("Class:", names, ""); err != nil {
			return nil, err
		}
	}
	res, err := marketplace.Resolve(ctx, o.Store, o.Namespace, o.Class, o.Plan, opt)
	if err != nil {
		return nil, err
	}
	if res.Plan != nil {
		return res, nil
	}
	var plans []string
	for _, p := range res.Class.Spec.Plans {
		if !res.Class.PlanRemoved(p.ID) {
			plans = append(plans, p.ExternalName)
		}
	}
	switch {
	case len(plans) == 1:
		o.Plan = plans[0]
	case o.Prompter != nil:
		if o.Plan, err = o.Prompter.Select("Plan:", plans, ""); err != nil {
			return nil, err
		}
	default:
		return nil, cmdutil.UsageErrorf("--plan is required: class %q has plans %s", res.Class.Spec.ExternalName, strings.Join(plans, ", "))
	}
	return marketplace.Resolve(ctx, o.Store, o.Namespace, o.Class, o.Plan, opt)
}

// askRequired asks for the schema's required parameters that are missing, in a
// terminal; elsewhere the schema validation names them.
func (o *Options) askRequired(schema json.RawMessage, params map[string]any) error {
	if o.Prompter == nil || len(schema) == 0 {
		return nil
	}
	var s struct {
		Required   []string `json:"required"`
		Properties map[string]struct {
			Description string `json:"description"`
			Type        any    `json:"type"`
		} `json:"properties"`
	}
	if json.Unmarshal(schema, &s) != nil {
		return nil
	}
	for _, k := range s.Required {
		if _, ok := params[k]; ok {
			continue
		}
		v, err := o.Prompter.Input(fmt.Sprintf("Parameter %s:", k), s.Properties[k].Description, "")
		if err != nil {
			return err
		}
		typed, err := catalog.ParseParamFlags([]string{k + "=" + v}, schema)
		if err != nil {
			return err
		}
		params[k] = typed[k]
	}
	return nil
}

// runUserProvided records a user-provided instance, writes its credentials Secret
// (owned by the record), and drives it to Ready. Nothing is left behind when the
// credentials cannot be read or written.
func (o *Options) runUserProvided(ctx context.Context) error {
	data, err := o.Credentials.Read(ctx, o.Streams.In, o.Prompter, o.Store, o.Namespace)
	if err != nil {
		return err
	}
	if data, err = o.Credentials.WithURLs(data, false); err != nil {
		return err
	}
	secret := catalog.CredentialsSecretName(o.Name)
	if _, err := o.Store.GetSecret(ctx, o.Namespace, secret); err == nil {
		return fmt.Errorf("Secret %q already exists in namespace %q, and the credentials of user-provided instance %q are kept under that name: pick another instance name, or remove the Secret", secret, o.Namespace, o.Name)
	} else if !store.IsNotFound(err) {
		return err
	}
	inst := catalog.NewUserProvidedInstance(o.Namespace, o.Name, v1alpha1.UserProvidedService{CredentialsSecret: secret})
	o.Limits.Apply(&inst.Spec)
	if o.DryRun.Enabled() {
		return o.printDryRun(ctx, inst, fmt.Sprintf("user-provided instance %q would be recorded in namespace %q, its credentials (%s) in Secret %q", o.Name, o.Namespace, strings.Join(credentials.Keys(data), ", "), secret))
	}
	fmt.Fprintf(o.Streams.ErrOut, "Recording user-provided instance %q in namespace %q (credentials: %s)...\n", o.Name, o.Namespace, strings.Join(credentials.Keys(data), ", "))
	created, err := o.Store.Instances().Create(store.WithIntent(ctx), inst)
	if err != nil {
		return err
	}
	if err := o.Engine.WriteUserProvidedCredentials(ctx, created, data); err != nil {
		if aerr := o.Engine.AbandonInstance(ctx, created); aerr != nil {
			return fmt.Errorf("instance %q not provisioned: its credentials could not be written (%w), and its record could not be removed (%v): remove it with \"kubectl catalog deprovision %s --abandon\"", o.Name, err, aerr, o.Name)
		}
		return fmt.Errorf("instance %q not provisioned: its credentials could not be written to Secret %q: %w", o.Name, secret, err)
	}
	r, err := lifecycle.Drive(ctx, o.Streams, o.Engine, o.Namespace, o.Name, "provision", o.Wait)
	if err != nil {
		return err
	}
	return lifecycle.Report(o.Streams, o.Output, r, o.Name, o.Namespace, "provision", o.Wait.Wait)
}
