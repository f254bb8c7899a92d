package recordevents_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	"gotest.tools/v3/golden"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/recordevents"
)

var now = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func event(name, regarding string, uid types.UID, typ, reason, note string, at time.Time, series int32) *eventsv1.Event {
	ev := &eventsv1.Event{
		ObjectMeta:          metav1.ObjectMeta{Namespace: "dev", Name: name},
		EventTime:           metav1.NewMicroTime(at),
		ReportingController: "kubectl-catalog",
		ReportingInstance:   "cli",
		Regarding:           corev1.ObjectReference{Kind: "ConfigMap", Namespace: "dev", Name: regarding, UID: uid},
		Type:                typ,
		Reason:              reason,
		Note:                note,
	}
	if series > 1 {
		ev.Series = &eventsv1.EventSeries{Count: series, LastObservedTime: metav1.NewMicroTime(at.Add(9 * time.Minute))}
	}
	return ev
}

func TestList_OnlyTheRecordsEventsOldestFirst(t *testing.T) {
	cs := k8sfake.NewClientset(
		event("b", "catalog-instance.db", "u1", "Warning", "RetryScheduled", "attempt 3", now.Add(-10*time.Minute), 3),
		event("a", "catalog-instance.db", "u1", "Normal", "ProvisionRequested", "provision sent to the broker", now.Add(-20*time.Minute), 1),
		event("c", "catalog-instance.other", "u2", "Normal", "ProvisionRequested", "x", now, 1),
		event("d", "catalog-instance.db", "old", "Normal", "DeprovisionSucceeded", "an earlier record of that name", now, 1),
	)
	evs, err := recordevents.List(context.Background(), cs, "dev", "catalog-instance.db", "u1")
	assert.NilError(t, err)
	var names []string
	for _, e := range evs {
		names = append(names, e.Name)
	}
	assert.DeepEqual(t, names, []string{"a", "b"})
}

func TestWrite_Table(t *testing.T) {
	evs := []eventsv1.Event{
		*event("a", "catalog-instance.db", "u1", "Normal", "ProvisionRequested", "provision sent to the broker", now.Add(-20*time.Minute), 1),
		*event("b", "catalog-instance.db", "u1", "Warning", "RetryScheduled", "ProvisionCallFailed: refused\n(attempt 3)", now.Add(-15*time.Minute), 3),
	}
	var buf bytes.Buffer
	recordevents.Write(&buf, evs, nil, "dev", now)
	golden.Assert(t, buf.String(), "events.golden")
}

func TestWrite_NoneAndForbidden(t *testing.T) {
	var buf bytes.Buffer
	recordevents.Write(&buf, nil, nil, "dev", now)
	assert.Equal(t, buf.String(), "Events:            <none>\n")

	cs := k8sfake.NewClientset()
	cs.PrependReactor("list", "events", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "events.k8s.io", Resource: "events"}, "", nil)
	})
	evs, err := recordevents.List(context.Background(), cs, "dev", "catalog-instance.db", "")
	buf.Reset()
	recordevents.Write(&buf, evs, err, "dev", now)
	assert.Assert(t, is.Contains(buf.String(), `Events:            <not shown: you may not list events in namespace "dev">`))
}
