package authority

import (
	"context"
	"fmt"
	"strings"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/ahead"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/marketplace"
)

// Authorize refuses a request the engine would make in the name of rec's author unless
// the author may make it.
func (auth *Authority) Authorize(ctx context.Context, rec v1alpha1.Record, attrs authorizationv1.ResourceAttributes) error {
	if adoptingUID(ctx, rec.GetUID()) {
		// The runner adopts rec: the spec counts as theirs only if they could write it.
		return auth.runnerMay(ctx, attrs)
	}
	a := auth.of(ctx, rec)
	if a.self {
		return nil
	}
	what := describeRequest(attrs)
	runners := runnersRights(ctx, rec) && !a.notRunners
	if a.unverified != "" {
		if runners {
			return nil
		}
		var err error
		if a.notRunners {
			err = Refused(ReasonRefusedAuthorUnverified, "refused to %s on the record's behalf: %s (another person may have written it, so your own rights are not lent to it)", what, a.unverified)
		} else {
			err = Refused(ReasonRefusedAuthorUnverified, "refused to %s on the record's behalf: %s (%s %q)",
				what, a.unverified, NoVoucher, rec.GetNamespace())
		}
		err.(*RefusedError).Transient = a.transient
		return err
	}
	if auth.env().Authorizer == nil {
		if runners {
			return nil
		}
		return Refused(ReasonRefusedAuthorUnverified, "refused to %s on behalf of %q: this engine cannot ask the API server what the author may do", what, a.author.Username)
	}
	key := strings.Join([]string{a.author.Username, strings.Join(a.author.Groups, ","), attrs.Verb, attrs.Group, attrs.Resource, attrs.Namespace, attrs.Name}, "\x00")
	c := &auth.cache
	c.mu.Lock()
	ans, ok := c.answers[key]
	c.mu.Unlock()
	if !ok || time.Since(ans.at) > CacheTTL {
		allowed, reason, err := auth.env().Authorizer.Allowed(ctx, a.author.Username, a.author.Groups, attrs)
		if err != nil && runners {
			return nil
		}
		if err != nil && !runners && runnersRights(ctx, rec) && !IsReconcile(ctx) {
			// The user's own command, on a record another person wrote, and the user may not
			// ask the API server about that person: reconcile, which may, decides.
			noteLeftToReconcile(ctx)
			return auth.env().LeftToReconcile(fmt.Sprintf("you may not ask the API server whether %q, who wrote record %s/%s, may %s, so reconcile, which may, decides and sends what is due (the installed CronJob or \"kubectl catalog reconcile\" run by an administrator)",
				a.author.Username, rec.GetNamespace(), rec.GetName(), what), err)
		}
		if err != nil {
			r := Refused(ReasonRefusedAuthorUnverified, "refused to %s on behalf of %q: %v", what, a.author.Username, err)
			r.(*RefusedError).Transient = true
			return r
		}
		ans = cachedAnswer{allowed: allowed, reason: reason, at: time.Now()}
		c.mu.Lock()
		if c.answers == nil || len(c.answers) > 10000 {
			c.answers = map[string]cachedAnswer{}
		}
		c.answers[key] = ans
		c.mu.Unlock()
	}
	if !ans.allowed {
		if rec.GetDeletionTimestamp() != nil {
			// Typically a namespace being deleted, whose RoleBindings went first: the
			// author's rights are gone, and only someone who has them finishes it.
			return Refused(ReasonRefusedNotAuthorized, "refused to %s: the record's author %q may not (%s); it is being deleted: someone who may do it (an administrator) makes it theirs with \"kubectl catalog adopt -n %s\", which checks it against their own rights and shows what it sends where (which Secret to which URL) before they vouch for it, then runs \"kubectl catalog reconcile -n %s\"",
				what, a.author.Username, authzReason(ans.reason), rec.GetNamespace(), rec.GetNamespace())
		}
		return Refused(ReasonRefusedNotAuthorized, "refused to %s: the record's author %q may not (%s)", what, a.author.Username, authzReason(ans.reason))
	}
	return nil
}

// runnerMay refuses a request the user running the engine may not make.
func (auth *Authority) runnerMay(ctx context.Context, attrs authorizationv1.ResourceAttributes) error {
	sa, ok := auth.env().Authorizer.(SelfAuthorizer)
	if !ok {
		return Refused(ReasonRefusedAuthorUnverified, "cannot ask the API server whether you may %s", describeRequest(attrs))
	}
	allowed, reason, err := sa.SelfAllowed(ctx, attrs)
	if err != nil {
		// Not an answer: the runner may well have the right.
		return fmt.Errorf("could not ask the API server whether you may %s: %w", describeRequest(attrs), err)
	}
	if !allowed {
		return Refused(ReasonRefusedNotAuthorized, "you may not %s (%s)", describeRequest(attrs), authzReason(reason))
	}
	return nil
}

func authzReason(r string) string {
	if r == "" {
		return "no RBAC rule allows it"
	}
	return r
}

