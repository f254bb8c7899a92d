package sim

import (
	"context"
	"flag"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb/fake"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store/storetest"
)

var longWork = flag.Bool("sim.longwork", false, "let the broker work on a request for up to five minutes, past the client's 60 s timeout")

const (
	brokerName = "acme"
	classID    = "svc-db"
	planSmall  = "plan-small"
	planLarge  = "plan-large"
	// callTimeout is the broker client's timeout: a caller waiting longer gets a
	// timeout, and the broker is done with the request by then.
	callTimeout = 60 * time.Second
)

func (w *world) setupCatalog() {
	ctx := context.Background()
	// The namespaces exist (a share checks that the namespace it names does).
	for _, ns := range []string{"dev", "team-b", "t"} {
		if _, err := w.cluster.Core.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			panic(err)
		}
	}
	putWorkloads(w.cluster, "dev", "team-b", "t") // workloads_test.go
	if _, err := w.checker.Brokers().Create(ctx, &v1alpha1.Broker{
		ObjectMeta: metav1.ObjectMeta{Namespace: storetest.CatalogNamespace, Name: brokerName},
		Spec:       v1alpha1.BrokerSpec{URL: "https://broker.example", Scope: v1alpha1.ScopeCluster},
	}); err != nil {
		panic(err)
	}
	if _, err := w.checker.Classes().Create(ctx, &v1alpha1.ServiceClass{
		ObjectMeta: metav1.ObjectMeta{Namespace: storetest.CatalogNamespace, Name: v1alpha1.ClassRecordName(brokerName, classID)},
		Spec: v1alpha1.ServiceClassSpec{
			BrokerName: brokerName, Scope: v1alpha1.ScopeCluster, ID: classID, ExternalName: "db", Bindable: true, PlanUpdateable: true,
			// Retrievable bindings let the engine accept a 202 to a bind (asyncbind_test.go).
			BindingsRetrievable: w.rates.asyncBind,
			Plans: []v1alpha1.ServicePlan{
				{ID: planSmall, ExternalName: "small", Free: true},
				{ID: planLarge, ExternalName: "large", Free: true},
			},
		},
	}); err != nil {
		panic(err)
	}
}

// outcome is what the broker does with a request (apply) and what it answers.
type outcome struct {
	what   string
	apply  func()
	status int
	err    error
	key    string
	creds  map[string]any
	// dashboard and endpoints are what the answer carries besides (an oversized answer's).
	dashboard string
	endpoints []osb.Endpoint
	// wire is an answer off the spec (rogue_test.go), given through the real client.
	wire *wireAnswer
	// meta is a bind answer's binding metadata (rotatedue_test.go).
	meta *osb.BindingMetadata
}

// hugeURL is a dashboard URL of 1.1 MB: no record can store it.
var hugeURL = "https://dashboard.example/" + strings.Repeat("x", 1_100_000)

// manyEndpoints are endpoints of a bind answer, over 64 KiB of JSON.
var manyEndpoints = func() []osb.Endpoint {
	eps := make([]osb.Endpoint, 5000)
	for i := range eps {
		eps[i] = osb.Endpoint{Host: fmt.Sprintf("db-%d.example", i), Ports: []string{"5432"}}
	}
	return eps
}()

// asyncOp is an operation the broker answered 202 for.
type asyncOp struct {
	id    string
	until time.Time // when the broker finishes it, polled or not
	fail  bool
	done  func() // what success does
	over  bool
	// unbind: the operation of an unbind; instance and ns: a bind's instance id and
	// namespace (asyncbind_test.go).
	unbind       bool
	instance, ns string
}

// lateWork is a request the broker works on: it is done with it at until.
type lateWork struct {
	req    fake.Request
	until  time.Time
	o      outcome
	landed bool
}

// current is the process running now: the one whose goroutine calls the broker.
func (w *world) current() *proc { return w.running }

