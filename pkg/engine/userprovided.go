package engine

import (
	"context"
	"fmt"
	"strings"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/credentials"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/hint"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// Reasons of user-provided service instances and of their bindings.
const (
	// ReasonUserProvided: the instance is user-provided and its credentials are in place.
	ReasonUserProvided = "UserProvided"
	// ReasonProvisionCredentialsUnavailable: the credentials Secret of a user-provided
	// instance is missing, not owned by the instance's record, or not readable.
	ReasonProvisionCredentialsUnavailable = "ProvisionCredentialsUnavailable"
	// ReasonUpdateCredentialsNotCopied: new credentials of a user-provided instance could
	// not be copied to every binding yet.
	ReasonUpdateCredentialsNotCopied = "UpdateCredentialsNotCopied"
	// ReasonBindCredentialsNotCopied: the credentials of a user-provided instance could
	// not be copied to the binding's Secret.
	ReasonBindCredentialsNotCopied = "BindCredentialsNotCopied"
	// ReasonCopied: the binding's Secret holds a copy of its user-provided instance's
	// credentials.
	ReasonCopied = "Copied"
)

// UserProvidedType is the servicebinding.io "type" of a binding to a user-provided
// instance.
const UserProvidedType = "user-provided"

// NewUserProvidedInstance is the record of a user-provided service instance whose
// credentials are (to be) in Secret up.CredentialsSecret, owned by the record.
func NewUserProvidedInstance(namespace, name string, up v1alpha1.UserProvidedService) *v1alpha1.ServiceInstance {
	return &v1alpha1.ServiceInstance{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: v1alpha1.ServiceInstanceSpec{
			ExternalID:   v1alpha1.NewNamespaceBoundID(namespace),
			UserProvided: &up,
		},
	}
}

// CredentialsSecretName is the Secret a user-provided instance's credentials are kept in.
func CredentialsSecretName(instance string) string { return instance + "-credentials" }

// WriteUserProvidedCredentials writes data as the credentials of the user-provided
// instance inst (read from the store), in the Secret its spec names, owned by its record.
// A Secret of that name the record does not own is never touched (store.IsNotOwned).
func (e *Engine) WriteUserProvidedCredentials(ctx context.Context, inst *v1alpha1.ServiceInstance, data map[string][]byte) error {
	if !inst.IsUserProvided() {
		return fmt.Errorf("instance %q is not user-provided: its credentials come from its broker", inst.Name)
	}
	return e.cfg.Store.WriteRecordSecret(ctx, inst, inst.Spec.UserProvided.CredentialsSecret, data)
}

// userProvidedCredentials reads the credentials Secret of inst: only one its record owns
// (a record naming any other Secret is refused), and only if inst's author may read it.
func (e instanceSteps) userProvidedCredentials(ctx context.Context, inst *v1alpha1.ServiceInstance) (*corev1.Secret, error) {
	name := inst.Spec.UserProvided.CredentialsSecret
	if err := e.auth.Authorize(ctx, inst, authorizationv1.ResourceAttributes{Namespace: inst.Namespace, Verb: "get", Resource: "secrets", Name: name}); err != nil {
		return nil, err
	}
	s, err := e.cfg.Store.ReadOwnedSecret(ctx, inst, name)
	switch {
	case store.IsNotOwned(err):
		return nil, refused(ReasonRefusedUntrustedReference, "Secret %q in namespace %q does not belong to user-provided instance %q (it has no owner reference to the instance's record), so it is not read: give the instance its credentials with %s",
			name, inst.Namespace, inst.Name, hint.Quoted(inst.Namespace, "update", inst.Name, "--credentials-file", "FILE"))
	case store.IsNotFound(err):
		return nil, fmt.Errorf("the credentials Secret %q of user-provided instance %q is missing: set them again with %s",
			name, inst.Name, hint.Quoted(inst.Namespace, "update", inst.Name, "--credentials-file", "FILE"))
	case store.IsForbidden(err) && isReconcile(ctx):
		// Nobody takes up what reconcile itself may not do: retried with backoff, saying
		// who may copy the credentials.
		return nil, reconcileMayNotReadCredentials(inst, name, err)
	case store.IsForbidden(err):
		return nil, &LeftToReconcileError{What: fmt.Sprintf("you may not read the credentials Secret %q of user-provided instance %q in namespace %q, so reconcile copies them (the installed CronJob or \"kubectl catalog reconcile\" run by an administrator)", name, inst.Name, inst.Namespace), Err: err}
	}
	return s, err
}

// reconcileMayNotReadCredentials is the failure of a reconcile run that may not read the
// credentials Secret name of the user-provided instance inst: it says what to grant
// reconcile, and that a user who may read the Secret copies the credentials by driving
// the instance with a verb.
func reconcileMayNotReadCredentials(inst *v1alpha1.ServiceInstance, name string, err error) error {
	return fmt.Errorf("reconcile itself may not read the credentials Secret %q of user-provided instance %q in namespace %q, so it cannot check or copy them: grant reconcile's ServiceAccount \"get\" on that Secret (%s does; \"kubectl auth can-i get secrets/%s -n %s --as system:serviceaccount:NAMESPACE:NAME\" checks it), or have a user who may read it run %s, which copies them with that user's rights; retried with backoff: %w",
		name, inst.Name, inst.Namespace, `"kubectl catalog reconcile install"`, name, inst.Namespace, hint.Quoted(inst.Namespace, "touch", "instance", inst.Name), err)
}

// sourceVersion identifies one version of a credentials Secret without a digest of its data.
func sourceVersion(s *corev1.Secret) string { return string(s.UID) + "/" + s.ResourceVersion }

// stepUserProvided moves a user-provided instance one step: no broker is called. A
// deletion waits for the bindings, then deletes the credentials Secret and releases the
// record; otherwise the credentials Secret must be in place, and after a change of the
// spec (new credentials, say) every binding's copy is brought up to date before the
// instance is Ready again.
func (e instanceSteps) stepUserProvided(ctx context.Context, inst *v1alpha1.ServiceInstance) (Result, error) {
	if inst.DeletionTimestamp != nil {
		res, waiting, err := e.waitForBindings(ctx, inst)
		if err != nil || waiting {
			return res, err
		}
		if err := e.cfg.Store.DeleteRecordSecret(ctx, inst, inst.Spec.UserProvided.CredentialsSecret); err != nil {
			return preCallFailure(e.Engine, ctx, inst, ReasonProvisionCredentialsUnavailable, err)
		}
		return release(e.Engine, ctx, inst, "deleted", false)
	}
	action := actionProvision
	if inst.Status.ObservedGeneration > 0 {
		action = actionUpdate
	}
	if d := e.retryWait(inst, action); d > 0 {
		return resultOf(e.Engine, inst), nil
	}
	secret, err := e.userProvidedCredentials(ctx, inst)
	if err != nil {
		reason := ReasonProvisionCredentialsUnavailable
		if action == actionUpdate {
			reason = ReasonUpdateCredentialsNotCopied
		}
		return preCallFailure(e.Engine, ctx, inst, reason, err)
	}
	inst, err = e.revokeWithdrawn(ctx, inst)
	if err != nil {
		return Result{}, err
	}
	if inst.Generation != inst.Status.ObservedGeneration {
		if inst.Status.RevokedGeneration != inst.Generation {
			_, _, _ = e.RevokeConsumers(ctx, inst)
		}
		if inst.Status.ObservedGeneration > 0 {
			if err := e.copyToBindings(ctx, inst, secret); err != nil {
				return preCallFailure(e.Engine, ctx, inst, ReasonUpdateCredentialsNotCopied, err)
			}
		}
	}
	x := inst.DeepCopy()
	now := e.now()
	x.Status.InFlight, x.Status.Retry = nil, nil
	x.Status.ObservedGeneration = x.Generation
	x.Status.Phase = v1alpha1.PhaseReady
	setCondition(x, v1alpha1.ConditionReady, metav1.ConditionTrue, ReasonUserProvided,
		fmt.Sprintf("user-provided: no broker holds it; its credentials are in Secret %q", x.Spec.UserProvided.CredentialsSecret), now)
	meta.RemoveStatusCondition(&x.Status.Conditions, v1alpha1.ConditionFailed)
	meta.RemoveStatusCondition(&x.Status.Conditions, v1alpha1.ConditionRefused)
	store.ClearClaim(x, e.cfg.Holder)
	if equalStatus(x, inst) {
		return resultOf(e.Engine, inst), nil
	}
	return storeStatus(e.Engine, ctx, inst, x)
}

// copyToBindings brings the copy of every binding of inst (in its namespace and in those
// it is shared with) up to date with secret. A binding that cannot be brought up to date
// now makes an error naming it; the instance then stays pending, and reconcile goes on.
func (e instanceSteps) copyToBindings(ctx context.Context, inst *v1alpha1.ServiceInstance, secret *corev1.Secret) error {
	bs, err := e.cfg.Store.Bindings().List(ctx, inst.Namespace, store.Filter{Instance: inst.Name})
	if err != nil {
		return err
	}
	others, unseen, err := e.Consumers(ctx, inst)
	if err != nil {
		return err
	}
	bs = append(bs, others...)
	var stale []string
	for _, b := range bs {
		if b.DeletionTimestamp != nil || b.Status.Bound == nil || !b.Status.Bound.UserProvided || b.Status.Bound.SourceVersion == sourceVersion(secret) {
			continue
		}
		res, err := e.StepBinding(ctx, b)
		if err != nil || res.State != StateSettled {
			why := res.Message
			if err != nil {
				why = err.Error()
			}
			stale = append(stale, fmt.Sprintf("%s/%s (%s)", b.Namespace, b.Name, why))
		}
	}
	for _, ns := range unseen {
		stale = append(stale, fmt.Sprintf("the bindings in namespace %s, which you may not list", ns))
	}
	if len(stale) > 0 {
		then := "reconcile copies them"
		if isReconcile(ctx) {
			then = "retried with backoff"
		}
		return fmt.Errorf("the new credentials of user-provided instance %q are not yet copied to: %s; %s", inst.Name, strings.Join(stale, ", "), then)
	}
	return nil
}

// copyCredentials makes b's Secret a copy of the credentials of the user-provided
// instance inst, with b's transforms applied, and marks b bound (to no broker). Every
// copy checks, as a bind does, that inst lets b's namespace bind to it, and takes a place
// under its limit (a place already held is kept). Projections follow on the next step, as after a bind.
func (e bindingSteps) copyCredentials(ctx context.Context, b *v1alpha1.ServiceBinding, inst *v1alpha1.ServiceInstance) (Result, error) {
	first := b.Status.Bound == nil
	if d := e.retryWait(b, actionBind); d > 0 {
		return resultOf(e.Engine, b), nil
	}
	if first {
		if err := CheckBindable(inst, nil); err != nil {
			return preCallFailure(e.Engine, ctx, b, ReasonBindWaitingForInstance, err)
		}
	}
	// Every copy checks the grant, and holds a place under the limit: status.bound is
	// free to write for anyone who may update the binding's ConfigMap, so a copy the
	// status claims made before may be forged.
	if err := e.auth.CheckConsumer(ctx, b, inst); err != nil {
		return e.refusedConsumer(ctx, b, inst, err)
	}
	if !b.CrossNamespace() {
		// In its own namespace the binding copies only what its author may read.
		name := inst.Spec.UserProvided.CredentialsSecret
		if err := e.auth.Authorize(ctx, b, authorizationv1.ResourceAttributes{Namespace: inst.Namespace, Verb: "get", Resource: "secrets", Name: name}); err != nil {
			return preCallFailure(e.Engine, ctx, b, ReasonBindCredentialsNotCopied, err)
		}
	}
	// The binding's Secret as it is before the credentials are read: the copy is written
	// only over that, so that a copy of older credentials never lands over a newer one
	// another driver wrote meanwhile (the status would then say the newer one is there).
	over := ""
	if cur, err := e.cfg.Store.GetSecret(ctx, b.Namespace, b.Spec.SecretName); err == nil {
		over = cur.ResourceVersion
	} else if !store.IsNotFound(err) {
		return preCallFailure(e.Engine, ctx, b, ReasonBindCredentialsNotCopied, err)
	}
	secret, err := instanceSteps{e.Engine}.userProvidedCredentials(ctx, inst)
	if err != nil {
		return preCallFailure(e.Engine, ctx, b, ReasonBindCredentialsNotCopied, err)
	}
	if err := e.auth.ReserveCopy(ctx, b, inst, secret.UID); err != nil {
		return preCallFailure(e.Engine, ctx, b, ReasonRefusedLimitReached, err)
	}
	creds := make(map[string]any, len(secret.Data))
	for k, v := range secret.Data {
		creds[k] = string(v)
	}
	data, err := credentials.Encode(creds)
	if err == nil {
		data, err = credentials.Apply(ctx, data, creds, b.Spec.SecretTransforms, func(ctx context.Context, name string) (map[string][]byte, error) {
			return e.auth.SecretsFor(b)(ctx, b.Namespace, name)
		})
	}
	if err == nil {
		if data, err = renderSecretTemplate(b, inst, creds, data); isTemplateError(err) {
			e.secretTemplateEvent(ctx, b, err)
		}
	}
	var leftOut []string
	if err == nil {
		leftOut = shapeEnvData(b, data)
		data = credentials.WithServiceBindingKeys(data, UserProvidedType, "")
		_, err = e.cfg.Store.WriteBindingSecretOver(ctx, b, data, over)
	}
	if store.IsConflict(err) {
		err = fmt.Errorf("Secret %q changed while the credentials were being copied (another process copied them): the copy is made again", b.Spec.SecretName)
	}
	if err != nil {
		return preCallFailure(e.Engine, ctx, b, ReasonBindCredentialsNotCopied, fmt.Errorf("the credentials of user-provided instance %q could not be written to Secret %q: %w", inst.Name, b.Spec.SecretName, err))
	}
	e.envLeftOutEvent(ctx, b, leftOut)
	x := b.DeepCopy()
	now := e.now()
	_, drain := secret.Data[credentials.KeySyslogDrainURL]
	_, route := secret.Data[credentials.KeyRouteServiceURL]
	x.Status.Bound = &v1alpha1.BoundState{BindingID: b.CurrentExternalID(), UserProvided: true, SourceVersion: sourceVersion(secret),
		SyslogDrain: drain, RouteService: route}
	x.Status.Secret = &v1alpha1.CredentialsSecret{Name: x.Spec.SecretName, Keys: credentials.Keys(data), WrittenAt: metav1.NewTime(now)}
	x.Status.InFlight, x.Status.Retry = nil, nil
	if projectionsDone(x) {
		x.Status.ObservedGeneration = x.Generation
		x.Status.Phase = v1alpha1.PhaseReady
	}
	setCondition(x, v1alpha1.ConditionReady, metav1.ConditionTrue, ReasonCopied,
		fmt.Sprintf("the credentials of user-provided instance %q are copied to Secret %q", inst.Name, x.Spec.SecretName)+envLeftOutNote(leftOut), now)
	meta.RemoveStatusCondition(&x.Status.Conditions, v1alpha1.ConditionFailed)
	meta.RemoveStatusCondition(&x.Status.Conditions, v1alpha1.ConditionRefused)
	store.ClearClaim(x, e.cfg.Holder)
	return storeStatus(e.Engine, ctx, b, x)
}

// projectionsDone reports whether b's projections are made as its spec asks.
func projectionsDone(b *v1alpha1.ServiceBinding) bool {
	return v1alpha1.SameProjections(b.Spec.Projections, b.Status.Projected) && len(b.Status.Projecting) == 0
}

// userProvidedBinding reads b's instance when b may be a binding of a user-provided
// instance (or names an instance of another namespace), and reports whether it is one.
// A binding of another namespace that may not reach its instance (the cross-namespace
// rule) gets the refusal its step records (reaches), whatever it is bound to.
func (e bindingSteps) userProvidedBinding(ctx context.Context, b *v1alpha1.ServiceBinding) (*v1alpha1.ServiceInstance, bool, error) {
	brokered := b.Status.Bound != nil && !b.Status.Bound.UserProvided
	if brokered && !b.CrossNamespace() {
		return nil, false, nil
	}
	ns, name := b.InstanceRef()
	inst, err := e.cfg.Store.Instances().Get(ctx, ns, name)
	if rerr := reaches(b, inst, err); rerr != nil {
		return nil, false, rerr
	}
	if err != nil || brokered {
		return nil, false, nil
	}
	return inst, inst.IsUserProvided(), nil
}

// stepUserProvidedBinding copies the credentials of inst when b has no copy, a copy made
// under another binding id (a rotation), or a copy of an older version of the Secret;
// otherwise it settles b (projections) as any bound binding.
func (e bindingSteps) stepUserProvidedBinding(ctx context.Context, b *v1alpha1.ServiceBinding, inst *v1alpha1.ServiceInstance) (Result, error) {
	bd := b.Status.Bound
	if bd == nil || bd.BindingID != b.CurrentExternalID() {
		return e.copyCredentials(ctx, b, inst)
	}
	if s, err := e.cfg.Store.ReadOwnedSecret(ctx, inst, inst.Spec.UserProvided.CredentialsSecret); err == nil && sourceVersion(s) != bd.SourceVersion {
		return e.copyCredentials(ctx, b, inst)
	}
	return e.settleBinding(ctx, b)
}
