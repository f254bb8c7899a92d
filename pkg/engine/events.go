package engine

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// Event types, as Kubernetes names them.
const (
	EventNormal  = "Normal"
	EventWarning = "Warning"
)

// Event is what the engine reports about a record: Regarding names the record's
// ConfigMap. Note never holds credentials: the engine puts only its own words and the
// broker's description there, truncated by NewEvent.
type Event struct {
	Namespace, Name string    // the record's ConfigMap
	UID             types.UID // the ConfigMap's uid, when known
	Type            string    // EventNormal or EventWarning
	Reason          string    // e.g. "ProvisionRequested", "BindFailed", "RetryScheduled"
	Action          string    // e.g. "Provision", "Bind", "OrphanMitigation"
	Note            string
}

// MaxEventNote bounds an event's note, as the API server bounds events' messages.
const MaxEventNote = 1024

// NewEvent returns an event with its note truncated to MaxEventNote bytes (on a rune
// boundary).
func NewEvent(namespace, name, typ, reason, action, note string) Event {
	if len(note) > MaxEventNote {
		cut := MaxEventNote - len("...")
		for cut > 0 && !utf8.RuneStart(note[cut]) {
			cut--
		}
		note = note[:cut] + "..."
	}
	return Event{Namespace: namespace, Name: name, Type: typ, Reason: reason, Action: action, Note: strings.TrimSpace(note)}
}

// EventRecorder records events about records. Config.Events nil records none. A
// recorder must not fail the caller: one without permission to create events logs
// that and carries on.
type EventRecorder interface {
	Record(ctx context.Context, ev Event)
}

// event records ev when the engine has a recorder; engine code calls it in one line.
func (e *Engine) event(ctx context.Context, ev Event) {
	if e.cfg.Events != nil {
		e.cfg.Events.Record(ctx, ev)
	}
}

// EventSink writes event objects: Create makes a new one, Update raises the count and
// last-seen time of one made earlier (an events.k8s.io series).
type EventSink interface {
	Create(ctx context.Context, ev Event, at time.Time) (id string, err error)
	Update(ctx context.Context, id string, ev Event, count int, last time.Time) error
}

// Aggregator is an EventRecorder that, like Kubernetes' own event recorder, folds
// repeats of one event (same record, type, reason and action) seen within Window of
// its last write into one object with a count, written at most once per Interval. A
// record retried any number of times thus leaves one event object per distinct
// reason per Window, not one per retry. The repeats of the last Interval are written
// by Flush, which a process calls before it ends.
type Aggregator struct {
	Sink EventSink
	// Now is the clock; default time.Now.
	Now func() time.Time
	// Window is how long a repeat joins the earlier object; default 30 minutes.
	Window time.Duration
	// Interval is the least time between two writes of one series; default 30 seconds.
	// Repeats in between are counted and written with the next write.
	Interval time.Duration
	// Log, if set, is told of a write that failed. After a write is forbidden in a
	// namespace (a user without permission to create events there, a namespace being
	// deleted, an events quota filled) the Aggregator records none there for
	// EventsPausedFor; other namespaces' Events are still recorded.
	Log func(err error)

	mu     sync.Mutex
	series map[eventKey]*eventSeries
	// paused is until when the Events of a namespace are not recorded.
	paused map[string]time.Time
}

// EventsPausedFor is how long the Events of a namespace are not recorded after a write
// there was forbidden.
const EventsPausedFor = 5 * time.Minute

// pausedLocked reports whether the Events of namespace ns are not recorded at t, and
// forgets a pause that has ended.
func (a *Aggregator) pausedLocked(ns string, t time.Time) bool {
	until, ok := a.paused[ns]
	if ok && t.Before(until) {
		return true
	}
	delete(a.paused, ns)
	return false
}

// pauseLocked stops the Events of namespace ns from t for EventsPausedFor after err, a
// forbidden write there.
func (a *Aggregator) pauseLocked(ns string, t time.Time, err error) {
	if !apierrors.IsForbidden(err) {
		return
	}
	if a.paused == nil {
		a.paused = map[string]time.Time{}
	}
	a.paused[ns] = t.Add(EventsPausedFor)
}

type eventKey struct{ ns, name, typ, reason, action string }

