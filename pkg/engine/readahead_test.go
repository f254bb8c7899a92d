package engine

import (
	"context"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/ahead"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
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

// The read of a binding's instance started ahead for one step, by an unbind
// (withUnbindReadsAhead, taken by takeInstanceRead) or by a poll (bindingPollAhead,
// taken by takePollInstanceRead), is taken once, and only for the binding it was
// started for while that binding still names the same instance.
func TestBoundInstanceRead_TakenOnceOnlyForItsBindingAndInstance(t *testing.T) {
	binding := func(ns, name, instNS, inst string) *v1alpha1.ServiceBinding {
		b := &v1alpha1.ServiceBinding{}
		b.Namespace, b.Name = ns, name
		b.Spec.InstanceNamespace, b.Spec.InstanceName = instNS, inst
		return b
	}
	started := binding("dev", "b", "", "db")
	carry := map[string]func(ctx context.Context, r *boundInstanceRead) context.Context{
		"unbind": func(ctx context.Context, r *boundInstanceRead) context.Context {
			ctx = context.WithValue(ctx, unbindReadsAheadKey{}, &unbindReadsAhead{namespace: r.namespace, name: r.name, inst: r, secrets: &store.SecretReads{}})
			return stepUnbindReads(ctx, started)
		},
		"poll": func(ctx context.Context, r *boundInstanceRead) context.Context {
			return context.WithValue(ctx, pollInstanceAheadKey{}, r)
		},
	}
	take := map[string]func(ctx context.Context, b *v1alpha1.ServiceBinding) *ahead.Read[*v1alpha1.ServiceInstance]{
		"unbind": takeInstanceRead,
		"poll":   takePollInstanceRead,
	}
	for _, path := range []string{"unbind", "poll"} {
		t.Run(path, func(t *testing.T) {
			inst := &v1alpha1.ServiceInstance{}
			inst.Namespace, inst.Name = "dev", "db"
			r := &boundInstanceRead{namespace: "dev", name: "b", instNamespace: "dev", instName: "db", read: ahead.Done(inst, nil)}
			ctx := carry[path](context.Background(), r)

			assert.Assert(t, take[path](context.Background(), started) == nil, "a context that carries none")
			assert.Assert(t, take[path](ctx, binding("dev", "other", "", "db")) == nil, "another binding")
			assert.Assert(t, take[path](ctx, binding("team-b", "b", "dev", "db")) == nil, "a binding of that name in another namespace")
			assert.Assert(t, take[path](ctx, binding("dev", "b", "", "other")) == nil, "the binding now names another instance")
			assert.Assert(t, take[path](ctx, binding("dev", "b", "team-b", "db")) == nil, "an instance of that name in another namespace")
			read := take[path](ctx, started)
			assert.Assert(t, read != nil)
			got, err := read.Wait()
			assert.NilError(t, err)
			assert.Equal(t, got, inst)
			assert.Assert(t, take[path](ctx, started) == nil, "taken once")
		})
	}
}
