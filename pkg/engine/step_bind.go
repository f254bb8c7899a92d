package engine

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/credentials"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// The bind step: credentials asked of the broker, written to the binding's Secret, and how the
// answer is recorded.

func (e bindingSteps) bind(ctx context.Context, b *v1alpha1.ServiceBinding, prev *v1alpha1.Operation) (Result, error) {
	return e.bindKnowing(ctx, b, prev, nil)
}

// bindKnowing is bind with the binding's instance as this step read it already (nil:
// not read yet), so that a bind reads the instance once.
func (e bindingSteps) bindKnowing(ctx context.Context, b *v1alpha1.ServiceBinding, prev *v1alpha1.Operation, known *v1alpha1.ServiceInstance) (Result, error) {
	if prev == nil {
		if terminallyFailed(b) {
			return resultOf(e.Engine, b), nil
		}
		if d := e.retryWait(b, actionBind); d > 0 {
			return resultOf(e.Engine, b), nil
		}
	}
	t, err := e.bindTargetKnowing(ctx, b, known)
	if err != nil {
		return preCallFailure(e.Engine, ctx, b, ReasonBindWaitingForInstance, err)
	}
	if r, refused, err := e.refuseBind(ctx, b, t, prev); refused {
		return r, err
	}
	if prev == nil {
		if r, refused, err := e.refuseBrokenTemplate(ctx, b); refused {
			return r, err
		}
	}
	// A re-send is the request first sent, kept at its write-ahead; an interrupted bind of
	// an earlier release, which kept nothing, is built from the spec again.
	resend := prev != nil && prev.Sent != nil
	in, reason, err := readCallInputs(e.Engine, ctx, b, t.inst, prev, resend, func(ctx context.Context) (Parameters, error) { return e.bindingParameters(ctx, b) })
	if isSentLost(err) {
		return e.bindLost(ctx, b, t, prev, err)
	}
	if err != nil {
		return preCallFailure(e.Engine, ctx, b, reason, err)
	}
	op := bindOperation(b, t, prev, in.params, resend, e.newRequestID(), e.now())
	// A refusal of the first request that names the id leaves nothing at the broker; one
	// of a re-send does not tell whether the first send created the binding.
	first := prev == nil && !slices.Contains(b.Status.ExternalIDs, op.BindingID)
	opts, err := e.requestOptions(ctx, b, op.RequestID, false)
	if err != nil {
		return preCallFailure(e.Engine, ctx, b, ReasonPlatformUnavailable, err)
	}
	req := bindRequest(b, t, op, prev, opts, in, resend)
	var resp *osb.BindResponse
	call := brokerCall{
		op: op, resend: resend, broker: t.broker, params: nonEmpty(in.params), paramsFrom: b.Spec.ParametersFrom, osbOp: osb.OpBind,
		sent: v1alpha1.SentRequest{ClusterID: in.org, NamespaceUID: in.space, PredecessorBindingID: req.PredecessorBindingID},
		vet: func(ctx context.Context) error {
			if err := e.auth.VetBindingCall(ctx, b, t, op, true); err != nil {
				return err
			}
			if p := req.PredecessorBindingID; p != "" {
				// A broker may hand the predecessor's credentials to the new binding.
				return e.auth.CheckOwnIDIn(ctx, v1alpha1.KindServiceBinding, b, p)
			}
			return nil
		},
		// A re-send holds its place already (reserve finds it); a forged one
		// must take one like any bind.
		hold:  func(ctx context.Context) error { return e.auth.Reserve(ctx, b, t.inst) },
		phase: v1alpha1.PhaseBinding, reason: ReasonBindRequestInFlight,
		msg: fmt.Sprintf("sending the bind request to broker %q", t.broker.Name),
		call: func(ctx context.Context) (int, error) {
			var callErr error
			resp, callErr = t.client.Bind(ctx, req)
			return resp.Status(), bounded(callErr, resp, resp.Status(), "PUT", bindingPath(op))
		},
	}
	return sendCall(e.Engine, ctx, b, call, func(stored *v1alpha1.ServiceBinding, act osb.Action, callErr error) (Result, error) {
		if act.Result == osb.ResultSucceeded {
			return e.bindSucceeded(ctx, stored, t, op, prev, resp)
		}
		outcome := osb.OutcomeOf(resp.Status(), callErr)
		// A re-send of a bind whose answer reached the Secret: see secretHoldsBind.
		held := act.OrphanMitigation && prev != nil && e.secretHoldsBind(ctx, stored, op)
		return finish(e.Engine, ctx, stored, op.RequestID, func(x *v1alpha1.ServiceBinding, now time.Time) {
			msg := describe(callErr, resp.Status()) + bindingNotFoundNote(x, op, callErr)
			switch {
			case act.Poll:
				e.bindingAccepted(x, t, resp.Operation, ReasonBindInProgress, "the broker is binding", now)
			case held:
				e.answeredBindRetried(x, msg, now)
			case act.OrphanMitigation && mayStillWork(outcome) && now.Before(e.graceEnd(op)):
				awaitAnswer(e.Engine, x, ReasonBindCallFailed, msg, now)
			case act.OrphanMitigation:
				e.startBindMitigation(x, act.Reason, msg, act.Retry, now)
			case act.Terminal:
				e.terminalFailure(x, ReasonBindRejected, msg+": change the binding's parameters (unbind and bind again)", now)
			case act.WaitForOtherOperation:
				e.retryLater(x, ReasonBindBlockedByConcurrentOperation, msg, false, now)
			default:
				e.retryLater(x, ReasonBindCallFailed, msg, false, now)
			}
			if first && !act.Poll && !act.OrphanMitigation && leftNothing(callErr) {
				forgetExternalID(&x.Status.OperationStatus, op.BindingID)
			}
			brokerMayWork(e.Engine, x, outcome, callErr, now)
		})
	})
}

