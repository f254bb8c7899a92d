package engine

import (
	"context"
	"slices"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb/fake"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// The defects of this file were found by the engine's simulation (pkg/engine/sim); each
// test is the smallest case of one.

func TestStepInstance_UpdateInFlightWithNothingProvisioned_IsRefusedNotACrash(t *testing.T) {
	f := newFixture(t)
	f.provisioned("db", planSmall, "")
	// A tenant edits the status: an update in flight, nothing provisioned.
	_, err := f.st.Instances().UpdateWithRetry(context.Background(), ns, "db", func(i *v1alpha1.ServiceInstance) error {
		i.Status.Provisioned = nil
		i.Status.InFlight = &v1alpha1.Operation{Type: v1alpha1.OperationUpdate, InstanceID: i.CurrentExternalID(), RequestID: "forged"}
		return nil
	})
	assert.NilError(t, err)

	res := f.step("db")

	assert.Equal(t, res.State, StateWaiting)
	assert.Assert(t, res.Refused)
	c := condition(f.get("db"), v1alpha1.ConditionRefused)
	assert.Equal(t, c.Reason, ReasonRefusedInconsistentStatus)
	assert.Assert(t, is.Contains(c.Message, "an update in flight for an instance that was never provisioned"))
	assert.Assert(t, is.Len(f.broker.Calls(), 0))
}

func TestStepInstance_ForgedAsyncWithoutDeadline_StopsPolling(t *testing.T) {
	f := newFixture(t)
	f.provisioned("db", planSmall, "")
	_, err := f.st.Instances().UpdateWithRetry(context.Background(), ns, "db", func(i *v1alpha1.ServiceInstance) error {
		i.Status.InFlight = &v1alpha1.Operation{Type: v1alpha1.OperationUpdate, InstanceID: i.CurrentExternalID(), Async: true, OperationKey: "op-x"}
		return nil
	})
	assert.NilError(t, err)
	f.broker.SetPollSequence("op-x", fake.InProgress("working"))

	f.step("db")

	// No deadline recorded, and a start at the zero time: past the engine's own bound.
	inst := f.get("db")
	assert.Assert(t, inst.Status.InFlight == nil)
	assert.Assert(t, inst.Status.Retry != nil, "the failed update is retried with backoff")
	assert.Assert(t, is.Contains(condition(inst, v1alpha1.ConditionReady).Message, "maximum polling duration"))
}

func TestRelease_InterruptedCall_KeepsTheClaim(t *testing.T) {
	f := newFixture(t)
	f.create("db", planSmall, "")
	ctx, cancel := context.WithCancel(context.Background())
	f.broker.OnProvision(func(context.Context, *osb.ProvisionRequest) (*osb.ProvisionResponse, error) {
		cancel() // Ctrl-C while the broker works on the PUT
		return nil, &osb.TransportError{Method: "PUT", Path: "/fake", Canceled: true, Err: context.Canceled}
	})

	res, err := f.engine.StepInstance(ctx, f.get("db"))
	assert.ErrorIs(t, err, context.Canceled)
	assert.NilError(t, f.engine.Release(context.Background(), res.Instance))

	// Another driver leaves the record alone until the claim, which outlasts the call,
	// runs out: the broker may still be working on the first PUT.
	other := New(Config{Store: f.st, Brokers: fake.Brokers{Client: f.broker}, Platform: StaticPlatform{Cluster: "cluster-1"},
		CatalogNamespace: f.engine.cfg.CatalogNamespace, Holder: "reconcile", Now: func() time.Time { return f.now }})
	again, err := other.StepInstance(context.Background(), f.get("db"))
	assert.NilError(t, err)
	assert.Assert(t, is.Contains(again.Message, "test is working on it"))
	assert.Equal(t, len(f.broker.CallsTo(fake.MethodProvision)), 1)
}

func TestFinish_LateOutcome_NotStoredOverAnotherDriversClaim(t *testing.T) {
	f := newFixture(t)
	f.create("db", planSmall, "")
	// While the broker answers a slow PUT, the claim runs out and reconcile takes the
	// record over, re-sending the same request (same request id).
	f.hook = func(p HookPoint, op *v1alpha1.Operation) {
		if p != HookAfterBrokerCall {
			return
		}
		_, err := f.st.Instances().UpdateWithRetry(context.Background(), ns, "db", func(i *v1alpha1.ServiceInstance) error {
			return store.SetClaim(i, "reconcile", 2*time.Minute, f.now.Add(3*time.Minute))
		})
		assert.NilError(t, err)
	}
	provisionReturns(f, 422, fake.HTTPError("PUT", 422, "", "refused late"))

	f.step("db")

	inst := f.get("db")
	l, _ := store.LeaseOf(inst)
	assert.Equal(t, l.Holder, "reconcile")
	assert.Assert(t, inst.Status.InFlight != nil, "reconcile's operation in flight stays")
	assert.Assert(t, is.Contains(inst.Status.ExternalIDs, inst.Status.InFlight.InstanceID), "the id the broker may hold stays listed")
}

func TestRetry_OrphanMitigationFailingOnce_BackoffStillGrows(t *testing.T) {
	f := newFixture(t)
	f.create("db", planSmall, "")
	provisionReturns(f, 0, fake.HTTPError("PUT", 500, "", "down"))
	deletes := 0
	f.broker.OnDeprovision(func(context.Context, *osb.DeprovisionRequest) (*osb.DeprovisionResponse, error) {
		deletes++
		if deletes%2 == 1 {
			return nil, fake.HTTPError("DELETE", 500, "", "down")
		}
		return &osb.DeprovisionResponse{StatusCode: 200}, nil
	})

	var attempts []int32
	for range 9 {
		f.step("db")
		inst := f.get("db")
		attempts = append(attempts, inst.Status.Retry.Attempts)
		f.advance(time.Hour)
	}

	// PUT, DELETE (fails), DELETE, PUT, ...: one provision, counted across mitigation.
	assert.DeepEqual(t, attempts, []int32{1, 2, 3, 4, 5, 6, 7, 8, 9})
}

func TestStepInstance_UserProvidedAddedToAProvisionedInstance_RefusedThenDeprovisionedAtTheBroker(t *testing.T) {
	f := newFixture(t)
	f.provisioned("db", planSmall, "")
	f.editInstance(func(i *v1alpha1.ServiceInstance) {
		i.Spec.UserProvided = &v1alpha1.UserProvidedService{CredentialsSecret: "creds"}
	})

	res := f.step("db")

	assert.Assert(t, res.Refused)
	assert.Equal(t, condition(f.get("db"), v1alpha1.ConditionRefused).Reason, ReasonRefusedUserProvidedChange)
	assert.Assert(t, is.Len(f.broker.Calls(), 0))

	assert.NilError(t, f.st.Instances().Delete(context.Background(), ns, "db"))
	f.advance(time.Hour)
	res = f.step("db")

	assert.Equal(t, res.State, StateDeleted, res.Message)
	assert.Equal(t, len(f.broker.CallsTo(fake.MethodDeprovision)), 1, "what the broker holds is deleted whatever the spec says")
}

// After an unshare, a user who may not list the bindings of the namespace the instance
// was shared with cannot see them: the grant no longer names that namespace, yet its
// bindings may still be bound. Her deprovision waits for reconcile (which sees every
// namespace) rather than deleting the instance under them.
func TestDeprovision_AfterAnUnshareItCouldNotSee_WaitsForReconcile(t *testing.T) {
	f := boundFromTeamB(t)
	ctx := context.Background()
	limited := f.onlyOwnNamespace()

	u, err := f.engine.Unshare(ctx, UnshareRequest{Namespace: ns, Name: "db", From: consumerNS, DryRun: DryRunNone})
	assert.NilError(t, err)
	assert.Assert(t, u.Withdrawn && u.LeftToReconcile)
	assert.DeepEqual(t, f.get("db").Status.SharedBefore, []string{consumerNS})
	f.broker.ResetCalls()
	res, err := f.engine.Deprovision(ctx, DeprovisionRequest{Namespace: ns, Name: "db", DryRun: DryRunNone})

	assert.NilError(t, err)
	assert.Equal(t, res.Result.State, StateWaiting, res.Result.Message)
	assert.Check(t, is.Contains(res.Result.Message, "bindings in namespace(s) team-b may still use it"))
	assert.Check(t, is.Len(f.broker.CallsTo(fake.MethodDeprovision), 0))

	// Reconcile sees every namespace: the binding goes first.
	*limited = false
	f.advance(time.Hour)
	res.Result = f.step("db")
	assert.Check(t, is.Contains(res.Result.Message, "waiting for its bindings (team-b/app)"))
	assert.Check(t, is.Len(f.broker.CallsTo(fake.MethodDeprovision), 0))
	b, err := f.bindingIn(consumerNS, "app")
	assert.NilError(t, err)
	assert.Assert(t, b.DeletionTimestamp != nil)
}

// A ConfigMap in any namespace, labelled as a binding of dev/db but holding no readable
// record (and no finalizer), is a binding of nothing: it does not stop dev/db's deletion,
// and is reported in its own namespace where dev/db grants (or granted) that namespace;
// in another namespace an Event would tell its writers that dev/db exists.
func TestDeprovision_AnUnreadableConfigMapLabelledAsABinding_IsReportedAndCountsForNothing(t *testing.T) {
	f := newFixture(t)
	f.provisioned("db", planSmall, "")
	rec := &fakeEvents{}
	f.engine.cfg.Events = rec
	ctx := context.Background()
	for _, bns := range []string{ns, "team-x"} {
		labels := map[string]string{store.LabelKind: v1alpha1.KindServiceBinding, store.LabelInstance: "db"}
		if bns != ns {
			labels[store.LabelInstanceNamespace] = ns
		}
		_, err := f.cluster.Core.CoreV1().ConfigMaps(bns).Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: bns, Name: "catalog-binding.junk", Labels: labels},
			Data:       map[string]string{"spec": "{not json"},
		}, metav1.CreateOptions{})
		assert.NilError(t, err)
	}

	res, err := f.engine.Deprovision(ctx, DeprovisionRequest{Namespace: ns, Name: "db", DryRun: DryRunNone, Follow: Follow{Wait: true}})

	assert.NilError(t, err)
	assert.Equal(t, res.Result.State, StateDeleted, res.Result.Message)
	assert.Equal(t, len(f.broker.CallsTo(fake.MethodDeprovision)), 1)
	var where []string
	for _, e := range rec.evs {
		if e.Reason == ReasonUnreadableRecord {
			where = append(where, e.Namespace+"/"+e.Name)
			assert.Check(t, is.Contains(e.Note, "labelled as a binding of instance dev/db but holds no readable record"))
		}
	}
	assert.Check(t, !slices.Contains(where, "team-x/catalog-binding.junk"), "%v", where)
	assert.Check(t, is.Contains(where, ns+"/catalog-binding.junk"))
}

