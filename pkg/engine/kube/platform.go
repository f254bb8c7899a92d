package kube

import (
	"context"
	"fmt"
	"sort"
	"sync"

	"github.com/google/uuid"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/ahead"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// ClusterIDConfigMap is the ConfigMap, in the catalog namespace, that keeps the cluster
// id: a UUID generated the first time any kubectl-catalog needs it. Kubernetes has no
// cluster id of its own, and brokers must see the same one from every user.
const ClusterIDConfigMap = "catalog-cluster-id"

// ClusterIDKey is the data key of ClusterIDConfigMap.
const ClusterIDKey = "clusterID"

// Platform is the engine.Platform of a real cluster. It caches what it read: one command
// drives records of one cluster as one user.
type Platform struct {
	core             kubernetes.Interface
	catalogNamespace string

	user *store.ClusterUser

	// idMu and nsMu are held while their request is under way: a call that comes while
	// a read-ahead (ReadAhead) is out waits for its answer instead of asking again.
	idMu      sync.Mutex
	clusterID string
	nsMu      sync.Mutex
	nsUIDs    map[string]string
	// nsMoved are the namespaces' v1alpha1.AnnotationMovedKeys, read with their uids.
	nsMoved map[string]string
}

// NewPlatform returns a Platform reading the cluster through core.
func NewPlatform(core kubernetes.Interface, catalogNamespace string) *Platform {
	return NewPlatformAs(core, catalogNamespace, store.NewClusterUser(core))
}

// NewPlatformAs is NewPlatform with the user shared with the store
// (store.WithClusterUser): the process asks the API server who it is once.
func NewPlatformAs(core kubernetes.Interface, catalogNamespace string, user *store.ClusterUser) *Platform {
	return &Platform{core: core, catalogNamespace: catalogNamespace, user: user, nsUIDs: map[string]string{}, nsMoved: map[string]string{}}
}

// ClusterID reads the cluster id, creating it (and the catalog namespace) on first use.
// Two users racing to create it both end up with the one that was stored first.
func (p *Platform) ClusterID(ctx context.Context) (string, error) {
	p.idMu.Lock()
	defer p.idMu.Unlock()
	if p.clusterID != "" {
		return p.clusterID, nil
	}
	cms := p.core.CoreV1().ConfigMaps(p.catalogNamespace)
	for range 3 {
		if found, err := p.readClusterID(ctx); found || err != nil {
			return p.clusterID, err
		}
		_, err := cms.Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: ClusterIDConfigMap, Labels: map[string]string{store.LabelManagedBy: store.ManagedBy}},
			Data:       map[string]string{ClusterIDKey: uuid.NewString()},
		}, metav1.CreateOptions{})
		if apierrors.IsNotFound(err) {
			_, err = p.core.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: p.catalogNamespace}}, metav1.CreateOptions{})
			if err != nil && !apierrors.IsAlreadyExists(err) {
				return "", fmt.Errorf("cannot create the catalog namespace %q for the cluster id: %w", p.catalogNamespace, err)
			}
			continue
		}
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return "", fmt.Errorf("cannot store the cluster id (ConfigMap %s/%s): %w", p.catalogNamespace, ClusterIDConfigMap, err)
		}
	}
	return "", fmt.Errorf("cannot read or create the cluster id (ConfigMap %s/%s)", p.catalogNamespace, ClusterIDConfigMap)
}

// readClusterID reads the cluster id into p.clusterID, with idMu held; not found is no
// error.
func (p *Platform) readClusterID(ctx context.Context) (bool, error) {
	cm, err := p.core.CoreV1().ConfigMaps(p.catalogNamespace).Get(ctx, ClusterIDConfigMap, metav1.GetOptions{})
	if err == nil && cm.Data[ClusterIDKey] != "" {
		p.clusterID = cm.Data[ClusterIDKey]
		return true, nil
	}
	if err != nil && !apierrors.IsNotFound(err) {
		return false, fmt.Errorf("cannot read the cluster id (ConfigMap %s/%s): %w", p.catalogNamespace, ClusterIDConfigMap, err)
	}
	return false, nil
}

// ReadAhead starts reading, each in the background, who the user is and, unless
// namespace is "", the cluster id and namespace's uid (the OSB context), and keeps the
// answers for the calls that need them: a verb calls it when it starts, so that these
// reads go out with its own first ones. It writes nothing (a missing cluster id is
// created by ClusterID, when a call needs it) and keeps no error: a call finding none
// kept asks again, and fails as it would have.
func (p *Platform) ReadAhead(ctx context.Context, namespace string) {
	ahead.Go(ctx, func() { _, _ = p.user.UserInfo(ctx) })
	if namespace == "" {
		return
	}
	ahead.Go(ctx,
		func() {
			p.idMu.Lock()
			defer p.idMu.Unlock()
			if p.clusterID == "" {
				_, _ = p.readClusterID(ctx)
			}
		},
		func() { _, _ = p.NamespaceUID(ctx, namespace) },
	)
}

// NamespaceUID returns the namespace's uid. A user allowed to work in a namespace but
// not to read Namespace objects gets the namespace's name instead: the space GUID must
// be non-empty and stable, and a name is both within one cluster.
func (p *Platform) NamespaceUID(ctx context.Context, namespace string) (string, error) {
	p.nsMu.Lock()
	defer p.nsMu.Unlock()
	if uid, ok := p.nsUIDs[namespace]; ok {
		return uid, nil
	}
	ns, err := p.core.CoreV1().Namespaces().Get(ctx, namespace, metav1.GetOptions{})
	switch {
	case err == nil:
		p.nsUIDs[namespace] = string(ns.UID)
		p.nsMoved[namespace] = ns.Annotations[v1alpha1.AnnotationMovedKeys]
	case apierrors.IsForbidden(err):
		p.nsUIDs[namespace] = namespace
	default:
		return "", fmt.Errorf("cannot read namespace %q: %w", namespace, err)
	}
	return p.nsUIDs[namespace], nil
}

// NamespaceMovedKeys returns the keys of the namespaces of other clusters that namespace
// continues, as its Namespace object's v1alpha1.AnnotationMovedKeys lists them (read
// with its uid, NamespaceUID): none when the user may not read it.
func (p *Platform) NamespaceMovedKeys(ctx context.Context, namespace string) (string, error) {
	if _, err := p.NamespaceUID(ctx, namespace); err != nil {
		return "", err
	}
	p.nsMu.Lock()
	defer p.nsMu.Unlock()
	return p.nsMoved[namespace], nil
}

// Identity asks the API server who the user is (SelfSubjectReview), so the broker sees
// the real user whatever the kubeconfig's credentials are (token, certificate, exec
// plugin, impersonation). A cluster without the API gives no identity rather than a
// wrong one.
func (p *Platform) Identity(ctx context.Context) (*osb.OriginatingIdentity, error) {
	u, err := p.user.UserInfo(ctx)
	if u == nil || err != nil {
		return nil, err
	}
	id := &osb.OriginatingIdentity{Username: u.Username, UID: u.UID, Groups: append([]string(nil), u.Groups...), Extra: map[string][]string{}}
	keys := make([]string, 0, len(u.Extra))
	for k := range u.Extra {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		id.Extra[k] = append([]string(nil), u.Extra[k]...)
	}
	return id, nil
}

var _ engine.Platform = (*Platform)(nil)
