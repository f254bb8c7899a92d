package osb

import (
	"errors"
	"net/http"
)

// Operation is the kind of broker call whose outcome Decide judges.
type Operation int

// Operations: the five mutating calls, polling of each, and the two fetches.
const (
	OpProvision Operation = iota + 1
	OpUpdate
	OpDeprovision
	OpBind
	OpUnbind
	OpPollProvision
	OpPollUpdate
	OpPollDeprovision
	OpPollBind
	OpPollUnbind
	OpFetchInstance
	OpFetchBinding
)

// String names the operation for messages, e.g. "poll deprovision".
func (o Operation) String() string {
	switch o {
	case OpProvision:
		return "provision"
	case OpUpdate:
		return "update"
	case OpDeprovision:
		return "deprovision"
	case OpBind:
		return "bind"
	case OpUnbind:
		return "unbind"
	case OpPollProvision:
		return "poll provision"
	case OpPollUpdate:
		return "poll update"
	case OpPollDeprovision:
		return "poll deprovision"
	case OpPollBind:
		return "poll bind"
	case OpPollUnbind:
		return "poll unbind"
	case OpFetchInstance:
		return "fetch instance"
	case OpFetchBinding:
		return "fetch binding"
	}
	return "unknown operation"
}

// IsPoll reports whether o is the polling of an asynchronous operation.
func (o Operation) IsPoll() bool { return o >= OpPollProvision && o <= OpPollUnbind }

// Poll returns the polling operation of a mutating one (OpProvision →
// OpPollProvision, ...), or o itself for any other operation.
func (o Operation) Poll() Operation {
	if o >= OpProvision && o <= OpUnbind {
		return o + (OpPollProvision - OpProvision)
	}
	return o
}

func (o Operation) isCreate() bool { return o == OpProvision || o == OpBind }
func (o Operation) isDelete() bool { return o == OpDeprovision || o == OpUnbind }
func (o Operation) isFetch() bool  { return o == OpFetchInstance || o == OpFetchBinding }

// Outcome is what happened to one broker call, in the terms the spec's
// orphan-mitigation table and polling rules use. Build it with OutcomeOf or
// PollOutcomeOf, or by hand in tests; set PollingExpired and PlatformError
// yourself.
type Outcome struct {
	// StatusCode is the HTTP status the broker answered; 0 without an answer.
	StatusCode int
	// NoAnswer: the broker gave no complete answer (client timeout,
	// cancellation, connection refused or reset). It may have acted anyway.
	NoAnswer bool
	// NotSent: the request was refused before it was sent (invalid request).
	NotSent bool
	// Malformed: a success status with an undecodable body.
	Malformed bool
	// ErrorCode is the "error" field of an error body.
	ErrorCode string
	// State is the last-operation state of a polling answer (200 only).
	State LastOperationState
	// InstanceUsable and UpdateRepeatable come from an error body or a
	// last-operation answer; nil means true.
	InstanceUsable   *bool // nil means usable
	UpdateRepeatable *bool // nil means repeatable
	// PollingExpired: the platform's maximum or the plan's
	// maximum_polling_duration ran out before a final state came.
	PollingExpired bool
	// PlatformError: the broker call succeeded but the platform failed to
	// record it (e.g. a failed save), so it cannot rely on the result.
	PlatformError bool
}

// OutcomeOf describes a call from the status code of its response (used
// when err is nil) or from its error. An error of an unknown type is
// treated as NoAnswer: the safe assumption is that the broker may have
// acted.
func OutcomeOf(statusCode int, err error) Outcome {
	if err == nil {
		return Outcome{StatusCode: statusCode}
	}
	var (
		he *HTTPStatusError
		me *MalformedResponseError
		te *TransportError
		ie *InvalidRequestError
	)
	switch {
	case errors.As(err, &he):
		return Outcome{
			StatusCode: he.StatusCode, ErrorCode: he.ErrorCode,
			InstanceUsable: he.InstanceUsable, UpdateRepeatable: he.UpdateRepeatable,
		}
	case errors.As(err, &me):
		return Outcome{StatusCode: me.StatusCode, Malformed: true}
	case errors.As(err, &te):
		return Outcome{StatusCode: te.StatusCode, NoAnswer: true}
	case errors.As(err, &ie):
		return Outcome{NotSent: true}
	default:
		return Outcome{NoAnswer: true}
	}
}

