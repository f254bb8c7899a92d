// Package bind implements "kubectl catalog bind".
package bind

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/catalog"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/lifecycle"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil/complete"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/printers"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/projection"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/prompt"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
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
	convention), or with --env as environment variables.

	An instance of another namespace that was shared with this one
	("kubectl catalog share") is bound as NAMESPACE/INSTANCE, or with
	--instance-namespace: reading its record needs the kubectl-catalog-viewer
	role in its namespace. The binding and its Secret are in this namespace.
	A binding beyond the instance's --max-bindings, or from a namespace it does
	not allow, is refused and not recorded.

	--rotate BINDING asks the broker for new credentials for an existing
	binding: the Secret keeps its name and gets the new credentials in one
	write, then the old credentials are unbound at the broker.`)

var bindExample = cmdutil.Examples(`
	# Bind instance db; the credentials go to Secret "db"
	kubectl catalog bind db

	# Bind with a parameter of the plan's binding schema, into Secret db-readonly
	kubectl catalog bind db --name db-readonly -p role=readonly

	# Rename a key and drop another before the Secret is written
	kubectl catalog bind db --rename-key uri=DATABASE_URL --remove-key tls

	# Mount the credentials into deployment web (files under $SERVICE_BINDING_ROOT/db)
	kubectl catalog bind db --to deployment/web --wait

	# Expose the credentials to deployment web as environment variables named after their
	# keys with the prefix DB_ (DB_host, DB_port, ... for keys host, port, ...)
	kubectl catalog bind db --to deployment/web --env --env-prefix DB_

	# Show the binding and the change to deployment web without writing anything
	kubectl catalog bind db --to deployment/web --dry-run=client

	# Bind instance db of namespace team-a, shared with this namespace
	kubectl catalog bind team-a/db -n team-b

	# Rotate the credentials of binding db
	kubectl catalog bind --rotate db --wait`)

// Options are the options of bind.
type Options struct {
	// Instance is the instance to bind; with Rotate, the binding to rotate.
	Instance string
	// InstanceNamespace is the namespace of a shared instance (NAMESPACE/INSTANCE, or
	// --instance-namespace); empty: the binding's namespace.
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
	DryRun            cmdutil.DryRunStrategy
	Wait              lifecycle.WaitFlags
	Output            *printers.OutputFlags

	// projections are the parsed --to values.
	projections []v1alpha1.WorkloadProjection

	Namespace        string
	CatalogNamespace string
	Store            *store.Store
	Engine           *catalog.Engine
	// Workloads reads (and, with --dry-run=server, dry-run writes) the workloads of --to.
	Workloads kubernetes.Interface
	Prompter  prompt.Prompter
	Streams   cmdutil.IOStreams
}

// NewCmdBind returns the bind command.
func NewCmdBind(f *cmdutil.Factory) *cobra.Command {
	o := &Options{Streams: f.IOStreams, Output: printers.NewOutputFlags(false)}
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
	fs.BoolVar(&o.Env, "env", false, "With --to: expose the credentials as environment variables instead of files.")
	fs.StringVar(&o.EnvPrefix, "env-prefix", "", "With --to: prefix every environment variable's name with this (implies --env).")
	fs.BoolVar(&o.Rotate, "rotate", false, "Rotate the credentials of the binding named by the argument: new credentials in the same Secret, then the old ones unbound.")
	cmdutil.AddDryRunFlag(cmd, &o.DryRun, "the binding record and the changes to the --to workloads")
	o.Wait.AddFlags(fs, "bind")
	o.Output.AddFlags(cmd)
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

func isTransformFlag(name string) bool {
	switch name {
	case FlagRenameKey, FlagAddKey, FlagAddKeysFromSecret, FlagRemoveKey:
		return true
	}
	return false
}

func oneName(cmd *cobra.Command, args []string, rotate bool) error {
	what := "INSTANCE"
	if rotate {
		what = "BINDING"
	}
	help := cmd.CommandPath() + " --help"
	switch {
	case len(args) == 1 && args[0] != "":
		return nil
	case len(args) == 1:
		return cmdutil.UsageErrorf("the %s name must not be empty: see %q", strings.ToLower(what), help)
	case len(args) == 0 && rotate:
		return cmdutil.UsageErrorf("%s --rotate needs the BINDING to rotate: see %q", cmd.CommandPath(), help)
	case len(args) == 0:
		return cmdutil.UsageErrorf("%s needs the INSTANCE to bind: see %q", cmd.CommandPath(), help)
	}
	return cmdutil.UsageErrorf("%s takes one %s, got %d arguments (%s): see %q", cmd.CommandPath(), what, len(args), strings.Join(args, " "), help)
}

// Validate checks the flags without I/O. changed reports which flags were given (nil in
// tests that set the fields directly).
func (o *Options) Validate(changed *pflag.FlagSet) error {
	if o.Rotate {
		var clash []string
		for _, n := range []string{"name", "secret-name", "external-id", "param", "params-json", "params-file", "params-from-secret",
			"to", "env", "env-prefix", FlagRenameKey, FlagAddKey, FlagAddKeysFromSecret, FlagRemoveKey} {
			if changed != nil && changed.Changed(n) {
				clash = append(clash, "--"+n)
			}
		}
		if len(clash) > 0 {
			return cmdutil.UsageErrorf("--rotate keeps the binding as it is and cannot be combined with %s", strings.Join(clash, ", "))
		}
		if o.DryRun.Enabled() {
			return cmdutil.UsageErrorf("--rotate cannot be combined with --dry-run")
		}
	}
	if err := cmdutil.DryRunWithWait(o.DryRun, o.Wait.Wait, "records nothing"); err != nil {
		return err
	}
	if o.EnvPrefix != "" {
		o.Env = true
	}
	if o.Env && len(o.To) == 0 {
		return cmdutil.UsageErrorf("--env and --env-prefix say how to project into the workloads of --to: give --to KIND/NAME as well")
	}
	if ns, name, ok := strings.Cut(o.Instance, "/"); ok && !o.Rotate {
		if o.InstanceNamespace != "" && o.InstanceNamespace != ns {
			return cmdutil.UsageErrorf("%q names namespace %q, and --instance-namespace says %q: give one of them", o.Instance, ns, o.InstanceNamespace)
		}
		o.Instance, o.InstanceNamespace = name, ns
	}
	if o.Rotate && o.InstanceNamespace != "" {
		return cmdutil.UsageErrorf("--rotate keeps the binding as it is and cannot be combined with --instance-namespace")
	}
	if o.InstanceNamespace != "" {
		if errs := validation.IsDNS1123Label(o.InstanceNamespace); len(errs) > 0 {
			return cmdutil.UsageErrorf("instance namespace %q is not a valid namespace name: %s", o.InstanceNamespace, strings.Join(errs, "; "))
		}
		if o.Instance == "" {
			return cmdutil.UsageErrorf("the instance name must not be empty: give NAMESPACE/INSTANCE")
		}
	}
	if o.EnvPrefix != "" {
		if errs := validation.IsEnvVarName(o.EnvPrefix + "X"); len(errs) > 0 {
			return cmdutil.UsageErrorf("--env-prefix %q does not make valid environment variable names: %s", o.EnvPrefix, strings.Join(errs, "; "))
		}
	}
	o.projections = nil
	seen := map[string]bool{}
	for _, to := range o.To {
		kind, name, err := projection.ParseWorkload(to)
		if err != nil {
			return cmdutil.UsageErrorf("%v", err)
		}
		if kind == projection.KindJob {
			return cmdutil.UsageErrorf("--to %q: a Job's pod template cannot be changed once it is created, so the Secret cannot be projected into it: project into a CronJob, or mount the Secret in the Job yourself", to)
		}
		key := kind + "/" + name
		if seen[key] {
			return cmdutil.UsageErrorf("--to %q is given twice", to)
		}
		seen[key] = true
		o.projections = append(o.projections, v1alpha1.WorkloadProjection{Kind: kind, Name: name, Env: o.Env, EnvPrefix: o.EnvPrefix})
	}
	for _, n := range []struct{ flag, value string }{{"--name", o.Name}, {"--secret-name", o.SecretName}} {
		if n.value == "" {
			continue
		}
		if errs := validation.IsDNS1123Subdomain(n.value); len(errs) > 0 {
			return cmdutil.UsageErrorf("%s %q is not a valid name: %s", n.flag, n.value, strings.Join(errs, "; "))
		}
	}
	if err := o.Params.Validate(); err != nil {
		return err
	}
	if err := o.Wait.Validate(); err != nil {
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
	if o.InstanceNamespace == ns {
		o.InstanceNamespace = ""
	}
	eng, err := f.Engine(cmdutil.EngineOptions{PollInterval: o.Wait.Interval})
	if err != nil {
		return err
	}
	o.Engine, o.Store = eng.Engine, eng.Store
	if o.Workloads, err = f.KubernetesClient(); err != nil {
		return err
	}
	if o.Prompter == nil && o.Streams.CanPrompt() {
		o.Prompter = prompt.NewSurvey(o.Streams.In, o.Streams.Out, o.Streams.ErrOut)
	}
	return nil
}

// Run checks everything, records the binding and drives it.
func (o *Options) Run(ctx context.Context) error {
	if o.Rotate {
		return o.rotate(ctx)
	}
	if o.Instance == "" {
		if err := o.askInstance(ctx); err != nil {
			return err
		}
	}
	if o.Name == "" {
		o.Name = o.Instance
	}
	if o.SecretName == "" {
		o.SecretName = o.Name
	}
	b, changes, err := o.check(ctx)
	if err != nil {
		return err
	}
	if o.DryRun.Enabled() {
		return o.printDryRun(ctx, b, changes)
	}
	fmt.Fprintf(o.Streams.ErrOut, "Binding instance %q as %q in namespace %q...\n", o.Instance, o.Name, o.Namespace)
	if _, err := o.Store.Bindings().Create(store.WithIntent(ctx), b); err != nil {
		if store.IsAlreadyExists(err) {
			return o.nameTaken()
		}
		return err
	}
	r, err := lifecycle.DriveBinding(ctx, o.Streams, o.Engine, o.Namespace, o.Name, "bind", o.Wait)
	if err != nil {
		return err
	}
	if err := o.dropRefused(ctx, r); err != nil {
		return err
	}
	return o.report(r)
}

// dropRefused removes a binding the engine refused for its instance's consumer rules
// (not shared, namespace not allowed, limit reached: another bind may have taken the
// last place meanwhile): nothing was sent to the broker, so the record goes, and the
// command fails as if it had never been made.
func (o *Options) dropRefused(ctx context.Context, r catalog.Result) error {
	b := r.Binding
	if !r.Refused || b == nil || len(b.Status.ExternalIDs) > 0 || b.Status.Bound != nil {
		return nil
	}
	c := meta.FindStatusCondition(b.Status.Conditions, v1alpha1.ConditionRefused)
	if c == nil {
		return nil
	}
	switch c.Reason {
	case catalog.ReasonRefusedLimitReached, catalog.ReasonRefusedNotShared, catalog.ReasonRefusedNamespaceNotAllowed:
	default:
		return nil
	}
	if err := o.Engine.AbandonBinding(ctx, b); err != nil {
		return fmt.Errorf("binding %q was refused (%s), and removing its record failed: %w; remove it with \"kubectl catalog unbind %s --abandon\"", o.Name, c.Message, err, o.Name)
	}
	return fmt.Errorf("binding %q not created: %s", o.Name, strings.TrimSuffix(c.Message, "; nothing is sent to the broker for this record until that changes"))
}

func (o *Options) nameTaken() error {
	return fmt.Errorf(`binding %q already exists in namespace %q: see it with "kubectl catalog describe binding %s", or choose another name with --name`, o.Name, o.Namespace, o.Name)
}

// check validates the request against the cluster, and returns the binding to record and
// the changes --to would make to the workloads (computed, not written).
func (o *Options) check(ctx context.Context) (*v1alpha1.ServiceBinding, []*projection.Change, error) {
	ins := o.Namespace
	if o.InstanceNamespace != "" {
		ins = o.InstanceNamespace
	}
	inst, err := o.Store.Instances().Get(ctx, ins, o.Instance)
	if store.IsNotFound(err) && o.InstanceNamespace == "" {
		return nil, nil, fmt.Errorf(`instance %q not found in namespace %q: list the instances with "kubectl catalog get instances"`, o.Instance, ins)
	}
	if store.IsNotFound(err) {
		return nil, nil, fmt.Errorf(`instance %q not found in namespace %q: list the instances with "kubectl catalog get instances -n %s"`, o.Instance, ins, ins)
	}
	if store.IsForbidden(err) && o.InstanceNamespace != "" {
		return nil, nil, fmt.Errorf("you may not read instance %q of namespace %q: binding an instance another namespace shares needs its record read (the kubectl-catalog-viewer role in namespace %q, which its owners grant); binding %q not created", o.Instance, ins, ins, o.Name)
	}
	if err != nil {
		return nil, nil, err
	}
	var class *v1alpha1.ServiceClass
	if !inst.IsUserProvided() {
		class, err = o.Store.Classes().Get(ctx, lifecycle.BrokerNamespace(inst, o.CatalogNamespace), v1alpha1.ClassRecordName(inst.Spec.BrokerName, inst.Spec.ClassID))
		if err != nil && !store.IsNotFound(err) {
			return nil, nil, fmt.Errorf("cannot read the class of instance %q: %w", o.Instance, err)
		}
		if err != nil {
			class = nil
		}
	}
	draft := catalog.NewBinding(catalog.BindingIntent{Namespace: o.Namespace, Name: o.Name, Instance: o.Instance, InstanceNamespace: o.InstanceNamespace})
	if err := o.Engine.CheckConsumer(catalog.WithRunnersRights(ctx), draft, inst); err != nil {
		return nil, nil, fmt.Errorf("binding %q not created: %w", o.Name, err)
	}
	if err := checkLimit(inst); err != nil {
		return nil, nil, fmt.Errorf("binding %q not created: %w", o.Name, err)
	}
	if err := catalog.CheckBindable(inst, class); err != nil {
		return nil, nil, err
	}
	if _, err := o.Store.Bindings().Get(ctx, o.Namespace, o.Name); err == nil {
		return nil, nil, o.nameTaken()
	} else if !store.IsNotFound(err) {
		return nil, nil, err
	}
	if _, err := o.Store.GetSecret(ctx, o.Namespace, o.SecretName); err == nil {
		return nil, nil, fmt.Errorf("Secret %q already exists and is not managed by this binding: choose another with --secret-name", o.SecretName)
	} else if !store.IsNotFound(err) {
		return nil, nil, err
	}
	transforms := o.Transforms.Transforms()
	for _, t := range transforms {
		if t.AddKeysFrom == nil {
			continue
		}
		name := t.AddKeysFrom.SecretRef.Name
		if _, err := o.Store.GetSecret(ctx, o.Namespace, name); store.IsNotFound(err) {
			return nil, nil, fmt.Errorf("--add-keys-from-secret %s: Secret %q not found in namespace %q", name, name, o.Namespace)
		} else if err != nil {
			return nil, nil, err
		}
	}
	params, err := o.Params.Input(o.Streams.In)
	if err != nil {
		return nil, nil, err
	}
	b, err := o.Engine.PrepareBinding(ctx, inst, class, catalog.BindingRequest{
		BindingIntent: catalog.BindingIntent{
			Namespace: o.Namespace, Name: o.Name, Instance: o.Instance, InstanceNamespace: o.InstanceNamespace, SecretName: o.SecretName,
			Transforms: transforms, Projections: o.projections, ExternalID: o.ExternalID,
		},
		Parameters: params,
	})
	if err != nil {
		return nil, nil, err
	}
	var changes []*projection.Change
	if len(o.projections) > 0 {
		p := &projection.Projector{Client: o.Workloads}
		mode := projection.DryRunClient
		if o.DryRun == cmdutil.DryRunServer {
			mode = projection.DryRunServer
		}
		for _, w := range o.projections {
			c, err := p.Project(ctx, o.Namespace, o.Name, o.SecretName, w, mode)
			if err != nil {
				return nil, nil, fmt.Errorf("binding %q not created: %w", o.Name, err)
			}
			changes = append(changes, c)
		}
	}
	return b, changes, nil
}

// askInstance asks for the instance in a terminal, among those that can be bound.
func (o *Options) askInstance(ctx context.Context) error {
	if o.Prompter == nil {
		return cmdutil.UsageErrorf(`bind needs the INSTANCE to bind: list the instances with "kubectl catalog get instances"`)
	}
	items, err := o.Store.Instances().List(ctx, o.Namespace, store.Filter{})
	if err != nil && len(items) == 0 {
		return err
	}
	var names []string
	for _, i := range items {
		if i.Status.Phase == v1alpha1.PhaseReady && i.DeletionTimestamp == nil && (i.Status.Provisioned != nil || i.IsUserProvided()) {
			names = append(names, i.Name)
		}
	}
	if len(names) == 0 {
		return fmt.Errorf(`no instance in namespace %q is ready to be bound: provision one with "kubectl catalog provision"`, o.Namespace)
	}
	sort.Strings(names)
	o.Instance, err = o.Prompter.Select("Instance to bind:", names, "")
	return err
}

// printDryRun prints the binding that would be recorded and the workload changes: for
// --dry-run=server, the binding as the API server (validation and admission, the
// trust policy included) accepted it without storing it. No broker is called.
func (o *Options) printDryRun(ctx context.Context, b *v1alpha1.ServiceBinding, changes []*projection.Change) error {
	if o.DryRun == cmdutil.DryRunServer {
		created, err := o.Store.Bindings().Create(store.WithIntent(o.DryRun.Context(ctx)), b)
		if err != nil {
			return fmt.Errorf("binding %q would not be created: %w", o.Name, err)
		}
		b = created
	}
	fmt.Fprintf(o.Streams.ErrOut, "Dry run (%s): binding %q of instance %q would be created; nothing was written.\n", o.DryRun, o.Name, o.Instance)
	if err := o.printObject(b); err != nil {
		return err
	}
	for i, c := range changes {
		w := o.projections[i]
		if c == nil || !c.Changed {
			fmt.Fprintf(o.Streams.ErrOut, "%s would not change: the Secret is already projected into it.\n", printers.WorkloadName(w))
			continue
		}
		verb := "would be changed"
		if o.DryRun == cmdutil.DryRunServer {
			verb = "would be changed (accepted by the API server as a dry run)"
		}
		fmt.Fprintf(o.Streams.ErrOut, "%s %s to receive the credentials as %s:\n", printers.WorkloadName(w), verb, printers.ProjectedAs(w, o.Name))
		if err := o.printObject(c.After); err != nil {
			return err
		}
	}
	return nil
}

func (o *Options) printObject(obj runtime.Object) error {
	if !o.Output.IsTable() {
		return o.Output.PrintObject(obj, o.Streams.Out)
	}
	return printYAML(o.Streams.Out, obj)
}

func printYAML(w io.Writer, obj runtime.Object) error {
	if b, ok := obj.(*v1alpha1.ServiceBinding); ok {
		b = b.DeepCopy()
		b.APIVersion, b.Kind = v1alpha1.SchemeGroupVersion.String(), v1alpha1.KindServiceBinding
		obj = b
	}
	data, err := yaml.Marshal(obj)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "---\n%s", data)
	return err
}

// report says where the binding stands: what was created, where the credentials are and
// what to do next. A failure the user must fix is an error.
func (o *Options) report(r catalog.Result) error {
	if r.Binding != nil && !o.Output.IsTable() {
		if err := o.Output.PrintObject(r.Binding, o.Streams.Out); err != nil {
			return err
		}
	}
	describe := fmt.Sprintf(`"kubectl catalog describe binding %s -n %s"`, o.Name, o.Namespace)
	switch r.State {
	case catalog.StateSettled:
		b := r.Binding
		fmt.Fprintf(o.Streams.ErrOut, "binding %q created; credentials in Secret %q (keys: %s)\n", o.Name, printers.BindingSecretName(b), keysOf(b))
		for _, p := range b.Status.Projected {
			fmt.Fprintf(o.Streams.ErrOut, "projected into %s\n", printers.ProjectionSummary(p, b.Name))
		}
		return nil
	case catalog.StateNeedsUser:
		return fmt.Errorf("binding %q failed: %s; see %s", o.Name, r.Message, describe)
	case catalog.StateDeleted:
		return fmt.Errorf("binding %q is gone: it was deleted while being bound", o.Name)
	}
	b := r.Binding
	if r.Refused {
		return fmt.Errorf("binding %q was refused: %s; see %s", o.Name, r.Message, describe)
	}
	if catalog.WaitingForReconcile(b) {
		fmt.Fprintf(o.Streams.ErrOut, "Binding %q is recorded: %s; it writes Secret %q. Follow it with %s.\n", o.Name, r.Message, o.SecretName, describe)
		return nil
	}
	if b != nil && b.Status.Retry != nil && (b.Status.InFlight == nil || !b.Status.InFlight.Async) {
		// Not "bind --wait" again: the binding's name is taken now, so that would fail
		// or, with another --name, make a second binding.
		return fmt.Errorf("binding %q: %s; it will be retried: follow it with %s, finish it with \"kubectl catalog reconcile\"",
			o.Name, r.Message, describe)
	}
	if o.Wait.Wait {
		return nil
	}
	fmt.Fprintf(o.Streams.ErrOut, "The broker is working on binding %q (%s). Follow it with %s; \"kubectl catalog reconcile\" finishes it and writes Secret %q.\n",
		o.Name, r.Message, describe, o.SecretName)
	return nil
}

func keysOf(b *v1alpha1.ServiceBinding) string {
	if b == nil || b.Status.Secret == nil || len(b.Status.Secret.Keys) == 0 {
		return "none"
	}
	keys := append([]string(nil), b.Status.Secret.Keys...)
	sort.Strings(keys)
	return strings.Join(keys, ", ")
}

// rotate asks for new credentials for an existing binding.
func (o *Options) rotate(ctx context.Context) error {
	o.Name = o.Instance
	before, err := o.Store.Bindings().Get(ctx, o.Namespace, o.Name)
	if store.IsNotFound(err) {
		return fmt.Errorf(`binding %q not found in namespace %q: list the bindings with "kubectl catalog get bindings"`, o.Name, o.Namespace)
	}
	if err != nil {
		return err
	}
	o.Instance, o.SecretName = before.Spec.InstanceName, before.Spec.SecretName
	b, err := o.Engine.Rotate(ctx, o.Namespace, o.Name)
	if err != nil {
		return err
	}
	oldID, newID := b.RotatedFrom().ExternalID, b.CurrentExternalID()
	fmt.Fprintf(o.Streams.ErrOut, "Rotating binding %q in namespace %q: new binding id %s replaces %s...\n", o.Name, o.Namespace, newID, oldID)
	r, err := lifecycle.DriveBinding(ctx, o.Streams, o.Engine, o.Namespace, o.Name, "bind", o.Wait)
	if err != nil {
		return err
	}
	if r.Binding != nil && !o.Output.IsTable() {
		if err := o.Output.PrintObject(r.Binding, o.Streams.Out); err != nil {
			return err
		}
	}
	describe := fmt.Sprintf(`"kubectl catalog describe binding %s -n %s"`, o.Name, o.Namespace)
	switch {
	case r.State == catalog.StateNeedsUser:
		return fmt.Errorf("rotating binding %q failed: %s; see %s", o.Name, r.Message, describe)
	case r.Binding == nil:
		return fmt.Errorf("binding %q is gone: it was deleted while being rotated", o.Name)
	}
	cur := r.Binding
	if cur.Status.Bound != nil && cur.Status.Bound.BindingID == newID {
		fmt.Fprintf(o.Streams.ErrOut, "binding %q rotated: new binding id %s; credentials replaced in Secret %q (keys: %s)\n", o.Name, newID, printers.BindingSecretName(cur), keysOf(cur))
		for _, id := range cur.Status.Retired {
			if id == oldID {
				fmt.Fprintf(o.Streams.ErrOut, "The old binding id %s is still to be unbound at the broker (%s): \"kubectl catalog reconcile\" finishes it.\n", oldID, r.Message)
				return nil
			}
		}
		fmt.Fprintf(o.Streams.ErrOut, "The old binding id %s was unbound at the broker.\n", oldID)
		return nil
	}
	if cur.Status.Retry != nil && (cur.Status.InFlight == nil || !cur.Status.InFlight.Async) {
		return fmt.Errorf("rotating binding %q: %s; it will be retried: follow it with %s; the old credentials stay in Secret %q until then", o.Name, r.Message, describe, o.SecretName)
	}
	fmt.Fprintf(o.Streams.ErrOut, "The broker is working on the new credentials of binding %q (%s); the old ones stay in Secret %q until they are ready. Follow it with %s, or run the command with --wait.\n",
		o.Name, r.Message, o.SecretName, describe)
	return nil
}

// checkLimit refuses a bind while every place under the instance's maxBindings is taken
// (the engine takes the place itself, atomically, before the broker call).
func checkLimit(inst *v1alpha1.ServiceInstance) error {
	if m := inst.Spec.MaxBindings; m != nil && int32(len(inst.Status.Consumers)) >= *m {
		return fmt.Errorf("instance %q in namespace %q has reached its limit of %d bindings: unbind one of them, or its owner raises the limit with \"kubectl catalog update %s --max-bindings N -n %s\"",
			inst.Name, inst.Namespace, *m, inst.Name, inst.Namespace)
	}
	return nil
}
