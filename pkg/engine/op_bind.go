package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/ahead"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/marketplace"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/hint"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// BindRequest is what bind is asked for.
type BindRequest struct {
	// Namespace is the binding's namespace.
	Namespace string
	// Instance is the instance to bind; empty: Ask picks one of the instances of
	// Namespace that can be bound.
	Instance string
	// InstanceNamespace is the namespace of an instance another namespace shares with
	// Namespace; empty (or Namespace) for an instance of Namespace.
	InstanceNamespace string
	// Name is the binding's name (default: the instance's), SecretName its Secret's
	// (default: the binding's).
	Name, SecretName string
	// ExternalID is the OSB binding id; a fresh one when empty.
	ExternalID  string
	Parameters  ParametersInput
	Transforms  []v1alpha1.SecretTransform
	Projections []v1alpha1.WorkloadProjection

	// SecretTemplate renders Secret keys after the transforms (bind --secret-template,
	// spec.secretTemplate); nil for none.
	SecretTemplate *v1alpha1.SecretTemplate
	// Metadata are labels and annotations the record is created with.
	Metadata RecordMetadata
	DryRun   DryRun
	Follow   Follow
	// Ask picks the instance when none is given; nil when no one can be asked.
	Ask Asker
}

// BindResult is what bind did, for the verb to print.
type BindResult struct {
	// Namespace, Name, Instance and SecretName name the binding as recorded (the
	// defaults applied).
	Namespace, Name, Instance, SecretName string
	// Binding is the binding as the drive left it; for a dry run, as it would be
	// created (DryRunServer: as the API server accepted it). Nil when the drive did not
	// come back (a timeout, an interruption) or the binding was refused and removed.
	Binding *v1alpha1.ServiceBinding
	// Followed is where the drive left the binding.
	Followed Result
	// Changes are, for a dry run, the changes to the workloads of the projections, in
	// their order.
	Changes []WorkloadChange
}

// WorkloadChange is the change a projection makes to a workload.
type WorkloadChange struct {
	Workload v1alpha1.WorkloadProjection
	// Changed is false when the Secret is already projected into the workload.
	Changed bool
	// After is the workload as the projection leaves it.
	After runtime.Object
}

// ProjectionPreviewer is a Projector that also works out the change a projection would
// make to a workload without making it: computed (server false), or sent to the API
// server as a dry run so that validation and admission see it (server true). Bind
// checks the workloads of a new binding's projections with it before recording anything.
type ProjectionPreviewer interface {
	PreviewProjection(ctx context.Context, namespace, binding, secretName string, w v1alpha1.WorkloadProjection, server bool) (WorkloadChange, error)
}

// Bind binds an instance, as "kubectl catalog bind" does: everything is checked before
// anything is recorded (the instance may be bound by this namespace and is bindable,
// the binding's limit allows one more, the names are free, the Secrets the transforms
// read and the workloads of the projections exist, the parameters match the plan's
// binding schema), then the binding is recorded as the user's intent and driven as
// req.Follow says. A binding the engine then refuses for its instance's consumer rules
// (another bind may have taken the last place meanwhile) is removed again: nothing was
// sent to the broker. A dry run records nothing and calls no broker.
//
// A binding that ends failed, refused, gone or waiting for a retry is an error, with the
// result still carrying the binding.
func (e *Engine) Bind(ctx context.Context, req BindRequest) (BindResult, error) {
	if req.InstanceNamespace == req.Namespace {
		req.InstanceNamespace = ""
	}
	if req.Instance == "" {
		name, err := bindingVerbs{e}.askInstance(ctx, req)
		if err != nil {
			return BindResult{}, err
		}
		req.Instance = name
	}
	if req.Name == "" {
		req.Name = req.Instance
	}
	if req.SecretName == "" {
		req.SecretName = req.Name
	}
	res := BindResult{Namespace: req.Namespace, Name: req.Name, Instance: req.Instance, SecretName: req.SecretName}
	if !req.DryRun.Enabled() {
		e.readAhead(ctx, req.instanceNamespace(), true)
	}
	b, changes, inst, err := bindingVerbs{e}.checkBind(ctx, req)
	if err != nil {
		return res, err
	}
	if req.DryRun.Enabled() {
		return bindingVerbs{e}.bindDryRun(ctx, req, res, b, changes)
	}
	req.Follow.note("Binding instance %q as %q in namespace %q...", req.Instance, req.Name, req.Namespace)
	created, err := e.cfg.Store.Bindings().Create(req.DryRun.writes(ctx), b)
	if err != nil {
		if store.IsAlreadyExists(err) {
			return res, bindingNameTaken(req)
		}
		return res, err
	}
	_ = e.ClaimSpecIDs(ctx, created) // the binding's own step makes it otherwise
	// The binding's first step reads its instance again, and the broker the instance
	// names: both after the create, which is what makes a deprovision, an unshare or a
	// deregistration marked meanwhile seen. The broker is the one the instance named
	// when checked; its read goes out now, with the instance's, and so do the lists of
	// the check that no older record uses the binding's OSB id or the instance's (the
	// one it used when checked; the step lists again for another).
	if !inst.IsUserProvided() {
		ctx = withIDListsAhead(e, ctx, idKey{v1alpha1.KindServiceInstance, inst.CurrentExternalID()},
			idKey{v1alpha1.KindServiceBinding, created.CurrentExternalID()})
		ctx = withBrokerReadAhead(ctx, e.brokerNamespace(inst), inst.Spec.BrokerName, func(ctx context.Context) (*v1alpha1.Broker, error) {
			return e.cfg.Store.Brokers().Get(ctx, e.brokerNamespace(inst), inst.Spec.BrokerName)
		})
	}
	r, err := e.FollowBinding(ctx, req.Namespace, req.Name, "bind", created, req.Follow)
	if err != nil {
		return res, err
	}
	if err := e.dropRefusedBinding(ctx, r); err != nil {
		return res, err
	}
	res.Binding, res.Followed = r.Binding, r
	return res, boundError(req, r)
}

