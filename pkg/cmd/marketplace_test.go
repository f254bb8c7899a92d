package cmd_test

import (
	"bytes"
	"testing"

	"gotest.tools/v3/assert"
	"gotest.tools/v3/golden"

	cmdmp "github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/marketplace"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/marketplace"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store/storetest"
)

func offers() []marketplace.Offering {
	c := storetest.SampleClass()
	o := marketplace.Offering{Class: c}
	for i := range c.Spec.Plans {
		o.Plans = append(o.Plans, &c.Spec.Plans[i])
	}
	return []marketplace.Offering{o}
}

func TestMarketplaceTables(t *testing.T) {
	var buf bytes.Buffer
	assert.NilError(t, cmdmp.ClassTable(&buf, offers(), false))
	golden.Assert(t, buf.String(), "marketplace/classes.golden")
	buf.Reset()
	assert.NilError(t, cmdmp.PlanTable(&buf, offers(), false))
	golden.Assert(t, buf.String(), "marketplace/plans.golden")
	buf.Reset()
	assert.NilError(t, cmdmp.ClassTable(&buf, offers(), true))
	golden.Assert(t, buf.String(), "marketplace/classes-all-namespaces.golden")
}
