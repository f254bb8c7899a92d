// Package bind implements "kubectl catalog bind".
package bind

import (
	"context"
	"errors"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/lifecycle"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil/complete"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/projection"
)

var bindLong = cmdutil.LongDesc(`
	Bind a service instance: ask its broker for credentials and write them to a
	Secret in the instance's namespace.

	The binding is named after the instance unless --name is given, and its
	Secret after the binding unless --secret-name is given. The Secret is owned
	by the binding: it is replaced when the credentials change and deleted by
	"kubectl catalog unbind". A Secret of that name that the binding would not
	own is never touched: the command refuses to start.

	Everything is checked before anything is recorded: the instance is ready and
	its plan bindable, the parameters match the plan's binding schema, the names
	are free and the workloads given with --to exist. The binding is then
	recorded (a ConfigMap) and the broker is asked for it. An asynchronous
	broker is followed with --wait, or later by "kubectl catalog reconcile".

	The transform flags (--rename-key, --add-key, --add-keys-from-secret,
	--remove-key) change the credentials before they are written, in the order
	given. --to projects the Secret into a workload once the binding is ready:
	as files under $SERVICE_BINDING_ROOT/<binding> (the servicebinding.io
	convention), or with --env as environment variables. The credentials of
	another namespace's instance become environment variables only under a
	prefix of yours (--env-prefix); a key that would become a loader or
	interpreter variable (LD_PRELOAD, BASH_ENV, NODE_OPTIONS, ...) is left out
	of the Secret of a binding projected as environment variables, with a
	warning.

	An instance of another namespace that was shared with this one
	("kubectl catalog share") is bound as NAMESPACE/INSTANCE, or with
	--instance-namespace: reading its record needs the kubectl-catalog-viewer
	role in its namespace. The binding and its Secret are in this namespace.
	A binding beyond the instance's --max-bindings, or from a namespace it does
	not allow, is refused and not recorded.

	--secret-template FILE renders Secret keys with Go templates, after the
	transforms: FILE is YAML or JSON with keys (each Secret key's template) and,
	optionally, only: true (the Secret holds the rendered keys alone). A
	template sees .credentials (the broker's), .instance (name, namespace,
	class, plan, id) and .binding (name, namespace, secretName, id), and the
	functions b64enc, b64dec, toJson, default, join, quote, urlquery,
	pathescape, userinfo, lower, upper and trim; nothing else. It is checked
	before anything is recorded; --dry-run names the keys it would write,
	values masked. A template that fails on the broker's answer writes no
	Secret and names the key.

	--rotate BINDING asks the broker for new credentials for an existing
	binding: the Secret keeps its name and gets the new credentials in one
	write, then the old credentials are unbound at the broker. With
	--secret-template the new credentials are rendered with that template; if
	it fails, the binding keeps its old credentials.`)

var bindExample = cmdutil.Examples(`
	# Bind instance db; the credentials go to Secret "db"
	kubectl catalog bind db

	# Bind with a parameter of the plan's binding schema, into Secret db-readonly
	kubectl catalog bind db --name db-readonly -p role=readonly

	# Rename a key and drop another before the Secret is written
	kubectl catalog bind db --rename-key uri=DATABASE_URL --remove-key tls

	# Render DATABASE_URL from the credentials with a template file, e.g.
	#   keys:
	#     DATABASE_URL: 'postgres://{{ userinfo .credentials.username .credentials.password }}@{{ .credentials.host }}:{{ .credentials.port }}/{{ .credentials.database }}?sslmode=require'
	kubectl catalog bind db --secret-template db-url.yaml

	# Mount the credentials into deployment web (files under $SERVICE_BINDING_ROOT/db)
	kubectl catalog bind db --to deployment/web --wait

	# Expose the credentials to deployment web as environment variables named after their
	# keys with the prefix DB_ (DB_host, DB_port, ... for keys host, port, ...)
	kubectl catalog bind db --to deployment/web --env --env-prefix DB_

	# Show the binding and the change to deployment web without writing anything
	kubectl catalog bind db --to deployment/web --dry-run=client

	# Bind instance db of namespace team-a, shared with this namespace
	kubectl catalog bind team-a/db -n team-b

	# ... and expose its credentials to deployment web as variables TEAM_A_DB_...
	kubectl catalog bind team-a/db -n team-b --to deployment/web --env-prefix TEAM_A_DB_

	# Rotate the credentials of binding db
	kubectl catalog bind --rotate db --wait`)

