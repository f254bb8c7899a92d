package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

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
	// Migrated: the record is one "migrate svcat" wrote (AnnotationMigratedFrom), being
	// deleted or not.
	Migrated bool
}

// idClaim is an id claim as a list finds it.
type idClaim struct {
	made    metav1.Time
	version string
	// held: it carries IDClaimFinalizer.
	held bool
	// kind is the kind of the record it serves; owner and ownerName, the record its
	// name says (by uid) and its owner reference to that uid names, if any.
	kind      string
	owner     types.UID
	ownerName string
}

// idClaimOf is the id claim of metadata m, if m is one.
func idClaimOf(m *metav1.ObjectMeta) (idClaim, bool) {
	rest, ok := strings.CutPrefix(m.Name, idClaimPrefix)
	if !ok {
		return idClaim{}, false
	}
	c := idClaim{made: m.CreationTimestamp, version: claimVersion(m), held: slices.Contains(m.Finalizers, IDClaimFinalizer)}
	c.kind, _ = strings.CutSuffix(m.Labels[LabelKind], "IDClaim")
	// The name is the record's uid, "-" and 16 hex digits.
	if i := strings.LastIndexByte(rest, '-'); i > 0 {
		c.owner = types.UID(rest[:i])
	}
	for _, ref := range m.OwnerReferences {
		if ref.UID == c.owner && ref.Kind == "ConfigMap" && configMapPrefix(c.kind) != "" && strings.HasPrefix(ref.Name, configMapPrefix(c.kind)) {
			c.ownerName = ref.Name
		}
	}
	return c, true
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
		if c, ok := idClaimOf(m); ok {
			claims[types.NamespacedName{Namespace: m.Namespace, Name: m.Name}] = c
			continue
		}
		name, ok := strings.CutPrefix(m.Name, configMapPrefix(kind))
		if !ok {
			continue
		}
		users = append(users, IDUser{Namespace: m.Namespace, Name: name, UID: m.UID, Created: m.CreationTimestamp,
			Migrated: m.Annotations[AnnotationMigratedFrom] != ""})
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
// It is owned by the record's ConfigMap, so that it goes with the record, and holds
// IDClaimFinalizer until the record is released: the deletion of its namespace, or a
// foreground deletion of the record, deletes the claim while the record still waits
// for its deprovision or unbind under the id, and a claim made again then (if it can
// be: not in a namespace being deleted) is younger than any other record's.
const idClaimPrefix = "catalog-idclaim-"

// IDClaimFinalizer keeps an id claim while the record it serves may still call its
// broker under the id: the engine removes it when it releases the record
// (Records.RemoveFinalizer), and reconcile from a claim whose record is gone
// (ReleaseStrayIDClaim).
const IDClaimFinalizer = Prefix + "id-claim"

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
	return s.claimExternalID(ctx, kind, rec.GetNamespace(), rec.GetName(), ref, id)
}

// ClaimExternalIDOf is ClaimExternalID for the record u, as WithExternalID found it (by
// its metadata): the claim of a record that has none yet, made for it before another
// record's (see authority.checkAdoptedID).
func (s *Store) ClaimExternalIDOf(ctx context.Context, kind string, u IDUser, id string) (metav1.Time, string, error) {
	if u.UID == "" || (kind != v1alpha1.KindServiceInstance && kind != v1alpha1.KindServiceBinding) {
		return metav1.Time{}, "", errors.New("store: an id claim needs a stored instance or binding (with a uid)")
	}
	ref := metav1.OwnerReference{
		APIVersion: "v1", Kind: "ConfigMap", Name: ConfigMapName(kind, u.Name), UID: u.UID,
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(false),
	}
	return s.claimExternalID(ctx, kind, u.Namespace, u.Name, ref, id)
}

