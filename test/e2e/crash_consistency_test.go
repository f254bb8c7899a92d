package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/test/broker"
	"github.com/kubectl-catalog/kubectl-catalog/test/controlplane"
)

// ccWaitArgs make a verb wait for the broker with short polls.
var ccWaitArgs = []string{"--wait", "--timeout", "60s", "--interval", "200ms"}

// ccReconcileEnv is instReconcileEnv with the clock further ahead: past the claims a
// killed reconcile took with its own clock already three minutes ahead.
var ccReconcileEnv = append(slices.Clone(instReconcileEnv), cmdutil.TestClockSkewEnv+"=6m")

// ccVerb is a command whose process is killed.
type ccVerb struct {
	name string
	// setup prepares the namespace (instance "db", binding "app" as the verb needs).
	setup func(t *testing.T, e *instEnv)
	args  []string
	want  ccWant
	// check runs after convergence, for what only this verb changes.
	check func(t *testing.T, e *instEnv)
}

func ccProvisionDB(t *testing.T, e *instEnv) {
	t.Helper()
	r := instCatalog(t, e.ns, append([]string{"provision", "db", "--class", "postgresql", "--plan", "hobby"}, ccWaitArgs...)...)
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
}

func ccBindApp(t *testing.T, e *instEnv) {
	t.Helper()
	r := instCatalog(t, e.ns, append([]string{"bind", "db", "--name", "app"}, ccWaitArgs...)...)
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
}

func ccVerbs() []ccVerb {
	ready, gone := "ready", "gone"
	return []ccVerb{
		{name: "provision", args: []string{"provision", "db", "--class", "postgresql", "--plan", "hobby"},
			want: ccWant{instances: map[string]string{"db": ready}}},
		{name: "update", setup: ccProvisionDB, args: []string{"update", "db", "-p", "storage_gb=2"},
			want: ccWant{instances: map[string]string{"db": ready}},
			check: func(t *testing.T, e *instEnv) {
				inst, err := e.st.Instances().Get(context.Background(), e.ns, "db")
				assert.NilError(t, err)
				held, ok := e.b.Instance(inst.CurrentExternalID())
				assert.Assert(t, ok)
				assert.Equal(t, fmt.Sprint(held.Parameters["storage_gb"]), "2", "the update reached the broker: %v", held.Parameters)
				assert.Assert(t, len(e.b.RequestsFor(broker.OpUpdate)) >= 1)
			}},
		{name: "deprovision", setup: ccProvisionDB, args: []string{"deprovision", "db", "--yes"},
			want: ccWant{instances: map[string]string{"db": gone}}},
		{name: "bind", setup: ccProvisionDB, args: []string{"bind", "db", "--name", "app"},
			want: ccWant{instances: map[string]string{"db": ready}, bindings: map[string]string{"app": ready}}},
		{name: "unbind", setup: func(t *testing.T, e *instEnv) { ccProvisionDB(t, e); ccBindApp(t, e) },
			args: []string{"unbind", "app"},
			want: ccWant{instances: map[string]string{"db": ready}, bindings: map[string]string{"app": gone}},
			check: func(t *testing.T, e *instEnv) {
				for _, u := range e.b.RequestsFor(broker.OpUnbind) {
					assert.Assert(t, u.OriginatingIdentity != nil, "a user's unbind, even re-sent, carries the identity")
				}
			}},
	}
}

