package store_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"runtime"
	"testing"

	"gotest.tools/v3/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// junkRecord is a ConfigMap named like an instance record, with no record in it and
// about 1.3 MB of OSB-id-shaped labels: what anyone who may write ConfigMaps can create.
func junkRecord(ns, name string, seed int) *corev1.ConfigMap {
	labels := map[string]string{store.LabelKind: v1alpha1.KindServiceInstance}
	for i := range 17000 {
		sum := sha256.Sum256(fmt.Appendf(nil, "%d-%d", seed, i))
		labels[store.IDLabelPrefix+hex.EncodeToString(sum[:20])] = "true"
	}
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: store.ConfigMapName(v1alpha1.KindServiceInstance, name), Labels: labels}}
}

// heapAfterGC is the heap in use once garbage is collected.
func heapAfterGC() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// Junk ConfigMaps with megabytes of id labels in one namespace cost the index of
// reconcile's list next to nothing: they are reported, not indexed, and their namespace's
// id checks (and every check of an id bound to nothing) list for themselves, while those
// of other namespaces' ids bound to them are still answered from the index.
func TestListPendingWithIDs_OversizedRecordsAreReportedNotIndexed(t *testing.T) {
	ctx := context.Background()
	c, st, _ := newCluster(t)
	const junk = 40
	for i := range junk {
		_, err := c.Core.CoreV1().ConfigMaps("junk").Create(ctx, junkRecord("junk", fmt.Sprintf("j%d", i), i), metav1.CreateOptions{})
		assert.NilError(t, err)
	}
	dev := mustCreateInstance(t, st, "db") // namespace dev, pending
	devID := v1alpha1.NewRecordBoundID(dev.UID)
	dev.Status.ExternalID = devID
	dev.Spec.ExternalID = ""
	_, err := st.Instances().Update(ctx, dev)
	assert.NilError(t, err)
	dev, err = st.Instances().Get(ctx, "dev", "db")
	assert.NilError(t, err)
	// One of the junk namespace's own records.
	own, err := st.Instances().Create(ctx, &v1alpha1.ServiceInstance{ObjectMeta: metav1.ObjectMeta{Namespace: "junk", Name: "own"},
		Spec: v1alpha1.ServiceInstanceSpec{Scope: v1alpha1.ScopeCluster, BrokerName: "b", ClassID: "c", PlanID: "p", ExternalID: "spec-named"}})
	assert.NilError(t, err)

	before := heapAfterGC()
	items, idx, err := st.ListPendingWithIDs(ctx, "")
	assert.NilError(t, err)
	after := heapAfterGC()
	kept := after - min(before, after)
	runtime.KeepAlive(items)
	runtime.KeepAlive(idx)
	runtime.KeepAlive(c)
	assert.Assert(t, kept < 4<<20, "the list's items and index keep %d MiB", kept>>20)

	assert.Equal(t, len(idx.Oversized()), junk)
	for _, o := range idx.Oversized() {
		assert.Equal(t, o.Kind, v1alpha1.KindServiceInstance)
		assert.Equal(t, o.Namespace, "junk")
		assert.Assert(t, o.Bytes > store.MaxRecordMetadataBytes)
	}
	for _, it := range items {
		assert.Assert(t, it.Namespace != "junk" || it.Name == "own", "an oversized record is a work item: %+v", it)
	}
	// Another namespace's record, with an id bound to it: answered from the index.
	users, ok := idx.Lookup(v1alpha1.KindServiceInstance, "", devID, dev.UID)
	assert.Assert(t, ok)
	assert.Equal(t, len(users), 1)
	// The junk namespace's own record: its check lists for itself.
	_, ok = idx.Lookup(v1alpha1.KindServiceInstance, "", "spec-named", own.UID)
	assert.Assert(t, !ok)
}

// The id labels one namespace's records bring to the index are bounded: beyond
// MaxIndexedIDsPerNamespace the namespace's own checks list for themselves, and other
// namespaces' are still answered.
func TestListPendingWithIDs_OneNamespacesIDLabelsAreBounded(t *testing.T) {
	ctx := context.Background()
	c, st, _ := newCluster(t)
	// Records under the size bound, with as many id labels as it allows.
	perRecord := store.MaxRecordMetadataBytes / (len(store.IDLabelPrefix) + 40 + len("true")) * 9 / 10
	records := store.MaxIndexedIDsPerNamespace/perRecord + 2
	var last *corev1.ConfigMap
	for i := range records {
		cm := junkRecord("many", fmt.Sprintf("m%d", i), i)
		n := 0
		for k := range cm.Labels {
			if k != store.LabelKind {
				if n++; n > perRecord {
					delete(cm.Labels, k)
				}
			}
		}
		var err error
		last, err = c.Core.CoreV1().ConfigMaps("many").Create(ctx, cm, metav1.CreateOptions{})
		assert.NilError(t, err)
	}
	dev := mustCreateInstance(t, st, "db")
	_, idx, err := st.ListPendingWithIDs(ctx, "")
	assert.NilError(t, err)
	assert.Equal(t, len(idx.Oversized()), 0)
	_, ok := idx.Lookup(v1alpha1.KindServiceInstance, "", v1alpha1.NewRecordBoundID(dev.UID), dev.UID)
	assert.Assert(t, ok, "another namespace's bound id is still answered")
	_, ok = idx.Lookup(v1alpha1.KindServiceInstance, "", v1alpha1.NewRecordBoundID(last.UID), last.UID)
	assert.Assert(t, !ok, "the namespace over the bound is answered from the index")
}
