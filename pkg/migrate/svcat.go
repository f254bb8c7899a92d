// Package migrate brings the objects of the retired Kubernetes Service Catalog
// (servicecatalog.k8s.io/v1beta1: brokers, instances and bindings) over to kubectl-catalog
// records, keeping every OSB id and sending nothing but catalog GETs to brokers.
package migrate

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/catalog"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/catalog/catalogsync"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/catalog/marketplace"
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
	Engine *catalog.Engine
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

// ---- brokers ----

func brokerKey(scope v1alpha1.Scope, ns, name string) string {
	if scope == v1alpha1.ScopeCluster {
		return "Cluster/" + name
	}
	return "Namespace/" + ns + "/" + name
}

// brokerRecord is the record an old broker becomes, or why it cannot be made.
func (m *Migrator) brokerRecord(u *unstructured.Unstructured) (*v1alpha1.Broker, error) {
	cluster := u.GetNamespace() == ""
	b := &v1alpha1.Broker{ObjectMeta: metav1.ObjectMeta{Name: u.GetName(), Namespace: u.GetNamespace()}}
	b.Spec.Scope = v1alpha1.ScopeNamespace
	if cluster {
		b.Namespace, b.Spec.Scope = m.cfg.CatalogNamespace, v1alpha1.ScopeCluster
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
		if cluster && ns != m.cfg.CatalogNamespace {
			return nil, fmt.Errorf("its credentials are in Secret %q in namespace %q, but a cluster broker's credentials must be in the catalog namespace %q: copy the Secret there under the same name (keys %s), then run this again",
				name, ns, m.cfg.CatalogNamespace, authKeys(a.typ))
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
		if _, err := m.cfg.Syncer.Sync(catalog.WithRunnersRights(ctx), existing); err != nil {
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

// ---- instances ----

// resolved is an old instance's class and plan, as records.
type resolved struct {
	scope      v1alpha1.Scope
	brokerName string
	brokerNS   string
	class      *v1alpha1.ServiceClass
	plan       *v1alpha1.ServicePlan
}

// oldRef is how an old instance names its class or plan: by external name, by external
// id, or by the name of the old class or plan object.
type oldRef struct{ externalName, externalID, objectName string }

func (r oldRef) String() string {
	switch {
	case r.externalName != "":
		return fmt.Sprintf("%q", r.externalName)
	case r.externalID != "":
		return "id " + r.externalID
	}
	return fmt.Sprintf("object %q", r.objectName)
}

func (r oldRef) empty() bool { return r.externalName == "" && r.externalID == "" && r.objectName == "" }

func refsOf(u *unstructured.Unstructured, prefix string) (class, plan oldRef) {
	class = oldRef{
		externalName: str(u, "spec", prefix+"ClassExternalName"),
		externalID:   str(u, "spec", prefix+"ClassExternalID"),
		objectName:   str(u, "spec", prefix+"ClassName"),
	}
	plan = oldRef{
		externalName: str(u, "spec", prefix+"PlanExternalName"),
		externalID:   str(u, "spec", prefix+"PlanExternalID"),
		objectName:   str(u, "spec", prefix+"PlanName"),
	}
	if class.objectName == "" {
		class.objectName = str(u, "spec", prefix+"ClassRef", "name")
	}
	if plan.objectName == "" {
		plan.objectName = str(u, "spec", prefix+"PlanRef", "name")
	}
	return class, plan
}

// resolve finds the class and plan records of an old instance: through the old class
// and plan objects when they are still there (they name the broker), else among the
// classes of the migrated brokers of the instance's scope.
func (m *Migrator) resolve(ctx context.Context, u *unstructured.Unstructured) (*resolved, string) {
	ns := u.GetNamespace()
	scope := v1alpha1.ScopeCluster
	classRef, planRef := refsOf(u, "clusterService")
	if classRef.empty() {
		scope = v1alpha1.ScopeNamespace
		classRef, planRef = refsOf(u, "service")
	}
	if classRef.empty() || planRef.empty() {
		return nil, "it names no class or no plan"
	}
	classGVR, planGVR, brokerField, objNS := ClusterServiceClasses, ClusterServicePlans, "clusterServiceBrokerName", ""
	brokerNS := m.cfg.CatalogNamespace
	if scope == v1alpha1.ScopeNamespace {
		classGVR, planGVR, brokerField, objNS, brokerNS = ServiceClasses, ServicePlans, "serviceBrokerName", ns, ns
	}
	// The old class object, when still there, says the class's id and broker.
	var brokerName string
	if classRef.objectName != "" {
		if oc, err := m.cfg.Dynamic.Resource(classGVR).Namespace(objNS).Get(ctx, classRef.objectName, metav1.GetOptions{}); err == nil {
			brokerName = str(oc, "spec", brokerField)
			classRef.externalID = str(oc, "spec", "externalID")
		}
	}
	if planRef.objectName != "" {
		if op, err := m.cfg.Dynamic.Resource(planGVR).Namespace(objNS).Get(ctx, planRef.objectName, metav1.GetOptions{}); err == nil {
			planRef.externalID = str(op, "spec", "externalID")
			if brokerName == "" {
				brokerName = str(op, "spec", brokerField)
			}
		}
	}
	if classRef.externalName == "" && classRef.externalID == "" {
		return nil, fmt.Sprintf("its class (old object %q) is gone, so which class it is cannot be told", classRef.objectName)
	}
	if planRef.externalName == "" && planRef.externalID == "" {
		return nil, fmt.Sprintf("its plan (old object %q) is gone, so which plan it is cannot be told", planRef.objectName)
	}
	classes, err := m.classes(ctx, brokerNS, brokerName, scope)
	if err != nil {
		return nil, err.Error()
	}
	var found []*v1alpha1.ServiceClass
	for _, c := range classes {
		if (classRef.externalID != "" && c.Spec.ID == classRef.externalID) || (classRef.externalID == "" && c.Spec.ExternalName == classRef.externalName) {
			found = append(found, c)
		}
	}
	if len(found) == 0 {
		where := "no migrated broker"
		if brokerName != "" {
			where = fmt.Sprintf("broker %q", brokerName)
			if why := m.brokers[brokerKey(scope, ns, brokerName)]; why != "" {
				return nil, fmt.Sprintf("its broker %q is not migrated: %s", brokerName, why)
			}
		}
		return nil, fmt.Sprintf("class %s is not offered by %s: check the broker's catalog (\"kubectl catalog get classes\")", classRef, where)
	}
	if len(found) > 1 {
		name := classRef.externalName
		if name == "" {
			name = classRef.externalID
		}
		e := marketplace.AmbiguousClass(name, brokerNS, found)
		e.Next = "its old class object, which would say which, is gone"
		return nil, e.Error()
	}
	c := found[0]
	if why := m.brokers[brokerKey(scope, ns, c.Spec.BrokerName)]; why != "" {
		return nil, fmt.Sprintf("its broker %q is not migrated: %s", c.Spec.BrokerName, why)
	}
	var plan *v1alpha1.ServicePlan
	for i := range c.Spec.Plans {
		p := &c.Spec.Plans[i]
		if (planRef.externalID != "" && p.ID == planRef.externalID) || (planRef.externalID == "" && p.ExternalName == planRef.externalName) {
			plan = p
		}
	}
	if plan == nil || planRemoved(c, plan.ID) {
		return nil, fmt.Sprintf("plan %s of class %q no longer exists at broker %q: the broker cannot be asked about the instance under a plan it does not offer; check its catalog (\"kubectl catalog get plans %s\")",
			planRef, c.Spec.ExternalName, c.Spec.BrokerName, c.Spec.ExternalName)
	}
	return &resolved{scope: scope, brokerName: c.Spec.BrokerName, brokerNS: brokerNS, class: c, plan: plan}, ""
}

// classes lists the class records of a namespace (of one broker, or of all), once per
// run: every instance of a broker resolves against the same list.
func (m *Migrator) classes(ctx context.Context, ns, broker string, scope v1alpha1.Scope) ([]*v1alpha1.ServiceClass, error) {
	key := strings.Join([]string{ns, broker, string(scope)}, "/")
	if l, ok := m.classCache[key]; ok {
		return l, nil
	}
	l, err := m.cfg.Store.Classes().List(ctx, ns, store.Filter{Broker: broker, Scope: scope})
	if err != nil {
		return nil, err
	}
	m.classCache[key] = l
	return l, nil
}

func planRemoved(c *v1alpha1.ServiceClass, id string) bool {
	if c.Status.RemovedFromBroker {
		return true
	}
	for _, p := range c.Status.Plans {
		if p.ID == id && p.RemovedFromBroker {
			return true
		}
	}
	return false
}

// condition returns the status and message of an old object's condition.
func condition(u *unstructured.Unstructured, typ string) (status, reason, msg string) {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		cm, ok := c.(map[string]any)
		if !ok || cm["type"] != typ {
			continue
		}
		s, _ := cm["status"].(string)
		r, _ := cm["reason"].(string)
		mg, _ := cm["message"].(string)
		return s, r, mg
	}
	return "", "", ""
}

func failure(u *unstructured.Unstructured) string {
	for _, typ := range []string{"Failed", "Ready"} {
		if s, r, msg := condition(u, typ); r != "" && (typ == "Ready" || s == "True") {
			return fmt.Sprintf(" (%s: %s)", r, msg)
		}
	}
	return ""
}

func rawParameters(u *unstructured.Unstructured) (*runtime.RawExtension, error) {
	v, ok, _ := unstructured.NestedFieldNoCopy(u.Object, "spec", "parameters")
	if !ok || v == nil {
		return nil, nil
	}
	if _, isObj := v.(map[string]any); !isObj {
		return nil, errors.New("its spec.parameters is not a JSON object")
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return &runtime.RawExtension{Raw: raw}, nil
}

func parametersFrom(u *unstructured.Unstructured) ([]v1alpha1.ParametersFromSource, error) {
	list, _, _ := unstructured.NestedSlice(u.Object, "spec", "parametersFrom")
	var out []v1alpha1.ParametersFromSource
	for _, x := range list {
		xm, _ := x.(map[string]any)
		ref, _ := xm["secretKeyRef"].(map[string]any)
		name, _ := ref["name"].(string)
		key, _ := ref["key"].(string)
		if name == "" {
			return nil, errors.New("an entry of its spec.parametersFrom names no Secret")
		}
		out = append(out, v1alpha1.ParametersFromSource{SecretKeyRef: &v1alpha1.SecretKeyReference{Name: name, Key: key}})
	}
	return out, nil
}

// heldPlanID is the OSB id of the plan the broker holds an old instance on, from the
// properties svcat recorded after its last successful call; "" when it recorded none.
func heldPlanID(u *unstructured.Unstructured) string {
	for _, f := range []string{"clusterServicePlanExternalID", "servicePlanExternalID"} {
		if id := str(u, "status", "externalProperties", f); id != "" {
			return id
		}
	}
	return ""
}

func inProgressPlanID(u *unstructured.Unstructured) string {
	for _, f := range []string{"clusterServicePlanExternalID", "servicePlanExternalID"} {
		if id := str(u, "status", "inProgressProperties", f); id != "" {
			return id
		}
	}
	return ""
}

func (m *Migrator) instance(ctx context.Context, o Options, u *unstructured.Unstructured) (oc Outcome) {
	key := u.GetNamespace() + "/" + u.GetName()
	defer func() {
		m.instances[key] = ""
		if oc.Result == ResultSkipped {
			m.instances[key] = oc.Reason
		}
	}()
	from := origin("ServiceInstance", u)
	// svcat's orphan mitigation (deleting at the broker what a failed provision may
	// have left) carries on as a pending deprovision of the same id: reconcile sends it,
	// and a broker that holds nothing answers 410 Gone, which finishes it.
	mitigating := orphanMitigation(u)
	deleting := u.GetDeletionTimestamp() != nil || mitigating
	existing, err := m.cfg.Store.Instances().Get(ctx, u.GetNamespace(), u.GetName())
	switch {
	case err == nil:
		if existing.Annotations[store.AnnotationMigratedFrom] != from {
			return skipped(true, "an instance record %q exists already in namespace %q that was not migrated from this object: rename or remove one of them, then run this again", u.GetName(), u.GetNamespace())
		}
		if deleting && existing.DeletionTimestamp == nil {
			if o.DryRun {
				return Outcome{Result: ResultWouldMigrate, Reason: "its deprovision is still to be recorded"}
			}
			if err := m.cfg.Store.Instances().Delete(ctx, existing.Namespace, existing.Name); err != nil {
				return skipped(true, "%v", err)
			}
			m.wrote()
			return Outcome{Result: ResultMigrated, Reason: "deprovision pending", clean: true}
		}
		return Outcome{Result: ResultAlreadyMigrated, clean: true}
	case !store.IsNotFound(err):
		return skipped(true, "%v", err)
	}

	id := str(u, "spec", "externalID")
	if id == "" {
		return skipped(true, "it has no spec.externalID, so the broker's instance cannot be named")
	}
	provisioned := str(u, "status", "provisionStatus") == "Provisioned"
	if str(u, "status", "provisionStatus") == "" {
		s, _, _ := condition(u, "Ready")
		provisioned = s == "True"
	}
	if deleting && str(u, "status", "deprovisionStatus") == "Succeeded" {
		return skipped(false, "it is deprovisioned already: the broker holds nothing of it")
	}
	if mitigating {
		// The broker may hold the instance: what svcat was deleting is deleted.
		provisioned = true
	}
	var inFlight *catalog.AdoptedOperation
	if cur := str(u, "status", "currentOperation"); cur != "" {
		async, _, _ := unstructured.NestedBool(u.Object, "status", "asyncOpInProgress")
		if !async {
			return skipped(true, "a %s request was in progress when svcat stopped and its outcome was never recorded: ask the broker's operator about instance id %s", strings.ToLower(cur), id)
		}
		var t v1alpha1.OperationType
		switch cur {
		case "Provision":
			t = v1alpha1.OperationProvision
		case "Update":
			t = v1alpha1.OperationUpdate
		case "Deprovision":
			t = v1alpha1.OperationDeprovision
		default:
			return skipped(true, "its status.currentOperation %q is not one svcat knew", cur)
		}
		inFlight = &catalog.AdoptedOperation{Type: t, OperationKey: str(u, "status", "lastOperation")}
		if ts := str(u, "status", "operationStartTime"); ts != "" {
			if st, err := time.Parse(time.RFC3339, ts); err == nil {
				inFlight.StartedAt = st
			}
		}
	}
	if !provisioned && (inFlight == nil || inFlight.Type != v1alpha1.OperationProvision) {
		if deleting {
			return skipped(false, "it is being deleted and was never provisioned: the broker holds nothing of it")
		}
		return skipped(false, "it was never provisioned%s: the broker holds nothing of it; provision it again with \"kubectl catalog provision\" if it is still wanted", failure(u))
	}
	r, why := m.resolve(ctx, u)
	if why != "" {
		if o.DryRun && strings.Contains(why, "is not offered by") {
			return Outcome{Result: ResultWouldMigrate, Reason: "its class and plan are checked once its broker's catalog is fetched"}
		}
		return skipped(true, "%s", why)
	}
	params, err := rawParameters(u)
	if err != nil {
		return skipped(true, "%v", err)
	}
	from2, err := parametersFrom(u)
	if err != nil {
		return skipped(true, "%v", err)
	}
	rec := &v1alpha1.ServiceInstance{
		ObjectMeta: metav1.ObjectMeta{Namespace: u.GetNamespace(), Name: u.GetName(), Annotations: map[string]string{store.AnnotationMigratedFrom: from}},
		Spec: v1alpha1.ServiceInstanceSpec{
			Scope: r.scope, BrokerName: r.brokerName,
			ClassExternalName: r.class.Spec.ExternalName, ClassID: r.class.Spec.ID,
			PlanExternalName: r.plan.ExternalName, PlanID: r.plan.ID,
			Parameters: params, ParametersFrom: from2, ExternalID: id,
		},
	}
	a := catalog.InstanceAdoption{Record: rec, Class: r.class, InFlight: inFlight, DashboardURL: str(u, "status", "dashboardURL")}
	if provisioned {
		a.HeldPlanID = heldPlanID(u)
		if a.HeldPlanID == "" {
			a.HeldPlanID = r.plan.ID
		}
		if a.HeldPlanID != r.plan.ID && r.class.PlanByID(a.HeldPlanID) == nil {
			return skipped(true, "the plan the broker holds it on (id %s) no longer exists at broker %q: check its catalog (\"kubectl catalog get plans %s\")", a.HeldPlanID, r.brokerName, r.class.Spec.ExternalName)
		}
		gen, _, _ := unstructured.NestedInt64(u.Object, "status", "reconciledGeneration")
		// A deletion raises an object's generation too, and needs no parameters.
		a.ParametersHeld = inFlight == nil && (gen == u.GetGeneration() || deleting)
	}
	if inFlight != nil && inFlight.Type == v1alpha1.OperationUpdate {
		inFlight.PlanID = inProgressPlanID(u)
	}
	if o.DryRun {
		return Outcome{Result: ResultWouldMigrate, Reason: describeInstance(a, deleting, mitigating)}
	}
	if _, err := m.cfg.Engine.AdoptInstance(ctx, a); err != nil {
		return skipped(true, "%v", err)
	}
	m.wrote()
	if deleting {
		if err := m.cfg.Store.Instances().Delete(ctx, rec.Namespace, rec.Name); err != nil {
			return skipped(true, "recorded, but its deprovision could not be: %v; run this again", err)
		}
		m.wrote()
	}
	return Outcome{Result: ResultMigrated, Reason: describeInstance(a, deleting, mitigating), clean: true}
}

// orphanMitigation reports whether svcat was deleting, at the broker, what a failed
// provision of u left: its flag says so, or a deprovision is under way while the object
// itself is not being deleted.
func orphanMitigation(u *unstructured.Unstructured) bool {
	if b, _, _ := unstructured.NestedBool(u.Object, "status", "orphanMitigationInProgress"); b {
		return true
	}
	return u.GetDeletionTimestamp() == nil && str(u, "status", "currentOperation") == "Deprovision"
}

func describeInstance(a catalog.InstanceAdoption, deleting, mitigating bool) string {
	var parts []string
	if mitigating {
		parts = append(parts, "svcat's orphan mitigation goes on")
	}
	if op := a.InFlight; op != nil {
		parts = append(parts, fmt.Sprintf("%s in progress, polled by reconcile", strings.ToLower(string(op.Type))))
	}
	if deleting && (a.InFlight == nil || a.InFlight.Type != v1alpha1.OperationDeprovision) {
		parts = append(parts, "deprovision pending: reconcile deprovisions it")
	}
	if a.HeldPlanID != "" && !a.ParametersHeld && a.InFlight == nil {
		parts = append(parts, "the spec changed after svcat's last call: reconcile sends the update")
	}
	return strings.Join(parts, "; ")
}

// ---- bindings ----

func secretTransforms(u *unstructured.Unstructured) ([]v1alpha1.SecretTransform, error) {
	list, ok, _ := unstructured.NestedSlice(u.Object, "spec", "secretTransforms")
	if !ok {
		return nil, nil
	}
	raw, err := json.Marshal(list)
	if err != nil {
		return nil, err
	}
	var out []v1alpha1.SecretTransform
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, fmt.Errorf("its spec.secretTransforms cannot be read: %w", err)
	}
	return out, nil
}

func (m *Migrator) binding(ctx context.Context, o Options, u *unstructured.Unstructured) Outcome {
	ns := u.GetNamespace()
	from := origin("ServiceBinding", u)
	deleting := u.GetDeletionTimestamp() != nil
	secretName := str(u, "spec", "secretName")
	if secretName == "" {
		secretName = u.GetName()
	}
	existing, err := m.cfg.Store.Bindings().Get(ctx, ns, u.GetName())
	switch {
	case err == nil:
		if existing.Annotations[store.AnnotationMigratedFrom] != from {
			return skipped(true, "a binding record %q exists already in namespace %q that was not migrated from this object: rename or remove one of them, then run this again", u.GetName(), ns)
		}
		result := ResultAlreadyMigrated
		secret, err := m.cfg.Store.GetSecret(ctx, ns, existing.Spec.SecretName)
		if err != nil && !store.IsNotFound(err) {
			return skipped(true, "%v", err)
		}
		if err == nil && (!store.OwnedBy(secret, existing) || ownedByUID(secret, u.GetUID())) {
			if o.DryRun {
				return Outcome{Result: ResultWouldMigrate, Reason: fmt.Sprintf("Secret %q is still to be adopted", secretName)}
			}
			if _, err := m.cfg.Store.AdoptBindingSecret(ctx, existing, u.GetUID()); err != nil {
				return skipped(true, "%v", err)
			}
			m.wrote()
			result = ResultMigrated
		}
		if deleting && existing.DeletionTimestamp == nil {
			if o.DryRun {
				return Outcome{Result: ResultWouldMigrate, Reason: "its unbind is still to be recorded"}
			}
			if err := m.cfg.Store.Bindings().Delete(ctx, ns, existing.Name); err != nil {
				return skipped(true, "%v", err)
			}
			m.wrote()
			result = ResultMigrated
		}
		return Outcome{Result: result, clean: true}
	case !store.IsNotFound(err):
		return skipped(true, "%v", err)
	}
	id := str(u, "spec", "externalID")
	if id == "" {
		return skipped(true, "it has no spec.externalID, so the broker's binding cannot be named")
	}
	instName := str(u, "spec", "instanceRef", "name")
	if why, ok := m.instances[ns+"/"+instName]; !ok || why != "" {
		if !ok {
			why = "there is no such ServiceInstance"
		}
		return skipped(true, "its instance %q is not migrated: %s", instName, why)
	}
	if deleting && str(u, "status", "unbindStatus") == "Succeeded" {
		return skipped(false, "it is unbound already: the broker holds nothing of it")
	}
	if b, _, _ := unstructured.NestedBool(u.Object, "status", "orphanMitigationInProgress"); b {
		return skipped(true, "svcat was deleting at the broker what a failed bind left (orphan mitigation) under id %s: check with the broker's operator that it is gone, then remove this object", id)
	}
	if cur := str(u, "status", "currentOperation"); cur != "" {
		return skipped(true, "a %s was in progress when svcat stopped, and its outcome is unknown: ask the broker's operator about binding id %s, then remove this object", strings.ToLower(cur), id)
	}
	if s, _, _ := condition(u, "Ready"); s != "True" && !deleting {
		return skipped(false, "it was never bound%s: the broker holds nothing of it; bind again with \"kubectl catalog bind %s\" if it is still wanted", failure(u), instName)
	}
	if s, _, _ := condition(u, "Ready"); s != "True" && deleting && str(u, "status", "unbindStatus") != "Required" {
		return skipped(false, "it is being deleted and was never bound: the broker holds nothing of it")
	}
	secret, err := m.cfg.Core.CoreV1().Secrets(ns).Get(ctx, secretName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return skipped(true, "its credentials Secret %q is missing, so they cannot be carried over: unbind it at the broker by hand (binding id %s), or restore the Secret and run this again", secretName, id)
	}
	if err != nil {
		return skipped(true, "cannot read its credentials Secret %q: %v", secretName, err)
	}
	_ = secret
	params, err := rawParameters(u)
	if err != nil {
		return skipped(true, "%v", err)
	}
	pf, err := parametersFrom(u)
	if err != nil {
		return skipped(true, "%v", err)
	}
	tr, err := secretTransforms(u)
	if err != nil {
		return skipped(true, "%v", err)
	}
	if o.DryRun {
		reason := fmt.Sprintf("Secret %q adopted", secretName)
		if deleting {
			reason += "; unbind pending"
		}
		return Outcome{Result: ResultWouldMigrate, Reason: reason}
	}
	rec := &v1alpha1.ServiceBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: u.GetName(), Annotations: map[string]string{store.AnnotationMigratedFrom: from}},
		Spec: v1alpha1.ServiceBindingSpec{
			InstanceName: instName, ExternalID: id, Parameters: params, ParametersFrom: pf,
			SecretName: secretName, SecretTransforms: tr,
		},
	}
	if _, err := m.cfg.Engine.AdoptBinding(ctx, catalog.BindingAdoption{Record: rec, PreviousOwners: []types.UID{u.GetUID()}}); err != nil {
		return skipped(true, "%v", err)
	}
	m.wrote()
	reason := fmt.Sprintf("Secret %q adopted", secretName)
	if deleting {
		if err := m.cfg.Store.Bindings().Delete(ctx, ns, rec.Name); err != nil {
			return skipped(true, "recorded, but its unbind could not be: %v; run this again", err)
		}
		m.wrote()
		reason += "; unbind pending: reconcile unbinds it"
	}
	return Outcome{Result: ResultMigrated, Reason: reason, clean: true}
}

func ownedByUID(obj metav1.Object, uid types.UID) bool {
	for _, r := range obj.GetOwnerReferences() {
		if r.UID == uid {
			return true
		}
	}
	return false
}

// ---- cleanup ----

// cleanup deletes the old objects that were migrated, or hold nothing at the broker:
// bindings first, then instances, then brokers none of whose instances stays behind.
// Their finalizers are removed first, since no controller is left to remove them.
func (m *Migrator) cleanup(ctx context.Context, o Options, out []Outcome) []Outcome {
	stay := map[string]bool{} // brokers an old instance left behind still uses
	for _, oc := range out {
		if oc.Kind == "ServiceInstance" && !oc.clean {
			stay["any"] = true
		}
	}
	for _, kind := range []string{"ServiceBinding", "ServiceInstance", "ServiceBroker", "ClusterServiceBroker"} {
		for i := range out {
			oc := &out[i]
			if oc.Kind != kind || !oc.clean {
				continue
			}
			if (kind == "ServiceBroker" || kind == "ClusterServiceBroker") && stay["any"] {
				oc.Reason = join(oc.Reason, "old object kept: an instance that was not migrated may still use it")
				continue
			}
			if o.DryRun {
				oc.Reason = join(oc.Reason, "old object "+ResultWouldDelete)
				continue
			}
			if err := m.deleteOld(ctx, oc); err != nil {
				oc.Reason = join(oc.Reason, fmt.Sprintf("old object not deleted: %v", err))
				oc.NeedsPerson = true
				continue
			}
			oc.Reason = join(oc.Reason, "old object "+ResultDeleted)
			m.wrote()
		}
	}
	return out
}

func join(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

func (m *Migrator) deleteOld(ctx context.Context, oc *Outcome) error {
	ri := m.cfg.Dynamic.Resource(oc.gvr).Namespace(oc.Namespace)
	patch := []byte(fmt.Sprintf(`{"metadata":{"finalizers":null,"uid":%q}}`, oc.uid))
	if _, err := ri.Patch(ctx, oc.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	}
	err := ri.Delete(ctx, oc.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &oc.uid}})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
