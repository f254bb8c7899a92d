package doctor

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/records"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// record is what Records needs of any record.
type record struct {
	deleted    *metav1.Time
	retry      *v1alpha1.RetryState
	conditions []metav1.Condition
	broker     *v1alpha1.Broker
}

func readRecord(ctx context.Context, c *Config, it records.PendingRecord) (record, error) {
	var rec record
	switch it.Kind {
	case v1alpha1.KindServiceInstance:
		x, err := c.Records.Instances().Get(ctx, it.Namespace, it.Name)
		if err != nil {
			return rec, err
		}
		rec.deleted, rec.retry, rec.conditions = x.DeletionTimestamp, x.Status.Retry, x.Status.Conditions
	case v1alpha1.KindServiceBinding:
		x, err := c.Records.Bindings().Get(ctx, it.Namespace, it.Name)
		if err != nil {
			return rec, err
		}
		rec.deleted, rec.retry, rec.conditions = x.DeletionTimestamp, x.Status.Retry, x.Status.Conditions
	case v1alpha1.KindBroker:
		x, err := c.Records.Brokers().Get(ctx, it.Namespace, it.Name)
		if err != nil {
			return rec, err
		}
		rec.deleted, rec.retry, rec.conditions, rec.broker = x.DeletionTimestamp, x.Status.Retry, x.Status.Conditions, x
	}
	return rec, nil
}

// noun is how a record kind is named on the command line.
func noun(kind string) string {
	switch kind {
	case v1alpha1.KindServiceInstance:
		return "instance"
	case v1alpha1.KindServiceBinding:
		return "binding"
	case v1alpha1.KindBroker:
		return "broker"
	}
	return strings.ToLower(kind)
}

// pendingWork is what Records learnt of the records with pending work.
type pendingWork struct {
	// stuck counts the records reported.
	stuck int
	// deleting counts the records being deleted, by namespace.
	deleting map[string]int
	// kept says, by namespace, why its brokers being deleted are kept.
	kept map[string][]string
}

// Records reports the records with pending work that are stuck (failed StuckAttempts
// times or more, failed for good, refused, or deleted more than StuckDeletion ago and
// still there), in every namespace or, when the user may not list them all, in the
// current one; then the namespaces stuck Terminating because of records (Terminating).
// A record that cannot be read is a finding of its own.
func Records(ctx context.Context, c *Config) []Finding {
	scope := "all namespaces"
	items, oversized, err := c.Records.ListPendingAndOversized(ctx, "")
	if records.IsForbidden(err) || apierrors.IsForbidden(err) {
		scope = "namespace " + c.Namespace
		items, oversized, err = c.Records.ListPendingAndOversized(ctx, c.Namespace)
	}
	if err != nil {
		return []Finding{{Object: "records", Severity: Warn, Detail: fmt.Sprintf("cannot list the pending records: %v", err),
			Fix: "ask for list permission on ConfigMaps"}}
	}
	now := c.now()
	w := pendingWork{deleting: map[string]int{}, kept: map[string][]string{}}
	var fs []Finding
	for _, it := range items {
		if it.Deleting {
			w.deleting[it.Namespace]++
		}
		if f, ok := pendingRecord(ctx, c, it, now, &w); ok {
			w.stuck++
			fs = append(fs, f)
		}
	}
	for _, o := range oversized {
		w.stuck++
		fs = append(fs, oversizedRecord(o))
	}
	fs = append(fs, Terminating(ctx, c, w.deleting, w.kept)...)
	if w.stuck == 0 {
		fs = append(fs, Finding{Object: "records", Severity: OK, Detail: fmt.Sprintf("none stuck in %s (%d with pending work)", scope, len(items))})
	}
	return fs
}

