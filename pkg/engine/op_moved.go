package engine

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/credentials"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/hint"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// This file takes over, on a new cluster, the instances and bindings another cluster's
// catalog made ("kubectl catalog export" there, "apply -f" here): their records are
// written as if this engine had made them, under the same OSB ids, after the broker was
// asked only what it serves (GET instance, GET binding). Nothing is provisioned or bound;
// the one call that changes anything at the broker is an update carrying only the new
// context, where the service allows it (allow_context_updates), made by the update step
// like any other update (write-ahead, outcome, retries).

// AnnotationMovedFrom, on a record, is the id of the cluster the record was moved from;
// on a manifest "kubectl catalog export" printed, it asks "apply -f" to take the record
// over as it is instead of provisioning or binding it.
const AnnotationMovedFrom = v1alpha1.GroupName + "/moved-from"

// MovedFrom is the cluster id a record or manifest says it was moved from, "" for none.
func MovedFrom(annotations map[string]string) string { return annotations[AnnotationMovedFrom] }

// ClusterID is the id of the cluster the engine works in (the OSB context's clusterid).
func (e *Engine) ClusterID(ctx context.Context) (string, error) { return e.cfg.Platform.ClusterID(ctx) }

// MoveInInstanceRequest is an instance another cluster's catalog made, to take over.
type MoveInInstanceRequest struct {
	Namespace, Name string
	// Class and Plan are names or ids as provision takes them.
	Class, Plan string
	// ExternalID is the OSB instance id the broker holds the instance under.
	ExternalID string
	Parameters ParametersInput
	Limits     Limits
	Metadata   RecordMetadata
	// RebindOnUpdate is the instance's spec.rebindOnUpdate.
	RebindOnUpdate v1alpha1.RebindPolicy
	// From is the id of the cluster the instance is moved from.
	From string
	// Ticket is the move ticket read from the old cluster (nil: none), which an id
	// kubectl catalog generated there needs (CheckMoveTicket).
	Ticket *MoveTicket
	DryRun DryRun
	Follow Follow
}

// MoveInResult says what a take-over did, or would do.
type MoveInResult struct {
	Result
	// Checked: the broker answered GET for the id; false when it does not serve it, and
	// the id was taken on the user's word.
	Checked bool
	// ContextUpdate: an update carrying only the new context is sent (or would be); false
	// where the service does not allow one, and the broker keeps the old context.
	ContextUpdate bool
	// CredentialsFrom says where a binding's credentials came from: "broker" (GET
	// binding), "manifest" or "secret" (a Secret of that name was there already).
	CredentialsFrom string
	// Notes say, for the user, what was checked and what the broker keeps.
	Notes []string
	// Finished: the record was there already, written by an earlier run of the same
	// move that was interrupted, and what that run left undone is done (or would be).
	Finished bool
}

// UnfinishedMoveIn says what an interrupted move in left undone on the record of kind
// namespace/name: "the id claim" (an id bound to nothing whose record has no claim yet)
// and, for a binding, "the Secret" (its Secret not yet handed from the instance's record
// to the binding's). Nil for a record that was not moved in, or one complete; an error
// when the record cannot be read (store.IsNotFound when there is none).
func (e *Engine) UnfinishedMoveIn(ctx context.Context, kind, namespace, name string) ([]string, error) {
	var rec v1alpha1.Record
	var id string
	switch kind {
	case v1alpha1.KindServiceInstance:
		inst, err := e.cfg.Store.Instances().Get(ctx, namespace, name)
		if err != nil {
			return nil, err
		}
		rec, id = inst, inst.Spec.ExternalID
	case v1alpha1.KindServiceBinding:
		b, err := e.cfg.Store.Bindings().Get(ctx, namespace, name)
		if err != nil {
			return nil, err
		}
		rec, id = b, b.Spec.ExternalID
	default:
		return nil, fmt.Errorf("no move in of a %s", kind)
	}
	return e.unfinishedMoveIn(ctx, kind, rec, id)
}

