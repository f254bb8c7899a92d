package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/test/broker"
)

// rtEnv is the environment of the reconcile runs of these tests: broker calls bounded,
// and the clock ahead of the wall clock, so that what the verbs left (a poll, a retry)
// is due when the run starts, as it would be for a run a few minutes later.
// The skew is short: the engine polls an operation at a tenth of its age, and a poll
// interval beyond the run's retry horizon ends the run.
var rtEnv = []string{cmdutil.TestBrokerTimeoutEnv + "=30s", cmdutil.TestClockSkewEnv + "=10s"}

// rtWaitExit waits for the command to exit and returns its exit code, then waits for
// the terminal to show want (what it printed last may still be on its way).
func rtWaitExit(t *testing.T, cmd *exec.Cmd, term *instTerminal, timeout time.Duration, want string) int {
	t.Helper()
	_ = term.exited(cmd, timeout, fmt.Sprintf("reconcile did not finish within %s", timeout))
	term.waitShows(want)
	return cmd.ProcessState.ExitCode()
}

// rtAsyncInstances provisions instances of the asynchronous plan without waiting: each
// is left with its operation in flight, for reconcile to poll.
func rtAsyncInstances(t *testing.T, e *instEnv, names ...string) {
	t.Helper()
	for _, n := range names {
		r := instCatalog(t, e.ns, "provision", n, "--class", "postgresql", "--plan", "standard")
		assert.Equal(t, r.ExitCode, 0, r.Stderr)
		inst, err := e.st.Instances().Get(context.Background(), e.ns, n)
		assert.NilError(t, err)
		assert.Assert(t, inst.Status.InFlight != nil && inst.Status.InFlight.Async, "%s: %+v", n, inst.Status)
	}
}

// rtInstanceOf is the name of the instance of ns whose OSB id is id.
func rtInstanceOf(t *testing.T, e *instEnv, id string) string {
	t.Helper()
	insts, err := e.st.Instances().List(context.Background(), e.ns, store.Filter{})
	assert.NilError(t, err)
	for _, i := range insts {
		if slices.Contains(i.Status.ExternalIDs, id) || i.Spec.ExternalID == id {
			return i.Name
		}
	}
	t.Fatalf("no instance of %s has the OSB id %s", e.ns, id)
	return ""
}

var rtTimestamp = `\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ`

// On a terminal, reconcile redraws one line while it works (the counts, the record and
// its step, the time elapsed), clears it, then prints the summary.
func TestReconcileTerminal_LiveLineOnATerminal(t *testing.T) {
	t.Parallel()
	e := instSetupCatalog(t, nil)
	rtAsyncInstances(t, e, "db")
	// The poll takes 2.5 s: time for the line to be redrawn as the time goes.
	_, err := e.b.InjectFault(broker.Fault{Op: broker.OpLastOperation, Action: broker.ActionDelay, Delay: broker.Duration(2500 * time.Millisecond)})
	assert.NilError(t, err)

	cmd, term := startInPTY(t, e.ns, rtEnv, 200, "reconcile", asRunner)
	code := rtWaitExit(t, cmd, term, 60*time.Second, "1 record: 1 done")
	assert.Equal(t, code, 0)

	out := term.text()
	const clear = "\r\x1b[K"
	lines := regexp.MustCompile(`\r\x1b\[Kreconcile (\d+)s: (\d+)/(\d+) finished, (\d+) in progress, (\d+) waiting([^\r\n]*)`).FindAllStringSubmatch(out, -1)
	assert.Assert(t, len(lines) >= 4, "the live line is drawn and redrawn: %q", out)
	elapsed := map[string]bool{}
	var working bool
	for _, l := range lines {
		elapsed[l[1]] = true
		if l[3] == "0" && l[2] == "0" && l[4] == "0" && l[5] == "0" {
			// Drawn before the list of pending records came back (a slow API server).
			continue
		}
		assert.Equal(t, l[3], "1", "one record: %q", l[0])
		if l[4] == "1" && strings.Contains(l[6], "; instance "+e.ns+"/db: poll the operation") {
			working = true
		}
	}
	assert.Assert(t, len(elapsed) >= 2, "the elapsed time moves on: %v", elapsed)
	assert.Assert(t, working, "the line names the record and its step: %q", out)
	// The line is cleared before the table, which follows it.
	last := strings.LastIndex(out, clear)
	table := strings.Index(out, "NAMESPACE")
	assert.Assert(t, last >= 0 && table > last, "cleared (at %d) before the table (at %d): %q", last, table, out)
	assert.Assert(t, !strings.Contains(out[last+len(clear):], "reconcile "), "nothing drawn after the clear: %q", out[last:])
	assert.Assert(t, regexp.MustCompile(e.ns+` +ServiceInstance +db +done`).MatchString(out[table:]), out[table:])
	// No log line on a terminal without -v.
	assert.Assert(t, !regexp.MustCompile(rtTimestamp+` instance`).MatchString(out), out)
}

