package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/brokerclient"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/catalogsync"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/iostreams"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/printers"
)

// Broker is the registration of a broker as "kubectl catalog register" takes it, from
// its flags or from a manifest's spec (BrokerForSpec).
type Broker struct {
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
	// Namespace is the broker's namespace; CABundle is the PEM of CAFile, or the spec's.
	Namespace string
	CABundle  string
}

// BrokerForSpec is the registration of broker name with spec, as "kubectl catalog get
// broker NAME -o yaml" prints it: what "kubectl catalog apply -f" registers or changes,
// with register's checks. namespace is the user's (a namespace-scoped broker's). The
// credentials are only ever a Secret reference, of a Secret in the broker's namespace
// (the namespace the reference may name is the caller's to check).
func BrokerForSpec(name, namespace string, spec v1alpha1.BrokerSpec) (Broker, error) {
	b := Broker{
		Name: name, URL: spec.URL, Scope: strings.ToLower(string(spec.Scope)), CABundle: spec.CABundle,
		InsecureSkipTLSVerify: spec.InsecureSkipTLSVerify, BrokerTimeout: brokerclient.DefaultTimeout,
		Namespace: namespace,
	}
	if b.Scope == "" {
		b.Scope = "cluster"
	}
	if a := spec.Auth; a != nil {
		switch a.Type {
		case v1alpha1.AuthBasic:
			b.BasicAuthSecret = a.SecretRef.Name
		case v1alpha1.AuthBearer:
			b.BearerTokenSecret = a.SecretRef.Name
		default:
			return Broker{}, fmt.Errorf("spec.auth.type %q is not %s or %s", a.Type, v1alpha1.AuthBasic, v1alpha1.AuthBearer)
		}
		if a.SecretRef.Name == "" {
			return Broker{}, errors.New("spec.auth.secretRef.name is empty: name the Secret that holds the broker's credentials")
		}
	}
	if spec.RelistInterval != nil {
		b.RelistInterval = spec.RelistInterval.Duration
	}
	if r := spec.CatalogRestrictions; r != nil {
		b.ClassRestrictions, b.PlanRestrictions = r.ServiceClass, r.ServicePlan
	}
	if err := b.Validate(); err != nil {
		return Broker{}, err
	}
	if b.CABundle != "" && !strings.Contains(b.CABundle, "-----BEGIN CERTIFICATE-----") {
		return Broker{}, errors.New("spec.caBundle holds no PEM certificate")
	}
	return b, nil
}

// Validate checks the registration without any I/O, as register checks its argument
// and flags.
func (b *Broker) Validate() error {
	if errs := validation.IsDNS1123Label(b.Name); len(errs) > 0 {
		return cmdutil.UsageErrorf("%q is not a valid broker name: %s (use lowercase letters, digits and '-', at most 63 characters)",
			b.Name, strings.Join(errs, "; "))
	}
	if err := ValidateBrokerURL(b.URL); err != nil {
		return err
	}
	if b.BasicAuthSecret != "" && b.BearerTokenSecret != "" {
		return cmdutil.UsageErrorf("--basic-auth-secret and --bearer-token-secret cannot be used together: a broker has one kind of credentials")
	}
	for flag, name := range map[string]string{"--basic-auth-secret": b.BasicAuthSecret, "--bearer-token-secret": b.BearerTokenSecret} {
		if name != "" && len(validation.IsDNS1123Subdomain(name)) > 0 {
			return cmdutil.UsageErrorf("%s %q is not a valid Secret name", flag, name)
		}
	}
	if b.CAFile != "" && b.InsecureSkipTLSVerify {
		return cmdutil.UsageErrorf("--ca-file and --broker-insecure-skip-tls-verify cannot be used together: either verify with the CA or do not verify")
	}
	if (b.CAFile != "" || b.InsecureSkipTLSVerify) && strings.HasPrefix(strings.ToLower(b.URL), "http://") {
		return cmdutil.UsageErrorf("--ca-file and --broker-insecure-skip-tls-verify only apply to an https URL, and %q is http", b.URL)
	}
	if _, err := cmdutil.ParseScope(b.Scope); err != nil || b.Scope == "" {
		return cmdutil.UsageErrorf("--scope must be cluster or namespace, not %q", b.Scope)
	}
	if b.BrokerTimeout <= 0 {
		return cmdutil.UsageErrorf("--broker-timeout must be positive")
	}
	if b.RelistInterval < 0 {
		return cmdutil.UsageErrorf("--relist-interval must not be negative")
	}
	if _, err := catalogsync.ParseRestrictions(b.restrictions()); err != nil {
		return &cmdutil.UsageError{Err: err}
	}
	return nil
}