func (e *Engine) unfinishedMoveIn(ctx context.Context, kind string, rec v1alpha1.Record, id string) ([]string, error) {
	if MovedFrom(rec.GetAnnotations()) == "" || rec.GetDeletionTimestamp() != nil || id == "" {
		return nil, nil
	}
	var missing []string
	if !v1alpha1.IsBoundID(id) {
		users, err := e.cfg.Store.WithExternalID(ctx, kind, rec.GetNamespace(), id)
		if err != nil {
			return nil, err
		}
		claimed := false
		for _, u := range users {
			if u.UID == rec.GetUID() && !u.Adopted.IsZero() {
				claimed = true
			}
		}
		if !claimed {
			missing = append(missing, "the id claim")
		}
	}
	if b, ok := rec.(*v1alpha1.ServiceBinding); ok {
		s, err := e.cfg.Store.GetSecret(ctx, b.Namespace, b.Spec.SecretName)
		if err != nil && !store.IsNotFound(err) {
			return nil, err
		}
		if err == nil && (!store.OwnedBy(s, b) || len(s.OwnerReferences) > 1) {
			missing = append(missing, "the Secret")
		}
	}
	return missing, nil
}

// finishMoveIn finishes rec, a record of this move (annotated moved-from from, and naming
// id) that an interrupted run of the same move wrote and left unfinished: its id is
// claimed and, for a binding, its Secret handed from inst's record (instance) to the
// binding's, each step done only when missing, nothing sent to the broker: the record
// holds what the first run found (its context update due, if any, is sent once by its
// step). It reports false for a record that is not this move's or is complete, which the
// caller refuses as it refuses any record of that name.
func (e *Engine) finishMoveIn(ctx context.Context, kind string, rec v1alpha1.Record, id, from string, instance *v1alpha1.ServiceInstance, dry DryRun, res *MoveInResult) (bool, error) {
	if from == "" || MovedFrom(rec.GetAnnotations()) != from {
		return false, nil
	}
	missing, err := e.unfinishedMoveIn(ctx, kind, rec, id)
	if err != nil || len(missing) == 0 {
		return false, err
	}
	res.Finished = true
	res.Notes = append(res.Notes, fmt.Sprintf("an earlier apply of this move was interrupted: %s %s made now; nothing is asked of the broker", strings.Join(missing, " and "), map[bool]string{true: "is", false: "are"}[len(missing) == 1]))
	if dry.Enabled() {
		return true, nil
	}
	if err := e.auth.IDFree(ctx, kind, rec.GetNamespace(), rec.GetName(), id); err != nil {
		return true, fmt.Errorf("%s %q cannot be finished: %w", kindName(kind), rec.GetName(), err)
	}
	if err := e.ClaimSpecIDs(ctx, rec); err != nil {
		return true, fmt.Errorf("%s %q is recorded, but %w: apply again", kindName(kind), rec.GetName(), err)
	}
	if b, ok := rec.(*v1alpha1.ServiceBinding); ok && slices.Contains(missing, "the Secret") {
		var owners []types.UID
		if instance != nil {
			owners = append(owners, instance.UID)
		}
		if _, err := e.cfg.Store.AdoptBindingSecret(ctx, b, owners...); err != nil {
			return true, fmt.Errorf("binding %q is recorded, but its Secret %q could not be adopted: %w: apply again", b.Name, b.Spec.SecretName, err)
		}
	}
	return true, nil
}

func kindName(kind string) string {
	if kind == v1alpha1.KindServiceBinding {
		return "binding"
	}
	return "instance"
}

