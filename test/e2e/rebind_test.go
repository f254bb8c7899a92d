package e2e

import (
	"context"
	"slices"
	"syscall"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/test/broker"
	"github.com/kubectl-catalog/kubectl-catalog/test/controlplane"
)

// rebindEnv is instance "db" of postgresql/hobby with bindings "one" and "two", and what
// they held before the update: their OSB ids and passwords.
type rebindEnv struct {
	*bndEnv
	oldIDs, oldPasswords map[string]string
}

var rebindNames = []string{"one", "two"}

func rebindSetup(t *testing.T) *rebindEnv {
	t.Helper()
	e := &rebindEnv{bndEnv: bndSetup(t, "hobby", nil), oldIDs: map[string]string{}, oldPasswords: map[string]string{}}
	for _, n := range rebindNames {
		r := e.run(t, "bind", "db", "--name", n)
		assert.Equal(t, r.ExitCode, 0, r.Stderr)
		e.oldIDs[n] = e.binding(t, n).CurrentExternalID()
		s, ok := e.secret(t, n)
		assert.Assert(t, ok)
		e.oldPasswords[n] = string(s.Data["password"])
	}
	return e
}

// assertRebound checks that every binding was rotated once: a new id bound, its Secret
// holding new credentials, and the broker holding exactly the new ids (no orphan, no
// old id left), with no protocol violation.
func (e *rebindEnv) assertRebound(t *testing.T) {
	t.Helper()
	var want []string
	for _, n := range rebindNames {
		b := e.binding(t, n)
		assert.Assert(t, b.CurrentExternalID() != e.oldIDs[n], "binding %s was not rotated", n)
		assert.Equal(t, b.Status.Bound.BindingID, b.CurrentExternalID())
		assert.Assert(t, is.Len(b.Status.Retired, 0))
		assert.Assert(t, !b.HasPendingWork(), "binding %s: %+v", n, b.Status)
		s, ok := e.secret(t, n)
		assert.Assert(t, ok)
		assert.Assert(t, string(s.Data["password"]) != e.oldPasswords[n], "Secret %s keeps the old credentials", n)
		want = append(want, b.CurrentExternalID())
	}
	slices.Sort(want)
	assert.DeepEqual(t, bndBrokerBindings(e.b), want)
	assert.Assert(t, is.Len(e.b.Violations(), 0))
	inst, err := e.st.Instances().Get(context.Background(), e.ns, "db")
	assert.NilError(t, err)
	assert.Assert(t, inst.Status.Rebind == nil, "%+v", inst.Status.Rebind)
	assert.Assert(t, meta.IsStatusConditionTrue(inst.Status.Conditions, engine.ConditionBindingsRebound))
}

// The bindings are rotated one at a time after the update: each new id is bound and
// its old one unbound before the next binding's new id is bound.
func TestRebind_UpdatePlanRebind_SwapsTheSecretsAndUnbindsTheOldIDs(t *testing.T) {
	t.Parallel()
	e := rebindSetup(t)

	r := e.run(t, "update", "db", "--plan", "standard", "--rebind", "--wait", "--interval", "200ms")

	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	assert.Assert(t, is.Contains(r.Stderr, "Once the instance settled, its bindings are rotated ("+e.ns+"/one, "+e.ns+"/two), one at a time."))
	assert.Assert(t, is.Contains(r.Stderr, `Rebind: bindings rotated after the update ("update --rebind"): `+e.ns+"/one, "+e.ns+"/two."))
	e.assertRebound(t)
	var order []string
	for _, req := range e.b.Requests() {
		switch req.Op {
		case broker.OpUpdate, broker.OpBind, broker.OpUnbind:
			if req.Op == broker.OpBind && slices.Contains([]string{e.oldIDs["one"], e.oldIDs["two"]}, req.BindingID) {
				continue // the first binds, before the update
			}
			order = append(order, string(req.Op)+" "+e.nameOf(t, req.BindingID))
		}
	}
	assert.DeepEqual(t, order, []string{"update ", "bind one", "unbind one", "bind two", "unbind two"})
	inst, err := e.st.Instances().Get(context.Background(), e.ns, "db")
	assert.NilError(t, err)
	assert.Equal(t, inst.Status.Provisioned.PlanID, inst.Spec.PlanID)
}

