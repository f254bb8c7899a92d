package install

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/trust"
)

// Actions reported for an object, as kubectl words them.
const (
	Created    = "created"
	Configured = "configured"
	Unchanged  = "unchanged"
	Deleted    = "deleted"
	// Pruned is a workload of the installation that it no longer has (fewer
	// shards, a CronJob replaced by a Deployment, one replica where there
	// were several), deleted by the install.
	Pruned   = "pruned"
	NotFound = "not found, skipped"
	// Renewed is the token ConfigMap deleted and created with a new token.
	Renewed = "created anew (new token)"
)

// Result is what happened to one object.
type Result struct {
	// Resource is the object's resource as kubectl names it in its output,
	// such as "serviceaccount" or "cronjob.batch".
	Resource string
	Name     string
	// Action is Created, Configured, Unchanged, Deleted or NotFound.
	Action string
	// Object is the object as the API server returned it (nil after a
	// delete).
	Object runtime.Object
}

// String is the kubectl-style line: "serviceaccount/catalog-reconcile created".
func (r Result) String() string { return r.Resource + "/" + r.Name + " " + r.Action }

// Ref is the object's "resource/name" as kubectl prints it, such as
// "cronjob.batch/catalog-reconcile".
func Ref(obj runtime.Object) string {
	m, err := meta.Accessor(obj)
	if err != nil {
		return resourceOf(obj)
	}
	return resourceOf(obj) + "/" + m.GetName()
}

// resourceOf is the resource name kubectl prints for an object.
func resourceOf(obj runtime.Object) string {
	switch obj.(type) {
	case *corev1.Namespace:
		return "namespace"
	case *corev1.ServiceAccount:
		return "serviceaccount"
	case *rbacv1.ClusterRole:
		return "clusterrole.rbac.authorization.k8s.io"
	case *rbacv1.ClusterRoleBinding:
		return "clusterrolebinding.rbac.authorization.k8s.io"
	case *rbacv1.Role:
		return "role.rbac.authorization.k8s.io"
	case *rbacv1.RoleBinding:
		return "rolebinding.rbac.authorization.k8s.io"
	case *batchv1.CronJob:
		return "cronjob.batch"
	case *appsv1.Deployment:
		return "deployment.apps"
	case *policyv1.PodDisruptionBudget:
		return "poddisruptionbudget.policy"
	case *admissionv1.ValidatingAdmissionPolicy:
		return "validatingadmissionpolicy.admissionregistration.k8s.io"
	case *admissionv1.ValidatingAdmissionPolicyBinding:
		return "validatingadmissionpolicybinding.admissionregistration.k8s.io"
	case *corev1.ConfigMap:
		return "configmap"
	}
	return strings.ToLower(fmt.Sprintf("%T", obj))
}

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

	applied := map[runtime.Object]Result{}
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
			applied[obj] = res
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
	if objs.Policy != nil {
		if err := applyAll(objs.Policy, objs.PolicyBinding); err != nil {
			return results, err
		}
	}
	if objs.Policy == nil {
		return results, nil
	}

	token := objs.TrustToken
	tokenNSExists, err := alsoNamespace(token.Namespace)
	if err != nil {
		return results, err
	}
	if dryRun && !tokenNSExists {
		return append(results, Result{Resource: resourceOf(token), Name: token.Name, Action: Created, Object: token}), nil
	}
	if !dryRun && !opts.SkipEnforcementCheck {
		timeout := opts.EnforceTimeout
		if timeout == 0 {
			timeout = DefaultEnforceTimeout
		}
		if err := WaitEnforced(ctx, core, token.Namespace, timeout); err != nil {
			return results, err
		}
	}
	res, err = applyToken(ctx, core, token, applied[objs.Policy], applied[objs.PolicyBinding], dry)
	if err != nil {
		return results, err
	}
	return append(results, res), nil
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
	stale := policy.Action != Unchanged || binding.Action != Unchanged || strings.TrimSpace(cur.Data[store.TrustTokenKey]) == ""
	for _, r := range []Result{policy, binding} {
		if m, err := meta.Accessor(r.Object); err == nil && cur.CreationTimestamp.Before(ptr.To(m.GetCreationTimestamp())) {
			stale = true
		}
	}
	if !stale {
		res.Action, res.Object = Unchanged, cur
		return res, nil
	}
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
		ObjectMeta: metav1.ObjectMeta{Name: "catalog-trust-probe", Namespace: namespace,
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
// would change), the objects are compared without their managed fields.
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
	}
	return equality.Semantic.DeepEqual(a, b)
}