// MoveInInstance records an instance the broker already holds under req.ExternalID,
// made by another cluster's catalog: the class, plan and parameters are checked as
// provision checks them, the id must be free here (as --external-id), and where the
// service has instances_retrievable the broker must answer GET instance for the id on
// that plan; a 404 is a refusal and nothing is written. The record is written as the
// engine writes an instance it provisioned (what the broker holds: the plan and the
// parameters named), annotated AnnotationMovedFrom, and driven: where the service has
// allow_context_updates, the update step sends one update carrying only the new context.
// A dry run does the checks, GET included, and writes nothing.
func (e *Engine) MoveInInstance(ctx context.Context, req MoveInInstanceRequest) (MoveInResult, error) {
	var res MoveInResult
	if req.ExternalID == "" {
		return res, inputErrorf("instance %q: moving it in needs its OSB id (spec.externalID), which \"kubectl catalog export\" writes: export it again from the cluster it comes from", req.Name)
	}
	if err := req.Limits.check(); err != nil {
		return res, err
	}
	if cur, err := e.cfg.Store.Instances().Get(ctx, req.Namespace, req.Name); err == nil && cur.Spec.ExternalID == req.ExternalID {
		if done, err := e.finishMoveIn(ctx, v1alpha1.KindServiceInstance, cur, req.ExternalID, req.From, nil, req.DryRun, &res); done || err != nil {
			return res, err
		}
	}
	if err := (instanceVerbs{e}).checkNameFree(ctx, req.Namespace, req.Name); err != nil {
		return res, err
	}
	inst, err := e.PrepareInstance(ctx, InstanceRequest{
		Namespace: req.Namespace, Name: req.Name, Class: req.Class, Plan: req.Plan,
		ExternalID: req.ExternalID, Parameters: req.Parameters,
	})
	if err != nil {
		return res, err
	}
	req.Limits.apply(&inst.Spec)
	inst.Spec.RebindOnUpdate = req.RebindOnUpdate
	req.Metadata.apply(&inst.ObjectMeta)
	if inst.Annotations == nil {
		inst.Annotations = map[string]string{}
	}
	inst.Annotations[AnnotationMovedFrom] = req.From
	if err := e.movableID(ctx, "instance", inst, req.ExternalID, inst.OwnsExternalIDIn, req.Ticket); err != nil {
		return res, err
	}
	if err := e.auth.IDFree(ctx, v1alpha1.KindServiceInstance, inst.Namespace, inst.Name, req.ExternalID); err != nil {
		return res, fmt.Errorf("instance %q cannot be moved in: %w", req.Name, err)
	}
	// The user's own command: the broker and its Secret are used with the user's rights.
	t, err := e.target(WithRunnersRights(ctx), inst)
	if err != nil {
		return res, fmt.Errorf("instance %q: %w", req.Name, err)
	}
	if err := e.checkHeldInstance(ctx, t, inst, &res); err != nil {
		return res, err
	}
	res.ContextUpdate = t.class != nil && t.class.Spec.AllowContextUpdates
	if res.ContextUpdate {
		res.Notes = append(res.Notes, "the broker is sent one update carrying only this cluster's context (cluster id, namespace)")
	} else {
		res.Notes = append(res.Notes, fmt.Sprintf("class %q does not allow context updates (allow_context_updates): the broker keeps the context of the cluster it was moved from until the next update of the instance", inst.Spec.ClassExternalName))
	}
	if req.DryRun.Enabled() {
		return res, nil
	}
	req.Follow.note("Moving in instance %q (id %s) in namespace %q...", req.Name, req.ExternalID, req.Namespace)
	created, err := e.AdoptInstance(ctx, InstanceAdoption{
		Record: inst, Class: t.class, HeldPlanID: inst.Spec.PlanID, ParametersHeld: true, ContextUpdate: res.ContextUpdate,
		Message: fmt.Sprintf("the broker holds the instance; its record was taken over from cluster %s", req.From),
	})
	if err != nil {
		return res, createError(err, req.Namespace, req.Name)
	}
	res.Result, err = e.FollowInstance(ctx, req.Namespace, req.Name, "move in", created, req.Follow)
	return res, err
}

