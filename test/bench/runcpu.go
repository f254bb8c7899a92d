package main

import (
	"fmt"
	"os"
	"strings"
	"syscall"
	"time"
)

// runCPU is the CPU time, in clock ticks, that each process of a timed run on the real
// API server has used so far: this control plane's API server, etcd and controller
// manager (found by their command line, which names the control plane's directory:
// other control planes on the machine are left out), the bench itself (the broker, and
// the counting proxy with -profile) and its children that have ended (the reconcile process, through
// the helper that measures its memory); and the machine's.
type runCPU struct {
	parts   map[string]uint64
	machine cpuTimes
	ok      bool
}

// runCPUParts are the parts of runCPU, in the order they are reported.
var runCPUParts = []string{"kube-apiserver", "etcd", "kube-controller-manager", "reconcile (and the floor's kubectl LIST)", "bench (broker)"}

// readRunCPU reads runCPU for the control plane in dir.
func readRunCPU(dir string) runCPU {
	c := runCPU{parts: map[string]uint64{}}
	if c.machine, c.ok = readCPU(); !c.ok {
		return c
	}
	for _, p := range controlPlaneParts {
		for _, pid := range procNamed(p.comm) {
			cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
			if err != nil || !strings.Contains(string(cmdline), dir) {
				continue
			}
			if t, ok := procTicks(pid); ok {
				c.parts[p.part] += t
			}
		}
	}
	if t, ok := procTicks(os.Getpid()); ok {
		c.parts["bench (broker)"] = t
	}
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru); err == nil {
		c.parts["reconcile (and the floor's kubectl LIST)"] = uint64((time.Duration(ru.Utime.Nano()) + time.Duration(ru.Stime.Nano())) / (time.Second / userHZ))
	}
	return c
}

// runCPUNote says the CPU time each part used between from and to, in all and per
// record, and what the rest of the machine used meanwhile.
func runCPUNote(what string, from, to runCPU, records int) string {
	if !from.ok || !to.ok {
		return what + ": CPU time not measured (no /proc/stat)"
	}
	var b strings.Builder
	var all float64
	fmt.Fprintf(&b, "%s: CPU seconds", what)
	for _, p := range runCPUParts {
		s := float64(to.parts[p]-from.parts[p]) / userHZ
		all += s
		fmt.Fprintf(&b, " %s %.2f,", p, s)
	}
	busy := float64(to.machine.busy-from.machine.busy) / userHZ
	fmt.Fprintf(&b, " in all %.2f (%.2f ms per record); the rest of the machine %.2f", all, 1000*all/float64(max(records, 1)), max(busy-all, 0))
	return b.String()
}
