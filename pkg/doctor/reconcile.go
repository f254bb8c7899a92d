package doctor

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/install"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/reconcile/shard"
)

// Reconcile reports each workload "reconcile install" made in the reconcile namespace
// (by its labels): every CronJob (one per shard), and every Deployment of --serve; only
// those of the installation or workload ReconcileName when it is set.
func Reconcile(ctx context.Context, c *Config) []Finding {
	ns := c.ReconcileNamespace
	sel := metav1.ListOptions{LabelSelector: install.WorkloadSelector}
	wanted := func(m metav1.Object) bool {
		if c.ReconcileName == "" || m.GetName() == c.ReconcileName {
			return true
		}
		inst, ok := m.GetLabels()[install.LabelInstallation]
		return ok && inst == c.ReconcileName
	}
	var found []Finding
	var failed []string
	cjs, err := c.Core.BatchV1().CronJobs(ns).List(ctx, sel)
	if err != nil {
		failed = append(failed, fmt.Sprintf("cannot list the CronJobs in namespace %s: %v", ns, err))
	} else {
		sort.Slice(cjs.Items, func(i, j int) bool { return cjs.Items[i].Name < cjs.Items[j].Name })
		for i := range cjs.Items {
			if wanted(&cjs.Items[i]) {
				found = append(found, CronJob(c.now(), &cjs.Items[i]))
			}
		}
	}
	ds, err := c.Core.AppsV1().Deployments(ns).List(ctx, sel)
	if err != nil {
		failed = append(failed, fmt.Sprintf("cannot list the Deployments in namespace %s: %v", ns, err))
	} else {
		sort.Slice(ds.Items, func(i, j int) bool { return ds.Items[i].Name < ds.Items[j].Name })
		for i := range ds.Items {
			if wanted(&ds.Items[i]) {
				found = append(found, Deployment(&ds.Items[i]))
			}
		}
	}
	var fs []Finding
	if len(failed) > 0 {
		fs = append(fs, Finding{Object: "reconcile", Severity: Warn, Detail: strings.Join(failed, "; "),
			Fix: "ask an administrator whether reconcile runs in the cluster (kubectl get cronjobs,deployments -A -l " + install.LabelComponent + "=reconcile)"})
	}
	fs = append(fs, found...)
	if len(found) == 0 && len(failed) == 0 {
		what := "of reconcile install in namespace " + ns
		if c.ReconcileName != "" {
			what = fmt.Sprintf("of reconcile install named %s in namespace %s", c.ReconcileName, ns)
		}
		fs = append(fs, Finding{Object: "reconcile", Severity: Warn, Detail: "not installed (no CronJob or Deployment " + what + ")",
			Fix: "run kubectl catalog reconcile -A regularly, or in the cluster: kubectl catalog reconcile install --image IMAGE"})
	}
	return fs
}

// CronJob reports one CronJob of "reconcile install" at time now: its schedule, last run
// and last success.
func CronJob(now time.Time, cj *batchv1.CronJob) Finding {
	ref := cj.Namespace + "/" + cj.Name
	ago := func(t *metav1.Time) string {
		if t == nil {
			return "never"
		}
		return now.Sub(t.Time).Round(time.Second).String() + " ago"
	}
	detail := fmt.Sprintf("CronJob %s, schedule %q; last run %s, last success %s", ref, cj.Spec.Schedule, ago(cj.Status.LastScheduleTime), ago(cj.Status.LastSuccessfulTime))
	f := Finding{Object: "reconcile " + cj.Name, Severity: OK, Detail: detail}
	logs := fmt.Sprintf("kubectl get jobs -n %s -l %s=reconcile, and kubectl logs -n %s job/JOB", cj.Namespace, install.LabelComponent, cj.Namespace)
	switch {
	case cj.Spec.Suspend != nil && *cj.Spec.Suspend:
		f.Severity, f.Detail = Warn, "suspended: "+detail
		f.Fix = fmt.Sprintf(`kubectl patch cronjob %s -n %s -p '{"spec":{"suspend":false}}'`, cj.Name, cj.Namespace)
	case cj.Status.LastScheduleTime != nil && cj.Status.LastSuccessfulTime == nil:
		f.Severity = Warn
		f.Detail += "; no run has succeeded yet"
		f.Fix = "see the runs: " + logs
	case cj.Status.LastScheduleTime != nil && cj.Status.LastSuccessfulTime != nil &&
		cj.Status.LastScheduleTime.Sub(cj.Status.LastSuccessfulTime.Time) > time.Hour:
		f.Severity = Warn
		f.Detail += "; the runs since the last success have failed"
		f.Fix = "see the runs: " + logs
	}
	return f
}

