package reconcile

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clienttesting "k8s.io/client-go/testing"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb/fake"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store/storetest"
)

// fullPassEvery are the options of runs that make a full pass once an hour.
func fullPassEvery() Options {
	return Options{FullPassEvery: time.Hour, CatalogNamespace: storetest.CatalogNamespace}
}

// kubectlDelete deletes the ConfigMap of instance name as "kubectl delete configmap"
// does: its finalizer keeps it, with a deletionTimestamp and nothing else changed.
func (f *fixture) kubectlDelete(namespace, name string) {
	f.t.Helper()
	err := f.cluster.Core.CoreV1().ConfigMaps(namespace).Delete(context.Background(),
		store.ConfigMapName(v1alpha1.KindServiceInstance, name), metav1.DeleteOptions{})
	assert.NilError(f.t, err)
	inst, err := f.st.Instances().Get(context.Background(), namespace, name)
	assert.NilError(f.t, err)
	assert.Assert(f.t, inst.DeletionTimestamp != nil)
	cm, err := f.cluster.Core.CoreV1().ConfigMaps(namespace).Get(context.Background(), store.ConfigMapName(v1alpha1.KindServiceInstance, name), metav1.GetOptions{})
	assert.NilError(f.t, err)
	assert.Equal(f.t, cm.Labels[store.LabelPending], "", "kubectl delete sets no label")
}

// Between two full passes a run reads the metadata of the records with work only, and
// drives every one of them: each kind of pending work, in one namespace and in several.
func TestRun_BetweenFullPasses_ListsOnlyTheRecordsWithWork(t *testing.T) {
	f := newFixture(t)
	for i := range 6 {
		f.provisioned(fmt.Sprintf("ready-%d", i))
	}
	// The first run of a process makes a full pass; so did the ones above.
	f.now = f.now.Add(time.Minute)
	f.instance("new-1")
	f.instanceWithID("team-b", "new-2", v1alpha1.NewNamespaceBoundID("team-b"))
	f.instance("deleting")
	sum := f.run(Options{})
	assert.Equal(t, sum.Counts[Done], 3, "%+v", sum.Items)
	// Deprovision's deletion mark, and the step that writes the call ahead: the record
	// is labelled pending from then on. The broker is down: it waits for a retry.
	assert.NilError(t, f.st.Instances().Delete(context.Background(), ns, "deleting"))
	f.broker.DeprovisionReturns(nil, errors.New("connection refused"))
	inst, err := f.st.Instances().Get(context.Background(), ns, "deleting")
	assert.NilError(t, err)
	_, _ = f.rec.Engine.StepInstance(context.Background(), inst)
	f.broker.DeprovisionReturns(&osb.DeprovisionResponse{StatusCode: 200}, nil)
	f.instance("new-3")
	f.now = f.now.Add(15 * time.Minute) // the retry is due

	before := f.cluster.MetadataItems()
	sum = f.run(fullPassEvery())

	assert.Equal(t, sum.Counts[Done], 2, "%+v", sum.Items)
	assert.Equal(t, f.item(sum, "new-3").Outcome, Done)
	assert.Equal(t, f.item(sum, "deleting").Outcome, Done)
	// The two records with work, and their id checks: in a namespace of 9 records, one
	// list of its instances and bindings costs less than a list per record
	// (listNamespace): none of the settled records of the other namespace.
	assert.Assert(t, f.cluster.MetadataItems()-before <= 2+9, "%d", f.cluster.MetadataItems()-before)
	_, err = f.st.Instances().Get(context.Background(), ns, "deleting")
	assert.Assert(t, store.IsNotFound(err), "%v", err)

	// A full pass reads every record's metadata.
	f.now = f.now.Add(time.Hour)
	before = f.cluster.MetadataItems()
	f.run(fullPassEvery())
	assert.Assert(t, f.cluster.MetadataItems()-before >= 9, "%d", f.cluster.MetadataItems()-before)
}