// PollOutcomeOf describes a last-operation call from its response or error.
func PollOutcomeOf(resp *LastOperationResponse, err error) Outcome {
	if err != nil || resp == nil {
		if err == nil {
			return Outcome{StatusCode: http.StatusOK, Malformed: true}
		}
		return OutcomeOf(0, err)
	}
	return Outcome{
		StatusCode: http.StatusOK, State: resp.State,
		InstanceUsable: resp.InstanceUsable, UpdateRepeatable: resp.UpdateRepeatable,
	}
}

// Result is the overall verdict of an Action.
type Result int

// Results.
const (
	// ResultSucceeded: the operation is complete; the broker holds what was
	// asked (or, for a delete, no longer holds it).
	ResultSucceeded Result = iota + 1
	// ResultInProgress: an asynchronous operation runs; poll again.
	ResultInProgress
	// ResultFailed: the operation failed; the other Action fields say what
	// to do about it.
	ResultFailed
)

// String names the result.
func (r Result) String() string {
	switch r {
	case ResultSucceeded:
		return "Succeeded"
	case ResultInProgress:
		return "InProgress"
	case ResultFailed:
		return "Failed"
	}
	return "Unknown"
}

// Reasons set in Action.Reason: short CamelCase words, stable enough to put
// in a condition so users can search for them.
const (
	ReasonSucceeded               = "Succeeded"
	ReasonInProgress              = "InProgress"
	ReasonGone                    = "Gone"
	ReasonNotSent                 = "InvalidRequest"
	ReasonNoAnswer                = "NoAnswer"
	ReasonPlatformError           = "PlatformError"
	ReasonMalformedResponse       = "MalformedResponse"
	ReasonUnexpectedStatus        = "UnexpectedStatus"
	ReasonRedirected              = "Redirected"
	ReasonBadRequest              = "BadRequest"
	ReasonConflict                = "Conflict"
	ReasonNotFound                = "NotFound"
	ReasonRequestTimeout          = "RequestTimeout"
	ReasonClientError             = "ClientError"
	ReasonBrokerError             = "BrokerError"
	ReasonAsyncRequired           = ErrorCodeAsyncRequired
	ReasonConcurrencyError        = ErrorCodeConcurrencyError
	ReasonRequiresApp             = ErrorCodeRequiresApp
	ReasonMaintenanceInfoConflict = ErrorCodeMaintenanceInfoConflict
	ReasonOperationFailed         = "OperationFailed"
	ReasonPollingExpired          = "PollingExpired"
	ReasonInvalidPollResponse     = "InvalidPollResponse"
)

// Action is what the platform must do next. Several flags may be set at
// once; do the orphan mitigation or other preparation first, then retry if
// Retry is set.
type Action struct {
	// Result is the verdict; see the Result constants.
	Result Result
	// Reason is one of the Reason constants, for conditions and messages.
	Reason string

	// Poll: an asynchronous operation is running (202, "in progress", or an
	// invalid polling answer that must be ignored); poll last_operation
	// again, honouring Retry-After.
	Poll bool
	// Forget: the broker does not hold the resource any more (a delete
	// succeeded or answered 410); the platform may drop its record.
	Forget bool
	// FetchBinding: an asynchronous bind succeeded; GET the binding for its
	// credentials.
	FetchBinding bool

	// OrphanMitigation: the broker may hold a resource the platform cannot
	// trust, so send a delete (deprovision or unbind) for it and keep
	// retrying until the broker reports success or 410. For a failed delete
	// this means: keep retrying the delete.
	OrphanMitigation bool
	// Retry: the same request may succeed later; retry it after a backoff
	// (after orphan mitigation, when that is set too).
	Retry bool
	// Terminal: repeating the same request will not help; it needs a change
	// by the user (or broker). Never set together with Retry.
	Terminal bool
	// KeepResource: the broker may still hold the resource (a failed delete
	// or fetch); the platform must keep remembering it.
	KeepResource bool

	// RetryAsync: the broker requires accepts_incomplete=true (AsyncRequired).
	RetryAsync bool
	// WaitForOtherOperation: another operation on the resource is running
	// (ConcurrencyError); wait for it, then retry. Never orphan mitigation.
	WaitForOtherOperation bool
	// NeedsAppGUID: the bind must carry bind_resource.app_guid (RequiresApp).
	NeedsAppGUID bool
	// RefetchCatalog: the maintenance_info version is stale
	// (MaintenanceInfoConflict); re-fetch the catalog before retrying.
	RefetchCatalog bool
	// InstanceUnusable: the broker said instance_usable:false; create no new
	// bindings until an update repairs the instance or it is deleted.
	InstanceUnusable bool
}

