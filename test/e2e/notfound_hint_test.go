package e2e

import (
	"context"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/test/broker"
	"github.com/kubectl-catalog/kubectl-catalog/test/controlplane"
)

// An instance record whose broker holds nothing under its id (a record "migrate svcat"
// made again from svcat's objects after the instance was deprovisioned, or, as here,
// one the broker lost): its update and a new bind are answered 404. The command says
// so, the instance's and the binding's conditions (and "describe") name the command
// that ends it, and that command, "deprovision", ends it: the broker answers the
// DELETEs gone. For a namespace-scoped and a cluster-scoped broker.
func TestNotFoundHint_BrokerLostTheInstance_ConditionNamesTheWayOutAndDeprovisionEndsIt(t *testing.T) {
	t.Parallel()
	for _, scope := range []string{"namespace", "cluster"} {
		t.Run(scope, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			ns := cp.NewNamespace(t)
			b := broker.NewTestBroker(t, broker.Options{AsyncDelay: 200 * time.Millisecond, RetryAfter: -1})
			admin, err := cp.Client(controlplane.AdminUser)
			assert.NilError(t, err)
			st := store.New(admin, nil)
			run := func(args ...string) result { return instCatalog(t, ns, args...) }
			if scope == "cluster" {
				catalogNS := cp.NewNamespace(t)
				run = func(args ...string) result {
					return instCatalog(t, ns, append(args, "--catalog-namespace", catalogNS)...)
				}
			}
			r := run("register", "acme", "--url", b.URL(), "--scope", scope)
			assert.Equal(t, r.ExitCode, 0, r.Stderr)
			r = run("provision", "db", "--class", "postgresql", "--plan", "hobby", "-p", "storage_gb=5", "--wait", "--timeout", "30s")
			assert.Equal(t, r.ExitCode, 0, r.Stderr)
			inst, err := st.Instances().Get(ctx, ns, "db")
			assert.NilError(t, err)
			id := inst.Spec.ExternalID
			assert.Assert(t, b.Forget(id), "the broker loses the instance")

			deprovision := `"kubectl catalog deprovision db -n ` + ns + `"`
			r = run("update", "db", "-p", "storage_gb=6")
			assert.Assert(t, is.Contains(r.Stderr, "holds no instance under id "+id), "exit %d: %s", r.ExitCode, r.Stderr)
			assert.Assert(t, is.Contains(r.Stderr, deprovision))
			r = run("describe", "instance", "db")
			assert.Equal(t, r.ExitCode, 0, r.Stderr)
			assert.Assert(t, is.Contains(r.Stdout, "holds no instance under id "+id))
			assert.Assert(t, is.Contains(r.Stdout, deprovision))
			assert.Assert(t, is.Contains(r.Stdout, `"kubectl catalog deprovision db --abandon -n `+ns+`"`))

			r = run("bind", "db", "--name", "app")
			assert.Assert(t, is.Contains(r.Stderr, "holds no instance under id "+id), "exit %d: %s", r.ExitCode, r.Stderr)
			r = run("describe", "binding", "app")
			assert.Equal(t, r.ExitCode, 0, r.Stderr)
			assert.Assert(t, is.Contains(r.Stdout, deprovision))
			assert.Assert(t, is.Contains(r.Stdout, `"kubectl catalog unbind app --abandon -n `+ns+`"`))
			updates, binds := len(b.RequestsFor(broker.OpUpdate)), len(b.RequestsFor(broker.OpBind))
			assert.Assert(t, updates >= 1 && binds >= 1)

			r = run("deprovision", "db", "--yes", "--wait", "--timeout", "30s")
			assert.Equal(t, r.ExitCode, 0, r.Stderr)
			_, err = st.Instances().Get(ctx, ns, "db")
			assert.Assert(t, store.IsNotFound(err), "the instance's record is gone: %v", err)
			_, err = st.Bindings().Get(ctx, ns, "app")
			assert.Assert(t, store.IsNotFound(err), "the binding's record is gone: %v", err)
			assert.Equal(t, len(b.RequestsFor(broker.OpUpdate)), updates, "nothing is sent again meanwhile")
			assert.Assert(t, is.Len(b.Violations(), 0))
		})
	}
}
