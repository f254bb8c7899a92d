package store

import (
	"context"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
)

// GetSecret reads a Secret (a broker's credentials, parameters from a Secret, a binding's
// credentials), with the store's errors.
func (s *Store) GetSecret(ctx context.Context, namespace, name string) (*corev1.Secret, error) {
	secret, err := s.core.CoreV1().Secrets(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, apiError("get", kindSecret, namespace, name, err)
	}
	return secret, nil
}

// bindingOwnerReference makes the binding's ConfigMap the owner of its Secret, so that
// the garbage collector deletes the Secret with the ConfigMap. It does not block the
// ConfigMap's deletion.
func bindingOwnerReference(b *v1alpha1.ServiceBinding) metav1.OwnerReference {
	return metav1.OwnerReference{
		APIVersion: "v1", Kind: "ConfigMap", Name: ConfigMapName(v1alpha1.KindServiceBinding, b.Name), UID: b.UID,
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(false),
	}
}

// OwnedBy reports whether secret belongs to binding b (an owner reference to b's
// ConfigMap, by uid).
func OwnedBy(secret *corev1.Secret, b *v1alpha1.ServiceBinding) bool {
	if b.UID == "" {
		return false
	}
	for _, ref := range secret.OwnerReferences {
		if ref.UID == b.UID && ref.Kind == "ConfigMap" {
			return true
		}
	}
	return false
}

// WriteBindingSecret writes data as the credentials Secret of binding b (named
// b.Spec.SecretName, in b's namespace), owned by b's ConfigMap. It replaces the data of a
// Secret b already owns, and refuses (IsNotOwned) to touch a Secret of that name that b
// does not own. b must have been read from the store (it needs b's uid).
func (s *Store) WriteBindingSecret(ctx context.Context, b *v1alpha1.ServiceBinding, data map[string][]byte) (*corev1.Secret, error) {
	if b.UID == "" {
		return nil, fmt.Errorf("writing the Secret of service binding %q: the binding has no uid; read it from the store first", b.Name)
	}
	name := b.Spec.SecretName
	if name == "" {
		return nil, &Error{Reason: ReasonInvalid, Op: "write", Kind: kindSecret, Namespace: b.Namespace,
			Detail: fmt.Sprintf("service binding %q has no secret name", b.Name)}
	}
	secrets := s.core.CoreV1().Secrets(b.Namespace)
	want := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: b.Namespace,
			Labels: map[string]string{
				LabelManagedBy: ManagedBy, LabelBinding: LabelValue(b.Name), LabelInstance: LabelValue(b.Spec.InstanceName),
			},
			OwnerReferences: []metav1.OwnerReference{bindingOwnerReference(b)},
		},
		Type: corev1.SecretTypeOpaque,
		Data: data,
	}
	created, err := secrets.Create(ctx, want, metav1.CreateOptions{})
	if err == nil {
		return created, nil
	}
	if !IsAlreadyExists(apiError("create", kindSecret, b.Namespace, name, err)) {
		return nil, apiError("create", kindSecret, b.Namespace, name, err)
	}
	var written *corev1.Secret
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		existing, err := secrets.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if !OwnedBy(existing, b) {
			return &Error{Reason: ReasonNotOwned, Op: "write", Kind: kindSecret, Namespace: b.Namespace, Name: name,
				Detail: fmt.Sprintf("service binding %q", b.Name)}
		}
		existing.Data = data
		existing.StringData = nil
		if existing.Labels == nil {
			existing.Labels = map[string]string{}
		}
		maps.Copy(existing.Labels, want.Labels)
		written, err = secrets.Update(ctx, existing, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return nil, apiError("write", kindSecret, b.Namespace, name, err)
	}
	return written, nil
}

// DeleteBindingSecret deletes the credentials Secret of binding b: the one named in its
// status, and the one its spec names if different, each only if b owns it. A Secret that
// is already gone, or that b does not own, is left as it is without error.
func (s *Store) DeleteBindingSecret(ctx context.Context, b *v1alpha1.ServiceBinding) error {
	names := []string{b.Spec.SecretName}
	if b.Status.Secret != nil && b.Status.Secret.Name != b.Spec.SecretName {
		names = append(names, b.Status.Secret.Name)
	}
	secrets := s.core.CoreV1().Secrets(b.Namespace)
	for _, name := range names {
		if name == "" {
			continue
		}
		existing, err := secrets.Get(ctx, name, metav1.GetOptions{})
		if IsNotFound(apiError("get", kindSecret, b.Namespace, name, err)) {
			continue
		}
		if err != nil {
			return apiError("get", kindSecret, b.Namespace, name, err)
		}
		if !OwnedBy(existing, b) {
			continue
		}
		// The uid precondition keeps a Secret re-created meanwhile by someone else.
		err = secrets.Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &existing.UID}})
		if err != nil && !IsNotFound(apiError("delete", kindSecret, b.Namespace, name, err)) {
			return apiError("delete", kindSecret, b.Namespace, name, err)
		}
	}
	return nil
}
