package projection

import (
	"context"
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
)

// DryRun says whether a Projector writes the workload.
type DryRun int

const (
	// DryRunNone writes the workload.
	DryRunNone DryRun = iota
	// DryRunClient computes the change without sending it: no update is made.
	DryRunClient
	// DryRunServer sends the update with dryRun=All, so the API server validates and
	// admits it (and returns the workload as it would be) without persisting it.
	DryRunServer
)

// Change is the outcome of projecting into, or out of, a workload.
type Change struct {
	// Before is the workload as read, and After as written (or, with DryRunClient, as it
	// would be sent); both are nil when the workload does not exist. They are typed
	// objects (*appsv1.Deployment, ...) with apiVersion and kind set, ready to print.
	Before, After runtime.Object
	// Changed is false when the workload already was as asked, or does not exist.
	Changed bool
}

// Projector projects bindings' Secrets into workloads, and out of them, through a typed
// clientset. Every write is an Update guarded by the resourceVersion read, re-read and
// re-applied on conflict.
type Projector struct {
	Client kubernetes.Interface
}

// Project projects the Secret secretName of binding into the workload w in namespace (see
// Apply). A workload that does not exist is an error; so is a Job, whose pod template
// cannot be changed once it is created.
func (p *Projector) Project(ctx context.Context, namespace, binding, secretName string, w v1alpha1.WorkloadProjection, dryRun DryRun) (*Change, error) {
	k, err := workloadKind(w)
	if err != nil {
		return nil, err
	}
	if k.kind == KindJob {
		return nil, fmt.Errorf("job %q in namespace %q: a Job's pod template cannot be changed once it is created, so binding %q cannot be projected into it: "+
			"project into a CronJob, or recreate the Job with the Secret %q mounted", w.Name, namespace, binding, secretName)
	}
	return p.change(ctx, namespace, k, w.Name, dryRun, true, func(tmpl *corev1.PodTemplateSpec, annotations map[string]string) (bool, map[string]string, error) {
		return Apply(tmpl, annotations, binding, secretName, w)
	})
}

// Unproject takes the projection of binding out of the workload w in namespace (see
// Remove). A workload that does not exist, or was never projected into, is left as it is
// and is not an error; so is a Job, which cannot have been projected into.
func (p *Projector) Unproject(ctx context.Context, namespace, binding string, w v1alpha1.WorkloadProjection, dryRun DryRun) (*Change, error) {
	k, err := workloadKind(w)
	if err != nil {
		return nil, err
	}
	if k.kind == KindJob {
		return &Change{}, nil
	}
	return p.change(ctx, namespace, k, w.Name, dryRun, false, func(tmpl *corev1.PodTemplateSpec, annotations map[string]string) (bool, map[string]string, error) {
		return Remove(tmpl, annotations, binding)
	})
}

func workloadKind(w v1alpha1.WorkloadProjection) (kindInfo, error) {
	k, ok := lookupKind(w.Kind)
	if !ok {
		return kindInfo{}, fmt.Errorf("kind %q cannot be projected into; use one of %s", w.Kind, strings.Join(Kinds(), ", "))
	}
	if w.Name == "" {
		return kindInfo{}, fmt.Errorf("the %s to project into has no name", strings.ToLower(k.kind))
	}
	return k, nil
}

// mutation changes a pod template and the workload's annotations, as Apply and Remove do.
type mutation func(tmpl *corev1.PodTemplateSpec, annotations map[string]string) (bool, map[string]string, error)

