package e2e

import (
	"context"
	"os/exec"
	"regexp"
	"syscall"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/test/broker"
)

// TestInterrupt_CtrlCDuringBrokerCall interrupts a verb (SIGINT) while the broker is
// slow to answer its request. The first signal lets the call finish: the command exits
// 130 once the answer is recorded, the record holds it (nothing in flight without an
// outcome), and a plain reconcile by hand finishes the rest at once, with no grace to
// wait out. A second signal exits at once: the answer is lost, and describe says until
// when nothing is sent for the record.
func TestInterrupt_CtrlCDuringBrokerCall(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		verb    string // provision or bind
		plan    string
		signals int
	}{
		{name: "provision async plan, one signal", verb: "provision", plan: "standard", signals: 1},
		{name: "provision sync plan, one signal", verb: "provision", plan: "hobby", signals: 1},
		{name: "bind, one signal", verb: "bind", plan: "hobby", signals: 1},
		{name: "provision, two signals", verb: "provision", plan: "hobby", signals: 2},
		{name: "bind, two signals", verb: "bind", plan: "hobby", signals: 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			var e *instEnv
			op, kind, recordKind := broker.OpProvision, "instance", v1alpha1.KindServiceInstance
			args := []string{"provision", "db", "--class", "postgresql", "--plan", tc.plan}
			if tc.verb == "bind" {
				e = bndSetup(t, tc.plan, nil).instEnv
				op, kind, recordKind = broker.OpBind, "binding", v1alpha1.KindServiceBinding
				args = []string{"bind", "db", "--name", "db-app"}
			} else {
				e = instSetupCatalog(t, nil)
			}
			// The broker acts on the request, then waits 2 s before answering.
			_, err := e.b.InjectFault(broker.Fault{Op: op, When: broker.After, Action: broker.ActionDelay, Delay: broker.Duration(2 * time.Second)})
			assert.NilError(t, err)
			start := time.Now()
			cmd, lines := instStartKillable(t, e.ns, nil, args...)
			instWaitFor(t, "the broker to receive the request", 30*time.Second, func() bool { return len(e.b.Faults()) == 0 })
			assert.NilError(t, cmd.Process.Signal(syscall.SIGINT))
			ccAwaitLine(t, lines, "waiting for the broker's answer", 10*time.Second)
			if tc.signals == 2 {
				assert.NilError(t, cmd.Process.Signal(syscall.SIGINT))
			}
			code := interruptExit(t, cmd)
			assert.Equal(t, code, 130)

			name := "db"
			if tc.verb == "bind" {
				name = "db-app"
			}
			var st *v1alpha1.OperationStatus
			if tc.verb == "bind" {
				b, err := e.st.Bindings().Get(ctx, e.ns, name)
				assert.NilError(t, err)
				st = &b.Status.OperationStatus
			} else {
				inst, err := e.st.Instances().Get(ctx, e.ns, name)
				assert.NilError(t, err)
				st = &inst.Status.OperationStatus
			}

			if tc.signals == 2 {
				// The answer was lost: describe says what the broker may still be
				// doing, and until when nothing is sent.
				assert.Assert(t, st.InFlight != nil && st.InFlight.SentAt != nil, "the write-ahead stays, with no outcome")
				r := instCatalog(t, e.ns, "describe", kind, name)
				assert.Equal(t, r.ExitCode, 0, r.Stderr)
				want := regexp.MustCompile(`the broker may still be working on the (Provision|Bind) sent at \S+; nothing is sent for this ` + kind + ` until \S+`)
				assert.Assert(t, want.MatchString(r.Stdout), "describe does not show the wait:\n%s", r.Stdout)
				// Reconcile by hand sends nothing for it, and says why.
				sent := len(e.b.RequestsFor(op))
				sum, _ := recRun(t, e.ns, nil, "--max-duration", "5s")
				_, ok := recKindItem(sum, recordKind, e.ns, name)
				assert.Assert(t, ok, "%+v", sum)
				assert.Equal(t, len(e.b.RequestsFor(op)), sent, "nothing is sent during the grace")
				t.Logf("took %s", time.Since(start))
				return
			}

			// The call's outcome is recorded: no call in flight without its answer.
			assert.Assert(t, st.InFlight == nil || st.InFlight.SentAt == nil, "the call's outcome is stored: %+v", st.InFlight)
			sum, r := recRun(t, e.ns, nil, "--interval", "100ms", "--max-duration", "30s")
			assert.Equal(t, r.ExitCode, 0, r.Stderr)
			assert.Equal(t, sum.Left, 0)
			if tc.verb == "bind" {
				b, err := e.st.Bindings().Get(ctx, e.ns, name)
				assert.NilError(t, err)
				assert.Assert(t, !b.HasPendingWork(), "reconcile finished the binding")
				assert.Assert(t, is.Len(e.b.RequestsFor(broker.OpBind), 1), "one bind request")
			} else {
				inst, err := e.st.Instances().Get(ctx, e.ns, name)
				assert.NilError(t, err)
				assert.Assert(t, !inst.HasPendingWork(), "reconcile finished the instance")
				assert.Assert(t, is.Len(e.b.RequestsFor(broker.OpProvision), 1), "one provision request")
			}
			assert.Assert(t, is.Len(e.b.Violations(), 0))
			t.Logf("took %s", time.Since(start))
		})
	}
}

// interruptExit waits for cmd (bounded) and returns its exit code.
func interruptExit(t *testing.T, cmd *exec.Cmd) int {
	t.Helper()
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(slow(30 * time.Second)):
		t.Fatal("the command did not end after the interrupt")
	}
	return cmd.ProcessState.ExitCode()
}
