package sim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// streak follows the retries of one record: how many failures it recorded in a row.
type streak struct {
	last   string
	failed int
	// wait and family are the last retry's wait (when not immediate) and the
	// operation it retried.
	wait   time.Duration
	family string
}

// family is the operation a retry's reason belongs to: a provision or bind and the
// orphan mitigation of its uncertain call are one operation ("" for a reason of no
// action: a broker or platform that was not reached).
func family(reason string) string {
	for _, p := range []string{"Provision", "Bind", "OrphanMitigation"} {
		if strings.HasPrefix(reason, p) {
			return "create"
		}
	}
	for _, p := range []string{"Update", "Deprovision", "Unbind"} {
		if strings.HasPrefix(reason, p) {
			return p
		}
	}
	return ""
}

func (w *world) records() ([]*v1alpha1.ServiceInstance, []*v1alpha1.ServiceBinding) {
	ctx := context.Background()
	insts, err := w.checker.Instances().List(ctx, "", store.Filter{})
	if err != nil {
		panic(err)
	}
	binds, err := w.checker.Bindings().List(ctx, "", store.Filter{})
	if _, unreadable := store.Unreadable(err); err != nil && !unreadable {
		// (A ConfigMap of another release is left out: release_test.go.)
		panic(err)
	}
	return insts, binds
}

// writtenRecords are the records of the ConfigMaps written since the last check (those
// still there), in a fixed order; the others are as they were at the last check.
func (w *world) writtenRecords() ([]*v1alpha1.ServiceInstance, []*v1alpha1.ServiceBinding) {
	ctx := context.Background()
	var insts []*v1alpha1.ServiceInstance
	var binds []*v1alpha1.ServiceBinding
	instPrefix, bindPrefix := store.ConfigMapName(v1alpha1.KindServiceInstance, ""), store.ConfigMapName(v1alpha1.KindServiceBinding, "")
	for _, key := range slices.Sorted(maps.Keys(w.written)) {
		ns, cm, _ := strings.Cut(key, "/")
		if name, ok := strings.CutPrefix(cm, instPrefix); ok {
			if x, err := w.checker.Instances().Get(ctx, ns, name); err == nil {
				insts = append(insts, x)
			}
		} else if name, ok := strings.CutPrefix(cm, bindPrefix); ok {
			if x, err := w.checker.Bindings().Get(ctx, ns, name); err == nil {
				binds = append(binds, x)
			}
		}
	}
	clear(w.written)
	return insts, binds
}

// checkStep checks what holds after every step (invariants 2 and 6 are checked as
// requests reach the broker) for the records written in it.
func (w *world) checkStep() {
	keys := slices.Sorted(maps.Keys(w.written))
	insts, binds := w.writtenRecords()
	w.noteGrants(insts)
	w.noteLimits(insts, binds)
	w.checkWaits(insts)
	w.checkEnv(binds)
	w.checkForgotten(keys, insts, binds)
	w.checkReleases()
	w.checkFiles(false)
	w.checkUpSource()
	w.checkRebinds(insts)
	w.checkMoveStep() // move_test.go
	if w.rates.rogue > 0 || *paramSecret {
		w.checkNoSecrets(keys)
	}
	for _, x := range insts {
		w.checkBackoff("instance", x, &x.Status.OperationStatus)
		w.checkAuthor("instance", x)
		w.checkStorable("instance", x, &x.Status.OperationStatus)
	}
	for _, x := range binds {
		w.checkBackoff("binding", x, &x.Status.OperationStatus)
		w.checkAuthor("binding", x)
		w.checkStorable("binding", x, &x.Status.OperationStatus)
		w.checkLifetime(x)             // rotatedue_test.go
		w.noteRotationStart(w.last, x) // rotatedue_test.go
		if w.rates.asyncBind {
			w.checkServedCredentials(x)
		}
	}
}

// checkStorable is part of invariant 4: whatever a broker answers, its outcome can be
// stored (a field over its limit is a broker error), so no call is re-sent because its
// outcome could not be recorded.
func (w *world) checkStorable(kind string, x metav1.Object, st *v1alpha1.OperationStatus) {
	if msg, _ := readyMessage(st); strings.Contains(msg, "too large to store") && strings.Contains(msg, "bytes of JSON") {
		w.fail("%s %s/%s: an outcome could not be stored: %s", kind, x.GetNamespace(), x.GetName(), firstLine(msg))
	}
}

