// Package fake provides an in-memory osb.Client for unit tests of code that
// drives a broker (the engine). It records every call in order, answers
// with scripted reactions per method, and plays per-operation-key
// sequences of last-operation answers.
//
// A method without a reaction answers like a healthy synchronous broker
// (201 for provision and bind, 200 for the rest, "succeeded" for polls,
// 404 for fetches); call Strict to make such calls fail instead.
//
//	f := fake.New()
//	f.OnProvision(func(ctx context.Context, r *osb.ProvisionRequest) (*osb.ProvisionResponse, error) {
//		return &osb.ProvisionResponse{StatusCode: 202, Async: true, Operation: "op-1"}, nil
//	})
//	f.SetPollSequence("op-1", fake.InProgress("creating"), fake.Succeeded())
//
// All methods are safe for concurrent use.
package fake

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"sync"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
)

// Method names recorded in Call.Method; they equal the osb.Client method names.
const (
	MethodGetCatalog           = "GetCatalog"
	MethodProvision            = "Provision"
	MethodUpdate               = "Update"
	MethodDeprovision          = "Deprovision"
	MethodLastOperation        = "LastOperation"
	MethodGetInstance          = "GetInstance"
	MethodBind                 = "Bind"
	MethodUnbind               = "Unbind"
	MethodBindingLastOperation = "BindingLastOperation"
	MethodGetBinding           = "GetBinding"
)

// Call is one recorded call. Request holds a copy of the request taken when
// the call was made, as a value of the request type (osb.ProvisionRequest,
// ...); for GetCatalog it is an osb.CatalogRequest even when nil was passed.
type Call struct {
	Method  string // one of the Method constants
	Request any    // a copy of the request, as a value
}

// PollStep is one scripted answer of a last-operation poll.
type PollStep struct {
	Response *osb.LastOperationResponse // answer when Err is nil
	Err      error                      // error to return instead
}

// InProgress is a poll answer with state "in progress".
func InProgress(description string) PollStep {
	return PollStep{Response: &osb.LastOperationResponse{State: osb.StateInProgress, Description: description}}
}

// Succeeded is a poll answer with state "succeeded".
func Succeeded() PollStep {
	return PollStep{Response: &osb.LastOperationResponse{State: osb.StateSucceeded}}
}

// Failed is a poll answer with state "failed".
func Failed(description string) PollStep {
	return PollStep{Response: &osb.LastOperationResponse{State: osb.StateFailed, Description: description}}
}

// PollError is a poll that fails with err (see HTTPError, Timeout, Gone).
func PollError(err error) PollStep { return PollStep{Err: err} }

// HTTPError builds the error the real client returns for a broker answer
// with the given status and error code (may be empty).
func HTTPError(method string, status int, errorCode, description string) error {
	return &osb.HTTPStatusError{
		Method: method, Path: "/fake", StatusCode: status,
		ErrorCode: errorCode, Description: description,
	}
}

// Gone is the 410 error of a delete or of polling a finished delete.
func Gone() error { return HTTPError(http.MethodDelete, http.StatusGone, "", "") }

// Timeout is the error the real client returns when the broker does not
// answer in time.
func Timeout() error {
	return &osb.TransportError{Method: "FAKE", Path: "/fake", Timeout: true, Err: context.DeadlineExceeded}
}

// Malformed is the error the real client returns for a success status with
// an undecodable body.
func Malformed(status int) error {
	return &osb.MalformedResponseError{Method: "FAKE", Path: "/fake", StatusCode: status, Err: fmt.Errorf("fake malformed body")}
}

type pollSequence struct {
	steps []PollStep
	next  int
}

// Client is a scripted osb.Client. The zero value is not usable; call New.
type Client struct {
	mu           sync.Mutex
	strict       bool
	calls        []Call
	reactions    map[string]any
	polls        map[string]*pollSequence
	bindingPolls map[string]*pollSequence
	catalog      *osb.CatalogResponse
}

var _ osb.Client = (*Client)(nil)

