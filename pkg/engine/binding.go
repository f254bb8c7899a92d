package engine

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/ahead"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/credentials"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/hint"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// StepBinding moves a binding one step toward its spec, on the same protocol as
// StepInstance: it polls the operation in flight, re-sends an interrupted call, unbinds
// (for a deletion, orphan mitigation, or the ids a rotation retired), binds, or projects
// the Secret into workloads and settles, in that order, making at most one broker call.
//
// A bind's credentials are written to the binding's Secret before the binding is marked
// bound; if the Secret cannot be written, the bind is an uncertain outcome and is
// unbound at the broker (orphan mitigation). An unbind first removes the projections
// and the Secret, then calls the broker; the finalizer comes off when the broker
// confirmed (200 or 410).
func (e *Engine) StepBinding(ctx context.Context, in *v1alpha1.ServiceBinding) (Result, error) {
	ctx = stepUnbindReads(ctx, in)
	r, err := e.stepBinding(ctx, in)
	if err == nil && r.State == StateDeleted && !r.noPlace {
		e.auth.ReleaseConsumer(ctx, in)
	}
	return r, err
}

func (e *Engine) stepBinding(ctx context.Context, in *v1alpha1.ServiceBinding) (Result, error) {
	b := in.DeepCopy()
	now := e.now()
	if l, ok := store.LeaseOf(b); ok && l.Holder != e.cfg.Holder && l.Live(now) {
		return Result{Binding: b, State: StateWaiting, RequeueAfter: l.ExpiresAt.Sub(now),
			Message: fmt.Sprintf("%s is working on it (claim until %s)", l.Holder, l.ExpiresAt.Format(time.RFC3339))}, nil
	}
	deleting := b.DeletionTimestamp != nil
	if op := b.Status.InFlight; op != nil && (op.Async || !deleting || op.Type == v1alpha1.OperationUnbind) {
		// As for an instance: an operation in flight the engine could not have written
		// is refused, never acted on.
		if err := checkBindingStatus(b); err != nil {
			return preCallFailure(e, ctx, b, ReasonRefusedInconsistentStatus, err)
		}
	}
	if op := b.Status.InFlight; op != nil {
		if op.Async {
			return e.pollBinding(ctx, b)
		}
		if !deleting || op.Type == v1alpha1.OperationUnbind {
			if d := e.retryWait(b, string(op.Type)); d > 0 {
				return resultOf(e, b), nil
			}
			switch op.Type {
			case v1alpha1.OperationBind:
				return e.bind(ctx, b, op)
			case v1alpha1.OperationUnbind:
				return e.unbind(ctx, b, op)
			default:
				return Result{}, fmt.Errorf("binding %s/%s has an in-flight operation of unknown type %q", b.Namespace, b.Name, op.Type)
			}
		}
	}
	if deleting || b.Status.OrphanMitigation != nil || len(b.Status.Retired) > 0 {
		return e.unbind(ctx, b, nil)
	}
	inst, userProvided := e.userProvidedBinding(ctx, b)
	if userProvided {
		return e.stepUserProvidedBinding(ctx, b, inst)
	}
	if b.Status.Bound == nil || b.Status.Bound.BindingID != b.CurrentExternalID() {
		return e.bindKnowing(ctx, b, nil, inst)
	}
	return e.settleBinding(ctx, b)
}

// bindTarget is what a binding's broker call needs from other records.
type bindTarget struct {
	target
	inst   *v1alpha1.ServiceInstance
	planID string
}

func (e *Engine) bindTarget(ctx context.Context, b *v1alpha1.ServiceBinding) (bindTarget, error) {
	return e.bindTargetKnowing(ctx, b, nil)
}

// bindTargetKnowing is bindTarget on the instance read in this step already, when known
// is not nil.
func (e *Engine) bindTargetKnowing(ctx context.Context, b *v1alpha1.ServiceBinding, known *v1alpha1.ServiceInstance) (bindTarget, error) {
	if known != nil {
		t, err := e.target(ctx, known)
		if err != nil {
			return bindTarget{}, err
		}
		return bindTarget{target: t, inst: known, planID: brokerPlanID(known)}, nil
	}
	ns, name := b.InstanceRef()
	inst, err := e.cfg.Store.Instances().Get(ctx, ns, name)
	return e.bindTargetOf(ctx, b, inst, err)
}

// bindTargetOf is bindTarget on inst, the binding's instance as read (err: the read's
// error).
func (e *Engine) bindTargetOf(ctx context.Context, b *v1alpha1.ServiceBinding, inst *v1alpha1.ServiceInstance, err error) (bindTarget, error) {
	if store.IsNotFound(err) {
		return bindTarget{}, fmt.Errorf("instance %q of binding %q is gone, so the broker cannot be asked about the binding: drop the binding with %s",
			b.Spec.InstanceName, b.Name, hint.Quoted(b.Namespace, "unbind", b.Name, "--abandon"))
	}
	if err != nil {
		return bindTarget{}, err
	}
	t, err := e.target(ctx, inst)
	if err != nil {
		return bindTarget{}, err
	}
	return bindTarget{target: t, inst: inst, planID: brokerPlanID(inst)}, nil
}

// instanceRead is a binding's instance as read ahead, with the context that carries the
// reads of its broker and class, started once the instance was read.
type instanceRead struct {
	inst *v1alpha1.ServiceInstance
	ctx  context.Context
}

