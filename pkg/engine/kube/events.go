package kube

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
)

// EventRecorder is the engine's recorder of Events, written with the caller's
// credentials: the user's for a verb (reporting instance "cli", holder empty), the
// ServiceAccount's for reconcile (its host or pod, from holder). A caller who may not
// create events records none; -v=2 says why. Events are written in the background, the
// writes of different Events up to writers at once (DefaultEventWriters when 0); Flush
// waits for them.
func EventRecorder(core kubernetes.Interface, holder string, writers int) engine.EventRecorder {
	instance := "cli"
	if holder != "" {
		instance, _ = os.Hostname()
		if _, after, ok := strings.Cut(holder, "@"); ok {
			instance, _, _ = strings.Cut(after, "/")
		}
	}
	log := func(err error) {
		klog.V(2).Infof("events not recorded: %v", err)
	}
	return eventRecorder(core, instance, log, writers, time.Now)
}

// eventRecorder is EventRecorder with the reporting instance, the log of failed writes
// and the clock given.
func eventRecorder(core kubernetes.Interface, instance string, log func(error), writers int, now func() time.Time) engine.EventRecorder {
	sink := newAsyncSink(&APIEventSink{Client: core, Instance: instance}, log, writers)
	sink.now = now
	return &engine.Aggregator{Sink: sink, Log: log, Now: now}
}

// EventsPausedFor is how long the Events of a namespace are not written after the API
// server forbade one there.
const EventsPausedFor = engine.EventsPausedFor

// ReportingController names the catalog in the Events it records.
const ReportingController = "kubectl-catalog"

// APIEventSink writes events.k8s.io/v1 Events about records' ConfigMaps. Instance is the
// reportingInstance: the host or pod running reconcile, or "cli" for a verb.
//
// One series (record, type, reason, action) has one Event object, whose name is derived
// from them: a later process (the next CronJob run, the next command) that sees the same
// event again continues that object's count instead of making another, so a record
// retried every few seconds by short runs leaves one object per reason, not one per run.
type APIEventSink struct {
	Client   kubernetes.Interface
	Instance string

	// base is the count an Event had when this sink continued it, by id.
	base sync.Map
}

// eventName is the name of the Event of one series about record name.
func eventName(ev engine.Event) string {
	h := sha256.Sum256([]byte(string(ev.UID) + "\x00" + ev.Type + "\x00" + ev.Reason + "\x00" + ev.Action))
	prefix := ev.Name
	if len(prefix) > 253-17 {
		prefix = prefix[:253-17]
	}
	return prefix + "." + hex.EncodeToString(h[:8])
}

// Create implements engine.EventSink; the id is "namespace/name" of the Event made, or of
// the one of the same series an earlier process made, whose count it then raises.
func (s *APIEventSink) Create(ctx context.Context, ev engine.Event, at time.Time) (string, error) {
	events := s.Client.EventsV1().Events(ev.Namespace)
	obj := &eventsv1.Event{
		ObjectMeta:          metav1.ObjectMeta{Namespace: ev.Namespace, Name: eventName(ev)},
		EventTime:           metav1.NewMicroTime(at),
		ReportingController: ReportingController,
		ReportingInstance:   s.Instance,
		Action:              ev.Action,
		Reason:              ev.Reason,
		Regarding:           corev1.ObjectReference{APIVersion: "v1", Kind: "ConfigMap", Namespace: ev.Namespace, Name: ev.Name, UID: ev.UID},
		Note:                ev.Note,
		Type:                ev.Type,
	}
	made, err := events.Create(ctx, obj, metav1.CreateOptions{})
	if err == nil {
		return made.Namespace + "/" + made.Name, nil
	}
	if !apierrors.IsAlreadyExists(err) {
		return "", err
	}
	cur, err := events.Get(ctx, obj.Name, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	id := cur.Namespace + "/" + cur.Name
	n := 1
	if cur.Series != nil {
		n = int(cur.Series.Count)
	}
	s.base.Store(id, n)
	return id, s.Update(ctx, id, ev, 1, at)
}

// Update implements engine.EventSink: it patches the Event's series (count and last time
// seen) and note. count is what this process saw, on top of the count the Event had when
// it continued it.
func (s *APIEventSink) Update(ctx context.Context, id string, ev engine.Event, count int, last time.Time) error {
	if b, ok := s.base.Load(id); ok {
		count += b.(int)
	}
	ns, name := splitID(id)
	patch, err := json.Marshal(map[string]any{
		"note":   ev.Note,
		"series": map[string]any{"count": count, "lastObservedTime": metav1.NewMicroTime(last)},
	})
	if err != nil {
		return err
	}
	_, err = s.Client.EventsV1().Events(ns).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
	return err
}

func splitID(id string) (string, string) {
	for i := range len(id) {
		if id[i] == '/' {
			return id[:i], id[i+1:]
		}
	}
	return "", id
}

var _ engine.EventSink = (*APIEventSink)(nil)