type eventSeries struct {
	id      string
	count   int // repeats seen
	written int // count last written
	first   time.Time
	last    time.Time // last seen
	wrote   time.Time // last written
	latest  Event     // last seen: its note is written with the count
}

// Record implements EventRecorder.
func (a *Aggregator) Record(ctx context.Context, ev Event) {
	now := time.Now
	if a.Now != nil {
		now = a.Now
	}
	window, interval := a.Window, a.Interval
	if window <= 0 {
		window = 30 * time.Minute
	}
	if interval <= 0 {
		interval = 30 * time.Second
	}
	t := now()
	k := eventKey{ev.Namespace, ev.Name, ev.Type, ev.Reason, ev.Action}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.series == nil {
		a.series = map[eventKey]*eventSeries{}
	}
	if a.pausedLocked(ev.Namespace, t) {
		return
	}
	s := a.series[k]
	if s == nil || s.id == "" || t.Sub(s.last) > window {
		id, err := a.Sink.Create(ctx, ev, t)
		if err != nil {
			a.pauseLocked(ev.Namespace, t, err)
			a.fail(err)
			return
		}
		a.series[k] = &eventSeries{id: id, count: 1, written: 1, first: t, last: t, wrote: t, latest: ev}
		a.gc(t, window)
		return
	}
	s.count++
	s.last, s.latest = t, ev
	if t.Sub(s.wrote) < interval {
		return
	}
	if err := a.Sink.Update(ctx, s.id, ev, s.count, t); err != nil {
		a.pauseLocked(ev.Namespace, t, err)
		a.fail(err)
		return
	}
	s.written, s.wrote = s.count, t
}

// Flush writes the repeats each series saw since its last write. Without it, the
// repeats of a process's last Interval would be lost with the process: a record
// retried every few seconds by short runs (a CronJob's reconcile, a verb's --wait)
// would show a count of about one per run, not one per retry.
func (a *Aggregator) Flush(ctx context.Context) {
	a.flush(ctx)
	// A sink that writes in the background is waited for.
	if d, ok := a.Sink.(interface{ Drain(context.Context) }); ok {
		d.Drain(ctx)
	}
}