// readBoundInstance starts reading the instance b names, then its broker and class and
// the lists of the checks of the OSB ids (the instance's, and bindingID), for
// bindTargetOf: a step calls it only after the write its reads must see (b as read
// after its deletion mark), to overlap them with its own writes that they need not see.
func (e *Engine) readBoundInstance(ctx context.Context, b *v1alpha1.ServiceBinding, bindingID string) *ahead.Read[instanceRead] {
	return ahead.Start(ctx, func() (instanceRead, error) {
		ns, name := b.InstanceRef()
		if e.cfg.TargetCacheTTL == 0 {
			ctx = e.withIDListsAhead(ctx, idKey{v1alpha1.KindServiceBinding, bindingID})
		}
		read := takeInstanceRead(ctx, b)
		if read == nil {
			read = ahead.Done(e.cfg.Store.Instances().Get(ctx, ns, name))
		}
		inst, err := read.Wait()
		if err != nil || inst.IsUserProvided() || e.cfg.TargetCacheTTL > 0 {
			return instanceRead{inst: inst, ctx: ctx}, err
		}
		return instanceRead{inst: inst, ctx: e.withTargetReadAhead(ctx, inst)}, nil
	})
}

func (t bindTarget) retrievable() bool { return t.class != nil && t.class.Spec.BindingsRetrievable }

// bindingParameters resolves the binding's parameters, keyed with its salt (created in
// b's status when it has none yet).
func (e *Engine) bindingParameters(ctx context.Context, b *v1alpha1.ServiceBinding) (Parameters, error) {
	p, err := ResolveParameters(ctx, b.Namespace, b.Spec.Parameters, b.Spec.ParametersFrom, e.auth.SecretsFor(b))
	return p.salted(&b.Status.OperationStatus), err
}

func (e *Engine) bind(ctx context.Context, b *v1alpha1.ServiceBinding, prev *v1alpha1.Operation) (Result, error) {
	return e.bindKnowing(ctx, b, prev, nil)
}

