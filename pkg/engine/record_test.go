package engine

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb/fake"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

func TestStoredText_CutsLongTextVisiblyKeepingStartAndEnd(t *testing.T) {
	long := "START" + strings.Repeat("x", 10_000) + "END"
	multibyte := strings.Repeat("é", 5_000) + "€"
	tests := []struct {
		name, in string
		cut      bool
	}{
		{name: "short text is kept", in: "the broker is busy"},
		{name: "text of exactly the limit is kept", in: strings.Repeat("a", maxStoredText)},
		{name: "long text keeps its start and end", in: long, cut: true},
		{name: "multibyte text is never split", in: multibyte, cut: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := storedText(tc.in)
			assert.Assert(t, len(got) <= maxStoredText, "%d bytes", len(got))
			assert.Assert(t, utf8.ValidString(got))
			if !tc.cut {
				assert.Equal(t, got, tc.in)
				return
			}
			assert.Assert(t, is.Contains(got, " bytes cut ...] "))
			assert.Assert(t, strings.HasPrefix(tc.in, got[:10]))
			assert.Assert(t, strings.HasSuffix(tc.in, got[len(got)-10:]))
		})
	}
}

// recordBytes is the size of the record's data in its ConfigMap.
func recordBytes(t *testing.T, f *fixture, kind, name string) int {
	t.Helper()
	cm, err := f.cluster.Core.CoreV1().ConfigMaps(ns).Get(context.Background(), store.ConfigMapName(kind, name), metav1.GetOptions{})
	assert.NilError(t, err)
	return len(cm.Data[store.DataKey])
}

func TestStep_HugeBrokerDescription_IsStoredCutAndTheRecordStaysSmall(t *testing.T) {
	huge := strings.Repeat("the broker explains at length. ", 400<<10/31)
	tests := []struct {
		name string
		kind string
		run  func(t *testing.T, f *fixture) (Result, error)
	}{
		{name: "provision answered 500 (orphan mitigation)", kind: "ServiceInstance", run: func(t *testing.T, f *fixture) (Result, error) {
			f.broker.ProvisionReturns(nil, fake.HTTPError(http.MethodPut, 500, "", huge))
			f.create("db", planSmall, "")
			return f.engine.StepInstance(context.Background(), f.get("db"))
		}},
		{name: "asynchronous provision failed", kind: "ServiceInstance", run: func(t *testing.T, f *fixture) (Result, error) {
			provisionReturns(f, 202, nil)
			f.broker.SetPollSequence("op-1", fake.Failed(huge))
			f.create("db", planSmall, "")
			f.step("db")
			f.advance(time.Minute)
			return f.engine.StepInstance(context.Background(), f.get("db"))
		}},
		{name: "asynchronous provision in progress", kind: "ServiceInstance", run: func(t *testing.T, f *fixture) (Result, error) {
			provisionReturns(f, 202, nil)
			f.broker.SetPollSequence("op-1", fake.InProgress(huge))
			f.create("db", planSmall, "")
			f.step("db")
			f.advance(time.Minute)
			return f.engine.StepInstance(context.Background(), f.get("db"))
		}},
		{name: "bind answered 500 (orphan mitigation)", kind: "ServiceBinding", run: func(t *testing.T, f *fixture) (Result, error) {
			f.provisioned("db", planSmall, "")
			f.broker.BindReturns(nil, fake.HTTPError(http.MethodPut, 500, "", huge))
			f.createBinding("db", nil)
			return f.engine.StepBinding(context.Background(), f.getBinding("db"))
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.engine.cfg.Projector = &recordingProjector{projected: map[string]bool{}}

			res, err := tc.run(t, f)

			assert.NilError(t, err)
			assert.Assert(t, len(res.Message) <= maxStoredText)
			size := recordBytes(t, f, tc.kind, "db")
			assert.Assert(t, size < 64<<10, "the record holds %d bytes", size)
			var st *v1alpha1.OperationStatus
			if tc.kind == "ServiceInstance" {
				st = f.get("db").OpStatus()
			} else {
				st = f.getBinding("db").OpStatus()
			}
			stored := []string{}
			for _, c := range st.Conditions {
				stored = append(stored, c.Message)
			}
			if st.Retry != nil {
				stored = append(stored, st.Retry.LastError)
			}
			if st.InFlight != nil {
				stored = append(stored, st.InFlight.LastDescription)
			}
			if st.OrphanMitigation != nil {
				stored = append(stored, st.OrphanMitigation.Message)
			}
			cut := 0
			for _, m := range stored {
				assert.Assert(t, len(m) <= maxStoredText, "%d bytes", len(m))
				if strings.Contains(m, "bytes cut ...]") {
					cut++
				}
			}
			assert.Assert(t, cut > 0, "the broker's text is stored, visibly cut: %q", stored)
		})
	}
}

