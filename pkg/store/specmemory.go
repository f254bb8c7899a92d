package store

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
)

// readSpec is the spec of a record as last read or written by this store: its exact bytes
// under DataKey, the format they are written in, and the hash of the spec they decode to.
type readSpec struct {
	rv, raw, format, hash string
}

// specMemory keeps, per record uid, the spec last read (so that a write that leaves the
// spec as it was leaves DataKey byte for byte as it was, whoever formatted it), and the
// spec hashes this process wrote as the user's intent.
type specMemory struct {
	mu       sync.Mutex
	read     map[types.UID]readSpec
	intended map[types.UID]string
}

const specMemoryMax = 20000

func (m *specMemory) remember(cm *corev1.ConfigMap, hash string) {
	if cm.UID == "" {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.read == nil || len(m.read) > specMemoryMax {
		m.read = map[types.UID]readSpec{}
	}
	m.read[cm.UID] = readSpec{rv: cm.ResourceVersion, raw: cm.Data[DataKey], format: cm.Annotations[AnnotationFormat], hash: hash}
}

func (m *specMemory) lookup(uid types.UID, rv string) (readSpec, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.read[uid]
	return r, ok && r.rv == rv
}

func (m *specMemory) intend(uid types.UID, hash string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.intended == nil || len(m.intended) > specMemoryMax {
		m.intended = map[types.UID]string{}
	}
	m.intended[uid] = hash
}

func (m *specMemory) wasIntended(uid types.UID, hash string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	h, ok := m.intended[uid]
	return ok && h == hash
}

// Intended reports whether record's spec is exactly one this process wrote as the user's
// intent (WithIntent): then it is the user's own, whatever its author annotations say.
func (s *Store) Intended(record v1alpha1.Record) bool {
	if record.GetUID() == "" {
		return false
	}
	hash, err := SpecHash(record)
	return err == nil && s.specs.wasIntended(record.GetUID(), hash)
}

// SpecHash identifies a record's spec as the store does (the spec-hash annotation of a
// record written by the store).
func SpecHash(record v1alpha1.Record) (string, error) {
	switch o := record.(type) {
	case *v1alpha1.Broker:
		return hashSpec(&o.Spec)
	case *v1alpha1.ServiceClass:
		return hashSpec(&o.Spec)
	case *v1alpha1.ServicePlanSchemas:
		return hashSpec(&o.Spec)
	case *v1alpha1.ServiceInstance:
		return hashSpec(&o.Spec)
	case *v1alpha1.ServiceBinding:
		return hashSpec(&o.Spec)
	case *v1alpha1.CatalogAccess:
		return hashSpec(&o.Spec)
	}
	return "", nil
}

// decoded decodes cm and remembers the spec it holds (see prepareWrite).
func decoded[T v1alpha1.Record](s *Store, k kind[T], cm *corev1.ConfigMap) (T, error) {
	obj, err := decode(k, cm)
	if err != nil || !k.remember {
		return obj, err
	}
	_, spec, _ := k.parts(obj)
	if hash, herr := hashSpec(spec); herr == nil {
		s.specs.remember(cm, hash)
	}
	return obj, nil
}

// recall makes sure the store remembers the spec of the record obj is a newer version
// of, before a write that is not the user's intent (a status write): reading the
// ConfigMap again when the memory lost it (it is bounded, and another process may have
// written the record). Without it such a write could not tell an unchanged spec from a
// changed one, and would stamp its writer as the spec's author without the trust token.
// So when the spec cannot be recalled (the read fails, or the record does not decode),
// the write must not be made: recall returns the error to fail it with, and the caller
// reads the record again. A record changed since obj was read needs nothing: the write,
// guarded by obj's resourceVersion, conflicts.
func (r Records[T]) recall(ctx context.Context, obj T) error {
	if !r.k.remember || obj.GetUID() == "" {
		return nil
	}
	if _, ok := r.s.specs.lookup(obj.GetUID(), obj.GetResourceVersion()); ok {
		return nil
	}
	cur, err := r.configMaps(obj.GetNamespace()).Get(ctx, ConfigMapName(r.k.name, obj.GetName()), metav1.GetOptions{})
	if err != nil {
		return apiError("update", r.k.name, obj.GetNamespace(), obj.GetName(), err)
	}
	if cur.UID != obj.GetUID() || cur.ResourceVersion != obj.GetResourceVersion() {
		return nil // the write, guarded by obj's resourceVersion, conflicts and writes nothing
	}
	if _, err := decoded(r.s, r.k, cur); err != nil {
		return err
	}
	if _, ok := r.s.specs.lookup(obj.GetUID(), obj.GetResourceVersion()); !ok {
		return &Error{Reason: ReasonOther, Op: "update", Kind: r.k.name, Namespace: obj.GetNamespace(), Name: obj.GetName(),
			Err: fmt.Errorf("its spec as stored cannot be told from the one written, so the write could change its author: read it again")}
	}
	return nil
}