// Options are the options of bind.
type Options struct {
	// Instance is the instance to bind (NAMESPACE/INSTANCE for a shared one); with
	// Rotate, the binding to rotate.
	Instance string
	// InstanceNamespace is the namespace of a shared instance (--instance-namespace);
	// empty: the binding's namespace.
	InstanceNamespace string
	Name              string
	SecretName        string
	ExternalID        string
	Params            lifecycle.ParamFlags
	Transforms        TransformFlags
	To                []string
	Env               bool
	EnvPrefix         string
	Rotate            bool
	// Yes is --yes: with --rotate, become the author of what another person wrote into
	// the binding without asking.
	Yes bool
	// SecretTemplateFile is the file of --secret-template; SecretTemplate, when set,
	// is the template itself (apply -f gives it).
	SecretTemplateFile string
	SecretTemplate     *v1alpha1.SecretTemplate
	// Metadata are the labels and annotations of the record (apply -f gives them).
	Metadata engine.RecordMetadata

	lifecycle.VerbOptions
}

// NewCmdBind returns the bind command. runF, when not nil, is called with the completed
// options instead of Run.
func NewCmdBind(f *cmdutil.Factory, runF func(*Options) error) *cobra.Command {
	o := &Options{VerbOptions: lifecycle.NewVerbOptions(f)}
	cmd := &cobra.Command{
		Use:     "bind INSTANCE [--name NAME] [--secret-name SECRET] [-p key=value]... [--to KIND/NAME]...",
		Short:   "Bind a service instance: credentials in a Secret",
		Long:    bindLong,
		Example: bindExample,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 && !o.Rotate && o.Streams.CanPrompt() {
				return nil
			}
			return oneName(cmd, args, o.Rotate)
		},
		ValidArgsFunction: func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
			if o.Rotate {
				return complete.First(complete.Bindings(f, false))(cmd, args, toComplete)
			}
			return complete.First(complete.Instances(f))(cmd, args, toComplete)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				o.Instance = args[0]
			}
			if err := o.Validate(cmd.Flags()); err != nil {
				return err
			}
			if err := o.Complete(f); err != nil {
				return err
			}
			if runF != nil {
				return runF(o)
			}
			return o.Run(cmd.Context())
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.Name, "name", "", "Name of the binding (default: the instance's name).")
	fs.StringVar(&o.SecretName, "secret-name", "", "Name of the Secret the credentials are written to (default: the binding's name).")
	fs.StringVar(&o.InstanceNamespace, "instance-namespace", "", "The namespace of the instance, when another namespace shared it with this one (or give INSTANCE as NAMESPACE/INSTANCE).")
	fs.StringVar(&o.ExternalID, "external-id", "", "The OSB binding id to use (default: a new UUID). A bind again after orphan mitigation, or a rotation, uses a new one.")
	o.Params.AddFlags(fs)
	o.Transforms.AddFlags(fs)
	fs.StringArrayVar(&o.To, "to", nil, "Project the Secret into this workload once the binding is ready, as KIND/NAME (deployment, statefulset, daemonset or cronjob). Repeatable.")
	fs.BoolVar(&o.Env, "env", false, "With --to: expose the credentials as environment variables instead of files (another namespace's instance needs --env-prefix too).")
	fs.StringVar(&o.EnvPrefix, "env-prefix", "", "With --to: prefix every environment variable's name with this (implies --env); required for the credentials of another namespace's instance.")
	fs.StringVar(&o.SecretTemplateFile, FlagSecretTemplate, "", "Render Secret keys with Go templates from the credentials, the instance and the binding: a YAML or JSON `FILE` of keys (Secret key to template) and, optionally, only: true (the rendered keys alone). With --rotate, the new credentials are rendered with it.")
	fs.BoolVar(&o.Rotate, "rotate", false, "Rotate the credentials of the binding named by the argument: new credentials in the same Secret, then the old ones unbound.")
	fs.BoolVarP(&o.Yes, "yes", "y", false, "With --rotate: "+cmdutil.VouchYesUsage)
	o.AddFlags(cmd, "bind", "the binding record and the changes to the --to workloads")
	complete.Register(cmd, "to", complete.Workloads(f))
	// A malformed transform is reported by its own message: pflag's wrapping would
	// repeat the flag and the value.
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		var iv *pflag.InvalidValueError
		if errors.As(err, &iv) && iv.GetFlag() != nil && isTransformFlag(iv.GetFlag().Name) {
			if inner := errors.Unwrap(iv); inner != nil {
				return &cmdutil.UsageError{Err: inner}
			}
		}
		return &cmdutil.UsageError{Err: err}
	})
	return cmd
}