// When stderr is not a terminal, reconcile logs plain timestamped lines: one per record
// as it is finished, and with -v one per step; no escape codes.
func TestReconcileTerminal_PlainLogWhenNotATerminal(t *testing.T) {
	t.Parallel()
	e := instSetupCatalog(t, nil)
	rtAsyncInstances(t, e, "db", "cache")

	r := instRun(t, e.ns, rtEnv, "reconcile", asRunner, "-v", "1", "--interval", "200ms")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)

	assert.Assert(t, !strings.Contains(r.Stderr, "\x1b"), "no escape code: %q", r.Stderr)
	assert.Assert(t, !strings.Contains(r.Stderr, "\r"), "no carriage return: %q", r.Stderr)
	for _, n := range []string{"db", "cache"} {
		for _, line := range []string{
			`instance ` + e.ns + `/` + n + `: poll the operation`,
			`instance ` + e.ns + `/` + n + `: done: ready`,
		} {
			assert.Assert(t, regexp.MustCompile(`(?m)^`+rtTimestamp+` `+regexp.QuoteMeta(line)+`$`).MatchString(r.Stderr),
				"%q in:\n%s", line, r.Stderr)
		}
	}
	assert.Assert(t, is.Contains(r.Stderr, "2 records: 2 done"))
	assert.Assert(t, is.Contains(r.Stdout, "NAMESPACE"))
	assert.Assert(t, !strings.Contains(r.Stdout, "\x1b"), "the table has no escape code: %q", r.Stdout)

	// Without -v: the outcome lines, not the steps.
	rtAsyncInstances(t, e, "queue")
	r = instRun(t, e.ns, rtEnv, "reconcile", asRunner, "--interval", "200ms", "-o", "json")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	assert.Assert(t, regexp.MustCompile(`(?m)^`+rtTimestamp+` instance `+e.ns+`/queue: done: ready$`).MatchString(r.Stderr), r.Stderr)
	assert.Assert(t, !strings.Contains(r.Stderr, "poll the operation"), r.Stderr)
	assert.Assert(t, strings.HasPrefix(r.Stdout, "{"), "stdout holds only the JSON: %q", r.Stdout)
}

// A run by hand with a record whose provision keeps failing retries it while the retry
// is due soon, then stops waiting: it ends in seconds, not at --max-duration, and names
// the record, its next attempt and the last error.
func TestReconcileTerminal_ByHandEndsInSecondsWhenARecordKeepsFailing(t *testing.T) {
	t.Parallel()
	e := instSetupCatalog(t, nil)
	_, err := e.b.InjectFault(broker.Fault{Op: broker.OpProvision, Action: broker.ActionRespond, Status: 500, Times: 1000})
	assert.NilError(t, err)
	r := instCatalog(t, e.ns, "provision", "db", "--class", "postgresql", "--plan", "hobby")
	assert.Assert(t, r.ExitCode != 0 || strings.Contains(r.Stderr, "reconcile"), r.Stderr)
	sent := len(e.b.RequestsFor(broker.OpProvision))
	assert.Assert(t, sent >= 1)

	start := time.Now()
	r = instRun(t, e.ns, rtEnv, "reconcile", asRunner, "--max-duration", "5m")
	took := time.Since(start)

	assert.Equal(t, r.ExitCode, 0, "a record waiting for a retry is not a failure: %s", r.Stderr)
	assert.Assert(t, took < 30*time.Second, "took %s with --max-duration 5m", took)
	retried := len(e.b.RequestsFor(broker.OpProvision)) - sent
	assert.Assert(t, retried >= 2, "the retries due within the horizon were made in the run: %d", retried)
	inst, err := e.st.Instances().Get(context.Background(), e.ns, "db")
	assert.NilError(t, err)
	rt := inst.Status.Retry
	assert.Assert(t, rt != nil && rt.NextRetryAt != nil, "%+v", inst.Status)
	row := regexp.MustCompile(`(?m)^` + e.ns + ` +ServiceInstance +db +waiting until (\S+) +(.*)$`).FindStringSubmatch(r.Stdout)
	assert.Assert(t, row != nil, "a line for the record:\n%s", r.Stdout)
	assert.Equal(t, row[1], rt.NextRetryAt.UTC().Format(time.RFC3339), "the next attempt")
	assert.Assert(t, is.Contains(row[2], fmt.Sprintf("(attempt %d)", rt.Attempts)))
	assert.Assert(t, is.Contains(row[2], "500"), row[2])
	assert.Assert(t, regexp.MustCompile(`(?m)^`+rtTimestamp+` instance `+e.ns+`/db: waiting until `).MatchString(r.Stderr), r.Stderr)
	_, claimed := store.LeaseOf(inst)
	assert.Assert(t, !claimed, "the run released its claim")
}

