package storetest

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"
)

// Request names a request the clientset got: "verb resource", and its name for a get or a
// delete ("get configmaps catalog-trust").
func Request(a clienttesting.Action) string {
	line := a.GetVerb() + " " + a.GetResource().Resource
	switch n := a.(type) {
	case clienttesting.GetAction:
		line += " " + n.GetName()
	case clienttesting.DeleteAction:
		line += " " + n.GetName()
	}
	return line
}

// EventRequest names the write of an Event by its verb and reason ("create events
// BindSucceeded").
func EventRequest(a clienttesting.Action) string {
	line := a.GetVerb() + " " + a.GetResource().Resource
	if o, ok := a.(clienttesting.CreateAction); ok {
		if ev, ok := o.GetObject().(*eventsv1.Event); ok {
			line += " " + ev.Reason
		}
	}
	return line
}

// MetadataList is how ExpectGroups names a list made through the cluster's metadata
// client (the OSB id checks' lists): "metadata-list configmaps".
const MetadataList = "metadata-list"

// groupTimeout is how long a request waits for the rest of its group: far longer than
// goroutines take to start, and short enough for a failing test.
const groupTimeout = 5 * time.Second

// ExpectGroups makes the clientset hold every request until all requests of its group
// (named as Request names them; a name may repeat) have arrived, group after group, and
// returns the check to call once the code under test is done: it fails the test unless
// the requests came exactly so. A request sent only once another of its group has been
// answered waits in vain, for a few seconds, and the check says which. Lists made through
// the metadata client are held and named the same way (MetadataList). Writes of Events
// are written in the background, in their own order: one is held and listed only when
// the group arriving names it (as EventRequest does: "create events ProvisionSucceeded"),
// and let through unheld and unlisted otherwise.
//
// The fake clientset holds its lock while its reactors run: the reactor that holds a
// request lets go of the lock while it waits, and takes it again before the request
// goes on to the cluster's own reactors, one at a time as ever.
func (c *Cluster) ExpectGroups(t testing.TB, groups ...[]string) (check func()) {
	t.Helper()
	g := &requestGroups{groups: groups}
	for range groups {
		g.released = append(g.released, make(chan struct{}))
	}
	if len(groups) > 0 {
		g.waiting = slices.Clone(groups[0])
	}
	c.Core.PrependReactor("*", "*", func(a clienttesting.Action) (bool, runtime.Object, error) {
		request := Request(a)
		if a.GetResource().Resource == "events" && a.GetVerb() != "list" && a.GetVerb() != "get" {
			request = EventRequest(a)
			if !g.awaited(request) {
				return false, nil, nil
			}
		}
		if release := g.arrived(request); release != nil {
			c.Core.Unlock()
			g.wait(request, release)
			c.Core.Lock()
		}
		return false, nil, nil
	})
	c.mu.Lock()
	c.metaListHeld = func(request string) {
		if release := g.arrived(request); release != nil {
			g.wait(request, release)
		}
	}
	c.mu.Unlock()
	return func() {
		t.Helper()
		g.mu.Lock()
		defer g.mu.Unlock()
		g.checked = true
		if g.next < len(g.groups) {
			g.problems = append(g.problems, fmt.Sprintf("group %d never arrived whole: still waiting for %q", g.next+1, g.waiting))
		}
		if len(g.problems) > 0 {
			t.Errorf("the requests did not come in the expected groups:\n  %s\nrequests in order of arrival:\n  %s",
				strings.Join(g.problems, "\n  "), strings.Join(g.seen, "\n  "))
		}
	}
}

// requestGroups is the state of ExpectGroups.
type requestGroups struct {
	mu       sync.Mutex
	groups   [][]string
	released []chan struct{}
	// next is the group whose requests are arriving; waiting, those of it still to come.
	next     int
	waiting  []string
	seen     []string
	problems []string
	// checked: the check ran; later requests are not this test's.
	checked bool
}

// awaited reports whether the group arriving names request.
func (g *requestGroups) awaited(request string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return !g.checked && slices.Contains(g.waiting, request)
}

// arrived takes note of request and returns the channel to wait on until its group is
// whole; nil when it need not wait (it completed its group, or was not expected).
func (g *requestGroups) arrived(request string) <-chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.checked {
		return nil
	}
	g.seen = append(g.seen, request)
	if len(g.problems) > 0 {
		// The test fails already: hold nothing more, so that it fails soon.
		return nil
	}
	if g.next >= len(g.groups) {
		g.problems = append(g.problems, fmt.Sprintf("%q came after the last group", request))
		return nil
	}
	i := slices.Index(g.waiting, request)
	if i < 0 {
		g.problems = append(g.problems, fmt.Sprintf("%q came while group %d %q was arriving", request, g.next+1, g.groups[g.next]))
		return nil
	}
	g.waiting = slices.Delete(g.waiting, i, i+1)
	release := g.released[g.next]
	if len(g.waiting) == 0 {
		close(release)
		g.next++
		if g.next < len(g.groups) {
			g.waiting = slices.Clone(g.groups[g.next])
		}
		return nil
	}
	return release
}

// wait holds request until release is closed (its group is whole), or until it has
// waited groupTimeout in vain.
func (g *requestGroups) wait(request string, release <-chan struct{}) {
	select {
	case <-release:
	case <-time.After(groupTimeout):
		g.timedOut(request)
	}
}

func (g *requestGroups) timedOut(request string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.problems = append(g.problems, fmt.Sprintf("%q waited %s for the rest of group %d, %q, which did not come while it waited", request, groupTimeout, g.next+1, g.waiting))
}
