package watchrecords_test

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	"gotest.tools/v3/poll"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/watchrecords"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/printers"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/records"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store/storetest"
	"github.com/kubectl-catalog/kubectl-catalog/test/testio"
)

// instanceCM is the ConfigMap of instance name in phase, at resourceVersion rv.
func instanceCM(t *testing.T, name string, phase v1alpha1.Phase, rv string) *corev1.ConfigMap {
	t.Helper()
	i := storetest.SampleInstance()
	i.Name, i.Status.Phase, i.Status.Conditions = name, phase, nil
	cm, err := store.Encode(i)
	assert.NilError(t, err)
	cm.UID, cm.ResourceVersion = types.UID("uid-"+name), rv
	return cm
}

// table renders instances as NAME and STATUS columns.
func table(w io.Writer, items []*v1alpha1.ServiceInstance) error {
	t := printers.NewTable(w, "NAME", "STATUS")
	for _, i := range items {
		t.Append(i.Name, string(i.Status.Phase))
	}
	return t.Render()
}

type fixture struct {
	cs       *k8sfake.Clientset
	mu       sync.Mutex
	watchers []*watch.FakeWatcher
	rvs      []string // resourceVersion each watch started from
	lists    int
	listed   []*corev1.ConfigMap
	listRV   string
}

func newFixture(t *testing.T, listed ...*corev1.ConfigMap) *fixture {
	f := &fixture{cs: k8sfake.NewClientset(), listed: listed, listRV: "100"}
	f.cs.PrependReactor("list", "configmaps", func(a k8stesting.Action) (bool, runtime.Object, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.lists++
		l := &corev1.ConfigMapList{ListMeta: metav1.ListMeta{ResourceVersion: f.listRV}}
		for _, cm := range f.listed {
			l.Items = append(l.Items, *cm)
		}
		return true, l, nil
	})
	f.cs.PrependWatchReactor("configmaps", func(a k8stesting.Action) (bool, watch.Interface, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		w := watch.NewFakeWithChanSize(10, false)
		f.watchers = append(f.watchers, w)
		f.rvs = append(f.rvs, a.(k8stesting.WatchActionImpl).WatchRestrictions.ResourceVersion)
		return true, w, nil
	})
	return f
}

func (f *fixture) watcher(t *testing.T, n int) *watch.FakeWatcher {
	t.Helper()
	poll.WaitOn(t, func(poll.LogT) poll.Result {
		f.mu.Lock()
		defer f.mu.Unlock()
		if len(f.watchers) >= n {
			return poll.Success()
		}
		return poll.Continue("%d watches", len(f.watchers))
	}, poll.WithTimeout(5*time.Second), poll.WithDelay(5*time.Millisecond))
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.watchers[n-1]
}

func waitFor(t *testing.T, out *testio.Buffer, want string) {
	t.Helper()
	poll.WaitOn(t, func(poll.LogT) poll.Result {
		if strings.Contains(out.String(), want) {
			return poll.Success()
		}
		return poll.Continue("output so far:\n%s", out.String())
	}, poll.WithTimeout(5*time.Second), poll.WithDelay(5*time.Millisecond))
}

func start(t *testing.T, f *fixture, out *testio.Buffer, only bool) func() error {
	return startWith(t, f, out, printers.NewOutputFlags(true), only)
}

// newFlagSet is a command's flags with o's -o flag.
func newFlagSet(o *printers.OutputFlags) *pflag.FlagSet {
	cmd := &cobra.Command{}
	o.AddFlags(cmd)
	return cmd.Flags()
}

func startWith(t *testing.T, f *fixture, out *testio.Buffer, o *printers.OutputFlags, only bool) func() error {
	return startSorted(t, f, out, o, nil, only)
}

func startSorted(t *testing.T, f *fixture, out *testio.Buffer, o *printers.OutputFlags, l *printers.ListFlags, only bool) func() error {
	sel, err := store.Selector(v1alpha1.KindServiceInstance, store.Filter{})
	assert.NilError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- watchrecords.Watch(ctx, records.NewWatcher(f.cs), []watchrecords.Source{{Namespace: "dev", Selector: sel}}, watchrecords.Printing[*v1alpha1.ServiceInstance]{
			Out: out, Output: o, List: l, Table: table, WatchOnly: only,
			Keep: func(i *v1alpha1.ServiceInstance) bool { return i.Name != "hidden" },
		}, nil)
	}()
	return func() error {
		cancel()
		select {
		case err := <-done:
			return err
		case <-time.After(5 * time.Second):
			return fmt.Errorf("the watch did not end")
		}
	}
}

func TestWatch_TableThenOneRowPerChangeFromTheListsResourceVersion(t *testing.T) {
	f := newFixture(t, instanceCM(t, "db", v1alpha1.PhaseProvisioning, "90"), instanceCM(t, "hidden", v1alpha1.PhaseReady, "91"))
	out := &testio.Buffer{}
	stop := start(t, f, out, false)

	waitFor(t, out, "NAME")
	w := f.watcher(t, 1)
	w.Modify(instanceCM(t, "db", v1alpha1.PhaseReady, "101"))
	w.Add(instanceCM(t, "cache", v1alpha1.PhaseProvisioning, "102"))
	w.Modify(instanceCM(t, "hidden", v1alpha1.PhaseFailed, "103"))
	w.Delete(instanceCM(t, "cache", v1alpha1.PhaseDeprovisioning, "104"))
	waitFor(t, out, "cache   Deprovisioning")

	assert.NilError(t, stop(), "Ctrl-C ends the watch without an error")
	assert.Equal(t, out.String(), ""+
		"NAME   STATUS\n"+
		"db     Provisioning\n"+
		"db     Ready\n"+
		"cache   Provisioning\n"+
		"cache   Deprovisioning\n")
	assert.Equal(t, f.rvs[0], "100", "the watch resumes from the list's resourceVersion")
}

