package describe_test

import (
	"bytes"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	"gotest.tools/v3/golden"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/describe"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/marketplace"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store/storetest"
)

const createSchema = `{
  "$schema": "http://json-schema.org/draft-04/schema#",
  "type": "object",
  "required": ["version", "storage"],
  "properties": {
    "version": {"type": "string", "enum": ["14", "15", "16"], "default": "16", "description": "PostgreSQL major version"},
    "storage": {"type": "integer", "minimum": 1, "maximum": 100, "description": "Disk size in GiB"},
    "extensions": {"type": "array", "items": {"type": "string"}},
    "backup": {"type": "object", "required": ["window"], "properties": {
      "window": {"type": "string", "pattern": "^[0-2][0-9]:[0-5][0-9]$", "description": "Daily backup time, UTC"}
    }}
  }
}`

func TestPlanView_SchemasAsTables(t *testing.T) {
	c := storetest.SampleClass()
	p := &c.Spec.Plans[0]
	ps := &v1alpha1.PlanSchemas{PlanID: p.ID, InstanceCreate: &runtime.RawExtension{Raw: []byte(createSchema)}}
	var buf bytes.Buffer
	assert.NilError(t, describe.PlanView(&buf, c, p, ps, true, false))
	golden.Assert(t, buf.String(), "plan.golden")

	buf.Reset()
	assert.NilError(t, describe.PlanView(&buf, c, p, ps, false, true))
	golden.Assert(t, buf.String(), "plan-show-schemas.golden")
}

func TestClassView_ShowsPlanStatus(t *testing.T) {
	c := storetest.SampleClass()
	var buf bytes.Buffer
	assert.NilError(t, describe.ClassView(&buf, c, marketplace.Rules{}, "dev"))
	golden.Assert(t, buf.String(), "class.golden")
}

func TestBrokerView(t *testing.T) {
	b := storetest.SampleBroker()
	var buf bytes.Buffer
	now := storetest.SampleTime().Add(2 * time.Hour)
	assert.NilError(t, describe.BrokerView(&buf, b, []*v1alpha1.ServiceClass{storetest.SampleClass()}, now))
	golden.Assert(t, buf.String(), "broker.golden")
}

func TestSchemaParameters_FlattensNestedRequired(t *testing.T) {
	params, err := describe.SchemaParameters([]byte(createSchema))
	assert.NilError(t, err)
	var names []string
	for _, p := range params {
		if p.Required {
			names = append(names, p.Name)
		}
	}
	assert.DeepEqual(t, names, []string{"storage", "version"})
	_, err = describe.SchemaParameters([]byte(`[1]`))
	assert.ErrorContains(t, err, "not a JSON object")
}
