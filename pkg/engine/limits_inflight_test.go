package engine

import (
	"context"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
)

// Two binds written ahead while their instance had no limit, both interrupted during
// their calls (the broker may hold both), and then a limit of one binding: each
// binding's re-send counts the other, which the broker may hold, as holding the only
// place, so both are refused for ever, each with a bind in flight that the broker may
// hold and nothing unbinds. (-sim.limits seed 133.)
func TestConsumers_TwoBindsInFlightWhenALimitIsSet_DoNotRefuseEachOtherForEver(t *testing.T) {
	f, _ := bindingFixture(t, nil)
	for _, name := range []string{"one", "two"} {
		f.createBinding(name, func(in *BindingIntent) { in.ExternalID = "bind-" + name })
		ctx, cancel := context.WithCancel(context.Background())
		f.engine.cfg.Hook = func(_ context.Context, p HookPoint, _ *v1alpha1.Operation) {
			if p == HookBeforeBrokerCall {
				cancel()
			}
		}
		b, err := f.bindingIn(ns, name)
		assert.NilError(t, err)
		_, _ = f.engine.StepBinding(ctx, b)
		f.engine.cfg.Hook = nil
		b, err = f.bindingIn(ns, name)
		assert.NilError(t, err)
		assert.Assert(t, b.Status.InFlight != nil, "the bind of %s is in flight", name)
	}
	one := int32(1)
	f.editInstance(func(i *v1alpha1.ServiceInstance) { i.Spec.MaxBindings = &one })
	f.advance(time.Hour)

	r1, r2 := f.stepBinding("one"), f.stepBinding("two")

	assert.Assert(t, !(r1.Refused && r2.Refused), "both refused: %q and %q", r1.Message, r2.Message)
	// The older goes first; the younger waits for its place.
	assert.Assert(t, !r1.Refused, r1.Message)
	assert.Assert(t, strings.Contains(r2.Message, "reached its limit of 1 bindings (dev/one)"), "two, younger, waits while one holds the place: %s", r2.Message)
}
