package v1alpha1

import (
	"crypto/sha256"
	"io"
	"slices"
	"strings"

	"github.com/google/uuid"
	"k8s.io/apimachinery/pkg/types"
)

// OSB ids that kubectl catalog generates are bound to what owns them, and say so
// themselves: a UUID of version 8 (RFC 9562, custom) whose first half is random and
// whose second half is a digest of that random half and the owner. The owner is the
// record's namespace for an id generated before the record exists (the spec's id of a
// new instance or binding), or the record's uid, which the API server assigns, for an
// id the engine generates later (after orphan mitigation, for a rotation). A record's
// status is free to write for anyone who may update its ConfigMap, and an id in it
// proves nothing; an id bound to a record or namespace can be used by that record or
// namespace only, whoever writes it where. Finding another owner's id that passes as
// one's own takes a second preimage of 62 bits of SHA-256 under a uid or namespace
// one cannot choose.

const (
	boundIDVersion = 8
	boundIDDomain  = "kubectl-catalog OSB id\x00"
)

// NamespaceKey is one namespace of one cluster: the cluster's id (the one sent as
// context.clusterid) and the namespace's uid, which the API server assigns. An id bound
// to a NamespaceKey cannot be made for a namespace one does not know, stays with the
// namespace it was made for (a namespace deleted and created again under the same name
// has another uid), and is no id of a namespace of the same name in another cluster
// that shares the broker.
type NamespaceKey struct {
	ClusterID string
	UID       types.UID
	// Moved are the keys of the namespaces of other clusters this namespace continues,
	// as its Namespace object's AnnotationMovedKeys lists them (MovedKeysAnnotation):
	// only ids of these may be moved in to it (MovedIDIn). It takes no part in the ids
	// the key binds.
	Moved string
}

// Valid reports whether k names a namespace: its uid is known. An id made where the
// cluster id could not be read (a cluster set up without "kubectl catalog init", read
// by a user who may not create it) is bound to the uid alone, which the API server
// chose at random for that namespace.
func (k NamespaceKey) Valid() bool { return k.UID != "" }

func (k NamespaceKey) owner() string { return k.ClusterID + "\x00" + string(k.UID) }

// scopeNamespaceKey is the scope of ids bound to a NamespaceKey.
const scopeNamespaceKey = "namespace-key"

// NewKeyedNamespaceBoundIDFrom is a fresh OSB id that only records of the namespace key
// names may use, its random half read from r (nil: uuid's source). For a key that is
// not Valid it is an id bound to the namespace's name ns (NewNamespaceBoundIDFrom), as
// ids were before.
func NewKeyedNamespaceBoundIDFrom(r io.Reader, ns string, key NamespaceKey) string {
	if !key.Valid() {
		return NewNamespaceBoundIDFrom(r, ns)
	}
	return newBoundID(r, scopeNamespaceKey, key.owner())
}

// IDBoundToNamespace reports whether id is an id bound to the namespace key names, or
// to its uid alone (a key that is not Valid matches no id).
func IDBoundToNamespace(id string, key NamespaceKey) bool {
	if !key.Valid() || !IsBoundID(id) {
		return false
	}
	u := uuid.MustParse(id)
	match := func(k NamespaceKey) bool {
		return string(boundIDTag(scopeNamespaceKey, k.owner(), u[:8])) == string(u[8:])
	}
	return match(key) || key.ClusterID != "" && match(NamespaceKey{UID: key.UID})
}

// NewNamespaceBoundID is a fresh OSB id that only records of namespace ns may use,
// bound to its name: the form of earlier releases, which anyone can make for any name.
// New records get ids bound to their namespace's key (NewKeyedNamespaceBoundIDFrom).
func NewNamespaceBoundID(ns string) string { return NewNamespaceBoundIDFrom(nil, ns) }

// NewRecordBoundID is a fresh OSB id that only the record with uid uid may use.
func NewRecordBoundID(uid types.UID) string { return NewRecordBoundIDFrom(nil, uid) }