// checkAuthor is part of invariant 6: reconcile never becomes a record's author (its
// status writes and scheduled rotations keep the author the spec has), so it lends its
// own rights to nobody's spec.
func (w *world) checkAuthor(kind string, x v1alpha1.Record) {
	if a := store.AuthorOf(x).Username; strings.HasPrefix(a, "reconcile") {
		w.fail("%s %s/%s has %s as its author: reconcile wrote its spec as its own", kind, x.GetNamespace(), x.GetName(), a)
	}
}

// checkBackoff is invariant 5: a record that keeps failing waits longer and longer, up
// to the documented maximum, whatever mix of calls of one operation (a provision and its
// orphan mitigation, say) fails: a retry never waits much less than the one before it.
// (A retry of another action, a deletion after failed provisions, starts its own
// backoff.)
func (w *world) checkBackoff(kind string, x metav1.Object, st *v1alpha1.OperationStatus) {
	if x.GetNamespace() == "t" {
		return
	}
	// A new generation of the spec (a user's new command: an update, a touch) is a new
	// operation, with a backoff of its own.
	key := fmt.Sprintf("%s %s/%s %s generation %d", kind, x.GetNamespace(), x.GetName(), x.GetUID(), x.GetGeneration())
	s := w.streaks[key]
	if s == nil {
		s = &streak{}
		w.streaks[key] = s
	}
	r := st.Retry
	if r == nil {
		*s = streak{}
		return
	}
	if r.LastAttemptAt == nil {
		// A retry asked for with no failed attempt (touch re-sending the parameters at
		// once): the user's new command, with a backoff of its own.
		*s = streak{}
		return
	}
	if r.NextRetryAt == nil {
		return
	}
	now := fmt.Sprintf("%s %d %s", r.Reason, r.Attempts, r.LastAttemptAt.UTC())
	if now == s.last {
		return
	}
	s.last = now
	s.failed++
	wait := r.NextRetryAt.Sub(r.LastAttemptAt.Time)
	if u := r.BrokerMayWorkUntil; u != nil && !r.NextRetryAt.Before(u) {
		// A call that got no answer waits for the broker's work on it (the grace), not
		// a backoff: the next failure's backoff is judged against the one before.
		if fam := family(r.Reason); fam != "" && fam != s.family {
			s.family, s.wait = fam, 0
		}
		return
	}
	if fam := family(r.Reason); wait > 0 && fam != "" {
		// Retries of one operation never wait much less than the last one did (the
		// backoff doubles; jitter is ±20%).
		if fam == s.family && s.failed > 1 && wait < s.wait/2-time.Second {
			w.fail("%s waits %s before retrying (%s, attempt %d) after waiting %s before its last attempt: retries of one operation must back off further, orphan mitigation included",
				key, wait, r.Reason, r.Attempts, s.wait)
		}
		s.wait, s.family = wait, fam
	} else if fam == "" {
		// A failure before any call (the broker record unreadable, say) is an action
		// of its own: the next retry of the operation starts over.
		s.family = ""
	}
}

// terminal reports a record that needs nothing more: ready for its spec, or failed for
// it in a way that waits for the user.
func terminal(x metav1.Object, st *v1alpha1.OperationStatus) bool {
	if x.GetDeletionTimestamp() != nil || st.InFlight != nil || st.Retry != nil || st.OrphanMitigation != nil {
		return false
	}
	for _, typ := range []string{v1alpha1.ConditionReady, v1alpha1.ConditionFailed} {
		c := meta.FindStatusCondition(st.Conditions, typ)
		if c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == x.GetGeneration() {
			return true
		}
	}
	return false
}