// checkHeldInstance asks the broker, where the service serves GET instance, whether it
// holds inst's id, and on which plan.
func (e *Engine) checkHeldInstance(ctx context.Context, t target, inst *v1alpha1.ServiceInstance, res *MoveInResult) error {
	id := inst.Spec.ExternalID
	if t.class == nil || !t.class.Spec.InstancesRetrievable {
		res.Notes = append(res.Notes, fmt.Sprintf("broker %q does not serve GET instance for class %q (instances_retrievable): id %s is taken on your word", t.broker.Name, inst.Spec.ClassExternalName, id))
		return nil
	}
	got, err := t.client.GetInstance(ctx, &osb.GetInstanceRequest{
		RequestOptions: osb.RequestOptions{OmitOriginatingIdentity: true},
		InstanceID:     id, ServiceID: inst.Spec.ClassID, PlanID: inst.Spec.PlanID,
	})
	err = bounded(err, got, http.StatusOK, "GET", "/v2/service_instances/"+id)
	if notHeld(err) {
		return refused(ReasonRefusedNotHeld, "instance %q cannot be moved in: broker %q holds no instance with id %s (GET instance: %s); nothing was written: check spec.externalID against the cluster it comes from (%s there)",
			inst.Name, t.broker.Name, id, describe(err, 0), hint.Quoted(inst.Namespace, "describe", "instance", inst.Name))
	}
	if err != nil {
		return fmt.Errorf("instance %q: whether broker %q holds id %s could not be checked (GET instance: %s); nothing was written: try again", inst.Name, t.broker.Name, id, describe(err, 0))
	}
	if got.PlanID != "" && got.PlanID != inst.Spec.PlanID {
		held := got.PlanID
		if p := t.plan(held); p != nil {
			held = p.ExternalName
		}
		return refused(ReasonRefusedNotHeld, "instance %q cannot be moved in: broker %q holds id %s on plan %q, not %q as the manifest says; nothing was written: export it again once what is under way there is finished",
			inst.Name, t.broker.Name, id, held, inst.Spec.PlanExternalName)
	}
	res.Checked = true
	res.Notes = append(res.Notes, fmt.Sprintf("broker %q holds instance id %s (GET instance)", t.broker.Name, id))
	return nil
}

// ReasonRefusedNotHeld: a take-over named an OSB id the broker says it does not hold.
const ReasonRefusedNotHeld = "RefusedNotHeld"

// notHeld reports a GET the broker answered 404 or 410: it holds nothing of the id.
func notHeld(err error) bool {
	var he *osb.HTTPStatusError
	return errors.As(err, &he) && (he.StatusCode == http.StatusNotFound || he.StatusCode == http.StatusGone)
}

// MoveInBindingRequest is a binding another cluster's catalog made, to take over.
type MoveInBindingRequest struct {
	Namespace, Name string
	// Instance is the binding's instance, in Namespace: it must be settled here already.
	Instance   string
	SecretName string
	// ExternalID is the OSB binding id the broker holds the binding under.
	ExternalID string
	// Parameters and ParametersFrom are the spec's, kept as they are: a bound binding's
	// parameters are never sent again.
	Parameters     *runtime.RawExtension
	ParametersFrom []v1alpha1.ParametersFromSource
	Transforms     []v1alpha1.SecretTransform
	SecretTemplate *v1alpha1.SecretTemplate
	Metadata       RecordMetadata
	// Credentials are the Secret's data the manifest carries ("export --show-secrets"),
	// nil when it carries none.
	Credentials map[string][]byte
	// From is the id of the cluster the binding is moved from.
	From string
	// Ticket is the move ticket read from the old cluster (nil: none), as for an
	// instance.
	Ticket *MoveTicket
	DryRun DryRun
}