// TestCrashConsistency_KillAnyVerbOrReconcile_ThenReconcileConverges SIGKILLs every
// mutating verb (provision, update, deprovision, bind, unbind) right after its
// write-ahead and right after the broker answered, and a "kubectl catalog reconcile"
// in the middle of driving several records at once, each case in a namespace of its
// own. Reconcile runs (a bounded number of them) must then converge: what the broker
// holds is exactly what the records say, no record is stuck, no Secret or finalizer is
// left behind.
func TestCrashConsistency_KillAnyVerbOrReconcile_ThenReconcileConverges(t *testing.T) {
	t.Parallel()
	type ccCase struct {
		name string
		run  func(t *testing.T)
	}
	var cases []ccCase
	for _, v := range ccVerbs() {
		for _, point := range []engine.HookPoint{engine.HookBeforeBrokerCall, engine.HookAfterBrokerCall} {
			cases = append(cases, ccCase{name: v.name + " killed at " + string(point), run: func(t *testing.T) {
				e := instSetupCatalog(t, nil)
				if v.setup != nil {
					v.setup(t, e)
				}
				ccKillAtPause(t, e.ns, nil, point, 0, v.args...)
				assert.Assert(t, len(ccPending(t, e.st, e.ns)) > 0, "the killed %s must leave its record pending", v.name)
				ccReconcileUntilSettled(t, e.st, e.ns, instReconcileEnv, 3)
				ccAssertConverged(t, e, v.want)
				if v.check != nil {
					v.check(t, e)
				}
			}})
		}
	}
	for _, point := range []engine.HookPoint{engine.HookBeforeBrokerCall, engine.HookAfterBrokerCall} {
		cases = append(cases, ccCase{name: "reconcile killed at " + string(point), run: func(t *testing.T) {
			ccKillReconcileCase(t, point)
		}})
	}

	var ran atomic.Int32
	start := time.Now()
	t.Cleanup(func() {
		t.Logf("%d of %d crash-consistency cases ran to the end in %s", ran.Load(), len(cases), time.Since(start).Round(time.Second))
	})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.run(t)
			ran.Add(1)
		})
	}
}

// TestCrashConsistency_UncertainCallThenDeletion_BrokerKeepsNothing kills a verb after
// the broker acted on its provision, bind or rotation, leaves the record with that
// uncertain call (a re-send the broker refuses, a rotation holding two binding ids) and
// then deletes the record: the broker must be asked to delete every id it may hold
// before the finalizer comes off, and end up holding exactly what the records say.
func TestCrashConsistency_UncertainCallThenDeletion_BrokerKeepsNothing(t *testing.T) {
	t.Parallel()
	ready, gone := "ready", "gone"
	tests := []struct {
		name string
		// setup prepares the namespace before the kill.
		setup func(t *testing.T, e *instEnv)
		// kill is the verb killed after the broker acted on its call.
		kill []string
		// refuse, when set, makes the broker refuse every later request of this kind
		// (re-sends and retries alike) until the end of the test.
		refuse *broker.Fault
		// record is the ConfigMap deleted afterwards.
		record string
		want   ccWant
	}{
		{name: "provision re-send refused with 401", kill: []string{"provision", "db", "--class", "postgresql", "--plan", "hobby"},
			refuse: &broker.Fault{Op: broker.OpProvision, Action: broker.ActionRespond, Status: 401, Times: 1000, Description: "password rotated"},
			record: store.ConfigMapName(v1alpha1.KindServiceInstance, "db"),
			want:   ccWant{instances: map[string]string{"db": gone}}},
		{name: "bind re-send refused with 422", setup: ccProvisionDB, kill: []string{"bind", "db", "--name", "app"},
			refuse: &broker.Fault{Op: broker.OpBind, Action: broker.ActionRespond, Status: 422, Times: 1000, Description: "refused"},
			record: store.ConfigMapName(v1alpha1.KindServiceBinding, "app"),
			want:   ccWant{instances: map[string]string{"db": ready}, bindings: map[string]string{"app": gone}}},
		{name: "rotation deleted with the new id bound at the broker", setup: func(t *testing.T, e *instEnv) { ccProvisionDB(t, e); ccBindApp(t, e) },
			kill:   []string{"bind", "--rotate", "app"},
			record: store.ConfigMapName(v1alpha1.KindServiceBinding, "app"),
			want:   ccWant{instances: map[string]string{"db": ready}, bindings: map[string]string{"app": gone}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := instSetupCatalog(t, nil)
			if tc.setup != nil {
				tc.setup(t, e)
			}
			held := map[string]bool{}
			for _, x := range e.b.Instances() {
				held[x.ID] = true
			}
			for _, x := range e.b.Bindings() {
				held[x.ID] = true
			}
			ccKillAtPause(t, e.ns, nil, engine.HookAfterBrokerCall, 0, tc.kill...)
			// The ids the killed command created at the broker, which its record may
			// never say it holds.
			var created []string
			for _, x := range e.b.Instances() {
				if !held[x.ID] {
					created = append(created, x.ID)
				}
			}
			for _, x := range e.b.Bindings() {
				if !held[x.ID] {
					created = append(created, x.ID)
				}
			}
			assert.Equal(t, len(created), 1, "the killed command's call reached the broker")

			if tc.refuse != nil {
				_, err := e.b.InjectFault(*tc.refuse)
				assert.NilError(t, err)
				// A reconcile re-sends the call and the broker refuses it (and every retry).
				instRun(t, e.ns, instReconcileEnv, "reconcile", asRunner, "--interval", "100ms", "--max-duration", "3s", "-o", "json")
				refused := 0
				for _, r := range e.b.RequestsFor(tc.refuse.Op) {
					if r.Status == tc.refuse.Status {
						refused++
					}
				}
				assert.Assert(t, refused >= 1, "the re-send was refused")
			}

			r := kubectl(t, controlplane.AdminUser, "delete", "configmap", "-n", e.ns, "--wait=false", tc.record)
			assert.Equal(t, r.ExitCode, 0, r.Stderr)
			ccReconcileUntilSettled(t, e.st, e.ns, ccReconcileEnv, 3)
			ccAssertConverged(t, e, tc.want)

			var deleted []string
			for _, op := range []broker.Op{broker.OpDeprovision, broker.OpUnbind} {
				for _, r := range e.b.RequestsFor(op) {
					if op == broker.OpUnbind {
						deleted = append(deleted, r.BindingID)
					} else {
						deleted = append(deleted, r.InstanceID)
					}
				}
			}
			for _, id := range created {
				assert.Assert(t, is.Contains(deleted, id), "the broker was not asked to delete %s (deletes: %v)", id, deleted)
			}
		})
	}
}