// refuseNextUpdate makes the next update of a ConfigMap fail as the API server refuses
// an object over its size limit.
func refuseNextUpdate(f *fixture) func() {
	refuse := false
	f.cluster.Core.PrependReactor("update", "configmaps", func(clienttesting.Action) (bool, runtime.Object, error) {
		if !refuse {
			return false, nil, nil
		}
		refuse = false
		return true, nil, apierrors.NewRequestEntityTooLargeError("limit is 1048576")
	})
	return func() { refuse = true }
}

// refuseOutcomeWrite makes the first update of a ConfigMap after the broker call fail
// (refuseNextUpdate): the write of the call's outcome.
func refuseOutcomeWrite(f *fixture) {
	refuse := refuseNextUpdate(f)
	f.hook = func(p HookPoint, _ *v1alpha1.Operation) {
		if p == HookAfterBrokerCall {
			refuse()
		}
	}
}

func TestFinish_OutcomeTooLargeToStore_KeepsTheCallAndBacksOffBeforeReSending(t *testing.T) {
	tests := []struct {
		name   string
		answer func(f *fixture)
	}{
		{name: "provision answered 500", answer: func(f *fixture) {
			f.broker.ProvisionReturns(nil, fake.HTTPError(http.MethodPut, 500, "", "boom"))
		}},
		{name: "provision succeeded", answer: func(f *fixture) { provisionReturns(f, 201, nil) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			tc.answer(f)
			refuseOutcomeWrite(f)
			f.create("db", planSmall, "")

			_, err := f.engine.StepInstance(context.Background(), f.get("db"))

			assert.Assert(t, store.IsTooLarge(err), "%v", err)
			inst := f.get("db")
			op, retry := inst.Status.InFlight, inst.Status.Retry
			assert.Assert(t, op != nil, "the call stays in flight: its outcome is unknown to the record")
			assert.Assert(t, retry != nil && retry.NextRetryAt != nil)
			assert.Equal(t, retry.Reason, ReasonProvisionCallFailed)
			assert.Assert(t, retry.NextRetryAt.After(f.now))
			assert.Assert(t, is.Contains(retry.LastError, "could not be recorded"))
			_, claimed := store.LeaseOf(inst)
			assert.Assert(t, !claimed)

			f.hook = nil
			res := f.step("db")
			assert.Equal(t, res.State, StateWaiting)
			assert.Assert(t, is.Len(f.broker.CallsTo(fake.MethodProvision), 1), "no re-send before the backoff")

			f.advance(retry.NextRetryAt.Sub(f.now))
			provisionReturns(f, 201, nil)
			res = f.step("db")
			calls := f.broker.CallsTo(fake.MethodProvision)
			assert.Assert(t, is.Len(calls, 2))
			assert.Equal(t, calls[1].Request.(osb.ProvisionRequest).RequestIdentity, op.RequestID, "the identical request is re-sent")
			assert.Equal(t, res.State, StateSettled, res.Message)
		})
	}
}
