package store_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	"gotest.tools/v3/golden"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store/storetest"
)

func goldenName(rec v1alpha1.Record) string {
	return strings.ToLower(kindOf(rec)) + ".yaml"
}

// TestStoredConfigMap_MatchesGoldenAndReadsBackAsWritten stores one record of each kind
// and compares the ConfigMap as stored with testdata (go test -update rewrites it), then
// reads the record back.
func TestStoredConfigMap_MatchesGoldenAndReadsBackAsWritten(t *testing.T) {
	for _, sample := range storetest.SampleRecords() {
		t.Run(kindOf(sample), func(t *testing.T) {
			ctx := context.Background()
			c, st, _ := newCluster(t)
			_, err := create(ctx, st, sample.DeepCopyObject().(v1alpha1.Record))
			assert.NilError(t, err)

			cmName := store.ConfigMapName(kindOf(sample), sample.GetName())
			cm, err := c.Core.CoreV1().ConfigMaps(sample.GetNamespace()).Get(ctx, cmName, metav1.GetOptions{})
			assert.NilError(t, err)
			cm.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}
			cm.ManagedFields = nil
			out, err := yaml.Marshal(cm)
			assert.NilError(t, err)
			golden.Assert(t, string(out), goldenName(sample))

			got, err := get(ctx, st, kindOf(sample), sample.GetNamespace(), sample.GetName())
			assert.NilError(t, err)
			assert.Equal(t, got.GetObjectKind().GroupVersionKind(), v1alpha1.SchemeGroupVersion.WithKind(kindOf(sample)))
			assert.Equal(t, got.GetName(), sample.GetName(), "the record name round-trips without the ConfigMap prefix")
			assert.Equal(t, got.GetUID(), cm.UID)
			assert.Equal(t, got.GetResourceVersion(), cm.ResourceVersion)
			assert.Equal(t, got.GetGeneration(), int64(1))
			for k, v := range sample.GetLabels() {
				assert.Check(t, is.Equal(got.GetLabels()[k], v), "user label %s kept", k)
			}
			for k, v := range sample.GetAnnotations() {
				assert.Check(t, is.Equal(got.GetAnnotations()[k], v), "user annotation %s kept", k)
			}

			// Spec and status come back exactly; metadata is the ConfigMap's.
			want := sample.DeepCopyObject().(v1alpha1.Record)
			want.GetObjectKind().SetGroupVersionKind(got.GetObjectKind().GroupVersionKind())
			*metaOf(want) = *metaOf(got)
			assert.DeepEqual(t, got, want)
		})
	}
}

func metaOf(rec v1alpha1.Record) *metav1.ObjectMeta {
	return rec.(metav1.ObjectMetaAccessor).GetObjectMeta().(*metav1.ObjectMeta)
}

func TestEncodeDecode_RawParametersComeBackByteForByte(t *testing.T) {
	inst := storetest.SampleInstance()
	inst.Spec.Parameters = &runtime.RawExtension{Raw: []byte(`{ "ratio": 1.0, "big": 12345678901234567890, "z": {"a": "<&>"} }`)}
	cm, err := store.Encode(inst)
	assert.NilError(t, err)
	assert.Check(t, is.Contains(cm.Data[store.DataKey], `"z": {`), "the record is indented for humans")
	assert.Check(t, is.Contains(cm.Data[store.DataKey], `"<&>"`), "HTML characters are not escaped")
	got, err := store.Decode(cm)
	assert.NilError(t, err)
	assert.Equal(t, string(got.(*v1alpha1.ServiceInstance).Spec.Parameters.Raw),
		`{"ratio":1.0,"big":12345678901234567890,"z":{"a":"<&>"}}`, "compacted, numbers untouched")
}