// New returns a fake with no reactions.
func New() *Client {
	return &Client{
		reactions:    map[string]any{},
		polls:        map[string]*pollSequence{},
		bindingPolls: map[string]*pollSequence{},
	}
}

// Strict makes calls without a reaction (and polls without a sequence or
// reaction) fail with an error naming the method, so a test notices calls it
// did not expect.
func (f *Client) Strict() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.strict = true
}

// Calls returns the recorded calls in order.
func (f *Client) Calls() []Call {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

// CallsTo returns the recorded calls of one method in order.
func (f *Client) CallsTo(method string) []Call {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []Call
	for _, c := range f.calls {
		if c.Method == method {
			out = append(out, c)
		}
	}
	return out
}

// MethodNames returns the method of every recorded call in order, handy for
// asserting a whole conversation at once.
func (f *Client) MethodNames() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]string, len(f.calls))
	for i, c := range f.calls {
		out[i] = c.Method
	}
	return out
}

// ResetCalls forgets the recorded calls but keeps reactions and sequences.
func (f *Client) ResetCalls() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = nil
}

// SetCatalog sets the catalog GetCatalog returns when it has no reaction.
func (f *Client) SetCatalog(c *osb.CatalogResponse) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.catalog = c
}

// SetPollSequence scripts LastOperation answers for an operation key (""
// for brokers that return none). Steps are consumed in order; the last one
// repeats. A sequence takes precedence over an OnLastOperation reaction.
func (f *Client) SetPollSequence(operationKey string, steps ...PollStep) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.polls[operationKey] = &pollSequence{steps: slices.Clone(steps)}
}

// SetBindingPollSequence is SetPollSequence for BindingLastOperation.
func (f *Client) SetBindingPollSequence(operationKey string, steps ...PollStep) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.bindingPolls[operationKey] = &pollSequence{steps: slices.Clone(steps)}
}

func (f *Client) setReaction(method string, fn any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reactions[method] = fn
}

// OnGetCatalog sets the reaction of GetCatalog.
func (f *Client) OnGetCatalog(fn func(context.Context, *osb.CatalogRequest) (*osb.CatalogResponse, error)) {
	f.setReaction(MethodGetCatalog, fn)
}

// OnProvision sets the reaction of Provision.
func (f *Client) OnProvision(fn func(context.Context, *osb.ProvisionRequest) (*osb.ProvisionResponse, error)) {
	f.setReaction(MethodProvision, fn)
}

// OnUpdate sets the reaction of Update.
func (f *Client) OnUpdate(fn func(context.Context, *osb.UpdateRequest) (*osb.UpdateResponse, error)) {
	f.setReaction(MethodUpdate, fn)
}

// OnDeprovision sets the reaction of Deprovision.
func (f *Client) OnDeprovision(fn func(context.Context, *osb.DeprovisionRequest) (*osb.DeprovisionResponse, error)) {
	f.setReaction(MethodDeprovision, fn)
}

// OnLastOperation sets the reaction of LastOperation for keys without a
// poll sequence.
func (f *Client) OnLastOperation(fn func(context.Context, *osb.LastOperationRequest) (*osb.LastOperationResponse, error)) {
	f.setReaction(MethodLastOperation, fn)
}

// OnGetInstance sets the reaction of GetInstance.
func (f *Client) OnGetInstance(fn func(context.Context, *osb.GetInstanceRequest) (*osb.GetInstanceResponse, error)) {
	f.setReaction(MethodGetInstance, fn)
}

// OnBind sets the reaction of Bind.
func (f *Client) OnBind(fn func(context.Context, *osb.BindRequest) (*osb.BindResponse, error)) {
	f.setReaction(MethodBind, fn)
}

// OnUnbind sets the reaction of Unbind.
func (f *Client) OnUnbind(fn func(context.Context, *osb.UnbindRequest) (*osb.UnbindResponse, error)) {
	f.setReaction(MethodUnbind, fn)
}