// otherDriver is a second engine over f's cluster and clock, as reconcile would be.
func (f *fixture) otherDriver(holder string) *Engine {
	return New(Config{Store: f.st, Brokers: fake.Brokers{Client: f.broker}, Platform: StaticPlatform{Cluster: "cluster-1"},
		CatalogNamespace: f.engine.cfg.CatalogNamespace, Holder: holder, Now: func() time.Time { return f.now }})
}

// A broker call slower than the claim: the driver renews its claim while the call is in
// flight, so reconcile, stepping the record meanwhile, sees a live claim and sends
// nothing; the outcome is then stored over the driver's own renewals as the outcome of
// the first send it is (a refusal of the first request forgets the id).
func TestCall_SlowerThanTheClaim_ClaimIsRenewedAndNobodyResends(t *testing.T) {
	f := newFixture(t)
	f.create("db", planSmall, "")
	reconcile := f.otherDriver("reconcile")
	inFlight, most := 0, 0
	var during Result
	f.broker.OnProvision(func(ctx context.Context, _ *osb.ProvisionRequest) (*osb.ProvisionResponse, error) {
		inFlight++
		most = max(most, inFlight)
		defer func() { inFlight-- }()
		if inFlight > 1 {
			return &osb.ProvisionResponse{StatusCode: 201}, nil
		}
		for range 3 {
			f.advance(f.engine.cfg.ClaimTTL / 2)
			KeepClaim(ctx) // the renewal timer fires
		}
		res, err := reconcile.StepInstance(context.Background(), f.get("db"))
		assert.NilError(t, err)
		during = res
		return nil, fake.HTTPError("PUT", 400, "", "bad parameters")
	})

	f.step("db")

	assert.Equal(t, most, 1, "two PUTs for one id were in flight at once")
	assert.Check(t, is.Contains(during.Message, "test is working on it"))
	inst := f.get("db")
	assert.Check(t, condition(inst, v1alpha1.ConditionFailed).Status == metav1.ConditionTrue)
	assert.Check(t, !slices.Contains(inst.Status.ExternalIDs, instanceOSB), "the driver's own renewals are not someone else's edit")
	_, claimed := store.LeaseOf(inst)
	assert.Check(t, !claimed)
}