// settled reports whether quiescence is reached: the broker works on nothing, and every
// record outside the tenant's namespace is terminal (or gone).
func (w *world) settled() bool {
	if len(w.late) > 0 || len(w.ledger.InFlight()) > 0 || w.kube.terminating != "" && w.kube.terminating != "t" && !w.kube.gone {
		return false
	}
	insts, binds := w.records()
	if rebindPending(insts) {
		return false
	}
	if !w.newSettled() {
		return false // the new cluster of the move world (move_test.go)
	}
	for _, x := range insts {
		if x.Namespace != "t" && !terminal(x, &x.Status.OperationStatus) && !w.staleSvcatInstance(x) { // simevery_test.go
			return false
		}
	}
	for _, x := range binds {
		if x.Namespace != "t" && (!terminal(x, &x.Status.OperationStatus) && !w.waitsForAPerson(x) || len(x.Status.Retired) > 0) {
			return false
		}
	}
	return true
}

// waitsForAPerson reports a binding that holds nothing at the broker and waits for a
// person, as its conditions say: refused (its instance no longer shared with its
// namespace, say), or bound to an instance that does not exist. Nothing the engine does
// can settle it; its retries look again now and then.
func (w *world) waitsForAPerson(b *v1alpha1.ServiceBinding) bool {
	st := &b.Status.OperationStatus
	if waitsToBind(b) && b.DeletionTimestamp == nil {
		// A first bind sent before its instance's limit was set, whose re-send found
		// every place taken (an older one of them went first): it waits, in flight,
		// for a place or for its owner to raise the limit. So does a rotation's bind of
		// a binding made after a place was kept (it takes a place like any bind,
		// authority.Reserve), which keeps its old id and credentials meanwhile; and a
		// first bind to be sent again, an id of an earlier attempt kept, whose older
		// peer went first (authority.waitsForAPlace).
		if msg, _ := readyMessage(st); strings.Contains(msg, "has reached its limit of") {
			return true
		}
	}
	if w.instanceAbandoned(b) {
		// Its instance's record was dropped by an --abandon: without it the engine
		// cannot call the broker for the binding, whatever the broker holds of it (the
		// instance's owner hurts its consumers, as abandoning may). It waits, refused,
		// for a person (the instance provisioned again under its id, or the binding
		// dropped with unbind --abandon).
		if c := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionRefused); c != nil && c.Status == metav1.ConditionTrue {
			return true
		}
		// A bind in flight when the instance was abandoned (it may be held at the
		// broker) waits so too, retried with backoff in case the instance comes back,
		// its condition naming "unbind --abandon".
		if r := st.Retry; r != nil && st.InFlight != nil && r.Reason == "BindWaitingForInstance" && strings.Contains(r.LastError, "--abandon") {
			return true
		}
		// So does its orphan mitigation (the bind's answer was lost): the binding's
		// DELETE needs its instance, and its retries say to drop it with "unbind
		// --abandon".
		if r := st.Retry; r != nil && st.OrphanMitigation != nil && strings.Contains(r.LastError, "is gone, so the broker cannot be asked") && strings.Contains(r.LastError, "--abandon") {
			return true
		}
		// And any other unbind of it (its deletion, the ids a rotation retired): every
		// DELETE of a binding names its instance (abandon_secret_test.go).
		if w.unbindWaitsForAbandonedInstance(b) {
			return true
		}
	}
	if w.staleSvcatBinding(b) { // migrate_test.go
		return true
	}
	if w.abandonedThenUnshared(b) { // abandon_test.go
		return true
	}
	if w.bindsStaleSvcatInstance(b) { // simevery_test.go
		return true
	}
	if w.copyWaitsForAPlace(b) { // simmisc_test.go
		return true
	}
	if b.DeletionTimestamp != nil || b.Status.Bound != nil || len(st.ExternalIDs) > 0 || len(b.Status.Retired) > 0 ||
		st.InFlight != nil || st.OrphanMitigation != nil {
		return false
	}
	if c := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionRefused); c != nil && c.Status == metav1.ConditionTrue {
		return true
	}
	ns, name := b.InstanceRef()
	_, err := w.checker.Instances().Get(context.Background(), ns, name)
	return store.IsNotFound(err)
}

