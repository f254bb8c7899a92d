package store

import (
	"context"
	"errors"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
)

// IDUser is a record that uses an OSB id, as WithExternalID finds it.
type IDUser struct {
	Namespace, Name string
	UID             types.UID
	Created         metav1.Time
}

// WithExternalID lists the records of kind (v1alpha1.KindServiceInstance or
// KindServiceBinding) in namespace (all namespaces when "") that use OSB id id or may
// hold it at the broker (IDLabel). It reads metadata only.
func (s *Store) WithExternalID(ctx context.Context, kind, namespace, id string) ([]IDUser, error) {
	if s.meta == nil {
		return nil, errors.New("store: WithExternalID needs a metadata client (store.New got nil)")
	}
	sel := labels.Set{LabelKind: kind, IDLabel(id): "true"}.AsSelector().String()
	list, err := s.meta.Resource(configMapsResource()).Namespace(namespace).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return nil, apiError("list", kind, namespace, "", err)
	}
	users := make([]IDUser, 0, len(list.Items))
	for i := range list.Items {
		m := &list.Items[i].ObjectMeta
		name, ok := strings.CutPrefix(m.Name, configMapPrefix(kind))
		if !ok {
			continue
		}
		users = append(users, IDUser{Namespace: m.Namespace, Name: name, UID: m.UID, Created: m.CreationTimestamp})
	}
	return users, nil
}