// refuseBind refuses a bind the binding may not make: to an instance it may not bind,
// or one not bindable (for good when its plan is not bindable). refused reports
// whether r, err is the step's result.
func (e bindingSteps) refuseBind(ctx context.Context, b *v1alpha1.ServiceBinding, t bindTarget, prev *v1alpha1.Operation) (r Result, refused bool, err error) {
	// The grant is checked for a re-send too: status.inFlight is free to write for anyone
	// who may update the binding's ConfigMap, so a "re-send" may be forged.
	if err := e.auth.CheckConsumer(ctx, b, t.inst); err != nil {
		r, err := e.refusedConsumer(ctx, b, t.inst, err)
		return r, true, err
	}
	if prev != nil {
		return Result{}, false, nil
	}
	if err := CheckBindable(t.inst, t.class); err != nil {
		if t.class != nil && t.inst.Status.Provisioned != nil && t.inst.DeletionTimestamp == nil {
			if p := t.class.PlanByID(t.planID); p != nil && !t.class.EffectiveBindable(p) {
				r, err := persistTerminal(e.Engine, ctx, b, ReasonBindRejected, err.Error())
				return r, true, err
			}
		}
		r, err := preCallFailure(e.Engine, ctx, b, ReasonBindWaitingForInstance, err)
		return r, true, err
	}
	return Result{}, false, nil
}

// bindOperation is the bind call to make: a new one from the spec, or the identical
// request of prev when it is re-sent.
func bindOperation(b *v1alpha1.ServiceBinding, t bindTarget, prev *v1alpha1.Operation, params Parameters, resend bool, requestID string, now time.Time) *v1alpha1.Operation {
	op := &v1alpha1.Operation{
		Type: v1alpha1.OperationBind, InstanceID: t.inst.CurrentExternalID(), BindingID: b.CurrentExternalID(),
		ServiceID: t.inst.Spec.ClassID, PlanID: t.planID, ParametersChecksum: params.Checksum(),
		RequestID: requestID, StartedAt: metav1.NewTime(now),
	}
	if prev != nil {
		// A re-send must be the identical request.
		op.InstanceID, op.BindingID, op.ServiceID, op.PlanID = prev.InstanceID, prev.BindingID, prev.ServiceID, prev.PlanID
		op.RequestID, op.StartedAt = prev.RequestID, prev.StartedAt
	}
	if resend {
		op.ParametersChecksum, op.Sent = prev.ParametersChecksum, prev.Sent
	}
	return op
}