// A record deleted by "kubectl delete configmap" (a deletionTimestamp, no label) is
// finished: at once when its namespace is being deleted or a full pass is due, else by
// the next full pass; the runs in between do not see it. A run that cannot list the
// namespaces makes a full pass; one with many records with work in the record's
// namespace lists that namespace's instances and bindings (for their id checks), which
// finds it, and one with many in another namespace does not.
func TestRun_DeletedByKubectl_IsFinishedByAFullPass(t *testing.T) {
	for _, tc := range []struct {
		name string
		// setup runs after the record's deletion; atOnce: the next run finishes it.
		setup  func(f *fixture)
		atOnce bool
	}{
		{name: "between full passes", setup: func(*fixture) {}},
		{name: "a full pass due", setup: func(f *fixture) { f.now = f.now.Add(time.Hour) }, atOnce: true},
		{name: "its namespace being deleted", setup: func(f *fixture) {
			_, err := f.cluster.Core.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{
				ObjectMeta: metav1.ObjectMeta{Name: ns}, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceTerminating}}, metav1.CreateOptions{})
			assert.NilError(f.t, err)
		}, atOnce: true},
		{name: "namespaces not listable", setup: func(f *fixture) {
			f.cluster.Core.PrependReactor("list", "namespaces", func(clienttesting.Action) (bool, runtime.Object, error) {
				return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "namespaces"}, "", fmt.Errorf("no"))
			})
		}, atOnce: true},
		{name: "many records with work in one namespace", setup: func(f *fixture) {
			for i := range IDChecksPerNamespace {
				f.instance(fmt.Sprintf("new-%02d", i))
			}
		}, atOnce: true},
		{name: "many records with work in another namespace", setup: func(f *fixture) {
			for i := range IDChecksPerNamespace {
				f.instanceWithID("team-z", fmt.Sprintf("new-%02d", i), v1alpha1.NewNamespaceBoundID("team-z"))
			}
		}},
		{name: "many records with work in many namespaces", setup: func(f *fixture) {
			for i := range IDChecksPerNamespace {
				other := fmt.Sprintf("team-%02d", i)
				f.instanceWithID(other, "new", v1alpha1.NewNamespaceBoundID(other))
			}
		}},
	} {
		for how, del := range map[string]func(f *fixture, name string){
			"kubectl delete configmap": func(f *fixture, name string) { f.kubectlDelete(ns, name) },
			// The mark of a deprovision whose command ended before its step wrote anything.
			"deprovision's mark alone": func(f *fixture, name string) {
				assert.NilError(f.t, f.st.Instances().Delete(context.Background(), ns, name))
			},
		} {
			t.Run(how+"/"+tc.name, func(t *testing.T) {
				f := newFixture(t)
				f.provisioned("db")
				f.provisioned("other")
				// A full pass of this process: the next is due in an hour.
				f.run(fullPassEvery())
				f.now = f.now.Add(time.Minute)
				del(f, "db")
				tc.setup(f)

				sum := f.run(fullPassEvery())

				calls := len(f.broker.CallsTo(fake.MethodDeprovision))
				if !tc.atOnce {
					assert.Equal(t, calls, 0)
					for _, it := range sum.Items {
						assert.Assert(t, it.Name != "db", "%+v", it)
					}
					f.now = f.now.Add(time.Hour)
					sum = f.run(fullPassEvery())
					calls = len(f.broker.CallsTo(fake.MethodDeprovision))
				}
				assert.Equal(t, calls, 1)
				assert.Equal(t, f.item(sum, "db").Outcome, Done, f.item(sum, "db").Detail)
				_, err := f.st.Instances().Get(context.Background(), ns, "db")
				assert.Assert(t, store.IsNotFound(err), "%v", err)
				other, err := f.st.Instances().Get(context.Background(), ns, "other")
				assert.NilError(t, err)
				assert.Assert(t, other.DeletionTimestamp == nil)
			})
		}
	}
}

// A process of its own (a run by hand, a CronJob's) makes a full pass unless the
// catalog namespace's marker says one was made within FullPassEvery; a run in one
// namespace does not read it.
func TestRun_FullPassMarker_IsSharedByProcesses(t *testing.T) {
	f := newFixture(t)
	f.provisioned("db")
	f.now = f.now.Add(2 * time.Hour)
	f.run(fullPassEvery()) // a full pass, recorded in the marker
	at, _ := f.st.LastFullPass(context.Background(), storetest.CatalogNamespace)
	assert.Equal(t, at.Equal(f.now.Truncate(time.Second)), true)
	f.kubectlDelete(ns, "db")
	f.now = f.now.Add(time.Minute)

	// Another process: the marker is fresh, so only the records with work are listed.
	other := &Reconciler{Store: f.st, Engine: f.rec.Engine, Now: f.rec.Now}
	sum, err := other.Run(context.Background(), fullPassEvery())
	assert.NilError(t, err)
	assert.Equal(t, len(sum.Items), 0, "%+v", sum.Items)

	// In one namespace, every record of it.
	o := fullPassEvery()
	o.Namespace = ns
	third := &Reconciler{Store: f.st, Engine: f.rec.Engine, Now: f.rec.Now}
	sum, err = third.Run(context.Background(), o)
	assert.NilError(t, err)
	assert.Equal(t, f.item(sum, "db").Outcome, Done, "%+v", sum.Items)
}
