package engine

import (
	"context"
	"errors"
	"sync"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
)

// testGate is a command's interrupt (cmdutil.Interrupt) as the engine sees it: the
// first interrupt cancels the context once no call is under way.
type testGate struct {
	mu          sync.Mutex
	cancel      context.CancelFunc
	calls       int
	interrupted bool
	begun       int
}

func (g *testGate) BeginCall() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.interrupted {
		return false
	}
	g.calls++
	g.begun++
	return true
}

func (g *testGate) EndCall() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.calls--
	if g.calls == 0 && g.interrupted {
		g.cancel()
	}
}

func (g *testGate) interrupt() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.interrupted = true
	if g.calls == 0 {
		g.cancel()
	}
}

// TestCallGate_InterruptDuringCall_FinishesAndRecordsTheCall interrupts a verb while
// its broker call is under way: the call is not cancelled, its outcome is stored (no
// send left without an answer, so no grace to wait out), the verb then ends as
// interrupted (exit 130), and nothing else is sent.
func TestCallGate_InterruptDuringCall_FinishesAndRecordsTheCall(t *testing.T) {
	for _, tc := range []struct {
		name   string
		verb   string
		status int // the broker's answer
	}{
		{name: "provision, synchronous", verb: "provision", status: 201},
		{name: "provision, asynchronous", verb: "provision", status: 202},
		{name: "bind, synchronous", verb: "bind", status: 201},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			g := &testGate{cancel: cancel}
			ctx = WithCallGate(ctx, g)
			var st *v1alpha1.OperationStatus
			var err error
			if tc.verb == "provision" {
				f.broker.OnProvision(func(cctx context.Context, _ *osb.ProvisionRequest) (*osb.ProvisionResponse, error) {
					g.interrupt()
					if cctx.Err() != nil {
						return nil, cctx.Err()
					}
					return &osb.ProvisionResponse{StatusCode: tc.status}, nil
				})
				_, err = f.engine.Provision(ctx, ProvisionRequest{Namespace: ns, Name: "db", Class: "db", Plan: "small"})
				st = &f.get("db").Status.OperationStatus
			} else {
				f.provisioned("db", planSmall, "")
				f.broker.OnBind(func(cctx context.Context, _ *osb.BindRequest) (*osb.BindResponse, error) {
					g.interrupt()
					if cctx.Err() != nil {
						return nil, cctx.Err()
					}
					return &osb.BindResponse{StatusCode: tc.status, Credentials: map[string]any{"password": secretValue}}, nil
				})
				_, err = f.engine.Bind(ctx, BindRequest{Namespace: ns, Instance: "db", Name: "app"})
				st = &f.getBinding("app").Status.OperationStatus
			}
			var ie *InterruptedError
			assert.Assert(t, errors.As(err, &ie), "%v", err)
			assert.ErrorIs(t, err, context.Canceled)
			assert.ErrorContains(t, err, "interrupted once the broker's answer was recorded")
			assert.Equal(t, g.begun, 1)
			assert.Assert(t, is.Len(f.broker.Calls(), 1), "nothing else is sent after the interrupt")
			if tc.status == 202 {
				assert.Assert(t, st.InFlight != nil && st.InFlight.Async && st.InFlight.SentAt == nil, "%+v", st.InFlight)
				assert.Equal(t, st.Phase, v1alpha1.PhaseProvisioning)
				return
			}
			assert.Assert(t, st.InFlight == nil, "the outcome is stored: %+v", st.InFlight)
			assert.Equal(t, st.Phase, v1alpha1.PhaseReady)
		})
	}
}

// TestCallGate_InterruptedBeforeCall_WritesNothing: once interrupted (while another call
// of the command finishes), a call that has not begun is not written ahead nor sent.
func TestCallGate_InterruptedBeforeCall_WritesNothing(t *testing.T) {
	f := newFixture(t)
	f.create("db", planSmall, "")
	g := &testGate{cancel: func() {}, interrupted: true}
	ctx := gatedByVerb(WithCallGate(context.Background(), g))
	_, err := f.engine.DriveInstance(ctx, ns, "db", DriveOptions{})
	assert.ErrorIs(t, err, context.Canceled)
	assert.Assert(t, f.get("db").Status.InFlight == nil, "nothing written ahead")
	assert.Assert(t, is.Len(f.broker.Calls(), 0))
}

// TestCallGate_NotAVerb_Ungated: a drive outside a verb (reconcile) does not go through
// the gate: reconcile finishes its calls under way its own way.
func TestCallGate_NotAVerb_Ungated(t *testing.T) {
	f := newFixture(t)
	f.create("db", planSmall, "")
	g := &testGate{cancel: func() {}}
	res, err := f.engine.DriveInstance(WithCallGate(context.Background(), g), ns, "db", DriveOptions{})
	assert.NilError(t, err)
	assert.Equal(t, res.State, StateSettled, res.Message)
	assert.Equal(t, g.begun, 0)
}
