package engine

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
)

// How a binding that holds no place under its instance's limit (made while there was
// none) waits to bind, with something of it the broker may hold.
type waitingBind int

const (
	// firstInFlight: its first bind was interrupted during the call.
	firstInFlight waitingBind = iota
	// firstAgain: its first bind ended with an id the broker may hold (a failure whose
	// outcome kept the id), and it is to be bound again, nothing in flight.
	firstAgain
	// rotating: it is bound, and its rotation's bind was interrupted during the call.
	rotating
)

func (w waitingBind) String() string {
	return [...]string{"first bind in flight", "first bind to be sent again, an earlier id held", "rotation in flight"}[w]
}

// interruptedBind steps binding name in namespace bns with its call interrupted: its
// bind is left in flight, the broker may hold it.
func (f *fixture) interruptedBind(bns, name string) {
	f.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	f.engine.cfg.Hook = func(_ context.Context, p HookPoint, _ *v1alpha1.Operation) {
		if p == HookBeforeBrokerCall {
			cancel()
		}
	}
	defer func() { f.engine.cfg.Hook = nil }()
	b, err := f.bindingIn(bns, name)
	assert.NilError(f.t, err)
	_, _ = f.engine.StepBinding(ctx, b)
	b, err = f.bindingIn(bns, name)
	assert.NilError(f.t, err)
	assert.Assert(f.t, b.Status.InFlight != nil, "the bind of %s/%s is in flight", bns, name)
}

// waitingFor brings binding name of namespace bns, made with no limit on its instance,
// to state w.
func (f *fixture) waitingFor(w waitingBind, bns, name string) {
	f.t.Helper()
	if bns == ns {
		f.createBinding(name, func(in *BindingIntent) { in.ExternalID = "bind-" + name })
	} else {
		f.consumerBinding(nil, bns, name)
	}
	f.advance(2 * time.Second)
	switch w {
	case firstInFlight:
		f.interruptedBind(bns, name)
	case firstAgain:
		f.interruptedBind(bns, name)
		// The bind's outcome kept the id (the broker may hold it) and cleared the call.
		_, err := f.st.Bindings().UpdateWithRetry(context.Background(), bns, name, func(b *v1alpha1.ServiceBinding) error {
			b.Status.InFlight = nil
			return nil
		})
		assert.NilError(f.t, err)
	case rotating:
		for range 10 {
			b, err := f.bindingIn(bns, name)
			assert.NilError(f.t, err)
			if b.Status.Bound != nil && b.Status.InFlight == nil {
				break
			}
			_, err = f.engine.StepBinding(context.Background(), b)
			assert.NilError(f.t, err)
		}
		_, err := f.engine.startRotation(context.Background(), bns, name)
		assert.NilError(f.t, err)
		f.interruptedBind(bns, name)
	}
	b, err := f.bindingIn(bns, name)
	assert.NilError(f.t, err)
	assert.Assert(f.t, b.Status.Bound == nil || w == rotating)
	assert.Assert(f.t, len(b.Status.ExternalIDs) > 0)
}

// Two bindings made while their instance had no limit, each with something the broker
// may hold and each waiting to bind (a first bind in flight or to be sent again, a
// rotation), and then a limit that leaves one place for them: each one's bind counts
// the other, which holds no place either, so without an order both are refused for
// ever, each naming the other. The older goes first and takes the place; the younger
// waits for it, refused, naming the older; never both. Found by the simulation
// (-sim.rebind -sim.asyncbind, seed 935: a first bind to be sent again and a first bind
// in flight of another namespace; -sim.rebind, seed 1241: two rotations, under a place
// kept from an earlier limit). Each pair of states, of one namespace and across two.
func TestConsumers_TwoBindingsWaitingWhenALimitIsSet_TheOlderGoesFirst(t *testing.T) {
	type pair struct{ older, younger waitingBind }
	var cases []pair
	for _, o := range []waitingBind{firstInFlight, firstAgain, rotating} {
		for _, y := range []waitingBind{firstInFlight, firstAgain, rotating} {
			cases = append(cases, pair{o, y})
		}
	}
	for _, tc := range cases {
		for _, youngerNS := range []string{ns, consumerNS} {
			t.Run(fmt.Sprintf("%s, then %s in %s", tc.older, tc.younger, youngerNS), func(t *testing.T) {
				f, _ := bindingFixture(t, nil)
				if youngerNS != ns {
					_, err := f.cluster.Core.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: consumerNS}}, metav1.CreateOptions{})
					assert.NilError(t, err)
					_, err = f.engine.Share(context.Background(), ShareRequest{Namespace: ns, Name: "db", To: consumerNS, DryRun: DryRunNone})
					assert.NilError(t, err)
				}
				// A place kept from an earlier limit, older than both bindings (what
				// makes a rotation take a place like any bind).
				f.createBinding("kept", func(in *BindingIntent) { in.ExternalID = "bind-kept" })
				kept, err := f.bindingIn(ns, "kept")
				assert.NilError(t, err)
				f.editInstance(func(i *v1alpha1.ServiceInstance) {
					i.Status.Consumers = append(i.Status.Consumers, v1alpha1.ConsumerReservation{
						Namespace: ns, Name: "kept", UID: string(kept.UID), ReservedAt: kept.CreationTimestamp})
				})
				f.advance(time.Hour)
				f.waitingFor(tc.older, ns, "older")
				f.advance(time.Hour)
				f.waitingFor(tc.younger, youngerNS, "younger")
				two := int32(2)
				f.editInstance(func(i *v1alpha1.ServiceInstance) { i.Spec.MaxBindings = &two })
				f.advance(time.Hour)

				ry, ro := f.stepBindingIn(youngerNS, "younger"), f.stepBindingIn(ns, "older")

				assert.Assert(t, !ro.Refused, "the older was refused: %s", ro.Message)
				assert.Assert(t, ry.Refused, "the younger was not refused: %s", ry.Message)
				f.advance(time.Hour)
				ry = f.stepBindingIn(youngerNS, "younger")
				assert.Assert(t, ry.Refused && strings.Contains(ry.Message, "reached its limit of 2 bindings (dev/kept, dev/older)"),
					"the younger waits while the older holds the place: %s", ry.Message)
				assert.Assert(t, reserved(f.get("db"), mustBinding(t, f, ns, "older")))
			})
		}
	}
}

func mustBinding(t *testing.T, f *fixture, bns, name string) *v1alpha1.ServiceBinding {
	t.Helper()
	b, err := f.bindingIn(bns, name)
	assert.NilError(t, err)
	return b
}
