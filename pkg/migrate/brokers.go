package migrate

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/catalogsync"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

func brokerKey(scope v1alpha1.Scope, ns, name string) string {
	if scope == v1alpha1.ScopeCluster {
		return "Cluster/" + name
	}
	return "Namespace/" + ns + "/" + name
}

// brokerRecord is the record an old broker becomes, or why it cannot be made.
func (m *Migrator) brokerRecord(u *unstructured.Unstructured) (*v1alpha1.Broker, error) {
	return BrokerFromManifest(u, m.cfg.CatalogNamespace)
}

// BrokerFromManifest is the record a ServiceBroker (namespaced: u's namespace is set) or
// ClusterServiceBroker becomes, recorded in catalogNamespace when cluster-scoped, or why
// it cannot be made. Its credentials are only ever the Secret reference it names.
func BrokerFromManifest(u *unstructured.Unstructured, catalogNamespace string) (*v1alpha1.Broker, error) {
	cluster := u.GetNamespace() == ""
	b := &v1alpha1.Broker{ObjectMeta: metav1.ObjectMeta{Name: u.GetName(), Namespace: u.GetNamespace()}}
	b.Spec.Scope = v1alpha1.ScopeNamespace
	if cluster {
		b.Namespace, b.Spec.Scope = catalogNamespace, v1alpha1.ScopeCluster
	}
	b.Spec.URL = str(u, "spec", "url")
	if b.Spec.URL == "" {
		return nil, errors.New("it has no spec.url")
	}
	if err := catalogsync.CheckURL(b.Spec.URL); err != nil {
		return nil, fmt.Errorf("its URL is not usable: %w", err)
	}
	b.Spec.InsecureSkipTLSVerify, _, _ = unstructured.NestedBool(u.Object, "spec", "insecureSkipTLSVerify")
	if ca := str(u, "spec", "caBundle"); ca != "" {
		pem, err := base64.StdEncoding.DecodeString(ca)
		if err != nil {
			return nil, fmt.Errorf("its spec.caBundle is not base64: %w", err)
		}
		b.Spec.CABundle = string(pem)
	}
	for _, a := range []struct {
		field string
		typ   v1alpha1.AuthType
	}{{"basic", v1alpha1.AuthBasic}, {"bearer", v1alpha1.AuthBearer}} {
		name := str(u, "spec", "authInfo", a.field, "secretRef", "name")
		if name == "" {
			continue
		}
		ns := str(u, "spec", "authInfo", a.field, "secretRef", "namespace")
		if cluster && ns != catalogNamespace {
			return nil, fmt.Errorf("its credentials are in Secret %q in namespace %q, but a cluster broker's credentials must be in the catalog namespace %q: copy the Secret there under the same name (keys %s), then run this again",
				name, ns, catalogNamespace, authKeys(a.typ))
		}
		b.Spec.Auth = &v1alpha1.BrokerAuth{Type: a.typ, SecretRef: v1alpha1.SecretReference{Name: name}}
		break
	}
	if strings.EqualFold(str(u, "spec", "relistBehavior"), "Duration") {
		if d := str(u, "spec", "relistDuration"); d != "" {
			dur, err := time.ParseDuration(d)
			if err != nil {
				return nil, fmt.Errorf("its spec.relistDuration %q is not a duration", d)
			}
			b.Spec.RelistInterval = &metav1.Duration{Duration: dur}
		}
	}
	cr, _, _ := unstructured.NestedStringSlice(u.Object, "spec", "catalogRestrictions", "serviceClass")
	pr, _, _ := unstructured.NestedStringSlice(u.Object, "spec", "catalogRestrictions", "servicePlan")
	if len(cr) > 0 || len(pr) > 0 {
		b.Spec.CatalogRestrictions = &v1alpha1.CatalogRestrictions{ServiceClass: cr, ServicePlan: pr}
		if _, err := catalogsync.ParseRestrictions(b.Spec.CatalogRestrictions); err != nil {
			return nil, fmt.Errorf("its catalog restrictions cannot be read: %w", err)
		}
	}
	return b, nil
}

func authKeys(t v1alpha1.AuthType) string {
	if t == v1alpha1.AuthBearer {
		return `"token"`
	}
	return `"username" and "password"`
}

func (m *Migrator) broker(ctx context.Context, o Options, u *unstructured.Unstructured) (oc Outcome) {
	scope := v1alpha1.ScopeNamespace
	if u.GetNamespace() == "" {
		scope = v1alpha1.ScopeCluster
	}
	key := brokerKey(scope, u.GetNamespace(), u.GetName())
	defer func() {
		m.brokers[key] = ""
		if oc.Result == ResultSkipped {
			m.brokers[key] = oc.Reason
		}
	}()
	b, err := m.brokerRecord(u)
	if err != nil {
		return skipped(true, "%v", err)
	}
	from := origin(kindOf(u), u)
	existing, err := m.cfg.Store.Brokers().Get(ctx, b.Namespace, b.Name)
	switch {
	case err == nil:
		if existing.Annotations[store.AnnotationMigratedFrom] != from && existing.Spec.URL != b.Spec.URL {
			return skipped(true, "broker %q is registered already in namespace %q with another URL (%s): deregister it or rename the old broker", b.Name, b.Namespace, existing.Spec.URL)
		}
		if existing.Status.LastCatalogFetch != nil {
			return Outcome{Result: ResultAlreadyMigrated, clean: true}
		}
		if o.DryRun {
			return Outcome{Result: ResultWouldMigrate, Reason: "recorded; its catalog is still to be fetched"}
		}
		// A run interrupted after the record was written: finish what register does.
		_ = m.cfg.Store.ProtectBrokerSecret(ctx, existing)
		// On the user's own command, as register's fetch is.
		if _, err := m.cfg.Syncer.Sync(engine.WithRunnersRights(ctx), existing); err != nil {
			return skipped(true, "its catalog cannot be fetched: %v; fix the cause, then run this again", err)
		}
		return Outcome{Result: ResultMigrated, Reason: "catalog fetched", clean: true}
	case !store.IsNotFound(err):
		return skipped(true, "%v", err)
	}
	if o.DryRun {
		return Outcome{Result: ResultWouldMigrate}
	}
	b.Annotations = map[string]string{store.AnnotationMigratedFrom: from}
	_, err = m.cfg.Syncer.Record(ctx, b, func(line string) { fmt.Fprintln(m.cfg.ErrOut, line) })
	var fe *catalogsync.FetchError
	if errors.As(err, &fe) {
		m.wrote()
		return skipped(true, "recorded, but its catalog cannot be fetched (%v): fix the cause, then run this again", fe)
	}
	if err != nil {
		return skipped(true, "%v", err)
	}
	m.wrote()
	return Outcome{Result: ResultMigrated, clean: true}
}

func kindOf(u *unstructured.Unstructured) string {
	if k := u.GetKind(); k != "" {
		return k
	}
	return "Object"
}