// ccKillReconcileCase gives a reconcile several kinds of work in one namespace (a
// deprovision, an unbind, a provision and a bind left by killed CLIs, and an async bind
// of the ha plan), kills it while its workers are at point, and has later runs
// converge. Records with nothing to do must come out untouched.
func ccKillReconcileCase(t *testing.T, point engine.HookPoint) {
	e := instSetupCatalog(t, nil)
	ctx := context.Background()
	for _, n := range []string{"keep", "gone"} {
		r := instCatalog(t, e.ns, append([]string{"provision", n, "--class", "postgresql", "--plan", "hobby"}, ccWaitArgs...)...)
		assert.Equal(t, r.ExitCode, 0, r.Stderr)
	}
	r := instCatalog(t, e.ns, append([]string{"provision", "ha", "--class", "postgresql", "--plan", "ha"}, ccWaitArgs...)...)
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	for _, n := range []string{"keep-app", "drop"} {
		r := instCatalog(t, e.ns, append([]string{"bind", "keep", "--name", n}, ccWaitArgs...)...)
		assert.Equal(t, r.ExitCode, 0, r.Stderr)
	}
	untouched, err := e.st.Bindings().Get(ctx, e.ns, "keep-app")
	assert.NilError(t, err)

	// Pending work: deletions the way a user may ask for them with kubectl, a provision
	// and a bind whose CLI died after the write-ahead, an async bind left to reconcile.
	r = kubectl(t, controlplane.AdminUser, "delete", "configmap", "-n", e.ns, "--wait=false",
		store.ConfigMapName(v1alpha1.KindServiceInstance, "gone"), store.ConfigMapName(v1alpha1.KindServiceBinding, "drop"))
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	ccKillAtPause(t, e.ns, nil, engine.HookBeforeBrokerCall, 0, "provision", "new", "--class", "postgresql", "--plan", "hobby")
	ccKillAtPause(t, e.ns, nil, engine.HookBeforeBrokerCall, 0, "bind", "keep", "--name", "fresh")
	r = instCatalog(t, e.ns, "bind", "ha", "--name", "ha-app")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	pending := ccPending(t, e.st, e.ns)
	assert.Assert(t, len(pending) >= 5, "%v", pending)

	// The reconcile's workers stop at their broker calls; give the others a moment to
	// reach theirs, then kill the process with all of them in flight.
	ccKillAtPause(t, e.ns, instReconcileEnv, point, time.Second, "reconcile", asRunner, "--interval", "100ms", "--max-duration", "60s")

	ccReconcileUntilSettled(t, e.st, e.ns, ccReconcileEnv, 3)
	ccAssertConverged(t, e, ccWant{
		instances: map[string]string{"keep": "ready", "gone": "gone", "new": "ready", "ha": "ready"},
		bindings:  map[string]string{"keep-app": "ready", "drop": "gone", "fresh": "ready", "ha-app": "ready"},
	})
	after, err := e.st.Bindings().Get(ctx, e.ns, "keep-app")
	assert.NilError(t, err)
	assert.Equal(t, after.ResourceVersion, untouched.ResourceVersion, "a settled record is not written by reconcile")
}

