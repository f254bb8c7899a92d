package store

import (
	"context"
	"errors"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
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

// HoldsExternalID reports whether u, found by WithExternalID for kind and id, is a record
// that uses id: its ConfigMap (the same one, by uid) still exists, holds a readable
// record, and that record names id and owns it (OwnsExternalID). An id label alone
// proves nothing, nor does a status: anyone who may write a ConfigMap can put a label on
// an empty one, or an id into a status, and must not thereby keep the record that
// really uses the id from its calls. An error is returned when the ConfigMap cannot
// be read (other than not found).
func (s *Store) HoldsExternalID(ctx context.Context, kind string, u IDUser, id string) (bool, error) {
	cm, err := s.core.CoreV1().ConfigMaps(u.Namespace).Get(ctx, ConfigMapName(kind, u.Name), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, apiError("get", kind, u.Namespace, u.Name, err)
	}
	if u.UID != "" && cm.UID != u.UID {
		return false, nil // replaced since: the new one is younger than what was listed
	}
	switch kind {
	case v1alpha1.KindServiceInstance:
		rec, err := decode(instanceKind(), cm)
		if err != nil {
			return false, nil
		}
		return slices.Contains(instanceKind().ids(rec), id) && rec.OwnsExternalID(id), nil
	case v1alpha1.KindServiceBinding:
		rec, err := decode(bindingKind(), cm)
		if err != nil {
			return false, nil
		}
		return slices.Contains(bindingKind().ids(rec), id) && rec.OwnsExternalID(id), nil
	}
	return false, nil
}
