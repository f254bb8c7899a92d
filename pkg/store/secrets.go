package store

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/ahead"
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
	want, err := bindingSecret(b, data)
	if err != nil {
		return nil, err
	}
	name := want.Name
	secrets := s.core.CoreV1().Secrets(b.Namespace)
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
		markHeldID(&existing.ObjectMeta, b)
		written, err = secrets.Update(ctx, existing, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return nil, apiError("write", kindSecret, b.Namespace, name, err)
	}
	return written, nil
}

// WriteBindingSecretOver is WriteBindingSecret on the condition that the Secret is still
// as its writer read it before it read what it writes: resourceVersion is the Secret's
// then, "" when there was none. Any other write since (another driver's copy of newer
// credentials, say) makes it fail with IsConflict, writing nothing: a copy made from
// what was read then never lands over one made later.
func (s *Store) WriteBindingSecretOver(ctx context.Context, b *v1alpha1.ServiceBinding, data map[string][]byte, resourceVersion string) (*corev1.Secret, error) {
	if b.UID == "" {
		return nil, fmt.Errorf("writing the Secret of service binding %q: the binding has no uid; read it from the store first", b.Name)
	}
	name := b.Spec.SecretName
	conflict := func(err error) error {
		return &Error{Reason: ReasonConflict, Op: "write", Kind: kindSecret, Namespace: b.Namespace, Name: name, Err: err}
	}
	if resourceVersion == "" {
		created, err := s.WriteBindingSecretNew(ctx, b, data)
		if IsAlreadyExists(err) {
			return nil, conflict(err)
		}
		return created, err
	}
	secrets := s.core.CoreV1().Secrets(b.Namespace)
	existing, err := secrets.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, conflict(err)
	}
	if err != nil {
		return nil, apiError("get", kindSecret, b.Namespace, name, err)
	}
	if !OwnedBy(existing, b) {
		return nil, &Error{Reason: ReasonNotOwned, Op: "write", Kind: kindSecret, Namespace: b.Namespace, Name: name,
			Detail: fmt.Sprintf("service binding %q", b.Name)}
	}
	if existing.ResourceVersion != resourceVersion {
		return nil, conflict(nil)
	}
	existing.Data, existing.StringData = data, nil
	if existing.Labels == nil {
		existing.Labels = map[string]string{}
	}
	maps.Copy(existing.Labels, map[string]string{LabelManagedBy: ManagedBy, LabelBinding: LabelValue(b.Name), LabelInstance: LabelValue(b.Spec.InstanceName)})
	markHeldID(&existing.ObjectMeta, b)
	written, err := secrets.Update(ctx, existing, metav1.UpdateOptions{})
	if apierrors.IsConflict(err) {
		return nil, conflict(err)
	}
	if err != nil {
		return nil, apiError("write", kindSecret, b.Namespace, name, err)
	}
	return written, nil
}

// WriteBindingSecretNew creates the credentials Secret of binding b with data, as
// WriteBindingSecret does when there is none; IsAlreadyExists when there is one.
func (s *Store) WriteBindingSecretNew(ctx context.Context, b *v1alpha1.ServiceBinding, data map[string][]byte) (*corev1.Secret, error) {
	want, err := bindingSecret(b, data)
	if err != nil {
		return nil, err
	}
	created, err := s.core.CoreV1().Secrets(b.Namespace).Create(ctx, want, metav1.CreateOptions{})
	if err != nil {
		return nil, apiError("create", kindSecret, b.Namespace, want.Name, err)
	}
	return created, nil
}

// bindingSecret is the credentials Secret of binding b holding data: named
// b.Spec.SecretName in b's namespace, labelled with its binding and instance, owned by
// b's ConfigMap.
func bindingSecret(b *v1alpha1.ServiceBinding, data map[string][]byte) (*corev1.Secret, error) {
	if b.Spec.SecretName == "" {
		return nil, &Error{Reason: ReasonInvalid, Op: "write", Kind: kindSecret, Namespace: b.Namespace,
			Detail: fmt.Sprintf("service binding %q has no secret name", b.Name)}
	}
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name: b.Spec.SecretName, Namespace: b.Namespace,
			Labels: map[string]string{
				LabelManagedBy: ManagedBy, LabelBinding: LabelValue(b.Name), LabelInstance: LabelValue(b.Spec.InstanceName),
			},
			OwnerReferences: []metav1.OwnerReference{bindingOwnerReference(b)},
		},
		Type: corev1.SecretTypeOpaque,
		Data: data,
	}
	markHeldID(&s.ObjectMeta, b)
	return s, nil
}