// TestCrashConsistency_ParametersSecretChangedBeforeTheResend_BrokerGetsTheIdenticalBody
// kills a provision after the broker received it, changes the Secret its parameters come
// from, and lets reconcile re-send it: the broker must receive the very body it received
// first (the values the first send kept, not the Secret's new ones), and the Secret that
// kept them must be gone once the outcome is stored.
//
// The broker needs no credentials here, and the catalog's trust policy is not in force:
// reconcile may not read the user's Secret in the record's name, and needs not, since a
// re-send reads only the Secret the record owns.
func TestCrashConsistency_ParametersSecretChangedBeforeTheResend_BrokerGetsTheIdenticalBody(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := broker.NewTestBroker(t, broker.Options{AsyncDelay: 300 * time.Millisecond, RetryAfter: -1})
	e := &instEnv{ns: cp.NewNamespace(t), b: b}
	admin, err := cp.Client(controlplane.AdminUser)
	assert.NilError(t, err)
	e.st = store.New(admin, nil)
	r := instCatalog(t, e.ns, "register", "acme", "--url", b.URL(), "--scope", "namespace")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	// "version" is not a key the broker's log redacts, so the bodies compare in full.
	_, err = admin.CoreV1().Secrets(e.ns).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "db-params"}, StringData: map[string]string{"version": "15"},
	}, metav1.CreateOptions{})
	assert.NilError(t, err)

	ccKillAtPause(t, e.ns, nil, engine.HookAfterBrokerCall, 0,
		"provision", "db", "--class", "postgresql", "--plan", "hobby", "--params-from-secret", "db-params")
	inst, err := e.st.Instances().Get(ctx, e.ns, "db")
	assert.NilError(t, err)
	op := inst.Status.InFlight
	assert.Assert(t, op != nil && op.Sent != nil && op.Sent.ParametersSecret != "", "the call is left in flight with what it sent: %+v", op)
	kept, err := admin.CoreV1().Secrets(e.ns).Get(ctx, op.Sent.ParametersSecret, metav1.GetOptions{})
	assert.NilError(t, err)
	assert.Equal(t, kept.OwnerReferences[0].UID, inst.UID, "the kept parameters are owned by the record")

	_, err = admin.CoreV1().Secrets(e.ns).Update(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "db-params"}, StringData: map[string]string{"version": "16"},
	}, metav1.UpdateOptions{})
	assert.NilError(t, err)
	ccReconcileUntilSettled(t, e.st, e.ns, instReconcileEnv, 3)

	puts := e.b.RequestsFor(broker.OpProvision)
	assert.Assert(t, is.Len(puts, 2), "the first send and reconcile's re-send")
	assert.Equal(t, string(puts[1].Body), string(puts[0].Body), "the re-send is the request first sent")
	assert.Equal(t, puts[1].RequestIdentity, puts[0].RequestIdentity)
	var body struct {
		Parameters map[string]any `json:"parameters"`
	}
	assert.NilError(t, puts[0].DecodeBody(&body))
	assert.DeepEqual(t, body.Parameters, map[string]any{"version": "15"})
	_, err = admin.CoreV1().Secrets(e.ns).Get(ctx, op.Sent.ParametersSecret, metav1.GetOptions{})
	assert.Assert(t, apierrors.IsNotFound(err), "the kept parameters are deleted once the outcome is stored: %v", err)

	assert.NilError(t, admin.CoreV1().Secrets(e.ns).Delete(ctx, "db-params", metav1.DeleteOptions{}))
	ccAssertConverged(t, e, ccWant{instances: map[string]string{"db": "ready"}})
}