// OnBindingLastOperation sets the reaction of BindingLastOperation for keys
// without a poll sequence.
func (f *Client) OnBindingLastOperation(fn func(context.Context, *osb.BindingLastOperationRequest) (*osb.LastOperationResponse, error)) {
	f.setReaction(MethodBindingLastOperation, fn)
}

// OnGetBinding sets the reaction of GetBinding.
func (f *Client) OnGetBinding(fn func(context.Context, *osb.GetBindingRequest) (*osb.GetBindingResponse, error)) {
	f.setReaction(MethodGetBinding, fn)
}

// ProvisionReturns makes every Provision answer resp (copied per call) and err.
func (f *Client) ProvisionReturns(resp *osb.ProvisionResponse, err error) {
	f.OnProvision(func(context.Context, *osb.ProvisionRequest) (*osb.ProvisionResponse, error) {
		return clonePtr(resp), err
	})
}

// UpdateReturns makes every Update answer resp and err.
func (f *Client) UpdateReturns(resp *osb.UpdateResponse, err error) {
	f.OnUpdate(func(context.Context, *osb.UpdateRequest) (*osb.UpdateResponse, error) {
		return clonePtr(resp), err
	})
}

// DeprovisionReturns makes every Deprovision answer resp and err.
func (f *Client) DeprovisionReturns(resp *osb.DeprovisionResponse, err error) {
	f.OnDeprovision(func(context.Context, *osb.DeprovisionRequest) (*osb.DeprovisionResponse, error) {
		return clonePtr(resp), err
	})
}

// GetInstanceReturns makes every GetInstance answer resp and err.
func (f *Client) GetInstanceReturns(resp *osb.GetInstanceResponse, err error) {
	f.OnGetInstance(func(context.Context, *osb.GetInstanceRequest) (*osb.GetInstanceResponse, error) {
		return clonePtr(resp), err
	})
}

// BindReturns makes every Bind answer resp and err.
func (f *Client) BindReturns(resp *osb.BindResponse, err error) {
	f.OnBind(func(context.Context, *osb.BindRequest) (*osb.BindResponse, error) {
		return clonePtr(resp), err
	})
}

// UnbindReturns makes every Unbind answer resp and err.
func (f *Client) UnbindReturns(resp *osb.UnbindResponse, err error) {
	f.OnUnbind(func(context.Context, *osb.UnbindRequest) (*osb.UnbindResponse, error) {
		return clonePtr(resp), err
	})
}

// GetBindingReturns makes every GetBinding answer resp and err.
func (f *Client) GetBindingReturns(resp *osb.GetBindingResponse, err error) {
	f.OnGetBinding(func(context.Context, *osb.GetBindingRequest) (*osb.GetBindingResponse, error) {
		return clonePtr(resp), err
	})
}

// clonePtr gives each call its own response so a caller mutating one answer
// cannot change the next.
func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	c := *p
	return &c
}

// record stores the call and returns the reaction, if any. The copy is
// taken under the lock so concurrent callers see a consistent order.
func (f *Client) record(method string, reqCopy any) (reaction any, strict bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, Call{Method: method, Request: reqCopy})
	return f.reactions[method], f.strict
}

func unscripted(method string) error {
	return fmt.Errorf("fake: no reaction scripted for %s", method)
}

// react runs the reaction of method: the poll sequence step if sequence
// has one, else the scripted function, else fallback (or an error in strict
// mode). A done context wins, as it would with a real broker.
func react[Req, Resp any](ctx context.Context, f *Client, method string, req *Req, reqCopy Req, sequence func() (*Resp, bool, error), fallback func() (*Resp, error)) (*Resp, error) {
	reaction, strict := f.record(method, reqCopy)
	if ctx != nil && ctx.Err() != nil {
		return nil, &osb.TransportError{
			Method: "FAKE", Path: "/fake", Err: ctx.Err(),
			Canceled: errors.Is(ctx.Err(), context.Canceled), Timeout: errors.Is(ctx.Err(), context.DeadlineExceeded),
		}
	}
	if sequence != nil {
		if resp, ok, err := sequence(); ok {
			return resp, err
		}
	}
	if fn, ok := reaction.(func(context.Context, *Req) (*Resp, error)); ok && fn != nil {
		return fn(ctx, req)
	}
	if strict {
		return nil, unscripted(method)
	}
	return fallback()
}