// Decide applies the spec's orphan-mitigation table and polling rules to the
// outcome of one call. It is pure: the same inputs always give the same
// Action. A 3xx of a mutating call (the client never follows one) is
// handled like a 5xx: never a success, orphan mitigation for a create, a
// retried delete for a delete. 1xx answers are failures without orphan
// mitigation; the spec's table only names 2xx, 4xx and 5xx.
func Decide(op Operation, o Outcome) Action {
	switch {
	case op.IsPoll():
		return decidePoll(op, o)
	case op.isFetch():
		return decideFetch(o)
	default:
		return decideCall(op, o)
	}
}

// acceptedStatus reports whether status is a success the spec lists for op.
func acceptedStatus(op Operation, status int) bool {
	switch status {
	case http.StatusOK, http.StatusAccepted:
		return true
	case http.StatusCreated:
		return op.isCreate()
	}
	return false
}

func decideCall(op Operation, o Outcome) Action {
	// "Any other 2xx" and 5xx need mitigation for creates and deletes; an
	// update never does, since a failed update leaves the instance in place.
	mitigateBroken := op.isCreate() || op.isDelete()
	failed := func(reason string) Action {
		a := Action{Result: ResultFailed, Reason: reason, Retry: true, KeepResource: op.isDelete()}
		if (op == OpUpdate || op == OpDeprovision) && o.InstanceUsable != nil && !*o.InstanceUsable {
			a.InstanceUnusable = true
		}
		if op == OpUpdate && o.UpdateRepeatable != nil && !*o.UpdateRepeatable {
			a.Retry, a.Terminal = false, true
		}
		return a
	}
	terminal := func(reason string) Action {
		a := failed(reason)
		a.Retry, a.Terminal = false, true
		return a
	}
	status := o.StatusCode
	switch {
	case o.NotSent:
		return terminal(ReasonNotSent)
	case o.PlatformError:
		a := failed(ReasonPlatformError)
		a.OrphanMitigation = op.isCreate()
		return a
	case o.NoAnswer:
		a := failed(ReasonNoAnswer)
		a.OrphanMitigation = op.isCreate()
		return a
	case status >= 200 && status < 300:
		if !acceptedStatus(op, status) {
			a := failed(ReasonUnexpectedStatus)
			a.OrphanMitigation = mitigateBroken
			return a
		}
		if o.Malformed {
			a := failed(ReasonMalformedResponse)
			// A malformed 200 is a plain failure; a malformed 201 or 202
			// leaves a created resource nobody can trust.
			a.OrphanMitigation = status != http.StatusOK && op.isCreate()
			return a
		}
		if status == http.StatusAccepted {
			return Action{Result: ResultInProgress, Reason: ReasonInProgress, Poll: true}
		}
		return Action{Result: ResultSucceeded, Reason: ReasonSucceeded, Forget: op.isDelete()}
	case status == http.StatusGone && op.isDelete():
		return Action{Result: ResultSucceeded, Reason: ReasonGone, Forget: true}
	case status >= 400 && status < 500:
		return decideClientError(op, o, failed, terminal)
	case status >= 300 && status < 400:
		// Whatever answered the redirect, it was not the broker acting on the
		// call, and the broker may have acted before redirecting: as a 5xx.
		a := failed(ReasonRedirected)
		a.OrphanMitigation = mitigateBroken
		return a
	case status >= 500 && status < 600:
		a := failed(ReasonBrokerError)
		a.OrphanMitigation = mitigateBroken
		return a
	default:
		return failed(ReasonUnexpectedStatus)
	}
}

