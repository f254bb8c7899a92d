package store

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// GetNamespace reads a Namespace object (to check that one exists before naming it in
// a record), with the API server's errors as they are.
func (s *Store) GetNamespace(ctx context.Context, name string) (*corev1.Namespace, error) {
	return s.core.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
}
