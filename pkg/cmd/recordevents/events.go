// Package recordevents lists the Events recorded about a record's ConfigMap and writes
// them as the Events section that ends "kubectl catalog describe", in the manner of
// "kubectl describe".
package recordevents

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/ahead"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/iostreams"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/printers"
)

// List returns the events.k8s.io/v1 Events about ConfigMap namespace/name, oldest first.
// A uid other than "" leaves out Events about an earlier ConfigMap of that name (one
// with another uid); Events that name no uid are kept.
func List(ctx context.Context, client kubernetes.Interface, namespace, name string, uid types.UID) ([]eventsv1.Event, error) {
	list, err := listAbout(ctx, client, namespace, name)
	if err != nil {
		return nil, err
	}
	return about(list, name, uid), nil
}

// listAbout lists the Events about ConfigMap namespace/name, or every Event of the
// namespace on an API server that cannot select them.
func listAbout(ctx context.Context, client kubernetes.Interface, namespace, name string) (*eventsv1.EventList, error) {
	sel := fields.Set{"regarding.kind": "ConfigMap", "regarding.name": name}.AsSelector().String()
	list, err := client.EventsV1().Events(namespace).List(ctx, metav1.ListOptions{FieldSelector: sel})
	if apierrors.IsBadRequest(err) {
		// An API server that does not know these field labels: filter here.
		list, err = client.EventsV1().Events(namespace).List(ctx, metav1.ListOptions{})
	}
	return list, err
}

// about keeps the Events of list about ConfigMap name (of uid), oldest first.
func about(list *eventsv1.EventList, name string, uid types.UID) []eventsv1.Event {
	var out []eventsv1.Event
	for _, ev := range list.Items {
		r := ev.Regarding
		if r.Kind != "ConfigMap" || r.Name != name || (uid != "" && r.UID != "" && r.UID != uid) {
			continue
		}
		out = append(out, ev)
	}
	sort.SliceStable(out, func(i, j int) bool { return lastSeen(&out[i]).Before(lastSeen(&out[j])) })
	return out
}

// firstSeen is when an Event was first observed.
func firstSeen(ev *eventsv1.Event) time.Time {
	switch {
	case !ev.EventTime.IsZero():
		return ev.EventTime.Time
	case !ev.DeprecatedFirstTimestamp.IsZero():
		return ev.DeprecatedFirstTimestamp.Time
	}
	return ev.CreationTimestamp.Time
}

// lastSeen is when an Event (or the last of its series) was observed.
func lastSeen(ev *eventsv1.Event) time.Time {
	switch {
	case ev.Series != nil && !ev.Series.LastObservedTime.IsZero():
		return ev.Series.LastObservedTime.Time
	case !ev.DeprecatedLastTimestamp.IsZero():
		return ev.DeprecatedLastTimestamp.Time
	}
	return firstSeen(ev)
}

// count is how many times an Event was observed.
func count(ev *eventsv1.Event) int32 {
	switch {
	case ev.Series != nil && ev.Series.Count > 0:
		return ev.Series.Count
	case ev.DeprecatedCount > 0:
		return ev.DeprecatedCount
	}
	return 1
}

// Write writes the Events section: a table of Type, Reason, Age, From and Message,
// newest last, "<none>" without Events, and why they could not be listed when err is
// set (a user who may not list Events still gets the rest of describe).
func Write(w io.Writer, evs []eventsv1.Event, err error, namespace string, now time.Time) {
	switch {
	case err != nil && apierrors.IsForbidden(err):
		fmt.Fprintf(w, "Events:            <not shown: you may not list events in namespace %q>\n", namespace)
		return
	case err != nil:
		fmt.Fprintf(w, "Events:            <not shown: %s>\n", iostreams.SafeLine(oneLine(err.Error())))
		return
	case len(evs) == 0:
		fmt.Fprintln(w, "Events:            <none>")
		return
	}
	fmt.Fprintln(w, "Events:")
	t := printers.NewTable(w, "  TYPE", "REASON", "AGE", "FROM", "MESSAGE")
	for i := range evs {
		ev := &evs[i]
		t.Append("  "+ev.Type, ev.Reason, Age(ev, now), From(ev), oneLine(note(ev)))
	}
	_ = t.Render()
}

// Age is how long ago an Event was last observed, with its count and first observation
// for a series: "2m (x5 over 10m)".
func Age(ev *eventsv1.Event, now time.Time) string {
	last := since(lastSeen(ev), now)
	if n := count(ev); n > 1 {
		return fmt.Sprintf("%s (x%d over %s)", last, n, since(firstSeen(ev), now))
	}
	return last
}

func since(t, now time.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now.Sub(t))
}

// From names who recorded an Event: the controller, and its instance when known.
func From(ev *eventsv1.Event) string {
	c, i := ev.ReportingController, ev.ReportingInstance
	if c == "" {
		c, i = ev.DeprecatedSource.Component, ev.DeprecatedSource.Host
	}
	switch {
	case c == "":
		return "<unknown>"
	case i == "":
		return c
	}
	return c + ", " + i
}

func note(ev *eventsv1.Event) string {
	return ev.Note
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// Section ends a describe view on f.Out with the Events recorded about ConfigMap
// ns/name (of uid).
func Section(ctx context.Context, f *cmdutil.Factory, ns, name string, uid types.UID) {
	Ahead(ctx, f, ns, name).Section(uid)
}

// Pending is the Events section of a describe view, its Events being listed.
type Pending struct {
	f        *cmdutil.Factory
	ns, name string
	list     *ahead.Read[*eventsv1.EventList]
}

// Ahead starts listing the Events about ConfigMap ns/name, which need not wait for the
// record to be read: its uid only picks among them (Pending.Section).
func Ahead(ctx context.Context, f *cmdutil.Factory, ns, name string) *Pending {
	return &Pending{f: f, ns: ns, name: name, list: ahead.Start(ctx, func() (*eventsv1.EventList, error) {
		core, err := f.KubernetesClient()
		if err != nil {
			return nil, err
		}
		return listAbout(ctx, core, ns, name)
	})}
}

// Section ends a describe view on f.Out with the Events listed about the ConfigMap of
// uid.
func (p *Pending) Section(uid types.UID) {
	list, err := p.list.Wait()
	var evs []eventsv1.Event
	if err == nil {
		evs = about(list, p.name, uid)
	}
	Write(p.f.Out, evs, err, p.ns, p.f.Now())
}