// When another driver holds the record by the time the claim is to be renewed (the
// renewal came too late), the call is given up and nothing of it is stored.
func TestCall_ClaimTakenOverDuringTheCall_CallGivenUpNothingStored(t *testing.T) {
	f := newFixture(t)
	f.create("db", planSmall, "")
	f.broker.OnProvision(func(ctx context.Context, _ *osb.ProvisionRequest) (*osb.ProvisionResponse, error) {
		f.advance(3 * time.Minute)
		_, err := f.st.Instances().UpdateWithRetry(context.Background(), ns, "db", func(i *v1alpha1.ServiceInstance) error {
			return store.SetClaim(i, "reconcile", 2*time.Minute, f.now)
		})
		assert.NilError(t, err)
		KeepClaim(ctx)
		assert.Check(t, ctx.Err() != nil, "the call's context ends")
		return &osb.ProvisionResponse{StatusCode: 201}, nil
	})

	_, err := f.engine.StepInstance(context.Background(), f.get("db"))

	assert.ErrorIs(t, err, errClaimNotKept)
	inst := f.get("db")
	l, _ := store.LeaseOf(inst)
	assert.Equal(t, l.Holder, "reconcile")
	assert.Assert(t, inst.Status.InFlight != nil && inst.Status.Provisioned == nil, "no outcome is stored over reconcile's claim")
}

