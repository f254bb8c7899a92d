package serve

import (
	"context"
	"net/http"
	"testing"
	"time"

	"go.uber.org/goleak"
	"gotest.tools/v3/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/reconcile"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store/storetest"
)

// clusterRecords is a MetadataWatcher that lists the fake cluster's ConfigMaps and
// whose watches the test drives.
type clusterRecords struct {
	*fakeRecords
	f *serveFixture
}

func (c clusterRecords) List(ctx context.Context, opts metav1.ListOptions) (*metav1.PartialObjectMetadataList, error) {
	c.lists.Add(1)
	l, err := c.f.cluster.Metadata.Resource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}).Namespace("").List(ctx, opts)
	if l != nil && l.ResourceVersion == "" {
		l.ResourceVersion = "100"
	}
	return l, err
}

// meta is instance name's ConfigMap's metadata.
func (f *serveFixture) meta(name string) *metav1.PartialObjectMetadata {
	f.t.Helper()
	m, err := f.cluster.Metadata.Resource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}).Namespace(serveNS).Get(
		context.Background(), store.ConfigMapName(v1alpha1.KindServiceInstance, name), metav1.GetOptions{})
	assert.NilError(f.t, err)
	return m
}

// kubectlDelete deletes instance name's ConfigMap as "kubectl delete configmap" does
// (its finalizer keeps it, with a deletionTimestamp and no pending label) and returns
// its metadata as a watch sees it then.
func (f *serveFixture) kubectlDelete(name string) *metav1.PartialObjectMetadata {
	f.t.Helper()
	ctx := context.Background()
	cm := store.ConfigMapName(v1alpha1.KindServiceInstance, name)
	assert.NilError(f.t, f.cluster.Core.CoreV1().ConfigMaps(serveNS).Delete(ctx, cm, metav1.DeleteOptions{}))
	m := f.meta(name)
	assert.Assert(f.t, m.DeletionTimestamp != nil)
	assert.Equal(f.t, m.Labels[store.LabelPending], "", "kubectl delete sets no label")
	return m
}

// Between full passes (--full-pass-interval), the record whose only mark is the
// deletionTimestamp that "kubectl delete configmap" set is driven by the next run when
// the watch saw it: by its event, or by the list the watch makes afresh when its
// resourceVersion expired (an event it missed). In the namespace served and over every
// namespace.
func TestServe_BetweenFullPasses_TheDeletionsTheWatchSawAreDriven(t *testing.T) {
	for _, c := range []struct {
		name      string
		namespace string
		relist    bool
	}{
		{"event, every namespace", "", false},
		{"event, one namespace", serveNS, false},
		{"missed event, listed afresh", "", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
			f := newServeFixture(t, Options{Interval: time.Hour, Debounce: 20 * time.Millisecond})
			f.srv.Options.Run.FullPassEvery = time.Hour
			f.srv.Options.Run.CatalogNamespace = storetest.CatalogNamespace
			f.srv.Options.Run.Namespace = c.namespace
			recs := clusterRecords{fakeRecords: newFakeRecords(), f: f}
			f.srv.Records = recs
			// Every record was given its id claim (a full pass over every namespace
			// did it): a run of one namespace needs no full pass for it either.
			assert.NilError(t, f.st.MarkIDClaimsSwept(context.Background(), storetest.CatalogNamespace))
			f.instance("db")
			f.instance("kept")
			_, stop := f.start()

			first := f.nextReport(5 * time.Second) // a full pass: the first run of the process
			assert.Equal(t, first.Summary.Counts[reconcile.Done], 2, "%+v", first.Summary.Items)
			w, _ := recs.nextWatch(t)
			// The run's writes, as the watch sees them: the records settled.
			for _, name := range []string{"db", "kept"} {
				w.Modify(f.meta(name))
			}
			f.noReport(100 * time.Millisecond)

			m := f.kubectlDelete("db")
			if c.relist {
				w.Error(&metav1.Status{Status: metav1.StatusFailure, Code: http.StatusGone, Reason: metav1.StatusReasonExpired, Message: "too old resource version"})
			} else {
				w.Modify(m)
			}
			r := f.nextReport(5 * time.Second)

			assert.NilError(t, r.Err)
			assert.Equal(t, len(r.Summary.Items), 1, "%+v", r.Summary.Items)
			assert.Equal(t, r.Summary.Items[0].Name, "db")
			assert.Equal(t, r.Summary.Items[0].Outcome, reconcile.Done, "%+v", r.Summary.Items[0])
			_, err := f.st.Instances().Get(context.Background(), serveNS, "db")
			assert.Assert(t, store.IsNotFound(err), "the record is deprovisioned and gone: %v", err)
			_, err = f.st.Instances().Get(context.Background(), serveNS, "kept")
			assert.NilError(t, err)

			err, _ = stop()
			assert.NilError(t, err)
		})
	}
}
