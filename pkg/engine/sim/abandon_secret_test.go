package sim

import (
	"context"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
)

// An "unbind --abandon" (or "deprovision --abandon", for the bindings of the instance)
// deletes a binding's Secret, then its record (AbandonBinding): one interrupted between
// the two leaves a binding that is not being deleted and has no Secret, as its user
// asked (running the abandon again finishes it). Its credentials are gone from the
// workloads by the user's hand, whatever the engine unbinds next, so the checks that the
// binding's Secret holds its credentials leave such a missing Secret out.

// noteSecretDeleted notes a Secret an --abandon deleted (on the cluster the checks
// read, not the move world's new one): err is the delete's.
func (w *world) noteSecretDeleted(p *proc, ns, name string, err error) {
	if err != nil || !strings.Contains(p.task, "--abandon") || p.onNew() {
		return
	}
	if w.abandonedSecrets == nil {
		w.abandonedSecrets = map[string]bool{}
	}
	w.abandonedSecrets[ns+"/"+name] = true
}

// secretAbandoned reports a binding whose Secret an --abandon deleted and that is not
// there again.
func (w *world) secretAbandoned(b *v1alpha1.ServiceBinding) bool {
	if !w.abandonedSecrets[b.Namespace+"/"+b.Spec.SecretName] {
		return false
	}
	_, err := w.cluster.Core.CoreV1().Secrets(b.Namespace).Get(context.Background(), b.Spec.SecretName, metav1.GetOptions{})
	return apierrors.IsNotFound(err)
}

// unbindWaitsForAbandonedInstance reports a binding whose instance's record an
// --abandon dropped (instanceAbandoned) with an unbind left to do that no bind in flight
// or orphan mitigation is: its deletion, or an id a rotation retired. The DELETE needs
// the instance, so the engine retries with backoff, its condition naming "unbind
// --abandon": it waits for a person, as the bind in flight and the orphan mitigation
// of such a binding do.
func (w *world) unbindWaitsForAbandonedInstance(b *v1alpha1.ServiceBinding) bool {
	r := b.Status.Retry
	return r != nil && (b.DeletionTimestamp != nil || len(b.Status.Retired) > 0) &&
		strings.Contains(r.LastError, "is gone, so the broker cannot be asked") && strings.Contains(r.LastError, "--abandon")
}
