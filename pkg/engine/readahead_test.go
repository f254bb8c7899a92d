package engine

import (
	"context"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
)

// A broker read started after a verb's create serves the first step of that record's
// drive only: the context carries it, one broker's read is never taken for another, and
// it is taken once (a later step reads the broker afresh).
func TestBrokerReadAhead_TakenOnceAndOnlyForItsBroker(t *testing.T) {
	reads := 0
	ctx := withBrokerReadAhead(context.Background(), "catalog-system", "acme", func(context.Context) (*v1alpha1.Broker, error) {
		reads++
		return &v1alpha1.Broker{}, nil
	})

	_, ok := takeBrokerRead(context.Background(), "catalog-system", "acme")
	assert.Assert(t, !ok, "a context that does not carry it")
	_, ok = takeBrokerRead(ctx, "catalog-system", "other")
	assert.Assert(t, !ok, "another broker")
	_, ok = takeBrokerRead(ctx, "dev", "acme")
	assert.Assert(t, !ok, "a broker of that name in another namespace")
	r, ok := takeBrokerRead(ctx, "catalog-system", "acme")
	assert.Assert(t, ok)
	_, err := r.Wait()
	assert.NilError(t, err)
	_, ok = takeBrokerRead(ctx, "catalog-system", "acme")
	assert.Assert(t, !ok, "taken once")
	assert.Equal(t, reads, 1)
}
