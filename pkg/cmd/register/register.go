// Package register implements "kubectl catalog register".
package register

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/catalog/brokerclient"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/catalog/catalogsync"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/catalogcmd"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/printers"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
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
	class. All rules must hold.`)

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
	Name                  string
	URL                   string
	BasicAuthSecret       string
	BearerTokenSecret     string
	CAFile                string
	InsecureSkipTLSVerify bool
	Scope                 string
	RelistInterval        time.Duration
	ClassRestrictions     []string
	PlanRestrictions      []string
	BrokerTimeout         time.Duration
	DryRun                cmdutil.DryRunStrategy
	Output                *printers.OutputFlags

	// Set by Complete.
	Namespace        string
	CatalogNamespace string
	CABundle         string
	Store            *store.Store
	Core             kubernetes.Interface
	Clients          *brokerclient.Factory
	Streams          cmdutil.IOStreams
}

// NewCmdRegister returns the register command.
func NewCmdRegister(f *cmdutil.Factory) *cobra.Command {
	o := &Options{Streams: f.IOStreams, Scope: "cluster", Output: printers.NewOutputFlags(false)}
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
			if err := o.Validate(); err != nil {
				return err
			}
			if err := o.Complete(f); err != nil {
				return err
			}
			return o.Run(cmd.Context())
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
	if errs := validation.IsDNS1123Label(o.Name); len(errs) > 0 {
		return cmdutil.UsageErrorf("%q is not a valid broker name: %s (use lowercase letters, digits and '-', at most 63 characters)",
			o.Name, strings.Join(errs, "; "))
	}
	if err := ValidateURL(o.URL); err != nil {
		return err
	}
	if o.BasicAuthSecret != "" && o.BearerTokenSecret != "" {
		return cmdutil.UsageErrorf("--basic-auth-secret and --bearer-token-secret cannot be used together: a broker has one kind of credentials")
	}
	for flag, name := range map[string]string{"--basic-auth-secret": o.BasicAuthSecret, "--bearer-token-secret": o.BearerTokenSecret} {
		if name != "" && len(validation.IsDNS1123Subdomain(name)) > 0 {
			return cmdutil.UsageErrorf("%s %q is not a valid Secret name", flag, name)
		}
	}
	if o.CAFile != "" && o.InsecureSkipTLSVerify {
		return cmdutil.UsageErrorf("--ca-file and --broker-insecure-skip-tls-verify cannot be used together: either verify with the CA or do not verify")
	}
	if (o.CAFile != "" || o.InsecureSkipTLSVerify) && strings.HasPrefix(strings.ToLower(o.URL), "http://") {
		return cmdutil.UsageErrorf("--ca-file and --broker-insecure-skip-tls-verify only apply to an https URL, and %q is http", o.URL)
	}
	if _, err := catalogcmd.ParseScope(o.Scope); err != nil || o.Scope == "" {
		return cmdutil.UsageErrorf("--scope must be cluster or namespace, not %q", o.Scope)
	}
	if o.BrokerTimeout <= 0 {
		return cmdutil.UsageErrorf("--broker-timeout must be positive")
	}
	if o.RelistInterval < 0 {
		return cmdutil.UsageErrorf("--relist-interval must not be negative")
	}
	if _, err := catalogsync.ParseRestrictions(o.restrictions()); err != nil {
		return &cmdutil.UsageError{Err: err}
	}
	if o.Output != nil {
		return o.Output.Validate()
	}
	return nil
}

// ValidateURL checks --url: given, and a usable broker URL (catalogsync.CheckURL).
func ValidateURL(raw string) error {
	if raw == "" {
		return cmdutil.UsageErrorf("--url is required: the broker's base URL, such as https://broker.example.com")
	}
	if err := catalogsync.CheckURL(raw); err != nil {
		return cmdutil.UsageErrorf("--url %v", err)
	}
	return nil
}

func (o *Options) restrictions() *v1alpha1.CatalogRestrictions {
	if len(o.ClassRestrictions) == 0 && len(o.PlanRestrictions) == 0 {
		return nil
	}
	return &v1alpha1.CatalogRestrictions{ServiceClass: o.ClassRestrictions, ServicePlan: o.PlanRestrictions}
}

// Complete reads the CA file and builds the clients.
func (o *Options) Complete(f *cmdutil.Factory) error {
	scope, _ := catalogcmd.ParseScope(o.Scope)
	o.CatalogNamespace = f.CatalogNamespace
	if scope == v1alpha1.ScopeCluster {
		o.Namespace = f.CatalogNamespace
	} else {
		ns, err := catalogcmd.Namespace(f)
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
	core, err := f.KubernetesClient()
	if err != nil {
		return err
	}
	st, err := f.Store()
	if err != nil {
		return err
	}
	o.Core, o.Store = core, st
	o.Clients, err = f.BrokerClients(o.BrokerTimeout)
	return err
}

// Broker is the record the options describe.
func (o *Options) Broker() *v1alpha1.Broker {
	scope, _ := catalogcmd.ParseScope(o.Scope)
	b := &v1alpha1.Broker{
		ObjectMeta: metav1.ObjectMeta{Namespace: o.Namespace, Name: o.Name},
		Spec: v1alpha1.BrokerSpec{
			URL:                   o.URL,
			Scope:                 scope,
			CABundle:              o.CABundle,
			InsecureSkipTLSVerify: o.InsecureSkipTLSVerify,
			CatalogRestrictions:   o.restrictions(),
		},
	}
	switch {
	case o.BasicAuthSecret != "":
		b.Spec.Auth = &v1alpha1.BrokerAuth{Type: v1alpha1.AuthBasic, SecretRef: v1alpha1.SecretReference{Name: o.BasicAuthSecret}}
	case o.BearerTokenSecret != "":
		b.Spec.Auth = &v1alpha1.BrokerAuth{Type: v1alpha1.AuthBearer, SecretRef: v1alpha1.SecretReference{Name: o.BearerTokenSecret}}
	}
	if o.RelistInterval > 0 {
		b.Spec.RelistInterval = &metav1.Duration{Duration: o.RelistInterval}
	}
	return b
}

// Run records the broker and fetches its catalog.
func (o *Options) Run(ctx context.Context) error {
	b := o.Broker()
	errOut := o.Streams.ErrOut
	fmt.Fprintf(errOut, "Registering broker %q at %s (%s scope, namespace %q)...\n", b.Name, b.Spec.URL, strings.ToLower(string(b.Spec.Scope)), b.Namespace)

	if _, err := o.Store.Brokers().Get(ctx, b.Namespace, b.Name); err == nil {
		return fmt.Errorf("broker %q is already registered in namespace %q: run \"kubectl catalog sync broker %s\" to fetch its catalog again, or \"kubectl catalog deregister %s\" first to register it anew",
			b.Name, b.Namespace, b.Name, b.Name)
	} else if !store.IsNotFound(err) && !store.IsForbidden(err) {
		return err
	}
	if o.DryRun.Enabled() {
		return o.printDryRun(ctx, b)
	}
	res, err := catalogsync.Record(ctx, catalogsync.RecordDeps{Store: o.Store, Core: o.Core, Clients: o.Clients, ErrOut: errOut}, b)
	if err != nil {
		return err
	}
	for _, w := range res.Warnings {
		fmt.Fprintf(errOut, "Warning: %s\n", w)
	}
	fmt.Fprintf(o.Streams.Out, "broker %q registered: %s and %s offered\n", b.Name,
		catalogcmd.Plural(res.Classes, "class", "classes"), catalogcmd.Plural(res.Plans, "plan", "plans"))
	return nil
}

// printDryRun prints the broker record that would be created, after the checks
// register makes before it records anything (its credentials Secret). With
// --dry-run=server the API server checks the record write without storing it. The
// broker is not called: its catalog is not fetched.
func (o *Options) printDryRun(ctx context.Context, b *v1alpha1.Broker) error {
	if b.Spec.Auth != nil {
		if _, err := o.Clients.ClientFor(ctx, b); brokerclient.IsSecretError(err) {
			return err
		}
	}
	out := b
	note := fmt.Sprintf("broker %q would be registered in namespace %q; its catalog is not fetched", b.Name, b.Namespace)
	if o.DryRun == cmdutil.DryRunServer {
		if _, err := o.Core.CoreV1().Namespaces().Get(ctx, b.Namespace, metav1.GetOptions{}); apierrors.IsNotFound(err) {
			// The namespace would be created first; the API server cannot check a record in a
			// namespace that does not exist.
			note += fmt.Sprintf(" (namespace %q does not exist yet and would be created: the record was not sent to the API server)", b.Namespace)
		} else {
			created, err := o.Store.Brokers().Create(store.WithIntent(o.DryRun.Context(ctx)), b)
			if err != nil {
				return fmt.Errorf("broker %q would not be registered: %w", b.Name, err)
			}
			out = created
		}
	}
	return printers.PrintDryRun(o.Streams, o.Output, o.DryRun, out, "created", note)
}
