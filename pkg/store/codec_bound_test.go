package store_test

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"runtime"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/apimachinery/pkg/runtime"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store/storetest"
)

// gzipBomb is a compressed spec of kind that decompresses to size bytes of JSON: a
// string field of that many repeated characters, in a few hundred KB.
func gzipBomb(t testing.TB, kind string, size int) *corev1.ConfigMap {
	t.Helper()
	var gz bytes.Buffer
	zw, err := gzip.NewWriterLevel(&gz, gzip.BestCompression)
	assert.NilError(t, err)
	_, _ = zw.Write([]byte(`{"externalName":"`))
	chunk := bytes.Repeat([]byte("A"), 1<<20)
	for range size >> 20 {
		_, _ = zw.Write(chunk)
	}
	_, _ = zw.Write([]byte(`"}`))
	assert.NilError(t, zw.Close())
	rec, err := json.Marshal(map[string]any{"apiVersion": v1alpha1.SchemeGroupVersion.String(), "kind": kind, "specGzip": gz.Bytes()})
	assert.NilError(t, err)
	var cm *corev1.ConfigMap
	switch kind {
	case v1alpha1.KindServiceClass:
		cm, err = store.Encode(storetest.SampleClass())
	case v1alpha1.KindServiceInstance:
		cm, err = store.Encode(storetest.SampleInstance())
	}
	assert.NilError(t, err)
	cm.Annotations[store.AnnotationFormat] = "3"
	cm.Data[store.DataKey] = string(rec)
	return cm
}

// allocated is how many bytes f allocates.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

func TestDecode_AGzipBombIsRefusedWithoutDecompressingIt(t *testing.T) {
	const bomb = 128 << 20
	cm := gzipBomb(t, v1alpha1.KindServiceClass, bomb)
	t.Logf("%d bytes of ConfigMap data decompress to %d MiB", len(cm.Data[store.DataKey]), bomb>>20)
	var err error
	n := allocated(func() { _, err = store.Decode(cm) })
	assert.Assert(t, store.IsCorrupt(err), "%v", err)
	assert.ErrorContains(t, err, "decompresses to more than")
	t.Logf("refusing it allocated %d KiB", n>>10)
	assert.Assert(t, n < 4<<20, "refusing a %d MiB bomb allocated %d bytes", bomb>>20, n)
}

func TestDecode_InstancesAndBindingsAreNeverCompressed(t *testing.T) {
	cm := gzipBomb(t, v1alpha1.KindServiceInstance, 64<<20)
	var err error
	n := allocated(func() { _, err = store.Decode(cm) })
	assert.Assert(t, store.IsCorrupt(err), "%v", err)
	assert.ErrorContains(t, err, "ServiceInstance records are never compressed")
	assert.Assert(t, n < 4<<20, "refused before decompressing: %d bytes allocated", n)

	// And never written so: too large is too large.
	inst := storetest.SampleInstance()
	inst.Spec.Parameters = &runtimeapi.RawExtension{Raw: []byte(`{"p":"` + strings.Repeat("x", 1100<<10) + `"}`)}
	_, err = store.Encode(inst)
	assert.Assert(t, store.IsTooLarge(err), "%v", err)
	assert.ErrorContains(t, err, "never compressed")
}

func TestEncode_AClassLargerThanAReaderDecompressesIsRefused(t *testing.T) {
	class := storetest.SampleClass()
	class.Spec.Description = strings.Repeat("x", 17<<20) // compresses well, decodes too large
	_, err := store.Encode(class)
	assert.Assert(t, store.IsTooLarge(err), "%v", err)
	assert.ErrorContains(t, err, "more than the 16777216 a reader decompresses")
}
