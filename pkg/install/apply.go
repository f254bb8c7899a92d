package install

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/trust"
)

// ApplyOptions tune Apply.
type ApplyOptions struct {
	// DryRun has the API server validate and answer but store nothing.
	DryRun bool
	// EnforceTimeout bounds the wait for the API server to enforce the trust
	// policy before the token is written; 0 means DefaultEnforceTimeout.
	EnforceTimeout time.Duration
	// SkipEnforcementCheck does not wait for the policy to be enforced: for
	// fake clients, which admit everything.
	SkipEnforcementCheck bool
}

// DefaultEnforceTimeout is how long Apply waits for the API server to enforce
// a policy it has just been given (it learns of it through an informer).
const DefaultEnforceTimeout = 30 * time.Second

// Apply creates or updates the objects with server-side apply (field manager
// FieldManager, taking over conflicting fields): the namespace only if it is
// missing, then the ServiceAccount, ClusterRole, ClusterRoleBinding and the
// workloads (CronJobs, or Deployments and PodDisruptionBudgets), deleting
// the workloads of the same installation it no longer has (Pruned), then the
// trust policy and its binding; once the API server
// enforces them, the token ConfigMap is created, or created anew when the
// policy or binding changed or the token is older than they are. It stops at
// the first error, returning the results so far.
func Apply(ctx context.Context, core kubernetes.Interface, objs Objects, opts ApplyOptions) ([]Result, error) {
	dryRun := opts.DryRun
	var dry []string
	if dryRun {
		dry = []string{metav1.DryRunAll}
	}
	var results []Result

	ns := objs.Namespace
	res, nsExists, err := ensureNamespace(ctx, core, ns, dry)
	if err != nil {
		return results, err
	}
	results = append(results, res)

	// applyIn applies objs, whose namespace exists when nsExists.
	applyIn := func(nsExists bool, objs ...runtime.Object) error {
		for _, obj := range objs {
			m, _ := meta.Accessor(obj)
			res := Result{Resource: resourceOf(obj), Name: m.GetName()}
			if dryRun && !nsExists && m.GetNamespace() != "" {
				// Nothing can be validated in a namespace that a dry run did
				// not create.
				res.Action, res.Object = Created, obj
				results = append(results, res)
				continue
			}
			res, err := applyOne(ctx, core, obj, dry)
			if err != nil {
				return err
			}
			results = append(results, res)
		}
		return nil
	}
	applyAll := func(objs ...runtime.Object) error { return applyIn(nsExists, objs...) }
	// alsoNamespace makes sure of another namespace the installation writes to, and
	// says whether it exists.
	alsoNamespace := func(name string) (bool, error) {
		if name == ns.Name {
			return nsExists, nil
		}
		res, exists, err := ensureNamespace(ctx, core, &corev1.Namespace{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: ns.Labels},
		}, dry)
		if err != nil {
			return false, err
		}
		results = append(results, res)
		return exists, nil
	}
	if err := applyAll(objs.ServiceAccount, objs.ClusterRole, objs.ClusterRoleBinding); err != nil {
		return results, err
	}
	if objs.LeaseRole != nil {
		// A shard group's Role on Leases, in the catalog namespace.
		rolesNSExists, err := alsoNamespace(objs.LeaseRole.Namespace)
		if err != nil {
			return results, err
		}
		// A dry run validates them only where it could validate the ServiceAccount
		// they bind.
		if err := applyIn(rolesNSExists && nsExists, objs.Roles()...); err != nil {
			return results, err
		}
	}
	if err := applyAll(objs.Workloads()...); err != nil {
		return results, err
	}
	if nsExists || !dryRun {
		pruned, err := prune(ctx, core, objs, dry)
		results = append(results, pruned...)
		if err != nil {
			return results, err
		}
	}
	if objs.Policy == nil {
		return results, nil
	}
	err = applyTrust(ctx, core, objs, opts, &results, func() (bool, error) { return alsoNamespace(objs.TrustToken.Namespace) })
	return results, err
}