func decideClientError(op Operation, o Outcome, failed, terminal func(string) Action) Action {
	// Error codes first: the spec defines them by code, whatever the status.
	switch o.ErrorCode {
	case ErrorCodeAsyncRequired:
		a := failed(ReasonAsyncRequired)
		a.RetryAsync, a.Retry, a.Terminal = true, true, false
		return a
	case ErrorCodeConcurrencyError:
		a := failed(ReasonConcurrencyError)
		a.WaitForOtherOperation, a.Retry, a.Terminal = true, true, false
		return a
	case ErrorCodeRequiresApp:
		a := failed(ReasonRequiresApp)
		a.NeedsAppGUID, a.Retry, a.Terminal = true, true, false
		return a
	case ErrorCodeMaintenanceInfoConflict:
		a := failed(ReasonMaintenanceInfoConflict)
		a.RefetchCatalog, a.Retry, a.Terminal = true, true, false
		return a
	}
	switch o.StatusCode {
	case http.StatusBadRequest:
		return terminal(ReasonBadRequest)
	case http.StatusConflict:
		if op.isCreate() {
			return terminal(ReasonConflict)
		}
		return failed(ReasonConflict)
	case http.StatusRequestTimeout:
		// 408 stopped triggering orphan mitigation in v2.14.
		return failed(ReasonRequestTimeout)
	default:
		return failed(ReasonClientError)
	}
}

func decidePoll(op Operation, o Outcome) Action {
	deleting := op == OpPollDeprovision || op == OpPollUnbind
	keepPolling := func(reason string) Action {
		return Action{Result: ResultInProgress, Reason: reason, Poll: true}
	}
	answered := !o.NoAnswer && !o.NotSent && !o.PlatformError
	ok := answered && o.StatusCode == http.StatusOK && !o.Malformed

	switch {
	case o.NotSent:
		return Action{Result: ResultFailed, Reason: ReasonNotSent, Terminal: true, KeepResource: deleting}
	case ok && o.State == StateSucceeded:
		return Action{
			Result: ResultSucceeded, Reason: ReasonSucceeded,
			Forget: deleting, FetchBinding: op == OpPollBind,
		}
	case ok && o.State == StateFailed:
		return operationFailed(op, o, ReasonOperationFailed)
	case answered && o.StatusCode == http.StatusGone && deleting:
		return Action{Result: ResultSucceeded, Reason: ReasonGone, Forget: true}
	case o.PollingExpired:
		return operationFailed(op, o, ReasonPollingExpired)
	case ok && o.State == StateInProgress:
		return keepPolling(ReasonInProgress)
	case o.NoAnswer:
		return keepPolling(ReasonNoAnswer)
	case o.PlatformError:
		// Brokers remember an operation's final state, so polling again
		// is safe and cheaper than mitigation.
		return keepPolling(ReasonPlatformError)
	default:
		// 410 while creating or updating, 404, 5xx, malformed: invalid,
		// keep polling until the maximum polling duration runs out.
		return keepPolling(ReasonInvalidPollResponse)
	}
}

// operationFailed is a last operation that ended in "failed", or ran past
// its maximum polling duration, which the platform must treat the same.
func operationFailed(op Operation, o Outcome, reason string) Action {
	a := Action{Result: ResultFailed, Reason: reason, Retry: true}
	switch op {
	case OpPollProvision, OpPollBind:
		a.OrphanMitigation = true
	case OpPollDeprovision, OpPollUnbind:
		a.OrphanMitigation, a.KeepResource = true, true
	}
	if (op == OpPollUpdate || op == OpPollDeprovision) && o.InstanceUsable != nil && !*o.InstanceUsable {
		a.InstanceUnusable = true
	}
	if op == OpPollUpdate && o.UpdateRepeatable != nil && !*o.UpdateRepeatable {
		a.Retry, a.Terminal = false, true
	}
	return a
}

func decideFetch(o Outcome) Action {
	failed := func(reason string) Action {
		return Action{Result: ResultFailed, Reason: reason, Retry: true, KeepResource: true}
	}
	switch {
	case o.NotSent:
		return Action{Result: ResultFailed, Reason: ReasonNotSent, Terminal: true, KeepResource: true}
	case o.NoAnswer:
		return failed(ReasonNoAnswer)
	case o.PlatformError:
		return failed(ReasonPlatformError)
	case o.StatusCode == http.StatusOK && o.Malformed:
		return failed(ReasonMalformedResponse)
	case o.StatusCode == http.StatusOK:
		return Action{Result: ResultSucceeded, Reason: ReasonSucceeded}
	case o.ErrorCode == ErrorCodeConcurrencyError:
		a := failed(ReasonConcurrencyError)
		a.WaitForOtherOperation = true
		return a
	case o.StatusCode == http.StatusNotFound:
		// Absent, or still being created: only retrying tells them apart.
		return failed(ReasonNotFound)
	case o.StatusCode >= 500:
		return failed(ReasonBrokerError)
	case o.StatusCode >= 400:
		return failed(ReasonClientError)
	default:
		return failed(ReasonUnexpectedStatus)
	}
}
