package install

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// WhenReconcileRuns says when the reconcile that "reconcile install" put in one of
// namespaces (the catalog namespace, and the default one) takes up a call left to it:
// within seconds with a Deployment of --serve, at the next run of its CronJob (its
// schedule and last run, at time now) otherwise. When the user may not read the
// workloads, it says how to find out; when there is none, who runs reconcile instead.
func WhenReconcileRuns(ctx context.Context, core kubernetes.Interface, now time.Time, namespaces ...string) string {
	namespaces = slices.Compact(slices.DeleteFunc(slices.Clone(namespaces), func(s string) bool { return s == "" }))
	sel := metav1.ListOptions{LabelSelector: WorkloadSelector}
	var runs []string
	unreadable := false
	for _, ns := range namespaces {
		ds, err := core.AppsV1().Deployments(ns).List(ctx, sel)
		if err != nil {
			unreadable = true
		} else {
			for _, d := range ds.Items {
				if d.Spec.Replicas == nil || *d.Spec.Replicas > 0 {
					runs = append(runs, fmt.Sprintf("reconcile --serve (Deployment %s/%s, %d of %d replicas ready) takes it up within seconds",
						d.Namespace, d.Name, d.Status.ReadyReplicas, ptrValue(d.Spec.Replicas)))
				}
			}
		}
		cjs, err := core.BatchV1().CronJobs(ns).List(ctx, sel)
		if err != nil {
			unreadable = true
			continue
		}
		for _, cj := range cjs.Items {
			if cj.Spec.Suspend != nil && *cj.Spec.Suspend {
				continue
			}
			last := "it has not run yet"
			if t := cj.Status.LastScheduleTime; t != nil {
				last = "it last ran " + now.Sub(t.Time).Round(time.Second).String() + " ago"
			}
			next := ""
			loc := time.UTC
			if cj.Spec.TimeZone != nil {
				if l, err := time.LoadLocation(*cj.Spec.TimeZone); err == nil {
					loc = l
				}
			}
			if t, ok := NextRun(cj.Spec.Schedule, now.In(loc)); ok {
				next = fmt.Sprintf(", next at %s (in %s)", t.Format("15:04 MST"), t.Sub(now).Round(time.Second))
			}
			runs = append(runs, fmt.Sprintf("the installed reconcile (CronJob %s/%s) takes it up at its next run, on schedule %q%s; %s", cj.Namespace, cj.Name, cj.Spec.Schedule, next, last))
		}
	}
	if len(runs) > 0 {
		return strings.Join(runs, "; ")
	}
	ns := namespaces[0]
	if unreadable {
		return fmt.Sprintf("to see when the installed reconcile runs: kubectl get cronjobs,deployments -n %s -l %s=reconcile (or ask an administrator)", ns, LabelComponent)
	}
	return fmt.Sprintf("no reconcile is installed in namespace %s (no CronJob or Deployment of \"kubectl catalog reconcile install\"): it waits until an administrator runs \"kubectl catalog reconcile\" or installs it", strings.Join(namespaces, " or "))
}

func ptrValue(p *int32) int32 {
	if p == nil {
		return 1
	}
	return *p
}