func (a *Aggregator) flush(ctx context.Context) {
	now := time.Now
	if a.Now != nil {
		now = a.Now
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	t := now()
	for k, s := range a.series {
		if s.count == s.written || a.pausedLocked(k.ns, t) {
			continue
		}
		if err := a.Sink.Update(ctx, s.id, s.latest, s.count, s.last); err != nil {
			a.pauseLocked(k.ns, t, err)
			a.fail(err)
			continue
		}
		s.written, s.wrote = s.count, t
	}
}

// gc forgets series not seen within window, so that a long --serve run holds only
// recent ones.
func (a *Aggregator) gc(t time.Time, window time.Duration) {
	for k, s := range a.series {
		if t.Sub(s.last) > window {
			delete(a.series, k)
		}
	}
}

func (a *Aggregator) fail(err error) {
	if a.Log != nil {
		a.Log(err)
	}
}

// statusEvents records what changed between a record's status as read (before) and as
// written (after): a broker call requested, accepted, succeeded or failed, a retry
// scheduled, a refusal, orphan mitigation started or finished. Deriving events from the
// written status keeps the engine's functions free of event calls and records only
// what was stored. Events whose reason is in sent were recorded already (answerEvents)
// and are left out.
func statusEvents(e *Engine, ctx context.Context, before, after opRecord, sent ...string) {
	for _, c := range e.changes(before, after) {
		if !slices.Contains(sent, c.Reason) {
			e.event(ctx, c.Event)
		}
	}
}

// answerEvents records, before the write of an outcome goes out (so that the Events go
// out with it, not after it), the events of the change from before to after that say
// only what the broker answered (a call succeeded, or was accepted), which is true
// whether or not the write lands, and returns their reasons. What the write records
// (a failure, a retry scheduled, orphan mitigation started, a refusal) is recorded once it is
// stored (statusEvents); an outcome whose write then fails is followed by
// outcomeNotRecordedEvent.
func answerEvents(e *Engine, ctx context.Context, before, after opRecord) []string {
	var sent []string
	for _, c := range e.changes(before, after) {
		if c.answer {
			e.event(ctx, c.Event)
			sent = append(sent, c.Reason)
		}
	}
	return sent
}

// ReasonOutcomeNotRecorded is the Warning Event of a broker's answer whose Event was
// recorded but whose outcome could not be written to the record.
const ReasonOutcomeNotRecorded = "OutcomeNotRecorded"

// outcomeNotRecordedEvent records that the broker's answer to x's call in flight, which
// an Event already reported, could not be recorded, and what happens then (then).
func outcomeNotRecordedEvent(e *Engine, ctx context.Context, x opRecord, cause error, then string) {
	ns, name, ok := eventTarget(x)
	op := x.OpStatus().InFlight
	if !ok || op == nil || e.cfg.Events == nil {
		return
	}
	action := string(op.Type)
	if x.OpStatus().OrphanMitigation != nil {
		action = "OrphanMitigation"
	}
	ev := NewEvent(ns, name, EventWarning, ReasonOutcomeNotRecorded, action,
		fmt.Sprintf("the broker's answer to the %s could not be recorded (%v); %s", strings.ToLower(string(op.Type)), cause, then))
	ev.UID = x.GetUID()
	e.event(ctx, ev)
}

// statusChange is an event a status change stands for; answer marks one that says only
// what the broker answered.
type statusChange struct {
	Event
	answer bool
}

// changes lists the events of the change from before to after, with the record's names.
func (e *Engine) changes(before, after opRecord) []statusChange {
	if e.cfg.Events == nil {
		return nil
	}
	ns, name, ok := eventTarget(after)
	if !ok {
		return nil
	}
	uid := after.GetUID()
	retiring := false
	if b, ok := before.(*v1alpha1.ServiceBinding); ok {
		op := b.Status.InFlight
		retiring = op != nil && op.Type == v1alpha1.OperationUnbind && b.DeletionTimestamp == nil &&
			slices.Contains(b.Status.Retired, op.BindingID)
	}
	out := statusChanges(before.OpStatus(), after.OpStatus())
	for i := range out {
		if retiring && out[i].Reason == "UnbindSucceeded" {
			// The unbind of an id a rotation replaced ends the rotation.
			out[i].Event = NewEvent("", "", EventNormal, "RotationFinished", "Rotation",
				"the credentials a rotation replaced were unbound at the broker")
		}
		out[i].Namespace, out[i].Name, out[i].UID = ns, name, uid
	}
	return out
}

// eventTarget is the namespace and ConfigMap name Events about x regard.
func eventTarget(x metav1.Object) (ns, name string, ok bool) {
	var kind string
	switch x.(type) {
	case *v1alpha1.ServiceInstance:
		kind = v1alpha1.KindServiceInstance
	case *v1alpha1.ServiceBinding:
		kind = v1alpha1.KindServiceBinding
	default:
		return "", "", false
	}
	return x.GetNamespace(), store.ConfigMapName(kind, x.GetName()), true
}

// releaseEvent records that the broker confirmed the deletion of a record being deleted
// (confirmed: recorded as its release is written), or that the record was released
// because the broker held nothing of it.
func releaseEvent(e *Engine, ctx context.Context, x metav1.Object, confirmed bool) {
	ns, name, ok := eventTarget(x)
	if !ok || e.cfg.Events == nil {
		return
	}
	action, done := "Deprovision", "deprovision"
	if _, ok := x.(*v1alpha1.ServiceBinding); ok {
		action, done = "Unbind", "unbind"
	}
	ev := NewEvent(ns, name, EventNormal, "Released", action,
		"the broker holds nothing of this record; it is released without a broker call")
	if confirmed {
		ev = NewEvent(ns, name, EventNormal, action+"Succeeded", action,
			"the broker answered that the "+done+" succeeded: it confirmed the deletion, so the record is to be released")
	}
	ev.UID = x.GetUID()
	e.event(ctx, ev)
}

// statusChanges lists the events a status change from b to a stands for, without the
// record's names: those that say only what the broker answered to the call in flight
// (it succeeded, or accepted the call to work on it asynchronously) marked as answers.
func statusChanges(b, a *v1alpha1.OperationStatus) []statusChange {
	var out []statusChange
	add := func(typ, reason, action, note string) {
		out = append(out, statusChange{Event: NewEvent("", "", typ, reason, action, note)})
	}
	answer := func(typ, reason, action, note string) {
		out = append(out, statusChange{Event: NewEvent("", "", typ, reason, action, note), answer: true})
	}
	opName := func(op *v1alpha1.Operation, om bool) string {
		if om {
			return "OrphanMitigation"
		}
		return string(op.Type)
	}
	bOM, aOM := b.OrphanMitigation != nil, a.OrphanMitigation != nil
	if !bOM && aOM {
		add(EventWarning, "OrphanMitigationStarted", "OrphanMitigation",
			"the outcome of the last call is uncertain: what it may have created is to be deleted at the broker")
	}
	switch bi, ai := b.InFlight, a.InFlight; {
	case bi != nil && ai == nil && bOM && !aOM:
		// The mitigating call succeeded: OrphanMitigationFinished below says so; a
		// failure it ends with is the Failed condition's event.
	case ai != nil && (bi == nil || bi.Type != ai.Type || bi.RequestID != ai.RequestID):
		add(EventNormal, opName(ai, aOM)+"Requested", opName(ai, aOM), fmt.Sprintf("%s sent to the broker", strings.ToLower(string(ai.Type))))
		if ai.Async {
			add(EventNormal, opName(ai, aOM)+"Accepted", opName(ai, aOM), "the broker accepted the request and works on it asynchronously")
		}
	case ai != nil && bi != nil && !bi.Async && ai.Async:
		answer(EventNormal, opName(ai, aOM)+"Accepted", opName(ai, aOM), "the broker accepted the request and works on it asynchronously")
	case bi != nil && ai == nil && a.Retry == nil && a.Phase != v1alpha1.PhaseFailed:
		answer(EventNormal, opName(bi, bOM)+"Succeeded", opName(bi, bOM), fmt.Sprintf("the broker answered that the %s succeeded", strings.ToLower(string(bi.Type))))
	case bi != nil && ai == nil:
		msg := ""
		if a.Retry != nil {
			msg = a.Retry.LastError
		} else if c := meta.FindStatusCondition(a.Conditions, v1alpha1.ConditionFailed); c != nil {
			msg = c.Message
		}
		add(EventWarning, opName(bi, bOM)+"Failed", opName(bi, bOM), msg)
	}
	if bOM && !aOM {
		add(EventNormal, "OrphanMitigationFinished", "OrphanMitigation", "what the uncertain call may have created is deleted at the broker")
	}
	if r := a.Retry; r != nil && r.NextRetryAt != nil &&
		(b.Retry == nil || b.Retry.Attempts != r.Attempts || b.Retry.NextRetryAt == nil || !b.Retry.NextRetryAt.Equal(r.NextRetryAt)) {
		add(EventWarning, "RetryScheduled", actionOf(r.Reason), fmt.Sprintf("%s: %s (attempt %d; next retry at %s)",
			r.Reason, r.LastError, r.Attempts, r.NextRetryAt.UTC().Format(time.RFC3339)))
	}
	if c := meta.FindStatusCondition(a.Conditions, v1alpha1.ConditionRefused); c != nil && c.Status == metav1.ConditionTrue {
		if p := meta.FindStatusCondition(b.Conditions, v1alpha1.ConditionRefused); p == nil || p.Status != metav1.ConditionTrue || p.Reason != c.Reason {
			add(EventWarning, c.Reason, "Refused", c.Message)
		}
	}
	if c := meta.FindStatusCondition(a.Conditions, v1alpha1.ConditionFailed); c != nil && c.Status == metav1.ConditionTrue && (b.InFlight == nil || (bOM && !aOM)) {
		if p := meta.FindStatusCondition(b.Conditions, v1alpha1.ConditionFailed); p == nil || p.Status != metav1.ConditionTrue || p.Reason != c.Reason || p.ObservedGeneration != c.ObservedGeneration {
			add(EventWarning, c.Reason, "Failed", c.Message)
		}
	}
	if b.ExternalID != a.ExternalID && a.ExternalID != "" && !aOM && !bOM {
		add(EventNormal, "Rotated", "Rotation", "the next call uses a new OSB id")
	}
	return out
}