// checkQuiescence checks invariants 1, 3, 4 and 7 once faults stopped and reconcile ran
// until nothing was pending.
func (w *world) checkQuiescence() {
	insts, binds := w.records()
	w.checkWaits(insts)
	w.checkEnv(binds)
	owned := map[string]string{}
	for _, x := range insts {
		for _, id := range instanceIDs(x) {
			owned[id] = "instance " + x.Namespace + "/" + x.Name
		}
		if w.waitsForCredentials(x) || w.copiesWaitForAPlace(x, binds) { // simmisc_test.go
			continue
		}
		if w.staleSvcatInstance(x) { // simevery_test.go
			if msg, _ := readyMessage(&x.Status.OperationStatus); msg == "" {
				w.fail("instance %s/%s waits for a person and no condition says why", x.Namespace, x.Name)
			}
			continue
		}
		w.checkFinal("instance", x, &x.Status.OperationStatus, instanceIDs(x))
	}
	for _, x := range binds {
		for _, id := range bindingIDs(x) {
			owned[id] = "binding " + x.Namespace + "/" + x.Name
		}
		if w.waitsForAPerson(x) {
			if msg, _ := readyMessage(&x.Status.OperationStatus); msg == "" {
				w.fail("binding %s/%s waits for a person and no condition says why", x.Namespace, x.Name)
			}
			continue
		}
		// A binding of an instance the broker lied about cannot settle either.
		ids := bindingIDs(x)
		ins, name := x.InstanceRef()
		for _, i := range insts {
			if i.Namespace == ins && i.Name == name {
				ids = append(ids, instanceIDs(i)...)
			}
		}
		w.checkFinal("binding", x, &x.Status.OperationStatus, ids)
	}
	w.checkHeldPlans(insts)
	w.checkHeldMaintenance(insts) // upgrade_test.go
	w.checkMigrated(insts, binds) // migrate_test.go
	w.checkMoved(insts, binds)    // move_test.go
	w.checkNamespaceGone()
	w.checkRevoked(insts)
	w.checkReleases()
	w.checkFiles(true)
	w.checkUpCopies(insts, binds)
	w.checkRebindsQuiet(insts)
	// 1: everything the broker holds is owned by a record, except what the broker said
	// it did not hold (a delete's success it did not apply): the engine cannot know.
	lied := w.book.lied
	for _, h := range w.ledger.Instances() {
		if _, ok := owned[h.ID]; !ok && h.Namespace != "t" && !lied(h.ID) && !w.abandonedID(h.ID, "") && !w.leftBySvcat(h.ID) && !w.heldByNew(h.ID) {
			w.fail("the broker holds instance %s (namespace %s) and no record owns it (answers: %s)", h.ID, h.Namespace, w.answersFor(h.ID))
		}
	}
	for _, h := range w.ledger.Bindings() {
		if w.abandonedID(h.ID, h.InstanceID) || w.nextReleaseOwns(h.ID) || w.leftBySvcat(h.ID) || w.heldByNew(h.ID) {
			continue
		}
		if _, ok := owned[h.ID]; !ok && h.Namespace != "t" {
			if !lied(h.ID) {
				w.fail("the broker holds binding %s (namespace %s) and no record owns it (answers: %s)", h.ID, h.Namespace, w.answersFor(h.ID))
			}
			continue
		}
		// 3: its credentials are in the binding's Secret: those it holds, or those it
		// last handed out if it lied about them (a 201 with other credentials than it
		// keeps). A binding it holds after refusing it is a lie too, and so is one whose
		// bind it answered as done without carrying it out: which credentials the engine
		// keeps then is no guarantee.
		if t := w.book.ids[h.ID]; h.Namespace != "t" && !lied(h.ID) && (t == nil || !t.unheldSuccess) && !w.waitsForAPlace(h.ID, binds) {
			creds := h.Credentials
			if t := w.book.ids[h.ID]; t != nil && t.handed != nil {
				creds = t.handed
			}
			w.checkCredentials(h.ID, creds, binds)
		}
	}
	// 9: no credentials in any ConfigMap, wherever the broker put them.
	cms, err := w.cluster.Core.CoreV1().ConfigMaps("").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		panic(err)
	}
	for i := range cms.Items {
		w.checkConfigMapSecrets(&cms.Items[i])
	}
}

func (w *world) answersFor(id string) string {
	if t := w.book.ids[id]; t != nil {
		return strings.Join(t.answers, ", ")
	}
	return "none"
}

