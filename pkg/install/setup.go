package install

import (
	"context"
	"fmt"
	"strings"

	authzv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/kube"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/trust"
)

// SetupObjects are what "kubectl catalog init" sets up in a cluster: the catalog
// namespace, the cluster id ConfigMap and the records' trust policy (the same policy,
// binding and token "reconcile install" applies), and no workload.
type SetupObjects struct {
	Objects
	// ClusterID is the cluster id ConfigMap as it would be created; an existing one is
	// never changed (brokers know the cluster by it).
	ClusterID *corev1.ConfigMap
}

// BuildSetup returns the objects of "kubectl catalog init" for catalogNamespace.
func BuildSetup(catalogNamespace string) SetupObjects {
	full := Build(Options{Namespace: catalogNamespace, CatalogNamespace: catalogNamespace, Shards: 1})
	return SetupObjects{
		Objects: Objects{Namespace: full.Namespace, Policy: full.Policy, PolicyBinding: full.PolicyBinding, TrustToken: full.TrustToken,
			catalogNamespace: catalogNamespace},
		ClusterID: &corev1.ConfigMap{
			TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: metav1.ObjectMeta{Name: kube.ClusterIDConfigMap, Namespace: catalogNamespace,
				Labels: map[string]string{store.LabelManagedBy: store.ManagedBy}},
			Data: map[string]string{kube.ClusterIDKey: "(generated when created)"},
		},
	}
}

// List returns the objects in the order Setup applies them.
func (s SetupObjects) List() []runtime.Object {
	return []runtime.Object{s.Namespace, s.ClusterID, s.Policy, s.PolicyBinding, s.TrustToken}
}

// Why says, in a few words, what an object of the setup is for.
func Why(r Result) string {
	switch {
	case r.Resource == resourceOf(&corev1.Namespace{}):
		return "the catalog namespace: cluster-scoped brokers, their credentials, access rules and the trust token"
	case r.Name == kube.ClusterIDConfigMap:
		return "the cluster id brokers are sent (context.clusterid), the same for every user; it is never changed once stored"
	case strings.HasPrefix(r.Resource, "validatingadmissionpolicybinding."):
		return "puts the trust policy in force in every namespace"
	case strings.HasPrefix(r.Resource, "validatingadmissionpolicy."):
		return "the records' trust policy: the API server refuses a record's spec written in another user's name"
	case r.Name == trust.ConfigMapName:
		return "the trust token: records written from now on carry it, and reconcile believes their author"
	}
	return ""
}

// SetupRequest is one request "kubectl catalog init" makes, and why.
type SetupRequest struct {
	authzv1.ResourceAttributes
	Why string
}

// SetupRequests are the requests Setup makes in catalogNamespace: a user who may not
// make one of them cannot set the catalog up.
func SetupRequests(catalogNamespace string) []SetupRequest {
	adm := "admissionregistration.k8s.io"
	return []SetupRequest{
		{authzv1.ResourceAttributes{Verb: "create", Resource: "namespaces"}, "create the catalog namespace"},
		{authzv1.ResourceAttributes{Namespace: catalogNamespace, Verb: "create", Resource: "configmaps"}, "store the cluster id and the trust token"},
		{authzv1.ResourceAttributes{Namespace: catalogNamespace, Verb: "delete", Resource: "configmaps", Name: trust.ConfigMapName}, "renew the trust token"},
		{authzv1.ResourceAttributes{Group: adm, Verb: "patch", Resource: "validatingadmissionpolicies", Name: trust.PolicyName}, "install the trust policy"},
		{authzv1.ResourceAttributes{Group: adm, Verb: "patch", Resource: "validatingadmissionpolicybindings", Name: trust.PolicyName}, "put the trust policy in force"},
	}
}

// MissingForSetup asks the API server (SelfSubjectAccessReviews) which requests of
// SetupRequests the user may not make, and returns them as "verb resource (why)". A
// namespace that exists already needs no create.
func MissingForSetup(ctx context.Context, core kubernetes.Interface, catalogNamespace string) ([]string, error) {
	_, nsErr := core.CoreV1().Namespaces().Get(ctx, catalogNamespace, metav1.GetOptions{})
	var missing []string
	for _, r := range SetupRequests(catalogNamespace) {
		if r.Resource == "namespaces" && nsErr == nil {
			continue
		}
		attrs := r.ResourceAttributes
		sar, err := core.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authzv1.SelfSubjectAccessReview{
			Spec: authzv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &attrs},
		}, metav1.CreateOptions{})
		if err != nil {
			return nil, fmt.Errorf("cannot ask the API server what you may do (SelfSubjectAccessReview): %w", err)
		}
		if !sar.Status.Allowed {
			what := r.Verb + " " + r.Resource
			if r.Group != "" {
				what += "." + r.Group
			}
			if r.Namespace != "" {
				what += " in namespace " + r.Namespace
			}
			missing = append(missing, fmt.Sprintf("%s (to %s)", what, r.Why))
		}
	}
	return missing, nil
}

// Setup sets the catalog up in a cluster, as "kubectl catalog init" does: the catalog
// namespace if it is missing, the cluster id (stored once, never changed), then the
// trust policy and its binding and, once the API server enforces them, the token, as
// Apply does them. It is idempotent: what is already in place is reported Unchanged.
func Setup(ctx context.Context, core kubernetes.Interface, objs SetupObjects, opts ApplyOptions) ([]Result, error) {
	var dry []string
	if opts.DryRun {
		dry = []string{metav1.DryRunAll}
	}
	var results []Result
	res, nsExists, err := ensureNamespace(ctx, core, objs.Namespace, dry)
	if err != nil {
		return results, err
	}
	results = append(results, res)
	res, err = ensureClusterID(ctx, core, objs.ClusterID, nsExists, opts.DryRun)
	if err != nil {
		return results, err
	}
	results = append(results, res)
	err = applyTrust(ctx, core, objs.Objects, opts, &results, func() (bool, error) { return nsExists, nil })
	return results, err
}

// ensureClusterID stores the cluster id unless it is stored already, through the
// engine's own get-or-create (kube.Platform.ClusterID), so that init and a verb that
// needs it first agree on it.
func ensureClusterID(ctx context.Context, core kubernetes.Interface, cm *corev1.ConfigMap, nsExists, dryRun bool) (Result, error) {
	res := Result{Resource: resourceOf(cm), Name: cm.Name}
	if nsExists {
		got, err := core.CoreV1().ConfigMaps(cm.Namespace).Get(ctx, cm.Name, metav1.GetOptions{})
		switch {
		case err == nil && got.Data[kube.ClusterIDKey] != "":
			res.Action, res.Object = Unchanged, got
			return res, nil
		case err != nil && !apierrors.IsNotFound(err):
			return res, fmt.Errorf("cannot read the cluster id (ConfigMap %s/%s): %w", cm.Namespace, cm.Name, err)
		}
	}
	if dryRun {
		res.Action, res.Object = Created, cm
		return res, nil
	}
	if _, err := kube.NewPlatform(core, cm.Namespace).ClusterID(ctx); err != nil {
		return res, err
	}
	got, err := core.CoreV1().ConfigMaps(cm.Namespace).Get(ctx, cm.Name, metav1.GetOptions{})
	if err != nil {
		return res, fmt.Errorf("cannot read the cluster id (ConfigMap %s/%s): %w", cm.Namespace, cm.Name, err)
	}
	res.Action, res.Object = Created, got
	return res, nil
}
