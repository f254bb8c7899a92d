package catalogsync

import (
	"context"
	"errors"
	"fmt"
	"net/url"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/brokerclient"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// WithCore sets the client Record creates a missing catalog namespace with, and
// NamespaceMissing asks; Record needs it.
func WithCore(core kubernetes.Interface) Option { return func(s *Syncer) { s.core = core } }

// CheckSecret returns the error of broker b's credentials Secret when it is missing or
// incomplete (brokerclient.IsSecretError says so of it), and nil otherwise: a broker
// without credentials, or a problem that is not the Secret's.
func (s *Syncer) CheckSecret(ctx context.Context, b *v1alpha1.Broker) error {
	if b.Spec.Auth == nil {
		return nil
	}
	if _, err := s.clients.ClientFor(ctx, b); brokerclient.IsSecretError(err) {
		return err
	}
	return nil
}

// Record records the new broker b on the user's command and fetches its catalog (a GET
// only): the credentials Secret is checked first, the catalog namespace created for a
// cluster broker, the Secret of a namespace broker protected. The broker stays recorded
// when the fetch fails; the error (a *FetchError) then says how to fetch it again.
// note, when not nil, gets the lines to show the user as it goes (progress, warnings).
// "register" and "migrate svcat" both record brokers this way.
func (s *Syncer) Record(ctx context.Context, b *v1alpha1.Broker, note func(string)) (*Result, error) {
	say := func(format string, args ...any) {
		if note != nil {
			note(fmt.Sprintf(format, args...))
		}
	}
	// A missing or incomplete Secret is the user's to fix before anything is recorded.
	if err := s.CheckSecret(ctx, b); err != nil {
		return nil, err
	}
	if s.core == nil {
		return nil, fmt.Errorf("cannot record broker %q: this catalog syncer has no Kubernetes client (catalogsync.WithCore)", b.Name)
	}
	if b.Spec.Scope == v1alpha1.ScopeCluster {
		if err := ensureNamespace(ctx, s.core, b.Namespace); err != nil {
			return nil, err
		}
	}
	created, err := s.st.Brokers().Create(store.WithIntent(ctx), b)
	if store.IsAlreadyExists(err) {
		return nil, fmt.Errorf("broker %q is already registered in namespace %q: run \"kubectl catalog sync broker %s\" instead", b.Name, b.Namespace, b.Name)
	}
	if err != nil {
		return nil, fmt.Errorf("cannot record broker %q: %w", b.Name, err)
	}
	if err := s.st.ProtectBrokerSecret(ctx, created); err != nil {
		say("Warning: cannot give the credentials Secret %q the finalizer that keeps it while the broker's instances need it (%v): deleting namespace %q could delete it before they are deprovisioned",
			b.Spec.Auth.SecretRef.Name, err, b.Namespace)
	}
	say("Fetching the catalog of broker %q...", b.Name)
	res, err := s.Sync(ctx, created)
	if err != nil {
		var fe *FetchError
		if errors.As(err, &fe) {
			return res, fmt.Errorf("broker %q is registered, but %w\nFix the cause, then run \"kubectl catalog sync broker %s\"", b.Name, err, b.Name)
		}
		return res, err
	}
	return res, nil
}

// NamespaceMissing reports whether namespace ns is known not to exist (Record would
// create it for a cluster broker); false when it exists or cannot be read.
func (s *Syncer) NamespaceMissing(ctx context.Context, ns string) bool {
	if s.core == nil {
		return false
	}
	_, err := s.core.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	return apierrors.IsNotFound(err)
}

// ensureNamespace creates the catalog namespace if it is missing.
func ensureNamespace(ctx context.Context, core kubernetes.Interface, ns string) error {
	_, err := core.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if err == nil || apierrors.IsForbidden(err) {
		// Not allowed to read namespaces: the create of the broker record tells.
		return nil
	}
	if !apierrors.IsNotFound(err) {
		return fmt.Errorf("cannot check the catalog namespace %q: %w", ns, err)
	}
	_, err = core.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns,
		Labels: map[string]string{store.LabelManagedBy: store.ManagedBy}}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("the catalog namespace %q does not exist and cannot be created: %w (ask an administrator to create it, or use --scope namespace)", ns, err)
	}
	return nil
}

// CheckURL checks a broker URL: http or https, a host, no credentials, query or
// fragment. The error names the problem after the URL ("\"ftp://x\" must start with
// http:// or https://"), so a command can put its flag in front.
func CheckURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("%q is not a valid URL: %v", raw, err)
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Errorf("%q must start with http:// or https://", raw)
	case u.Host == "":
		return fmt.Errorf("%q has no host", raw)
	case u.User != nil:
		return errors.New("must not contain credentials: put them in a Secret and use --basic-auth-secret")
	case u.RawQuery != "" || u.Fragment != "":
		return fmt.Errorf("%q must not have a query or fragment", raw)
	}
	return nil
}
