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
		return skipped(false, "it was never bound%s: the broker holds nothing of it; bind again with %s if it is still wanted", failure(u), hint.Quoted(u.GetNamespace(), "bind", instName))
	}
	// svcat gave up unbinding it (unbindStatus Failed): the broker may still hold it,
	// whatever its Ready condition says.
	gaveUp := deleting && str(u, "status", "unbindStatus") == "Failed"
	if s, _, _ := condition(u, "Ready"); s != "True" && deleting && str(u, "status", "unbindStatus") != "Required" && !gaveUp {
		return skipped(false, "it is being deleted and was never bound: the broker holds nothing of it")
	}
	secret, err := m.cfg.Core.CoreV1().Secrets(ns).Get(ctx, secretName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) && gaveUp {
		return skipped(true, "svcat gave up unbinding it (status.unbindStatus Failed), so the broker may still hold binding id %s, and its credentials Secret %q is gone, so it cannot be recorded: unbind it at the broker by hand, then remove this object", id, secretName)
	}
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
	if why := m.authorOfSecrets(ctx, u, pf); why != "" {
		return skipped(true, "%s", why)
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
	if _, err := m.cfg.Engine.AdoptBinding(ctx, engine.BindingAdoption{Record: rec, PreviousOwners: []types.UID{u.GetUID()}}); err != nil {
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
