package e2e

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/reconcile"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/test/broker"
	"github.com/kubectl-catalog/kubectl-catalog/test/controlplane"
)

// instEnv is one test's broker, registered namespace-scoped in its own namespace.
type instEnv struct {
	ns string
	b  *broker.Broker
	st *store.Store
}

// instSetupCatalog is instSetup with a catalog changed by edit first (nil: the demo
// catalog).
func instSetupCatalog(t *testing.T, edit func(*broker.Catalog)) *instEnv {
	t.Helper()
	opts := broker.Options{Username: "u", Password: "p", AsyncDelay: 300 * time.Millisecond, RetryAfter: -1}
	if edit != nil {
		c := broker.DefaultCatalog()
		edit(&c)
		opts.Catalog = &c
	}
	b := broker.NewTestBroker(t, opts)
	ns := cp.NewNamespace(t)
	admin, err := cp.Client(controlplane.AdminUser)
	assert.NilError(t, err)
	_, err = admin.CoreV1().Secrets(ns).Create(context.Background(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "broker-auth"}, StringData: map[string]string{"username": "u", "password": "p"},
	}, metav1.CreateOptions{})
	assert.NilError(t, err)
	r := instCatalog(t, ns, "register", "acme", "--url", b.URL(), "--basic-auth-secret", "broker-auth", "--scope", "namespace")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	return &instEnv{ns: ns, b: b, st: store.New(admin, nil)}
}

// instSetup starts a test broker and registers it, namespace-scoped, in a fresh
// namespace, so tests do not share brokers.
func instSetup(t *testing.T) (string, *broker.Broker, *store.Store) {
	t.Helper()
	b := broker.NewTestBroker(t, broker.Options{Username: "u", Password: "p", AsyncDelay: 300 * time.Millisecond, RetryAfter: -1})
	ns := cp.NewNamespace(t)
	admin, err := cp.Client(controlplane.AdminUser)
	assert.NilError(t, err)
	_, err = admin.CoreV1().Secrets(ns).Create(context.Background(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "broker-auth"}, StringData: map[string]string{"username": "u", "password": "p"},
	}, metav1.CreateOptions{})
	assert.NilError(t, err)
	r := instCatalog(t, ns, "register", "acme", "--url", b.URL(), "--basic-auth-secret", "broker-auth", "--scope", "namespace")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	return ns, b, store.New(admin, nil)
}

// instReconcileEnv are the test-only settings of the "kubectl catalog reconcile" runs
// that finish records: its clock runs 3 minutes ahead of the wall clock (past any claim
// a killed CLI left behind, ClaimTTL being 2 minutes, and past any backoff it scheduled,
// as a reconcile run a few minutes later would be), with short retries and broker
// timeouts so the tests stay fast. The test brokers are done with a request once it is
// answered, so the grace for the broker's work on a call a killed CLI sent is short too.
var instReconcileEnv = []string{
	cmdutil.TestClockSkewEnv + "=3m",
	cmdutil.TestRetryBackoffEnv + "=100ms,1s",
	cmdutil.TestBrokerTimeoutEnv + "=2s",
	cmdutil.TestMitigationGraceEnv + "=1s",
}

// instReconcile runs the real "kubectl catalog reconcile -n NS" until the record name
// is finished, and returns the state the record is left in, as the engine names it.
func instReconcile(t *testing.T, st *store.Store, ns, name string) engine.Result {
	t.Helper()
	r := instRun(t, ns, instReconcileEnv, "reconcile", asRunner, "--interval", "100ms", "--max-duration", "60s", "-o", "json")
	var sum reconcile.Summary
	assert.NilError(t, json.Unmarshal([]byte(r.Stdout), &sum), r.Stderr)
	steps := 0
	for _, it := range sum.Items {
		if it.Namespace == ns && it.Kind == v1alpha1.KindServiceInstance && it.Name == name {
			steps = it.Steps
		}
	}
	inst, err := st.Instances().Get(context.Background(), ns, name)
	var res engine.Result
	switch {
	case store.IsNotFound(err):
		res = engine.Result{State: engine.StateDeleted}
	case err != nil:
		t.Fatalf("reading %s/%s after reconcile: %v", ns, name, err)
	case inst.HasPendingWork():
		t.Fatalf("reconcile left %s/%s pending (exit %d):\n%s%s", ns, name, r.ExitCode, r.Stdout, r.Stderr)
	case meta.IsStatusConditionTrue(inst.Status.Conditions, v1alpha1.ConditionFailed):
		res = engine.Result{Instance: inst, State: engine.StateNeedsUser}
		// Exit 1 if this run met the terminal failure, 0 if an earlier command did.
	default:
		res = engine.Result{Instance: inst, State: engine.StateSettled}
		assert.Equal(t, r.ExitCode, 0, r.Stderr)
	}
	t.Logf("reconciled %s/%s in %d steps: %s", ns, name, steps, res.State)
	return res
}

