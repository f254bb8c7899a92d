package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/reconcile"
	"github.com/kubectl-catalog/kubectl-catalog/test/broker"
)

// A plain reconcile by hand finishes what an earlier command left with its next step a
// few seconds ahead: it waits for it within its retry horizon (10 s), and takes it up no
// sooner than the record says. Before, the run reported "waiting until" and ended at
// once, and the instance stayed Provisioning.

// idleReconcile runs a plain "kubectl catalog reconcile -n NS" (as the tests' runner, the
// default horizon, --max-duration 30s: a run that idled until it ran out would show) and
// checks that it ended by itself, with nothing left, in seconds.
func idleReconcile(t *testing.T, ns string, env []string, args ...string) reconcile.Summary {
	t.Helper()
	start := time.Now()
	sum, r := recRun(t, ns, env, append([]string{"--max-duration", "30s"}, args...)...)
	took := time.Since(start)
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	assert.Assert(t, !sum.TimeUp, "the run idled until --max-duration: %+v", sum.Items)
	assert.Assert(t, took < 20*time.Second, "took %s", took)
	for _, it := range sum.Items {
		assert.Equal(t, it.Outcome, reconcile.Done, "%s %s: %s %s", it.Kind, it.Name, it.OutcomeText(), it.Detail)
	}
	return sum
}

// idleAssertReady checks that instance name is Ready, with nothing pending.
func idleAssertReady(t *testing.T, e *instEnv, name string) {
	t.Helper()
	inst, err := e.st.Instances().Get(context.Background(), e.ns, name)
	assert.NilError(t, err)
	assert.Equal(t, inst.Status.Phase, v1alpha1.PhaseReady, "%+v", inst.Status)
	assert.Assert(t, !inst.HasPendingWork(), "%+v", inst.Status)
	g := instCatalog(t, e.ns, "get", "instances")
	assert.Assert(t, is.Regexp(`(?m)^`+name+` .*Ready`, g.Stdout))
}

// A provision stopped with Ctrl-C while the broker works on it (its next poll set
// seconds ahead): one plain reconcile polls when the poll is due and the instance is
// Ready.
func TestReconcileByHand_FinishesAProvisionStoppedWithCtrlC(t *testing.T) {
	t.Parallel()
	e := instSetupCatalog(t, nil)
	p := startCatalog(t, e.ns, "provision", "cache", "--class", "postgresql", "--plan", "standard", "--wait", "--interval", "5s")
	var next time.Time
	instWaitFor(t, "the broker to accept the provision", 30*time.Second, func() bool {
		inst, err := e.st.Instances().Get(context.Background(), e.ns, "cache")
		if err != nil || inst.Status.InFlight == nil || !inst.Status.InFlight.Async || inst.Status.InFlight.NextPollAt == nil {
			return false
		}
		next = inst.Status.InFlight.NextPollAt.Time
		return true
	})
	assert.Equal(t, p.interrupt(t), cmdutil.ExitInterrupted, p.stderr.String())
	assert.Equal(t, len(e.b.RequestsFor(broker.OpLastOperation)), 0, "stopped before its first poll")

	idleReconcile(t, e.ns, nil)

	idleAssertReady(t, e, "cache")
	polls := e.b.RequestsFor(broker.OpLastOperation)
	assert.Assert(t, len(polls) >= 1)
	assert.Assert(t, !polls[0].Time.Before(next), "polled at %s, before %s, when the record said", polls[0].Time, next)
}

