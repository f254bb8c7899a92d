package store

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"runtime"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
)

// benchRecordMeta is the metadata of the i-th of many settled instances, as a list of a
// real API server gives it: its own strings, a uid the API server made, one OSB id label.
func benchRecordMeta(i int) *metav1.ObjectMeta {
	sum := sha256.Sum256(fmt.Appendf(nil, "id-%d", i))
	return &metav1.ObjectMeta{
		Name: fmt.Sprintf("%sready-%06d", configMapPrefix(v1alpha1.KindServiceInstance), i), Namespace: fmt.Sprintf("bench-%02d", i%10),
		UID:             types.UID(fmt.Sprintf("%08x-1111-4222-8333-%012x", i, i*7)),
		ResourceVersion: fmt.Sprint(100000 + i), CreationTimestamp: metav1.Unix(int64(1700000000+i), 0),
		Labels: map[string]string{
			LabelManagedBy: ManagedBy, LabelKind: v1alpha1.KindServiceInstance,
			IDLabelPrefix + hex.EncodeToString(sum[:20]): "true",
		},
	}
}

func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// The index of a full pass is what reconcile -A holds for every record of the cluster:
// at 100,000 records every byte a record is 100 kB, and the garbage collector lets the
// process grow to twice what it holds.
func TestIDIndex_HoldsFewBytesPerRecord(t *testing.T) {
	const n, most = 20000, 160
	before := liveHeap()
	x := newIDIndex("")
	for i := range n {
		x.add(benchRecordMeta(i))
	}
	held := liveHeap() - before
	if per := held / n; per > most {
		t.Errorf("the index of %d records holds %d bytes a record (%.1f MiB), want at most %d", n, per, float64(held)/(1<<20), most)
	}
	// It still answers.
	m := benchRecordMeta(123)
	if x.Listed() != n {
		t.Errorf("listed %d, want %d", x.Listed(), n)
	}
	if _, _, ok := x.Claimed(v1alpha1.KindServiceInstance, m.Namespace, m.UID, "x"); !ok {
		t.Errorf("the index does not know record %s", m.Name)
	}
	users, ok := x.Lookup(v1alpha1.KindServiceInstance, "", "id-123", m.UID)
	want := IDUser{Namespace: m.Namespace, Name: "ready-000123", UID: m.UID, Created: m.CreationTimestamp}
	if !ok || len(users) != 1 || users[0] != want {
		t.Errorf("Lookup of id-123: %+v, %v; want %+v", users, ok, want)
	}
	runtime.KeepAlive(x)
}

// A full pass over a swept cluster asks for the records "migrate svcat" wrote that have
// no id claim: it must not make a list of every record without one on the way.
func TestIDIndex_UnclaimedMigrated_CostsOnlyTheMigrated(t *testing.T) {
	const n = 20000
	x := newIDIndex("")
	for i := range n {
		m := benchRecordMeta(i)
		if i%5000 == 0 {
			m.Annotations = map[string]string{AnnotationMigratedFrom: "svcat"}
		}
		x.add(m)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	got := x.UnclaimedMigrated()
	runtime.ReadMemStats(&after)
	if len(got) != n/5000 {
		t.Fatalf("UnclaimedMigrated: %d records, want %d", len(got), n/5000)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 64<<10 {
		t.Errorf("UnclaimedMigrated of %d records, %d migrated, allocated %.1f MiB, want at most 64 KiB", n, len(got), float64(alloc)/(1<<20))
	}
}