// TestDecode_FormatOneRecordsStillRead reads ConfigMaps written by format 1, frozen in
// testdata/format-1 (never rewritten by -update): a later release must keep reading them.
func TestDecode_FormatOneRecordsStillRead(t *testing.T) {
	files, err := filepath.Glob("testdata/format-1/*.yaml")
	assert.NilError(t, err)
	assert.Equal(t, len(files), 5)
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			assert.NilError(t, err)
			var cm corev1.ConfigMap
			assert.NilError(t, yaml.Unmarshal(data, &cm))
			rec, err := store.Decode(&cm)
			assert.NilError(t, err)
			assert.Check(t, rec.GetName() != "" && !strings.HasPrefix(rec.GetName(), "catalog-"))
			switch r := rec.(type) {
			case *v1alpha1.ServiceInstance:
				assert.Equal(t, r.Spec.ExternalID, storetest.InstanceID)
				assert.Equal(t, r.Status.InFlight.OperationKey, "op-123")
			case *v1alpha1.ServiceBinding:
				assert.Equal(t, r.Spec.ExternalID, storetest.BindingID)
				assert.Equal(t, r.Status.Secret.Name, "db-credentials")
			case *v1alpha1.ServiceClass:
				assert.Equal(t, r.Spec.ID, storetest.ClassID)
			case *v1alpha1.ServicePlanSchemas:
				assert.Check(t, r.ForPlan(storetest.PlanID).InstanceCreate != nil)
			case *v1alpha1.Broker:
				assert.Equal(t, r.Spec.Auth.SecretRef.Name, "acme-broker-auth")
			}
		})
	}
}

func TestDecode_RefusesWhatItCannotRead(t *testing.T) {
	tests := []struct {
		name   string
		change func(*corev1.ConfigMap)
		is     func(error) bool
		msg    string
	}{
		{name: "a future format", change: func(cm *corev1.ConfigMap) { cm.Annotations[store.AnnotationFormat] = "4" },
			is: store.IsUnsupportedFormat,
			msg: `service instance "db" in namespace "dev" was written by a newer kubectl-catalog ` +
				`(record format 4; this release reads formats up to 3): upgrade kubectl-catalog to read it`},
		{name: "an unknown apiVersion", change: func(cm *corev1.ConfigMap) {
			cm.Data[store.DataKey] = strings.Replace(cm.Data[store.DataKey], "v1alpha1", "v1", 1)
		}, is: store.IsUnsupportedFormat, msg: `apiVersion "catalog.kubectl-catalog.io/v1"`},
		{name: "no format annotation", change: func(cm *corev1.ConfigMap) { delete(cm.Annotations, store.AnnotationFormat) },
			is: store.IsCorrupt, msg: `ConfigMap "catalog-instance.db" in namespace "dev" does not hold a readable service instance: annotation catalog.kubectl-catalog.io/format is missing`},
		{name: "a format that is not a number", change: func(cm *corev1.ConfigMap) { cm.Annotations[store.AnnotationFormat] = "one" },
			is: store.IsCorrupt, msg: "is not a format version"},
		{name: "no record", change: func(cm *corev1.ConfigMap) { delete(cm.Data, store.DataKey) },
			is: store.IsCorrupt, msg: `data key "record" is missing`},
		{name: "a record that is not JSON", change: func(cm *corev1.ConfigMap) { cm.Data[store.DataKey] = "spec: {}" },
			is: store.IsCorrupt, msg: "is not a JSON record"},
		{name: "a record of another kind", change: func(cm *corev1.ConfigMap) {
			cm.Data[store.DataKey] = strings.Replace(cm.Data[store.DataKey], `"kind": "ServiceInstance"`, `"kind": "ServiceBinding"`, 1)
		}, is: store.IsCorrupt, msg: `the record's kind is "ServiceBinding"`},
		{name: "a spec of the wrong shape", change: func(cm *corev1.ConfigMap) {
			cm.Data[store.DataKey] = `{"apiVersion":"catalog.kubectl-catalog.io/v1alpha1","kind":"ServiceInstance","spec":[]}`
		}, is: store.IsCorrupt, msg: "reading the spec"},
		{name: "a name without the kind's prefix", change: func(cm *corev1.ConfigMap) { cm.Name = "db" },
			is: store.IsCorrupt, msg: `ConfigMap "db" in namespace "dev" does not hold a readable service instance: its name does not start with "catalog-instance."`},
		{name: "a kind label this release does not know", change: func(cm *corev1.ConfigMap) { cm.Labels[store.LabelKind] = "Share" },
			is: store.IsCorrupt, msg: `label catalog.kubectl-catalog.io/kind="Share" is not a record kind this release knows`},
		{name: "a generation that is not a number", change: func(cm *corev1.ConfigMap) { cm.Annotations[store.AnnotationGeneration] = "x" },
			is: store.IsCorrupt, msg: "is not a number"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cm, err := store.Encode(storetest.SampleInstance())
			assert.NilError(t, err)
			tc.change(cm)
			_, err = store.Decode(cm)
			assert.Assert(t, tc.is(err), "%v", err)
			assert.Check(t, is.Contains(err.Error(), tc.msg))
		})
	}
}

