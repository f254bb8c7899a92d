package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
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

// instKillPoint is where the CLI is killed.
type instKillPoint string

const (
	// instKillBefore: the write-ahead is stored, the broker not called yet (pause hook).
	instKillBefore = instKillPoint(engine.HookBeforeBrokerCall)
	// instKillDuring: the broker did the work and hangs without answering.
	instKillDuring instKillPoint = "during-broker-call"
	// instKillAfter: the broker answered, the outcome is not stored yet (pause hook).
	instKillAfter = instKillPoint(engine.HookAfterBrokerCall)
)

// instStartKillable starts the plugin binary itself (not through kubectl, so the process
// signalled is the CLI) and returns it with a channel of its stderr lines.
func instStartKillable(t *testing.T, ns string, env []string, args ...string) (*exec.Cmd, <-chan string) {
	t.Helper()
	cmd := exec.Command(filepath.Join(binDir, "kubectl-catalog"), append([]string{"-n", ns}, args...)...)
	cmd.Env = append(instEnviron(t), env...)
	stderr, err := cmd.StderrPipe()
	assert.NilError(t, err)
	assert.NilError(t, cmd.Start())
	lines := make(chan string, 100)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			t.Logf("cli: %s", sc.Text())
			lines <- sc.Text()
		}
	}()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	return cmd, lines
}

// ccKillAtPause starts "kubectl-catalog -n NS ARGS" with the test pause hook set to point,
// waits until it reports being paused there (at its first broker call of that kind) and
// SIGKILLs it. settle is how long to let other workers of the same process (a reconcile
// drives several records at once) reach their own pause before the kill.
func ccKillAtPause(t *testing.T, ns string, env []string, point engine.HookPoint, settle time.Duration, args ...string) {
	t.Helper()
	env = append(slices.Clone(env), cmdutil.TestPauseEnv+"="+string(point))
	cmd, lines := instStartKillable(t, ns, env, args...)
	ccAwaitLine(t, lines, "test hook: paused at "+string(point), 45*time.Second)
	if settle > 0 {
		time.Sleep(settle)
	}
	ccKill(t, cmd)
}

// ccKill SIGKILLs the command and checks that the signal, not the command, ended it.
func ccKill(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	assert.NilError(t, cmd.Process.Signal(syscall.SIGKILL))
	_ = cmd.Wait()
	assert.Equal(t, cmd.ProcessState.Sys().(syscall.WaitStatus).Signal(), syscall.SIGKILL)
}

// ccReconcileUntilSettled runs the real "kubectl catalog reconcile -n NS" with env until
// no record of the namespace has work left, at most runs times, and fails the test if
// something is still pending then. Each run is itself bounded by --max-duration.
func ccReconcileUntilSettled(t *testing.T, st *store.Store, ns string, env []string, runs int) []reconcile.Summary {
	t.Helper()
	var sums []reconcile.Summary
	for range runs {
		r := instRun(t, ns, env, "reconcile", asRunner, "--interval", "100ms", "--max-duration", "45s", "-o", "json")
		var sum reconcile.Summary
		assert.NilError(t, json.Unmarshal([]byte(r.Stdout), &sum), "exit %d: %s", r.ExitCode, r.Stderr)
		sums = append(sums, sum)
		if len(ccPending(t, st, ns)) == 0 {
			return sums
		}
	}
	t.Fatalf("after %d reconcile runs, records of %s are still pending: %v", runs, ns, ccPending(t, st, ns))
	return nil
}

// ccWant is what a namespace must hold once everything settled: per record name,
// "ready" (settled and held by the broker) or "gone" (record deleted, nothing at the
// broker). Records not named must not exist.
type ccWant struct {
	instances, bindings map[string]string
}