// Uninstall deletes the workloads of the installation namespace/name (its
// CronJobs, whose Jobs and Pods are garbage collected in the background, or
// its Deployments and PodDisruptionBudgets), the ClusterRoleBinding, the
// ClusterRole and the ServiceAccount. The namespace is left alone: it holds
// records. An object already gone is reported NotFound, not as an error: the
// CronJob named after the installation is always reported, so that a second
// uninstall says what it looked for.
func Uninstall(ctx context.Context, core kubernetes.Interface, namespace, name string, catalogNamespace ...string) ([]Result, error) {
	objs := Build(Options{Namespace: namespace, Name: name, Shards: 1})
	catalogNS := DefaultNamespace
	if len(catalogNamespace) > 0 && catalogNamespace[0] != "" {
		catalogNS = catalogNamespace[0]
	}
	every := func(found []runtime.Object) []runtime.Object {
		for _, obj := range found {
			if cj, ok := obj.(*batchv1.CronJob); ok && cj.Name == name {
				return found
			}
		}
		return append([]runtime.Object{objs.CronJobs[0]}, found...)
	}
	results, err := deleteWorkloads(ctx, core, namespace, name, catalogNS, every, true, nil)
	if err != nil {
		return results, err
	}
	background := metav1.DeletePropagationBackground
	more, err := deleteAll(ctx, core, metav1.DeleteOptions{PropagationPolicy: &background},
		objs.ClusterRoleBinding, objs.ClusterRole, objs.ServiceAccount)
	return append(results, more...), err
}

// installedWorkloads lists the CronJobs, Deployments and PodDisruptionBudgets
// of the installation namespace/name: those labelled with it, and a CronJob
// named after it from before the label existed.
func installedWorkloads(ctx context.Context, core kubernetes.Interface, namespace, name string) ([]runtime.Object, error) {
	sel := metav1.ListOptions{LabelSelector: WorkloadSelector}
	ours := func(m metav1.Object, legacyName bool) bool {
		inst, ok := m.GetLabels()[LabelInstallation]
		return inst == name || (!ok && legacyName && m.GetName() == name)
	}
	var found []runtime.Object
	for _, l := range []struct {
		what       string
		legacyName bool
		list       func() (runtime.Object, error)
	}{
		{"CronJobs", true, func() (runtime.Object, error) { return core.BatchV1().CronJobs(namespace).List(ctx, sel) }},
		{"Deployments", false, func() (runtime.Object, error) { return core.AppsV1().Deployments(namespace).List(ctx, sel) }},
		{"PodDisruptionBudgets", false, func() (runtime.Object, error) { return core.PolicyV1().PodDisruptionBudgets(namespace).List(ctx, sel) }},
	} {
		list, err := l.list()
		if err != nil {
			return nil, fmt.Errorf("cannot list the %s of reconcile in namespace %q: %w", l.what, namespace, err)
		}
		items, err := meta.ExtractList(list)
		if err != nil {
			return nil, err
		}
		for _, obj := range items {
			if m, err := meta.Accessor(obj); err == nil && ours(m, l.legacyName) {
				found = append(found, obj)
			}
		}
	}
	return found, nil
}

// deleteWorkloads deletes what pick picks of the workloads of the installation
// namespace/name found in the cluster (their Jobs and Pods in the background), then,
// with roles, its shard group's Role and RoleBinding in catalogNamespace, if it has any.
func deleteWorkloads(ctx context.Context, core kubernetes.Interface, namespace, name, catalogNamespace string,
	pick func(found []runtime.Object) []runtime.Object, roles bool, dry []string) ([]Result, error) {
	found, err := installedWorkloads(ctx, core, namespace, name)
	if err != nil {
		return nil, err
	}
	background := metav1.DeletePropagationBackground
	results, err := deleteAll(ctx, core, metav1.DeleteOptions{PropagationPolicy: &background, DryRun: dry}, pick(found)...)
	if err != nil || !roles {
		return results, err
	}
	gone, err := deletePresent(ctx, core, metav1.DeleteOptions{DryRun: dry}, leaseRoles(namespace, name, catalogNamespace)...)
	return append(results, gone...), err
}

