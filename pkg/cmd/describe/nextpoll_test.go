package describe

import (
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store/storetest"
)

// A driver polling an operation under its claim writes the record only when the
// broker's description changes or the claim is renewed, so the next poll stored may be
// past while it polls. describe says so, and, when no one holds the claim, that the
// poll is due and who makes it.
func TestDescribe_NextPoll_SaysWhoPollsOnceItIsPast(t *testing.T) {
	const holder = "reconcile@node-1/7.ab12cd34"
	next := storetest.SampleTime().Add(10 * time.Second) // the samples' next poll
	ts := func(t time.Time) string { return t.UTC().Format(time.RFC3339) }
	due := func(ns string) string {
		return "  next poll: " + ts(next) + ` (past: due, and no one holds the record's claim: the next run of reconcile polls it, the installed one (a --serve Deployment within seconds, a CronJob at its next run) or "kubectl catalog reconcile -n ` + ns + `" run now)` + "\n"
	}
	tests := []struct {
		name  string
		now   time.Time
		claim func(t *testing.T, obj metav1.Object, now time.Time)
		want  func(ns string) string
		not   []string
	}{{
		name: "not due yet",
		now:  next.Add(-5 * time.Second),
		want: func(string) string { return "  next poll: " + ts(next) + "\n" },
	}, {
		name: "not due yet, claimed",
		now:  next.Add(-5 * time.Second),
		claim: func(t *testing.T, obj metav1.Object, now time.Time) {
			assert.NilError(t, store.SetClaim(obj, holder, 2*time.Minute, now.Add(-30*time.Second)))
		},
		want: func(string) string { return "  next poll: " + ts(next) + "\n" },
	}, {
		name: "past, a live claim",
		now:  next.Add(40 * time.Second),
		claim: func(t *testing.T, obj metav1.Object, now time.Time) {
			assert.NilError(t, store.SetClaim(obj, holder, 2*time.Minute, now.Add(-30*time.Second)))
		},
		want: func(string) string {
			return "  next poll: " + ts(next) + " (past: " + holder + " is polling it; its claim runs until " + ts(next.Add(130*time.Second)) + ")\n"
		},
	}, {
		name: "past, no claim",
		now:  next.Add(40 * time.Second),
		want: due,
	}, {
		name: "past, the claim has expired",
		now:  next.Add(5 * time.Minute),
		claim: func(t *testing.T, obj metav1.Object, now time.Time) {
			assert.NilError(t, store.SetClaim(obj, holder, 2*time.Minute, now.Add(-3*time.Minute)))
		},
		want: due,
		not:  []string{"Claimed by"},
	}, {
		name: "past, a live claim of a process of this host that has ended",
		now:  next.Add(40 * time.Second),
		claim: func(t *testing.T, obj metav1.Object, now time.Time) {
			storetest.ClaimOfEndedProcess(t, obj, holder, now.Add(time.Minute))
		},
		want: func(ns string) string {
			return "  next poll: " + ts(next) + " (past: due; the claim of " + holder + ", whose process has ended, runs until " + ts(next.Add(100*time.Second)) +
				`: "kubectl catalog reconcile -n ` + ns + `" run on this host takes it over and polls it at once, elsewhere once the claim runs out)` + "\n"
		},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Run("instance", func(t *testing.T) {
				i := storetest.SampleInstance()
				i.Status.Retry, i.Status.OrphanMitigation = nil, nil
				if tc.claim != nil {
					tc.claim(t, i, tc.now)
				}
				out := InstanceView(i, nil, nil, tc.now)
				assert.Assert(t, is.Contains(out, tc.want(i.Namespace)))
				for _, s := range tc.not {
					assert.Assert(t, !strings.Contains(out, s), out)
				}
			})
			t.Run("binding", func(t *testing.T) {
				b := storetest.SampleBinding()
				b.Namespace = "team-b"
				b.Status.Retry, b.Status.OrphanMitigation = nil, nil
				b.Status.InFlight = &v1alpha1.Operation{Type: v1alpha1.OperationBind, BindingID: b.Spec.ExternalID,
					StartedAt: storetest.SampleTime(), Async: true, OperationKey: "op-9", LastDescription: "creating user",
					NextPollAt: &metav1.Time{Time: next}}
				if tc.claim != nil {
					tc.claim(t, b, tc.now)
				}
				out := BindingView(b, SecretView{}, tc.now)
				assert.Assert(t, is.Contains(out, tc.want(b.Namespace)))
				for _, s := range tc.not {
					assert.Assert(t, !strings.Contains(out, s), out)
				}
			})
		})
	}
}

// A synchronous request has no next poll: nothing is said about one.
func TestDescribe_NextPoll_NoneForASynchronousRequest(t *testing.T) {
	i := storetest.SampleInstance()
	i.Status.InFlight.Async, i.Status.InFlight.NextPollAt, i.Status.InFlight.OperationKey = false, nil, ""
	out := InstanceView(i, nil, nil, storetest.SampleTime().Add(time.Hour))
	assert.Assert(t, !strings.Contains(out, "next poll"), out)
}