// Deployment reports one Deployment of "reconcile install --serve": how many of the
// replicas it asks for are ready.
func Deployment(d *appsv1.Deployment) Finding {
	want := ptrValue(d.Spec.Replicas)
	ready := d.Status.ReadyReplicas
	f := Finding{Object: "reconcile " + d.Name, Severity: OK,
		Detail: fmt.Sprintf("Deployment %s/%s (reconcile --serve), %d of %d replicas ready", d.Namespace, d.Name, ready, want)}
	pods := fmt.Sprintf("kubectl get pods -n %s -l %s=%s, and kubectl logs -n %s deployment/%s", d.Namespace, install.LabelInstance, d.Name, d.Namespace, d.Name)
	switch {
	case want == 0:
		f.Severity, f.Detail = Warn, "scaled to zero: "+f.Detail
		f.Fix = fmt.Sprintf("kubectl scale deployment %s -n %s --replicas 1, or kubectl catalog reconcile install --serve again", d.Name, d.Namespace)
	case ready < want:
		f.Severity = Warn
		f.Fix = "see the pods: " + pods
	}
	return f
}

// ShardGroups shows the members of each shard group of "reconcile --serve --shard-group"
// (their Leases in the catalog namespace), with a warning when a group has expired or
// malformed Leases, or a single live member while its Deployment asks for more replicas.
// Without Leases, nor a Deployment of a group, it finds nothing.
func ShardGroups(ctx context.Context, c *Config) []Finding {
	list, err := c.Core.CoordinationV1().Leases(c.CatalogNamespace).List(ctx, metav1.ListOptions{LabelSelector: shard.LabelShardGroup})
	if err != nil {
		return nil // not ours to see: the rbac check says what the user may do
	}
	byGroup := map[string][]coordinationv1.Lease{}
	for _, l := range list.Items {
		g := l.Labels[shard.LabelShardGroup]
		byGroup[g] = append(byGroup[g], l)
	}
	want, wantRef := groupReplicas(ctx, c)
	names := make([]string, 0, len(byGroup))
	for g := range byGroup {
		names = append(names, g)
	}
	for g := range want {
		if _, ok := byGroup[g]; !ok {
			names = append(names, g)
		}
	}
	sort.Strings(names)
	now := c.now()
	fs := make([]Finding, 0, len(names))
	for _, g := range names {
		f := shardGroup(c, g, shard.MembersOf(g, byGroup[g], now), now)
		if n, ok := want[g]; ok && n > 1 && f.live <= 1 {
			f.Severity = Warn
			f.Detail += fmt.Sprintf("; %s asks for %d replicas", wantRef[g], n)
			f.fixes = append(f.fixes, fmt.Sprintf("only %d live member: see the pods, kubectl get pods -n %s -l %s=reconcile, and their logs", f.live, c.ReconcileNamespace, install.LabelComponent))
		}
		f.Fix = strings.Join(f.fixes, "; ")
		fs = append(fs, f.Finding)
	}
	return fs
}

// groupReplicas are the replicas each shard group's Deployment asks for, where doctor may
// see them, and which Deployment asks, by group.
func groupReplicas(ctx context.Context, c *Config) (want map[string]int32, ref map[string]string) {
	want, ref = map[string]int32{}, map[string]string{}
	ds, err := c.Core.AppsV1().Deployments(c.ReconcileNamespace).List(ctx, metav1.ListOptions{LabelSelector: install.LabelComponent + "=reconcile"})
	if err != nil {
		return want, ref
	}
	for _, d := range ds.Items {
		for _, ctr := range d.Spec.Template.Spec.Containers {
			if i := slices.Index(ctr.Command, "--shard-group"); i >= 0 && i+1 < len(ctr.Command) {
				want[ctr.Command[i+1]] = ptrValue(d.Spec.Replicas)
				ref[ctr.Command[i+1]] = "Deployment " + d.Namespace + "/" + d.Name
			}
		}
	}
	return want, ref
}

// groupFinding is the finding of a shard group while it is being made.
type groupFinding struct {
	Finding
	live  int
	fixes []string
}

// shardGroup is the finding of shard group g with members at time now.
func shardGroup(c *Config, g string, members []shard.Member, now time.Time) groupFinding {
	var lines []string
	live, expired, malformed := 0, 0, 0
	for _, m := range members {
		state := "live"
		switch {
		case m.Malformed != "":
			state, malformed = "ignored: "+m.Malformed, malformed+1
		case !m.Live:
			state, expired = "expired", expired+1
		default:
			live++
		}
		renewed := "never renewed"
		if !m.RenewTime.IsZero() {
			renewed = "renewed " + now.Sub(m.RenewTime).Round(time.Second).String() + " ago"
		}
		lines = append(lines, fmt.Sprintf("%s (holder %s, %s, %s)", m.Lease, cmpOr(m.ID, "none"), renewed, state))
	}
	f := groupFinding{live: live, Finding: Finding{Object: "shard group " + g, Severity: OK,
		Detail: fmt.Sprintf("%d live members in namespace %s: %s", live, c.CatalogNamespace, strings.Join(lines, "; "))}}
	if len(members) == 0 {
		f.Detail = fmt.Sprintf("no member: no Lease in namespace %s", c.CatalogNamespace)
	}
	if expired > 0 || malformed > 0 {
		f.Severity = Warn
		f.fixes = append(f.fixes, fmt.Sprintf("expired Leases are members that stopped without deleting theirs (a killed pod); the live members took over their records and delete them %s after they expired (or: kubectl delete lease -n %s NAME). Malformed ones are ignored: find out who wrote them",
			shard.StaleLeaseAfter(shard.DefaultLeaseDuration), c.CatalogNamespace))
	}
	return f
}