// Validate checks the flags without I/O, changing nothing. changed reports which flags
// were given (nil in tests that set the fields directly).
func (o *Options) Validate(changed *pflag.FlagSet) error {
	if o.Rotate {
		if err := rotateAlone(changed, o.DryRun); err != nil {
			return err
		}
	} else if o.Yes {
		return cmdutil.UsageErrorf("--yes is for --rotate: a new binding is yours, and bind asks nothing")
	}
	if err := o.ValidateFlags("records nothing"); err != nil {
		return err
	}
	if (o.Env || o.EnvPrefix != "") && len(o.To) == 0 {
		return cmdutil.UsageErrorf("--env and --env-prefix say how to project into the workloads of --to: give --to KIND/NAME as well")
	}
	if _, _, err := o.instance(); err != nil {
		return err
	}
	if o.EnvPrefix != "" {
		if errs := validation.IsEnvVarName(o.EnvPrefix + "X"); len(errs) > 0 {
			return cmdutil.UsageErrorf("--env-prefix %q does not make valid environment variable names: %s", o.EnvPrefix, strings.Join(errs, "; "))
		}
		if err := projection.CheckEnvPrefix(o.EnvPrefix); err != nil {
			return cmdutil.UsageErrorf("%v", err)
		}
	}
	if _, err := o.projections(); err != nil {
		return err
	}
	for _, n := range []struct{ flag, value string }{{"--name", o.Name}, {"--secret-name", o.SecretName}} {
		if n.value == "" {
			continue
		}
		if errs := validation.IsDNS1123Subdomain(n.value); len(errs) > 0 {
			return cmdutil.UsageErrorf("%s %q is not a valid name: %s", n.flag, n.value, strings.Join(errs, "; "))
		}
	}
	return o.Params.Validate()
}

// Run binds the instance (or rotates the binding) and says where it stands.
func (o *Options) Run(ctx context.Context) error {
	fol := lifecycle.NewFollowing(o.Streams)
	defer fol.Done()
	if o.Rotate {
		return o.rotate(ctx, fol)
	}
	req, err := o.Request(o.AnnounceReconcile(fol.Follow(o.Wait)))
	if err != nil {
		return err
	}
	res, err := o.Engine.Bind(ctx, req)
	fol.Done()
	if o.DryRun.Enabled() && err == nil {
		return o.printDryRun(res)
	}
	// The binding as it stands, also when it failed; not when the drive did not return.
	if res.Binding != nil && !o.DryRun.Enabled() && !o.Output.IsTable() {
		if err := o.Output.PrintObject(res.Binding, o.Streams.Out); err != nil {
			return err
		}
	}
	if err != nil {
		return err
	}
	return o.report(res)
}

// Request is what the user asked for, the parameters read: the request of the engine
// call of the command, which "apply -f" makes too.
func (o *Options) Request(follow engine.Follow) (engine.BindRequest, error) {
	inst, instNS, err := o.instance()
	if err != nil {
		return engine.BindRequest{}, err
	}
	projections, err := o.projections()
	if err != nil {
		return engine.BindRequest{}, err
	}
	params, err := o.Params.Input(o.Streams.In)
	if err != nil {
		return engine.BindRequest{}, err
	}
	tpl, err := o.secretTemplate()
	if err != nil {
		return engine.BindRequest{}, err
	}
	req := engine.BindRequest{
		Namespace: o.Namespace, Instance: inst, InstanceNamespace: instNS, Name: o.Name, SecretName: o.SecretName, ExternalID: o.ExternalID,
		Parameters: params, Transforms: o.Transforms.Transforms(), Projections: projections, Metadata: o.Metadata,
		DryRun: o.DryRun.Engine(), Follow: follow, SecretTemplate: tpl,
	}
	if o.Prompter != nil {
		req.Ask = o.Prompter
	}
	return req, nil
}

// secretTemplate is the template of --secret-template (or the one given), nil for none.
func (o *Options) secretTemplate() (*v1alpha1.SecretTemplate, error) {
	if o.SecretTemplate != nil || o.SecretTemplateFile == "" {
		return o.SecretTemplate, nil
	}
	return ReadSecretTemplate(o.SecretTemplateFile)
}

// rotate asks for new credentials for an existing binding.
func (o *Options) rotate(ctx context.Context, fol *lifecycle.Following) error {
	tpl, err := o.secretTemplate()
	if err != nil {
		return err
	}
	res, err := o.Engine.Rotate(ctx, engine.RotateRequest{Namespace: o.Namespace, Name: o.Instance, Follow: fol.Follow(o.Wait), SecretTemplate: tpl,
		Vouch: cmdutil.Voucher(o.Prompter, o.Streams.ErrOut, o.Yes, "bind --rotate")})
	fol.Done()
	if res.Binding != nil && !o.Output.IsTable() {
		if err := o.Output.PrintObject(res.Binding, o.Streams.Out); err != nil {
			return err
		}
	}
	if err != nil {
		return err
	}
	return o.reportRotation(res)
}
