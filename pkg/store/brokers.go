package store

import (
	"context"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
)

// A namespace-scoped broker is needed until its last instance is deprovisioned, and
// deleting its namespace deletes every ConfigMap and Secret there in no particular
// order. So its record carries Finalizer (HoldsInstances) and its credentials Secret
// BrokerSecretFinalizer, both removed together by ReleaseBroker once no instance of the
// broker is left (reconcile checks, or "deregister" does, with --force regardless).

// brokerSecretName is the credentials Secret broker b names in its own namespace; ""
// when it names none, or one elsewhere (which the engine refuses to read anyway).
func brokerSecretName(b *v1alpha1.Broker) string {
	a := b.Spec.Auth
	if a == nil || (a.SecretRef.Namespace != "" && a.SecretRef.Namespace != b.Namespace) {
		return ""
	}
	return a.SecretRef.Name
}

// ProtectBrokerSecret adds BrokerSecretFinalizer to the credentials Secret of broker b,
// when b holds its instances (HoldsInstances). A Secret that is missing, already
// protected or being deleted is left as it is, without error.
func (s *Store) ProtectBrokerSecret(ctx context.Context, b *v1alpha1.Broker) error {
	name := brokerSecretName(b)
	if name == "" || !HoldsInstances(b) {
		return nil
	}
	secrets := s.core.CoreV1().Secrets(b.Namespace)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := secrets.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if cur.DeletionTimestamp != nil || slices.Contains(cur.Finalizers, BrokerSecretFinalizer) {
			return nil
		}
		cur.Finalizers = append(cur.Finalizers, BrokerSecretFinalizer)
		_, err = secrets.Update(ctx, cur, metav1.UpdateOptions{})
		return err
	})
	if err = apiError("update", kindSecret, b.Namespace, name, err); IsNotFound(err) {
		return nil
	}
	return err
}

// ReleaseBroker removes Finalizer from broker b and BrokerSecretFinalizer from its
// credentials Secret, unless another broker of the namespace that holds its instances
// names that Secret too. The Secret goes first: a broker released is never left
// holding a Secret. The caller decides that no instance of b is left (or that they are
// to be left behind). A record already gone is no error.
func (s *Store) ReleaseBroker(ctx context.Context, b *v1alpha1.Broker) error {
	if name := brokerSecretName(b); name != "" {
		others, err := s.Brokers().List(ctx, b.Namespace, Filter{})
		if err != nil {
			return err
		}
		shared := slices.ContainsFunc(others, func(o *v1alpha1.Broker) bool {
			return o.UID != b.UID && HoldsInstances(o) && slices.Contains(o.Finalizers, Finalizer) && brokerSecretName(o) == name
		})
		if !shared {
			if err := RemoveSecretFinalizer(ctx, s.core, b.Namespace, name, ""); err != nil {
				return err
			}
		}
	}
	if !slices.Contains(b.Finalizers, Finalizer) {
		return nil
	}
	if _, err := s.Brokers().RemoveFinalizer(ctx, b); err != nil && !IsNotFound(err) {
		return err
	}
	return nil
}

// RemoveSecretFinalizer removes BrokerSecretFinalizer from the Secret namespace/name
// (only if its uid is uid, when uid is set). A Secret that is gone or does not carry the
// finalizer is left as it is, without error.
func RemoveSecretFinalizer(ctx context.Context, core kubernetes.Interface, namespace, name string, uid types.UID) error {
	secrets := core.CoreV1().Secrets(namespace)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := secrets.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if (uid != "" && cur.UID != uid) || !slices.Contains(cur.Finalizers, BrokerSecretFinalizer) {
			return nil
		}
		cur.Finalizers = slices.DeleteFunc(cur.Finalizers, func(f string) bool { return f == BrokerSecretFinalizer })
		_, err = secrets.Update(ctx, cur, metav1.UpdateOptions{})
		return err
	})
	if err = apiError("update", kindSecret, namespace, name, err); IsNotFound(err) {
		return nil
	}
	return err
}

// ProtectsBrokerSecret reports whether secret carries BrokerSecretFinalizer.
func ProtectsBrokerSecret(secret *corev1.Secret) bool {
	return slices.Contains(secret.Finalizers, BrokerSecretFinalizer)
}