// bindingSecretNames are the Secrets DeleteBindingSecret deletes of b: its spec's, and
// the one its status names if different.
func bindingSecretNames(b *v1alpha1.ServiceBinding) []string {
	names := []string{b.Spec.SecretName}
	if b.Status.Secret != nil && b.Status.Secret.Name != b.Spec.SecretName {
		names = append(names, b.Status.Secret.Name)
	}
	return names
}

// SecretReads are reads of the Secrets a binding's deletion removes, started ahead
// (StartBindingSecretReads); DeleteBindingSecret takes each once.
type SecretReads struct {
	namespace string
	mu        sync.Mutex
	reads     map[string]*ahead.Read[*corev1.Secret]
}

// StartBindingSecretReads starts reading the Secrets DeleteBindingSecret would delete of
// b as given. The caller starts them only after the write they must follow (b's
// deletion mark); DeleteBindingSecret uses them for the names of the binding it is
// given, and reads any other name itself. Each delete is guarded by the uid read, so a
// Secret re-created since is kept.
func (s *Store) StartBindingSecretReads(ctx context.Context, b *v1alpha1.ServiceBinding) *SecretReads {
	r := &SecretReads{namespace: b.Namespace, reads: map[string]*ahead.Read[*corev1.Secret]{}}
	for _, name := range bindingSecretNames(b) {
		if name != "" {
			r.reads[name] = ahead.Start(ctx, func() (*corev1.Secret, error) {
				return s.core.CoreV1().Secrets(b.Namespace).Get(ctx, name, metav1.GetOptions{})
			})
		}
	}
	return r
}

