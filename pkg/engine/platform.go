package engine

import (
	"context"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/ahead"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
)

// Platform tells the engine what it sends in the OSB context and the deprecated
// organization/space GUIDs, and who the user is.
type Platform interface {
	// ClusterID is a stable id of the cluster (context.clusterid, organization_guid).
	ClusterID(ctx context.Context) (string, error)
	// NamespaceUID identifies a namespace (space_guid).
	NamespaceUID(ctx context.Context, namespace string) (string, error)
	// Identity is the user on whose behalf requests are made, sent as the originating
	// identity; nil sends none.
	Identity(ctx context.Context) (*osb.OriginatingIdentity, error)
}

// StaticPlatform is a Platform with fixed answers, for tests and for callers that know
// them already.
type StaticPlatform struct {
	Cluster string
	// NamespaceUIDs maps namespaces to uids; a namespace not in it gets "uid-<name>".
	NamespaceUIDs map[string]string
	User          *osb.OriginatingIdentity
	// NamespaceMoved maps namespaces to the keys of the namespaces of other clusters
	// they continue (v1alpha1.AnnotationMovedKeys); a namespace not in it continues none.
	NamespaceMoved map[string]string
}

// ClusterID returns Cluster.
func (s StaticPlatform) ClusterID(context.Context) (string, error) { return s.Cluster, nil }

// NamespaceUID returns the namespace's uid.
func (s StaticPlatform) NamespaceUID(_ context.Context, ns string) (string, error) {
	if uid, ok := s.NamespaceUIDs[ns]; ok {
		return uid, nil
	}
	return "uid-" + ns, nil
}

// NamespaceMovedKeys returns NamespaceMoved's keys for ns.
func (s StaticPlatform) NamespaceMovedKeys(_ context.Context, ns string) (string, error) {
	return s.NamespaceMoved[ns], nil
}

// Identity returns User.
func (s StaticPlatform) Identity(context.Context) (*osb.OriginatingIdentity, error) {
	return s.User, nil
}

// readAheadPlatform is a Platform that can start its reads before a call needs them
// (kube.Platform).
type readAheadPlatform interface {
	ReadAhead(ctx context.Context, namespace string)
}

// readAhead starts, in the background, the reads a verb waits for later and that depend
// on nothing it reads first: who the user is; for a verb that sends the OSB context of
// an instance in namespace (not ""), the cluster id and the namespace's uid; for a verb
// that writes the user's intent (author), the trust token; for every verb, the trust
// policy's state, which the checks of the records the verb's broker call rests on take
// (read once per command, with the token when the source reads both together). The
// calls that need them take the answers kept, or ask again after an error, so that what
// fails, and how, stays what it was.
func (e *Engine) readAhead(ctx context.Context, namespace string, author bool) {
	if p, ok := e.cfg.Platform.(readAheadPlatform); ok {
		p.ReadAhead(ctx, namespace)
	}
	if author {
		e.cfg.Store.ReadAheadAuthor(ctx)
	}
	ahead.Go(ctx, func() { e.auth.State(ctx) })
}