// bindRequest is the bind request of op. It names the binding a rotation replaces as
// its predecessor when the plan lets bindings rotate (a re-send names the one first sent).
func bindRequest(b *v1alpha1.ServiceBinding, t bindTarget, op, prev *v1alpha1.Operation, opts osb.RequestOptions, in callInputs, resend bool) *osb.BindRequest {
	req := &osb.BindRequest{
		RequestOptions: opts, InstanceID: op.InstanceID, BindingID: op.BindingID,
		// OSB: an asynchronous bind needs GET binding afterwards, so accept one only
		// from services whose bindings are retrievable.
		AcceptsIncomplete: t.retrievable(),
		ServiceID:         op.ServiceID, PlanID: op.PlanID, Context: in.kctx,
		// The namespace's uid is unique within the platform: what app_guid asks for.
		BindResource: &osb.BindResource{AppGUID: in.space},
		Parameters:   in.params.JSON(),
	}
	if resend {
		req.PredecessorBindingID = prev.Sent.PredecessorBindingID
	} else if p := b.RotatedFrom(); p != nil && p.ExternalID != op.BindingID {
		if plan := t.plan(op.PlanID); plan != nil && plan.BindingRotatable {
			req.PredecessorBindingID = p.ExternalID
		}
	}
	return req
}

// bindSucceeded stores the credentials of a bind the broker answered with success. A
// re-sent bind answered without them is asked for them with GET binding when its
// bindings are retrievable; credentials the broker will not give again were lost with
// the command that received them, and that id is unbound for a bind under a new one.
func (e bindingSteps) bindSucceeded(ctx context.Context, stored *v1alpha1.ServiceBinding, t bindTarget, op, prev *v1alpha1.Operation, resp *osb.BindResponse) (Result, error) {
	answer := bindAnswer{Metadata: resp.Metadata, SyslogDrainURL: resp.SyslogDrainURL,
		RouteServiceURL: resp.RouteServiceURL, VolumeMounts: resp.VolumeMounts, Endpoints: resp.Endpoints}.withCredentials(resp.Credentials)
	if prev != nil && answer.empty() && t.retrievable() {
		// A re-sent bind answered 200 without credentials: the broker may hand
		// them out only once. GET the binding for them.
		// (Part of the call, under its gate; the wait's time running out cuts it off, and
		// the bind's answer is then not stored: callgate.go.)
		got, cut, err := waitBound(ctx, func(ctx context.Context) (*osb.GetBindingResponse, error) {
			return t.client.GetBinding(ctx, &osb.GetBindingRequest{RequestOptions: osb.RequestOptions{RequestIdentity: op.RequestID},
				InstanceID: op.InstanceID, BindingID: op.BindingID, ServiceID: op.ServiceID, PlanID: op.PlanID})
		})
		if cut != nil {
			return interrupted(stored, cut)
		}
		if bounded(err, got, http.StatusOK, "GET", bindingPath(op)) == nil {
			answer = answerOf(got)
		}
	}
	if prev != nil && answer.empty() && resp.StatusCode == http.StatusOK && e.secretHoldsBind(ctx, stored, op) {
		// The credentials reached the Secret before: only the answer's record failed.
		return e.boundHeld(ctx, stored, answer)
	}
	if prev != nil && answer.empty() && resp.StatusCode == http.StatusOK {
		// The credentials went to a command that died before writing them, and the
		// broker will not give them again: unbind that id and bind under a new one.
		return finish(e.Engine, ctx, stored, op.RequestID, func(x *v1alpha1.ServiceBinding, now time.Time) {
			e.startBindMitigation(x, ReasonBindCredentialsLost,
				"the broker answered the re-sent bind without credentials (it hands them out once, and the command that received them was interrupted)", true, now)
		})
	}
	return e.bound(ctx, stored, t, answer)
}

// bindLost handles an interrupted bind whose kept request cannot be read back: the broker
// may hold a binding made from a request that cannot be repeated, so it is unbound first
// (orphan mitigation), then bound again under a new id. Not when the binding's Secret
// holds that bind's credentials (secretHoldsBind): the bind was answered, and its id is
// recorded bound instead (lostBindHeld).
func (e bindingSteps) bindLost(ctx context.Context, b *v1alpha1.ServiceBinding, t bindTarget, prev *v1alpha1.Operation, cause error) (Result, error) {
	if e.secretHoldsBind(ctx, b, prev) {
		return e.lostBindHeld(ctx, b, t, prev, cause)
	}
	return finish(e.Engine, ctx, b, prev.RequestID, func(x *v1alpha1.ServiceBinding, now time.Time) {
		e.startBindMitigation(x, osb.ReasonPlatformError, cause.Error(), true, now)
	})
}