// The broker paces its polls with Retry-After (5 s): the run waits that long before it
// polls again, however its poll was set before the run, and finishes the provision.
func TestReconcileByHand_WaitsForTheBrokersRetryAfter(t *testing.T) {
	t.Parallel()
	e := instSetupCatalog(t, nil)
	// The operation outlasts the wait: its time (4 s) leaves room for the first poll
	// (200 ms after the 202) on a busy machine, and ends before the second (5 s later).
	e.b.SetAsyncDelay(9 * time.Second)
	_, err := e.b.InjectFault(broker.Fault{Op: broker.OpLastOperation, When: broker.After, Action: broker.ActionRespond,
		Header: map[string]string{"Retry-After": "5"}})
	assert.NilError(t, err)
	r := instCatalog(t, e.ns, "provision", "cache", "--class", "postgresql", "--plan", "standard", "--wait", "--interval", "200ms", "--timeout", "4s")
	assert.Equal(t, r.ExitCode, cmdutil.ExitTimeout, r.Stderr)
	first := e.b.RequestsFor(broker.OpLastOperation)
	assert.Equal(t, len(first), 1, "one poll, answered in progress with Retry-After: 5")
	assert.DeepEqual(t, first[0].ResponseHeader["Retry-After"], []string{"5"})

	idleReconcile(t, e.ns, nil, "--interval", "200ms")

	idleAssertReady(t, e, "cache")
	polls := e.b.RequestsFor(broker.OpLastOperation)
	assert.Assert(t, len(polls) >= 2)
	gap := polls[1].Time.Sub(polls[0].Time)
	assert.Assert(t, gap >= 5*time.Second, "polled again %s after the broker asked for 5 s", gap)
}

// A synchronous provision the broker refused for now (429 Too Many Requests): its retry
// (the backoff, about 2 s) was set by the command, and one plain reconcile makes it when
// it is due.
// (The run's clock runs 2 s behind, so that the retry is not due when it starts even on
// a busy machine.)
func TestReconcileByHand_RetriesAFailedProvisionWhenItsBackoffIsOver(t *testing.T) {
	t.Parallel()
	e := instSetupCatalog(t, nil)
	_, err := e.b.InjectFault(broker.Fault{Op: broker.OpProvision, Action: broker.ActionRespond, Status: 429})
	assert.NilError(t, err)
	r := instCatalog(t, e.ns, "provision", "db", "--class", "postgresql", "--plan", "hobby")
	assert.Equal(t, r.ExitCode, 1, r.Stderr)
	assert.Assert(t, is.Contains(r.Stderr, "it will be retried"))
	inst, err := e.st.Instances().Get(context.Background(), e.ns, "db")
	assert.NilError(t, err)
	assert.Assert(t, inst.Status.Retry != nil && inst.Status.Retry.NextRetryAt != nil, "%+v", inst.Status)
	retryAt := inst.Status.Retry.NextRetryAt.Time

	idleReconcile(t, e.ns, []string{cmdutil.TestClockSkewEnv + "=-2s"})

	idleAssertReady(t, e, "db")
	reqs := e.b.RequestsFor(broker.OpProvision)
	assert.Equal(t, len(reqs), 2)
	assert.Assert(t, !reqs[1].Time.Before(retryAt), "retried at %s, before %s, when the backoff ended", reqs[1].Time, retryAt)
}

