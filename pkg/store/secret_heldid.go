package store

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
)

// AnnotationBindingID, on a binding's credentials Secret, is the OSB binding id whose
// bind answered the credentials it holds: the bind in flight on the binding when the
// Secret was written. A bind whose answer reached the Secret and whose outcome could not
// be recorded is then known to have been answered (the Secret holds its credentials), and
// its id is not unbound by orphan mitigation while the Secret holds them. The Secret
// lives in the binding's namespace: whoever may write it may write the annotation too,
// which only keeps that binding's own id named in its record (see docs/security.md).
const AnnotationBindingID = Prefix + "binding-id"

// markHeldID sets on m the binding id whose credentials b's Secret gets now: the id of
// b's bind in flight, none (the annotation removed) for any other write.
func markHeldID(m *metav1.ObjectMeta, b *v1alpha1.ServiceBinding) {
	id := ""
	if op := b.Status.InFlight; op != nil && op.Type == v1alpha1.OperationBind {
		id = op.BindingID
	}
	if id == "" {
		delete(m.Annotations, AnnotationBindingID)
		return
	}
	if m.Annotations == nil {
		m.Annotations = map[string]string{}
	}
	m.Annotations[AnnotationBindingID] = id
}

// HeldBindingID is the binding id whose bind answered the credentials in s, b's Secret
// (AnnotationBindingID); "" when s is not b's or names none.
func HeldBindingID(s *corev1.Secret, b *v1alpha1.ServiceBinding) string {
	if s == nil || !OwnedBy(s, b) {
		return ""
	}
	return s.Annotations[AnnotationBindingID]
}