// bindAnswer is a bind's 200/201 answer or a GET binding's.
type bindAnswer struct {
	// Credentials is what goes to the Secret: the answer's credentials and its other
	// fields that may hold secrets (see withCredentials).
	Credentials     map[string]any
	Metadata        *osb.BindingMetadata
	SyslogDrainURL  string
	RouteServiceURL string
	VolumeMounts    []osb.VolumeMount
	Endpoints       []osb.Endpoint
}

// empty reports an answer that carries nothing for the application.
func (a bindAnswer) empty() bool {
	return len(a.Credentials) == 0 && a.SyslogDrainURL == "" && a.RouteServiceURL == "" && len(a.VolumeMounts) == 0 && len(a.Endpoints) == 0
}

func answerOf(r *osb.GetBindingResponse) bindAnswer {
	return bindAnswer{Metadata: r.Metadata, SyslogDrainURL: r.SyslogDrainURL,
		RouteServiceURL: r.RouteServiceURL, VolumeMounts: r.VolumeMounts, Endpoints: r.Endpoints}.withCredentials(r.Credentials)
}

// withCredentials sets what the Secret gets: creds, plus the syslog drain and route
// service URLs and the volume mounts (mount_config included) under their own keys, since
// any of them may hold a secret (credentials.Answer).
func (a bindAnswer) withCredentials(creds map[string]any) bindAnswer {
	a.Credentials = credentials.Answer{Credentials: creds, SyslogDrainURL: a.SyslogDrainURL,
		RouteServiceURL: a.RouteServiceURL, VolumeMounts: a.VolumeMounts}.Values()
	return a
}

// boundState is the non-secret part of an answer: that a syslog drain or a route service
// exists, not its URL; a volume mount without its mount_config.
func (a bindAnswer) boundState(op *v1alpha1.Operation) *v1alpha1.BoundState {
	bs := &v1alpha1.BoundState{
		BindingID: op.BindingID, PlanID: op.PlanID, ParametersChecksum: op.ParametersChecksum,
		SyslogDrain: a.SyslogDrainURL != "", RouteService: a.RouteServiceURL != "",
	}
	for _, ep := range a.Endpoints {
		bs.Endpoints = append(bs.Endpoints, v1alpha1.Endpoint{Host: ep.Host, Ports: ep.Ports, Protocol: ep.Protocol})
	}
	for _, vm := range a.VolumeMounts {
		bs.VolumeMounts = append(bs.VolumeMounts, v1alpha1.VolumeMount{Driver: vm.Driver, ContainerDir: vm.ContainerDir,
			Mode: vm.Mode, DeviceType: vm.DeviceType, Device: v1alpha1.VolumeDevice{VolumeID: vm.Device.VolumeID}})
	}
	if md := a.Metadata; md != nil {
		if t, err := md.ExpiresAtTime(); err == nil && !t.IsZero() {
			bs.ExpiresAt = mtime(t)
		}
		if t, err := md.RenewBeforeTime(); err == nil && !t.IsZero() {
			bs.RenewBefore = mtime(t)
		}
	}
	return bs
}

// bound writes the credentials of a successful bind to the Secret, then marks the
// binding bound. A Secret that cannot be written makes the bind's outcome one the
// platform cannot rely on: the binding is unbound at the broker (orphan mitigation),
// and bound again afterwards unless the cause is one retrying cannot fix.
func (e bindingSteps) bound(ctx context.Context, b *v1alpha1.ServiceBinding, t bindTarget, a bindAnswer) (Result, error) {
	op := b.Status.InFlight
	data, err := credentials.Encode(a.Credentials)
	if err == nil {
		data, err = credentials.Apply(ctx, data, a.Credentials, b.Spec.SecretTransforms, func(ctx context.Context, name string) (map[string][]byte, error) {
			return e.auth.SecretsFor(b)(ctx, b.Namespace, name)
		})
	}
	if err == nil {
		data, err = renderSecretTemplate(b, t.inst, a.Credentials, data)
	}
	retriable := err == nil
	var leftOut []string
	if err == nil {
		leftOut = shapeEnvData(b, data)
		data = credentials.WithServiceBindingKeys(data, serviceBindingType(t), t.inst.Spec.BrokerName)
		b, err = e.writeBoundSecret(ctx, b, data)
		retriable = err != nil && !store.IsNotOwned(err)
	}
	if err != nil {
		if ctx.Err() != nil {
			return interrupted(b, ctx.Err())
		}
		if errors.Is(err, errClaimNotKept) {
			// Another driver took the record over: nothing of this answer is stored.
			return interrupted(b, err)
		}
		msg := fmt.Sprintf("the credentials could not be written to Secret %q: %v", b.Spec.SecretName, err)
		if isTemplateError(err) {
			e.secretTemplateEvent(ctx, b, err)
		}
		if e.secretHoldsBind(ctx, b, op) {
			// The Secret holds this id's credentials from an earlier answer whose
			// record failed, and the broker answered again: recorded bound with the
			// Secret as it is, never unbound (secretHoldsBind).
			return e.boundHeld(ctx, b, a)
		}
		return finish(e.Engine, ctx, b, op.RequestID, func(x *v1alpha1.ServiceBinding, now time.Time) {
			e.startBindMitigation(x, osb.ReasonPlatformError, msg, retriable, now)
			x.Status.Retry.Reason = ReasonBindSecretFailed
			if isTemplateError(err) {
				x.Status.Retry.Reason = ReasonSecretTemplateFailed
			}
		})
	}
	e.envLeftOutEvent(ctx, b, leftOut)
	return finish(e.Engine, ctx, b, op.RequestID, func(x *v1alpha1.ServiceBinding, now time.Time) {
		e.markBound(x, a, op, data, leftOut, now)
	})
}

