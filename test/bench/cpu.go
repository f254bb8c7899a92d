package main

import (
	"bufio"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// cpuTimes is the machine's CPU time from /proc/stat, in clock ticks: busy is everything
// but idle and iowait.
type cpuTimes struct{ busy, total uint64 }

// readCPU reads the machine's aggregate CPU times; ok is false where /proc/stat cannot
// be read (not Linux).
func readCPU() (t cpuTimes, ok bool) {
	f, err := os.Open("/proc/stat")
	if err != nil {
		return t, false
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	if !s.Scan() {
		return t, false
	}
	fields := strings.Fields(s.Text())
	if len(fields) < 5 || fields[0] != "cpu" {
		return t, false
	}
	for i, v := range fields[1:] {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return t, false
		}
		t.total += n
		if i != 3 && i != 4 { // idle, iowait
			t.busy += n
		}
	}
	return t, true
}

// cpuBusy says how busy the machine's CPUs were between two readings, as a fraction of
// all of them (1 = every CPU busy all the time).
func cpuBusy(from, to cpuTimes) float64 {
	if to.total <= from.total {
		return 0
	}
	return float64(to.busy-from.busy) / float64(to.total-from.total)
}

// cpuCount is the number of CPUs /proc/stat lists.
func cpuCount() int {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	n := 0
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "cpu") && len(l) > 3 && l[3] >= '0' && l[3] <= '9' {
			n++
		}
	}
	return n
}

// procTicks is the CPU time (user and system, in clock ticks) process pid has used so
// far; ok is false where /proc cannot be read.
func procTicks(pid int) (ticks uint64, ok bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, false
	}
	// The command name, in parentheses, may hold spaces: the fields follow its last ")".
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 { // state is f[0]; utime and stime are fields 14 and 15 of the line
		return 0, false
	}
	u, err1 := strconv.ParseUint(f[11], 10, 64)
	st, err2 := strconv.ParseUint(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return u + st, true
}

// procNamed are the pids of the processes whose command name (as /proc truncates it, to
// 15 bytes) is name.
func procNamed(name string) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
		if err == nil && strings.TrimSpace(string(comm)) == name {
			pids = append(pids, pid)
		}
	}
	return pids
}

// cpuShares is the CPU time of the processes that share the machine during a timed run,
// by part: read at its start and at its end (before any process of the run exits), the
// difference says where the machine's busy time went.
type cpuShares struct {
	machine cpuTimes
	parts   map[string]uint64
	ok      bool
}

// controlPlaneParts are the processes of the control plane, by command name.
var controlPlaneParts = []struct{ comm, part string }{
	{"kube-apiserver", "kube-apiserver"},
	{"etcd", "etcd"},
	{"kube-controller", "kube-controller-manager"},
}

// readShares reads the machine's CPU times and those of the control plane's processes,
// of this process (which seeds the records, serves the broker, runs the counting proxy
// the reconcile processes reach the API server through, and polls for the end)
// and of the given reconcile processes.
func readShares(reconcilers []int) cpuShares {
	sh := cpuShares{parts: map[string]uint64{}}
	sh.machine, sh.ok = readCPU()
	add := func(part string, pid int) {
		if t, ok := procTicks(pid); ok {
			sh.parts[part] += t
		}
	}
	for _, p := range controlPlaneParts {
		for _, pid := range procNamed(p.comm) {
			add(p.part, pid)
		}
	}
	add("bench (seeding, broker, counting proxy, polling)", os.Getpid())
	for _, pid := range reconcilers {
		add(serveProcesses, pid)
	}
	return sh
}

// userHZ is USER_HZ, the unit of /proc's CPU times on Linux.
const userHZ = 100

// serveProcesses is the part of readShares that the reconcile processes used.
const serveProcesses = "reconcile --serve"

// sharesNote says how the machine's busy CPU time during a run was spent, in CPU
// seconds: the part of each process, and the rest (everything else on the machine).
func sharesNote(what string, from, to cpuShares, took time.Duration) string {
	if !from.ok || !to.ok {
		return what + ": CPU use not measured (no /proc/stat)"
	}
	busy := float64(to.machine.busy-from.machine.busy) / userHZ
	parts := slices.Sorted(maps.Keys(to.parts))
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %.1f CPU seconds of %.1f available (%d CPUs x %s): %.0f%% busy;", what, busy,
		float64(cpuCount())*took.Seconds(), cpuCount(), took.Round(100*time.Millisecond), 100*cpuBusy(from.machine, to.machine))
	var known float64
	for _, p := range parts {
		s := float64(to.parts[p]-from.parts[p]) / userHZ
		known += s
		fmt.Fprintf(&b, " %s %.1f,", p, s)
	}
	fmt.Fprintf(&b, " everything else %.1f", max(busy-known, 0))
	return b.String()
}
