package store_test

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store/storetest"
)

// ownClaim is a claim as this process writes it.
func ownClaim(t *testing.T) store.Lease {
	t.Helper()
	inst := instance("db")
	assert.NilError(t, store.SetClaim(inst, "kubectl-catalog@here/1", time.Minute, time.Now()))
	l, ok := store.LeaseOf(inst)
	assert.Assert(t, ok)
	assert.Assert(t, l.Process != nil, "the claim names the process")
	return l
}

func TestSetClaim_NamesThisProcess(t *testing.T) {
	l := ownClaim(t)
	host, err := os.Hostname()
	assert.NilError(t, err)
	assert.Equal(t, l.Process.Host, host)
	assert.Equal(t, l.Process.PID, os.Getpid())
	if runtime.GOOS == "linux" {
		assert.Assert(t, l.Process.Start != "" && l.Process.Boot != "" && l.Process.PIDNamespace != "", "%+v", l.Process)
	}
}

func TestLeaseAbandoned(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no process is judged gone on Windows")
	}
	type abandonCase struct {
		name   string
		change func(p *store.Process)
		want   bool
	}
	tests := []abandonCase{
		{name: "this very process holds it", change: func(*store.Process) {}},
		{name: "a process of this host that ended", change: func(p *store.Process) { p.PID = storetest.EndedPID(t) }, want: true},
		{name: "a process of another host", change: func(p *store.Process) { p.PID, p.Host = storetest.EndedPID(t), "elsewhere" }},
		{name: "a process of another boot", change: func(p *store.Process) { p.PID, p.Boot = storetest.EndedPID(t), "another-boot" }},
		{name: "a process of another pid namespace", change: func(p *store.Process) { p.PID, p.PIDNamespace = storetest.EndedPID(t), "pid:[1]" }},
	}
	if runtime.GOOS == "linux" {
		tests = append(tests, abandonCase{
			// The parent is alive; its pid with another start time was another process.
			name: "a pid alive now that another process had before", want: true,
			change: func(p *store.Process) { p.PID, p.Start = os.Getppid(), "1" },
		}, abandonCase{
			name: "a live process of this host", change: func(p *store.Process) { p.PID, p.Start = os.Getppid(), "" },
		})
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l := ownClaim(t)
			tc.change(l.Process)
			assert.Equal(t, l.Abandoned(), tc.want)
		})
	}
}

func TestLeaseAbandoned_AClaimOfAnOlderReleaseNamesNoProcess(t *testing.T) {
	inst := instance("db")
	inst.Annotations = map[string]string{store.AnnotationClaim: `{"holder":"kubectl-catalog@here/1","expiresAt":"2026-12-02T13:00:11Z"}`}
	l, ok := store.LeaseOf(inst)
	assert.Assert(t, ok)
	assert.Assert(t, l.Process == nil)
	assert.Assert(t, !l.Abandoned())
}

// A process restarted with the same host name and pid (a container's PID 1 after an OOM
// kill) is another holder: it must not take its predecessor's live claim for its own.
func TestHolderName_IsUniquePerProcessLifetime(t *testing.T) {
	if os.Getenv("STORE_HOLDER_NAME_CHILD") == "1" {
		fmt.Println(store.HolderName("reconcile"))
		return
	}
	host, _ := os.Hostname()
	assert.Equal(t, store.HolderName("reconcile"), store.HolderName("reconcile"), "stable within one process")
	assert.Assert(t, strings.HasPrefix(store.HolderName("reconcile"), fmt.Sprintf("reconcile@%s/%d.", host, os.Getpid())))
	run := func() string {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHolderName_IsUniquePerProcessLifetime$")
		cmd.Env = append(os.Environ(), "STORE_HOLDER_NAME_CHILD=1")
		out, err := cmd.Output()
		assert.NilError(t, err)
		return strings.SplitN(string(out), "\n", 2)[0]
	}
	// What a restarted container shares with its predecessor (the host name and, as PID 1,
	// the pid) is taken off: what is left must still tell the two lifetimes apart.
	lifetime := func(name string) string {
		_, rest, ok := strings.Cut(name, "@"+host+"/")
		assert.Assert(t, ok, name)
		_, n, ok := strings.Cut(rest, ".")
		assert.Assert(t, ok && n != "", "holder %q has no per-process part", name)
		return n
	}
	first, second := lifetime(run()), lifetime(run())
	assert.Assert(t, first != second, "two process lifetimes share the holder part %q", first)
	assert.Assert(t, first != lifetime(store.HolderName("reconcile")))
}

// Two stores of one OS process, each given its own process (as a simulation runs many):
// each names its own in the claims it writes, and judges another's claim by what its
// ProcessTable tells.
func TestWithProcesses_NamesTheStoresProcessAndJudgesByItsTable(t *testing.T) {
	running := map[int]bool{10: true, 11: true}
	table := func(pid int) store.ProcessTable {
		return store.ProcessTable{Self: &store.Process{Host: "laptop", PID: pid, PIDNamespace: "pid:[1]"},
			Running: func(pid int) (string, bool) { return "", running[pid] }}
	}
	_, first, _ := newCluster(t, store.WithProcesses(table(10)))
	_, second, _ := newCluster(t, store.WithProcesses(table(11)))
	inst := instance("db")
	assert.NilError(t, first.Claims().Set(inst, "first", time.Minute, time.Now()))
	l, ok := store.LeaseOf(inst)
	assert.Assert(t, ok)
	assert.DeepEqual(t, l.Process, &store.Process{Host: "laptop", PID: 10, PIDNamespace: "pid:[1]"})

	assert.Assert(t, !second.Claims().Abandoned(l), "its process runs")
	assert.Assert(t, !first.Claims().Abandoned(l), "a process never judges itself gone")
	running[10] = false
	assert.Assert(t, second.Claims().Abandoned(l), "its process has ended")
	assert.Assert(t, !l.Abandoned(), "this OS process is of another host")

	_, elsewhere, _ := newCluster(t, store.WithProcesses(store.ProcessTable{
		Self: &store.Process{Host: "pod-1", PID: 1, PIDNamespace: "pid:[2]"}, Running: func(int) (string, bool) { return "", false }}))
	assert.Assert(t, !elsewhere.Claims().Abandoned(l), "a process of another host is never gone")
}

// By default a store's claims name this process, and judge as Lease.Abandoned does.
func TestWithProcesses_DefaultsToTheSystemsView(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no process is judged gone on Windows")
	}
	_, st, _ := newCluster(t)
	inst := instance("db")
	assert.NilError(t, st.Claims().Set(inst, "kubectl-catalog@here/1", time.Minute, time.Now()))
	l, _ := store.LeaseOf(inst)
	assert.DeepEqual(t, l.Process, ownClaim(t).Process)
	assert.Assert(t, !st.Claims().Abandoned(l))
	l.Process.PID = storetest.EndedPID(t)
	assert.Assert(t, st.Claims().Abandoned(l) && l.Abandoned())
}