// nameOf names the binding whose old or new id is id ("" for none).
func (e *rebindEnv) nameOf(t *testing.T, id string) string {
	for _, n := range rebindNames {
		if id == e.oldIDs[n] || id == e.binding(t, n).CurrentExternalID() {
			return n
		}
	}
	return ""
}

// A CLI killed after the first rotation (the broker unbound the first old id, the answer
// never came back) leaves the rebind written ahead in the instance: reconcile unbinds
// what is left, rotates the second binding, and no binding is left at the broker that
// no record names.
func TestRebind_KilledAfterTheFirstRotation_ReconcileFinishesWithNoOrphan(t *testing.T) {
	t.Parallel()
	e := rebindSetup(t)
	_, err := e.b.InjectFault(broker.Fault{Op: broker.OpUnbind, BindingID: e.oldIDs["one"], When: broker.After, Action: broker.ActionHang})
	assert.NilError(t, err)

	cmd, _ := instStartKillable(t, e.ns, nil, "update", "db", "--plan", "standard", "--rebind", "--wait", "--interval", "200ms")
	instWaitFor(t, "the broker to unbind the first old id", 30*time.Second, func() bool {
		_, held := e.b.Binding(e.oldIDs["one"])
		return !held
	})
	assert.NilError(t, cmd.Process.Signal(syscall.SIGKILL))
	_ = cmd.Wait()
	e.b.ClearFaults()

	inst, err := e.st.Instances().Get(context.Background(), e.ns, "db")
	assert.NilError(t, err)
	assert.Assert(t, inst.Status.Rebind != nil, "the rebind is written ahead")
	assert.Assert(t, inst.Status.Rebind.Current != nil && inst.Status.Rebind.Current.Name == "one", "%+v", inst.Status.Rebind)
	assert.Equal(t, e.binding(t, "two").CurrentExternalID(), e.oldIDs["two"], "the second binding is not rotated yet")

	for i := 0; i < 3; i++ {
		recRun(t, e.ns, instReconcileEnv)
		if inst, err := e.st.Instances().Get(context.Background(), e.ns, "db"); err == nil && inst.Status.Rebind == nil {
			break
		}
	}
	e.assertRebound(t)
	assert.Equal(t, len(e.b.RequestsFor(broker.OpBind)), 4, "each binding bound once before the update and once after")
}

// spec.rebindOnUpdate (here set with --rebind=plan-change) is carried out by reconcile
// after an update it finishes: an asynchronous plan change the verb did not wait for.
// A later update that leaves the plan as it is rotates nothing.
func TestRebind_SpecChoice_CarriedOutByReconcileAfterThePlanChange(t *testing.T) {
	t.Parallel()
	e := rebindSetup(t)
	r := e.run(t, "update", "db", "--rebind=plan-change")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	assert.Equal(t, len(e.b.RequestsFor(broker.OpUpdate)), 0, "setting the choice calls no broker")

	r = e.run(t, "update", "db", "--plan", "standard")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	inst, err := e.st.Instances().Get(context.Background(), e.ns, "db")
	assert.NilError(t, err)
	assert.Equal(t, inst.Spec.RebindOnUpdate, v1alpha1.RebindPlanChange)
	assert.Assert(t, inst.Status.Rebind != nil, "written ahead with the update")
	assert.Assert(t, is.Contains(inst.Status.Rebind.Reason, `spec.rebindOnUpdate is PlanChange and the plan changed from "hobby" to "standard"`))

	for i := 0; i < 3; i++ {
		recRun(t, e.ns, instReconcileEnv)
		if inst, err := e.st.Instances().Get(context.Background(), e.ns, "db"); err == nil && inst.Status.Rebind == nil {
			break
		}
	}
	e.assertRebound(t)
	r = e.run(t, "describe", "instance", "db")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	assert.Assert(t, is.Contains(r.Stdout, "BindingRotated"))

	binds := len(e.b.RequestsFor(broker.OpBind))
	r = e.run(t, "update", "db", "--max-bindings", "5", "--wait")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	recRun(t, e.ns, instReconcileEnv)
	assert.Equal(t, len(e.b.RequestsFor(broker.OpBind)), binds, "no plan change, no rotation")
}