func bindingNameTaken(req BindRequest) error {
	return fmt.Errorf(`binding %q already exists in namespace %q: see it with "kubectl catalog describe binding %s -n %s", wait for what is under way on it with "%s", or choose another name with --name`,
		req.Name, req.Namespace, req.Name, req.Namespace, WaitCommand(v1alpha1.KindServiceBinding, req.Namespace, req.Name, WaitForReady))
}

// askInstance asks for the instance to bind among those of req.Namespace that can be
// bound.
func (e bindingVerbs) askInstance(ctx context.Context, req BindRequest) (string, error) {
	if req.Ask == nil {
		return "", inputErrorf(`bind needs the INSTANCE to bind: list the instances with %s`, hint.Quoted(req.Namespace, "get", "instances"))
	}
	items, err := e.cfg.Store.Instances().List(ctx, req.Namespace, store.Filter{})
	if err != nil && len(items) == 0 {
		return "", err
	}
	var names []string
	for _, i := range items {
		if i.Status.Phase == v1alpha1.PhaseReady && i.DeletionTimestamp == nil && (i.Status.Provisioned != nil || i.IsUserProvided()) {
			names = append(names, i.Name)
		}
	}
	if len(names) == 0 {
		return "", fmt.Errorf(`no instance in namespace %q is ready to be bound: provision one with %s`, req.Namespace, hint.Quoted(req.Namespace, "provision", "NAME", "--class", "CLASS", "--plan", "PLAN"))
	}
	sort.Strings(names)
	return req.Ask.Select("Instance to bind:", names, "")
}

