package e2e

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/test/broker"
)

// pairedBrokerSetup is openBrokerSetup with the test broker's paired catalog: class
// "svc", whose plans' update schemas ask every update for foo and bar together (an
// allOf with required), which the broker enforces with a 400.
func pairedBrokerSetup(t *testing.T) (string, *broker.Broker, *store.Store) {
	t.Helper()
	cat := broker.PairedCatalog()
	return openBrokerSetupWith(t, broker.Options{Catalog: &cat, AsyncDelay: 300 * time.Millisecond, RetryAfter: -1})
}

// lastUpdateParameters is the parameters object of the last PATCH the broker got, and
// its answer's status.
func lastUpdateParameters(t *testing.T, b *broker.Broker) (string, int) {
	t.Helper()
	reqs := b.RequestsFor(broker.OpUpdate)
	assert.Assert(t, len(reqs) > 0, "no update reached the broker")
	last := reqs[len(reqs)-1]
	var body struct {
		Parameters json.RawMessage `json:"parameters"`
	}
	assert.NilError(t, json.Unmarshal(last.Body, &body))
	return string(body.Parameters), last.Status
}

// The two commands, on a plan whose update schema asks for foo and bar
// together: each update sends the keys it names, and the unchanged partner the schema
// asks for, and what it checks is what the broker gets.
func TestInstance_Update_PairedParameters_SendsTheBodyItChecks(t *testing.T) {
	t.Parallel()
	for _, plan := range []string{"both", "both-async"} {
		t.Run(plan, func(t *testing.T) {
			t.Parallel()
			ns, b, st := pairedBrokerSetup(t)
			ctx := context.Background()
			r := instCatalog(t, ns, "provision", "u1", "--class", "svc", "--plan", plan, "--params-json", `{"foo":"f1","bar":"b1"}`, "--wait")
			assert.Equal(t, r.ExitCode, 0, r.Stderr)
			inst, err := st.Instances().Get(ctx, ns, "u1")
			assert.NilError(t, err)
			held := func() map[string]any {
				i, ok := b.Instance(inst.Spec.ExternalID)
				assert.Assert(t, ok)
				return i.Parameters
			}

			for _, step := range []struct {
				args []string
				sent string // the PATCH's parameters
				says string
				held map[string]any
			}{
				{args: []string{"-p", "foo=f2", "-p", "bar=b1"}, sent: `{"bar":"b1","foo":"f2"}`,
					held: map[string]any{"foo": "f2", "bar": "b1"}},
				{args: []string{"-p", "foo=f3"}, sent: `{"bar":"b1","foo":"f3"}`,
					says: "The update also sends bar, unchanged: the plan's update schema asks for it with the parameters that change.",
					held: map[string]any{"foo": "f3", "bar": "b1"}},
				{args: []string{"-p", "note=n1"}, sent: `{"bar":"b1","foo":"f3","note":"n1"}`,
					says: "The update also sends bar, foo, unchanged",
					held: map[string]any{"foo": "f3", "bar": "b1", "note": "n1"}},
			} {
				r = instCatalog(t, ns, append([]string{"update", "u1", "--wait"}, step.args...)...)

				assert.Equal(t, r.ExitCode, 0, "%v: %s", step.args, r.Stderr)
				assert.Assert(t, is.Contains(r.Stderr, `Instance "u1" is ready`), r.Stderr)
				if step.says != "" {
					assert.Assert(t, is.Contains(r.Stderr, step.says))
				} else {
					assert.Assert(t, !strings.Contains(r.Stderr, "also sends"), r.Stderr)
				}
				sent, status := lastUpdateParameters(t, b)
				assert.Equal(t, sent, step.sent, "%v", step.args)
				assert.Assert(t, status < 300, "the broker accepted the update: %d", status)
				assert.DeepEqual(t, held(), step.held)
			}

			// touch sends every parameter, which the schema accepts.
			r = instCatalog(t, ns, "touch", "instance", "u1", "--wait")
			assert.Equal(t, r.ExitCode, 0, r.Stderr)
			sent, _ := lastUpdateParameters(t, b)
			assert.Equal(t, sent, `{"bar":"b1","foo":"f3","note":"n1"}`)

			inst, err = st.Instances().Get(ctx, ns, "u1")
			assert.NilError(t, err)
			assert.Equal(t, inst.Status.Phase, v1alpha1.PhaseReady)
			assert.Assert(t, !inst.HasPendingWork())
			r = instCatalog(t, ns, "describe", "instance", "u1")
			assert.Equal(t, r.ExitCode, 0, r.Stderr)
			assert.Assert(t, !strings.Contains(r.Stdout, "Not applied"), r.Stdout)
			assert.Assert(t, !strings.Contains(r.Stdout, "UpdateRejected"), r.Stdout)
			for _, req := range b.RequestsFor(broker.OpUpdate) {
				assert.Assert(t, req.Status < 300, "no update was refused: %d %s", req.Status, req.Body)
			}
			assert.Assert(t, is.Len(b.Violations(), 0))
		})
	}
}

// A manifest applied again with foo changed is an update like "update -p foo=...": it
// sends bar too.
func TestDeclarative_PairedParameters_ApplySendsTheUnchangedPartner(t *testing.T) {
	t.Parallel()
	ns, b, _ := pairedBrokerSetup(t)
	dir := t.TempDir()
	manifest := `apiVersion: catalog.kubectl-catalog.io/v1alpha1
kind: ServiceInstance
metadata:
  name: u1
spec:
  classExternalName: svc
  planExternalName: both
  parameters:
    foo: FOO
    bar: b1
`
	declWrite(t, dir, "u1.yaml", strings.Replace(manifest, "FOO", "f1", 1))
	r := instCatalog(t, ns, "apply", "-f", dir, "--wait")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)

	declWrite(t, dir, "u1.yaml", strings.Replace(manifest, "FOO", "f2", 1))
	r = instCatalog(t, ns, "apply", "-f", dir, "--wait")

	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	assert.Assert(t, is.Contains(r.Stdout, "serviceinstance.catalog.kubectl-catalog.io/u1 configured\n"))
	sent, status := lastUpdateParameters(t, b)
	assert.Equal(t, sent, `{"bar":"b1","foo":"f2"}`)
	assert.Assert(t, status < 300, "the broker accepted the update: %d", status)
	r = instCatalog(t, ns, "get", "instances")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	assert.Assert(t, !strings.Contains(r.Stdout, "UpdateRejected"), r.Stdout)
}
