package engine

import (
	"context"
	"testing"
	"time"

	"gotest.tools/v3/assert"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// A driver whose claim ran out after the broker answered its bind (a process paused
// between the answer and the Secret's write) never writes the Secret over the driver
// that took the record over: that one may have bound a newer id and written its
// credentials, and a late write would leave the Secret holding credentials the record
// does not name. Nothing of the late answer is stored. Found by the simulation
// (-sim.rebind, seed 1234: "binding dev/app-0 is bound as ... but its Secret holds other
// credentials than the broker returned"). A synchronous first bind, a synchronous
// rotation, and an asynchronous bind whose credentials are fetched after its poll.
func TestBound_ClaimTakenOverAfterTheAnswer_SecretNeverWrittenOverTheNewDriver(t *testing.T) {
	for _, tc := range []struct {
		name         string
		async, first bool
	}{
		{name: "first bind", first: true},
		{name: "rotation"},
		{name: "asynchronous bind, credentials fetched", async: true, first: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, _ := bindingFixture(t, nil)
			ctx := context.Background()
			if !tc.first {
				f.createBinding("app", nil)
				assert.Equal(t, f.driveBinding("app").State, StateSettled)
				_, err := f.engine.startRotation(ctx, ns, "app")
				assert.NilError(t, err)
			}
			newer := map[string][]byte{"password": []byte("written by the driver that took over")}
			takeOver := func() {
				// This driver paused past its claim; reconcile took the record over and
				// wrote the credentials of its own bind.
				f.advance(3 * time.Minute)
				b, err := f.st.Bindings().UpdateWithRetry(ctx, ns, "app", func(b *v1alpha1.ServiceBinding) error {
					return store.SetClaim(b, "reconcile", 2*time.Minute, f.now)
				})
				assert.NilError(t, err)
				_, err = f.st.WriteBindingSecret(ctx, b, newer)
				assert.NilError(t, err)
			}
			creds := map[string]any{"password": "late"}
			if tc.async {
				f.broker.BindReturns(&osb.BindResponse{StatusCode: 202, Async: true, Operation: "bop-1"}, nil)
				f.broker.SetBindingPollSequence("bop-1", fakePoll(osb.StateSucceeded))
				f.broker.OnGetBinding(func(context.Context, *osb.GetBindingRequest) (*osb.GetBindingResponse, error) {
					takeOver()
					return &osb.GetBindingResponse{Credentials: creds}, nil
				})
			} else {
				f.broker.OnBind(func(context.Context, *osb.BindRequest) (*osb.BindResponse, error) {
					takeOver()
					return &osb.BindResponse{StatusCode: 201, Credentials: creds}, nil
				})
			}
			if tc.first {
				f.createBinding("app", nil)
			}
			for range 5 {
				b := f.getBinding("app")
				if l, ok := store.LeaseOf(b); ok && l.Holder == "reconcile" {
					break
				}
				f.advance(time.Minute)
				_, _ = f.engine.StepBinding(ctx, b)
			}

			assert.DeepEqual(t, f.secretData("app")["password"], newer["password"])
			b := f.getBinding("app")
			l, _ := store.LeaseOf(b)
			assert.Equal(t, l.Holder, "reconcile")
			assert.Assert(t, b.Status.InFlight != nil, "the late answer was stored over reconcile's claim")
		})
	}
}
