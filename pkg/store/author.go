package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
)

// Identity is who the store writes as: the user the API server authenticates.
type Identity struct {
	Username string
	Groups   []string
}

// WithIdentity tells the store who it writes as, for the author annotations of spec
// writes. Without it the store stamps no author (and, where the trust policy is in force,
// the API server refuses spec writes).
func WithIdentity(id func(ctx context.Context) (*Identity, error)) Option {
	return func(s *Store) { s.identity = id }
}

// WithTrustToken gives the store the current trust token (see TrustConfigMap), stamped on
// the records written under WithIntent. An empty token stamps none.
func WithTrustToken(token func(ctx context.Context) (string, error)) Option {
	return func(s *Store) { s.trustToken = token }
}

type intentKey struct{}

// WithIntent marks the writes made with ctx as the user's own intent: a verb creating a
// record, or changing its spec on the user's command. Such a write stamps the user as the
// record's author together with the trust token, and the spec it wrote is remembered as
// this process's own (Intended). Every other write (the engine's status writes, above
// all) keeps the author the record has; should one change the spec, it stamps the writer
// without the token, leaving the record without a verified author.
func WithIntent(ctx context.Context) context.Context {
	return context.WithValue(ctx, intentKey{}, true)
}

func isIntent(ctx context.Context) bool { v, _ := ctx.Value(intentKey{}).(bool); return v }

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

// Author is a record's author as its annotations name it. Whether the annotations can be
// believed is for the caller to decide (the trust token, the policy).
type Author struct {
	Username string
	Groups   []string
	// Token is the trust token the spec was written under; empty when none.
	Token string
}

// AuthorOf reads a record's author annotations.
func AuthorOf(record v1alpha1.Record) Author {
	a := record.GetAnnotations()
	au := Author{Username: a[AnnotationAuthor], Token: a[AnnotationTrustToken]}
	if g := a[AnnotationAuthorGroups]; g != "" {
		au.Groups = strings.Split(g, ",")
	}
	return au
}

// prepareWrite finishes a ConfigMap about to be written: a spec left as it was read keeps
// its exact bytes, and a spec that changes is stamped with its author (see WithIntent).
// It returns the spec hash to remember as intended once the write is done ("" for none).
func (s *Store) prepareWrite(ctx context.Context, cm *corev1.ConfigMap, create bool) (string, error) {
	hash := cm.Annotations[AnnotationSpecHash]
	changed := true
	if !create {
		// Same spec, compressed or not as before: the bytes read are kept (format 1
		// bytes too: their status is ignored where StatusDataKey is present). A status
		// that grew can make the same spec need compressing, and that is other bytes.
		if r, ok := s.specs.lookup(cm.UID, cm.ResourceVersion); ok && r.hash == hash &&
			isCompressedFormat(r.format) == isCompressedFormat(cm.Annotations[AnnotationFormat]) {
			cm.Data[DataKey] = r.raw
			changed = false
		}
	}
	intent := isIntent(ctx)
	if !changed && !intent {
		return "", nil
	}
	var id *Identity
	if s.identity != nil {
		var err error
		if id, err = s.identity(ctx); err != nil {
			return "", err
		}
	}
	delete(cm.Annotations, AnnotationTrustToken)
	if id == nil {
		delete(cm.Annotations, AnnotationAuthor)
		delete(cm.Annotations, AnnotationAuthorGroups)
	} else {
		cm.Annotations[AnnotationAuthor] = id.Username
		cm.Annotations[AnnotationAuthorGroups] = strings.Join(id.Groups, ",")
	}
	if !intent {
		return "", nil
	}
	if s.trustToken != nil && id != nil {
		tok, err := s.trustToken(ctx)
		if err != nil {
			return "", err
		}
		if tok != "" {
			cm.Annotations[AnnotationTrustToken] = tok
		}
	}
	return hash, nil
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

// ClusterUser is who the API server says the client is (SelfSubjectReview), asked once
// and kept: one process talks to one cluster as one user (one rest config), so the
// store's author stamp and the engine's originating identity share one ClusterUser and
// one request.
type ClusterUser struct {
	core kubernetes.Interface

	mu   sync.Mutex
	done bool
	user *authnv1.UserInfo
}

// NewClusterUser returns the user of core's credentials, asked on first use.
func NewClusterUser(core kubernetes.Interface) *ClusterUser { return &ClusterUser{core: core} }

// UserInfo returns who the API server says the client is; nil when the cluster does not
// answer (no SelfSubjectReview API, or the user may not ask). An answer is kept; an
// error is not, so the next call asks again.
func (c *ClusterUser) UserInfo(ctx context.Context) (*authnv1.UserInfo, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done {
		return c.user, nil
	}
	r, err := c.core.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authnv1.SelfSubjectReview{}, metav1.CreateOptions{})
	switch {
	case err == nil:
		u := r.Status.UserInfo
		c.user = &u
	case apierrors.IsNotFound(err) || apierrors.IsForbidden(err):
	default:
		return nil, fmt.Errorf("cannot find out who the user is (SelfSubjectReview): %w", err)
	}
	c.done = true
	return c.user, nil
}

// WithClusterIdentity writes as the user the API server says the client is
// (SelfSubjectReview), asked once. A cluster that does not answer gives no identity.
func WithClusterIdentity(core kubernetes.Interface) Option {
	return WithClusterUser(NewClusterUser(core))
}

// WithClusterUser writes as u, the user the API server says the client is; share u with
// the engine's platform (catalog.NewKubePlatformAs) so that a process asks once.
func WithClusterUser(u *ClusterUser) Option {
	return WithIdentity(func(ctx context.Context) (*Identity, error) {
		info, err := u.UserInfo(ctx)
		if info == nil || err != nil {
			return nil, err
		}
		return &Identity{Username: info.Username, Groups: info.Groups}, nil
	})
}

// WithClusterTrustToken stamps the token of TrustConfigMap in catalogNamespace, read at
// most every few seconds; none when it is missing or unreadable.
func WithClusterTrustToken(core kubernetes.Interface, catalogNamespace string) Option {
	var (
		mu  sync.Mutex
		tok string
		at  time.Time
	)
	return WithTrustToken(func(ctx context.Context) (string, error) {
		mu.Lock()
		defer mu.Unlock()
		if !at.IsZero() && time.Since(at) < 10*time.Second {
			return tok, nil
		}
		cm, err := core.CoreV1().ConfigMaps(catalogNamespace).Get(ctx, TrustConfigMap, metav1.GetOptions{})
		switch {
		case err == nil:
			tok = cm.Data[TrustTokenKey]
		case apierrors.IsNotFound(err) || apierrors.IsForbidden(err):
			tok = ""
		default:
			return "", fmt.Errorf("cannot read the catalog's trust token (ConfigMap %s/%s): %w", catalogNamespace, TrustConfigMap, err)
		}
		at = time.Now()
		return tok, nil
	})
}

// isCompressedFormat reports whether a format annotation names a format whose spec is
// compressed.
func isCompressedFormat(format string) bool { return format == strconv.Itoa(formatCompressed) }