// The broker answers 500 to the unbind that "deprovision --yes" sends for the
// instance's binding. deprovision says so (exit 1, the binding, the broker's answer and
// the command that finishes it), not that the broker is working on the instance; then,
// the broker healthy again, one plain reconcile unbinds the binding once its backoff is
// over and deprovisions the instance, in seconds: the instance is not stepped every
// poll interval until --max-duration while nobody drives its binding. For a synchronous
// and an asynchronous plan.
func TestReconcileByHand_FinishesADeprovisionWhoseUnbindFailed(t *testing.T) {
	t.Parallel()
	for _, plan := range []string{"hobby", "ha"} {
		t.Run(plan, func(t *testing.T) {
			t.Parallel()
			e := bndSetup(t, plan, nil)
			r := e.run(t, "bind", "db", "--name", "app", "--wait", "--interval", "200ms")
			assert.Equal(t, r.ExitCode, 0, r.Stderr)
			_, err := e.b.InjectFault(broker.Fault{Op: broker.OpUnbind, Action: broker.ActionRespond, Status: 500, Description: "database unreachable"})
			assert.NilError(t, err)

			r = e.run(t, "deprovision", "db", "--yes")

			assert.Equal(t, r.ExitCode, 1, r.Stderr)
			for _, want := range []string{
				`instance "db" is marked for deletion but not deprovisioned yet`,
				`the unbind of its binding "app" failed (UnbindCallFailed: `,
				"500", "database unreachable",
				`"kubectl catalog reconcile -n ` + e.ns + `" unbinds it, then deprovisions the instance`,
				`"kubectl catalog describe binding app -n ` + e.ns + `"`,
			} {
				assert.Check(t, is.Contains(r.Stderr, want))
			}
			assert.Check(t, !strings.Contains(r.Stderr, "working on"), r.Stderr)
			assert.Equal(t, len(e.b.RequestsFor(broker.OpDeprovision)), 0)
			b := e.binding(t, "app")
			assert.Assert(t, b.DeletionTimestamp != nil && b.Status.Retry != nil && b.Status.Retry.NextRetryAt != nil, "%+v", b.Status)
			retryAt := b.Status.Retry.NextRetryAt.Time
			e.b.ClearRequests()

			sum := idleReconcile(t, e.ns, nil, "--interval", "200ms")

			it, ok := recItem(sum, e.ns, "db")
			assert.Assert(t, ok, "%+v", sum.Items)
			// Once to find the binding still there, once more when it is gone (twice if
			// it went while the first step looked), then the deprovision and its polls.
			polls := len(e.b.RequestsFor(broker.OpLastOperation))
			assert.Assert(t, it.Steps <= 3+polls, "the instance was stepped %d times, for %d polls", it.Steps, polls)
			bit, ok := recKindItem(sum, v1alpha1.KindServiceBinding, e.ns, "app")
			assert.Assert(t, ok, "%+v", sum.Items)
			assert.Equal(t, bit.Outcome, reconcile.Done)
			unbinds := e.b.RequestsFor(broker.OpUnbind)
			assert.Equal(t, len(unbinds), 1)
			assert.Assert(t, !unbinds[0].Time.Before(retryAt), "unbound again at %s, before %s, when the backoff ended", unbinds[0].Time, retryAt)
			recAssertBindingGone(t, e.ns, "app")
			recAssertGone(t, e.st, e.ns, "db")
			instAssertBrokerHolds(t, e.b)
			assert.Equal(t, len(e.b.Bindings()), 0)
		})
	}
}

// When the binding an instance being deleted waits for cannot progress within the run
// (its retry is due beyond the horizon: the run's clock runs a minute behind), a plain
// reconcile ends at once and says what each waits for, instead of stepping the instance
// every poll interval until --max-duration.
func TestReconcileByHand_EndsAtOnceWhenTheBindingAnInstanceWaitsForCannotProgress(t *testing.T) {
	t.Parallel()
	e := bndSetup(t, "hobby", nil)
	r := e.run(t, "bind", "db", "--name", "app", "--wait", "--interval", "200ms")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	_, err := e.b.InjectFault(broker.Fault{Op: broker.OpUnbind, Action: broker.ActionRespond, Status: 500})
	assert.NilError(t, err)
	r = e.run(t, "deprovision", "db", "--yes")
	assert.Equal(t, r.ExitCode, 1, r.Stderr)
	b := e.binding(t, "app")
	assert.Assert(t, b.Status.Retry != nil && b.Status.Retry.NextRetryAt != nil, "%+v", b.Status)
	e.b.ClearRequests()

	start := time.Now()
	sum, r := recRun(t, e.ns, []string{cmdutil.TestClockSkewEnv + "=-1m"}, "--max-duration", "20s", "--interval", "200ms")
	took := time.Since(start)

	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	assert.Assert(t, took < 10*time.Second, "took %s", took)
	bit, ok := recKindItem(sum, v1alpha1.KindServiceBinding, e.ns, "app")
	assert.Assert(t, ok, "%+v", sum.Items)
	assert.Equal(t, bit.OutcomeText(), "waiting until "+b.Status.Retry.NextRetryAt.UTC().Format(time.RFC3339), bit.Detail)
	it, ok := recItem(sum, e.ns, "db")
	assert.Assert(t, ok, "%+v", sum.Items)
	assert.Equal(t, it.Outcome, reconcile.Waiting, it.Detail)
	assert.Assert(t, is.Contains(it.Detail, "waiting for its bindings (app) to be unbound first"))
	assert.Assert(t, it.Steps <= 2, "the instance was stepped %d times", it.Steps)
	assert.Equal(t, len(e.b.Requests()), 0, "nothing was due at the broker")
	assert.Assert(t, is.Contains(r.Stderr, "instance "+e.ns+"/db: waiting: waiting for its bindings (app)"), r.Stderr)
}
