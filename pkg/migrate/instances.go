package migrate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/marketplace"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

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
	if oc, done := m.existingInstance(ctx, o, u, from, deleting); done {
		return oc
	}
	if oc, done := deletedSince("instance", u); done {
		m.gone[key] = true
		return oc
	}

	id := str(u, "spec", "externalID")
	if id == "" {
		return skipped(true, "it has no spec.externalID, so the broker's instance cannot be named")
	}
	provisioned := wasProvisioned(u)
	if deleting && str(u, "status", "deprovisionStatus") == "Succeeded" {
		return skipped(false, "it is deprovisioned already: the broker holds nothing of it")
	}
	if mitigating {
		// The broker may hold the instance: what svcat was deleting is deleted.
		provisioned = true
	}
	inFlight, stop := inFlightOperation(u, id)
	if stop != nil {
		return *stop
	}
	if !provisioned && (inFlight == nil || inFlight.Type != v1alpha1.OperationProvision) {
		if deleting {
			return skipped(false, "it is being deleted and was never provisioned: the broker holds nothing of it")
		}
		return skipped(false, "it was never provisioned%s: the broker holds nothing of it; provision it again with \"kubectl catalog provision\" if it is still wanted", failure(u))
	}
	a, stop := m.instanceAdoption(ctx, o, u, from, id, inFlight, provisioned, deleting)
	if stop != nil {
		return *stop
	}
	if o.DryRun {
		return Outcome{Result: ResultWouldMigrate, Reason: describeInstance(a, deleting, mitigating)}
	}
	rec, err := m.cfg.Engine.AdoptInstance(ctx, a)
	if err != nil {
		return skipped(true, "%v", err)
	}
	m.wrote()
	reason := describeInstance(a, deleting, mitigating)
	if err := m.markMigrated(ctx, ServiceInstances, u, rec.UID); err != nil {
		reason = join(reason, markNote(err))
	}
	if deleting {
		if err := m.cfg.Store.Instances().Delete(ctx, a.Record.Namespace, a.Record.Name); err != nil {
			return skipped(true, "recorded, but its deprovision could not be: %v; run this again", err)
		}
		m.wrote()
	}
	return Outcome{Result: ResultMigrated, Reason: reason, clean: true}
}

// existingInstance is the outcome for an object whose instance record exists already
// (done): migrated from it before, or another record of the same name.
func (m *Migrator) existingInstance(ctx context.Context, o Options, u *unstructured.Unstructured, from string, deleting bool) (oc Outcome, done bool) {
	existing, err := m.cfg.Store.Instances().Get(ctx, u.GetNamespace(), u.GetName())
	switch {
	case err == nil:
		if existing.Annotations[store.AnnotationMigratedFrom] != from {
			return skipped(true, "an instance record %q exists already in namespace %q that was not migrated from this object: rename or remove one of them, then run this again", u.GetName(), u.GetNamespace()), true
		}
		note := ""
		if !o.DryRun {
			// The mark a run stopped after the record left to this one.
			if err := m.markMigrated(ctx, ServiceInstances, u, existing.UID); err != nil {
				note = markNote(err)
			}
		}
		if deleting && existing.DeletionTimestamp == nil {
			if o.DryRun {
				return Outcome{Result: ResultWouldMigrate, Reason: "its deprovision is still to be recorded"}, true
			}
			// Its claim first (see below): a record being deleted without one loses the
			// id, at its deprovision, to an older record whose spec names it.
			if err := m.cfg.Engine.ClaimSpecIDs(ctx, existing); err != nil {
				return skipped(true, "instance %q is recorded, but %v: run this again", existing.Name, err), true
			}
			if err := m.cfg.Store.Instances().Delete(ctx, existing.Namespace, existing.Name); err != nil {
				return skipped(true, "%v", err), true
			}
			m.wrote()
			return Outcome{Result: ResultMigrated, Reason: join("deprovision pending", note), clean: true}, true
		}
		if !o.DryRun && existing.DeletionTimestamp == nil {
			// The claim of its spec's id, made when it was recorded, may have failed
			// there (a fault, the run killed in between); once reconcile's first pass
			// has swept the cluster, nothing else makes it, and a settled instance's
			// bindings could never be bound or unbound without it. Making it is
			// idempotent.
			if err := m.cfg.Engine.ClaimSpecIDs(ctx, existing); err != nil {
				return skipped(true, "instance %q is recorded, but %v: run this again", existing.Name, err), true
			}
		}
		return Outcome{Result: ResultAlreadyMigrated, Reason: note, clean: true}, true
	case !store.IsNotFound(err):
		return skipped(true, "%v", err), true
	}
	return Outcome{}, false
}

// wasProvisioned says whether svcat saw the instance provisioned.
func wasProvisioned(u *unstructured.Unstructured) bool {
	if status := str(u, "status", "provisionStatus"); status != "" {
		return status == "Provisioned"
	}
	s, _, _ := condition(u, "Ready")
	return s == "True"
}

