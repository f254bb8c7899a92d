package main

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
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

// cpuNote says how busy the machine was during a timed run, so that a ratio between
// runs can be read against it: where one process already keeps every CPU busy, more
// processes on the same machine cannot finish sooner.
func cpuNote(what string, from, to cpuTimes, ok bool) string {
	if !ok {
		return what + ": CPU use not measured (no /proc/stat)"
	}
	return fmt.Sprintf("%s: the machine's %d CPUs were %.0f%% busy", what, cpuCount(), 100*cpuBusy(from, to))
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