// prune deletes the workloads of the installation that objs no longer has, and its
// shard group's Role and RoleBinding when it has no shard group any more.
func prune(ctx context.Context, core kubernetes.Interface, objs Objects, dry []string) ([]Result, error) {
	want := map[string]bool{}
	for _, obj := range objs.Workloads() {
		want[Ref(obj)] = true
	}
	stale := func(found []runtime.Object) []runtime.Object {
		var out []runtime.Object
		for _, obj := range found {
			if !want[Ref(obj)] {
				out = append(out, obj)
			}
		}
		return out
	}
	noGroup := objs.LeaseRole == nil && objs.ClusterRole != nil
	results, err := deleteWorkloads(ctx, core, objs.ServiceAccount.Namespace, objs.ServiceAccount.Name, objs.catalogNamespace, stale, noGroup, dry)
	for i := range results {
		if results[i].Action == Deleted {
			results[i].Action = Pruned
		}
	}
	return results, err
}

// leaseRoles are the Role and RoleBinding of the installation namespace/name's shard
// group in catalogNamespace, as Build makes them.
func leaseRoles(namespace, name, catalogNamespace string) []runtime.Object {
	o := Defaults()
	o.Namespace, o.Name, o.CatalogNamespace, o.Serve, o.Replicas = namespace, name, catalogNamespace, true, 2
	return Build(o).Roles()
}

// deletePresent deletes the objs that exist; those already gone are not reported.
func deletePresent(ctx context.Context, core kubernetes.Interface, opts metav1.DeleteOptions, objs ...runtime.Object) ([]Result, error) {
	results, err := deleteAll(ctx, core, opts, objs...)
	kept := results[:0]
	for _, r := range results {
		if r.Action != NotFound {
			kept = append(kept, r)
		}
	}
	return kept, err
}

// UninstallTrust deletes the token ConfigMap in catalogNamespace, then the
// trust policy's binding and the policy. Every record then has an unverified
// author. An object already gone is reported NotFound.
func UninstallTrust(ctx context.Context, core kubernetes.Interface, catalogNamespace string) ([]Result, error) {
	return deleteAll(ctx, core, metav1.DeleteOptions{}, trust.TokenConfigMap(catalogNamespace, ""), trust.Binding(), trust.Policy())
}

// deleteAll deletes objs in order, reporting one already gone as NotFound.
func deleteAll(ctx context.Context, core kubernetes.Interface, opts metav1.DeleteOptions, objs ...runtime.Object) ([]Result, error) {
	var results []Result
	for _, obj := range objs {
		m, _ := meta.Accessor(obj)
		res := Result{Resource: resourceOf(obj), Name: m.GetName(), Action: Deleted}
		err := resourceClient(core, obj).delete(ctx, m.GetName(), opts)
		switch {
		case apierrors.IsNotFound(err):
			res.Action = NotFound
		case err != nil:
			return results, fmt.Errorf("cannot delete %s: %w", res.Resource+"/"+res.Name, err)
		}
		results = append(results, res)
	}
	return results, nil
}

// client is what Apply and Uninstall need of one typed client.
type client struct {
	get    func(ctx context.Context, name string) (metav1.Object, error)
	apply  func(ctx context.Context, name string, data []byte, opts metav1.PatchOptions) (runtime.Object, error)
	delete func(ctx context.Context, name string, opts metav1.DeleteOptions) error
}

// typed adapts a typed client's methods to client.
func typed[T interface {
	runtime.Object
	metav1.Object
}](
	get func(context.Context, string, metav1.GetOptions) (T, error),
	patch func(context.Context, string, types.PatchType, []byte, metav1.PatchOptions, ...string) (T, error),
	del func(context.Context, string, metav1.DeleteOptions) error,
) client {
	return client{
		get: func(ctx context.Context, name string) (metav1.Object, error) {
			obj, err := get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return nil, err
			}
			return obj, nil
		},
		apply: func(ctx context.Context, name string, data []byte, opts metav1.PatchOptions) (runtime.Object, error) {
			return patch(ctx, name, types.ApplyPatchType, data, opts)
		},
		delete: del,
	}
}

