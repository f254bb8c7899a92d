// Package migrate brings the objects of the retired Kubernetes Service Catalog
// (servicecatalog.k8s.io/v1beta1: brokers, instances and bindings) over to kubectl-catalog
// records, keeping every OSB id and sending nothing but catalog GETs to brokers; with
// Options.Cleanup it then deletes the old objects.
//
// Run goes through them in order, one file each: brokers (brokers.go), instances
// (instances.go), bindings (bindings.go), and the old objects' deletion (cleanup.go).
package migrate

import (
	"context"
	"fmt"
	"io"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/catalogsync"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// GroupVersion is the retired Service Catalog's API.
const GroupVersion = "servicecatalog.k8s.io/v1beta1"

func gvr(resource string) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: "servicecatalog.k8s.io", Version: "v1beta1", Resource: resource}
}

// The retired API's resources that migration reads.
var (
	ClusterServiceBrokers = gvr("clusterservicebrokers")
	ServiceBrokers        = gvr("servicebrokers")
	ClusterServiceClasses = gvr("clusterserviceclasses")
	ClusterServicePlans   = gvr("clusterserviceplans")
	ServiceClasses        = gvr("serviceclasses")
	ServicePlans          = gvr("serviceplans")
	ServiceInstances      = gvr("serviceinstances")
	ServiceBindings       = gvr("servicebindings")
)

// Results of an object's migration.
const (
	ResultMigrated        = "migrated"
	ResultAlreadyMigrated = "already migrated"
	ResultWouldMigrate    = "would migrate"
	ResultSkipped         = "skipped"
	ResultDeleted         = "deleted"
	ResultWouldDelete     = "would delete"
)

// Outcome is what migration did, or would do, with one old object.
type Outcome struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	Result    string `json:"result"`
	Reason    string `json:"reason,omitempty"`
	// NeedsPerson is true for a skipped object that stays stranded until someone acts.
	NeedsPerson bool `json:"needsPerson,omitempty"`

	uid types.UID
	gvr schema.GroupVersionResource
	// clean says --cleanup may delete the old object: it was migrated, or the broker
	// holds nothing of it.
	clean bool
	// instance is the name of a binding's instance (spec.instanceRef).
	instance string
}

// NotServedError says the cluster serves no servicecatalog.k8s.io/v1beta1.
type NotServedError struct{ Err error }

func (e *NotServedError) Error() string {
	return fmt.Sprintf("the retired Service Catalog API (%s) is not served by this cluster: neither its API server nor its CRDs are installed, so there is nothing to migrate", GroupVersion)
}

func (e *NotServedError) Unwrap() error { return e.Err }

// Config is what a Migrator works with.
type Config struct {
	Dynamic   dynamic.Interface
	Discovery discovery.DiscoveryInterface
	Core      kubernetes.Interface
	Store     *store.Store
	// Syncer records brokers and fetches their catalogs: the engine's
	// (cmdutil.Engine.Syncer), which refuses the brokers the engine does not trust.
	Syncer *catalogsync.Syncer
	Engine *engine.Engine
	// CatalogNamespace holds cluster-scoped brokers.
	CatalogNamespace string
	// ErrOut gets progress lines.
	ErrOut io.Writer
	// AfterWrite is called after each object migrated or deleted (a test knob).
	AfterWrite func()
}

// Options choose what to migrate.
type Options struct {
	// Namespace limits instances, bindings and namespaced brokers to one namespace;
	// empty: every namespace. Cluster brokers are always migrated.
	Namespace string
	// DryRun reports what would be done without writing anything or calling a broker.
	DryRun bool
	// Cleanup deletes the old objects once migrated (their finalizers removed first).
	Cleanup bool
}

// Migrator migrates one cluster's Service Catalog objects.
type Migrator struct {
	cfg Config
	// brokers: "Cluster/NAME" or "Namespace/NS/NAME" to why it is not usable ("" when it is).
	brokers map[string]string
	// instances: "NS/NAME" to why it is not migrated ("" when it is).
	instances map[string]string
	// gone: "NS/NAME" of old instances migrated before whose record was deleted since
	// (deletedSince).
	gone map[string]bool
	// classCache holds the class lists read (classes).
	classCache map[string][]*v1alpha1.ServiceClass
}

