package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/catalogsync"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/records"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// RegisterBrokerRequest is what "kubectl catalog register" was asked for.
type RegisterBrokerRequest struct {
	// Name names the broker.
	Name string
	// URL is the broker's base URL.
	URL string
	// Scope says who sees the broker's classes: ScopeCluster records the broker in the
	// catalog namespace for every namespace, ScopeNamespace in Namespace for it alone.
	Scope v1alpha1.Scope
	// Namespace is the user's namespace.
	Namespace string
	// BasicAuthSecret names a Secret of the broker's namespace with "username" and
	// "password" keys, BearerTokenSecret one with a "token" key; at most one is given.
	BasicAuthSecret, BearerTokenSecret string
	// CABundle is the PEM of the CA certificates the broker's certificate is checked
	// with (the content of --ca-file); InsecureSkipTLSVerify checks none.
	CABundle              string
	InsecureSkipTLSVerify bool
	// RelistInterval is how often reconcile fetches the catalog again; 0: never.
	RelistInterval time.Duration
	// ClassRestrictions and PlanRestrictions are the rules the classes and plans
	// offered must match.
	ClassRestrictions, PlanRestrictions []string
	// DryRun says what is written: a dry run fetches no catalog.
	DryRun DryRun
	// Note is given the lines the operation says as it goes ("Registering broker ...",
	// warnings): the verb prints them to standard error. Nil drops them.
	Note func(string)
}

// RegisterBrokerResult is what RegisterBroker did.
type RegisterBrokerResult struct {
	// Broker is the broker record as created; on a dry run, as it would be (as the API
	// server returned it, when a server dry run sent it).
	Broker *v1alpha1.Broker
	// Catalog is what the first fetch of the catalog did; nil on a dry run.
	Catalog *catalogsync.Result
	// NamespaceMissing says, on a server dry run, that the broker's namespace does not
	// exist yet and would be created, so the record was not sent to the API server.
	NamespaceMissing bool
}

// RegisterBroker records a new broker on the user's command and fetches its catalog: a
// cluster-scoped broker in the catalog namespace (created if missing), a namespace-scoped
// one in the user's namespace with its credentials Secret protected by a finalizer. A
// broker of that name already there, or a missing or incomplete credentials Secret,
// changes nothing. The broker stays recorded when the fetch fails, and the error says how
// to fetch it again. A dry run checks the Secret and writes nothing (a server dry run has
// the API server check the record's create), and fetches no catalog.
func (e *Engine) RegisterBroker(ctx context.Context, req RegisterBrokerRequest) (*RegisterBrokerResult, error) {
	if err := req.check(); err != nil {
		return nil, err
	}
	sync, err := catalogs(&e.cfg)
	if err != nil {
		return nil, err
	}
	b := brokerToRegister(req, e.cfg.CatalogNamespace)
	note := Follow{Note: req.Note}.note
	note("Registering broker %q at %s (%s scope, namespace %q)...", b.Name, b.Spec.URL, strings.ToLower(string(b.Spec.Scope)), b.Namespace)
	if _, err := e.cfg.Store.Brokers().Get(ctx, b.Namespace, b.Name); err == nil {
		return nil, fmt.Errorf("broker %q is already registered in namespace %q: run \"kubectl catalog sync broker %s\" to fetch its catalog again, or \"kubectl catalog deregister %s\" first to register it anew",
			b.Name, b.Namespace, b.Name, b.Name)
	} else if !store.IsNotFound(err) && !store.IsForbidden(err) {
		return nil, err
	}
	if req.DryRun.Enabled() {
		return registerDryRun(ctx, e.cfg.Store, sync, req.DryRun, b)
	}
	res, err := sync.Record(ctx, b, req.Note)
	if err != nil {
		return nil, err
	}
	return &RegisterBrokerResult{Broker: b, Catalog: res}, nil
}

