package sim

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb/fake"
)

// Asynchronous bindings: in some seeds (every seed with -sim.asyncbind) the class's
// bindings are retrievable, so the engine sends its binds with accepts_incomplete=true,
// and the honest broker answers half of the binds and three in four of the unbinds
// that allow it 202 with an operation. A bind's operation is polled (binding
// last_operation: in progress, then succeeded or failed) and its credentials fetched
// with GET binding; an unbind's poll ends succeeded or 410 Gone (or failed, the binding
// kept). A request for an id whose operation is under way is answered as the spec
// says: the identical request 202 with the same operation, another 422
// ConcurrencyError. The broker's faults (500s, timeouts, late work, slow answers) and
// the process faults (kills, interruptions, API faults) apply to these calls as to
// every other.

var asyncBindAll = flag.Bool("sim.asyncbind", false, "let the broker of every seed bind and unbind asynchronously (by default a few seeds do)")

// asyncBinding reports whether a seed's broker binds asynchronously. It comes from a
// random source of its own, so that the other seeds keep their traces.
func asyncBinding(seed uint64) bool {
	r := rand.New(rand.NewPCG(seed^0x13198a2e03707344, seed))
	return r.IntN(4) == 0 || *asyncBindAll
}

// bindingOp is the operation under way for binding id, if any.
func (w *world) bindingOp(id string) (string, *asyncOp) {
	for key, op := range w.ops {
		if op.id == id && !op.over {
			return key, op
		}
	}
	return "", nil
}

// asyncBind decides a bind that allows a 202, in a seed whose broker binds
// asynchronously: the identical request of a bind under way gets its operation again,
// a request during an unbind under way a 422, and a new bind (half the time) an
// operation that holds the binding once it succeeds. ok is false for a bind answered
// otherwise.
func (w *world) asyncBind(r *osb.BindRequest, ns string, put func()) (outcome, bool) {
	if !w.rates.asyncBind {
		return outcome{}, false
	}
	if key, op := w.bindingOp(r.BindingID); op != nil {
		if !op.unbind && r.AcceptsIncomplete {
			return outcome{what: "202 (identical request, operation " + key + ")", status: http.StatusAccepted, key: key}, true
		}
		return outcome{what: "422 ConcurrencyError", err: httpErr(422, "ConcurrencyError", "another operation is in progress")}, true
	}
	if !r.AcceptsIncomplete || w.rng.IntN(2) > 0 {
		return outcome{}, false
	}
	fail := w.faulty() && w.rng.IntN(3) == 0
	key := w.newOp(r.BindingID, fail, put)
	op := w.ops[key]
	op.instance, op.ns = r.InstanceID, ns
	w.shorten(op)
	what := "202"
	if fail {
		what = "202, to fail"
	}
	return outcome{what: what + " (operation " + key + ")", status: http.StatusAccepted, key: key}, true
}

// asyncUnbind is asyncBind for an unbind: the identical request of an unbind under way
// gets its operation again, one during a bind under way a 422, and an unbind of a
// binding the broker holds (three times in four) an operation that drops it once it
// succeeds.
func (w *world) asyncUnbind(r *osb.UnbindRequest, drop func()) (outcome, bool) {
	if !w.rates.asyncBind {
		return outcome{}, false
	}
	if key, op := w.bindingOp(r.BindingID); op != nil {
		if op.unbind && r.AcceptsIncomplete {
			return outcome{what: "202 (identical request, operation " + key + ")", status: http.StatusAccepted, key: key}, true
		}
		return outcome{what: "422 ConcurrencyError", err: httpErr(422, "ConcurrencyError", "another operation is in progress")}, true
	}
	if _, held := w.ledger.Binding(r.BindingID); !held || !r.AcceptsIncomplete || w.rng.IntN(4) == 0 {
		return outcome{}, false
	}
	fail := w.faulty() && w.rng.IntN(3) == 0
	key := w.newOp(r.BindingID, fail, drop)
	w.ops[key].unbind = true
	w.shorten(w.ops[key])
	what := "202"
	if fail {
		what = "202, to fail"
	}
	return outcome{what: what + " (operation " + key + ")", status: http.StatusAccepted, key: key}, true
}