// call is one broker request. The broker decides what it does as the request arrives
// and is done with it some time within the client's timeout, whatever the caller does;
// the caller pauses meanwhile (other processes move, the caller may be killed, or
// resumed only after its client timed out) and gets the answer when it is resumed. A
// slow call is answered only once the broker is done, which may be after the caller's
// claim would have run out. While a call is in flight the caller is also resumed at
// every step to renew its claim when that is due, as the engine's timer would.
func (w *world) call(ctx context.Context, method, id string, decide func() outcome) outcome {
	p := w.current()
	if err := ctx.Err(); err != nil {
		// Not sent, as an HTTP client sends nothing under an ended context.
		w.logf("%-14s broker %s %s not sent: %v", p.name, method, id, err)
		return outcome{err: &osb.TransportError{Method: method, Path: "/sim", Err: err, Canceled: true}}
	}
	inCall := w.checkGateSend(p, method, id) // callgate_test.go
	req, overlap := w.ledger.Begin(method, id, p.name)
	w.sent(method, id)
	if until, ok := w.unguarded[id]; ok && !w.t.Before(until) {
		delete(w.unguarded, id)
	}
	if _, ok := w.unguarded[id]; overlap != nil && !ok && !w.bothHoldBeforeRelease(id, overlap) {
		w.fail("two requests in flight at the broker for one id: %v", overlap)
	}
	w.checkNamespace(p, method, id)
	w.checkMigrationCall(p, method, id) // migrate_test.go
	w.checkMoveCall(p, method, id)      // move_test.go
	start := w.t
	o := decide()
	work := &lateWork{req: req, until: start.Add(time.Duration(w.rng.IntN(int(callTimeout/time.Second))) * time.Second), o: o}
	answerAt := start
	if w.faults && w.chance(w.rates.slow) {
		d := w.claimTTL + time.Duration(w.rng.IntN(int(w.claimTTL/time.Second)))*time.Second
		work.until = start.Add(min(d, callTimeout-time.Second))
		if *longWork && w.rng.IntN(2) == 0 {
			// Work that lasts minutes, past the client's timeout.
			work.until = start.Add(callTimeout + time.Duration(w.rng.IntN(240))*time.Second)
		}
		answerAt = work.until
		w.logf("%-14s broker %s: slow, answered at %s", p.name, req, answerAt.Format("15:04:05"))
	}
	w.late = append(w.late, work)
	p.inCall, p.atBroker = true, true
	p.pause(fmt.Sprintf("broker %s %s", method, id))
	for !p.dead && ctx.Err() == nil && w.t.Sub(start) <= callTimeout {
		if p.tick {
			// The renewal timer: the claim is renewed if that is due.
			p.atBroker = false
			engine.KeepClaim(ctx)
			p.atBroker, p.tick = true, false
		} else if !w.t.Before(answerAt) {
			break
		}
		p.quietPause()
	}
	p.inCall, p.atBroker, p.tick = false, false, false
	if p.dead || ctx.Err() != nil {
		w.checkCutOff(p, method, id, inCall) // callgate_test.go
		w.logf("%-14s stopped waiting for %s; the broker goes on (%s) until %s", p.name, req, o.what, work.until.Format("15:04:05"))
		if !work.landed && w.claimTTL < callTimeout {
			// The call was given up (its claim could not be renewed): the broker goes on
			// past the claim.
			w.unguarded[id] = work.until
		}
		if ctx.Err() != nil {
			return outcome{err: &osb.TransportError{Method: method, Path: "/sim", Err: ctx.Err(), Canceled: true}}
		}
		return outcome{err: &osb.TransportError{Method: method, Path: "/sim", Err: errKilled}}
	}
	if w.t.Sub(start) > callTimeout {
		w.logf("%-14s broker %s: the client timed out (the broker's answer was %s)", p.name, req, o.what)
		return outcome{err: fake.Timeout()}
	}
	if !work.landed {
		w.land(work)
	}
	w.checkGateAnswer(p, method, id) // callgate_test.go
	w.logf("%-14s broker %s: %s", p.name, req, o.what)
	return o
}

func (w *world) land(l *lateWork) {
	l.landed = true
	w.late = slices.DeleteFunc(w.late, func(x *lateWork) bool { return x == l })
	if l.o.apply != nil {
		l.o.apply()
	}
	w.ledger.End(l.req)
}

// landLateWork finishes the broker's work whose callers stopped waiting, and its
// asynchronous operations that are due (all of it when all is set).
func (w *world) landLateWork(all bool) {
	for _, key := range slices.Sorted(maps.Keys(w.ops)) {
		op := w.ops[key]
		if op.over || (!all && w.t.Before(op.until)) {
			continue
		}
		op.over = true
		if !op.fail && op.done != nil {
			op.done()
		}
		w.logf("broker finished operation %s on %s (failed: %t)", key, op.id, op.fail)
	}
	for _, l := range slices.Clone(w.late) {
		if all || !w.t.Before(l.until) {
			w.land(l)
			w.logf("broker done with %s: %s", l.req, l.o.what)
		}
	}
}

func (w *world) faulty() bool { return w.faults && w.chance(w.rates.brokerFault) }

// faultOf chooses one of n faults; during an outage it is always the 500 (index
// internal), which is retried, so that a record fails many times in a row.
func (w *world) faultOf(n, internal int) int {
	if w.rates.outage {
		return internal
	}
	return w.rng.IntN(n)
}