// ccAssertConverged checks the invariants every namespace must meet once nothing is
// pending, whatever was killed on the way:
//   - the broker holds exactly the instances whose records say they are provisioned,
//     and exactly the bindings whose records say they are bound (no orphan, nothing
//     forgotten), each of them ready and, for bindings, of the instance the record names;
//   - no record is pending and none is left with a deletion timestamp (a finalizer that
//     was never removed);
//   - every ready binding has its Secret, owned by it, with the broker's credentials;
//   - no Secret of the namespace outlives its binding (broker-auth aside);
//   - the records are those of want, in the state want gives.
func ccAssertConverged(t *testing.T, e *instEnv, want ccWant) {
	t.Helper()
	ctx := context.Background()
	admin, err := cp.Client(controlplane.AdminUser)
	assert.NilError(t, err)
	insts, err := e.st.Instances().List(ctx, e.ns, store.Filter{})
	assert.NilError(t, err)
	bnds, err := e.st.Bindings().List(ctx, e.ns, store.Filter{})
	assert.NilError(t, err)

	brokerInsts, brokerBnds := ccBrokerSettled(e, insts, bnds)
	instIDs := ccAssertInstances(t, insts, brokerInsts)
	bySecret := ccAssertBindings(t, e, admin, bnds, brokerBnds, instIDs)

	secrets, err := admin.CoreV1().Secrets(e.ns).List(ctx, metav1.ListOptions{})
	assert.NilError(t, err)
	for _, s := range secrets.Items {
		if s.Name == "broker-auth" || s.Type == corev1.SecretTypeServiceAccountToken {
			continue
		}
		b, ok := bySecret[s.Name]
		assert.Assert(t, ok && store.OwnedBy(&s, b), "Secret %s has no ready binding owning it", s.Name)
	}

	ccAssertNames(t, insts, bnds, want)
	assert.Assert(t, is.Len(e.b.Violations(), 0))
}

