package sim

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb/fake"
)

// provisionHandler is how the broker provisions, keeping what it holds in l.
func (w *world) provisionHandler(l *fake.Ledger) func(ctx context.Context, r *osb.ProvisionRequest) (*osb.ProvisionResponse, error) {
	return func(ctx context.Context, r *osb.ProvisionRequest) (*osb.ProvisionResponse, error) {
		w.checkSentParams(fake.MethodProvision, r.InstanceID, r.RequestIdentity, r.Parameters)
		ns := ""
		if r.Context != nil {
			ns = r.Context.Namespace
		}
		put := func() {
			l.PutInstance(fake.Held{ID: r.InstanceID, Namespace: ns, PlanID: r.PlanID})
			w.provisionedParams(r.InstanceID, r.Parameters)
			w.provisionedMaintenance(r.InstanceID, r.PlanID, r.MaintenanceInfo) // upgrade_test.go
		}
		o := w.call(ctx, fake.MethodProvision, r.InstanceID, func() outcome {
			if o, ok := w.rogue(rogueProvision, r.InstanceID, put, nil, nil); ok {
				return o
			}
			if o, ok := w.busy(r.InstanceID); ok {
				return o
			}
			if h, ok := l.Instance(r.InstanceID); ok {
				if o, ok := otherProvision(h, r); ok {
					return o // simrogue_test.go
				}
				if o, ok := w.otherMaintenance(h.ID, r.MaintenanceInfo); ok {
					return o // upgrade_test.go
				}
				if w.oversized[r.InstanceID] && w.faults {
					// A broker that answered with an oversized field answers so again
					// (until the faults stop).
					return outcome{what: "200 (identical request) with a 1.1 MB dashboard URL", status: 200, dashboard: hugeURL}
				}
				return outcome{what: "200 (identical request)", status: 200}
			}
			if o, ok := w.staleMaintenance(r.PlanID, r.MaintenanceInfo); ok {
				return o // upgrade_test.go
			}
			if w.faulty() {
				switch w.faultOf(7, 2) {
				case 0:
					return badRequest()
				case 1:
					return concurrencyError()
				case 2:
					return w.internalError(put)
				case 3:
					return w.timedOut(put)
				case 4:
					return outcome{what: "202, to fail", apply: put, status: 202, key: w.newOp(r.InstanceID, true, nil)}
				case 5:
					w.oversized[r.InstanceID] = true
					return outcome{what: "201 with a 1.1 MB dashboard URL", apply: put, status: 201, dashboard: hugeURL}
				default:
					return outcome{what: "malformed 201", apply: put, err: fake.Malformed(201)}
				}
			}
			if w.rng.IntN(4) == 0 {
				return outcome{what: "202", apply: put, status: 202, key: w.newOp(r.InstanceID, false, nil)}
			}
			return outcome{what: "201", apply: put, status: 201}
		})
		return respond(w, o, fake.MethodProvision, r.InstanceID,
			&osb.ProvisionResponse{StatusCode: o.status, Async: o.status == 202, Operation: o.key, DashboardURL: o.dashboard},
			func(c osb.Client) (*osb.ProvisionResponse, error) { return c.Provision(ctx, r) })
	}
}

