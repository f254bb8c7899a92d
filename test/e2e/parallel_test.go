package e2e

import (
	"slices"
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

// A group of groupProcesses is dealt among its processes, slowest tests first, each
// test to exactly one process, in the order the group lists them; other groups stay
// whole.
func TestSplitGroups_DealsEachTestToOneProcess(t *testing.T) {
	t.Parallel()
	slowest := "TestBounds_JunkRecordsWithMegabytesOfLabelsCostReconcileLittle"
	names, byGroup := splitGroups([]string{"every-namespace", "plain-path"}, map[string][]string{
		"every-namespace": {"TestA", slowest, "TestB", "TestC"},
		"plain-path":      {"TestD", "TestE"},
	})
	want := []string{"every-namespace", "every-namespace 2", "plain-path"}
	if !slices.Equal(names, want) {
		t.Fatalf("processes %v, want %v", names, want)
	}
	if got := byGroup["every-namespace"]; !slices.Equal(got, []string{slowest}) {
		t.Errorf("the slowest test's process runs %v", got)
	}
	if got := byGroup["every-namespace 2"]; !slices.Equal(got, []string{"TestA", "TestB", "TestC"}) {
		t.Errorf("the other process runs %v", got)
	}
	if got := byGroup["plain-path"]; !slices.Equal(got, []string{"TestD", "TestE"}) {
		t.Errorf("a group not split runs %v", got)
	}
}
