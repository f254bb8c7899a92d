package migrate

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/hint"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

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
	if oc, done := m.existingBinding(ctx, o, u, from, secretName, deleting); done {
		return oc
	}
	if oc, done := deletedSince("binding", u); done {
		return oc
	}
	id := str(u, "spec", "externalID")
	if id == "" {
		return skipped(true, "it has no spec.externalID, so the broker's binding cannot be named")
	}
	instName := str(u, "spec", "instanceRef", "name")
	if stop := m.unmigratableBinding(u, id, instName, deleting); stop != nil {
		return *stop
	}
	if stop := m.credentialsSecret(ctx, u, id, secretName, deleting); stop != nil {
		return *stop
	}
	params, pf, stop := m.parameters(ctx, u)
	if stop != nil {
		return *stop
	}
	tr, err := secretTransforms(u)
	if err != nil {
		return skipped(true, "%v", err)
	}
	if names := transformSecrets(tr); len(names) > 0 {
		if why := m.authorOfSecrets(ctx, u, names, "its credentials take keys from Secrets (spec.secretTransforms addKeysFrom: "+quotedList(names)+")"); why != "" {
			return skipped(true, "%s", why)
		}
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
	made, err := m.cfg.Engine.AdoptBinding(ctx, engine.BindingAdoption{Record: rec, PreviousOwners: []types.UID{u.GetUID()}})
	if err != nil {
		return skipped(true, "%v", err)
	}
	m.wrote()
	reason := fmt.Sprintf("Secret %q adopted", secretName)
	if err := m.markMigrated(ctx, ServiceBindings, u, made.UID); err != nil {
		reason = join(reason, markNote(err))
	}
	if deleting {
		if err := m.cfg.Store.Bindings().Delete(ctx, ns, rec.Name); err != nil {
			return skipped(true, "recorded, but its unbind could not be: %v; run this again", err)
		}
		m.wrote()
		reason += "; unbind pending: reconcile unbinds it"
	}
	return Outcome{Result: ResultMigrated, Reason: reason, clean: true}
}

// existingBinding is the outcome for an object whose binding record exists already
// (done): migrated from it before, its Secret or its unbind perhaps still to be
// carried over, or another record of the same name.
func (m *Migrator) existingBinding(ctx context.Context, o Options, u *unstructured.Unstructured, from, secretName string, deleting bool) (oc Outcome, done bool) {
	ns := u.GetNamespace()
	existing, err := m.cfg.Store.Bindings().Get(ctx, ns, u.GetName())
	switch {
	case err == nil:
		if existing.Annotations[store.AnnotationMigratedFrom] != from {
			return skipped(true, "a binding record %q exists already in namespace %q that was not migrated from this object: rename or remove one of them, then run this again", u.GetName(), ns), true
		}
		result, note := ResultAlreadyMigrated, ""
		if !o.DryRun {
			// The mark a run stopped after the record left to this one.
			if err := m.markMigrated(ctx, ServiceBindings, u, existing.UID); err != nil {
				note = markNote(err)
			}
		}
		secret, err := m.cfg.Store.GetSecret(ctx, ns, existing.Spec.SecretName)
		if err != nil && !store.IsNotFound(err) {
			return skipped(true, "%v", err), true
		}
		if err == nil && (!store.OwnedBy(secret, existing) || ownedByUID(secret, u.GetUID())) {
			if o.DryRun {
				return Outcome{Result: ResultWouldMigrate, Reason: fmt.Sprintf("Secret %q is still to be adopted", secretName)}, true
			}
			if _, err := m.cfg.Store.AdoptBindingSecret(ctx, existing, u.GetUID()); err != nil {
				return skipped(true, "%v", err), true
			}
			m.wrote()
			result = ResultMigrated
		}
		if !o.DryRun && existing.DeletionTimestamp == nil {
			// The claim of its spec's ids, made when it was recorded, may have failed
			// there, as an instance's may (existingInstance); a binding being deleted
			// without one loses the id, at its unbind, to an older record whose spec
			// names it. Making it is idempotent.
			if err := m.cfg.Engine.ClaimSpecIDs(ctx, existing); err != nil {
				return skipped(true, "binding %q is recorded, but %v: run this again", existing.Name, err), true
			}
		}
		if deleting && existing.DeletionTimestamp == nil {
			if o.DryRun {
				return Outcome{Result: ResultWouldMigrate, Reason: "its unbind is still to be recorded"}, true
			}
			if err := m.cfg.Store.Bindings().Delete(ctx, ns, existing.Name); err != nil {
				return skipped(true, "%v", err), true
			}
			m.wrote()
			result = ResultMigrated
		}
		return Outcome{Result: result, Reason: note, clean: true}, true
	case !store.IsNotFound(err):
		return skipped(true, "%v", err), true
	}
	return Outcome{}, false
}

