package install

import (
	"context"
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/trust"
)

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
		objs.NetworkPolicy, objs.ClusterRoleBinding, objs.ClusterRole, objs.ServiceAccount)
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