// MoveInBinding records a binding the broker already holds under req.ExternalID, made
// by another cluster's catalog, with its credentials in its Secret: where the service has
// bindings_retrievable the broker must answer GET binding for the id (a 404 is a refusal,
// nothing written), and its answer gives the credentials, shaped as a bind's are (the
// transforms, the template); else they come from the manifest (req.Credentials) or from
// a Secret of that name already there, and without either the move is refused,
// saying how to carry the Secret over. The id must be free here. Nothing is bound.
func (e *Engine) MoveInBinding(ctx context.Context, req MoveInBindingRequest) (MoveInResult, error) {
	var res MoveInResult
	if req.ExternalID == "" {
		return res, inputErrorf("binding %q: moving it in needs its OSB id (spec.externalID), which \"kubectl catalog export\" writes: export it again from the cluster it comes from", req.Name)
	}
	if req.SecretName == "" {
		req.SecretName = req.Name
	}
	if cur, err := e.cfg.Store.Bindings().Get(ctx, req.Namespace, req.Name); err == nil {
		if cur.Spec.ExternalID == req.ExternalID && cur.Spec.InstanceName == req.Instance && cur.Spec.SecretName == req.SecretName {
			inst, ierr := e.cfg.Store.Instances().Get(ctx, req.Namespace, req.Instance)
			if ierr != nil && !store.IsNotFound(ierr) {
				return res, ierr
			}
			if ierr != nil {
				inst = nil
			} else if err := e.auth.CheckConsumer(WithRunnersRights(ctx), cur, inst); err != nil {
				return res, err
			}
			if done, err := e.finishMoveIn(ctx, v1alpha1.KindServiceBinding, cur, req.ExternalID, req.From, inst, req.DryRun, &res); done || err != nil {
				return res, err
			}
		}
		return res, fmt.Errorf("binding %q already exists in namespace %q: see it with %s, or remove it first", req.Name, req.Namespace, hint.Quoted(req.Namespace, "describe", "binding", req.Name))
	} else if !store.IsNotFound(err) {
		return res, err
	}
	inst, err := e.cfg.Store.Instances().Get(ctx, req.Namespace, req.Instance)
	if store.IsNotFound(err) {
		return res, fmt.Errorf("binding %q: its instance %q does not exist in namespace %q: take the instance over first (its document in the same file, before the binding)", req.Name, req.Instance, req.Namespace)
	}
	if err != nil {
		return res, err
	}
	if inst.DeletionTimestamp != nil || inst.Status.Provisioned == nil {
		return res, fmt.Errorf("binding %q: its instance %q is not provisioned here (%s): wait for it with %s and apply again", req.Name, req.Instance, inst.Status.Phase, hint.Quoted(req.Namespace, "wait", "instance/"+req.Instance))
	}
	if req.SecretTemplate != nil {
		if err := CheckSecretTemplate(req.SecretTemplate); err != nil {
			return res, fmt.Errorf("binding %q: %w: fix spec.secretTemplate", req.Name, err)
		}
	}
	b := &v1alpha1.ServiceBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: req.Namespace, Name: req.Name, Annotations: map[string]string{AnnotationMovedFrom: req.From}},
		Spec: v1alpha1.ServiceBindingSpec{
			InstanceName: req.Instance, ExternalID: req.ExternalID, SecretName: req.SecretName,
			Parameters: req.Parameters, ParametersFrom: req.ParametersFrom, SecretTransforms: req.Transforms, SecretTemplate: req.SecretTemplate,
		},
	}
	req.Metadata.apply(&b.ObjectMeta)
	b.Annotations[AnnotationMovedFrom] = req.From
	if err := e.movableID(ctx, "binding", b, req.ExternalID, b.OwnsExternalIDIn, req.Ticket); err != nil {
		return res, err
	}
	if err := e.auth.CheckConsumer(WithRunnersRights(ctx), b, inst); err != nil {
		return res, err
	}
	if err := e.auth.IDFree(ctx, v1alpha1.KindServiceBinding, b.Namespace, b.Name, req.ExternalID); err != nil {
		return res, fmt.Errorf("binding %q cannot be moved in: %w", req.Name, err)
	}
	t, err := e.target(WithRunnersRights(ctx), inst)
	if err != nil {
		return res, fmt.Errorf("binding %q: %w", req.Name, err)
	}
	data, err := e.heldBindingCredentials(ctx, bindTarget{target: t, inst: inst, planID: inst.Status.Provisioned.PlanID}, b, req, &res)
	if err != nil {
		return res, err
	}
	if req.DryRun.Enabled() {
		return res, nil
	}
	if data != nil {
		// Written first, owned by the instance's record, then handed to the binding's:
		// an interruption in between leaves no binding record without its Secret, and
		// the Secret goes with the instance if nobody applies again.
		if err := e.cfg.Store.WriteRecordSecret(ctx, inst, req.SecretName, data); err != nil {
			return res, fmt.Errorf("binding %q: its credentials could not be written to Secret %q: %w; nothing else was written: apply again", req.Name, req.SecretName, err)
		}
	}
	if _, err := e.AdoptBinding(ctx, BindingAdoption{Record: b, PreviousOwners: []types.UID{inst.UID}}); err != nil {
		return res, err
	}
	return res, nil
}

