package e2e

import (
	"context"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/test/broker"
)

func TestInstance_SyncProvisionUpdateDeprovision_AgainstTheTestBroker(t *testing.T) {
	t.Parallel()
	ns, b, st := instSetup(t)
	ctx := context.Background()

	r := instCatalog(t, ns, "provision", "db", "--class", "postgresql", "--plan", "hobby", "-p", "storage_gb=5")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	assert.Assert(t, is.Contains(r.Stderr, `Instance "db" is ready`))
	inst, err := st.Instances().Get(ctx, ns, "db")
	assert.NilError(t, err)
	bi, ok := b.Instance(inst.Spec.ExternalID)
	assert.Assert(t, ok, "the broker holds the instance")
	_ = bi
	assert.Assert(t, is.Contains(inst.Finalizers, store.Finalizer))

	r = instCatalog(t, ns, "get", "instances")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	assert.Assert(t, is.Contains(r.Stdout, "hobby"))

	// A dry run of the update: the API server sees the write and stores nothing; no broker call.
	for _, mode := range []string{"client", "server"} {
		r = instCatalog(t, ns, "update", "db", "-p", "storage_gb=8", "--dry-run="+mode, "-o", "yaml")
		assert.Equal(t, r.ExitCode, 0, r.Stderr)
		assert.Assert(t, is.Contains(r.Stdout, "storage_gb: 8"), r.Stdout)
		after, err := st.Instances().Get(ctx, ns, "db")
		assert.NilError(t, err)
		assert.Equal(t, string(after.Spec.Parameters.Raw), `{"storage_gb":5}`, mode)
		assert.Assert(t, is.Len(b.RequestsFor(broker.OpUpdate), 0), mode)
	}

	r = instCatalog(t, ns, "update", "db", "-p", "storage_gb=8", "--wait")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	upd := b.RequestsFor(broker.OpUpdate)
	assert.Assert(t, is.Len(upd, 1))

	r = instCatalog(t, ns, "describe", "instance", "db")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	assert.Assert(t, is.Contains(r.Stdout, "storage_gb"))

	r = instCatalog(t, ns, "deprovision", "db", "--yes", "--wait")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	_, err = st.Instances().Get(ctx, ns, "db")
	assert.Assert(t, store.IsNotFound(err))
	_, ok = b.Instance(inst.Spec.ExternalID)
	assert.Assert(t, !ok, "no orphan at the broker")
	assert.Assert(t, is.Len(b.Violations(), 0))
}

func TestInstance_AsyncProvisionWithWait_PollsToReady(t *testing.T) {
	t.Parallel()
	ns, b, st := instSetup(t)
	r := instCatalog(t, ns, "provision", "db", "--class", "postgresql", "--plan", "standard", "--wait", "--interval", "200ms")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	inst, err := st.Instances().Get(context.Background(), ns, "db")
	assert.NilError(t, err)
	assert.Equal(t, string(inst.Status.Phase), "Ready")
	assert.Assert(t, len(b.RequestsFor(broker.OpLastOperation)) > 0)
	assert.Assert(t, is.Len(b.Violations(), 0))
}

func TestInstance_AbandonDropsRecordsWithoutCallingTheBroker(t *testing.T) {
	t.Parallel()
	ns, b, st := instSetup(t)
	r := instCatalog(t, ns, "provision", "db", "--class", "postgresql", "--plan", "hobby")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	r = instCatalog(t, ns, "deprovision", "db", "--abandon", "--yes")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	assert.Assert(t, is.Contains(r.Stderr, "WARNING"))
	_, err := st.Instances().Get(context.Background(), ns, "db")
	assert.Assert(t, store.IsNotFound(err))
	assert.Assert(t, is.Len(b.RequestsFor(broker.OpDeprovision), 0))
}

func TestInstance_BadInput_FailsClearlyAndChangesNothing(t *testing.T) {
	t.Parallel()
	ns, b, st := instSetup(t)
	r := instCatalog(t, ns, "provision", "db", "--class", "postgresql", "--plan", "hobby", "-p", "storage_gb=5")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	provisions := len(b.RequestsFor(broker.OpProvision))

	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{name: "schema violation", args: []string{"provision", "x1", "--class", "postgresql", "--plan", "hobby", "-p", "storage_gb=11"}, want: "storage_gb"},
		{name: "invalid json", args: []string{"provision", "x2", "--class", "postgresql", "--plan", "hobby", "--params-json", "{"}, want: "JSON object"},
		{name: "unknown class", args: []string{"provision", "x3", "--class", "nosuch", "--plan", "hobby"}, want: "nosuch"},
		{name: "unknown plan", args: []string{"provision", "x4", "--class", "postgresql", "--plan", "nosuch"}, want: "nosuch"},
		{name: "name exists", args: []string{"provision", "db", "--class", "postgresql", "--plan", "hobby"}, want: "already exists"},
		{name: "deprovision unknown", args: []string{"deprovision", "nosuch", "--yes"}, want: "not found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := instCatalog(t, ns, tc.args...)
			assert.Assert(t, r.ExitCode != 0)
			assert.Assert(t, is.Contains(strings.ToLower(r.Stderr), strings.ToLower(tc.want)))
		})
	}
	items, err := st.Instances().List(context.Background(), ns, store.Filter{})
	assert.NilError(t, err)
	assert.Assert(t, is.Len(items, 1))
	assert.Equal(t, len(b.RequestsFor(broker.OpProvision)), provisions)
}