// checkForgotten is invariant 10: a record drops an OSB id it sent a create for only
// after the broker answered, for that id, what means in the spec's terms that it holds
// nothing under it (a delete's 200 or 410, a delete's poll that succeeded or answered
// 410, a 4xx to its first create). keys are the ConfigMaps written since the last check
// and insts and binds the records of those still there.
func (w *world) checkForgotten(keys []string, insts []*v1alpha1.ServiceInstance, binds []*v1alpha1.ServiceBinding) {
	now := map[string][]string{}
	for _, x := range insts {
		now[x.Namespace+"/"+store.ConfigMapName(v1alpha1.KindServiceInstance, x.Name)] = instanceIDs(x)
	}
	for _, x := range binds {
		now[x.Namespace+"/"+store.ConfigMapName(v1alpha1.KindServiceBinding, x.Name)] = bindingIDs(x)
	}
	for _, key := range keys {
		if strings.HasPrefix(key, "t/") {
			continue
		}
		ids, before := now[key], w.book.holds[key]
		if _, there := now[key]; !there && w.releasedRecord(key) {
			// Released to the new cluster of the move world, which holds it now (move_test.go).
			delete(w.book.holds, key)
			continue
		}
		if _, there := now[key]; !there && w.abandoning() {
			// Dropped by an --abandon: what it held stays at the broker.
			for _, id := range before {
				w.abandoned[id] = true
			}
			w.abandonedRecords[key] = true
			delete(w.book.holds, key)
			continue
		}
		for _, id := range before {
			t := w.book.ids[id]
			if slices.Contains(ids, id) || t == nil || !t.created || t.gone || w.forgedIDs[key+" "+id] { // simmisc_test.go
				continue
			}
			w.fail("record %s dropped OSB id %s, which the broker may hold: no answer for it meant gone (answers: %s)",
				key, id, strings.Join(t.answers, ", "))
		}
		if len(ids) == 0 {
			delete(w.book.holds, key)
		} else {
			w.book.holds[key] = ids
		}
	}
}

