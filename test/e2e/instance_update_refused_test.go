package e2e

import (
	"context"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/test/broker"
	"github.com/kubectl-catalog/kubectl-catalog/test/controlplane"
)

// openBrokerSetup starts a test broker without credentials and registers it,
// namespace-scoped, in a fresh namespace: with no credentials to read, the broker's use
// needs no verified author, so the test runs without the trust policy installed.
func openBrokerSetup(t *testing.T) (string, *broker.Broker, *store.Store) {
	t.Helper()
	return openBrokerSetupWith(t, broker.Options{AsyncDelay: 300 * time.Millisecond, RetryAfter: -1})
}

// openBrokerSetupWith is openBrokerSetup with a test broker started with opts.
func openBrokerSetupWith(t *testing.T, opts broker.Options) (string, *broker.Broker, *store.Store) {
	t.Helper()
	b := broker.NewTestBroker(t, opts)
	ns := cp.NewNamespace(t)
	admin, err := cp.Client(controlplane.AdminUser)
	assert.NilError(t, err)
	r := instCatalog(t, ns, "register", "acme", "--url", b.URL(), "--scope", "namespace")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	return ns, b, store.New(admin, nil)
}

func TestInstance_RefusedUpdate_StaysReadyBindableAndRevertSettlesIt(t *testing.T) {
	t.Parallel()
	ns, b, st := openBrokerSetup(t)
	ctx := context.Background()
	r := instCatalog(t, ns, "provision", "db", "--class", "postgresql", "--plan", "hobby", "-p", "storage_gb=5")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	_, err := b.InjectFault(broker.Fault{Op: broker.OpUpdate, Action: broker.ActionRespond, Status: 400, Description: "storage above 6 GB needs plan standard"})
	assert.NilError(t, err)

	r = instCatalog(t, ns, "update", "db", "-p", "storage_gb=8", "--wait")

	assert.Equal(t, r.ExitCode, 1, r.Stderr)
	assert.Assert(t, is.Contains(r.Stderr, "storage above 6 GB needs plan standard"))
	assert.Assert(t, is.Contains(r.Stderr, "still runs with its previous plan and parameters"))
	assert.Assert(t, is.Contains(r.Stderr, `"kubectl catalog update db --revert -n `+ns+`"`))
	inst, err := st.Instances().Get(ctx, ns, "db")
	assert.NilError(t, err)
	held, ok := b.Instance(inst.Spec.ExternalID)
	assert.Assert(t, ok)
	assert.Equal(t, held.Parameters["storage_gb"], 5.0, "the broker kept the previous parameters")

	r = instCatalog(t, ns, "get", "instances")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	assert.Assert(t, is.Contains(r.Stdout, "Ready (UpdateRejected)"))
	r = instCatalog(t, ns, "describe", "instance", "db")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	assert.Assert(t, is.Contains(r.Stdout, "Status:           Ready (UpdateRejected)"))
	assert.Assert(t, is.Regexp(`parameters\.storage_gb +8 +5\n`, r.Stdout))
	assert.Assert(t, is.Contains(r.Stdout, "UpdateFailed"))

	r = instCatalog(t, ns, "bind", "db")
	assert.Equal(t, r.ExitCode, 0, "a refused update leaves the instance bindable: %s", r.Stderr)

	updates := len(b.RequestsFor(broker.OpUpdate))
	r = instCatalog(t, ns, "update", "db", "--revert", "--wait")

	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	assert.Assert(t, is.Contains(r.Stderr, `parameters {"storage_gb":5}`))
	assert.Assert(t, is.Contains(r.Stderr, `Instance "db" is ready`))
	assert.Equal(t, len(b.RequestsFor(broker.OpUpdate)), updates, "the broker holds the reverted spec already")
	inst, err = st.Instances().Get(ctx, ns, "db")
	assert.NilError(t, err)
	assert.Equal(t, inst.Status.Phase, v1alpha1.PhaseReady)
	assert.Assert(t, !inst.HasPendingWork())
	r = instCatalog(t, ns, "get", "instances")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	assert.Assert(t, !is.Contains(r.Stdout, "UpdateRejected")().Success(), r.Stdout)
	r = instCatalog(t, ns, "describe", "instance", "db")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	assert.Assert(t, !is.Contains(r.Stdout, "Not applied")().Success(), r.Stdout)
	assert.Assert(t, is.Len(b.Violations(), 0))
}