// checkBind checks req against the cluster, and returns the binding to record, the
// changes its projections would make to the workloads (worked out, not made) and the
// instance as read.
func (e bindingVerbs) checkBind(ctx context.Context, req BindRequest) (*v1alpha1.ServiceBinding, []WorkloadChange, *v1alpha1.ServiceInstance, error) {
	// The names are checked after the instance, but read with it; so are the access
	// rules the engine checks the plan against.
	names := e.readBindNames(ctx, req)
	rules := ahead.Start(ctx, func() (marketplace.Rules, error) {
		return marketplace.LoadRules(ctx, e.cfg.Store, marketplace.InCatalogNamespace(e.cfg.CatalogNamespace))
	})
	inst, class, schemas, err := e.boundInstance(ctx, req)
	if err != nil {
		return nil, nil, nil, err
	}
	if !req.DryRun.Enabled() {
		// The binding's first step, moments later, takes the class and the rules as
		// read here (preparedReads); it reads again what could not be read. It reads the
		// instance again: that read, after the binding's create, is what a deprovision or
		// an unshare marked meanwhile is seen by.
		if r, err := rules.Wait(); err == nil && class != nil {
			e.prepared.keep(class, e.cfg.CatalogNamespace, r)
		}
	}
	draft := NewBinding(BindingIntent{Namespace: req.Namespace, Name: req.Name, Instance: req.Instance, InstanceNamespace: req.InstanceNamespace, ExternalID: e.namespaceBoundID(ctx, req.Namespace)})
	// The user's own command: where the instance's author cannot be verified, the
	// user's rights decide, as they would by hand. The binding is the user's own: this
	// process records it as their intent (its create is checked by the API server), so
	// it is not judged as a record of unknown authorship.
	// A grant the user may not check is reconcile's to check: the binding is recorded and
	// its bind left to reconcile.
	if err := e.CheckConsumer(WithRunnersRights(ctx), draft, inst); err != nil {
		if _, ok := AsLeftToReconcile(err); !ok {
			return nil, nil, nil, fmt.Errorf("binding %q not created: %w", req.Name, err)
		}
	}
	if err := e.CheckBindingLimit(ctx, inst); err != nil {
		return nil, nil, nil, fmt.Errorf("binding %q not created: %w", req.Name, err)
	}
	if err := CheckBindable(inst, class); err != nil {
		return nil, nil, nil, err
	}
	if err := checkBindNames(req, names); err != nil {
		return nil, nil, nil, err
	}
	if err := checkEnvSource(req.Namespace, req.Name, req.InstanceNamespace, req.Instance, req.Projections); err != nil {
		return nil, nil, nil, &InputError{Err: fmt.Errorf("binding %q not created: %w", req.Name, err)}
	}
	b, err := e.prepareBinding(ctx, inst, class, schemas, BindingRequest{
		BindingIntent: BindingIntent{
			Namespace: req.Namespace, Name: req.Name, Instance: req.Instance, InstanceNamespace: req.InstanceNamespace, SecretName: req.SecretName,
			Transforms: req.Transforms, SecretTemplate: req.SecretTemplate, Projections: req.Projections, ExternalID: req.ExternalID,
		},
		Parameters: req.Parameters,
	})
	if err != nil {
		return nil, nil, nil, err
	}
	if err := checkBindTemplate(req, b, inst); err != nil {
		return nil, nil, nil, err
	}
	req.Metadata.apply(&b.ObjectMeta)
	changes, err := e.previewProjections(ctx, req)
	if err != nil {
		return nil, nil, nil, err
	}
	return b, changes, inst, nil
}

// instanceNamespace is the namespace of the instance req binds.
func (req BindRequest) instanceNamespace() string {
	if req.InstanceNamespace != "" {
		return req.InstanceNamespace
	}
	return req.Namespace
}

// boundInstance reads the instance req binds and its class (nil when it is gone, or for a
// user-provided instance), and starts reading the class's plan schemas together with
// the class (nil when there are none to read: see prepareBinding).
func (e bindingVerbs) boundInstance(ctx context.Context, req BindRequest) (*v1alpha1.ServiceInstance, *v1alpha1.ServiceClass, *ahead.Read[*v1alpha1.ServicePlanSchemas], error) {
	ins := req.instanceNamespace()
	inst, err := e.cfg.Store.Instances().Get(ctx, ins, req.Instance)
	switch {
	case store.IsNotFound(err):
		return nil, nil, nil, fmt.Errorf(`instance %q not found in namespace %q: list the instances with %s`, req.Instance, ins, hint.Quoted(ins, "get", "instances"))
	case store.IsForbidden(err) && req.InstanceNamespace != "":
		return nil, nil, nil, fmt.Errorf("you may not read instance %q of namespace %q: binding an instance another namespace shares needs its record read (the kubectl-catalog-viewer role in namespace %q, which its owners grant); binding %q not created", req.Instance, ins, ins, req.Name)
	case err != nil:
		return nil, nil, nil, err
	}
	if inst.IsUserProvided() {
		return inst, nil, nil, nil
	}
	// The schemas are kept under the class record's name.
	bns, name := e.brokerNamespace(inst), v1alpha1.ClassRecordName(inst.Spec.BrokerName, inst.Spec.ClassID)
	// The broker's credentials Secret goes out with the class's read, ahead of the
	// bind's call (brokerSecretAhead).
	e.brokerSecretAhead(ctx, bns, inst.Spec.BrokerName)
	var schemas *ahead.Read[*v1alpha1.ServicePlanSchemas]
	if inst.Status.Provisioned != nil {
		schemas = ahead.Start(ctx, func() (*v1alpha1.ServicePlanSchemas, error) { return e.cfg.Store.PlanSchemas().Get(ctx, bns, name) })
	}
	class, err := e.cfg.Store.Classes().Get(ctx, bns, name)
	if store.IsNotFound(err) {
		return inst, nil, schemas, nil
	}
	if err != nil {
		return nil, nil, nil, fmt.Errorf("cannot read the class of instance %q: %w", req.Instance, err)
	}
	return inst, class, schemas, nil
}