// Seeds 987 and 1623: a bind in team-b is interrupted after its write-ahead (the broker
// may hold the binding), then the instance is unshared by a user who may not see team-b,
// and settled by her: the unshare leaves team-b's bindings to reconcile, and the
// instance's settling record, the other place that revokes them, does so only once, as
// her. The binding's own step, run by reconcile, then found it refused "not shared" and
// waited for a share for ever, with what the broker may hold never unbound. It is revoked
// instead: marked for deletion, then unbound like any binding being deleted.
func TestStepBinding_InterruptedBindOfAnInstanceUnsharedMeanwhile_IsRevokedAndUnbound(t *testing.T) {
	f := shareFixture(t)
	ctx := context.Background()
	_, err := f.engine.Share(ctx, ShareRequest{Namespace: ns, Name: "db", To: consumerNS, DryRun: DryRunNone})
	assert.NilError(t, err)
	f.consumerBinding(nil, consumerNS, "app")
	cctx, cancel := context.WithCancel(ctx)
	f.broker.OnBind(func(context.Context, *osb.BindRequest) (*osb.BindResponse, error) {
		cancel() // the CLI dies with the Bind at the broker
		return &osb.BindResponse{StatusCode: 201, Credentials: map[string]any{"password": secretValue}}, nil
	})
	b, err := f.bindingIn(consumerNS, "app")
	assert.NilError(t, err)
	_, err = f.engine.StepBinding(cctx, b)
	assert.ErrorIs(t, err, context.Canceled)
	b, err = f.bindingIn(consumerNS, "app")
	assert.NilError(t, err)
	assert.Assert(t, b.Status.InFlight != nil && len(b.Status.ExternalIDs) > 0, "left with the bind in flight")
	limited := f.onlyOwnNamespace()
	u, err := f.engine.Unshare(ctx, UnshareRequest{Namespace: ns, Name: "db", From: consumerNS, DryRun: DryRunNone})
	assert.NilError(t, err)
	assert.Assert(t, u.Withdrawn && u.LeftToReconcile)
	assert.Equal(t, f.step("db").State, StateSettled)
	*limited = false
	// Past the grace for the broker's work on the call no one saw answered.
	f.advance(DefaultMitigationGrace)
	f.broker.ResetCalls()

	res := f.stepBindingIn(consumerNS, "app")

	assertRevoked(t, f, consumerNS, "app", res)
	res = f.stepBindingIn(consumerNS, "app")
	assert.Equal(t, res.State, StateDeleted, res.Message)
	unbinds := f.broker.CallsTo(fake.MethodUnbind)
	assert.Assert(t, is.Len(unbinds, 1))
	assert.Equal(t, unbinds[0].Request.(osb.UnbindRequest).BindingID, b.Status.InFlight.BindingID)
	assert.Check(t, is.Len(f.broker.CallsTo(fake.MethodBind), 0), "the bind is not sent again")
}

