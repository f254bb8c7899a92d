package osb

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"gotest.tools/v3/assert"
)

// omForAll is om for every operation that sends a request.
func omForAll(om bool) map[Operation]bool {
	return map[Operation]bool{OpProvision: om, OpUpdate: om, OpDeprovision: om, OpBind: om, OpUnbind: om}
}

// omRow is a row of the orphan mitigation table: outcomes and, per operation, whether
// they call for orphan mitigation.
type omRow struct {
	row      string
	outcomes []Outcome
	om       map[Operation]bool
}

var omRows = []omRow{
	{
		row:      "200 (any request): no",
		outcomes: []Outcome{{StatusCode: 200}},
		om:       omForAll(false),
	},
	{
		row:      "200 with a malformed body: no (treat as failure)",
		outcomes: []Outcome{{StatusCode: 200, Malformed: true}},
		om:       omForAll(false),
	},
	{
		row:      "201 / 202: no",
		outcomes: []Outcome{{StatusCode: 202}},
		om:       omForAll(false),
	},
	{
		row:      "201 / 202: no (201 where the spec allows it)",
		outcomes: []Outcome{{StatusCode: 201}},
		om:       map[Operation]bool{OpProvision: false, OpBind: false},
	},
	{
		row:      "201 or 202 with a malformed body: yes for provision and bind",
		outcomes: []Outcome{{StatusCode: 201, Malformed: true}, {StatusCode: 202, Malformed: true}},
		om:       map[Operation]bool{OpProvision: true, OpBind: true},
	},
	{
		row:      "201 or 202 with a malformed body: 202 on update, deprovision, unbind needs none",
		outcomes: []Outcome{{StatusCode: 202, Malformed: true}},
		om:       map[Operation]bool{OpUpdate: false, OpDeprovision: false, OpUnbind: false},
	},
	{
		row:      "Any other 2xx: yes for provision, deprovision, bind, unbind (update: no)",
		outcomes: []Outcome{{StatusCode: 203}, {StatusCode: 204}, {StatusCode: 206}, {StatusCode: 299}},
		om:       map[Operation]bool{OpProvision: true, OpUpdate: false, OpDeprovision: true, OpBind: true, OpUnbind: true},
	},
	{
		row:      "Any other 2xx: 201 on update, deprovision, unbind",
		outcomes: []Outcome{{StatusCode: 201}},
		om:       map[Operation]bool{OpUpdate: false, OpDeprovision: true, OpUnbind: true},
	},
	{
		row:      "408: no",
		outcomes: []Outcome{{StatusCode: 408}},
		om:       omForAll(false),
	},
	{
		row: "Other 4xx, including 422 ConcurrencyError: no",
		outcomes: []Outcome{
			{StatusCode: 400}, {StatusCode: 401}, {StatusCode: 403}, {StatusCode: 404}, {StatusCode: 409},
			{StatusCode: 412}, {StatusCode: 422, ErrorCode: ErrorCodeConcurrencyError},
			{StatusCode: 422, ErrorCode: ErrorCodeAsyncRequired}, {StatusCode: 422, ErrorCode: ErrorCodeRequiresApp},
			{StatusCode: 422, ErrorCode: ErrorCodeMaintenanceInfoConflict}, {StatusCode: 422}, {StatusCode: 429},
		},
		om: omForAll(false),
	},
	{
		row:      "5xx: yes for provision, deprovision, bind, unbind (update: no)",
		outcomes: []Outcome{{StatusCode: 500}, {StatusCode: 502}, {StatusCode: 503}, {StatusCode: 504}},
		om:       map[Operation]bool{OpProvision: true, OpUpdate: false, OpDeprovision: true, OpBind: true, OpUnbind: true},
	},
	{
		row:      "3xx, never followed on these calls: as 5xx, yes for provision, deprovision, bind, unbind (update: no)",
		outcomes: []Outcome{{StatusCode: 300}, {StatusCode: 301}, {StatusCode: 302}, {StatusCode: 303}, {StatusCode: 307}, {StatusCode: 308}},
		om:       map[Operation]bool{OpProvision: true, OpUpdate: false, OpDeprovision: true, OpBind: true, OpUnbind: true},
	},
	{
		row:      "Client timeout: yes for provision and bind only",
		outcomes: []Outcome{{NoAnswer: true}},
		om:       map[Operation]bool{OpProvision: true, OpUpdate: false, OpDeprovision: false, OpBind: true, OpUnbind: false},
	},
	{
		row:      "last_operation failed: yes for async provision, deprovision, bind, unbind",
		outcomes: []Outcome{{StatusCode: 200, State: StateFailed}},
		om:       map[Operation]bool{OpPollProvision: true, OpPollUpdate: false, OpPollDeprovision: true, OpPollBind: true, OpPollUnbind: true},
	},
	{
		row:      "Platform-internal error while creating: yes",
		outcomes: []Outcome{{StatusCode: 201, PlatformError: true}, {StatusCode: 202, PlatformError: true}},
		om:       map[Operation]bool{OpProvision: true, OpBind: true},
	},
}