// bindNames are the reads checkBindNames looks at: the binding of the name, its Secret
// and the Secrets the transforms read (by transform), each read or being read.
type bindNames struct {
	binding    *ahead.Read[*v1alpha1.ServiceBinding]
	secret     *ahead.Read[*corev1.Secret]
	transforms []*ahead.Read[*corev1.Secret]
}

// readBindNames starts the reads of checkBindNames, all at once.
func (e bindingVerbs) readBindNames(ctx context.Context, req BindRequest) bindNames {
	secret := func(name string) *ahead.Read[*corev1.Secret] {
		return ahead.Start(ctx, func() (*corev1.Secret, error) { return e.cfg.Store.GetSecret(ctx, req.Namespace, name) })
	}
	n := bindNames{
		binding: ahead.Start(ctx, func() (*v1alpha1.ServiceBinding, error) {
			return e.cfg.Store.Bindings().Get(ctx, req.Namespace, req.Name)
		}),
		secret: secret(req.SecretName),
	}
	for _, t := range req.Transforms {
		if t.AddKeysFrom != nil {
			n.transforms = append(n.transforms, secret(t.AddKeysFrom.SecretRef.Name))
		}
	}
	return n
}

// checkBindNames refuses a binding name or Secret name that is taken, and Secrets the
// transforms read that do not exist, from the reads of readBindNames, in this order.
func checkBindNames(req BindRequest, n bindNames) error {
	if _, err := n.binding.Wait(); err == nil {
		return bindingNameTaken(req)
	} else if !store.IsNotFound(err) {
		return err
	}
	if _, err := n.secret.Wait(); err == nil {
		return fmt.Errorf("Secret %q already exists and is not managed by this binding: choose another with --secret-name", req.SecretName)
	} else if !store.IsNotFound(err) {
		return err
	}
	i := 0
	for _, t := range req.Transforms {
		if t.AddKeysFrom == nil {
			continue
		}
		name := t.AddKeysFrom.SecretRef.Name
		if _, err := n.transforms[i].Wait(); store.IsNotFound(err) {
			return fmt.Errorf("--add-keys-from-secret %s: Secret %q not found in namespace %q", name, name, req.Namespace)
		} else if err != nil {
			return err
		}
		i++
	}
	return nil
}

// previewProjections works out the change each projection of req makes to its
// workload, which checks that the workloads exist and can receive the Secret. For
// DryRunServer the changes are sent to the API server as dry runs.
func (e bindingVerbs) previewProjections(ctx context.Context, req BindRequest) ([]WorkloadChange, error) {
	if len(req.Projections) == 0 {
		return nil, nil
	}
	p, ok := e.cfg.Projector.(ProjectionPreviewer)
	if !ok {
		return nil, fmt.Errorf("binding %q not created: the workloads to project into cannot be checked here (no workload client)", req.Name)
	}
	var changes []WorkloadChange
	for _, w := range req.Projections {
		c, err := p.PreviewProjection(ctx, req.Namespace, req.Name, req.SecretName, w, req.DryRun == DryRunServer)
		if err != nil {
			return nil, fmt.Errorf("binding %q not created: %w", req.Name, err)
		}
		c.Workload = w
		changes = append(changes, c)
	}
	return changes, nil
}

// bindDryRun finishes a dry run: for DryRunServer the binding is sent to the API server
// as a dry run (validation and admission, the trust policy included, see it).
func (e bindingVerbs) bindDryRun(ctx context.Context, req BindRequest, res BindResult, b *v1alpha1.ServiceBinding, changes []WorkloadChange) (BindResult, error) {
	if req.DryRun == DryRunServer {
		created, err := e.cfg.Store.Bindings().Create(req.DryRun.writes(ctx), b)
		if err != nil {
			return res, fmt.Errorf("binding %q would not be created: %w", req.Name, err)
		}
		b = created
	}
	res.Binding, res.Changes = b, changes
	return res, nil
}