// ccBrokerSettled is what the broker holds once it holds as many instances and bindings
// as the records say are provisioned and bound, or after a few seconds: an async delete
// confirmed by a 410 while polling may still be finishing at the broker.
func ccBrokerSettled(e *instEnv, insts []*v1alpha1.ServiceInstance, bnds []*v1alpha1.ServiceBinding) ([]broker.Instance, []broker.Binding) {
	var brokerInsts []broker.Instance
	var brokerBnds []broker.Binding
	expected := 0
	for _, i := range insts {
		if i.Status.Provisioned != nil {
			expected++
		}
	}
	expectedB := 0
	for _, b := range bnds {
		if b.Status.Bound != nil {
			expectedB++
		}
	}
	deadline := time.Now().Add(slow(5 * time.Second))
	for {
		brokerInsts, brokerBnds = e.b.Instances(), e.b.Bindings()
		if (len(brokerInsts) == expected && len(brokerBnds) == expectedB) || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	return brokerInsts, brokerBnds
}

// ccAssertInstances checks that every instance record is settled and that the broker
// holds exactly the provisioned ones; it returns their ids by name.
func ccAssertInstances(t *testing.T, insts []*v1alpha1.ServiceInstance, brokerInsts []broker.Instance) map[string]string {
	t.Helper()
	gotInst, wantInst := map[string]string{}, map[string]string{}
	for _, x := range brokerInsts {
		gotInst[x.ID] = string(x.State)
	}
	instIDs := map[string]string{}
	for _, i := range insts {
		instIDs[i.Name] = i.CurrentExternalID()
		assert.Assert(t, i.DeletionTimestamp == nil, "instance %s is left deleting (finalizers %v): %+v", i.Name, i.Finalizers, i.Status)
		assert.Assert(t, !i.HasPendingWork(), "instance %s is pending: %+v", i.Name, i.Status)
		if i.Status.Provisioned != nil {
			wantInst[i.CurrentExternalID()] = string(broker.InstanceReady)
		} else {
			assert.Equal(t, instConditionReason(i, v1alpha1.ConditionFailed), "True/"+engine.ReasonProvisionRejected,
				"instance %s is settled without being provisioned", i.Name)
		}
	}
	assert.DeepEqual(t, gotInst, wantInst)
	return instIDs
}

// ccAssertBindings checks that every binding record is settled, that the broker holds
// exactly the bound ones, and that each ready one's Secret holds the broker's
// credentials; it returns the ready bindings by Secret name.
func ccAssertBindings(t *testing.T, e *instEnv, admin kubernetes.Interface, bnds []*v1alpha1.ServiceBinding, brokerBnds []broker.Binding, instIDs map[string]string) map[string]*v1alpha1.ServiceBinding {
	t.Helper()
	ctx := context.Background()
	gotBnd, wantBnd := map[string]string{}, map[string]string{}
	for _, x := range brokerBnds {
		gotBnd[x.ID] = string(x.State) + " of " + x.InstanceID
	}
	bySecret := map[string]*v1alpha1.ServiceBinding{}
	for _, b := range bnds {
		assert.Assert(t, b.DeletionTimestamp == nil, "binding %s is left deleting (finalizers %v): %+v", b.Name, b.Finalizers, b.Status)
		assert.Assert(t, !b.HasPendingWork(), "binding %s is pending: %+v", b.Name, b.Status)
		if b.Status.Bound == nil {
			assert.Equal(t, meta.IsStatusConditionTrue(b.Status.Conditions, v1alpha1.ConditionFailed), true,
				"binding %s is settled without being bound", b.Name)
			continue
		}
		assert.Equal(t, b.Status.Bound.BindingID, b.CurrentExternalID(), "binding %s", b.Name)
		wantBnd[b.Status.Bound.BindingID] = string(broker.BindingReady) + " of " + instIDs[b.Spec.InstanceName]
		assert.Equal(t, b.Status.Phase, v1alpha1.PhaseReady, "binding %s", b.Name)
		bySecret[b.Spec.SecretName] = b
		s, err := admin.CoreV1().Secrets(e.ns).Get(ctx, b.Spec.SecretName, metav1.GetOptions{})
		assert.NilError(t, err, "the Secret of ready binding %s", b.Name)
		assert.Assert(t, store.OwnedBy(s, b), "Secret %s is not owned by binding %s", s.Name, b.Name)
		held, ok := e.b.Binding(b.CurrentExternalID())
		if assert.Check(t, ok, "the broker does not hold binding %s", b.Name) {
			for _, k := range []string{"username", "password", "uri"} {
				assert.Equal(t, string(s.Data[k]), fmt.Sprint(held.Credentials[k]), "binding %s: key %s of its Secret is not the broker's", b.Name, k)
			}
		}
	}
	assert.DeepEqual(t, gotBnd, wantBnd)
	return bySecret
}

// ccAssertNames checks that the records left are those want expects, and the instances
// it expects ready are.
func ccAssertNames(t *testing.T, insts []*v1alpha1.ServiceInstance, bnds []*v1alpha1.ServiceBinding, want ccWant) {
	t.Helper()
	names := func(m map[string]string) []string {
		out := []string{}
		for n, st := range m {
			if st != "gone" {
				out = append(out, n)
			}
		}
		sort.Strings(out)
		return out
	}
	var haveI, haveB []string
	for _, i := range insts {
		haveI = append(haveI, i.Name)
	}
	for _, b := range bnds {
		haveB = append(haveB, b.Name)
	}
	sort.Strings(haveI)
	sort.Strings(haveB)
	assert.DeepEqual(t, append([]string{}, haveI...), names(want.instances))
	assert.DeepEqual(t, append([]string{}, haveB...), names(want.bindings))
	for _, i := range insts {
		if want.instances[i.Name] == "ready" {
			assert.Equal(t, i.Status.Phase, v1alpha1.PhaseReady, "instance %s", i.Name)
		}
	}
}

// ccAwaitLine reads stderr lines until one contains want.
func ccAwaitLine(t *testing.T, lines <-chan string, want string, timeout time.Duration) {
	t.Helper()
	deadline := time.After(slow(timeout))
	for {
		select {
		case l, ok := <-lines:
			assert.Assert(t, ok, "the command ended before printing %q", want)
			if strings.Contains(l, want) {
				return
			}
		case <-deadline:
			t.Fatalf("the command did not print %q within %s", want, timeout)
		}
	}
}

// ccPending lists the records of ns that still have work ("kind/name: phase").
func ccPending(t *testing.T, st *store.Store, ns string) []string {
	t.Helper()
	ctx := context.Background()
	var out []string
	insts, err := st.Instances().List(ctx, ns, store.Filter{})
	assert.NilError(t, err)
	for _, i := range insts {
		if i.HasPendingWork() {
			out = append(out, fmt.Sprintf("instance/%s: %s", i.Name, i.Status.Phase))
		}
	}
	bnds, err := st.Bindings().List(ctx, ns, store.Filter{})
	assert.NilError(t, err)
	for _, b := range bnds {
		if b.HasPendingWork() {
			out = append(out, fmt.Sprintf("binding/%s: %s", b.Name, b.Status.Phase))
		}
	}
	return out
}
