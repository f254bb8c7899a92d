package e2e

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/test/broker"
	"github.com/kubectl-catalog/kubectl-catalog/test/controlplane"
)

// rebindAsyncEnv is instance "db" of postgresql/hobby, through a broker that binds and
// unbinds asynchronously (both plans), registered with the scope under test, with
// bindings "one" and "two" bound before the update.
type rebindAsyncEnv struct {
	*rebindEnv
	// extra are the flags every command of the test takes (the catalog namespace of a
	// cluster-scoped broker).
	extra []string
}

func rebindAsyncSetup(t *testing.T, scope string) *rebindAsyncEnv {
	t.Helper()
	c := broker.DefaultCatalog()
	for _, svc := range c.Services {
		if svc.Name != "postgresql" {
			continue
		}
		for _, p := range svc.Plans {
			if p.Name == "hobby" || p.Name == "standard" {
				pb := c.Behaviours[p.ID]
				pb.Async = append(slices.Clone(pb.Async), broker.OpBind, broker.OpUnbind)
				c.Behaviours[p.ID] = pb
			}
		}
	}
	b := broker.NewTestBroker(t, broker.Options{AsyncDelay: 300 * time.Millisecond, RetryAfter: -1, Catalog: &c})
	ns := cp.NewNamespace(t)
	e := &rebindAsyncEnv{rebindEnv: &rebindEnv{oldIDs: map[string]string{}, oldPasswords: map[string]string{}}}
	if scope == "cluster" {
		e.extra = []string{"--catalog-namespace", cp.NewNamespace(t)}
	}
	admin, err := cp.Client(controlplane.AdminUser)
	assert.NilError(t, err)
	e.bndEnv = &bndEnv{instEnv: &instEnv{ns: ns, b: b, st: store.New(admin, nil)}, admin: admin}
	r := e.cli(t, "register", "acme", "--url", b.URL(), "--scope", scope)
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	r = e.cli(t, "provision", "db", "--class", "postgresql", "--plan", "hobby", "--wait", "--interval", "200ms")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	for _, n := range rebindNames {
		r := e.cli(t, "bind", "db", "--name", n, "--wait", "--interval", "200ms")
		assert.Equal(t, r.ExitCode, 0, r.Stderr)
		e.oldIDs[n] = e.binding(t, n).CurrentExternalID()
		s, ok := e.secret(t, n)
		assert.Assert(t, ok)
		e.oldPasswords[n] = string(s.Data["password"])
	}
	assert.Equal(t, len(b.RequestsFor(broker.OpBind)), 2)
	return e
}

func (e *rebindAsyncEnv) cli(t *testing.T, args ...string) result {
	t.Helper()
	return instCatalog(t, e.ns, append(args, e.extra...)...)
}

// atUnbind is what a binding's record and Secret held when the unbind of its old id
// reached the broker.
type atUnbind struct {
	seen            bool
	boundID, secret string
	recordErr       error
}

// watchOldUnbinds holds the unbind of each binding's old id at the broker for a moment
// (a fault that delays it), and notes what the binding's record and Secret held while
// it was there.
func (e *rebindAsyncEnv) watchOldUnbinds(t *testing.T) (stop func() map[string]atUnbind) {
	t.Helper()
	var mu sync.Mutex
	seen := map[string]atUnbind{}
	done := make(chan struct{})
	var wg sync.WaitGroup
	for _, n := range rebindNames {
		old := e.oldIDs[n]
		_, err := e.b.InjectFault(broker.Fault{Op: broker.OpUnbind, BindingID: old, Action: broker.ActionDelay, Delay: broker.Duration(400 * time.Millisecond)})
		assert.NilError(t, err)
		wg.Add(1)
		go func() {
			defer wg.Done()
			tick := time.NewTicker(10 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-done:
					return
				case <-tick.C:
				}
				if e.b.InFlight(old) == 0 {
					continue
				}
				var a atUnbind
				a.seen = true
				if b, err := e.st.Bindings().Get(context.Background(), e.ns, n); err != nil {
					a.recordErr = err
				} else if b.Status.Bound != nil {
					a.boundID = b.Status.Bound.BindingID
				}
				if s, ok := e.secretNoFail(n); ok {
					a.secret = string(s)
				}
				mu.Lock()
				seen[n] = a
				mu.Unlock()
				return
			}
		}()
	}
	return func() map[string]atUnbind {
		close(done)
		wg.Wait()
		mu.Lock()
		defer mu.Unlock()
		return seen
	}
}