// New returns a Migrator.
func New(cfg Config) *Migrator {
	if cfg.ErrOut == nil {
		cfg.ErrOut = io.Discard
	}
	return &Migrator{cfg: cfg}
}

// Served reports whether the cluster serves the retired API, by aggregated API server or
// by CRDs (both answer discovery alike).
func (m *Migrator) Served() error {
	rl, err := m.cfg.Discovery.ServerResourcesForGroupVersion(GroupVersion)
	if err != nil || rl == nil || len(rl.APIResources) == 0 {
		if err != nil && !apierrors.IsNotFound(err) && !strings.Contains(err.Error(), "not found") {
			return fmt.Errorf("cannot tell whether the cluster serves %s: %w", GroupVersion, err)
		}
		return &NotServedError{Err: err}
	}
	return nil
}

// Run migrates (or, with DryRun, plans to migrate) every broker, instance and binding, in
// that order, and returns one Outcome per old object. Failures of single objects are
// outcomes; an error means migration could not go on at all.
func (m *Migrator) Run(ctx context.Context, o Options) ([]Outcome, error) {
	if err := m.Served(); err != nil {
		return nil, err
	}
	m.brokers, m.instances, m.classCache = map[string]string{}, map[string]string{}, map[string][]*v1alpha1.ServiceClass{}
	m.gone = map[string]bool{}
	var out []Outcome
	for _, res := range []struct {
		gvr  schema.GroupVersionResource
		kind string
		one  func(context.Context, Options, *unstructured.Unstructured) Outcome
	}{
		{ClusterServiceBrokers, "ClusterServiceBroker", m.broker},
		{ServiceBrokers, "ServiceBroker", m.broker},
		{ServiceInstances, "ServiceInstance", m.instance},
		{ServiceBindings, "ServiceBinding", m.binding},
	} {
		ns := o.Namespace
		if res.gvr == ClusterServiceBrokers {
			ns = ""
		}
		items, err := m.list(ctx, res.gvr, ns)
		if err != nil {
			return out, err
		}
		for i := range items {
			u := &items[i]
			oc := res.one(ctx, o, u)
			oc.Kind, oc.Namespace, oc.Name, oc.uid, oc.gvr = res.kind, u.GetNamespace(), u.GetName(), u.GetUID(), res.gvr
			if res.gvr == ServiceBindings {
				oc.instance = str(u, "spec", "instanceRef", "name")
			}
			if oc.Result == ResultWouldMigrate {
				oc.clean = true // a dry run's cleanup says what the real one would delete
			}
			out = append(out, oc)
			if ctx.Err() != nil {
				return out, ctx.Err()
			}
		}
	}
	if o.Cleanup {
		out = m.cleanup(ctx, o, out)
	}
	return out, nil
}

func (m *Migrator) list(ctx context.Context, r schema.GroupVersionResource, ns string) ([]unstructured.Unstructured, error) {
	var items []unstructured.Unstructured
	opts := metav1.ListOptions{Limit: 500}
	for {
		l, err := m.cfg.Dynamic.Resource(r).Namespace(ns).List(ctx, opts)
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("cannot list %s: %w", r.Resource, err)
		}
		items = append(items, l.Items...)
		if l.GetContinue() == "" {
			return items, nil
		}
		opts.Continue = l.GetContinue()
	}
}

func (m *Migrator) wrote() {
	if m.cfg.AfterWrite != nil {
		m.cfg.AfterWrite()
	}
}

// origin is the AnnotationMigratedFrom value of an old object.
func origin(kind string, u *unstructured.Unstructured) string {
	return strings.Join([]string{kind, u.GetNamespace(), u.GetName(), string(u.GetUID())}, "/")
}

func skipped(needsPerson bool, format string, args ...any) Outcome {
	return Outcome{Result: ResultSkipped, Reason: fmt.Sprintf(format, args...), NeedsPerson: needsPerson, clean: !needsPerson}
}

func str(u *unstructured.Unstructured, path ...string) string {
	s, _, _ := unstructured.NestedString(u.Object, path...)
	return s
}
