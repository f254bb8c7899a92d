package graph

import (
	"bytes"
	"context"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// TestBuild_ByPages_TheGraphOfTheFullRecords: Build reads the instances a page at a time
// and keeps of each what the graph shows; the graph is the one the full records make,
// in every scope.
func TestBuild_ByPages_TheGraphOfTheFullRecords(t *testing.T) {
	for _, o := range []Options{{AllNamespaces: true}, {Namespace: "team-a"}} {
		ctx := context.Background()
		cl := buildCluster(t)
		cl.SetMaxPageSize(1)
		got, err := Build(ctx, cl.Core, cl.Store(), o)
		assert.NilError(t, err)

		ns := o.Namespace
		if o.AllNamespaces {
			ns = ""
		}
		instances, err := cl.Store().Instances().List(ctx, ns, store.Filter{})
		assert.NilError(t, err)
		bindings, err := cl.Store().Bindings().List(ctx, ns, store.Filter{})
		assert.NilError(t, err)
		in := Input{Instances: instances, Bindings: bindings, Listed: []string{ns}}
		assert.NilError(t, listWorkloads(ctx, cl.Core, ns, &in))
		if ns != "" {
			assert.NilError(t, listConsumers(ctx, cl.Core, cl.Store(), ns, &in))
		}
		var gotJSON, wantJSON bytes.Buffer
		assert.NilError(t, JSON(&gotJSON, got))
		assert.NilError(t, JSON(&wantJSON, Assemble(in)))
		assert.Equal(t, gotJSON.String(), wantJSON.String(), "scope %+v", o)
		assert.Assert(t, len(got.Nodes) > 0, "scope %+v", o)
	}
}