func (s *Store) claimExternalID(ctx context.Context, kind, namespace, name string, ref metav1.OwnerReference, id string) (metav1.Time, string, error) {
	claim := IDClaimName(kind, ref.UID, id)
	cms := s.core.CoreV1().ConfigMaps(namespace)
	cm, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Namespace: namespace, Name: claim, OwnerReferences: []metav1.OwnerReference{ref},
		Labels:     map[string]string{LabelKind: idClaimKind(kind), IDLabel(id): "true", LabelManagedBy: ManagedBy},
		Finalizers: []string{IDClaimFinalizer},
	}}, metav1.CreateOptions{})
	switch {
	case err == nil:
		// Its resourceVersion, kept where the writes a claim goes through (its
		// deletion begun, its release) leave it: of two claims of the same second, the
		// one made first, whatever happened to it since.
		made := cm.DeepCopy()
		made.Annotations = map[string]string{AnnotationIDClaimVersion: cm.ResourceVersion}
		if out, uerr := cms.Update(ctx, made, metav1.UpdateOptions{}); uerr == nil {
			cm = out
		}
	case apierrors.IsAlreadyExists(err):
		cm, err = cms.Get(ctx, claim, metav1.GetOptions{})
		if err == nil && cm.DeletionTimestamp == nil && !slices.Contains(cm.Finalizers, IDClaimFinalizer) {
			// A claim of an earlier release holds the finalizer from now on. Its
			// creationTimestamp stays, and the resourceVersion it had; a write refused
			// leaves it to the next claim.
			held := cm.DeepCopy()
			held.Finalizers = append(held.Finalizers, IDClaimFinalizer)
			if held.Annotations[AnnotationIDClaimVersion] == "" {
				if held.Annotations == nil {
					held.Annotations = map[string]string{}
				}
				held.Annotations[AnnotationIDClaimVersion] = cm.ResourceVersion
			}
			if out, uerr := cms.Update(ctx, held, metav1.UpdateOptions{}); uerr == nil {
				cm = out
			}
		}
	}
	if err != nil {
		return metav1.Time{}, "", apiError("create", kind, namespace, name, err)
	}
	return cm.CreationTimestamp, claimVersion(&cm.ObjectMeta), nil
}

// AnnotationIDClaimVersion, on an id claim, is the resourceVersion the API server gave
// it when it was made: the writes it goes through since (its finalizer added, its
// deletion begun) change its resourceVersion, not the order of its making. Like the
// claim, it is written by whoever may write ConfigMaps of the record's namespace; one
// that is not a number, or not below the claim's resourceVersion, is not read.
const AnnotationIDClaimVersion = Prefix + "id-claim-version"

// claimVersion is the resourceVersion an id claim was made with: AnnotationIDClaimVersion
// when it is a number no greater than its resourceVersion, else its resourceVersion.
func claimVersion(m *metav1.ObjectMeta) string {
	made, cur := m.Annotations[AnnotationIDClaimVersion], m.ResourceVersion
	mv, errM := strconv.ParseUint(made, 10, 64)
	cv, errC := strconv.ParseUint(cur, 10, 64)
	if errM != nil || errC != nil || mv > cv {
		return cur
	}
	return made
}

// releaseIDClaims removes IDClaimFinalizer from the id claims of rec (of kind) for the
// OSB ids its spec names, and deletes them: the record is released, and no call of its
// goes to the broker any more. A claim that cannot be released now (or one for an id
// the spec no longer names) is released by reconcile (ReleaseStrayIDClaim).
func (s *Store) releaseIDClaims(ctx context.Context, kind string, rec v1alpha1.Record) error {
	if rec.GetUID() == "" || IsDryRun(ctx) {
		return nil
	}
	cms := s.core.CoreV1().ConfigMaps(rec.GetNamespace())
	var errs []error
	for _, id := range specIDs(rec) {
		if id == "" || v1alpha1.IsBoundID(id) {
			continue
		}
		claim, err := cms.Get(ctx, IDClaimName(kind, rec.GetUID(), id), metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			errs = append(errs, apiError("get", kind, rec.GetNamespace(), rec.GetName(), err))
			continue
		}
		errs = append(errs, s.releaseIDClaim(ctx, claim))
	}
	return errors.Join(errs...)
}