// updateHandler is how the broker updates, keeping what it holds in l.
func (w *world) updateHandler(l *fake.Ledger) func(ctx context.Context, r *osb.UpdateRequest) (*osb.UpdateResponse, error) {
	return func(ctx context.Context, r *osb.UpdateRequest) (*osb.UpdateResponse, error) {
		w.checkSentParams(fake.MethodUpdate, r.InstanceID, r.RequestIdentity, r.Parameters)
		change := func() {
			if h, ok := l.Instance(r.InstanceID); ok && r.PlanID != "" {
				h.PlanID = r.PlanID
				l.PutInstance(h)
			}
			if _, ok := l.Instance(r.InstanceID); ok {
				w.updatedParams(r.InstanceID, r.Parameters)
				w.updatedMaintenance(r.InstanceID, r.MaintenanceInfo) // upgrade_test.go
			}
		}
		o := w.call(ctx, fake.MethodUpdate, r.InstanceID, func() outcome {
			if o, ok := w.rogue(rogueUpdate, r.InstanceID, change, nil, nil); ok {
				return o
			}
			if o, ok := w.busy(r.InstanceID); ok {
				return o
			}
			if _, ok := l.Instance(r.InstanceID); !ok {
				return outcome{what: "404 (no such instance)", err: httpErr(404, "", "no such instance")}
			}
			if h, _ := l.Instance(r.InstanceID); true {
				plan := cmp.Or(r.PlanID, h.PlanID)
				if o, ok := w.staleMaintenance(plan, r.MaintenanceInfo); ok {
					return o // upgrade_test.go
				}
			}
			if w.faulty() {
				switch w.faultOf(4, 2) {
				case 0:
					return badRequest()
				case 1:
					return concurrencyError()
				case 2:
					return w.internalError(change)
				default:
					return w.timedOut(change)
				}
			}
			return w.succeeded(r.InstanceID, change)
		})
		return respond(w, o, fake.MethodUpdate, r.InstanceID,
			&osb.UpdateResponse{StatusCode: o.status, Async: o.status == 202, Operation: o.key},
			func(c osb.Client) (*osb.UpdateResponse, error) { return c.Update(ctx, r) })
	}
}

// deprovisionHandler is how the broker deprovisions, keeping what it holds in l.
func (w *world) deprovisionHandler(l *fake.Ledger) func(ctx context.Context, r *osb.DeprovisionRequest) (*osb.DeprovisionResponse, error) {
	return func(ctx context.Context, r *osb.DeprovisionRequest) (*osb.DeprovisionResponse, error) {
		drop := func() { l.DropInstance(r.InstanceID) }
		o := w.call(ctx, fake.MethodDeprovision, r.InstanceID, func() outcome {
			w.noteUnmigratedUnderDelete(l, r.InstanceID)
			if o, ok := w.rogue(rogueDeprovision, r.InstanceID, drop, nil, nil); ok {
				return o
			}
			if o, ok := w.busy(r.InstanceID); ok {
				return o
			}
			if _, ok := l.Instance(r.InstanceID); !ok {
				return outcome{what: "410 Gone", err: fake.Gone()}
			}
			// (The tenant may forge her own records into deleting her instance under her own
			// binding: only her namespace is hurt. A binding the broker said was gone while
			// it held it is one the engine cannot know of.)
			if bs := slices.DeleteFunc(l.BindingsOf(r.InstanceID), func(h fake.Held) bool {
				return h.Namespace == "t" || w.book.lied(h.ID) || w.abandonedID(h.ID, "") || w.unmigratedUnderDelete(h.ID)
			}); len(bs) > 0 {
				w.fail("DELETE of instance %s while the broker holds its binding %s (namespace %s)", r.InstanceID, bs[0].ID, bs[0].Namespace)
			}
			if bs := w.bindsUnderWay(r.InstanceID); len(bs) > 0 {
				w.fail("DELETE of instance %s while the broker binds %s under it (an asynchronous bind under way)", r.InstanceID, bs[0])
			}
			if w.faulty() {
				switch w.faultOf(4, 1) {
				case 0:
					return concurrencyError()
				case 1:
					return w.internalError(drop)
				case 2:
					return outcome{what: "202, to fail", status: 202, key: w.newOp(r.InstanceID, true, drop)}
				default:
					return w.timedOut(drop)
				}
			}
			return w.succeeded(r.InstanceID, drop)
		})
		return respond(w, o, fake.MethodDeprovision, r.InstanceID,
			&osb.DeprovisionResponse{StatusCode: o.status, Async: o.status == 202, Operation: o.key},
			func(c osb.Client) (*osb.DeprovisionResponse, error) { return c.Deprovision(ctx, r) })
	}
}