func httpErr(status int, code, desc string) error {
	return fake.HTTPError(http.MethodPut, status, code, desc)
}

// busy is the 422 of a request for an id with an asynchronous operation under way.
func (w *world) busy(id string) (outcome, bool) {
	for _, op := range w.ops {
		if op.id == id && !op.over {
			return outcome{what: "422 ConcurrencyError", err: httpErr(422, "ConcurrencyError", "another operation is in progress")}, true
		}
	}
	return outcome{}, false
}

func (w *world) newOp(id string, fail bool, done func()) string {
	w.opSeq++
	key := fmt.Sprintf("op-%d", w.opSeq)
	w.ops[key] = &asyncOp{id: id, until: w.t.Add(time.Duration(w.rng.IntN(90)) * time.Second), fail: fail, done: done}
	return key
}

// maybe is apply half the time: whether a failed or timed-out request was carried out.
func (w *world) maybe(apply func()) (func(), string) {
	if w.rng.IntN(2) == 0 {
		return apply, " (carried out)"
	}
	return nil, " (not carried out)"
}

func (w *world) setupBroker() {
	f, l := w.broker, w.ledger
	f.OnProvision(w.provisionHandler(l))
	f.OnUpdate(w.updateHandler(l))
	f.OnDeprovision(w.deprovisionHandler(l))
	f.OnLastOperation(w.lastOperationHandler(l))
	w.setupBindingReads()
	f.OnBind(w.bindHandler(l))
	f.OnUnbind(w.unbindHandler(l))
}

// bindingNamespace is the namespace of the binding a bind request is made for: the
// process's record's, else the process's; a rebind's bind, made from its instance's
// step, is the binding's whose write-ahead names the id (rebind_test.go).
func (w *world) bindingNamespace(r *osb.BindRequest) string {
	return w.rebindBindingNamespace(r.BindingID, w.current().recordNamespace())
}

func (p *proc) recordNamespace() string {
	if p.record != "" {
		for i := range p.record {
			if p.record[i] == '/' {
				return p.record[:i]
			}
		}
	}
	return p.ns
}

// checkNamespace is invariant 6: a process working on a tenant's record (or a tenant's
// own process) never changes what another namespace holds at the broker.
func (w *world) checkNamespace(p *proc, method, id string) {
	if p.recordNamespace() != "t" {
		return
	}
	var h fake.Held
	var ok bool
	switch method {
	case fake.MethodProvision, fake.MethodUpdate, fake.MethodDeprovision:
		h, ok = w.ledger.Instance(id)
	case fake.MethodBind, fake.MethodUnbind:
		h, ok = w.ledger.Binding(id)
	default:
		return
	}
	if ok && h.Namespace != "t" && !w.releasedAfterALie(id) && !w.releasedByAbandon(id) {
		w.fail("%s for record %s (%s) changes id %s, which namespace %s holds", method, p.record, p.name, id, h.Namespace)
	}
}

// releasedAfterALie reports an OSB id bound to nothing that the broker said it did not
// hold while it held it, and that no record of another namespace than the tenant's
// names any more (the one that used it was released on the broker's word): the id is
// then bound to nothing as far as anyone can know, and the tenant's record that adopted
// it may call the broker under it. While a record of another namespace still names the
// id, its id claim keeps the tenant's calls away (invariant 6 holds).
func (w *world) releasedAfterALie(id string) bool {
	if v1alpha1.IsBoundID(id) || !w.book.lied(id) {
		return false
	}
	return w.namedOnlyByTenant(id)
}

// releasedByAbandon reports an OSB id an --abandon left at the broker (its record
// dropped without the broker, its id claim with it) that no record of another
// namespace than the tenant's names any more: the id is then bound to nothing in the
// cluster, as the owner asked, and a record that names it (--external-id) adopts it,
// the tenant's too. While a record of another namespace names it again, its id claim
// keeps the tenant's calls away (invariant 6 holds).
func (w *world) releasedByAbandon(id string) bool {
	return w.abandoned[id] && w.namedOnlyByTenant(id)
}

// namedOnlyByTenant reports an OSB id no record of another namespace than the tenant's
// names, in its spec or its status.
func (w *world) namedOnlyByTenant(id string) bool {
	insts, binds := w.records()
	for _, x := range insts {
		if x.Namespace != "t" && (x.Spec.ExternalID == id || slices.Contains(instanceIDs(x), id)) {
			return false
		}
	}
	for _, x := range binds {
		if x.Namespace != "t" && (x.Spec.ExternalID == id || slices.Contains(bindingIDs(x), id)) {
			return false
		}
	}
	return true
}
