package declarative

import (
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
)

func TestSplit_ListItemsAreDocumentsAndEmptyOnesAreSkipped(t *testing.T) {
	docs, err := Split("x.yaml", []byte(`apiVersion: v1
kind: List
items:
- {apiVersion: a/v1, kind: A, metadata: {name: one}}
- {apiVersion: a/v1, kind: A, metadata: {name: two}}
---
---
apiVersion: a/v1
kind: B
metadata: {name: three}
`))
	assert.NilError(t, err)
	assert.Equal(t, len(docs), 3)
	assert.Equal(t, docs[1].Obj.GetName(), "two")
	assert.Equal(t, docs[2].Where(), "x.yaml, document 2")
}

func TestDecode_OtherKindsAreSkippedUnknownFieldsRefused(t *testing.T) {
	docs, err := Split("-", []byte(`{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}`))
	assert.NilError(t, err)
	obj, skip, err := Decode(docs[0])
	assert.NilError(t, err)
	assert.Assert(t, obj == nil)
	assert.Assert(t, is.Contains(skip, "not a kind of the catalog"))

	docs, err = Split("-", []byte(`{"apiVersion": "`+v1alpha1.SchemeGroupVersion.String()+`", "kind": "ServiceInstance", "metadata": {"name": "db"}, "spec": {"classExternalName": "pg", "typo": 1}}`))
	assert.NilError(t, err)
	_, _, err = Decode(docs[0])
	assert.ErrorContains(t, err, "typo")
}

func TestChangedParameters_OnlyChangesAndRemovalsRefused(t *testing.T) {
	raw := func(s string) *runtime.RawExtension { return &runtime.RawExtension{Raw: []byte(s)} }
	got, err := ChangedParameters(raw(`{"a": 1, "b": 2}`), raw(`{"a": 1, "b": 3, "c": 4}`))
	assert.NilError(t, err)
	assert.DeepEqual(t, got, map[string]any{"b": float64(3), "c": float64(4)})
	got, err = ChangedParameters(raw(`{"a": 1}`), raw(`{"a": 1}`))
	assert.NilError(t, err)
	assert.Assert(t, got == nil)
	_, err = ChangedParameters(raw(`{"a": 1}`), raw(`{}`))
	assert.ErrorContains(t, err, "parameters a are not in the manifest")
}