// specIDs is the OSB ids rec's spec names: an instance's id, a binding's id and the id
// of the binding it rotates.
func specIDs(rec v1alpha1.Record) []string {
	switch r := rec.(type) {
	case *v1alpha1.ServiceInstance:
		return []string{r.Spec.ExternalID}
	case *v1alpha1.ServiceBinding:
		ids := []string{r.Spec.ExternalID}
		if p := r.Spec.Predecessor; p != nil {
			ids = append(ids, p.ExternalID)
		}
		return ids
	}
	return nil
}

// releaseIDClaim removes IDClaimFinalizer from claim and deletes it (the same one, by
// uid).
func (s *Store) releaseIDClaim(ctx context.Context, claim *corev1.ConfigMap) error {
	cms := s.core.CoreV1().ConfigMaps(claim.Namespace)
	for attempt := 0; slices.Contains(claim.Finalizers, IDClaimFinalizer); attempt++ {
		c := claim.DeepCopy()
		c.Finalizers = slices.DeleteFunc(c.Finalizers, func(f string) bool { return f == IDClaimFinalizer })
		out, err := cms.Update(ctx, c, metav1.UpdateOptions{})
		if err == nil {
			claim = out
			break
		}
		if apierrors.IsNotFound(err) {
			return nil
		}
		if !apierrors.IsConflict(err) || attempt >= 3 {
			return apiError("update", "", claim.Namespace, claim.Name, err)
		}
		cur, gerr := cms.Get(ctx, claim.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(gerr) {
			return nil
		}
		if gerr != nil {
			return apiError("get", "", claim.Namespace, claim.Name, gerr)
		}
		if cur.UID != claim.UID {
			return nil
		}
		claim = cur
	}
	if claim.DeletionTimestamp != nil {
		return nil // the finalizer was the last: it is gone
	}
	err := cms.Delete(ctx, claim.Name, metav1.DeleteOptions{Preconditions: metav1.NewUIDPreconditions(string(claim.UID))})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return apiError("delete", "", claim.Namespace, claim.Name, err)
	}
	return nil
}

// StrayIDClaim is an id claim whose record reconcile's list did not hold (IDIndex.Stray).
type StrayIDClaim struct {
	// Kind is the kind of the record the claim serves.
	Kind            string
	Namespace, Name string
	// Owner names the record the claim serves, by the claim's owner reference.
	OwnerName string
	OwnerUID  types.UID
}

// ReleaseStrayIDClaim releases c (removes IDClaimFinalizer and deletes it) when the
// record it serves is gone: no record ConfigMap of its owner's name, or one with
// another uid. It reports whether it released it.
func (s *Store) ReleaseStrayIDClaim(ctx context.Context, c StrayIDClaim) (bool, error) {
	if c.OwnerName == "" || c.OwnerUID == "" {
		return false, nil // not a claim the engine made
	}
	owner, err := s.core.CoreV1().ConfigMaps(c.Namespace).Get(ctx, c.OwnerName, metav1.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return false, apiError("get", c.Kind, c.Namespace, c.OwnerName, err)
	}
	if err == nil && owner.UID == c.OwnerUID {
		return false, nil
	}
	claim, err := s.core.CoreV1().ConfigMaps(c.Namespace).Get(ctx, c.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, apiError("get", "", c.Namespace, c.Name, err)
	}
	if !strings.HasPrefix(claim.Name, idClaimPrefix+string(c.OwnerUID)+"-") {
		return false, nil
	}
	return true, s.releaseIDClaim(ctx, claim)
}

// HoldsExternalID reports whether u, found by WithExternalID for kind and id, is a record
// that uses id: its ConfigMap (the same one, by uid) still exists, holds a readable
// record, and that record names id and owns it (OwnsExternalID). An id label alone
// proves nothing, nor does a status: anyone who may write a ConfigMap can put a label on
// an empty one, or an id into a status, and must not thereby keep the record that
// really uses the id from its calls. An error is returned when the ConfigMap cannot
// be read (other than not found).
func (s *Store) HoldsExternalID(ctx context.Context, kind string, u IDUser, id string) (bool, error) {
	return s.HoldsExternalIDIn(ctx, kind, u, id, v1alpha1.NamespaceKey{})
}