func (f *Client) nextPoll(sequences map[string]*pollSequence, key string) (PollStep, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	seq, ok := sequences[key]
	if !ok || len(seq.steps) == 0 {
		return PollStep{}, false
	}
	step := seq.steps[seq.next]
	if seq.next < len(seq.steps)-1 {
		seq.next++
	}
	return step, true
}

// sequence returns the poll-sequence lookup react consults first.
func (f *Client) sequence(sequences map[string]*pollSequence, key string) func() (*osb.LastOperationResponse, bool, error) {
	return func() (*osb.LastOperationResponse, bool, error) {
		step, ok := f.nextPoll(sequences, key)
		if !ok {
			return nil, false, nil
		}
		if step.Err != nil {
			return nil, true, step.Err
		}
		return clonePtr(step.Response), true, nil
	}
}

func cloneRaw(r json.RawMessage) json.RawMessage {
	if r == nil {
		return nil
	}
	return bytes.Clone(r)
}

func cloneContext(c *osb.KubernetesContext) *osb.KubernetesContext {
	if c == nil {
		return nil
	}
	out := *c
	out.NamespaceAnnotations = maps.Clone(c.NamespaceAnnotations)
	out.InstanceAnnotations = maps.Clone(c.InstanceAnnotations)
	return &out
}