// inFlightOperation is the asynchronous operation svcat was polling, if any; stop is
// the outcome when the object cannot be migrated because of it.
func inFlightOperation(u *unstructured.Unstructured, id string) (op *engine.AdoptedOperation, stop *Outcome) {
	cur := str(u, "status", "currentOperation")
	if cur == "" {
		return nil, nil
	}
	async, _, _ := unstructured.NestedBool(u.Object, "status", "asyncOpInProgress")
	if !async {
		oc := skipped(true, "a %s request was in progress when svcat stopped and its outcome was never recorded: ask the broker's operator about instance id %s", strings.ToLower(cur), id)
		return nil, &oc
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
		oc := skipped(true, "its status.currentOperation %q is not one svcat knew", cur)
		return nil, &oc
	}
	op = &engine.AdoptedOperation{Type: t, OperationKey: str(u, "status", "lastOperation")}
	if ts := str(u, "status", "operationStartTime"); ts != "" {
		if st, err := time.Parse(time.RFC3339, ts); err == nil {
			op.StartedAt = st
		}
	}
	return op, nil
}

// instanceAdoption is what the engine adopts for the object: its record, its class and
// what the broker holds; stop is the outcome when it cannot be adopted.
func (m *Migrator) instanceAdoption(ctx context.Context, o Options, u *unstructured.Unstructured, from, id string,
	inFlight *engine.AdoptedOperation, provisioned, deleting bool) (a engine.InstanceAdoption, stop *Outcome) {
	r, why := m.resolve(ctx, u)
	if why != "" {
		if o.DryRun && strings.Contains(why, "is not offered by") {
			return a, &Outcome{Result: ResultWouldMigrate, Reason: "its class and plan are checked once its broker's catalog is fetched"}
		}
		oc := skipped(true, "%s", why)
		return a, &oc
	}
	params, paramsFrom, stop := m.parameters(ctx, u)
	if stop != nil {
		return a, stop
	}
	rec := &v1alpha1.ServiceInstance{
		ObjectMeta: metav1.ObjectMeta{Namespace: u.GetNamespace(), Name: u.GetName(), Annotations: map[string]string{store.AnnotationMigratedFrom: from}},
		Spec: v1alpha1.ServiceInstanceSpec{
			Scope: r.scope, BrokerName: r.brokerName,
			ClassExternalName: r.class.Spec.ExternalName, ClassID: r.class.Spec.ID,
			PlanExternalName: r.plan.ExternalName, PlanID: r.plan.ID,
			Parameters: params, ParametersFrom: paramsFrom, ExternalID: id,
		},
	}
	a = engine.InstanceAdoption{Record: rec, Class: r.class, InFlight: inFlight, DashboardURL: str(u, "status", "dashboardURL")}
	if provisioned {
		a.HeldPlanID = heldPlanID(u)
		if a.HeldPlanID == "" {
			a.HeldPlanID = r.plan.ID
		}
		if a.HeldPlanID != r.plan.ID && r.class.PlanByID(a.HeldPlanID) == nil {
			oc := skipped(true, "the plan the broker holds it on (id %s) no longer exists at broker %q: check its catalog (\"kubectl catalog get plans %s\")", a.HeldPlanID, r.brokerName, r.class.Spec.ExternalName)
			return a, &oc
		}
		gen, _, _ := unstructured.NestedInt64(u.Object, "status", "reconciledGeneration")
		// A deletion raises an object's generation too, and needs no parameters.
		a.ParametersHeld = inFlight == nil && (gen == u.GetGeneration() || deleting)
	}
	if inFlight != nil && inFlight.Type == v1alpha1.OperationUpdate {
		inFlight.PlanID = inProgressPlanID(u)
	}
	return a, nil
}

// parameters are the object's parameters and the Secrets they come from; stop is the
// outcome when they cannot be carried over.
func (m *Migrator) parameters(ctx context.Context, u *unstructured.Unstructured) (*runtime.RawExtension, []v1alpha1.ParametersFromSource, *Outcome) {
	params, err := rawParameters(u)
	if err != nil {
		oc := skipped(true, "%v", err)
		return nil, nil, &oc
	}
	from, err := parametersFrom(u)
	if err != nil {
		oc := skipped(true, "%v", err)
		return nil, nil, &oc
	}
	if why := m.authorOfSecrets(ctx, u, parameterSecrets(from), "its parameters come from Secrets (spec.parametersFrom: "+quotedList(parameterSecrets(from))+")"); why != "" {
		oc := skipped(true, "%s", why)
		return nil, nil, &oc
	}
	return params, from, nil
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

func describeInstance(a engine.InstanceAdoption, deleting, mitigating bool) string {
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