// Bad input: an invalid --rebind is a usage error naming the flag, and --rebind on an
// instance without bindings says so; neither changes anything.
func TestRebind_BadInput_ChangesNothing(t *testing.T) {
	t.Parallel()
	e := bndSetup(t, "hobby", nil)
	before := snapshotRecords(t, e.ns)

	r := e.run(t, "update", "db", "--rebind=sometimes")
	assert.Equal(t, r.ExitCode, 2, r.Stderr)
	assert.Assert(t, is.Contains(r.Stderr, `invalid value "sometimes" for --rebind`))

	r = e.run(t, "update", "db", "--rebind")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	assert.Assert(t, is.Contains(r.Stderr, `Instance "db" has no bound binding: --rebind has nothing to rotate.`))

	assert.DeepEqual(t, snapshotRecords(t, e.ns), before)
	assert.Equal(t, len(e.b.RequestsFor(broker.OpUpdate)), 0)
}

// "update --rebind" of an instance the broker never provisioned (its provision refused
// with a 400), through a namespace-scoped and a cluster-scoped broker, for a plan the
// broker provisions synchronously and one it provisions asynchronously: --rebind alone
// is bad input (exit 2, naming describe instance) and changes no record or Secret; with a
// change of plan, the change is made and provisioned, the verb says --rebind has nothing
// to rotate, and no rebind is left recorded on the instance.
func TestRebind_AnInstanceNeverProvisioned_HasNothingToRotate(t *testing.T) {
	t.Parallel()
	for _, scope := range []string{"namespace", "cluster"} {
		for _, tc := range []struct{ plan, then string }{{"hobby", "standard"}, {"standard", "hobby"}} {
			t.Run(scope+"/"+tc.plan, func(t *testing.T) {
				t.Parallel()
				b := broker.NewTestBroker(t, broker.Options{AsyncDelay: 300 * time.Millisecond, RetryAfter: -1})
				ns := cp.NewNamespace(t)
				var extra []string
				namespaces := []string{ns}
				if scope == "cluster" {
					catNS := cp.NewNamespace(t)
					extra = []string{"--catalog-namespace", catNS}
					namespaces = append(namespaces, catNS)
				}
				cli := func(args ...string) result {
					t.Helper()
					return instCatalog(t, ns, append(args, extra...)...)
				}
				r := cli("register", "acme", "--url", b.URL(), "--scope", scope)
				assert.Equal(t, r.ExitCode, 0, r.Stderr)
				_, err := b.InjectFault(broker.Fault{Op: broker.OpProvision, When: broker.Before, Action: broker.ActionRespond, Status: 400, Description: "size not offered here"})
				assert.NilError(t, err)
				r = cli("provision", "db", "--class", "postgresql", "--plan", tc.plan, "--wait", "--interval", "200ms")
				assert.Equal(t, r.ExitCode, 1, r.Stderr)
				assert.Assert(t, is.Contains(r.Stderr, "size not offered here"))
				b.ClearFaults()
				sent := len(b.Requests())
				before := snapshotRecords(t, namespaces...)

				r = cli("update", "db", "--rebind")
				assert.Equal(t, r.ExitCode, 2, r.Stderr)
				assert.Assert(t, is.Contains(r.Stderr, `instance "db": --rebind rotates the credentials of its bindings, and the broker has not provisioned it`))
				assert.Assert(t, is.Contains(r.Stderr, "describe instance db"))
				assert.DeepEqual(t, snapshotRecords(t, namespaces...), before)
				assert.Equal(t, len(b.Requests()), sent, "the refused update sent the broker nothing")

				r = cli("update", "db", "--plan", tc.then, "--rebind", "--wait", "--interval", "200ms")
				assert.Equal(t, r.ExitCode, 0, r.Stderr)
				assert.Assert(t, is.Contains(r.Stderr, `Instance "db" is not provisioned: --rebind has nothing to rotate.`))
				admin, err := cp.Client(controlplane.AdminUser)
				assert.NilError(t, err)
				st := store.New(admin, nil)
				inst, err := st.Instances().Get(context.Background(), ns, "db")
				assert.NilError(t, err)
				assert.Assert(t, inst.Status.Provisioned != nil, "%+v", inst.Status)
				assert.Equal(t, inst.Status.Provisioned.PlanID, b.Instances()[0].PlanID)
				assert.Assert(t, inst.Status.Rebind == nil, "%+v", inst.Status.Rebind)
				assert.Assert(t, !inst.HasPendingWork(), "%+v", inst.Status)
				assert.Assert(t, is.Len(b.Instances(), 1))
				assert.Assert(t, is.Len(b.Violations(), 0))
			})
		}
	}
}
