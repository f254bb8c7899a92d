// Package register implements "kubectl catalog register".
package register

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/lifecycle"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/setup"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/brokerclient"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/iostreams"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/printers"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/prompt"
)

var registerLong = cmdutil.LongDesc(`
	Register an Open Service Broker and fetch its catalog.

	A cluster-scoped broker (the default) is recorded in the catalog namespace
	(catalog-system unless --catalog-namespace says otherwise, created if
	missing) and its classes are offered to every namespace. A namespace-scoped
	broker is recorded in the current namespace and offered there only; its
	record and its credentials Secret carry a finalizer, so that deleting the
	namespace keeps them until reconcile has deprovisioned the broker's
	instances there.

	Credentials are read from a Secret in the broker's namespace, never copied:
	--basic-auth-secret names a Secret with "username" and "password" keys,
	--bearer-token-secret one with a "token" key.

	The catalog is fetched at once. If the broker cannot be reached or answers
	badly, the broker is still recorded with the error in its status and the
	command fails; fix the cause and run "kubectl catalog sync broker NAME".

	Restrictions limit which classes and plans are offered, with rules such as
	"name in (small,medium)", "free==true" or "name!=legacy". Class rules may
	test name, id, bindable and tag; plan rules name, id, free, bindable and
	class. All rules must hold.

	When the records' trust policy is not in force in the cluster (nobody
	ran "kubectl catalog init" yet), register offers, at a terminal, to set
	the catalog up as init does; --yes accepts without asking. Without a
	terminal it prints one line naming "kubectl catalog init". Either way
	the registration stands: the policy only lets "kubectl catalog
	reconcile" act on each record with its author's rights.`)

var registerExample = cmdutil.Examples(`
	# Register a cluster-wide broker with basic authentication
	kubectl create secret generic acme-auth -n catalog-system --from-literal=username=admin --from-literal=password=s3cret
	kubectl catalog register acme --url https://broker.acme.example --basic-auth-secret acme-auth

	# Register a broker for the current namespace only, with a bearer token and a private CA
	kubectl catalog register team-broker --url https://broker.internal:8443 --scope namespace \
	  --bearer-token-secret broker-token --ca-file ca.pem

	# Offer only free plans, and fetch the catalog again every hour on reconcile
	kubectl catalog register acme --url https://broker.acme.example --plan-restrictions 'free==true' --relist-interval 1h`)

// Options are the options of "kubectl catalog register".
type Options struct {
	// Broker is the registration the flags give; its Namespace and CABundle are set by
	// Complete.
	lifecycle.Broker
	DryRun cmdutil.DryRunStrategy
	Output *printers.OutputFlags
	// Yes sets the catalog up (kubectl catalog init) without asking when the trust
	// policy is not in force.
	Yes bool

	// Set by Complete.
	Engine  *engine.Engine
	Streams cmdutil.IOStreams
	// Setup is "kubectl catalog init", offered when the trust policy is not in force.
	Setup *setup.Options
	// Core reads whether the trust policy is in force.
	Core     kubernetes.Interface
	Prompter prompt.Prompter
}