// instAssertBrokerHolds checks that the broker holds exactly the given instance ids
// ("no orphan"), every one of them ready.
func instAssertBrokerHolds(t *testing.T, b *broker.Broker, ids ...string) {
	t.Helper()
	var held []string
	// An async deprovision confirmed by a 410 may still be finishing at the broker.
	deadline := time.Now().Add(slow(5 * time.Second))
	for {
		held = held[:0]
		for _, i := range b.Instances() {
			held = append(held, i.ID+"="+string(i.State))
		}
		if len(held) == len(ids) || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	want := []string{}
	for _, id := range ids {
		want = append(want, id+"="+string(broker.InstanceReady))
	}
	assert.DeepEqual(t, append([]string{}, held...), want)
}

// instConditionReason is the reason of a condition, "" when absent.
func instConditionReason(inst *v1alpha1.ServiceInstance, typ string) string {
	if c := meta.FindStatusCondition(inst.Status.Conditions, typ); c != nil {
		return string(c.Status) + "/" + c.Reason
	}
	return ""
}

// instDeletes counts the DELETEs of instance id that reached the broker, and of those the
// ones without an originating identity (orphan mitigation sends none).
func instDeletes(b *broker.Broker, id string) (all, mitigation int) {
	for _, r := range b.RequestsFor(broker.OpDeprovision) {
		if r.InstanceID != id {
			continue
		}
		all++
		if r.OriginatingIdentity == nil {
			mitigation++
		}
	}
	return all, mitigation
}

// instSetMaxPolling gives plan id a maximum_polling_duration of seconds, and lets a
// deprovision halt its provisions (or orphan mitigation of a stuck provision would be
// refused with ConcurrencyError forever).
func instSetMaxPolling(t *testing.T, c *broker.Catalog, id string, seconds int) {
	for i := range c.Services {
		for j := range c.Services[i].Plans {
			if p := &c.Services[i].Plans[j]; p.ID == id {
				p.MaximumPollingDuration = &seconds
				if c.Behaviours == nil {
					c.Behaviours = map[string]broker.PlanBehaviour{}
				}
				pb := c.Behaviours[id]
				pb.HaltProvisionOnDelete = true
				c.Behaviours[id] = pb
				return
			}
		}
	}
	t.Fatalf("no plan %s", id)
}

// snapshotRecords is every ConfigMap and Secret of the namespaces, by name, with its
// data and resourceVersion: what "nothing changed" compares.
func snapshotRecords(t *testing.T, namespaces ...string) map[string]string {
	t.Helper()
	ctx := context.Background()
	snap := map[string]string{}
	admin, err := cp.Client(controlplane.AdminUser)
	assert.NilError(t, err)
	for _, ns := range namespaces {
		cms, err := admin.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
		assert.NilError(t, err)
		for _, cm := range cms.Items {
			if strings.HasPrefix(cm.Name, "kube-root-ca") {
				continue
			}
			snap["cm/"+ns+"/"+cm.Name] = cm.ResourceVersion
		}
		ss, err := admin.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{})
		assert.NilError(t, err)
		for _, s := range ss.Items {
			snap["secret/"+ns+"/"+s.Name] = s.ResourceVersion
		}
	}
	return snap
}

func limitsAdmin(t *testing.T) kubernetes.Interface {
	t.Helper()
	admin, err := cp.Client(controlplane.AdminUser)
	assert.NilError(t, err)
	return admin
}