func describeRequest(a authorizationv1.ResourceAttributes) string {
	res := a.Resource
	switch {
	case a.Resource == "secrets":
		res = "Secret"
	case a.Group != "":
		res = a.Resource + "." + a.Group
	}
	return fmt.Sprintf("%s %s %q in namespace %q", a.Verb, res, a.Name, a.Namespace)
}

// SecretsFor reads Secrets named by rec, in rec's namespace only and in its author's
// name.
func (auth *Authority) SecretsFor(rec v1alpha1.Record) func(ctx context.Context, namespace, name string) (map[string][]byte, error) {
	return func(ctx context.Context, ns, name string) (map[string][]byte, error) {
		if ns != rec.GetNamespace() {
			return nil, Refused(ReasonRefusedUntrustedReference, "refused to read Secret %q in namespace %q: a record may only name Secrets of its own namespace %q", name, ns, rec.GetNamespace())
		}
		if err := auth.Authorize(ctx, rec, authorizationv1.ResourceAttributes{Namespace: ns, Verb: "get", Resource: "secrets", Name: name}); err != nil {
			return nil, err
		}
		s, err := auth.env().Store.GetSecret(ctx, ns, name)
		if err != nil {
			return nil, err
		}
		return s.Data, nil
	}
}

// CheckBroker refuses a broker record the engine must not use: a cluster-scoped broker
// outside the catalog namespace, a reference out of the broker's namespace, or
// credentials its author may not read (the catalog namespace, which only administrators
// write, is trusted as it is).
func (auth *Authority) CheckBroker(ctx context.Context, b *v1alpha1.Broker) error {
	if b.Spec.Scope == v1alpha1.ScopeCluster && b.Namespace != auth.env().CatalogNamespace {
		return Refused(ReasonRefusedUntrustedReference, "broker %q in namespace %q says it is cluster-scoped, but cluster-scoped brokers live only in the catalog namespace %q: it is ignored", b.Name, b.Namespace, auth.env().CatalogNamespace)
	}
	a := b.Spec.Auth
	if a == nil {
		return nil
	}
	if ns := a.SecretRef.Namespace; ns != "" && ns != b.Namespace {
		return Refused(ReasonRefusedUntrustedReference, "broker %q names credentials in namespace %q: a broker's credentials must be in its own namespace %q", b.Name, ns, b.Namespace)
	}
	if b.Namespace == auth.env().CatalogNamespace {
		return nil
	}
	if err := auth.Authorize(ctx, b, authorizationv1.ResourceAttributes{Namespace: b.Namespace, Verb: "get", Resource: "secrets", Name: a.SecretRef.Name}); err != nil {
		r, ok := AsRefused(err)
		if !ok {
			return err
		}
		return &RefusedError{Reason: r.Reason, Message: fmt.Sprintf("broker %q: %s", b.Name, r.Message), Transient: r.Transient}
	}
	return nil
}

// Target is what a broker call goes through: the broker record, and the class record
// of the call's service (nil when it is gone).
type Target interface {
	TargetBroker() *v1alpha1.Broker
	TargetClass() *v1alpha1.ServiceClass
}

// BindTarget is the Target of a binding's call, and the instance it binds.
type BindTarget interface {
	Target
	TargetInstance() *v1alpha1.ServiceInstance
}

// SecretParameters are the parameters of a call, which may have been read from Secrets.
type SecretParameters interface {
	// ReadsSecrets reports whether some parameters came from Secrets.
	ReadsSecrets() bool
}

// CheckPlan refuses a provision, plan change or bind in namespace ns of a plan that the
// broker's catalog as synced does not offer, or that access rules disable there.
func (auth *Authority) CheckPlan(ctx context.Context, ns string, t Target, planID string) error {
	class, broker := t.TargetClass(), t.TargetBroker()
	if class == nil {
		return Refused(ReasonRefusedPlanNotAllowed, "broker %q offers no class with the record's id (its class record is missing): sync the broker, or deprovision", broker.Name)
	}
	p := class.PlanByID(planID)
	if p == nil {
		return Refused(ReasonRefusedPlanNotAllowed, "class %q of broker %q has no plan with id %q", class.Spec.ExternalName, broker.Name, planID)
	}
	rules, ok := auth.env().AccessRules(auth.env().CatalogNamespace)
	if !ok {
		var err error
		if rules, err = marketplace.LoadRules(ctx, auth.env().Store, marketplace.InCatalogNamespace(auth.env().CatalogNamespace)); err != nil {
			return err
		}
	}
	if !rules.PlanVisible(ns, class, planID) {
		return Refused(ReasonRefusedPlanNotAllowed, "plan %q of class %q is not available in namespace %q (catalog access rules): an administrator enables it with %s",
			p.ExternalName, class.Spec.ExternalName, ns, FixCommand(ns, "access", "enable", class.Spec.ExternalName+"/"+p.ExternalName))
	}
	return nil
}