// ValidateBrokerURL checks --url: given, and a usable broker URL (catalogsync.CheckURL).
func ValidateBrokerURL(raw string) error {
	if raw == "" {
		return cmdutil.UsageErrorf("--url is required: the broker's base URL, such as https://broker.example.com")
	}
	if err := catalogsync.CheckURL(raw); err != nil {
		return cmdutil.UsageErrorf("--url %v", err)
	}
	return nil
}

func (b *Broker) restrictions() *v1alpha1.CatalogRestrictions {
	if len(b.ClassRestrictions) == 0 && len(b.PlanRestrictions) == 0 {
		return nil
	}
	return &v1alpha1.CatalogRestrictions{ServiceClass: b.ClassRestrictions, ServicePlan: b.PlanRestrictions}
}

// Request is what the registration asks the engine for; the engine's notes go to w.
func (b *Broker) Request(dry engine.DryRun, w io.Writer) engine.RegisterBrokerRequest {
	scope, _ := cmdutil.ParseScope(b.Scope)
	return engine.RegisterBrokerRequest{
		Name: b.Name, URL: b.URL, Scope: scope, Namespace: b.Namespace,
		BasicAuthSecret: b.BasicAuthSecret, BearerTokenSecret: b.BearerTokenSecret,
		CABundle: b.CABundle, InsecureSkipTLSVerify: b.InsecureSkipTLSVerify,
		RelistInterval:    b.RelistInterval,
		ClassRestrictions: b.ClassRestrictions, PlanRestrictions: b.PlanRestrictions,
		DryRun: dry,
		Note:   func(line string) { fmt.Fprintln(w, iostreams.SafeText(line)) },
	}
}

// WarnCatalog prints the warnings of a catalog fetch (nil: none was made) to w.
func WarnCatalog(w io.Writer, cat *catalogsync.Result) {
	if cat == nil {
		return
	}
	for _, warning := range cat.Warnings {
		fmt.Fprintf(w, "Warning: %s\n", iostreams.SafeText(warning))
	}
}

// Deregister deregisters a broker as "kubectl catalog deregister" does, for the
// command and for "delete -f", and prints the outcome (a dry run's as out says).
func Deregister(ctx context.Context, eng *engine.Engine, streams cmdutil.IOStreams, out *printers.OutputFlags, dry cmdutil.DryRunStrategy, req engine.DeregisterRequest) error {
	res, err := eng.Deregister(ctx, req)
	if err != nil {
		return err
	}
	b := res.Broker
	if dry.Enabled() {
		// The broker that would be deregistered and how many classes would go with it;
		// with --dry-run=server the API server has checked the deletions.
		return printers.PrintDryRun(streams, out, dry, b, "deleted",
			fmt.Sprintf("broker %q (%s scope, namespace %q) would be deregistered: %s removed",
				b.Name, strings.ToLower(string(b.Spec.Scope)), b.Namespace, printers.Plural(res.Classes, "class", "classes")))
	}
	fmt.Fprintf(streams.Out, "broker %q deregistered: %s removed\n", b.Name, printers.Plural(res.Classes, "class", "classes"))
	return nil
}

// DeregisterRequest is the request of deregistering broker name of scope ("cluster" or
// "namespace") in namespace; the engine's notes go to w.
func DeregisterRequest(name, scope, namespace string, force bool, dry engine.DryRun, w io.Writer) engine.DeregisterRequest {
	s, _ := cmdutil.ParseScope(scope)
	return engine.DeregisterRequest{Name: name, Scope: s, Namespace: namespace, Force: force,
		DryRun: dry, Note: func(line string) { fmt.Fprintln(w, iostreams.SafeText(line)) }}
}