// check refuses a request the verb's own checks would have refused: a bad name, scope,
// URL or restriction, or two kinds of credentials.
func (req RegisterBrokerRequest) check() error {
	if errs := validation.IsDNS1123Label(req.Name); len(errs) > 0 {
		return inputErrorf("%q is not a valid broker name: %s", req.Name, strings.Join(errs, "; "))
	}
	if req.Scope != v1alpha1.ScopeCluster && req.Scope != v1alpha1.ScopeNamespace {
		return inputErrorf("broker %q: the scope must be %s or %s, not %q", req.Name, v1alpha1.ScopeCluster, v1alpha1.ScopeNamespace, req.Scope)
	}
	if err := catalogsync.CheckURL(req.URL); err != nil {
		return inputErrorf("broker %q: the URL %v", req.Name, err)
	}
	if req.BasicAuthSecret != "" && req.BearerTokenSecret != "" {
		return inputErrorf("broker %q: basic authentication and a bearer token cannot be used together: a broker has one kind of credentials", req.Name)
	}
	if _, err := catalogsync.ParseRestrictions(req.restrictions()); err != nil {
		return &InputError{Err: err}
	}
	return nil
}

func (req RegisterBrokerRequest) restrictions() *v1alpha1.CatalogRestrictions {
	if len(req.ClassRestrictions) == 0 && len(req.PlanRestrictions) == 0 {
		return nil
	}
	return &v1alpha1.CatalogRestrictions{ServiceClass: req.ClassRestrictions, ServicePlan: req.PlanRestrictions}
}

// brokerToRegister is the record req describes, in the namespace of its scope.
func brokerToRegister(req RegisterBrokerRequest, catalogNamespace string) *v1alpha1.Broker {
	ns := req.Namespace
	if req.Scope == v1alpha1.ScopeCluster {
		ns = catalogNamespace
	}
	b := &v1alpha1.Broker{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: req.Name},
		Spec: v1alpha1.BrokerSpec{
			URL:                   req.URL,
			Scope:                 req.Scope,
			CABundle:              req.CABundle,
			InsecureSkipTLSVerify: req.InsecureSkipTLSVerify,
			CatalogRestrictions:   req.restrictions(),
		},
	}
	switch {
	case req.BasicAuthSecret != "":
		b.Spec.Auth = &v1alpha1.BrokerAuth{Type: v1alpha1.AuthBasic, SecretRef: v1alpha1.SecretReference{Name: req.BasicAuthSecret}}
	case req.BearerTokenSecret != "":
		b.Spec.Auth = &v1alpha1.BrokerAuth{Type: v1alpha1.AuthBearer, SecretRef: v1alpha1.SecretReference{Name: req.BearerTokenSecret}}
	}
	if req.RelistInterval > 0 {
		b.Spec.RelistInterval = &metav1.Duration{Duration: req.RelistInterval}
	}
	return b
}

// registerDryRun makes the checks register makes before it records anything (the
// credentials Secret) and, for a server dry run, has the API server check the record's
// create without storing it. The broker is not called.
func registerDryRun(ctx context.Context, st *store.Store, sync *catalogsync.Syncer, d DryRun, b *v1alpha1.Broker) (*RegisterBrokerResult, error) {
	if err := sync.CheckSecret(ctx, b); err != nil {
		return nil, err
	}
	res := &RegisterBrokerResult{Broker: b}
	if d != DryRunServer {
		return res, nil
	}
	if sync.NamespaceMissing(ctx, b.Namespace) {
		// The namespace would be created first; the API server cannot check a record in a
		// namespace that does not exist.
		res.NamespaceMissing = true
		return res, nil
	}
	created, err := st.Brokers().Create(d.writes(ctx), b)
	if err != nil {
		return nil, fmt.Errorf("broker %q would not be registered: %w", b.Name, err)
	}
	res.Broker = created
	return res, nil
}

// catalogs is the catalog syncer of an engine configured with cfg (Config.Catalogs).
func catalogs(cfg *Config) (*catalogsync.Syncer, error) {
	if cfg.Catalogs == nil {
		return nil, errors.New("this engine has no catalog syncer (engine.Config.Catalogs): it cannot register, sync or deregister brokers")
	}
	return cfg.Catalogs, nil
}

// registered is the catalog syncer and the broker a request to sync or deregister
// names (FindBroker).
func (e *Engine) registered(ctx context.Context, namespace, name string, scope v1alpha1.Scope) (*catalogsync.Syncer, *v1alpha1.Broker, error) {
	sync, err := catalogs(&e.cfg)
	if err != nil {
		return nil, nil, err
	}
	b, err := records.NewReader(e.cfg.Store).FindBroker(ctx, e.cfg.CatalogNamespace, namespace, name, scope)
	if err != nil {
		return nil, nil, err
	}
	return sync, b, nil
}