// heldBindingCredentials checks, where the service serves GET binding, that the broker
// holds b's id, and says what goes into b's Secret: the broker's answer shaped as a
// bind's, or the manifest's data; nil when a Secret of that name is there already (the
// user carried it over, or an interrupted move wrote it), which is adopted as it is.
func (e *Engine) heldBindingCredentials(ctx context.Context, t bindTarget, b *v1alpha1.ServiceBinding, req MoveInBindingRequest, res *MoveInResult) (map[string][]byte, error) {
	id := b.Spec.ExternalID
	there := false
	if s, err := e.cfg.Store.GetSecret(ctx, b.Namespace, b.Spec.SecretName); err == nil {
		there = true
		for _, ref := range s.OwnerReferences {
			if ref.UID != t.inst.UID && ref.Controller != nil && *ref.Controller {
				return nil, fmt.Errorf("binding %q: Secret %q in namespace %q is controlled by %s %q: give the binding another spec.secretName, or remove that Secret", b.Name, b.Spec.SecretName, b.Namespace, ref.Kind, ref.Name)
			}
		}
	} else if !store.IsNotFound(err) {
		return nil, err
	}
	if !t.retrievable() {
		res.Notes = append(res.Notes, fmt.Sprintf("broker %q does not serve GET binding for class %q (bindings_retrievable): binding id %s is taken on your word", t.broker.Name, t.inst.Spec.ClassExternalName, id))
		switch {
		case there:
			res.CredentialsFrom = "secret"
			return nil, nil
		case req.Credentials != nil:
			res.CredentialsFrom = "manifest"
			return req.Credentials, nil
		}
		return nil, inputErrorf("binding %q cannot be moved in: broker %q does not serve GET binding (bindings_retrievable), so its credentials cannot be fetched, and Secret %q is not in namespace %q; nothing was written: export it again with --show-secrets, or copy the Secret into the namespace, and apply again",
			b.Name, t.broker.Name, b.Spec.SecretName, b.Namespace)
	}
	got, err := t.client.GetBinding(ctx, &osb.GetBindingRequest{
		RequestOptions: osb.RequestOptions{OmitOriginatingIdentity: true},
		InstanceID:     t.inst.CurrentExternalID(), BindingID: id, ServiceID: t.inst.Spec.ClassID, PlanID: t.planID,
	})
	err = bounded(err, got, http.StatusOK, "GET", "/v2/service_instances/"+t.inst.CurrentExternalID()+"/service_bindings/"+id)
	if notHeld(err) {
		return nil, refused(ReasonRefusedNotHeld, "binding %q cannot be moved in: broker %q holds no binding with id %s of instance %q (GET binding: %s); nothing was written: check spec.externalID against the cluster it comes from",
			b.Name, t.broker.Name, id, t.inst.Name, describe(err, 0))
	}
	if err != nil {
		return nil, fmt.Errorf("binding %q: whether broker %q holds id %s could not be checked (GET binding: %s); nothing was written: try again", b.Name, t.broker.Name, id, describe(err, 0))
	}
	res.Checked = true
	res.Notes = append(res.Notes, fmt.Sprintf("broker %q holds binding id %s (GET binding)", t.broker.Name, id))
	if there {
		res.CredentialsFrom = "secret"
		return nil, nil
	}
	res.CredentialsFrom = "broker"
	return e.takenOverSecretData(ctx, t, b, answerOf(got))
}

