package engine

import (
	"context"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
)

// Broker slots. A caller that bounds how many broker calls it has in flight at once,
// rather than how many steps it takes at once, sets BrokerSlots on the context of its
// steps (WithBrokerSlots): every request the engine sends a broker under that context
// then holds one slot from just before it is sent until its answer (or its failure) is
// in, and waits for a free one first. A step's reads and writes of records hold none:
// a call's claim and write-ahead are stored before its slot is taken, and its outcome
// and Event after it is given back, so one step's API requests overlap another's
// broker call. Waiting for a slot is part of the call: a synchronous call waits under
// its claim, which is renewed meanwhile (callUnderClaim), and a context that ends while
// it waits ends the call as an interruption does, before anything was sent. reconcile
// sets it: its --workers are those slots.

// BrokerSlots bounds the broker calls in flight under a context.
type BrokerSlots interface {
	// Take waits for a free slot and returns the function that gives it back. It
	// fails only when ctx ends first, with ctx's error.
	Take(ctx context.Context) (release func(), err error)
}

type brokerSlotsKey struct{}

// WithBrokerSlots returns ctx whose broker calls each hold one of s's slots; a nil s
// takes the slots off ctx (a caller that holds one for a whole step, and makes its
// calls in it).
func WithBrokerSlots(ctx context.Context, s BrokerSlots) context.Context {
	return context.WithValue(ctx, brokerSlotsKey{}, s)
}

// TakeBrokerSlot takes one of ctx's broker slots (WithBrokerSlots), waiting for a free
// one; without slots on ctx it takes nothing. It fails only when ctx ends first.
func TakeBrokerSlot(ctx context.Context) (release func(), err error) {
	s, _ := ctx.Value(brokerSlotsKey{}).(BrokerSlots)
	if s == nil {
		return func() {}, nil
	}
	return s.Take(ctx)
}

// slotted is a broker's client whose requests each hold a broker slot of their
// context while they are under way. The engine wraps every client it calls brokers
// with in one (readTarget): without slots on the context it is the client itself.
type slotted struct{ c osb.Client }

var _ osb.Client = slotted{}

// inSlot makes the request call(ctx, req) holding one of ctx's broker slots.
func inSlot[Req, Resp any](ctx context.Context, req Req, call func(context.Context, Req) (Resp, error)) (Resp, error) {
	release, err := TakeBrokerSlot(ctx)
	if err != nil {
		var none Resp
		return none, err
	}
	defer release()
	return call(ctx, req)
}

func (s slotted) GetCatalog(ctx context.Context, req *osb.CatalogRequest) (*osb.CatalogResponse, error) {
	return inSlot(ctx, req, s.c.GetCatalog)
}

func (s slotted) Provision(ctx context.Context, req *osb.ProvisionRequest) (*osb.ProvisionResponse, error) {
	return inSlot(ctx, req, s.c.Provision)
}

func (s slotted) Update(ctx context.Context, req *osb.UpdateRequest) (*osb.UpdateResponse, error) {
	return inSlot(ctx, req, s.c.Update)
}

func (s slotted) Deprovision(ctx context.Context, req *osb.DeprovisionRequest) (*osb.DeprovisionResponse, error) {
	return inSlot(ctx, req, s.c.Deprovision)
}

func (s slotted) LastOperation(ctx context.Context, req *osb.LastOperationRequest) (*osb.LastOperationResponse, error) {
	return inSlot(ctx, req, s.c.LastOperation)
}

func (s slotted) GetInstance(ctx context.Context, req *osb.GetInstanceRequest) (*osb.GetInstanceResponse, error) {
	return inSlot(ctx, req, s.c.GetInstance)
}

func (s slotted) Bind(ctx context.Context, req *osb.BindRequest) (*osb.BindResponse, error) {
	return inSlot(ctx, req, s.c.Bind)
}

func (s slotted) Unbind(ctx context.Context, req *osb.UnbindRequest) (*osb.UnbindResponse, error) {
	return inSlot(ctx, req, s.c.Unbind)
}

func (s slotted) BindingLastOperation(ctx context.Context, req *osb.BindingLastOperationRequest) (*osb.LastOperationResponse, error) {
	return inSlot(ctx, req, s.c.BindingLastOperation)
}

func (s slotted) GetBinding(ctx context.Context, req *osb.GetBindingRequest) (*osb.GetBindingResponse, error) {
	return inSlot(ctx, req, s.c.GetBinding)
}
