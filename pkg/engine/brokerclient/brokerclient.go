// Package brokerclient builds OSB clients for Broker records: it reads the
// broker's credentials from the Secret the record references, so that the
// credentials are never copied into a record, a log or the output.
//
// Every caller that talks to a broker (register, sync, the instance engine,
// reconcile) goes through Factory.ClientFor, so that authentication, TLS and
// the originating identity are handled the same way everywhere.
package brokerclient

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/version"
)

// Keys of a broker's credentials Secret.
const (
	// KeyUsername and KeyPassword hold basic-auth credentials (AuthBasic).
	KeyUsername = "username"
	KeyPassword = "password"
	// KeyToken holds a bearer token (AuthBearer).
	KeyToken = "token"
)

// DefaultMaxCatalogBytes caps a catalog body. It is above osb.DefaultMaxCatalogBytes
// because a broker with 500 services of 20 plans, each with realistic schemas, sends
// about 19 MB; the cap is there against runaway bodies, not large catalogs.
const DefaultMaxCatalogBytes int64 = 64 << 20

// Factory builds OSB clients for broker records. It is safe for concurrent use.
type Factory struct {
	core            kubernetes.Interface
	identity        *osb.OriginatingIdentity
	userAgent       string
	timeout         time.Duration
	maxCatalogBytes int64
	transport       http.RoundTripper
	observer        Observer
	// egress, when set, is the rule for brokers outside egressExempt (the catalog
	// namespace): see WithNamespaceBrokerEgress.
	egress       *Egress
	egressExempt string
	// nsTimeout bounds the requests of the brokers egress applies to.
	nsTimeout time.Duration
	// secrets are the reads of credentials Secrets started ahead (ReadSecretAhead).
	secrets secretsAhead
	// transports are shared by the clients built (osb.Transports): a broker's
	// connections outlive the client, which reconcile builds again every few seconds.
	transports *osb.Transports
}

// Option configures a Factory.
type Option func(*Factory)

// WithOriginatingIdentity sends id as the originating identity (the Kubernetes
// profile's user description) on every request of the clients built.
func WithOriginatingIdentity(id *osb.OriginatingIdentity) Option {
	return func(f *Factory) { f.identity = id }
}

// WithUserAgent sets the User-Agent of the clients built.
func WithUserAgent(ua string) Option {
	return func(f *Factory) { f.userAgent = ua }
}

// WithTimeout bounds each broker request (default DefaultTimeout).
func WithTimeout(d time.Duration) Option {
	return func(f *Factory) { f.timeout = d }
}

// WithMaxCatalogBytes caps the size of a catalog body (default DefaultMaxCatalogBytes).
func WithMaxCatalogBytes(n int64) Option {
	return func(f *Factory) { f.maxCatalogBytes = n }
}

// WithTransport replaces the HTTP transport, for tests. Brokers with a CA
// bundle or InsecureSkipTLSVerify then fail: the transport decides TLS.
func WithTransport(rt http.RoundTripper) Option {
	return func(f *Factory) { f.transport = rt }
}

// WithNamespaceBrokerEgress enforces rule on the clients of every broker outside
// catalogNamespace (the namespace-scoped brokers, whose records tenants write), at dial
// time, and keeps nothing of their error answers but what osb.ClientConfig.BareErrors
// allows, and bounds each of their requests by NamespaceBrokerTimeout (see
// WithNamespaceBrokerTimeout; less when the Factory's timeout is shorter): a tenant's broker that answers as late as it may holds
// one of reconcile's workers for that long at most. The cluster-scoped brokers of the
// catalog namespace, registered by administrators, are not affected. With WithTransport
// (tests) the transport dials, and the dial rule is not applied.
func WithNamespaceBrokerEgress(catalogNamespace string, rule *Egress) Option {
	return func(f *Factory) { f.egress, f.egressExempt = rule, catalogNamespace }
}

// WithNamespaceBrokerTimeout replaces NamespaceBrokerTimeout.
func WithNamespaceBrokerTimeout(d time.Duration) Option {
	return func(f *Factory) { f.nsTimeout = d }
}