// unmigratableBinding is the outcome for a binding that cannot, or need not, be
// migrated in the state svcat left it in; nil for one that can.
func (m *Migrator) unmigratableBinding(u *unstructured.Unstructured, id, instName string, deleting bool) *Outcome {
	stop := func(needsPerson bool, format string, args ...any) *Outcome {
		oc := skipped(needsPerson, format, args...)
		return &oc
	}
	if m.gone[u.GetNamespace()+"/"+instName] {
		return stop(true, "its instance %q was migrated, and its record deleted since: the broker may still hold this binding (id %s) under it; ask the broker's operator, then remove this object", instName, id)
	}
	if why, ok := m.instances[u.GetNamespace()+"/"+instName]; !ok || why != "" {
		if !ok {
			why = "there is no such ServiceInstance"
		}
		return stop(true, "its instance %q is not migrated: %s", instName, why)
	}
	if deleting && str(u, "status", "unbindStatus") == "Succeeded" {
		return stop(false, "it is unbound already: the broker holds nothing of it")
	}
	if b, _, _ := unstructured.NestedBool(u.Object, "status", "orphanMitigationInProgress"); b {
		return stop(true, "svcat was deleting at the broker what a failed bind left (orphan mitigation) under id %s: check with the broker's operator that it is gone, then remove this object", id)
	}
	if cur := str(u, "status", "currentOperation"); cur != "" {
		return stop(true, "a %s was in progress when svcat stopped, and its outcome is unknown: ask the broker's operator about binding id %s, then remove this object", strings.ToLower(cur), id)
	}
	if s, _, _ := condition(u, "Ready"); s != "True" && !deleting {
		return stop(false, "it was never bound%s: the broker holds nothing of it; bind again with %s if it is still wanted", failure(u), hint.Quoted(u.GetNamespace(), "bind", instName))
	}
	// svcat gave up unbinding it (unbindStatus Failed): the broker may still hold it,
	// whatever its Ready condition says.
	if s, _, _ := condition(u, "Ready"); s != "True" && deleting && str(u, "status", "unbindStatus") != "Required" && !gaveUpUnbinding(u, deleting) {
		return stop(false, "it is being deleted and was never bound: the broker holds nothing of it")
	}
	return nil
}

// gaveUpUnbinding says whether svcat gave up unbinding the object (unbindStatus
// Failed).
func gaveUpUnbinding(u *unstructured.Unstructured, deleting bool) bool {
	return deleting && str(u, "status", "unbindStatus") == "Failed"
}

// credentialsSecret checks that the binding's credentials Secret is there to be
// adopted; otherwise it is the outcome.
func (m *Migrator) credentialsSecret(ctx context.Context, u *unstructured.Unstructured, id, secretName string, deleting bool) *Outcome {
	secret, err := m.cfg.Core.CoreV1().Secrets(u.GetNamespace()).Get(ctx, secretName, metav1.GetOptions{})
	var oc Outcome
	switch {
	case err == nil && ownedByUID(secret, u.GetUID()):
		// svcat's controller made it, owned by the binding: its credentials.
		return nil
	case err == nil:
		// A Secret the spec merely names (any Secret of the namespace): adopting it
		// gives it to the catalog, which rewrites it, projects it into workloads and
		// deletes it at the unbind, so it is taken only as the Secrets a spec reads are.
		why := m.authorOfSecrets(ctx, u, []string{secretName}, fmt.Sprintf("its credentials Secret %q is not owned by it (svcat made its bindings' Secrets owned by them), and adopting it hands that Secret to the catalog", secretName))
		if why == "" {
			return nil
		}
		oc = skipped(true, "%s", why)
	case apierrors.IsNotFound(err) && gaveUpUnbinding(u, deleting):
		oc = skipped(true, "svcat gave up unbinding it (status.unbindStatus Failed), so the broker may still hold binding id %s, and its credentials Secret %q is gone, so it cannot be recorded: unbind it at the broker by hand, then remove this object", id, secretName)
	case apierrors.IsNotFound(err):
		oc = skipped(true, "its credentials Secret %q is missing, so they cannot be carried over: unbind it at the broker by hand (binding id %s), or restore the Secret and run this again", secretName, id)
	default:
		oc = skipped(true, "cannot read its credentials Secret %q: %v", secretName, err)
	}
	return &oc
}

func ownedByUID(obj metav1.Object, uid types.UID) bool {
	for _, r := range obj.GetOwnerReferences() {
		if r.UID == uid {
			return true
		}
	}
	return false
}