// TestCrashConsistency_InterruptedCall_NotResentAtOnce: a provision whose command gives
// up (--timeout) after the broker acted on its PUT, before the answer came, leaves a
// call the broker may still be working on. A reconcile run at once sends nothing (the
// claim outlasts the interrupted call); once it has run out, one re-send finishes the
// instance under the same id.
func TestCrashConsistency_InterruptedCall_NotResentAtOnce(t *testing.T) {
	t.Parallel()
	e := instSetupCatalog(t, nil)
	_, err := e.b.InjectFault(broker.Fault{Op: broker.OpProvision, When: broker.After, Action: broker.ActionDelay, Delay: broker.Duration(time.Minute)})
	assert.NilError(t, err)

	r := instCatalog(t, e.ns, "provision", "db", "--class", "postgresql", "--plan", "hobby", "--wait", "--timeout", "3s")
	assert.Assert(t, r.ExitCode != 0, "the command gave up: %s", r.Stderr)
	// The broker records a request when its handler ends (the client's giving up ends
	// it here), which may come just after the instance is held: wait for both.
	instWaitFor(t, "the broker to hold the instance and record its PUT", 30*time.Second, func() bool {
		return len(e.b.Instances()) == 1 && len(e.b.RequestsFor(broker.OpProvision)) == 1
	})
	puts := len(e.b.RequestsFor(broker.OpProvision))

	instRun(t, e.ns, nil, "reconcile", asRunner, "--interval", "100ms", "--max-duration", "2s", "-o", "json")
	assert.Equal(t, len(e.b.RequestsFor(broker.OpProvision)), puts, "nothing is re-sent while the interrupted call may still be under way")
	inst, err := e.st.Instances().Get(context.Background(), e.ns, "db")
	assert.NilError(t, err)
	assert.Assert(t, inst.Status.InFlight != nil, "the call stays in flight")

	ccReconcileUntilSettled(t, e.st, e.ns, ccReconcileEnv, 3)
	ccAssertConverged(t, e, ccWant{instances: map[string]string{"db": "ready"}})
	ids := map[string]bool{}
	for _, p := range e.b.RequestsFor(broker.OpProvision) {
		ids[p.InstanceID] = true
	}
	assert.Equal(t, len(ids), 1, "the re-send keeps the instance id")
}

// TestCrashConsistency_CallSlowerThanTheClaim_NeverSentTwiceAtOnce: a reconcile
// re-sends the PUT of a killed provision, and the broker answers it long after the
// reconcile's claim (a short KUBECTL_CATALOG_TEST_CLAIM_TTL) would have run out, while a
// second reconcile steps the record over and over: the first renews its claim while the
// PUT is in flight, so the second never re-sends it, the broker sees one request for
// the id at a time, and the record ends ready.
func TestCrashConsistency_CallSlowerThanTheClaim_NeverSentTwiceAtOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := instSetupCatalog(t, nil)
	const claim = 2 * time.Second
	// Both reconciles claim for 2 s, with clocks past the claim the killed provision
	// left and the grace for its unsent PUT, and wait for the broker longer than it
	// takes to answer.
	env := []string{cmdutil.TestClaimTTLEnv + "=" + claim.String(), cmdutil.TestClockSkewEnv + "=3m", cmdutil.TestBrokerTimeoutEnv + "=60s", cmdutil.TestMitigationGraceEnv + "=1s"}
	ccKillAtPause(t, e.ns, nil, engine.HookBeforeBrokerCall, 0, "provision", "db", "--class", "postgresql", "--plan", "hobby")
	_, err := e.b.InjectFault(broker.Fault{Op: broker.OpProvision, Action: broker.ActionDelay, Delay: broker.Duration(8 * claim)})
	assert.NilError(t, err)

	first := make(chan result, 1)
	go func() {
		first <- instRun(t, e.ns, env, "reconcile", asRunner, "--interval", "100ms", "--max-duration", "60s", "-o", "json")
	}()
	var id string
	var claimed time.Time
	instWaitFor(t, "a reconcile's PUT to reach the broker", 30*time.Second, func() bool {
		inst, err := e.st.Instances().Get(ctx, e.ns, "db")
		if err != nil || inst.Status.InFlight == nil {
			return false
		}
		l, ok := store.LeaseOf(inst)
		id, claimed = inst.Status.InFlight.InstanceID, l.ExpiresAt
		return ok && strings.HasPrefix(l.Holder, "reconcile") && e.b.InFlight(id) == 1
	})
	// A reconcile takes a record it finds claimed up at a later run: the second one
	// starts once the claim written with the PUT has run out by the reconciles' clocks,
	// and steps the record while the broker still works on the PUT.
	instWaitFor(t, "the claim written with the PUT to run out", 30*time.Second, func() bool {
		return time.Now().Add(3 * time.Minute).After(claimed)
	})
	second := instRun(t, e.ns, env, "reconcile", asRunner, "--interval", "100ms", "--max-duration", (2 * claim).String(), "-o", "json")
	assert.Equal(t, e.b.InFlight(id), 1, "the broker was still working on the PUT while the second reconcile ran")
	assert.Equal(t, second.ExitCode, 0, second.Stderr)
	r := <-first
	assert.Equal(t, r.ExitCode, 0, r.Stderr)

	assert.Equal(t, e.b.MaxConcurrent(id), 1, "two requests for one id were in flight at once")
	assert.Equal(t, len(e.b.RequestsFor(broker.OpProvision)), 1, "the PUT was re-sent")
	assert.Assert(t, is.Len(e.b.Violations(), 0))
	ccAssertConverged(t, e, ccWant{instances: map[string]string{"db": "ready"}})
}