// NewNamespaceBoundIDFrom is NewNamespaceBoundID with its random half read from r (nil:
// uuid's source), as a deterministic test sets it.
func NewNamespaceBoundIDFrom(r io.Reader, ns string) string { return newBoundID(r, "namespace", ns) }

// NewRecordBoundIDFrom is NewRecordBoundID with its random half read from r (nil: uuid's
// source).
func NewRecordBoundIDFrom(r io.Reader, uid types.UID) string {
	return newBoundID(r, "uid", string(uid))
}

func newBoundID(r io.Reader, scope, owner string) string {
	u := uuid.New()
	if r != nil {
		u = uuid.Must(uuid.NewRandomFromReader(r))
	}
	u[6] = u[6]&0x0f | boundIDVersion<<4
	copy(u[8:], boundIDTag(scope, owner, u[:8]))
	return u.String()
}

func boundIDTag(scope, owner string, random []byte) []byte {
	h := sha256.New()
	h.Write([]byte(boundIDDomain + scope + "\x00" + owner + "\x00"))
	h.Write(random)
	tag := h.Sum(nil)[:8]
	tag[0] = tag[0]&0x3f | 0x80 // the RFC 9562 variant
	return tag
}

// IsBoundID reports whether id has the form of an id kubectl catalog binds to an owner
// (whoever that is).
func IsBoundID(id string) bool {
	u, err := uuid.Parse(id)
	return err == nil && u.String() == id && u.Version() == boundIDVersion && u.Variant() == uuid.RFC4122
}

// IDBoundTo reports whether id is an id bound to namespace ns or to the record with uid
// uid (an empty uid matches no id).
func IDBoundTo(id, ns string, uid types.UID) bool {
	if !IsBoundID(id) {
		return false
	}
	u := uuid.MustParse(id)
	match := func(scope, owner string) bool {
		return string(boundIDTag(scope, owner, u[:8])) == string(u[8:])
	}
	return (ns != "" && match("namespace", ns)) || (uid != "" && match("uid", string(uid)))
}

// ownsID is the rule of OwnsExternalID: a bound id belongs to its owner only, whoever
// names it; any other id (one given with --external-id, taken over from another
// platform, or generated by a release before ids were bound) belongs to the record
// whose spec names it.
func ownsID(id, ns string, uid types.UID, named ...string) bool {
	if id == "" {
		return false
	}
	if IsBoundID(id) {
		return IDBoundTo(id, ns, uid)
	}
	return slices.Contains(named, id)
}

// OwnsExternalID reports whether the OSB instance id id is this instance's to use at its
// broker: bound to its uid or namespace, or named by its spec (and bound to nothing
// else). An id found only in the status is not: see docs/security.md. An id bound to
// the namespace's key is not either: OwnsExternalIDIn tells, with the key.
func (in *ServiceInstance) OwnsExternalID(id string) bool {
	return ownsID(id, in.Namespace, in.UID, in.Spec.ExternalID)
}

// OwnsExternalIDIn is OwnsExternalID, an id bound to key (the key of the instance's
// namespace) also the instance's own, and so is an id its spec names that was moved in
// with it (MovedIDIn).
func (in *ServiceInstance) OwnsExternalIDIn(id string, key NamespaceKey) bool {
	return in.OwnsExternalID(id) || IDBoundToNamespace(id, key) ||
		id == in.Spec.ExternalID && MovedIDIn(id, in.Annotations, key)
}

// OwnsExternalIDIn is OwnsExternalID, an id bound to key (the key of the binding's
// namespace) also the binding's own, and so is its spec's id moved in with it
// (MovedIDIn).
func (in *ServiceBinding) OwnsExternalIDIn(id string, key NamespaceKey) bool {
	return in.OwnsExternalID(id) || IDBoundToNamespace(id, key) ||
		id == in.Spec.ExternalID && MovedIDIn(id, in.Annotations, key)
}