// NewCmdRegister returns the register command. runF, when not nil, is called with the
// completed options instead of Run (tests check the flags' parsing with it).
func NewCmdRegister(f *cmdutil.Factory, runF func(*Options) error) *cobra.Command {
	o := &Options{Broker: lifecycle.Broker{Scope: "cluster"}, Streams: f.IOStreams, Output: printers.NewOutputFlags(false)}
	cmd := &cobra.Command{
		Use:     "register NAME --url URL",
		Short:   "Register a service broker and fetch its catalog",
		Long:    registerLong,
		Example: registerExample,
		Args:    cobra.ExactArgs(1),
		ValidArgsFunction: func(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
			return nil, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Name = args[0]
			return cmdutil.RunCommand(cmd.Context(), f, o, runF)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.URL, "url", "", "Base URL of the broker (http or https).")
	fl.StringVar(&o.BasicAuthSecret, "basic-auth-secret", "", "Secret in the broker's namespace with \"username\" and \"password\" keys.")
	fl.StringVar(&o.BearerTokenSecret, "bearer-token-secret", "", "Secret in the broker's namespace with a \"token\" key.")
	fl.StringVar(&o.CAFile, "ca-file", "", "PEM file of CA certificates to trust for the broker's TLS certificate.")
	fl.BoolVar(&o.InsecureSkipTLSVerify, "broker-insecure-skip-tls-verify", false, "Do not verify the broker's TLS certificate (insecure: for tests only). kubectl's --insecure-skip-tls-verify is about the API server.")
	fl.StringVar(&o.Scope, "scope", o.Scope, "Who sees the broker's classes: cluster (every namespace) or namespace (the current one).")
	fl.DurationVar(&o.RelistInterval, "relist-interval", 0, "How often reconcile fetches the catalog again, e.g. 1h; 0: only on \"sync broker\".")
	fl.StringArrayVar(&o.ClassRestrictions, "class-restrictions", nil, "Rule classes must match to be offered, e.g. 'name in (postgres,redis)'; repeatable.")
	fl.StringArrayVar(&o.PlanRestrictions, "plan-restrictions", nil, "Rule plans must match to be offered, e.g. 'free==true'; repeatable.")
	fl.DurationVar(&o.BrokerTimeout, "broker-timeout", brokerclient.DefaultTimeout, "How long to wait for the broker's answer.")
	cmdutil.AddDryRunFlag(cmd, &o.DryRun, "the broker record")
	o.Output.AddFlags(cmd)
	fl.BoolVarP(&o.Yes, "yes", "y", false, "When the records' trust policy is not in force, set the catalog up (as \"kubectl catalog init\") without asking.")
	// svcat's names, accepted and not shown (docs/svcat.md).
	cmdutil.AddHiddenAliases(fl, map[string]string{
		"basic-secret": "basic-auth-secret", "bearer-secret": "bearer-token-secret",
		"ca": "ca-file", "skip-tls": "broker-insecure-skip-tls-verify",
	})
	_ = cmd.MarkFlagRequired("url")
	_ = cmd.RegisterFlagCompletionFunc("scope", cobra.FixedCompletions([]string{"cluster", "namespace"}, cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.MarkFlagFilename("ca-file", "pem", "crt")
	return cmd
}

// Validate checks the arguments and flags without any I/O.
func (o *Options) Validate() error {
	b := o.Broker
	if err := b.Validate(); err != nil {
		return err
	}
	if o.Output != nil {
		return o.Output.Validate()
	}
	return nil
}

// Complete reads the CA file and builds the engine.
func (o *Options) Complete(f *cmdutil.Factory) error {
	// A cluster-scoped broker is recorded in the catalog namespace, whatever the user's.
	if scope, _ := cmdutil.ParseScope(o.Scope); scope == v1alpha1.ScopeNamespace {
		ns, err := f.UserNamespace()
		if err != nil {
			return err
		}
		o.Namespace = ns
	}
	if o.CAFile != "" {
		data, err := os.ReadFile(o.CAFile)
		if err != nil {
			return fmt.Errorf("cannot read --ca-file: %w", err)
		}
		if !strings.Contains(string(data), "-----BEGIN CERTIFICATE-----") {
			return fmt.Errorf("--ca-file %s holds no PEM certificate", o.CAFile)
		}
		o.CABundle = string(data)
	}
	eng, err := f.Engine(cmdutil.EngineOptions{CatalogTimeout: o.BrokerTimeout})
	if err != nil {
		return err
	}
	o.Engine = eng.Engine
	if o.DryRun.Enabled() {
		return nil
	}
	if o.Core, err = f.KubernetesClient(); err != nil {
		return err
	}
	o.Setup = setup.NewOptions(f.IOStreams, f.CatalogNamespace, o.Core)
	o.Prompter = f.Prompter(o.Streams, o.Prompter)
	return nil
}

// Request is what the options ask the engine for.
func (o *Options) Request() engine.RegisterBrokerRequest {
	b := o.Broker
	return b.Request(o.DryRun.Engine(), o.Streams.ErrOut)
}

// Register records the broker and fetches its catalog, printing the catalog's warnings.
func (o *Options) Register(ctx context.Context) (*engine.RegisterBrokerResult, error) {
	res, err := o.Engine.RegisterBroker(ctx, o.Request())
	if err != nil {
		return nil, err
	}
	lifecycle.WarnCatalog(o.Streams.ErrOut, res.Catalog)
	return res, nil
}

// Run records the broker and fetches its catalog.
func (o *Options) Run(ctx context.Context) error {
	res, err := o.Register(ctx)
	if err != nil {
		return err
	}
	b := res.Broker
	if o.DryRun.Enabled() {
		return o.printDryRun(res)
	}
	fmt.Fprintf(o.Streams.Out, "broker %q registered: %s and %s offered\n", b.Name,
		printers.Plural(res.Catalog.Classes, "class", "classes"), printers.Plural(res.Catalog.Plans, "plan", "plans"))
	o.offerSetup(ctx)
	return nil
}

// offerSetup offers to set the catalog up when the records' trust policy is not in
// force: at a terminal it asks once (--yes accepts), otherwise it says what sets it
// up. It never fails the registration.
func (o *Options) offerSetup(ctx context.Context) {
	if o.Setup == nil || o.Core == nil {
		return
	}
	if ok, _ := setup.InForce(ctx, o.Core, o.Setup.CatalogNamespace); ok {
		return
	}
	const why = "the records' trust policy is not in force in this cluster, so \"kubectl catalog reconcile\" cannot verify who wrote a record"
	run := o.Yes
	if !run && o.Prompter != nil {
		fmt.Fprintf(o.Streams.ErrOut, "%s; \"kubectl catalog init\" installs it (and stores the cluster id).\n", why)
		ok, err := o.Prompter.Confirm("Set the catalog up now (kubectl catalog init)?", true)
		run = err == nil && ok
	}
	if !run {
		fmt.Fprintf(o.Streams.ErrOut, "Note: %s: an administrator runs \"kubectl catalog init\" once.\n", why)
		return
	}
	if err := o.Setup.Run(ctx); err != nil {
		fmt.Fprintf(o.Streams.ErrOut, "Warning: the broker is registered, but the catalog could not be set up: %s\n", iostreams.SafeText(err.Error()))
	}
}

// printDryRun prints the broker record that would be created. The broker is not called:
// its catalog is not fetched.
func (o *Options) printDryRun(res *engine.RegisterBrokerResult) error {
	b := res.Broker
	note := fmt.Sprintf("broker %q would be registered in namespace %q; its catalog is not fetched", b.Name, b.Namespace)
	if res.NamespaceMissing {
		note += fmt.Sprintf(" (namespace %q does not exist yet and would be created: the record was not sent to the API server)", b.Namespace)
	}
	return printers.PrintDryRun(o.Streams, o.Output, o.DryRun, b, "created", note)
}
