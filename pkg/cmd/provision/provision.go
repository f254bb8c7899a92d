// Package provision implements "kubectl catalog provision".
package provision

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/lifecycle"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil/complete"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
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
	// Rebind is --rebind: whether the instance's bindings are rotated after each update.
	Rebind string

	UserProvided bool
	Credentials  lifecycle.CredentialFlags
	// Metadata are the labels and annotations of the record (apply -f gives them).
	Metadata engine.RecordMetadata

	lifecycle.VerbOptions
}

// NewCmdProvision returns the provision command. runF, when not nil, is called with the
// completed options instead of Run (for tests of the flags).
func NewCmdProvision(f *cmdutil.Factory, runF func(*Options) error) *cobra.Command {
	o := &Options{VerbOptions: lifecycle.NewVerbOptions(f)}
	cmd := &cobra.Command{
		Use:     "provision NAME --class CLASS [--plan PLAN] [-p key=value]... | provision NAME --user-provided --credentials-...",
		Short:   "Provision a service instance",
		Long:    provisionLong,
		Example: provisionExample,
		Args:    lifecycle.ExactlyOneName,
		PreRun:  func(cmd *cobra.Command, _ []string) { o.Limits.SetGiven(cmd.Flags()) },
		RunE:    cmdutil.RunENamed(f, &o.Name, o, runF),
	}
	fs := cmd.Flags()
	fs.StringVar(&o.Class, "class", "", "The class (service) to provision, by name, BROKER/NAME or OSB id.")
	fs.StringVar(&o.Plan, "plan", "", "The plan; not needed when the class has one plan.")
	fs.StringVar(&o.ExternalID, "external-id", "", "The OSB instance id to use (default: a new UUID). A provision again after orphan mitigation uses a new one.")
	o.Params.AddFlags(fs)
	fs.BoolVar(&o.UserProvided, "user-provided", false, "A user-provided instance: no broker is called; bindings get a copy of the credentials given with --credentials-*.")
	o.Credentials.AddFlags(fs)
	o.Limits.AddFlags(fs)
	fs.StringVar(&o.Rebind, "rebind", "", "Rotate the instance's bindings after each update that settled: always, plan-change (only when the plan changes) or never (the default); kept in spec.rebindOnUpdate.")
	o.AddFlags(cmd, "provision", "the instance record")
	complete.Register(cmd, "plan", complete.Plans(f))
	complete.Register(cmd, "rebind", complete.Fixed("always", "plan-change", "never"))
	return cmd
}

// Validate checks the flags without I/O. It changes nothing.
func (o *Options) Validate() error {
	if err := o.Limits.Validate(); err != nil {
		return err
	}
	if err := o.Params.Validate(); err != nil {
		return err
	}
	if _, err := o.rebindPolicy(); err != nil {
		return err
	}
	if o.UserProvided && o.Rebind != "" {
		return cmdutil.UsageErrorf("--rebind is for an instance of a broker: the bindings of a user-provided instance get a copy of its credentials whenever they change")
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
	return o.ValidateFlags("records nothing")
}

// Run provisions the instance (engine.Engine.Provision, or ProvisionUserProvided) and
// prints the outcome.
func (o *Options) Run(ctx context.Context) error {
	return o.RunOnInstance(o.Name, "created", "provision", func(follow engine.Follow) (engine.InstanceResult, error) {
		if o.UserProvided {
			return o.Engine.ProvisionUserProvided(ctx, engine.UserProvidedRequest{
				Namespace: o.Namespace, Name: o.Name, Credentials: o.Credentials.Input(o.Streams.In, o.Prompter),
				Limits: o.Limits.Limits(), DryRun: o.DryRun.Engine(), Follow: follow,
			})
		}
		req, err := o.Request(follow)
		if err != nil {
			return engine.InstanceResult{}, err
		}
		return o.Engine.Provision(ctx, req)
	})
}

// Request is the request of provisioning the brokered instance the flags give, the
// parameters read.
func (o *Options) Request(follow engine.Follow) (engine.ProvisionRequest, error) {
	params, err := o.Params.Input(o.Streams.In)
	if err != nil {
		return engine.ProvisionRequest{}, err
	}
	rebind, err := o.rebindPolicy()
	if err != nil {
		return engine.ProvisionRequest{}, err
	}
	req := engine.ProvisionRequest{
		Namespace: o.Namespace, Name: o.Name, Class: o.Class, Plan: o.Plan, ExternalID: o.ExternalID,
		Parameters: params, Limits: o.Limits.Limits(), Metadata: o.Metadata, RebindOnUpdate: rebind, DryRun: o.DryRun.Engine(), Follow: follow,
	}
	if o.Prompter != nil {
		req.Ask = o.Prompter
	}
	return req, nil
}

// rebindPolicy is the spec.rebindOnUpdate --rebind asks for; empty when not given.
func (o *Options) rebindPolicy() (v1alpha1.RebindPolicy, error) {
	if o.Rebind == "" {
		return "", nil
	}
	p, ok := engine.ParseRebindPolicy(o.Rebind)
	if !ok {
		return "", cmdutil.UsageErrorf("invalid value %q for --rebind: give --rebind=always, --rebind=plan-change or --rebind=never", o.Rebind)
	}
	return p, nil
}