// VetInstanceCall refuses a call about inst with OSB id id that the engine must not make:
// an id an older record uses, or (planID set, for a provision or a plan change) a plan
// the namespace may not use.
func (auth *Authority) VetInstanceCall(ctx context.Context, inst *v1alpha1.ServiceInstance, t Target, id, planID string) error {
	if err := auth.CheckID(ctx, v1alpha1.KindServiceInstance, inst, id); err != nil {
		return err
	}
	if planID != "" {
		return auth.CheckPlan(ctx, inst.Namespace, t, planID)
	}
	return nil
}

// VetBindingCall refuses a call about b that the engine must not make: an instance or
// binding id an older record uses and, for a bind, a plan the namespace may not use or a
// transform reading a Secret the binding's author may not read.
//
// The two id checks read independently and go out together; the instance's refusal
// (or error) is the one returned when both fail, as when they ran in turn.
func (auth *Authority) VetBindingCall(ctx context.Context, b *v1alpha1.ServiceBinding, t BindTarget, op *v1alpha1.Operation, bind bool) error {
	bindingID := ahead.Start(ctx, func() (struct{}, error) {
		return struct{}{}, auth.CheckID(ctx, v1alpha1.KindServiceBinding, b, op.BindingID)
	})
	checkTarget := auth.CheckTargetID
	if !bind && op.Type != v1alpha1.OperationBind {
		// An unbind (or its poll) needs no id claim of the instance's.
		checkTarget = auth.CheckUnbindTargetID
	}
	if err := checkTarget(ctx, v1alpha1.KindServiceInstance, t.TargetInstance(), op.InstanceID); err != nil {
		return err
	}
	if _, err := bindingID.Wait(); err != nil {
		return err
	}
	if !bind {
		return nil
	}
	if err := auth.CheckPlan(ctx, b.Namespace, t, op.PlanID); err != nil {
		return err
	}
	for _, tr := range b.Spec.SecretTransforms {
		if a := tr.AddKeysFrom; a != nil {
			if err := auth.Authorize(ctx, b, authorizationv1.ResourceAttributes{Namespace: b.Namespace, Verb: "get", Resource: "secrets", Name: a.SecretRef.Name}); err != nil {
				return err
			}
		}
	}
	return nil
}

// AuthorizeProjections refuses to project b's Secret into a workload its author may not
// change. Every workload the spec names is checked, also one the status lists as
// projected: a status proves nothing (anyone who may update the ConfigMap writes it),
// and the spec's author, or its Secret name, may have changed since. Taking a projection
// back needs no such check: it removes only what the binding added.
func (auth *Authority) AuthorizeProjections(ctx context.Context, b *v1alpha1.ServiceBinding) error {
	for _, p := range b.Spec.Projections {
		group, resource := workloadResource(p.Kind)
		if resource == "" {
			return Refused(ReasonRefusedUntrustedReference, "binding %q names a workload of kind %q, which cannot receive a projection", b.Name, p.Kind)
		}
		if err := auth.Authorize(ctx, b, authorizationv1.ResourceAttributes{Namespace: b.Namespace, Verb: "update", Group: group, Resource: resource, Name: p.Name}); err != nil {
			return err
		}
	}
	return nil
}

func workloadResource(kind string) (group, resource string) {
	switch kind {
	case "Deployment":
		return "apps", "deployments"
	case "StatefulSet":
		return "apps", "statefulsets"
	case "DaemonSet":
		return "apps", "daemonsets"
	case "CronJob":
		return "batch", "cronjobs"
	case "Job":
		return "batch", "jobs"
	}
	return "", ""
}

// CheckParametersTo refuses to send params, when some came from the Secrets that from
// names (in namespace), to a namespace-scoped broker whose record's author may not read
// those Secrets. A broker record is a ConfigMap that whoever may write ConfigMaps in its
// namespace may point at a server of their own; the author of the instance or binding
// reading the Secrets does not make the broker's author someone who may receive them. A
// cluster-scoped broker is the administrators' (the catalog namespace) and is trusted.
// A re-send of an interrupted call is not checked: it repeats what was sent, and needs no
// author's authority (it reads only the Secret its record owns).
func (auth *Authority) CheckParametersTo(ctx context.Context, b *v1alpha1.Broker, namespace string, from []v1alpha1.ParametersFromSource, params SecretParameters) error {
	if b.Namespace == auth.env().CatalogNamespace || params == nil || !params.ReadsSecrets() {
		return nil
	}
	for _, pf := range from {
		if pf.SecretKeyRef == nil {
			continue
		}
		if err := auth.Authorize(ctx, b, authorizationv1.ResourceAttributes{Namespace: namespace, Verb: "get", Resource: "secrets", Name: pf.SecretKeyRef.Name}); err != nil {
			r, ok := AsRefused(err)
			if !ok {
				return err
			}
			return &RefusedError{Reason: r.Reason, Message: fmt.Sprintf("parameters from Secret %q are not sent to broker %q, whose record another author wrote: %s", pf.SecretKeyRef.Name, b.Name, r.Message), Transient: r.Transient}
		}
	}
	return nil
}