// AnnotationMovedKey, on a record moved in from another cluster, is the key of the
// namespace its id was generated for there ("CLUSTER-ID/NAMESPACE-UID"), written by the
// move once the old cluster's move ticket gave the id to this namespace.
const AnnotationMovedKey = GroupName + "/moved-key"

// MovedKey is the key annotations (a record's) name in AnnotationMovedKey, not Valid
// when they name none.
func MovedKey(annotations map[string]string) NamespaceKey {
	v := annotations[AnnotationMovedKey]
	i := strings.LastIndexByte(v, '/')
	if i <= 0 || i == len(v)-1 {
		return NamespaceKey{}
	}
	return NamespaceKey{ClusterID: v[:i], UID: types.UID(v[i+1:])}
}

// String is the key as AnnotationMovedKey holds it.
func (k NamespaceKey) String() string { return k.ClusterID + "/" + string(k.UID) }

// AnnotationMovedKeys, on a Namespace object, lists (separated by spaces or commas) the
// keys ("CLUSTER-ID/NAMESPACE-UID") of the namespaces of other clusters whose ids kubectl
// catalog generated may be moved in to it. Only who may update the Namespace object (an
// administrator, not a tenant working in the namespace) writes it: it is the new
// cluster's word, which the engine reads whenever it checks a moved id, that the
// namespace continues those namespaces; a record's own moved-key annotation, which
// anyone who may write the record writes, proves nothing without it.
const AnnotationMovedKeys = GroupName + "/moved-keys"

// MovedKeysAnnotation is the value of AnnotationMovedKeys that lists the keys of
// annotations (a Namespace's) and key too, for "kubectl annotate".
func MovedKeysAnnotation(annotations map[string]string, key NamespaceKey) string {
	keys := strings.FieldsFunc(annotations[AnnotationMovedKeys], movedKeySep)
	if !slices.Contains(keys, key.String()) {
		keys = append(keys, key.String())
	}
	return strings.Join(keys, " ")
}

func movedKeySep(r rune) bool { return r == ' ' || r == ',' || r == '\n' || r == '\t' }

// Continues reports whether k's namespace continues the namespace old of another
// cluster: its Moved lists old.
func (k NamespaceKey) Continues(old NamespaceKey) bool {
	return old.Valid() && slices.Contains(strings.FieldsFunc(k.Moved, movedKeySep), old.String())
}

// MovedIDIn reports whether id, generated on another cluster, is one a record with
// annotations, in the namespace of key on this cluster, took over by a move: bound to
// the key its AnnotationMovedKey names, whose cluster is not this one and which the
// namespace's own Namespace object lists (key.Continues: the record's annotation alone,
// which whoever may write the record writes, is no proof). Such an id is
// then owned as an id bound to nothing is (the spec names it): among the records that
// own it, the one whose id claim is oldest keeps it. An id of this cluster is never
// moved: it stays with the namespace it is bound to.
func MovedIDIn(id string, annotations map[string]string, key NamespaceKey) bool {
	moved := MovedKey(annotations)
	return moved.Valid() && moved.ClusterID != "" && key.ClusterID != "" && moved.ClusterID != key.ClusterID &&
		IDBoundToNamespace(id, NamespaceKey{ClusterID: moved.ClusterID, UID: moved.UID}) &&
		!IDBoundToNamespace(id, NamespaceKey{UID: moved.UID}) && key.Continues(moved)
}

// OwnsExternalID reports whether the OSB binding id id is this binding's to use at its
// broker, on the rule of ServiceInstance.OwnsExternalID; the id the spec says the
// binding rotates is named by the spec too.
func (in *ServiceBinding) OwnsExternalID(id string) bool {
	named := []string{in.Spec.ExternalID}
	if p := in.Spec.Predecessor; p != nil {
		named = append(named, p.ExternalID)
	}
	return ownsID(id, in.Namespace, in.UID, named...)
}