// TestCrashConsistency_DeprovisionAfterUnshare_WaitsForReconcileWhileABindingIsLive:
// alice, with the documented user role in team-a only (she may not list team-b's
// ConfigMaps), unshares her instance from team-b, where bob's binding of it is bound,
// and deprovisions it at once. Her deprovision cannot see that binding, so it must leave
// the deletion to reconcile (which can) instead of sending the DELETE under it; reconcile
// then unbinds bob's binding first and deprovisions the instance after.
func TestCrashConsistency_DeprovisionAfterUnshare_WaitsForReconcileWhileABindingIsLive(t *testing.T) {
	serial(t, clusterTrustPolicy)
	e := sharingSetup(t)
	ctx := context.Background()
	sharingBobBinds(t, e)
	r := kubectl(t, controlplane.AliceUser, "auth", "can-i", "list", "configmaps", "-n", e.teamB)
	assert.Assert(t, r.ExitCode != 0, "alice may not list team-b's ConfigMaps: %s", r.Stdout)

	r = sharingAlice(t, e, "unshare", "shop", "--from-namespace", e.teamB, "--yes")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	inst, err := e.st.Instances().Get(ctx, e.teamA, "shop")
	assert.NilError(t, err)
	assert.Assert(t, is.Len(inst.Spec.SharedWith, 0))
	r = sharingAlice(t, e, "deprovision", "shop", "--yes")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	assert.Assert(t, is.Contains(r.Stdout+r.Stderr, "may still use it"), "%s%s", r.Stdout, r.Stderr)
	assert.Equal(t, len(e.b.RequestsFor(broker.OpDeprovision)), 0, "a DELETE was sent while team-b's binding is bound")
	b, err := e.st.Bindings().Get(ctx, e.teamB, "shop")
	assert.NilError(t, err)
	assert.Equal(t, b.Status.Phase, v1alpha1.PhaseReady, "bob's binding is still bound")

	// Reconcile sees team-b: the binding goes first, the instance after.
	trustReconcile(t, e, e.teamA)
	assert.Equal(t, len(e.b.RequestsFor(broker.OpDeprovision)), 0, "reconcile waits for team-b's binding")
	trustReconcile(t, e, e.teamB)
	_, err = e.st.Bindings().Get(ctx, e.teamB, "shop")
	assert.Assert(t, store.IsNotFound(err), "bob's binding is unbound and gone: %v", err)
	trustReconcile(t, e, e.teamA)
	_, err = e.st.Instances().Get(ctx, e.teamA, "shop")
	assert.Assert(t, store.IsNotFound(err), "the instance is deprovisioned and gone: %v", err)

	unbinds, deletes := e.b.RequestsFor(broker.OpUnbind), e.b.RequestsFor(broker.OpDeprovision)
	assert.Assert(t, is.Len(unbinds, 1))
	assert.Assert(t, is.Len(deletes, 1))
	assert.Assert(t, unbinds[0].Seq < deletes[0].Seq, "the instance was deleted before its binding")
	assert.Assert(t, is.Len(e.b.Violations(), 0))
	assert.Assert(t, is.Len(e.b.Instances(), 0))
}
