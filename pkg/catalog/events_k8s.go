package catalog

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// eventSeq keeps two Events made in one nanosecond apart.
var eventSeq atomic.Int64

// ReportingController names the catalog in the Events it records.
const ReportingController = "kubectl-catalog"

// APIEventSink writes events.k8s.io/v1 Events about records' ConfigMaps. Instance is the
// reportingInstance: the host or pod running reconcile, or "cli" for a verb.
type APIEventSink struct {
	Client   kubernetes.Interface
	Instance string
}

// Create implements EventSink; the id is "namespace/name" of the Event made.
func (s APIEventSink) Create(ctx context.Context, ev Event, at time.Time) (string, error) {
	obj := &eventsv1.Event{
		ObjectMeta:          metav1.ObjectMeta{Namespace: ev.Namespace, Name: fmt.Sprintf("%s.%x", ev.Name, at.UnixNano()+eventSeq.Add(1))},
		EventTime:           metav1.NewMicroTime(at),
		ReportingController: ReportingController,
		ReportingInstance:   s.Instance,
		Action:              ev.Action,
		Reason:              ev.Reason,
		Regarding:           corev1.ObjectReference{APIVersion: "v1", Kind: "ConfigMap", Namespace: ev.Namespace, Name: ev.Name, UID: ev.UID},
		Note:                ev.Note,
		Type:                ev.Type,
	}
	made, err := s.Client.EventsV1().Events(ev.Namespace).Create(ctx, obj, metav1.CreateOptions{})
	if err != nil {
		return "", err
	}
	return made.Namespace + "/" + made.Name, nil
}

// Update implements EventSink: it patches the Event's series (count and last time seen)
// and note.
func (s APIEventSink) Update(ctx context.Context, id string, ev Event, count int, last time.Time) error {
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