// New returns a Factory that reads broker Secrets with core.
func New(core kubernetes.Interface, opts ...Option) *Factory {
	f := &Factory{core: core, maxCatalogBytes: DefaultMaxCatalogBytes, nsTimeout: NamespaceBrokerTimeout, transports: &osb.Transports{}}
	for _, o := range opts {
		o(f)
	}
	return f
}

// SecretError says why a broker's credentials could not be read.
type SecretError struct {
	Broker          string
	Namespace, Name string
	// Key is the missing or empty key, if that was the problem.
	Key string
	// Deleting: someone deleted the Secret while the broker is still wanted.
	Deleting bool
	Err      error
}

func (e *SecretError) Error() string {
	ref := fmt.Sprintf("secret %q in namespace %q", e.Name, e.Namespace)
	switch {
	case e.Deleting:
		return fmt.Sprintf("broker %q: %s is being deleted: create it again once it is gone, or register the broker again with another Secret",
			e.Broker, ref)
	case e.Key != "":
		return fmt.Sprintf("broker %q: %s has no %q key: add it (kubectl create secret generic %s --from-literal=%s=...) or point the broker to another Secret",
			e.Broker, ref, e.Key, e.Name, e.Key)
	case apierrors.IsNotFound(e.Err):
		return fmt.Sprintf("broker %q: %s not found: create it in namespace %q, or register the broker again with the right Secret name",
			e.Broker, ref, e.Namespace)
	case apierrors.IsForbidden(e.Err):
		return fmt.Sprintf("broker %q: not allowed to read %s: ask for get permission on Secrets in namespace %q",
			e.Broker, ref, e.Namespace)
	default:
		return fmt.Sprintf("broker %q: cannot read %s: %v", e.Broker, ref, e.Err)
	}
}

func (e *SecretError) Unwrap() error { return e.Err }

// IsSecretError reports whether err says a broker's credentials Secret is
// missing, unreadable or lacks a key.
func IsSecretError(err error) bool {
	var se *SecretError
	return errors.As(err, &se)
}

// ClientFor returns an OSB client for broker b: its URL, credentials (read
// now from the Secret b references, in b's namespace unless the reference
// names one), CA bundle and TLS setting. Errors name the broker and, for
// credentials, the Secret and key (see SecretError).
func (f *Factory) ClientFor(ctx context.Context, b *v1alpha1.Broker) (osb.Client, error) {
	if b == nil {
		return nil, errors.New("no broker given")
	}
	cfg := &osb.ClientConfig{
		URL:                 b.Spec.URL,
		InsecureSkipVerify:  b.Spec.InsecureSkipTLSVerify,
		Timeout:             f.timeout,
		MaxCatalogBytes:     f.maxCatalogBytes,
		OriginatingIdentity: f.identity,
		UserAgent:           f.userAgent,
		Transport:           f.transport,
		WrapTransport:       f.observe(ctx, b),
	}
	if f.transport == nil {
		// One dial rule per Factory (f.egress), so clients with the same TLS settings
		// and rule or none may share a transport.
		cfg.Transports = f.transports
	}
	if b.Spec.CABundle != "" {
		cfg.CAData = []byte(b.Spec.CABundle)
	}
	if f.egress != nil && b.Namespace != f.egressExempt {
		cfg.BareErrors = true
		if cfg.Timeout <= 0 || cfg.Timeout > f.nsTimeout {
			cfg.Timeout = f.nsTimeout
		}
		if f.transport == nil {
			cfg.DialControl = f.egress.Control
		}
	}
	if a := b.Spec.Auth; a != nil {
		if err := f.loadAuth(ctx, b, a, cfg); err != nil {
			return nil, err
		}
	}
	c, err := osb.NewClient(cfg)
	if err != nil {
		return nil, fmt.Errorf("broker %q: cannot build a client for %s: %w", b.Name, b.Spec.URL, err)
	}
	return c, nil
}