// secretNoFail is the password binding n's Secret holds, read from a goroutine.
func (e *rebindAsyncEnv) secretNoFail(n string) ([]byte, bool) {
	s, err := e.admin.CoreV1().Secrets(e.ns).Get(context.Background(), n, metav1.GetOptions{})
	if err != nil {
		return nil, false
	}
	return s.Data["password"], true
}

// "update --rebind" on an instance whose broker binds and unbinds asynchronously, with
// --wait (the verb rotates every binding) and without (reconcile finishes), through a
// cluster-scoped and a namespace-scoped broker: each binding gets a new id bound (202,
// polled, GET binding), its Secret the new credentials, and only then is its old id
// unbound (202, polled); one binding at a time; nothing is left at the broker that no
// record names.
func TestRebindAsync_UpdateRebind_AsyncBindAndUnbind_OldIDUnboundOnlyAfterTheNewSecret(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		scope string
		wait  bool
	}{
		{"namespace", true},
		{"namespace", false},
		{"cluster", true},
		{"cluster", false},
	} {
		name := tc.scope + " broker, "
		if tc.wait {
			name += "--wait"
		} else {
			name += "reconcile finishes"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := rebindAsyncSetup(t, tc.scope)
			stop := e.watchOldUnbinds(t)

			args := []string{"update", "db", "--plan", "standard", "--rebind"}
			if tc.wait {
				args = append(args, "--wait", "--interval", "200ms")
			}
			r := e.cli(t, args...)
			assert.Equal(t, r.ExitCode, 0, r.Stderr)
			assert.Assert(t, is.Contains(r.Stderr, "Once the instance settled, its bindings are rotated ("+e.ns+"/one, "+e.ns+"/two), one at a time."))
			if tc.wait {
				assert.Assert(t, is.Contains(r.Stderr, `Rebind: bindings rotated after the update ("update --rebind"): `+e.ns+"/one, "+e.ns+"/two."))
			} else {
				inst, err := e.st.Instances().Get(context.Background(), e.ns, "db")
				assert.NilError(t, err)
				assert.Assert(t, inst.Status.Rebind != nil, "the rebind is left to reconcile, written ahead")
				for i := 0; i < 8; i++ {
					recRun(t, e.ns, instReconcileEnv, e.extra...)
					if inst, err := e.st.Instances().Get(context.Background(), e.ns, "db"); err == nil && inst.Status.Rebind == nil {
						break
					}
				}
			}
			seen := stop()

			e.assertRebound(t)
			for _, n := range rebindNames {
				b := e.binding(t, n)
				s, _ := e.secret(t, n)
				a := seen[n]
				assert.Assert(t, a.seen, "the old id of binding %s was never unbound", n)
				assert.NilError(t, a.recordErr)
				assert.Equal(t, a.boundID, b.CurrentExternalID(), "binding %s: when its old id was unbound, its record was bound as %s", n, a.boundID)
				assert.Equal(t, a.secret, string(s.Data["password"]), "binding %s: its Secret did not hold the new credentials when its old id was unbound", n)
			}
			// One at a time, each new id bound before its old one is unbound, and each
			// binding bound once before the update and once after.
			var order []string
			for _, req := range e.b.Requests() {
				switch req.Op {
				case broker.OpUpdate, broker.OpBind, broker.OpUnbind:
					if req.Op == broker.OpBind && slices.Contains([]string{e.oldIDs["one"], e.oldIDs["two"]}, req.BindingID) {
						continue
					}
					order = append(order, string(req.Op)+" "+e.nameOf(t, req.BindingID))
				}
			}
			assert.DeepEqual(t, order, []string{"update ", "bind one", "unbind one", "bind two", "unbind two"})
			inst, err := e.st.Instances().Get(context.Background(), e.ns, "db")
			assert.NilError(t, err)
			assert.Assert(t, meta.IsStatusConditionTrue(inst.Status.Conditions, engine.ConditionBindingsRebound))
		})
	}
}