// TestDecide_OrphanMitigationTable has one case per row of the table in
// checklist section 4; each row lists, per operation, whether orphan
// mitigation is required (instance column: provision, update, deprovision;
// binding column: bind, unbind).
func TestDecide_OrphanMitigationTable(t *testing.T) {
	rows := omRows
	for _, r := range rows {
		t.Run(r.row, func(t *testing.T) {
			for op, wantOM := range r.om {
				for _, o := range r.outcomes {
					a := Decide(op, o)
					assert.Equal(t, a.OrphanMitigation, wantOM, "%s with %+v: %+v", op, o, a)
					if a.OrphanMitigation {
						assert.Equal(t, a.Result, ResultFailed, "%s with %+v", op, o)
						assert.Assert(t, a.Retry, "mitigation is followed by a retry")
					}
				}
			}
		})
	}
}

// TestDecide_PollingRules has one case per polling rule of checklist
// section 4.
func TestDecide_PollingRules(t *testing.T) {
	polls := []Operation{OpPollProvision, OpPollUpdate, OpPollDeprovision, OpPollBind, OpPollUnbind}
	mutations := []Operation{OpProvision, OpUpdate, OpDeprovision, OpBind, OpUnbind}
	rules := []struct {
		rule  string
		check func(t *testing.T)
	}{
		{"1. Start polling on a 202", func(t *testing.T) {
			for _, op := range mutations {
				a := Decide(op, Outcome{StatusCode: 202})
				assert.Equal(t, a, Action{Result: ResultInProgress, Reason: ReasonInProgress, Poll: true}, "%s", op)
				assert.Equal(t, op.Poll().IsPoll(), true)
			}
		}},
		{"2. Send back operation exactly as received, with service_id and the old plan_id", func(t *testing.T) {
			b := newFakeBroker(t, reply(http.StatusOK, `{"state":"in progress"}`))
			_, err := newTestClient(t, b.URL).LastOperation(t.Context(), &LastOperationRequest{
				InstanceID: "i", ServiceID: "svc", PlanID: "plan-before-update", OperationKey: oddOperation,
			})
			assert.NilError(t, err)
			assert.Equal(t, b.last(t).RawQuery, "service_id=svc&plan_id=plan-before-update&operation="+oddOperationWire)
		}},
		{"3. in progress continues; succeeded or failed end polling", func(t *testing.T) {
			for _, op := range polls {
				assert.Assert(t, Decide(op, Outcome{StatusCode: 200, State: StateInProgress}).Poll, "%s", op)
				s := Decide(op, Outcome{StatusCode: 200, State: StateSucceeded})
				assert.Equal(t, s.Result, ResultSucceeded, "%s", op)
				assert.Assert(t, !s.Poll)
				f := Decide(op, Outcome{StatusCode: 200, State: StateFailed})
				assert.Equal(t, f.Result, ResultFailed, "%s", op)
				assert.Assert(t, !f.Poll)
			}
		}},
		{"4. The interval is the platform's, but Retry-After is honoured", func(t *testing.T) {
			b := newFakeBroker(t, reply(http.StatusOK, `{"state":"in progress"}`, HeaderRetryAfter, "42"))
			resp, err := newTestClient(t, b.URL).BindingLastOperation(t.Context(), &BindingLastOperationRequest{InstanceID: "i", BindingID: "b"})
			assert.NilError(t, err)
			assert.Equal(t, resp.RetryAfter, 42*time.Second)
			assert.Assert(t, Decide(OpPollBind, PollOutcomeOf(resp, err)).Poll)
		}},
		{"5. Past the maximum polling duration the operation is failed", func(t *testing.T) {
			for _, op := range polls {
				for _, o := range []Outcome{
					{StatusCode: 200, State: StateInProgress, PollingExpired: true},
					{NoAnswer: true, PollingExpired: true},
					{StatusCode: 500, PollingExpired: true},
				} {
					a := Decide(op, o)
					assert.Equal(t, a.Result, ResultFailed, "%s %+v", op, o)
					assert.Equal(t, a.Reason, ReasonPollingExpired)
					assert.Equal(t, a.OrphanMitigation, op != OpPollUpdate, "treated like state failed")
				}
				// A final answer that arrives at the deadline still counts.
				assert.Equal(t, Decide(op, Outcome{StatusCode: 200, State: StateSucceeded, PollingExpired: true}).Result, ResultSucceeded)
			}
		}},
		{"6. 410 is success for a delete, invalid for create or update; other codes are invalid", func(t *testing.T) {
			for _, op := range []Operation{OpPollDeprovision, OpPollUnbind} {
				assert.Equal(t, Decide(op, Outcome{StatusCode: 410}),
					Action{Result: ResultSucceeded, Reason: ReasonGone, Forget: true}, "%s", op)
			}
			for _, op := range []Operation{OpPollProvision, OpPollUpdate, OpPollBind} {
				assert.Equal(t, Decide(op, Outcome{StatusCode: 410}),
					Action{Result: ResultInProgress, Reason: ReasonInvalidPollResponse, Poll: true}, "%s", op)
			}
			for _, op := range polls {
				for _, o := range []Outcome{{StatusCode: 400}, {StatusCode: 404}, {StatusCode: 500}, {StatusCode: 200, Malformed: true}, {StatusCode: 204}, {NoAnswer: true}} {
					a := Decide(op, o)
					assert.Equal(t, a.Result, ResultInProgress, "%s %+v", op, o)
					assert.Assert(t, a.Poll && !a.OrphanMitigation)
				}
			}
		}},
		{"7. After a bind succeeded, fetch the binding", func(t *testing.T) {
			assert.Equal(t, Decide(OpPollBind, Outcome{StatusCode: 200, State: StateSucceeded}),
				Action{Result: ResultSucceeded, Reason: ReasonSucceeded, FetchBinding: true})
			for _, op := range []Operation{OpPollProvision, OpPollUpdate, OpPollDeprovision, OpPollUnbind} {
				assert.Assert(t, !Decide(op, Outcome{StatusCode: 200, State: StateSucceeded}).FetchBinding)
			}
		}},
		{"8. Brokers remember final states, so polling again is safe", func(t *testing.T) {
			for _, op := range polls {
				a := Decide(op, Outcome{StatusCode: 200, State: StateSucceeded, PlatformError: true})
				assert.Assert(t, a.Poll && !a.OrphanMitigation, "a lost result is re-polled, not mitigated: %s", op)
			}
		}},
		{"9. A delete during provisioning: poll the delete, or mitigate a failed provision", func(t *testing.T) {
			assert.Assert(t, Decide(OpDeprovision, Outcome{StatusCode: 202}).Poll)
			assert.Assert(t, Decide(OpPollProvision, Outcome{StatusCode: 200, State: StateFailed}).OrphanMitigation)
			assert.Assert(t, Decide(OpPollDeprovision, Outcome{StatusCode: 200, State: StateSucceeded}).Forget)
		}},
	}
	for _, r := range rules {
		t.Run(r.rule, r.check)
	}
}