// applyTrust applies the trust policy and its binding of objs and, once the API server
// enforces them, the token ConfigMap: created, or created anew when the policy or
// binding changed or the token is older than they are. It appends what happened to
// results. tokenNamespace makes sure of the token's namespace and says whether it exists
// (a dry run cannot validate anything in one it did not create).
func applyTrust(ctx context.Context, core kubernetes.Interface, objs Objects, opts ApplyOptions, results *[]Result, tokenNamespace func() (bool, error)) error {
	var dry []string
	if opts.DryRun {
		dry = []string{metav1.DryRunAll}
	}
	applied := map[runtime.Object]Result{}
	for _, obj := range []runtime.Object{objs.Policy, objs.PolicyBinding} {
		res, err := applyOne(ctx, core, obj, dry)
		if err != nil {
			return err
		}
		applied[obj] = res
		*results = append(*results, res)
	}
	token := objs.TrustToken
	tokenNSExists, err := tokenNamespace()
	if err != nil {
		return err
	}
	if opts.DryRun && !tokenNSExists {
		*results = append(*results, Result{Resource: resourceOf(token), Name: token.Name, Action: Created, Object: token})
		return nil
	}
	if !opts.DryRun && !opts.SkipEnforcementCheck {
		timeout := opts.EnforceTimeout
		if timeout == 0 {
			timeout = DefaultEnforceTimeout
		}
		if err := WaitEnforced(ctx, core, token.Namespace, timeout); err != nil {
			return err
		}
	}
	res, err := applyToken(ctx, core, token, applied[objs.Policy], applied[objs.PolicyBinding], dry)
	if err != nil {
		return err
	}
	*results = append(*results, res)
	return nil
}

// ensureNamespace creates ns unless it exists, and says whether it did.
func ensureNamespace(ctx context.Context, core kubernetes.Interface, ns *corev1.Namespace, dry []string) (Result, bool, error) {
	got, err := core.CoreV1().Namespaces().Get(ctx, ns.Name, metav1.GetOptions{})
	switch {
	case err == nil:
		return Result{Resource: resourceOf(ns), Name: ns.Name, Action: Unchanged, Object: got}, true, nil
	case apierrors.IsNotFound(err):
		created, err := core.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{DryRun: dry, FieldManager: FieldManager})
		if err != nil {
			return Result{}, false, fmt.Errorf("cannot create namespace %q: %w", ns.Name, err)
		}
		return Result{Resource: resourceOf(ns), Name: ns.Name, Action: Created, Object: created}, false, nil
	}
	return Result{}, false, fmt.Errorf("cannot read namespace %q: %w", ns.Name, err)
}

// applyOne applies obj with server-side apply and says what changed.
func applyOne(ctx context.Context, core kubernetes.Interface, obj runtime.Object, dry []string) (Result, error) {
	m, _ := meta.Accessor(obj)
	res := Result{Resource: resourceOf(obj), Name: m.GetName()}
	r := resourceClient(core, obj)
	before, err := r.get(ctx, m.GetName())
	if err != nil && !apierrors.IsNotFound(err) {
		return res, fmt.Errorf("cannot read %s: %w", res.Resource+"/"+res.Name, err)
	}
	data, err := json.Marshal(Clean(obj))
	if err != nil {
		return res, err
	}
	after, err := r.apply(ctx, m.GetName(), data, metav1.PatchOptions{FieldManager: FieldManager, Force: ptr.To(true), DryRun: dry})
	if err != nil {
		return res, fmt.Errorf("cannot apply %s: %w", res.Resource+"/"+res.Name, err)
	}
	res.Object = after
	if before != nil {
		res.Before = before.(runtime.Object)
	}
	switch {
	case before == nil:
		res.Action = Created
	case sameObject(before.(runtime.Object), after, len(dry) > 0):
		res.Action = Unchanged
	default:
		res.Action = Configured
	}
	return res, nil
}