// takenOverSecretData is the data of b's Secret from the broker's answer, shaped as a
// bind's outcome shapes it (bound): the transforms, the template, the servicebinding.io
// keys.
func (e *Engine) takenOverSecretData(ctx context.Context, t bindTarget, b *v1alpha1.ServiceBinding, a bindAnswer) (map[string][]byte, error) {
	data, err := credentials.Encode(a.Credentials)
	if err == nil {
		data, err = credentials.Apply(ctx, data, a.Credentials, b.Spec.SecretTransforms, func(ctx context.Context, name string) (map[string][]byte, error) {
			return e.auth.SecretsFor(b)(WithRunnersRights(ctx), b.Namespace, name)
		})
	}
	if err == nil {
		data, err = renderSecretTemplate(b, t.inst, a.Credentials, data)
	}
	if err != nil {
		return nil, fmt.Errorf("binding %q: its credentials could not be shaped for Secret %q: %w; nothing was written", b.Name, b.Spec.SecretName, err)
	}
	_ = shapeEnvData(b, data)
	return credentials.WithServiceBindingKeys(data, serviceBindingType(t), t.inst.Spec.BrokerName), nil
}

// contextUpdateDue reports an instance whose broker holds the context of the cluster it
// was moved from, where an update carrying only the new context is to be sent.
func contextUpdateDue(inst *v1alpha1.ServiceInstance) bool {
	return inst.Status.Provisioned != nil && inst.Status.Provisioned.ContextOutdated
}

// movableID refuses an id the record moved in could not use here: an id kubectl catalog
// generated is bound to the namespace (or record) it was made for, on the cluster it was
// made on, and belongs to nothing else whoever names it (docs/security.md#osb-id-ownership),
// unless the old cluster's move ticket gives it to this namespace of this cluster
// (CheckMoveTicket) and this namespace's Namespace object says it continues the ticket's
// namespace (v1alpha1.AnnotationMovedKeys, which a tenant cannot write); an id given with --external-id, or taken over from another platform,
// is the record's whose spec names it. A ticket's id is then annotated on rec
// (v1alpha1.AnnotationMovedKey) with the key it was generated for, which makes it rec's
// own here (v1alpha1.MovedIDIn).
func (e *Engine) movableID(ctx context.Context, kind string, rec metav1.Object, id string, owns func(string, v1alpha1.NamespaceKey) bool, ticket *MoveTicket) error {
	name, namespace := rec.GetName(), rec.GetNamespace()
	key, err := e.auth.NamespaceKey(ctx, namespace)
	if err != nil {
		return err
	}
	if owns(id, key) {
		return nil
	}
	if !v1alpha1.IsBoundID(id) {
		return nil
	}
	cluster, err := e.ClusterID(ctx)
	if err != nil {
		return err
	}
	if err := CheckMoveTicket(ticket, cluster, namespace, kind, name, id); err != nil {
		return err
	}
	moved := v1alpha1.NamespaceKey{ClusterID: ticket.FromClusterID, UID: ticket.FromNamespaceUID}
	a := rec.GetAnnotations()
	if a == nil {
		a = map[string]string{}
	}
	a[v1alpha1.AnnotationMovedKey] = moved.String()
	rec.SetAnnotations(a)
	if v1alpha1.IDBoundToNamespace(id, moved) && !key.Continues(moved) {
		return refused(ReasonRefusedIDInUse, "%s %q cannot be moved in: its OSB id %s was generated for namespace %q of cluster %q, which namespace %q here does not say it continues (annotation %s on the Namespace, which only who may update the Namespace writes); nothing was written: %s",
			kind, name, id, ticket.FromNamespace, ticket.FromClusterID, namespace, v1alpha1.AnnotationMovedKeys,
			fmt.Sprintf("an administrator of this cluster runs \"kubectl annotate namespace %s --overwrite %s='%s'\", then apply again", namespace, v1alpha1.AnnotationMovedKeys, v1alpha1.MovedKeysAnnotation(map[string]string{v1alpha1.AnnotationMovedKeys: key.Moved}, moved)))
	}
	if !owns(id, key) {
		return refused(ReasonRefusedIDInUse, "%s %q cannot be moved in: its OSB id %s is not one of namespace %q of cluster %q (this cluster is %q); nothing was written", kind, name, id, ticket.FromNamespace, ticket.FromClusterID, cluster)
	}
	return nil
}