func (r *SecretReads) take(namespace, name string) *ahead.Read[*corev1.Secret] {
	if r == nil || r.namespace != namespace {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	read := r.reads[name]
	delete(r.reads, name)
	return read
}

// DeleteBindingSecret deletes the credentials Secret of binding b: the one named in its
// status, and the one its spec names if different, each only if b owns it. A Secret that
// is already gone, or that b does not own, is left as it is without error. started,
// when not nil, holds reads of those Secrets started ahead.
func (s *Store) DeleteBindingSecret(ctx context.Context, b *v1alpha1.ServiceBinding, started ...*SecretReads) error {
	secrets := s.core.CoreV1().Secrets(b.Namespace)
	for _, name := range bindingSecretNames(b) {
		if name == "" {
			continue
		}
		var read *ahead.Read[*corev1.Secret]
		for _, r := range started {
			if read == nil {
				read = r.take(b.Namespace, name)
			}
		}
		if read == nil {
			read = ahead.Done(secrets.Get(ctx, name, metav1.GetOptions{}))
		}
		existing, err := read.Wait()
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

// RequestSecretPrefix starts the name of every Secret that keeps what a call sent
// (RequestSecretName).
const RequestSecretPrefix = "catalog-request-"

// RequestSecretName is the Secret that keeps the parameters with secret values that the
// call with request id requestID sent: one per call, so that two drivers racing for a
// record never write the same Secret.
func RequestSecretName(requestID string) string { return RequestSecretPrefix + requestID }

// RequestParametersKey is the data key of a request Secret: a JSON object of the
// parameters sent whose values came from Secrets.
const RequestParametersKey = "parameters"

// recordOwnerReference makes the ConfigMap of rec (an instance or a binding) the owner
// of a Secret, so that the garbage collector deletes the Secret with the record.
func recordOwnerReference(rec v1alpha1.Record) (metav1.OwnerReference, map[string]string, error) {
	switch r := rec.(type) {
	case *v1alpha1.ServiceInstance:
		return metav1.OwnerReference{
				APIVersion: "v1", Kind: "ConfigMap", Name: ConfigMapName(v1alpha1.KindServiceInstance, r.Name), UID: r.UID,
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(false),
			}, map[string]string{LabelManagedBy: ManagedBy, LabelInstance: LabelValue(r.Name)},
			nil
	case *v1alpha1.ServiceBinding:
		return bindingOwnerReference(r), map[string]string{
			LabelManagedBy: ManagedBy, LabelBinding: LabelValue(r.Name), LabelInstance: LabelValue(r.Spec.InstanceName),
		}, nil
	}
	return metav1.OwnerReference{}, nil, fmt.Errorf("a request Secret belongs to an instance or a binding, not to %T", rec)
}

// ownedByRecord reports whether secret belongs to rec: an owner reference to a ConfigMap
// with rec's uid. A record is a ConfigMap anyone allowed to write ConfigMaps can forge;
// its uid cannot be forged.
func ownedByRecord(secret *corev1.Secret, rec v1alpha1.Record) bool {
	if rec.GetUID() == "" {
		return false
	}
	for _, ref := range secret.OwnerReferences {
		if ref.UID == rec.GetUID() && ref.Kind == "ConfigMap" {
			return true
		}
	}
	return false
}

// WriteRequestSecret creates the Secret name, owned by rec's ConfigMap and labelled
// LabelRequest, keeping data: what a call of rec is about to send that may be secret. rec
// must have been read from the store (it needs rec's uid). A Secret of that name that is
// not a request Secret rec owns is never touched (IsNotOwned).
func (s *Store) WriteRequestSecret(ctx context.Context, rec v1alpha1.Record, name string, data map[string][]byte) error {
	return s.writeRecordSecret(ctx, rec, name, data, true)
}

// WriteRecordSecret creates or replaces the Secret name, owned by rec's ConfigMap,
// keeping data (a user-provided instance's credentials). A Secret of that name that rec
// does not own is never touched (IsNotOwned). It is never read back as a call's
// parameters (ReadRequestSecret).
func (s *Store) WriteRecordSecret(ctx context.Context, rec v1alpha1.Record, name string, data map[string][]byte) error {
	return s.writeRecordSecret(ctx, rec, name, data, false)
}

func (s *Store) writeRecordSecret(ctx context.Context, rec v1alpha1.Record, name string, data map[string][]byte, request bool) error {
	if rec.GetUID() == "" {
		return fmt.Errorf("writing Secret %q of %q: the record has no uid; read it from the store first", name, rec.GetName())
	}
	owner, labels, err := recordOwnerReference(rec)
	if err != nil {
		return err
	}
	if request {
		labels[LabelRequest] = "true"
	}
	secrets := s.core.CoreV1().Secrets(rec.GetNamespace())
	_, err = secrets.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: rec.GetNamespace(), Labels: labels,
			OwnerReferences: []metav1.OwnerReference{owner},
		},
		Type: corev1.SecretTypeOpaque,
		Data: data,
	}, metav1.CreateOptions{})
	if err == nil {
		return nil
	}
	if !IsAlreadyExists(apiError("create", kindSecret, rec.GetNamespace(), name, err)) {
		return apiError("create", kindSecret, rec.GetNamespace(), name, err)
	}
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		existing, err := secrets.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if !ownedByRecord(existing, rec) || request != isRequestSecret(existing, rec) {
			return &Error{Reason: ReasonNotOwned, Op: "write", Kind: kindSecret, Namespace: rec.GetNamespace(), Name: name,
				Detail: fmt.Sprintf("record %q", rec.GetName())}
		}
		existing.Data, existing.StringData = data, nil
		_, err = secrets.Update(ctx, existing, metav1.UpdateOptions{})
		return err
	})
	return apiError("write", kindSecret, rec.GetNamespace(), name, err)
}

// ReadRequestSecret reads the Secret name that keeps what a call of rec sent, only if rec
// owns it and it is a request Secret (IsNotOwned otherwise): a forged record cannot make
// the engine send the data of a Secret it merely names, nor of another Secret the record
// owns (its binding's credentials, a user-provided instance's credentials).
func (s *Store) ReadRequestSecret(ctx context.Context, rec v1alpha1.Record, name string) (map[string][]byte, error) {
	secret, err := s.ReadOwnedSecret(ctx, rec, name)
	if err != nil {
		return nil, err
	}
	if !isRequestSecret(secret, rec) {
		return nil, &Error{Reason: ReasonNotOwned, Op: "read", Kind: kindSecret, Namespace: rec.GetNamespace(), Name: name,
			Detail: fmt.Sprintf("record %q (the Secret does not keep a call's parameters)", rec.GetName())}
	}
	return secret.Data, nil
}

// isRequestSecret reports whether secret is one WriteRequestSecret wrote for rec: owned
// by rec, named and labelled as a request Secret.
func isRequestSecret(secret *corev1.Secret, rec v1alpha1.Record) bool {
	return ownedByRecord(secret, rec) && strings.HasPrefix(secret.Name, RequestSecretPrefix) && secret.Labels[LabelRequest] == "true"
}