// lastOperationHandler is how the broker answers an instance's last operation, keeping what it holds in l.
func (w *world) lastOperationHandler(l *fake.Ledger) func(ctx context.Context, r *osb.LastOperationRequest) (*osb.LastOperationResponse, error) {
	return func(ctx context.Context, r *osb.LastOperationRequest) (*osb.LastOperationResponse, error) {
		var resp *osb.LastOperationResponse
		o := w.call(ctx, fake.MethodLastOperation, r.InstanceID, func() outcome {
			if o, ok := w.rogue(roguePoll, r.InstanceID, nil, nil, nil); ok {
				return o
			}
			op, ok := w.ops[r.OperationKey]
			if !ok && w.book.track(r.InstanceID).rogue {
				var err error
				resp, err = w.honestPoll(fake.MethodLastOperation, r.InstanceID)
				return outcome{what: fmt.Sprintf("no such operation: %s", describeLastOperation(resp, err)), err: err}
			}
			if !ok || op.id != r.InstanceID {
				if _, held := l.Instance(r.InstanceID); !held {
					return outcome{what: "410 Gone", err: fake.Gone()}
				}
				return outcome{what: "400 (no such operation)", err: httpErr(400, "", "no such operation")}
			}
			if w.faulty() && w.rng.IntN(2) == 0 {
				return outcome{what: "500", err: httpErr(500, "", "internal error")}
			}
			switch {
			case !op.over:
				resp = &osb.LastOperationResponse{State: osb.StateInProgress, Description: "working"}
				return outcome{what: "in progress"}
			case op.fail:
				resp = &osb.LastOperationResponse{State: osb.StateFailed, Description: "it failed"}
				return outcome{what: "failed"}
			}
			resp = &osb.LastOperationResponse{State: osb.StateSucceeded}
			return outcome{what: "succeeded"}
		})
		if o.err != nil {
			resp = nil
		}
		err := o.err
		if o.wire != nil {
			resp, err = wire(w, o, func(c osb.Client) (*osb.LastOperationResponse, error) { return c.LastOperation(ctx, r) })
		}
		return answerPoll(w, fake.MethodLastOperation, r.InstanceID, resp, err)
	}
}

// bindHandler is how the broker binds, keeping what it holds in l.
func (w *world) bindHandler(l *fake.Ledger) func(ctx context.Context, r *osb.BindRequest) (*osb.BindResponse, error) {
	return func(ctx context.Context, r *osb.BindRequest) (*osb.BindResponse, error) {
		ns := ""
		if r.Context != nil {
			ns = w.bindingNamespace(r)
		}
		w.limitsAtBind(ns, r) // limits_test.go
		w.rebindAtBind(r)     // rebind_test.go
		creds := map[string]any{"password": fmt.Sprintf("pw-%d", w.rng.IntN(1_000_000))}
		putWith := func(creds map[string]any) {
			l.PutBinding(fake.Held{ID: r.BindingID, InstanceID: r.InstanceID, Namespace: ns, Credentials: creds})
		}
		put := func() { putWith(creds) }
		md := w.bindingLifetime(r.BindingID) // rotatedue_test.go
		o := w.call(ctx, fake.MethodBind, r.BindingID, func() outcome {
			// Whatever it answers, a broker creates no binding of an instance it does not
			// hold (one it said it created and did not, say).
			_, held := l.Instance(r.InstanceID)
			rogueput := putWith
			if !held {
				rogueput = nil
			}
			if o, ok := w.rogue(rogueBind, r.BindingID, nil, creds, rogueput); ok {
				return o
			}
			if !held {
				return outcome{what: "404 (no such instance)", err: httpErr(404, "", "no such instance")}
			}
			if h, ok := l.Binding(r.BindingID); ok {
				if w.oversized[r.BindingID] && w.faults {
					return outcome{what: "200 (identical request) with 5,000 endpoints", status: 200, creds: h.Credentials, endpoints: manyEndpoints, meta: md}
				}
				return outcome{what: "200 (identical request)", status: 200, creds: h.Credentials, meta: md}
			}
			if o, ok := w.asyncBind(r, ns, put); ok {
				return o
			}
			if w.faulty() {
				switch w.faultOf(5, 2) {
				case 0:
					return badRequest()
				case 1:
					return concurrencyError()
				case 2:
					return w.internalError(put)
				case 3:
					w.oversized[r.BindingID] = true
					return outcome{what: "201 with 5,000 endpoints", apply: put, status: 201, creds: creds, endpoints: manyEndpoints, meta: md}
				default:
					return w.timedOut(put)
				}
			}
			return outcome{what: "201", apply: put, status: 201, creds: creds, meta: md}
		})
		resp, err := &osb.BindResponse{StatusCode: o.status, Async: o.status == 202, Operation: o.key, Credentials: o.creds, Endpoints: o.endpoints, Metadata: o.meta}, o.err
		if o.wire != nil {
			resp, err = wire(w, o, func(c osb.Client) (*osb.BindResponse, error) { return c.Bind(ctx, r) })
		}
		if err == nil && !resp.Async {
			w.handedOut(r.BindingID, resp.Credentials)
		}
		return answer(w, fake.MethodBind, r.BindingID, resp, err)
	}
}