// keptForInstances reports whether Secret s, being deleted, is still to be used for
// broker b: its finalizer (store.BrokerSecretFinalizer) keeps it while the namespace is
// being deleted, until b's instances are deprovisioned. A Secret someone deleted on
// purpose, the broker and namespace staying, is not used: the finalizer is removed
// (when this client may), so that the Secret goes, and the broker fails visibly.
func (f *Factory) keptForInstances(ctx context.Context, b *v1alpha1.Broker, s *corev1.Secret) bool {
	if !store.ProtectsBrokerSecret(s) {
		return false
	}
	if b.DeletionTimestamp != nil {
		return true
	}
	n, err := f.core.CoreV1().Namespaces().Get(ctx, s.Namespace, metav1.GetOptions{})
	switch {
	case err == nil && n.Status.Phase == corev1.NamespaceTerminating:
		return true
	case err == nil:
		_ = store.RemoveSecretFinalizer(ctx, f.core, s.Namespace, s.Name, s.UID)
	}
	// A namespace that cannot be read: the Secret is not used, and a reader who may
	// read the namespace (reconcile) removes the finalizer.
	return false
}

func (f *Factory) loadAuth(ctx context.Context, b *v1alpha1.Broker, a *v1alpha1.BrokerAuth, cfg *osb.ClientConfig) error {
	ns := a.SecretRef.Namespace
	if ns == "" {
		ns = b.Namespace
	}
	if ns != b.Namespace {
		// A broker record is a ConfigMap: whoever may write it must not be able to make
		// the catalog send another namespace's Secret to a URL of their choosing.
		return fmt.Errorf("broker %q names its credentials Secret %q in namespace %q: a broker's credentials must be in its own namespace %q (register it again with a Secret there)",
			b.Name, a.SecretRef.Name, ns, b.Namespace)
	}
	serr := &SecretError{Broker: b.Name, Namespace: ns, Name: a.SecretRef.Name}
	if a.SecretRef.Name == "" {
		return fmt.Errorf("broker %q: its %s authentication names no Secret: register it again with the Secret", b.Name, a.Type)
	}
	if f.core == nil {
		serr.Err = errors.New("no Kubernetes client configured")
		return serr
	}
	s, err := f.secret(ctx, ns, a.SecretRef.Name)
	if err != nil {
		serr.Err = err
		return serr
	}
	if s.DeletionTimestamp != nil && !f.keptForInstances(ctx, b, s) {
		serr.Deleting = true
		return serr
	}
	value := func(key string) (string, bool) {
		v, ok := s.Data[key]
		if !ok {
			sv, sok := s.StringData[key]
			return sv, sok
		}
		return string(v), true
	}
	switch a.Type {
	case v1alpha1.AuthBasic:
		user, ok := value(KeyUsername)
		if !ok || strings.TrimSpace(user) == "" {
			serr.Key = KeyUsername
			return serr
		}
		pass, ok := value(KeyPassword)
		if !ok {
			serr.Key = KeyPassword
			return serr
		}
		cfg.BasicAuth = &osb.BasicAuth{Username: user, Password: pass}
	case v1alpha1.AuthBearer:
		tok, ok := value(KeyToken)
		if !ok || strings.TrimSpace(tok) == "" {
			serr.Key = KeyToken
			return serr
		}
		cfg.BearerToken = strings.TrimSpace(tok)
	default:
		return fmt.Errorf("broker %q: unknown authentication type %q (want %s or %s): register it again",
			b.Name, a.Type, v1alpha1.AuthBasic, v1alpha1.AuthBearer)
	}
	return nil
}

// NamespaceBrokerTimeout bounds each request to a namespace-scoped broker under
// WithNamespaceBrokerEgress (reconcile's clients).
const NamespaceBrokerTimeout = 20 * time.Second

// DefaultTimeout is the per-request broker timeout when WithTimeout is not given, the
// spec's typical 60 s.
const DefaultTimeout = osb.DefaultTimeout

// UserAgent is the User-Agent sent to brokers.
func UserAgent() string { return "kubectl-catalog/" + version.Get().GitVersion }
