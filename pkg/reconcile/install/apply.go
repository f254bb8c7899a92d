package install

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"
)

// Actions reported for an object, as kubectl words them.
const (
	Created    = "created"
	Configured = "configured"
	Unchanged  = "unchanged"
	Deleted    = "deleted"
	NotFound   = "not found, skipped"
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
	case *batchv1.CronJob:
		return "cronjob.batch"
	}
	return strings.ToLower(fmt.Sprintf("%T", obj))
}

// Apply creates or updates the objects with server-side apply (field manager
// FieldManager, taking over conflicting fields): the namespace only if it is
// missing, then the ServiceAccount, ClusterRole, ClusterRoleBinding and
// CronJob. With dryRun the API server validates and answers but stores
// nothing. It stops at the first error, returning the results so far.
func Apply(ctx context.Context, core kubernetes.Interface, objs Objects, dryRun bool) ([]Result, error) {
	var dry []string
	if dryRun {
		dry = []string{metav1.DryRunAll}
	}
	var results []Result

	ns := objs.Namespace
	nsExists := true
	got, err := core.CoreV1().Namespaces().Get(ctx, ns.Name, metav1.GetOptions{})
	switch {
	case err == nil:
		results = append(results, Result{Resource: resourceOf(ns), Name: ns.Name, Action: Unchanged, Object: got})
	case apierrors.IsNotFound(err):
		nsExists = false
		created, err := core.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{DryRun: dry, FieldManager: FieldManager})
		if err != nil {
			return results, fmt.Errorf("cannot create namespace %q: %w", ns.Name, err)
		}
		results = append(results, Result{Resource: resourceOf(ns), Name: ns.Name, Action: Created, Object: created})
	default:
		return results, fmt.Errorf("cannot read namespace %q: %w", ns.Name, err)
	}

	for _, obj := range []runtime.Object{objs.ServiceAccount, objs.ClusterRole, objs.ClusterRoleBinding, objs.CronJob} {
		m, _ := meta.Accessor(obj)
		res := Result{Resource: resourceOf(obj), Name: m.GetName()}
		if dryRun && !nsExists && m.GetNamespace() != "" {
			// Nothing can be validated in a namespace that a dry run did
			// not create.
			res.Action, res.Object = Created, obj
			results = append(results, res)
			continue
		}
		r := resourceClient(core, obj)
		before, err := r.get(ctx, m.GetName())
		if err != nil && !apierrors.IsNotFound(err) {
			return results, fmt.Errorf("cannot read %s: %w", res.Resource+"/"+res.Name, err)
		}
		data, err := json.Marshal(Clean(obj))
		if err != nil {
			return results, err
		}
		after, err := r.apply(ctx, m.GetName(), data, metav1.PatchOptions{FieldManager: FieldManager, Force: ptr.To(true), DryRun: dry})
		if err != nil {
			return results, fmt.Errorf("cannot apply %s: %w", res.Resource+"/"+res.Name, err)
		}
		res.Object = after
		switch {
		case before == nil:
			res.Action = Created
		case sameObject(before.(runtime.Object), after, dryRun):
			res.Action = Unchanged
		default:
			res.Action = Configured
		}
		results = append(results, res)
	}
	return results, nil
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

// Uninstall deletes the CronJob (its Jobs and Pods are garbage collected in
// the background), the ClusterRoleBinding, the ClusterRole and the
// ServiceAccount of the installation namespace/name. The namespace is left
// alone: it holds records. An object already gone is reported NotFound, not
// as an error.
func Uninstall(ctx context.Context, core kubernetes.Interface, namespace, name string) ([]Result, error) {
	objs := Build(Options{Namespace: namespace, Name: name})
	background := metav1.DeletePropagationBackground
	var results []Result
	for _, obj := range []runtime.Object{objs.CronJob, objs.ClusterRoleBinding, objs.ClusterRole, objs.ServiceAccount} {
		m, _ := meta.Accessor(obj)
		res := Result{Resource: resourceOf(obj), Name: m.GetName(), Action: Deleted}
		err := resourceClient(core, obj).delete(ctx, m.GetName(), metav1.DeleteOptions{PropagationPolicy: &background})
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
	case *batchv1.CronJob:
		c := core.BatchV1().CronJobs(ns)
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
	if md, ok := u["metadata"].(map[string]any); ok {
		delete(md, "managedFields")
	}
	dropNullTimestamps(u)
	return u
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