// HoldsExternalIDIn is HoldsExternalID, an id bound to key (the key of u's namespace)
// also owned by the record (OwnsExternalIDIn).
func (s *Store) HoldsExternalIDIn(ctx context.Context, kind string, u IDUser, id string, key v1alpha1.NamespaceKey) (bool, error) {
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
		return slices.Contains(instanceKind().ids(rec), id) && rec.OwnsExternalIDIn(id, key), nil
	case v1alpha1.KindServiceBinding:
		rec, err := decode(bindingKind(), cm)
		if err != nil {
			return false, nil
		}
		return slices.Contains(bindingKind().ids(rec), id) && rec.OwnsExternalIDIn(id, key), nil
	}
	return false, nil
}

// SpecIDUse is a record whose spec names an OSB id bound to nothing that it owns: the
// id needs the record's id claim.
type SpecIDUse struct {
	Kind string
	IDUser
	ID string
}

// SpecIDsOf reads the record of kind namespace/name (the one with uid uid) and returns
// a SpecIDUse for each OSB id bound to nothing (v1alpha1.IsBoundID false) that its spec
// names and it owns; none for a record that is gone, replaced or does not decode (it
// makes no call).
func (s *Store) SpecIDsOf(ctx context.Context, kind, namespace, name string, uid types.UID) ([]SpecIDUse, error) {
	cm, err := s.core.CoreV1().ConfigMaps(namespace).Get(ctx, ConfigMapName(kind, name), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, apiError("get", kind, namespace, name, err)
	}
	if cm.UID != uid {
		return nil, nil
	}
	return specIDsIn(kind, cm), nil
}

// specIDsIn is SpecIDsOf of the record cm holds, of kind.
func specIDsIn(kind string, cm *corev1.ConfigMap) []SpecIDUse {
	namespace, name, uid := cm.Namespace, strings.TrimPrefix(cm.Name, configMapPrefix(kind)), cm.UID
	var rec interface {
		v1alpha1.Record
		OwnsExternalID(string) bool
	}
	switch kind {
	case v1alpha1.KindServiceInstance:
		r, err := decode(instanceKind(), cm)
		if err != nil {
			return nil
		}
		rec = r
	case v1alpha1.KindServiceBinding:
		r, err := decode(bindingKind(), cm)
		if err != nil {
			return nil
		}
		rec = r
	default:
		return nil
	}
	var out []SpecIDUse
	for _, id := range specIDs(rec) {
		if id == "" || v1alpha1.IsBoundID(id) || !rec.OwnsExternalID(id) {
			continue
		}
		out = append(out, SpecIDUse{Kind: kind, ID: id, IDUser: IDUser{
			Namespace: namespace, Name: name, UID: uid, Created: cm.CreationTimestamp,
		}})
	}
	return out
}

// IDClaimsMarker is the ConfigMap, in the catalog namespace, that says every record of
// the cluster whose spec names an OSB id bound to nothing got its id claim
// (authority.ClaimSpecIDs): records written since get theirs when they are created, or
// before their first call.
const IDClaimsMarker = "catalog-idclaims"

// IDClaimsSwept reports whether catalogNamespace holds IDClaimsMarker.
func (s *Store) IDClaimsSwept(ctx context.Context, catalogNamespace string) (bool, error) {
	_, err := s.core.CoreV1().ConfigMaps(catalogNamespace).Get(ctx, IDClaimsMarker, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	return err == nil, err
}

// MarkIDClaimsSwept creates IDClaimsMarker in catalogNamespace.
func (s *Store) MarkIDClaimsSwept(ctx context.Context, catalogNamespace string) error {
	_, err := s.core.CoreV1().ConfigMaps(catalogNamespace).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Namespace: catalogNamespace, Name: IDClaimsMarker, Labels: map[string]string{LabelManagedBy: ManagedBy},
	}}, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}
