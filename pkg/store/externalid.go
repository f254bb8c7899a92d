package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
)

// IDUser is a record that uses an OSB id, as WithExternalID finds it.
type IDUser struct {
	Namespace, Name string
	UID             types.UID
	Created         metav1.Time
	// Adopted is when the record adopted the id: the creationTimestamp of its id claim
	// (IDClaimName), zero when it has none. Only an id bound to nothing needs one.
	Adopted metav1.Time
	// AdoptedVersion is the resourceVersion of the id claim: of two claims made in the
	// same second, the API server gave the one made first the lower (an etcd revision).
	AdoptedVersion string
}

// idClaim is an id claim as a list finds it.
type idClaim struct {
	made    metav1.Time
	version string
}

// WithExternalID lists the records of kind (v1alpha1.KindServiceInstance or
// KindServiceBinding) in namespace (all namespaces when "") that use OSB id id or may
// hold it at the broker (IDLabel), each with the time its id claim was made, if it has
// one. Records and claims come from one list of metadata.
func (s *Store) WithExternalID(ctx context.Context, kind, namespace, id string) ([]IDUser, error) {
	if s.meta == nil {
		return nil, errors.New("store: WithExternalID needs a metadata client (store.New got nil)")
	}
	kinds, err := labels.NewRequirement(LabelKind, selection.In, []string{kind, idClaimKind(kind)})
	if err != nil {
		return nil, err
	}
	idReq, err := labels.NewRequirement(IDLabel(id), selection.Equals, []string{"true"})
	if err != nil {
		return nil, err
	}
	sel := labels.NewSelector().Add(*kinds, *idReq).String()
	list, err := s.meta.Resource(configMapsResource()).Namespace(namespace).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return nil, apiError("list", kind, namespace, "", err)
	}
	users := make([]IDUser, 0, len(list.Items))
	claims := map[types.NamespacedName]idClaim{}
	for i := range list.Items {
		m := &list.Items[i].ObjectMeta
		if strings.HasPrefix(m.Name, idClaimPrefix) {
			claims[types.NamespacedName{Namespace: m.Namespace, Name: m.Name}] = idClaim{m.CreationTimestamp, m.ResourceVersion}
			continue
		}
		name, ok := strings.CutPrefix(m.Name, configMapPrefix(kind))
		if !ok {
			continue
		}
		users = append(users, IDUser{Namespace: m.Namespace, Name: name, UID: m.UID, Created: m.CreationTimestamp})
	}
	// A claim counts for the record its name says (by uid, kind and id), in the record's
	// namespace; its labels are free to write and say nothing.
	for i := range users {
		c := claims[types.NamespacedName{Namespace: users[i].Namespace, Name: IDClaimName(kind, users[i].UID, id)}]
		users[i].Adopted, users[i].AdoptedVersion = c.made, c.version
	}
	return users, nil
}

// An id claim is a ConfigMap that says since when a record uses an OSB id bound to
// nothing (one a spec names: --external-id, a migrated svcat record, a record of an
// earlier release). Its name holds the record's uid and a digest of the kind and the
// id, and the API server sets its creationTimestamp: neither can be changed, so unlike
// a spec (free to rewrite, on a record of any age) it tells who adopted the id first.
// It is owned by the record's ConfigMap, so that it goes with the record.
const idClaimPrefix = "catalog-idclaim-"

// idClaimKind is the LabelKind value of the id claims of records of kind.
func idClaimKind(kind string) string { return kind + "IDClaim" }

// IDClaimName is the name of the id claim of the record of kind with uid uid for OSB id
// id, in the record's namespace.
func IDClaimName(kind string, uid types.UID, id string) string {
	sum := sha256.Sum256([]byte(kind + "\x00" + id))
	return idClaimPrefix + string(uid) + "-" + hex.EncodeToString(sum[:8])
}

// ClaimExternalID makes the id claim of rec (an instance or a binding of kind, as
// stored: with its uid) for OSB id id, and returns the time it was made, now or before (a
// claim of that name can only be rec's), and its resourceVersion.
func (s *Store) ClaimExternalID(ctx context.Context, kind string, rec v1alpha1.Record, id string) (metav1.Time, string, error) {
	if rec.GetUID() == "" {
		return metav1.Time{}, "", errors.New("store: an id claim needs a stored record (with a uid)")
	}
	ref, _, err := recordOwnerReference(rec)
	if err != nil {
		return metav1.Time{}, "", err
	}
	name := IDClaimName(kind, rec.GetUID(), id)
	cms := s.core.CoreV1().ConfigMaps(rec.GetNamespace())
	cm, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Namespace: rec.GetNamespace(), Name: name, OwnerReferences: []metav1.OwnerReference{ref},
		Labels: map[string]string{LabelKind: idClaimKind(kind), IDLabel(id): "true", LabelManagedBy: ManagedBy},
	}}, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		cm, err = cms.Get(ctx, name, metav1.GetOptions{})
	}
	if err != nil {
		return metav1.Time{}, "", apiError("create", kind, rec.GetNamespace(), rec.GetName(), err)
	}
	return cm.CreationTimestamp, cm.ResourceVersion, nil
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