// TestDecide_EndpointCodes covers the per-endpoint status tables of
// checklist section 1 and the error codes of section 3.
func TestDecide_EndpointCodes(t *testing.T) {
	retry := func(reason string) Action { return Action{Result: ResultFailed, Reason: reason, Retry: true} }
	retryKeep := func(reason string) Action {
		return Action{Result: ResultFailed, Reason: reason, Retry: true, KeepResource: true}
	}
	terminal := func(reason string) Action { return Action{Result: ResultFailed, Reason: reason, Terminal: true} }
	with := func(a Action, f func(*Action)) Action { f(&a); return a }
	succeeded := Action{Result: ResultSucceeded, Reason: ReasonSucceeded}
	deleted := Action{Result: ResultSucceeded, Reason: ReasonSucceeded, Forget: true}
	gone := Action{Result: ResultSucceeded, Reason: ReasonGone, Forget: true}
	tests := []struct {
		name string
		op   Operation
		o    Outcome
		want Action
	}{
		{"provision 200 identical exists", OpProvision, Outcome{StatusCode: 200}, succeeded},
		{"provision 201 created", OpProvision, Outcome{StatusCode: 201}, succeeded},
		{"provision 400 is terminal", OpProvision, Outcome{StatusCode: 400}, terminal(ReasonBadRequest)},
		{"provision 409 is terminal", OpProvision, Outcome{StatusCode: 409}, terminal(ReasonConflict)},
		{"provision 422 AsyncRequired retries async", OpProvision, Outcome{StatusCode: 422, ErrorCode: ErrorCodeAsyncRequired},
			with(retry(ReasonAsyncRequired), func(a *Action) { a.RetryAsync = true })},
		{"provision 422 MaintenanceInfoConflict refetches the catalog", OpProvision, Outcome{StatusCode: 422, ErrorCode: ErrorCodeMaintenanceInfoConflict},
			with(retry(ReasonMaintenanceInfoConflict), func(a *Action) { a.RefetchCatalog = true })},
		{"provision 401 retries without mitigation", OpProvision, Outcome{StatusCode: 401}, retry(ReasonClientError)},
		{"provision 307 not followed mitigates like a 5xx", OpProvision, Outcome{StatusCode: 307},
			with(retry(ReasonRedirected), func(a *Action) { a.OrphanMitigation = true })},
		{"provision 500 mitigates", OpProvision, Outcome{StatusCode: 500},
			with(retry(ReasonBrokerError), func(a *Action) { a.OrphanMitigation = true })},
		{"provision not sent is terminal", OpProvision, Outcome{NotSent: true}, terminal(ReasonNotSent)},

		{"update 200 applied", OpUpdate, Outcome{StatusCode: 200}, succeeded},
		{"update 422 with update_repeatable false is terminal", OpUpdate, Outcome{StatusCode: 422, UpdateRepeatable: ptr(false)}, terminal(ReasonClientError)},
		{"update 422 with instance_usable false flags the instance", OpUpdate, Outcome{StatusCode: 422, InstanceUsable: ptr(false), UpdateRepeatable: ptr(true)},
			with(retry(ReasonClientError), func(a *Action) { a.InstanceUnusable = true })},
		{"update 500 never mitigates", OpUpdate, Outcome{StatusCode: 500}, retry(ReasonBrokerError)},
		{"update 422 MaintenanceInfoConflict", OpUpdate, Outcome{StatusCode: 422, ErrorCode: ErrorCodeMaintenanceInfoConflict},
			with(retry(ReasonMaintenanceInfoConflict), func(a *Action) { a.RefetchCatalog = true })},
		{"update 410 is no success", OpUpdate, Outcome{StatusCode: 410}, retry(ReasonClientError)},

		{"deprovision 200 deleted", OpDeprovision, Outcome{StatusCode: 200}, deleted},
		{"deprovision 410 gone is success", OpDeprovision, Outcome{StatusCode: 410}, gone},
		{"deprovision 422 ConcurrencyError waits", OpDeprovision, Outcome{StatusCode: 422, ErrorCode: ErrorCodeConcurrencyError},
			with(retryKeep(ReasonConcurrencyError), func(a *Action) { a.WaitForOtherOperation = true })},
		{"deprovision 422 AsyncRequired", OpDeprovision, Outcome{StatusCode: 422, ErrorCode: ErrorCodeAsyncRequired},
			with(retryKeep(ReasonAsyncRequired), func(a *Action) { a.RetryAsync = true })},
		{"deprovision failure keeps the instance and honours instance_usable", OpDeprovision, Outcome{StatusCode: 500, InstanceUsable: ptr(false)},
			with(retryKeep(ReasonBrokerError), func(a *Action) { a.OrphanMitigation, a.InstanceUnusable = true, true })},
		{"deprovision 301 not followed is never a success", OpDeprovision, Outcome{StatusCode: 301},
			with(retryKeep(ReasonRedirected), func(a *Action) { a.OrphanMitigation = true })},
		{"update 303 not followed retries without mitigation", OpUpdate, Outcome{StatusCode: 303}, retry(ReasonRedirected)},
		{"deprovision timeout retries and keeps", OpDeprovision, Outcome{NoAnswer: true}, retryKeep(ReasonNoAnswer)},
		{"deprovision 400 keeps the instance", OpDeprovision, Outcome{StatusCode: 400},
			Action{Result: ResultFailed, Reason: ReasonBadRequest, Terminal: true, KeepResource: true}},

		{"bind 200 identical exists", OpBind, Outcome{StatusCode: 200}, succeeded},
		{"bind 409 is terminal", OpBind, Outcome{StatusCode: 409}, terminal(ReasonConflict)},
		{"bind 422 RequiresApp asks for app_guid", OpBind, Outcome{StatusCode: 422, ErrorCode: ErrorCodeRequiresApp},
			with(retry(ReasonRequiresApp), func(a *Action) { a.NeedsAppGUID = true })},
		{"bind 422 ConcurrencyError waits", OpBind, Outcome{StatusCode: 422, ErrorCode: ErrorCodeConcurrencyError},
			with(retry(ReasonConcurrencyError), func(a *Action) { a.WaitForOtherOperation = true })},

		{"unbind 200 deleted", OpUnbind, Outcome{StatusCode: 200}, deleted},
		{"unbind 410 gone is success", OpUnbind, Outcome{StatusCode: 410}, gone},
		{"unbind 409 is a retriable failure", OpUnbind, Outcome{StatusCode: 409}, retryKeep(ReasonConflict)},

		{"poll update failed honours update_repeatable and instance_usable", OpPollUpdate, Outcome{StatusCode: 200, State: StateFailed, InstanceUsable: ptr(false), UpdateRepeatable: ptr(false)},
			Action{Result: ResultFailed, Reason: ReasonOperationFailed, Terminal: true, InstanceUnusable: true}},
		{"poll deprovision failed keeps the instance", OpPollDeprovision, Outcome{StatusCode: 200, State: StateFailed},
			Action{Result: ResultFailed, Reason: ReasonOperationFailed, Retry: true, OrphanMitigation: true, KeepResource: true}},
		{"poll not sent is terminal", OpPollProvision, Outcome{NotSent: true}, terminal(ReasonNotSent)},

		{"fetch instance 200", OpFetchInstance, Outcome{StatusCode: 200}, succeeded},
		{"fetch instance 404 may still be provisioning", OpFetchInstance, Outcome{StatusCode: 404}, retryKeep(ReasonNotFound)},
		{"fetch instance 422 ConcurrencyError while updating", OpFetchInstance, Outcome{StatusCode: 422, ErrorCode: ErrorCodeConcurrencyError},
			with(retryKeep(ReasonConcurrencyError), func(a *Action) { a.WaitForOtherOperation = true })},
		{"fetch instance other failure keeps the instance", OpFetchInstance, Outcome{StatusCode: 500}, retryKeep(ReasonBrokerError)},
		{"fetch binding 404 may still be binding", OpFetchBinding, Outcome{StatusCode: 404}, retryKeep(ReasonNotFound)},
		{"fetch binding malformed", OpFetchBinding, Outcome{StatusCode: 200, Malformed: true}, retryKeep(ReasonMalformedResponse)},
		{"fetch binding timeout", OpFetchBinding, Outcome{NoAnswer: true}, retryKeep(ReasonNoAnswer)},
		{"fetch binding 400", OpFetchBinding, Outcome{StatusCode: 400}, retryKeep(ReasonClientError)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.DeepEqual(t, Decide(tc.op, tc.o), tc.want)
		})
	}
}