// markBound records in x that op's bind is bound with answer a, its credentials (data)
// in the binding's Secret.
func (e bindingSteps) markBound(x *v1alpha1.ServiceBinding, a bindAnswer, op *v1alpha1.Operation, data map[string][]byte, leftOut []string, now time.Time) {
	if old := x.Status.Bound; old != nil && old.BindingID != "" && old.BindingID != op.BindingID && !slices.Contains(x.Status.Retired, old.BindingID) {
		x.Status.Retired = append(x.Status.Retired, old.BindingID)
	}
	x.Status.Bound = a.boundState(op)
	x.Status.Secret = &v1alpha1.CredentialsSecret{Name: x.Spec.SecretName, Keys: credentials.Keys(data), WrittenAt: metav1.NewTime(now)}
	x.Status.InFlight, x.Status.Retry, x.Status.OrphanMitigation = nil, nil, nil
	x.Status.ObservedGeneration = x.Generation
	x.Status.Phase = v1alpha1.PhaseReady
	setCondition(x, v1alpha1.ConditionReady, metav1.ConditionTrue, ReasonBound,
		fmt.Sprintf("the broker bound it; the credentials are in Secret %q", x.Spec.SecretName)+envLeftOutNote(leftOut), now)
	meta.RemoveStatusCondition(&x.Status.Conditions, v1alpha1.ConditionFailed)
	meta.RemoveStatusCondition(&x.Status.Conditions, v1alpha1.ConditionOrphanMitigation)
}

// serviceBindingType is the servicebinding.io "type" of a binding: the class's first
// tag when it has tags, else its name.
func serviceBindingType(t bindTarget) string {
	if t.class != nil && len(t.class.Spec.Tags) > 0 {
		return t.class.Spec.Tags[0]
	}
	return t.inst.Spec.ClassExternalName
}

// bindingAccepted records a 202: poll from now on, with a deadline from the plan's
// maximum_polling_duration.
func (e bindingSteps) bindingAccepted(x *v1alpha1.ServiceBinding, t bindTarget, key, reason, msg string, now time.Time) {
	op := x.Status.InFlight
	op.Async, op.OperationKey = true, key
	limit := e.cfg.MaxPollingDuration
	if p := t.plan(op.PlanID); p != nil && p.MaximumPollingDuration != nil && p.MaximumPollingDuration.Duration > 0 {
		limit = p.MaximumPollingDuration.Duration
	}
	op.PollDeadline = mtime(now.Add(limit))
	op.NextPollAt = mtime(now.Add(e.cfg.PollInterval))
	setCondition(x, v1alpha1.ConditionReady, metav1.ConditionFalse, reason, msg, now)
}

// startBindMitigation records that the broker may hold a binding nobody can trust:
// unbind it first, then bind again if retry is set.
func (e bindingSteps) startBindMitigation(x *v1alpha1.ServiceBinding, reason, msg string, retry bool, now time.Time) {
	r := ReasonBindCallFailed
	if x.Status.InFlight != nil && x.Status.InFlight.Async {
		r = ReasonBindFailed
	}
	startOrphanMitigation(e.Engine, x, reason, msg, retry, r,
		"the outcome of the bind is uncertain ("+msg+"); unbinding what the broker may hold", now)
}
