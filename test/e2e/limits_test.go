package e2e

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/test/broker"
)

// TestLimits_TwentyConcurrentBinds_AgainstALimitOfFive_MakeExactlyFive runs 20 bind
// processes at once, 10 in the instance's namespace and 10 in a namespace it is shared
// with, against --max-bindings 5: exactly 5 bindings exist afterwards, the broker saw
// exactly 5 binds, and every other process failed saying so, leaving no record and no
// Secret behind.
func TestLimits_TwentyConcurrentBinds_AgainstALimitOfFive_MakeExactlyFive(t *testing.T) {
	t.Parallel()
	nsA, b, st := instSetup(t)
	nsB := cp.NewNamespace(t)
	ctx := context.Background()

	r := instCatalog(t, nsA, "provision", "db", "--class", "postgresql", "--plan", "hobby", "--max-bindings", "5")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	r = instCatalog(t, nsA, "share", "db", "--to-namespace", nsB)
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	inst, err := st.Instances().Get(ctx, nsA, "db")
	assert.NilError(t, err)
	assert.Equal(t, *inst.Spec.MaxBindings, int32(5))
	assert.DeepEqual(t, inst.Spec.SharedWith, []string{nsB})

	type outcome struct {
		ns, name string
		res      result
	}
	var (
		wg  sync.WaitGroup
		mu  sync.Mutex
		out []outcome
	)
	for i := range 20 {
		ns, target := nsA, "db"
		if i%2 == 1 {
			ns, target = nsB, nsA+"/db"
		}
		name := fmt.Sprintf("b%02d", i)
		wg.Add(1)
		go func() {
			defer wg.Done()
			res := instCatalog(t, ns, "bind", target, "--name", name)
			mu.Lock()
			out = append(out, outcome{ns, name, res})
			mu.Unlock()
		}()
	}
	wg.Wait()

	var ok, refused int
	for _, o := range out {
		if o.res.ExitCode == 0 {
			ok++
			continue
		}
		refused++
		assert.Check(t, is.Contains(o.res.Stderr, "limit of 5 bindings"), "%s/%s: %s", o.ns, o.name, o.res.Stderr)
		assert.Check(t, is.Contains(o.res.Stderr, fmt.Sprintf("binding %q not created", o.name)), o.res.Stderr)
	}
	assert.Equal(t, ok, 5)
	assert.Equal(t, refused, 15)

	var records int
	for _, ns := range []string{nsA, nsB} {
		bs, err := st.Bindings().List(ctx, ns, store.Filter{})
		assert.NilError(t, err)
		records += len(bs)
		for _, x := range bs {
			assert.Equal(t, x.Status.Phase, v1alpha1.PhaseReady, "%s/%s", ns, x.Name)
		}
		secrets, err := limitsAdmin(t).CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{LabelSelector: store.LabelBinding})
		assert.NilError(t, err)
		assert.Equal(t, len(secrets.Items), len(bs), "one Secret per binding in %s, none left by a refused bind", ns)
	}
	assert.Equal(t, records, 5)
	assert.Equal(t, len(b.RequestsFor(broker.OpBind)), 5, "the broker saw exactly 5 binds")
	inst, err = st.Instances().Get(ctx, nsA, "db")
	assert.NilError(t, err)
	assert.Equal(t, len(inst.Status.Consumers), 5)

	// describe shows the consumers by namespace and the limit.
	r = instCatalog(t, nsA, "describe", "instance", "db")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	assert.Assert(t, is.Contains(r.Stdout, "Max bindings:     5 (5 taken)"), r.Stdout)
	assert.Assert(t, is.Contains(r.Stdout, "Shared with:      "+nsB), r.Stdout)

	// A sixth bind fails at once, with nothing recorded.
	before := snapshotRecords(t, nsA, nsB)
	r = instCatalog(t, nsB, "bind", nsA+"/db", "--name", "extra")
	assert.Assert(t, r.ExitCode != 0)
	assert.Assert(t, is.Contains(r.Stderr, "limit of 5 bindings"), r.Stderr)
	assert.Assert(t, is.Contains(r.Stderr, "--max-bindings N"), r.Stderr)
	assert.DeepEqual(t, snapshotRecords(t, nsA, nsB), before)

	// Unbinding one gives its place back.
	var gone outcome
	for _, o := range out {
		if o.res.ExitCode == 0 {
			gone = o
			break
		}
	}
	r = instCatalog(t, gone.ns, "unbind", gone.name, "--wait")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	r = instCatalog(t, nsB, "bind", nsA+"/db", "--name", "extra")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	assert.Equal(t, len(b.RequestsFor(broker.OpBind)), 6)

	// Raising the limit takes no broker call.
	r = instCatalog(t, nsA, "update", "db", "--max-bindings", "6")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	r = instCatalog(t, nsA, "bind", "db", "--name", "sixth")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)

	// Bad input: a negative limit, an invalid namespace name.
	r = instCatalog(t, nsA, "update", "db", "--max-bindings", "-1")
	assert.Equal(t, r.ExitCode, 2, r.Stderr)
	r = instCatalog(t, nsA, "update", "db", "--allowed-namespaces", "Not_A_Namespace")
	assert.Equal(t, r.ExitCode, 2, r.Stderr)
	assert.Assert(t, is.Contains(r.Stderr, "Not_A_Namespace"))
}

// TestLimits_AllowedNamespaces_RefuseOthers: a namespace left out of
// --allowed-namespaces cannot bind, even when shared, and nothing is recorded.
func TestLimits_AllowedNamespaces_RefuseOthers(t *testing.T) {
	t.Parallel()
	nsA, b, _ := instSetup(t)
	nsB, nsC := cp.NewNamespace(t), cp.NewNamespace(t)
	r := instCatalog(t, nsA, "provision", "db", "--class", "postgresql", "--plan", "hobby", "--allowed-namespaces", nsA+","+nsB)
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	r = instCatalog(t, nsA, "share", "db", "--to-namespace", nsC)
	assert.Assert(t, r.ExitCode != 0)
	assert.Assert(t, is.Contains(r.Stderr, "--allowed-namespaces"), r.Stderr)
	r = instCatalog(t, nsA, "share", "db", "--to-namespace", nsB)
	assert.Equal(t, r.ExitCode, 0, r.Stderr)

	before := snapshotRecords(t, nsA, nsC)
	r = instCatalog(t, nsC, "bind", nsA+"/db")
	assert.Assert(t, r.ExitCode != 0)
	// Another namespace learns only that it may not reach the instance, not whom the
	// instance allows (the cross-namespace rule's one refusal).
	assert.Assert(t, is.Contains(r.Stderr, fmt.Sprintf("does not exist or is not shared with namespace %q", nsC)), r.Stderr)
	assert.Assert(t, !strings.Contains(r.Stderr, nsB), "the refusal names no namespace the instance allows: %s", r.Stderr)
	assert.DeepEqual(t, snapshotRecords(t, nsA, nsC), before)

	r = instCatalog(t, nsB, "bind", nsA+"/db")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	assert.Equal(t, len(b.RequestsFor(broker.OpBind)), 1)
}