// dropRefusedBinding removes a binding the engine refused for its instance's consumer
// rules (not shared, namespace not allowed, limit reached): nothing was sent to the
// broker, so the record goes, and the bind fails as if it had never been made.
func (e *Engine) dropRefusedBinding(ctx context.Context, r Result) error {
	b := r.Binding
	if !r.Refused || b == nil || len(b.Status.ExternalIDs) > 0 || b.Status.Bound != nil {
		return nil
	}
	c := meta.FindStatusCondition(b.Status.Conditions, v1alpha1.ConditionRefused)
	if c == nil {
		return nil
	}
	switch c.Reason {
	case ReasonRefusedLimitReached, ReasonRefusedNotShared, ReasonRefusedNamespaceNotAllowed:
	default:
		return nil
	}
	if err := (bindingVerbs{e}).dropUnsentBinding(ctx, b); errors.Is(err, errSentMeanwhile) {
		return fmt.Errorf("binding %q was refused (%s), but a bind was sent for it meanwhile: its record is marked for deletion, and reconcile unbinds it at the broker; follow it with \"kubectl catalog describe binding %s -n %s\"", b.Name, c.Message, b.Name, b.Namespace)
	} else if err != nil {
		return fmt.Errorf("binding %q was refused (%s), and removing its record failed: %w; remove it with %s", b.Name, c.Message, err, hint.Quoted(b.Namespace, "unbind", b.Name, "--abandon"))
	}
	return fmt.Errorf("binding %q not created: %s", b.Name, strings.TrimSuffix(c.Message, "; nothing is sent to the broker for this record until that changes"))
}

// errSentMeanwhile is dropUnsentBinding's answer for a record another process sent a
// bind for since it was read.
var errSentMeanwhile = errors.New("a bind was sent for the binding meanwhile")

// dropUnsentBinding removes the record of b, a binding nothing was sent to the broker
// for as read. Another process may have bound it since (reconcile, once the instance was
// shared again, say): the finalizer comes off only while the record, as it is now,
// lists no OSB id the broker may hold; otherwise the record stays marked for deletion,
// for reconcile to unbind, and the answer is errSentMeanwhile.
func (e bindingVerbs) dropUnsentBinding(ctx context.Context, b *v1alpha1.ServiceBinding) error {
	if err := e.cfg.Store.Bindings().Delete(ctx, b.Namespace, b.Name); err != nil {
		if store.IsNotFound(err) {
			return nil
		}
		return err
	}
	cur, err := e.cfg.Store.Bindings().Get(ctx, b.Namespace, b.Name)
	switch {
	case store.IsNotFound(err):
		return nil
	case err != nil:
		return err
	case cur.UID != b.UID:
		return nil
	case len(bindingIDsAtBroker(cur)) > 0:
		return errSentMeanwhile
	}
	if err := e.cfg.Store.DeleteBindingSecret(ctx, cur); err != nil {
		return err
	}
	// Each attempt writes over the version it checked: a bind written ahead since makes it
	// conflict, and the next attempt sees it.
	_, err = e.cfg.Store.Bindings().UpdateWithRetry(ctx, b.Namespace, b.Name, func(x *v1alpha1.ServiceBinding) error {
		if x.UID != b.UID {
			return nil
		}
		if len(bindingIDsAtBroker(x)) > 0 {
			return errSentMeanwhile
		}
		x.Finalizers = slices.DeleteFunc(x.Finalizers, func(f string) bool { return f == store.Finalizer })
		return nil
	})
	if store.IsNotFound(err) {
		return nil
	}
	return err
}

// boundError says why a bind that was driven did not succeed: the binding failed, is
// gone, was refused or waits for a retry. nil when it is bound, or on its way.
func boundError(req BindRequest, r Result) error {
	describe := fmt.Sprintf(`"kubectl catalog describe binding %s -n %s"`, req.Name, req.Namespace)
	switch r.State {
	case StateSettled:
		return nil
	case StateNeedsUser:
		return fmt.Errorf("binding %q failed: %s; see %s", req.Name, r.Message, describe)
	case StateDeleted:
		return fmt.Errorf("binding %q is gone: it was deleted while being bound", req.Name)
	}
	b := r.Binding
	if r.Refused {
		return fmt.Errorf("binding %q was refused: %s; see %s", req.Name, r.Message, describe)
	}
	if WaitingForReconcile(b) {
		return nil
	}
	if b != nil && b.Status.Retry != nil && (b.Status.InFlight == nil || !b.Status.InFlight.Async) {
		// Not "bind --wait" again: the binding's name is taken now, so that would fail
		// or, with another --name, make a second binding. The wait command drives it.
		return fmt.Errorf("binding %q: %s; it will be retried: follow it with %s, finish it with \"kubectl catalog reconcile\" or \"%s\"",
			req.Name, r.Message, describe, WaitCommand(v1alpha1.KindServiceBinding, req.Namespace, req.Name, WaitForReady))
	}
	return nil
}