// change reads the workload, applies mutate and writes the result.
func (p *Projector) change(ctx context.Context, namespace string, k kindInfo, name string, dryRun DryRun, mustExist bool, mutate mutation) (*Change, error) {
	acc := accessFor(k.kind, p.Client, namespace)
	what := fmt.Sprintf("%s %q in namespace %q", strings.ToLower(k.kind), name, namespace)
	var result *Change
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		obj, err := acc.get(ctx, name)
		if apierrors.IsNotFound(err) {
			if mustExist {
				return fmt.Errorf("%s %q not found in namespace %q: create it first or check --to", strings.ToLower(k.kind), name, namespace)
			}
			result = &Change{}
			return nil
		}
		if err != nil {
			return fmt.Errorf("read %s: %w", what, err)
		}
		before := obj.DeepCopyObject().(workload)
		before.GetObjectKind().SetGroupVersionKind(k.gvk)

		changed, annotations, err := mutate(acc.template(obj), obj.GetAnnotations())
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		if !changed {
			result = &Change{Before: before, After: before.DeepCopyObject()}
			return nil
		}
		obj.SetAnnotations(annotations)
		if dryRun == DryRunClient {
			obj.GetObjectKind().SetGroupVersionKind(k.gvk)
			result = &Change{Before: before, After: obj, Changed: true}
			return nil
		}
		var opts metav1.UpdateOptions
		if dryRun == DryRunServer {
			opts.DryRun = []string{metav1.DryRunAll}
		}
		after, err := acc.update(ctx, obj, opts)
		if err != nil {
			return fmt.Errorf("update %s: %w", what, err)
		}
		after.GetObjectKind().SetGroupVersionKind(k.gvk)
		result = &Change{Before: before, After: after, Changed: true}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return result, nil
}

// workload is a typed workload object.
type workload interface {
	runtime.Object
	metav1.Object
}

// access reads and writes the workloads of one kind in one namespace.
type access interface {
	get(ctx context.Context, name string) (workload, error)
	update(ctx context.Context, obj workload, opts metav1.UpdateOptions) (workload, error)
	template(obj workload) *corev1.PodTemplateSpec
}

// typedClient is the part of a typed client (DeploymentInterface, ...) that access uses.
type typedClient[T workload] interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error)
	Update(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error)
}

type typedAccess[T workload] struct {
	client      typedClient[T]
	podTemplate func(T) *corev1.PodTemplateSpec
}

func (a typedAccess[T]) get(ctx context.Context, name string) (workload, error) {
	obj, err := a.client.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	return obj, nil
}

func (a typedAccess[T]) update(ctx context.Context, obj workload, opts metav1.UpdateOptions) (workload, error) {
	out, err := a.client.Update(ctx, obj.(T), opts)
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (a typedAccess[T]) template(obj workload) *corev1.PodTemplateSpec {
	return a.podTemplate(obj.(T))
}

// accessFor is the access to the workloads of the canonical kind in namespace.
func accessFor(kind string, c kubernetes.Interface, namespace string) access {
	switch kind {
	case KindDeployment:
		return typedAccess[*appsv1.Deployment]{c.AppsV1().Deployments(namespace),
			func(o *appsv1.Deployment) *corev1.PodTemplateSpec { return &o.Spec.Template }}
	case KindStatefulSet:
		return typedAccess[*appsv1.StatefulSet]{c.AppsV1().StatefulSets(namespace),
			func(o *appsv1.StatefulSet) *corev1.PodTemplateSpec { return &o.Spec.Template }}
	case KindDaemonSet:
		return typedAccess[*appsv1.DaemonSet]{c.AppsV1().DaemonSets(namespace),
			func(o *appsv1.DaemonSet) *corev1.PodTemplateSpec { return &o.Spec.Template }}
	case KindCronJob:
		return typedAccess[*batchv1.CronJob]{c.BatchV1().CronJobs(namespace),
			func(o *batchv1.CronJob) *corev1.PodTemplateSpec { return &o.Spec.JobTemplate.Spec.Template }}
	case KindJob:
		return typedAccess[*batchv1.Job]{c.BatchV1().Jobs(namespace),
			func(o *batchv1.Job) *corev1.PodTemplateSpec { return &o.Spec.Template }}
	}
	panic("projection: unknown kind " + kind)
}