func TestGet_FutureFormatRecord_SaysToUpgrade(t *testing.T) {
	ctx := context.Background()
	c, st, _ := newCluster(t)
	inst := mustCreateInstance(t, st, "db")
	cmName := store.ConfigMapName(v1alpha1.KindServiceInstance, "db")
	cm, err := c.Core.CoreV1().ConfigMaps(inst.Namespace).Get(ctx, cmName, metav1.GetOptions{})
	assert.NilError(t, err)
	cm.Annotations[store.AnnotationFormat] = "7"
	_, err = c.Core.CoreV1().ConfigMaps(inst.Namespace).Update(ctx, cm, metav1.UpdateOptions{})
	assert.NilError(t, err)

	_, err = st.Instances().Get(ctx, inst.Namespace, "db")
	assert.Check(t, store.IsUnsupportedFormat(err))
	assert.ErrorContains(t, err, "upgrade kubectl-catalog")
}

func TestEncode_LargeRecordFallsBackToCompactJSON_TooLargeIsRefused(t *testing.T) {
	schema := func(entries int) *runtime.RawExtension {
		var b strings.Builder
		b.WriteString(`{"properties":{`)
		for i := range entries {
			if i > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, `"p%d":{"type":"string"}`, i)
		}
		b.WriteString(`}}`)
		return &runtime.RawExtension{Raw: []byte(b.String())}
	}
	s := storetest.SamplePlanSchemas()

	s.Spec.Plans[0].InstanceCreate = schema(25000) // ~0.7 MiB compact, over 1 MiB indented
	cm, err := store.Encode(s)
	assert.NilError(t, err)
	assert.Check(t, !strings.Contains(cm.Data[store.DataKey], "\n  "), "stored compact")
	back, err := store.Decode(cm)
	assert.NilError(t, err)
	assert.Check(t, bytes.Equal(back.(*v1alpha1.ServicePlanSchemas).Spec.Plans[0].InstanceCreate.Raw, s.Spec.Plans[0].InstanceCreate.Raw))

	// Over 1 MiB even compact: the spec is compressed (format 3) and reads back the same.
	s.Spec.Plans[0].InstanceCreate = schema(80000)
	cm, err = store.Encode(s)
	assert.NilError(t, err)
	assert.Equal(t, cm.Annotations[store.AnnotationFormat], "3")
	assert.Check(t, !strings.Contains(cm.Data[store.DataKey], `"p79999"`), "the spec is compressed")
	assert.Check(t, len(cm.Data[store.DataKey]) < 400<<10, "%d bytes", len(cm.Data[store.DataKey]))
	back, err = store.Decode(cm)
	assert.NilError(t, err)
	assert.DeepEqual(t, back.(*v1alpha1.ServicePlanSchemas).Spec, s.Spec)

	// What does not fit even compressed is refused, saying so.
	noise := make([]byte, 1200<<10)
	_, _ = rand.NewChaCha8([32]byte{1}).Read(noise)
	s.Spec.Plans[0].InstanceCreate = &runtime.RawExtension{Raw: []byte(`{"description":"` + hex.EncodeToString(noise) + `"}`)}
	_, err = store.Encode(s)
	assert.Check(t, store.IsTooLarge(err), "%v", err)
	assert.ErrorContains(t, err, "a ConfigMap holds at most 1 MiB, even compressed")
}

func TestDecode_ACompressedSpecThatDoesNotDecompressIsCorrupt(t *testing.T) {
	s := storetest.SamplePlanSchemas()
	cm, err := store.Encode(s)
	assert.NilError(t, err)
	cm.Annotations[store.AnnotationFormat] = "3"
	cm.Data[store.DataKey] = `{"apiVersion":"catalog.kubectl-catalog.io/v1alpha1","kind":"ServicePlanSchemas","specGzip":"bm90IGd6aXA="}`
	_, err = store.Decode(cm)
	assert.Check(t, store.IsCorrupt(err), "%v", err)
	assert.ErrorContains(t, err, "does not decompress")
}

func TestLabelValue_KeepsValidValuesAndHashesOthers(t *testing.T) {
	assert.Equal(t, store.LabelValue("postgres"), "postgres")
	assert.Equal(t, store.LabelValue("Postgres.v2_beta"), "Postgres.v2_beta")
	long := strings.Repeat("x", 64)
	for _, v := range []string{long, "my service", "ü"} {
		got := store.LabelValue(v)
		assert.Check(t, strings.HasPrefix(got, "sha256-") && len(got) == 63, got)
	}
	assert.Check(t, store.LabelValue(long) != store.LabelValue(long+"y"))
}