func TestWatch_WatchOnlyPrintsTheHeaderWithTheFirstChange(t *testing.T) {
	f := newFixture(t, instanceCM(t, "db", v1alpha1.PhaseProvisioning, "90"))
	out := &testio.Buffer{}
	stop := start(t, f, out, true)
	w := f.watcher(t, 1)
	w.Modify(instanceCM(t, "db", v1alpha1.PhaseReady, "101"))
	waitFor(t, out, "Ready")
	assert.NilError(t, stop())
	assert.Equal(t, out.String(), "NAME   STATUS\ndb     Ready\n")
}

func TestWatch_ExpiredWatchRelistsAndPrintsWhatChangedMeanwhile(t *testing.T) {
	f := newFixture(t, instanceCM(t, "db", v1alpha1.PhaseProvisioning, "90"), instanceCM(t, "old", v1alpha1.PhaseReady, "91"))
	out := &testio.Buffer{}
	stop := start(t, f, out, false)
	w := f.watcher(t, 1)

	// Meanwhile db got ready and old was deleted; the watch expires.
	f.mu.Lock()
	f.listed = []*corev1.ConfigMap{instanceCM(t, "db", v1alpha1.PhaseReady, "150")}
	f.listRV = "200"
	f.mu.Unlock()
	w.Error(&apierrors.NewResourceExpired("too old resource version").ErrStatus)

	waitFor(t, out, "db     Ready\nold    Ready")
	f.watcher(t, 2)
	assert.NilError(t, stop())
	assert.Equal(t, out.String(), ""+
		"NAME   STATUS\n"+
		"db     Provisioning\n"+
		"old    Ready\n"+
		"db     Ready\n"+
		"old    Ready\n")
	f.mu.Lock()
	defer f.mu.Unlock()
	assert.Equal(t, f.lists, 2)
	assert.Equal(t, f.rvs[1], "200", "the new watch resumes from the new list")
}

func TestWatch_JSONPrintsOneObjectPerChange(t *testing.T) {
	f := newFixture(t, instanceCM(t, "db", v1alpha1.PhaseProvisioning, "90"))
	out := &testio.Buffer{}
	o := printers.NewOutputFlags(true)
	fs := newFlagSet(o)
	assert.NilError(t, fs.Parse([]string{"-o", "json"}))
	stop := startWith(t, f, out, o, false)
	w := f.watcher(t, 1)
	w.Modify(instanceCM(t, "db", v1alpha1.PhaseReady, "101"))
	waitFor(t, out, `"phase": "Ready"`)
	assert.NilError(t, stop())
	assert.Assert(t, is.Equal(strings.Count(out.String(), `"kind": "ServiceInstance"`), 2), out.String())
}

// With --sort-by, as kubectl get -w does, the first listing is sorted and the changes
// print as they arrive, in no sorted order.
func TestWatch_SortBySortsTheFirstListingThenPrintsChangesAsTheyArrive(t *testing.T) {
	f := newFixture(t,
		instanceCM(t, "a", v1alpha1.PhaseReady, "90"),
		instanceCM(t, "b", v1alpha1.PhaseFailed, "91"),
		instanceCM(t, "c", v1alpha1.PhaseProvisioning, "92"))
	out := &testio.Buffer{}
	l := &printers.ListFlags{SortBy: "{.status.phase}"}
	assert.NilError(t, l.Validate())
	stop := startSorted(t, f, out, printers.NewOutputFlags(true), l, false)

	waitFor(t, out, "NAME")
	w := f.watcher(t, 1)
	w.Modify(instanceCM(t, "a", v1alpha1.PhaseUpdating, "101"))
	w.Add(instanceCM(t, "aa", v1alpha1.PhaseDeprovisioning, "102"))
	waitFor(t, out, "aa     Deprovisioning")

	assert.NilError(t, stop())
	assert.Equal(t, out.String(), ""+
		"NAME   STATUS\n"+
		"b      Failed\n"+
		"c      Provisioning\n"+
		"a      Ready\n"+
		"a      Updating\n"+
		"aa     Deprovisioning\n")
}

// A --sort-by path no listed record has is the usage error it is without -w.
func TestWatch_SortByAFieldNoRecordHasIsAUsageError(t *testing.T) {
	f := newFixture(t, instanceCM(t, "a", v1alpha1.PhaseReady, "90"))
	out := &testio.Buffer{}
	l := &printers.ListFlags{SortBy: ".status.nosuchfield"}
	assert.NilError(t, l.Validate())
	stop := startSorted(t, f, out, printers.NewOutputFlags(true), l, false)
	err := stop()
	assert.ErrorContains(t, err, `--sort-by ".status.nosuchfield": no record has this field`)
	assert.Equal(t, cmdutil.ExitCode(err), 2)
	assert.Equal(t, out.String(), "")
}