// A provision answered 200 with a body that does not decode, or with a status no
// broker may answer (a 1xx), failed; but the broker may hold the instance (a 200 says it
// does). Its id stays among those the broker may hold: a deletion deletes it at the
// broker instead of dropping the record (rogue broker seeds 49, 100, 277 and 28, 190).
func TestStepInstance_CreateAnsweredOffTheSpec_IdKeptAndDeletedAtTheBroker(t *testing.T) {
	for name, answer := range map[string]error{
		"malformed 200": fake.Malformed(200),
		"1xx":           fake.HTTPError("PUT", 188, "", ""),
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			f.create("db", planSmall, "")
			provisionReturns(f, 0, answer)
			f.step("db")
			assert.Assert(t, is.Contains(f.get("db").Status.ExternalIDs, instanceOSB))

			assert.NilError(t, f.st.Instances().Delete(context.Background(), ns, "db"))
			f.advance(time.Hour)
			f.step("db")
			calls := f.broker.CallsTo(fake.MethodDeprovision)
			assert.Assert(t, is.Len(calls, 1), "the broker may hold the instance: it is deprovisioned")
			assert.Equal(t, calls[0].Request.(osb.DeprovisionRequest).InstanceID, instanceOSB)
		})
	}
}

// The same for a bind: a 200 that does not decode leaves the id to unbind.
func TestStepBinding_BindAnsweredMalformed200_IdKeptAndUnbound(t *testing.T) {
	f, _ := bindingFixture(t, nil)
	f.createBinding("app", nil)
	f.broker.BindReturns(nil, fake.Malformed(200))
	f.stepBinding("app")
	assert.Assert(t, is.Contains(f.getBinding("app").Status.ExternalIDs, bindingOSB))

	assert.NilError(t, f.st.Bindings().Delete(context.Background(), ns, "app"))
	f.advance(time.Hour)
	f.stepBinding("app")
	calls := f.broker.CallsTo(fake.MethodUnbind)
	assert.Assert(t, is.Len(calls, 1), "the broker may hold the binding: it is unbound")
	assert.Equal(t, calls[0].Request.(osb.UnbindRequest).BindingID, bindingOSB)
}

func TestBind_RefusedThenBoundByAnotherProcess_RecordKeepsTheIdForReconcileToUnbind(t *testing.T) {
	ctx := context.Background()
	f, _ := bindingFixture(t, nil)
	f.createBinding("db", nil)
	refused, err := f.st.Bindings().UpdateWithRetry(ctx, ns, "db", func(b *v1alpha1.ServiceBinding) error {
		b.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionRefused, Status: metav1.ConditionTrue, Reason: ReasonRefusedNotShared,
			Message: "not shared; nothing is sent to the broker for this record until that changes"}}
		return nil
	})
	assert.NilError(t, err)
	// Reconcile, seeing the instance shared again, sends the bind (the broker answers
	// 500): the id stays listed, as the broker may hold it.
	_, err = f.st.Bindings().UpdateWithRetry(ctx, ns, "db", func(b *v1alpha1.ServiceBinding) error {
		b.Status.Conditions = nil
		b.Status.ExternalIDs = []string{b.CurrentExternalID()}
		return nil
	})
	assert.NilError(t, err)

	err = f.engine.dropRefusedBinding(ctx, Result{Refused: true, Binding: refused})

	assert.ErrorContains(t, err, "a bind was sent for it meanwhile")
	b, err := f.st.Bindings().Get(ctx, ns, "db")
	assert.NilError(t, err, "the record stays for reconcile to unbind")
	assert.Assert(t, b.DeletionTimestamp != nil)
	assert.DeepEqual(t, b.Status.ExternalIDs, []string{bindingOSB})
}