func cloneOptions(o osb.RequestOptions) osb.RequestOptions {
	if o.OriginatingIdentity != nil {
		id := *o.OriginatingIdentity
		id.Groups = slices.Clone(id.Groups)
		id.Extra = maps.Clone(id.Extra)
		o.OriginatingIdentity = &id
	}
	return o
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// GetCatalog records the call and answers with the reaction or the catalog
// set by SetCatalog (an empty one by default).
func (f *Client) GetCatalog(ctx context.Context, req *osb.CatalogRequest) (*osb.CatalogResponse, error) {
	c := deref(req)
	c.RequestOptions = cloneOptions(c.RequestOptions)
	return react(ctx, f, MethodGetCatalog, req, c, nil, func() (*osb.CatalogResponse, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.catalog == nil {
			return &osb.CatalogResponse{Services: []osb.Service{}}, nil
		}
		return clonePtr(f.catalog), nil
	})
}

// Provision records the call and answers with the reaction or a sync 201.
func (f *Client) Provision(ctx context.Context, req *osb.ProvisionRequest) (*osb.ProvisionResponse, error) {
	c := deref(req)
	c.RequestOptions = cloneOptions(c.RequestOptions)
	c.Context = cloneContext(c.Context)
	c.Parameters = cloneRaw(c.Parameters)
	c.MaintenanceInfo = clonePtr(c.MaintenanceInfo)
	return react(ctx, f, MethodProvision, req, c, nil, func() (*osb.ProvisionResponse, error) {
		return &osb.ProvisionResponse{StatusCode: http.StatusCreated}, nil
	})
}

// Update records the call and answers with the reaction or a sync 200.
func (f *Client) Update(ctx context.Context, req *osb.UpdateRequest) (*osb.UpdateResponse, error) {
	c := deref(req)
	c.RequestOptions = cloneOptions(c.RequestOptions)
	c.Context = cloneContext(c.Context)
	c.Parameters = cloneRaw(c.Parameters)
	c.MaintenanceInfo = clonePtr(c.MaintenanceInfo)
	if c.PreviousValues != nil {
		pv := *c.PreviousValues
		pv.MaintenanceInfo = clonePtr(pv.MaintenanceInfo)
		c.PreviousValues = &pv
	}
	return react(ctx, f, MethodUpdate, req, c, nil, func() (*osb.UpdateResponse, error) {
		return &osb.UpdateResponse{StatusCode: http.StatusOK}, nil
	})
}

// Deprovision records the call and answers with the reaction or a sync 200.
func (f *Client) Deprovision(ctx context.Context, req *osb.DeprovisionRequest) (*osb.DeprovisionResponse, error) {
	c := deref(req)
	c.RequestOptions = cloneOptions(c.RequestOptions)
	return react(ctx, f, MethodDeprovision, req, c, nil, func() (*osb.DeprovisionResponse, error) {
		return &osb.DeprovisionResponse{StatusCode: http.StatusOK}, nil
	})
}

// LastOperation records the call and answers from the poll sequence of
// req.OperationKey, else the reaction, else "succeeded".
func (f *Client) LastOperation(ctx context.Context, req *osb.LastOperationRequest) (*osb.LastOperationResponse, error) {
	c := deref(req)
	c.RequestOptions = cloneOptions(c.RequestOptions)
	return react(ctx, f, MethodLastOperation, req, c, f.sequence(f.polls, c.OperationKey), func() (*osb.LastOperationResponse, error) {
		return &osb.LastOperationResponse{State: osb.StateSucceeded}, nil
	})
}

// GetInstance records the call and answers with the reaction or a 404.
func (f *Client) GetInstance(ctx context.Context, req *osb.GetInstanceRequest) (*osb.GetInstanceResponse, error) {
	c := deref(req)
	c.RequestOptions = cloneOptions(c.RequestOptions)
	return react(ctx, f, MethodGetInstance, req, c, nil, func() (*osb.GetInstanceResponse, error) {
		return nil, HTTPError(http.MethodGet, http.StatusNotFound, "", "")
	})
}

// Bind records the call and answers with the reaction or a sync 201 without
// credentials.
func (f *Client) Bind(ctx context.Context, req *osb.BindRequest) (*osb.BindResponse, error) {
	c := deref(req)
	c.RequestOptions = cloneOptions(c.RequestOptions)
	c.Context = cloneContext(c.Context)
	c.BindResource = clonePtr(c.BindResource)
	c.Parameters = cloneRaw(c.Parameters)
	return react(ctx, f, MethodBind, req, c, nil, func() (*osb.BindResponse, error) {
		return &osb.BindResponse{StatusCode: http.StatusCreated}, nil
	})
}

// Unbind records the call and answers with the reaction or a sync 200.
func (f *Client) Unbind(ctx context.Context, req *osb.UnbindRequest) (*osb.UnbindResponse, error) {
	c := deref(req)
	c.RequestOptions = cloneOptions(c.RequestOptions)
	return react(ctx, f, MethodUnbind, req, c, nil, func() (*osb.UnbindResponse, error) {
		return &osb.UnbindResponse{StatusCode: http.StatusOK}, nil
	})
}

// BindingLastOperation records the call and answers from the binding poll
// sequence of req.OperationKey, else the reaction, else "succeeded".
func (f *Client) BindingLastOperation(ctx context.Context, req *osb.BindingLastOperationRequest) (*osb.LastOperationResponse, error) {
	c := deref(req)
	c.RequestOptions = cloneOptions(c.RequestOptions)
	return react(ctx, f, MethodBindingLastOperation, req, c, f.sequence(f.bindingPolls, c.OperationKey), func() (*osb.LastOperationResponse, error) {
		return &osb.LastOperationResponse{State: osb.StateSucceeded}, nil
	})
}

// GetBinding records the call and answers with the reaction or a 404.
func (f *Client) GetBinding(ctx context.Context, req *osb.GetBindingRequest) (*osb.GetBindingResponse, error) {
	c := deref(req)
	c.RequestOptions = cloneOptions(c.RequestOptions)
	return react(ctx, f, MethodGetBinding, req, c, nil, func() (*osb.GetBindingResponse, error) {
		return nil, HTTPError(http.MethodGet, http.StatusNotFound, "", "")
	})
}