// unbindHandler is how the broker unbinds, keeping what it holds in l.
func (w *world) unbindHandler(l *fake.Ledger) func(ctx context.Context, r *osb.UnbindRequest) (*osb.UnbindResponse, error) {
	return func(ctx context.Context, r *osb.UnbindRequest) (*osb.UnbindResponse, error) {
		drop := func() { l.DropBinding(r.BindingID) }
		w.rebindAtUnbind(r.BindingID) // rebind_test.go
		o := w.call(ctx, fake.MethodUnbind, r.BindingID, func() outcome {
			if o, ok := w.rogue(rogueUnbind, r.BindingID, drop, nil, nil); ok {
				return o
			}
			if o, ok := w.asyncUnbind(r, drop); ok {
				return o
			}
			if _, ok := l.Binding(r.BindingID); !ok {
				return outcome{what: "410 Gone", err: fake.Gone()}
			}
			if w.faulty() {
				switch w.faultOf(3, 1) {
				case 0:
					return concurrencyError()
				case 1:
					return w.internalError(drop)
				default:
					return w.timedOut(drop)
				}
			}
			return outcome{what: "200", apply: drop, status: 200}
		})
		return respond(w, o, fake.MethodUnbind, r.BindingID,
			&osb.UnbindResponse{StatusCode: o.status, Async: o.status == 202, Operation: o.key},
			func(c osb.Client) (*osb.UnbindResponse, error) { return c.Unbind(ctx, r) })
	}
}

// internalError is a 500 answer to a request the broker carried out or not (apply).
func (w *world) internalError(apply func()) outcome {
	apply, what := w.maybe(apply)
	return outcome{what: "500" + what, apply: apply, err: httpErr(500, "", "internal error")}
}

// timedOut is a request the broker did not answer in time, carried out or not (apply).
func (w *world) timedOut(apply func()) outcome {
	apply, what := w.maybe(apply)
	return outcome{what: "timeout" + what, apply: apply, err: fake.Timeout()}
}

func concurrencyError() outcome {
	return outcome{what: "422 ConcurrencyError", err: httpErr(422, "ConcurrencyError", "busy")}
}

func badRequest() outcome {
	return outcome{what: "400 bad request", err: httpErr(400, "", "bad parameters")}
}

// respond is a handler's answer: resp, made of o, or what the wire makes of o.
func respond[R statuser](w *world, o outcome, method, id string, resp R, send func(osb.Client) (R, error)) (R, error) {
	err := o.err
	if o.wire != nil {
		resp, err = wire(w, o, send)
	}
	return answer(w, method, id, resp, err)
}

// succeeded is a request the broker carries out (apply): at once (200) or, one time in
// four, in an operation to poll (202).
func (w *world) succeeded(id string, apply func()) outcome {
	if w.rng.IntN(4) == 0 {
		return outcome{what: "202", status: 202, key: w.newOp(id, false, apply)}
	}
	return outcome{what: "200", apply: apply, status: 200}
}