func TestDecide_RetryAndTerminalAreExclusive(t *testing.T) {
	ops := []Operation{OpProvision, OpUpdate, OpDeprovision, OpBind, OpUnbind, OpPollProvision, OpPollUpdate, OpPollDeprovision, OpPollBind, OpPollUnbind, OpFetchInstance, OpFetchBinding}
	codes := []string{"", ErrorCodeAsyncRequired, ErrorCodeConcurrencyError, ErrorCodeRequiresApp, ErrorCodeMaintenanceInfoConflict}
	for _, op := range ops {
		for status := 0; status < 600; status += 1 {
			for _, code := range codes {
				for _, f := range []bool{false, true} {
					o := Outcome{StatusCode: status, ErrorCode: code, Malformed: f, UpdateRepeatable: ptr(!f), State: StateFailed}
					a := Decide(op, o)
					assert.Assert(t, !(a.Retry && a.Terminal), "%s %+v", op, o)
					assert.Assert(t, a.Result != 0 && a.Reason != "", "%s %+v", op, o)
					if a.Result == ResultFailed {
						assert.Assert(t, a.Retry || a.Terminal, "a failure must say whether to retry: %s %+v", op, o)
					}
				}
			}
		}
	}
}

func TestOutcomeOf_ClassifiesEveryErrorType(t *testing.T) {
	tests := []struct {
		name   string
		status int
		err    error
		want   Outcome
	}{
		{"success", 201, nil, Outcome{StatusCode: 201}},
		{"http error", 0, fmt.Errorf("wrapped: %w", &HTTPStatusError{StatusCode: 422, ErrorCode: "X", InstanceUsable: ptr(false)}),
			Outcome{StatusCode: 422, ErrorCode: "X", InstanceUsable: ptr(false)}},
		{"malformed", 0, &MalformedResponseError{StatusCode: 202, Err: errors.New("x")}, Outcome{StatusCode: 202, Malformed: true}},
		{"transport", 0, &TransportError{Err: context.DeadlineExceeded, Timeout: true}, Outcome{NoAnswer: true}},
		{"transport after status line", 0, &TransportError{StatusCode: 201, Err: errors.New("reset")}, Outcome{StatusCode: 201, NoAnswer: true}},
		{"invalid request", 0, &InvalidRequestError{Op: "Bind", Reason: "r"}, Outcome{NotSent: true}},
		{"unknown error is assumed unanswered", 0, errors.New("boom"), Outcome{NoAnswer: true}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.DeepEqual(t, OutcomeOf(tc.status, tc.err), tc.want)
		})
	}
	assert.DeepEqual(t, PollOutcomeOf(&LastOperationResponse{State: StateFailed, UpdateRepeatable: ptr(false)}, nil),
		Outcome{StatusCode: 200, State: StateFailed, UpdateRepeatable: ptr(false)})
	assert.DeepEqual(t, PollOutcomeOf(nil, &HTTPStatusError{StatusCode: 410}), Outcome{StatusCode: 410})
	assert.DeepEqual(t, PollOutcomeOf(nil, nil), Outcome{StatusCode: 200, Malformed: true})
}

func TestOutcomeOf_NilResponseStatusIsSafe(t *testing.T) {
	var resp *ProvisionResponse
	assert.Equal(t, resp.Status(), 0)
	assert.Equal(t, (*UpdateResponse)(nil).Status(), 0)
	assert.Equal(t, (*DeprovisionResponse)(nil).Status(), 0)
	assert.Equal(t, (*BindResponse)(nil).Status(), 0)
	assert.Equal(t, (*UnbindResponse)(nil).Status(), 0)
	assert.Equal(t, (&BindResponse{StatusCode: 202}).Status(), 202)
}

func TestOperation_NamesAndPollMapping(t *testing.T) {
	assert.Equal(t, OpPollDeprovision.String(), "poll deprovision")
	assert.Equal(t, Operation(0).String(), "unknown operation")
	assert.Equal(t, OpBind.Poll(), OpPollBind)
	assert.Equal(t, OpFetchBinding.Poll(), OpFetchBinding)
	assert.Equal(t, ResultInProgress.String(), "InProgress")
}