// The first Ctrl-C starts nothing new, lets the broker call under way finish and its
// outcome be recorded, prints the summary with what was left and exits 130, without
// "context canceled".
func TestReconcileTerminal_CtrlCFinishesTheCallUnderWayAndExits130(t *testing.T) {
	t.Parallel()
	e := instSetupCatalog(t, nil)
	rtAsyncInstances(t, e, "db", "cache")
	// The first poll takes 4 s: Ctrl-C comes while it is under way.
	_, err := e.b.InjectFault(broker.Fault{Op: broker.OpLastOperation, Action: broker.ActionDelay, Delay: broker.Duration(4 * time.Second)})
	assert.NilError(t, err)

	cmd, term := startInPTY(t, e.ns, rtEnv, 200, "reconcile", asRunner, "--workers", "1")
	instWaitFor(t, "the first poll to reach the broker", 30*time.Second, func() bool { return len(e.b.Faults()) == 0 })
	instWaitFor(t, "the live line to name the poll", 30*time.Second, func() bool {
		return strings.Contains(term.text(), ": poll the operation")
	})
	interruptedAt := time.Now()
	_, err = term.pty.Write([]byte{3}) // Ctrl-C: SIGINT to the foreground process
	assert.NilError(t, err)
	code := rtWaitExit(t, cmd, term, 60*time.Second, "left, pending as they were")
	assert.Equal(t, code, 130)
	out := term.text()
	t.Logf("exited %s after Ctrl-C", time.Since(interruptedAt).Round(time.Millisecond))

	assert.Assert(t, !strings.Contains(out, "context canceled"), out)
	assert.Assert(t, is.Contains(out, "interrupted: finishing the broker calls under way"))
	assert.Assert(t, is.Contains(out, "interrupted: 1 record left"))
	assert.Assert(t, is.Contains(out, "NAMESPACE"))
	assert.Assert(t, is.Contains(out, "not reached: interrupted"))

	// The poll under way was answered, not cut, and its outcome recorded: that instance
	// is ready. The other was not touched, and is left pending for the next run.
	var polled string
	for _, req := range e.b.RequestsFor(broker.OpLastOperation) {
		if req.Fault != "" {
			assert.Equal(t, req.Status, 200, "the poll under way was answered")
			polled = rtInstanceOf(t, e, req.InstanceID)
		}
	}
	assert.Assert(t, polled != "", "the delayed poll is in the broker's log")
	assert.Equal(t, len(e.b.RequestsFor(broker.OpLastOperation)), 1, "no poll after Ctrl-C")
	for _, n := range []string{"db", "cache"} {
		inst, err := e.st.Instances().Get(context.Background(), e.ns, n)
		assert.NilError(t, err)
		_, claimed := store.LeaseOf(inst)
		assert.Assert(t, !claimed, "%s: the run released its claim", n)
		if n == polled {
			c := meta.FindStatusCondition(inst.Status.Conditions, v1alpha1.ConditionReady)
			assert.Assert(t, c != nil && c.Status == metav1.ConditionTrue, "%s: %+v", n, inst.Status.Conditions)
			continue
		}
		assert.Assert(t, inst.Status.InFlight != nil && inst.Status.InFlight.Async, "%s is left pending", n)
	}
}

// A second Ctrl-C exits at once, even while a broker call is under way.
func TestReconcileTerminal_SecondCtrlCExitsAtOnce(t *testing.T) {
	t.Parallel()
	e := instSetupCatalog(t, nil)
	rtAsyncInstances(t, e, "db")
	_, err := e.b.InjectFault(broker.Fault{Op: broker.OpLastOperation, Action: broker.ActionDelay, Delay: broker.Duration(20 * time.Second)})
	assert.NilError(t, err)

	cmd, term := startInPTY(t, e.ns, rtEnv, 200, "reconcile", asRunner)
	instWaitFor(t, "the poll to reach the broker", 30*time.Second, func() bool { return len(e.b.Faults()) == 0 })
	start := time.Now()
	assert.NilError(t, cmd.Process.Signal(syscall.SIGINT))
	instWaitFor(t, "the first Ctrl-C to be seen", 30*time.Second, func() bool {
		return strings.Contains(term.text(), "interrupted: finishing the broker calls under way; Ctrl-C again exits at once")
	})
	assert.NilError(t, cmd.Process.Signal(syscall.SIGINT))
	_ = term.exited(cmd, 10*time.Second, "a second Ctrl-C did not exit at once")
	assert.Equal(t, cmd.ProcessState.ExitCode(), 130)
	assert.Assert(t, time.Since(start) < 18*time.Second, "the 20 s poll was not waited for")
}
