package store

import (
	"context"
	"fmt"
	"sync"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

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
// the engine's platform (kube.NewPlatformAs) so that a process asks once.
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