// checkNoSecrets is invariant 9 for the ConfigMaps written in a step.
func (w *world) checkNoSecrets(keys []string) {
	for _, key := range keys {
		ns, name, _ := strings.Cut(key, "/")
		cm, err := w.cluster.Core.CoreV1().ConfigMaps(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err == nil {
			w.checkConfigMapSecrets(cm)
		}
	}
}

func (w *world) checkConfigMapSecrets(cm *corev1.ConfigMap) {
	for k, v := range cm.Data {
		for _, s := range w.book.secrets {
			if strings.Contains(v, s) {
				w.fail("ConfigMap %s/%s holds a credential the broker gave (%q, under key %q)", cm.Namespace, cm.Name, s, k)
				return
			}
		}
	}
}

func (w *world) checkCredentials(id string, creds map[string]any, binds []*v1alpha1.ServiceBinding) {
	for _, b := range binds {
		if b.Status.Bound == nil || b.Status.Bound.BindingID != id {
			continue
		}
		if b.DeletionTimestamp != nil && w.staleSvcatBinding(b) {
			// (Its unbind removed its Secret first, then could not reach the broker:
			// its instance is gone. It waits for a person: see staleSvcatBinding.)
			return
		}
		s, err := w.cluster.Core.CoreV1().Secrets(b.Namespace).Get(context.Background(), b.Spec.SecretName, metav1.GetOptions{})
		if err != nil {
			w.fail("binding %s/%s is bound as %s but its Secret %q cannot be read: %v", b.Namespace, b.Name, id, b.Spec.SecretName, err)
			return
		}
		want := ""
		if p, ok := creds["password"]; ok {
			want = fmt.Sprint(p)
		}
		if got := string(s.Data["password"]); got != want {
			w.fail("binding %s/%s is bound as %s but its Secret holds other credentials than the broker returned", b.Namespace, b.Name, id)
		}
		return
	}
	if w.refusedWhileHeld(id) { // simnew_test.go
		return
	}
	w.fail("the broker holds binding %s with credentials no binding record is bound to", id)
}

// checkFinal is invariants 4 and 7: a record not terminal says why (any record), and
// outside the tenant's namespace every record is terminal, or (an id of its got answers
// off the spec: a broker that said it created what it did not, say) fails visibly, its
// condition naming the broker's answer. ids are the ids it may hold at the broker.
func (w *world) checkFinal(kind string, x metav1.Object, st *v1alpha1.OperationStatus, ids []string) {
	name := kind + " " + x.GetNamespace() + "/" + x.GetName()
	if terminal(x, st) {
		return
	}
	msg, _ := readyMessage(st)
	if msg == "" && x.GetNamespace() != "t" {
		// (The tenant may strip her record of its conditions and of the label that
		// makes reconcile list it: nothing steps it again, and nobody else is hurt.)
		status, _ := json.Marshal(st)
		w.fail("%s is not settled and no condition says why (deleting: %t, status %s)", name, x.GetDeletionTimestamp() != nil, status)
		return
	}
	rogue := slices.ContainsFunc(ids, func(id string) bool { t := w.book.ids[id]; return t != nil && t.rogue })
	// A record the broker lied about waits on the broker's word, and so does a binding
	// waiting on its instance's deletion that the lie holds up ("is being deprovisioned
	// and cannot be bound"; the instance's own condition says why).
	liedTo := rogue && (strings.Contains(msg, "the broker answered") || kind == "binding" && strings.Contains(msg, "is being deprovisioned and cannot be bound"))
	if x.GetNamespace() != "t" && !w.selfInflicted(x) && !w.stalledUnverifiedMigration(x, msg) && !liedTo {
		w.fail("%s never settled after the faults stopped: %s", name, msg)
	}
}

// instanceIDs are the ids the broker may hold of an instance, as its status says.
func instanceIDs(x *v1alpha1.ServiceInstance) []string {
	ids := slices.Clone(x.Status.ExternalIDs)
	if x.Status.Provisioned != nil {
		ids = append(ids, x.CurrentExternalID())
	}
	if op := x.Status.InFlight; op != nil {
		ids = append(ids, op.InstanceID)
	}
	return ids
}

// bindingIDs are the ids the broker may hold of a binding, as its status says.
func bindingIDs(x *v1alpha1.ServiceBinding) []string {
	ids := append(slices.Clone(x.Status.ExternalIDs), x.Status.Retired...)
	if x.Status.Bound != nil {
		ids = append(ids, x.Status.Bound.BindingID)
	}
	if op := x.Status.InFlight; op != nil {
		ids = append(ids, op.BindingID)
	}
	return ids
}

// checkStepError is part of invariant 6: whatever the broker answers, a record's step
// fails only as the engine's API says it may (the record could not be read or written,
// or the process stopped): a broker's answer is recorded in the record's status, never
// an error that would stop reconcile from stepping the records after it.
func (w *world) checkStepError(ctx context.Context, record string, err error) {
	var status apierrors.APIStatus
	// A claim that could not be renewed during the call is a write that failed.
	claim := strings.Contains(err.Error(), "the claim on the record could not be renewed")
	if ctx.Err() != nil || errors.Is(err, errKilled) || errors.As(err, &status) || store.IsNotFound(err) || claim {
		return
	}
	w.fail("the step of record %s failed with an error that is not the API server's: %v", record, err)
}

// unsettled says what the records that are not settled wait for.
func (w *world) unsettled() string {
	insts, binds := w.records()
	var out []string
	for _, x := range insts {
		if !terminal(x, &x.Status.OperationStatus) {
			msg, _ := readyMessage(&x.Status.OperationStatus)
			if r := x.Status.Retry; r != nil {
				msg += fmt.Sprintf(" (retry: %s, attempt %d)", r.Reason, r.Attempts)
			}
			if op := x.Status.InFlight; op != nil {
				msg += fmt.Sprintf(" (in flight: %s, async %t)", op.Type, op.Async)
			}
			out = append(out, fmt.Sprintf("instance %s/%s: %s", x.Namespace, x.Name, msg))
		}
	}
	for _, x := range binds {
		if !terminal(x, &x.Status.OperationStatus) {
			msg, _ := readyMessage(&x.Status.OperationStatus)
			out = append(out, fmt.Sprintf("binding %s/%s: %s", x.Namespace, x.Name, msg))
		}
	}
	return "not settled: " + strings.Join(out, "; ")
}