// ReadOwnedSecret reads the Secret name of rec's namespace only if rec owns it
// (IsNotOwned otherwise).
func (s *Store) ReadOwnedSecret(ctx context.Context, rec v1alpha1.Record, name string) (*corev1.Secret, error) {
	secret, err := s.GetSecret(ctx, rec.GetNamespace(), name)
	if err != nil {
		return nil, err
	}
	if !ownedByRecord(secret, rec) {
		return nil, &Error{Reason: ReasonNotOwned, Op: "read", Kind: kindSecret, Namespace: rec.GetNamespace(), Name: name,
			Detail: fmt.Sprintf("record %q", rec.GetName())}
	}
	return secret, nil
}

// DeleteRequestSecret deletes the Secret name if it is a request Secret rec owns. One
// already gone, or not such a Secret, is left as it is without error.
func (s *Store) DeleteRequestSecret(ctx context.Context, rec v1alpha1.Record, name string) error {
	return s.deleteRecordSecret(ctx, rec, name, true)
}

// DeleteRecordSecret deletes the Secret name if rec owns it and it is not a request
// Secret (one WriteRecordSecret wrote). One already gone, or not such a Secret, is left
// as it is without error.
func (s *Store) DeleteRecordSecret(ctx context.Context, rec v1alpha1.Record, name string) error {
	return s.deleteRecordSecret(ctx, rec, name, false)
}

func (s *Store) deleteRecordSecret(ctx context.Context, rec v1alpha1.Record, name string, request bool) error {
	secrets := s.core.CoreV1().Secrets(rec.GetNamespace())
	existing, err := secrets.Get(ctx, name, metav1.GetOptions{})
	if IsNotFound(apiError("get", kindSecret, rec.GetNamespace(), name, err)) {
		return nil
	}
	if err != nil {
		return apiError("get", kindSecret, rec.GetNamespace(), name, err)
	}
	if !ownedByRecord(existing, rec) || request != isRequestSecret(existing, rec) {
		return nil
	}
	err = secrets.Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &existing.UID}})
	if err != nil && !IsNotFound(apiError("delete", kindSecret, rec.GetNamespace(), name, err)) {
		return apiError("delete", kindSecret, rec.GetNamespace(), name, err)
	}
	return nil
}

// AdoptBindingSecret makes the existing Secret b.Spec.SecretName the credentials Secret of
// binding b without touching its data: it drops the owner references whose uid is in
// previousOwners (the object that wrote the Secret before, so the garbage collector does
// not delete the Secret with it), adds b's owner reference and the labels
// WriteBindingSecret gives. A Secret another controller owns (an owner reference marked
// controller that is neither b's nor a previous owner's) is refused (IsNotOwned). It
// returns the Secret as stored; a Secret already adopted is returned unchanged.
func (s *Store) AdoptBindingSecret(ctx context.Context, b *v1alpha1.ServiceBinding, previousOwners ...types.UID) (*corev1.Secret, error) {
	if b.UID == "" {
		return nil, fmt.Errorf("adopting the Secret of service binding %q: the binding has no uid; read it from the store first", b.Name)
	}
	name := b.Spec.SecretName
	secrets := s.core.CoreV1().Secrets(b.Namespace)
	var adopted *corev1.Secret
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		existing, err := secrets.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		refs := make([]metav1.OwnerReference, 0, len(existing.OwnerReferences)+1)
		for _, ref := range existing.OwnerReferences {
			switch {
			case slices.Contains(previousOwners, ref.UID), ref.UID == b.UID:
				continue
			case ref.Controller != nil && *ref.Controller:
				return &Error{Reason: ReasonNotOwned, Op: "adopt", Kind: kindSecret, Namespace: b.Namespace, Name: name,
					Detail: fmt.Sprintf("service binding %q (it is controlled by %s %q)", b.Name, ref.Kind, ref.Name)}
			}
			refs = append(refs, ref)
		}
		refs = append(refs, bindingOwnerReference(b))
		want := map[string]string{LabelManagedBy: ManagedBy, LabelBinding: LabelValue(b.Name), LabelInstance: LabelValue(b.Spec.InstanceName)}
		if OwnedBy(existing, b) && len(refs) == len(existing.OwnerReferences) && hasLabels(existing.Labels, want) {
			adopted = existing
			return nil
		}
		existing.OwnerReferences = refs
		if existing.Labels == nil {
			existing.Labels = map[string]string{}
		}
		maps.Copy(existing.Labels, want)
		adopted, err = secrets.Update(ctx, existing, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		var se *Error
		if errors.As(err, &se) {
			return nil, err
		}
		return nil, apiError("adopt", kindSecret, b.Namespace, name, err)
	}
	return adopted, nil
}

func hasLabels(have, want map[string]string) bool {
	for k, v := range want {
		if have[k] != v {
			return false
		}
	}
	return true
}