func resourceClient(core kubernetes.Interface, obj runtime.Object) client {
	m, _ := meta.Accessor(obj)
	ns := m.GetNamespace()
	switch obj.(type) {
	case *corev1.ServiceAccount:
		c := core.CoreV1().ServiceAccounts(ns)
		return typed(c.Get, c.Patch, c.Delete)
	case *rbacv1.ClusterRole:
		c := core.RbacV1().ClusterRoles()
		return typed(c.Get, c.Patch, c.Delete)
	case *rbacv1.ClusterRoleBinding:
		c := core.RbacV1().ClusterRoleBindings()
		return typed(c.Get, c.Patch, c.Delete)
	case *rbacv1.Role:
		c := core.RbacV1().Roles(ns)
		return typed(c.Get, c.Patch, c.Delete)
	case *rbacv1.RoleBinding:
		c := core.RbacV1().RoleBindings(ns)
		return typed(c.Get, c.Patch, c.Delete)
	case *batchv1.CronJob:
		c := core.BatchV1().CronJobs(ns)
		return typed(c.Get, c.Patch, c.Delete)
	case *appsv1.Deployment:
		c := core.AppsV1().Deployments(ns)
		return typed(c.Get, c.Patch, c.Delete)
	case *policyv1.PodDisruptionBudget:
		c := core.PolicyV1().PodDisruptionBudgets(ns)
		return typed(c.Get, c.Patch, c.Delete)
	case *admissionv1.ValidatingAdmissionPolicy:
		c := core.AdmissionregistrationV1().ValidatingAdmissionPolicies()
		return typed(c.Get, c.Patch, c.Delete)
	case *admissionv1.ValidatingAdmissionPolicyBinding:
		c := core.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings()
		return typed(c.Get, c.Patch, c.Delete)
	case *corev1.ConfigMap:
		c := core.CoreV1().ConfigMaps(ns)
		return typed(c.Get, c.Patch, c.Delete)
	}
	panic(fmt.Sprintf("install: no client for %T", obj))
}

// Clean returns obj as a map without what a manifest should not carry:
// status, null creation timestamps, managed fields, and server-set metadata
// (uid, resourceVersion, generation, creationTimestamp).
func Clean(obj runtime.Object) map[string]any {
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		panic(fmt.Sprintf("install: cannot convert %T: %v", obj, err))
	}
	withKind(u, obj)
	delete(u, "status")
	if spec, ok := u["spec"].(map[string]any); ok && len(spec) == 0 {
		delete(u, "spec")
	}
	if md, ok := u["metadata"].(map[string]any); ok {
		for _, k := range []string{"managedFields", "uid", "resourceVersion", "generation", "creationTimestamp"} {
			delete(md, k)
		}
	}
	dropNullTimestamps(u)
	return u
}

// CleanServed is Clean for an object the API server returned: it keeps the
// server-set metadata and status, and drops only managed fields and null
// timestamps, as kubectl prints objects.
func CleanServed(obj runtime.Object) map[string]any {
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		panic(fmt.Sprintf("install: cannot convert %T: %v", obj, err))
	}
	withKind(u, obj)
	if md, ok := u["metadata"].(map[string]any); ok {
		delete(md, "managedFields")
	}
	dropNullTimestamps(u)
	return u
}

// Served is what the API server returned for the objects of results, each
// CleanServed, as kubectl prints them: the objects deleted (pruned) have
// nothing to print and are left out.
func Served(results []Result) []map[string]any {
	served := make([]map[string]any, 0, len(results))
	for _, r := range results {
		if r.Object != nil {
			served = append(served, CleanServed(r.Object))
		}
	}
	return served
}

// withKind sets u's apiVersion and kind from obj's type when obj does not
// carry them, as the objects a typed client returns do not: a manifest
// without them cannot be applied.
func withKind(u map[string]any, obj runtime.Object) {
	if u["apiVersion"] != nil && u["kind"] != nil {
		return
	}
	gvks, _, err := scheme.Scheme.ObjectKinds(obj)
	if err != nil || len(gvks) == 0 {
		panic(fmt.Sprintf("install: no kind known for %T: %v", obj, err))
	}
	u["apiVersion"], u["kind"] = gvks[0].GroupVersion().String(), gvks[0].Kind
}

func dropNullTimestamps(v any) {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if x == nil && k == "creationTimestamp" {
				delete(v, k)
				continue
			}
			if m, ok := x.(map[string]any); ok && k == "status" && len(m) == 0 {
				delete(v, k)
				continue
			}
			dropNullTimestamps(x)
		}
	case []any:
		for _, x := range v {
			dropNullTimestamps(x)
		}
	}
}

// WriteYAML writes objects as a YAML stream, "---" between documents.
func WriteYAML(w io.Writer, objs []map[string]any) error {
	var buf bytes.Buffer
	for i, o := range objs {
		if i > 0 {
			buf.WriteString("---\n")
		}
		b, err := yaml.Marshal(o)
		if err != nil {
			return err
		}
		buf.Write(b)
	}
	_, err := w.Write(buf.Bytes())
	return err
}

// WriteJSON writes objects as a v1 List, as kubectl prints several objects.
func WriteJSON(w io.Writer, objs []map[string]any) error {
	items := make([]any, len(objs))
	for i, o := range objs {
		items[i] = o
	}
	b, err := json.MarshalIndent(map[string]any{"apiVersion": "v1", "kind": "List", "items": items}, "", "    ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
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