// bindKnowing is bind with the binding's instance as this step read it already (nil:
// not read yet), so that a bind reads the instance once.
func (e *Engine) bindKnowing(ctx context.Context, b *v1alpha1.ServiceBinding, prev *v1alpha1.Operation, known *v1alpha1.ServiceInstance) (Result, error) {
	if prev == nil {
		if terminallyFailed(b) {
			return resultOf(e, b), nil
		}
		if d := e.retryWait(b, actionBind); d > 0 {
			return resultOf(e, b), nil
		}
	}
	t, err := e.bindTargetKnowing(ctx, b, known)
	if err != nil {
		return preCallFailure(e, ctx, b, ReasonBindWaitingForInstance, err)
	}
	// The grant is checked for a re-send too: status.inFlight is free to write for anyone
	// who may update the binding's ConfigMap, so a "re-send" may be forged.
	if err := e.auth.CheckConsumer(ctx, b, t.inst); err != nil {
		return e.refusedConsumer(ctx, b, t.inst, err)
	}
	if prev == nil {
		if err := CheckBindable(t.inst, t.class); err != nil {
			if t.class != nil && t.inst.Status.Provisioned != nil && t.inst.DeletionTimestamp == nil {
				if p := t.class.PlanByID(t.planID); p != nil && !t.class.EffectiveBindable(p) {
					return persistTerminal(e, ctx, b, ReasonBindRejected, err.Error())
				}
			}
			return preCallFailure(e, ctx, b, ReasonBindWaitingForInstance, err)
		}
	}
	// A re-send is the request first sent, kept at its write-ahead; an interrupted bind of
	// an earlier release, which kept nothing, is built from the spec again.
	resend := prev != nil && prev.Sent != nil
	var params Parameters
	var kctx *osb.KubernetesContext
	var cluster, space string
	if resend {
		sent, err := e.sentParameters(ctx, b, prev.Sent)
		if isSentLost(err) {
			return e.bindLost(ctx, b, prev, err)
		}
		if err != nil {
			return preCallFailure(e, ctx, b, ReasonParametersUnavailable, err)
		}
		if sent != nil {
			params = *sent
		}
		if kctx, cluster, space, err = e.sentContext(ctx, t.inst, prev.Sent); err != nil {
			return preCallFailure(e, ctx, b, ReasonPlatformUnavailable, err)
		}
	} else {
		if params, err = e.bindingParameters(ctx, b); err != nil {
			return preCallFailure(e, ctx, b, ReasonParametersUnavailable, err)
		}
		if kctx, cluster, space, err = e.osbContext(ctx, t.inst); err != nil {
			return preCallFailure(e, ctx, b, ReasonPlatformUnavailable, err)
		}
	}
	op := &v1alpha1.Operation{
		Type: v1alpha1.OperationBind, InstanceID: t.inst.CurrentExternalID(), BindingID: b.CurrentExternalID(),
		ServiceID: t.inst.Spec.ClassID, PlanID: t.planID, ParametersChecksum: params.Checksum(),
		RequestID: e.newRequestID(), StartedAt: metav1.NewTime(e.now()),
	}
	if prev != nil {
		// A re-send must be the identical request.
		op.InstanceID, op.BindingID, op.ServiceID, op.PlanID = prev.InstanceID, prev.BindingID, prev.ServiceID, prev.PlanID
		op.RequestID, op.StartedAt = prev.RequestID, prev.StartedAt
	}
	if resend {
		op.ParametersChecksum, op.Sent = prev.ParametersChecksum, prev.Sent
	}
	// A refusal of the first request that names the id leaves nothing at the broker; one
	// of a re-send does not tell whether the first send created the binding.
	first := prev == nil && !slices.Contains(b.Status.ExternalIDs, op.BindingID)
	opts, err := e.requestOptions(ctx, b, op.RequestID, false)
	if err != nil {
		return preCallFailure(e, ctx, b, ReasonPlatformUnavailable, err)
	}
	req := &osb.BindRequest{
		RequestOptions: opts, InstanceID: op.InstanceID, BindingID: op.BindingID,
		// OSB: an asynchronous bind needs GET binding afterwards, so accept one only
		// from services whose bindings are retrievable.
		AcceptsIncomplete: t.retrievable(),
		ServiceID:         op.ServiceID, PlanID: op.PlanID, Context: kctx,
		// The namespace's uid is unique within the platform: what app_guid asks for.
		BindResource: &osb.BindResource{AppGUID: space},
		Parameters:   params.JSON(),
	}
	if resend {
		req.PredecessorBindingID = prev.Sent.PredecessorBindingID
	} else if p := b.RotatedFrom(); p != nil && p.ExternalID != op.BindingID {
		if plan := t.plan(op.PlanID); plan != nil && plan.BindingRotatable {
			req.PredecessorBindingID = p.ExternalID
		}
	}
	if err := e.auth.VetBindingCall(ctx, b, t, op, true); err != nil {
		return preCallFailure(e, ctx, b, ReasonPlatformUnavailable, err)
	}
	if p := req.PredecessorBindingID; p != "" {
		// A broker may hand the predecessor's credentials to the new binding.
		if err := checkOwnID(v1alpha1.KindServiceBinding, b, p); err != nil {
			return preCallFailure(e, ctx, b, ReasonPlatformUnavailable, err)
		}
	}
	if !resend {
		if err := e.auth.CheckParametersTo(ctx, t.broker, b.Namespace, b.Spec.ParametersFrom, &params); err != nil {
			return preCallFailure(e, ctx, b, ReasonPlatformUnavailable, err)
		}
	}
	// A re-send holds its place already (reserve finds it); a forged one
	// must take one like any bind.
	if err := e.auth.Reserve(ctx, b, t.inst); err != nil {
		return preCallFailure(e, ctx, b, ReasonRefusedLimitReached, err)
	}
	if !resend {
		sent := v1alpha1.SentRequest{ClusterID: cluster, NamespaceUID: space, PredecessorBindingID: req.PredecessorBindingID}
		if err := e.keepRequest(ctx, b, op, sent, nonEmpty(params)); err != nil {
			return preCallFailure(e, ctx, b, ReasonParametersUnavailable, err)
		}
	}
	stored, ok, err := writeAhead(e, ctx, b, op, v1alpha1.PhaseBinding, ReasonBindRequestInFlight,
		fmt.Sprintf("sending the bind request to broker %q", t.broker.Name))
	if !ok || err != nil {
		if !ok && err == nil && !resend {
			dropSent(e, ctx, op, b) // not sent: someone else drives the record
		}
		return reread(e, ctx, b, err)
	}
	e.hook(ctx, HookBeforeBrokerCall, op)
	var resp *osb.BindResponse
	var callErr error
	stored, err = callUnderClaim(e, ctx, stored, func(ctx context.Context) { resp, callErr = t.client.Bind(ctx, req) })
	callErr = bounded(callErr, resp, resp.Status(), "PUT", bindingPath(op))
	if err != nil {
		return interrupted(stored, err)
	}
	e.hook(ctx, HookAfterBrokerCall, op)
	act := osb.Decide(osb.OpBind, osb.OutcomeOf(resp.Status(), callErr))
	if act.Result == osb.ResultSucceeded {
		answer := bindAnswer{Metadata: resp.Metadata, SyslogDrainURL: resp.SyslogDrainURL,
			RouteServiceURL: resp.RouteServiceURL, VolumeMounts: resp.VolumeMounts, Endpoints: resp.Endpoints}.withCredentials(resp.Credentials)
		if prev != nil && answer.empty() && t.retrievable() {
			// A re-sent bind answered 200 without credentials: the broker may hand
			// them out only once. GET the binding for them.
			if got, err := t.client.GetBinding(ctx, &osb.GetBindingRequest{RequestOptions: osb.RequestOptions{RequestIdentity: op.RequestID},
				InstanceID: op.InstanceID, BindingID: op.BindingID, ServiceID: op.ServiceID, PlanID: op.PlanID}); bounded(err, got, http.StatusOK, "GET", bindingPath(op)) == nil {
				answer = answerOf(got)
			}
		}
		if prev != nil && answer.empty() && resp.StatusCode == http.StatusOK {
			// The credentials went to a command that died before writing them, and the
			// broker will not give them again: unbind that id and bind under a new one.
			return finish(e, ctx, stored, op.RequestID, func(x *v1alpha1.ServiceBinding, now time.Time) {
				e.startBindMitigation(x, ReasonBindCredentialsLost,
					"the broker answered the re-sent bind without credentials (it hands them out once, and the command that received them was interrupted)", true, now)
			})
		}
		return e.bound(ctx, stored, t, answer)
	}
	return finish(e, ctx, stored, op.RequestID, func(x *v1alpha1.ServiceBinding, now time.Time) {
		msg := describe(callErr, resp.Status())
		switch {
		case act.Poll:
			e.bindingAccepted(x, t, resp.Operation, ReasonBindInProgress, "the broker is binding", now)
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
	})
}

// bindLost handles an interrupted bind whose kept request cannot be read back: the broker
// may hold a binding made from a request that cannot be repeated, so it is unbound first
// (orphan mitigation), then bound again under a new id.
func (e *Engine) bindLost(ctx context.Context, b *v1alpha1.ServiceBinding, prev *v1alpha1.Operation, cause error) (Result, error) {
	return finish(e, ctx, b, prev.RequestID, func(x *v1alpha1.ServiceBinding, now time.Time) {
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
		BindingID: op.BindingID, ParametersChecksum: op.ParametersChecksum,
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
func (e *Engine) bound(ctx context.Context, b *v1alpha1.ServiceBinding, t bindTarget, a bindAnswer) (Result, error) {
	op := b.Status.InFlight
	data, err := credentials.Encode(a.Credentials)
	if err == nil {
		data, err = credentials.Apply(ctx, data, a.Credentials, b.Spec.SecretTransforms, func(ctx context.Context, name string) (map[string][]byte, error) {
			return e.auth.SecretsFor(b)(ctx, b.Namespace, name)
		})
	}
	retriable := err == nil
	if err == nil {
		data = credentials.WithServiceBindingKeys(data, serviceBindingType(t), t.inst.Spec.BrokerName)
		_, err = e.cfg.Store.WriteBindingSecret(ctx, b, data)
		retriable = err != nil && !store.IsNotOwned(err)
	}
	if err != nil {
		if ctx.Err() != nil {
			return interrupted(b, ctx.Err())
		}
		msg := fmt.Sprintf("the credentials could not be written to Secret %q: %v", b.Spec.SecretName, err)
		return finish(e, ctx, b, op.RequestID, func(x *v1alpha1.ServiceBinding, now time.Time) {
			e.startBindMitigation(x, osb.ReasonPlatformError, msg, retriable, now)
			x.Status.Retry.Reason = ReasonBindSecretFailed
		})
	}
	return finish(e, ctx, b, op.RequestID, func(x *v1alpha1.ServiceBinding, now time.Time) {
		if old := x.Status.Bound; old != nil && old.BindingID != "" && old.BindingID != op.BindingID && !slices.Contains(x.Status.Retired, old.BindingID) {
			x.Status.Retired = append(x.Status.Retired, old.BindingID)
		}
		x.Status.Bound = a.boundState(op)
		x.Status.Secret = &v1alpha1.CredentialsSecret{Name: x.Spec.SecretName, Keys: credentials.Keys(data), WrittenAt: metav1.NewTime(now)}
		x.Status.InFlight, x.Status.Retry, x.Status.OrphanMitigation = nil, nil, nil
		x.Status.ObservedGeneration = x.Generation
		x.Status.Phase = v1alpha1.PhaseReady
		setCondition(x, v1alpha1.ConditionReady, metav1.ConditionTrue, ReasonBound,
			fmt.Sprintf("the broker bound it; the credentials are in Secret %q", x.Spec.SecretName), now)
		meta.RemoveStatusCondition(&x.Status.Conditions, v1alpha1.ConditionFailed)
		meta.RemoveStatusCondition(&x.Status.Conditions, v1alpha1.ConditionOrphanMitigation)
	})
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
func (e *Engine) bindingAccepted(x *v1alpha1.ServiceBinding, t bindTarget, key, reason, msg string, now time.Time) {
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
func (e *Engine) startBindMitigation(x *v1alpha1.ServiceBinding, reason, msg string, retry bool, now time.Time) {
	x.Status.OrphanMitigation = &v1alpha1.OrphanMitigationState{
		Reason: reason, Message: storedText(msg), StartedAt: metav1.NewTime(now), RetryAfter: retry,
	}
	r := ReasonBindCallFailed
	if x.Status.InFlight != nil && x.Status.InFlight.Async {
		r = ReasonBindFailed
	}
	e.retryLater(x, r, msg, true, now)
	x.Status.Phase = v1alpha1.PhaseOrphanMitigation
	setCondition(x, v1alpha1.ConditionOrphanMitigation, metav1.ConditionTrue, ReasonOrphanMitigationInProgress,
		"the outcome of the bind is uncertain ("+msg+"); unbinding what the broker may hold", now)
}

// unbindTarget is the OSB binding id an unbind step is about: an interrupted unbind's,
// a retired id, the id of an uncertain bind, the bound one, then (for a deletion) any
// other id the broker may hold.
func unbindTarget(b *v1alpha1.ServiceBinding, prev *v1alpha1.Operation) string {
	switch st := b.Status; {
	case prev != nil && prev.Type == v1alpha1.OperationUnbind:
		return prev.BindingID
	case len(st.Retired) > 0:
		return st.Retired[0]
	case st.OrphanMitigation != nil:
		return b.CurrentExternalID()
	case st.Bound != nil:
		return st.Bound.BindingID
	case st.InFlight != nil && st.InFlight.BindingID != "":
		return st.InFlight.BindingID
	}
	if ids := bindingIDsAtBroker(b); len(ids) > 0 {
		return ids[0]
	}
	return b.CurrentExternalID()
}

func (e *Engine) unbind(ctx context.Context, b *v1alpha1.ServiceBinding, prev *v1alpha1.Operation) (Result, error) {
	deleting := b.DeletionTimestamp != nil
	id := unbindTarget(b, prev)
	retiring := slices.Contains(b.Status.Retired, id)
	mitigating := !deleting && !retiring
	action := actionUnbind
	if mitigating {
		action = actionOrphanMitigation
	}
	// A deletion of a binding the broker never held (a refused one, say) waits for no
	// retry: nothing is sent.
	if prev == nil && (!deleting || len(bindingIDsAtBroker(b)) > 0) {
		if d := e.retryWait(b, action); d > 0 {
			return resultOf(e, b), nil
		}
	}
	// The instance, its broker and class are read while the credentials are removed (b
	// was read after its deletion mark).
	var pending *ahead.Read[instanceRead]
	if deleting && len(bindingIDsAtBroker(b)) > 0 {
		pending = e.readBoundInstance(ctx, b, id)
	}
	if deleting {
		// Workloads stop receiving the credentials before the broker revokes them.
		if err := e.cleanUpBinding(ctx, b); err != nil {
			return preCallFailure(e, ctx, b, ReasonUnbindCleanupFailed, err)
		}
		b.Status.Projected, b.Status.Secret = nil, nil
	}
	if deleting && len(bindingIDsAtBroker(b)) == 0 {
		// Every id a bind was written ahead for stays listed until the broker confirmed
		// it gone or refused the first request naming it: with none, the broker never
		// held the binding.
		return release(e, ctx, b, "unbound", false)
	}
	var t bindTarget
	var err error
	if pending != nil {
		r, rerr := pending.Wait()
		if r.ctx != nil {
			// It carries the lists of the id checks started with the reads.
			ctx = r.ctx
		}
		t, err = e.bindTargetOf(ctx, b, r.inst, rerr)
	} else {
		t, err = e.bindTarget(ctx, b)
	}
	if err != nil {
		return preCallFailure(e, ctx, b, ReasonBrokerUnavailable, err)
	}
	op := &v1alpha1.Operation{
		Type: v1alpha1.OperationUnbind, InstanceID: t.inst.CurrentExternalID(), BindingID: id,
		ServiceID: t.inst.Spec.ClassID, PlanID: t.planID, RequestID: e.newRequestID(), StartedAt: metav1.NewTime(e.now()),
	}
	if prev != nil && prev.Type == v1alpha1.OperationUnbind {
		op.InstanceID, op.ServiceID, op.PlanID = prev.InstanceID, prev.ServiceID, prev.PlanID
		op.RequestID, op.StartedAt = prev.RequestID, prev.StartedAt
	}
	opts, err := e.requestOptions(ctx, b, op.RequestID, mitigating)
	if err != nil {
		return preCallFailure(e, ctx, b, ReasonPlatformUnavailable, err)
	}
	phase, reason, msg := v1alpha1.PhaseUnbinding, ReasonUnbindRequestInFlight, fmt.Sprintf("sending the unbind request to broker %q", t.broker.Name)
	switch {
	case mitigating:
		phase, reason = v1alpha1.PhaseOrphanMitigation, ReasonOrphanMitigationInProgress
		msg = fmt.Sprintf("unbinding at broker %q what the failed bind may have created (orphan mitigation)", t.broker.Name)
	case retiring && !deleting:
		phase = v1alpha1.PhaseReady
		msg = fmt.Sprintf("unbinding the credentials the rotation replaced (binding id %s) at broker %q", id, t.broker.Name)
	}
	if err := e.auth.VetBindingCall(ctx, b, t, op, false); err != nil {
		return preCallFailure(e, ctx, b, ReasonPlatformUnavailable, err)
	}
	stored, ok, err := writeAhead(e, ctx, b, op, phase, reason, msg)
	if !ok || err != nil {
		return reread(e, ctx, b, err)
	}
	req := &osb.UnbindRequest{
		RequestOptions: opts, InstanceID: op.InstanceID, BindingID: op.BindingID,
		ServiceID: op.ServiceID, PlanID: op.PlanID, AcceptsIncomplete: true,
	}
	e.hook(ctx, HookBeforeBrokerCall, op)
	var resp *osb.UnbindResponse
	var callErr error
	stored, err = callUnderClaim(e, ctx, stored, func(ctx context.Context) { resp, callErr = t.client.Unbind(ctx, req) })
	callErr = bounded(callErr, resp, resp.Status(), "DELETE", bindingPath(op))
	if err != nil {
		return interrupted(stored, err)
	}
	e.hook(ctx, HookAfterBrokerCall, op)
	act := osb.Decide(osb.OpUnbind, osb.OutcomeOf(resp.Status(), callErr))
	if act.Result == osb.ResultSucceeded {
		res, err := e.unbound(ctx, stored, op)
		// The instance, read after the deletion mark, holds no place for the binding:
		// none is to be given back once it is gone.
		res.noPlace = !reserved(t.inst, b)
		return res, err
	}
	return finish(e, ctx, stored, op.RequestID, func(x *v1alpha1.ServiceBinding, now time.Time) {
		if act.Poll {
			r := ReasonUnbindInProgress
			if mitigating {
				r = ReasonOrphanMitigationInProgress
			}
			e.bindingAccepted(x, t, resp.Operation, r, "the broker is unbinding", now)
			return
		}
		e.unbindFailed(x, act, describe(callErr, resp.Status()), false, now)
	})
}

// cleanUpBinding removes the binding's projections from workloads (those made, and
// those recorded as possibly begun), then its Secret, and forgets the projections begun.
func (e *Engine) cleanUpBinding(ctx context.Context, b *v1alpha1.ServiceBinding) error {
	ps := unionProjections(b.Status.Projected, b.Status.Projecting)
	if len(ps) > 0 && e.cfg.Projector == nil {
		return errors.New("the binding is projected into workloads, and this engine has no projector to remove it")
	}
	for _, p := range ps {
		if err := e.cfg.Projector.Unproject(ctx, b.Namespace, b.Name, p); err != nil {
			return fmt.Errorf("removing the projection of binding %q from %s %q: %w", b.Name, p.Kind, p.Name, err)
		}
	}
	if err := e.cfg.Store.DeleteBindingSecret(ctx, b, secretReads(ctx, b)); err != nil {
		return err
	}
	b.Status.Projecting = nil
	return nil
}

// unbindFailed records a failed unbind: the broker may still hold the binding, so it
// is retried with backoff, visibly.
func (e *Engine) unbindFailed(x *v1alpha1.ServiceBinding, act osb.Action, msg string, async bool, now time.Time) {
	op := x.Status.InFlight
	reason := ReasonUnbindCallFailed
	switch {
	case x.Status.OrphanMitigation != nil && op != nil && !slices.Contains(x.Status.Retired, op.BindingID) && async:
		reason = ReasonOrphanMitigationFailed
	case x.Status.OrphanMitigation != nil && op != nil && !slices.Contains(x.Status.Retired, op.BindingID):
		reason = ReasonOrphanMitigationCallFailed
	case act.WaitForOtherOperation:
		reason = ReasonUnbindBlockedByConcurrentOperation
	case async:
		reason = ReasonUnbindFailed
	}
	if x.DeletionTimestamp != nil {
		msg += fmt.Sprintf(`; it is retried until the broker confirms (to drop the record without the broker: %s)`, hint.Quoted(x.Namespace, "unbind", x.Name, "--abandon"))
	}
	e.retryLater(x, reason, msg, false, now)
	if x.Status.OrphanMitigation != nil {
		setCondition(x, v1alpha1.ConditionOrphanMitigation, metav1.ConditionTrue, reason, msg, now)
	}
	if x.Status.Bound != nil && x.Status.Bound.BindingID == x.CurrentExternalID() && x.DeletionTimestamp == nil && x.Status.OrphanMitigation == nil {
		// Retiring an old id failed; the new credentials are in place and usable.
		x.Status.Phase = v1alpha1.PhaseReady
	}
}

// unbound finishes an unbind the broker confirmed (200, or 410 Gone) for op's binding
// id: a deletion releases the record once no other id may be held at the broker (a
// rotation holds two); a retired id is dropped; orphan mitigation forgets what was bound
// and binds again under a new id (OSB ids are not reused: a broker may refuse a deleted
// id with 409).
func (e *Engine) unbound(ctx context.Context, b *v1alpha1.ServiceBinding, op *v1alpha1.Operation) (Result, error) {
	id := op.BindingID
	retired := slices.Contains(b.Status.Retired, id)
	if b.DeletionTimestamp != nil {
		rest := slices.DeleteFunc(bindingIDsAtBroker(b), func(x string) bool { return x == id })
		if len(rest) == 0 {
			return release(e, ctx, b, "unbound", true)
		}
		return finish(e, ctx, b, op.RequestID, func(x *v1alpha1.ServiceBinding, now time.Time) {
			forget(x, id)
			x.Status.InFlight = nil
			if id == x.CurrentExternalID() {
				x.Status.OrphanMitigation = nil
			}
			if r := x.Status.Retry; r != nil && (actionOf(r.Reason) == actionUnbind || actionOf(r.Reason) == actionOrphanMitigation) {
				x.Status.Retry = nil
			}
			x.Status.Phase = v1alpha1.PhaseUnbinding
			setCondition(x, v1alpha1.ConditionReady, metav1.ConditionFalse, ReasonUnbindInProgress,
				fmt.Sprintf("the broker unbound binding id %s; unbinding the other ids it may hold (%s)", id, strings.Join(rest, ", ")), now)
		})
	}
	om := b.Status.OrphanMitigation
	return finish(e, ctx, b, op.RequestID, func(x *v1alpha1.ServiceBinding, now time.Time) {
		forget(x, id)
		x.Status.InFlight = nil
		if retired {
			if x.Status.Retry != nil && actionOf(x.Status.Retry.Reason) == actionUnbind {
				x.Status.Retry = nil
			}
			if x.Status.Bound != nil && x.Status.Bound.BindingID == x.CurrentExternalID() {
				x.Status.Phase = v1alpha1.PhaseReady
				setCondition(x, v1alpha1.ConditionReady, metav1.ConditionTrue, ReasonBound,
					fmt.Sprintf("the credentials were rotated; the ones replaced were unbound; the new ones are in Secret %q", x.Spec.SecretName), now)
			}
			return
		}
		x.Status.OrphanMitigation = nil
		if id == x.CurrentExternalID() {
			// OSB ids are never reused: the next bind gets a new one.
			x.Status.ExternalID = e.recordBoundID(x.UID)
		}
		setCondition(x, v1alpha1.ConditionOrphanMitigation, metav1.ConditionFalse, ReasonOrphanMitigationSucceeded,
			"the broker confirmed it holds nothing of the failed bind", now)
		msg := "bind failed"
		if om != nil {
			msg = om.Message
		}
		if om != nil && om.Reason == ReasonBindCredentialsLost {
			e.retryLater(x, ReasonBindCallFailed, msg+"; the old binding id is unbound, binding again under a new id", true, now)
			return
		}
		if om == nil || om.RetryAfter {
			if x.Status.Retry != nil && actionOf(x.Status.Retry.Reason) == actionBind {
				x.Status.Retry.Attempts--
			}
			e.retryLater(x, ReasonBindCallFailed, msg+"; orphan mitigation done, binding again under a new binding id", false, now)
			return
		}
		e.terminalFailure(x, ReasonBindFailed, msg+": fix the cause, then unbind and bind again", now)
	})
}

// forget records that the broker holds nothing of the binding under id.
func forget(x *v1alpha1.ServiceBinding, id string) {
	forgetExternalID(&x.Status.OperationStatus, id)
	x.Status.Retired = slices.DeleteFunc(x.Status.Retired, func(r string) bool { return r == id })
	if len(x.Status.Retired) == 0 {
		x.Status.Retired = nil
	}
	if x.Status.Bound != nil && x.Status.Bound.BindingID == id {
		x.Status.Bound = nil
	}
}

func (e *Engine) pollBinding(ctx context.Context, b *v1alpha1.ServiceBinding) (Result, error) {
	op := b.Status.InFlight
	now := e.now()
	if op.NextPollAt != nil && now.Before(op.NextPollAt.Time) {
		return resultOf(e, b), nil
	}
	t, err := e.bindTarget(ctx, b)
	if err != nil {
		return preCallFailure(e, ctx, b, ReasonBrokerUnavailable, err)
	}
	if err := e.auth.VetBindingCall(ctx, b, t, op, false); err != nil {
		return preCallFailure(e, ctx, b, ReasonPlatformUnavailable, err)
	}
	mitigating := op.Type == v1alpha1.OperationUnbind && b.DeletionTimestamp == nil && !slices.Contains(b.Status.Retired, op.BindingID)
	opts, err := e.requestOptions(ctx, b, "", mitigating)
	if err != nil {
		return preCallFailure(e, ctx, b, ReasonPlatformUnavailable, err)
	}
	if l, ok := store.LeaseOf(b); !ok || l.Holder != e.cfg.Holder || l.ExpiresAt.Sub(now) < e.cfg.ClaimTTL/2 {
		claimed, err := e.cfg.Store.Bindings().Claim(ctx, b, e.cfg.Holder, e.cfg.ClaimTTL)
		if store.IsClaimed(err) || store.IsConflict(err) {
			return reread(e, ctx, b, nil)
		}
		if err != nil {
			return Result{}, err
		}
		b = claimed
	}
	pollOp := osb.OpPollBind
	if op.Type == v1alpha1.OperationUnbind {
		pollOp = osb.OpPollUnbind
	}
	resp, callErr := t.client.BindingLastOperation(ctx, &osb.BindingLastOperationRequest{
		RequestOptions: opts, InstanceID: op.InstanceID, BindingID: op.BindingID,
		ServiceID: op.ServiceID, PlanID: op.PlanID, OperationKey: op.OperationKey,
	})
	if ctx.Err() != nil {
		return interrupted(b, ctx.Err())
	}
	outcome := osb.PollOutcomeOf(resp, callErr)
	if !e.now().Before(e.pollDeadline(op)) {
		outcome.PollingExpired = true
	}
	act := osb.Decide(pollOp, outcome)
	desc := ""
	if resp != nil {
		desc = resp.Description
	}
	msg := desc
	switch {
	case act.Reason == osb.ReasonPollingExpired:
		msg = fmt.Sprintf("the broker did not finish the operation within its maximum polling duration (until %s)", e.pollDeadline(op).Format(time.RFC3339))
	case callErr != nil:
		msg = describe(callErr, 0)
	case msg == "":
		msg = "the broker reported " + string(outcome.State)
	}
	if act.Result == osb.ResultSucceeded {
		if op.Type == v1alpha1.OperationUnbind {
			return e.unbound(ctx, b, op)
		}
		// The grant is checked before the credentials are fetched: the bind in flight
		// may be forged (a status is free to write), or the grant revoked meanwhile.
		// Nothing is fetched then: the operation stays to be polled again after a
		// backoff (the refusal shows), and a binding being deleted unbinds instead.
		if err := e.auth.CheckConsumer(ctx, b, t.inst); err != nil {
			if b.DeletionTimestamp == nil {
				return e.refusedConsumer(ctx, b, t.inst, err)
			}
			return finish(e, ctx, b, op.RequestID, func(x *v1alpha1.ServiceBinding, now time.Time) {
				e.startBindMitigation(x, ReasonRefusedNotShared, "the bind succeeded, but its credentials are not fetched: "+err.Error(), false, now)
			})
		}
		got, err := t.client.GetBinding(ctx, &osb.GetBindingRequest{RequestOptions: opts,
			InstanceID: op.InstanceID, BindingID: op.BindingID, ServiceID: op.ServiceID, PlanID: op.PlanID})
		err = bounded(err, got, http.StatusOK, "GET", bindingPath(op))
		if ctx.Err() != nil {
			return interrupted(b, ctx.Err())
		}
		if err == nil {
			return e.bound(ctx, b, t, answerOf(got))
		}
		// The binding may not be retrievable yet (404 while being created): poll again;
		// the broker remembers the operation's final state.
		msg = "the bind succeeded but the binding could not be fetched: " + describe(err, 0)
		return finish(e, ctx, b, op.RequestID, func(x *v1alpha1.ServiceBinding, now time.Time) {
			f := x.Status.InFlight
			f.LastDescription = storedText(msg)
			f.NextPollAt = mtime(now.Add(e.pollDelay(f, 0, now)))
		})
	}
	return finish(e, ctx, b, op.RequestID, func(x *v1alpha1.ServiceBinding, now time.Time) {
		switch {
		case act.Result == osb.ResultInProgress:
			f := x.Status.InFlight
			if desc != "" {
				f.LastDescription = storedText(desc)
			} else if callErr != nil {
				f.LastDescription = storedText("last poll failed: " + msg)
			}
			var retryAfter time.Duration
			if resp != nil {
				retryAfter = resp.RetryAfter
			}
			f.NextPollAt = mtime(now.Add(e.pollDelay(f, retryAfter, now)))
		case op.Type == v1alpha1.OperationBind:
			e.startBindMitigation(x, act.Reason, "the asynchronous bind failed: "+msg, act.Retry || act.Reason == osb.ReasonPollingExpired, now)
		default:
			e.unbindFailed(x, act, "the asynchronous unbind failed: "+msg, true, now)
		}
	})
}

// settleBinding projects the Secret into the workloads the spec names (and out of
// those it no longer names), then marks the binding Ready. Before any workload is
// changed, the workloads about to be changed are recorded (status.projecting), so that
// a projection interrupted or failed halfway is still taken back by an unbind.
func (e *Engine) settleBinding(ctx context.Context, b *v1alpha1.ServiceBinding) (Result, error) {
	if !v1alpha1.SameProjections(b.Spec.Projections, b.Status.Projected) || len(b.Status.Projecting) > 0 {
		if d := e.retryWait(b, actionBind); d > 0 {
			return resultOf(e, b), nil
		}
		if err := e.auth.AuthorizeProjections(ctx, b); err != nil {
			return preCallFailure(e, ctx, b, ReasonBindProjectionFailed, err)
		}
		stored, err := e.projectionAhead(ctx, b)
		if store.IsConflict(err) {
			return reread(e, ctx, b, nil)
		}
		if err != nil {
			return Result{}, err
		}
		b = stored
		if err := e.project(ctx, b); err != nil {
			if ctx.Err() != nil {
				return interrupted(b, ctx.Err())
			}
			return preCallFailure(e, ctx, b, ReasonBindProjectionFailed, err)
		}
	}
	x := b.DeepCopy()
	now := e.now()
	x.Status.Projected = append([]v1alpha1.WorkloadProjection(nil), b.Spec.Projections...)
	x.Status.Projecting = nil
	meta.RemoveStatusCondition(&x.Status.Conditions, v1alpha1.ConditionRefused)
	x.Status.InFlight, x.Status.Retry = nil, nil
	x.Status.ObservedGeneration = x.Generation
	x.Status.Phase = v1alpha1.PhaseReady
	if c := meta.FindStatusCondition(x.Status.Conditions, v1alpha1.ConditionReady); c == nil || c.Status != metav1.ConditionTrue {
		setCondition(x, v1alpha1.ConditionReady, metav1.ConditionTrue, ReasonBound,
			fmt.Sprintf("the broker holds the binding; the credentials are in Secret %q", x.Spec.SecretName), now)
	} else {
		c.ObservedGeneration = x.Generation
	}
	meta.RemoveStatusCondition(&x.Status.Conditions, v1alpha1.ConditionFailed)
	store.ClearClaim(x, e.cfg.Holder)
	if equalStatus(x, b) && v1alpha1.SameProjections(x.Status.Projected, b.Status.Projected) && len(x.Status.Projected) == len(b.Status.Projected) &&
		len(b.Status.Projecting) == 0 {
		return resultOf(e, b), nil
	}
	return storeStatus(e, ctx, b, x)
}

// projectionAhead records in status.projecting every workload the projection is about
// to change (the spec's), in one write guarded by resourceVersion, unless they are
// recorded already.
func (e *Engine) projectionAhead(ctx context.Context, b *v1alpha1.ServiceBinding) (*v1alpha1.ServiceBinding, error) {
	ahead := unionProjections(b.Status.Projecting, b.Spec.Projections)
	if len(ahead) == len(b.Status.Projecting) {
		return b, nil
	}
	x := b.DeepCopy()
	x.Status.Projecting = ahead
	return e.cfg.Store.Bindings().Update(ctx, x)
}

// project makes the workloads hold the projections of the spec and no other: those no
// longer named (made, or possibly begun) are taken back, those named are made.
func (e *Engine) project(ctx context.Context, b *v1alpha1.ServiceBinding) error {
	if e.cfg.Projector == nil {
		return errors.New("the binding is to be projected into workloads, and this engine has no projector")
	}
	for _, p := range unionProjections(b.Status.Projected, b.Status.Projecting) {
		if !containsProjection(b.Spec.Projections, p) {
			if err := e.cfg.Projector.Unproject(ctx, b.Namespace, b.Name, p); err != nil {
				return fmt.Errorf("removing the projection from %s %q: %w", p.Kind, p.Name, err)
			}
		}
	}
	for _, p := range b.Spec.Projections {
		if err := e.cfg.Projector.Project(ctx, b.Namespace, b.Name, b.Spec.SecretName, p); err != nil {
			return fmt.Errorf("projecting Secret %q into %s %q: %w", b.Spec.SecretName, p.Kind, p.Name, err)
		}
	}
	return nil
}
