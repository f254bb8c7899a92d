// Package provision implements "kubectl catalog provision".
package provision

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/catalog"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/catalog/credentials"
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
	if err := cmdutil.DryRunWithWait(o.DryRun, o.Wait.Wait, "records nothing"); err != nil {
		return err
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
	eng, err := f.Engine(cmdutil.EngineOptions{PollInterval: o.Wait.Interval})
	if err != nil {
		return err
	}
	o.Engine, o.Store = eng.Engine, eng.Store
	if o.Prompter == nil && o.Streams.CanPrompt() {
		o.Prompter = prompt.NewSurvey(o.Streams.In, o.Streams.Out, o.Streams.ErrOut)
	}
	return nil
}

// Run records the instance and drives it.
func (o *Options) Run(ctx context.Context) error {
	// A provision that asks the user questions, reads credentials or only shows the
	// record checks the name first; any other finds a taken name in its create.
	if o.Prompter != nil || o.UserProvided || o.DryRun == cmdutil.DryRunClient {
		if _, err := o.Store.Instances().Get(ctx, o.Namespace, o.Name); err == nil {
			return o.nameTaken()
		} else if !store.IsNotFound(err) {
			return err
		}
	}
	if o.UserProvided {
		return o.runUserProvided(ctx)
	}
	params, err := o.Params.Input(o.Streams.In)
	if err != nil {
		return err
	}
	req := catalog.InstanceRequest{Namespace: o.Namespace, Name: o.Name, Class: o.Class, Plan: o.Plan, ExternalID: o.ExternalID, Parameters: params}
	if o.Prompter != nil {
		req.Ask = o.Prompter
	}
	inst, err := o.Engine.PrepareInstance(ctx, req)
	if err != nil {
		return err
	}
	class, plan := inst.Spec.ClassExternalName, inst.Spec.PlanExternalName
	o.Limits.Apply(&inst.Spec)
	if o.DryRun.Enabled() {
		return o.printDryRun(ctx, inst, fmt.Sprintf("instance %q of %s/%s would be provisioned in namespace %q", o.Name, class, plan, o.Namespace))
	}
	fmt.Fprintf(o.Streams.ErrOut, "Provisioning instance %q of %s/%s in namespace %q...\n", o.Name, class, plan, o.Namespace)
	created, err := o.Store.Instances().Create(store.WithIntent(ctx), inst)
	if err != nil {
		return o.createError(err)
	}
	r, err := lifecycle.DriveCreated(ctx, o.Streams, o.Engine, created, "provision", o.Wait)
	if err != nil {
		return err
	}
	return lifecycle.Report(o.Streams, o.Output, r, o.Name, o.Namespace, "provision", o.Wait.Wait)
}

// nameTaken says that an instance of the name exists already.
func (o *Options) nameTaken() error {
	return fmt.Errorf(`instance %q already exists in namespace %q: see it with "kubectl catalog describe instance %s", or pick another name`, o.Name, o.Namespace, o.Name)
}

// createError is the error of the instance record's create: a taken name is said as
// nameTaken says it.
func (o *Options) createError(err error) error {
	if store.IsAlreadyExists(err) {
		return o.nameTaken()
	}
	return err
}

// printDryRun prints the instance record that would be created: for
// --dry-run=server, as the API server (validation and admission, the trust policy
// included) accepted it without storing it. No broker is called.
func (o *Options) printDryRun(ctx context.Context, inst *v1alpha1.ServiceInstance, what string) error {
	out := inst
	if o.DryRun == cmdutil.DryRunServer {
		created, err := o.Store.Instances().Create(store.WithIntent(o.DryRun.Context(ctx)), inst)
		if err != nil {
			return fmt.Errorf("instance %q would not be provisioned: %w", o.Name, o.createError(err))
		}
		out = created
	}
	return printers.PrintDryRun(o.Streams, o.Output, o.DryRun, out, "created", what)
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
		return o.createError(err)
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
