package declarative

import (
	"testing"

	"gotest.tools/v3/assert"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
)

func decodeInstance(t *testing.T, spec string) (*Object, error) {
	t.Helper()
	docs, err := Split("-", []byte(`{"apiVersion": "`+v1alpha1.SchemeGroupVersion.String()+`", "kind": "ServiceInstance", "metadata": {"name": "db"}, "spec": `+spec+`}`))
	assert.NilError(t, err)
	obj, _, err := Decode(docs[0])
	return obj, err
}

func TestDecode_RebindOnUpdate(t *testing.T) {
	for _, tc := range []struct {
		spec string
		want v1alpha1.RebindPolicy
		err  string
	}{
		{spec: `{"classExternalName": "pg"}`, want: ""},
		{spec: `{"classExternalName": "pg", "rebindOnUpdate": "Never"}`, want: ""},
		{spec: `{"classExternalName": "pg", "rebindOnUpdate": "Always"}`, want: v1alpha1.RebindAlways},
		{spec: `{"classExternalName": "pg", "rebindOnUpdate": "PlanChange"}`, want: v1alpha1.RebindPlanChange},
		{spec: `{"classExternalName": "pg", "rebindOnUpdate": "Sometimes"}`, err: `ServiceInstance "db": spec.rebindOnUpdate "Sometimes" is not one of Never, Always, PlanChange`},
		{spec: `{"userProvided": {"credentialsSecret": "c"}, "rebindOnUpdate": "Always"}`, err: `spec.rebindOnUpdate is for an instance of a broker`},
	} {
		obj, err := decodeInstance(t, tc.spec)
		if tc.err != "" {
			assert.ErrorContains(t, err, tc.err)
			continue
		}
		assert.NilError(t, err)
		assert.Equal(t, obj.Inst.RebindOnUpdate, tc.want, tc.spec)
	}
}