// shorten makes a binding operation end within 30 s rather than 90: most of its polls,
// and the GET binding after them, then come while faults still happen.
func (w *world) shorten(op *asyncOp) {
	op.until = w.t.Add(time.Duration(w.rng.IntN(30)) * time.Second)
}

// pollBindingOp answers the poll of a binding operation the broker started: in
// progress until it is over, then failed or succeeded (an unbind's success is 410 Gone
// half the time, as the spec allows). A 500 now and then, as for every request.
func (w *world) pollBindingOp(op *asyncOp) (*osb.LastOperationResponse, outcome) {
	if w.faulty() && w.rng.IntN(2) == 0 {
		return nil, outcome{what: "500", err: httpErr(500, "", "internal error")}
	}
	switch {
	case !op.over:
		return &osb.LastOperationResponse{State: osb.StateInProgress, Description: "working"}, outcome{what: "in progress"}
	case op.fail:
		return &osb.LastOperationResponse{State: osb.StateFailed, Description: "it failed"}, outcome{what: "failed"}
	case op.unbind && w.rng.IntN(2) == 0:
		return nil, outcome{what: "410 Gone", err: fake.Gone()}
	}
	return &osb.LastOperationResponse{State: osb.StateSucceeded}, outcome{what: "succeeded"}
}

// getBindingFault is a fault of a GET binding in a seed whose broker binds
// asynchronously: a 500, or a timeout.
func (w *world) getBindingFault() (outcome, bool) {
	if !w.rates.asyncBind || !w.faulty() {
		return outcome{}, false
	}
	if w.faultOf(2, 0) == 0 {
		return outcome{what: "500", err: fake.HTTPError(http.MethodGet, 500, "", "internal error")}, true
	}
	return outcome{what: "timeout", err: fake.Timeout()}, true
}

// bindsUnderWay are the bind operations under way under instance id, outside the
// tenant's namespace: a DELETE of the instance meanwhile would leave the binding they
// create without its instance.
func (w *world) bindsUnderWay(instanceID string) []string {
	var ids []string
	for _, op := range w.ops {
		if op.instance == instanceID && !op.over && !op.fail && op.ns != "t" && !w.book.lied(op.id) {
			ids = append(ids, op.id)
		}
	}
	return ids
}

// checkServedCredentials is invariant 3 for an asynchronous binding, after every step:
// a binding settled as bound (nothing in flight, nothing to retire or mitigate) has in
// its Secret the credentials the broker last served for its id, by GET binding or a
// bind's answer (an id with answers off the spec excepted: the broker's answers may
// disagree with what it keeps).
func (w *world) checkServedCredentials(b *v1alpha1.ServiceBinding) {
	st := &b.Status
	if b.Namespace == "t" || st.Bound == nil || st.InFlight != nil || st.OrphanMitigation != nil || len(st.Retired) > 0 || b.DeletionTimestamp != nil {
		return
	}
	t := w.book.ids[st.Bound.BindingID]
	if t == nil || t.rogue || t.handed == nil {
		return
	}
	s, err := w.cluster.Core.CoreV1().Secrets(b.Namespace).Get(context.Background(), b.Spec.SecretName, metav1.GetOptions{})
	if err != nil {
		return
	}
	want := ""
	if p, ok := t.handed["password"]; ok {
		want = fmt.Sprint(p)
	}
	if got := string(s.Data["password"]); got != want {
		w.fail("binding %s/%s is bound as %s but its Secret holds other credentials than the broker served for it (answers: %s)",
			b.Namespace, b.Name, st.Bound.BindingID, strings.Join(t.answers, ", "))
	}
}
