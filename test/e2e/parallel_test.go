package e2e

import (
	"strings"
	"testing"
)

// serial marks a test that does not run beside the others, and says why: it changes
// or depends on state the whole cluster shares (the trust policy, cluster roles, the
// retired Service Catalog's CRDs), or runs reconcile over every namespace. The tests
// giving the same reason (one of the constants of groups_test.go) run one after another,
// in a process of their own with a control plane of its own, beside every other test.
func serial(t *testing.T, why string) {
	t.Helper()
	t.Logf("runs alone: %s", why)
}

// Every test of the package either runs in parallel or says why it cannot: its first
// statement is t.Parallel() or serial(t, "why").
func TestEveryTestRunsInParallelOrSaysWhyNot(t *testing.T) {
	t.Parallel()
	_, missing, err := serialTests()
	if err != nil {
		t.Fatal(err)
	}
	if len(missing) > 0 {
		t.Errorf("these tests neither call t.Parallel() nor serial(t, \"why\") first:\n%s", strings.Join(missing, "\n"))
	}
}