// pendingRecord is the finding of record it, if it is stuck (ok); it notes in w why a
// broker being deleted is kept.
func pendingRecord(ctx context.Context, c *Config, it records.PendingRecord, now time.Time, w *pendingWork) (f Finding, ok bool) {
	rec, err := readRecord(ctx, c, it)
	if records.IsNotFound(err) {
		return f, false
	}
	name := "record " + it.Namespace + "/" + noun(it.Kind) + "/" + it.Name
	describe := fmt.Sprintf("kubectl catalog describe %s %s -n %s", noun(it.Kind), it.Name, it.Namespace)
	if err != nil {
		return Finding{Object: name, Severity: Warn, Detail: fmt.Sprintf("cannot read it: %v", err), Fix: describe}, true
	}
	var problems []string
	sev := Warn
	fix := describe + "; then kubectl catalog reconcile -n " + it.Namespace
	if failed := meta.FindStatusCondition(rec.conditions, v1alpha1.ConditionFailed); failed != nil && failed.Status == metav1.ConditionTrue && rec.retry == nil {
		sev = Fail
		problems = append(problems, fmt.Sprintf("failed for good: %s: %s", failed.Reason, oneLine(failed.Message)))
		fix = describe + "; change its spec, or delete it"
		if it.Kind == v1alpha1.KindServiceInstance {
			fix = describe + `; change the plan or parameters ("kubectl catalog update"), or deprovision it`
		}
	}
	refused := meta.FindStatusCondition(rec.conditions, v1alpha1.ConditionRefused)
	if refused != nil && refused.Status == metav1.ConditionTrue {
		sev = Fail
		problems = append(problems, fmt.Sprintf("refused: %s: %s", refused.Reason, oneLine(refused.Message)))
		fix = describe + "; nothing is sent to a broker for it: its owner fixes what it names or writes it again with kubectl catalog, or it is deleted (docs/security.md)"
	} else if rec.retry != nil && rec.retry.Attempts >= StuckAttempts {
		p := fmt.Sprintf("%d failed attempts, last: %s", rec.retry.Attempts, oneLine(rec.retry.LastError))
		if rec.retry.NextRetryAt != nil {
			p += ", next retry at " + rec.retry.NextRetryAt.UTC().Format(time.RFC3339)
		}
		problems = append(problems, p)
	}
	if rec.deleted != nil {
		waits := waitsFor(ctx, c, it, rec, w)
		if age := now.Sub(rec.deleted.Time); age > StuckDeletion {
			problems = append(problems, fmt.Sprintf("deleted %s ago and still waiting for %s", age.Round(time.Minute), waits))
			if it.Kind == v1alpha1.KindServiceInstance {
				fix += fmt.Sprintf(`; if its broker is gone for good: kubectl catalog deprovision %s -n %s --abandon --yes`, it.Name, it.Namespace)
			}
		}
	}
	if len(problems) == 0 {
		return f, false
	}
	return Finding{Object: name, Severity: sev, Detail: strings.Join(problems, "; "), Fix: fix}, true
}

// waitsFor says what record it, being deleted, waits for: a namespace-scoped broker is
// kept until its instances are deprovisioned (noted in w.kept), the rest wait for the
// broker.
func waitsFor(ctx context.Context, c *Config, it records.PendingRecord, rec record, w *pendingWork) string {
	if rec.broker == nil || !slices.Contains(rec.broker.Finalizers, store.Finalizer) {
		return "the broker"
	}
	insts, err := c.Records.InstancesOf(ctx, rec.broker)
	switch {
	case err != nil:
		return fmt.Sprintf("its instances (which cannot be listed: %v)", err)
	case len(insts) > 0:
		w.kept[it.Namespace] = append(w.kept[it.Namespace], fmt.Sprintf("broker %q is %s", it.Name, engine.KeptForInstances(insts)))
		return "its instances: " + engine.KeptForInstances(insts)
	}
	return "reconcile to remove its finalizer"
}

// Terminating reports the namespaces being deleted that hold records (deleting counts
// them by namespace): they stay Terminating until reconcile has finished those records.
// A namespace-scoped broker among them is kept until its instances are deprovisioned
// (kept says which instances, by namespace).
func Terminating(ctx context.Context, c *Config, deleting map[string]int, kept map[string][]string) []Finding {
	nss := make([]string, 0, len(deleting))
	for ns := range deleting {
		nss = append(nss, ns)
	}
	sort.Strings(nss)
	var fs []Finding
	for _, ns := range nss {
		n, err := c.Core.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		if err != nil || n.Status.Phase != corev1.NamespaceTerminating {
			continue
		}
		detail := fmt.Sprintf("Terminating, held by %s that reconcile must first delete at the brokers",
			plural(deleting[ns], "catalog record", "catalog records"))
		if len(kept[ns]) > 0 {
			detail += "; " + strings.Join(kept[ns], "; ")
		}
		fs = append(fs, Finding{Object: "namespace " + ns, Severity: Warn, Detail: detail,
			Fix: "run kubectl catalog reconcile -n " + ns})
	}
	return fs
}

// oversizedRecord is the finding of a record reconcile does not read because its labels
// and annotations are over store.MaxRecordMetadataBytes: whatever it waits for never
// happens until they are trimmed.
func oversizedRecord(o records.OversizedRecord) Finding {
	cm := store.ConfigMapName(o.Kind, o.Name)
	return Finding{
		Object:   "record " + o.Namespace + "/" + noun(o.Kind) + "/" + o.Name,
		Severity: Warn,
		Detail: fmt.Sprintf("its labels and annotations hold %d KiB, over the %d KiB the catalog reads: reconcile neither reads it nor finishes its work, and no verb can change it",
			o.Bytes>>10, store.MaxRecordMetadataBytes>>10),
		Fix: fmt.Sprintf("remove the labels or annotations that are not the catalog's: kubectl get configmap %s -n %s -o yaml, then kubectl label (or annotate) configmap %s -n %s KEY-", cm, o.Namespace, cm, o.Namespace),
	}
}