// applyToken keeps the token ConfigMap when the policy and binding were
// unchanged and the token is younger than both; otherwise it is created, or
// deleted and created with the new token: a token that existed while the
// policy was missing or different may be on records forged meanwhile.
func applyToken(ctx context.Context, core kubernetes.Interface, token *corev1.ConfigMap, policy, binding Result, dry []string) (Result, error) {
	cms := core.CoreV1().ConfigMaps(token.Namespace)
	res := Result{Resource: resourceOf(token), Name: token.Name}
	ref := token.Namespace + "/" + token.Name
	create := func(action string) (Result, error) {
		created, err := cms.Create(ctx, token, metav1.CreateOptions{DryRun: dry, FieldManager: FieldManager})
		if err != nil {
			return res, fmt.Errorf("cannot create the trust token ConfigMap %s: %w", ref, err)
		}
		res.Action, res.Object = action, created
		return res, nil
	}
	cur, err := cms.Get(ctx, token.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return create(Created)
	case err != nil:
		return res, fmt.Errorf("cannot read the trust token ConfigMap %s: %w", ref, err)
	}
	// A policy this release changed only where an earlier release's vouched for authors
	// the same way (trust.UpgradedInPlace) was in force all along: its token stays.
	policyChanged := policy.Action != Unchanged && !(policy.Action == Configured && trust.UpgradedInPlace(policy.Before))
	stale := policyChanged || binding.Action != Unchanged || strings.TrimSpace(cur.Data[store.TrustTokenKey]) == ""
	for _, r := range []Result{policy, binding} {
		if m, err := meta.Accessor(r.Object); err == nil && cur.CreationTimestamp.Before(ptr.To(m.GetCreationTimestamp())) {
			stale = true
		}
	}
	if !stale {
		res.Action, res.Object = Unchanged, cur
		return res, nil
	}
	res.Replaced = strings.TrimSpace(cur.Data[store.TrustTokenKey])
	if len(dry) > 0 {
		res.Action, res.Object = Renewed, token
		return res, nil
	}
	err = cms.Delete(ctx, token.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &cur.UID}})
	if err != nil && !apierrors.IsNotFound(err) {
		return res, fmt.Errorf("cannot delete the stale trust token ConfigMap %s: %w", ref, err)
	}
	return create(Renewed)
}

// WaitEnforced waits until the API server refuses, in a server dry run, to
// create a record ConfigMap in namespace with no author: proof that the trust
// policy is enforced, and not only stored.
func WaitEnforced(ctx context.Context, core kubernetes.Interface, namespace string, timeout time.Duration) error {
	probe := &corev1.ConfigMap{
		// Named as a record: the policy selects records by their name prefix.
		ObjectMeta: metav1.ObjectMeta{Name: store.ConfigMapName(v1alpha1.KindServiceInstance, "trust-probe"), Namespace: namespace,
			Labels: map[string]string{store.LabelManagedBy: store.ManagedBy}},
		Data: map[string]string{store.DataKey: "{}"},
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		_, err := core.CoreV1().ConfigMaps(namespace).Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil && strings.Contains(err.Error(), store.TrustPolicyName) {
			return nil
		}
		if err != nil && !apierrors.IsAlreadyExists(err) && ctx.Err() == nil && !apierrors.IsInternalError(err) {
			return fmt.Errorf("cannot check that the API server enforces ValidatingAdmissionPolicy %s: %w", store.TrustPolicyName, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the API server does not enforce ValidatingAdmissionPolicy %s after %s (a record ConfigMap without author is still admitted); the trust token was not written: check \"kubectl get validatingadmissionpolicy %s -o yaml\" (status.typeChecking) and run the command again", store.TrustPolicyName, timeout, store.TrustPolicyName)
		case <-tick.C:
		}
	}
}

// sameObject reports whether an apply changed nothing: the API server keeps
// the resourceVersion of an object it did not write; failing that (a dry
// run, which writes nothing and so keeps the resourceVersion whatever it
// would change, or an object whose status the API server or a controller
// wrote meanwhile), the objects are compared without their managed fields and
// status.
func sameObject(before, after runtime.Object, dryRun bool) bool {
	bm, _ := meta.Accessor(before)
	am, _ := meta.Accessor(after)
	if !dryRun && bm.GetResourceVersion() != "" && bm.GetResourceVersion() == am.GetResourceVersion() {
		return true
	}
	b, a := CleanServed(before), CleanServed(after)
	for _, m := range []map[string]any{a, b} {
		if md, ok := m["metadata"].(map[string]any); ok {
			delete(md, "resourceVersion")
		}
		// An apply writes no status; the API server and controllers write it on their
		// own (the trust policy's type checking, a Deployment's replicas), and may do
		// so between the read and the apply. A change there is none of the apply's.
		delete(m, "status")
	}
	return equality.Semantic.DeepEqual(a, b)
}

// ApplyObject applies one object as Apply does (server-side apply, field
// manager FieldManager) and says whether it was created, configured or left
// unchanged. It knows ClusterRoles, ClusterRoleBindings, ServiceAccounts,
// CronJobs, Deployments, PodDisruptionBudgets, ConfigMaps and the trust policy's objects.
func ApplyObject(ctx context.Context, core kubernetes.Interface, obj runtime.Object, dryRun bool) (Result, error) {
	var dry []string
	if dryRun {
		dry = []string{metav1.DryRunAll}
	}
	return applyOne(ctx, core, obj, dry)
}
